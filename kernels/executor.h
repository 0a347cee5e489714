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

struct gi_executor_conf {
	enum gi_backend backend;
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
};

/*
 * Create an executor for `conf` (copied; the rings and ctx must outlive it).
 * Returns 0 or -errno: -ENOTSUP for a backend this build or machine lacks,
 * with a message in `err` (errlen bytes) saying which and why.
 */
int gi_executor_create(const struct gi_executor_conf *conf, struct gi_executor **out, char *err, size_t errlen);
int gi_executor_start(struct gi_executor *ex);
int gi_executor_stop(struct gi_executor *ex, uint64_t timeout_ns);
void gi_executor_destroy(struct gi_executor *ex);
const char *gi_executor_name(const struct gi_executor *ex);
const struct gi_exec_counters *gi_executor_counters(const struct gi_executor *ex);

/* Test hook (issue: executor stall): 1 pauses batch processing, 0 resumes. */
void gi_executor_set_paused(struct gi_executor *ex, int paused);

/*
 * Run every packet of one slot through the bodies on the calling thread —
 * the host backend's unit of work, exposed for unit tests and benchmarks.
 */
void gi_exec_slot_host(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, struct gi_batch_slot *slot,
		       uint32_t max_pkts, uint32_t split, uint64_t now);

#endif /* GI_EXECUTOR_H */
