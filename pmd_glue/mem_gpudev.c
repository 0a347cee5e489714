/*
 * mem_gpudev.c — the `gpudev` memory provider: DPDK's gpudev library (see
 * mem.h for the interface).
 *
 * Preferred when gpudev reports a device, since DPDK then owns the GPU
 * context and its drivers know the platform's quirks.
 *
 * device:      rte_gpu_mem_alloc(dev, size, 64 KiB); va is the GPU address.
 * host_pinned: mmap (hugepages when asked) + rte_gpu_mem_register.  gpudev
 *              has no call that returns a device pointer for registered
 *              memory; its CUDA driver refuses registrations whose device
 *              pointer differs from the host one, so exec_delta is 0.
 * flush:       rte_gpu_wmb(dev), probed once at bind: a gpudev driver without
 *              it (-ENOTSUP) gets one warning and no flush, never a silent skip.
 *
 * Main thread (alloc/free); flush from the rx lcore, once per batch.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_gpudev.h>

#include "log.h"
#include "mem.h"

#define GI_GPU_PAGE ((size_t)64 << 10)

static int16_t dev_of(const struct gi_mem_provider *p)
{
	return (int16_t)(intptr_t)p->ctx;
}

static int gpudev_ready(const struct gi_mem_provider *p, const char *what, char *err, size_t errlen)
{
	struct rte_gpu_info info;

	if (rte_gpu_count_avail() == 0 || rte_gpu_info_get(dev_of(p), &info) != 0) {
		snprintf(err, errlen,
			 "gpudev provider: %s needs a DPDK gpudev device and gpudev has none (no GPU, or its CUDA "
			 "driver knows no Hopper/Ada/Blackwell PCI IDs); use backend: cuda, or backend: host",
			 what);
		return -ENODEV;
	}
	return 0;
}

static int gpudev_device_alloc(const struct gi_mem_provider *p, size_t len, size_t align, bool want_hugepages,
			       struct gi_mem_region *out, char *err, size_t errlen)
{
	size_t sz = (len + GI_GPU_PAGE - 1) & ~(GI_GPU_PAGE - 1);
	void *va;
	int rc;

	(void)want_hugepages;
	memset(out, 0, sizeof(*out));
	if ((rc = gpudev_ready(p, "device memory", err, errlen)) < 0)
		return rc;
	if (align > GI_GPU_PAGE || (align & (align - 1))) {
		snprintf(err, errlen, "gpudev device memory: alignment %zu is not a power of two up to 64 KiB", align);
		return -EINVAL;
	}
	va = rte_gpu_mem_alloc(dev_of(p), sz, (unsigned)GI_GPU_PAGE);
	if (!va) {
		rc = rte_errno ? rte_errno : ENOMEM;
		snprintf(err, errlen,
			 "gpudev device memory: rte_gpu_mem_alloc of %zu bytes on gpu %d failed: %s (lower mbufs, or "
			 "check free memory with nvidia-smi)",
			 sz, dev_of(p), rte_strerror(rc));
		return -rc;
	}
	out->va = va;
	out->len = sz;
	out->page_sz = GI_GPU_PAGE;
	out->exec_delta = 0;
	out->provider = p;
	return 0;
}

static void gpudev_device_free(struct gi_mem_region *r)
{
	if (r->va)
		rte_gpu_mem_free(dev_of(r->provider), r->va);
	r->va = NULL;
}

static int gpudev_register_host(const struct gi_mem_provider *p, void *va, size_t len, struct gi_mem_region *out,
				char *err, size_t errlen)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = gpudev_ready(p, "host_pinned memory", err, errlen)) < 0)
		return rc;
	if (((uintptr_t)va & (pg - 1)) || (len & (pg - 1)) || len == 0) {
		snprintf(err, errlen, "gpudev host_pinned memory: %p + %zu is not page aligned", va, len);
		return -EINVAL;
	}
	if (rte_gpu_mem_register(dev_of(p), len, va) != 0) {
		rc = rte_errno ? rte_errno : EPERM;
		snprintf(err, errlen, "gpudev host_pinned memory: rte_gpu_mem_register of %zu bytes on gpu %d failed: %s",
			 len, dev_of(p), rte_strerror(rc));
		return -rc;
	}
	out->va = va;
	out->len = len;
	out->page_sz = pg;
	out->exec_delta = 0;
	out->borrowed = true;
	out->provider = p;
	return 0;
}

static int gpudev_pinned_alloc(const struct gi_mem_provider *p, size_t len, size_t align, bool want_hugepages,
			       struct gi_mem_region *out, char *err, size_t errlen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = gpudev_ready(p, "host_pinned memory", err, errlen)) < 0)
		return rc;
	return gi_mem_host_map_registered(p, gpudev_register_host, len, align, want_hugepages, out, err, errlen);
}

static void gpudev_pinned_free(struct gi_mem_region *r)
{
	if (!r->va)
		return;
	rte_gpu_mem_unregister(dev_of(r->provider), r->va);
	if (!r->borrowed)
		gi_mem_host_unmap(r);
	r->va = NULL;
}

static void gpudev_flush(void *ctx)
{
	/* the bind-time probe proved the driver has it; nothing to report per batch */
	(void)rte_gpu_wmb((int16_t)(intptr_t)ctx);
}

gi_mem_flush_fn gi_mem_gpudev_flush_for(int16_t dev_id, int probe_rc)
{
	if (probe_rc == -ENOTSUP) {
		gi_log(GI_LOG_WARNING, "gpudev: GPU %d's driver has no write barrier (rte_gpu_wmb: %s): with device "
		       "pools a kernel may read packet bytes before the NIC's writes land on platforms that do not "
		       "order GPUDirect RDMA writes; use backend: cuda, which flushes through the driver API",
		       (int)dev_id, strerror(ENOTSUP));
		return NULL;
	}
	return gpudev_flush; /* 0, or a device gpudev does not know: its pools fail to allocate first */
}

void gi_mem_gpudev_bind(struct gi_mem_provider providers[GI_MEM_N_KINDS], int16_t dev_id)
{
	void *ctx = (void *)(intptr_t)dev_id;
	gi_mem_flush_fn flush = gi_mem_gpudev_flush_for(dev_id, rte_gpu_wmb(dev_id));

	providers[GI_MEM_HOST] = gi_mem_host_provider;
	providers[GI_MEM_HOST_PINNED] = (struct gi_mem_provider){
		.name = "gpudev",
		.kind = GI_MEM_HOST_PINNED,
		.ctx = ctx,
		.alloc = gpudev_pinned_alloc,
		.free = gpudev_pinned_free,
		.register_host = gpudev_register_host,
	};
	providers[GI_MEM_DEVICE] = (struct gi_mem_provider){
		.name = "gpudev",
		.kind = GI_MEM_DEVICE,
		.ctx = ctx,
		.alloc = gpudev_device_alloc,
		.free = gpudev_device_free,
		.flush = flush,
	};
}
