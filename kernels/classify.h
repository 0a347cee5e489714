/*
 * classify.h — from a packet to its stream, and the serial reference path.
 *
 * gi_classify_parse() is the pure part every executor path shares:
 * Ethernet/IPv4/UDP, the stream lookup (and the chain of streams sharing a
 * UDP port, told apart by gi_stream_match()), the format parser
 * (gi_stream_parse(): the dispatch to fmt_*.h).  It reads configuration only, so the
 * phased executor runs it for all packets of a batch at once.
 *
 * gi_exec_classify() / gi_exec_commit() are the serial reference path: one
 * packet at a time through the three steps of stream.h, the payload copy
 * between them.  The tests compare the phased executor against it, frame
 * for frame and counter for counter (executor.pipeline: serial runs it).
 *
 * Called from: executor workers (host threads, rx lcores inline, CUDA
 * threads), unit tests, fuzzers.
 */
#ifndef GI_CLASSIFY_H
#define GI_CLASSIFY_H

#include "stream_seq.h"

GI_EXTERN_C_BEGIN

/* Does this packet belong to stream st?  (Chained streams share a UDP port.) */
GI_HD static inline int gi_stream_match(const struct gi_stream_rt *st, const uint8_t *udp_payload, uint32_t len)
{
	switch (st->format) {
	case GI_FORMAT_VITA49:
		return gi_fmt_vita49_match(&st->fp, udp_payload, len);
	case GI_FORMAT_ROCEV2:
		return gi_fmt_rocev2_match(&st->fp, udp_payload, len);
	default:
		(void)udp_payload;
		(void)len;
		return 1; /* one stream per (port, UDP port) */
	}
}

/*
 * The stream's format parser: 0 and `pi` filled, or a gi_drop_reason.
 * Pure: it reads the stream's configuration only (the checks that depend
 * on its sequencing state are gi_seq_locate()'s).  `icrc`: verify a
 * rocev2 ICRC now, or leave it to the caller (pi->icrc_pending).
 */
GI_HD static GI_INLINE int gi_stream_parse_ex(const struct gi_stream_rt *st, const struct gi_l4 *l4,
					      const uint8_t *pkt, uint32_t hdr_len, const uint8_t *seg1, int icrc_now,
					      struct gi_pkt_info *pi)
{
	const uint8_t *u = pkt + l4->payload_off;
	uint32_t avail = hdr_len > l4->payload_off ? hdr_len - l4->payload_off : 0;

	switch (st->format) {
	case GI_FORMAT_UDP_SEQ:
		return gi_fmt_udp_seq_parse(&st->fp, u, l4->payload_len, avail, st->packets, st->payload_bytes,
					    st->last_bytes, pi);
	case GI_FORMAT_VITA49:
		return gi_fmt_vita49_parse(&st->fp, u, l4->payload_len, avail, pi);
	case GI_FORMAT_ROCEV2:
		/* the ICRC covers the payload: seg1 (buffer split) is read too */
		return gi_fmt_rocev2_parse(&st->fp, pkt, hdr_len, seg1, l4, gi_stream_slot_packets(st),
					   st->payload_bytes, icrc_now, pi);
	case GI_FORMAT_CUSTOM:
		return gi_fmt_custom_parse(&st->fp, u, l4->payload_len, avail, st->packets, st->payload_bytes,
					   st->last_bytes, pi);
	default:
		gi_pkt_info_clear(pi);
		return GI_DROP_NO_STREAM;
	}
}

GI_HD static inline int gi_stream_parse(const struct gi_stream_rt *st, const struct gi_l4 *l4, const uint8_t *pkt,
					uint32_t hdr_len, const uint8_t *seg1, struct gi_pkt_info *pi)
{
	return gi_stream_parse_ex(st, l4, pkt, hdr_len, seg1, 1, pi);
}

/*
 * Parse one packet: 0 with *stream, *l4 and *pi filled, or a drop reason
 * (no_stream, malformed_*, a format's own).  `pkt` holds the first hdr_len
 * bytes (all of it when seg1 is NULL), headers must lie there.  `owner`:
 * the worker asking; a stream another worker owns is no_stream here
 * (steering guarantees it never happens; it must not corrupt if it does).
 * rocev2 with icrc_now 0 leaves the ICRC to the caller (pi->icrc_pending).
 * `memo` (host, GI_HEADER_MEMO; else NULL): the worker's header prediction
 * (pkt.h), reset before the first packet of each batch.  The stream map is
 * part of what it remembers: a batch sees one configuration.
 */
GI_HD static GI_INLINE int gi_classify_parse(const struct gi_exec_ctx *ctx, uint16_t port, const uint8_t *pkt,
					     uint32_t len, const uint8_t *seg1, uint32_t hdr_len, uint32_t owner,
					     int icrc_now, struct gi_l4_memo *memo, uint32_t *stream, struct gi_l4 *l4,
					     struct gi_pkt_info *pi)
{
	uint16_t si;

	*stream = GI_STREAM_NONE;
	gi_pkt_info_clear(pi);
	if (seg1 == NULL || hdr_len > len)
		hdr_len = len;
	const struct gi_l4 *lp = l4; /* what the rest reads: on a hit the memo's copy, long since stored */
	if (memo && gi_l4_memo_hit(memo, pkt, len, hdr_len, port)) {
		*l4 = memo->l4; /* for the caller; read back at once, the copy's stores stalled the loads */
		lp = &memo->l4;
		si = memo->head;
	} else {
		switch (gi_parse_l4(pkt, len, hdr_len, l4)) {
		case GI_L4_OK:
			break;
		case GI_L4_NOT_UDP:
			return GI_DROP_NO_STREAM;
		default:
			return GI_DROP_MALFORMED_IP;
		}
		if (port >= ctx->n_ports)
			return GI_DROP_NO_STREAM;
		si = ctx->map[(uint32_t)port * 65536u + l4->dst_port];
		if (memo)
			gi_l4_memo_store(memo, pkt, hdr_len, port, l4, si);
	}
	const uint8_t *u = pkt + lp->payload_off;
	uint32_t u_avail = hdr_len > lp->payload_off ? GI_MIN(hdr_len - lp->payload_off, lp->payload_len) : 0;
	for (uint32_t hops = 0; si != GI_STREAM_NONE && hops < ctx->n_streams; hops++) {
		if (gi_stream_match(&ctx->streams[si], u, u_avail))
			break;
		si = ctx->streams[si].next_same_udp;
	}
	if (si == GI_STREAM_NONE || si >= ctx->n_streams)
		return GI_DROP_NO_STREAM;
	const struct gi_stream_rt *st = &ctx->streams[si];
	if (owner != GI_GROUP_ANY && st->group != owner)
		return GI_DROP_NO_STREAM;
	*stream = si;
	return gi_stream_parse_ex(st, lp, pkt, hdr_len, seg1, icrc_now, pi);
}

/* Packet i of a batch slot as the executor reads it. */
struct gi_pkt_desc {
	const uint8_t *pkt;  /* header segment (or the whole packet) */
	const uint8_t *seg1; /* payload segment, NULL without buffer split */
	uint32_t len;        /* whole packet */
	uint32_t hdr_len;    /* bytes readable at pkt */
	uint64_t nic_ns;     /* the NIC's receive time (ring.h, GI_SLOT_NIC_TS), 0: none */
};

GI_HD static inline void gi_slot_pkt(const struct gi_batch_slot *slot, uint32_t max_pkts, uint32_t split, uint32_t i,
				     struct gi_pkt_desc *d)
{
	struct gi_batch_slot *s = (struct gi_batch_slot *)slot;
	d->pkt = (const uint8_t *)(uintptr_t)gi_slot_addr(s)[i];
	d->len = gi_slot_len(s, max_pkts)[i];
	d->nic_ns = (split & GI_SLOT_NIC_TS) ? gi_slot_nic_ns(s, max_pkts, split)[i] : 0;
	if (split & GI_SLOT_SPLIT) {
		d->seg1 = (const uint8_t *)(uintptr_t)gi_slot_addr1(s, max_pkts)[i];
		d->hdr_len = gi_slot_len0(s, max_pkts)[i];
	} else {
		d->seg1 = NULL;
		d->hdr_len = d->len;
	}
	if (d->seg1 == NULL || d->hdr_len > d->len)
		d->hdr_len = d->len;
}

/* The payload of packet `d`: `len` bytes from `off`, possibly across the two segments. */
GI_HD static inline void gi_place_src(struct gi_place *pl, const struct gi_pkt_desc *d, uint32_t off, uint32_t len)
{
	pl->len = len;
	pl->len0 = GI_MIN(len, d->hdr_len > off ? d->hdr_len - off : 0u);
	pl->len1 = len - pl->len0;
	pl->src0 = d->pkt + off;
	pl->src1 = d->seg1 ? d->seg1 + (off > d->hdr_len ? off - d->hdr_len : 0u) : NULL;
}

GI_HD static inline int gi_exec_drop(struct gi_exec_counters *ctr, uint32_t r)
{
	GI_COUNTER_ADD(&ctr->drops[r], 1);
	return 0;
}

/*
 * Serial reference: one packet, one lane.  Returns 1 and fills `pl` when
 * the payload must be copied (then gi_place_copy() and gi_exec_commit()
 * follow), 0 when the packet has been fully accounted for here.
 */
GI_HD static inline int gi_exec_classify(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, uint16_t port,
					 const uint8_t *pkt, uint32_t len, const uint8_t *seg1, uint32_t hdr_len,
					 uint64_t nic_ns, uint64_t now, struct gi_l4_memo *memo, struct gi_place *pl)
{
	struct gi_pkt_desc d = { pkt, seg1, len, seg1 == NULL || hdr_len > len ? len : hdr_len, nic_ns };
	struct gi_l4 l4;
	struct gi_pkt_info pi;
	struct gi_frame_slot *s;
	uint32_t si, drop, index;
	uint64_t frame;

	int why = gi_classify_parse(ctx, port, pkt, len, seg1, hdr_len, GI_GROUP_ANY, 1, memo, &si, &l4, &pi);
	if (why)
		return gi_exec_drop(ctr, (uint32_t)why);
	struct gi_stream_rt *st = &ctx->streams[si];
	if (gi_seq_locate(st, &pi, now, &frame, &index, &drop) != GI_SEQ_PLACE)
		return drop < GI_DROP__COUNT ? gi_exec_drop(ctr, drop) : 0;
	if (gi_seq_open(st, &pi, frame, index, now, &s) != GI_SEQ_PLACE)
		return 0;
	gi_frame_nic_note(s, d.nic_ns); /* placed: its bit is set */
	if (pi.meta) { /* the sender's frame-end record */
		gi_seq_sender(st, s, &pi);
		gi_frame_sender_store(s, d.pkt, d.hdr_len, d.seg1, l4.payload_off + pi.payload_off + pi.meta_rel);
	}
	gi_place_src(pl, &d, l4.payload_off + pi.payload_off, pi.payload_len);
	pl->dst = gi_stream_payload(st, s, index);
	pl->stream = si;
	pl->frame = frame;
	pl->slot = s;
	pl->index = index;
	pl->closes = pi.closes_frame;
	return 1;
}

/* After every lane's copy of `pl` is done (and visible). */
GI_HD static inline void gi_exec_commit(struct gi_exec_ctx *ctx, const struct gi_place *pl, uint64_t now)
{
	struct gi_stream_rt *st = &ctx->streams[pl->stream];
	gi_seq_commit(st, pl->slot, pl->frame, pl->index, pl->len, pl->closes, now);
}

GI_EXTERN_C_END

#endif /* GI_CLASSIFY_H */
