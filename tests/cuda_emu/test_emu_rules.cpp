/*
 * test_emu_rules.cpp — the CUDA emulation enforces CUDA's barrier and warp
 * rules (cuda_emu.h, "CUDA's rules"): each kernel below plants one breach
 * a GPU traps or hangs on, and the emulated launch must fault with the
 * line that names it; the correct kernels must run clean.  Tests only;
 * -Demulate_cuda=true builds (the driver test double runs the kernels).
 *
 * Each case runs in a child process: a kernel fault is a sticky context
 * error for the rest of a process, as on a GPU.  The child's stderr (where
 * the emulation writes its one fault line) comes back through a pipe; a
 * case that hangs is killed after 20 s and fails.
 */
#include "cuda_emu.h"
#include "kernels/gi_hd.h"

#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Every kernel takes an output array (one word per thread) in device memory. */

/* correct: thread 0 alone, then a barrier; a block-wide vote through barriers and ballots */
extern "C" __global__ void k_good(unsigned *out)
{
	GI_EXTERN_SHARED(unsigned, sm);
	const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
	if (tid == 0)
		sm[0] = 7;
	__syncthreads();
	unsigned b = __ballot_sync(0xffffffffu, lane % 3 == 0);
	if (lane == 0)
		sm[1 + warp] = (unsigned)__popc(b);
	__syncthreads();
	unsigned v = __shfl_sync(0xffffffffu, tid, 5);
	unsigned any = __syncthreads_or(tid == 40);
	if (lane < 16) /* a collective of half a warp, named exactly */
		v += __shfl_down_sync(0x0000ffffu, 1u, 1, 16);
	out[tid] = sm[0] + sm[1 + warp] + v + any;
}

/* planted: warp 1 takes a barrier at another call site than warp 0 */
extern "C" __global__ void k_bar_sites(unsigned *out)
{
	if (threadIdx.x < 32)
		__syncthreads();
	else
		__syncthreads();
	out[threadIdx.x] = 1;
}

/* planted: thread 0 skips a barrier of a loop and meets the others at the next one */
extern "C" __global__ void k_bar_skipped(unsigned *out)
{
	for (unsigned i = 0; i < 2; i++) {
		if (i == 1 && threadIdx.x == 0)
			continue;
		__syncthreads();
	}
	__syncthreads_count(1);
	out[threadIdx.x] = 1;
}

/* planted: a warp returns, the other calls __syncthreads() (CUDA leaves it undefined; refused here) */
extern "C" __global__ void k_bar_after_exit(unsigned *out)
{
	out[threadIdx.x] = 1;
	if (threadIdx.x >= 32)
		return;
	__syncthreads();
}

/* planted: lane 0 goes to the block barrier while its warp waits for it in __syncwarp() */
extern "C" __global__ void k_bar_in_collective(unsigned *out)
{
	if (threadIdx.x == 0 || threadIdx.x >= 32)
		__syncthreads();
	else
		__syncwarp();
	out[threadIdx.x] = 1;
}

/* planted: a full-mask shuffle, half the warp at one call site, half at another */
extern "C" __global__ void k_shfl_sites(unsigned *out)
{
	unsigned lane = threadIdx.x % 32, v;
	if (lane < 16)
		v = __shfl_sync(0xffffffffu, lane, 0);
	else
		v = __shfl_sync(0xffffffffu, lane, 1);
	out[threadIdx.x] = v;
}

/* planted: a ballot whose mask leaves out lanes that call it */
extern "C" __global__ void k_ballot_mask(unsigned *out)
{
	out[threadIdx.x] = __ballot_sync(0x0000ffffu, 1);
}

/* planted: lanes of one warp meet in a vote, each naming another mask (both name lane 16) */
extern "C" __global__ void k_vote_masks(unsigned *out)
{
	unsigned lane = threadIdx.x % 32;
	out[threadIdx.x] = (unsigned)__any_sync(lane < 16 ? 0x0001ffffu : 0xffffffffu, 1);
}

/* planted: a lane named in __syncwarp()'s mask has returned */
extern "C" __global__ void k_warp_after_exit(unsigned *out)
{
	out[threadIdx.x] = 1;
	if (threadIdx.x % 32 == 31)
		return;
	__syncwarp();
}

/* planted: the kernels' own warp helper (gi_hd.h), half the warp calling it at one site, half at another:
 * the fault names this file's lines, not the helper's one line */
extern "C" __global__ void k_helper_sites(unsigned *out)
{
	unsigned lane = threadIdx.x % 32, v;
	if (lane < 16)
		v = gi_warp_or_u32(1u << lane);
	else
		v = gi_warp_or_u32(1u << lane);
	out[threadIdx.x] = v;
}

GI_KERNEL_TABLE(gi_emu_rules_image, k_good, k_bar_sites, k_bar_skipped, k_bar_after_exit, k_bar_in_collective,
		k_shfl_sites, k_ballot_mask, k_vote_masks)

/* (8 kernels a table; the ninth and tenth share a second) */
GI_KERNEL_TABLE(gi_emu_rules_image2, k_warp_after_exit, k_helper_sites)

#define THREADS 64u

/* In the child: launch `name` on one block of THREADS; 0 when it ran clean, else the CUresult. */
static int run_case(const struct gi_emu_module *image, const char *name, unsigned *sum)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUstream st;
	CUdeviceptr out;
	CUresult r;

	if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) || (r = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    (r = cuCtxSetCurrent(ctx)) || (r = cuModuleLoadData(&mod, image)) ||
	    (r = cuModuleGetFunction(&fn, mod, name)) || (r = cuStreamCreate(&st, 0)) ||
	    (r = cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64)) ||
	    (r = cuMemAlloc(&out, THREADS * sizeof(unsigned)))) {
		fprintf(stderr, "setup of %s failed: %d\n", name, (int)r);
		return 100;
	}
	void *params[] = { &out };
	if ((r = cuLaunchKernel(fn, 1, 1, 1, THREADS, 1, 1, 64, st, params, NULL)) != CUDA_SUCCESS)
		return (int)r;
	if ((r = cuStreamSynchronize(st)) != CUDA_SUCCESS)
		return (int)r;
	unsigned host[THREADS];
	if ((r = cuMemcpyDtoH(host, out, sizeof(host))) != CUDA_SUCCESS)
		return (int)r;
	*sum = 0;
	for (unsigned i = 0; i < THREADS; i++)
		*sum += host[i];
	return 0;
}

/* The good kernel's sum over its threads, computed here the plain way. */
static unsigned good_sum(void)
{
	unsigned sum = 0, per_warp = 0;
	for (unsigned l = 0; l < 32; l++)
		per_warp += l % 3 == 0;
	for (unsigned tid = 0; tid < THREADS; tid++) {
		unsigned lane = tid % 32, v = (tid & ~31u) + 5;
		if (lane < 16)
			v += 1;
		sum += 7 + per_warp + v + 1;
	}
	return sum;
}

struct rules_case {
	const char *kernel;
	const struct gi_emu_module *image;
	const char *expect; /* in the fault line; NULL: must run clean */
	const char *expect2;
};

static int failures;

static void check_case(const struct rules_case *c)
{
	int pfd[2];
	if (pipe(pfd) != 0) {
		perror("pipe");
		exit(99);
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		alarm(20);
		unsigned sum = 0;
		int rc = run_case(c->image, c->kernel, &sum);
		if (rc == 0)
			fprintf(stderr, "ran clean, sum %u\n", sum);
		fflush(stderr);
		_exit(rc == 0 ? 0 : rc == CUDA_ERROR_LAUNCH_FAILED ? 3 : 4);
	}
	close(pfd[1]);
	char buf[4096];
	size_t n = 0;
	ssize_t k;
	while (n < sizeof(buf) - 1 && (k = read(pfd[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	close(pfd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);

	bool ok;
	char want[64] = "";
	if (!c->expect) {
		snprintf(want, sizeof(want), "ran clean, sum %u", good_sum());
		ok = code == 0 && strstr(buf, want);
	} else {
		ok = code == 3 && strstr(buf, c->expect) && (!c->expect2 || strstr(buf, c->expect2));
	}
	printf("%s %s: exit %d, %s", ok ? "ok  " : "FAIL", c->kernel, code, buf[0] ? buf : "(nothing on stderr)\n");
	if (!ok) {
		printf("     expected %s%s%s%s\n", c->expect ? "a fault naming \"" : "", c->expect ? c->expect : want,
		       c->expect2 ? "\" and \"" : "", c->expect2 ? c->expect2 : (c->expect ? "\"" : ""));
		failures++;
	}
}

int main(void)
{
	/* the line numbers of the planted call sites are this file's: name the file */
	const struct rules_case cases[] = {
		{ "k_good", &gi_emu_rules_image, NULL, NULL },
		{ "k_bar_sites", &gi_emu_rules_image, "threads meet at different barriers",
		  "__syncthreads() at test_emu_rules.cpp:" },
		{ "k_bar_skipped", &gi_emu_rules_image, "threads meet at different barriers",
		  "__syncthreads_count() at test_emu_rules.cpp:" },
		{ "k_bar_after_exit", &gi_emu_rules_image, "returned", NULL },
		{ "k_bar_in_collective", &gi_emu_rules_image, "__syncwarp() at test_emu_rules.cpp:", "__syncthreads()" },
		{ "k_shfl_sites", &gi_emu_rules_image, "lanes meet at different collectives",
		  "__shfl_sync() at test_emu_rules.cpp:" },
		{ "k_ballot_mask", &gi_emu_rules_image, "the calling lane is not in it", "__ballot_sync()" },
		{ "k_vote_masks", &gi_emu_rules_image, "different masks", "__any_sync()" },
		{ "k_warp_after_exit", &gi_emu_rules_image2, "returned", NULL },
		{ "k_helper_sites", &gi_emu_rules_image2, "lanes meet at different collectives",
		  "__shfl_xor_sync() at test_emu_rules.cpp:" },
	};
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(&cases[i]);
	printf("%s: %d of %zu cases failed\n", failures ? "FAIL" : "PASS", failures, sizeof(cases) / sizeof(cases[0]));
	return failures ? 1 : 0;
}
