/*
 * port.c — port discovery, configuration and start (see port.h).
 *
 * gpuingest only receives.  A single tx queue is still set up because
 * several PMDs (memif among them) size their shared rings from the queue
 * counts of both directions; it is never used.
 *
 * Header/data split: a split queue is set up with two rte_eth_rxseg_split
 * segments instead of one mempool — segment 0 (header_bytes, host pool)
 * and segment 1 (length 0 = the payload pool's whole data room).  ethdev
 * requires RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT on the queue, and the chain of
 * two mbufs is a scattered packet, so RTE_ETH_RX_OFFLOAD_SCATTER too.  An
 * offload the driver offers only port-wide is enabled at configure time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "kernels/frame.h"
#include "log.h"
#include "port.h"

static void xstats_resolve(struct gi_port *p, const struct gi_port_conf *c);

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

#define GI_SPLIT_OFFLOADS (RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT | RTE_ETH_RX_OFFLOAD_SCATTER)

/* Can the driver split queue q as configured?  0 or -ENOTSUP/-EINVAL, logged. */
static int split_check(const struct gi_port_conf *c, uint16_t q, const struct rte_eth_dev_info *info)
{
	const struct gi_port_split *sp = &c->split[q];

	if (!(info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT)) {
		gi_log(GI_LOG_ERR,
		       "port %s queue %u: header/data split requested but driver %s lacks "
		       "RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT (buffer split); remove rx_queues[%u].split or use an mlx5 port",
		       c->name, q, info->driver_name, q);
		return -ENOTSUP;
	}
	if (!(info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)) {
		gi_log(GI_LOG_ERR,
		       "port %s queue %u: header/data split requested but driver %s lacks RTE_ETH_RX_OFFLOAD_SCATTER, "
		       "which a two-segment packet needs; remove rx_queues[%u].split",
		       c->name, q, info->driver_name, q);
		return -ENOTSUP;
	}
	if (info->rx_seg_capa.max_nseg < 2) {
		gi_log(GI_LOG_ERR,
		       "port %s queue %u: header/data split needs 2 segments, driver %s splits into at most %u; "
		       "remove rx_queues[%u].split",
		       c->name, q, info->driver_name, info->rx_seg_capa.max_nseg, q);
		return -ENOTSUP;
	}
	if (!info->rx_seg_capa.multi_pools && sp->header_pool != c->pools[q]) {
		gi_log(GI_LOG_ERR,
		       "port %s queue %u: driver %s cannot take the two segments from different mempools "
		       "(rx_seg_capa.multi_pools); remove rx_queues[%u].split",
		       c->name, q, info->driver_name, q);
		return -ENOTSUP;
	}
	if (rte_pktmbuf_data_room_size(sp->header_pool) < RTE_PKTMBUF_HEADROOM + sp->header_bytes) {
		gi_log(GI_LOG_ERR,
		       "port %s queue %u: header pool %s has %u-byte buffers, split.header_bytes %u needs %u "
		       "(%u headroom + header_bytes)",
		       c->name, q, sp->header_pool->name, rte_pktmbuf_data_room_size(sp->header_pool), sp->header_bytes,
		       RTE_PKTMBUF_HEADROOM + sp->header_bytes, RTE_PKTMBUF_HEADROOM);
		return -EINVAL;
	}
	return 0;
}

static int rxq_setup(const struct gi_port_conf *c, uint16_t port_id, uint16_t q, uint16_t nb_rx, unsigned socket,
		     const struct rte_eth_dev_info *info)
{
	const struct gi_port_split *sp = &c->split[q];
	union rte_eth_rxseg seg[2];
	struct rte_eth_rxconf rxconf;

	if (!sp->header_pool)
		return rte_eth_rx_queue_setup(port_id, q, nb_rx, socket, NULL, c->pools[q]);
	memset(seg, 0, sizeof(seg));
	seg[0].split.mp = sp->header_pool;
	seg[0].split.length = sp->header_bytes;
	seg[1].split.mp = c->pools[q];
	seg[1].split.length = 0; /* the rest: the payload pool's whole data room */
	rxconf = info->default_rxconf;
	/* port-wide ones too: ethdev masks those out of the per-queue check, and
	 * some releases look for BUFFER_SPLIT in the queue's own offloads only */
	rxconf.offloads |= GI_SPLIT_OFFLOADS;
	rxconf.rx_seg = seg;
	rxconf.rx_nseg = 2;
	return rte_eth_rx_queue_setup(port_id, q, nb_rx, socket, &rxconf, NULL);
}

/*
 * Drivers that stamp every packet's dynfield without offering the offload
 * (ethdev refuses an offload a driver does not offer), and the unit of
 * what they write.  DPDK 22.11's net_pcap registers the dynfield at probe
 * and writes each packet's capture time in microseconds since the epoch
 * (libpcap reads a nanosecond capture at microsecond precision), so its
 * times are CLOCK_REALTIME already.
 */
static const struct {
	const char *driver;
	uint64_t ns_per_tick;
} self_stamping[] = {
	{ "net_pcap", 1000 },
};

static int self_stamping_scale(const char *driver)
{
	for (size_t i = 0; i < sizeof(self_stamping) / sizeof(self_stamping[0]); i++)
		if (strcmp(driver, self_stamping[i].driver) == 0)
			return (int)i;
	return -1;
}

/*
 * rx_timestamp: the offload where the driver offers it, the dynfield, and
 * the clock its times are in (kernels/frame.h enum gi_nic_ts).  Before
 * configure; *offloads gains the offload.  Called after start again
 * (started = true) to learn whether the clock can be read.
 */
static int nic_ts_check(struct gi_port *p, const struct gi_port_conf *c, const struct rte_eth_dev_info *info,
			uint64_t *offloads)
{
	int quirk = self_stamping_scale(info->driver_name);

	if (!(info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP) && quirk < 0) {
		gi_log(GI_LOG_ERR,
		       "port %s: rx_timestamp: driver %s has no NIC receive timestamps (no RTE_ETH_RX_OFFLOAD_TIMESTAMP); "
		       "set rx_timestamp: false or use a NIC that has them (mlx5)",
		       c->name, info->driver_name);
		return -ENOTSUP;
	}
	int rc = rte_mbuf_dyn_rx_timestamp_register(&p->ts_off, &p->ts_flag);
	if (rc != 0) {
		gi_log(GI_LOG_ERR, "port %s: rx_timestamp: cannot register the mbuf timestamp field: %s", c->name,
		       rte_strerror(rte_errno));
		return -rte_errno;
	}
	if (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP)
		*offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	if (quirk >= 0) { /* wall-clock time already, in its own unit */
		gi_nic_clock_fixed(&p->clock, self_stamping[quirk].ns_per_tick);
		p->nic_ts = GI_NIC_TS_REALTIME;
		gi_log(GI_LOG_INFO, "port %s: NIC receive times: %s's capture times, CLOCK_REALTIME (%llu ns a tick)",
		       c->name, info->driver_name, (unsigned long long)self_stamping[quirk].ns_per_tick);
	} else { /* until after start says whether its clock can be read */
		gi_nic_clock_fixed(&p->clock, 1);
		p->nic_ts = GI_NIC_TS_DEVICE_TICKS;
	}
	return 0;
}

/* After start: a driver whose clock can be read gets CLOCK_REALTIME (rx lcores pair the two). */
static void nic_ts_clock(struct gi_port *p, const struct gi_port_conf *c, const char *driver)
{
	uint64_t t;

	if (p->nic_ts != GI_NIC_TS_DEVICE_TICKS)
		return;
	int rc = rte_eth_read_clock(p->port_id, &t);
	if (rc == 0) {
		p->nic_ts = GI_NIC_TS_REALTIME;
		p->clock_read = true;
		gi_log(GI_LOG_INFO, "port %s: NIC receive times in CLOCK_REALTIME ns (%s's clock, paired every %u ms)",
		       c->name, driver, GI_NIC_CLOCK_PERIOD_MS);
	} else {
		gi_log(GI_LOG_WARNING,
		       "port %s: driver %s cannot read its clock (%s): frames' NIC times stay in device ticks "
		       "(the ring says so: nic_ts device_ticks)",
		       c->name, driver, rte_strerror(-rc));
	}
}

int gi_port_setup(struct gi_port *p, uint16_t port_id, const struct gi_port_conf *c)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	bool any_split = false;
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

	for (uint16_t q = 0; q < c->n_queues; q++) {
		if (!c->split[q].header_pool)
			continue;
		rc = split_check(c, q, &info);
		if (rc != 0)
			return rc;
		any_split = true;
	}
	uint64_t ts_offloads = 0;
	if (c->rx_timestamp && (rc = nic_ts_check(p, c, &info, &ts_offloads)) != 0)
		return rc;
	/* before configure: isolated mode may conflict with what configure sets up */
	rc = gi_flow_isolate(port_id, c->name, c->flow_isolation, &p->flows);
	if (rc != 0)
		return rc;

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = c->mtu;
	if (any_split)
		conf.rxmode.offloads = GI_SPLIT_OFFLOADS & ~info.rx_queue_offload_capa; /* offered port-wide only */
	conf.rxmode.offloads |= ts_offloads;
	uint16_t n_tx = info.max_tx_queues > 0 ? 1 : 0;
	if (strcmp(info.driver_name, "net_tap") == 0)
		n_tx = c->n_queues; /* tap refuses rx and tx queue counts that differ */
	rc = rte_eth_dev_configure(port_id, c->n_queues, n_tx, &conf);
	if (rc != 0) {
		gi_log(GI_LOG_ERR, "port %s: configure with %u rx queues failed: %s", c->name, c->n_queues,
		       rte_strerror(-rc));
		goto fail;
	}
	p->configured = true;

	int socket = rte_eth_dev_socket_id(port_id);
	for (uint16_t q = 0; q < c->n_queues; q++) {
		uint16_t nb_rx = c->descriptors[q], nb_tx = 64;
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rx, &nb_tx);
		if (rc == 0 && nb_rx != c->descriptors[q])
			gi_log(GI_LOG_NOTICE, "port %s queue %u: %u rx descriptors adjusted to %u by the driver", c->name,
			       q, c->descriptors[q], nb_rx);
		rc = rxq_setup(c, port_id, q, nb_rx, socket < 0 ? 0 : (unsigned)socket, &info);
		if (rc != 0) {
			gi_log(GI_LOG_ERR, "port %s queue %u: rx queue setup failed: %s (nb_desc %u, max %u%s)", c->name, q,
			       rte_strerror(-rc), nb_rx, info.rx_desc_lim.nb_max,
			       c->split[q].header_pool ? ", header/data split" : "");
			goto fail;
		}
		if (c->split[q].header_pool)
			gi_log(GI_LOG_INFO, "port %s queue %u: header/data split after %u bytes: headers in %s, payload in %s",
			       c->name, q, c->split[q].header_bytes, c->split[q].header_pool->name, c->pools[q]->name);
	}
	for (uint16_t t = 0; t < n_tx; t++) {
		uint16_t nb_rx = 64, nb_tx = 64;
		rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rx, &nb_tx);
		rc = rte_eth_tx_queue_setup(port_id, t, nb_tx, socket < 0 ? 0 : (unsigned)socket, NULL);
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
	if (c->rx_timestamp)
		nic_ts_clock(p, c, info.driver_name);
	if (c->promiscuous) {
		rc = rte_eth_promiscuous_enable(port_id);
		if (rc != 0 && rc != -ENOTSUP)
			gi_log(GI_LOG_WARNING, "port %s: cannot enable promiscuous mode: %s", c->name, rte_strerror(-rc));
	}
	/* after start: mlx5 and tap attach rules to a started port */
	rc = gi_flow_install(port_id, c->name, c->flow_steering, c->rules, c->n_rules, &p->flows);
	if (rc != 0)
		goto fail;
	xstats_resolve(p, c);
	gi_log(GI_LOG_INFO, "port %s: %s (%s) started, %u rx queue%s, mtu %u", c->name, c->device, info.driver_name,
	       c->n_queues, c->n_queues == 1 ? "" : "s", c->mtu);
	return 0;

fail:
	gi_port_teardown(p);
	return rc;
}

void gi_port_teardown(struct gi_port *p)
{
	gi_flow_teardown(&p->flows);
	if (p->started)
		rte_eth_dev_stop(p->port_id);
	if (p->configured)
		rte_eth_dev_close(p->port_id);
	p->started = false;
	p->configured = false;
}

/*
 * Resolve the configured xstat names to ids once, after start (mlx5 builds
 * its table at start).  A name the driver lacks is not fatal: one warning
 * for all of them, listing some names the driver does have.
 */
static void xstats_resolve(struct gi_port *p, const struct gi_port_conf *c)
{
	char missing[256] = "", avail[320] = "";
	size_t moff = 0, aoff = 0;

	p->n_xstats = 0;
	for (uint32_t i = 0; i < c->n_xstats && p->n_xstats < GI_PORT_MAX_XSTATS; i++) {
		uint64_t id;
		if (rte_eth_xstats_get_id_by_name(p->port_id, c->xstats[i], &id) == 0) {
			p->xstat_ids[p->n_xstats] = id;
			snprintf(p->xstat_names[p->n_xstats++], GI_PORT_XSTAT_NAME, "%s", c->xstats[i]);
		} else if (moff < sizeof(missing)) {
			moff += (size_t)snprintf(missing + moff, sizeof(missing) - moff, "%s%s", moff ? ", " : "",
						 c->xstats[i]);
		}
	}
	if (!moff)
		return;
	int n = rte_eth_xstats_get_names(p->port_id, NULL, 0);
	struct rte_eth_xstat_name *names = n > 0 ? calloc((size_t)n, sizeof(*names)) : NULL;
	if (names && rte_eth_xstats_get_names(p->port_id, names, (unsigned)n) == n) {
		for (int i = 0; i < n && i < 8 && aoff < sizeof(avail); i++)
			aoff += (size_t)snprintf(avail + aoff, sizeof(avail) - aoff, "%s%s", i ? ", " : "", names[i].name);
		if (n > 8 && aoff < sizeof(avail))
			snprintf(avail + aoff, sizeof(avail) - aoff, ", ... (%d in all)", n);
	}
	free(names);
	gi_log(GI_LOG_WARNING, "port %s: xstats %s not offered by this driver, not exported (available: %s)",
	       c->name, missing, aoff ? avail : "none");
}

int gi_port_xstats(const struct gi_port *p, uint64_t *values)
{
	if (!p->n_xstats)
		return 0;
	int rc = p->configured ? rte_eth_xstats_get_by_id(p->port_id, p->xstat_ids, values, p->n_xstats) : -ENODEV;
	if (rc == (int)p->n_xstats)
		return 0;
	memset(values, 0, p->n_xstats * sizeof(*values));
	return rc < 0 ? rc : -EIO;
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
