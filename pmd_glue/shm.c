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
 * The wake object: consumers write their count of sleepers into it and
 * the daemon reads it on every publication, so it must not be something a
 * consumer can shrink under the daemon (SIGBUS), grow, unlink or replace:
 * a memfd, sealed against shrinking and growing (F_SEAL_SEAL too, so the
 * seals stay), handed out by the wake socket to consumers that prove they
 * may read the ring.  What consumers write into it stays a hint
 * (kernels/frame_wake.h).
 */
static void wake_create(struct gi_shm *s, uint64_t created_ns)
{
	struct gi_frame_wake *w;
	int fd = memfd_create(s->name[0] == '/' ? s->name + 1 : s->name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0) {
		gi_log(GI_LOG_WARNING, "frame ring %s: no wake object (memfd_create: %s): its consumers will poll", s->name,
		       strerror(errno));
		return;
	}
	if (ftruncate(fd, sizeof(*w)) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
	    (w = mmap(NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		gi_log(GI_LOG_WARNING, "frame ring %s: wake object: %s: its consumers will poll", s->name, strerror(errno));
		close(fd);
		return;
	}
	w->version = GI_FRAME_VERSION;
	w->ring_created_ns = created_ns;
	__atomic_store_n(&w->magic, GI_FRAME_WAKE_MAGIC, __ATOMIC_RELEASE);
	s->wake = w;
	s->wake_fd = fd;
}

uint32_t *gi_shm_waiters(struct gi_shm *s)
{
	return s->wake ? &s->wake->waiters : NULL;
}

int gi_shm_create(struct gi_shm *s, const char *name, size_t len, unsigned mode, uint64_t created_ns)
{
	int fd, rc;

	memset(s, 0, sizeof(*s));
	s->fd = s->wake_fd = -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	wake_create(s, created_ns);
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
	s->fd = fd;
	return 0;
fail:
	close(fd);
	shm_unlink(name);
	gi_shm_destroy(s, 1);
	return rc;
}

int gi_shm_name_gone(const struct gi_shm *s)
{
	struct stat mine, named;
	if (s->fd < 0 || s->unlinked || fstat(s->fd, &mine) != 0)
		return 0;
	char path[96];
	snprintf(path, sizeof(path), "/dev/shm%s", s->name);
	return mine.st_nlink == 0 || stat(path, &named) != 0 || named.st_ino != mine.st_ino || named.st_dev != mine.st_dev;
}

void gi_shm_unlink(struct gi_shm *s)
{
	if (s->unlinked)
		return;
	if (s->va)
		shm_unlink(s->name);
	s->unlinked = 1;
}

void gi_shm_destroy(struct gi_shm *s, int unlink_name)
{
	if (!s->name[0])
		return; /* never created (a zeroed table entry): it holds no descriptor */
	if (unlink_name)
		gi_shm_unlink(s);
	if (s->va)
		munmap(s->va, s->len);
	s->va = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->wake)
		munmap(s->wake, sizeof(*s->wake));
	s->wake = NULL;
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	s->wake_fd = -1;
	s->unlinked = 0;
}
