/*
 * exec_bench.c — the host executor's bodies on packets from a pcap file,
 * without DPDK: instructions per packet (under callgrind) and payload
 * throughput against a plain memcpy of the same bytes.
 *
 *   exec_bench --pcap FILE --format F --packets P --payload B [--passes N] [--batch M] [--mode exec|memcpy|both]
 *              [--pipeline phased|serial]
 *
 * The pcap comes from `gpuingest-sim --port pcap:FILE` with one stream of
 * format F (udp_seq, rocev2, vita49, custom) and geometry P x B; the stream
 * is set up as the simulator's defaults describe it (rocev2 QP 256 on 4791,
 * VRT stream ID 0 on 5000, the custom map of GI_BENCH_CUSTOM_SPEC on 5000).
 * Packets are handed to the executor M at a time, exactly as a host worker
 * runs one batch slot: gi_exec_slot_phased() (the default pipeline: the
 * batch's trip, kernels/trip.h, on one worker) or gi_exec_slot_host() (--pipeline serial, the reference).
 *
 * --passes N > 1 replays the file N times (udp_seq only: each pass rewrites
 * the seq and frame numbers so that every packet is new to the stream).
 * Only the calls to the executor (or the memcpy loop) are timed; with
 * --mode both the two alternate pass by pass, and the GB/s figures are the
 * medians over the passes after the first (a warm-up).
 * The memcpy ceiling copies each packet's payload to where the executor
 * would put it: the same source bytes, the same frame ring footprint.
 *
 * Prints one JSON object.  Single-threaded; a benchmark, not a test.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/executor.h"
#include "kernels/fmt_custom.h"
#include "kernels/fmt_rocev2.h"
#include "kernels/fmt_vita49.h"
#include "tools/sim_fmt_custom.c" /* the simulator's custom-map parser, no DPDK in it */

/* The map gpuingest-sim is given for --format custom (bench/exec_instr.sh). */
#define GI_BENCH_CUSTOM_SPEC "seq=0:4:be,frame=4:4:be,index=8:2:be,header=16"
#define PKT_ALIGN 64u
#define FRAME_SLOTS 8u

struct pkt_set {
	uint8_t *mem;
	uint32_t *off;
	uint32_t *len;
	uint32_t n;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Every record of a classic little-endian pcap file, each copy 64-byte aligned. */
static int load_pcap(const char *path, struct pkt_set *ps)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	uint8_t gh[24], rh[16];
	if (fread(gh, 1, 24, f) != 24 || (gh[0] != 0xd4 || gh[1] != 0xc3 || gh[2] != 0xb2 || gh[3] != 0xa1)) {
		fclose(f);
		return -EINVAL;
	}
	long start = ftell(f);
	fseek(f, 0, SEEK_END);
	size_t cap = (size_t)(ftell(f) - start);
	fseek(f, start, SEEK_SET);
	size_t n_max = cap / 16 + 1;
	ps->mem = aligned_alloc(4096, ((cap + n_max * PKT_ALIGN) + 4095) & ~(size_t)4095);
	ps->off = calloc(n_max, sizeof(*ps->off));
	ps->len = calloc(n_max, sizeof(*ps->len));
	ps->n = 0;
	size_t at = 0;
	while (fread(rh, 1, 16, f) == 16) {
		uint32_t incl = (uint32_t)rh[8] | (uint32_t)rh[9] << 8 | (uint32_t)rh[10] << 16 | (uint32_t)rh[11] << 24;
		if (fread(ps->mem + at, 1, incl, f) != incl)
			break;
		ps->off[ps->n] = (uint32_t)at;
		ps->len[ps->n] = incl;
		ps->n++;
		at = (at + incl + PKT_ALIGN - 1) & ~(size_t)(PKT_ALIGN - 1);
	}
	fclose(f);
	return ps->n ? 0 : -ENODATA;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, uint32_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_format(const char *s)
{
	if (!strcmp(s, "udp_seq"))
		return GI_FORMAT_UDP_SEQ;
	if (!strcmp(s, "rocev2"))
		return GI_FORMAT_ROCEV2;
	if (!strcmp(s, "vita49"))
		return GI_FORMAT_VITA49;
	if (!strcmp(s, "custom"))
		return GI_FORMAT_CUSTOM;
	return -1;
}

/* One stream as the simulator's defaults describe it; its UDP port in *port. */
static int stream_setup(struct gi_stream_rt *st, int format, uint16_t *port)
{
	gi_format_params_init(&st->fp, (enum gi_format)format);
	*port = 5000;
	if (format == GI_FORMAT_ROCEV2) {
		struct gi_fmt_rocev2_params rp = { .base_va = 0, .dst_qp = 256, .icrc = GI_ROCEV2_ICRC_VERIFY };
		gi_fmt_rocev2_set(&st->fp, &rp);
		*port = GI_ROCEV2_UDP_PORT;
	} else if (format == GI_FORMAT_VITA49) {
		struct gi_fmt_vita49_params vp = { .ts_step_ps = 0, .stream_id = 0, .has_stream_id = 1 };
		gi_vita49_params_store(&st->fp, &vp);
	} else if (format == GI_FORMAT_CUSTOM) {
		static struct gi_sim_custom cu;
		char err[256];
		if (gi_sim_custom_parse(GI_BENCH_CUSTOM_SPEC, &cu, err, sizeof(err)) < 0) {
			fprintf(stderr, "exec_bench: custom map: %s\n", err);
			return -EINVAL;
		}
		gi_fmt_custom_setup(&st->fp, &cu.map);
	}
	st->fp.resync_frames = 1000;
	return 0;
}

/* udp_seq: shift every packet's seq and frame by one file's worth (pass p). */
static void renumber_udp_seq(struct pkt_set *ps, uint32_t packets_per_frame)
{
	uint32_t frames = (ps->n + packets_per_frame - 1) / packets_per_frame;
	for (uint32_t i = 0; i < ps->n; i++) {
		uint8_t *u = ps->mem + ps->off[i] + 14 + 20 + 8; /* Ethernet, IPv4 without options, UDP */
		gi_put_be32(u + 8, gi_be32(u + 8) + ps->n);
		gi_put_be32(u + 12, gi_be32(u + 12) + frames);
	}
}

int main(int argc, char **argv)
{
	const char *pcap = NULL, *mode = "exec", *fmt_name = "udp_seq", *pipeline = "phased";
	int format = GI_FORMAT_UDP_SEQ;
	uint32_t ppf = 64, payload = 1024, passes = 1, batch = 64;
	static const struct option opts[] = {
		{ "pcap", required_argument, NULL, 'f' },   { "format", required_argument, NULL, 'F' },
		{ "packets", required_argument, NULL, 'p' }, { "payload", required_argument, NULL, 'b' },
		{ "passes", required_argument, NULL, 'n' },  { "batch", required_argument, NULL, 'm' },
		{ "mode", required_argument, NULL, 'M' },    { "pipeline", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'f': pcap = optarg; break;
		case 'F': format = parse_format(optarg), fmt_name = optarg; break;
		case 'p': ppf = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'b': payload = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': passes = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': batch = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'M': mode = optarg; break;
		case 'P': pipeline = optarg; break;
		default: return 2;
		}
	}
	int phased = strcmp(pipeline, "phased") == 0;
	if (!pcap || format < 0 || !ppf || !payload || !passes || !batch || batch > 4096 ||
	    (passes > 1 && format != GI_FORMAT_UDP_SEQ) || (!phased && strcmp(pipeline, "serial") != 0)) {
		fprintf(stderr, "usage: exec_bench --pcap FILE --format udp_seq|rocev2|vita49|custom --packets P "
				"--payload B [--passes N (udp_seq)] [--batch M] [--mode exec|memcpy|both] "
				"[--pipeline phased|serial]\n");
		return 2;
	}
	struct pkt_set ps = { 0 };
	int rc = load_pcap(pcap, &ps);
	if (rc < 0) {
		fprintf(stderr, "exec_bench: %s: cannot load: %s\n", pcap, strerror(-rc));
		return 1;
	}

	/* one stream, its frame ring, the port map, one batch slot */
	uint64_t ring_bytes = gi_frame_ring_bytes(FRAME_SLOTS, ppf, payload);
	uint8_t *ring_mem = aligned_alloc(4096, (ring_bytes + 4095) & ~4095ull);
	memset(ring_mem, 0, ring_bytes);
	struct gi_frame_ring_hdr *h = (struct gi_frame_ring_hdr *)ring_mem;
	gi_frame_ring_init(h, FRAME_SLOTS, ppf, payload, 0, (uint32_t)format, 0, "bench", 1);
	struct gi_stream_rt st = { .format = (uint32_t)format, .packets = ppf, .payload_bytes = payload, .last_bytes = payload,
				   .data_packets = ppf,
				   .window = 4, .ring = h, .next_same_udp = GI_STREAM_NONE };
	uint16_t port;
	if (stream_setup(&st, format, &port) < 0)
		return 1;
	uint16_t *map = malloc(65536 * sizeof(*map));
	for (int i = 0; i < 65536; i++)
		map[i] = GI_STREAM_NONE;
	map[port] = 0;
	struct gi_exec_ctx ctx = { .n_streams = 1, .n_ports = 1, .streams = &st, .map = map };
	struct gi_exec_counters ctr;
	memset(&ctr, 0, sizeof(ctr));
	uint64_t rb = gi_ring_bytes(4, batch, 0);
	struct gi_batch_ring *ring = aligned_alloc(64, (rb + 63) & ~63ull);
	memset(ring, 0, rb);
	gi_ring_init(ring, 4, batch, 0);
	struct gi_batch_slot *slot = gi_ring_slot(ring, 0);
	struct gi_batch_hdr *scratch = aligned_alloc(64, (gi_batch_scratch_bytes(batch) + 63) & ~63ull);

	uint64_t exec_ns = 0, copy_ns = 0, copy_bytes = 0, fed = 0, placed_before = 0;
	/* per pass: GB/s of each, so that the medians can be compared (a shared VM drifts) */
	double *pass_exec = calloc(passes, sizeof(double)), *pass_copy = calloc(passes, sizeof(double));
	int do_exec = strcmp(mode, "memcpy") != 0, do_copy = strcmp(mode, "exec") != 0;
	uint64_t hdr_bytes = (uint64_t)ring_bytes - (uint64_t)FRAME_SLOTS * ppf * payload;
	uint8_t *dst = ring_mem + hdr_bytes; /* memcpy target: the ring's data area, as big as its frames */
	for (uint32_t p = 0; p < passes; p++) {
		if (p)
			renumber_udp_seq(&ps, ppf);
		uint64_t e0 = exec_ns, c0 = copy_ns, cb0 = copy_bytes;
		if (do_exec) {
			for (uint32_t i = 0; i < ps.n; i += batch) {
				uint32_t k = ps.n - i < batch ? ps.n - i : batch;
				for (uint32_t j = 0; j < k; j++) {
					gi_slot_addr(slot)[j] = (uint64_t)(uintptr_t)(ps.mem + ps.off[i + j]);
					gi_slot_len(slot, batch)[j] = ps.len[i + j];
				}
				slot->n_pkts = k;
				slot->port = 0;
				uint64_t t0 = now_ns();
				if (phased)
					gi_exec_slot_phased(&ctx, &ctr, GI_GROUP_ANY, NULL, 0, slot, batch, 0, t0, scratch);
				else
					gi_exec_slot_host(&ctx, &ctr, slot, batch, 0, t0);
				exec_ns += now_ns() - t0;
				fed += k;
			}
		}
		if (do_copy) {
			/* the payload sits at the end of each packet; place i lands at (i mod ring packets) */
			uint32_t places = FRAME_SLOTS * ppf;
			for (uint32_t i = 0; i < ps.n; i += batch) {
				uint32_t k = ps.n - i < batch ? ps.n - i : batch;
				uint64_t t0 = now_ns();
				for (uint32_t j = 0; j < k; j++) {
					uint32_t n = i + j, l = ps.len[n] < payload ? ps.len[n] : payload;
					memcpy(dst + (uint64_t)((p * ps.n + n) % places) * payload,
					       ps.mem + ps.off[n] + ps.len[n] - l, l);
					copy_bytes += l;
				}
				copy_ns += now_ns() - t0;
			}
		}
		if (exec_ns > e0)
			pass_exec[p] = (double)(st.c.bytes - placed_before) / (double)(exec_ns - e0);
		if (copy_ns > c0)
			pass_copy[p] = (double)(copy_bytes - cb0) / (double)(copy_ns - c0);
		placed_before = st.c.bytes;
	}
	/* medians over the passes after the first (warm-up: page faults, cold caches) */
	uint32_t first = passes > 1 ? 1 : 0;
	double med_exec = median(pass_exec + first, passes - first), med_copy = median(pass_copy + first, passes - first);

	uint64_t drops = 0;
	for (int r = 0; r < GI_DROP__COUNT; r++)
		drops += ctr.drops[r];
	double gbps = med_exec, copy_gbps = med_copy;
	printf("{\"format\": \"%s\", \"pipeline\": \"%s\", \"pcap_packets\": %u, \"passes\": %u, \"fed\": %llu, \"placed\": %llu, "
	       "\"placed_bytes\": %llu, \"drops\": %llu, \"duplicates\": %llu, \"late\": %llu, \"frames_complete\": %llu, "
	       "\"exec_ns\": %llu, \"exec_GBps_median\": %.3f, \"exec_Mpps\": %.3f, \"memcpy_bytes\": %llu, \"memcpy_ns\": %llu, "
	       "\"memcpy_GBps_median\": %.3f, \"ratio\": %.3f}\n",
	       fmt_name, pipeline,
	       ps.n, passes, (unsigned long long)fed, (unsigned long long)st.c.packets,
	       (unsigned long long)st.c.bytes, (unsigned long long)drops, (unsigned long long)st.c.duplicates,
	       (unsigned long long)st.c.late, (unsigned long long)st.c.frames[GI_FRAMES_COMPLETE],
	       (unsigned long long)exec_ns, gbps, exec_ns ? (double)fed * 1e3 / (double)exec_ns : 0, /* mean over all passes */
	       (unsigned long long)copy_bytes, (unsigned long long)copy_ns, copy_gbps,
	       copy_gbps > 0 ? gbps / copy_gbps : 0);
	free(pass_exec);
	free(pass_copy);
	free(ring);
	free(scratch);
	free(map);
	free(ring_mem);
	free(ps.mem);
	free(ps.off);
	free(ps.len);
	return st.c.packets ? 0 : 1;
}
