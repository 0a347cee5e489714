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

#include <stdbool.h>

#include "config.h"
#include "kernels/stream.h"
#include "pmd_glue/frame_store.h"

struct gi_daemon;

/* Memory pools (provider, extmem, DMA map, mempool) and ports with their rx queues and flow rules. */
int gi_daemon_pools_ports_start(struct gi_daemon *d);

/* Every stream's frame ring (and wake object) and runtime, the UDP port lookup map. */
int gi_daemon_streams_start(struct gi_daemon *d);

/*
 * Stream `cs`'s frame ring, as the running daemon makes them (memory kind
 * by backend, wake object served by the wake socket), into fs, with `st`'s
 * ring pointers; index is the stream's in the table it goes into.  Start-up
 * and reload make every ring this way; 0 or -errno after one log line.
 */
int gi_daemon_ring_open(struct gi_daemon *d, const struct gi_cfg_stream *cs, uint32_t index, uint64_t created_ns,
			struct gi_frame_store *fs, struct gi_stream_rt *st);

/* ... and unmake it: consumers told, the name gone first (unless another ring has it now), then memory. */
void gi_daemon_ring_close(struct gi_daemon *d, struct gi_frame_store *fs, bool unlink_name);

/*
 * What consumers did to the rings' shared objects (kernels/frame.h,
 * gi_consumer_fault): the data path counts what it meets in the wake
 * object; this looks for a ring whose name was removed or replaced, and
 * logs each kind once per stream.  Main thread, about once a second.
 */
void gi_daemon_check_consumers(struct gi_daemon *d);

/* The metrics listeners from d->cfg.stats (at start, and by reload with d->http stopped). */
int gi_daemon_stats_start(struct gi_daemon *d);

/*
 * A stream's runtime parameters from its config entry: format and its
 * parameters, geometry, window, timeout (not its ring, chain link or
 * state), so start-up and reload build streams the same way.
 */
void gi_stream_rt_configure(struct gi_stream_rt *st, const struct gi_cfg_stream *cs);

#endif /* GI_LIFECYCLE_H */
