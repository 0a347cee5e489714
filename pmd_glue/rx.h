/*
 * rx.h — the rx lcore: burst → batch builder → batch ring → reap.
 *
 * Each rx queue has one gi_rxq, owned by exactly one lcore.  The lcore loop
 *   1. reaps slots the executor has completed (tail moved) and frees their
 *      mbufs in bulk from the host-only shadow array,
 *   2. receives a burst and appends descriptors {addr, len} to the open
 *      batch in the ring slot at `head`,
 *   3. publishes the batch (doorbell) when it holds max_packets or its
 *      oldest packet is timeout_us old,
 *   4. when no slot is free, frees the burst and counts ring_full — the NIC
 *      is never blocked by a slow executor.
 * With executor.mode inline the lcore is also the executor of its rings:
 * after each pass over its queues it runs the phases on what it published
 * (gi_exec_worker_poll), while the packets are still in its cache.
 * No locks, syscalls, allocation or logging per packet; the only sleep is
 * the adaptive idle back-off when every queue of the lcore is empty.
 *
 * Counters have one writer (the lcore) and are read by the stats thread.
 */
#ifndef GI_RX_H
#define GI_RX_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/executor.h"
#include "kernels/idle.h"
#include "kernels/ring.h"
#include "rxdesc.h"

struct rte_mbuf;

#define GI_RX_BURST 32
#define GI_RX_MAX_QUEUES_PER_LCORE 16

struct gi_rxq_stats {
	uint64_t rx_packets;
	uint64_t batches;
	uint64_t ring_full; /* packets dropped because no ring slot was free */
} __attribute__((aligned(64)));

struct gi_rxq {
	uint16_t port_id;        /* DPDK port id */
	uint16_t port_index;     /* daemon port index, what the executor sees */
	uint16_t queue;
	uint32_t max_pkts;       /* slot capacity (ring->max_pkts): the shadow array's stride, fixed */
	/*
	 * batch.max_packets (<= max_pkts) and batch.timeout_us in TSC cycles:
	 * live, written by the main thread (gi_rxq_set_batch) with relaxed
	 * stores, read by the lcore once per burst.  A batch already open keeps
	 * the packets it has; the new values decide when it is published.
	 */
	uint32_t batch_max;
	uint64_t timeout_tsc;
	int64_t exec_delta;      /* CPU address → executor address (the header pool's with split) */
	int64_t exec_delta1;     /* split rings: the payload pool's; set after gi_rxq_init() */
	struct gi_batch_ring *ring;
	struct rte_mbuf **shadow;/* ring->size * max_pkts mbuf pointers, host only */
	/*
	 * Called once per batch just before the doorbell, NULL when not needed:
	 * the GPU path sets it to the memory provider's flush
	 * (rte_gpu_wmb / cuFlushGPUDirectRDMAWrites) so the NIC's writes into
	 * GPU memory are visible to the kernel that the doorbell wakes.  Set it
	 * after gi_rxq_init().
	 */
	void (*pre_doorbell)(void *arg);
	void *pre_doorbell_arg;
	/*
	 * NIC receive times (ring->split & GI_SLOT_NIC_TS): the mbuf dynfield and
	 * flag, the conversion (rxdesc.h), and whether the lcore refreshes it
	 * from rte_eth_read_clock.  Set with gi_rxq_set_nic_ts() before launch;
	 * the lcore owns `clock` from then on.
	 */
	int ts_off;
	uint64_t ts_flag;
	struct gi_nic_clock clock;
	bool clock_read;         /* pair the NIC's clock with CLOCK_REALTIME every GI_NIC_CLOCK_PERIOD_MS */
	uint64_t clock_next_tsc;
	uint64_t clock_fails;    /* rte_eth_read_clock() failures after start (the last conversion stays) */

	/* producer state, lcore only */
	uint64_t head;           /* slot being filled */
	uint64_t reaped;         /* slots whose mbufs were freed */
	uint32_t open_n;         /* packets in the open batch */
	uint64_t open_tsc;       /* arrival of its first packet */

	struct gi_rxq_stats st;
};

struct gi_rx_lcore {
	uint32_t lcore;
	uint32_t n_queues;
	struct gi_rxq *queues[GI_RX_MAX_QUEUES_PER_LCORE];
	enum gi_idle_policy idle;
	const int *quit;           /* set by the main thread (release), read with an acquire load */
	uint64_t drain_timeout_ns; /* at quit: how long to wait for the executor */
	struct gi_exec_worker *exec; /* executor.mode inline: the worker this lcore runs, else NULL */
	uint64_t idle_polls;       /* loop iterations where every queue was empty */
	uint64_t busy_polls;
	uint64_t loops;            /* progress word for the watchdog */
} __attribute__((aligned(64)));

/*
 * Prepare a queue: allocates the shadow array.  The ring must be
 * initialised.  0 or -ENOMEM.  Main thread.
 */
int gi_rxq_init(struct gi_rxq *q, uint16_t port_id, uint16_t port_index, uint16_t queue,
		struct gi_batch_ring *ring, uint32_t timeout_us, int64_t exec_delta);
void gi_rxq_fini(struct gi_rxq *q);

/*
 * The queue's ring carries NIC times (GI_SLOT_NIC_TS): the timestamp
 * dynfield `off` and flag (rte_mbuf_dyn_rx_timestamp_register), the first
 * conversion, and whether the lcore pairs the NIC's clock with
 * CLOCK_REALTIME (at start and every GI_NIC_CLOCK_PERIOD_MS).  Main thread,
 * before launch.
 */
void gi_rxq_set_nic_ts(struct gi_rxq *q, int off, uint64_t flag, const struct gi_nic_clock *clock, bool read_clock);

/*
 * Live reload: change the queue's batch limits while its lcore runs.
 * 0, or -ERANGE when max_packets is 0 or above the ring's slot capacity
 * (fixed when the ring was made: a larger batch needs a restart).  Main thread.
 */
int gi_rxq_set_batch(struct gi_rxq *q, uint32_t max_packets, uint32_t timeout_us);

/*
 * Free the mbufs of every slot the executor has completed.  The lcore does
 * this as it goes; the main thread calls it once the lcore has returned and
 * the executor has stopped, for slots completed after the lcore gave up
 * waiting at shutdown.
 */
void gi_rxq_reap_all(struct gi_rxq *q);

/* rte_eal_remote_launch() entry; arg is a struct gi_rx_lcore. */
int gi_rx_lcore_main(void *arg);

#endif /* GI_RX_H */
