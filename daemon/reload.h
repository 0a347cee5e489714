/*
 * reload.h — live reload of the configuration (SIGHUP, `systemctl reload`).
 *
 * The file is read and validated like at start.  An invalid file changes
 * nothing: every error is logged with its line and column, the reload is
 * counted as config_reloads_total{result="error"} and systemd's STATUS=
 * says so.  A valid file is applied live where that cannot drop traffic
 * (README "Live reload"): log level, status interval, per-queue batch
 * limits, streams (added, removed, changed; their rte_flow rules) and the
 * stats listeners.  Every other difference is logged by key as "needs a
 * restart" and left as it is; such a reload still counts as ok (with
 * warnings): the file is valid and all that can change did.
 *
 * Main thread only (the run loop, after SIGHUP).
 */
#ifndef GI_RELOAD_H
#define GI_RELOAD_H

#include "config.h"

struct gi_daemon;

/*
 * Reload d->cfg.path.  Returns 0 (applied; some keys may need a restart),
 * or -errno: -EINVAL the file is invalid, otherwise a live step failed
 * (the log names it; the running configuration is kept for that part).
 * Counts d->reloads_ok / d->reloads_error and sends RELOADING=1 … READY=1.
 */
int gi_reload(struct gi_daemon *d);


#endif /* GI_RELOAD_H */
