/*
 * frame.h — the per-stream frame ring that consumers read.
 *
 * A frame ring is one block of memory (a POSIX shared-memory object for
 * host memory; device memory exported by CUDA IPC on the GPU path) laid out
 * as a header followed by `n_slots` slots.  Frame number f (the sender's
 * frame counter, extended to 64 bits) always lives in slot f % n_slots.
 *
 * Consumers are read-only and never block the daemon.  Each slot carries a
 * sequence word used as a seqlock:
 *     2f + 1  while frame f is being filled
 *     2f + 2  once frame f is published (complete, partial or timed out)
 * A consumer that wants frame f reads seq, copies/verifies, reads seq again:
 * if either read is not 2f + 2 the slot was reused under it (an overrun,
 * counted on the consumer's side).  `next_frame` in the header says which
 * frames are final: every frame below it is published or was skipped
 * (no packet of it ever arrived).
 *
 * Frames assembled in GPU memory: the executor's ring (same layout, with
 * payload) lives in device memory, and the shared-memory object is its
 * metadata mirror: the same header and slot headers, `payload_in_device`
 * set, no payload area (slot_stride covers header and bitmap only), and a
 * CUDA IPC handle of the device ring.  A consumer opens the handle
 * (cuIpcOpenMemHandle) and finds frame f's payload at
 *     dev_base + gi_frame_dev_payload_off(hdr, f).
 * The executor writes a slot's mirror before bumping the mirror's seq, so
 * the seqlock protocol is the same for both kinds.
 *
 * Writers: the executor only.  Readers: consumers (other processes), the
 * stats thread.
 */
#ifndef GI_FRAME_H
#define GI_FRAME_H

#include "gi_hd.h"
#include "tensor.h"

GI_EXTERN_C_BEGIN

#define GI_FRAME_MAGIC 0x47494652u /* "GIFR" */
/*
 * 2: slots carry the sender's frame metadata (gi_frame_sender), 128-byte slot headers
 * 3: wake_seq, the consumers' futex word, and the ring's wake object (below)
 * 4: the frame as a typed tensor (gi_frame_tensor after the consumers' words; slots
 *    may end with a tensor area); the header grows to 448 bytes
 * 5: the NIC's receive times of each frame's first and last packet (first_nic_ns,
 *    last_nic_ns): slot headers grow to 192 bytes; the header says which clock (nic_ts)
 */
#define GI_FRAME_VERSION 5u
#define GI_FRAME_MAX_PACKETS 65535u

enum gi_frame_state {
	GI_FRAME_EMPTY = 0,
	GI_FRAME_FILLING = 1,
	GI_FRAME_COMPLETE = 2,
	GI_FRAME_PARTIAL = 3,   /* pushed out of the reorder window, or flushed at shutdown */
	GI_FRAME_TIMED_OUT = 4, /* partial because no packet came for frame_timeout */
	GI_FRAME_CORRUPT = 5,   /* every packet arrived, but the sender's record disagrees with the frame
				 * (rocev2.frame_crc: verify): its CRC, or the bytes it says it wrote */
};

/*
 * Which clock a ring's first_nic_ns/last_nic_ns are in (its port's
 * rx_timestamp; pmd_glue/rxdesc.h converts).  REALTIME: CLOCK_REALTIME
 * nanoseconds, from the NIC's time through the rx lcore's periodic pairs of
 * rte_eth_read_clock() and clock_gettime(), or a PMD whose timestamps are
 * wall-clock time already (net_pcap: the capture's).  DEVICE_TICKS: the
 * NIC's raw counter, its driver has no clock to convert it with.
 */
enum gi_nic_ts {
	GI_NIC_TS_NONE = 0, /* the port does not timestamp (rx_timestamp: false): both 0 */
	GI_NIC_TS_REALTIME = 1,
	GI_NIC_TS_DEVICE_TICKS = 2,
};

/*
 * A stream's frames as typed tensors (its `tensor:` block; kernels/tensor.h):
 * every slot holds, at `off` from the slot's start (the device ring's slot
 * when payload_in_device), `bytes` of the frame's samples converted to
 * `dtype`, shaped shape[0 .. ndim - 1], row-major and compact.  Written
 * before the frame is published, under the same seqlock.  dtype 0: none.
 */
#define GI_FRAME_TENSOR_DIMS 5 /* the configured shape's 4 and a complex integer's trailing 2 */
struct gi_frame_tensor {
	uint32_t dtype;           /* enum gi_tensor_dtype; GI_DT_NONE: the ring has no tensor */
	uint32_t ndim;            /* 1 .. GI_FRAME_TENSOR_DIMS */
	uint64_t shape[GI_FRAME_TENSOR_DIMS];
	uint64_t off;             /* in a slot, 256-byte aligned */
	uint64_t bytes;
	uint32_t sample;          /* enum gi_tensor_sample: what the frame's bytes hold */
	uint32_t big;             /* 1: they are big-endian */
	uint32_t missing;         /* enum gi_tensor_missing: what a lost packet's samples became */
	uint32_t pad;
	double scale, offset;     /* out = in * scale + offset */
};
GI_STATIC_ASSERT(sizeof(struct gi_frame_tensor) == 96, "tensor record ABI");

struct gi_frame_ring_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t hdr_bytes;
	uint32_t n_slots;
	uint32_t packets_per_frame;
	uint32_t payload_bytes;   /* per packet */
	uint32_t bitmap_words;    /* uint64_t words of received-packet bitmap per slot */
	uint64_t slot_stride;
	uint64_t frame_bytes;     /* the frame's length: packets_per_frame * payload_bytes, or less when
				   * the last packet is shorter (frame.bytes) */
	uint64_t payload_off;     /* payload offset inside a slot, 64-byte aligned */
	uint32_t format;          /* enum gi_format */
	uint32_t stream_index;
	char stream_name[64];
	uint64_t created_ns;      /* CLOCK_REALTIME at creation, tells two daemon runs apart */
	/* GPU frame rings (payload_in_device = 1): where the payload really is */
	uint32_t payload_in_device;
	uint32_t dev_ordinal;     /* CUDA device ordinal of the daemon's context */
	uint64_t dev_slot_stride; /* slot stride of the device ring */
	uint64_t dev_ring_bytes;  /* size of the device allocation behind ipc_handle */
	uint8_t ipc_handle[64];   /* CUipcMemHandle of the device ring (64 bytes by the CUDA ABI) */
	char dev_pci_bus_id[32];  /* the GPU by PCI address: ordinals differ between processes */
	uint64_t wake_token;      /* names the daemon's wake socket (below); 0: none, consumers poll */
	/* written by the executor, read by consumers (own cache line) */
	uint64_t next_frame;      /* frames < next_frame are final */
	uint64_t first_frame;     /* first frame number this run saw */
	uint32_t started;         /* first_frame/next_frame are valid */
	uint32_t closed;          /* the daemon is gone: drain and exit */
	uint32_t wake_seq;        /* futex word: bumped after next_frame moves or closed is set */
	uint8_t pad1[GI_CACHE_LINE - 28];
	/* version 4: fixed while the ring exists, like the words before next_frame */
	struct gi_frame_tensor tensor;
	/* version 5 */
	uint32_t nic_ts;          /* enum gi_nic_ts: the clock of the slots' first_nic_ns/last_nic_ns */
	uint32_t pad3;
	uint8_t pad2[128 - sizeof(struct gi_frame_tensor) - 8];
};
GI_STATIC_ASSERT(offsetof(struct gi_frame_ring_hdr, next_frame) == 256, "consumer-visible words start at 256");
GI_STATIC_ASSERT(offsetof(struct gi_frame_ring_hdr, tensor) == 256 + GI_CACHE_LINE, "tensor record ABI");
GI_STATIC_ASSERT(sizeof(struct gi_frame_ring_hdr) == 448, "frame ring header ABI");
GI_STATIC_ASSERT(offsetof(struct gi_frame_ring_hdr, nic_ts) == 416, "NIC clock word ABI (was padding)");
GI_STATIC_ASSERT(offsetof(struct gi_frame_ring_hdr, ipc_handle) == 152, "IPC handle record ABI");
GI_STATIC_ASSERT(offsetof(struct gi_frame_ring_hdr, ipc_handle) % 8 == 0, "IPC handle is 8-byte aligned");
GI_STATIC_ASSERT(offsetof(struct gi_frame_ring_hdr, wake_seq) == 280, "futex word ABI");
GI_STATIC_ASSERT(offsetof(struct gi_frame_ring_hdr, wake_token) == 248, "wake token ABI (was padding)");

/*
 * Wake-ups.  A consumer with nothing to read sleeps in FUTEX_WAIT on the
 * header's wake_seq (a read-only mapping is enough for that).  Whoever
 * makes frames visible to consumers — a host executor worker after each
 * batch, the CUDA launcher thread reading the GPU's mirror, the daemon at
 * close — bumps wake_seq after next_frame (or closed) and issues one
 * FUTEX_WAKE, only when `waiters` says someone sleeps.
 *
 * `waiters` cannot live in the ring: consumers map the ring read-only
 * (mode 0640), and the ring must stay that way, since the executor reads
 * its slots back.  It lives in the ring's wake object, a page of its own
 * that consumers map read-write and add themselves to around a sleep.  The
 * object is a sealed memfd (its size cannot change, it has no name): the
 * daemon reads it on every publication, so a consumer able to truncate it
 * could kill the daemon (daemon/wake_server.h has the threat).  Consumers
 * get its descriptor from the daemon's wake socket: an abstract unix
 * socket (SOCK_SEQPACKET) named GI_FRAME_WAKE_SOCKET_FMT of the header's
 * wake_token; they send GI_FRAME_WAKE_REQUEST with their read-only
 * descriptor of the ring (SCM_RIGHTS), the proof that they may read it,
 * and receive GI_FRAME_WAKE_MAGIC with the wake object's descriptor.  A
 * consumer that cannot get it polls instead.  Both sides use sequentially
 * consistent accesses, so either the waker sees the waiter, or the waiter
 * sees the new wake_seq and FUTEX_WAIT returns at once.  The count is a
 * hint to the daemon, never trusted: a consumer killed while asleep leaves
 * it high, a broken one writes garbage; the daemon then wakes on every
 * publication, a system call that loses nothing, and reports it once.
 */
#define GI_FRAME_WAKE_SOCKET_FMT "gpuingest-wake-%016llx" /* the abstract name, after its NUL */
#define GI_FRAME_WAKE_REQUEST "GIWAKE1"                    /* 8 bytes with its NUL */
#define GI_FRAME_WAITERS_PLAUSIBLE 65536u                  /* more sleepers than this: a broken count */
#define GI_FRAME_WAKE_STALE 256u /* FUTEX_WAKEs in a row that found nobody although the count said someone slept */

/* What a consumer did to a ring's shared objects that the daemon saw (host only; counted, logged once). */
enum gi_consumer_fault {
	GI_CFAULT_WAITERS_IMPLAUSIBLE = 0, /* a count above GI_FRAME_WAITERS_PLAUSIBLE (garbage written) */
	GI_CFAULT_WAITERS_STALE,           /* the count stays up with nobody asleep (a consumer killed asleep) */
	GI_CFAULT_RING_NAME,               /* the ring's name was removed or replaced under the daemon */
	GI_CFAULT__COUNT
};
#define GI_CFAULT_NAMES { "waiters_implausible", "waiters_stale", "ring_name_gone" }
#define GI_FRAME_WAKE_MAGIC 0x4749574bu /* "GIWK" */

struct gi_frame_wake {
	uint32_t magic;
	uint32_t version;         /* GI_FRAME_VERSION */
	uint64_t ring_created_ns; /* the ring's created_ns: a wake object of the same run */
	uint8_t pad0[GI_CACHE_LINE - 16];
	uint32_t waiters;         /* consumers asleep (or about to be) on the ring's wake_seq */
	uint8_t pad1[GI_CACHE_LINE - 4];
};

/*
 * What the sender said about a frame, when its format carries that (a
 * Holoscan Sensor Bridge frame-end record, rocev2.metadata: hsb); `kind`
 * 0 when it did not (yet) arrive.  Written before the frame is published,
 * under the same seqlock.
 */
enum gi_frame_sender_kind {
	GI_SENDER_NONE = 0,
	GI_SENDER_HSB = 1,
};

enum gi_frame_crc_state {
	GI_CRC_UNCHECKED = 0,
	GI_CRC_OK = 1,
	GI_CRC_MISMATCH = 2,
};

struct gi_frame_sender {
	uint32_t kind;          /* enum gi_frame_sender_kind */
	uint32_t flags;         /* HSB: bit 0 early TLAST, bit 1 bytes-per-window only */
	uint64_t frame_number;  /* the sender's frame counter (HSB: 16 bits), extended to 64 */
	uint64_t bytes_written; /* what the sender says it wrote for the frame */
	uint64_t sof_ns;        /* start of frame, sender's PTP time: s * 1e9 + ns */
	uint64_t meta_ns;       /* when the sender emitted the record, PTP */
	uint32_t crc;           /* HSB: ~crc32(frame), zlib's definition */
	uint32_t psn;           /* the PSN the record carries */
	uint32_t crc_state;     /* enum gi_frame_crc_state: the daemon's check of crc (rocev2.frame_crc) */
	uint32_t crc_acc;       /* the executor's scratch while it checks */
	uint32_t pad[2];
};
GI_STATIC_ASSERT(sizeof(struct gi_frame_sender) == 64, "sender record ABI");

struct gi_frame_slot {
	uint64_t seq;          /* seqlock word, see above */
	uint64_t frame;        /* extended frame number */
	uint64_t first_ts_ns;  /* sender timestamp of the first packet that arrived */
	uint64_t first_rx_ns;  /* executor clock when the first packet was placed */
	uint64_t publish_ns;   /* executor clock at publication */
	uint32_t expected;     /* packets */
	uint32_t received;     /* unique packets placed */
	uint32_t state;        /* enum gi_frame_state */
	uint32_t sensor_id;    /* the sender's stream id from the packet header */
	uint64_t sensor_frame; /* the sender's frame number (or index since its first packet) */
	struct gi_frame_sender sender; /* the sender's own record of the frame, if any */
	/*
	 * Version 5: the NIC's receive time of the frame's packets that were
	 * placed, the smallest and the largest (so any order of placement gives
	 * the same two), in the ring's nic_ts clock; 0: none had one.
	 */
	uint64_t first_nic_ns;
	uint64_t last_nic_ns;
	uint8_t pad[GI_CACHE_LINE - 16];
	/* uint64_t bitmap[bitmap_words]; then payload at payload_off */
};
GI_STATIC_ASSERT(sizeof(struct gi_frame_slot) == 3 * GI_CACHE_LINE, "frame slot header ABI");
GI_STATIC_ASSERT(offsetof(struct gi_frame_slot, first_nic_ns) == 2 * GI_CACHE_LINE, "NIC times ABI");

/* A placed packet's NIC time (0: it has none) into its frame's first/last; any worker, any order. */
GI_HD static inline void gi_frame_nic_note(struct gi_frame_slot *s, uint64_t nic_ns)
{
	if (!nic_ns)
		return;
	gi_atomic_min_nz_u64(&s->first_nic_ns, nic_ns);
	GI_ATOMIC_MAX_U64(&s->last_nic_ns, nic_ns);
}

GI_HD static inline uint32_t gi_frame_bitmap_words(uint32_t packets)
{
	return (packets + 63) / 64;
}

GI_HD static inline uint64_t gi_frame_payload_off(uint32_t packets)
{
	return GI_ALIGN_UP(sizeof(struct gi_frame_slot) + 8ull * gi_frame_bitmap_words(packets), GI_CACHE_LINE);
}

/* Where a slot's tensor area starts (after the payload, 256-byte aligned as CUDA's allocations are). */
GI_HD static inline uint64_t gi_frame_tensor_off(uint32_t packets, uint32_t payload_bytes)
{
	return GI_ALIGN_UP(gi_frame_payload_off(packets) + (uint64_t)packets * payload_bytes, 256);
}

/* A slot: header, bitmap, payload, and tensor_bytes of tensor (0: none). */
GI_HD static inline uint64_t gi_frame_slot_stride_t(uint32_t packets, uint32_t payload_bytes, uint64_t tensor_bytes)
{
	return GI_ALIGN_UP(tensor_bytes ? gi_frame_tensor_off(packets, payload_bytes) + tensor_bytes
					: gi_frame_payload_off(packets) + (uint64_t)packets * payload_bytes,
			   4096);
}

GI_HD static inline uint64_t gi_frame_slot_stride(uint32_t packets, uint32_t payload_bytes)
{
	return gi_frame_slot_stride_t(packets, payload_bytes, 0);
}

GI_HD static inline uint64_t gi_frame_ring_bytes_t(uint32_t n_slots, uint32_t packets, uint32_t payload_bytes,
						   uint64_t tensor_bytes)
{
	return GI_ALIGN_UP(sizeof(struct gi_frame_ring_hdr), 4096) +
	       (uint64_t)n_slots * gi_frame_slot_stride_t(packets, payload_bytes, tensor_bytes);
}

GI_HD static inline uint64_t gi_frame_ring_bytes(uint32_t n_slots, uint32_t packets, uint32_t payload_bytes)
{
	return gi_frame_ring_bytes_t(n_slots, packets, payload_bytes, 0);
}

/* A metadata-only mirror: slot header and bitmap, no payload. */
GI_HD static inline uint64_t gi_frame_meta_stride(uint32_t packets)
{
	return gi_frame_payload_off(packets);
}

GI_HD static inline uint64_t gi_frame_mirror_bytes(uint32_t n_slots, uint32_t packets)
{
	return GI_ALIGN_UP(sizeof(struct gi_frame_ring_hdr), 4096) + (uint64_t)n_slots * gi_frame_meta_stride(packets);
}

/* Offset of frame f's payload inside the device ring a mirror describes. */
GI_HD static inline uint64_t gi_frame_dev_payload_off(const struct gi_frame_ring_hdr *mirror, uint64_t frame)
{
	return GI_ALIGN_UP(sizeof(*mirror), 4096) + (frame % mirror->n_slots) * mirror->dev_slot_stride +
	       mirror->payload_off;
}

/* Offset of frame f's tensor inside the device ring a mirror describes. */
GI_HD static inline uint64_t gi_frame_dev_tensor_off(const struct gi_frame_ring_hdr *mirror, uint64_t frame)
{
	return GI_ALIGN_UP(sizeof(*mirror), 4096) + (frame % mirror->n_slots) * mirror->dev_slot_stride +
	       mirror->tensor.off;
}

GI_HD static inline struct gi_frame_slot *gi_frame_slot_at(struct gi_frame_ring_hdr *h, uint64_t frame)
{
	return (struct gi_frame_slot *)((uint8_t *)h + GI_ALIGN_UP(sizeof(*h), 4096) +
					(frame % h->n_slots) * h->slot_stride);
}

GI_HD static inline uint64_t *gi_frame_bitmap(struct gi_frame_slot *s)
{
	return (uint64_t *)(s + 1);
}

GI_HD static inline uint8_t *gi_frame_payload(struct gi_frame_ring_hdr *h, struct gi_frame_slot *s)
{
	return (uint8_t *)s + h->payload_off;
}

/*
 * The magic goes in last, with release ordering: a consumer that sees it
 * sees a complete header (gi_frame_ring_make_mirror() republishes it).
 */
static inline void gi_frame_ring_publish_hdr(struct gi_frame_ring_hdr *h)
{
	__atomic_store_n(&h->magic, GI_FRAME_MAGIC, __ATOMIC_RELEASE);
}

/*
 * Host-only: lay out a ring in zeroed memory of gi_frame_ring_bytes_t(..,
 * tensor ? tensor->bytes : 0); frame_bytes 0: packets * payload_bytes;
 * tensor NULL: frames are bytes only (its `off` is set here).
 */
static inline void gi_frame_ring_init_t(struct gi_frame_ring_hdr *h, uint32_t n_slots, uint32_t packets,
					uint32_t payload_bytes, uint64_t frame_bytes, uint32_t format,
					uint32_t stream_index, const char *name, uint64_t created_ns,
					const struct gi_frame_tensor *tensor)
{
	h->version = GI_FRAME_VERSION;
	h->hdr_bytes = (uint16_t)sizeof(*h);
	h->n_slots = n_slots;
	h->packets_per_frame = packets;
	h->payload_bytes = payload_bytes;
	h->bitmap_words = gi_frame_bitmap_words(packets);
	if (tensor && tensor->dtype != GI_DT_NONE) {
		h->tensor = *tensor;
		h->tensor.off = gi_frame_tensor_off(packets, payload_bytes);
	}
	h->slot_stride = gi_frame_slot_stride_t(packets, payload_bytes, h->tensor.bytes);
	h->frame_bytes = frame_bytes ? frame_bytes : (uint64_t)packets * payload_bytes; /* 0: whole packets */
	h->payload_off = gi_frame_payload_off(packets);
	h->format = format;
	h->stream_index = stream_index;
	for (unsigned i = 0; i + 1 < sizeof(h->stream_name) && name && name[i]; i++)
		h->stream_name[i] = name[i];
	h->created_ns = created_ns;
	gi_frame_ring_publish_hdr(h);
}

static inline void gi_frame_ring_init(struct gi_frame_ring_hdr *h, uint32_t n_slots, uint32_t packets,
				      uint32_t payload_bytes, uint64_t frame_bytes, uint32_t format,
				      uint32_t stream_index, const char *name, uint64_t created_ns)
{
	gi_frame_ring_init_t(h, n_slots, packets, payload_bytes, frame_bytes, format, stream_index, name, created_ns,
			     NULL);
}

/* The bytes a ring of header h takes (as a full ring, not a mirror). */
static inline uint64_t gi_frame_ring_bytes_of(const struct gi_frame_ring_hdr *h)
{
	return gi_frame_ring_bytes_t(h->n_slots, h->packets_per_frame, h->payload_bytes, h->tensor.bytes);
}

/*
 * Host-only: turn `h` (initialised like a full ring) into the metadata
 * mirror of a device ring of the same geometry.
 */
static inline void gi_frame_ring_make_mirror(struct gi_frame_ring_hdr *h, uint32_t dev_ordinal,
					     const char *pci_bus_id, const uint8_t ipc_handle[64],
					     uint64_t dev_ring_bytes)
{
	__atomic_store_n(&h->magic, 0, __ATOMIC_RELAXED); /* consumers wait while it changes shape */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	h->dev_slot_stride = h->slot_stride;
	h->slot_stride = gi_frame_meta_stride(h->packets_per_frame);
	h->payload_in_device = 1;
	h->dev_ordinal = dev_ordinal;
	h->dev_ring_bytes = dev_ring_bytes;
	for (int i = 0; i < 64; i++)
		h->ipc_handle[i] = ipc_handle[i];
	for (unsigned i = 0; i + 1 < sizeof(h->dev_pci_bus_id) && pci_bus_id && pci_bus_id[i]; i++)
		h->dev_pci_bus_id[i] = pci_bus_id[i];
	gi_frame_ring_publish_hdr(h);
}

/*
 * GI_COPY_CHUNK moves at most 16 bytes; tests redefine it to count how many
 * times each destination byte is written.
 */
#ifndef GI_COPY_CHUNK
#if GI_GPU_CODE
/*
 * Widest access both pointers allow: a payload behind a 42-byte UDP header
 * and a 32-byte sensor header starts 2-byte aligned in an mbuf, so the
 * 16/8/4-byte steps matter; buffer split with header_bytes equal to the
 * header length puts it at offset 0 of its own segment.
 */
#define GI_COPY_CHUNK(dst, src, n)                                                                    \
	do {                                                                                          \
		uintptr_t a_ = ((uintptr_t)(dst)) | ((uintptr_t)(src));                               \
		if ((n) == 16 && (a_ & 15) == 0) {                                                    \
			*(uint4 *)(dst) = *(const uint4 *)(src);                                      \
		} else if ((n) == 16 && (a_ & 7) == 0) {                                              \
			((uint2 *)(dst))[0] = ((const uint2 *)(src))[0];                              \
			((uint2 *)(dst))[1] = ((const uint2 *)(src))[1];                              \
		} else if ((n) == 16 && (a_ & 3) == 0) {                                              \
			for (int w_ = 0; w_ < 4; w_++)                                                \
				((uint32_t *)(dst))[w_] = ((const uint32_t *)(src))[w_];              \
		} else if ((n) == 16 && (a_ & 1) == 0) {                                              \
			for (int w_ = 0; w_ < 8; w_++)                                                \
				((uint16_t *)(dst))[w_] = ((const uint16_t *)(src))[w_];              \
		} else {                                                                              \
			for (uint32_t b_ = 0; b_ < (n); b_++)                                         \
				((uint8_t *)(dst))[b_] = ((const uint8_t *)(src))[b_];                \
		}                                                                                     \
	} while (0)
#else
#define GI_COPY_CHUNK(dst, src, n) __builtin_memcpy((dst), (src), (n))
#endif
#endif

/*
 * GI_COPY_RUN moves a whole payload on the host, where one caller is every
 * lane: one memcpy of the run, not 16-byte pieces (4x the throughput for
 * 8 KiB payloads, bench/README.md).  Tests redefine it to count writes.
 */
#ifndef GI_COPY_RUN
#define GI_COPY_RUN(dst, src, n) __builtin_memcpy((dst), (src), (n))
#endif

#if GI_GPU_CODE
/*
 * 16-byte loads a lane has in flight before it stores: eight chunks when
 * aligned, four (of two loads each) when shifted.  On an H200 the copy ran
 * at one load latency per group of chunks a lane moves (1 KiB payloads, 4
 * lanes each: 16 chunks a lane, 8 groups of two, 4.0 µs a batch of 64;
 * 8 KiB: 21 µs), far below what the SM's L1 and L2 carry.  A lane's
 * remainder goes half a group at once, then chunk by chunk: a predicated
 * last group spilled 600 bytes more in k_persistent, and so did more in
 * flight (sm_90: 8 shifted groups, 188 -> 296 bytes of spill stores);
 * these spill about what two and four did (bench/gpu_model.md).
 */
#define GI_COPY_INFLIGHT 8u
#define GI_COPY_INFLIGHT_SHIFT 4u
/*
 * The 16 bytes at byte offset s (1..15) of the 32 at a (a 16-byte aligned
 * pair): words q = s / 4 .. q + 4, funnel-shifted by (s % 4) bytes.  s is
 * the same for every chunk of a payload and every lane, so the switch never
 * diverges.
 */
GI_HD static inline uint4 gi_pick16(uint4 lo, uint4 hi, uint32_t s)
{
	uint32_t w0, w1, w2, w3, w4;
	switch (s >> 2) {
	case 0: w0 = lo.x, w1 = lo.y, w2 = lo.z, w3 = lo.w, w4 = hi.x; break;
	case 1: w0 = lo.y, w1 = lo.z, w2 = lo.w, w3 = hi.x, w4 = hi.y; break;
	case 2: w0 = lo.z, w1 = lo.w, w2 = hi.x, w3 = hi.y, w4 = hi.z; break;
	default: w0 = lo.w, w1 = hi.x, w2 = hi.y, w3 = hi.z, w4 = hi.w; break;
	}
	const uint32_t sh = (s & 3u) * 8u;
	uint4 v;
	v.x = __funnelshift_r(w0, w1, sh);
	v.y = __funnelshift_r(w1, w2, sh);
	v.z = __funnelshift_r(w2, w3, sh);
	v.w = __funnelshift_r(w3, w4, sh);
	return v;
}
#endif

/*
 * Warp-cooperative payload copy: lane `lane` of `nlanes` moves the 16-byte
 * chunks lane, lane + nlanes, lane + 2 * nlanes, …  The CUDA wrapper passes
 * (threadIdx.x % 32, 32) so a warp issues coalesced 16-byte accesses; the
 * host executor passes (0, 1) and gets a plain chunked memcpy.
 */
GI_HD static inline void gi_copy_lanes(uint8_t *dst, const uint8_t *src, uint32_t len, uint32_t lane,
				       uint32_t nlanes)
{
#if !GI_GPU_CODE
	uint32_t off = lane * 16u;
	if (nlanes == 1) {
		if (len)
			GI_COPY_RUN(dst, src, len);
		return;
	}
#else
	/*
	 * Frame payload slots are 16-byte aligned when payload_bytes is a
	 * multiple of 16 (the usual case); the source is wherever the headers
	 * end (2-byte aligned behind a 42-byte UDP and a 4-byte custom header,
	 * or a 74-byte VITA 49 one).  Then every full chunk is one 16-byte
	 * store of two aligned 16-byte loads: the blocks holding its first and
	 * its last byte (both inside the packet, so never past its last block
	 * or page), shifted by the source's offset in its block (gi_pick16).
	 * Both 16-byte aligned (a split segment, a header of 16n bytes): one
	 * load.  Each lane has eight loads in flight before it stores
	 * (GI_COPY_INFLIGHT, _SHIFT), then its last chunks half as many at a
	 * time, then one by one.  Wide loads matter as much as the
	 * latency: a warp's load instruction costs the L1 a pass per 128-byte
	 * line it touches, and five 4-byte loads per chunk (this copy's
	 * earlier form) cost 2.5 times the passes of two 16-byte ones.  The
	 * tail, and a destination not 16-byte aligned, take GI_COPY_CHUNK's
	 * widest-common-alignment steps.
	 */
	const uint32_t step = nlanes * 16u;
	uint32_t off = lane * 16u;
	if ((((uintptr_t)dst) & 15) == 0 && (((uintptr_t)src) & 15) == 0) {
		for (; off + (GI_COPY_INFLIGHT - 1) * step + 16u <= len; off += GI_COPY_INFLIGHT * step) {
			uint4 v[GI_COPY_INFLIGHT];
			GI_UNROLL
			for (uint32_t k = 0; k < GI_COPY_INFLIGHT; k++)
				v[k] = *(const uint4 *)(src + off + k * step);
			GI_UNROLL
			for (uint32_t k = 0; k < GI_COPY_INFLIGHT; k++)
				*(uint4 *)(dst + off + k * step) = v[k];
		}
		for (; off + (GI_COPY_INFLIGHT / 2 - 1) * step + 16u <= len; off += GI_COPY_INFLIGHT / 2 * step) {
			uint4 v[GI_COPY_INFLIGHT / 2];
			GI_UNROLL
			for (uint32_t k = 0; k < GI_COPY_INFLIGHT / 2; k++)
				v[k] = *(const uint4 *)(src + off + k * step);
			GI_UNROLL
			for (uint32_t k = 0; k < GI_COPY_INFLIGHT / 2; k++)
				*(uint4 *)(dst + off + k * step) = v[k];
		}
	} else if ((((uintptr_t)dst) & 15) == 0) {
		const uint32_t s = (uint32_t)(((uintptr_t)src) & 15);
		const uint8_t *base = src - s; /* 16-byte aligned */
		for (; off + (GI_COPY_INFLIGHT_SHIFT - 1) * step + 16u <= len; off += GI_COPY_INFLIGHT_SHIFT * step) {
			uint4 lo[GI_COPY_INFLIGHT_SHIFT], hi[GI_COPY_INFLIGHT_SHIFT];
			GI_UNROLL
			for (uint32_t k = 0; k < GI_COPY_INFLIGHT_SHIFT; k++) {
				lo[k] = *(const uint4 *)(base + off + k * step);
				hi[k] = *(const uint4 *)(base + off + k * step + 16u);
			}
			GI_UNROLL
			for (uint32_t k = 0; k < GI_COPY_INFLIGHT_SHIFT; k++)
				*(uint4 *)(dst + off + k * step) = gi_pick16(lo[k], hi[k], s);
		}
		if (off + step + 16u <= len) { /* two of the last three together */
			const uint4 lo0 = *(const uint4 *)(base + off), hi0 = *(const uint4 *)(base + off + 16u);
			const uint4 lo1 = *(const uint4 *)(base + off + step), hi1 = *(const uint4 *)(base + off + step + 16u);
			*(uint4 *)(dst + off) = gi_pick16(lo0, hi0, s);
			*(uint4 *)(dst + off + step) = gi_pick16(lo1, hi1, s);
			off += 2u * step;
		}
		for (; off + 16u <= len; off += step)
			*(uint4 *)(dst + off) = gi_pick16(*(const uint4 *)(base + off), *(const uint4 *)(base + off + 16u), s);
	}
#endif
	for (; off < len; off += nlanes * 16u) {
		uint32_t n = len - off < 16u ? len - off : 16u;
		GI_COPY_CHUNK(dst + off, src + off, n);
	}
}

GI_EXTERN_C_END

#endif /* GI_FRAME_H */
