/*
 * log.c — leveled, journald-aware, repeat-limited log lines (see log.h).
 *
 * The only mutable state is the level and the last-line memory used for
 * repeat suppression; a mutex guards the latter (logging is never on the
 * data path, so a lock here costs nothing that matters).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

static enum gi_log_level log_level = GI_LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_line[512];
static unsigned last_repeats;
static enum gi_log_level last_level;
static time_t last_time;

void gi_log_set_level(enum gi_log_level level)
{
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

enum gi_log_level gi_log_get_level(void)
{
	return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

const char *gi_log_level_name(enum gi_log_level level)
{
	switch (level) {
	case GI_LOG_ERR: return "error";
	case GI_LOG_WARNING: return "warning";
	case GI_LOG_NOTICE: return "notice";
	case GI_LOG_INFO: return "info";
	case GI_LOG_DEBUG: return "debug";
	}
	return "?";
}

static void emit(enum gi_log_level level, const char *msg)
{
	if (getenv("JOURNAL_STREAM"))
		fprintf(stderr, "<%d>%s\n", (int)level, msg);
	else
		fprintf(stderr, "gpuingestd: %s: %s\n", gi_log_level_name(level), msg);
}

void gi_vlog(enum gi_log_level level, const char *fmt, va_list ap)
{
	char line[512];
	time_t now;

	if (level > gi_log_get_level())
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	now = time(NULL);

	pthread_mutex_lock(&log_lock);
	if (strcmp(line, last_line) == 0 && now - last_time < 1) {
		last_repeats++;
		pthread_mutex_unlock(&log_lock);
		return;
	}
	if (last_repeats) {
		char note[96];
		snprintf(note, sizeof(note), "last message repeated %u more times", last_repeats);
		emit(last_level, note); /* at the level of what repeated */
		last_repeats = 0;
	}
	snprintf(last_line, sizeof(last_line), "%s", line);
	last_time = now;
	last_level = level;
	emit(level, line);
	fflush(stderr);
	pthread_mutex_unlock(&log_lock);
}

void gi_log(enum gi_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gi_vlog(level, fmt, ap);
	va_end(ap);
}
