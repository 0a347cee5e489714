/*
 * phase_sequence_solo.h — phase 2 for a group of one stream (batch.h,
 * phase_sequence.h): 2b per frame of the run, the rest in parallel.
 *
 * With rte_flow steering each stream to its own queue, a group (a CTA)
 * has one stream, and every parsed record of a batch is that stream's.
 * Then 2a's ranks and predecessors are one block scan of the records
 * (ballots on the GPU, gi_solo_scan_serial() here), a second scan lists
 * the records that start each frame of the run (touched[]), and 2b works
 * per frame, not per record: window push, open, its count, then publish
 * or close, exactly as gi_seq_fast_commit() does, a group of frames at a
 * time: one worker enters them, the lanes of its warp fill them
 * (gi_solo_group_lanes).  Each record then marks itself placed and sets
 * its bit in its frame's bitmap in parallel (gi_phase_solo_place(), an
 * atomic OR: several records share a word).  The bits go in after the
 * frame's publication was decided, which reads counts, never bits; phase
 * 4 copies them to the mirror after phase 3, as before.
 */
#ifndef GI_PHASE_SEQUENCE_SOLO_H
#define GI_PHASE_SEQUENCE_SOLO_H

#include "phase_sequence.h"

GI_EXTERN_C_BEGIN

/* Block scan by one worker: each parsed record's rank and predecessor, the total and the last. */
GI_HD static inline void gi_solo_scan_serial(struct gi_batch_hdr *h)
{
	struct gi_rec *rec = gi_batch_recs(h);
	uint32_t n = 0, last = GI_REC_NONE;

	for (uint32_t i = 0; i < h->n; i++) {
		if (rec[i].state != GI_REC_PARSED)
			continue;
		rec[i].rank = (uint16_t)n++;
		rec[i].prev = (uint16_t)last;
		last = i;
	}
	h->solo_total = n;
	h->solo_last = last;
	h->ranked = 1;
}

/* Is record r the first of its frame in the run?  (After 2a.) */
GI_HD static inline uint32_t gi_solo_starts_frame(const struct gi_rec *rec, const struct gi_rec *r)
{
	return r->state == GI_REC_PARSED && (r->prev == GI_REC_NONE || rec[r->prev].frame != r->frame);
}

/* The run's frame starts, in order, into touched[], by one worker. */
GI_HD static inline void gi_solo_frames_serial(struct gi_batch_hdr *h, uint32_t max_pkts)
{
	struct gi_rec *rec = gi_batch_recs(h);
	uint16_t *starts = gi_batch_touched(h, max_pkts);
	uint32_t k = 0;

	for (uint32_t i = 0; i < h->n; i++)
		if (gi_solo_starts_frame(rec, &rec[i]))
			starts[k++] = (uint16_t)i;
	h->solo_frames = k;
}

/*
 * 2b for the group's one stream (in deferred mode), per frame of the run:
 * gi_solo_enter(), then gi_solo_finish().
 * The run's stall (a frame whose slot is busy) leaves the record starting
 * that frame and the later ones to the serial way next round;
 * h->solo_limit says which ranks gi_phase_solo_place() then places.
 *
 * The frames go in groups that open with one system fence between every
 * odd seqlock word and any slot byte (gi_frame_open's three parts): pass
 * 1 takes each frame up to its open's entry, pass 2 fills the slots and
 * ends the frames, in order.  A group ends before a frame whose window
 * push or whose slot could depend on what pass 2 does to the frames
 * before it: one that needs a push (it reads the earlier frames' ends;
 * it starts a group instead), one n_slots or more past the group's first
 * (the same slot), or one within a window or n_slots of next_frame no
 * longer (its slot's old frame might not be final yet).  Otherwise pass
 * 2 cannot change what pass 1 saw of a later frame: its slot is another,
 * and the frame that slot held is below next_frame, so final, and pass 2
 * touches only frames from next_frame on.  So every decision is the one
 * the frame-by-frame order makes (test_phased compares with the serial
 * path), at one fence per group, most often one per batch, where a
 * fence per frame opened was thread 0's largest cost per frame.
 *
 * Payloads beside pass 2.  Once the first group's pass 1 is done, every
 * frame of that group is open or entered (its odd words fenced), and
 * pass 2 writes only slot headers, bitmaps and stream state: the payload
 * bytes of the records up to the group's end (ranks below h->solo_early)
 * may be copied meanwhile, by the workers pass 2 leaves idle (the GPU:
 * every warp but thread 0's; `early`: the backend has such workers, else
 * solo_early stays 0 and phase 3 copies every payload).  Pass 2 writes no
 * record meanwhile (the stalled one's state waits for
 * gi_phase_solo_place).  Only when the group has GI_SOLO_EARLY_FRAMES
 * frames or more: pass 2 costs thread 0 about 1.6 to 2.2 µs a frame on an
 * H200 (bench/gpu_model.md), a batch of 64 payloads of 1 KiB takes 2.4 to
 * 4 µs to copy on one warp fewer than the CTA has, and one whose run is a
 * single frame would wait longer for the copy than it saves; 256 payloads
 * of 64 B (four frames) copy well inside the four frames' pass 2.
 */
#define GI_SOLO_GROUP 32u       /* frames per group at most (a bit each in a mask) */
#define GI_SOLO_EARLY_FRAMES 2u /* frames in the first group for its payloads to be copied beside pass 2 */
#define GI_SOLO_LANE_FRAMES 2u  /* frames in a group for the lanes to fill it (gi_solo_group_lanes) */

/* Pass 1 of the group from frame k of the run: returns its end e; its opens in *opening, a stall at e in *stalled. */
GI_HD static inline uint32_t gi_solo_group_enter(struct gi_stream_rt *st, const struct gi_batch_hdr *h,
						 const struct gi_rec *rec, const uint16_t *starts, uint32_t k,
						 uint64_t now, uint32_t *opening, uint32_t *stalled)
{
	const uint64_t n_slots = st->div_slots.d;
	const uint64_t first = rec[starts[k]].frame;
	uint32_t e = k;

	*opening = 0;
	*stalled = 0;
	for (; e < h->solo_frames && e - k < GI_SOLO_GROUP; e++) {
		const struct gi_rec *r = &rec[starts[e]];
		const uint64_t frame = r->frame;
		if (e > k && (frame - st->next_pub >= GI_MIN((uint64_t)st->window, n_slots) || frame - first >= n_slots))
			break;
		/* gi_seq_locate()'s window push, at the frame's first packet */
		if (frame - st->next_pub >= st->window)
			gi_stream_advance(st, frame - st->window + 1, GI_FRAME_PARTIAL, now);
		struct gi_frame_slot *s = gi_stream_slot(st, frame);
		if (gi_frame_is_open(s, frame))
			continue;
		/* gi_seq_open()'s stall: the slot's frame is final but not yet visible */
		if (st->pend_n && (s->seq & 1) && s->frame != frame) {
			*stalled = 1;
			break;
		}
		gi_frame_open_enter(st, s, frame);
		*opening |= 1u << (e - k);
	}
	if (*opening)
		GI_FENCE_RELEASE();
	return e;
}

/* The group's j-th frame of the run: its first record, its last (*end) and its packets in the run (*n). */
GI_HD static inline const struct gi_rec *gi_solo_frame(const struct gi_batch_hdr *h, const struct gi_rec *rec,
						       const uint16_t *starts, uint32_t j, const struct gi_rec **end,
						       uint32_t *n)
{
	const struct gi_rec *r = &rec[starts[j]];
	const struct gi_rec *next = j + 1 < h->solo_frames ? &rec[starts[j + 1]] : NULL;
	*end = next ? &rec[next->prev] : &rec[h->solo_last];
	*n = (next ? next->rank : h->solo_total) - r->rank;
	return r;
}

/* Pass 2 of the group [k, e) of the run: the slots of the frames it opened, the counts, the ends. */
GI_HD static inline void gi_solo_group_fill(struct gi_stream_rt *st, const struct gi_batch_hdr *h,
					    const struct gi_rec *rec, const uint16_t *starts, uint32_t k, uint32_t e,
					    uint32_t opening, uint64_t now)
{
	for (uint32_t j = k; j < e; j++) {
		const struct gi_rec *end;
		uint32_t n;
		const struct gi_rec *r = gi_solo_frame(h, rec, starts, j, &end, &n);
		const uint64_t frame = r->frame;
		struct gi_frame_slot *s = gi_stream_slot(st, frame);
		if (opening & (1u << (j - k)))
			gi_frame_open_fill(st, s, frame, r->pi.sensor_id, gi_seq_sensor_frame(st, &r->pi, frame),
					   r->pi.timestamp, now);
		gi_stream_span(st, frame);
		if (end->pi.meta) /* a frame's record is its last index: the frame's last in the run */
			gi_seq_sender(st, s, &end->pi);
		gi_seq_fast_frame_end(st, s, frame, n, end->index, NULL, 0, end->pi.closes_frame,
				      now); /* bits: in parallel, gi_phase_solo_place */
	}
}

/*
 * Would the lanes fill the group [k, e) (gi_solo_group_lanes), as far as
 * its ends tell: two frames or more, following one another from
 * next_frame on (a run's frames strictly increase, so its first and last
 * say), none past the first seen before.  The lanes check the rest, each
 * frame's count; gi_solo_enter() asks it of the first group, whose
 * payloads are copied beside pass 2 only where pass 2 is thread 0's alone
 * (a group the lanes fill is done long before 7 warps copy its payloads:
 * bench/gpu_model.md).
 */
GI_HD static inline uint32_t gi_solo_group_orderly(const struct gi_stream_rt *st, const struct gi_rec *rec,
						   const uint16_t *starts, uint32_t k, uint32_t e)
{
	const uint64_t first = rec[starts[k]].frame;
	return e - k >= GI_SOLO_LANE_FRAMES && st->defer && st->next_pub == first && st->max_frame <= first &&
	       rec[starts[e - 1]].frame - first == e - 1 - k;
}

/*
 * The first group's pass 1 (one worker).  Its end, opens and stall wait in
 * h for gi_solo_finish(); h->solo_early: the records whose payloads may be
 * copied before gi_solo_finish() is done (above), with `early` workers.
 */
GI_HD static inline void gi_solo_enter(struct gi_stream_rt *st, struct gi_batch_hdr *h, uint32_t max_pkts,
				       uint64_t now, uint32_t early)
{
	const struct gi_rec *rec = gi_batch_recs(h);
	const uint16_t *starts = gi_batch_touched(h, max_pkts);

	h->solo_limit = h->solo_total;
	h->solo_early = 0;
	h->solo_e = 0;
	h->solo_opening = 0;
	h->solo_stalled = 0;
	h->solo_stall_rec = GI_REC_NONE;
	if (h->solo_frames == 0)
		return;
	h->solo_e = gi_solo_group_enter(st, h, rec, starts, 0, now, &h->solo_opening, &h->solo_stalled);
	if (early && h->solo_e >= GI_SOLO_EARLY_FRAMES && !gi_solo_group_orderly(st, rec, starts, 0, h->solo_e))
		h->solo_early = h->solo_e < h->solo_frames ? rec[starts[h->solo_e]].rank : h->solo_total;
	h->early_copied = h->solo_early;
}

/*
 * Pass 2 of the group [k, e) by the lanes of one warp, frame k + lane + i *
 * nlanes each (the host: one lane, every frame), where the serial pass
 * would only confirm what the frames' order says: the group's frames
 * follow one another from next_frame on, none past its first was seen
 * before (so no frame's publish looks beyond that frame, gi_stream_
 * publish_ready), and every frame but the last completes, the last too or
 * is not closed by its sender.  Then the frames that complete are
 * published in order, each as gi_frame_publish() would, and the lanes'
 * counts summed: the slots, counters and stream words gi_solo_group_fill()
 * leaves, which lane 0 runs instead for any other group, and for a group
 * of fewer than GI_SOLO_LANE_FRAMES frames, where the sums would cost more
 * than the lanes save.  Every lane calls this, converged; it returns so.
 * Thread 0's frames were its largest cost a batch once the fences and
 * chains were gone: 2.2 µs each on an H200 (bench/gpu_model.md).
 */
GI_STATIC_ASSERT(GI_SOLO_GROUP <= 32, "a group's frames are a lane each of one warp");

GI_HD static inline void gi_solo_group_lanes(struct gi_stream_rt *st, struct gi_batch_hdr *h, const struct gi_rec *rec,
					     const uint16_t *starts, uint32_t k, uint32_t e, uint32_t opening,
					     uint64_t now, uint32_t lane, uint32_t nlanes)
{
	const struct gi_rec *end;
	uint32_t n;
	const uint64_t first = rec[starts[k]].frame;
	uint32_t ok = gi_solo_group_orderly(st, rec, starts, k, e);

	for (uint32_t j = k + lane; ok && j < e; j += nlanes) {
		const struct gi_rec *r = gi_solo_frame(h, rec, starts, j, &end, &n);
		const struct gi_frame_slot *s = gi_stream_slot(st, r->frame);
		const uint32_t opens = (opening >> (j - k)) & 1;
		const uint32_t received = (opens ? 0 : s->received) + n, expected = opens ? st->packets : s->expected;
		ok = received == expected || (j + 1 == e && !end->pi.closes_frame);
	}
	if (!gi_warp_all(ok)) {
		if (lane == 0)
			gi_solo_group_fill(st, h, rec, starts, k, e, opening, now);
		GI_WARP_SYNC();
		return;
	}

	uint64_t packets = 0, bytes = 0;
	uint32_t metas = 0, senders = 0, done = 0;
	for (uint32_t base = k; base < e; base += nlanes) { /* the same turns for every lane: its collectives */
		const uint32_t j = base + lane;
		uint64_t lat = 0;
		uint32_t fin = 0;
		if (j < e) {
			const struct gi_rec *r = gi_solo_frame(h, rec, starts, j, &end, &n);
			const uint64_t frame = r->frame;
			struct gi_frame_slot *s = gi_stream_slot(st, frame);
			if ((opening >> (j - k)) & 1)
				gi_frame_open_fill(st, s, frame, r->pi.sensor_id, gi_seq_sensor_frame(st, &r->pi, frame),
						   r->pi.timestamp, now);
			uint32_t meta;
			bytes += gi_stream_run_bytes(st, n, end->index, &meta);
			packets += n - meta;
			metas += meta;
			senders |= (uint32_t)end->pi.meta << (j - k);
			const uint32_t received = s->received + n;
			s->received = received;
			if (received == s->expected) { /* gi_frame_publish(): complete, deferred */
				fin = 1;
				lat = now > s->first_rx_ns ? now - s->first_rx_ns : 0;
				s->state = GI_FRAME_COMPLETE;
				s->publish_ns = now;
				done++;
			}
		}
		gi_hist_observe_lanes(&st->frame_latency, lat, fin, lane);
	}
	packets = gi_warp_sum_u64(packets);
	bytes = gi_warp_sum_u64(bytes);
	metas = (uint32_t)gi_warp_sum_u64(metas);
	done = (uint32_t)gi_warp_sum_u64(done);
	senders = gi_warp_or_u32(senders);
	GI_WARP_SYNC(); /* every lane's slot stores before lane 0's: a sender's start of frame replaces the open's */
	if (lane == 0) {
		for (uint32_t m = senders; m; m &= m - 1) { /* in order: each extends the sender's frame number */
			const struct gi_rec *r = gi_solo_frame(h, rec, starts, k + gi_lowest_u32(m), &end, &n);
			gi_seq_sender(st, gi_stream_slot(st, r->frame), &end->pi);
		}
		gi_stream_span(st, first); /* the frames only grow: the first and the last span them all */
		gi_stream_span(st, rec[starts[e - 1]].frame);
		GI_COUNTER_ADD(&st->c.packets, packets);
		if (metas)
			GI_COUNTER_ADD(&st->c.metadata, metas);
		GI_COUNTER_ADD(&st->c.bytes, bytes);
		if (done) { /* frames first .. first + done - 1, published in order */
			GI_COUNTER_ADD(&st->c.frames[GI_FRAMES_COMPLETE], done);
			gi_stream_pend(st, first, done);
			gi_stream_set_next(st, first + done);
		}
		h->lane_frames += e - k;
	}
	GI_WARP_SYNC();
}

/*
 * The rest of 2b, by lane `lane` of the `nlanes` of one warp (the worker's
 * own; the host: one lane): the first group's pass 2, then the run's later
 * groups, each entered by lane 0 and filled by the lanes together
 * (gi_solo_group_lanes).  Every lane calls it; lane 0's result is the
 * run's: 1 when it stalled.
 */
GI_HD static inline uint32_t gi_solo_finish(struct gi_stream_rt *st, struct gi_batch_hdr *h, uint32_t max_pkts,
					    uint64_t now, uint32_t lane, uint32_t nlanes)
{
	const struct gi_rec *rec = gi_batch_recs(h);
	const uint16_t *starts = gi_batch_touched(h, max_pkts);
	const struct gi_rec *lr = h->solo_last == GI_REC_NONE ? NULL : &rec[h->solo_last]; /* the last located */
	uint32_t k = 0;

	while (k < h->solo_frames) {
		if (k > 0 && lane == 0) {
			uint32_t opening, stalled;
			h->solo_e = gi_solo_group_enter(st, h, rec, starts, k, now, &opening, &stalled);
			h->solo_opening = opening;
			h->solo_stalled = stalled;
		}
		GI_WARP_SYNC(); /* the group's end, opens and stall for every lane */
		const uint32_t e = h->solo_e, stalled = h->solo_stalled;
		gi_solo_group_lanes(st, h, rec, starts, k, e, h->solo_opening, now, lane, nlanes);
		if (stalled) { /* the record starting frame e: LOCATED by gi_phase_solo_place */
			const struct gi_rec *r = &rec[starts[e]];
			if (lane == 0) {
				st->stall = 1;
				h->solo_limit = r->rank;
				h->solo_stall_rec = starts[e];
			}
			lr = r;
			break;
		}
		k = e;
	}
	if (lane != 0 || !lr)
		return 0;
	st->seq_max += (uint64_t)lr->rank + 1; /* every step was +1 */
	if (lr->pi.has_frame) {
		uint64_t raw = st->raw_origin + (lr->frame - st->frame_base);
		if ((int64_t)(raw - st->raw_max) > 0)
			st->raw_max = raw;
	}
	return st->stall;
}

/*
 * After gi_solo_finish(), worker w of nw: its records of the run placed,
 * their bits set; the stalled frame's first record located.
 */
GI_HD static inline void gi_phase_solo_place(const struct gi_exec_ctx *ctx, struct gi_batch_hdr *h, uint32_t w,
					     uint32_t nw)
{
	struct gi_rec *rec = gi_batch_recs(h);
	struct gi_stream_geom geo; /* the group's one stream; its slots a frame at a time */
	gi_stream_geom_none(&geo);

	for (uint32_t i = w; i < h->n; i += nw) {
		struct gi_rec *r = &rec[i];
		if (r->state != GI_REC_PARSED)
			continue;
		if (r->rank >= h->solo_limit) { /* the stalled frame's first record waits, located, for the next round */
			if (i == h->solo_stall_rec)
				r->state = GI_REC_LOCATED;
			continue;
		}
		gi_stream_geom_use(&geo, ctx, r->stream);
		uint64_t *word = &gi_frame_bitmap(gi_geom_slot(&geo, r->frame))[r->index >> 6];
		/* Atomic among this CTA's threads, which is all it must be: the CTA
		 * is the frame's only writer, consumers only read.  On a frame ring
		 * in host-mapped memory (backend gpudev) CUDA's atomics are atomic
		 * for the device, not for the host: enough here; slower (a PCIe
		 * round trip each) than in device memory, where backend cuda puts it. */
		GI_ATOMIC_OR_U64(word, 1ull << (r->index & 63));
		r->state = GI_REC_PLACE;
	}
}

GI_EXTERN_C_END

#endif /* GI_PHASE_SEQUENCE_SOLO_H */
