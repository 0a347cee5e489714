/*
 * format.h — sensor wire formats behind one interface.
 *
 * After the Ethernet/IPv4/UDP parse and the stream lookup, the executor
 * asks the stream's format two things:
 *   gi_format_match()  does this packet belong to this stream?  (streams of
 *                      formats that share a UDP port — RoCEv2's 4791, a VRT
 *                      port carrying several stream IDs — are chained)
 *   gi_format_parse()  what is it: sequence number, frame and place in the
 *                      frame, payload location, or a drop reason.
 * Everything after that — sequence extension and wraparound, reordering,
 * duplicates, loss, windows, resynchronisation — is format-independent and
 * lives in stream.h.
 *
 * Each format's parser is its own header (udp_seq.h, fmt_*.h) of GI_HD
 * bodies: the host executor and the CUDA kernels run the same code.
 */
#ifndef GI_FORMAT_H
#define GI_FORMAT_H

#include "pkt.h"
#include "udp_seq.h"

GI_EXTERN_C_BEGIN

enum gi_format {
	GI_FORMAT_UDP_SEQ = 1,
	GI_FORMAT_ROCEV2 = 2,
	GI_FORMAT_VITA49 = 3,
	GI_FORMAT_CUSTOM = 4,
};

enum gi_drop_reason {
	GI_DROP_RING_FULL = 0,      /* counted by the rx lcore, never reaches the executor */
	GI_DROP_NO_STREAM,          /* not IPv4/UDP, or no stream matches */
	GI_DROP_MALFORMED_IP,       /* Ethernet/IPv4/UDP headers inconsistent, or a fragment */
	GI_DROP_MALFORMED_TRUNCATED,/* sensor header cut short */
	GI_DROP_MALFORMED_MAGIC,
	GI_DROP_MALFORMED_VERSION,
	GI_DROP_MALFORMED_LENGTH,   /* header length fields disagree with the packet */
	GI_DROP_MALFORMED_INDEX,    /* packet index outside the frame */
	GI_DROP_MALFORMED_GEOMETRY, /* frame geometry differs from the stream's config */
	GI_DROP_ROCEV2_OPCODE,      /* rocev2: an opcode we do not place (ACK, READ, atomic, CNP…) */
	GI_DROP_ROCEV2_ICRC,        /* rocev2: invariant CRC mismatch */
	GI_DROP_ROCEV2_VA,          /* rocev2: RETH virtual address disagrees with the PSN's place */
	GI_DROP_VITA49_CONTEXT,     /* vita49: context, extension or command packet: counted, not placed */
	GI_DROP_ROCEV2_RKEY,        /* rocev2: RETH R_Key other than rocev2.rkey */
	GI_DROP_ROCEV2_BOUNDS,      /* rocev2 va: the RETH's VA and length fall outside the frame's page */
	GI_DROP__COUNT
};

/* Label values of dropped_packets_total{reason}, indexed by gi_drop_reason. */
#define GI_DROP_REASON_NAMES                                                                 \
	{ "ring_full", "no_stream", "malformed_ip", "malformed_truncated", "malformed_magic",   \
	  "malformed_version", "malformed_length", "malformed_index", "malformed_geometry",     \
	  "rocev2_opcode", "rocev2_icrc", "rocev2_va",                                          \
	  "vita49_context", "rocev2_rkey", "rocev2_bounds" }

/* What a parser found in one packet. */
struct gi_pkt_info {
	uint64_t seq;          /* sequence number as sent, seq_bits wide */
	uint64_t frame;        /* frame number as sent, frame_bits wide (has_frame) */
	uint64_t byte_off;     /* has_offset: payload's byte offset in its frame */
	uint64_t timestamp;    /* sender time, format's units (0 if none) */
	uint32_t pkt_index;    /* has_frame: the packet's index in its frame */
	uint32_t payload_off;  /* payload start, from the start of the UDP payload */
	uint32_t payload_len;
	uint32_t sensor_id;    /* sender's stream id, for the frame header */
	uint8_t has_frame;     /* 0: frame and index follow from the sequence number */
	uint8_t has_offset;    /* placement by byte offset (RDMA WRITE), not by index */
	uint8_t closes_frame;  /* the frame is final after this packet (e.g. WRITE with immediate) */
	uint8_t icrc_pending;  /* rocev2: the ICRC is still to be verified (the phased GPU path does it per warp) */
	uint8_t meta;          /* carries the sender's frame-end record (rocev2 profile hsb): at payload + meta_rel;
				* then `frame` is the record's frame number and `timestamp` its start of frame */
	uint8_t pad0;
	uint16_t meta_rel;
};

/* Every parser starts here: no field is left undefined on any path. */
GI_HD static inline void gi_pkt_info_clear(struct gi_pkt_info *pi)
{
	pi->seq = pi->frame = pi->byte_off = pi->timestamp = 0;
	pi->pkt_index = pi->payload_off = pi->payload_len = pi->sensor_id = 0;
	pi->has_frame = pi->has_offset = pi->closes_frame = pi->icrc_pending = 0;
	pi->meta = pi->pad0 = 0;
	pi->meta_rel = 0;
}

/*
 * Per-stream format parameters, fixed while the stream exists.  seq_bits and
 * frame_bits say how wide the sender's counters are (4, 16, 24, 32, 64), so
 * wraparound is handled once, generically.
 */
struct gi_format_params {
	uint32_t seq_bits;
	uint32_t frame_bits;
	uint64_t resync_frames;  /* a jump of more frames than this is a sender restart */
	uint64_t fmt[16];        /* the format's own parameters (fmt_*.h cast this) */
};

/* Defaults for `format`: its counters' widths; no restart detection. */
static inline void gi_format_params_init(struct gi_format_params *fp, enum gi_format format)
{
	struct gi_format_params zero = { 0, 0, 0, { 0 } };
	*fp = zero;
	switch (format) {
	case GI_FORMAT_ROCEV2:
		fp->seq_bits = 24; /* PSN */
		fp->frame_bits = 24;
		break;
	case GI_FORMAT_VITA49:
		fp->seq_bits = 4;  /* packet count */
		fp->frame_bits = 64;
		break;
	default:
		fp->seq_bits = 32;
		fp->frame_bits = 32;
		break;
	}
}

/*
 * Sign-extended distance from `ref` (a 64-bit extended value) to `v` (a
 * bits-wide counter): how far ahead (or, negative, behind) v is.  The sign
 * is extended in unsigned arithmetic: `d - mod` in int64_t overflows for a
 * 63-bit counter (a custom field's mask can make one).
 */
GI_HD static inline int64_t gi_extend_delta_eager(uint64_t ref, uint64_t v, uint32_t bits)
{
	/* the GPU's form: no branch on bits (GI_LOADS_FIRST, gi_hd.h); 64 bits is the mask of all ones */
	const uint64_t low = bits >= 64 ? ~0ull : (1ull << (bits & 63)) - 1, d = (v - ref) & low;
	return (int64_t)(d & ((low >> 1) + 1) ? d | ~low : d);
}

GI_HD static inline int64_t gi_extend_delta(uint64_t ref, uint64_t v, uint32_t bits)
{
	if (GI_LOADS_FIRST)
		return gi_extend_delta_eager(ref, v, bits);
	if (bits >= 64)
		return (int64_t)(v - ref);
	uint64_t mod = 1ull << bits;
	uint64_t d = (v - ref) & (mod - 1);
	return (int64_t)(d & (mod >> 1) ? d | ~(mod - 1) : d);
}

/* ---- udp_seq (udp_seq.h) as a format ------------------------------------ */

/* 0 or the gi_drop_reason of the packet. */
GI_HD static inline int gi_fmt_udp_seq_parse(const struct gi_format_params *fp, const uint8_t *udp_payload,
					     uint32_t len, uint32_t hdr_avail, uint32_t packets, uint32_t payload_bytes,
					     uint32_t last_bytes, struct gi_pkt_info *pi)
{
	struct gi_udp_seq h;
	gi_pkt_info_clear(pi);
	(void)fp;
	if (hdr_avail < GI_UDP_SEQ_HDR_LEN && len >= GI_UDP_SEQ_HDR_LEN)
		return GI_DROP_MALFORMED_TRUNCATED; /* the sensor header is not in the header segment */
	switch (gi_udp_seq_parse(udp_payload, len, &h)) {
	case GI_UDP_SEQ_OK:
		break;
	case GI_UDP_SEQ_TRUNCATED:
		return GI_DROP_MALFORMED_TRUNCATED;
	case GI_UDP_SEQ_BAD_MAGIC:
		return GI_DROP_MALFORMED_MAGIC;
	case GI_UDP_SEQ_BAD_VERSION:
		return GI_DROP_MALFORMED_VERSION;
	case GI_UDP_SEQ_BAD_LENGTH:
		return GI_DROP_MALFORMED_LENGTH;
	default:
		return GI_DROP_MALFORMED_INDEX;
	}
	/* a frame's last packet may be shorter (frame.bytes); gi_seq_locate() checks it is the last */
	if (h.packets_per_frame != packets || (h.payload_len != payload_bytes && h.payload_len != last_bytes))
		return GI_DROP_MALFORMED_GEOMETRY;
	pi->seq = h.seq;
	pi->frame = h.frame;
	pi->byte_off = 0;
	pi->timestamp = h.timestamp_ns;
	pi->pkt_index = h.pkt_index;
	pi->payload_off = GI_UDP_SEQ_HDR_LEN;
	pi->payload_len = h.payload_len;
	pi->sensor_id = h.stream_id;
	pi->has_frame = 1;
	pi->has_offset = 0;
	pi->closes_frame = 0;
	return 0;
}

GI_EXTERN_C_END

#endif /* GI_FORMAT_H */
