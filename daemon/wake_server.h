/*
 * wake_server.h — hands each frame ring's wake object to its consumers.
 *
 * A consumer that sleeps counts itself in its ring's wake object, so that
 * the daemon issues a FUTEX_WAKE only when someone sleeps (kernels/frame.h).
 * That word must be writable by consumers, and the daemon reads it on
 * every publication, so the object is a threat to the daemon: a consumer
 * that could truncate a shared-memory object the daemon maps would kill
 * it with SIGBUS (one did, by `truncate -s 0 /dev/shm/...wake`).  Hence:
 *   - the wake object is a memfd, sealed against shrinking and growing
 *     (pmd_glue/shm.c): nobody, root included, can change its size, and it
 *     has no name anyone could unlink or replace;
 *   - consumers get its descriptor here, over an abstract unix socket
 *     (SOCK_SEQPACKET) named from a random token the ring header carries
 *     (gi_frame_wake_socket_name), by proving they may read the ring: the
 *     request carries their read-only descriptor of the ring, which must
 *     be the daemon's ring (same inode); anything else is refused, counted
 *     and logged once;
 *   - what consumers write into the object is a hint and nothing more: a
 *     count that is implausible, or stays up with nobody asleep, costs at
 *     most one system call per publication, and is counted and logged
 *     once (kernels/frame_wake.h, gi_daemon_check_consumers).
 * Consumers in another network namespace cannot reach the socket: they
 * poll, as consumers of a daemon without one do.
 *
 * One thread (gi-wake-srv) serves requests one at a time with short
 * timeouts, so a consumer that connects and stalls delays others by at
 * most 100 ms and never the data path.  Main thread: start, add, remove,
 * stop; the refusal count may be read by any thread.
 */
#ifndef GI_WAKE_SERVER_H
#define GI_WAKE_SERVER_H

#include <stdint.h>

struct gi_wake_server;

/* 0, or -errno with one log line; `token` names the socket (frame.h). */
int gi_wake_server_start(struct gi_wake_server **out, uint64_t token);
/* Serve `wake_fd` to those who hold `ring_fd`'s ring (both duplicated here); 0 or -errno. */
int gi_wake_server_add(struct gi_wake_server *ws, int ring_fd, int wake_fd, const char *stream);
/* Stop serving the ring behind `ring_fd` (before it is closed). */
void gi_wake_server_remove(struct gi_wake_server *ws, int ring_fd);
/* Requests refused so far (garbage, no descriptor, another file's). */
uint64_t gi_wake_server_refused(const struct gi_wake_server *ws);
void gi_wake_server_stop(struct gi_wake_server *ws);

#endif /* GI_WAKE_SERVER_H */
