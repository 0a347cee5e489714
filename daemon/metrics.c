/*
 * metrics.c — render a gi_metrics_snapshot as Prometheus text format 0.0.4.
 *
 * Called on the stats/HTTP server thread; a pure function of the snapshot
 * (no globals, no locks).  The only allocation is growing the output
 * gi_buf, so a buffer reused across scrapes settles at one size.
 *
 * Every family is written whole (HELP, TYPE, then all its samples) in a
 * fixed order, so two renderings of equal snapshots are byte-identical.
 * Floating values are printed in the shortest form that reads back to the
 * same double ("1e-06", "0.00025", "1"), which is also how the Go client
 * libraries print histogram bounds, so `le` values match other exporters.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/metrics.h"

#define GI_METRICS_PREFIX "gpuingest_"

void gi_buf_reset(struct gi_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void gi_buf_free(struct gi_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

/* Make room for `extra` more bytes plus the terminating NUL. */
static int gi_buf_reserve(struct gi_buf *b, size_t extra)
{
	if (b->len + extra + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra + 1) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	char *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

static int gi_buf_append(struct gi_buf *b, const char *s, size_t n)
{
	if (gi_buf_reserve(b, n) < 0)
		return -ENOMEM;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int gi_buf_printf(struct gi_buf *b, const char *fmt, ...)
{
	va_list ap;
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	va_start(ap, fmt);
	int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= room) {
		if (gi_buf_reserve(b, (size_t)n) < 0) {
			if (b->data)
				b->data[b->len] = '\0';
			return -ENOMEM;
		}
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
	return 0;
}

/*
 * The writer keeps the first error and turns later calls into no-ops, so
 * the family code below reads as a list of lines instead of error checks.
 */
struct gi_mw {
	struct gi_buf *b;
	int err;
	unsigned n_labels; /* of the sample being written */
};

static void mw_put(struct gi_mw *w, const char *s, size_t n)
{
	if (!w->err)
		w->err = gi_buf_append(w->b, s, n);
}

static void mw_puts(struct gi_mw *w, const char *s)
{
	mw_put(w, s, strlen(s));
}

static void mw_u64(struct gi_mw *w, uint64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);
	mw_put(w, tmp, (size_t)n);
}

/* Shortest %g form that reads back to the same double. */
static void mw_double(struct gi_mw *w, double v)
{
	char tmp[40];
	int n = 0;
	for (int prec = 1; prec <= 17; prec++) {
		n = snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	mw_put(w, tmp, (size_t)n);
}

/* Nanoseconds → seconds; a double holds any realistic sum exactly enough. */
static double ns_to_s(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void mw_family(struct gi_mw *w, const char *name, const char *type, const char *help)
{
	mw_puts(w, "# HELP " GI_METRICS_PREFIX);
	mw_puts(w, name);
	mw_puts(w, " ");
	mw_puts(w, help);
	mw_puts(w, "\n# TYPE " GI_METRICS_PREFIX);
	mw_puts(w, name);
	mw_puts(w, " ");
	mw_puts(w, type);
	mw_puts(w, "\n");
}

static void mw_begin(struct gi_mw *w, const char *name, const char *suffix)
{
	mw_puts(w, GI_METRICS_PREFIX);
	mw_puts(w, name);
	if (suffix)
		mw_puts(w, suffix);
	w->n_labels = 0;
}

/* Label values are escaped: backslash, double quote and newline. */
static void mw_label(struct gi_mw *w, const char *key, const char *value)
{
	mw_puts(w, w->n_labels++ ? "," : "{");
	mw_puts(w, key);
	mw_puts(w, "=\"");
	const char *run = value ? value : "";
	for (const char *p = run; *p; p++) {
		const char *esc = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
		if (!esc)
			continue;
		mw_put(w, run, (size_t)(p - run));
		mw_puts(w, esc);
		run = p + 1;
	}
	mw_puts(w, run);
	mw_puts(w, "\"");
}

static void mw_label_u32(struct gi_mw *w, const char *key, uint32_t v)
{
	char tmp[12];
	snprintf(tmp, sizeof(tmp), "%" PRIu32, v);
	mw_label(w, key, tmp);
}

static void mw_end_u64(struct gi_mw *w, uint64_t v)
{
	mw_puts(w, w->n_labels ? "} " : " ");
	mw_u64(w, v);
	mw_puts(w, "\n");
}

static void mw_end_double(struct gi_mw *w, double v)
{
	mw_puts(w, w->n_labels ? "} " : " ");
	mw_double(w, v);
	mw_puts(w, "\n");
}

/*
 * One histogram's samples.  `lkey`/`lval` is an optional extra label
 * (stream); _count is the sum of the buckets, never a separate total, so
 * it always equals the +Inf bucket.
 */
static void mw_hist(struct gi_mw *w, const char *name, const char *lkey, const char *lval,
		    const struct gi_hist *h)
{
	static const uint64_t bounds[GI_HIST_BUCKETS - 1] = GI_HIST_BOUNDS_NS;
	uint64_t cum = 0;
	for (unsigned i = 0; i < GI_HIST_BUCKETS; i++) {
		cum += h->count[i];
		mw_begin(w, name, "_bucket");
		if (lkey)
			mw_label(w, lkey, lval);
		mw_puts(w, w->n_labels++ ? ",le=\"" : "{le=\"");
		if (i < GI_HIST_BUCKETS - 1)
			mw_double(w, ns_to_s(bounds[i]));
		else
			mw_puts(w, "+Inf");
		mw_puts(w, "\"");
		mw_end_u64(w, cum);
	}
	mw_begin(w, name, "_sum");
	if (lkey)
		mw_label(w, lkey, lval);
	mw_end_double(w, ns_to_s(h->sum_ns));
	mw_begin(w, name, "_count");
	if (lkey)
		mw_label(w, lkey, lval);
	mw_end_u64(w, cum);
}

/* Families that repeat a shape over ports, queues or streams take an accessor. */
typedef uint64_t (*port_get)(const struct gi_metrics_port *p);
typedef uint64_t (*queue_get)(const struct gi_metrics_queue *q);
typedef uint64_t (*stream_get)(const struct gi_metrics_stream *s);

#define GETTER(type, prefix, field)                                   \
	static uint64_t prefix##_##field(const struct type *x)        \
	{                                                             \
		return x->field;                                      \
	}
GETTER(gi_metrics_port, port, rx_packets)
GETTER(gi_metrics_port, port, rx_bytes)
GETTER(gi_metrics_port, port, rx_missed)
GETTER(gi_metrics_port, port, rx_nombuf)
GETTER(gi_metrics_port, port, rx_errors)
GETTER(gi_metrics_queue, queue, rx_packets)
GETTER(gi_metrics_queue, queue, batches_published)
GETTER(gi_metrics_queue, queue, ring_occupancy)
GETTER(gi_metrics_queue, queue, ring_slots)
#undef GETTER

#define STREAM_GETTER(field)                                             \
	static uint64_t stream_##field(const struct gi_metrics_stream *x) \
	{                                                                \
		return x->c.field;                                       \
	}
STREAM_GETTER(packets)
STREAM_GETTER(bytes)
STREAM_GETTER(lost)
STREAM_GETTER(duplicates)
STREAM_GETTER(late)
STREAM_GETTER(reordered)
STREAM_GETTER(resyncs)
STREAM_GETTER(metadata)
#undef STREAM_GETTER

static void per_port(struct gi_mw *w, const struct gi_metrics_snapshot *s, const char *name,
		     const char *help, port_get get)
{
	mw_family(w, name, "counter", help);
	for (uint32_t i = 0; i < s->n_ports; i++) {
		mw_begin(w, name, NULL);
		mw_label(w, "port", s->ports[i].name);
		mw_end_u64(w, get(&s->ports[i]));
	}
}

static void per_queue(struct gi_mw *w, const struct gi_metrics_snapshot *s, const char *name,
		      const char *type, const char *help, queue_get get)
{
	mw_family(w, name, type, help);
	for (uint32_t i = 0; i < s->n_queues; i++) {
		mw_begin(w, name, NULL);
		mw_label(w, "port", s->queues[i].port);
		mw_label_u32(w, "queue", s->queues[i].queue);
		mw_end_u64(w, get(&s->queues[i]));
	}
}

static void per_stream(struct gi_mw *w, const struct gi_metrics_snapshot *s, const char *name,
		       const char *help, stream_get get)
{
	mw_family(w, name, "counter", help);
	for (uint32_t i = 0; i < s->n_streams; i++) {
		mw_begin(w, name, NULL);
		mw_label(w, "stream", s->streams[i].name);
		mw_end_u64(w, get(&s->streams[i]));
	}
}

int gi_metrics_render(const struct gi_metrics_snapshot *s, struct gi_buf *out)
{
	static const char *const drop_names[GI_DROP__COUNT] = GI_DROP_REASON_NAMES;
	static const char *const frame_names[GI_FRAMES__COUNT] = GI_FRAME_COUNT_NAMES;
	struct gi_mw w = { .b = out };

	mw_family(&w, "up", "gauge", "1 while the daemon runs and its data path is started.");
	mw_begin(&w, "up", NULL);
	mw_end_u64(&w, s->up ? 1 : 0);

	mw_family(&w, "build_info", "gauge",
		  "Version, DPDK version and executor backend; the value is always 1.");
	mw_begin(&w, "build_info", NULL);
	mw_label(&w, "version", s->version);
	mw_label(&w, "dpdk", s->dpdk_version);
	mw_label(&w, "backend", s->backend);
	mw_end_u64(&w, 1);

	mw_family(&w, "uptime_seconds", "gauge", "Seconds since the daemon started.");
	mw_begin(&w, "uptime_seconds", NULL);
	mw_end_double(&w, s->uptime_seconds);

	per_port(&w, s, "port_rx_packets_total", "Packets received by the port (NIC counter).",
		 port_rx_packets);
	per_port(&w, s, "port_rx_bytes_total", "Bytes received by the port (NIC counter).",
		 port_rx_bytes);
	per_port(&w, s, "port_rx_missed_total",
		 "Packets the NIC dropped because its rx queues were full.", port_rx_missed);
	per_port(&w, s, "port_rx_nombuf_total",
		 "Packets the NIC dropped for lack of a free mbuf.", port_rx_nombuf);
	per_port(&w, s, "port_rx_errors_total", "Erroneous packets received by the port.",
		 port_rx_errors);

	mw_family(&w, "port_xstats_total", "counter",
		  "Driver extended statistics selected by ports[].xstats (e.g. mlx5 rx_discards_phy), by name.");
	for (uint32_t i = 0; i < s->n_ports; i++)
		for (uint32_t k = 0; k < s->ports[i].n_xstats; k++) {
			mw_begin(&w, "port_xstats_total", NULL);
			mw_label(&w, "port", s->ports[i].name);
			mw_label(&w, "name", s->ports[i].xstat_names[k]);
			mw_end_u64(&w, s->ports[i].xstat_values[k]);
		}

	per_queue(&w, s, "queue_rx_packets_total", "counter",
		  "Packets taken from the rx queue by its lcore.", queue_rx_packets);
	per_queue(&w, s, "batches_published_total", "counter",
		  "Batches published to the executor's ring.", queue_batches_published);
	per_queue(&w, s, "ring_occupancy", "gauge",
		  "Batch ring slots published and not yet completed.", queue_ring_occupancy);
	per_queue(&w, s, "ring_slots", "gauge", "Size of the batch ring in slots.",
		  queue_ring_slots);

	mw_family(&w, "mempool_in_use", "gauge",
		  "mbufs taken from the pool and not yet returned (rx queues, batches in flight).");
	for (uint32_t i = 0; i < s->n_pools; i++) {
		mw_begin(&w, "mempool_in_use", NULL);
		mw_label(&w, "pool", s->pools[i].name);
		mw_end_u64(&w, s->pools[i].in_use);
	}
	mw_family(&w, "mempool_size", "gauge", "mbufs in the pool.");
	for (uint32_t i = 0; i < s->n_pools; i++) {
		mw_begin(&w, "mempool_size", NULL);
		mw_label(&w, "pool", s->pools[i].name);
		mw_end_u64(&w, s->pools[i].size);
	}

	mw_family(&w, "lcore_polls_total", "counter",
		  "rx burst calls by lcore; idle ones returned no packet.");
	for (uint32_t i = 0; i < s->n_lcores; i++) {
		mw_begin(&w, "lcore_polls_total", NULL);
		mw_label_u32(&w, "lcore", s->lcores[i].lcore);
		mw_label(&w, "result", "idle");
		mw_end_u64(&w, s->lcores[i].idle_polls);
		mw_begin(&w, "lcore_polls_total", NULL);
		mw_label_u32(&w, "lcore", s->lcores[i].lcore);
		mw_label(&w, "result", "busy");
		mw_end_u64(&w, s->lcores[i].busy_polls);
	}

	mw_family(&w, "batches_completed_total", "counter", "Batches the executor finished.");
	mw_begin(&w, "batches_completed_total", NULL);
	mw_end_u64(&w, s->batches_completed);

	mw_family(&w, "executor_busy_seconds_total", "counter",
		  "Time the executor spent processing batches.");
	mw_begin(&w, "executor_busy_seconds_total", NULL);
	mw_end_double(&w, ns_to_s(s->executor_busy_ns));

	mw_family(&w, "executor_busy_ratio", "gauge",
		  "Fraction of wall-clock time the executor spent processing batches over the last "
		  "window of at least 1 s ending at a scrape (since start before the first one).");
	mw_begin(&w, "executor_busy_ratio", NULL);
	mw_end_double(&w, s->executor_busy_ratio);

	mw_family(&w, "executor_inline_workers", "gauge",
		  "Host executor workers that their rx lcore runs now (mode inline, or what mode auto chose); "
		  "the others run on threads of their own.");
	mw_begin(&w, "executor_inline_workers", NULL);
	mw_end_u64(&w, s->executor_inline_workers);

	mw_family(&w, "executor_auto_trials_total", "counter",
		  "Host executor, mode auto: times a saturated rx lcore's worker was tried on a thread of its own.");
	mw_begin(&w, "executor_auto_trials_total", NULL);
	mw_end_u64(&w, s->executor_auto_trials);

	mw_family(&w, "dropped_packets_total", "counter",
		  "Packets delivered by the NIC and not placed into a frame, by reason.");
	for (unsigned r = 0; r < GI_DROP__COUNT; r++) {
		mw_begin(&w, "dropped_packets_total", NULL);
		mw_label(&w, "reason", drop_names[r]);
		mw_end_u64(&w, s->drops[r]);
	}

	per_stream(&w, s, "stream_packets_total", "Unique packets placed into frames.",
		   stream_packets);
	per_stream(&w, s, "stream_bytes_total", "Payload bytes placed into frames.",
		   stream_bytes);
	per_stream(&w, s, "stream_lost_packets_total",
		   "Packets never received (sequence gaps and missing frame parts).",
		   stream_lost);
	per_stream(&w, s, "stream_duplicate_packets_total",
		   "Packets received more than once.", stream_duplicates);
	per_stream(&w, s, "stream_late_packets_total",
		   "Packets whose frame had already been published.", stream_late);
	per_stream(&w, s, "stream_reordered_packets_total",
		   "Packets that arrived after one with a higher sequence number.",
		   stream_reordered);
	per_stream(&w, s, "stream_resyncs_total",
		   "Sender restarts: sequence jumps beyond resync_frames, after which the stream resynchronised.",
		   stream_resyncs);
	per_stream(&w, s, "stream_metadata_packets_total",
		   "Frame-end packets that carry only the sender's record of a frame (Holoscan Sensor Bridge): "
		   "placed + metadata + lost == unique packets sent.",
		   stream_metadata);

	mw_family(&w, "stream_frames_total", "counter", "Frames published, by final state.");
	for (uint32_t i = 0; i < s->n_streams; i++) {
		for (unsigned f = 0; f < GI_FRAMES__COUNT; f++) {
			mw_begin(&w, "stream_frames_total", NULL);
			mw_label(&w, "stream", s->streams[i].name);
			mw_label(&w, "state", frame_names[f]);
			mw_end_u64(&w, s->streams[i].c.frames[f]);
		}
	}

	static const char *const fault_names[GI_CFAULT__COUNT] = GI_CFAULT_NAMES;
	mw_family(&w, "consumer_faults_total", "counter",
		  "What consumers did to a stream's shared objects that the daemon saw and withstood, by kind "
		  "(waiters_implausible, waiters_stale: the wake object's count; ring_name_gone).");
	for (uint32_t i = 0; i < s->n_streams; i++) {
		for (unsigned k = 0; k < GI_CFAULT__COUNT; k++) {
			mw_begin(&w, "consumer_faults_total", NULL);
			mw_label(&w, "stream", s->streams[i].name);
			mw_label(&w, "kind", fault_names[k]);
			mw_end_u64(&w, s->streams[i].consumer_faults[k]);
		}
	}
	mw_family(&w, "wake_refused_total", "counter",
		  "Requests to the wake socket refused: no proof of reading the ring, or garbage.");
	mw_begin(&w, "wake_refused_total", NULL);
	mw_end_u64(&w, s->wake_refused);

	mw_family(&w, "batch_latency_seconds", "histogram",
		  "Time from a batch's publication to its completion by the executor.");
	mw_hist(&w, "batch_latency_seconds", NULL, NULL, &s->batch_latency);

	mw_family(&w, "executor_batch_seconds", "histogram",
		  "The executor's service time per batch: from taking it up to handing it back (any backend).");
	mw_hist(&w, "executor_batch_seconds", NULL, NULL, &s->batch_service);

	mw_family(&w, "frame_latency_seconds", "histogram",
		  "Time from a frame's first packet to the frame's publication.");
	for (uint32_t i = 0; i < s->n_streams; i++)
		mw_hist(&w, "frame_latency_seconds", "stream", s->streams[i].name,
			&s->streams[i].frame_latency);

	/* streams whose port timestamps in CLOCK_REALTIME (device ticks are no seconds); the family only if any */
	for (uint32_t i = 0, any = 0; i < s->n_streams; i++) {
		if (!s->streams[i].nic_realtime)
			continue;
		if (!any++)
			mw_family(&w, "stream_frame_assembly_seconds", "histogram",
				  "NIC receive time of a frame's last packet minus its first's (ports[].rx_timestamp).");
		mw_hist(&w, "stream_frame_assembly_seconds", "stream", s->streams[i].name,
			&s->streams[i].frame_assembly);
	}

	mw_family(&w, "config_reloads_total", "counter", "Configuration reloads, by result.");
	mw_begin(&w, "config_reloads_total", NULL);
	mw_label(&w, "result", "ok");
	mw_end_u64(&w, s->config_reloads_ok);
	mw_begin(&w, "config_reloads_total", NULL);
	mw_label(&w, "result", "error");
	mw_end_u64(&w, s->config_reloads_error);

	return w.err;
}
