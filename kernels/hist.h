/*
 * hist.h — fixed-bucket latency histogram with one writer.
 *
 * Buckets suit microsecond-to-millisecond latencies (batch publish → done,
 * first packet → frame published).  The writer is the executor; the stats
 * thread reads with relaxed loads and renders cumulative Prometheus buckets.
 */
#ifndef GI_HIST_H
#define GI_HIST_H

#include "gi_hd.h"

GI_EXTERN_C_BEGIN

#define GI_HIST_BUCKETS 17 /* 16 finite upper bounds + the +Inf bucket */

struct gi_hist {
	uint64_t count[GI_HIST_BUCKETS]; /* non-cumulative */
	uint64_t sum_ns; /* _count is the sum of count[]: no second word to drift */
};

/* Upper bounds in nanoseconds; also used by the renderer. */
#define GI_HIST_BOUNDS_NS                                                                     \
	{ 1000ull, 2500ull, 5000ull, 10000ull, 25000ull, 50000ull, 100000ull, 250000ull,       \
	  500000ull, 1000000ull, 2500000ull, 5000000ull, 10000000ull, 25000000ull, 100000000ull, \
	  1000000000ull }

GI_HD static inline uint32_t gi_hist_bucket(uint64_t ns)
{
	const uint64_t bounds[GI_HIST_BUCKETS - 1] = GI_HIST_BOUNDS_NS;
	uint32_t b = 0;
	while (b < GI_HIST_BUCKETS - 1 && ns > bounds[b])
		b++;
	return b;
}

GI_HD static inline void gi_hist_observe(struct gi_hist *h, uint64_t ns)
{
	GI_COUNTER_ADD(&h->count[gi_hist_bucket(ns)], 1);
	GI_COUNTER_ADD(&h->sum_ns, ns);
}

/*
 * The lanes of a warp observe a value each where `have` (gi_hd.h's warp
 * calls: every lane calls, converged); lane 0 adds them, a bucket at a
 * time: the same counts and sum as one gi_hist_observe() per value.
 */
GI_HD static inline void gi_hist_observe_lanes(struct gi_hist *h, uint64_t ns, uint32_t have, uint32_t lane)
{
	const uint32_t b = gi_hist_bucket(ns);
	const uint64_t sum = gi_warp_sum_u64(have ? ns : 0);
	uint32_t left = gi_warp_ballot(have);

	if (left && lane == 0)
		GI_COUNTER_ADD(&h->sum_ns, sum);
	while (left) {
		const uint32_t bb = gi_warp_from_u32(b, gi_lowest_u32(left));
		const uint32_t same = gi_warp_ballot(have && b == bb);
		if (lane == 0)
			GI_COUNTER_ADD(&h->count[bb], gi_popc_u32(same));
		left &= ~same;
	}
}

GI_EXTERN_C_END

#endif /* GI_HIST_H */
