/*
 * config_schema.c — the configuration's one table of keys: sections, keys,
 * types, bounds, defaults, enums and value checks
 * (config_internal.h lists the loader's files).
 */
#include "config_internal.h"

/* ---- enums ---- */

static const struct gi_enum_val log_levels[] = {
	{ "error", GI_LOG_ERR }, { "warning", GI_LOG_WARNING }, { "notice", GI_LOG_NOTICE },
	{ "info", GI_LOG_INFO }, { "debug", GI_LOG_DEBUG }, { NULL, 0 },
};
const struct gi_enum_val gi_cfg_backends[] = {
	{ "auto", GI_BACKEND_AUTO }, { "host", GI_BACKEND_HOST }, { "cuda", GI_BACKEND_CUDA },
	{ "gpudev", GI_BACKEND_GPUDEV }, { NULL, 0 },
};
const struct gi_enum_val gi_cfg_exec_modes[] = {
	{ "auto", GI_EXEC_AUTO }, { "persistent", GI_EXEC_PERSISTENT }, { "launch", GI_EXEC_LAUNCH },
	{ "threads", GI_EXEC_THREADS }, { "inline", GI_EXEC_INLINE }, { NULL, 0 },
};
static const struct gi_enum_val exec_pipelines[] = {
	{ "auto", GI_PIPE_AUTO }, { "phased", GI_PIPE_PHASED }, { "serial", GI_PIPE_SERIAL }, { NULL, 0 },
};
static const struct gi_enum_val idle_policies[] = {
	{ "busy", GI_IDLE_BUSY }, { "adaptive", GI_IDLE_ADAPTIVE }, { NULL, 0 },
};
static const struct gi_enum_val mem_kinds[] = {
	{ "host", GI_MEM_HOST }, { "host_pinned", GI_MEM_HOST_PINNED }, { "device", GI_MEM_DEVICE }, { NULL, 0 },
};
const struct gi_enum_val gi_cfg_formats[] = {
	{ "udp_seq", GI_FORMAT_UDP_SEQ }, { "rocev2", GI_FORMAT_ROCEV2 }, { "vita49", GI_FORMAT_VITA49 },
	{ "custom", GI_FORMAT_CUSTOM }, { NULL, 0 },
};

const char *gi_cfg_enum_name(const struct gi_enum_val *e, int v)
{
	for (; e->name; e++)
		if (e->value == v)
			return e->name;
	return "?";
}

/* gi_mem_kind_name() lives with the providers, in pmd_glue/mem.c */
const char *gi_backend_name(enum gi_backend b) { return gi_cfg_enum_name(gi_cfg_backends, (int)b); }
const char *gi_format_name(enum gi_format f) { return gi_cfg_enum_name(gi_cfg_formats, (int)f); }

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

/* A finite decimal number such as 1, -0.5, 3.0517578125e-05 (tensor.scale, tensor.offset). */
static int check_number(const char *s, char *msg, size_t len)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (*s && end != s && *end == '\0' && errno == 0 && isfinite(v) && !isspace((unsigned char)*s) &&
	    strpbrk(s, "xXnN") == NULL) /* no hex floats, inf or nan */
		return 0;
	snprintf(msg, len, "'%s' is not a finite decimal number (allowed: e.g. 1, -0.5, 3.0517578125e-05)", s);
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
	K_ENUM("backend", struct gi_cfg_executor, backend, gi_cfg_backends, GI_BACKEND_AUTO, 0),
	K_ENUM("mode", struct gi_cfg_executor, mode, gi_cfg_exec_modes, GI_EXEC_AUTO, 0),
	K_ENUM("pipeline", struct gi_cfg_executor, pipeline, exec_pipelines, GI_PIPE_AUTO, 0),
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
	K_BOOL("rx_timestamp", struct gi_cfg_port, rx_timestamp, false, 0),
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
/* vita49: (format vita49 only; gi_cfg_check_vita49() says so otherwise) */
static const struct gi_key vita49_keys[] = {
	K_INT("ts_step_ps", struct gi_cfg_vita49, ts_step_ps, 0, 1000000000000ll, 0, 0),
	K_END,
};
static const struct gi_section vita49_sec = { vita49_keys, 0 };
/* custom: (format custom only; gi_cfg_check_custom() says so otherwise), kernels/fmt_custom.h */
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
/* rocev2: (format rocev2 only; gi_cfg_check_rocev2() says so otherwise), kernels/fmt_rocev2.h */
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
	{ "auto", GI_ROCEV2_END_AUTO }, { "packet", GI_ROCEV2_END_PACKET }, { "embedded", GI_ROCEV2_END_EMBEDDED },
	{ NULL, 0 },
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
	K_ENUM("frame_end", struct gi_cfg_rocev2, frame_end, rocev2_frame_ends, GI_ROCEV2_END_AUTO, 0),
	K_INT("psn_bits", struct gi_cfg_rocev2, psn_bits, 2, 24, 24, 0),
	K_ENUM("frame_crc", struct gi_cfg_rocev2, frame_crc, rocev2_icrc_modes, GI_ROCEV2_ICRC_IGNORE, 0),
	K_END,
};
static const struct gi_section rocev2_sec = { rocev2_keys, 0 };
/* tensor: (optional), kernels/tensor.h; gi_cfg_check_tensor() checks the combination */
static const struct gi_enum_val tensor_samples[] = {
	{ "u8", GI_TS_U8 }, { "u16", GI_TS_U16 }, { "i16", GI_TS_I16 }, { "u32", GI_TS_U32 }, { "i32", GI_TS_I32 },
	{ "f32", GI_TS_F32 }, { "ci8", GI_TS_CI8 }, { "ci16", GI_TS_CI16 }, { "raw10", GI_TS_RAW10 },
	{ "raw12", GI_TS_RAW12 }, { NULL, 0 },
};
const struct gi_enum_val gi_cfg_tensor_tos[] = {
	{ "same", GI_DT_NONE }, { "f32", GI_DT_F32 }, { "f16", GI_DT_F16 }, { "bf16", GI_DT_BF16 },
	{ "u16", GI_DT_U16 }, { "cf32", GI_DT_CF32 }, { "cf16", GI_DT_CF16 }, { NULL, 0 },
};
static const struct gi_enum_val tensor_orders[] = { { "big", 1 }, { "little", 0 }, { NULL, 0 } };
static const struct gi_enum_val tensor_missing[] = {
	{ "zero", GI_TM_ZERO }, { "nan", GI_TM_NAN }, { "keep", GI_TM_KEEP }, { NULL, 0 },
};
static const struct gi_key tensor_keys[] = {
	K_ENUM("sample", struct gi_cfg_tensor, sample, tensor_samples, GI_TS_NONE, REQ),
	K_ENUM("byteorder", struct gi_cfg_tensor, big, tensor_orders, 1, 0),
	{ .name = "shape", .type = GI_K_INTLIST, .flags = REQ, .off = offsetof(struct gi_cfg_tensor, shape),
	  .size = FSIZE(struct gi_cfg_tensor, shape), .min = 1, .max = 1ll << 40,
	  .count_off = offsetof(struct gi_cfg_tensor, n_shape) },
	K_ENUM("to", struct gi_cfg_tensor, to, gi_cfg_tensor_tos, GI_DT_NONE, 0),
	K_STR("scale", struct gi_cfg_tensor, scale, "1", check_number, 0),
	K_STR("offset", struct gi_cfg_tensor, offset, "0", check_number, 0),
	K_ENUM("missing", struct gi_cfg_tensor, missing, tensor_missing, GI_TM_ZERO, 0),
	K_END,
};
static const struct gi_section tensor_sec = { tensor_keys, 0 };
static const struct gi_key stream_keys[] = {
	K_NAME("name", struct gi_cfg_stream, name, REQ),
	K_NAME("port", struct gi_cfg_stream, port, REQ),
	{ .name = "match", .type = GI_K_MAP, .flags = REQ, .sub = &match_sec },
	K_INT("queue", struct gi_cfg_stream, queue, 0, GI_MAX_QUEUES - 1, 0, 0),
	K_ENUM("format", struct gi_cfg_stream, format, gi_cfg_formats, GI_FORMAT_UDP_SEQ, 0),
	{ .name = "frame", .type = GI_K_MAP, .flags = REQ, .sub = &frame_sec },
	K_MAP("ring", 0, &ring_sec),
	K_INT("reorder_window", struct gi_cfg_stream, reorder_window, 1, 1024, 2, RELOAD),
	K_INT("resync_frames", struct gi_cfg_stream, resync_frames, 0, 1000000000, 1000, RELOAD),
	K_INT("frame_timeout_ms", struct gi_cfg_stream, frame_timeout_ms, 0, 60000, 1000, RELOAD),
	K_OPT_MAP("vita49", struct gi_cfg_stream, vita49, struct gi_cfg_vita49, given, &vita49_sec),
	K_OPT_MAP("custom", struct gi_cfg_stream, custom, struct gi_cfg_custom, given, &custom_sec),
	K_OPT_MAP("rocev2", struct gi_cfg_stream, rocev2, struct gi_cfg_rocev2, given, &rocev2_sec),
	K_OPT_MAP("tensor", struct gi_cfg_stream, tensor, struct gi_cfg_tensor, given, &tensor_sec),
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
const struct gi_section gi_cfg_root_sec = { root_keys, 0 };
