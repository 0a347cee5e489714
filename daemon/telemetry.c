/*
 * telemetry.c — /gpuingest/stats and /gpuingest/streams on DPDK telemetry.
 *
 * Why: operators already point dpdk-telemetry.py at a DPDK process to read
 * /ethdev/stats; the same socket now shows gpuingest's own counters, with
 * no HTTP listener needed.  The numbers come from gi_stats_snapshot(), the
 * code behind the metrics page, so both always agree.
 *
 * Shape (DPDK 22.11): dict keys may hold only [A-Za-z0-9_/] and a dict's
 * containers may only be arrays of scalars, so per-port, per-queue and
 * per-stream values are parallel arrays in the order of `port_names`,
 * `queue_ports`/`queue_ids` and `names`.  Floats do not exist: times are
 * integer nanoseconds and the busy fraction is parts per million.  A reply
 * is capped at 16 KiB by DPDK, which fits about 60 streams in
 * /gpuingest/streams; /gpuingest/streams,NAME always fits.
 *
 * Threads: the callbacks run on DPDK's telemetry threads, one per client
 * connection, so two may run at once.  tel_lock guards the daemon pointer:
 * main clears it (gi_telemetry_unregister) before teardown frees what a
 * snapshot reads, and DPDK has no way to unregister a command.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <rte_telemetry.h>

#include "kernels/format.h"
#include "kernels/hist.h"
#include "pmd_glue/log.h"
#include "stats.h"
#include "telemetry.h"

static pthread_mutex_t tel_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct gi_daemon *tel_daemon; /* NULL once teardown began */

/* An array container of one scalar type; NULL on allocation failure. */
static struct rte_tel_data *array(enum rte_tel_value_type type)
{
	struct rte_tel_data *a = rte_tel_data_alloc();
	if (a && rte_tel_data_start_array(a, type) != 0) {
		rte_tel_data_free(a);
		a = NULL;
	}
	return a;
}

/* Attach `a` to `d` under `name`, giving it to the library (it frees it). */
static int attach(struct rte_tel_data *d, const char *name, struct rte_tel_data *a)
{
	if (!a)
		return -ENOMEM;
	int rc = rte_tel_data_add_dict_container(d, name, a, 0);
	if (rc != 0)
		rte_tel_data_free(a);
	return rc;
}

typedef uint64_t (*u64_at)(const struct gi_metrics_snapshot *s, uint32_t i);

static int u64_array(struct rte_tel_data *d, const char *name, const struct gi_metrics_snapshot *s, uint32_t n,
		     u64_at get)
{
	struct rte_tel_data *a = array(RTE_TEL_U64_VAL);
	for (uint32_t i = 0; a && i < n; i++)
		rte_tel_data_add_array_u64(a, get(s, i));
	return attach(d, name, a);
}

#define AT(name, expr)                                                          \
	static uint64_t name(const struct gi_metrics_snapshot *s, uint32_t i) \
	{                                                                       \
		return (expr);                                                  \
	}
AT(port_rx_packets, s->ports[i].rx_packets)
AT(port_rx_bytes, s->ports[i].rx_bytes)
AT(port_rx_missed, s->ports[i].rx_missed)
AT(port_rx_nombuf, s->ports[i].rx_nombuf)
AT(port_rx_errors, s->ports[i].rx_errors)
AT(queue_id, s->queues[i].queue)
AT(queue_lcore, s->queues[i].lcore)
AT(queue_rx_packets, s->queues[i].rx_packets)
AT(queue_batches, s->queues[i].batches_published)
AT(queue_ring_full, s->queues[i].ring_full_drops)
AT(queue_occupancy, s->queues[i].ring_occupancy)
AT(queue_slots, s->queues[i].ring_slots)
AT(lcore_id, s->lcores[i].lcore)
AT(lcore_idle, s->lcores[i].idle_polls)
AT(lcore_busy, s->lcores[i].busy_polls)
AT(st_packets, s->streams[i].c.packets)
AT(st_bytes, s->streams[i].c.bytes)
AT(st_lost, s->streams[i].c.lost)
AT(st_duplicates, s->streams[i].c.duplicates)
AT(st_late, s->streams[i].c.late)
AT(st_reordered, s->streams[i].c.reordered)
AT(st_resyncs, s->streams[i].c.resyncs)
AT(st_metadata, s->streams[i].c.metadata)
AT(st_complete, s->streams[i].c.frames[GI_FRAMES_COMPLETE])
AT(st_partial, s->streams[i].c.frames[GI_FRAMES_PARTIAL])
AT(st_timed_out, s->streams[i].c.frames[GI_FRAMES_TIMED_OUT])
AT(st_corrupt, s->streams[i].c.frames[GI_FRAMES_CORRUPT])
AT(st_lat_sum, s->streams[i].frame_latency.sum_ns)
#undef AT

static uint64_t hist_count(const struct gi_hist *h)
{
	uint64_t n = 0;
	for (unsigned b = 0; b < GI_HIST_BUCKETS; b++)
		n += h->count[b];
	return n;
}

static uint64_t st_lat_count(const struct gi_metrics_snapshot *s, uint32_t i)
{
	return hist_count(&s->streams[i].frame_latency);
}

/* PREFIX_bounds_ns (finite upper bounds), PREFIX_buckets (cumulative, last = +Inf), _sum_ns, _count. */
static int histogram(struct rte_tel_data *d, const char *prefix, const struct gi_hist *h)
{
	static const uint64_t bounds[GI_HIST_BUCKETS - 1] = GI_HIST_BOUNDS_NS;
	char key[64];
	struct rte_tel_data *b = array(RTE_TEL_U64_VAL), *c = array(RTE_TEL_U64_VAL);
	uint64_t cum = 0;
	int rc;

	for (unsigned i = 0; b && i < GI_HIST_BUCKETS - 1; i++)
		rte_tel_data_add_array_u64(b, bounds[i]);
	for (unsigned i = 0; c && i < GI_HIST_BUCKETS; i++)
		rte_tel_data_add_array_u64(c, cum += h->count[i]);
	snprintf(key, sizeof(key), "%s_bounds_ns", prefix);
	rc = attach(d, key, b);
	snprintf(key, sizeof(key), "%s_buckets", prefix);
	rc = rc ? rc : attach(d, key, c);
	snprintf(key, sizeof(key), "%s_sum_ns", prefix);
	rc = rc ? rc : rte_tel_data_add_dict_u64(d, key, h->sum_ns);
	snprintf(key, sizeof(key), "%s_count", prefix);
	return rc ? rc : rte_tel_data_add_dict_u64(d, key, cum);
}

static int stats_fill(const struct gi_metrics_snapshot *s, struct rte_tel_data *d)
{
	static const char *const drop_names[GI_DROP__COUNT] = GI_DROP_REASON_NAMES;
	struct rte_tel_data *names, *xp, *xn, *xv;
	char key[64];
	int rc = 0;

	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "version", s->version);
	rte_tel_data_add_dict_string(d, "dpdk", s->dpdk_version);
	rte_tel_data_add_dict_string(d, "backend", s->backend);
	rte_tel_data_add_dict_u64(d, "up", (uint64_t)s->up);
	rte_tel_data_add_dict_u64(d, "uptime_ms", (uint64_t)(s->uptime_seconds * 1e3));

	names = array(RTE_TEL_STRING_VAL);
	for (uint32_t i = 0; names && i < s->n_ports; i++)
		rte_tel_data_add_array_string(names, s->ports[i].name);
	rc |= attach(d, "port_names", names);
	rc |= u64_array(d, "port_rx_packets", s, s->n_ports, port_rx_packets);
	rc |= u64_array(d, "port_rx_bytes", s, s->n_ports, port_rx_bytes);
	rc |= u64_array(d, "port_rx_missed", s, s->n_ports, port_rx_missed);
	rc |= u64_array(d, "port_rx_nombuf", s, s->n_ports, port_rx_nombuf);
	rc |= u64_array(d, "port_rx_errors", s, s->n_ports, port_rx_errors);
	/* ports[].xstats as (port, name, value) triples */
	xp = array(RTE_TEL_STRING_VAL);
	xn = array(RTE_TEL_STRING_VAL);
	xv = array(RTE_TEL_U64_VAL);
	for (uint32_t i = 0; xp && xn && xv && i < s->n_ports; i++)
		for (uint32_t k = 0; k < s->ports[i].n_xstats; k++) {
			rte_tel_data_add_array_string(xp, s->ports[i].name);
			rte_tel_data_add_array_string(xn, s->ports[i].xstat_names[k]);
			rte_tel_data_add_array_u64(xv, s->ports[i].xstat_values[k]);
		}
	rc |= attach(d, "port_xstat_ports", xp);
	rc |= attach(d, "port_xstat_names", xn);
	rc |= attach(d, "port_xstat_values", xv);

	names = array(RTE_TEL_STRING_VAL);
	for (uint32_t i = 0; names && i < s->n_queues; i++)
		rte_tel_data_add_array_string(names, s->queues[i].port);
	rc |= attach(d, "queue_ports", names);
	rc |= u64_array(d, "queue_ids", s, s->n_queues, queue_id);
	rc |= u64_array(d, "queue_lcores", s, s->n_queues, queue_lcore);
	rc |= u64_array(d, "queue_rx_packets", s, s->n_queues, queue_rx_packets);
	rc |= u64_array(d, "queue_batches_published", s, s->n_queues, queue_batches);
	rc |= u64_array(d, "queue_ring_full_drops", s, s->n_queues, queue_ring_full);
	rc |= u64_array(d, "ring_occupancy", s, s->n_queues, queue_occupancy);
	rc |= u64_array(d, "ring_slots", s, s->n_queues, queue_slots);

	rc |= u64_array(d, "lcore_ids", s, s->n_lcores, lcore_id);
	rc |= u64_array(d, "lcore_idle_polls", s, s->n_lcores, lcore_idle);
	rc |= u64_array(d, "lcore_busy_polls", s, s->n_lcores, lcore_busy);

	rte_tel_data_add_dict_u64(d, "batches_completed", s->batches_completed);
	rte_tel_data_add_dict_u64(d, "executor_busy_ns", s->executor_busy_ns);
	rte_tel_data_add_dict_u64(d, "executor_busy_ratio_ppm", (uint64_t)(s->executor_busy_ratio * 1e6 + 0.5));
	for (unsigned r = 0; r < GI_DROP__COUNT; r++) {
		snprintf(key, sizeof(key), "dropped_%s", drop_names[r]);
		rte_tel_data_add_dict_u64(d, key, s->drops[r]);
	}
	rc |= histogram(d, "batch_latency", &s->batch_latency);
	rte_tel_data_add_dict_u64(d, "config_reloads_ok", s->config_reloads_ok);
	rte_tel_data_add_dict_u64(d, "config_reloads_error", s->config_reloads_error);
	return rc ? -ENOMEM : 0;
}

static int streams_fill(const struct gi_metrics_snapshot *s, const char *only, struct rte_tel_data *d)
{
	rte_tel_data_start_dict(d);
	if (only) {
		for (uint32_t i = 0; i < s->n_streams; i++) {
			if (strcmp(s->streams[i].name, only) != 0)
				continue;
			const struct gi_stream_counters *c = &s->streams[i].c;
			rte_tel_data_add_dict_string(d, "name", s->streams[i].name);
			rte_tel_data_add_dict_u64(d, "packets", c->packets);
			rte_tel_data_add_dict_u64(d, "bytes", c->bytes);
			rte_tel_data_add_dict_u64(d, "lost", c->lost);
			rte_tel_data_add_dict_u64(d, "duplicates", c->duplicates);
			rte_tel_data_add_dict_u64(d, "late", c->late);
			rte_tel_data_add_dict_u64(d, "reordered", c->reordered);
			rte_tel_data_add_dict_u64(d, "resyncs", c->resyncs);
			rte_tel_data_add_dict_u64(d, "metadata", c->metadata);
			rte_tel_data_add_dict_u64(d, "frames_complete", c->frames[GI_FRAMES_COMPLETE]);
			rte_tel_data_add_dict_u64(d, "frames_partial", c->frames[GI_FRAMES_PARTIAL]);
			rte_tel_data_add_dict_u64(d, "frames_timed_out", c->frames[GI_FRAMES_TIMED_OUT]);
			rte_tel_data_add_dict_u64(d, "frames_corrupt", c->frames[GI_FRAMES_CORRUPT]);
			return histogram(d, "frame_latency", &s->streams[i].frame_latency) ? -ENOMEM : 0;
		}
		return -ENOENT; /* the client sees null */
	}
	struct rte_tel_data *names = array(RTE_TEL_STRING_VAL);
	int rc = 0;
	for (uint32_t i = 0; names && i < s->n_streams; i++)
		rte_tel_data_add_array_string(names, s->streams[i].name);
	rte_tel_data_add_dict_u64(d, "n_streams", s->n_streams);
	rc |= attach(d, "names", names);
	rc |= u64_array(d, "packets", s, s->n_streams, st_packets);
	rc |= u64_array(d, "bytes", s, s->n_streams, st_bytes);
	rc |= u64_array(d, "lost", s, s->n_streams, st_lost);
	rc |= u64_array(d, "duplicates", s, s->n_streams, st_duplicates);
	rc |= u64_array(d, "late", s, s->n_streams, st_late);
	rc |= u64_array(d, "reordered", s, s->n_streams, st_reordered);
	rc |= u64_array(d, "resyncs", s, s->n_streams, st_resyncs);
	rc |= u64_array(d, "metadata", s, s->n_streams, st_metadata);
	rc |= u64_array(d, "frames_complete", s, s->n_streams, st_complete);
	rc |= u64_array(d, "frames_partial", s, s->n_streams, st_partial);
	rc |= u64_array(d, "frames_timed_out", s, s->n_streams, st_timed_out);
	rc |= u64_array(d, "frames_corrupt", s, s->n_streams, st_corrupt);
	rc |= u64_array(d, "frame_latency_count", s, s->n_streams, st_lat_count);
	rc |= u64_array(d, "frame_latency_sum_ns", s, s->n_streams, st_lat_sum);
	return rc ? -ENOMEM : 0;
}

static int handle(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct gi_stats_snap st;
	int rc = -ENODEV;

	pthread_mutex_lock(&tel_lock);
	if (tel_daemon) {
		rc = gi_stats_snapshot(tel_daemon, &st);
		if (rc == 0 && strcmp(cmd, "/gpuingest/stats") == 0)
			rc = stats_fill(&st.s, d);
		else if (rc == 0)
			rc = streams_fill(&st.s, params && params[0] ? params : NULL, d);
		gi_stats_snapshot_free(&st);
	}
	pthread_mutex_unlock(&tel_lock);
	return rc;
}

void gi_telemetry_register(const struct gi_daemon *d)
{
	pthread_mutex_lock(&tel_lock);
	tel_daemon = d;
	pthread_mutex_unlock(&tel_lock);

	static int registered; /* DPDK keeps commands for the life of the process */
	if (registered)
		return;
	int rc = rte_telemetry_register_cmd("/gpuingest/stats", handle,
					    "gpuingest counters: ports, queues, lcores, executor, drops. No parameters");
	if (rc == 0)
		rc = rte_telemetry_register_cmd("/gpuingest/streams", handle,
						"gpuingest per-stream counters. Parameter: a stream name (optional)");
	if (rc != 0)
		gi_log(GI_LOG_WARNING, "DPDK telemetry: cannot register /gpuingest commands: %s; metrics are "
		       "still served on the stats socket", strerror(-rc));
	registered = 1;
}

void gi_telemetry_unregister(void)
{
	pthread_mutex_lock(&tel_lock);
	tel_daemon = NULL;
	pthread_mutex_unlock(&tel_lock);
}
