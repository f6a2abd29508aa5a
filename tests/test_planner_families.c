/* The greedy on the input families that once made it quadratic or slower: every tensor live
 * at once (a clique, planned in O(n)), near-cliques, crowds of equal sizes, heavy random
 * overlap, and sizes sharing a granule whose arena crosses 4 GiB (the scan counting addresses
 * in granules). Every pass must give the offsets of the rule written out plainly
 * (support/place_reference.h for any order, rule and alignment; support/offsets_simple.c for
 * tp_plan_offsets), whatever the thread count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "planner/planner_internal.h"
#include "support/offsets_oracle.h"
#include "support/offsets_simple.h"
#include "support/place_reference.h"
#include "support/xorshift.h"
#include "support/place_order.h"

#include "tensorplan/planner.h"

static tpt_rng rng;

static size_t below(size_t n) { return (size_t)(tpt_rng_next(&rng) % n); }

static int sanitized(void) { return getenv("TP_SANITIZED") != NULL; }

/* The sizes: 2^(6..20) + 64 U[0, 64), all multiples of 64. */
static size_t pow2_size(void) { return ((size_t)1 << (6 + below(15))) + 64 * below(64); }

/* tp_greedy_place_threads on 1, 2 and 3 threads against the plain pass. */
static void expect_plain(const tp_tensor_lifetime *t, size_t n, int shuffled, size_t align,
                         tp_gap_rule rule)
{
    size_t *order = malloc((n + 1) * sizeof *order), *want = malloc((n + 1) * sizeof *want);
    size_t *got = malloc((n + 1) * sizeof *got);
    const size_t m = tpt_make_order(t, n, shuffled, below, order);
    const size_t want_arena = tpt_reference_place(t, n, order, m, align, rule, want);
    for (unsigned threads = 1; threads <= 3; threads++) {
        size_t arena = 12345;
        assert_int_equal(tp_greedy_place_threads(t, n, order, m, align, rule, NULL, threads, got,
                                                 &arena),
                         TP_OK);
        assert_int_equal(arena, want_arena);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(got[i], want[i]);
    }
    free(order);
    free(want);
    free(got);
}

/* tp_plan_offsets against tp_plan_offsets_simple. */
static void expect_simple(const tp_tensor_lifetime *t, size_t n)
{
    size_t *want = malloc((n + 1) * sizeof *want), *got = malloc((n + 1) * sizeof *got);
    size_t want_arena = 0, arena = 1;
    assert_int_equal(tp_plan_offsets_simple(t, n, want, &want_arena), TP_OK);
    assert_int_equal(tp_plan_offsets(t, n, got, &arena), TP_OK);
    assert_int_equal(arena, want_arena);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
    tpt_assert_sound_offsets(t, n, got, arena, 1);
    free(want);
    free(got);
}

static size_t any_align(void) { return below(2) ? 1 : (size_t)1 << below(13); }

static void test_all_overlapping_inputs_give_the_plain_offsets(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(19);
    const size_t rounds = sanitized() ? 20 : 80;
    tp_tensor_lifetime t[1500];
    for (size_t r = 0; r < rounds; r++) {
        const size_t n = 1 + below(r % 4 == 0 ? 1500 : 200);
        const size_t kind = below(3); /* one span; near-identical spans; spans sharing a node */
        for (size_t i = 0; i < n; i++) {
            size_t first = 0, last = 1000000 - 1;
            if (kind == 1) {
                first = below(8);
                last -= below(8);
            } else if (kind == 2) {
                first = below(500);
                last = 500 + below(500);
            }
            const size_t size = below(10) == 0 ? 0 : below(2) ? pow2_size() : 1 + below(5000);
            t[i] = (tp_tensor_lifetime){ size, first, last };
        }
        const int shuffled = below(2);
        expect_plain(t, n, shuffled, any_align(),
                     shuffled && below(2) ? TP_GAP_FIRST_FIT : TP_GAP_BEST_FIT);
        expect_simple(t, n);
    }
}

/* Many tensors of one size (or two), all live at once or over heavily overlapping lifetimes. */
static void test_crowds_of_equal_sizes_give_the_plain_offsets(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(20);
    const size_t rounds = sanitized() ? 10 : 40;
    tp_tensor_lifetime t[2000];
    for (size_t r = 0; r < rounds; r++) {
        const size_t n = 1 + below(r % 5 == 0 ? 2000 : 300);
        const size_t s1 = 64 * (1 + below(16)), s2 = below(2) ? s1 : 64 * (1 + below(16));
        const int all = below(2);
        for (size_t i = 0; i < n; i++) {
            const size_t first = all ? 0 : below(n), len = all ? n : below(n / 4 + 1);
            t[i] = (tp_tensor_lifetime){ below(3) ? s1 : s2, first, first + len };
        }
        expect_plain(t, n, below(2), any_align(), TP_GAP_BEST_FIT);
        expect_simple(t, n);
    }
}

/* Lifetimes up to n/4 nodes anywhere in n: thousands of tensors live at once, enough for the
 * address-ordered scan, and sizes of the granule 64 whose arena passes 4 GiB: the scan then
 * counts addresses in granules instead of declining. */
static void test_heavy_overlap_across_4_gib_gives_the_plain_offsets(void **state)
{
    (void)state;
    if (SIZE_MAX <= UINT32_MAX)
        skip();
    rng = tpt_rng_seeded(21);
    const size_t n = sanitized() ? 1500 : 4000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    for (int big = 0; big < 2; big++) {
        for (size_t i = 0; i < n; i++) {
            const size_t first = below(n), len = below(n / 4 + 1);
            const size_t size = big ? ((size_t)1 << 25) + 64 * below(1 << 12) : pow2_size();
            t[i] = (tp_tensor_lifetime){ size, first, first + len };
        }
        size_t *off = malloc(n * sizeof *off), arena = 0;
        assert_int_equal(tp_plan_offsets_simple(t, n, off, &arena), TP_OK);
        if (big)
            assert_true(arena > UINT32_MAX); /* the family is what it says */
        free(off);
        expect_simple(t, n);
        expect_plain(t, n, 0, big ? 4096 : 1, TP_GAP_BEST_FIT);
        expect_plain(t, n, 1, 64, TP_GAP_FIRST_FIT);
    }
    free(t);
}

/* Sizes with a common granule but an alignment that is not a multiple of it (and one that
 * shares only part of it): the scaled plan must still be the plain one. */
static void test_granules_and_alignments_that_share_part_of_them(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(22);
    const size_t n = sanitized() ? 1200 : 2500;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    const size_t granules[] = { 3, 48, 64, 96, 4096 };
    for (size_t g = 0; g < sizeof granules / sizeof *granules; g++) {
        for (size_t i = 0; i < n; i++) {
            const size_t first = below(n), len = below(n / 3 + 1);
            t[i] = (tp_tensor_lifetime){ granules[g] * (1 + below(3000)), first, first + len };
        }
        expect_plain(t, n, 0, (size_t)1 << below(8), TP_GAP_BEST_FIT);
    }
    free(t);
}

/* tp_size_granule against its definition, restated: the gcd of the sizes if the alignment
 * divides it, otherwise their common factor with the alignment. */
static void test_the_granule_is_the_largest_safe_factor(void **state)
{
    (void)state;
    const tp_tensor_lifetime t[] = { { 192, 0, 1 }, { 128, 1, 2 }, { 320, 0, 0 } };
    const size_t order[] = { 0, 1, 2 };
    size_t a = 0;
    assert_int_equal(tp_size_granule(t, order, 3, 1, &a), 64);
    assert_int_equal(a, 1);
    assert_int_equal(tp_size_granule(t, order, 3, 32, &a), 64);
    assert_int_equal(a, 1);
    assert_int_equal(tp_size_granule(t, order, 3, 256, &a), 64);
    assert_int_equal(a, 4);
    const tp_tensor_lifetime odd[] = { { 96, 0, 1 }, { 144, 1, 2 } }; /* gcd 48 */
    assert_int_equal(tp_size_granule(odd, order, 2, 32, &a), 16);
    assert_int_equal(a, 2);
    assert_int_equal(tp_size_granule(odd, order, 2, 16, &a), 48);
    assert_int_equal(a, 1);
}

/* A clique whose arena would pass SIZE_MAX is refused like the plain pass refuses it. */
static void test_a_clique_past_size_max_is_refused(void **state)
{
    (void)state;
    const tp_tensor_lifetime t[] = { { SIZE_MAX / 2, 0, 5 }, { SIZE_MAX / 2, 1, 6 },
                                     { 2, 2, 7 } };
    size_t off[3], arena = 0;
    assert_int_equal(tp_plan_offsets(t, 3, off, &arena), TP_ERR_OVERFLOW);
    assert_non_null(strstr(tp_last_error(), "tensor 2"));
    const tp_tensor_lifetime fits[] = { { SIZE_MAX / 2, 0, 5 }, { SIZE_MAX / 2 + 1, 1, 6 } };
    assert_int_equal(tp_plan_offsets(fits, 2, off, &arena), TP_OK);
    assert_int_equal(arena, SIZE_MAX);
    assert_int_equal(off[1], 0);
    assert_int_equal(off[0], SIZE_MAX / 2 + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_overlapping_inputs_give_the_plain_offsets),
        cmocka_unit_test(test_crowds_of_equal_sizes_give_the_plain_offsets),
        cmocka_unit_test(test_heavy_overlap_across_4_gib_gives_the_plain_offsets),
        cmocka_unit_test(test_granules_and_alignments_that_share_part_of_them),
        cmocka_unit_test(test_the_granule_is_the_largest_safe_factor),
        cmocka_unit_test(test_a_clique_past_size_max_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
