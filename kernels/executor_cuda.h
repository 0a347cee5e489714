/*
 * executor_cuda.h — the cuda backend as executor.c sees it (internal).
 *
 * executor.c owns struct gi_executor and the backend table; this is the
 * CUDA half behind its `cuda` operations.  Built only with HAVE_CUDA.
 * Main thread only, like the executor API itself; the counters may be read
 * from any thread.
 */
#ifndef GI_EXECUTOR_CUDA_H
#define GI_EXECUTOR_CUDA_H

#include <stddef.h>

#include "executor.h"

struct gi_cuda_exec;

/*
 * Make the rings, frame rings, streams and lookup map GPU-visible and
 * prepare the kernels; nothing runs yet.  0 or -errno with the reason in
 * `why` (no backend prefix: the caller adds which backend was asked for):
 *   -ENODEV  no CUDA driver, no device, or no device this build can run on
 *   -EINVAL  bad configuration;  -EIO  a CUDA call failed;  -ENOMEM
 */
int gi_cuda_exec_create(const struct gi_executor_conf *conf, struct gi_cuda_exec **out, char *why, size_t whylen);
int gi_cuda_exec_start(struct gi_cuda_exec *c);
int gi_cuda_exec_stop(struct gi_cuda_exec *c, uint64_t timeout_ns);
void gi_cuda_exec_destroy(struct gi_cuda_exec *c);
/* CTAs (one per ring group), and the host mirror of CTA g's counters. */
uint32_t gi_cuda_exec_groups(const struct gi_cuda_exec *c);
const struct gi_exec_counters *gi_cuda_exec_counters(const struct gi_cuda_exec *c, uint32_t g);
void gi_cuda_exec_set_paused(struct gi_cuda_exec *c, int paused);
const char *gi_cuda_exec_error(const struct gi_cuda_exec *c);
/* "cuda device 0 (NVIDIA H100 80GB HBM3, sm_90, 0000:ca:00.0), persistent, 2 CTAs x 256 threads" */
const char *gi_cuda_exec_describe(const struct gi_cuda_exec *c);

#endif /* GI_EXECUTOR_CUDA_H */
