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
 * Called from rx lcores, per packet: no branches beyond the segment count.
 */
#ifndef GI_RXDESC_H
#define GI_RXDESC_H

#include <stdint.h>

#include <rte_mbuf.h>

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

#endif /* GI_RXDESC_H */
