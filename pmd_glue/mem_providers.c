/*
 * mem_providers.c — which provider serves which memory kind: GPU probing,
 * backend selection (auto → gpudev, cuda, host) and memory shared by the
 * CPU and the executor (see mem.h).
 *
 * gi_mem_select() is pure so that every backend × machine combination is a
 * unit test; gi_gpu_probe() is the only part that looks at the machine.
 *
 * Main thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_gpudev.h>

#include "kernels/cuda_drv.h"
#include "log.h"
#include "mem.h"

#define GPUDEV_NONE "DPDK gpudev has no GPU (its CUDA driver knows no Hopper/Ada/Blackwell PCI IDs)"

static const char *backend_name(enum gi_backend b)
{
	switch (b) {
	case GI_BACKEND_AUTO: return "auto";
	case GI_BACKEND_HOST: return "host";
	case GI_BACKEND_CUDA: return "cuda";
	case GI_BACKEND_GPUDEV: return "gpudev";
	}
	return "?";
}

void gi_gpu_probe(struct gi_gpu_probe *p, struct gi_cuda_drv *drv, const char *cuda_device)
{
	memset(p, 0, sizeof(*p));
	p->gpudev_id = -1;
	/* gpudev drivers register their devices during EAL init; 0 before it */
	p->gpudev_count = rte_gpu_count_avail();
	if (p->gpudev_count > 0)
		p->gpudev_id = rte_gpu_find_next(0, RTE_GPU_ID_ANY);
	if (p->gpudev_id < 0)
		p->gpudev_count = 0;

	if (!drv) {
		p->cuda_status = -ENOTSUP;
		snprintf(p->cuda_err, sizeof(p->cuda_err), "not probed");
		return;
	}
	p->cuda_status = gi_cuda_drv_open(drv, cuda_device, p->cuda_err, sizeof(p->cuda_err));
	if (p->cuda_status == 0) {
		p->cuda = drv;
		snprintf(p->cuda_name, sizeof(p->cuda_name), "device %d: %s at %s, driver CUDA %d.%d", drv->device_index,
			 drv->name, drv->pci_bus_id, drv->driver_version / 1000, drv->driver_version % 1000 / 10);
	}
}

int gi_mem_select(enum gi_backend requested, const struct gi_gpu_probe *probe, struct gi_mem_choice *out)
{
	bool gpudev_ok = probe->gpudev_count > 0 && probe->gpudev_id >= 0;
	bool cuda_ok = probe->cuda_status == 0;
	char gpudev_says[96], cuda_says[320];

	memset(out, 0, sizeof(*out));
	out->backend = GI_BACKEND_HOST;
	out->providers[GI_MEM_HOST] = gi_mem_host_provider;
	if (gpudev_ok)
		snprintf(gpudev_says, sizeof(gpudev_says), "DPDK gpudev has %u GPU%s (using gpu %d)",
			 probe->gpudev_count, probe->gpudev_count == 1 ? "" : "s", probe->gpudev_id);
	else
		snprintf(gpudev_says, sizeof(gpudev_says), "%s", GPUDEV_NONE);
	if (cuda_ok)
		snprintf(cuda_says, sizeof(cuda_says), "CUDA driver: %s", probe->cuda_name);
	else
		snprintf(cuda_says, sizeof(cuda_says), "CUDA driver: %s", probe->cuda_err);

	switch (requested) {
	case GI_BACKEND_AUTO:
		if (gpudev_ok) {
			out->backend = GI_BACKEND_GPUDEV;
			snprintf(out->why, sizeof(out->why), "auto: %s; using gpudev", gpudev_says);
		} else if (cuda_ok) {
			out->backend = GI_BACKEND_CUDA;
			snprintf(out->why, sizeof(out->why), "auto: %s; %s; using cuda", gpudev_says, cuda_says);
		} else {
			snprintf(out->why, sizeof(out->why), "auto: %s; %s; using host", gpudev_says, cuda_says);
		}
		break;
	case GI_BACKEND_HOST:
		snprintf(out->why, sizeof(out->why), "backend: host in the config");
		break;
	case GI_BACKEND_CUDA:
		if (!cuda_ok) {
			snprintf(out->why, sizeof(out->why),
				 "backend: cuda: no usable GPU or NVIDIA driver found (%s); use backend: host (or "
				 "auto) to run without a GPU",
				 probe->cuda_err);
			return -ENODEV;
		}
		out->backend = GI_BACKEND_CUDA;
		snprintf(out->why, sizeof(out->why), "backend: cuda in the config; %s", cuda_says);
		break;
	case GI_BACKEND_GPUDEV:
		if (!gpudev_ok) {
			snprintf(out->why, sizeof(out->why),
				 "backend: gpudev: %s; %s", GPUDEV_NONE,
				 cuda_ok ? "the CUDA driver does see a GPU: use backend: cuda (or auto)"
					 : "no GPU or NVIDIA driver found: use backend: host (or auto) to run without a GPU");
			return -ENODEV;
		}
		out->backend = GI_BACKEND_GPUDEV;
		snprintf(out->why, sizeof(out->why), "backend: gpudev in the config; %s", gpudev_says);
		break;
	default:
		snprintf(out->why, sizeof(out->why), "unknown backend %d", (int)requested);
		return -EINVAL;
	}

	if (out->backend == GI_BACKEND_CUDA)
		gi_mem_cuda_bind(out->providers, probe->cuda);
	else if (out->backend == GI_BACKEND_GPUDEV)
		gi_mem_gpudev_bind(out->providers, probe->gpudev_id);
	return 0;
}

int gi_mem_setup(enum gi_backend requested, const char *cuda_device, struct gi_cuda_drv *drv,
		 struct gi_mem_choice *out)
{
	struct gi_gpu_probe probe;
	int rc;

	/* backend: host must not touch libcuda (nor hold a GPU context) */
	gi_gpu_probe(&probe, requested == GI_BACKEND_HOST ? NULL : drv, cuda_device);
	rc = gi_mem_select(requested, &probe, out);
	if (rc < 0 || out->backend != GI_BACKEND_CUDA)
		gi_cuda_drv_close(drv);
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "executor: %s", out->why);
		return rc;
	}
	gi_log(GI_LOG_INFO, "executor: backend %s (%s)", backend_name(out->backend), out->why);
	if (out->backend == GI_BACKEND_CUDA && drv && drv->emulated)
		gi_log(GI_LOG_WARNING, "cuda: this is the CUDA EMULATION build (tests only): kernels run on CPU threads, "
		       "%s is not a GPU and no figure it gives is a GPU result", drv->name);
	if (out->backend == GI_BACKEND_CUDA && drv && drv->rdma_flush_missing)
		gi_log(GI_LOG_WARNING, "cuda: %s (%s) does not order GPUDirect RDMA writes for its own kernels and this "
		       "driver cannot flush them (no host flush option or no cuFlushGPUDirectRDMAWrites): with device "
		       "pools a kernel may read packet bytes before the NIC's writes land; update the NVIDIA driver",
		       drv->name, drv->pci_bus_id);
	else if (out->backend == GI_BACKEND_CUDA && drv && !drv->rdma_flush_needed)
		gi_log(GI_LOG_INFO, "cuda: %s orders GPUDirect RDMA writes for its own kernels; no flush before the "
		       "doorbell", drv->name);
	return 0;
}

const struct gi_mem_provider *gi_mem_choice_provider(const struct gi_mem_choice *c, enum gi_mem_kind kind,
						     const char *pool, char *err, size_t errlen)
{
	if ((unsigned)kind >= GI_MEM_N_KINDS) {
		snprintf(err, errlen, "memory pool %s: unknown memory kind %d", pool, (int)kind);
		return NULL;
	}
	if (!c)
		return gi_mem_provider_for(kind, err, errlen);
	if (c->providers[kind].alloc)
		return &c->providers[kind];
	snprintf(err, errlen, "memory pool %s: kind %s needs a GPU backend (backend resolved to %s: %s)", pool,
		 gi_mem_kind_name(kind), backend_name(c->backend), c->why);
	return NULL;
}

int gi_mem_alloc_shared(const struct gi_mem_choice *c, size_t len, struct gi_mem_region *out, char *err,
			size_t errlen)
{
	const struct gi_mem_provider *p = &c->providers[GI_MEM_HOST_PINNED];
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	if (c->backend == GI_BACKEND_HOST || !p->alloc)
		p = &c->providers[GI_MEM_HOST];
	/* anonymous mappings come zeroed: a fresh ring reads head == tail == 0 */
	return p->alloc(p, len ? len : 1, pg, false, out, err, errlen);
}

int gi_mem_register_shared(const struct gi_mem_choice *c, void *va, size_t len, struct gi_mem_region *out,
			   char *err, size_t errlen)
{
	const struct gi_mem_provider *p = &c->providers[GI_MEM_HOST_PINNED];

	if (c->backend == GI_BACKEND_HOST || !p->register_host) {
		memset(out, 0, sizeof(*out));
		out->va = va;
		out->len = len;
		out->page_sz = (size_t)sysconf(_SC_PAGESIZE);
		out->borrowed = true; /* provider NULL: freeing it does nothing */
		return 0;
	}
	return p->register_host(p, va, len, out, err, errlen);
}
