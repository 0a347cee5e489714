/*
 * fuzz_http.c — the metrics endpoint (daemon/http.c on libmicrohttpd) on
 * hostile requests.  Test-only.
 *
 * gi_http is started once, in-process, on a unix socket in a fresh
 * temporary directory (1 s idle timeout).  Each input is written as-is to
 * a new connection, the write side is shut, and the answer is read until
 * the server closes or 500 ms pass.  The request handling runs on MHD's
 * thread, so libFuzzer sees our handler's coverage (MHD itself is not
 * instrumented: this is closer to a guided random stress than to a
 * coverage-driven search of MHD's parser).
 *
 * Checked: whatever came back is an HTTP/1.x status line (or nothing), and
 * every 64 inputs (and on the first) a plain GET /metrics on a new
 * connection still gets 200 and the page — a hostile request never stops
 * the server from serving correct pages.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/http.h"
#include "fuzz.h"

#define FZ_PAGE "gi_fuzz_up 1\n"

static struct gi_http *server;
static char dir[64];
static struct sockaddr_un addr = { .sun_family = AF_UNIX };
static unsigned long inputs;

static int render(void *arg, struct gi_buf *out)
{
	(void)arg;
	return gi_buf_printf(out, "%s", FZ_PAGE);
}

static void stop_server(void)
{
	gi_http_stop(server);
	rmdir(dir);
}

static void start_server(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gi-fuzz-http-XXXXXX");
	FZ_CHECK(mkdtemp(dir) != NULL);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/s", dir);
	struct gi_http_conf conf = {
		.unix_path = addr.sun_path,
		.unix_mode = 0600,
		.render = render,
		.conn_timeout_s = 1,
		.max_conns = 256,
	};
	FZ_CHECK(gi_http_start(&conf, &server) == 0);
	atexit(stop_server);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Send `req`, shut the write side, read the answer (at most cap - 1 bytes kept). */
static size_t exchange(const uint8_t *req, size_t len, char *ans, size_t cap)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	FZ_CHECK(fd >= 0);
	FZ_CHECK(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	struct timeval tv = { 0, 500000 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server closed: it refused the request */
		off += (size_t)n;
	}
	/*
	 * MHD's epoll is edge-triggered: when the request and our FIN arrive
	 * in one edge, it reads the bytes and misses the EOF until the idle
	 * timeout.  Shut the write side only once it has read everything, so
	 * the FIN is an edge of its own (SIOCOUTQ on a unix socket: bytes
	 * the peer has not read yet).
	 */
	for (int i = 0; i < 2000; i++) {
		int queued = 0;
		if (ioctl(fd, SIOCOUTQ, &queued) < 0 || queued == 0)
			break;
		usleep(50);
	}
	shutdown(fd, SHUT_WR);

	size_t got = 0;
	uint64_t end = now_ms() + 500;
	for (;;) {
		uint64_t t = now_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (t >= end || poll(&p, 1, (int)(end - t)) <= 0)
			break;
		char tmp[4096];
		ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
		if (n <= 0)
			break;
		size_t keep = GI_MIN((size_t)n, cap - 1 - got);
		memcpy(ans + got, tmp, keep);
		got += keep;
	}
	ans[got] = '\0';
	close(fd);
	return got;
}

static void check_still_serving(void)
{
	static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char ans[1024];
	size_t n = exchange((const uint8_t *)get, sizeof(get) - 1, ans, sizeof(ans));
	FZ_CHECK(n > 0);
	FZ_CHECK(strncmp(ans, "HTTP/1.1 200 ", 13) == 0);
	FZ_CHECK(strstr(ans, "\r\n\r\n" FZ_PAGE) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char ans[256];

	if (!server)
		start_server();
	if (inputs++ % 64 == 0)
		check_still_serving();
	size_t n = exchange(data, size, ans, sizeof(ans));
	FZ_CHECK(n == 0 || strncmp(ans, "HTTP/1.", n < 7 ? n : 7) == 0);
	return 0;
}
