/*
 * test_consumer.c — libgpuingest (client/consumer.c) against rings made the
 * daemon's way: gi_shm_create() (ring in /dev/shm + sealed wake object),
 * gi_frame_ring_init(), the daemon's wake socket (daemon/wake_server.c)
 * and its waker gi_frame_wake_now().  The
 * test plays the executor with publish(): a slot's seq odd, its header,
 * bitmap and payload, seq even, then next_frame and the wake.
 *
 * Covered: open errors (missing ring, bad names, another ring version, a
 * ring of another stream), next with and without a timeout, metadata and
 * bitmap, frames the daemon skipped, an overrun found while reading and by
 * gic_copy, a lapped consumer, a consumer that joins a running ring late
 * (it starts at the oldest frame the ring holds: no overruns for what came
 * before it), skip-to-newest and GIC_OPEN_LATEST, close,
 * a removed ring (restart), the futex wake (the waker finds the sleeper:
 * FUTEX_WAKE reports one woken), polling without the wake object, and the
 * wake socket: it refuses requests without proof of the ring, and what it
 * hands out cannot be resized (the seals).  Every name is this process's
 * own: nothing another run left in /dev/shm changes an outcome.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/wake_server.h"
#include "gpuingest/consumer.h"
#include "kernels/frame_wake.h"
#include "pmd_glue/shm.h"

#define SLOTS 4
#define PACKETS 70 /* two bitmap words */
#define PAYLOAD 64

struct ring_fixture {
	char name[64];
	struct gi_shm shm;
	struct gi_frame_ring_hdr *h;
	struct gic_ring *r;
	struct gi_wake_server *ws;
	uint64_t token;
};

static int setup(void **state)
{
	static unsigned n;
	struct ring_fixture *fx = calloc(1, sizeof(*fx));
	snprintf(fx->name, sizeof(fx->name), "/gi-test-consumer-%d-%u", (int)getpid(), n++);
	size_t len = gi_frame_ring_bytes(SLOTS, PACKETS, PAYLOAD);
	assert_int_equal(gi_shm_create(&fx->shm, fx->name, len, 0640, 12345), 0);
	fx->h = fx->shm.va;
	/* the last packet is short: 69 * 64 + 10 bytes */
	gi_frame_ring_init(fx->h, SLOTS, PACKETS, PAYLOAD, 69 * PAYLOAD + 10, 1, 0, "cam0", 12345);
	/* the daemon's wake socket, named by a token of this run */
	assert_int_equal(getrandom(&fx->token, sizeof(fx->token), 0), (ssize_t)sizeof(fx->token));
	fx->token |= 1;
	assert_int_equal(gi_wake_server_start(&fx->ws, fx->token), 0);
	assert_int_equal(gi_wake_server_add(fx->ws, fx->shm.fd, fx->shm.wake_fd, "cam0"), 0);
	fx->h->wake_token = fx->token;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct ring_fixture *fx = *state;
	gic_close(fx->r);
	gi_wake_server_stop(fx->ws);
	gi_shm_destroy(&fx->shm, 1);
	free(fx);
	return 0;
}

static void open_ok(struct ring_fixture *fx, unsigned flags)
{
	char err[256];
	int rc = gic_open(&fx->r, fx->name, 0, flags, err, sizeof(err));
	if (rc != GIC_OK)
		fail_msg("gic_open: %d %s", rc, err);
}

/* The executor's side of one frame: received packets 0..received-1 (state as given). */
static void publish_slot(struct gi_frame_ring_hdr *h, uint64_t f, uint32_t state, uint32_t received)
{
	struct gi_frame_slot *s = gi_frame_slot_at(h, f);
	__atomic_store_n(&s->seq, 2 * f + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	s->frame = f;
	s->expected = PACKETS;
	s->received = received;
	s->state = state;
	s->sensor_id = 7;
	s->sensor_frame = 1000 + f;
	s->first_ts_ns = 11 * f;
	s->publish_ns = 13 * f;
	s->sender.kind = f % 2 ? GI_SENDER_HSB : GI_SENDER_NONE;
	s->sender.frame_number = 500 + f;
	s->sender.crc = 0xabcd0000u | (uint32_t)f;
	s->sender.crc_state = GI_CRC_OK;
	uint64_t *bm = gi_frame_bitmap(s);
	memset(bm, 0, 8 * gi_frame_bitmap_words(PACKETS));
	for (uint32_t i = 0; i < received; i++)
		bm[i / 64] |= 1ull << (i % 64);
	memset(gi_frame_payload(h, s), (int)(f & 0xff), h->frame_bytes);
	__atomic_store_n(&s->seq, 2 * f + 2, __ATOMIC_RELEASE);
}

/* frames < next are final; the first call starts the stream at `first` */
static long advance(struct ring_fixture *fx, uint64_t first, uint64_t next)
{
	struct gi_frame_ring_hdr *h = fx->h;
	__atomic_store_n(&h->next_frame, next, __ATOMIC_RELEASE);
	if (!h->started) {
		h->first_frame = first;
		__atomic_store_n(&h->started, 1, __ATOMIC_RELEASE);
	}
	return gi_frame_wake_now(h, gi_shm_waiters(&fx->shm));
}

static void publish(struct ring_fixture *fx, uint64_t first, uint64_t from, uint64_t to)
{
	for (uint64_t f = from; f < to; f++)
		publish_slot(fx->h, f, GI_FRAME_COMPLETE, PACKETS);
	advance(fx, first, to);
}

static void stats_identity(struct gic_ring *r)
{
	struct gic_stats s;
	gic_stats(r, &s);
	assert_int_equal(s.complete + s.partial + s.timed_out + s.corrupt + s.missing + s.overruns + s.skipped,
			 s.next_frame - s.first_frame);
	assert_int_equal(s.frames, s.complete + s.partial + s.timed_out + s.corrupt);
}

static void test_open_errors(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_ring *r = NULL;
	char err[256];

	char none[96];
	snprintf(none, sizeof(none), "%s-none", fx->name);
	assert_int_equal(gic_open(&r, none, 0, 0, err, sizeof(err)), GIC_TIMEOUT);
	assert_non_null(strstr(err, "no such frame ring"));
	assert_null(r);
	assert_int_equal(gic_open(&r, none, 50, 0, err, sizeof(err)), GIC_TIMEOUT);
	assert_int_equal(gic_open(&r, "", 0, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(gic_open(&r, "a/b", 0, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "stream name"));
	assert_int_equal(gic_open(&r, "/a/b", 0, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(gic_open(&r, fx->name, 0, 0x80, err, sizeof(err)), -EINVAL);
	/* by stream name: a name of this process's own, which no earlier run can have left behind */
	char stream[48];
	snprintf(stream, sizeof(stream), "none-%d", (int)getpid());
	assert_int_equal(gic_open(&r, stream, 0, 0, err, sizeof(err)), GIC_TIMEOUT);
	assert_non_null(strstr(err, "/gpuingest-none-"));

	/* another ring version: refused at once, both versions named */
	fx->h->version = 2;
	assert_int_equal(gic_open(&r, fx->name, 1000, 0, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "frame ring version 2"));
	char want[64];
	snprintf(want, sizeof(want), "reads version %u", GI_FRAME_VERSION);
	assert_non_null(strstr(err, want));
	fx->h->version = GI_FRAME_VERSION;
	/* damaged geometry */
	fx->h->bitmap_words = 9;
	assert_int_equal(gic_open(&r, fx->name, 0, 0, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "inconsistent header"));
	fx->h->bitmap_words = gi_frame_bitmap_words(PACKETS);
	/* no magic yet: still being made, so wait (and time out) */
	fx->h->magic = 0;
	assert_int_equal(gic_open(&r, fx->name, 30, 0, err, sizeof(err)), GIC_TIMEOUT);
	assert_non_null(strstr(err, "magic"));
	gi_frame_ring_publish_hdr(fx->h);
	assert_null(r);
	/* slots x stride past 64 bits: refused, not wrapped to a mapping smaller than its slots */
	struct gi_frame_ring_hdr keep = *fx->h;
	fx->h->packets_per_frame = GI_FRAME_MAX_PACKETS;
	fx->h->payload_bytes = 0x80000000u;
	fx->h->bitmap_words = gi_frame_bitmap_words(GI_FRAME_MAX_PACKETS);
	fx->h->payload_off = gi_frame_payload_off(GI_FRAME_MAX_PACKETS);
	fx->h->frame_bytes = (uint64_t)GI_FRAME_MAX_PACKETS * 0x80000000u;
	fx->h->slot_stride = gi_frame_slot_stride(GI_FRAME_MAX_PACKETS, 0x80000000u);
	fx->h->n_slots = 1u << 18;
	assert_int_equal(gic_open(&r, fx->name, 0, 0, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "inconsistent header (262144 slots of"));
	assert_null(r);
	*fx->h = keep;
}

/*
 * The header's geometry is read once, as validated at open: an owner that
 * rewrites it afterwards (the object is the daemon's, or whoever made it
 * first) cannot make the library read or copy past its buffers or mapping.
 */
static void test_header_rewritten_after_open(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	static uint8_t buf[PACKETS * PAYLOAD];

	open_ok(fx, 0);
	publish_slot(fx->h, 0, GI_FRAME_COMPLETE, PACKETS);
	publish_slot(fx->h, 1, GI_FRAME_COMPLETE, PACKETS);
	advance(fx, 0, 2);
	struct gi_frame_ring_hdr keep = *fx->h;
	fx->h->bitmap_words = 4096;
	fx->h->frame_bytes = 1ull << 40;
	fx->h->n_slots = 1;
	fx->h->slot_stride = 1ull << 40;
	fx->h->payload_off = 1ull << 40;
	for (uint64_t k = 0; k < 2; k++) {
		assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
		assert_int_equal(f.frame, k);
		assert_int_equal(f.bytes, 69 * PAYLOAD + 10);
		assert_int_equal(f.bitmap_words, gi_frame_bitmap_words(PACKETS));
		assert_int_equal(gic_valid(fx->r, &f), 1);
		assert_int_equal(gic_copy(fx->r, &f, buf, sizeof(buf)), GIC_OK);
		assert_int_equal(buf[0], k);
		assert_int_equal(buf[69 * PAYLOAD + 9], k);
	}
	*fx->h = keep;
	stats_identity(fx->r);
}

/* A stream name opens /gpuingest-NAME and must be that stream's ring. */
static void test_open_by_stream_name(void **state)
{
	(void)state;
	struct gi_shm shm;
	struct gic_ring *r = NULL;
	char err[256], stream[48], shm_name[64];
	snprintf(stream, sizeof(stream), "t%d", (int)getpid());
	snprintf(shm_name, sizeof(shm_name), "/gpuingest-%s", stream);
	assert_int_equal(gi_shm_create(&shm, shm_name, gi_frame_ring_bytes(2, 1, 64), 0640, 1), 0);
	gi_frame_ring_init(shm.va, 2, 1, 64, 0, 1, 0, "other", 1);
	assert_int_equal(gic_open(&r, stream, 0, 0, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "belongs to stream 'other'"));
	struct gi_frame_ring_hdr *h = shm.va;
	snprintf(h->stream_name, sizeof(h->stream_name), "%s", stream);
	assert_int_equal(gic_open(&r, stream, 0, 0, err, sizeof(err)), GIC_OK);
	assert_string_equal(gic_info(r)->stream, stream);
	assert_string_equal(gic_info(r)->shm, shm_name);
	gic_close(r);
	gi_shm_destroy(&shm, 1);
}

static void test_next_and_metadata(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	open_ok(fx, 0);
	const struct gic_ring_info *in = gic_info(fx->r);
	assert_int_equal(in->ring_version, GI_FRAME_VERSION);
	assert_int_equal(in->n_slots, SLOTS);
	assert_int_equal(in->packets, PACKETS);
	assert_int_equal(in->frame_bytes, 69 * PAYLOAD + 10);
	assert_int_equal(in->in_device, 0);
	assert_int_equal(in->cuda_device, -1);
	assert_int_equal(in->wake, 1);

	/* not started: nothing, without waiting and with */
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_TIMEOUT);
	assert_int_equal(gic_next(fx->r, &f, 20), GIC_TIMEOUT);

	publish_slot(fx->h, 100, GI_FRAME_COMPLETE, PACKETS);
	publish_slot(fx->h, 101, GI_FRAME_PARTIAL, 65);
	advance(fx, 100, 102);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 100);
	assert_int_equal(f.sensor_frame, 1100);
	assert_int_equal(f.sensor_id, 7);
	assert_int_equal(f.state, GIC_FRAME_COMPLETE);
	assert_int_equal(f.expected, PACKETS);
	assert_int_equal(f.received, PACKETS);
	assert_int_equal(f.bytes, 69 * PAYLOAD + 10);
	assert_int_equal(f.payload_bytes, PAYLOAD);
	assert_int_equal(f.bitmap_words, 2);
	assert_int_equal(f.first_ts_ns, 1100);
	assert_int_equal(f.publish_ns, 1300);
	assert_int_equal(f.sender.kind, GIC_SENDER_NONE);
	assert_int_equal(f.dev_ptr, 0);
	/* zero copy: the bytes are the ring slot's (another mapping of it): a store there shows */
	uint8_t *slot_payload = gi_frame_payload(fx->h, gi_frame_slot_at(fx->h, 100));
	assert_int_equal(((const volatile uint8_t *)f.data)[f.bytes - 1], 100);
	slot_payload[f.bytes - 1] = 0x5a;
	assert_int_equal(((const volatile uint8_t *)f.data)[f.bytes - 1], 0x5a);
	slot_payload[f.bytes - 1] = 100;
	assert_true(gic_packet_present(&f, 69));
	assert_false(gic_packet_present(&f, 70));
	assert_true(gic_valid(fx->r, &f));

	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 101);
	assert_int_equal(f.state, GIC_FRAME_PARTIAL);
	assert_int_equal(f.received, 65);
	assert_true(gic_packet_present(&f, 64));
	assert_false(gic_packet_present(&f, 65));
	assert_int_equal(f.sender.kind, GIC_SENDER_HSB);
	assert_int_equal(f.sender.frame_number, 601);
	assert_int_equal(f.sender.crc, 0xabcd0065u);
	assert_int_equal(f.sender.crc_state, GIC_CRC_OK);
	uint8_t copy[69 * PAYLOAD + 10];
	assert_int_equal(gic_copy(fx->r, &f, copy, sizeof(copy) - 1), -ENOSPC);
	assert_int_equal(gic_copy(fx->r, &f, copy, sizeof(copy)), GIC_OK);
	assert_memory_equal(copy, f.data, sizeof(copy));

	assert_int_equal(gic_next(fx->r, &f, 0), GIC_TIMEOUT);
	struct gic_stats s;
	gic_stats(fx->r, &s);
	assert_int_equal(s.started, 1);
	assert_int_equal(s.first_frame, 100);
	assert_int_equal(s.next_frame, 102);
	assert_int_equal(s.complete, 1);
	assert_int_equal(s.partial, 1);
	stats_identity(fx->r);
}

/* Frame numbers the daemon never filled (no packet arrived) are counted and passed over. */
static void test_missing_frames(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	open_ok(fx, 0);
	publish_slot(fx->h, 0, GI_FRAME_COMPLETE, PACKETS);
	publish_slot(fx->h, 3, GI_FRAME_TIMED_OUT, 1);
	advance(fx, 0, 4);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 0);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 3);
	assert_int_equal(f.state, GIC_FRAME_TIMED_OUT);
	struct gic_stats s;
	gic_stats(fx->r, &s);
	assert_int_equal(s.missing, 2);
	assert_int_equal(s.timed_out, 1);
	assert_int_equal(s.protocol_errors, 0);
	stats_identity(fx->r);
}

/* The daemon reuses a slot while the consumer holds its frame. */
static void test_overrun_while_reading(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	uint8_t copy[69 * PAYLOAD + 10];
	open_ok(fx, 0);
	publish(fx, 0, 0, 2);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 0);
	publish_slot(fx->h, SLOTS, GI_FRAME_COMPLETE, PACKETS); /* frame 4 takes frame 0's slot */
	assert_false(gic_valid(fx->r, &f));
	assert_false(gic_valid(fx->r, &f)); /* counted once */
	assert_int_equal(gic_copy(fx->r, &f, copy, sizeof(copy)), GIC_OVERRUN);
	struct gic_stats s;
	gic_stats(fx->r, &s);
	assert_int_equal(s.overruns, 1);
	assert_int_equal(s.complete, 0);
	assert_int_equal(s.frames, 0);

	/* and one found by gic_copy first */
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 1);
	publish_slot(fx->h, SLOTS + 1, GI_FRAME_COMPLETE, PACKETS);
	assert_int_equal(gic_copy(fx->r, &f, copy, sizeof(copy)), GIC_OVERRUN);
	assert_false(gic_valid(fx->r, &f));
	gic_stats(fx->r, &s);
	assert_int_equal(s.overruns, 2);
	stats_identity(fx->r);
}

/* A consumer a whole ring behind resumes at the oldest frame that can still be there. */
static void test_lapped(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	open_ok(fx, 0);
	publish(fx, 10, 10, 10 + 3 * SLOTS);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 10 + 3 * SLOTS - SLOTS + 1);
	struct gic_stats s;
	gic_stats(fx->r, &s);
	assert_int_equal(s.overruns, 2 * SLOTS + 1);
	while (gic_next(fx->r, &f, 0) == GIC_OK)
		;
	assert_int_equal(f.frame, 10 + 3 * SLOTS - 1);
	stats_identity(fx->r);
}

/*
 * A consumer that opens a ring already running, far past its first frame,
 * starts at the oldest frame the ring still holds: what was published
 * before it opened is none of its overruns, and it reads every frame the
 * ring holds but the one whose slot frame next_frame takes (a live daemon
 * fills it with its next packet).  What the ring laps after it opened is
 * its overrun again.
 */
static void test_late_join(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	struct gic_stats s;
	uint64_t next = 10 + 10 * SLOTS, read = 0;
	publish(fx, 10, 10, next);
	open_ok(fx, 0);
	while (gic_next(fx->r, &f, 0) == GIC_OK) {
		assert_int_equal(f.frame, next - SLOTS + 1 + read);
		read++;
	}
	assert_int_equal(read, SLOTS - 1);
	gic_stats(fx->r, &s);
	assert_int_equal(s.overruns, 0);
	assert_int_equal(s.missing, 0);
	assert_int_equal(s.skipped, 0);
	assert_int_equal(s.complete, SLOTS - 1);
	assert_int_equal(s.first_frame, next - SLOTS + 1);
	assert_int_equal(s.next_frame, next);
	stats_identity(fx->r);

	/* the ring laps it after it opened: those are its overruns */
	publish(fx, 10, next, next + 2 * SLOTS);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, next + SLOTS + 1);
	gic_stats(fx->r, &s);
	assert_int_equal(s.overruns, SLOTS + 1);
	stats_identity(fx->r);
}

/*
 * A late consumer that sets up for a while before its first gic_next():
 * frames published before it opened and reused since are not counted
 * (its start moves past them); frames published after it opened and
 * lapped before it read them are its overruns.
 */
static void test_late_join_first_look(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	struct gic_stats s;
	uint64_t next = 10 * SLOTS, read = 0;
	publish(fx, 0, 0, next);
	open_ok(fx, 0);
	publish(fx, 0, next, next + 2); /* frame next + 1 takes the slot of next - SLOTS + 1, published before */
	while (gic_next(fx->r, &f, 0) == GIC_OK) {
		assert_int_equal(f.frame, next - SLOTS + 3 + read);
		read++;
	}
	assert_int_equal(read, SLOTS - 1);
	gic_stats(fx->r, &s);
	assert_int_equal(s.overruns, 0);
	assert_int_equal(s.first_frame, next - SLOTS + 3);
	stats_identity(fx->r);
	gic_close(fx->r);

	/* two rings' worth after it opened, before it looked: those are overruns, the older ones nothing */
	uint64_t open_next = next + 2;
	open_ok(fx, 0);
	publish(fx, 0, open_next, open_next + 2 * SLOTS);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, open_next + SLOTS + 1);
	gic_stats(fx->r, &s);
	assert_int_equal(s.first_frame, open_next);
	assert_int_equal(s.overruns, SLOTS + 1);
	stats_identity(fx->r);
}

/*
 * The daemon already fills frame next_frame + 1 (reorder window 2) when the
 * consumer opens: that slot's older frame was gone before, no overrun.
 */
static void test_late_join_slot_already_refilled(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	struct gic_stats s;
	uint64_t next = 10 * SLOTS, read = 0;
	publish(fx, 0, 0, next);
	__atomic_store_n(&gi_frame_slot_at(fx->h, next + 1)->seq, 2 * (next + 1) + 1, __ATOMIC_RELEASE);
	open_ok(fx, 0);
	while (gic_next(fx->r, &f, 0) == GIC_OK) {
		assert_int_equal(f.frame, next - SLOTS + 2 + read);
		read++;
	}
	assert_int_equal(read, SLOTS - 2);
	gic_stats(fx->r, &s);
	assert_int_equal(s.overruns, 0);
	assert_int_equal(s.first_frame, next - SLOTS + 2);
	stats_identity(fx->r);
}

static void test_skip_to_newest(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	open_ok(fx, 0);
	assert_int_equal(gic_skip_to_newest(fx->r), 0); /* not started: applies at the start */
	publish(fx, 0, 0, 3);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 2);
	publish(fx, 0, 3, 6);
	assert_int_equal(gic_skip_to_newest(fx->r), 2);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 5);
	assert_int_equal(gic_skip_to_newest(fx->r), 0);
	struct gic_stats s;
	gic_stats(fx->r, &s);
	assert_int_equal(s.skipped, 4);
	assert_int_equal(s.complete, 2);
	stats_identity(fx->r);
}

static void test_open_latest(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	publish(fx, 0, 0, 3);
	open_ok(fx, GIC_OPEN_LATEST);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 2);
	stats_identity(fx->r);
}

/* Opened late with GIC_OPEN_LATEST: the newest frame; it passed over what the ring held, nothing before. */
static void test_open_latest_late(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	struct gic_stats s;
	publish(fx, 0, 0, 10 * SLOTS);
	open_ok(fx, GIC_OPEN_LATEST);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 10 * SLOTS - 1);
	gic_stats(fx->r, &s);
	assert_int_equal(s.overruns, 0);
	assert_int_equal(s.skipped, SLOTS - 2);
	stats_identity(fx->r);
}

static void test_closed(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	open_ok(fx, 0);
	publish(fx, 0, 0, 2);
	__atomic_store_n(&fx->h->closed, 1, __ATOMIC_RELEASE);
	gi_frame_wake_now(fx->h, gi_shm_waiters(&fx->shm));
	/* the frames before the close still come, then the end */
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(gic_next(fx->r, &f, 0), GIC_OK);
	assert_int_equal(gic_next(fx->r, &f, -1), GIC_CLOSED);
	assert_int_equal(gic_next(fx->r, &f, -1), GIC_CLOSED);
}

/* The name removed without a close (the daemon restarted, or a reload reshaped the stream). */
static void test_restarted(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	open_ok(fx, 0);
	publish(fx, 0, 0, 1);
	shm_unlink(fx->name);
	assert_int_equal(gic_next(fx->r, &f, 5000), GIC_OK); /* what was published is still read */
	assert_int_equal(gic_next(fx->r, &f, 5000), GIC_RESTARTED);
}

struct waker {
	struct ring_fixture *fx;
	uint64_t frame;
	long woken;
};

/*
 * Publish one frame once the consumer has counted itself in the wake
 * object.  It may not be inside FUTEX_WAIT yet (then the wake finds nobody
 * and its wait returns at once, on the changed word): the test repeats.
 */
static void *waker_main(void *arg)
{
	struct waker *w = arg;
	uint32_t *waiters = gi_shm_waiters(&w->fx->shm);
	struct timespec ms = { 0, 1000000 };
	for (int i = 0; i < 10000 && __atomic_load_n(waiters, __ATOMIC_SEQ_CST) == 0; i++)
		nanosleep(&ms, NULL);
	nanosleep(&ms, NULL); /* from counted-in to FUTEX_WAIT: a few instructions */
	publish_slot(w->fx->h, w->frame, GI_FRAME_COMPLETE, PACKETS);
	w->woken = advance(w->fx, 0, w->frame + 1);
	return NULL;
}

static void test_futex_wake(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	long woken = 0;
	open_ok(fx, 0);
	for (uint64_t k = 0; k < 50 && woken != 1; k++) {
		struct waker w = { fx, k, 0 };
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, waker_main, &w), 0);
		assert_int_equal(gic_next(fx->r, &f, 20000), GIC_OK);
		assert_int_equal(f.frame, k);
		pthread_join(t, NULL);
		woken = w.woken;
	}
	assert_int_equal(woken, 1); /* the daemon's side saw the sleeper and woke exactly it */
	assert_int_equal(*gi_shm_waiters(&fx->shm), 0);
	struct gic_stats s;
	gic_stats(fx->r, &s);
	assert_true(s.waits >= 1);
	/* nobody asleep: no system call */
	assert_int_equal(advance(fx, 0, fx->h->next_frame), 0);
}

/* Without the wake object (a daemon without a wake socket) a consumer still gets every frame, by polling. */
static void test_poll_without_wake_object(void **state)
{
	struct ring_fixture *fx = *state;
	struct gic_frame f;
	fx->h->wake_token = 0;
	open_ok(fx, 0);
	assert_int_equal(gic_info(fx->r)->wake, 0);
	publish(fx, 0, 0, 1);
	assert_int_equal(gic_next(fx->r, &f, 5000), GIC_OK);
	assert_int_equal(gic_next(fx->r, &f, 10), GIC_TIMEOUT);
}

/* A wake object left by another run of the ring is not used. */
static void test_stale_wake_object(void **state)
{
	struct ring_fixture *fx = *state;
	fx->shm.wake->ring_created_ns = 1;
	open_ok(fx, 0);
	assert_int_equal(gic_info(fx->r)->wake, 0);
}

/* One request to the wake socket: `payload` with descriptor `fd` (-1: none); the descriptor it answers with, or -1. */
static int wake_request(uint64_t token, const void *payload, size_t len, int fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, GI_FRAME_WAKE_SOCKET_FMT, (unsigned long long)token);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)), 0);
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	memset(&cm, 0, sizeof(cm));
	struct iovec iov = { (void *)payload, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		msg.msg_control = cm.buf;
		msg.msg_controllen = sizeof(cm.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	assert_true(sendmsg(s, &msg, MSG_NOSIGNAL) >= 0);
	uint32_t reply = 0;
	struct iovec riov = { &reply, sizeof(reply) };
	struct msghdr rmsg = { .msg_iov = &riov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	int got = -1;
	if (recvmsg(s, &rmsg, MSG_CMSG_CLOEXEC) == (ssize_t)sizeof(reply) && reply == GI_FRAME_WAKE_MAGIC) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&rmsg);
		if (c && c->cmsg_type == SCM_RIGHTS)
			memcpy(&got, CMSG_DATA(c), sizeof(int));
	}
	close(s);
	return got;
}

/*
 * The wake socket hands the wake object only to who proves they read the
 * ring, and what it hands cannot be resized: the daemon reads that page on
 * every publication, and a truncated page would SIGBUS it.
 */
static void test_wake_socket(void **state)
{
	struct ring_fixture *fx = *state;
	int ro = shm_open(fx->name, O_RDONLY, 0);
	assert_true(ro >= 0);
	int w = wake_request(fx->token, GI_FRAME_WAKE_REQUEST, sizeof(GI_FRAME_WAKE_REQUEST), ro);
	assert_true(w >= 0);
	int seals = fcntl(w, F_GET_SEALS);
	assert_int_equal(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	assert_int_equal(ftruncate(w, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(w, 1 << 20), -1);
	assert_int_equal(errno, EPERM);
	close(w);
	assert_int_equal(gi_wake_server_refused(fx->ws), 0);
	/* refused: no descriptor, another file's, garbage */
	assert_int_equal(wake_request(fx->token, GI_FRAME_WAKE_REQUEST, sizeof(GI_FRAME_WAKE_REQUEST), -1), -1);
	int other = open("/dev/null", O_RDONLY);
	assert_int_equal(wake_request(fx->token, GI_FRAME_WAKE_REQUEST, sizeof(GI_FRAME_WAKE_REQUEST), other), -1);
	close(other);
	assert_int_equal(wake_request(fx->token, "GET / HTTP/1.0\r\n\r\n", 18, ro), -1);
	assert_int_equal(gi_wake_server_refused(fx->ws), 3);
	close(ro);
	/* and the consumer that asks properly gets it */
	open_ok(fx, 0);
	assert_int_equal(gic_info(fx->r)->wake, 1);
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(gic_strerror(GIC_OK), "ok");
	assert_string_equal(gic_strerror(GIC_TIMEOUT), "timeout");
	assert_string_equal(gic_strerror(GIC_CLOSED), "closed");
	assert_string_equal(gic_strerror(GIC_RESTARTED), "restarted");
	assert_string_equal(gic_strerror(GIC_OVERRUN), "overrun");
	assert_string_equal(gic_strerror(-EPROTO), strerror(EPROTO));
}

/* A ring whose stream has a tensor: block: its dtype and shape in the info, each frame's pointer into its slot. */
static void test_tensor_fields(void **state)
{
	(void)state;
	char name[64], err[256];
	snprintf(name, sizeof(name), "/gi-test-consumer-t%d", (int)getpid());
	const struct gi_frame_tensor ft = { .dtype = GI_DT_U16, .ndim = 2, .shape = { 2, 1000 },
					    .bytes = 2 * 1000 * 2, .sample = GI_TS_RAW10 };
	struct gi_shm shm;
	assert_int_equal(gi_shm_create(&shm, name, gi_frame_ring_bytes_t(SLOTS, 40, 64, ft.bytes), 0640, 1), 0);
	struct gi_frame_ring_hdr *h = shm.va;
	gi_frame_ring_init_t(h, SLOTS, 40, 64, 2500, 1, 0, "cam1", 1, &ft);
	assert_int_equal(h->tensor.off, gi_frame_tensor_off(40, 64));
	struct gic_ring *r;
	int rc = gic_open(&r, name, 0, 0, err, sizeof(err));
	if (rc != GIC_OK)
		fail_msg("gic_open: %d %s", rc, err);
	const struct gic_ring_info *in = gic_info(r);
	assert_int_equal(in->tensor_dtype, GIC_DTYPE_U16);
	assert_int_equal(in->tensor_ndim, 2);
	assert_int_equal(in->tensor_shape[0], 2);
	assert_int_equal(in->tensor_shape[1], 1000);
	struct gi_frame_slot *s = gi_frame_slot_at(h, 3);
	s->frame = 3;
	s->expected = s->received = 40;
	s->state = GI_FRAME_COMPLETE;
	__atomic_store_n(&s->seq, 8, __ATOMIC_RELEASE);
	h->first_frame = 3;
	__atomic_store_n(&h->next_frame, 4, __ATOMIC_RELEASE);
	__atomic_store_n(&h->started, 1, __ATOMIC_RELEASE);
	struct gic_frame f;
	assert_int_equal(gic_next(r, &f, 0), GIC_OK);
	assert_int_equal(f.frame, 3);
	assert_int_equal(f.tensor_dtype, GIC_DTYPE_U16);
	assert_int_equal(f.tensor_ndim, 2);
	assert_ptr_equal((const void *)(uintptr_t)f.tensor, (const uint8_t *)f.data - h->payload_off + h->tensor.off);
	gic_close(r);
	/* a record whose bytes disagree with its shape: refused, not misread */
	h->tensor.bytes = 100;
	assert_int_equal(gic_open(&r, name, 0, 0, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "inconsistent tensor record"));
	/* a shape whose bytes fill 64 bits: more than the frame's samples can convert to (the slot size would wrap) */
	h->tensor.dtype = GI_DT_U8;
	h->tensor.ndim = 3;
	h->tensor.shape[0] = 1882718194u;
	h->tensor.shape[1] = 134218241u;
	h->tensor.shape[2] = 73u;
	h->tensor.bytes = 1882718194ull * 134218241ull * 73ull;
	h->slot_stride = gi_frame_slot_stride_t(40, 64, h->tensor.bytes);
	assert_int_equal(gic_open(&r, name, 0, 0, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "inconsistent tensor record"));
	gi_shm_destroy(&shm, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
		cmocka_unit_test(test_open_by_stream_name),
		cmocka_unit_test_setup_teardown(test_header_rewritten_after_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_next_and_metadata, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overrun_while_reading, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lapped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_join, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_join_first_look, setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_join_slot_already_refilled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_skip_to_newest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_latest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_latest_late, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restarted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_futex_wake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poll_without_wake_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_wake_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wake_socket, setup, teardown),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_tensor_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
