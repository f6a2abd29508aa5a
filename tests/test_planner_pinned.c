/* The planner's threads when the process may run on one processor only (taskset -c 0): the
 * thread counts are capped by the affinity mask, an address-ordered scan told to share its
 * work between threads that cannot run side by side folds their parts into the calling
 * thread, and every plan stays the plan of the rule written out plainly. The test pins
 * itself with sched_setaffinity and restores its mask at the end. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_* */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sched.h>

#include "planner/planner_internal.h"
#include "support/offsets_simple.h"
#include "support/place_reference.h"
#include "support/xorshift.h"

#include "tensorplan/planner.h"

static tpt_rng rng;
static cpu_set_t saved;

static size_t below(size_t n) { return (size_t)(tpt_rng_next(&rng) % n); }

static int pin_to_one(void **state)
{
    (void)state;
    if (sched_getaffinity(0, sizeof saved, &saved) != 0)
        return -1;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &saved)) {
            CPU_SET(c, &one);
            break;
        }
    return sched_setaffinity(0, sizeof one, &one);
}

static int unpin(void **state)
{
    (void)state;
    return sched_setaffinity(0, sizeof saved, &saved);
}

static void test_the_planner_counts_the_processors_it_may_use(void **state)
{
    (void)state;
    assert_int_equal(tp_planner_cpus(), 1);
    assert_int_equal(tp_scan_default_threads(1u << 20), 1);
}

/* Lifetimes up to n/4 nodes: the scan's case. */
static void heavy(tp_tensor_lifetime *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const size_t first = below(n);
        t[i] = (tp_tensor_lifetime){ 64 * (1 + below(2048)), first, first + below(n / 4 + 1) };
    }
}

static void test_a_pinned_scan_on_several_threads_gives_the_plain_offsets(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(31);
    const size_t n = getenv("TP_SANITIZED") != NULL ? 2500 : 6000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *order = malloc(n * sizeof *order), *want = malloc(n * sizeof *want);
    size_t *got = malloc(n * sizeof *got);
    heavy(t, n);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    const size_t want_arena = tpt_reference_place(t, n, order, n, 64, TP_GAP_BEST_FIT, want);
    for (unsigned threads = 1; threads <= 3; threads++) {
        size_t arena = 0;
        int declined = 1;
        assert_int_equal(tp_scan_place(t, n, order, n, 64, TP_GAP_BEST_FIT, NULL, threads,
                                       TP_SCAN_AUTO, got, &arena, &declined),
                         TP_OK);
        assert_false(declined);
        assert_int_equal(arena, want_arena);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(got[i], want[i]);
    }
    free(t);
    free(order);
    free(want);
    free(got);
}

static void test_a_pinned_call_asking_for_threads_gives_the_plain_plan(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(32);
    const size_t n = getenv("TP_SANITIZED") != NULL ? 2500 : 5000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    heavy(t, n);
    size_t want_arena = 0;
    assert_int_equal(tp_plan_offsets_simple(t, n, want, &want_arena), TP_OK);
    for (unsigned threads = 0; threads <= 4; threads++) {
        tp_plan_options o;
        tp_plan_options_init(&o);
        o.threads = threads;
        size_t arena = 0;
        assert_int_equal(tp_plan_offsets_ex(t, n, &o, got, &arena, NULL), TP_OK);
        assert_int_equal(arena, want_arena);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(got[i], want[i]);
    }
    free(t);
    free(want);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_planner_counts_the_processors_it_may_use),
        cmocka_unit_test(test_a_pinned_scan_on_several_threads_gives_the_plain_offsets),
        cmocka_unit_test(test_a_pinned_call_asking_for_threads_gives_the_plain_plan),
    };
    return cmocka_run_group_tests(tests, pin_to_one, unpin);
}
