/*
 * test_hsb.c — rocev2 placement by virtual address and Holoscan Sensor
 * Bridge streams (kernels/fmt_rocev2.h, README "Holoscan Sensor Bridge"):
 *
 *  - the parser on hand-built packets: UC RDMA WRITE ONLY (0x2A) placed by
 *    page and offset, the short last data packet, the frame-end WRITE ONLY
 *    with immediate (0x2B) as a packet of its own and appended to the last
 *    data packet, the immediate's page, HSB's big-endian record, and every
 *    refusal: rkey, bounds (page, offset, a record where it does not
 *    belong), a runt record; rocev2.frame_end auto taking either form
 *    where the strict forms refuse the other;
 *  - the executor on a stream the daemon joins in the middle of a frame,
 *    with loss and duplicates, PSNs and the record's 16-bit frame number
 *    wrapping, in both forms, each with its strict frame_end and with
 *    auto: serial and phased paths byte-identical (exec_fixture.h), the
 *    slots' sender records as sent, every packet accounted for (placed +
 *    metadata + lost == unique sent);
 *  - frame_end auto learning the form per epoch: from the first record,
 *    or from the second frame's VAs when that record is lost, and anew
 *    after a sender restart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exec_fixture.h"
#include "fmtpkt.h"
#include "hsbpkt.h"
#include "kernels/executor.h"
#include "kernels/fmt_rocev2.h"

#define PKT_MAX 2048

static int parse(const struct gi_format_params *fp, const uint8_t *b, uint32_t len, struct gi_pkt_info *pi)
{
	struct gi_l4 l4;
	assert_int_equal(gi_parse_l4(b, len, len, &l4), GI_L4_OK);
	return gi_fmt_rocev2_parse(fp, b, len, NULL, &l4, HSB_DATA + 1, HSB_PAYLOAD, 1, pi);
}

/* ---- the parser ---- */

static void test_write_only_by_va(void **state)
{
	(void)state;
	struct gi_format_params fp = hsb_params(GI_ROCEV2_END_PACKET, 1);
	uint8_t b[PKT_MAX];
	struct gi_pkt_info pi;

	/* data on page 1 at offset 2 x 128; the short last one */
	assert_int_equal(parse(&fp, b, hsb_pkt(b, 2, 0, 1, 100, 0), &pi), 0);
	assert_int_equal(pi.has_offset, 1);
	assert_int_equal(pi.byte_off, 2 * HSB_PAYLOAD);
	assert_int_equal(pi.payload_len, HSB_PAYLOAD);
	assert_int_equal(pi.meta, 0);
	assert_int_equal(pi.seq, 100);
	assert_int_equal(pi.closes_frame, 0);
	assert_int_equal(parse(&fp, b, hsb_pkt(b, HSB_DATA - 1, 0, 2, 101, 0), &pi), 0);
	assert_int_equal(pi.byte_off, (HSB_DATA - 1) * HSB_PAYLOAD);
	assert_int_equal(pi.payload_len, HSB_LAST);

	/* the record in a packet of its own: no data, the frame's last index, the record's fields */
	assert_int_equal(parse(&fp, b, hsb_pkt(b, HSB_DATA, 9, 1, 0xabcde5, 0), &pi), 0);
	assert_int_equal(pi.meta, 1);
	assert_int_equal(pi.payload_len, 0);
	assert_int_equal(pi.meta_rel, 0);
	assert_int_equal(pi.byte_off, HSB_DATA * HSB_PAYLOAD); /* index HSB_DATA of HSB_DATA + 1 */
	assert_int_equal(pi.frame, (65533 + 9) & 0xffff);
	assert_int_equal(pi.timestamp, (1700000000ull + 9) * 1000000000ull + 27);
	assert_int_equal(pi.closes_frame, 1);
	assert_int_equal(pi.seq, 0xabcde5);

	/* the emulator's form under frame_end embedded: data, zero pad to 640, the record */
	struct gi_format_params fe = hsb_params(GI_ROCEV2_END_EMBEDDED, 1);
	assert_int_equal(parse(&fe, b, hsb_pkt(b, HSB_DATA - 1, 3, 0, 7, 1), &pi), 0);
	assert_int_equal(pi.meta, 1);
	assert_int_equal(pi.byte_off, (HSB_DATA - 1) * HSB_PAYLOAD);
	assert_int_equal(pi.payload_len, HSB_LAST); /* not the pad */
	assert_int_equal(pi.meta_rel, HSB_META_OFF - (HSB_DATA - 1) * HSB_PAYLOAD);
	assert_int_equal(pi.frame, (65533 + 3) & 0xffff);

	/* and the record the parsed packet carries, stored the way phase 3 does */
	struct gi_l4 l4;
	uint32_t len = hsb_pkt(b, HSB_DATA - 1, 3, 0, 7, 1);
	assert_int_equal(gi_parse_l4(b, len, len, &l4), GI_L4_OK);
	assert_int_equal(gi_fmt_rocev2_parse(&fe, b, len, NULL, &l4, HSB_DATA, HSB_PAYLOAD, 1, &pi), 0);
	struct gi_frame_slot s;
	memset(&s, 0, sizeof(s));
	gi_frame_sender_store(&s, b, len, NULL, l4.payload_off + pi.payload_off + pi.meta_rel);
	assert_int_equal(s.sender.kind, GI_SENDER_HSB);
	assert_int_equal(s.sender.flags, 1);
	assert_int_equal(s.sender.psn, 7);
	assert_int_equal(s.sender.crc, 0xc0ffee03u);
	assert_int_equal(s.sender.bytes_written, HSB_FRAME_BYTES);
	assert_int_equal(s.sender.sof_ns, 1700000003ull * 1000000000ull + 9);
	assert_int_equal(s.sender.meta_ns, 1700000004ull * 1000000000ull + 7);

	/* the record split across buffer-split segments reads the same */
	for (uint32_t cut = 60; cut < len; cut += 37) {
		uint8_t seg0[PKT_MAX], seg1[PKT_MAX];
		memcpy(seg0, b, cut);
		memcpy(seg1, b + cut, len - cut);
		struct gi_frame_slot t;
		memset(&t, 0, sizeof(t));
		gi_frame_sender_store(&t, seg0, cut, seg1, l4.payload_off + pi.payload_off + pi.meta_rel);
		assert_memory_equal(&t.sender, &s.sender, sizeof(s.sender));
	}
}

static void test_refusals(void **state)
{
	(void)state;
	struct gi_format_params fp = hsb_params(GI_ROCEV2_END_PACKET, 1);
	struct gi_format_params fe = hsb_params(GI_ROCEV2_END_EMBEDDED, 1);
	struct gi_format_params any = hsb_params(GI_ROCEV2_END_PACKET, 0);
	uint8_t b[PKT_MAX];
	struct gi_pkt_info pi;
	uint8_t m[128];

	hsb_record(m, 1, 2, 3, 4, 5);
	/* another R_Key; without rocev2.rkey any goes */
	struct rp p = { .opcode = GI_ROCEV2_UC | GI_ROCEV2_WRITE_ONLY, .qp = HSB_QP, .psn = 1, .plen = HSB_PAYLOAD,
			.va = HSB_BASE + HSB_PAGE, .pad = -1, .rkey = HSB_RKEY + 1 };
	assert_int_equal(parse(&fp, b, rp_build(b, &p), &pi), GI_DROP_ROCEV2_RKEY);
	assert_int_equal(parse(&any, b, rp_build(b, &p), &pi), 0);
	p.rkey = HSB_RKEY;
	/* a page past rocev2.pages, a VA below base_va */
	p.va = HSB_BASE + HSB_PAGES * HSB_PAGE;
	assert_int_equal(parse(&fp, b, rp_build(b, &p), &pi), GI_DROP_ROCEV2_BOUNDS);
	p.va = HSB_BASE - 1;
	assert_int_equal(parse(&fp, b, rp_build(b, &p), &pi), GI_DROP_ROCEV2_BOUNDS);
	/* past the frame's end inside its page: a full packet where the short one goes */
	p.va = HSB_BASE + (HSB_DATA - 1) * HSB_PAYLOAD;
	assert_int_equal(parse(&fp, b, rp_build(b, &p), &pi), GI_DROP_ROCEV2_BOUNDS);
	p.plen = HSB_LAST;
	assert_int_equal(parse(&fp, b, rp_build(b, &p), &pi), 0);
	/* an empty WRITE at the frame's end names no place in it (found by fuzz_rocev2) */
	p.va = HSB_BASE + HSB_FRAME_BYTES;
	p.plen = 0;
	assert_int_equal(parse(&fp, b, rp_build(b, &p), &pi), GI_DROP_ROCEV2_BOUNDS);
	/* a VA off its place parses (bounds hold); the PSN check refuses it once the stream runs */
	p.va = HSB_BASE + HSB_PAYLOAD + 1;
	p.plen = HSB_PAYLOAD;
	assert_int_equal(parse(&fp, b, rp_build(b, &p), &pi), 0);
	assert_int_equal(gi_fmt_rocev2_check_va(&fp, &pi, 1, 0, 0, HSB_DATA + 1, HSB_PAYLOAD), GI_DROP_ROCEV2_VA);
	pi.byte_off = HSB_PAYLOAD;
	assert_int_equal(gi_fmt_rocev2_check_va(&fp, &pi, 1, 0, 0, HSB_DATA + 1, HSB_PAYLOAD), 0); /* PSN 1: index 1 */

	/* records: the immediate's page must be the VA's */
	struct rp r = { .opcode = GI_ROCEV2_UC | GI_ROCEV2_WRITE_ONLY_IMM, .qp = HSB_QP, .psn = 5, .plen = 0,
			.va = HSB_BASE + HSB_PAGE + HSB_META_OFF, .pad = -1, .rkey = HSB_RKEY, .meta = m, .imm = 5u << 12 | 1u };
	assert_int_equal(parse(&fp, b, rp_build(b, &r), &pi), 0);
	r.imm = 5u << 12 | 2u;
	assert_int_equal(parse(&fp, b, rp_build(b, &r), &pi), GI_DROP_ROCEV2_VA);
	r.imm = 5u << 12 | 1u;
	/* a record of its own anywhere but roundup(frame bytes, 128), or where the stream expects it appended */
	r.va -= 128;
	assert_int_equal(parse(&fp, b, rp_build(b, &r), &pi), GI_DROP_ROCEV2_BOUNDS);
	r.va += 128;
	assert_int_equal(parse(&fe, b, rp_build(b, &r), &pi), GI_DROP_ROCEV2_BOUNDS);
	/* an appended record where the stream expects one of its own, or with data past the pad */
	r.va = HSB_BASE + HSB_PAGE + (HSB_DATA - 1) * HSB_PAYLOAD;
	r.plen = HSB_LAST;
	r.zpad = HSB_META_OFF - (HSB_DATA - 1) * HSB_PAYLOAD - HSB_LAST;
	assert_int_equal(parse(&fp, b, rp_build(b, &r), &pi), GI_DROP_ROCEV2_BOUNDS);
	assert_int_equal(parse(&fe, b, rp_build(b, &r), &pi), 0);
	r.zpad += 128;
	assert_int_equal(parse(&fe, b, rp_build(b, &r), &pi), GI_DROP_ROCEV2_BOUNDS);
	/* frame_end auto takes either form where the strict ones refuse the other; only with profile hsb is
	 * auto the learning kind (every rocev2 stream carries the default) */
	struct gi_format_params fa = hsb_params(GI_ROCEV2_END_AUTO, 1);
	assert_true(gi_fmt_rocev2_end_auto(&fa));
	assert_false(gi_fmt_rocev2_end_auto(&fp));
	assert_false(gi_fmt_rocev2_end_auto(&fe));
	struct gi_fmt_rocev2_params plain = gi_fmt_rocev2(&fa);
	plain.profile = GI_ROCEV2_PROFILE_NONE;
	struct gi_format_params fnone = fa;
	gi_fmt_rocev2_set(&fnone, &plain);
	assert_false(gi_fmt_rocev2_end_auto(&fnone));
	r.zpad -= 128; /* the appended record above, well formed again */
	assert_int_equal(parse(&fa, b, rp_build(b, &r), &pi), 0);
	assert_int_equal(pi.meta, 1);
	assert_int_equal(pi.payload_len, HSB_LAST);
	assert_int_equal(pi.byte_off, (HSB_DATA - 1) * HSB_PAYLOAD);
	assert_int_equal(parse(&fp, b, rp_build(b, &r), &pi), GI_DROP_ROCEV2_BOUNDS);
	struct rp own = { .opcode = GI_ROCEV2_UC | GI_ROCEV2_WRITE_ONLY_IMM, .qp = HSB_QP, .psn = 5, .plen = 0,
			  .va = HSB_BASE + HSB_PAGE + HSB_META_OFF, .pad = -1, .rkey = HSB_RKEY, .meta = m, .imm = 5u << 12 | 1u };
	assert_int_equal(parse(&fa, b, rp_build(b, &own), &pi), 0);
	assert_int_equal(pi.meta, 1);
	assert_int_equal(pi.payload_len, 0);
	assert_int_equal(pi.byte_off, HSB_DATA * HSB_PAYLOAD); /* the slot's last index: HSB_DATA of HSB_DATA + 1 */
	assert_int_equal(parse(&fe, b, rp_build(b, &own), &pi), GI_DROP_ROCEV2_BOUNDS);
	own.va -= 128; /* auto or not, a record of its own goes at roundup(frame bytes, 128) only */
	assert_int_equal(parse(&fa, b, rp_build(b, &own), &pi), GI_DROP_ROCEV2_BOUNDS);
	r.zpad += 128; /* ... and an appended one ends there */
	assert_int_equal(parse(&fa, b, rp_build(b, &r), &pi), GI_DROP_ROCEV2_BOUNDS);
	/* a WRITE with immediate too short to hold a record */
	struct rp runt = { .opcode = GI_ROCEV2_UC | GI_ROCEV2_WRITE_ONLY_IMM, .qp = HSB_QP, .psn = 5, .plen = 64,
			   .va = HSB_BASE + HSB_PAGE + HSB_META_OFF, .pad = -1, .rkey = HSB_RKEY, .imm = 5u << 12 | 1u };
	assert_int_equal(parse(&fp, b, rp_build(b, &runt), &pi), GI_DROP_MALFORMED_LENGTH);
}

/* ---- through the executor ---- */

static const struct exf_conf hsb_conf = {
	.format = GI_FORMAT_ROCEV2, .n_streams = 1, .packets = HSB_DATA + 1, .payload = HSB_PAYLOAD, .window = 3, .slots = 6,
	.maxb = 32, .stream = hsb_stream,
};

static uint64_t rng;
static uint32_t rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33);
}

/*
 * The sender in one form (embedded: the record rides on the last data
 * packet, else it is a packet of its own) into a stream with `frame_end`.
 */
static void joined_mid_frame(uint32_t frame_end, int embedded)
{
	enum { FRAMES = 300, FIRST = 3 }; /* the daemon's first packet: frame 0's index 3 */
	struct exf_conf conf = hsb_conf;
	uint32_t ppf = embedded ? HSB_DATA : HSB_DATA + 1; /* PSNs per frame */
	conf.arg = frame_end;
	for (int seed = 1; seed <= 6; seed++) {
		hsb_frame_crc_on = seed > 4; /* the last two: frames checked against the record's CRC */
		struct exec_fixture *f = exf_new(&conf);
		f->twin_gpu_form = seed % 2;
		uint8_t b[PKT_MAX];
		uint64_t unique = 0, lost_on_purpose = 0, dups = 0, meta_sent = 0;
		uint32_t psn0 = 0xffffff - 700; /* PSNs wrap at 2^24 during the run */
		rng = (uint64_t)seed;
		for (uint64_t k = 0; k < FRAMES; k++) {
			for (uint32_t idx = 0; idx < ppf; idx++) {
				uint64_t n = k * ppf + idx;
				if (n < FIRST)
					continue; /* before the daemon joined: never seen, never counted */
				unique++;
				int lose = n > FIRST && k + 1 < FRAMES && rnd() % 100 < 3;
				if (lose) {
					lost_on_purpose++;
					continue;
				}
				meta_sent += idx == HSB_DATA; /* a record packet of its own (never in the embedded form) */
				uint32_t page = (uint32_t)((1 + k) % HSB_PAGES);
				uint32_t len = hsb_pkt(b, idx, k, page, psn0 + (uint32_t)n, embedded);
				queue_raw(f, b, len);
				if (rnd() % 100 < 3) {
					queue_raw(f, b, len);
					dups++;
				}
				if (f->n >= 1 + rnd() % 32)
					flush_batch(f);
			}
		}
		if (f->n)
			flush_batch(f);
		exf_flush(f, 0, f->now);
		const struct gi_stream_rt *st = &f->st[0];
		/* frame 0 began at index 3: the first three were never sent to us, the rest lost on purpose */
		assert_int_equal(f->ctr.drops[GI_DROP_ROCEV2_VA], 0);
		assert_int_equal(st->c.packets + st->c.metadata + st->c.lost, unique + FIRST);
		assert_int_equal(st->c.lost, lost_on_purpose + FIRST);
		assert_int_equal(st->c.duplicates + st->c.late, dups);
		assert_int_equal(st->c.metadata, meta_sent);
		assert_int_equal(st->packets, ppf); /* auto: learned, whether from frame 0's record or frame 1 */
		assert_int_equal(st->end_unknown, 0);
		assert_true(st->c.frames[GI_FRAMES_COMPLETE] > FRAMES * 3 / 4 - (hsb_frame_crc_on ? FRAMES / 7 : 0));
		/* every 7th frame's record carries a wrong CRC: the complete ones among them are corrupt */
		if (hsb_frame_crc_on)
			assert_true(st->c.frames[GI_FRAMES_CORRUPT] > FRAMES / 7 / 2);
		else
			assert_int_equal(st->c.frames[GI_FRAMES_CORRUPT], 0);
		assert_int_equal(accounted(f), f->fed);
		/* the records of the complete frames still in the ring: as sent, frame numbers past 65535 */
		uint32_t seen = 0;
		for (uint64_t fr = st->next_pub - 5; fr < st->next_pub; fr++) {
			struct gi_frame_slot *s = gi_frame_slot_at(st->ring, fr);
			uint64_t k = fr - st->frame_base;
			int bad = hsb_frame_crc_on && k % 7 == 6;
			if (s->state == GI_FRAME_CORRUPT) {
				assert_true(bad);
				assert_int_equal(s->sender.crc_state, GI_CRC_MISMATCH);
				assert_int_equal(s->received, s->expected);
				continue;
			}
			if (s->state != GI_FRAME_COMPLETE)
				continue;
			assert_false(bad); /* a complete frame whose CRC was wrong would be corrupt */
			seen++;
			assert_int_equal(s->sender.kind, GI_SENDER_HSB);
			assert_int_equal(s->sender.frame_number, 65533 + k);
			assert_int_equal(s->sender.crc, hsb_frame_crc_on ? hsb_frame_crc(k) : 0xc0ffee00u + (uint32_t)k);
			assert_int_equal(s->sender.crc_state, hsb_frame_crc_on ? GI_CRC_OK : GI_CRC_UNCHECKED);
			assert_int_equal(s->first_ts_ns, (1700000000ull + k) * 1000000000ull + k * 3);
			assert_int_equal(s->sender.sof_ns, s->first_ts_ns);
			assert_int_equal(s->expected, ppf);
			assert_int_equal(gi_pattern_mismatches(gi_frame_payload(st->ring, s),
							       gi_pattern_seed(HSB_QP & 0xffff, (uint32_t)k), 0, HSB_FRAME_BYTES), 0);
		}
		assert_true(seen > 0);
		exf_free(f);
	}
	hsb_frame_crc_on = 0;
}

static void test_stream_joined_mid_frame(void **state)
{
	(void)state;
	joined_mid_frame(GI_ROCEV2_END_PACKET, 0);
	joined_mid_frame(GI_ROCEV2_END_AUTO, 0);
	joined_mid_frame(GI_ROCEV2_END_EMBEDDED, 1);
	joined_mid_frame(GI_ROCEV2_END_AUTO, 1);
}

/* The sum of the executor's drop counters. */
static uint64_t drops(const struct exec_fixture *f)
{
	uint64_t n = 0;
	for (int r = 0; r < GI_DROP__COUNT; r++)
		n += f->ctr.drops[r];
	return n;
}

/*
 * frame_end auto learns the form from the epoch's first frame end; when
 * that record is lost, from the second frame's first VA, which only one
 * form explains.  Every frame after it is complete, in batches of any size,
 * and the phased twin (host and GPU forms) agrees after every batch; once
 * learned, the phased executor takes the stream's batches as runs again.
 */
static void auto_learns(int embedded, int lose_first_record, uint32_t batch, uint32_t gpu_form)
{
	enum { FRAMES = 40 };
	struct exf_conf conf = hsb_conf;
	conf.arg = GI_ROCEV2_END_AUTO;
	struct exec_fixture *f = exf_new(&conf);
	const struct gi_stream_rt *st = &f->st[0];
	uint32_t ppf = embedded ? HSB_DATA : HSB_DATA + 1, lose = (uint32_t)lose_first_record;
	uint64_t meta_sent = 0;
	uint8_t b[PKT_MAX];

	f->twin_gpu_form = gpu_form;
	for (uint64_t k = 0; k < FRAMES; k++) {
		for (uint32_t idx = 0; idx < ppf; idx++) {
			int record = idx + 1 == ppf;
			if (lose && k == 0 && record)
				continue; /* frame 0's record */
			meta_sent += record && !embedded;
			uint32_t psn = 77 + (uint32_t)(k * ppf + idx);
			queue_raw(f, b, hsb_pkt(b, idx, k, (uint32_t)((1 + k) % HSB_PAGES), psn, embedded));
			if (f->n == batch)
				flush_batch(f);
			if (batch > 1 || k > 1)
				continue;
			/* packet by packet: known at the first record, or (lost) at frame 1's first packet */
			int known = k == 1 || (!lose && record);
			assert_int_equal(st->end_unknown, !known);
			assert_int_equal(st->packets, known ? ppf : HSB_DATA + 1);
		}
	}
	if (f->n)
		flush_batch(f);
	exf_flush(f, 0, f->now);
	assert_int_equal(drops(f), 0);
	assert_int_equal(st->end_unknown, 0);
	assert_int_equal(st->packets, ppf);
	assert_int_equal(st->epochs, 1);
	/* a lost record leaves its frame partial: one packet short, whichever the form */
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], FRAMES - lose);
	assert_int_equal(st->c.frames[GI_FRAMES_PARTIAL], lose);
	assert_int_equal(st->c.lost, lose);
	assert_int_equal(st->c.packets, FRAMES * HSB_DATA - (uint64_t)(lose && embedded));
	assert_int_equal(st->c.metadata, meta_sent);
	assert_int_equal(accounted(f), f->fed);
	for (uint64_t fr = st->next_pub - 3; fr < st->next_pub; fr++) {
		struct gi_frame_slot *s = gi_frame_slot_at(st->ring, fr);
		uint64_t seed = gi_pattern_seed(HSB_QP & 0xffff, (uint32_t)(fr - st->frame_base));
		assert_int_equal(s->state, GI_FRAME_COMPLETE);
		assert_int_equal(s->expected, ppf);
		assert_int_equal(s->sender.kind, GI_SENDER_HSB);
		assert_int_equal(gi_pattern_mismatches(gi_frame_payload(st->ring, s), seed, 0, HSB_FRAME_BYTES), 0);
	}
	if (batch > 1)
		assert_true(f->twin_runs > 0); /* the fast path is back once the form is known */
	exf_free(f);
}

static void test_auto_learns_the_form(void **state)
{
	(void)state;
	static const uint32_t batch[] = { 1, 4, 7, 32 };
	for (int embedded = 0; embedded < 2; embedded++)
		for (int lose = 0; lose < 2; lose++)
			for (uint32_t bi = 0; bi < sizeof(batch) / sizeof(batch[0]); bi++)
				auto_learns(embedded, lose, batch[bi], bi & 1);
}

/*
 * A sender restart (a PSN jump beyond resync_frames) starts a new epoch,
 * which learns the form anew: an FPGA's stream, then the emulator's
 * embedded records on the same stream.
 */
static void test_auto_relearns_after_restart(void **state)
{
	(void)state;
	enum { FRAMES = 12 };
	struct exf_conf conf = hsb_conf;
	conf.arg = GI_ROCEV2_END_AUTO;
	struct exec_fixture *f = exf_new(&conf);
	const struct gi_stream_rt *st = &f->st[0];
	uint8_t b[PKT_MAX];
	uint64_t k = 0;
	for (int embedded = 0; embedded < 2; embedded++) {
		uint32_t ppf = embedded ? HSB_DATA : HSB_DATA + 1, psn0 = embedded ? 0x800000u : 10u;
		for (uint64_t j = 0; j < FRAMES; j++, k++) {
			for (uint32_t idx = 0; idx < ppf; idx++) {
				uint32_t psn = psn0 + (uint32_t)(j * ppf + idx);
				queue_raw(f, b, hsb_pkt(b, idx, k, (uint32_t)(k % HSB_PAGES), psn, embedded));
				if (f->n == 9)
					flush_batch(f);
			}
		}
		if (f->n)
			flush_batch(f);
		assert_int_equal(st->epochs, 1 + embedded);
		assert_int_equal(st->end_unknown, 0);
		assert_int_equal(st->packets, ppf);
	}
	exf_flush(f, 0, f->now);
	assert_int_equal(drops(f), 0);
	assert_int_equal(st->c.resyncs, 1);
	assert_int_equal(st->c.frames[GI_FRAMES_COMPLETE], 2 * FRAMES);
	assert_int_equal(st->c.lost, 0);
	assert_int_equal(st->c.metadata, FRAMES);
	assert_int_equal(accounted(f), f->fed);
	exf_free(f);
}

/*
 * The CRC arithmetic a frame's check rests on: slices from 0, shifted by
 * the bytes after them and XORed, equal the CRC of the whole; the host's
 * library equals the table; and HSB's value is ~zlib's.
 */
static void test_crc_pieces(void **state)
{
	(void)state;
	static uint8_t buf[20000];
	gi_pattern_fill(buf, 12345, 0, sizeof(buf));
	uint32_t whole = 0xffffffffu;
	for (uint32_t i = 0; i < sizeof(buf); i++)
		whole = gi_crc32_step(whole, buf[i]);
	assert_int_equal(gi_crc32_host(0xffffffffu, buf, sizeof(buf)), whole);
	/* "123456789": zlib's crc32 is 0xcbf43926, so HSB's record would carry its complement */
	assert_int_equal(gi_crc32_host(0xffffffffu, (const uint8_t *)"123456789", 9), ~0xcbf43926u);
	for (uint32_t nw = 1; nw <= 33; nw += 4) {
		struct gi_stream_rt st;
		memset(&st, 0, sizeof(st));
		st.payload_bytes = sizeof(buf);
		st.data_packets = 1;
		st.last_bytes = sizeof(buf) - 1 - nw; /* not a multiple of 8 */
		uint64_t fb = st.last_bytes;
		uint32_t ref = 0xffffffffu;
		for (uint64_t i = 0; i < fb; i++)
			ref = gi_crc32_step(ref, buf[i]);
		/* the slot's payload: at payload_off of a slot laid out by hand */
		static uint8_t slot_mem[sizeof(struct gi_frame_slot) + 64 + sizeof(buf)];
		struct gi_frame_slot *s = (struct gi_frame_slot *)slot_mem;
		memset(s, 0, sizeof(*s));
		st.payload_off = sizeof(struct gi_frame_slot) + 64;
		memcpy(slot_mem + st.payload_off, buf, fb);
		for (uint32_t w = 0; w < nw; w++)
			gi_frame_verify_part(&st, s, w, nw, NULL);
		assert_int_equal(gi_crc32_shift(0xffffffffu, fb) ^ s->sender.crc_acc, ref);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_only_by_va),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_stream_joined_mid_frame),
		cmocka_unit_test(test_auto_learns_the_form),
		cmocka_unit_test(test_auto_relearns_after_restart),
		cmocka_unit_test(test_crc_pieces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
