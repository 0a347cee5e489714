/*
 * test_rxdesc.c — what the rx lcore writes into a batch-ring descriptor for
 * each received mbuf (pmd_glue/rxdesc.h): whole packets, header/data split
 * chains, single-segment packets on a split queue, over-long chains, and the
 * CPU → executor address deltas of the two pools.  The mbufs are real
 * struct rte_mbuf built by hand (no EAL, no mempool): the functions only
 * read buf_addr, data_off, data_len, nb_segs and next (and, for NIC
 * receive times, ol_flags and the timestamp dynfield).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/ring.h"
#include "kernels/classify.h"
#include "pmd_glue/rxdesc.h"

#define BUF_SIZE 2048

static uint8_t hdr_buf[4][BUF_SIZE], pay_buf[4][BUF_SIZE];

/* One segment as a PMD leaves it: data at buf_addr + data_off. */
static void seg_init(struct rte_mbuf *m, uint8_t *buf, uint16_t data_off, uint16_t data_len)
{
	memset(m, 0, sizeof(*m));
	m->buf_addr = buf;
	m->data_off = data_off;
	m->data_len = data_len;
	m->pkt_len = data_len;
	m->nb_segs = 1;
	m->next = NULL;
}

/* Chain `n` segments after `m0`, as a PMD's scattered rx does. */
static void chain(struct rte_mbuf *segs, unsigned n)
{
	for (unsigned i = 0; i + 1 < n; i++) {
		segs[i].next = &segs[i + 1];
		segs[0].pkt_len += segs[i + 1].data_len;
	}
	segs[0].nb_segs = (uint16_t)n;
}

static void test_whole_packet(void **state)
{
	struct rte_mbuf m;
	uint64_t addr = 0;
	uint32_t len = 0;
	(void)state;

	seg_init(&m, hdr_buf[0], RTE_PKTMBUF_HEADROOM, 1500);
	gi_rxdesc_whole(&m, 0, &addr, &len);
	assert_true(addr == (uint64_t)(uintptr_t)(hdr_buf[0] + RTE_PKTMBUF_HEADROOM));
	assert_int_equal(len, 1500);

	/* the executor's view of the same buffer: a device mapping elsewhere */
	int64_t delta = (int64_t)0x7f0000000000ll - (int64_t)(uintptr_t)hdr_buf[0];
	gi_rxdesc_whole(&m, delta, &addr, &len);
	assert_true(addr == 0x7f0000000000ull + RTE_PKTMBUF_HEADROOM);
	gi_rxdesc_whole(&m, -4096, &addr, &len);
	assert_true(addr == (uint64_t)(uintptr_t)(hdr_buf[0] + RTE_PKTMBUF_HEADROOM) - 4096);
	assert_int_equal(len, 1500);
}

static void test_split_chain(void **state)
{
	struct rte_mbuf segs[2];
	uint64_t addr = 0, addr1 = 0;
	uint32_t len = 0, len0 = 0;
	(void)state;

	/* header segment: 128 bytes after the headroom; payload segment at offset 0 */
	seg_init(&segs[0], hdr_buf[1], RTE_PKTMBUF_HEADROOM, 128);
	seg_init(&segs[1], pay_buf[1], 0, 8000);
	chain(segs, 2);
	assert_int_equal(segs[0].pkt_len, 8128);

	gi_rxdesc_split(&segs[0], 0, 0, &addr, &len, &addr1, &len0);
	assert_true(addr == (uint64_t)(uintptr_t)(hdr_buf[1] + RTE_PKTMBUF_HEADROOM));
	assert_int_equal(len0, 128);
	assert_true(addr1 == (uint64_t)(uintptr_t)pay_buf[1]);
	assert_int_equal(len, segs[0].pkt_len);

	/* two pools, two deltas: host_pinned headers, device payload */
	int64_t d0 = 0x1000, d1 = (int64_t)0x7f0000000000ll - (int64_t)(uintptr_t)pay_buf[1];
	gi_rxdesc_split(&segs[0], d0, d1, &addr, &len, &addr1, &len0);
	assert_true(addr == (uint64_t)(uintptr_t)(hdr_buf[1] + RTE_PKTMBUF_HEADROOM) + 0x1000);
	assert_true(addr1 == 0x7f0000000000ull);
	assert_int_equal(len0, 128);
	assert_int_equal(len, 8128);

	/* the payload segment's own data_off is honoured (a PMD may leave headroom) */
	segs[1].data_off = 64;
	gi_rxdesc_split(&segs[0], 0, 0, &addr, &len, &addr1, &len0);
	assert_true(addr1 == (uint64_t)(uintptr_t)(pay_buf[1] + 64));
}

static void test_split_single_segment(void **state)
{
	struct rte_mbuf m;
	uint64_t addr = 0, addr1 = 0xdead;
	uint32_t len = 0, len0 = 0;
	(void)state;

	/* a 60-byte packet fits segment 0: no payload mbuf, no seg1 for the executor */
	seg_init(&m, hdr_buf[2], RTE_PKTMBUF_HEADROOM, 60);
	gi_rxdesc_split(&m, 0x40, 0x7000, &addr, &len, &addr1, &len0);
	assert_true(addr == (uint64_t)(uintptr_t)(hdr_buf[2] + RTE_PKTMBUF_HEADROOM) + 0x40);
	assert_true(addr1 == 0);
	assert_int_equal(len0, 60);
	assert_int_equal(len, 60);
}

static void test_split_long_chain_truncates(void **state)
{
	struct rte_mbuf segs[3];
	uint64_t addr, addr1;
	uint32_t len, len0;
	(void)state;

	/* a payload pool too small for the MTU: the descriptor covers two segments only */
	seg_init(&segs[0], hdr_buf[3], RTE_PKTMBUF_HEADROOM, 128);
	seg_init(&segs[1], pay_buf[2], 0, 1000);
	seg_init(&segs[2], pay_buf[3], 0, 500);
	chain(segs, 3);
	gi_rxdesc_split(&segs[0], 0, 0, &addr, &len, &addr1, &len0);
	assert_int_equal(len0, 128);
	assert_int_equal(len, 1128);
	assert_true(len < segs[0].pkt_len);
	assert_true(addr1 == (uint64_t)(uintptr_t)pay_buf[2]);
}

/*
 * Through a real split ring: descriptors written the way rxq_append() does
 * come back through gi_slot_pkt() (what every executor reads) as the same
 * bytes: header segment + payload segment == the packet.
 */
static void test_ring_round_trip(void **state)
{
	enum { MAX = 8 };
	uint8_t pkt[3][1200];
	struct rte_mbuf segs[3][2];
	uint64_t bytes = gi_ring_bytes(4, MAX, 1);
	struct gi_batch_ring *r = aligned_alloc(64, GI_ALIGN_UP(bytes, 64));
	static uint8_t bufs[3][2][BUF_SIZE];
	const uint32_t pkt_len[3] = { 1200, 60, 128 }; /* split, short, exactly segment 0 */
	(void)state;

	assert_non_null(r);
	memset(r, 0, bytes);
	assert_int_equal(gi_ring_init(r, 4, MAX, 1), 0);
	struct gi_batch_slot *s = gi_ring_slot(r, 0);
	for (unsigned p = 0; p < 3; p++) {
		for (unsigned b = 0; b < sizeof(pkt[p]); b++)
			pkt[p][b] = (uint8_t)(b * 7 + p);
		uint32_t l0 = pkt_len[p] > 128 ? 128 : pkt_len[p];
		seg_init(&segs[p][0], bufs[p][0], RTE_PKTMBUF_HEADROOM, (uint16_t)l0);
		memcpy(bufs[p][0] + RTE_PKTMBUF_HEADROOM, pkt[p], l0);
		if (pkt_len[p] > l0) {
			seg_init(&segs[p][1], bufs[p][1], 0, (uint16_t)(pkt_len[p] - l0));
			memcpy(bufs[p][1], pkt[p] + l0, pkt_len[p] - l0);
			chain(segs[p], 2);
		}
		gi_rxdesc_split(&segs[p][0], 0, 0, &gi_slot_addr(s)[p], &gi_slot_len(s, MAX)[p],
				&gi_slot_addr1(s, MAX)[p], &gi_slot_len0(s, MAX)[p]);
	}
	for (unsigned p = 0; p < 3; p++) {
		struct gi_pkt_desc d;
		gi_slot_pkt(s, MAX, r->split, p, &d);
		assert_int_equal(d.len, pkt_len[p]);
		if (p == 0) {
			assert_int_equal(d.hdr_len, 128);
			assert_non_null(d.seg1);
			assert_memory_equal(d.pkt, pkt[p], 128);
			assert_memory_equal(d.seg1, pkt[p] + 128, pkt_len[p] - 128);
		} else {
			assert_null(d.seg1); /* single segment: the executor reads it whole */
			assert_int_equal(d.hdr_len, pkt_len[p]);
			assert_memory_equal(d.pkt, pkt[p], pkt_len[p]);
		}
	}
	free(r);
}

/* NIC time -> the ring's clock (rxdesc.h): fixed scales, and the rate between two pairs. */
static void test_nic_clock(void **state)
{
	struct gi_nic_clock c;
	(void)state;

	gi_nic_clock_fixed(&c, 1000); /* net_pcap: microseconds since the epoch */
	assert_true(gi_nic_clock_ns(&c, 1700000000123457ull) == 1700000000123457000ull);
	gi_nic_clock_fixed(&c, 1); /* device ticks as they are */
	assert_true(gi_nic_clock_ns(&c, 123456789ull) == 123456789ull);
	assert_true(gi_nic_clock_ns(&c, 0) == 1); /* never 0, which means "none" */

	/* a 500 MHz counter: 2 ns a tick.  The first pair assumes 1 ns a tick ... */
	memset(&c, 0, sizeof(c));
	gi_nic_clock_pair(&c, 1000000, 1700000000000000000ull);
	assert_true(gi_nic_clock_ns(&c, 1000100) == 1700000000000000100ull);
	/* ... the second has the rate: 10 ms later, 5 000 000 ticks */
	gi_nic_clock_pair(&c, 6000000, 1700000000010000000ull);
	assert_true(c.mult == 2ull << 32);
	assert_true(gi_nic_clock_ns(&c, 6000000 + 123) == 1700000000010000246ull);
	assert_true(gi_nic_clock_ns(&c, 6000000 - 5) == 1700000000009999990ull); /* stamped before the pair */
	/* a pair that goes backwards (a clock reset) keeps the rate, takes the new base */
	gi_nic_clock_pair(&c, 10, 1700000000020000000ull);
	assert_true(c.mult == 2ull << 32);
	assert_true(gi_nic_clock_ns(&c, 20) == 1700000000020000020ull);
}

/*
 * The timestamp dynfield is read only where the PMD's flag says so, and a
 * timestamping ring's nic_ns[] (after the other arrays, inside the slot)
 * comes back through gi_slot_pkt(); a ring without it reads 0.
 */
static void test_nic_ts_slot(void **state)
{
	enum { MAX = 8 };
	const uint64_t flag = 1ull << 40;
	/* where the dynfield registry puts it: 8-byte aligned in dynfield1 (which starts at 4 mod 8) */
	const int off = (int)GI_ALIGN_UP(offsetof(struct rte_mbuf, dynfield1), 8);
	struct gi_nic_clock c;
	struct rte_mbuf m[2];
	(void)state;

	gi_nic_clock_fixed(&c, 1000);
	for (unsigned layout = 0; layout < 4; layout++) {
		uint64_t bytes = gi_ring_bytes(2, MAX, layout);
		struct gi_batch_ring *r = aligned_alloc(64, GI_ALIGN_UP(bytes, 64));
		assert_non_null(r);
		memset(r, 0, bytes);
		assert_int_equal(gi_ring_init(r, 2, MAX, layout), 0);
		struct gi_batch_slot *s = gi_ring_slot(r, 1);
		if (layout & GI_SLOT_NIC_TS) { /* its own bytes, inside the slot */
			uint8_t *nic = (uint8_t *)gi_slot_nic_ns(s, MAX, layout);
			uint8_t *last = (layout & GI_SLOT_SPLIT) ? (uint8_t *)(gi_slot_len0(s, MAX) + MAX)
								 : (uint8_t *)(gi_slot_len(s, MAX) + MAX);
			assert_true(nic >= last && nic + 8 * MAX <= (uint8_t *)s + r->slot_stride);
			assert_true((uintptr_t)nic % 8 == 0);
			assert_true(r->slot_stride >= gi_ring_slot_stride(MAX, layout & GI_SLOT_SPLIT) + 8 * MAX);
		}
		for (unsigned p = 0; p < 2; p++) {
			seg_init(&m[p], hdr_buf[p], RTE_PKTMBUF_HEADROOM, 100);
			*RTE_MBUF_DYNFIELD(&m[p], off, uint64_t *) = 1700000000000001ull + p;
			m[p].ol_flags = p == 0 ? flag : 0; /* packet 1: the PMD did not stamp it */
			gi_rxdesc_whole(&m[p], 0, &gi_slot_addr(s)[p], &gi_slot_len(s, MAX)[p]);
			if (layout & GI_SLOT_SPLIT) {
				gi_slot_addr1(s, MAX)[p] = 0;
				gi_slot_len0(s, MAX)[p] = 100;
			}
			if (layout & GI_SLOT_NIC_TS)
				gi_slot_nic_ns(s, MAX, layout)[p] = gi_rxdesc_nic_ns(&m[p], off, flag, &c);
		}
		for (unsigned p = 0; p < 2; p++) {
			struct gi_pkt_desc d;
			gi_slot_pkt(s, MAX, r->split, p, &d);
			assert_int_equal(d.len, 100);
			uint64_t want = (layout & GI_SLOT_NIC_TS) && p == 0 ? 1700000000000001000ull : 0;
			assert_true(d.nic_ns == want);
		}
		free(r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_packet),
		cmocka_unit_test(test_split_chain),
		cmocka_unit_test(test_split_single_segment),
		cmocka_unit_test(test_split_long_chain_truncates),
		cmocka_unit_test(test_ring_round_trip),
		cmocka_unit_test(test_nic_clock),
		cmocka_unit_test(test_nic_ts_slot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
