/*
 * stream.h — the per-stream state machine: where a packet goes, when a
 * frame opens, completes, times out, and how loss is counted.
 *
 * One stream's runtime state has exactly one writer at a time, the worker
 * that owns the ring group its packets arrive on (a CUDA CTA, a host
 * executor thread, or an rx lcore in inline mode; DESIGN.md "Frames and
 * streams").  The stats thread only reads the counters.
 *
 * Three files, each including the one before: this one (the types, the
 * slots, derived geometry), stream_publish.h (how frames become final and
 * visible) and stream_seq.h (the window and a packet's steps).  A packet
 * goes through three steps (stream_seq.h; classify.h wraps them):
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
 * payload of the batch is copied (next_frame, on the GPU, by
 * gi_stream_publish_next() after the batch's last fence).  Same decisions, same order, same
 * counters; consumers just see the batch's frames appear together.
 *
 * Accounting (DESIGN.md): every delivered packet ends in exactly one of
 * placed (counters.packets), duplicates, late, or drops[reason].  Loss is
 * counted when a frame becomes final: expected - received of each published
 * frame plus packets_per_frame for every frame skipped without a single
 * packet, so for a sender whose first and last packets arrive (the first
 * one first, or, where the sender numbers its frames, within
 * reorder_window - 1 frames of the first arrival), unique sent == placed +
 * lost holds exactly.  Packets of frames below the window at start-up
 * cannot be told from stale ones and count as late.  A stream placed by its
 * sequence number alone (rocev2, vita49, custom without a frame field)
 * numbers its first epoch's frames from 0, so its window opens at the first
 * arrival: a packet reordered ahead of it counts as late.
 */
#ifndef GI_STREAM_H
#define GI_STREAM_H

#include "frame.h"
#include "hist.h"
#include "pkt.h"
#include "ring.h"
#include "steps.h"
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
	uint32_t packets;         /* per frame (PSNs per frame for rocev2; an HSB stream with
				   * frame_end auto: data_packets + 1 until its epoch learns the record is
				   * embedded, then data_packets: gi_stream_learn_end) */
	uint32_t payload_bytes;   /* per packet */
	uint32_t window;          /* frames open at once (reorder window), < ring n_slots */
	uint32_t last_bytes;      /* the last data packet's length: frame.bytes - (data_packets - 1) * payload_bytes */
	uint32_t data_packets;    /* packets that carry frame data: `packets`, or one fewer when each frame
				   * ends with a packet of its own that carries only the sender's record
				   * (rocev2.frame_end: packet, or auto until learned otherwise), which takes
				   * the last index (and PSN); the frame slot has bits for data_packets + 1
				   * then */
	uint64_t frame_timeout_ns;/* 0: frames only close by window or at shutdown */
	struct gi_frame_ring_hdr *ring;   /* where frames are assembled (executor address) */
	struct gi_frame_ring_hdr *mirror; /* consumers' metadata copy when ring is in GPU memory, else NULL */
	struct gi_format_params fp;
	uint16_t next_same_udp;   /* next stream sharing this (port, UDP port), GI_STREAM_NONE at the end */
	uint16_t group;           /* the ring group (executor worker) that owns it */
	uint16_t local;           /* its index among its group's streams */
	uint16_t nic_ts;          /* enum gi_nic_ts: its port's timestamps (frame.h); REALTIME feeds frame_assembly */

	/* derived at each epoch start (gi_stream_start): divide-free geometry */
	struct gi_div div_packets;  /* sequence distance -> frame, index */
	struct gi_div div_payload;  /* byte offset -> index */
	struct gi_div div_slots;    /* frame -> slot */
	uint64_t slot_stride;       /* of ring */
	uint64_t mirror_stride;     /* of mirror */
	uint64_t payload_off;       /* of ring */
	struct gi_tensor_rt tensor; /* the frame as a typed tensor (ring's `tensor`), sample 0: none */

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
	/* the epoch before the last resync (epochs > 1): its newest numbers, so
	 * that a packet of it reordered behind the restart is late, not another
	 * restart (gi_stream_locate) */
	uint64_t prev_raw_max;
	uint64_t prev_seq_max;

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
	uint32_t end_unknown;     /* frame_end auto: this epoch has not yet seen which form the record takes */
	uint64_t vis_next;        /* next_frame as consumers last saw it */
	uint64_t sender_max;      /* the newest frame number of a sender record, extended (sender_seen) */
	uint32_t sender_seen;
	uint32_t crc_parts;       /* this round's pending frames' CRCs were summed by the CTA (pass 2) */
	uint32_t tensor_parts;    /* ... and their tensors written (pass 3) */
	uint64_t pend_n;
	uint64_t pend_lo;
	uint64_t pend_hi;
	/* host only: waking consumers (frame_wake.h); the GPU never reads these */
	uint32_t *waiters;        /* the ring's wake object's count, NULL: no wake object */
	uint64_t wake_next;       /* consumers' next_frame at the last wake */
	uint32_t wake_misses;     /* FUTEX_WAKEs in a row that woke nobody while the count said someone slept */
	uint32_t faults_logged;   /* consumer_faults kinds the main thread has logged (bit per kind) */
	uint64_t consumer_faults[GI_CFAULT__COUNT]; /* what consumers did to the shared objects (frame.h) */

	struct gi_stream_counters c;
	struct gi_hist frame_latency;
	struct gi_hist frame_assembly; /* last_nic_ns - first_nic_ns of each frame published, REALTIME only */
};

/* Per executor worker (one writer). */
struct gi_exec_counters {
	uint64_t batches;
	uint64_t packets;
	uint64_t drops[GI_DROP__COUNT];
	uint64_t loops;           /* progress word for the watchdog */
	uint64_t runs;            /* streams phase 2 took as one in-order run, summed over batches (benchmarks) */
	uint64_t staged_ahead;    /* batches the previous batch's end had staged (cuda persistent, benchmarks) */
	uint64_t early_copied;    /* payloads copied beside a run's 2b (cuda, phase_sequence_solo.h; benchmarks) */
	uint64_t lane_frames;     /* frames a run's 2b sequenced a lane each (phase_sequence_solo.h; benchmarks) */
	uint64_t busy_ns;         /* time spent on batches */
	struct gi_hist batch_latency;
	struct gi_hist batch_service; /* each batch's service time: from taking it up to handing it back */
	uint64_t step_batches;    /* batches timed step by step (cuda, gi_cuda_args.timing) */
	uint64_t step_ns[GI_STEP__COUNT]; /* ... their time in each step (steps.h) */
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
	struct gi_frame_slot *slot; /* the frame's slot (the serial path's commit) */
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
 * Where a stream's payloads go, copied out of the stream once by a worker
 * that places many (phase 3): between records its own payload stores
 * could alias the stream for all a compiler knows, so it would load each
 * field again for every record — on the GPU a chain of L2 round trips per
 * round of a warp's copies.
 */
struct gi_stream_geom {
	uint8_t *ring;
	struct gi_div div_slots;
	uint64_t slot_stride;
	uint64_t payload_off;
	uint32_t payload_bytes;
	uint32_t stream; /* whose (GI_STREAM_NONE: none yet) */
	uint64_t last_frame; /* gi_geom_slot()'s last answer (last_slot NULL: none yet): a batch's records */
	struct gi_frame_slot *last_slot; /* come a frame at a time, so most skip the division */
};

/* No stream's yet: the first gi_stream_geom_use() loads one. */
GI_HD static inline void gi_stream_geom_none(struct gi_stream_geom *g)
{
	struct gi_stream_geom none = { 0 };
	none.stream = GI_STREAM_NONE;
	*g = none;
}

GI_HD static inline void gi_stream_geom_load(const struct gi_stream_rt *st, uint32_t si, struct gi_stream_geom *g)
{
	g->ring = (uint8_t *)st->ring;
	g->div_slots = st->div_slots;
	g->slot_stride = st->slot_stride;
	g->payload_off = st->payload_off;
	g->payload_bytes = st->payload_bytes;
	g->stream = si;
	g->last_frame = 0;
	g->last_slot = NULL;
}

/* Stream si's geometry in g, loaded unless g holds it already (records come a stream at a time). */
GI_HD static inline void gi_stream_geom_use(struct gi_stream_geom *g, const struct gi_exec_ctx *ctx, uint32_t si)
{
	if (g->stream != si)
		gi_stream_geom_load(&ctx->streams[si], si, g);
}

/* gi_stream_slot() from the copy */
GI_HD static inline struct gi_frame_slot *gi_geom_slot(struct gi_stream_geom *g, uint64_t frame)
{
	if (g->last_slot == NULL || frame != g->last_frame) {
		g->last_frame = frame;
		g->last_slot = (struct gi_frame_slot *)(g->ring + GI_ALIGN_UP(sizeof(struct gi_frame_ring_hdr), 4096) +
							gi_div_r(&g->div_slots, frame) * g->slot_stride);
	}
	return g->last_slot;
}

/* gi_stream_payload() from the copy */
GI_HD static inline uint8_t *gi_geom_payload(const struct gi_stream_geom *g, struct gi_frame_slot *s, uint32_t index)
{
	return (uint8_t *)s + g->payload_off + (uint64_t)index * g->payload_bytes;
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

/*
 * The frame slot's packets as configured: an HSB stream that learns its
 * frame end (rocev2.frame_end: auto) has a bit for a record of its own
 * whatever its epoch learned.  What the parser is given, so that a packet
 * parses the same before and after the stream learns (the phased executor
 * parses a batch before sequencing it, the serial path packet by packet).
 */
GI_HD static inline uint32_t gi_stream_slot_packets(const struct gi_stream_rt *st)
{
	return st->format == GI_FORMAT_ROCEV2 && gi_fmt_rocev2_end_auto(&st->fp) ? st->data_packets + 1 : st->packets;
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
	const struct gi_frame_tensor *ft = &st->ring->tensor;
	st->tensor.sample = ft->dtype != GI_DT_NONE ? ft->sample : (uint32_t)GI_TS_NONE;
	if (st->tensor.sample != GI_TS_NONE) {
		st->tensor.dtype = ft->dtype;
		st->tensor.big = ft->big;
		st->tensor.missing = ft->missing;
		st->tensor.scale = (float)ft->scale;
		st->tensor.offset = (float)ft->offset;
		gi_tensor_setup(&st->tensor, st->ring->frame_bytes, ft->off);
	}
}

GI_HD static inline int gi_frame_is_open(const struct gi_frame_slot *s, uint64_t frame)
{
	if (GI_LOADS_FIRST) /* all three words, then the tests (gi_hd.h): one round trip to L2, not three */
		return (s->frame == frame) & (s->state == GI_FRAME_FILLING) & (s->seq == 2 * frame + 1);
	return s->frame == frame && s->state == GI_FRAME_FILLING && s->seq == 2 * frame + 1;
}

GI_EXTERN_C_END

#endif /* GI_STREAM_H */
