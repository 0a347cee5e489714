/*
 * telemetry.h — gpuingest's commands on DPDK's telemetry socket
 * (/var/run/dpdk/<file-prefix>/dpdk_telemetry.v2, dpdk-telemetry.py):
 *
 *   /gpuingest/stats            daemon, port, queue, lcore and executor counters
 *   /gpuingest/streams          per-stream counters, one array per field
 *   /gpuingest/streams,NAME     one stream, with its frame latency histogram
 *
 * The numbers come from the same snapshot as the metrics page (stats.h).
 * Main thread: register after the stats server starts, unregister in
 * teardown before anything the snapshot reads is freed.  The callbacks run
 * on DPDK's telemetry threads (one per client connection).
 */
#ifndef GI_TELEMETRY_H
#define GI_TELEMETRY_H

struct gi_daemon;

/* Never fatal: a registration failure is logged once and the daemon runs on. */
void gi_telemetry_register(const struct gi_daemon *d);
/* From now on the commands answer with an error instead of reading `d`. */
void gi_telemetry_unregister(void);

#endif /* GI_TELEMETRY_H */
