/*
 * config.c — YAML → struct gi_config, driven by one table of keys.
 *
 * DESIGN: every directive lives in a static table per section (name, type,
 * bounds, default, enum values, reloadable flag, offset into the section's
 * struct), the way redis keeps its config.  One generic walker applies the
 * defaults, parses a YAML map against a table, recurses into sub-maps and
 * lists of maps, and reports each problem as one line
 * `FILE:LINE:COL: key.path: problem (allowed: …)`.  It never stops at the
 * first problem: a user fixing a config wants the whole list at once.  After
 * the walk, cross-checks resolve references (queue → pool, stream → port)
 * and catch combinations no single key can see; they find the line of the
 * offending key again by walking the YAML document by key path.
 *
 * libyaml's document API is used so every node keeps its start mark.
 * Main thread only; no global mutable state.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "config.h"
#include "kernels/cuda_drv.h"

#define GI_PATH_BUF 160
#define GI_SUN_PATH_MAX 108       /* sizeof(sockaddr_un.sun_path) */
#define GI_MBUF_HEADROOM 128      /* RTE_PKTMBUF_HEADROOM */
#define GI_ETH_OVERHEAD 22        /* Ethernet header, VLAN tag, FCS */
#define GI_IPV4_UDP_HDR_LEN 28
/* default of required lcore ids: a missing one must not also read as lcore 0 */
#define GI_LCORE_UNSET UINT32_MAX

enum gi_key_type {
	GI_K_INT,     /* decimal integer in [min, max], stored in `size` bytes */
	GI_K_BOOL,
	GI_K_ENUM,    /* one of `enums`, stored as int */
	GI_K_STR,     /* char[size] */
	GI_K_NAME,    /* char[size], [A-Za-z0-9_-]{1,31} */
	GI_K_MAP,     /* keys of `sub`, whose offsets are relative to base + off */
	GI_K_LIST,    /* list of maps of `sub`, items of `size` bytes at off, count at count_off */
	GI_K_STRLIST, /* list of strings, char *[max] at off, count at count_off */
};

enum {
	GI_KEY_REQUIRED = 1 << 0,
	GI_KEY_RELOAD = 1 << 1,  /* may change on reload without a restart */
	GI_KEY_POW2 = 1 << 2,    /* GI_K_INT: power of two */
	GI_KEY_ZERO_OK = 1 << 3, /* GI_K_INT: 0 is allowed besides [min, max] */
	GI_KEY_PRESENCE = 1 << 4, /* GI_K_MAP: sets the bool at present_off when the map is given */
	GI_KEY_HEX = 1 << 5,      /* GI_K_INT: decimal or 0x hex, unsigned 64-bit; min/max compared as uint64 */
};

struct gi_enum_val {
	const char *name;
	int value;
};

/* Returns 0, or -1 with the problem (and what is allowed) written to msg. */
typedef int (*gi_check_fn)(const char *s, char *msg, size_t len);

struct gi_section;

struct gi_key {
	const char *name;
	enum gi_key_type type;
	unsigned flags;
	size_t off;
	size_t size;
	int64_t min, max;   /* values; item counts for lists */
	int64_t def;
	const char *def_str;
	const struct gi_enum_val *enums;
	const struct gi_section *sub;
	size_t count_off;
	size_t present_off; /* GI_KEY_PRESENCE: offset of a bool, relative to the map's own base */
	gi_check_fn check;
};

struct gi_section {
	const struct gi_key *keys;   /* ends with a NULL name */
	size_t line_off;             /* offset of the item's `int line`, lists only */
};

struct gi_ctx {
	const char *file;
	FILE *errf;
	unsigned n_errors;
	yaml_document_t *doc;
};

/* ---- enums ---- */

static const struct gi_enum_val log_levels[] = {
	{ "error", GI_LOG_ERR }, { "warning", GI_LOG_WARNING }, { "notice", GI_LOG_NOTICE },
	{ "info", GI_LOG_INFO }, { "debug", GI_LOG_DEBUG }, { NULL, 0 },
};
static const struct gi_enum_val backends[] = {
	{ "auto", GI_BACKEND_AUTO }, { "host", GI_BACKEND_HOST }, { "cuda", GI_BACKEND_CUDA },
	{ "gpudev", GI_BACKEND_GPUDEV }, { NULL, 0 },
};
static const struct gi_enum_val exec_modes[] = {
	{ "auto", GI_EXEC_AUTO }, { "persistent", GI_EXEC_PERSISTENT }, { "launch", GI_EXEC_LAUNCH },
	{ "threads", GI_EXEC_THREADS }, { "inline", GI_EXEC_INLINE }, { NULL, 0 },
};
static const struct gi_enum_val exec_pipelines[] = {
	{ "phased", GI_PIPE_PHASED }, { "serial", GI_PIPE_SERIAL }, { NULL, 0 },
};
static const struct gi_enum_val idle_policies[] = {
	{ "busy", GI_IDLE_BUSY }, { "adaptive", GI_IDLE_ADAPTIVE }, { NULL, 0 },
};
static const struct gi_enum_val mem_kinds[] = {
	{ "host", GI_MEM_HOST }, { "host_pinned", GI_MEM_HOST_PINNED }, { "device", GI_MEM_DEVICE }, { NULL, 0 },
};
static const struct gi_enum_val formats[] = {
	{ "udp_seq", GI_FORMAT_UDP_SEQ }, { "rocev2", GI_FORMAT_ROCEV2 }, { "vita49", GI_FORMAT_VITA49 },
	{ "custom", GI_FORMAT_CUSTOM }, { NULL, 0 },
};

static const char *enum_name(const struct gi_enum_val *e, int v)
{
	for (; e->name; e++)
		if (e->value == v)
			return e->name;
	return "?";
}

/* gi_mem_kind_name() lives with the providers, in pmd_glue/mem.c */
const char *gi_backend_name(enum gi_backend b) { return enum_name(backends, (int)b); }
const char *gi_format_name(enum gi_format f) { return enum_name(formats, (int)f); }

/* ---- value checks beyond type and range ---- */

static int check_device(const char *s, char *msg, size_t len)
{
	if (*s)
		return 0;
	snprintf(msg, len, "must not be empty (allowed: a PCI address such as 0000:03:00.0, or a vdev string)");
	return -1;
}

static int check_cuda_device(const char *s, char *msg, size_t len)
{
	if (gi_cuda_device_id_valid(s) && *s)
		return 0;
	snprintf(msg, len, "'%s' is not a CUDA device (allowed: an ordinal 0..63, or the GPU's PCI address such as "
		 "0000:ca:00.0, as nvidia-smi -L and lspci print it)", s);
	return -1;
}

static int check_shm(const char *s, char *msg, size_t len)
{
	if (s[0] == '/' && s[1] && !strchr(s + 1, '/') && strlen(s) <= GI_NAME_MAX + 15)
		return 0;
	snprintf(msg, len, "'%s' is not a valid shared memory name (allowed: '/' then 1..%d characters, no other '/')",
		 s, GI_NAME_MAX + 14);
	return -1;
}

static int check_unix(const char *s, char *msg, size_t len)
{
	if (strlen(s) < GI_SUN_PATH_MAX)
		return 0;
	snprintf(msg, len, "socket path is too long (allowed: \"\" or up to %d bytes)", GI_SUN_PATH_MAX - 1);
	return -1;
}

static int check_listen(const char *s, char *msg, size_t len)
{
	static const char allowed[] = "allowed: \"\", IPv4:port, [IPv6]:port, localhost:port";
	char host[GI_PATH_MAX];
	const char *colon, *p;
	unsigned char addr[16];
	long port = 0;
	int ok;

	if (!*s)
		return 0;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':') {
			snprintf(msg, len, "'%s' is not [v6addr]:port (%s)", s, allowed);
			return -1;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(close - s - 1), s + 1);
		colon = close + 1;
		ok = inet_pton(AF_INET6, host, addr) == 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			snprintf(msg, len, "'%s' has no port (%s)", s, allowed);
			return -1;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
		ok = strcmp(host, "localhost") == 0 || inet_pton(AF_INET, host, addr) == 1;
	}
	if (!ok) {
		snprintf(msg, len, "host '%s' is not an IP literal or localhost (%s)", host, allowed);
		return -1;
	}
	for (p = colon + 1; *p && isdigit((unsigned char)*p) && port <= 65535; p++)
		port = port * 10 + (*p - '0');
	if (p == colon + 1 || *p || port < 1 || port > 65535) {
		snprintf(msg, len, "port '%s' is not valid (allowed: 1..65535)", colon + 1);
		return -1;
	}
	return 0;
}

/* ---- the tables ---- */

#define FSIZE(st, f) sizeof(((st *)0)->f)
#define K_INT(n, st, f, lo, hi, d, fl) \
	{ .name = n, .type = GI_K_INT, .flags = fl, .off = offsetof(st, f), .size = FSIZE(st, f), .min = lo, .max = hi, .def = d }
#define K_BOOL(n, st, f, d, fl) \
	{ .name = n, .type = GI_K_BOOL, .flags = fl, .off = offsetof(st, f), .size = FSIZE(st, f), .def = d }
#define K_ENUM(n, st, f, e, d, fl) \
	{ .name = n, .type = GI_K_ENUM, .flags = fl, .off = offsetof(st, f), .size = FSIZE(st, f), .enums = e, .def = d }
#define K_STR(n, st, f, d, chk, fl) \
	{ .name = n, .type = GI_K_STR, .flags = fl, .off = offsetof(st, f), .size = FSIZE(st, f), .def_str = d, .check = chk }
#define K_NAME(n, st, f, fl) \
	{ .name = n, .type = GI_K_NAME, .flags = fl, .off = offsetof(st, f), .size = FSIZE(st, f) }
#define K_MAP(n, o, s) { .name = n, .type = GI_K_MAP, .off = o, .sub = s }
/* an optional map whose mere presence means something (the queue's split:) */
#define K_OPT_MAP(n, st, f, sub_st, flag, s)                                                   \
	{ .name = n, .type = GI_K_MAP, .flags = GI_KEY_PRESENCE, .off = offsetof(st, f), .sub = s, \
	  .present_off = offsetof(sub_st, flag) }
#define K_LIST(n, st, f, cnt, lo, hi, s, fl)                                                                 \
	{ .name = n, .type = GI_K_LIST, .flags = fl, .off = offsetof(st, f), .size = sizeof(((st *)0)->f[0]), \
	  .min = lo, .max = hi, .count_off = offsetof(st, cnt), .sub = s }
#define K_END { .name = NULL }

enum { REQ = GI_KEY_REQUIRED, RELOAD = GI_KEY_RELOAD };

static const struct gi_key eal_keys[] = {
	K_INT("main_lcore", struct gi_config, main_lcore, 0, GI_MAX_LCORES - 1, 0, 0),
	{ .name = "args", .type = GI_K_STRLIST, .off = offsetof(struct gi_config, eal_args),
	  .count_off = offsetof(struct gi_config, n_eal_args), .min = 0, .max = GI_MAX_EAL_ARGS },
	K_END,
};
static const struct gi_key log_keys[] = {
	K_ENUM("level", struct gi_config, log_level, log_levels, GI_LOG_INFO, RELOAD),
	K_END,
};
static const struct gi_key executor_keys[] = {
	K_ENUM("backend", struct gi_cfg_executor, backend, backends, GI_BACKEND_AUTO, 0),
	K_ENUM("mode", struct gi_cfg_executor, mode, exec_modes, GI_EXEC_AUTO, 0),
	K_ENUM("pipeline", struct gi_cfg_executor, pipeline, exec_pipelines, GI_PIPE_PHASED, 0),
	K_INT("threads", struct gi_cfg_executor, threads, 1, 64, 1, 0),
	K_INT("threads_per_ring", struct gi_cfg_executor, threads_per_ring, 32, GI_EXEC_MAX_CTA, 256, 0),
	K_STR("device", struct gi_cfg_executor, device, "0", check_cuda_device, 0),
	K_ENUM("idle", struct gi_cfg_executor, idle, idle_policies, GI_IDLE_ADAPTIVE, 0),
	K_INT("cpu", struct gi_cfg_executor, cpu, -1, 1023, -1, 0),
	/* read only at shutdown, from the running config: a reload takes effect */
	K_INT("shutdown_timeout_ms", struct gi_cfg_executor, shutdown_timeout_ms, 100, 600000, 5000, RELOAD),
	K_END,
};
static const struct gi_key lcore_keys[] = {
	K_INT("id", struct gi_cfg_lcore, id, 0, GI_MAX_LCORES - 1, -1, REQ),
	K_ENUM("idle", struct gi_cfg_lcore, idle, idle_policies, GI_IDLE_BUSY, 0),
	K_END,
};
static const struct gi_key pool_keys[] = {
	K_NAME("name", struct gi_cfg_pool, name, REQ),
	K_ENUM("kind", struct gi_cfg_pool, kind, mem_kinds, GI_MEM_HOST, 0),
	K_INT("mbufs", struct gi_cfg_pool, mbufs, 1024, 1048576, 16384, 0),
	K_INT("cache", struct gi_cfg_pool, cache, 0, 512, 256, 0),
	K_INT("buf_size", struct gi_cfg_pool, buf_size, 256, 65535, 0, GI_KEY_ZERO_OK),
	K_BOOL("hugepages", struct gi_cfg_pool, hugepages, true, 0),
	K_END,
};
static const struct gi_key batch_keys[] = {
	/* reload: up to the batch ring's slot capacity, set at start (reload.c checks) */
	K_INT("max_packets", struct gi_cfg_batch, max_packets, 1, 2048, 64, RELOAD),
	K_INT("timeout_us", struct gi_cfg_batch, timeout_us, 1, 1000000, 100, RELOAD),
	K_END,
};
static const struct gi_section batch_sec = { batch_keys, 0 };
static const struct gi_key split_keys[] = {
	K_INT("header_bytes", struct gi_cfg_split, header_bytes, 64, 1024, 128, 0),
	K_NAME("header_mempool", struct gi_cfg_split, header_mempool, REQ),
	K_END,
};
static const struct gi_section split_sec = { split_keys, 0 };
static const struct gi_key queue_keys[] = {
	K_INT("lcore", struct gi_cfg_queue, lcore, 0, GI_MAX_LCORES - 1, -1, REQ),
	K_NAME("mempool", struct gi_cfg_queue, mempool, REQ),
	K_INT("descriptors", struct gi_cfg_queue, descriptors, 64, 32768, 1024, 0),
	K_INT("ring_slots", struct gi_cfg_queue, ring_slots, 2, 65536, 256, GI_KEY_POW2),
	K_MAP("batch", offsetof(struct gi_cfg_queue, batch), &batch_sec),
	K_OPT_MAP("split", struct gi_cfg_queue, split, struct gi_cfg_split, enabled, &split_sec),
	K_END,
};
static const struct gi_section queue_sec = { queue_keys, offsetof(struct gi_cfg_queue, line) };
static const struct gi_key port_keys[] = {
	K_NAME("name", struct gi_cfg_port, name, REQ),
	K_STR("device", struct gi_cfg_port, device, "", check_device, REQ),
	K_STR("devargs", struct gi_cfg_port, devargs, "", NULL, 0),
	K_INT("mtu", struct gi_cfg_port, mtu, 68, 9600, 1500, 0),
	K_BOOL("promiscuous", struct gi_cfg_port, promiscuous, true, 0),
	K_BOOL("flow_isolation", struct gi_cfg_port, flow_isolation, false, 0),
	K_BOOL("flow_steering", struct gi_cfg_port, flow_steering, true, 0),
	{ .name = "xstats", .type = GI_K_STRLIST, .off = offsetof(struct gi_cfg_port, xstats),
	  .count_off = offsetof(struct gi_cfg_port, n_xstats), .min = 0, .max = GI_MAX_XSTATS },
	K_LIST("rx_queues", struct gi_cfg_port, queues, n_queues, 1, GI_MAX_QUEUES, &queue_sec, REQ),
	K_END,
};
/* match:, frame: and ring: are YAML grouping only: their keys land in the stream itself */
static const struct gi_key match_keys[] = {
	/* required except with format rocev2 (4791): check_streams() says so */
	K_INT("udp_dst_port", struct gi_cfg_stream, udp_dst_port, 1, 65535, 0, 0),
	K_INT("dst_qp", struct gi_cfg_stream, rocev2_dst_qp, 0, 0xffffff, -1, 0), /* rocev2 */
	K_INT("stream_id", struct gi_cfg_stream, vita49_stream_id, 0, 4294967295ll, -1, 0), /* vita49 */
	K_END,
};
static const struct gi_key frame_keys[] = {
	/* packets or bytes, or both when they agree: check_frame_geometry() */
	K_INT("packets", struct gi_cfg_stream, frame_packets, 1, 65535, 0, 0),
	K_INT("payload_bytes", struct gi_cfg_stream, payload_bytes, 1, 9000, 0, REQ),
	K_INT("bytes", struct gi_cfg_stream, frame_bytes, 1, 65535ll * 9000, 0, 0),
	K_END,
};
static const struct gi_key ring_keys[] = {
	K_INT("slots", struct gi_cfg_stream, ring_slots, 2, 4096, 16, 0),
	K_STR("shm", struct gi_cfg_stream, shm, "", check_shm, 0),
	K_END,
};
static const struct gi_section match_sec = { match_keys, 0 }, frame_sec = { frame_keys, 0 },
				ring_sec = { ring_keys, 0 };
/* vita49: (format vita49 only; check_vita49() says so otherwise) */
static const struct gi_key vita49_keys[] = {
	K_INT("ts_step_ps", struct gi_cfg_vita49, ts_step_ps, 0, 1000000000000ll, 0, 0),
	K_END,
};
static const struct gi_section vita49_sec = { vita49_keys, 0 };
/* custom: (format custom only; check_custom() says so otherwise), kernels/fmt_custom.h */
static const struct gi_enum_val custom_widths[] = {
	{ "1", 1 }, { "2", 2 }, { "4", 4 }, { "8", 8 }, { NULL, 0 },
};
static const struct gi_enum_val custom_endians[] = {
	{ "big", GI_CUSTOM_BIG }, { "little", GI_CUSTOM_LITTLE }, { NULL, 0 },
};
static const struct gi_key custom_field_keys[] = {
	K_INT("offset", struct gi_custom_field, offset, 0, 8999, 0, REQ),
	K_ENUM("width", struct gi_custom_field, width, custom_widths, 0, REQ),
	K_ENUM("endian", struct gi_custom_field, endian, custom_endians, GI_CUSTOM_BIG, 0),
	K_INT("mask", struct gi_custom_field, mask, 1, -1, 0, GI_KEY_HEX), /* 0: the whole field */
	K_INT("shift", struct gi_custom_field, shift, 0, 63, 0, 0),
	K_END,
};
static const struct gi_section custom_field_sec = { custom_field_keys, 0 };
#define K_CUSTOM_FIELD(n, id, fl)                                                                     \
	{ .name = n, .type = GI_K_MAP, .flags = fl, .off = offsetof(struct gi_cfg_custom, map.f[id]), \
	  .sub = &custom_field_sec }
static const struct gi_key custom_keys[] = {
	K_INT("header_bytes", struct gi_cfg_custom, map.header_bytes, 1, 9000, 0, REQ),
	K_INT("payload_offset", struct gi_cfg_custom, map.payload_offset, 0, 9000, -1, 0), /* -1: header_bytes */
	K_INT("trailer_bytes", struct gi_cfg_custom, map.trailer_bytes, 0, 9000, 0, 0),
	K_CUSTOM_FIELD("seq", GI_CUSTOM_SEQ, REQ),
	K_CUSTOM_FIELD("frame", GI_CUSTOM_FRAME, 0),
	K_CUSTOM_FIELD("index", GI_CUSTOM_INDEX, 0),
	K_CUSTOM_FIELD("id", GI_CUSTOM_ID, 0),
	K_CUSTOM_FIELD("timestamp", GI_CUSTOM_TIMESTAMP, 0),
	K_END,
};
static const struct gi_section custom_sec = { custom_keys, 0 };
/* rocev2: (format rocev2 only; check_rocev2() says so otherwise), kernels/fmt_rocev2.h */
static const struct gi_enum_val rocev2_icrc_modes[] = {
	{ "verify", GI_ROCEV2_ICRC_VERIFY }, { "ignore", GI_ROCEV2_ICRC_IGNORE }, { NULL, 0 },
};
static const struct gi_enum_val rocev2_close_ons[] = {
	{ "none", GI_ROCEV2_CLOSE_NONE }, { "last", GI_ROCEV2_CLOSE_LAST }, { "imm", GI_ROCEV2_CLOSE_IMM }, { NULL, 0 },
};
static const struct gi_enum_val rocev2_placements[] = {
	{ "psn", GI_ROCEV2_PLACE_PSN }, { "va", GI_ROCEV2_PLACE_VA }, { NULL, 0 },
};
static const struct gi_enum_val rocev2_profiles[] = {
	{ "none", GI_ROCEV2_PROFILE_NONE }, { "hsb", GI_ROCEV2_PROFILE_HSB }, { NULL, 0 },
};
static const struct gi_enum_val rocev2_frame_ends[] = {
	{ "packet", GI_ROCEV2_END_PACKET }, { "embedded", GI_ROCEV2_END_EMBEDDED }, { NULL, 0 },
};
static const struct gi_key rocev2_keys[] = {
	K_INT("base_va", struct gi_cfg_rocev2, base_va, 0, -1, 0, GI_KEY_HEX),
	K_ENUM("icrc", struct gi_cfg_rocev2, icrc, rocev2_icrc_modes, GI_ROCEV2_ICRC_VERIFY, 0),
	K_ENUM("close_on", struct gi_cfg_rocev2, close_on, rocev2_close_ons, GI_ROCEV2_CLOSE_NONE, 0),
	K_ENUM("placement", struct gi_cfg_rocev2, placement, rocev2_placements, GI_ROCEV2_PLACE_PSN, 0),
	K_INT("page_bytes", struct gi_cfg_rocev2, page_bytes, 1, -1, 0, GI_KEY_HEX), /* 0: check_rocev2 defaults it */
	K_INT("pages", struct gi_cfg_rocev2, pages, 1, 1u << 24, 0, 0),
	K_INT("rkey", struct gi_cfg_rocev2, rkey, 0, 0xffffffffll, -1, GI_KEY_HEX),
	K_ENUM("profile", struct gi_cfg_rocev2, profile, rocev2_profiles, GI_ROCEV2_PROFILE_NONE, 0),
	K_ENUM("frame_end", struct gi_cfg_rocev2, frame_end, rocev2_frame_ends, GI_ROCEV2_END_PACKET, 0),
	K_INT("psn_bits", struct gi_cfg_rocev2, psn_bits, 2, 24, 24, 0),
	K_ENUM("frame_crc", struct gi_cfg_rocev2, frame_crc, rocev2_icrc_modes, GI_ROCEV2_ICRC_IGNORE, 0),
	K_END,
};
static const struct gi_section rocev2_sec = { rocev2_keys, 0 };
static const struct gi_key stream_keys[] = {
	K_NAME("name", struct gi_cfg_stream, name, REQ),
	K_NAME("port", struct gi_cfg_stream, port, REQ),
	{ .name = "match", .type = GI_K_MAP, .flags = REQ, .sub = &match_sec },
	K_INT("queue", struct gi_cfg_stream, queue, 0, GI_MAX_QUEUES - 1, 0, 0),
	K_ENUM("format", struct gi_cfg_stream, format, formats, GI_FORMAT_UDP_SEQ, 0),
	{ .name = "frame", .type = GI_K_MAP, .flags = REQ, .sub = &frame_sec },
	K_MAP("ring", 0, &ring_sec),
	K_INT("reorder_window", struct gi_cfg_stream, reorder_window, 1, 1024, 2, RELOAD),
	K_INT("resync_frames", struct gi_cfg_stream, resync_frames, 0, 1000000000, 1000, RELOAD),
	K_INT("frame_timeout_ms", struct gi_cfg_stream, frame_timeout_ms, 0, 60000, 1000, RELOAD),
	K_OPT_MAP("vita49", struct gi_cfg_stream, vita49, struct gi_cfg_vita49, given, &vita49_sec),
	K_OPT_MAP("custom", struct gi_cfg_stream, custom, struct gi_cfg_custom, given, &custom_sec),
	K_OPT_MAP("rocev2", struct gi_cfg_stream, rocev2, struct gi_cfg_rocev2, given, &rocev2_sec),
	K_END,
};
static const struct gi_key stats_keys[] = {
	K_STR("unix", struct gi_cfg_stats, unix_path, "", check_unix, RELOAD),
	K_STR("listen", struct gi_cfg_stats, listen, "127.0.0.1:9475", check_listen, RELOAD),
	K_INT("status_interval_ms", struct gi_cfg_stats, status_interval_ms, 0, 60000, 0, RELOAD),
	K_END,
};
static const struct gi_section eal_sec = { eal_keys, 0 }, log_sec = { log_keys, 0 },
				executor_sec = { executor_keys, 0 }, stats_sec = { stats_keys, 0 },
				lcore_sec = { lcore_keys, offsetof(struct gi_cfg_lcore, line) },
				pool_sec = { pool_keys, offsetof(struct gi_cfg_pool, line) },
				port_sec = { port_keys, offsetof(struct gi_cfg_port, line) },
				stream_sec = { stream_keys, offsetof(struct gi_cfg_stream, line) };
static const struct gi_key root_keys[] = {
	K_MAP("eal", 0, &eal_sec),
	K_MAP("log", 0, &log_sec),
	K_MAP("executor", offsetof(struct gi_config, executor), &executor_sec),
	K_LIST("lcores", struct gi_config, lcores, n_lcores, 0, GI_MAX_LCORES, &lcore_sec, 0),
	K_LIST("memory", struct gi_config, pools, n_pools, 1, GI_MAX_POOLS, &pool_sec, REQ),
	K_LIST("ports", struct gi_config, ports, n_ports, 1, GI_MAX_PORTS, &port_sec, REQ),
	K_LIST("streams", struct gi_config, streams, n_streams, 0, GI_MAX_STREAMS, &stream_sec, 0),
	K_MAP("stats", offsetof(struct gi_config, stats), &stats_sec),
	K_END,
};
static const struct gi_section root_sec = { root_keys, 0 };

/* ---- messages ---- */

static void err_at(struct gi_ctx *c, yaml_mark_t m, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void err_at(struct gi_ctx *c, yaml_mark_t m, const char *path, const char *fmt, ...)
{
	va_list ap;

	c->n_errors++;
	if (!c->errf)
		return;
	fprintf(c->errf, "%s:%zu:%zu: %s: ", c->file, m.line + 1, m.column + 1, *path ? path : "(top level)");
	va_start(ap, fmt);
	vfprintf(c->errf, fmt, ap);
	va_end(ap);
	fputc('\n', c->errf);
}

/* "(allowed: …)" text for a key, "" when there is nothing useful to say. */
static const char *allowed(const struct gi_key *k, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	switch (k->type) {
	case GI_K_INT:
		if (k->flags & GI_KEY_HEX)
			snprintf(buf, len, " (allowed: 0x%" PRIx64 "..0x%" PRIx64 ", decimal or 0x hex)", (uint64_t)k->min,
				 (uint64_t)k->max);
		else if (k->flags & GI_KEY_POW2)
			snprintf(buf, len, " (allowed: powers of two %" PRId64 "..%" PRId64 ")", k->min, k->max);
		else
			snprintf(buf, len, " (allowed: %s%" PRId64 "..%" PRId64 ")",
				 k->flags & GI_KEY_ZERO_OK ? "0 or " : "", k->min, k->max);
		break;
	case GI_K_BOOL:
		snprintf(buf, len, " (allowed: true, false, yes, no, on, off)");
		break;
	case GI_K_ENUM:
		n = (size_t)snprintf(buf, len, " (allowed: ");
		for (const struct gi_enum_val *e = k->enums; e->name && n < len; e++)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", e == k->enums ? "" : ", ", e->name);
		if (n < len)
			snprintf(buf + n, len - n, ")");
		break;
	case GI_K_NAME:
		snprintf(buf, len, " (allowed: 1..%d of A-Z a-z 0-9 _ -)", GI_NAME_MAX - 1);
		break;
	case GI_K_LIST:
		snprintf(buf, len, " (allowed: %" PRId64 "..%" PRId64 " items)", k->min, k->max);
		break;
	case GI_K_STRLIST:
		snprintf(buf, len, " (allowed: up to %" PRId64 " strings)", k->max);
		break;
	default:
		break;
	}
	return buf;
}

static const char *node_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a map";
	case YAML_SEQUENCE_NODE: return "a list";
	default: return "a scalar";
	}
}

static const char *const type_names[] = {
	[GI_K_INT] = "an integer", [GI_K_BOOL] = "a boolean", [GI_K_ENUM] = "a scalar",
	[GI_K_STR] = "a string", [GI_K_NAME] = "a name", [GI_K_MAP] = "a map",
	[GI_K_LIST] = "a list of maps", [GI_K_STRLIST] = "a list of strings",
};

/* Key paths are for messages: a long unknown key may be cut short, never overflow. */
static void fmt_path(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fmt_path(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, len, fmt, ap);
	va_end(ap);
}

static void join(char *out, size_t len, const char *prefix, const char *name)
{
	fmt_path(out, len, "%s%s%s", prefix, *prefix ? "." : "", name);
}

/* ---- defaults and scalar parsing ---- */

static void store_int(void *dst, size_t size, int64_t v)
{
	switch (size) {
	case 1: { int8_t x = (int8_t)v; memcpy(dst, &x, 1); break; }
	case 2: { int16_t x = (int16_t)v; memcpy(dst, &x, 2); break; }
	case 4: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
	default: memcpy(dst, &v, 8); break;
	}
}

static void apply_defaults(const struct gi_section *sec, char *base)
{
	for (const struct gi_key *k = sec->keys; k->name; k++) {
		char *p = base + k->off;
		switch (k->type) {
		case GI_K_INT:
		case GI_K_ENUM:
			store_int(p, k->size, k->def);
			break;
		case GI_K_BOOL:
			*(bool *)p = k->def != 0;
			break;
		case GI_K_STR:
		case GI_K_NAME:
			snprintf(p, k->size, "%s", k->def_str ? k->def_str : "");
			break;
		case GI_K_MAP:
			apply_defaults(k->sub, p);
			break;
		case GI_K_LIST:
		case GI_K_STRLIST:
			*(uint32_t *)(base + k->count_off) = 0;
			break;
		}
	}
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n >= GI_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return false;
	return true;
}

static bool parse_bool(const char *s, bool *out)
{
	static const char *const t[] = { "true", "yes", "on" }, *const f[] = { "false", "no", "off" };

	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(s, t[i]) == 0)
			return *out = true, true;
		if (strcasecmp(s, f[i]) == 0)
			return *out = false, true;
	}
	return false;
}

/* GI_KEY_HEX values (bit masks): decimal digits, or 0x then hex digits; unsigned, no overflow. */
static bool parse_uint_hex(const char *s, uint64_t *out)
{
	int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	const char *p = s + (hex ? 2 : 0);
	char *end;

	if (!*p)
		return false;
	for (const char *q = p; *q; q++)
		if (hex ? !isxdigit((unsigned char)*q) : !isdigit((unsigned char)*q))
			return false;
	errno = 0;
	*out = strtoull(p, &end, hex ? 16 : 10);
	return errno == 0 && *end == '\0';
}

/* Decimal only: an optional '-', then digits, nothing else; no overflow. */
static bool parse_int(const char *s, int64_t *out)
{
	const char *p = s + (*s == '-');
	char *end;

	if (!isdigit((unsigned char)*p))
		return false;
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q))
			return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static void parse_scalar(struct gi_ctx *c, yaml_node_t *n, const struct gi_key *k, char *p, const char *path)
{
	const char *s = (const char *)n->data.scalar.value;
	char why[GI_PATH_MAX], al[GI_PATH_MAX];
	int64_t v;
	bool b;

	allowed(k, al, sizeof(al));
	if (strlen(s) != n->data.scalar.length) {
		err_at(c, n->start_mark, path, "contains a NUL byte");
		return;
	}
	if (k->type != GI_K_STR && n->data.scalar.length == 0 && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		err_at(c, n->start_mark, path, "missing value%s", al);
		return;
	}
	switch (k->type) {
	case GI_K_INT:
		if (k->flags & GI_KEY_HEX) {
			uint64_t u;
			if (!parse_uint_hex(s, &u))
				err_at(c, n->start_mark, path, "'%s' is not a decimal or 0x hex integer%s", s, al);
			else if (u < (uint64_t)k->min || u > (uint64_t)k->max)
				err_at(c, n->start_mark, path, "%s is out of range%s", s, al);
			else
				memcpy(p, &u, sizeof(u)); /* GI_KEY_HEX keys are 8 bytes */
			break;
		}
		if (!parse_int(s, &v))
			err_at(c, n->start_mark, path, "'%s' is not a decimal integer%s", s, al);
		else if ((v < k->min || v > k->max) && !(v == 0 && (k->flags & GI_KEY_ZERO_OK)))
			err_at(c, n->start_mark, path, "%s is out of range%s", s, al);
		else if ((k->flags & GI_KEY_POW2) && (v & (v - 1)))
			err_at(c, n->start_mark, path, "%s is not a power of two%s", s, al);
		else
			store_int(p, k->size, v);
		break;
	case GI_K_BOOL:
		if (parse_bool(s, &b))
			*(bool *)p = b;
		else
			err_at(c, n->start_mark, path, "'%s' is not a boolean%s", s, al);
		break;
	case GI_K_ENUM:
		for (const struct gi_enum_val *e = k->enums; e->name; e++) {
			if (strcmp(s, e->name) == 0) {
				store_int(p, k->size, e->value);
				return;
			}
		}
		err_at(c, n->start_mark, path, "'%s' is not a valid value%s", s, al);
		break;
	case GI_K_NAME:
		if (valid_name(s))
			snprintf(p, k->size, "%s", s);
		else
			err_at(c, n->start_mark, path, "'%s' is not a valid name%s", s, al);
		break;
	case GI_K_STR:
		/* the check first: it knows the limit in the key's own terms */
		if (k->check && k->check(s, why, sizeof(why)) < 0)
			err_at(c, n->start_mark, path, "%s", why);
		else if (n->data.scalar.length >= k->size)
			err_at(c, n->start_mark, path, "string is too long (allowed: up to %zu bytes)", k->size - 1);
		else
			snprintf(p, k->size, "%s", s);
		break;
	default:
		break;
	}
}

/* ---- the walker ---- */

static bool is_null(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;

	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0);
}

static void parse_map(struct gi_ctx *c, yaml_node_t *map, const struct gi_section *sec, char *base,
		      const char *path);

static void parse_list(struct gi_ctx *c, yaml_node_t *seq, const struct gi_key *k, char *base, const char *path)
{
	uint32_t *count = (uint32_t *)(base + k->count_off);
	char item_path[GI_PATH_BUF], al[GI_PATH_MAX];
	yaml_node_item_t *it;
	uint32_t i = 0;

	allowed(k, al, sizeof(al));
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++, i++) {
		yaml_node_t *n = yaml_document_get_node(c->doc, *it);

		fmt_path(item_path, sizeof(item_path), "%s[%u]", path, i);
		if (i >= k->max) {
			err_at(c, n->start_mark, item_path, "too many items%s", al);
			break;
		}
		if (k->type == GI_K_STRLIST) {
			if (n->type != YAML_SCALAR_NODE) {
				err_at(c, n->start_mark, item_path, "expected a string, got %s", node_kind(n));
				continue;
			}
			((char **)(base + k->off))[(*count)++] = strdup((const char *)n->data.scalar.value);
			continue;
		}
		/*
		 * A broken item still takes its slot (nameless, so the cross-checks
		 * pass it by): struct index and YAML index agree in every message.
		 */
		char *item = base + k->off + (size_t)(*count)++ * k->size;
		memset(item, 0, k->size);
		apply_defaults(k->sub, item);
		*(int *)(item + k->sub->line_off) = (int)n->start_mark.line + 1;
		if (n->type == YAML_MAPPING_NODE)
			parse_map(c, n, k->sub, item, item_path);
		else
			err_at(c, n->start_mark, item_path, "expected a map, got %s", node_kind(n));
	}
	if (i < k->min)
		err_at(c, seq->start_mark, path, "needs at least %" PRId64 " item%s%s", k->min, k->min == 1 ? "" : "s",
		       al);
}

static void parse_value(struct gi_ctx *c, yaml_node_t *n, const struct gi_key *k, char *base, const char *path)
{
	char al[GI_PATH_MAX];
	bool want_map = k->type == GI_K_MAP;
	bool want_seq = k->type == GI_K_LIST || k->type == GI_K_STRLIST;

	if ((want_map || want_seq) && is_null(n)) {
		if (want_seq && k->min > 0)
			err_at(c, n->start_mark, path, "needs at least %" PRId64 " item%s", k->min,
			       allowed(k, al, sizeof(al)));
		return;
	}
	if (want_map && n->type == YAML_MAPPING_NODE) {
		if (k->flags & GI_KEY_PRESENCE)
			*(bool *)(base + k->off + k->present_off) = true;
		parse_map(c, n, k->sub, base + k->off, path);
	}
	else if (want_seq && n->type == YAML_SEQUENCE_NODE)
		parse_list(c, n, k, base, path);
	else if (!want_map && !want_seq && n->type == YAML_SCALAR_NODE)
		parse_scalar(c, n, k, base + k->off, path);
	else
		err_at(c, n->start_mark, path, "expected %s, got %s%s", type_names[k->type], node_kind(n),
		       allowed(k, al, sizeof(al)));
}

static void parse_map(struct gi_ctx *c, yaml_node_t *map, const struct gi_section *sec, char *base,
		      const char *path)
{
	size_t first_line[16] = { 0 }; /* 1-based line where each key was seen, 0 = not seen */
	char key_path[GI_PATH_BUF];
	yaml_node_pair_t *pair;
	size_t nkeys = 0;

	while (sec->keys[nkeys].name)
		nkeys++;
	assert(nkeys <= sizeof(first_line) / sizeof(first_line[0])); /* a table grew: grow first_line */
	for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *kn = yaml_document_get_node(c->doc, pair->key);
		yaml_node_t *vn = yaml_document_get_node(c->doc, pair->value);
		const char *name;
		size_t i;

		if (kn->type != YAML_SCALAR_NODE) {
			err_at(c, kn->start_mark, path, "keys must be scalars, got %s", node_kind(kn));
			continue;
		}
		name = (const char *)kn->data.scalar.value;
		join(key_path, sizeof(key_path), path, name);
		for (i = 0; i < nkeys && strcmp(sec->keys[i].name, name) != 0; i++)
			;
		if (i == nkeys) {
			char list[GI_PATH_MAX];
			size_t n = 0;
			for (size_t j = 0; j < nkeys && n < sizeof(list); j++)
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", j ? ", " : "", sec->keys[j].name);
			err_at(c, kn->start_mark, key_path, "unknown key (allowed: %s)", list);
			continue;
		}
		if (first_line[i]) {
			err_at(c, kn->start_mark, key_path, "duplicate key (first at line %zu)", first_line[i]);
			continue;
		}
		first_line[i] = kn->start_mark.line + 1;
		parse_value(c, vn, &sec->keys[i], base, key_path);
	}
	for (size_t i = 0; i < nkeys; i++) {
		if ((sec->keys[i].flags & GI_KEY_REQUIRED) && !first_line[i]) {
			join(key_path, sizeof(key_path), path, sec->keys[i].name);
			err_at(c, map->start_mark, key_path, "missing required key");
		}
	}
}

/* ---- cross-checks ---- */

/*
 * The node at a key path such as "ports[0].rx_queues[1].mempool", or the
 * deepest one that exists (a defaulted key points at its enclosing map).
 */
static yaml_node_t *node_at(struct gi_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static yaml_node_t *node_at(struct gi_ctx *c, const char *fmt, ...)
{
	char path[GI_PATH_BUF], *seg, *save = NULL;
	yaml_node_t *n = yaml_document_get_root_node(c->doc);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	for (seg = strtok_r(path, ".", &save); seg && n; seg = strtok_r(NULL, ".", &save)) {
		char *bracket = strchr(seg, '[');
		unsigned long idx = bracket ? strtoul(bracket + 1, NULL, 10) : 0;
		yaml_node_t *next = NULL;

		if (bracket)
			*bracket = '\0';
		if (n->type != YAML_MAPPING_NODE)
			break;
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *kn = yaml_document_get_node(c->doc, p->key);
			if (kn->type == YAML_SCALAR_NODE && strcmp((const char *)kn->data.scalar.value, seg) == 0) {
				next = yaml_document_get_node(c->doc, p->value);
				break;
			}
		}
		if (next && bracket) {
			if (next->type != YAML_SEQUENCE_NODE ||
			    idx >= (unsigned long)(next->data.sequence.items.top - next->data.sequence.items.start))
				break;
			next = yaml_document_get_node(c->doc, next->data.sequence.items.start[idx]);
		}
		if (!next)
			break;
		n = next;
	}
	return n;
}

static yaml_mark_t mark_of(yaml_node_t *n)
{
	yaml_mark_t zero = { 0, 0, 0 };

	return n ? n->start_mark : zero;
}

/* Names defined in a section, "a, b, c", for "(defined: …)" hints. */
static const char *list_names(const char *first, size_t stride, uint32_t count, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < count && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", first + i * stride);
	return count ? buf : "none";
}

static void check_unique(struct gi_ctx *c, const char *section, const char *first, size_t stride, uint32_t count)
{
	for (uint32_t i = 1; i < count; i++) {
		const char *name = first + i * stride;
		for (uint32_t j = 0; j < i; j++) {
			if (*name && strcmp(name, first + j * stride) == 0) {
				char path[GI_PATH_BUF];
				fmt_path(path, sizeof(path), "%s[%u].name", section, i);
				err_at(c, mark_of(node_at(c, "%s", path)), path, "duplicate name '%s' (first at line %zu)",
				       name, mark_of(node_at(c, "%s[%u].name", section, j)).line + 1);
				break;
			}
		}
	}
}

static int find_name(const char *first, size_t stride, uint32_t count, const char *name)
{
	for (uint32_t i = 0; i < count; i++)
		if (strcmp(first + i * stride, name) == 0)
			return (int)i;
	return -1;
}

/* The header pool of a split queue: defined, and readable by the CPU that parses segment 0. */
static void check_split(struct gi_ctx *c, struct gi_config *cfg, uint32_t p, uint32_t q)
{
	struct gi_cfg_split *sp = &cfg->ports[p].queues[q].split;
	char path[GI_PATH_BUF], names[GI_PATH_MAX];

	sp->header_pool_index = -1;
	if (!sp->enabled || !sp->header_mempool[0])
		return; /* a missing header_mempool is reported by the walker */
	fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].split.header_mempool", p, q);
	sp->header_pool_index = find_name(cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools, sp->header_mempool);
	if (sp->header_pool_index < 0) {
		if (cfg->n_pools)
			err_at(c, mark_of(node_at(c, "%s", path)), path, "no memory pool named '%s' (defined: %s)",
			       sp->header_mempool,
			       list_names(cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools, names, sizeof(names)));
		return;
	}
	if (cfg->pools[sp->header_pool_index].kind == GI_MEM_DEVICE)
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "memory pool '%s' is of kind device, but the CPU parses headers from segment 0 (allowed: a pool of "
		       "kind host or host_pinned)",
		       sp->header_mempool);
}

/* Does a comma-separated key=value devargs string set `key` to something other than 0? */
static bool devarg_on(const char *devargs, const char *key)
{
	size_t klen = strlen(key);

	for (const char *s = devargs; *s;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		if (n > klen && strncmp(s, key, klen) == 0 && s[klen] == '=')
			return !(n == klen + 2 && s[klen + 1] == '0');
		s += n + (end != NULL);
	}
	return false;
}

/*
 * mlx5 multi-packet RQ (mprq_en=1) receives into strides of its own host
 * buffers and attaches or copies them into mbufs: with a device pool the
 * packet bytes would not land in GPU memory.
 */
static void check_mprq(struct gi_ctx *c, const struct gi_config *cfg, uint32_t p)
{
	const struct gi_cfg_port *port = &cfg->ports[p];
	char path[GI_PATH_BUF];

	if (!devarg_on(port->devargs, "mprq_en"))
		return;
	for (uint32_t q = 0; q < port->n_queues; q++) {
		int pi = port->queues[q].pool_index;
		if (pi >= 0 && cfg->pools[pi].kind == GI_MEM_DEVICE) {
			fmt_path(path, sizeof(path), "ports[%u].devargs", p);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "mprq_en=1 (mlx5 multi-packet RQ) receives into host buffers of the driver's own, but "
			       "queue %u's pool '%s' is of kind device: packets would not land in GPU memory "
			       "(allowed: drop mprq_en, or use a host/host_pinned pool)",
			       q, cfg->pools[pi].name);
			return;
		}
	}
}

static void check_ports(struct gi_ctx *c, struct gi_config *cfg)
{
	char path[GI_PATH_BUF], names[GI_PATH_MAX];

	for (uint32_t p = 0; p < cfg->n_ports; p++) {
		struct gi_cfg_port *port = &cfg->ports[p];
		for (uint32_t q = 0; q < port->n_queues; q++) {
			struct gi_cfg_queue *rxq = &port->queues[q];
			fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].mempool", p, q);
			rxq->pool_index = find_name(cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools, rxq->mempool);
			/* no pools at all is reported already; don't repeat it per queue */
			if (rxq->pool_index < 0 && rxq->mempool[0] && cfg->n_pools)
				err_at(c, mark_of(node_at(c, "%s", path)), path, "no memory pool named '%s' (defined: %s)",
				       rxq->mempool,
				       list_names(cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools, names,
						  sizeof(names)));
			fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].lcore", p, q);
			if (rxq->lcore == cfg->main_lcore)
				err_at(c, mark_of(node_at(c, "%s", path)), path,
				       "lcore %u is eal.main_lcore (allowed: any other lcore; the main lcore runs the control loop)",
				       rxq->lcore);
			check_split(c, cfg, p, q);
			/* vdevs (memif, pcap, af_packet…) copy packets into mbufs with the CPU */
			if (rxq->pool_index >= 0 && cfg->pools[rxq->pool_index].kind == GI_MEM_DEVICE && !port->is_pci) {
				fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].mempool", p, q);
				err_at(c, mark_of(node_at(c, "%s", path)), path,
				       "pool '%s' is of kind device, but port %s is a vdev whose driver writes packets with "
				       "the CPU (allowed: host or host_pinned; device needs a PCI NIC with GPUDirect RDMA)",
				       rxq->mempool, port->name);
			}
		}
		check_mprq(c, cfg, p);
		if (port->flow_isolation && !port->flow_steering) {
			fmt_path(path, sizeof(path), "ports[%u].flow_isolation", p);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "isolation with flow_steering: false would drop every packet: isolated mode only delivers "
			       "what an rte_flow rule matches (allowed: false, or set flow_steering: true)");
		}
	}
}

/*
 * An explicit buf_size must hold headroom + frame of the largest MTU using
 * the pool, and headroom + header_bytes of every split queue taking its
 * header segment from it; one line per pool, naming the largest need.
 */
static void check_pools(struct gi_ctx *c, const struct gi_config *cfg)
{
	for (uint32_t i = 0; i < cfg->n_pools; i++) {
		const struct gi_cfg_port *worst = NULL;
		uint32_t hdr_need = 0, hdr_port = 0, hdr_queue = 0;

		for (uint32_t p = 0; p < cfg->n_ports; p++)
			for (uint32_t q = 0; q < cfg->ports[p].n_queues; q++) {
				const struct gi_cfg_queue *rxq = &cfg->ports[p].queues[q];
				if (rxq->pool_index == (int)i && (!worst || cfg->ports[p].mtu > worst->mtu))
					worst = &cfg->ports[p];
				if (rxq->split.enabled && rxq->split.header_pool_index == (int)i &&
				    GI_MBUF_HEADROOM + rxq->split.header_bytes > hdr_need) {
					hdr_need = GI_MBUF_HEADROOM + rxq->split.header_bytes;
					hdr_port = p;
					hdr_queue = q;
				}
			}
		if (!cfg->pools[i].buf_size)
			continue;
		uint32_t need = worst ? GI_MBUF_HEADROOM + worst->mtu + GI_ETH_OVERHEAD : 0;
		char path[GI_PATH_BUF];
		fmt_path(path, sizeof(path), "memory[%u].buf_size", i);
		if (cfg->pools[i].buf_size < need && need >= hdr_need)
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%u is too small for port %s (mtu %u): needs at least %u (%d headroom + mtu + %d)",
			       cfg->pools[i].buf_size, worst->name, worst->mtu, need, GI_MBUF_HEADROOM, GI_ETH_OVERHEAD);
		else if (cfg->pools[i].buf_size < hdr_need)
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%u is too small for the header segment of port %s queue %u: needs at least %u "
			       "(%d headroom + split.header_bytes %u)",
			       cfg->pools[i].buf_size, cfg->ports[hdr_port].name, hdr_queue, hdr_need, GI_MBUF_HEADROOM,
			       cfg->ports[hdr_port].queues[hdr_queue].split.header_bytes);
	}
}

static bool lcore_runs_queue(const struct gi_config *cfg, uint32_t lcore)
{
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		for (uint32_t q = 0; q < cfg->ports[p].n_queues; q++)
			if (cfg->ports[p].queues[q].lcore == lcore)
				return true;
	return false;
}

static void check_lcores(struct gi_ctx *c, const struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_lcores; i++) {
		const struct gi_cfg_lcore *l = &cfg->lcores[i];
		uint32_t j;

		if (l->id == GI_LCORE_UNSET)
			continue;
		fmt_path(path, sizeof(path), "lcores[%u].id", i);
		for (j = 0; j < i && cfg->lcores[j].id != l->id; j++)
			;
		if (j < i)
			err_at(c, mark_of(node_at(c, "%s", path)), path, "duplicate lcore %u (first at line %zu)", l->id,
			       mark_of(node_at(c, "lcores[%u].id", j)).line + 1);
		else if (!lcore_runs_queue(cfg, l->id))
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "lcore %u runs no rx queue (allowed: an lcore named by some ports[].rx_queues[].lcore)",
			       l->id);
	}
}

/*
 * May two streams match the same (port, UDP port)?  Only when their formats
 * tell their packets apart (gi_stream_match): vita49 streams by distinct
 * stream IDs, each one given.
 */
static bool streams_share_udp(const struct gi_cfg_stream *a, const struct gi_cfg_stream *b)
{
	if (a->format == GI_FORMAT_VITA49 && b->format == GI_FORMAT_VITA49)
		return a->vita49_stream_id >= 0 && b->vita49_stream_id >= 0 &&
		       a->vita49_stream_id != b->vita49_stream_id;
	/* rocev2 streams by destination QP; check_rocev2() reports a QP used twice */
	if (a->format == GI_FORMAT_ROCEV2 && b->format == GI_FORMAT_ROCEV2)
		return true;
	return false;
}

/*
 * frame.packets and frame.bytes: a frame is `packets` packets of
 * payload_bytes, the last of which may be shorter (frame.bytes not a
 * multiple of payload_bytes: cameras, most sensors).  Either key gives the
 * other; both must agree.
 */
static void check_frame_geometry(struct gi_ctx *c, struct gi_cfg_stream *s, uint32_t i)
{
	char path[GI_PATH_BUF];
	uint64_t pb = s->payload_bytes;

	if (!pb)
		return; /* missing: reported already */
	if (!s->frame_packets && !s->frame_bytes) {
		yaml_node_t *f = node_at(c, "streams[%u].frame", i);
		fmt_path(path, sizeof(path), "streams[%u].frame.packets", i);
		if (f && f != node_at(c, "streams[%u]", i))
			err_at(c, mark_of(f), path, "missing required key (allowed: 1..65535, or give frame.bytes)");
		return;
	}
	if (!s->frame_bytes) {
		s->frame_bytes = s->frame_packets * pb;
		return;
	}
	uint64_t packets = (s->frame_bytes + pb - 1) / pb;
	fmt_path(path, sizeof(path), "streams[%u].frame.bytes", i);
	if (packets > GI_FRAME_MAX_PACKETS) {
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "%" PRIu64 " bytes take %" PRIu64 " packets of payload_bytes %" PRIu64 ", more than a frame holds "
		       "(allowed: 1..%" PRIu64 ")", s->frame_bytes, packets, pb, pb * GI_FRAME_MAX_PACKETS);
	} else if (s->frame_packets && s->frame_packets != packets) {
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "%" PRIu64 " bytes are %" PRIu64 " packets of payload_bytes %" PRIu64 ", not frame.packets %u "
		       "(allowed: %" PRIu64 "..%" PRIu64 ", or leave out frame.packets)", s->frame_bytes, packets, pb,
		       s->frame_packets, (s->frame_packets - 1) * pb + 1, s->frame_packets * pb);
	} else {
		s->frame_packets = (uint32_t)packets;
	}
}

static void check_streams(struct gi_ctx *c, struct gi_config *cfg)
{
	char path[GI_PATH_BUF], names[GI_PATH_MAX];

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		struct gi_cfg_stream *s = &cfg->streams[i];

		check_frame_geometry(c, s, i);

		if (s->shm[0] == '\0')
			snprintf(s->shm, sizeof(s->shm), "/gpuingest-%s", s->name);
		s->port_index = find_name(cfg->ports[0].name, sizeof(cfg->ports[0]), cfg->n_ports, s->port);
		fmt_path(path, sizeof(path), "streams[%u].port", i);
		if (s->port_index < 0 && s->port[0] && cfg->n_ports)
			err_at(c, mark_of(node_at(c, "%s", path)), path, "no port named '%s' (defined: %s)", s->port,
			       list_names(cfg->ports[0].name, sizeof(cfg->ports[0]), cfg->n_ports, names, sizeof(names)));
		/* match.udp_dst_port: rocev2 defaults to 4791, every other format names it */
		if (!s->udp_dst_port && s->format == GI_FORMAT_ROCEV2) {
			s->udp_dst_port = GI_ROCEV2_UDP_PORT;
		} else if (!s->udp_dst_port) {
			yaml_node_t *m = node_at(c, "streams[%u].match", i);
			fmt_path(path, sizeof(path), "streams[%u].match.udp_dst_port", i);
			/* reported already: no match: at all, or a udp_dst_port out of range */
			if (m && m != node_at(c, "streams[%u]", i) && node_at(c, "%s", path) == m)
				err_at(c, mark_of(m), path, "missing required key (allowed: 1..65535; format rocev2 "
				       "defaults to 4791)");
		}
		if (s->port_index >= 0 && s->udp_dst_port) {
			for (uint32_t j = 0; j < i; j++) {
				if (cfg->streams[j].port_index == s->port_index && cfg->streams[j].udp_dst_port == s->udp_dst_port &&
				    !streams_share_udp(&cfg->streams[j], s)) {
					fmt_path(path, sizeof(path), "streams[%u].match.udp_dst_port", i);
					err_at(c, mark_of(node_at(c, "%s", path)), path,
					       "udp port %u on port %s is already matched by stream '%s' (line %d)",
					       s->udp_dst_port, s->port, cfg->streams[j].name, cfg->streams[j].line);
					break;
				}
			}
		}
		/* rocev2 and custom have exact checks of their own (check_rocev2(), the custom map);
		 * a VITA 49 prologue plus trailer is at most udp_seq's 32 bytes */
		if (s->port_index >= 0 && s->payload_bytes &&
		    (s->format == GI_FORMAT_UDP_SEQ || s->format == GI_FORMAT_VITA49) &&
		    s->payload_bytes + GI_IPV4_UDP_HDR_LEN + GI_UDP_SEQ_HDR_LEN > cfg->ports[s->port_index].mtu) {
			fmt_path(path, sizeof(path), "streams[%u].frame.payload_bytes", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%u does not fit port %s's mtu %u (allowed: 1..%d: mtu - 20 IPv4 - 8 UDP - %u %s)",
			       s->payload_bytes, s->port, cfg->ports[s->port_index].mtu,
			       (int)cfg->ports[s->port_index].mtu - GI_IPV4_UDP_HDR_LEN - (int)GI_UDP_SEQ_HDR_LEN,
			       GI_UDP_SEQ_HDR_LEN, s->format == GI_FORMAT_VITA49 ? "VITA 49 header words" : "udp_seq");
		}
		if (s->port_index >= 0 && s->queue >= cfg->ports[s->port_index].n_queues) {
			fmt_path(path, sizeof(path), "streams[%u].queue", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "stream %s: %u is not an rx queue of port %s, which has %u (allowed: 0..%u)", s->name, s->queue,
			       s->port, cfg->ports[s->port_index].n_queues, cfg->ports[s->port_index].n_queues - 1);
		}
		if (s->reorder_window >= s->ring_slots) {
			fmt_path(path, sizeof(path), "streams[%u].reorder_window", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%u must be less than ring.slots (allowed: 1..%u)", s->reorder_window, s->ring_slots - 1);
		}
	}
}

/*
 * vita49's keys belong to vita49 streams; a VRT payload is whole 32-bit
 * words.  (The MTU check of check_streams() already holds for VRT: its
 * largest prologue plus trailer, 8 words, is udp_seq's 32 bytes.)
 */

/* A format-specific key on a stream of another format: one error at the key. */
static void err_wrong_format(struct gi_ctx *c, uint32_t i, const char *key, const struct gi_cfg_stream *s,
			     const char *format)
{
	char path[GI_PATH_BUF];
	fmt_path(path, sizeof(path), "streams[%u].%s", i, key);
	err_at(c, mark_of(node_at(c, "%s", path)), path,
	       "only for format %s (stream %s is %s; allowed: remove it or set format: %s)", format, s->name,
	       gi_format_name(s->format), format);
}

static void check_vita49(struct gi_ctx *c, const struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		const struct gi_cfg_stream *s = &cfg->streams[i];

		if (s->format != GI_FORMAT_VITA49) {
			if (s->vita49_stream_id >= 0)
				err_wrong_format(c, i, "match.stream_id", s, "vita49");
			if (s->vita49.given)
				err_wrong_format(c, i, "vita49", s, "vita49");
			continue;
		}
		if (s->payload_bytes % 4) {
			fmt_path(path, sizeof(path), "streams[%u].frame.payload_bytes", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%u is not a whole number of 32-bit VRT words (allowed: a multiple of 4)", s->payload_bytes);
		} else if (s->frame_bytes % 4) {
			fmt_path(path, sizeof(path), "streams[%u].frame.bytes", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%" PRIu64 " leaves a last packet that is not a whole number of 32-bit VRT words (allowed: a "
			       "multiple of 4)", s->frame_bytes);
		}
		/* streams sharing a UDP port share its rte_flow rule, hence its queue */
		for (uint32_t j = 0; j < i; j++) {
			const struct gi_cfg_stream *o = &cfg->streams[j];
			if (o->format != GI_FORMAT_VITA49 || o->port_index != s->port_index || s->port_index < 0 ||
			    o->udp_dst_port != s->udp_dst_port || o->queue == s->queue)
				continue;
			fmt_path(path, sizeof(path), "streams[%u].queue", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%u differs from queue %u of stream '%s' (line %d), which shares port %s udp %u: one "
			       "rte_flow rule steers that UDP port (allowed: %u)",
			       s->queue, o->queue, o->name, o->line, s->port, s->udp_dst_port, o->queue);
			break;
		}
	}
}

/* ---- format rocev2 (kernels/fmt_rocev2.h) ---- */

/*
 * rocev2's keys belong to rocev2 streams; each needs a destination QP,
 * unique among the rocev2 streams of its (port, UDP port); streams sharing
 * a UDP port share its rte_flow rule, hence its queue; and the payload plus
 * IPv4, UDP, the largest header set (BTH + RETH + ImmDt), pad and ICRC must
 * fit the MTU.
 */
/* One error at streams[i].rocev2.KEY (or the stream when the key is absent). */
static void err_rocev2(struct gi_ctx *c, uint32_t i, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void err_rocev2(struct gi_ctx *c, uint32_t i, const char *key, const char *fmt, ...)
{
	char path[GI_PATH_BUF], msg[512];
	va_list ap;

	fmt_path(path, sizeof(path), "streams[%u].%s", i, key);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err_at(c, mark_of(node_at(c, "%s", path)), path, "%s", msg);
}

/*
 * Placement by VA (rocev2.placement: va) and the Holoscan Sensor Bridge
 * profile: pages hold a frame (and HSB's record after it, at
 * roundup(frame bytes, 128)); the profile needs VA placement and frames
 * closed by the WRITE with immediate; a frame-end packet of its own takes
 * a frame slot's last bit; an embedded record must fit the MTU.
 */
static void check_rocev2_va(struct gi_ctx *c, struct gi_cfg_stream *s, uint32_t i, const struct gi_config *cfg)
{
	struct gi_cfg_rocev2 *r = &s->rocev2;
	int hsb = r->profile == GI_ROCEV2_PROFILE_HSB;
	uint64_t need = hsb ? gi_hsb_align(s->frame_bytes) + GI_HSB_META_BYTES : s->frame_bytes;

	if (r->placement != GI_ROCEV2_PLACE_VA) {
		if (r->page_bytes)
			err_rocev2(c, i, "rocev2.page_bytes", "only with rocev2.placement: va (allowed: remove it, or set "
				   "placement: va)");
		if (r->pages)
			err_rocev2(c, i, "rocev2.pages", "only with rocev2.placement: va (allowed: remove it, or set "
				   "placement: va)");
		if (hsb)
			err_rocev2(c, i, "rocev2.profile", "hsb places every packet by its RETH virtual address "
				   "(allowed: set rocev2.placement: va)");
	} else if (!r->page_bytes) {
		r->page_bytes = need; /* HSB's own host: page_inc = roundup(frame bytes, 128) + 128 */
	} else if (s->frame_bytes && r->page_bytes < need) {
		err_rocev2(c, i, "rocev2.page_bytes", "%" PRIu64 " does not hold a frame of %" PRIu64 " bytes%s "
			   "(allowed: %" PRIu64 " or more)", r->page_bytes, s->frame_bytes,
			   hsb ? " and HSB's 128-byte record after it at a 128-byte boundary" : "", need);
	}
	if (!hsb) {
		if (node_at(c, "streams[%u].rocev2.frame_end", i) != node_at(c, "streams[%u].rocev2", i))
			err_rocev2(c, i, "rocev2.frame_end", "only with rocev2.profile: hsb (allowed: remove it)");
		if (r->frame_crc == GI_ROCEV2_ICRC_VERIFY)
			err_rocev2(c, i, "rocev2.frame_crc", "verify needs the sender's CRC: only with rocev2.profile: hsb "
				   "(allowed: ignore)");
		return;
	}
	if (r->close_on != GI_ROCEV2_CLOSE_IMM)
		err_rocev2(c, i, "rocev2.close_on", "profile hsb ends a frame with its WRITE with immediate (allowed: imm)");
	if (r->frame_end == GI_ROCEV2_END_PACKET && s->frame_packets >= GI_FRAME_MAX_PACKETS)
		err_rocev2(c, i, "frame.bytes", "%u packets and HSB's frame-end packet do not fit a frame slot "
			   "(allowed: at most %u packets)", s->frame_packets, GI_FRAME_MAX_PACKETS - 1);
	uint64_t last = s->frame_bytes - (uint64_t)(s->frame_packets ? s->frame_packets - 1 : 0) * s->payload_bytes;
	uint64_t over = GI_IPV4_UDP_HDR_LEN + GI_ROCEV2_MAX_HDR_LEN + GI_ROCEV2_ICRC_LEN;
	if (r->frame_end == GI_ROCEV2_END_EMBEDDED && s->port_index >= 0 && s->frame_bytes &&
	    gi_hsb_align(last) + GI_HSB_META_BYTES + over > cfg->ports[s->port_index].mtu)
		err_rocev2(c, i, "rocev2.frame_end", "the last packet, %" PRIu64 " bytes padded to %" PRIu64 " plus the "
			   "128-byte record, does not fit port %s's mtu %u (allowed: packet)", last, gi_hsb_align(last),
			   s->port, cfg->ports[s->port_index].mtu);
}

static void check_rocev2(struct gi_ctx *c, struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		struct gi_cfg_stream *s = &cfg->streams[i];

		if (s->format != GI_FORMAT_ROCEV2) {
			if (s->rocev2_dst_qp != UINT32_MAX)
				err_wrong_format(c, i, "match.dst_qp", s, "rocev2");
			if (s->rocev2.given)
				err_wrong_format(c, i, "rocev2", s, "rocev2");
			continue;
		}
		if (s->rocev2_dst_qp == UINT32_MAX) {
			yaml_node_t *m = node_at(c, "streams[%u].match", i);
			fmt_path(path, sizeof(path), "streams[%u].match.dst_qp", i);
			if (m && m != node_at(c, "streams[%u]", i) && node_at(c, "%s", path) == m)
				err_at(c, mark_of(m), path, "missing required key for format rocev2 (allowed: 0..16777215)");
		}
		for (uint32_t j = 0; j < i; j++) {
			const struct gi_cfg_stream *o = &cfg->streams[j];
			if (o->format != GI_FORMAT_ROCEV2 || o->port_index != s->port_index || s->port_index < 0 ||
			    o->udp_dst_port != s->udp_dst_port)
				continue;
			if (o->rocev2_dst_qp == s->rocev2_dst_qp && s->rocev2_dst_qp != UINT32_MAX) {
				fmt_path(path, sizeof(path), "streams[%u].match.dst_qp", i);
				err_at(c, mark_of(node_at(c, "%s", path)), path,
				       "QP %u on port %s udp %u is already matched by stream '%s' (line %d)", s->rocev2_dst_qp,
				       s->port, s->udp_dst_port, o->name, o->line);
				break;
			}
			if (o->queue != s->queue) {
				fmt_path(path, sizeof(path), "streams[%u].queue", i);
				err_at(c, mark_of(node_at(c, "%s", path)), path,
				       "%u differs from queue %u of stream '%s' (line %d), which shares port %s udp %u: one "
				       "rte_flow rule steers that UDP port (allowed: %u)",
				       s->queue, o->queue, o->name, o->line, s->port, s->udp_dst_port, o->queue);
				break;
			}
		}
		uint32_t over = GI_IPV4_UDP_HDR_LEN + GI_ROCEV2_MAX_HDR_LEN + GI_ROCEV2_ICRC_LEN;
		uint32_t padded = (s->payload_bytes + 3u) & ~3u;
		if (s->port_index >= 0 && s->payload_bytes && padded + over > cfg->ports[s->port_index].mtu) {
			uint32_t mtu = cfg->ports[s->port_index].mtu;
			fmt_path(path, sizeof(path), "streams[%u].frame.payload_bytes", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%u does not fit port %s's mtu %u (allowed: 1..%d: mtu - 20 IPv4 - 8 UDP - 12 BTH - 16 RETH - "
			       "4 ImmDt - 4 ICRC, rounded down to 4 bytes)",
			       s->payload_bytes, s->port, mtu, mtu > over ? (int)((mtu - over) & ~3u) : 0);
		}
		check_rocev2_va(c, s, i, cfg);
	}
}

/* ---- format custom: the header map (kernels/fmt_custom.h) ---- */

/* One field of a custom map: inside the header, a mask that fits and is one run, a useful shift. */
static void check_custom_field(struct gi_ctx *c, const struct gi_cfg_stream *s, uint32_t i, uint32_t k)
{
	static const char *const names[] = GI_CUSTOM_FIELD_NAMES;
	const struct gi_custom_field *f = &s->custom.map.f[k];
	uint32_t hdr = s->custom.map.header_bytes;
	uint64_t full = gi_custom_full_mask(f->width), mask = f->mask ? f->mask : full;
	char path[GI_PATH_BUF];

	if (f->offset + f->width > hdr) {
		fmt_path(path, sizeof(path), "streams[%u].custom.%s.offset", i, names[k]);
		if (hdr >= f->width)
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "bytes %u..%u end past header_bytes %u (allowed: 0..%u for a %u-byte field)", f->offset,
			       f->offset + f->width - 1, hdr, hdr - f->width, f->width);
		else
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "a %u-byte field does not fit header_bytes %u (allowed: header_bytes of at least %u)",
			       f->width, hdr, f->offset + f->width);
		return;
	}
	fmt_path(path, sizeof(path), "streams[%u].custom.%s.mask", i, names[k]);
	if (mask & ~full) {
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "0x%" PRIx64 " has bits outside the %u-byte field (allowed: 0x1..0x%" PRIx64 ")", mask, f->width,
		       full);
		return;
	}
	uint64_t run = mask >> __builtin_ctzll(mask);
	if (run & (run + 1)) {
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "0x%" PRIx64 " is not one contiguous run of ones (allowed: a mask such as 0xffff or 0x0ff0)", mask);
		return;
	}
	int lo = __builtin_ctzll(mask), hi = 64 - __builtin_clzll(mask);
	int bits = gi_custom_value_bits(mask, f->shift);
	if (bits <= 0) {
		fmt_path(path, sizeof(path), "streams[%u].custom.%s.shift", i, names[k]);
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "%u %s (allowed: %d..%d for mask 0x%" PRIx64 ")", f->shift,
		       bits < 0 ? "leaves the value's low bits always zero" : "shifts out every bit of the mask", lo,
		       hi - 1, mask);
		return;
	}
	if ((k == GI_CUSTOM_SEQ || k == GI_CUSTOM_FRAME) && bits < 4) {
		fmt_path(path, sizeof(path), "streams[%u].custom.%s.%s", i, names[k],
			 f->shift ? "shift" : f->mask ? "mask" : "width");
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "leaves a %d-bit counter (allowed: mask and shift that keep at least 4 bits)", bits);
	}
}

/* Port MTU, split header segments, and the map as a whole. */
static void check_custom_stream(struct gi_ctx *c, const struct gi_config *cfg, struct gi_cfg_stream *s, uint32_t i)
{
	struct gi_fmt_custom_params *m = &s->custom.map;
	char path[GI_PATH_BUF];

	if (m->payload_offset == UINT32_MAX)
		m->payload_offset = m->header_bytes;
	if (!m->header_bytes || !m->f[GI_CUSTOM_SEQ].width)
		return; /* missing keys are reported by the walker */
	for (uint32_t k = 0; k < GI_CUSTOM__FIELDS; k++)
		if (m->f[k].width)
			check_custom_field(c, s, i, k);
	if (m->f[GI_CUSTOM_INDEX].width && !m->f[GI_CUSTOM_FRAME].width) {
		fmt_path(path, sizeof(path), "streams[%u].custom.index", i);
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "needs frame: an index places a packet within the sender's frame (allowed: add custom.frame, or "
		       "leave index out and frames follow from seq)");
	}
	uint64_t seq_mask = m->f[GI_CUSTOM_SEQ].mask ? m->f[GI_CUSTOM_SEQ].mask
						      : gi_custom_full_mask(m->f[GI_CUSTOM_SEQ].width);
	int seq_bits = gi_custom_value_bits(seq_mask, m->f[GI_CUSTOM_SEQ].shift);
	if (m->f[GI_CUSTOM_FRAME].width && !m->f[GI_CUSTOM_INDEX].width && s->frame_packets &&
	    ((s->frame_packets & (s->frame_packets - 1)) ||
	     (seq_bits > 0 && seq_bits < 32 && s->frame_packets > (1u << seq_bits)))) {
		fmt_path(path, sizeof(path), "streams[%u].custom.frame", i);
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "without custom.index a packet's index is seq %% frame.packets, which needs frame.packets (%u) to "
		       "be a power of two no larger than the seq counter's range (allowed: add custom.index)",
		       s->frame_packets);
	}
	uint32_t udp_len = m->payload_offset + s->payload_bytes + m->trailer_bytes;
	if (s->payload_bytes && m->header_bytes > udp_len) {
		fmt_path(path, sizeof(path), "streams[%u].custom.header_bytes", i);
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "%u is longer than the packet: payload_offset %u + frame.payload_bytes %u + trailer_bytes %u = %u "
		       "(allowed: 1..%u)",
		       m->header_bytes, m->payload_offset, s->payload_bytes, m->trailer_bytes, udp_len, udp_len);
	}
	if (s->port_index < 0 || !s->payload_bytes)
		return;
	const struct gi_cfg_port *port = &cfg->ports[s->port_index];
	if (udp_len + GI_IPV4_UDP_HDR_LEN > port->mtu) {
		fmt_path(path, sizeof(path), "streams[%u].custom", i);
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "packets of %u UDP payload bytes (payload_offset %u + frame.payload_bytes %u + trailer_bytes %u) do "
		       "not fit port %s's mtu %u (allowed: up to %u: mtu - 20 IPv4 - 8 UDP)",
		       udp_len, m->payload_offset, s->payload_bytes, m->trailer_bytes, port->name, port->mtu,
		       port->mtu - GI_IPV4_UDP_HDR_LEN);
	}
	for (uint32_t q = 0; q < port->n_queues; q++) {
		const struct gi_cfg_split *sp = &port->queues[q].split;
		uint32_t need = 14u + 4u + 20u + 8u + m->header_bytes;
		if (!sp->enabled || sp->header_bytes >= need)
			continue;
		fmt_path(path, sizeof(path), "streams[%u].custom.header_bytes", i);
		err_at(c, mark_of(node_at(c, "%s", path)), path,
		       "%u does not fit segment 0 of port %s queue %u (split.header_bytes %u holds 14 Ethernet + 4 VLAN + "
		       "20 IPv4 + 8 UDP + up to %d; allowed: 1..%d there)",
		       m->header_bytes, port->name, q, sp->header_bytes, (int)sp->header_bytes - 46,
		       (int)sp->header_bytes - 46);
		break;
	}
}

/* custom: is required with format custom and allowed with it only. */
static void check_custom(struct gi_ctx *c, struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		struct gi_cfg_stream *s = &cfg->streams[i];

		if (s->format == GI_FORMAT_CUSTOM && !s->custom.given) {
			fmt_path(path, sizeof(path), "streams[%u].format", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "custom needs a custom: map describing the sensor's header (required: custom.header_bytes, "
			       "custom.seq)");
		} else if (s->format != GI_FORMAT_CUSTOM && s->custom.given) {
			fmt_path(path, sizeof(path), "streams[%u].custom", i);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "only allowed with format: custom (this stream's format is %s)", gi_format_name(s->format));
		} else if (s->custom.given) {
			check_custom_stream(c, cfg, s, i);
		}
	}
}

/*
 * Every stream's headers must lie in segment 0 of every split queue of its
 * port (without steering, or with RSS, a stream may arrive on any of them):
 * the CPU and the kernels parse headers from segment 0 only.  One line per
 * queue, naming the first stream that does not fit.
 */
static void check_split_headers(struct gi_ctx *c, const struct gi_config *cfg)
{
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		for (uint32_t q = 0; q < cfg->ports[p].n_queues; q++) {
			const struct gi_cfg_split *sp = &cfg->ports[p].queues[q].split;
			const struct gi_cfg_stream *first = NULL;
			unsigned more = 0;

			if (!sp->enabled || sp->header_bytes >= GI_SPLIT_MIN_HEADER_BYTES)
				continue;
			for (uint32_t i = 0; i < cfg->n_streams; i++)
				if (cfg->streams[i].port_index == (int)p) {
					if (first)
						more++;
					else
						first = &cfg->streams[i];
				}
			if (!first)
				continue;
			char path[GI_PATH_BUF], others[64] = "";
			if (more)
				snprintf(others, sizeof(others), " (and %u more stream%s)", more, more == 1 ? "" : "s");
			fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].split.header_bytes", p, q);
			err_at(c, mark_of(node_at(c, "%s", path)), path,
			       "%u bytes cannot hold the headers of stream %s%s on queue %u: needs at least %u "
			       "(14 Ethernet + 4 VLAN + 20 IPv4 + 8 UDP + %u udp_seq; allowed: %u..1024)",
			       sp->header_bytes, first->name, others, q, GI_SPLIT_MIN_HEADER_BYTES, GI_UDP_SEQ_HDR_LEN,
			       GI_SPLIT_MIN_HEADER_BYTES);
		}
}

/* 0000:03:00.0 or 03:00.0 */
static bool is_pci_address(const char *s)
{
	const char *pat = strlen(s) == 12 ? "hhhh:hh:hh.d" : "hh:hh.d";

	if (strlen(s) != strlen(pat))
		return false;
	for (; *pat; pat++, s++) {
		if ((*pat == 'h' && !isxdigit((unsigned char)*s)) || (*pat == 'd' && (*s < '0' || *s > '7')) ||
		    (*pat != 'h' && *pat != 'd' && *pat != *s))
			return false;
	}
	return true;
}

/* executor: modes and pipelines that belong to the other backend */
static void check_executor(struct gi_ctx *c, const struct gi_config *cfg)
{
	const struct gi_cfg_executor *e = &cfg->executor;
	bool gpu = e->backend == GI_BACKEND_CUDA || e->backend == GI_BACKEND_GPUDEV;

	if (e->threads_per_ring % 32)
		err_at(c, mark_of(node_at(c, "executor.threads_per_ring")), "executor.threads_per_ring",
		       "%u is not a whole number of warps (allowed: a multiple of 32 in [32, %u])", e->threads_per_ring,
		       GI_EXEC_MAX_CTA);
	if (gpu && (e->mode == GI_EXEC_THREADS || e->mode == GI_EXEC_INLINE))
		err_at(c, mark_of(node_at(c, "executor.mode")), "executor.mode",
		       "'%s' runs the executor on CPU threads, but backend %s runs it on the GPU (allowed with a GPU "
		       "backend: auto, persistent, launch)",
		       enum_name(exec_modes, e->mode), enum_name(backends, e->backend));
	if (gpu && e->pipeline == GI_PIPE_SERIAL)
		err_at(c, mark_of(node_at(c, "executor.pipeline")), "executor.pipeline",
		       "'serial' is the host executor's reference path; backend %s runs the phased kernels (allowed "
		       "with a GPU backend: phased)",
		       enum_name(backends, e->backend));
	if (e->backend == GI_BACKEND_HOST && (e->mode == GI_EXEC_PERSISTENT || e->mode == GI_EXEC_LAUNCH))
		err_at(c, mark_of(node_at(c, "executor.mode")), "executor.mode",
		       "'%s' describes how GPU kernels run; backend host runs threads (allowed with backend host: "
		       "auto, threads, inline)",
		       enum_name(exec_modes, e->mode));
}

static void cross_check(struct gi_ctx *c, struct gi_config *cfg)
{
	check_unique(c, "memory", cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools);
	check_unique(c, "ports", cfg->ports[0].name, sizeof(cfg->ports[0]), cfg->n_ports);
	check_unique(c, "streams", cfg->streams[0].name, sizeof(cfg->streams[0]), cfg->n_streams);
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		cfg->ports[p].is_pci = is_pci_address(cfg->ports[p].device);
	check_ports(c, cfg);
	check_pools(c, cfg);
	check_lcores(c, cfg);
	check_executor(c, cfg);
	check_streams(c, cfg);
	check_vita49(c, cfg);
	check_custom(c, cfg);
	check_rocev2(c, cfg);
	check_split_headers(c, cfg);
}

/* ---- entry points ---- */

static void syntax_error(struct gi_ctx *c, const yaml_parser_t *parser)
{
	yaml_mark_t m = parser->problem_mark;

	c->n_errors++;
	if (!c->errf)
		return;
	if (parser->context)
		fprintf(c->errf, "%s:%zu:%zu: YAML syntax error: %s %s (from line %zu)\n", c->file, m.line + 1, m.column + 1,
			parser->problem ? parser->problem : "?", parser->context, parser->context_mark.line + 1);
	else
		fprintf(c->errf, "%s:%zu:%zu: YAML syntax error: %s\n", c->file, m.line + 1, m.column + 1,
			parser->problem ? parser->problem : "?");
}

int gi_config_load_string(const char *name, const char *yaml, size_t len, struct gi_config *cfg, FILE *errf,
			  unsigned *n_errors)
{
	struct gi_ctx c = { .file = name, .errf = errf };
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;

	if (n_errors)
		*n_errors = 0;
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "%s", name);
	apply_defaults(&root_sec, (char *)cfg);

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &doc)) {
		syntax_error(&c, &parser);
		goto out_parser;
	}
	c.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		yaml_mark_t top = { 0, 0, 0 };
		err_at(&c, top, "", "the config is empty (required: memory, ports)");
	} else if (root->type != YAML_MAPPING_NODE) {
		err_at(&c, root->start_mark, "", "expected a map, got %s", node_kind(root));
	} else {
		parse_map(&c, root, &root_sec, (char *)cfg, "");
		cross_check(&c, cfg);
	}
	yaml_document_delete(&doc);

	/* a second document would be silently ignored: say so instead */
	if (root && !yaml_parser_load(&parser, &doc)) {
		syntax_error(&c, &parser);
	} else if (root) {
		yaml_node_t *extra = yaml_document_get_root_node(&doc);
		if (extra)
			err_at(&c, extra->start_mark, "", "only one YAML document is allowed");
		yaml_document_delete(&doc);
	}
out_parser:
	yaml_parser_delete(&parser);
	if (n_errors)
		*n_errors = c.n_errors;
	return c.n_errors ? -EINVAL : 0;
}

/* *mode: the opened file's st_mode, 0 when fstat failed */
static int read_file(const char *path, char **out, size_t *len, mode_t *mode)
{
	size_t cap = 0, n;
	char *buf = NULL, *grown;
	FILE *f = fopen(path, "r");
	struct stat st;
	int ret = 0;

	*len = 0;
	*mode = 0;
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) == 0)
		*mode = st.st_mode;
	do {
		if (*len == cap) {
			cap = cap ? cap * 2 : 16384;
			grown = realloc(buf, cap);
			if (!grown) {
				ret = -ENOMEM;
				break;
			}
			buf = grown;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n > 0);
	if (!ret && ferror(f))
		ret = errno ? -errno : -EIO;
	fclose(f);
	if (ret)
		free(buf);
	else
		*out = buf;
	return ret;
}

int gi_config_load(const char *path, struct gi_config *cfg, FILE *errf, unsigned *n_errors)
{
	char *buf = NULL;
	size_t len;
	mode_t mode;
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	errno = 0;
	ret = read_file(path, &buf, &len, &mode);
	/* whoever may write the config decides which memory and devices the
	 * daemon (root, or a user with CAP_IPC_LOCK/CAP_NET_RAW) uses; pipes
	 * and /dev/stdin are the caller's own business */
	if (!ret && S_ISREG(mode) && (mode & S_IWOTH)) {
		free(buf);
		if (errf)
			fprintf(errf, "%s: writable by others (mode %04o); refusing it: chmod o-w %s\n", path,
				(unsigned)(mode & 07777), path);
		if (n_errors)
			*n_errors = 1;
		return -EPERM;
	}
	/* group-writable: common under umask 002 checkouts; the group is trusted, say so once */
	if (!ret && S_ISREG(mode) && (mode & S_IWGRP) && errf)
		fprintf(errf, "%s: warning: writable by its group (mode %04o); chmod g-w %s if the group is not trusted\n",
			path, (unsigned)(mode & 07777), path);
	if (ret) {
		if (errf)
			fprintf(errf, "cannot read config %s: %s\n", path, strerror(-ret));
		if (n_errors)
			*n_errors = 1;
		return ret;
	}
	ret = gi_config_load_string(path, buf, len, cfg, errf, n_errors);
	free(buf);
	return ret;
}

/* ---- reload ---- */

static int64_t load_int(const void *p, size_t size)
{
	switch (size) {
	case 1: { uint8_t x; memcpy(&x, p, 1); return x; }
	case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
	case 4: { int32_t x; memcpy(&x, p, 4); return x; }
	default: { int64_t x; memcpy(&x, p, 8); return x; }
	}
}

static void key_value(const struct gi_key *k, const char *p, char *buf, size_t len)
{
	switch (k->type) {
	case GI_K_INT:
		if (k->flags & GI_KEY_HEX)
			snprintf(buf, len, "0x%" PRIx64, (uint64_t)load_int(p, k->size));
		else
			snprintf(buf, len, "%" PRId64, load_int(p, k->size));
		break;
	case GI_K_ENUM: snprintf(buf, len, "%s", enum_name(k->enums, (int)load_int(p, k->size))); break;
	case GI_K_BOOL: snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false"); break;
	default: snprintf(buf, len, "'%s'", p); break;
	}
}

static bool strlist_equal(const struct gi_key *k, const char *a, const char *b)
{
	uint32_t n = *(const uint32_t *)(a + k->count_off);
	char *const *sa = (char *const *)(a + k->off), *const *sb = (char *const *)(b + k->off);

	if (n != *(const uint32_t *)(b + k->count_off))
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(sa[i], sb[i]) != 0)
			return false;
	return true;
}

static void strlist_text(const struct gi_key *k, const char *base, char *buf, size_t len)
{
	uint32_t n = *(const uint32_t *)(base + k->count_off);
	char *const *sv = (char *const *)(base + k->off);
	size_t used = (size_t)snprintf(buf, len, "[");

	for (uint32_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", sv[i]);
	if (used < len)
		snprintf(buf + used, len - used, "]");
}

static unsigned diff_section(const struct gi_section *sec, const char *a, const char *b, const char *path,
			     const char *file, FILE *errf)
{
	char key_path[GI_PATH_BUF], va[GI_PATH_MAX], vb[GI_PATH_MAX];
	unsigned n = 0;

	for (const struct gi_key *k = sec->keys; k->name; k++) {
		const char *pa = a + k->off, *pb = b + k->off;
		bool same;

		join(key_path, sizeof(key_path), path, k->name);
		switch (k->type) {
		case GI_K_MAP:
			n += diff_section(k->sub, pa, pb, key_path, file, errf);
			continue;
		case GI_K_LIST: {
			uint32_t ca = *(const uint32_t *)(a + k->count_off), cb = *(const uint32_t *)(b + k->count_off);
			if (ca != cb && !(k->flags & GI_KEY_RELOAD)) {
				n++;
				if (errf)
					fprintf(errf, "%s: %s: number of items changed from %u to %u (needs a restart)\n", file,
						key_path, ca, cb);
			}
			for (uint32_t i = 0; i < ca && i < cb; i++) {
				char item_path[GI_PATH_BUF];
				fmt_path(item_path, sizeof(item_path), "%s[%u]", key_path, i);
				n += diff_section(k->sub, pa + i * k->size, pb + i * k->size, item_path, file, errf);
			}
			continue;
		}
		case GI_K_STRLIST:
			same = strlist_equal(k, a, b);
			strlist_text(k, a, va, sizeof(va));
			strlist_text(k, b, vb, sizeof(vb));
			break;
		case GI_K_STR:
		case GI_K_NAME:
			same = strcmp(pa, pb) == 0;
			break;
		default:
			same = memcmp(pa, pb, k->size) == 0;
			break;
		}
		if (same || (k->flags & GI_KEY_RELOAD))
			continue;
		n++;
		if (!errf)
			continue;
		if (k->type != GI_K_STRLIST) {
			key_value(k, pa, va, sizeof(va));
			key_value(k, pb, vb, sizeof(vb));
		}
		fprintf(errf, "%s: %s: changed from %s to %s (needs a restart)\n", file, key_path, va, vb);
	}
	return n;
}

unsigned gi_config_restart_needed(const struct gi_config *cur, const struct gi_config *next, FILE *errf)
{
	return diff_section(&root_sec, (const char *)cur, (const char *)next, "", next->path, errf);
}

void gi_config_free(struct gi_config *cfg)
{
	for (uint32_t i = 0; i < GI_MAX_EAL_ARGS; i++) {
		free(cfg->eal_args[i]);
		cfg->eal_args[i] = NULL;
	}
	cfg->n_eal_args = 0;
	for (uint32_t p = 0; p < GI_MAX_PORTS; p++) {
		for (uint32_t i = 0; i < GI_MAX_XSTATS; i++) {
			free(cfg->ports[p].xstats[i]);
			cfg->ports[p].xstats[i] = NULL;
		}
		cfg->ports[p].n_xstats = 0;
	}
}

enum gi_idle_policy gi_config_lcore_idle(const struct gi_config *cfg, uint32_t lcore)
{
	for (uint32_t i = 0; i < cfg->n_lcores; i++)
		if (cfg->lcores[i].id == lcore)
			return cfg->lcores[i].idle;
	return GI_IDLE_BUSY;
}
