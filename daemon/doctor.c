/*
 * doctor.c — `gpuingestd --doctor` (doctor.h): the framework, what a config
 * needs (or, without one, what GPUDirect ingest needs), and the checks that
 * read procfs, the driver and the unit file.  PCI devices are doctor_pci.c's.
 * Called once from main(), single-threaded.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "doctor.h"
#include "kernels/cuda_drv.h"
#include "kernels/json.h"
#include "pmd_glue/mem.h"

#define DOC_URL "see README.md \"Running on real hardware\""

/* ---- reading under the root ----------------------------------------------------- */

static void full_path(const struct gi_doctor *d, const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s%s", d->root, path);
}

int gi_dr_read_bin(const struct gi_doctor *d, const char *path, uint8_t *buf, size_t len)
{
	char p[2048];
	full_path(d, path, p, sizeof(p));
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len);
	int e = errno;
	close(fd);
	return n < 0 ? -e : (int)n;
}

int gi_dr_read(const struct gi_doctor *d, const char *path, char *buf, size_t len)
{
	int n = gi_dr_read_bin(d, path, (uint8_t *)buf, len - 1);
	if (n < 0)
		return n;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return n;
}

bool gi_dr_exists(const struct gi_doctor *d, const char *path)
{
	char p[2048];
	struct stat sb;
	full_path(d, path, p, sizeof(p));
	return stat(p, &sb) == 0 || lstat(p, &sb) == 0;
}

int gi_dr_link_name(const struct gi_doctor *d, const char *path, char *buf, size_t len)
{
	char p[2048], t[1024];
	full_path(d, path, p, sizeof(p));
	ssize_t n = readlink(p, t, sizeof(t) - 1);
	if (n < 0)
		return -errno;
	t[n] = '\0';
	const char *b = strrchr(t, '/');
	snprintf(buf, len, "%s", b ? b + 1 : t);
	return 0;
}

bool gi_dr_cpulist_has(const char *list, uint32_t cpu)
{
	const char *p = list;
	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;
		if (end == p)
			return false;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (cpu >= a && cpu <= b)
			return true;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return false;
	}
	return false;
}

void gi_dr_human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30))
		snprintf(buf, len, "%.1f GiB", (double)b / (double)(1ull << 30));
	else
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
}

void gi_dr_add(struct gi_doctor *d, const char *id, enum gi_dr_verdict v, const char *fix, const char *fmt, ...)
{
	if (d->n == GI_DR_MAX_CHECKS)
		return;
	struct gi_dr_check *c = &d->checks[d->n++];
	va_list ap;
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->verdict = v;
	snprintf(c->fix, sizeof(c->fix), "%s", fix ? fix : "");
	va_start(ap, fmt);
	vsnprintf(c->finding, sizeof(c->finding), fmt, ap);
	va_end(ap);
}

/* Is a process with this comm running?  (/proc/PID/comm under the root) */
static bool process_running(const struct gi_doctor *d, const char *comm)
{
	char p[2048], buf[64];
	full_path(d, "/proc", p, sizeof(p));
	DIR *dir = opendir(p);
	bool found = false;
	if (!dir)
		return false;
	for (struct dirent *e; !found && (e = readdir(dir));) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char rel[300];
		snprintf(rel, sizeof(rel), "/proc/%s/comm", e->d_name);
		found = gi_dr_read(d, rel, buf, sizeof(buf)) > 0 && strcmp(buf, comm) == 0;
	}
	closedir(dir);
	return found;
}

/* A word of /proc/cmdline: its value after '=' into val ("" for a bare word); false if absent. */
static bool cmdline_word(const char *cmdline, const char *key, char *val, size_t len)
{
	size_t k = strlen(key);
	for (const char *p = cmdline; (p = strstr(p, key)); p += k) {
		if (p != cmdline && p[-1] != ' ')
			continue;
		if (p[k] == '=') {
			size_t n = strcspn(p + k + 1, " ");
			snprintf(val, len, "%.*s", (int)n, p + k + 1);
			return true;
		}
		if (p[k] == ' ' || p[k] == '\0') {
			if (len)
				val[0] = '\0';
			return true;
		}
	}
	return false;
}

/* ---- what the config needs ---------------------------------------------------------- */

static uint64_t pool_buf_bytes(const struct gi_config *cfg, const struct gi_cfg_pool *p)
{
	if (p->buf_size)
		return p->buf_size;
	uint32_t mtu = 1500;
	for (uint32_t i = 0; i < cfg->n_ports; i++)
		for (uint32_t q = 0; q < cfg->ports[i].n_queues; q++)
			if (strcmp(cfg->ports[i].queues[q].mempool, p->name) == 0 && cfg->ports[i].mtu > mtu)
				mtu = cfg->ports[i].mtu;
	return (uint64_t)mtu + 128 + 64; /* headroom and the Ethernet header and CRC, rounded up */
}

static void derive_needs(struct gi_doctor *d)
{
	const struct gi_config *cfg = d->cfg;
	struct gi_dr_needs *n = &d->need;
	memset(n, 0, sizeof(*n));
	if (!cfg) {
		/* "can this box do GPUDirect ingest?": judge it as a config with a device pool
		 * on GPU 0 would be judged; the NICs are found on the box (doctor_pci.c) */
		n->gpu = n->peermem = true;
		snprintf(n->gpu_dev, sizeof(n->gpu_dev), "0");
		return;
	}
	n->have_config = true;
	n->gpu = cfg->executor.backend == GI_BACKEND_CUDA || cfg->executor.backend == GI_BACKEND_GPUDEV;
	n->persistent = cfg->executor.mode == GI_EXEC_PERSISTENT;
	snprintf(n->gpu_dev, sizeof(n->gpu_dev), "%s", cfg->executor.device[0] ? cfg->executor.device : "0");
	for (uint32_t i = 0; i < cfg->n_eal_args; i++) {
		n->no_huge |= strcmp(cfg->eal_args[i], "--no-huge") == 0;
		n->in_memory |= strcmp(cfg->eal_args[i], "--in-memory") == 0;
		if ((strcmp(cfg->eal_args[i], "-m") == 0 || strcmp(cfg->eal_args[i], "--socket-mem") == 0) &&
		    i + 1 < cfg->n_eal_args)
			n->hugepage_bytes += strtoull(cfg->eal_args[i + 1], NULL, 10) << 20;
	}
	for (uint32_t i = 0; i < cfg->n_pools; i++) {
		const struct gi_cfg_pool *p = &cfg->pools[i];
		uint64_t bytes = (uint64_t)p->mbufs * pool_buf_bytes(cfg, p);
		if (p->kind == GI_MEM_DEVICE) {
			n->gpu = n->peermem = true;
			n->device_pool_bytes += bytes;
		} else if (p->kind == GI_MEM_HOST_PINNED) {
			n->gpu = true;
			if (p->hugepages) /* mmap'd from the same hugepage pool, then registered with CUDA */
				n->hugepage_bytes += bytes;
		} else if (p->hugepages) {
			n->hugepage_bytes += bytes;
		}
	}
	for (uint32_t i = 0; i < cfg->n_ports && n->n_nics < GI_DR_MAX_NICS; i++) {
		const struct gi_cfg_port *p = &cfg->ports[i];
		if (!p->is_pci)
			continue;
		snprintf(n->nic[n->n_nics], sizeof(n->nic[0]), "%.*s", (int)strcspn(p->device, ","), p->device);
		n->nic_mtu[n->n_nics] = p->mtu;
		n->nic_isolation[n->n_nics] = p->flow_isolation;
		n->nic_steering[n->n_nics] = p->flow_steering;
		n->n_nics++;
	}
	for (uint32_t i = 0; i < cfg->n_streams; i++)
		n->rocev2 |= cfg->streams[i].format == GI_FORMAT_ROCEV2;
	n->lcores[n->n_lcores++] = cfg->main_lcore;
	for (uint32_t i = 0; i < cfg->n_lcores; i++)
		if (cfg->lcores[i].id != cfg->main_lcore)
			n->lcores[n->n_lcores++] = cfg->lcores[i].id;
}

/* ---- peer memory ---------------------------------------------------------------------- */

static bool module_loaded(const struct gi_doctor *d, const char *name)
{
	char rel[128];
	snprintf(rel, sizeof(rel), "/sys/module/%s", name);
	return gi_dr_exists(d, rel);
}

static bool kallsyms_has(const struct gi_doctor *d, const char *sym)
{
	char p[2048], line[512];
	full_path(d, "/proc/kallsyms", p, sizeof(p));
	FILE *f = fopen(p, "re");
	bool found = false;
	if (!f)
		return false;
	size_t k = strlen(sym);
	while (!found && fgets(line, sizeof(line), f)) {
		char *s = strrchr(line, ' ');
		/* "addr T name [module]": the name is the third field */
		char *name = strchr(line, ' ');
		name = name ? strchr(name + 1, ' ') : NULL;
		(void)s;
		found = name && strncmp(name + 1, sym, k) == 0 && (name[1 + k] == '\n' || name[1 + k] == ' ' ||
								    name[1 + k] == '\t' || name[1 + k] == '\0');
	}
	fclose(f);
	return found;
}

/* rdma-core >= 34 (libibverbs.so.1.12+) has ibv_reg_dmabuf_mr */
static int libibverbs_minor(const struct gi_doctor *d)
{
	static const char *dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
				      "/usr/lib" };
	int best = -1;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char p[2048];
		full_path(d, dirs[i], p, sizeof(p));
		DIR *dir = opendir(p);
		if (!dir)
			continue;
		for (struct dirent *e; (e = readdir(dir));) {
			unsigned a, b;
			if (sscanf(e->d_name, "libibverbs.so.%u.%u", &a, &b) == 2 && a == 1 && (int)b > best)
				best = (int)b;
		}
		closedir(dir);
	}
	return best;
}

static void check_peermem(struct gi_doctor *d)
{
	char rel[64], kver[128] = "?";
	gi_dr_read(d, "/proc/sys/kernel/osrelease", kver, sizeof(kver));
	bool peermem = module_loaded(d, "nvidia_peermem");
	bool api = kallsyms_has(d, "ib_register_peer_memory_client");
	bool ofed = module_loaded(d, "mlx_compat"); /* DOCA-OFED / MLNX_OFED's compat layer */
	unsigned kmaj = 0, kmin = 0;
	sscanf(kver, "%u.%u", &kmaj, &kmin);
	bool dmabuf_kernel = kmaj > 5 || (kmaj == 5 && kmin >= 12);
	int ibv = libibverbs_minor(d);
	snprintf(rel, sizeof(rel), "%s", ofed ? " (DOCA-OFED's ib_core)" : "");

	if (!d->need.peermem) {
		gi_dr_add(d, "peermem", GI_DR_OK, NULL,
			  "not needed: no pool of kind device (peer memory %s, nvidia_peermem %s)",
			  api ? "API present" : "API absent", peermem ? "loaded" : "not loaded");
		return;
	}
	if (api && peermem) {
		gi_dr_add(d, "peermem", GI_DR_OK, NULL,
			  "nvidia_peermem loaded; ib_core exports the peer-memory client API%s: the NIC can DMA "
			  "into cuMemAlloc memory", rel);
	} else if (api) {
		gi_dr_add(d, "peermem", GI_DR_FAIL, "modprobe nvidia-peermem (and list it in /etc/modules-load.d/)",
			  "ib_core exports the peer-memory API%s but nvidia_peermem is not loaded", rel);
	} else {
		gi_dr_add(d, "peermem", GI_DR_FAIL,
			  "install DOCA-OFED's kernel modules (they carry the peer-memory API; then modprobe "
			  "nvidia-peermem) or run a kernel with the peer-memory patches; " DOC_URL,
			  "kernel %s: ib_core has no peer-memory client API (a stock kernel), so nvidia_peermem cannot "
			  "work and the NIC cannot DMA into GPU memory%s",
			  kver, peermem ? " (nvidia_peermem is loaded but has nothing to register with)" : "");
	}
	/* dma-buf: the other way in, which DPDK 22.11's mlx5 does not take */
	gi_dr_add(d, "dmabuf", api && peermem ? GI_DR_OK : GI_DR_WARN,
		  api && peermem ? NULL : "no fix here: DPDK 22.11's mlx5 registers GPU memory through peer memory only",
		  "dma-buf registration %s (kernel %s %s 5.12, rdma-core %s ibv_reg_dmabuf_mr); DPDK 22.11's mlx5 "
		  "does not use it",
		  dmabuf_kernel && ibv >= 12 ? "possible" : "not possible", kver, dmabuf_kernel ? ">=" : "<",
		  ibv < 0 ? "not found, so no" : ibv >= 12 ? "with" : "without");
}

/* ---- GPU: driver, compute mode, MPS ----------------------------------------------------- */

static void check_gpu_driver(struct gi_doctor *d)
{
	char buf[512];
	if (gi_dr_read(d, "/proc/driver/nvidia/version", buf, sizeof(buf)) < 0) {
		if (d->need.gpu)
			gi_dr_add(d, "gpu.driver", GI_DR_FAIL,
				  "install the NVIDIA driver (and nvidia-persistenced), then reboot or modprobe nvidia",
				  "no NVIDIA driver loaded (/proc/driver/nvidia/version missing)%s",
				  d->need.have_config ? "" : ": GPUDirect ingest needs it");
		else
			gi_dr_add(d, "gpu.driver", GI_DR_OK, NULL, "no NVIDIA driver loaded; this config does not need one");
		return;
	}
	d->nvidia_driver = true;
	const char *k = strstr(buf, "Kernel Module");
	char ver[32] = "?";
	if (k) { /* "x86_64 Kernel Module  535.161.07 ...", open modules "Kernel Module for x86_64  550.54.14 ..." */
		int used = 0;
		for (const char *s = k + strlen("Kernel Module"); sscanf(s, " %31s%n", ver, &used) == 1; s += used)
			if (isdigit((unsigned char)ver[0]))
				break;
		if (!isdigit((unsigned char)ver[0]))
			snprintf(ver, sizeof(ver), "?");
	}
	if (!k) {
		const char *v = strstr(buf, "  ");
		if (v)
			sscanf(v, " %31s", ver);
	}
	gi_dr_add(d, "gpu.driver", GI_DR_OK, NULL, "NVIDIA driver %s loaded", ver);

	/* MPS: its server owns the GPU's contexts; CUDA IPC of frame rings is not supported under it */
	if (process_running(d, "nvidia-cuda-mps-server") || process_running(d, "nvidia-cuda-mps-control"))
		gi_dr_add(d, "gpu.mps", d->need.gpu ? GI_DR_WARN : GI_DR_OK,
			  "stop MPS for the daemon's GPU (echo quit | nvidia-cuda-mps-control)",
			  "the MPS daemon is running: CUDA IPC (GPU frame rings) does not work between MPS clients");
	else
		gi_dr_add(d, "gpu.mps", GI_DR_OK, NULL, "MPS is not running");

	/* compute mode and the display watchdog from the driver itself, on the real box only */
	if (d->root[0] || !d->need.gpu)
		return;
	struct gi_cuda_drv drv;
	char err[256];
	if (gi_cuda_drv_open(&drv, d->need.gpu_dev[0] ? d->need.gpu_dev : "0", err, sizeof(err)) < 0) {
		gi_dr_add(d, "gpu.cuda", GI_DR_FAIL,
			  d->need.have_config ? "check the driver and executor.device (nvidia-smi -L)"
					      : "check the driver (nvidia-smi -L)",
			  "CUDA cannot open device %s: %s", d->need.gpu_dev, err);
		return;
	}
#if HAVE_CUDA_DRIVER
	int mode = 0, timeout = 0;
	drv.device_get_attribute(&mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, drv.device);
	drv.device_get_attribute(&timeout, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, drv.device);
	gi_dr_add(d, "gpu.compute", mode == CU_COMPUTEMODE_PROHIBITED ? GI_DR_FAIL : GI_DR_OK,
		  mode == CU_COMPUTEMODE_PROHIBITED ? "nvidia-smi -i GPU -c DEFAULT" : NULL,
		  "%s (%s): compute mode %s", drv.name, drv.pci_bus_id,
		  mode == CU_COMPUTEMODE_DEFAULT ? "default"
		  : mode == CU_COMPUTEMODE_EXCLUSIVE_PROCESS ? "exclusive process (consumers cannot share it; "
								"CUDA IPC consumers need default)"
							      : "prohibited");
	if (timeout)
		gi_dr_add(d, "gpu.watchdog", d->need.persistent ? GI_DR_FAIL : GI_DR_WARN,
			  "executor.mode: launch, or a GPU without a display",
			  "%s has a kernel run-time limit (a display GPU): a persistent kernel would be killed",
			  drv.pci_bus_id);
#endif
	gi_cuda_drv_close(&drv);
}

/* ---- IOMMU, memory, CPU ------------------------------------------------------------------ */

static void check_iommu_cmdline(struct gi_doctor *d, const char *cmdline)
{
	char v[64];
	bool pt = cmdline_word(cmdline, "iommu", v, sizeof(v)) && strcmp(v, "pt") == 0;
	bool off = (cmdline_word(cmdline, "iommu", v, sizeof(v)) && strcmp(v, "off") == 0) ||
		   (cmdline_word(cmdline, "intel_iommu", v, sizeof(v)) && strcmp(v, "off") == 0) ||
		   (cmdline_word(cmdline, "amd_iommu", v, sizeof(v)) && strcmp(v, "off") == 0);
	bool iommu_hw = gi_dr_exists(d, "/sys/class/iommu") && gi_dr_exists(d, "/sys/kernel/iommu_groups/0");
	if (!iommu_hw || off)
		gi_dr_add(d, "iommu", GI_DR_OK, NULL,
			  "IOMMU off%s: DMA addresses are physical, peer-to-peer goes straight through the switch",
			  off ? " (kernel command line)" : " (no IOMMU groups)");
	else if (pt)
		gi_dr_add(d, "iommu", GI_DR_OK, NULL,
			  "IOMMU in passthrough (iommu=pt): the host's devices DMA untranslated, peer-to-peer works");
	else
		gi_dr_add(d, "iommu", d->need.peermem ? GI_DR_WARN : GI_DR_OK,
			  d->need.peermem ? "add iommu=pt to the kernel command line (or keep translation and check "
					    "the groups below)"
					  : NULL,
			  "IOMMU translating by default (no iommu=pt): peer-to-peer between NIC and GPU needs both "
			  "mapped in one domain, and ACS may redirect it to the root complex");
}

static void check_hugepages(struct gi_doctor *d)
{
	char p[2048], buf[128], need_s[32], free_s[32];
	uint64_t total = 0, free_b = 0;
	full_path(d, "/sys/kernel/mm/hugepages", p, sizeof(p));
	DIR *dir = opendir(p);
	for (struct dirent *e; dir && (e = readdir(dir));) {
		unsigned long kb;
		if (sscanf(e->d_name, "hugepages-%lukB", &kb) != 1)
			continue;
		char rel[300];
		snprintf(rel, sizeof(rel), "/sys/kernel/mm/hugepages/%s/nr_hugepages", e->d_name);
		if (gi_dr_read(d, rel, buf, sizeof(buf)) > 0)
			total += strtoull(buf, NULL, 10) * kb * 1024;
		snprintf(rel, sizeof(rel), "/sys/kernel/mm/hugepages/%s/free_hugepages", e->d_name);
		if (gi_dr_read(d, rel, buf, sizeof(buf)) > 0)
			free_b += strtoull(buf, NULL, 10) * kb * 1024;
	}
	if (dir)
		closedir(dir);
	/* line by line: one read() of procfs's mounts returns a page at most, and hosts have many mounts */
	char line[1024];
	full_path(d, "/proc/mounts", p, sizeof(p));
	FILE *mf = fopen(p, "re");
	bool mounted = false;
	while (mf && !mounted && fgets(line, sizeof(line), mf))
		mounted = strstr(line, " hugetlbfs ") != NULL;
	if (mf)
		fclose(mf);
	gi_dr_human_bytes(d->need.hugepage_bytes, need_s, sizeof(need_s));
	gi_dr_human_bytes(free_b, free_s, sizeof(free_s));
	if (d->need.have_config && d->need.no_huge) {
		gi_dr_add(d, "mem.hugepages", GI_DR_OK, NULL, "not used: eal.args has --no-huge (%s free)", free_s);
	} else if (total == 0) {
		gi_dr_add(d, "mem.hugepages", d->need.have_config ? GI_DR_FAIL : GI_DR_WARN,
			  "echo 2048 > /proc/sys/vm/nr_hugepages (and vm.nr_hugepages in /etc/sysctl.d/), or "
			  "--no-huge for a test box",
			  "no hugepages reserved%s", d->need.have_config ? ", and the config's EAL needs them" : "");
	} else if (!mounted && !d->need.in_memory) {
		gi_dr_add(d, "mem.hugepages", GI_DR_FAIL,
			  "mount -t hugetlbfs nodev /dev/hugepages, or --in-memory in eal.args",
			  "%s of hugepages free but no hugetlbfs mounted", free_s);
	} else if (free_b < d->need.hugepage_bytes) {
		gi_dr_add(d, "mem.hugepages", GI_DR_FAIL, "reserve more: /proc/sys/vm/nr_hugepages",
			  "%s of hugepages free, the config's pools and -m need %s", free_s, need_s);
	} else {
		gi_dr_add(d, "mem.hugepages", GI_DR_OK, NULL, "%s of hugepages free%s%s%s", free_s,
			  d->need.have_config ? ", the config needs " : "", d->need.have_config ? need_s : "",
			  mounted ? ", hugetlbfs mounted" : ", --in-memory");
	}
}

static void check_memlock(struct gi_doctor *d)
{
	char buf[4096];
	if (gi_dr_read(d, "/proc/self/limits", buf, sizeof(buf)) < 0)
		return;
	const char *l = strstr(buf, "Max locked memory");
	char soft[32] = "?";
	if (l)
		sscanf(l + strlen("Max locked memory"), " %31s", soft);
	bool unlimited = strcmp(soft, "unlimited") == 0;
	uint64_t v = unlimited ? UINT64_MAX : strtoull(soft, NULL, 10);
	uint64_t need = d->need.hugepage_bytes + d->need.device_pool_bytes;
	bool root = geteuid() == 0 && !d->root[0];
	gi_dr_add(d, "mem.memlock", unlimited || v >= need || root ? GI_DR_OK : GI_DR_WARN,
		  "ulimit -l unlimited here; the unit sets LimitMEMLOCK=infinity and grants CAP_IPC_LOCK",
		  "memlock limit %s%s (this shell; under systemd the unit's LimitMEMLOCK= applies)", soft,
		  unlimited ? "" : " bytes");
}

static void check_cpus(struct gi_doctor *d, const char *cmdline)
{
	char online[256] = "", isolated[256] = "", nohz[256] = "", rcu[256] = "", buf[256];
	gi_dr_read(d, "/sys/devices/system/cpu/online", online, sizeof(online));
	gi_dr_read(d, "/sys/devices/system/cpu/isolated", isolated, sizeof(isolated));
	gi_dr_read(d, "/sys/devices/system/cpu/nohz_full", nohz, sizeof(nohz));
	cmdline_word(cmdline, "rcu_nocbs", rcu, sizeof(rcu));
	if (!d->need.have_config)
		return;
	for (uint32_t i = 0; i < d->need.n_lcores; i++) {
		uint32_t c = d->need.lcores[i];
		char rel[128], id[24];
		bool rx = i > 0; /* the main lcore only runs the control loop */
		snprintf(id, sizeof(id), "cpu.%u", c);
		snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu%u", c);
		if (!gi_dr_exists(d, rel)) {
			gi_dr_add(d, id, GI_DR_FAIL, "use an lcore id that exists (lscpu)", "lcore %u: no such CPU", c);
			continue;
		}
		if (online[0] && !gi_dr_cpulist_has(online, c)) {
			gi_dr_add(d, id, GI_DR_FAIL, "echo 1 > /sys/devices/system/cpu/cpuN/online", "lcore %u is offline", c);
			continue;
		}
		int node = -1;
		for (int n = 0; n < 16 && node < 0; n++) {
			snprintf(rel, sizeof(rel), "/sys/devices/system/node/node%d/cpulist", n);
			if (gi_dr_read(d, rel, buf, sizeof(buf)) > 0 && gi_dr_cpulist_has(buf, c))
				node = n;
		}
		char gov[64] = "";
		snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu%u/cpufreq/scaling_governor", c);
		gi_dr_read(d, rel, gov, sizeof(gov));
		bool remote = false;
		for (uint32_t k = 0; k < d->need.n_nics; k++)
			remote |= rx && node >= 0 && d->nic_numa[k] >= 0 && d->nic_numa[k] != node;
		bool iso = gi_dr_cpulist_has(isolated, c), hz = gi_dr_cpulist_has(nohz, c), nocb = gi_dr_cpulist_has(rcu, c);
		bool slow_gov = gov[0] && strcmp(gov, "performance") != 0;
		enum gi_dr_verdict v = remote ? GI_DR_FAIL : (rx && (!iso || slow_gov)) ? GI_DR_WARN : GI_DR_OK;
		gi_dr_add(d, id, v,
			  remote ? "use lcores on the NIC's NUMA node (lscpu; /sys/bus/pci/devices/NIC/numa_node)"
			  : v == GI_DR_WARN ? "isolcpus=/nohz_full=/rcu_nocbs= for the rx lcores; cpupower frequency-set -g performance"
					    : NULL,
			  "lcore %u%s: online, NUMA node %d%s, %s%s%s, governor %s", c, rx ? " (rx)" : " (main)", node,
			  remote ? " (the NIC is on another node)" : "", iso ? "isolated" : "not isolated",
			  hz ? ", nohz_full" : "", nocb ? ", rcu_nocbs" : "", gov[0] ? gov : "unknown");
	}
	bool irqb = process_running(d, "irqbalance");
	gi_dr_add(d, "cpu.irqbalance", irqb && isolated[0] ? GI_DR_WARN : GI_DR_OK,
		  irqb && isolated[0] ? "IRQBALANCE_BANNED_CPULIST= the isolated CPUs in /etc/default/irqbalance" : NULL,
		  "irqbalance %s", irqb ? "is running (it may move interrupts onto isolated CPUs)" : "is not running");
}

/* ---- the systemd unit --------------------------------------------------------------------- */

/* The last value of KEY in the unit and its drop-ins (empty assignment resets). */
static void unit_values(const struct gi_doctor *d, const char *unit_path, const char *key, char *out, size_t len,
			bool accumulate)
{
	char buf[16384], dropdir[1100], p[2048];
	const char *files[2] = { unit_path, NULL };
	out[0] = '\0';
	snprintf(dropdir, sizeof(dropdir), "/etc/systemd/system/gpuingest.service.d");
	for (int round = 0; round < 2; round++) {
		DIR *dir = NULL;
		struct dirent *e = NULL;
		if (round == 1) {
			full_path(d, dropdir, p, sizeof(p));
			dir = opendir(p);
			if (!dir)
				break;
		}
		for (;;) {
			char rel[1400];
			if (round == 0) {
				if (!files[0])
					break;
				snprintf(rel, sizeof(rel), "%s", files[0]);
				files[0] = NULL;
			} else {
				if (!(e = readdir(dir)))
					break;
				if (!strstr(e->d_name, ".conf"))
					continue;
				snprintf(rel, sizeof(rel), "%s/%s", dropdir, e->d_name);
			}
			if (gi_dr_read(d, rel, buf, sizeof(buf)) < 0)
				continue;
			for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
				size_t k = strlen(key);
				if (strncmp(line, key, k) != 0 || line[k] != '=')
					continue;
				const char *v = line + k + 1;
				if (!*v || !accumulate)
					out[0] = '\0';
				size_t n = strlen(out);
				snprintf(out + n, len - n, "%s%s", n ? " " : "", v);
			}
		}
		if (dir)
			closedir(dir);
	}
}

static void check_service(struct gi_doctor *d)
{
	static const char *units[] = { "/etc/systemd/system/gpuingest.service", "/usr/local/lib/systemd/system/gpuingest.service",
				       "/usr/lib/systemd/system/gpuingest.service", "/lib/systemd/system/gpuingest.service" };
	const char *unit = NULL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && !unit; i++)
		if (gi_dr_exists(d, units[i]))
			unit = units[i];
	if (!unit) {
		gi_dr_add(d, "service", GI_DR_OK, NULL, "gpuingest.service is not installed (run by hand)");
		return;
	}
	char caps[512], devs[1024], missing[512] = "";
	unit_values(d, unit, "CapabilityBoundingSet", caps, sizeof(caps), true);
	unit_values(d, unit, "DeviceAllow", devs, sizeof(devs), true);
	static const char *need_caps[] = { "CAP_IPC_LOCK", "CAP_NET_RAW", "CAP_NET_ADMIN" };
	for (size_t i = 0; i < 3; i++)
		if (caps[0] && !strstr(caps, need_caps[i]))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " %s", need_caps[i]);
	bool mlx5 = false;
	for (uint32_t k = 0; k < d->need.n_nics; k++)
		mlx5 |= d->nic_mlx5[k];
	struct { bool want; const char *allow, *node; } nodes[] = {
		{ mlx5, "char-infiniband_verbs", "/dev/infiniband/uverbs0" },
		{ d->need.gpu, "char-nvidia-frontend", "/dev/nvidiactl" },
		{ d->need.gpu, "char-nvidia-uvm", "/dev/nvidia-uvm" },
		{ d->any_vfio, "/dev/vfio/vfio", "/dev/vfio/vfio" },
	};
	char absent[256] = "";
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		if (!nodes[i].want)
			continue;
		if (!strstr(devs, nodes[i].allow))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " DeviceAllow=%s",
				 nodes[i].allow);
		if (!gi_dr_exists(d, nodes[i].node))
			snprintf(absent + strlen(absent), sizeof(absent) - strlen(absent), " %s", nodes[i].node);
	}
	if (missing[0] || absent[0])
		gi_dr_add(d, "service", GI_DR_FAIL,
			  missing[0] ? "add them in a drop-in: systemctl edit gpuingest.service"
				     : "load the driver that makes them (nvidia, mlx5_ib/ib_uverbs, vfio-pci) before the unit",
			  "%s:%s%s%s%s", unit, missing[0] ? " lacks" : "", missing,
			  absent[0] ? (missing[0] ? "; device nodes missing:" : " device nodes missing:") : "", absent);
	else
		gi_dr_add(d, "service", GI_DR_OK, NULL, "%s grants the capabilities and devices %s needs", unit,
			  d->need.have_config ? "this config" : "GPUDirect ingest");
}

/* ---- output --------------------------------------------------------------------------------- */

static const char *verdict_name(enum gi_dr_verdict v)
{
	return v == GI_DR_OK ? "ok" : v == GI_DR_WARN ? "warn" : "fail";
}

int gi_doctor_run(const struct gi_config *cfg, bool json, FILE *out)
{
	static struct gi_doctor d;
	char cmdline[4096] = "";
	const char *root = getenv("GI_DOCTOR_ROOT");

	memset(&d, 0, sizeof(d));
	if (root && strcmp(root, "/") != 0)
		snprintf(d.root, sizeof(d.root), "%s", root);
	d.cfg = cfg;
	derive_needs(&d);
	gi_dr_read(&d, "/proc/cmdline", cmdline, sizeof(cmdline));

	struct stat sb;
	if (d.root[0] && (stat(d.root, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
		gi_dr_add(&d, "root", GI_DR_FAIL, "point GI_DOCTOR_ROOT at a directory holding sys/ and proc/, or unset it",
			  "GI_DOCTOR_ROOT=%s is not a directory: nothing to check", d.root);
		goto report;
	}
	check_gpu_driver(&d);
	check_peermem(&d);
	gi_dr_check_pci(&d); /* GPU device, BAR1, NICs, topology, ACS, links, IOMMU groups */
	check_iommu_cmdline(&d, cmdline);
	check_hugepages(&d);
	check_memlock(&d);
	check_cpus(&d, cmdline);
	check_service(&d);

report:;
	unsigned counts[3] = { 0, 0, 0 };
	for (uint32_t i = 0; i < d.n; i++)
		counts[d.checks[i].verdict]++;
	if (json) {
		fprintf(out, "{\"root\":");
		gi_json_string(out, d.root[0] ? d.root : "/");
		fprintf(out, ",\"config\":");
		if (cfg)
			gi_json_string(out, cfg->path);
		else
			fputs("null", out);
		fprintf(out, ",\"checks\":[");
		for (uint32_t i = 0; i < d.n; i++) {
			fprintf(out, "%s{\"check\":", i ? "," : "");
			gi_json_string(out, d.checks[i].id);
			fprintf(out, ",\"verdict\":\"%s\",\"finding\":", verdict_name(d.checks[i].verdict));
			gi_json_string(out, d.checks[i].finding);
			fprintf(out, ",\"fix\":");
			gi_json_string(out, d.checks[i].fix);
			fputc('}', out);
		}
		fprintf(out, "],\"ok\":%u,\"warn\":%u,\"fail\":%u}\n", counts[0], counts[1], counts[2]);
	} else {
		for (uint32_t i = 0; i < d.n; i++) {
			const struct gi_dr_check *c = &d.checks[i];
			fprintf(out, "%-4s %-15s %s%s%s\n", verdict_name(c->verdict), c->id, c->finding,
				c->fix[0] && c->verdict != GI_DR_OK ? " -> " : "", c->verdict != GI_DR_OK ? c->fix : "");
		}
		fprintf(out, "%u ok, %u warn, %u fail%s\n", counts[0], counts[1], counts[2],
			cfg ? "" : " (no --config: judged for GPUDirect ingest in general; give the config to check what it needs)");
	}
	return counts[GI_DR_FAIL] ? 1 : 0;
}
