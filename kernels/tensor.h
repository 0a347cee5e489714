/*
 * tensor.h — a frame as a typed tensor (a stream's `tensor:` block).
 *
 * A sensor's frame is samples: big-endian IQ pairs, a camera's packed
 * RAW10, float32 returns.  With `tensor:` the executor writes, once a
 * frame is final and before it is published, the frame's samples
 * converted to the consumer's type into the slot's tensor area (frame.h:
 * after the payload, in the same memory): out = in * scale + offset,
 * rounded to nearest even, and the samples of lost packets zero, NaN, or
 * left as converted from whatever bytes the slot held (`missing`).
 *
 * The frame's bytes are `groups` groups of `in_bytes` bytes, each holding
 * `per_group` values (a complex sample: I then Q; RAW10: four pixels in
 * five bytes; RAW12: two in three); the tensor is the same values in the
 * same order, `out_bytes` each.  A group is lost when any of its bytes is
 * in a packet that did not arrive.
 *
 * The conversion is one GI_HD body, worker w of nw taking groups w, w +
 * nw, ... (adjacent threads, adjacent groups on the GPU); the host runs it
 * as one worker.  Every arithmetic step is explicit (GI_FMUL_RN,
 * GI_FADD_RN: no fused multiply-add) and the float-to-half roundings are
 * done on the bits, so the host, the GPU and NumPy agree bit for bit
 * (NaN payloads of arithmetic aside: a GPU makes its own canonical NaN).
 *
 * Plain C11 under gi_hd.h: nvcc, the host, the tools include it.
 */
#ifndef GI_TENSOR_H
#define GI_TENSOR_H

#include "gi_hd.h"

GI_EXTERN_C_BEGIN

/* What the frame's bytes hold (tensor.sample). */
enum gi_tensor_sample {
	GI_TS_NONE = 0,
	GI_TS_U8,
	GI_TS_U16,
	GI_TS_I16,
	GI_TS_U32,
	GI_TS_I32,
	GI_TS_F32,
	GI_TS_CI8,   /* complex: I then Q, int8 each */
	GI_TS_CI16,  /* complex: I then Q, int16 each */
	GI_TS_RAW10, /* MIPI CSI-2: 4 pixels in 5 bytes (8 high bits each, then the 2-bit rests, P0 lowest) */
	GI_TS_RAW12, /* MIPI CSI-2: 2 pixels in 3 bytes (8 high bits each, then P0's 4 bits low, P1's high) */
	GI_TS__COUNT
};
/* their names in the configuration (tensor.sample), by number */
#define GI_TS_NAMES { "?", "u8", "u16", "i16", "u32", "i32", "f32", "ci8", "ci16", "raw10", "raw12" }

/*
 * The tensor's element type (the ring header's and the consumer API's:
 * gpuingest/consumer.h mirrors these numbers).  A complex integer sample
 * typed `to: same` is its component type with a trailing dimension of 2.
 */
enum gi_tensor_dtype {
	GI_DT_NONE = 0, /* the ring has no tensor */
	GI_DT_U8 = 1,
	GI_DT_I8 = 2,
	GI_DT_U16 = 3,
	GI_DT_I16 = 4,
	GI_DT_U32 = 5,
	GI_DT_I32 = 6,
	GI_DT_F16 = 7,
	GI_DT_BF16 = 8,
	GI_DT_F32 = 9,
	GI_DT_CF16 = 10, /* complex: two float16 */
	GI_DT_CF32 = 11, /* complex: two float32 (complex64) */
	GI_DT__COUNT
};
/* their names (tensor.to, the consumers' dtype), by number */
#define GI_DT_NAMES { "same", "u8", "i8", "u16", "i16", "u32", "i32", "f16", "bf16", "f32", "cf16", "cf32" }

enum gi_tensor_missing {
	GI_TM_ZERO = 0, /* a lost packet's samples are 0 */
	GI_TM_NAN = 1,  /* ... NaN (float types only) */
	GI_TM_KEEP = 2, /* ... converted from whatever the slot held (no presence check at all) */
};

/* The stream's conversion, fixed while it exists (gi_tensor_setup). */
struct gi_tensor_rt {
	uint32_t sample;     /* enum gi_tensor_sample; GI_TS_NONE: the stream has no tensor */
	uint32_t dtype;      /* enum gi_tensor_dtype */
	uint32_t big;        /* multi-byte samples are big-endian */
	uint32_t missing;    /* enum gi_tensor_missing */
	uint32_t affine;     /* scale != 1 or offset != 0 */
	uint32_t in_bytes;   /* bytes per group */
	uint32_t per_group;  /* values per group */
	uint32_t out_bytes;  /* bytes per value in the tensor */
	float scale, offset;
	uint64_t groups;     /* per frame */
	uint64_t off;        /* the tensor's offset in a slot (frame.h, gi_frame_tensor_off) */
	uint64_t bytes;      /* its length: groups * per_group * out_bytes */
};

GI_HD static inline uint32_t gi_tensor_sample_bytes(uint32_t sample)
{
	switch (sample) {
	case GI_TS_U8: return 1;
	case GI_TS_U16: case GI_TS_I16: case GI_TS_CI8: return 2;
	case GI_TS_U32: case GI_TS_I32: case GI_TS_F32: case GI_TS_CI16: return 4;
	case GI_TS_RAW10: return 5;
	case GI_TS_RAW12: return 3;
	}
	return 0;
}

/* Values in one group of bytes (tensor elements, complex ones counting two). */
GI_HD static inline uint32_t gi_tensor_sample_values(uint32_t sample)
{
	switch (sample) {
	case GI_TS_CI8: case GI_TS_CI16: case GI_TS_RAW12: return 2;
	case GI_TS_RAW10: return 4;
	}
	return 1;
}

/* Shape elements per group (a complex sample is one element of the shape). */
GI_HD static inline uint32_t gi_tensor_sample_elems(uint32_t sample)
{
	return sample == GI_TS_CI8 || sample == GI_TS_CI16 ? 1 : gi_tensor_sample_values(sample);
}

GI_HD static inline int gi_tensor_sample_complex(uint32_t sample)
{
	return sample == GI_TS_CI8 || sample == GI_TS_CI16;
}

/* Bytes of one value (a complex type's component) of dtype. */
GI_HD static inline uint32_t gi_tensor_value_bytes(uint32_t dtype)
{
	switch (dtype) {
	case GI_DT_U8: case GI_DT_I8: return 1;
	case GI_DT_U16: case GI_DT_I16: case GI_DT_F16: case GI_DT_BF16: case GI_DT_CF16: return 2;
	case GI_DT_U32: case GI_DT_I32: case GI_DT_F32: case GI_DT_CF32: return 4;
	}
	return 0;
}

GI_HD static inline int gi_tensor_dtype_float(uint32_t dtype)
{
	return dtype == GI_DT_F16 || dtype == GI_DT_BF16 || dtype == GI_DT_F32 || dtype == GI_DT_CF16 ||
	       dtype == GI_DT_CF32;
}

GI_HD static inline int gi_tensor_dtype_complex(uint32_t dtype)
{
	return dtype == GI_DT_CF16 || dtype == GI_DT_CF32;
}

/* `to: same`: the sample's own type (complex integers: their component type), GI_DT_NONE if none. */
GI_HD static inline uint32_t gi_tensor_same_dtype(uint32_t sample)
{
	switch (sample) {
	case GI_TS_U8: return GI_DT_U8;
	case GI_TS_U16: return GI_DT_U16;
	case GI_TS_I16: return GI_DT_I16;
	case GI_TS_U32: return GI_DT_U32;
	case GI_TS_I32: return GI_DT_I32;
	case GI_TS_F32: return GI_DT_F32;
	case GI_TS_CI8: return GI_DT_I8;
	case GI_TS_CI16: return GI_DT_I16;
	}
	return GI_DT_NONE;
}

/*
 * Fill in the derived fields of t (sample, dtype, big, missing, scale and
 * offset set) for frames of frame_bytes bytes whose tensor lies at `off`
 * in the slot.  The configuration check has refused what cannot be done.
 */
GI_HD static inline void gi_tensor_setup(struct gi_tensor_rt *t, uint64_t frame_bytes, uint64_t off)
{
	t->in_bytes = gi_tensor_sample_bytes(t->sample);
	t->per_group = gi_tensor_sample_values(t->sample);
	t->out_bytes = gi_tensor_value_bytes(t->dtype);
	t->affine = t->scale != 1.0f || t->offset != 0.0f;
	t->groups = t->in_bytes ? frame_bytes / t->in_bytes : 0;
	t->off = off;
	t->bytes = t->groups * t->per_group * t->out_bytes;
}

/* The tensor's bytes for frames of frame_bytes bytes (their whole groups), 0 if not one group fits. */
GI_HD static inline uint64_t gi_tensor_bytes(uint32_t sample, uint32_t dtype, uint64_t frame_bytes)
{
	struct gi_tensor_rt t = { .sample = sample, .dtype = dtype };
	gi_tensor_setup(&t, frame_bytes, 0);
	return t.bytes;
}

/* Its elements (a complex sample one), the 1-D shape of a whole frame. */
GI_HD static inline uint64_t gi_tensor_elems(uint32_t sample, uint64_t frame_bytes)
{
	const uint32_t ib = gi_tensor_sample_bytes(sample);
	return ib ? frame_bytes / ib * gi_tensor_sample_elems(sample) : 0;
}

/* ---- the roundings, on the bits ---------------------------------------------- */

GI_HD static GI_INLINE uint32_t gi_f32_bits(float f)
{
	union { float f; uint32_t u; } v;
	v.f = f;
	return v.u;
}

GI_HD static GI_INLINE float gi_bits_f32(uint32_t u)
{
	union { float f; uint32_t u; } v;
	v.u = u;
	return v.f;
}

/*
 * float32 to float16, round to nearest even (IEEE 754; NumPy's astype and
 * PyTorch's .half() agree): overflow to infinity, gradual underflow; a NaN
 * keeps its sign and top 10 payload bits (at least one set), as NumPy's.
 */
GI_HD static GI_INLINE uint16_t gi_f32_to_f16(float f)
{
	const uint32_t x = gi_f32_bits(f);
	const uint32_t sign = (x >> 16) & 0x8000u;
	const uint32_t ax = x & 0x7fffffffu;

	if (ax >= 0x7f800000u) { /* infinity, NaN */
		uint32_t m = (ax & 0x7fffffu) >> 13;
		if (ax > 0x7f800000u && m == 0)
			m = 1;
		return (uint16_t)(sign | 0x7c00u | m);
	}
	if (ax >= 0x47800000u) /* 2^16 and above: beyond the largest half even after rounding */
		return (uint16_t)(sign | 0x7c00u);
	if (ax >= 0x38800000u) { /* a normal half: 2^-14 .. */
		const uint32_t h = ((ax >> 23) - 112u) << 10 | (ax & 0x7fffffu) >> 13;
		const uint32_t rem = ax & 0x1fffu;
		/* up on more than half, or half and odd: no branch, the bits are data (a carry into the
		 * exponent is right, up to infinity) */
		return (uint16_t)(sign | (h + ((rem > 0x1000u) | ((rem == 0x1000u) & h))));
	}
	const uint32_t e = ax >> 23;
	if (e < 102u) /* below 2^-25: zero */
		return (uint16_t)sign;
	/* a subnormal half: the value in units of 2^-24 */
	const uint32_t mant = (ax & 0x7fffffu) | 0x800000u, s = 126u - e; /* 14 .. 24 */
	const uint32_t h = mant >> s;
	const uint32_t rem = mant & ((1u << s) - 1u), half = 1u << (s - 1u);
	return (uint16_t)(sign | (h + ((rem > half) | ((rem == half) & h))));
}

/* float32 to bfloat16, round to nearest even; a NaN becomes 0x7fc0 (PyTorch's). */
GI_HD static GI_INLINE uint16_t gi_f32_to_bf16(float f)
{
	const uint32_t x = gi_f32_bits(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return 0x7fc0u;
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* A float to uint16: nearest, ties to even; NaN and below 0 give 0, above 65535 gives 65535. */
GI_HD static GI_INLINE uint16_t gi_f32_to_u16_sat(float f)
{
	if (!(f > 0.0f))
		return 0;
	if (f >= 65535.0f)
		return 65535;
	/* adding 2^23 leaves no fraction bits: the FPU rounds to nearest even */
	return (uint16_t)(GI_FADD_RN(GI_FADD_RN(f, 8388608.0f), -8388608.0f));
}

/* ---- one group ------------------------------------------------------------------ */

GI_HD static GI_INLINE uint32_t gi_tensor_ld(const uint8_t *p, uint32_t n, uint32_t big)
{
	uint32_t v = 0;
	for (uint32_t k = 0; k < n; k++)
		v |= (uint32_t)p[big ? n - 1 - k : k] << (8 * k);
	return v;
}

GI_HD static GI_INLINE void gi_tensor_st(uint8_t *p, uint32_t v, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		p[k] = (uint8_t)(v >> (8 * k));
}

/* The group's values: integers in iv (exact), or the float32 sample in fv. */
GI_HD static GI_INLINE void gi_tensor_decode(uint32_t sample, uint32_t big, const uint8_t *p, int64_t iv[4], float *fv)
{
	switch (sample) {
	case GI_TS_U8: iv[0] = p[0]; break;
	case GI_TS_U16: iv[0] = gi_tensor_ld(p, 2, big); break;
	case GI_TS_I16: iv[0] = (int16_t)gi_tensor_ld(p, 2, big); break;
	case GI_TS_U32: iv[0] = gi_tensor_ld(p, 4, big); break;
	case GI_TS_I32: iv[0] = (int32_t)gi_tensor_ld(p, 4, big); break;
	case GI_TS_F32: *fv = gi_bits_f32(gi_tensor_ld(p, 4, big)); break;
	case GI_TS_CI8:
		iv[0] = (int8_t)p[0];
		iv[1] = (int8_t)p[1];
		break;
	case GI_TS_CI16:
		iv[0] = (int16_t)gi_tensor_ld(p, 2, big);
		iv[1] = (int16_t)gi_tensor_ld(p + 2, 2, big);
		break;
	case GI_TS_RAW10:
		for (uint32_t k = 0; k < 4; k++)
			iv[k] = (int64_t)((uint32_t)p[k] << 2 | ((uint32_t)p[4] >> (2 * k) & 3u));
		break;
	case GI_TS_RAW12:
		iv[0] = (int64_t)((uint32_t)p[0] << 4 | (p[2] & 15u));
		iv[1] = (int64_t)((uint32_t)p[1] << 4 | (uint32_t)p[2] >> 4);
		break;
	}
}

/*
 * Value v (integer iv, or the float sample fv) into the tensor at dst.  The
 * stream's fields come as values: a byte store may alias anything, and the
 * compiler would load them again after each.
 */
GI_HD static GI_INLINE void gi_tensor_put(uint32_t affine, float scale, float offset, uint32_t sample, uint32_t dtype,
					  uint8_t *dst, int64_t iv, float fv)
{
	const int is_float = sample == GI_TS_F32;
	const uint32_t ob = gi_tensor_value_bytes(dtype);

	if (!gi_tensor_dtype_float(dtype) && !(dtype == GI_DT_U16 && affine)) {
		/* an integer type: the sample itself (to: same), or an unsigned one widened to u16 */
		gi_tensor_st(dst, is_float ? gi_f32_bits(fv) : (uint32_t)iv, ob);
		return;
	}
	float f = is_float ? fv : (float)iv;
	if (affine)
		f = GI_FADD_RN(GI_FMUL_RN(f, scale), offset);
	switch (dtype) {
	case GI_DT_F32: case GI_DT_CF32: gi_tensor_st(dst, gi_f32_bits(f), 4); break;
	case GI_DT_F16: case GI_DT_CF16: gi_tensor_st(dst, gi_f32_to_f16(f), 2); break;
	case GI_DT_BF16: gi_tensor_st(dst, gi_f32_to_bf16(f), 2); break;
	case GI_DT_U16: gi_tensor_st(dst, gi_f32_to_u16_sat(f), 2); break;
	}
}

/* A lost group's values: zero, or NaN of the tensor's float type. */
GI_HD static inline void gi_tensor_put_missing(const struct gi_tensor_rt *t, uint8_t *dst)
{
	uint32_t v = 0;
	if (t->missing == GI_TM_NAN) {
		switch (t->dtype) {
		case GI_DT_F32: case GI_DT_CF32: v = 0x7fc00000u; break;
		case GI_DT_F16: case GI_DT_CF16: v = 0x7e00u; break;
		case GI_DT_BF16: v = 0x7fc0u; break;
		}
	}
	for (uint32_t k = 0; k < t->per_group; k++)
		gi_tensor_st(dst + k * t->out_bytes, v, t->out_bytes);
}

/*
 * The conversion with sample, dtype and big as arguments: constants where
 * gi_tensor_convert specializes (the host), t's fields where it does not.
 */
GI_HD static GI_INLINE void gi_tensor_run(const struct gi_tensor_rt *t, const uint8_t *in, uint8_t *out,
					  const uint64_t *bitmap, const struct gi_div *div_payload, uint32_t w,
					  uint32_t nw, uint32_t sample, uint32_t dtype, uint32_t big)
{
	const uint32_t ib = gi_tensor_sample_bytes(sample), per = gi_tensor_sample_values(sample);
	const uint64_t step = (uint64_t)per * gi_tensor_value_bytes(dtype), groups = t->groups;
	const uint32_t affine = t->affine;
	const float scale = t->scale, offset = t->offset;

	for (uint64_t g = w; g < groups; g += nw) {
		const uint64_t b0 = g * ib;
		uint8_t *dst = out + g * step;
		if (bitmap) {
			uint64_t i = gi_div_q(div_payload, b0), last = gi_div_q(div_payload, b0 + ib - 1);
			int lost = 0;
			for (; i <= last; i++)
				lost |= !(bitmap[i >> 6] >> (i & 63) & 1);
			if (lost) {
				gi_tensor_put_missing(t, dst);
				continue;
			}
		}
		int64_t iv[4] = { 0, 0, 0, 0 };
		float fv = 0.0f;
		gi_tensor_decode(sample, big, in + b0, iv, &fv);
		for (uint32_t k = 0; k < per; k++)
			gi_tensor_put(affine, scale, offset, sample, dtype, dst + k * gi_tensor_value_bytes(dtype), iv[k], fv);
	}
}

/*
 * Worker w of nw: its groups of the frame whose bytes are at `in`, into
 * the tensor at `out`.  `bitmap` (NULL: every packet arrived, or missing
 * keep) says which packets of payload_bytes each arrived; div_payload
 * divides by payload_bytes.  A sample -> type (and byte order) of its own
 * is its own loop, without per-value switches; `all` (constant): every
 * accepted one (the host: 10-25x the generic loop, bench/tensor_bench.c),
 * else only the forms sensors send most (the GPU, where the generic loop
 * is bound by its instructions, and where all 35 forms made ptxas's share
 * of the build several times longer: bench/gpu_model.md); the others
 * take the generic loop.
 */
GI_HD static GI_INLINE void gi_tensor_convert_as(const struct gi_tensor_rt *t, const uint8_t *in, uint8_t *out,
						 const uint64_t *bitmap, const struct gi_div *div_payload, uint32_t w,
						 uint32_t nw, int all)
{
#define GI_TENSOR_AS(S, D)                                                                              \
	case (S) * GI_DT__COUNT + (D):                                                                  \
		if (t->big)                                                                             \
			gi_tensor_run(t, in, out, bitmap, div_payload, w, nw, (S), (D), 1);             \
		else                                                                                    \
			gi_tensor_run(t, in, out, bitmap, div_payload, w, nw, (S), (D), 0);             \
		return;
/* a sample without a byte order (RAW10, RAW12: bytes): one loop */
#define GI_TENSOR_AS_BYTES(S, D)                                                                        \
	case (S) * GI_DT__COUNT + (D):                                                                  \
		gi_tensor_run(t, in, out, bitmap, div_payload, w, nw, (S), (D), 0);                     \
		return;
#define GI_TENSOR_AS_REAL(S)                                                                            \
	GI_TENSOR_AS(S, GI_DT_F32) GI_TENSOR_AS(S, GI_DT_F16) GI_TENSOR_AS(S, GI_DT_BF16)
	switch (t->sample * GI_DT__COUNT + t->dtype) { /* the GPU's forms (and the host's) */
		GI_TENSOR_AS(GI_TS_CI16, GI_DT_CF32)
		GI_TENSOR_AS(GI_TS_CI16, GI_DT_CF16)
		GI_TENSOR_AS_BYTES(GI_TS_RAW10, GI_DT_U16)
		GI_TENSOR_AS_BYTES(GI_TS_RAW12, GI_DT_U16)
	}
	if (all) {
		switch (t->sample * GI_DT__COUNT + t->dtype) {
			GI_TENSOR_AS_REAL(GI_TS_U8)
			GI_TENSOR_AS(GI_TS_U8, GI_DT_U8)
			GI_TENSOR_AS(GI_TS_U8, GI_DT_U16)
			GI_TENSOR_AS_REAL(GI_TS_U16)
			GI_TENSOR_AS(GI_TS_U16, GI_DT_U16)
			GI_TENSOR_AS_REAL(GI_TS_I16)
			GI_TENSOR_AS(GI_TS_I16, GI_DT_I16)
			GI_TENSOR_AS_REAL(GI_TS_U32)
			GI_TENSOR_AS(GI_TS_U32, GI_DT_U32)
			GI_TENSOR_AS_REAL(GI_TS_I32)
			GI_TENSOR_AS(GI_TS_I32, GI_DT_I32)
			GI_TENSOR_AS_REAL(GI_TS_F32)
			GI_TENSOR_AS(GI_TS_CI8, GI_DT_I8)
			GI_TENSOR_AS(GI_TS_CI8, GI_DT_CF32)
			GI_TENSOR_AS(GI_TS_CI8, GI_DT_CF16)
			GI_TENSOR_AS(GI_TS_CI16, GI_DT_I16)
			GI_TENSOR_AS_REAL(GI_TS_RAW10)
			GI_TENSOR_AS_REAL(GI_TS_RAW12)
		}
	}
#undef GI_TENSOR_AS_REAL
#undef GI_TENSOR_AS_BYTES
#undef GI_TENSOR_AS
	gi_tensor_run(t, in, out, bitmap, div_payload, w, nw, t->sample, t->dtype, t->big);
}

/* The executor's conversion: every form its own loop on the host, the GPU's few on the GPU (above). */
GI_HD static inline void gi_tensor_convert(const struct gi_tensor_rt *t, const uint8_t *in, uint8_t *out,
					   const uint64_t *bitmap, const struct gi_div *div_payload, uint32_t w,
					   uint32_t nw)
{
	gi_tensor_convert_as(t, in, out, bitmap, div_payload, w, nw, GI_SPECIALIZE);
}

GI_EXTERN_C_END

#endif /* GI_TENSOR_H */
