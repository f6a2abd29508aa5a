/* The fast greedy must reproduce the straightforward greedy offset for offset. The
 * straightforward one is the oracle here; the overlap check is written in this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/xorshift.h"

#include "support/offsets_oracle.h"
#include "support/place_reference.h"

#include "planner/planner_internal.h"
#include "support/offsets_simple.h"
#include "tensorplan/planner.h"

/* The seed's xorshift64*; each test sets rng.state to its own starting value. */
static tpt_rng rng;

static uint64_t next_u64(void) { return tpt_rng_next(&rng); }

static size_t below(size_t n) { return (size_t)(next_u64() % n); }

static int sanitized(void) { return getenv("TP_SANITIZED") != NULL; }


/* kind 0: short local lifetimes; 1: long lifetimes; 2: mixed; sizes drawn from few values
 * so that ties are common, with zero sizes. */
static void random_instance(tp_tensor_lifetime *t, size_t n, int kind)
{
    size_t horizon = 1 + below(3 * n + 1);
    size_t distinct = 1 + below(6);
    for (size_t i = 0; i < n; i++) {
        size_t first = below(horizon);
        size_t len;
        if (kind == 0)
            len = below(4);
        else if (kind == 1)
            len = below(horizon + 1);
        else
            len = below(3) == 0 ? below(horizon + 1) : below(3);
        size_t size;
        switch (below(4)) {
        case 0: size = below(8) == 0 ? 0 : 1 + below(distinct) * 16; break;
        case 1: size = 1 + below(1000); break;
        default: size = (1 + below(distinct)) * 64; break;
        }
        if (below(10) == 0)
            size = 0;
        t[i] = (tp_tensor_lifetime){ size, first, first + len };
    }
}

static void test_fast_greedy_equals_the_straightforward_greedy(void **state)
{
    (void)state;
    rng.state = 0x1234567ULL;
    const size_t rounds = sanitized() ? 600 : 4000;
    tp_tensor_lifetime *t = malloc(300 * sizeof *t);
    size_t *a = malloc(300 * sizeof *a), *b = malloc(300 * sizeof *b);
    for (size_t r = 0; r < rounds; r++) {
        size_t n = below(10) == 0 ? below(300) : 1 + below(60);
        random_instance(t, n, (int)(r % 3));
        size_t arena_a = 7, arena_b = 9;
        assert_int_equal(tp_plan_offsets_simple(t, n, a, &arena_a), TP_OK);
        assert_int_equal(tp_plan_offsets_fast(t, n, b, &arena_b), TP_OK);
        assert_int_equal(arena_a, arena_b);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(a[i], b[i]);
        tpt_assert_sound_offsets(t, n, b, arena_b, 1);
    }
    free(t);
    free(a);
    free(b);
}

static void test_the_public_planner_is_the_fast_one_and_matches_on_larger_inputs(void **state)
{
    (void)state;
    rng.state = 99;
    const size_t n = sanitized() ? 1500 : 5000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (int kind = 0; kind < 3; kind++) {
        random_instance(t, n, kind);
        size_t arena_a = 0, arena_b = 0;
        assert_int_equal(tp_plan_offsets_simple(t, n, a, &arena_a), TP_OK);
        assert_int_equal(tp_plan_offsets(t, n, b, &arena_b), TP_OK);
        assert_int_equal(arena_a, arena_b);
        assert_memory_equal(a, b, n * sizeof *a);
    }
    free(t);
    free(a);
    free(b);
}

static void test_the_published_offset_cases_still_hold(void **state)
{
    (void)state;
    /* GeneralPlanning from planner.md section 3, computed by hand there. */
    const tp_tensor_lifetime t[] = { { 32, 0, 1 }, { 28, 1, 4 }, { 36, 2, 5 }, { 16, 3, 5 },
                                     { 8, 4, 5 },  { 64, 5, 7 }, { 10, 6, 8 }, { 40, 7, 8 } };
    const size_t want[] = { 0, 32, 64, 100, 116, 0, 104, 64 };
    size_t off[8], arena = 0;
    assert_int_equal(tp_plan_offsets_fast(t, 8, off, &arena), TP_OK);
    assert_int_equal(arena, 124);
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(off[i], want[i]);
}

static void test_refusals_match(void **state)
{
    (void)state;
    const tp_tensor_lifetime bad[] = { { 4, 0, 1 }, { 4, 3, 2 } };
    size_t off[2], arena;
    assert_int_equal(tp_plan_offsets_fast(bad, 2, off, &arena), TP_ERR_INVALID);
    const tp_tensor_lifetime big[] = { { SIZE_MAX - 2, 0, 1 }, { 8, 1, 2 } };
    assert_int_equal(tp_plan_offsets_simple(big, 2, off, &arena), TP_ERR_OVERFLOW);
    assert_int_equal(tp_plan_offsets_fast(big, 2, off, &arena), TP_ERR_OVERFLOW);
    assert_int_equal(tp_plan_offsets_fast(NULL, 0, NULL, &arena), TP_OK);
    assert_int_equal(arena, 0);
    assert_int_equal(tp_plan_offsets_fast(NULL, 3, off, &arena), TP_ERR_INVALID);
}

static void test_the_order_driven_pass_is_sound_with_alignment_and_first_fit(void **state)
{
    (void)state;
    rng.state = 777;
    tp_tensor_lifetime t[80];
    size_t order[80], off[80];
    const size_t rounds = sanitized() ? 200 : 1000;
    for (size_t r = 0; r < rounds; r++) {
        size_t n = 1 + below(80);
        random_instance(t, n, (int)(r % 3));
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (t[i].size > 0)
                order[m++] = i;
        for (size_t i = m; i > 1; i--) { /* a random order */
            size_t j = below(i), tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
        size_t align = (size_t)1 << below(7), arena = 0;
        tp_gap_rule rule = (r & 1) ? TP_GAP_FIRST_FIT : TP_GAP_BEST_FIT;
        assert_int_equal(tp_greedy_place(t, n, order, m, align, rule, NULL, off, &arena), TP_OK);
        tpt_assert_sound_offsets(t, n, off, arena, align);
    }
}

/* The bench's "long" family at a size the straightforward greedy handles quickly: lifetimes
 * up to `reach` steps anywhere in n steps, so a query sees many tree sets whose union has
 * many gaps. sizes_kind 0: 1..2^20 bytes; 1: four multiples of 4 KiB (many equal gaps and
 * exact fits). */
static void long_family(tp_tensor_lifetime *t, size_t n, size_t reach, int sizes_kind)
{
    for (size_t i = 0; i < n; i++) {
        size_t first = below(n);
        size_t size = sizes_kind == 0 ? 1 + below((size_t)1 << 20) : (1 + below(4)) * 4096;
        t[i] = (tp_tensor_lifetime){ size, first, first + below(reach) };
    }
}

static void test_long_lifetimes_at_moderate_sizes_match(void **state)
{
    (void)state;
    rng.state = 4242;
    const size_t n = sanitized() ? 800 : 3000;
    const int rounds = sanitized() ? 2 : 6;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (int r = 0; r < rounds; r++) {
        const size_t reach = r % 3 == 0 ? n / 10 : (r % 3 == 1 ? n / 3 : n);
        long_family(t, n, reach, r & 1);
        for (size_t i = 0; r == rounds - 1 && i < n; i++) {
            t[i].first_use = i / 2; /* nested: every lifetime contains the middle one */
            t[i].last_use = n - i / 2;
        }
        size_t arena_a = 0, arena_b = 0;
        assert_int_equal(tp_plan_offsets_simple(t, n, a, &arena_a), TP_OK);
        assert_int_equal(tp_plan_offsets_fast(t, n, b, &arena_b), TP_OK);
        assert_int_equal(arena_a, arena_b);
        assert_memory_equal(a, b, n * sizeof *a);
    }
    free(t);
    free(a);
    free(b);
}

/* Gaps of equal length everywhere: every tensor is one of two sizes, one twice the other, and
 * lifetimes are chosen so that freed slots of both sizes recur at many addresses. The rule's
 * tie-breaks (leading gap first, then the lowest) decide nearly every placement. */
static void test_equal_gaps_follow_the_tie_rules(void **state)
{
    (void)state;
    rng.state = 31337;
    const int rounds = sanitized() ? 150 : 1500;
    tp_tensor_lifetime t[120];
    size_t a[120], b[120];
    for (int r = 0; r < rounds; r++) {
        const size_t n = 1 + below(120);
        const size_t unit = 1 + below(3);
        const size_t horizon = 1 + below(40);
        for (size_t i = 0; i < n; i++) {
            size_t first = below(horizon);
            size_t len = below(2) ? below(4) : below(horizon);
            size_t size = below(3) == 0 ? 2 * unit : unit;
            if (below(12) == 0)
                size = 0;
            t[i] = (tp_tensor_lifetime){ size, first, first + len };
        }
        size_t arena_a = 0, arena_b = 0;
        assert_int_equal(tp_plan_offsets_simple(t, n, a, &arena_a), TP_OK);
        assert_int_equal(tp_plan_offsets_fast(t, n, b, &arena_b), TP_OK);
        assert_int_equal(arena_a, arena_b);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(a[i], b[i]);
    }
}

/* Each pass behind tp_greedy_place run on its own, whichever it would choose: the interval
 * tree, and the time buckets at a width and a long-list length drawn at random (any shape
 * gives the same offsets, only the speed differs). Both must give want[] and arena_want. */
static void check_every_pass(const tp_tensor_lifetime *t, size_t n, const size_t *order,
                             size_t m, size_t align, tp_gap_rule rule, const size_t *want,
                             size_t arena_want)
{
    size_t *off = malloc((n ? n : 1) * sizeof *off);
    size_t *lo = malloc((m ? m : 1) * sizeof *lo), *hi = malloc((m ? m : 1) * sizeof *hi);
    size_t arena = 1;
    assert_int_equal(tp_tree_place(t, n, order, m, align, rule, NULL, off, &arena), TP_OK);
    assert_int_equal(arena, arena_want);
    assert_memory_equal(off, want, n * sizeof *off);
    tp_leaf_ranks ranks = { lo, hi, 0 };
    assert_int_equal(tp_lifetime_ranks(t, order, m, lo, hi, &ranks.n_leaves), TP_OK);
    /* a long list from lifetimes of 1, 2, 4 .. leaves up, or none */
    const tp_bucket_shape shape = { (unsigned)below(10),
                                    below(3) == 0 ? SIZE_MAX : (size_t)1 << below(8) };
    arena = 1;
    assert_int_equal(
        tp_bucket_place(t, n, order, m, &ranks, &shape, align, rule, NULL, off, &arena), TP_OK);
    assert_int_equal(arena, arena_want);
    assert_memory_equal(off, want, n * sizeof *off);
    free(off);
    free(lo);
    free(hi);
}

static void test_the_order_driven_pass_equals_a_plain_reference(void **state)
{
    (void)state;
    rng.state = 2718;
    const size_t rounds = sanitized() ? 300 : 2000;
    tp_tensor_lifetime t[150];
    size_t order[150], off[150], want[150];
    for (size_t r = 0; r < rounds; r++) {
        size_t n = 1 + below(150);
        if (r % 4 == 3)
            long_family(t, n, 1 + below(n), (int)(r & 1));
        else
            random_instance(t, n, (int)(r % 3));
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (t[i].size > 0)
                order[m++] = i;
        for (size_t i = m; i > 1; i--) {
            size_t j = below(i), tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
        const size_t align = (size_t)1 << below(7);
        const tp_gap_rule rule = below(2) ? TP_GAP_FIRST_FIT : TP_GAP_BEST_FIT;
        size_t arena = 0;
        assert_int_equal(tp_greedy_place(t, n, order, m, align, rule, NULL, off, &arena), TP_OK);
        assert_int_equal(arena, tpt_reference_place(t, n, order, m, align, rule, want));
        for (size_t i = 0; i < n; i++)
            assert_int_equal(off[i], want[i]);
        check_every_pass(t, n, order, m, align, rule, want, arena);
    }
}

/* Addresses are kept in 32 bits while the arena stays below 4 GiB and the plan is redone with
 * size_t ones when a block would reach past it: arenas that cross that line early, late, or
 * at the first tensor, and blocks ending right at it, must still give the reference offsets. */
static void test_arenas_crossing_4_gib_match(void **state)
{
    (void)state;
    if (SIZE_MAX <= UINT32_MAX)
        skip();
    rng.state = 31337;
    const size_t rounds = sanitized() ? 150 : 600;
    tp_tensor_lifetime t[120];
    size_t order[120], off[120], want[120], a[120];
    for (size_t r = 0; r < rounds; r++) {
        const size_t n = 1 + below(120);
        /* The unit makes the sum of the sizes land below, around or well above 4 GiB. */
        const size_t units[] = { (size_t)1 << 20, (size_t)1 << 24, (size_t)1 << 27,
                                 (size_t)1 << 30, ((size_t)1 << 32) - 1 };
        const size_t unit = units[below(5)];
        for (size_t i = 0; i < n; i++) {
            const size_t first = below(n), len = below(2) ? below(n + 1) : below(4);
            size_t size = (1 + below(4)) * unit - below(3);
            if (below(12) == 0)
                size = ((size_t)1 << 32) - 1 - below(2); /* ends at or just under 4 GiB */
            t[i] = (tp_tensor_lifetime){ size, first, first + len };
        }
        size_t arena_a = 1, arena_b = 2;
        assert_int_equal(tp_plan_offsets_simple(t, n, a, &arena_a), TP_OK);
        assert_int_equal(tp_plan_offsets_fast(t, n, off, &arena_b), TP_OK);
        assert_int_equal(arena_a, arena_b);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(off[i], a[i]);
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        for (size_t i = n; i > 1; i--) {
            size_t j = below(i), tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
        const size_t align = (size_t)1 << below(13);
        const tp_gap_rule rule = below(2) ? TP_GAP_FIRST_FIT : TP_GAP_BEST_FIT;
        size_t arena = 0;
        assert_int_equal(tp_greedy_place(t, n, order, n, align, rule, NULL, off, &arena), TP_OK);
        assert_int_equal(arena, tpt_reference_place(t, n, order, n, align, rule, want));
        for (size_t i = 0; i < n; i++)
            assert_int_equal(off[i], want[i]);
        check_every_pass(t, n, order, n, align, rule, want, arena);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_greedy_equals_the_straightforward_greedy),
        cmocka_unit_test(test_the_public_planner_is_the_fast_one_and_matches_on_larger_inputs),
        cmocka_unit_test(test_the_published_offset_cases_still_hold),
        cmocka_unit_test(test_refusals_match),
        cmocka_unit_test(test_the_order_driven_pass_is_sound_with_alignment_and_first_fit),
        cmocka_unit_test(test_long_lifetimes_at_moderate_sizes_match),
        cmocka_unit_test(test_equal_gaps_follow_the_tie_rules),
        cmocka_unit_test(test_the_order_driven_pass_equals_a_plain_reference),
        cmocka_unit_test(test_arenas_crossing_4_gib_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
