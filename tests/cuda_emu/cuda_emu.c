/*
 * cuda_emu.c — a test double of the CUDA driver API that runs kernels on
 * CPU threads (libgi-cuda-emu.so; tests only).
 *
 * DESIGN.  The daemon loads libcuda with dlopen (kernels/cuda_drv.c).  A
 * -Demulate_cuda=true build loads this library instead: it exports the
 * same cu* entry points, with cuda.h's own prototypes (a signature that
 * drifts from the real one does not compile), and behaves like the driver
 * where the daemon depends on it:
 *   - devices and attributes (PCI bus id, KERNEL_EXEC_TIMEOUT, RDMA write
 *     ordering, shared-memory limits), primary contexts, and a current
 *     context per thread that every call that needs one checks;
 *   - device memory from memfd, at distinct addresses, poisoned, with base
 *     and size recorded: a free, copy or attribute call on anything else
 *     fails loudly; host allocations and page-granular host registrations
 *     (overlaps answer ALREADY_REGISTERED, as the driver does);
 *   - CUDA IPC through the memfd, so another process (gpuingest-frames)
 *     really opens a "device" frame ring through the handle record;
 *   - modules: the image is the emulated kernel table (cuda_emu.h), a real
 *     fatbin is refused as INVALID_IMAGE; cuFuncSetAttribute and the
 *     48 KiB dynamic shared memory opt-in are enforced;
 *   - streams (one worker thread each, in order), events, and launches of
 *     gridDim x blockDim OS threads with per-block shared memory, barriers
 *     and warp exchange; a kernel fault (trap, divergent exit, deadlock,
 *     mismatched masks) is a sticky context error, as on a GPU;
 *   - error injection and accounting for the start-up failure tests.
 *
 * Environment (all optional):
 *   GI_CUDA_EMU_DEVICES=N       devices (default 1)
 *   GI_CUDA_EMU_PCI=a,b         their PCI addresses (default 0000:ca:00.0, 0000:cb:00.0, ...)
 *   GI_CUDA_EMU_ATTR=NAME=V,..  override attributes of every device, e.g.
 *                               KERNEL_EXEC_TIMEOUT=1, GPU_DIRECT_RDMA_WRITES_ORDERING=0
 *   GI_CUDA_EMU_FAIL=cuX:N[:CUDA_ERROR_Y],...   the Nth call of cuX fails (default CUDA_ERROR_UNKNOWN)
 *   GI_CUDA_EMU_REPORT=PATH     at exit: calls per entry point, flushes, the most launches ever queued
 *                               on one stream behind its running op, leaks (one "key value" per line)
 *   GI_CUDA_EMU_STRESS=N        yield at barriers, atomics and volatile polls, about 1 in N (1: always)
 *   GI_CUDA_EMU_SEED=S          seed of the stress yields
 *
 * Threads: any; one lock guards the tables, each stream and block its own.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "cuda_emu.h"

#define EMU_EXPORT __attribute__((visibility("default")))
#define EMU_MAX_DEVICES 8
#define EMU_PAGE 4096ul
#define EMU_POISON 0xcb
#define EMU_MAX_THREADS 4096u  /* per launch: this is an emulation, not a GPU */
#define EMU_STACK (1u << 20)
#define EMU_GLOBALTIMER_OFFSET (1ull << 56) /* %globaltimer is not CLOCK_MONOTONIC */

EMU_EXPORT const char gi_cuda_emu_version[] = "gpuingest CUDA emulation 1";

/* ---- entry points, call accounting, failure injection --------------------- */

#define EMU_CALLS(X)                                                                               \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetByPCIBusId)     \
	X(cuDeviceGetName) X(cuDeviceGetPCIBusId) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)  \
	X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree)                     \
	X(cuPointerSetAttribute) X(cuPointerGetAttribute) X(cuPointerGetAttributes) X(cuMemHostAlloc)       \
	X(cuMemFreeHost)                                                                                \
	X(cuMemHostRegister) X(cuMemHostUnregister) X(cuMemHostGetDevicePointer) X(cuIpcGetMemHandle)  \
	X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle) X(cuMemcpyDtoH) X(cuMemcpyHtoD) X(cuMemsetD8)     \
	X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamQuery) X(cuStreamSynchronize) X(cuEventCreate)  \
	X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery) X(cuModuleLoadData) X(cuModuleUnload)       \
	X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuLaunchKernel) X(cuFlushGPUDirectRDMAWrites)

enum emu_call {
#define X(n) C_##n,
	EMU_CALLS(X)
#undef X
	C__COUNT
};

static const char *const call_names[C__COUNT] = {
#define X(n) #n,
	EMU_CALLS(X)
#undef X
};

struct emu_inject {
	uint64_t nth;    /* 0: none */
	CUresult err;
};

static struct {
	pthread_mutex_t mu;
	pthread_once_t once;
	uint64_t calls[C__COUNT];
	uint64_t errors[C__COUNT]; /* calls that returned an error (not CUDA_ERROR_NOT_READY, a status) */
	struct emu_inject inject[C__COUNT];
	uint64_t flushes;
	uint32_t queued_max; /* launches waiting on one stream behind its running op, at most */
	unsigned stress;  /* 0 off, else about 1 in `stress` */
	uint64_t seed;
	char report[512];
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT };

/* One loud line on stderr for misuse the daemon must never commit. */
static void emu_complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emu_complain(const char *fmt, ...)
{
	va_list ap;
	char buf[512];
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gi-cuda-emu: %s\n", buf);
}

static const struct {
	CUresult r;
	const char *name, *text;
} errors[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure" },
	{ CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch" },
	{ CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped" },
	{ CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region" },
	{ CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
	{ CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static CUresult error_by_name(const char *s)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (strcmp(errors[i].name, s) == 0)
			return errors[i].r;
	return (CUresult)-1;
}

static void emu_report(void)
{
	FILE *f;
	if (!g.report[0] || !(f = fopen(g.report, "w")))
		return;
	pthread_mutex_lock(&g.mu);
	for (int i = 0; i < C__COUNT; i++)
		fprintf(f, "calls.%s %llu\n", call_names[i], (unsigned long long)g.calls[i]);
	for (int i = 0; i < C__COUNT; i++)
		fprintf(f, "errors.%s %llu\n", call_names[i], (unsigned long long)__atomic_load_n(&g.errors[i], __ATOMIC_RELAXED));
	fprintf(f, "rdma_flushes %llu\n", (unsigned long long)g.flushes);
	fprintf(f, "launches_queued_max %u\n", __atomic_load_n(&g.queued_max, __ATOMIC_RELAXED));
	pthread_mutex_unlock(&g.mu);
	fclose(f);
}

static void emu_config_once(void)
{
	const char *s = getenv("GI_CUDA_EMU_FAIL");
	if (s && *s) {
		char *dup = strdup(s), *save = NULL;
		for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *name = tok, *nth = strchr(tok, ':'), *err = NULL;
			if (nth) {
				*nth++ = '\0';
				if ((err = strchr(nth, ':')))
					*err++ = '\0';
			}
			int k = -1;
			for (int i = 0; i < C__COUNT; i++)
				if (strcmp(call_names[i], name) == 0)
					k = i;
			CUresult e = err ? error_by_name(err) : CUDA_ERROR_UNKNOWN;
			if (k < 0 || (int)e < 0 || (nth && atoll(nth) <= 0)) {
				emu_complain("GI_CUDA_EMU_FAIL: '%s%s%s' is not ENTRY[:N[:CUDA_ERROR_X]] of this double", name,
					     nth ? ":" : "", nth ? nth : "");
				exit(2);
			}
			g.inject[k] = (struct emu_inject){ .nth = nth ? (uint64_t)atoll(nth) : 1, .err = e };
		}
		free(dup);
	}
	if ((s = getenv("GI_CUDA_EMU_STRESS")) && *s)
		g.stress = (unsigned)atoi(s) ? (unsigned)atoi(s) : 1;
	g.seed = (s = getenv("GI_CUDA_EMU_SEED")) ? strtoull(s, NULL, 0) : 1;
	if ((s = getenv("GI_CUDA_EMU_REPORT")) && *s) {
		snprintf(g.report, sizeof(g.report), "%s", s);
		atexit(emu_report);
	}
}

/* Every entry point starts here: count the call, fail it when told to. */
static CUresult emu_enter(enum emu_call c)
{
	CUresult r = CUDA_SUCCESS;
	pthread_once(&g.once, emu_config_once);
	pthread_mutex_lock(&g.mu);
	uint64_t n = ++g.calls[c];
	if (g.inject[c].nth == n)
		r = g.inject[c].err;
	pthread_mutex_unlock(&g.mu);
	return r;
}

/*
 * Every entry point returns through here: an error a driver call returns
 * is what compute-sanitizer reports as an API error, so a healthy run
 * must have none (the report's errors.* lines; tests/integration/cuda_faults.sh).
 */
static CUresult emu_result(enum emu_call c, CUresult r)
{
	if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
		__atomic_fetch_add(&g.errors[c], 1, __ATOMIC_RELAXED);
	return r;
}

#define ENTER(name)                                      \
	do {                                             \
		CUresult inj_ = emu_enter(C_##name);     \
		if (inj_ != CUDA_SUCCESS)                \
			return inj_;                     \
	} while (0)

/* ---- devices, attributes, contexts ---------------------------------------- */

struct emu_ctx {
	int dev;
	int refs;
	CUresult sticky; /* a kernel fault: every later call on this context fails with it */
};

struct emu_dev {
	char pci[32];
	int domain, bus, slot;
	struct emu_ctx ctx;
};

static struct {
	bool inited;
	int n;
	struct emu_dev dev[EMU_MAX_DEVICES];
	int attr_overrides; /* parsed */
	struct {
		CUdevice_attribute a;
		int v;
	} over[32];
} D;

/*
 * initial-exec: this library is dlopen()ed, and LeakSanitizer (clang 14,
 * glibc 2.36) crashes walking the dynamic TLS of threads that are still
 * alive at exit; a few words of static TLS surplus avoid dynamic TLS.
 */
#define EMU_TLS __thread __attribute__((tls_model("initial-exec")))

static EMU_TLS struct emu_ctx *cur_ctx;

static const struct {
	CUdevice_attribute a;
	const char *name;
	int v;
} attr_defaults[] = {
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR", 9 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR", 0 },
	{ CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT", 132 },
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK", 1024 },
	{ CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE", 32 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "MAX_SHARED_MEMORY_PER_BLOCK", 49152 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 232448 },
	{ CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, "CAN_MAP_HOST_MEMORY", 1 },
	{ CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "UNIFIED_ADDRESSING", 1 },
	{ CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, "KERNEL_EXEC_TIMEOUT", 0 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, "COMPUTE_MODE", CU_COMPUTEMODE_DEFAULT },
	{ CU_DEVICE_ATTRIBUTE_INTEGRATED, "INTEGRATED", 0 },
	{ CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, "GPU_DIRECT_RDMA_SUPPORTED", 1 },
	{ CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, "GPU_DIRECT_RDMA_WRITES_ORDERING",
	  CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER },
	{ CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS",
	  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST },
	{ CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, "PCI_BUS_ID", -1 },
	{ CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, "PCI_DEVICE_ID", -1 },
	{ CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, "PCI_DOMAIN_ID", -1 },
	{ CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "CLOCK_RATE", 1755000 },
	{ CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "MEMORY_CLOCK_RATE", 2619000 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "GLOBAL_MEMORY_BUS_WIDTH", 5120 },
	{ CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE", 52428800 },
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "MAX_THREADS_PER_MULTIPROCESSOR", 2048 },
	{ CU_DEVICE_ATTRIBUTE_TCC_DRIVER, "TCC_DRIVER", 0 },
	{ CU_DEVICE_ATTRIBUTE_MPS_ENABLED, "MPS_ENABLED", 0 },
};

static bool parse_pci(const char *s, int *domain, int *bus, int *slot, int *fn)
{
	unsigned d = 0, b, sl, f;
	if (sscanf(s, "%x:%x:%x.%x", &d, &b, &sl, &f) == 4 || (d = 0, sscanf(s, "%x:%x.%x", &b, &sl, &f) == 3)) {
		*domain = (int)d, *bus = (int)b, *slot = (int)sl, *fn = (int)f;
		return true;
	}
	return false;
}

static void emu_devices_once(void)
{
	const char *s = getenv("GI_CUDA_EMU_DEVICES");
	D.n = s ? atoi(s) : 1;
	if (D.n < 0 || D.n > EMU_MAX_DEVICES) {
		emu_complain("GI_CUDA_EMU_DEVICES=%s: 0..%d", s, EMU_MAX_DEVICES);
		exit(2);
	}
	char pcis[256] = "";
	if ((s = getenv("GI_CUDA_EMU_PCI")))
		snprintf(pcis, sizeof(pcis), "%s", s);
	char *save = NULL, *tok = strtok_r(pcis, ",", &save);
	for (int i = 0; i < D.n; i++, tok = tok ? strtok_r(NULL, ",", &save) : NULL) {
		int dom = 0, bus = 0xca + i, slot = 0, fn = 0;
		if (tok && !parse_pci(tok, &dom, &bus, &slot, &fn)) {
			emu_complain("GI_CUDA_EMU_PCI: '%s' is not a PCI address", tok);
			exit(2);
		}
		D.dev[i].domain = dom, D.dev[i].bus = bus, D.dev[i].slot = slot;
		/* the driver's own spelling: upper-case hex, 4-digit domain */
		snprintf(D.dev[i].pci, sizeof(D.dev[i].pci), "%04X:%02X:%02X.%X", dom, bus, slot, fn);
		D.dev[i].ctx.dev = i;
	}
	if ((s = getenv("GI_CUDA_EMU_ATTR")) && *s) {
		char buf[512], *sv = NULL;
		snprintf(buf, sizeof(buf), "%s", s);
		for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
			char *eq = strchr(t, '=');
			int k = -1;
			if (eq)
				*eq = '\0';
			for (size_t i = 0; i < sizeof(attr_defaults) / sizeof(attr_defaults[0]); i++)
				if (strcmp(attr_defaults[i].name, t) == 0)
					k = (int)i;
			if (!eq || k < 0 || D.attr_overrides == 32) {
				emu_complain("GI_CUDA_EMU_ATTR: '%s' is not NAME=VALUE of a known attribute", t);
				exit(2);
			}
			D.over[D.attr_overrides].a = attr_defaults[k].a;
			D.over[D.attr_overrides++].v = atoi(eq + 1);
		}
	}
}

static pthread_once_t dev_once = PTHREAD_ONCE_INIT;

#define NEED_INIT()                                      \
	do {                                             \
		if (!__atomic_load_n(&D.inited, __ATOMIC_ACQUIRE)) \
			return CUDA_ERROR_NOT_INITIALIZED; \
	} while (0)

/* The calling thread's context, healthy: else the error a driver gives. */
static CUresult need_ctx(struct emu_ctx **out)
{
	if (!__atomic_load_n(&D.inited, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	struct emu_ctx *c = cur_ctx;
	if (!c || __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	CUresult s = __atomic_load_n(&c->sticky, __ATOMIC_ACQUIRE);
	if (s != CUDA_SUCCESS)
		return s;
	if (out)
		*out = c;
	return CUDA_SUCCESS;
}

#define NEED_CTX(c)                                      \
	do {                                             \
		CUresult nc_ = need_ctx(c);              \
		if (nc_ != CUDA_SUCCESS)                 \
			return nc_;                      \
	} while (0)

static CUresult emu_cuInit(unsigned int flags)
{
	ENTER(cuInit);
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&dev_once, emu_devices_once);
	__atomic_store_n(&D.inited, true, __ATOMIC_RELEASE);
	return D.n ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

EMU_EXPORT CUresult cuInit(unsigned int flags)
{
	return emu_result(C_cuInit, emu_cuInit(flags));
}

static CUresult emu_cuDriverGetVersion(int *v)
{
	ENTER(cuDriverGetVersion);
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = CUDA_VERSION;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDriverGetVersion(int *v)
{
	return emu_result(C_cuDriverGetVersion, emu_cuDriverGetVersion(v));
}

static CUresult emu_cuDeviceGetCount(int *n)
{
	ENTER(cuDeviceGetCount);
	NEED_INIT();
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = D.n;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDeviceGetCount(int *n)
{
	return emu_result(C_cuDeviceGetCount, emu_cuDeviceGetCount(n));
}

static CUresult emu_cuDeviceGet(CUdevice *dev, int ordinal)
{
	ENTER(cuDeviceGet);
	NEED_INIT();
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= D.n)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	return emu_result(C_cuDeviceGet, emu_cuDeviceGet(dev, ordinal));
}

static CUresult emu_cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
	int dom, bus, slot, fn;
	ENTER(cuDeviceGetByPCIBusId);
	NEED_INIT();
	if (!dev || !id || !parse_pci(id, &dom, &bus, &slot, &fn))
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < D.n; i++)
		if (D.dev[i].domain == dom && D.dev[i].bus == bus && D.dev[i].slot == slot) {
			*dev = i;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_DEVICE;
}

EMU_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
	return emu_result(C_cuDeviceGetByPCIBusId, emu_cuDeviceGetByPCIBusId(dev, id));
}

#define NEED_DEV(d)                                      \
	do {                                             \
		NEED_INIT();                             \
		if ((d) < 0 || (d) >= D.n)               \
			return CUDA_ERROR_INVALID_DEVICE; \
	} while (0)

static CUresult emu_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	ENTER(cuDeviceGetName);
	NEED_DEV(dev);
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "gpuingest CUDA emulation (CPU threads, not a GPU)");
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	return emu_result(C_cuDeviceGetName, emu_cuDeviceGetName(name, len, dev));
}

static CUresult emu_cuDeviceGetPCIBusId(char *buf, int len, CUdevice dev)
{
	ENTER(cuDeviceGetPCIBusId);
	NEED_DEV(dev);
	if (!buf || len < 13)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(buf, (size_t)len, "%s", D.dev[dev].pci);
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice dev)
{
	return emu_result(C_cuDeviceGetPCIBusId, emu_cuDeviceGetPCIBusId(buf, len, dev));
}

static CUresult emu_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev)
{
	ENTER(cuDeviceGetAttribute);
	NEED_DEV(dev);
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	for (int i = D.attr_overrides - 1; i >= 0; i--)
		if (D.over[i].a == a) {
			*v = D.over[i].v;
			return CUDA_SUCCESS;
		}
	for (size_t i = 0; i < sizeof(attr_defaults) / sizeof(attr_defaults[0]); i++) {
		if (attr_defaults[i].a != a)
			continue;
		*v = a == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID	    ? D.dev[dev].bus
		     : a == CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID ? D.dev[dev].slot
		     : a == CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID ? D.dev[dev].domain
							      : attr_defaults[i].v;
		return CUDA_SUCCESS;
	}
	/* not modelled: loud, so a new query in the daemon gets a value here first */
	emu_complain("cuDeviceGetAttribute(%d): attribute not modelled by the emulation", (int)a);
	return CUDA_ERROR_INVALID_VALUE;
}

EMU_EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev)
{
	return emu_result(C_cuDeviceGetAttribute, emu_cuDeviceGetAttribute(v, a, dev));
}

static CUresult emu_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	ENTER(cuDevicePrimaryCtxRetain);
	NEED_DEV(dev);
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_fetch_add(&D.dev[dev].ctx.refs, 1, __ATOMIC_ACQ_REL);
	*ctx = (CUcontext)(void *)&D.dev[dev].ctx;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	return emu_result(C_cuDevicePrimaryCtxRetain, emu_cuDevicePrimaryCtxRetain(ctx, dev));
}

static void emu_ctx_released(struct emu_ctx *c);

static CUresult emu_cuDevicePrimaryCtxRelease(CUdevice dev)
{
	ENTER(cuDevicePrimaryCtxRelease);
	NEED_DEV(dev);
	struct emu_ctx *c = &D.dev[dev].ctx;
	int left = __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	if (left < 0) {
		__atomic_store_n(&c->refs, 0, __ATOMIC_RELEASE);
		emu_complain("cuDevicePrimaryCtxRelease(%d): released more often than retained", dev);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (left == 0)
		emu_ctx_released(c);
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return emu_result(C_cuDevicePrimaryCtxRelease, emu_cuDevicePrimaryCtxRelease(dev));
}

static CUresult emu_cuCtxSetCurrent(CUcontext ctx)
{
	ENTER(cuCtxSetCurrent);
	NEED_INIT();
	struct emu_ctx *c = (struct emu_ctx *)(void *)ctx;
	if (c && (c < &D.dev[0].ctx || c > &D.dev[EMU_MAX_DEVICES - 1].ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	cur_ctx = c;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	return emu_result(C_cuCtxSetCurrent, emu_cuCtxSetCurrent(ctx));
}

/* ---- memory ----------------------------------------------------------------- */

enum emu_mem_kind {
	M_DEVICE = 1,   /* cuMemAlloc: memfd */
	M_HOST,         /* cuMemHostAlloc */
	M_REGISTERED,   /* cuMemHostRegister, page-rounded range */
	M_IPC,          /* cuIpcOpenMemHandle: another process's device memory */
};

struct emu_mem {
	enum emu_mem_kind kind;
	uintptr_t base, size;   /* for M_REGISTERED the rounded range */
	uintptr_t user;         /* M_REGISTERED: the pointer the caller registered */
	int fd;
	bool sync_memops;
	uint64_t id;
	struct emu_ctx *ctx;
	struct emu_mem *next;
};

static struct emu_mem *mems;
static uint64_t next_mem_id = 1;

/* The block of kind `kinds` (bit mask) containing [p, p + n), under g.mu. */
static struct emu_mem *mem_find(uintptr_t p, uintptr_t n, unsigned kinds)
{
	for (struct emu_mem *m = mems; m; m = m->next)
		if ((kinds >> m->kind & 1u) && p >= m->base && p - m->base < m->size && n <= m->size - (p - m->base))
			return m;
	return NULL;
}

#define K(k) (1u << (k))

static void mem_unlink(struct emu_mem *m)
{
	for (struct emu_mem **pp = &mems; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			return;
		}
}

static void mem_release(struct emu_mem *m)
{
	if (m->kind == M_DEVICE || m->kind == M_IPC || m->kind == M_HOST)
		munmap((void *)m->base, m->size);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

/* A new allocation joins the table (its id orders the leak report). */
static void mem_add(struct emu_mem *m)
{
	pthread_mutex_lock(&g.mu);
	m->id = next_mem_id++;
	m->next = mems;
	mems = m;
	pthread_mutex_unlock(&g.mu);
}

/* The free of an allocation of one of `kinds` whose base is p, or a complaint: "call(p): why". */
static CUresult mem_remove(uintptr_t p, unsigned kinds, const char *call, const char *why)
{
	pthread_mutex_lock(&g.mu);
	struct emu_mem *m = mem_find(p, 0, kinds);
	if (!m || m->base != p) {
		pthread_mutex_unlock(&g.mu);
		emu_complain("%s(0x%llx): %s", call, (unsigned long long)p, why);
		return CUDA_ERROR_INVALID_VALUE;
	}
	mem_unlink(m);
	pthread_mutex_unlock(&g.mu);
	mem_release(m);
	return CUDA_SUCCESS;
}

static void emu_ctx_released(struct emu_ctx *c)
{
	/* the driver frees a destroyed context's memory; a daemon that left any is leaking */
	uint64_t n = 0, bytes = 0;
	pthread_mutex_lock(&g.mu);
	for (struct emu_mem **pp = &mems; *pp;) {
		struct emu_mem *m = *pp;
		if (m->ctx == c) {
			n++;
			bytes += m->size;
			*pp = m->next;
			mem_release(m);
		} else {
			pp = &m->next;
		}
	}
	pthread_mutex_unlock(&g.mu);
	if (n)
		emu_complain("leak: %llu allocation(s)/registration(s), %llu bytes, still live when the primary context "
			     "of device %d was released",
			     (unsigned long long)n, (unsigned long long)bytes, c->dev);
	__atomic_store_n(&c->sticky, CUDA_SUCCESS, __ATOMIC_RELEASE); /* a new context starts healthy */
}

static CUresult emu_cuMemAlloc(CUdeviceptr *dptr, size_t bytes)
{
	struct emu_ctx *c;
	ENTER(cuMemAlloc);
	NEED_CTX(&c);
	if (!dptr || bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	size_t size = (bytes + EMU_PAGE - 1) & ~(EMU_PAGE - 1);
	int fd = memfd_create("gi-cuda-emu-device", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		if (fd >= 0)
			close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memset(p, EMU_POISON, size); /* device memory starts as garbage, never as zeros */
	struct emu_mem *m = calloc(1, sizeof(*m));
	if (!m) {
		munmap(p, size);
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*m = (struct emu_mem){ .kind = M_DEVICE, .base = (uintptr_t)p, .size = size, .fd = fd, .ctx = c };
	mem_add(m);
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytes)
{
	return emu_result(C_cuMemAlloc, emu_cuMemAlloc(dptr, bytes));
}

static CUresult emu_cuMemFree(CUdeviceptr dptr)
{
	ENTER(cuMemFree);
	NEED_CTX(NULL);
	return mem_remove((uintptr_t)dptr, K(M_DEVICE), "cuMemFree", "not the base of a cuMemAlloc allocation");
}

EMU_EXPORT CUresult cuMemFree(CUdeviceptr dptr)
{
	return emu_result(C_cuMemFree, emu_cuMemFree(dptr));
}

static CUresult emu_cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
	struct emu_ctx *c;
	ENTER(cuMemHostAlloc);
	NEED_CTX(&c);
	if (!pp || bytes == 0 || (flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	size_t size = (bytes + EMU_PAGE - 1) & ~(EMU_PAGE - 1);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct emu_mem *m = p == MAP_FAILED ? NULL : calloc(1, sizeof(*m));
	if (!m) {
		if (p != MAP_FAILED)
			munmap(p, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memset(p, EMU_POISON, size);
	*m = (struct emu_mem){ .kind = M_HOST, .base = (uintptr_t)p, .size = size, .fd = -1, .ctx = c };
	mem_add(m);
	*pp = p;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
	return emu_result(C_cuMemHostAlloc, emu_cuMemHostAlloc(pp, bytes, flags));
}

static CUresult emu_cuMemFreeHost(void *p)
{
	ENTER(cuMemFreeHost);
	NEED_CTX(NULL);
	return mem_remove((uintptr_t)p, K(M_HOST), "cuMemFreeHost", "not a cuMemHostAlloc allocation");
}

EMU_EXPORT CUresult cuMemFreeHost(void *p)
{
	return emu_result(C_cuMemFreeHost, emu_cuMemFreeHost(p));
}

static CUresult emu_cuMemHostRegister(void *p, size_t bytes, unsigned int flags)
{
	struct emu_ctx *c;
	ENTER(cuMemHostRegister);
	NEED_CTX(&c);
	if (!p || bytes == 0 ||
	    (flags & ~(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
		       CU_MEMHOSTREGISTER_READ_ONLY)))
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t lo = (uintptr_t)p & ~(EMU_PAGE - 1);
	uintptr_t hi = ((uintptr_t)p + bytes + EMU_PAGE - 1) & ~(EMU_PAGE - 1);
	pthread_mutex_lock(&g.mu);
	/* the driver pins whole pages: any overlap with a pinned range is refused */
	for (struct emu_mem *m = mems; m; m = m->next)
		if ((m->kind == M_REGISTERED || m->kind == M_HOST) && lo < m->base + m->size && m->base < hi) {
			pthread_mutex_unlock(&g.mu);
			return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		}
	struct emu_mem *m = calloc(1, sizeof(*m));
	if (!m) {
		pthread_mutex_unlock(&g.mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*m = (struct emu_mem){ .kind = M_REGISTERED, .base = lo, .size = hi - lo, .user = (uintptr_t)p, .fd = -1,
			       .ctx = c, .id = next_mem_id++, .next = mems };
	mems = m;
	pthread_mutex_unlock(&g.mu);
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuMemHostRegister(void *p, size_t bytes, unsigned int flags)
{
	return emu_result(C_cuMemHostRegister, emu_cuMemHostRegister(p, bytes, flags));
}

static CUresult emu_cuMemHostUnregister(void *p)
{
	ENTER(cuMemHostUnregister);
	NEED_CTX(NULL);
	pthread_mutex_lock(&g.mu);
	for (struct emu_mem *m = mems; m; m = m->next)
		if (m->kind == M_REGISTERED && m->user == (uintptr_t)p) {
			mem_unlink(m);
			pthread_mutex_unlock(&g.mu);
			mem_release(m);
			return CUDA_SUCCESS;
		}
	pthread_mutex_unlock(&g.mu);
	emu_complain("cuMemHostUnregister(%p): not a pointer that was registered", p);
	return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

EMU_EXPORT CUresult cuMemHostUnregister(void *p)
{
	return emu_result(C_cuMemHostUnregister, emu_cuMemHostUnregister(p));
}

static CUresult emu_cuMemHostGetDevicePointer(CUdeviceptr *dptr, void *p, unsigned int flags)
{
	ENTER(cuMemHostGetDevicePointer);
	NEED_CTX(NULL);
	if (!dptr || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g.mu);
	struct emu_mem *m = mem_find((uintptr_t)p, 1, K(M_REGISTERED) | K(M_HOST));
	pthread_mutex_unlock(&g.mu);
	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	*dptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr *dptr, void *p, unsigned int flags)
{
	return emu_result(C_cuMemHostGetDevicePointer, emu_cuMemHostGetDevicePointer(dptr, p, flags));
}

/* One attribute of memory `m` (NULL: memory the driver does not know) into data. */
static CUresult pointer_attr(const struct emu_mem *m, CUpointer_attribute a, CUdeviceptr ptr, void *data)
{
	bool dev = m && (m->kind == M_DEVICE || m->kind == M_IPC);
	switch (a) {
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(CUmemorytype *)data = !m ? (CUmemorytype)0 : dev ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = m ? ptr : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		*(int *)data = m ? m->sync_memops : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = m ? (CUdeviceptr)m->base : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = m ? m->size : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = m ? m->id : 0;
		return CUDA_SUCCESS;
	default:
		emu_complain("cuPointerGetAttribute(s)(%d): attribute not modelled by the emulation", (int)a);
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult emu_cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr ptr)
{
	ENTER(cuPointerGetAttribute);
	NEED_CTX(NULL);
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g.mu);
	struct emu_mem *m = mem_find((uintptr_t)ptr, 1, K(M_DEVICE) | K(M_IPC) | K(M_HOST) | K(M_REGISTERED));
	struct emu_mem copy = m ? *m : (struct emu_mem){ 0 };
	pthread_mutex_unlock(&g.mu);
	if (!m)
		return CUDA_ERROR_INVALID_VALUE; /* memory the driver does not know */
	return pointer_attr(&copy, a, ptr, data);
}

/* As the driver documents it: memory it does not know is no error, each attribute reads as zero. */
static CUresult emu_cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
	ENTER(cuPointerGetAttributes);
	NEED_CTX(NULL);
	if (!n || !attrs || !data)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g.mu);
	struct emu_mem *m = mem_find((uintptr_t)ptr, 1, K(M_DEVICE) | K(M_IPC) | K(M_HOST) | K(M_REGISTERED));
	struct emu_mem copy = m ? *m : (struct emu_mem){ 0 };
	pthread_mutex_unlock(&g.mu);
	for (unsigned int i = 0; i < n; i++) {
		CUresult r = data[i] ? pointer_attr(m ? &copy : NULL, attrs[i], ptr, data[i]) : CUDA_ERROR_INVALID_VALUE;
		if (r != CUDA_SUCCESS)
			return r;
	}
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
	return emu_result(C_cuPointerGetAttributes, emu_cuPointerGetAttributes(n, attrs, data, ptr));
}

EMU_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr ptr)
{
	return emu_result(C_cuPointerGetAttribute, emu_cuPointerGetAttribute(data, a, ptr));
}

static CUresult emu_cuPointerSetAttribute(const void *value, CUpointer_attribute a, CUdeviceptr ptr)
{
	ENTER(cuPointerSetAttribute);
	NEED_CTX(NULL);
	if (!value || a != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g.mu);
	struct emu_mem *m = mem_find((uintptr_t)ptr, 1, K(M_DEVICE));
	if (m)
		m->sync_memops = *(const int *)value != 0;
	pthread_mutex_unlock(&g.mu);
	return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EMU_EXPORT CUresult cuPointerSetAttribute(const void *value, CUpointer_attribute a, CUdeviceptr ptr)
{
	return emu_result(C_cuPointerSetAttribute, emu_cuPointerSetAttribute(value, a, ptr));
}

/* [p, p + n) lies in one device allocation (own or opened through IPC). */
static CUresult check_device_range(CUdeviceptr p, size_t n, const char *what)
{
	pthread_mutex_lock(&g.mu);
	struct emu_mem *m = mem_find((uintptr_t)p, n, K(M_DEVICE) | K(M_IPC));
	pthread_mutex_unlock(&g.mu);
	if (m)
		return CUDA_SUCCESS;
	emu_complain("%s(0x%llx, %zu bytes): not inside one device allocation", what, (unsigned long long)p, n);
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult emu_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	ENTER(cuMemcpyHtoD);
	NEED_CTX(NULL);
	CUresult r = check_device_range(dst, n, "cuMemcpyHtoD");
	if (r == CUDA_SUCCESS && n)
		memcpy((void *)(uintptr_t)dst, src, n);
	return r;
}

EMU_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	return emu_result(C_cuMemcpyHtoD, emu_cuMemcpyHtoD(dst, src, n));
}

static CUresult emu_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	ENTER(cuMemcpyDtoH);
	NEED_CTX(NULL);
	CUresult r = check_device_range(src, n, "cuMemcpyDtoH");
	if (r == CUDA_SUCCESS && n)
		memcpy(dst, (const void *)(uintptr_t)src, n);
	return r;
}

EMU_EXPORT CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	return emu_result(C_cuMemcpyDtoH, emu_cuMemcpyDtoH(dst, src, n));
}

static CUresult emu_cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n)
{
	ENTER(cuMemsetD8);
	NEED_CTX(NULL);
	CUresult r = check_device_range(dst, n, "cuMemsetD8");
	if (r == CUDA_SUCCESS && n)
		memset((void *)(uintptr_t)dst, v, n);
	return r;
}

EMU_EXPORT CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n)
{
	return emu_result(C_cuMemsetD8, emu_cuMemsetD8(dst, v, n));
}

/* ---- IPC: a handle names the owner's memfd ---------------------------------- */

struct emu_ipc {
	uint64_t magic;
	uint32_t pid;
	int32_t fd;
	uint64_t size;
	uint64_t id;
};
#define EMU_IPC_MAGIC 0x4350494d45554947ull /* "GIUEMIPC" */
_Static_assert(sizeof(struct emu_ipc) <= sizeof(CUipcMemHandle), "handle record fits CUDA's 64 bytes");

static CUresult emu_cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr)
{
	ENTER(cuIpcGetMemHandle);
	NEED_CTX(NULL);
	if (!h)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g.mu);
	struct emu_mem *m = mem_find((uintptr_t)dptr, 0, K(M_DEVICE));
	struct emu_ipc rec = { 0 };
	if (m && m->base == (uintptr_t)dptr)
		rec = (struct emu_ipc){ EMU_IPC_MAGIC, (uint32_t)getpid(), m->fd, m->size, m->id };
	pthread_mutex_unlock(&g.mu);
	if (!rec.magic) {
		emu_complain("cuIpcGetMemHandle(0x%llx): not the base of a cuMemAlloc allocation", (unsigned long long)dptr);
		return CUDA_ERROR_INVALID_VALUE;
	}
	memset(h, 0, sizeof(*h));
	memcpy(h, &rec, sizeof(rec));
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr)
{
	return emu_result(C_cuIpcGetMemHandle, emu_cuIpcGetMemHandle(h, dptr));
}

static CUresult emu_cuIpcOpenMemHandle(CUdeviceptr *dptr, CUipcMemHandle h, unsigned int flags)
{
	struct emu_ctx *c;
	struct emu_ipc rec;
	char path[64];
	struct stat st;

	ENTER(cuIpcOpenMemHandle);
	NEED_CTX(&c);
	memcpy(&rec, &h, sizeof(rec));
	if (!dptr || (flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) || rec.magic != EMU_IPC_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	if (rec.pid == (uint32_t)getpid())
		return CUDA_ERROR_INVALID_CONTEXT; /* the driver refuses a process its own handle */
	snprintf(path, sizeof(path), "/proc/%u/fd/%d", rec.pid, rec.fd);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_INVALID_HANDLE; /* the owner is gone */
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != rec.size) {
		close(fd);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	void *p = mmap(NULL, rec.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct emu_mem *m = p == MAP_FAILED ? NULL : calloc(1, sizeof(*m));
	if (!m) {
		if (p != MAP_FAILED)
			munmap(p, rec.size);
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*m = (struct emu_mem){ .kind = M_IPC, .base = (uintptr_t)p, .size = rec.size, .fd = fd, .ctx = c };
	mem_add(m);
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *dptr, CUipcMemHandle h, unsigned int flags)
{
	return emu_result(C_cuIpcOpenMemHandle, emu_cuIpcOpenMemHandle(dptr, h, flags));
}

static CUresult emu_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	ENTER(cuIpcCloseMemHandle);
	NEED_CTX(NULL);
	return mem_remove((uintptr_t)dptr, K(M_IPC), "cuIpcCloseMemHandle", "not an opened IPC mapping");
}

EMU_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	return emu_result(C_cuIpcCloseMemHandle, emu_cuIpcCloseMemHandle(dptr));
}

static CUresult emu_cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
					       CUflushGPUDirectRDMAWritesScope scope)
{
	ENTER(cuFlushGPUDirectRDMAWrites);
	NEED_CTX(NULL);
	if (target != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX ||
	    (scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER && scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g.mu);
	g.flushes++;
	pthread_mutex_unlock(&g.mu);
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
					       CUflushGPUDirectRDMAWritesScope scope)
{
	return emu_result(C_cuFlushGPUDirectRDMAWrites, emu_cuFlushGPUDirectRDMAWrites(target, scope));
}

/* ---- modules and functions ------------------------------------------------- */

#define EMU_FUNC_MAGIC 0x46554d45u
#define EMU_MOD_MAGIC 0x4d4f4d45u

struct emu_func {
	uint32_t magic;
	const struct gi_emu_kernel *k;
	uint32_t max_dyn_smem; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
};

struct emu_module {
	uint32_t magic;
	uint32_t n;
	struct emu_func *funcs;
};

static CUresult emu_cuModuleLoadData(CUmodule *mod, const void *image)
{
	const struct gi_emu_module *em = image;
	ENTER(cuModuleLoadData);
	NEED_CTX(NULL);
	if (!mod || !image)
		return CUDA_ERROR_INVALID_VALUE;
	if (em->magic != GI_EMU_MODULE_MAGIC || em->abi != GI_EMU_ABI) {
		emu_complain("cuModuleLoadData: not an emulated kernel table (a real fatbin cannot run here)");
		return CUDA_ERROR_INVALID_IMAGE;
	}
	struct emu_module *m = calloc(1, sizeof(*m));
	struct emu_func *f = calloc(em->n_kernels ? em->n_kernels : 1, sizeof(*f));
	if (!m || !f) {
		free(m);
		free(f);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (uint32_t i = 0; i < em->n_kernels; i++)
		f[i] = (struct emu_func){ EMU_FUNC_MAGIC, &em->kernels[i], 48u << 10 };
	*m = (struct emu_module){ EMU_MOD_MAGIC, em->n_kernels, f };
	*mod = (CUmodule)(void *)m;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
	return emu_result(C_cuModuleLoadData, emu_cuModuleLoadData(mod, image));
}

static CUresult emu_cuModuleUnload(CUmodule mod)
{
	struct emu_module *m = (struct emu_module *)(void *)mod;
	ENTER(cuModuleUnload);
	NEED_INIT();
	if (!m || m->magic != EMU_MOD_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	m->magic = 0;
	free(m->funcs);
	free(m);
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuModuleUnload(CUmodule mod)
{
	return emu_result(C_cuModuleUnload, emu_cuModuleUnload(mod));
}

static CUresult emu_cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name)
{
	struct emu_module *m = (struct emu_module *)(void *)mod;
	ENTER(cuModuleGetFunction);
	NEED_CTX(NULL);
	if (!fn || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!m || m->magic != EMU_MOD_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	for (uint32_t i = 0; i < m->n; i++)
		if (strcmp(m->funcs[i].k->name, name) == 0) {
			*fn = (CUfunction)(void *)&m->funcs[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

EMU_EXPORT CUresult cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name)
{
	return emu_result(C_cuModuleGetFunction, emu_cuModuleGetFunction(fn, mod, name));
}

static int dev_attr(int dev, CUdevice_attribute a)
{
	int v = 0;
	for (int i = D.attr_overrides - 1; i >= 0; i--)
		if (D.over[i].a == a)
			return D.over[i].v;
	for (size_t i = 0; i < sizeof(attr_defaults) / sizeof(attr_defaults[0]); i++)
		if (attr_defaults[i].a == a)
			v = attr_defaults[i].v;
	(void)dev;
	return v;
}

static CUresult emu_cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int v)
{
	struct emu_func *f = (struct emu_func *)(void *)fn;
	struct emu_ctx *c;
	ENTER(cuFuncSetAttribute);
	NEED_CTX(&c);
	if (!f || f->magic != EMU_FUNC_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
		emu_complain("cuFuncSetAttribute(%d): attribute not modelled by the emulation", (int)a);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (v < 0 || v > dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))
		return CUDA_ERROR_INVALID_VALUE;
	f->max_dyn_smem = (uint32_t)v;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int v)
{
	return emu_result(C_cuFuncSetAttribute, emu_cuFuncSetAttribute(fn, a, v));
}

/* ---- launches: blocks of OS threads ------------------------------------------ */

/*
 * Waiting.  Arrival at a barrier or a warp collective is bookkept under the
 * block's mutex (so deadlock detection sees a consistent picture), but
 * waiters sleep on a futex of the generation word and leave without taking
 * the mutex again: a condition variable would make every woken thread queue
 * for the mutex, and a block of 256 OS threads would pay 256 handoffs per
 * barrier.  The completer pays for the threads it releases in `blocked`.
 */
static void futex_wait_u32(uint32_t *addr, uint32_t val)
{
	struct timespec ts = { 0, 50000000 }; /* bounded: a fault wakes us anyway, this is belt and braces */
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake_all(uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

struct emu_launch;

struct emu_warp {
	uint32_t valid;     /* lanes that exist */
	uint32_t exited;    /* lanes whose thread has returned */
	uint32_t cur_mask;  /* the collective in progress (0: none) */
	struct gi_emu_site cur_at; /* ... where its first lane called it */
	uint32_t cur_first; /* ... that lane */
	uint32_t arrived;
	uint32_t pending;   /* released lanes that have not copied the snapshot yet (atomic) */
	uint32_t gen;       /* futex word */
	uint64_t vals[32], snap[32];
};

struct emu_block {
	struct emu_launch *l;
	pthread_mutex_t mu;
	uint32_t n, live, exited;
	uint32_t arrived;   /* at __syncthreads */
	uint32_t blocked;   /* threads waiting in a barrier or a warp collective */
	uint32_t gen;       /* futex word */
	struct gi_emu_site bar_at; /* the barrier of this generation: where its first thread called it */
	uint32_t bar_first;        /* ... that thread */
	int acc, result[2];
	uint8_t *smem;
	uint32_t n_warps;
	struct emu_warp *warps;
};

struct emu_tctx {
	struct gi_emu_thread t; /* first: the kernel side sees only this */
	struct emu_block *b;
	uint64_t rng;
	uint32_t bar_wait;      /* b->gen + 1 while it waits at that generation's barrier (under b->mu) */
};

struct emu_launch {
	const struct gi_emu_kernel *k;
	struct emu_ctx *ctx;
	struct gi_emu_dim3 grid, block;
	uint32_t smem;
	uint8_t *params;
	void *pptr[GI_EMU_MAX_PARAMS];
	int faulted;
	char fault[256];
	uint32_t n_blocks;
	struct emu_block *blocks;
	struct emu_tctx *threads;
};

/*
 * A generation word, read under its block's mutex: atomically all the same,
 * since a faulting thread's wake_block() touches it without the mutex.
 */
static inline uint32_t gen_now(const uint32_t *gen)
{
	return __atomic_load_n(gen, __ATOMIC_RELAXED);
}

static void wake_block(struct emu_block *b)
{
	__atomic_fetch_add(&b->gen, 0, __ATOMIC_ACQ_REL); /* waiters re-check the fault after any wake */
	futex_wake_all(&b->gen);
	for (uint32_t w = 0; w < b->n_warps; w++)
		futex_wake_all(&b->warps[w].gen);
}

static void launch_fault(struct emu_launch *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void launch_fault(struct emu_launch *l, const char *fmt, ...)
{
	int expect = 0;
	if (__atomic_compare_exchange_n(&l->faulted, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(l->fault, sizeof(l->fault), fmt, ap);
		va_end(ap);
		emu_complain("kernel %s faulted: %s", l->k->name, l->fault);
	}
	/* wake every waiter; each sees the fault and leaves */
	for (uint32_t i = 0; i < l->n_blocks; i++)
		wake_block(&l->blocks[i]);
}

static bool faulted(const struct emu_launch *l)
{
	return __atomic_load_n(&l->faulted, __ATOMIC_ACQUIRE) != 0;
}

static struct emu_tctx *tctx(struct gi_emu_thread *t)
{
	return (struct emu_tctx *)t;
}

/* Leaving a kernel early (a fault): back to the pool's loop, not out of the OS thread. */
static EMU_TLS sigjmp_buf *leave_to;

static void __attribute__((noreturn)) leave_kernel(void)
{
	siglongjmp(*leave_to, 1);
}

/* Stress switch: now and then let another thread run here. */
static void stress_point(struct emu_tctx *tc)
{
	if (!g.stress)
		return;
	tc->rng ^= tc->rng << 13, tc->rng ^= tc->rng >> 7, tc->rng ^= tc->rng << 17;
	if (tc->rng % g.stress)
		return;
	if (tc->rng >> 32 & 3) {
		sched_yield();
	} else {
		struct timespec ts = { 0, (long)(1000 + (tc->rng >> 40) % 50000) };
		nanosleep(&ts, NULL);
	}
}

/* Under b->mu, about to sleep: is every live thread of the block waiting on another? */
static int deadlocked(struct emu_block *b)
{
	return b->blocked == b->live;
}

/*
 * CUDA's rules.  __syncthreads() is bar.sync, an aligned barrier: every
 * non-exited thread of the block must execute the same barrier
 * instruction, or the block hangs or traps (on sm_70+ a barrier counts
 * threads, so warps at different barriers may release each other and run
 * out of step).  A warp collective (__syncwarp, shuffles, votes) waits for
 * exactly the lanes its mask names, which must call the same one with the
 * same mask.  OS threads would let both through; these checks run under
 * b->mu at every arrival, and a breach faults the launch naming both call
 * sites and the threads.
 */
static bool same_site(const struct gi_emu_site *a, const struct gi_emu_site *b)
{
	return a->line == b->line && strcmp(a->what, b->what) == 0 && strcmp(a->file, b->file) == 0;
}

static const char *site_file(const struct gi_emu_site *at)
{
	const char *slash = strrchr(at->file, '/');
	return slash ? slash + 1 : at->file;
}

#define SITE_FMT "%s() at %s:%u"
#define SITE_ARGS(at) (at)->what, site_file(at), (at)->line

static struct emu_tctx *block_thread(struct emu_block *b, uint32_t i)
{
	return &b->l->threads[(size_t)(b - b->l->blocks) * b->n + i];
}

static uint32_t thread_index(const struct gi_emu_thread *t)
{
	return t->warp * 32 + t->lane;
}

/* Under b->mu: the lanes of warp `w` (other than `self`) that wait at this generation's barrier. */
static uint32_t lanes_at_barrier(struct emu_block *b, uint32_t w, uint32_t self)
{
	uint32_t at = 0;
	for (uint32_t l = 0; l < 32 && w * 32 + l < b->n; l++)
		if (w * 32 + l != self && block_thread(b, w * 32 + l)->bar_wait == gen_now(&b->gen) + 1)
			at |= 1u << l;
	return at;
}

/* Under b->mu, which it releases: fault the launch and leave the kernel. */
static void __attribute__((noreturn, format(printf, 3, 4))) rule_broken(struct emu_block *b, struct emu_tctx *tc,
								      const char *fmt, ...)
{
	char buf[224];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&b->mu);
	launch_fault(b->l, "block %u: %s", (unsigned)(b - b->l->blocks), buf);
	(void)tc;
	leave_kernel();
}

static int op_syncthreads_count(struct gi_emu_thread *t, int pred, const struct gi_emu_site *at)
{
	struct emu_tctx *tc = tctx(t);
	struct emu_block *b = tc->b;
	struct emu_warp *w = &b->warps[t->warp];
	uint32_t my, me = thread_index(t);
	int r, dead = 0;

	stress_point(tc);
	pthread_mutex_lock(&b->mu);
	if (faulted(b->l)) {
		pthread_mutex_unlock(&b->mu);
		leave_kernel();
	}
	if (b->exited)
		rule_broken(b, tc, "thread %u calls " SITE_FMT " after %u of its block's threads returned", me,
			    SITE_ARGS(at), b->exited);
	if (w->arrived && (w->cur_mask >> t->lane & 1u))
		rule_broken(b, tc,
			    "thread %u calls " SITE_FMT " while lanes 0x%08x of its warp %u wait for it in " SITE_FMT,
			    me, SITE_ARGS(at), w->arrived, t->warp, SITE_ARGS(&w->cur_at));
	if (b->arrived == 0) {
		b->bar_at = *at;
		b->bar_first = me;
	} else if (!same_site(&b->bar_at, at)) {
		rule_broken(b, tc,
			    "threads meet at different barriers: thread %u at " SITE_FMT ", thread %u at " SITE_FMT
			    " (barrier %u of the block)",
			    b->bar_first, SITE_ARGS(&b->bar_at), me, SITE_ARGS(at), gen_now(&b->gen));
	}
	b->acc += pred;
	my = gen_now(&b->gen);
	if (++b->arrived == b->live) {
		r = b->result[my & 1] = b->acc;
		b->blocked -= b->arrived - 1;
		b->acc = 0;
		b->arrived = 0;
		__atomic_store_n(&b->gen, my + 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&b->mu);
		futex_wake_all(&b->gen);
		stress_point(tc);
		return r;
	}
	tc->bar_wait = my + 1;
	b->blocked++;
	dead = deadlocked(b);
	uint32_t at_barrier = b->arrived;
	pthread_mutex_unlock(&b->mu);
	if (dead)
		launch_fault(b->l, "deadlock: all %u live threads of block %u wait (%u at __syncthreads, the rest in warp "
				   "collectives)",
			     b->live, (unsigned)(b - b->l->blocks), at_barrier);
	while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == my && !faulted(b->l))
		futex_wait_u32(&b->gen, my);
	if (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == my)
		leave_kernel(); /* faulted while we waited */
	r = b->result[my & 1];
	stress_point(tc);
	return r;
}

static void op_warp_collect(struct gi_emu_thread *t, uint32_t mask, uint64_t mine, uint64_t out[32],
			    const struct gi_emu_site *at)
{
	struct emu_tctx *tc = tctx(t);
	struct emu_block *b = tc->b;
	struct emu_warp *w = &b->warps[t->warp];
	uint32_t bit = 1u << t->lane, me = thread_index(t);

	stress_point(tc);
	for (;;) {
		pthread_mutex_lock(&b->mu);
		if (faulted(b->l)) {
			pthread_mutex_unlock(&b->mu);
			leave_kernel();
		}
		if (!(mask & bit) || (mask & ~w->valid) || (mask & w->exited))
			rule_broken(b, tc, "warp %u lane %u: " SITE_FMT " with mask 0x%08x: %s", t->warp, t->lane,
				    SITE_ARGS(at), mask,
				    !(mask & bit)	  ? "the calling lane is not in it"
				    : (mask & ~w->valid) ? "names lanes that do not exist"
							 : "names lanes that returned");
		/* the previous collective's lanes are still copying its values: they run, let them */
		if (!__atomic_load_n(&w->pending, __ATOMIC_ACQUIRE))
			break;
		pthread_mutex_unlock(&b->mu);
		sched_yield();
	}
	uint32_t barred = lanes_at_barrier(b, t->warp, me) & mask;
	if (barred)
		rule_broken(b, tc, "warp %u lane %u: " SITE_FMT " names lanes 0x%08x, which wait at " SITE_FMT " instead",
			    t->warp, t->lane, SITE_ARGS(at), barred, SITE_ARGS(&b->bar_at));
	if (w->arrived == 0) {
		w->cur_mask = mask;
		w->cur_at = *at;
		w->cur_first = t->lane;
	} else if (w->cur_mask != mask) {
		rule_broken(b, tc, "warp %u: lanes meet in one collective with different masks (lane %u: 0x%08x at " SITE_FMT
				   ", lane %u: 0x%08x at " SITE_FMT ")",
			    t->warp, w->cur_first, w->cur_mask, SITE_ARGS(&w->cur_at), t->lane, mask, SITE_ARGS(at));
	} else if (!same_site(&w->cur_at, at)) {
		rule_broken(b, tc, "warp %u: lanes meet at different collectives: lane %u at " SITE_FMT ", lane %u at " SITE_FMT
				   " (mask 0x%08x)",
			    t->warp, w->cur_first, SITE_ARGS(&w->cur_at), t->lane, SITE_ARGS(at), mask);
	}
	w->vals[t->lane] = mine;
	w->arrived |= bit;
	uint32_t my = gen_now(&w->gen);
	if (w->arrived == mask) {
		uint32_t others = (uint32_t)__builtin_popcount(mask) - 1;
		memcpy(w->snap, w->vals, sizeof(w->snap));
		memcpy(out, w->snap, sizeof(w->snap));
		__atomic_store_n(&w->pending, others, __ATOMIC_RELEASE);
		w->arrived = 0;
		w->cur_mask = 0;
		b->blocked -= others;
		__atomic_store_n(&w->gen, my + 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&b->mu);
		futex_wake_all(&w->gen);
		stress_point(tc);
		return;
	}
	b->blocked++;
	int dead = deadlocked(b);
	uint32_t at_barrier = b->arrived;
	pthread_mutex_unlock(&b->mu);
	if (dead)
		launch_fault(b->l, "deadlock: all %u live threads of block %u wait (%u at __syncthreads, the rest in warp "
				   "collectives)",
			     b->live, (unsigned)(b - b->l->blocks), at_barrier);
	while (__atomic_load_n(&w->gen, __ATOMIC_ACQUIRE) == my && !faulted(b->l))
		futex_wait_u32(&w->gen, my);
	if (__atomic_load_n(&w->gen, __ATOMIC_ACQUIRE) == my)
		leave_kernel();
	memcpy(out, w->snap, sizeof(w->snap));
	__atomic_fetch_sub(&w->pending, 1, __ATOMIC_ACQ_REL);
	stress_point(tc);
}

static void op_poll(struct gi_emu_thread *t)
{
	struct emu_tctx *tc = tctx(t);
	if (faulted(tc->b->l))
		leave_kernel();
	stress_point(tc);
}

static void op_nanosleep(struct gi_emu_thread *t, uint32_t ns)
{
	struct timespec ts = { 0, (long)(ns > 1000000u ? 1000000u : ns) };
	nanosleep(&ts, NULL);
	op_poll(t);
}

static uint64_t op_globaltimer(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + EMU_GLOBALTIMER_OFFSET;
}

static void __attribute__((noreturn)) op_trap(struct gi_emu_thread *t, const char *why)
{
	struct emu_tctx *tc = tctx(t);
	launch_fault(tc->b->l, "block (%u,%u,%u) thread (%u,%u,%u): %s", t->block_idx.x, t->block_idx.y,
		     t->block_idx.z, t->thread_idx.x, t->thread_idx.y, t->thread_idx.z, why);
	leave_kernel();
}

static const struct gi_emu_ops emu_ops = {
	.syncthreads_count = op_syncthreads_count,
	.warp_collect = op_warp_collect,
	.poll = op_poll,
	.nanosleep = op_nanosleep,
	.globaltimer = op_globaltimer,
	.trap = op_trap,
};

static void thread_returned(struct emu_tctx *tc)
{
	struct emu_block *b = tc->b;
	struct emu_warp *w = &b->warps[tc->t.warp];
	pthread_mutex_lock(&b->mu);
	b->live--;
	b->exited++;
	w->exited |= 1u << tc->t.lane;
	bool barrier = b->arrived > 0, collective = w->arrived != 0 && (w->cur_mask >> tc->t.lane & 1u);
	uint32_t waiting = b->arrived;
	pthread_mutex_unlock(&b->mu);
	if (barrier)
		launch_fault(b->l, "block %u thread %u returned while %u of its threads wait at __syncthreads()",
			     (unsigned)(b - b->l->blocks), tc->t.thread_idx.x, waiting);
	else if (collective)
		launch_fault(b->l, "warp %u lane %u returned while lanes of its warp wait for it in a collective",
			     tc->t.warp, tc->t.lane);
}

/*
 * The pool: OS threads that stay between launches (creating 256 threads per
 * launch would dominate a launch-per-batch executor).  Each runs one CUDA
 * thread of a launch at a time; a launch hands out its threads and waits
 * for all of them to come back.  One pool per stream: a launch's threads
 * are all resident at once, as a persistent kernel's CTAs must be.
 */
struct emu_pool_thread {
	pthread_t th;
	struct emu_pool *pool;
	uint32_t go;                  /* futex: bumped when a task is handed over */
	struct emu_tctx *task;        /* NULL: leave */
};

struct emu_pool {
	uint32_t n;
	struct emu_pool_thread **t; /* each its own allocation: the threads hold pointers to them */
	uint32_t running;             /* tasks not yet finished (futex) */
	struct emu_launch *launch;
};

static void *pool_main(void *arg)
{
	struct emu_pool_thread *pt = arg;
	uint32_t seen = 0;
	sigjmp_buf env;

	for (;;) {
		uint32_t go;
		while ((go = __atomic_load_n(&pt->go, __ATOMIC_ACQUIRE)) == seen)
			syscall(SYS_futex, &pt->go, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		seen = go;
		struct emu_tctx *tc = pt->task;
		if (!tc)
			return NULL;
		struct emu_launch *l = tc->b->l;
		leave_to = &env;
		if (sigsetjmp(env, 0) == 0) {
			l->k->entry(&tc->t, l->pptr);
			thread_returned(tc);
		}
		leave_to = NULL;
		if (__atomic_sub_fetch(&pt->pool->running, 1, __ATOMIC_ACQ_REL) == 0)
			syscall(SYS_futex, &pt->pool->running, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

/* Grow the pool to n threads; 0 or an error. */
static CUresult pool_reserve(struct emu_pool *p, uint32_t n)
{
	if (n <= p->n)
		return CUDA_SUCCESS;
	struct emu_pool_thread **t = realloc(p->t, n * sizeof(*t));
	pthread_attr_t attr;
	if (!t)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->t = t;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, EMU_STACK);
	for (uint32_t i = p->n; i < n; i++) {
		t[i] = calloc(1, sizeof(**t));
		if (t[i])
			t[i]->pool = p;
		if (!t[i] || pthread_create(&t[i]->th, &attr, pool_main, t[i]) != 0) {
			free(t[i]);
			pthread_attr_destroy(&attr);
			p->n = i;
			return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
		}
		pthread_setname_np(t[i]->th, "gi-cuemu-thread");
	}
	pthread_attr_destroy(&attr);
	p->n = n;
	return CUDA_SUCCESS;
}

static void pool_destroy(struct emu_pool *p)
{
	for (uint32_t i = 0; i < p->n; i++) {
		p->t[i]->task = NULL;
		__atomic_fetch_add(&p->t[i]->go, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &p->t[i]->go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		pthread_join(p->t[i]->th, NULL);
		free(p->t[i]);
	}
	free(p->t);
	p->t = NULL;
	p->n = 0;
}

/* Run one launch to its end on the stream's worker thread: 0 or the fault. */
static CUresult run_launch(struct emu_pool *pool, struct emu_launch *l)
{
	uint32_t per_block = l->block.x * l->block.y * l->block.z;
	uint32_t n_threads = l->n_blocks * per_block;

	l->blocks = calloc(l->n_blocks, sizeof(*l->blocks));
	l->threads = calloc(n_threads, sizeof(*l->threads));
	if (!l->blocks || !l->threads)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t i = 0; i < l->n_blocks; i++) {
		struct emu_block *b = &l->blocks[i];
		b->l = l;
		pthread_mutex_init(&b->mu, NULL);
		b->n = b->live = per_block;
		b->n_warps = (per_block + 31) / 32;
		b->warps = calloc(b->n_warps, sizeof(*b->warps));
		b->smem = aligned_alloc(128, ((size_t)l->smem + 127) / 128 * 128 + 128);
		if (!b->warps || !b->smem)
			return CUDA_ERROR_OUT_OF_MEMORY;
		memset(b->smem, EMU_POISON, (size_t)l->smem + 128); /* shared memory starts as garbage too */
		for (uint32_t w = 0; w < b->n_warps; w++) {
			uint32_t lanes = per_block - w * 32 >= 32 ? 32 : per_block - w * 32;
			b->warps[w].valid = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
		}
	}
	CUresult r = pool_reserve(pool, n_threads);
	if (r != CUDA_SUCCESS) {
		emu_complain("cannot create %u OS threads (the emulation runs one per CUDA thread)", n_threads);
		return r;
	}
	__atomic_store_n(&pool->running, n_threads, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < n_threads; i++) {
		struct emu_tctx *tc = &l->threads[i];
		uint32_t bi = i / per_block, ti = i % per_block;
		struct emu_block *b = &l->blocks[bi];
		tc->b = b;
		tc->t.grid_dim = l->grid;
		tc->t.block_dim = l->block;
		tc->t.block_idx = (struct gi_emu_dim3){ bi % l->grid.x, bi / l->grid.x % l->grid.y, bi / l->grid.x / l->grid.y };
		tc->t.thread_idx = (struct gi_emu_dim3){ ti % l->block.x, ti / l->block.x % l->block.y,
							  ti / l->block.x / l->block.y };
		tc->t.lane = ti % 32;
		tc->t.warp = ti / 32;
		tc->t.dyn_smem = b->smem;
		tc->t.ops = &emu_ops;
		tc->t.rt = tc;
		tc->rng = (g.seed * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)i << 17) ^ 0x2545f4914f6cdd1dull;
		pool->t[i]->task = tc;
		__atomic_fetch_add(&pool->t[i]->go, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &pool->t[i]->go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	uint32_t left;
	while ((left = __atomic_load_n(&pool->running, __ATOMIC_ACQUIRE)) != 0)
		syscall(SYS_futex, &pool->running, FUTEX_WAIT_PRIVATE, left, NULL, NULL, 0);
	return faulted(l) ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}

static void free_launch(struct emu_launch *l)
{
	for (uint32_t i = 0; l->blocks && i < l->n_blocks; i++) {
		struct emu_block *b = &l->blocks[i];
		free(b->warps);
		free(b->smem);
		pthread_mutex_destroy(&b->mu);
	}
	free(l->blocks);
	free(l->threads);
	free(l->params);
	free(l);
}

/* ---- streams and events ---------------------------------------------------- */

#define EMU_STREAM_MAGIC 0x53544d45u
#define EMU_EVENT_MAGIC 0x45564d45u

struct emu_event {
	uint32_t magic;
	uint64_t recorded; /* records issued */
	uint64_t done;     /* records the stream has passed */
};

struct emu_op {
	struct emu_launch *launch; /* or an event record: */
	struct emu_event *ev;
	uint64_t ev_seq;
	struct emu_op *next;
};

struct emu_stream {
	uint32_t magic;
	struct emu_ctx *ctx;
	struct emu_pool pool;     /* the OS threads its launches run on */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct emu_op *head, *tail;
	uint32_t queued; /* launches among them */
	int busy;
	int destroyed;
};

static void *stream_main(void *arg)
{
	struct emu_stream *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->destroyed)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head)
			break;
		struct emu_op *op = s->head;
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		s->queued -= op->launch != NULL;
		s->busy = 1;
		pthread_mutex_unlock(&s->mu);
		if (op->launch) {
			/* after a fault the context is dead: queued work never runs */
			if (__atomic_load_n(&s->ctx->sticky, __ATOMIC_ACQUIRE) == CUDA_SUCCESS) {
				CUresult r = run_launch(&s->pool, op->launch);
				if (r != CUDA_SUCCESS) {
					CUresult expect = CUDA_SUCCESS;
					__atomic_compare_exchange_n(&s->ctx->sticky, &expect, r, 0, __ATOMIC_ACQ_REL,
								    __ATOMIC_ACQUIRE);
				}
			}
			free_launch(op->launch);
		} else {
			__atomic_store_n(&op->ev->done, op->ev_seq, __ATOMIC_RELEASE);
		}
		free(op);
		pthread_mutex_lock(&s->mu);
		s->busy = 0;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	pool_destroy(&s->pool);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return NULL;
}

static struct emu_stream *stream_of(CUstream h)
{
	struct emu_stream *s = (struct emu_stream *)(void *)h;
	return s && s->magic == EMU_STREAM_MAGIC ? s : NULL;
}

static CUresult emu_cuStreamCreate(CUstream *out, unsigned int flags)
{
	struct emu_ctx *c;
	ENTER(cuStreamCreate);
	NEED_CTX(&c);
	if (!out || (flags & ~CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	struct emu_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->magic = EMU_STREAM_MAGIC;
	s->ctx = c;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->th, NULL, stream_main, s) != 0) {
		free(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_detach(s->th);
	pthread_setname_np(s->th, "gi-cuemu-stream");
	*out = (CUstream)(void *)s;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuStreamCreate(CUstream *out, unsigned int flags)
{
	return emu_result(C_cuStreamCreate, emu_cuStreamCreate(out, flags));
}

static CUresult emu_cuStreamDestroy(CUstream h)
{
	struct emu_stream *s = stream_of(h);
	ENTER(cuStreamDestroy);
	NEED_INIT();
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	/* as the driver does: returns at once, the stream goes when its work is done */
	pthread_mutex_lock(&s->mu);
	s->magic = 0;
	s->destroyed = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuStreamDestroy(CUstream h)
{
	return emu_result(C_cuStreamDestroy, emu_cuStreamDestroy(h));
}

static CUresult enqueue(struct emu_stream *s, struct emu_op *op)
{
	pthread_mutex_lock(&s->mu);
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	if (op->launch) {
		uint32_t q = ++s->queued, m = __atomic_load_n(&g.queued_max, __ATOMIC_RELAXED);
		while (q > m && !__atomic_compare_exchange_n(&g.queued_max, &m, q, 0, __ATOMIC_RELAXED,
							      __ATOMIC_RELAXED))
			;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return CUDA_SUCCESS;
}

static CUresult emu_cuStreamQuery(CUstream h)
{
	struct emu_stream *s = stream_of(h);
	ENTER(cuStreamQuery);
	NEED_CTX(NULL);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&s->mu);
	int idle = !s->head && !s->busy;
	pthread_mutex_unlock(&s->mu);
	CUresult st = __atomic_load_n(&s->ctx->sticky, __ATOMIC_ACQUIRE);
	return st != CUDA_SUCCESS ? st : idle ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

EMU_EXPORT CUresult cuStreamQuery(CUstream h)
{
	return emu_result(C_cuStreamQuery, emu_cuStreamQuery(h));
}

static CUresult emu_cuStreamSynchronize(CUstream h)
{
	struct emu_stream *s = stream_of(h);
	ENTER(cuStreamSynchronize);
	NEED_CTX(NULL);
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&s->mu);
	while (s->head || s->busy)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return __atomic_load_n(&s->ctx->sticky, __ATOMIC_ACQUIRE);
}

EMU_EXPORT CUresult cuStreamSynchronize(CUstream h)
{
	return emu_result(C_cuStreamSynchronize, emu_cuStreamSynchronize(h));
}

static CUresult emu_cuEventCreate(CUevent *out, unsigned int flags)
{
	ENTER(cuEventCreate);
	NEED_CTX(NULL);
	if (!out || (flags & ~(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)))
		return CUDA_ERROR_INVALID_VALUE;
	struct emu_event *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->magic = EMU_EVENT_MAGIC;
	*out = (CUevent)(void *)e;
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuEventCreate(CUevent *out, unsigned int flags)
{
	return emu_result(C_cuEventCreate, emu_cuEventCreate(out, flags));
}

static struct emu_event *event_of(CUevent h)
{
	struct emu_event *e = (struct emu_event *)(void *)h;
	return e && e->magic == EMU_EVENT_MAGIC ? e : NULL;
}

static CUresult emu_cuEventDestroy(CUevent h)
{
	struct emu_event *e = event_of(h);
	ENTER(cuEventDestroy);
	NEED_INIT();
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	if (__atomic_load_n(&e->done, __ATOMIC_ACQUIRE) != __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE)) {
		/* the driver defers the release; the emulation cannot free what a stream still holds */
		e->magic = 0;
		return CUDA_SUCCESS;
	}
	e->magic = 0;
	free(e);
	return CUDA_SUCCESS;
}

EMU_EXPORT CUresult cuEventDestroy(CUevent h)
{
	return emu_result(C_cuEventDestroy, emu_cuEventDestroy(h));
}

static CUresult emu_cuEventRecord(CUevent h, CUstream sh)
{
	struct emu_event *e = event_of(h);
	struct emu_stream *s = stream_of(sh);
	ENTER(cuEventRecord);
	NEED_CTX(NULL);
	if (!e || !s)
		return CUDA_ERROR_INVALID_HANDLE;
	struct emu_op *op = calloc(1, sizeof(*op));
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->ev = e;
	op->ev_seq = __atomic_add_fetch(&e->recorded, 1, __ATOMIC_ACQ_REL);
	return enqueue(s, op);
}

EMU_EXPORT CUresult cuEventRecord(CUevent h, CUstream sh)
{
	return emu_result(C_cuEventRecord, emu_cuEventRecord(h, sh));
}

static CUresult emu_cuEventQuery(CUevent h)
{
	struct emu_event *e = event_of(h);
	ENTER(cuEventQuery);
	NEED_CTX(NULL);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	return __atomic_load_n(&e->done, __ATOMIC_ACQUIRE) >= __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE)
		       ? CUDA_SUCCESS
		       : CUDA_ERROR_NOT_READY;
}

EMU_EXPORT CUresult cuEventQuery(CUevent h)
{
	return emu_result(C_cuEventQuery, emu_cuEventQuery(h));
}

static CUresult emu_cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
				   unsigned int by, unsigned int bz, unsigned int smem, CUstream sh, void **params,
				   void **extra)
{
	struct emu_func *f = (struct emu_func *)(void *)fn;
	struct emu_stream *s = stream_of(sh);
	struct emu_ctx *c;

	ENTER(cuLaunchKernel);
	NEED_CTX(&c);
	if (!f || f->magic != EMU_FUNC_MAGIC || !s)
		return CUDA_ERROR_INVALID_HANDLE;
	uint64_t per_block = (uint64_t)bx * by * bz, blocks = (uint64_t)gx * gy * gz;
	if (extra || per_block == 0 || blocks == 0 || (f->k->n_params && !params))
		return CUDA_ERROR_INVALID_VALUE;
	if (per_block > (uint64_t)dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK))
		return CUDA_ERROR_INVALID_VALUE;
	if (smem > f->max_dyn_smem) {
		emu_complain("cuLaunchKernel(%s): %u bytes of dynamic shared memory, the function allows %u "
			     "(cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES)",
			     f->k->name, smem, f->max_dyn_smem);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (per_block * blocks > EMU_MAX_THREADS) {
		emu_complain("cuLaunchKernel(%s): %llu threads; the emulation runs at most %u per launch", f->k->name,
			     (unsigned long long)(per_block * blocks), EMU_MAX_THREADS);
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	}
	struct emu_launch *l = calloc(1, sizeof(*l));
	struct emu_op *op = calloc(1, sizeof(*op));
	size_t total = 0;
	for (uint32_t i = 0; i < f->k->n_params; i++)
		total += (f->k->param_size[i] + 15u) & ~15u;
	uint8_t *copy = malloc(total ? total : 1);
	if (!l || !op || !copy) {
		free(l);
		free(op);
		free(copy);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* the driver copies the arguments at launch: the caller may reuse its variables */
	for (uint32_t i = 0, off = 0; i < f->k->n_params; i++) {
		memcpy(copy + off, params[i], f->k->param_size[i]);
		l->pptr[i] = copy + off;
		off += (f->k->param_size[i] + 15u) & ~15u;
	}
	l->k = f->k;
	l->ctx = c;
	l->grid = (struct gi_emu_dim3){ gx, gy, gz };
	l->block = (struct gi_emu_dim3){ bx, by, bz };
	l->smem = smem;
	l->params = copy;
	l->n_blocks = (uint32_t)blocks;
	op->launch = l;
	return enqueue(s, op);
}

EMU_EXPORT CUresult cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
				   unsigned int by, unsigned int bz, unsigned int smem, CUstream sh, void **params,
				   void **extra)
{
	return emu_result(C_cuLaunchKernel, emu_cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, smem, sh, params, extra));
}

EMU_EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].r == r) {
			*s = errors[i].name;
			return CUDA_SUCCESS;
		}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

EMU_EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].r == r) {
			*s = errors[i].text;
			return CUDA_SUCCESS;
		}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}
