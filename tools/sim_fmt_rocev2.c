/*
 * sim_fmt_rocev2.c — gpuingest-sim's rocev2 streams (see sim_fmt_rocev2.h).
 *
 * A frame is one message of packets_per_frame packets (write, send) or
 * packets_per_frame one-packet messages (ud-send); PSNs run on across
 * frames, as the daemon derives frames from them.  Header layouts and the
 * ICRC come from kernels/fmt_rocev2.h, which tests check against scapy.
 *
 * Single-threaded: the sim's main thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fmt_rocev2.h"
#include "kernels/udp_seq.h"
#include "sim_fmt_rocev2.h"

enum { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_UD_SEND };
static const char *const op_names[] = { "write", "write-imm", "send", "send-imm", "ud-send" };

static uint64_t parse_num(const char *opt, const char *s, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr, "gpuingest-sim: %s: expected an integer in [0, %llu], got '%s' (see --help)\n", opt,
			(unsigned long long)max, s);
		exit(GI_SIM_EXIT_USAGE);
	}
	return v;
}

void gi_sim_rocev2_option(struct gi_sim_cfg *c, int opt, const char *arg)
{
	struct gi_sim_rocev2_cfg *r = &c->rocev2;

	switch (opt) {
	case GI_SIM_OPT_ROCEV2_DST_QP: r->dst_qp = (uint32_t)parse_num("--dst-qp", arg, GI_ROCEV2_QP_MASK); r->qp_set = true; break;
	case GI_SIM_OPT_ROCEV2_BASE_VA: r->base_va = parse_num("--base-va", arg, UINT64_MAX); r->va_set = true; break;
	case GI_SIM_OPT_ROCEV2_OPCODE:
		for (uint32_t k = 0; k < sizeof(op_names) / sizeof(op_names[0]); k++)
			if (!strcmp(arg, op_names[k])) {
				r->opcode = k;
				return;
			}
		fprintf(stderr, "gpuingest-sim: --opcode: '%s' is not one of write, write-imm, send, send-imm, ud-send "
			"(see --help)\n", arg);
		exit(GI_SIM_EXIT_USAGE);
	default: break;
	}
}

int gi_sim_rocev2_stream(struct gi_sim *sim, struct gi_sim_stream *st)
{
	struct gi_sim_cfg *c = &sim->cfg;
	uint32_t base = c->rocev2.qp_set ? c->rocev2.dst_qp : 256;

	if (c->kind == GI_SIM_UDP) {
		fprintf(stderr, "gpuingest-sim: stream %u: rocev2 needs a memif or pcap port (the ICRC covers the IPv4 "
			"header, which a kernel socket writes)\n", st->id);
		return -1;
	}
	if (base + st->id > GI_ROCEV2_QP_MASK) {
		fprintf(stderr, "gpuingest-sim: stream %u: QP %u + %u runs past 2^24 - 1\n", st->id, base, st->id);
		return -1;
	}
	st->roce_qp = base + st->id;
	st->dst_port = GI_ROCEV2_UDP_PORT;
	st->mal_kinds = 1u << GI_SIM_MAL_IP | 1u << GI_SIM_MAL_TRUNCATED | 1u << GI_SIM_MAL_VERSION |
			1u << GI_SIM_MAL_LENGTH | 1u << GI_SIM_MAL_GEOMETRY | 1u << GI_SIM_MAL_ROCEV2_ICRC |
			1u << GI_SIM_MAL_ROCEV2_OPCODE | 1u << GI_SIM_MAL_ROCEV2_VA;
	/* headers + ICRC + pad + the geometry variant's 4 extra bytes + length's 1 */
	uint32_t over = GI_ROCEV2_MAX_HDR_LEN + GI_ROCEV2_ICRC_LEN + 3 + 4 + 1;
	if (c->hdr_max < over)
		c->hdr_max = over;
	return 0;
}

static uint8_t opcode_of(uint32_t op, uint32_t idx, uint32_t ppf)
{
	int first = idx == 0, last = idx + 1 == ppf;

	switch (op) {
	case OP_UD_SEND:
		return GI_ROCEV2_UD | GI_ROCEV2_SEND_ONLY;
	case OP_SEND:
	case OP_SEND_IMM:
		if (first && last)
			return op == OP_SEND ? GI_ROCEV2_SEND_ONLY : GI_ROCEV2_SEND_ONLY_IMM;
		if (last)
			return op == OP_SEND ? GI_ROCEV2_SEND_LAST : GI_ROCEV2_SEND_LAST_IMM;
		return first ? GI_ROCEV2_SEND_FIRST : GI_ROCEV2_SEND_MIDDLE;
	default:
		if (first && last)
			return op == OP_WRITE ? GI_ROCEV2_WRITE_ONLY : GI_ROCEV2_WRITE_ONLY_IMM;
		if (last)
			return op == OP_WRITE ? GI_ROCEV2_WRITE_LAST : GI_ROCEV2_WRITE_LAST_IMM;
		return first ? GI_ROCEV2_WRITE_FIRST : GI_ROCEV2_WRITE_MIDDLE;
	}
}

uint32_t gi_sim_rocev2_build(const struct gi_sim *sim, const struct gi_sim_stream *st, const struct gi_sim_pkt *p,
			     uint8_t *u)
{
	const struct gi_sim_rocev2_cfg *rc = &sim->cfg.rocev2;
	uint64_t base_va = rc->va_set ? rc->base_va : 0; /* the daemon's rocev2.base_va default */
	uint32_t idx = p->pkt_index, plen = gi_sim_plen(st, idx);
	uint8_t op = opcode_of(rc->opcode, idx, st->ppf);

	switch (p->kind) {
	case GI_SIM_MAL_ROCEV2_OPCODE:
		op = GI_ROCEV2_ACK;
		break;
	case GI_SIM_MAL_ROCEV2_VA:
		op = GI_ROCEV2_WRITE_ONLY; /* a RETH whose VA is one byte off its PSN's place */
		break;
	case GI_SIM_MAL_GEOMETRY:
		plen = st->payload + 4; /* neither frame.payload_bytes nor the last packet's */
		break;
	default:
		break;
	}
	uint32_t fl = gi_rocev2_opcode_flags(op);
	uint32_t pad = (4 - plen % 4) % 4;

	u[0] = op;
	u[1] = (uint8_t)(pad << 4 | (p->kind == GI_SIM_MAL_VERSION ? 1u : 0u)); /* TVer 0 */
	gi_put_be16(u + 2, 0xffff);                                              /* default P_Key */
	gi_put_be32(u + 4, st->roce_qp);                                         /* resv8 0, QP */
	gi_put_be32(u + 8, p->seq & GI_ROCEV2_QP_MASK);                          /* AckReq 0, PSN */
	if (p->kind == GI_SIM_MAL_TRUNCATED)
		return GI_ROCEV2_BTH_LEN; /* no room even for the ICRC */
	uint8_t *x = u + GI_ROCEV2_BTH_LEN;
	if (fl & GI_ROCEV2_F_DETH) {
		gi_put_be32(x, 0x80010000u); /* Q_Key */
		gi_put_be32(x + 4, 1);       /* source QP */
		x += GI_ROCEV2_DETH_LEN;
	}
	if (fl & GI_ROCEV2_F_RETH) {
		uint64_t off = (uint64_t)idx * st->payload + (p->kind == GI_SIM_MAL_ROCEV2_VA ? 1u : 0u);
		gi_put_be64(x, base_va + off);
		gi_put_be32(x + 8, 0x1000u + st->id); /* R_Key */
		/* the message's length: to the frame's end, its last packet maybe short */
		gi_put_be32(x + 12, (fl & GI_ROCEV2_F_LAST) ? plen : (st->ppf - 1 - idx) * st->payload + st->last);
		x += GI_ROCEV2_RETH_LEN;
	}
	if (fl & GI_ROCEV2_F_IMM) {
		gi_put_be32(x, p->frame);
		x += GI_ROCEV2_IMM_LEN;
	}
	/* the daemon numbers frames from the first PSN it sees, which is this stream's first */
	gi_pattern_fill(x, gi_pattern_seed((uint16_t)st->roce_qp, p->frame - sim->cfg.frame_start),
			(uint64_t)idx * st->payload, plen);
	memset(x + plen, 0, pad + (p->kind == GI_SIM_MAL_LENGTH ? 1u : 0u));
	x += plen + pad + (p->kind == GI_SIM_MAL_LENGTH ? 1u : 0u); /* length: payload + pad not whole words */
	return (uint32_t)(x - u) + GI_ROCEV2_ICRC_LEN;
}

void gi_sim_rocev2_finish(const struct gi_sim_pkt *p, uint8_t *frame, uint32_t len, uint32_t l3_off)
{
	uint8_t *udp = frame + l3_off + (uint32_t)(frame[l3_off] & 0x0f) * 4;
	uint32_t udp_len = gi_be16(udp + 4);

	gi_put_be16(udp + 6, 0); /* RoCEv2 senders leave the UDP checksum zero; the ICRC protects */
	if (udp_len < 8 + GI_ROCEV2_BTH_LEN + GI_ROCEV2_ICRC_LEN)
		return; /* the truncated variant carries no ICRC */
	uint32_t icrc = gi_rocev2_icrc(frame, len, NULL, l3_off, udp_len);
	if (p->kind == GI_SIM_MAL_ROCEV2_ICRC)
		icrc ^= 0x00010000u;
	uint8_t *t = udp + udp_len - GI_ROCEV2_ICRC_LEN;
	for (int i = 0; i < 4; i++)
		t[i] = (uint8_t)(icrc >> (8 * i)); /* least-significant byte first */
}
