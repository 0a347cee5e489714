/*
 * pkt.h — Ethernet / 802.1Q / IPv4 / UDP parsing shared by every format.
 *
 * Runs per packet in the executor (host thread or GPU lane 0), so it reads
 * bytes one at a time: no alignment assumptions, no byte-swapping helpers
 * from libc or DPDK, nothing nvcc cannot compile.
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
};

#define GI_ETHERTYPE_IPV4 0x0800u
#define GI_ETHERTYPE_VLAN 0x8100u
#define GI_ETHERTYPE_QINQ 0x88a8u
#define GI_IPPROTO_UDP 17u

/*
 * Big-endian loads at any alignment.  The GPU has no unaligned loads, so
 * it reads bytes; the host loads the word and swaps it (two instructions,
 * where gcc does not always merge the byte loads itself).
 */
#if defined(__CUDA_ARCH__)
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

GI_EXTERN_C_END

#endif /* GI_PKT_H */
