/*
 * flow.h — rte_flow steering of each stream's UDP port to its rx queue, and
 * optional flow isolation.
 *
 * Why: on a multi-queue NIC (mlx5) a stream must arrive on the queue whose
 * lcore and batch ring are meant for it, and with isolation the NIC drops
 * (or, on a bifurcated driver, leaves to the kernel) everything else before
 * it costs an mbuf.  Each rule is
 *     ETH / IPV4 / UDP (dst == udp_dst_port, mask 0xffff) / END
 *       -> QUEUE (index) / END
 * checked with rte_flow_validate() and then created.
 *
 * Order on a port (gi_port_setup() in port.c follows it):
 *     gi_flow_isolate()    before rte_eth_dev_configure()  (DPDK: isolated
 *                          mode may conflict with settings made at configure)
 *     rte_eth_dev_configure / queue setup / rte_eth_dev_start
 *     gi_flow_install()    after rte_eth_dev_start()  (mlx5 and tap apply
 *                          rules to a started port)
 *     ...
 *     gi_flow_teardown()   before rte_eth_dev_stop()
 *
 * A driver without rte_flow (memif, pcap, null, af_packet: no flow ops,
 * rte_flow_validate() answers -ENOSYS or -ENOTSUP) gets one warning per port
 * and software classification: the executor matches streams by UDP port
 * anyway, and packets matching none count as no_stream drops.  Isolation on
 * such a driver is an error: it promised that nothing else arrives.
 *
 * Main thread only.
 */
#ifndef GI_FLOW_H
#define GI_FLOW_H

#include <stdbool.h>
#include <stdint.h>

/* One stream's steering rule. */
struct gi_flow_rule {
	uint16_t udp_dst_port;
	uint16_t queue;         /* rx queue index on the port */
	const char *stream;     /* stream name, for messages */
};

#define GI_FLOW_MAX_RULES 256   /* one per distinct UDP port of a port's streams */

struct rte_flow;

/* One created rule, kept so live reload can destroy just that one. */
struct gi_flow_entry {
	uint16_t udp_dst_port;
	uint16_t queue;
	struct rte_flow *flow;
};

/* What is installed on one port; zeroed before gi_flow_isolate(). */
struct gi_flow_set {
	char port_name[32];
	uint16_t port_id;
	bool isolated;          /* rte_flow_isolate(1) took effect */
	bool steer;             /* flow_steering was on at gi_flow_install() */
	bool software;          /* no rte_flow support: classification in software */
	unsigned n_rules;       /* rules created; gi_flow_teardown() flushes them */
	struct gi_flow_entry rules[GI_FLOW_MAX_RULES];
};

/*
 * Enter isolated mode when `isolate` (otherwise only records port_id).
 * Call before rte_eth_dev_configure().
 * Returns 0, or:
 *   -ENOTSUP  the driver has no rte_flow isolated mode (memif, pcap, null…);
 *             logged as an error that says to set flow_isolation: false
 *   -errno    rte_flow_isolate() failed otherwise (logged with the PMD's message)
 */
int gi_flow_isolate(uint16_t port_id, const char *port_name, bool isolate, struct gi_flow_set *fs);

/*
 * Validate and create one rule per entry of `rules` when `steer`; call after
 * rte_eth_dev_start().  On failure every rule created so far is flushed.
 * Returns 0 (rules installed, steering off, or the software fallback with
 * fs->software set and one warning logged), or:
 *   -ENOTSUP  no rte_flow support while fs->isolated (nothing could arrive)
 *   -EINVAL   (or the PMD's -errno) a rule was rejected, e.g. a queue index
 *             out of range; logged naming the stream, UDP port and queue
 */
int gi_flow_install(uint16_t port_id, const char *port_name, bool steer, const struct gi_flow_rule *rules,
		    unsigned n, struct gi_flow_set *fs);

/* Destroy every rule (rte_flow_flush); before rte_eth_dev_stop().  Idempotent. */
void gi_flow_teardown(struct gi_flow_set *fs);

/*
 * Live reload, on a started port: add the rule for one more UDP port, or
 * destroy the rule of one.  Without steering (flow_steering off, or the
 * software fallback) both do nothing and return 0.  Returns 0, or:
 *   -ENOSPC   GI_FLOW_MAX_RULES rules already
 *   -EEXIST   (add) that UDP port already has a rule
 *   -ENOENT   (del) it has none
 *   -errno    the PMD rejected the rule, or refused to destroy it (logged)
 */
int gi_flow_rule_add(struct gi_flow_set *fs, const struct gi_flow_rule *r);
int gi_flow_rule_del(struct gi_flow_set *fs, uint16_t udp_dst_port);

#endif /* GI_FLOW_H */
