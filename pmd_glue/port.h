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

struct rte_mempool;

#define GI_PORT_MAX_QUEUES 16

struct gi_port_conf {
	const char *name;       /* config name, for messages */
	const char *device;     /* as given in the config, devargs stripped */
	uint32_t mtu;
	bool promiscuous;
	uint16_t n_queues;
	uint16_t descriptors[GI_PORT_MAX_QUEUES];
	struct rte_mempool *pools[GI_PORT_MAX_QUEUES];
};

struct gi_port {
	char name[32];
	uint16_t port_id;
	bool configured;
	bool started;
};

/*
 * Find the DPDK port for `device` (the part before the first ',' of a vdev
 * string, or a PCI address).  0 or -ENODEV with a log line listing the
 * ports EAL did find.
 */
int gi_port_find(const char *name, const char *device, uint16_t *port_id);

int gi_port_setup(struct gi_port *p, uint16_t port_id, const struct gi_port_conf *conf);
void gi_port_teardown(struct gi_port *p);

struct gi_port_stats {
	uint64_t rx_packets, rx_bytes, rx_missed, rx_nombuf, rx_errors;
	bool link_up;
};
int gi_port_stats(const struct gi_port *p, struct gi_port_stats *out);

#endif /* GI_PORT_H */
