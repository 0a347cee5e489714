/*
 * sim_fmt_custom.c — gpuingest-sim's `custom` format (see sim_fmt_custom.h).
 *
 * Single-threaded: the sim's main thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/udp_seq.h"
#include "sim_fmt_custom.h"

#define FILLER 0xa5u /* header bytes and bits no field owns */

static int field_id(const char *name, size_t len)
{
	static const char *const names[] = GI_CUSTOM_FIELD_NAMES;
	for (int k = 0; k < GI_CUSTOM__FIELDS; k++)
		if (strlen(names[k]) == len && !strncmp(name, names[k], len))
			return k;
	return -1;
}

static int parse_u64(const char *s, const char *end, uint64_t max, uint64_t *out)
{
	char buf[32], *e;
	if (end - s <= 0 || end - s >= (long)sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(end - s));
	buf[end - s] = '\0';
	errno = 0;
	*out = strtoull(buf, &e, 0);
	return errno || *e || buf[0] == '-' || *out > max ? -1 : 0;
}

/* OFF:WIDTH:be|le[:MASK[:SHIFT]] */
static int parse_field(const char *v, const char *end, struct gi_custom_field *f)
{
	const char *part[5] = { NULL, NULL, NULL, NULL, NULL };
	const char *part_end[5];
	int n = 0;
	uint64_t x;

	for (const char *s = v; n < 5;) {
		const char *colon = memchr(s, ':', (size_t)(end - s));
		part[n] = s;
		part_end[n++] = colon ? colon : end;
		if (!colon)
			break;
		s = colon + 1;
	}
	if (n < 3 || part_end[n - 1] != end)
		return -1;
	if (parse_u64(part[0], part_end[0], 8999, &x))
		return -1;
	f->offset = (uint32_t)x;
	if (parse_u64(part[1], part_end[1], 8, &x) || (x != 1 && x != 2 && x != 4 && x != 8))
		return -1;
	f->width = (uint8_t)x;
	size_t el = (size_t)(part_end[2] - part[2]);
	if ((el == 2 && !strncmp(part[2], "be", 2)) || (el == 3 && !strncmp(part[2], "big", 3)))
		f->endian = GI_CUSTOM_BIG;
	else if ((el == 2 && !strncmp(part[2], "le", 2)) || (el == 6 && !strncmp(part[2], "little", 6)))
		f->endian = GI_CUSTOM_LITTLE;
	else
		return -1;
	f->mask = gi_custom_full_mask(f->width);
	if (n > 3 && (parse_u64(part[3], part_end[3], UINT64_MAX, &f->mask) || f->mask == 0 ||
		      (f->mask & ~gi_custom_full_mask(f->width))))
		return -1;
	if (n > 4) {
		if (parse_u64(part[4], part_end[4], 63, &x))
			return -1;
		f->shift = (uint8_t)x;
	}
	return gi_custom_value_bits(f->mask, f->shift) > 0 ? 0 : -1;
}

int gi_sim_custom_parse(const char *spec, struct gi_sim_custom *out, char *err, size_t len)
{
	struct gi_fmt_custom_params *m = &out->map;
	int have_offset = 0, have_header = 0;

	memset(out, 0, sizeof(*out));
	for (const char *s = spec; *s;) {
		const char *end = s + strcspn(s, ",");
		const char *eq = memchr(s, '=', (size_t)(end - s));
		uint64_t x;
		if (!eq) {
			snprintf(err, len, "'%.*s' is not NAME=VALUE", (int)(end - s), s);
			return -1;
		}
		size_t nl = (size_t)(eq - s);
		int k = field_id(s, nl);
		if (k >= 0) {
			if (parse_field(eq + 1, end, &m->f[k]) < 0) {
				snprintf(err, len, "%.*s: '%.*s' is not OFF:WIDTH:be|le[:MASK[:SHIFT]] (width 1, 2, 4 or 8; a "
					 "contiguous mask inside the field; a shift that keeps bits)",
					 (int)nl, s, (int)(end - eq - 1), eq + 1);
				return -1;
			}
		} else if ((nl == 6 && !strncmp(s, "header", 6)) || (nl == 6 && !strncmp(s, "offset", 6)) ||
			   (nl == 7 && !strncmp(s, "trailer", 7))) {
			if (parse_u64(eq + 1, end, 9000, &x)) {
				snprintf(err, len, "%.*s: '%.*s' is not a byte count 0..9000", (int)nl, s,
					 (int)(end - eq - 1), eq + 1);
				return -1;
			}
			if (s[0] == 'h')
				m->header_bytes = (uint32_t)x, have_header = 1;
			else if (s[0] == 'o')
				m->payload_offset = (uint32_t)x, have_offset = 1;
			else
				m->trailer_bytes = (uint32_t)x;
		} else {
			snprintf(err, len, "unknown key '%.*s' (allowed: seq frame index id timestamp header offset trailer)",
				 (int)nl, s);
			return -1;
		}
		s = *end ? end + 1 : end;
	}
	if (!m->f[GI_CUSTOM_SEQ].width) {
		snprintf(err, len, "seq= is required");
		return -1;
	}
	if (m->f[GI_CUSTOM_INDEX].width && !m->f[GI_CUSTOM_FRAME].width) {
		snprintf(err, len, "index= needs frame=");
		return -1;
	}
	for (int k = 0; k < GI_CUSTOM__FIELDS; k++) {
		uint32_t end = m->f[k].width ? m->f[k].offset + m->f[k].width : 0;
		if (!have_header && end > m->header_bytes)
			m->header_bytes = end;
		if (end > m->header_bytes) {
			snprintf(err, len, "a field ends at byte %u, past header=%u", end, m->header_bytes);
			return -1;
		}
	}
	if (!have_offset)
		m->payload_offset = m->header_bytes;
	if (m->payload_offset < m->header_bytes) {
		snprintf(err, len, "offset=%u < header=%u: the payload pattern would overwrite header fields",
			 m->payload_offset, m->header_bytes);
		return -1;
	}
	return 0;
}

static uint64_t field_max(const struct gi_custom_field *f)
{
	int bits = gi_custom_value_bits(f->mask, f->shift);
	return bits >= 64 ? UINT64_MAX : (1ull << bits) - 1;
}

int gi_sim_custom_stream(struct gi_sim *sim, struct gi_sim_stream *st, uint32_t nth)
{
	struct gi_sim_cfg *c = &sim->cfg;
	char err[256];

	if (!c->n_custom) {
		fprintf(stderr, "gpuingest-sim: stream %u is custom: give its header map with --custom (see --help)\n",
			st->id);
		return -1;
	}
	const char *spec = c->custom[nth < c->n_custom ? nth : c->n_custom - 1];
	struct gi_sim_custom *cu = calloc(1, sizeof(*cu));
	if (!cu) {
		fprintf(stderr, "gpuingest-sim: out of memory\n");
		return -1;
	}
	if (gi_sim_custom_parse(spec, cu, err, sizeof(err)) < 0) {
		fprintf(stderr, "gpuingest-sim: --custom '%s': %s\n", spec, err);
		free(cu);
		return -1;
	}
	const struct gi_fmt_custom_params *m = &cu->map;
	const struct gi_custom_field *index = &m->f[GI_CUSTOM_INDEX];
	if (index->width && st->ppf - 1 > field_max(index)) {
		fprintf(stderr, "gpuingest-sim: --custom '%s': stream %u: index cannot hold packet %u of %u\n", spec, st->id,
			st->ppf - 1, st->ppf);
		free(cu);
		return -1;
	}
	uint64_t overhead = (uint64_t)m->payload_offset + m->trailer_bytes + 1; /* +1: the length variant */
	if (overhead + st->payload > GI_SIM_MAX_PAYLOAD) {
		fprintf(stderr, "gpuingest-sim: --custom '%s': stream %u: packets longer than %u bytes\n", spec, st->id,
			GI_SIM_MAX_PAYLOAD);
		free(cu);
		return -1;
	}
	if (overhead > c->hdr_max)
		c->hdr_max = (uint32_t)overhead;
	/* malformed variants the daemon tells apart for this map */
	st->mal_kinds = 1u << GI_SIM_MAL_IP | 1u << GI_SIM_MAL_TRUNCATED | 1u << GI_SIM_MAL_LENGTH;
	if (index->width && st->ppf <= field_max(index))
		st->mal_kinds |= 1u << GI_SIM_MAL_INDEX;
	st->custom = cu;
	return 0;
}

static void put_field(uint8_t *u, const struct gi_custom_field *f, uint64_t v)
{
	uint64_t raw = gi_custom_load(u + f->offset, f->width, f->endian); /* the filler already there */
	raw = (raw & ~f->mask) | ((v << f->shift) & f->mask);
	for (uint32_t i = 0; i < f->width; i++) {
		uint32_t sh = f->endian == GI_CUSTOM_LITTLE ? 8 * i : 8 * (f->width - 1 - i);
		u[f->offset + i] = (uint8_t)(raw >> sh);
	}
}

/* What the daemon reads back from field f when v was written (mask, shift). */
static uint64_t as_read(const struct gi_custom_field *f, uint64_t v)
{
	return ((v << f->shift) & f->mask) >> f->shift;
}

uint32_t gi_sim_custom_build(const struct gi_sim_stream *st, const struct gi_sim_pkt *p, uint8_t *u,
			     uint64_t timestamp_ns)
{
	const struct gi_fmt_custom_params *m = &st->custom->map;
	const struct gi_custom_field *f = m->f;
	uint32_t plen = gi_sim_plen(st, p->pkt_index);
	uint32_t ulen = m->payload_offset + plen + m->trailer_bytes;

	memset(u, FILLER, m->payload_offset);
	put_field(u, &f[GI_CUSTOM_SEQ], p->seq);
	if (f[GI_CUSTOM_FRAME].width)
		put_field(u, &f[GI_CUSTOM_FRAME], p->frame);
	if (f[GI_CUSTOM_INDEX].width)
		put_field(u, &f[GI_CUSTOM_INDEX], p->kind == GI_SIM_MAL_INDEX ? st->ppf : p->pkt_index);
	if (f[GI_CUSTOM_ID].width)
		put_field(u, &f[GI_CUSTOM_ID], st->id);
	if (f[GI_CUSTOM_TIMESTAMP].width)
		put_field(u, &f[GI_CUSTOM_TIMESTAMP], timestamp_ns);
	if (p->kind == GI_SIM_MAL_TRUNCATED)
		return m->header_bytes / 2;

	/* the daemon's frame header: sensor_id from the id field (else 0), sensor_frame
	 * from the frame field (else the frame number derived from the sequence) */
	uint64_t id = f[GI_CUSTOM_ID].width ? as_read(&f[GI_CUSTOM_ID], st->id) : 0;
	uint64_t frame = f[GI_CUSTOM_FRAME].width ? as_read(&f[GI_CUSTOM_FRAME], p->frame) : p->ord / st->ppf;
	gi_pattern_fill(u + m->payload_offset, gi_pattern_seed((uint16_t)id, (uint32_t)frame),
			(uint64_t)p->pkt_index * st->payload, plen);
	memset(u + m->payload_offset + plen, FILLER, m->trailer_bytes);
	if (p->kind == GI_SIM_MAL_LENGTH)
		u[ulen++] = FILLER; /* one byte more than the map allows */
	return ulen;
}
