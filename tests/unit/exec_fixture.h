/*
 * exec_fixture.h — the executor test fixture the unit tests share: frame
 * rings and runtimes for a few streams, the UDP port lookup map, and a batch
 * ring that packets are queued into and handed to gi_exec_slot_host()
 * exactly as the host executor runs them.  Test-only.
 *
 * Every fixture has a twin with its own streams and frame rings that gets
 * each batch through the phased executor (gi_exec_slot_phased) instead of
 * the serial reference path; after every batch, tick and flush the two
 * must be identical — frame ring bytes, stream state and counters — so each
 * test written against the serial path checks the phased one too.  Tests
 * change a stream's configuration on f->st[] before a batch (the twin
 * copies it) and tick or flush streams through exf_tick()/exf_flush().
 *
 * A test describes its streams in a struct exf_conf (format, stream count,
 * packets per frame, payload size, window, slots, batch size) and fills in
 * what differs per stream — st->fp, map entries, next_same_udp — in its
 * stream hook (which can read f->conf.arg and keep data in f->priv).
 * Packet builders and assertions stay in each test.
 *
 *   static int setup(void **state) { *state = exf_new(&conf); return 0; }
 *   static int teardown(void **state) { exf_free(*state); return 0; }
 */
#ifndef GI_EXEC_FIXTURE_H
#define GI_EXEC_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/executor.h"
#include "kernels/phase_commit.h"
#include "kernels/phase_parse.h"
#include "kernels/phase_place.h"
#include "kernels/phase_sequence_solo.h"
#include "kernels/trip.h"

#define EXF_MAX_STREAMS 4
#define EXF_PKT_MAX 2048 /* bytes per queued packet buffer (= TP_MAX) */

struct exec_fixture;

struct exf_conf {
	uint32_t format;                     /* every stream's format ... */
	uint32_t formats[EXF_MAX_STREAMS];   /* ... unless set here (0: .format) */
	const char *names[EXF_MAX_STREAMS];  /* ring names (NULL: "s") */
	int n_streams;
	uint32_t packets;                    /* per frame */
	uint32_t payload;                    /* bytes per packet */
	uint32_t last;                       /* the frame's last packet's bytes (0: payload) */
	uint32_t window;
	uint32_t slots;                      /* frame ring slots */
	uint64_t frame_timeout_ns;
	uint32_t maxb;                       /* batch slot size; 0: no batch ring (streams only) */
	uint32_t split;                      /* header/data split: segment 0 holds at most this many bytes */
	uint32_t nic_ts;                     /* slots carry NIC times (GI_SLOT_NIC_TS): exf_nic_ns(packet's number) */
	uint64_t arg;                        /* for the stream hook */
	const struct gi_frame_tensor *tensor; /* every frame ring's tensor (its bytes computed here), NULL: none */
	/* After stream s has its ring, runtime and default format params
	 * (gi_format_params_init): set st->fp, the map, next_same_udp. */
	void (*stream)(struct exec_fixture *f, int s);
};

struct exec_fixture {
	struct exf_conf conf;
	struct gi_exec_ctx ctx;
	struct gi_stream_rt st[EXF_MAX_STREAMS];
	uint16_t *map;
	uint8_t *ring_mem[EXF_MAX_STREAMS];
	uint64_t frame_bytes; /* of each stream's frame ring */
	struct gi_exec_counters ctr;
	struct gi_batch_ring *ring;
	uint8_t (*pkts)[EXF_PKT_MAX];
	uint8_t (*seg1)[EXF_PKT_MAX]; /* with split only */
	uint32_t n;                   /* packets queued in the current batch */
	uint64_t now;
	uint64_t fed;                 /* packets handed to the executor */
	void *priv;                   /* the test's own per-fixture data, freed with the fixture */
	struct exec_fixture *twin;    /* the same batches through the phased executor (exf_new only) */
	struct gi_batch_hdr *twin_scratch;
	uint32_t twin_stalls;         /* phased batches that took more than one round */
	uint32_t twin_runs;           /* streams the phased batches sequenced as one in-order run */
	uint32_t twin_run_stalls;     /* ... of which a stream's run stalled (one stream: gi_solo_finish) */
	uint32_t twin_lane_frames;    /* frames a one-stream run's 2b sequenced together (gi_solo_group_lanes) */
	uint32_t twin_gpu_form;       /* the twin splits its phases as the GPU does (exf_phases_gpu_form) */
	uint32_t twin_mixed;          /* the twin takes the serial path on every other batch (pipeline auto's
				       * hand-overs: executor.h), the phased one on the rest */
	uint32_t twin_serial;         /* batches the twin took the serial path on */
};

/* The batch ring's slot layout (ring.h, GI_SLOT_*). */
static inline uint32_t exf_layout(const struct exf_conf *c)
{
	return (c->split ? GI_SLOT_SPLIT : 0u) | (c->nic_ts ? GI_SLOT_NIC_TS : 0u);
}

/* The tests' pseudo-random numbers (xorshift64): the next of state *s, which must not be 0. */
static inline uint64_t exf_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The NIC time the fixture gives the k-th packet it queues (nic_ts): scattered, every 7th none (0). */
static inline uint64_t exf_nic_ns(uint64_t k)
{
	return k % 7 == 3 ? 0 : 1700000000000000000ull + (k * 2654435761u) % 1000003u;
}

/* Stream s takes UDP port `port` on port 0 (one stream per UDP port). */
static inline void exf_map_port(struct exec_fixture *f, int s, uint16_t port)
{
	f->map[port] = (uint16_t)s;
}

/* Stream s joins the streams chained on UDP port `port`, told apart by the format's match. */
static inline void exf_chain_port(struct exec_fixture *f, int s, uint16_t port)
{
	f->st[s].next_same_udp = f->map[port];
	f->map[port] = (uint16_t)s;
}

static inline void exf_init(struct exec_fixture *f, const struct exf_conf *c)
{
	memset(f, 0, sizeof(*f));
	f->conf = *c;
	f->map = malloc(65536 * sizeof(uint16_t));
	for (int i = 0; i < 65536; i++)
		f->map[i] = GI_STREAM_NONE;
	uint32_t last = c->last ? c->last : c->payload;
	const uint64_t fb = (uint64_t)(c->packets - 1) * c->payload + last;
	struct gi_frame_tensor ft = { 0 };
	if (c->tensor) {
		ft = *c->tensor;
		ft.bytes = gi_tensor_bytes(ft.sample, ft.dtype, fb);
	}
	f->frame_bytes = gi_frame_ring_bytes_t(c->slots, c->packets, c->payload, ft.bytes);
	for (int s = 0; s < c->n_streams; s++) {
		uint32_t fmt = c->formats[s] ? c->formats[s] : c->format;
		f->ring_mem[s] = aligned_alloc(4096, GI_ALIGN_UP(f->frame_bytes, 4096));
		memset(f->ring_mem[s], 0, f->frame_bytes);
		struct gi_frame_ring_hdr *h = (struct gi_frame_ring_hdr *)f->ring_mem[s];
		gi_frame_ring_init_t(h, c->slots, c->packets, c->payload, fb, fmt, (uint32_t)s,
				     c->names[s] ? c->names[s] : "s", 1, c->tensor ? &ft : NULL);
		f->st[s] = (struct gi_stream_rt){ .format = fmt, .packets = c->packets, .payload_bytes = c->payload,
						  .last_bytes = last, .data_packets = c->packets,
						  .window = c->window, .frame_timeout_ns = c->frame_timeout_ns, .ring = h,
						  .nic_ts = c->nic_ts ? GI_NIC_TS_REALTIME : GI_NIC_TS_NONE };
		gi_format_params_init(&f->st[s].fp, (enum gi_format)fmt);
		if (c->stream)
			c->stream(f, s);
	}
	f->ctx = (struct gi_exec_ctx){ .n_streams = (uint32_t)c->n_streams, .n_ports = 1, .streams = f->st,
				       .map = f->map };
	if (c->maxb) {
		uint64_t rb = gi_ring_bytes(4, c->maxb, exf_layout(c));
		f->ring = aligned_alloc(64, GI_ALIGN_UP(rb, 64));
		memset(f->ring, 0, rb);
		gi_ring_init(f->ring, 4, c->maxb, exf_layout(c));
		f->pkts = malloc(c->maxb * sizeof(*f->pkts));
		if (c->split)
			f->seg1 = malloc(c->maxb * sizeof(*f->seg1));
	}
	f->now = 1000;
}

static inline void exf_fini(struct exec_fixture *f)
{
	for (int s = 0; s < f->conf.n_streams; s++)
		free(f->ring_mem[s]);
	free(f->map);
	free(f->ring);
	free(f->pkts);
	free(f->seg1);
	free(f->priv);
}

static inline struct exec_fixture *exf_new(const struct exf_conf *c)
{
	struct exec_fixture *f = malloc(sizeof(*f));
	exf_init(f, c);
	if (c->maxb) {
		f->twin = malloc(sizeof(*f->twin));
		exf_init(f->twin, c);
		f->twin_scratch = aligned_alloc(64, GI_ALIGN_UP(gi_batch_scratch_bytes(c->maxb), 64));
	}
	return f;
}

/* The stream configuration a test may have changed, to the twin. */
static inline void exf_twin_config(struct exec_fixture *f)
{
	for (int s = 0; s < f->conf.n_streams; s++) {
		struct gi_stream_rt *a = &f->st[s], *b = &f->twin->st[s];
		b->format = a->format;
		b->packets = a->packets;
		b->payload_bytes = a->payload_bytes;
		b->last_bytes = a->last_bytes;
		b->data_packets = a->data_packets;
		b->window = a->window;
		b->frame_timeout_ns = a->frame_timeout_ns;
		b->fp = a->fp;
		b->next_same_udp = a->next_same_udp;
	}
	memcpy(f->twin->map, f->map, 65536 * sizeof(uint16_t));
}

/*
 * Two executors' streams a[] and b[] (each with its own frame rings of
 * ring_bytes, and counters ca, cb) reached the same state: every byte of
 * every frame ring, every counter, the stream words that decide what comes
 * next; else say what differs after `after` and abort.  The fixture's twin
 * check, and fuzz_exec's serial path against the phased ones.
 */
static inline void exf_same_state(const struct gi_stream_rt *a, const struct gi_stream_rt *b, uint32_t n_streams,
				  uint64_t ring_bytes, const struct gi_exec_counters *ca,
				  const struct gi_exec_counters *cb, const char *after)
{
	for (uint32_t s = 0; s < n_streams; s++, a++, b++) {
		if (memcmp(&a->c, &b->c, sizeof(a->c)) || memcmp(&a->frame_latency, &b->frame_latency, sizeof(a->frame_latency)) ||
		    memcmp(&a->frame_assembly, &b->frame_assembly, sizeof(a->frame_assembly)) ||
		    a->next_pub != b->next_pub || a->max_frame != b->max_frame || a->min_frame != b->min_frame ||
		    a->seq_max != b->seq_max || a->started != b->started || a->epochs != b->epochs ||
		    a->frame_base != b->frame_base || a->raw_max != b->raw_max || a->defer || b->defer ||
		    a->prev_raw_max != b->prev_raw_max || a->prev_seq_max != b->prev_seq_max ||
		    a->raw_origin != b->raw_origin || a->seq_origin != b->seq_origin ||
		    a->sender_max != b->sender_max || a->sender_seen != b->sender_seen ||
		    /* what a frame_end auto epoch learned */
		    a->packets != b->packets || a->end_unknown != b->end_unknown) {
			fprintf(stderr, "phased != serial after %s: stream %u state (packets %llu/%llu lost %llu/%llu dup "
				"%llu/%llu late %llu/%llu next_pub %llu/%llu)\n",
				after, s, (unsigned long long)a->c.packets, (unsigned long long)b->c.packets,
				(unsigned long long)a->c.lost, (unsigned long long)b->c.lost,
				(unsigned long long)a->c.duplicates, (unsigned long long)b->c.duplicates,
				(unsigned long long)a->c.late, (unsigned long long)b->c.late,
				(unsigned long long)a->next_pub, (unsigned long long)b->next_pub);
			abort();
		}
		const uint8_t *ra = (const uint8_t *)a->ring, *rb = (const uint8_t *)b->ring;
		if (memcmp(ra, rb, ring_bytes)) {
			for (uint64_t i = 0; i < ring_bytes; i++)
				if (ra[i] != rb[i]) {
					fprintf(stderr, "phased != serial after %s: stream %u frame ring byte %llu\n", after, s,
						(unsigned long long)i);
					break;
				}
			abort();
		}
	}
	if (memcmp(ca->drops, cb->drops, sizeof(ca->drops)) || ca->packets != cb->packets ||
	    ca->batches != cb->batches) {
		fprintf(stderr, "phased != serial after %s: executor counters\n", after);
		abort();
	}
}

/* Serial and phased reached the same state: every byte of every frame ring, every counter. */
static inline void exf_twin_check(const struct exec_fixture *f, const char *after)
{
	exf_same_state(f->st, f->twin->st, (uint32_t)f->conf.n_streams, f->frame_bytes, &f->ctr, &f->twin->ctr, after);
}

/* Frame timeouts, or the shutdown flush, of stream s — on both executors. */
static inline void exf_tick(struct exec_fixture *f, int s, uint64_t now)
{
	gi_stream_tick(&f->st[s], now);
	if (f->twin) {
		gi_stream_tick(&f->twin->st[s], now);
		exf_twin_check(f, "a tick");
	}
}

static inline void exf_flush(struct exec_fixture *f, int s, uint64_t now)
{
	gi_stream_flush(&f->st[s], now);
	if (f->twin) {
		gi_stream_flush(&f->twin->st[s], now);
		exf_twin_check(f, "a flush");
	}
}

static inline void exf_free(struct exec_fixture *f)
{
	if (f->twin) {
		exf_fini(f->twin);
		free(f->twin);
		free(f->twin_scratch);
	}
	exf_fini(f);
	free(f);
}

/*
 * One slot through the batch's trip (kernels/trip.h), split among workers
 * as the GPU's CTA splits them (a worker per record, per stream, a warp per
 * payload), each worker played in turn between the barriers: the GPU form
 * of every step, on the host.  kernels/exec_cuda.cu runs the same trip
 * (trip_body.h) with its CTA's threads.
 */
static inline uint32_t exf_trip_workers(enum gi_step s)
{
	switch (s) {
	case GI_STEP_PARSE: return 5;
	case GI_STEP_ICRC: return 3; /* a worker per pending ICRC, slice-by-8 */
	case GI_STEP_RUN: return 4;
	case GI_STEP_SEQUENCE: return 5; /* the bits of one stream's run; or a worker per stream */
	case GI_STEP_VERIFY: return 5; /* each frame's CRC in five slices */
	case GI_STEP_TENSOR: return 3; /* each frame's tensor in three strides of groups */
	default: return 2;
	}
}

#define GI_TRIP_FN static inline void exf_trip
#define GI_TRIP_BE void
#define GI_TRIP_FOR(step, w, nw) for (uint32_t w = 0, nw = exf_trip_workers(step); w < nw; w++)
#define GI_TRIP_PLACE_FOR(w, nw, lane, nlanes) /* three warps, each playing its 32 lanes */ \
	for (uint32_t w = 0, nw = 3, lane = 0, nlanes = 32; w < nw; w++)
#define GI_TRIP_EARLY_FOR(w, nw, lane, nlanes) /* the GPU's warps beside thread 0's 2b: two, 32 lanes each */ \
	for (uint32_t w = 0, nw = 2, lane = 0, nlanes = 32; w < nw; w++)
#define GI_TRIP_SOLO_FOR(lane, nlanes) for (uint32_t lane = 0, nlanes = 1, once_ = 1; once_; once_ = 0)
#define GI_TRIP_COMMIT_FOR(w, nw, lane, nlanes) \
	for (uint32_t w = 0, nw = exf_trip_workers(GI_STEP_COMMIT), lane = 0, nlanes = 1; w < nw; w++)
#define GI_TRIP_ONE if (1)
#define GI_TRIP_BARRIER() do { } while (0)
#define GI_TRIP_ALL(x) (x)
#define GI_TRIP_ANY(x) (x)
/* as the GPU: one stream's ranks by a scan (there: ballots, exec_cuda.cu gi_cta_scan), the others' by 2a */
#define GI_TRIP_SCAN_RANKS(t, be) ((t)->n_streams == 1 ? (gi_solo_scan_serial((t)->h), 1u) : 0u)
#define GI_TRIP_SCAN_STARTS(t, be) gi_solo_frames_serial((t)->h, (t)->max_pkts)
#define GI_TRIP_MARK(step) do { } while (0)
#define GI_TRIP_BESIDE(t, be) do { } while (0)
#include "kernels/trip_body.h"
#undef GI_TRIP_FN
#undef GI_TRIP_BE
#undef GI_TRIP_FOR
#undef GI_TRIP_PLACE_FOR
#undef GI_TRIP_EARLY_FOR
#undef GI_TRIP_SOLO_FOR
#undef GI_TRIP_COMMIT_FOR
#undef GI_TRIP_ONE
#undef GI_TRIP_BARRIER
#undef GI_TRIP_ALL
#undef GI_TRIP_ANY
#undef GI_TRIP_SCAN_RANKS
#undef GI_TRIP_SCAN_STARTS
#undef GI_TRIP_MARK
#undef GI_TRIP_BESIDE

static inline void exf_phases_gpu_form(struct gi_exec_ctx *ctx, struct gi_exec_counters *ctr,
				       struct gi_batch_slot *slot, uint32_t max_pkts, uint32_t split, uint64_t now,
				       struct gi_batch_hdr *h)
{
	static uint32_t t8[8 * 256]; /* the CTA's slice-by-8 CRC tables (shared memory there) */

	if (t8[256] == 0) {
		memcpy(t8, gi_crc32_table, 256 * sizeof(uint32_t));
		for (uint32_t row = 1; row < 8; row++)
			gi_crc32_t8_row(t8, row, 0, 1);
	}
	gi_batch_begin(h, GI_MIN(slot->n_pkts, max_pkts));
	struct gi_trip t = { .ctx = ctx, .slot = slot, .h = h, .streams = NULL, .n_streams = ctx->n_streams,
			     .owner = GI_GROUP_ANY, .max_pkts = max_pkts, .split = split, .t8 = t8, .now = now,
			     .icrc_inline = 0, .late_next = 1, .early = 1 };
	exf_trip(&t, NULL);
	gi_batch_end(h, ctr);
	for (uint32_t s = 0; s < ctx->n_streams; s++) /* next_frame at the batch's end, as the GPU moves it */
		gi_stream_publish_next(&ctx->streams[s], 0);
}

/* Hand the queued packets to the executor as one batch on port 0. */
static inline void flush_batch(struct exec_fixture *f)
{
	struct gi_batch_slot *s = gi_ring_slot(f->ring, 0);
	s->n_pkts = f->n;
	s->port = 0;
	gi_exec_slot_host(&f->ctx, &f->ctr, s, f->conf.maxb, exf_layout(&f->conf), f->now);
	if (f->twin) {
		exf_twin_config(f);
		if (f->twin_mixed && (f->twin->ctr.batches & 1)) {
			gi_exec_slot_host(&f->twin->ctx, &f->twin->ctr, s, f->conf.maxb, exf_layout(&f->conf), f->now);
			f->twin_serial++;
			f->twin_scratch->round = 0;
			f->twin_scratch->runs = 0;
			f->twin_scratch->solo_stall_rec = GI_REC_NONE;
			f->twin_scratch->lane_frames = 0;
		} else if (f->twin_gpu_form)
			exf_phases_gpu_form(&f->twin->ctx, &f->twin->ctr, s, f->conf.maxb, exf_layout(&f->conf), f->now,
					    f->twin_scratch);
		else
			gi_exec_slot_phased(&f->twin->ctx, &f->twin->ctr, GI_GROUP_ANY, NULL, 0, s, f->conf.maxb,
					    exf_layout(&f->conf), f->now, f->twin_scratch);
		f->twin_stalls += f->twin_scratch->round > 1;
		f->twin_runs += f->twin_scratch->runs;
		f->twin_run_stalls += f->twin_scratch->solo_stall_rec != GI_REC_NONE;
		f->twin_lane_frames += f->twin_scratch->lane_frames;
		exf_twin_check(f, "a batch");
	}
	f->fed += f->n;
	f->n = 0;
}

/* The buffer the next packet is built in (a full batch is flushed first). */
static inline uint8_t *next_pkt(struct exec_fixture *f)
{
	if (f->n == f->conf.maxb)
		flush_batch(f);
	return f->pkts[f->n];
}

/* Queue the packet of `len` bytes built in next_pkt()'s buffer. */
static inline void queue_len(struct exec_fixture *f, uint32_t len)
{
	struct gi_batch_slot *s = gi_ring_slot(f->ring, 0);
	gi_slot_addr(s)[f->n] = (uint64_t)(uintptr_t)f->pkts[f->n];
	gi_slot_len(s, f->conf.maxb)[f->n] = len;
	if (f->conf.nic_ts)
		gi_slot_nic_ns(s, f->conf.maxb, f->ring->split)[f->n] = exf_nic_ns(f->fed + f->n);
	f->n++;
}

/* Queue a copy of pkt.  With split, the first conf.split bytes go to
 * segment 0 and the rest to segment 1. */
static inline void queue_raw(struct exec_fixture *f, const uint8_t *pkt, uint32_t len)
{
	uint8_t *b = next_pkt(f);
	uint32_t i = f->n, h = f->conf.split && len > f->conf.split ? f->conf.split : len;
	memcpy(b, pkt, h);
	if (f->conf.split) {
		struct gi_batch_slot *s = gi_ring_slot(f->ring, 0);
		memcpy(f->seg1[i], pkt + h, len - h);
		gi_slot_addr1(s, f->conf.maxb)[i] = (uint64_t)(uintptr_t)f->seg1[i];
		gi_slot_len0(s, f->conf.maxb)[i] = h;
	}
	queue_len(f, len);
}

static inline uint64_t frames_done(const struct gi_stream_rt *st)
{
	return st->c.frames[GI_FRAMES_COMPLETE] + st->c.frames[GI_FRAMES_PARTIAL] + st->c.frames[GI_FRAMES_TIMED_OUT];
}

/* Every packet handed to the executor lands in exactly one of these. */
static inline uint64_t accounted(const struct exec_fixture *f)
{
	uint64_t a = 0;
	for (int s = 0; s < f->conf.n_streams; s++)
		a += f->st[s].c.packets + f->st[s].c.metadata + f->st[s].c.duplicates + f->st[s].c.late;
	for (int r = 0; r < GI_DROP__COUNT; r++)
		a += f->ctr.drops[r];
	return a;
}

#endif
