/*
 * flow.c — rte_flow isolation and per-stream steering rules (see flow.h).
 *
 * DPDK 22.11: a driver without flow ops makes rte_flow_ops_get() fail with
 * ENOSYS, which rte_flow_isolate()/rte_flow_validate() return negated; a
 * driver with flow ops may still answer -ENOTSUP for an item or action it
 * cannot offload.  Both mean "no steering here", nothing worse.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>

#include "flow.h"
#include "log.h"

static const char *driver_of(uint16_t port_id, struct rte_eth_dev_info *info)
{
	if (rte_eth_dev_info_get(port_id, info) != 0 || !info->driver_name)
		return "?";
	return info->driver_name;
}

static bool no_flow_support(int rc)
{
	return rc == -ENOSYS || rc == -ENOTSUP;
}

/* The PMD's own words when it gave some, else the errno text. */
static const char *flow_msg(const struct rte_flow_error *err, int rc)
{
	return err->message && *err->message ? err->message : rte_strerror(-rc);
}

int gi_flow_isolate(uint16_t port_id, const char *port_name, bool isolate, struct gi_flow_set *fs)
{
	struct rte_eth_dev_info info;
	struct rte_flow_error err;
	int rc;

	memset(fs, 0, sizeof(*fs));
	snprintf(fs->port_name, sizeof(fs->port_name), "%s", port_name);
	fs->port_id = port_id;
	if (!isolate)
		return 0;
	memset(&err, 0, sizeof(err));
	rc = rte_flow_isolate(port_id, 1, &err);
	if (rc == 0) {
		fs->isolated = true;
		gi_log(GI_LOG_INFO, "port %s: rte_flow isolated mode: only packets matching a stream's rule are delivered",
		       port_name);
		return 0;
	}
	if (no_flow_support(rc)) {
		gi_log(GI_LOG_ERR,
		       "port %s (%s): flow_isolation requested, but the driver has no rte_flow isolated mode (%s); "
		       "isolation promises that only packets matching a stream arrive, which this port cannot keep: "
		       "set flow_isolation: false (streams are then classified in software)",
		       port_name, driver_of(port_id, &info), flow_msg(&err, rc));
		return -ENOTSUP;
	}
	gi_log(GI_LOG_ERR, "port %s (%s): rte_flow_isolate failed: %s (%s)", port_name, driver_of(port_id, &info),
	       flow_msg(&err, rc), rte_strerror(-rc));
	return rc;
}

/* One rule: validate, then create.  0, or the PMD's -errno with `err` filled. */
static int rule_create(uint16_t port_id, const struct gi_flow_rule *r, struct rte_flow_error *err,
		       struct rte_flow **out)
{
	const struct rte_flow_attr attr = { .ingress = 1 };
	const struct rte_flow_item_udp udp_spec = { .hdr.dst_port = rte_cpu_to_be_16(r->udp_dst_port) };
	const struct rte_flow_item_udp udp_mask = { .hdr.dst_port = RTE_BE16(0xffff) };
	const struct rte_flow_item pattern[] = {
		{ .type = RTE_FLOW_ITEM_TYPE_ETH },
		{ .type = RTE_FLOW_ITEM_TYPE_IPV4 },
		{ .type = RTE_FLOW_ITEM_TYPE_UDP, .spec = &udp_spec, .mask = &udp_mask },
		{ .type = RTE_FLOW_ITEM_TYPE_END },
	};
	const struct rte_flow_action_queue queue = { .index = r->queue };
	const struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &queue },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	int rc;

	memset(err, 0, sizeof(*err));
	rc = rte_flow_validate(port_id, &attr, pattern, actions, err);
	if (rc != 0)
		return rc;
	memset(err, 0, sizeof(*err));
	*out = rte_flow_create(port_id, &attr, pattern, actions, err);
	if (*out == NULL)
		return rte_errno ? -rte_errno : -EINVAL;
	return 0;
}

int gi_flow_install(uint16_t port_id, const char *port_name, bool steer, const struct gi_flow_rule *rules,
		    unsigned n, struct gi_flow_set *fs)
{
	struct rte_eth_dev_info info;
	struct rte_flow_error err;

	fs->steer = steer;
	if (!steer) {
		gi_log(GI_LOG_INFO, "port %s: flow_steering off; streams are classified in software", port_name);
		return 0;
	}
	if (n > GI_FLOW_MAX_RULES) {
		gi_log(GI_LOG_ERR, "port %s: %u rte_flow rules, at most %u", port_name, n, GI_FLOW_MAX_RULES);
		return -ENOSPC;
	}
	if (n == 0 && fs->isolated)
		gi_log(GI_LOG_WARNING, "port %s: isolated mode with no streams on the port: it will deliver nothing",
		       port_name);
	for (unsigned i = 0; i < n; i++) {
		const struct gi_flow_rule *r = &rules[i];
		struct rte_flow *flow = NULL;
		int rc = rule_create(port_id, r, &err, &flow);

		if (rc == 0) {
			fs->rules[fs->n_rules++] =
				(struct gi_flow_entry){ .udp_dst_port = r->udp_dst_port, .queue = r->queue, .flow = flow };
			continue;
		}
		gi_flow_teardown(fs);
		if (no_flow_support(rc)) {
			if (fs->isolated) {
				gi_log(GI_LOG_ERR,
				       "port %s (%s): isolated mode is on but the driver cannot steer stream %s "
				       "(udp dst %u -> queue %u): %s; no packet would arrive: set flow_isolation: false",
				       port_name, driver_of(port_id, &info), r->stream, r->udp_dst_port, r->queue,
				       flow_msg(&err, rc));
				return -ENOTSUP;
			}
			gi_log(GI_LOG_WARNING,
			       "port %s (%s): no rte_flow support (%s); streams are classified in software, packets "
			       "matching no stream count as no_stream",
			       port_name, driver_of(port_id, &info), flow_msg(&err, rc));
			fs->software = true;
			return 0;
		}
		gi_log(GI_LOG_ERR,
		       "port %s stream %s: rte_flow rule udp dst %u -> queue %u rejected by %s: %s (%s)",
		       port_name, r->stream, r->udp_dst_port, r->queue, driver_of(port_id, &info), flow_msg(&err, rc),
		       rte_strerror(-rc));
		return rc;
	}
	if (n)
		gi_log(GI_LOG_INFO, "port %s: %u rte_flow rule%s steer streams to their queues", port_name, n,
		       n == 1 ? "" : "s");
	return 0;
}

void gi_flow_teardown(struct gi_flow_set *fs)
{
	struct rte_flow_error err;
	int rc;

	if (fs->n_rules == 0)
		return;
	memset(&err, 0, sizeof(err));
	rc = rte_flow_flush(fs->port_id, &err);
	if (rc != 0)
		gi_log(GI_LOG_WARNING, "port %s: removing %u rte_flow rule%s failed: %s; closing the port drops them",
		       fs->port_name, fs->n_rules, fs->n_rules == 1 ? "" : "s", flow_msg(&err, rc));
	fs->n_rules = 0;
}

int gi_flow_rule_add(struct gi_flow_set *fs, const struct gi_flow_rule *r)
{
	struct rte_eth_dev_info info;
	struct rte_flow_error err;
	struct rte_flow *flow = NULL;

	if (!fs->steer || fs->software)
		return 0;
	for (unsigned i = 0; i < fs->n_rules; i++)
		if (fs->rules[i].udp_dst_port == r->udp_dst_port)
			return -EEXIST;
	if (fs->n_rules == GI_FLOW_MAX_RULES)
		return -ENOSPC;
	int rc = rule_create(fs->port_id, r, &err, &flow);
	if (rc != 0) {
		gi_log(GI_LOG_ERR, "port %s stream %s: rte_flow rule udp dst %u -> queue %u rejected by %s: %s (%s)",
		       fs->port_name, r->stream, r->udp_dst_port, r->queue, driver_of(fs->port_id, &info),
		       flow_msg(&err, rc), rte_strerror(-rc));
		return rc;
	}
	fs->rules[fs->n_rules++] = (struct gi_flow_entry){ .udp_dst_port = r->udp_dst_port, .queue = r->queue,
							   .flow = flow };
	return 0;
}

int gi_flow_rule_del(struct gi_flow_set *fs, uint16_t udp_dst_port)
{
	struct rte_flow_error err;

	if (!fs->steer || fs->software)
		return 0;
	for (unsigned i = 0; i < fs->n_rules; i++) {
		if (fs->rules[i].udp_dst_port != udp_dst_port)
			continue;
		memset(&err, 0, sizeof(err));
		int rc = rte_flow_destroy(fs->port_id, fs->rules[i].flow, &err);
		if (rc != 0) {
			gi_log(GI_LOG_WARNING, "port %s: removing the rte_flow rule for udp dst %u failed: %s", fs->port_name,
			       udp_dst_port, flow_msg(&err, rc));
			return rc;
		}
		fs->rules[i] = fs->rules[--fs->n_rules];
		return 0;
	}
	return -ENOENT;
}
