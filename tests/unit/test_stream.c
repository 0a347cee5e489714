/*
 * test_stream.c — the executor bodies end to end on the host: packets go
 * through gi_exec_slot_host() exactly as the host executor runs them, into
 * real frame rings, and every packet must land in exactly one counter.
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
#include "testpkt.h"

#define PPF 8
#define PAYLOAD 96
#define SLOTS 8
#define WINDOW 2
#define MAXB 64

static void stream_port(struct exec_fixture *f, int s)
{
	exf_map_port(f, s, (uint16_t)(5000 + s));
}

/* Two udp_seq streams on UDP 5000 and 5001. */
static const struct exf_conf conf = {
	.format = GI_FORMAT_UDP_SEQ, .names = { "a", "b" }, .n_streams = 2, .packets = PPF, .payload = PAYLOAD,
	.window = WINDOW, .slots = SLOTS, .frame_timeout_ns = 1000000, .maxb = MAXB, .stream = stream_port,
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

/* Queue packet `idx` of `frame` on stream s with sequence number seq. */
static void queue_pkt(struct exec_fixture *f, int s, uint32_t frame, uint16_t idx, uint32_t seq)
{
	uint8_t tmp[TP_MAX];
	struct tp_opts o = { .udp_dst = (uint16_t)(5000 + s), .vlan = -1 };
	struct gi_udp_seq h = { .stream_id = (uint16_t)(10 + s), .packets_per_frame = PPF, .seq = seq, .frame = frame,
				.pkt_index = idx, .payload_len = PAYLOAD, .timestamp_ns = 7 };
	uint32_t len = tp_build(tmp, &o, &h);
	queue_raw(f, tmp, len);
}

/* Check a published frame's payload against the pattern for the packets it received. */
static void check_frame(struct exec_fixture *f, int s, uint64_t frame, uint32_t expect_state, uint32_t expect_received)
{
	struct gi_frame_ring_hdr *h = f->st[s].ring;
	struct gi_frame_slot *sl = gi_frame_slot_at(h, frame);
	assert_true(sl->seq == 2 * frame + 2);
	assert_true(sl->frame == frame);
	assert_int_equal(sl->state, expect_state);
	assert_int_equal(sl->received, expect_received);
	assert_int_equal(sl->sensor_id, 10 + s);
	uint64_t seed = gi_pattern_seed((uint16_t)(10 + s), (uint32_t)frame);
	uint32_t got = 0;
	for (uint32_t p = 0; p < PPF; p++) {
		if (!(gi_frame_bitmap(sl)[p / 64] >> (p % 64) & 1))
			continue;
		got++;
		assert_int_equal(gi_pattern_mismatches(gi_frame_payload(h, sl) + p * PAYLOAD, seed,
						       (uint64_t)p * PAYLOAD, PAYLOAD), 0);
	}
	assert_int_equal(got, expect_received);
}

static void test_in_order_complete(void **state)
{
	struct exec_fixture *f = *state;
	uint32_t seq = 0;
	for (uint32_t fr = 0; fr < 20; fr++)
		for (uint16_t p = 0; p < PPF; p++)
			queue_pkt(f, 0, fr, p, seq++);
	flush_batch(f);

	struct gi_stream_rt *st = &f->st[0];
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 20);
	assert_int_equal(st->c.packets, 20 * PPF);
	assert_int_equal(st->c.bytes, 20 * PPF * PAYLOAD);
	assert_int_equal(st->c.lost, 0);
	assert_int_equal(st->ring->next_frame, 20);
	assert_int_equal(st->ring->first_frame, 0);
	for (uint64_t fr = 20 - SLOTS; fr < 20; fr++)
		check_frame(f, 0, fr, GI_FRAME_COMPLETE, PPF);
	assert_int_equal(accounted(f), f->fed);
}

static void test_loss_partial_and_skipped(void **state)
{
	struct exec_fixture *f = *state;
	uint32_t seq = 0;
	/* frame 0 complete; frame 1 misses packets 2 and 5; frame 2 entirely lost; frames 3..6 complete */
	for (uint32_t fr = 0; fr < 7; fr++)
		for (uint16_t p = 0; p < PPF; p++, seq++) {
			if ((fr == 1 && (p == 2 || p == 5)) || fr == 2)
				continue;
			queue_pkt(f, 0, fr, p, seq);
		}
	flush_batch(f);
	struct gi_stream_rt *st = &f->st[0];
	/* frame 6 is still open (complete frames are published only in order: 6 is done, so all final) */
	assert_int_equal(st->c.frames[GI_FRAMES_PARTIAL], 1);
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 5);
	assert_int_equal(st->c.lost, 2 + PPF);
	assert_int_equal(st->c.packets, 7 * PPF - 2 - PPF);
	check_frame(f, 0, 1, GI_FRAME_PARTIAL, PPF - 2);
	/* frame 2 was skipped: its slot never carried frame 2 */
	assert_true(gi_frame_slot_at(st->ring, 2)->seq < 2 * 2 + 1);
	assert_int_equal(st->c.packets + st->c.lost, 7 * PPF);
	assert_int_equal(accounted(f), f->fed);
}

static void test_duplicates_and_late(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_stream_rt *st = &f->st[0];
	queue_pkt(f, 0, 0, 0, 0);
	queue_pkt(f, 0, 0, 0, 0); /* duplicate inside the open frame */
	for (uint16_t p = 1; p < PPF; p++)
		queue_pkt(f, 0, 0, p, p);
	queue_pkt(f, 0, 0, 3, 3); /* duplicate after frame 0 was published: late */
	flush_batch(f);
	assert_int_equal(st->c.duplicates, 1);
	assert_int_equal(st->c.late, 1);
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 1);
	check_frame(f, 0, 0, GI_FRAME_COMPLETE, PPF);
	assert_int_equal(accounted(f), f->fed);
}

static void test_reorder_within_window(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_stream_rt *st = &f->st[0];
	/* frames 0 and 1 interleaved backwards: within a window of 2 nothing is lost */
	for (int p = PPF - 1; p >= 0; p--) {
		queue_pkt(f, 0, 1, (uint16_t)p, (uint32_t)(PPF + p));
		queue_pkt(f, 0, 0, (uint16_t)p, (uint32_t)p);
	}
	flush_batch(f);
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 2);
	assert_int_equal(st->c.lost, 0);
	assert_int_equal(st->c.reordered, 2 * PPF - 1);
	check_frame(f, 0, 0, GI_FRAME_COMPLETE, PPF);
	check_frame(f, 0, 1, GI_FRAME_COMPLETE, PPF);
	assert_int_equal(accounted(f), f->fed);
}

static void test_window_pushes_partial_then_late(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_stream_rt *st = &f->st[0];
	for (uint16_t p = 0; p < PPF - 1; p++) /* frame 0 missing its last packet */
		queue_pkt(f, 0, 0, p, p);
	queue_pkt(f, 0, 2, 0, 2 * PPF);        /* frame 2 arrives: window 2 closes frame 0 */
	queue_pkt(f, 0, 0, PPF - 1, PPF - 1);  /* the straggler is now late */
	flush_batch(f);
	assert_int_equal(st->c.frames[GI_FRAMES_PARTIAL], 1);
	assert_int_equal(st->c.late, 1);
	/* frame 1 never seen, 2 open */
	assert_int_equal(st->ring->next_frame, 1);
	assert_int_equal(st->c.lost, 1);
	check_frame(f, 0, 0, GI_FRAME_PARTIAL, PPF - 1);
	/* shutdown flush: frame 1 skipped (lost PPF), frame 2 partial with 1 packet (lost PPF-1) */
	exf_flush(f, (int)(st - f->st), f->now);
	assert_int_equal(st->ring->next_frame, 3);
	assert_int_equal(st->c.lost, 1 + PPF + PPF - 1);
	assert_int_equal(st->c.frames[GI_FRAMES_PARTIAL], 2);
	check_frame(f, 0, 2, GI_FRAME_PARTIAL, 1);
	assert_int_equal(st->c.packets + st->c.lost, 3 * PPF);
	assert_int_equal(accounted(f), f->fed);
}

static void test_timeout(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_stream_rt *st = &f->st[0];
	for (uint16_t p = 0; p < 3; p++)
		queue_pkt(f, 0, 5, p, p);
	flush_batch(f);
	exf_tick(f, (int)(st - f->st), f->now + st->frame_timeout_ns - 1);
	assert_int_equal(frames_done(st), 0);
	exf_tick(f, (int)(st - f->st), f->now + st->frame_timeout_ns);
	assert_int_equal(st->c.frames[GI_FRAMES_TIMED_OUT], 1);
	assert_int_equal(st->c.lost, PPF - 3);
	check_frame(f, 0, 5, GI_FRAME_TIMED_OUT, 3);
	assert_int_equal(st->ring->next_frame, 6);
	/* a packet for the timed-out frame is late */
	queue_pkt(f, 0, 5, 4, 4);
	flush_batch(f);
	assert_int_equal(st->c.late, 1);
	assert_int_equal(accounted(f), f->fed);
}

static void test_wraparound(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_stream_rt *st = &f->st[1];
	uint32_t seq = 0xfffffff0u;
	for (uint32_t fr = 0xfffffffeu, k = 0; k < 5; fr++, k++)
		for (uint16_t p = 0; p < PPF; p++)
			queue_pkt(f, 1, fr, p, seq++);
	flush_batch(f);
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 5);
	assert_int_equal(st->c.lost, 0);
	assert_int_equal(st->c.reordered, 0);
	/* extended numbering keeps going past 2^32 */
	assert_true(st->ring->next_frame == 0xfffffffeull + 5);
	check_frame(f, 1, 0x100000001ull, GI_FRAME_COMPLETE, PPF);
	assert_int_equal(accounted(f), f->fed);
}

static void test_malformed_and_no_stream(void **state)
{
	struct exec_fixture *f = *state;
	uint8_t pkt[TP_MAX];
	struct tp_opts o = { .udp_dst = 5000, .vlan = -1 };
	struct gi_udp_seq h = { .stream_id = 10, .packets_per_frame = PPF, .frame = 0, .payload_len = PAYLOAD };
	uint32_t len = tp_build(pkt, &o, &h);
	uint8_t *u = pkt + 42;

	queue_pkt(f, 0, 0, 0, 0); /* one good packet first */
	queue_raw(f, pkt, 30);    /* cut inside IPv4 */
	u[0] = 0;
	queue_raw(f, pkt, len);   /* magic */
	u[0] = 0x47;
	u[2] = 9;
	queue_raw(f, pkt, len);   /* version */
	u[2] = 1;
	gi_put_be16(u + 18, PAYLOAD - 1);
	queue_raw(f, pkt, len);   /* length */
	gi_put_be16(u + 18, PAYLOAD);
	gi_put_be16(u + 16, PPF);
	queue_raw(f, pkt, len);   /* index */
	gi_put_be16(u + 16, 0);
	gi_put_be16(u + 6, PPF * 2);
	queue_raw(f, pkt, len);   /* geometry: packets_per_frame differs from config */
	gi_put_be16(u + 6, PPF);
	/* truncated sensor header: UDP payload of 10 bytes */
	uint8_t small[TP_MAX];
	memcpy(small, pkt, 42 + 10);
	gi_put_be16(small + 14 + 2, 20 + 8 + 10);
	gi_put_be16(small + 14 + 20 + 4, 8 + 10);
	queue_raw(f, small, 42 + 10);
	gi_put_be16(pkt + 36, 5999); /* no stream on that port */
	queue_raw(f, pkt, len);
	gi_put_be16(pkt + 12, 0x0806); /* ARP */
	queue_raw(f, pkt, len);
	flush_batch(f);

	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_IP], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_MAGIC], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_VERSION], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_LENGTH], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_INDEX], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_GEOMETRY], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_TRUNCATED], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_NO_STREAM], 2);
	assert_int_equal(f->st[0].c.packets, 1);
	assert_int_equal(accounted(f), f->fed);
}

/* Seeded random loss, duplication and bounded reordering over two streams. */
static void test_accounting_identity_random(void **state)
{
	struct exec_fixture *f = *state;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
#define RND() exf_xorshift(&rng)
	enum { FRAMES = 400, DEPTH = PPF }; /* displacement < window * PPF */
	uint32_t seq[2] = { 0, 0 };
	uint64_t dropped[2] = { 0, 0 }, dups[2] = { 0, 0 };
	struct held {
		int s;
		uint32_t fr, seq;
		uint16_t p;
		int left;
	} held[64];
	int n_held = 0;

	for (uint32_t fr = 0; fr < FRAMES; fr++)
		for (uint16_t p = 0; p < PPF; p++)
			for (int s = 0; s < 2; s++) {
				uint32_t sq = seq[s]++;
				int first = fr == 0 && p == 0, last = fr == FRAMES - 1 && p == PPF - 1;
				uint64_t r = RND() % 100;
				/* release held packets whose delay ran out */
				for (int i = 0; i < n_held; i++)
					if (--held[i].left <= 0) {
						queue_pkt(f, held[i].s, held[i].fr, held[i].p, held[i].seq);
						held[i--] = held[--n_held];
					}
				if (!first && !last && r < 5) {
					dropped[s]++;
					continue;
				}
				if (!first && r >= 5 && r < 10 && n_held < 64) {
					held[n_held++] = (struct held){ s, fr, sq, p, 1 + (int)(RND() % DEPTH) };
					continue;
				}
				queue_pkt(f, s, fr, p, sq);
				if (r >= 10 && r < 13) {
					queue_pkt(f, s, fr, p, sq);
					dups[s]++;
				}
			}
	for (int i = 0; i < n_held; i++)
		queue_pkt(f, held[i].s, held[i].fr, held[i].p, held[i].seq);
	flush_batch(f);
	for (int s = 0; s < 2; s++)
		exf_flush(f, s, f->now);

	for (int s = 0; s < 2; s++) {
		struct gi_stream_rt *st = &f->st[s];
		assert_int_equal(st->c.packets + st->c.lost, (uint64_t)FRAMES * PPF);
		assert_int_equal(st->c.lost, dropped[s]);
		assert_int_equal(st->c.duplicates + st->c.late, dups[s]);
		assert_int_equal(frames_done(st), FRAMES);
		assert_true(st->c.reordered > 0);
	}
	assert_int_equal(accounted(f), f->fed);
}

/*
 * Header/data buffer split: the same packets cut into a header segment of
 * hdr bytes and a payload segment land byte-exact, whatever the cut (the
 * payload may start in either segment); a cut inside the sensor header is
 * counted, not misread.
 */
static void test_buffer_split(void **state)
{
	struct exec_fixture *f = *state;
	static const uint32_t cuts[] = { 74, 80, 128, 170 }; /* 170: the whole packet */
	uint64_t rb = gi_ring_bytes(4, MAXB, 1);
	struct gi_batch_ring *r = aligned_alloc(64, GI_ALIGN_UP(rb, 64));
	static uint8_t seg0[MAXB][TP_MAX], seg1[MAXB][TP_MAX];
	memset(r, 0, rb);
	assert_int_equal(gi_ring_init(r, 4, MAXB, 1), 0);
	assert_true((uint8_t *)(gi_slot_len0(gi_ring_slot(r, 3), MAXB) + MAXB) <= (uint8_t *)r + r->ring_bytes);
	assert_int_equal((uintptr_t)gi_slot_addr1(gi_ring_slot(r, 1), MAXB) % 8, 0);

	struct gi_batch_slot *sl = gi_ring_slot(r, 0);
	uint32_t n = 0, seq = 0;
	for (uint32_t fr = 0; fr < 4; fr++)
		for (uint16_t p = 0; p < PPF; p++, n++) {
			uint8_t pkt[TP_MAX];
			struct tp_opts o = { .udp_dst = 5000, .vlan = -1 };
			struct gi_udp_seq h = { .stream_id = 10, .packets_per_frame = PPF, .seq = seq++, .frame = fr,
						.pkt_index = p, .payload_len = PAYLOAD };
			uint32_t len = tp_build(pkt, &o, &h), cut = cuts[n % 4];
			memcpy(seg0[n], pkt, cut);
			memcpy(seg1[n], pkt + cut, len - cut);
			gi_slot_addr(sl)[n] = (uint64_t)(uintptr_t)seg0[n];
			gi_slot_len(sl, MAXB)[n] = len;
			gi_slot_addr1(sl, MAXB)[n] = (uint64_t)(uintptr_t)seg1[n];
			gi_slot_len0(sl, MAXB)[n] = cut;
		}
	/* one more whose cut falls inside the 32-byte sensor header */
	{
		uint8_t pkt[TP_MAX];
		struct tp_opts o = { .udp_dst = 5000, .vlan = -1 };
		struct gi_udp_seq h = { .stream_id = 10, .packets_per_frame = PPF, .seq = seq, .frame = 4,
					.payload_len = PAYLOAD };
		uint32_t len = tp_build(pkt, &o, &h);
		memcpy(seg0[n], pkt, 60);
		memcpy(seg1[n], pkt + 60, len - 60);
		gi_slot_addr(sl)[n] = (uint64_t)(uintptr_t)seg0[n];
		gi_slot_len(sl, MAXB)[n] = len;
		gi_slot_addr1(sl, MAXB)[n] = (uint64_t)(uintptr_t)seg1[n];
		gi_slot_len0(sl, MAXB)[n] = 60;
		n++;
	}
	sl->n_pkts = n;
	sl->port = 0;
	gi_exec_slot_host(&f->ctx, &f->ctr, sl, MAXB, 1, f->now);
	f->fed += n;

	struct gi_stream_rt *st = &f->st[0];
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 4);
	assert_int_equal(st->c.packets, 4 * PPF);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_TRUNCATED], 1);
	for (uint64_t fr = 0; fr < 4; fr++)
		check_frame(f, 0, fr, GI_FRAME_COMPLETE, PPF);
	assert_int_equal(accounted(f), f->fed);
	free(r);
}

/*
 * GPU frame rings keep a metadata mirror for consumers.  Drive the bodies
 * with a mirror attached (both rings in host memory here) and check that
 * the mirror says exactly what the ring says, slot by slot.
 */
static void test_mirror_matches_ring(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_stream_rt *st = &f->st[0];
	uint64_t mb = gi_frame_mirror_bytes(SLOTS, PPF);
	struct gi_frame_ring_hdr *m = aligned_alloc(4096, GI_ALIGN_UP(mb, 4096));
	uint8_t handle[64];
	memset(m, 0, mb);
	for (int i = 0; i < 64; i++)
		handle[i] = (uint8_t)(i * 3);
	gi_frame_ring_init(m, SLOTS, PPF, PAYLOAD, 0, GI_FORMAT_UDP_SEQ, 0, "a", 1);
	gi_frame_ring_make_mirror(m, 2, "0000:41:00.0", handle, 12345);
	assert_string_equal(m->dev_pci_bus_id, "0000:41:00.0");
	assert_int_equal(m->magic, GI_FRAME_MAGIC);
	assert_true(m->slot_stride < m->dev_slot_stride);
	assert_true(m->dev_slot_stride == st->ring->slot_stride);
	assert_true(gi_frame_dev_payload_off(m, 9) ==
		    (uint64_t)(gi_frame_payload(st->ring, gi_frame_slot_at(st->ring, 9)) - (uint8_t *)st->ring));
	st->mirror = m;

	uint32_t seq = 0;
	for (uint32_t fr = 3; fr < 12; fr++)
		for (uint16_t p = 0; p < PPF; p++, seq++)
			if (!(fr == 5 && p == 1) && fr != 7)
				queue_pkt(f, 0, fr, p, seq);
	flush_batch(f);
	exf_flush(f, (int)(st - f->st), f->now);

	assert_int_equal(m->started, 1);
	assert_true(m->first_frame == st->ring->first_frame);
	assert_true(m->next_frame == st->ring->next_frame);
	for (uint64_t fr = 4; fr < 12; fr++) {
		struct gi_frame_slot *a = gi_frame_slot_at(st->ring, fr), *b = gi_frame_slot_at(m, fr);
		assert_true(a->seq == b->seq);
		if (fr == 7) {
			assert_true(b->seq < 2 * fr + 1); /* skipped in both */
			continue;
		}
		assert_true(b->seq == 2 * fr + 2);
		assert_true(b->frame == fr);
		assert_int_equal(b->state, a->state);
		assert_int_equal(b->received, a->received);
		assert_int_equal(b->expected, a->expected);
		assert_int_equal(b->sensor_id, a->sensor_id);
		assert_memory_equal(gi_frame_bitmap(b), gi_frame_bitmap(a), 8 * st->ring->bitmap_words);
	}
	assert_int_equal(gi_frame_slot_at(m, 5)->state, GI_FRAME_PARTIAL);
	assert_memory_equal(m->ipc_handle, handle, 64);
	st->mirror = NULL;
	free(m);
}

/*
 * gi_mirror_copy() copies in rounds of whole loads, field groups and not
 * the struct, and gi_mirror_copy_part() a word a lane (the GPU's commit:
 * 32 lanes; 7 and 1 here too, so that a lane takes words of both parts): every
 * metadata byte from `frame` to the NIC times and every bitmap word (10
 * for a frame of 600 packets) must arrive; the mirror's seq word (its own
 * seqlock), its pad and what lies past the bitmap must not change.
 */
static void test_mirror_copy_whole_slot(void **state)
{
	(void)state;
	const uint32_t slots = 4, packets = 600, words = gi_frame_bitmap_words(packets);
	const uint64_t frame = 6; /* slot 2 */
	uint64_t rb = gi_frame_ring_bytes(slots, packets, 64), mb = gi_frame_mirror_bytes(slots, packets);
	struct gi_frame_ring_hdr *r = aligned_alloc(4096, GI_ALIGN_UP(rb, 4096));
	struct gi_frame_ring_hdr *m = aligned_alloc(4096, GI_ALIGN_UP(mb, 4096));
	uint8_t handle[64] = { 0 };
	memset(r, 0, rb);
	memset(m, 0, mb);
	gi_frame_ring_init(r, slots, packets, 64, 0, GI_FORMAT_UDP_SEQ, 0, "a", 1);
	gi_frame_ring_init(m, slots, packets, 64, 0, GI_FORMAT_UDP_SEQ, 0, "a", 1);
	gi_frame_ring_make_mirror(m, 0, "0000:41:00.0", handle, rb);
	assert_int_equal(words, 10);

	struct gi_stream_rt st;
	memset(&st, 0, sizeof(st));
	st.format = GI_FORMAT_UDP_SEQ;
	st.packets = packets;
	st.ring = r;
	st.mirror = m;
	st.mirror_stride = m->slot_stride;
	gi_div_init(&st.div_slots, slots);

	struct gi_frame_slot *a = gi_frame_slot_at(r, frame), *b = gi_frame_slot_at(m, frame);
	assert_ptr_equal(gi_stream_mirror_slot(&st, frame), b);
	const size_t lo = offsetof(struct gi_frame_slot, frame), hi = offsetof(struct gi_frame_slot, pad);
	for (size_t i = lo; i < hi; i++)
		((uint8_t *)a)[i] = (uint8_t)(i * 7 + 1);
	a->frame = frame;
	a->seq = 2 * frame + 1;
	for (uint32_t w = 0; w < words; w++)
		gi_frame_bitmap(a)[w] = 0x0123456789abcdefull * (w + 1);
	const uint32_t lanes[] = { 0 /* gi_mirror_copy */, 32, 7, 1 };
	for (size_t k = 0; k < sizeof(lanes) / sizeof(lanes[0]); k++) {
		/* the mirror's own: seq, the pad, and past the bitmap (the next slot's first bytes) */
		memset(b, 0xee, m->slot_stride);
		uint8_t *next = (uint8_t *)gi_frame_slot_at(m, frame + 1);
		memset(next, 0xdd, 64);

		if (!lanes[k])
			gi_mirror_copy(&st, a);
		for (uint32_t lane = 0; lane < lanes[k]; lane++)
			gi_mirror_copy_part(&st, a, lane, lanes[k]);

		assert_memory_equal((uint8_t *)b + lo, (uint8_t *)a + lo, hi - lo);
		assert_memory_equal(gi_frame_bitmap(b), gi_frame_bitmap(a), 8 * words);
		assert_true(b->seq == 0xeeeeeeeeeeeeeeeeull);
		for (size_t i = 0; i < sizeof(b->pad); i++)
			assert_int_equal(b->pad[i], 0xee);
		for (uint8_t *p = (uint8_t *)(gi_frame_bitmap(b) + words); p < (uint8_t *)b + m->slot_stride; p++)
			assert_int_equal(*p, 0xee);
		for (int i = 0; i < 64; i++)
			assert_int_equal(next[i], 0xdd);
	}
	free(r);
	free(m);
}

/* A sender restart (frame numbers jump back by far more than resync_frames):
 * one resync, open frames published, no phantom loss, ring numbers grow. */
static void test_resync_on_restart(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_stream_rt *st = &f->st[0];
	st->fp.resync_frames = 100;
	uint32_t seq = 0;
	for (uint32_t fr = 5000; fr < 5003; fr++)
		for (uint16_t p = 0; p < PPF; p++)
			queue_pkt(f, 0, fr, p, seq++);
	/* restart: frame and sequence numbers from zero again */
	seq = 0;
	for (uint32_t fr = 0; fr < 3; fr++)
		for (uint16_t p = 0; p < PPF; p++)
			queue_pkt(f, 0, fr, p, seq++);
	flush_batch(f);
	exf_flush(f, (int)(st - f->st), f->now);
	assert_int_equal(st->c.resyncs, 1);
	assert_int_equal(st->c.lost, 0);
	assert_int_equal(st->c.late, 0);
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 6);
	assert_true(st->ring->next_frame > 5003);
	/* the new epoch's frames keep the sender's numbers for consumers */
	struct gi_frame_slot *last = gi_frame_slot_at(st->ring, st->ring->next_frame - 1);
	assert_true(last->sensor_frame == 2);
	assert_int_equal(gi_pattern_mismatches(gi_frame_payload(st->ring, last), gi_pattern_seed(10, 2), 0,
					       (uint64_t)PPF * PAYLOAD), 0);
	assert_int_equal(accounted(f), f->fed);
}

/*
 * A packet of the old epoch reordered behind a sender restart: late (its
 * frame was flushed at the restart), not a second restart back to the old
 * numbers and a third forward again, each flushing the frame just opened
 * (it was 3 resyncs, 8 packets lost, the new frame 0 split in two).
 */
static void test_restart_with_straggler(void **state)
{
	struct exec_fixture *f = *state;
	struct gi_stream_rt *st = &f->st[0];
	st->fp.resync_frames = 100;
	uint32_t seq = 0;
	for (uint32_t fr = 1000; fr < 1010; fr++)
		for (uint16_t p = 0; p < PPF; p++)
			if (fr != 1009 || p != PPF - 1)
				queue_pkt(f, 0, fr, p, seq++);
	uint32_t held = seq++;
	/* the restart, with the old epoch's last packet behind its first */
	uint32_t s2 = 0;
	queue_pkt(f, 0, 0, 0, s2++);
	queue_pkt(f, 0, 1009, PPF - 1, held);
	for (uint32_t fr = 0; fr < 10; fr++)
		for (uint16_t p = fr ? 0 : 1; p < PPF; p++)
			queue_pkt(f, 0, fr, p, s2++);
	flush_batch(f);
	exf_flush(f, 0, f->now);
	assert_int_equal(st->c.resyncs, 1);
	assert_int_equal(st->c.late, 1);
	assert_int_equal(st->c.lost, 1); /* frame 1009's last packet, which came after its frame was final */
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 19);
	assert_int_equal(st->c.frames[GI_FRAMES_PARTIAL], 1);
	assert_int_equal(accounted(f), f->fed);
	/* much later, the same old numbers are a restart again */
	queue_pkt(f, 0, 1005, 0, 5000);
	flush_batch(f);
	assert_int_equal(st->c.resyncs, 2);
	assert_int_equal(accounted(f), f->fed);
}

/* Queue packet `idx` of `frame` on stream 0 with a payload of `len` bytes. */
static void queue_sized(struct exec_fixture *f, uint32_t frame, uint16_t idx, uint32_t seq, uint16_t len)
{
	uint8_t tmp[TP_MAX];
	struct tp_opts o = { .udp_dst = 5000, .vlan = -1 };
	struct gi_udp_seq h = { .stream_id = 10, .packets_per_frame = PPF, .seq = seq, .frame = frame,
				.pkt_index = idx, .payload_len = len, .timestamp_ns = 7 };
	queue_raw(f, tmp, tp_build(tmp, &o, &h));
}

/*
 * A malformed packet far ahead (a frame number past resync_frames, and a
 * bad index or length) is dropped for what it is, and nothing else: no
 * resync that would close the open frames, no move of the maxima that the
 * next good packet is measured from (it was a resync, then a second one
 * back, and 8 packets lost).  Frames of 4 packets, the last 32 bytes, so a
 * 32-byte payload passes the geometry check and only its index is wrong.
 */
static void test_malformed_does_not_resync(void **state)
{
	(void)state;
	struct exf_conf c = conf;
	c.n_streams = 1;
	c.last = PAYLOAD / 2;
	c.window = 3;
	struct exec_fixture *f = exf_new(&c);
	struct gi_stream_rt *st = &f->st[0];
	st->fp.resync_frames = 100;
	uint32_t seq = 0;
	for (uint32_t fr = 0; fr < 3; fr++)
		for (uint16_t p = 0; p < PPF; p++)
			if (fr != 2 || p != PPF - 1)
				queue_sized(f, fr, p, seq++, p == PPF - 1 ? PAYLOAD / 2 : PAYLOAD);
	queue_sized(f, 5000, 0, seq++, PAYLOAD / 2); /* the last packet's length at index 0 */
	queue_sized(f, 6000, PPF, seq++, PAYLOAD);   /* an index past the frame */
	queue_sized(f, 2, PPF - 1, seq++, PAYLOAD / 2);
	for (uint32_t fr = 3; fr < 6; fr++)
		for (uint16_t p = 0; p < PPF; p++)
			queue_sized(f, fr, p, seq++, p == PPF - 1 ? PAYLOAD / 2 : PAYLOAD);
	flush_batch(f);
	exf_flush(f, 0, f->now);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_LENGTH], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_MALFORMED_INDEX], 1);
	assert_int_equal(st->c.resyncs, 0);
	assert_int_equal(st->c.lost, 0);
	assert_int_equal(st->c.late, 0);
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 6);
	assert_int_equal(st->ring->next_frame, 6);
	assert_int_equal(accounted(f), f->fed);
	exf_free(f);
}

/*
 * A VITA 49 stream alone, driven by gi_stream_locate()/gi_seq_locate()
 * directly: its frames placed by a `seq_bits` sequence number, the last
 * packet `last` bytes.  Returns the ring's memory, for free().
 */
static uint8_t *seq_stream(struct gi_stream_rt *st, uint32_t seq_bits, uint32_t last)
{
	uint64_t bytes = gi_frame_ring_bytes(SLOTS, PPF, PAYLOAD);
	uint8_t *mem = aligned_alloc(4096, bytes);
	memset(mem, 0, bytes);
	memset(st, 0, sizeof(*st));
	gi_frame_ring_init((struct gi_frame_ring_hdr *)mem, SLOTS, PPF, PAYLOAD,
			   last == PAYLOAD ? 0 : (PPF - 1) * PAYLOAD + last, GI_FORMAT_VITA49, 0, "v", 1);
	st->ring = (struct gi_frame_ring_hdr *)mem;
	st->packets = st->data_packets = PPF;
	st->payload_bytes = PAYLOAD;
	st->last_bytes = last;
	st->window = WINDOW;
	gi_format_params_init(&st->fp, GI_FORMAT_VITA49);
	st->fp.seq_bits = seq_bits;
	return mem;
}

/*
 * Frames derived from a narrow sequence counter (no frame number on the
 * wire), as VITA 49's 4-bit packet count: wraparound every 16 packets is
 * followed, losses below half the counter range are located exactly.
 */
static void test_derived_frames_narrow_counter(void **state)
{
	(void)state;
	static const uint32_t widths[] = { 4, 16, 24 };
	for (unsigned w = 0; w < 3; w++) {
		struct gi_stream_rt st;
		uint8_t *mem = seq_stream(&st, widths[w], PAYLOAD);
		uint64_t mask = (1ull << widths[w]) - 1, start = mask - 5; /* wraps early */
		uint32_t placed = 0;
		for (uint64_t k = 0; k < 40 * PPF; k++) {
			if (k % 7 == 3)
				continue; /* lose one packet in seven: fewer than 8 in a row */
			struct gi_pkt_info pi = { .seq = (start + k) & mask, .payload_len = PAYLOAD };
			uint64_t frame;
			uint32_t index;
			assert_int_equal(gi_stream_locate(&st, &pi, 1, &frame, &index), 0);
			assert_true(frame == k / PPF);
			assert_int_equal(index, k % PPF);
			placed++;
		}
		assert_int_equal(st.c.reordered, 0);
		assert_true(placed > 0);
		free(mem);
	}
}

/*
 * The same for a stream placed by its sequence number (VITA 49's, 24 bits
 * here), where the packet behind the restart is the old epoch's last one:
 * one above the newest it saw, not a restart back and another forward.
 */
static void test_restart_with_straggler_by_seq(void **state)
{
	(void)state;
	struct gi_stream_rt st;
	uint8_t *mem = seq_stream(&st, 24, PAYLOAD);
	st.fp.resync_frames = 10;
	uint64_t frame = 0;
	uint32_t index = 0;
	struct gi_pkt_info pi = { .payload_len = PAYLOAD };
	for (pi.seq = 1000; pi.seq < 1000 + 10 * PPF - 1; pi.seq++)
		assert_int_equal(gi_stream_locate(&st, &pi, 1, &frame, &index), 0);
	pi.seq = 500000; /* the restart */
	assert_int_equal(gi_stream_locate(&st, &pi, 1, &frame, &index), 0);
	assert_int_equal(st.c.resyncs, 1);
	uint64_t first = frame;
	pi.seq = 1000 + 10 * PPF - 1; /* the old epoch's last packet, behind it */
	assert_int_equal(gi_stream_locate(&st, &pi, 1, &frame, &index), 1);
	for (pi.seq = 500001; pi.seq < 500000 + 3 * PPF; pi.seq++) {
		assert_int_equal(gi_stream_locate(&st, &pi, 1, &frame, &index), 0);
		assert_true(frame == first + (pi.seq - 500000) / PPF);
	}
	assert_int_equal(st.c.resyncs, 1);
	free(mem);
}

/* A stream placed by its sequence number: a packet far ahead with the last packet's length cannot start a frame. */
static void test_malformed_by_seq_does_not_resync(void **state)
{
	(void)state;
	struct gi_stream_rt st;
	uint8_t *mem = seq_stream(&st, 24, PAYLOAD / 2);
	st.fp.resync_frames = 100;
	uint64_t frame = 0;
	uint32_t index = 0, drop;
	struct gi_pkt_info pi = { 0 };
	for (pi.seq = 0; pi.seq < 10; pi.seq++) {
		pi.payload_len = pi.seq % PPF == PPF - 1 ? PAYLOAD / 2 : PAYLOAD;
		assert_int_equal(gi_seq_locate(&st, &pi, 1, &frame, &index, &drop), GI_SEQ_PLACE);
	}
	struct gi_pkt_info bad = { .seq = 3000000, .payload_len = PAYLOAD / 2 };
	assert_int_equal(gi_seq_locate(&st, &bad, 1, &frame, &index, &drop), GI_SEQ_DONE);
	assert_int_equal(drop, GI_DROP_MALFORMED_LENGTH);
	pi.payload_len = PAYLOAD;
	assert_int_equal(gi_seq_locate(&st, &pi, 1, &frame, &index, &drop), GI_SEQ_PLACE);
	assert_true(frame == 10 / PPF);
	assert_int_equal(index, 10 % PPF);
	assert_int_equal(st.c.resyncs, 0);
	assert_int_equal(st.c.late, 0);
	/* a real restart (a first packet of full length) still resyncs */
	bad.payload_len = PAYLOAD;
	assert_int_equal(gi_seq_locate(&st, &bad, 1, &frame, &index, &drop), GI_SEQ_PLACE);
	assert_int_equal(st.c.resyncs, 1);
	assert_int_equal(index, 0);
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_order_complete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loss_partial_and_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicates_and_late, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reorder_within_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_pushes_partial_then_late, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wraparound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_and_no_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_accounting_identity_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_buffer_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mirror_matches_ring, setup, teardown),
		cmocka_unit_test(test_mirror_copy_whole_slot),
		cmocka_unit_test_setup_teardown(test_resync_on_restart, setup, teardown),
		cmocka_unit_test(test_malformed_does_not_resync),
		cmocka_unit_test_setup_teardown(test_restart_with_straggler, setup, teardown),
		cmocka_unit_test(test_derived_frames_narrow_counter),
		cmocka_unit_test(test_restart_with_straggler_by_seq),
		cmocka_unit_test(test_malformed_by_seq_does_not_resync),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
