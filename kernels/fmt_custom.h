/*
 * fmt_custom.h — `format: custom`: a sensor's own fixed UDP header, described
 * by a field map in the config instead of code.
 *
 * Many lidars, radars and cameras put a fixed-size header with a packet
 * counter at the start (or, read as one fixed block, anywhere) of each UDP
 * payload.  The map says where each field is: byte offset from the start of
 * the UDP payload, width 1/2/4/8 bytes, byte order, and an optional mask and
 * right shift that cut a bit field out of a wider word.  Then:
 *
 *   seq        required; the packet counter, seq_bits wide (after mask and
 *              shift), wrapping: loss, duplicates and reordering follow it
 *   frame      optional; the sender's frame number, frame_bits wide.  Absent:
 *              frames are derived from seq (frame.packets packets each)
 *   index      optional, with frame: the packet's place in its frame
 *              (must be < frame.packets); absent with frame: seq % packets
 *   id         optional: the sender's stream/source id (frame header sensor_id)
 *   timestamp  optional: sender time (frame header first_ts_ns, sender units)
 *
 * UDP payload = [header_bytes fields ...][payload at payload_offset,
 * frame.payload_bytes long][trailer_bytes]; payload_offset defaults to
 * header_bytes and may be smaller (consumers then get the header bytes too).
 * Every packet must be exactly payload_offset + payload_bytes + trailer_bytes
 * long (else malformed_length) — the frame's last packet may carry the
 * shorter rest of a frame.bytes frame instead — and hold the whole header
 * (else malformed_truncated).
 *
 * The parser is GI_HD: the host executor and the CUDA kernels run it.  The
 * map is validated at config load (daemon/config.c); gi_fmt_custom_setup()
 * packs it into gi_format_params.fmt when the stream starts (main thread).
 */
#ifndef GI_FMT_CUSTOM_H
#define GI_FMT_CUSTOM_H

#include "format.h"

GI_EXTERN_C_BEGIN

enum gi_custom_endian {
	GI_CUSTOM_BIG = 0,
	GI_CUSTOM_LITTLE = 1,
};

/* One field of the map.  width 0: the field is absent. */
struct gi_custom_field {
	uint64_t mask;    /* after byte-order conversion; 0 in the config = the whole field */
	uint32_t offset;  /* bytes from the start of the UDP payload */
	uint8_t width;    /* 1, 2, 4 or 8 bytes */
	uint8_t endian;   /* enum gi_custom_endian */
	uint8_t shift;    /* right shift after the mask, 0..63 */
	uint8_t pad;
};
GI_STATIC_ASSERT(sizeof(struct gi_custom_field) == 16, "custom field layout");

enum gi_custom_field_id {
	GI_CUSTOM_SEQ = 0,
	GI_CUSTOM_FRAME,
	GI_CUSTOM_INDEX,
	GI_CUSTOM_ID,
	GI_CUSTOM_TIMESTAMP,
	GI_CUSTOM__FIELDS
};
#define GI_CUSTOM_FIELD_NAMES { "seq", "frame", "index", "id", "timestamp" }

struct gi_fmt_custom_params {
	struct gi_custom_field f[GI_CUSTOM__FIELDS];
	uint32_t header_bytes;   /* every packet holds at least this much: all fields lie in it */
	uint32_t payload_offset; /* payload start in the UDP payload */
	uint32_t trailer_bytes;  /* after the payload */
	uint32_t pad;
};

/*
 * The map lives in gi_format_params.fmt as 64-bit words, packed and
 * unpacked field by field like vita49's and rocev2's parameters (no type
 * punning of fmt): field k is words 2k (mask) and 2k + 1 (offset | width
 * << 32 | endian << 40 | shift << 48); then header_bytes | payload_offset
 * << 32, and trailer_bytes.
 */
#define GI_FMT_CUSTOM_WORDS (2u * GI_CUSTOM__FIELDS + 2u)
GI_STATIC_ASSERT(GI_FMT_CUSTOM_WORDS <= sizeof(((struct gi_format_params *)0)->fmt) / sizeof(uint64_t),
		 "custom map must fit gi_format_params.fmt");

GI_HD static inline struct gi_fmt_custom_params gi_fmt_custom(const struct gi_format_params *fp)
{
	struct gi_fmt_custom_params p;
	for (uint32_t k = 0; k < GI_CUSTOM__FIELDS; k++) {
		uint64_t w = fp->fmt[2 * k + 1];
		p.f[k].mask = fp->fmt[2 * k];
		p.f[k].offset = (uint32_t)w;
		p.f[k].width = (uint8_t)(w >> 32);
		p.f[k].endian = (uint8_t)(w >> 40);
		p.f[k].shift = (uint8_t)(w >> 48);
		p.f[k].pad = 0;
	}
	p.header_bytes = (uint32_t)fp->fmt[2 * GI_CUSTOM__FIELDS];
	p.payload_offset = (uint32_t)(fp->fmt[2 * GI_CUSTOM__FIELDS] >> 32);
	p.trailer_bytes = (uint32_t)fp->fmt[2 * GI_CUSTOM__FIELDS + 1];
	p.pad = 0;
	return p;
}

static inline void gi_fmt_custom_store(struct gi_format_params *fp, const struct gi_fmt_custom_params *p)
{
	for (uint32_t k = 0; k < GI_CUSTOM__FIELDS; k++) {
		fp->fmt[2 * k] = p->f[k].mask;
		fp->fmt[2 * k + 1] = (uint64_t)p->f[k].offset | (uint64_t)p->f[k].width << 32 |
				     (uint64_t)p->f[k].endian << 40 | (uint64_t)p->f[k].shift << 48;
	}
	fp->fmt[2 * GI_CUSTOM__FIELDS] = (uint64_t)p->header_bytes | (uint64_t)p->payload_offset << 32;
	fp->fmt[2 * GI_CUSTOM__FIELDS + 1] = p->trailer_bytes;
}

/* The field's raw bytes as an integer in the given byte order. */
GI_HD static inline uint64_t gi_custom_load(const uint8_t *p, uint32_t width, uint32_t little)
{
	uint64_t v = 0;
	for (uint32_t i = 0; i < width; i++)
		v = little ? v | (uint64_t)p[i] << (8 * i) : v << 8 | p[i];
	return v;
}

/* The field's value: bytes → integer → mask → shift.  The caller checked bounds. */
GI_HD static inline uint64_t gi_custom_value(const struct gi_custom_field *f, const uint8_t *u)
{
	return (gi_custom_load(u + f->offset, f->width, f->endian) & f->mask) >> f->shift;
}

/* 0 or the gi_drop_reason of the packet. */
GI_HD static inline int gi_fmt_custom_parse(const struct gi_format_params *fp, const uint8_t *u, uint32_t len,
					    uint32_t hdr_avail, uint32_t packets, uint32_t payload_bytes, uint32_t last_bytes,
					    struct gi_pkt_info *pi)
{
	const struct gi_fmt_custom_params map = gi_fmt_custom(fp), *cp = &map;
	gi_pkt_info_clear(pi);

	if (len < cp->header_bytes || hdr_avail < cp->header_bytes)
		return GI_DROP_MALFORMED_TRUNCATED; /* short, or the header is not in the header segment */
	/* a frame's last packet may be shorter (frame.bytes); gi_seq_locate() checks it is the last */
	uint32_t plen = len - cp->payload_offset - cp->trailer_bytes;
	if (len < cp->payload_offset + cp->trailer_bytes || (plen != payload_bytes && plen != last_bytes))
		return GI_DROP_MALFORMED_LENGTH;
	for (uint32_t k = 0; k < GI_CUSTOM__FIELDS; k++)
		if (cp->f[k].width && cp->f[k].offset + cp->f[k].width > cp->header_bytes)
			return GI_DROP_MALFORMED_TRUNCATED; /* never with a validated map */

	const struct gi_custom_field *frame = &cp->f[GI_CUSTOM_FRAME], *index = &cp->f[GI_CUSTOM_INDEX];
	pi->seq = gi_custom_value(&cp->f[GI_CUSTOM_SEQ], u);
	pi->has_frame = frame->width != 0;
	pi->frame = pi->has_frame ? gi_custom_value(frame, u) : 0;
	pi->pkt_index = 0;
	if (pi->has_frame) {
		uint64_t idx = index->width ? gi_custom_value(index, u) : pi->seq % packets;
		if (idx >= packets)
			return GI_DROP_MALFORMED_INDEX;
		pi->pkt_index = (uint32_t)idx;
	}
	pi->sensor_id = cp->f[GI_CUSTOM_ID].width ? (uint32_t)gi_custom_value(&cp->f[GI_CUSTOM_ID], u) : 0;
	pi->timestamp = cp->f[GI_CUSTOM_TIMESTAMP].width ? gi_custom_value(&cp->f[GI_CUSTOM_TIMESTAMP], u) : 0;
	pi->byte_off = 0;
	pi->payload_off = cp->payload_offset;
	pi->payload_len = plen;
	pi->has_offset = 0;
	pi->closes_frame = 0;
	return 0;
}

/* ---- host side: map checks and packing (config load, stream start) ---- */

/* The whole-field mask of a `width`-byte field. */
static inline uint64_t gi_custom_full_mask(uint32_t width)
{
	return width >= 8 ? ~0ull : (1ull << (8 * width)) - 1;
}

/*
 * Bits of the value (mask, then shift) when the mask is one contiguous run
 * of ones and the shift keeps its lowest bit at bit 0 or drops low bits;
 * 0 when the value would always be 0; -1 when the mask is not contiguous
 * or the shift leaves zero bits under the value.
 */
static inline int gi_custom_value_bits(uint64_t mask, uint32_t shift)
{
	if (mask == 0 || shift > 63)
		return -1;
	int lo = __builtin_ctzll(mask), hi = 64 - __builtin_clzll(mask);
	uint64_t run = mask >> lo;
	if (run & (run + 1))
		return -1; /* not contiguous */
	if ((int)shift < lo)
		return -1; /* the low bits of the value would always be zero */
	return (int)shift >= hi ? 0 : hi - (int)shift;
}

/*
 * Fill fp->fmt from a validated map and set the counters' widths.  Masks of
 * 0 mean the whole field.  Call after gi_format_params_init().
 */
static inline void gi_fmt_custom_setup(struct gi_format_params *fp, const struct gi_fmt_custom_params *map)
{
	struct gi_fmt_custom_params full = *map, *cp = &full;

	for (uint32_t k = 0; k < GI_CUSTOM__FIELDS; k++)
		if (cp->f[k].width && cp->f[k].mask == 0)
			cp->f[k].mask = gi_custom_full_mask(cp->f[k].width);
	gi_fmt_custom_store(fp, cp);
	fp->seq_bits = (uint32_t)gi_custom_value_bits(cp->f[GI_CUSTOM_SEQ].mask, cp->f[GI_CUSTOM_SEQ].shift);
	if (cp->f[GI_CUSTOM_FRAME].width)
		fp->frame_bits =
			(uint32_t)gi_custom_value_bits(cp->f[GI_CUSTOM_FRAME].mask, cp->f[GI_CUSTOM_FRAME].shift);
}

GI_EXTERN_C_END

#endif /* GI_FMT_CUSTOM_H */
