/*
 * tensor_bench.c — a frame's tensor on the host (a stream's tensor: block):
 * the executor's conversion body (kernels/tensor.h, one worker, as the host
 * executor runs it) beside memcpy of the same frame, side by side in one
 * run, per sample -> type.  A part's figure (the conversion alone, hot
 * cache after the first round), not a pipeline one: GB/s of frame bytes
 * read, and the ratio to memcpy of those bytes.
 *
 * usage: tensor_bench [FRAME_BYTES (default 2592000: 1920 x 1080 RAW10)] [ROUNDS (default 100)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/tensor.h"
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
	int rounds = argc > 2 ? atoi(argv[2]) : 100;
	static const struct {
		const char *name;
		uint32_t sample, dtype, big;
		float scale;
	} cases[] = {
		{ "raw10->u16", GI_TS_RAW10, GI_DT_U16, 0, 1 },
		{ "raw12->f16", GI_TS_RAW12, GI_DT_F16, 0, 1.0f / 4096 },
		{ "ci16be->cf32", GI_TS_CI16, GI_DT_CF32, 1, 1.0f / 32768 },
		{ "ci16be->cf16", GI_TS_CI16, GI_DT_CF16, 1, 1.0f / 32768 },
		{ "i16be->bf16", GI_TS_I16, GI_DT_BF16, 1, 1 },
		{ "u8->f32", GI_TS_U8, GI_DT_F32, 0, 1.0f / 255 },
		{ "f32be->f32", GI_TS_F32, GI_DT_F32, 1, 1 },
	};
	n -= n % 60; /* whole groups of every sample */
	uint8_t *in = malloc(n ? n : 1), *out = malloc(4 * n + 64), *cp = malloc(n ? n : 1);
	if (!in || !out || !cp || rounds < 1 || !n)
		return 2;
	gi_pattern_fill(in, 7, 0, (uint32_t)n);
	struct gi_div div;
	gi_div_init(&div, 1024);

	double t0 = now_s();
	for (int r = 0; r < rounds; r++) {
		memcpy(cp, in, n);
		__asm__ volatile("" : : "r"(cp) : "memory");
	}
	double memcpy_gbs = rounds * (double)n / (now_s() - t0) / 1e9;
	printf("{\"frame_bytes\":%llu,\"memcpy_gbs\":%.2f,\"cases\":[", (unsigned long long)n, memcpy_gbs);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct gi_tensor_rt t = { .sample = cases[c].sample, .dtype = cases[c].dtype, .big = cases[c].big,
					  .scale = cases[c].scale };
		gi_tensor_setup(&t, n, 0);
		t0 = now_s();
		for (int r = 0; r < rounds; r++) {
			gi_tensor_convert(&t, in, out, NULL, &div, 0, 1);
			__asm__ volatile("" : : "r"(out) : "memory");
		}
		double gbs = rounds * (double)n / (now_s() - t0) / 1e9;
		printf("%s{\"case\":\"%s\",\"tensor_bytes\":%llu,\"gbs\":%.3f,\"vs_memcpy\":%.3f}", c ? "," : "",
		       cases[c].name, (unsigned long long)t.bytes, gbs, gbs / memcpy_gbs);
	}
	printf("]}\n");
	free(in);
	free(out);
	free(cp);
	return 0;
}
