/*
 * config_check_fmt.c — the formats' own cross-checks: vita49, rocev2
 * (placement by VA, the HSB profile), custom (the header map)
 * (config_internal.h lists the loader's files).
 */
#include "config_internal.h"

/* A format-specific key on a stream of another format: one error at the key. */
static void err_wrong_format(struct gi_ctx *c, uint32_t i, const char *key, const struct gi_cfg_stream *s,
			     const char *format)
{
	char path[GI_PATH_BUF];
	gi_cfg_fmt_path(path, sizeof(path), "streams[%u].%s", i, key);
	gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
	       "only for format %s (stream %s is %s; allowed: remove it or set format: %s)", format, s->name,
	       gi_format_name(s->format), format);
}

void gi_cfg_check_vita49(struct gi_ctx *c, const struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		const struct gi_cfg_stream *s = &cfg->streams[i];

		if (s->format != GI_FORMAT_VITA49) {
			if (s->vita49_stream_id >= 0)
				err_wrong_format(c, i, "match.stream_id", s, "vita49");
			if (s->vita49.given)
				err_wrong_format(c, i, "vita49", s, "vita49");
			continue;
		}
		if (s->payload_bytes % 4) {
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].frame.payload_bytes", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%u is not a whole number of 32-bit VRT words (allowed: a multiple of 4)", s->payload_bytes);
		} else if (s->frame_bytes % 4) {
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].frame.bytes", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%" PRIu64 " leaves a last packet that is not a whole number of 32-bit VRT words (allowed: a "
			       "multiple of 4)", s->frame_bytes);
		}
		/* streams sharing a UDP port share its rte_flow rule, hence its queue */
		for (uint32_t j = 0; j < i; j++) {
			const struct gi_cfg_stream *o = &cfg->streams[j];
			if (o->format != GI_FORMAT_VITA49 || o->port_index != s->port_index || s->port_index < 0 ||
			    o->udp_dst_port != s->udp_dst_port || o->queue == s->queue)
				continue;
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].queue", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%u differs from queue %u of stream '%s' (line %d), which shares port %s udp %u: one "
			       "rte_flow rule steers that UDP port (allowed: %u)",
			       s->queue, o->queue, o->name, o->line, s->port, s->udp_dst_port, o->queue);
			break;
		}
	}
}

/* ---- format rocev2 (kernels/fmt_rocev2.h) ---- */

/*
 * rocev2's keys belong to rocev2 streams; each needs a destination QP,
 * unique among the rocev2 streams of its (port, UDP port); streams sharing
 * a UDP port share its rte_flow rule, hence its queue; and the payload plus
 * IPv4, UDP, the largest header set (BTH + RETH + ImmDt), pad and ICRC must
 * fit the MTU.
 */
/* One error at streams[i].rocev2.KEY (or the stream when the key is absent). */
static void err_rocev2(struct gi_ctx *c, uint32_t i, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void err_rocev2(struct gi_ctx *c, uint32_t i, const char *key, const char *fmt, ...)
{
	char path[GI_PATH_BUF], msg[512];
	va_list ap;

	gi_cfg_fmt_path(path, sizeof(path), "streams[%u].%s", i, key);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path, "%s", msg);
}

/*
 * Placement by VA (rocev2.placement: va) and the Holoscan Sensor Bridge
 * profile: pages hold a frame (and HSB's record after it, at
 * roundup(frame bytes, 128)); the profile needs VA placement and frames
 * closed by the WRITE with immediate; a frame-end packet of its own takes
 * a frame slot's last bit (frame_end packet, and auto, which must have room
 * for either form); a record the stream is told is embedded must fit the
 * MTU (auto: HSB's emulator sends its own packet when it does not).
 */
static void check_rocev2_va(struct gi_ctx *c, struct gi_cfg_stream *s, uint32_t i, const struct gi_config *cfg)
{
	struct gi_cfg_rocev2 *r = &s->rocev2;
	int hsb = r->profile == GI_ROCEV2_PROFILE_HSB;
	uint64_t need = hsb ? gi_hsb_align(s->frame_bytes) + GI_HSB_META_BYTES : s->frame_bytes;

	if (r->placement != GI_ROCEV2_PLACE_VA) {
		if (r->page_bytes)
			err_rocev2(c, i, "rocev2.page_bytes", "only with rocev2.placement: va (allowed: remove it, or set "
				   "placement: va)");
		if (r->pages)
			err_rocev2(c, i, "rocev2.pages", "only with rocev2.placement: va (allowed: remove it, or set "
				   "placement: va)");
		if (hsb)
			err_rocev2(c, i, "rocev2.profile", "hsb places every packet by its RETH virtual address "
				   "(allowed: set rocev2.placement: va)");
	} else if (!r->page_bytes) {
		r->page_bytes = need; /* HSB's own host: page_inc = roundup(frame bytes, 128) + 128 */
	} else if (s->frame_bytes && r->page_bytes < need) {
		err_rocev2(c, i, "rocev2.page_bytes", "%" PRIu64 " does not hold a frame of %" PRIu64 " bytes%s "
			   "(allowed: %" PRIu64 " or more)", r->page_bytes, s->frame_bytes,
			   hsb ? " and HSB's 128-byte record after it at a 128-byte boundary" : "", need);
	}
	if (!hsb) {
		if (gi_cfg_node_at(c, "streams[%u].rocev2.frame_end", i) != gi_cfg_node_at(c, "streams[%u].rocev2", i))
			err_rocev2(c, i, "rocev2.frame_end", "only with rocev2.profile: hsb (allowed: remove it)");
		if (r->frame_crc == GI_ROCEV2_ICRC_VERIFY)
			err_rocev2(c, i, "rocev2.frame_crc", "verify needs the sender's CRC: only with rocev2.profile: hsb "
				   "(allowed: ignore)");
		return;
	}
	if (r->close_on != GI_ROCEV2_CLOSE_IMM)
		err_rocev2(c, i, "rocev2.close_on", "profile hsb ends a frame with its WRITE with immediate (allowed: imm)");
	if (r->frame_end != GI_ROCEV2_END_EMBEDDED && s->frame_packets >= GI_FRAME_MAX_PACKETS)
		err_rocev2(c, i, "frame.bytes", "%u packets and HSB's frame-end packet do not fit a frame slot "
			   "(allowed: at most %u packets)", s->frame_packets, GI_FRAME_MAX_PACKETS - 1);
	uint64_t last = s->frame_bytes - (uint64_t)(s->frame_packets ? s->frame_packets - 1 : 0) * s->payload_bytes;
	uint64_t over = GI_IPV4_UDP_HDR_LEN + GI_ROCEV2_MAX_HDR_LEN + GI_ROCEV2_ICRC_LEN;
	if (r->frame_end == GI_ROCEV2_END_EMBEDDED && s->port_index >= 0 && s->frame_bytes &&
	    gi_hsb_align(last) + GI_HSB_META_BYTES + over > cfg->ports[s->port_index].mtu)
		err_rocev2(c, i, "rocev2.frame_end", "the last packet, %" PRIu64 " bytes padded to %" PRIu64 " plus the "
			   "128-byte record, does not fit port %s's mtu %u (allowed: auto, packet)", last,
			   gi_hsb_align(last), s->port, cfg->ports[s->port_index].mtu);
}

void gi_cfg_check_rocev2(struct gi_ctx *c, struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		struct gi_cfg_stream *s = &cfg->streams[i];

		if (s->format != GI_FORMAT_ROCEV2) {
			if (s->rocev2_dst_qp != UINT32_MAX)
				err_wrong_format(c, i, "match.dst_qp", s, "rocev2");
			if (s->rocev2.given)
				err_wrong_format(c, i, "rocev2", s, "rocev2");
			continue;
		}
		if (s->rocev2_dst_qp == UINT32_MAX) {
			yaml_node_t *m = gi_cfg_node_at(c, "streams[%u].match", i);
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].match.dst_qp", i);
			if (m && m != gi_cfg_node_at(c, "streams[%u]", i) && gi_cfg_node_at(c, "%s", path) == m)
				gi_cfg_err_at(c, gi_cfg_mark_of(m), path, "missing required key for format rocev2 (allowed: 0..16777215)");
		}
		for (uint32_t j = 0; j < i; j++) {
			const struct gi_cfg_stream *o = &cfg->streams[j];
			if (o->format != GI_FORMAT_ROCEV2 || o->port_index != s->port_index || s->port_index < 0 ||
			    o->udp_dst_port != s->udp_dst_port)
				continue;
			if (o->rocev2_dst_qp == s->rocev2_dst_qp && s->rocev2_dst_qp != UINT32_MAX) {
				gi_cfg_fmt_path(path, sizeof(path), "streams[%u].match.dst_qp", i);
				gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
				       "QP %u on port %s udp %u is already matched by stream '%s' (line %d)", s->rocev2_dst_qp,
				       s->port, s->udp_dst_port, o->name, o->line);
				break;
			}
			if (o->queue != s->queue) {
				gi_cfg_fmt_path(path, sizeof(path), "streams[%u].queue", i);
				gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
				       "%u differs from queue %u of stream '%s' (line %d), which shares port %s udp %u: one "
				       "rte_flow rule steers that UDP port (allowed: %u)",
				       s->queue, o->queue, o->name, o->line, s->port, s->udp_dst_port, o->queue);
				break;
			}
		}
		uint32_t over = GI_IPV4_UDP_HDR_LEN + GI_ROCEV2_MAX_HDR_LEN + GI_ROCEV2_ICRC_LEN;
		uint32_t padded = (s->payload_bytes + 3u) & ~3u;
		if (s->port_index >= 0 && s->payload_bytes && padded + over > cfg->ports[s->port_index].mtu) {
			uint32_t mtu = cfg->ports[s->port_index].mtu;
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].frame.payload_bytes", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%u does not fit port %s's mtu %u (allowed: 1..%d: mtu - 20 IPv4 - 8 UDP - 12 BTH - 16 RETH - "
			       "4 ImmDt - 4 ICRC, rounded down to 4 bytes)",
			       s->payload_bytes, s->port, mtu, mtu > over ? (int)((mtu - over) & ~3u) : 0);
		}
		check_rocev2_va(c, s, i, cfg);
	}
}

/* ---- format custom: the header map (kernels/fmt_custom.h) ---- */

/* One field of a custom map: inside the header, a mask that fits and is one run, a useful shift. */
static void check_custom_field(struct gi_ctx *c, const struct gi_cfg_stream *s, uint32_t i, uint32_t k)
{
	static const char *const names[] = GI_CUSTOM_FIELD_NAMES;
	const struct gi_custom_field *f = &s->custom.map.f[k];
	uint32_t hdr = s->custom.map.header_bytes;
	uint64_t full = gi_custom_full_mask(f->width), mask = f->mask ? f->mask : full;
	char path[GI_PATH_BUF];

	if (f->offset + f->width > hdr) {
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom.%s.offset", i, names[k]);
		if (hdr >= f->width)
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "bytes %u..%u end past header_bytes %u (allowed: 0..%u for a %u-byte field)", f->offset,
			       f->offset + f->width - 1, hdr, hdr - f->width, f->width);
		else
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "a %u-byte field does not fit header_bytes %u (allowed: header_bytes of at least %u)",
			       f->width, hdr, f->offset + f->width);
		return;
	}
	gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom.%s.mask", i, names[k]);
	if (mask & ~full) {
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "0x%" PRIx64 " has bits outside the %u-byte field (allowed: 0x1..0x%" PRIx64 ")", mask, f->width,
		       full);
		return;
	}
	uint64_t run = mask >> __builtin_ctzll(mask);
	if (run & (run + 1)) {
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "0x%" PRIx64 " is not one contiguous run of ones (allowed: a mask such as 0xffff or 0x0ff0)", mask);
		return;
	}
	int lo = __builtin_ctzll(mask), hi = 64 - __builtin_clzll(mask);
	int bits = gi_custom_value_bits(mask, f->shift);
	if (bits <= 0) {
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom.%s.shift", i, names[k]);
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "%u %s (allowed: %d..%d for mask 0x%" PRIx64 ")", f->shift,
		       bits < 0 ? "leaves the value's low bits always zero" : "shifts out every bit of the mask", lo,
		       hi - 1, mask);
		return;
	}
	if ((k == GI_CUSTOM_SEQ || k == GI_CUSTOM_FRAME) && bits < 4) {
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom.%s.%s", i, names[k],
			 f->shift ? "shift" : f->mask ? "mask" : "width");
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "leaves a %d-bit counter (allowed: mask and shift that keep at least 4 bits)", bits);
	}
}

/* Port MTU, split header segments, and the map as a whole. */
static void check_custom_stream(struct gi_ctx *c, const struct gi_config *cfg, struct gi_cfg_stream *s, uint32_t i)
{
	struct gi_fmt_custom_params *m = &s->custom.map;
	char path[GI_PATH_BUF];

	if (m->payload_offset == UINT32_MAX)
		m->payload_offset = m->header_bytes;
	if (!m->header_bytes || !m->f[GI_CUSTOM_SEQ].width)
		return; /* missing keys are reported by the walker */
	for (uint32_t k = 0; k < GI_CUSTOM__FIELDS; k++)
		if (m->f[k].width)
			check_custom_field(c, s, i, k);
	if (m->f[GI_CUSTOM_INDEX].width && !m->f[GI_CUSTOM_FRAME].width) {
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom.index", i);
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "needs frame: an index places a packet within the sender's frame (allowed: add custom.frame, or "
		       "leave index out and frames follow from seq)");
	}
	uint64_t seq_mask = m->f[GI_CUSTOM_SEQ].mask ? m->f[GI_CUSTOM_SEQ].mask
						      : gi_custom_full_mask(m->f[GI_CUSTOM_SEQ].width);
	int seq_bits = gi_custom_value_bits(seq_mask, m->f[GI_CUSTOM_SEQ].shift);
	if (m->f[GI_CUSTOM_FRAME].width && !m->f[GI_CUSTOM_INDEX].width && s->frame_packets &&
	    ((s->frame_packets & (s->frame_packets - 1)) ||
	     (seq_bits > 0 && seq_bits < 32 && s->frame_packets > (1u << seq_bits)))) {
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom.frame", i);
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "without custom.index a packet's index is seq %% frame.packets, which needs frame.packets (%u) to "
		       "be a power of two no larger than the seq counter's range (allowed: add custom.index)",
		       s->frame_packets);
	}
	uint32_t udp_len = m->payload_offset + s->payload_bytes + m->trailer_bytes;
	if (s->payload_bytes && m->header_bytes > udp_len) {
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom.header_bytes", i);
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "%u is longer than the packet: payload_offset %u + frame.payload_bytes %u + trailer_bytes %u = %u "
		       "(allowed: 1..%u)",
		       m->header_bytes, m->payload_offset, s->payload_bytes, m->trailer_bytes, udp_len, udp_len);
	}
	if (s->port_index < 0 || !s->payload_bytes)
		return;
	const struct gi_cfg_port *port = &cfg->ports[s->port_index];
	if (udp_len + GI_IPV4_UDP_HDR_LEN > port->mtu) {
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom", i);
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "packets of %u UDP payload bytes (payload_offset %u + frame.payload_bytes %u + trailer_bytes %u) do "
		       "not fit port %s's mtu %u (allowed: up to %u: mtu - 20 IPv4 - 8 UDP)",
		       udp_len, m->payload_offset, s->payload_bytes, m->trailer_bytes, port->name, port->mtu,
		       port->mtu - GI_IPV4_UDP_HDR_LEN);
	}
	for (uint32_t q = 0; q < port->n_queues; q++) {
		const struct gi_cfg_split *sp = &port->queues[q].split;
		uint32_t need = 14u + 4u + 20u + 8u + m->header_bytes;
		if (!sp->enabled || sp->header_bytes >= need)
			continue;
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom.header_bytes", i);
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "%u does not fit segment 0 of port %s queue %u (split.header_bytes %u holds 14 Ethernet + 4 VLAN + "
		       "20 IPv4 + 8 UDP + up to %d; allowed: 1..%d there)",
		       m->header_bytes, port->name, q, sp->header_bytes, (int)sp->header_bytes - 46,
		       (int)sp->header_bytes - 46);
		break;
	}
}

/* custom: is required with format custom and allowed with it only. */
void gi_cfg_check_custom(struct gi_ctx *c, struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		struct gi_cfg_stream *s = &cfg->streams[i];

		if (s->format == GI_FORMAT_CUSTOM && !s->custom.given) {
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].format", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "custom needs a custom: map describing the sensor's header (required: custom.header_bytes, "
			       "custom.seq)");
		} else if (s->format != GI_FORMAT_CUSTOM && s->custom.given) {
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].custom", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "only allowed with format: custom (this stream's format is %s)", gi_format_name(s->format));
		} else if (s->custom.given) {
			check_custom_stream(c, cfg, s, i);
		}
	}
}

/* ---- tensor: (any format) ---------------------------------------------------- */

static void err_tensor(struct gi_ctx *c, uint32_t i, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void err_tensor(struct gi_ctx *c, uint32_t i, const char *key, const char *fmt, ...)
{
	char path[GI_PATH_BUF], msg[GI_PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gi_cfg_fmt_path(path, sizeof(path), "streams[%u].tensor.%s", i, key);
	gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path, "%s", msg);
}

static const char *tensor_to_name(uint32_t dt)
{
	return gi_cfg_enum_name(gi_cfg_tensor_tos, (int)dt);
}

/*
 * The combination no single key can see: sample and type, the shape
 * against frame.bytes, a RAW row of whole groups.  Resolves dtype, scale_v
 * and offset_v.
 */
void gi_cfg_check_tensor(struct gi_ctx *c, struct gi_config *cfg)
{
	static const char *const sample_names[GI_TS__COUNT] = GI_TS_NAMES;

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		struct gi_cfg_tensor *t = &cfg->streams[i].tensor;
		if (!t->given || t->sample <= GI_TS_NONE || t->sample >= GI_TS__COUNT || !t->n_shape)
			continue; /* not given, or the walker has said what is wrong */
		const char *sn = sample_names[t->sample];
		const int cplx = gi_tensor_sample_complex((uint32_t)t->sample);
		const int raw = t->sample == GI_TS_RAW10 || t->sample == GI_TS_RAW12;
		t->scale_v = strtod(t->scale, NULL);
		t->offset_v = strtod(t->offset, NULL);
		t->dtype = t->to == GI_DT_NONE ? gi_tensor_same_dtype((uint32_t)t->sample) : (uint32_t)t->to;

		if (t->to == GI_DT_NONE && raw)
			err_tensor(c, i, "to", "same: %s packs its pixels and has no type of its own (allowed: u16, f32, "
				   "f16, bf16)", sn);
		else if (cplx && !gi_tensor_dtype_complex(t->dtype) && t->to != GI_DT_NONE)
			err_tensor(c, i, "to", "%s: the complex sample %s cannot become a real type (allowed: same, cf32, "
				   "cf16)", tensor_to_name(t->dtype), sn);
		else if (!cplx && gi_tensor_dtype_complex(t->dtype))
			err_tensor(c, i, "to", "%s: the real sample %s cannot become a complex type (allowed: same, f32, "
				   "f16, bf16%s)", tensor_to_name(t->dtype), sn,
				   t->sample == GI_TS_U8 || t->sample == GI_TS_U16 || raw ? ", u16" : "");
		else if (t->dtype == GI_DT_U16 && t->to != GI_DT_NONE && t->sample != GI_TS_U8 &&
			 t->sample != GI_TS_U16 && !raw)
			err_tensor(c, i, "to", "u16: only unsigned samples of 16 bits or fewer widen to u16, not %s "
				   "(allowed: same, f32, f16, bf16)", sn);
		if (t->to == GI_DT_NONE && (t->scale_v != 1.0 || t->offset_v != 0.0))
			err_tensor(c, i, t->scale_v != 1.0 ? "scale" : "offset",
				   "to: same only types the bytes (allowed: scale 1 and offset 0, or a conversion such "
				   "as to: f32)");
		if (t->missing == GI_TM_NAN && !gi_tensor_dtype_float(t->dtype))
			err_tensor(c, i, "missing", "nan: the tensor's type %s has no NaN (allowed: zero, keep)",
				   t->to == GI_DT_NONE ? sn : tensor_to_name(t->dtype));

		/* the shape: whole groups in a row, and exactly the frame's bytes */
		const uint64_t row = t->shape[t->n_shape - 1];
		const uint32_t per = gi_tensor_sample_elems((uint32_t)t->sample);
		if (row % per) {
			err_tensor(c, i, "shape", "a row of %" PRIu64 " pixels: %s packs %u pixels in %u bytes (allowed: "
				   "a last dimension that is a multiple of %u)", row, sn, per,
				   gi_tensor_sample_bytes((uint32_t)t->sample), per);
			continue;
		}
		uint64_t elems = 1, bytes;
		int over = 0;
		for (uint32_t d = 0; d < t->n_shape; d++)
			over |= __builtin_mul_overflow(elems, t->shape[d], &elems);
		over |= __builtin_mul_overflow(elems / per, (uint64_t)gi_tensor_sample_bytes((uint32_t)t->sample),
					       &bytes);
		const uint64_t fb = cfg->streams[i].frame_bytes;
		if (over || bytes != fb) {
			char shape[GI_PATH_MAX];
			size_t n = 0;
			for (uint32_t d = 0; d < t->n_shape && n < sizeof(shape); d++)
				n += (size_t)snprintf(shape + n, sizeof(shape) - n, "%s%" PRIu64, d ? ", " : "",
						      t->shape[d]);
			if (over)
				err_tensor(c, i, "shape", "[%s] of %s is too large (allowed: a shape of exactly "
					   "frame.bytes, %" PRIu64 ")", shape, sn, fb);
			else
				err_tensor(c, i, "shape", "[%s] of %s is %" PRIu64 " bytes, frame.bytes is %" PRIu64
					   " (allowed: a shape of exactly the frame's bytes)", shape, sn, bytes, fb);
		}
	}
}
