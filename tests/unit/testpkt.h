/*
 * testpkt.h — builds Ethernet/IPv4/UDP/udp_seq packets for the unit tests.
 * Test-only; gpuingest-sim has the production generator.
 */
#ifndef GI_TESTPKT_H
#define GI_TESTPKT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/udp_seq.h"

#define TP_MAX 2048

struct tp_opts {
	uint16_t udp_dst;
	int vlan;          /* -1: untagged */
	int ip_opts;       /* 32-bit words of IPv4 options */
};

static inline uint16_t tp_csum(const uint8_t *p, size_t len)
{
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		s += (uint32_t)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Writes a packet carrying `h` + payload (pattern) into buf; returns its length. */
static inline uint32_t tp_build(uint8_t *buf, const struct tp_opts *o, const struct gi_udp_seq *h)
{
	uint32_t off = 12;
	memset(buf, 0, TP_MAX);
	memcpy(buf, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	if (o->vlan >= 0) {
		gi_put_be16(buf + off, 0x8100);
		gi_put_be16(buf + off + 2, (uint16_t)o->vlan);
		off += 4;
	}
	gi_put_be16(buf + off, 0x0800);
	off += 2;
	uint8_t *ip = buf + off;
	uint32_t ihl = 20 + 4u * (uint32_t)o->ip_opts;
	uint32_t udp_len = 8 + GI_UDP_SEQ_HDR_LEN + h->payload_len;
	ip[0] = (uint8_t)(0x40 | (ihl / 4));
	gi_put_be16(ip + 2, (uint16_t)(ihl + udp_len));
	ip[8] = 64;
	ip[9] = 17;
	gi_put_be32(ip + 12, 0x0a000001);
	gi_put_be32(ip + 16, 0x0a000002);
	for (uint32_t i = 20; i < ihl; i++)
		ip[i] = 1; /* NOP options */
	gi_put_be16(ip + 10, tp_csum(ip, ihl));
	uint8_t *udp = ip + ihl;
	gi_put_be16(udp, 4000);
	gi_put_be16(udp + 2, o->udp_dst);
	gi_put_be16(udp + 4, (uint16_t)udp_len);
	gi_udp_seq_write(udp + 8, h);
	gi_pattern_fill(udp + 8 + GI_UDP_SEQ_HDR_LEN, gi_pattern_seed(h->stream_id, h->frame),
			(uint64_t)h->pkt_index * h->payload_len, h->payload_len);
	return off + ihl + udp_len;
}

#endif /* GI_TESTPKT_H */
