/*
 * executor_cuda.c — host side of the cuda executor (CUDA runtime API).
 *
 * Makes what the kernels touch visible to the GPU and runs them:
 *   - batch rings and frame rings live in host memory (or already in device
 *     memory); host memory is registered mapped (cudaHostRegister, unless a
 *     provider registered it already) and the kernels get its device view;
 *   - the stream array and the lookup map are copied to device memory, so
 *     the per-packet lookups never cross PCIe; lane 0 of the kernel is the
 *     single writer of that device copy;
 *   - the words the stats thread reads (ctx->streams[i].c / .frame_latency
 *     and the executor counters) are host memory mapped for the GPU, which
 *     the kernels only ever store to (kernels/README.md: counter mirror);
 *   - after stop, the final device stream state is copied back into
 *     ctx->streams.
 *
 * cudart is linked statically and loads libcuda.so on first use, so a
 * machine without the NVIDIA driver gets -ENODEV here, not a loader error.
 * Every CUDA call goes through GI_CUDA(): call text, file, line and the CUDA
 * error string into the error buffer, -EIO back; nothing asserts.
 *
 * Threads: main thread (create/start/stop/destroy); in launch mode also the
 * "gi-exec-cuda" launcher thread; counters from any thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "exec_cuda.h"
#include "executor_cuda.h"

#ifndef GI_CUDA_MIN_SM
#define GI_CUDA_MIN_SM 80 /* lowest arch in gpu_archs; meson passes the real one */
#endif

#define GI_CUDA_ERRLEN 320

/* Host memory made visible to the GPU. */
struct gi_cuda_map {
	void *host;
	void *dev;
	int registered; /* we registered it: unregister in destroy */
};

struct gi_cuda_exec {
	struct gi_executor_conf conf;
	cudaStream_t stream;
	int have_stream;
	struct gi_cuda_ctl *ctl;         /* host view, cudaHostAlloc mapped */
	struct gi_exec_counters *ctr;    /* host view of the counter mirror */
	struct gi_cuda_args args;        /* device views, passed to every launch */
	struct gi_cuda_state *d_state;
	struct gi_cuda_ring *d_rings;
	struct gi_stream_rt *d_streams;
	uint16_t *d_map;
	struct gi_cuda_map *ring_maps;   /* n_rings */
	struct gi_cuda_map *frame_maps;  /* n_streams */
	struct gi_cuda_map *mirror_maps; /* n_streams: metadata mirrors of frame rings in device memory */
	struct gi_cuda_map streams_map;  /* ctx->streams, for the counter mirror */
	uint64_t *launched;              /* launch mode: next slot to launch, per ring */
	pthread_t thread;
	int thread_started;
	uint32_t host_quit;              /* main → launcher */
	uint32_t drained;                /* launcher → main */
	int thread_rc;
	int running;
	int stuck;                       /* stop timed out: never free what the GPU may touch */
	char err[GI_CUDA_ERRLEN];
	char desc[200];
};

static int gi_cuda_check(struct gi_cuda_exec *c, cudaError_t e, const char *call, const char *file, int line)
{
	if (e == cudaSuccess)
		return 0;
	snprintf(c->err, sizeof(c->err), "%s failed at %s:%d: %s", call, file, line, cudaGetErrorString(e));
	(void)cudaGetLastError(); /* clear a non-sticky error so the next call reports its own */
	return -EIO;
}

/* The one way this file calls CUDA: 0, or -EIO with the story in c->err. */
#define GI_CUDA(c, call) gi_cuda_check((c), (cudaError_t)(call), #call, __FILE__, __LINE__)

static void gi_cuda_prefix_err(struct gi_cuda_exec *c, const char *what)
{
	char tmp[GI_CUDA_ERRLEN];
	snprintf(tmp, sizeof(tmp), "%.40s: %.270s", what, c->err);
	memcpy(c->err, tmp, sizeof(tmp));
}

/*
 * Device view of `host` (`len` bytes).  Device memory and managed memory
 * are used as they are; host memory registered by someone else (a memory
 * provider) is fine as it is; plain host memory is registered mapped here.
 */
static int gi_cuda_map_host(struct gi_cuda_exec *c, void *host, size_t len, struct gi_cuda_map *m, const char *what)
{
	struct cudaPointerAttributes pa;
	int rc;

	m->host = host;
	memset(&pa, 0, sizeof(pa));
	if (cudaPointerGetAttributes(&pa, host) != cudaSuccess) {
		(void)cudaGetLastError();
		pa.type = cudaMemoryTypeUnregistered;
	}
	if (pa.type == cudaMemoryTypeDevice || pa.type == cudaMemoryTypeManaged) {
		m->dev = pa.devicePointer;
		return 0;
	}
	if (pa.type == cudaMemoryTypeUnregistered) {
		cudaError_t e = cudaHostRegister(host, len, cudaHostRegisterMapped | cudaHostRegisterPortable);
		if (e == cudaSuccess)
			m->registered = 1;
		else if (e == cudaErrorHostMemoryAlreadyRegistered)
			(void)cudaGetLastError(); /* overlaps a registration: its mapping serves */
		else if ((rc = gi_cuda_check(c, e, "cudaHostRegister(cudaHostRegisterMapped)", __FILE__, __LINE__)) < 0)
			goto fail;
	}
	if ((rc = GI_CUDA(c, cudaHostGetDevicePointer(&m->dev, host, 0))) < 0)
		goto fail;
	return 0;
fail:
	gi_cuda_prefix_err(c, what);
	return rc;
}

static void gi_cuda_unmap(struct gi_cuda_map *m)
{
	if (m->registered)
		(void)cudaHostUnregister(m->host);
	m->registered = 0;
}

static int gi_cuda_alloc_copy(struct gi_cuda_exec *c, void **dev, const void *src, size_t len)
{
	int rc = GI_CUDA(c, cudaMalloc(dev, len ? len : 1));
	if (rc == 0 && src && len)
		rc = GI_CUDA(c, cudaMemcpy(*dev, src, len, cudaMemcpyHostToDevice));
	return rc;
}

/* Is there a device this build can run on?  -ENODEV with the reason if not. */
static int gi_cuda_pick_device(struct gi_cuda_exec *c, int dev)
{
	struct cudaDeviceProp p;
	int n = 0, map = 0, rc;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || n == 0) {
		snprintf(c->err, sizeof(c->err), "no CUDA device or driver found (cudaGetDeviceCount: %s)",
			 cudaGetErrorString(e != cudaSuccess ? e : cudaErrorNoDevice));
		(void)cudaGetLastError();
		return -ENODEV;
	}
	if (dev < 0 || dev >= n) {
		snprintf(c->err, sizeof(c->err), "CUDA device %d does not exist (this machine has %d, 0..%d)", dev, n,
			 n - 1);
		return -ENODEV;
	}
	if ((rc = GI_CUDA(c, cudaGetDeviceProperties(&p, dev))) < 0 || (rc = GI_CUDA(c, cudaSetDevice(dev))) < 0 ||
	    (rc = GI_CUDA(c, cudaDeviceGetAttribute(&map, cudaDevAttrCanMapHostMemory, dev))) < 0)
		return rc;
	if (p.major * 10 + p.minor < GI_CUDA_MIN_SM) {
		snprintf(c->err, sizeof(c->err), "CUDA device %d (%.80s) is sm_%d%d; this build runs on sm_%d and newer",
			 dev, p.name, p.major, p.minor, GI_CUDA_MIN_SM);
		return -ENODEV;
	}
	if (!map) {
		snprintf(c->err, sizeof(c->err), "CUDA device %d (%.80s) cannot map host memory", dev, p.name);
		return -ENODEV;
	}
	snprintf(c->desc, sizeof(c->desc), "cuda device %d (%.80s, sm_%d%d), %s", dev, p.name, p.major, p.minor,
		 c->conf.mode == GI_EXEC_LAUNCH ? "launch" : "persistent");
	return 0;
}

static int gi_cuda_setup_rings(struct gi_cuda_exec *c, uint32_t *max_stride)
{
	struct gi_cuda_ring *hr = calloc(c->conf.n_rings ? c->conf.n_rings : 1, sizeof(*hr));
	char what[64];
	int rc = 0;

	if (!hr)
		return -ENOMEM;
	*max_stride = 0;
	for (uint32_t r = 0; r < c->conf.n_rings && rc == 0; r++) {
		struct gi_batch_ring *ring = c->conf.rings[r];
		if (ring->magic != GI_RING_MAGIC) {
			snprintf(c->err, sizeof(c->err), "batch ring %u is not initialised (bad magic)", r);
			rc = -EINVAL;
			break;
		}
		snprintf(what, sizeof(what), "batch ring %u", r);
		rc = gi_cuda_map_host(c, ring, ring->ring_bytes, &c->ring_maps[r], what);
		hr[r] = (struct gi_cuda_ring){ .ring = c->ring_maps[r].dev, .size = ring->size,
					       .max_pkts = ring->max_pkts, .split = ring->split,
					       .stride = ring->slot_stride, .tail = GI_LOAD_RELAXED_U64(&ring->tail) };
		c->launched[r] = hr[r].tail;
		*max_stride = GI_MAX(*max_stride, ring->slot_stride);
	}
	if (rc == 0)
		rc = gi_cuda_alloc_copy(c, (void **)&c->d_rings, hr, c->conf.n_rings * sizeof(*hr));
	free(hr);
	return rc;
}

static int gi_cuda_setup_streams(struct gi_cuda_exec *c)
{
	struct gi_exec_ctx *ctx = c->conf.ctx;
	struct gi_stream_rt *ds = calloc(ctx->n_streams ? ctx->n_streams : 1, sizeof(*ds));
	char what[64];
	int rc = 0;

	if (!ds)
		return -ENOMEM;
	for (uint32_t s = 0; s < ctx->n_streams && rc == 0; s++) {
		struct gi_frame_ring_hdr *h = ctx->streams[s].ring;
		struct cudaPointerAttributes pa;
		size_t bytes = 0;

		/* a frame ring already in device memory has no host-readable header */
		memset(&pa, 0, sizeof(pa));
		if (cudaPointerGetAttributes(&pa, h) != cudaSuccess)
			(void)cudaGetLastError();
		if (pa.type != cudaMemoryTypeDevice)
			bytes = gi_frame_ring_bytes(h->n_slots, h->packets_per_frame, h->payload_bytes);
		snprintf(what, sizeof(what), "stream %u frame ring", s);
		rc = gi_cuda_map_host(c, h, bytes, &c->frame_maps[s], what);
		ds[s] = ctx->streams[s];
		ds[s].ring = c->frame_maps[s].dev;
		/* frames in GPU memory: the consumers' shared-memory mirror is written by the kernel too */
		struct gi_frame_ring_hdr *m = ctx->streams[s].mirror;
		if (rc == 0 && m) {
			snprintf(what, sizeof(what), "stream %u frame ring mirror", s);
			rc = gi_cuda_map_host(c, m, gi_frame_mirror_bytes(m->n_slots, m->packets_per_frame),
					      &c->mirror_maps[s], what);
			ds[s].mirror = c->mirror_maps[s].dev;
		}
	}
	if (rc == 0 && ctx->n_streams)
		rc = gi_cuda_map_host(c, ctx->streams, ctx->n_streams * sizeof(*ctx->streams), &c->streams_map,
				      "stream counters");
	if (rc == 0)
		rc = gi_cuda_alloc_copy(c, (void **)&c->d_streams, ds, ctx->n_streams * sizeof(*ds));
	free(ds);
	if (rc == 0)
		rc = gi_cuda_alloc_copy(c, (void **)&c->d_map, ctx->map, (size_t)ctx->n_ports * 65536u * sizeof(uint16_t));
	return rc;
}

static int gi_cuda_setup(struct gi_cuda_exec *c)
{
	struct gi_exec_ctx *ctx = c->conf.ctx;
	uint32_t max_stride = 0;
	int optin = 0, rc;
	void *dev;

	if ((rc = gi_cuda_pick_device(c, c->conf.cuda_device)) < 0)
		return rc;
	c->ring_maps = calloc(c->conf.n_rings ? c->conf.n_rings : 1, sizeof(*c->ring_maps));
	c->frame_maps = calloc(ctx->n_streams ? ctx->n_streams : 1, sizeof(*c->frame_maps));
	c->mirror_maps = calloc(ctx->n_streams ? ctx->n_streams : 1, sizeof(*c->mirror_maps));
	c->launched = calloc(c->conf.n_rings ? c->conf.n_rings : 1, sizeof(*c->launched));
	if (!c->ring_maps || !c->frame_maps || !c->mirror_maps || !c->launched)
		return -ENOMEM;
	if ((rc = GI_CUDA(c, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking))) < 0)
		return rc;
	c->have_stream = 1;
	if ((rc = GI_CUDA(c, cudaHostAlloc((void **)&c->ctl, sizeof(*c->ctl), cudaHostAllocMapped | cudaHostAllocPortable))) < 0 ||
	    (rc = GI_CUDA(c, cudaHostAlloc((void **)&c->ctr, sizeof(*c->ctr), cudaHostAllocMapped | cudaHostAllocPortable))) < 0)
		return rc;
	memset(c->ctl, 0, sizeof(*c->ctl));
	memset(c->ctr, 0, sizeof(*c->ctr));
	if ((rc = GI_CUDA(c, cudaHostGetDevicePointer(&dev, c->ctl, 0))) < 0)
		return rc;
	c->args.ctl = dev;
	if ((rc = GI_CUDA(c, cudaHostGetDevicePointer(&dev, c->ctr, 0))) < 0)
		return rc;
	c->args.ctr_mirror = dev;

	if ((rc = gi_cuda_setup_rings(c, &max_stride)) < 0 || (rc = gi_cuda_setup_streams(c)) < 0)
		return rc;

	struct gi_cuda_state hs;
	memset(&hs, 0, sizeof(hs));
	hs.ctx = (struct gi_exec_ctx){ .n_streams = ctx->n_streams, .n_ports = ctx->n_ports, .streams = c->d_streams,
				       .map = c->d_map };
	if ((rc = gi_cuda_alloc_copy(c, (void **)&c->d_state, &hs, sizeof(hs))) < 0)
		return rc;

	c->args.state = c->d_state;
	c->args.rings = c->d_rings;
	c->args.streams_mirror = c->streams_map.dev;
	c->args.n_rings = c->conf.n_rings;
	c->args.n_streams = ctx->n_streams;
	c->args.idle = (uint32_t)c->conf.idle;
	c->args.tick_ns = c->conf.tick_ns;
	c->args.smem_bytes = GI_CUDA_SMEM_SLOT_OFF + max_stride;
	if ((rc = GI_CUDA(c, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
						    c->conf.cuda_device))) < 0)
		return rc;
	if (c->args.smem_bytes > (uint32_t)optin) {
		snprintf(c->err, sizeof(c->err),
			 "a batch slot needs %u bytes of shared memory, this device allows %d per block (lower batch.max_packets)",
			 c->args.smem_bytes, optin);
		return -EINVAL;
	}
	return GI_CUDA(c, gi_cuda_kernels_prepare(c->args.smem_bytes));
}

int gi_cuda_exec_create(const struct gi_executor_conf *conf, struct gi_cuda_exec **out, char *why, size_t whylen)
{
	struct gi_cuda_exec *c;
	int rc;

	if (!conf->ctx || (conf->n_rings && !conf->rings) || (conf->mode != GI_EXEC_PERSISTENT && conf->mode != GI_EXEC_LAUNCH)) {
		snprintf(why, whylen, "invalid executor configuration (ctx, rings or mode %d)", (int)conf->mode);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	c->conf = *conf;
	if (c->conf.tick_ns == 0)
		c->conf.tick_ns = 1000000;
	rc = gi_cuda_setup(c);
	if (rc < 0) {
		snprintf(why, whylen, "%s", rc == -ENOMEM && !c->err[0] ? "out of memory" : c->err);
		gi_cuda_exec_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

/*
 * CLOCK_MONOTONIC = %globaltimer + offset.  A probe kernel stores
 * %globaltimer to mapped host memory; the host takes its clock the moment
 * the value appears, so the offset is off by one PCIe write (~1 µs) at
 * most, and kernel launch latency (module loading on the first launch
 * included) does not enter it.  The first probe only warms up.
 */
static int gi_cuda_calibrate(struct gi_cuda_exec *c)
{
	int rc;

	for (int k = 0; k < 2; k++) {
		uint64_t gt, deadline = gi_now_ns() + 2000000000ull;
		__atomic_store_n(&c->ctl->probe_gt, 0, __ATOMIC_RELAXED);
		if ((rc = GI_CUDA(c, gi_cuda_launch_clock_probe(c->args.ctl, c->stream))) < 0)
			return rc;
		while ((gt = __atomic_load_n(&c->ctl->probe_gt, __ATOMIC_ACQUIRE)) == 0) {
			cudaError_t e = cudaStreamQuery(c->stream);
			if (e != cudaSuccess && e != cudaErrorNotReady)
				return gi_cuda_check(c, e, "clock probe kernel", __FILE__, __LINE__);
			if (gi_now_ns() > deadline) {
				snprintf(c->err, sizeof(c->err), "clock probe kernel did not run within 2 s");
				return -ETIMEDOUT;
			}
		}
		c->args.clock_offset_ns = (int64_t)(gi_now_ns() - gt);
	}
	return GI_CUDA(c, cudaStreamSynchronize(c->stream)); /* the probe is done: it ends in microseconds */
}

/* Launch mode: launches kernels on the one in-order stream (its order is what makes lane 0 the single writer). */
static void *gi_cuda_launcher(void *arg)
{
	struct gi_cuda_exec *c = arg;
	struct gi_idle idle;
	uint64_t next_tick = gi_now_ns() + c->conf.tick_ns;
	int dirty = 0, rc = 0;

	gi_idle_init(&idle, c->conf.idle);
	rc = GI_CUDA(c, cudaSetDevice(c->conf.cuda_device)); /* the current device is per thread */
	for (; rc == 0;) {
		int quit = __atomic_load_n(&c->host_quit, __ATOMIC_ACQUIRE);
		uint32_t paused = __atomic_load_n(&c->ctl->paused, __ATOMIC_RELAXED);
		uint32_t n = 0;

		if (paused == GI_EXEC_RUN)
			for (uint32_t r = 0; r < c->conf.n_rings && rc == 0; r++) {
				uint64_t head = GI_LOAD_ACQUIRE_U64(&c->conf.rings[r]->head);
				if (head == c->launched[r])
					continue;
				rc = GI_CUDA(c, gi_cuda_launch_batches(&c->args, r, c->launched[r], head, c->stream));
				c->launched[r] = head;
				n++;
			}
		if (rc < 0 || (quit && n == 0 && paused != GI_EXEC_HANG))
			break;
		uint64_t now = gi_now_ns();
		/* no ticks while paused: k_tick counts progress, and a paused executor makes none */
		if (paused == GI_EXEC_RUN && (now >= next_tick || (n == 0 && dirty))) {
			/* timeouts every tick; and when going idle, so stream counters reach the host now */
			if ((rc = GI_CUDA(c, gi_cuda_launch_tick(&c->args, 0, c->stream))) < 0)
				break;
			next_tick = now + c->conf.tick_ns;
			dirty = 0;
		}
		cudaError_t e = cudaStreamQuery(c->stream); /* a faulting kernel must stop us, not hang us */
		if (e != cudaSuccess && e != cudaErrorNotReady &&
		    (rc = gi_cuda_check(c, e, "a launched kernel (cudaStreamQuery)", __FILE__, __LINE__)) < 0)
			break;
		if (n) {
			dirty = 1;
			gi_idle_work(&idle);
		} else {
			gi_idle_empty(&idle, next_tick > now ? next_tick - now : 0);
		}
	}
	if (rc == 0)
		rc = GI_CUDA(c, gi_cuda_launch_tick(&c->args, 1, c->stream));
	for (cudaError_t e = cudaErrorNotReady; rc == 0 && e == cudaErrorNotReady;) {
		e = cudaStreamQuery(c->stream);
		if (e == cudaErrorNotReady) {
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		} else {
			rc = gi_cuda_check(c, e, "the final flush kernel (cudaStreamQuery)", __FILE__, __LINE__);
		}
	}
	c->thread_rc = rc;
	__atomic_store_n(&c->drained, 1, __ATOMIC_RELEASE);
	return NULL;
}

int gi_cuda_exec_start(struct gi_cuda_exec *c)
{
	int rc;

	if (c->running)
		return 0;
	c->err[0] = '\0';
	if ((rc = GI_CUDA(c, cudaSetDevice(c->conf.cuda_device))) < 0 || (rc = gi_cuda_calibrate(c)) < 0)
		return rc;
	if (c->conf.mode == GI_EXEC_PERSISTENT) {
		if ((rc = GI_CUDA(c, gi_cuda_launch_persistent(&c->args, c->stream))) < 0)
			return rc;
	} else {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		if (c->conf.cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(c->conf.cpu, &set);
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		rc = pthread_create(&c->thread, &attr, gi_cuda_launcher, c);
		pthread_attr_destroy(&attr);
		if (rc != 0) {
			snprintf(c->err, sizeof(c->err), "cannot start the launcher thread: %s", strerror(rc));
			return -rc;
		}
		pthread_setname_np(c->thread, "gi-exec-cuda");
		c->thread_started = 1;
	}
	c->running = 1;
	return 0;
}

/* The kernels are done: the device's final stream state becomes the host's. */
static int gi_cuda_copy_back(struct gi_cuda_exec *c)
{
	struct gi_exec_ctx *ctx = c->conf.ctx;
	struct gi_exec_counters ctr;
	int rc;

	if ((rc = GI_CUDA(c, cudaMemcpy(&ctr, &c->d_state->ctr, sizeof(ctr), cudaMemcpyDeviceToHost))) < 0)
		return rc;
	for (size_t w = 0; w < sizeof(ctr) / 8; w++)
		__atomic_store_n((uint64_t *)c->ctr + w, ((uint64_t *)&ctr)[w], __ATOMIC_RELAXED);
	if (ctx->n_streams == 0)
		return 0;
	struct gi_stream_rt *ds = malloc(ctx->n_streams * sizeof(*ds));
	if (!ds)
		return -ENOMEM;
	rc = GI_CUDA(c, cudaMemcpy(ds, c->d_streams, ctx->n_streams * sizeof(*ds), cudaMemcpyDeviceToHost));
	for (uint32_t s = 0; rc == 0 && s < ctx->n_streams; s++) {
		struct gi_stream_rt *h = &ctx->streams[s];
		h->started = ds[s].started;
		h->next_pub = ds[s].next_pub;
		h->max_frame = ds[s].max_frame;
		h->min_frame = ds[s].min_frame;
		h->seq_max = ds[s].seq_max;
		/* the stats thread may be reading these: whole words, relaxed */
		const uint64_t *src = (const uint64_t *)((const uint8_t *)&ds[s] + GI_CUDA_STREAM_MIRROR_OFF);
		uint64_t *dst = (uint64_t *)((uint8_t *)h + GI_CUDA_STREAM_MIRROR_OFF);
		for (size_t w = 0; w < GI_CUDA_STREAM_MIRROR_WORDS; w++)
			__atomic_store_n(&dst[w], src[w], __ATOMIC_RELAXED);
	}
	free(ds);
	return rc;
}

int gi_cuda_exec_stop(struct gi_cuda_exec *c, uint64_t timeout_ns)
{
	uint64_t deadline = gi_now_ns() + timeout_ns;
	int rc = 0;

	if (!c->running)
		return 0;
	/* stuck after an earlier timeout: look again (the daemon stops in slices
	 * so that a second SIGTERM is seen); it may have drained since */
	(void)cudaSetDevice(c->conf.cuda_device); /* stop may come from another thread than start */
	/* paused off before stop: a kernel that sees stop must drain, not leave;
	 * hung (test hook) stays hung, and this stop times out */
	if (__atomic_load_n(&c->ctl->paused, __ATOMIC_RELAXED) == GI_EXEC_PAUSE)
		__atomic_store_n(&c->ctl->paused, GI_EXEC_RUN, __ATOMIC_RELEASE);
	for (uint32_t r = 0; r < c->conf.n_rings; r++)
		GI_STORE_RELEASE_U64(&c->conf.rings[r]->stop, 1);
	__atomic_store_n(&c->ctl->quit, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&c->host_quit, 1, __ATOMIC_RELEASE);

	for (;;) {
		if (c->conf.mode == GI_EXEC_PERSISTENT) {
			cudaError_t e = cudaStreamQuery(c->stream);
			if (e != cudaErrorNotReady) {
				rc = gi_cuda_check(c, e, "the persistent kernel (cudaStreamQuery)", __FILE__, __LINE__);
				break;
			}
		} else if (__atomic_load_n(&c->drained, __ATOMIC_ACQUIRE)) {
			pthread_join(c->thread, NULL);
			c->thread_started = 0;
			rc = c->thread_rc;
			break;
		}
		if (gi_now_ns() > deadline) {
			snprintf(c->err, sizeof(c->err), "the %s kernel did not drain within %llu ms",
				 c->conf.mode == GI_EXEC_PERSISTENT ? "persistent" : "launched",
				 (unsigned long long)(timeout_ns / 1000000));
			c->stuck = 1; /* it may still read rings and write frames: leave everything */
			return -ETIMEDOUT;
		}
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
	c->stuck = 0;
	c->running = 0;
	if (rc < 0)
		return rc; /* a kernel fault: the device state is not trustworthy, keep the host's */
	return gi_cuda_copy_back(c);
}

void gi_cuda_exec_destroy(struct gi_cuda_exec *c)
{
	if (!c)
		return;
	if (c->running && gi_cuda_exec_stop(c, 1000000000ull) == -ETIMEDOUT)
		c->stuck = 1;
	if (c->stuck)
		return; /* the GPU may still use all of it; process exit reclaims it */
	for (uint32_t r = 0; c->ring_maps && r < c->conf.n_rings; r++)
		gi_cuda_unmap(&c->ring_maps[r]);
	for (uint32_t s = 0; c->frame_maps && s < c->conf.ctx->n_streams; s++)
		gi_cuda_unmap(&c->frame_maps[s]);
	for (uint32_t s = 0; c->mirror_maps && s < c->conf.ctx->n_streams; s++)
		gi_cuda_unmap(&c->mirror_maps[s]);
	gi_cuda_unmap(&c->streams_map);
	if (c->d_state)
		(void)cudaFree(c->d_state);
	if (c->d_rings)
		(void)cudaFree(c->d_rings);
	if (c->d_streams)
		(void)cudaFree(c->d_streams);
	if (c->d_map)
		(void)cudaFree(c->d_map);
	if (c->ctl)
		(void)cudaFreeHost(c->ctl);
	if (c->ctr)
		(void)cudaFreeHost(c->ctr);
	if (c->have_stream)
		(void)cudaStreamDestroy(c->stream);
	free(c->ring_maps);
	free(c->frame_maps);
	free(c->mirror_maps);
	free(c->launched);
	free(c);
}

const struct gi_exec_counters *gi_cuda_exec_counters(const struct gi_cuda_exec *c)
{
	return c->ctr;
}

void gi_cuda_exec_set_paused(struct gi_cuda_exec *c, int paused)
{
	__atomic_store_n(&c->ctl->paused, (uint32_t)paused, __ATOMIC_RELAXED); /* enum gi_exec_pause */
}

const char *gi_cuda_exec_error(const struct gi_cuda_exec *c)
{
	return c->err;
}

const char *gi_cuda_exec_describe(const struct gi_cuda_exec *c)
{
	return c->desc;
}
