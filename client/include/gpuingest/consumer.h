/*
 * gpuingest/consumer.h — read the frames gpuingestd assembles.
 *
 * libgpuingest is the consumer side of gpuingestd's frame rings: a stream's
 * frames, in host shared memory or in GPU memory (through CUDA IPC), handed
 * to the caller without a copy, with the daemon's seqlock protocol, its
 * restart and shutdown signals and its futex wake-ups done for you.
 *
 *     struct gic_ring *r;
 *     struct gic_frame f;
 *     char err[256];
 *     if (gic_open(&r, "cam0", 10000, 0, err, sizeof(err)) != GIC_OK) { puts(err); exit(1); }
 *     while (gic_next(r, &f, -1) == GIC_OK) {
 *             use(f.data, f.bytes);          // host ring: the bytes in the ring itself
 *             if (!gic_valid(r, &f))          // the daemon reused the slot meanwhile
 *                     discard_result();
 *     }
 *     gic_close(r);
 *
 * A frame view stays usable until the next gic_next() on its ring; its data
 * is the daemon's ring slot, which the daemon reuses n_slots frames later
 * whether or not the consumer is done (consumers never slow the daemon).
 * gic_valid() after using the data says whether that happened; gic_copy()
 * copies and checks in one call.
 *
 * ABI.  The soname is libgpuingest.so.GIC_ABI_VERSION.  Within one ABI
 * version functions are only added, and the structs below only grow into
 * their reserved words (whose value is 0 until then).  The frame ring's own
 * layout (kernels/frame.h in the source) is checked at gic_open(): a ring of
 * another version is refused with -EPROTO and a message naming both
 * versions, so a library older or newer than the daemon says so instead of
 * misreading frames.
 *
 * Threads: a gic_ring is used by one thread at a time; different rings (or
 * the same stream opened twice) are independent.
 */
#ifndef GPUINGEST_CONSUMER_H
#define GPUINGEST_CONSUMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GIC_ABI_VERSION 1

/* The clock of gic_frame's first_nic_ns/last_nic_ns (the daemon's ports[].rx_timestamp). */
enum gic_nic_ts {
	GIC_TS_NONE = 0,         /* the port does not timestamp: both are 0 */
	GIC_TS_REALTIME = 1,     /* CLOCK_REALTIME nanoseconds */
	GIC_TS_DEVICE_TICKS = 2, /* the NIC's raw counter: its driver has no clock to convert with */
};

/* A stream's open frame ring (opaque). */
struct gic_ring;

/* Results.  Errors are negative errno values (-ENOENT, -EPROTO, ...). */
enum gic_status {
	GIC_OK = 0,
	GIC_TIMEOUT = 1,     /* nothing within the timeout */
	GIC_CLOSED = 2,      /* the daemon closed the ring and every frame of it was returned */
	GIC_RESTARTED = 3,   /* the ring was removed or replaced without closing (daemon restart,
			      * stream reshaped by a reload): gic_close() it and gic_open() again */
	GIC_OVERRUN = 4,     /* gic_copy(): the frame was overwritten while it was copied */
	GIC_INTERRUPTED = 5, /* a signal arrived while waiting (EINTR); nothing consumed */
};

/* gic_open() flags */
#define GIC_OPEN_LATEST 0x1u /* start at the newest published frame, not the oldest the ring still holds
			      * (what the ring held before it counts as skipped) */

enum gic_frame_state {
	GIC_FRAME_COMPLETE = 2,  /* every packet arrived */
	GIC_FRAME_PARTIAL = 3,   /* pushed out of the reorder window, or flushed at shutdown */
	GIC_FRAME_TIMED_OUT = 4, /* partial: no packet came for the stream's frame_timeout */
	GIC_FRAME_CORRUPT = 5,   /* every packet arrived but the sender's record (CRC, bytes) disagrees */
};

enum gic_sender_kind {
	GIC_SENDER_NONE = 0,
	GIC_SENDER_HSB = 1,      /* Holoscan Sensor Bridge frame-end record */
};

enum gic_crc_state {
	GIC_CRC_UNCHECKED = 0,
	GIC_CRC_OK = 1,
	GIC_CRC_MISMATCH = 2,
};

/*
 * A frame as a typed tensor (the stream's `tensor:` block): its element
 * type.  A complex integer sample typed as is (`to: same`) is its
 * component type with a last dimension of 2 (I, Q).
 */
enum gic_dtype {
	GIC_DTYPE_NONE = 0,  /* the stream has no tensor: frames are bytes only */
	GIC_DTYPE_U8 = 1,
	GIC_DTYPE_I8 = 2,
	GIC_DTYPE_U16 = 3,
	GIC_DTYPE_I16 = 4,
	GIC_DTYPE_U32 = 5,
	GIC_DTYPE_I32 = 6,
	GIC_DTYPE_F16 = 7,
	GIC_DTYPE_BF16 = 8,
	GIC_DTYPE_F32 = 9,
	GIC_DTYPE_CF16 = 10, /* complex: two float16 (I, Q) */
	GIC_DTYPE_CF32 = 11, /* complex: two float32 (complex64) */
};
#define GIC_TENSOR_DIMS 5

/* The sender's own record of a frame, when its format carries one (kind != NONE). */
struct gic_sender {
	uint32_t kind;           /* enum gic_sender_kind */
	uint32_t flags;          /* HSB: bit 0 early TLAST, bit 1 bytes-per-window only */
	uint64_t frame_number;   /* the sender's frame counter, extended to 64 bits */
	uint64_t bytes_written;  /* what the sender says it wrote */
	uint64_t sof_ns;         /* start of frame, the sender's PTP time */
	uint64_t meta_ns;        /* when the sender emitted the record, PTP */
	uint32_t crc;            /* HSB: ~crc32 of the frame (zlib's crc32) */
	uint32_t psn;            /* the PSN the record came with */
	uint32_t crc_state;      /* enum gic_crc_state: the daemon's check (rocev2.frame_crc) */
	uint32_t reserved;
};

/*
 * One published frame.  Metadata and bitmap are copies taken under the
 * seqlock; `data` (host rings) or `dev_ptr` (GPU rings) point into the ring.
 */
struct gic_frame {
	uint64_t frame;          /* the ring's frame number (monotonic for this ring) */
	uint64_t sensor_frame;   /* the sender's frame number (or index since its first packet) */
	uint32_t sensor_id;      /* the sender's stream id from the packet header */
	uint32_t state;          /* enum gic_frame_state */
	uint32_t expected;       /* packets */
	uint32_t received;       /* unique packets placed */
	uint64_t bytes;          /* frame length in bytes */
	uint32_t payload_bytes;  /* per packet: packet i holds [i * payload_bytes, +payload_bytes) ∩ [0, bytes) */
	uint32_t bitmap_words;   /* 64-bit words in bitmap */
	const uint64_t *bitmap;  /* bit i: packet i arrived; valid until the next gic_next() */
	const void *data;        /* host ring: the frame's bytes in the ring; NULL for a GPU ring */
	uint64_t dev_ptr;        /* GPU ring: device address (CUdeviceptr) of the frame here; else 0 */
	uint64_t first_ts_ns;    /* the sender's timestamp of the first packet that arrived (format's) */
	uint64_t first_rx_ns;    /* daemon's CLOCK_MONOTONIC when its first packet was placed */
	uint64_t publish_ns;     /* daemon's CLOCK_MONOTONIC at publication */
	struct gic_sender sender;
	uint64_t seq_;           /* private: the seqlock word it was read under */
	uint32_t flags_;         /* private */
	/* the frame as a typed tensor (tensor_dtype != GIC_DTYPE_NONE), written before it was
	 * published: compact, row-major, lost samples as the stream's tensor.missing says */
	uint16_t tensor_dtype;   /* enum gic_dtype */
	uint16_t tensor_ndim;    /* 1 .. GIC_TENSOR_DIMS; the sizes: gic_info()->tensor_shape */
	uint64_t tensor;         /* its address: host rings in this process's mapping of the ring
				  * ((const void *)(uintptr_t)f.tensor), GPU rings a device pointer
				  * (CUdeviceptr, as dev_ptr); 0 without a tensor */
	/* the NIC's receive times of the frame's packets that were placed, the earliest and
	 * the latest, in the clock gic_info()->nic_ts names; 0: none (rx_timestamp off, or no
	 * packet of it was stamped) */
	uint64_t first_nic_ns;
	uint64_t last_nic_ns;
};

/* Whether packet i of the frame arrived (its bytes are the sender's; others are stale). */
static inline int gic_packet_present(const struct gic_frame *f, uint32_t i)
{
	return i < f->expected && (int)(f->bitmap[i >> 6] >> (i & 63) & 1);
}

struct gic_ring_info {
	char stream[64];         /* the stream's name in the daemon's config */
	char shm[256];           /* the shared-memory object, e.g. "/gpuingest-cam0" */
	uint32_t ring_version;   /* frame ring layout version (kernels/frame.h) */
	uint32_t format;         /* 1 udp_seq, 2 rocev2, 3 vita49, 4 custom */
	uint32_t n_slots;        /* frames the ring holds */
	uint32_t packets;        /* per frame */
	uint32_t payload_bytes;  /* per packet */
	uint32_t in_device;      /* frames are in GPU memory: dev_ptr, not data */
	uint64_t frame_bytes;    /* every frame's length */
	uint64_t created_ns;     /* CLOCK_REALTIME when the daemon made the ring: tells runs apart */
	char pci_bus_id[32];     /* GPU rings: the GPU, e.g. "0000:41:00.0" */
	int32_t cuda_device;     /* GPU rings: its CUDA ordinal in this process; else -1 */
	uint32_t wake;           /* 1: waits sleep on the futex and the daemon wakes them;
				  * 0: no wake object (the daemon's wake socket unreachable,
				  * or none), waits poll (200 µs) */
	uint32_t tensor_dtype;   /* enum gic_dtype: every frame's tensor; GIC_DTYPE_NONE: none */
	uint32_t tensor_ndim;
	uint32_t tensor_shape[GIC_TENSOR_DIMS];
	uint32_t nic_ts;         /* enum gic_nic_ts: the clock of every frame's first_nic_ns/last_nic_ns */
};

struct gic_stats {
	/*
	 * Every frame number from first_frame up to next_frame (the next one
	 * gic_next() looks at) is in exactly one of: complete, partial,
	 * timed_out, corrupt, missing, overruns, skipped.  Frames before
	 * first_frame are not this consumer's: a consumer that opens a ring
	 * already running starts at the oldest frame the ring still holds.
	 */
	uint64_t complete, partial, timed_out, corrupt; /* returned by gic_next(), by state */
	uint64_t missing;        /* no packet of it ever arrived: the daemon skipped its number (at a
				  * stream's start that includes the reorder_window - 1 numbers the
				  * daemon leaves before the first frame, for packets reordered ahead of it) */
	uint64_t overruns;       /* reused before this consumer read it (it fell a ring behind after
				  * it opened the ring), or while it was (gic_valid()/gic_copy()
				  * found it overwritten: moved here from its state's count) */
	uint64_t skipped;        /* passed over by gic_skip_to_newest() or GIC_OPEN_LATEST */
	uint64_t frames;         /* complete + partial + timed_out + corrupt */
	uint64_t first_frame;    /* where this consumer started, valid when started: the stream's first
				  * frame if it opened the ring before the stream started, else the
				  * oldest frame the ring held when it opened (or at its first
				  * gic_next(), for frames published before the open) */
	uint64_t next_frame;
	uint32_t started;        /* the stream has started (first_frame is known) */
	uint32_t reserved0;
	uint64_t waits;          /* sleeps in gic_next() */
	uint64_t protocol_errors;/* frames below next_frame still being filled (counted as missing too):
				  * the daemon broke the ring protocol; report it */
	uint64_t reserved[6];
};

/*
 * Open a stream's frame ring.  `name`: a stream name ("cam0" opens
 * "/gpuingest-cam0", the default ring.shm, and checks that it is that
 * stream's ring) or a shared-memory name starting with '/' (a stream with
 * its own ring.shm).  Waits up to timeout_ms (-1: forever) for the daemon
 * to create it.  The consumer starts at the stream's first frame if the
 * stream has not started yet, else at the oldest frame the ring still
 * holds (GIC_OPEN_LATEST: the newest); frames before that, and frames
 * published before the open that the ring reuses before the first
 * gic_next(), are not counted in its gic_stats at all.  GPU rings: loads
 * libcuda, finds the daemon's GPU by PCI address and opens the ring's CUDA
 * IPC handle in its primary context.
 * Returns GIC_OK, GIC_TIMEOUT (not there in time) or -errno (-EPROTO:
 * another ring version or a damaged header; -EACCES; -ENOTSUP/-ENODEV/-EIO:
 * CUDA unusable here), with one line in err saying why.
 */
int gic_open(struct gic_ring **out, const char *name, int timeout_ms, unsigned flags, char *err, size_t err_len);
void gic_close(struct gic_ring *r);

const struct gic_ring_info *gic_info(const struct gic_ring *r);

/*
 * The next published frame: waits up to timeout_ms (-1: forever, 0: do not
 * wait).  Frames the daemon skipped, and frames reused before this call,
 * are counted (gic_stats) and passed over.  GIC_OK with *f filled, or
 * GIC_TIMEOUT, GIC_CLOSED, GIC_RESTARTED, GIC_INTERRUPTED, -errno.
 */
int gic_next(struct gic_ring *r, struct gic_frame *f, int timeout_ms);

/*
 * 1 if f's slot still holds f (what the caller read of its data was the
 * frame), 0 if the daemon reused it: then f counts as an overrun, once.
 */
int gic_valid(struct gic_ring *r, struct gic_frame *f);

/*
 * Copy f's data (host or GPU ring) to host memory dst of dst_len >= f->bytes
 * bytes, then check the seqlock: GIC_OK, GIC_OVERRUN (the copy is torn and
 * f counts as an overrun), -ENOSPC, or -EIO (a CUDA copy failed).
 */
int gic_copy(struct gic_ring *r, struct gic_frame *f, void *dst, size_t dst_len);

/*
 * The frame's tensor (the stream's tensor: block) copied to host memory dst
 * of dst_len >= gic_tensor_bytes() bytes, then checked like gic_copy():
 * GIC_OK, GIC_OVERRUN, -ENOSPC, -EIO, or -ENOENT (the stream has none).
 */
int gic_copy_tensor(struct gic_ring *r, struct gic_frame *f, void *dst, size_t dst_len);

/* Bytes of each frame's tensor (elements x their size), 0 if the stream has no tensor: block. */
uint64_t gic_tensor_bytes(const struct gic_ring *r);

/*
 * For a consumer that fell behind: the next gic_next() returns the newest
 * published frame (or the next to be published).  Returns how many frames
 * were passed over (counted as skipped).
 */
uint64_t gic_skip_to_newest(struct gic_ring *r);

void gic_stats(const struct gic_ring *r, struct gic_stats *s);

/* A short name for a gic_status or -errno value, e.g. "timeout". */
const char *gic_strerror(int status);

/* What went wrong in the ring's last failed call (a CUDA copy...), "" if nothing. */
const char *gic_last_error(const struct gic_ring *r);

#ifdef __cplusplus
}
#endif

#endif /* GPUINGEST_CONSUMER_H */
