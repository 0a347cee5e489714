/*
 * gpu_exec_bench.c — the cuda executor's throughput, measured the way
 * bench/gpu_model.py models it: R rings, one stream per ring (one CTA per
 * ring group), packets and frames in GPU memory, batches of N packets
 * published by one host thread per ring as fast as the kernels take them.
 *
 *   gpu_exec_bench [--rings R] [--payload B] [--batch N] [--threads T]
 *                  [--frame-packets F] [--pool-copies M] [--seconds S]
 *                  [--mode persistent|launch] [--device D] [--steps]
 *                  [--latency FPS] [--tensor SAMPLE:TYPE]
 *
 * Traffic: format custom, an 8-bit packet counter in a 4-byte header, then
 * B payload bytes; frames follow from the counter (F packets each; F
 * divides 256).  Each ring's stream has M x 256 packets in GPU memory whose
 * counters run 0..255 M times, so handing them out in a circle is an
 * endless, in-order, loss-free stream (M > 1 spreads them over more
 * memory than the L2 holds).  Slot descriptors point into that memory, as
 * the rx lcore's do into a device pool's mbufs.
 *
 * Measured: packets placed per second (the streams' counters, mirrored by
 * the kernels) over S seconds after 1 s of warm-up; every packet must be
 * placed (no drop, no loss, no duplicate), and every batch sequenced as
 * one in-order run (phase 2's fast path).  Prints one JSON object
 * (staged_ahead: batches a persistent CTA found staged beside the last
 * batch's commit, kernels/exec_cuda.cu; early_copied: payloads copied
 * beside a run's 2b, kernels/phase_sequence_solo.h; lane_frames: frames
 * a run's 2b filled a lane each, gi_solo_group_lanes); with
 * --steps also the CTAs' time per batch in each step of its trip
 * (kernels/steps.h, %globaltimer after each step's barrier): steps_us,
 * µs per batch averaged over every batch (warm-up included), and their
 * sum, batch_us.  Timing costs a clock read per step, so compare rates
 * from runs without it.  --latency FPS: each ring's producer publishes a
 * whole frame FPS times a second instead (its batches at once, as an rx
 * lcore would), and this thread watches the host mirrors: latency_p50_us,
 * _p99_us and _max_us are from the doorbell of a frame's last batch to
 * next_frame passing the frame (what a consumer waits for), over S
 * seconds after 0.2 s of warm-up.  --tensor SAMPLE:TYPE (ci16:cf32,
 * raw10:u16, ...): every stream also writes each frame as that typed
 * tensor (a stream's tensor: block, big-endian, scale 1/32768 for float
 * types), the `tensor` step of --steps.  On
 * the CUDA emulation (a -Demulate_cuda=true build) it runs, but the figure
 * is CPU threads, not a GPU, and it says so ("emulated": true).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/cuda_drv.h"
#include "kernels/executor.h"
#include "kernels/fmt_custom.h"

#define MAX_RINGS 128u
#define RING_SLOTS 64u
#define HDR 4u                     /* the custom header: counter, 3 bytes of padding */
#define L2L4 42u                   /* Ethernet + IPv4 + UDP */
#define UDP_PORT0 7000u

struct bench {
	uint32_t rings, payload, batch, threads, frame_packets, copies, seconds;
	uint32_t steps;                         /* --steps: time each batch step by step (steps.h) */
	enum gi_exec_mode mode;
	const char *device;
	struct gi_cuda_drv drv;
	uint32_t pkt_len, stride, n_pkts;       /* per ring: n_pkts = copies * 256 */
	CUdeviceptr pkts[MAX_RINGS];            /* each ring's packets in GPU memory */
	CUdeviceptr frames[MAX_RINGS];          /* each stream's frame ring in GPU memory */
	struct gi_frame_ring_hdr *mirror[MAX_RINGS];
	struct gi_batch_ring *ring[MAX_RINGS];
	struct gi_stream_rt *st;                /* [rings], page-aligned: the executor maps it */
	uint16_t *map;
	uint32_t quit;
	uint64_t fed[MAX_RINGS];                /* packets published, by its producer */
	/* --latency FPS: each producer publishes whole frames FPS times a second; the
	 * doorbell time of each frame's last batch, by frame number (a ring of LAT_SLOTS) */
	uint32_t latency_fps;
	struct gi_frame_tensor tensor;           /* --tensor: every ring's (dtype 0: none) */
	const char *tensor_arg;
	uint64_t *t_doorbell[MAX_RINGS];
};
#define LAT_SLOTS 4096u

static void die(const char *what, const char *why)
{
	fprintf(stderr, "gpu_exec_bench: %s: %s\n", what, why);
	exit(1);
}

static void cu(struct bench *b, CUresult r, const char *what)
{
	char eb[160];
	if (r != CUDA_SUCCESS)
		die(what, gi_cuda_drv_strerror(&b->drv, (int)r, eb, sizeof(eb)));
}

/* Packet k of ring r's stream: Ethernet/IPv4/UDP, counter k & 255, payload bytes. */
static void build_pkt(const struct bench *b, uint32_t r, uint32_t k, uint8_t *p)
{
	uint32_t ulen = 8 + HDR + b->payload, iplen = 20 + ulen;
	memset(p, 0, b->pkt_len);
	memset(p, 0x02, 12);                           /* MACs */
	gi_put_be16(p + 12, GI_ETHERTYPE_IPV4);
	p[14] = 0x45;
	gi_put_be16(p + 16, (uint16_t)iplen);
	p[22] = 64;
	p[23] = GI_IPPROTO_UDP;
	gi_put_be32(p + 26, 0x0a000001u);
	gi_put_be32(p + 30, 0x0a000002u);
	gi_put_be16(p + 34, 9000);
	gi_put_be16(p + 36, (uint16_t)(UDP_PORT0 + r));
	gi_put_be16(p + 38, (uint16_t)ulen);
	p[L2L4] = (uint8_t)k;
	for (uint32_t i = 0; i < b->payload; i++)
		p[L2L4 + HDR + i] = (uint8_t)(k * 31u + i);
}

/* --tensor SAMPLE:TYPE into b->tensor for frames of frame_packets x payload bytes; -1 if not a pair. */
static int tensor_parse(struct bench *b, const char *arg)
{
	static const char *const samples[GI_TS__COUNT] = GI_TS_NAMES, *const types[GI_DT__COUNT] = GI_DT_NAMES;
	const char *colon = strchr(arg, ':');
	struct gi_frame_tensor *t = &b->tensor;

	memset(t, 0, sizeof(*t));
	for (uint32_t k = 1; colon && k < GI_TS__COUNT; k++)
		if (strlen(samples[k]) == (size_t)(colon - arg) && strncmp(arg, samples[k], (size_t)(colon - arg)) == 0)
			t->sample = k;
	for (uint32_t k = 1; colon && k < GI_DT__COUNT; k++)
		if (strcmp(colon + 1, types[k]) == 0)
			t->dtype = k;
	if (!t->sample || !t->dtype || gi_tensor_sample_complex(t->sample) != gi_tensor_dtype_complex(t->dtype))
		return -1;
	const uint64_t fb = (uint64_t)b->frame_packets * b->payload;
	t->bytes = gi_tensor_bytes(t->sample, t->dtype, fb);
	if (!t->bytes)
		return -1;
	t->big = 1;
	t->scale = gi_tensor_dtype_float(t->dtype) ? 1.0 / 32768 : 1.0;
	t->ndim = 1;
	t->shape[0] = gi_tensor_elems(t->sample, fb);
	return 0;
}

static void setup_ring(struct bench *b, uint32_t r)
{
	uint8_t *host = calloc(b->n_pkts, b->stride);
	if (!host)
		die("packets", "out of memory");
	for (uint32_t k = 0; k < b->n_pkts; k++)
		build_pkt(b, r, k, host + (size_t)k * b->stride);
	cu(b, b->drv.mem_alloc(&b->pkts[r], (size_t)b->n_pkts * b->stride), "cuMemAlloc (packets)");
	cu(b, b->drv.memcpy_htod(b->pkts[r], host, (size_t)b->n_pkts * b->stride), "cuMemcpyHtoD (packets)");
	free(host);

	/* the stream: format custom, 8-bit counter at offset 0 */
	struct gi_stream_rt *st = &b->st[r];
	uint32_t slots = 16, window = 4;
	uint64_t full = gi_frame_ring_bytes_t(slots, b->frame_packets, b->payload, b->tensor.bytes);
	uint64_t mlen = GI_ALIGN_UP(gi_frame_mirror_bytes(slots, b->frame_packets), 4096);
	struct gi_frame_ring_hdr *h = aligned_alloc(4096, mlen);
	if (!h)
		die("frame ring", "out of memory");
	memset(h, 0, mlen);
	gi_frame_ring_init_t(h, slots, b->frame_packets, b->payload, 0, GI_FORMAT_CUSTOM, r, "bench", 1,
			     b->tensor.dtype ? &b->tensor : NULL);
	cu(b, b->drv.mem_alloc(&b->frames[r], full), "cuMemAlloc (frame ring)");
	cu(b, b->drv.memset_d8(b->frames[r], 0, full), "cuMemsetD8 (frame ring)");
	cu(b, b->drv.memcpy_htod(b->frames[r], h, sizeof(*h)), "cuMemcpyHtoD (frame ring)");
	uint8_t no_ipc[64] = { 0 };
	gi_frame_ring_make_mirror(h, (uint32_t)b->drv.device_index, b->drv.pci_bus_id, no_ipc, full);
	b->mirror[r] = h;
	*st = (struct gi_stream_rt){ .format = GI_FORMAT_CUSTOM, .packets = b->frame_packets, .payload_bytes = b->payload,
				     .last_bytes = b->payload, .data_packets = b->frame_packets,
				     .window = window, .ring = (struct gi_frame_ring_hdr *)(uintptr_t)b->frames[r],
				     .mirror = h, .next_same_udp = GI_STREAM_NONE };
	gi_format_params_init(&st->fp, GI_FORMAT_CUSTOM);
	struct gi_fmt_custom_params map = { .header_bytes = HDR, .payload_offset = HDR };
	map.f[GI_CUSTOM_SEQ] = (struct gi_custom_field){ .offset = 0, .width = 1 };
	gi_fmt_custom_setup(&st->fp, &map);
	b->map[UDP_PORT0 + r] = (uint16_t)r;

	uint64_t rb = gi_ring_bytes(RING_SLOTS, b->batch, 0);
	b->ring[r] = aligned_alloc(4096, GI_ALIGN_UP(rb, 4096));
	if (!b->ring[r])
		die("batch ring", "out of memory");
	memset(b->ring[r], 0, rb);
	gi_ring_init(b->ring[r], RING_SLOTS, b->batch, 0);
}

struct producer {
	struct bench *b;
	uint32_t r;
};

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	nanosleep(&ts, NULL);
}

/*
 * --latency: ring r's frames, one every 1/FPS s, each as the batches an rx
 * lcore would publish at once (batch packets each, the last one shorter);
 * the time of the doorbell that publishes a frame's last packet is its
 * start.  Frames below the counter's wrap are numbered from 0.
 */
static void *produce_paced(void *arg)
{
	struct producer *pr = arg;
	struct bench *b = pr->b;
	struct gi_batch_ring *ring = b->ring[pr->r];
	const uint64_t period = 1000000000ull / b->latency_fps, t0 = gi_now_ns();
	uint64_t head = 0, frame = 0;
	uint32_t k = 0;

	while (!__atomic_load_n(&b->quit, __ATOMIC_ACQUIRE)) {
		const uint64_t due = t0 + frame * period;
		uint64_t now = gi_now_ns();
		if (now + 50000 < due) /* sleep to within 50 µs, then spin: the doorbell on time */
			sleep_ns(due - now - 50000);
		while (gi_now_ns() < due)
			;
		for (uint32_t left = b->frame_packets; left;) {
			/* a frame begun is fed whole (the executor runs until every producer is
			 * joined): half a frame at the stop would be published partial, as lost */
			const uint64_t t_full = gi_now_ns();
			while (!gi_ring_has_room(ring, head))
				if (__atomic_load_n(&b->quit, __ATOMIC_ACQUIRE) &&
				    (left == b->frame_packets || gi_now_ns() - t_full > 10000000000ull))
					return NULL;
			struct gi_batch_slot *s = gi_ring_slot(ring, head);
			uint32_t n = GI_MIN(left, b->batch);
			for (uint32_t i = 0; i < n; i++) {
				gi_slot_addr(s)[i] = (uint64_t)b->pkts[pr->r] + (uint64_t)k * b->stride;
				gi_slot_len(s, b->batch)[i] = b->pkt_len;
				k = k + 1 == b->n_pkts ? 0 : k + 1;
			}
			left -= n;
			b->fed[pr->r] += n;
			s->n_pkts = n;
			s->port = 0;
			s->batch_seq = head;
			s->t_publish_ns = gi_now_ns();
			if (!left)
				__atomic_store_n(&b->t_doorbell[pr->r][frame % LAT_SLOTS], s->t_publish_ns, __ATOMIC_RELAXED);
			gi_ring_publish(ring, head++);
		}
		frame++;
	}
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, c = *(const uint64_t *)y;
	return a < c ? -1 : a > c;
}

/*
 * --latency: this thread watches every ring's host mirror for next_frame to
 * pass a frame (what a consumer's gic_next() waits for) and takes the time
 * since that frame's doorbell, for `ns` after `skip_ns` of warm-up.
 * Returns how many it took (at most max) into lat[].
 */
static uint64_t watch_latency(struct bench *b, uint64_t skip_ns, uint64_t ns, uint64_t *lat, uint64_t max)
{
	uint64_t seen[MAX_RINGS] = { 0 }, n = 0;
	const uint64_t t0 = gi_now_ns();
	for (uint64_t now = t0; now - t0 < skip_ns + ns; now = gi_now_ns()) {
		for (uint32_t r = 0; r < b->rings; r++) {
			const uint64_t next = GI_LOAD_ACQUIRE_U64(&b->mirror[r]->next_frame);
			if (next <= seen[r])
				continue;
			const uint64_t t = gi_now_ns();
			for (uint64_t f = seen[r]; f < next; f++) {
				const uint64_t db = __atomic_load_n(&b->t_doorbell[r][f % LAT_SLOTS], __ATOMIC_RELAXED);
				if (now - t0 >= skip_ns && n < max && db && t > db)
					lat[n++] = t - db;
			}
			seen[r] = next;
		}
	}
	return n;
}

/* The rx lcore's part for ring r: batches of b->batch packets, round and round the pool. */
static void *produce(void *arg)
{
	struct producer *pr = arg;
	struct bench *b = pr->b;
	struct gi_batch_ring *ring = b->ring[pr->r];
	uint64_t head = 0;
	uint32_t k = 0;

	/* to the end of a frame, so that stopping leaves no partial frame */
	while (!__atomic_load_n(&b->quit, __ATOMIC_ACQUIRE) || k % b->frame_packets) {
		if (!gi_ring_has_room(ring, head))
			continue;
		struct gi_batch_slot *s = gi_ring_slot(ring, head);
		uint32_t n = 0;
		do {
			gi_slot_addr(s)[n] = (uint64_t)b->pkts[pr->r] + (uint64_t)k * b->stride;
			gi_slot_len(s, b->batch)[n] = b->pkt_len;
			k = k + 1 == b->n_pkts ? 0 : k + 1;
			n++;
		} while (n < b->batch && !(__atomic_load_n(&b->quit, __ATOMIC_RELAXED) && k % b->frame_packets == 0));
		b->fed[pr->r] += n;
		s->n_pkts = n;
		s->port = 0;
		s->batch_seq = head;
		s->t_publish_ns = gi_now_ns();
		gi_ring_publish(ring, head++);
	}
	return NULL;
}

static uint64_t placed(const struct bench *b)
{
	uint64_t n = 0;
	for (uint32_t r = 0; r < b->rings; r++)
		n += GI_LOAD_RELAXED_U64(&b->st[r].c.packets); /* the kernels' mirror */
	return n;
}

int main(int argc, char **argv)
{
	struct bench b = { .rings = 1, .payload = 1024, .batch = 64, .threads = 256, .frame_packets = 64,
			   .copies = 1, .seconds = 5, .mode = GI_EXEC_PERSISTENT, .device = "0" };
	static const struct option opts[] = {
		{ "rings", required_argument, NULL, 'r' },   { "payload", required_argument, NULL, 'p' },
		{ "batch", required_argument, NULL, 'n' },   { "threads", required_argument, NULL, 't' },
		{ "frame-packets", required_argument, NULL, 'f' }, { "pool-copies", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' }, { "mode", required_argument, NULL, 'm' },
		{ "device", required_argument, NULL, 'd' },  { "steps", no_argument, NULL, 'S' },
		{ "latency", required_argument, NULL, 'L' }, { "tensor", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': b.rings = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'p': b.payload = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': b.batch = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': b.threads = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'f': b.frame_packets = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'c': b.copies = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 's': b.seconds = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': b.mode = strcmp(optarg, "launch") == 0 ? GI_EXEC_LAUNCH : GI_EXEC_PERSISTENT; break;
		case 'd': b.device = optarg; break;
		case 'S': b.steps = 1; break;
		case 'L': b.latency_fps = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'T': b.tensor_arg = optarg; break;
		default: return 2;
		}
	}
	if (!b.rings || b.rings > MAX_RINGS || !b.payload || b.payload > 9000 || !b.batch || b.batch > 4096 ||
	    !b.frame_packets || 256 % b.frame_packets || !b.copies || !b.seconds || b.latency_fps > 1000000) {
		fprintf(stderr, "usage: gpu_exec_bench [--rings 1..%u] [--payload 1..9000] [--batch 1..4096] "
				"[--threads 32..512] [--frame-packets F (divides 256)] [--pool-copies M] "
				"[--seconds S] [--mode persistent|launch] [--device D] [--steps] "
				"[--latency FPS (1..1000000)] [--tensor SAMPLE:TYPE]\n", MAX_RINGS);
		return 2;
	}
	if (b.tensor_arg && tensor_parse(&b, b.tensor_arg) < 0) {
		fprintf(stderr, "gpu_exec_bench: --tensor %s: SAMPLE:TYPE, e.g. ci16:cf32 or raw10:u16, a pair the "
				"config accepts, whose groups fit a frame\n", b.tensor_arg);
		return 2;
	}
	char err[320];
	if (gi_cuda_drv_open(&b.drv, b.device, err, sizeof(err)) < 0)
		die("no GPU", err);
	b.pkt_len = L2L4 + HDR + b.payload;
	b.stride = (uint32_t)GI_ALIGN_UP(b.pkt_len, 128);
	b.n_pkts = 256 * b.copies;
	b.map = malloc(65536 * sizeof(*b.map));
	b.st = aligned_alloc(4096, GI_ALIGN_UP(MAX_RINGS * sizeof(*b.st), 4096));
	if (!b.map || !b.st)
		die("streams", "out of memory");
	memset(b.st, 0, MAX_RINGS * sizeof(*b.st));
	for (uint32_t i = 0; i < 65536; i++)
		b.map[i] = GI_STREAM_NONE;
	for (uint32_t r = 0; r < b.rings; r++)
		setup_ring(&b, r);

	struct gi_exec_ctx ctx = { .n_streams = b.rings, .n_ports = 1, .streams = b.st, .map = b.map };
	struct gi_exec_group groups[MAX_RINGS];
	uint32_t ring_ids[MAX_RINGS];
	uint16_t stream_ids[MAX_RINGS];
	for (uint32_t r = 0; r < b.rings; r++) {
		ring_ids[r] = r;
		stream_ids[r] = (uint16_t)r;
		groups[r] = (struct gi_exec_group){ .n_rings = 1, .rings = &ring_ids[r], .n_streams = 1,
						    .streams = &stream_ids[r] };
	}
	struct gi_executor_conf conf = { .backend = GI_BACKEND_CUDA, .mode = b.mode, .cuda_device = b.device,
					 .threads_per_ring = b.threads, .idle = GI_IDLE_BUSY, .cpu = -1,
					 .n_rings = b.rings, .rings = b.ring, .n_groups = b.rings, .groups = groups,
					 .ctx = &ctx, .tick_ns = 1000000, .step_timing = b.steps };
	struct gi_executor *ex = NULL;
	if (gi_executor_create(&conf, &ex, err, sizeof(err)) < 0)
		die("executor", err);
	if (gi_executor_start(ex) < 0)
		die("executor start", gi_executor_last_error(ex));

	uint64_t *lat = NULL, n_lat = 0, max_lat = 0;
	if (b.latency_fps) {
		max_lat = (uint64_t)b.latency_fps * (b.seconds + 1) * b.rings;
		lat = malloc(max_lat * sizeof(*lat));
		for (uint32_t r = 0; r < b.rings; r++)
			if (!(b.t_doorbell[r] = calloc(LAT_SLOTS, sizeof(uint64_t))))
				die("latency", "out of memory");
		if (!lat)
			die("latency", "out of memory");
	}
	pthread_t th[MAX_RINGS];
	struct producer pr[MAX_RINGS];
	for (uint32_t r = 0; r < b.rings; r++) {
		pr[r] = (struct producer){ &b, r };
		if (pthread_create(&th[r], NULL, b.latency_fps ? produce_paced : produce, &pr[r]) != 0)
			die("producer", strerror(errno));
	}
	uint64_t p0, t0, p1, t1;
	if (b.latency_fps) { /* 0.2 s of warm-up inside the watch */
		p0 = placed(&b), t0 = gi_now_ns();
		n_lat = watch_latency(&b, 200000000ull, (uint64_t)b.seconds * 1000000000ull, lat, max_lat);
		p1 = placed(&b), t1 = gi_now_ns();
	} else {
		sleep_ns(1000000000ull); /* warm-up */
		p0 = placed(&b), t0 = gi_now_ns();
		sleep_ns((uint64_t)b.seconds * 1000000000ull);
		p1 = placed(&b), t1 = gi_now_ns();
	}
	__atomic_store_n(&b.quit, 1, __ATOMIC_RELEASE);
	for (uint32_t r = 0; r < b.rings; r++)
		pthread_join(th[r], NULL);
	int rc = gi_executor_stop(ex, 10000000000ull);
	struct gi_exec_counters ctr;
	gi_executor_counters(ex, &ctr);
	const char *why = gi_executor_why(ex);

	uint64_t fed = 0, drops = 0, lost = 0, dups = 0, late = 0, total = 0;
	for (uint32_t r = 0; r < b.rings; r++) {
		fed += b.fed[r];
		lost += b.st[r].c.lost;
		dups += b.st[r].c.duplicates;
		late += b.st[r].c.late;
		total += b.st[r].c.packets;
	}
	for (int k = 0; k < GI_DROP__COUNT; k++)
		drops += ctr.drops[k];
	double mpps = (double)(p1 - p0) * 1e3 / (double)(t1 - t0);
	printf("{\"gpu\": \"%s\", \"emulated\": %s, \"mode\": \"%s\", \"rings\": %u, \"payload\": %u, \"batch\": %u, "
	       "\"threads\": %u, \"frame_packets\": %u, \"pool_packets_per_ring\": %u, \"seconds\": %u, "
	       "\"placed_Mpps\": %.3f, \"placed_Gbps_payload\": %.2f, \"fed\": %llu, \"placed\": %llu, "
	       "\"drops\": %llu, \"lost\": %llu, \"duplicates\": %llu, \"late\": %llu, \"batches\": %llu, "
	       "\"run_batches\": %llu, \"staged_ahead\": %llu, \"early_copied\": %llu, \"lane_frames\": %llu, "
	       "\"stop\": %d, \"executor\": \"%s\", \"tensor\": \"%s\"",
	       b.drv.name, b.drv.emulated ? "true" : "false", b.mode == GI_EXEC_LAUNCH ? "launch" : "persistent", b.rings,
	       b.payload, b.batch, b.threads, b.frame_packets, b.n_pkts, b.seconds, mpps, mpps * b.payload * 8e-3,
	       (unsigned long long)fed, (unsigned long long)total, (unsigned long long)drops, (unsigned long long)lost,
	       (unsigned long long)dups, (unsigned long long)late, (unsigned long long)ctr.batches,
	       (unsigned long long)ctr.runs, (unsigned long long)ctr.staged_ahead, (unsigned long long)ctr.early_copied,
	       (unsigned long long)ctr.lane_frames, rc, why,
	       b.tensor_arg ? b.tensor_arg : "");
	if (b.steps && ctr.step_batches) { /* µs per batch of one CTA, by step (warm-up included) */
		static const char *const names[GI_STEP__COUNT] = GI_STEP_NAMES;
		double sum = 0;
		printf(", \"step_batches\": %llu, \"steps_us\": {", (unsigned long long)ctr.step_batches);
		for (int k = 0; k < GI_STEP__COUNT; k++) {
			double us = (double)ctr.step_ns[k] / (double)ctr.step_batches / 1e3;
			sum += us;
			printf("%s\"%s\": %.2f", k ? ", " : "", names[k], us);
		}
		printf("}, \"batch_us\": %.2f", sum);
	}
	if (b.latency_fps) { /* doorbell of a frame's last batch -> next_frame past it in the host mirror */
		qsort(lat, n_lat, sizeof(*lat), cmp_u64);
		printf(", \"latency_fps\": %u, \"latency_frames\": %llu", b.latency_fps, (unsigned long long)n_lat);
		if (n_lat)
			printf(", \"latency_p50_us\": %.2f, \"latency_p99_us\": %.2f, \"latency_max_us\": %.2f",
			       lat[n_lat / 2] / 1e3, lat[n_lat * 99 / 100] / 1e3, lat[n_lat - 1] / 1e3);
	}
	printf("}\n");
	if (b.drv.emulated)
		fprintf(stderr, "gpu_exec_bench: CUDA EMULATION (CPU threads): this figure is not a GPU result\n");
	if (rc == -ETIMEDOUT) { /* the kernels may still read the rings and write the frames: free nothing */
		fprintf(stderr, "gpu_exec_bench: the executor did not stop (%s); leaving without freeing what it uses\n",
			gi_executor_last_error(ex));
		fflush(NULL);
		_exit(1);
	}
	gi_executor_destroy(ex);
	/* clean in-order traffic: every batch's stream is one run (phase 2's fast path),
	 * but a stream's first batch, which starts it */
	int bad = rc < 0 || drops || lost || dups || late || total != fed || ctr.runs + b.rings < ctr.batches;
	if (b.latency_fps && n_lat == 0) {
		fprintf(stderr, "gpu_exec_bench: --latency saw no frame become visible\n");
		bad = 1;
	}
	if (b.steps && ctr.step_batches != ctr.batches) { /* --steps times every batch, once */
		fprintf(stderr, "gpu_exec_bench: %llu batches but %llu timed step by step\n",
			(unsigned long long)ctr.batches, (unsigned long long)ctr.step_batches);
		bad = 1;
	}
	for (uint32_t r = 0; r < b.rings; r++) {
		b.drv.mem_free(b.pkts[r]);
		b.drv.mem_free(b.frames[r]);
		free(b.mirror[r]);
		free(b.ring[r]);
	}
	free(b.map);
	free(b.st);
	free(lat);
	for (uint32_t r = 0; r < b.rings; r++)
		free(b.t_doorbell[r]);
	gi_cuda_drv_close(&b.drv);
	if (bad)
		fprintf(stderr, "gpu_exec_bench: not every packet was placed exactly once, or not every batch "
				"was sequenced as a run (see the counters)\n");
	return bad ? 1 : 0;
}
