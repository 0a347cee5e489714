/*
 * config_internal.h — what the configuration loader's files share (not for
 * use outside daemon/config*.c).  The loader is one table of keys and one
 * walker, in four files a reader takes one at a time:
 *
 *   config_schema.c     the key table: every section, key, type, bound,
 *                       default, enum and value check (one table, as before)
 *   config_load.c       YAML → values: defaults, scalars, the walker with
 *                       line:col messages, the entry points
 *   config_check.c      cross-checks between sections (references, lcores,
 *                       pools, ports, streams, split, executor)
 *   config_check_fmt.c  the formats' own cross-checks (vita49, rocev2, custom)
 *   config.c            reload's key-by-key diff, free, small queries
 */
#ifndef GI_CONFIG_INTERNAL_H
#define GI_CONFIG_INTERNAL_H

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
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
	GI_K_INTLIST, /* list of decimal integers in [min >= 1, max]: uint64_t[size / 8] at off, count at count_off */
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

/* config_schema.c */
extern const struct gi_section gi_cfg_root_sec;
extern const struct gi_enum_val gi_cfg_backends[], gi_cfg_exec_modes[], gi_cfg_formats[], gi_cfg_tensor_tos[];
const char *gi_cfg_enum_name(const struct gi_enum_val *e, int v);

/* config_load.c: messages and paths */
void gi_cfg_err_at(struct gi_ctx *c, yaml_mark_t m, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
const char *gi_cfg_allowed(const struct gi_key *k, char *buf, size_t len);
void gi_cfg_fmt_path(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void gi_cfg_join(char *out, size_t len, const char *prefix, const char *name);

/* config_check.c */
void gi_cfg_cross_check(struct gi_ctx *c, struct gi_config *cfg);
yaml_node_t *gi_cfg_node_at(struct gi_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
yaml_mark_t gi_cfg_mark_of(yaml_node_t *n);

/* config_check_fmt.c */
void gi_cfg_check_vita49(struct gi_ctx *c, const struct gi_config *cfg);
void gi_cfg_check_rocev2(struct gi_ctx *c, struct gi_config *cfg);
void gi_cfg_check_custom(struct gi_ctx *c, struct gi_config *cfg);
void gi_cfg_check_tensor(struct gi_ctx *c, struct gi_config *cfg);

#endif /* GI_CONFIG_INTERNAL_H */
