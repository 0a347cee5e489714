/*
 * fuzz_l4.c — gi_parse_l4() (kernels/pkt.h), the Ethernet/802.1Q/IPv4/UDP
 * parse every format starts with, on hostile frames.  Test-only.
 *
 * Input: [u16 split cut][the Ethernet frame].  What an OK parse promises
 * is checked: the UDP header lies in the header segment, the payload in
 * the frame.  Then header prediction (struct gi_l4_memo): with the frame
 * remembered, each of its first 64 bytes changed in turn, and the frame
 * one byte shorter, must parse as the memo says wherever the memo hits.
 */
#include "fuzz.h"
#include "kernels/pkt.h"

/* A memo hit on packet b (len, hdr_len) promises gi_parse_l4()'s answer. */
static void memo_promise(const struct gi_l4_memo *m, const uint8_t *b, uint32_t len, uint32_t hdr_len)
{
	struct gi_l4 l4;
	if (!gi_l4_memo_hit((struct gi_l4_memo *)m, b, len, hdr_len, 0))
		return;
	FZ_CHECK(gi_parse_l4(b, len, hdr_len, &l4) == GI_L4_OK);
	FZ_CHECK(memcmp(&l4, &m->l4, sizeof(l4)) == 0);
}

static void memo_check(const struct fz_pkt *k, const struct gi_l4 *l4)
{
	struct gi_l4_memo m;
	gi_l4_memo_reset(&m);
	gi_l4_memo_store(&m, k->seg0, k->hdr_len, 0, l4, 0);
	if (m.min_len == UINT32_MAX)
		return; /* a shape the memo does not keep */
	uint8_t *b = malloc(k->hdr_len);
	memcpy(b, k->seg0, k->hdr_len);
	FZ_CHECK(gi_l4_memo_hit(&m, b, k->len, k->hdr_len, 0));
	for (uint32_t j = 0; j < 64 && j < k->hdr_len; j++) {
		uint8_t keep = b[j];
		b[j] = (uint8_t)(keep ^ k->seg0[(j * 7 + 3) % k->hdr_len] ^ (uint8_t)(1u << (j % 8)));
		memo_promise(&m, b, k->len, k->hdr_len);
		b[j] = keep;
	}
	memo_promise(&m, b, k->len - 1, k->hdr_len < k->len ? k->hdr_len : k->len - 1);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z = { data, size };
	struct fz_pkt k;
	struct gi_l4 l4;

	uint32_t cut = fz_u16(&z);
	if (z.n > 65535)
		return 0;
	fz_pkt_make(&k, z.p, (uint32_t)z.n, cut);
	if (gi_parse_l4(k.seg0, k.len, k.hdr_len, &l4) == GI_L4_OK) {
		FZ_CHECK(l4.l3_off + 20u <= l4.l4_off);
		FZ_CHECK(l4.l4_off + 8u == l4.payload_off);
		FZ_CHECK(l4.payload_off <= k.hdr_len);
		FZ_CHECK(l4.payload_off + (uint64_t)l4.payload_len <= k.len);
		memo_check(&k, &l4);
	}
	fz_pkt_free(&k);
	return 0;
}
