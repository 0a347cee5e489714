/*
 * stream.h — per-packet executor bodies: classify, sequence, place, publish.
 *
 * This is the logic the CUDA kernels and the host executor share.  For every
 * packet of a batch the executor calls
 *
 *     gi_exec_classify()   one lane: parse, find the stream, account for
 *                          order and loss, open the frame slot, claim the
 *                          packet's bit in the received bitmap
 *     gi_copy_lanes()      all lanes: move the payload into the frame
 *     gi_exec_commit()     one lane: count the packet, publish every frame
 *                          that is now complete, in frame order
 *
 * and, when idle or at shutdown, gi_stream_tick() / gi_stream_flush().
 *
 * Ownership: a stream's runtime state has exactly one writer, the executor
 * instance serving the ring its packets arrive on (DESIGN.md: a stream is
 * steered to one queue).  The stats thread reads the counters only.
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
	GI_FRAMES__COUNT
};
#define GI_FRAME_COUNT_NAMES { "complete", "partial", "timed_out" }

struct gi_stream_counters {
	uint64_t packets;    /* placed, unique */
	uint64_t bytes;      /* payload bytes placed */
	uint64_t lost;
	uint64_t duplicates;
	uint64_t late;       /* its frame was already final */
	uint64_t reordered;  /* arrived after a packet with a higher sequence number */
	uint64_t resyncs;    /* sender restarts: a sequence jump beyond resync_frames */
	uint64_t frames[GI_FRAMES__COUNT];
};

struct gi_stream_rt {
	/* configuration, fixed while the stream exists */
	uint32_t format;          /* enum gi_format */
	uint32_t packets;         /* per frame */
	uint32_t payload_bytes;   /* per packet */
	uint32_t window;          /* frames open at once (reorder window), < ring n_slots */
	uint64_t frame_timeout_ns;/* 0: frames only close by window or at shutdown */
	struct gi_frame_ring_hdr *ring;   /* where frames are assembled (executor address) */
	struct gi_frame_ring_hdr *mirror; /* consumers' metadata copy when ring is in GPU memory, else NULL */
	struct gi_format_params fp;
	uint16_t next_same_udp;   /* next stream sharing this (port, UDP port), GI_STREAM_NONE at the end */
	uint16_t pad0;

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

	struct gi_stream_counters c;
	struct gi_hist frame_latency;
};

/* Per executor instance (one writer). */
struct gi_exec_counters {
	uint64_t batches;
	uint64_t packets;
	uint64_t drops[GI_DROP__COUNT];
	uint64_t loops;           /* progress word for the watchdog */
	uint64_t busy_ns;         /* time spent on batches */
	struct gi_hist batch_latency;
};

#define GI_STREAM_NONE 0xffffu

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
	uint64_t frame;
};

/* All lanes: move the payload described by `pl` (see gi_copy_lanes). */
GI_HD static inline void gi_place_copy(const struct gi_place *pl, uint32_t lane, uint32_t nlanes)
{
	gi_copy_lanes(pl->dst, pl->src0, pl->len0, lane, nlanes);
	if (pl->len1)
		gi_copy_lanes(pl->dst + pl->len0, pl->src1, pl->len1, lane, nlanes);
}

GI_HD static inline int64_t gi_extend_delta32(uint64_t ref, uint32_t v)
{
	return (int64_t)(int32_t)(v - (uint32_t)ref);
}

/*
 * Mirror upkeep (GPU frame rings only; mirror == NULL on the host path).
 * Writes only, so on the GPU they are posted PCIe stores into host memory.
 */
GI_HD static inline void gi_mirror_word(struct gi_stream_rt *st, uint64_t next_frame)
{
	if (st->mirror)
		GI_STORE_RELEASE_U64(&st->mirror->next_frame, next_frame);
}

GI_HD static inline void gi_mirror_open(struct gi_stream_rt *st, uint64_t frame)
{
	if (!st->mirror)
		return;
	struct gi_frame_slot *m = gi_frame_slot_at(st->mirror, frame);
	GI_STORE_RELAXED_U64(&m->seq, 2 * frame + 1);
	GI_FENCE_RELEASE();
}

GI_HD static inline void gi_mirror_publish(struct gi_stream_rt *st, const struct gi_frame_slot *s)
{
	if (!st->mirror)
		return;
	struct gi_frame_slot *m = gi_frame_slot_at(st->mirror, s->frame);
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
	for (uint32_t w = 0; w < st->ring->bitmap_words; w++)
		mbm[w] = bm[w];
	/* the payload (device ring) and this metadata before the even seq */
	GI_STORE_RELEASE_U64(&m->seq, 2 * s->frame + 2);
}

/* Make frame f (all its slot metadata) final and visible to consumers. */
GI_HD static inline void gi_frame_publish(struct gi_stream_rt *st, struct gi_frame_slot *s, uint32_t state,
					  uint64_t now)
{
	uint32_t received = s->received;
	uint32_t kind = received == s->expected ? GI_FRAMES_COMPLETE
			: state == GI_FRAME_TIMED_OUT ? GI_FRAMES_TIMED_OUT : GI_FRAMES_PARTIAL;

	s->state = received == s->expected ? (uint32_t)GI_FRAME_COMPLETE : state;
	s->publish_ns = now;
	GI_STORE_RELEASE_U64(&s->seq, 2 * s->frame + 2);
	gi_mirror_publish(st, s);
	GI_COUNTER_ADD(&st->c.frames[kind], 1);
	GI_COUNTER_ADD(&st->c.lost, s->expected - received);
	gi_hist_observe(&st->frame_latency, now > s->first_rx_ns ? now - s->first_rx_ns : 0);
}

GI_HD static inline int gi_frame_is_open(const struct gi_frame_slot *s, uint64_t frame)
{
	return s->frame == frame && s->state == GI_FRAME_FILLING && s->seq == 2 * frame + 1;
}

/* Publish the in-order run of complete frames at the head of the window. */
GI_HD static inline void gi_stream_publish_ready(struct gi_stream_rt *st, uint64_t now)
{
	uint64_t f = st->next_pub;
	while (f <= st->max_frame) {
		struct gi_frame_slot *s = gi_frame_slot_at(st->ring, f);
		if (!gi_frame_is_open(s, f) || s->received != s->expected)
			break;
		gi_frame_publish(st, s, GI_FRAME_COMPLETE, now);
		f++;
	}
	if (f != st->next_pub) {
		st->next_pub = f;
		GI_STORE_RELEASE_U64(&st->ring->next_frame, f);
		gi_mirror_word(st, f);
	}
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
		struct gi_frame_slot *s = gi_frame_slot_at(st->ring, f);
		if (gi_frame_is_open(s, f))
			gi_frame_publish(st, s, state, now);
		else if (f >= st->min_frame)
			skipped++;
	}
	if (new_next > scan_end)
		skipped += new_next - scan_end;
	if (skipped)
		GI_COUNTER_ADD(&st->c.lost, skipped * st->packets);
	st->next_pub = new_next;
	GI_STORE_RELEASE_U64(&st->ring->next_frame, new_next);
	gi_mirror_word(st, new_next);
	/* frames that completed while an older one held the head go out now */
	gi_stream_publish_ready(st, now);
}

GI_HD static inline void gi_frame_open(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame,
				       uint32_t sensor_id, uint64_t sensor_frame, uint64_t sender_ts, uint64_t now)
{
	uint64_t *bm = gi_frame_bitmap(s);

	/* seqlock writer entry: the odd value must be visible before any slot
	 * byte changes, so a reader re-checking seq cannot accept a torn frame
	 * (a release store alone would only order the writes before it) */
	GI_STORE_RELAXED_U64(&s->seq, 2 * frame + 1);
	GI_FENCE_RELEASE();
	gi_mirror_open(st, frame);
	s->frame = frame;
	s->first_ts_ns = sender_ts;
	s->first_rx_ns = now;
	s->publish_ns = 0;
	s->expected = st->packets;
	s->received = 0;
	s->sensor_id = sensor_id;
	s->sensor_frame = sensor_frame;
	for (uint32_t w = 0; w < st->ring->bitmap_words; w++)
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

	st->started = 1;
	st->next_pub = frame - back;
	st->max_frame = frame;
	st->min_frame = frame;
	st->seq_max = seq;
	st->seq_origin = seq;
	st->ring->first_frame = frame - back;
	GI_STORE_RELEASE_U64(&st->ring->next_frame, frame - back);
	GI_STORE_RELEASE_U32(&st->ring->started, 1); /* consumers read first_frame after acquiring this */
	if (st->mirror) {
		st->mirror->first_frame = frame - back;
		GI_STORE_RELEASE_U64(&st->mirror->next_frame, frame - back);
		GI_STORE_RELEASE_U32(&st->mirror->started, 1);
	}
}

GI_HD static inline int gi_exec_drop(struct gi_exec_counters *ctr, enum gi_drop_reason r)
{
	GI_COUNTER_ADD(&ctr->drops[r], 1);
	return 0;
}

/* Close the oldest open frame if its first packet is older than the timeout. */
GI_HD static inline void gi_stream_tick(struct gi_stream_rt *st, uint64_t now)
{
	if (!st->started || st->frame_timeout_ns == 0)
		return;
	for (uint64_t f = st->next_pub; f <= st->max_frame && f < st->next_pub + st->window; f++) {
		struct gi_frame_slot *s = gi_frame_slot_at(st->ring, f);
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

/* The stream's format parser: 0 and `pi` filled, or a gi_drop_reason. */
GI_HD static inline int gi_stream_parse(const struct gi_stream_rt *st, const struct gi_l4 *l4, const uint8_t *pkt,
					uint32_t hdr_len, const uint8_t *seg1, struct gi_pkt_info *pi)
{
	int why;
	const uint8_t *u = pkt + l4->payload_off;
	uint32_t avail = hdr_len > l4->payload_off ? hdr_len - l4->payload_off : 0;

	switch (st->format) {
	case GI_FORMAT_UDP_SEQ:
		return gi_fmt_udp_seq_parse(&st->fp, u, l4->payload_len, avail, st->packets, st->payload_bytes, pi);
	case GI_FORMAT_VITA49:
		return gi_fmt_vita49_parse(&st->fp, u, l4->payload_len, avail, pi);
	case GI_FORMAT_ROCEV2:
		/* the ICRC covers the payload: seg1 (buffer split) is read too */
		why = gi_fmt_rocev2_parse(&st->fp, pkt, hdr_len, seg1, l4, st->packets, st->payload_bytes, pi);
		return why ? why
			   : gi_fmt_rocev2_check_va(&st->fp, pi, st->started, st->seq_max, st->seq_origin, st->packets,
						    st->payload_bytes);
	case GI_FORMAT_CUSTOM:
		return gi_fmt_custom_parse(&st->fp, u, l4->payload_len, avail, st->packets, st->payload_bytes, pi);
	default:
		return GI_DROP_NO_STREAM;
	}
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
		*index = pi->has_offset ? (uint32_t)(pi->byte_off / st->payload_bytes) : pi->pkt_index;
		if (fd > 0)
			st->raw_max += (uint64_t)fd;
	} else {
		/* floor division of the signed distance n by packets */
		int64_t n = (int64_t)(seq_ext - st->seq_origin);
		uint64_t p = st->packets, m = gi_abs_u64(n);
		if (n >= 0) {
			rel = (int64_t)(m / p);
			*index = (uint32_t)(m % p);
		} else {
			uint64_t q = m / p + (m % p != 0); /* ceil(|n| / p) <= 2^63 */
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

/*
 * One packet, one lane.  `pkt` holds the first `hdr_len` bytes of the
 * packet: all of it (hdr_len == len, seg1 NULL) or, with buffer split, the
 * header segment, the rest being at `seg1`.  Headers must lie in the first
 * segment.  Returns 1 and fills `pl` when the payload must be copied (then
 * gi_place_copy() and gi_exec_commit() follow), 0 when the packet has been
 * fully accounted for here.
 */
GI_HD static inline int gi_exec_classify(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr, uint16_t port,
					 const uint8_t *pkt, uint32_t len, const uint8_t *seg1, uint32_t hdr_len,
					 uint64_t now, struct gi_place *pl)
{
	struct gi_l4 l4;
	struct gi_pkt_info pi;

	if (seg1 == NULL || hdr_len > len)
		hdr_len = len;
	switch (gi_parse_l4(pkt, len, hdr_len, &l4)) {
	case GI_L4_OK:
		break;
	case GI_L4_NOT_UDP:
		return gi_exec_drop(ctr, GI_DROP_NO_STREAM);
	default:
		return gi_exec_drop(ctr, GI_DROP_MALFORMED_IP);
	}
	if (port >= ctx->n_ports)
		return gi_exec_drop(ctr, GI_DROP_NO_STREAM);
	uint16_t si = ctx->map[(uint32_t)port * 65536u + l4.dst_port];
	const uint8_t *u = pkt + l4.payload_off;
	uint32_t u_avail = hdr_len > l4.payload_off ? GI_MIN(hdr_len - l4.payload_off, l4.payload_len) : 0;
	for (uint32_t hops = 0; si != GI_STREAM_NONE && hops < ctx->n_streams; hops++) {
		if (gi_stream_match(&ctx->streams[si], u, u_avail))
			break;
		si = ctx->streams[si].next_same_udp;
	}
	if (si == GI_STREAM_NONE || si >= ctx->n_streams)
		return gi_exec_drop(ctr, GI_DROP_NO_STREAM);
	struct gi_stream_rt *st = &ctx->streams[si];

	int why = gi_stream_parse(st, &l4, pkt, hdr_len, seg1, &pi);
	if (why)
		return gi_exec_drop(ctr, (enum gi_drop_reason)why);
	if (pi.payload_len != st->payload_bytes)
		return gi_exec_drop(ctr, GI_DROP_MALFORMED_GEOMETRY);

	uint64_t frame;
	uint32_t index;
	if (gi_stream_locate(st, &pi, now, &frame, &index)) {
		GI_COUNTER_ADD(&st->c.late, 1);
		return 0;
	}
	if (index >= st->packets)
		return gi_exec_drop(ctr, GI_DROP_MALFORMED_INDEX);

	if (frame >= st->next_pub + st->window)
		gi_stream_advance(st, frame - st->window + 1, GI_FRAME_PARTIAL, now);

	struct gi_frame_slot *s = gi_frame_slot_at(st->ring, frame);
	if (!gi_frame_is_open(s, frame))
		gi_frame_open(st, s, frame, pi.sensor_id,
			      pi.has_frame ? (pi.frame & ((st->fp.frame_bits >= 64 ? 0 : 1ull << st->fp.frame_bits) - 1))
					   : frame - st->frame_base,
			      pi.timestamp, now);

	/* one writer per stream (DESIGN.md): a plain read-modify-write, no atomic
	 * (atomics on host-mapped frame rings are not atomic across PCIe anyway) */
	uint64_t bit = 1ull << (index & 63);
	uint64_t *word = &gi_frame_bitmap(s)[index >> 6];
	uint64_t old = GI_LOAD_RELAXED_U64(word);
	if (old & bit) {
		GI_COUNTER_ADD(&st->c.duplicates, 1);
		return 0;
	}
	GI_STORE_RELAXED_U64(word, old | bit);
	if (frame > st->max_frame)
		st->max_frame = frame;
	if (frame < st->min_frame)
		st->min_frame = frame;

	uint32_t off = l4.payload_off + pi.payload_off; /* payload start in the packet */
	pl->dst = gi_frame_payload(st->ring, s) + (uint64_t)index * st->payload_bytes;
	pl->len = pi.payload_len;
	pl->len0 = GI_MIN(pl->len, hdr_len > off ? hdr_len - off : 0u);
	pl->len1 = pl->len - pl->len0;
	pl->src0 = pkt + off;
	pl->src1 = seg1 ? seg1 + (off > hdr_len ? off - hdr_len : 0u) : NULL;
	pl->stream = si;
	pl->frame = frame;
	pl->closes = pi.closes_frame;
	return 1;
}

/* Packet i of a batch slot as gi_exec_classify() takes it. */
struct gi_pkt_desc {
	const uint8_t *pkt;  /* header segment (or the whole packet) */
	const uint8_t *seg1; /* payload segment, NULL without buffer split */
	uint32_t len;        /* whole packet */
	uint32_t hdr_len;    /* bytes readable at pkt */
};

GI_HD static inline void gi_slot_pkt(struct gi_batch_slot *slot, uint32_t max_pkts, uint32_t split, uint32_t i,
				     struct gi_pkt_desc *d)
{
	d->pkt = (const uint8_t *)(uintptr_t)gi_slot_addr(slot)[i];
	d->len = gi_slot_len(slot, max_pkts)[i];
	if (split) {
		d->seg1 = (const uint8_t *)(uintptr_t)gi_slot_addr1(slot, max_pkts)[i];
		d->hdr_len = gi_slot_len0(slot, max_pkts)[i];
	} else {
		d->seg1 = NULL;
		d->hdr_len = d->len;
	}
}

/* After every lane's copy of `pl` is done (and visible). */
GI_HD static inline void gi_exec_commit(struct gi_exec_ctx *ctx, const struct gi_place *pl, uint64_t now)
{
	struct gi_stream_rt *st = &ctx->streams[pl->stream];
	struct gi_frame_slot *s = gi_frame_slot_at(st->ring, pl->frame);

	s->received++;
	GI_COUNTER_ADD(&st->c.packets, 1);
	GI_COUNTER_ADD(&st->c.bytes, pl->len);
	if (pl->closes && pl->frame >= st->next_pub)
		gi_stream_advance(st, pl->frame + 1, GI_FRAME_PARTIAL, now); /* the sender says it is done */
	else if (s->received == s->expected)
		gi_stream_publish_ready(st, now); /* returns at once unless the head frame is complete */
}

GI_EXTERN_C_END

#endif /* GI_STREAM_H */
