/*
 * frame_crc.c — a frame's CRC-32 (rocev2.frame_crc, HSB) on the host: the
 * executor's path (kernels/crc_host.c: ISA-L or zlib, whichever the build
 * found) against zlib's crc32() and the byte-at-a-time table, on the same
 * frame, side by side in one run.  A part's figure (the CRC alone, hot
 * cache after the first pass), not a pipeline one.
 *
 * usage: frame_crc [FRAME_BYTES (default 2592000)] [ROUNDS (default 200)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zlib.h>

#include "kernels/fmt_rocev2.h"
#include "kernels/idle.h"
#include "kernels/udp_seq.h"

/* the executor's clock (CLOCK_MONOTONIC), in seconds */
static double now_s(void)
{
	return (double)gi_now_ns() * 1e-9;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 2592000;
	int rounds = argc > 2 ? atoi(argv[2]) : 200;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf || rounds < 1)
		return 2;
	gi_pattern_fill(buf, 7, 0, (uint32_t)n);

	uint32_t a = 0, b = 0, c = 0;
	double t0 = now_s();
	for (int r = 0; r < rounds; r++)
		a = gi_crc32_host(0xffffffffu, buf, n);
	double t1 = now_s();
	for (int r = 0; r < rounds; r++)
		b = ~(uint32_t)crc32(0, buf, (uInt)n);
	double t2 = now_s();
	int trounds = rounds / 20 ? rounds / 20 : 1; /* the table is slow: fewer rounds */
	for (int r = 0; r < trounds; r++) {
		c = 0xffffffffu;
		for (uint64_t i = 0; i < n; i++)
			c = gi_crc32_step(c, buf[i]);
	}
	double t3 = now_s();
	double gbs[3] = { rounds * n / (t1 - t0) / 1e9, rounds * n / (t2 - t1) / 1e9, trounds * n / (t3 - t2) / 1e9 };
	printf("{\"frame_bytes\":%llu,\"executor\":\"%s\",\"executor_gbs\":%.2f,\"zlib_gbs\":%.2f,\"table_gbs\":%.3f,"
	       "\"executor_vs_zlib\":%.2f,\"same\":%s}\n",
	       (unsigned long long)n, gi_crc32_host_impl(), gbs[0], gbs[1], gbs[2], gbs[0] / gbs[1],
	       a == b && b == c ? "true" : "false");
	free(buf);
	return a == b && b == c ? 0 : 1;
}
