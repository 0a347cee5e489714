/*
 * frame_store.c — a stream's frame ring and what goes with it (see frame_store.h).
 */
#include <errno.h>
#include <string.h>

#include "frame_store.h"
#include "kernels/frame_wake.h"
#include "log.h"

int gi_frame_store_open(struct gi_frame_store *fs, const struct gi_frame_store_spec *sp,
			const struct gi_mem_choice *mem)
{
	uint64_t full = gi_frame_ring_bytes_t(sp->slots, sp->packets, sp->payload_bytes,
					      sp->tensor ? sp->tensor->bytes : 0);
	uint64_t len = sp->in_device ? gi_frame_mirror_bytes(sp->slots, sp->packets) : full;
	char err[512];
	int rc;

	memset(fs, 0, sizeof(*fs));
	rc = gi_shm_create(&fs->shm, sp->shm, len, 0640, sp->created_ns);
	if (rc < 0)
		return rc;
	struct gi_frame_ring_hdr *h = fs->shm.va;
	gi_frame_ring_init_t(h, sp->slots, sp->packets, sp->payload_bytes, sp->frame_bytes, sp->format, sp->index,
			     sp->stream, sp->created_ns, sp->tensor);
	h->wake_token = fs->shm.wake ? sp->wake_token : 0; /* no wake object: consumers poll */
	h->nic_ts = sp->nic_ts;
	rc = gi_mem_register_shared(mem, h, GI_ALIGN_UP(len, 4096), &fs->reg, err, sizeof(err));
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "stream %s: frame ring %s: %s", sp->stream, sp->shm, err);
		goto fail;
	}
	fs->ring = h;
	fs->mirror = NULL;
	if (!sp->in_device)
		return 0;

	/* frames in GPU memory: the shared-memory object becomes their metadata
	 * mirror and carries the CUDA IPC handle consumers open (kernels/frame.h) */
	const struct gi_mem_provider *dev = gi_mem_choice_provider(mem, GI_MEM_DEVICE, sp->stream, err, sizeof(err));
	if (!dev) {
		gi_log(GI_LOG_ERR, "%s", err);
		rc = -ENODEV;
		goto fail;
	}
	/* 256: cuMemAlloc's own alignment, so va is the allocation base that
	 * cuIpcGetMemHandle wants and cuIpcOpenMemHandle hands consumers */
	rc = dev->alloc(dev, full, 256, false, &fs->dev, err, sizeof(err));
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "stream %s: frame ring of %llu bytes in GPU memory: %s", sp->stream,
		       (unsigned long long)full, err);
		goto fail;
	}
	struct gi_mem_cuda_ipc ipc;
	rc = gi_mem_cuda_share(&fs->dev, h, sizeof(*h), &ipc, err, sizeof(err)); /* the device ring's header too */
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "stream %s: GPU frame ring: %s", sp->stream, err);
		goto fail;
	}
	gi_frame_ring_make_mirror(h, ipc.dev_ordinal, ipc.pci_bus_id, ipc.handle, full);
	fs->mirror = h;
	fs->ring = (struct gi_frame_ring_hdr *)fs->dev.va; /* a device address: the executor uses it as is */
	return 0;
fail:
	gi_mem_region_free(&fs->dev);
	gi_mem_region_free(&fs->reg);
	gi_shm_destroy(&fs->shm, 1);
	memset(fs, 0, sizeof(*fs));
	return rc;
}

struct gi_frame_ring_hdr *gi_frame_store_hdr(const struct gi_frame_store *fs)
{
	return fs->shm.va;
}

void gi_frame_store_close(struct gi_frame_store *fs, bool unlink_name)
{
	struct gi_frame_ring_hdr *h = fs->shm.va;

	if (h) {
		__atomic_store_n(&h->closed, 1, __ATOMIC_RELEASE);
		gi_frame_wake_now(h, gi_shm_waiters(&fs->shm)); /* sleepers see it now, drain and leave */
		if (unlink_name)
			gi_shm_unlink(&fs->shm);
	}
	gi_mem_region_free(&fs->reg);
	gi_mem_region_free(&fs->dev);
	gi_shm_destroy(&fs->shm, unlink_name);
	memset(fs, 0, sizeof(*fs));
}
