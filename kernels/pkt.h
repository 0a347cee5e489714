/*
 * pkt.h — Ethernet / 802.1Q / IPv4 / UDP parsing shared by every format.
 *
 * Runs per packet in the executor (a host worker, or a GPU thread per
 * packet): no alignment assumptions (the GPU reads bytes; the host loads
 * words, which it may at any alignment), no byte-swapping helpers from
 * libc or DPDK, nothing nvcc cannot compile.  At the end, the host's
 * header prediction (struct gi_l4_memo).
 */
#ifndef GI_PKT_H
#define GI_PKT_H

#include "gi_hd.h"

GI_EXTERN_C_BEGIN

enum gi_l4_status {
	GI_L4_OK = 0,
	GI_L4_NOT_UDP,   /* not IPv4/UDP (ARP, IPv6, TCP…): not ours, counted as no_stream */
	GI_L4_MALFORMED, /* claims to be IPv4/UDP but the headers do not add up */
};

struct gi_l4 {
	uint32_t src_ip;       /* host order */
	uint32_t dst_ip;
	uint16_t src_port;
	uint16_t dst_port;
	uint16_t vlan;         /* 0xffff when untagged */
	uint16_t l4_off;       /* offset of the UDP header */
	uint32_t payload_off;  /* offset of the UDP payload */
	uint32_t payload_len;  /* from the UDP length field, checked against the frame */
	uint16_t l3_off;       /* offset of the IPv4 header (RoCEv2's ICRC covers it) */
	uint16_t l3_pad;
	uint32_t pad;          /* 32 bytes: a copy is two whole 16-byte stores, which a field load right after
				* can be forwarded from (header prediction copies it per packet; at 28 bytes
				* gcc's two stores overlapped and the next load of payload_off stalled) */
};
GI_STATIC_ASSERT(sizeof(struct gi_l4) == 32, "struct gi_l4 is two 16-byte halves");

#define GI_ETHERTYPE_IPV4 0x0800u
#define GI_ETHERTYPE_VLAN 0x8100u
#define GI_ETHERTYPE_QINQ 0x88a8u
#define GI_IPPROTO_UDP 17u

/*
 * Big-endian loads at any alignment.  The GPU has no unaligned loads, so
 * it reads bytes; the host loads the word and swaps it (two instructions,
 * where gcc does not always merge the byte loads itself).
 */
#if GI_GPU_CODE
GI_HD static inline uint16_t gi_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

GI_HD static inline uint32_t gi_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

GI_HD static inline uint64_t gi_be64(const uint8_t *p)
{
	return ((uint64_t)gi_be32(p) << 32) | gi_be32(p + 4);
}

/* Eight bytes as the CPU loads them (little-endian on every target): for comparing bytes, not numbers. */
GI_HD static inline uint64_t gi_ne64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
#else
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpuingest's host code assumes a little-endian CPU (x86-64, arm64)"
#endif
static inline uint16_t gi_be16(const uint8_t *p)
{
	uint16_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return __builtin_bswap16(v);
}

static inline uint32_t gi_be32(const uint8_t *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return __builtin_bswap32(v);
}

static inline uint64_t gi_be64(const uint8_t *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return __builtin_bswap64(v);
}

static inline uint64_t gi_ne64(const uint8_t *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}
#endif

GI_HD static inline void gi_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

GI_HD static inline void gi_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

GI_HD static inline void gi_put_be64(uint8_t *p, uint64_t v)
{
	gi_put_be32(p, (uint32_t)(v >> 32));
	gi_put_be32(p + 4, (uint32_t)v);
}

/*
 * Parse up to the UDP payload.  Accepts one or two VLAN tags, IPv4 with
 * options; rejects fragments (a sensor payload split by IP cannot be placed
 * without reassembly, so it is malformed for us) and lengths that overrun
 * the frame.  Trailing Ethernet padding beyond the IP total length is fine.
 * `len` is the packet length; only the first `hdr_len` bytes (<= len) are
 * readable at `p` (the header segment under buffer split), so every header
 * byte must lie there.
 */
GI_HD static inline enum gi_l4_status gi_parse_l4(const uint8_t *p, uint32_t len, uint32_t hdr_len,
						  struct gi_l4 *out)
{
	uint32_t off = 12;
	uint16_t et;

	/* every field defined on every path: callers may read it after an error */
	out->src_ip = out->dst_ip = 0;
	out->pad = 0;
	out->src_port = out->dst_port = 0;
	out->l4_off = out->l3_off = 0;
	out->payload_off = out->payload_len = 0;
	out->vlan = 0xffff;
	if (hdr_len > len)
		hdr_len = len;
	if (hdr_len < 14)
		return GI_L4_MALFORMED;
	et = gi_be16(p + off);
	for (int tags = 0; (et == GI_ETHERTYPE_VLAN || et == GI_ETHERTYPE_QINQ) && tags < 2; tags++) {
		if (hdr_len < off + 6)
			return GI_L4_MALFORMED;
		out->vlan = gi_be16(p + off + 2) & 0x0fff;
		off += 4;
		et = gi_be16(p + off);
	}
	off += 2;
	if (et != GI_ETHERTYPE_IPV4)
		return GI_L4_NOT_UDP;
	if (hdr_len < off + 20)
		return GI_L4_MALFORMED;

	const uint8_t *ip = p + off;
	uint32_t ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	uint32_t tot = gi_be16(ip + 2);
	if ((ip[0] >> 4) != 4 || ihl < 20 || tot < ihl || off + tot > len || off + ihl + 8 > hdr_len)
		return GI_L4_MALFORMED;
	if (ip[9] != GI_IPPROTO_UDP)
		return GI_L4_NOT_UDP;
	/* more-fragments flag or a non-zero fragment offset */
	if ((gi_be16(ip + 6) & 0x3fff) != 0)
		return GI_L4_MALFORMED;
	if (tot < ihl + 8)
		return GI_L4_MALFORMED;

	const uint8_t *udp = ip + ihl;
	uint32_t ulen = gi_be16(udp + 4);
	if (ulen < 8 || ulen > tot - ihl)
		return GI_L4_MALFORMED;

	out->src_ip = gi_be32(ip + 12);
	out->dst_ip = gi_be32(ip + 16);
	out->src_port = gi_be16(udp);
	out->dst_port = gi_be16(udp + 2);
	out->l3_off = (uint16_t)off;
	out->l3_pad = 0;
	out->l4_off = (uint16_t)(off + ihl);
	out->payload_off = off + ihl + 8;
	out->payload_len = ulen - 8;
	return GI_L4_OK;
}

/*
 * Header prediction: a worker's memory of the last packet gi_parse_l4()
 * accepted, so that the next one of the same flow skips it.  Sensor
 * traffic arrives in long runs of one flow whose headers differ only in
 * fields the parser never reads: the IPv4 identification, the IPv4 and UDP
 * checksums.  The memo keeps the bytes from the ethertype (offset 12) to
 * the UDP payload with those fields masked out, and what gi_parse_l4() and
 * the stream map made of them.
 *
 * Exact by construction: gi_parse_l4() reads only bytes within the key,
 * and which bytes it reads follows from the bytes read before, so a packet
 * whose key bytes are equal takes the same path to the same offsets.  Its
 * length checks hold as well: every header byte lies in the first
 * GI_L4_MEMO_END bytes, which a hit requires readable, and the IPv4 total
 * length (in the key) must fit the packet (min_len).  Shapes kept: untagged,
 * one or two VLAN tags, IPv4 without options; other packets parse in full.
 *
 * Cost (bench/instr.sh): a hit saves about 65 instructions; a miss costs
 * about 50 (the compare, then remembering the packet).  Flows that
 * alternate packet by packet miss every time, so after GI_L4_MEMO_TRIES
 * misses in a row a batch's memo stays empty: a compare is then one test.
 *
 * Host only (GI_HEADER_MEMO): callers pass NULL on the GPU.
 */
#define GI_L4_MEMO_WORDS 5u
#define GI_L4_MEMO_END (12u + 8u * GI_L4_MEMO_WORDS) /* bytes a hit reads: up to two tags' UDP header */
#define GI_L4_MEMO_TRIES 4u

struct gi_l4_memo {
	uint64_t key[GI_L4_MEMO_WORDS];  /* bytes 12.. as loaded (gi_ne64), masked */
	uint64_t mask[GI_L4_MEMO_WORDS]; /* the bytes gi_parse_l4() reads (and TOS, TTL: constant in a flow) */
	uint32_t min_len;                /* IPv4 end; UINT32_MAX: empty */
	uint16_t port;                   /* the rx port, which the map result depends on */
	uint16_t head;                   /* the stream map's entry for (port, UDP port) */
	uint16_t shape;                  /* mask[] is for an IPv4 header at this offset */
	uint16_t misses;                 /* in a row */
	struct gi_l4 l4;
};

/* Does the packet parse as the memo's did?  Then m->l4 and m->head are its. */
GI_HD static inline int gi_l4_memo_hit(struct gi_l4_memo *m, const uint8_t *p, uint32_t len, uint32_t hdr_len,
				       uint16_t port)
{
	if (len < m->min_len || hdr_len < GI_L4_MEMO_END || port != m->port)
		return 0;
	const uint8_t *q = p + 12;
	uint64_t d = ((gi_ne64(q) & m->mask[0]) ^ m->key[0]) | ((gi_ne64(q + 8) & m->mask[1]) ^ m->key[1]) |
		     ((gi_ne64(q + 16) & m->mask[2]) ^ m->key[2]) | ((gi_ne64(q + 24) & m->mask[3]) ^ m->key[3]) |
		     ((gi_ne64(q + 32) & m->mask[4]) ^ m->key[4]);
	if (d)
		return 0;
	m->misses = 0;
	return 1;
}

GI_HD static inline void gi_l4_memo_masks(struct gi_l4_memo *m, uint64_t m0, uint64_t m1, uint64_t m2, uint64_t m3,
					   uint64_t m4)
{
	m->mask[0] = m0;
	m->mask[1] = m1;
	m->mask[2] = m2;
	m->mask[3] = m3;
	m->mask[4] = m4;
}

/*
 * The masks for an IPv4 header without options at `l3_off`, as gi_ne64()
 * loads them (key byte i is bits 8(i % 8).. of word i / 8): ones from the
 * ethertype to the UDP payload, zeros on the IPv4 identification (IPv4
 * bytes 4-5), its checksum (10-11) and the UDP checksum (UDP bytes 6-7).
 * test_l4_memo derives them again.  0 for a shape the memo does not keep.
 */
GI_HD static inline int gi_l4_memo_shape(struct gi_l4_memo *m, uint32_t l3_off)
{
	switch (l3_off) {
	case 14: /* untagged */
		gi_l4_memo_masks(m, 0x0000ffffffffffffull, 0xffff0000ffffffffull, 0xffffffffffffffffull,
				 0x00000000ffffffffull, 0);
		break;
	case 18: /* one VLAN tag */
		gi_l4_memo_masks(m, 0xffffffffffffffffull, 0xffffffff0000ffffull, 0xffffffffffff0000ull,
				 0xffffffffffffffffull, 0);
		break;
	case 22: /* two */
		gi_l4_memo_masks(m, 0xffffffffffffffffull, 0x0000ffffffffffffull, 0xffff0000ffffffffull,
				 0xffffffffffffffffull, 0x00000000ffffffffull);
		break;
	default:
		return 0;
	}
	m->shape = (uint16_t)l3_off;
	return 1;
}

/* Before a batch's first packet: empty, the masks for untagged packets. */
GI_HD static inline void gi_l4_memo_reset(struct gi_l4_memo *m)
{
	m->min_len = UINT32_MAX;
	m->misses = 0;
	(void)gi_l4_memo_shape(m, 14);
}

/* After a miss: remember packet p, which gi_parse_l4() accepted as *l4, and its map entry. */
GI_HD static inline void gi_l4_memo_store(struct gi_l4_memo *m, const uint8_t *p, uint32_t hdr_len, uint16_t port,
					  const struct gi_l4 *l4, uint16_t head)
{
	m->min_len = UINT32_MAX;
	if (++m->misses > GI_L4_MEMO_TRIES || hdr_len < GI_L4_MEMO_END || l4->payload_off != l4->l3_off + 20u + 8u)
		return; /* flows taking turns, too short to compare, or IPv4 options */
	if (l4->l3_off != m->shape && !gi_l4_memo_shape(m, l4->l3_off))
		return;
	const uint8_t *q = p + 12;
	m->key[0] = gi_ne64(q) & m->mask[0];
	m->key[1] = gi_ne64(q + 8) & m->mask[1];
	m->key[2] = gi_ne64(q + 16) & m->mask[2];
	m->key[3] = gi_ne64(q + 24) & m->mask[3];
	m->key[4] = gi_ne64(q + 32) & m->mask[4];
	m->l4 = *l4;
	m->port = port;
	m->head = head;
	m->min_len = l4->l3_off + (uint32_t)gi_be16(p + l4->l3_off + 2);
}

GI_EXTERN_C_END

#endif /* GI_PKT_H */
