/*
 * shm.h — POSIX shared-memory objects for host-memory frame rings.
 *
 * The daemon creates one object per stream (mode 0640), maps it read-write,
 * and removes the name at shutdown; consumers map it read-only, so they
 * can neither resize nor write it.  Beside it goes the ring's wake object
 * (kernels/frame.h): one page that consumers write, hence a sealed memfd
 * whose size nobody can change and which has no name, handed to consumers
 * by the daemon's wake socket (daemon/wake_server.h).  A stale object left
 * by a crashed run under the ring's name is replaced, with a notice.
 *
 * Main thread only.
 */
#ifndef GI_SHM_H
#define GI_SHM_H

#include <stddef.h>
#include <stdint.h>

struct gi_frame_wake;

struct gi_shm {
	char name[64];
	void *va;
	size_t len;
	int fd;                     /* the ring's, kept: the wake socket's proof, and its name's health */
	int wake_fd;                /* the sealed memfd, -1 without one */
	struct gi_frame_wake *wake; /* NULL when it could not be made: consumers then poll */
	int unlinked;               /* gi_shm_unlink() has removed the name */
};

/*
 * 0 or -errno, one log line naming the object.  The wake object is made
 * first, for the ring of `created_ns` (a failure there is a warning).
 */
int gi_shm_create(struct gi_shm *s, const char *name, size_t len, unsigned mode, uint64_t created_ns);
/* The wake object's count of sleeping consumers, for gi_stream_rt.waiters; NULL without one. */
uint32_t *gi_shm_waiters(struct gi_shm *s);
/* 1 when the ring's name no longer leads to this ring (someone removed or replaced it), else 0. */
int gi_shm_name_gone(const struct gi_shm *s);
/*
 * Remove the name while the memory stays: a ring being closed is unlinked
 * before its memory is freed, so no consumer can open it in between (a GPU
 * ring's IPC handle would be dead by then).
 */
void gi_shm_unlink(struct gi_shm *s);
/* Unmap and (if unlink and not unlinked yet) remove the name. */
void gi_shm_destroy(struct gi_shm *s, int unlink_name);

#endif /* GI_SHM_H */
