/*
 * notify.h — the daemon's half of the systemd notify protocol, and the
 * watchdog that decides whether the data path deserves a ping.
 *
 * Messages go to $NOTIFY_SOCKET (a path, or an abstract name written with a
 * leading '@') through sd_notify() when built with libsystemd, through our
 * own sendmsg() otherwise; the wire format is the same.  Without
 * NOTIFY_SOCKET nothing is sent and every call is a cheap no-op, so the
 * daemon runs the same by hand, in tests and under systemd.
 *
 * Lifecycle, in the order systemd expects it:
 *   STATUS=<step>...            each start-up step (gi_notify)
 *   READY=1 + STATUS=           ports started, executor running, stats up
 *   WATCHDOG=1                  every WATCHDOG_USEC/2, only while every rx
 *                               lcore and the executor make progress
 *   RELOADING=1 + MONOTONIC_USEC=, then READY=1 + STATUS=   around a reload
 *   STOPPING=1                  shutdown begins
 *   ERRNO= + STATUS=            a fatal error (start-up, or a failed drain)
 *
 * Main thread only (the socket is opened per message; nothing is shared).
 */
#ifndef GI_NOTIFY_H
#define GI_NOTIFY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct gi_daemon;
struct gi_executor;

/*
 * Send one notify message ("KEY=value\nKEY=value").  Returns 1 when sent,
 * 0 when there is no NOTIFY_SOCKET, -errno when sending failed (logged once
 * per distinct errno, at debug level after the first: systemd going away
 * must not flood the log).
 */
int gi_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int gi_notify_v(const char *fmt, va_list ap);

/* STATUS=<text> */
void gi_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* READY=1 and STATUS=<text>: start-up is complete. */
void gi_notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* RELOADING=1, MONOTONIC_USEC=<CLOCK_MONOTONIC now>, STATUS=reloading configuration */
void gi_notify_reloading(void);
/* READY=1 and STATUS=<status> (ok or not: the daemon runs either way); NULL: a default text. */
void gi_notify_reloaded(bool ok, const char *status);
/* STOPPING=1 and STATUS=<status> */
void gi_notify_stopping(const char *status);
/* STATUS=<status> and ERRNO=<err> (err positive, as errno) */
void gi_notify_errno(int err, const char *status);

/*
 * The watchdog.  Progress words come from gi_stats_progress(): one per rx
 * lcore (its poll loop counter), then the executor's (it advances only when
 * the executor looked at every ring and completed what was pending, see
 * kernels/executor.h).  A ping is sent only if every word moved since the
 * previous check, so one stuck lcore or a hung kernel stops the pings and
 * systemd restarts the service after WatchdogSec.
 */
enum { GI_WATCHDOG_MAX_WORDS = GI_MAX_LCORES + 64 }; /* rx lcores, then executor workers */

struct gi_watchdog {
	uint64_t interval_ns;   /* WATCHDOG_USEC / 2; 0: systemd asked for no watchdog */
	uint64_t next_ns;       /* next check */
	uint32_t n;             /* words in last[] */
	bool stalled;           /* the previous check found a word that did not move */
	uint64_t last[GI_WATCHDOG_MAX_WORDS];
	uint64_t named[(GI_WATCHDOG_MAX_WORDS + 63) / 64]; /* the stuck words logged since the stall began */
	/* Test hook: GI_TEST_STALL_EXECUTOR_AFTER_MS (see notify.c) */
	uint64_t stall_at_ns;   /* 0: hook not set */
	/* Test hook: GI_TEST_PAUSE_EXECUTOR_MS=START:DURATION (see notify.c) */
	uint64_t pause_at_ns;   /* 0: not set or already paused */
	uint64_t resume_at_ns;  /* 0: not set or already resumed */
};

/*
 * Read WATCHDOG_USEC / WATCHDOG_PID (as sd_watchdog_enabled does) and the
 * test hook's environment variable; take the current progress words as the
 * baseline.  Call once, right after READY=1.
 */
void gi_watchdog_init(struct gi_watchdog *w, const struct gi_daemon *d, uint64_t now_ns);
/* From the main loop, as often as it wakes: checks and pings when due.  Returns 1 when it pinged. */
int gi_watchdog_poll(struct gi_watchdog *w, const struct gi_daemon *d, uint64_t now_ns);

#endif /* GI_NOTIFY_H */
