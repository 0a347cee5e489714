/*
 * test_idle.c — kernels/idle.h: an idle lcore polls busily, or (adaptive)
 * after GI_IDLE_SPINS_BEFORE_SLEEP empty polls sleeps 5 µs, doubling each
 * time up to the cap (200 µs) and never past it, each sleep bounded by the
 * caller's max_ns (the time to a batch deadline: gi_idle_sleep_ns); work
 * resets it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernels/idle.h"

static void spin_to_first_sleep(struct gi_idle *i)
{
	for (uint32_t k = 0; k + 1 < GI_IDLE_SPINS_BEFORE_SLEEP; k++) {
		gi_idle_empty(i, UINT64_MAX);
		assert_int_equal(i->sleep_ns, GI_IDLE_MIN_SLEEP_NS); /* no sleep yet */
	}
}

static void test_busy_never_sleeps(void **state)
{
	(void)state;
	struct gi_idle i;
	gi_idle_init(&i, GI_IDLE_BUSY);
	for (uint32_t k = 0; k < 4 * GI_IDLE_SPINS_BEFORE_SLEEP; k++)
		gi_idle_empty(&i, UINT64_MAX);
	assert_int_equal(i.sleep_ns, GI_IDLE_MIN_SLEEP_NS);
}

static void test_adaptive_doubles_to_the_cap(void **state)
{
	(void)state;
	static const uint32_t want[] = { 10000, 20000, 40000, 80000, 160000, 200000, 200000, 200000 };
	struct gi_idle i;
	gi_idle_init(&i, GI_IDLE_ADAPTIVE);
	spin_to_first_sleep(&i);
	uint64_t t0 = gi_now_ns();
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		gi_idle_empty(&i, UINT64_MAX); /* sleeps the previous length */
		assert_int_equal(i.sleep_ns, want[k]);
		assert_true(i.sleep_ns <= GI_IDLE_MAX_SLEEP_NS);
	}
	/* it did sleep: 5 + 10 + ... + 160 + 200 + 200 µs at least */
	assert_true(gi_now_ns() - t0 >= 715000u);
	gi_idle_work(&i);
	assert_int_equal(i.sleep_ns, GI_IDLE_MIN_SLEEP_NS);
	assert_int_equal(i.empty, 0);
}

static void test_max_ns_bounds_the_sleep(void **state)
{
	(void)state;
	struct gi_idle i;
	gi_idle_init(&i, GI_IDLE_ADAPTIVE);
	spin_to_first_sleep(&i);
	/* a deadline now: no sleep, and the length does not grow */
	gi_idle_empty(&i, 0);
	assert_int_equal(i.sleep_ns, GI_IDLE_MIN_SLEEP_NS);
	assert_int_equal(gi_idle_sleep_ns(&i, 1000), 1000); /* 1 µs, not 5 */
	gi_idle_empty(&i, 1000);
	assert_int_equal(i.sleep_ns, 2 * GI_IDLE_MIN_SLEEP_NS); /* the next may be 10 */
	/* at the cap: a deadline in 1 µs sleeps 1 µs, none sleeps 200 */
	while (i.sleep_ns < GI_IDLE_MAX_SLEEP_NS)
		gi_idle_empty(&i, 1000);
	assert_int_equal(gi_idle_sleep_ns(&i, 1000), 1000);
	assert_int_equal(gi_idle_sleep_ns(&i, UINT64_MAX), GI_IDLE_MAX_SLEEP_NS);
	gi_idle_empty(&i, 1000);
	assert_int_equal(i.sleep_ns, GI_IDLE_MAX_SLEEP_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_never_sleeps),
		cmocka_unit_test(test_adaptive_doubles_to_the_cap),
		cmocka_unit_test(test_max_ns_bounds_the_sleep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
