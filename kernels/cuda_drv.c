/*
 * cuda_drv.c — the run-time loader for the CUDA driver API (see cuda_drv.h).
 *
 * Main thread for open/close; make_current from the thread that needs it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_drv.h"

/* "N" (0..63) or a PCI address "[DDDD:]BB:DD.F" in hex. */
bool gi_cuda_device_id_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0)
		return true;
	if (n <= 2 && isdigit((unsigned char)s[0]) && (n == 1 || isdigit((unsigned char)s[1])))
		return atoi(s) < 64;
	/* BB:DD.F or DDDD:BB:DD.F */
	const char *p = s;
	if (n == 12) {
		for (int i = 0; i < 4; i++)
			if (!isxdigit((unsigned char)p[i]))
				return false;
		if (p[4] != ':')
			return false;
		p += 5;
	} else if (n != 7) {
		return false;
	}
	return isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1]) && p[2] == ':' &&
	       isxdigit((unsigned char)p[3]) && isxdigit((unsigned char)p[4]) && p[5] == '.' && p[6] >= '0' &&
	       p[6] <= '7';
}

#if HAVE_CUDA_DRIVER

#include <dlfcn.h>

/* The NVIDIA driver's library; a -Demulate_cuda=true build names the test double. */
#ifndef GI_CUDA_DRIVER_LIB
#define GI_CUDA_DRIVER_LIB "libcuda.so.1"
#endif

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
	SYM(driver_get_version, cuDriverGetVersion),
	SYM(device_get_count, cuDeviceGetCount),
	SYM(device_get, cuDeviceGet),
	SYM(device_get_by_pci_bus_id, cuDeviceGetByPCIBusId),
	SYM(device_get_name, cuDeviceGetName),
	SYM(device_get_pci_bus_id, cuDeviceGetPCIBusId),
	SYM(device_get_attribute, cuDeviceGetAttribute),
	SYM(primary_ctx_retain, cuDevicePrimaryCtxRetain),
	SYM(primary_ctx_release, cuDevicePrimaryCtxRelease),
	SYM(ctx_set_current, cuCtxSetCurrent),
	SYM(mem_alloc, cuMemAlloc),
	SYM(mem_free, cuMemFree),
	SYM(pointer_set_attribute, cuPointerSetAttribute),
	SYM(pointer_get_attributes, cuPointerGetAttributes),
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
	SYM(stream_create, cuStreamCreate),
	SYM(stream_destroy, cuStreamDestroy),
	SYM(stream_query, cuStreamQuery),
	SYM(stream_synchronize, cuStreamSynchronize),
	SYM(event_create, cuEventCreate),
	SYM(event_destroy, cuEventDestroy),
	SYM(event_record, cuEventRecord),
	SYM(event_query, cuEventQuery),
	SYM(module_load_data, cuModuleLoadData),
	SYM(module_unload, cuModuleUnload),
	SYM(module_get_function, cuModuleGetFunction),
	SYM(func_set_attribute, cuFuncSetAttribute),
	SYM(launch_kernel, cuLaunchKernel),
	SYM(get_error_name, cuGetErrorName),
	SYM(get_error_string, cuGetErrorString),
	SYM_OPT(flush_gpudirect_rdma_writes, cuFlushGPUDirectRDMAWrites),
};

bool gi_cuda_drv_built(void)
{
	return true;
}

unsigned gi_cuda_mem_type(const struct gi_cuda_drv *d, const void *p)
{
	CUpointer_attribute a = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
	CUmemorytype type = 0;
	void *data = &type;
	if (d->pointer_get_attributes(1, &a, &data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
		return 0;
	return (unsigned)type;
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

/* `device` → a CUdevice: by ordinal or by PCI address.  0 or -ENODEV/-EINVAL with err. */
static int drv_find_device(struct gi_cuda_drv *d, const char *device, int count, char *err, size_t errlen)
{
	char eb[160];
	CUresult res;

	if (!gi_cuda_device_id_valid(device)) {
		snprintf(err, errlen, "CUDA device '%.40s' is neither an ordinal (0..63) nor a PCI address (0000:ca:00.0)",
			 device);
		return -EINVAL;
	}
	if (!device || !device[0] || strchr(device, ':') == NULL) {
		int ord = device && device[0] ? atoi(device) : 0;
		if (ord >= count) {
			snprintf(err, errlen, "no CUDA device %d (cuDeviceGetCount: %d; devices are 0..%d)", ord, count,
				 count - 1);
			return -ENODEV;
		}
		res = d->device_get(&d->device, ord);
		d->device_index = ord;
	} else {
		res = d->device_get_by_pci_bus_id(&d->device, device);
		if (res != CUDA_SUCCESS) {
			snprintf(err, errlen, "no CUDA device at PCI address %s (%s; nvidia-smi -L and lspci -d 10de: list them)",
				 device, gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
			return -ENODEV;
		}
		/* its ordinal, for messages and the frame ring's IPC record */
		d->device_index = -1;
		for (int i = 0; i < count; i++) {
			CUdevice dev;
			if (d->device_get(&dev, i) == CUDA_SUCCESS && dev == d->device)
				d->device_index = i;
		}
	}
	if (res == CUDA_SUCCESS)
		res = d->device_get_name(d->name, (int)sizeof(d->name), d->device);
	if (res == CUDA_SUCCESS)
		res = d->device_get_pci_bus_id(d->pci_bus_id, (int)sizeof(d->pci_bus_id), d->device);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "CUDA device %s: cannot query it: %s", device && device[0] ? device : "0",
			 gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		return -ENODEV;
	}
	/* the driver prints the domain in upper case with 8 digits on some versions */
	for (char *c = d->pci_bus_id; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return 0;
}

int gi_cuda_drv_open(struct gi_cuda_drv *d, const char *device, char *err, size_t errlen)
{
	char eb[160];
	CUresult res;
	int count = 0, rc;

	memset(d, 0, sizeof(*d));
	d->device_index = device && device[0] && !strchr(device, ':') ? atoi(device) : 0;
	d->lib = dlopen(GI_CUDA_DRIVER_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		if (GI_CUDA_EMULATION)
			snprintf(err, errlen, "the CUDA emulation library %s cannot be loaded (%s)", GI_CUDA_DRIVER_LIB,
				 dlerror());
		else
			snprintf(err, errlen, "libcuda.so.1 not found: the NVIDIA driver is not installed (%s)", dlerror());
		memset(d, 0, sizeof(*d));
		return -ENOENT;
	}
	/* a test double must say so, and a production build must not load one */
	d->emulated = dlsym(d->lib, "gi_cuda_emu_version") != NULL;
	if (d->emulated != (bool)GI_CUDA_EMULATION) {
		snprintf(err, errlen, "%s %s the gpuingest CUDA emulation, but this build %s", GI_CUDA_DRIVER_LIB,
			 d->emulated ? "is" : "is not", GI_CUDA_EMULATION ? "is an emulation build" : "needs the NVIDIA driver");
		rc = -ENOENT;
		goto fail;
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
	if (d->driver_get_version(&d->driver_version) != CUDA_SUCCESS)
		d->driver_version = 0;
	res = d->device_get_count(&count);
	if (res != CUDA_SUCCESS || count == 0) {
		snprintf(err, errlen, "no CUDA device (cuDeviceGetCount: %d)", count);
		rc = -ENODEV;
		goto fail;
	}
	if ((rc = drv_find_device(d, device, count, err, errlen)) < 0)
		goto fail;
	/* the primary context: every handle of this process on this device shares it */
	res = d->primary_ctx_retain(&d->ctx, d->device);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "CUDA device %d (%s): cannot retain its primary context: %s (is the GPU in "
			 "exclusive-process compute mode and used by another process? check nvidia-smi)",
			 d->device_index, d->pci_bus_id, gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		rc = -EIO;
		goto fail;
	}
	d->ctx_retained = true;
	res = d->ctx_set_current(d->ctx);
	if (res != CUDA_SUCCESS) {
		snprintf(err, errlen, "CUDA device %d (%s): cuCtxSetCurrent failed: %s", d->device_index, d->pci_bus_id,
			 gi_cuda_drv_strerror(d, res, eb, sizeof(eb)));
		rc = -EIO;
		goto fail;
	}

	/*
	 * Does a NIC's write into this GPU's memory need an explicit flush
	 * before a kernel on this GPU may read it?  Not when the device orders
	 * remote writes for its own consumers (ORDERING_OWNER or better);
	 * otherwise yes — and when the driver cannot do it (no host flush
	 * option, or no cuFlushGPUDirectRDMAWrites), that is reported, never
	 * skipped in silence (rdma_flush_missing).
	 */
	int ordering = 0, options = 0;
	if (d->device_get_attribute(&ordering, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, d->device) !=
	    CUDA_SUCCESS)
		ordering = CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE;
	if (d->device_get_attribute(&options, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, d->device) !=
	    CUDA_SUCCESS)
		options = 0;
	bool unordered = ordering < CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER;
	bool can_flush = (options & CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST) && d->flush_gpudirect_rdma_writes;
	d->rdma_flush_needed = unordered && can_flush;
	d->rdma_flush_missing = unordered && !can_flush;
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

#else /* !HAVE_CUDA_DRIVER */

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

int gi_cuda_drv_open(struct gi_cuda_drv *d, const char *device, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	d->device_index = device && device[0] && !strchr(device, ':') ? atoi(device) : 0;
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

#endif /* HAVE_CUDA_DRIVER */
