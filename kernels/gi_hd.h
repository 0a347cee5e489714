/*
 * gi_hd.h — the one switch between host and device compilation.
 *
 * Every per-packet body in kernels/ is written once as `GI_HD static inline`
 * C and compiled twice: by nvcc for the CUDA executor and by the C compiler
 * for the host executor and the unit tests.  This header is the only place
 * that knows the difference: the function qualifier, the atomics, and the
 * memory fences that the batch-ring and frame-ring contracts rely on.
 *
 * Plain C11, no DPDK, no libc beyond <stdint.h>/<stddef.h>: nvcc includes it.
 */
#ifndef GI_HD_H
#define GI_HD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define GI_EXTERN_C_BEGIN extern "C" {
#define GI_EXTERN_C_END }
#else
#define GI_EXTERN_C_BEGIN
#define GI_EXTERN_C_END
#endif

#ifdef __CUDACC__
#define GI_HD __host__ __device__
#else
#define GI_HD
#endif

#if defined(__cplusplus)
#define GI_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define GI_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#define GI_CACHE_LINE 64

#if defined(__CUDA_ARCH__) && !defined(GI_CUDA_EMU)
/*
 * Device side.  Counters are single-writer per stream (one executor owns a
 * ring, a stream is steered to one ring), so plain volatile stores suffice
 * for them; the ring words are shared with the CPU across PCIe and need a
 * system-scope fence before the store that publishes them.
 *
 * Device code never writes `volatile` or a fence of its own for these
 * hand-offs: it uses these macros, which the CUDA emulation
 * (tests/cuda_emu/cuda_emu.h, GI_CUDA_EMU) defines as C11 atomics with the
 * same meaning, so the emulated kernels make the same claims a
 * ThreadSanitizer run can check.
 */
#define GI_LOAD_ACQUIRE_U64(p) \
	({ uint64_t v_ = *(volatile const uint64_t *)(p); __threadfence_system(); v_; })
#define GI_STORE_RELEASE_U64(p, v) \
	do { __threadfence_system(); *(volatile uint64_t *)(p) = (v); } while (0)
#define GI_LOAD_RELAXED_U64(p) (*(volatile const uint64_t *)(p))
#define GI_LOAD_RELAXED_U32(p) (*(volatile const uint32_t *)(p))
#define GI_STORE_RELAXED_U64(p, v) (*(volatile uint64_t *)(p) = (v))
#define GI_STORE_RELAXED_U32(p, v) (*(volatile uint32_t *)(p) = (v))
#define GI_STORE_RELEASE_U32(p, v) \
	do { __threadfence_system(); *(volatile uint32_t *)(p) = (v); } while (0)
#define GI_FENCE_RELEASE() __threadfence_system()
/* 16 bytes (16-byte aligned) fetched anew (ld.global.cv: no line a lap before left in a cache) */
#define GI_LOAD_RELAXED_2U64(p, lo, hi)                                          \
	do {                                                                     \
		const ulonglong2 v_ = __ldcv((const ulonglong2 *)(p));           \
		(lo) = v_.x;                                                     \
		(hi) = v_.y;                                                     \
	} while (0)
#elif !defined(__CUDA_ARCH__)
#define GI_LOAD_ACQUIRE_U64(p) __atomic_load_n((const uint64_t *)(p), __ATOMIC_ACQUIRE)
#define GI_STORE_RELEASE_U64(p, v) __atomic_store_n((uint64_t *)(p), (uint64_t)(v), __ATOMIC_RELEASE)
#define GI_LOAD_RELAXED_U64(p) __atomic_load_n((const uint64_t *)(p), __ATOMIC_RELAXED)
#define GI_LOAD_RELAXED_U32(p) __atomic_load_n((const uint32_t *)(p), __ATOMIC_RELAXED)
#define GI_STORE_RELAXED_U64(p, v) __atomic_store_n((uint64_t *)(p), (uint64_t)(v), __ATOMIC_RELAXED)
#define GI_STORE_RELAXED_U32(p, v) __atomic_store_n((uint32_t *)(p), (uint32_t)(v), __ATOMIC_RELAXED)
#define GI_STORE_RELEASE_U32(p, v) __atomic_store_n((uint32_t *)(p), (uint32_t)(v), __ATOMIC_RELEASE)
/* orders every earlier access before every later store (seqlock writer entry) */
#define GI_FENCE_RELEASE() __atomic_thread_fence(__ATOMIC_RELEASE)
#define GI_LOAD_RELAXED_2U64(p, lo, hi)                                          \
	do {                                                                     \
		(lo) = GI_LOAD_RELAXED_U64(p);                                   \
		(hi) = GI_LOAD_RELAXED_U64((const uint64_t *)(p) + 1);           \
	} while (0)
#endif
/* (GI_CUDA_EMU with __CUDA_ARCH__: the emulation header has defined all of the above) */

#if defined(__CUDACC__) && !defined(GI_CUDA_EMU)
/* the one clock: %globaltimer, ns (gi_dev_now() adds the host offset) */
#define GI_DEV_GLOBALTIMER() \
	({ uint64_t t_; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_)); t_; })
/* the block's dynamic shared memory, as an array `name` of T */
#define GI_EXTERN_SHARED(T, name) extern __shared__ __align__(16) T name[]
/* the emulation's table of kernels; under nvcc the fatbin is the module image */
#define GI_KERNEL_TABLE(image, ...)
#endif

/*
 * A counter with one writer and any number of readers (the stats thread):
 * a relaxed load and store, never a locked read-modify-write on the hot path.
 * On the device a plain add: the host never reads a device counter, only
 * its mirror, which the CTA copies after a __syncthreads() that orders
 * every add before it (exec_cuda.cu, gi_cta_end).  A volatile add was an
 * L2 round trip each, in a chain: thread 0 paid six a frame it published.
 */
#if defined(__CUDA_ARCH__) && !defined(GI_CUDA_EMU)
#define GI_COUNTER_ADD(p, v) (*(uint64_t *)(p) += (uint64_t)(v))
#else
#define GI_COUNTER_ADD(p, v) GI_STORE_RELAXED_U64((p), GI_LOAD_RELAXED_U64(p) + (uint64_t)(v))
#endif
#define GI_COUNTER_READ(p) GI_LOAD_RELAXED_U64(p)

/*
 * Read-modify-write atomics for words several workers of one executor
 * instance update (a CTA's threads, never two CTAs): the per-batch drop
 * counters in shared memory, the run's bitmap words.  Relaxed, like
 * CUDA's atomicAdd/atomicOr.  uint64_t is `unsigned long` on LP64 hosts
 * but CUDA's overloads take `unsigned long long`: the casts keep one
 * spelling for both.  The host runs a batch's workers one after another
 * (trip.h), so there each word has one writer: a relaxed load and store,
 * as GI_COUNTER_ADD.  A locked read-modify-write there cost a record its
 * share of draining the store buffer, full of the payloads just copied:
 * the bitmap's OR alone took 6% of an inline rx lcore at 1 KiB.
 */
#if defined(__CUDA_ARCH__)
#define GI_ATOMIC_ADD_U32(p, v) atomicAdd((unsigned int *)(p), (unsigned int)(v))
#define GI_ATOMIC_ADD_U64(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))
#define GI_ATOMIC_OR_U64(p, v) atomicOr((unsigned long long *)(p), (unsigned long long)(v))
#define GI_ATOMIC_XOR_U32(p, v) atomicXor((unsigned int *)(p), (unsigned int)(v))
#else
#define GI_ATOMIC_ADD_U32(p, v) GI_STORE_RELAXED_U32((p), GI_LOAD_RELAXED_U32(p) + (uint32_t)(v))
#define GI_ATOMIC_ADD_U64(p, v) GI_STORE_RELAXED_U64((p), GI_LOAD_RELAXED_U64(p) + (uint64_t)(v))
#define GI_ATOMIC_OR_U64(p, v) GI_STORE_RELAXED_U64((p), GI_LOAD_RELAXED_U64(p) | (uint64_t)(v))
#define GI_ATOMIC_XOR_U32(p, v) GI_STORE_RELAXED_U32((p), GI_LOAD_RELAXED_U32(p) ^ (uint32_t)(v))
#endif

/*
 * The lanes of one warp that work on one thing together (stream_publish.h:
 * a frame's mirror, a lane a word): every lane's loads and stores before
 * any lane goes on (CUDA's __syncwarp, which orders memory among them; the
 * emulation's checks the lanes meet it converged).  On the host a warp's
 * lanes are one worker: nothing to wait for.
 */
#if defined(__CUDA_ARCH__)
#define GI_WARP_SYNC() __syncwarp()
#else
#define GI_WARP_SYNC() do { } while (0)
#endif

/*
 * A warp's lanes that share one piece of work (phase_sequence_solo.h: the frames
 * of a group, one a lane) combine their parts: every lane of the warp calls
 * these together, converged (the emulation checks it), and each gets the
 * warp's result.  On the host the warp is one lane: its own value.
 * The emulation pairs lanes by the call site of each collective (cuda_emu.h):
 * these take their caller's (GI_WARP_SITE, passed on as GI_WARP_AT), so that
 * lanes meeting here from two callers fault there as they would go wrong on
 * a GPU, instead of meeting at one line of this file.
 */
#if defined(GI_CUDA_EMU)
#define GI_WARP_SITE , GI_EMU_SITE_ARGS
#define GI_WARP_AT , GI_EMU_SITE_PASS
#else
#define GI_WARP_SITE
#define GI_WARP_AT
#endif
#if defined(__CUDA_ARCH__)
GI_HD static inline uint32_t gi_warp_all(uint32_t p GI_WARP_SITE)
{
	return (uint32_t)__all_sync(0xffffffffu, (int)p GI_WARP_AT);
}
GI_HD static inline uint32_t gi_warp_ballot(uint32_t p GI_WARP_SITE)
{
	return __ballot_sync(0xffffffffu, (int)p GI_WARP_AT);
}
/* shuffles: __reduce_*_sync would need sm_80, the kernels build from sm_70 on (gpu_archs) */
GI_HD static inline uint32_t gi_warp_or_u32(uint32_t v GI_WARP_SITE)
{
	for (int o = 16; o > 0; o >>= 1)
		v |= __shfl_xor_sync(0xffffffffu, v, o, 32 GI_WARP_AT);
	return v;
}
GI_HD static inline uint64_t gi_warp_sum_u64(uint64_t v GI_WARP_SITE)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o, 32 GI_WARP_AT);
	return v;
}
GI_HD static inline uint32_t gi_warp_from_u32(uint32_t v, uint32_t lane GI_WARP_SITE)
{
	return __shfl_sync(0xffffffffu, v, (int)lane, 32 GI_WARP_AT);
}
GI_HD static inline uint32_t gi_popc_u32(uint32_t v) { return (uint32_t)__popc(v); }
GI_HD static inline uint32_t gi_lowest_u32(uint32_t v) { return (uint32_t)__ffs((int)v) - 1; } /* v != 0 */
#else
GI_HD static inline uint32_t gi_warp_all(uint32_t p) { return p != 0; }
GI_HD static inline uint32_t gi_warp_ballot(uint32_t p) { return p != 0; }
GI_HD static inline uint32_t gi_warp_or_u32(uint32_t v) { return v; }
GI_HD static inline uint64_t gi_warp_sum_u64(uint64_t v) { return v; }
GI_HD static inline uint32_t gi_warp_from_u32(uint32_t v, uint32_t lane) { (void)lane; return v; }
GI_HD static inline uint32_t gi_popc_u32(uint32_t v) { return (uint32_t)__builtin_popcount(v); }
GI_HD static inline uint32_t gi_lowest_u32(uint32_t v) { return (uint32_t)__builtin_ctz(v); } /* v != 0 */
#endif

/* A loop with a constant trip count unrolled where that keeps its loads in flight together (nvcc). */
#if defined(__CUDACC__) && !defined(GI_CUDA_EMU)
#define GI_UNROLL _Pragma("unroll")
#else
#define GI_UNROLL
#endif

/*
 * float32 multiply and add, each rounded on its own (never fused into an
 * FMA, whose single rounding differs): results that NumPy reproduces bit
 * for bit.  nvcc fuses a * b + c by default; the host build says
 * -ffp-contract=off (meson.build).
 */
#if defined(__CUDA_ARCH__) && !defined(GI_CUDA_EMU)
#define GI_FMUL_RN(a, b) __fmul_rn((a), (b))
#define GI_FADD_RN(a, b) __fadd_rn((a), (b))
#else
#define GI_FMUL_RN(a, b) ((float)(a) * (float)(b))
#define GI_FADD_RN(a, b) ((float)(a) + (float)(b))
#endif

/*
 * GI_GPU_CODE: 1 where this is the GPU's code (nvcc's device pass, or the
 * emulation's kernels on CPU threads, which CI runs), 0 on the host.  The
 * one test of __CUDA_ARCH__ outside this file's own device primitives: the
 * bodies' device forms test GI_GPU_CODE (frame.h's copy, fmt_rocev2.h's
 * CRC, phase_place.h's lanes, pkt.h's byte loads), and the choices below
 * derive from it.
 */
#ifdef __CUDA_ARCH__
#define GI_GPU_CODE 1
#else
#define GI_GPU_CODE 0
#endif

/*
 * GI_SPECIALIZE: 1 where a body may be compiled once per constant argument
 * (the host, whose loops the compiler then strips of their per-item
 * switches); 0 on the GPU, where a warp takes such a switch uniformly and
 * code size is what costs: there a body specializes only its few common
 * forms (kernels/tensor.h: all 35 of its forms made ptxas's part of the
 * CUDA build several times longer).  GI_INLINE forces inlining,
 * which that specialization needs; GI_NOINLINE keeps a body out of line.
 * A packet's steps are GI_INLINE too (gi_classify_parse,
 * gi_stream_parse_ex, gi_seq_locate, gi_stream_locate, gi_seq_open): gcc
 * kept them out of line, a call each per packet whose arguments and
 * results went through memory (bench/instr.sh, the serial path: 550 -> 458
 * instructions a VITA 49 packet, 513 -> 384 udp_seq).  nvcc inlined them
 * already: the PTX is the same.
 */
#if defined(__CUDA_ARCH__) && !defined(GI_CUDA_EMU)
#define GI_INLINE __forceinline__
#else
#define GI_INLINE __attribute__((always_inline)) inline
#endif
#define GI_SPECIALIZE (!GI_GPU_CODE) /* the GPU's form runs in the emulation too: CI runs it */
/*
 * GI_LOADS_FIRST: 1 where a body loads every word its checks read before
 * the first check, and ANDs the checks rather than short-circuiting them
 * (the GPU, and its emulation so that CI runs that form): a GPU issues in
 * order and does not speculate, so a load after a branch waits for the
 * branch, which waits for the load before; checks tested where each reads
 * its word make a chain of round trips.  0 on the host, whose CPU
 * predicts such branches and runs past them, and where the eager form
 * costs instructions (bench/instr.sh: 99 Ir a packet more in 2a's place,
 * 14 to 25 more in the serial steps).  Bodies test it with a plain `if`.
 */
#define GI_LOADS_FIRST GI_GPU_CODE

/*
 * GI_HEADER_MEMO: 1 where a worker parses a batch's packets one after
 * another (the host), so that a packet can reuse what the previous one's
 * Ethernet/IPv4/UDP headers parsed to (pkt.h, struct gi_l4_memo); 0 on
 * the GPU, where each thread parses its own packet at the same time as its
 * neighbours and a memo would only add work.
 */
#define GI_HEADER_MEMO (!GI_GPU_CODE)

/* A body kept out of line: large, and off the path most batches take (a called function on the GPU). */
#if defined(__CUDACC__) && !defined(GI_CUDA_EMU)
#define GI_NOINLINE __noinline__
#else
#define GI_NOINLINE __attribute__((noinline))
#endif

/*
 * GI_CONTRACT(c): a claim one worker's code makes about what another
 * worker did first (a barrier's promise), which only a wrong change could
 * break and no result would show: checked on the host and in the CUDA
 * emulation, where the tests run the GPU's form (a trap: the test dies at
 * the line), not in the GPU's own code, where it would cost a load.
 */
#if defined(__CUDA_ARCH__) && !defined(GI_CUDA_EMU)
#define GI_CONTRACT(c) do { } while (0)
#elif defined(GI_CUDA_EMU)
#define GI_CONTRACT(c) do { if (!(c)) __trap(); } while (0)
#else
#define GI_CONTRACT(c) do { if (!(c)) __builtin_trap(); } while (0)
#endif

/* High 64 bits of a 64 x 64-bit product. */
GI_HD static inline uint64_t gi_umulhi64(uint64_t a, uint64_t b)
{
#if defined(__CUDA_ARCH__)
	return (uint64_t)__umul64hi((unsigned long long)a, (unsigned long long)b);
#else
	return (uint64_t)(((unsigned __int128)a * b) >> 64);
#endif
}

/*
 * Division of any 64-bit n by a run-time invariant d (1 <= d < 2^32) with a
 * multiply and two shifts instead of a divide (Granlund & Montgomery 1994,
 * fig. 4.1): a 64-bit divide is a ~100-instruction loop on a GPU and ~40
 * cycles on a CPU, and the executor does several per packet (frame from a
 * sequence number, slot from a frame, index from a byte offset).  A power
 * of two (the common frame and ring sizes) is a shift and a mask, off the
 * multiply's latency: `pow2` says so, and `sh2` is then its log.
 */
struct gi_div {
	uint64_t m;
	uint32_t d;
	uint8_t sh1, sh2, pow2, pad;
};

/* Once per divisor (per epoch): a 64-step long division, fine on either side. */
GI_HD static inline void gi_div_init(struct gi_div *v, uint32_t d)
{
	uint32_t l = 0;
	uint64_t r, q = 0;

	if (d == 0)
		d = 1; /* never configured so; keeps the arithmetic defined */
	while (l < 32 && (1ull << l) < d)
		l++;
	/* m = floor(2^64 * (2^l - d) / d) + 1; 2^l - d < d, so the quotient fits */
	r = (1ull << l) - d;
	for (int i = 0; i < 64; i++) {
		r <<= 1;
		q <<= 1;
		if (r >= d) {
			r -= d;
			q |= 1;
		}
	}
	v->m = q + 1;
	v->d = d;
	v->sh1 = (uint8_t)(l < 1 ? l : 1);
	v->sh2 = (uint8_t)(l > 0 ? l - 1 : 0);
	v->pow2 = (d & (d - 1)) == 0;
	if (v->pow2)
		v->sh2 = (uint8_t)l;
	v->pad = 0;
}

/*
 * The same quotient with both forms computed, then the one that applies
 * picked (a select, not a branch): every field loads at once.  The GPU's
 * form (GI_LOADS_FIRST): there a branch on pow2 made the multiplier's load
 * wait for pow2's, one more round trip in each chain that divides (phase
 * 2a's place of a record).  The host keeps the branch, which it predicts,
 * off the multiply's latency.
 */
GI_HD static inline uint64_t gi_div_q_select(const struct gi_div *v, uint64_t n)
{
	const uint64_t m = v->m;
	const uint32_t sh1 = v->sh1, sh2 = v->sh2, pow2 = v->pow2;
	const uint64_t t = gi_umulhi64(m, n);
	return pow2 ? n >> sh2 : (t + ((n - t) >> sh1)) >> sh2;
}

GI_HD static inline uint64_t gi_div_q(const struct gi_div *v, uint64_t n)
{
	if (GI_LOADS_FIRST)
		return gi_div_q_select(v, n);
	if (v->pow2)
		return n >> v->sh2;
	uint64_t t = gi_umulhi64(v->m, n);
	return (t + ((n - t) >> v->sh1)) >> v->sh2;
}

GI_HD static inline uint64_t gi_div_r(const struct gi_div *v, uint64_t n)
{
	if (v->pow2)
		return n & (v->d - 1u);
	return n - gi_div_q(v, n) * v->d;
}

#define GI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GI_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GI_ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((uint64_t)(a) - 1))

/*
 * The smallest and the largest of the values several workers offer, into
 * one word that starts at 0: the NIC times of a frame's packets as phase 3
 * places them (frame.h, gi_frame_nic_note), in any order.  0 means "none
 * yet" to the minimum, so it is a compare-and-swap loop, not atomicMin;
 * the maximum needs none.  Relaxed, like the other atomics here.
 */
#if defined(__CUDA_ARCH__)
GI_HD static inline void gi_atomic_min_nz_u64(uint64_t *p, uint64_t v)
{
	unsigned long long old = *(volatile unsigned long long *)p;
	while (old == 0 || v < old) {
		unsigned long long seen = atomicCAS((unsigned long long *)p, old, (unsigned long long)v);
		if (seen == old)
			break;
		old = seen;
	}
}
#define GI_ATOMIC_MAX_U64(p, v) atomicMax((unsigned long long *)(p), (unsigned long long)(v))
#else
/* the host: one writer per stream (its group's worker), so a relaxed load and store, no locked
 * read-modify-write per packet (the rule of GI_COUNTER_ADD above) */
GI_HD static inline void gi_atomic_min_nz_u64(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
	if (old == 0 || v < old)
		__atomic_store_n(p, v, __ATOMIC_RELAXED);
}
GI_HD static inline void gi_atomic_max_u64_host(uint64_t *p, uint64_t v)
{
	if (v > __atomic_load_n(p, __ATOMIC_RELAXED))
		__atomic_store_n(p, v, __ATOMIC_RELAXED);
}
#define GI_ATOMIC_MAX_U64(p, v) gi_atomic_max_u64_host((uint64_t *)(p), (uint64_t)(v))
#endif

#endif /* GI_HD_H */
