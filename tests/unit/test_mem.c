/*
 * test_mem.c — memory providers and GPU backend selection.
 *
 * gi_mem_select() is driven through every requested backend × machine
 * (no GPU, CUDA only, gpudev only, both) with fake probes, checking the
 * chosen backend, the providers bound to each kind and the wording of the
 * one-line reasons.  Then the real probe on this machine (which may have no
 * GPU and no NVIDIA driver: it must answer cleanly, never crash), the host
 * provider, shared memory, and the cuda/gpudev providers refusing cleanly
 * without a GPU.
 *
 * GI_TEST_CUDA_STUB=1 (with LD_LIBRARY_PATH pointing at a libcuda.so.1 from
 * the toolkit's lib64/stubs) checks that every entry point resolves and
 * cuInit's failure is reported.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gi_build_config.h"
#include "kernels/cuda_drv.h"
#include "pmd_glue/mem.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* ---- fake machines -------------------------------------------------------- */

enum machine { NO_GPU, CUDA_ONLY, GPUDEV_ONLY, BOTH, N_MACHINES };

static void fake_probe(struct gi_gpu_probe *p, enum machine m)
{
	memset(p, 0, sizeof(*p));
	p->gpudev_id = -1;
	p->cuda_status = -ENOENT;
	snprintf(p->cuda_err, sizeof(p->cuda_err),
		 "libcuda.so.1 not found: the NVIDIA driver is not installed (fake)");
	if (m == GPUDEV_ONLY || m == BOTH) {
		p->gpudev_count = 1;
		p->gpudev_id = 0;
	}
	if (m == CUDA_ONLY || m == BOTH) {
		p->cuda_status = 0;
		p->cuda_err[0] = '\0';
		snprintf(p->cuda_name, sizeof(p->cuda_name), "device 0: NVIDIA H100 PCIe at 0000:41:00.0");
		p->cuda = NULL; /* selection never dereferences it */
	}
}

struct select_case {
	enum gi_backend requested;
	enum machine machine;
	int rc;
	enum gi_backend backend;
	const char *why[3]; /* fragments that must all appear */
};

static const struct select_case select_cases[] = {
	{GI_BACKEND_AUTO, NO_GPU, 0, GI_BACKEND_HOST,
	 {"auto: DPDK gpudev has no GPU (its CUDA driver knows no Hopper/Ada/Blackwell PCI IDs)",
	  "CUDA driver: libcuda.so.1 not found: the NVIDIA driver is not installed", "; using host"}},
	{GI_BACKEND_AUTO, CUDA_ONLY, 0, GI_BACKEND_CUDA,
	 {"auto: DPDK gpudev has no GPU", "CUDA driver: device 0: NVIDIA H100 PCIe at 0000:41:00.0", "; using cuda"}},
	{GI_BACKEND_AUTO, GPUDEV_ONLY, 0, GI_BACKEND_GPUDEV,
	 {"auto: DPDK gpudev has 1 GPU (using gpu 0)", "; using gpudev", NULL}},
	{GI_BACKEND_AUTO, BOTH, 0, GI_BACKEND_GPUDEV, {"auto: DPDK gpudev has 1 GPU", "; using gpudev", NULL}},

	{GI_BACKEND_HOST, NO_GPU, 0, GI_BACKEND_HOST, {"backend: host in the config", NULL, NULL}},
	{GI_BACKEND_HOST, CUDA_ONLY, 0, GI_BACKEND_HOST, {"backend: host in the config", NULL, NULL}},
	{GI_BACKEND_HOST, GPUDEV_ONLY, 0, GI_BACKEND_HOST, {"backend: host in the config", NULL, NULL}},
	{GI_BACKEND_HOST, BOTH, 0, GI_BACKEND_HOST, {"backend: host in the config", NULL, NULL}},

	{GI_BACKEND_CUDA, NO_GPU, -ENODEV, GI_BACKEND_HOST,
	 {"backend: cuda: no usable GPU or NVIDIA driver found (libcuda.so.1 not found",
	  "use backend: host (or auto) to run without a GPU", NULL}},
	{GI_BACKEND_CUDA, CUDA_ONLY, 0, GI_BACKEND_CUDA,
	 {"backend: cuda in the config", "CUDA driver: device 0: NVIDIA H100", NULL}},
	{GI_BACKEND_CUDA, GPUDEV_ONLY, -ENODEV, GI_BACKEND_HOST,
	 {"no usable GPU or NVIDIA driver found", "use backend: host", NULL}},
	{GI_BACKEND_CUDA, BOTH, 0, GI_BACKEND_CUDA, {"backend: cuda in the config", NULL, NULL}},

	{GI_BACKEND_GPUDEV, NO_GPU, -ENODEV, GI_BACKEND_HOST,
	 {"backend: gpudev: DPDK gpudev has no GPU (its CUDA driver knows no Hopper/Ada/Blackwell PCI IDs)",
	  "no GPU or NVIDIA driver found: use backend: host (or auto) to run without a GPU", NULL}},
	{GI_BACKEND_GPUDEV, CUDA_ONLY, -ENODEV, GI_BACKEND_HOST,
	 {"backend: gpudev: DPDK gpudev has no GPU", "the CUDA driver does see a GPU: use backend: cuda (or auto)",
	  NULL}},
	{GI_BACKEND_GPUDEV, GPUDEV_ONLY, 0, GI_BACKEND_GPUDEV,
	 {"backend: gpudev in the config", "DPDK gpudev has 1 GPU", NULL}},
	{GI_BACKEND_GPUDEV, BOTH, 0, GI_BACKEND_GPUDEV, {"backend: gpudev in the config", NULL, NULL}},
};

static const char *machine_name[N_MACHINES] = {"no GPU", "CUDA only", "gpudev only", "both"};

static void test_select_table(void **state)
{
	(void)state;
	/* every backend × machine combination is in the table exactly once */
	assert_int_equal(sizeof(select_cases) / sizeof(select_cases[0]), 4 * N_MACHINES);

	for (size_t i = 0; i < sizeof(select_cases) / sizeof(select_cases[0]); i++) {
		const struct select_case *t = &select_cases[i];
		struct gi_gpu_probe probe;
		struct gi_mem_choice c;

		fake_probe(&probe, t->machine);
		int rc = gi_mem_select(t->requested, &probe, &c);
		print_message("requested %d on %s: rc %d, why: %s\n", (int)t->requested, machine_name[t->machine], rc,
			      c.why);
		assert_int_equal(rc, t->rc);
		/* one line, not cut off */
		assert_null(strchr(c.why, '\n'));
		assert_true(strlen(c.why) < sizeof(c.why) - 1);
		for (int f = 0; f < 3 && t->why[f]; f++)
			if (!strstr(c.why, t->why[f]))
				fail_msg("case %zu: '%s' not in '%s'", i, t->why[f], c.why);
		if (rc < 0)
			continue;
		assert_int_equal(c.backend, t->backend);

		/* kind host is always the host provider */
		assert_string_equal(c.providers[GI_MEM_HOST].name, "host");
		assert_ptr_equal(c.providers[GI_MEM_HOST].alloc, gi_mem_host_provider.alloc);
		const char *gpu = t->backend == GI_BACKEND_CUDA ? "cuda" : t->backend == GI_BACKEND_GPUDEV ? "gpudev" : NULL;
		for (int k = GI_MEM_HOST_PINNED; k <= GI_MEM_DEVICE; k++) {
			if (!gpu) {
				assert_null(c.providers[k].alloc);
				continue;
			}
			assert_non_null(c.providers[k].alloc);
			assert_string_equal(c.providers[k].name, gpu);
			assert_int_equal(c.providers[k].kind, k);
		}
		if (t->backend == GI_BACKEND_GPUDEV)
			assert_non_null(c.providers[GI_MEM_DEVICE].flush); /* rte_gpu_wmb */
		if (t->backend == GI_BACKEND_CUDA) /* fake probe has no driver: nothing to flush with */
			assert_null(c.providers[GI_MEM_DEVICE].flush);
		assert_null(c.providers[GI_MEM_HOST].flush);
		assert_null(c.providers[GI_MEM_HOST_PINNED].flush);
	}
}

static void test_select_unknown_backend(void **state)
{
	struct gi_gpu_probe probe;
	struct gi_mem_choice c;

	(void)state;
	fake_probe(&probe, BOTH);
	assert_int_equal(gi_mem_select((enum gi_backend)42, &probe, &c), -EINVAL);
	assert_non_null(strstr(c.why, "unknown backend 42"));
}

/* Pools of GPU kinds under the host backend fail naming the pool and why. */
static void test_pool_kind_errors(void **state)
{
	struct gi_gpu_probe probe;
	struct gi_mem_choice c;
	char err[768];

	(void)state;
	fake_probe(&probe, NO_GPU);
	assert_int_equal(gi_mem_select(GI_BACKEND_AUTO, &probe, &c), 0);

	assert_null(gi_mem_choice_provider(&c, GI_MEM_DEVICE, "rx0", err, sizeof(err)));
	print_message("%s\n", err);
	assert_non_null(strstr(err, "memory pool rx0: kind device needs a GPU backend (backend resolved to host: "
				    "auto: DPDK gpudev has no GPU"));
	assert_non_null(strstr(err, "using host)"));
	assert_null(gi_mem_choice_provider(&c, GI_MEM_HOST_PINNED, "hdr", err, sizeof(err)));
	assert_non_null(strstr(err, "memory pool hdr: kind host_pinned needs a GPU backend (backend resolved to host: "));
	assert_ptr_equal(gi_mem_choice_provider(&c, GI_MEM_HOST, "rx0", err, sizeof(err)), &c.providers[GI_MEM_HOST]);
	assert_null(gi_mem_choice_provider(&c, (enum gi_mem_kind)7, "rx0", err, sizeof(err)));
	assert_non_null(strstr(err, "memory pool rx0: unknown memory kind 7"));

	/* explicit host */
	assert_int_equal(gi_mem_select(GI_BACKEND_HOST, &probe, &c), 0);
	assert_null(gi_mem_choice_provider(&c, GI_MEM_DEVICE, "rx0", err, sizeof(err)));
	assert_non_null(
		strstr(err, "memory pool rx0: kind device needs a GPU backend (backend resolved to host: backend: host in the config)"));

	/* no choice at all (the daemon before it selects): host only */
	assert_ptr_equal(gi_mem_choice_provider(NULL, GI_MEM_HOST, "rx0", err, sizeof(err)), &gi_mem_host_provider);
	assert_null(gi_mem_choice_provider(NULL, GI_MEM_DEVICE, "rx0", err, sizeof(err)));
	assert_non_null(strstr(err, "needs a GPU backend"));

	/* a GPU backend serves every kind */
	fake_probe(&probe, CUDA_ONLY);
	assert_int_equal(gi_mem_select(GI_BACKEND_AUTO, &probe, &c), 0);
	const struct gi_mem_provider *p = gi_mem_choice_provider(&c, GI_MEM_DEVICE, "rx0", err, sizeof(err));
	assert_non_null(p);
	assert_string_equal(p->name, "cuda");
	assert_int_equal(p->kind, GI_MEM_DEVICE);
}

/* ---- the real machine ----------------------------------------------------- */

static void test_real_probe(void **state)
{
	struct gi_cuda_drv drv;
	struct gi_gpu_probe probe;

	(void)state;
	memset(&drv, 0xa5, sizeof(drv)); /* open must not trust what it is given */
	gi_gpu_probe(&probe, &drv, "0");
	print_message("gpudev: %u, cuda: %d (%s%s)\n", probe.gpudev_count, probe.cuda_status, probe.cuda_err,
		      probe.cuda_name);
	if (probe.cuda_status == 0) {
		/* a GPU machine: the driver opened and stays open until closed */
		assert_non_null(drv.lib);
		assert_ptr_equal(probe.cuda, &drv);
		assert_non_null(strstr(probe.cuda_name, "device 0: "));
		assert_int_equal(gi_cuda_drv_make_current(&drv), 0);
		gi_cuda_drv_close(&drv);
		assert_null(drv.lib);
		return;
	}
	/* no GPU here: a clean answer, one line, and nothing held */
	assert_null(probe.cuda);
	assert_null(drv.lib);
	assert_false(drv.ctx_retained);
	assert_null(strchr(probe.cuda_err, '\n'));
	switch (probe.cuda_status) {
	case -ENOENT:
		assert_non_null(strstr(probe.cuda_err, "libcuda.so.1 not found: the NVIDIA driver is not installed ("));
		break;
	case -ENODEV:
		assert_true(strstr(probe.cuda_err, "no CUDA device") || strstr(probe.cuda_err, "cuInit failed") ||
			    strstr(probe.cuda_err, "toolkit's stub"));
		break;
	case -ENOTSUP:
		assert_false(gi_cuda_drv_built());
		assert_non_null(strstr(probe.cuda_err, "built without CUDA headers"));
		break;
	default:
		fail_msg("unexpected cuda status %d: %s", probe.cuda_status, probe.cuda_err);
	}
	assert_int_equal(gi_cuda_drv_make_current(&drv), gi_cuda_drv_built() ? -ENODEV : -ENOTSUP);
	gi_cuda_drv_close(&drv); /* harmless when closed */
	gi_cuda_drv_close(NULL);

	/* without the EAL, gpudev has no device either way */
	assert_int_equal(probe.gpudev_count, 0);
	assert_int_equal(probe.gpudev_id, -1);
}

/* The whole start-up sequence on a machine without a GPU. */
static void test_setup_without_gpu(void **state)
{
	struct gi_cuda_drv drv;
	struct gi_gpu_probe probe;
	struct gi_mem_choice c;

	(void)state;
	gi_gpu_probe(&probe, &drv, "0");
	gi_cuda_drv_close(&drv);
	if (probe.cuda_status == 0 || probe.gpudev_count > 0)
		skip(); /* this machine has a GPU */

	assert_int_equal(gi_mem_setup(GI_BACKEND_AUTO, "0", &drv, &c), 0);
	assert_int_equal(c.backend, GI_BACKEND_HOST);
	assert_non_null(strstr(c.why, "auto: DPDK gpudev has no GPU"));
	assert_non_null(strstr(c.why, "; using host"));
	assert_null(drv.lib);

	assert_int_equal(gi_mem_setup(GI_BACKEND_CUDA, "0", &drv, &c), -ENODEV);
	assert_non_null(strstr(c.why, "backend: cuda: no usable GPU or NVIDIA driver found"));
	assert_non_null(strstr(c.why, "use backend: host"));
	assert_null(drv.lib);

	assert_int_equal(gi_mem_setup(GI_BACKEND_GPUDEV, "0", &drv, &c), -ENODEV);
	assert_non_null(strstr(c.why, "use backend: host"));

	assert_int_equal(gi_mem_setup(GI_BACKEND_HOST, "0", &drv, &c), 0);
	assert_int_equal(c.backend, GI_BACKEND_HOST);
	assert_null(drv.lib);

	/* a second device index that cannot exist */
	assert_int_equal(gi_mem_setup(GI_BACKEND_CUDA, "7", NULL, &c), -ENODEV);
}

/* Entry points resolve against the toolkit's stub libcuda (opt-in). */
static void test_cuda_stub_library(void **state)
{
	struct gi_cuda_drv drv;
	char err[256];

	(void)state;
	if (!getenv("GI_TEST_CUDA_STUB") || !gi_cuda_drv_built() || GI_CUDA_EMULATION)
		skip();
	int rc = gi_cuda_drv_open(&drv, "0", err, sizeof(err));
	print_message("stub libcuda: %d %s\n", rc, err);
	assert_int_equal(rc, -ENODEV);
	assert_non_null(strstr(err, "libcuda.so.1 is the CUDA toolkit's stub, not the NVIDIA driver's"));
	assert_null(drv.lib);
}

/* ---- host memory ---------------------------------------------------------- */

/*
 * Bytes mapped in this process: what a leaked mmap would show in.  Under
 * ThreadSanitizer its shadow mappings come and go with ours: the count is
 * meaningless there, so it reads as 0 and the comparisons hold trivially
 * (the leak is then ASan's and valgrind's to find).
 */
static size_t mapped_bytes(void)
{
	const char *san = getenv("GI_SANITIZE");
	if (san && strstr(san, "thread"))
		return 0;
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	size_t total = 0;
	char line[512];

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			total += hi - lo;
	fclose(f);
	return total;
}

static void check_region(const struct gi_mem_region *r, size_t len, size_t align)
{
	assert_non_null(r->va);
	assert_true(r->len >= len);
	assert_int_equal(r->len % r->page_sz, 0);
	assert_int_equal((uintptr_t)r->va % align, 0);
	assert_int_equal(r->exec_delta, 0);
	/* zeroed and writable, end to end */
	const uint8_t *b = r->va;
	for (size_t i = 0; i < r->len; i += 4096)
		assert_int_equal(b[i], 0);
	memset(r->va, 0x5a, r->len);
}

static void test_host_provider(void **state)
{
	const struct gi_mem_provider *p = &gi_mem_host_provider;
	struct gi_mem_region r;
	char err[256];

	(void)state;
	print_message("host provider\n");
	size_t before = mapped_bytes();
	assert_string_equal(p->name, "host");
	assert_int_equal(p->kind, GI_MEM_HOST);
	assert_null(p->flush);

	/* 4 KiB pages, 64 KiB aligned as pool.c asks */
	assert_int_equal(p->alloc(p, 3 * MIB + 123, 64 * KIB, false, &r, err, sizeof(err)), 0);
	check_region(&r, 3 * MIB + 123, 64 * KIB);
	assert_false(r.hugepages);
	assert_int_equal(r.page_sz, (size_t)sysconf(_SC_PAGESIZE));
	assert_ptr_equal(r.provider, p);
	gi_mem_region_free(&r);
	assert_null(r.va);
	gi_mem_region_free(&r); /* twice is harmless */

	/* hugepages: 2 MiB pages where the system has them, else a fallback */
	assert_int_equal(p->alloc(p, 5 * MIB, 64 * KIB, true, &r, err, sizeof(err)), 0);
	check_region(&r, 5 * MIB, 64 * KIB);
	if (r.hugepages) {
		assert_int_equal(r.page_sz, 2 * MIB);
		assert_int_equal(r.len % (2 * MIB), 0);
	} else {
		assert_int_equal(r.page_sz, (size_t)sysconf(_SC_PAGESIZE));
	}
	print_message("hugepages asked: got %s pages\n", r.hugepages ? "2 MiB" : "4 KiB (fallback)");
	gi_mem_region_free(&r);

	/* alignment limits */
	assert_int_equal(p->alloc(p, MIB, 2 * MIB, false, &r, err, sizeof(err)), 0);
	check_region(&r, MIB, 2 * MIB);
	gi_mem_region_free(&r);
	assert_int_equal(p->alloc(p, MIB, 4 * MIB, false, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "alignment 4194304 larger than 2 MiB"));
	assert_null(r.va);

	/* the pre-selection lookup */
	assert_ptr_equal(gi_mem_provider_for(GI_MEM_HOST, err, sizeof(err)), p);
	assert_null(gi_mem_provider_for(GI_MEM_DEVICE, err, sizeof(err)));
	assert_non_null(strstr(err, "memory kind 'device' needs a GPU backend"));
	assert_string_equal(gi_mem_kind_name(GI_MEM_HOST_PINNED), "host_pinned");
	assert_int_equal(mapped_bytes(), before); /* every mapping returned */
}

static void test_shared_on_host(void **state)
{
	struct gi_gpu_probe probe;
	struct gi_mem_choice c;
	struct gi_mem_region r;
	char err[256];
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	(void)state;
	fake_probe(&probe, NO_GPU);
	assert_int_equal(gi_mem_select(GI_BACKEND_AUTO, &probe, &c), 0);

	size_t before = mapped_bytes();
	assert_int_equal(gi_mem_alloc_shared(&c, 10000, &r, err, sizeof(err)), 0);
	check_region(&r, 10000, pg);
	assert_false(r.hugepages);
	gi_mem_region_free(&r);
	assert_null(r.va);
	assert_int_equal(mapped_bytes(), before);

	/* borrowed memory: free leaves the owner's mapping alone */
	void *mine = aligned_alloc(pg, 4 * pg);
	assert_int_equal(gi_mem_register_shared(&c, mine, 4 * pg, &r, err, sizeof(err)), 0);
	assert_ptr_equal(r.va, mine);
	assert_true(r.borrowed);
	assert_int_equal(r.exec_delta, 0);
	gi_mem_region_free(&r);
	memset(mine, 1, 4 * pg); /* still ours */
	free(mine);
}

/* ---- GPU providers without a GPU ------------------------------------------ */

static void refuses(const struct gi_mem_provider *p, const char *want)
{
	struct gi_mem_region r;
	char err[256] = "";
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int rc = p->alloc(p, 4 * MIB, 64 * KIB, false, &r, err, sizeof(err));

	print_message("%s %s: %d %s\n", p->name, gi_mem_kind_name(p->kind), rc, err);
	assert_true(rc == -ENODEV || rc == -ENOTSUP);
	assert_null(r.va);
	assert_non_null(strstr(err, p->name));
	assert_non_null(strstr(err, want));
	assert_null(strchr(err, '\n'));
	gi_mem_region_free(&r); /* a failed alloc leaves nothing to free */

	if (p->register_host) {
		void *mine = aligned_alloc(pg, pg);
		rc = p->register_host(p, mine, pg, &r, err, sizeof(err));
		assert_true(rc == -ENODEV || rc == -ENOTSUP);
		assert_null(r.va);
		free(mine);
	}
}

static void test_gpu_providers_refuse(void **state)
{
	struct gi_mem_provider prov[GI_MEM_N_KINDS];
	struct gi_cuda_drv closed;
	struct gi_gpu_probe probe;
	struct gi_mem_choice c;
	struct gi_mem_region r;
	char err[256];

	(void)state;
	memset(&closed, 0, sizeof(closed));
	gi_mem_cuda_bind(prov, NULL);
	refuses(&prov[GI_MEM_DEVICE], "backend: host");
	refuses(&prov[GI_MEM_HOST_PINNED], "backend: host");
	assert_null(prov[GI_MEM_DEVICE].flush);
	gi_mem_cuda_bind(prov, &closed);
	refuses(&prov[GI_MEM_DEVICE], "backend: host");
	refuses(&prov[GI_MEM_HOST_PINNED], "backend: host");
	assert_null(prov[GI_MEM_DEVICE].flush);

	gi_mem_gpudev_bind(prov, 0);
	refuses(&prov[GI_MEM_DEVICE], "gpudev has none");
	refuses(&prov[GI_MEM_HOST_PINNED], "use backend: cuda, or backend: host");
	assert_non_null(prov[GI_MEM_DEVICE].flush); /* no gpudev device 0: -ENODEV, pools refuse first */
	/* a gpudev driver without a write barrier: no flush, and a warning instead of a silent skip */
	assert_null(gi_mem_gpudev_flush_for(0, -ENOTSUP));
	assert_non_null(gi_mem_gpudev_flush_for(0, 0));

	/* shared memory through a GPU choice with no GPU behind it: clean refusal */
	fake_probe(&probe, CUDA_ONLY);
	assert_int_equal(gi_mem_select(GI_BACKEND_CUDA, &probe, &c), 0);
	int rc = gi_mem_alloc_shared(&c, 4096, &r, err, sizeof(err));
	assert_true(rc == -ENODEV || rc == -ENOTSUP);
	assert_null(r.va);
	fake_probe(&probe, GPUDEV_ONLY);
	assert_int_equal(gi_mem_select(GI_BACKEND_GPUDEV, &probe, &c), 0);
	assert_int_equal(gi_mem_alloc_shared(&c, 4096, &r, err, sizeof(err)), -ENODEV);
	assert_null(r.va);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select_table),
		cmocka_unit_test(test_select_unknown_backend),
		cmocka_unit_test(test_pool_kind_errors),
		cmocka_unit_test(test_real_probe),
		cmocka_unit_test(test_setup_without_gpu),
		cmocka_unit_test(test_cuda_stub_library),
		cmocka_unit_test(test_host_provider),
		cmocka_unit_test(test_shared_on_host),
		cmocka_unit_test(test_gpu_providers_refuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
