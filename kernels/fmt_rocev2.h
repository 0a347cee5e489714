/*
 * fmt_rocev2.h — the `rocev2` sensor format: RoCEv2 (InfiniBand transport
 * over UDP port 4791) as an RDMA-capable sensor sends it.
 *
 * Runs per packet in the executor (host thread or GPU lane 0), like
 * udp_seq.h.  What is placed: RC and UC SEND FIRST/MIDDLE/LAST/ONLY and
 * RDMA WRITE FIRST/MIDDLE/LAST/ONLY, each with or without immediate, and UD
 * SEND ONLY with or without immediate.  Everything else (ACKs, READs,
 * atomics, CNPs, RD) is counted as rocev2_opcode.
 *
 * Wire layout after the UDP header (big-endian):
 *   BTH   12  opcode, SE|M|PadCnt(2)|TVer(4), P_Key, resv8 (FECN/BECN),
 *             DestQP(24), AckReq|resv7, PSN(24)
 *   DETH   8  Q_Key, resv8, SrcQP(24)          UD only
 *   RETH  16  VA(64), R_Key, DMA length         WRITE FIRST and ONLY
 *   ImmDt  4                                   the *_WITH_IMMEDIATE opcodes
 *   payload, PadCnt pad bytes, ICRC 4 (least-significant byte first)
 *
 * Sequencing and placement (documented in README "Sensor format rocev2"):
 * the PSN is the sequence number (24 bits, wrapping); frames are derived
 * from it (has_frame = 0): a frame is frame.packets consecutive PSNs of
 * frame.payload_bytes each, so a lost FIRST packet loses one packet, not a
 * message.  A RETH (WRITE FIRST/ONLY) is a claim about placement that is
 * checked, not trusted: (VA - base_va) modulo the frame size must equal the
 * PSN-derived offset, else rocev2_va.
 *
 * ICRC: CRC-32 (IEEE 802.3, reflected) over 8 bytes of 0xFF (the masked
 * LRH stand-in), the IPv4 header with TOS, TTL and header checksum set to
 * all ones, the UDP header with its checksum set to all ones, the BTH with
 * its resv8 byte (FECN/BECN) set to all ones, the extension headers, the
 * payload and the pad — as scapy.contrib.roce computes it.  On the host
 * ISA-L's folding CRC (or zlib's) over the masked headers, then over each
 * segment of the packet (gi_crc32_host); the GPU verifies with
 * slice-by-8 tables in shared memory, eight bytes per step, a thread per
 * packet
 * (gi_rocev2_icrc_t8): ~2 instructions a byte and no cross-lane work, which
 * beats splitting a packet over a warp once the lanes' shares must be
 * shifted into place (a GF(2) multiply each).  `icrc: ignore` where the NIC
 * already checked it.
 */
#ifndef GI_FMT_ROCEV2_H
#define GI_FMT_ROCEV2_H

#include "format.h"
#include "pkt.h"

GI_EXTERN_C_BEGIN

#define GI_ROCEV2_UDP_PORT 4791u
#define GI_ROCEV2_BTH_LEN 12u
#define GI_ROCEV2_DETH_LEN 8u
#define GI_ROCEV2_RETH_LEN 16u
#define GI_ROCEV2_IMM_LEN 4u
#define GI_ROCEV2_ICRC_LEN 4u
/* the largest header set we accept: BTH + RETH + ImmDt (UD: BTH + DETH + ImmDt is smaller) */
#define GI_ROCEV2_MAX_HDR_LEN (GI_ROCEV2_BTH_LEN + GI_ROCEV2_RETH_LEN + GI_ROCEV2_IMM_LEN)
#define GI_ROCEV2_QP_MASK 0xffffffu

/* BTH opcodes (transport in bits 7..5, operation in 4..0) */
enum gi_rocev2_opcode {
	GI_ROCEV2_RC = 0x00,
	GI_ROCEV2_UC = 0x20,
	GI_ROCEV2_RD = 0x40,
	GI_ROCEV2_UD = 0x60,
	GI_ROCEV2_SEND_FIRST = 0x00,
	GI_ROCEV2_SEND_MIDDLE = 0x01,
	GI_ROCEV2_SEND_LAST = 0x02,
	GI_ROCEV2_SEND_LAST_IMM = 0x03,
	GI_ROCEV2_SEND_ONLY = 0x04,
	GI_ROCEV2_SEND_ONLY_IMM = 0x05,
	GI_ROCEV2_WRITE_FIRST = 0x06,
	GI_ROCEV2_WRITE_MIDDLE = 0x07,
	GI_ROCEV2_WRITE_LAST = 0x08,
	GI_ROCEV2_WRITE_LAST_IMM = 0x09,
	GI_ROCEV2_WRITE_ONLY = 0x0a,
	GI_ROCEV2_WRITE_ONLY_IMM = 0x0b,
	GI_ROCEV2_READ_REQUEST = 0x0c,
	GI_ROCEV2_ACK = 0x11,
	GI_ROCEV2_CNP = 0x81,
};

/* What an opcode carries; 0 for opcodes we do not place. */
enum {
	GI_ROCEV2_F_OK = 1 << 0,
	GI_ROCEV2_F_WRITE = 1 << 1,
	GI_ROCEV2_F_FIRST = 1 << 2, /* starts a message (FIRST or ONLY) */
	GI_ROCEV2_F_LAST = 1 << 3,  /* ends a message (LAST or ONLY) */
	GI_ROCEV2_F_RETH = 1 << 4,
	GI_ROCEV2_F_DETH = 1 << 5,
	GI_ROCEV2_F_IMM = 1 << 6,
};

enum gi_rocev2_icrc_mode {
	GI_ROCEV2_ICRC_VERIFY = 0,
	GI_ROCEV2_ICRC_IGNORE = 1,
};

enum gi_rocev2_placement {
	GI_ROCEV2_PLACE_PSN = 0, /* a packet's place is its PSN's; a RETH is checked against it */
	GI_ROCEV2_PLACE_VA = 1,  /* a RETH names page and offset: VA = base_va + page * page_bytes + offset */
};

/* The sender's frame-end record (rocev2.profile). */
enum gi_rocev2_profile {
	GI_ROCEV2_PROFILE_NONE = 0,
	GI_ROCEV2_PROFILE_HSB = 1, /* Holoscan Sensor Bridge: 128 bytes at the end of a WRITE with immediate */
};

/*
 * Where HSB's record comes.  The FPGA always sends it as a packet of its
 * own; HSB's software emulator appends it to the last data packet only when
 * last + zero padding + 128 + 4 + 128 <= payload, else it too sends a
 * packet of its own (1920x1080 RAW10 does).  A receiver cannot know which
 * in advance, so `auto` learns it per stream and epoch (stream_seq.h,
 * gi_stream_learn_end); the other two are strict.
 */
enum gi_rocev2_frame_end {
	GI_ROCEV2_END_PACKET = 0,   /* a packet of its own after the frame's data (the FPGA's form) */
	GI_ROCEV2_END_EMBEDDED = 1, /* appended to the last data packet (HSB's software emulator, when it fits) */
	GI_ROCEV2_END_AUTO = 2,     /* either, learned from the stream's first frame end (the default) */
};

/*
 * Holoscan Sensor Bridge's frame-end record: 128 bytes, big-endian (the
 * FPGA packetizer and HSB's host decoder agree; its docs table says
 * little-endian).  Sent at page base + roundup(frame bytes, 128).
 */
#define GI_HSB_META_BYTES 128u
#define GI_HSB_ALIGN 128u
#define GI_HSB_META_FLAGS 0u       /* u32: bit 0 early TLAST, bit 1 bytes-per-window only */
#define GI_HSB_META_PSN 4u         /* u32 */
#define GI_HSB_META_CRC 8u         /* u32: ~crc32(frame), zlib's */
#define GI_HSB_META_SOF_S 12u      /* u64: start of frame, PTP seconds */
#define GI_HSB_META_SOF_NS 20u     /* u32 */
#define GI_HSB_META_BYTES_WRITTEN 24u /* u64 */
#define GI_HSB_META_FRAME 32u      /* u32, 16 bits used */
#define GI_HSB_META_META_S 36u     /* u64: when the record was sent */
#define GI_HSB_META_META_NS 44u    /* u32 */

GI_HD static inline uint64_t gi_hsb_align(uint64_t n)
{
	return (n + GI_HSB_ALIGN - 1) / GI_HSB_ALIGN * GI_HSB_ALIGN;
}

enum gi_rocev2_close_on {
	GI_ROCEV2_CLOSE_NONE = 0,
	GI_ROCEV2_CLOSE_LAST = 1, /* the last packet of a message (LAST or ONLY) makes its frame final */
	GI_ROCEV2_CLOSE_IMM = 2,  /* a packet with immediate data makes its frame final */
};

/*
 * The stream's rocev2 parameters, packed into gi_format_params.fmt word by
 * word (fmt[0] base_va, fmt[1] dst_qp | icrc << 32, fmt[2] close_on |
 * placement << 8 | profile << 16 | frame_end << 24 | has_rkey << 32 | frame_crc << 40,
 * fmt[3] frame_bytes, fmt[4] page_bytes, fmt[5] pages | rkey << 32): no
 * type punning of the uint64_t array, the same on host and device.
 */
struct gi_fmt_rocev2_params {
	uint64_t base_va;     /* rocev2.base_va: VA of byte 0 of the frame buffer (va: of page 0) */
	uint64_t frame_bytes; /* frame.bytes: psn: a WRITE's VA is base_va + frame * frame_bytes + offset (0: whole packets) */
	uint64_t page_bytes;  /* va: rocev2.page_bytes, the VA distance between the sender's pages */
	uint32_t pages;       /* va: rocev2.pages, the sender's pages (0: any) */
	uint32_t rkey;        /* rocev2.rkey, when has_rkey */
	uint32_t has_rkey;
	uint32_t dst_qp;      /* match.dst_qp, 24 bits */
	uint32_t icrc;        /* enum gi_rocev2_icrc_mode */
	uint32_t close_on;    /* enum gi_rocev2_close_on */
	uint32_t placement;   /* enum gi_rocev2_placement */
	uint32_t profile;     /* enum gi_rocev2_profile */
	uint32_t frame_end;   /* enum gi_rocev2_frame_end (profile hsb) */
	uint32_t frame_crc;   /* profile hsb: check each complete frame against the record's CRC and bytes written */
};
#define GI_FMT_ROCEV2_WORDS 6u
GI_STATIC_ASSERT(GI_FMT_ROCEV2_WORDS <= sizeof(((struct gi_format_params *)0)->fmt) / sizeof(uint64_t),
		 "rocev2 parameters must fit gi_format_params.fmt");

/*
 * Does an HSB stream learn its frame end (profile hsb, frame_end auto)?  Read
 * from the packed word without unpacking the rest: asked at each epoch's
 * start and by the parser's caller per packet.  Every rocev2 stream carries
 * the default frame_end, so the profile must be asked too.
 */
GI_HD static inline int gi_fmt_rocev2_end_auto(const struct gi_format_params *fp)
{
	return ((fp->fmt[2] >> 16) & 0xffffu) == (GI_ROCEV2_PROFILE_HSB | (uint32_t)GI_ROCEV2_END_AUTO << 8);
}

GI_HD static inline struct gi_fmt_rocev2_params gi_fmt_rocev2(const struct gi_format_params *fp)
{
	struct gi_fmt_rocev2_params p;
	p.base_va = fp->fmt[0];
	p.dst_qp = (uint32_t)fp->fmt[1];
	p.icrc = (uint32_t)(fp->fmt[1] >> 32);
	p.close_on = (uint32_t)fp->fmt[2] & 0xffu;
	p.placement = (uint32_t)(fp->fmt[2] >> 8) & 0xffu;
	p.profile = (uint32_t)(fp->fmt[2] >> 16) & 0xffu;
	p.frame_end = (uint32_t)(fp->fmt[2] >> 24) & 0xffu;
	p.has_rkey = (uint32_t)(fp->fmt[2] >> 32) & 1u;
	p.frame_crc = (uint32_t)(fp->fmt[2] >> 40) & 1u;
	p.frame_bytes = fp->fmt[3];
	p.page_bytes = fp->fmt[4];
	p.pages = (uint32_t)fp->fmt[5];
	p.rkey = (uint32_t)(fp->fmt[5] >> 32);
	return p;
}

static inline void gi_fmt_rocev2_set(struct gi_format_params *fp, const struct gi_fmt_rocev2_params *p)
{
	fp->fmt[0] = p->base_va;
	fp->fmt[1] = (uint64_t)p->dst_qp | ((uint64_t)p->icrc << 32);
	fp->fmt[2] = (uint64_t)(p->close_on & 0xffu) | (uint64_t)(p->placement & 0xffu) << 8 |
		     (uint64_t)(p->profile & 0xffu) << 16 | (uint64_t)(p->frame_end & 0xffu) << 24 |
		     (uint64_t)(p->has_rkey & 1u) << 32 | (uint64_t)(p->frame_crc & 1u) << 40;
	fp->fmt[3] = p->frame_bytes;
	fp->fmt[4] = p->page_bytes;
	fp->fmt[5] = (uint64_t)p->pages | (uint64_t)p->rkey << 32;
}

/* Byte `off` of a packet whose first hdr_len bytes are at pkt and the rest at seg1 (buffer split). */
GI_HD static inline uint8_t gi_seg_byte(const uint8_t *pkt, uint32_t hdr_len, const uint8_t *seg1, uint32_t off)
{
	return off < hdr_len ? pkt[off] : seg1[off - hdr_len];
}

GI_HD static inline uint32_t gi_seg_be32(const uint8_t *pkt, uint32_t hdr_len, const uint8_t *seg1, uint32_t off)
{
	return (uint32_t)gi_seg_byte(pkt, hdr_len, seg1, off) << 24 | (uint32_t)gi_seg_byte(pkt, hdr_len, seg1, off + 1) << 16 |
	       (uint32_t)gi_seg_byte(pkt, hdr_len, seg1, off + 2) << 8 | gi_seg_byte(pkt, hdr_len, seg1, off + 3);
}

GI_HD static inline uint64_t gi_seg_be64(const uint8_t *pkt, uint32_t hdr_len, const uint8_t *seg1, uint32_t off)
{
	return (uint64_t)gi_seg_be32(pkt, hdr_len, seg1, off) << 32 | gi_seg_be32(pkt, hdr_len, seg1, off + 4);
}

GI_HD static inline uint32_t gi_be24(const uint8_t *p)
{
	return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];
}

GI_HD static inline uint32_t gi_rocev2_opcode_flags(uint8_t op)
{
	uint32_t w = GI_ROCEV2_F_OK | GI_ROCEV2_F_WRITE;

	if ((op & 0xe0) == GI_ROCEV2_UD) {
		if ((op & 0x1f) == GI_ROCEV2_SEND_ONLY)
			return GI_ROCEV2_F_OK | GI_ROCEV2_F_FIRST | GI_ROCEV2_F_LAST | GI_ROCEV2_F_DETH;
		if ((op & 0x1f) == GI_ROCEV2_SEND_ONLY_IMM)
			return GI_ROCEV2_F_OK | GI_ROCEV2_F_FIRST | GI_ROCEV2_F_LAST | GI_ROCEV2_F_DETH | GI_ROCEV2_F_IMM;
		return 0;
	}
	if ((op & 0xe0) != GI_ROCEV2_RC && (op & 0xe0) != GI_ROCEV2_UC)
		return 0; /* RD, CNP (0x81) and the reserved ranges */
	switch (op & 0x1f) {
	case GI_ROCEV2_SEND_FIRST: return GI_ROCEV2_F_OK | GI_ROCEV2_F_FIRST;
	case GI_ROCEV2_SEND_MIDDLE: return GI_ROCEV2_F_OK;
	case GI_ROCEV2_SEND_LAST: return GI_ROCEV2_F_OK | GI_ROCEV2_F_LAST;
	case GI_ROCEV2_SEND_LAST_IMM: return GI_ROCEV2_F_OK | GI_ROCEV2_F_LAST | GI_ROCEV2_F_IMM;
	case GI_ROCEV2_SEND_ONLY: return GI_ROCEV2_F_OK | GI_ROCEV2_F_FIRST | GI_ROCEV2_F_LAST;
	case GI_ROCEV2_SEND_ONLY_IMM: return GI_ROCEV2_F_OK | GI_ROCEV2_F_FIRST | GI_ROCEV2_F_LAST | GI_ROCEV2_F_IMM;
	case GI_ROCEV2_WRITE_FIRST: return w | GI_ROCEV2_F_FIRST | GI_ROCEV2_F_RETH;
	case GI_ROCEV2_WRITE_MIDDLE: return w;
	case GI_ROCEV2_WRITE_LAST: return w | GI_ROCEV2_F_LAST;
	case GI_ROCEV2_WRITE_LAST_IMM: return w | GI_ROCEV2_F_LAST | GI_ROCEV2_F_IMM;
	case GI_ROCEV2_WRITE_ONLY: return w | GI_ROCEV2_F_FIRST | GI_ROCEV2_F_LAST | GI_ROCEV2_F_RETH;
	case GI_ROCEV2_WRITE_ONLY_IMM:
		return w | GI_ROCEV2_F_FIRST | GI_ROCEV2_F_LAST | GI_ROCEV2_F_RETH | GI_ROCEV2_F_IMM;
	default: return 0;
	}
}

/* Extension headers after the BTH for an opcode's flags. */
GI_HD static inline uint32_t gi_rocev2_ext_len(uint32_t flags)
{
	return (flags & GI_ROCEV2_F_DETH ? GI_ROCEV2_DETH_LEN : 0u) + (flags & GI_ROCEV2_F_RETH ? GI_ROCEV2_RETH_LEN : 0u) +
	       (flags & GI_ROCEV2_F_IMM ? GI_ROCEV2_IMM_LEN : 0u);
}

/* ---- CRC-32 (reflected 0xEDB88320), the ICRC ------------------------------ */

#define GI_CRC32_TABLE_INIT \
	0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu, \
	0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u, \
	0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u, \
	0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u, \
	0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u, \
	0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u, \
	0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu, \
	0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u, \
	0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u, \
	0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u, \
	0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u, 0x01db7106u, \
	0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u, \
	0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du, \
	0x91646c97u, 0xe6635c01u, 0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu, \
	0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u, \
	0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u, \
	0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u, \
	0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u, \
	0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau, \
	0xbe0b1010u, 0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu, \
	0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u, \
	0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au, \
	0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u, 0xe3630b12u, 0x94643b84u, \
	0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u, \
	0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu, \
	0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu, \
	0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu, \
	0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu, \
	0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u, \
	0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u, \
	0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u, \
	0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du, \
	0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu, \
	0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u, \
	0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u, \
	0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u, \
	0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u, \
	0x616bffd3u, 0x166ccf45u, 0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u, \
	0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu, \
	0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u, \
	0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u, 0xcdd70693u, \
	0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u, \
	0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du

static const uint32_t gi_crc32_table[256] = { GI_CRC32_TABLE_INIT };
#ifdef __CUDACC__
static __constant__ uint32_t gi_crc32_table_dev[256] = { GI_CRC32_TABLE_INIT };
#endif

GI_HD static inline uint32_t gi_crc32_step(uint32_t c, uint8_t b)
{
#if GI_GPU_CODE
	return gi_crc32_table_dev[(c ^ b) & 0xffu] ^ (c >> 8);
#else
	return gi_crc32_table[(c ^ b) & 0xffu] ^ (c >> 8);
#endif
}

/*
 * Slice-by-8: t8[k][i] is the CRC register after byte i and k zero bytes,
 * t8[0] the plain table.  Worker w of nw fills rows 1..7 from row 0, one row
 * after the other (the caller puts a barrier between rows: row k reads row
 * k - 1 whole).  Call with row = 1..7 in order.
 */
GI_HD static inline void gi_crc32_t8_row(uint32_t *t8, uint32_t row, uint32_t w, uint32_t nw)
{
	for (uint32_t i = w; i < 256; i += nw) {
		uint32_t c = t8[(row - 1) * 256 + i];
		t8[row * 256 + i] = (c >> 8) ^ t8[c & 0xffu];
	}
}

/* Continue a CRC over n contiguous bytes at p, eight at a time. */
GI_HD static inline uint32_t gi_crc32_run8(uint32_t c, const uint32_t *t8, const uint8_t *p, uint32_t n)
{
	for (; n >= 8; n -= 8, p += 8) {
		/* byte loads: a payload starts at any alignment, and a GPU faults on unaligned words */
		c ^= (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
		c = t8[7 * 256 + (c & 0xffu)] ^ t8[6 * 256 + ((c >> 8) & 0xffu)] ^ t8[5 * 256 + ((c >> 16) & 0xffu)] ^
		    t8[4 * 256 + (c >> 24)] ^ t8[3 * 256 + p[4]] ^ t8[2 * 256 + p[5]] ^ t8[256 + p[6]] ^ t8[p[7]];
	}
	for (; n; n--, p++)
		c = t8[(c ^ *p) & 0xffu] ^ (c >> 8);
	return c;
}

/*
 * CRC-32 arithmetic in GF(2) for pieces computed apart (a frame's CRC
 * summed over workers): the register is a polynomial over GF(2) in the
 * reflected bit order, bit 31 the x^0 term.  gi_crc32_mulmod() multiplies
 * two of them modulo the CRC polynomial; gi_crc32_shift(c, n) is what the
 * register c becomes after n zero bytes, c * x^(8n) mod P.  Since the CRC
 * is linear, the register over A || B from r is
 *     shift(reg(r, A), |B|) ^ reg(0, B)
 * so slices computed from 0 and shifted by the bytes after them XOR into
 * the whole (gi_frame_verify_part).
 */
#define GI_CRC32_POLY_REFLECTED 0xedb88320u

GI_HD static inline uint32_t gi_crc32_mulmod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;
	for (uint32_t bit = 0x80000000u; bit; bit >>= 1) { /* a's terms x^0, x^1, ... */
		if (a & bit)
			prod ^= b;
		b = b & 1u ? (b >> 1) ^ GI_CRC32_POLY_REFLECTED : b >> 1; /* b * x */
	}
	return prod;
}

GI_HD static inline uint32_t gi_crc32_shift(uint32_t c, uint64_t nbytes)
{
	uint32_t sq = 0x00800000u; /* x^8: one zero byte */
	for (; nbytes; nbytes >>= 1) {
		if (nbytes & 1u)
			c = gi_crc32_mulmod(c, sq);
		sq = gi_crc32_mulmod(sq, sq); /* x^(8 * 2^k) */
	}
	return c;
}

#if !GI_GPU_CODE
/* The register `reg` continued over n bytes, as fast as the host can (kernels/crc_host.c: ISA-L or zlib). */
uint32_t gi_crc32_host(uint32_t reg, const uint8_t *p, uint64_t n);
const char *gi_crc32_host_impl(void); /* "isa-l" or "zlib" */
#endif

/* The register `reg` continued over n contiguous bytes: t8 (slice-by-8 tables) on the GPU when given. */
GI_HD static inline uint32_t gi_crc32_bytes(uint32_t reg, const uint8_t *p, uint64_t n, const uint32_t *t8)
{
#if GI_GPU_CODE
	if (t8)
		return gi_crc32_run8(reg, t8, p, (uint32_t)n);
	for (uint64_t i = 0; i < n; i++)
		reg = gi_crc32_step(reg, p[i]);
	return reg;
#else
	(void)t8;
	return gi_crc32_host(reg, p, n);
#endif
}

/*
 * Continue a CRC (pre-inverted state) over bytes [off, off + n) of a packet
 * whose first hdr_len bytes are at `pkt` and the rest at `seg1`: each
 * segment's part in one gi_crc32_bytes (on the host one call of ISA-L or
 * zlib, where a rocev2 ICRC of 1 KiB byte by byte was 12 000 instructions a
 * packet: bench/instr.sh).
 */
GI_HD static inline uint32_t gi_crc32_span(uint32_t c, const uint8_t *pkt, uint32_t hdr_len, const uint8_t *seg1,
					   uint32_t off, uint32_t n)
{
	const uint32_t k = off < hdr_len ? GI_MIN(n, hdr_len - off) : 0; /* in the header segment */
	if (k)
		c = gi_crc32_bytes(c, pkt + off, k, NULL);
	return n > k ? gi_crc32_bytes(c, seg1 + (off + k - hdr_len), n - k, NULL) : c;
}

/*
 * The ICRC the packet should carry.  `l3_off`: IPv4 header offset; the IPv4,
 * UDP headers and the BTH must lie in the first hdr_len bytes; `udp_len` is
 * the UDP length (header + payload + ICRC).
 */
GI_HD static inline uint32_t gi_rocev2_icrc(const uint8_t *pkt, uint32_t hdr_len, const uint8_t *seg1,
					    uint32_t l3_off, uint32_t udp_len)
{
	const uint8_t *ip = pkt + l3_off;
	uint32_t ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	uint32_t masked = ihl + 8 + GI_ROCEV2_BTH_LEN; /* IPv4 + UDP + BTH, read from the header segment */
	uint32_t c = 0xffffffffu;

#if GI_GPU_CODE
	for (int i = 0; i < 8; i++)
		c = gi_crc32_step(c, 0xff);
	for (uint32_t i = 0; i < masked; i++) {
		uint8_t b = ip[i];
		if (i == 1 || i == 8 || i == 10 || i == 11 || i == ihl + 6 || i == ihl + 7 || i == ihl + 8 + 4)
			b = 0xff; /* TOS, TTL, IPv4 checksum, UDP checksum, BTH resv8 (FECN/BECN) */
		c = gi_crc32_step(c, b);
	}
#else
	/* the same bytes, masked in a copy, in one call */
	uint8_t b[8 + 60 + 8 + GI_ROCEV2_BTH_LEN];
	__builtin_memset(b, 0xff, 8);
	__builtin_memcpy(b + 8, ip, masked);
	b[8 + 1] = b[8 + 8] = b[8 + 10] = b[8 + 11] = 0xff;
	b[8 + ihl + 6] = b[8 + ihl + 7] = b[8 + ihl + 8 + 4] = 0xff;
	c = gi_crc32_bytes(c, b, 8 + masked, NULL);
#endif
	c = gi_crc32_span(c, pkt, hdr_len, seg1, l3_off + masked, udp_len - 8 - GI_ROCEV2_BTH_LEN - GI_ROCEV2_ICRC_LEN);
	return ~c;
}

/*
 * gi_rocev2_icrc() with slice-by-8 tables `t8` (gi_crc32_t8_row): the
 * masked headers byte by byte, the payload eight bytes at a time, across
 * the two segments of a split packet.
 */
GI_HD static inline uint32_t gi_rocev2_icrc_t8(const uint8_t *pkt, uint32_t hdr_len, const uint8_t *seg1,
					       uint32_t l3_off, uint32_t udp_len, const uint32_t *t8)
{
	const uint8_t *ip = pkt + l3_off;
	uint32_t ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	uint32_t masked = ihl + 8 + GI_ROCEV2_BTH_LEN;
	uint32_t off = l3_off + masked, n = udp_len - 8 - GI_ROCEV2_BTH_LEN - GI_ROCEV2_ICRC_LEN;
	uint32_t c = 0xffffffffu;

	for (int i = 0; i < 8; i++)
		c = t8[(c ^ 0xffu) & 0xffu] ^ (c >> 8);
	for (uint32_t i = 0; i < masked; i++) {
		uint8_t b = ip[i];
		if (i == 1 || i == 8 || i == 10 || i == 11 || i == ihl + 6 || i == ihl + 7 || i == ihl + 8 + 4)
			b = 0xff; /* TOS, TTL, IPv4 checksum, UDP checksum, BTH resv8 (FECN/BECN) */
		c = t8[(c ^ b) & 0xffu] ^ (c >> 8);
	}
	if (off < hdr_len) {
		uint32_t k = GI_MIN(n, hdr_len - off);
		c = gi_crc32_run8(c, t8, pkt + off, k);
		off += k;
		n -= k;
	}
	if (n)
		c = gi_crc32_run8(c, t8, seg1 + (off - hdr_len), n);
	return ~c;
}

/* The ICRC the packet carries: its last 4 bytes, least-significant first. */
GI_HD static inline uint32_t gi_rocev2_icrc_carried(const uint8_t *pkt, uint32_t hdr_len, const uint8_t *seg1,
						    const struct gi_l4 *l4)
{
	uint32_t end = l4->payload_off + l4->payload_len; /* the ICRC's 4 bytes end here */
	uint8_t w[4];
	for (uint32_t i = 0; i < 4; i++) {
		uint32_t o = end - 4 + i;
		w[i] = o < hdr_len ? pkt[o] : seg1[o - hdr_len];
	}
	return (uint32_t)w[0] | ((uint32_t)w[1] << 8) | ((uint32_t)w[2] << 16) | ((uint32_t)w[3] << 24);
}

/* ---- the parser -------------------------------------------------------------- */

/*
 * One packet of a rocev2 stream: 0 and `pi` filled, or a gi_drop_reason.
 * `pkt` holds the packet's first hdr_len bytes, the rest is at seg1 (buffer
 * split) — the ICRC covers the payload, so verify reads both segments.
 * Order: length → ICRC → opcode → header consistency, so a corrupted packet
 * is counted as rocev2_icrc whatever its corruption looks like.  With
 * icrc_now 0 the ICRC is left to the caller (pi->icrc_pending, also on a
 * later drop reason): a bad ICRC must then override what this returns.
 * `packets`: the frame slot's packets as configured (a record of its own
 * takes the last), never what an epoch has learned (gi_stream_parse_ex),
 * so that a packet parses the same whenever it is parsed.
 */
GI_HD static inline int gi_fmt_rocev2_parse(const struct gi_format_params *fp, const uint8_t *pkt, uint32_t hdr_len,
					    const uint8_t *seg1, const struct gi_l4 *l4, uint32_t packets,
					    uint32_t payload_bytes, int icrc_now, struct gi_pkt_info *pi)
{
	const struct gi_fmt_rocev2_params r = gi_fmt_rocev2(fp), *rp = &r;
	gi_pkt_info_clear(pi);
	const uint8_t *u = pkt + l4->payload_off;
	uint32_t ulen = l4->payload_len;
	uint32_t avail = hdr_len > l4->payload_off ? hdr_len - l4->payload_off : 0;

	if (ulen < GI_ROCEV2_BTH_LEN + GI_ROCEV2_ICRC_LEN || avail < GI_ROCEV2_BTH_LEN)
		return GI_DROP_MALFORMED_TRUNCATED;
	if (rp->icrc == GI_ROCEV2_ICRC_VERIFY) {
		if (!icrc_now)
			pi->icrc_pending = 1;
		else if (gi_rocev2_icrc_carried(pkt, hdr_len, seg1, l4) !=
			 gi_rocev2_icrc(pkt, hdr_len, seg1, l4->l3_off, ulen + 8))
			return GI_DROP_ROCEV2_ICRC;
	}

	uint32_t fl = gi_rocev2_opcode_flags(u[0]);
	if (!fl)
		return GI_DROP_ROCEV2_OPCODE;
	if ((u[1] & 0x0f) != 0)
		return GI_DROP_MALFORMED_VERSION; /* TVer */
	uint32_t hlen = GI_ROCEV2_BTH_LEN + gi_rocev2_ext_len(fl);
	if (ulen < hlen + GI_ROCEV2_ICRC_LEN || avail < hlen)
		return GI_DROP_MALFORMED_TRUNCATED;
	uint32_t padded = ulen - hlen - GI_ROCEV2_ICRC_LEN;
	uint32_t pad = (u[1] >> 4) & 3u;
	if ((padded & 3u) != 0 || pad > padded)
		return GI_DROP_MALFORMED_LENGTH; /* payload + pad is a whole number of 4-byte words */
	uint32_t plen = padded - pad;

	const uint8_t *ext = u + GI_ROCEV2_BTH_LEN + (fl & GI_ROCEV2_F_DETH ? GI_ROCEV2_DETH_LEN : 0u);
	uint32_t place_len = plen;
	pi->has_offset = 0;
	pi->byte_off = 0;
	if (fl & GI_ROCEV2_F_RETH) {
		uint64_t va = gi_be64(ext);
		uint32_t dma_len = gi_be32(ext + 12);
		uint64_t frame_bytes = rp->frame_bytes ? rp->frame_bytes : (uint64_t)packets * payload_bytes;
		/* ONLY: the message is this packet; FIRST: more follows */
		if ((fl & GI_ROCEV2_F_LAST) ? dma_len != plen : dma_len <= plen)
			return GI_DROP_MALFORMED_LENGTH;
		if (rp->has_rkey && gi_be32(ext + 8) != rp->rkey)
			return GI_DROP_ROCEV2_RKEY;
		if (rp->placement == GI_ROCEV2_PLACE_VA) {
			/* the page and the offset in it: bounds here, the offset against the PSN in check_va */
			if (va < rp->base_va || rp->page_bytes == 0)
				return GI_DROP_ROCEV2_BOUNDS;
			uint64_t page = (va - rp->base_va) / rp->page_bytes;
			uint64_t in = va - rp->base_va - page * rp->page_bytes;
			if (rp->pages && page >= rp->pages)
				return GI_DROP_ROCEV2_BOUNDS;
			pi->byte_off = in;
			if (rp->profile == GI_ROCEV2_PROFILE_HSB && (fl & GI_ROCEV2_F_IMM)) {
				/* a frame-end record: the payload's last 128 bytes, data (if any) before them */
				uint32_t imm = gi_be32(ext + GI_ROCEV2_RETH_LEN);
				if (plen < GI_HSB_META_BYTES)
					return GI_DROP_MALFORMED_LENGTH;
				uint32_t data = plen - GI_HSB_META_BYTES;
				uint32_t m = l4->payload_off + hlen + data; /* the record, from the packet's start */
				if ((imm & 0xfffu) != (uint32_t)(page & 0xfffu))
					return GI_DROP_ROCEV2_VA; /* the immediate names another page */
				/* each form where the stream takes it: strict packet or embedded, either with auto */
				if (data == 0) { /* a packet of its own, at roundup(frame bytes, 128): the frame's last index */
					if (rp->frame_end == GI_ROCEV2_END_EMBEDDED || in != gi_hsb_align(frame_bytes))
						return GI_DROP_ROCEV2_BOUNDS;
					pi->byte_off = (uint64_t)(packets - 1) * payload_bytes;
					place_len = 0;
				} else { /* the last data, zero-padded to 128 bytes, then the record */
					if (rp->frame_end == GI_ROCEV2_END_PACKET || in >= frame_bytes ||
					    in + data > gi_hsb_align(frame_bytes))
						return GI_DROP_ROCEV2_BOUNDS;
					place_len = (uint32_t)GI_MIN((uint64_t)data, frame_bytes - in); /* not the pad */
				}
				pi->meta = 1;
				pi->meta_rel = (uint16_t)data;
				pi->frame = gi_seg_be32(pkt, hdr_len, seg1, m + GI_HSB_META_FRAME) & 0xffffu;
				pi->timestamp = gi_seg_be64(pkt, hdr_len, seg1, m + GI_HSB_META_SOF_S) * 1000000000ull +
						gi_seg_be32(pkt, hdr_len, seg1, m + GI_HSB_META_SOF_NS);
			} else if (in >= frame_bytes || in + plen > frame_bytes) {
				return GI_DROP_ROCEV2_BOUNDS; /* past the frame (an empty WRITE too), or into the next page */
			}
		} else {
			if (va < rp->base_va || frame_bytes == 0)
				return GI_DROP_ROCEV2_VA;
			pi->byte_off = (va - rp->base_va) % frame_bytes;
		}
		pi->has_offset = 1; /* checked against the PSN's place by gi_fmt_rocev2_check_va() */
	}

	pi->seq = gi_be24(u + 9);
	pi->pkt_index = 0;
	pi->payload_off = hlen;
	pi->payload_len = place_len;
	pi->sensor_id = gi_be24(u + 5); /* the destination QP */
	pi->has_frame = 0;
	pi->closes_frame = (uint8_t)((rp->close_on == GI_ROCEV2_CLOSE_LAST && (fl & GI_ROCEV2_F_LAST)) ||
				     (rp->close_on == GI_ROCEV2_CLOSE_IMM && (fl & GI_ROCEV2_F_IMM)));
	return 0;
}

/*
 * A RETH's placement against the PSN's: the offset gi_stream_locate() will
 * give this packet, computed read-only from the stream's sequencing state
 * (`started`, `seq_max`, `seq_origin`), before anything is counted — so a
 * bad VA is one drop reason, never also a late or lost packet.  A packet
 * that starts an epoch (first packet, or a jump that resynchronises)
 * anchors it: its RETH offset is its index, so a stream the daemon joins
 * in the middle of a frame is placed from its first packet on.
 */
GI_HD static inline int gi_fmt_rocev2_check_va(const struct gi_format_params *fp, const struct gi_pkt_info *pi,
					       uint32_t started, uint64_t seq_max, uint64_t seq_origin, uint32_t packets,
					       uint32_t payload_bytes)
{
	if (!pi->has_offset)
		return 0;
	if (started) {
		int64_t sd = gi_extend_delta(seq_max, pi->seq, fp->seq_bits);
		uint64_t limit = fp->resync_frames * packets;
		if (!limit || (uint64_t)(sd < 0 ? -sd : sd) <= limit) {
			int64_t n = (int64_t)(seq_max + (uint64_t)sd - seq_origin);
			int64_t r = n % (int64_t)packets;
			uint64_t index = (uint64_t)(r < 0 ? r + (int64_t)packets : r);
			return pi->byte_off == index * payload_bytes ? 0 : GI_DROP_ROCEV2_VA;
		}
	}
	/* it starts an epoch, which it anchors: its offset is its place (gi_stream_locate) */
	return pi->byte_off % payload_bytes == 0 && pi->byte_off / payload_bytes < packets ? 0 : GI_DROP_ROCEV2_VA;
}

/* Does a packet whose UDP payload starts at `u` (`avail` bytes readable) go to QP dst_qp? */
GI_HD static inline int gi_fmt_rocev2_match(const struct gi_format_params *fp, const uint8_t *u, uint32_t avail)
{
	return avail >= GI_ROCEV2_BTH_LEN && gi_be24(u + 5) == (uint32_t)fp->fmt[1]; /* dst_qp */
}

GI_EXTERN_C_END

#endif /* GI_FMT_ROCEV2_H */
