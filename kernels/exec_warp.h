/*
 * exec_warp.h — one batch slot through the shared bodies by one warp.
 *
 * The CUDA executor (exec_cuda.cu) serves a slot with one warp of 32 lanes:
 *
 *     gi_slot_stage()      all lanes: copy the slot's descriptors out of
 *                          host-mapped memory in parallel (one PCIe round
 *                          trip per 32 words instead of two per packet)
 *     gi_exec_slot_warp()  per packet: lane 0 classifies (stream.h), the
 *                          warp copies the payload, lane 0 commits
 *
 * Both are GI_HD so that the unit tests run this very control flow on the
 * CPU.  On the device each lane calls them with its own `lane` and
 * GI_WARP_SYNC() is __syncwarp().  On the host there is one caller that
 * passes lane 0 and `nlanes` emulated lanes: the copy step then runs every
 * lane's share in turn (lane 0..nlanes-1), which is exactly the partitioning
 * the GPU uses, so a test proves each payload byte is written once.
 *
 * Single writer: only lane 0 touches stream state and counters; the other
 * lanes only move payload bytes.  `sh` is warp-shared scratch (CUDA shared
 * memory on the device) through which lane 0 hands the placement to the
 * warp; __syncwarp() orders lane 0's writes of it before the other lanes'
 * reads, and the lanes' payload stores before lane 0's commit (whose
 * publication fence then covers them, see kernels/README.md).
 *
 * Called from: the CUDA kernels, and unit tests on any thread.
 */
#ifndef GI_EXEC_WARP_H
#define GI_EXEC_WARP_H

#include "stream.h"

GI_EXTERN_C_BEGIN

#define GI_WARP_LANES 32u

/* Lane 0 → warp: where the current packet's payload goes. */
struct gi_warp_shared {
	struct gi_place pl;
	uint32_t go;   /* 1: copy and commit pl; 0: the packet was accounted for by classify */
	uint32_t pad;
};

#if defined(__CUDA_ARCH__)
#define GI_WARP_SYNC() __syncwarp()
/* each lane moves its own chunks */
#define GI_WARP_COPY(pl, lane, nlanes) gi_place_copy((pl), (lane), (nlanes))
#else
#define GI_WARP_SYNC() do { } while (0)
/* one host caller plays every lane, in lane order */
#define GI_WARP_COPY(pl, lane, nlanes)                              \
	do {                                                        \
		(void)(lane);                                       \
		for (uint32_t l_ = 0; l_ < (nlanes); l_++)          \
			gi_place_copy((pl), l_, (nlanes));          \
	} while (0)
#endif

/*
 * Copy what gi_exec_slot_warp() reads of `src` (header, and the first
 * n_pkts entries of each descriptor array) to `dst`, a buffer of the slot's
 * stride, at the same offsets, so the gi_slot_*() accessors work on the
 * copy.  Lane `lane` of `nlanes` copies words lane, lane + nlanes, …; each
 * lane reads n_pkts itself, so no synchronisation is needed inside.  The
 * loads are relaxed (volatile on the device): the caller has already
 * acquired the doorbell.  Returns n_pkts, clamped to max_pkts so a corrupt
 * producer cannot send the executor past the slot.
 */
GI_HD static inline uint32_t gi_slot_stage(struct gi_batch_slot *dst, struct gi_batch_slot *src, uint32_t max_pkts,
					   uint32_t split, uint32_t lane, uint32_t nlanes)
{
	const uint64_t *s64 = (const uint64_t *)src;
	uint64_t *d64 = (uint64_t *)dst;
	uint32_t n = GI_LOAD_RELAXED_U32(&src->n_pkts);

	if (n > max_pkts)
		n = max_pkts;
	for (uint32_t w = lane; w < sizeof(*src) / 8; w += nlanes)
		d64[w] = GI_LOAD_RELAXED_U64(&s64[w]);
	if (lane == 0)
		dst->n_pkts = n;

	uint64_t *sa = gi_slot_addr(src), *da = gi_slot_addr(dst);
	uint32_t *sl = gi_slot_len(src, max_pkts), *dl = gi_slot_len(dst, max_pkts);
	for (uint32_t i = lane; i < n; i += nlanes) {
		da[i] = GI_LOAD_RELAXED_U64(&sa[i]);
		dl[i] = GI_LOAD_RELAXED_U32(&sl[i]);
	}
	if (split) {
		uint64_t *sa1 = gi_slot_addr1(src, max_pkts), *da1 = gi_slot_addr1(dst, max_pkts);
		uint32_t *sl0 = gi_slot_len0(src, max_pkts), *dl0 = gi_slot_len0(dst, max_pkts);
		for (uint32_t i = lane; i < n; i += nlanes) {
			da1[i] = GI_LOAD_RELAXED_U64(&sa1[i]);
			dl0[i] = GI_LOAD_RELAXED_U32(&sl0[i]);
		}
	}
	return n;
}

/*
 * Every packet of `slot` (already staged, or any memory the warp can read)
 * through classify → copy → commit, then the executor's batch counters.
 * Same result as gi_exec_slot_host(); the difference is only who copies.
 * All lanes must call it (the loop bounds are warp-uniform: n_pkts and
 * sh->go are the same for every lane after each GI_WARP_SYNC()).
 */
GI_HD static inline void gi_exec_slot_warp(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr,
					   struct gi_batch_slot *slot, uint32_t max_pkts, uint32_t split, uint64_t now,
					   uint32_t lane, uint32_t nlanes, struct gi_warp_shared *sh)
{
	uint32_t n = slot->n_pkts;

	if (n > max_pkts)
		n = max_pkts;
	for (uint32_t i = 0; i < n; i++) {
		if (lane == 0) {
			struct gi_pkt_desc d;
			gi_slot_pkt(slot, max_pkts, split, i, &d);
			sh->go = (uint32_t)gi_exec_classify(ctx, ctr, slot->port, d.pkt, d.len, d.seg1, d.hdr_len, now,
							    &sh->pl);
		}
		GI_WARP_SYNC(); /* lane 0's sh → every lane */
		if (sh->go) {
			GI_WARP_COPY(&sh->pl, lane, nlanes);
			GI_WARP_SYNC(); /* every lane's payload stores → lane 0's commit/publication */
			if (lane == 0)
				gi_exec_commit(ctx, &sh->pl, now);
		}
		GI_WARP_SYNC(); /* nobody still reads sh when lane 0 overwrites it */
	}
	if (lane == 0) {
		GI_COUNTER_ADD(&ctr->packets, n);
		GI_COUNTER_ADD(&ctr->batches, 1);
	}
}

GI_EXTERN_C_END

#endif /* GI_EXEC_WARP_H */
