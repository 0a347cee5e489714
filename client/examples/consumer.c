/*
 * consumer.c — the smallest useful libgpuingest consumer: print one line
 * per frame of a stream until the daemon closes it (or Ctrl-C).
 *
 *   cc consumer.c $(pkg-config --cflags --libs gpuingest) -o consumer
 *   ./consumer cam0
 */
#include <gpuingest/consumer.h>
#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t stop;
static void on_int(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv)
{
	struct gic_ring *ring;
	struct gic_frame f;
	char err[512];
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s STREAM (or /SHM-NAME)\n", argv[0]);
		return 2;
	}
	struct sigaction sa = { .sa_handler = on_int }; /* no SA_RESTART: a wait returns GIC_INTERRUPTED */
	sigaction(SIGINT, &sa, NULL);
	rc = gic_open(&ring, argv[1], 10000, 0, err, sizeof(err));
	if (rc != GIC_OK) {
		fprintf(stderr, "%s: %s\n", argv[1], err[0] ? err : gic_strerror(rc));
		return 1;
	}
	while (!stop && (rc = gic_next(ring, &f, 1000)) != GIC_CLOSED && rc != GIC_RESTARTED) {
		if (rc != GIC_OK)
			continue; /* timeout or interrupted: check `stop`, wait again */
		unsigned long sum = 0;
		if (f.data) /* a host ring: the bytes are in place; GPU rings have f.dev_ptr */
			for (uint64_t i = 0; i < f.bytes; i++)
				sum += ((const unsigned char *)f.data)[i];
		if (!gic_valid(ring, &f)) /* the daemon reused the slot while we summed */
			continue;
		printf("frame %llu: %u/%u packets, %llu bytes, byte sum %lu\n", (unsigned long long)f.frame,
		       f.received, f.expected, (unsigned long long)f.bytes, sum);
	}
	struct gic_stats s;
	gic_stats(ring, &s);
	printf("%llu frames, %llu missing, %llu overruns (%s)\n", (unsigned long long)s.frames,
	       (unsigned long long)s.missing, (unsigned long long)s.overruns, gic_strerror(rc));
	gic_close(ring);
	return 0;
}
