/*
 * shm.h — POSIX shared-memory objects for host-memory frame rings.
 *
 * The daemon creates one object per stream (mode 0640), maps it read-write,
 * and removes the name at shutdown; consumers map it read-only.  Beside it
 * goes the ring's wake object (NAME.wake, one page, mode 0660: consumers
 * register there before they sleep, kernels/frame.h).  A stale object left
 * by a crashed run is replaced, with a notice.
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
	char wake_name[72];
	struct gi_frame_wake *wake; /* NULL when it could not be made: consumers then poll */
	int unlinked;               /* gi_shm_unlink() has removed the names */
};

/*
 * 0 or -errno, one log line naming the object.  The wake object is made
 * first, for the ring of `created_ns` (a failure there is a warning).
 */
int gi_shm_create(struct gi_shm *s, const char *name, size_t len, unsigned mode, uint64_t created_ns);
/* The wake object's count of sleeping consumers, for gi_stream_rt.waiters; NULL without one. */
uint32_t *gi_shm_waiters(struct gi_shm *s);
/*
 * Remove the names (ring and wake object) while the memory stays: a ring
 * being closed is unlinked before its memory is freed, so no consumer can
 * open it in between (a GPU ring's IPC handle would be dead by then).
 */
void gi_shm_unlink(struct gi_shm *s);
/* Unmap and (if unlink and not unlinked yet) remove the name. */
void gi_shm_destroy(struct gi_shm *s, int unlink_name);

#endif /* GI_SHM_H */
