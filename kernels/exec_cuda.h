/*
 * exec_cuda.h — the plain-C boundary between the CUDA kernels
 * (exec_cuda.cu) and the host side of the cuda executor (executor_cuda.c).
 *
 * Everything the kernels need arrives in one struct gi_cuda_args passed by
 * value at launch; it only holds device-usable pointers:
 *   state    device memory: the device copy of the streams, the lookup map,
 *            the executor counters (the one writer's copy) and per-ring tails
 *   rings    device memory: each batch ring's device view and cached geometry
 *   ctl      host-pinned mapped: pause word, quit word, clock probe, exit flag
 *   ctr_mirror, streams_mirror   host memory mapped for the GPU: the words the
 *            stats thread reads (gi_executor_counters(), ctx->streams[i].c and
 *            .frame_latency); the kernels only ever store to them
 *
 * The launch wrappers return a cudaError_t as int (0 = cudaSuccess), so the
 * caller owns the error text.  Called from: executor_cuda.c only.
 */
#ifndef GI_EXEC_CUDA_H
#define GI_EXEC_CUDA_H

#include <cuda_runtime_api.h>

#include "exec_warp.h"

GI_EXTERN_C_BEGIN

struct gi_cuda_ring {
	struct gi_batch_ring *ring; /* device view of the host ring */
	uint32_t size;              /* geometry copied from the ring at create: */
	uint32_t max_pkts;          /* the kernels never re-read it over PCIe */
	uint32_t split;
	uint32_t stride;
	uint64_t tail;              /* persistent mode: next slot to serve (kernel only) */
};

struct gi_cuda_state {
	struct gi_exec_ctx ctx;      /* device streams, device map */
	struct gi_exec_counters ctr; /* authoritative; mirrored to ctr_mirror */
};

/* Host-pinned, mapped: written by the host, polled by the kernels, and back. */
struct gi_cuda_ctl {
	uint32_t paused;      /* host → kernel: skip batches (test hook) */
	uint32_t quit;        /* host → kernel: stop after draining (also every ring's stop word) */
	uint64_t probe_gt;    /* kernel → host: %globaltimer, for the clock offset */
	uint32_t exited;      /* kernel → host: the persistent kernel flushed and left */
	uint32_t pad;
};

struct gi_cuda_args {
	struct gi_cuda_state *state;
	struct gi_cuda_ring *rings;
	struct gi_cuda_ctl *ctl;
	struct gi_exec_counters *ctr_mirror;
	struct gi_stream_rt *streams_mirror;
	uint32_t n_rings;
	uint32_t n_streams;
	uint32_t idle;           /* enum gi_idle_policy */
	uint32_t smem_bytes;     /* dynamic shared memory: gi_warp_shared + one staged slot */
	uint64_t tick_ns;
	int64_t clock_offset_ns; /* CLOCK_MONOTONIC ns = %globaltimer + this */
};

/* The stream words that are mirrored: counters then frame latency, contiguous. */
#define GI_CUDA_STREAM_MIRROR_OFF offsetof(struct gi_stream_rt, c)
#define GI_CUDA_STREAM_MIRROR_WORDS ((sizeof(struct gi_stream_counters) + sizeof(struct gi_hist)) / 8)
GI_STATIC_ASSERT(offsetof(struct gi_stream_rt, frame_latency) ==
			 offsetof(struct gi_stream_rt, c) + sizeof(struct gi_stream_counters),
		 "mirrored stream words must be contiguous");
GI_STATIC_ASSERT(GI_CUDA_STREAM_MIRROR_OFF % 8 == 0 && sizeof(struct gi_stream_rt) % 8 == 0,
		 "mirror copies whole 64-bit words");
GI_STATIC_ASSERT(sizeof(struct gi_exec_counters) % 8 == 0, "mirror copies whole 64-bit words");

/* Offset of the staged slot in dynamic shared memory. */
#define GI_CUDA_SMEM_SLOT_OFF 64u
GI_STATIC_ASSERT(sizeof(struct gi_warp_shared) <= GI_CUDA_SMEM_SLOT_OFF, "warp scratch fits before the slot");

/* Allow `smem_bytes` of dynamic shared memory for the kernels (> 48 KiB needs opt-in). */
int gi_cuda_kernels_prepare(uint32_t smem_bytes);
/* Write %globaltimer to ctl->probe_gt (device view) once. */
int gi_cuda_launch_clock_probe(struct gi_cuda_ctl *ctl, cudaStream_t s);
/* The persistent kernel: returns once launched; it runs until every ring's stop word is set. */
int gi_cuda_launch_persistent(const struct gi_cuda_args *a, cudaStream_t s);
/* Launch mode: serve slots [from, to) of ring `ring`. */
int gi_cuda_launch_batches(const struct gi_cuda_args *a, uint32_t ring, uint64_t from, uint64_t to, cudaStream_t s);
/* Launch mode: frame timeouts (flush = 0) or the final flush (flush = 1), then mirror every counter. */
int gi_cuda_launch_tick(const struct gi_cuda_args *a, uint32_t flush, cudaStream_t s);

GI_EXTERN_C_END

#endif /* GI_EXEC_CUDA_H */
