/*
 * doctor_pci.c — `--doctor`'s PCI checks (doctor.h): the GPU and its BAR1,
 * a display's watchdog, each NIC (driver, firmware, link, MTU, RoCE), the
 * PCIe path between NIC and GPU (switch, root port, root complex, socket),
 * ACS on the bridges, link training, MaxPayload/MaxReadReq, IOMMU groups.
 * Everything from /sys/bus/pci/devices and /sys/devices under the root.
 * Without a config the GPU is the first one and the NICs are the ConnectX
 * ports nearest it: the pair GPUDirect ingest would use.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "doctor.h"

#define MAX_DEPTH 12

struct pci_path {
	int n;                       /* components: [0] "pci0000:40" (host bridge), ..., [n-1] the device */
	char c[MAX_DEPTH][32];
};

static bool is_bdf(const char *s)
{
	unsigned a, b, c, f;
	char tail;
	return sscanf(s, "%x:%x:%x.%x%c", &a, &b, &c, &f, &tail) == 4;
}

/* "41:00.0" or "0000:41:00.0" (any case) -> "0000:41:00.0"; false if it is not one */
static bool norm_bdf(const char *s, char *out, size_t len)
{
	unsigned dom = 0, bus, dev, fn;
	char tail;
	if (sscanf(s, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
		dom = 0;
		if (sscanf(s, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3)
			return false;
	}
	snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return true;
}

static int dev_read(const struct gi_doctor *d, const char *bdf, const char *file, char *buf, size_t len)
{
	char rel[600];
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%.64s/%.256s", bdf, file);
	return gi_dr_read(d, rel, buf, len);
}

static int dev_numa(const struct gi_doctor *d, const char *bdf)
{
	char buf[32];
	return dev_read(d, bdf, "numa_node", buf, sizeof(buf)) > 0 ? atoi(buf) : -1;
}

/* The device's place in the PCI hierarchy, from its sysfs link. */
static bool dev_path(const struct gi_doctor *d, const char *bdf, struct pci_path *p)
{
	char rel[256], target[64];
	char full[1024];
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s", bdf);
	snprintf(full, sizeof(full), "%s%s", d->root, rel);
	char link[1024];
	ssize_t n = readlink(full, link, sizeof(link) - 1);
	(void)target;
	if (n < 0)
		return false;
	link[n] = '\0';
	p->n = 0;
	const char *s = strstr(link, "devices/");
	s = s ? s + strlen("devices/") : link;
	while (*s && p->n < MAX_DEPTH) {
		size_t k = strcspn(s, "/");
		if (k < sizeof(p->c[0]) && (strncmp(s, "pci", 3) == 0 || k >= 7)) {
			snprintf(p->c[p->n], sizeof(p->c[0]), "%.*s", (int)k, s);
			if (strncmp(p->c[p->n], "pci", 3) == 0 || is_bdf(p->c[p->n]))
				p->n++;
		}
		s += k;
		if (*s == '/')
			s++;
	}
	return p->n >= 2 && strncmp(p->c[0], "pci", 3) == 0;
}

/* How many leading components two paths share (the device itself never counts):
 * 0 other root complexes, 1 one root complex, 2 one root port, 3+ one switch. */
static int common_depth(const struct pci_path *a, const struct pci_path *b)
{
	int common = 0;
	while (common < a->n - 1 && common < b->n - 1 && strcmp(a->c[common], b->c[common]) == 0)
		common++;
	return common;
}

/* /sys/devices/<components 0..i> */
static void path_dir(const struct pci_path *p, int i, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "/sys/devices");
	for (int k = 0; k <= i && n < len; k++)
		n += (size_t)snprintf(out + n, len - n, "/%s", p->c[k]);
}

/* ---- config space ----------------------------------------------------------------------- */

struct pcie_info {
	bool have_cfg;
	int mps, mrrs;             /* bytes, -1 unknown */
	bool acs, acs_rr, acs_cr;  /* ACS present; P2P request / completion redirect enabled */
};

static uint32_t le32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void read_pcie(const struct gi_doctor *d, const char *dir, struct pcie_info *pi)
{
	uint8_t cfg[4096];
	char rel[512];
	memset(pi, 0, sizeof(*pi));
	pi->mps = pi->mrrs = -1;
	snprintf(rel, sizeof(rel), "%s/config", dir);
	int n = gi_dr_read_bin(d, rel, cfg, sizeof(cfg));
	if (n < 64)
		return;
	pi->have_cfg = true;
	/* the standard list: the PCI Express capability (0x10), Device Control at +8 */
	unsigned ptr = cfg[0x34] & 0xfc;
	for (int hops = 0; ptr >= 0x40 && ptr + 12 <= (unsigned)n && hops < 48; hops++) {
		if (cfg[ptr] == 0x10) {
			unsigned ctl = cfg[ptr + 8] | (unsigned)cfg[ptr + 9] << 8;
			pi->mps = 128 << ((ctl >> 5) & 7);
			pi->mrrs = 128 << ((ctl >> 12) & 7);
			break;
		}
		ptr = cfg[ptr + 1] & 0xfc;
	}
	/* extended capabilities from 0x100 (only root reads past 64 bytes): ACS is 0x000d, control at +6 */
	unsigned off = 0x100;
	for (int hops = 0; off >= 0x100 && off + 8 <= (unsigned)n && hops < 64; hops++) {
		uint32_t h = le32(cfg + off);
		if (h == 0 || h == 0xffffffffu)
			break;
		if ((h & 0xffff) == 0x000d) {
			unsigned ctl = cfg[off + 6] | (unsigned)cfg[off + 7] << 8;
			pi->acs = true;
			pi->acs_rr = ctl & (1u << 2);
			pi->acs_cr = ctl & (1u << 3);
			break;
		}
		off = h >> 20;
	}
}

/* ---- links --------------------------------------------------------------------------------- */

static int gen_of(double gts)
{
	return gts >= 64 ? 6 : gts >= 32 ? 5 : gts >= 16 ? 4 : gts >= 8 ? 3 : gts >= 5 ? 2 : 1;
}

static void check_link(struct gi_doctor *d, const char *what, const char *bdf)
{
	char cs[64], ms[64], cw[16], mw[16];
	if (dev_read(d, bdf, "current_link_speed", cs, sizeof(cs)) <= 0 ||
	    dev_read(d, bdf, "max_link_speed", ms, sizeof(ms)) <= 0 ||
	    dev_read(d, bdf, "current_link_width", cw, sizeof(cw)) <= 0 ||
	    dev_read(d, bdf, "max_link_width", mw, sizeof(mw)) <= 0)
		return;
	int cg = gen_of(atof(cs)), mg = gen_of(atof(ms)), cwn = atoi(cw), mwn = atoi(mw);
	bool low = cg < mg || cwn < mwn;
	char rel[128];
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s", bdf);
	struct pcie_info pi;
	read_pcie(d, rel, &pi);
	char pl[96] = "";
	if (pi.mps > 0)
		snprintf(pl, sizeof(pl), "; MaxPayload %d B, MaxReadReq %d B", pi.mps, pi.mrrs);
	gi_dr_add(d, "pcie.link", low ? GI_DR_WARN : GI_DR_OK,
		  low ? "reseat the card or move it to a slot wired for its width; check the BIOS's link speed setting"
		      : NULL,
		  "%s %s: trained at Gen%d x%d, capable of Gen%d x%d%s%s", what, bdf, cg, cwn, mg, mwn,
		  low ? " (it runs below its capability)" : "", pl);
}

/* ---- the GPU -------------------------------------------------------------------------------- */

/* Devices of one vendor whose class starts with class_a or class_b ("0x0300"), sorted by address. */
static int list_pci(const struct gi_doctor *d, const char *vendor, const char *class_a, const char *class_b,
		    char out[][32], int max)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/sys/bus/pci/devices", d->root);
	DIR *dir = opendir(p);
	int n = 0;
	for (struct dirent *e; dir && (e = readdir(dir)) && n < max;) {
		char v[16], c[16];
		if (!is_bdf(e->d_name) || dev_read(d, e->d_name, "vendor", v, sizeof(v)) <= 0 ||
		    dev_read(d, e->d_name, "class", c, sizeof(c)) <= 0)
			continue;
		if (strcasecmp(v, vendor) == 0 &&
		    (strncmp(c, class_a, strlen(class_a)) == 0 || strncmp(c, class_b, strlen(class_b)) == 0))
			snprintf(out[n++], 32, "%.31s", e->d_name);
	}
	if (dir)
		closedir(dir);
	qsort(out, (size_t)n, 32, (int (*)(const void *, const void *))strcmp);
	return n;
}

/* NVIDIA display (VGA) and 3D controllers */
static int list_gpus(const struct gi_doctor *d, char gpus[][32], int max)
{
	return list_pci(d, "0x10de", "0x0300", "0x0302", gpus, max);
}

static void check_gpu(struct gi_doctor *d)
{
	char gpus[16][32], drv[64] = "", bdf[32] = "";
	int n = list_gpus(d, gpus, 16);
	const char *want = d->need.gpu_dev;
	bool by_address = want[0] && strchr(want, ':');

	if (by_address) {
		norm_bdf(want, bdf, sizeof(bdf));
	} else if (n > 0) {
		int ord = want[0] ? atoi(want) : 0;
		if (ord < n)
			snprintf(bdf, sizeof(bdf), "%.31s", gpus[ord]);
	}
	if (!bdf[0] || dev_read(d, bdf, "vendor", drv, sizeof(drv)) <= 0) {
		if (!d->need.have_config) {
			/* nothing to put BAR1 or the PCIe path to: say so under their names, so that
			 * tooling reading one check by its id sees the box cannot do it */
			gi_dr_add(d, "gpu.device", GI_DR_FAIL,
				  "an NVIDIA data-center or edge GPU (Ampere, Ada or Hopper) on the NIC's PCIe switch",
				  "no NVIDIA GPU on this box (no PCI device 10de: of class VGA or 3D): GPUDirect ingest "
				  "needs one");
			gi_dr_add(d, "gpu.bar1", GI_DR_FAIL, "see gpu.device",
				  "no NVIDIA GPU, so no BAR1 for the NIC to DMA into");
		} else if (d->need.gpu) {
			gi_dr_add(d, "gpu.device", GI_DR_FAIL, "set executor.device to a GPU's PCI address (lspci -d 10de:)",
				  "executor.device %s: no such NVIDIA GPU (%d on this box)", want, n);
		} else
			gi_dr_add(d, "gpu.device", GI_DR_OK, NULL, "%d NVIDIA GPU%s; this config does not use one", n,
				  n == 1 ? "" : "s");
		return;
	}
	snprintf(d->gpu_bdf, sizeof(d->gpu_bdf), "%s", bdf);
	d->gpu_numa = dev_numa(d, bdf);
	char rel[128];
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/driver", bdf);
	drv[0] = '\0';
	gi_dr_link_name(d, rel, drv, sizeof(drv));
	bool ok = strcmp(drv, "nvidia") == 0;
	gi_dr_add(d, "gpu.device", ok || !d->need.gpu ? GI_DR_OK : GI_DR_FAIL,
		  ok ? NULL : "bind it to the nvidia driver (not nouveau or vfio-pci)",
		  "GPU %s%s, NUMA node %d, driver %s%s", bdf,
		  d->need.have_config && !by_address && n > 1
			  ? " (executor.device is an ordinal: taken in PCI order; give the PCI address)"
			  : "",
		  d->gpu_numa, drv[0] ? drv : "none", d->need.have_config ? "" : " (the first GPU; no config)");

	/* BAR1: what the NIC's DMA into GPU memory goes through.  Resource line 1
	 * (64-bit BARs take two lines: BAR0 is line 0, BAR1 line 1). */
	char res[1024];
	uint64_t bar1 = 0;
	if (dev_read(d, bdf, "resource", res, sizeof(res)) > 0) {
		char *line = strchr(res, '\n');
		unsigned long long a, b;
		if (line && sscanf(line + 1, "%llx %llx", &a, &b) == 2 && b > a)
			bar1 = b - a + 1;
	}
	char have[32], need[32];
	gi_dr_human_bytes(bar1, have, sizeof(have));
	gi_dr_human_bytes(d->need.device_pool_bytes, need, sizeof(need));
	if (!bar1)
		gi_dr_add(d, "gpu.bar1", d->need.peermem ? GI_DR_WARN : GI_DR_OK, "nvidia-smi -q | grep -A3 BAR1",
			  "BAR1 size not readable from sysfs");
	else if (!d->need.have_config && bar1 <= (256ull << 20))
		/* no pools to weigh it against: a consumer card's window is enough for small pools only */
		gi_dr_add(d, "gpu.bar1", GI_DR_WARN,
			  "a GPU whose BAR1 maps its whole memory (data-center GPUs; Resizable BAR on in the BIOS)",
			  "BAR1 is %s: GPUDirect ingest's device pools must fit in it, less what the driver maps itself",
			  have);
	else if (d->need.peermem && bar1 < d->need.device_pool_bytes)
		gi_dr_add(d, "gpu.bar1", GI_DR_FAIL,
			  "fewer mbufs in the device pools, or a GPU whose BAR1 maps its whole memory (data-center GPUs; "
			  "Resizable BAR on in the BIOS)",
			  "BAR1 is %s, the config's device pools need %s of it for the NIC's DMA (frame rings in GPU "
			  "memory are written by the GPU itself and need none)", have, need);
	else
		gi_dr_add(d, "gpu.bar1", GI_DR_OK, NULL, "BAR1 is %s%s%s", have,
			  !d->need.have_config ? ": room for GPUDirect ingest's device pools"
			  : d->need.peermem    ? ", the device pools need "
					       : "",
			  d->need.have_config && d->need.peermem ? need : "");

	/* a display attached: the driver's watchdog kills long kernels */
	char cls[16] = "";
	dev_read(d, bdf, "class", cls, sizeof(cls));
	bool display = false;
	char p[1024];
	snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/%s/drm", d->root, bdf);
	DIR *dir = opendir(p);
	for (struct dirent *e; dir && (e = readdir(dir)) && !display;) {
		if (strncmp(e->d_name, "card", 4) != 0)
			continue;
		char p2[1400];
		snprintf(p2, sizeof(p2), "%s/%s", p, e->d_name);
		DIR *cd = opendir(p2);
		for (struct dirent *c; cd && (c = readdir(cd)) && !display;) {
			char st[32];
			snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/drm/%.16s/%.40s/status", bdf, e->d_name,
				 c->d_name);
			display = strchr(c->d_name, '-') && gi_dr_read(d, rel, st, sizeof(st)) > 0 &&
				  strcmp(st, "connected") == 0;
		}
		if (cd)
			closedir(cd);
	}
	if (dir)
		closedir(dir);
	if (display)
		gi_dr_add(d, "gpu.display", d->need.persistent ? GI_DR_FAIL : GI_DR_WARN,
			  "executor.mode: launch (each batch a short kernel), or a GPU with no display attached",
			  "GPU %s drives a connected display: the driver's watchdog (KERNEL_EXEC_TIMEOUT) kills kernels "
			  "that run for seconds, so a persistent kernel dies%s", bdf,
			  d->need.persistent ? " (executor.mode is persistent)" : "");
	else
		gi_dr_add(d, "gpu.display", GI_DR_OK, NULL, "no display attached to %s (%s controller)", bdf,
			  strncmp(cls, "0x0302", 6) == 0 ? "3D" : "VGA");
}

/* ---- NICs ------------------------------------------------------------------------------------ */

static bool first_entry(const struct gi_doctor *d, const char *rel, char *name, size_t len)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s%s", d->root, rel);
	DIR *dir = opendir(p);
	bool found = false;
	for (struct dirent *e; dir && (e = readdir(dir)) && !found;)
		if (e->d_name[0] != '.') {
			snprintf(name, len, "%.63s", e->d_name);
			found = true;
		}
	if (dir)
		closedir(dir);
	return found;
}

static void check_nic(struct gi_doctor *d, uint32_t k)
{
	const char *bdf = d->need.nic[k];
	char rel[256], drv[64] = "", ib[64], net[64], buf[128];
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s", bdf);
	d->nic_numa[k] = -1;
	if (!gi_dr_exists(d, rel)) {
		gi_dr_add(d, "nic.driver", GI_DR_FAIL, "check ports[].device against lspci",
			  "port device %s: no such PCI device", bdf);
		return;
	}
	d->nic_numa[k] = dev_numa(d, bdf);
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/driver", bdf);
	gi_dr_link_name(d, rel, drv, sizeof(drv));
	d->nic_mlx5[k] = strcmp(drv, "mlx5_core") == 0;
	bool vfio = strcmp(drv, "vfio-pci") == 0 || strcmp(drv, "uio_pci_generic") == 0;
	d->any_vfio |= vfio;
	gi_dr_add(d, "nic.driver", d->nic_mlx5[k] || vfio ? GI_DR_OK : GI_DR_FAIL,
		  d->nic_mlx5[k] || vfio ? NULL
					 : "mlx5 NICs stay on mlx5_core (install rdma-core); others: dpdk-devbind.py -b vfio-pci",
		  "NIC %s: driver %s%s, NUMA node %d", bdf, drv[0] ? drv : "none",
		  d->nic_mlx5[k] ? " (mlx5: bifurcated, no vfio)" : "", d->nic_numa[k]);

	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/infiniband", bdf);
	if (first_entry(d, rel, ib, sizeof(ib))) {
		char fw[64] = "?";
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/infiniband/%s/fw_ver", bdf, ib);
		gi_dr_read(d, rel, fw, sizeof(fw));
		gi_dr_add(d, "nic.firmware", GI_DR_OK, NULL, "NIC %s (%s): firmware %s", bdf, ib, fw);
		if (d->need.rocev2) {
			/* GID 0 is the RoCE v1 entry and GID 1 the RoCE v2 one while RoCE is on */
			char types[2][64] = { "", "" };
			for (int g = 0; g < 2; g++) {
				snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/infiniband/%s/ports/1/gid_attrs/types/%d",
					 bdf, ib, g);
				gi_dr_read(d, rel, types[g], sizeof(types[g]));
			}
			bool roce = strstr(types[0], "RoCE") || strstr(types[1], "RoCE");
			bool v2 = strstr(types[0], "v2") || strstr(types[1], "v2");
			gi_dr_add(d, "nic.roce", roce && !d->need.nic_steering[k] ? GI_DR_WARN : GI_DR_OK,
				  roce && !d->need.nic_steering[k]
					  ? "keep ports[].flow_steering on: the streams' rte_flow rules take UDP 4791 before "
					    "the kernel's RoCE stack"
					  : NULL,
				  "NIC %s: RoCE %s%s", bdf, roce ? "enabled" : "disabled",
				  roce ? (v2 ? " (RoCE v2 GIDs)" : " (RoCE v1 GIDs only)")
				       : " (the daemon receives RoCEv2 as plain UDP either way)");
		}
	} else if (d->nic_mlx5[k]) {
		gi_dr_add(d, "nic.firmware", GI_DR_FAIL, "apt-get install rdma-core ibverbs-providers; modprobe mlx5_ib",
			  "NIC %s: no RDMA device (mlx5_ib / rdma-core): the mlx5 PMD cannot open it", bdf);
	}
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/net", bdf);
	if (first_entry(d, rel, net, sizeof(net))) {
		char state[32] = "?", speed[32] = "?", mtu[32] = "0";
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/net/%s/operstate", bdf, net);
		gi_dr_read(d, rel, state, sizeof(state));
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/net/%s/speed", bdf, net);
		gi_dr_read(d, rel, speed, sizeof(speed));
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/net/%s/mtu", bdf, net);
		gi_dr_read(d, rel, mtu, sizeof(mtu));
		bool up = strcmp(state, "up") == 0;
		gi_dr_add(d, "nic.link", up ? GI_DR_OK : GI_DR_WARN, "check the cable and the switch port (ip link)",
			  "NIC %s (%s): link %s, %s Mb/s", bdf, net, state, speed);
		unsigned m = (unsigned)atoi(mtu);
		if (d->need.have_config)
			gi_dr_add(d, "nic.mtu", m >= d->need.nic_mtu[k] ? GI_DR_OK : GI_DR_WARN,
				  "the daemon sets ports[].mtu at start (CAP_NET_ADMIN); the switch and sender must allow "
				  "it too",
				  "NIC %s (%s): MTU %u, the config wants %u", bdf, net, m, d->need.nic_mtu[k]);
		else /* the config's ports[].mtu is set at start; nothing to weigh it against */
			gi_dr_add(d, "nic.mtu", GI_DR_OK, NULL, "NIC %s (%s): MTU %u", bdf, net, m);
	}
	if (d->need.nic_isolation[k])
		gi_dr_add(d, "nic.isolation", d->nic_mlx5[k] ? GI_DR_OK : GI_DR_WARN,
			  d->nic_mlx5[k] ? NULL : "flow isolation is an mlx5 feature here; turn ports[].flow_isolation off",
			  "NIC %s: flow isolation %s", bdf, d->nic_mlx5[k] ? "possible (mlx5)" : "may not be supported by its PMD");
	snprintf(buf, sizeof(buf), "NIC");
	check_link(d, buf, bdf);
}

/* ---- between NIC and GPU ------------------------------------------------------------------------ */

static void check_route(struct gi_doctor *d, uint32_t k)
{
	const char *nic = d->need.nic[k];
	struct pci_path a, b;
	if (!dev_path(d, nic, &a) || !dev_path(d, d->gpu_bdf, &b)) {
		gi_dr_add(d, "pcie.path", GI_DR_WARN, "check /sys/bus/pci/devices links",
			  "NIC %s, GPU %s: cannot place them in the PCI hierarchy", nic, d->gpu_bdf);
		return;
	}
	int common = common_depth(&a, &b);
	int nn = d->nic_numa[k], gn = d->gpu_numa;
	enum gi_dr_verdict v;
	const char *where, *fix = NULL;
	if (common == 0) {
		v = d->need.peermem ? GI_DR_FAIL : GI_DR_WARN;
		where = nn >= 0 && gn >= 0 && nn != gn ? "on different sockets: peer-to-peer crosses the CPU interconnect "
							 "(unsupported or slow for GPUDirect RDMA)"
						       : "under different root complexes: peer-to-peer crosses the CPU";
		fix = "put the NIC and the GPU in slots under one PCIe switch (or at least one root complex)";
	} else if (common == 1) {
		v = d->need.peermem ? GI_DR_WARN : GI_DR_OK;
		where = "under one root complex, different root ports: peer-to-peer goes through the CPU's root complex";
		fix = "slots under one PCIe switch are better";
	} else if (common == 2) {
		v = GI_DR_OK;
		where = "under one root port";
	} else {
		v = GI_DR_OK;
		where = "under one PCIe switch (the best place for peer-to-peer)";
	}
	gi_dr_add(d, "pcie.path", v, fix, "NIC %s and GPU %s are %s (common path: %s%s%s)", nic, d->gpu_bdf, where,
		  common ? a.c[0] : "none", common > 1 ? "/" : "", common > 1 ? a.c[common - 1] : "");

	/* ACS on the bridges between them: P2P redirect sends their traffic up to the root complex */
	char redirect[256] = "";
	int bridges = 0;
	for (int side = 0; side < 2; side++) {
		const struct pci_path *p = side ? &b : &a;
		for (int i = common ? common - 1 : 1; i < p->n - 1; i++) {
			if (strncmp(p->c[i], "pci", 3) == 0 || (side && i < common))
				continue;
			char dir[512];
			struct pcie_info pi;
			path_dir(p, i, dir, sizeof(dir));
			read_pcie(d, dir, &pi);
			bridges++;
			if (pi.acs && (pi.acs_rr || pi.acs_cr) && strlen(redirect) + 20 < sizeof(redirect))
				snprintf(redirect + strlen(redirect), sizeof(redirect) - strlen(redirect), " %s", p->c[i]);
		}
	}
	if (redirect[0])
		gi_dr_add(d, "pcie.acs", d->need.peermem ? GI_DR_WARN : GI_DR_OK,
			  "disable ACS P2P redirect on those ports (setpci ECAP_ACS+6.w=0 at boot) or keep the IOMMU in "
			  "passthrough with ATS",
			  "ACS redirects peer-to-peer requests to the root complex on:%s", redirect);
	else
		gi_dr_add(d, "pcie.acs", GI_DR_OK, NULL, "no ACS P2P redirect on the %d bridge%s between NIC and GPU", bridges,
			  bridges == 1 ? "" : "s");

	/* IOMMU groups */
	char rel[256], ga[32] = "", gb[32] = "", ta[32] = "", tb[32] = "";
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/iommu_group", nic);
	gi_dr_link_name(d, rel, ga, sizeof(ga));
	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/iommu_group", d->gpu_bdf);
	gi_dr_link_name(d, rel, gb, sizeof(gb));
	if (ga[0] && gb[0]) {
		snprintf(rel, sizeof(rel), "/sys/kernel/iommu_groups/%s/type", ga);
		gi_dr_read(d, rel, ta, sizeof(ta));
		snprintf(rel, sizeof(rel), "/sys/kernel/iommu_groups/%s/type", gb);
		gi_dr_read(d, rel, tb, sizeof(tb));
		bool ident = strcmp(ta, "identity") == 0 && strcmp(tb, "identity") == 0;
		gi_dr_add(d, "iommu.groups", ident || !d->need.peermem ? GI_DR_OK : GI_DR_WARN,
			  ident ? NULL : "iommu=pt, or both devices' groups in identity domains (echo identity > .../type)",
			  "NIC in IOMMU group %s (%s), GPU in group %s (%s)%s", ga, ta[0] ? ta : "?", gb, tb[0] ? tb : "?",
			  ident ? ": both untranslated" : ": DMA is translated, peer-to-peer needs the mappings");
	}
}

/* Without a config: the ports GPUDirect ingest would use.  DPDK 22.11 gets
 * GPU memory to a NIC only through mlx5's peer-memory registration, so they
 * are ConnectX functions (Mellanox network controllers), and of those the
 * ones nearest the GPU: a box is judged by its best pair, not by a port
 * nobody would point at this GPU.  No GPU: all of them (up to GI_DR_MAX_NICS). */
static void find_gpudirect_nics(struct gi_doctor *d)
{
	char nics[64][32];
	int depth[64], best = 0;
	int n = list_pci(d, "0x15b3", "0x0200", "0x0207", nics, 64);
	struct pci_path g, p;
	bool placed = d->gpu_bdf[0] && dev_path(d, d->gpu_bdf, &g);
	for (int i = 0; i < n; i++) {
		depth[i] = placed && dev_path(d, nics[i], &p) ? common_depth(&p, &g) : 0;
		best = depth[i] > best ? depth[i] : best;
	}
	for (int i = 0; i < n && d->need.n_nics < GI_DR_MAX_NICS; i++)
		if (depth[i] == best)
			snprintf(d->need.nic[d->need.n_nics++], sizeof(d->need.nic[0]), "%.31s", nics[i]);
}

void gi_dr_check_pci(struct gi_doctor *d)
{
	d->gpu_numa = -1;
	for (uint32_t k = 0; k < d->need.n_nics; k++) { /* the config takes 41:00.0 and upper case too */
		char bdf[32];
		if (norm_bdf(d->need.nic[k], bdf, sizeof(bdf)))
			memcpy(d->need.nic[k], bdf, sizeof(bdf));
	}
	if (d->need.gpu || !d->need.have_config)
		check_gpu(d);
	if (!d->need.have_config)
		find_gpudirect_nics(d);
	for (uint32_t k = 0; k < d->need.n_nics; k++)
		check_nic(d, k);
	if (d->gpu_bdf[0]) {
		check_link(d, "GPU", d->gpu_bdf);
		if (d->need.peermem)
			for (uint32_t k = 0; k < d->need.n_nics; k++)
				check_route(d, k);
	}
	/* a config names its ports and its GPU and is judged on those; GPUDirect in general needs a pair */
	if (d->need.have_config || (d->gpu_bdf[0] && d->need.n_nics))
		return;
	if (!d->need.n_nics)
		gi_dr_add(d, "pcie.path", GI_DR_FAIL,
			  "a ConnectX-5 or newer on mlx5_core, under the GPU's PCIe switch (or at least its root complex)",
			  "no ConnectX (mlx5) NIC on this box%s: GPUDirect ingest needs one near the GPU (DPDK 22.11 "
			  "registers GPU memory with a NIC only through mlx5's peer memory)",
			  d->gpu_bdf[0] ? "" : " (and no NVIDIA GPU)");
	else
		gi_dr_add(d, "pcie.path", GI_DR_FAIL, "see gpu.device",
			  "ConnectX NIC %s%s: no NVIDIA GPU to pair with, so GPUDirect ingest has no peer-to-peer path",
			  d->need.nic[0], d->need.n_nics > 1 ? " and the other ports" : "");
}
