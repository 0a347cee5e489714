/*
 * cuda_emu.h — CUDA's execution model on CPU threads, for tests only.
 *
 * DESIGN.  No machine of this project has a GPU, yet the CUDA executor
 * must run in CI.  kernels/exec_cuda.cu therefore builds twice: by nvcc
 * for GPUs, and by the host C++ compiler with this header included first
 * (tests/cuda_emu/exec_cuda_emu.cpp).  This header supplies what nvcc
 * would: the qualifiers, threadIdx and friends, barriers, warp shuffles
 * and votes, atomics, fences, %globaltimer and dynamic shared memory, plus
 * gi_hd.h's memory-access macros as C11 atomics.  The runtime behind it is
 * the CUDA driver API test double (cuda_emu.c, libgi-cuda-emu.so), which
 * runs a launch as gridDim x blockDim real OS threads, each block with its
 * own shared memory.  The source has no #ifdef of its own for this: the
 * only switches are here and in gi_hd.h (the clock and shared-memory macros).
 *
 * What it is not: a GPU.  It runs the same code with real concurrency, so
 * ThreadSanitizer and the stress switch (GI_CUDA_EMU_STRESS) find races,
 * deadlocks in the barrier and stop protocols, wrong kernel arguments and
 * wrong IPC records; it says nothing about speed, PCIe ordering or
 * coalescing.  tests/gpu/run_on_gpu.sh remains the real check.
 *
 * Memory model as emulated:
 *   volatile (GI_LOAD/STORE_RELAXED)   relaxed atomics
 *   GI_LOAD_ACQUIRE / GI_STORE_RELEASE acquire / release atomics plus a
 *                                      sequentially consistent fence
 *   __threadfence*()                   sequentially consistent fences
 *   atomicAdd/Or/And/CAS/Exch/Max/Min  relaxed __atomic builtins, with
 *                                      CUDA's exact overloads (no uint64_t*)
 * ThreadSanitizer ignores stand-alone fences, so the composite
 * acquire/release macros are real acquire/release operations here: TSan
 * then checks that every hand-off between threads goes through one.
 *
 * CUDA's rules, which OS threads would let through and a GPU traps (the
 * first H200 run found a launch-mode crash this emulation had passed), are
 * enforced: each breach faults the launch with one line naming the call
 * sites and threads involved (cuda_emu.c, "CUDA's rules"):
 *   __syncthreads*()  every live thread of the block arrives at the same
 *                     call site, the same primitive, in each generation;
 *                     none returns while others wait, none calls one after
 *                     a thread of its block returned
 *   warp collectives  (__syncwarp, shuffles, votes, reductions) exactly the
 *                     lanes named in the mask, each naming the same mask,
 *                     at the same call site; a named lane that waits at a
 *                     __syncthreads() instead, or has returned, is a fault
 * Also refused: static __shared__ variables (use GI_EXTERN_SHARED), and a
 * block whose threads all wait on each other (a deadlock).
 * A call site is file:line, so the copies of one inline helper's barrier
 * count as one site here where a GPU has an instruction per inlined copy.
 */
#ifndef GI_CUDA_EMU_H
#define GI_CUDA_EMU_H

#define GI_CUDA_EMU 1

#include <stddef.h>
#include <stdint.h>

/* ---- the interface between emulated kernels and the runtime (C and C++) ---- */

#define GI_EMU_MODULE_MAGIC 0x31444f4d55454947ull /* "GIEUMOD1" */
#define GI_EMU_ABI 3u
#define GI_EMU_MAX_PARAMS 16u

struct gi_emu_dim3 {
	unsigned int x, y, z;
};

struct gi_emu_thread;

/*
 * Where a barrier or a warp collective was called: CUDA requires every
 * thread that takes part to execute the same instruction, so the runtime
 * compares these.  `file` and `line` come from the call in the kernel's
 * source (__builtin_FILE/LINE as default arguments); `what` names the
 * primitive (bar.sync and bar.red are different instructions).
 */
struct gi_emu_site {
	const char *what;
	const char *file;
	unsigned int line;
};

/* Runtime services a kernel thread calls (the runtime fills them in). */
struct gi_emu_ops {
	int (*syncthreads_count)(struct gi_emu_thread *t, int pred, const struct gi_emu_site *at);
	/* every lane in `mask` deposits `mine`; all of theirs come back in out[32] */
	void (*warp_collect)(struct gi_emu_thread *t, uint32_t mask, uint64_t mine, uint64_t out[32],
			     const struct gi_emu_site *at);
	/* a volatile access or atomic: stress yields; leaves the thread if the launch faulted */
	void (*poll)(struct gi_emu_thread *t);
	void (*nanosleep)(struct gi_emu_thread *t, uint32_t ns);
	uint64_t (*globaltimer)(void);
	void (*trap)(struct gi_emu_thread *t, const char *why) __attribute__((noreturn));
};

struct gi_emu_thread {
	struct gi_emu_dim3 thread_idx, block_idx, block_dim, grid_dim;
	uint32_t lane;          /* index in its warp */
	uint32_t warp;          /* index of its warp in the block */
	uint8_t *dyn_smem;      /* the block's dynamic shared memory */
	const struct gi_emu_ops *ops;
	void *rt;               /* the runtime's own */
};

typedef void (*gi_emu_entry)(struct gi_emu_thread *t, void **params);

struct gi_emu_kernel {
	const char *name;
	gi_emu_entry entry;
	uint32_t n_params;
	uint32_t param_size[GI_EMU_MAX_PARAMS]; /* cuLaunchKernel copies each parameter at launch */
};

/* What cuModuleLoadData receives in an emulation build. */
struct gi_emu_module {
	uint64_t magic;
	uint32_t abi;
	uint32_t n_kernels;
	const struct gi_emu_kernel *kernels;
};

/* ---- the kernel side: what nvcc would provide (C++ only) ------------------- */
#ifdef __cplusplus

#include <string.h>
#include <type_traits>
#include <utility>

/* the device code paths of the shared headers are the ones to run */
#define __CUDACC__ 1
#define __CUDA_ARCH__ 900

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
#define __restrict__ __restrict
/* per-block static shared variables cannot be told apart from per-thread ones here */
#define __shared__ _Pragma("GCC error \"static __shared__ variables are not emulated: use GI_EXTERN_SHARED\"")

/* initial-exec: see EMU_TLS in cuda_emu.c (no dynamic TLS in a dlopen()ed library) */
static thread_local struct gi_emu_thread *gi_emu_self __attribute__((tls_model("initial-exec")));

#define threadIdx (gi_emu_self->thread_idx)
#define blockIdx (gi_emu_self->block_idx)
#define blockDim (gi_emu_self->block_dim)
#define gridDim (gi_emu_self->grid_dim)
#define warpSize 32

struct __attribute__((aligned(16))) uint4 {
	unsigned int x, y, z, w;
};
struct __attribute__((aligned(8))) uint2 {
	unsigned int x, y;
};

/* ---- barriers, votes, shuffles ---- */

/*
 * Each takes its call site as trailing default arguments, evaluated where
 * the kernel calls it: the runtime faults a launch whose threads meet at
 * different call sites (cuda_emu.c, "CUDA's rules").  A helper that
 * wraps one of these passes its own caller's site on (GI_EMU_AT).
 */
#define GI_EMU_SITE_ARGS const char *gi_emu_file_ = __builtin_FILE(), unsigned gi_emu_line_ = __builtin_LINE()
#define GI_EMU_SITE_PASS gi_emu_file_, gi_emu_line_
#define GI_EMU_AT(what) (struct gi_emu_site){ (what), gi_emu_file_, gi_emu_line_ }

static inline int gi_emu_bar(const char *what, int pred, const char *gi_emu_file_, unsigned gi_emu_line_)
{
	const struct gi_emu_site at = GI_EMU_AT(what);
	return gi_emu_self->ops->syncthreads_count(gi_emu_self, pred != 0, &at);
}

static inline void __syncthreads(GI_EMU_SITE_ARGS)
{
	(void)gi_emu_bar("__syncthreads", 0, GI_EMU_SITE_PASS);
}

static inline int __syncthreads_count(int pred, GI_EMU_SITE_ARGS)
{
	return gi_emu_bar("__syncthreads_count", pred, GI_EMU_SITE_PASS);
}

static inline int __syncthreads_or(int pred, GI_EMU_SITE_ARGS)
{
	return gi_emu_bar("__syncthreads_or", pred, GI_EMU_SITE_PASS) != 0;
}

static inline int __syncthreads_and(int pred, GI_EMU_SITE_ARGS)
{
	const struct gi_emu_dim3 &b = gi_emu_self->block_dim;
	return gi_emu_bar("__syncthreads_and", pred, GI_EMU_SITE_PASS) == (int)(b.x * b.y * b.z);
}

static inline void gi_emu_collect(const char *what, unsigned mask, uint64_t mine, uint64_t out[32],
				  const char *gi_emu_file_, unsigned gi_emu_line_)
{
	const struct gi_emu_site at = GI_EMU_AT(what);
	gi_emu_self->ops->warp_collect(gi_emu_self, mask, mine, out, &at);
}

static inline void __syncwarp(unsigned mask = 0xffffffffu, GI_EMU_SITE_ARGS)
{
	uint64_t out[32];
	gi_emu_collect("__syncwarp", mask, 0, out, GI_EMU_SITE_PASS);
}

/* the lane whose value a shuffle reads; a lane outside `mask` is a kernel bug */
static inline unsigned gi_emu_shfl_src(unsigned mask, unsigned src)
{
	if (!(mask >> src & 1u))
		gi_emu_self->ops->trap(gi_emu_self, "shuffle reads a lane outside its mask");
	return src;
}

template <class T>
static inline T gi_emu_shfl(const char *what, unsigned mask, T v, unsigned src, const char *gi_emu_file_,
			    unsigned gi_emu_line_)
{
	static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffles move up to 8 bytes");
	uint64_t mine = 0, out[32];
	memcpy(&mine, &v, sizeof(T));
	gi_emu_collect(what, mask, mine, out, GI_EMU_SITE_PASS);
	T r;
	memcpy(&r, &out[gi_emu_shfl_src(mask, src)], sizeof(T));
	return r;
}

template <class T>
static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32, GI_EMU_SITE_ARGS)
{
	unsigned lane = gi_emu_self->lane, w = (unsigned)width;
	return gi_emu_shfl("__shfl_sync", mask, v, (lane & ~(w - 1)) + ((unsigned)src & (w - 1)), GI_EMU_SITE_PASS);
}

template <class T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, GI_EMU_SITE_ARGS)
{
	unsigned lane = gi_emu_self->lane, w = (unsigned)width;
	unsigned s = (lane & (w - 1)) + delta < w ? lane + delta : lane;
	return gi_emu_shfl("__shfl_down_sync", mask, v, s, GI_EMU_SITE_PASS);
}

template <class T>
static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32, GI_EMU_SITE_ARGS)
{
	unsigned lane = gi_emu_self->lane, w = (unsigned)width;
	unsigned s = (lane & (w - 1)) >= delta ? lane - delta : lane;
	return gi_emu_shfl("__shfl_up_sync", mask, v, s, GI_EMU_SITE_PASS);
}

template <class T>
static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32, GI_EMU_SITE_ARGS)
{
	unsigned lane = gi_emu_self->lane, w = (unsigned)width, s = lane ^ (unsigned)lane_mask;
	return gi_emu_shfl("__shfl_xor_sync", mask, v, (s & ~(w - 1)) == (lane & ~(w - 1)) ? s : lane,
			   GI_EMU_SITE_PASS);
}

/* every lane of `mask` deposits v; reduce `op` over them */
template <class Op>
static inline unsigned gi_emu_reduce(const char *what, unsigned mask, unsigned v, Op op, const char *gi_emu_file_,
				     unsigned gi_emu_line_)
{
	uint64_t out[32];
	unsigned r = 0;
	gi_emu_collect(what, mask, v, out, GI_EMU_SITE_PASS);
	for (unsigned l = 0; l < 32; l++)
		if (mask >> l & 1u)
			r = op(r, (unsigned)out[l], l);
	return r;
}

static inline unsigned __ballot_sync(unsigned mask, int pred, GI_EMU_SITE_ARGS)
{
	return gi_emu_reduce("__ballot_sync", mask, pred != 0,
			     [](unsigned r, unsigned x, unsigned l) { return x ? r | 1u << l : r; }, GI_EMU_SITE_PASS);
}

static inline int __any_sync(unsigned mask, int pred, GI_EMU_SITE_ARGS)
{
	return gi_emu_reduce("__any_sync", mask, pred != 0, [](unsigned r, unsigned x, unsigned) { return r | x; },
			     GI_EMU_SITE_PASS) != 0;
}

static inline int __all_sync(unsigned mask, int pred, GI_EMU_SITE_ARGS)
{
	return gi_emu_reduce("__all_sync", mask, pred != 0,
			     [](unsigned r, unsigned x, unsigned l) { return x ? r | 1u << l : r; },
			     GI_EMU_SITE_PASS) == mask;
}

static inline unsigned __reduce_add_sync(unsigned mask, unsigned v, GI_EMU_SITE_ARGS)
{
	return gi_emu_reduce("__reduce_add_sync", mask, v, [](unsigned r, unsigned x, unsigned) { return r + x; },
			     GI_EMU_SITE_PASS);
}

static inline unsigned __reduce_or_sync(unsigned mask, unsigned v, GI_EMU_SITE_ARGS)
{
	return gi_emu_reduce("__reduce_or_sync", mask, v, [](unsigned r, unsigned x, unsigned) { return r | x; },
			     GI_EMU_SITE_PASS);
}

static inline unsigned __reduce_xor_sync(unsigned mask, unsigned v, GI_EMU_SITE_ARGS)
{
	return gi_emu_reduce("__reduce_xor_sync", mask, v, [](unsigned r, unsigned x, unsigned) { return r ^ x; },
			     GI_EMU_SITE_PASS);
}

static inline unsigned __reduce_max_sync(unsigned mask, unsigned v, GI_EMU_SITE_ARGS)
{
	return gi_emu_reduce("__reduce_max_sync", mask, v,
			     [](unsigned r, unsigned x, unsigned) { return x > r ? x : r; }, GI_EMU_SITE_PASS);
}

/* ---- integer intrinsics ---- */

static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline unsigned __brev(unsigned x)
{
	unsigned r = 0;
	for (int i = 0; i < 32; i++)
		r |= (x >> i & 1u) << (31 - i);
	return r;
}
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{
	return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
/* the high word of (hi:lo) >> (shift & 31), and its left-shift twin */
static inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift)
{
	unsigned long long v = ((unsigned long long)hi << 32) | lo;
	return (unsigned)(v >> (shift & 31u));
}
static inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift)
{
	unsigned long long v = ((unsigned long long)hi << 32) | lo;
	return (unsigned)((v << (shift & 31u)) >> 32);
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
	unsigned long long v = ((unsigned long long)y << 32) | x;
	unsigned r = 0;
	for (int i = 0; i < 4; i++)
		r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
	return r;
}
template <class T>
static inline T __ldg(const T *p)
{
	return *p;
}

/* ---- fences, time, sleep, trap ---- */

static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __nanosleep(unsigned ns) { gi_emu_self->ops->nanosleep(gi_emu_self, ns); }
static inline void __trap(void) { gi_emu_self->ops->trap(gi_emu_self, "__trap()"); }

/* the one clock (gi_hd.h's GI_DEV_GLOBALTIMER): a ns counter that is not CLOCK_MONOTONIC */
#define GI_DEV_GLOBALTIMER() (gi_emu_self->ops->globaltimer())
/* the block's dynamic shared memory */
#define GI_EXTERN_SHARED(T, name) T *const name = (T *)gi_emu_self->dyn_smem

/* ---- atomics: CUDA's overloads, relaxed ---- */

static inline void gi_emu_poll(void) { gi_emu_self->ops->poll(gi_emu_self); }

#define GI_EMU_ATOMIC_RMW(fn, T, builtin)                           \
	static inline T fn(T *p, T v)                               \
	{                                                           \
		gi_emu_poll();                                      \
		return builtin(p, v, __ATOMIC_RELAXED);             \
	}
#define GI_EMU_ATOMIC_INT_TYPES(fn, builtin)                        \
	GI_EMU_ATOMIC_RMW(fn, int, builtin)                         \
	GI_EMU_ATOMIC_RMW(fn, unsigned int, builtin)                \
	GI_EMU_ATOMIC_RMW(fn, unsigned long long int, builtin)
GI_EMU_ATOMIC_INT_TYPES(atomicAdd, __atomic_fetch_add)
GI_EMU_ATOMIC_INT_TYPES(atomicSub, __atomic_fetch_sub)
GI_EMU_ATOMIC_INT_TYPES(atomicOr, __atomic_fetch_or)
GI_EMU_ATOMIC_INT_TYPES(atomicAnd, __atomic_fetch_and)
GI_EMU_ATOMIC_INT_TYPES(atomicXor, __atomic_fetch_xor)
GI_EMU_ATOMIC_INT_TYPES(atomicExch, __atomic_exchange_n)
#undef GI_EMU_ATOMIC_INT_TYPES
#undef GI_EMU_ATOMIC_RMW

#define GI_EMU_ATOMIC_MINMAX(fn, T, better)                                                   \
	static inline T fn(T *p, T v)                                                         \
	{                                                                                     \
		gi_emu_poll();                                                                \
		T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                 \
		while ((v better old) &&                                                      \
		       !__atomic_compare_exchange_n(p, &old, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
			;                                                                     \
		return old;                                                                   \
	}
GI_EMU_ATOMIC_MINMAX(atomicMax, int, >)
GI_EMU_ATOMIC_MINMAX(atomicMax, unsigned int, >)
GI_EMU_ATOMIC_MINMAX(atomicMax, unsigned long long int, >)
GI_EMU_ATOMIC_MINMAX(atomicMin, int, <)
GI_EMU_ATOMIC_MINMAX(atomicMin, unsigned int, <)
GI_EMU_ATOMIC_MINMAX(atomicMin, unsigned long long int, <)
#undef GI_EMU_ATOMIC_MINMAX

#define GI_EMU_ATOMIC_CAS(T)                                                                  \
	static inline T atomicCAS(T *p, T expect, T v)                                        \
	{                                                                                     \
		gi_emu_poll();                                                                \
		__atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
		return expect;                                                                \
	}
GI_EMU_ATOMIC_CAS(int)
GI_EMU_ATOMIC_CAS(unsigned int)
GI_EMU_ATOMIC_CAS(unsigned long long int)
#undef GI_EMU_ATOMIC_CAS

/* ---- gi_hd.h's device memory-access macros ---- */

static inline uint64_t gi_emu_ld64(const uint64_t *p) { gi_emu_poll(); return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline uint32_t gi_emu_ld32(const uint32_t *p) { gi_emu_poll(); return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void gi_emu_st64(uint64_t *p, uint64_t v) { gi_emu_poll(); __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void gi_emu_st32(uint32_t *p, uint32_t v) { gi_emu_poll(); __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline uint64_t gi_emu_ld64_acq(const uint64_t *p)
{
	gi_emu_poll();
	uint64_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return v;
}
static inline void gi_emu_st64_rel(uint64_t *p, uint64_t v)
{
	gi_emu_poll();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline void gi_emu_st32_rel(uint32_t *p, uint32_t v)
{
	gi_emu_poll();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

#define GI_LOAD_ACQUIRE_U64(p) gi_emu_ld64_acq((const uint64_t *)(p))
#define GI_STORE_RELEASE_U64(p, v) gi_emu_st64_rel((uint64_t *)(p), (uint64_t)(v))
#define GI_LOAD_RELAXED_U64(p) gi_emu_ld64((const uint64_t *)(p))
#define GI_LOAD_RELAXED_U32(p) gi_emu_ld32((const uint32_t *)(p))
#define GI_STORE_RELAXED_U64(p, v) gi_emu_st64((uint64_t *)(p), (uint64_t)(v))
#define GI_STORE_RELAXED_U32(p, v) gi_emu_st32((uint32_t *)(p), (uint32_t)(v))
#define GI_STORE_RELEASE_U32(p, v) gi_emu_st32_rel((uint32_t *)(p), (uint32_t)(v))
#define GI_FENCE_RELEASE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define GI_LOAD_RELAXED_2U64(p, lo, hi)                                          \
	do {                                                                     \
		(lo) = gi_emu_ld64((const uint64_t *)(p));                       \
		(hi) = gi_emu_ld64((const uint64_t *)(p) + 1);                   \
	} while (0)

/* ---- the module image: a table of the kernels, found by name ---- */

template <class... A, size_t... I>
static inline void gi_emu_call(void (*k)(A...), void **p, std::index_sequence<I...>)
{
	k(*static_cast<std::remove_cv_t<std::remove_reference_t<A>> *>(p[I])...);
}

template <class... A>
static inline void gi_emu_invoke(void (*k)(A...), void **p)
{
	gi_emu_call(k, p, std::index_sequence_for<A...>{});
}

template <class... A>
static constexpr uint32_t gi_emu_n_params(void (*)(A...))
{
	static_assert(sizeof...(A) <= GI_EMU_MAX_PARAMS, "too many kernel parameters");
	return (uint32_t)sizeof...(A);
}

template <class... A>
static constexpr struct gi_emu_kernel gi_emu_describe(const char *name, gi_emu_entry e, void (*)(A...))
{
	return { name, e, (uint32_t)sizeof...(A), { (uint32_t)sizeof(std::remove_cv_t<std::remove_reference_t<A>>)... } };
}

#define GI_EMU_K(k)                                                                                    \
	gi_emu_describe(#k, [](struct gi_emu_thread *t_, void **p_) { gi_emu_self = t_; gi_emu_invoke(k, p_); }, k),
#define GI_EMU_EACH1(m, a) m(a)
#define GI_EMU_EACH2(m, a, ...) m(a) GI_EMU_EACH1(m, __VA_ARGS__)
#define GI_EMU_EACH3(m, a, ...) m(a) GI_EMU_EACH2(m, __VA_ARGS__)
#define GI_EMU_EACH4(m, a, ...) m(a) GI_EMU_EACH3(m, __VA_ARGS__)
#define GI_EMU_EACH5(m, a, ...) m(a) GI_EMU_EACH4(m, __VA_ARGS__)
#define GI_EMU_EACH6(m, a, ...) m(a) GI_EMU_EACH5(m, __VA_ARGS__)
#define GI_EMU_EACH7(m, a, ...) m(a) GI_EMU_EACH6(m, __VA_ARGS__)
#define GI_EMU_EACH8(m, a, ...) m(a) GI_EMU_EACH7(m, __VA_ARGS__)
#define GI_EMU_PICK(_1, _2, _3, _4, _5, _6, _7, _8, name, ...) name
#define GI_EMU_FOR_EACH(m, ...)                                                                      \
	GI_EMU_PICK(__VA_ARGS__, GI_EMU_EACH8, GI_EMU_EACH7, GI_EMU_EACH6, GI_EMU_EACH5, GI_EMU_EACH4, \
		    GI_EMU_EACH3, GI_EMU_EACH2, GI_EMU_EACH1)(m, __VA_ARGS__)

/* `image`: the symbol the host side hands cuModuleLoadData (see exec_cuda.h) */
#define GI_KERNEL_TABLE(image, ...)                                                                  \
	static const struct gi_emu_kernel gi_emu_kernels_##image[] = { GI_EMU_FOR_EACH(GI_EMU_K, __VA_ARGS__) }; \
	extern "C" const struct gi_emu_module image;                                                 \
	extern "C" const struct gi_emu_module image = {                                              \
		GI_EMU_MODULE_MAGIC, GI_EMU_ABI,                                                     \
		(uint32_t)(sizeof(gi_emu_kernels_##image) / sizeof(gi_emu_kernels_##image[0])),      \
		gi_emu_kernels_##image };

#endif /* __cplusplus */

#endif /* GI_CUDA_EMU_H */
