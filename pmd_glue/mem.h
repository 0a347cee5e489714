/*
 * mem.h — memory providers: where packet buffers and rings come from.
 *
 * One interface for every kind of memory the data path can use (DESIGN.md
 * "Memory providers"): allocate an aligned region, free it, say what kind it
 * is and how the executor addresses it, and — for GPU memory — the write
 * barrier the rx lcore issues before ringing the doorbell.  Everything after
 * allocation (extmem registration, DMA mapping, the extbuf mempool) is the
 * same for every provider (pool.c), so GPU memory takes exactly the path
 * host memory takes.
 *
 * Providers:
 *   host    plain memory, hugepage-backed where the system has hugepages.
 *   cuda    CUDA driver API (kernels/cuda_drv.h, loaded at run time):
 *           device = cuMemAlloc, host_pinned = mmap + cuMemHostRegister.
 *   gpudev  DPDK gpudev: device = rte_gpu_mem_alloc, host_pinned = mmap +
 *           rte_gpu_mem_register.
 * Kind host is always served by the host provider.  Which provider serves
 * the GPU kinds is decided once at start-up by gi_mem_select() (pure: the
 * unit tests drive it with fake probes) from what gi_gpu_probe() found;
 * gi_mem_setup() does both and logs the outcome.  The result, a
 * gi_mem_choice, holds the provider instances: regions point into it, so it
 * must stay where it is (no copies) and outlive every region.
 *
 * This header is shared by two libraries: gi_log (DPDK-free: kind names and
 * the host provider, used by the config loader) and gi_pmd_glue (the GPU
 * providers, selection and probing).
 *
 * Main thread only (start-up and teardown), except a provider's `flush`,
 * which the rx lcore calls once per published batch.
 */
#ifndef GI_MEM_H
#define GI_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/executor.h" /* enum gi_backend */

enum gi_mem_kind {
	GI_MEM_HOST = 0,
	GI_MEM_HOST_PINNED,
	GI_MEM_DEVICE,
};
#define GI_MEM_N_KINDS 3

struct gi_mem_provider;

struct gi_mem_region {
	/*
	 * The address DPDK registers and does address arithmetic on.  For
	 * device memory this is the GPU virtual address: the NIC DMAs to it and
	 * the executor dereferences it, the CPU never does.
	 */
	void *va;
	size_t len;          /* multiple of page_sz */
	size_t page_sz;      /* 4 KiB / 2 MiB host pages, 64 KiB GPU pages */
	int64_t exec_delta;  /* add to va to get the executor's address (0 on host and with UVA) */
	bool hugepages;
	bool borrowed;       /* registered, not allocated, by us: free only unregisters */
	uintptr_t base;      /* provider's allocation when it differs from va (alignment), else 0 */
	const struct gi_mem_provider *provider;
};

typedef void (*gi_mem_flush_fn)(void *ctx);

struct gi_mem_provider {
	const char *name;    /* "host", "cuda", "gpudev" */
	enum gi_mem_kind kind;
	void *ctx;           /* provider state: NULL (host), struct gi_cuda_drv *, struct gi_gpudev * */
	/* 0 or -errno; on failure one line in err and nothing held */
	int (*alloc)(const struct gi_mem_provider *p, size_t len, size_t align, bool want_hugepages,
		     struct gi_mem_region *out, char *err, size_t errlen);
	void (*free)(struct gi_mem_region *r);
	/*
	 * host_pinned providers only (else NULL): make existing page-aligned
	 * host memory GPU-visible; fills out with borrowed = true.
	 */
	int (*register_host)(const struct gi_mem_provider *p, void *va, size_t len, struct gi_mem_region *out,
			     char *err, size_t errlen);
	/*
	 * Make the NIC's writes into this memory visible to the executor before
	 * the doorbell: rte_gpu_wmb / cuFlushGPUDirectRDMAWrites.  NULL where
	 * the platform orders them already (host memory, GPUs that order
	 * GPUDirect RDMA writes for their own kernels).  Called with ctx, from
	 * the rx lcore, once per batch.
	 */
	gi_mem_flush_fn flush;
};

/* ---- gi_log library (no DPDK) ------------------------------------------- */

const char *gi_mem_kind_name(enum gi_mem_kind k);

/* The host provider: also what every backend uses for kind host. */
extern const struct gi_mem_provider gi_mem_host_provider;

/*
 * The provider for `kind` when no GPU backend has been selected: host for
 * kind host, NULL with the reason in err otherwise.
 */
const struct gi_mem_provider *gi_mem_provider_for(enum gi_mem_kind kind, char *err, size_t errlen);

/*
 * Anonymous host memory, `align`-aligned (at most 2 MiB), zeroed, locked;
 * 2 MiB hugepages when asked and available, else 4 KiB pages with a notice.
 * What the host provider and both host_pinned providers allocate.
 */
int gi_mem_host_map(size_t len, size_t align, bool want_hugepages, struct gi_mem_region *out, char *err,
		    size_t errlen);
void gi_mem_host_unmap(struct gi_mem_region *r);

/*
 * host_pinned providers: map host memory (hugepages if asked) and register
 * it for the GPU with `reg`; on failure nothing is left mapped.
 */
int gi_mem_host_map_registered(const struct gi_mem_provider *p,
			       int (*reg)(const struct gi_mem_provider *, void *, size_t, struct gi_mem_region *, char *,
					  size_t),
			       size_t len, size_t align, bool want_hugepages, struct gi_mem_region *out, char *err,
			       size_t errlen);

/* Free a region through its provider; safe on a zeroed or freed region. */
void gi_mem_region_free(struct gi_mem_region *r);

/* ---- gi_pmd_glue library: GPU providers, selection, probing ------------- */

struct gi_cuda_drv;

/* What a consumer needs to open a region of GPU memory in its own process. */
struct gi_mem_cuda_ipc {
	uint8_t handle[64];      /* CUipcMemHandle */
	uint32_t dev_ordinal;    /* the daemon's CUDA ordinal */
	char pci_bus_id[32];     /* the GPU by PCI address: ordinals differ between processes */
};

/*
 * Share region `r` (the cuda provider's device memory, at its allocation
 * base) with other processes: zero it, copy hdr_len bytes of `hdr` to its
 * start, and take its CUDA IPC handle.  0, or -errno with one line in err.
 */
int gi_mem_cuda_share(const struct gi_mem_region *r, const void *hdr, size_t hdr_len, struct gi_mem_cuda_ipc *out,
		      char *err, size_t errlen);

/* What the machine offers; filled by gi_gpu_probe() or by a test. */
struct gi_gpu_probe {
	uint16_t gpudev_count;       /* rte_gpu_count_avail() */
	int16_t gpudev_id;           /* first gpudev device, -1 if none */
	int cuda_status;             /* 0: driver loaded and device open; -errno otherwise */
	char cuda_err[256];          /* why not, when cuda_status < 0 */
	char cuda_name[256];         /* "device 0: NVIDIA H100 PCIe at 0000:41:00.0, driver CUDA 12.4" when it opened */
	struct gi_cuda_drv *cuda;    /* the open driver when cuda_status == 0, else NULL */
};

/* The outcome of backend selection: keep it for the life of the process. */
struct gi_mem_choice {
	enum gi_backend backend;     /* resolved: HOST, CUDA or GPUDEV, never AUTO */
	char why[512];               /* one line for the log and build_info */
	/* one provider per kind; .alloc == NULL: that kind is not available */
	struct gi_mem_provider providers[GI_MEM_N_KINDS];
};

/*
 * Fill providers[] for one backend (host kind included).  cuda: drv may be
 * closed or NULL, allocations then refuse with -ENODEV.  gpudev: dev_id as
 * DPDK numbers it.
 */
void gi_mem_cuda_bind(struct gi_mem_provider providers[GI_MEM_N_KINDS], struct gi_cuda_drv *drv);
void gi_mem_gpudev_bind(struct gi_mem_provider providers[GI_MEM_N_KINDS], int16_t dev_id);
/*
 * The device pool's flush given what rte_gpu_wmb(dev_id) answered at bind:
 * NULL, with one warning saying what that costs, for -ENOTSUP.
 */
gi_mem_flush_fn gi_mem_gpudev_flush_for(int16_t dev_id, int probe_rc);

/*
 * Probe for GPUs: DPDK gpudev devices (needs the EAL up) and the CUDA driver
 * (device `cuda_device`, opened into *drv, which then stays open: close it
 * with gi_cuda_drv_close() at shutdown, after every region is freed).
 * Never fails: what it could not find is recorded in *p.  Skip the CUDA
 * probe with drv == NULL.  Main thread.
 */
void gi_gpu_probe(struct gi_gpu_probe *p, struct gi_cuda_drv *drv, const char *cuda_device);

/*
 * Resolve `requested` against `probe` (pure; no I/O, no logging):
 *   auto    gpudev if it has a device, else cuda if the driver opened, else
 *           host; `why` says which and why.
 *   cuda, gpudev  that backend, or -ENODEV with a one-line message in
 *           out->why suggesting backend: host.
 *   host    host.
 * 0 or -ENODEV / -EINVAL.
 */
int gi_mem_select(enum gi_backend requested, const struct gi_gpu_probe *probe, struct gi_mem_choice *out);

/*
 * The start-up sequence in one call, after the EAL is up and before any
 * pool: probe (skipped for backend host, so that never touches libcuda),
 * select, log the outcome (INFO, or ERR on failure), and close *drv again
 * unless the cuda backend was chosen.  *drv stays open for the cuda backend:
 * gi_cuda_drv_close() it at shutdown after every region is freed.
 * 0 or -ENODEV / -EINVAL (out->why holds the one-line reason).
 */
int gi_mem_setup(enum gi_backend requested, const char *cuda_device, struct gi_cuda_drv *drv,
		 struct gi_mem_choice *out);

/*
 * The provider serving pool `pool` of `kind` under `c`, or NULL with one
 * line in err, e.g. "memory pool P: kind device needs a GPU backend
 * (backend resolved to host: <why>)".  Call it for every pool before
 * touching any device, to fail before anything is allocated.
 */
const struct gi_mem_provider *gi_mem_choice_provider(const struct gi_mem_choice *c, enum gi_mem_kind kind,
						     const char *pool, char *err, size_t errlen);

/*
 * Memory both the CPU and the executor see (batch rings, doorbells, frame
 * metadata): host backend → host memory; cuda/gpudev → host-pinned memory
 * mapped for the GPU, with exec_delta set.  Page aligned and zeroed.
 * 0 or -errno with one line in err.  Free with gi_mem_region_free().
 */
int gi_mem_alloc_shared(const struct gi_mem_choice *c, size_t len, struct gi_mem_region *out, char *err,
			size_t errlen);

/*
 * Make existing host memory (e.g. a frame ring's POSIX shm mapping, which
 * consumers must also map) visible to the executor: a no-op region on the
 * host backend, cuMemHostRegister / rte_gpu_mem_register on the GPU ones.
 * `va` and `len` must be page aligned.  gi_mem_region_free() unregisters
 * and leaves the mapping to its owner.
 */
int gi_mem_register_shared(const struct gi_mem_choice *c, void *va, size_t len, struct gi_mem_region *out,
			   char *err, size_t errlen);

#endif /* GI_MEM_H */
