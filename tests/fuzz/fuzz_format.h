/*
 * fuzz_format.h — one packet through a format's parser, as the executor
 * runs it (gi_exec_classify() up to the stream lookup, then
 * gi_stream_match() and gi_stream_parse()), for the per-format targets
 * fuzz_udp_seq, fuzz_vita49, fuzz_rocev2 and fuzz_custom.  Test-only.
 *
 * Input: [u16 split cut][u16 packets][u16 payload_bytes][u16 last packet's
 *        bytes][u8 bit 0: a frame-end packet of its own][format params]
 *        [u8 started][u64 seq_max][u64 seq_origin][the Ethernet frame]
 * A cut below the frame's length puts the rest in a second buffer (buffer
 * split); seq state feeds rocev2's RETH check.
 */
#ifndef GI_FUZZ_FORMAT_H
#define GI_FUZZ_FORMAT_H

#include "fuzz.h"
#include "kernels/classify.h"

static inline int fz_format_one(uint32_t format, const uint8_t *data, size_t size)
{
	struct fz z = { data, size };
	struct gi_stream_rt st;
	struct gi_l4 l4;
	struct gi_pkt_info pi;
	struct fz_pkt k;

	memset(&st, 0, sizeof(st));
	st.format = format;
	uint32_t cut = fz_u16(&z);
	st.packets = fz_packets(&z, 4096);
	st.payload_bytes = fz_payload(&z, 9000);
	st.last_bytes = fz_payload(&z, st.payload_bytes);
	st.data_packets = st.packets - (fz_u8(&z) & 1 && st.packets > 1); /* a frame-end packet of its own, or not */
	fz_format_params(&z, &st.fp, format);
	if (format == GI_FORMAT_ROCEV2 && gi_fmt_rocev2_end_auto(&st.fp))
		st.packets = st.data_packets + 1; /* as the daemon sizes it: a bit for a record packet of its own */
	st.started = fz_u8(&z) & 1;
	st.seq_max = fz_u64(&z);
	st.seq_origin = fz_u64(&z);
	if (z.n > 65535)
		return 0;
	fz_pkt_make(&k, z.p, (uint32_t)z.n, cut);

	enum gi_l4_status ls = gi_parse_l4(k.seg0, k.len, k.hdr_len, &l4);
	if (ls == GI_L4_OK) {
		FZ_CHECK(l4.payload_off + 0ull <= k.hdr_len);
		FZ_CHECK(l4.payload_off + (uint64_t)l4.payload_len <= k.len);
		const uint8_t *u = k.seg0 + l4.payload_off;
		uint32_t u_avail = k.hdr_len > l4.payload_off ? GI_MIN(k.hdr_len - l4.payload_off, l4.payload_len) : 0;
		(void)gi_stream_match(&st, u, u_avail);
		memset(&pi, 0xa5, sizeof(pi));
		int why = gi_stream_parse(&st, &l4, k.seg0, k.hdr_len, k.seg1, &pi);
		FZ_CHECK(why >= 0 && why < GI_DROP__COUNT);
		if (why == 0) {
			/* the payload lies inside the UDP payload */
			FZ_CHECK(pi.payload_off + (uint64_t)pi.payload_len <= l4.payload_len);
			if (pi.has_frame && format != GI_FORMAT_ROCEV2)
				FZ_CHECK(pi.pkt_index < st.packets);
			if (pi.has_offset)
				FZ_CHECK(pi.byte_off < (uint64_t)st.packets * st.payload_bytes);
		}
	}
	fz_pkt_free(&k);
	return 0;
}

#endif /* GI_FUZZ_FORMAT_H */
