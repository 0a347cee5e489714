/*
 * consumer.c — libgpuingest: the consumer side of kernels/frame.h.
 *
 * The one implementation of the frame ring protocol for readers: open and
 * header checks, the seqlock, frame accounting, restart and close, the
 * futex wait, and CUDA IPC for rings in GPU memory.  gpuingest-frames, the
 * Python module and the examples all read frames through here.
 *
 * The ring is mapped read-only; the only word this library ever writes is
 * its count in the ring's wake object, around a sleep (the daemon's wake
 * socket hands the object over: kernels/frame.h).  Whoever made the object
 * may rewrite it at any time: the header is validated once, from a copy,
 * and its geometry read from that copy only (struct gic_ring's geo).
 *
 * About 820 lines, kept whole on purpose: the opening checks and every
 * reader of the geometry they validated are one trust boundary, read in
 * one place; the library exports gic_* only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gpuingest/consumer.h"
#include "kernels/cuda_drv.h"
#include "kernels/frame.h"

#define OPEN_RETRY_NS 20000000ull  /* look for the ring again after 20 ms */
#define NAME_CHECK_NS 200000000ull /* how often a waiting consumer checks the name is still its ring */
#define POLL_NS 200000ull          /* sleep slice without a wake object */

#define FRAME_OVERRUN 0x1u         /* gic_frame.flags_: already counted as an overrun */

/* consumer.h's enum gic_dtype is the ring's (kernels/tensor.h) */
_Static_assert((int)GIC_DTYPE_U8 == (int)GI_DT_U8 && (int)GIC_DTYPE_I8 == (int)GI_DT_I8 && (int)GIC_DTYPE_U16 == (int)GI_DT_U16 &&
		       (int)GIC_DTYPE_I16 == (int)GI_DT_I16 && (int)GIC_DTYPE_U32 == (int)GI_DT_U32 && (int)GIC_DTYPE_I32 == (int)GI_DT_I32 &&
		       (int)GIC_DTYPE_F16 == (int)GI_DT_F16 && (int)GIC_DTYPE_BF16 == (int)GI_DT_BF16 && (int)GIC_DTYPE_F32 == (int)GI_DT_F32 &&
		       (int)GIC_DTYPE_CF16 == (int)GI_DT_CF16 && (int)GIC_DTYPE_CF32 == (int)GI_DT_CF32 &&
		       GIC_TENSOR_DIMS == GI_FRAME_TENSOR_DIMS,
	       "dtype numbers");
/* the ABI: the tensor's and the NIC times' words took the frame's and the info's reserved ones, sizes unchanged */
_Static_assert(sizeof(struct gic_frame) == 192 && sizeof(struct gic_ring_info) == 432, "gic_frame/gic_ring_info ABI");
_Static_assert(offsetof(struct gic_frame, first_nic_ns) == 176 && offsetof(struct gic_ring_info, nic_ts) == 428,
	       "gic_frame/gic_ring_info ABI: the NIC times where reserved words were");
_Static_assert((int)GIC_TS_NONE == (int)GI_NIC_TS_NONE && (int)GIC_TS_REALTIME == (int)GI_NIC_TS_REALTIME &&
		       (int)GIC_TS_DEVICE_TICKS == (int)GI_NIC_TS_DEVICE_TICKS,
	       "NIC clock numbers");

struct gic_ring {
	int fd;
	size_t len;
	struct gi_frame_ring_hdr *hdr;
	/* the header as try_open() validated it: the geometry is read from here,
	 * never again from the mapping, whose owner may rewrite it */
	struct gi_frame_ring_hdr geo;
	struct gi_frame_wake *wake;     /* RW mapping of the wake object, NULL: poll */
	struct gi_cuda_drv drv;
	uint64_t dev_base;              /* CUdeviceptr of the device ring, 0 for host rings */
	uint64_t *bitmap;               /* the current frame's bitmap, copied under the seqlock */
	unsigned flags;
	uint64_t f;                     /* the next frame number to look at */
	bool started;                   /* f is set: the stream had started when we opened, or has since */
	bool skip_at_start;             /* GIC_OPEN_LATEST, or gic_skip_to_newest() before the start */
	bool recheck_start;             /* opened running: move the start to what the ring still holds at
					 * the first look, up to open_next */
	uint64_t open_next;             /* next_frame when it opened a running ring */
	uint64_t next_name_check;
	struct gic_ring_info info;
	struct gic_stats st;
	char err[256];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? UINT64_MAX : now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

static void set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

static void ring_unmap(struct gic_ring *r)
{
#if HAVE_CUDA_DRIVER
	if (r->dev_base)
		r->drv.ipc_close_mem_handle((CUdeviceptr)r->dev_base);
#endif
	r->dev_base = 0;
	gi_cuda_drv_close(&r->drv);
	if (r->wake)
		munmap(r->wake, sizeof(*r->wake));
	r->wake = NULL;
	if (r->hdr)
		munmap(r->hdr, r->len);
	r->hdr = NULL;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->bitmap);
	r->bitmap = NULL;
}

/* The payload is in the daemon's GPU memory: open the ring's CUDA IPC handle on the same GPU. */
static int open_device(struct gic_ring *r, const struct gi_frame_ring_hdr *h, char *err, size_t err_len)
{
	char why[200], dev[32];
	/* by PCI address: the ordinal here may differ (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER) */
	memcpy(dev, h->dev_pci_bus_id, sizeof(dev) - 1);
	dev[sizeof(dev) - 1] = '\0';
	if (!dev[0])
		snprintf(dev, sizeof(dev), "%u", h->dev_ordinal);
	int rc = gi_cuda_drv_open(&r->drv, dev, why, sizeof(why));
	if (rc < 0) {
		set_err(err, err_len, "frames are in GPU memory (%s) and CUDA is unusable here: %s", dev, why);
		return rc;
	}
#if HAVE_CUDA_DRIVER
	CUipcMemHandle handle;
	CUdeviceptr base = 0;
	memcpy(&handle, h->ipc_handle, sizeof(handle));
	CUresult res = r->drv.ipc_open_mem_handle(&base, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
	if (res != CUDA_SUCCESS) {
		set_err(err, err_len,
			"frames are in GPU memory (%s) and the ring's CUDA IPC handle does not open here: %s "
			"(is the daemon still running, on this GPU?)",
			dev, gi_cuda_drv_strerror(&r->drv, (int)res, why, sizeof(why)));
		return -EIO;
	}
	r->dev_base = (uint64_t)base;
	r->info.cuda_device = r->drv.device_index;
	return 0;
#else
	set_err(err, err_len, "frames are in GPU memory and this libgpuingest was built without CUDA headers");
	return -ENOTSUP;
#endif
}

/*
 * The wake object, if this consumer may count itself in: else waits poll.
 * The daemon's wake socket (kernels/frame.h) hands it over for proof that
 * we read the ring: our read-only descriptor of it.  What comes back is
 * used only if it is what the daemon makes: sealed against resizing (no
 * one can truncate it under us), owned by the ring's owner, of this run.
 */
static void open_wake(struct gic_ring *r, const struct gi_frame_ring_hdr *h)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat ring_sb, sb;
	int s, fd = -1;

	if (!h->wake_token || fstat(r->fd, &ring_sb) != 0)
		return; /* a daemon without a wake socket */
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, GI_FRAME_WAKE_SOCKET_FMT,
			 (unsigned long long)h->wake_token);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	if ((s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0)
		return;
	struct timeval tv = { 0, 500000 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	memset(&cm, 0, sizeof(cm));
	struct iovec iov = { (void *)GI_FRAME_WAKE_REQUEST, sizeof(GI_FRAME_WAKE_REQUEST) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &r->fd, sizeof(int));
	uint32_t reply = 0;
	struct iovec riov = { &reply, sizeof(reply) };
	struct msghdr rmsg = { .msg_iov = &riov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	if (connect(s, (struct sockaddr *)&sa, len) == 0 && sendmsg(s, &msg, MSG_NOSIGNAL) >= 0 &&
	    recvmsg(s, &rmsg, MSG_CMSG_CLOEXEC) == (ssize_t)sizeof(reply) && reply == GI_FRAME_WAKE_MAGIC) {
		c = CMSG_FIRSTHDR(&rmsg);
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	}
	close(s);
	if (fd < 0)
		return;
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) == (F_SEAL_SHRINK | F_SEAL_GROW) &&
	    fstat(fd, &sb) == 0 && sb.st_uid == ring_sb.st_uid && (size_t)sb.st_size >= sizeof(struct gi_frame_wake)) {
		struct gi_frame_wake *w = mmap(NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (w != MAP_FAILED) {
			if (__atomic_load_n(&w->magic, __ATOMIC_ACQUIRE) == GI_FRAME_WAKE_MAGIC &&
			    w->version == GI_FRAME_VERSION && w->ring_created_ns == h->created_ns)
				r->wake = w;
			else
				munmap(w, sizeof(*w));
		}
	}
	close(fd);
}

/*
 * The ring's tensor record: none, or a shape whose elements fill `bytes` at
 * the slot's tensor offset.  A tensor is the frame's samples converted: at
 * most 4 bytes out for each byte in (u8 or RAW10 to float32), 8 allowed.
 */
static bool tensor_ok(const struct gi_frame_tensor *t, uint32_t packets, uint32_t payload_bytes)
{
	if (t->dtype == GI_DT_NONE)
		return t->bytes == 0;
	if (t->dtype >= GI_DT__COUNT || t->ndim < 1 || t->ndim > GI_FRAME_TENSOR_DIMS ||
	    t->off != gi_frame_tensor_off(packets, payload_bytes) || t->bytes > 8ull * packets * payload_bytes)
		return false;
	uint64_t n = gi_tensor_value_bytes(t->dtype) * (gi_tensor_dtype_complex(t->dtype) ? 2u : 1u);
	for (uint32_t d = 0; d < t->ndim; d++)
		if (t->shape[d] == 0 || t->shape[d] > UINT32_MAX || __builtin_mul_overflow(n, t->shape[d], &n))
			return false;
	return n == t->bytes;
}

/*
 * One attempt: 1 open, 0 not there yet (absent, still being sized or
 * initialised), -errno for what waiting will not fix.
 */
static int try_open(struct gic_ring *r, const char *shm, const char *stream, char *err, size_t err_len)
{
	struct stat sb;
	struct gi_frame_ring_hdr h;

	r->fd = shm_open(shm, O_RDONLY, 0);
	if (r->fd < 0) {
		int e = errno;
		set_err(err, err_len, "%s: %s", shm, e == ENOENT ? "no such frame ring (is gpuingestd running with "
								   "this stream?)" : strerror(e));
		return e == ENOENT ? 0 : -e;
	}
	if (fstat(r->fd, &sb) != 0 || (size_t)sb.st_size < sizeof(h)) {
		set_err(err, err_len, "%s: smaller than a ring header (being created?)", shm);
		return 0;
	}
	/* pread, not a mapping: a header that is still being written cannot fault us */
	if (pread(r->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != GI_FRAME_MAGIC) {
		set_err(err, err_len, "%s: no frame ring magic yet", shm);
		return 0;
	}
	if (h.version != GI_FRAME_VERSION || h.hdr_bytes != sizeof(h)) {
		set_err(err, err_len,
			"%s: frame ring version %u (header %u bytes), this libgpuingest reads version %u (%zu bytes): "
			"use the library that came with the daemon",
			shm, h.version, h.hdr_bytes, GI_FRAME_VERSION, sizeof(h));
		return -EPROTO;
	}
	const uint64_t full_stride = gi_frame_slot_stride_t(h.packets_per_frame, h.payload_bytes, h.tensor.bytes);
	uint64_t want_stride = h.payload_in_device ? gi_frame_meta_stride(h.packets_per_frame) : full_stride;
	if (!tensor_ok(&h.tensor, h.packets_per_frame, h.payload_bytes)) {
		set_err(err, err_len, "%s: inconsistent tensor record (dtype %u, %u dimensions, %llu bytes)", shm,
			h.tensor.dtype, h.tensor.ndim, (unsigned long long)h.tensor.bytes);
		return -EPROTO;
	}
	if (h.nic_ts > GI_NIC_TS_DEVICE_TICKS) {
		set_err(err, err_len, "%s: unknown NIC clock %u in the header (allowed: 0 none, 1 realtime, 2 device ticks)",
			shm, h.nic_ts);
		return -EPROTO;
	}
	if (h.n_slots == 0 || h.packets_per_frame == 0 || h.packets_per_frame > GI_FRAME_MAX_PACKETS ||
	    h.bitmap_words != gi_frame_bitmap_words(h.packets_per_frame) || h.slot_stride != want_stride ||
	    (h.payload_in_device && h.dev_slot_stride != full_stride) ||
	    h.payload_off != gi_frame_payload_off(h.packets_per_frame) || h.payload_bytes == 0 ||
	    h.frame_bytes > (uint64_t)h.packets_per_frame * h.payload_bytes ||
	    /* the last data packet may be short, and a frame-end packet of its own carries no data */
	    (h.frame_bytes + h.payload_bytes - 1) / h.payload_bytes + 1 < h.packets_per_frame) {
		set_err(err, err_len, "%s: inconsistent header (n_slots %u, packets %u, payload %u)", shm, h.n_slots,
			h.packets_per_frame, h.payload_bytes);
		return -EPROTO;
	}
	/* The daemon is stopping, or a reload replaces the ring: its name goes
	 * next, and a GPU ring's memory with it, so the IPC handle may already be
	 * dead.  Wait for the ring that replaces it (a restart, a reload). */
	if (__atomic_load_n(&h.closed, __ATOMIC_RELAXED)) {
		set_err(err, err_len, "%s: closed by the daemon (stopping, or replaced by a reload); waiting for a new one",
			shm);
		return 0;
	}
	if (stream && strncmp(h.stream_name, stream, sizeof(h.stream_name)) != 0) {
		set_err(err, err_len, "%s belongs to stream '%.63s', not '%s' (open it by its shm name)", shm,
			h.stream_name, stream);
		return -ENOENT;
	}
	/* n_slots x slot_stride in 64 bits: a header whose product wraps would map less than its slots */
	uint64_t need;
	if (__builtin_mul_overflow((uint64_t)h.n_slots, h.slot_stride, &need) ||
	    __builtin_add_overflow(need, GI_ALIGN_UP(sizeof(h), 4096), &need) || need > SIZE_MAX) {
		set_err(err, err_len, "%s: inconsistent header (%u slots of %llu bytes)", shm, h.n_slots,
			(unsigned long long)h.slot_stride);
		return -EPROTO;
	}
	if ((uint64_t)sb.st_size < need) {
		set_err(err, err_len, "%s: %lld bytes, its header needs %llu", shm, (long long)sb.st_size,
			(unsigned long long)need);
		return 0;
	}
	r->len = (size_t)need;
	r->hdr = mmap(NULL, r->len, PROT_READ, MAP_SHARED, r->fd, 0);
	if (r->hdr == MAP_FAILED) {
		int e = errno;
		r->hdr = NULL;
		set_err(err, err_len, "%s: mmap of %zu bytes: %s", shm, r->len, strerror(e));
		return -e;
	}
	r->geo = h;
	r->bitmap = calloc(h.bitmap_words, sizeof(uint64_t));
	if (!r->bitmap) {
		set_err(err, err_len, "%s: out of memory", shm);
		return -ENOMEM;
	}
	struct gic_ring_info *in = &r->info;
	memset(in, 0, sizeof(*in));
	memcpy(in->stream, h.stream_name, sizeof(in->stream) - 1);
	snprintf(in->shm, sizeof(in->shm), "%s", shm);
	in->ring_version = h.version;
	in->format = h.format;
	in->n_slots = h.n_slots;
	in->packets = h.packets_per_frame;
	in->payload_bytes = h.payload_bytes;
	in->in_device = h.payload_in_device;
	in->frame_bytes = h.frame_bytes;
	in->created_ns = h.created_ns;
	in->cuda_device = -1;
	if (h.payload_in_device)
		memcpy(in->pci_bus_id, h.dev_pci_bus_id, sizeof(in->pci_bus_id) - 1);
	in->nic_ts = h.nic_ts;
	in->tensor_dtype = h.tensor.dtype;
	in->tensor_ndim = h.tensor.dtype ? h.tensor.ndim : 0;
	for (uint32_t d = 0; d < in->tensor_ndim; d++)
		in->tensor_shape[d] = (uint32_t)h.tensor.shape[d];
	open_wake(r, &h);
	in->wake = r->wake != NULL;
	if (h.payload_in_device) {
		int rc = open_device(r, &h, err, err_len);
		if (rc < 0)
			return rc;
	}
	return 1;
}

static void start_at(struct gic_ring *r, uint64_t f)
{
	r->started = true;
	r->f = f;
	r->st.first_frame = f;
	r->st.next_frame = f;
	r->st.started = 1;
}

/* Frame `frame`'s slot, by the geometry validated at open. */
static struct gi_frame_slot *slot_of(const struct gic_ring *r, uint64_t frame)
{
	return (struct gi_frame_slot *)((uint8_t *)r->hdr + GI_ALIGN_UP(sizeof(*r->hdr), 4096) +
					(frame % r->geo.n_slots) * r->geo.slot_stride);
}

/*
 * The oldest frame a ring that is already running still holds: where a
 * consumer that opens it now starts.  Frames before it were gone before
 * this consumer came; counting them as its overruns (or as missing) would
 * report a late join as a slow reader, so its accounting starts here.
 *
 * Of the last n_slots numbers, not frame next_frame - n_slots: its slot is
 * frame next_frame's, which the daemon fills with the next packet that
 * comes (a lapped consumer resumes past it too, in gic_next()).  Nor those
 * whose slots already hold newer frames (open ones, up to the reorder
 * window ahead of next_frame).
 */
static uint64_t oldest_held(struct gic_ring *r, uint64_t *next_out)
{
	struct gi_frame_ring_hdr *h = r->hdr;
	uint64_t first = GI_LOAD_RELAXED_U64(&h->first_frame);
	uint64_t next = GI_LOAD_ACQUIRE_U64(&h->next_frame);
	if (next_out)
		*next_out = next;
	uint64_t start = next > first && next - first >= r->geo.n_slots ? next - r->geo.n_slots + 1 : first;
	for (uint64_t f = start; f < next; f++)
		if (GI_LOAD_ACQUIRE_U64(&slot_of(r, f)->seq) > 2 * f + 2)
			start = f + 1;
	return start;
}

int gic_open(struct gic_ring **out, const char *name, int timeout_ms, unsigned flags, char *err, size_t err_len)
{
	char shm[256];
	const char *stream = NULL;

	set_err(err, err_len, "%s", "");
	if (!out || !name || !name[0]) {
		set_err(err, err_len, "gic_open: no ring name");
		return -EINVAL;
	}
	*out = NULL;
	if (name[0] == '/') {
		if (strlen(name) >= sizeof(shm) - 8 || strchr(name + 1, '/')) {
			set_err(err, err_len, "'%s': a shared-memory name is '/' and up to 247 characters, no other '/'",
				name);
			return -EINVAL;
		}
		snprintf(shm, sizeof(shm), "%s", name);
	} else {
		if (strlen(name) > 63 || strchr(name, '/')) {
			set_err(err, err_len, "'%s': a stream name is up to 63 characters without '/'", name);
			return -EINVAL;
		}
		snprintf(shm, sizeof(shm), "/gpuingest-%s", name);
		stream = name;
	}
	if (flags & ~GIC_OPEN_LATEST) {
		set_err(err, err_len, "gic_open: unknown flags 0x%x", flags & ~GIC_OPEN_LATEST);
		return -EINVAL;
	}
	struct gic_ring *r = calloc(1, sizeof(*r));
	if (!r) {
		set_err(err, err_len, "out of memory");
		return -ENOMEM;
	}
	r->fd = -1;
	r->flags = flags;
	r->skip_at_start = flags & GIC_OPEN_LATEST;
	uint64_t deadline = deadline_of(timeout_ms);
	for (;;) {
		int rc = try_open(r, shm, stream, err, err_len);
		if (rc == 1)
			break;
		ring_unmap(r);
		if (rc < 0) {
			free(r);
			return rc;
		}
		uint64_t now = now_ns();
		if (now >= deadline) {
			free(r);
			return GIC_TIMEOUT;
		}
		uint64_t ns = deadline - now < OPEN_RETRY_NS ? deadline - now : OPEN_RETRY_NS;
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
		if (nanosleep(&ts, NULL) != 0 && errno == EINTR) {
			free(r);
			set_err(err, err_len, "%s: interrupted while waiting for the ring", shm);
			return GIC_INTERRUPTED;
		}
	}
	/* already running: start now, so that a frame published from here on
	 * and lapped before it is read is this consumer's overrun */
	if (__atomic_load_n(&r->hdr->started, __ATOMIC_ACQUIRE)) {
		start_at(r, oldest_held(r, &r->open_next));
		r->recheck_start = true;
	}
	r->next_name_check = now_ns() + NAME_CHECK_NS;
	*out = r;
	return GIC_OK;
}

void gic_close(struct gic_ring *r)
{
	if (!r)
		return;
	ring_unmap(r);
	free(r);
}

const struct gic_ring_info *gic_info(const struct gic_ring *r)
{
	return &r->info;
}

/* The daemon removes the name at shutdown and replaces the object on restart. */
static bool name_gone(struct gic_ring *r)
{
	struct stat sb;
	return fstat(r->fd, &sb) != 0 || sb.st_nlink == 0;
}

static bool rate_limited_name_gone(struct gic_ring *r)
{
	uint64_t now = now_ns();
	if (now < r->next_name_check)
		return false;
	r->next_name_check = now + NAME_CHECK_NS;
	return name_gone(r);
}

/*
 * The first look at a ring that was running when it opened: frames
 * published before the open that the ring reused since were gone before
 * this consumer read anything (it may have set up for a while after
 * gic_open()); the start moves past them, never past open_next, so what
 * was published after the open and lapped since still counts as overruns.
 */
static void settle_start(struct gic_ring *r)
{
	if (!r->recheck_start)
		return;
	r->recheck_start = false;
	uint64_t start = oldest_held(r, NULL);
	if (start > r->open_next)
		start = r->open_next;
	if (start > r->f)
		start_at(r, start);
}

/* Is there something for gic_next() to do (a frame, the start, the close)? */
static bool have_work(const struct gic_ring *r)
{
	const struct gi_frame_ring_hdr *h = r->hdr;
	if (__atomic_load_n(&h->closed, __ATOMIC_SEQ_CST))
		return true;
	if (!r->started)
		return __atomic_load_n(&h->started, __ATOMIC_SEQ_CST) != 0;
	return r->f < __atomic_load_n(&h->next_frame, __ATOMIC_SEQ_CST);
}

/*
 * Sleep until the daemon bumps wake_seq, the deadline, or the next name
 * check.  Counted in the wake object first, then the word read, then the
 * condition re-checked (frame.h: either the daemon sees us or we see it).
 * 0, or -EINTR.
 */
static int wait_change(struct gic_ring *r, uint64_t deadline)
{
	uint32_t *word = &r->hdr->wake_seq;
	uint64_t now = now_ns();
	uint64_t ns = deadline > now ? deadline - now : 0; /* it may have passed since the caller looked */
	int rc = 0;

	if (r->next_name_check > now && r->next_name_check - now < ns)
		ns = r->next_name_check - now;
	if (!r->wake && ns > POLL_NS)
		ns = POLL_NS;
	if (ns == 0)
		return 0;
	if (r->wake)
		__atomic_add_fetch(&r->wake->waiters, 1, __ATOMIC_SEQ_CST);
	uint32_t seen = __atomic_load_n(word, __ATOMIC_SEQ_CST);
	if (!have_work(r)) {
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
		r->st.waits++;
		if (syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0) != 0 && errno == EINTR)
			rc = -EINTR;
	}
	if (r->wake)
		__atomic_sub_fetch(&r->wake->waiters, 1, __ATOMIC_SEQ_CST);
	return rc;
}

static void count_state(struct gic_stats *s, uint32_t state, int64_t d)
{
	switch (state) {
	case GI_FRAME_COMPLETE: s->complete += (uint64_t)d; break;
	case GI_FRAME_CORRUPT: s->corrupt += (uint64_t)d; break;
	case GI_FRAME_TIMED_OUT: s->timed_out += (uint64_t)d; break;
	default: s->partial += (uint64_t)d; break;
	}
	s->frames += (uint64_t)d;
}

/* Read published frame r->f into *f under its seqlock: 1 done, 0 it moved on (counted). */
static int read_frame(struct gic_ring *r, struct gic_frame *f)
{
	const struct gi_frame_ring_hdr *g = &r->geo;
	struct gi_frame_slot *s = slot_of(r, r->f);
	uint64_t fr = r->f;
	uint64_t seq = GI_LOAD_ACQUIRE_U64(&s->seq);

	if (seq != 2 * fr + 2) {
		if (seq < 2 * fr + 1) {
			r->st.missing++; /* never filled: no packet of it arrived */
		} else if (seq == 2 * fr + 1) {
			r->st.missing++; /* below next_frame but still filling: the protocol says this cannot be */
			r->st.protocol_errors++;
		} else {
			r->st.overruns++;
		}
		return 0;
	}
	memset(f, 0, sizeof(*f));
	f->frame = s->frame;
	f->sensor_frame = s->sensor_frame;
	f->sensor_id = s->sensor_id;
	f->state = s->state;
	f->expected = s->expected;
	f->received = s->received;
	f->first_ts_ns = s->first_ts_ns;
	f->first_rx_ns = s->first_rx_ns;
	f->publish_ns = s->publish_ns;
	f->first_nic_ns = s->first_nic_ns;
	f->last_nic_ns = s->last_nic_ns;
	f->sender.kind = s->sender.kind;
	f->sender.flags = s->sender.flags;
	f->sender.frame_number = s->sender.frame_number;
	f->sender.bytes_written = s->sender.bytes_written;
	f->sender.sof_ns = s->sender.sof_ns;
	f->sender.meta_ns = s->sender.meta_ns;
	f->sender.crc = s->sender.crc;
	f->sender.psn = s->sender.psn;
	f->sender.crc_state = s->sender.crc_state;
	memcpy(r->bitmap, gi_frame_bitmap(s), (size_t)g->bitmap_words * 8);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (GI_LOAD_RELAXED_U64(&s->seq) != seq) {
		r->st.overruns++; /* reused while we copied its header */
		return 0;
	}
	if (f->frame != fr) { /* published under frame fr's seq word, with another number: a daemon bug */
		r->st.missing++;
		r->st.protocol_errors++;
		return 0;
	}
	f->bytes = g->frame_bytes;
	f->payload_bytes = g->payload_bytes;
	f->bitmap_words = g->bitmap_words;
	f->bitmap = r->bitmap;
	if (r->dev_base)
		f->dev_ptr = r->dev_base + gi_frame_dev_payload_off(g, fr);
	else
		f->data = (uint8_t *)s + g->payload_off;
	if (r->info.tensor_dtype) {
		f->tensor_dtype = (uint16_t)r->info.tensor_dtype;
		f->tensor_ndim = (uint16_t)r->info.tensor_ndim;
		if (r->dev_base)
			f->tensor = r->dev_base + gi_frame_dev_tensor_off(g, fr);
		else
			f->tensor = (uint64_t)(uintptr_t)((const uint8_t *)s + g->tensor.off);
	}
	f->seq_ = seq;
	count_state(&r->st, f->state, 1);
	return 1;
}

int gic_next(struct gic_ring *r, struct gic_frame *f, int timeout_ms)
{
	struct gi_frame_ring_hdr *h = r->hdr;
	uint64_t deadline = deadline_of(timeout_ms);

	r->err[0] = '\0';
	for (;;) {
		/* opened before the stream started: every frame of it is ours */
		if (!r->started && __atomic_load_n(&h->started, __ATOMIC_ACQUIRE))
			start_at(r, GI_LOAD_RELAXED_U64(&h->first_frame));
		if (r->started) {
			settle_start(r);
			if (r->skip_at_start)
				gic_skip_to_newest(r);
		}
		if (r->started) {
			uint64_t next = GI_LOAD_ACQUIRE_U64(&h->next_frame);
			if (r->f < next) {
				if (next - r->f > r->geo.n_slots) {
					/* a whole ring behind: those slots hold newer frames */
					uint64_t resume = next - r->geo.n_slots + 1;
					r->st.overruns += resume - r->f;
					r->f = resume;
				}
				int got = read_frame(r, f);
				r->f++;
				r->st.next_frame = r->f;
				if (got)
					return GIC_OK;
				continue;
			}
		}
		if (__atomic_load_n(&h->closed, __ATOMIC_ACQUIRE)) {
			/* closed is set after the final flush: next_frame is final now */
			if (!r->started || r->f >= GI_LOAD_ACQUIRE_U64(&h->next_frame))
				return GIC_CLOSED;
			continue;
		}
		if (rate_limited_name_gone(r) &&
		    (!r->started || r->f >= GI_LOAD_ACQUIRE_U64(&h->next_frame)))
			return GIC_RESTARTED;
		if (now_ns() >= deadline)
			return GIC_TIMEOUT;
		if (wait_change(r, deadline) == -EINTR)
			return GIC_INTERRUPTED;
	}
}

int gic_valid(struct gic_ring *r, struct gic_frame *f)
{
	if (f->flags_ & FRAME_OVERRUN)
		return 0;
	struct gi_frame_slot *s = slot_of(r, f->frame);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (GI_LOAD_RELAXED_U64(&s->seq) == f->seq_)
		return 1;
	f->flags_ |= FRAME_OVERRUN;
	count_state(&r->st, f->state, -1);
	r->st.overruns++;
	return 0;
}

/* bytes of f at host address `host` or device address `dev` to dst, then the seqlock check. */
static int copy_checked(struct gic_ring *r, struct gic_frame *f, const void *host, uint64_t dev, uint64_t bytes,
			void *dst, size_t dst_len, const char *what)
{
	if (dst_len < bytes) {
		snprintf(r->err, sizeof(r->err), "%s: %zu bytes for %llu", what, dst_len, (unsigned long long)bytes);
		return -ENOSPC;
	}
	if (host) {
		memcpy(dst, host, bytes);
	} else if (dev) {
#if HAVE_CUDA_DRIVER
		char why[160];
		CUresult res = CUDA_SUCCESS;
		if (gi_cuda_drv_make_current(&r->drv) < 0)
			res = CUDA_ERROR_INVALID_CONTEXT;
		if (res == CUDA_SUCCESS && bytes)
			res = r->drv.memcpy_dtoh(dst, (CUdeviceptr)dev, bytes);
		if (res != CUDA_SUCCESS) {
			snprintf(r->err, sizeof(r->err), "%s: cuMemcpyDtoH of frame %llu: %s", what,
				 (unsigned long long)f->frame, gi_cuda_drv_strerror(&r->drv, (int)res, why, sizeof(why)));
			return -EIO;
		}
#else
		return -ENOTSUP;
#endif
	}
	return gic_valid(r, f) ? GIC_OK : GIC_OVERRUN;
}

int gic_copy(struct gic_ring *r, struct gic_frame *f, void *dst, size_t dst_len)
{
	return copy_checked(r, f, f->data, f->dev_ptr, f->bytes, dst, dst_len, "gic_copy");
}

uint64_t gic_tensor_bytes(const struct gic_ring *r)
{
	const struct gic_ring_info *in = &r->info;
	uint64_t n = gi_tensor_value_bytes(in->tensor_dtype) * (gi_tensor_dtype_complex(in->tensor_dtype) ? 2u : 1u);

	for (uint32_t d = 0; n && d < in->tensor_ndim; d++)
		n *= in->tensor_shape[d];
	return n;
}

int gic_copy_tensor(struct gic_ring *r, struct gic_frame *f, void *dst, size_t dst_len)
{
	if (!f->tensor_dtype) {
		snprintf(r->err, sizeof(r->err), "gic_copy_tensor: stream %s has no tensor: block", r->info.stream);
		return -ENOENT;
	}
	return copy_checked(r, f, r->dev_base ? NULL : (const void *)(uintptr_t)f->tensor, r->dev_base ? f->tensor : 0,
			    gic_tensor_bytes(r), dst, dst_len,
			    "gic_copy_tensor");
}

uint64_t gic_skip_to_newest(struct gic_ring *r)
{
	if (!r->started) {
		r->skip_at_start = true;
		return 0;
	}
	r->skip_at_start = false;
	settle_start(r);
	uint64_t next = GI_LOAD_ACQUIRE_U64(&r->hdr->next_frame);
	if (next <= r->f + 1)
		return 0;
	uint64_t n = next - 1 - r->f;
	r->st.skipped += n;
	r->f = next - 1;
	r->st.next_frame = r->f;
	return n;
}

void gic_stats(const struct gic_ring *r, struct gic_stats *s)
{
	*s = r->st;
	s->next_frame = r->started ? r->f : 0;
}

const char *gic_strerror(int status)
{
	switch (status) {
	case GIC_OK: return "ok";
	case GIC_TIMEOUT: return "timeout";
	case GIC_CLOSED: return "closed";
	case GIC_RESTARTED: return "restarted";
	case GIC_OVERRUN: return "overrun";
	case GIC_INTERRUPTED: return "interrupted";
	default: break;
	}
	return status < 0 ? strerror(-status) : "unknown status";
}

const char *gic_last_error(const struct gic_ring *r)
{
	return r->err;
}
