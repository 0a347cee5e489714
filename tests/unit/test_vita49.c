/*
 * test_vita49.c — the vita49 format: hand-built VRT packets of every shape
 * through the parser, context and corrupt packets counted by reason, stream
 * ID matching of streams chained on one UDP port, and sequencing through
 * the host executor: the 4-bit packet count across wraparound with short
 * losses, its 16-packet blind spot, and the timestamp rule (ts_step_ps)
 * that counts a loss of 20 consecutive packets exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exec_fixture.h"
#include "kernels/executor.h"
#include "kernels/fmt_vita49.h"
#include "fmtpkt.h"

#define PPF 8
#define PAYLOAD 64 /* 16 words */
#define SLOTS 8
#define WINDOW 2
#define MAXB 64
#define PKT_MAX 512
#define PORT 4991
#define STEP_PS 1000000ull /* 1 us per packet */

/* ---- packets ------------------------------------------------------------ */

/* ---- parser ------------------------------------------------------------- */

static struct gi_format_params params(uint64_t ts_step, int64_t sid)
{
	struct gi_format_params fp;
	memset(&fp, 0, sizeof(fp)); /* gi_format_params_init zeroes through uint64_t *, which gcc cannot follow */
	gi_format_params_init(&fp, GI_FORMAT_VITA49);
	struct gi_fmt_vita49_params vp = {
		.ts_step_ps = ts_step, .stream_id = sid < 0 ? 0 : (uint32_t)sid, .has_stream_id = sid >= 0,
	};
	gi_vita49_params_store(&fp, &vp);
	return fp;
}

static void test_every_shape(void **state)
{
	(void)state;
	struct gi_format_params fp = params(0, -1);
	uint8_t u[PKT_MAX];

	for (uint32_t type = 0; type <= 1; type++)
		for (uint32_t cid = 0; cid <= 1; cid++)
			for (uint32_t tsi = 0; tsi <= 3; tsi++)
				for (uint32_t tsf = 0; tsf <= 3; tsf++)
					for (uint32_t tr = 0; tr <= 1; tr++) {
						struct gi_vita49_hdr h = {
							.type = type, .count = (tsi * 4 + tsf + 3 * tr) & 15, .stream_id = 0xdeadbeef,
							.class_id = (uint8_t)cid, .class_oui = 0x123456, .class_codes = 0x00010002,
							.tsi_kind = tsi, .tsf_kind = tsf, .tsi = 1700000000u,
							.tsf = tsf == GI_VITA49_TSF_REAL_PS ? 123456789012ull : 0x0102030405060708ull,
							.trailer = (uint8_t)tr, .trailer_word = 0xffffffffu,
						};
						uint32_t len = fp_vrt_data(u, &h, PAYLOAD, 0, 0);
						uint32_t pro = 4 * (1 + type + 2 * cid + (tsi ? 1 : 0) + (tsf ? 2 : 0));
						assert_int_equal(len, pro + PAYLOAD + 4 * tr);
						struct gi_pkt_info pi;
						memset(&pi, 0xa5, sizeof(pi));
						assert_int_equal(gi_fmt_vita49_parse(&fp, u, len, len, &pi), 0);
						assert_int_equal(pi.payload_off, pro);
						assert_int_equal(pi.payload_len, PAYLOAD);
						assert_int_equal(pi.seq, h.count);
						assert_int_equal(pi.has_frame, 0);
						assert_int_equal(pi.has_offset, 0);
						assert_int_equal(pi.sensor_id, type ? 0xdeadbeefu : 0u);
						uint64_t ts = tsf == GI_VITA49_TSF_REAL_PS ? (tsi ? 1700000000ull * 1000000000ull : 0) +
											   123456789ull
							      : tsf ? 0x0102030405060708ull
								    : (tsi ? 1700000000ull * 1000000000ull : 0);
						assert_true(pi.timestamp == ts);
						assert_int_equal(gi_pattern_mismatches(u + pi.payload_off, gi_pattern_seed(
							(uint16_t)h.stream_id, 0), 0, pi.payload_len), 0);
					}
}

/* One hand-written packet, word by word, as the standard lays it out. */
static void test_hand_written(void **state)
{
	(void)state;
	struct gi_format_params fp = params(0, 0x01020304);
	static const uint8_t pkt[] = {
		0x1c, 0x6b, 0x00, 0x09,             /* type 1, C, T, TSI utc, TSF real, count 11, 9 words */
		0x01, 0x02, 0x03, 0x04,             /* stream id */
		0x00, 0x00, 0x12, 0xa2, 0x00, 0x01, 0x00, 0x02, /* class id: OUI 00-12-A2, codes 1, 2 */
		0x65, 0x53, 0xf1, 0x00,             /* TSI 1700000000 */
		0x00, 0x00, 0x00, 0x00, 0x3b, 0x9a, 0xca, 0x00, /* TSF 1e9 ps = 1 ms */
		0xaa, 0xbb, 0xcc, 0xdd,             /* one payload word */
		0x00, 0x00, 0x00, 0x00,             /* trailer */
	};
	struct gi_pkt_info pi;
	assert_int_equal(gi_fmt_vita49_match(&fp, pkt, sizeof(pkt)), 1);
	assert_int_equal(gi_fmt_vita49_parse(&fp, pkt, sizeof(pkt), sizeof(pkt), &pi), 0);
	assert_int_equal(pi.seq, 11);
	assert_int_equal(pi.sensor_id, 0x01020304);
	assert_int_equal(pi.payload_off, 28);
	assert_int_equal(pi.payload_len, 4);
	assert_true(pi.timestamp == 1700000000ull * 1000000000ull + 1000000ull);
	struct gi_format_params other = params(0, 0x01020305);
	assert_int_equal(gi_fmt_vita49_match(&other, pkt, sizeof(pkt)), 0);
}

static void test_context_and_corrupt(void **state)
{
	(void)state;
	struct gi_format_params fp = params(0, -1);
	uint8_t u[PKT_MAX];
	struct gi_pkt_info pi;
	struct gi_vita49_hdr h = { .type = 1, .stream_id = 7, .tsi_kind = 1, .tsf_kind = 2, .trailer = 1 };
	uint32_t len = fp_vrt_data(u, &h, PAYLOAD, 0, 0);

	/* context, extension data and command packets: counted, not placed */
	for (uint32_t t = 2; t <= 7; t++) {
		uint8_t c[PKT_MAX];
		memcpy(c, u, sizeof(c));
		c[0] = (uint8_t)(t << 4 | (c[0] & 0x0f));
		assert_int_equal(gi_fmt_vita49_parse(&fp, c, len, len, &pi), GI_DROP_VITA49_CONTEXT);
	}
	/* reserved packet types */
	for (uint32_t t = 8; t <= 15; t++) {
		uint8_t c[PKT_MAX];
		memcpy(c, u, sizeof(c));
		c[0] = (uint8_t)(t << 4 | (c[0] & 0x0f));
		assert_int_equal(gi_fmt_vita49_parse(&fp, c, len, len, &pi), GI_DROP_MALFORMED_VERSION);
	}
	/* cut short: no header, or fewer bytes than the words the header announces before the payload */
	assert_int_equal(gi_fmt_vita49_parse(&fp, u, 0, 0, &pi), GI_DROP_MALFORMED_TRUNCATED);
	assert_int_equal(gi_fmt_vita49_parse(&fp, u, 3, 3, &pi), GI_DROP_MALFORMED_TRUNCATED);
	for (uint32_t l = 4; l < 20; l += 4)
		assert_int_equal(gi_fmt_vita49_parse(&fp, u, l, l, &pi), GI_DROP_MALFORMED_TRUNCATED);
	/* the header segment (buffer split) must hold the prologue */
	assert_int_equal(gi_fmt_vita49_parse(&fp, u, len, 12, &pi), GI_DROP_MALFORMED_TRUNCATED);
	/* packet size disagrees with the UDP payload: short, trailing bytes, not whole words */
	assert_int_equal(gi_fmt_vita49_parse(&fp, u, len - 4, len - 4, &pi), GI_DROP_MALFORMED_LENGTH);
	assert_int_equal(gi_fmt_vita49_parse(&fp, u, len + 4, len + 4, &pi), GI_DROP_MALFORMED_LENGTH);
	assert_int_equal(gi_fmt_vita49_parse(&fp, u, len + 1, len + 1, &pi), GI_DROP_MALFORMED_LENGTH);
	/* a size smaller than its own prologue plus trailer */
	uint8_t c[PKT_MAX];
	memcpy(c, u, sizeof(c));
	gi_put_be16(c + 2, 5); /* 5 prologue words + trailer > 5 */
	assert_int_equal(gi_fmt_vita49_parse(&fp, c, 20, 20, &pi), GI_DROP_MALFORMED_LENGTH);
	/* a real-time TSF that is not picoseconds within a second */
	memcpy(c, u, sizeof(c));
	gi_put_be64(c + 12, GI_VITA49_PS_PER_S);
	assert_int_equal(gi_fmt_vita49_parse(&fp, c, len, len, &pi), GI_DROP_MALFORMED_VERSION);
	/* the timestamp rule needs a fractional timestamp */
	struct gi_format_params fts = params(STEP_PS, -1);
	struct gi_vita49_hdr h0 = { .type = 1, .stream_id = 7, .tsi_kind = 1 };
	len = fp_vrt_data(c, &h0, PAYLOAD, 0, 0);
	assert_int_equal(gi_fmt_vita49_parse(&fts, c, len, len, &pi), GI_DROP_MALFORMED_GEOMETRY);
}

static void test_match(void **state)
{
	(void)state;
	uint8_t u[PKT_MAX];
	struct gi_vita49_hdr h1 = { .type = 1, .stream_id = 0x100 }, h0 = { .type = 0 };
	uint32_t l1 = fp_vrt_data(u, &h1, 8, 0, 0);
	struct gi_format_params any = params(0, -1), s100 = params(0, 0x100), s101 = params(0, 0x101);

	assert_int_equal(gi_fmt_vita49_match(&any, u, l1), 1);
	assert_int_equal(gi_fmt_vita49_match(&s100, u, l1), 1);
	assert_int_equal(gi_fmt_vita49_match(&s101, u, l1), 0);
	assert_int_equal(gi_fmt_vita49_match(&s100, u, 7), 0); /* stream id not there */
	uint32_t l0 = fp_vrt_data(u, &h0, 8, 0, 0);
	assert_int_equal(gi_fmt_vita49_match(&any, u, l0), 1); /* type 0: only a stream without stream_id */
	assert_int_equal(gi_fmt_vita49_match(&s100, u, l0), 0);
}

/* The timestamp → sequence division against 128-bit arithmetic. */
static void test_ps_to_seq(void **state)
{
	(void)state;
	uint64_t x = 88172645463325252ull;
	static const uint64_t steps[] = { 1, 3, 1000, 33333333, 1000000, 999999999989ull, 1000000000000ull };
	for (unsigned k = 0; k < sizeof(steps) / sizeof(steps[0]); k++)
		for (int i = 0; i < 20000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			uint64_t sec = x >> 32, frac = (x & 0xffffffffffull) % GI_VITA49_PS_PER_S, step = steps[k];
			unsigned __int128 t = (unsigned __int128)sec * GI_VITA49_PS_PER_S + frac + step / 2;
			assert_true(gi_vita49_ps_to_seq(sec, frac, step) == (uint64_t)(t / step));
		}
}

/* ---- through the executor ------------------------------------------------ */

/* Two vita49 streams chained on UDP port PORT: stream ID 0x100 and 0x101. */
static void vita49_stream(struct exec_fixture *f, int s)
{
	f->st[s].fp = params(0, 0x100 + s);
	exf_chain_port(f, s, PORT);
}

static const struct exf_conf conf = {
	.format = GI_FORMAT_VITA49, .names = { "a", "b" }, .n_streams = 2, .packets = PPF, .payload = PAYLOAD,
	.window = WINDOW, .slots = SLOTS, .maxb = MAXB, .stream = vita49_stream,
};

static int setup(void **state)
{
	*state = exf_new(&conf);
	return 0;
}

static int teardown(void **state)
{
	exf_free(*state);
	return 0;
}

/* Data packet number k since the stream's first of stream s (SID 0x100 + s). */
static void queue_data(struct exec_fixture *f, int s, uint64_t k)
{
	uint64_t t = k * STEP_PS;
	struct gi_vita49_hdr h = {
		.type = 1, .count = (uint32_t)((k + 13) & 15), .stream_id = 0x100u + (uint32_t)s, .tsi_kind = 1,
		.tsf_kind = 2, .tsi = (uint32_t)(1700000000u + t / GI_VITA49_PS_PER_S), .tsf = t % GI_VITA49_PS_PER_S,
		.trailer = 1,
	};
	uint8_t *b = next_pkt(f);
	uint32_t ulen = fp_vrt_data(b + 42, &h, PAYLOAD, k / PPF, (uint32_t)(k % PPF));
	queue_len(f, fp_wrap_udp(b, PORT, ulen));
}

static void queue_context(struct exec_fixture *f, int s)
{
	struct gi_vita49_hdr h = { .type = GI_VITA49_IF_CONTEXT, .stream_id = 0x100u + (uint32_t)s, .tsi_kind = 1 };
	uint8_t *b = next_pkt(f);
	uint32_t pro = gi_vita49_write(b + 42, &h, 1);
	gi_put_be32(b + 42 + pro, 0); /* CIF0: no fields */
	queue_len(f, fp_wrap_udp(b, PORT, pro + 4));
}

/* Every frame published byte-exact against the pattern of (stream ID, derived frame). */
static void check_frames(struct exec_fixture *f, int s)
{
	struct gi_frame_ring_hdr *h = f->st[s].ring;
	for (uint64_t fr = f->st[s].next_pub > SLOTS ? f->st[s].next_pub - SLOTS : 0; fr < f->st[s].next_pub; fr++) {
		struct gi_frame_slot *sl = gi_frame_slot_at(h, fr);
		if (sl->frame != fr)
			continue;
		assert_int_equal(sl->sensor_id, 0x100 + s);
		assert_true(sl->sensor_frame == fr);
		uint64_t seed = gi_pattern_seed((uint16_t)(0x100 + s), (uint32_t)sl->sensor_frame);
		for (uint32_t p = 0; p < PPF; p++)
			if (gi_frame_bitmap(sl)[p / 64] >> (p % 64) & 1)
				assert_int_equal(gi_pattern_mismatches(gi_frame_payload(h, sl) + p * PAYLOAD, seed,
								       (uint64_t)p * PAYLOAD, PAYLOAD), 0);
	}
}

/* Two streams on one UDP port, interleaved, context packets between: all placed, contexts counted. */
/* the multiply that stands for ps / 1000 is exact at the edges and anywhere between (xorshift) */
static void test_ps_to_ns(void **state)
{
	(void)state;
	static const uint64_t edge[] = { 0, 1, 999, 1000, 1001, 999999, GI_VITA49_PS_PER_S - 1, GI_VITA49_PS_PER_S,
					 1ull << 40, (1ull << 63) - 1, 1ull << 63, ~0ull, ~0ull - 999 };
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		assert_int_equal(gi_vita49_ps_to_ns(edge[i]), edge[i] / 1000u);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 1000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t v = i & 1 ? x : x % (GI_VITA49_PS_PER_S + 1); /* any word; a valid TSF */
		if (gi_vita49_ps_to_ns(v) != v / 1000u)
			fail_msg("ps_to_ns(%llu) = %llu", (unsigned long long)v, (unsigned long long)gi_vita49_ps_to_ns(v));
	}
}

static void test_two_streams_and_context(void **state)
{
	struct exec_fixture *f = *state;
	for (uint64_t k = 0; k < 5 * PPF; k++) {
		queue_data(f, 0, k);
		queue_data(f, 1, k);
		if (k % 5 == 4)
			queue_context(f, (int)(k & 1));
	}
	flush_batch(f);
	check_frames(f, 0);
	check_frames(f, 1);
	for (int s = 0; s < 2; s++) {
		exf_flush(f, s, f->now);
		assert_int_equal(f->st[s].c.packets, 5 * PPF);
		assert_int_equal(f->st[s].c.lost, 0);
		assert_int_equal(f->st[s].c.frames[GI_FRAMES_COMPLETE], 5);
		assert_int_equal(gi_frame_slot_at(f->st[s].ring, 0)->first_ts_ns, 1700000000ull * 1000000000ull);
	}
	assert_int_equal(f->ctr.drops[GI_DROP_VITA49_CONTEXT], 8);
	assert_int_equal(f->ctr.drops[GI_DROP_NO_STREAM], 0);
	assert_true(accounted(f) == f->fed);
	/* a packet with a stream ID nobody configured */
	struct gi_vita49_hdr h = { .type = 1, .stream_id = 0x999 };
	uint8_t *b = next_pkt(f);
	queue_len(f, fp_wrap_udp(b, PORT, fp_vrt_data(b + 42, &h, PAYLOAD, 0, 0)));
	flush_batch(f);
	assert_int_equal(f->ctr.drops[GI_DROP_NO_STREAM], 1);
}

/* The 4-bit count through several wraparounds, losing up to 6 in a row: loss counted exactly. */
static void test_count_wrap_short_losses(void **state)
{
	struct exec_fixture *f = *state;
	uint64_t n = 40 * PPF, dropped = 0;
	for (uint64_t k = 0; k < n; k++) {
		/* bursts of 1..6 losses (a count gap of up to 7), never the first or the last packet */
		uint64_t burst = 1 + (k / 23) % 6;
		if (k > 0 && k + 1 < n && k % 23 < burst) {
			dropped++;
			continue;
		}
		queue_data(f, 0, k);
	}
	flush_batch(f);
	exf_flush(f, 0, f->now);
	check_frames(f, 0);
	assert_true(dropped > 40);
	assert_int_equal(f->st[0].c.lost, dropped);
	assert_int_equal(f->st[0].c.packets + f->st[0].c.lost, n);
	assert_int_equal(frames_done(&f->st[0]), n / PPF);
	assert_int_equal(f->st[0].c.reordered, 0);
	assert_int_equal(f->st[0].c.duplicates + f->st[0].c.late, 0);
}

/*
 * 20 consecutive packets lost.  With the 4-bit count alone the gap reads
 * as 4 (20 mod 16): the bound the README states.  With ts_step_ps the
 * sequence comes from the timestamp and the loss is counted exactly, and
 * every later packet lands in its right frame.
 */
static void run_gap(struct exec_fixture *f, uint64_t gap_at, uint64_t gap)
{
	uint64_t n = 12 * PPF;
	for (uint64_t k = 0; k < n; k++) {
		if (k >= gap_at && k < gap_at + gap)
			continue;
		queue_data(f, 0, k);
	}
	flush_batch(f);
	exf_flush(f, 0, f->now);
}

static void test_gap20_count_only(void **state)
{
	struct exec_fixture *f = *state;
	run_gap(f, 21, 20);
	assert_int_equal(f->st[0].c.lost, 4); /* 20 mod 16: the 4-bit count cannot see 16 of them */
	assert_int_equal(f->st[0].c.packets, 12 * PPF - 20);
}

static void test_gap20_timestamp_rule(void **state)
{
	struct exec_fixture *f = *state;
	f->st[0].fp = params(STEP_PS, 0x100);
	f->st[0].fp.seq_bits = 64; /* as the daemon sets it when ts_step_ps is configured */
	run_gap(f, 21, 20);
	check_frames(f, 0);
	assert_int_equal(f->st[0].c.lost, 20);
	assert_int_equal(f->st[0].c.packets, 12 * PPF - 20);
	assert_int_equal(frames_done(&f->st[0]), 10); /* frames 3 and 4 were never seen: skipped, their packets lost */
	assert_int_equal(f->st[0].c.reordered + f->st[0].c.duplicates + f->st[0].c.late, 0);
}

/* The timestamp rule across a second boundary and with a step that does not divide a second. */
static void test_timestamp_rule_second_boundary(void **state)
{
	(void)state;
	struct gi_format_params fp = params(333333333, -1); /* 1/3000 s, not a divisor of 1e12 */
	uint8_t u[PKT_MAX];
	struct gi_pkt_info pi;
	uint64_t prev = 0;
	for (uint64_t k = 0; k < 7000; k++) {
		/* the sender rounds its timestamps to whole picoseconds */
		unsigned __int128 t = (unsigned __int128)k * 1000000000000ull / 3000u + 999000000000ull;
		struct gi_vita49_hdr h = { .type = 1, .stream_id = 1, .tsi_kind = 2, .tsf_kind = 2,
					   .tsi = (uint32_t)(4000000000u + (uint64_t)(t / GI_VITA49_PS_PER_S)),
					   .tsf = (uint64_t)(t % GI_VITA49_PS_PER_S) };
		uint32_t len = fp_vrt_data(u, &h, 8, 0, 0);
		assert_int_equal(gi_fmt_vita49_parse(&fp, u, len, len, &pi), 0);
		if (k)
			assert_true(pi.seq - prev == 1);
		prev = pi.seq;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_shape),
		cmocka_unit_test(test_hand_written),
		cmocka_unit_test(test_context_and_corrupt),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_ps_to_seq),
		cmocka_unit_test(test_ps_to_ns),
		cmocka_unit_test_setup_teardown(test_two_streams_and_context, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_wrap_short_losses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gap20_count_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gap20_timestamp_rule, setup, teardown),
		cmocka_unit_test(test_timestamp_rule_second_boundary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
