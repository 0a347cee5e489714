/*
 * executor_host.c — the host backend (executor.c has the table): workers
 * that run the phases of batch.h, or the serial reference path, on whole
 * ring groups; threads mode (host_loop) or inline on the rx lcores
 * (gi_exec_worker_poll); ticks, consumer wake-ups, the drain at stop, and
 * the live stream swap of a single worker.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "executor_internal.h"
#include "frame_wake.h"
#include "phase_commit.h"
#include "phase_parse.h"
#include "phase_place.h"
#include "phase_sequence.h"
#include "trip.h"

/* ---- one batch on one worker ------------------------------------------------ */

void gi_exec_slot_host(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, struct gi_batch_slot *slot,
		       uint32_t max_pkts, uint32_t split, uint64_t now)
{
	struct gi_pkt_desc d;
	struct gi_place pl;
	struct gi_l4_memo memo;
	uint32_t n = GI_MIN(slot->n_pkts, max_pkts);

	gi_l4_memo_reset(&memo);
	for (uint32_t i = 0; i < n; i++) {
		gi_slot_pkt(slot, max_pkts, split, i, &d);
		if (gi_exec_classify(ctx, ctr, slot->port, d.pkt, d.len, d.seg1, d.hdr_len, d.nic_ns, now, &memo,
				     &pl)) {
			gi_place_copy(&pl, 0, 1);
			gi_exec_commit(ctx, &pl, now);
		}
	}
	GI_COUNTER_ADD(&ctr->packets, n);
	GI_COUNTER_ADD(&ctr->batches, 1);
}

/* The batch's trip (trip.h) on one worker: each step's one worker, then the next step. */
#define GI_TRIP_FN static inline void host_trip
#define GI_TRIP_BE void
#define GI_TRIP_FOR(step, w, nw) for (uint32_t w = 0, nw = 1; w < nw; w++)
#define GI_TRIP_PLACE_FOR(w, nw, lane, nlanes) for (uint32_t w = 0, nw = 1, lane = 0, nlanes = 1; w < nw; w++)
#define GI_TRIP_EARLY_FOR(w, nw, lane, nlanes) /* none: one worker copies each payload in phase 3 */ \
	for (uint32_t w = 0, nw = 0, lane = 0, nlanes = 1; w < nw; w++)
#define GI_TRIP_SOLO_FOR(lane, nlanes) for (uint32_t lane = 0, nlanes = 1, once_ = 1; once_; once_ = 0)
#define GI_TRIP_COMMIT_FOR(w, nw, lane, nlanes) for (uint32_t w = 0, nw = 1, lane = 0, nlanes = 1; w < nw; w++)
#define GI_TRIP_ONE if (1)
#define GI_TRIP_BARRIER() do { } while (0)
#define GI_TRIP_ALL(x) (x)
#define GI_TRIP_ANY(x) (x)
#define GI_TRIP_SCAN_RANKS(t, be) \
	((t)->n_streams == 1 ? gi_solo_scan_serial((t)->h) : gi_scan_ranks_serial((t)->ctx, (t)->h), 1u)
#define GI_TRIP_SCAN_STARTS(t, be) gi_solo_frames_serial((t)->h, (t)->max_pkts)
#define GI_TRIP_MARK(step) do { } while (0)
#define GI_TRIP_BESIDE(t, be) do { } while (0)
#include "trip_body.h"

void gi_exec_slot_phased(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, uint32_t owner,
			 const uint16_t *streams, uint32_t n_streams, struct gi_batch_slot *slot, uint32_t max_pkts,
			 uint32_t split, uint64_t now, struct gi_batch_hdr *h)
{
	gi_batch_begin(h, GI_MIN(slot->n_pkts, max_pkts));
	struct gi_trip t = { .ctx = ctx, .slot = slot, .h = h, .streams = streams,
			     .n_streams = streams ? n_streams : ctx->n_streams, .owner = owner, .max_pkts = max_pkts,
			     .split = split, .t8 = NULL, .now = now, .icrc_inline = 1, .late_next = 0, .early = 0 };
	host_trip(&t, NULL);
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

/*
 * Process what is pending on the worker's rings; returns the number of
 * batches.  `on_lcore`: the rx lcore that received them runs it (then
 * pipeline auto is serial, else phased: executor.h).
 */
static uint32_t worker_serve(struct gi_exec_worker *w, int on_lcore)
{
	struct gi_executor *ex = w->ex;
	uint32_t done = 0;
	const int serial = ex->conf.pipeline == GI_PIPE_SERIAL || (ex->conf.pipeline == GI_PIPE_AUTO && on_lcore);

	for (uint32_t k = 0; k < w->n_rings; k++) {
		struct gi_batch_ring *ring = ex->conf.rings[w->rings[k]];
		uint64_t tail = w->tails[k];
		uint64_t pending = gi_ring_pending(ring, tail);

		for (; pending > 0; pending--, tail++, done++) {
			struct gi_batch_slot *slot = gi_ring_slot(ring, tail);
			uint64_t t0 = gi_now_ns();
			if (serial)
				gi_exec_slot_host(ex->conf.ctx, &w->ctr, slot, ring->max_pkts, ring->split, t0);
			else
				gi_exec_slot_phased(ex->conf.ctx, &w->ctr, w->owner,
						    w->owner == GI_GROUP_ANY ? NULL : w->streams, w->n_streams, slot,
						    ring->max_pkts, ring->split, t0, w->scratch);
			uint64_t t1 = gi_now_ns();
			gi_hist_observe(&w->ctr.batch_latency, t1 > slot->t_publish_ns ? t1 - slot->t_publish_ns : 0);
			gi_hist_observe(&w->ctr.batch_service, t1 - t0);
			GI_COUNTER_ADD(&w->ctr.busy_ns, t1 - t0);
			gi_ring_complete(ring, tail);
			worker_wake(w);
		}
		w->tails[k] = tail;
	}
	return done;
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

/* ---- mode auto: the rx lcore or the worker's own thread, measured ---------------- */

int gi_exec_auto_saturated(uint64_t passes, uint64_t empty)
{
	return passes >= 64 && empty * 100 < passes; /* fewer than 1% of the lcore's passes found nothing */
}

int gi_exec_auto_losing(uint64_t inline_pps, uint64_t thread_pps)
{
	return thread_pps * 5 < inline_pps * 4; /* below 80% of inline */
}

int gi_exec_auto_keep_thread(uint64_t inline_pps, uint64_t thread_pps)
{
	/* 10% better: below that, the one core inline uses wins (and the packets stay in its cache) */
	return thread_pps > 0 && thread_pps * 10 > inline_pps * 11;
}

static int host_auto(const struct gi_executor *ex)
{
	return ex->conf.mode == GI_EXEC_AUTO;
}

static void futex_wake_all(uint32_t *word)
{
	(void)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void auto_window(struct gi_exec_worker *w, uint64_t now)
{
	w->au.win_start = now;
	w->au.win_pkts = w->ctr.packets;
	w->au.passes = w->au.empty = 0;
}

/* Packets per second the worker served in the window so far. */
static uint64_t auto_window_pps(const struct gi_exec_worker *w, uint64_t now)
{
	uint64_t dt = now - w->au.win_start;
	return dt ? (uint64_t)((double)(w->ctr.packets - w->au.win_pkts) * 1e9 / (double)dt) : 0;
}

/* Between two batches, by the runner: from now on `to` runs the worker. */
static void auto_hand_over(struct gi_exec_worker *w, uint32_t to, uint64_t now)
{
	auto_window(w, now);
	w->next_tick = now + w->ex->conf.tick_ns;
	__atomic_store_n(&w->au.runner, to, __ATOMIC_RELEASE);
	if (to == GI_RUN_THREAD)
		futex_wake_all(&w->au.runner);
}

static int rate_moved(uint64_t a, uint64_t b)
{
	return a > 2 * b || b > 2 * a;
}

/*
 * The runner, at its ticks: close a window, and try, keep or hand back
 * (executor.h).  1 when it handed the worker over: the caller touches it no more.
 */
static int auto_control(struct gi_exec_worker *w, uint64_t now)
{
	const struct gi_executor_conf *c = &w->ex->conf;
	struct gi_exec_auto *a = &w->au;
	uint64_t win = c->auto_window_ns ? c->auto_window_ns : GI_AUTO_WINDOW_NS;
	uint64_t base = c->auto_holdoff_ns ? c->auto_holdoff_ns : GI_AUTO_HOLDOFF_NS;
	int changed = 0;

	uint64_t pps = 0, early = 0;
	if (now - a->win_start < win) {
		/* a trial the thread is clearly losing (below 80% of inline after a fifth of the
		 * window) ends there: the worse way runs 20 ms, not the whole window */
		if (a->state != GI_AUTO_TRIAL || now - a->win_start < win / 5)
			return 0;
		pps = auto_window_pps(w, now);
		if (!gi_exec_auto_losing(a->inline_pps, pps))
			return 0;
		early = 1;
	} else {
		pps = auto_window_pps(w, now);
	}
	/* the load changed: 2x from the rate the worker was placed at, three windows in a row (not a
	 * burst); on the thread, counted only once its least stay is over, so that a change within
	 * it is acted upon, not forgotten */
	if ((a->state == GI_AUTO_INLINE || (a->state == GI_AUTO_THREAD && now >= a->next_trial)) &&
	    rate_moved(pps, a->kept_pps)) {
		if (++a->moved >= 3) {
			changed = 1;
			a->moved = 0;
			a->kept_pps = pps;
		}
	} else {
		a->moved = 0;
	}
	switch (a->state) {
	case GI_AUTO_INLINE:
		if (changed) { /* what was learnt is old: try again soon, but trials stay `base` apart */
			a->holdoff_ns = base;
			a->next_trial = GI_MIN(a->next_trial, a->last_trial + base);
		}
		if (now >= a->next_trial && gi_exec_auto_saturated(a->passes, a->empty)) {
			__atomic_store_n(&a->inline_pps, pps, __ATOMIC_RELAXED);
			__atomic_store_n(&a->trials, a->trials + 1, __ATOMIC_RELAXED);
			a->last_trial = now;
			a->state = GI_AUTO_TRIAL;
			auto_hand_over(w, GI_RUN_THREAD, now);
			return 1;
		}
		break;
	case GI_AUTO_TRIAL: {
		int keep = !early && gi_exec_auto_keep_thread(a->inline_pps, pps);
		__atomic_store_n(&a->thread_pps, pps, __ATOMIC_RELAXED);
		__atomic_store_n(&a->trial_ns, now - a->win_start, __ATOMIC_RELAXED);
		__atomic_store_n(&a->kept_thread, (uint32_t)keep, __ATOMIC_RELAXED);
		__atomic_store_n(&a->decisions, a->decisions + 1, __ATOMIC_RELEASE);
		if (keep) {
			a->state = GI_AUTO_THREAD;
			a->kept_pps = pps;
			a->holdoff_ns = base;
			a->next_trial = now + base; /* the least stay on the thread */
			break;
		}
		a->state = GI_AUTO_INLINE;
		a->kept_pps = a->inline_pps;
		a->next_trial = now + a->holdoff_ns;
		a->holdoff_ns = GI_MIN(2 * a->holdoff_ns, 64 * base);
		auto_hand_over(w, GI_RUN_LCORE, now);
		return 1;
	}
	case GI_AUTO_THREAD:
		if (changed) {
			a->state = GI_AUTO_INLINE; /* and tried again if the lcore saturates */
			a->next_trial = now;
			__atomic_store_n(&a->returns, a->returns + 1, __ATOMIC_RELAXED);
			auto_hand_over(w, GI_RUN_LCORE, now);
			return 1;
		}
		break;
	}
	auto_window(w, now);
	return 0;
}

/* The thread of an auto worker waits here while its rx lcore runs it; 1 when the thread runs it. */
static int auto_thread_runs(struct gi_exec_worker *w, int quit)
{
	if (__atomic_load_n(&w->au.runner, __ATOMIC_ACQUIRE) == GI_RUN_THREAD)
		return 1;
	if (!quit) {
		struct timespec ts = { 0, 100000000 }; /* quit is seen within 0.1 s without a wake */
		(void)syscall(SYS_futex, &w->au.runner, FUTEX_WAIT_PRIVATE, GI_RUN_LCORE, &ts, NULL, 0);
	}
	return 0;
}

int gi_executor_auto_info(const struct gi_executor *ex, uint32_t k, struct gi_exec_auto_info *out)
{
	if (ex->ops != &gi_exec_host_ops || !host_auto(ex))
		return -ENOTSUP;
	if (k >= ex->n_workers)
		return -ERANGE;
	const struct gi_exec_worker *w = &ex->workers[k];
	const struct gi_exec_auto *a = &w->au;
	out->lcore = w->lcore;
	out->decisions = __atomic_load_n(&a->decisions, __ATOMIC_ACQUIRE);
	out->on_thread = __atomic_load_n(&a->runner, __ATOMIC_RELAXED) == GI_RUN_THREAD;
	out->trials = __atomic_load_n(&a->trials, __ATOMIC_RELAXED);
	out->inline_pps = __atomic_load_n(&a->inline_pps, __ATOMIC_RELAXED);
	out->thread_pps = __atomic_load_n(&a->thread_pps, __ATOMIC_RELAXED);
	out->kept_thread = __atomic_load_n(&a->kept_thread, __ATOMIC_RELAXED);
	out->returns = __atomic_load_n(&a->returns, __ATOMIC_RELAXED);
	out->thread_batches = __atomic_load_n(&a->thread_batches, __ATOMIC_RELAXED);
	out->trial_ns = __atomic_load_n(&a->trial_ns, __ATOMIC_RELAXED);
	return 0;
}

struct gi_exec_worker *gi_executor_inline_worker(struct gi_executor *ex, uint32_t lcore)
{
	if (ex->ops != &gi_exec_host_ops || (ex->conf.mode != GI_EXEC_INLINE && ex->conf.mode != GI_EXEC_AUTO))
		return NULL;
	for (uint32_t k = 0; k < ex->n_workers; k++)
		if (ex->workers[k].lcore == lcore && ex->workers[k].n_rings) {
			uint64_t now = gi_now_ns();
			ex->workers[k].next_tick = now + ex->conf.tick_ns;
			ex->workers[k].au.win_start = now; /* before the lcore starts: its thread waits for `runner` */
			return &ex->workers[k];
		}
	return NULL;
}

uint32_t gi_executor_inline_workers(const struct gi_executor *ex)
{
	uint32_t n = 0;

	if (ex->ops != &gi_exec_host_ops || (ex->conf.mode != GI_EXEC_INLINE && !host_auto(ex)))
		return 0;
	for (uint32_t k = 0; k < ex->n_workers; k++)
		n += ex->conf.mode == GI_EXEC_INLINE ||
		     __atomic_load_n(&ex->workers[k].au.runner, __ATOMIC_RELAXED) == GI_RUN_LCORE;
	return n;
}

uint32_t gi_exec_worker_poll(struct gi_exec_worker *w, uint32_t rx_empty)
{
	struct gi_executor *ex = w->ex;
	int au = host_auto(ex);
	uint32_t paused, n = 0;

	if (au && __atomic_load_n(&w->au.runner, __ATOMIC_ACQUIRE) != GI_RUN_LCORE)
		return 0; /* its thread runs it */
	paused = __atomic_load_n(&ex->paused, __ATOMIC_RELAXED);
	if (paused == GI_EXEC_RUN) {
		n = worker_serve(w, 1);
		GI_COUNTER_ADD(&w->ctr.loops, 1);
	}
	if (au) {
		w->au.passes++;
		w->au.empty += rx_empty != 0;
		if (ex->n_workers == 1)
			host_check_mailbox(ex); /* between batches, as the thread would */
	}
	uint64_t now = gi_now_ns();
	if (now >= w->next_tick) {
		worker_tick(w, now, 0);
		w->next_tick = now + ex->conf.tick_ns;
		if (au && paused == GI_EXEC_RUN)
			(void)auto_control(w, now); /* the last touch of w if it handed it over */
		else if (au)
			auto_window(w, now); /* a paused window measures nothing */
	}
	return n;
}

static void *host_loop(void *arg)
{
	struct gi_exec_worker *w = arg;
	struct gi_executor *ex = w->ex;
	struct gi_idle idle;
	int au = host_auto(ex);

	gi_idle_init(&idle, ex->conf.idle);
	if (!au)
		w->next_tick = gi_now_ns() + ex->conf.tick_ns; /* auto: set by the hand-over */
	for (;;) {
		int quit = __atomic_load_n(&ex->quit, __ATOMIC_ACQUIRE);
		uint32_t paused = __atomic_load_n(&ex->paused, __ATOMIC_RELAXED);
		uint32_t n = 0;

		if (au && !auto_thread_runs(w, quit)) {
			if (quit)
				break; /* the lcore ran it last; host_stop() drains what is left */
			continue;
		}
		if (paused == GI_EXEC_RUN)
			n = worker_serve(w, 0);
		if (au && n)
			__atomic_store_n(&w->au.thread_batches, w->au.thread_batches + n, __ATOMIC_RELAXED);
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
			if (au && paused == GI_EXEC_RUN && auto_control(w, now))
				continue; /* the lcore runs it now */
			if (au && paused != GI_EXEC_RUN)
				auto_window(w, now); /* a paused window measures nothing */
		}
		if (n)
			gi_idle_work(&idle);
		else
			gi_idle_empty(&idle, w->next_tick - now);
	}
	if (!au)
		worker_tick(w, gi_now_ns(), 1); /* auto: host_stop() flushes, once both runners have left */
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

	if (host_auto(ex))
		for (uint32_t k = 0; k < ex->n_workers; k++)
			futex_wake_all(&ex->workers[k].au.runner); /* the threads asleep see quit */
	if (running) {
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
	}
	if (ex->conf.mode == GI_EXEC_INLINE || host_auto(ex)) {
		/* the rx lcores have returned (and auto's threads): what they left is served here, then flushed */
		if (__atomic_load_n(&ex->paused, __ATOMIC_RELAXED) == GI_EXEC_HANG)
			return -ETIMEDOUT;
		if (__atomic_exchange_n(&ex->flushed, 1, __ATOMIC_ACQ_REL))
			return 0;
		for (uint32_t k = 0; k < ex->n_workers; k++) {
			(void)worker_serve(&ex->workers[k], 0);
			worker_tick(&ex->workers[k], gi_now_ns(), 1);
		}
	}
	return 0;
}

void gi_exec_workers_free(struct gi_executor *ex)
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
	gi_exec_workers_free(ex);
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

static uint32_t host_workers(const struct gi_executor *ex)
{
	return ex->n_workers;
}

static const struct gi_exec_counters *host_counters(const struct gi_executor *ex, uint32_t k)
{
	return &ex->workers[k].ctr;
}

const struct gi_executor_ops gi_exec_host_ops = {
	.name = "host",
	.start = host_start,
	.stop = host_stop,
	.destroy = host_destroy,
	.set_paused = host_set_paused,
	.swap_streams = host_swap_streams,
	.workers = host_workers,
	.counters = host_counters,
	.error = NULL, /* its calls' return codes say it all */
};

/*
 * Modes inline and auto: the rx lcore of each group, which must publish all
 * of the group's rings.  0 with lcores[] the distinct lcores (64 at most)
 * and worker_of[g] (when not NULL) group g's index in it; -EINVAL when ring
 * bad_i of group bad_g is on another lcore than the group's ring 0; -E2BIG
 * past 64 lcores.
 */
int gi_exec_group_lcores(const struct gi_executor_conf *c, const struct gi_exec_group *groups, uint32_t n_groups,
			 uint32_t *worker_of, uint32_t lcores[64], uint32_t *n_lcores, uint32_t *bad_g, uint32_t *bad_i)
{
	*n_lcores = 0;
	for (uint32_t g = 0; g < n_groups; g++) {
		uint32_t l = groups[g].n_rings ? c->ring_lcore[groups[g].rings[0]] : 0, w = 0;
		for (uint32_t k = 1; k < groups[g].n_rings; k++)
			if (c->ring_lcore[groups[g].rings[k]] != l) {
				*bad_g = g;
				*bad_i = k;
				return -EINVAL;
			}
		while (w < *n_lcores && lcores[w] != l)
			w++;
		if (w == *n_lcores) {
			if (*n_lcores == 64)
				return -E2BIG;
			lcores[(*n_lcores)++] = l;
		}
		if (worker_of)
			worker_of[g] = w;
	}
	return 0;
}

/*
 * Host workers: threads mode puts group g on worker g % threads; inline
 * and auto put it on the worker of the lcore that publishes its rings, which
 * must be one lcore — two lcores serving one group would write its streams from two
 * threads.  Sets each stream's group (= its worker) and local index.
 */
int gi_exec_workers_build(struct gi_executor *ex, const struct gi_exec_group *groups, uint32_t n_groups, char *err,
			  size_t errlen)
{
	const struct gi_executor_conf *c = &ex->conf;
	struct gi_exec_ctx *ctx = c->ctx;
	uint32_t *worker_of = calloc(n_groups ? n_groups : 1, sizeof(*worker_of));
	uint32_t lcores[64], n_lcores = 0;
	int per_lcore = c->mode == GI_EXEC_INLINE || c->mode == GI_EXEC_AUTO; /* auto: executor.c checked it can */
	int rc = 0;

	if (!worker_of)
		return -ENOMEM;
	if (per_lcore) {
		if (!c->ring_lcore) {
			snprintf(err, errlen, "executor.mode inline: the rx lcore of each ring is not known");
			free(worker_of);
			return -EINVAL;
		}
		uint32_t bad_g, bad_i;
		rc = gi_exec_group_lcores(c, groups, n_groups, worker_of, lcores, &n_lcores, &bad_g, &bad_i);
		if (rc == -EINVAL)
			snprintf(err, errlen,
				 "executor.mode inline: rings %u and %u may carry the same streams (a port "
				 "without rte_flow steering spreads them over its queues) but are served by "
				 "lcores %u and %u; put those queues on one lcore, or use mode threads",
				 groups[bad_g].rings[0], groups[bad_g].rings[bad_i], c->ring_lcore[groups[bad_g].rings[0]],
				 c->ring_lcore[groups[bad_g].rings[bad_i]]);
		else if (rc == -E2BIG)
			snprintf(err, errlen, "executor.mode inline: more than 64 rx lcores");
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
		w->lcore = per_lcore && k < n_lcores ? lcores[k] : 0;
		w->au.holdoff_ns = c->auto_holdoff_ns ? c->auto_holdoff_ns : GI_AUTO_HOLDOFF_NS;
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

