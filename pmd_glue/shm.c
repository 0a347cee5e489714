/*
 * shm.c — frame-ring shared memory (see shm.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "shm.h"

int gi_shm_create(struct gi_shm *s, const char *name, size_t len, unsigned mode)
{
	int fd, rc;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, mode);
	if (fd < 0 && errno == EEXIST) {
		gi_log(GI_LOG_NOTICE, "frame ring %s: replacing a shared-memory object left by an earlier run", name);
		shm_unlink(name);
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, mode);
	}
	if (fd < 0) {
		rc = -errno;
		gi_log(GI_LOG_ERR, "frame ring %s: shm_open failed: %s (is /dev/shm mounted and writable?)", name,
		       strerror(errno));
		return rc;
	}
	/* umask may have narrowed the mode; consumers in the service group need read */
	if (fchmod(fd, mode) != 0)
		gi_log(GI_LOG_WARNING, "frame ring %s: chmod %o failed: %s", name, mode, strerror(errno));
	/* reserve every page now: a sparse tmpfs object maps fine and SIGBUSes
	 * the executor later, when /dev/shm turns out to be too small */
	rc = posix_fallocate(fd, 0, (off_t)len);
	if (rc != 0) {
		rc = -rc;
		gi_log(GI_LOG_ERR, "frame ring %s: cannot reserve %zu bytes: %s (is /dev/shm large enough? df -h /dev/shm)",
		       name, len, strerror(-rc));
		goto fail;
	}
	s->va = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (s->va == MAP_FAILED) {
		rc = -errno;
		s->va = NULL;
		gi_log(GI_LOG_ERR, "frame ring %s: mmap of %zu bytes failed: %s", name, len, strerror(errno));
		goto fail;
	}
	s->len = len;
	close(fd);
	return 0;
fail:
	close(fd);
	shm_unlink(name);
	return rc;
}

void gi_shm_destroy(struct gi_shm *s, int unlink_name)
{
	if (s->va)
		munmap(s->va, s->len);
	if (s->va && unlink_name)
		shm_unlink(s->name);
	s->va = NULL;
}
