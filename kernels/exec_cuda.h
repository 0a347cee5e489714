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
 * The kernels are launched through the CUDA driver API (cuLaunchKernel) by
 * name from one module image, gi_exec_cuda_image: the nvcc fatbin embedded
 * in the binary (exec_cuda_image.c), or — in a -Demulate_cuda=true build
 * (tests only) — the emulation's table of the same kernels compiled for the
 * host (tests/cuda_emu/cuda_emu.h).  Their parameters are the C types
 * below, in the order given, passed by value.  Called from: executor_cuda.c.
 */
#ifndef GI_EXEC_CUDA_H
#define GI_EXEC_CUDA_H

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

/*
 * The kernels, by the names cuModuleGetFunction finds (extern "C"):
 *   k_persistent(struct gi_cuda_args)                     until every ring's stop word is set
 *   k_batches(struct gi_cuda_args, uint32_t ring, uint64_t from, uint64_t to)
 *                                                         launch mode: serve slots [from, to) of one ring
 *   k_tick(struct gi_cuda_args, uint32_t flush)           timeouts (0) or the final flush (1), then mirrors
 *   k_clock_probe(struct gi_cuda_ctl *ctl)                write %globaltimer to ctl->probe_gt once
 * k_persistent and k_batches take args.smem_bytes of dynamic shared memory.
 * The module image is declared where it is loaded (executor_cuda.c): the
 * emulation defines it as its own table type in exec_cuda.cu's unit.
 */

GI_EXTERN_C_END

#endif /* GI_EXEC_CUDA_H */
