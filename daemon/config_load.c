/*
 * config_load.c — YAML to struct gi_config: defaults, scalar parsing, the
 * walker and its FILE:LINE:COL messages, and the entry points
 * (config_internal.h lists the loader's files).
 */
#include "config_internal.h"

/* ---- messages ---- */

void gi_cfg_err_at(struct gi_ctx *c, yaml_mark_t m, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

void gi_cfg_err_at(struct gi_ctx *c, yaml_mark_t m, const char *path, const char *fmt, ...)
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
const char *gi_cfg_allowed(const struct gi_key *k, char *buf, size_t len)
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
	case GI_K_INTLIST:
		snprintf(buf, len, " (allowed: 1..%zu integers in %" PRId64 "..%" PRId64 ")", k->size / sizeof(uint64_t),
			 k->min, k->max);
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
	[GI_K_INTLIST] = "a list of integers",
};

/* Key paths are for messages: a long unknown key may be cut short, never overflow. */
void gi_cfg_fmt_path(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

void gi_cfg_fmt_path(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, len, fmt, ap);
	va_end(ap);
}

void gi_cfg_join(char *out, size_t len, const char *prefix, const char *name)
{
	gi_cfg_fmt_path(out, len, "%s%s%s", prefix, *prefix ? "." : "", name);
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
		case GI_K_INTLIST:
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

	gi_cfg_allowed(k, al, sizeof(al));
	if (strlen(s) != n->data.scalar.length) {
		gi_cfg_err_at(c, n->start_mark, path, "contains a NUL byte");
		return;
	}
	if (k->type != GI_K_STR && n->data.scalar.length == 0 && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		gi_cfg_err_at(c, n->start_mark, path, "missing value%s", al);
		return;
	}
	switch (k->type) {
	case GI_K_INT:
		if (k->flags & GI_KEY_HEX) {
			uint64_t u;
			if (!parse_uint_hex(s, &u))
				gi_cfg_err_at(c, n->start_mark, path, "'%s' is not a decimal or 0x hex integer%s", s, al);
			else if (u < (uint64_t)k->min || u > (uint64_t)k->max)
				gi_cfg_err_at(c, n->start_mark, path, "%s is out of range%s", s, al);
			else
				memcpy(p, &u, sizeof(u)); /* GI_KEY_HEX keys are 8 bytes */
			break;
		}
		if (!parse_int(s, &v))
			gi_cfg_err_at(c, n->start_mark, path, "'%s' is not a decimal integer%s", s, al);
		else if ((v < k->min || v > k->max) && !(v == 0 && (k->flags & GI_KEY_ZERO_OK)))
			gi_cfg_err_at(c, n->start_mark, path, "%s is out of range%s", s, al);
		else if ((k->flags & GI_KEY_POW2) && (v & (v - 1)))
			gi_cfg_err_at(c, n->start_mark, path, "%s is not a power of two%s", s, al);
		else
			store_int(p, k->size, v);
		break;
	case GI_K_BOOL:
		if (parse_bool(s, &b))
			*(bool *)p = b;
		else
			gi_cfg_err_at(c, n->start_mark, path, "'%s' is not a boolean%s", s, al);
		break;
	case GI_K_ENUM:
		for (const struct gi_enum_val *e = k->enums; e->name; e++) {
			if (strcmp(s, e->name) == 0) {
				store_int(p, k->size, e->value);
				return;
			}
		}
		gi_cfg_err_at(c, n->start_mark, path, "'%s' is not a valid value%s", s, al);
		break;
	case GI_K_NAME:
		if (valid_name(s))
			snprintf(p, k->size, "%s", s);
		else
			gi_cfg_err_at(c, n->start_mark, path, "'%s' is not a valid name%s", s, al);
		break;
	case GI_K_STR:
		/* the check first: it knows the limit in the key's own terms */
		if (k->check && k->check(s, why, sizeof(why)) < 0)
			gi_cfg_err_at(c, n->start_mark, path, "%s", why);
		else if (n->data.scalar.length >= k->size)
			gi_cfg_err_at(c, n->start_mark, path, "string is too long (allowed: up to %zu bytes)", k->size - 1);
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

	gi_cfg_allowed(k, al, sizeof(al));
	for (it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++, i++) {
		yaml_node_t *n = yaml_document_get_node(c->doc, *it);

		gi_cfg_fmt_path(item_path, sizeof(item_path), "%s[%u]", path, i);
		if (k->type == GI_K_INTLIST) {
			int64_t v;
			const char *sv = n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : "";
			if (i >= k->size / sizeof(uint64_t)) {
				gi_cfg_err_at(c, n->start_mark, item_path, "too many items%s", al);
				break;
			}
			if (n->type != YAML_SCALAR_NODE || !parse_int(sv, &v))
				gi_cfg_err_at(c, n->start_mark, item_path, "expected a decimal integer%s", al);
			else if (v < k->min || v > k->max)
				gi_cfg_err_at(c, n->start_mark, item_path, "%s is out of range%s", sv, al);
			else
				((uint64_t *)(base + k->off))[(*count)++] = (uint64_t)v;
			continue;
		}
		if (i >= k->max) {
			gi_cfg_err_at(c, n->start_mark, item_path, "too many items%s", al);
			break;
		}
		if (k->type == GI_K_STRLIST) {
			if (n->type != YAML_SCALAR_NODE) {
				gi_cfg_err_at(c, n->start_mark, item_path, "expected a string, got %s", node_kind(n));
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
			gi_cfg_err_at(c, n->start_mark, item_path, "expected a map, got %s", node_kind(n));
	}
	if (i < k->min)
		gi_cfg_err_at(c, seq->start_mark, path, "needs at least %" PRId64 " item%s%s", k->min, k->min == 1 ? "" : "s",
		       al);
}

static void parse_value(struct gi_ctx *c, yaml_node_t *n, const struct gi_key *k, char *base, const char *path)
{
	char al[GI_PATH_MAX];
	bool want_map = k->type == GI_K_MAP;
	bool want_seq = k->type == GI_K_LIST || k->type == GI_K_STRLIST || k->type == GI_K_INTLIST;

	if ((want_map || want_seq) && is_null(n)) {
		if (want_seq && k->min > 0)
			gi_cfg_err_at(c, n->start_mark, path, "needs at least %" PRId64 " item%s", k->min,
			       gi_cfg_allowed(k, al, sizeof(al)));
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
		gi_cfg_err_at(c, n->start_mark, path, "expected %s, got %s%s", type_names[k->type], node_kind(n),
		       gi_cfg_allowed(k, al, sizeof(al)));
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
			gi_cfg_err_at(c, kn->start_mark, path, "keys must be scalars, got %s", node_kind(kn));
			continue;
		}
		name = (const char *)kn->data.scalar.value;
		gi_cfg_join(key_path, sizeof(key_path), path, name);
		for (i = 0; i < nkeys && strcmp(sec->keys[i].name, name) != 0; i++)
			;
		if (i == nkeys) {
			char list[GI_PATH_MAX];
			size_t n = 0;
			for (size_t j = 0; j < nkeys && n < sizeof(list); j++)
				n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", j ? ", " : "", sec->keys[j].name);
			gi_cfg_err_at(c, kn->start_mark, key_path, "unknown key (allowed: %s)", list);
			continue;
		}
		if (first_line[i]) {
			gi_cfg_err_at(c, kn->start_mark, key_path, "duplicate key (first at line %zu)", first_line[i]);
			continue;
		}
		first_line[i] = kn->start_mark.line + 1;
		parse_value(c, vn, &sec->keys[i], base, key_path);
	}
	for (size_t i = 0; i < nkeys; i++) {
		if ((sec->keys[i].flags & GI_KEY_REQUIRED) && !first_line[i]) {
			gi_cfg_join(key_path, sizeof(key_path), path, sec->keys[i].name);
			gi_cfg_err_at(c, map->start_mark, key_path, "missing required key");
		}
	}
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
	apply_defaults(&gi_cfg_root_sec, (char *)cfg);

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
		gi_cfg_err_at(&c, top, "", "the config is empty (required: memory, ports)");
	} else if (root->type != YAML_MAPPING_NODE) {
		gi_cfg_err_at(&c, root->start_mark, "", "expected a map, got %s", node_kind(root));
	} else {
		parse_map(&c, root, &gi_cfg_root_sec, (char *)cfg, "");
		gi_cfg_cross_check(&c, cfg);
	}
	yaml_document_delete(&doc);

	/* a second document would be silently ignored: say so instead */
	if (root && !yaml_parser_load(&parser, &doc)) {
		syntax_error(&c, &parser);
	} else if (root) {
		yaml_node_t *extra = yaml_document_get_root_node(&doc);
		if (extra)
			gi_cfg_err_at(&c, extra->start_mark, "", "only one YAML document is allowed");
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
