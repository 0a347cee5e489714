/*
 * mem_cuda.c — the `cuda` memory provider: CUDA driver API through the
 * run-time loader in kernels/cuda_drv.h (see mem.h for the interface).
 *
 * Used when DPDK's gpudev sees no GPU — its CUDA driver matches GPUs by PCI
 * ID and has none for Hopper, Ada or Blackwell — but the NVIDIA driver does.
 *
 * device:      cuMemAlloc, 64 KiB aligned, SYNC_MEMOPS set; the region's va
 *              is the GPU virtual address.
 * host_pinned: mmap (hugepages when asked) + cuMemHostRegister(DEVICEMAP |
 *              PORTABLE); exec_delta = device pointer − host pointer.
 *
 * Main thread (alloc/free); flush from the rx lcore, once per batch.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cuda_drv.h"
#include "log.h"
#include "mem.h"

/* GPUDirect RDMA pins GPU memory in 64 KiB pages: a buffer region the NIC
 * writes into must start and end on one. */
#define GI_GPU_PAGE ((size_t)64 << 10)

#if HAVE_CUDA_DRIVER

static int cuda_ready(struct gi_cuda_drv *d, const char *what, char *err, size_t errlen)
{
	if (!d || !d->lib) {
		snprintf(err, errlen,
			 "cuda provider: %s needs the CUDA driver, which is not loaded (no GPU or NVIDIA driver "
			 "found); use backend: host with kind: host",
			 what);
		return -ENODEV;
	}
	/* allocation calls act on the calling thread's current context */
	if (gi_cuda_drv_make_current(d) < 0) {
		snprintf(err, errlen, "cuda provider: %s: cannot make the CUDA context of device %d current", what,
			 d->device_index);
		return -EIO;
	}
	return 0;
}

static int cuda_device_alloc(const struct gi_mem_provider *p, size_t len, size_t align, bool want_hugepages,
			     struct gi_mem_region *out, char *err, size_t errlen)
{
	struct gi_cuda_drv *d = p->ctx;
	size_t sz = (len + GI_GPU_PAGE - 1) & ~(GI_GPU_PAGE - 1);
	CUdeviceptr base = 0, va;
	unsigned int one = 1;
	char eb[160];
	CUresult res;
	int rc;

	(void)want_hugepages; /* GPU memory has its own pages */
	memset(out, 0, sizeof(*out));
	if ((rc = cuda_ready(d, "device memory", err, errlen)) < 0)
		return rc;
	if (align > GI_GPU_PAGE || (align & (align - 1))) {
		snprintf(err, errlen, "cuda device memory: alignment %zu is not a power of two up to 64 KiB", align);
		return -EINVAL;
	}
	/* cuMemAlloc only promises 256-byte alignment (large blocks are in
	 * practice 2 MiB aligned); over-allocate by `align` when it is not.
	 * Callers that need va to be the allocation base (CUDA IPC) ask for 256. */
	if (align < 256)
		align = 256;
	res = d->mem_alloc(&base, sz);
	if (res == CUDA_SUCCESS && (base & (align - 1))) {
		d->mem_free(base);
		res = d->mem_alloc(&base, sz + align);
	}
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen,
			 "cuda device memory: cuMemAlloc of %zu bytes on device %d (%s) failed: %s (lower mbufs, or "
			 "check free memory with nvidia-smi)",
			 sz, d->device_index, d->pci_bus_id, gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		return res == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
	}
	va = (base + align - 1) & ~(CUdeviceptr)(align - 1);

	/*
	 * SYNC_MEMOPS: without it a synchronous cuMemcpy/cuMemset on this
	 * region may still be in flight when it returns, and the NIC — which
	 * the CUDA driver knows nothing of — could then DMA into or out of the
	 * buffer out of order with it.  The GPUDirect RDMA guide requires it on
	 * every buffer shared with a third-party device.
	 */
	res = d->pointer_set_attribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, base);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuda device memory: setting CU_POINTER_ATTRIBUTE_SYNC_MEMOPS failed: %s",
			 gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		d->mem_free(base);
		return -EIO;
	}
	/* DPDK only does address arithmetic on va (extmem, mbuf buf_addr); the
	 * CPU never dereferences it. */
	out->va = (void *)(uintptr_t)va;
	out->base = va != base ? (uintptr_t)base : 0;
	out->len = sz;
	out->page_sz = GI_GPU_PAGE;
	out->exec_delta = 0;
	out->provider = p;
	return 0;
}

static void cuda_device_free(struct gi_mem_region *r)
{
	struct gi_cuda_drv *d = r->provider->ctx;

	if (!r->va || !d || !d->lib)
		return;
	gi_cuda_drv_make_current(d);
	d->mem_free(r->base ? (CUdeviceptr)r->base : (CUdeviceptr)(uintptr_t)r->va);
	r->va = NULL;
}

static int cuda_register_host(const struct gi_mem_provider *p, void *va, size_t len, struct gi_mem_region *out,
			      char *err, size_t errlen)
{
	struct gi_cuda_drv *d = p->ctx;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	CUdeviceptr dev = 0;
	char eb[160];
	CUresult res;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = cuda_ready(d, "host_pinned memory", err, errlen)) < 0)
		return rc;
	if (((uintptr_t)va & (pg - 1)) || (len & (pg - 1)) || len == 0) {
		snprintf(err, errlen, "cuda host_pinned memory: %p + %zu is not page aligned", va, len);
		return -EINVAL;
	}
	/* DEVICEMAP: kernels read it through a device pointer; PORTABLE: every
	 * context sees it, not only the one current now. */
	res = d->mem_host_register(va, len, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuda host_pinned memory: cuMemHostRegister of %zu bytes failed: %s", len,
			 gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		return res == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
	}
	res = d->mem_host_get_device_pointer(&dev, va, 0);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "cuda host_pinned memory: cuMemHostGetDevicePointer failed: %s",
			 gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		d->mem_host_unregister(va);
		return -EIO;
	}
	out->va = va;
	out->len = len;
	out->page_sz = pg;
	out->exec_delta = (int64_t)(dev - (CUdeviceptr)(uintptr_t)va); /* 0 with unified addressing */
	out->borrowed = true;
	out->provider = p;
	return 0;
}

static int cuda_pinned_alloc(const struct gi_mem_provider *p, size_t len, size_t align, bool want_hugepages,
			     struct gi_mem_region *out, char *err, size_t errlen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = cuda_ready(p->ctx, "host_pinned memory", err, errlen)) < 0)
		return rc;
	return gi_mem_host_map_registered(p, cuda_register_host, len, align, want_hugepages, out, err, errlen);
}

static void cuda_pinned_free(struct gi_mem_region *r)
{
	struct gi_cuda_drv *d = r->provider->ctx;

	if (!r->va)
		return;
	if (d && d->lib) {
		gi_cuda_drv_make_current(d);
		d->mem_host_unregister(r->va);
	}
	if (!r->borrowed)
		gi_mem_host_unmap(r);
	r->va = NULL;
}

/*
 * Make the NIC's GPUDirect RDMA writes visible to kernels on this GPU before
 * the doorbell.  The flush acts on the calling thread's current context and
 * the rx lcore has none of its own, so bind it first — a thread-local store
 * in the driver; DPDK's gpudev CUDA driver (cuda_wmb) does the same.
 */
static void cuda_flush(void *ctx)
{
	struct gi_cuda_drv *d = ctx;

	d->ctx_set_current(d->ctx);
	d->flush_gpudirect_rdma_writes(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
				       CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER);
}

void gi_mem_cuda_bind(struct gi_mem_provider providers[GI_MEM_N_KINDS], struct gi_cuda_drv *drv)
{
	providers[GI_MEM_HOST] = gi_mem_host_provider;
	providers[GI_MEM_HOST_PINNED] = (struct gi_mem_provider){
		.name = "cuda",
		.kind = GI_MEM_HOST_PINNED,
		.ctx = drv,
		.alloc = cuda_pinned_alloc,
		.free = cuda_pinned_free,
		.register_host = cuda_register_host,
	};
	providers[GI_MEM_DEVICE] = (struct gi_mem_provider){
		.name = "cuda",
		.kind = GI_MEM_DEVICE,
		.ctx = drv,
		.alloc = cuda_device_alloc,
		.free = cuda_device_free,
		/* only where the GPU does not order GPUDirect RDMA writes itself and
		 * the driver has the call (CUDA 11.3+): see gi_cuda_drv_open() */
		.flush = drv && drv->lib && drv->rdma_flush_needed ? cuda_flush : NULL,
	};
}

int gi_mem_cuda_share(const struct gi_mem_region *r, const void *hdr, size_t hdr_len, struct gi_mem_cuda_ipc *out,
		      char *err, size_t errlen)
{
	struct gi_cuda_drv *d = r->provider && r->provider->kind == GI_MEM_DEVICE && !strcmp(r->provider->name, "cuda")
					? r->provider->ctx
					: NULL;
	char eb[160];
	int rc;

	if (!d) {
		snprintf(err, errlen, "CUDA IPC needs a region of the cuda provider's device memory");
		return -EINVAL;
	}
	if ((rc = cuda_ready(d, "CUDA IPC", err, errlen)) < 0)
		return rc;
	if (r->base) {
		snprintf(err, errlen, "not at its allocation base; CUDA IPC cannot share it");
		return -EIO;
	}
	CUdeviceptr base = (CUdeviceptr)(uintptr_t)r->va;
	CUipcMemHandle ipc;
	CUresult res = d->memset_d8(base, 0, r->len);
	if (res == CUDA_SUCCESS && hdr_len)
		res = d->memcpy_htod(base, hdr, hdr_len);
	if (res == CUDA_SUCCESS)
		res = d->ipc_get_mem_handle(&ipc, base);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "preparing it for CUDA IPC failed: %s", gi_cuda_drv_strerror(d, (int)res, eb, sizeof(eb)));
		return -EIO;
	}
	GI_STATIC_ASSERT(sizeof(ipc) == sizeof(out->handle), "CUipcMemHandle is 64 bytes by the CUDA ABI");
	memcpy(out->handle, &ipc, sizeof(out->handle));
	out->dev_ordinal = (uint32_t)d->device_index;
	snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "%s", d->pci_bus_id);
	return 0;
}

#else /* !HAVE_CUDA_DRIVER: the providers exist and say why they cannot work */

static int cuda_unbuilt_alloc(const struct gi_mem_provider *p, size_t len, size_t align, bool want_hugepages,
			      struct gi_mem_region *out, char *err, size_t errlen)
{
	(void)p, (void)len, (void)align, (void)want_hugepages;
	memset(out, 0, sizeof(*out));
	snprintf(err, errlen, "cuda provider: gpuingest was built without CUDA headers; use backend: host");
	return -ENOTSUP;
}

static int cuda_unbuilt_register(const struct gi_mem_provider *p, void *va, size_t len, struct gi_mem_region *out,
				 char *err, size_t errlen)
{
	(void)va, (void)len;
	return cuda_unbuilt_alloc(p, 0, 0, false, out, err, errlen);
}

static void cuda_unbuilt_free(struct gi_mem_region *r)
{
	r->va = NULL;
}

int gi_mem_cuda_share(const struct gi_mem_region *r, const void *hdr, size_t hdr_len, struct gi_mem_cuda_ipc *out,
		      char *err, size_t errlen)
{
	(void)r, (void)hdr, (void)hdr_len, (void)out;
	snprintf(err, errlen, "frames in GPU memory need a build with CUDA headers");
	return -ENOTSUP;
}

void gi_mem_cuda_bind(struct gi_mem_provider providers[GI_MEM_N_KINDS], struct gi_cuda_drv *drv)
{
	providers[GI_MEM_HOST] = gi_mem_host_provider;
	for (int k = GI_MEM_HOST_PINNED; k <= GI_MEM_DEVICE; k++)
		providers[k] = (struct gi_mem_provider){
			.name = "cuda",
			.kind = (enum gi_mem_kind)k,
			.ctx = drv,
			.alloc = cuda_unbuilt_alloc,
			.free = cuda_unbuilt_free,
			.register_host = k == GI_MEM_HOST_PINNED ? cuda_unbuilt_register : NULL,
		};
}

#endif /* HAVE_CUDA_DRIVER */
