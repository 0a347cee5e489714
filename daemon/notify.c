/*
 * notify.c — sd_notify messages and the progress-gated watchdog.
 *
 * DESIGN.  systemd restarts a service whose watchdog pings stop.  A ping
 * from a timer would prove only that the main thread is alive; ours proves
 * that every rx lcore polled and that the executor served its rings since
 * the previous ping.  The executor's progress word does not advance while
 * it is paused or hung with batches waiting (kernels/executor.c), so a
 * stuck kernel is what stops the pings, not a quiet network.
 *
 * Without libsystemd at build time the message goes out through our own
 * sendmsg() on a unix datagram socket: that is the whole protocol
 * (sd_notify(3): "a single datagram with the state string as payload").
 *
 * Main thread only.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gi_build_config.h"
#if HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon.h"
#include "notify.h"

/* ---- messages ----------------------------------------------------------- */

#if !HAVE_SYSTEMD
static int notify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;

	if (!path || !path[0])
		return 0;
	len = strlen(path);
	/* sd_notify accepts absolute paths and '@' abstract names, nothing else */
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = strlen(msg) };
	struct msghdr mh = {
		.msg_name = &sa,
		/* an abstract name is exactly its bytes, no terminating NUL */
		.msg_namelen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/')),
		.msg_iov = &iov,
		.msg_iovlen = 1,
	};
	int rc = sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 1;
	close(fd);
	return rc;
}
#endif

int gi_notify_v(const char *fmt, va_list ap)
{
	static int last_err;
	char msg[512];
	int rc;

	if (!getenv("NOTIFY_SOCKET"))
		return 0;
	vsnprintf(msg, sizeof(msg), fmt, ap);
#if HAVE_SYSTEMD
	rc = sd_notify(0, msg);
#else
	rc = notify_send(msg);
#endif
	if (rc < 0) {
		gi_log(rc == last_err ? GI_LOG_DEBUG : GI_LOG_WARNING,
		       "sd_notify to NOTIFY_SOCKET=%s failed: %s (systemd will not see '%.40s')", getenv("NOTIFY_SOCKET"),
		       strerror(-rc), msg);
		last_err = rc;
	}
	return rc;
}

int gi_notify(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = gi_notify_v(fmt, ap);
	va_end(ap);
	return rc;
}

void gi_notify_status(const char *fmt, ...)
{
	char status[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	gi_notify("STATUS=%s", status);
}

void gi_notify_ready(const char *fmt, ...)
{
	char status[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	gi_notify("READY=1\nSTATUS=%s", status);
}

void gi_notify_reloading(void)
{
	/* systemd (Type=notify-reload) matches RELOADING=1 to the reload it asked
	 * for by this timestamp, so it must be CLOCK_MONOTONIC taken now */
	gi_notify("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading configuration",
		  (unsigned long long)(gi_now_ns() / 1000u));
}

void gi_notify_reloaded(bool ok, const char *status)
{
	if (!status)
		status = ok ? "configuration reloaded" : "configuration reload failed; running the previous one";
	gi_notify("READY=1\nSTATUS=%s", status);
}

void gi_notify_stopping(const char *status)
{
	gi_notify("STOPPING=1\nSTATUS=%s", status ? status : "stopping");
}

void gi_notify_errno(int err, const char *status)
{
	gi_notify("STATUS=%s\nERRNO=%d", status, err);
}

/* ---- watchdog ------------------------------------------------------------- */

static uint64_t watchdog_usec(void)
{
	uint64_t usec = 0;
#if HAVE_SYSTEMD
	if (sd_watchdog_enabled(0, &usec) <= 0)
		usec = 0;
#else
	/* sd_watchdog_enabled(3): WATCHDOG_PID, when set, must name us */
	const char *s = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	char *end;
	if (!s || !s[0])
		return 0;
	usec = strtoull(s, &end, 10);
	if (*end || (pid && pid[0] && strtol(pid, NULL, 10) != (long)getpid()))
		usec = 0;
#endif
	return usec;
}

/* name progress word i, in gi_stats_progress() order, for the log */
static void word_name(const struct gi_daemon *d, uint32_t i, char *buf, size_t len)
{
	if (i < d->n_lcores)
		snprintf(buf, len, "rx lcore %u", d->lcores[i].lcore);
	else if (d->exec && gi_executor_workers(d->exec) > 1)
		snprintf(buf, len, "executor %s worker %u", d->backend ? d->backend : "?", i - d->n_lcores);
	else
		snprintf(buf, len, "executor %s", d->backend ? d->backend : "?");
}

void gi_watchdog_init(struct gi_watchdog *w, const struct gi_daemon *d, uint64_t now_ns)
{
	memset(w, 0, sizeof(*w));
	uint64_t usec = watchdog_usec();
	w->interval_ns = usec * 1000u / 2;
	w->next_ns = usec ? now_ns + w->interval_ns : UINT64_MAX;
	w->n = gi_stats_progress(d, w->last, GI_WATCHDOG_MAX_WORDS);
	if (usec)
		gi_log(GI_LOG_INFO, "watchdog: systemd expects a ping every %llu ms; pinging every %llu ms while every "
				    "rx lcore and the executor make progress",
		       (unsigned long long)(usec / 1000), (unsigned long long)(w->interval_ns / 1000000));

	/*
	 * TEST HOOK, not a configuration key: GI_TEST_STALL_EXECUTOR_AFTER_MS=N
	 * hangs the executor N ms after READY (gi_executor_set_paused(...,
	 * GI_EXEC_HANG): it stops serving its rings and ignores the stop
	 * request, as a hung kernel would).  tests/integration/notify.sh uses it
	 * to prove that the watchdog pings stop and that shutdown stays bounded.
	 * Honoured only when set; never set it in production.
	 */
	const char *stall = getenv("GI_TEST_STALL_EXECUTOR_AFTER_MS");
	if (stall && stall[0]) {
		char *end;
		unsigned long long ms = strtoull(stall, &end, 10);
		if (*end == '\0') {
			w->stall_at_ns = now_ns + ms * 1000000ull;
			if (w->stall_at_ns == 0)
				w->stall_at_ns = 1;
			gi_log(GI_LOG_WARNING, "test hook GI_TEST_STALL_EXECUTOR_AFTER_MS=%llu: the executor will hang", ms);
		}
	}

	/*
	 * TEST HOOK, not a configuration key: GI_TEST_PAUSE_EXECUTOR_MS=START:DURATION
	 * pauses the executor START ms after READY and resumes it DURATION ms
	 * later (GI_EXEC_PAUSE, then GI_EXEC_RUN): a stall the daemon must
	 * recover from.  tests/integration/exec_stall.sh uses it to prove that
	 * the rings fill, ring_full drops are counted, the watchdog pings stop
	 * and come back, and no mbuf leaks.  Honoured only when set; never set
	 * it in production.
	 */
	const char *pause = getenv("GI_TEST_PAUSE_EXECUTOR_MS");
	if (pause && pause[0]) {
		char *end, *end2;
		unsigned long long start = strtoull(pause, &end, 10), len = 0;
		if (*end == ':')
			len = strtoull(end + 1, &end2, 10);
		if (*end == ':' && end2 != end + 1 && *end2 == '\0' && len > 0) {
			w->pause_at_ns = now_ns + start * 1000000ull + 1;
			w->resume_at_ns = w->pause_at_ns + len * 1000000ull;
			gi_log(GI_LOG_WARNING,
			       "test hook GI_TEST_PAUSE_EXECUTOR_MS=%llu:%llu: the executor will pause for %llu ms", start,
			       len, len);
		} else {
			gi_log(GI_LOG_WARNING, "test hook GI_TEST_PAUSE_EXECUTOR_MS=%s ignored (want START_MS:DURATION_MS)",
			       pause);
		}
	}
}

int gi_watchdog_poll(struct gi_watchdog *w, const struct gi_daemon *d, uint64_t now_ns)
{
	uint64_t cur[GI_WATCHDOG_MAX_WORDS];

	if (w->stall_at_ns && now_ns >= w->stall_at_ns && d->exec) {
		gi_log(GI_LOG_WARNING, "test hook: hanging executor %s now", d->backend);
		gi_executor_set_paused(d->exec, GI_EXEC_HANG);
		gi_notify_status("test hook: executor %s hung", d->backend); /* the test's time reference */
		w->stall_at_ns = 0;
	}
	if (w->pause_at_ns && now_ns >= w->pause_at_ns && d->exec) {
		gi_log(GI_LOG_WARNING, "test hook: pausing executor %s now", d->backend);
		gi_executor_set_paused(d->exec, GI_EXEC_PAUSE);
		gi_notify_status("test hook: executor %s paused", d->backend);
		w->pause_at_ns = 0;
	} else if (w->resume_at_ns && !w->pause_at_ns && now_ns >= w->resume_at_ns && d->exec) {
		gi_log(GI_LOG_WARNING, "test hook: resuming executor %s now", d->backend);
		gi_executor_set_paused(d->exec, GI_EXEC_RUN);
		gi_notify_status("test hook: executor %s resumed", d->backend);
		w->resume_at_ns = 0;
	}
	if (now_ns < w->next_ns)
		return 0;
	w->next_ns = now_ns + w->interval_ns;

	/*
	 * Every word that did not move, named in one line, and again whenever
	 * a part stops that no line of this stall named yet: another part may
	 * be seen stuck first (an rx lcore that runs a hung executor inline,
	 * or one starved of its CPU for a whole interval), and the executor
	 * must still be named.
	 */
	uint32_t n = gi_stats_progress(d, cur, GI_WATCHDOG_MAX_WORDS);
	uint32_t n_stuck = 0, n_new = 0, last_i = 0;
	for (uint32_t i = 0; i < n; i++)
		if (n == w->n && cur[i] == w->last[i]) {
			n_stuck++;
			n_new += !(w->named[i / 64] >> (i % 64) & 1);
			last_i = i;
		}
	if (n_new) {
		char names[200] = "", name[64];
		size_t at = 0;
		for (uint32_t i = 0, k = 0; i < n && at < sizeof(names); i++) {
			if (cur[i] != w->last[i])
				continue;
			word_name(d, i, name, sizeof(name));
			const char *sep = k == 0 ? "" : i == last_i ? " and " : ", ";
			at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", sep, name);
			w->named[i / 64] |= 1ull << (i % 64);
			k++;
		}
		gi_log(GI_LOG_ERR,
		       "watchdog: %s made no progress in the last %llu ms; not pinging systemd, which restarts the service "
		       "when WatchdogSec runs out",
		       names, (unsigned long long)(w->interval_ns / 1000000));
		gi_notify_status("%s %s stuck; watchdog pings stopped", names, n_stuck > 1 ? "are" : "is");
	}
	memcpy(w->last, cur, n * sizeof(cur[0]));
	w->n = n;
	if (n_stuck) {
		w->stalled = true;
		return 0;
	}
	if (w->stalled)
		gi_log(GI_LOG_NOTICE, "watchdog: every rx lcore and the executor make progress again; pinging");
	w->stalled = false;
	memset(w->named, 0, sizeof(w->named));
	gi_notify("WATCHDOG=1");
	return 1;
}
