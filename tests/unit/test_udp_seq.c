/*
 * test_udp_seq.c — L2–L4 and udp_seq header parsing: valid, truncated and
 * corrupt packets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "testpkt.h"

static const struct tp_opts plain = { .udp_dst = 5000, .vlan = -1 };

static struct gi_udp_seq hdr(void)
{
	return (struct gi_udp_seq){ .stream_id = 3, .packets_per_frame = 64, .seq = 0xfffffffeu, .frame = 77,
				    .pkt_index = 63, .payload_len = 100, .flags = GI_UDP_SEQ_FLAG_LAST,
				    .timestamp_ns = 0x0102030405060708ull };
}

static void test_valid_roundtrip(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	struct gi_udp_seq h = hdr(), got;
	struct gi_l4 l4;
	uint32_t len = tp_build(buf, &plain, &h);

	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_OK);
	assert_int_equal(l4.dst_port, 5000);
	assert_int_equal(l4.src_port, 4000);
	assert_int_equal(l4.vlan, 0xffff);
	assert_int_equal(l4.payload_off, 14 + 20 + 8);
	assert_int_equal(l4.payload_len, GI_UDP_SEQ_HDR_LEN + 100);
	assert_int_equal(gi_udp_seq_parse(buf + l4.payload_off, l4.payload_len, &got), GI_UDP_SEQ_OK);
	assert_int_equal(got.stream_id, 3);
	assert_int_equal(got.packets_per_frame, 64);
	assert_int_equal(got.seq, 0xfffffffeu);
	assert_int_equal(got.frame, 77);
	assert_int_equal(got.pkt_index, 63);
	assert_int_equal(got.payload_len, 100);
	assert_int_equal(got.flags, GI_UDP_SEQ_FLAG_LAST);
	assert_true(got.timestamp_ns == 0x0102030405060708ull);
	/* the payload carries the pattern for (stream, frame, offset) */
	assert_int_equal(gi_pattern_mismatches(buf + l4.payload_off + 32, gi_pattern_seed(3, 77), 63 * 100, 100), 0);
	assert_int_not_equal(gi_pattern_mismatches(buf + l4.payload_off + 32, gi_pattern_seed(3, 78), 63 * 100, 100), 0);
}

static void test_vlan_and_ip_options(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	struct gi_udp_seq h = hdr(), got;
	struct tp_opts o = { .udp_dst = 6000, .vlan = 42, .ip_opts = 3 };
	struct gi_l4 l4;
	uint32_t len = tp_build(buf, &o, &h);

	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_OK);
	assert_int_equal(l4.vlan, 42);
	assert_int_equal(l4.dst_port, 6000);
	assert_int_equal(l4.payload_off, 14 + 4 + 32 + 8);
	assert_int_equal(gi_udp_seq_parse(buf + l4.payload_off, l4.payload_len, &got), GI_UDP_SEQ_OK);

	/* trailing Ethernet padding is not part of the datagram */
	assert_int_equal(gi_parse_l4(buf, len + 20, len + 20, &l4), GI_L4_OK);
	assert_int_equal(l4.payload_len, GI_UDP_SEQ_HDR_LEN + 100);
}

static void test_truncated_everywhere(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	struct gi_udp_seq h = hdr(), got;
	struct gi_l4 l4;
	uint32_t len = tp_build(buf, &plain, &h);

	/* cut the frame at every length: never OK, never out of bounds (ASan run) */
	for (uint32_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		memcpy(copy, buf, cut);
		enum gi_l4_status st = gi_parse_l4(copy, cut, cut, &l4);
		assert_int_equal(st, GI_L4_MALFORMED);
		free(copy);
	}
	/* a UDP payload shorter than the header */
	for (uint32_t n = 0; n < GI_UDP_SEQ_HDR_LEN; n++)
		assert_int_equal(gi_udp_seq_parse(buf + 42, n, &got), GI_UDP_SEQ_TRUNCATED);
}

static void test_corrupt_headers(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	struct gi_udp_seq h = hdr(), got;
	struct gi_l4 l4;
	uint32_t len = tp_build(buf, &plain, &h);
	uint8_t *u = buf + 42;

	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_OK);
	u[0] ^= 0x01;
	assert_int_equal(gi_udp_seq_parse(u, l4.payload_len, &got), GI_UDP_SEQ_BAD_MAGIC);
	u[0] ^= 0x01;
	u[2] = 2;
	assert_int_equal(gi_udp_seq_parse(u, l4.payload_len, &got), GI_UDP_SEQ_BAD_VERSION);
	u[2] = 1;
	gi_put_be16(u + 18, 101);
	assert_int_equal(gi_udp_seq_parse(u, l4.payload_len, &got), GI_UDP_SEQ_BAD_LENGTH);
	gi_put_be16(u + 18, 100);
	gi_put_be16(u + 16, 64);
	assert_int_equal(gi_udp_seq_parse(u, l4.payload_len, &got), GI_UDP_SEQ_BAD_INDEX);
	gi_put_be16(u + 16, 0);
	gi_put_be16(u + 6, 0);
	assert_int_equal(gi_udp_seq_parse(u, l4.payload_len, &got), GI_UDP_SEQ_BAD_INDEX);
	gi_put_be16(u + 6, 64);
	assert_int_equal(gi_udp_seq_parse(u, l4.payload_len, &got), GI_UDP_SEQ_OK);
}

static void test_l3_l4_corruption(void **state)
{
	(void)state;
	uint8_t buf[TP_MAX];
	struct gi_udp_seq h = hdr();
	struct gi_l4 l4;
	uint32_t len = tp_build(buf, &plain, &h);
	uint8_t *ip = buf + 14;

	gi_put_be16(buf + 12, 0x86dd); /* IPv6: not ours */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_NOT_UDP);
	gi_put_be16(buf + 12, 0x0806); /* ARP */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_NOT_UDP);
	gi_put_be16(buf + 12, 0x0800);

	ip[9] = 6; /* TCP */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_NOT_UDP);
	ip[9] = 17;
	ip[0] = 0x44; /* IHL 16 bytes */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_MALFORMED);
	ip[0] = 0x65; /* version 6 in an IPv4 ethertype */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_MALFORMED);
	ip[0] = 0x45;
	uint16_t tot = gi_be16(ip + 2);
	gi_put_be16(ip + 2, (uint16_t)(tot + 1)); /* longer than the frame */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_MALFORMED);
	gi_put_be16(ip + 2, tot);
	gi_put_be16(ip + 6, 0x2000); /* more fragments */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_MALFORMED);
	gi_put_be16(ip + 6, 0x0001); /* fragment offset */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_MALFORMED);
	gi_put_be16(ip + 6, 0x4000); /* don't fragment is fine */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_OK);
	uint8_t *udp = ip + 20;
	uint16_t ul = gi_be16(udp + 4);
	gi_put_be16(udp + 4, (uint16_t)(ul + 1)); /* UDP longer than IP */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_MALFORMED);
	gi_put_be16(udp + 4, 7); /* shorter than its own header */
	assert_int_equal(gi_parse_l4(buf, len, len, &l4), GI_L4_MALFORMED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_roundtrip),
		cmocka_unit_test(test_vlan_and_ip_options),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_corrupt_headers),
		cmocka_unit_test(test_l3_l4_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
