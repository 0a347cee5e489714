/*
 * executor.h — what runs the kernel bodies over the batch rings.
 *
 * A backend is chosen once, at start, through a small table of operations
 * (the l3fwd "lookup mode" habit): `host` runs the GI_HD bodies on a CPU
 * thread; `cuda` (the GPU path) runs the same bodies in a persistent kernel
 * or one launch per batch.  The daemon only sees this interface.
 *
 * Thread rules: create/start/stop/destroy from the main thread;
 * gi_executor_counters() from any thread (relaxed reads of one-writer words).
 */
#ifndef GI_EXECUTOR_H
#define GI_EXECUTOR_H

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
 * How the cuda backend runs the bodies (ignored by the host backend):
 * persistent — one long-lived kernel polls the doorbells (lowest latency,
 *              holds one SM); launch — a host thread launches one small
 *              kernel per published run of slots (no SM held while idle).
 */
enum gi_exec_mode {
	GI_EXEC_PERSISTENT = 0,
	GI_EXEC_LAUNCH,
};

struct gi_executor_conf {
	enum gi_backend backend;
	enum gi_exec_mode mode;        /* cuda only; default persistent */
	const char *cuda_device;       /* cuda only: ordinal ("0") or PCI address ("0000:ca:00.0"); NULL: "0" */
	enum gi_idle_policy idle;
	int cpu;                       /* pin the host thread, -1: leave to the scheduler */
	uint32_t n_rings;
	struct gi_batch_ring **rings;  /* in executor-visible memory */
	struct gi_exec_ctx *ctx;       /* streams and lookup table */
	uint64_t tick_ns;              /* how often frame timeouts are checked */
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
/* The last start/stop failure in words (which call, where, why), or "". */
const char *gi_executor_last_error(const struct gi_executor *ex);
const struct gi_exec_counters *gi_executor_counters(const struct gi_executor *ex);

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
/* Whether gi_executor_swap_streams() can work on this backend. */
int gi_executor_can_swap_streams(const struct gi_executor *ex);

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
 */
void gi_exec_slot_host(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, struct gi_batch_slot *slot,
		       uint32_t max_pkts, uint32_t split, uint64_t now);

#endif /* GI_EXECUTOR_H */
