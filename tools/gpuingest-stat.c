/*
 * gpuingest-stat — a live, top-like table of a running gpuingestd, read
 * from its metrics socket.
 *
 * Why C and no libraries: it runs on the edge box next to the daemon,
 * where a Python stack or a Prometheus server may not be installed.  Two
 * scrapes (scrape.c: just enough HTTP and Prometheus text) give per-second
 * rates, and latency percentiles from histogram bucket deltas (linear
 * interpolation inside the bucket, as PromQL's histogram_quantile does).
 *
 * Single-threaded; nothing here is shared with the daemon but the socket.
 */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scrape.h"

/*
 * Without a TARGET: the packaged daemon's socket (config/gpuingest.yaml,
 * stats.unix), then the demo's (config/demo.yaml), the first that exists.
 * The demo serves a socket of its own so that running it next to a
 * production daemon never takes over that daemon's.
 */
static const struct {
	const char *path, *whose;
} default_targets[] = {
	{ "/run/gpuingest/metrics.sock", "the packaged daemon's" },
	{ "/run/gpuingest/demo-metrics.sock", "the demo's" },
};
#define N_DEFAULT_TARGETS (sizeof(default_targets) / sizeof(default_targets[0]))

enum { EXIT_USAGE = 1, EXIT_UNREACHABLE = 2 };

static double get1(const struct gi_scrape *sc, const char *name, const char *k, const char *v)
{
	const char *want[] = { k, v, NULL, NULL };
	return gi_scrape_sum(sc, name, k ? want : NULL, NULL);
}

static double get2(const struct gi_scrape *sc, const char *name, const char *k1, const char *v1, const char *k2,
		   const char *v2)
{
	const char *want[] = { k1, v1, k2, v2, NULL, NULL };
	return gi_scrape_sum(sc, name, want, NULL);
}

/* Distinct values of label `key` over samples named `name`, in page order. */
static size_t label_values(const struct gi_scrape *sc, const char *name, const char *key, char (*out)[128], size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < sc->n && n < max; i++) {
		char v[128];
		if (strcmp(sc->s[i].name, name) != 0 || !gi_scrape_label(sc->s[i].labels, key, v, sizeof(v)))
			continue;
		size_t k = 0;
		while (k < n && strcmp(out[k], v) != 0)
			k++;
		if (k == n)
			strcpy(out[n++], v);
	}
	return n;
}

static double rate(const struct gi_scrape *a, const struct gi_scrape *b, double va, double vb)
{
	double dt = b->t - a->t;
	return dt > 0 && vb >= va ? (vb - va) / dt : 0;
}

/* The cumulative buckets of one histogram series, in page order. */
static size_t buckets(const struct gi_scrape *sc, const char *bucket, const char *stream, double *les, double *cum,
		      size_t max)
{
	size_t n = 0;
	for (size_t f = 0; f < sc->n_fam; f++) {
		if (strcmp(sc->fam[f].name, bucket) != 0)
			continue;
		for (size_t i = sc->fam[f].start; i < sc->fam[f].end && n < max; i++) {
			char le[64], st[128];
			if (!gi_scrape_label(sc->s[i].labels, "le", le, sizeof(le)))
				continue;
			if (stream && (!gi_scrape_label(sc->s[i].labels, "stream", st, sizeof(st)) || strcmp(st, stream) != 0))
				continue;
			les[n] = strcmp(le, "+Inf") == 0 ? INFINITY : strtod(le, NULL);
			cum[n++] = sc->s[i].value;
		}
	}
	return n;
}

/*
 * Quantile q of histogram `name` (optionally of one stream) from the bucket
 * increase between two scrapes; NAN when nothing was observed.  Above the
 * last finite bound it answers that bound, as histogram_quantile does.
 */
static double quantile(const struct gi_scrape *a, const struct gi_scrape *b, const char *name, const char *stream,
		       double q)
{
	char bucket[160];
	double les[64], inc[64], les_a[64], cum_a[64];
	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	size_t n = buckets(b, bucket, stream, les, inc, 64);
	size_t na = buckets(a, bucket, stream, les_a, cum_a, 64);
	for (size_t i = 0; i < n; i++) /* same bounds in both scrapes unless the daemon restarted */
		inc[i] -= na == n && les_a[i] == les[i] ? cum_a[i] : 0;
	if (n == 0 || inc[n - 1] <= 0)
		return NAN;
	double target = q * inc[n - 1], lo = 0, prev = 0;
	for (size_t i = 0; i < n; i++) {
		if (inc[i] >= target) {
			if (isinf(les[i]))
				return lo;
			double in_bucket = inc[i] - prev;
			return in_bucket > 0 ? lo + (les[i] - lo) * (target - prev) / in_bucket : les[i];
		}
		lo = les[i];
		prev = inc[i];
	}
	return lo;
}

/* ---- the table -------------------------------------------------------------- */

static const char *si(double v, const char *unit, char *buf, size_t len)
{
	static const char *const p[] = { "", "k", "M", "G", "T" };
	int i = 0;
	while (fabs(v) >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, i ? "%.2f%s%s" : "%.0f%s%s", v, p[i], unit);
	return buf;
}

static const char *dur(double s, char *buf, size_t len)
{
	if (isnan(s))
		snprintf(buf, len, "-");
	else if (s < 1e-3)
		snprintf(buf, len, "%.1fus", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.2fms", s * 1e3);
	else
		snprintf(buf, len, "%.2fs", s);
	return buf;
}

#define P "gpuingest_"
#define MAX_ROWS 256

static void print_table(FILE *f, const char *shown_as, const struct gi_scrape *a, const struct gi_scrape *b)
{
	static char names[MAX_ROWS][128], q[MAX_ROWS][128];
	/* one buffer per si() call in a single printf */
	char x1[32], x2[32], x3[32], x4[32], x5[32], x6[32];
	double dt = b->t - a->t;
	size_t n;

	char backend[64] = "?";
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->s[i].name, P "build_info") == 0)
			gi_scrape_label(b->s[i].labels, "backend", backend, sizeof(backend));
	double busy = rate(a, b, get1(a, P "executor_busy_seconds_total", NULL, NULL),
			   get1(b, P "executor_busy_seconds_total", NULL, NULL));
	fprintf(f, "gpuingest-stat  %s  up %.0fs  backend %s  executor busy %.1f%%  interval %.2fs\n", shown_as,
		get1(b, P "uptime_seconds", NULL, NULL), backend, 100 * (busy > 1 ? 1 : busy), dt);

	fprintf(f, "\n%-16s %10s %11s %10s %10s %10s\n", "PORT", "RX pps", "RX bit/s", "MISSED/s", "NOMBUF/s", "ERRORS/s");
	n = label_values(b, P "port_rx_packets_total", "port", names, MAX_ROWS);
	for (size_t i = 0; i < n; i++) {
#define PR(m) rate(a, b, get1(a, P m, "port", names[i]), get1(b, P m, "port", names[i]))
		fprintf(f, "%-16s %10s %11s %10s %10s %10s\n", names[i], si(PR("port_rx_packets_total"), "", x1, 32),
			si(8 * PR("port_rx_bytes_total"), "", x2, 32), si(PR("port_rx_missed_total"), "", x3, 32),
			si(PR("port_rx_nombuf_total"), "", x4, 32), si(PR("port_rx_errors_total"), "", x5, 32));
		/* ports[].xstats: rate and total */
		for (size_t k = 0; k < b->n; k++) {
			char port[128], name[128];
			if (strcmp(b->s[k].name, P "port_xstats_total") != 0 ||
			    !gi_scrape_label(b->s[k].labels, "port", port, sizeof(port)) || strcmp(port, names[i]) != 0 ||
			    !gi_scrape_label(b->s[k].labels, "name", name, sizeof(name)))
				continue;
			double before = get2(a, P "port_xstats_total", "port", port, "name", name);
			fprintf(f, "  %-30s %10s/s  total %.0f\n", name, si(rate(a, b, before, b->s[k].value), "", x1, 32),
				b->s[k].value);
		}
#undef PR
	}

	fprintf(f, "\n%-16s %10s %11s\n", "QUEUE", "RX pps", "RING");
	for (size_t k = 0; k < b->n; k++) {
		char port[128], queue[16];
		if (strcmp(b->s[k].name, P "queue_rx_packets_total") != 0 ||
		    !gi_scrape_label(b->s[k].labels, "port", port, sizeof(port)) || !gi_scrape_label(b->s[k].labels, "queue", queue, sizeof(queue)))
			continue;
		double before = get2(a, P "queue_rx_packets_total", "port", port, "queue", queue);
		char ring[40], pq[160];
		snprintf(pq, sizeof(pq), "%s/%s", port, queue);
		snprintf(ring, sizeof(ring), "%.0f/%.0f", get2(b, P "ring_occupancy", "port", port, "queue", queue),
			 get2(b, P "ring_slots", "port", port, "queue", queue));
		fprintf(f, "%-16s %10s %11s\n", pq, si(rate(a, b, before, b->s[k].value), "", x1, 32), ring);
	}
	n = label_values(b, P "lcore_polls_total", "lcore", q, MAX_ROWS);
	for (size_t i = 0; i < n; i++) {
		double busy_p = rate(a, b, get2(a, P "lcore_polls_total", "lcore", q[i], "result", "busy"),
				     get2(b, P "lcore_polls_total", "lcore", q[i], "result", "busy"));
		double idle_p = rate(a, b, get2(a, P "lcore_polls_total", "lcore", q[i], "result", "idle"),
				     get2(b, P "lcore_polls_total", "lcore", q[i], "result", "idle"));
		fprintf(f, "lcore %-10s polls %s/s, %.1f%% busy\n", q[i], si(busy_p + idle_p, "", x1, 32),
			busy_p + idle_p > 0 ? 100 * busy_p / (busy_p + idle_p) : 0.0);
	}

	fprintf(f, "\n%-16s %10s %10s %7s %8s %8s %9s %10s %9s %9s\n", "STREAM", "PLACED pps", "bit/s", "LOSS%",
		"DUPS/s", "LATE/s", "FRAMES/s", "NOT OK/s", "FRM p50", "FRM p99");
	n = label_values(b, P "stream_packets_total", "stream", names, MAX_ROWS);
	for (size_t i = 0; i < n; i++) {
#define SR(m) rate(a, b, get1(a, P m, "stream", names[i]), get1(b, P m, "stream", names[i]))
#define FR(st) \
	rate(a, b, get2(a, P "stream_frames_total", "stream", names[i], "state", st), \
	     get2(b, P "stream_frames_total", "stream", names[i], "state", st))
		double placed = SR("stream_packets_total"), lost = SR("stream_lost_packets_total");
		char p50[16], p99[16], lossbuf[16];
		if (placed + lost > 0)
			snprintf(lossbuf, sizeof(lossbuf), "%.2f", 100 * lost / (placed + lost));
		else
			snprintf(lossbuf, sizeof(lossbuf), "-");
		fprintf(f, "%-16s %10s %10s %7s %8s %8s %9s %10s %9s %9s\n", names[i], si(placed, "", x1, 32),
			si(8 * SR("stream_bytes_total"), "", x2, 32), lossbuf,
			si(SR("stream_duplicate_packets_total"), "", x3, 32), si(SR("stream_late_packets_total"), "", x4, 32),
			si(FR("complete"), "", x5, 32), si(FR("partial") + FR("timed_out") + FR("corrupt"), "", x6, 32),
			dur(quantile(a, b, P "frame_latency_seconds", names[i], 0.5), p50, sizeof(p50)),
			dur(quantile(a, b, P "frame_latency_seconds", names[i], 0.99), p99, sizeof(p99)));
#undef SR
#undef FR
	}

	char p50[16], p99[16];
	fprintf(f, "\nbatches %s/s  batch latency p50 %s p99 %s", si(rate(a, b, get1(a, P "batches_completed_total", NULL, NULL),
								       get1(b, P "batches_completed_total", NULL, NULL)),
								  "", x1, 32),
		dur(quantile(a, b, P "batch_latency_seconds", NULL, 0.5), p50, sizeof(p50)),
		dur(quantile(a, b, P "batch_latency_seconds", NULL, 0.99), p99, sizeof(p99)));
	/* drops: only reasons that moved, or say none */
	n = label_values(b, P "dropped_packets_total", "reason", names, MAX_ROWS);
	int shown = 0;
	for (size_t i = 0; i < n; i++) {
		double r = rate(a, b, get1(a, P "dropped_packets_total", "reason", names[i]),
				get1(b, P "dropped_packets_total", "reason", names[i]));
		if (r > 0)
			fprintf(f, "%s%s %s/s", shown++ ? ", " : "  drops: ", names[i], si(r, "", x1, 32));
	}
	fprintf(f, "%s\n", shown ? "" : "  drops: none");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuingest-stat [--once | --count N] [--interval SEC] [TARGET]\n"
		"\n"
		"A live table of a running gpuingestd from its metrics endpoint, refreshed like top:\n"
		"per-port rx rates, per-queue ring occupancy, per-lcore busy polls, per-stream placed\n"
		"rate, loss, duplicates, late packets, frames per second, frame and batch latency\n"
		"percentiles (estimated from the histogram buckets), executor busy time.\n"
		"\n"
		"  TARGET            metrics socket path (contains '/') or HOST:PORT.  Without\n"
		"                    one, the first of these that exists (the header line\n"
		"                    names the one taken):\n"
		"                      %-34s %s\n"
		"                      %-34s %s\n"
		"  -1, --once        print one table (two scrapes one interval apart) and exit\n"
		"  -n, --count N     print N tables and exit\n"
		"  -i, --interval S  seconds between scrapes (default 1, 0.1..3600)\n"
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 ok, 1 usage, 2 the metrics could not be read.\n",
		default_targets[0].path, default_targets[0].whose, default_targets[1].path, default_targets[1].whose);
}

/*
 * The default target, and in `shown_as` how the header names it: the
 * demo's socket says that it is the demo's and why it was taken.  NULL
 * when neither exists (one line on stderr said so).
 */
static const char *default_target(char *shown_as, size_t len)
{
	struct stat sb;
	for (size_t i = 0; i < N_DEFAULT_TARGETS; i++) {
		if (stat(default_targets[i].path, &sb) != 0)
			continue;
		if (i == 0)
			snprintf(shown_as, len, "%s", default_targets[i].path);
		else
			snprintf(shown_as, len, "%s (%s; no %s)", default_targets[i].path, default_targets[i].whose,
				 default_targets[0].path);
		return default_targets[i].path;
	}
	fprintf(stderr,
		"gpuingest-stat: no metrics socket at %s (%s) or %s (%s): is gpuingestd running? "
		"Name its stats.unix socket or HOST:PORT as TARGET\n",
		default_targets[0].path, default_targets[0].whose, default_targets[1].path, default_targets[1].whose);
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "once", no_argument, NULL, '1' },
		{ "count", required_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *target = NULL;
	char shown_as[256];
	long count = 0; /* 0: until interrupted */
	double interval = 1;
	int opt;

	while ((opt = getopt_long(argc, argv, "1n:i:h", opts, NULL)) != -1) {
		char *end;
		switch (opt) {
		case '1':
			count = 1;
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1) {
				fprintf(stderr, "gpuingest-stat: --count: '%s' is not a positive number\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'i':
			interval = strtod(optarg, &end);
			if (*end || !(interval >= 0.1 && interval <= 3600)) {
				fprintf(stderr, "gpuingest-stat: --interval: '%s' is not 0.1..3600 seconds\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		target = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "gpuingest-stat: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (target)
		snprintf(shown_as, sizeof(shown_as), "%s", target);
	else if (!(target = default_target(shown_as, sizeof(shown_as))))
		return EXIT_UNREACHABLE;

	bool tty = isatty(STDOUT_FILENO) && count != 1;
	struct gi_scrape prev, cur;
	if (gi_scrape(target, &prev) < 0) {
		fprintf(stderr, "gpuingest-stat: %s\n", prev.err);
		return EXIT_UNREACHABLE;
	}
	for (long i = 0; count == 0 || i < count; i++) {
		struct timespec ts = { (time_t)interval, (long)((interval - floor(interval)) * 1e9) };
		nanosleep(&ts, NULL);
		if (gi_scrape(target, &cur) < 0) {
			fprintf(stderr, "gpuingest-stat: %s\n", cur.err);
			gi_scrape_free(&prev);
			return EXIT_UNREACHABLE;
		}
		if (tty)
			fputs("\033[H\033[2J", stdout);
		else if (i)
			fputs("\n", stdout);
		print_table(stdout, shown_as, &prev, &cur);
		fflush(stdout);
		gi_scrape_free(&prev);
		prev = cur;
	}
	gi_scrape_free(&prev);
	return 0;
}
