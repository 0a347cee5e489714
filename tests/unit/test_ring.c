/*
 * test_ring.c — the batch ring: layout, full/empty edges, and a two-thread
 * stress (one producer, one consumer, millions of slots through a small
 * ring): every slot arrives once, in order, with the contents written
 * before its doorbell.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/ring.h"

#define STRESS_SLOTS 3000000ull

static struct gi_batch_ring *ring_new(uint32_t size, uint32_t max_pkts)
{
	uint64_t bytes = gi_ring_bytes(size, max_pkts, 0);
	struct gi_batch_ring *r = aligned_alloc(64, GI_ALIGN_UP(bytes, 64));
	memset(r, 0, bytes);
	assert_int_equal(gi_ring_init(r, size, max_pkts, 0), 0);
	return r;
}

static void test_init_rejects(void **state)
{
	(void)state;
	static uint8_t mem[65536] __attribute__((aligned(64)));
	struct gi_batch_ring *r = (struct gi_batch_ring *)mem;
	assert_int_not_equal(gi_ring_init(r, 0, 8, 0), 0);
	assert_int_not_equal(gi_ring_init(r, 6, 8, 0), 0);
	assert_int_not_equal(gi_ring_init(r, 8, 0, 0), 0);
	assert_int_not_equal(gi_ring_init(r, 8, GI_RING_MAX_PKTS + 1, 0), 0);
	assert_int_equal(gi_ring_init(r, 8, 3, 0), 0);
	assert_int_equal(r->slot_stride % 64, 0);
	assert_true(r->slot_stride >= 32 + 3 * 12);
}

static void test_full_and_empty(void **state)
{
	(void)state;
	struct gi_batch_ring *r = ring_new(4, 16);
	uint64_t head = 0, tail = 0;

	assert_int_equal(gi_ring_pending(r, tail), 0);
	for (; head < 4; head++) {
		assert_true(gi_ring_has_room(r, head));
		gi_ring_publish(r, head);
	}
	assert_false(gi_ring_has_room(r, head));
	assert_int_equal(gi_ring_pending(r, tail), 4);
	assert_int_equal(gi_ring_occupancy(r), 4);
	gi_ring_complete(r, tail++);
	assert_true(gi_ring_has_room(r, head));
	assert_int_equal(gi_ring_occupancy(r), 3);
	/* slots wrap: index 4 is slot 0 */
	assert_ptr_equal(gi_ring_slot(r, 4), gi_ring_slot(r, 0));
	assert_ptr_not_equal(gi_ring_slot(r, 1), gi_ring_slot(r, 0));
	assert_true((uint8_t *)gi_slot_len(gi_ring_slot(r, 3), 16) + 16 * 4 <= (uint8_t *)r + r->ring_bytes);
	free(r);
}

struct stress {
	struct gi_batch_ring *r;
	uint64_t bad;
	uint64_t seen;
};

static void *producer(void *arg)
{
	struct stress *s = arg;
	struct gi_batch_ring *r = s->r;
	for (uint64_t head = 0; head < STRESS_SLOTS; head++) {
		while (!gi_ring_has_room(r, head))
			sched_yield(); /* the consumer may share this core (a busy CI box): let it run */
		struct gi_batch_slot *slot = gi_ring_slot(r, head);
		uint32_t n = (uint32_t)(head % r->max_pkts) + 1;
		uint64_t *addr = gi_slot_addr(slot);
		uint32_t *len = gi_slot_len(slot, r->max_pkts);
		slot->n_pkts = n;
		slot->batch_seq = head;
		for (uint32_t i = 0; i < n; i++) {
			addr[i] = head * 1000 + i;
			len[i] = (uint32_t)(head ^ i);
		}
		gi_ring_publish(r, head);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct stress *s = arg;
	struct gi_batch_ring *r = s->r;
	uint64_t tail = 0;
	while (tail < STRESS_SLOTS) {
		uint64_t pending = gi_ring_pending(r, tail);
		if (!pending)
			sched_yield();
		for (; pending; pending--, tail++) {
			struct gi_batch_slot *slot = gi_ring_slot(r, tail);
			uint64_t *addr = gi_slot_addr(slot);
			uint32_t *len = gi_slot_len(slot, r->max_pkts);
			uint32_t n = (uint32_t)(tail % r->max_pkts) + 1;
			if (slot->batch_seq != tail || slot->n_pkts != n)
				s->bad++;
			for (uint32_t i = 0; i < slot->n_pkts && i < r->max_pkts; i++)
				if (addr[i] != tail * 1000 + i || len[i] != (uint32_t)(tail ^ i))
					s->bad++;
			s->seen++;
			gi_ring_complete(r, tail);
		}
	}
	return NULL;
}

static void test_two_thread_stress(void **state)
{
	(void)state;
	struct stress s = { .r = ring_new(8, 5) };
	pthread_t p, c;

	pthread_create(&c, NULL, consumer, &s);
	pthread_create(&p, NULL, producer, &s);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	assert_int_equal(s.bad, 0);
	assert_true(s.seen == STRESS_SLOTS);
	assert_true(GI_LOAD_ACQUIRE_U64(&s.r->head) == STRESS_SLOTS);
	assert_true(GI_LOAD_ACQUIRE_U64(&s.r->tail) == STRESS_SLOTS);
	free(s.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_rejects),
		cmocka_unit_test(test_full_and_empty),
		cmocka_unit_test(test_two_thread_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
