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

static int hsb_stream(struct gi_sim *sim, struct gi_sim_stream *st);

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
	case GI_SIM_OPT_HSB_FORM:
		if (strcmp(arg, "fpga") && strcmp(arg, "emulator")) {
			fprintf(stderr, "gpuingest-sim: --hsb-form: '%s' is not fpga or emulator (see --help)\n", arg);
			exit(GI_SIM_EXIT_USAGE);
		}
		r->hsb_form = !strcmp(arg, "emulator");
		break;
	case GI_SIM_OPT_HSB_PAGES: r->pages = (uint32_t)parse_num("--pages", arg, 4096); break;
	case GI_SIM_OPT_HSB_FIRST_PAGE:
		r->first_page = (uint32_t)parse_num("--first-page", arg, 4095);
		r->first_page_set = true;
		break;
	case GI_SIM_OPT_HSB_PAGE_BYTES: r->page_bytes = parse_num("--page-bytes", arg, 1ull << 40); break;
	case GI_SIM_OPT_HSB_BAD_CRC: r->bad_crc_every = (uint32_t)parse_num("--bad-crc-every", arg, 1u << 30); break;
	case GI_SIM_OPT_HSB_MTU: {
		uint64_t mtu = parse_num("--mtu", arg, 9600);
		if (mtu < 74 + GI_HSB_ALIGN) {
			fprintf(stderr, "gpuingest-sim: --mtu: %llu leaves no 128-byte payload (allowed: 202..9600)\n",
				(unsigned long long)mtu);
			exit(GI_SIM_EXIT_USAGE);
		}
		c->payload = (uint32_t)((mtu - 74) / GI_HSB_ALIGN * GI_HSB_ALIGN); /* HSB's packetizer */
		break;
	}
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
	if (st->hsb)
		return hsb_stream(sim, st);
	st->mal_kinds = 1u << GI_SIM_MAL_IP | 1u << GI_SIM_MAL_TRUNCATED | 1u << GI_SIM_MAL_VERSION |
			1u << GI_SIM_MAL_LENGTH | 1u << GI_SIM_MAL_GEOMETRY | 1u << GI_SIM_MAL_ROCEV2_ICRC |
			1u << GI_SIM_MAL_ROCEV2_OPCODE | 1u << GI_SIM_MAL_ROCEV2_VA;
	/* headers + ICRC + pad + the geometry variant's 4 extra bytes + length's 1 */
	uint32_t over = GI_ROCEV2_MAX_HDR_LEN + GI_ROCEV2_ICRC_LEN + 3 + 4 + 1;
	if (c->hdr_max < over)
		c->hdr_max = over;
	return 0;
}

/* ---- Holoscan Sensor Bridge (--format hsb) --------------------------------- */

static uint64_t hsb_frame_bytes(const struct gi_sim_stream *st)
{
	return (uint64_t)(st->data - 1) * st->payload + st->last;
}

static uint64_t hsb_page_bytes(const struct gi_sim_rocev2_cfg *r, const struct gi_sim_stream *st)
{
	return r->page_bytes ? r->page_bytes : gi_hsb_align(hsb_frame_bytes(st)) + GI_HSB_META_BYTES;
}

/* Does a frame's record go in a packet of its own (its own PSN, so one more packet per frame)? */
static int hsb_own_packet(const struct gi_sim_stream *st)
{
	return st->ppf > st->data;
}

/*
 * HSB's software emulator (rocev2_transmitter.cpp) appends the record to
 * the frame's last data packet only when this holds, with `last` the last
 * data chunk, `zeros` the padding up to the record's 128-aligned offset:
 * last + zeros + 128 + 4 + 128 <= payload (the immediate's 4, and 128 more
 * of slack its own code keeps); else it sends the record as the FPGA does.
 */
static int hsb_emulator_embeds(const struct gi_sim_stream *st)
{
	uint64_t fb = hsb_frame_bytes(st);
	uint64_t zeros = gi_hsb_align(fb) - fb;
	return st->last + zeros + GI_HSB_META_BYTES + GI_ROCEV2_IMM_LEN + GI_HSB_META_BYTES <= st->payload;
}

static int hsb_stream(struct gi_sim *sim, struct gi_sim_stream *st)
{
	struct gi_sim_cfg *c = &sim->cfg;
	struct gi_sim_rocev2_cfg *r = &c->rocev2;
	uint64_t fb = hsb_frame_bytes(st);

	if (!r->pages)
		r->pages = 2;
	if (!r->first_page_set)
		r->first_page = 1;
	if (r->first_page >= r->pages) {
		fprintf(stderr, "gpuingest-sim: --first-page %u is not one of the %u pages\n", r->first_page, r->pages);
		return -1;
	}
	if (hsb_page_bytes(r, st) < gi_hsb_align(fb) + GI_HSB_META_BYTES) {
		fprintf(stderr, "gpuingest-sim: --page-bytes %llu does not hold a %llu-byte frame and its record "
			"(allowed: %llu or more)\n", (unsigned long long)r->page_bytes, (unsigned long long)fb,
			(unsigned long long)(gi_hsb_align(fb) + GI_HSB_META_BYTES));
		return -1;
	}
	/* the FPGA always sends the record on its own; the emulator unless it fits the last data packet */
	if (r->hsb_form == 0 || !hsb_emulator_embeds(st)) {
		st->ppf = st->data + 1; /* the frame-end packet takes a PSN of its own */
		st->total = c->frames ? c->frames * st->ppf : UINT64_MAX;
	}
	/* what an HSB stream can carry: a geometry variant would read as rocev2_bounds on a last packet */
	st->mal_kinds = 1u << GI_SIM_MAL_IP | 1u << GI_SIM_MAL_TRUNCATED | 1u << GI_SIM_MAL_VERSION |
			1u << GI_SIM_MAL_LENGTH | 1u << GI_SIM_MAL_ROCEV2_ICRC | 1u << GI_SIM_MAL_ROCEV2_OPCODE |
			1u << GI_SIM_MAL_ROCEV2_VA | 1u << GI_SIM_MAL_ROCEV2_RKEY | 1u << GI_SIM_MAL_ROCEV2_BOUNDS;
	uint32_t over = GI_ROCEV2_MAX_HDR_LEN + GI_ROCEV2_ICRC_LEN + 3 + 1 + GI_HSB_META_BYTES + GI_HSB_ALIGN;
	if (c->hdr_max < over)
		c->hdr_max = over;
	return 0;
}

/* HSB's frame CRC of frame k: ~crc32(pattern bytes) in zlib's terms, the register unflipped; cached. */
static uint32_t hsb_frame_crc(struct gi_sim_stream *st, uint64_t k, uint64_t seed)
{
	uint8_t buf[4096];
	uint64_t fb = hsb_frame_bytes(st);

	if (st->crc_frame == k + 1)
		return st->crc;
	uint32_t c = 0xffffffffu;
	for (uint64_t off = 0; off < fb; off += sizeof(buf)) {
		uint32_t n = (uint32_t)GI_MIN((uint64_t)sizeof(buf), fb - off);
		gi_pattern_fill(buf, seed, off, n);
		c = gi_crc32_host(c, buf, n);
	}
	st->crc_frame = k + 1;
	st->crc = c;
	return c;
}

/* One packet of an HSB stream: UDP payload into u, its length returned (the ICRC goes in later). */
static uint32_t hsb_build(const struct gi_sim *sim, struct gi_sim_stream *st, const struct gi_sim_pkt *p, uint8_t *u)
{
	const struct gi_sim_rocev2_cfg *r = &sim->cfg.rocev2;
	uint64_t base_va = r->va_set ? r->base_va : 0;
	uint64_t fb = hsb_frame_bytes(st), k = p->ord / st->ppf;
	uint32_t idx = p->pkt_index, emu = r->hsb_form == 1;
	uint32_t psn = p->seq & (emu ? 0xfffffu : GI_ROCEV2_QP_MASK); /* the emulator masks PSNs to 20 bits */
	uint32_t page = (uint32_t)((r->first_page + k) % r->pages);
	uint32_t plen = gi_sim_plen(st, idx);
	int own = hsb_own_packet(st);
	int meta = own ? idx == st->data : idx + 1 == st->data; /* the packet that ends the frame */
	uint64_t va = base_va + (uint64_t)page * hsb_page_bytes(r, st) + (uint64_t)idx * st->payload;
	uint64_t seed = gi_pattern_seed((uint16_t)st->roce_qp, p->frame - sim->cfg.frame_start);
	uint32_t data = plen; /* bytes before the record */

	if (meta && own)
		va = base_va + (uint64_t)page * hsb_page_bytes(r, st) + gi_hsb_align(fb);
	if (meta && !own)
		data = (uint32_t)(gi_hsb_align(fb) - (uint64_t)idx * st->payload); /* the data, zero-padded to 128 */
	uint32_t len = data + (meta ? GI_HSB_META_BYTES : 0u);
	uint8_t op = GI_ROCEV2_UC | (meta ? GI_ROCEV2_WRITE_ONLY_IMM : GI_ROCEV2_WRITE_ONLY);
	uint32_t imm = (psn & 0xfffffu) << 12 | (page & 0xfffu);

	switch (p->kind) {
	case GI_SIM_MAL_ROCEV2_OPCODE: op = GI_ROCEV2_ACK; break;
	case GI_SIM_MAL_ROCEV2_VA:
		if (meta)
			imm ^= 1; /* the immediate names another page */
		else
			va = idx ? va - st->payload : va + st->payload; /* its neighbour's place, inside the frame */
		break;
	case GI_SIM_MAL_ROCEV2_BOUNDS: va += (uint64_t)(r->pages - page) * hsb_page_bytes(r, st); break;
	default: break;
	}
	uint32_t pad = (4 - len % 4) % 4;
	u[0] = op;
	u[1] = (uint8_t)(pad << 4 | (p->kind == GI_SIM_MAL_VERSION ? 1u : 0u));
	gi_put_be16(u + 2, 0xffff);
	gi_put_be32(u + 4, (emu ? 0xffu << 24 : 0u) | st->roce_qp); /* FECN/BECN byte: the emulator's 0xFF */
	gi_put_be32(u + 8, psn);
	if (p->kind == GI_SIM_MAL_TRUNCATED)
		return GI_ROCEV2_BTH_LEN;
	uint8_t *x = u + GI_ROCEV2_BTH_LEN;
	if (op == GI_ROCEV2_ACK) { /* an ACK: AETH, no payload */
		gi_put_be32(x, 0);
		return GI_ROCEV2_BTH_LEN + 4 + GI_ROCEV2_ICRC_LEN;
	}
	gi_put_be64(x, va);
	gi_put_be32(x + 8, (0x1000u + st->id) ^ (p->kind == GI_SIM_MAL_ROCEV2_RKEY ? 1u : 0u));
	gi_put_be32(x + 12, len);
	x += GI_ROCEV2_RETH_LEN;
	if (meta) {
		gi_put_be32(x, imm);
		x += GI_ROCEV2_IMM_LEN;
	}
	gi_pattern_fill(x, seed, (uint64_t)idx * st->payload, plen);
	memset(x + plen, 0, data - plen);
	if (meta) {
		uint8_t *m = x + data;
		uint32_t crc = 0; /* the emulator never writes its record's CRC */
		if (!emu) {
			crc = hsb_frame_crc(st, k, seed);
			if (r->bad_crc_every && k % r->bad_crc_every == r->bad_crc_every - 1)
				crc ^= 0x80000000u;
		}
		memset(m, 0, GI_HSB_META_BYTES);
		gi_put_be32(m + GI_HSB_META_FLAGS, 0);
		gi_put_be32(m + GI_HSB_META_PSN, psn);
		gi_put_be32(m + GI_HSB_META_CRC, crc);
		gi_put_be64(m + GI_HSB_META_SOF_S, 1700000000ull + k);
		gi_put_be32(m + GI_HSB_META_SOF_NS, (uint32_t)(k * 1000u % 1000000000u));
		gi_put_be64(m + GI_HSB_META_BYTES_WRITTEN, fb);
		gi_put_be32(m + GI_HSB_META_FRAME, emu ? p->frame : p->frame & 0xffffu); /* the emulator's is 32-bit */
		gi_put_be64(m + GI_HSB_META_META_S, 1700000000ull + k);
		gi_put_be32(m + GI_HSB_META_META_NS, (uint32_t)(k * 1000u % 1000000000u) + 1000000u);
	}
	memset(x + len, 0, pad + (p->kind == GI_SIM_MAL_LENGTH ? 1u : 0u));
	x += len + pad + (p->kind == GI_SIM_MAL_LENGTH ? 1u : 0u);
	return (uint32_t)(x - u) + GI_ROCEV2_ICRC_LEN;
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

	if (st->hsb)
		return hsb_build(sim, (struct gi_sim_stream *)st, p, u); /* the CRC cache is the stream's */
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
