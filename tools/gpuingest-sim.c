/*
 * gpuingest-sim — a sensor that sends `udp_seq` frames, with seeded faults.
 *
 * Why it exists: the daemon's accounting identity (DESIGN.md) is only worth
 * something if a test can compare it with what was really put on the wire.
 * This tool generates N streams of frames whose payload follows the pattern
 * of kernels/udp_seq.h, injects loss, duplicates, reordering and malformed
 * packets from a seeded PRNG, and prints one JSON object on stdout that says
 * exactly what it did.  Everything else goes to stderr.
 *
 * Ports: memif (DPDK net_memif, role=server, towards the daemon), pcap (a
 * file, no EAL), udp (kernel socket, header + payload only, no EAL).
 *
 * Single-threaded: the main thread generates, builds and sends; the signal
 * handlers only set a flag.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/format.h"
#include "kernels/json.h"
#include "sim_fmt_custom.h"
#include "sim_fmt_vita49.h"
#include "sim_fmt_rocev2.h"
#include "scrape.h"
#include "sim_port.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* ---- PRNG: splitmix64, one per stream so streams do not depend on each other ---- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- --geometry: PACKETSxBYTES,... (item i for stream i, the last one repeats) ---- */

static int parse_geometry(const char *list, uint32_t stream, uint32_t *ppf, uint32_t *payload)
{
	const char *item = list;
	for (uint32_t i = 0; i < stream; i++) {
		const char *comma = strchr(item, ',');
		if (!comma)
			break;
		item = comma + 1;
	}
	char *end;
	unsigned long p = strtoul(item, &end, 10);
	if (end == item || *end != 'x' || p < 1 || p > 65535)
		goto bad;
	const char *b = end + 1;
	unsigned long n = strtoul(b, &end, 10);
	if (end == b || (*end != ',' && *end != '\0') || n < 1 || n > GI_SIM_MAX_PAYLOAD)
		goto bad;
	*ppf = (uint32_t)p;
	*payload = (uint32_t)n;
	return 0;
bad:
	fprintf(stderr, "gpuingest-sim: --geometry: '%s' is not PACKETSxBYTES[,PACKETSxBYTES...] "
		"(packets 1..65535, bytes 1..%u)\n", list, GI_SIM_MAX_PAYLOAD);
	return -1;
}

/* ---- --format: NAME,... (item i for stream i, the last one repeats) ---- */

static const struct {
	const char *name;
	enum gi_format format;
	bool hsb;
} sim_formats[] = {
	{ "udp_seq", GI_FORMAT_UDP_SEQ, false },
	{ "custom", GI_FORMAT_CUSTOM, false },
	{ "vita49", GI_FORMAT_VITA49, false },
	{ "rocev2", GI_FORMAT_ROCEV2, false },
	{ "hsb", GI_FORMAT_ROCEV2, true }, /* Holoscan Sensor Bridge: rocev2 as HSB sends it */
};

static int parse_format(const char *list, uint32_t stream, uint32_t *format, bool *hsb)
{
	const char *item = list;
	for (uint32_t i = 0; i < stream; i++) {
		const char *comma = strchr(item, ',');
		if (!comma)
			break;
		item = comma + 1;
	}
	size_t len = strcspn(item, ",");
	for (size_t k = 0; k < sizeof(sim_formats) / sizeof(sim_formats[0]); k++)
		if (strlen(sim_formats[k].name) == len && !strncmp(item, sim_formats[k].name, len)) {
			*format = sim_formats[k].format;
			*hsb = sim_formats[k].hsb;
			return 0;
		}
	fprintf(stderr, "gpuingest-sim: --format: '%.*s' is not a format (allowed:", (int)len, item);
	for (size_t k = 0; k < sizeof(sim_formats) / sizeof(sim_formats[0]); k++)
		fprintf(stderr, " %s", sim_formats[k].name);
	fprintf(stderr, ")\n");
	return -1;
}

/* ---- usage ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: gpuingest-sim --port PORT [options]\n"
		"Send udp_seq sensor frames (Ethernet/IPv4/UDP/udp_seq/payload pattern).\n"
		"\n"
		"Port (one is required):\n"
		"  --port memif:SOCKET     DPDK net_memif, role=server, listening at SOCKET\n"
		"                          (parent directory created if missing)\n"
		"  --port pcap:FILE        write a classic pcap file (linktype Ethernet)\n"
		"  --port udp:HOST:PORT    kernel UDP socket; udp_seq header + payload only,\n"
		"                          stream i goes to PORT+i; no 'ip' malformed variant\n"
		"\n"
		"Traffic:\n"
		"  --streams N             streams, stream i has stream_id i (default 1)\n"
		"  --frames N              frames per stream (default 100; 0 = unlimited,\n"
		"                          needs --duration)\n"
		"  --duration S            stop after S seconds (fractions allowed); the frame\n"
		"                          in progress is finished, as on SIGINT/SIGTERM\n"
		"  --packets-per-frame P   packets per frame (default 64, max 65535)\n"
		"  --payload B             payload bytes per packet after the 32-byte header\n"
		"                          (default 1024, 1..%u)\n"
		"  --frame-bytes B         frame length; the last packet of each frame carries\n"
		"                          the rest, B - (P - 1) * payload bytes (default P *\n"
		"                          payload: every packet full); every stream\n"
		"  --geometry LIST         per-stream frame geometry, PACKETSxBYTES for stream\n"
		"                          0, 1, ... comma-separated (e.g. 64x1024,32x1400);\n"
		"                          streams past the list use the last item\n"
		"  --format LIST           per-stream wire format, comma-separated like\n"
		"                          --geometry: udp_seq (default), custom, vita49\n"
		"  --custom SPEC           header map of a custom stream (once per custom\n"
		"                          stream, in order; the last repeats), e.g.\n"
		"                          seq=0:4:be,frame=4:2:le,index=6:2:le,header=16\n"
		"                          fields seq (required) frame index id timestamp as\n"
		"                          OFF:WIDTH:be|le[:MASK[:SHIFT]]; header=BYTES,\n"
		"                          offset=BYTES (payload, default header),\n"
		"                          trailer=BYTES; bits outside a mask are filler\n"
		GI_SIM_VITA49_USAGE
		GI_SIM_ROCEV2_USAGE
		"  --rate PPS              total wire packets per second (default 0 = as fast\n"
		"                          as possible)\n"
		"  --seq-start N           first sequence number of every stream (default 0,\n"
		"                          wraps at 2^32)\n"
		"  --frame-start N         first frame number (default 0, wraps at 2^32)\n"
		"  --dst-port N            UDP destination port of stream 0 (default 5000;\n"
		"                          stream i uses N+i)\n"
		"  --src-port N            UDP source port (default 4000)\n"
		"  --src-mac MAC, --dst-mac MAC   (default 02:00:00:00:00:01 -> :02)\n"
		"  --src-ip A, --dst-ip A  IPv4 addresses (default 10.0.0.1 -> 10.0.0.2)\n"
		"\n"
		"Impairments (seeded, deterministic for a given --seed):\n"
		"  --seed S                PRNG seed (default 1)\n"
		"  --loss P                probability that a packet is not sent\n"
		"  --dup P                 probability that a packet is sent twice (the copy\n"
		"                          follows within the next 3 packets of its stream)\n"
		"  --reorder P             probability that a packet is held back ...\n"
		"  --reorder-depth K       ... and sent after at most K later packets of its\n"
		"                          stream (default 8, max %u)\n"
		"  --malformed P           probability that an extra malformed packet follows\n"
		"                          a packet; variants in turn: ip truncated magic\n"
		"                          version length index geometry\n"
		"  The first packet of a stream is never dropped, delayed or duplicated; the\n"
		"  last one is never dropped.  Held packets and copies are flushed at the end.\n"
		"\n"
		"memif port:\n"
		"  --wait-link S           wait S seconds for the peer (default 15), exit 3\n"
		"  --lcore N               EAL lcore (default: first CPU we may run on)\n"
		"  --eal \"ARGS\"            extra EAL arguments, split on spaces\n"
		"  --stall-timeout S       give up when TX makes no progress for S seconds\n"
		"                          (default 5, exit 4)\n"
		"  --start-delay-ms MS     after the peer is connected, wait MS ms before the\n"
		"                          first packet (lets frame consumers attach; default 0)\n"
		"  --start-file PATH       after the peer is connected, wait until PATH exists\n"
		"                          (at most 60 s, else exit 3), then --start-delay-ms:\n"
		"                          a test's go signal\n"
		"  --linger-ms MS          keep the port up MS ms after the last packet so\n"
		"                          a polling peer drains the ring (default 200)\n"
		"  --pace-metrics TARGET   tests: never outrun the receiver's executor: every\n"
		"                          2 ms or 64 packets, while gpuingestd's metrics (unix\n"
		"                          socket path or HOST:PORT) show more than --pace-batches\n"
		"                          batches queued on its batch rings, wait (at most\n"
		"                          30 s at a time)\n"
		"  --pace-batches N        the queued batches allowed (default 16)\n"
		"\n"
		"Output: one JSON object on stdout (per-stream: unique, dropped, sent_unique,\n"
		"duplicated, duplicated_reordered, reordered, malformed, malformed_by_reason,\n"
		"sent, tx_failed).  'reordered' counts packets that went out after a higher\n"
		"sequence number of their stream; 'duplicated_reordered' the copies that did.\n"
		"SIGINT/SIGTERM: each stream sends one last packet, flushes, prints the JSON.\n"
		"Exit: 0 ok, 2 usage, 3 port or link error (or no --start-file), 4 TX stalled.\n",
		GI_SIM_MAX_PAYLOAD, GI_SIM_MAX_DEPTH);
}

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_usage(const char *fmt, ...)
{
	va_list ap;
	fputs("gpuingest-sim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(GI_SIM_EXIT_USAGE);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		die_usage("%s: expected an integer in [%llu, %llu], got '%s'", opt, (unsigned long long)min,
			  (unsigned long long)max, s);
	return v;
}

static double parse_double(const char *opt, const char *s, double min, double max)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max))
		die_usage("%s: expected a number in [%g, %g], got '%s'", opt, min, max, s);
	return v;
}

static void parse_mac(const char *opt, const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;
	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		die_usage("%s: expected a MAC address like 02:00:00:00:00:01, got '%s'", opt, s);
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			die_usage("%s: expected a MAC address like 02:00:00:00:00:01, got '%s'", opt, s);
		mac[i] = (uint8_t)b[i];
	}
}

static uint32_t parse_ip4(const char *opt, const char *s)
{
	unsigned b[4];
	char tail;
	if (sscanf(s, "%u.%u.%u.%u%c", &b[0], &b[1], &b[2], &b[3], &tail) != 4 || b[0] > 255 || b[1] > 255 ||
	    b[2] > 255 || b[3] > 255)
		die_usage("%s: expected an IPv4 address like 10.0.0.1, got '%s'", opt, s);
	return (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
}

enum {
	OPT_PORT = 256, OPT_GEOMETRY, OPT_START_DELAY, OPT_START_FILE, OPT_STREAMS, OPT_FRAMES, OPT_DURATION, OPT_PPF, OPT_PAYLOAD, OPT_FRAME_BYTES, OPT_RATE, OPT_SEED,
	OPT_LOSS, OPT_DUP, OPT_REORDER, OPT_DEPTH, OPT_MALFORMED, OPT_SEQ_START, OPT_FRAME_START,
	OPT_DST_PORT, OPT_SRC_PORT, OPT_SRC_MAC, OPT_DST_MAC, OPT_SRC_IP, OPT_DST_IP, OPT_WAIT_LINK,
	OPT_LCORE, OPT_EAL, OPT_STALL, OPT_LINGER, OPT_PACE_METRICS, OPT_PACE_BATCHES, OPT_HELP,
	OPT_FORMAT, OPT_CUSTOM,
};

static void parse_args(int argc, char **argv, struct gi_sim_cfg *c)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, OPT_PORT },
		{ "streams", required_argument, NULL, OPT_STREAMS },
		{ "frames", required_argument, NULL, OPT_FRAMES },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "packets-per-frame", required_argument, NULL, OPT_PPF },
		{ "payload", required_argument, NULL, OPT_PAYLOAD },
		{ "frame-bytes", required_argument, NULL, OPT_FRAME_BYTES },
		{ "geometry", required_argument, NULL, OPT_GEOMETRY },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "loss", required_argument, NULL, OPT_LOSS },
		{ "dup", required_argument, NULL, OPT_DUP },
		{ "reorder", required_argument, NULL, OPT_REORDER },
		{ "reorder-depth", required_argument, NULL, OPT_DEPTH },
		{ "malformed", required_argument, NULL, OPT_MALFORMED },
		{ "seq-start", required_argument, NULL, OPT_SEQ_START },
		{ "frame-start", required_argument, NULL, OPT_FRAME_START },
		{ "dst-port", required_argument, NULL, OPT_DST_PORT },
		{ "src-port", required_argument, NULL, OPT_SRC_PORT },
		{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
		{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
		{ "src-ip", required_argument, NULL, OPT_SRC_IP },
		{ "dst-ip", required_argument, NULL, OPT_DST_IP },
		{ "wait-link", required_argument, NULL, OPT_WAIT_LINK },
		{ "lcore", required_argument, NULL, OPT_LCORE },
		{ "eal", required_argument, NULL, OPT_EAL },
		{ "stall-timeout", required_argument, NULL, OPT_STALL },
		{ "linger-ms", required_argument, NULL, OPT_LINGER },
		{ "pace-metrics", required_argument, NULL, OPT_PACE_METRICS },
		{ "pace-batches", required_argument, NULL, OPT_PACE_BATCHES },
		{ "start-delay-ms", required_argument, NULL, OPT_START_DELAY },
		{ "start-file", required_argument, NULL, OPT_START_FILE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "custom", required_argument, NULL, OPT_CUSTOM },
		GI_SIM_VITA49_OPTIONS,
		GI_SIM_ROCEV2_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *port = NULL;
	int o;

	opterr = 0;
	while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		const char *n = optind > 0 && optind <= argc ? argv[optind - 1] : "option";
		switch (o) {
		case OPT_PORT: port = optarg; break;
		case OPT_STREAMS: c->streams = (uint32_t)parse_u64("--streams", optarg, 1, 65536); break;
		case OPT_FRAMES: c->frames = parse_u64("--frames", optarg, 0, UINT64_MAX / 65536); break;
		case OPT_DURATION: c->duration_s = parse_double("--duration", optarg, 0, 1e9); break;
		case OPT_PPF: c->ppf = (uint32_t)parse_u64("--packets-per-frame", optarg, 1, 65535); break;
		case OPT_GEOMETRY: c->geometry = optarg; break;
		case OPT_PAYLOAD: c->payload = (uint32_t)parse_u64("--payload", optarg, 1, GI_SIM_MAX_PAYLOAD); break;
		case OPT_FRAME_BYTES: c->frame_bytes = parse_u64("--frame-bytes", optarg, 1, 65535ull * GI_SIM_MAX_PAYLOAD); break;
		case OPT_RATE: c->rate = parse_double("--rate", optarg, 0, 1e10); break;
		case OPT_SEED: c->seed = parse_u64("--seed", optarg, 0, UINT64_MAX); break;
		case OPT_LOSS: c->loss = parse_double("--loss", optarg, 0, 1); break;
		case OPT_DUP: c->dup = parse_double("--dup", optarg, 0, 1); break;
		case OPT_REORDER: c->reorder = parse_double("--reorder", optarg, 0, 1); break;
		case OPT_DEPTH: c->depth = (uint32_t)parse_u64("--reorder-depth", optarg, 1, GI_SIM_MAX_DEPTH); break;
		case OPT_MALFORMED: c->malformed = parse_double("--malformed", optarg, 0, 1); break;
		case OPT_SEQ_START: c->seq_start = (uint32_t)parse_u64("--seq-start", optarg, 0, UINT32_MAX); break;
		case OPT_FRAME_START: c->frame_start = (uint32_t)parse_u64("--frame-start", optarg, 0, UINT32_MAX); break;
		case OPT_DST_PORT: c->dst_port = (uint16_t)parse_u64("--dst-port", optarg, 1, 65535); break;
		case OPT_SRC_PORT: c->src_port = (uint16_t)parse_u64("--src-port", optarg, 1, 65535); break;
		case OPT_SRC_MAC: parse_mac("--src-mac", optarg, c->src_mac); break;
		case OPT_DST_MAC: parse_mac("--dst-mac", optarg, c->dst_mac); break;
		case OPT_SRC_IP: c->src_ip = parse_ip4("--src-ip", optarg); break;
		case OPT_DST_IP: c->dst_ip = parse_ip4("--dst-ip", optarg); break;
		case OPT_WAIT_LINK: c->wait_link_s = parse_double("--wait-link", optarg, 0, 86400); break;
		case OPT_LCORE: c->lcore = (int)parse_u64("--lcore", optarg, 0, 1023); break;
		case OPT_EAL: c->eal_extra = optarg; break;
		case OPT_STALL: c->stall_s = parse_double("--stall-timeout", optarg, 0.001, 86400); break;
		case OPT_START_DELAY: c->start_delay_ms = (uint32_t)parse_u64("--start-delay-ms", optarg, 0, 600000); break;
		case OPT_START_FILE: c->start_file = optarg; break;
		case OPT_LINGER: c->linger_ms = (uint32_t)parse_u64("--linger-ms", optarg, 0, 600000); break;
		case OPT_PACE_METRICS: c->pace_metrics = optarg; break;
		case OPT_PACE_BATCHES: c->pace_batches = (uint32_t)parse_u64("--pace-batches", optarg, 1, 1u << 20); break;
		case OPT_FORMAT: c->formats = optarg; break;
		case OPT_CUSTOM:
			if (c->n_custom == GI_SIM_MAX_CUSTOM)
				die_usage("--custom: at most %u maps", GI_SIM_MAX_CUSTOM);
			c->custom[c->n_custom++] = optarg;
			break;
		case GI_SIM_OPT_VITA49_SID_BASE:
		case GI_SIM_OPT_VITA49_NO_SID:
		case GI_SIM_OPT_VITA49_CLASS_ID:
		case GI_SIM_OPT_VITA49_TSI:
		case GI_SIM_OPT_VITA49_TSF:
		case GI_SIM_OPT_VITA49_TS_STEP:
		case GI_SIM_OPT_VITA49_TRAILER:
		case GI_SIM_OPT_VITA49_CONTEXT_EVERY:
		case GI_SIM_OPT_VITA49_DST_PORTS: gi_sim_vita49_option(c, o, optarg); break;
		case GI_SIM_OPT_ROCEV2_DST_QP:
		case GI_SIM_OPT_ROCEV2_OPCODE:
		case GI_SIM_OPT_ROCEV2_BASE_VA:
		case GI_SIM_OPT_HSB_FORM:
		case GI_SIM_OPT_HSB_PAGES:
		case GI_SIM_OPT_HSB_FIRST_PAGE:
		case GI_SIM_OPT_HSB_PAGE_BYTES:
		case GI_SIM_OPT_HSB_BAD_CRC:
		case GI_SIM_OPT_HSB_MTU: gi_sim_rocev2_option(c, o, optarg); break;
		case 'h':
		case OPT_HELP: usage(stdout); exit(0);
		case ':': die_usage("%s: missing argument", n);
		default: die_usage("unknown option '%s'", n);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!port)
		die_usage("--port is required (memif:SOCKET, pcap:FILE or udp:HOST:PORT)");
	c->port_spec = port;
	if (!strncmp(port, "memif:", 6) && port[6]) {
		c->kind = GI_SIM_MEMIF;
		c->port_arg = port + 6;
	} else if (!strncmp(port, "pcap:", 5) && port[5]) {
		c->kind = GI_SIM_PCAP;
		c->port_arg = port + 5;
	} else if (!strncmp(port, "udp:", 4)) {
		const char *colon = strrchr(port + 4, ':');
		if (!colon || colon == port + 4)
			die_usage("--port udp:HOST:PORT: missing host or port in '%s'", port);
		c->kind = GI_SIM_UDP;
		snprintf(c->udp_host, sizeof(c->udp_host), "%.*s", (int)(colon - (port + 4)), port + 4);
		c->dst_port = (uint16_t)parse_u64("--port udp:HOST:PORT", colon + 1, 1, 65535);
	} else {
		die_usage("--port: expected memif:SOCKET, pcap:FILE or udp:HOST:PORT, got '%s'", port);
	}
	if (c->frames == 0 && c->duration_s <= 0)
		die_usage("--frames 0 (unlimited) needs --duration");
	if ((uint32_t)c->dst_port + c->streams - 1 > 65535)
		die_usage("--streams %u from port %u runs past UDP port 65535", c->streams, c->dst_port);
	if (c->kind == GI_SIM_MEMIF && strlen(c->port_arg) >= 108)
		die_usage("--port memif: socket path longer than 107 bytes");
}

/* ---- the generator: one packet of one stream at a time ---- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wait until wire packet number `n` is due; flush what is queued first. */
static void pace(struct gi_sim *sim)
{
	if (sim->cfg.rate <= 0)
		return;
	double due = sim->t_start + (double)sim->n_wire / sim->cfg.rate;
	double now = now_s();
	if (now >= due)
		return;
	gi_sim_port_flush(sim);
	while (!sim->fatal && (now = now_s()) < due) {
		double left = due - now;
		if (left > 200e-6) {
			/* sleep most of it, spin only the last stretch */
			struct timespec ts = { 0, (long)((left - 100e-6) * 1e9) };
			if (left > 1.0)
				ts = (struct timespec){ 0, 900000000L };
			nanosleep(&ts, NULL);
		}
		if (stop_requested && left > 0.01)
			return;
	}
}

/*
 * --pace-metrics: a test whose receiver executes slower than the wire (the
 * CUDA emulation runs a CTA as OS threads) would otherwise see ring_full
 * drops on a busy machine, which no rate cap rules out.  Every 2 ms or 64
 * packets, while the daemon's batch rings hold more than --pace-batches
 * batches, wait for them to drain (30 s at most, then go on: the drops then
 * show); --rate then counts from the end of the wait.  An unreachable
 * metrics socket is said once and pacing stops.
 */
static void pace_by_metrics(struct gi_sim *sim)
{
	const struct gi_sim_cfg *c = &sim->cfg;
	double now = now_s();

	if (!c->pace_metrics || sim->pace_off || (now < sim->pace_next && sim->n_wire < sim->pace_next_wire))
		return;
	sim->pace_next = now + 0.002;
	sim->pace_next_wire = sim->n_wire + 64;
	gi_sim_port_flush(sim);
	for (double t0 = now; !sim->fatal && !stop_requested;) {
		struct gi_scrape sc;
		if (gi_scrape(c->pace_metrics, &sc) < 0) {
			fprintf(stderr, "gpuingest-sim: --pace-metrics: %s; sending unpaced\n", sc.err);
			sim->pace_off = true;
			return;
		}
		double queued = gi_scrape_sum(&sc, "gpuingest_ring_occupancy", NULL, NULL);
		gi_scrape_free(&sc);
		double waited = now_s() - t0;
		if (queued <= c->pace_batches || waited > 30) {
			sim->t_start += waited; /* --rate resumes from here, without a burst to catch up */
			return;
		}
		sim->pace_waits++;
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
}

static void wire(struct gi_sim *sim, struct gi_sim_stream *st, const struct gi_sim_pkt *p)
{
	if (sim->fatal)
		return;
	pace_by_metrics(sim);
	pace(sim);
	gi_sim_port_put(sim, st, p);
	sim->n_wire++;
}

static void emit_copy(struct gi_sim *sim, struct gi_sim_stream *st, const struct gi_sim_pkt *p)
{
	st->duplicated++;
	if (st->max_out > p->ord + 1)
		st->duplicated_reordered++;
	wire(sim, st, p);
}

/* An original (not a copy) goes out: pending copies age by one, its own copy is scheduled. */
static void emit_original(struct gi_sim *sim, struct gi_sim_stream *st, const struct gi_sim_pkt *p)
{
	wire(sim, st, p);
	if (st->max_out < p->ord + 1)
		st->max_out = p->ord + 1;

	uint32_t keep = 0;
	for (uint32_t i = 0; i < st->n_dups; i++) {
		if (--st->dups[i].left == 0)
			emit_copy(sim, st, &st->dups[i].p);
		else
			st->dups[keep++] = st->dups[i];
	}
	st->n_dups = keep;
	if (!p->dup)
		return;
	if (p->dup_delay == 0) {
		emit_copy(sim, st, p);
		return;
	}
	if (st->n_dups == GI_SIM_MAX_DUPS) {
		emit_copy(sim, st, &st->dups[0].p);
		memmove(&st->dups[0], &st->dups[1], sizeof(st->dups[0]) * --st->n_dups);
	}
	st->dups[st->n_dups].p = *p;
	st->dups[st->n_dups].left = p->dup_delay;
	st->n_dups++;
}

static void release_held(struct gi_sim *sim, struct gi_sim_stream *st, uint32_t i)
{
	struct gi_sim_pkt p = st->held[i].p;
	memmove(&st->held[i], &st->held[i + 1], sizeof(st->held[0]) * (st->n_held - i - 1));
	st->n_held--;
	if (st->max_out > p.ord + 1)
		st->reordered++;
	emit_original(sim, st, &p);
}

static void emit_malformed(struct gi_sim *sim, struct gi_sim_stream *st, const struct gi_sim_pkt *base)
{
	struct gi_sim_pkt m = *base;
	uint32_t first = sim->cfg.kind == GI_SIM_UDP ? GI_SIM_MAL_TRUNCATED : GI_SIM_MAL_IP;
	uint32_t kinds[GI_SIM_MAL__END], n = 0;

	/* in turn, the variants this stream's format can carry (all for udp_seq) */
	for (uint32_t k = first; k < GI_SIM_MAL__END; k++)
		if (!st->mal_kinds || (st->mal_kinds & (1u << k)))
			kinds[n++] = k;
	if (n == 0)
		return;
	m.kind = (uint8_t)kinds[st->next_malformed++ % n];
	m.dup = 0;
	st->malformed++;
	st->malformed_by_reason[m.kind - GI_SIM_MAL_IP]++;
	wire(sim, st, &m);
}

/* vita49 --context-every: a context packet (counted, not placed, by the daemon). */
static void emit_vita49_context(struct gi_sim *sim, struct gi_sim_stream *st, const struct gi_sim_pkt *base)
{
	struct gi_sim_pkt m = *base;

	m.kind = GI_SIM_VITA49_CONTEXT;
	m.dup = 0;
	wire(sim, st, &m);
	st->vrt_context++;
}

/* Held packets in the order they fall due, then the copies still pending. */
static void stream_finish(struct gi_sim *sim, struct gi_sim_stream *st)
{
	while (st->n_held) {
		uint32_t best = 0;
		for (uint32_t i = 1; i < st->n_held; i++)
			if (st->held[i].left < st->held[best].left)
				best = i;
		release_held(sim, st, best);
	}
	for (uint32_t i = 0; i < st->n_dups; i++)
		emit_copy(sim, st, &st->dups[i].p);
	st->n_dups = 0;
	st->done = true;
}

static void stream_step(struct gi_sim *sim, struct gi_sim_stream *st)
{
	const struct gi_sim_cfg *c = &sim->cfg;
	struct gi_sim_pkt p = {
		.ord = st->unique, .seq = st->seq, .frame = st->frame, .pkt_index = (uint16_t)st->pkt_index,
	};
	bool first = p.ord == 0;
	bool last = p.ord + 1 == st->total;
	/* draw every roll every time: one impairment's setting never shifts another's pattern */
	double r_loss = rng_unit(&st->rng), r_dup = rng_unit(&st->rng);
	double r_reorder = rng_unit(&st->rng), r_mal = rng_unit(&st->rng);
	uint64_t r_extra = rng_next(&st->rng);

	st->unique++;
	st->seq++;
	if (++st->pkt_index == st->ppf) {
		st->pkt_index = 0;
		st->frame++;
	}
	for (uint32_t i = 0; i < st->n_held; i++)
		st->held[i].left--;

	if (!first && !last && r_loss < c->loss) {
		st->dropped++;
	} else {
		st->bytes_unique += gi_sim_plen(st, p.pkt_index); /* the last data packet maybe short */
		p.dup = !first && r_dup < c->dup;
		p.dup_delay = (uint8_t)(r_extra & 3);
		if (!first && r_reorder < c->reorder) {
			st->held[st->n_held].p = p;
			st->held[st->n_held].left = 1 + (uint32_t)((r_extra >> 8) % c->depth);
			st->n_held++;
		} else {
			emit_original(sim, st, &p);
		}
	}
	for (uint32_t i = 0; i < st->n_held;) {
		if (st->held[i].left == 0)
			release_held(sim, st, i);
		else
			i++;
	}
	if (r_mal < c->malformed)
		emit_malformed(sim, st, &p);
	if (st->format == GI_FORMAT_VITA49 && c->vita49.context_every && st->unique % c->vita49.context_every == 0)
		emit_vita49_context(sim, st, &p);
	if (last)
		stream_finish(sim, st);
}

static void run(struct gi_sim *sim)
{
	const struct gi_sim_cfg *c = &sim->cfg;
	uint32_t active = c->streams;
	bool stopping = false;
	uint64_t steps = 0;

	sim->t_start = now_s();
	while (active && !sim->fatal) {
		if (!stopping && ((steps & 63) == 0 || c->rate > 0) &&
		    (stop_requested || (c->duration_s > 0 && now_s() - sim->t_start >= c->duration_s))) {
			/* each stream finishes the frame it is in (a whole frame if it is
			 * at a boundary), its last packet guarded, so a receiver sees
			 * where the stream ended and no frame is cut short by the stop */
			stopping = true;
			for (uint32_t i = 0; i < c->streams; i++) {
				struct gi_sim_stream *st = &sim->streams[i];
				uint64_t end = st->unique + (st->ppf - st->pkt_index);
				if (!st->done && st->total > end)
					st->total = end;
			}
		}
		for (uint32_t i = 0; i < c->streams && !sim->fatal; i++) {
			struct gi_sim_stream *st = &sim->streams[i];
			if (st->done)
				continue;
			stream_step(sim, st);
			if (st->done)
				active--;
		}
		steps++;
	}
	gi_sim_port_flush(sim);
	sim->t_end = now_s();
}

/* ---- report ---- */

static void report(const struct gi_sim *sim)
{
	static const char *const mal_names[] = GI_SIM_MALFORMED_NAMES;
	const struct gi_sim_cfg *c = &sim->cfg;
	double elapsed = sim->t_end - sim->t_start;
	uint64_t sent = 0, failed = 0;

	for (uint32_t i = 0; i < c->streams; i++) {
		sent += sim->streams[i].sent;
		failed += sim->streams[i].tx_failed;
	}
	printf("{\"port\":");
	gi_json_string(stdout, c->port_spec);
	printf(",\"seed\":%llu,\"elapsed_s\":%.6f,\"pps\":%.1f,\"sent\":%llu,\"tx_failed\":%llu,\"streams\":[",
	       (unsigned long long)c->seed, elapsed, elapsed > 0 ? (double)sent / elapsed : 0.0,
	       (unsigned long long)sent, (unsigned long long)failed);
	for (uint32_t i = 0; i < c->streams; i++) {
		const struct gi_sim_stream *st = &sim->streams[i];
		uint64_t frames = st->unique ? (st->unique - 1) / st->ppf + 1 : 0;
		printf("%s{\"stream_id\":%u,\"udp_dst_port\":%u,\"frames\":%llu,\"packets_per_frame\":%u,"
		       "\"payload_bytes\":%u,\"frame_bytes\":%llu,\"bytes_unique\":%llu,\"seq_start\":%u,\"frame_start\":%u,\"unique\":%llu,\"dropped\":%llu,"
		       "\"sent_unique\":%llu,\"duplicated\":%llu,\"duplicated_reordered\":%llu,\"reordered\":%llu,"
		       "\"malformed\":%llu,\"malformed_by_reason\":{",
		       i ? "," : "", st->id, st->dst_port, (unsigned long long)frames, st->ppf, st->payload,
		       (unsigned long long)(st->data - 1) * st->payload + st->last, (unsigned long long)st->bytes_unique,
		       c->seq_start,
		       c->frame_start, (unsigned long long)st->unique, (unsigned long long)st->dropped,
		       (unsigned long long)(st->unique - st->dropped), (unsigned long long)st->duplicated,
		       (unsigned long long)st->duplicated_reordered, (unsigned long long)st->reordered,
		       (unsigned long long)st->malformed);
		/* the variants this stream's format can carry, each named as the daemon counts it */
		int first_key = 1;
		for (int k = 0; k < GI_SIM_MAL__END - GI_SIM_MAL_IP; k++) {
			if (st->mal_kinds && !(st->mal_kinds & (1u << (k + GI_SIM_MAL_IP))))
				continue;
			printf("%s\"%s\":%llu", first_key ? "" : ",", mal_names[k],
			       (unsigned long long)st->malformed_by_reason[k]);
			first_key = 0;
		}
		gi_sim_vita49_report(stdout, st);
		printf("},\"sent\":%llu,\"tx_failed\":%llu}", (unsigned long long)st->sent,
		       (unsigned long long)st->tx_failed);
	}
	printf("]}\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct gi_sim sim = {
		.cfg = {
			.streams = 1, .frames = 100, .ppf = 64, .payload = 1024, .seed = 1, .depth = 8,
			.dst_port = 5000, .src_port = 4000,
			.src_mac = { 0x02, 0, 0, 0, 0, 0x01 }, .dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
			.src_ip = 0x0a000001, .dst_ip = 0x0a000002,
			.wait_link_s = 15, .lcore = -1, .stall_s = 5, .linger_ms = 200, .pace_batches = 16,
		},
	};
	struct gi_sim_cfg *c = &sim.cfg;
	int rc;

	parse_args(argc, argv, c);
	uint32_t max_payload = 0;
	uint32_t n_custom_streams = 0;

	sim.streams = calloc(c->streams, sizeof(*sim.streams));
	if (!sim.streams) {
		fprintf(stderr, "gpuingest-sim: out of memory for %u streams\n", c->streams);
		return GI_SIM_EXIT_PORT;
	}
	for (uint32_t i = 0; i < c->streams; i++) {
		struct gi_sim_stream *st = &sim.streams[i];
		st->id = (uint16_t)i;
		st->dst_port = (uint16_t)(c->dst_port + i);
		st->rng = c->seed ^ (0x9e3779b97f4a7c15ull * (i + 1));
		st->ppf = c->ppf;
		st->payload = c->payload;
		if (c->geometry && parse_geometry(c->geometry, i, &st->ppf, &st->payload) < 0)
			return GI_SIM_EXIT_USAGE;
		st->last = st->payload;
		st->data = st->ppf;
		if (c->frame_bytes) {
			uint64_t full = (uint64_t)(st->ppf - 1) * st->payload;
			if (c->frame_bytes <= full || c->frame_bytes > full + st->payload) {
				fprintf(stderr, "gpuingest-sim: --frame-bytes %llu is not %u packets of %u payload bytes "
					"(allowed: %llu..%llu)\n", (unsigned long long)c->frame_bytes, st->ppf, st->payload,
					(unsigned long long)full + 1, (unsigned long long)full + st->payload);
				return GI_SIM_EXIT_USAGE;
			}
			st->last = (uint32_t)(c->frame_bytes - full);
		}
		st->format = GI_FORMAT_UDP_SEQ;
		if (c->formats && parse_format(c->formats, i, &st->format, &st->hsb) < 0)
			return GI_SIM_EXIT_USAGE;
		if (st->format == GI_FORMAT_CUSTOM && gi_sim_custom_stream(&sim, st, n_custom_streams++) < 0)
			return GI_SIM_EXIT_USAGE;
		if (c->vita49.dst_ports && gi_sim_dst_port(c->vita49.dst_ports, i, &st->dst_port) < 0)
			return GI_SIM_EXIT_USAGE;
		if (st->format == GI_FORMAT_VITA49 && gi_sim_vita49_stream(&sim, st) < 0)
			return GI_SIM_EXIT_USAGE;
		if (st->format == GI_FORMAT_ROCEV2 && gi_sim_rocev2_stream(&sim, st) < 0)
			return GI_SIM_EXIT_USAGE;
		if (st->format == GI_FORMAT_UDP_SEQ)
			st->mal_kinds = GI_SIM_MAL_UDP_SEQ_KINDS; /* not the variants of other formats */
		if (st->payload > max_payload)
			max_payload = st->payload;
		st->total = c->frames ? c->frames * st->ppf : UINT64_MAX;
		st->seq = c->seq_start;
		st->frame = c->frame_start;
		st->held = calloc(c->depth + 1, sizeof(*st->held));
		if (!st->held) {
			fprintf(stderr, "gpuingest-sim: out of memory for stream %u\n", i);
			return GI_SIM_EXIT_PORT;
		}
	c->payload = max_payload; /* buffers are sized for the largest stream */
	}

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	rc = gi_sim_port_open(&sim, &stop_requested);
	if (rc != 0) {
		gi_sim_port_close(&sim);
		return rc;
	}
	if (c->start_file) { /* 10 ms polls, 60 s at most */
		int n = 0;
		while (access(c->start_file, F_OK) != 0 && !stop_requested && n++ < 6000)
			usleep(10000);
		if (!stop_requested && access(c->start_file, F_OK) != 0) {
			fprintf(stderr, "gpuingest-sim: --start-file %s did not appear within 60 s\n", c->start_file);
			gi_sim_port_close(&sim);
			return GI_SIM_EXIT_PORT;
		}
	}
	if (c->start_delay_ms && !stop_requested)
		usleep(c->start_delay_ms * 1000u);
	run(&sim);
	gi_sim_port_linger(&sim);
	report(&sim);
	if (sim.fatal)
		fprintf(stderr, "gpuingest-sim: stopped early: %s\n", sim.fatal_msg);
	gi_sim_port_close(&sim);
	for (uint32_t i = 0; i < c->streams; i++) {
		free(sim.streams[i].held);
		free((void *)sim.streams[i].custom); /* gi_sim_custom_stream()'s, owned by the stream */
	}
	free(sim.streams);
	return sim.fatal ? sim.fatal : 0;
}
