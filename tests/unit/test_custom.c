/*
 * test_custom.c — `format: custom` (kernels/fmt_custom.h): field extraction
 * for every width, byte order, mask and shift; bounds and malformed packets;
 * and whole streams through gi_exec_slot_host() — a 16-bit frame counter
 * with packet index, and frames derived from a 16-bit sequence cut out of a
 * 64-bit word — wrapping under loss, duplication and reordering, with the
 * accounting identity exact and every placed byte checked.
 *
 * Packets are built by gpuingest-sim's own custom builder, so the test also
 * proves that what the simulator writes is what the daemon reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exec_fixture.h"
#include "fmtpkt.h"
#include "kernels/executor.h"
#include "kernels/fmt_custom.h"
#include "testpkt.h"
#include "tools/sim_fmt_custom.c" /* the simulator's builder, no DPDK in it */

#define PPF 8
#define PAYLOAD 96
#define SLOTS 8
#define WINDOW 2
#define MAXB 64
#define N_ST 2

/* ---- field extraction ---- */

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
	return exf_xorshift(&rng_state);
}

static void test_field_extraction(void **state)
{
	static const uint8_t widths[] = { 1, 2, 4, 8 };
	(void)state;
	for (unsigned w = 0; w < 4; w++)
		for (uint8_t endian = 0; endian < 2; endian++)
			for (unsigned trial = 0; trial < 200; trial++) {
				uint32_t width = widths[w], bits = 8 * width;
				uint8_t buf[32];
				uint64_t raw = rnd() & gi_custom_full_mask(width);
				uint32_t off = (uint32_t)(rnd() % (32 - width));
				for (uint32_t i = 0; i < width; i++)
					buf[off + i] = (uint8_t)(raw >> (endian ? 8 * i : 8 * (width - 1 - i)));
				/* a contiguous run [lo, hi) and a shift in [lo, hi) */
				uint32_t lo = (uint32_t)(rnd() % bits), hi = lo + 1 + (uint32_t)(rnd() % (bits - lo));
				uint64_t mask = (hi - lo >= 64 ? ~0ull : ((1ull << (hi - lo)) - 1)) << lo;
				uint32_t shift = lo + (uint32_t)(rnd() % (hi - lo));
				struct gi_custom_field f = { .mask = mask, .offset = off, .width = (uint8_t)width,
							     .endian = endian, .shift = (uint8_t)shift };
				assert_true(gi_custom_load(buf + off, width, endian) == raw);
				assert_true(gi_custom_value(&f, buf) == (raw & mask) >> shift);
				assert_int_equal(gi_custom_value_bits(mask, shift), (int)(hi - shift));
			}
	/* fixed examples, by hand */
	const uint8_t b[8] = { 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0 };
	struct gi_custom_field f = { .mask = ~0ull, .width = 8, .endian = GI_CUSTOM_BIG };
	assert_true(gi_custom_value(&f, b) == 0x123456789abcdef0ull);
	f.endian = GI_CUSTOM_LITTLE;
	assert_true(gi_custom_value(&f, b) == 0xf0debc9a78563412ull);
	f = (struct gi_custom_field){ .mask = 0xffff00000000ull, .width = 8, .endian = GI_CUSTOM_LITTLE, .shift = 32 };
	assert_true(gi_custom_value(&f, b) == 0xbc9a);
	f = (struct gi_custom_field){ .mask = 0x0ff0, .offset = 2, .width = 2, .endian = GI_CUSTOM_BIG, .shift = 4 };
	assert_true(gi_custom_value(&f, b) == 0x67);
	f = (struct gi_custom_field){ .mask = 0x7f, .offset = 7, .width = 1, .shift = 0 };
	assert_true(gi_custom_value(&f, b) == 0x70);
}

static void test_value_bits(void **state)
{
	(void)state;
	assert_int_equal(gi_custom_value_bits(0xffff, 0), 16);
	assert_int_equal(gi_custom_value_bits(0xffff0000, 16), 16);
	assert_int_equal(gi_custom_value_bits(0xffff, 4), 12);     /* drops low bits: fine */
	assert_int_equal(gi_custom_value_bits(0xffff0000, 8), -1); /* low bits always zero */
	assert_int_equal(gi_custom_value_bits(0xf0f, 0), -1);      /* not contiguous */
	assert_int_equal(gi_custom_value_bits(0xff, 8), 0);        /* nothing left */
	assert_int_equal(gi_custom_value_bits(0, 0), -1);
	assert_int_equal(gi_custom_value_bits(~0ull, 0), 64);
	assert_int_equal(gi_custom_value_bits(1ull << 63, 63), 1);

	struct gi_format_params fp;
	struct gi_fmt_custom_params m = { .header_bytes = 16, .payload_offset = 16 };
	m.f[GI_CUSTOM_SEQ] = (struct gi_custom_field){ .offset = 0, .width = 8, .mask = 0xffff00000000ull, .shift = 32 };
	m.f[GI_CUSTOM_FRAME] = (struct gi_custom_field){ .offset = 8, .width = 2 }; /* mask 0: the whole field */
	gi_format_params_init(&fp, GI_FORMAT_CUSTOM);
	gi_fmt_custom_setup(&fp, &m);
	assert_int_equal(fp.seq_bits, 16);
	assert_int_equal(fp.frame_bits, 16);
	assert_true(((struct gi_fmt_custom_params *)fp.fmt)->f[GI_CUSTOM_FRAME].mask == 0xffff);
	m.f[GI_CUSTOM_FRAME].width = 0;
	m.f[GI_CUSTOM_SEQ] = (struct gi_custom_field){ .offset = 0, .width = 1, .mask = 0xf0, .shift = 4 };
	gi_format_params_init(&fp, GI_FORMAT_CUSTOM);
	gi_fmt_custom_setup(&fp, &m);
	assert_int_equal(fp.seq_bits, 4);
}

/* ---- the parser on its own: bounds and drop reasons ---- */

static void test_parse_bounds(void **state)
{
	(void)state;
	struct gi_format_params fp;
	struct gi_fmt_custom_params m = { .header_bytes = 12, .payload_offset = 16, .trailer_bytes = 4 };
	m.f[GI_CUSTOM_SEQ] = (struct gi_custom_field){ .offset = 0, .width = 4 };
	m.f[GI_CUSTOM_FRAME] = (struct gi_custom_field){ .offset = 4, .width = 2, .endian = GI_CUSTOM_LITTLE };
	m.f[GI_CUSTOM_INDEX] = (struct gi_custom_field){ .offset = 6, .width = 2, .endian = GI_CUSTOM_LITTLE };
	m.f[GI_CUSTOM_ID] = (struct gi_custom_field){ .offset = 8, .width = 1 };
	m.f[GI_CUSTOM_TIMESTAMP] = (struct gi_custom_field){ .offset = 9, .width = 2 };
	gi_format_params_init(&fp, GI_FORMAT_CUSTOM);
	gi_fmt_custom_setup(&fp, &m);

	uint8_t u[16 + 100 + 4];
	memset(u, 0, sizeof(u));
	gi_put_be32(u, 0xdeadbeef);
	u[4] = 0x34, u[5] = 0x12; /* frame 0x1234 */
	u[6] = 7, u[7] = 0;       /* index 7 */
	u[8] = 42;
	u[9] = 0x01, u[10] = 0x02;
	struct gi_pkt_info pi;
	memset(&pi, 0xff, sizeof(pi));
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), sizeof(u), 8, 100, 100, &pi), 0);
	assert_true(pi.seq == 0xdeadbeef);
	assert_true(pi.frame == 0x1234);
	assert_int_equal(pi.pkt_index, 7);
	assert_int_equal(pi.has_frame, 1);
	assert_int_equal(pi.sensor_id, 42);
	assert_true(pi.timestamp == 0x0102);
	assert_int_equal(pi.payload_off, 16);
	assert_int_equal(pi.payload_len, 100);
	assert_int_equal(pi.has_offset, 0);
	assert_int_equal(pi.closes_frame, 0);

	/* shorter than the header, or the header not all in segment 0 */
	assert_int_equal(gi_fmt_custom_parse(&fp, u, 11, 11, 8, 100, 100, &pi), GI_DROP_MALFORMED_TRUNCATED);
	assert_int_equal(gi_fmt_custom_parse(&fp, u, 0, 0, 8, 100, 100, &pi), GI_DROP_MALFORMED_TRUNCATED);
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), 11, 8, 100, 100, &pi), GI_DROP_MALFORMED_TRUNCATED);
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), 12, 8, 100, 100, &pi), 0);
	/* every length but payload_offset + payload + trailer */
	for (uint32_t len = 12; len <= sizeof(u); len++)
		assert_int_equal(gi_fmt_custom_parse(&fp, u, len, len, 8, 100, 100, &pi),
				 len == sizeof(u) ? 0 : GI_DROP_MALFORMED_LENGTH);
	/* the index must be inside the frame */
	u[6] = 8;
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), sizeof(u), 8, 100, 100, &pi), GI_DROP_MALFORMED_INDEX);
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), sizeof(u), 9, 100, 100, &pi), 0);
	u[7] = 1; /* 0x0108 */
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), sizeof(u), 9, 100, 100, &pi), GI_DROP_MALFORMED_INDEX);
	/* frame without index: the index is seq % packets */
	m.f[GI_CUSTOM_INDEX].width = 0;
	gi_fmt_custom_setup(&fp, &m);
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), sizeof(u), 8, 100, 100, &pi), 0);
	assert_int_equal(pi.pkt_index, 0xdeadbeef % 8);
	/* no frame: frames follow from seq */
	m.f[GI_CUSTOM_FRAME].width = 0;
	gi_fmt_custom_setup(&fp, &m);
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), sizeof(u), 8, 100, 100, &pi), 0);
	assert_int_equal(pi.has_frame, 0);
	/* a map that was never validated cannot read past the header */
	m.f[GI_CUSTOM_ID].offset = 12;
	gi_fmt_custom_setup(&fp, &m);
	assert_int_equal(gi_fmt_custom_parse(&fp, u, sizeof(u), sizeof(u), 8, 100, 100, &pi), GI_DROP_MALFORMED_TRUNCATED);
}

/* The simulator's spec parser agrees with the config's rules. */
static void test_sim_spec(void **state)
{
	(void)state;
	struct gi_sim_custom cu;
	char err[256];
	assert_int_equal(gi_sim_custom_parse("seq=0:4:be,frame=4:2:le,index=6:2:le,header=16", &cu, err, sizeof(err)), 0);
	assert_int_equal(cu.map.header_bytes, 16);
	assert_int_equal(cu.map.payload_offset, 16);
	assert_int_equal(cu.map.f[GI_CUSTOM_FRAME].endian, GI_CUSTOM_LITTLE);
	assert_true(cu.map.f[GI_CUSTOM_INDEX].mask == 0xffff);
	assert_int_equal(gi_sim_custom_parse("seq=0:8:le:0xffff00000000:32", &cu, err, sizeof(err)), 0);
	assert_int_equal(cu.map.header_bytes, 8);
	assert_int_equal(cu.map.f[GI_CUSTOM_SEQ].shift, 32);
	assert_int_equal(gi_sim_custom_parse("frame=0:2:le", &cu, err, sizeof(err)), -1);
	assert_int_equal(gi_sim_custom_parse("seq=0:3:le", &cu, err, sizeof(err)), -1);
	assert_int_equal(gi_sim_custom_parse("seq=0:2:le:0xf0f", &cu, err, sizeof(err)), -1);
	assert_int_equal(gi_sim_custom_parse("seq=0:2:xx", &cu, err, sizeof(err)), -1);
	assert_int_equal(gi_sim_custom_parse("seq=0:4:be,index=4:2:be", &cu, err, sizeof(err)), -1);
	assert_int_equal(gi_sim_custom_parse("seq=8:4:be,header=8", &cu, err, sizeof(err)), -1);
	assert_int_equal(gi_sim_custom_parse("seq=0:4:be,header=8,offset=4", &cu, err, sizeof(err)), -1);
}

/* ---- whole streams through the host executor ---- */

/* The simulator's view of each stream, for its packet builder. */
struct custom_priv {
	struct gi_sim_stream sim[N_ST];
	struct gi_sim_custom cu[N_ST];
};

/*
 * Stream 0: 32-bit big-endian seq, 16-bit little-endian frame and index, an
 * 8-bit id, a 4-byte trailer.  Stream 1: no frame number; a 16-bit seq in
 * bits 32..47 of a little-endian 64-bit word (the rest is filler).
 */
static const char *const specs[N_ST] = {
	"seq=0:4:be,frame=4:2:le,index=6:2:le,id=8:1:be,header=12,offset=16,trailer=4",
	"seq=0:8:le:0xffff00000000:32,header=8",
};

static void custom_stream(struct exec_fixture *f, int s)
{
	struct custom_priv *cp = f->priv ? f->priv : (f->priv = calloc(1, sizeof(struct custom_priv)));
	char err[256];
	assert_int_equal(gi_sim_custom_parse(specs[s], &cp->cu[s], err, sizeof(err)), 0);
	cp->sim[s] = (struct gi_sim_stream){ .id = (uint16_t)(10 + s), .dst_port = (uint16_t)(6000 + s), .ppf = PPF,
					     .payload = PAYLOAD, .last = PAYLOAD, .data = PPF, .format = GI_FORMAT_CUSTOM, .custom = &cp->cu[s] };
	f->st[s].fp.resync_frames = 1000;
	gi_fmt_custom_setup(&f->st[s].fp, &cp->cu[s].map);
	exf_map_port(f, s, (uint16_t)(6000 + s));
}

static const struct exf_conf conf = {
	.format = GI_FORMAT_CUSTOM, .names = { "f", "d" }, .n_streams = N_ST, .packets = PPF, .payload = PAYLOAD,
	.window = WINDOW, .slots = SLOTS, .maxb = MAXB, .stream = custom_stream,
};

static int setup(void **state)
{
	struct exec_fixture *f = exf_new(&conf);
	assert_int_equal(f->st[0].fp.seq_bits, 32);
	assert_int_equal(f->st[0].fp.frame_bits, 16);
	assert_int_equal(f->st[1].fp.seq_bits, 16);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	exf_free(*state);
	return 0;
}

/* Ethernet/IPv4/UDP around the simulator's custom UDP payload. */
static void queue_pkt(struct exec_fixture *f, int s, const struct gi_sim_pkt *p)
{
	struct gi_sim_stream *sim = &((struct custom_priv *)f->priv)->sim[s];
	uint8_t *b = next_pkt(f);
	memset(b, 0, TP_MAX);
	uint32_t ulen = gi_sim_custom_build(sim, p, b + 42, 77);
	queue_len(f, fp_wrap_udp(b, sim->dst_port, ulen));
}

/* Every received packet of every frame still in the ring matches the simulator's pattern. */
static void check_ring(struct exec_fixture *f, int s)
{
	struct gi_frame_ring_hdr *h = f->st[s].ring;
	for (uint64_t fr = f->st[s].next_pub > SLOTS ? f->st[s].next_pub - SLOTS : 0; fr < f->st[s].next_pub; fr++) {
		struct gi_frame_slot *sl = gi_frame_slot_at(h, fr);
		if (sl->seq != 2 * fr + 2)
			continue; /* skipped: never opened */
		uint64_t seed = gi_pattern_seed((uint16_t)sl->sensor_id, (uint32_t)sl->sensor_frame);
		assert_int_equal(sl->sensor_id, s == 0 ? 10 : 0);
		for (uint32_t p = 0; p < PPF; p++)
			if (gi_frame_bitmap(sl)[0] >> p & 1)
				assert_int_equal(gi_pattern_mismatches(gi_frame_payload(h, sl) + p * PAYLOAD, seed,
								       (uint64_t)p * PAYLOAD, PAYLOAD), 0);
	}
}

/*
 * Seeded loss, duplication and bounded reordering over both streams, with
 * both 16-bit counters (stream 0's frame, stream 1's seq) wrapping several
 * times: the identity is exact per stream and every packet lands in one
 * counter.
 */
static void test_wraparound_impaired(void **state)
{
	struct exec_fixture *f = *state;
	enum { FRAMES = 30000, DEPTH = PPF }; /* 240000 packets: 16-bit counters wrap 3 times */
	uint64_t dropped[N_ST] = { 0 }, dups[N_ST] = { 0 };
	struct held {
		int s;
		struct gi_sim_pkt p;
		int left;
	} held[64];
	int n_held = 0;

	for (uint64_t k = 0; k < (uint64_t)FRAMES * PPF; k++)
		for (int s = 0; s < N_ST; s++) {
			/* start both counters just below a 16-bit wrap */
			struct gi_sim_pkt p = { .ord = k, .seq = (uint32_t)(65536 - 300 + k), .frame = (uint32_t)(65500 + k / PPF),
						.pkt_index = (uint16_t)(k % PPF) };
			int first = k == 0, last = k + 1 == (uint64_t)FRAMES * PPF;
			uint64_t r = rnd() % 100;
			for (int i = 0; i < n_held; i++)
				if (--held[i].left <= 0) {
					queue_pkt(f, held[i].s, &held[i].p);
					held[i--] = held[--n_held];
				}
			if (!first && !last && r < 5) {
				dropped[s]++;
				continue;
			}
			if (!first && r >= 5 && r < 10 && n_held < 64) {
				held[n_held++] = (struct held){ s, p, 1 + (int)(rnd() % DEPTH) };
				continue;
			}
			queue_pkt(f, s, &p);
			if (r >= 10 && r < 13) {
				queue_pkt(f, s, &p);
				dups[s]++;
			}
			if (k % 4096 == 100)
				check_ring(f, s);
		}
	for (int i = 0; i < n_held; i++)
		queue_pkt(f, held[i].s, &held[i].p);
	flush_batch(f);
	for (int s = 0; s < N_ST; s++) {
		exf_flush(f, s, f->now);
		check_ring(f, s);
	}
	for (int s = 0; s < N_ST; s++) {
		struct gi_stream_rt *st = &f->st[s];
		assert_int_equal(st->c.packets + st->c.lost, (uint64_t)FRAMES * PPF);
		assert_int_equal(st->c.lost, dropped[s]);
		assert_int_equal(st->c.duplicates + st->c.late, dups[s]);
		assert_int_equal(frames_done(st), FRAMES);
		assert_int_equal(st->c.resyncs, 0);
		assert_true(st->c.reordered > 0);
		assert_int_equal(st->c.bytes, st->c.packets * PAYLOAD);
	}
	/* ring frame numbers kept growing through the wraps */
	assert_true(f->st[0].next_pub == 65500 + FRAMES);
	assert_true(f->st[1].next_pub == FRAMES);
	assert_int_equal(accounted(f), f->fed);
}

/* Clean traffic: every frame complete; the frame header carries id and sender frame (or derived frame). */
static void test_clean_frames(void **state)
{
	struct exec_fixture *f = *state;
	for (uint64_t k = 0; k < 5 * PPF; k++)
		for (int s = 0; s < N_ST; s++) {
			struct gi_sim_pkt p = { .ord = k, .seq = (uint32_t)(65530 + k), .frame = (uint32_t)(65534 + k / PPF),
						.pkt_index = (uint16_t)(k % PPF) };
			queue_pkt(f, s, &p);
		}
	flush_batch(f);
	for (int s = 0; s < N_ST; s++) {
		struct gi_stream_rt *st = &f->st[s];
		assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 5);
		assert_int_equal(st->c.lost, 0);
		check_ring(f, s);
	}
	/* stream 0: ring frames 65534.. (the sender's numbers, extended past 65535) */
	struct gi_frame_slot *sl = gi_frame_slot_at(f->st[0].ring, 65534 + 3);
	assert_true(sl->sensor_frame == 1); /* 65537 & 0xffff */
	assert_int_equal(sl->sensor_id, 10);
	/* stream 1: frames derived from the sequence number, from 0 */
	sl = gi_frame_slot_at(f->st[1].ring, 3);
	assert_true(sl->frame == 3);
	assert_true(sl->sensor_frame == 3);
	assert_int_equal(sl->sensor_id, 0);
	assert_int_equal(accounted(f), f->fed);
}

/* The simulator's malformed variants reach the daemon's drop reasons, and nothing else moves. */
static void test_malformed(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_sim_pkt p = { .ord = 0, .seq = 1, .frame = 1, .pkt_index = 0 };
	queue_pkt(f, 0, &p);
	p.kind = GI_SIM_MAL_TRUNCATED;
	queue_pkt(f, 0, &p);
	queue_pkt(f, 1, &p);
	p.kind = GI_SIM_MAL_LENGTH;
	queue_pkt(f, 0, &p);
	queue_pkt(f, 1, &p);
	p.kind = GI_SIM_MAL_INDEX;
	queue_pkt(f, 0, &p);
	flush_batch(f);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_TRUNCATED], 2);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_LENGTH], 2);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_INDEX], 1);
	assert_int_equal(f->st[0].c.packets, 1);
	assert_int_equal(f->st[1].c.packets, 0);
	assert_int_equal(f->st[1].started, 0);
	assert_int_equal(accounted(f), f->fed);
}

/* The simulator offers the index variant only when the index field can hold it. */
static void test_sim_stream_kinds(void **state)
{
	(void)state;
	struct gi_sim sim;
	struct gi_sim_stream st = { .id = 1, .ppf = 16, .payload = 100, .last = 100, .data = 16 };
	memset(&sim, 0, sizeof(sim));
	sim.cfg.custom[0] = "seq=0:4:be,frame=4:1:be,index=5:1:be:0xf0:4";
	sim.cfg.n_custom = 1;
	assert_int_equal(gi_sim_custom_stream(&sim, &st, 0), 0); /* 4-bit index holds 0..15, not 16 */
	assert_int_equal(st.mal_kinds & (1u << GI_SIM_MAL_INDEX), 0);
	assert_int_equal(sim.cfg.hdr_max, 6 + 0 + 1);
	free((void *)st.custom);
	st.ppf = 17;
	assert_int_equal(gi_sim_custom_stream(&sim, &st, 0), -1); /* cannot number packet 16 */
	st.ppf = 8;
	sim.cfg.custom[1] = "seq=0:4:be,frame=4:1:be,index=5:1:be,trailer=4";
	sim.cfg.n_custom = 2;
	assert_int_equal(gi_sim_custom_stream(&sim, &st, 5), 0); /* the last spec repeats */
	assert_true(st.mal_kinds & (1u << GI_SIM_MAL_INDEX));
	assert_int_equal(sim.cfg.hdr_max, 6 + 4 + 1);
	free((void *)st.custom);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_field_extraction),
		cmocka_unit_test(test_value_bits),
		cmocka_unit_test(test_parse_bounds),
		cmocka_unit_test(test_sim_spec),
		cmocka_unit_test(test_sim_stream_kinds),
		cmocka_unit_test_setup_teardown(test_clean_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wraparound_impaired, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
