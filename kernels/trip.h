/*
 * trip.h — one batch's trip through the executor, as every backend runs
 * it: the steps of steps.h in order, each a body from the file that bears
 * its phase's name, that worker w of nw runs:
 *
 *   parse     phase_parse.h     gi_phase_parse          a worker per packet
 *   icrc      phase_parse.h     gi_phase_icrc           a worker per rocev2 ICRC left pending
 *   scan      phase_sequence.h  (backend: GI_TRIP_SCAN_RANKS)   one stream: ranks and predecessors
 *   run       phase_sequence.h  gi_phase_run_place, then gi_phase_run_link (their AND: one in-order run?)
 *   scan      phase_sequence_solo.h  (backend: GI_TRIP_SCAN_STARTS)  one stream's run: its frames' first records
 *   sequence  phase_sequence_solo.h  gi_solo_enter, gi_solo_finish (a warp's lanes) beside phase_place.h's
 *                               gi_phase_place_early, gi_phase_solo_place; or phase_sequence.h's
 *                               gi_phase_sequence_stream
 *   place     phase_place.h     gi_phase_place          a worker per payload, lanes per chunk
 *   verify    stream_publish.h  gi_stream_pending_pass  a sender's frame CRC, in slices
 *   commit    phase_commit.h    gi_phase_commit_stream  a worker per stream (GPU, one stream: a warp)
 *   (sequence .. commit again while a stream stalled on a busy slot)
 *
 * The trip itself is written once, in trip_body.h, which a backend
 * includes after defining how a step's workers run (the hooks listed
 * there): the GPU's CTA runs them all at once and meets at a barrier
 * (kernels/exec_cuda.cu), the host runs them one after another
 * (executor_host.c: one worker; tests/unit/exec_fixture.h: several, as
 * the GPU splits them).  Staging the slot (the GPU's, batch.h) comes
 * before and the batch's end (counters, the slot back) after, in the
 * backend.
 */
#ifndef GI_TRIP_H
#define GI_TRIP_H

#include "phase_commit.h"
#include "phase_parse.h"
#include "phase_place.h"
#include "phase_sequence_solo.h"
#include "steps.h"

GI_EXTERN_C_BEGIN

struct gi_trip {
	struct gi_exec_ctx *ctx;
	struct gi_batch_slot *slot;  /* the batch's descriptors (the GPU: staged in shared memory) */
	struct gi_batch_hdr *h;      /* its records and scratch, begun (gi_batch_begin) */
	const uint16_t *streams;     /* the group's streams; NULL: every stream of ctx, 0 .. n_streams - 1 */
	uint32_t n_streams;
	uint32_t owner;              /* parse: the group whose streams these are (GI_GROUP_ANY: every group) */
	uint32_t max_pkts, split;    /* the slot's geometry */
	const uint32_t *t8;          /* CRC-32 slice-by-8 tables (the GPU's shared memory), NULL on the host */
	uint64_t now;
	uint32_t icrc_inline;        /* parse checks rocev2 ICRCs itself (one worker a packet anyway) */
	uint32_t late_next;          /* commit leaves next_frame to the batch's end (the GPU's last fence) */
	uint32_t early;              /* GI_TRIP_EARLY_FOR has workers: payloads copied beside 2b (trip_body.h) */
};

/* The group's k-th stream. */
GI_HD static inline uint32_t gi_trip_stream(const struct gi_trip *t, uint32_t k)
{
	return t->streams ? t->streams[k] : k;
}

GI_EXTERN_C_END

#endif /* GI_TRIP_H */
