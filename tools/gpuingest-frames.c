/*
 * gpuingest-frames — read one stream's frame ring and verify every byte.
 *
 * Why it exists: it is the reference consumer, built on libgpuingest
 * (client/include/gpuingest/consumer.h) like any other: the library opens
 * the ring (host memory, or GPU memory through CUDA IPC), follows the
 * seqlock protocol and accounts for every frame number from where it
 * started (the stream's first frame, or for a ring already running the
 * oldest frame it still held): complete, partial, timed out, corrupt,
 * skipped (no packet of it arrived) or overrun (the daemon reused the slot
 * before or while we read it).  This tool checks each frame against the
 * payload pattern gpuingest-sim sends (kernels/udp_seq.h), and --dump
 * writes frames out as .npy files for a look at real data.  Tests compare
 * its JSON with the sim's.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuingest/consumer.h"
#include "kernels/json.h"
#include "kernels/fmt_rocev2.h"
#include "kernels/udp_seq.h"

enum {
	EXIT_OK = 0,
	EXIT_MISMATCH = 1,
	EXIT_USAGE = 2,
};

#define SLICE_MS 50      /* longest wait in the library: stop, --duration and SIGINT are seen this often */
#define MAX_REPORTS 10   /* per-frame problem lines on stderr */
#define MAX_DIMS 4

struct opts {
	char shm[256];
	double wait_s;
	double duration_s;
	unsigned slow_us;
	bool quiet;
	bool sender;         /* --sender: one JSON line per frame with the sender's record, on stdout */
	bool verify;         /* check the payload against gpuingest-sim's pattern (--no-verify: real data) */
	const char *dump;    /* --dump DIR: each frame as DIR/frame-N.npy + .json */
	uint64_t dump_max;   /* 0: every frame */
	const char *dtype;   /* numpy descr of the dump, e.g. "<u2" */
	unsigned itemsize;
	uint64_t shape[MAX_DIMS];
	unsigned ndim;       /* 0: one dimension, the frame's length in items */
};

struct tally {
	uint64_t packets, bytes, mismatches, header_errors;
	/* frames with the sender's own record (HSB), and what checking them against the frame found */
	uint64_t sender_records, sender_crc_ok, sender_crc_mismatch, sender_bytes_mismatch;
	uint64_t dumped, dump_errors;
	unsigned reports;
	struct gic_stats lib;      /* the library's frame accounting, summed over reopened rings */
	bool any;
	bool wake;                 /* the last ring opened woke us (its wake object), not polling */
	uint64_t first, last;
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
		"Consume one stream's frame ring (made by gpuingestd, read through\n"
		"libgpuingest) and verify every received byte against the gpuingest-sim\n"
		"payload pattern, or dump frames to look at.\n"
		"\n"
		"  --shm NAME        the ring: its shared-memory name (/gpuingest-cam0) or\n"
		"                    the stream's name (cam0, for the default ring.shm)\n"
		"  --wait S          wait up to S seconds for the ring to appear (default 10)\n"
		"  --duration S      stop after S seconds (default 0: until the daemon\n"
		"                    closes the ring and every frame is consumed)\n"
		"  --slow-us N       sleep N microseconds per frame (a slow consumer)\n"
		"  --quiet           no progress or per-frame problem lines on stderr\n"
		"  --sender          print each verified frame's sender record (Holoscan\n"
		"                    Sensor Bridge metadata: frame number, PTP times, CRC,\n"
		"                    bytes written) as a JSON line before the summary\n"
		"  --no-verify       do not compare payloads with the simulator's pattern\n"
		"                    (real sensor data); headers are still checked, and\n"
		"                    packets_verified and bytes_verified stay 0\n"
		"  --dump DIR        write each frame as DIR/frame-<N>.npy (NumPy) with\n"
		"                    DIR/frame-<N>.json beside it (state, counts, times,\n"
		"                    missing packets, sender record); DIR is created\n"
		"                    (with its parents) if it does not exist\n"
		"  --dump-max N      stop dumping after N frames (default 0: all)\n"
		"  --dtype T         element type of the dump: u8 (default), i8, u16, i16,\n"
		"                    u32, i32, u64, i64, f32, f64, c64 (complex float),\n"
		"                    little-endian; the frame length must be a multiple\n"
		"  --shape A,B,...   dump shape, up to 4 dimensions, whose product times the\n"
		"                    element size is the frame length (default: 1-D)\n"
		"  --help\n"
		"\n"
		"Output: one JSON object on stdout.  Every frame number from first_frame to\n"
		"last_frame is counted once: frames_complete + frames_partial +\n"
		"frames_timed_out + frames_corrupt + frames_skipped + overruns (+\n"
		"frames_passed, never with this tool).  first_frame is the stream's first\n"
		"frame, or for a ring already running when this tool opened it the oldest\n"
		"frame the ring still held: overruns are frames the ring reused after that,\n"
		"before or while they were read.  (corrupt: the daemon found the frame's\n"
		"sender record wrong, rocev2.frame_crc.)  packets_verified and\n"
		"bytes_verified count what was compared with the pattern (packets and bytes\n"
		"that arrived): both 0 under --no-verify.  mismatches counts payload\n"
		"bytes that differ from the pattern; header_errors counts published slots\n"
		"whose metadata is inconsistent (received != bits in the bitmap, ...).\n"
		"Frames with a sender record: sender_records; of the complete ones, the\n"
		"record's CRC (~crc32 of the frame, zlib's) checked: sender_crc_ok or\n"
		"sender_crc_mismatch, and bytes written != the frame's: sender_bytes_mismatch\n"
		"(a header error only where the daemon checked the frame, rocev2.frame_crc:\n"
		"verify, and found otherwise; HSB's software emulator sends CRC 0, so each\n"
		"of its frames is a sender_crc_mismatch).  frames_dumped, dump_errors.\n"
		"waits: sleeps until the next frame; wake: the daemon wakes them (else they\n"
		"poll).\n"
		"Exit: 0 all verified bytes match, 1 a mismatch, header or dump error,\n"
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

static uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr, "gpuingest-frames: %s: expected an integer in [0, %llu], got '%s' (see --help)\n", opt,
			(unsigned long long)max, s);
		exit(EXIT_USAGE);
	}
	return v;
}

static void parse_dtype(struct opts *o, const char *s)
{
	static const struct { const char *name, *descr; unsigned size; } types[] = {
		{ "u8", "|u1", 1 },  { "i8", "|i1", 1 },  { "u16", "<u2", 2 }, { "i16", "<i2", 2 },
		{ "u32", "<u4", 4 }, { "i32", "<i4", 4 }, { "u64", "<u8", 8 }, { "i64", "<i8", 8 },
		{ "f32", "<f4", 4 }, { "f64", "<f8", 8 }, { "c64", "<c8", 8 },
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(s, types[i].name) == 0) {
			o->dtype = types[i].descr;
			o->itemsize = types[i].size;
			return;
		}
	die_usage("--dtype: expected u8, i8, u16, i16, u32, i32, u64, i64, f32, f64 or c64, got", s);
}

static void parse_shape(struct opts *o, const char *s)
{
	const char *p = s;
	o->ndim = 0;
	while (*p) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || end == p || *p == '-' || v == 0 || o->ndim == MAX_DIMS || (*end && *end != ','))
			die_usage("--shape: expected up to 4 positive integers separated by commas, got", s);
		o->shape[o->ndim++] = v;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			die_usage("--shape: expected up to 4 positive integers separated by commas, got", s);
	}
	if (!o->ndim)
		die_usage("--shape: expected up to 4 positive integers separated by commas, got", s);
}

/* --dump DIR: one line and EXIT_USAGE unless it is (or, made here, becomes) a directory to write in. */
static void dump_dir_fail(const char *dir, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void dump_dir_fail(const char *dir, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "gpuingest-frames: --dump %s: ", dir);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_USAGE);
}

/*
 * Make DIR and any missing parents, as mkdir -p does: a dump directory
 * named on the command line is one the user wants, and finding that it was
 * missing only after the ring was opened would lose the run.
 */
static void make_dump_dir(const char *dir)
{
	char path[4096];
	struct stat sb;

	if (!dir[0] || strlen(dir) >= sizeof(path) - 32)
		dump_dir_fail(dir, "expected a directory path of at most %zu characters", sizeof(path) - 33);
	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(path, 0777) != 0) {
			int e = errno;
			if (e != EEXIST)
				dump_dir_fail(dir, "cannot create directory %s: %s", path, strerror(e));
			if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
				dump_dir_fail(dir, "%s exists and is not a directory", path);
		}
		*p = c;
		if (!c)
			break;
	}
	if (access(dir, W_OK | X_OK) != 0)
		dump_dir_fail(dir, "directory not writable: %s", strerror(errno));
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
		{ "no-verify", no_argument, NULL, 'V' },
		{ "dump", required_argument, NULL, 'D' },
		{ "dump-max", required_argument, NULL, 'M' },
		{ "dtype", required_argument, NULL, 't' },
		{ "shape", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!optarg[0] || strlen(optarg) > 250 || strchr(optarg + 1, '/'))
				die_usage("--shm: expected a name like /gpuingest-cam0 or cam0, got", optarg);
			snprintf(o->shm, sizeof(o->shm), "%s", optarg);
			break;
		case 'w': o->wait_s = parse_seconds("--wait", optarg); break;
		case 'd': o->duration_s = parse_seconds("--duration", optarg); break;
		case 'u': o->slow_us = (unsigned)parse_u64("--slow-us", optarg, 10000000); break;
		case 'q': o->quiet = true; break;
		case 'S': o->sender = true; break;
		case 'V': o->verify = false; break;
		case 'D': o->dump = optarg; break;
		case 'M': o->dump_max = parse_u64("--dump-max", optarg, UINT64_MAX); break;
		case 't': parse_dtype(o, optarg); break;
		case 'p': parse_shape(o, optarg); break;
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
	if (o->dump)
		make_dump_dir(o->dump);
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
	uint64_t packets, bytes, mismatches;
	uint64_t header_errors;
	int crc;          /* the sender record's CRC: -1 not checked (none, or a partial frame), 0 bad, 1 good */
	int bytes_ok;     /* ... bytes written: -1 not checked, 0 bad, 1 good */
	char problem[160];
};

/*
 * Check frame f whose bytes are at `payload` (in the ring, or a copy out of
 * GPU memory); the caller asks the library afterwards whether they were.
 */
static void check_frame(const struct opts *o, const struct gic_frame *f, const uint8_t *payload,
			struct frame_check *out)
{
	uint32_t ppf = f->expected, pb = f->payload_bytes;
	/* the sender's own frame number: ring numbers move on after a sender restart */
	uint64_t seed = gi_pattern_seed((uint16_t)f->sensor_id, (uint32_t)f->sensor_frame);
	uint64_t bits = 0;

	memset(out, 0, sizeof(*out));
	out->crc = out->bytes_ok = -1;
	for (uint32_t w = 0; w < f->bitmap_words; w++) {
		uint64_t v = f->bitmap[w];
		if (w == f->bitmap_words - 1 && ppf % 64) {
			uint64_t tail = v & ~((1ull << (ppf % 64)) - 1);
			if (tail) {
				out->header_errors++;
				snprintf(out->problem, sizeof(out->problem), "bitmap has bits beyond packet %u", ppf);
			}
			v &= (1ull << (ppf % 64)) - 1;
		}
		bits += (uint64_t)__builtin_popcountll(v);
	}
	bool whole = f->state == GIC_FRAME_COMPLETE || f->state == GIC_FRAME_CORRUPT;
	if (f->received != bits || f->received > f->expected || (whole && f->received != f->expected) ||
	    (f->state != GIC_FRAME_COMPLETE && f->state != GIC_FRAME_PARTIAL && f->state != GIC_FRAME_TIMED_OUT &&
	     f->state != GIC_FRAME_CORRUPT)) {
		out->header_errors++;
		snprintf(out->problem, sizeof(out->problem), "slot says state %u expected %u received %u, bitmap has %llu bits",
			 f->state, f->expected, f->received, (unsigned long long)bits);
	}
	uint32_t data = (uint32_t)((f->bytes + pb - 1) / pb); /* packets with data: a frame-end one has none */
	if (whole && bits == ppf) {
		if (o->verify)
			out->mismatches = gi_pattern_mismatches(payload, seed, 0, f->bytes);
		out->packets = data;
		out->bytes = f->bytes;
		if (f->sender.kind == GIC_SENDER_HSB) {
			/* HSB's CRC is ~crc32(frame) in zlib's terms: the register from ~0, unflipped */
			uint32_t c = gi_crc32_host(0xffffffffu, payload, f->bytes);
			out->crc = c == f->sender.crc;
			out->bytes_ok = f->sender.bytes_written == f->bytes;
			/*
			 * With the daemon's own check (rocev2.frame_crc: verify) its
			 * verdict (corrupt, crc_state) must be ours.  Without it the
			 * record is only the sender's word, counted but no error of the
			 * daemon's: HSB's software emulator never writes its CRC (0), so
			 * every one of its frames is a sender_crc_mismatch; a frame
			 * nobody checked must not be corrupt.
			 */
			int ours_ok = out->crc && out->bytes_ok, corrupt = f->state == GIC_FRAME_CORRUPT;
			int checked = f->sender.crc_state == GIC_CRC_OK || f->sender.crc_state == GIC_CRC_MISMATCH;
			int disagree = checked ? corrupt == ours_ok || (f->sender.crc_state == GIC_CRC_OK) != out->crc
					       : corrupt;
			if (disagree) {
				out->header_errors++;
				snprintf(out->problem, sizeof(out->problem),
					 "sender record: crc 0x%08x, the frame's 0x%08x; bytes written %llu of %llu",
					 f->sender.crc, c, (unsigned long long)f->sender.bytes_written,
					 (unsigned long long)f->bytes);
			}
		}
		return;
	}
	for (uint32_t i = 0; i < ppf; i++) {
		if (!gic_packet_present(f, i))
			continue;
		uint64_t off = (uint64_t)i * pb;
		/* the last data packet may be short; a frame-end packet of its own has none */
		uint64_t len = off >= f->bytes ? 0 : GI_MIN((uint64_t)pb, f->bytes - off);
		if (o->verify)
			out->mismatches += gi_pattern_mismatches(payload + off, seed, off, len);
		out->packets += i < data;
		out->bytes += len;
	}
}

/* --sender: frame f's sender record as one JSON line. */
static void print_sender(const struct gic_frame *f, const struct frame_check *fc)
{
	const struct gic_sender *x = &f->sender;
	printf("{\"frame\":%llu,\"sensor_frame\":%llu,\"state\":%u,\"sender_frame\":%llu,\"flags\":%u,"
	       "\"psn\":%u,\"crc\":%u,\"crc_ok\":%s,\"bytes_written\":%llu,\"sof_ns\":%llu,\"meta_ns\":%llu,"
	       "\"first_ts_ns\":%llu}\n",
	       (unsigned long long)f->frame, (unsigned long long)f->sensor_frame, f->state,
	       (unsigned long long)x->frame_number, x->flags, x->psn, x->crc,
	       fc->crc < 0 ? "null" : fc->crc ? "true" : "false", (unsigned long long)x->bytes_written,
	       (unsigned long long)x->sof_ns, (unsigned long long)x->meta_ns, (unsigned long long)f->first_ts_ns);
}

static const char *state_name(uint32_t state)
{
	switch (state) {
	case GIC_FRAME_COMPLETE: return "complete";
	case GIC_FRAME_PARTIAL: return "partial";
	case GIC_FRAME_TIMED_OUT: return "timed_out";
	case GIC_FRAME_CORRUPT: return "corrupt";
	default: return "unknown";
	}
}

/*
 * --dump: DIR/frame-N.npy (format 1.0: magic, version, header length, a
 * Python dict literal padded to 64 bytes, then the raw data) and
 * DIR/frame-N.json.  Written to temporary names and renamed, so a reader
 * polling the directory never sees half a frame.  0, or -1 with a line.
 */
static int dump_frame(const struct opts *o, const struct gic_ring_info *info, const struct gic_frame *f,
		      const uint8_t *payload)
{
	char path[4096], tmp[4200], dict[256], shape[160] = "";
	uint64_t items = f->bytes / o->itemsize;
	size_t n = 0;

	if (o->ndim == 0) {
		snprintf(shape, sizeof(shape), "(%llu,)", (unsigned long long)items);
	} else {
		n += (size_t)snprintf(shape, sizeof(shape), "(");
		for (unsigned d = 0; d < o->ndim; d++)
			n += (size_t)snprintf(shape + n, sizeof(shape) - n, "%llu%s", (unsigned long long)o->shape[d],
					      o->ndim == 1 || d + 1 < o->ndim ? ", " : "");
		snprintf(shape + n, sizeof(shape) - n, ")");
	}
	int len = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", o->dtype,
			   shape);
	int total = 10 + len + 1; /* magic 6, version 2, length 2, dict, '\n' */
	int pad = (64 - total % 64) % 64;

	snprintf(path, sizeof(path), "%s/frame-%llu.npy", o->dump, (unsigned long long)f->frame);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *fp = fopen(tmp, "wb");
	if (!fp)
		goto fail;
	uint16_t hlen = (uint16_t)(len + pad + 1);
	unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
				  (unsigned char)(hlen >> 8) };
	bool ok = fwrite(pre, 1, sizeof(pre), fp) == sizeof(pre) && fwrite(dict, 1, (size_t)len, fp) == (size_t)len;
	for (int i = 0; ok && i < pad; i++)
		ok = fputc(' ', fp) != EOF;
	ok = ok && fputc('\n', fp) != EOF && fwrite(payload, 1, f->bytes, fp) == f->bytes;
	if (fclose(fp) != 0 || !ok || rename(tmp, path) != 0)
		goto fail;

	snprintf(path, sizeof(path), "%s/frame-%llu.json", o->dump, (unsigned long long)f->frame);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fp = fopen(tmp, "w");
	if (!fp)
		goto fail;
	fprintf(fp, "{\"stream\":");
	gi_json_string(fp, info->stream);
	fprintf(fp, ",\"shm\":");
	gi_json_string(fp, info->shm);
	fprintf(fp,
		",\"frame\":%llu,\"sensor_id\":%u,\"sensor_frame\":%llu,\"state\":\"%s\",\"expected\":%u,"
		"\"received\":%u,\"bytes\":%llu,\"payload_bytes\":%u,\"dtype\":\"%s\",\"first_ts_ns\":%llu,"
		"\"first_rx_ns\":%llu,\"publish_ns\":%llu,\"first_nic_ns\":%llu,\"last_nic_ns\":%llu,"
		"\"missing_packets\":[",
		(unsigned long long)f->frame, f->sensor_id, (unsigned long long)f->sensor_frame, state_name(f->state),
		f->expected, f->received, (unsigned long long)f->bytes, f->payload_bytes, o->dtype,
		(unsigned long long)f->first_ts_ns, (unsigned long long)f->first_rx_ns,
		(unsigned long long)f->publish_ns, (unsigned long long)f->first_nic_ns,
		(unsigned long long)f->last_nic_ns);
	for (uint32_t i = 0, first = 1; i < f->expected; i++)
		if (!gic_packet_present(f, i)) {
			fprintf(fp, "%s%u", first ? "" : ",", i);
			first = 0;
		}
	fprintf(fp, "],\"sender\":");
	if (f->sender.kind == GIC_SENDER_NONE)
		fprintf(fp, "null");
	else
		fprintf(fp,
			"{\"kind\":%u,\"flags\":%u,\"frame_number\":%llu,\"bytes_written\":%llu,\"sof_ns\":%llu,"
			"\"meta_ns\":%llu,\"crc\":%u,\"psn\":%u,\"crc_state\":%u}",
			f->sender.kind, f->sender.flags, (unsigned long long)f->sender.frame_number,
			(unsigned long long)f->sender.bytes_written, (unsigned long long)f->sender.sof_ns,
			(unsigned long long)f->sender.meta_ns, f->sender.crc, f->sender.psn, f->sender.crc_state);
	fprintf(fp, "}\n");
	if (fclose(fp) != 0 || rename(tmp, path) != 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "gpuingest-frames: %s: cannot write %s: %s\n", o->shm, tmp, strerror(errno));
	unlink(tmp);
	return -1;
}

/* The dump's shape against the frame length, once the ring says what it is. */
static int dump_check(const struct opts *o, const struct gic_ring_info *info)
{
	uint64_t items = 1;
	for (unsigned d = 0; d < o->ndim; d++)
		items *= o->shape[d];
	if (info->frame_bytes % o->itemsize ||
	    (o->ndim && items * o->itemsize != info->frame_bytes)) {
		fprintf(stderr,
			"gpuingest-frames: %s: --dtype/--shape do not fit the ring's %llu-byte frames (%llu items of %u "
			"bytes)\n",
			o->shm, (unsigned long long)info->frame_bytes, (unsigned long long)items, o->itemsize);
		return -1;
	}
	return 0;
}

static void stats_add(struct gic_stats *sum, const struct gic_stats *s)
{
	sum->complete += s->complete;
	sum->partial += s->partial;
	sum->timed_out += s->timed_out;
	sum->corrupt += s->corrupt;
	sum->missing += s->missing;
	sum->overruns += s->overruns;
	sum->skipped += s->skipped;
	sum->protocol_errors += s->protocol_errors;
	sum->waits += s->waits;
}

enum consumed { RING_DONE, RING_REOPEN };

/*
 * Read frames until the ring is closed and drained, removed, the duration
 * is over or a signal came.  RING_REOPEN: the name was replaced before the
 * stream started (a restarting daemon replaced a stale object).
 */
static enum consumed consume(struct gic_ring *r, const struct opts *o, struct tally *t, double t_end,
			     uint8_t *staging)
{
	const struct gic_ring_info *info = gic_info(r);
	struct gic_frame f;
	bool said_start = false;

	for (;;) {
		if (stop_requested || (t_end > 0 && now_s() >= t_end))
			return RING_DONE;
		int rc = gic_next(r, &f, SLICE_MS);
		if (!said_start && !o->quiet) {
			struct gic_stats s;
			gic_stats(r, &s);
			if (s.started) {
				said_start = true;
				fprintf(stderr, "gpuingest-frames: %s: stream %s: reading from frame %llu\n", o->shm,
					info->stream, (unsigned long long)s.first_frame);
			}
		}
		if (rc == GIC_TIMEOUT || rc == GIC_INTERRUPTED)
			continue;
		if (rc == GIC_CLOSED)
			return RING_DONE;
		if (rc == GIC_RESTARTED) {
			struct gic_stats s;
			gic_stats(r, &s);
			if (!s.started)
				return RING_REOPEN;
			if (!o->quiet)
				fprintf(stderr, "gpuingest-frames: %s: removed by the daemon without being closed; stopping\n",
					o->shm);
			return RING_DONE;
		}
		if (rc != GIC_OK) {
			fprintf(stderr, "gpuingest-frames: %s: %s %s\n", o->shm, gic_strerror(rc), gic_last_error(r));
			t->header_errors++;
			return RING_DONE;
		}

		const uint8_t *payload = f.data;
		if (!payload) { /* a GPU ring: one consistent copy of the frame, then checked */
			int crc = gic_copy(r, &f, staging, info->frame_bytes);
			if (crc == GIC_OVERRUN)
				continue; /* counted by the library */
			if (crc < 0) {
				t->header_errors++;
				report_frame(t, o, f.frame, "%s", gic_last_error(r));
				continue;
			}
			payload = staging;
		}
		struct frame_check fc;
		check_frame(o, &f, payload, &fc);
		bool dump = o->dump && (o->dump_max == 0 || t->dumped < o->dump_max);
		if (dump && payload != staging) {
			/* a host ring: write a checked copy, never bytes the daemon is replacing */
			memcpy(staging, payload, f.bytes);
			payload = staging;
		}
		if (!gic_valid(r, &f))
			continue; /* reused while we read it: the result means nothing (an overrun) */
		if (o->verify) { /* --no-verify compared nothing: no packet or byte was verified */
			t->packets += fc.packets;
			t->bytes += fc.bytes;
		}
		if (f.sender.kind != GIC_SENDER_NONE) {
			t->sender_records++;
			t->sender_crc_ok += fc.crc == 1;
			t->sender_crc_mismatch += fc.crc == 0;
			t->sender_bytes_mismatch += fc.bytes_ok == 0;
			if (o->sender)
				print_sender(&f, &fc);
		}
		t->mismatches += fc.mismatches;
		t->header_errors += fc.header_errors;
		if (fc.header_errors)
			report_frame(t, o, f.frame, "%s", fc.problem);
		if (fc.mismatches)
			report_frame(t, o, f.frame, "%llu payload bytes differ from the pattern",
				     (unsigned long long)fc.mismatches);
		if (dump) {
			if (dump_frame(o, info, &f, payload) == 0)
				t->dumped++;
			else
				t->dump_errors++;
		}
		if (o->slow_us)
			usleep(o->slow_us);
	}
}

int main(int argc, char **argv)
{
	struct opts o = { .wait_s = 10, .verify = true, .dtype = "|u1", .itemsize = 1 };
	struct tally t = { 0 };
	char name[64] = "", err[512];
	enum consumed how;
	uint8_t *staging = NULL;

	parse_args(argc, argv, &o);

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	double t_end = o.duration_s > 0 ? now_s() + o.duration_s : 0;
	do {
		struct gic_ring *r;
		int rc = gic_open(&r, o.shm, (int)(o.wait_s * 1000), 0, err, sizeof(err));
		if (rc != GIC_OK) {
			fprintf(stderr, "gpuingest-frames: %s: no usable frame ring within %g s: %s\n", o.shm, o.wait_s,
				rc == GIC_INTERRUPTED ? "interrupted" : err);
			return EXIT_USAGE;
		}
		const struct gic_ring_info *info = gic_info(r);
		snprintf(name, sizeof(name), "%s", info->stream);
		free(staging);
		staging = malloc(info->frame_bytes ? info->frame_bytes : 1);
		if (!staging || (o.dump && dump_check(&o, info) < 0)) {
			if (!staging)
				fprintf(stderr, "gpuingest-frames: out of memory for a %llu-byte frame\n",
					(unsigned long long)info->frame_bytes);
			free(staging);
			gic_close(r);
			return EXIT_USAGE;
		}
		t.wake = info->wake;
		how = consume(r, &o, &t, t_end, staging);
		struct gic_stats s;
		gic_stats(r, &s);
		stats_add(&t.lib, &s);
		if (s.started && s.next_frame > s.first_frame) {
			if (!t.any)
				t.first = s.first_frame;
			t.any = true;
			t.last = s.next_frame - 1;
		}
		gic_close(r);
	} while (how == RING_REOPEN && !stop_requested);
	free(staging);

	/* frames below next_frame still filling: the daemon broke the protocol */
	t.header_errors += t.lib.protocol_errors;
	printf("{\"shm\":");
	gi_json_string(stdout, o.shm);
	printf(",\"stream\":");
	gi_json_string(stdout, name);
	printf(",\"frames_complete\":%llu,\"frames_partial\":%llu,\"frames_timed_out\":%llu,\"frames_corrupt\":%llu,"
	       "\"frames_skipped\":%llu,\"overruns\":%llu,\"frames_passed\":%llu,\"packets_verified\":%llu,"
	       "\"bytes_verified\":%llu,\"mismatches\":%llu,\"header_errors\":%llu,\"sender_records\":%llu,"
	       "\"sender_crc_ok\":%llu,\"sender_crc_mismatch\":%llu,\"sender_bytes_mismatch\":%llu,"
	       "\"frames_dumped\":%llu,\"dump_errors\":%llu,\"waits\":%llu,\"wake\":%s,",
	       (unsigned long long)t.lib.complete, (unsigned long long)t.lib.partial,
	       (unsigned long long)t.lib.timed_out, (unsigned long long)t.lib.corrupt,
	       (unsigned long long)t.lib.missing, (unsigned long long)t.lib.overruns,
	       (unsigned long long)t.lib.skipped, (unsigned long long)t.packets, (unsigned long long)t.bytes,
	       (unsigned long long)t.mismatches, (unsigned long long)t.header_errors,
	       (unsigned long long)t.sender_records, (unsigned long long)t.sender_crc_ok,
	       (unsigned long long)t.sender_crc_mismatch, (unsigned long long)t.sender_bytes_mismatch,
	       (unsigned long long)t.dumped, (unsigned long long)t.dump_errors, (unsigned long long)t.lib.waits,
	       t.wake ? "true" : "false");
	if (t.any)
		printf("\"first_frame\":%llu,\"last_frame\":%llu}\n", (unsigned long long)t.first,
		       (unsigned long long)t.last);
	else
		printf("\"first_frame\":null,\"last_frame\":null}\n");
	fflush(stdout);
	return t.mismatches || t.header_errors || t.dump_errors ? EXIT_MISMATCH : EXIT_OK;
}
