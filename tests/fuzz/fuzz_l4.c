/*
 * fuzz_l4.c — gi_parse_l4() (kernels/pkt.h), the Ethernet/802.1Q/IPv4/UDP
 * parse every format starts with, on hostile frames.  Test-only.
 *
 * Input: [u16 split cut][the Ethernet frame].  What an OK parse promises
 * is checked: the UDP header lies in the header segment, the payload in
 * the frame.
 */
#include "fuzz.h"
#include "kernels/pkt.h"

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
	}
	fz_pkt_free(&k);
	return 0;
}
