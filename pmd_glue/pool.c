/*
 * pool.c — extbuf mempools over provider memory (see pool.h).
 *
 * IOVAs: in IOVA-as-VA mode (vfio, mlx5, every vdev) a buffer's IOVA is its
 * address.  In PA mode we ask the kernel for each page's physical address;
 * the pool then gets one extmem chunk per page, since a chunk must be
 * IOVA-contiguous.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_memory.h>

#include "log.h"
#include "pool.h"

static void pool_unmap(struct gi_pool *p, rte_iova_t iova)
{
	while (p->n_mapped > 0)
		rte_dev_dma_unmap(p->mapped[--p->n_mapped], p->region.va, iova, p->region.len);
}

/* Map the region for each port's device; vdevs answer ENOTSUP, which is fine. */
static int pool_dma_map(struct gi_pool *p, const struct gi_pool_conf *c, rte_iova_t iova)
{
	for (uint32_t i = 0; i < c->n_ports; i++) {
		struct rte_eth_dev_info info;
		int rc = rte_eth_dev_info_get(c->ports[i], &info);
		if (rc != 0 || !info.device)
			continue;
		bool dup = false;
		for (uint32_t k = 0; k < p->n_mapped; k++)
			dup |= p->mapped[k] == info.device;
		if (dup)
			continue; /* two ports of one device: mapped once */
		if (rte_dev_dma_map(info.device, p->region.va, iova, p->region.len) == 0) {
			p->mapped[p->n_mapped++] = info.device;
			continue;
		}
		if (rte_errno == ENOTSUP)
			continue;
		gi_log(GI_LOG_ERR,
		       "memory pool %s: DMA mapping %zu bytes for device %s failed: %s "
		       "(for GPU memory: run gpuingestd --doctor --config FILE; it checks that ib_core has the "
		       "peer-memory API (DOCA-OFED, not a stock kernel) and nvidia-peermem is loaded, that BAR1 is "
		       "large enough and that the IOMMU is in passthrough)",
		       p->name, p->region.len, rte_dev_name(info.device), rte_strerror(rte_errno));
		return -rte_errno;
	}
	return 0;
}

int gi_pool_create(struct gi_pool *p, const struct gi_pool_conf *c)
{
	char err[256];
	const struct gi_mem_provider *prov = c->provider ? c->provider : gi_mem_provider_for(c->kind, err, sizeof(err));
	struct rte_pktmbuf_extmem *ext = NULL;
	rte_iova_t *iovas = NULL;
	unsigned n_pages, n_ext;
	int rc;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", c->name);
	if (!prov) {
		gi_log(GI_LOG_ERR, "memory pool %s: %s", c->name, err);
		return -ENOTSUP;
	}

	p->elt_size = (c->data_room + RTE_CACHE_LINE_SIZE - 1) & ~(uint32_t)(RTE_CACHE_LINE_SIZE - 1);
	if (p->elt_size > UINT16_MAX) {
		gi_log(GI_LOG_ERR, "memory pool %s: buffer size %u exceeds 65535", c->name, p->elt_size);
		return -EINVAL;
	}
	p->n_mbufs = c->n_mbufs;
	rc = prov->alloc(prov, (size_t)p->elt_size * c->n_mbufs, 64 * 1024, c->hugepages, &p->region, err, sizeof(err));
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "memory pool %s: %s", c->name, err);
		return rc;
	}
	p->region.provider = prov;

	bool va_mode = rte_eal_iova_mode() == RTE_IOVA_VA;
	if (!va_mode && prov->kind == GI_MEM_DEVICE) {
		/* GPU memory has no physical address the kernel could tell us */
		gi_log(GI_LOG_ERR, "memory pool %s: kind device needs IOVA-as-VA mode (EAL --iova-mode=va, "
		       "with the NIC bound to vfio-pci or a bifurcated driver such as mlx5)", c->name);
		rc = -EINVAL;
		goto fail;
	}
	if (!va_mode) {
		/* PA: one extmem chunk per page, and a buffer never straddles two */
		size_t per_page = p->region.page_sz / p->elt_size;
		size_t need = per_page ? (c->n_mbufs + per_page - 1) / per_page * p->region.page_sz : 0;
		if (need > p->region.len) {
			prov->free(&p->region);
			rc = prov->alloc(prov, need, 64 * 1024, c->hugepages, &p->region, err, sizeof(err));
			if (rc < 0) {
				gi_log(GI_LOG_ERR, "memory pool %s: %s", c->name, err);
				return rc;
			}
			p->region.provider = prov;
			per_page = p->region.page_sz / p->elt_size; /* the retry may have fallen back to 4 KiB */
		}
		if (per_page == 0 || p->region.len / p->region.page_sz * per_page < c->n_mbufs) {
			gi_log(GI_LOG_ERR,
			       "memory pool %s: %u-byte buffers do not fit %zu-byte pages in IOVA-PA mode "
			       "(use hugepages: true, or EAL --iova-mode=va)",
			       c->name, p->elt_size, p->region.page_sz);
			rc = -EINVAL;
			goto fail;
		}
	}

	n_pages = (unsigned)(p->region.len / p->region.page_sz);
	iovas = calloc(n_pages, sizeof(*iovas));
	if (!iovas) {
		rc = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < n_pages; i++) {
		void *pg = (uint8_t *)p->region.va + (size_t)i * p->region.page_sz;
		iovas[i] = va_mode ? (rte_iova_t)(uintptr_t)pg : rte_mem_virt2phy(pg);
	}
	if (rte_extmem_register(p->region.va, p->region.len, iovas, n_pages, p->region.page_sz) != 0) {
		gi_log(GI_LOG_ERR, "memory pool %s: rte_extmem_register of %zu bytes failed: %s", c->name,
		       p->region.len, rte_strerror(rte_errno));
		rc = -rte_errno;
		goto fail;
	}
	p->registered = true;

	/* a PA region is not IOVA-contiguous: one mapping cannot describe it */
	rc = va_mode ? pool_dma_map(p, c, iovas[0]) : 0;
	if (rc < 0)
		goto fail;

	/* one chunk in VA mode; one per page when IOVAs are physical */
	n_ext = va_mode ? 1 : n_pages;
	ext = calloc(n_ext, sizeof(*ext));
	if (!ext) {
		rc = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < n_ext; i++) {
		ext[i].buf_ptr = (uint8_t *)p->region.va + (va_mode ? 0 : (size_t)i * p->region.page_sz);
		ext[i].buf_iova = iovas[i];
		ext[i].buf_len = va_mode ? p->region.len : p->region.page_sz;
		ext[i].elt_size = (uint16_t)p->elt_size;
	}
	p->mp = rte_pktmbuf_pool_create_extbuf(c->name, c->n_mbufs, c->cache, 0, (uint16_t)c->data_room,
					       c->socket, ext, n_ext);
	if (!p->mp) {
		gi_log(GI_LOG_ERR, "memory pool %s: rte_pktmbuf_pool_create_extbuf (%u mbufs of %u bytes) failed: %s"
		       " (raise the EAL memory, e.g. -m 1024, or lower mbufs)",
		       c->name, c->n_mbufs, p->elt_size, rte_strerror(rte_errno));
		rc = -rte_errno;
		goto fail;
	}
	/* "host memory", "host_pinned memory (cuda)": the kind, and the provider when it says more */
	gi_log(GI_LOG_INFO, "memory pool %s: %u mbufs x %u bytes in %s memory%s%s%s (%zu bytes, %zu KiB pages)",
	       c->name, c->n_mbufs, p->elt_size, gi_mem_kind_name(prov->kind),
	       strcmp(prov->name, gi_mem_kind_name(prov->kind)) ? " (" : "",
	       strcmp(prov->name, gi_mem_kind_name(prov->kind)) ? prov->name : "",
	       strcmp(prov->name, gi_mem_kind_name(prov->kind)) ? ")" : "", p->region.len, p->region.page_sz >> 10);
	free(ext);
	free(iovas);
	return 0;

fail:
	free(ext);
	free(iovas);
	gi_pool_destroy(p);
	return rc < 0 ? rc : -EINVAL;
}

void gi_pool_destroy(struct gi_pool *p)
{
	if (p->mp) {
		rte_mempool_free(p->mp);
		p->mp = NULL;
	}
	if (p->region.va) {
		rte_iova_t iova = rte_eal_iova_mode() == RTE_IOVA_VA ? (rte_iova_t)(uintptr_t)p->region.va
								      : rte_mem_virt2phy(p->region.va);
		pool_unmap(p, iova);
		if (p->registered)
			rte_extmem_unregister(p->region.va, p->region.len);
		p->registered = false;
		if (p->region.provider)
			p->region.provider->free(&p->region);
	}
	memset(&p->region, 0, sizeof(p->region));
}

unsigned gi_pool_in_use(const struct gi_pool *p)
{
	return p->mp ? rte_mempool_in_use_count(p->mp) : 0;
}
