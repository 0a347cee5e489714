/*
 * http.h — the metrics endpoint: HTTP/1.1 GET /metrics over a unix socket
 * and/or a TCP address, served by libmicrohttpd on its own threads (never
 * an rx lcore, never the executor).
 *
 * A slow, stuck or hostile client cannot stall the data path (which never
 * waits on this module) nor the other clients (per-connection idle timeout,
 * a deadline for complete request headers against clients that trickle
 * bytes, connection limits in all and per address on TCP, bounded request
 * memory).  Other paths answer 404, other methods 405, malformed or
 * oversized requests 400 (or the more precise 4xx libmicrohttpd picks) and
 * the connection is closed.  (A request line libmicrohttpd 0.9.75 cannot
 * parse gets no answer at all: the connection is closed at once, or at the
 * idle timeout when the line starts with NUL.)
 *
 * The listeners are sockets we bind, or the ones systemd passes (socket
 * activation: the endpoint exists before the daemon is ready and across
 * restarts).
 *
 * Main thread: start/stop.  The render callback runs on the server thread
 * (one per listener when both are configured; calls never overlap).
 */
#ifndef GI_HTTP_H
#define GI_HTTP_H

#include "metrics.h"

/* Fills `out` with the current exposition; called on the server thread. */
typedef int (*gi_http_render_fn)(void *arg, struct gi_buf *out);

struct gi_http_conf {
	const char *unix_path;   /* NULL or "" = no unix socket; an existing socket file is replaced */
	unsigned unix_mode;      /* e.g. 0660 */
	const char *listen;      /* NULL or "" = no TCP; "host:port", "[v6]:port" */
	gi_http_render_fn render;
	void *render_arg;
	unsigned conn_timeout_s; /* idle connection timeout, default 10 */
	unsigned headers_timeout_s; /* complete request headers within this from connect (within
				     * conn_timeout_s + this from the last answer on a kept-alive
				     * connection), else it is closed (slow clients), default 5 */
	unsigned max_conns;      /* default 64; on TCP at most 3/4 of it from one address */
	/*
	 * Listening sockets handed over by the service manager (socket
	 * activation, see gi_http_activation), served instead of binding
	 * unix_path / listen.  > 0: use it; 0 or -1: none (a zeroed conf
	 * passes none: systemd's descriptors start at 3).  Never closed nor
	 * unlinked here: the socket file is systemd's, and a stats restart
	 * (reload) serves the same descriptor again.
	 */
	int unix_fd;
	int tcp_fd;
};

struct gi_http;

/*
 * Sockets passed by systemd (LISTEN_PID/LISTEN_FDS, e.g. gpuingest.socket):
 * taken from the environment on the first call (which unsets it) and kept
 * open for the life of the process.  Sets conf->unix_fd to the passed
 * AF_UNIX stream listener bound to conf->unix_path (when none is, the first
 * one, with a warning naming both paths) and conf->tcp_fd to the first
 * passed AF_INET/AF_INET6 stream listener; -1 where none was passed.  Other
 * descriptors are logged and left alone.  Returns how many of the two were
 * set.  Main thread.
 */
int gi_http_activation(struct gi_http_conf *conf);
#define GI_LISTEN_FDS_START 3 /* SD_LISTEN_FDS_START: passed descriptors begin here */

/* Returns 0 or -errno, logging one line that names the socket. */
int gi_http_start(const struct gi_http_conf *conf, struct gi_http **out);
void gi_http_stop(struct gi_http *h);

/* Requests served, by HTTP status class (for tests and metrics). */
struct gi_http_counters {
	uint64_t ok;
	uint64_t not_found;
	uint64_t bad_method;
	uint64_t bad_request;  /* ours (a body) and those libmicrohttpd refused after the request line */
	uint64_t server_error; /* the render callback failed: 500 */
	uint64_t slow_closed;  /* connections closed for not sending their request headers in time */
};
void gi_http_counters(const struct gi_http *h, struct gi_http_counters *out);

/* The bound TCP port (useful with "127.0.0.1:0"), or 0 without a TCP listener. */
int gi_http_tcp_port(const struct gi_http *h);

#endif /* GI_HTTP_H */
