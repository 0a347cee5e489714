/*
 * wake_server.c — the wake objects' descriptors for consumers (see wake_server.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "kernels/frame.h"
#include "pmd_glue/log.h"
#include "wake_server.h"

#define WS_MAX_RINGS 256u
#define WS_MAX_FDS 8u /* descriptors a request may carry before it is refused; all are closed */

struct ws_ring {
	dev_t dev;
	ino_t ino;
	int wake_fd;
	char stream[64];
};

struct gi_wake_server {
	int listen_fd;
	int stop_fd; /* eventfd: the thread leaves */
	pthread_t th;
	bool running;
	pthread_mutex_t mu; /* rings[] */
	struct ws_ring rings[WS_MAX_RINGS];
	uint32_t n_rings;
	uint64_t refused;   /* relaxed: read by the stats thread */
	bool refusal_logged;
	char name[48];
};

/* The abstract address of `token`'s socket, and its length. */
static socklen_t ws_addr(struct sockaddr_un *sa, uint64_t token)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, GI_FRAME_WAKE_SOCKET_FMT, (unsigned long long)token);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static void ws_refuse(struct gi_wake_server *ws, int conn, const char *why)
{
	struct ucred cr = { 0 };
	socklen_t len = sizeof(cr);
	__atomic_add_fetch(&ws->refused, 1, __ATOMIC_RELAXED);
	if (ws->refusal_logged)
		return;
	ws->refusal_logged = true; /* once: a consumer that keeps trying must not flood the log */
	getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cr, &len);
	gi_log(GI_LOG_WARNING,
	       "wake socket @%s: refused a request from pid %d uid %u: %s (counted in "
	       "gpuingest_wake_refused_total; further refusals are counted, not logged)",
	       ws->name, (int)cr.pid, (unsigned)cr.uid, why);
}

/* One request: the consumer's read-only ring descriptor in, the ring's wake object out. */
static void ws_serve(struct gi_wake_server *ws, int conn)
{
	struct timeval tv = { 0, 100000 }; /* a stalled peer holds the server 100 ms at most */
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

	char req[sizeof(GI_FRAME_WAKE_REQUEST) + 8];
	union {
		char buf[CMSG_SPACE(WS_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { req, sizeof(req) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
	int fds[WS_MAX_FDS], n_fds = 0;
	for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && n_fds < (int)WS_MAX_FDS; i++)
			memcpy(&fds[n_fds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}

	const char *why = NULL;
	struct stat sb;
	int wake_fd = -1;
	if (n != (ssize_t)sizeof(GI_FRAME_WAKE_REQUEST) || memcmp(req, GI_FRAME_WAKE_REQUEST, sizeof(GI_FRAME_WAKE_REQUEST)))
		why = n < 0 ? "no request within 100 ms" : "not a wake request";
	else if (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
		why = "a truncated request";
	else if (n_fds != 1)
		why = "a request must carry exactly one descriptor, the ring's";
	else if (fstat(fds[0], &sb) != 0)
		why = "its descriptor cannot be examined";
	if (!why) {
		pthread_mutex_lock(&ws->mu);
		for (uint32_t i = 0; i < ws->n_rings; i++)
			if (ws->rings[i].dev == sb.st_dev && ws->rings[i].ino == sb.st_ino)
				wake_fd = dup(ws->rings[i].wake_fd);
		pthread_mutex_unlock(&ws->mu);
		if (wake_fd < 0)
			why = "its descriptor is not one of this daemon's frame rings";
	}
	for (int i = 0; i < n_fds; i++)
		close(fds[i]);
	if (why) {
		ws_refuse(ws, conn, why);
		return;
	}
	uint32_t reply = GI_FRAME_WAKE_MAGIC;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} out;
	memset(&out, 0, sizeof(out)); /* the control message's padding goes to the peer too */
	struct iovec riov = { &reply, sizeof(reply) };
	struct msghdr rmsg = { .msg_iov = &riov, .msg_iovlen = 1, .msg_control = out.buf, .msg_controllen = sizeof(out.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&rmsg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &wake_fd, sizeof(int));
	sendmsg(conn, &rmsg, MSG_NOSIGNAL); /* a consumer that left is its own business */
	close(wake_fd);
}

static void *ws_main(void *arg)
{
	struct gi_wake_server *ws = arg;
	struct pollfd p[2] = { { ws->listen_fd, POLLIN, 0 }, { ws->stop_fd, POLLIN, 0 } };

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		int conn = accept4(ws->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue; /* EAGAIN, a peer that left, out of descriptors: the next poll tries again */
		ws_serve(ws, conn);
		close(conn);
	}
	return NULL;
}

int gi_wake_server_start(struct gi_wake_server **out, uint64_t token)
{
	struct gi_wake_server *ws = calloc(1, sizeof(*ws));
	struct sockaddr_un sa;
	int rc;

	*out = NULL;
	if (!ws)
		return -ENOMEM;
	ws->listen_fd = ws->stop_fd = -1;
	pthread_mutex_init(&ws->mu, NULL);
	socklen_t len = ws_addr(&sa, token);
	snprintf(ws->name, sizeof(ws->name), GI_FRAME_WAKE_SOCKET_FMT, (unsigned long long)token);
	ws->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	ws->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (ws->listen_fd < 0 || ws->stop_fd < 0 || bind(ws->listen_fd, (struct sockaddr *)&sa, len) != 0 ||
	    listen(ws->listen_fd, 64) != 0) {
		rc = -errno;
		gi_log(GI_LOG_ERR, "wake socket @%s: %s (consumers would have to poll)", ws->name, strerror(-rc));
		gi_wake_server_stop(ws);
		return rc;
	}
	if ((rc = pthread_create(&ws->th, NULL, ws_main, ws)) != 0) {
		gi_log(GI_LOG_ERR, "wake socket @%s: cannot start its thread: %s", ws->name, strerror(rc));
		gi_wake_server_stop(ws);
		return -rc;
	}
	pthread_setname_np(ws->th, "gi-wake-srv");
	ws->running = true;
	*out = ws;
	return 0;
}

int gi_wake_server_add(struct gi_wake_server *ws, int ring_fd, int wake_fd, const char *stream)
{
	struct stat sb;
	int rc = 0;

	if (fstat(ring_fd, &sb) != 0)
		return -errno;
	int dup_fd = fcntl(wake_fd, F_DUPFD_CLOEXEC, 3);
	if (dup_fd < 0)
		return -errno;
	pthread_mutex_lock(&ws->mu);
	if (ws->n_rings == WS_MAX_RINGS) {
		rc = -E2BIG;
	} else {
		struct ws_ring *r = &ws->rings[ws->n_rings++];
		r->dev = sb.st_dev;
		r->ino = sb.st_ino;
		r->wake_fd = dup_fd;
		snprintf(r->stream, sizeof(r->stream), "%s", stream);
	}
	pthread_mutex_unlock(&ws->mu);
	if (rc < 0)
		close(dup_fd);
	return rc;
}

void gi_wake_server_remove(struct gi_wake_server *ws, int ring_fd)
{
	struct stat sb;
	if (!ws || fstat(ring_fd, &sb) != 0)
		return;
	pthread_mutex_lock(&ws->mu);
	for (uint32_t i = 0; i < ws->n_rings; i++)
		if (ws->rings[i].dev == sb.st_dev && ws->rings[i].ino == sb.st_ino) {
			close(ws->rings[i].wake_fd);
			ws->rings[i] = ws->rings[--ws->n_rings];
			break;
		}
	pthread_mutex_unlock(&ws->mu);
}

uint64_t gi_wake_server_refused(const struct gi_wake_server *ws)
{
	return ws ? __atomic_load_n(&ws->refused, __ATOMIC_RELAXED) : 0;
}

void gi_wake_server_stop(struct gi_wake_server *ws)
{
	if (!ws)
		return;
	if (ws->running) {
		uint64_t one = 1;
		if (write(ws->stop_fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
			pthread_join(ws->th, NULL);
		else
			pthread_cancel(ws->th), pthread_join(ws->th, NULL);
	}
	if (ws->listen_fd >= 0)
		close(ws->listen_fd);
	if (ws->stop_fd >= 0)
		close(ws->stop_fd);
	for (uint32_t i = 0; i < ws->n_rings; i++)
		close(ws->rings[i].wake_fd);
	pthread_mutex_destroy(&ws->mu);
	free(ws);
}
