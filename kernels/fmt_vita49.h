/*
 * fmt_vita49.h — the `vita49` sensor format: VITA Radio Transport
 * (ANSI/VITA 49.0 / 49.2) signal data packets over UDP.
 *
 * Called by the executor (host thread or CUDA kernel) through
 * gi_stream_match() / gi_stream_parse(); plain C that nvcc also compiles.
 *
 * A VRT packet is a sequence of big-endian 32-bit words:
 *
 *   word  field                       present when
 *   0     header                      always
 *   1     stream identifier           packet type 1, 3 (data) and 4..7
 *   +2    class identifier            header C bit (27)
 *   +1    integer timestamp (TSI)     header bits 23..22 != 0
 *   +2    fractional timestamp (TSF)  header bits 21..20 != 0
 *   ...   data payload
 *   last  trailer                     header T bit (26), data packets only
 *
 *   header: 31..28 packet type, 27 C, 26 T, 25..24 (49.2 indicators),
 *           23..22 TSI, 21..20 TSF, 19..16 packet count (mod 16),
 *           15..0 packet size in words, header and trailer included.
 *
 * Rules (README "Sensor format vita49"):
 *  - signal data packets (types 0 and 1) are placed; context (4, 5),
 *    extension data (2, 3) and command packets (6, 7) are counted as
 *    GI_DROP_VITA49_CONTEXT; types 8..15 are malformed_version.
 *  - the packet size must equal the UDP payload: fewer bytes, or trailing
 *    bytes after the packet, are malformed_length; a UDP payload too short
 *    for the words the header announces before the payload is
 *    malformed_truncated.
 *  - a frame is frame.packets data packets of exactly frame.payload_bytes;
 *    frames follow from the sequence number (has_frame = 0).
 *  - the sequence number is the 4-bit packet count, or, when the stream's
 *    ts_step_ps is set, the packet's timestamp divided by ts_step_ps
 *    (rounded): a 64-bit count that stays exact across any number of
 *    consecutive lost packets (the 4-bit count is ambiguous from 8 on).
 *  - the frame header's first_ts_ns is the first packet's timestamp:
 *    TSF real-time (2): TSI * 1e9 + TSF_ps / 1000 (nanoseconds in TSI's
 *    epoch; just TSF / 1000 without TSI); no TSF: TSI * 1e9; TSF sample
 *    count (1) or free-running count (3): the raw 64-bit count.
 */
#ifndef GI_FMT_VITA49_H
#define GI_FMT_VITA49_H

#include "format.h"

GI_EXTERN_C_BEGIN

#define GI_VITA49_PS_PER_S 1000000000000ull
#define GI_VITA49_MAX_PROLOGUE_WORDS 7u /* header, stream id, class id x2, TSI, TSF x2 */
#define GI_VITA49_MAX_HDR_BYTES (4u * (GI_VITA49_MAX_PROLOGUE_WORDS + 1u)) /* + trailer */

enum gi_vita49_type {
	GI_VITA49_IF_DATA = 0,        /* signal data, no stream id */
	GI_VITA49_IF_DATA_SID = 1,
	GI_VITA49_EXT_DATA = 2,
	GI_VITA49_EXT_DATA_SID = 3,
	GI_VITA49_IF_CONTEXT = 4,
	GI_VITA49_EXT_CONTEXT = 5,
	GI_VITA49_COMMAND = 6,        /* 49.2 */
	GI_VITA49_EXT_COMMAND = 7,    /* 49.2 */
};

enum gi_vita49_tsf {
	GI_VITA49_TSF_NONE = 0,
	GI_VITA49_TSF_SAMPLES = 1,
	GI_VITA49_TSF_REAL_PS = 2,
	GI_VITA49_TSF_FREE = 3,
};

#define GI_VITA49_HDR_C (1u << 27)
#define GI_VITA49_HDR_T (1u << 26)

/*
 * The stream's parameters (filled by the daemon), kept in
 * gi_format_params.fmt as plain words — fmt[0] ts_step_ps, fmt[1] stream_id
 * | has_stream_id << 32 — and read through these two functions: no type
 * punning of fmt[], which the compilers' aliasing rules would not allow.
 */
struct gi_fmt_vita49_params {
	uint64_t ts_step_ps;    /* timestamp increment per packet (TSF units), 0: use the 4-bit count */
	uint32_t stream_id;     /* match.stream_id */
	uint32_t has_stream_id; /* 0: the stream takes every VRT packet of its UDP port */
};
GI_STATIC_ASSERT(sizeof(struct gi_fmt_vita49_params) <= sizeof(((struct gi_format_params *)0)->fmt),
		 "vita49 parameters fit gi_format_params.fmt");

GI_HD static inline struct gi_fmt_vita49_params gi_vita49_params(const struct gi_format_params *fp)
{
	struct gi_fmt_vita49_params p;
	p.ts_step_ps = fp->fmt[0];
	p.stream_id = (uint32_t)fp->fmt[1];
	p.has_stream_id = (uint32_t)(fp->fmt[1] >> 32);
	return p;
}

static inline void gi_vita49_params_store(struct gi_format_params *fp, const struct gi_fmt_vita49_params *p)
{
	fp->fmt[0] = p->ts_step_ps;
	fp->fmt[1] = (uint64_t)p->stream_id | (uint64_t)(p->has_stream_id ? 1u : 0u) << 32;
}

/* Types without a stream identifier word; every other type (reserved ones
 * too, so that garbage is charged to the stream it claims) has it in word 1. */
GI_HD static inline int gi_vita49_has_sid(uint32_t type)
{
	return type != GI_VITA49_IF_DATA && type != GI_VITA49_EXT_DATA;
}

/* Words before the payload: header, stream id, class id, timestamps. */
GI_HD static inline uint32_t gi_vita49_prologue_words(uint32_t hdr)
{
	return 1u + (uint32_t)gi_vita49_has_sid(hdr >> 28) + (hdr & GI_VITA49_HDR_C ? 2u : 0u) +
	       (((hdr >> 22) & 3u) ? 1u : 0u) + (((hdr >> 20) & 3u) ? 2u : 0u);
}

/* Does the packet at `u` (`avail` readable bytes) belong to this stream? */
GI_HD static inline int gi_fmt_vita49_match(const struct gi_format_params *fp, const uint8_t *u, uint32_t avail)
{
	struct gi_fmt_vita49_params vp = gi_vita49_params(fp);
	if (!vp.has_stream_id)
		return 1; /* the config lets such a stream be alone on its UDP port */
	if (avail < 8 || !gi_vita49_has_sid(u[0] >> 4))
		return 0;
	return gi_be32(u + 4) == vp.stream_id;
}

/*
 * floor((sec * 1e12 + frac_ps + step / 2) / step) without 128-bit
 * arithmetic: sec < 2^32, frac_ps < 2^41, 1 <= step <= 2^40.  Wraps mod
 * 2^64 like any sequence counter; differences stay exact.
 */
GI_HD static inline uint64_t gi_vita49_ps_to_seq(uint64_t sec, uint64_t frac_ps, uint64_t step)
{
	uint64_t q = GI_VITA49_PS_PER_S / step, r = GI_VITA49_PS_PER_S % step; /* r < step <= 2^40 */
	uint64_t s1 = sec >> 16, s0 = sec & 0xffffu;
	uint64_t hi = s1 * r;                                                   /* < 2^56 */
	uint64_t t = (hi % step << 16) + s0 * r + frac_ps + step / 2;          /* < 2^58 */
	return sec * q + (hi / step << 16) + t / step;
}

/*
 * ps / 1000 as a multiply (Granlund & Montgomery: exact for every 64-bit
 * ps).  Written out because gcc merged `frac / 1000u` with the divides by
 * ts_step_ps below into one `div` instruction: 16% of the parse's time on
 * a stream that never sets ts_step_ps.
 */
GI_HD static inline uint64_t gi_vita49_ps_to_ns(uint64_t ps)
{
	return gi_umulhi64(ps >> 3, 0x20c49ba5e353f7cfull) >> 4;
}

/* 0 and `pi` filled, or the gi_drop_reason of the packet. */
GI_HD static inline int gi_fmt_vita49_parse(const struct gi_format_params *fp, const uint8_t *u, uint32_t len,
					    uint32_t hdr_avail, struct gi_pkt_info *pi)
{
	struct gi_fmt_vita49_params vp = gi_vita49_params(fp);
	gi_pkt_info_clear(pi);

	if (len < 4)
		return GI_DROP_MALFORMED_TRUNCATED;
	if (hdr_avail < 4)
		return GI_DROP_MALFORMED_TRUNCATED; /* the header is not in the header segment */
	uint32_t hdr = gi_be32(u);
	uint32_t type = hdr >> 28;
	uint32_t pro = gi_vita49_prologue_words(hdr);
	uint32_t words = hdr & 0xffffu;
	uint32_t tsi = (hdr >> 22) & 3u, tsf = (hdr >> 20) & 3u;

	if (type > GI_VITA49_EXT_COMMAND)
		return GI_DROP_MALFORMED_VERSION;
	if (len < 4 * pro || hdr_avail < 4 * pro)
		return GI_DROP_MALFORMED_TRUNCATED;
	if ((uint64_t)words * 4 != len)
		return GI_DROP_MALFORMED_LENGTH;
	if (type != GI_VITA49_IF_DATA && type != GI_VITA49_IF_DATA_SID)
		return GI_DROP_VITA49_CONTEXT;
	uint32_t trailer = hdr & GI_VITA49_HDR_T ? 1u : 0u;
	if (words < pro + trailer)
		return GI_DROP_MALFORMED_LENGTH;

	uint32_t w = 1;
	pi->sensor_id = type == GI_VITA49_IF_DATA_SID ? gi_be32(u + 4 * w++) : 0;
	w += hdr & GI_VITA49_HDR_C ? 2u : 0u;
	uint64_t sec = 0, frac = 0;
	if (tsi)
		sec = gi_be32(u + 4 * w++);
	if (tsf)
		frac = gi_be64(u + 4 * w);

	if (tsf == GI_VITA49_TSF_REAL_PS) {
		if (frac >= GI_VITA49_PS_PER_S)
			return GI_DROP_MALFORMED_VERSION; /* not a picosecond count within a second */
		pi->timestamp = sec * 1000000000ull + gi_vita49_ps_to_ns(frac);
	} else {
		pi->timestamp = tsf ? frac : sec * 1000000000ull;
	}
	if (vp.ts_step_ps) {
		if (tsf == GI_VITA49_TSF_NONE)
			return GI_DROP_MALFORMED_GEOMETRY; /* the stream's sequencing needs a fractional timestamp */
		pi->seq = tsf == GI_VITA49_TSF_REAL_PS ? gi_vita49_ps_to_seq(sec, frac, vp.ts_step_ps)
						       : (frac + vp.ts_step_ps / 2) / vp.ts_step_ps;
	} else {
		pi->seq = (hdr >> 16) & 0xfu;
	}
	pi->frame = 0;
	pi->byte_off = 0;
	pi->pkt_index = 0;
	pi->payload_off = 4 * pro;
	pi->payload_len = 4 * (words - pro - trailer);
	pi->has_frame = 0;
	pi->has_offset = 0;
	pi->closes_frame = 0;
	return 0;
}

/* ---- building (gpuingest-sim, tests) ------------------------------------ */

struct gi_vita49_hdr {
	uint32_t type;          /* enum gi_vita49_type */
	uint32_t count;         /* packet count, mod 16 */
	uint32_t stream_id;     /* types with a stream id */
	uint32_t class_oui;     /* class_id set: 24-bit OUI */
	uint32_t class_codes;   /* information class code << 16 | packet class code */
	uint32_t tsi_kind;      /* 0..3 */
	uint32_t tsf_kind;      /* 0..3 */
	uint32_t tsi;
	uint64_t tsf;
	uint8_t class_id;
	uint8_t trailer;
	uint16_t pad;
	uint32_t trailer_word;
};

/* Words written before the payload for `h`. */
static inline uint32_t gi_vita49_hdr_words(const struct gi_vita49_hdr *h)
{
	return 1u + (uint32_t)gi_vita49_has_sid(h->type) + (h->class_id ? 2u : 0u) + (h->tsi_kind ? 1u : 0u) +
	       (h->tsf_kind ? 2u : 0u);
}

/*
 * Writes the prologue of a packet of `payload_words` payload words (and the
 * trailer, after them, when h->trailer); returns the prologue's length in
 * bytes.  The payload itself is the caller's.
 */
static inline uint32_t gi_vita49_write(uint8_t *u, const struct gi_vita49_hdr *h, uint32_t payload_words)
{
	uint32_t pro = gi_vita49_hdr_words(h);
	uint32_t words = pro + payload_words + (h->trailer ? 1u : 0u);
	uint32_t hdr = h->type << 28 | (h->class_id ? GI_VITA49_HDR_C : 0u) | (h->trailer ? GI_VITA49_HDR_T : 0u) |
		       (h->tsi_kind & 3u) << 22 | (h->tsf_kind & 3u) << 20 | (h->count & 0xfu) << 16 | (words & 0xffffu);
	uint32_t w = 0;
	gi_put_be32(u + 4 * w++, hdr);
	if (gi_vita49_has_sid(h->type))
		gi_put_be32(u + 4 * w++, h->stream_id);
	if (h->class_id) {
		gi_put_be32(u + 4 * w++, h->class_oui & 0xffffffu); /* pad bit count 0, reserved 0 */
		gi_put_be32(u + 4 * w++, h->class_codes);
	}
	if (h->tsi_kind)
		gi_put_be32(u + 4 * w++, h->tsi);
	if (h->tsf_kind) {
		gi_put_be64(u + 4 * w, h->tsf);
		w += 2;
	}
	if (h->trailer)
		gi_put_be32(u + 4 * (pro + payload_words), h->trailer_word);
	return 4 * pro;
}

GI_EXTERN_C_END

#endif /* GI_FMT_VITA49_H */
