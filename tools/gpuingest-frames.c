/*
 * gpuingest-frames — read one stream's frame ring and verify every byte.
 *
 * Why it exists: it is the reference consumer of kernels/frame.h.  It maps
 * the daemon's POSIX shared-memory ring read-only, follows the seqlock
 * protocol, checks each published frame in place against the payload
 * pattern gpuingest-sim sends (kernels/udp_seq.h), and accounts for every
 * frame number from the ring's first frame on: complete, partial, timed
 * out, skipped (no packet of it arrived) or overrun (the daemon reused the
 * slot before we got to it).  Tests compare its JSON with the sim's.
 *
 * It never writes to the ring and never blocks the daemon: a slow consumer
 * (--slow-us) loses frames to overruns, it does not slow the producer.
 *
 * Single-threaded; the signal handlers only set a flag.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernels/frame.h"
#include "kernels/cuda_drv.h"
#include "kernels/udp_seq.h"
#include "kernels/fmt_rocev2.h"

enum {
	EXIT_OK = 0,
	EXIT_MISMATCH = 1,
	EXIT_USAGE = 2,
};

#define IDLE_SLEEP_US 100
#define NAME_CHECK_S 0.2 /* how often to look whether the daemon removed the name */
#define MAX_REPORTS 10   /* per-frame problem lines on stderr */

struct opts {
	char shm[256];
	double wait_s;
	double duration_s;
	unsigned slow_us;
	bool quiet;
	bool sender;         /* --sender: one JSON line per frame with the sender's record, on stdout */
};

struct ring {
	int fd;
	size_t len;
	struct gi_frame_ring_hdr *hdr;
	/* frames in GPU memory: the daemon's device ring, opened through CUDA IPC */
	struct gi_cuda_drv drv;
	uint64_t dev_base;   /* CUdeviceptr of the device ring, 0 when payload is in shm */
	uint8_t *staging;    /* one frame copied out of the device for checking */
};

struct tally {
	uint64_t complete, partial, timed_out, corrupt, skipped, overruns;
	uint64_t packets, bytes, mismatches, header_errors;
	/* frames with the sender's own record (HSB), and what checking them against the frame found */
	uint64_t sender_records, sender_crc_ok, sender_crc_mismatch, sender_bytes_mismatch;
	bool any;
	uint64_t first, last;
	unsigned reports;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: gpuingest-frames --shm NAME [options]\n"
		"Consume one stream's frame ring (POSIX shared memory made by gpuingestd)\n"
		"and verify every received byte against the gpuingest-sim payload pattern.\n"
		"\n"
		"  --shm NAME        shared-memory object, e.g. /gpuingest-cam0 (the leading\n"
		"                    '/' may be left out)\n"
		"  --wait S          wait up to S seconds for the object to appear with a\n"
		"                    valid header (default 10)\n"
		"  --duration S      stop after S seconds (default 0: until the daemon\n"
		"                    closes the ring and every frame is consumed)\n"
		"  --slow-us N       sleep N microseconds per frame (a slow consumer)\n"
		"  --quiet           no progress or per-frame problem lines on stderr\n"
		"  --sender          print each verified frame's sender record (Holoscan\n"
		"                    Sensor Bridge metadata: frame number, PTP times, CRC,\n"
		"                    bytes written) as a JSON line before the summary\n"
		"  --help\n"
		"\n"
		"Output: one JSON object on stdout.  Every frame number from first_frame to\n"
		"last_frame is counted once: frames_complete + frames_partial +\n"
		"frames_timed_out + frames_corrupt + frames_skipped + overruns.  (corrupt:\n"
		"the daemon found the frame's sender record wrong, rocev2.frame_crc.)\n"
		"mismatches counts payload\n"
		"bytes that differ from the pattern; header_errors counts published slots\n"
		"whose metadata is inconsistent (received != bits in the bitmap, ...).\n"
		"Frames with a sender record: sender_records; of the complete ones, the\n"
		"record's CRC (~crc32 of the frame, zlib's) checked: sender_crc_ok or\n"
		"sender_crc_mismatch, and bytes written != the frame's: sender_bytes_mismatch\n"
		"(each mismatch also counts as a header error).\n"
		"Exit: 0 all verified bytes match, 1 a mismatch or header error,\n"
		"2 usage error or the ring could not be opened.\n");
}

static void die_usage(const char *what, const char *arg) __attribute__((noreturn));
static void die_usage(const char *what, const char *arg)
{
	fprintf(stderr, "gpuingest-frames: %s '%s' (see --help)\n", what, arg ? arg : "");
	exit(EXIT_USAGE);
}

static double parse_seconds(const char *opt, const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 1e9)) {
		fprintf(stderr, "gpuingest-frames: %s: expected seconds >= 0, got '%s' (see --help)\n", opt, s);
		exit(EXIT_USAGE);
	}
	return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "shm", required_argument, NULL, 's' },
		{ "wait", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "slow-us", required_argument, NULL, 'u' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "sender", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!optarg[0] || strlen(optarg) > 250 || strchr(optarg + 1, '/'))
				die_usage("--shm: expected a name like /gpuingest-cam0, got", optarg);
			snprintf(o->shm, sizeof(o->shm), "%s%s", optarg[0] == '/' ? "" : "/", optarg);
			break;
		case 'w': o->wait_s = parse_seconds("--wait", optarg); break;
		case 'd': o->duration_s = parse_seconds("--duration", optarg); break;
		case 'u': {
			char *end;
			errno = 0;
			unsigned long v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v > 10000000)
				die_usage("--slow-us: expected microseconds in [0, 10000000], got", optarg);
			o->slow_us = (unsigned)v;
			break;
		}
		case 'q': o->quiet = true; break;
		case 'S': o->sender = true; break;
		case 'h': usage(stdout); exit(EXIT_OK);
		case ':': die_usage("missing argument for", argv[optind - 1]);
		default: die_usage("unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument", argv[optind]);
	if (!o->shm[0]) {
		fprintf(stderr, "gpuingest-frames: --shm NAME is required (see --help)\n");
		exit(EXIT_USAGE);
	}
}

static void ring_unmap(struct ring *r)
{
#ifdef GI_HAVE_CUDA_H
	if (r->dev_base)
		r->drv.ipc_close_mem_handle((CUdeviceptr)r->dev_base);
#endif
	r->dev_base = 0;
	gi_cuda_drv_close(&r->drv);
	free(r->staging);
	r->staging = NULL;
	if (r->hdr)
		munmap(r->hdr, r->len);
	if (r->fd >= 0)
		close(r->fd);
	r->hdr = NULL;
	r->fd = -1;
}

/*
 * The payload of this ring is in the daemon's GPU memory: open the CUDA IPC
 * handle recorded in the header.  Needs the NVIDIA driver and the same GPU.
 */
static int ring_open_device(struct ring *r, const struct gi_frame_ring_hdr *h, char *why, size_t why_len)
{
	char err[200], dev[32];
	/* the daemon's GPU by PCI address: its ordinal here may differ
	 * (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER); a record without one names the ordinal */
	memcpy(dev, h->dev_pci_bus_id, sizeof(dev) - 1);
	dev[sizeof(dev) - 1] = '\0';
	if (!dev[0])
		snprintf(dev, sizeof(dev), "%u", h->dev_ordinal);
	int rc = gi_cuda_drv_open(&r->drv, dev, err, sizeof(err));
	if (rc < 0) {
		snprintf(why, why_len, "frames are in GPU memory (device %u, %.31s) and CUDA is unusable here: %s",
			 h->dev_ordinal, h->dev_pci_bus_id, err);
		ring_unmap(r);
		return rc;
	}
#ifdef GI_HAVE_CUDA_H
	CUipcMemHandle handle;
	CUdeviceptr base = 0;
	memcpy(&handle, h->ipc_handle, sizeof(handle));
	CUresult res = r->drv.ipc_open_mem_handle(&base, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	if (res != CUDA_SUCCESS) {
		snprintf(why, why_len,
			 "frames are in GPU memory (device %u, %.31s) and its CUDA IPC handle does not open here: %s "
			 "(is the daemon still running, on this GPU?)",
			 h->dev_ordinal, h->dev_pci_bus_id, gi_cuda_drv_strerror(&r->drv, (int)res, err, sizeof(err)));
		ring_unmap(r);
		return -EIO;
	}
	r->dev_base = (uint64_t)base;
	r->staging = malloc(h->frame_bytes ? h->frame_bytes : 1);
	if (!r->staging) {
		snprintf(why, why_len, "out of memory for a %llu-byte frame", (unsigned long long)h->frame_bytes);
		ring_unmap(r);
		return -ENOMEM;
	}
	return 1;
#else
	snprintf(why, why_len, "frames are in GPU memory and this build has no CUDA headers");
	ring_unmap(r);
	return -ENOTSUP;
#endif
}

/*
 * One attempt: 1 mapped and valid, 0 not there yet (absent, still being
 * sized or initialised), -errno for a hard error.  `why` says what is wrong.
 */
static int ring_try_open(struct ring *r, const char *name, char *why, size_t why_len)
{
	struct stat sb;
	struct gi_frame_ring_hdr h;

	r->fd = shm_open(name, O_RDONLY, 0);
	if (r->fd < 0) {
		int e = errno;
		snprintf(why, why_len, "shm_open: %s", strerror(e));
		return e == ENOENT ? 0 : -e;
	}
	if (fstat(r->fd, &sb) != 0 || (size_t)sb.st_size < sizeof(h)) {
		snprintf(why, why_len, "object smaller than a ring header (being created?)");
		ring_unmap(r);
		return 0;
	}
	/* pread, not a mapping: a header that is still being written cannot fault us */
	if (pread(r->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != GI_FRAME_MAGIC) {
		snprintf(why, why_len, "no frame ring magic yet");
		ring_unmap(r);
		return 0;
	}
	if (h.version != GI_FRAME_VERSION || h.hdr_bytes != sizeof(h)) {
		snprintf(why, why_len, "frame ring version %u / header %u bytes, this tool reads version %u / %zu",
			 h.version, h.hdr_bytes, GI_FRAME_VERSION, sizeof(h));
		ring_unmap(r);
		return -EPROTO;
	}
	uint64_t want_stride = h.payload_in_device ? gi_frame_meta_stride(h.packets_per_frame)
						   : gi_frame_slot_stride(h.packets_per_frame, h.payload_bytes);
	if (h.n_slots == 0 || h.packets_per_frame == 0 || h.packets_per_frame > GI_FRAME_MAX_PACKETS ||
	    h.bitmap_words != gi_frame_bitmap_words(h.packets_per_frame) || h.slot_stride != want_stride ||
	    (h.payload_in_device && h.dev_slot_stride != gi_frame_slot_stride(h.packets_per_frame, h.payload_bytes)) ||
	    h.payload_off != gi_frame_payload_off(h.packets_per_frame) ||
	    h.frame_bytes > (uint64_t)h.packets_per_frame * h.payload_bytes || h.payload_bytes == 0 ||
	    /* the last data packet may be short, and a frame-end packet of its own carries no data */
	    (h.frame_bytes + h.payload_bytes - 1) / h.payload_bytes + 1 < h.packets_per_frame) {
		snprintf(why, why_len, "inconsistent header (n_slots %u, packets %u, payload %u)", h.n_slots,
			 h.packets_per_frame, h.payload_bytes);
		ring_unmap(r);
		return -EPROTO;
	}
	uint64_t need = h.payload_in_device ? gi_frame_mirror_bytes(h.n_slots, h.packets_per_frame)
					    : gi_frame_ring_bytes(h.n_slots, h.packets_per_frame, h.payload_bytes);
	if ((uint64_t)sb.st_size < need) {
		snprintf(why, why_len, "object is %lld bytes, its header needs %llu", (long long)sb.st_size,
			 (unsigned long long)need);
		ring_unmap(r);
		return 0;
	}
	r->len = (size_t)need;
	r->hdr = mmap(NULL, r->len, PROT_READ, MAP_SHARED, r->fd, 0);
	if (r->hdr == MAP_FAILED) {
		int e = errno;
		r->hdr = NULL;
		snprintf(why, why_len, "mmap of %zu bytes: %s", r->len, strerror(e));
		ring_unmap(r);
		return -e;
	}
	if (h.payload_in_device)
		return ring_open_device(r, &h, why, why_len);
	return 1;
}

static int ring_open(struct ring *r, const struct opts *o)
{
	double deadline = now_s() + o->wait_s;
	char why[512] = "";

	for (;;) {
		int rc = ring_try_open(r, o->shm, why, sizeof(why));
		if (rc == 1)
			return 0;
		if (rc < 0 || now_s() >= deadline || stop_requested) {
			fprintf(stderr, "gpuingest-frames: %s: no usable frame ring within %g s: %s\n", o->shm, o->wait_s,
				why);
			return -1;
		}
		usleep(20000);
	}
}

/* The daemon removes the name at shutdown (or replaces it on restart). */
static bool ring_name_gone(const struct ring *r)
{
	struct stat sb;
	return fstat(r->fd, &sb) != 0 || sb.st_nlink == 0;
}

static void report_frame(struct tally *t, const struct opts *o, uint64_t f, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void report_frame(struct tally *t, const struct opts *o, uint64_t f, const char *fmt, ...)
{
	va_list ap;
	if (o->quiet || t->reports >= MAX_REPORTS)
		return;
	if (++t->reports == MAX_REPORTS)
		fprintf(stderr, "gpuingest-frames: %s: (further problems are counted, not shown)\n", o->shm);
	fprintf(stderr, "gpuingest-frames: %s: frame %llu: ", o->shm, (unsigned long long)f);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

struct frame_check {
	uint32_t state;
	uint64_t packets, bytes, mismatches;
	uint64_t header_errors;
	int crc;          /* the sender record's CRC: -1 not checked (none, or a partial frame), 0 bad, 1 good */
	int bytes_ok;     /* ... bytes written: -1 not checked, 0 bad, 1 good */
	struct gi_frame_sender sender;
	uint64_t sensor_frame, first_ts_ns;
	char problem[160];
};

/*
 * Verify published frame f — in place in shared memory, or copied out of the
 * daemon's GPU memory — the caller validates the seqlock afterwards.
 */
static void check_frame(struct ring *r, struct gi_frame_slot *s, uint64_t f, struct frame_check *out)
{
	struct gi_frame_ring_hdr *h = r->hdr;
	const uint64_t *bm = gi_frame_bitmap(s);
	const uint8_t *payload = r->dev_base ? r->staging : gi_frame_payload(h, s);
	uint32_t ppf = h->packets_per_frame, pb = h->payload_bytes;
	uint32_t received = s->received, expected = s->expected, state = s->state;
	/* the sender's own frame number: ring numbers move on after a sender restart */
	uint64_t seed = gi_pattern_seed((uint16_t)s->sensor_id, (uint32_t)s->sensor_frame);
	uint64_t bits = 0;

	memset(out, 0, sizeof(*out));
	out->state = state;
	out->crc = out->bytes_ok = -1;
	out->sender = s->sender;
	out->sensor_frame = s->sensor_frame;
	out->first_ts_ns = s->first_ts_ns;
#ifdef GI_HAVE_CUDA_H
	if (r->dev_base) {
		CUresult res = r->drv.memcpy_dtoh(r->staging, (CUdeviceptr)(r->dev_base + gi_frame_dev_payload_off(h, f)),
						  h->frame_bytes);
		if (res != CUDA_SUCCESS) {
			out->header_errors++;
			snprintf(out->problem, sizeof(out->problem), "cuMemcpyDtoH of the frame failed (CUresult %d)",
				 (int)res);
			return;
		}
	}
#endif
	for (uint32_t w = 0; w < h->bitmap_words; w++) {
		uint64_t v = bm[w];
		if (w == h->bitmap_words - 1 && ppf % 64) {
			uint64_t tail = v & ~((1ull << (ppf % 64)) - 1);
			if (tail) {
				out->header_errors++;
				snprintf(out->problem, sizeof(out->problem), "bitmap has bits beyond packet %u", ppf);
			}
			v &= (1ull << (ppf % 64)) - 1;
		}
		bits += (uint64_t)__builtin_popcountll(v);
	}
	if (s->frame != f || expected != ppf || received != bits || received > expected ||
	    ((state == GI_FRAME_COMPLETE || state == GI_FRAME_CORRUPT) && received != expected) ||
	    (state != GI_FRAME_COMPLETE && state != GI_FRAME_PARTIAL && state != GI_FRAME_TIMED_OUT &&
	     state != GI_FRAME_CORRUPT)) {
		out->header_errors++;
		snprintf(out->problem, sizeof(out->problem),
			 "slot says frame %llu state %u expected %u received %u, bitmap has %llu bits",
			 (unsigned long long)s->frame, state, expected, received, (unsigned long long)bits);
	}
	uint32_t data = (uint32_t)((h->frame_bytes + pb - 1) / pb); /* packets with data: a frame-end one has none */
	if ((state == GI_FRAME_COMPLETE || state == GI_FRAME_CORRUPT) && bits == ppf) {
		out->mismatches = gi_pattern_mismatches(payload, seed, 0, h->frame_bytes);
		out->packets = data;
		out->bytes = h->frame_bytes;
		if (out->sender.kind == GI_SENDER_HSB) {
			/* HSB's CRC is ~crc32(frame) in zlib's terms: the register from ~0, unflipped */
			uint32_t c = gi_crc32_host(0xffffffffu, payload, h->frame_bytes);
			out->crc = c == out->sender.crc;
			out->bytes_ok = out->sender.bytes_written == h->frame_bytes;
			/*
			 * Without the daemon's own check (rocev2.frame_crc) a frame must
			 * agree with its record; with it, the daemon's verdict (corrupt,
			 * crc_state) must be ours.
			 */
			int ours_ok = out->crc && out->bytes_ok, corrupt = state == GI_FRAME_CORRUPT;
			int checked = out->sender.crc_state == GI_CRC_OK || out->sender.crc_state == GI_CRC_MISMATCH;
			int disagree = checked ? corrupt == ours_ok || (out->sender.crc_state == GI_CRC_OK) != out->crc
					       : corrupt || !ours_ok;
			if (disagree) {
				out->header_errors++;
				snprintf(out->problem, sizeof(out->problem),
					 "sender record: crc 0x%08x, the frame's 0x%08x; bytes written %llu of %llu",
					 out->sender.crc, c, (unsigned long long)out->sender.bytes_written,
					 (unsigned long long)h->frame_bytes);
			}
		}
		return;
	}
	for (uint32_t i = 0; i < ppf; i++) {
		if (!(bm[i >> 6] >> (i & 63) & 1))
			continue;
		uint64_t off = (uint64_t)i * pb;
		/* the last data packet may be short; a frame-end packet of its own has none */
		uint64_t len = off >= h->frame_bytes ? 0 : GI_MIN((uint64_t)pb, h->frame_bytes - off);
		out->mismatches += gi_pattern_mismatches(payload + off, seed, off, len);
		out->packets += i < data;
		out->bytes += len;
	}
}

/* --sender: frame f's sender record as one JSON line (copied under the seqlock: fc->sender). */
static void print_sender(uint64_t f, const struct frame_check *fc)
{
	const struct gi_frame_sender *x = &fc->sender;
	printf("{\"frame\":%llu,\"sensor_frame\":%llu,\"state\":%u,\"sender_frame\":%llu,\"flags\":%u,"
	       "\"psn\":%u,\"crc\":%u,\"crc_ok\":%s,\"bytes_written\":%llu,\"sof_ns\":%llu,\"meta_ns\":%llu,"
	       "\"first_ts_ns\":%llu}\n",
	       (unsigned long long)f, (unsigned long long)fc->sensor_frame, fc->state,
	       (unsigned long long)x->frame_number, x->flags, x->psn, x->crc,
	       fc->crc < 0 ? "null" : fc->crc ? "true" : "false", (unsigned long long)x->bytes_written,
	       (unsigned long long)x->sof_ns, (unsigned long long)x->meta_ns, (unsigned long long)fc->first_ts_ns);
}

static void account(struct tally *t, uint64_t f)
{
	if (!t->any)
		t->first = f;
	t->any = true;
	t->last = f;
}

/* Frames [from, to) were lost to the producer lapping us. */
static void overrun_range(struct tally *t, uint64_t from, uint64_t to)
{
	if (from >= to)
		return;
	if (!t->any)
		t->first = from;
	t->any = true;
	t->last = to - 1;
	t->overruns += to - from;
}

/* Returns true when the ring was replaced before it started (reopen and retry). */
static bool consume(struct ring *r, const struct opts *o, struct tally *t, double t_end)
{
	struct gi_frame_ring_hdr *h = r->hdr;
	double next_name_check = now_s() + NAME_CHECK_S;
	uint64_t f;

	/* wait for the first packet of the stream */
	while (!__atomic_load_n(&h->started, __ATOMIC_ACQUIRE)) {
		if (stop_requested || __atomic_load_n(&h->closed, __ATOMIC_ACQUIRE) || (t_end > 0 && now_s() >= t_end))
			return false;
		if (now_s() >= next_name_check) {
			next_name_check = now_s() + NAME_CHECK_S;
			/* a restarting daemon replaces a stale object left by a crash */
			if (ring_name_gone(r))
				return true;
		}
		usleep(IDLE_SLEEP_US);
	}
	f = GI_LOAD_RELAXED_U64(&h->first_frame);
	if (!o->quiet)
		fprintf(stderr, "gpuingest-frames: %s: stream %.63s started at frame %llu\n", o->shm, h->stream_name,
			(unsigned long long)f);

	for (;;) {
		uint64_t next = GI_LOAD_ACQUIRE_U64(&h->next_frame);

		/* checked per frame, not only when caught up: a consumer that is
		 * behind (--slow-us) must still stop on time and on SIGINT */
		if (stop_requested || (t_end > 0 && now_s() >= t_end))
			return false;
		if (f >= next) {
			if (__atomic_load_n(&h->closed, __ATOMIC_ACQUIRE)) {
				/* closed is set after the final flush: next_frame is final now */
				if (f >= GI_LOAD_ACQUIRE_U64(&h->next_frame))
					return false;
				continue;
			}
			if (now_s() >= next_name_check) {
				next_name_check = now_s() + NAME_CHECK_S;
				if (ring_name_gone(r) && f >= GI_LOAD_ACQUIRE_U64(&h->next_frame)) {
					if (!o->quiet)
						fprintf(stderr, "gpuingest-frames: %s: removed by the daemon without "
								"being closed; stopping\n", o->shm);
					return false;
				}
			}
			usleep(IDLE_SLEEP_US);
			continue;
		}
		if (next - f > h->n_slots) {
			/* fell behind by a whole ring: those slots hold newer frames */
			uint64_t resume = next - h->n_slots + 1;
			overrun_range(t, f, resume);
			f = resume;
			continue;
		}

		struct gi_frame_slot *s = gi_frame_slot_at(h, f);
		uint64_t seq = GI_LOAD_ACQUIRE_U64(&s->seq);
		if (seq == 2 * f + 2) {
			struct frame_check fc;
			check_frame(r, s, f, &fc);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (GI_LOAD_RELAXED_U64(&s->seq) != seq) {
				t->overruns++; /* reused while we read it: the result means nothing */
			} else {
				if (fc.state == GI_FRAME_COMPLETE)
					t->complete++;
				else if (fc.state == GI_FRAME_CORRUPT)
					t->corrupt++;
				else if (fc.state == GI_FRAME_TIMED_OUT)
					t->timed_out++;
				else
					t->partial++;
				t->packets += fc.packets;
				t->bytes += fc.bytes;
				if (fc.sender.kind != GI_SENDER_NONE) {
					t->sender_records++;
					t->sender_crc_ok += fc.crc == 1;
					t->sender_crc_mismatch += fc.crc == 0;
					t->sender_bytes_mismatch += fc.bytes_ok == 0;
					if (o->sender)
						print_sender(f, &fc);
				}
				t->mismatches += fc.mismatches;
				t->header_errors += fc.header_errors;
				if (fc.header_errors)
					report_frame(t, o, f, "%s", fc.problem);
				if (fc.mismatches)
					report_frame(t, o, f, "%llu payload bytes differ from the pattern",
						     (unsigned long long)fc.mismatches);
			}
			if (o->slow_us)
				usleep(o->slow_us);
		} else if (seq < 2 * f + 1) {
			t->skipped++;
		} else if (seq == 2 * f + 1) {
			/* frames below next_frame are final: a filling one breaks the protocol */
			t->skipped++;
			t->header_errors++;
			report_frame(t, o, f, "below next_frame %llu but still filling", (unsigned long long)next);
		} else {
			t->overruns++;
		}
		account(t, f);
		f++;
	}
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	struct opts o = { .wait_s = 10 };
	static struct ring r = { .fd = -1 };
	struct tally t = { 0 };
	char name[64] = "";

	parse_args(argc, argv, &o);

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	double t_end = o.duration_s > 0 ? now_s() + o.duration_s : 0;
	do {
		ring_unmap(&r);
		if (ring_open(&r, &o) != 0)
			return EXIT_USAGE;
		memcpy(name, r.hdr->stream_name, sizeof(name) - 1);
	} while (consume(&r, &o, &t, t_end));

	printf("{\"shm\":");
	json_string(o.shm);
	printf(",\"stream\":");
	json_string(name);
	printf(",\"frames_complete\":%llu,\"frames_partial\":%llu,\"frames_timed_out\":%llu,\"frames_corrupt\":%llu,"
	       "\"frames_skipped\":%llu,\"overruns\":%llu,\"packets_verified\":%llu,\"bytes_verified\":%llu,"
	       "\"mismatches\":%llu,\"header_errors\":%llu,\"sender_records\":%llu,\"sender_crc_ok\":%llu,"
	       "\"sender_crc_mismatch\":%llu,\"sender_bytes_mismatch\":%llu,",
	       (unsigned long long)t.complete, (unsigned long long)t.partial, (unsigned long long)t.timed_out,
	       (unsigned long long)t.corrupt,
	       (unsigned long long)t.skipped, (unsigned long long)t.overruns, (unsigned long long)t.packets,
	       (unsigned long long)t.bytes, (unsigned long long)t.mismatches, (unsigned long long)t.header_errors,
	       (unsigned long long)t.sender_records, (unsigned long long)t.sender_crc_ok,
	       (unsigned long long)t.sender_crc_mismatch, (unsigned long long)t.sender_bytes_mismatch);
	if (t.any)
		printf("\"first_frame\":%llu,\"last_frame\":%llu}\n", (unsigned long long)t.first,
		       (unsigned long long)t.last);
	else
		printf("\"first_frame\":null,\"last_frame\":null}\n");
	fflush(stdout);
	ring_unmap(&r);
	return t.mismatches || t.header_errors ? EXIT_MISMATCH : EXIT_OK;
}
