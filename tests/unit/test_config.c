/*
 * test_config.c — the YAML config loader: values, defaults, and one test per
 * class of error, each pinned to its exact FILE:LINE:COL and key path.
 *
 * argv[1]: tests/configs (broken configs; each states its expected errors in
 *          `# expect: LINE:COL: key: problem` header lines)
 * argv[2]: config (the reference and demo configs, which must load cleanly)
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/config.h"

static const char *configs_dir = "tests/configs";
static const char *config_dir = "config";

/* The struct is large (256 streams): one heap copy for every test. */
static struct gi_config *cfg;

struct result {
	int ret;
	unsigned n_errors;
	char *out;   /* every error line, NUL-terminated */
};

static struct result load_str(const char *yaml)
{
	struct result r = { 0 };
	size_t len = 0;
	FILE *errf = open_memstream(&r.out, &len);

	assert_non_null(errf);
	r.ret = gi_config_load_string("t.yaml", yaml, strlen(yaml), cfg, errf, &r.n_errors);
	fclose(errf);
	return r;
}

static struct result load_file(const char *path)
{
	struct result r = { 0 };
	size_t len = 0;
	FILE *errf = open_memstream(&r.out, &len);

	assert_non_null(errf);
	r.ret = gi_config_load(path, cfg, errf, &r.n_errors);
	fclose(errf);
	return r;
}

static unsigned count_lines(const char *s)
{
	unsigned n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The config fails with exactly `n` errors and `line` is one of them, whole. */
static void expect_errors(const char *yaml, unsigned n, const char *line)
{
	struct result r = load_str(yaml);
	char want[512];

	snprintf(want, sizeof(want), "%s\n", line);
	if (!strstr(r.out, want) || r.n_errors != n)
		print_error("expected %u error(s) including\n  %s\ngot %u:\n%s", n, line, r.n_errors, r.out);
	assert_int_equal(r.ret, -EINVAL);
	assert_int_equal(r.n_errors, n);
	assert_int_equal(count_lines(r.out), n);
	assert_non_null(strstr(r.out, want));
	free(r.out);
	gi_config_free(cfg);
}

/* Same, matching only the start of the line (for libyaml's own wording). */
static void expect_error_prefix(const char *yaml, const char *prefix)
{
	struct result r = load_str(yaml);

	if (strncmp(r.out, prefix, strlen(prefix)) != 0)
		print_error("expected a line starting with\n  %s\ngot:\n%s", prefix, r.out);
	assert_int_equal(r.ret, -EINVAL);
	assert_int_equal(r.n_errors, 1);
	assert_int_equal(strncmp(r.out, prefix, strlen(prefix)), 0);
	free(r.out);
	gi_config_free(cfg);
}

static void expect_ok(const char *yaml)
{
	struct result r = load_str(yaml);

	if (r.ret != 0)
		print_error("unexpected errors:\n%s", r.out);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.n_errors, 0);
	assert_string_equal(r.out, "");
	free(r.out);
}

/* A minimal valid config, lines 1-8, that tests extend or bend. */
#define BASE_POOL                   \
	"memory:\n"                 \
	"  - name: pool0\n"
#define BASE_PORT                   \
	"ports:\n"                  \
	"  - name: sensor0\n"       \
	"    device: net_null0\n"   \
	"    rx_queues:\n"          \
	"      - lcore: 1\n"        \
	"        mempool: pool0\n"
#define BASE BASE_POOL BASE_PORT

/* ---- configs that load ---- */

static void test_reference_config(void **state)
{
	char path[512];
	(void)state;

	snprintf(path, sizeof(path), "%s/gpuingest.yaml", config_dir);
	struct result r = load_file(path);
	if (r.ret)
		print_error("%s", r.out);
	assert_int_equal(r.ret, 0);
	assert_int_equal(r.n_errors, 0);
	free(r.out);

	assert_string_equal(cfg->path, path);
	assert_int_equal(cfg->main_lcore, 0);
	assert_int_equal(cfg->n_eal_args, 3);
	assert_string_equal(cfg->eal_args[0], "--file-prefix");
	assert_string_equal(cfg->eal_args[2], "--in-memory");
	assert_int_equal(cfg->log_level, GI_LOG_INFO);
	assert_int_equal(cfg->executor.backend, GI_BACKEND_AUTO);
	assert_int_equal(cfg->executor.idle, GI_IDLE_ADAPTIVE);
	assert_int_equal(cfg->executor.cpu, -1);

	assert_int_equal(cfg->n_pools, 2);
	assert_string_equal(cfg->pools[1].name, "hdr0");
	assert_int_equal(cfg->pools[1].kind, GI_MEM_HOST);
	assert_string_equal(cfg->pools[0].name, "gpu0");
	assert_int_equal(cfg->pools[0].kind, GI_MEM_HOST);
	assert_int_equal(cfg->pools[0].mbufs, 65536);
	assert_int_equal(cfg->pools[0].buf_size, 0);
	assert_true(cfg->pools[0].hugepages);

	assert_int_equal(cfg->n_ports, 1);
	const struct gi_cfg_port *p = &cfg->ports[0];
	assert_string_equal(p->name, "sensor0");
	assert_string_equal(p->device, "0000:03:00.0");
	assert_true(p->is_pci);
	assert_string_equal(p->devargs, "txq_inline_max=0");
	assert_int_equal(p->mtu, 9000);
	assert_int_equal(p->n_queues, 2);
	assert_int_equal(p->queues[0].lcore, 2);
	assert_int_equal(p->queues[0].descriptors, 4096);
	assert_int_equal(p->queues[0].batch.max_packets, 256);
	assert_int_equal(p->queues[0].batch.timeout_us, 50);
	assert_false(p->flow_isolation);
	assert_true(p->flow_steering);
	assert_true(p->queues[0].split.enabled);
	assert_int_equal(p->queues[0].split.header_bytes, 128);
	assert_string_equal(p->queues[0].split.header_mempool, "hdr0");
	assert_int_equal(p->queues[0].split.header_pool_index, 1);
	assert_false(p->queues[1].split.enabled);
	assert_int_equal(p->queues[1].split.header_pool_index, -1);
	assert_int_equal(p->queues[1].lcore, 3);
	assert_int_equal(p->queues[1].ring_slots, 256); /* default */
	assert_int_equal(p->queues[1].pool_index, 0);

	assert_int_equal(cfg->n_lcores, 2);
	assert_int_equal(gi_config_lcore_idle(cfg, 3), GI_IDLE_BUSY);

	assert_int_equal(cfg->n_streams, 2);
	assert_string_equal(cfg->streams[0].name, "cam0");
	assert_int_equal(cfg->streams[0].frame_packets, 1024);
	assert_int_equal(cfg->streams[0].payload_bytes, 8192);
	const struct gi_cfg_stream *radar = &cfg->streams[1];
	assert_int_equal(radar->port_index, 0);
	assert_int_equal(radar->udp_dst_port, 5001);
	assert_int_equal(cfg->streams[0].queue, 0);
	assert_int_equal(radar->queue, 1);
	assert_int_equal(radar->format, GI_FORMAT_UDP_SEQ);  /* defaults from here on */
	assert_int_equal(radar->ring_slots, 16);
	assert_int_equal(radar->reorder_window, 2);
	assert_int_equal(radar->frame_timeout_ms, 1000);
	assert_string_equal(radar->shm, "/gpuingest-radar0");

	assert_string_equal(cfg->stats.unix_path, "/run/gpuingest/metrics.sock");
	assert_string_equal(cfg->stats.listen, "127.0.0.1:9475");
	assert_int_equal(cfg->stats.status_interval_ms, 0);
	gi_config_free(cfg);
	gi_config_free(cfg); /* twice is harmless */
}

static void test_demo_config(void **state)
{
	char path[512];
	(void)state;

	snprintf(path, sizeof(path), "%s/demo.yaml", config_dir);
	struct result r = load_file(path);
	if (r.ret)
		print_error("%s", r.out);
	assert_int_equal(r.ret, 0);
	free(r.out);

	assert_int_equal(cfg->n_eal_args, 6);
	const char *args[] = { "--no-huge", "--no-pci", "-m", "512", "--file-prefix", "gpuingest-demo" };
	for (unsigned i = 0; i < 6; i++)
		assert_string_equal(cfg->eal_args[i], args[i]);
	assert_int_equal(cfg->executor.backend, GI_BACKEND_HOST);
	assert_int_equal(cfg->executor.idle, GI_IDLE_ADAPTIVE);
	assert_int_equal(gi_config_lcore_idle(cfg, 1), GI_IDLE_ADAPTIVE);
	assert_int_equal(gi_config_lcore_idle(cfg, 7), GI_IDLE_BUSY); /* no entry */
	assert_false(cfg->pools[0].hugepages);
	assert_string_equal(cfg->ports[0].device,
			    "net_memif0,role=client,socket=/run/gpuingest/demo.sock,socket-abstract=no");
	assert_false(cfg->ports[0].is_pci);
	assert_true(cfg->ports[0].promiscuous);
	assert_int_equal(cfg->ports[0].queues[0].lcore, 1);
	assert_int_equal(cfg->n_streams, 2);
	assert_int_equal(cfg->streams[0].udp_dst_port, 5000);
	assert_int_equal(cfg->streams[0].frame_packets, 64);
	assert_int_equal(cfg->streams[0].payload_bytes, 1024);
	assert_string_equal(cfg->streams[0].shm, "/gpuingest-cam0");
	assert_int_equal(cfg->streams[1].udp_dst_port, 5001);
	assert_int_equal(cfg->streams[1].frame_packets, 32);
	assert_int_equal(cfg->streams[1].payload_bytes, 1400);
	assert_string_equal(cfg->stats.unix_path, "/run/gpuingest/demo-metrics.sock");
	assert_string_equal(cfg->stats.listen, "127.0.0.1:9475");
	assert_int_equal(cfg->stats.status_interval_ms, 1000);
	gi_config_free(cfg);
}

static void test_defaults(void **state)
{
	(void)state;
	expect_ok(BASE);
	assert_string_equal(cfg->path, "t.yaml");
	assert_int_equal(cfg->n_eal_args, 0);
	assert_int_equal(cfg->main_lcore, 0);
	assert_int_equal(cfg->log_level, GI_LOG_INFO);
	assert_int_equal(cfg->executor.backend, GI_BACKEND_AUTO);
	assert_int_equal(cfg->executor.idle, GI_IDLE_ADAPTIVE);
	assert_int_equal(cfg->executor.cpu, -1);
	assert_int_equal(cfg->n_lcores, 0);
	assert_int_equal(cfg->pools[0].kind, GI_MEM_HOST);
	assert_int_equal(cfg->pools[0].mbufs, 16384);
	assert_int_equal(cfg->pools[0].cache, 256);
	assert_int_equal(cfg->pools[0].buf_size, 0);
	assert_true(cfg->pools[0].hugepages);
	assert_int_equal(cfg->pools[0].line, 2);
	assert_int_equal(cfg->ports[0].mtu, 1500);
	assert_true(cfg->ports[0].promiscuous);
	assert_string_equal(cfg->ports[0].devargs, "");
	assert_false(cfg->ports[0].flow_isolation);
	assert_true(cfg->ports[0].flow_steering);
	assert_int_equal(cfg->ports[0].line, 4);
	const struct gi_cfg_queue *q = &cfg->ports[0].queues[0];
	assert_int_equal(q->descriptors, 1024);
	assert_int_equal(q->ring_slots, 256);
	assert_int_equal(q->batch.max_packets, 64);
	assert_int_equal(q->batch.timeout_us, 100);
	assert_int_equal(q->pool_index, 0);
	assert_false(q->split.enabled);
	assert_int_equal(q->split.header_bytes, 128);
	assert_int_equal(q->split.header_pool_index, -1);
	assert_int_equal(q->line, 7);
	assert_int_equal(cfg->n_streams, 0);
	assert_string_equal(cfg->stats.unix_path, "");
	assert_string_equal(cfg->stats.listen, "127.0.0.1:9475");
	assert_int_equal(cfg->stats.status_interval_ms, 0);
	gi_config_free(cfg);
}

static void test_accepted_forms(void **state)
{
	(void)state;
	/* booleans in every spelling, PCI short form, IPv6 and localhost, null sections */
	expect_ok(BASE_POOL
		  "    hugepages: off\n"
		  "ports:\n"
		  "  - name: sensor0\n"
		  "    device: 03:00.0\n"
		  "    promiscuous: No\n"
		  "    rx_queues:\n"
		  "      - {lcore: 1, mempool: pool0, ring_slots: 65536}\n"
		  "lcores:\n"
		  "streams:\n"
		  "executor: {backend: gpudev, cpu: 1023}\n"
		  "stats: {listen: \"[::1]:9475\", unix: \"\"}\n");
	assert_false(cfg->pools[0].hugepages);
	assert_false(cfg->ports[0].promiscuous);
	assert_true(cfg->ports[0].is_pci);
	assert_int_equal(cfg->ports[0].queues[0].ring_slots, 65536);
	assert_int_equal(cfg->executor.backend, GI_BACKEND_GPUDEV);
	assert_int_equal(cfg->executor.cpu, 1023);
	assert_string_equal(cfg->stats.listen, "[::1]:9475");
	expect_ok(BASE "stats: {listen: \"localhost:1\"}\n");
	expect_ok(BASE "stats: {listen: \"\"}\n");
	assert_string_equal(cfg->stats.listen, "");
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(gi_backend_name(GI_BACKEND_AUTO), "auto");
	assert_string_equal(gi_backend_name(GI_BACKEND_CUDA), "cuda");
	assert_string_equal(gi_format_name(GI_FORMAT_UDP_SEQ), "udp_seq");
}

/* ---- one test per class of error ---- */

static void test_yaml_syntax(void **state)
{
	(void)state;
	expect_error_prefix("memory:\n"
			    "  - name: pool0: x\n",
			    "t.yaml:2:16: YAML syntax error: mapping values are not allowed");
	expect_error_prefix(BASE "stats: {listen: x\n", "t.yaml:10:1: YAML syntax error: ");
}

static void test_unknown_key(void **state)
{
	(void)state;
	expect_errors(BASE "    mtuu: 1500\n", 1,
		      "t.yaml:9:5: ports[0].mtuu: unknown key (allowed: name, device, devargs, mtu, promiscuous, flow_isolation, flow_steering, rx_timestamp, xstats, rx_queues)");
	expect_errors("stat: {}\n" BASE, 1,
		      "t.yaml:1:1: stat: unknown key (allowed: eal, log, executor, lcores, memory, ports, streams, stats)");
	expect_errors(BASE "        batch: {max_packet: 4}\n", 1,
		      "t.yaml:9:17: ports[0].rx_queues[0].batch.max_packet: unknown key (allowed: max_packets, timeout_us)");
}

static void test_wrong_type(void **state)
{
	(void)state;
	/* a map where a scalar belongs */
	expect_errors(BASE "    mtu: {a: 1}\n", 1,
		      "t.yaml:9:10: ports[0].mtu: expected an integer, got a map (allowed: 68..9600)");
	/* a scalar where a map belongs */
	expect_errors(BASE "        batch: 64\n", 1,
		      "t.yaml:9:16: ports[0].rx_queues[0].batch: expected a map, got a scalar");
	/* a map where a list belongs */
	expect_errors(BASE "eal: {args: {a: b}}\n", 1,
		      "t.yaml:9:13: eal.args: expected a list of strings, got a map (allowed: up to 64 strings)");
	/* a list where a scalar belongs */
	expect_errors(BASE "log: {level: [info]}\n", 1,
		      "t.yaml:9:14: log.level: expected a scalar, got a list "
		      "(allowed: error, warning, notice, info, debug)");
	/* a list item that is not a map */
	expect_errors(BASE "  - sensor1\n", 1, "t.yaml:9:5: ports[1]: expected a map, got a scalar");
	/* a broken item keeps its index: later items are still named by theirs */
	expect_errors(BASE "streams:\n"
			   "  - cam0\n"
			   "  - name: cam1\n"
			   "    port: sensor9\n"
			   "    match: {udp_dst_port: 5000}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n",
		      2, "t.yaml:12:11: streams[1].port: no port named 'sensor9' (defined: sensor0)");
	/* the document itself */
	expect_errors("- a\n", 1, "t.yaml:1:1: (top level): expected a map, got a list");
}

static void test_bad_int(void **state)
{
	(void)state;
	expect_errors(BASE "    mtu: abc\n", 1,
		      "t.yaml:9:10: ports[0].mtu: 'abc' is not a decimal integer (allowed: 68..9600)");
	expect_errors(BASE "    mtu: 1500b\n", 1,
		      "t.yaml:9:10: ports[0].mtu: '1500b' is not a decimal integer (allowed: 68..9600)");
	expect_errors(BASE "    mtu: 0x5dc\n", 1,
		      "t.yaml:9:10: ports[0].mtu: '0x5dc' is not a decimal integer (allowed: 68..9600)");
	expect_errors(BASE "    mtu: 99999999999999999999\n", 1,
		      "t.yaml:9:10: ports[0].mtu: '99999999999999999999' is not a decimal integer (allowed: 68..9600)");
	expect_errors(BASE "    mtu:\n", 1, "t.yaml:9:9: ports[0].mtu: missing value (allowed: 68..9600)");
	/* a string key: hiding a NUL, or longer than its buffer */
	expect_errors(BASE "    devargs: \"a\\0b\"\n", 1, "t.yaml:9:14: ports[0].devargs: contains a NUL byte");
	char yaml[1024] = BASE "    devargs: ";
	size_t at = strlen(yaml);
	memset(yaml + at, 'x', GI_DEVICE_MAX);
	strcpy(yaml + at + GI_DEVICE_MAX, "\n");
	expect_errors(yaml, 1, "t.yaml:9:14: ports[0].devargs: string is too long (allowed: up to 511 bytes)");
	yaml[at + GI_DEVICE_MAX - 1] = '\n'; /* 511 bytes fit */
	yaml[at + GI_DEVICE_MAX] = '\0';
	expect_ok(yaml);
}

static void test_out_of_range(void **state)
{
	(void)state;
	expect_errors(BASE "        batch:\n"
			   "          max_packets: 5000\n",
		      1, "t.yaml:10:24: ports[0].rx_queues[0].batch.max_packets: 5000 is out of range (allowed: 1..2048)");
	expect_errors(BASE "executor: {cpu: -2}\n", 1,
		      "t.yaml:9:17: executor.cpu: -2 is out of range (allowed: -1..1023)");
	expect_errors(BASE "eal: {main_lcore: -1}\n", 1,
		      "t.yaml:9:19: eal.main_lcore: -1 is out of range (allowed: 0..127)");
	expect_errors(BASE "        ring_slots: 300\n", 1,
		      "t.yaml:9:21: ports[0].rx_queues[0].ring_slots: 300 is not a power of two "
		      "(allowed: powers of two 2..65536)");
	expect_errors("memory:\n"
		      "  - name: pool0\n"
		      "    buf_size: 255\n" BASE_PORT,
		      1, "t.yaml:3:15: memory[0].buf_size: 255 is out of range (allowed: 0 or 256..65535)");
	expect_errors("memory: []\n" BASE_PORT, 1, "t.yaml:1:9: memory: needs at least 1 item (allowed: 1..8 items)");
}

static void test_bad_enum(void **state)
{
	(void)state;
	expect_errors("memory:\n"
		      "  - name: pool0\n"
		      "    kind: gpu\n" BASE_PORT,
		      1, "t.yaml:3:11: memory[0].kind: 'gpu' is not a valid value (allowed: host, host_pinned, device)");
	expect_errors(BASE "executor:\n"
			   "  backend: CUDA\n",
		      1, "t.yaml:10:12: executor.backend: 'CUDA' is not a valid value (allowed: auto, host, cuda, gpudev)");
}

static void test_bad_bool(void **state)
{
	(void)state;
	expect_errors(BASE "    promiscuous: maybe\n", 1,
		      "t.yaml:9:18: ports[0].promiscuous: 'maybe' is not a boolean (allowed: true, false, yes, no, on, off)");
	expect_errors(BASE "    promiscuous: 1\n", 1,
		      "t.yaml:9:18: ports[0].promiscuous: '1' is not a boolean (allowed: true, false, yes, no, on, off)");
}

static void test_missing_required(void **state)
{
	(void)state;
	/* reported at the enclosing map, naming the key */
	expect_errors(BASE_POOL "ports:\n"
				"  - name: sensor0\n"
				"    rx_queues: [{lcore: 1, mempool: pool0}]\n",
		      1, "t.yaml:4:5: ports[0].device: missing required key");
	expect_errors(BASE_POOL, 1, "t.yaml:1:1: ports: missing required key");
	expect_errors(BASE "streams:\n"
			   "  - name: cam0\n"
			   "    port: sensor0\n"
			   "    match: {udp_dst_port: 5000}\n"
			   "    frame:\n"
			   "      packets: 4\n",
		      1, "t.yaml:14:7: streams[0].frame.payload_bytes: missing required key");
	expect_errors("", 1, "t.yaml:1:1: (top level): the config is empty (required: memory, ports)");
}

static void test_duplicate_name(void **state)
{
	(void)state;
	expect_errors(BASE "streams:\n"
			   "  - name: cam0\n"
			   "    port: sensor0\n"
			   "    match: {udp_dst_port: 5000}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n"
			   "  - port: sensor0\n"
			   "    name: cam0\n"
			   "    match: {udp_dst_port: 5001}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n",
		      1, "t.yaml:15:11: streams[1].name: duplicate name 'cam0' (first at line 10)");
	expect_errors(BASE_POOL "  - name: pool0\n" BASE_PORT, 1,
		      "t.yaml:3:11: memory[1].name: duplicate name 'pool0' (first at line 2)");
	/* the same key twice in one map */
	expect_errors(BASE "    mtu: 1500\n"
			   "    mtu: 9000\n",
		      1, "t.yaml:10:5: ports[0].mtu: duplicate key (first at line 9)");
}

static void test_dangling_stream_port(void **state)
{
	(void)state;
	expect_errors(BASE "streams:\n"
			   "  - name: cam0\n"
			   "    port: sensor9\n"
			   "    match: {udp_dst_port: 5000}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n",
		      1, "t.yaml:11:11: streams[0].port: no port named 'sensor9' (defined: sensor0)");
}

static void test_dangling_queue_mempool(void **state)
{
	(void)state;
	expect_errors(BASE_POOL "  - name: pool1\n"
				"ports:\n"
				"  - name: sensor0\n"
				"    device: net_null0\n"
				"    rx_queues:\n"
				"      - lcore: 1\n"
				"        mempool: pool2\n",
		      1, "t.yaml:9:18: ports[0].rx_queues[0].mempool: no memory pool named 'pool2' (defined: pool0, pool1)");
}

static void test_queue_on_main_lcore(void **state)
{
	(void)state;
	expect_errors("eal: {main_lcore: 1}\n" BASE, 1,
		      "t.yaml:8:16: ports[0].rx_queues[0].lcore: lcore 1 is eal.main_lcore "
		      "(allowed: any other lcore; the main lcore runs the control loop)");
}

/* The lcores are the config's: eal.args may not set them, in any spelling EAL takes. */
#define EAL_LCORE_ALLOWED                                                                              \
	"sets the lcores, which the daemon derives from the config (allowed: no -l, -c, --lcores, "   \
	"--main-lcore or --master-lcore; set eal.main_lcore and ports[].rx_queues[].lcore instead)"
static void test_eal_args_lcores(void **state)
{
	(void)state;
	expect_errors(BASE "eal: {args: [--in-memory, -l, 0-1]}\n", 1,
		      "t.yaml:9:27: eal.args[1]: '-l' " EAL_LCORE_ALLOWED);
	/* every form getopt_long takes: =VALUE, abbreviations, the value attached, after -v or -h */
	static const char *const refused[] = { "-c0x3", "--lcores=0,1", "--main-lcore", "--master-lcore=0",
					       "--lcore=0-1", "--lc", "--mai=0", "--mas", "-vl0-1", "-hvc3" };
	for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
		char yaml[512], line[512];
		snprintf(yaml, sizeof(yaml), BASE "eal:\n  args:\n    - --in-memory\n    - '%s'\n", refused[k]);
		snprintf(line, sizeof(line), "t.yaml:12:7: eal.args[1]: '%s' " EAL_LCORE_ALLOWED, refused[k]);
		expect_errors(yaml, 1, line);
	}
	/* '--' would end EAL's options before the daemon's */
	expect_errors(BASE "eal: {args: [--in-memory, '--', x]}\n", 1,
		      "t.yaml:9:27: eal.args[1]: '--' ends EAL's options, and the daemon's own come after eal.args "
		      "(allowed: EAL options only)");
	/* what only looks like them: other options, values, ambiguous abbreviations (EAL's own error) */
	expect_ok(BASE "eal: {args: [--log-level, 'lib.eal:debug', --legacy-mem, --match-allocations, -m, '512', "
		  "-vm512, --lcores-x, --main-lcore-x, --l, --ma, -a, '0000:01:00.0', --file-prefix, lc]}\n");
	gi_config_free(cfg);
}

static void test_lcores(void **state)
{
	(void)state;
	expect_errors(BASE "lcores:\n"
			   "  - id: 1\n"
			   "  - id: 2\n"
			   "  - {id: 1, idle: adaptive}\n",
		      2, "t.yaml:11:9: lcores[1].id: lcore 2 runs no rx queue "
			 "(allowed: an lcore named by some ports[].rx_queues[].lcore)");
	expect_errors(BASE "lcores:\n"
			   "  - id: 1\n"
			   "  - {id: 1, idle: adaptive}\n",
		      1, "t.yaml:11:10: lcores[1].id: duplicate lcore 1 (first at line 10)");
	expect_errors(BASE "lcores:\n"
			   "  - idle: busy\n",
		      1, "t.yaml:10:5: lcores[0].id: missing required key");
}

static void test_duplicate_udp_port(void **state)
{
	(void)state;
	expect_errors(BASE "streams:\n"
			   "  - name: cam0\n"
			   "    port: sensor0\n"
			   "    match: {udp_dst_port: 5000}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n"
			   "  - name: cam1\n"
			   "    port: sensor0\n"
			   "    match:\n"
			   "      udp_dst_port: 5000\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n",
		      1, "t.yaml:17:21: streams[1].match.udp_dst_port: udp port 5000 on port sensor0 "
			 "is already matched by stream 'cam0' (line 10)");
}

/* one ring name, one stream: an explicit ring.shm, or another's default /gpuingest-NAME */
static void test_duplicate_shm(void **state)
{
	(void)state;
	expect_errors(BASE "streams:\n"
			   "  - name: cam0\n"
			   "    port: sensor0\n"
			   "    match: {udp_dst_port: 5000}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n"
			   "    ring: {shm: /cams}\n"
			   "  - name: cam1\n"
			   "    port: sensor0\n"
			   "    match: {udp_dst_port: 5001}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n"
			   "    ring: {shm: /cams}\n",
		      1, "t.yaml:19:17: streams[1].ring.shm: frame ring /cams is stream cam0's already (line 10) "
			 "(allowed: a ring.shm no other stream uses; its consumers would read the other stream's frames)");
	expect_errors(BASE "streams:\n"
			   "  - name: cam0\n"
			   "    port: sensor0\n"
			   "    match: {udp_dst_port: 5000}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n"
			   "    ring: {shm: /gpuingest-cam1}\n"
			   "  - name: cam1\n"
			   "    port: sensor0\n"
			   "    match: {udp_dst_port: 5001}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n",
		      1, "t.yaml:15:11: streams[1].name: frame ring /gpuingest-cam1 is stream cam0's already (line 10) "
			 "(allowed: a ring.shm no other stream uses; its consumers would read the other stream's frames)");
}

/* one device, one port: a vdev by its name, a PCI function by its address (and devargs) */
static void test_duplicate_device(void **state)
{
	(void)state;
	expect_errors(BASE "  - name: sensor1\n"
			   "    device: net_null0,size=64\n"
			   "    rx_queues: [{lcore: 2, mempool: pool0}]\n",
		      1, "t.yaml:10:13: ports[1].device: 'net_null0,size=64' is port sensor0's device already (line 5) "
			 "(allowed: a device no other port names; one port takes all of a device's rx queues)");
	expect_errors(BASE_POOL "ports:\n"
				"  - {name: a, device: '0000:03:00.0', rx_queues: [{lcore: 1, mempool: pool0}]}\n"
				"  - {name: b, device: '03:00.0', rx_queues: [{lcore: 2, mempool: pool0}]}\n",
		      1, "t.yaml:5:23: ports[1].device: '03:00.0' is port a's device already (line 4) "
			 "(allowed: a device no other port names; one port takes all of a device's rx queues)");
	/* other devargs do not make another device: the daemon finds a port by its address */
	expect_errors(BASE_POOL "ports:\n"
				"  - {name: a, device: '0000:AF:00.0', rx_queues: [{lcore: 1, mempool: pool0}]}\n"
				"  - {name: b, device: '0000:af:00.0', devargs: 'txq_inline_max=0', "
				"rx_queues: [{lcore: 2, mempool: pool0}]}\n",
		      1, "t.yaml:5:23: ports[1].device: '0000:af:00.0' is port a's device already (line 4) "
			 "(allowed: a device no other port names; one port takes all of a device's rx queues)");
	/* not the same: another vdev of the driver, another function, another PCI domain */
	expect_ok(BASE "  - name: sensor1\n"
		       "    device: net_null1\n"
		       "    rx_queues: [{lcore: 2, mempool: pool0}]\n");
	gi_config_free(cfg);
	expect_ok(BASE_POOL "ports:\n"
			    "  - {name: a, device: '03:00.0', rx_queues: [{lcore: 1, mempool: pool0}]}\n"
			    "  - {name: b, device: '0000:03:00.1', rx_queues: [{lcore: 2, mempool: pool0}]}\n"
			    "  - {name: c, device: '0001:03:00.0', rx_queues: [{lcore: 3, mempool: pool0}]}\n");
	gi_config_free(cfg);
}

/* an lcore polls at most 16 queues, of any ports; a port may have up to 128 */
static void test_queues_per_lcore(void **state)
{
	(void)state;
	char yaml[8192];
	size_t n = (size_t)snprintf(yaml, sizeof(yaml), BASE_POOL "ports:\n  - name: p0\n    device: net_null0\n"
								 "    rx_queues:\n");
	for (int q = 0; q < 17; q++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "      - {lcore: 1, mempool: pool0}\n");
	expect_errors(yaml, 1, "t.yaml:23:17: ports[0].rx_queues[16].lcore: lcore 1 polls 16 rx queues before this one "
			       "(allowed: at most 16 queues per lcore, of any ports; give this queue another lcore)");
	/* 128 queues of one port, 16 to an lcore */
	n = (size_t)snprintf(yaml, sizeof(yaml), BASE_POOL "ports:\n  - name: p0\n    device: net_null0\n"
							  "    rx_queues:\n");
	for (int q = 0; q < 128; q++)
		n += (size_t)snprintf(yaml + n, sizeof(yaml) - n, "      - {lcore: %d, mempool: pool0}\n", 1 + q / 16);
	expect_ok(yaml);
	gi_config_free(cfg);
}

static void test_reorder_window(void **state)
{
	(void)state;
	expect_errors(BASE "streams:\n"
			   "  - name: cam0\n"
			   "    port: sensor0\n"
			   "    match: {udp_dst_port: 5000}\n"
			   "    frame: {packets: 4, payload_bytes: 1000}\n"
			   "    ring: {slots: 8}\n"
			   "    reorder_window: 8\n",
		      1, "t.yaml:15:21: streams[0].reorder_window: 8 must be less than ring.slots (allowed: 1..7)");
}

static void test_bad_shm(void **state)
{
	(void)state;
	const char *prefix = BASE "streams:\n"
				  "  - name: cam0\n"
				  "    port: sensor0\n"
				  "    match: {udp_dst_port: 5000}\n"
				  "    frame: {packets: 4, payload_bytes: 1000}\n"
				  "    ring:\n";
	char yaml[1024];
	static const char *const bad[] = { "gpuingest-cam0", "/a/b", "/", "\"\"",
					   "/01234567890123456789012345678901234567890123456" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[256];
		snprintf(yaml, sizeof(yaml), "%s      shm: %s\n", prefix, bad[i]);
		snprintf(want, sizeof(want),
			 "t.yaml:15:12: streams[0].ring.shm: '%s' is not a valid shared memory name "
			 "(allowed: '/' then 1..46 characters, no other '/')",
			 strcmp(bad[i], "\"\"") ? bad[i] : "");
		expect_errors(yaml, 1, want);
	}
	/* 46 characters after the '/' is the longest that fits */
	snprintf(yaml, sizeof(yaml), "%s      shm: %s\n", prefix, "/0123456789012345678901234567890123456789012345");
	expect_ok(yaml);
}

static void test_bad_listen(void **state)
{
	(void)state;
	static const struct {
		const char *value, *problem;
	} cases[] = {
		{ "127.0.0.1", "'127.0.0.1' has no port" },
		{ "example.com:80", "host 'example.com' is not an IP literal or localhost" },
		{ "127.0.0.1:0", "port '0' is not valid (allowed: 1..65535)" },
		{ "127.0.0.1:65536", "port '65536' is not valid (allowed: 1..65535)" },
		{ "127.0.0.1:http", "port 'http' is not valid (allowed: 1..65535)" },
		{ "::1:9475", "host '::1' is not an IP literal or localhost" },
		{ "[::1]9475", "'[::1]9475' is not [v6addr]:port" },
		{ "[zz::1]:9475", "host 'zz::1' is not an IP literal or localhost" },
	};
	char yaml[512], want[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(yaml, sizeof(yaml), BASE "stats:\n  listen: \"%s\"\n", cases[i].value);
		snprintf(want, sizeof(want), "t.yaml:10:11: stats.listen: %s", cases[i].problem);
		struct result r = load_str(yaml);
		if (strncmp(r.out, want, strlen(want)) != 0)
			print_error("want: %s\ngot:  %s", want, r.out);
		assert_int_equal(r.n_errors, 1);
		assert_int_equal(strncmp(r.out, want, strlen(want)), 0);
		free(r.out);
	}
}

static void test_payload_exceeds_mtu(void **state)
{
	(void)state;
	const char *fmt = BASE "streams:\n"
			       "  - name: cam0\n"
			       "    port: sensor0\n"
			       "    match: {udp_dst_port: 5000}\n"
			       "    frame:\n"
			       "      packets: 4\n"
			       "      payload_bytes: %u\n";
	char yaml[512];

	snprintf(yaml, sizeof(yaml), fmt, 1441u);
	expect_errors(yaml, 1, "t.yaml:15:22: streams[0].frame.payload_bytes: 1441 does not fit port sensor0's mtu 1500 "
			       "(allowed: 1..1440: mtu - 20 IPv4 - 8 UDP - 32 udp_seq)");
	snprintf(yaml, sizeof(yaml), fmt, 1440u); /* exactly fits */
	expect_ok(yaml);
}

static void test_buf_size_too_small(void **state)
{
	(void)state;
	expect_errors("memory:\n"
		      "  - name: pool0\n"
		      "    buf_size: 1600\n" BASE_PORT,
		      1, "t.yaml:3:15: memory[0].buf_size: 1600 is too small for port sensor0 (mtu 1500): "
			 "needs at least 1650 (128 headroom + mtu + 22)");
	/* one line per pool, naming the port with the largest MTU that uses it */
	expect_errors("memory:\n"
		      "  - name: pool0\n"
		      "    buf_size: 1600\n" BASE_PORT
		      "      - {lcore: 2, mempool: pool0}\n"
		      "  - name: jumbo\n"
		      "    device: net_null1\n"
		      "    mtu: 9000\n"
		      "    rx_queues: [{lcore: 3, mempool: pool0}]\n",
		      1, "t.yaml:3:15: memory[0].buf_size: 1600 is too small for port jumbo (mtu 9000): "
			 "needs at least 9150 (128 headroom + mtu + 22)");
	expect_ok("memory:\n"
		  "  - name: pool0\n"
		  "    buf_size: 1650\n" BASE_PORT);
}

/* ---- flow steering and header/data split ---- */

#define SPLIT_POOLS                \
	"memory:\n"                \
	"  - name: gpu0\n"         \
	"  - name: hdr0\n"         \
	"    kind: host_pinned\n"  \
	"  - name: dev1\n"         \
	"    kind: device\n"
#define SPLIT_PORT                   \
	"ports:\n"                   \
	"  - name: sensor0\n"        \
	"    device: 0000:03:00.0\n" \
	"    rx_queues:\n"           \
	"      - lcore: 1\n"         \
	"        mempool: gpu0\n"
#define CAM0                                     \
	"streams:\n"                             \
	"  - name: cam0\n"                       \
	"    port: sensor0\n"                    \
	"    match: {udp_dst_port: 5000}\n"      \
	"    frame: {packets: 4, payload_bytes: 1000}\n"

static void test_split(void **state)
{
	(void)state;
	/* lines 1-12 are the pools and the port; split: is line 13 */
	expect_ok(SPLIT_POOLS SPLIT_PORT
		  "        split:\n"
		  "          header_mempool: hdr0\n"
		  "          header_bytes: 78\n" CAM0);
	const struct gi_cfg_split *sp = &cfg->ports[0].queues[0].split;
	assert_true(sp->enabled);
	assert_int_equal(sp->header_bytes, 78); /* exactly the headers of udp_seq with one VLAN tag */
	assert_int_equal(sp->header_pool_index, 1);
	assert_int_equal(cfg->ports[0].queues[0].pool_index, 0);
	assert_int_equal(GI_SPLIT_MIN_HEADER_BYTES, 78);
	expect_ok(SPLIT_POOLS SPLIT_PORT "        split: {header_mempool: gpu0, header_bytes: 1024}\n");
	assert_int_equal(cfg->ports[0].queues[0].split.header_pool_index, 0); /* kind host: allowed */
	expect_ok(SPLIT_POOLS SPLIT_PORT "        split: ~\n"); /* null: no split */
	assert_false(cfg->ports[0].queues[0].split.enabled);

	expect_errors(SPLIT_POOLS SPLIT_PORT "        split: {header_bytes: 128}\n", 1,
		      "t.yaml:13:16: ports[0].rx_queues[0].split.header_mempool: missing required key");
	expect_errors(SPLIT_POOLS SPLIT_PORT "        split: {header_mempool: hdr1}\n", 1,
		      "t.yaml:13:33: ports[0].rx_queues[0].split.header_mempool: no memory pool named 'hdr1' "
		      "(defined: gpu0, hdr0, dev1)");
	expect_errors(SPLIT_POOLS SPLIT_PORT "        split: {header_mempool: dev1}\n", 1,
		      "t.yaml:13:33: ports[0].rx_queues[0].split.header_mempool: memory pool 'dev1' is of kind "
		      "device, but the CPU parses headers from segment 0 (allowed: a pool of kind host or host_pinned)");
	expect_errors(SPLIT_POOLS SPLIT_PORT "        split: {header_mempool: hdr0, header_bytes: 63}\n", 1,
		      "t.yaml:13:53: ports[0].rx_queues[0].split.header_bytes: 63 is out of range (allowed: 64..1024)");
	expect_errors(SPLIT_POOLS SPLIT_PORT "        split: {header_mempool: hdr0, header_bytes: 77}\n" CAM0, 1,
		      "t.yaml:13:53: ports[0].rx_queues[0].split.header_bytes: 77 bytes cannot hold the headers of "
		      "stream cam0 on queue 0: needs at least 78 (14 Ethernet + 4 VLAN + 20 IPv4 + 8 UDP + 32 udp_seq; "
		      "allowed: 78..1024)");
	/* no stream on the port: nothing to hold yet */
	expect_ok(SPLIT_POOLS SPLIT_PORT "        split: {header_mempool: hdr0, header_bytes: 64}\n");
	expect_errors(SPLIT_POOLS SPLIT_PORT "        split: {header_mempool: hdr0, headr_bytes: 128}\n", 1,
		      "t.yaml:13:39: ports[0].rx_queues[0].split.headr_bytes: unknown key "
		      "(allowed: header_bytes, header_mempool)");
	/* a header pool's explicit buf_size holds headroom + header_bytes */
	expect_errors("memory:\n"
		      "  - name: gpu0\n"
		      "  - name: hdr0\n"
		      "    buf_size: 256\n" SPLIT_PORT
		      "        split: {header_mempool: hdr0, header_bytes: 129}\n",
		      1, "t.yaml:4:15: memory[1].buf_size: 256 is too small for the header segment of port sensor0 "
			 "queue 0: needs at least 257 (128 headroom + split.header_bytes 129)");
	expect_ok("memory:\n"
		  "  - name: gpu0\n"
		  "  - name: hdr0\n"
		  "    buf_size: 256\n" SPLIT_PORT
		  "        split: {header_mempool: hdr0, header_bytes: 128}\n");
}

static void test_stream_queue(void **state)
{
	(void)state;
	const char *fmt = BASE "      - lcore: 2\n"
			       "        mempool: pool0\n"
			       "streams:\n"
			       "  - name: cam0\n"
			       "    port: sensor0\n"
			       "    queue: %s\n"
			       "    match: {udp_dst_port: 5000}\n"
			       "    frame: {packets: 4, payload_bytes: 1000}\n";
	char yaml[512];

	snprintf(yaml, sizeof(yaml), fmt, "1");
	expect_ok(yaml);
	assert_int_equal(cfg->streams[0].queue, 1);
	snprintf(yaml, sizeof(yaml), fmt, "2");
	expect_errors(yaml, 1, "t.yaml:14:12: streams[0].queue: stream cam0: 2 is not an rx queue of port sensor0, "
			       "which has 2 (allowed: 0..1)");
	snprintf(yaml, sizeof(yaml), fmt, "128");
	expect_errors(yaml, 1, "t.yaml:14:12: streams[0].queue: 128 is out of range (allowed: 0..127)");
	snprintf(yaml, sizeof(yaml), fmt, "-1");
	expect_errors(yaml, 1, "t.yaml:14:12: streams[0].queue: -1 is out of range (allowed: 0..127)");
}

static void test_flow_options(void **state)
{
	(void)state;
	expect_ok(BASE "    flow_isolation: yes\n");
	assert_true(cfg->ports[0].flow_isolation);
	assert_true(cfg->ports[0].flow_steering);
	expect_ok(BASE "    flow_steering: off\n");
	assert_false(cfg->ports[0].flow_steering);
	expect_errors(BASE "    flow_isolation: true\n    flow_steering: false\n", 1,
		      "t.yaml:9:21: ports[0].flow_isolation: isolation with flow_steering: false would drop every "
		      "packet: isolated mode only delivers what an rte_flow rule matches (allowed: false, or set "
		      "flow_steering: true)");
	expect_errors(BASE "    flow_steering: maybe\n", 1,
		      "t.yaml:9:20: ports[0].flow_steering: 'maybe' is not a boolean (allowed: true, false, yes, no, on, off)");
}

/* rocev2: 4791 by default, QPs share it, rocev2: keys land where streams_start() reads them. */
static void test_rocev2_streams(void **state)
{
	(void)state;
	expect_ok(BASE "streams:\n"
		       "  - name: rdma0\n"
		       "    port: sensor0\n"
		       "    format: rocev2\n"
		       "    match: {dst_qp: 16777215}\n"
		       "    rocev2: {base_va: 0xffff800000000000, icrc: ignore, close_on: last}\n"
		       "    frame: {packets: 8, payload_bytes: 1024}\n"
		       "  - name: rdma1\n"
		       "    port: sensor0\n"
		       "    format: rocev2\n"
		       "    match: {dst_qp: 0, udp_dst_port: 4791}\n"
		       "    frame: {packets: 8, payload_bytes: 1024}\n");
	assert_int_equal(cfg->streams[0].udp_dst_port, 4791);
	assert_int_equal(cfg->streams[0].rocev2_dst_qp, 0xffffff);
	assert_true(cfg->streams[0].rocev2.given);
	assert_true(cfg->streams[0].rocev2.base_va == 0xffff800000000000ull);
	assert_int_equal(cfg->streams[0].rocev2.icrc, GI_ROCEV2_ICRC_IGNORE);
	assert_int_equal(cfg->streams[0].rocev2.close_on, GI_ROCEV2_CLOSE_LAST);
	assert_int_equal(cfg->streams[1].rocev2_dst_qp, 0);
	assert_false(cfg->streams[1].rocev2.given);
	assert_int_equal(cfg->streams[1].rocev2.icrc, GI_ROCEV2_ICRC_VERIFY);
	assert_int_equal(cfg->streams[1].rocev2.close_on, GI_ROCEV2_CLOSE_NONE);
	assert_true(cfg->streams[1].rocev2.base_va == 0);
	expect_errors(BASE "streams:\n"
			   "  - name: rdma0\n"
			   "    port: sensor0\n"
			   "    format: rocev2\n"
			   "    match: {dst_qp: 16777216}\n"
			   "    frame: {packets: 8, payload_bytes: 1024}\n",
		      1, "t.yaml:13:21: streams[0].match.dst_qp: 16777216 is out of range (allowed: 0..16777215)");
}

/*
 * HSB's record: rocev2.frame_end auto by default (every rocev2 stream
 * carries the value; only profile hsb reads it), strict packet and embedded
 * on request; a frame slot has a bit for a record packet of its own unless
 * the stream is told the record is embedded.
 */
static void test_rocev2_frame_end(void **state)
{
	(void)state;
#define HSB_STREAM(NAME, QP, EXTRA)                                                                        \
	"  - name: " NAME "\n"                                                                            \
	"    port: sensor0\n"                                                                             \
	"    format: rocev2\n"                                                                            \
	"    match: {dst_qp: " QP "}\n"                                                                   \
	"    frame: {payload_bytes: 1408, bytes: 100000}\n"                                               \
	"    rocev2: {profile: hsb, placement: va, close_on: imm" EXTRA "}\n"
	expect_ok(BASE "streams:\n" HSB_STREAM("auto", "1", "") HSB_STREAM("own", "2", ", frame_end: packet")
		       HSB_STREAM("emb", "3", ", frame_end: embedded") HSB_STREAM("either", "4", ", frame_end: auto")
		  "  - name: plain\n"
		  "    port: sensor0\n"
		  "    format: rocev2\n"
		  "    match: {dst_qp: 5}\n"
		  "    frame: {packets: 8, payload_bytes: 1024}\n");
#undef HSB_STREAM
	const int want[] = { GI_ROCEV2_END_AUTO, GI_ROCEV2_END_PACKET, GI_ROCEV2_END_EMBEDDED, GI_ROCEV2_END_AUTO,
			     GI_ROCEV2_END_AUTO };
	const uint32_t slot[] = { 73, 73, 72, 73, 8 }; /* 72 data packets (+ the record's own) */
	for (uint32_t i = 0; i < 5; i++) {
		assert_int_equal(cfg->streams[i].rocev2.frame_end, want[i]);
		assert_int_equal(gi_cfg_slot_packets(&cfg->streams[i]), slot[i]);
	}
	gi_config_free(cfg);
	expect_errors(BASE "streams:\n"
			   "  - name: x\n"
			   "    port: sensor0\n"
			   "    format: rocev2\n"
			   "    match: {dst_qp: 1}\n"
			   "    frame: {payload_bytes: 1408, bytes: 100000}\n"
			   "    rocev2: {profile: hsb, placement: va, close_on: imm, frame_end: sometimes}\n",
		      1, "t.yaml:15:69: streams[0].rocev2.frame_end: 'sometimes' is not a valid value (allowed: auto, "
			 "packet, embedded)");
}

static void test_multiple_errors(void **state)
{
	(void)state;
	const char *yaml = BASE "    mtu: 10000\n"
				"    promiscuous: sure\n"
				"streams:\n"
				"  - name: cam0\n"
				"    port: sensor1\n"
				"    match: {udp_dst_port: 0}\n";
	struct result r = load_str(yaml);

	assert_int_equal(r.ret, -EINVAL);
	assert_int_equal(r.n_errors, 5);
	assert_int_equal(count_lines(r.out), 5);
	/* parse errors in document order, then the cross-checks */
	const char *want[] = {
		"t.yaml:9:10: ports[0].mtu: 10000 is out of range (allowed: 68..9600)\n",
		"t.yaml:10:18: ports[0].promiscuous: 'sure' is not a boolean",
		"t.yaml:14:27: streams[0].match.udp_dst_port: 0 is out of range (allowed: 1..65535)\n",
		"t.yaml:12:5: streams[0].frame: missing required key\n",
		"t.yaml:13:11: streams[0].port: no port named 'sensor1' (defined: sensor0)\n",
	};
	const char *at = r.out;
	for (size_t i = 0; i < 5; i++) {
		const char *hit = strstr(at, want[i]);
		if (!hit)
			print_error("missing (in order): %s\nin:\n%s", want[i], r.out);
		assert_non_null(hit);
		at = hit;
	}
	free(r.out);
	gi_config_free(cfg);
}

static void test_missing_file(void **state)
{
	char path[512];
	(void)state;

	snprintf(path, sizeof(path), "%s/does-not-exist.yaml", configs_dir);
	struct result r = load_file(path);
	char want[600];
	snprintf(want, sizeof(want), "cannot read config %s: No such file or directory\n", path);
	assert_int_equal(r.ret, -ENOENT);
	assert_string_equal(r.out, want);
	free(r.out);
	gi_config_free(cfg);
}

static void test_no_errf(void **state)
{
	unsigned n = 0;
	(void)state;

	assert_int_equal(gi_config_load_string("t.yaml", "ports: 1\n", 9, cfg, NULL, &n), -EINVAL);
	assert_int_equal(n, 2); /* ports is not a list; memory is missing */
	gi_config_free(cfg);
}

static void test_restart_needed(void **state)
{
	struct gi_config *next = calloc(1, sizeof(*next));
	const char *stream = "streams:\n"
			     "  - name: cam0\n"
			     "    port: sensor0\n"
			     "    match: {udp_dst_port: 5000}\n"
			     "    frame: {packets: 4, payload_bytes: 1000}\n";
	char yaml[1024], *out = NULL;
	size_t len = 0;
	unsigned n;
	FILE *errf;
	(void)state;

	assert_non_null(next);
	snprintf(yaml, sizeof(yaml), "%s%seal: {args: [a, b]}\n", BASE, stream);
	expect_ok(yaml);
	/* only [reload] keys change: applied live */
	snprintf(yaml, sizeof(yaml),
		 "%s        batch: {timeout_us: 7}\n%s    frame_timeout_ms: 5\n"
		 "eal: {args: [a, b]}\nlog: {level: debug}\nstats: {status_interval_ms: 10}\n",
		 BASE, stream);
	assert_int_equal(gi_config_load_string("n.yaml", yaml, strlen(yaml), next, NULL, &n), 0);
	assert_int_equal(gi_config_restart_needed(cfg, next, NULL), 0);
	gi_config_free(next);

	/* a changed mtu, EAL argument and an extra stream need a restart */
	snprintf(yaml, sizeof(yaml),
		 "%s    mtu: 9000\n%s  - name: cam1\n    port: sensor0\n    match: {udp_dst_port: 5001}\n"
		 "    frame: {packets: 4, payload_bytes: 1000}\neal: {args: [a, c]}\n",
		 BASE, stream);
	assert_int_equal(gi_config_load_string("n.yaml", yaml, strlen(yaml), next, NULL, &n), 0);
	errf = open_memstream(&out, &len);
	assert_int_equal(gi_config_restart_needed(cfg, next, errf), 3);
	fclose(errf);
	assert_string_equal(out, "n.yaml: eal.args: changed from [a, b] to [a, c] (needs a restart)\n"
				 "n.yaml: ports[0].mtu: changed from 1500 to 9000 (needs a restart)\n"
				 "n.yaml: streams: number of items changed from 1 to 2 (needs a restart)\n");
	free(out);
	gi_config_free(next);
	gi_config_free(cfg);
	free(next);
}

/*
 * Every .yaml in tests/configs is broken on purpose and lists what it expects
 * in `# expect: LINE:COL: key: problem` lines: the loader must report
 * exactly those errors (as FILE:LINE:COL: ...) and no others.
 */
static void test_config_files(void **state)
{
	DIR *d = opendir(configs_dir);
	struct dirent *e;
	unsigned files = 0;
	(void)state;

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[768], line[512], want[1536];
		unsigned expected = 0;
		FILE *f;

		if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", configs_dir, e->d_name);
		struct result r = load_file(path);
		f = fopen(path, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "# expect: ", 10) != 0)
				continue;
			expected++;
			snprintf(want, sizeof(want), "%s:%s", path, line + 10);
			if (!strstr(r.out, want))
				print_error("%s: missing error\n  %sgot:\n%s", e->d_name, want, r.out);
			assert_non_null(strstr(r.out, want));
		}
		fclose(f);
		if (expected == 0 || r.n_errors != expected)
			print_error("%s: expected %u errors, got %u:\n%s", e->d_name, expected, r.n_errors, r.out);
		assert_true(expected > 0);
		assert_int_equal(r.n_errors, expected);
		assert_int_equal(r.ret, -EINVAL);
		free(r.out);
		gi_config_free(cfg);
		files++;
	}
	closedir(d);
	assert_true(files >= 10);
}

/* format custom: a full map loads into the kernels' struct; hex masks; defaults; reload; split headers. */
static void test_custom_streams(void **state)
{
	(void)state;
	expect_ok(BASE "streams:\n"
		       "  - name: lidar0\n"
		       "    port: sensor0\n"
		       "    match: {udp_dst_port: 5000}\n"
		       "    format: custom\n"
		       "    frame: {packets: 64, payload_bytes: 1024}\n"
		       "    custom:\n"
		       "      header_bytes: 24\n"
		       "      payload_offset: 24\n"
		       "      trailer_bytes: 4\n"
		       "      seq: {offset: 0, width: 8, endian: little, mask: 0x0000FFFF00000000, shift: 32}\n"
		       "      frame: {offset: 8, width: 2, mask: 65520, shift: 4}\n"
		       "      index: {offset: 10, width: 2, endian: little}\n"
		       "      id: {offset: 12, width: 1}\n"
		       "      timestamp: {offset: 16, width: 8, mask: 0xffffffffffffffff}\n"
		       "  - name: lidar1\n"
		       "    port: sensor0\n"
		       "    match: {udp_dst_port: 5001}\n"
		       "    format: custom\n"
		       "    frame: {packets: 10, payload_bytes: 1000}\n"
		       "    custom: {header_bytes: 1000, payload_offset: 0, seq: {offset: 996, width: 4}}\n"
		       "  - name: lidar2\n"
		       "    port: sensor0\n"
		       "    match: {udp_dst_port: 5002}\n"
		       "    format: custom\n"
		       "    frame: {packets: 10, payload_bytes: 1000}\n"
		       "    custom: {header_bytes: 8, seq: {offset: 4, width: 4, endian: big}}\n");
	const struct gi_fmt_custom_params *m = &cfg->streams[0].custom.map;
	assert_true(cfg->streams[0].custom.given);
	assert_int_equal(m->header_bytes, 24);
	assert_int_equal(m->payload_offset, 24);
	assert_int_equal(m->trailer_bytes, 4);
	assert_int_equal(m->f[GI_CUSTOM_SEQ].width, 8);
	assert_int_equal(m->f[GI_CUSTOM_SEQ].endian, GI_CUSTOM_LITTLE);
	assert_true(m->f[GI_CUSTOM_SEQ].mask == 0xffff00000000ull);
	assert_int_equal(m->f[GI_CUSTOM_SEQ].shift, 32);
	assert_true(m->f[GI_CUSTOM_FRAME].mask == 0xfff0);
	assert_int_equal(m->f[GI_CUSTOM_FRAME].endian, GI_CUSTOM_BIG); /* default */
	assert_int_equal(m->f[GI_CUSTOM_INDEX].offset, 10);
	assert_true(m->f[GI_CUSTOM_INDEX].mask == 0); /* 0: the whole field, resolved at stream start */
	assert_true(m->f[GI_CUSTOM_TIMESTAMP].mask == ~0ull);
	assert_int_equal(cfg->streams[1].custom.map.payload_offset, 0);
	assert_int_equal(cfg->streams[2].custom.map.payload_offset, 8); /* default: header_bytes */
	assert_int_equal(cfg->streams[1].custom.map.f[GI_CUSTOM_FRAME].width, 0); /* absent */
	assert_false(cfg->streams[1].custom.map.f[GI_CUSTOM_INDEX].width);

	/* what streams_start() packs: the counters' widths from mask and shift */
	struct gi_format_params fp;
	gi_format_params_init(&fp, GI_FORMAT_CUSTOM);
	gi_fmt_custom_setup(&fp, m);
	assert_int_equal(fp.seq_bits, 16);
	assert_int_equal(fp.frame_bits, 12);

	/* a custom header must fit segment 0 of a split queue on its port */
	expect_errors(BASE_POOL "  - name: hdr0\n" BASE_PORT
		      "        split: {header_bytes: 64, header_mempool: hdr0}\n"
		      "streams:\n"
		      "  - name: cam0\n"
		      "    port: sensor0\n"
		      "    match: {udp_dst_port: 5000}\n"
		      "    format: custom\n"
		      "    frame: {packets: 4, payload_bytes: 100}\n"
		      "    custom: {header_bytes: 20, seq: {offset: 0, width: 4}}\n",
		      2,
		      "t.yaml:17:28: streams[0].custom.header_bytes: 20 does not fit segment 0 of port sensor0 queue 0 "
		      "(split.header_bytes 64 holds 14 Ethernet + 4 VLAN + 20 IPv4 + 8 UDP + up to 18; allowed: 1..18 there)");
}

/* A changed custom map needs a restart and the message names the key, masks in hex. */
static void test_custom_restart_needed(void **state)
{
	struct gi_config *next = calloc(1, sizeof(*next));
	const char *fmt = BASE "streams:\n"
			       "  - name: cam0\n"
			       "    port: sensor0\n"
			       "    match: {udp_dst_port: 5000}\n"
			       "    format: custom\n"
			       "    frame: {packets: 4, payload_bytes: 1000}\n"
			       "    custom: {header_bytes: 8, seq: {offset: 0, width: 4, mask: %s}}\n";
	char yaml[1024], *out = NULL;
	size_t len = 0;
	unsigned n;
	(void)state;

	assert_non_null(next);
	snprintf(yaml, sizeof(yaml), fmt, "0xffff");
	expect_ok(yaml);
	snprintf(yaml, sizeof(yaml), fmt, "0xfffff");
	assert_int_equal(gi_config_load_string("n.yaml", yaml, strlen(yaml), next, NULL, &n), 0);
	FILE *errf = open_memstream(&out, &len);
	assert_int_equal(gi_config_restart_needed(cfg, next, errf), 1);
	fclose(errf);
	assert_string_equal(out, "n.yaml: streams[0].custom.seq.mask: changed from 0xffff to 0xfffff (needs a restart)\n");
	free(out);
	gi_config_free(next);
	free(next);
	gi_config_free(cfg);
}

/* A tensor: block: its values resolved, and any change of it a restart (the ring's shape changes). */
static void test_tensor(void **state)
{
	struct gi_config *next = calloc(1, sizeof(*next));
	const char *fmt = BASE "streams:\n"
			       "  - name: iq0\n"
			       "    port: sensor0\n"
			       "    match: {udp_dst_port: 5000}\n"
			       "    frame: {packets: 4, payload_bytes: 1024}\n"
			       "    tensor: {sample: ci16, shape: [%s], to: cf32, scale: 3.0517578125e-05}\n";
	char yaml[1024], *out = NULL;
	size_t len = 0;
	unsigned n;
	(void)state;

	assert_non_null(next);
	snprintf(yaml, sizeof(yaml), fmt, "1024");
	expect_ok(yaml);
	const struct gi_cfg_tensor *t = &cfg->streams[0].tensor;
	assert_true(t->given);
	assert_int_equal(t->sample, GI_TS_CI16);
	assert_int_equal(t->dtype, GI_DT_CF32);
	assert_int_equal(t->big, 1); /* the default: network order */
	assert_int_equal(t->missing, GI_TM_ZERO);
	assert_int_equal(t->n_shape, 1);
	assert_int_equal(t->shape[0], 1024);
	assert_true(t->scale_v == 3.0517578125e-05 && t->offset_v == 0.0);
	snprintf(yaml, sizeof(yaml), fmt, "2, 512");
	assert_int_equal(gi_config_load_string("n.yaml", yaml, strlen(yaml), next, NULL, &n), 0);
	assert_int_equal(next->streams[0].tensor.n_shape, 2);
	FILE *errf = open_memstream(&out, &len);
	assert_int_equal(gi_config_restart_needed(cfg, next, errf), 1);
	fclose(errf);
	assert_string_equal(out, "n.yaml: streams[0].tensor.shape: changed from [1024] to [2, 512] "
				 "(needs a restart)\n");
	free(out);
	/* same with a complex integer: its own component type */
	expect_ok(BASE "streams:\n"
		       "  - name: iq0\n"
		       "    port: sensor0\n"
		       "    match: {udp_dst_port: 5000}\n"
		       "    frame: {packets: 4, payload_bytes: 1024}\n"
		       "    tensor: {sample: ci8, shape: [2048], byteorder: little}\n");
	assert_int_equal(cfg->streams[0].tensor.dtype, GI_DT_I8);
	gi_config_free(next);
	free(next);
	gi_config_free(cfg);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_config),
		cmocka_unit_test(test_demo_config),
		cmocka_unit_test(test_tensor),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_accepted_forms),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_yaml_syntax),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_wrong_type),
		cmocka_unit_test(test_bad_int),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_bad_enum),
		cmocka_unit_test(test_bad_bool),
		cmocka_unit_test(test_missing_required),
		cmocka_unit_test(test_duplicate_name),
		cmocka_unit_test(test_dangling_stream_port),
		cmocka_unit_test(test_dangling_queue_mempool),
		cmocka_unit_test(test_queue_on_main_lcore),
		cmocka_unit_test(test_eal_args_lcores),
		cmocka_unit_test(test_lcores),
		cmocka_unit_test(test_duplicate_udp_port),
		cmocka_unit_test(test_duplicate_shm),
		cmocka_unit_test(test_duplicate_device),
		cmocka_unit_test(test_queues_per_lcore),
		cmocka_unit_test(test_reorder_window),
		cmocka_unit_test(test_bad_shm),
		cmocka_unit_test(test_bad_listen),
		cmocka_unit_test(test_payload_exceeds_mtu),
		cmocka_unit_test(test_buf_size_too_small),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_stream_queue),
		cmocka_unit_test(test_flow_options),
		cmocka_unit_test(test_rocev2_streams),
		cmocka_unit_test(test_rocev2_frame_end),
		cmocka_unit_test(test_multiple_errors),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_no_errf),
		cmocka_unit_test(test_restart_needed),
		cmocka_unit_test(test_config_files),
		cmocka_unit_test(test_custom_streams),
		cmocka_unit_test(test_custom_restart_needed),
	};
	int failed;

	if (argc > 1)
		configs_dir = argv[1];
	if (argc > 2)
		config_dir = argv[2];
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return 1;
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	gi_config_free(cfg);
	free(cfg);
	return failed;
}
