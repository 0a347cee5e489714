/*
 * executor.c — backend selection and the host executor.
 *
 * The host backend runs the phases of batch.h (or, as the reference, the
 * serial path of classify.h) on workers: executor.threads threads, or the
 * rx lcores themselves (mode inline).  Each worker owns whole ring groups
 * (executor.h) and so the streams of those groups: no stream is ever
 * written by two threads, and nothing on a worker's path takes a lock.
 * The cuda backend (executor_cuda.c, built with HAVE_CUDA) sits behind the
 * same table of operations; its workers are CTAs.
 *
 * Main thread: create/start/stop/destroy.  Worker threads: host_loop().
 * rx lcores (inline): gi_exec_worker_poll().  Any thread: counters.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor.h"
#include "gi_build_config.h"
#include "phase_commit.h"
#include "phase_parse.h"
#include "phase_place.h"
#include "phase_sequence.h"
#include "frame_wake.h"
#if HAVE_CUDA
#include "executor_cuda.h"
#endif

struct gi_exec_worker {
	struct gi_exec_counters ctr __attribute__((aligned(GI_CACHE_LINE)));
	struct gi_executor *ex;
	uint32_t id;
	uint32_t owner;           /* what its streams' `group` says (GI_GROUP_ANY: it owns every stream) */
	uint32_t lcore;           /* mode inline: the rx lcore that runs it */
	uint32_t n_rings;
	uint32_t *rings;          /* indices into conf.rings */
	uint64_t *tails;          /* consumer index per ring, this worker only */
	uint32_t n_streams;
	uint16_t *streams;        /* for ticks and the final flush */
	struct gi_batch_hdr *scratch;
	uint64_t next_tick;
	pthread_t thread;
	int running;
};

struct gi_executor {
	const struct gi_executor_ops *ops;
	struct gi_executor_conf conf;
	uint32_t n_workers;
	struct gi_exec_worker *workers;
	uint32_t quit;       /* main → workers: rx is stopped, drain and leave */
	uint32_t paused;     /* test hook: enum gi_exec_pause */
	uint32_t drained;    /* workers → main: how many have flushed and left */
	/* live reload (one worker only): main posts a swap (release), the worker
	 * takes it between batches (acquire exchange), applies it and bumps swaps_done */
	struct host_swap *mailbox;
	uint64_t swaps_done;
	void *backend;       /* the cuda backend's state */
	char why[320];       /* how the backend was chosen (gi_executor_why) */
	char swap_why[200];  /* why streams cannot be swapped live, "" if they can */
};

/* ---- one batch on one worker ------------------------------------------------ */

void gi_exec_slot_host(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, struct gi_batch_slot *slot,
		       uint32_t max_pkts, uint32_t split, uint64_t now)
{
	struct gi_pkt_desc d;
	struct gi_place pl;
	uint32_t n = GI_MIN(slot->n_pkts, max_pkts);

	for (uint32_t i = 0; i < n; i++) {
		gi_slot_pkt(slot, max_pkts, split, i, &d);
		if (gi_exec_classify(ctx, ctr, slot->port, d.pkt, d.len, d.seg1, d.hdr_len, now, &pl)) {
			gi_place_copy(&pl, 0, 1);
			gi_exec_commit(ctx, &pl, now);
		}
	}
	GI_COUNTER_ADD(&ctr->packets, n);
	GI_COUNTER_ADD(&ctr->batches, 1);
}

void gi_exec_slot_phased(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, uint32_t owner,
			 struct gi_batch_slot *slot, uint32_t max_pkts, uint32_t split, uint64_t now,
			 struct gi_batch_hdr *h)
{
	uint32_t more;

	gi_batch_begin(h, GI_MIN(slot->n_pkts, max_pkts));
	gi_phase_parse(ctx, owner, slot, max_pkts, split, h, 1, 0, 1);
	do {
		more = gi_phase_sequence_all(ctx, h, max_pkts, now);
		gi_phase_place(ctx, slot, max_pkts, split, h, 0, 1, 0, 1);
		gi_phase_commit_all(ctx, h, max_pkts);
		h->round++;
	} while (more);
	gi_batch_end(h, ctr);
}

/* ---- host workers ------------------------------------------------------------ */

/* Consumers asleep on the worker's streams learn of frames it published (frame_wake.h). */
static void worker_wake(struct gi_exec_worker *w)
{
	struct gi_exec_ctx *ctx = w->ex->conf.ctx;

	if (w->owner == GI_GROUP_ANY) {
		for (uint32_t s = 0; s < ctx->n_streams; s++)
			gi_stream_wake(&ctx->streams[s]);
		return;
	}
	for (uint32_t k = 0; k < w->n_streams; k++)
		gi_stream_wake(&ctx->streams[w->streams[k]]);
}

static void worker_tick(struct gi_exec_worker *w, uint64_t now, int flush)
{
	struct gi_exec_ctx *ctx = w->ex->conf.ctx;

	/* one worker owns every stream, also those a live reload added */
	if (w->owner == GI_GROUP_ANY) {
		for (uint32_t s = 0; s < ctx->n_streams; s++)
			flush ? gi_stream_flush(&ctx->streams[s], now) : gi_stream_tick(&ctx->streams[s], now);
	} else {
		for (uint32_t k = 0; k < w->n_streams; k++)
			flush ? gi_stream_flush(&ctx->streams[w->streams[k]], now)
			      : gi_stream_tick(&ctx->streams[w->streams[k]], now);
	}
	worker_wake(w);
}

/* Process what is pending on the worker's rings; returns the number of batches. */
static uint32_t worker_serve(struct gi_exec_worker *w)
{
	struct gi_executor *ex = w->ex;
	uint32_t done = 0;

	for (uint32_t k = 0; k < w->n_rings; k++) {
		struct gi_batch_ring *ring = ex->conf.rings[w->rings[k]];
		uint64_t tail = w->tails[k];
		uint64_t pending = gi_ring_pending(ring, tail);

		for (; pending > 0; pending--, tail++, done++) {
			struct gi_batch_slot *slot = gi_ring_slot(ring, tail);
			uint64_t t0 = gi_now_ns();
			if (ex->conf.pipeline == GI_PIPE_SERIAL)
				gi_exec_slot_host(ex->conf.ctx, &w->ctr, slot, ring->max_pkts, ring->split, t0);
			else
				gi_exec_slot_phased(ex->conf.ctx, &w->ctr, w->owner, slot, ring->max_pkts, ring->split, t0,
						    w->scratch);
			uint64_t t1 = gi_now_ns();
			gi_hist_observe(&w->ctr.batch_latency, t1 > slot->t_publish_ns ? t1 - slot->t_publish_ns : 0);
			GI_COUNTER_ADD(&w->ctr.busy_ns, t1 - t0);
			gi_ring_complete(ring, tail);
			worker_wake(w);
		}
		w->tails[k] = tail;
	}
	return done;
}

uint32_t gi_exec_worker_poll(struct gi_exec_worker *w)
{
	uint32_t paused = __atomic_load_n(&w->ex->paused, __ATOMIC_RELAXED);
	uint32_t n = 0;

	if (paused == GI_EXEC_RUN) {
		n = worker_serve(w);
		GI_COUNTER_ADD(&w->ctr.loops, 1);
	}
	uint64_t now = gi_now_ns();
	if (now >= w->next_tick) {
		worker_tick(w, now, 0);
		w->next_tick = now + w->ex->conf.tick_ns;
	}
	return n;
}

/* A stream table handed over by gi_executor_swap_streams(). */
struct host_swap {
	struct gi_exec_ctx next;
	const int32_t *carry;
};

/*
 * The (only) worker, between batches.  Carried streams keep everything but
 * their live parameters (window, timeout, format params with resync limit,
 * chain link), which come from the new table.
 */
static void host_apply_swap(struct gi_executor *ex, const struct host_swap *sw, uint64_t now)
{
	struct gi_exec_ctx *cur = ex->conf.ctx;
	static uint8_t kept[65536]; /* the one worker only; indices are uint16_t */

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
		if (!kept[i]) {
			gi_stream_flush(&cur->streams[i], now);
			gi_stream_wake(&cur->streams[i]);
		}
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
	struct gi_exec_worker *w = arg;
	struct gi_executor *ex = w->ex;
	struct gi_idle idle;

	gi_idle_init(&idle, ex->conf.idle);
	w->next_tick = gi_now_ns() + ex->conf.tick_ns;
	for (;;) {
		int quit = __atomic_load_n(&ex->quit, __ATOMIC_ACQUIRE);
		uint32_t paused = __atomic_load_n(&ex->paused, __ATOMIC_RELAXED);
		uint32_t n = 0;

		if (paused == GI_EXEC_RUN)
			n = worker_serve(w);
		if (ex->n_workers == 1)
			host_check_mailbox(ex); /* between batches: no packet is half classified */
		/* progress only for a pass that served every ring: counting paused
		 * passes would hide a stall with batches waiting from the watchdog */
		if (paused == GI_EXEC_RUN)
			GI_COUNTER_ADD(&w->ctr.loops, 1);
		if (quit && n == 0 && paused != GI_EXEC_HANG)
			break;
		uint64_t now = gi_now_ns();
		if (now >= w->next_tick) {
			worker_tick(w, now, 0);
			w->next_tick = now + ex->conf.tick_ns;
		}
		if (n)
			gi_idle_work(&idle);
		else
			gi_idle_empty(&idle, w->next_tick - now);
	}
	worker_tick(w, gi_now_ns(), 1);
	__atomic_fetch_add(&ex->drained, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int host_start(struct gi_executor *ex)
{
	if (ex->conf.mode == GI_EXEC_INLINE)
		return 0; /* the rx lcores run the workers */
	for (uint32_t k = 0; k < ex->n_workers; k++) {
		struct gi_exec_worker *w = &ex->workers[k];
		pthread_attr_t attr;
		char name[16];
		int rc;

		pthread_attr_init(&attr);
		if (ex->conf.cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(ex->conf.cpu + (int)k, &set);
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		rc = pthread_create(&w->thread, &attr, host_loop, w);
		pthread_attr_destroy(&attr);
		if (rc != 0)
			return -rc; /* stop() takes down the ones that started */
		/* 15 characters at most (the kernel's limit): workers past 255 share names */
		snprintf(name, sizeof(name), ex->n_workers == 1 ? "gi-exec-host" : "gi-exec-host%u", k & 0xffu);
		pthread_setname_np(w->thread, name);
		w->running = 1;
	}
	return 0;
}

static int host_stop(struct gi_executor *ex, uint64_t timeout_ns)
{
	uint32_t running = 0;

	for (uint32_t k = 0; k < ex->n_workers; k++)
		running += (uint32_t)ex->workers[k].running;
	/* paused: resume and drain; hung (test hook): stays hung, stop times out */
	if (__atomic_load_n(&ex->paused, __ATOMIC_RELAXED) == GI_EXEC_PAUSE)
		__atomic_store_n(&ex->paused, GI_EXEC_RUN, __ATOMIC_RELAXED);
	__atomic_store_n(&ex->quit, 1, __ATOMIC_RELEASE);
	for (uint32_t r = 0; r < ex->conf.n_rings; r++)
		GI_STORE_RELEASE_U64(&ex->conf.rings[r]->stop, 1);

	if (ex->conf.mode == GI_EXEC_INLINE) {
		/* the rx lcores have returned: what they left is served here, then flushed */
		if (__atomic_load_n(&ex->paused, __ATOMIC_RELAXED) == GI_EXEC_HANG)
			return -ETIMEDOUT;
		if (__atomic_exchange_n(&ex->drained, 1, __ATOMIC_ACQ_REL))
			return 0;
		for (uint32_t k = 0; k < ex->n_workers; k++) {
			(void)worker_serve(&ex->workers[k]);
			worker_tick(&ex->workers[k], gi_now_ns(), 1);
		}
		return 0;
	}
	if (running == 0)
		return 0;
	uint64_t deadline = gi_now_ns() + timeout_ns;
	while (__atomic_load_n(&ex->drained, __ATOMIC_ACQUIRE) < running) {
		if (gi_now_ns() > deadline)
			return -ETIMEDOUT; /* leave the threads: they may still touch the rings */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	for (uint32_t k = 0; k < ex->n_workers; k++)
		if (ex->workers[k].running) {
			pthread_join(ex->workers[k].thread, NULL);
			ex->workers[k].running = 0;
		}
	return 0;
}

static void workers_free(struct gi_executor *ex)
{
	for (uint32_t k = 0; ex->workers && k < ex->n_workers; k++) {
		struct gi_exec_worker *w = &ex->workers[k];
		free(w->rings);
		free(w->tails);
		free(w->streams);
		free(w->scratch);
	}
	free(ex->workers);
	ex->workers = NULL;
}

static void host_destroy(struct gi_executor *ex)
{
	workers_free(ex);
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

	if (ex->swap_why[0])
		return -ENOTSUP;
	if (!ex->workers[0].running || __atomic_load_n(&ex->quit, __ATOMIC_ACQUIRE))
		return -EBUSY;
	__atomic_store_n(&ex->mailbox, &sw, __ATOMIC_RELEASE);
	while (__atomic_load_n(&ex->swaps_done, __ATOMIC_ACQUIRE) == done) {
		if (gi_now_ns() > deadline) {
			struct host_swap *expect = &sw;
			/* take the offer back; if the worker took it first, it is
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

static const char *mode_name(enum gi_exec_mode m)
{
	static const char *const names[] = { "auto", "persistent", "launch", "threads", "inline" };
	return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "?";
}

/* ---- ring groups and workers ---------------------------------------------------- */

/*
 * conf.groups, or the default (every ring, every stream), checked: each ring
 * in exactly one group, each stream in at most one.  *out points at
 * conf.groups or at *one.
 */
static int groups_resolve(const struct gi_executor_conf *c, struct gi_exec_group *one, uint32_t *ring_all,
			  uint16_t *stream_all, const struct gi_exec_group **out, uint32_t *n_out, char *err,
			  size_t errlen)
{
	if (!c->groups || c->n_groups == 0) {
		for (uint32_t r = 0; r < c->n_rings; r++)
			ring_all[r] = r;
		for (uint32_t s = 0; s < c->ctx->n_streams; s++)
			stream_all[s] = (uint16_t)s;
		*one = (struct gi_exec_group){ c->n_rings, ring_all, c->ctx->n_streams, stream_all };
		*out = one;
		*n_out = 1;
		return 0;
	}
	uint8_t *seen_r = calloc(c->n_rings + 1, 1), *seen_s = calloc(c->ctx->n_streams + 1, 1);
	int rc = 0;
	if (!seen_r || !seen_s)
		rc = -ENOMEM;
	for (uint32_t g = 0; rc == 0 && g < c->n_groups; g++) {
		for (uint32_t k = 0; rc == 0 && k < c->groups[g].n_rings; k++) {
			uint32_t r = c->groups[g].rings[k];
			if (r >= c->n_rings || seen_r[r]++) {
				snprintf(err, errlen, "executor: ring %u is in no ring or in two groups", r);
				rc = -EINVAL;
			}
		}
		for (uint32_t k = 0; rc == 0 && k < c->groups[g].n_streams; k++) {
			uint32_t s = c->groups[g].streams[k];
			if (s >= c->ctx->n_streams || seen_s[s]++) {
				snprintf(err, errlen, "executor: stream %u is in no table or in two groups", s);
				rc = -EINVAL;
			}
		}
	}
	for (uint32_t r = 0; rc == 0 && r < c->n_rings; r++)
		if (!seen_r[r]) {
			snprintf(err, errlen, "executor: ring %u is in no group", r);
			rc = -EINVAL;
		}
	free(seen_r);
	free(seen_s);
	*out = c->groups;
	*n_out = c->n_groups;
	return rc;
}

/*
 * Host workers: threads mode puts group g on worker g % threads; inline
 * puts it on the worker of the lcore that publishes its rings, which must be
 * one lcore — two lcores serving one group would write its streams from two
 * threads.  Sets each stream's group (= its worker) and local index.
 */
static int workers_build(struct gi_executor *ex, const struct gi_exec_group *groups, uint32_t n_groups, char *err,
			 size_t errlen)
{
	const struct gi_executor_conf *c = &ex->conf;
	struct gi_exec_ctx *ctx = c->ctx;
	uint32_t *worker_of = calloc(n_groups ? n_groups : 1, sizeof(*worker_of));
	uint32_t lcores[64], n_lcores = 0;
	int rc = 0;

	if (!worker_of)
		return -ENOMEM;
	if (c->mode == GI_EXEC_INLINE) {
		if (!c->ring_lcore) {
			snprintf(err, errlen, "executor.mode inline: the rx lcore of each ring is not known");
			free(worker_of);
			return -EINVAL;
		}
		for (uint32_t g = 0; g < n_groups && rc == 0; g++) {
			uint32_t l = groups[g].n_rings ? c->ring_lcore[groups[g].rings[0]] : 0;
			for (uint32_t k = 1; k < groups[g].n_rings; k++)
				if (c->ring_lcore[groups[g].rings[k]] != l) {
					snprintf(err, errlen,
						 "executor.mode inline: rings %u and %u may carry the same streams (a port "
						 "without rte_flow steering spreads them over its queues) but are served by "
						 "lcores %u and %u; put those queues on one lcore, or use mode threads",
						 groups[g].rings[0], groups[g].rings[k], l, c->ring_lcore[groups[g].rings[k]]);
					rc = -EINVAL;
					break;
				}
			uint32_t w = 0;
			while (w < n_lcores && lcores[w] != l)
				w++;
			if (w == n_lcores) {
				if (n_lcores == 64) {
					snprintf(err, errlen, "executor.mode inline: more than 64 rx lcores");
					rc = -E2BIG;
					break;
				}
				lcores[n_lcores++] = l;
			}
			worker_of[g] = w;
		}
		ex->n_workers = n_lcores ? n_lcores : 1;
	} else {
		uint32_t t = c->threads ? c->threads : 1;
		ex->n_workers = GI_MAX(1u, GI_MIN(t, n_groups));
		for (uint32_t g = 0; g < n_groups; g++)
			worker_of[g] = g % ex->n_workers;
	}
	/* workers hold cache-line aligned counters: an aligned array */
	size_t wbytes = GI_ALIGN_UP((size_t)ex->n_workers * sizeof(*ex->workers), GI_CACHE_LINE);
	ex->workers = rc == 0 ? aligned_alloc(GI_CACHE_LINE, wbytes) : NULL;
	if (rc == 0 && !ex->workers)
		rc = -ENOMEM;
	if (ex->workers)
		memset(ex->workers, 0, wbytes);
	for (uint32_t k = 0; rc == 0 && k < ex->n_workers; k++) {
		struct gi_exec_worker *w = &ex->workers[k];
		uint32_t nr = 0, ns = 0, max_pkts = 1;
		w->ex = ex;
		w->id = k;
		w->owner = ex->n_workers == 1 ? GI_GROUP_ANY : k;
		w->lcore = c->mode == GI_EXEC_INLINE && k < n_lcores ? lcores[k] : 0;
		for (uint32_t g = 0; g < n_groups; g++)
			if (worker_of[g] == k)
				nr += groups[g].n_rings, ns += groups[g].n_streams;
		w->rings = calloc(nr ? nr : 1, sizeof(*w->rings));
		w->tails = calloc(nr ? nr : 1, sizeof(*w->tails));
		w->streams = calloc(ns ? ns : 1, sizeof(*w->streams));
		if (!w->rings || !w->tails || !w->streams) {
			rc = -ENOMEM;
			break;
		}
		for (uint32_t g = 0; g < n_groups; g++) {
			if (worker_of[g] != k)
				continue;
			for (uint32_t i = 0; i < groups[g].n_rings; i++) {
				uint32_t r = groups[g].rings[i];
				w->tails[w->n_rings] = GI_LOAD_RELAXED_U64(&c->rings[r]->tail);
				w->rings[w->n_rings++] = r;
				max_pkts = GI_MAX(max_pkts, c->rings[r]->max_pkts);
			}
			for (uint32_t i = 0; i < groups[g].n_streams; i++) {
				uint16_t s = groups[g].streams[i];
				ctx->streams[s].group = (uint16_t)k;
				ctx->streams[s].local = (uint16_t)w->n_streams;
				w->streams[w->n_streams++] = s;
			}
		}
		if (posix_memalign((void **)&w->scratch, GI_CACHE_LINE, gi_batch_scratch_bytes(max_pkts)) != 0) {
			w->scratch = NULL;
			rc = -ENOMEM;
		}
	}
	free(worker_of);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "executor: out of memory");
	return rc;
}

/* ---- the executor -------------------------------------------------------------------- */

static struct gi_executor *executor_alloc(const struct gi_executor_conf *conf)
{
	struct gi_executor *ex = calloc(1, sizeof(*ex));

	if (!ex)
		return NULL;
	ex->conf = *conf;
	if (ex->conf.tick_ns == 0)
		ex->conf.tick_ns = 1000000;
	if (ex->conf.threads_per_ring == 0)
		ex->conf.threads_per_ring = 256;
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
static int cuda_create(struct gi_executor *ex, const struct gi_exec_group *groups, uint32_t n_groups, char *err,
		       size_t errlen, int *rc)
{
	char why[sizeof(ex->why) - 64];
	struct gi_cuda_exec *c = NULL;
	const char *name = backend_name(ex->conf.backend);
	struct gi_executor_conf cc = ex->conf;

	cc.groups = groups;
	cc.n_groups = n_groups;
	*rc = gi_cuda_exec_create(&cc, &c, why, sizeof(why));
	if (*rc == 0) {
		ex->backend = c;
		ex->ops = &cuda_ops;
		snprintf(ex->why, sizeof(ex->why), "%s: %s", name, gi_cuda_exec_describe(c));
		snprintf(ex->swap_why, sizeof(ex->swap_why),
			 "executor cuda keeps stream state on the GPU, where it cannot be swapped safely");
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

static int conf_check(const struct gi_executor_conf *conf, char *err, size_t errlen)
{
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
	if ((unsigned)conf->mode > GI_EXEC_INLINE) {
		snprintf(err, errlen, "unknown executor mode %d", (int)conf->mode);
		return -EINVAL;
	}
	if (conf->pipeline != GI_PIPE_PHASED && conf->pipeline != GI_PIPE_SERIAL) {
		snprintf(err, errlen, "unknown executor pipeline %d", (int)conf->pipeline);
		return -EINVAL;
	}
	if ((conf->backend == GI_BACKEND_CUDA || conf->backend == GI_BACKEND_GPUDEV) &&
	    (conf->mode == GI_EXEC_THREADS || conf->mode == GI_EXEC_INLINE || conf->pipeline == GI_PIPE_SERIAL)) {
		snprintf(err, errlen,
			 "executor backend '%s' runs the phased kernels on the GPU: executor.mode %s and pipeline %s "
			 "are host modes (use mode persistent or launch, pipeline phased)",
			 backend_name(conf->backend), mode_name(conf->mode),
			 conf->pipeline == GI_PIPE_SERIAL ? "serial" : "phased");
		return -EINVAL;
	}
	if (conf->threads_per_ring && (conf->threads_per_ring % 32 || conf->threads_per_ring > GI_EXEC_MAX_CTA)) {
		snprintf(err, errlen, "executor.threads_per_ring %u is not a multiple of 32 in [32, %u]",
			 conf->threads_per_ring, GI_EXEC_MAX_CTA);
		return -EINVAL;
	}
	return 0;
}

int gi_executor_create(const struct gi_executor_conf *conf, struct gi_executor **out, char *err, size_t errlen)
{
	struct gi_executor *ex;
	struct gi_exec_group one;
	const struct gi_exec_group *groups;
	uint32_t n_groups, *ring_all = NULL;
	uint16_t *stream_all = NULL;
	int rc;

	if ((rc = conf_check(conf, err, errlen)) < 0)
		return rc;
	ex = executor_alloc(conf);
	ring_all = calloc(conf->n_rings + 1, sizeof(*ring_all));
	stream_all = calloc(conf->ctx->n_streams + 1, sizeof(*stream_all));
	if (!ex || !ring_all || !stream_all) {
		snprintf(err, errlen, "executor: out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = groups_resolve(conf, &one, ring_all, stream_all, &groups, &n_groups, err, errlen)) < 0)
		goto out;
#if HAVE_CUDA
	if (conf->backend != GI_BACKEND_HOST) {
		if (cuda_create(ex, groups, n_groups, err, errlen, &rc) == 0)
			goto out; /* cuda, or its error */
		/* auto without a usable GPU: host, with ex->why saying so */
	}
#else
	if (conf->backend == GI_BACKEND_AUTO)
		snprintf(ex->why, sizeof(ex->why), "auto: this build has no CUDA executor; using host");
#endif
	ex->ops = &host_ops;
	if (ex->conf.mode == GI_EXEC_PERSISTENT || ex->conf.mode == GI_EXEC_LAUNCH || ex->conf.mode == GI_EXEC_AUTO)
		ex->conf.mode = GI_EXEC_THREADS; /* persistent/launch describe kernels; on the host they mean threads */
	if ((rc = workers_build(ex, groups, n_groups, err, errlen)) < 0)
		goto out;
	if (ex->n_workers > 1 || ex->conf.mode == GI_EXEC_INLINE)
		snprintf(ex->swap_why, sizeof(ex->swap_why),
			 "executor host runs %u %s, each the only writer of its streams: a live swap would have to "
			 "stop them all",
			 ex->n_workers, ex->conf.mode == GI_EXEC_INLINE ? "rx lcores inline" : "worker threads");
out:
	free(ring_all);
	free(stream_all);
	if (rc < 0) {
		if (ex && ex->ops == &host_ops)
			workers_free(ex);
		free(ex);
		return rc;
	}
	*out = ex;
	return 0;
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

static void counters_add(struct gi_exec_counters *sum, const struct gi_exec_counters *c)
{
	const uint64_t *src = (const uint64_t *)c;
	uint64_t *dst = (uint64_t *)sum;
	for (size_t w = 0; w < sizeof(*c) / 8; w++)
		dst[w] += GI_COUNTER_READ(&src[w]);
}

void gi_executor_counters(const struct gi_executor *ex, struct gi_exec_counters *out)
{
	memset(out, 0, sizeof(*out));
#if HAVE_CUDA
	if (ex->ops == &cuda_ops) {
		for (uint32_t g = 0; g < gi_cuda_exec_groups(ex->backend); g++)
			counters_add(out, gi_cuda_exec_counters(ex->backend, g));
		return;
	}
#endif
	for (uint32_t k = 0; k < ex->n_workers; k++)
		counters_add(out, &ex->workers[k].ctr);
}

uint32_t gi_executor_workers(const struct gi_executor *ex)
{
#if HAVE_CUDA
	if (ex->ops == &cuda_ops)
		return gi_cuda_exec_groups(ex->backend);
#endif
	return ex->n_workers;
}

uint32_t gi_executor_progress(const struct gi_executor *ex, uint64_t *w, uint32_t max)
{
	uint32_t n = GI_MIN(max, gi_executor_workers(ex));
	for (uint32_t k = 0; k < n; k++) {
#if HAVE_CUDA
		if (ex->ops == &cuda_ops) {
			w[k] = GI_COUNTER_READ(&gi_cuda_exec_counters(ex->backend, k)->loops);
			continue;
		}
#endif
		w[k] = GI_COUNTER_READ(&ex->workers[k].ctr.loops);
	}
	return n;
}

struct gi_exec_worker *gi_executor_inline_worker(struct gi_executor *ex, uint32_t lcore)
{
	if (ex->ops != &host_ops || ex->conf.mode != GI_EXEC_INLINE)
		return NULL;
	for (uint32_t k = 0; k < ex->n_workers; k++)
		if (ex->workers[k].lcore == lcore && ex->workers[k].n_rings) {
			ex->workers[k].next_tick = gi_now_ns() + ex->conf.tick_ns;
			return &ex->workers[k];
		}
	return NULL;
}

int gi_executor_swap_streams(struct gi_executor *ex, const struct gi_exec_ctx *next, const int32_t *carry,
			     uint64_t timeout_ns)
{
	if (!ex->ops->swap_streams || ex->swap_why[0])
		return -ENOTSUP;
	return ex->ops->swap_streams(ex, next, carry, timeout_ns);
}

int gi_executor_can_swap_streams(const struct gi_executor *ex)
{
	return ex->ops->swap_streams != NULL && !ex->swap_why[0];
}

const char *gi_executor_swap_why(const struct gi_executor *ex)
{
	return ex->swap_why;
}

void gi_executor_set_paused(struct gi_executor *ex, int paused)
{
	ex->ops->set_paused(ex, paused);
}
