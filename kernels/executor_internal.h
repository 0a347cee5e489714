/*
 * executor_internal.h — the executor's state, shared by executor.c (the
 * backend table, creation, the public calls) and executor_host.c (the host
 * backend's workers).  Not for use outside kernels/executor*.c.
 */
#ifndef GI_EXECUTOR_INTERNAL_H
#define GI_EXECUTOR_INTERNAL_H

#include <pthread.h>

#include "executor.h"

struct host_swap;

/*
 * Mode auto on the host (executor.h): who runs a worker, and the
 * measurements its runner keeps.  `runner` is the only word both sides
 * read: the runner hands the worker over with a release store (and a futex
 * wake for the thread), the other side takes it up with an acquire load.
 * The rest is the runner's; the info words are also read by other threads.
 */
enum { GI_RUN_LCORE = 0, GI_RUN_THREAD = 1 };
enum gi_auto_state { GI_AUTO_INLINE = 0, GI_AUTO_TRIAL, GI_AUTO_THREAD };

struct gi_exec_auto {
	uint32_t runner;          /* GI_RUN_* */
	uint32_t state;           /* enum gi_auto_state */
	uint64_t win_start;       /* this window: its start */
	uint64_t win_pkts;        /* ... ctr.packets then */
	uint64_t passes, empty;   /* ... rx passes of the lcore, and those that received nothing */
	uint64_t kept_pps;        /* the rate when the worker was last placed */
	uint32_t moved;           /* windows in a row whose rate is 2x from kept_pps */
	uint64_t holdoff_ns;      /* the next trial's least distance from the last */
	uint64_t next_trial;      /* no trial before */
	uint64_t last_trial;      /* when the last one started */
	uint64_t trials, decisions, inline_pps, thread_pps, trial_ns, returns, thread_batches; /* gi_exec_auto_info */
	uint32_t kept_thread;
};

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
	struct gi_exec_auto au;   /* mode auto on the host */
};

struct gi_executor {
	const struct gi_executor_ops *ops;
	struct gi_executor_conf conf;
	uint32_t n_workers;
	struct gi_exec_worker *workers;
	uint32_t quit;       /* main → workers: rx is stopped, drain and leave */
	uint32_t paused;     /* test hook: enum gi_exec_pause */
	uint32_t drained;    /* worker threads → main: how many have flushed and left */
	uint32_t flushed;    /* modes inline and auto: host_stop() has served and flushed what the workers left */
	/* live reload (one worker only): main posts a swap (release), the worker
	 * takes it between batches (acquire exchange), applies it and bumps swaps_done */
	struct host_swap *mailbox;
	uint64_t swaps_done;
	void *backend;       /* the cuda backend's state */
	char why[320];       /* how the backend was chosen (gi_executor_why) */
	char swap_why[200];  /* why streams cannot be swapped live, "" if they can */
};

/* executor_host.c: the host backend */
extern const struct gi_executor_ops gi_exec_host_ops;
int gi_exec_workers_build(struct gi_executor *ex, const struct gi_exec_group *groups, uint32_t n_groups, char *err,
			  size_t errlen);
void gi_exec_workers_free(struct gi_executor *ex);
int gi_exec_group_lcores(const struct gi_executor_conf *c, const struct gi_exec_group *groups, uint32_t n_groups,
			 uint32_t *worker_of, uint32_t lcores[64], uint32_t *n_lcores, uint32_t *bad_g, uint32_t *bad_i);

#endif /* GI_EXECUTOR_INTERNAL_H */
