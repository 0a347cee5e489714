/*
 * exec_cuda.h — the plain-C boundary between the CUDA kernels
 * (exec_cuda.cu) and the host side of the cuda executor (executor_cuda.c).
 *
 * One CTA per ring group (DESIGN.md): a group is the rings whose streams
 * may share packets (one ring when rte_flow steers each stream to its
 * queue), and its CTA is the only writer of those streams, so no atomics
 * cross CTAs.  Everything the kernels need arrives in one struct
 * gi_cuda_args passed by value; it holds device-usable pointers only:
 *   state    device memory: the device copy of the streams and the lookup map
 *   rings    device memory: every batch ring's device view, cached geometry
 *            and tail, grouped: group g owns rings[groups[g].first_ring ...]
 *   groups, group_streams   device memory: each group's rings and streams
 *   ctr      device memory: one executor counter block per group (its CTA
 *            is the only writer), mirrored to ctr_mirror[g]
 *   ctl      host-pinned mapped: pause word, quit word, clock probe
 *   ctr_mirror, streams_mirror   host memory mapped for the GPU: the words the
 *            stats thread reads; the kernels only ever store to them
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

#include "batch.h"

GI_EXTERN_C_BEGIN

struct gi_cuda_ring {
	struct gi_batch_ring *ring; /* device view of the host ring */
	uint32_t size;              /* geometry copied from the ring at create: */
	uint32_t max_pkts;          /* the kernels never re-read it over PCIe */
	uint32_t split;
	uint32_t stride;
	uint64_t tail;              /* next slot to serve (the owning CTA only) */
};

struct gi_cuda_group {
	uint32_t first_ring, n_rings;     /* in gi_cuda_args.rings */
	uint32_t first_stream, n_streams; /* in gi_cuda_args.group_streams */
	uint32_t lanes;                   /* phase 3: most lanes per payload (gi_cuda_place_lanes) */
	uint32_t chunks;                  /* ... 16-byte chunks of the group's largest payload */
};

/*
 * Phase 3's lanes per payload for a group whose largest payload is
 * `max_payload` bytes: one lane per 16-byte chunk, a power of two up to a
 * warp.  A warp copies 32 / lanes payloads at once, so 64-byte payloads do
 * not leave 28 of 32 lanes idle waiting on memory.
 */
GI_HD static inline uint32_t gi_cuda_place_lanes(uint32_t max_payload)
{
	uint32_t chunks = (max_payload + 15u) / 16u, lanes = 1;
	while (lanes < chunks && lanes < 32u)
		lanes *= 2;
	return lanes;
}

/*
 * ... and for a batch of n packets on `warps` warps: fewer lanes per
 * payload while the CTA would otherwise copy the batch in more than one
 * round and a lane would copy at most GI_CUDA_LANE_CHUNKS of a payload's
 * `chunks`.  A round costs its records' bookkeeping (about 1 µs on an
 * H200) whatever its size, and each lane keeps several loads in flight
 * (frame.h), so a 64-packet batch of 1 KiB payloads on 8 warps is one
 * round of 8 payloads per warp, 4 lanes each, not 8 rounds of one; 8 KiB
 * payloads keep 8 lanes, where a lane's chain of loads would outlast the
 * rounds it saves.  A payload of more than GI_CUDA_WIDE_CHUNKS chunks keeps
 * GI_CUDA_WIDE_LANES: a warp's load then touches 8 lines of 128 bytes, not
 * 32 (one lane a payload takes 16 bytes of each), and the L1 takes a pass
 * per line (bench/gpu_model.py: 256 payloads of 1 KiB in one round of a
 * lane each, 31 µs; in four rounds of 4 lanes, 11 µs).
 */
#define GI_CUDA_LANE_CHUNKS 64u
#define GI_CUDA_WIDE_CHUNKS 16u
#define GI_CUDA_WIDE_LANES 4u
GI_HD static inline uint32_t gi_cuda_place_lanes_batch(uint32_t lanes, uint32_t chunks, uint32_t warps, uint32_t n)
{
	const uint32_t least = chunks > GI_CUDA_WIDE_CHUNKS ? GI_CUDA_WIDE_LANES : 1u;
	while (lanes > least && warps * (32u / lanes) < n && chunks <= GI_CUDA_LANE_CHUNKS * (lanes / 2u))
		lanes /= 2u;
	return lanes;
}

struct gi_cuda_state {
	struct gi_exec_ctx ctx;      /* device streams, device map */
};

/* Host-pinned, mapped: written by the host, polled by the kernels, and back. */
struct gi_cuda_ctl {
	uint32_t paused;      /* host → kernel: skip batches (test hook) */
	uint32_t quit;        /* host → kernel: stop after draining (also every ring's stop word) */
	uint64_t probe_gt;    /* kernel → host: %globaltimer, for the clock offset */
};

struct gi_cuda_args {
	struct gi_cuda_state *state;
	struct gi_cuda_ring *rings;
	struct gi_cuda_group *groups;
	uint16_t *group_streams;
	struct gi_exec_counters *ctr;        /* [n_groups], device */
	struct gi_cuda_ctl *ctl;
	struct gi_exec_counters *ctr_mirror; /* [n_groups], host mapped */
	struct gi_stream_rt *streams_mirror;
	uint32_t n_rings;
	uint32_t n_streams;
	uint32_t n_groups;
	uint32_t idle;           /* enum gi_idle_policy */
	uint32_t smem_bytes;     /* dynamic shared memory: control, CRC table, staging buffers, batch scratch */
	uint32_t max_pkts;       /* the largest slot of any ring: the scratch's size */
	uint32_t slot_off;       /* offsets in dynamic shared memory: the staging buffers (equal */
	uint32_t slot2_off;      /* where there is one: then no CTA stages ahead), */
	uint32_t scratch_off;    /* the batch scratch */
	uint64_t tick_ns;
	int64_t clock_offset_ns; /* CLOCK_MONOTONIC ns = %globaltimer + this */
	uint32_t timing;         /* time each step of each batch into ctr[g].step_ns (steps.h); 0: none */
};

/* The stream words that are mirrored: counters then frame latency and assembly, contiguous. */
#define GI_CUDA_STREAM_MIRROR_OFF offsetof(struct gi_stream_rt, c)
#define GI_CUDA_STREAM_MIRROR_WORDS ((sizeof(struct gi_stream_counters) + 2 * sizeof(struct gi_hist)) / 8)
GI_STATIC_ASSERT(offsetof(struct gi_stream_rt, frame_latency) ==
			 offsetof(struct gi_stream_rt, c) + sizeof(struct gi_stream_counters),
		 "mirrored stream words must be contiguous");
GI_STATIC_ASSERT(offsetof(struct gi_stream_rt, frame_assembly) ==
			 offsetof(struct gi_stream_rt, frame_latency) + sizeof(struct gi_hist),
		 "mirrored stream words must be contiguous");
GI_STATIC_ASSERT(GI_CUDA_STREAM_MIRROR_OFF % 8 == 0 && sizeof(struct gi_stream_rt) % 8 == 0,
		 "mirror copies whole 64-bit words");
GI_STATIC_ASSERT(sizeof(struct gi_exec_counters) % 8 == 0, "mirror copies whole 64-bit words");

/*
 * Dynamic shared memory: [control 256 | the group's executor counters |
 * CRC-32 slice-by-8 tables 8 KiB | staged slot x 2 | batch scratch]: a
 * persistent CTA stages the next batch into one buffer while the batch in
 * the other is sequenced (exec_cuda.cu, gi_cta_beside).
 * `two` = 0: one staging buffer (slot2_off == slot_off), and no CTA
 * stages ahead: launch mode, whose passes never do, and a batch too
 * large for two on the device (executor_cuda.c).  The CTA counts into
 * its shared copy of ctr[g] (a word's add is a shared-memory access, not
 * a load across the L2 that the store must wait for) and stores the copy
 * whole into ctr[g] and its host mirror after each batch.
 */
#define GI_CUDA_SMEM_CTL 256u
#define GI_CUDA_SMEM_CTR GI_CUDA_SMEM_CTL
#define GI_CUDA_SMEM_TAB (GI_CUDA_SMEM_CTR + (uint32_t)GI_ALIGN_UP(sizeof(struct gi_exec_counters), 16))
#define GI_CUDA_SMEM_SLOT (GI_CUDA_SMEM_TAB + 8u * 1024u)

GI_HD static inline uint32_t gi_cuda_smem_bytes(uint32_t max_stride, uint32_t max_pkts, uint32_t two,
						uint32_t *slot_off, uint32_t *slot2_off, uint32_t *scratch_off)
{
	*slot_off = GI_CUDA_SMEM_SLOT;
	*slot2_off = two ? (uint32_t)GI_ALIGN_UP(GI_CUDA_SMEM_SLOT + max_stride, 64) : GI_CUDA_SMEM_SLOT;
	*scratch_off = (uint32_t)GI_ALIGN_UP(*slot2_off + max_stride, 64);
	return *scratch_off + (uint32_t)gi_batch_scratch_bytes(max_pkts);
}

/* CTA size without executor.threads_per_ring. */
#define GI_CUDA_DEFAULT_THREADS 256u

/*
 * Whether a persistent CTA of `threads` threads serving a group of
 * n_streams streams stages the next batch beside a batch's sequence step
 * (exec_cuda.cu, staging ahead): it needs a warp to stage between that
 * step's warps (a thread per stream, or warp 0 for one) and the last
 * warp, which reads ahead.
 */
GI_HD static inline int gi_cuda_stages_ahead(uint32_t threads, uint32_t n_streams)
{
	return GI_ALIGN_UP(n_streams, 32u) + 64u <= threads;
}

/*
 * The lanes that commit each of a CTA's streams (trip_body.h, phase 4): a
 * CTA's one stream by every lane of warp 0, which copy its frames' mirror
 * a word each (stream_publish.h, gi_mirror_copy_part); several streams by
 * a thread each.  Warp 0 is the commit's either way.
 */
GI_HD static inline uint32_t gi_cuda_commit_lanes(uint32_t n_streams, uint32_t threads)
{
	return n_streams == 1 && threads % 32 == 0 ? 32u : 1u;
}

/*
 * The kernels, by the names cuModuleGetFunction finds (extern "C"); all but
 * the probe run gridDim = n_groups x blockDim = executor.threads_per_ring:
 *   k_persistent(struct gi_cuda_args)          until every ring's stop word is set
 *   k_pass(struct gi_cuda_args)                launch mode: each CTA serves what its rings hold, once
 *   k_tick(struct gi_cuda_args, uint32_t flush) timeouts (0) or the final flush (1), then mirrors
 *   k_clock_probe(struct gi_cuda_ctl *ctl)     one thread: %globaltimer to ctl->probe_gt
 * k_persistent and k_pass take args.smem_bytes of dynamic shared memory.
 * The module image is declared where it is loaded (executor_cuda.c): the
 * emulation defines it as its own table type in exec_cuda.cu's unit.
 */

GI_EXTERN_C_END

#endif /* GI_EXEC_CUDA_H */
