/*
 * test_exec_cuda.c — the cuda executor backend, with or without a GPU.
 *
 * Without a GPU (CI's plain build): backend cuda/gpudev fails at create
 * with -ENODEV and the one-line message the daemon logs; auto falls back
 * to host and says why.
 *
 * Everywhere: the phases as the GPU splits them — parse by 5 workers,
 * sequence by one worker per stream, place by 3 warps of 32 lanes played
 * in turn on the CPU (tests check the partition) — over the same slots as
 * the serial reference gi_exec_slot_host(), with and without header/data
 * split: frames, counters and stream state must be identical, and every
 * payload byte must be written exactly once.
 *
 * With a GPU — or in a -Demulate_cuda=true build, with the kernels on
 * CPU threads (tests/cuda_emu; not a GPU result) — the same traffic through
 * the real cuda executor in both modes, frames and counters compared with
 * the host reference; one Holoscan Sensor Bridge stream (hsbpkt.h),
 * whose frames end with its sender's records, which warp 0's lanes add up;
 * and seeded traffic of loss, copies, swaps and junk (test_gpu_random:
 * GI_RANDOM_SEEDS=N for more seeds than CI's four).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* count destination writes inside the region under test (see test_frame.c) */
static uint8_t *count_lo, *count_hi;
static uint8_t *write_count; /* one counter per byte of [count_lo, count_hi) */
#define GI_COPY_CHUNK(dst, src, n)                                                   \
	do {                                                                         \
		for (uint32_t b_ = 0; b_ < (n); b_++) {                              \
			uint8_t *d_ = (uint8_t *)(dst) + b_;                         \
			if (d_ >= count_lo && d_ < count_hi)                         \
				write_count[d_ - count_lo]++;                        \
			*d_ = ((const uint8_t *)(src))[b_];                          \
		}                                                                    \
	} while (0)

#include <cmocka.h>

#include "gi_build_config.h"
#include "kernels/cuda_drv.h"
#include "kernels/exec_cuda.h"
#include "kernels/executor.h"
#include "kernels/phase_commit.h"
#include "kernels/phase_parse.h"
#include "kernels/phase_place.h"
#include "kernels/phase_sequence_solo.h"
#include "exec_fixture.h"
#include "hsbpkt.h"
#include "testpkt.h"

#define PPF 8
#define PAYLOAD 1000 /* > 32 lanes x 16 bytes, not a multiple of 16: every lane and a short last chunk */
#define SLOTS 32
#define WINDOW 3
#define MAXB 48
#define NSTREAMS 2
#define MAXPKTS 512

/* The traffic: whole packets, plus where a split NIC would cut them. */
struct traffic {
	uint8_t (*pkt)[TP_MAX];
	uint8_t (*seg0)[TP_MAX];
	uint8_t (*seg1)[TP_MAX];
	uint32_t len[MAXPKTS];
	uint32_t cut[MAXPKTS];
	uint32_t n;
};

/* Two udp_seq streams on UDP 6000 and 6001; no batch ring (each test makes its own). */
static void world_port(struct exec_fixture *w, int s)
{
	exf_map_port(w, s, (uint16_t)(6000 + s));
}

/*
 * Every frame also as a typed tensor: RAW12 pixels (3 bytes for 2, so
 * groups straddle the 1000-byte packets) to float16, scaled, lost ones NaN
 * — the tensor step on every worker of the CTA against the host's.
 */
static const struct gi_frame_tensor world_tensor = {
	.dtype = GI_DT_F16, .ndim = 1, .shape = { 2 * (PPF * PAYLOAD / 3) }, .sample = GI_TS_RAW12, .big = 1,
	.missing = GI_TM_NAN, .scale = 1.0 / 4096, .offset = -0.5,
};

static const struct exf_conf world = {
	.format = GI_FORMAT_UDP_SEQ, .n_streams = NSTREAMS, .packets = PPF, .payload = PAYLOAD, .window = WINDOW,
	.slots = SLOTS, .frame_timeout_ns = 0, .stream = world_port, .tensor = &world_tensor,
};

/* The same with a frame ring of 2 slots: a batch's streams stall on slots
 * their own earlier frames still hold, and the CTA goes round again (the
 * next batch, staged beside the first round's sequence step, must not
 * disturb it). */
static const struct exf_conf tight = {
	.format = GI_FORMAT_UDP_SEQ, .n_streams = NSTREAMS, .packets = PPF, .payload = PAYLOAD, .window = 2,
	.slots = 2, .frame_timeout_ns = 0, .stream = world_port, .tensor = &world_tensor,
};

/*
 * Stream 0 alone (stream 1's packets have no stream), as a steered queue's
 * CTA serves it: 2b per frame of the run by thread 0, the payloads of its
 * first group copied meanwhile by the other warps (phase_sequence_solo.h); and
 * the same on 2 slots, where the run stalls and the copies stop before it.
 */
static const struct exf_conf solo = {
	.format = GI_FORMAT_UDP_SEQ, .n_streams = 1, .packets = PPF, .payload = PAYLOAD, .window = WINDOW,
	.slots = SLOTS, .frame_timeout_ns = 0, .stream = world_port, .tensor = &world_tensor,
};
static const struct exf_conf solo_tight = {
	.format = GI_FORMAT_UDP_SEQ, .n_streams = 1, .packets = PPF, .payload = PAYLOAD, .window = 2,
	.slots = 2, .frame_timeout_ns = 0, .stream = world_port, .tensor = &world_tensor,
};

/*
 * One Holoscan Sensor Bridge stream alone (hsbpkt.h): rocev2 with ICRCs,
 * placed by address, every frame ending with its sender's record — a
 * packet of its own (hsb_solo: metadata counted a frame each), or on the
 * last data packet with the frame's CRC checked (hsb_solo_crc: every 7th
 * frame's record is wrong, corrupt).  Batches hold several frames: the
 * lanes of warp 0 fill them a frame each, and lane 0 adds up their
 * records (gi_solo_group_lanes), which the udp_seq worlds above have none of.
 */
static const struct exf_conf hsb_solo = {
	.format = GI_FORMAT_ROCEV2, .n_streams = 1, .packets = HSB_DATA + 1, .payload = HSB_PAYLOAD,
	.window = WINDOW, .slots = SLOTS, .frame_timeout_ns = 0, .stream = hsb_stream, .arg = GI_ROCEV2_END_PACKET,
};
static const struct exf_conf hsb_solo_crc = {
	.format = GI_FORMAT_ROCEV2, .n_streams = 1, .packets = HSB_DATA, .payload = HSB_PAYLOAD,
	.window = WINDOW, .slots = SLOTS, .frame_timeout_ns = 0, .stream = hsb_stream, .arg = GI_ROCEV2_END_EMBEDDED,
};

/* Packet i of the traffic: b's len bytes, cut where a split NIC would cut it (after 78..125 bytes). */
static void add_raw(struct traffic *t, const uint8_t *b, uint32_t len)
{
	uint32_t i = t->n++;
	memcpy(t->pkt[i], b, len);
	t->len[i] = len;
	t->cut[i] = GI_MIN(len, 78u + (i * 7u) % 48u);
	memcpy(t->seg0[i], b, t->cut[i]);
	memcpy(t->seg1[i], b + t->cut[i], len - t->cut[i]);
}

/* No packets yet, room for MAXPKTS. */
static struct traffic *traffic_new(void)
{
	struct traffic *t = calloc(1, sizeof(*t));
	t->pkt = calloc(MAXPKTS, TP_MAX);
	t->seg0 = calloc(MAXPKTS, TP_MAX);
	t->seg1 = calloc(MAXPKTS, TP_MAX);
	return t;
}

static void add_pkt(struct traffic *t, int s, uint32_t frame, uint16_t idx, uint32_t seq)
{
	struct tp_opts o = { .udp_dst = (uint16_t)(6000 + s), .vlan = (frame & 1) ? 5 : -1 };
	struct gi_udp_seq h = { .stream_id = (uint16_t)(20 + s), .packets_per_frame = PPF, .seq = seq, .frame = frame,
				.pkt_index = idx, .payload_len = PAYLOAD, .timestamp_ns = 9 };
	uint8_t b[TP_MAX];
	add_raw(t, b, tp_build(b, &o, &h)); /* a split NIC cuts after the headers (74 or 78 bytes) and 0..47 more */
}

/* Loss, reorder, duplicates, late packets, window pushes, junk: every path of classify. */
static struct traffic *make_traffic(void)
{
	struct traffic *t = traffic_new();
	uint32_t seq[NSTREAMS] = { 0, 0 };
	for (uint32_t fr = 0; fr < 14; fr++)
		for (int s = 0; s < NSTREAMS; s++)
			for (int k = 0; k < PPF; k++) {
				uint16_t p = (uint16_t)((fr % 3 == 1) ? PPF - 1 - k : k); /* some frames backwards */
				uint32_t q = seq[s]++;
				if ((fr == 4 && p == 2) || (s == 1 && fr == 7))
					continue;                  /* lost packet; lost frame */
				add_pkt(t, s, fr, p, q);
				if (fr == 5 && p == 6)
					add_pkt(t, s, fr, p, q);   /* duplicate */
			}
	add_pkt(t, 0, 0, 1, 1);                                   /* late: frame 0 long published */
	memcpy(t->pkt[t->n], t->pkt[0], t->len[0]);               /* no stream: unknown port */
	t->pkt[t->n][14 + 20 + 2] = 0x99;
	t->len[t->n] = t->len[0];
	t->cut[t->n] = t->cut[0];
	memcpy(t->seg0[t->n], t->pkt[t->n], t->cut[t->n]);
	memcpy(t->seg1[t->n], t->pkt[t->n] + t->cut[t->n], t->len[t->n] - t->cut[t->n]);
	t->n++;
	assert_true(t->n <= MAXPKTS);
	return t;
}

/*
 * Stream 0 mostly in order, as one sensor's queue carries it: batches that
 * are one in-order run of several frames, with stream 1's packets and junk
 * (no stream) inside some of them, and a few that are not a run (a copy, a
 * loss, a frame backwards).
 */
static struct traffic *make_solo_traffic(void)
{
	struct traffic *t = traffic_new();
	uint32_t seq = 0, seq1 = 0;
	for (uint32_t fr = 0; fr < SLOTS - 2; fr++) /* no slot taken twice: each payload byte written once */
		for (int k = 0; k < PPF; k++) {
			uint16_t p = (uint16_t)(fr == 28 ? PPF - 1 - k : k);
			uint32_t q = seq++;
			if ((fr == 26 && p == 5) || (fr == 10 && p == 6))
				continue; /* lost; frame 10 holds the window's head while the next batch's run begins at
					   * frame 11: no lanes for its first group, its payloads copied beside 2b */
			add_pkt(t, 0, fr, p, q);
			if (fr == 20 && p == 3)
				add_pkt(t, 0, fr, p, q); /* a copy */
			if (fr >= 10 && fr < 13 && k % 3 == 0)
				add_pkt(t, 1, fr, p, seq1++); /* stream 1's: no stream here */
		}
	assert_true(t->n <= MAXPKTS);
	return t;
}

/*
 * The HSB stream (conf: hsb_solo or hsb_solo_crc) in order, PSNs from 100,
 * pages in turn; frame 10 loses a data packet (it holds the window's head,
 * so the next batch's first group is not one the lanes fill) and frame 20
 * has one packet twice.
 */
static struct traffic *make_hsb_traffic(const struct exf_conf *conf)
{
	struct traffic *t = traffic_new();
	const int embedded = conf->arg == GI_ROCEV2_END_EMBEDDED;
	const uint32_t ppf = conf->packets;
	uint8_t b[TP_MAX];
	for (uint32_t k = 0; (k + 1) * ppf + 1 <= MAXPKTS; k++)
		for (uint32_t idx = 0; idx < ppf; idx++) {
			if (k == 10 && idx == 2)
				continue;
			uint32_t len = hsb_pkt(b, idx, k, (1 + k) % HSB_PAGES, 100 + k * ppf + idx, embedded);
			add_raw(t, b, len);
			if (k == 20 && idx == 1)
				add_raw(t, b, len);
		}
	return t;
}

/*
 * Seeded traffic (test_gpu_random, traffic_seed set): for a udp_seq world,
 * the streams' frames in order mostly, in bursts of one stream (the runs
 * 2b's lanes and the early copy take), with packets lost, sent twice,
 * swapped with the next, frames reversed or lost whole, a late copy of a
 * published frame's packet now and then, and junk; frames past SLOTS reuse
 * slots.  In a world of one stream, stream 1's packets have none.
 */
static uint64_t traffic_seed; /* test_gpu_random's current seed; 0: the worlds' own traffic */
static uint32_t traffic_max = MAXPKTS; /* ... and its most packets (two rings: what they hold before the start) */
static uint64_t seen_runs, seen_lane_frames, seen_early, seen_stalls; /* ... what its seeds made the GPU do */

static uint32_t rnd(uint64_t *x, uint32_t n)
{
	return (uint32_t)(exf_xorshift(x) % n);
}

static struct traffic *make_random_traffic(uint64_t seed)
{
	struct traffic *t = traffic_new();
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	uint32_t fr[NSTREAMS] = { 0, 0 }, k[NSTREAMS] = { 0, 0 }, seq[NSTREAMS] = { 0, 0 };
	uint16_t order[NSTREAMS][PPF];
	const uint32_t pend = traffic_max - 8;
	while (t->n < pend) {
		const int s = rnd(&x, 4) == 0; /* bursts of stream 0, some of stream 1 */
		for (uint32_t burst = 1 + rnd(&x, 3 * PPF); burst && t->n < pend; burst--) {
			if (k[s] == 0) { /* a new frame: its packets' order, or lost whole */
				const uint32_t how = rnd(&x, 64);
				for (uint16_t i = 0; i < PPF; i++)
					order[s][i] = how == 0 ? (uint16_t)(PPF - 1 - i) : i;
				for (uint16_t i = 0; how == 1 && i + 1 < PPF; i += 2) {
					order[s][i] = (uint16_t)(i + 1);
					order[s][i + 1] = i;
				}
				if (how == 2) {
					seq[s] += PPF;
					fr[s]++;
					continue;
				}
			}
			const uint16_t p = order[s][k[s]];
			const uint32_t q = seq[s]++, ev = rnd(&x, 128);
			if (ev == 0 && k[s] + 1 < PPF) { /* swapped with the next */
				const uint16_t p2 = order[s][k[s] + 1];
				add_pkt(t, s, fr[s], p2, q + 1);
				add_pkt(t, s, fr[s], p, q);
				seq[s]++;
				k[s]++;
			} else if (ev != 1 && ev != 5) { /* 1, 5: lost */
				add_pkt(t, s, fr[s], p, q);
				if (ev == 2)
					add_pkt(t, s, fr[s], p, q); /* twice */
			}
			if (ev == 3 && fr[s] > WINDOW + 1) /* late: a packet of a frame long published */
				add_pkt(t, s, fr[s] - WINDOW - 1, 0, q);
			if (ev == 4) /* junk: UDP port 6000 + NSTREAMS, which no stream takes */
				add_pkt(t, NSTREAMS, fr[s], p, q);
			if (++k[s] >= PPF) {
				k[s] = 0;
				fr[s]++;
			}
		}
	}
	assert_true(t->n <= MAXPKTS);
	return t;
}

/*
 * Seeded HSB traffic (hsb_solo, hsb_solo_crc): frames in order, PSNs
 * consecutive, pages in turn, with packets lost (the record too: a frame
 * never closed), sent twice or swapped with the next, and frames lost
 * whole; a frame that lost data packets is closed short by its record.
 * Frames come in blocks of 16, half of them clean: any of those events
 * among a batch's 8 frames breaks its run, and a batch that lies in a
 * clean block forms one (the lanes' HSB forms); the other blocks take the
 * events twice as often.
 */
static struct traffic *make_random_hsb_traffic(const struct exf_conf *conf, uint64_t seed)
{
	struct traffic *t = traffic_new();
	const int embedded = conf->arg == GI_ROCEV2_END_EMBEDDED;
	const uint32_t ppf = conf->packets;
	uint64_t x = seed * 0xbf58476d1ce4e5b9ull + 7;
	uint8_t b[TP_MAX], b2[TP_MAX];
	uint32_t psn = 100, clean = 0;
	for (uint32_t k = 0; t->n + 2 * ppf + 2 <= traffic_max; k++) {
		if (k % 16 == 0)
			clean = rnd(&x, 2);
		if (!clean && rnd(&x, 20) == 0) { /* lost whole */
			psn += ppf;
			continue;
		}
		for (uint32_t idx = 0; idx < ppf; idx++) {
			const uint32_t ev = clean ? 64 : rnd(&x, 64), page = (1 + k) % HSB_PAGES;
			const uint32_t len = hsb_pkt(b, idx, k, page, psn + idx, embedded);
			if (ev == 0 && idx + 1 < ppf) { /* swapped with the next */
				add_raw(t, b2, hsb_pkt(b2, idx + 1, k, page, psn + idx + 1, embedded));
				add_raw(t, b, len);
				idx++;
			} else if (ev != 1) { /* 1: lost */
				add_raw(t, b, len);
				if (ev == 2)
					add_raw(t, b, len); /* twice */
			}
		}
		psn += ppf;
	}
	assert_true(t->n <= MAXPKTS);
	return t;
}

/* The traffic of conf's world. */
static struct traffic *traffic_for(const struct exf_conf *conf)
{
	if (traffic_seed)
		return conf->format == GI_FORMAT_ROCEV2 ? make_random_hsb_traffic(conf, traffic_seed)
							: make_random_traffic(traffic_seed);
	if (conf->format == GI_FORMAT_ROCEV2)
		return make_hsb_traffic(conf);
	return conf->n_streams == 1 ? make_solo_traffic() : make_traffic();
}

static void free_traffic(struct traffic *t)
{
	free(t->pkt);
	free(t->seg0);
	free(t->seg1);
	free(t);
}

/* Fill `slot` (of a ring of max_pkts-packet slots) with packets [from, from + n) of t, as the rx lcore would. */
static void fill_slot_of(struct gi_batch_slot *slot, uint32_t max_pkts, const struct traffic *t, uint32_t from,
			 uint32_t n, int split, uint8_t (*pkt)[TP_MAX], uint8_t (*seg0)[TP_MAX], uint8_t (*seg1)[TP_MAX])
{
	slot->n_pkts = n;
	slot->port = 0;
	slot->t_publish_ns = 1;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = from + k;
		gi_slot_len(slot, max_pkts)[k] = t->len[i];
		if (split) {
			gi_slot_addr(slot)[k] = (uint64_t)(uintptr_t)seg0[i];
			gi_slot_len0(slot, max_pkts)[k] = t->cut[i];
			gi_slot_addr1(slot, max_pkts)[k] = (uint64_t)(uintptr_t)seg1[i];
		} else {
			gi_slot_addr(slot)[k] = (uint64_t)(uintptr_t)pkt[i];
		}
	}
}

/* The same, in a ring of MAXB-packet slots. */
static void fill_slot(struct gi_batch_slot *slot, const struct traffic *t, uint32_t from, uint32_t n, int split,
		      uint8_t (*pkt)[TP_MAX], uint8_t (*seg0)[TP_MAX], uint8_t (*seg1)[TP_MAX])
{
	fill_slot_of(slot, MAXB, t, from, n, split, pkt, seg0, seg1);
}

static void assert_same_world(const struct exec_fixture *a, const struct exec_fixture *b, int compare_times)
{
	for (int s = 0; s < a->conf.n_streams; s++) {
		const struct gi_stream_rt *x = &a->st[s], *y = &b->st[s];
		assert_memory_equal(&x->c, &y->c, sizeof(x->c));
		assert_int_equal(x->next_pub, y->next_pub);
		assert_int_equal(x->max_frame, y->max_frame);
		assert_int_equal(x->min_frame, y->min_frame);
		assert_int_equal(x->seq_max, y->seq_max);
		if (compare_times) {
			assert_memory_equal(&x->frame_latency, &y->frame_latency, sizeof(x->frame_latency));
			assert_memory_equal(a->ring_mem[s], b->ring_mem[s], a->frame_bytes);
			continue;
		}
		/* different clocks: everything but the time stamps must match; each published frame's
		 * latency observed once, by one lane or a warp's (gi_hist_observe_lanes) */
		uint64_t seen_x = 0, seen_y = 0;
		for (int k = 0; k < GI_HIST_BUCKETS; k++) {
			seen_x += x->frame_latency.count[k];
			seen_y += y->frame_latency.count[k];
		}
		assert_int_equal(seen_x, seen_y);
		struct gi_frame_ring_hdr *ha = (struct gi_frame_ring_hdr *)a->ring_mem[s];
		struct gi_frame_ring_hdr *hb = (struct gi_frame_ring_hdr *)b->ring_mem[s];
		assert_int_equal(ha->next_frame, hb->next_frame);
		for (uint64_t f = 0; f < SLOTS; f++) {
			struct gi_frame_slot *p = gi_frame_slot_at(ha, f), *q = gi_frame_slot_at(hb, f);
			assert_int_equal(p->seq, q->seq);
			assert_int_equal(p->state, q->state);
			assert_int_equal(p->received, q->received);
			assert_int_equal(p->expected, q->expected);
			assert_int_equal(p->first_ts_ns, q->first_ts_ns); /* the sender's times, not the clock */
			assert_int_equal(p->sensor_id, q->sensor_id);
			assert_int_equal(p->sensor_frame, q->sensor_frame);
			assert_memory_equal(&p->sender, &q->sender, sizeof(p->sender)); /* a frame's end record */
			assert_memory_equal(p + 1, q + 1, ha->slot_stride - sizeof(*p)); /* bitmap + payload */
		}
	}
	assert_memory_equal(a->ctr.drops, b->ctr.drops, sizeof(a->ctr.drops));
	assert_int_equal(a->ctr.packets, b->ctr.packets);
	assert_int_equal(a->ctr.batches, b->ctr.batches);
}

/*
 * Serial reference vs the phases split among workers and lanes, slot by
 * slot; `conf` world, or solo: one stream's runs, their first frames'
 * payloads copied beside 2b, each byte still written once.
 */
static void run_phases_vs_serial(int split, const struct exf_conf *conf)
{
	struct traffic *t = conf->n_streams == 1 ? make_solo_traffic() : make_traffic();
	struct exec_fixture ref, wp;
	exf_init(&ref, conf);
	exf_init(&wp, conf);
	uint64_t rb = gi_ring_bytes(1, MAXB, (uint32_t)split);
	struct gi_batch_ring *ring = aligned_alloc(64, GI_ALIGN_UP(rb, 64));
	memset(ring, 0, rb);
	assert_int_equal(gi_ring_init(ring, 1, MAXB, (uint32_t)split), 0);
	struct gi_batch_slot *slot = gi_ring_slot(ring, 0);
	struct gi_batch_slot *staged = aligned_alloc(64, ring->slot_stride);
	struct gi_batch_hdr *h = aligned_alloc(64, GI_ALIGN_UP(gi_batch_scratch_bytes(MAXB), 64));

	count_lo = wp.ring_mem[0];
	count_hi = wp.ring_mem[0] + wp.frame_bytes;
	write_count = calloc(1, wp.frame_bytes);

	uint64_t now = 1000;
	for (uint32_t from = 0; from < t->n; from += MAXB, now += 10) {
		uint32_t n = GI_MIN((uint32_t)MAXB, t->n - from);
		fill_slot(slot, t, from, n, split, t->pkt, t->seg0, t->seg1);
		gi_exec_slot_host(&ref.ctx, &ref.ctr, slot, MAXB, (uint32_t)split, now);

		memset(staged, 0xa5, ring->slot_stride); /* the stage copies the slot whole: every byte */
		for (uint32_t k = 0; k < 7; k++)
			assert_int_equal(gi_slot_stage(staged, slot, ring->slot_stride, MAXB, k, 7), k == 0 ? n : 0);
		assert_memory_equal(staged, slot, ring->slot_stride);
		exf_phases_gpu_form(&wp.ctx, &wp.ctr, staged, MAXB, (uint32_t)split, now, h);
	}
	for (int s = 0; s < conf->n_streams; s++) {
		gi_stream_flush(&ref.st[s], now);
		gi_stream_flush(&wp.st[s], now);
	}
	assert_same_world(&ref, &wp, 1);

	/* stream 0: each placed payload byte written once, nothing else written */
	struct gi_frame_ring_hdr *fh = (struct gi_frame_ring_hdr *)wp.ring_mem[0];
	uint64_t placed_bytes = 0;
	for (uint64_t f = 0; f < SLOTS; f++) {
		struct gi_frame_slot *sl = gi_frame_slot_at(fh, f);
		for (uint32_t p = 0; p < PPF; p++) {
			int got = (int)(gi_frame_bitmap(sl)[0] >> p & 1);
			uint8_t *pay = gi_frame_payload(fh, sl) + (uint64_t)p * PAYLOAD;
			for (uint32_t b = 0; b < PAYLOAD; b++)
				assert_int_equal(write_count[pay + b - count_lo], got);
			placed_bytes += got ? PAYLOAD : 0;
		}
	}
	uint64_t total = 0;
	for (uint64_t b = 0; b < wp.frame_bytes; b++)
		total += write_count[b];
	assert_int_equal(total, placed_bytes);
	assert_int_equal(placed_bytes, wp.st[0].c.bytes);
	assert_true(wp.st[0].c.duplicates == 1 && wp.st[0].c.lost == (conf->n_streams == 1 ? 2u : 1u));
	if (conf->n_streams == 1) {
		assert_true(wp.ctr.early_copied > 0);
		assert_true(wp.ctr.lane_frames > 0); /* groups of frames sequenced a lane each */
	} else {
		assert_int_equal(wp.st[0].c.late, 1);
		assert_int_equal(wp.ctr.drops[GI_DROP_NO_STREAM], 1);
	}

	free(write_count);
	count_lo = count_hi = NULL;
	free(h);
	free(staged);
	free(ring);
	exf_fini(&ref);
	exf_fini(&wp);
	free_traffic(t);
}

static void test_phases_match_serial(void **state)
{
	(void)state;
	run_phases_vs_serial(0, &world);
	run_phases_vs_serial(0, &solo);
}

static void test_phases_match_serial_split(void **state)
{
	(void)state;
	run_phases_vs_serial(1, &world);
	run_phases_vs_serial(1, &solo);
}

/* Phase 3 on the GPU: lanes per payload, a power of two from 1 to a warp. */
static void test_place_lanes(void **state)
{
	(void)state;
	static const uint32_t payload[] = { 0, 1, 16, 17, 64, 100, 256, 512, 513, 1024, 9000 };
	static const uint32_t lanes[] = { 1, 1, 1, 2, 4, 8, 16, 32, 32, 32, 32 };
	for (unsigned i = 0; i < sizeof(payload) / sizeof(payload[0]); i++)
		assert_int_equal(gi_cuda_place_lanes(payload[i]), lanes[i]);
	/* a batch takes one round when it can: 8 warps, 1 KiB (32 lanes at most, 64 chunks) */
	assert_int_equal(gi_cuda_place_lanes_batch(32, 64, 8, 8), 32);   /* 8 payloads: a warp each */
	assert_int_equal(gi_cuda_place_lanes_batch(32, 64, 8, 9), 16);
	assert_int_equal(gi_cuda_place_lanes_batch(32, 64, 8, 64), 4);   /* 8 per warp */
	assert_int_equal(gi_cuda_place_lanes_batch(32, 64, 8, 256), 4);  /* wide payloads: 4 lanes, 4 rounds */
	assert_int_equal(gi_cuda_place_lanes_batch(32, 64, 8, 4096), 4);
	assert_int_equal(gi_cuda_place_lanes_batch(32, 16, 8, 256), 1);  /* 256 B: a lane each, one round */
	assert_int_equal(gi_cuda_place_lanes_batch(32, 17, 8, 256), 4);  /* 257 B: wide */
	assert_int_equal(gi_cuda_place_lanes_batch(2, 2, 8, 4096), 1);   /* more rounds, never below a lane */
	/* ... but a lane copies at most 64 chunks: 8 KiB (512) keeps 8 lanes, 9000 B (563) 16 */
	assert_int_equal(gi_cuda_place_lanes_batch(32, 512, 8, 64), 8);
	assert_int_equal(gi_cuda_place_lanes_batch(32, 563, 8, 64), 16);
	assert_int_equal(gi_cuda_place_lanes_batch(4, 4, 2, 16), 4);     /* 64 B: 2 warps x 8 */
	assert_int_equal(gi_cuda_place_lanes_batch(4, 4, 8, 256), 1);    /* 64 B, 256 packets: one round */
	assert_int_equal(gi_cuda_place_lanes_batch(1, 1, 8, 1000), 1);
}

/* A corrupt n_pkts never takes the executor past the slot. */
static void test_stage_clamps(void **state)
{
	(void)state;
	uint64_t rb = gi_ring_bytes(1, 4, 0);
	struct gi_batch_ring *ring = aligned_alloc(64, GI_ALIGN_UP(rb, 64));
	memset(ring, 0, rb);
	gi_ring_init(ring, 1, 4, 0);
	struct gi_batch_slot *slot = gi_ring_slot(ring, 0);
	struct gi_batch_slot *staged = aligned_alloc(64, ring->slot_stride);
	slot->n_pkts = 1000;
	for (uint32_t lane = 0; lane < 3; lane++)
		assert_int_equal(gi_slot_stage(staged, slot, ring->slot_stride, 4, lane, 3), lane == 0 ? 4 : 0);
	assert_int_equal(staged->n_pkts, 4);
	free(staged);
	free(ring);
}

/* A device to run on (a GPU, or the emulation): the driver stays open in *d. */
static int open_gpu(struct gi_cuda_drv *d)
{
	char err[256];
	return gi_cuda_drv_open(d, "0", err, sizeof(err)) == 0;
}

static int have_gpu(void)
{
	struct gi_cuda_drv d;
	int ok = open_gpu(&d);
	gi_cuda_drv_close(&d);
	return ok;
}

/*
 * The default 256 threads per CTA, or GI_THREADS_PER_RING (128 in the
 * ThreadSanitizer build, tests/meson.build).  ThreadSanitizer's runtime
 * has 255 thread slots; with the emulated CTA's 256 OS threads plus the
 * stream, launcher and test threads it reported, in about one run of
 * three, a race between a k_tick's mirror write and the next test's use of
 * the same stack, though the launcher waits for the stream to go idle and
 * the stop joins the launcher.  With 128 threads: none in 12 runs.
 */
static struct gi_executor_conf conf_for(struct exec_fixture *w, enum gi_backend b, enum gi_exec_mode m,
					struct gi_batch_ring **rings, uint32_t n_rings)
{
	const char *tpr = getenv("GI_THREADS_PER_RING");
	return (struct gi_executor_conf){ .backend = b, .mode = m, .idle = GI_IDLE_BUSY, .cpu = -1, .n_rings = n_rings,
					  .rings = rings, .ctx = &w->ctx, .tick_ns = 1000000,
					  .threads_per_ring = tpr ? (uint32_t)strtoul(tpr, NULL, 10) : 0 };
}

static void test_cuda_without_gpu_fails_cleanly(void **state)
{
	(void)state;
	if (have_gpu())
		skip();
	static const char *const prefix[] = { "executor backend 'cuda': no CUDA device or driver found (",
					      "executor backend 'gpudev': no CUDA device or driver found (" };
	const char *suffix = "); use backend: host";
	struct exec_fixture w;
	exf_init(&w, &world);
	for (int k = 0; k < 2; k++)
		for (int m = GI_EXEC_PERSISTENT; m <= GI_EXEC_LAUNCH; m++) {
			char err[256] = "";
			struct gi_executor *ex = NULL;
			struct gi_executor_conf c =
				conf_for(&w, k ? GI_BACKEND_GPUDEV : GI_BACKEND_CUDA, (enum gi_exec_mode)m, NULL, 0);
			assert_int_equal(gi_executor_create(&c, &ex, err, sizeof(err)), -ENODEV);
			assert_null(ex);
			printf("# %s\n", err);
			assert_memory_equal(err, prefix[k], strlen(prefix[k]));
			assert_true(strlen(err) > strlen(suffix));
			assert_string_equal(err + strlen(err) - strlen(suffix), suffix);
			assert_null(strchr(err, '\n'));
		}
	exf_fini(&w);
}

static void test_auto_falls_back_to_host(void **state)
{
	(void)state;
	if (have_gpu())
		skip();
	struct exec_fixture w;
	exf_init(&w, &world);
	uint64_t rb = gi_ring_bytes(4, 8, 0);
	struct gi_batch_ring *ring = aligned_alloc(64, GI_ALIGN_UP(rb, 64));
	memset(ring, 0, rb);
	gi_ring_init(ring, 4, 8, 0);
	for (int m = GI_EXEC_PERSISTENT; m <= GI_EXEC_LAUNCH; m++) {
		char err[256] = "";
		struct gi_executor *ex = NULL;
		struct gi_executor_conf c = conf_for(&w, GI_BACKEND_AUTO, (enum gi_exec_mode)m, &ring, 1);
		assert_int_equal(gi_executor_create(&c, &ex, err, sizeof(err)), 0);
		assert_string_equal(gi_executor_name(ex), "host");
		const char *why = gi_executor_why(ex);
		printf("# %s\n", why);
		assert_memory_equal(why, "auto: no CUDA device or driver found (", 38);
		assert_string_equal(why + strlen(why) - strlen("); using host"), "); using host");
		assert_string_equal(gi_executor_last_error(ex), "");
		gi_executor_set_paused(ex, 1);
		gi_executor_set_paused(ex, 0);
		assert_int_equal(gi_executor_start(ex), 0);
		assert_int_equal(gi_executor_stop(ex, 2000000000ull), 0);
		struct gi_exec_counters ec;
		gi_executor_counters(ex, &ec);
		assert_int_equal(ec.batches, 0);
		gi_executor_destroy(ex);
		ring->stop = 0;
	}
	free(ring);
	exf_fini(&w);
}

static void test_modes_and_bad_mode(void **state)
{
	(void)state;
	struct exec_fixture w;
	exf_init(&w, &world);
	char err[256];
	struct gi_executor *ex = NULL;
	struct gi_executor_conf c = conf_for(&w, GI_BACKEND_HOST, GI_EXEC_LAUNCH, NULL, 0);
	assert_int_equal(gi_executor_create(&c, &ex, err, sizeof(err)), 0);
	assert_string_equal(gi_executor_why(ex), "");
	gi_executor_destroy(ex);
	c.mode = (enum gi_exec_mode)7;
	assert_int_equal(gi_executor_create(&c, &ex, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown executor mode 7");
	/* a GPU backend refuses the host's modes and its serial pipeline, each by its own name; auto is fine */
	c = conf_for(&w, GI_BACKEND_CUDA, GI_EXEC_INLINE, NULL, 0);
	c.pipeline = GI_PIPE_AUTO;
	assert_int_equal(gi_executor_create(&c, &ex, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "executor backend 'cuda' runs the phased kernels on the GPU: executor.mode inline is a "
				 "host mode (use mode persistent or launch)");
	c = conf_for(&w, GI_BACKEND_GPUDEV, GI_EXEC_PERSISTENT, NULL, 0);
	c.pipeline = GI_PIPE_SERIAL;
	assert_int_equal(gi_executor_create(&c, &ex, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "executor backend 'gpudev' runs the phased kernels on the GPU: executor.pipeline serial "
				 "is the host's (use pipeline auto or phased)");
	exf_fini(&w);
}

/* The device's opt-in limit of shared memory a CTA. */
static int device_optin(const struct gi_cuda_drv *drv)
{
	int optin = 0;
	assert_int_equal(drv->device_get_attribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
						   drv->device),
			 CUDA_SUCCESS);
	return optin;
}

/* A CTA's shared memory with two staging buffers for slots of n packets exceeds the device's opt-in limit. */
static int smem_two_over(uint32_t stride, uint32_t n, int optin)
{
	uint32_t o1, o2, o3;
	return gi_cuda_smem_bytes(stride, n, 1, &o1, &o2, &o3) > (uint32_t)optin;
}

/* The largest batch.max_packets, for slots of split packets. */
#define BIG_SLOT 2048u

/*
 * Whether slots of BIG_SLOT split packets fit one staging buffer but not
 * two on this device (-1: not even one).  The emulation has an H100's
 * limit, 227 KiB a CTA: one, so CI runs the one-buffer case.
 */
static int big_slots_one_buffer(void)
{
	struct gi_cuda_drv drv;
	uint32_t o1, o2, o3;
	assert_true(open_gpu(&drv));
	const int optin = device_optin(&drv);
	const uint32_t stride = gi_ring_slot_stride(BIG_SLOT, GI_SLOT_SPLIT);
	const int r = gi_cuda_smem_bytes(stride, BIG_SLOT, 0, &o1, &o2, &o3) > (uint32_t)optin
			      ? -1
			      : smem_two_over(stride, BIG_SLOT, optin);
	if (drv.emulated)
		assert_int_equal(r, 1);
	gi_cuda_drv_close(&drv);
	return r;
}

/*
 * GPU only: the real cuda executor over the same traffic, packets in
 * mapped pinned memory, a producer on this thread; frames and counters
 * must equal the host reference (time stamps aside).  The GPU's rings
 * have slots of ring_pkts packets (batches of MAXB).  Returns 1 when the
 * CTA had one staging buffer where its mode stages ahead (no room for two).
 */
static int run_gpu(enum gi_exec_mode mode, int split, uint32_t n_rings, const struct exf_conf *conf,
		   uint32_t ring_pkts)
{
	hsb_frame_crc_on = conf == &hsb_solo_crc; /* before the streams and the traffic: whatever failed before */
	struct traffic *t = traffic_for(conf);
	struct exec_fixture ref, gw;
	exf_init(&ref, conf);
	exf_init(&gw, conf);
	/* a consumer counted asleep on every ring: the waker's sleeper path and
	 * FUTEX_WAKE run (nobody is in the futex, so none is woken) */
	uint32_t sleeping = 1;
	for (int s = 0; s < conf->n_streams; s++)
		gw.st[s].waiters = &sleeping;
	struct gi_cuda_drv drv;
	assert_true(open_gpu(&drv));
	uint8_t(*bufs)[TP_MAX];
	size_t per = (size_t)MAXPKTS * TP_MAX;
	assert_int_equal(drv.mem_host_alloc((void **)&bufs, 3 * per, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
	CUdeviceptr dp;
	assert_int_equal(drv.mem_host_get_device_pointer(&dp, bufs, 0), CUDA_SUCCESS);
	uint8_t(*dbufs)[TP_MAX] = (uint8_t(*)[TP_MAX])(uintptr_t)dp;
	memcpy(bufs, t->pkt, per);
	memcpy(bufs + MAXPKTS, t->seg0, per);
	memcpy(bufs + 2 * MAXPKTS, t->seg1, per);

	/* one group of n_rings rings, batch k on ring k % n_rings */
	uint64_t rb = gi_ring_bytes(4, ring_pkts, (uint32_t)split);
	struct gi_batch_ring *rings[2];
	for (uint32_t r = 0; r < n_rings; r++) {
		rings[r] = aligned_alloc(4096, GI_ALIGN_UP(rb, 4096));
		memset(rings[r], 0, rb);
		gi_ring_init(rings[r], 4, ring_pkts, (uint32_t)split);
	}

	char err[256] = "";
	struct gi_executor *ex = NULL;
	struct gi_executor_conf c = conf_for(&gw, GI_BACKEND_CUDA, mode, rings, n_rings);
	int rc = gi_executor_create(&c, &ex, err, sizeof(err));
	if (rc < 0)
		fail_msg("%s", err);
	printf("# %s\n", gi_executor_why(ex));
	assert_string_equal(gi_executor_name(ex), "cuda");
	/* two staging buffers where a persistent CTA stages ahead and the device has room for them */
	const int one_buf = mode == GI_EXEC_PERSISTENT &&
			    smem_two_over(rings[0]->slot_stride, ring_pkts, device_optin(&drv));
	assert_int_equal(strstr(gi_executor_why(ex), "no staging ahead") != NULL, one_buf);

	/* the rings full before the kernel starts (every batch fits: served in
	 * batch order, round robin): a persistent CTA's first batch reads ahead
	 * the next ring's head and each batch's end stages the next batch */
	uint64_t head[2] = { 0, 0 }, batches = 0, now = 1000;
	int started = 0;
	for (uint32_t from = 0; from < t->n; from += MAXB, batches++) {
		uint32_t n = GI_MIN((uint32_t)MAXB, t->n - from);
		struct gi_batch_ring *ring = rings[batches % n_rings];
		uint64_t *hd = &head[batches % n_rings];
		if (!started && !gi_ring_has_room(ring, *hd)) {
			assert_int_equal(gi_executor_start(ex), 0);
			started = 1;
		}
		uint64_t deadline = gi_now_ns() + 60000000000ull;
		while (!gi_ring_has_room(ring, *hd))
			if (gi_now_ns() > deadline)
				fail_msg("the GPU did not consume slot %llu within 60 s", (unsigned long long)(*hd - 4));
		struct gi_batch_slot *slot = gi_ring_slot(ring, *hd);
		fill_slot_of(slot, ring_pkts, t, from, n, split, dbufs, dbufs + MAXPKTS, dbufs + 2 * MAXPKTS);
		slot->batch_seq = *hd;
		slot->t_publish_ns = gi_now_ns();
		gi_ring_publish(ring, (*hd)++);
	}
	assert_true(n_rings == 1 || !started); /* two rings: all prefilled, so the order is the batches' */
	if (!started)
		assert_int_equal(gi_executor_start(ex), 0);
	/* a bound, not a timing: the emulation under ThreadSanitizer and its stress
	 * switch (setup.sh) drains in seconds what a GPU drains in microseconds */
	rc = gi_executor_stop(ex, 60000000000ull);
	if (rc < 0)
		fail_msg("stop: %d %s", rc, gi_executor_last_error(ex));
	for (uint32_t r = 0; r < n_rings; r++)
		assert_int_equal(GI_LOAD_RELAXED_U64(&rings[r]->tail), head[r]);
	gi_executor_counters(ex, &gw.ctr);
	gi_executor_destroy(ex);

	/* the host reference over the same batches; and the GPU's phases on the
	 * host (the fixture's form) to count the batches that took more than
	 * one round, which the tight frame ring is there to cause */
	uint64_t rrb = gi_ring_bytes(1, MAXB, (uint32_t)split);
	struct gi_batch_ring *rr = aligned_alloc(64, GI_ALIGN_UP(rrb, 64));
	memset(rr, 0, rrb);
	gi_ring_init(rr, 1, MAXB, (uint32_t)split);
	struct exec_fixture form;
	exf_init(&form, conf);
	struct gi_batch_hdr *scratch = aligned_alloc(64, GI_ALIGN_UP(gi_batch_scratch_bytes(MAXB), 64));
	uint32_t stalls = 0, runs = 0;
	for (uint32_t from = 0; from < t->n; from += MAXB, now += 10) {
		uint32_t n = GI_MIN((uint32_t)MAXB, t->n - from);
		fill_slot(gi_ring_slot(rr, 0), t, from, n, split, t->pkt, t->seg0, t->seg1);
		gi_exec_slot_host(&ref.ctx, &ref.ctr, gi_ring_slot(rr, 0), MAXB, (uint32_t)split, now);
		exf_phases_gpu_form(&form.ctx, &form.ctr, gi_ring_slot(rr, 0), MAXB, (uint32_t)split, now, scratch);
		stalls += scratch->round > 1;
		runs += scratch->runs > 0;
	}
	for (int s = 0; s < conf->n_streams; s++)
		gi_stream_flush(&ref.st[s], now);
	assert_same_world(&ref, &gw, 0);
	printf("# %llu batches, %u of them more than one round, %u with a stream's run\n", (unsigned long long)batches,
	       stalls, runs);
	free(scratch);
	exf_fini(&form);
	assert_int_equal(gw.ctr.batches, batches);
	assert_true(gw.st[0].c.packets > 0);
	if (conf->n_streams == 1)
		printf("# one stream: %llu runs, %llu payloads copied beside 2b, %llu frames sequenced a lane each\n",
		       (unsigned long long)gw.ctr.runs, (unsigned long long)gw.ctr.early_copied,
		       (unsigned long long)gw.ctr.lane_frames);
	seen_stalls += stalls;
	seen_runs += conf->n_streams == 1 ? gw.ctr.runs : 0;
	seen_lane_frames += gw.ctr.lane_frames;
	seen_early += gw.ctr.early_copied;
	/* what each world's own traffic was written to make the GPU do (seeded
	 * traffic: test_gpu_random adds up its seeds') */
	const char *tpr = getenv("GI_THREADS_PER_RING");
	if (!traffic_seed) {
		if (conf == &tight || conf == &solo_tight)
			assert_true(stalls > 0);
		if (conf->n_streams == 1) { /* runs: frames filled by thread 0's lanes, payloads copied beside its 2b */
			assert_true(runs > 0 && gw.ctr.runs > 0);
			/* solo_tight's first groups are one frame (a window of 2): neither */
			if (conf == &solo || conf->format == GI_FORMAT_ROCEV2)
				assert_true(gw.ctr.lane_frames > 0);
			if (conf == &hsb_solo) /* the records' packets, summed over the lanes */
				assert_true(gw.st[0].c.metadata > 0);
			if (conf == &hsb_solo_crc) /* the records' CRCs, checked in the commit */
				assert_true(gw.st[0].c.frames[GI_FRAMES_CORRUPT] > 0 &&
					    gw.st[0].c.frames[GI_FRAMES_COMPLETE] > 0);
			if (conf == &solo && (!tpr || strtoul(tpr, NULL, 10) >= 64))
				assert_true(gw.ctr.early_copied > 0);
		}
	}
	/* batches 1..3 of the full ring were staged by their predecessors' ends
	 * (later ones too, if the producer kept ahead); a launched pass never stages ahead */
	printf("# %s, %u ring%s: %llu of %llu batches staged ahead\n", mode == GI_EXEC_LAUNCH ? "launch" : "persistent",
	       n_rings, n_rings > 1 ? "s" : "", (unsigned long long)gw.ctr.staged_ahead, (unsigned long long)batches);
	if (mode == GI_EXEC_LAUNCH || one_buf ||
	    !gi_cuda_stages_ahead(tpr ? (uint32_t)strtoul(tpr, NULL, 10) : GI_CUDA_DEFAULT_THREADS,
				  (uint32_t)conf->n_streams))
		assert_int_equal(gw.ctr.staged_ahead, 0);
	else
		assert_true(gw.ctr.staged_ahead >= GI_MIN(batches, 4 * n_rings) - 1);
	/* the launcher (launch) or waker (persistent) thread saw the kernels move
	 * next_frame and bumped the consumers' futex word, last for the final move */
	int published = 0;
	for (int s = 0; s < conf->n_streams; s++)
		if (gw.st[s].ring->next_frame > 0) {
			published++;
			assert_true(gw.st[s].ring->wake_seq > 0);
			assert_int_equal(gw.st[s].wake_next, gw.st[s].ring->next_frame);
			assert_int_equal(ref.st[s].ring->wake_seq, 0);
		}
	assert_true(published > 0);

	free(rr);
	for (uint32_t r = 0; r < n_rings; r++)
		free(rings[r]);
	assert_int_equal(drv.mem_free_host(bufs), CUDA_SUCCESS);
	gi_cuda_drv_close(&drv);
	exf_fini(&ref);
	exf_fini(&gw);
	free_traffic(t);
	return one_buf;
}

/*
 * GPU only: the persistent kernel ticks every tick_ns even when its ring
 * never runs dry — frame timeouts must not wait for an idle moment.  The
 * same batch is published over and over with the ring kept full (the
 * first copy placed, the rest duplicates); it leaves frames of stream 0
 * incomplete, with a 1 ms frame timeout, so a tick must time them out while
 * the load lasts (the mirrored counters show it).  The load lasts 300 ms,
 * or longer until that is seen (at most 30 s): the emulated CTA under a
 * sanitizer on two cores serves only a few batches in 300 ms.
 */
static void test_gpu_ticks_under_load(void **state)
{
	(void)state;
	if (!have_gpu())
		skip();
	struct traffic *t = make_traffic();
	struct exec_fixture gw;
	exf_init(&gw, &world);
	for (int s = 0; s < NSTREAMS; s++)
		gw.st[s].frame_timeout_ns = 1000000; /* frame 4 of stream 0 lacks a packet (make_traffic) */
	struct gi_cuda_drv drv;
	assert_true(open_gpu(&drv));
	uint8_t(*bufs)[TP_MAX];
	assert_int_equal(drv.mem_host_alloc((void **)&bufs, (size_t)MAXB * TP_MAX, CU_MEMHOSTALLOC_DEVICEMAP),
			 CUDA_SUCCESS);
	CUdeviceptr dp;
	assert_int_equal(drv.mem_host_get_device_pointer(&dp, bufs, 0), CUDA_SUCCESS);
	/* the batch: packets 48..95, frames 3 to 5 (frame 4 lacks packet 2; frame 5 is cut) */
	memcpy(bufs, t->pkt[MAXB], (size_t)MAXB * TP_MAX);
	memmove(t->len, t->len + MAXB, MAXB * sizeof(t->len[0]));
	memmove(t->cut, t->cut + MAXB, MAXB * sizeof(t->cut[0]));
	uint64_t rb = gi_ring_bytes(4, MAXB, 0);
	struct gi_batch_ring *ring = aligned_alloc(4096, GI_ALIGN_UP(rb, 4096));
	memset(ring, 0, rb);
	gi_ring_init(ring, 4, MAXB, 0);
	char err[256] = "";
	struct gi_executor *ex = NULL;
	struct gi_executor_conf c = conf_for(&gw, GI_BACKEND_CUDA, GI_EXEC_PERSISTENT, &ring, 1);
	if (gi_executor_create(&c, &ex, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	assert_int_equal(gi_executor_start(ex), 0);

	uint64_t head = 0, seen = 0, t0 = gi_now_ns(), busy = 0;
	for (uint64_t now = t0; now < t0 + 30000000000ull && (now < t0 + 300000000ull || seen == 0);
	     now = gi_now_ns()) {
		if (!gi_ring_has_room(ring, head)) {
			busy++;
			continue;
		}
		fill_slot(gi_ring_slot(ring, head), t, 0, MAXB, 0, (uint8_t(*)[TP_MAX])(uintptr_t)dp, NULL, NULL);
		gi_ring_publish(ring, head++);
		seen = GI_LOAD_RELAXED_U64(&gw.st[0].c.frames[GI_FRAMES_TIMED_OUT]);
	}
	uint64_t queued = head - GI_LOAD_RELAXED_U64(&ring->tail);
	assert_int_equal(gi_executor_stop(ex, 30000000000ull), 0);
	printf("# %llu batches, ring full %llu times, %llu queued at the end; frames timed out under load: %llu\n",
	       (unsigned long long)head, (unsigned long long)busy, (unsigned long long)queued,
	       (unsigned long long)seen);
	/* the producer refills a slot the moment it frees and found the ring full
	 * again and again: the kernel had work at every poll (how many were still
	 * queued at the very end is a race with its last batches: printed only) */
	assert_true(busy > 0);
	assert_true(seen > 0);
	gi_executor_destroy(ex);
	free(ring);
	assert_int_equal(drv.mem_free_host(bufs), CUDA_SUCCESS);
	gi_cuda_drv_close(&drv);
	exf_fini(&gw);
	free_traffic(t);
}

static void test_gpu_persistent(void **state)
{
	(void)state;
	if (!have_gpu())
		skip();
	assert_false(run_gpu(GI_EXEC_PERSISTENT, 0, 1, &world, MAXB));
	assert_false(run_gpu(GI_EXEC_PERSISTENT, 1, 1, &world, MAXB));
	/* one CTA, two rings: round robin, the next ring staged ahead */
	assert_false(run_gpu(GI_EXEC_PERSISTENT, 0, 2, &world, MAXB));
	assert_false(run_gpu(GI_EXEC_PERSISTENT, 0, 1, &tight, MAXB)); /* stalls: more than one round a batch */
	/* one stream: its runs' payloads copied beside 2b (and stopped before a stall) */
	assert_false(run_gpu(GI_EXEC_PERSISTENT, 0, 1, &solo, MAXB));
	assert_false(run_gpu(GI_EXEC_PERSISTENT, 1, 1, &solo_tight, MAXB));
	/* one HSB stream: the frames' end records summed by the lanes; the CRCs checked */
	assert_false(run_gpu(GI_EXEC_PERSISTENT, 0, 1, &hsb_solo, MAXB));
	assert_false(run_gpu(GI_EXEC_PERSISTENT, 1, 1, &hsb_solo_crc, MAXB));
	/* slots of 2048 split packets: on an H100's or H200's 227 KiB a CTA (the
	 * emulation's too) room for one staging buffer, not two: no staging ahead
	 * (a device with room for neither skips it; one with room for two stages) */
	const int only_one = big_slots_one_buffer();
	if (only_one >= 0)
		assert_int_equal(run_gpu(GI_EXEC_PERSISTENT, 1, 1, &world, BIG_SLOT), only_one);
}

/*
 * GPU only: seeded traffic (make_random_traffic, make_random_hsb_traffic)
 * through the persistent kernel, one udp_seq stream and two on 32 frame
 * slots and on 2, and one HSB stream, with and without split, then in
 * launch mode and on two rings, against the host reference: the GPU's own
 * forms (2b's lanes, the early copy, staging ahead beside 2b, the commit's
 * lanes) on traffic no test above was written for.  GI_RANDOM_SEEDS=N runs
 * N seeds (default 4), GI_RANDOM_SEED=S from seed S.
 */
static void test_gpu_random(void **state)
{
	(void)state;
	if (!have_gpu())
		skip();
	const char *ns = getenv("GI_RANDOM_SEEDS"), *s0 = getenv("GI_RANDOM_SEED");
	const uint64_t n = ns ? strtoull(ns, NULL, 10) : 4, first = s0 ? strtoull(s0, NULL, 10) : 1;
	seen_runs = seen_lane_frames = seen_early = seen_stalls = 0;
	for (uint64_t seed = first; seed < first + n; seed++) {
		printf("# seed %llu\n", (unsigned long long)seed);
		traffic_seed = seed;
		assert_false(run_gpu(GI_EXEC_PERSISTENT, (int)(seed & 1), 1, &solo, MAXB));
		assert_false(run_gpu(GI_EXEC_PERSISTENT, (int)(seed >> 1 & 1), 1, &world, MAXB));
		assert_false(run_gpu(GI_EXEC_PERSISTENT, (int)(seed >> 2 & 1), 1, seed & 1 ? &solo_tight : &tight, MAXB));
		assert_false(run_gpu(GI_EXEC_PERSISTENT, (int)(seed >> 1 & 1), 1, seed & 1 ? &hsb_solo_crc : &hsb_solo, MAXB));
		/* a launched pass per batch; one CTA on two rings, every batch in them before the start */
		assert_false(run_gpu(GI_EXEC_LAUNCH, (int)(seed >> 2 & 1), 1, seed & 2 ? &solo : &world, MAXB));
		traffic_max = 8 * MAXB;
		assert_false(run_gpu(GI_EXEC_PERSISTENT, (int)(seed & 1), 2, seed & 2 ? &world : &solo, MAXB));
		traffic_max = MAXPKTS;
	}
	printf("# %llu seeds: one stream's runs %llu, frames filled by lanes %llu, payloads copied beside 2b %llu, "
	       "batches of more than one round %llu\n",
	       (unsigned long long)n, (unsigned long long)seen_runs, (unsigned long long)seen_lane_frames,
	       (unsigned long long)seen_early, (unsigned long long)seen_stalls);
	if (n >= 4) /* the traffic takes the GPU's own forms, not just the serial steps */
		assert_true(seen_runs > 0 && seen_lane_frames > 0 && seen_early > 0 && seen_stalls > 0);
}

/* After test_gpu_random, passed or not: the worlds' own traffic again for the tests after it. */
static int own_traffic(void **state)
{
	(void)state;
	traffic_seed = 0;
	traffic_max = MAXPKTS;
	return 0;
}

static void test_gpu_launch(void **state)
{
	(void)state;
	if (!have_gpu())
		skip();
	assert_false(run_gpu(GI_EXEC_LAUNCH, 0, 1, &world, MAXB));
	/* (a pass serves each ring to its head in turn: not the batches' order) */
	assert_false(run_gpu(GI_EXEC_LAUNCH, 1, 1, &world, MAXB));
	assert_false(run_gpu(GI_EXEC_LAUNCH, 0, 1, &solo_tight, MAXB));
	/* a pass never stages ahead, so it has one staging buffer: slots of 2048
	 * split packets start where one fits (launch mode reserved two before, and was refused) */
	if (big_slots_one_buffer() >= 0)
		run_gpu(GI_EXEC_LAUNCH, 1, 1, &world, BIG_SLOT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phases_match_serial),
		cmocka_unit_test(test_phases_match_serial_split),
		cmocka_unit_test(test_stage_clamps),
		cmocka_unit_test(test_place_lanes),
		cmocka_unit_test(test_cuda_without_gpu_fails_cleanly),
		cmocka_unit_test(test_auto_falls_back_to_host),
		cmocka_unit_test(test_modes_and_bad_mode),
		cmocka_unit_test(test_gpu_persistent),
		cmocka_unit_test(test_gpu_launch),
		cmocka_unit_test_teardown(test_gpu_random, own_traffic),
		cmocka_unit_test(test_gpu_ticks_under_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
