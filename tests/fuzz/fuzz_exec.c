/*
 * fuzz_exec.c — the whole per-packet path of the host executor
 * (gi_exec_slot_host(): classify, place, commit, publish) plus frame
 * timeouts and shutdown flush, on hostile packet sequences for up to four
 * streams of any formats, chained on shared UDP ports.  Test-only,
 * single-threaded.  Set up like tests/unit/exec_fixture.h, without its
 * per-input loop over the 65536-entry port map (coverage-traced, that
 * loop cost most of each run); frame rings are allocated to their exact
 * size.
 *
 * Input: [u8 streams][u8 formats][u8 slots][u8 window][u8 split][u16 packets]
 *        [u16 payload][u16 last][u32 timeout: bit 31 the slots carry NIC
 *        times, each stream notes them], then per stream [u16 UDP port]
 *        [format params (fuzz.h)], then records
 *        [u8 op][u16 len][len bytes of Ethernet frame]:
 *   op & 3: 0 queue the packet; 1 queue it and run the batch; 2 advance
 *   the clock by (op >> 2) ms and tick every stream; 3 run the batch.
 * Each packet sits in buffers of its exact size (two with split), so ASan
 * sees any read past it.  At the end every stream is flushed, and the
 * accounting invariant (DESIGN.md) must hold: every packet handed over is
 * in exactly one of placed, metadata, duplicates, late or drops[reason].
 *
 * A twin with its own streams and frame rings takes every batch through
 * the phased executor instead — as the host runs it, or split among
 * workers and lanes as the GPU's CTA splits it (exf_phases_gpu_form,
 * tests/unit/exec_fixture.h), or now and then the serial path itself, as
 * pipeline auto hands a worker's streams over (executor.h): bits 2-3 of a
 * running op pick which (enum fz_form), a full batch takes them in turn —
 * and after every batch, tick and flush the two must be identical, every
 * frame ring byte and every counter (exf_same_state): the serial path is
 * the reference of the phased ones, on whatever the fuzzer finds as on
 * test_phased's traffic.
 */
#include "fuzz.h"
#include "kernels/executor.h"
#include "tests/unit/exec_fixture.h"

#define FZ_MAX_STREAMS 4
#define FZ_MAXB 8u

struct fz_exec {
	struct gi_exec_ctx ctx;
	struct gi_stream_rt st[FZ_MAX_STREAMS];
	struct gi_exec_counters ctr;
	struct gi_batch_ring *ring; /* one slot of FZ_MAXB packets */
	uint32_t split;             /* header segment size, 0: no split */
	uint32_t layout;            /* the slot's (ring.h, GI_SLOT_*) */
	uint64_t ring_bytes;        /* of each frame ring, the twin's too */
	uint64_t now;
	uint64_t fed;               /* packets handed to the executor */
	struct fz_pkt pkts[FZ_MAXB];
	uint32_t n;                 /* queued in the current batch */
};

static uint16_t map[65536];
static struct fz_exec x;         /* static: 4 KB of batch state off the stack */
static struct gi_stream_rt y[FZ_MAX_STREAMS]; /* the twin's streams, on frame rings of their own */
static struct gi_exec_ctx y_ctx;
static struct gi_exec_counters y_ctr;
static struct gi_batch_hdr *y_scratch;

/* How the twin takes a batch (bits 2-3 of a running op; the GPU's form twice as often as the others). */
enum fz_form { FZ_PHASED, FZ_GPU_FORM, FZ_SERIAL, FZ_GPU_FORM_TOO, FZ__FORMS };

/* The queued packets as one batch: the serial path, and the twin's in `form`. */
static void run_batch(struct fz_exec *x, enum fz_form form)
{
	struct gi_batch_slot *s = gi_ring_slot(x->ring, 0);
	const uint32_t layout = x->layout;
	s->n_pkts = x->n;
	s->port = 0;
	gi_exec_slot_host(&x->ctx, &x->ctr, s, FZ_MAXB, layout, x->now);
	if (form == FZ_SERIAL)
		gi_exec_slot_host(&y_ctx, &y_ctr, s, FZ_MAXB, layout, x->now);
	else if (form == FZ_PHASED)
		gi_exec_slot_phased(&y_ctx, &y_ctr, GI_GROUP_ANY, NULL, 0, s, FZ_MAXB, layout, x->now, y_scratch);
	else
		exf_phases_gpu_form(&y_ctx, &y_ctr, s, FZ_MAXB, layout, x->now, y_scratch);
	static const char *const after[FZ__FORMS] = { "a batch", "a batch (GPU form)", "a batch (both serial)",
						      "a batch (GPU form)" };
	exf_same_state(x->st, y, x->ctx.n_streams, x->ring_bytes, &x->ctr, &y_ctr, after[form]);
	x->fed += x->n;
	for (uint32_t i = 0; i < x->n; i++)
		fz_pkt_free(&x->pkts[i]);
	x->n = 0;
}

static void queue(struct fz_exec *x, const uint8_t *p, uint32_t len)
{
	if (x->n == FZ_MAXB)
		run_batch(x, (enum fz_form)(x->ctr.batches % FZ__FORMS));
	struct gi_batch_slot *s = gi_ring_slot(x->ring, 0);
	struct fz_pkt *k = &x->pkts[x->n];
	fz_pkt_make(k, p, len, x->split ? x->split : len);
	gi_slot_addr(s)[x->n] = (uint64_t)(uintptr_t)k->seg0;
	gi_slot_len(s, FZ_MAXB)[x->n] = len;
	if (x->split) {
		gi_slot_addr1(s, FZ_MAXB)[x->n] = (uint64_t)(uintptr_t)k->seg1;
		gi_slot_len0(s, FZ_MAXB)[x->n] = k->hdr_len;
	}
	if (x->layout & GI_SLOT_NIC_TS)
		gi_slot_nic_ns(s, FZ_MAXB, x->layout)[x->n] = exf_nic_ns(x->fed + x->n);
	x->n++;
}

/* Every packet handed to the executor lands in exactly one of these. */
static uint64_t fz_accounted(const struct fz_exec *x)
{
	uint64_t a = 0;
	for (uint32_t s = 0; s < x->ctx.n_streams; s++)
		a += x->st[s].c.packets + x->st[s].c.metadata + x->st[s].c.duplicates + x->st[s].c.late;
	for (int r = 0; r < GI_DROP__COUNT; r++)
		a += x->ctr.drops[r];
	return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z = { data, size };

	memset(&x, 0, sizeof(x));
	memset(y, 0, sizeof(y));
	memset(&y_ctr, 0, sizeof(y_ctr));
	memset(map, 0xff, sizeof(map)); /* GI_STREAM_NONE */
	uint8_t sf = fz_u8(&z);
	uint32_t n_streams = 1u + (sf & 3u);
	uint8_t formats = fz_u8(&z); /* two bits per stream */
	uint32_t slots = 2u + fz_u8(&z) % 7u;
	uint32_t window = 1u + fz_u8(&z) % (slots - 1u);
	uint8_t split = fz_u8(&z);
	x.split = split & 0x80 ? 14u + split % 114u : 0; /* header segment 14..127 bytes */
	uint32_t packets = fz_packets(&z, 32);
	uint32_t payload = fz_payload(&z, 256);
	uint32_t last = fz_payload(&z, payload); /* the frame's last packet may be shorter */
	uint32_t tw = fz_u32(&z);
	uint64_t timeout_ns = (uint64_t)(tw % 64u) * 1000000u;
	x.layout = (x.split ? GI_SLOT_SPLIT : 0u) | (tw >> 31 ? GI_SLOT_NIC_TS : 0u);
	/* sf's high bits: every stream's frames also as a typed tensor (sample 1..10, one of its types,
	 * lost samples zero, NaN or kept) over whatever geometry came: a frame that is not whole groups
	 * converts its whole groups only */
	static const uint8_t types[GI_TS__COUNT][3] = {
		[GI_TS_U8] = { GI_DT_F32, GI_DT_U16, GI_DT_U8 }, [GI_TS_U16] = { GI_DT_F16, GI_DT_U16, GI_DT_BF16 },
		[GI_TS_I16] = { GI_DT_BF16, GI_DT_I16, GI_DT_F32 }, [GI_TS_U32] = { GI_DT_F32, GI_DT_U32, GI_DT_F16 },
		[GI_TS_I32] = { GI_DT_F16, GI_DT_I32, GI_DT_F32 }, [GI_TS_F32] = { GI_DT_F16, GI_DT_F32, GI_DT_BF16 },
		[GI_TS_CI8] = { GI_DT_CF32, GI_DT_I8, GI_DT_CF16 }, [GI_TS_CI16] = { GI_DT_CF16, GI_DT_I16, GI_DT_CF32 },
		[GI_TS_RAW10] = { GI_DT_U16, GI_DT_F32, GI_DT_F16 }, [GI_TS_RAW12] = { GI_DT_U16, GI_DT_BF16, GI_DT_F16 },
	};
	struct gi_frame_tensor ft = { 0 };
	if (sf & 0x80) {
		const uint64_t fb = (uint64_t)(packets - 1) * payload + last;
		ft.sample = 1u + (uint32_t)(sf >> 2 & 15u) % 10u;
		ft.dtype = types[ft.sample][(sf >> 6 & 1u) + (sf >> 2 & 1u)];
		ft.missing = gi_tensor_dtype_float(ft.dtype) ? (uint32_t)(sf >> 3 & 1u) : GI_TM_ZERO;
		ft.big = sf >> 4 & 1u;
		ft.scale = ft.dtype == GI_DT_U8 || ft.dtype == GI_DT_I8 || ft.dtype == GI_DT_I16 || ft.dtype == GI_DT_U32 ||
				   ft.dtype == GI_DT_I32 ? 1.0 : 0.5;
		ft.ndim = 1;
		ft.shape[0] = gi_tensor_elems(ft.sample, fb);
		ft.bytes = gi_tensor_bytes(ft.sample, ft.dtype, fb);
		if (!ft.bytes)
			ft.dtype = GI_DT_NONE; /* a frame shorter than one group: no tensor */
	}
	uint64_t ring_bytes = gi_frame_ring_bytes_t(slots, packets, payload, ft.dtype ? ft.bytes : 0);

	for (uint32_t s = 0; s < n_streams; s++) {
		struct gi_stream_rt *st = &x.st[s];
		uint32_t format = 1u + ((uint32_t)formats >> (2 * s) & 3u);
		struct gi_frame_ring_hdr *h = aligned_alloc(64, GI_ALIGN_UP(ring_bytes, 64));
		memset(h, 0, ring_bytes);
		*st = (struct gi_stream_rt){ .format = format, .packets = packets, .payload_bytes = payload, .last_bytes = last,
					     .data_packets = packets,
					     .window = window, .frame_timeout_ns = timeout_ns, .ring = h,
					     .nic_ts = tw >> 31 ? GI_NIC_TS_REALTIME : GI_NIC_TS_NONE };
		uint16_t port = fz_u16(&z);
		fz_format_params(&z, &st->fp, format);
		struct gi_frame_tensor fts = ft; /* the stream's frame bytes, and its tensor of them */
		uint64_t fbs = (uint64_t)(packets - 1) * payload + last;
		struct gi_fmt_rocev2_params rp = gi_fmt_rocev2(&st->fp);
		if (format == GI_FORMAT_ROCEV2 && rp.profile == GI_ROCEV2_PROFILE_HSB) {
			/* as the daemon sizes it (gi_cfg_slot_packets): a bit for a record packet of its own
			 * after the data (auto: each epoch starts so), one packet all data or nothing; the
			 * frame's bytes the data's, the record at the next 128-byte boundary after them */
			if (rp.frame_end != GI_ROCEV2_END_EMBEDDED && packets > 1)
				st->data_packets = packets - 1;
			else
				rp.frame_end = GI_ROCEV2_END_EMBEDDED;
			fbs = (uint64_t)(st->data_packets - 1) * payload + last;
			rp.frame_bytes = fbs;
			gi_fmt_rocev2_set(&st->fp, &rp);
			if (fts.dtype) { /* fewer bytes than ring_bytes was sized for: a smaller tensor, or none */
				fts.shape[0] = gi_tensor_elems(fts.sample, fbs);
				fts.bytes = gi_tensor_bytes(fts.sample, fts.dtype, fbs);
				if (!fts.bytes)
					fts.dtype = GI_DT_NONE;
			}
		}
		gi_frame_ring_init_t(h, slots, packets, payload, fbs, format, s, "fuzz", 1, fts.dtype ? &fts : NULL);
		st->next_same_udp = map[port]; /* chained: told apart by the format's match */
		map[port] = (uint16_t)s;
		y[s] = *st; /* the twin: the same stream on a frame ring of its own */
		y[s].ring = aligned_alloc(64, GI_ALIGN_UP(ring_bytes, 64));
		memcpy(y[s].ring, h, ring_bytes);
	}
	x.ctx = (struct gi_exec_ctx){ .n_streams = n_streams, .n_ports = 1, .streams = x.st, .map = map };
	y_ctx = (struct gi_exec_ctx){ .n_streams = n_streams, .n_ports = 1, .streams = y, .map = map };
	x.ring_bytes = ring_bytes;
	if (!y_scratch)
		y_scratch = aligned_alloc(64, GI_ALIGN_UP(gi_batch_scratch_bytes(FZ_MAXB), 64));
	uint64_t rb = gi_ring_bytes(1, FZ_MAXB, x.layout);
	x.ring = aligned_alloc(64, GI_ALIGN_UP(rb, 64));
	memset(x.ring, 0, rb);
	FZ_CHECK(gi_ring_init(x.ring, 1, FZ_MAXB, x.layout) == 0);
	x.now = 1000;

	while (z.n >= 3) {
		uint8_t op = fz_u8(&z);
		uint32_t len = fz_u16(&z);
		switch (op & 3) {
		case 0:
		case 1:
			if (len > z.n)
				len = (uint32_t)z.n;
			queue(&x, z.p, len);
			z.p += len;
			z.n -= len;
			if (op & 1)
				run_batch(&x, (enum fz_form)(op >> 2 & 3));
			break;
		case 2:
			x.now += (uint64_t)(op >> 2) * 1000000u;
			for (uint32_t s = 0; s < n_streams; s++) {
				gi_stream_tick(&x.st[s], x.now);
				gi_stream_tick(&y[s], x.now);
			}
			exf_same_state(x.st, y, n_streams, ring_bytes, &x.ctr, &y_ctr, "a tick");
			break;
		default:
			run_batch(&x, (enum fz_form)(op >> 2 & 3));
			break;
		}
	}
	run_batch(&x, (enum fz_form)(x.ctr.batches % FZ__FORMS));
	x.now += 1000000000u;
	for (uint32_t s = 0; s < n_streams; s++) {
		gi_stream_flush(&x.st[s], x.now);
		gi_stream_flush(&y[s], x.now);
	}
	exf_same_state(x.st, y, n_streams, ring_bytes, &x.ctr, &y_ctr, "the flush");

	FZ_CHECK(fz_accounted(&x) == x.fed);
	for (uint32_t s = 0; s < n_streams; s++) {
		const struct gi_stream_rt *st = &x.st[s];
		/* after the flush nothing is open: next_pub is past every frame seen */
		FZ_CHECK(!st->started || st->next_pub > st->max_frame);
		free(st->ring);
		free(y[s].ring);
	}
	free(x.ring);
	return 0;
}
