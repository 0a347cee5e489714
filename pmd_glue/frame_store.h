/*
 * frame_store.h — where one stream's frames live: its frame ring in shared
 * memory (or, frames in GPU memory, the ring's metadata mirror there and
 * the frames in device memory shared by CUDA IPC), the ring's wake object,
 * and their registrations.  The one way to make and unmake a frame ring:
 * start-up, reload and shutdown all go through here.
 *
 * Main thread only.
 */
#ifndef GI_FRAME_STORE_H
#define GI_FRAME_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/frame.h"
#include "mem.h"
#include "shm.h"

struct gi_frame_store_spec {
	const char *stream;      /* for messages and the header */
	const char *shm;         /* the shared-memory name consumers open */
	uint32_t index;          /* the stream's index (header) */
	uint32_t slots;
	uint32_t packets;        /* bits per slot (a frame-end packet of its own included) */
	uint32_t payload_bytes;
	uint64_t frame_bytes;
	uint32_t format;
	uint64_t created_ns;     /* CLOCK_REALTIME: tells two runs apart */
	uint64_t wake_token;     /* the daemon's wake socket, 0: none (frame.h) */
	bool in_device;          /* frames in GPU memory (backend cuda) */
	const struct gi_frame_tensor *tensor; /* the frames as typed tensors (tensor:), NULL: bytes only */
	uint32_t nic_ts;         /* enum gi_nic_ts: the clock of the frames' NIC times (its port's) */
};

struct gi_frame_store {
	struct gi_shm shm;                /* what consumers map: the ring, or its mirror */
	struct gi_mem_region reg;         /* shm registered for the GPU (GPU backends) */
	struct gi_mem_region dev;         /* the frames in GPU memory (backend cuda) */
	struct gi_frame_ring_hdr *ring;   /* where the executor assembles: shm.va, or a device address */
	struct gi_frame_ring_hdr *mirror; /* the consumers' header when the frames are in GPU memory, else NULL */
};

/*
 * Make stream's frame ring as `sp` says, with `mem`'s providers.  0, or
 * -errno with one log line naming the stream; nothing is held then.
 */
int gi_frame_store_open(struct gi_frame_store *fs, const struct gi_frame_store_spec *sp,
			const struct gi_mem_choice *mem);

/* The header consumers read (the ring, or its mirror); NULL when not open. */
struct gi_frame_ring_hdr *gi_frame_store_hdr(const struct gi_frame_store *fs);

/*
 * Close it for consumers: `closed` set and sleepers woken (they drain and
 * leave), then, when `unlink_name`, the name removed before any memory is
 * freed (no consumer opens a ring whose memory is going), then everything
 * freed.  A name now used by another ring is not unlinked.  Safe on a
 * zeroed store.
 */
void gi_frame_store_close(struct gi_frame_store *fs, bool unlink_name);

#endif /* GI_FRAME_STORE_H */
