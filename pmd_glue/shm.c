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

#include "kernels/frame.h"
#include "log.h"
#include "shm.h"

/* O_EXCL, replacing what an earlier run left under the name */
static int shm_create_fd(const char *name, unsigned mode)
{
	int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, mode);
	if (fd < 0 && errno == EEXIST) {
		gi_log(GI_LOG_NOTICE, "frame ring %s: replacing a shared-memory object left by an earlier run", name);
		shm_unlink(name);
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, mode);
	}
	return fd;
}

/*
 * The wake object: group-writable (consumers count themselves in), and
 * nothing else in it, so the ring itself stays read-only to them.
 */
static void wake_create(struct gi_shm *s, unsigned mode, uint64_t created_ns)
{
	unsigned wmode = mode | ((mode & 0040) ? 0020 : 0) | ((mode & 0400) ? 0200 : 0);
	struct gi_frame_wake *w;
	int fd;

	snprintf(s->wake_name, sizeof(s->wake_name), "%s%s", s->name, GI_FRAME_WAKE_SUFFIX);
	fd = shm_create_fd(s->wake_name, wmode);
	if (fd < 0) {
		gi_log(GI_LOG_WARNING, "frame ring %s: no wake object %s (%s): its consumers will poll", s->name,
		       s->wake_name, strerror(errno));
		return;
	}
	if (fchmod(fd, wmode) != 0 || ftruncate(fd, sizeof(*w)) != 0 ||
	    (w = mmap(NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		gi_log(GI_LOG_WARNING, "frame ring %s: wake object %s: %s: its consumers will poll", s->name,
		       s->wake_name, strerror(errno));
		close(fd);
		shm_unlink(s->wake_name);
		return;
	}
	close(fd);
	w->version = GI_FRAME_VERSION;
	w->ring_created_ns = created_ns;
	__atomic_store_n(&w->magic, GI_FRAME_WAKE_MAGIC, __ATOMIC_RELEASE);
	s->wake = w;
}

uint32_t *gi_shm_waiters(struct gi_shm *s)
{
	return s->wake ? &s->wake->waiters : NULL;
}

int gi_shm_create(struct gi_shm *s, const char *name, size_t len, unsigned mode, uint64_t created_ns)
{
	int fd, rc;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	wake_create(s, mode, created_ns);
	fd = shm_create_fd(name, mode);
	if (fd < 0) {
		rc = -errno;
		gi_log(GI_LOG_ERR, "frame ring %s: shm_open failed: %s (is /dev/shm mounted and writable?)", name,
		       strerror(-rc));
		gi_shm_destroy(s, 1);
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
	gi_shm_destroy(s, 1);
	return rc;
}

void gi_shm_unlink(struct gi_shm *s)
{
	if (s->unlinked)
		return;
	if (s->va)
		shm_unlink(s->name);
	if (s->wake)
		shm_unlink(s->wake_name);
	s->unlinked = 1;
}

void gi_shm_destroy(struct gi_shm *s, int unlink_name)
{
	if (unlink_name)
		gi_shm_unlink(s);
	if (s->va)
		munmap(s->va, s->len);
	s->va = NULL;
	if (s->wake)
		munmap(s->wake, sizeof(*s->wake));
	s->wake = NULL;
	s->unlinked = 0;
}
