/*
 * executor.c — backend selection and the host executor.
 *
 * The host backend is one CPU thread that polls every batch ring's doorbell
 * and runs the shared GI_HD bodies (stream.h) with lane 0 of 1.  It owns all
 * stream state, so no locks are needed anywhere on its path.  The cuda
 * backend (executor_cuda.c, built with HAVE_CUDA) sits behind the same
 * table of operations.
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
#include "gi_build_config.h"
#if HAVE_CUDA
#include "executor_cuda.h"
#endif

struct gi_executor {
	const struct gi_executor_ops *ops;
	struct gi_executor_conf conf;
	struct gi_exec_counters ctr __attribute__((aligned(GI_CACHE_LINE)));
	pthread_t thread;
	int running;
	uint64_t *tails;     /* consumer index per ring, executor thread only */
	uint32_t quit;       /* main → executor: rx is stopped, drain and leave */
	uint32_t paused;     /* test hook: enum gi_exec_pause */
	uint32_t drained;    /* executor → main */
	/* live reload: main posts a swap (release), the executor takes it
	 * between batches (acquire exchange), applies it and bumps swaps_done */
	struct host_swap *mailbox;
	uint64_t swaps_done;
	const struct gi_exec_counters *ctr_view; /* what the stats thread reads: &ctr, or the cuda mirror */
	void *backend;       /* the cuda backend's state */
	char why[320];       /* how the backend was chosen (gi_executor_why) */
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

/* A stream table handed over by gi_executor_swap_streams(). */
struct host_swap {
	struct gi_exec_ctx next;
	const int32_t *carry;
};

/*
 * Executor thread, between batches.  Carried streams keep everything but
 * their live parameters (window, timeout, format params with resync limit,
 * chain link), which come from the new table.
 */
static void host_apply_swap(struct gi_executor *ex, const struct host_swap *sw, uint64_t now)
{
	struct gi_exec_ctx *cur = ex->conf.ctx;
	static uint8_t kept[65536]; /* executor thread only; indices are uint16_t */

	memset(kept, 0, cur->n_streams);
	for (uint32_t j = 0; j < sw->next.n_streams; j++) {
		int32_t i = sw->carry[j];
		if (i < 0 || (uint32_t)i >= cur->n_streams)
			continue;
		struct gi_stream_rt *old = &cur->streams[i], *st = &sw->next.streams[j];
		kept[i] = 1;
		/* a smaller window: frames beyond it are closed as a new packet would close them */
		if (old->started && st->window < old->window && old->max_frame >= old->next_pub + st->window)
			gi_stream_advance(old, old->max_frame - st->window + 1, GI_FRAME_PARTIAL, now);
		struct gi_stream_rt live = *st;
		*st = *old;
		st->window = live.window;
		st->frame_timeout_ns = live.frame_timeout_ns;
		st->fp = live.fp;
		st->next_same_udp = live.next_same_udp;
	}
	for (uint32_t i = 0; i < cur->n_streams; i++)
		if (!kept[i])
			gi_stream_flush(&cur->streams[i], now);
	*cur = sw->next;
}

static void host_check_mailbox(struct gi_executor *ex)
{
	struct host_swap *sw;

	if (!__atomic_load_n(&ex->mailbox, __ATOMIC_RELAXED)) /* the common case: one plain load */
		return;
	sw = __atomic_exchange_n(&ex->mailbox, NULL, __ATOMIC_ACQ_REL);
	if (!sw)
		return;
	host_apply_swap(ex, sw, gi_now_ns());
	__atomic_fetch_add(&ex->swaps_done, 1, __ATOMIC_RELEASE);
}

static void *host_loop(void *arg)
{
	struct gi_executor *ex = arg;
	struct gi_idle idle;
	uint64_t next_tick = gi_now_ns() + ex->conf.tick_ns;

	gi_idle_init(&idle, ex->conf.idle);
	for (;;) {
		int quit = __atomic_load_n(&ex->quit, __ATOMIC_ACQUIRE);
		uint32_t paused = __atomic_load_n(&ex->paused, __ATOMIC_RELAXED);
		uint32_t n = 0;

		if (paused == GI_EXEC_RUN)
			n = host_poll(ex);
		host_check_mailbox(ex); /* between batches: no packet is half classified */
		/* progress only for a pass that served every ring: counting paused
		 * passes would hide a stall with batches waiting from the watchdog */
		if (paused == GI_EXEC_RUN)
			GI_COUNTER_ADD(&ex->ctr.loops, 1);
		if (quit && n == 0 && paused != GI_EXEC_HANG)
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
	/* paused: resume and drain; hung (test hook): stays hung, stop times out */
	if (__atomic_load_n(&ex->paused, __ATOMIC_RELAXED) == GI_EXEC_PAUSE)
		__atomic_store_n(&ex->paused, GI_EXEC_RUN, __ATOMIC_RELAXED);
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

static void host_set_paused(struct gi_executor *ex, int paused)
{
	__atomic_store_n(&ex->paused, (uint32_t)paused, __ATOMIC_RELAXED); /* enum gi_exec_pause */
}

static int host_swap_streams(struct gi_executor *ex, const struct gi_exec_ctx *next, const int32_t *carry,
			     uint64_t timeout_ns)
{
	struct host_swap sw = { .next = *next, .carry = carry };
	uint64_t done = __atomic_load_n(&ex->swaps_done, __ATOMIC_ACQUIRE);
	uint64_t deadline = gi_now_ns() + timeout_ns;
	struct timespec ts = { 0, 200000 };

	if (!ex->running || __atomic_load_n(&ex->quit, __ATOMIC_ACQUIRE))
		return -EBUSY;
	__atomic_store_n(&ex->mailbox, &sw, __ATOMIC_RELEASE);
	while (__atomic_load_n(&ex->swaps_done, __ATOMIC_ACQUIRE) == done) {
		if (gi_now_ns() > deadline) {
			struct host_swap *expect = &sw;
			/* take the offer back; if the executor took it first, it is
			 * applying it right now and acknowledges in a moment */
			if (__atomic_compare_exchange_n(&ex->mailbox, &expect, NULL, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				return -ETIMEDOUT;
			deadline = UINT64_MAX;
		}
		nanosleep(&ts, NULL);
	}
	return 0;
}

static const struct gi_executor_ops host_ops = {
	.name = "host",
	.start = host_start,
	.stop = host_stop,
	.destroy = host_destroy,
	.set_paused = host_set_paused,
	.swap_streams = host_swap_streams,
};

#if HAVE_CUDA
static int cuda_start(struct gi_executor *ex)
{
	return gi_cuda_exec_start(ex->backend);
}

static int cuda_stop(struct gi_executor *ex, uint64_t timeout_ns)
{
	return gi_cuda_exec_stop(ex->backend, timeout_ns);
}

static void cuda_destroy(struct gi_executor *ex)
{
	gi_cuda_exec_destroy(ex->backend);
}

static void cuda_set_paused(struct gi_executor *ex, int paused)
{
	gi_cuda_exec_set_paused(ex->backend, paused);
}

static const struct gi_executor_ops cuda_ops = {
	.name = "cuda",
	.start = cuda_start,
	.stop = cuda_stop,
	.destroy = cuda_destroy,
	.set_paused = cuda_set_paused,
};
#endif

static const char *backend_name(enum gi_backend b)
{
	switch (b) {
	case GI_BACKEND_AUTO:
		return "auto";
	case GI_BACKEND_HOST:
		return "host";
	case GI_BACKEND_CUDA:
		return "cuda";
	case GI_BACKEND_GPUDEV:
		return "gpudev";
	}
	return "?";
}

static struct gi_executor *executor_alloc(const struct gi_executor_conf *conf)
{
	struct gi_executor *ex;

	if (posix_memalign((void **)&ex, GI_CACHE_LINE, sizeof(*ex)) != 0)
		return NULL;
	memset(ex, 0, sizeof(*ex));
	ex->conf = *conf;
	if (ex->conf.tick_ns == 0)
		ex->conf.tick_ns = 1000000;
	ex->ctr_view = &ex->ctr;
	return ex;
}

#if HAVE_CUDA
/*
 * cuda, gpudev, and auto's first choice.  gpudev runs on CUDA too: DPDK's
 * gpudev is a memory provider (pmd_glue), it cannot launch kernels, so the
 * execution side of `backend: gpudev` is this same CUDA executor.
 * Returns 1 when auto should fall back to host (no usable device), with
 * the reason in ex->why.
 */
static int cuda_create(struct gi_executor *ex, char *err, size_t errlen, int *rc)
{
	char why[sizeof(ex->why) - 64];
	struct gi_cuda_exec *c = NULL;
	const char *name = backend_name(ex->conf.backend);

	*rc = gi_cuda_exec_create(&ex->conf, &c, why, sizeof(why));
	if (*rc == 0) {
		ex->backend = c;
		ex->ops = &cuda_ops;
		ex->ctr_view = gi_cuda_exec_counters(c);
		snprintf(ex->why, sizeof(ex->why), "%s: %s", name, gi_cuda_exec_describe(c));
		return 0;
	}
	if (*rc == -ENODEV && ex->conf.backend == GI_BACKEND_AUTO) {
		snprintf(ex->why, sizeof(ex->why), "auto: %s; using host", why);
		return 1;
	}
	if (*rc == -ENODEV)
		snprintf(err, errlen, "executor backend '%s': %s; use backend: host", name, why);
	else
		snprintf(err, errlen, "executor backend '%s': %s", name, why);
	return 0;
}
#endif

int gi_executor_create(const struct gi_executor_conf *conf, struct gi_executor **out, char *err, size_t errlen)
{
	struct gi_executor *ex;

	switch (conf->backend) {
	case GI_BACKEND_AUTO:
	case GI_BACKEND_HOST:
		break;
	case GI_BACKEND_CUDA:
	case GI_BACKEND_GPUDEV:
#if !HAVE_CUDA
		snprintf(err, errlen,
			 "executor backend '%s' is not available in this build: built without CUDA (-Dcuda=disabled "
			 "or no nvcc); use backend: host",
			 backend_name(conf->backend));
		return -ENOTSUP;
#endif
		break;
	default:
		snprintf(err, errlen, "unknown executor backend %d", (int)conf->backend);
		return -EINVAL;
	}
	if (conf->mode != GI_EXEC_PERSISTENT && conf->mode != GI_EXEC_LAUNCH) {
		snprintf(err, errlen, "unknown executor mode %d", (int)conf->mode);
		return -EINVAL;
	}
	ex = executor_alloc(conf);
	if (!ex)
		goto nomem;
#if HAVE_CUDA
	if (conf->backend != GI_BACKEND_HOST) {
		int rc;
		if (cuda_create(ex, err, errlen, &rc) == 0) {
			if (rc < 0) {
				free(ex);
				return rc;
			}
			*out = ex;
			return 0;
		}
		/* auto without a usable GPU: host, with ex->why saying so */
	}
#else
	if (conf->backend == GI_BACKEND_AUTO)
		snprintf(ex->why, sizeof(ex->why), "auto: this build has no CUDA executor; using host");
#endif
	ex->ops = &host_ops;
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

const char *gi_executor_why(const struct gi_executor *ex)
{
	return ex->why;
}

const char *gi_executor_last_error(const struct gi_executor *ex)
{
#if HAVE_CUDA
	if (ex->ops == &cuda_ops)
		return gi_cuda_exec_error(ex->backend);
#else
	(void)ex;
#endif
	return "";
}

const struct gi_exec_counters *gi_executor_counters(const struct gi_executor *ex)
{
	return ex->ctr_view;
}

int gi_executor_swap_streams(struct gi_executor *ex, const struct gi_exec_ctx *next, const int32_t *carry,
			     uint64_t timeout_ns)
{
	if (!ex->ops->swap_streams)
		return -ENOTSUP;
	return ex->ops->swap_streams(ex, next, carry, timeout_ns);
}

int gi_executor_can_swap_streams(const struct gi_executor *ex)
{
	return ex->ops->swap_streams != NULL;
}

void gi_executor_set_paused(struct gi_executor *ex, int paused)
{
	ex->ops->set_paused(ex, paused);
}
