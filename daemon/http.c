/*
 * http.c — the metrics endpoint on libmicrohttpd.
 *
 * One MHD daemon per listener (MHD takes a single listen socket), each with
 * its own epoll thread.  We create and bind the sockets ourselves so that
 * errors name the exact socket and errno, the unix socket gets its mode
 * before it accepts anyone, and a TCP host that resolves to several
 * addresses is bound to exactly one of them.
 *
 * Under socket activation systemd owns the listening sockets: we serve a
 * duplicate of each (MHD closes its copy when it stops), keep the original
 * for the life of the process (a stats restart on reload serves it again,
 * and connections that arrive meanwhile wait in its backlog), and never
 * chmod or unlink the socket file.
 *
 * Hostile clients are bounded by MHD: a per-connection idle timeout, a cap
 * on connections (and per address on TCP), and a small per-connection
 * memory pool so that oversized request headers are refused (MHD answers
 * 431/414/400 itself).  A request carrying a body is refused with 400 and
 * the connection closed.  The deadline for complete request headers is
 * ours (a sweeper thread, see "Slow clients" below): MHD has none.
 *
 * Main thread: gi_http_start/gi_http_stop.  The access handler and the
 * render callback run on the MHD threads, the slow-client sweep on its own
 * thread; counters are relaxed atomics.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "daemon/http.h"
#include "pmd_glue/log.h"

#define GI_HTTP_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define GI_HTTP_MEMORY_LIMIT (16 * 1024) /* per connection: request line + headers */
#define GI_HTTP_BACKLOG 128
#define GI_HTTP_IDLE_TIMEOUT_S 10
#define GI_HTTP_HEADERS_DEADLINE_S 5 /* from connect to complete request headers */
#define GI_HTTP_SWEEP_NS 200000000ull
#define GI_HTTP_SLOW_LOG_NS 10000000000ull /* at most one slow-client notice per 10 s */

/*
 * Slow clients.  libmicrohttpd's connection timeout is an idle timeout
 * (0.9.75 restarts it on every recv that returns data), so a client that
 * trickles one byte every few seconds never reaches it and holds its
 * connection slot forever (slowloris); MHD has no deadline of its own for
 * the request headers.  Every connection is therefore tracked from
 * connect, and the sweeper thread shuts down the socket of one whose
 * request headers are not complete by its due time: the headers deadline
 * after connect, or the idle timeout plus the headers deadline after the
 * previous answer on a kept-alive connection (one that stays silent is the
 * idle timeout's, closed quietly as before; Prometheus keeps its
 * connection between scrapes).  MHD then sees end of file and closes the
 * connection itself.  The list is guarded by conn_lock, and MHD's "closed"
 * notification (before it closes the descriptor, on every path in 0.9.75)
 * removes an entry under it, so the sweeper never shuts down a descriptor
 * number reused by something else.  On TCP, one address may hold at most
 * three quarters of the connection limit, so one slow host cannot take
 * every slot even for the deadline: a scraper from another address always
 * finds one.  (Many slow hosts together still can, for up to the deadline;
 * the unix socket, a listener of its own, keeps serving.)
 */
struct gi_http_conn {
	struct gi_http_conn *prev, *next;
	int fd;
	uint64_t due_ns; /* request headers due by (CLOCK_MONOTONIC), 0 = none awaited; atomic */
};

struct gi_http {
	gi_http_render_fn render;
	void *render_arg;
	pthread_mutex_t render_lock; /* the unix and TCP threads take turns */
	struct MHD_Daemon *unix_mhd;
	struct MHD_Daemon *tcp_mhd;
	int tcp_port;
	int unix_passed; /* the unix listener is systemd's: leave its file alone */
	char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t unix_dev; /* to unlink only the socket file we created */
	ino_t unix_ino;
	uint64_t ok;
	uint64_t not_found;
	uint64_t bad_method;
	uint64_t bad_request;
	uint64_t server_error;
	uint64_t slow_closed;
	pthread_mutex_t conn_lock;
	struct gi_http_conn conns;   /* list head */
	pthread_t sweeper;
	int sweeper_started;
	int sweeper_quit;            /* atomic */
	unsigned headers_deadline_s;
	uint64_t first_due_ns;       /* after connect: the headers deadline */
	uint64_t next_due_ns;        /* after an answer: the idle timeout plus the headers deadline */
};

/*
 * Request states kept in MHD's per-request context.  The URI logger marks
 * a request "seen" as soon as its request line parses; the handler's first
 * call (headers complete) marks it "headers", the answer marks it
 * "answered".  A request that ends unanswered was refused by MHD (headers
 * too large, malformed header line, no Host) or abandoned by its client
 * (cut off by the idle timeout), and counts as bad_request.
 */
static char req_seen;
static char req_headers;
static char req_answered;

static void count(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	if (gi_log_get_level() < GI_LOG_DEBUG)
		return;
	char msg[256];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	GI_DEBUG("http: libmicrohttpd: %s", msg);
}

static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	(void)uri;
	(void)c;
	return &req_seen;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct gi_http_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* A connection opens or closes (MHD's threads): the slow-client list. */
static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct gi_http *h = cls;
	struct gi_http_conn *t = *socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		t = calloc(1, sizeof(*t));
		if (!t || !ci) {
			free(t); /* untracked: only the idle timeout applies to it */
			return;
		}
		t->fd = ci->connect_fd;
		t->due_ns = mono_ns() + h->first_due_ns;
		pthread_mutex_lock(&h->conn_lock);
		t->next = h->conns.next;
		t->prev = &h->conns;
		h->conns.next->prev = t;
		h->conns.next = t;
		pthread_mutex_unlock(&h->conn_lock);
		*socket_context = t;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && t) {
		pthread_mutex_lock(&h->conn_lock);
		t->prev->next = t->next;
		t->next->prev = t->prev;
		pthread_mutex_unlock(&h->conn_lock);
		free(t);
		*socket_context = NULL;
	}
}

static void log_slow_closed(const struct gi_http *h, uint64_t n)
{
	gi_log(GI_LOG_NOTICE, "http: closed %" PRIu64 " connection%s that sent no complete request within %u s",
	       n, n == 1 ? "" : "s", h->headers_deadline_s);
}

/*
 * Shut down connections whose request headers are overdue; MHD closes them.
 * One notice for a burst (logged once a sweep closes none), and under a
 * sustained attack one per GI_HTTP_SLOW_LOG_NS with the count since the
 * last, so that an attacker cannot flood the log.
 */
static void *sweeper_main(void *arg)
{
	struct gi_http *h = arg;
	struct timespec slice = { 0, (long)GI_HTTP_SWEEP_NS };
	uint64_t unlogged = 0, unlogged_since = 0, logged_at = 0;
	int logged = 0;
	while (!__atomic_load_n(&h->sweeper_quit, __ATOMIC_ACQUIRE)) {
		unsigned closed = 0;
		uint64_t now = mono_ns();
		pthread_mutex_lock(&h->conn_lock);
		for (struct gi_http_conn *t = h->conns.next; t != &h->conns; t = t->next) {
			uint64_t due = __atomic_load_n(&t->due_ns, __ATOMIC_ACQUIRE);
			if (!due || now < due)
				continue;
			__atomic_store_n(&t->due_ns, 0, __ATOMIC_RELEASE);
			shutdown(t->fd, SHUT_RDWR);
			closed++;
		}
		pthread_mutex_unlock(&h->conn_lock);
		if (closed) {
			__atomic_fetch_add(&h->slow_closed, closed, __ATOMIC_RELAXED);
			if (!unlogged)
				unlogged_since = now;
			unlogged += closed;
		}
		if (unlogged && (!logged || now - logged_at >= GI_HTTP_SLOW_LOG_NS) &&
		    (!closed || now - unlogged_since >= GI_HTTP_SLOW_LOG_NS / 10)) {
			log_slow_closed(h, unlogged);
			unlogged = 0;
			logged = 1;
			logged_at = now;
		}
		nanosleep(&slice, NULL);
	}
	if (unlogged)
		log_slow_closed(h, unlogged);
	return NULL;
}

static void request_done(void *cls, struct MHD_Connection *c, void **req,
			 enum MHD_RequestTerminationCode toe)
{
	struct gi_http *h = cls;
	(void)toe;
	if (*req == &req_seen || *req == &req_headers)
		count(&h->bad_request);
	*req = NULL;
	struct gi_http_conn *t = conn_of(c);
	if (t) /* keep-alive: silence is the idle timeout's, then the next headers are due */
		__atomic_store_n(&t->due_ns, mono_ns() + h->next_due_ns, __ATOMIC_RELEASE);
}

static enum MHD_Result queue_static(struct MHD_Connection *c, unsigned status, const char *body,
				    const char *allow, int must_close)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
						     "text/plain; charset=utf-8");
	if (ok == MHD_YES && allow)
		ok = MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	if (ok == MHD_YES && must_close)
		ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (ok == MHD_YES)
		ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static int has_body(struct MHD_Connection *c)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (len && strcmp(len, "0") != 0)
		return 1;
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

static enum MHD_Result serve_metrics(struct gi_http *h, struct MHD_Connection *c)
{
	struct gi_buf b = { 0 };
	pthread_mutex_lock(&h->render_lock);
	int rc = h->render(h->render_arg, &b);
	pthread_mutex_unlock(&h->render_lock);
	if (rc < 0) {
		gi_buf_free(&b);
		count(&h->server_error);
		return queue_static(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "metrics rendering failed\n", NULL, 0);
	}
	struct MHD_Response *r =
		MHD_create_response_from_buffer_with_free_callback(b.len, b.data, free);
	if (!r) {
		gi_buf_free(&b);
		return MHD_NO;
	}
	enum MHD_Result ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
						     GI_HTTP_CONTENT_TYPE);
	if (ok == MHD_YES)
		ok = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	if (ok == MHD_YES)
		count(&h->ok);
	return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req)
{
	struct gi_http *h = cls;
	(void)version;
	(void)upload;
	(void)upload_size;

	int get_or_head = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
		     strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;

	/*
	 * First call, headers complete.  MHD closes the connection after a
	 * response queued now, before the request is complete: what we want
	 * for a request with a body (we never read it), not for the rest,
	 * which are answered on the second call to keep the connection alive.
	 */
	if (*req != &req_headers) {
		struct gi_http_conn *t = conn_of(c);
		if (t) /* the headers are in: no deadline until the answer is out */
			__atomic_store_n(&t->due_ns, 0, __ATOMIC_RELEASE);
		if (!has_body(c)) {
			*req = &req_headers;
			return MHD_YES;
		}
		*req = &req_answered;
		if (!get_or_head) {
			count(&h->bad_method);
			return queue_static(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n",
					    "GET, HEAD", 1);
		}
		count(&h->bad_request);
		return queue_static(c, MHD_HTTP_BAD_REQUEST, "a metrics request has no body\n",
				    NULL, 1);
	}

	*req = &req_answered;
	if (!get_or_head) {
		count(&h->bad_method);
		return queue_static(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n",
				    "GET, HEAD", 0);
	}
	if (strcmp(url, "/metrics") != 0) {
		count(&h->not_found);
		return queue_static(c, MHD_HTTP_NOT_FOUND, "not found; metrics are at /metrics\n",
				    NULL, 0);
	}
	return serve_metrics(h, c);
}

static struct MHD_Daemon *start_mhd(struct gi_http *h, const struct gi_http_conf *conf, int fd)
{
	unsigned timeout = conf->conn_timeout_s ? conf->conn_timeout_s : GI_HTTP_IDLE_TIMEOUT_S;
	unsigned max_conns = conf->max_conns ? conf->max_conns : 64;
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	/* per-address limits mean nothing on a unix socket (every peer is "the same") */
	int inet = getsockname(fd, (struct sockaddr *)&sa, &sl) == 0 && sa.ss_family != AF_UNIX;
	errno = 0; /* MHD does not always set it on failure */
	return MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL,
		handle, h,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_TIMEOUT, timeout,
		MHD_OPTION_CONNECTION_LIMIT, max_conns,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, inet ? max_conns - max_conns / 4 : 0u,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)GI_HTTP_MEMORY_LIMIT,
		MHD_OPTION_STRICT_FOR_CLIENT, 1,
		MHD_OPTION_URI_LOG_CALLBACK, uri_log, NULL,
		MHD_OPTION_NOTIFY_COMPLETED, request_done, h,
		MHD_OPTION_NOTIFY_CONNECTION, conn_notify, h,
		MHD_OPTION_END);
}

/*
 * MHD owns the listen socket once it started (MHD_stop_daemon closes it).
 * Whether a failed start closed it depends on where it failed, so close it
 * only if the descriptor still is the same socket: a socket's inode is
 * unique while it is open, so a number reused meanwhile is left alone.
 */
static struct MHD_Daemon *start_mhd_on(struct gi_http *h, const struct gi_http_conf *conf, int fd)
{
	struct stat before, after;
	int have = fstat(fd, &before) == 0;
	struct MHD_Daemon *d = start_mhd(h, conf, fd);
	if (d)
		return d;
	int err = errno ? errno : EIO;
	if (have && fstat(fd, &after) == 0 && after.st_dev == before.st_dev &&
	    after.st_ino == before.st_ino)
		close(fd);
	errno = err;
	return NULL;
}

/* ---- socket activation: http_activation.c; serving a passed socket ---- */

/* MHD closes the descriptor it serves: give it a duplicate of systemd's. */
static int start_passed(struct gi_http *h, const struct gi_http_conf *conf, int fd,
			struct MHD_Daemon **out, const char *what)
{
	int flags = fcntl(fd, F_GETFL);
	int dup_fd = -1;
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    (dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, GI_LISTEN_FDS_START)) < 0) {
		int err = errno;
		GI_ERR("http: %s passed by systemd (fd %d): %s", what, fd, strerror(err));
		return -err;
	}
	*out = start_mhd_on(h, conf, dup_fd);
	if (!*out) {
		int err = errno;
		GI_ERR("http: %s passed by systemd (fd %d): starting libmicrohttpd: %s", what, fd,
		       strerror(err));
		return -err;
	}
	return 0;
}

/* ---- sockets we bind ----------------------------------------------------- */

static int start_unix(struct gi_http *h, const struct gi_http_conf *conf)
{
	const char *path = conf->unix_path;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		GI_ERR("http: unix socket %s: path too long (max %zu bytes)", path,
		       sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);

	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = errno;
		GI_ERR("http: unix socket %s: socket: %s", path, strerror(err));
		return -err;
	}

	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			GI_ERR("http: unix socket %s: exists and is not a socket; not replacing it",
			       path);
			close(fd);
			return -EEXIST;
		}
		/* A socket someone still accepts on belongs to a running instance. */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int live = probe >= 0 && (connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
					  errno == EAGAIN);
		if (probe >= 0)
			close(probe);
		if (live) {
			GI_ERR("http: unix socket %s: %s (another process is listening on it)",
			       path, strerror(EADDRINUSE));
			close(fd);
			return -EADDRINUSE;
		}
		if (unlink(path) < 0 && errno != ENOENT) {
			err = errno;
			GI_ERR("http: unix socket %s: removing stale socket: %s", path,
			       strerror(err));
			close(fd);
			return -err;
		}
	}

	const char *step = "bind";
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	step = "chmod";
	if (chmod(path, conf->unix_mode) < 0)
		goto fail_unlink;
	step = "stat";
	if (lstat(path, &st) < 0)
		goto fail_unlink;
	step = "listen";
	if (listen(fd, GI_HTTP_BACKLOG) < 0)
		goto fail_unlink;

	h->unix_mhd = start_mhd_on(h, conf, fd);
	if (!h->unix_mhd) {
		step = "starting libmicrohttpd";
		err = errno;
		unlink(path);
		GI_ERR("http: unix socket %s: %s: %s", path, step, strerror(err));
		return -err;
	}
	memcpy(h->unix_path, path, strlen(path) + 1);
	h->unix_dev = st.st_dev;
	h->unix_ino = st.st_ino;
	return 0;

fail_unlink:
	err = errno;
	unlink(path);
	errno = err;
fail:
	err = errno;
	close(fd);
	GI_ERR("http: unix socket %s: %s: %s", path, step, strerror(err));
	return -err;
}

/* "host:port", "[v6]:port" → host and port strings inside `tmp`. */
static int split_listen(const char *listen, char *tmp, size_t tmp_len, const char **host,
			const char **port)
{
	if (strlen(listen) >= tmp_len)
		return -EINVAL;
	strcpy(tmp, listen);
	char *colon;
	if (tmp[0] == '[') {
		char *end = strchr(tmp, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		*end = '\0';
		*host = tmp + 1;
		colon = end + 1;
	} else {
		colon = strrchr(tmp, ':');
		if (!colon || strchr(tmp, ':') != colon)
			return -EINVAL;
		*colon = '\0';
		*host = tmp;
	}
	*port = colon + 1;
	if (!**host || !**port || strspn(*port, "0123456789") != strlen(*port) ||
	    strtoul(*port, NULL, 10) > 65535)
		return -EINVAL;
	return 0;
}

static int bind_tcp(const struct addrinfo *ai, int *out_fd, const char **step)
{
	int one = 1;
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			ai->ai_protocol);
	*step = "socket";
	if (fd < 0)
		return -errno;
	/* SO_REUSEADDR only skips TIME_WAIT; a second listener still gets EADDRINUSE. */
	*step = "setsockopt";
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (ai->ai_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	*step = "bind";
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0)
		goto fail;
	*step = "listen";
	if (listen(fd, GI_HTTP_BACKLOG) < 0)
		goto fail;
	*out_fd = fd;
	return 0;
fail:;
	int err = errno;
	close(fd);
	return -err;
}

static int local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

static int start_tcp(struct gi_http *h, const struct gi_http_conf *conf)
{
	char tmp[300];
	const char *host, *port, *step = "resolve";
	if (split_listen(conf->listen, tmp, sizeof(tmp), &host, &port) < 0) {
		GI_ERR("http: listen address '%s': expected host:port or [ipv6]:port",
		       conf->listen);
		return -EINVAL;
	}

	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		int err = rc == EAI_SYSTEM ? errno : EADDRNOTAVAIL;
		GI_ERR("http: listen address %s: cannot resolve '%s': %s", conf->listen, host,
		       rc == EAI_SYSTEM ? strerror(err) : gai_strerror(rc));
		return -err;
	}

	/*
	 * One listener, on the first address: "localhost" is not two.  The
	 * next address is tried only when this host lacks the first one's
	 * family or address, never to dodge a port in use.
	 */
	int fd = -1, err = -EADDRNOTAVAIL;
	for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		err = bind_tcp(ai, &fd, &step);
		if (err != -EADDRNOTAVAIL && err != -EAFNOSUPPORT)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		GI_ERR("http: listen address %s: %s: %s", conf->listen, step, strerror(-err));
		return err;
	}

	h->tcp_port = local_port(fd);
	h->tcp_mhd = start_mhd_on(h, conf, fd);
	if (!h->tcp_mhd) {
		err = errno;
		GI_ERR("http: listen address %s: starting libmicrohttpd: %s", conf->listen,
		       strerror(err));
		return -err;
	}
	return 0;
}

int gi_http_start(const struct gi_http_conf *conf, struct gi_http **out)
{
	*out = NULL;
	int unix_passed = conf->unix_fd > 0, tcp_passed = conf->tcp_fd > 0;
	int has_unix = unix_passed || (conf->unix_path && conf->unix_path[0]);
	int has_tcp = tcp_passed || (conf->listen && conf->listen[0]);
	if (!conf->render || (!has_unix && !has_tcp)) {
		GI_ERR("http: nothing to serve (%s)",
		       conf->render ? "neither a unix socket nor a listen address configured"
				    : "no render callback");
		return -EINVAL;
	}

	struct gi_http *h = calloc(1, sizeof(*h));
	if (!h) {
		GI_ERR("http: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	h->render = conf->render;
	h->render_arg = conf->render_arg;
	pthread_mutex_init(&h->render_lock, NULL);
	pthread_mutex_init(&h->conn_lock, NULL);
	h->conns.next = h->conns.prev = &h->conns;
	unsigned idle_s = conf->conn_timeout_s ? conf->conn_timeout_s : GI_HTTP_IDLE_TIMEOUT_S;
	h->headers_deadline_s = conf->headers_timeout_s ? conf->headers_timeout_s : GI_HTTP_HEADERS_DEADLINE_S;
	h->first_due_ns = (uint64_t)h->headers_deadline_s * 1000000000ull;
	h->next_due_ns = (uint64_t)(idle_s + h->headers_deadline_s) * 1000000000ull;
	if (pthread_create(&h->sweeper, NULL, sweeper_main, h) == 0)
		h->sweeper_started = 1;
	else
		gi_log(GI_LOG_WARNING, "http: no slow-client sweeper thread: only the %u s idle timeout applies",
		       idle_s);

	int rc = 0;
	if (unix_passed) {
		h->unix_passed = 1;
		rc = start_passed(h, conf, conf->unix_fd, &h->unix_mhd, "unix socket");
	} else if (has_unix) {
		rc = start_unix(h, conf);
	}
	if (rc == 0 && tcp_passed) {
		h->tcp_port = local_port(conf->tcp_fd);
		rc = start_passed(h, conf, conf->tcp_fd, &h->tcp_mhd, "TCP listener");
	} else if (rc == 0 && has_tcp) {
		rc = start_tcp(h, conf);
	}
	if (rc < 0) {
		gi_http_stop(h);
		return rc;
	}
	*out = h;
	return 0;
}

void gi_http_stop(struct gi_http *h)
{
	if (!h)
		return;
	if (h->tcp_mhd)
		MHD_stop_daemon(h->tcp_mhd);
	if (h->unix_mhd) {
		MHD_stop_daemon(h->unix_mhd);
		/* Leave systemd's and a newer instance's socket alone. */
		struct stat st;
		if (!h->unix_passed && lstat(h->unix_path, &st) == 0 && st.st_dev == h->unix_dev &&
		    st.st_ino == h->unix_ino)
			unlink(h->unix_path);
	}
	/* every connection was closed (and unlisted) by MHD_stop_daemon */
	if (h->sweeper_started) {
		__atomic_store_n(&h->sweeper_quit, 1, __ATOMIC_RELEASE);
		pthread_join(h->sweeper, NULL);
	}
	pthread_mutex_destroy(&h->conn_lock);
	pthread_mutex_destroy(&h->render_lock);
	free(h);
}

int gi_http_tcp_port(const struct gi_http *h)
{
	return h && h->tcp_mhd ? h->tcp_port : 0;
}

void gi_http_counters(const struct gi_http *h, struct gi_http_counters *out)
{
	out->ok = __atomic_load_n(&h->ok, __ATOMIC_RELAXED);
	out->not_found = __atomic_load_n(&h->not_found, __ATOMIC_RELAXED);
	out->bad_method = __atomic_load_n(&h->bad_method, __ATOMIC_RELAXED);
	out->bad_request = __atomic_load_n(&h->bad_request, __ATOMIC_RELAXED);
	out->server_error = __atomic_load_n(&h->server_error, __ATOMIC_RELAXED);
	out->slow_closed = __atomic_load_n(&h->slow_closed, __ATOMIC_RELAXED);
}
