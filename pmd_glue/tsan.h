/*
 * tsan.h — happens-before edges ThreadSanitizer cannot see by itself.
 *
 * Debian's DPDK is not instrumented, so the synchronisation inside
 * rte_eal_remote_launch() and rte_eal_mp_wait_lcore() (atomics in
 * librte_eal) is invisible to a -Db_sanitize=thread build: everything the
 * main thread set up before launching an lcore would look racy.  The
 * launcher releases the lcore's state, the lcore acquires it on entry (and
 * the reverse on return).  No-ops in any other build.
 *
 * Any thread.
 */
#ifndef GI_TSAN_H
#define GI_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define GI_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GI_TSAN 1
#endif
#endif

#ifdef GI_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define GI_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define GI_TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define GI_TSAN_ACQUIRE(p) ((void)(p))
#define GI_TSAN_RELEASE(p) ((void)(p))
#endif

#endif /* GI_TSAN_H */
