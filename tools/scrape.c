/*
 * scrape.c — GET /metrics and its samples (see scrape.h).
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "scrape.h"

#define MAX_BODY (64u << 20)

/* A struct about to be filled: empty, no error. */
static void sc_reset(struct gi_scrape *sc)
{
	memset(sc, 0, sizeof(*sc));
}

static int fail(struct gi_scrape *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct gi_scrape *sc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sc->err, sizeof(sc->err), fmt, ap);
	va_end(ap);
	return -1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- HTTP ------------------------------------------------------------------ */

static int connect_target(struct gi_scrape *sc, const char *target)
{
	struct timeval tv = { 5, 0 };
	int fd;

	if (strchr(target, '/')) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		if (strlen(target) >= sizeof(sa.sun_path))
			return fail(sc, "%s: socket path too long", target);
		strcpy(sa.sun_path, target);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return fail(sc, "socket: %s", strerror(errno));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			int e = errno;
			close(fd);
			return fail(sc, "cannot connect to %s: %s (is gpuingestd running with stats.unix set to it?)", target,
				    strerror(e));
		}
		return fd;
	}
	/* host:port, [v6]:port */
	char host[256];
	const char *colon = strrchr(target, ':');
	if (!colon || !colon[1])
		return fail(sc, "%s: expected a socket path (with a '/') or HOST:PORT", target);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - target), target);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	int rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc != 0)
		return fail(sc, "%s: %s", target, gai_strerror(rc));
	int e = 0;
	fd = -1;
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			e = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		return fail(sc, "cannot connect to %s: %s (is gpuingestd running with stats.listen set to it?)", target,
			    strerror(e));
	return fd;
}

/* Decode a chunked body in place; returns its length or -1. */
static long dechunk(char *b, size_t len)
{
	size_t in = 0, out = 0;
	for (;;) {
		char *end;
		unsigned long n = strtoul(b + in, &end, 16);
		char *crlf = strstr(end, "\r\n");
		if (end == b + in || !crlf)
			return -1;
		in = (size_t)(crlf - b) + 2;
		if (n == 0)
			return (long)out;
		if (in + n > len)
			return -1;
		memmove(b + out, b + in, n);
		out += n;
		in += n + 2;
		if (in > len)
			return -1;
	}
}

/* GET /metrics; the body (NUL-terminated, caller frees) into *body. */
static int http_get(struct gi_scrape *sc, const char *target, char **body)
{
	int fd = connect_target(sc, target);
	if (fd < 0)
		return -1;
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nUser-Agent: gpuingest\r\n"
				  "Accept: text/plain\r\nConnection: close\r\n\r\n";
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1)) {
		close(fd);
		return fail(sc, "%s: sending the request: %s", target, strerror(errno));
	}
	size_t len = 0, cap = 1 << 16;
	char *b = malloc(cap);
	for (;;) {
		if (!b) {
			close(fd);
			return fail(sc, "out of memory");
		}
		if (len + 1 == cap) {
			if (cap >= MAX_BODY) {
				free(b);
				close(fd);
				return fail(sc, "%s: answer larger than %u MiB", target, MAX_BODY >> 20);
			}
			char *nb = realloc(b, cap *= 2);
			if (!nb)
				free(b);
			b = nb;
			continue;
		}
		ssize_t n = recv(fd, b + len, cap - len - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(b);
			close(fd);
			return fail(sc, "%s: reading the answer: %s", target, e == EAGAIN ? "timed out after 5 s" : strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	b[len] = '\0';

	int status = 0;
	char *hdr_end = strstr(b, "\r\n\r\n");
	if (sscanf(b, "HTTP/1.%*d %d", &status) != 1 || !hdr_end) {
		free(b);
		return fail(sc, "%s: not an HTTP answer", target);
	}
	if (status != 200) {
		free(b);
		return fail(sc, "%s: GET /metrics answered HTTP %d", target, status);
	}
	*hdr_end = '\0';
	bool chunked = false;
	long clen = -1;
	for (char *line = strstr(b, "\r\n"); line; line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, "Content-Length:", 15) == 0)
			clen = strtol(line + 15, NULL, 10);
		else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strstr(line, "chunked"))
			chunked = true;
	}
	char *start = hdr_end + 4;
	size_t blen = len - (size_t)(start - b);
	if (chunked) {
		long n = dechunk(start, blen);
		if (n < 0) {
			free(b);
			return fail(sc, "%s: malformed chunked answer", target);
		}
		blen = (size_t)n;
	} else if (clen >= 0) {
		if ((size_t)clen > blen) {
			free(b);
			return fail(sc, "%s: answer cut short (%zu of %ld bytes)", target, blen, clen);
		}
		blen = (size_t)clen;
	}
	memmove(b, start, blen);
	b[blen] = '\0';
	*body = b;
	return 0;
}

/* ---- Prometheus text --------------------------------------------------------- */

void gi_scrape_free(struct gi_scrape *sc)
{
	free(sc->fam);
	free(sc->s);
	free(sc->text);
	memset(sc, 0, sizeof(*sc));
}

/* Sample lines only: `name{labels} value [timestamp]` or `name value`. */
static int parse(struct gi_scrape *sc)
{
	for (char *save = NULL, *line = strtok_r(sc->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || line[0] == '\0')
			continue;
		char *p = line + strcspn(line, "{ ");
		char *labels = "";
		if (*p == '{') {
			*p++ = '\0';
			labels = p;
			bool q = false;
			for (; *p && (q || *p != '}'); p++) {
				if (q && *p == '\\' && p[1])
					p++;
				else if (*p == '"')
					q = !q;
			}
			if (*p != '}')
				continue;
			*p++ = '\0';
		} else if (*p == ' ') {
			*p++ = '\0';
		} else {
			continue;
		}
		while (*p == ' ')
			p++;
		char *end;
		double v = strtod(p, &end);
		if (end == p)
			continue;
		if (sc->n == sc->cap) {
			size_t cap = sc->cap ? sc->cap * 2 : 1024;
			struct gi_scrape_sample *ns = realloc(sc->s, cap * sizeof(*ns));
			if (!ns)
				return fail(sc, "out of memory");
			sc->s = ns;
			sc->cap = cap;
		}
		sc->s[sc->n++] = (struct gi_scrape_sample){ line, labels, v };
	}
	return 0;
}

int gi_scrape(const char *target, struct gi_scrape *sc)
{
	sc_reset(sc);
	if (http_get(sc, target, &sc->text) < 0)
		return -1;
	sc->t = now_s();
	if (parse(sc) < 0) {
		gi_scrape_free(sc);
		return -1;
	}
	sc->fam = calloc(sc->n + 1, sizeof(*sc->fam));
	if (!sc->fam) {
		gi_scrape_free(sc);
		return fail(sc, "out of memory");
	}
	for (size_t i = 0; i < sc->n; i++) {
		if (sc->n_fam && strcmp(sc->fam[sc->n_fam - 1].name, sc->s[i].name) == 0) {
			sc->fam[sc->n_fam - 1].end = i + 1;
			continue;
		}
		sc->fam[sc->n_fam++] = (struct gi_scrape_family){ sc->s[i].name, i, i + 1 };
	}
	if (sc->n == 0) {
		gi_scrape_free(sc);
		return fail(sc, "%s: no samples in the answer", target);
	}
	return 0;
}

/* The value of label `key` in a label string, unescaped, into out. */
bool gi_scrape_label(const char *labels, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);
	const char *p = labels;
	while (*p) {
		const char *eq = strchr(p, '=');
		if (!eq || eq[1] != '"')
			return false;
		bool match = (size_t)(eq - p) == kl && strncmp(p, key, kl) == 0;
		size_t o = 0;
		for (p = eq + 2; *p && *p != '"'; p++) {
			char c = *p;
			if (c == '\\' && p[1]) {
				c = *++p == 'n' ? '\n' : *p;
			}
			if (match && o + 1 < len)
				out[o++] = c;
		}
		if (match) {
			out[o] = '\0';
			return true;
		}
		if (*p == '"')
			p++;
		if (*p == ',')
			p++;
	}
	return false;
}

/*
 * Sum of samples named `name` whose labels include every "k=v" pair in
 * `want` (NULL-terminated pairs).  *found tells whether any matched.
 */
double gi_scrape_sum(const struct gi_scrape *sc, const char *name, const char *const *want, bool *found)
{
	double v = 0;
	bool any = false;
	for (size_t f = 0; f < sc->n_fam; f++) {
		if (strcmp(sc->fam[f].name, name) != 0)
			continue;
		for (size_t i = sc->fam[f].start; i < sc->fam[f].end; i++) {
			bool ok = true;
			for (const char *const *w = want; w && w[0] && ok; w += 2) {
				char got[256];
				ok = gi_scrape_label(sc->s[i].labels, w[0], got, sizeof(got)) && strcmp(got, w[1]) == 0;
			}
			if (ok) {
				v += sc->s[i].value;
				any = true;
			}
		}
	}
	if (found)
		*found = any;
	return v;
}

