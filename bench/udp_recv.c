/*
 * udp_recv.c — the traditional copy path (Path 3) as a user would write it:
 * a kernel UDP socket, recvmmsg() into host buffers, then a memcpy of each
 * payload into a frame buffer at the place its udp_seq header names.  The
 * baseline that bench/path3_veth.sh compares gpuingestd with, in CPU
 * seconds per million packets.
 *
 *   udp_recv --bind ADDR:PORT --packets P --payload B [--batch M] [--idle-ms MS] [--max-s S]
 *
 * Receives until no packet came for --idle-ms after the first one (or --max-s
 * passed), then prints one JSON object: packets, placed, bad, frames begun,
 * payload bytes, and the process's user and system CPU seconds (getrusage).
 * Single-threaded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kernels/udp_seq.h"

#define FRAME_SLOTS 8u
#define BUF_BYTES 9216u

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char addr[64] = "127.0.0.1";
	int port = 5000;
	uint32_t ppf = 64, payload = 1024, batch = 64, idle_ms = 1000;
	double max_s = 60;
	static const struct option opts[] = {
		{ "bind", required_argument, NULL, 'a' },    { "packets", required_argument, NULL, 'p' },
		{ "payload", required_argument, NULL, 'b' }, { "batch", required_argument, NULL, 'm' },
		{ "idle-ms", required_argument, NULL, 'i' }, { "max-s", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'a': {
			char *colon = strrchr(optarg, ':');
			if (!colon || (size_t)(colon - optarg) >= sizeof(addr))
				return 2;
			memcpy(addr, optarg, (size_t)(colon - optarg));
			addr[colon - optarg] = 0;
			port = atoi(colon + 1);
			break;
		}
		case 'p': ppf = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'b': payload = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': batch = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'i': idle_ms = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 's': max_s = strtod(optarg, NULL); break;
		default: return 2;
		}
	}
	if (!ppf || !payload || payload > BUF_BYTES - GI_UDP_SEQ_HDR_LEN || !batch || batch > 1024) {
		fprintf(stderr, "usage: udp_recv --bind ADDR:PORT --packets P --payload B [--batch M] [--idle-ms MS] "
				"[--max-s S]\n");
		return 2;
	}

	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int rcvbuf = 64 << 20;
	struct timeval tmo = { .tv_sec = 0, .tv_usec = 100000 };
	if (fd < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "udp_recv: %s:%d: %s\n", addr, port, strerror(errno));
		return 1;
	}
	fprintf(stderr, "udp_recv: listening on %s:%d\n", addr, port);

	uint8_t *bufs = aligned_alloc(4096, (size_t)batch * BUF_BYTES);
	struct mmsghdr *msgs = calloc(batch, sizeof(*msgs));
	struct iovec *iov = calloc(batch, sizeof(*iov));
	for (uint32_t i = 0; i < batch; i++) {
		iov[i] = (struct iovec){ .iov_base = bufs + (size_t)i * BUF_BYTES, .iov_len = BUF_BYTES };
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	size_t frame_bytes = (size_t)ppf * payload;
	uint8_t *frames = aligned_alloc(4096, (FRAME_SLOTS * frame_bytes + 4095) & ~(size_t)4095);
	memset(frames, 0, FRAME_SLOTS * frame_bytes);
	uint64_t frame_of_slot[FRAME_SLOTS];
	memset(frame_of_slot, 0xff, sizeof(frame_of_slot));

	uint64_t packets = 0, placed = 0, bad = 0, bytes = 0, frames_begun = 0, syscalls = 0;
	double first = 0, last = 0, start = mono_s();
	for (;;) {
		int n = recvmmsg(fd, msgs, batch, MSG_WAITFORONE, NULL);
		syscalls++;
		double now = mono_s();
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				fprintf(stderr, "udp_recv: recvmmsg: %s\n", strerror(errno));
				break;
			}
			if ((packets && now - last > idle_ms / 1e3) || now - start > max_s)
				break;
			continue;
		}
		if (!packets)
			first = now;
		last = now;
		for (int i = 0; i < n; i++) {
			const uint8_t *p = iov[i].iov_base;
			struct gi_udp_seq h;
			packets++;
			if (gi_udp_seq_parse(p, msgs[i].msg_len, &h) != GI_UDP_SEQ_OK || h.packets_per_frame != ppf ||
			    h.payload_len != payload) {
				bad++;
				continue;
			}
			uint32_t s = h.frame % FRAME_SLOTS;
			if (frame_of_slot[s] != h.frame) {
				frame_of_slot[s] = h.frame;
				frames_begun++;
			}
			memcpy(frames + s * frame_bytes + (size_t)h.pkt_index * payload, p + GI_UDP_SEQ_HDR_LEN, payload);
			placed++;
			bytes += payload;
		}
		if (now - start > max_s)
			break;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"packets\": %llu, \"placed\": %llu, \"bad\": %llu, \"frames_begun\": %llu, \"bytes\": %llu, "
	       "\"syscalls\": %llu, \"active_s\": %.3f, \"utime_s\": %.3f, \"stime_s\": %.3f}\n",
	       (unsigned long long)packets, (unsigned long long)placed, (unsigned long long)bad,
	       (unsigned long long)frames_begun, (unsigned long long)bytes, (unsigned long long)syscalls, last - first,
	       tv_s(ru.ru_utime), tv_s(ru.ru_stime));
	close(fd);
	free(bufs);
	free(msgs);
	free(iov);
	free(frames);
	return 0;
}
