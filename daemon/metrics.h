/*
 * metrics.h — Prometheus text exposition (format 0.0.4) of a stats snapshot.
 *
 * The stats thread fills a gi_metrics_snapshot from the live counters
 * (stats.c) and renders it here.  Rendering is a pure function of the
 * snapshot so it can be unit-tested and checked by `promtool check metrics`.
 *
 * Naming (DESIGN.md): prefix gpuingest_, counters end in _total, base units
 * (seconds, bytes), labels not in names, # HELP and # TYPE for every family.
 */
#ifndef GI_METRICS_H
#define GI_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/stream.h"

struct gi_metrics_port {
	const char *name;
	uint64_t rx_packets;
	uint64_t rx_bytes;
	uint64_t rx_missed;
	uint64_t rx_nombuf;
	uint64_t rx_errors;
	/* ports[].xstats the driver offers: gpuingest_port_xstats_total{port,name} */
	uint32_t n_xstats;
	const char *const *xstat_names;
	const uint64_t *xstat_values;
};

struct gi_metrics_queue {
	const char *port;
	uint32_t queue;
	uint32_t lcore;
	uint64_t rx_packets;
	uint64_t batches_published;
	uint64_t ring_full_drops;   /* packets */
	uint64_t ring_occupancy;    /* slots published and not completed */
	uint32_t ring_slots;
};

/* an mbuf pool: in_use returns to its idle value once traffic stops (leak check) */
struct gi_metrics_pool {
	const char *name;
	uint64_t in_use;  /* mbufs allocated (not in the pool or a per-lcore cache) */
	uint64_t size;    /* mbufs in the pool */
};

struct gi_metrics_lcore {
	uint32_t lcore;
	uint64_t idle_polls;   /* rx_burst calls that returned nothing */
	uint64_t busy_polls;
};

struct gi_metrics_stream {
	const char *name;
	struct gi_stream_counters c;
	struct gi_hist frame_latency;
	struct gi_hist frame_assembly; /* last - first NIC time per frame, when nic_realtime */
	bool nic_realtime;             /* its port timestamps in CLOCK_REALTIME (rx_timestamp) */
	uint64_t consumer_faults[GI_CFAULT__COUNT]; /* kernels/frame.h */
};

struct gi_metrics_snapshot {
	const char *version;
	const char *dpdk_version;
	const char *backend;       /* executor backend in use: host, cuda, gpudev */
	int up;
	double uptime_seconds;
	uint32_t n_ports;
	const struct gi_metrics_port *ports;
	uint32_t n_queues;
	const struct gi_metrics_queue *queues;
	uint32_t n_lcores;
	const struct gi_metrics_lcore *lcores;
	uint32_t n_pools;
	const struct gi_metrics_pool *pools;
	uint32_t n_streams;
	const struct gi_metrics_stream *streams;
	uint64_t batches_completed;
	uint64_t executor_busy_ns;
	/* busy_ns delta / wall-clock delta over the last window of >= 1 s that
	 * ended at a snapshot (since start until the first such window); 0..1 */
	double executor_busy_ratio;
	uint32_t executor_inline_workers; /* workers their rx lcore runs now (mode inline, or auto's choice) */
	uint64_t executor_auto_trials;    /* host auto: workers tried on their own thread */
	/* drops[GI_DROP_RING_FULL] is the sum over queues; the others come from the executor */
	uint64_t drops[GI_DROP__COUNT];
	struct gi_hist batch_latency;
	struct gi_hist batch_service;  /* the executor's service time per batch */
	uint64_t config_reloads_ok;
	uint64_t config_reloads_error;
	uint64_t wake_refused;     /* requests the wake socket refused (daemon/wake_server.h) */
};

/* A growable text buffer. */
struct gi_buf {
	char *data;
	size_t len;
	size_t cap;
};

void gi_buf_reset(struct gi_buf *b);
void gi_buf_free(struct gi_buf *b);
int gi_buf_printf(struct gi_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Append the whole exposition for `s` to `out`.  Label values are escaped
 * (backslash, double quote, newline) as the format requires.
 * Returns 0 or -ENOMEM.
 */
int gi_metrics_render(const struct gi_metrics_snapshot *s, struct gi_buf *out);

#endif /* GI_METRICS_H */
