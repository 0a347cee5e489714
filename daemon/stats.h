/*
 * stats.h — one consistent read of every live counter (stats.c).
 *
 * The metrics page (HTTP threads), the DPDK telemetry commands (telemetry
 * threads) and the main thread's status line and final summary all build
 * their numbers from gi_stats_snapshot(), so they agree.  Snapshots are
 * serialised by one lock inside stats.c: callers need no locking of their
 * own, and ethdev's statistics calls are never made from two threads at once.
 */
#ifndef GI_STATS_H
#define GI_STATS_H

#include "daemon.h"
#include "metrics.h"

struct gi_stats_snap {
	struct gi_metrics_snapshot s;
	struct gi_metrics_port ports[GI_MAX_PORTS];
	struct gi_metrics_pool pools[GI_MAX_POOLS];
	const char *xstat_names[GI_MAX_PORTS][GI_PORT_MAX_XSTATS];
	uint64_t xstat_values[GI_MAX_PORTS][GI_PORT_MAX_XSTATS];
	struct gi_metrics_queue *queues;
	struct gi_metrics_lcore *lcores;
	struct gi_metrics_stream *streams;
	char (*stream_names)[GI_NAME_MAX]; /* copies: a reload may rename d->cfg's streams after the snapshot */
	char port_names[GI_MAX_PORTS][GI_NAME_MAX]; /* copies: a reload rewrites d->cfg (same names) meanwhile */
};

/* Fill `st` (0 or -ENOMEM); always pair with gi_stats_snapshot_free(). Any thread. */
int gi_stats_snapshot(const struct gi_daemon *d, struct gi_stats_snap *st);
void gi_stats_snapshot_free(struct gi_stats_snap *st);

/*
 * The snapshot lock, for live reload (reload.c): held while it swaps the
 * stream table and d->cfg, so no snapshot sees half of either.  Main thread.
 */
void gi_stats_lock(void);
void gi_stats_unlock(void);

#endif /* GI_STATS_H */
