/*
 * pool.h — external-buffer mbuf pools over a memory provider.
 *
 * The one path every provider's memory takes (DESIGN.md):
 *   provider alloc → rte_extmem_register → rte_dev_dma_map for each port
 *   device that needs it → rte_pktmbuf_pool_create_extbuf
 * and the reverse on destroy or on any failure part way.  mbuf headers live
 * in DPDK's heap; the data buffers the NIC writes into live in the
 * provider's memory (GPU memory on the GPU path).
 *
 * Main thread only.
 */
#ifndef GI_POOL_H
#define GI_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "mem.h"

struct rte_device;
struct rte_mempool;

#define GI_POOL_MAX_PORTS 8

struct gi_pool {
	char name[32];
	struct gi_mem_region region;
	bool registered;
	uint32_t n_mapped;
	struct rte_device *mapped[GI_POOL_MAX_PORTS]; /* outlive their ethdev ports */
	struct rte_mempool *mp;
	uint32_t elt_size;
	uint32_t n_mbufs;
};

struct gi_pool_conf {
	const char *name;
	enum gi_mem_kind kind;
	/* serves `kind`: gi_mem_choice_provider(); NULL: gi_mem_provider_for(kind), host only */
	const struct gi_mem_provider *provider;
	bool hugepages;
	uint32_t n_mbufs;
	uint32_t cache;
	uint32_t data_room;     /* bytes per buffer including RTE_PKTMBUF_HEADROOM */
	int socket;
	uint32_t n_ports;       /* DPDK port ids whose devices get a DMA mapping */
	const uint16_t *ports;
};

/* 0 or -errno, one log line naming the pool and the step that failed. */
int gi_pool_create(struct gi_pool *p, const struct gi_pool_conf *conf);
void gi_pool_destroy(struct gi_pool *p);

/* mbufs currently allocated (not in the pool), for leak checks. */
unsigned gi_pool_in_use(const struct gi_pool *p);

#endif /* GI_POOL_H */
