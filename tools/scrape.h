/*
 * scrape.h — one GET /metrics from a running gpuingestd (unix socket or
 * HOST:PORT), parsed into samples: gpuingest-stat's table and
 * gpuingest-sim's pacing (--pace-metrics) read the daemon this way.
 *
 * Just enough HTTP/1.1 (one GET, Content-Length, chunked or read-to-close)
 * and just enough of the Prometheus text format (sample lines; HELP/TYPE
 * are skipped).  Single-threaded per struct gi_scrape.
 */
#ifndef GI_TOOLS_SCRAPE_H
#define GI_TOOLS_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>

struct gi_scrape_sample {
	char *name;
	char *labels; /* inside the braces, as sent; "" if none */
	double value;
};

/* Samples of one name are contiguous on the page: lookups skip to them. */
struct gi_scrape_family {
	const char *name;
	size_t start, end;
};

struct gi_scrape {
	struct gi_scrape_sample *s;
	size_t n, cap;
	struct gi_scrape_family *fam;
	size_t n_fam;
	char *text;    /* the body; names and labels point into it */
	double t;      /* CLOCK_MONOTONIC seconds */
	char err[512]; /* why gi_scrape() failed: one line */
};

/* 0, or -1 with sc->err set (nothing to free then).  `target`: a socket path (with a '/') or HOST:PORT. */
int gi_scrape(const char *target, struct gi_scrape *sc);
void gi_scrape_free(struct gi_scrape *sc);
/* The value of label `key` in a label string, unescaped, into out. */
bool gi_scrape_label(const char *labels, const char *key, char *out, size_t len);
/*
 * Sum of samples named `name` whose labels include every "k=v" pair in
 * `want` (NULL-terminated pairs; NULL: all).  *found (if given) tells
 * whether any matched.
 */
double gi_scrape_sum(const struct gi_scrape *sc, const char *name, const char *const *want, bool *found);

#endif /* GI_TOOLS_SCRAPE_H */
