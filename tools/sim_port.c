/*
 * sim_port.c — packet building and the memif / pcap / udp ports of
 * gpuingest-sim (see sim_port.h).
 *
 * Single-threaded: the sim's main thread only.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <fcntl.h>
#include <netdb.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "kernels/udp_seq.h"
#include "kernels/format.h"
#include "sim_fmt_custom.h"
#include "sim_fmt_vita49.h"
#include "sim_fmt_rocev2.h"
#include "sim_port.h"

#define ETH_HDR 14u
#define IP_HDR 20u
#define UDP_HDR 8u
#define L2_HDRS (ETH_HDR + IP_HDR + UDP_HDR)
#define MAL_IP_EXTRA 64u /* the ip variant claims this many bytes more than the frame has */

struct gi_sim_port_state {
	/* memif */
	bool eal_up, dev_started;
	uint16_t port_id;
	struct rte_mempool *pool;
	struct rte_mbuf *burst[GI_SIM_BURST];
	/* every port: which stream each queued packet belongs to */
	uint16_t burst_stream[GI_SIM_BURST];
	uint32_t n;
	/* pcap */
	FILE *pcap;
	uint8_t *scratch;
	/* udp */
	int fd;
	struct sockaddr_storage *dst; /* per stream */
	socklen_t dst_len;
	uint8_t *bufs;
	struct iovec iov[GI_SIM_BURST];
	struct mmsghdr msgs[GI_SIM_BURST];
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_fatal(struct gi_sim *sim, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_fatal(struct gi_sim *sim, int code, const char *fmt, ...)
{
	va_list ap;
	if (sim->fatal)
		return;
	sim->fatal = code;
	va_start(ap, fmt);
	vsnprintf(sim->fatal_msg, sizeof(sim->fatal_msg), fmt, ap);
	va_end(ap);
}

/* ---- building ---- */

/*
 * Ones'-complement sum in native byte order (RFC 1071 §2(B)): store the
 * folded result with memcpy and the bytes come out right on either
 * endianness.  Blocks before the last must have even length.
 */
static uint64_t csum_add(uint64_t sum, const uint8_t *p, uint32_t len)
{
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		sum += (w & 0xffffffffu) + (w >> 32);
	}
	if (len >= 4) {
		uint32_t w;
		memcpy(&w, p, 4);
		sum += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t w;
		memcpy(&w, p, 2);
		sum += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		uint8_t b[2] = { p[0], 0 };
		uint16_t w;
		memcpy(&w, b, 2);
		sum += w;
	}
	return sum;
}

static uint16_t csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* gi_pattern_fill(), a word at a time (same bytes; tests compare the two). */
static void pattern_fill(uint8_t *dst, uint64_t seed, uint64_t off, uint32_t len)
{
	uint32_t i = 0;
	while (i < len && ((off + i) & 7) != 0) {
		dst[i] = gi_pattern_byte(seed, off + i);
		i++;
	}
	uint64_t w = seed + ((off + i) >> 3) * 0x9e3779b97f4a7c15ull;
	for (; i + 8 <= len; i += 8, w += 0x9e3779b97f4a7c15ull) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		uint64_t le = __builtin_bswap64(w);
#else
		uint64_t le = w;
#endif
		memcpy(dst + i, &le, 8);
	}
	for (; i < len; i++)
		dst[i] = gi_pattern_byte(seed, off + i);
}

uint32_t gi_sim_frame_cap(const struct gi_sim_cfg *c)
{
	/* c->payload: the largest stream's; hdr_max: the largest other format's overhead */
	return L2_HDRS + (c->hdr_max > GI_UDP_SEQ_HDR_LEN ? c->hdr_max : GI_UDP_SEQ_HDR_LEN) + c->payload;
}

uint32_t gi_sim_build(struct gi_sim *sim, const struct gi_sim_stream *st, const struct gi_sim_pkt *p, uint8_t *buf,
		      bool l2)
{
	const struct gi_sim_cfg *c = &sim->cfg;
	uint8_t *u = l2 ? buf + L2_HDRS : buf;
	uint32_t plen = gi_sim_plen(st, p->pkt_index);
	uint32_t ulen = GI_UDP_SEQ_HDR_LEN + plen;
	struct gi_udp_seq h = {
		.stream_id = st->id,
		.packets_per_frame = (uint16_t)st->ppf,
		.seq = p->seq,
		.frame = p->frame,
		.pkt_index = p->pkt_index,
		.payload_len = (uint16_t)plen,
		.flags = p->pkt_index == st->ppf - 1 ? GI_UDP_SEQ_FLAG_LAST : 0,
		.timestamp_ns = realtime_ns(),
	};

	sim->last_ts_ns = h.timestamp_ns;
	if (st->format == GI_FORMAT_CUSTOM) {
		ulen = gi_sim_custom_build(st, p, u, h.timestamp_ns);
		goto l3;
	}
	if (st->format == GI_FORMAT_VITA49) {
		ulen = gi_sim_vita49_build(sim, st, p, u);
		goto l3;
	}
	if (st->format == GI_FORMAT_ROCEV2) {
		ulen = gi_sim_rocev2_build(sim, st, p, u); /* the ICRC once IPv4/UDP are in place, below */
		goto l3;
	}
	switch (p->kind) {
	case GI_SIM_MAL_LENGTH:
		h.payload_len = (uint16_t)(plen + 1);
		break;
	case GI_SIM_MAL_INDEX:
		h.pkt_index = (uint16_t)st->ppf; /* ppf <= 65535, so this fits and is >= ppf */
		break;
	case GI_SIM_MAL_GEOMETRY:
		h.packets_per_frame = (uint16_t)(st->ppf < 65535 ? st->ppf + 1 : st->ppf - 1);
		if (h.pkt_index >= h.packets_per_frame)
			h.pkt_index = 0;
		break;
	default:
		break;
	}
	gi_udp_seq_write(u, &h);
	if (p->kind == GI_SIM_MAL_MAGIC)
		gi_put_be16(u, (uint16_t)~GI_UDP_SEQ_MAGIC);
	if (p->kind == GI_SIM_MAL_VERSION)
		u[2] = GI_UDP_SEQ_VERSION + 1;
	if (p->kind == GI_SIM_MAL_TRUNCATED)
		ulen = GI_UDP_SEQ_HDR_LEN / 2;
	else
		pattern_fill(u + GI_UDP_SEQ_HDR_LEN, gi_pattern_seed(st->id, p->frame),
			     (uint64_t)p->pkt_index * st->payload, plen);
l3: /* formats other than udp_seq join here with their UDP payload built */
	if (!l2)
		return ulen;

	uint8_t *ip = buf + ETH_HDR;
	uint8_t *udp = ip + IP_HDR;
	uint32_t tot = IP_HDR + UDP_HDR + ulen;
	uint16_t ck;

	memcpy(buf, c->dst_mac, 6);
	memcpy(buf + 6, c->src_mac, 6);
	gi_put_be16(buf + 12, GI_ETHERTYPE_IPV4);

	ip[0] = 0x45;
	ip[1] = 0;
	gi_put_be16(ip + 2, (uint16_t)(p->kind == GI_SIM_MAL_IP ? tot + MAL_IP_EXTRA : tot));
	gi_put_be16(ip + 4, sim->ip_id++);
	gi_put_be16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = GI_IPPROTO_UDP;
	gi_put_be16(ip + 10, 0);
	gi_put_be32(ip + 12, c->src_ip);
	gi_put_be32(ip + 16, c->dst_ip);
	/* correct even for the ip variant: only the length is wrong there */
	ck = csum_fold(csum_add(0, ip, IP_HDR));
	memcpy(ip + 10, &ck, 2);

	gi_put_be16(udp, c->src_port);
	gi_put_be16(udp + 2, st->dst_port);
	gi_put_be16(udp + 4, (uint16_t)(UDP_HDR + ulen));
	gi_put_be16(udp + 6, 0);
	uint8_t pseudo[12];
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = GI_IPPROTO_UDP;
	gi_put_be16(pseudo + 10, (uint16_t)(UDP_HDR + ulen));
	ck = csum_fold(csum_add(csum_add(0, pseudo, sizeof(pseudo)), udp, UDP_HDR + ulen));
	if (ck == 0)
		ck = 0xffff; /* 0 means "no checksum" in UDP over IPv4 */
	memcpy(udp + 6, &ck, 2);
	if (st->format == GI_FORMAT_ROCEV2)
		gi_sim_rocev2_finish(p, buf, ETH_HDR + tot, ETH_HDR);
	return ETH_HDR + tot;
}

/* ---- memif ---- */

static int first_allowed_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set))
				return i;
	return 0;
}

static int mkdir_parents(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

/* memif will not bind over an old socket file: remove it if nobody listens. */
static int prepare_socket_path(const char *path)
{
	struct stat sb;
	int rc = mkdir_parents(path);
	if (rc < 0) {
		fprintf(stderr, "gpuingest-sim: memif %s: cannot create its directory: %s\n", path, strerror(-rc));
		return GI_SIM_EXIT_PORT;
	}
	if (lstat(path, &sb) != 0)
		return 0;
	if (!S_ISSOCK(sb.st_mode)) {
		fprintf(stderr, "gpuingest-sim: memif %s: exists and is not a socket; remove it or pick another path\n",
			path);
		return GI_SIM_EXIT_PORT;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		fprintf(stderr, "gpuingest-sim: memif %s: another server is listening there\n", path);
		return GI_SIM_EXIT_PORT;
	}
	if (fd >= 0)
		close(fd);
	unlink(path);
	return 0;
}

static int memif_open(struct gi_sim *sim, struct gi_sim_port_state *ps, volatile sig_atomic_t *stop)
{
	const struct gi_sim_cfg *c = &sim->cfg;
	char lcore[16], prefix[64], vdev[256], *extra = NULL;
	char *argv[64];
	int argc = 0, rc;

	if (strchr(c->port_arg, ',')) {
		fprintf(stderr, "gpuingest-sim: memif %s: a comma in the socket path cannot be passed to DPDK\n",
			c->port_arg);
		return GI_SIM_EXIT_USAGE;
	}
	rc = prepare_socket_path(c->port_arg);
	if (rc)
		return rc;

	snprintf(lcore, sizeof(lcore), "%d", c->lcore >= 0 ? c->lcore : first_allowed_cpu());
	snprintf(prefix, sizeof(prefix), "gi-sim-%d", (int)getpid());
	snprintf(vdev, sizeof(vdev), "net_memif0,role=server,socket=%s,socket-abstract=no", c->port_arg);
	argv[argc++] = "gpuingest-sim";
	argv[argc++] = "--no-huge";
	argv[argc++] = "--no-pci";
	argv[argc++] = "-m";
	argv[argc++] = "256";
	argv[argc++] = "--file-prefix";
	argv[argc++] = prefix;
	argv[argc++] = "--no-shconf";
	argv[argc++] = "-l";
	argv[argc++] = lcore;
	argv[argc++] = "--vdev";
	argv[argc++] = vdev;
	if (c->eal_extra) {
		extra = strdup(c->eal_extra);
		for (char *save, *t = strtok_r(extra, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
			if (argc >= (int)(sizeof(argv) / sizeof(argv[0])) - 1) {
				fprintf(stderr, "gpuingest-sim: --eal: too many arguments\n");
				free(extra);
				return GI_SIM_EXIT_USAGE;
			}
			argv[argc++] = t;
		}
	}
	argv[argc] = NULL;

	/* EAL logs to stdout by default on Linux; stdout is for the JSON only */
	rte_openlog_stream(stderr);
	rc = rte_eal_init(argc, argv);
	free(extra); /* EAL keeps no pointers into argv after init */
	if (rc < 0) {
		fprintf(stderr, "gpuingest-sim: memif %s: EAL init failed: %s (check --eal and --lcore)\n", c->port_arg,
			rte_strerror(rte_errno));
		return GI_SIM_EXIT_PORT;
	}
	ps->eal_up = true;
	if (rte_eth_dev_get_port_by_name("net_memif0", &ps->port_id) != 0) {
		fprintf(stderr, "gpuingest-sim: memif %s: net_memif0 did not appear (is the memif PMD installed?)\n",
			c->port_arg);
		return GI_SIM_EXIT_PORT;
	}

	uint32_t room = RTE_ALIGN_CEIL(gi_sim_frame_cap(c), 64);
	if (room < 2048)
		room = 2048;
	uint32_t n_mbufs = (uint32_t)((96u << 20) / (room + 256u));
	n_mbufs = n_mbufs > 8191 ? 8191 : n_mbufs < 511 ? 511 : n_mbufs;
	ps->pool = rte_pktmbuf_pool_create("gi_sim", n_mbufs, 256, 0, (uint16_t)(RTE_PKTMBUF_HEADROOM + room),
					   (int)rte_socket_id());
	if (!ps->pool) {
		fprintf(stderr, "gpuingest-sim: memif %s: mbuf pool of %u x %u bytes: %s\n", c->port_arg, n_mbufs, room,
			rte_strerror(rte_errno));
		return GI_SIM_EXIT_PORT;
	}

	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	if ((rc = rte_eth_dev_configure(ps->port_id, 1, 1, &conf)) != 0 ||
	    (rc = rte_eth_rx_queue_setup(ps->port_id, 0, 1024, (unsigned)rte_socket_id(), NULL, ps->pool)) != 0 ||
	    (rc = rte_eth_tx_queue_setup(ps->port_id, 0, 1024, (unsigned)rte_socket_id(), NULL)) != 0 ||
	    (rc = rte_eth_dev_start(ps->port_id)) != 0) {
		fprintf(stderr, "gpuingest-sim: memif %s: port setup failed: %s\n", c->port_arg, rte_strerror(-rc));
		return GI_SIM_EXIT_PORT;
	}
	ps->dev_started = true;

	fprintf(stderr, "gpuingest-sim: memif %s: waiting up to %.0f s for the peer\n", c->port_arg, c->wait_link_s);
	double deadline = mono_s() + c->wait_link_s;
	for (;;) {
		struct rte_eth_link link;
		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(ps->port_id, &link);
		if (link.link_status == RTE_ETH_LINK_UP)
			break;
		if (*stop || mono_s() >= deadline) {
			fprintf(stderr, "gpuingest-sim: memif %s: no peer connected within %.0f s (is the daemon "
					"running with a role=client memif on this socket?)\n",
				c->port_arg, c->wait_link_s);
			return GI_SIM_EXIT_PORT;
		}
		usleep(10000);
	}
	fprintf(stderr, "gpuingest-sim: memif %s: peer connected\n", c->port_arg);
	return 0;
}

static void memif_flush(struct gi_sim *sim, struct gi_sim_port_state *ps)
{
	uint32_t done = 0, idle = 0;
	double last_progress = 0;

	while (done < ps->n) {
		uint16_t k = rte_eth_tx_burst(ps->port_id, 0, ps->burst + done, (uint16_t)(ps->n - done));
		for (uint32_t j = done; j < done + k; j++)
			sim->streams[ps->burst_stream[j]].sent++;
		done += k;
		if (k) {
			idle = 0;
			continue;
		}
		/* the peer is not draining the ring: wait, but not forever */
		double now = mono_s();
		if (idle++ == 0)
			last_progress = now;
		else if (now - last_progress > sim->cfg.stall_s)
			break;
		if (idle > 1000)
			usleep(20);
		else
			rte_pause();
	}
	if (done < ps->n) {
		for (uint32_t j = done; j < ps->n; j++) {
			sim->streams[ps->burst_stream[j]].tx_failed++;
			rte_pktmbuf_free(ps->burst[j]);
		}
		set_fatal(sim, GI_SIM_EXIT_STALL, "memif %s: TX made no progress for %.1f s, %u packets not sent "
			  "(peer gone or not polling)", sim->cfg.port_arg, sim->cfg.stall_s, ps->n - done);
	}
	ps->n = 0;
}

static void memif_put(struct gi_sim *sim, struct gi_sim_port_state *ps, struct gi_sim_stream *st,
		      const struct gi_sim_pkt *p)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(ps->pool);
	if (!m && ps->n) {
		memif_flush(sim, ps);
		m = rte_pktmbuf_alloc(ps->pool);
	}
	if (!m) {
		st->tx_failed++;
		set_fatal(sim, GI_SIM_EXIT_PORT, "memif %s: mbuf pool exhausted", sim->cfg.port_arg);
		return;
	}
	uint32_t len = gi_sim_build(sim, st, p, rte_pktmbuf_mtod(m, uint8_t *), true);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	ps->burst[ps->n] = m;
	ps->burst_stream[ps->n] = st->id;
	if (++ps->n == GI_SIM_BURST)
		memif_flush(sim, ps);
}

/* ---- pcap ---- */

static int pcap_open(struct gi_sim *sim, struct gi_sim_port_state *ps)
{
	const char *path = sim->cfg.port_arg;
	uint32_t hdr[6] = { 0xa1b2c3d4u, 2u | (4u << 16), 0, 0, 65535, 1 }; /* native order, as readers expect */

	ps->scratch = malloc(gi_sim_frame_cap(&sim->cfg) + MAL_IP_EXTRA);
	ps->pcap = fopen(path, "wb");
	if (!ps->scratch || !ps->pcap) {
		fprintf(stderr, "gpuingest-sim: pcap %s: cannot open for writing: %s\n", path, strerror(errno));
		return GI_SIM_EXIT_PORT;
	}
	setvbuf(ps->pcap, NULL, _IOFBF, 1 << 20);
	if (fwrite(hdr, sizeof(hdr), 1, ps->pcap) != 1) {
		fprintf(stderr, "gpuingest-sim: pcap %s: write failed: %s\n", path, strerror(errno));
		return GI_SIM_EXIT_PORT;
	}
	return 0;
}

static void pcap_put(struct gi_sim *sim, struct gi_sim_port_state *ps, struct gi_sim_stream *st,
		     const struct gi_sim_pkt *p)
{
	uint32_t len = gi_sim_build(sim, st, p, ps->scratch, true);
	uint32_t rec[4] = {
		(uint32_t)(sim->last_ts_ns / 1000000000ull),
		(uint32_t)(sim->last_ts_ns % 1000000000ull / 1000u),
		len,
		len,
	};
	if (fwrite(rec, sizeof(rec), 1, ps->pcap) != 1 || fwrite(ps->scratch, len, 1, ps->pcap) != 1) {
		st->tx_failed++;
		set_fatal(sim, GI_SIM_EXIT_PORT, "pcap %s: write failed: %s", sim->cfg.port_arg, strerror(errno));
		return;
	}
	st->sent++;
}

/* ---- udp ---- */

static int udp_open(struct gi_sim *sim, struct gi_sim_port_state *ps)
{
	const struct gi_sim_cfg *c = &sim->cfg;
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res = NULL;
	int rc = getaddrinfo(c->udp_host, NULL, &hints, &res);

	if (rc != 0 || !res) {
		fprintf(stderr, "gpuingest-sim: udp %s: cannot resolve: %s\n", c->udp_host, gai_strerror(rc));
		return GI_SIM_EXIT_PORT;
	}
	ps->fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ps->dst = calloc(c->streams, sizeof(*ps->dst));
	ps->bufs = malloc((size_t)GI_SIM_BURST * gi_sim_frame_cap(c));
	if (ps->fd < 0 || !ps->dst || !ps->bufs) {
		fprintf(stderr, "gpuingest-sim: udp %s: socket: %s\n", c->udp_host, strerror(errno));
		freeaddrinfo(res);
		return GI_SIM_EXIT_PORT;
	}
	int sndbuf = 4 << 20;
	setsockopt(ps->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	ps->dst_len = res->ai_addrlen;
	for (uint32_t i = 0; i < c->streams; i++) {
		memcpy(&ps->dst[i], res->ai_addr, res->ai_addrlen);
		uint16_t port = htons(sim->streams[i].dst_port); /* dst_port + i, or --dst-ports */
		if (res->ai_family == AF_INET6)
			((struct sockaddr_in6 *)&ps->dst[i])->sin6_port = port;
		else
			((struct sockaddr_in *)&ps->dst[i])->sin_port = port;
	}
	freeaddrinfo(res);
	return 0;
}

static void udp_flush(struct gi_sim *sim, struct gi_sim_port_state *ps)
{
	uint32_t done = 0;
	double last_progress = mono_s();
	int err = 0;

	while (done < ps->n) {
		int k = sendmmsg(ps->fd, ps->msgs + done, ps->n - done, 0);
		if (k > 0) {
			for (uint32_t j = done; j < done + (uint32_t)k; j++)
				sim->streams[ps->burst_stream[j]].sent++;
			done += (uint32_t)k;
			last_progress = mono_s();
			continue;
		}
		err = errno;
		if (err == ECONNREFUSED) {
			/* an ICMP error from an earlier datagram; this one was not sent, try again */
			continue;
		}
		if ((err == EINTR || err == ENOBUFS || err == EAGAIN) && mono_s() - last_progress <= sim->cfg.stall_s) {
			usleep(50);
			continue;
		}
		break;
	}
	if (done < ps->n) {
		for (uint32_t j = done; j < ps->n; j++)
			sim->streams[ps->burst_stream[j]].tx_failed++;
		set_fatal(sim, err == ENOBUFS || err == EAGAIN || err == EINTR ? GI_SIM_EXIT_STALL : GI_SIM_EXIT_PORT,
			  "udp %s: sendmmsg failed: %s, %u packets not sent", sim->cfg.udp_host, strerror(err),
			  ps->n - done);
	}
	ps->n = 0;
}

static void udp_put(struct gi_sim *sim, struct gi_sim_port_state *ps, struct gi_sim_stream *st,
		    const struct gi_sim_pkt *p)
{
	uint32_t i = ps->n;
	uint8_t *b = ps->bufs + (size_t)i * gi_sim_frame_cap(&sim->cfg);

	ps->iov[i].iov_base = b;
	ps->iov[i].iov_len = gi_sim_build(sim, st, p, b, false);
	memset(&ps->msgs[i], 0, sizeof(ps->msgs[i]));
	ps->msgs[i].msg_hdr.msg_name = &ps->dst[st->id];
	ps->msgs[i].msg_hdr.msg_namelen = ps->dst_len;
	ps->msgs[i].msg_hdr.msg_iov = &ps->iov[i];
	ps->msgs[i].msg_hdr.msg_iovlen = 1;
	ps->burst_stream[i] = st->id;
	if (++ps->n == GI_SIM_BURST)
		udp_flush(sim, ps);
}

/* ---- dispatch ---- */

int gi_sim_port_open(struct gi_sim *sim, volatile sig_atomic_t *stop)
{
	struct gi_sim_port_state *ps = calloc(1, sizeof(*ps));
	if (!ps) {
		fprintf(stderr, "gpuingest-sim: out of memory\n");
		return GI_SIM_EXIT_PORT;
	}
	ps->fd = -1;
	sim->port = ps;
	switch (sim->cfg.kind) {
	case GI_SIM_MEMIF: return memif_open(sim, ps, stop);
	case GI_SIM_PCAP: return pcap_open(sim, ps);
	case GI_SIM_UDP: return udp_open(sim, ps);
	}
	return GI_SIM_EXIT_USAGE;
}

void gi_sim_port_put(struct gi_sim *sim, struct gi_sim_stream *st, const struct gi_sim_pkt *p)
{
	switch (sim->cfg.kind) {
	case GI_SIM_MEMIF: memif_put(sim, sim->port, st, p); break;
	case GI_SIM_PCAP: pcap_put(sim, sim->port, st, p); break;
	case GI_SIM_UDP: udp_put(sim, sim->port, st, p); break;
	}
}

void gi_sim_port_flush(struct gi_sim *sim)
{
	struct gi_sim_port_state *ps = sim->port;

	switch (sim->cfg.kind) {
	case GI_SIM_MEMIF:
		memif_flush(sim, ps);
		break;
	case GI_SIM_PCAP:
		if (fflush(ps->pcap) != 0)
			set_fatal(sim, GI_SIM_EXIT_PORT, "pcap %s: write failed: %s", sim->cfg.port_arg, strerror(errno));
		break;
	case GI_SIM_UDP:
		udp_flush(sim, ps);
		break;
	}
}

void gi_sim_port_linger(struct gi_sim *sim)
{
	if (sim->cfg.kind == GI_SIM_MEMIF && sim->cfg.linger_ms)
		usleep(sim->cfg.linger_ms * 1000u);
}

void gi_sim_port_close(struct gi_sim *sim)
{
	struct gi_sim_port_state *ps = sim->port;
	if (!ps)
		return;
	if (ps->dev_started) {
		rte_eth_dev_stop(ps->port_id);
		rte_eth_dev_close(ps->port_id);
	}
	if (ps->pool)
		rte_mempool_free(ps->pool);
	if (ps->eal_up)
		rte_eal_cleanup();
	if (ps->pcap && fclose(ps->pcap) != 0)
		fprintf(stderr, "gpuingest-sim: pcap %s: close failed: %s\n", sim->cfg.port_arg, strerror(errno));
	if (ps->fd >= 0)
		close(ps->fd);
	free(ps->scratch);
	free(ps->dst);
	free(ps->bufs);
	free(ps);
	sim->port = NULL;
}
