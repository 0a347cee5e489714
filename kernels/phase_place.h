/*
 * phase_place.h — phase 3 of a batch: copy the payloads phase 2 placed
 * (batch.h).
 *
 * Worker w of nw takes records w, w + nw, ...; on the GPU a worker is a
 * warp whose lanes move 16-byte chunks (gi_copy_lanes: aligned wide
 * stores, funnel-shifted loads for a payload that starts unaligned).
 * Every record in GI_REC_PLACE has its own bit in its frame's bitmap, so
 * no two workers ever write the same bytes and no atomics are needed.
 */
#ifndef GI_PHASE_PLACE_H
#define GI_PHASE_PLACE_H

#include "batch.h"

GI_EXTERN_C_BEGIN

#if GI_GPU_CODE
/* each lane moves its own chunks */
#define GI_PLACE_LANES(pl, lane, nlanes) gi_place_copy((pl), (lane), (nlanes))
#else
/* a host caller plays every lane in turn (tests check the partition this way) */
#define GI_PLACE_LANES(pl, lane, nlanes)                            \
	do {                                                        \
		(void)(lane);                                       \
		for (uint32_t l_ = 0; l_ < (nlanes); l_++)          \
			gi_place_copy((pl), l_, (nlanes));          \
	} while (0)
#endif

/* Record i's payload by this lane of nlanes, into its frame's slot (returned); d: its descriptor. */
GI_HD static inline struct gi_frame_slot *gi_place_rec(struct gi_stream_geom *geo, const struct gi_exec_ctx *ctx,
						       const struct gi_batch_slot *slot, uint32_t max_pkts,
						       uint32_t split, const struct gi_rec *r, uint32_t i, int copy,
						       struct gi_pkt_desc *d, uint32_t lane, uint32_t nlanes)
{
	struct gi_place pl;
	gi_stream_geom_use(geo, ctx, r->stream);
	gi_slot_pkt(slot, max_pkts, split, i, d);
	struct gi_frame_slot *s = gi_geom_slot(geo, r->frame);
	if (copy) {
		gi_place_src(&pl, d, r->src_off, r->pi.payload_len);
		pl.dst = gi_geom_payload(geo, s, r->index);
		GI_PLACE_LANES(&pl, lane, nlanes);
	}
	return s;
}

/*
 * Phase 3, worker w of nw: every placed record's payload (but those
 * copied beside 2b already: rank below h->solo_early), then its notes in
 * the slot's header, which 2b may have written until the barrier before
 * (its NIC time; the sender's frame-end record).
 */
GI_HD static inline void gi_phase_place(struct gi_exec_ctx *ctx, const struct gi_batch_slot *slot, uint32_t max_pkts,
					uint32_t split, struct gi_batch_hdr *h, uint32_t w, uint32_t nw, uint32_t lane,
					uint32_t nlanes)
{
	struct gi_rec *rec = gi_batch_recs(h);
	struct gi_stream_geom geo; /* the last record's stream, loaded once (stream.h) */
	const uint32_t early = h->solo_early;
	gi_stream_geom_none(&geo);

	for (uint32_t i = w; i < h->n; i += nw) {
		struct gi_rec *r = &rec[i];
		if (r->state != GI_REC_PLACE) /* the same record for every lane: uniform */
			continue;
		struct gi_pkt_desc d;
		struct gi_frame_slot *s =
			gi_place_rec(&geo, ctx, slot, max_pkts, split, r, i, r->rank >= early, &d, lane, nlanes);
		if (lane == 0) /* min and max: the same two whatever the order of the records */
			gi_frame_nic_note(s, d.nic_ns);
		if (r->pi.meta && lane == 0) /* the sender's frame-end record (its frame number: phase 2) */
			gi_frame_sender_store(s, d.pkt, d.hdr_len, d.seg1, (uint32_t)r->src_off + r->pi.meta_rel);
		/* the record stays GI_REC_PLACE (lanes may still be reading it): the
		 * next round's phase 2 retires it */
	}
}

/*
 * Beside 2b's pass 2 (phase_sequence_solo.h, gi_solo_enter), worker w of nw:
 * the payloads of the run's records of rank below h->solo_early, nothing
 * else (their notes: phase 3).  2b writes no record meanwhile: the
 * stalled frame's first record is located after the barrier.
 */
GI_HD static inline void gi_phase_place_early(const struct gi_exec_ctx *ctx, const struct gi_batch_slot *slot,
					      uint32_t max_pkts, uint32_t split, const struct gi_batch_hdr *h,
					      uint32_t w, uint32_t nw, uint32_t lane, uint32_t nlanes)
{
	const struct gi_rec *rec = gi_batch_recs((struct gi_batch_hdr *)h);
	struct gi_stream_geom geo;
	const uint32_t early = h->solo_early;
	gi_stream_geom_none(&geo);

	for (uint32_t i = w; i < h->n && early; i += nw) {
		const struct gi_rec *r = &rec[i];
		if (r->state != GI_REC_PARSED || r->rank >= early)
			continue;
		struct gi_pkt_desc d;
		const struct gi_frame_slot *s = gi_place_rec(&geo, ctx, slot, max_pkts, split, r, i, 1, &d, lane, nlanes);
		/* its frame open, or entered by 2b's first pass before the barrier: no payload byte of a
		 * slot changes before its odd seqlock word (a slot header 2b may fill meanwhile, seq aside) */
		GI_CONTRACT(GI_LOAD_RELAXED_U64(&s->seq) == 2 * r->frame + 1);
		(void)s;
	}
}

GI_EXTERN_C_END

#endif /* GI_PHASE_PLACE_H */
