/*
 * executor.c — backend selection, creation and the public calls; the host
 * backend's workers are executor_host.c.
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

#include "executor_internal.h"
#include "gi_build_config.h"
#if HAVE_CUDA
#include "executor_cuda.h"
#endif

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

static uint32_t cuda_workers(const struct gi_executor *ex)
{
	return gi_cuda_exec_groups(ex->backend);
}

static const struct gi_exec_counters *cuda_counters(const struct gi_executor *ex, uint32_t k)
{
	return gi_cuda_exec_counters(ex->backend, k);
}

static const char *cuda_error(const struct gi_executor *ex)
{
	return gi_cuda_exec_error(ex->backend);
}

static const struct gi_executor_ops cuda_ops = {
	.name = "cuda",
	.start = cuda_start,
	.stop = cuda_stop,
	.destroy = cuda_destroy,
	.set_paused = cuda_set_paused,
	.workers = cuda_workers,
	.counters = cuda_counters,
	.error = cuda_error,
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
		ex->conf.pipeline = GI_PIPE_PHASED; /* auto too: the trip is what a GPU runs */
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
	if (conf->pipeline != GI_PIPE_PHASED && conf->pipeline != GI_PIPE_SERIAL && conf->pipeline != GI_PIPE_AUTO) {
		snprintf(err, errlen, "unknown executor pipeline %d", (int)conf->pipeline);
		return -EINVAL;
	}
	const int gpu = conf->backend == GI_BACKEND_CUDA || conf->backend == GI_BACKEND_GPUDEV;
	if (gpu && (conf->mode == GI_EXEC_THREADS || conf->mode == GI_EXEC_INLINE)) {
		snprintf(err, errlen,
			 "executor backend '%s' runs the phased kernels on the GPU: executor.mode %s is a host mode "
			 "(use mode persistent or launch)",
			 backend_name(conf->backend), mode_name(conf->mode));
		return -EINVAL;
	}
	if (gpu && conf->pipeline == GI_PIPE_SERIAL) {
		snprintf(err, errlen,
			 "executor backend '%s' runs the phased kernels on the GPU: executor.pipeline serial is the "
			 "host's (use pipeline auto or phased)",
			 backend_name(conf->backend));
		return -EINVAL;
	}
	if (conf->threads_per_ring && (conf->threads_per_ring % 32 || conf->threads_per_ring > GI_EXEC_MAX_CTA)) {
		snprintf(err, errlen, "executor.threads_per_ring %u is not a multiple of 32 in [32, %u]",
			 conf->threads_per_ring, GI_EXEC_MAX_CTA);
		return -EINVAL;
	}
	return 0;
}

/*
 * Host mode auto runs a worker per rx lcore (executor.h) where inline could:
 * each group's rings on one lcore.  Otherwise threads, and `why` says so.
 */
static int auto_per_lcore(const struct gi_executor_conf *conf, const struct gi_exec_group *groups, uint32_t n_groups,
			  struct gi_executor *ex)
{
	uint32_t lcores[64], n, bad_g, bad_i;
	size_t at = strlen(ex->why);

	if (!conf->ring_lcore)
		return 0; /* no rx lcores (tests, tools): threads */
	int rc = gi_exec_group_lcores(conf, groups, n_groups, NULL, lcores, &n, &bad_g, &bad_i);
	if (rc == -EINVAL)
		snprintf(ex->why + at, sizeof(ex->why) - at,
			 "%smode auto: rings %u and %u of one group are on rx lcores %u and %u, so a worker thread "
			 "serves them",
			 at ? "; " : "", groups[bad_g].rings[0], groups[bad_g].rings[bad_i],
			 conf->ring_lcore[groups[bad_g].rings[0]], conf->ring_lcore[groups[bad_g].rings[bad_i]]);
	return rc == 0; /* past 64 lcores: as many threads as the worker build allows lcores */
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
	ex->ops = &gi_exec_host_ops;
	if (ex->conf.mode == GI_EXEC_PERSISTENT || ex->conf.mode == GI_EXEC_LAUNCH)
		ex->conf.mode = GI_EXEC_THREADS; /* persistent/launch describe kernels; on the host they mean threads */
	if (ex->conf.mode == GI_EXEC_AUTO && !auto_per_lcore(conf, groups, n_groups, ex))
		ex->conf.mode = GI_EXEC_THREADS;
	if (ex->conf.pipeline == GI_PIPE_AUTO && ex->conf.mode != GI_EXEC_AUTO) /* auto: by who runs the batch */
		ex->conf.pipeline = ex->conf.mode == GI_EXEC_INLINE ? GI_PIPE_SERIAL : GI_PIPE_PHASED;
	if ((rc = gi_exec_workers_build(ex, groups, n_groups, err, errlen)) < 0)
		goto out;
	if (ex->n_workers > 1 || ex->conf.mode == GI_EXEC_INLINE)
		snprintf(ex->swap_why, sizeof(ex->swap_why),
			 "executor host runs %u %s, each the only writer of its streams: a live swap would have to "
			 "stop them all",
			 ex->n_workers,
			 ex->conf.mode == GI_EXEC_INLINE ? "rx lcores inline"
			 : ex->conf.mode == GI_EXEC_AUTO ? "workers (one per rx lcore, mode auto)"
							 : "worker threads");
out:
	free(ring_all);
	free(stream_all);
	if (rc < 0) {
		if (ex && ex->ops) /* what the backend built before it failed */
			ex->ops->destroy(ex);
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

const char *gi_executor_pipeline(const struct gi_executor *ex)
{
	switch (ex->conf.pipeline) {
	case GI_PIPE_SERIAL:
		return "serial (a packet at a time)";
	case GI_PIPE_AUTO:
		return "auto (serial while the rx lcore runs a worker, phased while its own thread does)";
	default:
		return "phased (the batch's trip)";
	}
}

const char *gi_executor_last_error(const struct gi_executor *ex)
{
	return ex->ops->error ? ex->ops->error(ex) : "";
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
	for (uint32_t k = 0; k < ex->ops->workers(ex); k++)
		counters_add(out, ex->ops->counters(ex, k));
}

uint32_t gi_executor_workers(const struct gi_executor *ex)
{
	return ex->ops->workers(ex);
}

uint32_t gi_executor_progress(const struct gi_executor *ex, uint64_t *w, uint32_t max)
{
	uint32_t n = GI_MIN(max, gi_executor_workers(ex));
	for (uint32_t k = 0; k < n; k++)
		w[k] = GI_COUNTER_READ(&ex->ops->counters(ex, k)->loops);
	return n;
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
