/*
 * frame_wake.h — wake consumers sleeping on a frame ring (host only).
 *
 * The protocol is in frame.h (wake_seq, struct gi_frame_wake).  The waker
 * is whoever makes frames visible to consumers: a host executor worker
 * after each batch and tick (gi_stream_wake on the streams it owns), the
 * CUDA launcher thread (launch mode) or waker thread (persistent mode) as
 * it sees the GPU move the mirror's next_frame, and the daemon when it
 * closes a ring (gi_frame_wake_now).  One system call per ring and batch
 * that published frames, none when nobody sleeps.
 */
#ifndef GI_FRAME_WAKE_H
#define GI_FRAME_WAKE_H

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "frame.h"
#include "stream.h"

/*
 * Consumers see whatever was stored before this: bump the word, wake
 * sleepers if any.  Returns how many were woken (tests), 0 without a call;
 * *count (if given) is the sleepers' count as read, 0 without one.
 */
static inline long gi_frame_wake_now_n(struct gi_frame_ring_hdr *h, uint32_t *waiters, uint32_t *count)
{
	__atomic_add_fetch(&h->wake_seq, 1, __ATOMIC_SEQ_CST);
	uint32_t n = waiters ? __atomic_load_n(waiters, __ATOMIC_SEQ_CST) : 0;
	if (count)
		*count = n;
	return n ? syscall(SYS_futex, &h->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) : 0;
}

static inline long gi_frame_wake_now(struct gi_frame_ring_hdr *h, uint32_t *waiters)
{
	return gi_frame_wake_now_n(h, waiters, NULL);
}

/*
 * The header consumers read: the ring itself, or its shared-memory mirror
 * when the ring is in GPU memory (written there by the kernels).
 */
static inline struct gi_frame_ring_hdr *gi_stream_consumer_hdr(const struct gi_stream_rt *st)
{
	return st->mirror ? st->mirror : st->ring;
}

/*
 * Consumers write the sleepers' count; the daemon only takes it as a hint
 * (frame.h).  A count no set of consumers could reach, or one that stays
 * up while FUTEX_WAKE finds nobody, is a consumer's fault: counted here
 * (gpuingest_consumer_faults_total; the main thread logs each kind once),
 * and costs one system call per publication, nothing more.  One writer:
 * the thread that wakes the stream's consumers.
 */
static inline void gi_stream_wake_audit(struct gi_stream_rt *st, uint32_t count, long woken)
{
	if (count > GI_FRAME_WAITERS_PLAUSIBLE)
		GI_COUNTER_ADD(&st->consumer_faults[GI_CFAULT_WAITERS_IMPLAUSIBLE], 1);
	if (woken > 0) {
		st->wake_misses = 0;
	} else if (++st->wake_misses == GI_FRAME_WAKE_STALE) {
		GI_COUNTER_ADD(&st->consumer_faults[GI_CFAULT_WAITERS_STALE], 1);
	}
}

/*
 * After the stream's frames moved: wake its consumers once if next_frame
 * did.  1 when it moved (a poller's sign of work), else 0.
 */
static inline int gi_stream_wake(struct gi_stream_rt *st)
{
	struct gi_frame_ring_hdr *h = gi_stream_consumer_hdr(st);
	uint64_t next = __atomic_load_n(&h->next_frame, __ATOMIC_ACQUIRE);
	if (next == st->wake_next)
		return 0;
	st->wake_next = next;
	uint32_t count;
	long woken = gi_frame_wake_now_n(h, st->waiters, &count);
	if (count)
		gi_stream_wake_audit(st, count, woken);
	return 1;
}

#endif /* GI_FRAME_WAKE_H */
