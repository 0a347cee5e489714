/*
 * test_rocev2.c — the rocev2 format: hand-built packets for every opcode we
 * place and some we refuse, the ICRC against known values and against
 * packets scapy built (tests/unit/rocev2_scapy.txt, made by
 * tests/rocev2_scapy.py), every single-bit corruption of the covered bytes,
 * buffer split, and PSN wraparound with loss and reordering through the
 * host executor (gi_exec_slot_host), as the daemon runs it.
 *
 * argv[1]: the scapy corpus.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exec_fixture.h"
#include "kernels/executor.h"
#include "kernels/fmt_rocev2.h"
#include "fmtpkt.h"

#define PKT_MAX 2048
#define PPF 8
#define PAYLOAD 96
#define SLOTS 8
#define WINDOW 2
#define MAXB 64
#define QP0 0x001234u

static const char *corpus_path;

static struct gi_format_params params(uint32_t qp, uint64_t base_va, uint32_t icrc, uint32_t close_on)
{
	struct gi_format_params fp;
	struct gi_fmt_rocev2_params rp = { .base_va = base_va, .dst_qp = qp, .icrc = icrc, .close_on = close_on };
	gi_format_params_init(&fp, GI_FORMAT_ROCEV2);
	gi_fmt_rocev2_set(&fp, &rp);
	return fp;
}

/* l4 + parse; a packet that does not even get to the parser counts as refused (-1). */
static int parse(const struct gi_format_params *fp, const uint8_t *b, uint32_t len, uint32_t hdr_len,
		 const uint8_t *seg1, uint32_t packets, uint32_t payload, struct gi_pkt_info *pi)
{
	struct gi_l4 l4;
	if (gi_parse_l4(b, len, hdr_len, &l4) != GI_L4_OK)
		return -1;
	return gi_fmt_rocev2_parse(fp, b, hdr_len, seg1, &l4, packets, payload, 1, pi);
}

/* ---- opcodes ---- */

static void test_accepted_opcodes(void **state)
{
	(void)state;
	static const uint8_t ops[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b };
	struct gi_format_params fp = params(QP0, 0x10000, GI_ROCEV2_ICRC_VERIFY, GI_ROCEV2_CLOSE_NONE);
	uint8_t b[PKT_MAX];

	for (int t = 0; t < 3; t++) {
		uint8_t tr = t == 0 ? GI_ROCEV2_RC : t == 1 ? GI_ROCEV2_UC : GI_ROCEV2_UD;
		for (size_t i = 0; i < sizeof(ops); i++) {
			if (tr == GI_ROCEV2_UD && ops[i] != GI_ROCEV2_SEND_ONLY && ops[i] != GI_ROCEV2_SEND_ONLY_IMM)
				continue;
			uint8_t op = (uint8_t)(tr | ops[i]);
			uint32_t fl = gi_rocev2_opcode_flags(op);
			struct rp p = { .opcode = op, .qp = QP0, .psn = 77, .plen = 61, .va = 0x10000,
					.dma_len = (fl & GI_ROCEV2_F_LAST) ? 0 : 61 * 4, .pad = -1, .vlan = (int)(i & 1) };
			uint32_t len = rp_build(b, &p);
			struct gi_pkt_info pi;
			assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 61, &pi), 0);
			uint32_t hlen = GI_ROCEV2_BTH_LEN + (tr == GI_ROCEV2_UD ? 8u : 0u) +
					((ops[i] == 0x06 || ops[i] == 0x0a || ops[i] == 0x0b) ? 16u : 0u) +
					((ops[i] == 0x03 || ops[i] == 0x05 || ops[i] == 0x09 || ops[i] == 0x0b) ? 4u : 0u);
			assert_int_equal(pi.payload_off, hlen);
			assert_int_equal(pi.payload_len, 61); /* 3 pad bytes stripped */
			assert_int_equal(pi.seq, 77);
			assert_int_equal(pi.sensor_id, QP0);
			assert_int_equal(pi.has_frame, 0);
			assert_int_equal(pi.has_offset, (fl & GI_ROCEV2_F_RETH) ? 1 : 0);
			assert_int_equal(pi.closes_frame, 0);
			assert_int_equal(gi_fmt_rocev2_match(&fp, b + 14 + (i & 1 ? 4 : 0) + 28, GI_ROCEV2_BTH_LEN), 1);
			struct gi_format_params other = params(QP0 + 1, 0x10000, GI_ROCEV2_ICRC_VERIFY, 0);
			assert_int_equal(gi_fmt_rocev2_match(&other, b + 14 + (i & 1 ? 4 : 0) + 28, GI_ROCEV2_BTH_LEN), 0);
		}
	}
}

static void test_refused_opcodes(void **state)
{
	(void)state;
	/* READ request/responses, ACK, atomic ACK, CmpSwap, FetchAdd, RD SEND, UD SEND FIRST, UD WRITE, reserved, CNP */
	static const uint8_t ops[] = { 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x2c, 0x31,
				       0x44, 0x4a, 0x60, 0x61, 0x66, 0x6a, 0x1f, 0x81, 0xe0, 0xff };
	struct gi_format_params fp = params(QP0, 0, GI_ROCEV2_ICRC_VERIFY, GI_ROCEV2_CLOSE_NONE);
	uint8_t b[PKT_MAX];

	for (size_t i = 0; i < sizeof(ops); i++) {
		struct rp p = { .opcode = ops[i], .qp = QP0, .psn = 1, .plen = 16, .pad = -1 };
		uint32_t len = rp_build(b, &p);
		struct gi_pkt_info pi;
		assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 16, &pi), GI_DROP_ROCEV2_OPCODE);
	}
}

static void test_malformed(void **state)
{
	(void)state;
	struct gi_format_params fp = params(QP0, 0x1000, GI_ROCEV2_ICRC_VERIFY, GI_ROCEV2_CLOSE_NONE);
	uint8_t b[PKT_MAX];
	struct gi_pkt_info pi;
	uint32_t len;

	struct rp p = { .opcode = GI_ROCEV2_RC | GI_ROCEV2_WRITE_ONLY, .qp = QP0, .plen = 64, .va = 0x1000, .pad = -1 };
	len = rp_build(b, &p);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 64, &pi), 0);

	struct rp q = p;
	q.tver = 1;
	len = rp_build(b, &q);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 64, &pi), GI_DROP_MALFORMED_VERSION);
	q = p;
	q.pad = 1; /* 64 + 1 is not a whole number of words */
	len = rp_build(b, &q);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 64, &pi), GI_DROP_MALFORMED_LENGTH);
	q = p;
	q.plen = 2;
	q.pad = 2; /* 2 + 2: fine */
	len = rp_build(b, &q);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 2, &pi), 0);
	assert_int_equal(pi.payload_len, 2);
	q.plen = 0;
	q.pad = 3; /* pad larger than what follows the headers (0 + 3 is not a word either) */
	len = rp_build(b, &q);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 0, &pi), GI_DROP_MALFORMED_LENGTH);
	q = p;
	q.dma_len = 65; /* ONLY: the DMA length is the payload */
	len = rp_build(b, &q);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 64, &pi), GI_DROP_MALFORMED_LENGTH);
	q = p;
	q.opcode = GI_ROCEV2_RC | GI_ROCEV2_WRITE_FIRST;
	q.dma_len = 64; /* FIRST: more must follow */
	len = rp_build(b, &q);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 64, &pi), GI_DROP_MALFORMED_LENGTH);
	q = p;
	q.va = 0xfff; /* below base_va */
	len = rp_build(b, &q);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 64, &pi), GI_DROP_ROCEV2_VA);
	q = p;
	q.bad_icrc = 1;
	len = rp_build(b, &q);
	assert_int_equal(parse(&fp, b, len, len, NULL, PPF, 64, &pi), GI_DROP_ROCEV2_ICRC);
	struct gi_format_params ign = params(QP0, 0x1000, GI_ROCEV2_ICRC_IGNORE, GI_ROCEV2_CLOSE_NONE);
	assert_int_equal(parse(&ign, b, len, len, NULL, PPF, 64, &pi), 0);

	/* truncated: the RETH does not fit; and a UDP payload shorter than BTH + ICRC */
	len = rp_build(b, &p);
	uint8_t *ip = b + 14, *udp = ip + 20;
	gi_put_be16(udp + 4, 8 + 12 + 8 + 4);
	gi_put_be16(ip + 2, 20 + 8 + 12 + 8 + 4);
	assert_int_equal(parse(&ign, b, len, len, NULL, PPF, 64, &pi), GI_DROP_MALFORMED_TRUNCATED);
	gi_put_be16(udp + 4, 8 + 12);
	gi_put_be16(ip + 2, 20 + 8 + 12);
	assert_int_equal(parse(&ign, b, len, len, NULL, PPF, 64, &pi), GI_DROP_MALFORMED_TRUNCATED);
}

static void test_close_on(void **state)
{
	(void)state;
	uint8_t b[PKT_MAX];
	struct gi_pkt_info pi;
	static const struct {
		uint8_t op;
		uint8_t last, imm;
	} c[] = { { 0x06, 0, 0 }, { 0x07, 0, 0 }, { 0x08, 1, 0 }, { 0x09, 1, 1 }, { 0x0a, 1, 0 }, { 0x0b, 1, 1 },
		  { 0x00, 0, 0 }, { 0x02, 1, 0 }, { 0x03, 1, 1 }, { 0x65, 1, 1 } };

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint32_t fl = gi_rocev2_opcode_flags(c[i].op);
		struct rp p = { .opcode = c[i].op, .qp = QP0, .plen = 32, .pad = -1,
				.dma_len = (fl & GI_ROCEV2_F_LAST) ? 0 : 64 };
		uint32_t len = rp_build(b, &p);
		struct gi_format_params last = params(QP0, 0, 0, GI_ROCEV2_CLOSE_LAST);
		struct gi_format_params imm = params(QP0, 0, 0, GI_ROCEV2_CLOSE_IMM);
		assert_int_equal(parse(&last, b, len, len, NULL, PPF, 32, &pi), 0);
		assert_int_equal(pi.closes_frame, c[i].last);
		assert_int_equal(parse(&imm, b, len, len, NULL, PPF, 32, &pi), 0);
		assert_int_equal(pi.closes_frame, c[i].imm);
	}
}

/* ---- ICRC ---- */

static void test_crc32_known(void **state)
{
	(void)state;
	const uint8_t *s = (const uint8_t *)"123456789";
	/* the CRC-32 check value; split anywhere across the two segments */
	for (uint32_t cut = 0; cut <= 9; cut++)
		assert_int_equal(~gi_crc32_span(0xffffffffu, s, cut, s + cut, 0, 9), 0xcbf43926u);
	/* a span that starts inside the string, before, at or past the cut, against the bytes one at a time */
	for (uint32_t off = 0; off <= 9; off++)
		for (uint32_t cut = 0; cut <= 9; cut++) {
			uint32_t ref = 0xffffffffu;
			for (uint32_t i = off; i < 9; i++)
				ref = gi_crc32_step(ref, s[i]);
			assert_int_equal(gi_crc32_span(0xffffffffu, s, cut, s + cut, off, 9 - off), ref);
		}
}

struct corpus {
	uint32_t n;
	uint8_t op[128];
	uint32_t qp[128], psn[128], plen[128], len[128];
	uint64_t base_va[128];
	uint8_t pkt[128][PKT_MAX];
};

static struct corpus *load_corpus(void)
{
	static char line[8192];
	struct corpus *c = calloc(1, sizeof(*c));
	FILE *f = fopen(corpus_path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned op, qp, psn, plen;
		unsigned long long va;
		int used = 0;
		if (line[0] == '#')
			continue;
		assert_true(c->n < 128);
		assert_int_equal(sscanf(line, "%u %u %u %u %llu %n", &op, &qp, &psn, &plen, &va, &used), 5);
		uint32_t i = c->n++, k = 0;
		c->op[i] = (uint8_t)op;
		c->qp[i] = qp;
		c->psn[i] = psn;
		c->plen[i] = plen;
		c->base_va[i] = va;
		for (const char *h = line + used; h[0] && h[1] && h[0] != '\n'; h += 2, k++) {
			unsigned v;
			assert_int_equal(sscanf(h, "%2x", &v), 1);
			c->pkt[i][k] = (uint8_t)v;
		}
		c->len[i] = k;
	}
	fclose(f);
	assert_true(c->n >= 78); /* 12 opcodes x RC, UC, 2 x UD, 3 sizes */
	return c;
}

/* Every packet scapy built is accepted as it says, and our ICRC is scapy's. */
static void test_scapy_corpus(void **state)
{
	(void)state;
	struct corpus *c = load_corpus();
	for (uint32_t i = 0; i < c->n; i++) {
		struct gi_format_params fp = params(c->qp[i], c->base_va[i], GI_ROCEV2_ICRC_VERIFY, 0);
		struct gi_pkt_info pi;
		struct gi_l4 l4;
		assert_int_equal(gi_parse_l4(c->pkt[i], c->len[i], c->len[i], &l4), GI_L4_OK);
		uint32_t wire = gi_be32(c->pkt[i] + c->len[i] - 4);
		uint32_t ours = gi_rocev2_icrc(c->pkt[i], c->len[i], NULL, l4.l3_off, l4.payload_len + 8);
		assert_int_equal(__builtin_bswap32(wire), ours); /* least-significant byte first on the wire */
		assert_int_equal(gi_fmt_rocev2_parse(&fp, c->pkt[i], c->len[i], NULL, &l4, PPF, c->plen[i], 1, &pi), 0);
		assert_int_equal(pi.payload_len, c->plen[i]);
		assert_int_equal(pi.seq, c->psn[i]);
		assert_int_equal(pi.sensor_id, c->qp[i]);
		assert_int_equal(gi_fmt_rocev2_match(&fp, c->pkt[i] + l4.payload_off, 12), 1);
		if (pi.has_offset)
			assert_int_equal(pi.byte_off, 0);
		const uint8_t *pay = c->pkt[i] + l4.payload_off + pi.payload_off;
		for (uint32_t k = 0; k < pi.payload_len; k++)
			assert_int_equal(pay[k], (uint8_t)(k * 7 + i));
	}
	free(c);
}

/*
 * Flip every bit the ICRC covers: each flip must be refused (by the ICRC,
 * or earlier by the IPv4/UDP checks).  Flips of the masked fields — TOS,
 * TTL, IPv4 checksum, UDP checksum, BTH resv8 — must not matter.
 */
static void test_single_bit_corruption(void **state)
{
	(void)state;
	struct corpus *c = load_corpus();
	uint64_t refused = 0, masked_ok = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		struct gi_format_params fp = params(c->qp[i], c->base_va[i], GI_ROCEV2_ICRC_VERIFY, 0);
		struct gi_pkt_info pi;
		struct gi_l4 l4;
		uint8_t *b = c->pkt[i];
		assert_int_equal(gi_parse_l4(b, c->len[i], c->len[i], &l4), GI_L4_OK);
		uint32_t ip = l4.l3_off, ihl = l4.l4_off - ip, udp = l4.l4_off;
		uint32_t end = l4.payload_off + l4.payload_len; /* ICRC included */
		for (uint32_t o = ip; o < end; o++) {
			int masked = o == ip + 1 || o == ip + 8 || o == ip + 10 || o == ip + 11 || o == udp + 6 ||
				     o == udp + 7 || o == udp + 8 + 4;
			for (int bit = 0; bit < 8; bit++) {
				b[o] ^= (uint8_t)(1u << bit);
				int r = parse(&fp, b, c->len[i], c->len[i], NULL, PPF, c->plen[i], &pi);
				b[o] ^= (uint8_t)(1u << bit);
				if (masked) {
					if (o == ip + 10 || o == ip + 11)
						continue; /* gi_parse_l4 does not check the IPv4 checksum either */
					assert_int_equal(r, 0);
					masked_ok++;
				} else {
					if (r == 0)
						fail_msg("packet %u: flipping bit %d of byte %u (ihl %u) was accepted", i, bit, o, ihl);
					refused++;
				}
			}
		}
	}
	assert_true(refused > 100000);
	assert_true(masked_ok > 1000);
	free(c);
}

/* ---- through the executor ---- */

/* Streams 0 and 1: rocev2 QP0 and QP0 + 1 (closing frames on conf.arg), chained
 * on UDP 4791; stream 2: udp_seq on 5000. */
static void rocev2_stream(struct exec_fixture *f, int s)
{
	if (s < 2)
		f->st[s].fp = params(QP0 + (uint32_t)s, 0x40000000, GI_ROCEV2_ICRC_VERIFY, (uint32_t)f->conf.arg);
	f->st[s].fp.resync_frames = 1000;
	exf_chain_port(f, s, s < 2 ? GI_ROCEV2_UDP_PORT : 5000);
}

/* With split, the first 80 bytes go to segment 0 and the rest (payload, ICRC) to segment 1. */
static struct exec_fixture *make_fixture(uint32_t split, uint32_t close_on)
{
	struct exf_conf c = {
		.format = GI_FORMAT_ROCEV2, .formats = { [2] = GI_FORMAT_UDP_SEQ }, .names = { "r", "r", "r" },
		.n_streams = 3, .packets = PPF, .payload = PAYLOAD, .window = WINDOW, .slots = SLOTS, .maxb = MAXB,
		.split = split ? 80 : 0, .arg = close_on, .stream = rocev2_stream,
	};
	return exf_new(&c);
}

/* Packet `ord` of a stream whose first PSN is psn0: an RDMA WRITE of one frame per message. */
static void queue_write(struct exec_fixture *f, int s, uint32_t psn0, uint64_t ord, int bad_va)
{
	uint8_t b[PKT_MAX];
	uint32_t idx = (uint32_t)(ord % PPF);
	uint8_t op = idx == 0 ? GI_ROCEV2_WRITE_FIRST : idx == PPF - 1 ? GI_ROCEV2_WRITE_LAST_IMM : GI_ROCEV2_WRITE_MIDDLE;
	struct rp p = { .opcode = (uint8_t)(GI_ROCEV2_UC | op), .qp = QP0 + (uint32_t)s,
			.psn = (uint32_t)((psn0 + ord) & GI_ROCEV2_QP_MASK), .plen = PAYLOAD,
			.va = 0x40000000 + (ord / PPF % 3) * PPF * PAYLOAD + (bad_va ? PAYLOAD : 0),
			.dma_len = PPF * PAYLOAD, .pad = -1,
			.seed = gi_pattern_seed((uint16_t)(QP0 + (uint32_t)s), (uint32_t)(ord / PPF)),
			.off = (uint64_t)idx * PAYLOAD };
	queue_raw(f, b, rp_build(b, &p));
}

static void check_frames(struct exec_fixture *f, int s, uint64_t from, uint64_t to)
{
	struct gi_frame_ring_hdr *h = f->st[s].ring;
	for (uint64_t fr = from; fr < to; fr++) {
		struct gi_frame_slot *sl = gi_frame_slot_at(h, fr);
		assert_true(sl->seq == 2 * fr + 2);
		assert_int_equal(sl->sensor_id, QP0 + (uint32_t)s);
		assert_int_equal(sl->sensor_frame, fr);
		uint64_t seed = gi_pattern_seed((uint16_t)(QP0 + (uint32_t)s), (uint32_t)fr);
		for (uint32_t p = 0; p < PPF; p++)
			if (gi_frame_bitmap(sl)[0] >> p & 1)
				assert_int_equal(gi_pattern_mismatches(gi_frame_payload(h, sl) + p * PAYLOAD, seed,
								       (uint64_t)p * PAYLOAD, PAYLOAD), 0);
	}
}

/*
 * Two QPs on 4791, PSNs starting 20 below 2^24: loss (not of a first packet),
 * reordering within the window, a duplicate, a FIRST with a wrong VA, a
 * foreign QP and an ACK; every packet in exactly one counter, frames across
 * the wrap byte-exact, placed + lost == sent.
 */
static void run_wrap(uint32_t split)
{
	struct exec_fixture *f = make_fixture(split, GI_ROCEV2_CLOSE_NONE);
	const uint32_t psn0 = (1u << 24) - 20, frames = 12;
	uint64_t total = (uint64_t)frames * PPF, lost = 0;

	for (int s = 0; s < 2; s++) {
		for (uint64_t o = 0; o < total; o++) {
			if (o == 9 + (uint64_t)s || o == 24 || o == 43) { /* 24: a FIRST lost: its frame still fills */
				lost++;
				continue;
			}
			if (o % 10 == 5 && o + 1 < total) { /* swap with the next one */
				queue_write(f, s, psn0, o + 1, 0);
				queue_write(f, s, psn0, o, 0);
				o++;
				continue;
			}
			queue_write(f, s, psn0, o, 0);
			if (o == 30)
				queue_write(f, s, psn0, o, 0); /* a duplicate */
			if (o == 40)
				queue_write(f, s, psn0, o, 1); /* a FIRST whose VA disagrees with its PSN */
		}
	}
	uint8_t b[PKT_MAX];
	struct rp other = { .opcode = GI_ROCEV2_RC | GI_ROCEV2_SEND_ONLY, .qp = QP0 + 7, .plen = PAYLOAD, .pad = -1 };
	queue_raw(f, b, rp_build(b, &other));
	struct rp ack = { .opcode = GI_ROCEV2_ACK, .qp = QP0, .plen = 4, .pad = -1 };
	queue_raw(f, b, rp_build(b, &ack));
	flush_batch(f);
	for (int s = 0; s < 2; s++)
		exf_flush(f, s, f->now);

	for (int s = 0; s < 2; s++) {
		struct gi_stream_rt *st = &f->st[s];
		assert_int_equal(st->c.duplicates, 1);
		assert_int_equal(st->c.late, 0);
		assert_int_equal(st->c.packets + st->c.lost, total);
		assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE] + st->c.frames[GI_FRAMES_PARTIAL], frames);
		assert_true(st->c.reordered > 0);
		check_frames(f, s, frames - SLOTS, frames);
	}
	assert_int_equal(f->st[0].c.lost + f->st[1].c.lost, lost);
	assert_int_equal(f->ctr.drops[GI_DROP_ROCEV2_VA], 2);
	assert_int_equal(f->ctr.drops[GI_DROP_NO_STREAM], 1);
	assert_int_equal(f->ctr.drops[GI_DROP_ROCEV2_OPCODE], 1);
	assert_int_equal(accounted(f), f->fed);
	exf_free(f);
}

static void test_psn_wrap_exec(void **state)
{
	(void)state;
	run_wrap(0);
}

static void test_psn_wrap_exec_split(void **state)
{
	(void)state;
	run_wrap(1);
}

/* close_on: imm — the WRITE LAST with immediate makes its frame final at once. */
static void test_close_on_exec(void **state)
{
	(void)state;
	struct exec_fixture *f = make_fixture(0, GI_ROCEV2_CLOSE_IMM);
	for (uint64_t o = 0; o < PPF; o++)
		if (o != 3)
			queue_write(f, 0, 5, o, 0);
	flush_batch(f);
	assert_int_equal(f->st[0].c.frames[GI_FRAMES_PARTIAL], 1);
	assert_int_equal(f->st[0].c.lost, 1);
	assert_int_equal(f->st[0].next_pub, 1);
	queue_write(f, 0, 5, 3, 0); /* too late now */
	flush_batch(f);
	assert_int_equal(f->st[0].c.late, 1);
	assert_int_equal(accounted(f), f->fed);
	exf_free(f);
}

int main(int argc, char **argv)
{
	corpus_path = argc > 1 ? argv[1] : "tests/unit/rocev2_scapy.txt";
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted_opcodes),
		cmocka_unit_test(test_refused_opcodes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_close_on),
		cmocka_unit_test(test_crc32_known),
		cmocka_unit_test(test_scapy_corpus),
		cmocka_unit_test(test_single_bit_corruption),
		cmocka_unit_test(test_psn_wrap_exec),
		cmocka_unit_test(test_psn_wrap_exec_split),
		cmocka_unit_test(test_close_on_exec),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
