/*
 * http_activation.c — the listening sockets systemd passes (socket
 * activation, gpuingest.socket): read once from LISTEN_PID/LISTEN_FDS and
 * matched to the configured unix path and TCP listener (http.h,
 * gi_http_activation).  http.c serves them.
 */
#include <errno.h>
#include <fcntl.h>
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

#define GI_LISTEN_FDS_MAX 16

/* The descriptors systemd passed, read once: a reload must find them again. */
static struct {
	int read;
	int n;
	int fd[GI_LISTEN_FDS_MAX];
} passed;

/*
 * What sd_listen_fds(1) does, by hand so every build (with or without
 * libsystemd) takes the same path: the variables are ours only when
 * LISTEN_PID names this process; unset them so nothing we start inherits
 * them, and keep the descriptors out of children too.
 */
static void read_listen_fds(void)
{
	passed.read = 1;
	const char *pid_s = getenv("LISTEN_PID");
	const char *fds_s = getenv("LISTEN_FDS");
	char *end;
	unsigned long pid = pid_s ? strtoul(pid_s, &end, 10) : 0;
	int ours = pid_s && *end == '\0' && pid == (unsigned long)getpid();
	unsigned long n = ours && fds_s ? strtoul(fds_s, &end, 10) : 0;
	if (ours && fds_s && *end != '\0')
		n = 0;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (n > GI_LISTEN_FDS_MAX) {
		GI_WARN("http: systemd passed %lu sockets; serving at most the first %d", n,
			GI_LISTEN_FDS_MAX);
		n = GI_LISTEN_FDS_MAX;
	}
	for (unsigned long i = 0; i < n; i++) {
		int fd = GI_LISTEN_FDS_START + (int)i;
		int flags = fcntl(fd, F_GETFD);
		if (flags < 0)
			continue;
		fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
		passed.fd[passed.n++] = fd;
	}
}

/* A listening stream socket of `family`; its local address in `sa`. */
static int is_listener(int fd, int family, struct sockaddr_storage *sa)
{
	int v;
	socklen_t len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != SOCK_STREAM)
		return 0;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) < 0 || !v)
		return 0;
	len = sizeof(*sa);
	memset(sa, 0, sizeof(*sa));
	if (getsockname(fd, (struct sockaddr *)sa, &len) < 0)
		return 0;
	if (family == AF_INET)
		return sa->ss_family == AF_INET || sa->ss_family == AF_INET6;
	return sa->ss_family == family;
}

int gi_http_activation(struct gi_http_conf *conf)
{
	if (!passed.read)
		read_listen_fds();
	conf->unix_fd = -1;
	conf->tcp_fd = -1;
	const char *want = conf->unix_path ? conf->unix_path : "";
	char first_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1] = "";
	int first_unix = -1;

	for (int i = 0; i < passed.n; i++) {
		int fd = passed.fd[i];
		struct sockaddr_storage ss;
		if (is_listener(fd, AF_UNIX, &ss)) {
			const struct sockaddr_un *su = (const struct sockaddr_un *)&ss;
			if (conf->unix_fd < 0 && su->sun_path[0] && strcmp(su->sun_path, want) == 0)
				conf->unix_fd = fd;
			else if (first_unix < 0) {
				first_unix = fd;
				/* "@name" for an abstract socket, as ss(8) writes it */
				snprintf(first_path, sizeof(first_path), "%s%.*s",
					 su->sun_path[0] ? "" : "@", (int)sizeof(su->sun_path) - 1,
					 su->sun_path + !su->sun_path[0]);
			}
		} else if (is_listener(fd, AF_INET, &ss)) {
			if (conf->tcp_fd < 0)
				conf->tcp_fd = fd;
		} else {
			GI_WARN("http: descriptor %d passed by systemd is not a listening stream socket; ignored",
				fd);
		}
	}
	if (conf->unix_fd < 0 && first_unix >= 0) {
		conf->unix_fd = first_unix;
		if (want[0])
			GI_WARN("http: stats.unix is %s but systemd passed %s; serving on %s (make ListenStream= and stats.unix agree)",
				want, first_path, first_path);
	}
	int n = (conf->unix_fd >= 0) + (conf->tcp_fd >= 0);
	if (n)
		GI_INFO("http: socket activation: serving %s%s%s on the socket%s systemd passed",
			conf->unix_fd >= 0 ? "the unix socket" : "",
			n == 2 ? " and " : "", conf->tcp_fd >= 0 ? "the TCP listener" : "",
			n == 2 ? "s" : "");
	return n;
}

