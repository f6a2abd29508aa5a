/* The fast greedy must reproduce the straightforward greedy offset for offset. The
 * straightforward one is the oracle here; the overlap check is written in this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "planner/planner_internal.h"
#include "planner/planner_perf.h"
#include "tensorplan/planner.h"

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static size_t below(size_t n) { return (size_t)(next_u64() % n); }

static int sanitized(void) { return getenv("TP_SANITIZED") != NULL; }

/* No two tensors live at a common node share a byte; offsets are aligned. */
static void assert_sound(const tp_tensor_lifetime *t, size_t n, const size_t *off, size_t arena,
                         size_t align)
{
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].size == 0) {
            assert_int_equal(off[i], 0);
            continue;
        }
        assert_int_equal(off[i] % align, 0);
        if (off[i] + t[i].size > top)
            top = off[i] + t[i].size;
        for (size_t j = i + 1; j < n; j++) {
            if (t[j].size == 0)
                continue;
            int live = t[i].first_use <= t[j].last_use && t[j].first_use <= t[i].last_use;
            int share = off[i] < off[j] + t[j].size && off[j] < off[i] + t[i].size;
            assert_false(live && share);
        }
    }
    assert_int_equal(top, arena);
}

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
    rng_state = 0x1234567ULL;
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
        assert_sound(t, n, b, arena_b, 1);
    }
    free(t);
    free(a);
    free(b);
}

static void test_the_public_planner_is_the_fast_one_and_matches_on_larger_inputs(void **state)
{
    (void)state;
    rng_state = 99;
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
    rng_state = 777;
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
        assert_int_equal(tp_greedy_place(t, n, order, m, align, rule, off, &arena), TP_OK);
        assert_sound(t, n, off, arena, align);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
