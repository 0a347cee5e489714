/*
 * tensor_convert — the executor's tensor body (kernels/tensor.h) on one
 * frame, for test_tensor.py to hold against NumPy bit for bit.
 *
 *   tensor_convert SAMPLE DTYPE BIG MISSING SCALE OFFSET PAYLOAD_BYTES PRESENT WORKERS < frame > tensor
 *
 * SAMPLE, DTYPE, MISSING: enum numbers (tensor.h); SCALE, OFFSET: decimal
 * floats, rounded to float32 as the executor does; PRESENT: one '0' or '1'
 * per packet of PAYLOAD_BYTES ("": every packet arrived; ignored with
 * MISSING keep, as the executor does, stream_publish.h); WORKERS: how many
 * workers share the frame (the GPU's threads), run one after another.
 *
 * The frame is converted three ways: by gi_tensor_convert (the host's
 * loops, one per sample -> type), by gi_tensor_convert_as(..., 0) (the
 * GPU's: its few forms specialized, the generic loop for the rest) and by
 * gi_tensor_run with the types as variables (the generic loop alone); all
 * must agree byte for byte (exit 3 if not), so NumPy holds every form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/tensor.h"

int main(int argc, char **argv)
{
	if (argc != 10) {
		fprintf(stderr, "usage: %s SAMPLE DTYPE BIG MISSING SCALE OFFSET PAYLOAD_BYTES PRESENT WORKERS\n",
			argv[0]);
		return 2;
	}
	struct gi_tensor_rt t = {
		.sample = (uint32_t)atoi(argv[1]), .dtype = (uint32_t)atoi(argv[2]), .big = (uint32_t)atoi(argv[3]),
		.missing = (uint32_t)atoi(argv[4]), .scale = (float)strtod(argv[5], NULL),
		.offset = (float)strtod(argv[6], NULL),
	};
	const uint32_t payload = (uint32_t)atoi(argv[7]), workers = (uint32_t)atoi(argv[9]);
	const char *present = argv[8];
	size_t cap = 1 << 16, n = 0, r;
	uint8_t *in = malloc(cap);
	while (in && (r = fread(in + n, 1, cap - n, stdin)) > 0)
		if ((n += r) == cap)
			in = realloc(in, cap *= 2);
	if (!in || !payload || !workers)
		return 2;
	gi_tensor_setup(&t, n, 0);
	uint8_t *out = calloc(1, t.bytes + 1);
	uint64_t *bitmap = calloc(strlen(present) / 64 + 1, 8);
	if (!out || !bitmap)
		return 2;
	for (size_t i = 0; present[i]; i++)
		if (present[i] == '1')
			bitmap[i / 64] |= 1ull << (i % 64);
	struct gi_div div;
	gi_div_init(&div, payload);
	const uint64_t *bm = *present && t.missing != GI_TM_KEEP ? bitmap : NULL;
	uint8_t *gen = calloc(1, t.bytes + 1), *gpu = calloc(1, t.bytes + 1);
	if (!gen || !gpu)
		return 2;
	/* volatile: the compiler cannot fold the generic loop back into a specialized one */
	volatile uint32_t sample = t.sample, dtype = t.dtype, big = t.big;
	for (uint32_t w = 0; w < workers; w++) {
		gi_tensor_convert(&t, in, out, bm, &div, w, workers);
		gi_tensor_convert_as(&t, in, gpu, bm, &div, w, workers, 0);
		gi_tensor_run(&t, in, gen, bm, &div, w, workers, sample, dtype, big);
	}
	const struct { const uint8_t *got; const char *what; } forms[] = {
		{ gpu, "the GPU's selection of forms" }, { gen, "the generic loop" } };
	for (int k = 0; k < 2; k++) {
		if (memcmp(out, forms[k].got, t.bytes) == 0)
			continue;
		size_t at = 0;
		while (out[at] == forms[k].got[at])
			at++;
		fprintf(stderr, "tensor_convert: %s differs from the host's specialized loops at byte %zu: 0x%02x vs "
				"0x%02x\n", forms[k].what, at, forms[k].got[at], out[at]);
		return 3;
	}
	if (fwrite(out, 1, t.bytes, stdout) != t.bytes)
		return 1;
	free(in);
	free(out);
	free(gen);
	free(gpu);
	free(bitmap);
	return 0;
}
