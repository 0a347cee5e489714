/*
 * mem.h — memory providers: where packet buffers and rings come from.
 *
 * One interface for every kind of memory the data path can use (DESIGN.md
 * "Memory providers"): allocate an aligned region, free it, say what kind it
 * is and how the executor addresses it.  Everything after allocation — extmem
 * registration, DMA mapping, the extbuf mempool — is the same for every
 * provider (pool.c), so GPU memory takes exactly the path host memory takes.
 *
 * Providers in this build: `host` (hugepage-backed where the system has
 * hugepages, else ordinary pages).  `host_pinned` and `device` belong to the
 * GPU path and answer -ENOTSUP with a message saying so.
 *
 * Main thread only (startup and teardown).
 */
#ifndef GI_MEM_H
#define GI_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gi_mem_kind {
	GI_MEM_HOST = 0,
	GI_MEM_HOST_PINNED,
	GI_MEM_DEVICE,
};

struct gi_mem_region {
	void *va;            /* CPU-visible address (for device memory: the mapping DPDK registers) */
	size_t len;          /* multiple of page_sz */
	size_t page_sz;
	int64_t exec_delta;  /* add to a CPU address to get the executor's address (0 on host) */
	bool hugepages;
	const struct gi_mem_provider *provider;
};

struct gi_mem_provider {
	const char *name;
	enum gi_mem_kind kind;
	/* 0 or -errno; on failure one line in err */
	int (*alloc)(size_t len, size_t align, bool want_hugepages, struct gi_mem_region *out, char *err,
		     size_t errlen);
	void (*free)(struct gi_mem_region *r);
};

/* The provider for `kind`, or NULL with the reason in err. */
const struct gi_mem_provider *gi_mem_provider_for(enum gi_mem_kind kind, char *err, size_t errlen);

const char *gi_mem_kind_name(enum gi_mem_kind k);

#endif /* GI_MEM_H */
