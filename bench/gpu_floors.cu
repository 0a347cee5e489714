/*
 * gpu_floors.cu — the hardware floors under the cuda executor's per-batch
 * cost, measured on the GPU at hand (tests/gpu/run_on_gpu.sh prints them
 * beside gpu_exec_bench and the model; bench/gpu_model.md records them).
 *
 *   doorbell   CPU writes a word in host-mapped memory, a persistent
 *              one-thread kernel sees it and writes it back: the round trip
 *              a batch's doorbell and its completion cost at the least
 *   host_load  one GPU load from host-mapped memory (a dependent chain)
 *   l2_load    one GPU load that hits L2 (a dependent chain in 8 MiB)
 *   fence_sys  __threadfence_system() after a store to host-mapped memory
 *   fence_gpu  __threadfence() after a store to device memory
 *   host_stores  a frame's metadata (HOST_STORE_WORDS 8-byte words, what
 *              the commit copies to a frame's host mirror) stored to
 *              host-mapped memory, then __threadfence_system(): by one
 *              thread, a word at a time (the commit's way), and by a warp,
 *              a word a lane in one coalesced store
 *   launch     an empty kernel launched and synchronised, and launches
 *              back to back (launch mode's floor)
 *
 * One JSON object on stdout, microseconds.  The CUDA runtime (static) is
 * used here only: this is a probe, not part of the daemon.  Exit 77 when
 * there is no GPU.
 */
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CK(call)                                                                                          \
	do {                                                                                              \
		cudaError_t e_ = (call);                                                                  \
		if (e_ != cudaSuccess) {                                                                  \
			fprintf(stderr, "gpu_floors: %s: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, \
				__LINE__);                                                                \
			exit(1);                                                                          \
		}                                                                                         \
	} while (0)

static double now_us()
{
	return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

__device__ __forceinline__ uint64_t gt_ns()
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* Persistent: echo every new doorbell value back until it reads 0. */
__global__ void k_echo(volatile uint32_t *bell, volatile uint32_t *echo)
{
	uint32_t last = 0;
	for (;;) {
		uint32_t v = *bell;
		if (v == last)
			continue;
		if (v == 0xffffffffu)
			return;
		last = v;
		*echo = v;
		__threadfence_system();
	}
}

/* A dependent chain of n loads through next[]; ns per load into out[0]. */
__global__ void k_chase(const uint64_t *next, uint32_t n, uint64_t *out)
{
	uint64_t i = 0;
	uint64_t t0 = gt_ns();
	for (uint32_t k = 0; k < n; k++)
		i = *(volatile const uint64_t *)&next[i];
	uint64_t t1 = gt_ns();
	out[0] = (t1 - t0) / n;
	out[1] = i; /* keeps the chain */
}

/* n stores each followed by a fence of the given scope; ns per pair into out[0]. */
__global__ void k_fence(volatile uint64_t *word, uint32_t n, int system, uint64_t *out)
{
	uint64_t t0 = gt_ns();
	for (uint32_t k = 0; k < n; k++) {
		*word = k;
		if (system)
			__threadfence_system();
		else
			__threadfence();
	}
	out[0] = (gt_ns() - t0) / n;
}

/* HOST_STORE_WORDS words of a 16-slot area in host memory, slot after slot, then a system fence: by one
 * thread (lanes 1) or by a lane a word (lanes 32); ns per slot into out[0]. */
#define HOST_STORE_WORDS 20u
__global__ void k_host_stores(volatile uint64_t *area, uint32_t n, uint32_t lanes, uint64_t *out)
{
	const uint32_t lane = threadIdx.x;
	uint64_t t0 = gt_ns();
	for (uint32_t k = 0; k < n; k++) {
		volatile uint64_t *slot = area + (k % 16) * 32;
		for (uint32_t w = lane; w < HOST_STORE_WORDS; w += lanes)
			slot[w] = k + w;
		__threadfence_system();
	}
	if (lane == 0)
		out[0] = (gt_ns() - t0) / n;
}

__global__ void k_empty() {}

static double pct(std::vector<double> v, double p)
{
	std::sort(v.begin(), v.end());
	return v[(size_t)(p * (double)(v.size() - 1))];
}

/* A random cycle through one word in every `stride`, starting at word 0. */
static std::vector<uint64_t> chain(size_t words, size_t stride)
{
	size_t n = words / stride;
	std::vector<size_t> order(n);
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	srand(7);
	for (size_t i = n - 1; i > 1; i--) /* order[0] stays 0: the chain starts there */
		std::swap(order[i], order[1 + (size_t)rand() % i]);
	std::vector<uint64_t> next(words, 0);
	for (size_t i = 0; i < n; i++)
		next[order[i] * stride] = order[(i + 1) % n] * stride;
	return next;
}

/* What a probe kernel wrote to out[0] (ns), in µs, once it has finished. */
static double kernel_us(const uint64_t *d_out)
{
	uint64_t ns;
	CK(cudaMemcpy(&ns, d_out, sizeof(ns), cudaMemcpyDeviceToHost));
	return (double)ns / 1000.0;
}

int main(int argc, char **argv)
{
	int n_dev = 0, iters = argc > 1 ? atoi(argv[1]) : 20000;
	if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
		fprintf(stderr, "gpu_floors: no CUDA device\n");
		return 77;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaSetDeviceFlags(cudaDeviceMapHost));
	uint64_t *d_out;
	CK(cudaMalloc(&d_out, 16));

	/* doorbell round trip */
	uint32_t *bell, *echo, *d_bell, *d_echo;
	CK(cudaHostAlloc(&bell, 64, cudaHostAllocMapped));
	CK(cudaHostAlloc(&echo, 64, cudaHostAllocMapped));
	*(volatile uint32_t *)bell = 0;
	*(volatile uint32_t *)echo = 0;
	CK(cudaHostGetDevicePointer(&d_bell, bell, 0));
	CK(cudaHostGetDevicePointer(&d_echo, echo, 0));
	cudaStream_t st;
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	k_echo<<<1, 1, 0, st>>>(d_bell, d_echo);
	std::vector<double> rt;
	for (int k = 1; k <= iters; k++) {
		double t0 = now_us();
		__atomic_store_n(bell, (uint32_t)k, __ATOMIC_RELEASE);
		while (__atomic_load_n(echo, __ATOMIC_ACQUIRE) != (uint32_t)k)
			if (now_us() - t0 > 1e6) {
				fprintf(stderr, "gpu_floors: the echo kernel did not answer within 1 s\n");
				return 1;
			}
		if (k > 100)
			rt.push_back(now_us() - t0);
	}
	__atomic_store_n(bell, 0xffffffffu, __ATOMIC_RELEASE);
	CK(cudaStreamSynchronize(st));

	/* one load from host memory, one from L2 */
	const size_t host_words = 1 << 16, l2_words = (8u << 20) / 8;
	std::vector<uint64_t> hc = chain(host_words, 8), lc = chain(l2_words, 16);
	uint64_t *h_chain, *d_hchain, *d_lchain;
	CK(cudaHostAlloc(&h_chain, host_words * 8, cudaHostAllocMapped));
	std::copy(hc.begin(), hc.end(), h_chain);
	CK(cudaHostGetDevicePointer(&d_hchain, h_chain, 0));
	CK(cudaMalloc(&d_lchain, l2_words * 8));
	CK(cudaMemcpy(d_lchain, lc.data(), l2_words * 8, cudaMemcpyHostToDevice));
	k_chase<<<1, 1>>>(d_hchain, 2000, d_out);
	double host_load = kernel_us(d_out);
	k_chase<<<1, 1>>>(d_lchain, 20000, d_out); /* warms L2 */
	k_chase<<<1, 1>>>(d_lchain, 20000, d_out);
	double l2_load = kernel_us(d_out);

	/* fences */
	uint64_t *h_word, *d_hword, *d_word;
	CK(cudaHostAlloc(&h_word, 64, cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer(&d_hword, h_word, 0));
	CK(cudaMalloc(&d_word, 64));
	k_fence<<<1, 1>>>(d_hword, 5000, 1, d_out);
	double fence_sys = kernel_us(d_out);
	k_fence<<<1, 1>>>(d_word, 5000, 0, d_out);
	double fence_gpu = kernel_us(d_out);

	/* a frame's metadata to host memory: one thread, then a warp */
	uint64_t *h_area, *d_area;
	CK(cudaHostAlloc(&h_area, 16 * 32 * 8, cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer(&d_area, h_area, 0));
	k_host_stores<<<1, 1>>>(d_area, 2000, 1, d_out);
	double host_stores_thread = kernel_us(d_out);
	k_host_stores<<<1, 32>>>(d_area, 2000, 32, d_out);
	double host_stores_warp = kernel_us(d_out);

	/* launches */
	std::vector<double> ls;
	for (int k = 0; k < 2000; k++) {
		double t0 = now_us();
		k_empty<<<1, 32, 0, st>>>();
		CK(cudaStreamSynchronize(st));
		if (k >= 100)
			ls.push_back(now_us() - t0);
	}
	double t0 = now_us();
	for (int k = 0; k < 5000; k++)
		k_empty<<<1, 32, 0, st>>>();
	CK(cudaStreamSynchronize(st));
	double launch_each = (now_us() - t0) / 5000.0;

	printf("{\"gpu\": \"%s\", \"sms\": %d, \"doorbell_rt_p50_us\": %.2f, \"doorbell_rt_p99_us\": %.2f, "
	       "\"doorbell_rt_min_us\": %.2f, \"host_load_us\": %.3f, \"l2_load_us\": %.3f, \"fence_sys_us\": %.3f, "
	       "\"fence_gpu_us\": %.3f, \"launch_sync_p50_us\": %.1f, \"launch_sync_p99_us\": %.1f, "
	       "\"launch_back_to_back_us\": %.2f, \"host_store_words\": %u, \"host_stores_thread_us\": %.3f, "
	       "\"host_stores_warp_us\": %.3f}\n",
	       prop.name, prop.multiProcessorCount, pct(rt, 0.5), pct(rt, 0.99), pct(rt, 0.0), host_load, l2_load,
	       fence_sys, fence_gpu, pct(ls, 0.5), pct(ls, 0.99), launch_each, HOST_STORE_WORDS, host_stores_thread,
	       host_stores_warp);
	return 0;
}
