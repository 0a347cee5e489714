/*
 * rxdesc.h — one received mbuf → one batch-ring descriptor.
 *
 * Kept apart from rx.c so that tests/unit/test_rxdesc.c can check exactly
 * what the rx lcore writes, with mbufs built by hand and no EAL.  The
 * functions take plain fields, not a gi_rxq.
 *
 *   whole packet (no split): addr = data + delta, len = data_len
 *   buffer split (ring->split): the NIC chained a header mbuf (host pool,
 *     header_bytes) and a payload mbuf (device pool):
 *       addr  = header segment data + delta0   (what the executor parses)
 *       len0  = header segment data_len
 *       addr1 = payload segment data + delta1  (GPU memory, never read here)
 *       len   = len0 + payload data_len        (== pkt_len for two segments)
 *     A packet short enough to fit segment 0 arrives as one mbuf:
 *       addr1 = 0, len0 = len = data_len       (the executor sees no seg1)
 *
 * The split length is the sum of the two segments rather than pkt_len so
 * that a chain longer than two (a misconfigured payload pool too small for
 * the MTU) reads as a truncated packet — a malformed drop — instead of
 * letting the executor read past the payload buffer.
 *
 * NIC receive times (ports[].rx_timestamp; ring.h GI_SLOT_NIC_TS): the
 * rx lcore reads the mbuf's timestamp dynfield, only where the PMD's flag
 * says it is set, and converts it here, at the one place that owns the
 * clock samples, so the executor only takes minima and maxima and nothing
 * crosses threads:
 *     ns = base_ns + (ticks - base_ticks) * mult / 2^32
 * A clock the driver can read (rte_eth_read_clock) is paired with
 * CLOCK_REALTIME by the rx lcore every GI_NIC_CLOCK_PERIOD_MS; mult is the
 * rate between the last two pairs.  A driver without one gives identity
 * (device ticks), or a fixed scale where its timestamps are wall-clock
 * time already (net_pcap: microseconds since the epoch).  0 stays "none".
 *
 * Called from rx lcores, per packet: no branches beyond the segment count
 * (and the timestamp flag, on timestamping queues only).
 */
#ifndef GI_RXDESC_H
#define GI_RXDESC_H

#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

static inline void gi_rxdesc_whole(const struct rte_mbuf *m, int64_t delta, uint64_t *addr, uint32_t *len)
{
	*addr = (uint64_t)(rte_pktmbuf_mtod(m, uintptr_t) + delta);
	*len = rte_pktmbuf_data_len(m);
}

static inline void gi_rxdesc_split(const struct rte_mbuf *m, int64_t delta0, int64_t delta1, uint64_t *addr,
				   uint32_t *len, uint64_t *addr1, uint32_t *len0)
{
	uint32_t l0 = rte_pktmbuf_data_len(m);

	*addr = (uint64_t)(rte_pktmbuf_mtod(m, uintptr_t) + delta0);
	*len0 = l0;
	if (m->nb_segs == 1) { /* nb_segs shares the first cache line; next does not */
		*addr1 = 0;
		*len = l0;
		return;
	}
	const struct rte_mbuf *seg1 = m->next;
	*addr1 = (uint64_t)(rte_pktmbuf_mtod(seg1, uintptr_t) + delta1);
	*len = l0 + rte_pktmbuf_data_len(seg1);
}

#define GI_NIC_CLOCK_PERIOD_MS 100u /* how often an rx lcore pairs the NIC's clock with CLOCK_REALTIME */
#define GI_NIC_CLOCK_FIRST_US 10000u /* the first two pairs, apart at start: a rate before any packet */

struct gi_nic_clock {
	uint64_t base_ticks; /* the last pair: NIC clock ... */
	uint64_t base_ns;    /* ... and CLOCK_REALTIME then */
	uint64_t mult;       /* nanoseconds per tick, 32.32 fixed point */
	uint32_t pairs;      /* pairs taken so far (0: a fixed conversion, set by hand) */
	uint32_t pad;
};

/* A fixed conversion: ns = ticks * ns_per_tick (1: device ticks as they are). */
static inline void gi_nic_clock_fixed(struct gi_nic_clock *c, uint64_t ns_per_tick)
{
	c->base_ticks = 0;
	c->base_ns = 0;
	c->mult = ns_per_tick << 32;
	c->pairs = 0;
}

/*
 * A new pair (ticks, ns) read together.  The rate is the last two pairs';
 * the first pair assumes a nanosecond clock (mlx5's real-time mode) until
 * the second.  A pair that does not move both clocks forward (a NIC clock
 * reset, a step of CLOCK_REALTIME backwards) keeps the old rate.
 */
static inline void gi_nic_clock_pair(struct gi_nic_clock *c, uint64_t ticks, uint64_t ns)
{
	if (c->pairs == 0)
		c->mult = 1ull << 32;
	else if (ticks > c->base_ticks && ns > c->base_ns)
		c->mult = (uint64_t)(((unsigned __int128)(ns - c->base_ns) << 32) / (ticks - c->base_ticks));
	c->base_ticks = ticks;
	c->base_ns = ns;
	c->pairs++;
}

static inline uint64_t gi_nic_clock_ns(const struct gi_nic_clock *c, uint64_t ticks)
{
	__int128 d = (__int128)(int64_t)(ticks - c->base_ticks) * (__int128)c->mult;
	__int128 ns = (__int128)c->base_ns + (d >> 32); /* floor, also for a time before the pair */
	return ns <= 0 ? 1u : ns > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)ns; /* 0 means none */
}

/* The mbuf's NIC time in the ring's clock, 0 when the PMD did not stamp it (flag clear). */
static inline uint64_t gi_rxdesc_nic_ns(const struct rte_mbuf *m, int off, uint64_t flag, const struct gi_nic_clock *c)
{
	if (!(m->ol_flags & flag))
		return 0;
	uint64_t t = *RTE_MBUF_DYNFIELD(m, off, const rte_mbuf_timestamp_t *);
	return t ? gi_nic_clock_ns(c, t) : 0;
}

#endif /* GI_RXDESC_H */
