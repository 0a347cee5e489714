/*
 * test_phased.c — the phased executor against the serial reference path,
 * on traffic built to reach every decision the serial path makes.
 *
 *  - Random traffic: four streams of three formats (udp_seq with sender
 *    frame numbers, vita49 with its 4-bit count, rocev2 placed by PSN with
 *    VA checks and frames ended by WRITE with immediate, udp_seq restarting
 *    mid-way) with loss, duplicates (both copies often in one batch),
 *    reordering, late packets, sender restarts, truncated packets, random
 *    batch sizes — and frame rings only one slot larger than the reorder
 *    window, so that batches span the whole ring and phase 2 must stall and
 *    take more rounds.  The fixture (exec_fixture.h) runs every batch
 *    through both paths and compares every frame ring byte and counter;
 *    every other seed splits the phases among workers as the GPU does.
 *  - Lying senders: sequence numbers that step by one while packet indices
 *    repeat, frame numbers jump and frames close early, so that phase 2's
 *    run checks, not the sequence numbers, must send them the serial way.
 *  - Long clean runs of a 4-bit count (whole batches of one stream).
 *  - One stream alone (the steered case): the GPU's per-frame phase 2.
 *  - The host executor with two worker threads on two rings (two ring
 *    groups), fed by a producer thread, against the serial path (under
 *    ThreadSanitizer this is the workers' isolation check).
 *  - Mode inline refusing a ring group split across rx lcores.
 *  - The divide-free arithmetic (gi_div, both its host and its GPU form),
 *    the counters' sign extension and the slice-by-8 ICRC against their
 *    plain forms; 2a's place of a record, the host's form against the
 *    GPU's, on random states.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exec_fixture.h"
#include "fmtpkt.h"
#include "kernels/executor.h"
#include "kernels/fmt_custom.h"

#define PPF 4
#define PAYLOAD 64
#define WINDOW 3
#define SLOTS (WINDOW + 1)
#define MAXB 64
#define QP 0x100u
#define ROCE_BASE 0x7f0000000000ull

/* The frame's last packet's payload: PAYLOAD, or shorter (frame.bytes) in test_short_last_packets. */
static uint32_t g_last = PAYLOAD;
#define FRAME_BYTES ((PPF - 1) * PAYLOAD + g_last)

enum { S_SEQ = 0, S_VITA, S_ROCE, S_RESTART, N_STREAMS };

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return exf_xorshift(&rng_state);
}

static int chance(unsigned percent)
{
	return rnd() % 100 < percent;
}

/* A batch is full: hand it over, and draw the next one's size (1 when `single`). */
static void next_batch(struct exec_fixture *f, uint32_t *batch, int single)
{
	if (f->n < *batch)
		return;
	flush_batch(f);
	f->now += 1000;
	*batch = single ? 1 : 1 + (uint32_t)(rnd() % MAXB);
}

/* The end of the traffic: the last batch, then every stream flushed and the books checked. */
static void end_traffic(struct exec_fixture *f, int n_streams)
{
	if (f->n)
		flush_batch(f);
	for (int s = 0; s < n_streams; s++)
		exf_flush(f, s, f->now);
	assert_int_equal(accounted(f), f->fed);
}

static void world_stream(struct exec_fixture *f, int s)
{
	struct gi_stream_rt *st = &f->st[s];
	switch (s) {
	case S_VITA: {
		struct gi_fmt_vita49_params vp = { .stream_id = 0x77, .has_stream_id = 1 };
		memset(&st->fp, 0, sizeof(st->fp));
		gi_format_params_init(&st->fp, GI_FORMAT_VITA49);
		gi_vita49_params_store(&st->fp, &vp);
		exf_map_port(f, s, 6001);
		break;
	}
	case S_ROCE: {
		struct gi_fmt_rocev2_params rp = { .base_va = ROCE_BASE, .dst_qp = QP, .icrc = GI_ROCEV2_ICRC_VERIFY,
						   .close_on = GI_ROCEV2_CLOSE_IMM, .frame_bytes = FRAME_BYTES };
		gi_format_params_init(&st->fp, GI_FORMAT_ROCEV2);
		gi_fmt_rocev2_set(&st->fp, &rp);
		exf_map_port(f, s, GI_ROCEV2_UDP_PORT);
		break;
	}
	case S_RESTART:
		st->fp.resync_frames = 64; /* a jump of more frames than this is a sender restart */
		exf_map_port(f, s, 6003);
		break;
	default:
		exf_map_port(f, s, 6000);
		break;
	}
}

/* every stream's frames also as a typed tensor: big-endian int16 to bfloat16, offset, lost samples 0 */
static const struct gi_frame_tensor world_tensor = {
	.dtype = GI_DT_BF16, .ndim = 1, .shape = { PPF * PAYLOAD / 2 }, .sample = GI_TS_I16, .big = 1,
	.missing = GI_TM_ZERO, .scale = 1, .offset = 0.25,
};

static const struct exf_conf world = {
	.formats = { GI_FORMAT_UDP_SEQ, GI_FORMAT_VITA49, GI_FORMAT_ROCEV2, GI_FORMAT_UDP_SEQ },
	.format = GI_FORMAT_UDP_SEQ, .n_streams = N_STREAMS, .packets = PPF, .payload = PAYLOAD, .window = WINDOW,
	.slots = SLOTS, .frame_timeout_ns = 0, .maxb = MAXB, .stream = world_stream, .tensor = &world_tensor,
};

/* Packet number `n` of stream s (its frame n / PPF, index n % PPF) into buf. */
static uint32_t build_pkt(int s, uint64_t n, uint8_t *buf)
{
	uint32_t frame = (uint32_t)(n / PPF), idx = (uint32_t)(n % PPF);
	uint32_t plen = idx == PPF - 1 ? g_last : PAYLOAD;

	switch (s) {
	case S_VITA: {
		struct gi_vita49_hdr h = { .type = GI_VITA49_IF_DATA_SID, .count = (uint32_t)(n & 15), .stream_id = 0x77,
					   .tsi_kind = 1, .tsi = 1700000000u + frame };
		uint32_t ulen = fp_vrt_data(buf + 42, &h, plen, frame, idx);
		return fp_wrap_udp(buf, 6001, ulen);
	}
	case S_ROCE: {
		uint8_t op = idx == 0 ? GI_ROCEV2_UC | GI_ROCEV2_WRITE_FIRST
			     : idx == PPF - 1 ? GI_ROCEV2_UC | GI_ROCEV2_WRITE_LAST_IMM
					      : GI_ROCEV2_UC | GI_ROCEV2_WRITE_MIDDLE;
		struct rp p = { .opcode = op, .qp = QP, .psn = (uint32_t)(n & 0xffffff), .plen = plen,
				.va = ROCE_BASE + (uint64_t)frame * FRAME_BYTES, .dma_len = FRAME_BYTES, .pad = -1,
				.seed = gi_pattern_seed(QP & 0xffff, frame), .off = (uint64_t)idx * PAYLOAD,
				.bad_icrc = n % 53 == 7 }; /* now and then corrupted in flight */
		return rp_build(buf, &p);
	}
	default: {
		struct tp_opts o = { .udp_dst = (uint16_t)(s == S_SEQ ? 6000 : 6003), .vlan = -1 };
		struct gi_udp_seq h = { .stream_id = (uint16_t)(40 + s), .packets_per_frame = PPF, .seq = (uint32_t)n,
					.frame = frame, .pkt_index = (uint16_t)idx, .payload_len = (uint16_t)plen,
					.timestamp_ns = 100 + n };
		return tp_build(buf, &o, &h);
	}
	}
}

/* The wire: what each stream sends, impaired, interleaved, cut into batches. */
static void run_random(struct exec_fixture *f, uint64_t seed, uint32_t n_pkts)
{
	uint64_t next[N_STREAMS] = { 0, 0, 0, 0 };
	uint64_t held[N_STREAMS] = { 0 };    /* a packet held back for reordering, +1 */
	uint8_t buf[TP_MAX];
	uint32_t sent = 0, batch = 1 + (uint32_t)(rnd() % MAXB);

	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	while (sent < n_pkts) {
		int s = (int)(rnd() % N_STREAMS);
		uint64_t n = next[s]++;
		if (s == S_RESTART && n == 200)
			next[s] = n = 1000000; /* the sender restarts far away: a resync */
		/* a stream's first packet arrives first: rocev2 frames are counted
		 * from it (README), and a misaligned start is another test's subject */
		if (n > 0 && chance(3))
			continue; /* lost */
		if (n > 0 && !held[s] && chance(4)) {
			held[s] = n + 1; /* reordered: goes out after a later one */
			continue;
		}
		uint32_t len = build_pkt(s, n, buf);
		if (n > 0 && chance(2))
			len = 30 + (uint32_t)(rnd() % 40); /* truncated in flight */
		queue_raw(f, buf, len);
		sent++;
		if (chance(4)) { /* a duplicate, in the same batch more often than not */
			queue_raw(f, buf, len);
			sent++;
		}
		if (held[s] && chance(50)) {
			queue_raw(f, buf, build_pkt(s, held[s] - 1, buf));
			held[s] = 0;
			sent++;
		}
		if (chance(1) && n > 8 * PPF) { /* a straggler from long ago: late */
			queue_raw(f, buf, build_pkt(s, n - 8 * PPF, buf));
			sent++;
		}
		next_batch(f, &batch, 0);
	}
	end_traffic(f, N_STREAMS);
}

/*
 * Every published frame's tensor is its payload converted (the body NumPy
 * checks bit for bit, tests/python/test_tensor.py), lost packets' samples
 * zero: counts the frames checked, and of those the partial ones.
 */
static void check_tensors(struct exec_fixture *f, uint32_t *frames, uint32_t *partial)
{
	for (int s = 0; s < f->conf.n_streams; s++) {
		struct gi_stream_rt *st = &f->st[s];
		struct gi_frame_ring_hdr *h = st->ring;
		uint8_t *want = calloc(1, h->tensor.bytes);
		assert_non_null(want);
		assert_int_equal(st->tensor.sample, GI_TS_I16);
		for (uint64_t k = 0; k < h->n_slots; k++) {
			struct gi_frame_slot *sl = gi_frame_slot_at(h, k);
			if (!sl->seq || (sl->seq & 1) || sl->seq != 2 * sl->frame + 2)
				continue;
			const uint64_t *bm = sl->received != sl->expected ? gi_frame_bitmap(sl) : NULL;
			gi_tensor_convert(&st->tensor, gi_frame_payload(h, sl), want, bm, &st->div_payload, 0, 1);
			assert_memory_equal((uint8_t *)sl + h->tensor.off, want, h->tensor.bytes);
			(*frames)++;
			*partial += bm != NULL;
		}
		free(want);
	}
}

/*
 * The NIC times of every published frame (nic_ts runs): the twin check
 * has held the phased ring byte for byte to the serial one; here the two
 * are ones the fixture gave (exf_nic_ns), first <= last, and each stream's
 * frame_assembly histogram counted the frames.  Returns the frames seen.
 */
static uint32_t check_nic_times(const struct exec_fixture *f)
{
	uint32_t n = 0;
	for (int si = 0; si < f->conf.n_streams; si++) {
		const struct gi_stream_rt *st = &f->st[si];
		uint32_t with = 0;
		for (uint64_t fr = st->ring->first_frame; fr < st->next_pub; fr++) {
			const struct gi_frame_slot *s = gi_stream_slot((struct gi_stream_rt *)st, fr);
			if (s->frame != fr || !s->received)
				continue;
			if (!s->first_nic_ns) { /* none of its packets had one */
				assert_int_equal(s->last_nic_ns, 0);
				continue;
			}
			assert_true(s->first_nic_ns <= s->last_nic_ns);
			assert_true(s->first_nic_ns >= 1700000000000000000ull &&
				    s->last_nic_ns < 1700000000000000000ull + 1000003u);
			with++;
		}
		uint64_t counted = 0;
		for (uint32_t b = 0; b < GI_HIST_BUCKETS; b++)
			counted += st->frame_assembly.count[b];
		assert_true(counted >= with); /* frames no longer in the ring were counted too */
		n += with;
	}
	return n;
}

static void test_random_traffic(void **state)
{
	(void)state;
	uint32_t rounds = 0, runs = 0, tensors = 0, tensors_partial = 0;
	uint32_t nic_frames = 0;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct exf_conf c = world;
		c.nic_ts = seed % 4 < 2; /* NIC times on half the runs, both forms of the phases */
		struct exec_fixture *f = exf_new(&c);
		f->twin_gpu_form = seed % 2; /* the host's phases, or the GPU's split among workers */
		run_random(f, seed, 3000);
		if (c.nic_ts)
			nic_frames += check_nic_times(f);
		/* everything happened that the traffic was built for */
		assert_true(f->st[S_SEQ].c.duplicates > 0 && f->st[S_SEQ].c.late > 0 && f->st[S_SEQ].c.lost > 0);
		assert_true(f->st[S_VITA].c.packets > 0 && f->st[S_VITA].c.reordered > 0);
		assert_true(f->st[S_ROCE].c.packets > 0 && f->st[S_ROCE].c.frames[GI_FRAMES_COMPLETE] > 0);
		assert_true(f->ctr.drops[GI_DROP_ROCEV2_ICRC] > 0);
		assert_true(f->st[S_RESTART].c.resyncs >= 1); /* and back, for a packet held back across the jump */
		assert_true(f->ctr.drops[GI_DROP_MALFORMED_IP] + f->ctr.drops[GI_DROP_NO_STREAM] > 0);
		rounds += f->twin_stalls;
		runs += f->twin_runs;
		check_tensors(f, &tensors, &tensors_partial);
		exf_free(f);
	}
	print_message("frames whose tensor was checked: %u, %u of them with lost packets\n", tensors,
		      tensors_partial);
	print_message("frames with NIC times (serial == phased, first <= last, in range): %u\n", nic_frames);
	assert_true(nic_frames > 50);
	assert_true(tensors > 50 && tensors_partial > 5);
	/* batches spanning the ring made phase 2 stall and take more rounds;
	 * clean stretches went through phase 2's run path (the impairments
	 * above through its serial steps: the run path never counts them) */
	print_message("phased batches that needed more than one round: %u; streams sequenced as runs: %u\n",
		      rounds, runs);
	assert_true(rounds > 0);
	assert_true(runs > 100);
}

/*
 * Pipeline auto hands a worker between the serial path (its rx lcore) and
 * the phased one (its own thread) between any two batches: the twin takes
 * them in turn on the same impaired traffic, and after every batch it must
 * still equal the serial path, byte for byte and counter for counter.
 */
static void test_pipelines_mixed(void **state)
{
	(void)state;
	uint32_t serial = 0, runs = 0, batches = 0;
	for (uint64_t seed = 21; seed <= 26; seed++) {
		struct exf_conf c = world;
		c.nic_ts = seed % 2;
		struct exec_fixture *f = exf_new(&c);
		f->twin_mixed = 1;
		run_random(f, seed, 3000);
		assert_true(f->st[S_SEQ].c.duplicates > 0 && f->st[S_SEQ].c.lost > 0);
		serial += f->twin_serial;
		runs += f->twin_runs;
		batches += (uint32_t)f->twin->ctr.batches;
		exf_free(f);
	}
	print_message("batches %u, %u of them serial; streams the phased ones sequenced as runs: %u\n", batches,
		      serial, runs);
	assert_true(serial > 100 && batches - serial > 100);
	assert_true(runs > 50);
}

/*
 * Frames whose last packet is shorter (frame.bytes), in every format of the
 * world: the same impaired traffic, the serial path the judge; the bytes
 * placed are the frames' real length; and a short packet anywhere but at
 * a frame's end is malformed_length in both paths.
 */
static void test_short_last_packets(void **state)
{
	(void)state;
	struct exf_conf conf = world;
	g_last = 44; /* VRT payloads are whole words */
	conf.last = g_last;
	for (uint64_t seed = 1; seed <= 6; seed++) {
		struct exec_fixture *f = exf_new(&conf);
		f->twin_gpu_form = seed % 2;
		run_random(f, seed, 3000);
		uint8_t buf[TP_MAX];
		for (int k = 0; k < 3; k++) { /* udp_seq: a short packet in the middle of a frame */
			struct tp_opts o = { .udp_dst = 6000, .vlan = -1 };
			struct gi_udp_seq h = { .stream_id = 40, .packets_per_frame = PPF, .seq = 1000000u + (uint32_t)k,
						.frame = 250000u + (uint32_t)k, .pkt_index = 1, .payload_len = (uint16_t)g_last };
			queue_raw(f, buf, tp_build(buf, &o, &h));
		}
		uint32_t batch = 1;
		next_batch(f, &batch, 1);
		end_traffic(f, N_STREAMS);
		for (int s = 0; s < N_STREAMS; s++) {
			const struct gi_stream_counters *c = &f->st[s].c;
			assert_true(c->frames[GI_FRAMES_COMPLETE] > 0);
			/* every complete frame holds FRAME_BYTES; partial ones less */
			assert_true(c->bytes < c->packets * PAYLOAD);
			assert_true(c->bytes >= c->frames[GI_FRAMES_COMPLETE] * FRAME_BYTES);
		}
		assert_true(f->ctr.drops[GI_DROP_MALFORMED_LENGTH] >= 3);
		exf_free(f);
	}
	g_last = PAYLOAD;
}

/*
 * Senders whose sequence numbers always step by one but whose other fields
 * lie: a udp_seq sender that repeats, skips or invents packet indices and
 * moves its frame number back, past the window or past resync_frames (1,
 * inside the window), and
 * a rocev2 sender that ends frames (WRITE with immediate) in the middle,
 * names the wrong VA or sends a short payload; and a udp_seq sender with
 * 8-bit frame numbers that leap 70 frames at a time.  Every packet is then next in
 * sequence, so only phase 2's run checks on position, closing and copies
 * already placed keep it from taking them as a run; the serial path is the
 * judge (the fixture compares every batch).
 */
static void run_lies(struct exec_fixture *f, uint64_t seed, uint32_t n_pkts)
{
	uint8_t buf[TP_MAX];
	uint32_t batch = 1; /* each stream's first packet alone: it has started when the lies begin */
	uint64_t seq[3] = { 0, 0, 0 };
	uint32_t last_idx = 0, shift = 0, leap = 0;

	rng_state = seed * 0x2545f4914f6cdd1dull + 7;
	for (uint32_t sent = 0; sent < n_pkts; sent++) {
		if (sent == 2 || (sent > 2 && chance(20))) {
			/* 8-bit frame numbers that leap 70 frames now and then: two leaps in
			 * one batch go past half the counter's range from where it began */
			uint64_t n = seq[2]++;
			if (n > 0 && chance(25))
				leap += 70;
			struct tp_opts o = { .udp_dst = 6000, .vlan = -1 };
			struct gi_udp_seq h = { .stream_id = 40, .packets_per_frame = PPF, .seq = (uint32_t)n,
						.frame = (uint32_t)(n / PPF + leap) & 0xff, .pkt_index = (uint16_t)(n % PPF),
						.payload_len = PAYLOAD, .timestamp_ns = 100 + n };
			queue_raw(f, buf, tp_build(buf, &o, &h));
		} else if (sent == 0 || (sent > 2 && rnd() % 2)) {
			uint64_t n = seq[0]++;
			uint32_t frame = 3 + shift + (uint32_t)(n / PPF), idx = (uint32_t)(n % PPF);
			if (n > 0 && chance(8))
				idx = last_idx; /* the same place as the packet before */
			else if (n > 0 && chance(4))
				idx = (idx + 2) % PPF; /* a place skipped, one taken twice later */
			if (n > 0 && chance(n < 2 * PPF ? 50 : 3))
				frame -= 1; /* back into the frame before (at first, before the first one) */
			else if (n > 0 && chance(2))
				frame += WINDOW + 1; /* beyond the window: a push */
			else if (n > 0 && chance(2))
				shift += 2; /* from now on: inside the window, beyond resync_frames (1): a restart */
			last_idx = idx;
			if (n > 0 && chance(1))
				idx = PPF + (uint32_t)(rnd() % 3); /* no such place */
			struct tp_opts o = { .udp_dst = 6003, .vlan = -1 };
			struct gi_udp_seq h = { .stream_id = 43, .packets_per_frame = PPF, .seq = (uint32_t)n, .frame = frame,
						.pkt_index = (uint16_t)idx, .payload_len = PAYLOAD, .timestamp_ns = 100 + n };
			queue_raw(f, buf, tp_build(buf, &o, &h));
		} else {
			uint64_t n = seq[1]++;
			uint32_t frame = (uint32_t)(n / PPF), idx = (uint32_t)(n % PPF);
			uint8_t op = idx == 0 ? GI_ROCEV2_UC | GI_ROCEV2_WRITE_FIRST
				     : idx == PPF - 1 || chance(15) ? GI_ROCEV2_UC | GI_ROCEV2_WRITE_LAST_IMM
								     : GI_ROCEV2_UC | GI_ROCEV2_WRITE_MIDDLE;
			struct rp p = { .opcode = op, .qp = QP, .psn = (uint32_t)(n & 0xffffff), .plen = PAYLOAD,
					.va = ROCE_BASE + (uint64_t)frame * PPF * PAYLOAD, .dma_len = PPF * PAYLOAD,
					.pad = -1, .seed = gi_pattern_seed(QP & 0xffff, frame), .off = (uint64_t)idx * PAYLOAD };
			if (idx == 0 && n > 0 && chance(10))
				p.va += PAYLOAD; /* a RETH that names another place than its PSN */
			if (n > 0 && chance(2))
				p.plen = PAYLOAD - 4; /* a payload of the wrong size */
			queue_raw(f, buf, rp_build(buf, &p));
		}
		next_batch(f, &batch, sent < 2);
	}
	end_traffic(f, N_STREAMS);
}

static void test_lying_senders(void **state)
{
	(void)state;
	uint32_t runs = 0;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct exec_fixture *f = exf_new(&world);
		f->twin_gpu_form = seed % 2;
		f->st[S_RESTART].fp.resync_frames = 1; /* a jump of two frames is a restart */
		f->st[S_SEQ].fp.frame_bits = 8;
		run_lies(f, seed, 3000);
		const struct gi_stream_counters *c = &f->st[S_RESTART].c;
		assert_true(c->duplicates > 0 && c->late > 0 && c->resyncs > 0 && c->frames[GI_FRAMES_PARTIAL] > 0);
		assert_true(f->ctr.drops[GI_DROP_MALFORMED_INDEX] > 0 && f->ctr.drops[GI_DROP_ROCEV2_VA] > 0 &&
			    f->ctr.drops[GI_DROP_MALFORMED_GEOMETRY] > 0 && f->st[S_ROCE].c.late > 0);
		runs += f->twin_runs;
		exf_free(f);
	}
	print_message("streams sequenced as runs among the lies: %u\n", runs);
	assert_true(runs > 100);
}

/*
 * Long clean runs: whole batches of one VITA 49 stream, whose 4-bit count
 * wraps four times in a batch, so a record's rank (not its count) must
 * give its place; now and then a packet lost.  Both forms of the phases.
 */
static void test_long_runs(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	for (uint32_t form = 0; form < 2; form++) {
		struct exec_fixture *f = exf_new(&world);
		f->twin_gpu_form = form;
		rng_state = 99 + form;
		for (uint64_t n = 0; n < 40 * MAXB; n++) {
			if (n > 0 && chance(1))
				continue; /* lost */
			queue_raw(f, buf, build_pkt(S_VITA, n, buf));
			if (f->n == MAXB || n == 0) {
				flush_batch(f);
				f->now += 1000;
			}
		}
		if (f->n)
			flush_batch(f);
		exf_flush(f, S_VITA, f->now);
		assert_int_equal(accounted(f), f->fed);
		assert_true(f->st[S_VITA].c.lost > 0 && f->twin_runs > 10);
		exf_free(f);
	}
}

/*
 * One stream, as steering leaves it on each queue: the GPU's per-frame 2b
 * (gi_solo_enter, gi_solo_finish) and parallel bits (gi_phase_solo_place)
 * against the serial path, on clean runs and on every impairment above, at
 * two frame sizes (one frame per several batches, several frames per batch).
 */
/* A world of one rocev2 stream (the world's S_ROCE settings, as stream 0). */
static void roce_alone(struct exec_fixture *f, int s)
{
	struct gi_fmt_rocev2_params rp = { .base_va = ROCE_BASE, .dst_qp = QP, .icrc = GI_ROCEV2_ICRC_VERIFY,
					   .close_on = GI_ROCEV2_CLOSE_IMM };
	gi_format_params_init(&f->st[s].fp, GI_FORMAT_ROCEV2);
	gi_fmt_rocev2_set(&f->st[s].fp, &rp);
	exf_map_port(f, s, GI_ROCEV2_UDP_PORT);
}

/* A world of one stream of `packets`-packet frames, rocev2 alone or the world's first, in the phases' GPU form
 * (form 1) or the host's. */
static struct exec_fixture *solo_new(uint32_t packets, int roce, int form)
{
	struct exf_conf one = world;
	one.n_streams = 1;
	one.packets = packets;
	if (roce) {
		one.formats[0] = GI_FORMAT_ROCEV2;
		one.stream = roce_alone;
	}
	struct exec_fixture *f = exf_new(&one);
	f->twin_gpu_form = (uint32_t)form;
	return f;
}

static void test_one_stream(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	uint32_t runs = 0, rounds = 0, lanes = 0;
	for (uint32_t ppf = 4; ppf <= 64; ppf *= 16) {
		for (uint64_t seed = 1; seed <= 8; seed++) {
			int roce = seed % 2;
			struct exec_fixture *f = solo_new(ppf, roce, 1);
			rng_state = seed * 0x9e3779b97f4a7c15ull + ppf;
			uint32_t batch = 1 + (uint32_t)(rnd() % MAXB);
			for (uint64_t n = 0; n < 3000; n++) {
				uint64_t q = n;
				if (n > 0 && chance(3))
					continue; /* lost */
				if (n > 8 && chance(3))
					q = n - 1 - rnd() % 8; /* reordered, duplicated or late */
				uint32_t frame = (uint32_t)(q / ppf), idx = (uint32_t)(q % ppf), len;
				if (roce) {
					/* WRITE FIRST/MIDDLE/LAST with immediate; now and then a frame closed early */
					uint8_t op = idx == 0 ? GI_ROCEV2_UC | GI_ROCEV2_WRITE_FIRST
						     : idx == ppf - 1 || chance(4) ? GI_ROCEV2_UC | GI_ROCEV2_WRITE_LAST_IMM
										   : GI_ROCEV2_UC | GI_ROCEV2_WRITE_MIDDLE;
					struct rp p = { .opcode = op, .qp = QP, .psn = (uint32_t)(q & 0xffffff), .plen = PAYLOAD,
							.va = ROCE_BASE + (uint64_t)frame * ppf * PAYLOAD, .dma_len = ppf * PAYLOAD,
							.pad = -1, .seed = gi_pattern_seed(QP & 0xffff, frame),
							.off = (uint64_t)idx * PAYLOAD };
					len = rp_build(buf, &p);
				} else {
					struct tp_opts o = { .udp_dst = 6000, .vlan = -1 };
					struct gi_udp_seq h = { .stream_id = 40, .packets_per_frame = (uint16_t)ppf,
								.seq = (uint32_t)q, .frame = frame, .pkt_index = (uint16_t)idx,
								.payload_len = PAYLOAD, .timestamp_ns = 100 + q };
					if (n > 0 && chance(2))
						h.pkt_index = (uint16_t)((h.pkt_index + 1) % ppf); /* a lie about its place */
					len = tp_build(buf, &o, &h);
				}
				if (n > 0 && chance(1))
					len = 30; /* truncated */
				queue_raw(f, buf, len);
				next_batch(f, &batch, 0);
			}
			end_traffic(f, 1);
			const struct gi_stream_counters *c = &f->st[0].c;
			assert_true(c->packets > 0 && c->lost > 0 && c->duplicates + c->late > 0 && c->reordered > 0);
			if (roce)
				assert_true(c->frames[GI_FRAMES_PARTIAL] > 0);
			runs += f->twin_runs;
			rounds += f->twin_stalls;
			lanes += f->twin_lane_frames;
			exf_free(f);
		}
	}
	print_message("one stream: %u batches as runs, %u took more rounds, %u frames sequenced together\n", runs,
		      rounds, lanes);
	assert_true(runs > 100 && rounds > 0 && lanes > 100);
}

/*
 * Runs that end at a frame its sender closed short (a WRITE with immediate
 * five packets in, of eight; its PSNs skip the three it never sent): such
 * a close can be only a run's last record (the next PSN, from a later
 * frame, is a gap).  Batches end in a frame's middle or at that close, and
 * every other cycle of three frames has none: 2b's lanes (phase_sequence_solo.h,
 * gi_solo_group_lanes) take the groups whose last frame stays open or
 * completes; a group whose last frame closed short goes the serial way
 * (published partial there).  Both forms against the serial path, batch by
 * batch.
 */
static void test_run_closed_short(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	for (int form = 0; form < 2; form++) {
		struct exec_fixture *f = solo_new(8, 1, form);
		uint32_t psn = 0, shorts = 0;
		for (uint32_t frame = 0; frame < 90; frame++) {
			const uint32_t pos = frame % 3, cut = pos == 2 && frame / 3 % 2 == 0;
			const uint32_t last = cut ? 4 : 7;
			for (uint32_t idx = 0; idx <= last; idx++) {
				uint8_t op = idx == 0 ? GI_ROCEV2_UC | GI_ROCEV2_WRITE_FIRST
					     : idx == last ? GI_ROCEV2_UC | GI_ROCEV2_WRITE_LAST_IMM
							   : GI_ROCEV2_UC | GI_ROCEV2_WRITE_MIDDLE;
				struct rp p = { .opcode = op, .qp = QP, .psn = psn++, .plen = PAYLOAD,
						.va = ROCE_BASE + (uint64_t)frame * 8 * PAYLOAD, .dma_len = 8 * PAYLOAD,
						.pad = -1, .seed = gi_pattern_seed(QP & 0xffff, frame),
						.off = (uint64_t)idx * PAYLOAD };
				queue_raw(f, buf, rp_build(buf, &p));
				if ((pos == 1 && idx == 3) || (pos == 2 && idx == (cut ? last : 5u)))
					flush_batch(f);
			}
			psn += cut ? 3 : 0;
			shorts += cut;
		}
		if (f->n)
			flush_batch(f);
		end_traffic(f, 1);
		const struct gi_stream_counters *c = &f->st[0].c;
		print_message("form %d: %u runs, %u frames sequenced together\n", form, f->twin_runs, f->twin_lane_frames);
		assert_int_equal(c->frames[GI_FRAMES_PARTIAL], shorts);
		assert_int_equal(c->lost, 3 * shorts);
		assert_true(f->twin_runs > 30 && f->twin_lane_frames > 40);
		exf_free(f);
	}
}

/*
 * A sender that skips a frame number now and then, its sequence numbers
 * unbroken: the records are still one run, but its frames are not
 * consecutive, and the frame after the gap must wait at the window's head
 * for the one never sent.  2b's lanes leave such a group to the serial
 * way (gi_solo_group_lanes); both forms against the serial path.
 */
static void test_run_frame_skipped(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	for (int form = 0; form < 2; form++) {
		struct exec_fixture *f = solo_new(8, 0, form);
		uint32_t seq = 0;
		for (uint32_t frame = 0; frame < 100; frame++) {
			if (frame % 5 == 3)
				continue; /* never sent */
			for (uint32_t idx = 0; idx < 8; idx++) {
				struct tp_opts o = { .udp_dst = 6000, .vlan = -1 };
				const uint32_t q = seq++;
				struct gi_udp_seq h = { .stream_id = 40, .packets_per_frame = 8, .seq = q, .frame = frame,
							.pkt_index = (uint16_t)idx, .payload_len = PAYLOAD,
							.timestamp_ns = 100 + q };
				queue_raw(f, buf, tp_build(buf, &o, &h));
				if (f->n == 20)
					flush_batch(f);
			}
		}
		if (f->n)
			flush_batch(f);
		end_traffic(f, 1);
		print_message("form %d: %u runs, %u frames sequenced together, %llu lost\n", form, f->twin_runs,
			      f->twin_lane_frames, (unsigned long long)f->st[0].c.lost);
		assert_true(f->st[0].c.lost > 0 && f->twin_runs > 30 && f->twin_lane_frames > 20);
		exf_free(f);
	}
}

/*
 * A 64-bit counter (custom format, frames from the counter, no restart
 * detection) whose distance from the epoch's first packet reaches 2^63:
 * the serial steps see that packet before the epoch (late); the run path
 * must leave it to them, in both forms (found by a review's fuzzer).
 */
static void cust64_stream(struct exec_fixture *f, int s)
{
	struct gi_fmt_custom_params m = { .header_bytes = 8, .payload_offset = 8 };
	m.f[GI_CUSTOM_SEQ] = (struct gi_custom_field){ .offset = 0, .width = 8 };
	gi_format_params_init(&f->st[s].fp, GI_FORMAT_CUSTOM);
	gi_fmt_custom_setup(&f->st[s].fp, &m);
	exf_map_port(f, s, 7000);
}

static void queue_cust64(struct exec_fixture *f, uint64_t seq)
{
	uint8_t *b = next_pkt(f);
	gi_put_be64(b + 42, seq);
	memset(b + 50, 0x5a, PAYLOAD);
	queue_len(f, fp_wrap_udp(b, 7000, 8 + PAYLOAD));
}

/* A fixture of that one stream, the phased twin in the host's form (0) or the GPU's (1). */
static struct exec_fixture *cust64_new(uint32_t window, uint32_t slots, uint32_t form)
{
	const struct exf_conf c64 = { .format = GI_FORMAT_CUSTOM, .n_streams = 1, .packets = PPF, .payload = PAYLOAD,
				      .window = window, .slots = slots, .maxb = MAXB, .stream = cust64_stream };
	struct exec_fixture *f = exf_new(&c64);
	f->twin_gpu_form = form;
	return f;
}

static void test_counter_half_range(void **state)
{
	(void)state;
	for (uint32_t form = 0; form < 2; form++) {
		struct exec_fixture *f = cust64_new(3, 8, form);
		queue_cust64(f, 0);
		flush_batch(f);
		queue_cust64(f, (1ull << 63) - 1);
		flush_batch(f);
		queue_cust64(f, 1ull << 63); /* the fixture compares both paths after each batch */
		flush_batch(f);
		assert_int_equal(f->st[0].c.late, 1);
		exf_free(f);
	}
}

/*
 * One stream placed by its counter alone, on 2 slots: each batch of 16
 * packets in order spans 4 frames, so the run (2b per frame) stalls at its
 * second group, whose slot the first group's frame still holds (final, not
 * yet visible); the payloads copied beside 2b stop before it (the GPU's
 * form: phase_sequence_solo.h, gi_solo_enter) and the rest take the serial
 * steps next round.  Both forms against the serial path, batch by batch.
 */
static void test_run_stalls_by_counter(void **state)
{
	(void)state;
	for (uint32_t form = 0; form < 2; form++) {
		struct exec_fixture *f = cust64_new(2, 2, form);
		for (uint64_t q = 0; q < 40 * 4 * PPF; q++) {
			if (q == 90)
				continue; /* a loss: that batch is no run */
			queue_cust64(f, q);
			if (f->n == 4 * PPF)
				flush_batch(f); /* the fixture compares both paths after each batch */
		}
		if (f->n)
			flush_batch(f);
		exf_flush(f, 0, f->now);
		assert_int_equal(accounted(f), f->fed);
		assert_int_equal(f->st[0].c.lost, 1);
		print_message("form %u: %u runs, %u batches of more rounds, %u runs stalled, %u frames sequenced together\n",
			      form, f->twin_runs, f->twin_stalls, f->twin_run_stalls, f->twin_lane_frames);
		assert_true(f->twin_runs > 30 && f->twin_stalls > 30 && f->twin_run_stalls > 30 && f->twin_lane_frames > 30);
		exf_free(f);
	}
}

/*
 * A stream's first batch: consumers must not see `started` before
 * next_frame (kernels/frame.h: once started, first_frame and next_frame
 * are valid), so with visibility deferred to phase 4 the started word
 * waits for it too.
 */
static void test_start_visible_with_next_frame(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	struct exec_fixture *f = exf_new(&world);
	for (uint64_t n = 5 * PPF; n < 7 * PPF; n++)
		queue_raw(f, buf, build_pkt(S_SEQ, n, buf));
	struct gi_batch_slot *slot = gi_ring_slot(f->ring, 0);
	slot->n_pkts = f->n;
	slot->port = 0;
	struct gi_batch_hdr *h = f->twin_scratch;
	struct gi_exec_ctx *ctx = &f->twin->ctx;
	const struct gi_frame_ring_hdr *ring = f->twin->st[S_SEQ].ring;
	gi_batch_begin(h, f->n);
	/* the trip with next_frame left to the batch's end, as on the GPU: every step done, the
	 * frames' seqlock words even, but neither next_frame nor started moved */
	struct gi_trip t = { .ctx = ctx, .slot = slot, .h = h, .streams = NULL, .n_streams = ctx->n_streams,
			     .owner = GI_GROUP_ANY, .max_pkts = MAXB, .split = 0, .t8 = NULL, .now = f->now,
			     .icrc_inline = 1, .late_next = 1 };
	exf_trip(&t, NULL);
	assert_int_equal(ring->started, 0);
	assert_int_equal(ring->next_frame, 0);
	for (uint32_t s = 0; s < ctx->n_streams; s++)
		gi_stream_publish_next(&ctx->streams[s], 0);
	assert_int_equal(ring->started, 1);
	assert_int_equal(ring->first_frame, 5 - (WINDOW - 1));
	assert_int_equal(ring->next_frame, f->twin->st[S_SEQ].next_pub); /* frame 6 pushed the window to 4 */
	assert_true(ring->next_frame > ring->first_frame);
	f->n = 0;
	exf_free(f);
}

/* ---- the host executor's worker threads ----------------------------------------- */

#define RING_SLOTS 16

struct feeder {
	struct gi_batch_ring *ring[2];
	uint8_t (*pkts)[TP_MAX];
	uint32_t n;
	uint32_t *len;
	uint32_t *ring_of; /* which ring packet i goes to */
	struct gi_executor *auto_ex; /* mode auto: pace the batches; in the second half, until the thread of a
				      * ring's worker has served a batch, publish that ring's batches while
				      * the thread runs it */
};

/* Mode auto: whether every worker has had a trial decided. */
static int auto_decided(struct gi_executor *ex, uint64_t at_least)
{
	struct gi_exec_auto_info ai;
	for (uint32_t k = 0; k < gi_executor_workers(ex); k++)
		if (gi_executor_auto_info(ex, k, &ai) < 0 || ai.decisions < at_least)
			return 0;
	return 1;
}

static void feed_publish(struct feeder *fd, uint32_t r, uint64_t *head, uint32_t *open, int second_half)
{
	struct gi_batch_slot *s = gi_ring_slot(fd->ring[r], head[r]);
	struct gi_exec_auto_info ai;

	/* worker r is ring r's (one group each); a trial comes every few ms (bounded wait) */
	if (fd->auto_ex && second_half && gi_executor_auto_info(fd->auto_ex, r, &ai) == 0 && !ai.thread_batches)
		for (uint64_t until = gi_now_ns() + 10000000000ull;
		     gi_executor_auto_info(fd->auto_ex, r, &ai) == 0 && !ai.on_thread && gi_now_ns() < until;)
			sched_yield();
	s->n_pkts = open[r];
	s->port = (uint16_t)r;
	s->t_publish_ns = gi_now_ns();
	gi_ring_publish(fd->ring[r], head[r]++);
	open[r] = 0;
	if (fd->auto_ex) { /* a batch every 50 us: windows of 1 ms see several */
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
	}
}

/* The rx lcores' part: packets into batches of varying size on their ring, doorbells rung. */
static void *feed(void *arg)
{
	struct feeder *fd = arg;
	uint64_t head[2] = { 0, 0 };
	uint32_t open[2] = { 0, 0 }, target[2] = { 5, 9 };

	for (uint32_t i = 0; i < fd->n; i++) {
		uint32_t r = fd->ring_of[i];
		if (open[r] == 0)
			while (!gi_ring_has_room(fd->ring[r], head[r]))
				sched_yield();
		struct gi_batch_slot *s = gi_ring_slot(fd->ring[r], head[r]);
		gi_slot_addr(s)[open[r]] = (uint64_t)(uintptr_t)fd->pkts[i];
		gi_slot_len(s, MAXB)[open[r]] = fd->len[i];
		if (++open[r] == target[r]) {
			feed_publish(fd, r, head, open, i >= fd->n / 2);
			target[r] = 1 + (i * 7919u) % MAXB;
		}
	}
	for (uint32_t r = 0; r < 2; r++)
		if (open[r])
			feed_publish(fd, r, head, open, 1);
	return NULL;
}

/* Mode auto's rx lcores: poll their worker, every pass a full one (saturated), until told to stop. */
struct lcore_sim {
	struct gi_exec_worker *w;
	uint32_t *stop;
};

static void *lcore_run(void *arg)
{
	struct lcore_sim *l = arg;
	while (!__atomic_load_n(l->stop, __ATOMIC_ACQUIRE))
		(void)gi_exec_worker_poll(l->w, 0);
	return NULL;
}

/*
 * Two groups on two workers, fed from another thread: threads mode (two
 * worker threads), or host auto (two rx lcores, each handing its worker to
 * its thread and back as trials go), against the serial path.
 */
static void two_workers(enum gi_exec_mode mode)
{
	/* the same two udp_seq streams on ports 0 and 1: one ring and one group each */
	static const struct exf_conf two = { .format = GI_FORMAT_UDP_SEQ, .n_streams = 2, .packets = PPF,
					     .payload = PAYLOAD, .window = WINDOW, .slots = 16 };
	struct exec_fixture ref, w;
	exf_init(&ref, &two);
	exf_init(&w, &two);
	for (struct exec_fixture *x = &ref; x; x = x == &ref ? &w : NULL) {
		free(x->map);
		x->map = malloc(2 * 65536 * sizeof(uint16_t));
		for (uint32_t i = 0; i < 2 * 65536; i++)
			x->map[i] = GI_STREAM_NONE;
		x->map[0 * 65536 + 6000] = 0;
		x->map[1 * 65536 + 6000] = 1;
		x->ctx.map = x->map;
		x->ctx.n_ports = 2;
	}
	struct feeder fd = { .n = 4000 };
	fd.pkts = calloc(fd.n, TP_MAX);
	fd.len = calloc(fd.n, sizeof(*fd.len));
	fd.ring_of = calloc(fd.n, sizeof(*fd.ring_of));
	uint64_t next[2] = { 0, 0 };
	rng_state = 77;
	for (uint32_t i = 0; i < fd.n; i++) {
		uint32_t r = (uint32_t)(rnd() & 1);
		uint64_t n = next[r]++;
		if (chance(5))
			n = next[r]++; /* a loss */
		struct tp_opts o = { .udp_dst = 6000, .vlan = -1 };
		struct gi_udp_seq h = { .stream_id = (uint16_t)(50 + r), .packets_per_frame = PPF, .seq = (uint32_t)n,
					.frame = (uint32_t)(n / PPF), .pkt_index = (uint16_t)(n % PPF),
					.payload_len = PAYLOAD };
		fd.len[i] = tp_build(fd.pkts[i], &o, &h);
		fd.ring_of[i] = r;
	}
	uint64_t rb = gi_ring_bytes(RING_SLOTS, MAXB, 0);
	struct gi_batch_ring *rings[2];
	for (int r = 0; r < 2; r++) {
		rings[r] = aligned_alloc(64, GI_ALIGN_UP(rb, 64));
		memset(rings[r], 0, rb);
		gi_ring_init(rings[r], RING_SLOTS, MAXB, 0);
		fd.ring[r] = rings[r];
	}
	uint32_t r0 = 0, r1 = 1, lcores[2] = { 2, 3 };
	uint16_t s0 = 0, s1 = 1;
	struct gi_exec_group groups[2] = { { 1, &r0, 1, &s0 }, { 1, &r1, 1, &s1 } };
	/* pipeline auto: phased on the threads; under mode auto serial on the lcores, so each hand-over
	 * also changes the pipeline (the serial reference below must not see a difference) */
	struct gi_executor_conf c = { .backend = GI_BACKEND_HOST, .mode = mode, .pipeline = GI_PIPE_AUTO, .threads = 2,
				      .idle = GI_IDLE_BUSY, .cpu = -1, .n_rings = 2, .rings = rings, .n_groups = 2,
				      .groups = groups, .ctx = &w.ctx, .tick_ns = 1000000,
				      .ring_lcore = mode == GI_EXEC_AUTO ? lcores : NULL,
				      .auto_window_ns = 1000000, .auto_holdoff_ns = 1000000 };
	struct gi_executor *ex = NULL;
	char err[256];
	assert_int_equal(gi_executor_create(&c, &ex, err, sizeof(err)), 0);
	assert_int_equal(gi_executor_workers(ex), 2);
	assert_non_null(strstr(gi_executor_pipeline(ex), mode == GI_EXEC_AUTO ? "auto (serial while" : "phased"));
	assert_int_equal(gi_executor_can_swap_streams(ex), 0);
	assert_non_null(strstr(gi_executor_swap_why(ex), mode == GI_EXEC_AUTO ? "2 workers (one per rx lcore, mode auto)"
									     : "2 worker threads"));
	assert_int_equal(w.st[0].group, 0);
	assert_int_equal(w.st[1].group, 1);
	assert_int_equal(gi_executor_start(ex), 0);

	uint32_t lc_stop = 0;
	struct lcore_sim ls[2];
	pthread_t lct[2];
	if (mode == GI_EXEC_AUTO) {
		struct gi_exec_auto_info ai;
		fd.auto_ex = ex;
		assert_int_equal(gi_executor_inline_workers(ex), 2); /* inline first */
		assert_null(gi_executor_inline_worker(ex, 4));
		for (int k = 0; k < 2; k++) {
			ls[k] = (struct lcore_sim){ gi_executor_inline_worker(ex, lcores[k]), &lc_stop };
			assert_non_null(ls[k].w);
			assert_int_equal(gi_executor_auto_info(ex, (uint32_t)k, &ai), 0);
			assert_int_equal(ai.lcore, lcores[k]);
			assert_int_equal(ai.on_thread, 0);
			pthread_create(&lct[k], NULL, lcore_run, &ls[k]);
		}
		assert_int_equal(gi_executor_auto_info(ex, 2, &ai), -ERANGE);
	} else {
		struct gi_exec_auto_info ai;
		assert_int_equal(gi_executor_auto_info(ex, 0, &ai), -ENOTSUP);
		assert_int_equal(gi_executor_inline_workers(ex), 0);
	}

	pthread_t producer;
	pthread_create(&producer, NULL, feed, &fd);
	pthread_join(producer, NULL);
	if (mode == GI_EXEC_AUTO) { /* as the daemon does: the rx lcores return, then the executor stops */
		/* a second trial: after one that kept inline, or once the rate of one kept on the thread fell
		 * with the traffic (bounded: trials come every few ms here) */
		for (uint64_t until = gi_now_ns() + 10000000000ull; !auto_decided(ex, 2) && gi_now_ns() < until;)
			sched_yield();
		assert_true(auto_decided(ex, 2)); /* the lcores handed their workers over, and they came back */
		for (uint32_t k = 0; k < 2; k++) {
			struct gi_exec_auto_info ai;
			gi_executor_auto_info(ex, k, &ai);
			print_message("auto worker %u: %llu trials, %llu batches on its thread, the last: %llu pps inline, "
				      "%llu on the thread\n",
				      k, (unsigned long long)ai.trials, (unsigned long long)ai.thread_batches,
				      (unsigned long long)ai.inline_pps, (unsigned long long)ai.thread_pps);
			assert_true(ai.thread_batches > 0); /* the thread served this ring's batches in a trial */
		}
		__atomic_store_n(&lc_stop, 1, __ATOMIC_RELEASE);
		for (int k = 0; k < 2; k++)
			pthread_join(lct[k], NULL);
	}
	assert_int_equal(gi_executor_stop(ex, 10000000000ull), 0);
	struct gi_exec_counters ec;
	gi_executor_counters(ex, &ec);
	uint64_t progress[4];
	assert_int_equal(gi_executor_progress(ex, progress, 4), 2);
	assert_true(progress[0] > 0 && progress[1] > 0);
	gi_executor_destroy(ex);

	/* the reference: each ring's packets in order, through the serial path */
	uint64_t rrb = gi_ring_bytes(1, MAXB, 0);
	struct gi_batch_ring *rr = aligned_alloc(64, GI_ALIGN_UP(rrb, 64));
	memset(rr, 0, rrb);
	gi_ring_init(rr, 1, MAXB, 0);
	struct gi_batch_slot *slot = gi_ring_slot(rr, 0);
	for (uint32_t r = 0; r < 2; r++) {
		slot->n_pkts = 0;
		slot->port = (uint16_t)r;
		for (uint32_t i = 0; i < fd.n; i++) {
			if (fd.ring_of[i] != r)
				continue;
			gi_slot_addr(slot)[slot->n_pkts] = (uint64_t)(uintptr_t)fd.pkts[i];
			gi_slot_len(slot, MAXB)[slot->n_pkts++] = fd.len[i];
			if (slot->n_pkts == MAXB) {
				gi_exec_slot_host(&ref.ctx, &ref.ctr, slot, MAXB, 0, 1);
				slot->n_pkts = 0;
			}
		}
		if (slot->n_pkts)
			gi_exec_slot_host(&ref.ctx, &ref.ctr, slot, MAXB, 0, 1);
		gi_stream_flush(&ref.st[r], 1);
	}
	/* batch boundaries and clocks differ; decisions may not */
	for (int s = 0; s < 2; s++) {
		struct gi_stream_counters a = ref.st[s].c, b = w.st[s].c;
		assert_int_equal(a.packets, b.packets);
		assert_int_equal(a.lost, b.lost);
		assert_int_equal(a.duplicates, b.duplicates);
		assert_int_equal(a.late, b.late);
		assert_memory_equal(a.frames, b.frames, sizeof(a.frames));
		struct gi_frame_ring_hdr *ha = ref.st[s].ring, *hb = w.st[s].ring;
		assert_int_equal(ha->next_frame, hb->next_frame);
		/* the workers bumped each ring's futex word as its frames moved, and
		 * woke for the last move (frame_wake.h); the direct reference never does */
		assert_true(hb->next_frame > 0);
		assert_true(hb->wake_seq > 0);
		assert_int_equal(w.st[s].wake_next, hb->next_frame);
		assert_int_equal(ha->wake_seq, 0);
		for (uint64_t k = 0; k < 16; k++) {
			struct gi_frame_slot *p = gi_frame_slot_at(ha, k), *q = gi_frame_slot_at(hb, k);
			assert_int_equal(p->seq, q->seq);
			assert_int_equal(p->received, q->received);
			assert_memory_equal(p + 1, q + 1, ha->slot_stride - sizeof(*p));
		}
	}
	assert_int_equal(ec.packets, fd.n);
	free(rr);
	for (int r = 0; r < 2; r++)
		free(rings[r]);
	free(fd.pkts);
	free(fd.len);
	free(fd.ring_of);
	exf_fini(&ref);
	exf_fini(&w);
}

static void test_two_worker_threads(void **state)
{
	(void)state;
	two_workers(GI_EXEC_THREADS);
}

static void test_auto_hands_over(void **state)
{
	(void)state;
	two_workers(GI_EXEC_AUTO);
}

/* Host auto's choice: what counts as a saturated lcore, and how much better a thread must be. */
static void test_auto_choice(void **state)
{
	(void)state;
	assert_false(gi_exec_auto_saturated(0, 0));       /* no passes: nothing known */
	assert_false(gi_exec_auto_saturated(63, 0));      /* too few to say */
	assert_true(gi_exec_auto_saturated(64, 0));
	assert_true(gi_exec_auto_saturated(1000, 9));     /* 0.9% empty */
	assert_false(gi_exec_auto_saturated(1000, 10));   /* 1%: the lcore waited for packets */
	assert_false(gi_exec_auto_saturated(1000, 1000));
	assert_false(gi_exec_auto_keep_thread(0, 0));
	assert_true(gi_exec_auto_keep_thread(0, 1));
	assert_false(gi_exec_auto_keep_thread(1000000, 1100000)); /* 10%: not enough for a second core */
	assert_true(gi_exec_auto_keep_thread(1000000, 1100001));
	assert_false(gi_exec_auto_keep_thread(13700000, 5000000)); /* the 2-core VM's replay at 1 KiB */
	assert_true(gi_exec_auto_keep_thread(10000000, 20000000));
	/* a trial ends after a fifth of its window when the thread serves below 80% of inline */
	assert_true(gi_exec_auto_losing(14500000, 9660000));  /* the VM's replay at 64 B */
	assert_true(gi_exec_auto_losing(1000, 799));
	assert_false(gi_exec_auto_losing(1000, 800));
	assert_false(gi_exec_auto_losing(1000, 1200));
	assert_false(gi_exec_auto_losing(0, 0));             /* nothing measured inline: the whole window */
}

/* One stream's group of two rings, ring i published by rx lcore lcores[i] (2 and 3 to start with). */
struct split_group {
	struct exec_fixture w;
	struct gi_batch_ring *rings[2];
	uint32_t both[2], lcores[2];
	uint16_t s0;
	struct gi_exec_group g;
	struct gi_executor_conf c;
};

static void split_group_init(struct split_group *x, enum gi_exec_mode mode)
{
	static const struct exf_conf one = { .format = GI_FORMAT_UDP_SEQ, .n_streams = 1, .packets = PPF,
					     .payload = PAYLOAD, .window = WINDOW, .slots = 16 };
	uint64_t rb = gi_ring_bytes(4, 8, 0);

	exf_init(&x->w, &one);
	for (int r = 0; r < 2; r++) {
		x->rings[r] = aligned_alloc(64, GI_ALIGN_UP(rb, 64));
		memset(x->rings[r], 0, rb);
		gi_ring_init(x->rings[r], 4, 8, 0);
		x->both[r] = (uint32_t)r;
		x->lcores[r] = 2u + (uint32_t)r;
	}
	x->s0 = 0;
	x->g = (struct gi_exec_group){ 2, x->both, 1, &x->s0 };
	x->c = (struct gi_executor_conf){ .backend = GI_BACKEND_HOST, .mode = mode, .idle = GI_IDLE_BUSY, .cpu = -1,
					  .n_rings = 2, .rings = x->rings, .ring_lcore = x->lcores, .n_groups = 1,
					  .groups = &x->g, .ctx = &x->w.ctx, .tick_ns = 1000000 };
}

static void split_group_fini(struct split_group *x)
{
	for (int r = 0; r < 2; r++)
		free(x->rings[r]);
	exf_fini(&x->w);
}

/* Auto on the host is threads where a group's rings are on two lcores, and says why. */
static void test_auto_split_group_threads(void **state)
{
	(void)state;
	struct split_group x;
	split_group_init(&x, GI_EXEC_AUTO);
	struct gi_executor *ex = NULL;
	char err[320] = "";
	struct gi_exec_auto_info ai;
	assert_int_equal(gi_executor_create(&x.c, &ex, err, sizeof(err)), 0);
	print_message("%s\n", gi_executor_why(ex));
	assert_non_null(strstr(gi_executor_why(ex), "mode auto: rings 0 and 1 of one group are on rx lcores 2 and 3"));
	assert_null(gi_executor_inline_worker(ex, 2));
	assert_int_equal(gi_executor_auto_info(ex, 0, &ai), -ENOTSUP);
	assert_int_equal(gi_executor_can_swap_streams(ex), 1); /* one worker thread */
	gi_executor_destroy(ex);
	/* one lcore: a worker for it, which a live reload can still reach */
	x.lcores[1] = 2;
	assert_int_equal(gi_executor_create(&x.c, &ex, err, sizeof(err)), 0);
	assert_string_equal(gi_executor_why(ex), "");
	assert_non_null(gi_executor_inline_worker(ex, 2));
	assert_int_equal(gi_executor_can_swap_streams(ex), 1);
	assert_int_equal(gi_executor_start(ex), 0);
	assert_int_equal(gi_executor_stop(ex, 1000000000ull), 0);
	assert_int_equal(gi_executor_stop(ex, 1000000000ull), 0); /* twice: the second finds it done */
	gi_executor_destroy(ex);
	split_group_fini(&x);
}

/* Inline: one group on two lcores would be written by two threads. */
static void test_inline_refuses_split_group(void **state)
{
	(void)state;
	struct split_group x;
	split_group_init(&x, GI_EXEC_INLINE);
	struct gi_executor *ex = NULL;
	char err[320] = "";
	assert_int_equal(gi_executor_create(&x.c, &ex, err, sizeof(err)), -EINVAL);
	assert_null(ex);
	print_message("%s\n", err);
	assert_non_null(strstr(err, "executor.mode inline: rings 0 and 1 may carry the same streams"));
	assert_non_null(strstr(err, "lcores 2 and 3"));
	/* one lcore: fine, and that lcore's worker serves both rings */
	x.lcores[1] = 2;
	assert_int_equal(gi_executor_create(&x.c, &ex, err, sizeof(err)), 0);
	assert_non_null(gi_executor_inline_worker(ex, 2));
	assert_null(gi_executor_inline_worker(ex, 3));
	assert_int_equal(gi_executor_start(ex), 0);
	assert_int_equal(gi_executor_stop(ex, 1000000000ull), 0);
	gi_executor_destroy(ex);
	split_group_fini(&x);
}

/* ---- arithmetic ---------------------------------------------------------------- */

static void test_divide_free(void **state)
{
	(void)state;
	static const uint32_t ds[] = { 1, 2, 3, 5, 7, 8, 10, 60, 64, 100, 1000, 1408, 4096, 65535, 65536, 1000003,
				       0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu };
	rng_state = 5;
	for (size_t k = 0; k < sizeof(ds) / sizeof(ds[0]); k++) {
		struct gi_div v;
		gi_div_init(&v, ds[k]);
		for (int i = 0; i < 20000; i++) {
			uint64_t n = i < 8 ? (uint64_t[]){ 0, 1, ds[k] - 1, ds[k], ds[k] + 1, UINT64_MAX, UINT64_MAX - 1,
							    (uint64_t)1 << 63 }[i]
					   : rnd() >> (rnd() % 64);
			assert_int_equal(gi_div_q(&v, n), n / ds[k]);
			assert_int_equal(gi_div_r(&v, n), n % ds[k]);
			assert_int_equal(gi_div_q_select(&v, n), n / ds[k]); /* the GPU's form */
		}
	}
}

/* A counter's sign-extended distance (gi_extend_delta, both forms) against its definition, 0 to 64 bits. */
static void test_extend_delta(void **state)
{
	(void)state;
	rng_state = 9;
	for (uint32_t bits = 0; bits <= 64; bits++)
		for (int i = 0; i < 4000; i++) {
			const uint64_t ref = i < 4 ? (uint64_t[]){ 0, 1, UINT64_MAX, (uint64_t)1 << 63 }[i] : rnd();
			const uint64_t v = i % 3 == 0 ? ref + (rnd() >> (rnd() % 64)) : rnd();
			__int128 want;
			if (bits >= 64) {
				want = (int64_t)(v - ref);
			} else {
				const unsigned __int128 mod = (unsigned __int128)1 << bits;
				const unsigned __int128 d = (v - ref) & (uint64_t)(mod - 1);
				want = bits && d >= mod / 2 ? (__int128)d - (__int128)mod : (__int128)d;
			}
			assert_true(gi_extend_delta(ref, v, bits) == (int64_t)want);
			assert_true(gi_extend_delta_eager(ref, v, bits) == (int64_t)want); /* the GPU's form */
		}
}

/* A value near `base` most of the time, anything now and then. */
static uint64_t rnd_near(uint64_t base)
{
	const uint64_t k = rnd() % 8;
	return k == 0 ? rnd() : k == 1 ? base - rnd() % 4 : k == 2 ? base + rnd() % 4 : base;
}

/*
 * 2a's place of a record in its two forms (gi_seq_fast_place: the host
 * tests each check where it reads its word, the GPU loads every word
 * first and ANDs the checks) on random stream states, records and slots
 * near and far from fitting: the same answer, frame, index and geometry.
 */
static void test_fast_place_forms(void **state)
{
	(void)state;
	static const uint32_t packets_set[] = { 1, 2, 3, 7, 8, 63, 64, 65, 200 };
	static const uint32_t bits_set[] = { 0, 1, 2, 3, 4, 8, 16, 24, 32, 62, 63, 64 };
	static const uint64_t resync_set[] = { 0, 0, 1, 5, 1000, ~0ull };
	enum { NSLOT = 4 };
	const uint64_t hdr = GI_ALIGN_UP(sizeof(struct gi_frame_ring_hdr), 4096);
	uint32_t fit = 0;
	rng_state = 11;
	for (int it = 0; it < 200000; it++) {
		struct gi_stream_rt st;
		memset(&st, 0, sizeof(st));
		st.format = (uint32_t)(rnd() % 2 ? GI_FORMAT_ROCEV2 : GI_FORMAT_CUSTOM);
		st.packets = packets_set[rnd() % 9];
		st.payload_bytes = (uint32_t)(rnd() % 3 ? 64 : 1 + rnd() % 2000);
		st.data_packets = rnd() % 2 && st.packets > 1 ? st.packets - 1 : st.packets;
		st.last_bytes = (uint32_t)(rnd() % 2 ? st.payload_bytes : rnd() % 100);
		st.fp.seq_bits = bits_set[rnd() % 12];
		st.fp.frame_bits = (uint32_t)(rnd() % 4 ? bits_set[rnd() % 12] : rnd() % 65);
		st.fp.resync_frames = resync_set[rnd() % 6];
		st.started = rnd() % 8 != 0;
		st.end_unknown = rnd() % 8 == 0;
		gi_div_init(&st.div_packets, st.packets);
		gi_div_init(&st.div_payload, st.payload_bytes);
		const uint32_t rank = (uint32_t)(rnd() % 3 ? rnd() % 4 : rnd() % 300);
		st.seq_max = rnd() % 4 ? rnd() % 100000 : rnd();
		const uint64_t seq_ext = st.seq_max + 1 + rank;
		st.seq_origin = rnd() % 4 ? seq_ext - rnd() % (4ull * st.packets) : rnd();
		st.raw_max = rnd() % 4 ? rnd() % 1000 : rnd();
		st.raw_origin = rnd() % 4 ? st.raw_max - rnd() % 8 : rnd();
		st.frame_base = rnd() % 4 ? rnd() % 100 : rnd();
		st.next_pub = rnd() % 4 ? st.frame_base + rnd() % 4 : rnd();

		struct gi_rec r;
		memset(&r, 0, sizeof(r));
		const uint64_t n = seq_ext - st.seq_origin, idx = n % st.packets;
		r.pi.seq = rnd() % 4 ? rnd_near(seq_ext) : rnd();
		r.pi.has_frame = rnd() % 2;
		r.pi.has_offset = rnd() % 3 == 0;
		r.pi.meta = rnd() % 5 == 0;
		r.pi.frame = rnd_near(st.raw_max + rnd() % 3);
		r.pi.pkt_index = (uint32_t)(rnd() % 4 ? rnd_near(idx) : rnd());
		r.pi.byte_off = rnd() % 4 ? idx * st.payload_bytes : rnd_near(idx * st.payload_bytes);
		r.pi.payload_len = rnd() % 4 ? gi_stream_pkt_bytes(&st, r.pi.has_frame ? r.pi.pkt_index : (uint32_t)idx)
					     : (uint32_t)(rnd() % 2000);

		/* NSLOT slots around the frame the distance gives: open or not, bits set or not */
		const uint64_t stride = gi_frame_slot_stride(st.packets, 0);
		uint8_t *ring = aligned_alloc(4096, hdr + NSLOT * stride);
		assert_non_null(ring);
		memset(ring, 0, hdr + NSLOT * stride);
		for (uint32_t k = 0; k < NSLOT; k++) {
			struct gi_frame_slot *s = (struct gi_frame_slot *)(ring + hdr + k * stride);
			s->frame = rnd() % 4 ? st.frame_base + n / st.packets + k - 1 : rnd();
			s->state = rnd() % 3 ? GI_FRAME_FILLING : GI_FRAME_COMPLETE;
			s->seq = 2 * s->frame + (rnd() % 4 != 0);
			for (uint32_t w = 0; w < gi_frame_bitmap_words(st.packets); w++)
				gi_frame_bitmap(s)[w] = rnd() & rnd();
		}
		struct gi_stream_geom g1, g2;
		gi_stream_geom_none(&g1);
		g1.ring = ring;
		gi_div_init(&g1.div_slots, NSLOT);
		g1.slot_stride = stride;
		g1.stream = 0;
		g2 = g1;
		struct gi_rec r1 = r, r2 = r;
		const uint32_t a = gi_seq_fast_place_tests(&st, &g1, &r1, rank);
		const uint32_t b = gi_seq_fast_place_eager(&st, &g2, &r2, rank);
		assert_int_equal(a, b);
		assert_true(r1.frame == r2.frame && r1.index == r2.index);
		assert_true(g1.last_slot == g2.last_slot && g1.last_frame == g2.last_frame);
		fit += a;
		free(ring);
	}
	assert_true(fit > 2000); /* the fitting path taken often enough to mean something */
}

/* Slice-by-8 ICRC (the GPU's) against the byte loop, whole and split packets. */
static void test_icrc_slice_by_8(void **state)
{
	(void)state;
	uint32_t *t8 = malloc(8 * 256 * sizeof(uint32_t));
	memcpy(t8, gi_crc32_table, 256 * sizeof(uint32_t));
	for (uint32_t row = 1; row < 8; row++)
		for (uint32_t w = 0; w < 3; w++) /* three workers fill each row between them */
			gi_crc32_t8_row(t8, row, w, 3);
	uint8_t b[TP_MAX], seg0[TP_MAX], seg1[TP_MAX];
	rng_state = 9;
	for (uint32_t plen = 0; plen < 1500; plen += 1 + (uint32_t)(rnd() % 97)) {
		struct rp p = { .opcode = GI_ROCEV2_RC | GI_ROCEV2_SEND_ONLY, .qp = QP, .psn = (uint32_t)plen,
				.plen = plen, .pad = -1, .vlan = (int)(plen & 1), .seed = plen };
		uint32_t len = rp_build(b, &p);
		struct gi_l4 l4;
		assert_int_equal(gi_parse_l4(b, len, len, &l4), GI_L4_OK);
		uint32_t want = gi_rocev2_icrc(b, len, NULL, l4.l3_off, l4.payload_len + 8);
		assert_int_equal(gi_rocev2_icrc_t8(b, len, NULL, l4.l3_off, l4.payload_len + 8, t8), want);
		assert_int_equal(want, gi_rocev2_icrc_carried(b, len, NULL, &l4));
		/* every cut a split NIC could make after the headers */
		for (uint32_t cut = l4.payload_off + 12; cut <= len; cut += 1 + (uint32_t)(rnd() % 13)) {
			memcpy(seg0, b, cut);
			memcpy(seg1, b + cut, len - cut);
			assert_int_equal(gi_rocev2_icrc_t8(seg0, cut, seg1, l4.l3_off, l4.payload_len + 8, t8), want);
		}
	}
	free(t8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_traffic),
		cmocka_unit_test(test_pipelines_mixed),
		cmocka_unit_test(test_short_last_packets),
		cmocka_unit_test(test_lying_senders),
		cmocka_unit_test(test_long_runs),
		cmocka_unit_test(test_one_stream),
		cmocka_unit_test(test_run_closed_short),
		cmocka_unit_test(test_run_frame_skipped),
		cmocka_unit_test(test_counter_half_range),
		cmocka_unit_test(test_run_stalls_by_counter),
		cmocka_unit_test(test_start_visible_with_next_frame),
		cmocka_unit_test(test_two_worker_threads),
		cmocka_unit_test(test_auto_hands_over),
		cmocka_unit_test(test_auto_choice),
		cmocka_unit_test(test_auto_split_group_threads),
		cmocka_unit_test(test_inline_refuses_split_group),
		cmocka_unit_test(test_divide_free),
		cmocka_unit_test(test_extend_delta),
		cmocka_unit_test(test_fast_place_forms),
		cmocka_unit_test(test_icrc_slice_by_8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
