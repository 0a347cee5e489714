/*
 * daemon.h — the running daemon: everything main() builds, in start order.
 *
 * One instance, owned by main().  The rx lcores, the executor and the stats
 * threads get pointers into it; the fields they read are fixed once the
 * daemon is READY, except what live reload (reload.c) changes: the stream
 * table (streams, stream_map, store[] — swapped with the executor at a safe
 * point and with snapshots under the stats lock), cfg (under the same
 * lock) and the rx queues' batch limits (relaxed atomics).
 */
#ifndef GI_DAEMON_H
#define GI_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "http.h"
#include "kernels/cuda_drv.h"
#include "kernels/executor.h"
#include "pmd_glue/mem.h"
#include "pmd_glue/pool.h"
#include "pmd_glue/port.h"
#include "pmd_glue/rx.h"
#include "pmd_glue/frame_store.h"
#include "wake_server.h"

struct gi_daemon {
	struct gi_config cfg;
	uint64_t start_ns;
	int quit;                     /* read by rx lcores (atomic) */

	bool eal_up;
	/* GPU backend and memory providers, resolved once after EAL init */
	bool mem_up;
	struct gi_cuda_drv cuda;      /* open only when the backend is cuda */
	struct gi_mem_choice mem;     /* never copied: regions point into it */
	uint32_t n_pools;
	struct gi_pool pools[GI_MAX_POOLS];
	uint32_t n_ports;
	uint16_t port_ids[GI_MAX_PORTS];
	struct gi_port ports[GI_MAX_PORTS];

	/* streams: frame rings and the executor's view of them */
	struct gi_frame_store store[GI_MAX_STREAMS];
	struct gi_wake_server *wake;  /* hands the rings' wake objects to consumers; NULL: they poll */
	uint64_t wake_token;          /* names its socket (kernels/frame.h) */
	struct gi_stream_rt *streams;
	uint16_t *stream_map;
	struct gi_exec_ctx exec_ctx;

	/* batch rings, one per rx queue, and the lcores that feed them */
	uint32_t n_rxq;
	struct gi_rxq *rxq;
	const char **rxq_port_name;
	uint32_t *rxq_lcore;
	struct gi_batch_ring **rings;
	struct gi_mem_region *ring_mem;
	uint32_t n_lcores;
	struct gi_rx_lcore *lcores;
	bool lcores_launched;

	struct gi_executor *exec;
	bool exec_stuck;              /* did not stop: still uses rings, pools and frame rings */
	const char *backend;
	struct gi_http *http;

	uint64_t reloads_ok;
	uint64_t reloads_error;
	/* counters of streams a reload removed or replaced (main thread; summary's accounting) */
	struct gi_stream_counters retired;
};

/* stats.c */
int gi_stats_render(void *daemon, struct gi_buf *out);

struct gi_stats_prev {
	uint64_t t_ns;
	uint64_t rx_packets;
	uint64_t placed;
	uint64_t bytes;
};
void gi_stats_status_line(const struct gi_daemon *d, struct gi_stats_prev *prev, char *buf, size_t len);
/*
 * Host mode auto: a notice line for each rx lcore whose worker's placement
 * was decided since the last call (the main loop calls it once a second).
 * Main thread.
 */
void gi_stats_auto_log(const struct gi_daemon *d);
void gi_stats_print_summary(const struct gi_daemon *d, FILE *f);

/*
 * Each thread's progress word (rx lcores, then the executor) into w[];
 * returns how many.  The watchdog pings only if every one of them moved.
 */
uint32_t gi_stats_progress(const struct gi_daemon *d, uint64_t *w, uint32_t max);

#endif /* GI_DAEMON_H */
