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

/* Stream si's round (trip.h: a worker per stream, the lanes of one warp on the GPU's one stream); late_next:
 * the batch's end moves next_frame. */
GI_HD static inline void gi_phase_commit_stream(struct gi_exec_ctx *ctx, uint32_t si, int late_next, uint32_t lane,
						uint32_t nlanes)
{
	gi_stream_make_visible(&ctx->streams[si], late_next, lane, nlanes);
}

GI_EXTERN_C_END

#endif /* GI_PHASE_COMMIT_H */
