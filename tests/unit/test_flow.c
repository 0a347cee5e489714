/*
 * test_flow.c — rte_flow steering, flow isolation and the buffer-split
 * capability check of pmd_glue/port.c + flow.c, on real DPDK vdevs:
 *
 *   net_null  (no rte_flow, no buffer split): steering falls back to
 *             software with one warning and start succeeds; isolation and
 *             split fail start with the line that says what to change.
 *   net_tap   (rte_flow through the kernel's TC flower; root and
 *             /dev/net/tun only): two rules are validated and created on a
 *             two-queue port, isolation is accepted, a rule for a queue the
 *             port does not have is rejected naming the stream, and
 *             teardown removes the rules.  net_tap needs the kernel's multiq
 *             qdisc and flower classifier; without them it disables its
 *             rte_flow support and every rule creation fails (EEXIST) — a
 *             raw-DPDK probe on a spare tap port detects that and the tap
 *             tests skip saying so (containers often lack those modules).
 *
 * EAL runs without hugepages or PCI (--no-huge --no-pci, its own --file-prefix).  When
 * EAL cannot start, every test is skipped; the tap tests skip without root.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_mbuf.h>

#include "pmd_glue/flow.h"
#include "pmd_glue/log.h"
#include "pmd_glue/port.h"

static bool eal_up, have_tap;
static struct rte_mempool *payload_pool, *header_pool;

static const struct gi_flow_rule rules[] = {
	{ .udp_dst_port = 5000, .queue = 0, .stream = "cam0" },
	{ .udp_dst_port = 5001, .queue = 1, .stream = "radar0" },
};

/* stderr, where gi_log writes, captured into a temporary file. */
struct capture {
	int saved;
	FILE *f;
};

static void capture_start(struct capture *c)
{
	fflush(stderr);
	c->f = tmpfile();
	assert_non_null(c->f);
	c->saved = dup(STDERR_FILENO);
	dup2(fileno(c->f), STDERR_FILENO);
}

/* Stop capturing; returns what was written (caller frees) and echoes it. */
static char *capture_end(struct capture *c)
{
	long n;
	char *out;

	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	n = ftell(c->f);
	out = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	assert_non_null(out);
	rewind(c->f);
	if (n > 0 && fread(out, 1, (size_t)n, c->f) != (size_t)n)
		out[0] = '\0';
	fclose(c->f);
	fputs(out, stderr);
	return out;
}

static void conf_init(struct gi_port_conf *pc, const char *name, const char *device)
{
	memset(pc, 0, sizeof(*pc));
	pc->name = name;
	pc->device = device;
	pc->mtu = 1500;
	pc->n_queues = 2;
	pc->flow_steering = true;
	pc->rules = rules;
	pc->n_rules = 2;
	for (uint16_t q = 0; q < pc->n_queues; q++) {
		pc->descriptors[q] = 256;
		pc->pools[q] = payload_pool;
	}
}

static int port_of(const char *device, uint16_t *id)
{
	if (!eal_up)
		skip();
	return gi_port_find("t", device, id);
}

/* ---- net_null: no rte_flow, no buffer split ---- */

static void test_null_software_fallback(void **state)
{
	struct gi_port_conf pc;
	struct gi_port p;
	struct capture cap;
	uint16_t id;
	(void)state;

	assert_int_equal(port_of("net_null0", &id), 0);
	conf_init(&pc, "sensor0", "net_null0");
	capture_start(&cap);
	int rc = gi_port_setup(&p, id, &pc);
	char *log = capture_end(&cap);
	assert_int_equal(rc, 0);
	assert_true(p.started);
	assert_true(p.flows.software);
	assert_int_equal(p.flows.n_rules, 0);
	assert_non_null(strstr(log, "port sensor0 (net_null): no rte_flow support ("));
	assert_non_null(strstr(log, "); streams are classified in software, packets matching no stream count as "
				    "no_stream\n"));
	/* one warning per port, not one per rule */
	assert_null(strstr(strstr(log, "no rte_flow support") + 1, "no rte_flow support"));
	free(log);
	gi_port_teardown(&p);
	assert_false(p.started);
}

static void test_null_steering_off(void **state)
{
	struct gi_port_conf pc;
	struct gi_port p;
	struct capture cap;
	uint16_t id;
	(void)state;

	assert_int_equal(port_of("net_null1", &id), 0);
	conf_init(&pc, "sensor0", "net_null1");
	pc.flow_steering = false;
	capture_start(&cap);
	int rc = gi_port_setup(&p, id, &pc);
	char *log = capture_end(&cap);
	assert_int_equal(rc, 0);
	assert_false(p.flows.software); /* never asked the driver */
	assert_null(strstr(log, "no rte_flow support"));
	free(log);
	gi_port_teardown(&p);
}

static void test_null_isolation_fails(void **state)
{
	struct gi_port_conf pc;
	struct gi_port p;
	struct capture cap;
	uint16_t id;
	(void)state;

	assert_int_equal(port_of("net_null2", &id), 0);
	conf_init(&pc, "sensor0", "net_null2");
	pc.flow_isolation = true;
	capture_start(&cap);
	int rc = gi_port_setup(&p, id, &pc);
	char *log = capture_end(&cap);
	assert_int_equal(rc, -ENOTSUP);
	assert_false(p.configured);
	assert_non_null(strstr(log, "port sensor0 (net_null): flow_isolation requested, but the driver has no "
				    "rte_flow isolated mode ("));
	assert_non_null(strstr(log, "set flow_isolation: false"));
	free(log);
	gi_port_teardown(&p);
}

static void test_null_split_fails(void **state)
{
	struct gi_port_conf pc;
	struct gi_port p;
	struct capture cap;
	uint16_t id;
	(void)state;

	assert_int_equal(port_of("net_null3", &id), 0);
	conf_init(&pc, "sensor0", "net_null3");
	pc.split[1].header_pool = header_pool;
	pc.split[1].header_bytes = 128;
	capture_start(&cap);
	int rc = gi_port_setup(&p, id, &pc);
	char *log = capture_end(&cap);
	assert_int_equal(rc, -ENOTSUP);
	assert_false(p.configured); /* refused before the device was touched */
	assert_non_null(strstr(log, "port sensor0 queue 1: header/data split requested but driver net_null lacks "
				    "RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT (buffer split); remove rx_queues[1].split or use "
				    "an mlx5 port\n"));
	free(log);
	gi_port_teardown(&p);
}

/* ---- net_tap: rte_flow through TC flower ---- */

/*
 * Can this kernel back net_tap's rte_flow?  Plain DPDK, none of our code:
 * one queue each way, start, create one UDP rule, then release the port.
 */
static bool tap_flow_works(const char *device, char *why, size_t len)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_flow_error err = { 0 };
	const struct rte_flow_attr attr = { .ingress = 1 };
	const struct rte_flow_item_udp udp = { .hdr.dst_port = RTE_BE16(4000) };
	const struct rte_flow_item_udp mask = { .hdr.dst_port = RTE_BE16(0xffff) };
	const struct rte_flow_item pattern[] = {
		{ .type = RTE_FLOW_ITEM_TYPE_ETH },
		{ .type = RTE_FLOW_ITEM_TYPE_IPV4 },
		{ .type = RTE_FLOW_ITEM_TYPE_UDP, .spec = &udp, .mask = &mask },
		{ .type = RTE_FLOW_ITEM_TYPE_END },
	};
	const struct rte_flow_action_queue queue = { .index = 0 };
	const struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &queue },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	uint16_t id;
	bool ok = false;

	snprintf(why, len, "%s not found", device);
	if (rte_eth_dev_get_port_by_name(device, &id) != 0)
		return false;
	if (rte_eth_dev_configure(id, 1, 1, &conf) == 0 &&
	    rte_eth_rx_queue_setup(id, 0, 256, SOCKET_ID_ANY, NULL, payload_pool) == 0 &&
	    rte_eth_tx_queue_setup(id, 0, 256, SOCKET_ID_ANY, NULL) == 0 && rte_eth_dev_start(id) == 0) {
		ok = rte_flow_create(id, &attr, pattern, actions, &err) != NULL;
		snprintf(why, len, "%s", ok ? "" : err.message ? err.message : rte_strerror(rte_errno));
		rte_flow_flush(id, &err);
		rte_eth_dev_stop(id);
	} else {
		snprintf(why, len, "cannot start %s", device);
	}
	rte_eth_dev_close(id);
	return ok;
}

static void tap_port(const char *device, uint16_t *id)
{
	if (!have_tap)
		skip();
	assert_int_equal(port_of(device, id), 0);
}

static void test_tap_rules_installed(void **state)
{
	struct gi_port_conf pc;
	struct gi_port p;
	uint16_t id;
	(void)state;

	tap_port("net_tap0", &id);
	conf_init(&pc, "tap0", "net_tap0");
	int rc = gi_port_setup(&p, id, &pc);
	assert_int_equal(rc, 0);
	assert_false(p.flows.software);
	assert_int_equal(p.flows.n_rules, 2);
	gi_port_teardown(&p);
	assert_int_equal(p.flows.n_rules, 0);
}

static void test_tap_isolated(void **state)
{
	struct gi_port_conf pc;
	struct gi_port p;
	uint16_t id;
	(void)state;

	tap_port("net_tap1", &id);
	conf_init(&pc, "tap1", "net_tap1");
	pc.flow_isolation = true;
	int rc = gi_port_setup(&p, id, &pc);
	assert_int_equal(rc, 0);
	assert_true(p.flows.isolated);
	assert_int_equal(p.flows.n_rules, 2);
	gi_port_teardown(&p);
}

static void test_tap_bad_queue_rejected(void **state)
{
	static const struct gi_flow_rule bad[] = {
		{ .udp_dst_port = 5000, .queue = 0, .stream = "cam0" },
		{ .udp_dst_port = 5002, .queue = 7, .stream = "lidar0" },
	};
	struct gi_port_conf pc;
	struct gi_port p;
	struct capture cap;
	uint16_t id;
	(void)state;

	tap_port("net_tap2", &id);
	conf_init(&pc, "tap2", "net_tap2");
	pc.rules = bad;
	capture_start(&cap);
	int rc = gi_port_setup(&p, id, &pc);
	char *log = capture_end(&cap);
	assert_true(rc < 0);
	assert_false(p.started);
	assert_non_null(strstr(log, "port tap2 stream lidar0: rte_flow rule udp dst 5002 -> queue 7 rejected by net_tap: "));
	free(log);
	gi_port_teardown(&p);
}

int main(int argc, char **argv)
{
	char prefix[64];
	char *eal_argv[] = {
		argv[0], "--no-huge", "--no-pci", "--file-prefix", prefix, "-m", "256", "--log-level", "*:error",
		"--vdev", "net_null0", "--vdev", "net_null1", "--vdev", "net_null2", "--vdev", "net_null3",
		"--vdev", "net_tap0,iface=gitap0", "--vdev", "net_tap1,iface=gitap1", "--vdev", "net_tap2,iface=gitap2",
		"--vdev", "net_tap3,iface=gitap3", NULL,
	};
	int eal_argc = 17;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_software_fallback),
		cmocka_unit_test(test_null_steering_off),
		cmocka_unit_test(test_null_isolation_fails),
		cmocka_unit_test(test_null_split_fails),
		cmocka_unit_test(test_tap_rules_installed),
		cmocka_unit_test(test_tap_isolated),
		cmocka_unit_test(test_tap_bad_queue_rejected),
	};
	(void)argc;

	snprintf(prefix, sizeof(prefix), "gi-test-flow-%d", (int)getpid());
	have_tap = geteuid() == 0 && access("/dev/net/tun", R_OK | W_OK) == 0;
	if (have_tap)
		eal_argc += 8;
	else
		fprintf(stderr, "# net_tap tests skipped: they need root and /dev/net/tun\n");
	eal_up = rte_eal_init(eal_argc, eal_argv) >= 0;
	if (eal_up) {
		payload_pool = rte_pktmbuf_pool_create("payload", 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
		header_pool = rte_pktmbuf_pool_create("header", 2047, 0, 0, RTE_PKTMBUF_HEADROOM + 128, SOCKET_ID_ANY);
		eal_up = payload_pool && header_pool;
	}
	if (!eal_up)
		fprintf(stderr, "# DPDK EAL did not start: every test is skipped\n");
	if (have_tap && eal_up) {
		char why[256];
		have_tap = tap_flow_works("net_tap3", why, sizeof(why));
		if (!have_tap)
			fprintf(stderr,
				"# net_tap tests skipped: this kernel cannot back net_tap's rte_flow (%s); it needs the "
				"multiq qdisc and the flower classifier (sch_multiq, cls_flower)\n",
				why);
	}
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (eal_up)
		rte_eal_cleanup();
	return failed;
}
