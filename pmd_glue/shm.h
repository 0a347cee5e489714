/*
 * shm.h — POSIX shared-memory objects for host-memory frame rings.
 *
 * The daemon creates one object per stream (mode 0640), maps it read-write,
 * and removes the name at shutdown; consumers map it read-only.  A stale
 * object left by a crashed run is replaced, with a notice.
 *
 * Main thread only.
 */
#ifndef GI_SHM_H
#define GI_SHM_H

#include <stddef.h>

struct gi_shm {
	char name[64];
	void *va;
	size_t len;
};

/* 0 or -errno, one log line naming the object. */
int gi_shm_create(struct gi_shm *s, const char *name, size_t len, unsigned mode);
/* Unmap and (if unlink) remove the name. */
void gi_shm_destroy(struct gi_shm *s, int unlink_name);

#endif /* GI_SHM_H */
