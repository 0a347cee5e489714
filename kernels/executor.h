/*
 * executor.h — what runs the kernel bodies over the batch rings.
 *
 * A backend is chosen once, at start, through a small table of operations
 * (the l3fwd "lookup mode" habit): `host` runs the GI_HD bodies on a CPU
 * thread; `cuda` (the GPU path) runs the same bodies in a persistent kernel
 * or one launch per batch.  The daemon only sees this interface.
 *
 * Thread rules: create/start/stop/destroy from the main thread;
 * gi_executor_counters() and gi_executor_progress() from any thread
 * (relaxed reads of one-writer words); gi_exec_worker_poll() from the rx
 * lcore the worker belongs to (modes inline and auto on the host).
 */
#ifndef GI_EXECUTOR_H
#define GI_EXECUTOR_H

#include "batch.h"
#include "idle.h"
#include "ring.h"
#include "stream.h"

enum gi_backend {
	GI_BACKEND_AUTO = 0,
	GI_BACKEND_HOST,
	GI_BACKEND_CUDA,
	GI_BACKEND_GPUDEV,
};

/*
 * How the executor runs the phases (executor.mode):
 *   auto        persistent on cuda.  On the host: one worker per rx lcore,
 *               run inline by that lcore until it is saturated, then tried
 *               for a window on a thread of its own, and kept where it
 *               served more (gi_exec_auto below); threads when a group's
 *               rings are on several lcores
 *   persistent  cuda: one long-lived kernel, a CTA per ring group, polls the
 *               doorbells (lowest latency; holds an SM per group)
 *   launch      cuda: a host thread launches a pass per published run of
 *               slots (no SM held while idle)
 *   threads     host: executor.threads worker threads, each owning whole
 *               ring groups
 *   inline      host: each rx lcore runs the phases on its own batches right
 *               after receiving them, while the data is in its cache (a
 *               CPU-only box with dedicated cores)
 */
enum gi_exec_mode {
	GI_EXEC_AUTO = 0,
	GI_EXEC_PERSISTENT,
	GI_EXEC_LAUNCH,
	GI_EXEC_THREADS,
	GI_EXEC_INLINE,
};

/*
 * What runs a batch (executor.pipeline): the phased executor (batch.h: the
 * batch's trip), or the serial steps of classify.h (host only), a packet
 * at a time, which the tests compare the phased one against.  Both end
 * every batch in the same state, so a worker may run either on any batch.
 * Auto (the daemon's default) is the faster where it runs, as measured
 * (bench/README.md, "Which pipeline"): serial on the rx lcore that just
 * received the packets (they are in its cache; the trip's batch-wide
 * passes evict them before the copy), phased on a thread of its own and
 * on a GPU (its batch-wide header reads overlap the misses of packets
 * another core wrote).
 */
enum gi_exec_pipeline {
	GI_PIPE_PHASED = 0,
	GI_PIPE_SERIAL,
	GI_PIPE_AUTO,
};

/*
 * Rings whose streams may share packets — all queues of a port that has no
 * rte_flow steering (RSS may spread one stream over them), or one queue
 * whose streams are steered to it — are one group: one worker (a CTA, a
 * host thread, an rx lcore) serves all of them and is the only writer of
 * their streams.  The daemon builds the groups (main.c); NULL means every
 * ring and every stream in one group.
 */
struct gi_exec_group {
	uint32_t n_rings;
	const uint32_t *rings;   /* indices into gi_executor_conf.rings */
	uint32_t n_streams;
	const uint16_t *streams; /* indices into ctx->streams */
};

/*
 * The largest CTA the cuda kernels are compiled for (__launch_bounds__):
 * 512 threads leave ptxas 128 registers per thread, so nothing spills.
 */
#define GI_EXEC_MAX_CTA 512u

struct gi_executor_conf {
	enum gi_backend backend;
	enum gi_exec_mode mode;
	enum gi_exec_pipeline pipeline;
	const char *cuda_device;       /* cuda only: ordinal ("0") or PCI address ("0000:ca:00.0"); NULL: "0" */
	uint32_t threads;              /* mode threads: worker threads, default 1 (at most one per group) */
	uint32_t threads_per_ring;     /* cuda: CTA size, a multiple of 32 in [32, GI_EXEC_MAX_CTA], default 256 */
	enum gi_idle_policy idle;
	int cpu;                       /* pin host worker k to cpu + k, -1: leave to the scheduler */
	uint32_t n_rings;
	struct gi_batch_ring **rings;  /* in executor-visible memory */
	const uint32_t *ring_lcore;    /* mode inline: the rx lcore that publishes each ring */
	uint32_t n_groups;
	const struct gi_exec_group *groups;
	struct gi_exec_ctx *ctx;       /* streams and lookup table */
	uint64_t tick_ns;              /* how often frame timeouts are checked */
	uint32_t step_timing;          /* cuda: time each batch step by step (gi_exec_counters.step_ns, steps.h) */
	uint64_t auto_window_ns;       /* host auto: one measurement window (0: GI_AUTO_WINDOW_NS) */
	uint64_t auto_holdoff_ns;      /* host auto: the least time between trials (0: GI_AUTO_HOLDOFF_NS) */
};

struct gi_executor;

struct gi_executor_ops {
	const char *name;
	int (*start)(struct gi_executor *ex);
	/* rx has stopped: drain every ring, flush open frames, return when done */
	int (*stop)(struct gi_executor *ex, uint64_t timeout_ns);
	void (*destroy)(struct gi_executor *ex);
	void (*set_paused)(struct gi_executor *ex, int paused);
	/* live reload of streams; NULL where the backend cannot (gi_executor_swap_streams) */
	int (*swap_streams)(struct gi_executor *ex, const struct gi_exec_ctx *next, const int32_t *carry,
			    uint64_t timeout_ns);
	/* its workers (host threads or lcores, GPU CTAs), and worker k's counters, which it alone writes */
	uint32_t (*workers)(const struct gi_executor *ex);
	const struct gi_exec_counters *(*counters)(const struct gi_executor *ex, uint32_t k);
	/* what stopped it, "" when nothing did; NULL: never more than its calls' return codes say */
	const char *(*error)(const struct gi_executor *ex);
};

/*
 * Create an executor for `conf` (copied; the rings and ctx must outlive it).
 * Returns 0 or -errno, with a message in `err` (errlen bytes) saying which
 * backend failed and why:
 *   -ENOTSUP  a backend this build lacks (cuda/gpudev without HAVE_CUDA)
 *   -ENODEV   cuda/gpudev: no CUDA device or driver on this machine
 *   -EIO      cuda/gpudev: a CUDA call failed (the message names it)
 *   -EINVAL   bad configuration, -ENOMEM out of memory
 * backend auto tries cuda (when built) and takes host on -ENODEV; see
 * gi_executor_why().  gpudev executes through CUDA as well: DPDK's gpudev
 * is a memory provider, not a way to run kernels.
 */
int gi_executor_create(const struct gi_executor_conf *conf, struct gi_executor **out, char *err, size_t errlen);
int gi_executor_start(struct gi_executor *ex);
int gi_executor_stop(struct gi_executor *ex, uint64_t timeout_ns);
void gi_executor_destroy(struct gi_executor *ex);
const char *gi_executor_name(const struct gi_executor *ex);
/*
 * One line on how the backend was chosen, for the daemon's log, e.g.
 * "auto: no CUDA device or driver found (...); using host", or "" when the
 * backend was taken as configured.
 */
const char *gi_executor_why(const struct gi_executor *ex);
/* The pipeline its workers run, as chosen (pipeline auto resolved where the mode decides it), for the log. */
const char *gi_executor_pipeline(const struct gi_executor *ex);
/* The last start/stop failure in words (which call, where, why), or "". */
const char *gi_executor_last_error(const struct gi_executor *ex);
/*
 * The executor's counters, summed over its workers (each has one writer).
 * A snapshot never lags the true totals by more than the batch each worker
 * is serving (the cuda backend mirrors a CTA's counters once per batch).
 */
void gi_executor_counters(const struct gi_executor *ex, struct gi_exec_counters *out);
/* Progress words (loops) of each worker, for the watchdog: how many were written. */
uint32_t gi_executor_progress(const struct gi_executor *ex, uint64_t *w, uint32_t max);
/* Workers: host threads, rx lcores (inline), or CTAs. */
uint32_t gi_executor_workers(const struct gi_executor *ex);

/*
 * Modes inline and auto (host): the worker rx lcore `lcore` runs (NULL when
 * the executor is neither or no ring of that lcore is served by one), and its
 * poll: serve what its rings have published, check frame timeouts when a tick
 * is due.  Returns the number of batches served (0 while auto has given the
 * worker to its thread).  The rx lcore calls it after each pass over its
 * queues, with rx_empty 1 when that pass received nothing (auto's measure of
 * a saturated lcore), and while it drains at shutdown.
 */
struct gi_exec_worker;
struct gi_exec_worker *gi_executor_inline_worker(struct gi_executor *ex, uint32_t lcore);
uint32_t gi_exec_worker_poll(struct gi_exec_worker *w, uint32_t rx_empty);

/*
 * Mode auto on the host.  Each worker belongs to the rx lcore that publishes
 * its rings and has a thread of its own, asleep while the lcore runs it.
 *   - Inline first: the lcore serves its batches while the packets are in its
 *     cache, on no core but its own.
 *   - When a window (GI_AUTO_WINDOW_NS) passes with the lcore saturated
 *     (fewer than 1% of its rx passes received nothing), the worker goes to
 *     its thread for one window: a trial.
 *   - The thread keeps it if it served at least 10% more packets per second
 *     than the lcore did in the window before; else it goes back inline, at
 *     once when after a fifth of the window it has served less than 80%.
 *   - Trials are at least GI_AUTO_HOLDOFF_NS apart; each trial that keeps
 *     inline doubles that, up to 64 times, and a served rate that moves by 2x
 *     (for three windows in a row: not a burst) starts over.  A worker kept
 *     on its thread stays there at least GI_AUTO_HOLDOFF_NS, and goes back
 *     inline (to be tried again if the lcore saturates) when its rate moves
 *     by 2x.
 *   - A paused window (the test hook below) measures nothing and restarts.
 * A trial runs the worse way for one window, and its ring may fill
 * (ring_full) or the NIC's queue overflow (rx_missed) meanwhile.  Handing a
 * worker over is a release store of who runs it, taken up with an acquire
 * load, between two batches.
 */
#define GI_AUTO_WINDOW_NS 100000000ull
#define GI_AUTO_HOLDOFF_NS 5000000000ull

struct gi_exec_auto_info {
	uint32_t lcore;          /* the rx lcore of the worker */
	uint32_t on_thread;      /* 1: its thread runs it now */
	uint64_t trials;         /* trials so far */
	uint64_t decisions;      /* trials decided (a trial in progress is not) */
	uint64_t inline_pps;     /* the last trial: packets per second the lcore served */
	uint64_t thread_pps;     /* ... and the thread */
	uint64_t trial_ns;       /* ... how long the thread ran it (shorter than a window: it lost early) */
	uint32_t kept_thread;    /* ... and whether the thread kept it */
	uint64_t returns;        /* times a worker kept on its thread went back inline as its rate moved */
	uint64_t thread_batches; /* batches its thread served */
};
/* Worker k's state: 0, or -ENOTSUP when the executor is not host auto, -ERANGE past the last worker. */
int gi_executor_auto_info(const struct gi_executor *ex, uint32_t k, struct gi_exec_auto_info *out);
/* Workers that their rx lcore runs now: all in mode inline, auto's choice, 0 otherwise. */
uint32_t gi_executor_inline_workers(const struct gi_executor *ex);
/* The pure parts of auto's choice, for tests. */
int gi_exec_auto_saturated(uint64_t passes, uint64_t empty);
int gi_exec_auto_keep_thread(uint64_t inline_pps, uint64_t thread_pps);
int gi_exec_auto_losing(uint64_t inline_pps, uint64_t thread_pps); /* a trial to end after a fifth of its window */

/*
 * Live reload: make the executor run on a new stream table `next` (streams
 * and lookup map, built by the caller) from a safe point between two
 * batches on — never while a packet is being classified.  carry[j] (for
 * each of next->n_streams) is the index in the running table of the stream
 * whose state, counters and frame ring stream j keeps (its geometry and
 * format must be the same; its reorder window, timeout and resync limit
 * may differ), or -1 for a stream that starts afresh.  Running streams no
 * stream carries are flushed first: their open frames are published as
 * partial.  A stream whose window shrinks publishes, as partial, the open
 * frames that fall out of it.
 *
 * The executor picks `next` up from a one-slot mailbox and acknowledges;
 * this call waits (bounded) for that.  It copies `*next` into the ctx the
 * executor was created with, on the executor's thread.
 * Returns 0 once the executor runs on `next` (the old streams are no longer
 * touched: the caller frees them), or:
 *   -ENOTSUP    the backend keeps stream state where it cannot be swapped
 *               (cuda: on the GPU); stream changes need a restart
 *   -ETIMEDOUT  the executor reached no safe point within timeout_ns;
 *               nothing changed, it runs on the old table
 *   -EBUSY      it is stopping
 * Main thread.
 */
int gi_executor_swap_streams(struct gi_executor *ex, const struct gi_exec_ctx *next, const int32_t *carry,
			     uint64_t timeout_ns);
/* Whether gi_executor_swap_streams() can work here; if not, why (for the log). */
int gi_executor_can_swap_streams(const struct gi_executor *ex);
const char *gi_executor_swap_why(const struct gi_executor *ex);

/*
 * Test hooks (the watchdog and shutdown tests), values of `paused`:
 *   GI_EXEC_RUN    serve the rings (the default)
 *   GI_EXEC_PAUSE  serve nothing; gi_executor_stop() resumes and drains
 *   GI_EXEC_HANG   serve nothing and ignore stop, as a hung kernel would:
 *                  gi_executor_stop() times out (-ETIMEDOUT)
 * Progress: gi_exec_counters.loops advances once per pass in which the
 * executor looked at every ring and completed what was pending there (or
 * found nothing), never while paused or hung, so the daemon's watchdog sees
 * a stalled executor with batches waiting as stuck.
 */
enum gi_exec_pause {
	GI_EXEC_RUN = 0,
	GI_EXEC_PAUSE = 1,
	GI_EXEC_HANG = 2,
};
void gi_executor_set_paused(struct gi_executor *ex, int paused);

/*
 * Run every packet of one slot through the bodies on the calling thread —
 * the host backend's unit of work, exposed for unit tests and benchmarks.
 * gi_exec_slot_host() is the serial reference path; gi_exec_slot_phased()
 * the batch's trip (trip.h) on one worker, with a scratch of
 * gi_batch_scratch_bytes(max_pkts) bytes (8-byte aligned); `owner` is the
 * worker's group and `streams` its n_streams streams (GI_GROUP_ANY and
 * NULL: it owns every stream of ctx).
 */
void gi_exec_slot_host(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, struct gi_batch_slot *slot,
		       uint32_t max_pkts, uint32_t split, uint64_t now);
void gi_exec_slot_phased(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, uint32_t owner,
			 const uint16_t *streams, uint32_t n_streams, struct gi_batch_slot *slot, uint32_t max_pkts,
			 uint32_t split, uint64_t now, struct gi_batch_hdr *scratch);

#endif /* GI_EXECUTOR_H */
