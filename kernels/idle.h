/*
 * idle.h — the `idle: busy|adaptive` polling policy (host threads only).
 *
 * `busy` spins: the lowest latency and the line-rate default on dedicated
 * cores.  `adaptive` lets a poller that keeps finding nothing sleep for a
 * short, growing interval (capped well below any batch timeout a user would
 * set), and snaps back to full-speed polling on the first unit of work —
 * so small machines can share cores and SWaP-limited boxes save power.
 * Shared by the rx lcores (pmd_glue) and the host executor (kernels).
 */
#ifndef GI_IDLE_H
#define GI_IDLE_H

#include <stdint.h>
#include <time.h>

enum gi_idle_policy {
	GI_IDLE_BUSY = 0,
	GI_IDLE_ADAPTIVE = 1,
};

#define GI_IDLE_SPINS_BEFORE_SLEEP 512u /* empty polls before the first sleep */
#define GI_IDLE_MIN_SLEEP_NS 5000u
#define GI_IDLE_MAX_SLEEP_NS 200000u

struct gi_idle {
	enum gi_idle_policy policy;
	uint32_t empty;     /* consecutive empty polls */
	uint32_t sleep_ns;  /* next sleep length */
};

static inline void gi_idle_init(struct gi_idle *i, enum gi_idle_policy p)
{
	i->policy = p;
	i->empty = 0;
	i->sleep_ns = GI_IDLE_MIN_SLEEP_NS;
}

static inline void gi_idle_work(struct gi_idle *i)
{
	i->empty = 0;
	i->sleep_ns = GI_IDLE_MIN_SLEEP_NS;
}

/* The next sleep's length: its own, bounded by `max_ns`. */
static inline uint64_t gi_idle_sleep_ns(const struct gi_idle *i, uint64_t max_ns)
{
	return i->sleep_ns < max_ns ? i->sleep_ns : max_ns;
}

/* An empty poll; `max_ns` bounds the sleep (e.g. the time to a batch deadline). */
static inline void gi_idle_empty(struct gi_idle *i, uint64_t max_ns)
{
	if (i->policy == GI_IDLE_BUSY || ++i->empty < GI_IDLE_SPINS_BEFORE_SLEEP)
		return;
	uint64_t ns = gi_idle_sleep_ns(i, max_ns);
	if (ns == 0)
		return;
	struct timespec ts = { 0, (long)ns };
	nanosleep(&ts, NULL);
	/* doubled up to the cap, never past it: 5, 10, ... 160, 200 µs */
	i->sleep_ns = i->sleep_ns < GI_IDLE_MAX_SLEEP_NS / 2 ? 2 * i->sleep_ns : GI_IDLE_MAX_SLEEP_NS;
}

static inline uint64_t gi_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* GI_IDLE_H */
