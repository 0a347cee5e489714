/*
 * lifecycle.h — the daemon's pieces that both start-up (main.c) and live
 * reload (reload.c) build: memory pools and ports, streams with their frame
 * rings, the stats listeners, a stream's runtime parameters.  main.c calls
 * reload.c and both call these, so the dependency runs one way.
 *
 * Main thread only.
 */
#ifndef GI_LIFECYCLE_H
#define GI_LIFECYCLE_H

#include "config.h"
#include "kernels/stream.h"

struct gi_daemon;

/* Memory pools (provider, extmem, DMA map, mempool) and ports with their rx queues and flow rules. */
int gi_daemon_pools_ports_start(struct gi_daemon *d);

/* Every stream's frame ring (and wake object) and runtime, the UDP port lookup map. */
int gi_daemon_streams_start(struct gi_daemon *d);

/* The metrics listeners from d->cfg.stats (at start, and by reload with d->http stopped). */
int gi_daemon_stats_start(struct gi_daemon *d);

/*
 * A stream's runtime parameters from its config entry: format and its
 * parameters, geometry, window, timeout (not its ring, chain link or
 * state), so start-up and reload build streams the same way.
 */
void gi_stream_rt_configure(struct gi_stream_rt *st, const struct gi_cfg_stream *cs);

#endif /* GI_LIFECYCLE_H */
