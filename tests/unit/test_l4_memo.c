/*
 * test_l4_memo.c — header prediction (pkt.h, struct gi_l4_memo): a packet
 * that the memo says parses as the previous one does parse so, and the
 * memo is asked often enough to matter.
 *
 *  - the masks written out in pkt.h against the header fields they stand for;
 *  - random runs of flows (untagged, one and two VLAN tags, IPv4 options,
 *    three UDP ports, one of them two chained vita49 streams) with bytes,
 *    lengths and header segments changed at random: gi_classify_parse()
 *    with a memo and without agree on everything it returns;
 *  - the fields a sender changes per packet (IPv4 identification and
 *    checksum, UDP checksum) hit; a changed byte the parser reads misses;
 *  - flows taking turns packet by packet: the memo gives up for the batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "exec_fixture.h"
#include "fmtpkt.h"
#include "kernels/classify.h"
#include "testpkt.h"

/* pkt.h's masks from the fields: key byte i is packet byte 12 + i; ones from the ethertype to the UDP
 * payload, less the IPv4 identification and checksum and the UDP checksum. */
static uint64_t derived_mask(uint32_t l3_off, uint32_t k)
{
	uint8_t b[8];
	for (uint32_t j = 0; j < 8; j++) {
		uint32_t at = 12 + 8 * k + j; /* packet offset */
		uint32_t ip = at - l3_off, udp = at - (l3_off + 20);
		int unread = (at >= l3_off && (ip == 4 || ip == 5 || ip == 10 || ip == 11)) ||
			     (at >= l3_off + 20 && (udp == 6 || udp == 7));
		b[j] = at < l3_off + 28 && !unread ? 0xff : 0x00;
	}
	uint64_t v;
	memcpy(&v, b, 8);
	return v;
}

static void test_masks(void **state)
{
	(void)state;
	struct gi_l4_memo m;
	const uint32_t kept[] = { 14, 18, 22 };
	for (uint32_t s = 0; s < 3; s++) {
		gi_l4_memo_reset(&m);
		assert_int_equal(gi_l4_memo_shape(&m, kept[s]), 1);
		for (uint32_t k = 0; k < GI_L4_MEMO_WORDS; k++)
			assert_true(m.mask[k] == derived_mask(kept[s], k));
	}
	const uint32_t not_kept[] = { 0, 16, 26, 30 };
	for (uint32_t s = 0; s < 4; s++)
		assert_int_equal(gi_l4_memo_shape(&m, not_kept[s]), 0);
}

/* ---- a configuration: udp_seq on 5000 and 5002, two vita49 streams chained on 5001 ---- */

static void memo_streams(struct exec_fixture *f, int s)
{
	if (s == 0) {
		exf_map_port(f, 0, 5000);
	} else if (s == 3) {
		exf_map_port(f, 3, 5002);
	} else {
		f->st[s].format = GI_FORMAT_VITA49;
		gi_format_params_init(&f->st[s].fp, GI_FORMAT_VITA49);
		struct gi_fmt_vita49_params vp = { .ts_step_ps = 0, .stream_id = 0x100u + (uint32_t)s, .has_stream_id = 1 };
		gi_vita49_params_store(&f->st[s].fp, &vp);
		exf_chain_port(f, s, 5001);
	}
}

static struct exec_fixture *memo_fixture(void)
{
	struct exf_conf c = { .format = GI_FORMAT_UDP_SEQ, .n_streams = 4, .packets = 8, .payload = 64, .window = 4,
			      .slots = 4, .stream = memo_streams };
	return exf_new(&c);
}

/* One of the flows, built in full (valid checksums). */
static uint32_t flow_pkt(uint8_t *buf, uint32_t flow, uint32_t seq)
{
	static const int vlans[] = { -1, 7, -1, 9, -1, -1 };
	static const int opts[] = { 0, 0, 1, 0, 0, 0 };
	static const uint16_t ports[] = { 5000, 5000, 5000, 5002, 5001, 5001 };
	struct tp_opts o = { .udp_dst = ports[flow], .vlan = vlans[flow], .ip_opts = opts[flow] };
	if (flow < 4) {
		struct gi_udp_seq h = { .stream_id = flow, .packets_per_frame = 8, .seq = seq, .frame = seq / 8,
					.pkt_index = seq % 8, .payload_len = 64 };
		uint32_t len = tp_build(buf, &o, &h);
		if (flow == 3) { /* two VLAN tags: QinQ outside the 802.1Q tag */
			memmove(buf + 16, buf + 12, len - 12);
			gi_put_be16(buf + 12, 0x88a8);
			gi_put_be16(buf + 14, 3);
			len += 4;
		}
		return len;
	}
	struct gi_vita49_hdr vh = { .type = GI_VITA49_IF_DATA_SID, .count = seq & 15, .stream_id = 0x100u + flow - 3,
				    .tsi_kind = 1, .tsf_kind = 2, .tsi = 1700000000u + seq, .tsf = 1000ull * seq };
	memset(buf, 0, TP_MAX);
	return fp_wrap_udp(buf, ports[flow], fp_vrt_data(buf + 42, &vh, 64, seq / 8, seq % 8));
}

struct memo_run {
	uint32_t asked, hits, parsed;
};

/* Packet `p` through gi_classify_parse() with the memo and without: the same answer, every field. */
static void classify_both(const struct exec_fixture *f, struct gi_l4_memo *memo, const uint8_t *p, uint32_t len,
			  const uint8_t *seg1, uint32_t hdr_len, struct memo_run *run)
{
	struct gi_l4 la, lb;
	struct gi_pkt_info pa, pb;
	uint32_t sa, sb;
	memset(&la, 0xa5, sizeof(la));
	memset(&lb, 0xa5, sizeof(lb));
	memset(&pa, 0, sizeof(pa));
	memset(&pb, 0, sizeof(pb));
	struct gi_l4_memo before = *memo;
	int ra = gi_classify_parse(&f->ctx, 0, p, len, seg1, hdr_len, GI_GROUP_ANY, 1, memo, &sa, &la, &pa);
	int rb = gi_classify_parse(&f->ctx, 0, p, len, seg1, hdr_len, GI_GROUP_ANY, 1, NULL, &sb, &lb, &pb);
	assert_int_equal(ra, rb);
	assert_int_equal(sa, sb);
	assert_memory_equal(&pa, &pb, sizeof(pa));
	if (ra == 0 || sa != GI_STREAM_NONE) /* past the L2-L4 parse: its result is the packet's */
		assert_memory_equal(&la, &lb, sizeof(la));
	run->asked++;
	run->parsed += ra == 0;
	uint32_t hl = seg1 == NULL || hdr_len > len ? len : hdr_len;
	run->hits += gi_l4_memo_hit(&before, p, len, hl, 0);
}

static uint32_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

static void test_random_runs(void **state)
{
	(void)state;
	struct exec_fixture *f = memo_fixture();
	struct gi_l4_memo memo;
	struct memo_run run = { 0 };
	uint8_t buf[TP_MAX + 8], seg1[TP_MAX];
	uint64_t s = 12345;
	uint32_t flow = 0, seq = 0;

	for (uint32_t batch = 0; batch < 4000; batch++) {
		gi_l4_memo_reset(&memo);
		uint32_t n = 1 + rnd(&s) % 48;
		for (uint32_t i = 0; i < n; i++) {
			if (rnd(&s) % 8 == 0)
				flow = rnd(&s) % 6; /* runs of one flow, as sensors send */
			uint32_t len = flow_pkt(buf, flow, seq++);
			uint32_t hdr_len = len;
			const uint8_t *s1 = NULL;
			switch (rnd(&s) % 16) {
			case 0: case 1: case 2: /* what a sender changes per packet */
				gi_put_be16(buf + (flow == 1 ? 22 : flow == 3 ? 26 : 18), (uint16_t)rnd(&s));
				gi_put_be16(buf + (flow == 1 ? 28 : flow == 3 ? 32 : 24), (uint16_t)rnd(&s));
				break;
			case 3: case 4: /* any header byte */
				buf[12 + rnd(&s) % 48] ^= (uint8_t)(1u << (rnd(&s) % 8));
				break;
			case 5: /* any header byte, any value */
				buf[rnd(&s) % 64] = (uint8_t)rnd(&s);
				break;
			case 6: /* shorter than the headers say, or padded */
				len = rnd(&s) % 2 ? len - 1 - rnd(&s) % 40 : len + rnd(&s) % 8;
				break;
			case 7: { /* buffer split: the header segment ends somewhere in the first 70 bytes */
				hdr_len = 30 + rnd(&s) % 40;
				memcpy(seg1, buf + hdr_len, len - hdr_len);
				memset(buf + hdr_len, 0xee, sizeof(buf) - hdr_len);
				s1 = seg1;
				break;
			}
			default:
				break;
			}
			classify_both(f, &memo, buf, len, s1, hdr_len, &run);
		}
	}
	/* the memo answered much of the traffic, and not everything parsed */
	print_message("l4 memo: %u packets, %u parsed, %u hits\n", run.asked, run.parsed, run.hits);
	assert_true(run.hits > run.asked / 3);
	assert_true(run.parsed < run.asked);
	exf_free(f);
}

/* One flow; fields the parser reads or not, changed one at a time after the memo has its packet. */
static void test_hit_and_miss(void **state)
{
	(void)state;
	struct exec_fixture *f = memo_fixture();
	uint8_t base[TP_MAX], buf[TP_MAX];
	struct memo_run run = { 0 };
	const uint32_t len = flow_pkt(base, 0, 1);

	/* key offsets (untagged, IPv4 at 14): per offset, whether a change must still hit */
	for (uint32_t at = 0; at < 60; at++) {
		struct gi_l4_memo memo;
		gi_l4_memo_reset(&memo);
		classify_both(f, &memo, base, len, NULL, len, &run); /* remembers base */
		memcpy(buf, base, len);
		buf[at] ^= 0x10;
		uint32_t hits = run.hits;
		classify_both(f, &memo, buf, len, NULL, len, &run);
		int unread = at < 12 || at == 18 || at == 19 || at == 24 || at == 25 || at == 40 || at == 41 ||
			     at >= 42;
		assert_int_equal(run.hits - hits, unread ? 1 : 0);
	}
	/* the IPv4 total length must fit the packet */
	struct gi_l4_memo memo;
	gi_l4_memo_reset(&memo);
	classify_both(f, &memo, base, len, NULL, len, &run);
	uint32_t hits = run.hits;
	classify_both(f, &memo, base, len - 1, NULL, len - 1, &run);
	assert_int_equal(run.hits, hits);
	classify_both(f, &memo, base, len, NULL, len, &run);
	classify_both(f, &memo, base, len + 6, NULL, len + 6, &run); /* Ethernet padding */
	assert_int_equal(run.hits, hits + 2);
	/* the stream map's entry is the rx port's: another port's packet never hits */
	assert_true(gi_l4_memo_hit(&memo, base, len, len, 0));
	assert_false(gi_l4_memo_hit(&memo, base, len, len, 1));
	exf_free(f);
}

/* Two flows taking turns: every packet would miss, so the memo stops trying for the batch. */
static void test_gives_up(void **state)
{
	(void)state;
	struct exec_fixture *f = memo_fixture();
	uint8_t a[TP_MAX], b[TP_MAX];
	struct memo_run run = { 0 };
	uint32_t la = flow_pkt(a, 0, 1), lb = flow_pkt(b, 4, 1);
	struct gi_l4_memo memo;

	gi_l4_memo_reset(&memo);
	for (uint32_t i = 0; i < 2 * GI_L4_MEMO_TRIES + 4; i++)
		classify_both(f, &memo, i % 2 ? b : a, i % 2 ? lb : la, NULL, i % 2 ? lb : la, &run);
	assert_int_equal(run.hits, 0);
	assert_true(memo.min_len == UINT32_MAX); /* empty: the rest of the batch parses in full */
	classify_both(f, &memo, a, la, NULL, la, &run);
	classify_both(f, &memo, a, la, NULL, la, &run);
	assert_int_equal(run.hits, 0);
	gi_l4_memo_reset(&memo); /* the next batch tries again */
	classify_both(f, &memo, a, la, NULL, la, &run);
	classify_both(f, &memo, a, la, NULL, la, &run);
	assert_int_equal(run.hits, 1);
	exf_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_masks),
		cmocka_unit_test(test_random_runs),
		cmocka_unit_test(test_hit_and_miss),
		cmocka_unit_test(test_gives_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
