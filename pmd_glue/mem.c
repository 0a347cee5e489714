/*
 * mem.c — kind names and the host provider (see mem.h); DPDK-free, part of
 * the gi_log library so the config loader can link it.  The GPU providers
 * and backend selection live in mem_providers.c, mem_cuda.c, mem_gpudev.c.
 *
 * host: mmap of anonymous memory.  With hugepages wanted we first try
 * MAP_HUGETLB (2 MiB pages: fewer IOTLB/MR entries for the NIC, no page
 * faults on the data path); without a hugepage pool we fall back to 4 KiB
 * pages, say so once, and lock the region so the NIC's DMA target cannot be
 * swapped out.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "mem.h"

#define GI_HUGEPAGE_2M (2u << 20)

const char *gi_mem_kind_name(enum gi_mem_kind k)
{
	switch (k) {
	case GI_MEM_HOST: return "host";
	case GI_MEM_HOST_PINNED: return "host_pinned";
	case GI_MEM_DEVICE: return "device";
	}
	return "?";
}

int gi_mem_host_map(size_t len, size_t align, bool want_hugepages, struct gi_mem_region *out, char *err,
		    size_t errlen)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *va = MAP_FAILED;

	memset(out, 0, sizeof(*out));
	if (align > GI_HUGEPAGE_2M) {
		snprintf(err, errlen, "host memory: alignment %zu larger than 2 MiB is not supported", align);
		return -EINVAL;
	}
	if (want_hugepages) {
		size_t hlen = (len + GI_HUGEPAGE_2M - 1) & ~((size_t)GI_HUGEPAGE_2M - 1);
		va = mmap(NULL, hlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE,
			  -1, 0);
		if (va != MAP_FAILED) {
			out->len = hlen;
			out->page_sz = GI_HUGEPAGE_2M;
			out->hugepages = true;
		} else {
			gi_log(GI_LOG_NOTICE,
			       "host memory: no 2 MiB hugepages for %zu bytes (%s); using 4 KiB pages "
			       "(reserve some in /proc/sys/vm/nr_hugepages for line rate)",
			       hlen, strerror(errno));
		}
	}
	if (va == MAP_FAILED) {
		size_t plen = (len + pg - 1) & ~(pg - 1);
		if (align > pg)
			plen += align; /* over-allocate, trimmed below */
		va = mmap(NULL, plen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (va == MAP_FAILED) {
			int e = errno;
			snprintf(err, errlen, "host memory: mmap of %zu bytes failed: %s", plen, strerror(e));
			return -e;
		}
		if (align > pg) {
			uintptr_t a = ((uintptr_t)va + align - 1) & ~(uintptr_t)(align - 1);
			size_t head = a - (uintptr_t)va;
			size_t want = (len + pg - 1) & ~(pg - 1);
			if (head)
				munmap(va, head);
			if (plen - head > want)
				munmap((void *)(a + want), plen - head - want);
			va = (void *)a;
			plen = want;
		}
		out->len = plen;
		out->page_sz = pg;
		out->hugepages = false;
		if (mlock(va, plen) != 0)
			gi_log(GI_LOG_NOTICE, "host memory: mlock of %zu bytes failed (%s); raise LimitMEMLOCK", plen,
			       strerror(errno));
	}
	out->va = va;
	out->exec_delta = 0;
	return 0;
}

void gi_mem_host_unmap(struct gi_mem_region *r)
{
	if (r->va)
		munmap(r->va, r->len);
	r->va = NULL;
}

static int host_alloc(const struct gi_mem_provider *p, size_t len, size_t align, bool want_hugepages,
		      struct gi_mem_region *out, char *err, size_t errlen)
{
	int rc = gi_mem_host_map(len, align, want_hugepages, out, err, errlen);
	if (rc == 0)
		out->provider = p;
	return rc;
}

const struct gi_mem_provider gi_mem_host_provider = {
	.name = "host",
	.kind = GI_MEM_HOST,
	.alloc = host_alloc,
	.free = gi_mem_host_unmap,
};

int gi_mem_host_map_registered(const struct gi_mem_provider *p,
			       int (*reg)(const struct gi_mem_provider *, void *, size_t, struct gi_mem_region *, char *,
					  size_t),
			       size_t len, size_t align, bool want_hugepages, struct gi_mem_region *out, char *err,
			       size_t errlen)
{
	struct gi_mem_region host;
	int rc = gi_mem_host_map(len, align, want_hugepages, &host, err, errlen);
	if (rc < 0)
		return rc;
	rc = reg(p, host.va, host.len, out, err, errlen);
	if (rc < 0) {
		gi_mem_host_unmap(&host);
		return rc;
	}
	out->page_sz = host.page_sz;
	out->hugepages = host.hugepages;
	out->borrowed = false; /* ours: the provider's free unregisters and unmaps */
	return 0;
}

void gi_mem_region_free(struct gi_mem_region *r)
{
	if (r->va && r->provider && r->provider->free)
		r->provider->free(r);
	memset(r, 0, sizeof(*r));
}

const struct gi_mem_provider *gi_mem_provider_for(enum gi_mem_kind kind, char *err, size_t errlen)
{
	switch (kind) {
	case GI_MEM_HOST:
		return &gi_mem_host_provider;
	case GI_MEM_HOST_PINNED:
	case GI_MEM_DEVICE:
		snprintf(err, errlen,
			 "memory kind '%s' needs a GPU backend (executor backend cuda or gpudev) and none was "
			 "selected; use kind: host",
			 gi_mem_kind_name(kind));
		return NULL;
	}
	snprintf(err, errlen, "unknown memory kind %d", (int)kind);
	return NULL;
}
