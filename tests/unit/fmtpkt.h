/*
 * fmtpkt.h — test packets of the sensor formats beyond udp_seq (testpkt.h):
 * an Ethernet/IPv4/UDP wrapper, VITA 49 data packets, RoCEv2 packets with a
 * correct ICRC (ours; test_rocev2.c holds it to scapy's).  Test-only;
 * gpuingest-sim has the production generators.
 */
#ifndef GI_FMTPKT_H
#define GI_FMTPKT_H

#include <stdint.h>
#include <string.h>

#include "kernels/fmt_rocev2.h"
#include "kernels/fmt_vita49.h"
#include "testpkt.h"

/* ---- Ethernet/IPv4/UDP around a UDP payload, and VITA 49 ------------------ */

/* Ethernet/IPv4/UDP around a UDP payload of `ulen` bytes already at buf + 42. */
static inline uint32_t fp_wrap_udp(uint8_t *buf, uint16_t udp_dst, uint32_t ulen)
{
	memcpy(buf, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00", 14);
	uint8_t *ip = buf + 14, *udp = ip + 20;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	gi_put_be16(ip + 2, (uint16_t)(20 + 8 + ulen));
	ip[8] = 64;
	ip[9] = 17;
	gi_put_be32(ip + 12, 0x0a000001);
	gi_put_be32(ip + 16, 0x0a000002);
	gi_put_be16(ip + 10, tp_csum(ip, 20));
	gi_put_be16(udp, 4000);
	gi_put_be16(udp + 2, udp_dst);
	gi_put_be16(udp + 4, (uint16_t)(8 + ulen));
	gi_put_be16(udp + 6, 0);
	return 42 + ulen;
}

/* A VRT data packet at `u`: prologue, pattern payload of (sid, frame) at index, trailer. */
static inline uint32_t fp_vrt_data(uint8_t *u, const struct gi_vita49_hdr *h, uint32_t payload, uint64_t frame,
				   uint32_t index)
{
	uint32_t pro = gi_vita49_write(u, h, payload / 4);
	gi_pattern_fill(u + pro, gi_pattern_seed((uint16_t)h->stream_id, (uint32_t)frame), (uint64_t)index * payload,
			payload);
	return pro + payload + (h->trailer ? 4u : 0u);
}

/* ---- RoCEv2 ------------------------------------------------------------------- */

struct rp {
	uint8_t opcode;
	uint32_t qp;
	uint32_t psn;
	uint32_t plen;    /* payload without pad */
	uint64_t va;      /* RETH */
	uint32_t dma_len; /* RETH, 0: plen */
	uint8_t tver;
	int pad;          /* -1: what plen needs */
	int vlan;
	uint64_t seed;    /* payload pattern */
	uint64_t off;
	int bad_icrc;
	/* Holoscan Sensor Bridge's frame end (test_hsb.c): after the payload, zpad zero bytes and the
	 * 128-byte record at meta; the RETH's R_Key and the immediate (0: 0x1234, and without meta
	 * 0xfeedf00d) */
	const uint8_t *meta;
	uint32_t zpad;
	uint32_t rkey;
	uint32_t imm;
};

static inline uint32_t rp_build(uint8_t *b, const struct rp *p)
{
	uint32_t fl = gi_rocev2_opcode_flags(p->opcode);
	uint32_t l2 = 14 + (p->vlan ? 4u : 0u);
	uint32_t pad = p->pad >= 0 ? (uint32_t)p->pad
				   : (4 - (p->plen + (p->meta ? p->zpad + GI_HSB_META_BYTES : 0u)) % 4) % 4;
	/* refused opcodes: lay them out as if they had no extension header */
	uint32_t hlen = GI_ROCEV2_BTH_LEN + gi_rocev2_ext_len(fl);
	uint32_t body = p->plen + (p->meta ? p->zpad + GI_HSB_META_BYTES : 0u);
	uint32_t ulen = 8 + hlen + body + pad + GI_ROCEV2_ICRC_LEN;
	uint8_t *ip = b + l2, *udp = ip + 20, *u = udp + 8;

	memset(b, 0, l2 + 20 + ulen);
	memcpy(b, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	if (p->vlan) {
		gi_put_be16(b + 12, GI_ETHERTYPE_VLAN);
		gi_put_be16(b + 14, 7);
	}
	gi_put_be16(b + l2 - 2, GI_ETHERTYPE_IPV4);
	ip[0] = 0x45;
	ip[1] = 0x02; /* ECN capable: masked */
	gi_put_be16(ip + 2, (uint16_t)(20 + ulen));
	gi_put_be16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = GI_IPPROTO_UDP;
	gi_put_be16(ip + 10, 0xbeef); /* masked: the ICRC does not care */
	gi_put_be32(ip + 12, 0x0a000001);
	gi_put_be32(ip + 16, 0x0a000002);
	gi_put_be16(udp, 49152);
	gi_put_be16(udp + 2, GI_ROCEV2_UDP_PORT);
	gi_put_be16(udp + 4, (uint16_t)ulen);
	u[0] = p->opcode;
	u[1] = (uint8_t)((pad << 4) | p->tver);
	gi_put_be16(u + 2, 0xffff);
	u[5] = (uint8_t)(p->qp >> 16);
	gi_put_be16(u + 6, (uint16_t)p->qp);
	u[9] = (uint8_t)(p->psn >> 16);
	gi_put_be16(u + 10, (uint16_t)p->psn);
	uint8_t *x = u + GI_ROCEV2_BTH_LEN;
	if (fl & GI_ROCEV2_F_DETH) {
		gi_put_be32(x, 0x11111111);
		gi_put_be32(x + 4, 0x42);
		x += GI_ROCEV2_DETH_LEN;
	}
	if (fl & GI_ROCEV2_F_RETH) {
		gi_put_be64(x, p->va);
		gi_put_be32(x + 8, p->rkey ? p->rkey : 0x1234);
		gi_put_be32(x + 12, p->dma_len ? p->dma_len : body);
		x += GI_ROCEV2_RETH_LEN;
	}
	if (fl & GI_ROCEV2_F_IMM) {
		gi_put_be32(x, p->imm || p->meta ? p->imm : 0xfeedf00d);
		x += GI_ROCEV2_IMM_LEN;
	}
	gi_pattern_fill(x, p->seed, p->off, p->plen);
	if (p->meta) {
		memset(x + p->plen, 0, p->zpad);
		memcpy(x + p->plen + p->zpad, p->meta, GI_HSB_META_BYTES);
	}
	uint32_t len = l2 + 20 + ulen;
	uint32_t icrc = gi_rocev2_icrc(b, len, NULL, l2, ulen) ^ (p->bad_icrc ? 1u : 0u);
	for (int i = 0; i < 4; i++)
		b[len - 4 + i] = (uint8_t)(icrc >> (8 * i));
	return len;
}

#endif /* GI_FMTPKT_H */
