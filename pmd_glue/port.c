/*
 * port.c — port discovery, configuration and start (see port.h).
 *
 * gpuingest only receives.  A single tx queue is still set up because
 * several PMDs (memif among them) size their shared rings from the queue
 * counts of both directions; it is never used.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_errno.h>

#include "log.h"
#include "port.h"

int gi_port_find(const char *name, const char *device, uint16_t *port_id)
{
	struct rte_dev_iterator it;
	char key[256];
	uint16_t id;
	const char *comma = strchr(device, ',');
	size_t n = comma ? (size_t)(comma - device) : strlen(device);

	snprintf(key, sizeof(key), "%.*s", (int)n, device);
	RTE_ETH_FOREACH_MATCHING_DEV(id, key, &it) {
		*port_id = id;
		rte_eth_iterator_cleanup(&it);
		return 0;
	}
	/* vdev names are the ethdev names; PCI addresses may be written short */
	if (rte_eth_dev_get_port_by_name(key, &id) == 0) {
		*port_id = id;
		return 0;
	}

	char found[256] = "";
	size_t off = 0;
	RTE_ETH_FOREACH_DEV(id) {
		char nm[RTE_ETH_NAME_MAX_LEN];
		if (rte_eth_dev_get_name_by_port(id, nm) == 0 && off < sizeof(found))
			off += (size_t)snprintf(found + off, sizeof(found) - off, "%s%s", off ? ", " : "", nm);
	}
	gi_log(GI_LOG_ERR,
	       "port %s: device %s was not found by DPDK (ports found: %s); check the PCI address "
	       "(dpdk-devbind.py --status) or the vdev string",
	       name, key, off ? found : "none");
	return -ENODEV;
}

int gi_port_setup(struct gi_port *p, uint16_t port_id, const struct gi_port_conf *c)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	int rc;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", c->name);
	p->port_id = port_id;

	rc = rte_eth_dev_info_get(port_id, &info);
	if (rc != 0) {
		gi_log(GI_LOG_ERR, "port %s: cannot read device info: %s", c->name, rte_strerror(-rc));
		return rc;
	}
	if (c->n_queues > info.max_rx_queues) {
		gi_log(GI_LOG_ERR, "port %s: %u rx queues requested, device %s allows %u", c->name, c->n_queues,
		       info.driver_name, info.max_rx_queues);
		return -EINVAL;
	}
	if (c->mtu > info.max_mtu || c->mtu < info.min_mtu) {
		gi_log(GI_LOG_ERR, "port %s: mtu %u outside what device %s allows (%u..%u)", c->name, c->mtu,
		       info.driver_name, info.min_mtu, info.max_mtu);
		return -EINVAL;
	}

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = c->mtu;
	uint16_t n_tx = info.max_tx_queues > 0 ? 1 : 0;
	rc = rte_eth_dev_configure(port_id, c->n_queues, n_tx, &conf);
	if (rc != 0) {
		gi_log(GI_LOG_ERR, "port %s: configure with %u rx queues failed: %s", c->name, c->n_queues,
		       rte_strerror(-rc));
		return rc;
	}
	p->configured = true;

	int socket = rte_eth_dev_socket_id(port_id);
	for (uint16_t q = 0; q < c->n_queues; q++) {
		uint16_t nb_rx = c->descriptors[q], nb_tx = 64;
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rx, &nb_tx);
		if (rc == 0 && nb_rx != c->descriptors[q])
			gi_log(GI_LOG_NOTICE, "port %s queue %u: %u rx descriptors adjusted to %u by the driver", c->name,
			       q, c->descriptors[q], nb_rx);
		rc = rte_eth_rx_queue_setup(port_id, q, nb_rx, socket < 0 ? 0 : (unsigned)socket, NULL, c->pools[q]);
		if (rc != 0) {
			gi_log(GI_LOG_ERR, "port %s queue %u: rx queue setup failed: %s (nb_desc %u, max %u)", c->name, q,
			       rte_strerror(-rc), nb_rx, info.rx_desc_lim.nb_max);
			goto fail;
		}
	}
	if (n_tx) {
		uint16_t nb_rx = 64, nb_tx = 64;
		rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rx, &nb_tx);
		rc = rte_eth_tx_queue_setup(port_id, 0, nb_tx, socket < 0 ? 0 : (unsigned)socket, NULL);
		if (rc != 0) {
			gi_log(GI_LOG_ERR, "port %s: tx queue setup failed: %s", c->name, rte_strerror(-rc));
			goto fail;
		}
	}
	rc = rte_eth_dev_start(port_id);
	if (rc != 0) {
		gi_log(GI_LOG_ERR, "port %s: start failed: %s%s", c->name, rte_strerror(-rc),
		       strcmp(info.driver_name, "net_memif") == 0
			       ? " (a memif client needs its server listening on the socket first)"
			       : "");
		goto fail;
	}
	p->started = true;
	if (c->promiscuous) {
		rc = rte_eth_promiscuous_enable(port_id);
		if (rc != 0 && rc != -ENOTSUP)
			gi_log(GI_LOG_WARNING, "port %s: cannot enable promiscuous mode: %s", c->name, rte_strerror(-rc));
	}
	gi_log(GI_LOG_INFO, "port %s: %s (%s) started, %u rx queue%s, mtu %u", c->name, c->device, info.driver_name,
	       c->n_queues, c->n_queues == 1 ? "" : "s", c->mtu);
	return 0;

fail:
	gi_port_teardown(p);
	return rc;
}

void gi_port_teardown(struct gi_port *p)
{
	if (p->started)
		rte_eth_dev_stop(p->port_id);
	if (p->configured)
		rte_eth_dev_close(p->port_id);
	p->started = false;
	p->configured = false;
}

int gi_port_stats(const struct gi_port *p, struct gi_port_stats *out)
{
	struct rte_eth_stats st;
	struct rte_eth_link link;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!p->configured)
		return -ENODEV;
	rc = rte_eth_stats_get(p->port_id, &st);
	if (rc != 0)
		return rc;
	out->rx_packets = st.ipackets;
	out->rx_bytes = st.ibytes;
	out->rx_missed = st.imissed;
	out->rx_nombuf = st.rx_nombuf;
	out->rx_errors = st.ierrors;
	if (rte_eth_link_get_nowait(p->port_id, &link) == 0)
		out->link_up = link.link_status == RTE_ETH_LINK_UP;
	return 0;
}
