/*
 * doctor.h — `gpuingestd --doctor`: can this box run this config?  Without a
 * config: can it do GPUDirect ingest at all (driver, GPU, peer memory, BAR1,
 * a ConnectX near the GPU)?  Run from main() before anything starts.
 *
 * Reads sysfs, procfs, the installed unit and (on the real root only)
 * the CUDA driver, never touching traffic, and prints one line per check:
 * ok, warn or fail, the finding, and what to do.  Every file is read
 * through one root prefix (GI_DOCTOR_ROOT, default "/"), so tests point it
 * at miniature sysfs/procfs trees of known boxes (tests/doctor/).
 *
 * doctor.c: the checks that read procfs, the driver and the unit;
 * doctor_pci.c: PCI devices (topology, ACS, link, BAR1, NIC).
 */
#ifndef GI_DOCTOR_H
#define GI_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

enum gi_dr_verdict { GI_DR_OK, GI_DR_WARN, GI_DR_FAIL };

/* about 10 checks per NIC (8) plus about 25 for the rest: never dropped for room */
#define GI_DR_MAX_CHECKS 128
#define GI_DR_MAX_NICS 8

struct gi_dr_check {
	char id[24];
	enum gi_dr_verdict verdict;
	char finding[320];
	char fix[320];
};

/* What the config needs from the box.  Without a config, what GPUDirect
 * ingest needs: gpu and peermem on, the first GPU, and as NICs the ConnectX
 * ports nearest it (doctor_pci.c finds them); no pools, lcores or MTU. */
struct gi_dr_needs {
	bool have_config;      /* false: the verdicts are GPUDirect ingest's in general */
	bool gpu;              /* CUDA: backend cuda/gpudev, device or host_pinned pools */
	bool peermem;          /* the NIC DMAs into GPU memory: a device pool */
	bool persistent;       /* executor.mode persistent (a display's watchdog kills it) */
	bool rocev2;
	uint64_t device_pool_bytes;
	uint64_t hugepage_bytes;
	bool no_huge;          /* eal.args has --no-huge */
	bool in_memory;        /* eal.args has --in-memory: no hugetlbfs mount needed */
	char gpu_dev[32];      /* executor.device; "0" without a config */
	uint32_t n_nics;
	char nic[GI_DR_MAX_NICS][32];   /* PCI addresses of the ports */
	uint32_t nic_mtu[GI_DR_MAX_NICS];
	bool nic_isolation[GI_DR_MAX_NICS];
	bool nic_steering[GI_DR_MAX_NICS];
	uint32_t n_lcores;
	uint32_t lcores[GI_MAX_LCORES + 1];
};

struct gi_doctor {
	char root[512];         /* "" for "/" */
	const struct gi_config *cfg;
	struct gi_dr_needs need;
	uint32_t n;
	struct gi_dr_check checks[GI_DR_MAX_CHECKS];
	/* found on the way, for later checks */
	char gpu_bdf[32];       /* the config's GPU (or the first one) */
	int gpu_numa;
	int nic_numa[GI_DR_MAX_NICS];
	bool nic_mlx5[GI_DR_MAX_NICS];
	bool any_vfio;
	bool nvidia_driver;
};

/* Run every check; print them (text or JSON) to out.  Returns 0 without a fail, 1 with one. */
int gi_doctor_run(const struct gi_config *cfg, bool json, FILE *out);

/* ---- shared by doctor.c and doctor_pci.c ---- */
void gi_dr_add(struct gi_doctor *d, const char *id, enum gi_dr_verdict v, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Read a file under the root, trailing newline removed: length, or -errno. */
int gi_dr_read(const struct gi_doctor *d, const char *path, char *buf, size_t len);
/* Raw bytes (PCI config space): count read, or -errno. */
int gi_dr_read_bin(const struct gi_doctor *d, const char *path, uint8_t *buf, size_t len);
bool gi_dr_exists(const struct gi_doctor *d, const char *path);
/* The basename a symlink under the root points to (a driver's name): 0 or -errno. */
int gi_dr_link_name(const struct gi_doctor *d, const char *path, char *buf, size_t len);
/* Whether CPU `cpu` is in a kernel cpu list ("0-3,8,10-11"). */
bool gi_dr_cpulist_has(const char *list, uint32_t cpu);
void gi_dr_human_bytes(uint64_t b, char *buf, size_t len);

void gi_dr_check_pci(struct gi_doctor *d);

#endif /* GI_DOCTOR_H */
