/*
 * stream.h — the per-stream state machine: where a packet goes, when a
 * frame opens, completes, times out, and how loss is counted.
 *
 * One stream's runtime state has exactly one writer at a time, the worker
 * that owns the ring group its packets arrive on (a CUDA CTA, a host
 * executor thread, or an rx lcore in inline mode; DESIGN.md "Frames and
 * streams").  The stats thread only reads the counters.
 *
 * A packet goes through three steps (classify.h wraps them):
 *
 *     gi_seq_locate()   sequence number extension, frame and index, late
 *                       or in window, the window push, drop reasons that
 *                       depend on stream state (rocev2_va, geometry, index)
 *     gi_seq_open()     open its frame slot if needed, claim its bit in the
 *                       received bitmap: placed or duplicate, exactly
 *     gi_seq_commit()   after its payload is in: count it, end the frame if
 *                       the packet says so, publish what is complete
 *
 * The serial reference path runs them per packet with the copy between
 * open and commit.  The phased executor (batch.h) runs locate, open and
 * commit for a whole batch first, with visibility *deferred*: frames that
 * become final are finalised (state, counters, loss) at the same packet
 * as in the serial path, but their seqlock word, mirror and the ring's
 * next_frame are only written by gi_stream_make_visible() after every
 * payload of the batch is copied.  Same decisions, same order, same
 * counters; consumers just see the batch's frames appear together.
 *
 * Accounting (DESIGN.md): every delivered packet ends in exactly one of
 * placed (counters.packets), duplicates, late, or drops[reason].  Loss is
 * counted when a frame becomes final: expected - received of each published
 * frame plus packets_per_frame for every frame skipped without a single
 * packet, so for a sender whose first and last packets arrive (the first
 * one first, or within reorder_window - 1 frames of the first arrival),
 * unique sent == placed + lost holds exactly.  Packets of frames below the
 * window at start-up cannot be told from stale ones and count as late.
 */
#ifndef GI_STREAM_H
#define GI_STREAM_H

#include "frame.h"
#include "hist.h"
#include "pkt.h"
#include "ring.h"
#include "format.h"
#include "fmt_custom.h"
#include "fmt_vita49.h"
#include "fmt_rocev2.h"
#include "udp_seq.h"

GI_EXTERN_C_BEGIN

enum gi_frame_count {
	GI_FRAMES_COMPLETE = 0,
	GI_FRAMES_PARTIAL,
	GI_FRAMES_TIMED_OUT,
	GI_FRAMES_CORRUPT,   /* complete, but the sender's record disagrees (rocev2.frame_crc: verify) */
	GI_FRAMES__COUNT
};
#define GI_FRAME_COUNT_NAMES { "complete", "partial", "timed_out", "corrupt" }

struct gi_stream_counters {
	uint64_t packets;    /* placed, unique */
	uint64_t bytes;      /* payload bytes placed */
	uint64_t lost;
	uint64_t duplicates;
	uint64_t late;       /* its frame was already final */
	uint64_t reordered;  /* arrived after a packet with a higher sequence number */
	uint64_t resyncs;    /* sender restarts: a sequence jump beyond resync_frames */
	uint64_t metadata;   /* frame-end packets that carry only the sender's record (placed + metadata + lost
			      * == unique sent) */
	uint64_t frames[GI_FRAMES__COUNT];
};

struct gi_stream_rt {
	/* configuration, fixed while the stream exists */
	uint32_t format;          /* enum gi_format */
	uint32_t packets;         /* per frame */
	uint32_t payload_bytes;   /* per packet */
	uint32_t window;          /* frames open at once (reorder window), < ring n_slots */
	uint32_t last_bytes;      /* the last data packet's length: frame.bytes - (data_packets - 1) * payload_bytes */
	uint32_t data_packets;    /* packets that carry frame data: `packets`, or one fewer when each frame
				   * ends with a packet of its own that carries only the sender's record
				   * (rocev2.frame_end: packet), which takes the last index (and PSN) */
	uint64_t frame_timeout_ns;/* 0: frames only close by window or at shutdown */
	struct gi_frame_ring_hdr *ring;   /* where frames are assembled (executor address) */
	struct gi_frame_ring_hdr *mirror; /* consumers' metadata copy when ring is in GPU memory, else NULL */
	struct gi_format_params fp;
	uint16_t next_same_udp;   /* next stream sharing this (port, UDP port), GI_STREAM_NONE at the end */
	uint16_t group;           /* the ring group (executor worker) that owns it */
	uint16_t local;           /* its index among its group's streams */
	uint16_t pad0;

	/* derived at each epoch start (gi_stream_start): divide-free geometry */
	struct gi_div div_packets;  /* sequence distance -> frame, index */
	struct gi_div div_payload;  /* byte offset -> index */
	struct gi_div div_slots;    /* frame -> slot */
	uint64_t slot_stride;       /* of ring */
	uint64_t mirror_stride;     /* of mirror */
	uint64_t payload_off;       /* of ring */

	/* sequencing state */
	uint32_t started;
	uint32_t epochs;          /* starts so far: 1 + resynchronisations */
	uint64_t next_pub;        /* oldest frame not yet final (ring frame number) */
	uint64_t max_frame;       /* newest frame seen */
	uint64_t min_frame;       /* oldest frame seen: frames below it were never sent to us */
	uint64_t seq_max;         /* newest sequence number seen, extended to 64 bits */
	/*
	 * Ring frame numbers are 64-bit and only grow, across wraparound of the
	 * sender's counters and across sender restarts, so consumers' seqlock
	 * arithmetic never goes backwards.  An epoch starts at the first packet
	 * and at each resynchronisation:
	 *   sender frame numbers: ring frame = frame_base + (raw_ext - raw_origin)
	 *   frames from sequence: ring frame = frame_base + (seq_ext - seq_origin) / packets
	 */
	uint64_t frame_base;
	uint64_t raw_max;         /* newest sender frame number, extended */
	uint64_t raw_origin;
	uint64_t seq_origin;

	/*
	 * Deferred visibility (phased executor): while `defer` is set, frames
	 * finalised are counted in pend_n and span [pend_lo, pend_hi]; `stall`
	 * says a packet waits for them to become visible before it may reuse
	 * a slot (the batch then takes another round).
	 */
	uint32_t defer;
	uint32_t stall;
	/* the host's phase 2a, one worker in batch order (phase_sequence.h) */
	uint32_t run_ok;          /* the stream's records so far form one in-order run */
	uint32_t run_last;        /* its last parsed record so far, GI_REC_NONE */
	uint32_t start_pending;   /* deferred: the ring's `started` word waits for next_frame */
	uint32_t pad1;
	uint64_t vis_next;        /* next_frame as consumers last saw it */
	uint64_t sender_max;      /* the newest frame number of a sender record, extended (sender_seen) */
	uint32_t sender_seen;
	uint32_t crc_parts;       /* this round's pending frames' CRCs were summed by the CTA (pass 2) */
	uint64_t pend_n;
	uint64_t pend_lo;
	uint64_t pend_hi;
	/* host only: waking consumers (frame_wake.h); the GPU never reads these */
	uint32_t *waiters;        /* the ring's wake object's count, NULL: no wake object */
	uint64_t wake_next;       /* consumers' next_frame at the last wake */

	struct gi_stream_counters c;
	struct gi_hist frame_latency;
};

/* Per executor worker (one writer). */
struct gi_exec_counters {
	uint64_t batches;
	uint64_t packets;
	uint64_t drops[GI_DROP__COUNT];
	uint64_t loops;           /* progress word for the watchdog */
	uint64_t runs;            /* streams phase 2 took as one in-order run, summed over batches (benchmarks) */
	uint64_t busy_ns;         /* time spent on batches */
	struct gi_hist batch_latency;
};

#define GI_STREAM_NONE 0xffffu
#define GI_GROUP_ANY 0xffffu   /* a worker that owns every stream (one host thread) */

/*
 * Stream lookup: map[port * 65536 + udp_dst_port] is a stream index or
 * GI_STREAM_NONE.  A flat table: one load per packet, the same on the GPU.
 */
struct gi_exec_ctx {
	uint32_t n_streams;
	uint32_t n_ports;
	struct gi_stream_rt *streams;
	uint16_t *map;
};

/*
 * Where a payload goes.  Without buffer split it is one piece; with split,
 * the part of the payload that the NIC put in the header segment (src0)
 * and the rest from the payload segment (src1).
 */
struct gi_place {
	uint8_t *dst;
	const uint8_t *src0;
	const uint8_t *src1;
	uint32_t len0;
	uint32_t len1;
	uint32_t len;       /* len0 + len1 */
	uint32_t stream;
	uint32_t closes;    /* the frame is final once this packet is in */
	uint32_t index;     /* its index in the frame */
	uint32_t pad;
	uint64_t frame;
};

/* All lanes: move the payload described by `pl` (see gi_copy_lanes). */
GI_HD static inline void gi_place_copy(const struct gi_place *pl, uint32_t lane, uint32_t nlanes)
{
	gi_copy_lanes(pl->dst, pl->src0, pl->len0, lane, nlanes);
	if (pl->len1)
		gi_copy_lanes(pl->dst + pl->len0, pl->src1, pl->len1, lane, nlanes);
}

/* ---- slots ------------------------------------------------------------------ */

/* Frame f's slot in the assembly ring: gi_frame_slot_at() without a 64-bit modulo. */
GI_HD static inline struct gi_frame_slot *gi_stream_slot(const struct gi_stream_rt *st, uint64_t frame)
{
	return (struct gi_frame_slot *)((uint8_t *)st->ring + GI_ALIGN_UP(sizeof(struct gi_frame_ring_hdr), 4096) +
					gi_div_r(&st->div_slots, frame) * st->slot_stride);
}

GI_HD static inline struct gi_frame_slot *gi_stream_mirror_slot(const struct gi_stream_rt *st, uint64_t frame)
{
	return (struct gi_frame_slot *)((uint8_t *)st->mirror + GI_ALIGN_UP(sizeof(struct gi_frame_ring_hdr), 4096) +
					gi_div_r(&st->div_slots, frame) * st->mirror_stride);
}

/* Where packet `index` of the frame in slot `s` goes. */
GI_HD static inline uint8_t *gi_stream_payload(const struct gi_stream_rt *st, struct gi_frame_slot *s, uint32_t index)
{
	return (uint8_t *)s + st->payload_off + (uint64_t)index * st->payload_bytes;
}

/*
 * The payload length packet `index` of a frame must have: the last data
 * packet may be shorter (frame.bytes), a frame-end packet of its own
 * (index data_packets) carries none.
 */
GI_HD static inline uint32_t gi_stream_pkt_bytes(const struct gi_stream_rt *st, uint32_t index)
{
	return index + 1 < st->data_packets ? st->payload_bytes : index + 1 == st->data_packets ? st->last_bytes : 0u;
}

/*
 * Bytes of the n consecutive packets of a frame that end at index
 * `last_index` (a run: consecutive sequence numbers), and how many of them
 * are a frame-end packet (0 or 1).
 */
GI_HD static inline uint64_t gi_stream_run_bytes(const struct gi_stream_rt *st, uint32_t n, uint32_t last_index,
						 uint32_t *meta)
{
	uint64_t b = (uint64_t)n * st->payload_bytes;
	*meta = last_index >= st->data_packets;
	if (*meta)
		b -= st->payload_bytes; /* the frame-end packet: no data */
	/* the last data packet, index data_packets - 1, is in [last_index + 1 - n, last_index] */
	if (last_index + 1 >= st->data_packets && last_index + 1 - st->data_packets < n)
		b -= st->payload_bytes - st->last_bytes;
	return b;
}

/* Geometry the hot path derives from the configuration, once per epoch. */
GI_HD static inline void gi_stream_derive(struct gi_stream_rt *st)
{
	gi_div_init(&st->div_packets, st->packets);
	gi_div_init(&st->div_payload, st->payload_bytes);
	gi_div_init(&st->div_slots, st->ring->n_slots);
	st->slot_stride = st->ring->slot_stride;
	st->payload_off = st->ring->payload_off;
	st->mirror_stride = st->mirror ? st->mirror->slot_stride : 0;
}

GI_HD static inline int gi_frame_is_open(const struct gi_frame_slot *s, uint64_t frame)
{
	return s->frame == frame && s->state == GI_FRAME_FILLING && s->seq == 2 * frame + 1;
}

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


/* The slot's metadata and bitmap to the consumers' mirror; its seq word last. */
GI_HD static inline void gi_mirror_copy(struct gi_stream_rt *st, const struct gi_frame_slot *s)
{
	struct gi_frame_slot *m = gi_stream_mirror_slot(st, s->frame);
	const uint64_t *bm = (const uint64_t *)(s + 1);
	uint64_t *mbm = gi_frame_bitmap(m);
	m->frame = s->frame;
	m->first_ts_ns = s->first_ts_ns;
	m->first_rx_ns = s->first_rx_ns;
	m->publish_ns = s->publish_ns;
	m->expected = s->expected;
	m->received = s->received;
	m->state = s->state;
	m->sensor_id = s->sensor_id;
	m->sensor_frame = s->sensor_frame;
	m->sender = s->sender;
	for (uint32_t w = 0; w < gi_frame_bitmap_words(st->packets); w++)
		mbm[w] = bm[w];
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

/* A final frame becomes readable: every payload byte, bitmap bit and header word before its even seq. */
GI_HD static inline void gi_frame_make_visible(struct gi_stream_rt *st, struct gi_frame_slot *s)
{
	gi_frame_verify(st, s, 0);
	if (st->mirror) {
		gi_mirror_copy(st, s);
		GI_STORE_RELEASE_U64(&gi_stream_mirror_slot(st, s->frame)->seq, 2 * s->frame + 2);
	}
	GI_STORE_RELEASE_U64(&s->seq, 2 * s->frame + 2);
}

/*
 * Make frame f final: its state, the frame counters, its loss and latency.
 * Visible to consumers at once, or — deferred — by gi_stream_make_visible().
 */
GI_HD static inline void gi_frame_publish(struct gi_stream_rt *st, struct gi_frame_slot *s, uint32_t state,
					  uint64_t now)
{
	uint32_t received = s->received;
	uint32_t kind = received == s->expected ? GI_FRAMES_COMPLETE
			: state == GI_FRAME_TIMED_OUT ? GI_FRAMES_TIMED_OUT : GI_FRAMES_PARTIAL;

	s->state = received == s->expected ? (uint32_t)GI_FRAME_COMPLETE : state;
	s->publish_ns = now;
	GI_COUNTER_ADD(&st->c.frames[kind], 1);
	GI_COUNTER_ADD(&st->c.lost, s->expected - received);
	gi_hist_observe(&st->frame_latency, now > s->first_rx_ns ? now - s->first_rx_ns : 0);
	if (!st->defer) {
		gi_frame_make_visible(st, s);
		return;
	}
	if (st->pend_n++ == 0)
		st->pend_lo = st->pend_hi = s->frame;
	st->pend_lo = GI_MIN(st->pend_lo, s->frame);
	st->pend_hi = GI_MAX(st->pend_hi, s->frame);
}

/*
 * The frames finalised in a deferred round that are still invisible: pass
 * 0 checks them against their sender's record if asked (finishing what
 * pass 2 began) and copies their metadata to the mirror, pass 1 stores
 * their even seqlock words; pass 2, before them, is worker w of nw
 * summing its part of each frame's CRC (the GPU's CTA, t8 its tables).
 * Pending frames sit in distinct slots (gi_seq_open() stalls rather than
 * reuse one), so a scan of [pend_lo, pend_hi] — or of every slot when a
 * resync spread them further apart — finds each exactly once; no pass
 * changes what the scan reads, so every pass finds the same ones.
 */
GI_HD static inline void gi_stream_pending_pass(struct gi_stream_rt *st, int pass, uint32_t w, uint32_t nw,
						const uint32_t *t8)
{
	uint64_t n_slots = st->div_slots.d;
	int range = st->pend_hi - st->pend_lo < n_slots;
	uint64_t end = range ? st->pend_hi - st->pend_lo + 1 : n_slots;

	for (uint64_t k = 0; k < end; k++) {
		uint64_t f = range ? st->pend_lo + k : k;
		struct gi_frame_slot *s = gi_stream_slot(st, f);
		if (s->state == GI_FRAME_FILLING || !(range ? s->frame == f && s->seq == 2 * f + 1 : (s->seq & 1) != 0))
			continue;
		if (pass == 2) {
			if (gi_frame_verify_wanted(st, s))
				gi_frame_verify_part(st, s, w, nw, t8);
			continue;
		}
		if (pass == 0) {
			gi_frame_verify(st, s, st->crc_parts); /* pass 2's parts summed, or the whole frame now */
			if (st->mirror)
				gi_mirror_copy(st, s);
			continue;
		}
		if (st->mirror)
			GI_STORE_RELAXED_U64(&gi_stream_mirror_slot(st, s->frame)->seq, 2 * s->frame + 2);
		GI_STORE_RELAXED_U64(&s->seq, 2 * s->frame + 2);
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
 * End of a deferred round: every frame finalised since it began becomes
 * visible, then next_frame moves.  The caller has made every payload store
 * of the round visible to this thread (a barrier on the GPU); one release
 * fence then covers every payload byte, bitmap bit and header word of all
 * the round's frames before their even seqlock words, and a second orders
 * those words before next_frame — two system fences per stream and round,
 * however many frames it published, where the serial path pays two per
 * frame.
 */
GI_HD static inline void gi_stream_make_visible(struct gi_stream_rt *st)
{
	if (!st->defer)
		return;
	st->defer = 0;
	st->stall = 0;
	if (st->pend_n) {
		gi_stream_pending_pass(st, 0, 0, 1, NULL);
		GI_FENCE_RELEASE();
		gi_stream_pending_pass(st, 1, 0, 1, NULL);
		st->pend_n = 0;
	}
	st->crc_parts = 0;
	if (st->next_pub != st->vis_next) {
		st->vis_next = st->next_pub;
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

/* ---- the window ----------------------------------------------------------------- */

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

GI_HD static inline void gi_frame_open(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame,
				       uint32_t sensor_id, uint64_t sensor_frame, uint64_t sender_ts, uint64_t now)
{
	uint64_t *bm = gi_frame_bitmap(s);

	/* seqlock writer entry: the odd value must be visible before any slot
	 * byte changes, so a reader re-checking seq cannot accept a torn frame
	 * (a release store alone would only order the writes before it); the
	 * mirror's odd value too, before its slot changes at publication: one
	 * fence for both */
	GI_STORE_RELAXED_U64(&s->seq, 2 * frame + 1);
	if (st->mirror)
		GI_STORE_RELAXED_U64(&gi_stream_mirror_slot(st, frame)->seq, 2 * frame + 1);
	GI_FENCE_RELEASE();
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
	for (uint32_t w = 0; w < gi_frame_bitmap_words(st->packets); w++)
		bm[w] = 0;
	s->state = GI_FRAME_FILLING;
}

/*
 * The first packet of a stream.  The window opens window - 1 frames before
 * it, so packets of earlier frames that were merely reordered behind it are
 * still placed; frames below the oldest one seen never count as lost.
 */
GI_HD static inline void gi_stream_start(struct gi_stream_rt *st, uint64_t frame, uint64_t seq)
{
	uint64_t back = GI_MIN(frame, (uint64_t)(st->window - 1));

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
 * Where packet `pi` goes: the ring frame number and the packet's index in
 * it.  Returns 0, or 1 when the packet is late (its frame is final), or 2
 * when the stream was resynchronised and this packet starts the new epoch.
 * Distances are 64-bit and wrap like the counters they come from (a
 * hostile sender of a 64-bit counter reaches any of them): the arithmetic
 * is unsigned where a signed form could overflow.
 */
GI_HD static inline int gi_stream_locate(struct gi_stream_rt *st, const struct gi_pkt_info *pi, uint64_t now,
					 uint64_t *frame, uint32_t *index)
{
	const struct gi_format_params *fp = &st->fp;

	if (st->started) {
		int64_t sd = gi_extend_delta(st->seq_max, pi->seq, fp->seq_bits);
		int64_t jump = sd;
		uint64_t limit = fp->resync_frames * (pi->has_frame ? 1 : st->packets);
		if (pi->has_frame)
			jump = gi_extend_delta(st->raw_max, pi->frame, fp->frame_bits);
		if (limit && gi_abs_u64(jump) > limit)
			gi_stream_resync(st, now);
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
GI_HD static inline int gi_stream_parse_ex(const struct gi_stream_rt *st, const struct gi_l4 *l4, const uint8_t *pkt,
					   uint32_t hdr_len, const uint8_t *seg1, int icrc_now, struct gi_pkt_info *pi)
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
		return gi_fmt_rocev2_parse(&st->fp, pkt, hdr_len, seg1, l4, st->packets, st->payload_bytes, icrc_now, pi);
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

/* ---- the three steps of a packet ------------------------------------------------ */

enum gi_seq_result {
	GI_SEQ_PLACE = 0, /* copy its payload, then gi_seq_commit() */
	GI_SEQ_DONE,      /* accounted for: late, duplicate, or a drop reason in *drop */
	GI_SEQ_STALL,     /* deferred only: its slot holds a frame not yet visible; retry after make_visible */
};

/*
 * Step 1.  The checks that depend on the stream's state, in the serial
 * order (rocev2 VA, geometry, lateness, index), then the window push.
 * GI_SEQ_PLACE with frame and index set, or GI_SEQ_DONE (late counted here, or a
 * drop reason in *drop, counted by the caller).
 */
GI_HD static inline int gi_seq_locate(struct gi_stream_rt *st, const struct gi_pkt_info *pi, uint64_t now,
				      uint64_t *frame, uint32_t *index, uint32_t *drop)
{
	*drop = GI_DROP__COUNT;
	if (st->format == GI_FORMAT_ROCEV2) {
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
	if (gi_stream_locate(st, pi, now, frame, index)) {
		GI_COUNTER_ADD(&st->c.late, 1);
		return GI_SEQ_DONE;
	}
	if (*index >= st->packets) {
		*drop = GI_DROP_MALFORMED_INDEX;
		return GI_SEQ_DONE;
	}
	if (pi->payload_len != gi_stream_pkt_bytes(st, *index)) {
		*drop = GI_DROP_MALFORMED_LENGTH; /* a short packet that is not the frame's last, or a full-size last */
		return GI_SEQ_DONE;
	}
	if (pi->meta && *index + 1 < st->data_packets) {
		*drop = GI_DROP_MALFORMED_INDEX; /* a frame-end record before the frame's last data */
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
GI_HD static inline int gi_seq_open(struct gi_stream_rt *st, const struct gi_pkt_info *pi, uint64_t frame,
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
	if (frame > st->max_frame)
		st->max_frame = frame;
	if (frame < st->min_frame)
		st->min_frame = frame;
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

#endif /* GI_STREAM_H */
