/*
 * stream_seq.h — the stream's window and its packets: publishing the
 * window's head, epochs and resynchronisation, ticks and flush, locating a
 * packet's frame and index, and the three steps of a packet (locate, open,
 * commit) that classify.h and the phases run.
 *
 * The second half of the state machine: it moves the window with
 * stream_publish.h's calls.  Includers: classify.h (parse, then these
 * steps), and whoever ticks or flushes a stream.
 */
#ifndef GI_STREAM_SEQ_H
#define GI_STREAM_SEQ_H

#include "stream_publish.h"

GI_EXTERN_C_BEGIN

/* ---- the window ----------------------------------------------------------------- */

/* Frame `frame` has a packet placed: the span of frames seen (min_frame .. max_frame) covers it. */
GI_HD static inline void gi_stream_span(struct gi_stream_rt *st, uint64_t frame)
{
	if (frame > st->max_frame)
		st->max_frame = frame;
	if (frame < st->min_frame)
		st->min_frame = frame;
}

/* Publish the in-order run of complete frames at the head of the window. */
GI_HD static inline void gi_stream_publish_ready(struct gi_stream_rt *st, uint64_t now)
{
	uint64_t f = st->next_pub;
	while (f <= st->max_frame) {
		struct gi_frame_slot *s = gi_stream_slot(st, f);
		if (!gi_frame_is_open(s, f) || s->received != s->expected)
			break;
		gi_frame_publish(st, s, GI_FRAME_COMPLETE, now);
		f++;
	}
	if (f != st->next_pub)
		gi_stream_set_next(st, f);
}

/*
 * Make every frame below `new_next` final: open ones are published with
 * `state` (or complete), never-seen ones are skipped and their packets
 * counted lost.  O(window), however far new_next jumps.
 */
GI_HD static inline void gi_stream_advance(struct gi_stream_rt *st, uint64_t new_next, uint32_t state,
					   uint64_t now)
{
	uint64_t f = st->next_pub;
	uint64_t scan_end = GI_MIN(new_next, f + st->window);
	uint64_t skipped = 0;

	for (; f < scan_end; f++) {
		struct gi_frame_slot *s = gi_stream_slot(st, f);
		if (gi_frame_is_open(s, f))
			gi_frame_publish(st, s, state, now);
		else if (f >= st->min_frame)
			skipped++;
	}
	if (new_next > scan_end)
		skipped += new_next - scan_end;
	if (skipped)
		GI_COUNTER_ADD(&st->c.lost, skipped * st->packets);
	gi_stream_set_next(st, new_next);
	/* frames that completed while an older one held the head go out now */
	gi_stream_publish_ready(st, now);
}

/*
 * Opening frame f in slot s is a seqlock writer's entry: the odd value must
 * be visible before any slot byte changes, so a reader re-checking seq
 * cannot accept a torn frame (a release store alone would only order the
 * writes before it); the mirror's odd value too, before its slot changes
 * at publication.  gi_frame_open_enter() stores them, the caller fences
 * (GI_FENCE_RELEASE: one fence for every frame it entered), then
 * gi_frame_open_fill() writes the slot.  gi_frame_open() is the three.
 */
GI_HD static inline void gi_frame_open_enter(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame)
{
	GI_STORE_RELAXED_U64(&s->seq, 2 * frame + 1);
	if (st->mirror)
		GI_STORE_RELAXED_U64(&gi_stream_mirror_slot(st, frame)->seq, 2 * frame + 1);
}

GI_HD static inline void gi_frame_open_fill(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame,
					    uint32_t sensor_id, uint64_t sensor_frame, uint64_t sender_ts, uint64_t now)
{
	uint64_t *bm = gi_frame_bitmap(s);

	s->frame = frame;
	s->first_ts_ns = sender_ts;
	s->first_rx_ns = now;
	s->publish_ns = 0;
	s->expected = st->packets;
	s->received = 0;
	s->sensor_id = sensor_id;
	s->sensor_frame = sensor_frame;
	s->sender.kind = GI_SENDER_NONE;
	s->sender.crc_state = GI_CRC_UNCHECKED;
	s->sender.crc_acc = 0;
	s->first_nic_ns = 0;
	s->last_nic_ns = 0;
	/* the slot's every word: an epoch that learned the embedded form counts one bit fewer, and
	 * must not leave a record's bit of an earlier epoch behind */
	for (uint32_t w = 0; w < gi_frame_bitmap_words(gi_stream_slot_packets(st)); w++)
		bm[w] = 0;
	s->state = GI_FRAME_FILLING;
}

GI_HD static inline void gi_frame_open(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame,
				       uint32_t sensor_id, uint64_t sensor_frame, uint64_t sender_ts, uint64_t now)
{
	gi_frame_open_enter(st, s, frame);
	GI_FENCE_RELEASE();
	gi_frame_open_fill(st, s, frame, sensor_id, sensor_frame, sender_ts, now);
}

/*
 * The first packet of a stream.  The window opens window - 1 frames before
 * it, so packets of earlier frames that were merely reordered behind it are
 * still placed; frames below the oldest one seen never count as lost.
 */
GI_HD static inline void gi_stream_start(struct gi_stream_rt *st, uint64_t frame, uint64_t seq)
{
	uint64_t back = GI_MIN(frame, (uint64_t)(st->window - 1));

	/* rocev2.frame_end auto: every epoch learns the record's form anew (a
	 * restarted sender may be another one); until it has, a frame keeps
	 * room for a record of its own, its PSN and the slot's last bit */
	if (st->format == GI_FORMAT_ROCEV2 && gi_fmt_rocev2_end_auto(&st->fp)) {
		st->packets = st->data_packets + 1;
		st->end_unknown = 1;
	}
	gi_stream_derive(st);
	st->started = 1;
	st->max_frame = frame;
	st->min_frame = frame;
	st->seq_max = seq;
	st->seq_origin = seq;
	st->ring->first_frame = frame - back;
	if (st->mirror)
		st->mirror->first_frame = frame - back;
	gi_stream_set_next(st, frame - back);
	if (st->defer) { /* after next_frame, in gi_stream_make_visible() */
		st->start_pending = 1;
		return;
	}
	gi_stream_publish_start(st);
}

/* Close the oldest open frame if its first packet is older than the timeout. */
GI_HD static inline void gi_stream_tick(struct gi_stream_rt *st, uint64_t now)
{
	if (!st->started || st->frame_timeout_ns == 0)
		return;
	for (uint64_t f = st->next_pub; f <= st->max_frame && f < st->next_pub + st->window; f++) {
		struct gi_frame_slot *s = gi_stream_slot(st, f);
		if (!gi_frame_is_open(s, f))
			continue;
		if (now - s->first_rx_ns >= st->frame_timeout_ns)
			gi_stream_advance(st, f + 1, GI_FRAME_TIMED_OUT, now);
		break;
	}
}

/* Shutdown: everything seen so far becomes final. */
GI_HD static inline void gi_stream_flush(struct gi_stream_rt *st, uint64_t now)
{
	if (st->started && st->next_pub <= st->max_frame)
		gi_stream_advance(st, st->max_frame + 1, GI_FRAME_PARTIAL, now);
}

/*
 * A sender restart (a jump beyond resync_frames): everything open becomes
 * final and a new epoch starts at this packet, above every frame number
 * used so far, so the restart costs no phantom loss and consumers see
 * frame numbers only grow.
 */
GI_HD static inline void gi_stream_resync(struct gi_stream_rt *st, uint64_t now)
{
	st->prev_raw_max = st->raw_max;
	st->prev_seq_max = st->seq_max;
	gi_stream_flush(st, now);
	GI_COUNTER_ADD(&st->c.resyncs, 1);
	st->started = 0;
	st->frame_base = st->max_frame + st->window + 1;
}

/*
 * Ring frame numbers stay below this: far above any honest sender's count
 * (2^62 frames at a million frames a second: 146,000 years), far enough
 * below 2^64 that frame + window arithmetic never wraps, so they only grow.
 * A 64-bit sender frame counter that starts above it numbers the ring from
 * 0; packets of ring frames beyond it count as late.  Only a hostile or
 * broken sender gets near it.
 */
#define GI_RING_FRAME_LIMIT (1ull << 62)

/* |v| as unsigned: exact for INT64_MIN too, whose negation overflows. */
GI_HD static inline uint64_t gi_abs_u64(int64_t v)
{
	return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

/*
 * Packet `pi` at `index` of its frame: GI_DROP__COUNT, or why it cannot be
 * there (an index past the frame; a short packet that is not the frame's
 * last, or a full-size last; a frame-end record before the frame's last
 * data).  Reads only the stream's geometry.
 */
GI_HD static GI_INLINE uint32_t gi_seq_misplaced(const struct gi_stream_rt *st, const struct gi_pkt_info *pi,
						 uint32_t index)
{
	if (index >= st->packets)
		return GI_DROP_MALFORMED_INDEX;
	if (pi->payload_len != gi_stream_pkt_bytes(st, index))
		return GI_DROP_MALFORMED_LENGTH;
	if (pi->meta && index + 1 < st->data_packets)
		return GI_DROP_MALFORMED_INDEX;
	return GI_DROP__COUNT;
}

/*
 * Where packet `pi` goes: the ring frame number and the packet's index in
 * it.  Returns 0 (after a resync, if the packet started a new epoch), or 1
 * when the packet is late (its frame is final, or it is a straggler of the
 * epoch before a restart), or 3 when, placed by its sequence number, it
 * would start a new epoch but cannot be a frame's first packet (the stream
 * is unchanged: gi_seq_locate drops it as malformed).
 * Distances are 64-bit and wrap like the counters they come from (a
 * hostile sender of a 64-bit counter reaches any of them): the arithmetic
 * is unsigned where a signed form could overflow.
 */
GI_HD static GI_INLINE int gi_stream_locate(struct gi_stream_rt *st, const struct gi_pkt_info *pi, uint64_t now,
					    uint64_t *frame, uint32_t *index)
{
	const struct gi_format_params *fp = &st->fp;

	if (st->started) {
		int64_t sd = gi_extend_delta(st->seq_max, pi->seq, fp->seq_bits);
		int64_t jump = sd;
		uint64_t limit = fp->resync_frames * (pi->has_frame ? 1 : st->packets);
		if (pi->has_frame)
			jump = gi_extend_delta(st->raw_max, pi->frame, fp->frame_bits);
		if (limit && gi_abs_u64(jump) > limit) {
			/* A packet of the epoch before the last restart, reordered behind
			 * it: near that epoch's newest number (at most a window above it:
			 * its last packets, not yet seen; within the limit below), while
			 * this epoch is younger than its window (later, such a packet is
			 * another restart).  Its frame was flushed, or never opened: late. */
			int64_t back = pi->has_frame ? gi_extend_delta(st->prev_raw_max, pi->frame, fp->frame_bits)
						     : gi_extend_delta(st->prev_seq_max, pi->seq, fp->seq_bits);
			uint64_t above = (uint64_t)st->window * (pi->has_frame ? 1 : st->packets);
			if (st->epochs > 1 && (back <= 0 ? gi_abs_u64(back) <= limit : (uint64_t)back <= above) &&
			    st->max_frame < st->frame_base + st->window)
				return 1;
			/* placed by its sequence number, it would be the new epoch's first
			 * packet, index 0: one that cannot be is malformed, and must not
			 * end this epoch (gi_seq_locate checks the rest after) */
			if (!pi->has_frame && !pi->has_offset && gi_seq_misplaced(st, pi, 0) != GI_DROP__COUNT)
				return 3;
			gi_stream_resync(st, now);
		}
	}
	if (!st->started) {
		/* a new epoch.  The first one numbers ring frames as the sender does;
		 * after a restart they continue above everything used so far. */
		if (st->epochs++ == 0)
			st->frame_base = pi->has_frame && pi->frame < GI_RING_FRAME_LIMIT ? pi->frame : 0;
		st->raw_origin = st->raw_max = pi->frame;
		gi_stream_start(st, st->frame_base, pi->seq); /* the first packet starts frame frame_base */
		if (pi->has_offset && !pi->has_frame) /* a RETH anchors the epoch: its offset is its place */
			st->seq_origin -= gi_div_q(&st->div_payload, pi->byte_off);
	}

	int64_t sd = gi_extend_delta(st->seq_max, pi->seq, fp->seq_bits);
	uint64_t seq_ext = st->seq_max + (uint64_t)sd;
	/* position relative to the epoch's first packet; negative for packets
	 * reordered ahead of it, which the window (opened window - 1 frames back)
	 * may still take */
	int64_t rel;
	if (pi->has_frame) {
		int64_t fd = gi_extend_delta(st->raw_max, pi->frame, fp->frame_bits);
		rel = (int64_t)(st->raw_max - st->raw_origin + (uint64_t)fd);
		*index = pi->has_offset ? (uint32_t)gi_div_q(&st->div_payload, pi->byte_off) : pi->pkt_index;
		if (fd > 0)
			st->raw_max += (uint64_t)fd;
	} else {
		/* floor division of the signed distance n by packets */
		int64_t n = (int64_t)(seq_ext - st->seq_origin);
		uint64_t p = st->packets, m = gi_abs_u64(n);
		uint64_t q = gi_div_q(&st->div_packets, m), r = m - q * p;
		if (n >= 0) {
			rel = (int64_t)q;
			*index = (uint32_t)r;
		} else {
			q += r != 0; /* ceil(|n| / p) <= 2^63 */
			rel = (int64_t)(0 - q);
			*index = (uint32_t)(q * p - m);
		}
	}
	if (rel < 0 && gi_abs_u64(rel) > st->frame_base)
		return 1; /* below ring frame 0 */
	*frame = st->frame_base + (uint64_t)rel; /* frame_base < 2^62 + window + 1, rel < 2^63: no wrap */
	if (*frame >= GI_RING_FRAME_LIMIT)
		return 1;
	if (*frame < st->next_pub)
		return 1;
	if (sd < 0)
		GI_COUNTER_ADD(&st->c.reordered, 1);
	else
		st->seq_max = seq_ext;
	return 0;
}

/* ---- the three steps of a packet ------------------------------------------------ */

enum gi_seq_result {
	GI_SEQ_PLACE = 0, /* copy its payload, then gi_seq_commit() */
	GI_SEQ_DONE,      /* accounted for: late, duplicate, or a drop reason in *drop */
	GI_SEQ_STALL,     /* deferred only: its slot holds a frame not yet visible; retry after make_visible */
};

/*
 * rocev2.frame_end auto: which form HSB's record takes, learned from packet
 * `pi` of a started epoch whose form is still unknown (gi_seq_locate,
 * before any check that depends on it).  A record says it outright: no data
 * before it is a packet of its own, data is the embedded form.  A data
 * packet's RETH says it from the epoch's second frame on, where the two
 * forms give different places: its offset is checked against the PSN's
 * place with a record packet per frame (data_packets + 1 PSNs) and without
 * (data_packets); when exactly one explains it, that is the form.  So a
 * lost first record does not stall learning; in the first frame both
 * agree and the packet teaches nothing.  Learning "packet" keeps what the
 * epoch assumed.  Learning "embedded" takes the record's PSN out of the
 * frame: `packets` and its divisor become data_packets, and the frames
 * open in the window (opened expecting data_packets + 1) expect that many.
 * Runs in the serial steps only: the run (gi_seq_fast_place) declines
 * while the form is unknown.
 */
GI_HD static inline void gi_stream_learn_end(struct gi_stream_rt *st, const struct gi_pkt_info *pi)
{
	uint32_t embedded;

	if (pi->meta) {
		embedded = pi->payload_len != 0;
	} else if (pi->has_offset) {
		int with_record = gi_fmt_rocev2_check_va(&st->fp, pi, 1, st->seq_max, st->seq_origin,
							 st->data_packets + 1, st->payload_bytes) == 0;
		int without = gi_fmt_rocev2_check_va(&st->fp, pi, 1, st->seq_max, st->seq_origin, st->data_packets,
						     st->payload_bytes) == 0;
		if (with_record == without)
			return; /* both (the first frame) or neither (a bad VA, left to check_va) */
		embedded = without;
	} else {
		return; /* no RETH: its place is its PSN's, whichever form */
	}
	st->end_unknown = 0;
	if (!embedded)
		return;
	st->packets = st->data_packets;
	gi_div_init(&st->div_packets, st->packets);
	for (uint64_t f = st->next_pub; f <= st->max_frame && f < st->next_pub + st->window; f++) {
		struct gi_frame_slot *s = gi_stream_slot(st, f);
		if (gi_frame_is_open(s, f))
			s->expected = st->packets;
	}
}

/*
 * Step 1.  The checks that depend on the stream's state, in the serial
 * order (rocev2 VA, geometry, lateness, index), then the window push.
 * GI_SEQ_PLACE with frame and index set, or GI_SEQ_DONE (late counted here, or a
 * drop reason in *drop, counted by the caller).
 */
GI_HD static GI_INLINE int gi_seq_locate(struct gi_stream_rt *st, const struct gi_pkt_info *pi, uint64_t now,
					 uint64_t *frame, uint32_t *index, uint32_t *drop)
{
	*drop = GI_DROP__COUNT;
	if (st->format == GI_FORMAT_ROCEV2) {
		if (st->end_unknown && st->started) /* frame_end auto, not yet learned: rare, one branch */
			gi_stream_learn_end(st, pi);
		int why = gi_fmt_rocev2_check_va(&st->fp, pi, st->started, st->seq_max, st->seq_origin, st->packets,
						 st->payload_bytes);
		if (why) {
			*drop = (uint32_t)why;
			return GI_SEQ_DONE;
		}
	}
	if (pi->payload_len != st->payload_bytes && pi->payload_len != st->last_bytes &&
	    !(pi->meta && pi->payload_len == 0)) {
		*drop = GI_DROP_MALFORMED_GEOMETRY;
		return GI_SEQ_DONE;
	}
	/* A packet that names its own place (a frame number, and an index or an
	 * offset) is checked against it before gi_stream_locate(): a malformed
	 * one must not move the stream (a resync that closes every open frame,
	 * the maxima that the next good packet is measured from).  A place
	 * from the sequence number depends on the stream: checked after (and,
	 * where it would restart the stream, as the new epoch's first packet,
	 * inside gi_stream_locate). */
	if (pi->has_frame) {
		uint32_t i = pi->has_offset ? (uint32_t)gi_div_q(&st->div_payload, pi->byte_off) : pi->pkt_index;
		*drop = gi_seq_misplaced(st, pi, i);
		if (*drop != GI_DROP__COUNT)
			return GI_SEQ_DONE;
	}
	int where = gi_stream_locate(st, pi, now, frame, index);
	if (where == 3) {
		*drop = gi_seq_misplaced(st, pi, 0);
		return GI_SEQ_DONE;
	}
	if (where) {
		GI_COUNTER_ADD(&st->c.late, 1);
		return GI_SEQ_DONE;
	}
	if (!pi->has_frame) {
		*drop = gi_seq_misplaced(st, pi, *index);
		if (*drop != GI_DROP__COUNT)
			return GI_SEQ_DONE;
	}
	if (*frame >= st->next_pub + st->window)
		gi_stream_advance(st, *frame - st->window + 1, GI_FRAME_PARTIAL, now);
	return GI_SEQ_PLACE;
}

/* The frame number a frame's header carries: the sender's (its width), or the count since the epoch began. */
GI_HD static inline uint64_t gi_seq_sensor_frame(const struct gi_stream_rt *st, const struct gi_pkt_info *pi,
						 uint64_t frame)
{
	return pi->has_frame ? (pi->frame & ((st->fp.frame_bits >= 64 ? 0 : 1ull << st->fp.frame_bits) - 1))
			     : frame - st->frame_base;
}

/*
 * A packet that carries the sender's frame-end record (pi->meta), once it
 * is placed: the record's frame number extended to 64 bits (the stream's
 * newest so far the reference) and its start of frame into the slot.  The
 * record's other fields come from the packet where its payload is copied
 * (gi_frame_sender_store).  Per stream, in batch order, on every path.
 */
GI_HD static inline void gi_seq_sender(struct gi_stream_rt *st, struct gi_frame_slot *s, const struct gi_pkt_info *pi)
{
	uint64_t ext = st->sender_seen ? st->sender_max + (uint64_t)gi_extend_delta(st->sender_max, pi->frame, 16)
				       : pi->frame;
	if (!st->sender_seen || (int64_t)(ext - st->sender_max) > 0)
		st->sender_max = ext;
	st->sender_seen = 1;
	s->sender.frame_number = ext;
	s->first_ts_ns = pi->timestamp; /* the sender's PTP start of frame */
}

/* The rest of a frame-end record, read from the packet at `m` (from its start): one worker. */
GI_HD static inline void gi_frame_sender_store(struct gi_frame_slot *s, const uint8_t *pkt, uint32_t hdr_len,
					       const uint8_t *seg1, uint32_t m)
{
	s->sender.flags = gi_seg_be32(pkt, hdr_len, seg1, m + GI_HSB_META_FLAGS);
	s->sender.psn = gi_seg_be32(pkt, hdr_len, seg1, m + GI_HSB_META_PSN);
	s->sender.crc = gi_seg_be32(pkt, hdr_len, seg1, m + GI_HSB_META_CRC);
	s->sender.sof_ns = gi_seg_be64(pkt, hdr_len, seg1, m + GI_HSB_META_SOF_S) * 1000000000ull +
			   gi_seg_be32(pkt, hdr_len, seg1, m + GI_HSB_META_SOF_NS);
	s->sender.bytes_written = gi_seg_be64(pkt, hdr_len, seg1, m + GI_HSB_META_BYTES_WRITTEN);
	s->sender.meta_ns = gi_seg_be64(pkt, hdr_len, seg1, m + GI_HSB_META_META_S) * 1000000000ull +
			    gi_seg_be32(pkt, hdr_len, seg1, m + GI_HSB_META_META_NS);
	s->sender.kind = GI_SENDER_HSB;
}

/*
 * Step 2.  Open the packet's frame if it is not, and claim its bit: the
 * first copy is placed, any other is a duplicate (counted here).  One
 * writer per stream: a plain read-modify-write of the bitmap word.
 */
GI_HD static GI_INLINE int gi_seq_open(struct gi_stream_rt *st, const struct gi_pkt_info *pi, uint64_t frame,
				       uint32_t index, uint64_t now, struct gi_frame_slot **slot)
{
	struct gi_frame_slot *s = gi_stream_slot(st, frame);

	if (!gi_frame_is_open(s, frame)) {
		/* deferred: its previous frame is final but not yet visible; it must
		 * not be overwritten before the batch's payloads and commit are in */
		if (st->defer && st->pend_n && (s->seq & 1) && s->frame != frame) {
			st->stall = 1;
			return GI_SEQ_STALL;
		}
		gi_frame_open(st, s, frame, pi->sensor_id, gi_seq_sensor_frame(st, pi, frame), pi->timestamp, now);
	}
	uint64_t bit = 1ull << (index & 63);
	uint64_t *word = &gi_frame_bitmap(s)[index >> 6];
	uint64_t old = *word;
	if (old & bit) {
		GI_COUNTER_ADD(&st->c.duplicates, 1);
		return GI_SEQ_DONE;
	}
	*word = old | bit;
	gi_stream_span(st, frame);
	*slot = s;
	return GI_SEQ_PLACE;
}

/*
 * Step 3.  The packet's payload is in (serial), or will be before the
 * frame becomes visible (deferred): count it, then end its frame if the
 * sender says so, or publish the complete frames at the window's head.
 */
GI_HD static inline void gi_seq_commit(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame,
				       uint32_t index, uint32_t len, uint32_t closes, uint64_t now)
{
	s->received++;
	if (index < st->data_packets)
		GI_COUNTER_ADD(&st->c.packets, 1);
	else
		GI_COUNTER_ADD(&st->c.metadata, 1); /* a frame-end packet: the sender's record, no data */
	GI_COUNTER_ADD(&st->c.bytes, len);
	if (closes && frame >= st->next_pub)
		gi_stream_advance(st, frame + 1, GI_FRAME_PARTIAL, now); /* the sender says it is done */
	else if (s->received == s->expected)
		gi_stream_publish_ready(st, now); /* returns at once unless the head frame is complete */
}

GI_EXTERN_C_END

#endif /* GI_STREAM_SEQ_H */
