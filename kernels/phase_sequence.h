/*
 * phase_sequence.h — phase 2 of a batch: each stream's packets in batch
 * order (batch.h).
 *
 * The serial steps.  gi_phase_sequence_rec() takes one record of a stream
 * through the three steps of stream.h — locate, open, commit — with the
 * stream in deferred mode: every decision the serial path makes for that
 * packet is made here, in the same order (lateness, window pushes,
 * duplicates, completion), but the frames that become final stay
 * invisible until phase 4.  Streams are independent, so one worker per
 * stream reaches the same state as one worker for all of them in batch
 * order.  A record whose frame would reuse the slot of a frame finalised
 * in this batch stalls its stream: the record keeps its place (frame,
 * index) and the batch takes another round after phase 4 has made that
 * frame visible.
 *
 * The run.  A sensor's packets mostly arrive in order, without gaps or
 * copies.  Then the serial steps only confirm what each packet's place in
 * the batch already says, and the work per packet can be parallel and
 * free of stream-state memory traffic:
 *   2a  one worker per record: gi_seq_fast_place() computes where the
 *       record goes if its stream's records in this batch are one
 *       in-order run from the stream's state at the batch's start (its
 *       sequence number is seq_max + 1 + rank), and checks everything the
 *       serial steps would check against that state (geometry, the VA of a
 *       rocev2 WRITE, lateness, the index, a copy already in its frame);
 *       gi_seq_fast_link() checks it against the stream's previous record
 *       (frame and index strictly increase, a frame ends where the sender
 *       closed it, no restart-sized jump);
 *   2b  one worker per stream: if every record of the stream passed, per
 *       frame the run touches, in order: push the window if the frame is
 *       beyond it, open the frame, set its bits, add its packets, then
 *       publish or close it exactly where the serial steps would
 *       (gi_seq_fast_commit()); else the serial steps.
 * The run's conditions make the two paths reach the same state, counter
 * for counter: no record is late, a duplicate or a drop, and none starts
 * an epoch, so the serial steps would place every record where 2a put it;
 * the window pushes, frame opens, completions and publications depend
 * only on the frames in order, which 2b follows.  A frame whose slot holds
 * a frame made final earlier in this batch stalls the run there, as it
 * would stall the serial steps: that record keeps its place, the rest go
 * the serial way in the next round.  tests/unit/test_phased.c and every
 * fixture batch (exec_fixture.h) compare both with the serial path.
 *
 * Every backend runs these as the steps of the batch's trip (trip.h): 2a
 * with a worker per record (gi_phase_run_place, then gi_phase_run_link),
 * each record's rank and predecessor from a scan before it (the host: one
 * pass, any streams, gi_scan_ranks_serial; the GPU: a block scan when the
 * group has one stream, else each record looks back over the records
 * before it in shared memory); 2b with a worker per stream
 * (gi_phase_sequence_stream), or per frame for a group of one stream
 * (phase_sequence_solo.h).
 */
#ifndef GI_PHASE_SEQUENCE_H
#define GI_PHASE_SEQUENCE_H

#include "batch.h"

GI_EXTERN_C_BEGIN

/* Put stream `st` in deferred mode for this round (its worker, before its first record). */
GI_HD static inline void gi_phase_sequence_begin(struct gi_stream_rt *st)
{
	st->defer = 1;
	st->stall = 0;
}

/*
 * One record of a stream in deferred mode.  Returns 1 when the stream
 * stalled (this record and the stream's later ones wait for the next
 * round), else 0.
 */
GI_HD static inline uint32_t gi_phase_sequence_rec(struct gi_stream_rt *st, struct gi_batch_hdr *h, struct gi_rec *r,
						   uint64_t now)
{
	struct gi_frame_slot *s;
	uint32_t drop;

	if (st->stall)
		return 1;
	if (r->state == GI_REC_PARSED) {
		if (gi_seq_locate(st, &r->pi, now, &r->frame, &r->index, &drop) != GI_SEQ_PLACE) {
			if (drop < GI_DROP__COUNT)
				gi_batch_drop(h, r, drop);
			else
				r->state = GI_REC_DONE; /* late */
			return 0;
		}
		r->state = GI_REC_LOCATED;
	}
	switch (gi_seq_open(st, &r->pi, r->frame, r->index, now, &s)) {
	case GI_SEQ_STALL:
		return 1;
	case GI_SEQ_DONE:
		r->state = GI_REC_DONE; /* duplicate */
		return 0;
	default:
		break;
	}
	r->state = GI_REC_PLACE;
	if (r->pi.meta)
		gi_seq_sender(st, s, &r->pi);
	gi_seq_commit(st, s, r->frame, r->index, r->pi.payload_len, r->pi.closes_frame, now);
	return 0;
}

/* ---- the run (2a, 2b) --------------------------------------------------------- */

/*
 * 2a's last check, in both forms of gi_seq_fast_place(): a copy already in
 * its frame from an earlier batch, which the serial steps count; else the
 * record's place.  index < packets, so the bitmap word is the slot's: the
 * GPU loads it beside the slot's words (GI_LOADS_FIRST), the host only if
 * the frame is open.
 */
GI_HD static inline uint32_t gi_seq_fast_slot(struct gi_stream_geom *geo, struct gi_rec *r, uint64_t frame,
					      uint32_t index)
{
	struct gi_frame_slot *s = gi_geom_slot(geo, frame);
	const uint64_t *word = &gi_frame_bitmap(s)[index >> 6];
	const uint64_t early = GI_LOADS_FIRST ? *word : 0;
	if (gi_frame_is_open(s, frame) && ((GI_LOADS_FIRST ? early : *word) >> (index & 63) & 1))
		return 0;
	r->frame = frame;
	r->index = index;
	return 1;
}

/*
 * 2a, first part: record `r`, the rank-th parsed record of its stream in
 * this batch, as the serial steps would place it if every record before it
 * was part of the run.  Reads the stream's batch-start state and the
 * record's frame slot (through `geo`, the stream's geometry, which keeps
 * the last slot found), writes r->frame and r->index.  1: it fits.
 *
 * Two forms of the same decisions (test_phased holds them to each other
 * on random states and records): the host's tests each condition where it
 * reads its word and stops at the first that fails; the GPU's
 * (GI_LOADS_FIRST, gi_hd.h) loads every word of the stream first,
 * computes the place for both kinds of stream and ANDs the checks, then
 * loads the slot's words and the bitmap word together.  Tested where
 * each was read, the stream's and the slot's words made a chain on the
 * GPU, each load waiting for the branch on the one before (sm_90 SASS of
 * 2a: a dozen, from L2 where thread 0 or an atomic wrote them last).
 */
GI_HD static inline uint32_t gi_seq_fast_place_tests(const struct gi_stream_rt *st, struct gi_stream_geom *geo,
						     struct gi_rec *r, uint32_t rank)
{
	const struct gi_format_params *fp = &st->fp;
	const struct gi_pkt_info *pi = &r->pi;
	uint64_t frame;
	uint32_t index;

	/* seq_bits >= 2: a step of one is then +1 for gi_extend_delta (with 1 bit it is -1, with 0 it is 0);
	 * an HSB stream still learning its frame end (gi_stream_learn_end) may change its geometry at any
	 * record, which places computed in parallel from the batch's start cannot follow: the serial steps */
	if (!st->started || fp->seq_bits < 2 || st->end_unknown)
		return 0;
	uint64_t seq_ext = st->seq_max + 1 + rank;
	uint64_t mask = fp->seq_bits >= 64 ? ~0ull : (1ull << fp->seq_bits) - 1;
	if (((seq_ext ^ pi->seq) & mask) != 0)
		return 0; /* not the next sequence number: reordered, lost before it, or a copy */
	/*
	 * The distance from the epoch's first packet, which the serial steps
	 * take as signed (gi_stream_locate's floor division, check_va's
	 * remainder): at 2^63 and beyond (a 64-bit counter that jumped, with
	 * resync_frames 0) they see a packet before the epoch; leave it to them.
	 */
	uint64_t n = seq_ext - st->seq_origin;
	if ((int64_t)n < 0)
		return 0;
	if (pi->has_frame) {
		/*
		 * Extended against the batch-start raw_max, not against the running
		 * maximum the serial steps use: the same number while every record
		 * of the run is within a quarter of the counter's range of raw_max
		 * (then any two are within half of it).
		 */
		int64_t fd = gi_extend_delta(st->raw_max, pi->frame, fp->frame_bits);
		if (fp->frame_bits < 3 || (fp->frame_bits < 64 && gi_abs_u64(fd) >= 1ull << (fp->frame_bits - 2)))
			return 0;
		if (rank == 0 && fp->resync_frames && gi_abs_u64(fd) > fp->resync_frames)
			return 0; /* a restart */
		int64_t rel = (int64_t)(st->raw_max - st->raw_origin + (uint64_t)fd);
		if (rel < 0 && gi_abs_u64(rel) > st->frame_base)
			return 0;
		frame = st->frame_base + (uint64_t)rel;
		index = pi->has_offset ? (uint32_t)gi_div_q(&st->div_payload, pi->byte_off) : pi->pkt_index;
	} else {
		uint64_t q = gi_div_q(&st->div_packets, n);
		frame = st->frame_base + q;
		index = (uint32_t)(n - q * st->packets);
	}
	/* a WRITE's RETH must name the place its PSN gives (gi_fmt_rocev2_check_va) */
	if (st->format == GI_FORMAT_ROCEV2 && pi->has_offset &&
	    pi->byte_off != gi_div_r(&st->div_packets, n) * st->payload_bytes)
		return 0;
	/* late, or a bad index (a frame beyond the window pushes it in 2b, as the serial steps do) */
	if (frame >= GI_RING_FRAME_LIMIT || frame < st->next_pub || index >= st->packets)
		return 0;
	/* the geometry: every packet payload_bytes long, the frame's last data last_bytes, a record
	 * of its own none, and a frame-end record no earlier than the last data */
	if (pi->payload_len != gi_stream_pkt_bytes(st, index) || (pi->meta && index + 1 < st->data_packets))
		return 0;
	return gi_seq_fast_slot(geo, r, frame, index);
}

/* The GPU's form (above): the same decisions, every load of a round before any test. */
GI_HD static inline uint32_t gi_seq_fast_place_eager(const struct gi_stream_rt *st, struct gi_stream_geom *geo,
						     struct gi_rec *r, uint32_t rank)
{
	const struct gi_pkt_info *pi = &r->pi;
	/* the stream's words, all loaded here */
	const uint32_t started = st->started, end_unknown = st->end_unknown, rocev2 = st->format == GI_FORMAT_ROCEV2;
	const uint32_t seq_bits = st->fp.seq_bits, frame_bits = st->fp.frame_bits, packets = st->packets;
	const uint32_t payload_bytes = st->payload_bytes, data_packets = st->data_packets, div_d = st->div_packets.d;
	const uint64_t resync = st->fp.resync_frames, seq_max = st->seq_max, seq_origin = st->seq_origin;
	const uint64_t raw_max = st->raw_max, raw_origin = st->raw_origin, frame_base = st->frame_base;
	const uint64_t next_pub = st->next_pub;

	/* each check as in gi_seq_fast_place_tests, which says why */
	uint32_t fits = (started != 0) & (seq_bits >= 2) & (end_unknown == 0);
	const uint64_t seq_ext = seq_max + 1 + rank;
	const uint64_t mask = seq_bits >= 64 ? ~0ull : (1ull << (seq_bits & 63)) - 1;
	fits &= ((seq_ext ^ pi->seq) & mask) == 0;
	const uint64_t n = seq_ext - seq_origin;
	fits &= (int64_t)n >= 0;
	const uint64_t q = gi_div_q(&st->div_packets, n);
	/* both kinds of stream's place: by the sender's frame number, or by the distance */
	const int64_t fd = gi_extend_delta(raw_max, pi->frame, frame_bits);
	const int64_t rel = (int64_t)(raw_max - raw_origin + (uint64_t)fd);
	const uint64_t quarter = frame_bits >= 64 ? ~0ull : frame_bits >= 3 ? 1ull << ((frame_bits - 2) & 63) : 0;
	const uint64_t afd = gi_abs_u64(fd), arel = gi_abs_u64(rel);
	const uint32_t restart = (rank == 0) & (resync != 0) & (afd > resync), before = (rel < 0) & (arel > frame_base);
	fits &= (pi->has_frame == 0) | ((afd < quarter) & !restart & !before);
	const uint64_t frame = frame_base + (pi->has_frame ? (uint64_t)rel : q);
	const uint32_t index = !pi->has_frame ? (uint32_t)(n - q * packets)
			       : pi->has_offset ? (uint32_t)gi_div_q(&st->div_payload, pi->byte_off)
						: pi->pkt_index;
	fits &= !(rocev2 & (pi->has_offset != 0) & (pi->byte_off != (n - q * div_d) * payload_bytes));
	fits &= (frame < GI_RING_FRAME_LIMIT) & (frame >= next_pub) & (index < packets);
	fits &= (pi->payload_len == gi_stream_pkt_bytes(st, index)) & !((pi->meta != 0) & (index + 1 < data_packets));
	if (!fits)
		return 0;
	return gi_seq_fast_slot(geo, r, frame, index);
}

GI_HD static inline uint32_t gi_seq_fast_place(const struct gi_stream_rt *st, struct gi_stream_geom *geo,
					       struct gi_rec *r, uint32_t rank)
{
	return GI_LOADS_FIRST ? gi_seq_fast_place_eager(st, geo, r, rank) : gi_seq_fast_place_tests(st, geo, r, rank);
}

/*
 * 2a, second part: `r` after `p`, the stream's previous record in the
 * batch (NULL for its first, which gi_seq_fast_place() checked against the
 * stream).  Both placed.  1: the run goes on.
 */
GI_HD static inline uint32_t gi_seq_fast_link(const struct gi_stream_rt *st, const struct gi_rec *r,
					      const struct gi_rec *p)
{
	if (!p)
		return 1;
	if (r->frame < p->frame || (r->frame == p->frame && r->index <= p->index))
		return 0; /* out of order, or a second copy */
	if (p->pi.closes_frame && p->frame == r->frame)
		return 0; /* late after its frame was closed */
	if (r->pi.has_frame && st->fp.resync_frames) {
		/* the serial steps' jump: from the running maximum, the batch-start
		 * raw_max or the previous record's frame (frames only grow in a run) */
		uint64_t top = GI_MAX(st->frame_base + (st->raw_max - st->raw_origin), p->frame);
		if (gi_abs_u64((int64_t)(r->frame - top)) > st->fp.resync_frames)
			return 0;
	}
	return 1;
}

/* 2b: the end of a frame's packets in the run: bits, counts, then publish or close. */
GI_HD static inline void gi_seq_fast_frame_end(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame,
					       uint32_t n, uint32_t last_index, uint64_t *word, uint64_t bits,
					       uint32_t closes, uint64_t now)
{
	/* the slot's words before any store (gi_mirror_copy says why) */
	const uint64_t wv = word ? *word | bits : 0;
	const uint32_t received = s->received + n, expected = s->expected;
	uint32_t meta;
	uint64_t bytes = gi_stream_run_bytes(st, n, last_index, &meta); /* consecutive indices: one may be short */
	GI_COUNTER_ADD(&st->c.packets, n - meta);
	if (meta)
		GI_COUNTER_ADD(&st->c.metadata, 1);
	GI_COUNTER_ADD(&st->c.bytes, bytes);
	if (word)
		*word = wv;
	s->received = received;
	if (closes && frame >= st->next_pub)
		gi_stream_advance(st, frame + 1, GI_FRAME_PARTIAL, now); /* the sender says it is done */
	else if (received == expected)
		gi_stream_publish_ready(st, now);
}

/*
 * 2b for a stream whose parsed records all passed 2a (in deferred mode):
 * what the serial steps would do, per frame instead of per packet.  The
 * records go to GI_REC_PLACE for phase 3.  Returns 1 when the run stalled
 * (see the top of this file), else 0.
 */
GI_HD static inline uint32_t gi_seq_fast_commit(struct gi_stream_rt *st, struct gi_batch_hdr *h, uint32_t si,
						uint64_t now)
{
	struct gi_rec *rec = gi_batch_recs(h);
	struct gi_frame_slot *s = NULL;
	struct gi_rec *last = NULL;
	uint64_t frame = 0, bits = 0, *word = NULL;
	uint32_t n = 0, closes = 0, widx = 0, stalled = 0;

	for (uint32_t i = 0; i < h->n; i++) {
		struct gi_rec *r = &rec[i];
		if (r->stream != si || r->state != GI_REC_PARSED)
			continue;
		if (!s || r->frame != frame) {
			if (s)
				gi_seq_fast_frame_end(st, s, frame, n, last->index, word, bits, closes, now);
			frame = r->frame;
			last = r;
			/* gi_seq_locate()'s window push, at the frame's first packet */
			if (frame - st->next_pub >= st->window)
				gi_stream_advance(st, frame - st->window + 1, GI_FRAME_PARTIAL, now);
			s = gi_stream_slot(st, frame);
			if (!gi_frame_is_open(s, frame)) {
				/* gi_seq_open()'s stall: the slot's frame is final but not yet visible */
				if (st->pend_n && (s->seq & 1) && s->frame != frame) {
					r->state = GI_REC_LOCATED;
					st->stall = 1;
					stalled = 1;
					s = NULL;
					break;
				}
				gi_frame_open(st, s, frame, r->pi.sensor_id, gi_seq_sensor_frame(st, &r->pi, frame),
					      r->pi.timestamp, now);
			}
			gi_stream_span(st, frame);
			n = 0;
			word = NULL;
		}
		uint32_t w = r->index >> 6;
		if (!word || w != widx) {
			if (word)
				*word |= bits;
			widx = w;
			word = &gi_frame_bitmap(s)[w];
			bits = 0;
		}
		bits |= 1ull << (r->index & 63);
		n++;
		closes = r->pi.closes_frame;
		last = r;
		r->state = GI_REC_PLACE;
		if (r->pi.meta)
			gi_seq_sender(st, s, &r->pi);
	}
	if (s)
		gi_seq_fast_frame_end(st, s, frame, n, last->index, word, bits, closes, now);
	if (!last)
		return 0;
	/* the sequence state after the last record located: every step was +1 */
	st->seq_max += (uint64_t)last->rank + 1;
	if (last->pi.has_frame) {
		/* its sender frame number as the serial steps extend it */
		uint64_t raw = st->raw_origin + (last->frame - st->frame_base);
		if ((int64_t)(raw - st->raw_max) > 0)
			st->raw_max = raw;
	}
	return stalled;
}

/* 2b's question, one worker per stream: did every parsed record of stream si pass 2a? */
GI_HD static inline uint32_t gi_phase_run_ok(const struct gi_batch_hdr *h, uint32_t si)
{
	const struct gi_rec *rec = gi_batch_recs((struct gi_batch_hdr *)h);
	uint32_t found = 0;

	for (uint32_t i = 0; i < h->n; i++) {
		if (rec[i].stream != si || rec[i].state != GI_REC_PARSED)
			continue;
		if (!rec[i].link)
			return 0;
		found = 1;
	}
	return found;
}

/*
 * 2a on the GPU, first pass: worker w of nw places records w, w + nw, ...
 * Each finds its stream's previous parsed record and its rank by scanning
 * the records before it (shared memory: cheap next to one global load).
 */
GI_HD static inline void gi_phase_run_place(const struct gi_exec_ctx *ctx, struct gi_batch_hdr *h, uint32_t w,
					    uint32_t nw)
{
	struct gi_rec *rec = gi_batch_recs(h);
	struct gi_stream_geom geo; /* the last record's stream (stream.h) */
	gi_stream_geom_none(&geo);

	for (uint32_t i = w; i < h->n; i += nw) {
		struct gi_rec *r = &rec[i];
		uint32_t rank = 0, prev = GI_REC_NONE;
		r->fast = 0;
		r->link = 0;
		if (r->state != GI_REC_PARSED)
			continue;
		if (h->ranked) { /* one stream: a block scan found them (gi_solo_scan_serial / the GPU's ballots) */
			rank = r->rank;
		} else {
			for (uint32_t j = i; j-- > 0;) {
				if (rec[j].stream != r->stream || rec[j].state != GI_REC_PARSED)
					continue;
				if (prev == GI_REC_NONE)
					prev = j;
				rank++;
			}
			r->prev = (uint16_t)prev;
			r->rank = (uint16_t)rank;
		}
		gi_stream_geom_use(&geo, ctx, r->stream);
		r->fast = (uint8_t)gi_seq_fast_place(&ctx->streams[r->stream], &geo, r, rank);
	}
}

/*
 * 2a on the GPU, second pass (after a barrier): each placed record against
 * its predecessor.  Returns 1 when every parsed record of this worker's
 * share passed (the CTA's AND of it: one stream's run holds).
 */
GI_HD static inline uint32_t gi_phase_run_link(const struct gi_exec_ctx *ctx, struct gi_batch_hdr *h, uint32_t w,
					       uint32_t nw)
{
	struct gi_rec *rec = gi_batch_recs(h);
	uint32_t all = 1;

	for (uint32_t i = w; i < h->n; i += nw) {
		struct gi_rec *r = &rec[i];
		if (r->state != GI_REC_PARSED)
			continue;
		const struct gi_rec *p = r->prev == GI_REC_NONE ? NULL : &rec[r->prev];
		r->link = (uint8_t)(r->fast && (!p || p->fast) && gi_seq_fast_link(&ctx->streams[r->stream], r, p));
		all &= r->link;
	}
	return all;
}

/*
 * Every parsed record's rank and predecessor among its stream's, by one
 * worker in one pass, however many streams (the host's scan: it spares
 * gi_phase_run_place() the look back over the records before each, which
 * the GPU's threads do side by side); each stream's last record so far in
 * its run_last.
 */
GI_HD static inline void gi_scan_ranks_serial(struct gi_exec_ctx *ctx, struct gi_batch_hdr *h)
{
	struct gi_rec *rec = gi_batch_recs(h);

	for (uint32_t i = 0; i < h->n; i++)
		if (rec[i].state == GI_REC_PARSED)
			ctx->streams[rec[i].stream].run_last = GI_REC_NONE;
	for (uint32_t i = 0; i < h->n; i++) {
		struct gi_rec *r = &rec[i];
		if (r->state != GI_REC_PARSED)
			continue;
		struct gi_stream_rt *st = &ctx->streams[r->stream];
		r->prev = (uint16_t)st->run_last;
		r->rank = (uint16_t)(st->run_last == GI_REC_NONE ? 0 : rec[st->run_last].rank + 1);
		st->run_last = i;
	}
	h->ranked = 1;
}

/*
 * The serial steps for stream si: its records in batch order.  Returns 1
 * when the stream stalled (another round is needed).
 */
GI_HD static inline uint32_t gi_phase_sequence_serial(struct gi_exec_ctx *ctx, uint32_t si, struct gi_batch_hdr *h,
						      uint64_t now)
{
	struct gi_rec *rec = gi_batch_recs(h);
	struct gi_stream_rt *st = &ctx->streams[si];
	uint32_t began = 0;

	for (uint32_t i = 0; i < h->n; i++) {
		struct gi_rec *r = &rec[i];
		if (r->stream != si)
			continue;
		if (r->state == GI_REC_PLACE) /* copied in the previous round */
			r->state = GI_REC_DONE;
		if (r->state != GI_REC_PARSED && r->state != GI_REC_LOCATED)
			continue;
		if (!began) {
			gi_phase_sequence_begin(st);
			began = 1;
		}
		if (gi_phase_sequence_rec(st, h, r, now))
			return 1;
	}
	return 0;
}

/*
 * GPU form of 2b: the worker for stream si, after 2a.  Returns 1 when the
 * stream stalled (another round is needed).
 */
GI_HD static inline uint32_t gi_phase_sequence_stream(struct gi_exec_ctx *ctx, uint32_t si, struct gi_batch_hdr *h,
						      uint64_t now)
{
	if (h->round == 0 && gi_phase_run_ok(h, si)) {
		struct gi_stream_rt *st = &ctx->streams[si];
		gi_phase_sequence_begin(st);
		GI_ATOMIC_ADD_U32(&h->runs, 1);
		return gi_seq_fast_commit(st, h, si, now);
	}
	return gi_phase_sequence_serial(ctx, si, h, now);
}

GI_EXTERN_C_END

#endif /* GI_PHASE_SEQUENCE_H */
