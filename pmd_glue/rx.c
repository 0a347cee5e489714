/*
 * rx.c — the rx lcore loop (see rx.h for the contract).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_atomic.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "log.h"
#include "rx.h"
#include "rxdesc.h"
#include "tsan.h"

int gi_rxq_init(struct gi_rxq *q, uint16_t port_id, uint16_t port_index, uint16_t queue,
		struct gi_batch_ring *ring, uint32_t timeout_us, int64_t exec_delta)
{
	memset(q, 0, sizeof(*q));
	q->port_id = port_id;
	q->port_index = port_index;
	q->queue = queue;
	q->ring = ring;
	q->max_pkts = ring->max_pkts;
	q->batch_max = ring->max_pkts;
	q->timeout_tsc = (uint64_t)timeout_us * rte_get_tsc_hz() / 1000000u;
	q->exec_delta = exec_delta;
	q->shadow = calloc((size_t)ring->size * ring->max_pkts, sizeof(*q->shadow));
	return q->shadow ? 0 : -ENOMEM;
}

void gi_rxq_fini(struct gi_rxq *q)
{
	free(q->shadow);
	q->shadow = NULL;
}

void gi_rxq_set_nic_ts(struct gi_rxq *q, int off, uint64_t flag, const struct gi_nic_clock *clock, bool read_clock)
{
	q->ts_off = off;
	q->ts_flag = flag;
	q->clock = *clock;
	q->clock_read = read_clock;
	q->clock_next_tsc = 0; /* the lcore pairs at start */
}

/* The NIC's clock and CLOCK_REALTIME, read together: the NIC's read twice around the other, its middle kept. */
static void rxq_clock_pair(struct gi_rxq *q)
{
	uint64_t a, b;
	struct timespec ts;

	if (rte_eth_read_clock(q->port_id, &a) != 0 || clock_gettime(CLOCK_REALTIME, &ts) != 0 ||
	    rte_eth_read_clock(q->port_id, &b) != 0 || b < a) {
		GI_COUNTER_ADD(&q->clock_fails, 1); /* the last conversion stays */
		return;
	}
	gi_nic_clock_pair(&q->clock, a + (b - a) / 2, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

int gi_rxq_set_batch(struct gi_rxq *q, uint32_t max_packets, uint32_t timeout_us)
{
	if (max_packets == 0 || max_packets > q->max_pkts)
		return -ERANGE;
	__atomic_store_n(&q->batch_max, max_packets, __ATOMIC_RELAXED);
	__atomic_store_n(&q->timeout_tsc, (uint64_t)timeout_us * rte_get_tsc_hz() / 1000000u, __ATOMIC_RELAXED);
	return 0;
}

static inline struct rte_mbuf **shadow_of(struct gi_rxq *q, uint64_t idx)
{
	return q->shadow + (size_t)(idx & (q->ring->size - 1)) * q->max_pkts;
}

/* Free the mbufs of every slot the executor has completed. */
static inline void rxq_reap(struct gi_rxq *q)
{
	uint64_t tail = GI_LOAD_ACQUIRE_U64(&q->ring->tail);

	if (!q->shadow)
		return;
	while (q->reaped < tail) {
		struct gi_batch_slot *s = gi_ring_slot(q->ring, q->reaped);
		rte_pktmbuf_free_bulk(shadow_of(q, q->reaped), s->n_pkts);
		q->reaped++;
	}
}

static inline void rxq_publish(struct gi_rxq *q)
{
	struct gi_batch_slot *s = gi_ring_slot(q->ring, q->head);

	s->n_pkts = q->open_n;
	s->port = q->port_index;
	s->queue = q->queue;
	s->batch_seq = q->head;
	s->t_publish_ns = gi_now_ns();
	if (q->pre_doorbell)
		q->pre_doorbell(q->pre_doorbell_arg);
	/*
	 * The store-release in gi_ring_publish orders the slot for other CPUs
	 * (inner shareable on Arm); a GPU reading the ring across PCIe or
	 * NVLink-C2C (IGX Orin, Grace) is an outer-shareable observer and needs
	 * dmb oshst.  rte_io_wmb() is that on arm64 and a compiler barrier on
	 * x86, where stores are already ordered for every observer.
	 */
	rte_io_wmb();
	gi_ring_publish(q->ring, q->head);
	q->head++;
	q->open_n = 0;
	GI_COUNTER_ADD(&q->st.batches, 1);
}

/* Append a burst to open batches; returns nothing, counts everything. */
static inline void rxq_append(struct gi_rxq *q, struct rte_mbuf **pkts, uint16_t n, uint64_t now_tsc)
{
	uint16_t i = 0;
	uint32_t limit = __atomic_load_n(&q->batch_max, __ATOMIC_RELAXED); /* live reload */

	if (q->open_n >= limit && q->open_n) /* the limit shrank under an open batch */
		rxq_publish(q);

	while (i < n) {
		if (q->open_n == 0) {
			/* the slot is free once its previous use is reaped (reaped <= tail,
			 * so this also proves the executor is done with it) */
			if (q->head - q->reaped >= q->ring->size)
				rxq_reap(q);
			if (q->head - q->reaped >= q->ring->size) {
				rte_pktmbuf_free_bulk(pkts + i, n - i);
				GI_COUNTER_ADD(&q->st.ring_full, n - i);
				return;
			}
			q->open_tsc = now_tsc;
		}
		struct gi_batch_slot *s = gi_ring_slot(q->ring, q->head);
		uint64_t *addr = gi_slot_addr(s);
		uint32_t *len = gi_slot_len(s, q->max_pkts);
		struct rte_mbuf **sh = shadow_of(q, q->head);
		uint32_t take = GI_MIN((uint32_t)(n - i), limit - q->open_n);

		if (q->ring->split & GI_SLOT_NIC_TS) { /* one dynfield read per packet, converted (rxdesc.h) */
			uint64_t *nic = gi_slot_nic_ns(s, q->max_pkts, q->ring->split);
			for (uint32_t k = 0, j = q->open_n; k < take; k++, j++)
				nic[j] = gi_rxdesc_nic_ns(pkts[i + k], q->ts_off, q->ts_flag, &q->clock);
		}
		if (q->ring->split & GI_SLOT_SPLIT) { /* once per burst, not per packet */
			uint64_t *addr1 = gi_slot_addr1(s, q->max_pkts);
			uint32_t *len0 = gi_slot_len0(s, q->max_pkts);
			for (uint32_t k = 0, j = q->open_n; k < take; k++, j++) {
				gi_rxdesc_split(pkts[i + k], q->exec_delta, q->exec_delta1, &addr[j], &len[j], &addr1[j],
						&len0[j]);
				sh[j] = pkts[i + k];
			}
		} else {
			for (uint32_t k = 0, j = q->open_n; k < take; k++, j++) {
				gi_rxdesc_whole(pkts[i + k], q->exec_delta, &addr[j], &len[j]);
				sh[j] = pkts[i + k];
			}
		}
		q->open_n += take;
		i = (uint16_t)(i + take);
		if (q->open_n >= limit)
			rxq_publish(q);
	}
}

/* One pass over a queue; returns packets received. */
static inline uint16_t rxq_poll(struct gi_rxq *q)
{
	struct rte_mbuf *pkts[GI_RX_BURST];
	uint16_t n;
	uint64_t now;

	rxq_reap(q);
	n = rte_eth_rx_burst(q->port_id, q->queue, pkts, GI_RX_BURST);
	if (n == 0 && q->open_n == 0 && !q->clock_read)
		return 0;
	now = rte_rdtsc();
	if (q->clock_read && now >= q->clock_next_tsc) { /* every GI_NIC_CLOCK_PERIOD_MS, before this burst's times */
		rxq_clock_pair(q);
		q->clock_next_tsc = now + rte_get_tsc_hz() / 1000u * GI_NIC_CLOCK_PERIOD_MS;
	}
	if (n == 0 && q->open_n == 0)
		return 0;
	if (n) {
		GI_COUNTER_ADD(&q->st.rx_packets, n);
		rxq_append(q, pkts, n, now);
	}
	if (q->open_n && now - q->open_tsc >= __atomic_load_n(&q->timeout_tsc, __ATOMIC_RELAXED))
		rxq_publish(q);
	return n;
}

void gi_rxq_reap_all(struct gi_rxq *q)
{
	rxq_reap(q);
}

/* At quit: publish what is open, wait (bounded) for the executor — or be it, inline — and free all. */
static void rxq_drain(struct gi_rxq *q, struct gi_exec_worker *exec, uint64_t deadline)
{
	if (q->open_n)
		rxq_publish(q);
	while (GI_LOAD_ACQUIRE_U64(&q->ring->tail) < q->head && gi_now_ns() < deadline) {
		if (exec)
			(void)gi_exec_worker_poll(exec, 1);
		else
			rte_pause();
	}
	rxq_reap(q);
	if (q->reaped < q->head) {
		gi_log(GI_LOG_WARNING,
		       "port %u queue %u: executor did not complete %llu batch(es) within the drain timeout; "
		       "their buffers are left to the pool teardown",
		       q->port_id, q->queue, (unsigned long long)(q->head - q->reaped));
	}
}

int gi_rx_lcore_main(void *arg)
{
	struct gi_rx_lcore *lc = arg;
	struct gi_idle idle;
	uint64_t tsc_hz = rte_get_tsc_hz();

	GI_TSAN_ACQUIRE(lc); /* what the main thread set up before rte_eal_remote_launch() */
	gi_idle_init(&idle, lc->idle);
	/* NIC clocks: two pairs GI_NIC_CLOCK_FIRST_US apart, so the first packets have a rate too */
	bool pairs = false;
	for (uint32_t i = 0; i < lc->n_queues; i++)
		if (lc->queues[i]->clock_read) {
			rxq_clock_pair(lc->queues[i]);
			pairs = true;
		}
	if (pairs) {
		rte_delay_us_block(GI_NIC_CLOCK_FIRST_US);
		uint64_t next = rte_rdtsc() + tsc_hz / 1000u * GI_NIC_CLOCK_PERIOD_MS;
		for (uint32_t i = 0; i < lc->n_queues; i++)
			if (lc->queues[i]->clock_read) {
				rxq_clock_pair(lc->queues[i]);
				lc->queues[i]->clock_next_tsc = next;
			}
	}

	while (!__atomic_load_n(lc->quit, __ATOMIC_ACQUIRE)) {
		uint32_t got = 0, open = 0;
		for (uint32_t i = 0; i < lc->n_queues; i++) {
			got += rxq_poll(lc->queues[i]);
			open |= lc->queues[i]->open_n;
		}
		if (lc->exec) /* inline (or auto's choice): run the phases on what was just published */
			got += gi_exec_worker_poll(lc->exec, got == 0);
		GI_COUNTER_ADD(&lc->loops, 1);
		if (got) {
			GI_COUNTER_ADD(&lc->busy_polls, 1);
			gi_idle_work(&idle);
		} else {
			GI_COUNTER_ADD(&lc->idle_polls, 1);
			/* an open batch must still meet its deadline: sleep at most half of
			 * the shortest (read here, on the idle path: reload may change it) */
			uint64_t min_tsc = UINT64_MAX;
			for (uint32_t i = 0; open && i < lc->n_queues; i++)
				min_tsc = GI_MIN(min_tsc, __atomic_load_n(&lc->queues[i]->timeout_tsc, __ATOMIC_RELAXED));
			gi_idle_empty(&idle, open ? min_tsc * 1000000000ull / tsc_hz / 2 : UINT64_MAX);
		}
	}
	/* one deadline for all of this lcore's queues: shutdown stays bounded by drain_timeout_ns */
	uint64_t deadline = gi_now_ns() + lc->drain_timeout_ns;
	for (uint32_t i = 0; i < lc->n_queues; i++)
		rxq_drain(lc->queues[i], lc->exec, deadline);
	GI_TSAN_RELEASE(lc); /* to the main thread's rte_eal_mp_wait_lcore() */
	return 0;
}
