/*
 * ring.h — the CPU↔executor batch ring and its doorbell.
 *
 * One single-producer/single-consumer ring per rx queue, in memory that both
 * sides can see.  The rx lcore is the only writer of `head` (the doorbell)
 * and of the slots it owns; the executor (host thread or CUDA kernel) is the
 * only writer of `tail`.  Each side keeps its own index in a local variable
 * and only reads the other side's word to learn how far it may go.
 *
 *   producer: fill slot head % size, then GI_STORE_RELEASE(head + 1)
 *             (release = every slot byte is visible before the doorbell moves;
 *             the CUDA path adds rte_gpu_wmb() before the store)
 *   consumer: GI_LOAD_ACQUIRE(head); process; GI_STORE_RELEASE(tail + 1)
 *             (release = the executor's frame writes are done before the
 *             producer may recycle the slot's mbufs)
 *
 * The mbuf pointers are not here: they stay in a host-only shadow array of
 * the rx lcore, indexed the same way, because the executor never needs them.
 *
 * Slot layout: header | addr[max] | len[max], and on a queue with
 * header/data buffer split also | addr1[max] | len0[max]: addr is then the
 * header segment (host memory the executor can read), len0 its length, addr1
 * the payload segment (GPU memory), len the whole packet.  A queue whose
 * port timestamps (rx_timestamp) adds | nic_ns[max]: each packet's NIC
 * receive time as pmd_glue/rxdesc.h converted it, 0 for none.  Which
 * arrays a slot has is the ring's `split` word, GI_SLOT_* bits (the name
 * is older than the second bit): fixed at init, never read from a slot,
 * so a corrupt producer cannot make the executor read past a slot.  The
 * timestamps cost 8 bytes a packet of slot (12 without them, 24 with
 * split): the GPU stages a slot whole (batch.h), so a timestamping queue
 * loads up to two thirds more per batch, in the same round trip while the
 * slot fits GI_STAGE_INFLIGHT * 16 * workers bytes.
 *
 * Called from: rx lcores (producer side), the executor (consumer side), the
 * stats thread (occupancy, relaxed reads only).
 */
#ifndef GI_RING_H
#define GI_RING_H

#include "gi_hd.h"

GI_EXTERN_C_BEGIN

#define GI_RING_MAGIC 0x47495242u /* "GIRB" */
#define GI_RING_MAX_PKTS 2048u    /* upper bound for batch.max_packets */
#define GI_RING_MAX_SLOTS 65536u

/* What a ring's slots carry besides header | addr[] | len[] (gi_batch_ring.split). */
enum gi_slot_layout {
	GI_SLOT_SPLIT = 1u,  /* addr1[] | len0[]: header/data buffer split */
	GI_SLOT_NIC_TS = 2u, /* nic_ns[]: the NIC's receive times */
};

/* One published batch.  addr[] and len[] follow the header in the slot. */
struct gi_batch_slot {
	uint32_t n_pkts;
	uint16_t port;      /* daemon port index, not the DPDK port id */
	uint16_t queue;
	uint64_t batch_seq; /* per-ring batch number, equals the head it was published at */
	uint64_t t_publish_ns;
	uint64_t reserved;
};
GI_STATIC_ASSERT(sizeof(struct gi_batch_slot) == 32, "batch slot header is part of the ring ABI");

struct gi_batch_ring {
	uint64_t head; /* doorbell: written by the producer only */
	uint8_t pad0[GI_CACHE_LINE - 8];
	uint64_t tail; /* written by the consumer only */
	uint8_t pad1[GI_CACHE_LINE - 8];
	uint64_t stop; /* set by the daemon on shutdown; a persistent kernel exits */
	uint32_t magic;
	uint32_t size;      /* slots, a power of two */
	uint32_t max_pkts;  /* addr/len capacity per slot */
	uint32_t slot_stride;
	uint64_t ring_bytes;
	uint32_t split;     /* enum gi_slot_layout bits: the arrays a slot carries */
	uint8_t pad2[GI_CACHE_LINE - 36];
	/* slots follow, each slot_stride bytes, 64-byte aligned */
};
GI_STATIC_ASSERT(sizeof(struct gi_batch_ring) == 3 * GI_CACHE_LINE, "head, tail and control words each own a cache line");
GI_STATIC_ASSERT(offsetof(struct gi_batch_ring, tail) == GI_CACHE_LINE, "tail must not share head's line");

GI_HD static inline uint32_t gi_ring_slot_stride(uint32_t max_pkts, uint32_t split)
{
	uint64_t per_pkt = sizeof(uint64_t) + sizeof(uint32_t);
	uint64_t b = sizeof(struct gi_batch_slot) + (uint64_t)max_pkts * per_pkt;
	if (split & GI_SLOT_SPLIT)
		b += 8 + (uint64_t)max_pkts * per_pkt; /* 8: addr1[] is aligned after len[] */
	if (split & GI_SLOT_NIC_TS)
		b += 8 + (uint64_t)max_pkts * sizeof(uint64_t); /* 8: nic_ns[] is aligned after the last array */
	return (uint32_t)GI_ALIGN_UP(b, GI_CACHE_LINE);
}

GI_HD static inline uint64_t gi_ring_bytes(uint32_t size, uint32_t max_pkts, uint32_t split)
{
	return sizeof(struct gi_batch_ring) + (uint64_t)size * gi_ring_slot_stride(max_pkts, split);
}

/* Host-only: lay out a zeroed ring in `mem` (gi_ring_bytes() long). */
static inline int gi_ring_init(struct gi_batch_ring *r, uint32_t size, uint32_t max_pkts, uint32_t split)
{
	if (size == 0 || (size & (size - 1)) != 0 || size > GI_RING_MAX_SLOTS)
		return -22; /* -EINVAL without <errno.h> for nvcc's sake */
	if (max_pkts == 0 || max_pkts > GI_RING_MAX_PKTS)
		return -22;
	r->head = 0;
	r->tail = 0;
	r->stop = 0;
	r->magic = GI_RING_MAGIC;
	r->size = size;
	r->max_pkts = max_pkts;
	r->split = split & (GI_SLOT_SPLIT | GI_SLOT_NIC_TS);
	r->slot_stride = gi_ring_slot_stride(max_pkts, r->split);
	r->ring_bytes = gi_ring_bytes(size, max_pkts, r->split);
	return 0;
}

GI_HD static inline struct gi_batch_slot *gi_ring_slot(struct gi_batch_ring *r, uint64_t idx)
{
	return (struct gi_batch_slot *)((uint8_t *)r + sizeof(*r) +
					(uint64_t)(idx & (r->size - 1)) * r->slot_stride);
}

GI_HD static inline uint64_t *gi_slot_addr(struct gi_batch_slot *s)
{
	return (uint64_t *)(s + 1);
}

GI_HD static inline uint32_t *gi_slot_len(struct gi_batch_slot *s, uint32_t max_pkts)
{
	return (uint32_t *)(gi_slot_addr(s) + max_pkts);
}

/* Split rings only: payload-segment addresses, 8-byte aligned after len[]. */
GI_HD static inline uint64_t *gi_slot_addr1(struct gi_batch_slot *s, uint32_t max_pkts)
{
	uint8_t *end_len = (uint8_t *)(gi_slot_len(s, max_pkts) + max_pkts);
	return (uint64_t *)GI_ALIGN_UP((uintptr_t)end_len, 8);
}

/* Split rings only: header-segment lengths. */
GI_HD static inline uint32_t *gi_slot_len0(struct gi_batch_slot *s, uint32_t max_pkts)
{
	return (uint32_t *)(gi_slot_addr1(s, max_pkts) + max_pkts);
}

/* GI_SLOT_NIC_TS rings only: the packets' NIC times, 8-byte aligned after the last other array. */
GI_HD static inline uint64_t *gi_slot_nic_ns(struct gi_batch_slot *s, uint32_t max_pkts, uint32_t split)
{
	uint8_t *end = (split & GI_SLOT_SPLIT) ? (uint8_t *)(gi_slot_len0(s, max_pkts) + max_pkts)
					       : (uint8_t *)(gi_slot_len(s, max_pkts) + max_pkts);
	return (uint64_t *)GI_ALIGN_UP((uintptr_t)end, 8);
}

/* Producer: may slot `head` be filled?  (Reads the consumer's tail.) */
GI_HD static inline int gi_ring_has_room(const struct gi_batch_ring *r, uint64_t head)
{
	return head - GI_LOAD_ACQUIRE_U64(&r->tail) < r->size;
}

/* Producer: ring the doorbell for slot `head`. */
GI_HD static inline void gi_ring_publish(struct gi_batch_ring *r, uint64_t head)
{
	GI_STORE_RELEASE_U64(&r->head, head + 1);
}

/* Consumer: number of published, unconsumed slots from `tail`. */
GI_HD static inline uint64_t gi_ring_pending(const struct gi_batch_ring *r, uint64_t tail)
{
	return GI_LOAD_ACQUIRE_U64(&r->head) - tail;
}

/* Consumer: slot `tail` is done; the producer may recycle it. */
GI_HD static inline void gi_ring_complete(struct gi_batch_ring *r, uint64_t tail)
{
	GI_STORE_RELEASE_U64(&r->tail, tail + 1);
}

/* Any thread: slots published but not yet completed. */
GI_HD static inline uint64_t gi_ring_occupancy(const struct gi_batch_ring *r)
{
	uint64_t t = GI_LOAD_RELAXED_U64(&r->tail);
	uint64_t h = GI_LOAD_RELAXED_U64(&r->head);
	return h >= t ? h - t : 0;
}

GI_EXTERN_C_END

#endif /* GI_RING_H */
