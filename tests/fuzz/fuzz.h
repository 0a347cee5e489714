/*
 * fuzz.h — what the fuzz targets share: a reader that takes parameters off
 * the front of a fuzz input, packet segments allocated to their exact size
 * (so ASan sees a read one byte past a segment), and the coercions that
 * turn arbitrary bytes into stream parameters the config loader would
 * accept (targets fuzz the packets, not configurations daemon/config.c
 * refuses).  Test-only; each target is single-threaded unless it says so.
 *
 * Every target is built twice by tests/fuzz/meson.build: with libFuzzer
 * (-Dfuzz=enabled) and as a replay program (replay.c) that the normal test
 * suite runs over the checked-in corpus and every crash ever found.
 */
#ifndef GI_FUZZ_H
#define GI_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fmt_custom.h"
#include "kernels/fmt_rocev2.h"
#include "kernels/fmt_vita49.h"
#include "kernels/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant a target checks: abort so libFuzzer and the replay report it. */
#define FZ_CHECK(cond)                                                                               \
	do {                                                                                         \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                     \
		}                                                                                    \
	} while (0)

/* Bytes taken off the front of the input; reads past the end give zeros. */
struct fz {
	const uint8_t *p;
	size_t n;
};

static inline uint64_t fz_take(struct fz *z, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++) {
		v = v << 8 | (z->n ? *z->p : 0);
		if (z->n) {
			z->p++;
			z->n--;
		}
	}
	return v;
}

#define fz_u8(z) ((uint8_t)fz_take((z), 1))
#define fz_u16(z) ((uint16_t)fz_take((z), 2))
#define fz_u32(z) ((uint32_t)fz_take((z), 4))
#define fz_u64(z) (fz_take((z), 8))

/*
 * A packet of `len` bytes as the rx path hands it over: without split
 * (cut >= len) one buffer of exactly len bytes; with split the first `cut`
 * bytes in one buffer and the rest in another, both exact.  Free with
 * fz_pkt_free().
 */
struct fz_pkt {
	uint8_t *seg0;
	uint8_t *seg1; /* NULL without split */
	uint32_t len;
	uint32_t hdr_len;
};

static inline void fz_pkt_make(struct fz_pkt *k, const uint8_t *p, uint32_t len, uint32_t cut)
{
	k->len = len;
	k->hdr_len = cut < len ? cut : len;
	k->seg0 = malloc(k->hdr_len ? k->hdr_len : 1);
	memcpy(k->seg0, p, k->hdr_len);
	k->seg1 = NULL;
	if (k->hdr_len < len) {
		k->seg1 = malloc(len - k->hdr_len);
		memcpy(k->seg1, p + k->hdr_len, len - k->hdr_len);
	}
}

static inline void fz_pkt_free(struct fz_pkt *k)
{
	free(k->seg0);
	free(k->seg1);
}

/* Frame geometry within the config's bounds (packets 1..65535, payload 1..9000), kept small. */
static inline uint32_t fz_packets(struct fz *z, uint32_t max)
{
	return 1u + fz_u16(z) % max;
}

static inline uint32_t fz_payload(struct fz *z, uint32_t max)
{
	return 1u + fz_u16(z) % max;
}

/* vita49: ts_step_ps 0..1e12 (config range), stream id match optional. */
static inline void fz_vita49_params(struct fz *z, struct gi_format_params *fp)
{
	struct gi_fmt_vita49_params vp;
	vp.ts_step_ps = fz_u64(z) % (GI_VITA49_PS_PER_S + 1);
	vp.stream_id = fz_u32(z);
	vp.has_stream_id = fz_u8(z) & 1;
	gi_vita49_params_store(fp, &vp);
	if (vp.ts_step_ps)
		fp->seq_bits = 64; /* as gi_stream_rt_configure() does: the sequence comes from the timestamp */
}

static inline void fz_rocev2_params(struct fz *z, struct gi_format_params *fp)
{
	struct gi_fmt_rocev2_params rp = { 0 };
	rp.base_va = fz_u64(z);
	rp.dst_qp = fz_u32(z) & GI_ROCEV2_QP_MASK;
	rp.icrc = fz_u8(z) & 1;
	rp.close_on = fz_u8(z) % 3;
	rp.frame_bytes = 0; /* whole packets: the stream's geometry is fuzzed apart */
	rp.placement = fz_u8(z) & 1;
	rp.page_bytes = 1 + fz_u32(z) % 65536;
	rp.pages = fz_u8(z) % 5;
	rp.has_rkey = fz_u8(z) & 1;
	rp.rkey = fz_u32(z) % 4;
	const uint8_t prof = fz_u8(z);
	rp.profile = rp.placement ? prof & 1 : 0;
	rp.frame_crc = rp.profile && (prof & 2); /* rocev2.frame_crc: verify, HSB's only */
	rp.frame_end = fz_u8(z) % 3; /* packet, embedded, auto */
	gi_fmt_rocev2_set(fp, &rp);
}

/*
 * custom: a header map the config loader would pass (check_custom_field():
 * widths 1/2/4/8, fields inside header_bytes, a contiguous mask inside the
 * field, a shift that keeps at least one bit — four for seq and frame —
 * and index only with frame) built from any bytes.
 */
static inline void fz_custom_params(struct fz *z, struct gi_format_params *fp)
{
	static const uint8_t widths[4] = { 1, 2, 4, 8 };
	struct gi_fmt_custom_params m;

	memset(&m, 0, sizeof(m));
	m.header_bytes = 1u + fz_u8(z) % 64u;
	for (uint32_t k = 0; k < GI_CUSTOM__FIELDS; k++) {
		struct gi_custom_field *f = &m.f[k];
		uint8_t sel = fz_u8(z);
		uint32_t off = fz_u8(z);
		uint64_t mask = fz_u64(z);
		uint32_t shift = fz_u8(z);
		uint32_t min_bits = k == GI_CUSTOM_SEQ || k == GI_CUSTOM_FRAME ? 4u : 1u;
		if (k != GI_CUSTOM_SEQ && !(sel & 0x80))
			continue; /* absent */
		f->width = widths[sel & 3];
		while (f->width > m.header_bytes)
			f->width /= 2;
		f->offset = off % (m.header_bytes - f->width + 1u);
		f->endian = (sel >> 2) & 1;
		mask &= gi_custom_full_mask(f->width);
		uint64_t run = mask & ~(mask + (mask & -mask)); /* the lowest run of ones */
		if (sel & 0x40 || run == 0 || (uint32_t)__builtin_popcountll(run) < min_bits)
			run = 0; /* the whole field */
		uint64_t whole = run ? run : gi_custom_full_mask(f->width);
		uint32_t lo = (uint32_t)__builtin_ctzll(whole), bits = (uint32_t)__builtin_popcountll(whole);
		f->mask = run;
		f->shift = (uint8_t)(lo + shift % (bits - min_bits + 1u));
	}
	if (m.f[GI_CUSTOM_INDEX].width && !m.f[GI_CUSTOM_FRAME].width)
		m.f[GI_CUSTOM_INDEX].width = 0; /* index needs frame */
	m.payload_offset = fz_u8(z) % (m.header_bytes + 1u);
	m.trailer_bytes = fz_u8(z) % 8u;
	gi_fmt_custom_setup(fp, &m);
}

/* A stream's format parameters for `format` as gi_stream_rt_configure() (daemon/reload.c)
 * sets them; resync_frames 0..1e9 (config range, 0: never resynchronise). */
static inline void fz_format_params(struct fz *z, struct gi_format_params *fp, uint32_t format)
{
	gi_format_params_init(fp, (enum gi_format)format);
	fp->resync_frames = fz_u32(z) % 1000000001u;
	switch (format) {
	case GI_FORMAT_VITA49:
		fz_vita49_params(z, fp);
		break;
	case GI_FORMAT_ROCEV2:
		fz_rocev2_params(z, fp);
		break;
	case GI_FORMAT_CUSTOM:
		fz_custom_params(z, fp);
		break;
	default:
		break;
	}
}

#endif /* GI_FUZZ_H */
