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
#include "config_internal.h"

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
	case GI_K_ENUM: snprintf(buf, len, "%s", gi_cfg_enum_name(k->enums, (int)load_int(p, k->size))); break;
	case GI_K_BOOL: snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false"); break;
	case GI_K_INTLIST: {
		size_t used = 0;
		for (size_t i = 0; i < k->size / sizeof(uint64_t) && used < len; i++) {
			uint64_t v;
			memcpy(&v, p + i * sizeof(v), sizeof(v));
			if (i && !v)
				break; /* past the list's items (0 is never one: min >= 1) */
			used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64, i ? ", " : "[", v);
		}
		if (used < len)
			snprintf(buf + used, len - used, "]");
		break;
	}
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

		gi_cfg_join(key_path, sizeof(key_path), path, k->name);
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
				gi_cfg_fmt_path(item_path, sizeof(item_path), "%s[%u]", key_path, i);
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
	return diff_section(&gi_cfg_root_sec, (const char *)cur, (const char *)next, "", next->path, errf);
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
