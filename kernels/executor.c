/*
 * executor.c — backend selection and the host executor.
 *
 * The host backend is one CPU thread that polls every batch ring's doorbell
 * and runs the shared GI_HD bodies (stream.h) with lane 0 of 1.  It owns all
 * stream state, so no locks are needed anywhere on its path.
 *
 * Main thread: create/start/stop/destroy.  Executor thread: host_loop().
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor.h"

struct gi_executor {
	const struct gi_executor_ops *ops;
	struct gi_executor_conf conf;
	struct gi_exec_counters ctr __attribute__((aligned(GI_CACHE_LINE)));
	pthread_t thread;
	int running;
	uint64_t *tails;     /* consumer index per ring, executor thread only */
	uint32_t quit;       /* main → executor: rx is stopped, drain and leave */
	uint32_t paused;     /* test hook */
	uint32_t drained;    /* executor → main */
};

void gi_exec_slot_host(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, struct gi_batch_slot *slot,
		       uint32_t max_pkts, uint32_t split, uint64_t now)
{
	struct gi_pkt_desc d;
	struct gi_place pl;

	for (uint32_t i = 0; i < slot->n_pkts; i++) {
		gi_slot_pkt(slot, max_pkts, split, i, &d);
		if (gi_exec_classify(ctx, ctr, slot->port, d.pkt, d.len, d.seg1, d.hdr_len, now, &pl)) {
			gi_place_copy(&pl, 0, 1);
			gi_exec_commit(ctx, &pl, now);
		}
	}
	GI_COUNTER_ADD(&ctr->packets, slot->n_pkts);
	GI_COUNTER_ADD(&ctr->batches, 1);
}

static void host_tick(struct gi_executor *ex, uint64_t now)
{
	struct gi_exec_ctx *ctx = ex->conf.ctx;
	for (uint32_t s = 0; s < ctx->n_streams; s++)
		gi_stream_tick(&ctx->streams[s], now);
}

/* Process what is pending on every ring; returns the number of batches. */
static uint32_t host_poll(struct gi_executor *ex)
{
	uint32_t done = 0;

	for (uint32_t r = 0; r < ex->conf.n_rings; r++) {
		struct gi_batch_ring *ring = ex->conf.rings[r];
		uint64_t tail = ex->tails[r];
		uint64_t pending = gi_ring_pending(ring, tail);

		for (; pending > 0; pending--, tail++, done++) {
			struct gi_batch_slot *slot = gi_ring_slot(ring, tail);
			uint64_t t0 = gi_now_ns();
			gi_exec_slot_host(ex->conf.ctx, &ex->ctr, slot, ring->max_pkts, ring->split, t0);
			uint64_t t1 = gi_now_ns();
			gi_hist_observe(&ex->ctr.batch_latency, t1 > slot->t_publish_ns ? t1 - slot->t_publish_ns : 0);
			GI_COUNTER_ADD(&ex->ctr.busy_ns, t1 - t0);
			gi_ring_complete(ring, tail);
		}
		ex->tails[r] = tail;
	}
	return done;
}

static void *host_loop(void *arg)
{
	struct gi_executor *ex = arg;
	struct gi_idle idle;
	uint64_t next_tick = gi_now_ns() + ex->conf.tick_ns;

	gi_idle_init(&idle, ex->conf.idle);
	for (;;) {
		int quit = __atomic_load_n(&ex->quit, __ATOMIC_ACQUIRE);
		uint32_t n = 0;

		if (!__atomic_load_n(&ex->paused, __ATOMIC_RELAXED))
			n = host_poll(ex);
		GI_COUNTER_ADD(&ex->ctr.loops, 1);
		if (quit && n == 0)
			break;
		uint64_t now = gi_now_ns();
		if (now >= next_tick) {
			host_tick(ex, now);
			next_tick = now + ex->conf.tick_ns;
		}
		if (n)
			gi_idle_work(&idle);
		else
			gi_idle_empty(&idle, next_tick - now);
	}

	uint64_t now = gi_now_ns();
	for (uint32_t s = 0; s < ex->conf.ctx->n_streams; s++)
		gi_stream_flush(&ex->conf.ctx->streams[s], now);
	__atomic_store_n(&ex->drained, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int host_start(struct gi_executor *ex)
{
	pthread_attr_t attr;
	int rc;

	pthread_attr_init(&attr);
	if (ex->conf.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(ex->conf.cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	rc = pthread_create(&ex->thread, &attr, host_loop, ex);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return -rc;
	pthread_setname_np(ex->thread, "gi-exec-host");
	ex->running = 1;
	return 0;
}

static int host_stop(struct gi_executor *ex, uint64_t timeout_ns)
{
	if (!ex->running)
		return 0;
	__atomic_store_n(&ex->paused, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ex->quit, 1, __ATOMIC_RELEASE);
	for (uint32_t r = 0; r < ex->conf.n_rings; r++)
		GI_STORE_RELEASE_U64(&ex->conf.rings[r]->stop, 1);

	uint64_t deadline = gi_now_ns() + timeout_ns;
	while (!__atomic_load_n(&ex->drained, __ATOMIC_ACQUIRE)) {
		if (gi_now_ns() > deadline)
			return -ETIMEDOUT; /* leave the thread: it may still touch the rings */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	pthread_join(ex->thread, NULL);
	ex->running = 0;
	return 0;
}

static void host_destroy(struct gi_executor *ex)
{
	free(ex->tails);
}

static const struct gi_executor_ops host_ops = {
	.name = "host",
	.start = host_start,
	.stop = host_stop,
	.destroy = host_destroy,
};

int gi_executor_create(const struct gi_executor_conf *conf, struct gi_executor **out, char *err, size_t errlen)
{
	struct gi_executor *ex;

	switch (conf->backend) {
	case GI_BACKEND_AUTO:
	case GI_BACKEND_HOST:
		break;
	case GI_BACKEND_CUDA:
	case GI_BACKEND_GPUDEV:
		snprintf(err, errlen,
			 "executor backend '%s' is not available in this build: the CUDA executor is not built "
			 "yet; use backend: host",
			 conf->backend == GI_BACKEND_CUDA ? "cuda" : "gpudev");
		return -ENOTSUP;
	default:
		snprintf(err, errlen, "unknown executor backend %d", (int)conf->backend);
		return -EINVAL;
	}
	if (posix_memalign((void **)&ex, GI_CACHE_LINE, sizeof(*ex)) != 0)
		goto nomem;
	memset(ex, 0, sizeof(*ex));
	ex->ops = &host_ops;
	ex->conf = *conf;
	if (ex->conf.tick_ns == 0)
		ex->conf.tick_ns = 1000000;
	ex->tails = calloc(conf->n_rings ? conf->n_rings : 1, sizeof(*ex->tails));
	if (!ex->tails) {
		free(ex);
		goto nomem;
	}
	*out = ex;
	return 0;
nomem:
	snprintf(err, errlen, "executor: out of memory");
	return -ENOMEM;
}

int gi_executor_start(struct gi_executor *ex)
{
	return ex->ops->start(ex);
}

int gi_executor_stop(struct gi_executor *ex, uint64_t timeout_ns)
{
	return ex->ops->stop(ex, timeout_ns);
}

void gi_executor_destroy(struct gi_executor *ex)
{
	if (!ex)
		return;
	ex->ops->destroy(ex);
	free(ex);
}

const char *gi_executor_name(const struct gi_executor *ex)
{
	return ex->ops->name;
}

const struct gi_exec_counters *gi_executor_counters(const struct gi_executor *ex)
{
	return &ex->ctr;
}

void gi_executor_set_paused(struct gi_executor *ex, int paused)
{
	__atomic_store_n(&ex->paused, paused ? 1u : 0u, __ATOMIC_RELAXED);
}
