/*
 * sim_fmt_vita49.c — gpuingest-sim's `vita49` streams (see sim_fmt_vita49.h):
 * VRT IF data packets with or without stream ID, optional class ID,
 * integer/fractional timestamps and trailer, context packets, and the
 * malformed variants the daemon names (ip truncated version length
 * geometry).
 *
 * Timestamps follow the packet's number since the stream's first (ord),
 * not the wall clock: packet ord carries t0 + ord * ts_step, so a receiver
 * that knows ts_step can tell how many packets were lost between two it got
 * — the point of the daemon's vita49.ts_step_ps.
 *
 * Single-threaded: the sim's main thread only.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/fmt_vita49.h"
#include "kernels/udp_seq.h"
#include "sim_fmt_vita49.h"

#define CLASS_OUI 0x00ff5au /* a locally administered-looking OUI: the class ID only has to be well formed */
#define CIF0_BANDWIDTH (1u << 29)
#define CIF0_SAMPLE_RATE (1u << 21)

static const char *const ts_kinds_tsi[] = { "none", "utc", "gps", "other" };
static const char *const ts_kinds_tsf[] = { "none", "samples", "real", "free" };

static void usage_error(const char *opt, const char *arg, const char *allowed)
{
	fprintf(stderr, "gpuingest-sim: %s: '%s' is not valid (allowed: %s) (see --help)\n", opt, arg, allowed);
	exit(GI_SIM_EXIT_USAGE);
}

static uint64_t parse_num(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (end == s || *end || s[0] == '-' || v < min || v > max) {
		char al[64];
		snprintf(al, sizeof(al), "%llu..%llu", (unsigned long long)min, (unsigned long long)max);
		usage_error(opt, s, al);
	}
	return v;
}

static uint8_t parse_kind(const char *opt, const char *s, const char *const names[4])
{
	for (uint8_t k = 0; k < 4; k++)
		if (!strcmp(s, names[k]))
			return k;
	char al[64];
	snprintf(al, sizeof(al), "%s %s %s %s", names[0], names[1], names[2], names[3]);
	usage_error(opt, s, al);
	return 0;
}

void gi_sim_vita49_option(struct gi_sim_cfg *c, int opt, const char *arg)
{
	struct gi_sim_vita49_cfg *v = &c->vita49;

	switch (opt) {
	case GI_SIM_OPT_VITA49_SID_BASE:
		v->stream_id_base = (uint32_t)parse_num("--stream-id-base", arg, 0, UINT32_MAX);
		break;
	case GI_SIM_OPT_VITA49_NO_SID: v->no_sid = true; break;
	case GI_SIM_OPT_VITA49_CLASS_ID: v->class_id = true; break;
	case GI_SIM_OPT_VITA49_TSI: v->tsi_opt = (uint8_t)(1 + parse_kind("--vita49-tsi", arg, ts_kinds_tsi)); break;
	case GI_SIM_OPT_VITA49_TSF: v->tsf_opt = (uint8_t)(1 + parse_kind("--vita49-tsf", arg, ts_kinds_tsf)); break;
	case GI_SIM_OPT_VITA49_TS_STEP:
		v->ts_step = parse_num("--vita49-ts-step", arg, 1, GI_VITA49_PS_PER_S);
		break;
	case GI_SIM_OPT_VITA49_TRAILER: v->trailer = true; break;
	case GI_SIM_OPT_VITA49_CONTEXT_EVERY:
		v->context_every = (uint32_t)parse_num("--context-every", arg, 0, UINT32_MAX);
		break;
	case GI_SIM_OPT_VITA49_DST_PORTS: v->dst_ports = arg; break;
	default: break;
	}
}

int gi_sim_dst_port(const char *list, uint32_t stream, uint16_t *port)
{
	const char *item = list;
	for (uint32_t i = 0; i < stream; i++) {
		const char *comma = strchr(item, ',');
		if (!comma)
			break;
		item = comma + 1;
	}
	char *end;
	unsigned long v = strtoul(item, &end, 10);
	if (end == item || (*end != ',' && *end) || v < 1 || v > 65535) {
		fprintf(stderr, "gpuingest-sim: --dst-ports: '%s' is not PORT[,PORT...] (ports 1..65535)\n", list);
		return -1;
	}
	*port = (uint16_t)v;
	return 0;
}

int gi_sim_vita49_stream(struct gi_sim *sim, struct gi_sim_stream *st)
{
	struct gi_sim_cfg *c = &sim->cfg;

	if (st->payload % 4 || st->last % 4 || st->payload / 4 + GI_VITA49_MAX_HDR_BYTES / 4 > 0xffffu) {
		fprintf(stderr, "gpuingest-sim: stream %u: vita49 payload %u is not whole 32-bit words of a VRT packet "
			"(allowed: multiples of 4 up to %u)\n", st->id, st->payload,
			4u * (0xffffu - GI_VITA49_MAX_HDR_BYTES / 4));
		return -1;
	}
	if (c->vita49.t0_s == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		c->vita49.t0_s = (uint64_t)ts.tv_sec;
	}
	st->vrt_sid = c->vita49.stream_id_base + st->id;
	st->mal_kinds = 1u << GI_SIM_MAL_IP | 1u << GI_SIM_MAL_TRUNCATED | 1u << GI_SIM_MAL_VERSION |
			1u << GI_SIM_MAL_LENGTH | 1u << GI_SIM_MAL_GEOMETRY;
	/* the largest VRT overhead: a context packet, 7 prologue words + CIF0 + 4 */
	if (c->hdr_max < 48)
		c->hdr_max = 48;
	return 0;
}

/* The timestamps of packet number `ord` of a stream. */
static void timestamps(const struct gi_sim_vita49_cfg *v, uint64_t ord, struct gi_vita49_hdr *h)
{
	unsigned __int128 t = (unsigned __int128)ord * (v->ts_step ? v->ts_step : 1000000u);

	h->tsi_kind = v->tsi_opt ? v->tsi_opt - 1u : 1u; /* utc */
	h->tsf_kind = v->tsf_opt ? v->tsf_opt - 1u : (uint32_t)GI_VITA49_TSF_REAL_PS;
	if (h->tsf_kind == GI_VITA49_TSF_REAL_PS || h->tsf_kind == GI_VITA49_TSF_NONE) {
		h->tsi = (uint32_t)(v->t0_s + (uint64_t)(t / GI_VITA49_PS_PER_S));
		h->tsf = (uint64_t)(t % GI_VITA49_PS_PER_S);
	} else {
		h->tsi = (uint32_t)v->t0_s;
		h->tsf = (uint64_t)t;
	}
}

uint32_t gi_sim_vita49_build(const struct gi_sim *sim, const struct gi_sim_stream *st, const struct gi_sim_pkt *p,
			     uint8_t *u)
{
	const struct gi_sim_vita49_cfg *v = &sim->cfg.vita49;
	struct gi_vita49_hdr h = {
		.type = v->no_sid ? GI_VITA49_IF_DATA : GI_VITA49_IF_DATA_SID,
		.count = p->seq & 0xfu,
		.stream_id = st->vrt_sid,
		.class_id = v->class_id,
		.class_oui = CLASS_OUI,
		.class_codes = 1u << 16 | 1u,
		.trailer = v->trailer,
	};
	uint64_t frame = p->ord / st->ppf, index = p->ord % st->ppf;
	uint32_t words = gi_sim_plen(st, (uint32_t)index) / 4;

	timestamps(v, p->ord, &h);
	if (p->kind == GI_SIM_VITA49_CONTEXT) {
		/* IF context: CIF0 with bandwidth and sample rate (64-bit, 20-bit radix Hz) */
		h.type = GI_VITA49_IF_CONTEXT;
		h.count = (uint32_t)(st->vrt_context & 0xfu);
		h.trailer = 0;
		uint32_t pro = gi_vita49_write(u, &h, 5) / 4;
		gi_put_be32(u + 4 * pro, CIF0_BANDWIDTH | CIF0_SAMPLE_RATE);
		gi_put_be64(u + 4 * (pro + 1), 10000000ull << 20); /* 10 MHz */
		gi_put_be64(u + 4 * (pro + 3), 12500000ull << 20); /* 12.5 Msps */
		return 4 * (pro + 5);
	}
	if (p->kind == GI_SIM_MAL_GEOMETRY) /* a word or two short: neither frame.payload_bytes nor the last's */
		words = st->payload / 4 - (st->payload - 4 == st->last ? 2u : 1u);
	if (p->kind == GI_SIM_MAL_TRUNCATED && !h.class_id && !h.tsi_kind && !h.tsf_kind)
		h.tsf_kind = GI_VITA49_TSF_REAL_PS; /* announce words the packet will not have */

	uint32_t pro = gi_vita49_write(u, &h, words);
	uint32_t ulen = pro + 4 * words + (h.trailer ? 4u : 0u);

	gi_pattern_fill(u + pro, gi_pattern_seed((uint16_t)(v->no_sid ? 0 : st->vrt_sid), (uint32_t)frame),
			index * st->payload, 4 * words);
	switch (p->kind) {
	case GI_SIM_MAL_TRUNCATED:
		return 4u * (1u + (uint32_t)gi_vita49_has_sid(h.type)); /* ends after the stream ID */
	case GI_SIM_MAL_VERSION:
		u[0] = (uint8_t)(0xc0u | (u[0] & 0x0fu)); /* packet type 12: reserved */
		break;
	case GI_SIM_MAL_LENGTH:
		gi_put_be16(u + 2, (uint16_t)(ulen / 4 + 1)); /* one word more than the UDP payload */
		break;
	default:
		break;
	}
	return ulen;
}

void gi_sim_vita49_report(FILE *f, const struct gi_sim_stream *st)
{
	if (st->format == GI_FORMAT_VITA49)
		fprintf(f, ",\"vita49_context\":%llu", (unsigned long long)st->vrt_context);
}
