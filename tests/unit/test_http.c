/*
 * test_http.c — the metrics endpoint over a unix socket and loopback TCP,
 * driven by raw sockets: status codes, headers, hostile clients
 * (garbage, oversized headers, slowloris and the deadline for complete
 * request headers), 50 concurrent clients, socket file mode and removal,
 * and a clean EADDRINUSE that leaks nothing.
 *
 * Every socket operation has a timeout; the whole file runs in a few
 * seconds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/http.h"

#define BODY "test_metric 42\n"
#define IO_TIMEOUT_MS 2000

static char tmpdir[64];
static char sock_path[128];
static struct gi_http *srv;
static int srv_port;
static int renders;

static int test_render(void *arg, struct gi_buf *out)
{
	(void)arg;
	__atomic_fetch_add(&renders, 1, __ATOMIC_RELAXED);
	return gi_buf_printf(out, "%s", BODY);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
}

static int connect_tcp(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	set_timeouts(fd, IO_TIMEOUT_MS);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	set_timeouts(fd, IO_TIMEOUT_MS);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.*s", (int)sizeof(sa.sun_path) - 1, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

struct reply {
	char data[8192];
	size_t len;
	int closed; /* the server closed (EOF or reset) rather than our timeout expiring */
	int status;
};

/* A whole response (headers and Content-Length bytes of body) has arrived. */
static int complete(const struct reply *r)
{
	const char *end = strstr(r->data, "\r\n\r\n");
	const char *cl = strcasestr(r->data, "\r\nContent-Length:");
	if (!end || !cl || cl > end)
		return 0;
	return r->len >= (size_t)(end + 4 - r->data) + strtoul(cl + 17, NULL, 10);
}

/*
 * Send `req` while reading: a server that refuses an oversized request
 * answers before it has read it all, and the reply must not be lost.
 * Returns when the server closes, after `timeout_ms`, or with `one_reply`
 * as soon as one whole response arrived (keep-alive).
 */
static void exchange_ex(int fd, const char *req, size_t req_len, struct reply *r, int timeout_ms,
			int one_reply)
{
	size_t sent = 0;
	memset(r, 0, sizeof(*r));
	double deadline = now_s() + timeout_ms / 1000.0;
	while (now_s() < deadline && !(one_reply && complete(r))) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < req_len ? POLLOUT : 0) };
		if (poll(&p, 1, 50) <= 0)
			continue;
		if (p.revents & POLLIN || p.revents & (POLLHUP | POLLERR)) {
			ssize_t n = recv(fd, r->data + r->len, sizeof(r->data) - 1 - r->len,
					 MSG_DONTWAIT);
			if (n > 0) {
				r->len += (size_t)n;
				r->data[r->len] = '\0';
				sent = req_len; /* once answered, stop sending */
				continue;
			}
			if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				r->closed = 1;
				break;
			}
		}
		if (p.revents & POLLOUT && sent < req_len) {
			ssize_t n = send(fd, req + sent, req_len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0)
				sent += (size_t)n;
			else if (errno != EAGAIN && errno != EINTR)
				sent = req_len; /* reset while sending: read what came back */
		}
	}
	r->data[r->len] = '\0';
	if (sscanf(r->data, "HTTP/1.%*d %d", &r->status) != 1)
		r->status = 0;
}

static void exchange(int fd, const char *req, size_t req_len, struct reply *r)
{
	exchange_ex(fd, req, req_len, r, IO_TIMEOUT_MS, 0);
}

static void request(int fd, const char *req, struct reply *r)
{
	exchange(fd, req, strlen(req), r);
}

/* Value of header `name` in the reply, or NULL. */
static const char *header(struct reply *r, const char *name, char *val, size_t len)
{
	size_t n = strlen(name);
	for (char *p = strstr(r->data, "\r\n"); p && p[2] != '\r'; p = strstr(p + 2, "\r\n")) {
		if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
			const char *v = p + 3 + n;
			v += strspn(v, " ");
			snprintf(val, len, "%.*s", (int)strcspn(v, "\r"), v);
			return val;
		}
	}
	return NULL;
}

static const char *body(struct reply *r)
{
	char *p = strstr(r->data, "\r\n\r\n");
	return p ? p + 4 : "";
}

static void get_metrics(int fd, struct reply *r)
{
	request(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", r);
}

static void assert_metrics_page(struct reply *r)
{
	char v[128];
	assert_int_equal(r->status, 200);
	assert_non_null(header(r, "Content-Type", v, sizeof(v)));
	assert_string_equal(v, "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(body(r), BODY);
	assert_true(r->closed);
}

static int setup(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/gi_http_XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(sock_path, sizeof(sock_path), "%s/metrics.sock", tmpdir);
	struct gi_http_conf conf = {
		.unix_path = sock_path,
		.unix_mode = 0660,
		.listen = "127.0.0.1:0",
		.render = test_render,
		.conn_timeout_s = 2,
		.max_conns = 64,
	};
	assert_int_equal(gi_http_start(&conf, &srv), 0);
	srv_port = gi_http_tcp_port(srv);
	assert_true(srv_port > 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gi_http_stop(srv);
	srv = NULL;
	rmdir(tmpdir);
	return 0;
}

static void test_get_metrics(void **state)
{
	(void)state;
	struct reply r;
	struct gi_http_counters before, after;
	gi_http_counters(srv, &before);

	int fd = connect_tcp(srv_port);
	get_metrics(fd, &r);
	close(fd);
	assert_metrics_page(&r);

	fd = connect_unix(sock_path);
	get_metrics(fd, &r);
	close(fd);
	assert_metrics_page(&r);

	gi_http_counters(srv, &after);
	assert_int_equal(after.ok - before.ok, 2);
}

static void test_keep_alive(void **state)
{
	(void)state;
	struct reply r;
	const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	int fd = connect_tcp(srv_port);
	for (int i = 0; i < 3; i++) {
		exchange_ex(fd, req, strlen(req), &r, IO_TIMEOUT_MS, 1);
		assert_int_equal(r.status, 200);
		assert_string_equal(body(&r), BODY);
		assert_false(r.closed);
	}
	close(fd);
}

static void test_head(void **state)
{
	(void)state;
	struct reply r;
	char v[64];
	int fd = connect_tcp(srv_port);
	request(fd, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &r);
	close(fd);
	assert_int_equal(r.status, 200);
	assert_non_null(header(&r, "Content-Length", v, sizeof(v)));
	assert_int_equal(atoi(v), (int)strlen(BODY));
	assert_string_equal(body(&r), "");
}

static void test_not_found(void **state)
{
	(void)state;
	struct reply r;
	struct gi_http_counters before, after;
	gi_http_counters(srv, &before);
	int fd = connect_tcp(srv_port);
	request(fd, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &r);
	close(fd);
	assert_int_equal(r.status, 404);
	gi_http_counters(srv, &after);
	assert_int_equal(after.not_found - before.not_found, 1);
}

static void test_bad_method(void **state)
{
	(void)state;
	static const char *const reqs[] = {
		"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	};
	struct gi_http_counters before, after;
	gi_http_counters(srv, &before);
	for (unsigned i = 0; i < 2; i++) {
		struct reply r;
		char v[64];
		int fd = connect_unix(sock_path);
		request(fd, reqs[i], &r);
		close(fd);
		assert_int_equal(r.status, 405);
		assert_non_null(header(&r, "Allow", v, sizeof(v)));
		assert_string_equal(v, "GET, HEAD");
		assert_true(r.closed);
	}
	gi_http_counters(srv, &after);
	assert_int_equal(after.bad_method - before.bad_method, 2);
}

static void test_get_with_body(void **state)
{
	(void)state;
	struct reply r;
	struct gi_http_counters before, after;
	gi_http_counters(srv, &before);
	int fd = connect_tcp(srv_port);
	request(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd", &r);
	close(fd);
	assert_int_equal(r.status, 400);
	assert_true(r.closed);
	gi_http_counters(srv, &after);
	assert_int_equal(after.bad_request - before.bad_request, 1);
}

/*
 * libmicrohttpd 0.9.75 answers a malformed header line with 400, but a
 * request line it cannot parse gets no answer: the connection is simply
 * closed, at once ("junk") or, when the line starts with a NUL (read as an
 * empty line, which may precede a request), at the idle timeout.  Either
 * way the client gets no page and the connection ends.
 */
static void test_garbage(void **state)
{
	(void)state;
	static const char nul_junk[] = "\x00\xff junk\r\n\r\n";
	static const char *const bad_header =
		"GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n";
	struct reply r;
	struct gi_http_counters before, after;
	gi_http_counters(srv, &before);

	int fd = connect_tcp(srv_port);
	request(fd, bad_header, &r);
	close(fd);
	print_message("malformed header line: status %d\n", r.status);
	assert_int_equal(r.status, 400);
	assert_true(r.closed);

	fd = connect_tcp(srv_port);
	request(fd, "junk\r\n\r\n", &r);
	close(fd);
	print_message("junk request line: status %d\n", r.status);
	assert_true(r.status == 0 || (r.status >= 400 && r.status < 500));
	assert_true(r.closed);

	fd = connect_tcp(srv_port);
	double t0 = now_s();
	exchange_ex(fd, nul_junk, sizeof(nul_junk) - 1, &r, 4000, 0); /* idle timeout is 2 s */
	close(fd);
	print_message("NUL-led garbage: status %d, closed after %.1f s\n", r.status, now_s() - t0);
	assert_true(r.status == 0 || (r.status >= 400 && r.status < 500));
	assert_true(r.closed);

	gi_http_counters(srv, &after);
	assert_int_equal(after.bad_request - before.bad_request, 1);
	assert_int_equal(after.ok, before.ok);
}

static void test_oversized_header(void **state)
{
	(void)state;
	size_t big = 64 * 1024;
	char *req = malloc(big + 128);
	assert_non_null(req);
	int n = sprintf(req, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
	memset(req + n, 'a', big);
	strcpy(req + n + big, "\r\n\r\n");
	struct gi_http_counters before, after;
	gi_http_counters(srv, &before);

	for (int unix_sock = 0; unix_sock < 2; unix_sock++) {
		struct reply r;
		int fd = unix_sock ? connect_unix(sock_path) : connect_tcp(srv_port);
		request(fd, req, &r);
		close(fd);
		print_message("64 KiB header over %s: status %d\n", unix_sock ? "unix" : "tcp",
			      r.status);
		assert_true(r.status >= 400 && r.status < 500);
		assert_true(r.closed);
	}
	free(req);
	gi_http_counters(srv, &after);
	assert_int_equal(after.bad_request - before.bad_request, 2);
	assert_int_equal(after.ok, before.ok);
}

static void test_slowloris(void **state)
{
	(void)state;
	int slow[3];
	for (int i = 0; i < 3; i++) {
		slow[i] = i == 0 ? connect_unix(sock_path) : connect_tcp(srv_port);
		const char *part = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
		assert_int_equal(send(slow[i], part, strlen(part), MSG_NOSIGNAL),
				 (ssize_t)strlen(part));
	}

	struct reply r;
	double t0 = now_s();
	int fd = connect_tcp(srv_port);
	get_metrics(fd, &r);
	close(fd);
	double took = now_s() - t0;
	assert_metrics_page(&r);
	assert_true(took < 1.0);

	/* the stalled client is cut off by the idle timeout (2 s here) */
	char c;
	t0 = now_s();
	ssize_t n = recv(slow[1], &c, 1, 0); /* bounded by SO_RCVTIMEO */
	while (n < 0 && (errno == EAGAIN || errno == EINTR) && now_s() - t0 < 4.0)
		n = recv(slow[1], &c, 1, 0);
	assert_true(n == 0 || (n < 0 && errno == ECONNRESET));
	for (int i = 0; i < 3; i++)
		close(slow[i]);
}

static void test_concurrent(void **state)
{
	(void)state;
	enum { N = 50 };
	int fds[N];
	int before = __atomic_load_n(&renders, __ATOMIC_RELAXED);
	for (int i = 0; i < N; i++)
		fds[i] = i % 2 ? connect_unix(sock_path) : connect_tcp(srv_port);
	/* all connected before any request, then all requests before any read */
	const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	for (int i = 0; i < N; i++)
		assert_int_equal(send(fds[i], req, strlen(req), MSG_NOSIGNAL),
				 (ssize_t)strlen(req));
	for (int i = 0; i < N; i++) {
		struct reply r;
		exchange(fds[i], "", 0, &r);
		close(fds[i]);
		assert_metrics_page(&r);
	}
	assert_int_equal(__atomic_load_n(&renders, __ATOMIC_RELAXED) - before, N);
}

static void test_unix_socket_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/gi_http_XXXXXX";
	char path[128];
	struct stat st;
	struct gi_http *h = NULL;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/m.sock", dir);
	struct gi_http_conf conf = { .unix_path = path, .unix_mode = 0660, .render = test_render };

	/* a stale socket file (its listener is gone) is replaced */
	int stale = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(stale, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(stale);

	assert_int_equal(gi_http_start(&conf, &h), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(gi_http_tcp_port(h), 0);

	/* a live one belongs to someone else */
	struct gi_http *h2 = (struct gi_http *)&h2;
	assert_int_equal(gi_http_start(&conf, &h2), -EADDRINUSE);
	assert_null(h2);
	assert_int_equal(lstat(path, &st), 0);

	struct reply r;
	int fd = connect_unix(path);
	get_metrics(fd, &r);
	close(fd);
	assert_metrics_page(&r);

	gi_http_stop(h);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(errno, ENOENT);

	/* a file that is not a socket is never removed */
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(gi_http_start(&conf, &h), -EEXIST);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);
	rmdir(dir);
}

static void test_addr_in_use(void **state)
{
	(void)state;
	char dir[] = "/tmp/gi_http_XXXXXX";
	char path[128], listen[32];
	struct stat st;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/second.sock", dir);
	int fds0 = count_fds();

	struct gi_http *a = NULL, *b = NULL;
	struct gi_http_conf conf = { .listen = "127.0.0.1:0", .render = test_render };
	assert_int_equal(gi_http_start(&conf, &a), 0);
	int fds_a = count_fds();
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", gi_http_tcp_port(a));

	/* the unix socket starts first and must be undone */
	conf = (struct gi_http_conf){ .unix_path = path, .unix_mode = 0660, .listen = listen,
				      .render = test_render };
	assert_int_equal(gi_http_start(&conf, &b), -EADDRINUSE);
	assert_null(b);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(count_fds(), fds_a);

	gi_http_stop(a);
	assert_int_equal(count_fds(), fds0);
	rmdir(dir);
}

/* The server closed fd (EOF or reset), without waiting. */
static int server_closed(int fd)
{
	char c[256];
	ssize_t n = recv(fd, c, sizeof(c), MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/*
 * The deadline for complete request headers, which the idle timeout is
 * not (every byte restarts it): clients trickling a byte every 0.25 s are
 * closed 1 s after connect on both listeners, and 2 + 1 s after their last
 * answer on a kept-alive connection; a kept-alive connection that stays
 * silent is the idle timeout's (2 s), not counted as slow.
 */
static void test_headers_deadline(void **state)
{
	(void)state;
	enum { UNIX_TRICKLE, TCP_TRICKLE, KEPT_TRICKLE, KEPT_SILENT, N };
	static const char *const what[N] = { "unix trickler", "TCP trickler",
					     "kept-alive trickler", "kept-alive silent" };
	static const double earliest[N] = { 0.9, 0.9, 2.8, 1.5 };
	static const double latest[N] = { 2.5, 2.5, 4.5, 2.8 };
	const char *line = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	const char *get = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	char dir[] = "/tmp/gi_http_XXXXXX";
	char path[128];
	struct gi_http *h = NULL;
	struct gi_http_counters before, after;
	struct reply r;
	int fd[N];
	double since[N], closed_after[N];

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/d.sock", dir);
	struct gi_http_conf conf = { .unix_path = path, .unix_mode = 0660, .listen = "127.0.0.1:0",
				     .render = test_render, .conn_timeout_s = 2,
				     .headers_timeout_s = 1, .max_conns = 64 };
	assert_int_equal(gi_http_start(&conf, &h), 0);
	gi_http_counters(h, &before);

	for (int i = 0; i < N; i++) {
		fd[i] = i == UNIX_TRICKLE || i == KEPT_SILENT ? connect_unix(path)
							      : connect_tcp(gi_http_tcp_port(h));
		if (i == KEPT_TRICKLE || i == KEPT_SILENT) {
			exchange_ex(fd[i], get, strlen(get), &r, IO_TIMEOUT_MS, 1);
			assert_int_equal(r.status, 200);
			assert_false(r.closed);
		}
		if (i != KEPT_SILENT)
			assert_int_equal(send(fd[i], line, strlen(line), MSG_NOSIGNAL),
					 (ssize_t)strlen(line));
		since[i] = now_s();
		closed_after[i] = -1;
	}

	int open = N;
	double t0 = now_s(), last_byte = t0;
	while (open > 0 && now_s() - t0 < 6.0) {
		int trickle = now_s() - last_byte >= 0.25;
		if (trickle)
			last_byte = now_s();
		for (int i = 0; i < N; i++) {
			if (closed_after[i] >= 0)
				continue;
			int gone = server_closed(fd[i]);
			if (!gone && trickle && i != KEPT_SILENT)
				gone = send(fd[i], "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
				       errno != EAGAIN && errno != EWOULDBLOCK;
			if (gone) {
				closed_after[i] = now_s() - since[i];
				open--;
			}
		}
		struct timespec slice = { 0, 20 * 1000 * 1000 };
		nanosleep(&slice, NULL);
	}
	gi_http_counters(h, &after);
	for (int i = 0; i < N; i++) {
		print_message("%s: closed after %.2f s\n", what[i], closed_after[i]);
		assert_true(closed_after[i] >= earliest[i]);
		assert_true(closed_after[i] <= latest[i]);
		close(fd[i]);
	}
	assert_int_equal(after.slow_closed - before.slow_closed, 3);

	int fd_ok = connect_tcp(gi_http_tcp_port(h));
	get_metrics(fd_ok, &r);
	close(fd_ok);
	assert_metrics_page(&r);
	gi_http_stop(h);
	rmdir(dir);
}

static int failing_render(void *arg, struct gi_buf *out)
{
	(void)arg;
	gi_buf_printf(out, "half a page");
	return -ENOMEM;
}

static void test_render_failure(void **state)
{
	(void)state;
	struct gi_http *h = NULL;
	struct gi_http_counters c;
	struct gi_http_conf conf = { .listen = "127.0.0.1:0", .render = failing_render };
	assert_int_equal(gi_http_start(&conf, &h), 0);
	struct reply r;
	int fd = connect_tcp(gi_http_tcp_port(h));
	get_metrics(fd, &r);
	close(fd);
	assert_int_equal(r.status, 500);
	assert_null(strstr(r.data, "half a page"));
	gi_http_counters(h, &c);
	assert_int_equal(c.server_error, 1);
	assert_int_equal(c.ok, 0);
	gi_http_stop(h);
}

static void test_listen_addresses(void **state)
{
	(void)state;
	static const char *const bad[] = { "nonsense", "127.0.0.1", "[::1", "[::1]", "::1:80",
					   "127.0.0.1:http", "127.0.0.1:70000", ":9475" };
	struct gi_http *h = NULL;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gi_http_conf conf = { .listen = bad[i], .render = test_render };
		assert_int_equal(gi_http_start(&conf, &h), -EINVAL);
		assert_null(h);
	}
	struct gi_http_conf none = { .render = test_render };
	assert_int_equal(gi_http_start(&none, &h), -EINVAL);

	struct gi_http_conf conf = { .listen = "localhost:0", .render = test_render };
	assert_int_equal(gi_http_start(&conf, &h), 0);
	assert_true(gi_http_tcp_port(h) > 0);
	gi_http_stop(h);

	conf.listen = "[::1]:0";
	int rc = gi_http_start(&conf, &h);
	if (rc == 0) {
		assert_true(gi_http_tcp_port(h) > 0);
		gi_http_stop(h);
	} else {
		print_message("no IPv6 loopback here (%s)\n", strerror(-rc));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_metrics),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_bad_method),
		cmocka_unit_test(test_get_with_body),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_oversized_header),
		cmocka_unit_test(test_slowloris),
		cmocka_unit_test(test_concurrent),
	};
	const struct CMUnitTest standalone[] = {
		cmocka_unit_test(test_unix_socket_file),
		cmocka_unit_test(test_addr_in_use),
		cmocka_unit_test(test_render_failure),
		cmocka_unit_test(test_listen_addresses),
		cmocka_unit_test(test_headers_deadline),
	};
	int failed = cmocka_run_group_tests_name("served", tests, setup, teardown);
	failed += cmocka_run_group_tests_name("lifecycle", standalone, NULL, NULL);
	return failed;
}
