/*
 * main.c — gpuingestd's lifecycle, top to bottom.
 *
 *   parse arguments → load and check the config (nothing touched yet)
 *   → EAL init (lcores and devices derived from the config)
 *   → memory pools (provider → extmem → DMA map → extbuf mempool)
 *   → ports and rx queues → frame rings (shared memory) → batch rings
 *   → executor → rx lcores → stats server → READY
 *   → wait for a signal or --duration
 *   → stop rx, drain batches through the executor, publish open frames,
 *     print final counters → tear down in reverse.
 *
 * Startup failure and shutdown share one teardown path that releases
 * whatever was built.  Signal handlers only set flags.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "gi_build_config.h"
#if HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon.h"
#include "notify.h"
#include "pmd_glue/tsan.h"
#include "reload.h"
#include "telemetry.h"
#include "kernels/frame.h"
#include "kernels/frame_wake.h"
#include "doctor.h"
#include "lifecycle.h"

enum {
	EXIT_CONFIG = 1, /* invalid configuration */
	EXIT_USAGE = 2,
	EXIT_START = 3,  /* a resource could not be set up */
	EXIT_DRAIN = 4,  /* stopped, but the executor did not drain in shutdown_timeout_ms */
	EXIT_FORCED = 5, /* a second SIGTERM/SIGINT: ended at once, without draining */
};

/*
 * Written by the handler, read by the main loop.  The handler may run on
 * any thread of the process (rx lcores, the executor, libmicrohttpd), not
 * only the one that reads them: lock-free atomics, which are
 * async-signal-safe, rather than volatile sig_atomic_t.
 */
static int sig_quit; /* SIGTERM/SIGINT count: 1 drains and stops, 2 exits at once */
static int sig_last;
static int sig_reload;
GI_STATIC_ASSERT(__atomic_always_lock_free(sizeof(int), 0), "signal flags must be lock-free atomics");
GI_STATIC_ASSERT(GI_MAX_QUEUES_PER_LCORE == GI_RX_MAX_QUEUES_PER_LCORE, "the config check's per-lcore limit is the rx loop's");

static void on_signal(int sig)
{
	if (sig == SIGHUP) {
		__atomic_store_n(&sig_reload, 1, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&sig_last, sig, __ATOMIC_RELAXED);
		/* the handler blocks the other signals: no lost count */
		int q = __atomic_load_n(&sig_quit, __ATOMIC_RELAXED);
		if (q < 2)
			__atomic_store_n(&sig_quit, q + 1, __ATOMIC_RELEASE);
	}
}

static int quit_signals(void)
{
	return __atomic_load_n(&sig_quit, __ATOMIC_ACQUIRE);
}

/* sd_notify: daemon/notify.c (a no-op without NOTIFY_SOCKET) */
static void notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notify(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gi_notify_v(fmt, ap);
	va_end(ap);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuingestd [--config FILE] [--check-config] [--doctor [--json]] [--duration SEC] [--version]\n"
		"                  [--help]\n"
		"\n"
		"Receive sensor packets through DPDK into external-buffer mbufs, batch them to the\n"
		"executor, assemble frames and serve Prometheus metrics.\n"
		"\n"
		"  -c, --config FILE   configuration (default %s)\n"
		"  -n, --check-config  validate the configuration, print every error with its line, exit\n"
		"      --doctor        check whether this box can run the config (or, without --config, GPUDirect\n"
		"                      ingest at all): one line per check, ok/warn/fail with what to do; exit 0\n"
		"                      without a fail, 1 with one.  Reads sysfs/procfs under $GI_DOCTOR_ROOT (/)\n"
		"      --json          with --doctor: the same as one JSON object\n"
		"  -d, --duration SEC  stop by itself after SEC seconds (0: run until SIGINT/SIGTERM)\n"
		"  -V, --version       print version and exit\n"
		"  -h, --help          this text\n"
		"\n"
		"Exit status: 0 ok, 1 invalid configuration, 2 usage, 3 start-up failure, 4 stopped but the\n"
		"executor did not drain within executor.shutdown_timeout_ms, 5 a second SIGTERM/SIGINT ended it\n"
		"without draining.\n",
		GI_DEFAULT_CONFIG);
}

/* ---- EAL -------------------------------------------------------------- */

/*
 * Why EAL initialisation may have failed when rte_errno does not say (DPDK
 * 22.11 sets none when another process holds the file prefix): that
 * prefix's config file locked by a live process.  Its pid, or 0.
 */
static pid_t eal_prefix_holder(const struct gi_config *c, char *prefix, size_t len)
{
	snprintf(prefix, len, "rte"); /* EAL's default */
	for (uint32_t i = 0; i < c->n_eal_args; i++) {
		const char *a = c->eal_args[i];
		if (strcmp(a, "--file-prefix") == 0 && i + 1 < c->n_eal_args)
			snprintf(prefix, len, "%s", c->eal_args[i + 1]);
		else if (strncmp(a, "--file-prefix=", 14) == 0)
			snprintf(prefix, len, "%s", a + 14);
	}
	const char *run = getuid() == 0 ? "/var/run" : getenv("XDG_RUNTIME_DIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/dpdk/%s/config", run ? run : "/tmp", prefix);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	pid_t pid = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? fl.l_pid : 0;
	close(fd);
	return pid;
}

static int eal_start(struct gi_daemon *d, const char *prog)
{
	const struct gi_config *c = &d->cfg;
	char *argv[GI_MAX_EAL_ARGS + 2 * GI_MAX_PORTS + 8];
	char lcores[512], main_lcore[16], devs[GI_MAX_PORTS][2 * GI_DEVICE_MAX + 2];
	int argc = 0;
	size_t off;
	uint64_t seen[GI_MAX_LCORES / 64] = { 0 };

	argv[argc++] = (char *)prog;
	for (uint32_t i = 0; i < c->n_eal_args; i++)
		argv[argc++] = c->eal_args[i];

	off = (size_t)snprintf(lcores, sizeof(lcores), "%u", c->main_lcore);
	seen[c->main_lcore / 64] |= 1ull << (c->main_lcore % 64);
	for (uint32_t p = 0; p < c->n_ports; p++)
		for (uint32_t q = 0; q < c->ports[p].n_queues; q++) {
			uint32_t l = c->ports[p].queues[q].lcore;
			if (seen[l / 64] & (1ull << (l % 64)))
				continue;
			seen[l / 64] |= 1ull << (l % 64);
			off += (size_t)snprintf(lcores + off, sizeof(lcores) - off, ",%u", l);
		}
	snprintf(main_lcore, sizeof(main_lcore), "%u", c->main_lcore);
	argv[argc++] = "--lcores";
	argv[argc++] = lcores;
	argv[argc++] = "--main-lcore";
	argv[argc++] = main_lcore;
	for (uint32_t p = 0; p < c->n_ports; p++) {
		const struct gi_cfg_port *cp = &c->ports[p];
		snprintf(devs[p], sizeof(devs[p]), "%s%s%s", cp->device, cp->devargs[0] ? "," : "", cp->devargs);
		argv[argc++] = cp->is_pci ? "-a" : "--vdev";
		argv[argc++] = devs[p];
	}
	argv[argc] = NULL;

	notify("STATUS=initialising DPDK EAL");
	/* rte_eal_init permutes argv; it only holds pointers to our buffers */
	if (rte_eal_init(argc, argv) < 0) {
		int e = rte_errno;
		char prefix[128];
		pid_t holder = eal_prefix_holder(c, prefix, sizeof(prefix));
		if (holder > 0)
			gi_log(GI_LOG_ERR,
			       "DPDK EAL initialisation failed: its file prefix '%s' is in use by another DPDK process "
			       "(pid %d, maybe another gpuingestd): give each daemon its own eal.args --file-prefix",
			       prefix, (int)holder);
		else
			gi_log(GI_LOG_ERR,
			       "DPDK EAL initialisation failed: %s (check eal.args, hugepages or --no-huge, and that "
			       "lcores %s exist)",
			       e ? rte_strerror(e) : "EAL gave no reason (its log above has it)", lcores);
		return -EINVAL;
	}
	d->eal_up = true;
	return 0;
}

/* ---- batch rings, executor, rx lcores --------------------------------- */

static int rings_start(struct gi_daemon *d)
{
	const struct gi_config *c = &d->cfg;
	uint32_t n = 0;

	for (uint32_t p = 0; p < c->n_ports; p++)
		n += c->ports[p].n_queues;
	d->rxq = aligned_alloc(64, GI_ALIGN_UP(n * sizeof(*d->rxq), 64));
	d->rings = calloc(n, sizeof(*d->rings));
	d->ring_mem = calloc(n, sizeof(*d->ring_mem));
	d->rxq_port_name = calloc(n, sizeof(*d->rxq_port_name));
	d->rxq_lcore = calloc(n, sizeof(*d->rxq_lcore));
	if (!d->rxq || !d->rings || !d->ring_mem || !d->rxq_port_name || !d->rxq_lcore) {
		gi_log(GI_LOG_ERR, "batch rings: out of memory");
		return -ENOMEM;
	}
	memset(d->rxq, 0, n * sizeof(*d->rxq));
	for (uint32_t p = 0; p < c->n_ports; p++)
		for (uint32_t q = 0; q < c->ports[p].n_queues; q++) {
			const struct gi_cfg_queue *cq = &c->ports[p].queues[q];
			/* the arrays its slots carry (kernels/ring.h) */
			uint32_t split = (cq->split.enabled ? GI_SLOT_SPLIT : 0) |
					 (d->ports[p].nic_ts != GI_NIC_TS_NONE ? GI_SLOT_NIC_TS : 0);
			uint64_t bytes = gi_ring_bytes(cq->ring_slots, cq->batch.max_packets, split);
			uint32_t k = d->n_rxq;
			char err[512];
			/* memory both the rx lcore and the executor see: pinned and mapped on GPU backends */
			int rc = gi_mem_alloc_shared(&d->mem, GI_ALIGN_UP(bytes, 4096), &d->ring_mem[k], err, sizeof(err));
			if (rc < 0) {
				gi_log(GI_LOG_ERR, "port %s queue %u: batch ring of %llu bytes: %s", c->ports[p].name, q,
				       (unsigned long long)bytes, err);
				return rc;
			}
			void *mem = d->ring_mem[k].va;
			d->rings[k] = mem;
			d->n_rxq++;
			gi_ring_init(mem, cq->ring_slots, cq->batch.max_packets, split);
			/* with split the header segment comes from the header pool, the payload from the queue's pool */
			const struct gi_pool *payload = &d->pools[cq->pool_index];
			int64_t header_delta = (split & GI_SLOT_SPLIT) ? d->pools[cq->split.header_pool_index].region.exec_delta
						     : payload->region.exec_delta;
			rc = gi_rxq_init(&d->rxq[k], d->port_ids[p], (uint16_t)p, (uint16_t)q, mem, cq->batch.timeout_us,
					 header_delta);
			d->rxq[k].exec_delta1 = payload->region.exec_delta;
			if (split & GI_SLOT_NIC_TS)
				gi_rxq_set_nic_ts(&d->rxq[k], d->ports[p].ts_off, d->ports[p].ts_flag, &d->ports[p].clock,
						  d->ports[p].clock_read);
			/* NIC writes into GPU memory flushed before the doorbell, where the platform needs it */
			if (payload->region.provider) {
				d->rxq[k].pre_doorbell = payload->region.provider->flush;
				d->rxq[k].pre_doorbell_arg = payload->region.provider->ctx;
			}
			d->rxq_port_name[k] = c->ports[p].name;
			d->rxq_lcore[k] = cq->lcore;
			if (rc < 0) {
				gi_log(GI_LOG_ERR, "port %s queue %u: out of memory for the mbuf shadow array",
				       c->ports[p].name, q);
				return rc;
			}
		}
	return 0;
}

/*
 * Ring groups (kernels/executor.h): rings that may carry the same stream
 * are served by one worker.  A port whose rte_flow rules steer each stream
 * to its queue gives one group per queue; a port classified in software
 * (no rte_flow, or flow_steering: false) may see a stream on any of its
 * queues (RSS hashes by flow, and a stream can be several flows), so all
 * its queues are one group.  One allocation: free(*groups) frees it all.
 */
static int exec_groups_build(const struct gi_daemon *d, struct gi_exec_group **groups, uint32_t *n_groups)
{
	const struct gi_config *c = &d->cfg;
	uint32_t n = d->n_rxq, ns = c->n_streams;
	uint32_t *grp = calloc(n ? n : 1, sizeof(*grp));       /* ring -> group */
	uint32_t *ring_of = calloc(ns ? ns : 1, sizeof(*ring_of)); /* stream -> ring */
	uint32_t ng = 0;

	if (!grp || !ring_of) {
		free(grp);
		free(ring_of);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < n; k++) {
		const struct gi_port *pt = &d->ports[d->rxq[k].port_index];
		bool steered = pt->flows.steer && !pt->flows.software;
		uint32_t j = 0;
		/* an unsteered port's queues join the group of its first queue */
		while (!steered && j < k && d->rxq[j].port_index != d->rxq[k].port_index)
			j++;
		grp[k] = !steered && j < k ? grp[j] : ng++;
	}
	for (uint32_t i = 0; i < ns; i++) {
		ring_of[i] = 0;
		for (uint32_t k = 0; k < n; k++)
			if (d->rxq[k].port_index == (uint32_t)c->streams[i].port_index && d->rxq[k].queue == c->streams[i].queue)
				ring_of[i] = k;
	}
	size_t bytes = ng * sizeof(struct gi_exec_group) + n * sizeof(uint32_t) + ns * sizeof(uint16_t) + 8;
	struct gi_exec_group *g = calloc(1, bytes);
	if (!g) {
		free(grp);
		free(ring_of);
		return -ENOMEM;
	}
	uint32_t *rings = (uint32_t *)(g + ng);
	uint16_t *streams = (uint16_t *)(rings + n);
	for (uint32_t q = 0; q < ng; q++) {
		g[q].rings = rings;
		for (uint32_t k = 0; k < n; k++)
			if (grp[k] == q)
				rings[g[q].n_rings++] = k;
		rings += g[q].n_rings;
		g[q].streams = streams;
		for (uint32_t i = 0; i < ns; i++)
			if (grp[ring_of[i]] == q)
				streams[g[q].n_streams++] = (uint16_t)i;
		streams += g[q].n_streams;
	}
	free(grp);
	free(ring_of);
	*groups = g;
	*n_groups = ng;
	return 0;
}

static int executor_start(struct gi_daemon *d)
{
	char err[320];
	struct gi_exec_group *groups = NULL;
	uint32_t n_groups = 0;
	int rc = exec_groups_build(d, &groups, &n_groups);
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "executor: out of memory for its ring groups");
		return rc;
	}
	struct gi_executor_conf ec = {
		.backend = d->mem.backend,
		.mode = d->cfg.executor.mode,
		.pipeline = d->cfg.executor.pipeline,
		.cuda_device = d->cfg.executor.device,
		.threads = d->cfg.executor.threads,
		.threads_per_ring = d->cfg.executor.threads_per_ring,
		.idle = d->cfg.executor.idle,
		.cpu = d->cfg.executor.cpu,
		.n_rings = d->n_rxq,
		.rings = d->rings,
		.ring_lcore = d->rxq_lcore,
		.n_groups = n_groups,
		.groups = groups,
		.ctx = &d->exec_ctx,
		.tick_ns = 1000000,
	};
	rc = gi_executor_create(&ec, &d->exec, err, sizeof(err));
	free(groups); /* the executor keeps what it needs */
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "%s", err);
		return rc;
	}
	d->backend = gi_executor_name(d->exec);
	rc = gi_executor_start(d->exec);
	if (rc < 0) {
		const char *why = gi_executor_last_error(d->exec);
		gi_log(GI_LOG_ERR, "executor %s: cannot start: %s", d->backend, why && why[0] ? why : strerror(-rc));
		return rc;
	}
	uint32_t w = gi_executor_workers(d->exec);
	struct gi_exec_auto_info ai;
	gi_log(GI_LOG_INFO, "executor: %s, %u ring%s in %u group%s, %u worker%s%s%s%s", d->backend, d->n_rxq,
	       d->n_rxq == 1 ? "" : "s", n_groups, n_groups == 1 ? "" : "s", w, w == 1 ? "" : "s",
	       d->cfg.executor.mode == GI_EXEC_INLINE ? " (inline on the rx lcores)"
	       : gi_executor_auto_info(d->exec, 0, &ai) == 0
		       ? " (mode auto: inline on the rx lcores; a saturated lcore's worker is tried on a thread of its own)"
		       : "",
	       gi_executor_why(d->exec)[0] ? "; " : "", gi_executor_why(d->exec));
	gi_log(GI_LOG_INFO, "executor: pipeline %s", gi_executor_pipeline(d->exec));
	return 0;
}

static int lcores_start(struct gi_daemon *d)
{
	d->lcores = aligned_alloc(64, GI_ALIGN_UP((d->n_rxq ? d->n_rxq : 1) * sizeof(*d->lcores), 64));
	if (!d->lcores)
		return -ENOMEM;
	memset(d->lcores, 0, d->n_rxq * sizeof(*d->lcores));
	for (uint32_t i = 0; i < d->n_rxq; i++) {
		struct gi_rx_lcore *lc = NULL;
		for (uint32_t k = 0; k < d->n_lcores; k++)
			if (d->lcores[k].lcore == d->rxq_lcore[i])
				lc = &d->lcores[k];
		if (!lc) {
			lc = &d->lcores[d->n_lcores++];
			lc->lcore = d->rxq_lcore[i];
			lc->idle = gi_config_lcore_idle(&d->cfg, lc->lcore);
			lc->quit = &d->quit;
			lc->drain_timeout_ns = 2000000000ull;
			lc->exec = gi_executor_inline_worker(d->exec, lc->lcore); /* mode inline: it runs the phases */
		}
		if (lc->n_queues == GI_RX_MAX_QUEUES_PER_LCORE) {
			gi_log(GI_LOG_ERR, "lcore %u: more than %u rx queues", lc->lcore, GI_RX_MAX_QUEUES_PER_LCORE);
			return -E2BIG;
		}
		lc->queues[lc->n_queues++] = &d->rxq[i];
	}
	for (uint32_t k = 0; k < d->n_lcores; k++) {
		GI_TSAN_RELEASE(&d->lcores[k]);
		int rc = rte_eal_remote_launch(gi_rx_lcore_main, &d->lcores[k], d->lcores[k].lcore);
		if (rc != 0) {
			gi_log(GI_LOG_ERR, "lcore %u: cannot launch the rx loop: %s", d->lcores[k].lcore, strerror(-rc));
			return rc;
		}
		d->lcores_launched = true;
	}
	return 0;
}

/* ---- teardown: one path for failure and shutdown ---------------------- */

/*
 * A second SIGTERM/SIGINT while draining: leave now.  Threads may still
 * write batch and frame rings, so nothing is unmapped or freed (process
 * exit reclaims it all); consumers are told their rings are closed and the
 * names go, so a restart starts clean.
 */
static void force_exit(struct gi_daemon *d)
{
	gi_log(GI_LOG_ERR, "second %s: exiting now without draining; open frames and batches in flight are lost",
	       __atomic_load_n(&sig_last, __ATOMIC_RELAXED) == SIGINT ? "SIGINT" : "SIGTERM");
	for (uint32_t i = 0; i < d->cfg.n_streams; i++) {
		struct gi_frame_ring_hdr *h = gi_frame_store_hdr(&d->store[i]);
		if (!h)
			continue;
		__atomic_store_n(&h->closed, 1, __ATOMIC_RELEASE);
		gi_frame_wake_now(h, gi_shm_waiters(&d->store[i].shm));
		gi_shm_unlink(&d->store[i].shm);
	}
	gi_notify_errno(EINTR, "stopped by a second signal without draining");
	fflush(stderr);
	_exit(EXIT_FORCED);
}

/*
 * Stop rx, drain, stop the executor: bounded by executor.shutdown_timeout_ms
 * (+100 ms for the executor to flush), waited for in slices so that a second
 * signal is seen within ~10 ms.
 */
static void stop_data_path(struct gi_daemon *d)
{
	uint64_t timeout_ns = (uint64_t)(d->cfg.executor.shutdown_timeout_ms ? d->cfg.executor.shutdown_timeout_ms : 5000) *
			      1000000ull;
	uint64_t deadline = gi_now_ns() + timeout_ns;
	struct timespec slice = { 0, 10 * 1000000 };

	for (uint32_t k = 0; k < d->n_lcores && d->lcores; k++)
		d->lcores[k].drain_timeout_ns = timeout_ns; /* read by the lcore after it sees quit */
	__atomic_store_n(&d->quit, 1, __ATOMIC_RELEASE);
	if (d->lcores_launched) {
		for (uint32_t k = 0; k < d->n_lcores; k++)
			while (rte_eal_get_lcore_state(d->lcores[k].lcore) == RUNNING) {
				if (quit_signals() >= 2)
					force_exit(d);
				nanosleep(&slice, NULL);
			}
		rte_eal_mp_wait_lcore();
		for (uint32_t k = 0; k < d->n_lcores; k++)
			GI_TSAN_ACQUIRE(&d->lcores[k]);
		d->lcores_launched = false;
	}
	if (d->exec && !d->exec_stuck) {
		/* rx drained (or gave up) at the deadline: the executor gets what is left, at least 100 ms */
		uint64_t exec_deadline = GI_MAX(deadline, gi_now_ns() + 100000000ull);
		int rc;
		for (;;) {
			uint64_t now = gi_now_ns();
			rc = gi_executor_stop(d->exec, exec_deadline > now ? GI_MIN(exec_deadline - now, 10000000ull) : 0);
			if (rc != -ETIMEDOUT || gi_now_ns() >= exec_deadline)
				break;
			if (quit_signals() >= 2)
				force_exit(d);
		}
		if (rc < 0) {
			const char *why = rc == -ETIMEDOUT ? "" : gi_executor_last_error(d->exec); /* a fault: say which */
			gi_log(GI_LOG_ERR,
			       "executor %s did not drain within executor.shutdown_timeout_ms (%llu ms)%s%s; frames "
			       "still open are lost",
			       d->backend, (unsigned long long)(timeout_ns / 1000000), why[0] ? ": " : "", why);
			d->exec_stuck = true;
		}
	}
}

static void teardown(struct gi_daemon *d)
{
	stop_data_path(d);
	if (d->http) {
		gi_http_stop(d->http);
		d->http = NULL;
	}
	gi_telemetry_unregister(); /* telemetry threads outlive us: stop them reading what goes next */
	if (d->exec_stuck) {
		/* its thread still reads batch rings and pool buffers and writes frame rings */
		gi_log(GI_LOG_ERR, "executor %s is still running; leaving its memory to process exit", d->backend);
		return;
	}
	/* the executor first: it registered frame rings it must unregister before they go */
	gi_executor_destroy(d->exec);
	d->exec = NULL;
	for (uint32_t i = 0; i < d->cfg.n_streams; i++)
		gi_daemon_ring_close(d, &d->store[i], true);
	gi_wake_server_stop(d->wake);
	d->wake = NULL;
	for (uint32_t i = 0; i < d->n_rxq; i++) {
		/* batches the rx lcore stopped waiting for, which the executor drained afterwards */
		gi_rxq_reap_all(&d->rxq[i]);
		gi_rxq_fini(&d->rxq[i]);
		gi_mem_region_free(&d->ring_mem[i]);
	}
	free(d->ring_mem);
	free(d->lcores);
	free(d->rxq);
	free(d->rings);
	free(d->rxq_port_name);
	free(d->rxq_lcore);
	free(d->streams);
	free(d->stream_map);
	d->n_rxq = 0;
	while (d->n_ports > 0)
		gi_port_teardown(&d->ports[--d->n_ports]);
	while (d->n_pools > 0) {
		struct gi_pool *p = &d->pools[--d->n_pools];
		unsigned in_use = gi_pool_in_use(p);
		if (in_use)
			gi_log(GI_LOG_WARNING, "memory pool %s: %u mbufs still in use at shutdown", p->name, in_use);
		gi_pool_destroy(p);
	}
	if (d->mem_up)
		gi_cuda_drv_close(&d->cuda); /* safe when it was never opened */
	d->mem_up = false;
	if (d->eal_up)
		rte_eal_cleanup();
	d->eal_up = false;
	gi_config_free(&d->cfg);
}

/* ---- main --------------------------------------------------------------- */

static void run(struct gi_daemon *d, unsigned duration_s)
{
	struct gi_stats_prev prev = { 0 };
	uint64_t interval = (uint64_t)d->cfg.stats.status_interval_ms * 1000000u;
	uint64_t next_status = gi_now_ns() + interval;
	uint64_t stop_at = duration_s ? gi_now_ns() + (uint64_t)duration_s * 1000000000ull : UINT64_MAX;
	uint64_t next_check = gi_now_ns() + 1000000000ull;
	static struct gi_watchdog wd;

	gi_watchdog_init(&wd, d, gi_now_ns()); /* WATCHDOG_USEC; baseline progress taken at READY */
	char line[512];
	gi_stats_status_line(d, &prev, line, sizeof(line));
	while (!quit_signals()) {
		struct timespec ts = { 0, 50 * 1000000 };
		nanosleep(&ts, NULL);
		uint64_t now = gi_now_ns();
		if (__atomic_exchange_n(&sig_reload, 0, __ATOMIC_ACQ_REL)) {
			gi_reload(d); /* RELOADING=1 ... READY=1, counts and logs the result (reload.c) */
			interval = (uint64_t)d->cfg.stats.status_interval_ms * 1000000u;
			next_status = now + interval;
		}
		if (interval && now >= next_status) {
			gi_stats_status_line(d, &prev, line, sizeof(line));
			fprintf(stderr, "%s\n", line);
			next_status = now + interval;
		}
		if (now >= next_check) { /* what consumers did to the rings' shared objects (lifecycle.h) */
			gi_daemon_check_consumers(d);
			if (d->exec)
				gi_stats_auto_log(d);
			next_check = now + 1000000000ull;
		}
		/* pings only while every rx lcore and the executor make progress (notify.c) */
		gi_watchdog_poll(&wd, d, now);
		if (now >= stop_at) {
			gi_log(GI_LOG_INFO, "--duration %u s reached, stopping", duration_s);
			break;
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'n' },
		{ "doctor", no_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'J' },
		{ "duration", required_argument, NULL, 'd' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = GI_DEFAULT_CONFIG;
	bool check_only = false, doctor = false, json = false, config_given = false;
	unsigned duration = 0;
	static struct gi_daemon d;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "c:nd:Vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			config_given = true;
			break;
		case 'D':
			doctor = true;
			break;
		case 'J':
			json = true;
			break;
		case 'n':
			check_only = true;
			break;
		case 'd': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*optarg == '\0' || *end || v > 31536000ul) {
				fprintf(stderr, "gpuingestd: --duration: '%s' is not a number of seconds (0..31536000)\n",
					optarg);
				return EXIT_USAGE;
			}
			duration = (unsigned)v;
			break;
		}
		case 'V':
			printf("gpuingestd %s (DPDK %s)\n", GI_VERSION, GI_DPDK_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpuingestd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}

	if (json && !doctor) {
		fprintf(stderr, "gpuingestd: --json goes with --doctor\n");
		return EXIT_USAGE;
	}
	if (doctor && !config_given) /* the box in general */
		return gi_doctor_run(NULL, json, stdout);

	unsigned n_errors = 0;
	rc = gi_config_load(config, &d.cfg, stderr, &n_errors);
	if (rc < 0) {
		if (rc == -EINVAL)
			fprintf(stderr, "gpuingestd: %s: %u error%s, nothing started\n", config, n_errors,
				n_errors == 1 ? "" : "s");
		gi_config_free(&d.cfg);
		return EXIT_CONFIG;
	}
	if (doctor) {
		rc = gi_doctor_run(&d.cfg, json, stdout);
		gi_config_free(&d.cfg);
		return rc;
	}
	if (check_only) {
		printf("%s: OK (%u pool%s, %u port%s, %u stream%s)\n", config, d.cfg.n_pools,
		       d.cfg.n_pools == 1 ? "" : "s", d.cfg.n_ports, d.cfg.n_ports == 1 ? "" : "s", d.cfg.n_streams,
		       d.cfg.n_streams == 1 ? "" : "s");
		gi_config_free(&d.cfg);
		return 0;
	}
	gi_log_set_level(d.cfg.log_level);

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time: on_signal counts without losing one */
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGHUP);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	d.start_ns = gi_now_ns();
	gi_log(GI_LOG_INFO, "gpuingestd %s starting with %s", GI_VERSION, config);
	rc = eal_start(&d, argv[0]);
	if (rc == 0)
		rc = gi_daemon_pools_ports_start(&d);
	if (rc == 0) {
		notify("STATUS=creating frame rings");
		rc = gi_daemon_streams_start(&d);
	}
	if (rc == 0)
		rc = rings_start(&d);
	if (rc == 0) {
		notify("STATUS=starting executor");
		rc = executor_start(&d);
	}
	if (rc == 0) {
		notify("STATUS=starting rx lcores");
		rc = lcores_start(&d);
	}
	if (rc == 0)
		rc = gi_daemon_stats_start(&d);
	if (rc == 0)
		gi_telemetry_register(&d);
	if (rc < 0 || quit_signals()) {
		if (rc < 0) {
			notify("STATUS=start-up failed\nERRNO=%d", -rc);
			gi_log(GI_LOG_ERR, "start-up failed; everything started so far has been released");
		}
		teardown(&d);
		return rc < 0 ? EXIT_START : 0;
	}

	gi_notify_ready("receiving on %u port%s, %u stream%s", d.cfg.n_ports, d.cfg.n_ports == 1 ? "" : "s",
			d.cfg.n_streams, d.cfg.n_streams == 1 ? "" : "s");
	gi_log(GI_LOG_INFO, "ready: %u port%s, %u rx queue%s, %u stream%s, executor %s", d.cfg.n_ports,
	       d.cfg.n_ports == 1 ? "" : "s", d.n_rxq, d.n_rxq == 1 ? "" : "s", d.cfg.n_streams,
	       d.cfg.n_streams == 1 ? "" : "s", d.backend);

	run(&d, duration);

	gi_notify_stopping("draining");
	gi_log(GI_LOG_INFO, "stopping: draining batches and publishing open frames");
	stop_data_path(&d);
	bool drained = !d.exec_stuck;
	gi_stats_print_summary(&d, stdout);
	fflush(stdout);
	teardown(&d);
	if (!drained) {
		gi_notify_errno(ETIMEDOUT, "stopped; the executor did not drain, open frames were lost");
		gi_log(GI_LOG_ERR, "stopped without draining the executor (exit status %d)", EXIT_DRAIN);
		return EXIT_DRAIN;
	}
	gi_log(GI_LOG_INFO, "stopped");
	return 0;
}
