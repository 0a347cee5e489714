/*
 * cuda_drv.c — the run-time loader for the CUDA driver API (see cuda_drv.h).
 *
 * Main thread for open/close; make_current from the thread that needs it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cuda_drv.h"

#ifdef GI_HAVE_CUDA_H

#include <dlfcn.h>

/* Two levels so the argument's cuda.h #define (cuMemAlloc → cuMemAlloc_v2)
 * is expanded before it is turned into the name dlsym looks up. */
#define GI_CU_STR2(x) #x
#define GI_CU_STR(x) GI_CU_STR2(x)

struct cu_sym {
	const char *name;
	size_t off;
	bool optional;
};

#define SYM(field, fn) {GI_CU_STR(fn), offsetof(struct gi_cuda_drv, field), false}
#define SYM_OPT(field, fn) {GI_CU_STR(fn), offsetof(struct gi_cuda_drv, field), true}

static const struct cu_sym cu_syms[] = {
	SYM(init, cuInit),
	SYM(device_get_count, cuDeviceGetCount),
	SYM(device_get, cuDeviceGet),
	SYM(device_get_name, cuDeviceGetName),
	SYM(device_get_pci_bus_id, cuDeviceGetPCIBusId),
	SYM(device_get_attribute, cuDeviceGetAttribute),
	SYM(primary_ctx_retain, cuDevicePrimaryCtxRetain),
	SYM(primary_ctx_release, cuDevicePrimaryCtxRelease),
	SYM(ctx_set_current, cuCtxSetCurrent),
	SYM(mem_alloc, cuMemAlloc),
	SYM(mem_free, cuMemFree),
	SYM(pointer_set_attribute, cuPointerSetAttribute),
	SYM(pointer_get_attribute, cuPointerGetAttribute),
	SYM(mem_host_alloc, cuMemHostAlloc),
	SYM(mem_free_host, cuMemFreeHost),
	SYM(mem_host_register, cuMemHostRegister),
	SYM(mem_host_unregister, cuMemHostUnregister),
	SYM(mem_host_get_device_pointer, cuMemHostGetDevicePointer),
	SYM(ipc_get_mem_handle, cuIpcGetMemHandle),
	SYM(ipc_open_mem_handle, cuIpcOpenMemHandle),
	SYM(ipc_close_mem_handle, cuIpcCloseMemHandle),
	SYM(memcpy_dtoh, cuMemcpyDtoH),
	SYM(memcpy_htod, cuMemcpyHtoD),
	SYM(memset_d8, cuMemsetD8),
	SYM(get_error_name, cuGetErrorName),
	SYM(get_error_string, cuGetErrorString),
	SYM_OPT(flush_gpudirect_rdma_writes, cuFlushGPUDirectRDMAWrites),
};

bool gi_cuda_drv_built(void)
{
	return true;
}

const char *gi_cuda_drv_strerror(const struct gi_cuda_drv *d, int res, char *buf, size_t len)
{
	const char *name = NULL, *text = NULL;

	if (d && d->get_error_name)
		d->get_error_name((CUresult)res, &name);
	if (d && d->get_error_string)
		d->get_error_string((CUresult)res, &text);
	if (name)
		snprintf(buf, len, "%s: %s", name, text ? text : "no description");
	else
		snprintf(buf, len, "CUDA error %d", res);
	return buf;
}

static void drv_unload(struct gi_cuda_drv *d)
{
	if (d->ctx_retained)
		d->primary_ctx_release(d->device);
	if (d->lib)
		dlclose(d->lib);
	memset(d, 0, sizeof(*d));
}

int gi_cuda_drv_open(struct gi_cuda_drv *d, int device, char *err, size_t errlen)
{
	char eb[160];
	CUresult res;
	int count = 0, rc;

	memset(d, 0, sizeof(*d));
	d->device_index = device;
	d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		snprintf(err, errlen, "libcuda.so.1 not found: the NVIDIA driver is not installed (%s)", dlerror());
		memset(d, 0, sizeof(*d));
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(cu_syms) / sizeof(cu_syms[0]); i++) {
		void *p = dlsym(d->lib, cu_syms[i].name);
		if (!p && !cu_syms[i].optional) {
			snprintf(err, errlen,
				 "libcuda.so.1 has no %s; the NVIDIA driver is older than this build "
				 "needs (CUDA %d.%d headers): update the driver",
				 cu_syms[i].name, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
			rc = -ENOSYS;
			goto fail;
		}
		/* POSIX lets a dlsym result be used as a function pointer */
		memcpy((char *)d + cu_syms[i].off, &p, sizeof(p));
	}

	res = d->init(0);
	if (res == CUDA_ERROR_STUB_LIBRARY) {
		snprintf(err, errlen,
			 "libcuda.so.1 is the CUDA toolkit's stub, not the NVIDIA driver's (remove "
			 "lib64/stubs from LD_LIBRARY_PATH or ld.so.conf; no GPU driver is installed otherwise)");
		rc = -ENODEV;
		goto fail;
	}
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen,
			 "cuInit failed: %s (no usable GPU: check nvidia-smi and that the nvidia "
			 "kernel module is loaded)",
			 gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		rc = -ENODEV;
		goto fail;
	}
	res = d->device_get_count(&count);
	if (res != CUDA_SUCCESS || count == 0) {
		snprintf(err, errlen, "no CUDA device (cuDeviceGetCount: %d)", count);
		rc = -ENODEV;
		goto fail;
	}
	if (device < 0 || device >= count) {
		snprintf(err, errlen, "no CUDA device %d (cuDeviceGetCount: %d; devices are 0..%d)", device, count,
			 count - 1);
		rc = -ENODEV;
		goto fail;
	}
	res = d->device_get(&d->device, device);
	if (res == CUDA_SUCCESS)
		res = d->device_get_name(d->name, (int)sizeof(d->name), d->device);
	if (res == CUDA_SUCCESS)
		res = d->device_get_pci_bus_id(d->pci_bus_id, (int)sizeof(d->pci_bus_id), d->device);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "CUDA device %d: cannot query it: %s", device,
			 gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		rc = -ENODEV;
		goto fail;
	}
	/* the primary context: the CUDA runtime in the executor binds the same one */
	res = d->primary_ctx_retain(&d->ctx, d->device);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "CUDA device %d (%s): cannot retain its primary context: %s (is the GPU in "
			 "exclusive-process compute mode and used by another process? check nvidia-smi)",
			 device, d->pci_bus_id, gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		rc = -EIO;
		goto fail;
	}
	d->ctx_retained = true;
	res = d->ctx_set_current(d->ctx);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "CUDA device %d (%s): cuCtxSetCurrent failed: %s", device, d->pci_bus_id,
			 gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		rc = -EIO;
		goto fail;
	}

	/*
	 * Does a NIC's write into this GPU's memory need an explicit flush
	 * before a kernel on this GPU may read it?  Not when the device orders
	 * remote writes for its own consumers (ORDERING_OWNER or better);
	 * otherwise yes, if the driver offers cuFlushGPUDirectRDMAWrites.
	 */
	int ordering = 0, options = 0;
	if (d->device_get_attribute(&ordering, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, d->device) !=
	    CUDA_SUCCESS)
		ordering = CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE;
	if (d->device_get_attribute(&options, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, d->device) !=
	    CUDA_SUCCESS)
		options = 0;
	d->rdma_flush_needed = ordering < CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER &&
			       (options & CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST) &&
			       d->flush_gpudirect_rdma_writes != NULL;
	return 0;

fail:
	drv_unload(d);
	return rc;
}

void gi_cuda_drv_close(struct gi_cuda_drv *d)
{
	if (d && d->lib)
		drv_unload(d);
}

int gi_cuda_drv_make_current(const struct gi_cuda_drv *d)
{
	if (!d->lib || !d->ctx_retained)
		return -ENODEV;
	return d->ctx_set_current(d->ctx) == CUDA_SUCCESS ? 0 : -EIO;
}

#else /* !GI_HAVE_CUDA_H */

bool gi_cuda_drv_built(void)
{
	return false;
}

const char *gi_cuda_drv_strerror(const struct gi_cuda_drv *d, int res, char *buf, size_t len)
{
	(void)d;
	snprintf(buf, len, "CUDA error %d", res);
	return buf;
}

int gi_cuda_drv_open(struct gi_cuda_drv *d, int device, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	d->device_index = device;
	snprintf(err, errlen,
		 "CUDA driver API: gpuingest was built without CUDA headers (cuda.h); rebuild with the CUDA "
		 "toolkit installed, or use backend: host");
	return -ENOTSUP;
}

void gi_cuda_drv_close(struct gi_cuda_drv *d)
{
	(void)d;
}

int gi_cuda_drv_make_current(const struct gi_cuda_drv *d)
{
	(void)d;
	return -ENOTSUP;
}

#endif /* GI_HAVE_CUDA_H */
