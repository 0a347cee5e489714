/*
 * gpu_model_probe.cu — one kernel per body of the cuda executor's
 * per-packet path, each compiling that body exactly once, for
 * bench/gpu_model.py to count in PTX (never run, never linked).
 *
 * The executor's kernels inline every body at several call sites (the
 * serial steps, ticks, flushes), so counting them there mixes paths; here
 * each probe calls one body on inputs read from memory (nothing folds
 * away).  The counts are static: a body's branches that the common path
 * does not take count too.  The path modelled is bench/gpu_exec_bench's:
 * format custom (an 8-bit counter), packets in order, one stream per ring
 * (phase_sequence.h "one stream per group").
 */
#include "exec_cuda.cu" /* the kernels' own file: its static device functions (gi_cta_scan) too */

/* 1: one packet from its descriptor to its record: L2-L4, lookup, the custom parser */
extern "C" __global__ void probe_parse(const struct gi_exec_ctx *ctx, const struct gi_batch_slot *slot,
				       struct gi_rec *r, uint32_t max_pkts, uint32_t i)
{
	struct gi_pkt_desc d;
	struct gi_l4 l4;
	uint32_t si;
	gi_slot_pkt(slot, max_pkts, 0, i, &d);
	if (gi_parse_l4(d.pkt, d.len, d.hdr_len, &l4) != GI_L4_OK)
		return;
	si = ctx->map[l4.dst_port];
	const struct gi_stream_rt *st = &ctx->streams[si];
	const uint8_t *u = d.pkt + l4.payload_off;
	r->reason = (uint8_t)gi_fmt_custom_parse(&st->fp, u, l4.payload_len, d.hdr_len - l4.payload_off, st->packets,
						  st->payload_bytes, st->last_bytes, &r->pi);
	r->stream = (uint16_t)si;
	r->src_off = (uint16_t)(l4.payload_off + r->pi.payload_off);
	r->state = GI_REC_PARSED;
}

/* 2a: one record placed against its stream's batch-start state (a thread's first: its geometry loaded) */
extern "C" __global__ void probe_run_place(const struct gi_stream_rt *st, struct gi_rec *r, uint32_t rank)
{
	struct gi_stream_geom geo;
	gi_stream_geom_load(st, r->stream, &geo);
	r->fast = (uint8_t)gi_seq_fast_place(st, &geo, r, rank);
}

/* 2a: one iteration of the rank scan (the loop body of gi_phase_run_place) */
extern "C" __global__ void probe_scan_iter(const struct gi_rec *rec, const struct gi_rec *r, uint32_t j,
					   uint32_t *rank, uint32_t *prev)
{
	if (rec[j].stream != r->stream || rec[j].state != GI_REC_PARSED)
		return;
	if (*prev == GI_REC_NONE)
		*prev = j;
	(*rank)++;
}

/* 2a (one stream): a block scan of the records (run twice per batch: ranks, then frame starts) */
extern "C" __global__ void probe_scan(struct gi_batch_hdr *h, uint32_t n)
{
	struct gi_rec *rec = gi_batch_recs(h);
	gi_cta_scan(h, n, [&](uint32_t i) { return rec[i].state == GI_REC_PARSED; },
		    [&](uint32_t i, uint32_t pos, uint32_t prev) {
			    rec[i].rank = (uint16_t)pos;
			    rec[i].prev = (uint16_t)prev;
		    });
}

/* 2b (one stream), after the per-frame commit: one record placed and its bit set */
extern "C" __global__ void probe_solo_place(const struct gi_exec_ctx *ctx, struct gi_batch_hdr *h)
{
	gi_phase_solo_place(ctx, h, threadIdx.x, blockDim.x);
}

/* 2a: one record against its predecessor */
extern "C" __global__ void probe_run_link(const struct gi_stream_rt *st, struct gi_rec *r, const struct gi_rec *p)
{
	r->link = (uint8_t)((!p || p->fast) && gi_seq_fast_link(st, r, p));
}

/* 2b, per record: one record into its frame's bitmap word (the loop body of gi_seq_fast_commit) */
extern "C" __global__ void probe_commit_rec(struct gi_rec *r, struct gi_frame_slot *s, uint64_t **word,
					    uint64_t *bits, uint32_t *widx, uint32_t *n)
{
	uint32_t w = r->index >> 6;
	if (!*word || w != *widx) {
		if (*word)
			**word |= *bits;
		*widx = w;
		*word = &gi_frame_bitmap(s)[w];
		*bits = 0;
	}
	*bits |= 1ull << (r->index & 63);
	(*n)++;
	r->state = GI_REC_PLACE;
}

/* 2b, per frame: open it (seqlock entry, header, bitmap) */
extern "C" __global__ void probe_frame_open(struct gi_stream_rt *st, const struct gi_rec *r)
{
	struct gi_frame_slot *s = gi_stream_slot(st, r->frame);
	if (!gi_frame_is_open(s, r->frame))
		gi_frame_open(st, s, r->frame, r->pi.sensor_id, gi_seq_sensor_frame(st, &r->pi, r->frame),
			      r->pi.timestamp, 0);
}

/* 2b, per frame: its bits and counts in, then publish (deferred) or close */
extern "C" __global__ void probe_frame_end(struct gi_stream_rt *st, struct gi_frame_slot *s, uint64_t frame,
					   uint32_t n, uint32_t last_index, uint64_t *word, uint64_t bits, uint32_t closes,
					   uint64_t now)
{
	gi_seq_fast_frame_end(st, s, frame, n, last_index, word, bits, closes, now);
}

/* 3: one lane's 16-byte chunks of one payload */
extern "C" __global__ void probe_copy(uint8_t *dst, const uint8_t *src, uint32_t len, uint32_t lane, uint32_t nlanes)
{
	gi_copy_lanes(dst, src, len, lane, nlanes);
}

/* 4: a stream's round made visible (mirror by a warp's lanes, a fence, seqlock words), next_frame after the
 * end's fence */
extern "C" __global__ void probe_make_visible(struct gi_stream_rt *st)
{
	gi_stream_make_visible(st, 1, threadIdx.x % 32, 32);
	if (threadIdx.x % 32 == 0)
		gi_stream_publish_next(st, 1);
}

/* end of batch: counters (thread 0), then the slot back (fence, tail) */
extern "C" __global__ void probe_batch_end(const struct gi_batch_hdr *h, struct gi_exec_counters *ctr,
					   struct gi_batch_ring *ring, uint64_t idx, uint64_t lat)
{
	gi_batch_end(h, ctr);
	gi_hist_observe(&ctr->batch_latency, lat);
	gi_hist_observe(&ctr->batch_service, lat);
	gi_ring_complete(ring, idx);
}
