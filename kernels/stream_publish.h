/*
 * stream_publish.h — how a stream's frames become final and visible:
 * next_frame, the consumers' mirror, the sender's frame CRC check, the
 * seqlock publication (per frame, or deferred to the batch's end).
 *
 * The first half of the state machine stream.h begins (its types and slot
 * helpers); stream_seq.h, the second, moves the window with these.
 * Includers: stream_seq.h, and whoever publishes without sequencing.
 */
#ifndef GI_STREAM_PUBLISH_H
#define GI_STREAM_PUBLISH_H

#include "stream.h"

GI_EXTERN_C_BEGIN

/* ---- visibility --------------------------------------------------------------- */

/* Consumers learn that frames below `next` are final (now, or at the batch's end when deferred). */
GI_HD static inline void gi_stream_set_next(struct gi_stream_rt *st, uint64_t next)
{
	st->next_pub = next;
	if (st->defer)
		return;
	st->vis_next = next;
	GI_STORE_RELEASE_U64(&st->ring->next_frame, next);
	if (st->mirror)
		GI_STORE_RELEASE_U64(&st->mirror->next_frame, next);
}


/*
 * The slot's metadata and bitmap to the consumers' mirror; its seq word
 * last.  For all the compiler knows the mirror aliases the slot, so field
 * by field each load waited for the store before it: on a GPU an L2 round
 * trip apiece, a dozen in a chain for every frame a commit made visible.
 * The loads go in four rounds instead, each loaded whole before it is
 * stored: the scalar fields, the sender's record, the NIC times, then the
 * bitmap (one word for up to 64 packets).  One round for everything kept
 * 25 words live and made ptxas spill across k_persistent (sm_90: 180 ->
 * 868 bytes of spill loads); these rounds spill nothing more.
 */
GI_HD static inline void gi_mirror_copy(struct gi_stream_rt *st, const struct gi_frame_slot *s)
{
	const uint64_t frame = s->frame, first_ts_ns = s->first_ts_ns, first_rx_ns = s->first_rx_ns;
	const uint64_t publish_ns = s->publish_ns, sensor_frame = s->sensor_frame;
	const uint32_t expected = s->expected, received = s->received, state = s->state, sensor_id = s->sensor_id;
	struct gi_frame_slot *m = gi_stream_mirror_slot(st, frame);
	m->frame = frame;
	m->first_ts_ns = first_ts_ns;
	m->first_rx_ns = first_rx_ns;
	m->publish_ns = publish_ns;
	m->expected = expected;
	m->received = received;
	m->state = state;
	m->sensor_id = sensor_id;
	m->sensor_frame = sensor_frame;

	m->sender = s->sender; /* a round of its own: the compiler loads an aggregate whole */
	const uint64_t first_nic_ns = s->first_nic_ns, last_nic_ns = s->last_nic_ns;
	m->first_nic_ns = first_nic_ns;
	m->last_nic_ns = last_nic_ns;
	const uint64_t *bm = (const uint64_t *)(s + 1);
	uint64_t *mbm = gi_frame_bitmap(m);
	for (uint32_t w = 0; w < gi_frame_bitmap_words(gi_stream_slot_packets(st)); w++)
		mbm[w] = bm[w];
}

/*
 * The same copy by the lanes of a warp (the GPU's commit, a stream to a
 * warp): lane `lane` of `nlanes` stores every nlanes-th 8-byte word of the
 * slot's header after seq (up to its padding) and of its bitmap, all the
 * lanes' stores at once.  On an H200 the commit cost 2.2 µs a frame with
 * one thread storing each word to host memory as its own write, about 20
 * a frame; a warp's lanes storing neighbouring words should make a few
 * writes (not yet measured: bench/gpu_model.md).  The caller syncs the lanes before (their reads of
 * the slot after its writes) and after (every lane's stores before the
 * fence that releases them).  One thread alone keeps gi_mirror_copy()'s
 * rounds (pass 0), which need no lanes to be fast.
 */
#define GI_SLOT_HEADER_WORDS (offsetof(struct gi_frame_slot, pad) / 8) /* seq .. last_nic_ns */
GI_STATIC_ASSERT(offsetof(struct gi_frame_slot, pad) % 8 == 0, "the slot header copies in 8-byte words");
GI_HD static inline void gi_mirror_copy_part(struct gi_stream_rt *st, const struct gi_frame_slot *s, uint32_t lane,
					     uint32_t nlanes)
{
	const uint32_t head = (uint32_t)GI_SLOT_HEADER_WORDS - 1; /* every word but seq */
	const uint32_t n = head + gi_frame_bitmap_words(gi_stream_slot_packets(st));
	struct gi_frame_slot *m = gi_stream_mirror_slot(st, s->frame);
	const uint64_t *src = (const uint64_t *)s + 1, *sbm = (const uint64_t *)(s + 1);
	uint64_t *dst = (uint64_t *)m + 1, *dbm = gi_frame_bitmap(m);
	for (uint32_t i = lane; i < n; i += nlanes) {
		if (i < head)
			dst[i] = src[i];
		else
			dbm[i - head] = sbm[i - head];
	}
}

/* ---- the sender's frame CRC (rocev2.frame_crc: verify) ---------------------------- */

/* Does the stream check its frames against the sender's record (rocev2.frame_crc: verify)? */
GI_HD static inline int gi_stream_verifies(const struct gi_stream_rt *st)
{
	return st->format == GI_FORMAT_ROCEV2 && gi_fmt_rocev2(&st->fp).frame_crc;
}

/* Does final frame s get checked against its sender record, and is it not yet? */
GI_HD static inline int gi_frame_verify_wanted(const struct gi_stream_rt *st, const struct gi_frame_slot *s)
{
	return gi_stream_verifies(st) && s->state == GI_FRAME_COMPLETE && s->sender.kind == GI_SENDER_HSB &&
	       s->sender.crc_state == GI_CRC_UNCHECKED;
}

GI_HD static inline uint64_t gi_stream_frame_bytes(const struct gi_stream_rt *st)
{
	return (uint64_t)(st->data_packets - 1) * st->payload_bytes + st->last_bytes;
}

/*
 * Worker w of nw: its slice of frame s's bytes, the register from 0 over
 * it shifted past the bytes after it, XORed into crc_acc (zeroed when the
 * frame opened).  Every worker of the frame calls this once, then a
 * barrier, then gi_frame_verify_end().  On the host one worker takes the
 * whole frame at the library's speed.
 */
GI_HD static inline void gi_frame_verify_part(const struct gi_stream_rt *st, struct gi_frame_slot *s, uint32_t w,
					      uint32_t nw, const uint32_t *t8)
{
	uint64_t fb = gi_stream_frame_bytes(st);
	uint64_t per = (fb / nw + 8) & ~7ull; /* eight-byte steps for slice-by-8 */
	uint64_t lo = (uint64_t)w * per, hi = GI_MIN(fb, lo + per);

	if (lo >= hi)
		return;
	uint32_t r = gi_crc32_bytes(0, gi_stream_payload(st, s, 0) + lo, hi - lo, t8);
	GI_ATOMIC_XOR_U32(&s->sender.crc_acc, gi_crc32_shift(r, fb - hi));
}

/*
 * One worker, after every part: the frame's CRC from the register ~0 (what
 * HSB sends: ~crc32 in zlib's terms), against the record; the bytes the
 * record says were written against the frame's.  A mismatch makes the
 * frame corrupt, and it is counted so, not as complete.
 */
GI_HD static inline void gi_frame_verify_end(struct gi_stream_rt *st, struct gi_frame_slot *s)
{
	uint64_t fb = gi_stream_frame_bytes(st);
	uint32_t crc = gi_crc32_shift(0xffffffffu, fb) ^ s->sender.crc_acc;

	s->sender.crc_state = crc == s->sender.crc ? GI_CRC_OK : GI_CRC_MISMATCH;
	if (s->sender.crc_state == GI_CRC_OK && s->sender.bytes_written == fb)
		return;
	s->state = GI_FRAME_CORRUPT;
	GI_COUNTER_ADD(&st->c.frames[GI_FRAMES_COMPLETE], (uint64_t)0 - 1u);
	GI_COUNTER_ADD(&st->c.frames[GI_FRAMES_CORRUPT], 1);
}

/* One worker checks frame s: its CRC summed by the CTA already (`parts`), or alone now. */
GI_HD static inline void gi_frame_verify(struct gi_stream_rt *st, struct gi_frame_slot *s, uint32_t parts)
{
	if (!gi_frame_verify_wanted(st, s))
		return;
	if (!parts)
		gi_frame_verify_part(st, s, 0, 1, NULL);
	gi_frame_verify_end(st, s);
}

/* ---- the typed tensor (the stream's `tensor:`, tensor.h) ----------------------------- */

/*
 * Worker w of nw: its part of final frame s's tensor, from the payload and,
 * when packets are missing (and `missing` is not keep), the bitmap.  Every
 * worker of the frame calls this once; on the host one does the frame.  Out
 * of line: a stream without a tensor never calls it, and the frame-publish
 * path it sits on stays as small as it was.
 */
GI_HD static GI_NOINLINE void gi_frame_tensor_part(const struct gi_stream_rt *st, struct gi_frame_slot *s, uint32_t w,
						   uint32_t nw)
{
	const struct gi_tensor_rt *t = &st->tensor;
	const uint64_t *bm = t->missing != GI_TM_KEEP && s->received != s->expected ? gi_frame_bitmap(s) : NULL;

	gi_tensor_convert(t, gi_stream_payload(st, s, 0), (uint8_t *)s + t->off, bm, &st->div_payload, w, nw);
}

/*
 * Last minus first NIC time, once the frame's packets are all placed (the
 * phased path publishes in phase 2, before phase 3 notes their times):
 * where it becomes visible.  One writer per stream, like the other hists.
 */
GI_HD static inline void gi_frame_observe_nic(struct gi_stream_rt *st, const struct gi_frame_slot *s)
{
	if (st->nic_ts == GI_NIC_TS_REALTIME && s->first_nic_ns) /* nanoseconds: seconds on the page */
		gi_hist_observe(&st->frame_assembly, s->last_nic_ns - s->first_nic_ns);
}

/* A final frame becomes readable: every payload byte, bitmap bit and header word before its even seq. */
GI_HD static inline void gi_frame_make_visible(struct gi_stream_rt *st, struct gi_frame_slot *s)
{
	gi_frame_observe_nic(st, s);
	if (st->tensor.sample != GI_TS_NONE)
		gi_frame_tensor_part(st, s, 0, 1);
	gi_frame_verify(st, s, 0);
	if (st->mirror) {
		gi_mirror_copy(st, s);
		GI_STORE_RELEASE_U64(&gi_stream_mirror_slot(st, s->frame)->seq, 2 * s->frame + 2);
	}
	GI_STORE_RELEASE_U64(&s->seq, 2 * s->frame + 2);
}

/* Frames lo .. lo + n - 1 became final in a deferred round: still invisible, in [pend_lo, pend_hi]. */
GI_HD static inline void gi_stream_pend(struct gi_stream_rt *st, uint64_t lo, uint32_t n)
{
	if (st->pend_n == 0)
		st->pend_lo = st->pend_hi = lo;
	st->pend_lo = GI_MIN(st->pend_lo, lo);
	st->pend_hi = GI_MAX(st->pend_hi, lo + n - 1);
	st->pend_n += n;
}

/*
 * Make frame f final: its state, the frame counters, its loss and latency.
 * Visible to consumers at once, or — deferred — by gi_stream_make_visible().
 */
GI_HD static inline void gi_frame_publish(struct gi_stream_rt *st, struct gi_frame_slot *s, uint32_t state,
					  uint64_t now)
{
	/* the slot's words before any store (gi_mirror_copy says why), the slot's stores last */
	const uint32_t received = s->received, expected = s->expected;
	const uint64_t frame = s->frame, first_rx_ns = s->first_rx_ns;
	const uint32_t defer = st->defer;
	const uint32_t kind = received == expected ? GI_FRAMES_COMPLETE
			: state == GI_FRAME_TIMED_OUT ? GI_FRAMES_TIMED_OUT : GI_FRAMES_PARTIAL;

	GI_COUNTER_ADD(&st->c.frames[kind], 1);
	GI_COUNTER_ADD(&st->c.lost, expected - received);
	gi_hist_observe(&st->frame_latency, now > first_rx_ns ? now - first_rx_ns : 0);
	if (defer)
		gi_stream_pend(st, frame, 1);
	s->state = received == expected ? (uint32_t)GI_FRAME_COMPLETE : state;
	s->publish_ns = now;
	if (!defer)
		gi_frame_make_visible(st, s);
}

/*
 * The frames finalised in a deferred round that are still invisible: pass
 * 0 (worker 0 of nw) writes their tensors unless pass 3 did, checks them
 * against their sender's record if asked (finishing what pass 2 began)
 * and, with nw 1, copies their metadata to the mirror; with nw lanes of one
 * warp, pass 4 copies it after pass 0, lane w of nw; pass 1 stores their
 * even seqlock words; pass 2,
 * before them, is worker w of nw summing its part of each frame's CRC (the
 * GPU's CTA, t8 its tables), and pass 3 worker w of nw writing its part of
 * each frame's tensor.
 * Pending frames sit in distinct slots (gi_seq_open() stalls rather than
 * reuse one), so a scan of [pend_lo, pend_hi] — or of every slot when a
 * resync spread them further apart — finds each exactly once; no pass
 * changes what the scan reads, so every pass finds the same ones.
 */
GI_HD static inline void gi_pending_frame(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame, int pass,
					 uint32_t w, uint32_t nw, const uint32_t *t8)
{
	if (pass == 2) {
		if (gi_frame_verify_wanted(st, s))
			gi_frame_verify_part(st, s, w, nw, t8);
	} else if (pass == 3) {
		gi_frame_tensor_part(st, s, w, nw);
	} else if (pass == 0) {
		if (st->tensor.sample != GI_TS_NONE && !st->tensor_parts)
			gi_frame_tensor_part(st, s, 0, 1);
		gi_frame_verify(st, s, st->crc_parts); /* pass 2's parts summed, or the whole frame now */
		gi_frame_observe_nic(st, s);
		if (st->mirror && nw == 1)
			gi_mirror_copy(st, s);
	} else if (pass == 4) {
		gi_mirror_copy_part(st, s, w, nw);
	} else {
		if (st->mirror)
			GI_STORE_RELAXED_U64(&gi_stream_mirror_slot(st, frame)->seq, 2 * frame + 2);
		GI_STORE_RELAXED_U64(&s->seq, 2 * frame + 2);
	}
}

/* Is slot s's frame pending (final, still odd), as frame `f` (range) or as whatever frame it holds?  Its words
 * loaded together, tested after: one load's latency, not three in a row. */
GI_HD static inline int gi_frame_pending(const struct gi_frame_slot *s, uint64_t f, int range)
{
	const uint32_t state = s->state;
	const uint64_t frame = s->frame, seq = s->seq;
	return (state != GI_FRAME_FILLING) & (range ? (frame == f) & (seq == 2 * f + 1) : (seq & 1) != 0);
}

/*
 * The frames pending in a span of at most 32 from pend_lo (the common
 * case: a round publishes a few frames in a row), as bits of pend_lo +
 * bit, found once for every pass: lane `lane` of the `nlanes` of one warp
 * tests its frames, the warp ORs them (every lane calls; the host: one
 * lane, every frame).  *few 0: more apart, the passes scan.
 */
GI_HD static inline uint32_t gi_stream_pending_mask(const struct gi_stream_rt *st, uint32_t lane, uint32_t nlanes,
						    uint32_t *few)
{
	const uint64_t span = st->pend_hi - st->pend_lo;
	uint32_t m = 0;

	*few = span < st->div_slots.d && span < 32;
	for (uint64_t k = lane; *few && k <= span; k += nlanes)
		m |= (uint32_t)gi_frame_pending(gi_stream_slot(st, st->pend_lo + k), st->pend_lo + k, 1) << k;
	return nlanes > 1 ? gi_warp_or_u32(m) : m;
}

GI_HD static inline void gi_stream_pending_pass(struct gi_stream_rt *st, int pass, uint32_t w, uint32_t nw,
						const uint32_t *t8, const uint32_t *mask)
{
	const uint64_t n_slots = st->div_slots.d;
	const int range = st->pend_hi - st->pend_lo < n_slots;
	const uint64_t end = range ? st->pend_hi - st->pend_lo + 1 : n_slots;
	uint32_t m = mask ? *mask : 0; /* gi_stream_pending_mask()'s frames, or a scan: one body either way */

	for (uint64_t k = 0; mask ? m != 0 : k < end; k++) {
		uint64_t f = range ? st->pend_lo + k : k;
		if (mask) {
			f = st->pend_lo + gi_lowest_u32(m);
			m &= m - 1;
		}
		struct gi_frame_slot *s = gi_stream_slot(st, f);
		if (mask || gi_frame_pending(s, f, range))
			gi_pending_frame(st, s, range ? f : s->frame, pass, w, nw, t8);
	}
}

/* Consumers may read first_frame and next_frame once they acquire `started`. */
GI_HD static inline void gi_stream_publish_start(struct gi_stream_rt *st)
{
	GI_STORE_RELEASE_U32(&st->ring->started, 1);
	if (st->mirror)
		GI_STORE_RELEASE_U32(&st->mirror->started, 1);
}

/*
 * next_frame (ring and mirror) moves to the frames the stream has
 * published, and its first batch says `started`: after a release fence
 * that orders the published frames' even seqlock words before them — the
 * caller's when `fenced` (the GPU's batch end: the fence that hands the
 * batch slot back covers these stores too).
 */
GI_HD static inline void gi_stream_publish_next(struct gi_stream_rt *st, int fenced)
{
	if (st->next_pub != st->vis_next) {
		st->vis_next = st->next_pub;
		if (!fenced)
			GI_FENCE_RELEASE();
		GI_STORE_RELAXED_U64(&st->ring->next_frame, st->next_pub);
		if (st->mirror)
			GI_STORE_RELAXED_U64(&st->mirror->next_frame, st->next_pub);
	}
	if (st->start_pending) { /* the stream's first batch: started after first_frame and next_frame */
		st->start_pending = 0;
		gi_stream_publish_start(st);
	}
}

/* Has pass 0 anything to do for the stream's pending frames (a tensor, a CRC, NIC times, one lane's mirror copy)? */
GI_HD static inline int gi_stream_pass0_works(const struct gi_stream_rt *st, uint32_t nlanes)
{
	return (st->tensor.sample != GI_TS_NONE && !st->tensor_parts) || gi_stream_verifies(st) ||
	       st->nic_ts == GI_NIC_TS_REALTIME || (st->mirror && nlanes == 1);
}

/*
 * End of a deferred round: every frame finalised since it began becomes
 * visible, then next_frame moves.  The caller has made every payload store
 * of the round visible to this thread (a barrier on the GPU); one release
 * fence then covers every payload byte, bitmap bit and header word of all
 * the round's frames before their even seqlock words, and a second orders
 * those words before next_frame — two system fences per stream and round,
 * however many frames it published, where the serial path pays two per
 * frame.  `late_next`: the caller moves next_frame itself, after a fence
 * of its own (gi_stream_publish_next(st, 1)): the GPU does at its batch's
 * end, so the second fence is the one that hands the slot back.
 * Lane `lane` of `nlanes` of one warp (the GPU's commit of a CTA's one
 * stream; 0 of 1 elsewhere): the lanes copy the frames' metadata to the
 * mirror together, lane 0 does the rest once every lane is done.
 */
GI_HD static inline void gi_stream_make_visible(struct gi_stream_rt *st, int late_next, uint32_t lane,
					       uint32_t nlanes)
{
	if (!st->defer)
		return;
	const uint32_t pend = st->pend_n;
	uint32_t few = 0, mask = 0;
	if (pend) {
		mask = gi_stream_pending_mask(st, lane, nlanes, &few);
		if (lane == 0 && gi_stream_pass0_works(st, nlanes))
			gi_stream_pending_pass(st, 0, 0, nlanes, NULL, few ? &mask : NULL); /* one lane: the copy too */
		if (st->mirror && nlanes > 1) {
			GI_WARP_SYNC(); /* lane 0's writes to the slots (a CRC's verdict) before the copy */
			gi_stream_pending_pass(st, 4, lane, nlanes, NULL, few ? &mask : NULL);
		}
	}
	if (nlanes > 1)
		GI_WARP_SYNC(); /* every lane's copy, and its reads of the words below, before lane 0's fence */
	if (lane != 0)
		return;
	st->defer = 0;
	st->stall = 0;
	if (pend) {
		GI_FENCE_RELEASE();
		gi_stream_pending_pass(st, 1, 0, 1, NULL, few ? &mask : NULL);
		st->pend_n = 0;
	}
	st->crc_parts = 0;
	st->tensor_parts = 0;
	if (!late_next)
		gi_stream_publish_next(st, 0);
}

GI_EXTERN_C_END

#endif /* GI_STREAM_PUBLISH_H */
