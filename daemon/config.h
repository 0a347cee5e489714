/*
 * config.h — the daemon's configuration, loaded from YAML.
 *
 * One table of keys (config.c) describes every directive: its YAML path,
 * type, bounds, default and whether it may change on reload.  Loading parses
 * the whole file, reports every problem as `FILE:LINE:COL: key: problem
 * (allowed: …)`, then cross-checks references (stream → port, queue →
 * mempool, lcore collisions) — all before any device is touched.
 *
 * Main thread only.  The loaded struct is read-only afterwards.
 */
#ifndef GI_CONFIG_H
#define GI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/executor.h"
#include "kernels/fmt_custom.h"
#include "kernels/fmt_rocev2.h"
#include "kernels/tensor.h"
#include "pmd_glue/log.h"
#include "pmd_glue/mem.h"

#define GI_NAME_MAX 32          /* names of pools, ports, streams */
#define GI_PATH_MAX 256
#define GI_DEVICE_MAX 512
#define GI_MAX_EAL_ARGS 64
#define GI_MAX_POOLS 8
#define GI_MAX_PORTS 8
#define GI_MAX_QUEUES 128       /* per port: a CTA each up to the GPU's SM count (the cuda executor checks) */
#define GI_MAX_QUEUES_PER_LCORE 16 /* rx queues one lcore polls (pmd_glue/rx.h) */
#define GI_MAX_XSTATS 16        /* ports[].xstats names per port */
#define GI_MAX_STREAMS 256
#define GI_MAX_LCORES 128

struct gi_cfg_pool {
	char name[GI_NAME_MAX];
	enum gi_mem_kind kind;     /* host | host_pinned | device */
	uint32_t mbufs;            /* [1024, 1048576], default 16384 */
	uint32_t cache;            /* per-lcore mempool cache [0, 512], default 256 */
	uint32_t buf_size;         /* data buffer bytes incl. headroom; 0 = from the largest MTU that uses it */
	bool hugepages;            /* try hugepage-backed memory for kind host, default true */
	int line;                  /* YAML line of the item, for messages at start */
};

struct gi_cfg_batch {
	uint32_t max_packets;      /* [1, 2048], default 64 */
	uint32_t timeout_us;       /* [1, 1000000], default 100 */
};

/*
 * Header/data buffer split of one rx queue (RTE_ETH_RX_OFFLOAD_BUFFER_SPLIT):
 * the NIC writes the first header_bytes of each packet into a host-visible
 * mbuf from header_mempool (the CPU parses it) and the rest into one from
 * the queue's mempool (GPU memory, never read by the CPU).
 */
struct gi_cfg_split {
	bool enabled;                     /* the split: map is present */
	uint32_t header_bytes;            /* segment 0 length [64, 1024], default 128 */
	char header_mempool[GI_NAME_MAX]; /* pool of kind host or host_pinned, required */
	int header_pool_index;            /* resolved by the cross-check, -1 without split */
};

/* Ethernet + one VLAN tag + IPv4 + UDP + udp_seq: what segment 0 must hold. */
#define GI_SPLIT_MIN_HEADER_BYTES (14u + 4u + 20u + 8u + GI_UDP_SEQ_HDR_LEN)

struct gi_cfg_queue {
	uint32_t lcore;            /* EAL lcore id running this queue */
	char mempool[GI_NAME_MAX]; /* name of a memory pool (the payload pool with split) */
	struct gi_cfg_batch batch;
	uint32_t ring_slots;       /* batch ring size, power of two [2, 65536], default 256 */
	uint32_t descriptors;      /* rx descriptors [64, 32768], default 1024 */
	struct gi_cfg_split split; /* split:, optional */
	int pool_index;            /* resolved by the cross-check */
	int line;
};

struct gi_cfg_port {
	char name[GI_NAME_MAX];
	char device[GI_DEVICE_MAX];  /* PCI address (0000:03:00.0) or vdev string (net_memif0,...) */
	char devargs[GI_DEVICE_MAX]; /* appended to the device's EAL arguments, "" if none */
	bool is_pci;                 /* derived from `device` */
	uint32_t mtu;                /* [68, 9600], default 1500 */
	bool promiscuous;            /* default true */
	bool flow_isolation;         /* rte_flow_isolate: only packets our rules match, default false */
	bool flow_steering;          /* one rte_flow rule per stream → its queue, default true */
	bool rx_timestamp;           /* NIC receive times per frame (RTE_ETH_RX_OFFLOAD_TIMESTAMP), default false */
	uint32_t n_xstats;
	char *xstats[GI_MAX_XSTATS]; /* xstats: driver statistic names exported as metrics, owned */
	uint32_t n_queues;
	struct gi_cfg_queue queues[GI_MAX_QUEUES];
	int line;
};

/* A vita49 stream's sequencing (streams[].vita49:). */
struct gi_cfg_vita49 {
	bool given;                  /* the vita49: map is present */
	uint64_t ts_step_ps;         /* timestamp increment per packet in TSF units [0, 1e12], 0 = use the 4-bit count */
};

/*
 * A custom stream's header map (streams[].custom:, README "Sensor format
 * custom").  The fields land in the kernels' own struct; a field whose map
 * is absent has width 0.
 */
struct gi_cfg_custom {
	bool given;                      /* the custom: map is present */
	struct gi_fmt_custom_params map; /* payload_offset UINT32_MAX until the cross-check resolves it */
};

/* A rocev2 stream's placement and checks (streams[].rocev2:, README "Sensor format rocev2"). */
struct gi_cfg_rocev2 {
	bool given;                  /* the rocev2: map is present */
	uint64_t base_va;            /* VA of byte 0 of the frame buffer, default 0, decimal or 0x hex */
	int icrc;                    /* enum gi_rocev2_icrc_mode: verify (default) | ignore */
	int close_on;                /* enum gi_rocev2_close_on: none (default) | last | imm */
	int placement;               /* enum gi_rocev2_placement: psn (default) | va */
	uint64_t page_bytes;         /* va: VA distance between the sender's pages; 0 until check_rocev2 defaults it */
	uint32_t pages;              /* va: the sender's pages, 0 (default) = any */
	int64_t rkey;                /* R_Key every RETH must carry, -1 (default) = any */
	int profile;                 /* enum gi_rocev2_profile: none (default) | hsb */
	int frame_end;               /* enum gi_rocev2_frame_end (profile hsb): auto (default) | packet | embedded */
	uint32_t psn_bits;           /* PSN width [2, 24], default 24 (HSB's software emulator: 20) */
	int frame_crc;               /* profile hsb: verify | ignore (default): check frames against the record */
};

/* tensor: (optional): the frame as a typed tensor, kernels/tensor.h */
#define GI_CFG_TENSOR_DIMS 4
struct gi_cfg_tensor {
	bool given;
	int sample;                  /* enum gi_tensor_sample, required */
	int big;                     /* byteorder: big (default, 1) | little (0) */
	uint64_t shape[GI_CFG_TENSOR_DIMS]; /* samples per frame, row-major, required */
	uint32_t n_shape;
	int to;                      /* enum gi_tensor_dtype; same (GI_DT_NONE, default): the sample's own type */
	char scale[32];              /* a float, default 1 */
	char offset[32];             /* a float, default 0 */
	int missing;                 /* enum gi_tensor_missing: zero (default) | nan | keep */
	uint32_t dtype;              /* resolved by the cross-check: `to`, or the sample's own type */
	double scale_v, offset_v;    /* ... and scale, offset as numbers */
};

struct gi_cfg_stream {
	char name[GI_NAME_MAX];
	char port[GI_NAME_MAX];
	int port_index;              /* resolved by the cross-check */
	uint16_t udp_dst_port;       /* match.udp_dst_port, [1, 65535], required except rocev2 (default 4791) */
	uint32_t queue;              /* rx queue of the port its rte_flow rule steers to, default 0 */
	enum gi_format format;       /* udp_seq */
	uint32_t frame_packets;      /* frame.packets [1, 65535]; from frame.bytes when not given */
	uint32_t payload_bytes;      /* frame.payload_bytes [1, 9000], required: every packet's, the last one's at most */
	uint64_t frame_bytes;        /* frame.bytes [1, 65535 * 9000]; packets * payload_bytes when not given */
	uint32_t ring_slots;         /* ring.slots [2, 4096], default 16 */
	char shm[GI_NAME_MAX + 16];  /* ring.shm, POSIX shm name, default "/gpuingest-<name>" */
	uint32_t reorder_window;     /* frames open at once [1, 1024], default 2, < ring.slots */
	uint32_t resync_frames;      /* a jump beyond this many frames is a sender restart [0, 1e9], default 1000, 0 = never */
	uint32_t frame_timeout_ms;   /* [0, 60000], default 1000, 0 = never */
	/* format vita49 only (README "Sensor format vita49") */
	int64_t vita49_stream_id;    /* match.stream_id [0, 2^32 - 1], -1 = not given: every VRT packet of the port */
	struct gi_cfg_vita49 vita49; /* vita49:, optional */
	struct gi_cfg_custom custom; /* custom:, required with format custom, allowed with it only */
	/* format rocev2 only (README "Sensor format rocev2") */
	uint32_t rocev2_dst_qp;      /* match.dst_qp [0, 2^24 - 1], required with rocev2; UINT32_MAX = not given */
	struct gi_cfg_rocev2 rocev2; /* rocev2:, optional */
	struct gi_cfg_tensor tensor; /* tensor:, optional */
	int line;
};

struct gi_cfg_lcore {
	uint32_t id;
	enum gi_idle_policy idle;    /* busy | adaptive, default busy */
	int line;
};

struct gi_cfg_stats {
	char unix_path[GI_PATH_MAX]; /* "" = none */
	char listen[GI_PATH_MAX];    /* "host:port", "" = none; default "127.0.0.1:9475" */
	uint32_t status_interval_ms; /* one-line status on stderr, 0 = off, default 0 */
};

struct gi_cfg_executor {
	enum gi_backend backend;     /* auto | host | cuda | gpudev, default auto */
	enum gi_exec_mode mode;      /* auto | persistent | launch (GPU) | threads | inline (host), default auto */
	enum gi_exec_pipeline pipeline; /* phased | serial (host reference), default phased */
	uint32_t threads;            /* host worker threads in mode threads [1, 64], default 1 */
	uint32_t threads_per_ring;   /* CUDA threads per CTA (one CTA per ring group) [32, 1024], default 256 */
	char device[32];             /* CUDA device: ordinal "0".."63" or PCI address "0000:ca:00.0", default "0" */
	enum gi_idle_policy idle;    /* default adaptive */
	int cpu;                     /* -1 = not pinned (default) */
	uint32_t shutdown_timeout_ms; /* [100, 600000], default 5000: rx drain + executor stop at SIGTERM */
};

struct gi_config {
	char path[GI_PATH_MAX];
	/* eal */
	uint32_t n_eal_args;
	char *eal_args[GI_MAX_EAL_ARGS]; /* eal.args, owned */
	uint32_t main_lcore;             /* eal.main_lcore, default 0 */
	enum gi_log_level log_level;     /* log.level, default info */

	uint32_t n_pools;
	struct gi_cfg_pool pools[GI_MAX_POOLS];
	uint32_t n_ports;
	struct gi_cfg_port ports[GI_MAX_PORTS];
	uint32_t n_streams;
	struct gi_cfg_stream streams[GI_MAX_STREAMS];
	uint32_t n_lcores;
	struct gi_cfg_lcore lcores[GI_MAX_LCORES];
	struct gi_cfg_executor executor;
	struct gi_cfg_stats stats;
};

/*
 * Load and validate `path` into `cfg` (zeroed and filled with defaults
 * first).  Every error is written as one line to `errf` (may be NULL).
 * Returns 0, or -EINVAL with the number of errors in *n_errors, or -errno
 * if the file cannot be read, or -EPERM for a regular file that others may
 * write (one line says which mode and how to fix it; a group-writable file
 * only gets a warning line).
 * Call gi_config_free() in every case.
 */
int gi_config_load(const char *path, struct gi_config *cfg, FILE *errf, unsigned *n_errors);

/* Same, from a string (tests, fuzzers); `name` is used in messages. */
int gi_config_load_string(const char *name, const char *yaml, size_t len, struct gi_config *cfg, FILE *errf,
			  unsigned *n_errors);

void gi_config_free(struct gi_config *cfg);

/*
 * Reload: compare a newly loaded config with the running one, key by key,
 * using the table's reloadable flags.  Each difference that needs a restart
 * is written as one line to `errf` (may be NULL):
 *     FILE: key.path: changed from X to Y (needs a restart)
 * Returns how many there are; 0 means `next` may be applied live.
 */
unsigned gi_config_restart_needed(const struct gi_config *cur, const struct gi_config *next, FILE *errf);

/* The idle policy of an lcore: its lcores: entry, or busy. */
enum gi_idle_policy gi_config_lcore_idle(const struct gi_config *cfg, uint32_t lcore);

const char *gi_backend_name(enum gi_backend b);
const char *gi_format_name(enum gi_format f);

/*
 * Packets a frame slot has bits for: frame.packets, plus the frame-end
 * packet that carries only the sender's record (rocev2 profile hsb,
 * frame_end packet, or auto: room for it until the stream learns the
 * record is embedded), which takes the last index and PSN of each frame.
 */
static inline uint32_t gi_cfg_slot_packets(const struct gi_cfg_stream *s)
{
	return s->frame_packets + (s->format == GI_FORMAT_ROCEV2 && s->rocev2.profile == GI_ROCEV2_PROFILE_HSB &&
				   s->rocev2.frame_end != GI_ROCEV2_END_EMBEDDED);
}

#endif /* GI_CONFIG_H */
