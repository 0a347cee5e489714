/*
 * exec_cuda.cu — launch wrappers and the persistent loop of the cuda executor.
 *
 * No per-packet logic lives here: a slot is staged and served by
 * gi_slot_stage() / gi_exec_slot_warp() (exec_warp.h), which run the shared
 * GI_HD bodies of stream.h; frame timeouts and the shutdown flush are
 * gi_stream_tick() / gi_stream_flush().  This file only decides when those
 * run, keeps time, and mirrors counters to host memory.
 *
 * One warp does everything (gridDim 1 x blockDim 32).  Lane 0 is the single
 * writer of all stream state and counters, exactly like the host executor's
 * one thread: a stream's frames can then be opened, filled, published and
 * timed out without atomics or locks, frames are published in order, and
 * the bodies stay identical on both backends.  The other 31 lanes add
 * bandwidth where it is free: descriptor staging, payload copy, mirroring.
 *
 * The same source builds twice: by nvcc into the fatbin the daemon loads,
 * and — for tests only — by the host C++ compiler against the CUDA
 * emulation header (tests/cuda_emu/cuda_emu.h), which runs every CUDA
 * thread as an OS thread.  Nothing here forks on which: the emulation
 * supplies CUDA's built-ins, and gi_hd.h's macros are the only way this
 * file touches memory shared with the host (no raw `volatile`, no fences
 * outside them and the ring contract).
 *
 * Modes (executor_cuda.c picks one):
 *   persistent  k_persistent polls every ring's doorbell round-robin until
 *               every ring's stop word is set and all are drained, then
 *               flushes every stream and exits.
 *   launch      a host thread launches k_batches for each published run of
 *               slots, and k_tick every tick_ns, on one in-order CUDA
 *               stream: kernels never overlap, so lane 0 of the running
 *               kernel is again the only writer.
 *
 * Ordering rules and why each fence is there: kernels/README.md.
 */
#include "exec_cuda.h"
#include "executor.h" /* enum gi_exec_pause */
#include "idle.h"

#define GI_FULL_MASK 0xffffffffu

/* CLOCK_MONOTONIC ns on the GPU: %globaltimer plus the offset measured at start. */
__device__ __forceinline__ uint64_t gi_dev_now(int64_t offset)
{
	return GI_DEV_GLOBALTIMER() + (uint64_t)offset;
}

/* Lane 0's clock, the same value in every lane (branch decisions stay warp-uniform). */
__device__ __forceinline__ uint64_t gi_warp_now(const struct gi_cuda_args &a, uint32_t lane)
{
	uint64_t t = lane == 0 ? gi_dev_now(a.clock_offset_ns) : 0;
	return __shfl_sync(GI_FULL_MASK, t, 0);
}

/*
 * Posted, write-only copies to host memory: the stats thread reads these
 * words with relaxed loads; each 8-byte aligned store lands whole.  The
 * source words were written by lane 0 before a __syncwarp().
 */
__device__ static void gi_mirror_words(uint64_t *dst, const uint64_t *src, uint32_t n, uint32_t lane)
{
	for (uint32_t w = lane; w < n; w += GI_WARP_LANES)
		GI_STORE_RELAXED_U64(&dst[w], GI_LOAD_RELAXED_U64(&src[w]));
}

__device__ static void gi_mirror_ctr(const struct gi_cuda_args &a, uint32_t lane)
{
	gi_mirror_words((uint64_t *)a.ctr_mirror, (const uint64_t *)&a.state->ctr,
			sizeof(struct gi_exec_counters) / 8, lane);
}

__device__ static void gi_mirror_streams(const struct gi_cuda_args &a, uint32_t lane)
{
	const uint32_t per = GI_CUDA_STREAM_MIRROR_WORDS;
	for (uint32_t w = lane; w < a.n_streams * per; w += GI_WARP_LANES) {
		uint32_t s = w / per, k = w % per;
		const uint64_t *src = (const uint64_t *)((const uint8_t *)&a.state->ctx.streams[s] + GI_CUDA_STREAM_MIRROR_OFF);
		uint64_t *dst = (uint64_t *)((uint8_t *)&a.streams_mirror[s] + GI_CUDA_STREAM_MIRROR_OFF);
		GI_STORE_RELAXED_U64(&dst[k], GI_LOAD_RELAXED_U64(&src[k]));
	}
}

__device__ static void gi_mirror_all(const struct gi_cuda_args &a, uint32_t lane)
{
	__syncwarp();
	gi_mirror_streams(a, lane);
	gi_mirror_ctr(a, lane);
	__syncwarp();
}

/*
 * Serve slot `idx` of ring `r` and hand it back to the producer.  The
 * caller has acquired a head > idx (GI_LOAD_ACQUIRE_U64 in one lane, then
 * __syncwarp(), which carries that ordering to the whole warp).
 */
__device__ static void gi_serve_slot(const struct gi_cuda_args &a, const struct gi_cuda_ring &r, uint64_t idx,
				     uint32_t lane, uint8_t *smem)
{
	struct gi_warp_shared *sh = (struct gi_warp_shared *)smem;
	struct gi_batch_slot *stg = (struct gi_batch_slot *)(smem + GI_CUDA_SMEM_SLOT_OFF);
	struct gi_batch_slot *src = (struct gi_batch_slot *)((uint8_t *)r.ring + sizeof(struct gi_batch_ring) +
							     (idx & (r.size - 1)) * (uint64_t)r.stride);
	uint64_t t0 = gi_warp_now(a, lane);

	gi_slot_stage(stg, src, r.max_pkts, r.split, lane, GI_WARP_LANES);
	__syncwarp();
	gi_exec_slot_warp(&a.state->ctx, &a.state->ctr, stg, r.max_pkts, r.split, t0, lane, GI_WARP_LANES, sh);
	if (lane == 0) {
		uint64_t t1 = gi_dev_now(a.clock_offset_ns);
		gi_hist_observe(&a.state->ctr.batch_latency, t1 > stg->t_publish_ns ? t1 - stg->t_publish_ns : 0);
		GI_COUNTER_ADD(&a.state->ctr.busy_ns, t1 - t0);
	}
	__syncwarp();
	/* executor counters reach the host before the slot does: a reader that
	 * sees tail move also sees that batch counted, as on the host backend */
	gi_mirror_ctr(a, lane);
	__syncwarp();
	if (lane == 0)
		gi_ring_complete(r.ring, idx); /* __threadfence_system(), then the volatile tail store */
	__syncwarp();
}

extern "C" __global__ void __launch_bounds__(GI_WARP_LANES, 1) k_persistent(const struct gi_cuda_args a)
{
	GI_EXTERN_SHARED(uint8_t, smem);
	const uint32_t lane = threadIdx.x % GI_WARP_LANES;
	uint64_t next_tick = gi_warp_now(a, lane) + a.tick_ns;
	uint32_t dirty = 0, empty = 0, sleep_ns = GI_IDLE_MIN_SLEEP_NS;

	for (;;) {
		uint32_t all_stopped = 1, paused = 0, done = 0;

		for (uint32_t base = 0; base < a.n_rings || base == 0; base += GI_WARP_LANES) {
			uint32_t r = base + lane;
			uint32_t stop = 1;
			uint64_t head = 0;
			if (r < a.n_rings) {
				struct gi_batch_ring *ring = a.rings[r].ring;
				stop = GI_LOAD_RELAXED_U64(&ring->stop) != 0;
				/* stop before head: a head read after seeing stop is the final one */
				__threadfence_system();
				head = GI_LOAD_ACQUIRE_U64(&ring->head);
			} else if (a.n_rings == 0 && lane == 0) {
				stop = GI_LOAD_RELAXED_U32(&a.ctl->quit) != 0;
				__threadfence_system();
			}
			all_stopped &= __all_sync(GI_FULL_MASK, stop);
			/* every lane's acquire → every lane's later reads (slots, paused) */
			__syncwarp();
			/* read after the stop words: the host clears paused before it sets
			 * stop, so a kernel that sees stop also sees paused == 0 and drains */
			paused = __shfl_sync(GI_FULL_MASK, lane == 0 ? GI_LOAD_RELAXED_U32(&a.ctl->paused) : 0u, 0);
			if (paused)
				continue;
			for (uint32_t j = 0; j < GI_WARP_LANES && base + j < a.n_rings; j++) {
				struct gi_cuda_ring cr = a.rings[base + j];
				uint64_t h = __shfl_sync(GI_FULL_MASK, head, j);
				for (uint64_t t = cr.tail; t != h; t++, done++)
					gi_serve_slot(a, cr, t, lane, smem);
				__syncwarp();
				if (lane == 0)
					a.rings[base + j].tail = h;
				__syncwarp();
			}
		}
		/* progress only for a pass that served every ring (host backend's rule) */
		if (lane == 0 && paused == GI_EXEC_RUN)
			GI_COUNTER_ADD(&a.state->ctr.loops, 1);
		/* hung (test hook): ignore stop, as a kernel stuck in a body would */
		if (all_stopped && done == 0 && paused != GI_EXEC_HANG)
			break;

		uint64_t now = gi_warp_now(a, lane);
		if (now >= next_tick) {
			if (lane == 0)
				for (uint32_t s = 0; s < a.n_streams; s++)
					gi_stream_tick(&a.state->ctx.streams[s], now);
			gi_mirror_all(a, lane);
			next_tick = now + a.tick_ns;
			dirty = 0;
		} else if (done == 0 && dirty) {
			gi_mirror_all(a, lane); /* went idle: the host sees final stream counters now, not at the next tick */
			dirty = 0;
		}
		if (done) {
			dirty = 1;
			empty = 0;
			sleep_ns = GI_IDLE_MIN_SLEEP_NS;
		} else if (a.idle == GI_IDLE_ADAPTIVE && ++empty >= GI_IDLE_SPINS_BEFORE_SLEEP) {
			/* fewer PCIe reads while idle; never longer than a tick */
			__nanosleep((uint32_t)GI_MIN((uint64_t)sleep_ns, a.tick_ns));
			if (sleep_ns < GI_IDLE_MAX_SLEEP_NS)
				sleep_ns *= 2;
		}
	}

	uint64_t now = gi_warp_now(a, lane);
	if (lane == 0)
		for (uint32_t s = 0; s < a.n_streams; s++)
			gi_stream_flush(&a.state->ctx.streams[s], now);
	gi_mirror_all(a, lane);
	if (lane == 0)
		GI_STORE_RELEASE_U32(&a.ctl->exited, 1);
}

extern "C" __global__ void __launch_bounds__(GI_WARP_LANES, 1)
	k_batches(const struct gi_cuda_args a, uint32_t ring, uint64_t from, uint64_t to)
{
	GI_EXTERN_SHARED(uint8_t, smem);
	const uint32_t lane = threadIdx.x % GI_WARP_LANES;
	const struct gi_cuda_ring cr = a.rings[ring];

	/* The host thread acquired head >= to before launching, and a launch
	 * makes host memory written before it visible to the kernel.  The
	 * acquire here costs one PCIe read per launch and keeps the kernel
	 * correct on its own terms (same pattern as the persistent loop). */
	if (lane == 0)
		(void)GI_LOAD_ACQUIRE_U64(&cr.ring->head);
	__syncwarp();
	for (uint64_t t = from; t != to; t++)
		gi_serve_slot(a, cr, t, lane, smem);
	if (lane == 0)
		GI_COUNTER_ADD(&a.state->ctr.loops, 1);
}

extern "C" __global__ void __launch_bounds__(GI_WARP_LANES, 1) k_tick(const struct gi_cuda_args a, uint32_t flush)
{
	const uint32_t lane = threadIdx.x % GI_WARP_LANES;
	uint64_t now = gi_warp_now(a, lane);

	if (lane == 0) {
		for (uint32_t s = 0; s < a.n_streams; s++) {
			if (flush)
				gi_stream_flush(&a.state->ctx.streams[s], now);
			else
				gi_stream_tick(&a.state->ctx.streams[s], now);
		}
		GI_COUNTER_ADD(&a.state->ctr.loops, 1);
	}
	gi_mirror_all(a, lane);
}

extern "C" __global__ void k_clock_probe(struct gi_cuda_ctl *ctl)
{
	uint64_t t = gi_dev_now(0);
	GI_STORE_RELAXED_U64(&ctl->probe_gt, t);
	__threadfence_system(); /* push it out now rather than when the kernel ends */
}

/* The emulation's module image (nothing under nvcc: the fatbin is the image). */
GI_KERNEL_TABLE(gi_exec_cuda_image, k_persistent, k_batches, k_tick, k_clock_probe)
