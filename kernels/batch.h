/*
 * batch.h — the phased executor's per-batch scratch: one record per packet.
 *
 * DESIGN.  A batch goes through four phases with a barrier between them
 * (DESIGN.md "The executor works in phases"):
 *
 *   1  parse        phase_parse.h     one worker per packet: headers, stream,
 *                                     format fields -> a record; drops counted
 *                                     per batch (1b: a rocev2 ICRC per warp)
 *   2  sequence     phase_sequence.h  2a (one worker per packet): would the
 *                                     stream's packets be one in-order run?
 *                                     2b (one worker per stream): if so, per
 *                                     frame: open, bits, counts, publication;
 *                                     else its packets in batch order through
 *                                     the serial steps (lateness, window,
 *                                     duplicates, ...); final frames are not
 *                                     yet visible
 *   3  place        phase_place.h     one worker (a warp) per packet: copy
 *   4  commit       phase_commit.h    one worker per stream (the GPU's one
 *                                     stream: a warp): the final frames
 *                                     and next_frame become visible
 *
 * Phase 2 makes every decision the serial path makes, in the same order, so
 * counters and frames are identical (tests/unit/test_phased.c); phases 1
 * and 3, where the time goes, are parallel.  When a stream would reuse the
 * slot of a frame that became final in this batch but is not yet visible,
 * phase 2 stops that stream and the batch takes another round of 2-3-4
 * from that packet on (rare: it needs a batch spanning the whole ring).
 *
 * The scratch is CUDA shared memory on the GPU (one CTA per ring group) and
 * a per-worker buffer on the host; its layout is the same:
 *     struct gi_batch_hdr | struct gi_rec[max_pkts] | uint16_t touched[max_pkts]
 * (touched[]: the host's streams of the round; on the GPU with one stream
 * per group, the first record of each frame the run touches).
 */
#ifndef GI_BATCH_H
#define GI_BATCH_H

#include "classify.h"

GI_EXTERN_C_BEGIN

enum gi_rec_state {
	GI_REC_DONE = 0,  /* accounted for: a drop, late, duplicate, or copied */
	GI_REC_PARSED,    /* phase 1 done */
	GI_REC_LOCATED,   /* phase 2 located it (frame, index) but its slot is busy: next round */
	GI_REC_PLACE,     /* phase 2 placed it: phase 3 copies it */
};

#define GI_REC_NONE 0xffffu

struct gi_rec {
	struct gi_pkt_info pi;  /* what the parser found */
	uint64_t frame;         /* phase 2: ring frame number */
	uint32_t index;         /* phase 2: index in the frame */
	uint16_t stream;        /* GI_STREAM_NONE when dropped before a stream was found */
	uint16_t src_off;       /* payload offset in the packet */
	uint8_t state;          /* enum gi_rec_state */
	uint8_t reason;         /* the drop reason of a dropped record, else GI_DROP__COUNT */
	/* phase 2's run check (phase_sequence.h) */
	uint8_t fast;           /* placed by gi_seq_fast_place() */
	uint8_t link;           /* ... and follows its predecessor as the run requires */
	uint16_t prev;          /* the stream's previous parsed record in the batch, GI_REC_NONE */
	uint16_t rank;          /* parsed records of its stream before it in the batch */
};
GI_STATIC_ASSERT(sizeof(struct gi_rec) == 80, "records are laid out in shared memory: 80 bytes each");

struct gi_batch_hdr {
	uint32_t n;                     /* packets in the batch */
	uint32_t round;                 /* rounds of phases 2-4 so far */
	uint32_t more;                  /* phase 2: a stream stalled, another round follows */
	uint32_t n_touched;             /* host: streams in touched[] */
	uint32_t runs;                  /* streams whose packets phase 2 took as one in-order run */
	uint32_t drops[GI_DROP__COUNT]; /* this batch's drops, by any worker (GI_ATOMIC_ADD_U32) */
	/* a group with one stream (phase_sequence_solo.h): */
	uint32_t ranked;                /* 2a's ranks and predecessors are in the records already */
	uint32_t solo_total;            /* parsed records */
	uint32_t solo_last;             /* the last of them, GI_REC_NONE */
	uint32_t solo_frames;           /* frames the run touches: their first records in touched[] */
	uint32_t solo_limit;            /* records of rank below it were placed (2b stopped there on a stall) */
	uint32_t solo_early;            /* ... and those of rank below this were copied beside 2b (phase_sequence_solo.h) */
	uint32_t solo_e;                /* 2b's first group between its two passes: its end, */
	uint32_t solo_opening;          /* the frames it opens (a bit each), */
	uint32_t solo_stalled;          /* and whether frame solo_e stalled */
	uint32_t solo_stall_rec;        /* the record of the stalled frame's start (GI_REC_NONE: none) */
	uint32_t early_copied;          /* payloads copied beside 2b (solo_early of the first round) */
	uint32_t lane_frames;           /* frames 2b sequenced a lane each (phase_sequence_solo.h, gi_solo_group_lanes) */
	uint16_t scan_n[32];            /* the GPU's block scans: count and last index per warp of a pass, */
	uint16_t scan_last[32];         /* in two halves taken by turns (exec_cuda.cu, gi_cta_scan) */
};

GI_HD static inline struct gi_rec *gi_batch_recs(struct gi_batch_hdr *h)
{
	return (struct gi_rec *)GI_ALIGN_UP((uintptr_t)(h + 1), 8);
}

GI_HD static inline uint16_t *gi_batch_touched(struct gi_batch_hdr *h, uint32_t max_pkts)
{
	return (uint16_t *)(gi_batch_recs(h) + max_pkts);
}

GI_HD static inline uint64_t gi_batch_scratch_bytes(uint32_t max_pkts)
{
	return GI_ALIGN_UP(sizeof(struct gi_batch_hdr), 8) + (uint64_t)max_pkts * sizeof(struct gi_rec) +
	       GI_ALIGN_UP((uint64_t)max_pkts * sizeof(uint16_t), 16);
}

/*
 * The slot's `stride` bytes (header and every descriptor array, whole) from
 * `src` to `dst`, at the same offsets, so the gi_slot_*() accessors work on
 * the copy: the GPU stages a slot from host-mapped memory into shared
 * memory this way.  Worker w of nw issues GI_STAGE_INFLIGHT 16-byte loads
 * before it stores any, so a slot costs one PCIe round trip per
 * GI_STAGE_INFLIGHT * 16 * nw bytes (one for every slot up to 16 KiB at
 * 256 workers): not a chain of them, n_pkts first and then the entries it
 * bounds.  The entries past n_pkts come along; beside a round trip (about
 * 1 µs) their bytes cost nothing.  Relaxed loads: the caller has acquired
 * the doorbell.  Both buffers 16-byte aligned, stride a multiple of 16
 * (gi_ring_slot_stride()).  Worker 0, which copies the first 16 bytes,
 * returns n_pkts clamped to max_pkts (and leaves that in dst), so a corrupt
 * producer cannot send the executor past the slot; the others return 0 and
 * read it from dst after the barrier that must follow.
 */
#define GI_STAGE_INFLIGHT 4u
GI_HD static inline uint32_t gi_slot_stage(struct gi_batch_slot *dst, const struct gi_batch_slot *src, uint32_t stride,
					   uint32_t max_pkts, uint32_t w, uint32_t nw)
{
	const uint64_t *s64 = (const uint64_t *)src;
	uint64_t *d64 = (uint64_t *)dst;
	const uint32_t n16 = stride / 16u;

	for (uint32_t base = w; base < n16; base += GI_STAGE_INFLIGHT * nw) {
		uint64_t lo[GI_STAGE_INFLIGHT], hi[GI_STAGE_INFLIGHT];
		GI_UNROLL
		for (uint32_t k = 0; k < GI_STAGE_INFLIGHT; k++)
			if (base + k * nw < n16)
				GI_LOAD_RELAXED_2U64(&s64[2 * (base + k * nw)], lo[k], hi[k]);
		GI_UNROLL
		for (uint32_t k = 0; k < GI_STAGE_INFLIGHT; k++)
			if (base + k * nw < n16) {
				d64[2 * (base + k * nw)] = lo[k];
				d64[2 * (base + k * nw) + 1] = hi[k];
			}
	}
	if (w != 0)
		return 0;
	if (dst->n_pkts > max_pkts)
		dst->n_pkts = max_pkts;
	return dst->n_pkts;
}

/* One worker: start a batch of n packets. */
GI_HD static inline void gi_batch_begin(struct gi_batch_hdr *h, uint32_t n)
{
	h->n = n;
	h->round = 0;
	h->more = 0;
	h->n_touched = 0;
	h->runs = 0;
	h->ranked = 0;
	h->solo_total = 0;
	h->solo_last = GI_REC_NONE;
	h->solo_frames = 0;
	h->solo_limit = 0;
	h->solo_early = 0;
	h->solo_stall_rec = GI_REC_NONE;
	h->early_copied = 0;
	h->lane_frames = 0;
	for (uint32_t r = 0; r < GI_DROP__COUNT; r++)
		h->drops[r] = 0;
}

/* Any worker: a record is accounted as a drop. */
GI_HD static inline void gi_batch_drop(struct gi_batch_hdr *h, struct gi_rec *r, uint32_t why)
{
	r->state = GI_REC_DONE;
	r->reason = (uint8_t)why;
	GI_ATOMIC_ADD_U32(&h->drops[why], 1);
}

/*
 * One worker, after the last round: the batch into the executor's
 * counters.  Every word of the batch is read before any counter is
 * written: for all the compiler knows a counter's store may change the
 * next drop count, so reading each after the add before it made the
 * GPU's thread 0 wait for a load per drop reason, in a row (sm_90 SASS).
 */
GI_HD static inline void gi_batch_end(const struct gi_batch_hdr *h, struct gi_exec_counters *ctr)
{
	uint32_t drops[GI_DROP__COUNT];
	GI_UNROLL
	for (uint32_t r = 0; r < GI_DROP__COUNT; r++)
		drops[r] = h->drops[r];
	const uint32_t n = h->n, runs = h->runs, early = h->early_copied, lanes = h->lane_frames;
	GI_UNROLL
	for (uint32_t r = 0; r < GI_DROP__COUNT; r++)
		if (drops[r])
			GI_COUNTER_ADD(&ctr->drops[r], drops[r]);
	GI_COUNTER_ADD(&ctr->packets, n);
	GI_COUNTER_ADD(&ctr->batches, 1);
	if (runs)
		GI_COUNTER_ADD(&ctr->runs, runs);
	if (early)
		GI_COUNTER_ADD(&ctr->early_copied, early);
	if (lanes)
		GI_COUNTER_ADD(&ctr->lane_frames, lanes);
}

GI_EXTERN_C_END

#endif /* GI_BATCH_H */
