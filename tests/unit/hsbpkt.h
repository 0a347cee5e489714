/*
 * hsbpkt.h — a Holoscan Sensor Bridge sender for the unit tests: its
 * rocev2 stream parameters, its 128-byte frame-end record, its packets
 * (RDMA WRITE ONLY by page and offset, the record as a packet of its own
 * or on the last data packet, as its emulator sends it) and the fixture's
 * stream hook.  test_hsb.c tests the format with it; test_exec_cuda.c
 * runs the same sender through the emulated GPU's executor.  Test-only;
 * gpuingest-sim --format hsb is the production generator.
 */
#ifndef GI_HSBPKT_H
#define GI_HSBPKT_H

#include <stdint.h>
#include <string.h>

#include "exec_fixture.h"
#include "fmtpkt.h"
#include "kernels/fmt_rocev2.h"

#define HSB_PAYLOAD 128u                                  /* bytes per data packet */
#define HSB_DATA 5u                                       /* data packets per frame */
#define HSB_LAST 40u                                      /* the last one's bytes */
#define HSB_FRAME_BYTES ((HSB_DATA - 1) * HSB_PAYLOAD + HSB_LAST) /* 552 */
#define HSB_META_OFF 640u                                 /* roundup(552, 128): where the record goes */
#define HSB_PAGE (HSB_META_OFF + 128u)                    /* HSB's page_inc */
#define HSB_PAGES 3u
#define HSB_BASE 0x10000ull
#define HSB_RKEY 0x2au
#define HSB_QP 0x105u

static uint32_t hsb_frame_crc_on; /* rocev2.frame_crc: verify, for the streams hsb_params() makes */

static inline struct gi_format_params hsb_params(uint32_t frame_end, uint32_t has_rkey)
{
	struct gi_format_params fp;
	struct gi_fmt_rocev2_params rp = {
		.base_va = HSB_BASE, .frame_bytes = HSB_FRAME_BYTES, .page_bytes = HSB_PAGE, .pages = HSB_PAGES,
		.rkey = HSB_RKEY, .has_rkey = has_rkey, .dst_qp = HSB_QP, .icrc = GI_ROCEV2_ICRC_VERIFY,
		.close_on = GI_ROCEV2_CLOSE_IMM, .placement = GI_ROCEV2_PLACE_VA, .profile = GI_ROCEV2_PROFILE_HSB,
		.frame_end = frame_end, .frame_crc = hsb_frame_crc_on,
	};
	gi_format_params_init(&fp, GI_FORMAT_ROCEV2);
	gi_fmt_rocev2_set(&fp, &rp);
	return fp;
}

/* HSB's record: frame number fn, start of frame sof_s.sof_ns, crc, bytes written. */
static inline void hsb_record(uint8_t m[128], uint32_t psn, uint32_t fn, uint64_t sof_s, uint32_t sof_ns, uint32_t crc)
{
	memset(m, 0, 128);
	gi_put_be32(m + GI_HSB_META_FLAGS, 1);
	gi_put_be32(m + GI_HSB_META_PSN, psn);
	gi_put_be32(m + GI_HSB_META_CRC, crc);
	gi_put_be64(m + GI_HSB_META_SOF_S, sof_s);
	gi_put_be32(m + GI_HSB_META_SOF_NS, sof_ns);
	gi_put_be64(m + GI_HSB_META_BYTES_WRITTEN, HSB_FRAME_BYTES);
	gi_put_be32(m + GI_HSB_META_FRAME, fn);
	gi_put_be64(m + GI_HSB_META_META_S, sof_s + 1);
	gi_put_be32(m + GI_HSB_META_META_NS, 7);
}

/* Frame k's CRC as HSB sends it, ~crc32 (zlib) of its bytes; every 7th wrong when hsb_frame_crc_on. */
static inline uint32_t hsb_frame_crc(uint64_t k)
{
	uint8_t buf[HSB_FRAME_BYTES];
	gi_pattern_fill(buf, gi_pattern_seed(HSB_QP & 0xffff, (uint32_t)k), 0, HSB_FRAME_BYTES);
	uint32_t c = 0xffffffffu;
	for (uint32_t i = 0; i < HSB_FRAME_BYTES; i++)
		c = gi_crc32_step(c, buf[i]);
	return k % 7 == 6 ? c ^ 0x10000u : c;
}

/* Packet idx of frame k on `page`, as HSB's FPGA sends it (embedded: as its emulator does). */
static inline uint32_t hsb_pkt(uint8_t *b, uint32_t idx, uint64_t k, uint32_t page, uint32_t psn, int embedded)
{
	uint8_t m[128];
	uint32_t meta = embedded ? idx == HSB_DATA - 1 : idx == HSB_DATA;
	struct rp p = { .opcode = (uint8_t)(GI_ROCEV2_UC | (meta ? GI_ROCEV2_WRITE_ONLY_IMM : GI_ROCEV2_WRITE_ONLY)),
			.qp = HSB_QP, .psn = psn & 0xffffff,
			.plen = idx + 1 < HSB_DATA ? HSB_PAYLOAD : idx + 1 == HSB_DATA ? HSB_LAST : 0,
			.va = HSB_BASE + (uint64_t)page * HSB_PAGE +
			      (idx < HSB_DATA ? idx * HSB_PAYLOAD : HSB_META_OFF),
			.pad = -1, .seed = gi_pattern_seed(HSB_QP & 0xffff, (uint32_t)k),
			.off = (uint64_t)idx * HSB_PAYLOAD, .rkey = HSB_RKEY, .imm = (psn & 0xfffffu) << 12 | page };
	if (meta) {
		hsb_record(m, psn, (uint32_t)((65533 + k) & 0xffff), 1700000000ull + k, (uint32_t)k * 3,
			   hsb_frame_crc_on ? hsb_frame_crc(k) : 0xc0ffee00u + (uint32_t)k);
		p.meta = m;
		p.zpad = embedded ? HSB_META_OFF - (HSB_DATA - 1) * HSB_PAYLOAD - HSB_LAST : 0;
	}
	return rp_build(b, &p);
}

/* The fixture's stream hook; conf.arg: the stream's rocev2.frame_end (0: packet).  Every stream on port 4791. */
static inline void hsb_stream(struct exec_fixture *f, int s)
{
	struct gi_stream_rt *st = &f->st[s];
	uint32_t frame_end = (uint32_t)f->conf.arg;
	st->fp = hsb_params(frame_end, 1);
	st->fp.resync_frames = 1000;
	st->data_packets = HSB_DATA;
	/* as the daemon configures it: the slot's last bit is a record packet's (auto: until learned) */
	st->packets = frame_end == GI_ROCEV2_END_EMBEDDED ? HSB_DATA : HSB_DATA + 1;
	st->last_bytes = HSB_LAST;
	st->ring->frame_bytes = HSB_FRAME_BYTES;
	exf_map_port(f, s, GI_ROCEV2_UDP_PORT);
}

#endif /* GI_HSBPKT_H */
