/*
 * phase_parse.h — phase 1 of a batch: one worker per packet (batch.h).
 *
 * gi_phase_parse(): worker w of nw parses packets w, w + nw, ... into their
 * records: headers, stream, the format's fields.  Pure reads of the packet
 * and the streams' configuration, so any number of workers run it at once;
 * the only shared writes are the batch's drop counters (atomic adds).  It
 * says whether it left an ICRC pending, so that a batch with none (any
 * format but rocev2) skips phase 1b and its barrier.
 *
 * gi_phase_icrc() (1b, GPU): rocev2 ICRCs that phase 1 left pending, one
 * worker per packet, slice-by-8 tables in shared memory (fmt_rocev2.h).
 * A bad ICRC overrides any other reason the parser found, as in the serial
 * order (length, ICRC, opcode, headers).  The host verifies in phase 1.
 */
#ifndef GI_PHASE_PARSE_H
#define GI_PHASE_PARSE_H

#include "batch.h"

GI_EXTERN_C_BEGIN

/* Returns 1 when one of this worker's packets has its ICRC pending (phase 1b), else 0. */
GI_HD static inline uint32_t gi_phase_parse(const struct gi_exec_ctx *ctx, uint32_t owner,
					    const struct gi_batch_slot *slot, uint32_t max_pkts, uint32_t split,
					    struct gi_batch_hdr *h, int icrc_now, uint32_t w, uint32_t nw)
{
	struct gi_rec *rec = gi_batch_recs(h);
	uint16_t port = slot->port;
	uint32_t pending = 0;
	struct gi_l4_memo memo;

	if (GI_HEADER_MEMO)
		gi_l4_memo_reset(&memo);

	for (uint32_t i = w; i < h->n; i += nw) {
		struct gi_rec *r = &rec[i];
		struct gi_pkt_desc d;
		struct gi_l4 l4;
		uint32_t si;

		gi_slot_pkt(slot, max_pkts, split, i, &d);
		int why = gi_classify_parse(ctx, port, d.pkt, d.len, d.seg1, d.hdr_len, owner, icrc_now,
					    GI_HEADER_MEMO ? &memo : NULL, &si, &l4, &r->pi);
		r->stream = (uint16_t)si;
		r->src_off = (uint16_t)(l4.payload_off + r->pi.payload_off);
		r->reason = GI_DROP__COUNT;
		if (!why) {
			r->state = GI_REC_PARSED;
		} else if (r->pi.icrc_pending) {
			r->state = GI_REC_DONE; /* counted by phase 1b, which may make it an ICRC drop */
			r->reason = (uint8_t)why;
		} else {
			gi_batch_drop(h, r, (uint32_t)why);
		}
		pending |= r->pi.icrc_pending;
	}
	return pending;
}

/* Worker w of nw: every record with a pending ICRC.  `t8`: slice-by-8 tables. */
GI_HD static inline void gi_phase_icrc(const struct gi_batch_slot *slot, uint32_t max_pkts, uint32_t split,
				       struct gi_batch_hdr *h, uint32_t w, uint32_t nw, const uint32_t *t8)
{
	struct gi_rec *rec = gi_batch_recs(h);

	for (uint32_t i = w; i < h->n; i += nw) {
		struct gi_rec *r = &rec[i];
		if (!r->pi.icrc_pending)
			continue;
		struct gi_pkt_desc d;
		struct gi_l4 l4;
		gi_slot_pkt(slot, max_pkts, split, i, &d);
		(void)gi_parse_l4(d.pkt, d.len, d.hdr_len, &l4); /* phase 1 found it well-formed */
		if (gi_rocev2_icrc_t8(d.pkt, d.hdr_len, d.seg1, l4.l3_off, l4.payload_len + 8, t8) !=
		    gi_rocev2_icrc_carried(d.pkt, d.hdr_len, d.seg1, &l4)) {
			r->state = GI_REC_DONE;
			r->reason = GI_DROP_ROCEV2_ICRC;
		}
		r->pi.icrc_pending = 0;
		if (r->state == GI_REC_DONE)
			GI_ATOMIC_ADD_U32(&h->drops[r->reason], 1);
	}
}

GI_EXTERN_C_END

#endif /* GI_PHASE_PARSE_H */
