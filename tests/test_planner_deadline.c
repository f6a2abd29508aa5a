/* The time limit stops every greedy pass, the first one included: with no complete plan the
 * call is refused with TP_ERR_TIMEOUT (the message says the limit was reached, the report
 * says timed_out, nothing is left in the offsets); with one, the best plan so far is
 * returned. Statuses are asserted, never timings: a limit of a nanosecond has always passed
 * by the first check, and one of ten minutes never does in these tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/clock.h"
#include "planner/planner_internal.h"
#include "support/xorshift.h"

#include "tensorplan/planner.h"

static tpt_rng rng;

static size_t below(size_t n) { return (size_t)(tpt_rng_next(&rng) % n); }

#define MILLION 1000000

/* A million buffers `id,0,1000000,size`: every one live at every node. */
static tp_tensor_lifetime *all_overlapping(size_t n, size_t *sum)
{
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    *sum = 0;
    for (size_t i = 0; i < n; i++) {
        t[i] = (tp_tensor_lifetime){ ((size_t)1 << (6 + below(15))) + 64 * below(64), 0,
                                     MILLION - 1 };
        *sum += t[i].size;
    }
    return t;
}

static void expect_timeout(const tp_tensor_lifetime *t, size_t n, tp_plan_strategy strategy,
                           const size_t *alignments)
{
    size_t *off = malloc(n * sizeof *off);
    for (size_t i = 0; i < n; i++)
        off[i] = 7;
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.strategy = strategy;
    o.time_limit_seconds = 1e-9;
    o.alignments = alignments;
    tp_plan_report rep;
    size_t arena = 99;
    assert_int_equal(tp_plan_offsets_ex(t, n, &o, off, &arena, &rep), TP_ERR_TIMEOUT);
    assert_non_null(strstr(tp_last_error(), "time limit"));
    assert_true(rep.timed_out);
    assert_int_equal(arena, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(off[i], 0);
    free(off);
}

static void test_a_million_all_overlapping_buffers_stop_at_the_limit(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(1);
    size_t sum = 0;
    tp_tensor_lifetime *t = all_overlapping(MILLION, &sum);
    expect_timeout(t, MILLION, TP_PLAN_GREEDY, NULL);
    expect_timeout(t, MILLION, TP_PLAN_PORTFOLIO, NULL);
    expect_timeout(t, MILLION, TP_PLAN_EXACT, NULL);

    /* a limit that does not run out: the plan, whose arena is the sum of the sizes (every
     * buffer conflicts with every other, and the greedy leaves no gap between them) */
    size_t *off = malloc(MILLION * sizeof *off), arena = 0;
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.time_limit_seconds = 600;
    tp_plan_report rep;
    assert_int_equal(tp_plan_offsets_ex(t, MILLION, &o, off, &arena, &rep), TP_OK);
    assert_false(rep.timed_out);
    assert_int_equal(arena, sum);
    free(off);
    free(t);
}

/* Random lifetimes: each pass behind tp_greedy_place, given a deadline that has passed,
 * stops with TP_ERR_TIMEOUT and leaves every offset 0. */
static void test_every_pass_stops_at_its_deadline(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(2);
    const size_t n = 5000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *order = malloc(n * sizeof *order), *off = malloc(n * sizeof *off);
    size_t *lo = malloc(n * sizeof *lo), *hi = malloc(n * sizeof *hi);
    for (size_t i = 0; i < n; i++) {
        const size_t first = below(n);
        t[i] = (tp_tensor_lifetime){ 1 + below(4096), first, first + below(n / 4) };
        order[i] = i;
    }
    const tp_greedy_ticker past = { NULL, NULL, tp_clock_seconds() - 1 };
    size_t arena = 5;
    for (size_t i = 0; i < n; i++)
        off[i] = 3;
    assert_int_equal(tp_tree_place(t, n, order, n, 1, TP_GAP_BEST_FIT, &past, off, &arena),
                     TP_ERR_TIMEOUT);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(off[i], 0);

    tp_leaf_ranks ranks = { lo, hi, 0 };
    assert_int_equal(tp_lifetime_ranks(t, order, n, lo, hi, &ranks.n_leaves), TP_OK);
    const tp_bucket_shape shape = { 4, SIZE_MAX };
    assert_int_equal(
        tp_bucket_place(t, n, order, n, &ranks, &shape, 1, TP_GAP_BEST_FIT, &past, off, &arena),
        TP_ERR_TIMEOUT);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(off[i], 0);

    int declined = 0;
    for (unsigned threads = 1; threads <= 2; threads++) {
        assert_int_equal(tp_scan_place(t, n, order, n, 1, TP_GAP_BEST_FIT, &past, threads,
                                       TP_SCAN_GENERIC, off, &arena, &declined),
                         TP_ERR_TIMEOUT);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(off[i], 0);
    }

    /* per-tensor alignments: the general pass */
    size_t *align = malloc(n * sizeof *align);
    for (size_t i = 0; i < n; i++)
        align[i] = 1 + below(3);
    expect_timeout(t, n, TP_PLAN_PORTFOLIO, align);
    free(align);
    free(t);
    free(order);
    free(off);
    free(lo);
    free(hi);
}

/* The clique pass checks its deadline too (every 65,536 tensors). */
static void test_the_clique_pass_stops_at_its_deadline(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(3);
    const size_t n = 70000;
    size_t sum = 0;
    tp_tensor_lifetime *t = all_overlapping(n, &sum);
    size_t *order = malloc(n * sizeof *order), *off = malloc(n * sizeof *off), arena = 1;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    const tp_greedy_ticker past = { NULL, NULL, tp_clock_seconds() - 1 };
    assert_int_equal(tp_clique_place(t, n, order, n, 1, &past, off, &arena), TP_ERR_TIMEOUT);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(off[i], 0);
    const tp_greedy_ticker later = { NULL, NULL, tp_clock_seconds() + 600 };
    assert_int_equal(tp_clique_place(t, n, order, n, 1, &later, off, &arena), TP_OK);
    assert_int_equal(arena, sum);
    free(t);
    free(order);
    free(off);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_million_all_overlapping_buffers_stop_at_the_limit),
        cmocka_unit_test(test_every_pass_stops_at_its_deadline),
        cmocka_unit_test(test_the_clique_pass_stops_at_its_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
