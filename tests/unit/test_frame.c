/*
 * test_frame.c — frame ring layout and the warp-cooperative payload copy.
 *
 * The copy body is compiled here with GI_COPY_CHUNK redefined to count how
 * often each destination byte is written, then called once per lane for
 * nlanes = 32 (what the CUDA wrapper does) and 1 (the host executor): every
 * byte of the payload must be written exactly once and nothing beyond it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static uint8_t *count_base;
static uint32_t *write_count;
#define GI_COPY_CHUNK(dst, src, n)                                              \
	do {                                                                    \
		for (uint32_t b_ = 0; b_ < (n); b_++) {                         \
			write_count[(dst) + b_ - count_base]++;                 \
			((uint8_t *)(dst))[b_] = ((const uint8_t *)(src))[b_];  \
		}                                                               \
	} while (0)

#define GI_COPY_RUN(dst, src, n) GI_COPY_CHUNK(dst, src, n)
#include "kernels/frame.h"
#include "kernels/udp_seq.h"

static void check_copy(uint32_t len, uint32_t nlanes, uint32_t dst_off, uint32_t src_off)
{
	uint32_t span = len + 64;
	uint8_t *dst = calloc(1, span + 64), *src = malloc(span + 64);
	write_count = calloc(span + 64, sizeof(*write_count));
	count_base = dst;
	gi_pattern_fill(src, 0x1234, 0, span + 64);

	for (uint32_t lane = 0; lane < nlanes; lane++)
		gi_copy_lanes(dst + dst_off, src + src_off, len, lane, nlanes);

	for (uint32_t i = 0; i < span + 64; i++) {
		uint32_t expect = i >= dst_off && i < dst_off + len ? 1u : 0u;
		if (write_count[i] != expect)
			fail_msg("len %u lanes %u: byte %u written %u times, expected %u", len, nlanes, i, write_count[i],
				 expect);
	}
	if (len)
		assert_memory_equal(dst + dst_off, src + src_off, len);
	free(dst);
	free(src);
	free(write_count);
}

static void test_copy_each_byte_once(void **state)
{
	(void)state;
	static const uint32_t lens[] = { 0, 1, 15, 16, 17, 31, 32, 33, 511, 512, 513, 1024, 1400, 8000, 9000 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		check_copy(lens[i], 32, 0, 0);
		check_copy(lens[i], 1, 0, 0);
		check_copy(lens[i], 32, 3, 7); /* unaligned source and destination */
		check_copy(lens[i], 7, 16, 1); /* a lane count that does not divide anything */
	}
	for (uint32_t len = 0; len < 600; len++)
		check_copy(len, 32, len % 16, (len * 7) % 16);
}

static void test_layout(void **state)
{
	(void)state;
	const uint32_t slots = 5, packets = 130, payload = 1000;
	uint64_t bytes = gi_frame_ring_bytes(slots, packets, payload);
	uint8_t *mem = aligned_alloc(4096, bytes);
	memset(mem, 0, bytes);
	struct gi_frame_ring_hdr *h = (struct gi_frame_ring_hdr *)mem;

	gi_frame_ring_init(h, slots, packets, payload, 0, 1, 2, "cam0", 99);
	assert_int_equal(h->magic, GI_FRAME_MAGIC);
	assert_int_equal(h->bitmap_words, 3);
	assert_true(h->frame_bytes == (uint64_t)packets * payload);
	assert_string_equal(h->stream_name, "cam0");
	assert_int_equal(h->payload_off % 64, 0);
	assert_true(h->payload_off >= sizeof(struct gi_frame_slot) + 3 * 8);

	for (uint64_t f = 0; f < 2 * slots; f++) {
		struct gi_frame_slot *s = gi_frame_slot_at(h, f);
		uint8_t *p = gi_frame_payload(h, s);
		/* slot f % n, payload inside the ring, slots don't overlap */
		assert_true((uint8_t *)s >= mem + 4096);
		assert_true(p + h->frame_bytes <= mem + bytes);
		assert_true((uint8_t *)gi_frame_slot_at(h, f + 1) == (uint8_t *)s + h->slot_stride ||
			    (f + 1) % slots == 0);
		assert_true(gi_frame_slot_at(h, f + slots) == s);
		assert_int_equal(((uintptr_t)p) % 64, 0);
	}
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_each_byte_once),
		cmocka_unit_test(test_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
