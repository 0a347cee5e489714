/*
 * phase_commit.h — phase 4 of a batch: what became final becomes visible
 * (batch.h).
 *
 * Per stream phase 2 touched: the frames it finalised get their mirror and
 * their even seqlock word, then next_frame moves (stream.h,
 * gi_stream_make_visible) — one release for the stream's frames of this
 * round instead of one per frame.  The caller has ordered every payload
 * store of phase 3 before this (a __syncthreads() on the GPU; program
 * order on the host), so the first release covers them.
 */
#ifndef GI_PHASE_COMMIT_H
#define GI_PHASE_COMMIT_H

#include "batch.h"

GI_EXTERN_C_BEGIN

/* Host form: the streams gi_phase_sequence_all() listed. */
GI_HD static inline void gi_phase_commit_all(struct gi_exec_ctx *ctx, struct gi_batch_hdr *h, uint32_t max_pkts)
{
	uint16_t *touched = gi_batch_touched(h, max_pkts);

	for (uint32_t k = 0; k < h->n_touched; k++)
		gi_stream_make_visible(&ctx->streams[touched[k]], 0);
	h->n_touched = 0;
}

GI_EXTERN_C_END

#endif /* GI_PHASE_COMMIT_H */
