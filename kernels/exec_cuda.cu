/*
 * exec_cuda.cu — the cuda executor's kernels: one CTA per ring group runs
 * the phases of batch.h over each batch of its rings.
 *
 * No per-packet logic lives here: parse, sequence, place and commit are the
 * shared GI_HD bodies of phase_*.h, which the host executor runs too; this
 * file decides which threads run them, keeps time and mirrors counters.
 *
 * The same source builds twice: by nvcc into the fatbin the daemon loads,
 * and — for tests only — by the host C++ compiler against the CUDA
 * emulation header (tests/cuda_emu/cuda_emu.h), which runs every CUDA
 * thread as an OS thread.  Nothing here forks on which: the emulation
 * supplies CUDA's built-ins, and gi_hd.h's macros are the only way this
 * file touches memory shared with the host (no raw `volatile`, no fences
 * outside them and the ring contract).
 *
 * A CTA's threads, per batch (a __syncthreads() between steps):
 *   stage       all threads copy the slot's descriptors into shared memory
 *               (persistent: all warps but the last, whose last thread
 *               reads ahead the next ring's doorbell meanwhile; nothing,
 *               when this batch was staged beside the last one's trip)
 *   1  parse    a thread per packet; 1b: a thread per rocev2 ICRC (slice-by-8)
 *   2a run      a thread per packet: its place if its stream's packets are
 *               one in-order run (two passes: place, then link; with one
 *               stream per group, ranks and frame starts by block scans)
 *   2b sequence a thread per stream of the group, its packets in order; or
 *               per frame of the run (warp 0's lanes a frame each, or the other
 *               warps copying payloads meanwhile); a thread per record sets its bit;
 *               first, the warps after the step's stage a batch the read-ahead saw
 *   3  place    lanes per payload by its chunks and the batch's size
 *               (gi_cuda_place_lanes, _batch), each lane 8 loads in flight
 *   4  commit   a thread per stream (one: warp 0): final frames visible
 *   (2-4 again while a stream stalled on a busy slot)
 *   end         thread 0: batch counters, every thread mirrors them and the
 *               group's stream counters, thread 0 hands the slot back (or,
 *               the next batch staged, that one's last thread beside its parse)
 * Thread 0 alone polls the doorbells between batches (an idle CTA costs one
 * thread's polling); under load the read-ahead or the staged batch answers.
 *
 * Modes (executor_cuda.c picks one):
 *   persistent  k_persistent: each CTA polls its group's rings until every
 *               ring's stop word is set and all are drained, then flushes
 *               its streams and exits.
 *   launch      a host thread launches k_pass (each CTA serves what its
 *               rings hold, once) and k_tick every tick_ns, on one
 *               in-order CUDA stream: kernels never overlap, so each group's
 *               CTA is again the only writer of its streams.
 * Ordering rules and why each fence is there: kernels/README.md.
 */
#include "exec_cuda.h"
#include "executor.h" /* enum gi_exec_pause */
#include "idle.h"
#include "trip.h"

/* CLOCK_MONOTONIC ns on the GPU: %globaltimer plus the offset measured at start. */
__device__ __forceinline__ uint64_t gi_dev_now(int64_t offset)
{
	return GI_DEV_GLOBALTIMER() + (uint64_t)offset;
}

/* What thread 0 tells the CTA to do next (in shared memory, before the CRC table). */
enum gi_cta_action {
	GI_ACT_NONE = 0,
	GI_ACT_SERVE,   /* slot `idx` of ring `ring` */
	GI_ACT_TICK,    /* frame timeouts, then mirror */
	GI_ACT_MIRROR,  /* went idle after work: mirror stream counters now */
	GI_ACT_EXIT,    /* every ring stopped and drained: flush, mirror, leave */
};

struct gi_cta_ctl {
	uint32_t action;
	uint32_t ring;      /* in args.rings */
	uint64_t idx;
	uint64_t now;       /* thread 0's clock for the action */
	uint64_t next_tick;
	uint32_t rr;        /* round-robin start among the group's rings */
	uint32_t dirty;     /* batches served since counters were mirrored */
	uint32_t empty;     /* empty polls in a row (adaptive idle) */
	uint32_t sleep_ns;
	uint32_t ticked;    /* the last action was a tick */
	uint32_t pass_ring; /* k_pass: the group's ring the pass is at (0 .. n_rings) */
	uint64_t pass_head; /* k_pass: that ring's head when the pass reached it, or GI_PASS_UNREAD */
	uint64_t t_done;    /* step timing: when the last batch was handed back (0: none yet) */
	uint64_t t_mark;    /* ... when the step in progress began */
	uint32_t pf_valid;  /* read ahead (gi_cta_read_ahead): ring pf_ring's head, acquired */
	uint32_t pf_ring;
	uint64_t pf_head;
	uint32_t pf_paused_valid; /* ... and `paused` then (used once) */
	uint32_t pf_paused;
	uint32_t pre_valid; /* staged ahead (gi_cta_beside): slot pre_idx of ring pre_ring, in buffer pre_buf */
	uint32_t pre_ring;
	uint64_t pre_idx;
	uint32_t pre_buf;
	uint32_t cur_buf;   /* the staging buffer of the batch being served */
	uint32_t done_pending; /* batch done_idx of ring done_ring is served but not handed back (gi_cta_complete) */
	uint32_t done_ring;
	uint64_t done_idx;
};
#define GI_PASS_UNREAD UINT64_MAX
GI_STATIC_ASSERT(sizeof(struct gi_cta_ctl) <= GI_CUDA_SMEM_CTL, "CTA control fits its shared-memory slot");

/* The CTA's copy of its group's executor counters (shared memory, GI_CUDA_SMEM_CTR). */
__device__ static inline struct gi_exec_counters *gi_cta_ctr(uint8_t *smem)
{
	return (struct gi_exec_counters *)(smem + GI_CUDA_SMEM_CTR);
}

/*
 * Posted, write-only copies: the CTA's counters into ctr[g] (device
 * memory: what the next kernel of the group, k_tick or a launch-mode
 * pass, starts from) and its host mirror, which the stats thread reads
 * with relaxed loads; each 8-byte aligned store lands whole.  The source
 * words were written before a __syncthreads().
 */
__device__ static void gi_mirror_ctr(const struct gi_cuda_args &a, uint32_t g, const struct gi_exec_counters *from)
{
	const uint64_t *src = (const uint64_t *)from;
	uint64_t *dev = (uint64_t *)&a.ctr[g], *host = (uint64_t *)&a.ctr_mirror[g];
	for (uint32_t w = threadIdx.x; w < sizeof(struct gi_exec_counters) / 8; w += blockDim.x) {
		const uint64_t v = src[w];
		GI_STORE_RELAXED_U64(&dev[w], v);
		GI_STORE_RELAXED_U64(&host[w], v);
	}
}

__device__ static void gi_mirror_streams(const struct gi_cuda_args &a, uint32_t g)
{
	const struct gi_cuda_group &grp = a.groups[g];
	const uint32_t per = GI_CUDA_STREAM_MIRROR_WORDS;
	for (uint32_t w = threadIdx.x; w < grp.n_streams * per; w += blockDim.x) {
		uint32_t s = a.group_streams[grp.first_stream + w / per], k = w % per;
		const uint64_t *src = (const uint64_t *)((const uint8_t *)&a.state->ctx.streams[s] + GI_CUDA_STREAM_MIRROR_OFF);
		uint64_t *dst = (uint64_t *)((uint8_t *)&a.streams_mirror[s] + GI_CUDA_STREAM_MIRROR_OFF);
		GI_STORE_RELAXED_U64(&dst[k], GI_LOAD_RELAXED_U64(&src[k]));
	}
}

/* Every thread: the CRC tables into shared memory, the control words by thread 0. */
__device__ static void gi_cta_init(const struct gi_cuda_args &a, uint8_t *smem)
{
	uint32_t *t8 = (uint32_t *)(smem + GI_CUDA_SMEM_TAB);
	for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x)
		t8[i] = gi_crc32_table_dev[i];
	for (uint32_t row = 1; row < 8; row++) {
		__syncthreads();
		gi_crc32_t8_row(t8, row, threadIdx.x, blockDim.x);
	}
	if (threadIdx.x == 0) {
		struct gi_cta_ctl *cc = (struct gi_cta_ctl *)smem;
		cc->action = GI_ACT_NONE;
		cc->now = gi_dev_now(a.clock_offset_ns);
		cc->next_tick = cc->now + a.tick_ns;
		cc->rr = 0;
		cc->dirty = 0;
		cc->empty = 0;
		cc->sleep_ns = GI_IDLE_MIN_SLEEP_NS;
		cc->ticked = 0;
		cc->pass_ring = 0;
		cc->pass_head = GI_PASS_UNREAD;
		cc->t_done = 0;
		cc->pf_valid = 0;
		cc->pf_paused_valid = 0;
		cc->pre_valid = 0;
		cc->cur_buf = 0;
		cc->done_pending = 0;
	}
	/* the counters from where the group's last kernel left them (a launch-mode pass, k_tick) */
	const uint64_t *src = (const uint64_t *)&a.ctr[blockIdx.x];
	uint64_t *dst = (uint64_t *)gi_cta_ctr(smem);
	for (uint32_t w = threadIdx.x; w < sizeof(struct gi_exec_counters) / 8; w += blockDim.x)
		dst[w] = GI_COUNTER_READ(&src[w]);
	__syncthreads();
}

/*
 * Every thread: a compaction scan over the batch's n records.  pred(i)
 * says whether record i counts; each counted record gets out(i, pos, prev):
 * its place among the counted ones and the counted record before it
 * (GI_REC_NONE).  Ballots within a warp; across warps, each warp's count
 * and last in shared memory, which every thread then reads whole (loads of
 * one word for all threads, all in flight at once) and sums in registers,
 * the running count and last kept there too: one barrier per blockDim.x
 * records, no thread's loop between barriers.  The per-warp words take
 * turns between two halves by pass, so one pass's stores never meet the
 * reads of the pass before (every thread made those before the barrier in
 * between).  Returns the count and the last counted record, in every
 * thread.  The caller's next barrier makes the out() stores visible, and
 * must come before another scan (its first pass reuses the first half).
 */
#define GI_CTA_WARPS (GI_EXEC_MAX_CTA / 32u)
GI_STATIC_ASSERT(2 * GI_CTA_WARPS <= sizeof(((struct gi_batch_hdr *)0)->scan_n) / sizeof(uint16_t),
		 "the block scans' per-warp words: two halves of the CTA's warps");
struct gi_cta_scan_sum {
	uint32_t n;    /* records counted */
	uint32_t last; /* the last of them, GI_REC_NONE */
};

template <class Pred, class Out>
__device__ static struct gi_cta_scan_sum gi_cta_scan(struct gi_batch_hdr *h, uint32_t n, Pred pred, Out out)
{
	const uint32_t tid = threadIdx.x, nt = blockDim.x, lane = tid % 32, warp = tid / 32, nwarps = nt / 32;
	struct gi_cta_scan_sum c = { 0, GI_REC_NONE };

	for (uint32_t base = 0, half = 0; base < n; base += nt, half ^= GI_CTA_WARPS) {
		uint16_t *cnt = &h->scan_n[half], *lst = &h->scan_last[half];
		const uint32_t i = base + tid, wbase = base + warp * 32;
		const uint32_t f = i < n && pred(i);
		const uint32_t b = __ballot_sync(0xffffffffu, f), below = b & ((1u << lane) - 1u);
		if (lane == 0) {
			cnt[warp] = (uint16_t)__popc(b);
			lst[warp] = (uint16_t)(b ? wbase + 31 - __clz((int)b) : GI_REC_NONE);
		}
		__syncthreads();
		/* every load issued before any is used: in a loop that used each as it came, a
		 * warp would wait for them one after another */
		uint32_t k[GI_CTA_WARPS], l[GI_CTA_WARPS];
		GI_UNROLL
		for (uint32_t w = 0; w < GI_CTA_WARPS; w++) {
			k[w] = w < nwarps ? cnt[w] : 0;
			l[w] = w < nwarps ? lst[w] : GI_REC_NONE;
		}
		uint32_t before = 0, all = 0, prev = GI_REC_NONE, last = GI_REC_NONE;
		GI_UNROLL
		for (uint32_t w = 0; w < GI_CTA_WARPS; w++) {
			all += k[w];
			before += w < warp ? k[w] : 0;
			last = k[w] ? l[w] : last;
			prev = k[w] && w < warp ? l[w] : prev;
		}
		if (f)
			out(i, c.n + before + __popc(below),
			    below ? wbase + 31 - __clz((int)below) : prev != GI_REC_NONE ? prev : c.last);
		c.n += all;
		c.last = last != GI_REC_NONE ? last : c.last;
	}
	return c;
}

/*
 * Staging ahead (persistent CTAs of two warps or more; kernels/README.md,
 * ordering 2, 3 and 7).  The last thread reads ahead: while other threads
 * stage a batch, it makes the acquire load of the head the next poll would
 * read first (and reads `paused`).  When that shows a batch after the one
 * being served, the warps its sequence step leaves idle stage it into the
 * other buffer (before any payload they copy beside 2b), the last thread
 * reading ahead again; the batch's end then leaves its slot's
 * hand-back (a system fence) to the next batch's last thread, beside that
 * batch's parse; and the poll finds the next batch staged, reading
 * nothing.  Under load a batch thus waits on host memory beside other
 * work, not three times in a row (doorbell, stage, the hand-back's fence).
 * The reading-ahead thread's warp stages nothing: a warp runs its diverged
 * paths one after the other, and a read ahead beside its own warp's stage
 * would wait for both round trips.
 */

/* Staging buffer 0 or 1. */
__device__ static inline struct gi_batch_slot *gi_cta_slot_buf(const struct gi_cuda_args &a, uint8_t *smem,
								 uint32_t buf)
{
	return (struct gi_batch_slot *)(smem + (buf ? a.slot2_off : a.slot_off));
}

/* The last thread: the head of ring r (acquired: a load, then a system fence) and `paused`, both loads in flight. */
__device__ static void gi_cta_read_ahead(const struct gi_cuda_args &a, struct gi_cta_ctl *cc, uint32_t r)
{
	const uint32_t paused = GI_LOAD_RELAXED_U32(&a.ctl->paused);
	const uint64_t head = GI_LOAD_ACQUIRE_U64(&a.rings[r].ring->head);
	cc->pf_paused = paused;
	cc->pf_paused_valid = 1;
	cc->pf_head = head;
	cc->pf_ring = r;
	cc->pf_valid = 1;
}

/*
 * Every thread: slot idx of ring r into staging buffer stg by threads w0 ..
 * (ahead: all but the last warp, whose last thread reads ahead ring `next`
 * meanwhile; else all).  Returns n_pkts in the stage's first worker
 * (thread w0), 0 elsewhere.
 */
__device__ static uint32_t gi_cta_stage(const struct gi_cuda_args &a, struct gi_cta_ctl *cc, struct gi_batch_slot *stg,
					uint32_t r, uint64_t idx, uint32_t w0, uint32_t ahead, uint32_t next)
{
	const struct gi_cuda_ring &cr = a.rings[r];
	const struct gi_batch_slot *src = (const struct gi_batch_slot *)((const uint8_t *)cr.ring +
									   sizeof(struct gi_batch_ring) +
									   (idx & (cr.size - 1)) * (uint64_t)cr.stride);
	const uint32_t tid = threadIdx.x, end = blockDim.x - (ahead ? 32u : 0u);

	if (ahead && tid == blockDim.x - 1) {
		gi_cta_read_ahead(a, cc, next);
		return 0;
	}
	if (tid < w0 || tid >= end)
		return 0;
	return gi_slot_stage(stg, src, cr.stride, cr.max_pkts, tid - w0, end - w0);
}

/*
 * The batch's trip (trip.h), the CTA's way: every thread is a worker of
 * every step (phase 3: warps of payloads, lanes of 16-byte chunks), a
 * barrier ends each step, and thread 0 times them (steps.h) when asked.
 */
struct gi_cta_trip_be {
	const struct gi_cuda_args *a;
	uint8_t *smem;
	struct gi_cta_ctl *cc;
	struct gi_exec_counters *ctr; /* the CTA's copy (shared memory) */
	int64_t clock_offset_ns;
	uint32_t timing;              /* this thread times the steps */
	uint32_t lanes, chunks;       /* the group's most lanes per payload, and its chunks */
};

/* A step ended: thread 0, after its barrier, into the CTA's counters; one uniform branch when off. */
__device__ static inline void gi_cta_mark(struct gi_cta_trip_be *be, uint32_t step)
{
	if (be->timing) {
		const uint64_t t = gi_dev_now(be->clock_offset_ns);
		be->ctr->step_ns[step] += t - be->cc->t_mark;
		be->cc->t_mark = t;
	}
}

/*
 * Every thread, beside round 0's sequence step (trip_body.h; its workers:
 * warps of threads 0 .. n_streams - 1): the next batch, if gi_cta_serve
 * decided so (cc->pre_*), by the warps after theirs, into the other
 * buffer; the last thread reads ahead the ring after it.
 */
__device__ static void gi_cta_beside(const struct gi_trip *t, struct gi_cta_trip_be *be)
{
	struct gi_cta_ctl *cc = be->cc;
	const struct gi_cuda_group &grp = be->a->groups[blockIdx.x];

	if (cc->pre_valid)
		gi_cta_stage(*be->a, cc, gi_cta_slot_buf(*be->a, be->smem, cc->pre_buf), cc->pre_ring, cc->pre_idx,
			     GI_ALIGN_UP(t->n_streams, 32u), 1, grp.first_ring + (cc->rr + 1) % grp.n_rings);
}

/* One stream: every parsed record's rank and predecessor, the total and the last (block scan). */
__device__ static void gi_cta_scan_ranks(struct gi_batch_hdr *h)
{
	struct gi_rec *rec = gi_batch_recs(h);
	const struct gi_cta_scan_sum c =
		gi_cta_scan(h, h->n, [&](uint32_t i) { return rec[i].state == GI_REC_PARSED; },
			    [&](uint32_t i, uint32_t pos, uint32_t prev) {
				    rec[i].rank = (uint16_t)pos;
				    rec[i].prev = (uint16_t)prev;
			    });
	if (threadIdx.x == 0) {
		h->solo_total = c.n;
		h->solo_last = c.last;
		h->ranked = 1;
	}
	__syncthreads();
}

/* One stream's run: the records that start its frames, in order, into touched[] (block scan). */
__device__ static void gi_cta_scan_starts(struct gi_batch_hdr *h, uint32_t max_pkts)
{
	struct gi_rec *rec = gi_batch_recs(h);
	uint16_t *starts = gi_batch_touched(h, max_pkts);
	const struct gi_cta_scan_sum c =
		gi_cta_scan(h, h->n, [&](uint32_t i) { return gi_solo_starts_frame(rec, &rec[i]); },
			    [&](uint32_t i, uint32_t pos, uint32_t) { starts[pos] = (uint16_t)i; });
	if (threadIdx.x == 0)
		h->solo_frames = c.n;
	__syncthreads();
}

#define GI_TRIP_FN __device__ static void gi_cta_trip
#define GI_TRIP_BE struct gi_cta_trip_be
#define GI_TRIP_FOR(step, w, nw) for (uint32_t w = threadIdx.x, nw = blockDim.x, once_ = 1; once_; once_ = 0)
/* payloads by the warps from w0 on: lanes per payload and payloads a warp copies at once, for this batch's size */
#define GI_CTA_PAYLOADS_FOR(w0, w, nw, lane, nlanes)                                                                  \
	for (uint32_t nlanes = gi_cuda_place_lanes_batch(be->lanes, be->chunks, (blockDim.x + 31) / 32 - (w0), t->h->n), \
		      w = (threadIdx.x / 32 - (w0)) * (32 / nlanes) + threadIdx.x % 32 / nlanes,                            \
		      nw = ((blockDim.x + 31) / 32 - (w0)) * (32 / nlanes), lane = threadIdx.x % 32 % nlanes,               \
		      once_ = threadIdx.x / 32 + 1 > (w0); once_; once_ = 0)
#define GI_TRIP_PLACE_FOR(w, nw, lane, nlanes) GI_CTA_PAYLOADS_FOR(0u, w, nw, lane, nlanes)
#define GI_TRIP_EARLY_FOR(w, nw, lane, nlanes) GI_CTA_PAYLOADS_FOR(1u, w, nw, lane, nlanes) /* beside thread 0 */
#define GI_TRIP_SOLO_FOR(lane, nlanes) for (unsigned lane = threadIdx.x, nlanes = 32, one_ = lane < 32; one_; one_ = 0)
#define GI_TRIP_COMMIT_FOR(w, nw, lane, nlanes) /* gi_cuda_commit_lanes: a thread a stream, or a warp for one */ \
	for (uint32_t nlanes = gi_cuda_commit_lanes(t->n_streams, blockDim.x), w = threadIdx.x / nlanes,           \
		      nw = blockDim.x / nlanes, lane = threadIdx.x % nlanes, once_ = 1; once_; once_ = 0)
#define GI_TRIP_ONE if (threadIdx.x == 0)
#define GI_TRIP_BARRIER() __syncthreads()
#define GI_TRIP_ALL(x) ((uint32_t)__syncthreads_and((int)(x)))
#define GI_TRIP_ANY(x) ((uint32_t)__syncthreads_or((int)(x)))
#define GI_TRIP_SCAN_RANKS(t, be) ((t)->n_streams == 1 ? (gi_cta_scan_ranks((t)->h), 1u) : 0u)
#define GI_TRIP_SCAN_STARTS(t, be) gi_cta_scan_starts((t)->h, (t)->max_pkts)
#define GI_TRIP_MARK(step) gi_cta_mark(be, step)
#define GI_TRIP_BESIDE(t, be) gi_cta_beside(t, be)
#include "trip_body.h"

/*
 * One thread: hand the served slot back.  One system fence for the
 * batch's end (every thread's reads and writes before the last barrier,
 * cumulatively): the tail that hands the slot back, then the streams'
 * next_frame, both after it and so after the frames' even seq words
 * (gi_stream_make_visible, late_next).  The tail's store is the release
 * (the emulation's ThreadSanitizer sees no stand-alone fence).
 */
__device__ static void gi_cta_complete(const struct gi_cuda_args &a, uint32_t ri, uint64_t idx)
{
	const struct gi_cuda_group &grp = a.groups[blockIdx.x];

	gi_ring_complete(a.rings[ri].ring, idx);
	for (uint32_t k = 0; k < grp.n_streams; k++)
		gi_stream_publish_next(&a.state->ctx.streams[a.group_streams[grp.first_stream + k]], 1);
}

/*
 * Every thread: the batch's end (gi_cta_serve).  Counters, their mirrors,
 * then the slot back: now, or (the next batch staged beside the trip)
 * by the next batch's last thread.  What it needs it reads anew from cc
 * (shared memory), not from registers kept across the trip.
 */
__device__ static void gi_cta_end(const struct gi_cuda_args &a, uint8_t *smem, struct gi_cta_trip_be *be)
{
	struct gi_cta_ctl *cc = (struct gi_cta_ctl *)smem;
	const uint32_t tid = threadIdx.x, g = blockIdx.x;
	struct gi_exec_counters *const ctr = gi_cta_ctr(smem);

	if (tid == 0) {
		const uint64_t now = cc->now, t1 = gi_dev_now(a.clock_offset_ns);
		const struct gi_batch_slot *stg = gi_cta_slot_buf(a, smem, cc->cur_buf);
		gi_batch_end((struct gi_batch_hdr *)(smem + a.scratch_off), ctr);
		gi_hist_observe(&ctr->batch_latency, t1 > stg->t_publish_ns ? t1 - stg->t_publish_ns : 0);
		gi_hist_observe(&ctr->batch_service, t1 - now);
		GI_COUNTER_ADD(&ctr->busy_ns, t1 - now);
		GI_COUNTER_ADD(&ctr->loops, 1);
	}
	__syncthreads();
	/* the group's executor and stream counters reach the host before the
	 * slot does: a reader that sees tail move also sees that batch counted,
	 * as on the host backend, and a snapshot is at most the batch in
	 * flight behind (kernels/README.md, counter mirrors) */
	gi_mirror_streams(a, g);
	gi_mirror_ctr(a, g, ctr);
	__syncthreads();
	if (tid == 0) {
		/* the slot back now, or (the next batch staged) by the next batch's last thread
		 * while the others parse it: its fence then waits beside their work (gi_cta_serve),
		 * or, should the CTA do anything else first, by the poll (gi_cta_poll) */
		const uint32_t ri = cc->ring;
		const uint64_t idx = cc->idx;
		if (cc->pre_valid) {
			cc->done_pending = 1;
			cc->done_ring = ri;
			cc->done_idx = idx;
		} else {
			gi_cta_complete(a, ri, idx);
		}
		a.rings[ri].tail = idx + 1; /* the CTA's own: served up to here */
		cc->dirty = 1;
		cc->empty = 0;
		cc->sleep_ns = GI_IDLE_MIN_SLEEP_NS;
	}
	gi_cta_mark(be, GI_STEP_END);
	if (be->timing) { /* mirrored with the next batch's counters (or the idle mirror) */
		ctr->step_batches++;
		cc->t_done = cc->t_mark;
	}
}

/*
 * Every thread: one batch (cc->ring, cc->idx, cc->now, set by thread 0
 * before a barrier): staged (or found staged), through the trip, then the
 * slot goes back to the rx lcore (gi_cta_end).  The caller has acquired a
 * head > idx in thread 0 and passed a barrier since, which carries that
 * ordering to every thread.  ahead: stage ahead (above).  Inlined, as is
 * gi_cta_run: past nvcc's budget each became a call, spilling around it.
 */
__device__ static __forceinline__ void gi_cta_serve(const struct gi_cuda_args &a, uint8_t *smem, uint32_t ahead)
{
	struct gi_cta_ctl *cc = (struct gi_cta_ctl *)smem;
	const uint32_t tid = threadIdx.x, g = blockIdx.x;
	const uint32_t ri = cc->ring;
	const uint64_t idx = cc->idx;
	const struct gi_cuda_group &grp = a.groups[g];
	const uint32_t pre = cc->pre_valid && cc->pre_ring == ri && cc->pre_idx == idx; /* staged beside the last trip */
	const uint32_t buf = pre ? cc->pre_buf : cc->cur_buf;
	struct gi_batch_slot *stg = gi_cta_slot_buf(a, smem, buf);
	struct gi_batch_hdr *h = (struct gi_batch_hdr *)(smem + a.scratch_off);
	struct gi_exec_counters *const ctr = gi_cta_ctr(smem);
	struct gi_cta_trip_be be = { .a = &a, .smem = smem, .cc = cc, .ctr = ctr, .clock_offset_ns = a.clock_offset_ns,
				     .timing = a.timing && tid == 0, .lanes = grp.lanes, .chunks = grp.chunks };

	if (be.timing) {
		ctr->step_ns[GI_STEP_POLL] += cc->t_done && cc->now > cc->t_done ? cc->now - cc->t_done : 0;
		cc->t_mark = cc->now;
	}
	if (pre) {
		if (tid == 0)
			gi_batch_begin(h, stg->n_pkts); /* clamped when staged */
	} else {
		/* the last thread reads ahead the ring the next poll looks at first (cc->rr, as the poll moved it) */
		const uint32_t n0 = gi_cta_stage(a, cc, stg, ri, idx, 0, ahead, grp.first_ring + cc->rr);
		if (tid == 0)
			gi_batch_begin(h, n0);
	}
	__syncthreads();
	if (tid == 0) { /* every thread has read pre_* (above); the read-ahead's pf_* are in */
		ctr->staged_ahead += pre;
		/* stage the next batch beside this one's sequence step if the read-ahead saw it:
		 * the ring the next poll looks at first, its slot at that ring's tail once this
		 * batch is done; with a warp to stage it between that step's warps and the last */
		const uint32_t rn = grp.first_ring + cc->rr;
		const uint64_t next = rn == ri ? idx + 1 : a.rings[rn].tail;
		cc->pre_valid = ahead && a.slot2_off != a.slot_off && gi_cuda_stages_ahead(blockDim.x, grp.n_streams) &&
				cc->pf_valid && cc->pf_ring == rn && (int64_t)(cc->pf_head - next) > 0;
		cc->pre_ring = rn;
		cc->pre_idx = next;
		cc->pre_buf = buf ^ 1;
		cc->cur_buf = buf;
	}
	gi_cta_mark(&be, GI_STEP_STAGE);
	/* the last batch's slot back (gi_cta_end), beside this one's parse (cc->done_*: thread 0's
	 * before the barriers since; thread 0 reads done_pending again only in the next poll) */
	if (tid == blockDim.x - 1 && cc->done_pending) {
		gi_cta_complete(a, cc->done_ring, cc->done_idx);
		cc->done_pending = 0;
	}
	struct gi_trip t = { .ctx = &a.state->ctx, .slot = stg, .h = h, .streams = &a.group_streams[grp.first_stream],
			     .n_streams = grp.n_streams, .owner = g, .max_pkts = a.rings[ri].max_pkts,
			     .split = a.rings[ri].split, .t8 = (const uint32_t *)(smem + GI_CUDA_SMEM_TAB), .now = cc->now,
			     .icrc_inline = 0, .late_next = 1, .early = blockDim.x >= 64u };
	gi_cta_trip(&t, &be);
	gi_cta_end(a, smem, &be);
}

/* Every thread: timeouts (or the final flush) of the group's streams, then mirror everything (ctr: the counters). */
__device__ static void gi_cta_tick(const struct gi_cuda_args &a, uint64_t now, uint32_t flush,
				   const struct gi_exec_counters *ctr)
{
	const struct gi_cuda_group &grp = a.groups[blockIdx.x];
	for (uint32_t k = threadIdx.x; k < grp.n_streams; k += blockDim.x) {
		struct gi_stream_rt *st = &a.state->ctx.streams[a.group_streams[grp.first_stream + k]];
		if (flush)
			gi_stream_flush(st, now);
		else
			gi_stream_tick(st, now);
	}
	__syncthreads();
	gi_mirror_streams(a, blockIdx.x);
	gi_mirror_ctr(a, blockIdx.x, ctr);
}

/* Thread 0: is the next slot of the ring the poll looks at first staged already (gi_cta_beside)? */
__device__ static inline int gi_cta_staged(const struct gi_cuda_args &a, const struct gi_cta_ctl *cc)
{
	const struct gi_cuda_group &grp = a.groups[blockIdx.x];
	const uint32_t r0 = grp.first_ring + cc->rr;

	return grp.n_rings && cc->pre_valid && cc->pre_ring == r0 && cc->pre_idx == a.rings[r0].tail;
}

/* Thread 0: serve the k-th of the group's rings from the round-robin start; the next start is the one after. */
__device__ static void gi_cta_take(const struct gi_cuda_args &a, struct gi_cta_ctl *cc, uint32_t k)
{
	const struct gi_cuda_group &grp = a.groups[blockIdx.x];
	const uint32_t r = grp.first_ring + (cc->rr + k) % grp.n_rings;

	cc->action = GI_ACT_SERVE;
	cc->ticked = 0;
	cc->ring = r;
	cc->idx = a.rings[r].tail;
	cc->rr = (cc->rr + k + 1) % grp.n_rings;
}

/*
 * Thread 0 of a persistent CTA: wait for the next thing to do.  Reads each
 * ring's head; only when none has work, each ring's stop word, then (after
 * a system fence) its head again: a head read after seeing stop is the
 * final one.  `paused` is read after both: the host clears it before it
 * sets stop, so a CTA that sees every ring stopped also sees paused == 0
 * and drains instead of leaving.
 */
__device__ static void gi_cta_poll(const struct gi_cuda_args &a, struct gi_cta_ctl *cc)
{
	const struct gi_cuda_group &grp = a.groups[blockIdx.x];
	struct gi_exec_counters *ctr = gi_cta_ctr((uint8_t *)cc);

	for (;;) {
		/* the batch just served is not handed back yet (gi_cta_end): when the next one is staged
		 * and nothing else is due, serve it, which hands the last one back beside its parse;
		 * otherwise hand it back now, before anything else */
		if (cc->done_pending) {
			/* `paused` as the read-ahead saw it, beside the last batch's trip: a
			 * pause the host set since then takes effect one batch later */
			const uint64_t now = gi_dev_now(a.clock_offset_ns);
			if (gi_cta_staged(a, cc) && cc->pf_paused_valid && cc->pf_paused == GI_EXEC_RUN &&
			    !(now >= cc->next_tick && !cc->ticked)) {
				cc->pf_paused_valid = 0;
				cc->now = now;
				gi_cta_take(a, cc, 0);
				return;
			}
			gi_cta_complete(a, cc->done_ring, cc->done_idx);
			cc->done_pending = 0;
		}
		uint32_t all_stopped = 1, found = grp.n_rings, paused;
		/* under load the batch is known already: staged beside the last batch's
		 * trip, or seen by the read-ahead (used once) */
		if (grp.n_rings) {
			const uint32_t r0 = grp.first_ring + cc->rr;
			if (gi_cta_staged(a, cc)) {
				found = 0;
			} else if (cc->pf_valid && cc->pf_ring == r0 && (int64_t)(cc->pf_head - a.rings[r0].tail) > 0) {
				/* ahead of the tail, not just unequal: every path keeps the
				 * read-ahead's head at or past the tail, and were one ever behind
				 * it, this would not serve a slot not yet published */
				found = 0;
				cc->pf_valid = 0;
			}
		}
		/* `paused` as read ahead with it, else in the same PCIe round trip as
		 * the first doorbell (before its fence, not after it) */
		paused = cc->pf_paused_valid ? cc->pf_paused : GI_LOAD_RELAXED_U32(&a.ctl->paused);
		cc->pf_paused_valid = 0;
		/* otherwise one round trip per ring, the doorbell */
		for (uint32_t k = 0; k < grp.n_rings && found == grp.n_rings; k++) {
			uint32_t r = grp.first_ring + (cc->rr + k) % grp.n_rings;
			if (GI_LOAD_ACQUIRE_U64(&a.rings[r].ring->head) != a.rings[r].tail)
				found = k;
		}
		/* idle: stopped?  Each stop word, then (fenced) its head once more */
		for (uint32_t k = 0; k < grp.n_rings && found == grp.n_rings; k++) {
			uint32_t r = grp.first_ring + (cc->rr + k) % grp.n_rings;
			const struct gi_batch_ring *ring = a.rings[r].ring;
			all_stopped &= GI_LOAD_RELAXED_U64(&ring->stop) != 0;
			__threadfence_system();
			if (GI_LOAD_ACQUIRE_U64(&ring->head) != a.rings[r].tail)
				found = k;
		}
		if (grp.n_rings == 0)
			all_stopped = GI_LOAD_RELAXED_U32(&a.ctl->quit) != 0;
		if (found == grp.n_rings) /* idle: after the stop words and heads (above) */
			paused = GI_LOAD_RELAXED_U32(&a.ctl->paused);
		uint64_t now = gi_dev_now(a.clock_offset_ns);
		cc->now = now;
		/* every tick_ns, busy or not: frame timeouts, and the stream counters
		 * the stats thread reads (as the host executor ticks between batches);
		 * with work waiting, at least one batch between ticks, whatever a
		 * tick costs */
		uint32_t tick_due = now >= cc->next_tick;
		if (tick_due && !cc->ticked) {
			cc->next_tick = now + a.tick_ns;
			cc->dirty = 0;
			cc->ticked = 1;
			cc->action = GI_ACT_TICK;
			return;
		}
		if (paused == GI_EXEC_RUN && found < grp.n_rings) {
			gi_cta_take(a, cc, found);
			return;
		}
		/* progress only for a pass that looked at every ring with nothing left
		 * (the host backend's rule): never while paused or hung */
		if (paused == GI_EXEC_RUN)
			GI_COUNTER_ADD(&ctr->loops, 1);
		/* hung (test hook): ignore stop, as a kernel stuck in a body would */
		if (all_stopped && found == grp.n_rings && paused != GI_EXEC_HANG) {
			cc->action = GI_ACT_EXIT;
			return;
		}
		if (tick_due) { /* idle: ticks are all there is to do */
			cc->next_tick = now + a.tick_ns;
			cc->dirty = 0;
			cc->action = GI_ACT_TICK;
			return;
		}
		if (cc->dirty) { /* went idle: the host sees final stream counters now, not at the next tick */
			cc->dirty = 0;
			cc->action = GI_ACT_MIRROR;
			return;
		}
		if (a.idle == GI_IDLE_ADAPTIVE && ++cc->empty >= GI_IDLE_SPINS_BEFORE_SLEEP) {
			/* fewer PCIe reads while idle; never longer than a tick */
			__nanosleep((uint32_t)GI_MIN((uint64_t)cc->sleep_ns, a.tick_ns));
			if (cc->sleep_ns < GI_IDLE_MAX_SLEEP_NS)
				cc->sleep_ns *= 2;
		}
	}
}

/*
 * Thread 0 of a launch-mode CTA (k_pass): the next slot of the group's
 * rings, each served up to the head it had when the pass reached it and
 * no further (under sustained load the pass ends and the tick queued
 * behind it runs); GI_ACT_EXIT once every ring is done, or at once when
 * the host has paused the executor.
 */
__device__ static void gi_cta_pass_next(const struct gi_cuda_args &a, struct gi_cta_ctl *cc)
{
	const struct gi_cuda_group &grp = a.groups[blockIdx.x];

	cc->now = gi_dev_now(a.clock_offset_ns);
	for (; cc->pass_ring < grp.n_rings; cc->pass_ring++, cc->pass_head = GI_PASS_UNREAD) {
		const uint32_t r = grp.first_ring + cc->pass_ring;
		if (cc->pass_head == GI_PASS_UNREAD)
			cc->pass_head = GI_LOAD_ACQUIRE_U64(&a.rings[r].ring->head);
		if (GI_LOAD_RELAXED_U32(&a.ctl->paused) != GI_EXEC_RUN)
			continue;
		if (cc->pass_head != a.rings[r].tail) {
			cc->action = GI_ACT_SERVE;
			cc->ring = r;
			cc->idx = a.rings[r].tail;
			return;
		}
	}
	gi_cta_ctr((uint8_t *)cc)->loops++;
	cc->action = GI_ACT_EXIT;
}

/*
 * Both modes' CTA: thread 0 decides (persistent: gi_cta_poll; a launched
 * pass: gi_cta_pass_next), a barrier hands the decision to every thread,
 * every thread acts on it, a barrier ends the step.  One loop for both on
 * purpose: every single-thread block is followed by a barrier before the
 * next test of threadIdx.x.  k_pass used to open each ring with a
 * thread-0 block right before its loop's own thread-0 block; ptxas merged
 * the two tests into one branch that entered the loop past its head, and
 * with two entries the loop got no reconvergence point: warp 0 reached the
 * barrier without thread 0 (compute-sanitizer synccheck: "Divergent
 * thread(s) in warp"), its threads then ran one barrier out of step
 * (racecheck: gi_batch_begin against gi_phase_icrc) until a barrier
 * trapped (CUDA_ERROR_ILLEGAL_INSTRUCTION) whenever a CTA had more than
 * one warp.  The CUDA emulation cannot see that class: the source is
 * barrier-correct, the divergence is in the compiled code.
 */
template <bool PASS>
__device__ static __forceinline__ void gi_cta_run(const struct gi_cuda_args &a, uint8_t *smem)
{
	struct gi_cta_ctl *cc = (struct gi_cta_ctl *)smem;

	gi_cta_init(a, smem);
	for (;;) {
		if (threadIdx.x == 0) {
			if (PASS)
				gi_cta_pass_next(a, cc);
			else
				gi_cta_poll(a, cc);
		}
		__syncthreads();
		const uint32_t act = cc->action;
		if (act == GI_ACT_SERVE) {
			gi_cta_serve(a, smem, !PASS && blockDim.x >= 64u); /* a warp to stage, the last to read ahead */
		} else if (act == GI_ACT_TICK) {
			gi_cta_tick(a, cc->now, 0, gi_cta_ctr(smem));
		} else if (act == GI_ACT_MIRROR) {
			gi_mirror_streams(a, blockIdx.x);
			gi_mirror_ctr(a, blockIdx.x, gi_cta_ctr(smem));
		} else {
			if (!PASS) /* persistent: every ring stopped and drained */
				gi_cta_tick(a, cc->now, 1, gi_cta_ctr(smem));
			else /* the pass's counters for the next kernel of the group */
				gi_mirror_ctr(a, blockIdx.x, gi_cta_ctr(smem));
			return;
		}
		__syncthreads(); /* nobody reads cc when thread 0 writes it again */
	}
}

extern "C" __global__ void __launch_bounds__(GI_EXEC_MAX_CTA, 1) k_persistent(const struct gi_cuda_args a)
{
	GI_EXTERN_SHARED(uint8_t, smem);
	gi_cta_run<false>(a, smem);
}

extern "C" __global__ void __launch_bounds__(GI_EXEC_MAX_CTA, 1) k_pass(const struct gi_cuda_args a)
{
	GI_EXTERN_SHARED(uint8_t, smem);
	gi_cta_run<true>(a, smem);
}

extern "C" __global__ void __launch_bounds__(GI_EXEC_MAX_CTA, 1) k_tick(const struct gi_cuda_args a, uint32_t flush)
{
	GI_EXTERN_SHARED(uint8_t, smem);
	struct gi_cta_ctl *cc = (struct gi_cta_ctl *)smem;

	if (threadIdx.x == 0) {
		cc->now = gi_dev_now(a.clock_offset_ns);
		GI_COUNTER_ADD(&a.ctr[blockIdx.x].loops, 1);
	}
	__syncthreads();
	gi_cta_tick(a, cc->now, flush, &a.ctr[blockIdx.x]); /* no shared copy here: ctr[g] itself */
}

extern "C" __global__ void k_clock_probe(struct gi_cuda_ctl *ctl)
{
	uint64_t t = gi_dev_now(0);
	GI_STORE_RELAXED_U64(&ctl->probe_gt, t);
	__threadfence_system(); /* push it out now rather than when the kernel ends */
}

/* The emulation's module image (nothing under nvcc: the fatbin is the image). */
GI_KERNEL_TABLE(gi_exec_cuda_image, k_persistent, k_pass, k_tick, k_clock_probe)
