/*
 * log.h — one line per event, with a level, for every host-side module.
 *
 * Lives in pmd_glue/ because both the daemon and the DPDK glue log and the
 * arrows only point down (daemon → pmd_glue → kernels).  Lines go to stderr;
 * under systemd (JOURNAL_STREAM set) each line starts with the `<N>`
 * priority prefix journald understands.  Identical consecutive messages are
 * rate-limited: repeats within a second are counted and summarised.
 *
 * Any thread, but never per packet: the data path counts, it does not log.
 */
#ifndef GI_LOG_H
#define GI_LOG_H

#include <stdarg.h>

enum gi_log_level {
	GI_LOG_ERR = 3,
	GI_LOG_WARNING = 4,
	GI_LOG_NOTICE = 5,
	GI_LOG_INFO = 6,
	GI_LOG_DEBUG = 7,
};

void gi_log_set_level(enum gi_log_level level);
enum gi_log_level gi_log_get_level(void);
const char *gi_log_level_name(enum gi_log_level level);

void gi_log(enum gi_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gi_vlog(enum gi_log_level level, const char *fmt, va_list ap);

#define GI_ERR(...) gi_log(GI_LOG_ERR, __VA_ARGS__)
#define GI_WARN(...) gi_log(GI_LOG_WARNING, __VA_ARGS__)
#define GI_NOTICE(...) gi_log(GI_LOG_NOTICE, __VA_ARGS__)
#define GI_INFO(...) gi_log(GI_LOG_INFO, __VA_ARGS__)
#define GI_DEBUG(...) gi_log(GI_LOG_DEBUG, __VA_ARGS__)

#endif /* GI_LOG_H */
