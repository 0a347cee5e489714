/*
 * cuda_drv.h — the CUDA driver API, loaded at run time.
 *
 * Why dlopen and not -lcuda: a daemon built with CUDA must still start with
 * `backend: host` on a machine without the NVIDIA driver (issue 3), and
 * libcuda.so.1 ships with the driver, not with the toolkit.  So nothing links
 * against libcuda; gi_cuda_drv_open() loads it, resolves the entry points
 * the memory providers, the CUDA executor and gpuingest-frames need, and
 * binds the device's primary context — the one the CUDA runtime (used by the
 * executor's .cu wrappers) also uses, so driver and runtime calls see the
 * same allocations.
 *
 * The executor uses the driver API too (modules, launches, streams and
 * events): its kernels are a fatbin embedded in the binary, loaded with
 * cuModuleLoadData, so the daemon needs no CUDA runtime and one loader
 * serves every CUDA call it makes.
 *
 * Which library is loaded: "libcuda.so.1", the NVIDIA driver's.  A build
 * with -Demulate_cuda=true (tests only) loads the CUDA emulation's test
 * double instead (tests/cuda_emu/), whose path meson passes as
 * GI_CUDA_DRIVER_LIB; production builds cannot pick it up.
 *
 * Symbol names come from cuda.h's own #defines (cuMemAlloc → cuMemAlloc_v2,
 * cuIpcOpenMemHandle → cuIpcOpenMemHandle_v2, ...), so the loader always
 * resolves the ABI the header was written for.  Without cuda.h at build
 * time this compiles as a stub whose open answers -ENOTSUP.
 *
 * Plain C, no DPDK.  open/close on the main thread; gi_cuda_drv_make_current
 * on any thread that will call the driver (rx lcores, the executor thread).
 */
#ifndef GI_CUDA_DRV_H
#define GI_CUDA_DRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gi_build_config.h" /* HAVE_CUDA_DRIVER, GI_CUDA_EMULATION */

#if HAVE_CUDA_DRIVER
#include <cuda.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct gi_cuda_drv {
	void *lib;                 /* dlopen handle; NULL when closed */
	int device_index;          /* the CUDA ordinal of the device opened */
	int driver_version;        /* cuDriverGetVersion: 12040 for CUDA 12.4; 0 if it would not say */
	bool ctx_retained;
	bool rdma_flush_needed;    /* NIC writes into device memory must be flushed before the doorbell */
	bool rdma_flush_missing;   /* the GPU does not order them itself, and the driver cannot flush them */
	bool emulated;             /* the CUDA emulation (tests only): kernels run on CPU threads */
	char name[128];            /* e.g. "NVIDIA H100 PCIe" */
	char pci_bus_id[32];       /* e.g. "0000:41:00.0" */
#if HAVE_CUDA_DRIVER
	CUdevice device;
	CUcontext ctx;             /* the device's primary context */

	__typeof__(cuInit) *init;
	__typeof__(cuDriverGetVersion) *driver_get_version;
	__typeof__(cuDeviceGetCount) *device_get_count;
	__typeof__(cuDeviceGet) *device_get;
	__typeof__(cuDeviceGetByPCIBusId) *device_get_by_pci_bus_id;
	__typeof__(cuDeviceGetName) *device_get_name;
	__typeof__(cuDeviceGetPCIBusId) *device_get_pci_bus_id;
	__typeof__(cuDeviceGetAttribute) *device_get_attribute;
	__typeof__(cuDevicePrimaryCtxRetain) *primary_ctx_retain;
	__typeof__(cuDevicePrimaryCtxRelease) *primary_ctx_release;
	__typeof__(cuCtxSetCurrent) *ctx_set_current;
	__typeof__(cuMemAlloc) *mem_alloc;
	__typeof__(cuMemFree) *mem_free;
	__typeof__(cuPointerSetAttribute) *pointer_set_attribute;
	__typeof__(cuPointerGetAttributes) *pointer_get_attributes;
	__typeof__(cuMemHostAlloc) *mem_host_alloc;
	__typeof__(cuMemFreeHost) *mem_free_host;
	__typeof__(cuMemHostRegister) *mem_host_register;
	__typeof__(cuMemHostUnregister) *mem_host_unregister;
	__typeof__(cuMemHostGetDevicePointer) *mem_host_get_device_pointer;
	__typeof__(cuIpcGetMemHandle) *ipc_get_mem_handle;
	__typeof__(cuIpcOpenMemHandle) *ipc_open_mem_handle;
	__typeof__(cuIpcCloseMemHandle) *ipc_close_mem_handle;
	__typeof__(cuMemcpyDtoH) *memcpy_dtoh;
	__typeof__(cuMemcpyHtoD) *memcpy_htod;
	__typeof__(cuMemsetD8) *memset_d8;
	__typeof__(cuStreamCreate) *stream_create;
	__typeof__(cuStreamDestroy) *stream_destroy;
	__typeof__(cuStreamQuery) *stream_query;
	__typeof__(cuStreamSynchronize) *stream_synchronize;
	__typeof__(cuEventCreate) *event_create;
	__typeof__(cuEventDestroy) *event_destroy;
	__typeof__(cuEventRecord) *event_record;
	__typeof__(cuEventQuery) *event_query;
	__typeof__(cuModuleLoadData) *module_load_data;
	__typeof__(cuModuleUnload) *module_unload;
	__typeof__(cuModuleGetFunction) *module_get_function;
	__typeof__(cuFuncSetAttribute) *func_set_attribute;
	__typeof__(cuLaunchKernel) *launch_kernel;
	__typeof__(cuGetErrorName) *get_error_name;
	__typeof__(cuGetErrorString) *get_error_string;
	/* optional: drivers before CUDA 11.3 lack it; NULL then */
	__typeof__(cuFlushGPUDirectRDMAWrites) *flush_gpudirect_rdma_writes;
#endif
};

#if HAVE_CUDA_DRIVER
/*
 * What `p` is to the driver: CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST
 * (registered or allocated by it), or 0 for memory it does not know.
 * cuPointerGetAttributes, not cuPointerGetAttribute: asked about plain
 * host memory the latter returns CUDA_ERROR_INVALID_VALUE, an API error
 * compute-sanitizer reports on every healthy start.
 */
unsigned gi_cuda_mem_type(const struct gi_cuda_drv *d, const void *p);
#endif

/* True when this build has the real loader (cuda.h was found). */
bool gi_cuda_drv_built(void);

/*
 * Load the driver, cuInit, pick `device`, retain its primary context and
 * make it current on the calling thread, fill name and PCI bus id.
 * `device` is a CUDA ordinal ("0", "1", ...; NULL or "" is "0") or a PCI
 * address ("0000:ca:00.0", as nvidia-smi and lspci print it): CUDA's
 * default ordinal order is fastest-first, not nvidia-smi's PCI order, so
 * a box with several GPUs names the one next to its NIC by address.
 * On failure everything taken is released, `d` is left closed and `err`
 * holds one line:
 *   -ENOTSUP  built without CUDA headers
 *   -ENOENT   libcuda.so.1 not found (no NVIDIA driver)
 *   -ENOSYS   a required entry point is missing (driver too old)
 *   -ENODEV   cuInit failed or no such device
 *   -EINVAL   `device` is neither an ordinal nor a PCI address
 *   -EIO      any other driver error (its name and text are in err)
 */
int gi_cuda_drv_open(struct gi_cuda_drv *d, const char *device, char *err, size_t errlen);

/* Is `s` a valid `device` for gi_cuda_drv_open()?  (The config loader asks.) */
bool gi_cuda_device_id_valid(const char *s);

/* Release the primary context and unload; safe on a closed or zeroed d. */
void gi_cuda_drv_close(struct gi_cuda_drv *d);

/* Make d's context current on the calling thread: 0 or -EIO. */
int gi_cuda_drv_make_current(const struct gi_cuda_drv *d);

/*
 * "CUDA_ERROR_X: text" for a CUresult (passed as int so callers need no
 * cuda.h); writes into buf and returns it.
 */
const char *gi_cuda_drv_strerror(const struct gi_cuda_drv *d, int res, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GI_CUDA_DRV_H */
