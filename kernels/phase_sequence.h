/*
 * phase_sequence.h — phase 2 of a batch: each stream's packets in batch
 * order (batch.h).
 *
 * gi_phase_sequence_rec() takes one record of a stream through the three
 * steps of stream.h — locate, open, commit — with the stream in deferred
 * mode: every decision the serial path makes for that packet is made here,
 * in the same order (lateness, window pushes, duplicates, completion), but
 * the frames that become final stay invisible until phase 4.  Streams are
 * independent, so one worker per stream (a GPU thread scanning the records
 * for its stream) and one worker for all of them in batch order (the host)
 * reach the same state.
 *
 * A record whose frame would reuse the slot of a frame finalised in this
 * batch stalls its stream: the record keeps its place (frame, index) and
 * the batch takes another round after phase 4 has made that frame visible.
 */
#ifndef GI_PHASE_SEQUENCE_H
#define GI_PHASE_SEQUENCE_H

#include "batch.h"

GI_EXTERN_C_BEGIN

/* Put stream `st` in deferred mode for this round (its worker, before its first record). */
GI_HD static inline void gi_phase_sequence_begin(struct gi_stream_rt *st)
{
	st->defer = 1;
	st->stall = 0;
}

/*
 * One record of a stream in deferred mode.  Returns 1 when the stream
 * stalled (this record and the stream's later ones wait for the next
 * round), else 0.
 */
GI_HD static inline uint32_t gi_phase_sequence_rec(struct gi_stream_rt *st, struct gi_batch_hdr *h, struct gi_rec *r,
						   uint64_t now)
{
	struct gi_frame_slot *s;
	uint32_t drop;

	if (st->stall)
		return 1;
	if (r->state == GI_REC_PARSED) {
		if (gi_seq_locate(st, &r->pi, now, &r->frame, &r->index, &drop) != GI_SEQ_PLACE) {
			if (drop < GI_DROP__COUNT)
				gi_batch_drop(h, r, drop);
			else
				r->state = GI_REC_DONE; /* late */
			return 0;
		}
		r->state = GI_REC_LOCATED;
	}
	switch (gi_seq_open(st, &r->pi, r->frame, r->index, now, &s)) {
	case GI_SEQ_STALL:
		return 1;
	case GI_SEQ_DONE:
		r->state = GI_REC_DONE; /* duplicate */
		return 0;
	default:
		break;
	}
	r->state = GI_REC_PLACE;
	gi_seq_commit(st, s, r->frame, r->pi.payload_len, r->pi.closes_frame, now);
	return 0;
}

/*
 * GPU form: worker for stream `si` scans the batch for its records.
 * Returns 1 when the stream stalled (another round is needed).
 */
GI_HD static inline uint32_t gi_phase_sequence_stream(struct gi_exec_ctx *ctx, uint32_t si, struct gi_batch_hdr *h,
						      uint64_t now)
{
	struct gi_rec *rec = gi_batch_recs(h);
	struct gi_stream_rt *st = &ctx->streams[si];
	uint32_t began = 0;

	for (uint32_t i = 0; i < h->n; i++) {
		struct gi_rec *r = &rec[i];
		if (r->stream != si)
			continue;
		if (r->state == GI_REC_PLACE) /* copied in the previous round */
			r->state = GI_REC_DONE;
		if (r->state != GI_REC_PARSED && r->state != GI_REC_LOCATED)
			continue;
		if (!began) {
			gi_phase_sequence_begin(st);
			began = 1;
		}
		if (gi_phase_sequence_rec(st, h, r, now))
			return 1;
	}
	return 0;
}

/*
 * Host form: one worker, every record in batch order; the streams it put
 * in deferred mode are listed in touched[] for phase 4.  Returns 1 when a
 * stream stalled.
 */
GI_HD static inline uint32_t gi_phase_sequence_all(struct gi_exec_ctx *ctx, struct gi_batch_hdr *h, uint32_t max_pkts,
						   uint64_t now)
{
	struct gi_rec *rec = gi_batch_recs(h);
	uint16_t *touched = gi_batch_touched(h, max_pkts);
	uint32_t more = 0;

	for (uint32_t i = 0; i < h->n; i++) {
		struct gi_rec *r = &rec[i];
		if (r->state == GI_REC_PLACE) /* copied in the previous round */
			r->state = GI_REC_DONE;
		if (r->state != GI_REC_PARSED && r->state != GI_REC_LOCATED)
			continue;
		struct gi_stream_rt *st = &ctx->streams[r->stream];
		if (!st->defer) {
			gi_phase_sequence_begin(st);
			touched[h->n_touched++] = r->stream;
		}
		more |= gi_phase_sequence_rec(st, h, r, now);
	}
	return more;
}

GI_EXTERN_C_END

#endif /* GI_PHASE_SEQUENCE_H */
