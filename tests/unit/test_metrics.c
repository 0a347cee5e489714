/*
 * test_metrics.c — the Prometheus exposition of a stats snapshot: exact
 * sample lines, one HELP/TYPE per family with its samples together,
 * cumulative histograms, label escaping, and `promtool check metrics`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/metrics.h"

#define ODD_NAME "cam\"0\\x\nz"           /* as configured */
#define ODD_ESCAPED "cam\\\"0\\\\x\\nz"   /* as it must appear in a label */

static const char *const xstat_names[2] = { "rx_discards_phy", "rx_out_of_buffer" };
static const uint64_t xstat_values[2] = { 42, 7 };
static struct gi_metrics_port ports[2] = {
	{ "sensor0", 1000, 64000, 3, 4, 5, 2, xstat_names, xstat_values },
	{ "sensor1", 2000, 128000, 0, 0, 1, 0, NULL, NULL },
};
static struct gi_metrics_queue queues[2] = {
	{ .port = "sensor0", .queue = 0, .lcore = 2, .rx_packets = 600, .batches_published = 60,
	  .ring_occupancy = 3, .ring_slots = 256 },
	{ .port = "sensor0", .queue = 1, .lcore = 3, .rx_packets = 400, .batches_published = 40,
	  .ring_occupancy = 0, .ring_slots = 256 },
};
static struct gi_metrics_lcore lcores[2] = {
	{ 2, 111, 222 },
	{ 3, 333, 444 },
};
static struct gi_metrics_pool pools[1] = {
	{ .name = "pool0", .in_use = 96, .size = 16384 },
};
static struct gi_metrics_stream streams[2];

static void fill_snapshot(struct gi_metrics_snapshot *s, const char *second_stream)
{
	memset(streams, 0, sizeof(streams));
	streams[0].name = "cam0";
	streams[0].c = (struct gi_stream_counters){ .packets = 12345, .bytes = 987654321,
		.lost = 2, .duplicates = 3, .late = 4, .reordered = 5, .frames = { 10, 2, 1 } };
	gi_hist_observe(&streams[0].frame_latency, 800);       /* ≤ 1 µs */
	gi_hist_observe(&streams[0].frame_latency, 3000);      /* ≤ 5 µs */
	gi_hist_observe(&streams[0].frame_latency, 3000);
	gi_hist_observe(&streams[0].frame_latency, 2000000000); /* +Inf */
	streams[0].consumer_faults[GI_CFAULT_WAITERS_STALE] = 2;
	streams[1].name = second_stream;
	streams[1].c.packets = 7;
	gi_hist_observe(&streams[1].frame_latency, 250000);

	memset(s, 0, sizeof(*s));
	s->version = "0.1.0";
	s->dpdk_version = "22.11.11";
	s->backend = "host";
	s->up = 1;
	s->uptime_seconds = 12.5;
	s->n_ports = 2;
	s->ports = ports;
	s->n_queues = 2;
	s->queues = queues;
	s->n_lcores = 2;
	s->lcores = lcores;
	s->n_pools = 1;
	s->pools = pools;
	s->n_streams = 2;
	s->streams = streams;
	s->batches_completed = 99;
	s->executor_busy_ns = 1500000000ull;
	s->executor_busy_ratio = 0.25;
	s->executor_inline_workers = 2;
	s->executor_auto_trials = 3;
	s->drops[GI_DROP_RING_FULL] = 17;
	s->drops[GI_DROP_MALFORMED_MAGIC] = 1;
	for (int i = 0; i < 5; i++)
		gi_hist_observe(&s->batch_latency, 20000); /* ≤ 25 µs */
	gi_hist_observe(&s->batch_latency, 1000);           /* ≤ 1 µs, on the bound */
	gi_hist_observe(&s->batch_service, 4000);           /* ≤ 5 µs */
	s->config_reloads_ok = 2;
	s->config_reloads_error = 1;
	s->wake_refused = 9;
}

static char *render(const char *second_stream)
{
	struct gi_metrics_snapshot s;
	struct gi_buf b = { 0 };
	fill_snapshot(&s, second_stream);
	assert_int_equal(gi_metrics_render(&s, &b), 0);
	assert_non_null(b.data);
	assert_int_equal(strlen(b.data), b.len);
	return b.data;
}

/* `line` must be a whole line of `text`. */
static void assert_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)); p++) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return;
	}
	fail_msg("missing line: %s", line);
}

static void test_sample_lines(void **state)
{
	(void)state;
	char *t = render(ODD_NAME);
	static const char *const lines[] = {
		"# HELP gpuingest_up 1 while the daemon runs and its data path is started.",
		"# TYPE gpuingest_up gauge",
		"gpuingest_up 1",
		"gpuingest_build_info{version=\"0.1.0\",dpdk=\"22.11.11\",backend=\"host\"} 1",
		"gpuingest_uptime_seconds 12.5",
		"# TYPE gpuingest_port_rx_packets_total counter",
		"gpuingest_port_rx_packets_total{port=\"sensor0\"} 1000",
		"gpuingest_port_rx_packets_total{port=\"sensor1\"} 2000",
		"gpuingest_port_rx_bytes_total{port=\"sensor1\"} 128000",
		"gpuingest_port_rx_missed_total{port=\"sensor0\"} 3",
		"gpuingest_port_rx_nombuf_total{port=\"sensor0\"} 4",
		"gpuingest_port_rx_errors_total{port=\"sensor0\"} 5",
		"gpuingest_queue_rx_packets_total{port=\"sensor0\",queue=\"1\"} 400",
		"gpuingest_batches_published_total{port=\"sensor0\",queue=\"0\"} 60",
		"# TYPE gpuingest_ring_occupancy gauge",
		"gpuingest_ring_occupancy{port=\"sensor0\",queue=\"0\"} 3",
		"# TYPE gpuingest_ring_slots gauge",
		"gpuingest_ring_slots{port=\"sensor0\",queue=\"1\"} 256",
		"# TYPE gpuingest_mempool_in_use gauge",
		"gpuingest_mempool_in_use{pool=\"pool0\"} 96",
		"# TYPE gpuingest_mempool_size gauge",
		"gpuingest_mempool_size{pool=\"pool0\"} 16384",
		"gpuingest_lcore_polls_total{lcore=\"2\",result=\"idle\"} 111",
		"gpuingest_lcore_polls_total{lcore=\"2\",result=\"busy\"} 222",
		"gpuingest_lcore_polls_total{lcore=\"3\",result=\"busy\"} 444",
		"gpuingest_batches_completed_total 99",
		"gpuingest_executor_busy_seconds_total 1.5",
		"# TYPE gpuingest_executor_busy_ratio gauge",
		"gpuingest_executor_busy_ratio 0.25",
		"# TYPE gpuingest_executor_inline_workers gauge",
		"gpuingest_executor_inline_workers 2",
		"# TYPE gpuingest_executor_auto_trials_total counter",
		"gpuingest_executor_auto_trials_total 3",
		"# TYPE gpuingest_port_xstats_total counter",
		"gpuingest_port_xstats_total{port=\"sensor0\",name=\"rx_discards_phy\"} 42",
		"gpuingest_port_xstats_total{port=\"sensor0\",name=\"rx_out_of_buffer\"} 7",
		"gpuingest_dropped_packets_total{reason=\"ring_full\"} 17",
		"gpuingest_dropped_packets_total{reason=\"malformed_magic\"} 1",
		"gpuingest_dropped_packets_total{reason=\"malformed_geometry\"} 0",
		"gpuingest_stream_packets_total{stream=\"cam0\"} 12345",
		"gpuingest_stream_bytes_total{stream=\"cam0\"} 987654321",
		"gpuingest_stream_lost_packets_total{stream=\"cam0\"} 2",
		"gpuingest_stream_duplicate_packets_total{stream=\"cam0\"} 3",
		"gpuingest_stream_late_packets_total{stream=\"cam0\"} 4",
		"gpuingest_stream_reordered_packets_total{stream=\"cam0\"} 5",
		"gpuingest_stream_frames_total{stream=\"cam0\",state=\"complete\"} 10",
		"gpuingest_stream_frames_total{stream=\"cam0\",state=\"partial\"} 2",
		"gpuingest_stream_frames_total{stream=\"cam0\",state=\"timed_out\"} 1",
		"# TYPE gpuingest_executor_batch_seconds histogram",
		"gpuingest_executor_batch_seconds_bucket{le=\"2.5e-06\"} 0",
		"gpuingest_executor_batch_seconds_bucket{le=\"5e-06\"} 1",
		"gpuingest_executor_batch_seconds_count 1",
		"# TYPE gpuingest_batch_latency_seconds histogram",
		"gpuingest_batch_latency_seconds_bucket{le=\"1e-06\"} 1",
		"gpuingest_batch_latency_seconds_bucket{le=\"1e-05\"} 1",
		"gpuingest_batch_latency_seconds_bucket{le=\"2.5e-05\"} 6",
		"gpuingest_batch_latency_seconds_bucket{le=\"+Inf\"} 6",
		"gpuingest_batch_latency_seconds_sum 0.000101",
		"gpuingest_batch_latency_seconds_count 6",
		"gpuingest_frame_latency_seconds_bucket{stream=\"cam0\",le=\"1e-06\"} 1",
		"gpuingest_frame_latency_seconds_bucket{stream=\"cam0\",le=\"5e-06\"} 3",
		"gpuingest_frame_latency_seconds_bucket{stream=\"cam0\",le=\"1\"} 3",
		"gpuingest_frame_latency_seconds_bucket{stream=\"cam0\",le=\"+Inf\"} 4",
		"gpuingest_frame_latency_seconds_sum{stream=\"cam0\"} 2.0000068",
		"gpuingest_frame_latency_seconds_count{stream=\"cam0\"} 4",
		"gpuingest_config_reloads_total{result=\"ok\"} 2",
		"gpuingest_config_reloads_total{result=\"error\"} 1",
		"# TYPE gpuingest_consumer_faults_total counter",
		"gpuingest_consumer_faults_total{stream=\"cam0\",kind=\"waiters_implausible\"} 0",
		"gpuingest_consumer_faults_total{stream=\"cam0\",kind=\"waiters_stale\"} 2",
		"gpuingest_consumer_faults_total{stream=\"cam0\",kind=\"ring_name_gone\"} 0",
		"# TYPE gpuingest_wake_refused_total counter",
		"gpuingest_wake_refused_total 9",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_line(t, lines[i]);
	assert_null(strstr(t, "gpuingest_port_xstats_total{port=\"sensor1\"")); /* no xstats configured */
	free(t);
}

static void test_every_drop_reason(void **state)
{
	(void)state;
	static const char *const names[GI_DROP__COUNT] = GI_DROP_REASON_NAMES;
	struct gi_metrics_snapshot s = { .version = "v", .dpdk_version = "d", .backend = "b" };
	struct gi_buf b = { 0 };
	assert_int_equal(gi_metrics_render(&s, &b), 0);
	for (unsigned r = 0; r < GI_DROP__COUNT; r++) {
		char line[128];
		snprintf(line, sizeof(line), "gpuingest_dropped_packets_total{reason=\"%s\"} 0",
			 names[r]);
		assert_line(b.data, line);
	}
	gi_buf_free(&b);
}

static void test_label_escaping(void **state)
{
	(void)state;
	char *t = render(ODD_NAME);
	assert_line(t, "gpuingest_stream_packets_total{stream=\"" ODD_ESCAPED "\"} 7");
	assert_line(t, "gpuingest_stream_frames_total{stream=\"" ODD_ESCAPED
		       "\",state=\"timed_out\"} 0");
	assert_line(t, "gpuingest_frame_latency_seconds_bucket{stream=\"" ODD_ESCAPED
		       "\",le=\"0.00025\"} 1");
	/* the raw newline never reaches the page */
	assert_null(strstr(t, "x\nz"));
	free(t);
}

/* The family a sample line belongs to, given the families declared so far. */
static int sample_family_ok(const char *line, const char *family, const char *type)
{
	size_t n = strlen(family);
	if (strncmp(line, family, n) != 0)
		return 0;
	const char *rest = line + n;
	if (strcmp(type, "histogram") == 0) {
		if (strncmp(rest, "_bucket", 7) == 0)
			rest += 7;
		else if (strncmp(rest, "_sum", 4) == 0)
			rest += 4;
		else if (strncmp(rest, "_count", 6) == 0)
			rest += 6;
	}
	return *rest == '{' || *rest == ' ';
}

static void test_families_whole(void **state)
{
	(void)state;
	char *t = render(ODD_NAME);
	char seen[64][80];
	unsigned n_seen = 0;
	char family[80] = "", type[16] = "";
	int expect_type = 0;

	for (char *save = NULL, *line = strtok_r(t, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[80], rest[128];
		if (sscanf(line, "# HELP %79s %127[^\n]", name, rest) == 2) {
			assert_false(expect_type);
			for (unsigned i = 0; i < n_seen; i++)
				if (strcmp(seen[i], name) == 0)
					fail_msg("family %s declared twice", name);
			assert_true(n_seen < 64);
			strcpy(seen[n_seen++], name);
			strcpy(family, name);
			expect_type = 1;
		} else if (sscanf(line, "# TYPE %79s %15s", name, type) == 2) {
			assert_true(expect_type);
			assert_string_equal(name, family);
			expect_type = 0;
		} else {
			assert_false(expect_type);
			assert_true(line[0] != '#');
			if (!sample_family_ok(line, family, type))
				fail_msg("sample outside its family %s: %s", family, line);
		}
	}
	assert_int_equal(n_seen, 37);
	free(t);
}

/* Every histogram series: le increasing, counts cumulative, _count = +Inf bucket. */
static void test_histograms_cumulative(void **state)
{
	(void)state;
	static const char *const want_le[GI_HIST_BUCKETS] = {
		"1e-06", "2.5e-06", "5e-06", "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025",
		"0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.1", "1", "+Inf",
	};
	char *t = render("cam1");
	const char *series[] = {
		"gpuingest_batch_latency_seconds_bucket{",
		"gpuingest_frame_latency_seconds_bucket{stream=\"cam0\",",
		"gpuingest_frame_latency_seconds_bucket{stream=\"cam1\",",
	};
	const char *counts[] = {
		"gpuingest_batch_latency_seconds_count ",
		"gpuingest_frame_latency_seconds_count{stream=\"cam0\"} ",
		"gpuingest_frame_latency_seconds_count{stream=\"cam1\"} ",
	};
	for (unsigned k = 0; k < 3; k++) {
		const char *p = t;
		unsigned long long prev = 0, v = 0;
		for (unsigned i = 0; i < GI_HIST_BUCKETS; i++) {
			p = strstr(p, series[k]);
			assert_non_null(p);
			p += strlen(series[k]);
			char le[32];
			assert_int_equal(sscanf(p, "le=\"%31[^\"]\"} %llu", le, &v), 2);
			assert_string_equal(le, want_le[i]);
			assert_true(v >= prev);
			prev = v;
		}
		assert_null(strstr(p, series[k])); /* exactly GI_HIST_BUCKETS buckets */
		const char *c = strstr(t, counts[k]);
		assert_non_null(c);
		assert_int_equal(strtoull(c + strlen(counts[k]), NULL, 10), v);
	}
	free(t);
}

static void test_deterministic_and_reusable(void **state)
{
	(void)state;
	struct gi_metrics_snapshot s;
	struct gi_buf b = { 0 };
	fill_snapshot(&s, "cam1");
	assert_int_equal(gi_metrics_render(&s, &b), 0);
	char *first = strdup(b.data);
	size_t cap = b.cap;
	gi_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(gi_metrics_render(&s, &b), 0);
	assert_string_equal(b.data, first);
	assert_int_equal(b.cap, cap); /* a reused buffer does not grow again */
	free(first);
	gi_buf_free(&b);
	assert_null(b.data);
}

static void test_buf_printf_grows(void **state)
{
	(void)state;
	struct gi_buf b = { 0 };
	char chunk[1000];
	memset(chunk, 'a', sizeof(chunk) - 1);
	chunk[sizeof(chunk) - 1] = '\0';
	for (int i = 0; i < 50; i++)
		assert_int_equal(gi_buf_printf(&b, "%s%d\n", chunk, i), 0);
	assert_true(b.cap > b.len);
	assert_int_equal(strlen(b.data), b.len);
	assert_memory_equal(b.data + b.len - 3, "49\n", 3);
	gi_buf_free(&b);
}

static const char *find_promtool(char *path, size_t len)
{
	const char *env = getenv("PATH");
	if (!env)
		return NULL;
	char *dirs = strdup(env);
	const char *found = NULL;
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(path, len, "%s/promtool", d);
		if (access(path, X_OK) == 0)
			found = path;
	}
	free(dirs);
	return found;
}

static void promtool_check(const char *promtool, const char *text)
{
	char file[] = "/tmp/gi_metrics_XXXXXX";
	int fd = mkstemp(file);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);

	char cmd[512], out[4096] = "";
	snprintf(cmd, sizeof(cmd), "'%s' check metrics < '%s' 2>&1", promtool, file);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	unlink(file);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n != 0)
		fail_msg("promtool check metrics: status %d, output:\n%s", status, out);
}

static void test_promtool(void **state)
{
	(void)state;
	char path[4096];
	const char *promtool = find_promtool(path, sizeof(path));
	if (!promtool) {
		print_message("promtool not on PATH: skipping the lint (Debian package prometheus)\n");
		skip();
	}
	char *t = render("cam1");
	promtool_check(promtool, t);
	free(t);

	/* an idle daemon with nothing configured is valid too */
	struct gi_metrics_snapshot s = { .version = "v", .dpdk_version = "d", .backend = "b" };
	struct gi_buf b = { 0 };
	assert_int_equal(gi_metrics_render(&s, &b), 0);
	promtool_check(promtool, b.data);
	gi_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_lines),
		cmocka_unit_test(test_every_drop_reason),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_families_whole),
		cmocka_unit_test(test_histograms_cumulative),
		cmocka_unit_test(test_deterministic_and_reusable),
		cmocka_unit_test(test_buf_printf_grows),
		cmocka_unit_test(test_promtool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
