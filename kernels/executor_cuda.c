/*
 * executor_cuda.c — host side of the cuda executor (CUDA driver API).
 *
 * About 880 lines, kept whole on purpose: setup, the launcher and waker
 * threads and teardown share the state of one struct gi_cuda_exec and the
 * order of its driver calls (map, copy, launch, synchronise, copy back, unmap);
 * split apart, that order would be spread over files.
 *
 * Makes what the kernels touch visible to the GPU and runs them, one CTA of
 * executor.threads_per_ring threads per ring group (exec_cuda.h):
 *   - batch rings and frame rings live in host memory (or already in device
 *     memory); host memory is registered mapped (cuMemHostRegister, unless a
 *     provider registered it already) and the kernels get its device view;
 *   - the stream array and the lookup map are copied to device memory, so
 *     the per-packet lookups never cross PCIe; a stream's group's CTA is the
 *     single writer of its device copy;
 *   - the words the stats thread reads (ctx->streams[i].c / .frame_latency
 *     and each CTA's executor counters) are host memory mapped for the GPU,
 *     which the kernels only ever store to (kernels/README.md: counter mirror);
 *   - after stop, the final device stream state is copied back into
 *     ctx->streams.
 *
 * Everything goes through the driver API loaded at run time (cuda_drv.h):
 * the kernels are the module image gi_exec_cuda_image (an embedded fatbin),
 * launched by name with cuLaunchKernel.  No CUDA runtime is linked, so a
 * machine without the NVIDIA driver gets -ENODEV here, not a loader error,
 * and a -Demulate_cuda=true build (tests only) runs this very file
 * against the emulation's test double.  Every driver call goes through
 * GI_CU(): call text, file, line and the driver's error name and text into
 * the error buffer, -EIO back; nothing asserts.
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

#include "cuda_drv.h"
#include "exec_cuda.h"
#include "executor_cuda.h"
#include "frame_wake.h"

#ifndef GI_CUDA_MIN_SM
#define GI_CUDA_MIN_SM 80 /* lowest arch in gpu_archs; meson passes the real one */
#endif

#define GI_CUDA_ERRLEN 320

/* the kernels' module image: the embedded fatbin (exec_cuda_image.c) or the emulation's table */
extern const unsigned char gi_exec_cuda_image[];

/* Host memory made visible to the GPU. */
struct gi_cuda_map {
	void *host;
	CUdeviceptr dev;
	int registered; /* we registered it: unregister in destroy */
};

struct gi_cuda_exec {
	struct gi_executor_conf conf;
	struct gi_cuda_drv drv;          /* this executor's handle on the device's primary context */
	CUmodule mod;
	CUfunction k_persistent, k_pass, k_tick, k_probe;
	CUstream stream;
	int have_stream;
	CUevent pass_done;               /* launch mode: the last pass has finished */
	CUevent tick_done;               /* launch mode: the last tick has finished */
	int have_event;                  /* how many of the two exist */
	struct gi_cuda_ctl *ctl;         /* host view, cuMemHostAlloc mapped */
	struct gi_exec_counters *ctr;    /* host view of the counter mirrors, one per group */
	struct gi_cuda_args args;        /* device views, passed to every launch */
	uint32_t threads;                /* per CTA */
	CUdeviceptr d_state, d_rings, d_groups, d_group_streams, d_ctr, d_streams, d_map;
	struct gi_cuda_map *ring_maps;   /* n_rings */
	struct gi_cuda_map *frame_maps;  /* n_streams */
	struct gi_cuda_map *mirror_maps; /* n_streams: metadata mirrors of frame rings in device memory */
	struct gi_cuda_map streams_map;  /* ctx->streams, for the counter mirror */
	pthread_t thread;                /* launch mode: the launcher; persistent: the waker */
	int thread_started;
	uint32_t host_quit;              /* main → launcher */
	uint32_t waker_quit;             /* main → waker */
	uint32_t drained;                /* launcher → main */
	int thread_rc;
	int running;
	int stuck;                       /* stop timed out: never free what the GPU may touch */
	char err[GI_CUDA_ERRLEN];
	char desc[320];
};

static int gi_cu_check(struct gi_cuda_exec *c, CUresult r, const char *call, const char *file, int line)
{
	char eb[160];

	if (r == CUDA_SUCCESS)
		return 0;
	snprintf(c->err, sizeof(c->err), "%.80s failed at %s:%d: %s", call, file, line,
		 gi_cuda_drv_strerror(&c->drv, (int)r, eb, sizeof(eb)));
	return -EIO;
}

/* The one way this file calls CUDA: 0, or -EIO with the story in c->err. */
#define GI_CU(c, call) gi_cu_check((c), (call), #call, __FILE__, __LINE__)

static void gi_cuda_prefix_err(struct gi_cuda_exec *c, const char *what)
{
	char tmp[GI_CUDA_ERRLEN];
	snprintf(tmp, sizeof(tmp), "%.40s: %.270s", what, c->err);
	memcpy(c->err, tmp, sizeof(tmp));
}

/*
 * Device view of `host` (`len` bytes).  Device memory is used as it is;
 * host memory registered by someone else (a memory provider) is fine as it
 * is; plain host memory (the driver does not know the pointer) is
 * registered mapped here.
 */
static int gi_cuda_map_host(struct gi_cuda_exec *c, void *host, size_t len, struct gi_cuda_map *m, const char *what)
{
	const struct gi_cuda_drv *d = &c->drv;
	const unsigned type = gi_cuda_mem_type(d, host);
	CUresult r;
	int rc;

	m->host = host;
	if (type == CU_MEMORYTYPE_DEVICE) {
		m->dev = (CUdeviceptr)(uintptr_t)host;
		return 0;
	}
	if (type == 0) {
		r = d->mem_host_register(host, len, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
		if (r == CUDA_SUCCESS)
			m->registered = 1;
		else if (r != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED && /* shares a page with a registration: its mapping serves */
			 (rc = gi_cu_check(c, r, "cuMemHostRegister(DEVICEMAP)", __FILE__, __LINE__)) < 0)
			goto fail;
	}
	if ((rc = GI_CU(c, d->mem_host_get_device_pointer(&m->dev, host, 0))) < 0)
		goto fail;
	return 0;
fail:
	gi_cuda_prefix_err(c, what);
	return rc;
}

static void gi_cuda_unmap(struct gi_cuda_exec *c, struct gi_cuda_map *m)
{
	if (m->registered)
		(void)c->drv.mem_host_unregister(m->host);
	m->registered = 0;
}

static int gi_cuda_alloc_copy(struct gi_cuda_exec *c, CUdeviceptr *dev, const void *src, size_t len)
{
	int rc = GI_CU(c, c->drv.mem_alloc(dev, len ? len : 1));
	if (rc == 0 && src && len)
		rc = GI_CU(c, c->drv.memcpy_htod(*dev, src, len));
	return rc;
}

static int gi_cuda_attr(struct gi_cuda_exec *c, CUdevice_attribute a, int *v)
{
	return GI_CU(c, c->drv.device_get_attribute(v, a, c->drv.device));
}

/* Open the device and check this build can run on it; -ENODEV with the reason if not. */
static int gi_cuda_pick_device(struct gi_cuda_exec *c)
{
	int major = 0, minor = 0, map = 0, timeout = 0, rc;
	const char *dev = c->conf.cuda_device && c->conf.cuda_device[0] ? c->conf.cuda_device : "0";

	rc = gi_cuda_drv_open(&c->drv, dev, c->err, sizeof(c->err));
	if (rc == -ENOENT || rc == -ENODEV || rc == -ENOTSUP || rc == -ENOSYS) {
		char tmp[GI_CUDA_ERRLEN];
		snprintf(tmp, sizeof(tmp), "no CUDA device or driver found (%.260s)", c->err);
		memcpy(c->err, tmp, sizeof(tmp));
		return -ENODEV;
	}
	if (rc < 0)
		return rc;
	if ((rc = gi_cuda_attr(c, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major)) < 0 ||
	    (rc = gi_cuda_attr(c, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor)) < 0 ||
	    (rc = gi_cuda_attr(c, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, &map)) < 0 ||
	    (rc = gi_cuda_attr(c, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, &timeout)) < 0)
		return rc;
	if (major * 10 + minor < GI_CUDA_MIN_SM) {
		snprintf(c->err, sizeof(c->err), "CUDA device %s (%.80s) is sm_%d%d; this build runs on sm_%d and newer",
			 dev, c->drv.name, major, minor, GI_CUDA_MIN_SM);
		return -ENODEV;
	}
	if (!map) {
		snprintf(c->err, sizeof(c->err), "CUDA device %s (%.80s) cannot map host memory", dev, c->drv.name);
		return -ENODEV;
	}
	/* a display GPU's watchdog kills any kernel that runs for seconds */
	if (timeout && c->conf.mode == GI_EXEC_PERSISTENT) {
		snprintf(c->err, sizeof(c->err),
			 "CUDA device %s (%.80s, %s) drives a display and has a kernel watchdog "
			 "(KERNEL_EXEC_TIMEOUT), which would kill the persistent kernel; use executor.mode: launch, "
			 "or a GPU without a display",
			 dev, c->drv.name, c->drv.pci_bus_id);
		return -EINVAL;
	}
	int sms = 0;
	if ((rc = gi_cuda_attr(c, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms)) < 0)
		return rc;
	/* a persistent CTA per group must be resident at once, or some ring would never be served */
	if (c->conf.mode != GI_EXEC_LAUNCH && c->conf.n_groups > (uint32_t)sms) {
		snprintf(c->err, sizeof(c->err),
			 "%u ring groups need %u persistent CTAs, CUDA device %s (%.80s) has %d SMs; use fewer rx "
			 "queues or executor.mode: launch",
			 c->conf.n_groups, c->conf.n_groups, dev, c->drv.name, sms);
		return -EINVAL;
	}
	snprintf(c->desc, sizeof(c->desc), "cuda device %d (%.80s, sm_%d%d, %s), %s, %u CTA%s x %u threads%s",
		 c->drv.device_index, c->drv.name, major, minor, c->drv.pci_bus_id,
		 c->conf.mode == GI_EXEC_LAUNCH ? "launch" : "persistent", c->conf.n_groups,
		 c->conf.n_groups == 1 ? "" : "s", c->threads,
		 c->drv.emulated ? " [CUDA EMULATION on CPU threads: for tests, not a GPU]" : "");
	return 0;
}

static int gi_cuda_load_kernels(struct gi_cuda_exec *c)
{
	const struct gi_cuda_drv *d = &c->drv;
	CUresult r = d->module_load_data(&c->mod, gi_exec_cuda_image);
	int rc;

	if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_PTX ||
	    r == CUDA_ERROR_INVALID_IMAGE) {
		char eb[160];
		snprintf(c->err, sizeof(c->err),
			 "the kernels of this build (gpu_archs, CUDA %d.%d) cannot be loaded on %.60s: %s (rebuild with "
			 "its sm_XX in gpu_archs, or update the driver)",
			 CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, d->name, gi_cuda_drv_strerror(d, (int)r, eb, sizeof(eb)));
		return -ENODEV;
	}
	if ((rc = gi_cu_check(c, r, "cuModuleLoadData(gi_exec_cuda_image)", __FILE__, __LINE__)) < 0)
		return rc;
	if ((rc = GI_CU(c, d->module_get_function(&c->k_persistent, c->mod, "k_persistent"))) < 0 ||
	    (rc = GI_CU(c, d->module_get_function(&c->k_pass, c->mod, "k_pass"))) < 0 ||
	    (rc = GI_CU(c, d->module_get_function(&c->k_tick, c->mod, "k_tick"))) < 0 ||
	    (rc = GI_CU(c, d->module_get_function(&c->k_probe, c->mod, "k_clock_probe"))) < 0)
		return rc;
	return 0;
}

/* Rings in group order (group g owns a contiguous run), and each group's streams. */
static int gi_cuda_setup_rings(struct gi_cuda_exec *c, uint32_t *max_stride, uint32_t *max_pkts)
{
	const struct gi_executor_conf *cf = &c->conf;
	struct gi_cuda_ring *hr = calloc(cf->n_rings ? cf->n_rings : 1, sizeof(*hr));
	struct gi_cuda_group *hg = calloc(cf->n_groups ? cf->n_groups : 1, sizeof(*hg));
	uint16_t *hs = calloc(cf->ctx->n_streams ? cf->ctx->n_streams : 1, sizeof(*hs));
	uint32_t pos = 0, spos = 0;
	char what[64];
	int rc = 0;

	if (!hr || !hg || !hs) {
		rc = -ENOMEM;
		goto out;
	}
	*max_stride = 0;
	*max_pkts = 1;
	for (uint32_t g = 0; g < cf->n_groups && rc == 0; g++) {
		const struct gi_exec_group *grp = &cf->groups[g];
		uint32_t max_payload = 0;
		for (uint32_t k = 0; k < grp->n_streams; k++)
			max_payload = GI_MAX(max_payload, cf->ctx->streams[grp->streams[k]].payload_bytes);
		hg[g] = (struct gi_cuda_group){ .first_ring = pos, .n_rings = grp->n_rings, .first_stream = spos,
						.n_streams = grp->n_streams, .lanes = gi_cuda_place_lanes(max_payload),
						.chunks = (max_payload + 15u) / 16u };
		for (uint32_t k = 0; k < grp->n_rings && rc == 0; k++, pos++) {
			uint32_t r = grp->rings[k];
			struct gi_batch_ring *ring = cf->rings[r];
			if (ring->magic != GI_RING_MAGIC) {
				snprintf(c->err, sizeof(c->err), "batch ring %u is not initialised (bad magic)", r);
				rc = -EINVAL;
				break;
			}
			snprintf(what, sizeof(what), "batch ring %u", r);
			rc = gi_cuda_map_host(c, ring, ring->ring_bytes, &c->ring_maps[r], what);
			hr[pos] = (struct gi_cuda_ring){ .ring = (struct gi_batch_ring *)(uintptr_t)c->ring_maps[r].dev,
							 .size = ring->size, .max_pkts = ring->max_pkts, .split = ring->split,
							 .stride = ring->slot_stride, .tail = GI_LOAD_RELAXED_U64(&ring->tail) };
			*max_stride = GI_MAX(*max_stride, ring->slot_stride);
			*max_pkts = GI_MAX(*max_pkts, ring->max_pkts);
		}
		for (uint32_t k = 0; k < grp->n_streams; k++) {
			struct gi_stream_rt *st = &cf->ctx->streams[grp->streams[k]];
			st->group = (uint16_t)g; /* its CTA: phase 1 drops what another CTA owns */
			st->local = (uint16_t)k;
			hs[spos++] = grp->streams[k];
		}
	}
	if (rc == 0)
		rc = gi_cuda_alloc_copy(c, &c->d_rings, hr, cf->n_rings * sizeof(*hr));
	if (rc == 0)
		rc = gi_cuda_alloc_copy(c, &c->d_groups, hg, cf->n_groups * sizeof(*hg));
	if (rc == 0)
		rc = gi_cuda_alloc_copy(c, &c->d_group_streams, hs, spos * sizeof(*hs));
out:
	free(hr);
	free(hg);
	free(hs);
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
		size_t bytes = 0;

		/* a frame ring already in device memory has no host-readable header */
		if (gi_cuda_mem_type(&c->drv, h) != CU_MEMORYTYPE_DEVICE)
			bytes = gi_frame_ring_bytes_of(h);
		snprintf(what, sizeof(what), "stream %u frame ring", s);
		rc = gi_cuda_map_host(c, h, bytes, &c->frame_maps[s], what);
		ds[s] = ctx->streams[s];
		ds[s].ring = (struct gi_frame_ring_hdr *)(uintptr_t)c->frame_maps[s].dev;
		/* frames in GPU memory: the consumers' shared-memory mirror is written by the kernel too */
		struct gi_frame_ring_hdr *m = ctx->streams[s].mirror;
		if (rc == 0 && m) {
			snprintf(what, sizeof(what), "stream %u frame ring mirror", s);
			rc = gi_cuda_map_host(c, m, gi_frame_mirror_bytes(m->n_slots, m->packets_per_frame),
					      &c->mirror_maps[s], what);
			ds[s].mirror = (struct gi_frame_ring_hdr *)(uintptr_t)c->mirror_maps[s].dev;
		}
	}
	if (rc == 0 && ctx->n_streams)
		rc = gi_cuda_map_host(c, ctx->streams, ctx->n_streams * sizeof(*ctx->streams), &c->streams_map,
				      "stream counters");
	if (rc == 0)
		rc = gi_cuda_alloc_copy(c, &c->d_streams, ds, ctx->n_streams * sizeof(*ds));
	free(ds);
	if (rc == 0)
		rc = gi_cuda_alloc_copy(c, &c->d_map, ctx->map, (size_t)ctx->n_ports * 65536u * sizeof(uint16_t));
	return rc;
}

/* A small host block the kernels read or write through its mapping. */
static int gi_cuda_host_alloc(struct gi_cuda_exec *c, void **host, CUdeviceptr *dev, size_t len)
{
	int rc = GI_CU(c, c->drv.mem_host_alloc(host, len, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	if (rc < 0)
		return rc;
	memset(*host, 0, len);
	return GI_CU(c, c->drv.mem_host_get_device_pointer(dev, *host, 0));
}

static int gi_cuda_setup(struct gi_cuda_exec *c)
{
	struct gi_exec_ctx *ctx = c->conf.ctx;
	const struct gi_cuda_drv *d;
	uint32_t max_stride = 0, max_pkts = 1;
	int optin = 0, rc;
	CUdeviceptr dev;

	if ((rc = gi_cuda_pick_device(c)) < 0)
		return rc;
	d = &c->drv;
	if ((rc = gi_cuda_load_kernels(c)) < 0)
		return rc;
	c->ring_maps = calloc(c->conf.n_rings ? c->conf.n_rings : 1, sizeof(*c->ring_maps));
	c->frame_maps = calloc(ctx->n_streams ? ctx->n_streams : 1, sizeof(*c->frame_maps));
	c->mirror_maps = calloc(ctx->n_streams ? ctx->n_streams : 1, sizeof(*c->mirror_maps));
	if (!c->ring_maps || !c->frame_maps || !c->mirror_maps)
		return -ENOMEM;
	if ((rc = GI_CU(c, d->stream_create(&c->stream, CU_STREAM_NON_BLOCKING))) < 0)
		return rc;
	c->have_stream = 1;
	if ((rc = gi_cuda_host_alloc(c, (void **)&c->ctl, &dev, sizeof(*c->ctl))) < 0)
		return rc;
	c->args.ctl = (struct gi_cuda_ctl *)(uintptr_t)dev;
	if ((rc = gi_cuda_host_alloc(c, (void **)&c->ctr, &dev, c->conf.n_groups * sizeof(*c->ctr))) < 0)
		return rc;
	c->args.ctr_mirror = (struct gi_exec_counters *)(uintptr_t)dev;

	if ((rc = gi_cuda_setup_rings(c, &max_stride, &max_pkts)) < 0 || (rc = gi_cuda_setup_streams(c)) < 0)
		return rc;

	struct gi_cuda_state hs;
	memset(&hs, 0, sizeof(hs));
	hs.ctx = (struct gi_exec_ctx){ .n_streams = ctx->n_streams, .n_ports = ctx->n_ports,
				       .streams = (struct gi_stream_rt *)(uintptr_t)c->d_streams,
				       .map = (uint16_t *)(uintptr_t)c->d_map };
	if ((rc = gi_cuda_alloc_copy(c, &c->d_state, &hs, sizeof(hs))) < 0)
		return rc;
	/* zeroed device counters: the mirror starts from the same zeros */
	if ((rc = gi_cuda_alloc_copy(c, &c->d_ctr, c->ctr, c->conf.n_groups * sizeof(*c->ctr))) < 0)
		return rc;

	c->args.state = (struct gi_cuda_state *)(uintptr_t)c->d_state;
	c->args.rings = (struct gi_cuda_ring *)(uintptr_t)c->d_rings;
	c->args.groups = (struct gi_cuda_group *)(uintptr_t)c->d_groups;
	c->args.group_streams = (uint16_t *)(uintptr_t)c->d_group_streams;
	c->args.ctr = (struct gi_exec_counters *)(uintptr_t)c->d_ctr;
	c->args.streams_mirror = (struct gi_stream_rt *)(uintptr_t)c->streams_map.dev;
	c->args.n_rings = c->conf.n_rings;
	c->args.n_streams = ctx->n_streams;
	c->args.n_groups = c->conf.n_groups;
	c->args.idle = (uint32_t)c->conf.idle;
	c->args.tick_ns = c->conf.tick_ns;
	c->args.timing = c->conf.step_timing != 0;
	c->args.max_pkts = max_pkts;
	if ((rc = gi_cuda_attr(c, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &optin)) < 0)
		return rc;
	/* persistent CTAs stage ahead into a second buffer where the device has room for it */
	const uint32_t two = c->conf.mode == GI_EXEC_PERSISTENT;
	c->args.smem_bytes = gi_cuda_smem_bytes(max_stride, max_pkts, two, &c->args.slot_off, &c->args.slot2_off,
						&c->args.scratch_off);
	if (two && c->args.smem_bytes > (uint32_t)optin) {
		c->args.smem_bytes = gi_cuda_smem_bytes(max_stride, max_pkts, 0, &c->args.slot_off,
							&c->args.slot2_off, &c->args.scratch_off);
		if (c->args.smem_bytes <= (uint32_t)optin) {
			size_t at = strlen(c->desc);
			snprintf(c->desc + at, sizeof(c->desc) - at,
				 "; no staging ahead: a batch of %u packets leaves no room for a second staging "
				 "buffer",
				 max_pkts);
		}
	}
	if (c->args.smem_bytes > (uint32_t)optin) {
		snprintf(c->err, sizeof(c->err),
			 "a batch of %u packets needs %u bytes of shared memory per CTA, this device allows %d (lower "
			 "batch.max_packets)",
			 max_pkts, c->args.smem_bytes, optin);
		return -EINVAL;
	}
	/* above 48 KiB a kernel must opt in to dynamic shared memory */
	if ((rc = GI_CU(c, d->func_set_attribute(c->k_persistent, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
						 (int)c->args.smem_bytes))) < 0 ||
	    (rc = GI_CU(c, d->func_set_attribute(c->k_pass, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
						 (int)c->args.smem_bytes))) < 0)
		return rc;
	if (c->conf.mode == GI_EXEC_LAUNCH) {
		if ((rc = GI_CU(c, d->event_create(&c->pass_done, CU_EVENT_DISABLE_TIMING))) < 0)
			return rc;
		c->have_event = 1;
		if ((rc = GI_CU(c, d->event_create(&c->tick_done, CU_EVENT_DISABLE_TIMING))) < 0)
			return rc;
		c->have_event = 2;
	}
	return 0;
}

int gi_cuda_exec_create(const struct gi_executor_conf *conf, struct gi_cuda_exec **out, char *why, size_t whylen)
{
	struct gi_cuda_exec *c;
	int rc;

	if (!conf->ctx || (conf->n_rings && !conf->rings) || !conf->groups || !conf->n_groups ||
	    (conf->mode != GI_EXEC_AUTO && conf->mode != GI_EXEC_PERSISTENT && conf->mode != GI_EXEC_LAUNCH)) {
		snprintf(why, whylen, "invalid executor configuration (ctx, rings, groups or mode %d)", (int)conf->mode);
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
	if (c->conf.mode == GI_EXEC_AUTO)
		c->conf.mode = GI_EXEC_PERSISTENT;
	c->threads = c->conf.threads_per_ring ? c->conf.threads_per_ring : GI_CUDA_DEFAULT_THREADS;
	rc = gi_cuda_setup(c);
	if (rc < 0) {
		snprintf(why, whylen, "%s", rc == -ENOMEM && !c->err[0] ? "out of memory" : c->err);
		gi_cuda_exec_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* One kernel on the executor's stream: `ctas` x `threads`. */
static int gi_cuda_launch(struct gi_cuda_exec *c, CUfunction f, const char *name, unsigned ctas, unsigned threads,
			  unsigned smem, void **params)
{
	CUresult r = c->drv.launch_kernel(f, ctas, 1, 1, threads, 1, 1, smem, c->stream, params, NULL);
	return gi_cu_check(c, r, name, __FILE__, __LINE__);
}

static int gi_cuda_launch_tick(struct gi_cuda_exec *c, uint32_t flush)
{
	void *p[] = { &c->args, &flush };
	return gi_cuda_launch(c, c->k_tick, "cuLaunchKernel(k_tick)", c->conf.n_groups, c->threads, GI_CUDA_SMEM_CTL,
			      p);
}

/*
 * CLOCK_MONOTONIC = %globaltimer + offset.  A probe kernel stores
 * %globaltimer to mapped host memory; the host takes its clock the moment
 * the value appears, so the offset is off by one PCIe write (~1 µs) at
 * most, and kernel launch latency (module loading on the first launch
 * included) does not enter it.  The first probe only warms up.  Each may
 * take up to 10 s: the first launch loads the module (a JIT compile where
 * the fatbin has no code for the GPU's architecture), and the CUDA
 * emulation's CPU threads start slowly on a loaded machine.
 */
static int gi_cuda_calibrate(struct gi_cuda_exec *c)
{
	void *p[] = { &c->args.ctl };
	int rc;

	for (int k = 0; k < 2; k++) {
		uint64_t gt, deadline = gi_now_ns() + 10000000000ull;
		__atomic_store_n(&c->ctl->probe_gt, 0, __ATOMIC_RELAXED);
		if ((rc = gi_cuda_launch(c, c->k_probe, "cuLaunchKernel(k_clock_probe)", 1, 1, 0, p)) < 0)
			return rc;
		while ((gt = __atomic_load_n(&c->ctl->probe_gt, __ATOMIC_ACQUIRE)) == 0) {
			CUresult r = c->drv.stream_query(c->stream);
			if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
				return gi_cu_check(c, r, "the clock probe kernel (cuStreamQuery)", __FILE__, __LINE__);
			if (gi_now_ns() > deadline) {
				snprintf(c->err, sizeof(c->err), "clock probe kernel did not run within 10 s");
				return -ETIMEDOUT;
			}
		}
		c->args.clock_offset_ns = (int64_t)(gi_now_ns() - gt);
	}
	return GI_CU(c, c->drv.stream_synchronize(c->stream)); /* the probe is done: it ends in microseconds */
}

/*
 * Launch mode: passes and ticks on the one in-order stream (its order is
 * what keeps each group's CTA the single writer of its streams).  A pass is
 * launched when a ring holds a batch the kernels have not completed (head
 * != tail) and the last pass has finished (its event): one pass in flight
 * serves whatever arrived while it ran, instead of a queue of launches each
 * finding little; a tick likewise, every tick_ns once the last one has
 * finished (its event).  Compared with the tail, not with the head at the last
 * launch: a pass that stopped early (a pause came) leaves batches behind,
 * and on a full ring no new head would ever ask for them.
 */
static void *gi_cuda_launcher(void *arg)
{
	struct gi_cuda_exec *c = arg;
	const struct gi_cuda_drv *d = &c->drv;
	struct gi_idle idle;
	uint64_t next_tick = gi_now_ns() + c->conf.tick_ns;
	int dirty = 0, rc = 0;

	gi_idle_init(&idle, c->conf.idle);
	if (gi_cuda_drv_make_current(&c->drv) < 0) { /* the current context is per thread */
		snprintf(c->err, sizeof(c->err), "launcher thread: cannot make the CUDA context current");
		rc = -EIO;
	}
	for (; rc == 0;) {
		int quit = __atomic_load_n(&c->host_quit, __ATOMIC_ACQUIRE);
		uint32_t paused = __atomic_load_n(&c->ctl->paused, __ATOMIC_RELAXED);
		uint32_t n = 0;

		if (paused == GI_EXEC_RUN) {
			for (uint32_t r = 0; r < c->conf.n_rings; r++) {
				uint64_t head = GI_LOAD_ACQUIRE_U64(&c->conf.rings[r]->head);
				n += head != GI_LOAD_ACQUIRE_U64(&c->conf.rings[r]->tail);
			}
			CUresult e = n ? d->event_query(c->pass_done) : CUDA_ERROR_NOT_READY;
			if (n && e == CUDA_SUCCESS) {
				void *p[] = { &c->args };
				if ((rc = gi_cuda_launch(c, c->k_pass, "cuLaunchKernel(k_pass)", c->conf.n_groups, c->threads,
							 c->args.smem_bytes, p)) < 0 ||
				    (rc = GI_CU(c, d->event_record(c->pass_done, c->stream))) < 0)
					break;
			} else if (n && e != CUDA_ERROR_NOT_READY) {
				rc = gi_cu_check(c, e, "the last pass (cuEventQuery)", __FILE__, __LINE__);
				break;
			}
		}
		if (quit && n == 0 && paused != GI_EXEC_HANG)
			break;
		uint64_t now = gi_now_ns();
		/* no ticks while paused: k_tick counts progress, and a paused executor makes none */
		if (paused == GI_EXEC_RUN && (now >= next_tick || (n == 0 && dirty))) {
			/* timeouts every tick; and when going idle, so stream counters reach the host now.
			 * One tick in the stream at most: behind a pass slower than tick_ns, ticks
			 * launched each tick_ns would queue up, take the GPU from the passes, and
			 * count as progress long after the executor stopped (a pause, a hang) */
			CUresult e = d->event_query(c->tick_done);
			if (e == CUDA_SUCCESS) {
				if ((rc = gi_cuda_launch_tick(c, 0)) < 0 ||
				    (rc = GI_CU(c, d->event_record(c->tick_done, c->stream))) < 0)
					break;
				next_tick = now + c->conf.tick_ns;
				dirty = 0;
			} else if (e != CUDA_ERROR_NOT_READY) {
				rc = gi_cu_check(c, e, "the last tick (cuEventQuery)", __FILE__, __LINE__);
				break;
			}
		}
		/* the kernels moved the mirrors' next_frame: wake the consumers asleep on them */
		for (uint32_t s = 0; s < c->conf.ctx->n_streams; s++)
			gi_stream_wake(&c->conf.ctx->streams[s]);
		CUresult e = d->stream_query(c->stream); /* a faulting kernel must stop us, not hang us */
		if (e != CUDA_SUCCESS && e != CUDA_ERROR_NOT_READY &&
		    (rc = gi_cu_check(c, e, "a launched kernel (cuStreamQuery)", __FILE__, __LINE__)) < 0)
			break;
		if (n) {
			dirty = 1;
			gi_idle_work(&idle);
		} else {
			gi_idle_empty(&idle, next_tick > now ? next_tick - now : 0);
		}
	}
	if (rc == 0)
		rc = gi_cuda_launch_tick(c, 1);
	for (CUresult e = CUDA_ERROR_NOT_READY; rc == 0 && e == CUDA_ERROR_NOT_READY;) {
		e = d->stream_query(c->stream);
		if (e == CUDA_ERROR_NOT_READY) {
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		} else {
			rc = gi_cu_check(c, e, "the final flush kernel (cuStreamQuery)", __FILE__, __LINE__);
		}
	}
	for (uint32_t s = 0; s < c->conf.ctx->n_streams; s++) /* what the final flush published */
		gi_stream_wake(&c->conf.ctx->streams[s]);
	c->thread_rc = rc;
	__atomic_store_n(&c->drained, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Persistent mode: the kernel publishes frames with nobody on the host
 * watching, and the GPU cannot make system calls.  This thread polls each
 * stream's consumer header (host memory: the ring or its mirror) and wakes
 * the consumers asleep on it when next_frame moves.  While a consumer
 * sleeps it polls with the executor's idle policy (`busy` spins,
 * `adaptive` is at most GI_IDLE_MAX_SLEEP_NS late); while none does it
 * polls every GI_IDLE_MAX_SLEEP_NS whatever the policy, so a persistent
 * executor with spinning consumers, or none, costs the host next to
 * nothing.  It touches no CUDA state.  Stopped once the kernel has
 * drained, and the stop wakes for what the final flush published.
 */
static void *gi_cuda_waker(void *arg)
{
	struct gi_cuda_exec *c = arg;
	struct gi_idle idle;

	gi_idle_init(&idle, c->conf.idle);
	while (!__atomic_load_n(&c->waker_quit, __ATOMIC_ACQUIRE)) {
		int moved = 0, sleepers = 0;
		for (uint32_t s = 0; s < c->conf.ctx->n_streams; s++) {
			struct gi_stream_rt *st = &c->conf.ctx->streams[s];
			moved |= gi_stream_wake(st);
			sleepers |= st->waiters && __atomic_load_n(st->waiters, __ATOMIC_RELAXED);
		}
		if (moved) {
			gi_idle_work(&idle);
		} else if (sleepers) {
			gi_idle_empty(&idle, GI_IDLE_MAX_SLEEP_NS);
		} else {
			struct timespec ts = { 0, GI_IDLE_MAX_SLEEP_NS };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* The launcher or the waker, on the executor's cpu when one is set. */
static int gi_cuda_start_thread(struct gi_cuda_exec *c, void *(*fn)(void *), const char *what, const char *name)
{
	pthread_attr_t attr;
	int rc;

	pthread_attr_init(&attr);
	if (c->conf.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(c->conf.cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	rc = pthread_create(&c->thread, &attr, fn, c);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		snprintf(c->err, sizeof(c->err), "cannot start the %s thread: %s", what, strerror(rc));
		return -rc;
	}
	pthread_setname_np(c->thread, name);
	c->thread_started = 1;
	return 0;
}

/* Persistent mode, the kernel has ended: no more moves but the last ones. */
static void gi_cuda_stop_waker(struct gi_cuda_exec *c)
{
	if (c->conf.mode != GI_EXEC_PERSISTENT || !c->thread_started)
		return;
	__atomic_store_n(&c->waker_quit, 1, __ATOMIC_RELEASE);
	pthread_join(c->thread, NULL);
	c->thread_started = 0;
	for (uint32_t s = 0; s < c->conf.ctx->n_streams; s++) /* what the final flush published */
		gi_stream_wake(&c->conf.ctx->streams[s]);
}

int gi_cuda_exec_start(struct gi_cuda_exec *c)
{
	int rc;

	if (c->running)
		return 0;
	c->err[0] = '\0';
	if (gi_cuda_drv_make_current(&c->drv) < 0) {
		snprintf(c->err, sizeof(c->err), "cannot make the CUDA context current");
		return -EIO;
	}
	if ((rc = gi_cuda_calibrate(c)) < 0)
		return rc;
	if (c->conf.mode == GI_EXEC_PERSISTENT) {
		void *p[] = { &c->args };
		/* the waker first: a kernel in flight is never left without one */
		c->waker_quit = 0;
		if ((rc = gi_cuda_start_thread(c, gi_cuda_waker, "waker", "gi-exec-wake")) < 0)
			return rc;
		if ((rc = gi_cuda_launch(c, c->k_persistent, "cuLaunchKernel(k_persistent)", c->conf.n_groups,
					 c->threads, c->args.smem_bytes, p)) < 0) {
			gi_cuda_stop_waker(c);
			return rc;
		}
	} else if ((rc = gi_cuda_start_thread(c, gi_cuda_launcher, "launcher", "gi-exec-cuda")) < 0) {
		return rc;
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

	for (uint32_t g = 0; g < c->conf.n_groups; g++) {
		if ((rc = GI_CU(c, c->drv.memcpy_dtoh(&ctr, c->d_ctr + g * sizeof(ctr), sizeof(ctr)))) < 0)
			return rc;
		for (size_t w = 0; w < sizeof(ctr) / 8; w++)
			__atomic_store_n((uint64_t *)&c->ctr[g] + w, ((uint64_t *)&ctr)[w], __ATOMIC_RELAXED);
	}
	if (ctx->n_streams == 0)
		return 0;
	struct gi_stream_rt *ds = malloc(ctx->n_streams * sizeof(*ds));
	if (!ds)
		return -ENOMEM;
	rc = GI_CU(c, c->drv.memcpy_dtoh(ds, c->d_streams, ctx->n_streams * sizeof(*ds)));
	for (uint32_t s = 0; rc == 0 && s < ctx->n_streams; s++) {
		struct gi_stream_rt *h = &ctx->streams[s];
		/* the whole sequencing state (a host executor could go on from it) */
		h->started = ds[s].started;
		h->epochs = ds[s].epochs;
		h->next_pub = ds[s].next_pub;
		h->max_frame = ds[s].max_frame;
		h->min_frame = ds[s].min_frame;
		h->seq_max = ds[s].seq_max;
		h->frame_base = ds[s].frame_base;
		h->raw_max = ds[s].raw_max;
		h->raw_origin = ds[s].raw_origin;
		h->seq_origin = ds[s].seq_origin;
		h->prev_raw_max = ds[s].prev_raw_max;
		h->prev_seq_max = ds[s].prev_seq_max;
		h->vis_next = ds[s].vis_next;
		h->packets = ds[s].packets; /* rocev2.frame_end auto: what the epoch learned (gi_stream_learn_end) */
		h->end_unknown = ds[s].end_unknown;
		h->div_packets = ds[s].div_packets;
		h->div_payload = ds[s].div_payload;
		h->div_slots = ds[s].div_slots;
		h->slot_stride = ds[s].slot_stride;
		h->mirror_stride = ds[s].mirror_stride;
		h->payload_off = ds[s].payload_off;
		h->tensor = ds[s].tensor;
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
	(void)gi_cuda_drv_make_current(&c->drv); /* stop may come from another thread than start */
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
			CUresult e = c->drv.stream_query(c->stream);
			if (e != CUDA_ERROR_NOT_READY) {
				rc = gi_cu_check(c, e, "the persistent kernel (cuStreamQuery)", __FILE__, __LINE__);
				gi_cuda_stop_waker(c);
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
	const struct gi_cuda_drv *d;

	if (!c)
		return;
	if (c->running && gi_cuda_exec_stop(c, 1000000000ull) == -ETIMEDOUT)
		c->stuck = 1;
	if (c->stuck)
		return; /* the GPU may still use all of it; process exit reclaims it */
	d = &c->drv;
	if (d->lib) {
		(void)gi_cuda_drv_make_current(d);
		/* a start that failed half-way may have left a kernel in flight (the
		 * clock probe): nothing is freed under it.  Not stuck, so it ends. */
		if (c->have_stream)
			(void)d->stream_synchronize(c->stream);
		for (uint32_t r = 0; c->ring_maps && r < c->conf.n_rings; r++)
			gi_cuda_unmap(c, &c->ring_maps[r]);
		for (uint32_t s = 0; c->frame_maps && s < c->conf.ctx->n_streams; s++)
			gi_cuda_unmap(c, &c->frame_maps[s]);
		for (uint32_t s = 0; c->mirror_maps && s < c->conf.ctx->n_streams; s++)
			gi_cuda_unmap(c, &c->mirror_maps[s]);
		gi_cuda_unmap(c, &c->streams_map);
		CUdeviceptr dptrs[] = { c->d_state, c->d_rings, c->d_groups, c->d_group_streams, c->d_ctr, c->d_streams,
					c->d_map };
		for (size_t i = 0; i < sizeof(dptrs) / sizeof(dptrs[0]); i++)
			if (dptrs[i])
				(void)d->mem_free(dptrs[i]);
		if (c->ctl)
			(void)d->mem_free_host(c->ctl);
		if (c->ctr)
			(void)d->mem_free_host(c->ctr);
		if (c->have_event > 1)
			(void)d->event_destroy(c->tick_done);
		if (c->have_event)
			(void)d->event_destroy(c->pass_done);
		if (c->have_stream)
			(void)d->stream_destroy(c->stream);
		if (c->mod)
			(void)d->module_unload(c->mod);
	}
	gi_cuda_drv_close(&c->drv);
	free(c->ring_maps);
	free(c->frame_maps);
	free(c->mirror_maps);
	free(c);
}

uint32_t gi_cuda_exec_groups(const struct gi_cuda_exec *c)
{
	return c->conf.n_groups;
}

const struct gi_exec_counters *gi_cuda_exec_counters(const struct gi_cuda_exec *c, uint32_t g)
{
	return &c->ctr[g];
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
