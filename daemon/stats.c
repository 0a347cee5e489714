/*
 * stats.c — the stats registry: reads every live counter into a snapshot.
 *
 * Counters have one writer each (an rx lcore, the executor); this module
 * only reads them, with relaxed loads, from the HTTP server threads
 * (gi_stats_render), the DPDK telemetry threads (telemetry.c) or the main
 * thread (status line, final summary).  Port counters come from
 * rte_eth_stats_get() and rte_eth_xstats_get_by_id(), which ethdev does not
 * promise to be safe from two threads at once: snap_lock serialises the
 * reads (never taken on the data path).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gi_build_config.h"
#include "daemon.h"
#include "stats.h"

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The executor's busy fraction: busy_ns over wall-clock time across the
 * latest window of at least 1 s that ended at a snapshot.  Scrapers share
 * it (Prometheus every 15 s, gpuingest-stat every second), so a window is
 * "since the last snapshot at least 1 s ago", not "since my last scrape".
 * Guarded by snap_lock.
 */
static struct {
	uint64_t mark_ns, mark_busy_ns;
	double ratio;
	int have_window;
} busy_win;

static double clamp01(double v)
{
	return v < 0 ? 0 : v > 1 ? 1 : v;
}

static double busy_ratio(const struct gi_daemon *d, uint64_t busy_ns)
{
	uint64_t now = gi_now_ns();
	if (busy_win.mark_ns && now - busy_win.mark_ns >= 1000000000ull) {
		busy_win.ratio = clamp01((double)(busy_ns - busy_win.mark_busy_ns) / (double)(now - busy_win.mark_ns));
		busy_win.have_window = 1;
	}
	if (!busy_win.mark_ns || now - busy_win.mark_ns >= 1000000000ull) {
		busy_win.mark_ns = now;
		busy_win.mark_busy_ns = busy_ns;
	}
	if (busy_win.have_window)
		return busy_win.ratio;
	return now > d->start_ns ? clamp01((double)busy_ns / (double)(now - d->start_ns)) : 0;
}

static void hist_read(struct gi_hist *dst, const struct gi_hist *src)
{
	for (int b = 0; b < GI_HIST_BUCKETS; b++)
		dst->count[b] = GI_COUNTER_READ(&src->count[b]);
	dst->sum_ns = GI_COUNTER_READ(&src->sum_ns);
}

static void stream_counters_read(struct gi_stream_counters *dst, const struct gi_stream_counters *src)
{
	dst->packets = GI_COUNTER_READ(&src->packets);
	dst->bytes = GI_COUNTER_READ(&src->bytes);
	dst->lost = GI_COUNTER_READ(&src->lost);
	dst->duplicates = GI_COUNTER_READ(&src->duplicates);
	dst->late = GI_COUNTER_READ(&src->late);
	dst->reordered = GI_COUNTER_READ(&src->reordered);
	dst->resyncs = GI_COUNTER_READ(&src->resyncs);
	dst->metadata = GI_COUNTER_READ(&src->metadata);
	for (int k = 0; k < GI_FRAMES__COUNT; k++)
		dst->frames[k] = GI_COUNTER_READ(&src->frames[k]);
}

static int snapshot_locked(const struct gi_daemon *d, struct gi_stats_snap *st)
{
	struct gi_metrics_snapshot *s = &st->s;

	memset(st, 0, sizeof(*st));
	st->queues = calloc(d->n_rxq + 1, sizeof(*st->queues));
	st->lcores = calloc(d->n_lcores + 1, sizeof(*st->lcores));
	st->streams = calloc(d->cfg.n_streams + 1, sizeof(*st->streams));
	st->stream_names = calloc(d->cfg.n_streams + 1, sizeof(*st->stream_names));
	if (!st->queues || !st->lcores || !st->streams || !st->stream_names)
		return -ENOMEM;

	s->version = GI_VERSION;
	s->dpdk_version = GI_DPDK_VERSION;
	s->backend = d->backend ? d->backend : "none";
	/* 0 from the stop request on: the rx lcores are draining, then gone (main.c, stop_data_path) */
	s->up = !__atomic_load_n(&d->quit, __ATOMIC_ACQUIRE);
	s->uptime_seconds = (double)(gi_now_ns() - d->start_ns) / 1e9;

	for (uint32_t p = 0; p < d->n_ports; p++) {
		struct gi_port_stats ps;
		gi_port_stats(&d->ports[p], &ps);
		memcpy(st->port_names[p], d->cfg.ports[p].name, sizeof(st->port_names[p]));
		st->ports[p] = (struct gi_metrics_port){
			.name = st->port_names[p],
			.rx_packets = ps.rx_packets,
			.rx_bytes = ps.rx_bytes,
			.rx_missed = ps.rx_missed,
			.rx_nombuf = ps.rx_nombuf,
			.rx_errors = ps.rx_errors,
			.n_xstats = d->ports[p].n_xstats,
			.xstat_names = st->xstat_names[p],
			.xstat_values = st->xstat_values[p],
		};
		for (uint32_t k = 0; k < d->ports[p].n_xstats; k++)
			st->xstat_names[p][k] = d->ports[p].xstat_names[k];
		gi_port_xstats(&d->ports[p], st->xstat_values[p]);
	}
	s->n_ports = d->n_ports;
	s->ports = st->ports;

	for (uint32_t i = 0; i < d->n_rxq; i++) {
		const struct gi_rxq *q = &d->rxq[i];
		const char *port = d->rxq_port_name[i];
		for (uint32_t p = 0; p < d->n_ports; p++)
			if (port == d->cfg.ports[p].name) /* the snapshot's copy, not d->cfg's bytes */
				port = st->port_names[p];
		st->queues[i] = (struct gi_metrics_queue){
			.port = port,
			.queue = q->queue,
			.lcore = d->rxq_lcore[i],
			.rx_packets = GI_COUNTER_READ(&q->st.rx_packets),
			.batches_published = GI_COUNTER_READ(&q->st.batches),
			.ring_full_drops = GI_COUNTER_READ(&q->st.ring_full),
			.ring_occupancy = gi_ring_occupancy(q->ring),
			.ring_slots = q->ring->size,
		};
		s->drops[GI_DROP_RING_FULL] += st->queues[i].ring_full_drops;
	}
	s->n_queues = d->n_rxq;
	s->queues = st->queues;

	/* rte_mempool_in_use_count() counts per-lcore caches as free: approximate
	 * while the rx lcore runs, exact once it is idle, which is what leak
	 * checks compare */
	for (uint32_t i = 0; i < d->n_pools; i++)
		st->pools[i] = (struct gi_metrics_pool){
			.name = d->pools[i].name,
			.in_use = gi_pool_in_use(&d->pools[i]),
			.size = d->pools[i].n_mbufs,
		};
	s->n_pools = d->n_pools;
	s->pools = st->pools;

	for (uint32_t k = 0; k < d->n_lcores; k++) {
		st->lcores[k] = (struct gi_metrics_lcore){
			.lcore = d->lcores[k].lcore,
			.idle_polls = GI_COUNTER_READ(&d->lcores[k].idle_polls),
			.busy_polls = GI_COUNTER_READ(&d->lcores[k].busy_polls),
		};
	}
	s->n_lcores = d->n_lcores;
	s->lcores = st->lcores;

	for (uint32_t i = 0; i < d->cfg.n_streams && d->streams; i++) {
		memcpy(st->stream_names[i], d->cfg.streams[i].name, sizeof(st->stream_names[i]));
		st->streams[i].name = st->stream_names[i];
		stream_counters_read(&st->streams[i].c, &d->streams[i].c);
		hist_read(&st->streams[i].frame_latency, &d->streams[i].frame_latency);
		hist_read(&st->streams[i].frame_assembly, &d->streams[i].frame_assembly);
		st->streams[i].nic_realtime = d->streams[i].nic_ts == GI_NIC_TS_REALTIME;
		for (int k = 0; k < GI_CFAULT__COUNT; k++)
			st->streams[i].consumer_faults[k] = GI_COUNTER_READ(&d->streams[i].consumer_faults[k]);
	}
	s->n_streams = d->streams ? d->cfg.n_streams : 0;
	s->streams = st->streams;

	if (d->exec) {
		struct gi_exec_counters ec; /* summed over the executor's workers */
		gi_executor_counters(d->exec, &ec);
		s->batches_completed = ec.batches;
		s->executor_busy_ns = ec.busy_ns;
		for (int r = 0; r < GI_DROP__COUNT; r++)
			if (r != GI_DROP_RING_FULL)
				s->drops[r] = ec.drops[r];
		hist_read(&s->batch_latency, &ec.batch_latency);
		hist_read(&s->batch_service, &ec.batch_service);
		s->executor_busy_ratio = busy_ratio(d, s->executor_busy_ns);
		s->executor_inline_workers = gi_executor_inline_workers(d->exec);
		struct gi_exec_auto_info ai;
		for (uint32_t k = 0; gi_executor_auto_info(d->exec, k, &ai) == 0; k++)
			s->executor_auto_trials += ai.trials;
	}
	s->config_reloads_ok = d->reloads_ok;
	s->config_reloads_error = d->reloads_error;
	s->wake_refused = gi_wake_server_refused(d->wake);
	return 0;
}

int gi_stats_snapshot(const struct gi_daemon *d, struct gi_stats_snap *st)
{
	pthread_mutex_lock(&snap_lock);
	int rc = snapshot_locked(d, st);
	pthread_mutex_unlock(&snap_lock);
	return rc;
}

void gi_stats_snapshot_free(struct gi_stats_snap *st)
{
	free(st->queues);
	free(st->lcores);
	free(st->streams);
	free(st->stream_names);
}

void gi_stats_lock(void)
{
	pthread_mutex_lock(&snap_lock);
}

void gi_stats_unlock(void)
{
	pthread_mutex_unlock(&snap_lock);
}

int gi_stats_render(void *arg, struct gi_buf *out)
{
	struct gi_stats_snap st;
	int rc = gi_stats_snapshot(arg, &st);
	if (rc == 0)
		rc = gi_metrics_render(&st.s, out);
	gi_stats_snapshot_free(&st);
	return rc;
}

uint32_t gi_stats_progress(const struct gi_daemon *d, uint64_t *w, uint32_t max)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < d->n_lcores && n < max; k++)
		w[n++] = GI_COUNTER_READ(&d->lcores[k].loops);
	if (d->exec && n < max)
		n += gi_executor_progress(d->exec, w + n, max - n); /* every worker must make progress */
	return n;
}

static double rate(uint64_t now, uint64_t prev, uint64_t dt_ns)
{
	return dt_ns ? (double)(now - prev) * 1e9 / (double)dt_ns : 0.0;
}

static const char *si(double v, char *buf, size_t len)
{
	if (v >= 1e9)
		snprintf(buf, len, "%.2fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

void gi_stats_status_line(const struct gi_daemon *d, struct gi_stats_prev *prev, char *buf, size_t len)
{
	struct gi_stats_snap st;
	uint64_t rx = 0, placed = 0, bytes = 0, lost = 0, dup = 0, late = 0, complete = 0, partial = 0, drops = 0,
		 occ = 0, slots = 0;
	char a[16], b[16], c[16];

	if (gi_stats_snapshot(d, &st) < 0) {
		snprintf(buf, len, "status unavailable: out of memory");
		gi_stats_snapshot_free(&st);
		return;
	}
	for (uint32_t i = 0; i < st.s.n_queues; i++) {
		rx += st.s.queues[i].rx_packets;
		occ += st.s.queues[i].ring_occupancy;
		slots += st.s.queues[i].ring_slots;
	}
	for (uint32_t i = 0; i < st.s.n_streams; i++) {
		const struct gi_stream_counters *sc = &st.s.streams[i].c;
		placed += sc->packets;
		bytes += sc->bytes;
		lost += sc->lost;
		dup += sc->duplicates;
		late += sc->late;
		complete += sc->frames[GI_FRAMES_COMPLETE];
		partial += sc->frames[GI_FRAMES_PARTIAL] + sc->frames[GI_FRAMES_TIMED_OUT];
	}
	for (int r = 0; r < GI_DROP__COUNT; r++)
		drops += st.s.drops[r];
	uint64_t now = gi_now_ns(), dt = prev->t_ns ? now - prev->t_ns : 0;
	snprintf(buf, len,
		 "[%7.1fs] rx %spps | placed %spps %sB/s | frames %llu complete %llu partial | lost %llu dup %llu "
		 "late %llu | dropped %llu | ring %llu/%llu",
		 st.s.uptime_seconds, si(rate(rx, prev->rx_packets, dt), a, sizeof(a)),
		 si(rate(placed, prev->placed, dt), b, sizeof(b)), si(rate(bytes, prev->bytes, dt), c, sizeof(c)),
		 (unsigned long long)complete, (unsigned long long)partial, (unsigned long long)lost,
		 (unsigned long long)dup, (unsigned long long)late, (unsigned long long)drops,
		 (unsigned long long)occ, (unsigned long long)slots);
	prev->t_ns = now;
	prev->rx_packets = rx;
	prev->placed = placed;
	prev->bytes = bytes;
	gi_stats_snapshot_free(&st);
}

/* One JSON object with the final counters: what tests compare against the simulator. */
void gi_stats_print_summary(const struct gi_daemon *d, FILE *f)
{
	static const char *const drop_names[] = GI_DROP_REASON_NAMES;
	static const char *const frame_names[] = GI_FRAME_COUNT_NAMES;
	struct gi_stats_snap st;
	uint64_t delivered = 0, accounted = 0;

	if (gi_stats_snapshot(d, &st) < 0) {
		fprintf(f, "{\"error\":\"out of memory\"}\n");
		gi_stats_snapshot_free(&st);
		return;
	}
	fprintf(f, "{\"backend\":\"%s\",\"uptime_s\":%.3f,\"ports\":[", st.s.backend, st.s.uptime_seconds);
	for (uint32_t p = 0; p < st.s.n_ports; p++) {
		const struct gi_metrics_port *mp = &st.s.ports[p];
		fprintf(f, "%s{\"name\":\"%s\",\"rx_packets\":%llu,\"rx_bytes\":%llu,\"rx_missed\":%llu,\"rx_nombuf\":%llu,"
			   "\"rx_errors\":%llu}",
			p ? "," : "", mp->name, (unsigned long long)mp->rx_packets, (unsigned long long)mp->rx_bytes,
			(unsigned long long)mp->rx_missed, (unsigned long long)mp->rx_nombuf,
			(unsigned long long)mp->rx_errors);
	}
	fprintf(f, "],\"queues\":[");
	for (uint32_t i = 0; i < st.s.n_queues; i++) {
		const struct gi_metrics_queue *q = &st.s.queues[i];
		fprintf(f, "%s{\"port\":\"%s\",\"queue\":%u,\"rx_packets\":%llu,\"batches\":%llu,\"ring_full\":%llu}",
			i ? "," : "", q->port, q->queue, (unsigned long long)q->rx_packets,
			(unsigned long long)q->batches_published, (unsigned long long)q->ring_full_drops);
		delivered += q->rx_packets;
	}
	fprintf(f, "],\"batches_completed\":%llu,\"dropped\":{", (unsigned long long)st.s.batches_completed);
	for (int r = 0; r < GI_DROP__COUNT; r++) {
		fprintf(f, "%s\"%s\":%llu", r ? "," : "", drop_names[r], (unsigned long long)st.s.drops[r]);
		accounted += st.s.drops[r];
	}
	fprintf(f, "},\"streams\":[");
	for (uint32_t i = 0; i < st.s.n_streams; i++) {
		const struct gi_stream_counters *c = &st.s.streams[i].c;
		fprintf(f,
			"%s{\"name\":\"%s\",\"packets\":%llu,\"bytes\":%llu,\"lost\":%llu,\"duplicates\":%llu,\"late\":%llu,"
			"\"reordered\":%llu,\"resyncs\":%llu,\"metadata\":%llu",
			i ? "," : "", st.s.streams[i].name, (unsigned long long)c->packets, (unsigned long long)c->bytes,
			(unsigned long long)c->lost, (unsigned long long)c->duplicates, (unsigned long long)c->late,
			(unsigned long long)c->reordered, (unsigned long long)c->resyncs,
			(unsigned long long)c->metadata);
		for (int k = 0; k < GI_FRAMES__COUNT; k++)
			fprintf(f, ",\"frames_%s\":%llu", frame_names[k], (unsigned long long)c->frames[k]);
		fprintf(f, "}");
		accounted += c->packets + c->metadata + c->duplicates + c->late;
	}
	/* streams a live reload removed took their counters along: they still count here */
	accounted += d->retired.packets + d->retired.metadata + d->retired.duplicates + d->retired.late;
	fprintf(f, "],\"delivered\":%llu,\"accounted\":%llu}\n", (unsigned long long)delivered,
		(unsigned long long)accounted);
	gi_stats_snapshot_free(&st);
}

/*
 * Host mode auto: a line for each worker whose placement was decided since
 * the last call: trials decided, the last one's rates, and
 * where the worker runs now, so an operator sees where and why.
 */
void gi_stats_auto_log(const struct gi_daemon *d)
{
	static uint64_t seen[64], seen_returns[64];
	struct gi_exec_auto_info ai;

	for (uint32_t k = 0; k < 64 && gi_executor_auto_info(d->exec, k, &ai) == 0; k++) {
		uint64_t n = ai.decisions - seen[k], r = ai.returns - seen_returns[k];
		if (!n && !r)
			continue;
		seen[k] = ai.decisions;
		seen_returns[k] = ai.returns;
		if (n)
			gi_log(GI_LOG_NOTICE,
			       "executor auto: rx lcore %u: %llu trial%s decided; the last: saturated serving %.2f Mpps "
			       "inline, its worker served %.2f Mpps on a thread of its own for %.0f ms: %s%s",
			       ai.lcore, (unsigned long long)n, n == 1 ? "" : "s", ai.inline_pps / 1e6, ai.thread_pps / 1e6,
			       ai.trial_ns / 1e6,
			       ai.kept_thread ? "the thread keeps it (until its rate moves by 2x)"
					      : "back inline (the thread must serve 10% more)",
			       ai.on_thread ? "; it runs on the thread now" : "; it runs inline now");
		if (r)
			gi_log(GI_LOG_NOTICE,
			       "executor auto: rx lcore %u: its worker's rate moved by 2x on its thread: back inline "
			       "(%llu time%s)%s",
			       ai.lcore, (unsigned long long)r, r == 1 ? "" : "s",
			       ai.on_thread ? "; tried again and kept on the thread" : "");
	}
}
