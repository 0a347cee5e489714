/*
 * wake_latency — how long after the daemon publishes a frame a consumer
 * has it, sleeping on the ring's futex word (libgpuingest's gic_next with a
 * timeout) or spinning (gic_next with timeout 0 in a loop).
 *
 *   wake_latency --shm NAME --mode futex|spin [--frames N] [--skip K] [--wait S]
 *
 * Latency of a frame = this process's CLOCK_MONOTONIC when gic_next
 * returned it − the slot's publish_ns (the executor's CLOCK_MONOTONIC when
 * it marked the frame final; the frame becomes visible at the end of that
 * batch, so batch-end, visibility, wake-up and scheduling are all in it).
 * The first K frames are skipped (start-up).  It also reports the CPU time
 * the consumer used per second of wall time, which is what the futex buys.
 * bench/wake_latency.sh runs it against a live daemon at fixed frame rates.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gpuingest/consumer.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec * 1e-6;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

int main(int argc, char **argv)
{
	const char *shm = NULL, *mode = "futex";
	size_t want = 5000, skip = 200;
	double wait_s = 20;
	static const struct option lo[] = {
		{ "shm", required_argument, NULL, 's' },   { "mode", required_argument, NULL, 'm' },
		{ "frames", required_argument, NULL, 'n' }, { "skip", required_argument, NULL, 'k' },
		{ "wait", required_argument, NULL, 'w' },   { NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': shm = optarg; break;
		case 'm': mode = optarg; break;
		case 'n': want = strtoull(optarg, NULL, 10); break;
		case 'k': skip = strtoull(optarg, NULL, 10); break;
		case 'w': wait_s = strtod(optarg, NULL); break;
		default: fprintf(stderr, "usage: wake_latency --shm NAME --mode futex|spin [--frames N] [--skip K]\n"); return 2;
		}
	}
	int spin = strcmp(mode, "spin") == 0;
	if (!shm || want == 0 || (!spin && strcmp(mode, "futex") != 0)) {
		fprintf(stderr, "usage: wake_latency --shm NAME --mode futex|spin [--frames N] [--skip K]\n");
		return 2;
	}

	struct gic_ring *r;
	char err[512];
	int rc = gic_open(&r, shm, (int)(wait_s * 1000), GIC_OPEN_LATEST, err, sizeof(err));
	if (rc != GIC_OK) {
		fprintf(stderr, "wake_latency: %s: %s\n", shm, rc == GIC_TIMEOUT ? err : err[0] ? err : gic_strerror(rc));
		return 2;
	}
	uint64_t *lat = calloc(want, sizeof(*lat));
	size_t n = 0, seen = 0;
	double c0 = 0, t0 = 0;
	struct gic_frame f;
	uint64_t deadline = now_ns() + (uint64_t)(wait_s * 1e9);
	while (n < want) {
		rc = gic_next(r, &f, spin ? 0 : 1000);
		uint64_t t = now_ns();
		if (rc == GIC_TIMEOUT || rc == GIC_INTERRUPTED) {
			if (t > deadline)
				break;
			continue;
		}
		if (rc != GIC_OK)
			break;
		deadline = t + (uint64_t)(wait_s * 1e9);
		if (seen++ < skip)
			continue;
		if (n == 0) {
			c0 = cpu_s();
			t0 = (double)t * 1e-9;
		}
		lat[n++] = t > f.publish_ns ? t - f.publish_ns : 0;
	}
	double cpu = cpu_s() - c0, wall = (double)now_ns() * 1e-9 - t0;
	struct gic_stats s;
	gic_stats(r, &s);
	unsigned wake = gic_info(r)->wake;
	gic_close(r);
	if (n < 2) {
		fprintf(stderr, "wake_latency: %s: only %zu frames (rc %s)\n", shm, n, gic_strerror(rc));
		return 1;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("{\"mode\":\"%s\",\"frames\":%zu,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f,"
	       "\"cpu_per_wall\":%.3f,\"waits\":%llu,\"overruns\":%llu,\"wake\":%u}\n",
	       mode, n, pct(lat, n, 0.5), pct(lat, n, 0.9), pct(lat, n, 0.99), (double)lat[n - 1] / 1000.0,
	       wall > 0 ? cpu / wall : 0, (unsigned long long)s.waits, (unsigned long long)s.overruns, wake);
	free(lat);
	return 0;
}
