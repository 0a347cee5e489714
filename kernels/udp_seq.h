/*
 * udp_seq.h — the `udp_seq` sensor header and the verification pattern.
 *
 * udp_seq is gpuingest's own framing for sensors that can be programmed to
 * send it (and for gpuingest-sim).  It is versioned and big-endian, 32 bytes,
 * directly after the UDP header:
 *
 *   off size field
 *     0    2 magic 0x4749 ("GI")
 *     2    1 version (1)
 *     3    1 flags (bit 0: last packet of the frame; informational)
 *     4    2 stream_id          sender's stream number
 *     6    2 packets_per_frame  must equal the stream's frame.packets
 *     8    4 seq                per-stream packet sequence, wraps at 2^32
 *    12    4 frame              frame number, wraps at 2^32
 *    16    2 pkt_index          index of this packet in its frame
 *    18    2 payload_len        bytes after this header, must equal frame.payload_bytes
 *    20    4 reserved           zero
 *    24    8 timestamp_ns       sender clock at transmission
 *
 * The pattern functions describe the payload gpuingest-sim sends, so that
 * gpuingest-frames (and the tests) can check every byte of a frame knowing
 * only (stream_id, frame, offset).
 */
#ifndef GI_UDP_SEQ_H
#define GI_UDP_SEQ_H

#include "pkt.h"

GI_EXTERN_C_BEGIN

#define GI_UDP_SEQ_MAGIC 0x4749u
#define GI_UDP_SEQ_VERSION 1u
#define GI_UDP_SEQ_HDR_LEN 32u
#define GI_UDP_SEQ_FLAG_LAST 0x01u

enum gi_udp_seq_status {
	GI_UDP_SEQ_OK = 0,
	GI_UDP_SEQ_TRUNCATED, /* fewer than 32 bytes of UDP payload */
	GI_UDP_SEQ_BAD_MAGIC,
	GI_UDP_SEQ_BAD_VERSION,
	GI_UDP_SEQ_BAD_LENGTH, /* payload_len disagrees with the UDP length */
	GI_UDP_SEQ_BAD_INDEX,  /* pkt_index >= packets_per_frame, or packets_per_frame == 0 */
};

struct gi_udp_seq {
	uint16_t stream_id;
	uint16_t packets_per_frame;
	uint32_t seq;
	uint32_t frame;
	uint16_t pkt_index;
	uint16_t payload_len;
	uint8_t flags;
	uint64_t timestamp_ns;
};

/* `p` points at the UDP payload, `len` is the UDP payload length. */
GI_HD static inline enum gi_udp_seq_status gi_udp_seq_parse(const uint8_t *p, uint32_t len,
							     struct gi_udp_seq *h)
{
	if (len < GI_UDP_SEQ_HDR_LEN)
		return GI_UDP_SEQ_TRUNCATED;
	if (gi_be16(p) != GI_UDP_SEQ_MAGIC)
		return GI_UDP_SEQ_BAD_MAGIC;
	if (p[2] != GI_UDP_SEQ_VERSION)
		return GI_UDP_SEQ_BAD_VERSION;
	h->flags = p[3];
	h->stream_id = gi_be16(p + 4);
	h->packets_per_frame = gi_be16(p + 6);
	h->seq = gi_be32(p + 8);
	h->frame = gi_be32(p + 12);
	h->pkt_index = gi_be16(p + 16);
	h->payload_len = gi_be16(p + 18);
	h->timestamp_ns = gi_be64(p + 24);
	if ((uint32_t)h->payload_len != len - GI_UDP_SEQ_HDR_LEN)
		return GI_UDP_SEQ_BAD_LENGTH;
	if (h->packets_per_frame == 0 || h->pkt_index >= h->packets_per_frame)
		return GI_UDP_SEQ_BAD_INDEX;
	return GI_UDP_SEQ_OK;
}

/* Inverse of gi_udp_seq_parse(), for the simulator and tests. */
static inline void gi_udp_seq_write(uint8_t *p, const struct gi_udp_seq *h)
{
	gi_put_be16(p, GI_UDP_SEQ_MAGIC);
	p[2] = GI_UDP_SEQ_VERSION;
	p[3] = h->flags;
	gi_put_be16(p + 4, h->stream_id);
	gi_put_be16(p + 6, h->packets_per_frame);
	gi_put_be32(p + 8, h->seq);
	gi_put_be32(p + 12, h->frame);
	gi_put_be16(p + 16, h->pkt_index);
	gi_put_be16(p + 18, h->payload_len);
	gi_put_be32(p + 20, 0);
	gi_put_be64(p + 24, h->timestamp_ns);
}

/*
 * Payload pattern: frame bytes are little-endian 64-bit words; word w of
 * frame `frame` of stream `stream_id` is a mix of (stream, frame) plus
 * w times an odd constant, so a byte from the wrong frame, stream or offset
 * (a misplaced packet, a stale slot) shows up as a mismatch.
 */
static inline uint64_t gi_pattern_seed(uint16_t stream_id, uint32_t frame)
{
	uint64_t z = ((uint64_t)stream_id << 40) ^ frame ^ 0x5851f42d4c957f2dull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint8_t gi_pattern_byte(uint64_t seed, uint64_t offset)
{
	uint64_t w = seed + (offset >> 3) * 0x9e3779b97f4a7c15ull;
	return (uint8_t)(w >> ((offset & 7) * 8));
}

/* Fill `len` bytes that sit at `offset` in the frame. */
static inline void gi_pattern_fill(uint8_t *dst, uint64_t seed, uint64_t offset, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		dst[i] = gi_pattern_byte(seed, offset + i);
}

/* Number of bytes in dst[0..len) that differ from the pattern at `offset`. */
static inline uint64_t gi_pattern_mismatches(const uint8_t *src, uint64_t seed, uint64_t offset, uint64_t len)
{
	uint64_t bad = 0;
	uint64_t i = 0;
	/* word-at-a-time where the frame offset is word aligned: verification of
	 * multi-gigabyte runs must not be the bottleneck of the tests */
	while (i < len && ((offset + i) & 7) != 0) {
		bad += src[i] != gi_pattern_byte(seed, offset + i);
		i++;
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t expect = seed + ((offset + i) >> 3) * 0x9e3779b97f4a7c15ull;
		uint64_t got;
		__builtin_memcpy(&got, src + i, 8);
		if (got != expect)
			for (int b = 0; b < 8; b++)
				bad += src[i + b] != (uint8_t)(expect >> (b * 8));
	}
	for (; i < len; i++)
		bad += src[i] != gi_pattern_byte(seed, offset + i);
	return bad;
}

GI_EXTERN_C_END

#endif /* GI_UDP_SEQ_H */
