/*
 * port.h — ethdev port setup for gpuingest's rx-only ports.
 *
 * A configured port is found among the devices EAL probed (PCI address or
 * vdev name), configured with its rx queues (each on its own extbuf
 * mempool) and started.  Errors name the port and the limit that was hit:
 *   port sensor0: 8 rx queues requested, device allows 4
 *
 * Main thread only; gi_port_stats() may be called from the stats thread.
 */
#ifndef GI_PORT_H
#define GI_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include "flow.h"
#include "rxdesc.h"

struct rte_mempool;

#define GI_PORT_MAX_QUEUES 128 /* the config's GI_MAX_QUEUES (daemon/lifecycle.c asserts it) */
#define GI_PORT_MAX_XSTATS 16   /* extended statistics read per port (ports[].xstats) */
#define GI_PORT_XSTAT_NAME 64   /* RTE_ETH_XSTATS_NAME_SIZE */

/* Header/data buffer split of one rx queue; header_pool NULL = no split. */
struct gi_port_split {
	struct rte_mempool *header_pool; /* segment 0: host or host_pinned */
	uint16_t header_bytes;           /* segment 0 length */
};

struct gi_port_conf {
	const char *name;       /* config name, for messages */
	const char *device;     /* as given in the config, devargs stripped */
	uint32_t mtu;
	bool promiscuous;
	uint16_t n_queues;
	uint16_t descriptors[GI_PORT_MAX_QUEUES];
	struct rte_mempool *pools[GI_PORT_MAX_QUEUES]; /* with split: the payload (segment 1) pool */
	struct gi_port_split split[GI_PORT_MAX_QUEUES];
	bool flow_isolation;                 /* see flow.h */
	bool flow_steering;
	const struct gi_flow_rule *rules;    /* one per stream of the port; may go away after setup */
	unsigned n_rules;
	char *const *xstats;                 /* extended statistic names to read; copied at setup */
	uint32_t n_xstats;
	bool rx_timestamp;                   /* NIC receive times (RTE_ETH_RX_OFFLOAD_TIMESTAMP) */
};

struct gi_port {
	char name[32];
	uint16_t port_id;
	bool configured;
	bool started;
	struct gi_flow_set flows;
	/* the configured xstats the driver has, ids resolved once after start */
	uint32_t n_xstats;
	uint64_t xstat_ids[GI_PORT_MAX_XSTATS];
	char xstat_names[GI_PORT_MAX_XSTATS][GI_PORT_XSTAT_NAME];
	/* rx_timestamp: what its queues' rx lcores need (gi_rxq_set_nic_ts) */
	uint32_t nic_ts;            /* enum gi_nic_ts (kernels/frame.h); GI_NIC_TS_NONE: no timestamps */
	int ts_off;                 /* the mbuf timestamp dynfield and its flag */
	uint64_t ts_flag;
	struct gi_nic_clock clock;  /* the first conversion (rxdesc.h) */
	bool clock_read;            /* rte_eth_read_clock works: rx lcores pair it with CLOCK_REALTIME */
};

/*
 * Find the DPDK port for `device` (the part before the first ',' of a vdev
 * string, or a PCI address).  0 or -ENODEV with a log line listing the
 * ports EAL did find.
 */
int gi_port_find(const char *name, const char *device, uint16_t *port_id);

/*
 * Check split capabilities, enter flow isolation, configure, set up the rx
 * queues (split ones with two mempools), start, install the steering rules
 * — in that order (flow.h says why).  Any failure undoes what was done and
 * returns -errno after one log line naming the port (and queue or stream).
 * A split queue on a driver without RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT fails
 * with -ENOTSUP before the device is touched.
 */
int gi_port_setup(struct gi_port *p, uint16_t port_id, const struct gi_port_conf *conf);
/*
 * (Inside gi_port_setup.)  rx_timestamp on a driver that offers neither
 * RTE_ETH_RX_OFFLOAD_TIMESTAMP nor stamps by itself (net_pcap does) fails
 * with -ENOTSUP and one line naming the port and the driver, before the
 * device is touched.
 */
/* Flow rules, then stop, then close; safe on a half set-up port. */
void gi_port_teardown(struct gi_port *p);

struct gi_port_stats {
	uint64_t rx_packets, rx_bytes, rx_missed, rx_nombuf, rx_errors;
	bool link_up;
};
int gi_port_stats(const struct gi_port *p, struct gi_port_stats *out);

/*
 * The values of p->xstat_names[] into values[p->n_xstats] (rte_eth_xstats_get_by_id
 * with the ids resolved at setup).  Stats thread.  0, or -errno with values zeroed.
 */
int gi_port_xstats(const struct gi_port *p, uint64_t *values);

#endif /* GI_PORT_H */
