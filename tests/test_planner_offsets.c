/* tp_plan_offsets and tp_peak_live_bytes: the seed's offset tests (planner.md section 3), the
 * five XNNPACK cases, and differential checks against oracles written here: a brute-force
 * peak over every node, a pairwise overlap check, and an independent reference of the greedy
 * rules that enumerates candidate offsets instead of coalescing blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "planner/planner_internal.h"
#include "support/offsets_simple.h"
#include "support/xorshift.h"
#include "tensorplan/planner.h"

#define MAX_TENSORS 256

static size_t g1_instance(uint64_t seed, tp_tensor_lifetime *t)
{
    tpt_rng r = tpt_rng_seeded(seed);
    const size_t n = 1 + tpt_rng_below(&r, 40);
    for (size_t i = 0; i < n; i++) {
        t[i].first_use = tpt_rng_below(&r, 24);
        t[i].size = tpt_rng_below(&r, 10) == 0 ? 0 : 1 + tpt_rng_below(&r, 1024);
        t[i].last_use = t[i].first_use + tpt_rng_below(&r, 8);
    }
    return n;
}

/* Long lifetimes and few distinct sizes: many conflicts and many equal-size ties. */
static size_t crowded_instance(uint64_t seed, tp_tensor_lifetime *t)
{
    tpt_rng r = tpt_rng_seeded(seed ^ 0xC0FFEEu);
    const size_t n = 1 + tpt_rng_below(&r, 120);
    for (size_t i = 0; i < n; i++) {
        t[i].first_use = tpt_rng_below(&r, 30);
        t[i].last_use = t[i].first_use + tpt_rng_below(&r, 25);
        t[i].size = tpt_rng_below(&r, 12) == 0 ? 0 : 16 * (1 + tpt_rng_below(&r, 6));
    }
    return n;
}

static int intersect(const tp_tensor_lifetime *a, const tp_tensor_lifetime *b)
{
    return a->first_use <= b->last_use && b->first_use <= a->last_use;
}

static size_t brute_peak(const tp_tensor_lifetime *t, size_t n)
{
    size_t last = 0, peak = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i].last_use > last)
            last = t[i].last_use;
    for (size_t node = 0; n > 0 && node <= last; node++) {
        size_t live = 0;
        for (size_t i = 0; i < n; i++)
            if (t[i].first_use <= node && node <= t[i].last_use)
                live += t[i].size;
        if (live > peak)
            peak = live;
    }
    return peak;
}

/* Every pair alive at a common node is byte-disjoint; zero-size tensors sit at 0; the arena
 * is the highest end. */
static void check_sound(const tp_tensor_lifetime *t, size_t n, const size_t *off, size_t arena,
                        uint64_t seed)
{
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].size == 0) {
            if (off[i] != 0)
                fail_msg("seed %llu: zero-size tensor %zu at offset %zu",
                         (unsigned long long)seed, i, off[i]);
            continue;
        }
        if (off[i] + t[i].size > top)
            top = off[i] + t[i].size;
        for (size_t j = i + 1; j < n; j++) {
            if (t[j].size == 0 || !intersect(&t[i], &t[j]))
                continue;
            if (off[i] < off[j] + t[j].size && off[j] < off[i] + t[i].size)
                fail_msg("seed %llu: tensors %zu [%zu,+%zu) and %zu [%zu,+%zu) overlap",
                         (unsigned long long)seed, i, off[i], t[i].size, j, off[j], t[j].size);
        }
    }
    if (arena != top)
        fail_msg("seed %llu: arena %zu but highest end %zu", (unsigned long long)seed, arena,
                 top);
}

/* The rules of planner.md section 2 restated without sorting or coalescing: a free offset is
 * 0 or the end of a conflicting tensor that no conflicting tensor covers; its gap runs to the
 * nearest conflicting start above it. */
static size_t reference_plan(const tp_tensor_lifetime *t, size_t n, size_t *off)
{
    char placed[MAX_TENSORS] = { 0 };
    size_t arena = 0;
    for (size_t i = 0; i < n; i++)
        off[i] = 0;
    for (;;) {
        size_t pick = n;
        for (size_t i = 0; i < n; i++)
            if (!placed[i] && t[i].size > 0 && (pick == n || t[i].size > t[pick].size))
                pick = i;
        if (pick == n)
            break;
        const size_t size = t[pick].size;
        size_t cand[MAX_TENSORS + 1], nc = 0, top = 0;
        cand[nc++] = 0;
        for (size_t q = 0; q < n; q++)
            if (placed[q] && intersect(&t[q], &t[pick])) {
                cand[nc++] = off[q] + t[q].size;
                if (off[q] + t[q].size > top)
                    top = off[q] + t[q].size;
            }
        int found = 0;
        size_t best = 0, best_gap = 0;
        for (size_t c = 0; c < nc; c++) {
            int is_free = 1, bounded = 0;
            size_t gap = 0;
            for (size_t q = 0; q < n; q++) {
                if (!placed[q] || !intersect(&t[q], &t[pick]))
                    continue;
                if (off[q] <= cand[c] && cand[c] < off[q] + t[q].size)
                    is_free = 0;
                if (off[q] >= cand[c] && (!bounded || off[q] - cand[c] < gap)) {
                    bounded = 1;
                    gap = off[q] - cand[c];
                }
            }
            if (!is_free || !bounded || gap < size)
                continue;
            if (!found || gap < best_gap || (gap == best_gap && cand[c] < best)) {
                found = 1;
                best = cand[c];
                best_gap = gap;
            }
        }
        off[pick] = found ? best : top;
        placed[pick] = 1;
        if (off[pick] + size > arena)
            arena = off[pick] + size;
    }
    return arena;
}

static void plan_ok(const tp_tensor_lifetime *t, size_t n, size_t *off, size_t *arena)
{
    tp_status st = tp_plan_offsets(t, n, off, arena);
    if (st != TP_OK)
        fail_msg("tp_plan_offsets: %s: %s", tp_status_name(st), tp_last_error());
}

static void tensors_alive_at_a_common_node_never_share_a_byte(void **state)
{
    (void)state;
    tp_tensor_lifetime t[MAX_TENSORS];
    size_t off[MAX_TENSORS], arena;
    for (uint64_t seed = 0; seed < 500; seed++) {
        const size_t n = g1_instance(seed, t);
        plan_ok(t, n, off, &arena);
        check_sound(t, n, off, arena, seed);
    }
}

static void the_arena_is_never_smaller_than_the_peak_of_live_bytes(void **state)
{
    (void)state;
    tp_tensor_lifetime t[MAX_TENSORS];
    size_t off[MAX_TENSORS], arena, peak;
    for (uint64_t seed = 0; seed < 500; seed++) {
        const size_t n = g1_instance(seed, t);
        plan_ok(t, n, off, &arena);
        assert_int_equal(tp_peak_live_bytes(t, n, &peak), TP_OK);
        const size_t expect = brute_peak(t, n);
        if (peak != expect)
            fail_msg("seed %llu: peak %zu, brute force %zu", (unsigned long long)seed, peak,
                     expect);
        if (arena < peak)
            fail_msg("seed %llu: arena %zu < peak %zu", (unsigned long long)seed, arena, peak);
    }
}

static void peak_live_bytes_treats_lifetimes_as_inclusive(void **state)
{
    (void)state;
    size_t peak, off[2], arena;
    const tp_tensor_lifetime sharing[] = { { 10, 0, 1 }, { 20, 1, 2 } };
    assert_int_equal(tp_peak_live_bytes(sharing, 2, &peak), TP_OK);
    assert_int_equal(peak, brute_peak(sharing, 2));
    assert_int_equal(peak, 30);
    plan_ok(sharing, 2, off, &arena);
    check_sound(sharing, 2, off, arena, 0);
    assert_int_equal(arena, 30);

    const tp_tensor_lifetime consecutive[] = { { 10, 0, 0 }, { 20, 1, 1 } };
    assert_int_equal(tp_peak_live_bytes(consecutive, 2, &peak), TP_OK);
    assert_int_equal(peak, brute_peak(consecutive, 2));
    assert_int_equal(peak, 20);
    plan_ok(consecutive, 2, off, &arena);
    assert_int_equal(off[0], 0);
    assert_int_equal(off[1], 0);
    assert_int_equal(arena, 20);
}

/* planner.md section 3, in input order. */
typedef struct xnn_case {
    const char *name;
    size_t n;
    tp_tensor_lifetime t[8];
    size_t offsets[8];
    size_t arena;
} xnn_case;

static const xnn_case xnn_cases[] = {
    { "ReusesLeadingGap", 3, { { 100, 0, 1 }, { 80, 1, 2 }, { 60, 2, 3 } }, { 0, 100, 0 }, 180 },
    { "PrefersSmallerInternalGapOverLeadingGap",
      5,
      { { 100, 0, 0 }, { 90, 0, 2 }, { 80, 0, 0 }, { 70, 0, 2 }, { 60, 2, 3 } },
      { 0, 100, 190, 270, 190 },
      340 },
    { "PrefersLeadingGapOnEqualFit",
      6,
      { { 110, 0, 0 }, { 100, 0, 2 }, { 60, 0, 0 }, { 50, 0, 0 }, { 45, 0, 2 }, { 40, 2, 3 } },
      { 0, 110, 210, 270, 320, 0 },
      365 },
    { "MemoryBlocksCoalescing",
      5,
      { { 56, 1, 1 }, { 40, 0, 1 }, { 64, 1, 1 }, { 152, 0, 0 }, { 20, 1, 1 } },
      { 64, 152, 0, 0, 120 },
      192 },
    { "GeneralPlanning",
      8,
      { { 32, 0, 1 },
        { 28, 1, 4 },
        { 36, 2, 5 },
        { 16, 3, 5 },
        { 8, 4, 5 },
        { 64, 5, 7 },
        { 10, 6, 8 },
        { 40, 7, 8 } },
      { 0, 32, 64, 100, 116, 0, 104, 64 },
      124 },
};

static void check_xnn_case(const xnn_case *c)
{
    size_t off[8], arena, ref_off[8];
    plan_ok(c->t, c->n, off, &arena);
    for (size_t i = 0; i < c->n; i++)
        if (off[i] != c->offsets[i])
            fail_msg("%s: tensor %zu at %zu, expected %zu", c->name, i, off[i], c->offsets[i]);
    if (arena != c->arena)
        fail_msg("%s: arena %zu, expected %zu", c->name, arena, c->arena);
    check_sound(c->t, c->n, off, arena, 0);
    assert_int_equal(reference_plan(c->t, c->n, ref_off), c->arena);
    assert_memory_equal(ref_off, c->offsets, c->n * sizeof *off);
}

static void a_free_leading_interval_is_reused_instead_of_appending(void **state)
{
    (void)state;
    check_xnn_case(&xnn_cases[0]);
    /* The upstream bug appended instead: the arena equals the live peak only with reuse. */
    size_t peak;
    assert_int_equal(tp_peak_live_bytes(xnn_cases[0].t, 3, &peak), TP_OK);
    assert_int_equal(peak, brute_peak(xnn_cases[0].t, 3));
    assert_int_equal(peak, xnn_cases[0].arena);
}

static void a_strictly_smaller_internal_gap_beats_the_leading_gap(void **state)
{
    (void)state;
    check_xnn_case(&xnn_cases[1]);
}

static void the_leading_gap_wins_an_equal_fit(void **state)
{
    (void)state;
    check_xnn_case(&xnn_cases[2]);
}

static void the_five_xnnpack_cases_give_their_exact_offsets_and_arenas(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof xnn_cases / sizeof xnn_cases[0]; i++)
        check_xnn_case(&xnn_cases[i]);
}

static void compare_with_reference(const tp_tensor_lifetime *t, size_t n, uint64_t seed)
{
    size_t off[MAX_TENSORS], ref[MAX_TENSORS], arena, simple_off[MAX_TENSORS], simple_arena;
    plan_ok(t, n, off, &arena);
    check_sound(t, n, off, arena, seed);
    const size_t ref_arena = reference_plan(t, n, ref);
    for (size_t i = 0; i < n; i++)
        if (off[i] != ref[i])
            fail_msg("seed %llu: tensor %zu at %zu, reference %zu", (unsigned long long)seed, i,
                     off[i], ref[i]);
    assert_int_equal(arena, ref_arena);
    assert_int_equal(tp_plan_offsets_simple(t, n, simple_off, &simple_arena), TP_OK);
    assert_memory_equal(simple_off, off, n * sizeof *off);
    assert_int_equal(simple_arena, arena);
}

static void plans_follow_the_greedy_rules_of_an_independent_reference(void **state)
{
    (void)state;
    tp_tensor_lifetime t[MAX_TENSORS];
    const uint64_t seeds = getenv("TP_SANITIZED") ? 150 : 500;
    for (uint64_t seed = 0; seed < seeds; seed++) {
        compare_with_reference(t, g1_instance(seed, t), seed);
        compare_with_reference(t, crowded_instance(seed, t), seed);
    }
}

/* planner.md section 3: the rules must reproduce the seed's figure over the G1 family. */
static void the_seeded_family_reproduces_the_published_arena_to_peak_ratios(void **state)
{
    (void)state;
    tp_tensor_lifetime t[MAX_TENSORS];
    size_t off[MAX_TENSORS], arena;
    double sum = 0, worst = 0;
    int counted = 0;
    for (uint64_t seed = 0; seed < 500; seed++) {
        const size_t n = g1_instance(seed, t);
        const size_t peak = brute_peak(t, n);
        if (peak == 0)
            continue;
        plan_ok(t, n, off, &arena);
        const double ratio = (double)arena / (double)peak;
        sum += ratio;
        if (ratio > worst)
            worst = ratio;
        counted++;
    }
    const double mean = sum / counted;
    print_message("G1: mean %.10f worst %.10f over %d instances\n", mean, worst, counted);
    if ((long)(mean * 1e4 + 0.5) != 10283 || (long)(worst * 1e4 + 0.5) != 12826)
        fail_msg("mean %.6f worst %.6f, expected 1.0283 and 1.2826", mean, worst);
}

static void equal_sizes_keep_input_order_and_zero_sizes_sit_at_zero(void **state)
{
    (void)state;
    const tp_tensor_lifetime t[] = { { 8, 0, 3 }, { 0, 0, 3 }, { 8, 1, 2 }, { 8, 2, 5 },
                                     { 12, 4, 4 } };
    size_t off[5], arena, ref[5];
    plan_ok(t, 5, off, &arena);
    check_sound(t, 5, off, arena, 0);
    assert_int_equal(reference_plan(t, 5, ref), arena);
    assert_memory_equal(off, ref, sizeof off);
    /* 12 first at 0; then the three 8s in input order stack up where they conflict. */
    assert_int_equal(off[1], 0);
    assert_true(off[0] < off[2] && off[2] < off[3]);

    size_t peak = 1;
    assert_int_equal(tp_plan_offsets(NULL, 0, NULL, &arena), TP_OK);
    assert_int_equal(arena, 0);
    assert_int_equal(tp_peak_live_bytes(NULL, 0, &peak), TP_OK);
    assert_int_equal(peak, 0);

    const tp_tensor_lifetime zeros[] = { { 0, 0, 9 }, { 0, 3, 3 } };
    off[0] = off[1] = 7;
    plan_ok(zeros, 2, off, &arena);
    assert_int_equal(off[0], 0);
    assert_int_equal(off[1], 0);
    assert_int_equal(arena, 0);
    assert_int_equal(tp_peak_live_bytes(zeros, 2, &peak), TP_OK);
    assert_int_equal(peak, 0);
}

static void the_plan_is_a_pure_function_of_the_input(void **state)
{
    (void)state;
    tp_tensor_lifetime t[MAX_TENSORS];
    size_t a[MAX_TENSORS], b[MAX_TENSORS], arena_a, arena_b;
    for (uint64_t seed = 0; seed < 50; seed++) {
        const size_t n = crowded_instance(seed, t);
        plan_ok(t, n, a, &arena_a);
        plan_ok(t, n, b, &arena_b);
        assert_memory_equal(a, b, n * sizeof *a);
        assert_int_equal(arena_a, arena_b);
    }
}

static void peak_matches_brute_force_on_long_lifetimes(void **state)
{
    (void)state;
    tp_tensor_lifetime t[MAX_TENSORS];
    size_t peak;
    for (uint64_t seed = 0; seed < 300; seed++) {
        const size_t n = crowded_instance(seed, t);
        assert_int_equal(tp_peak_live_bytes(t, n, &peak), TP_OK);
        if (peak != brute_peak(t, n))
            fail_msg("seed %llu: peak %zu, brute force %zu", (unsigned long long)seed, peak,
                     brute_peak(t, n));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tensors_alive_at_a_common_node_never_share_a_byte),
        cmocka_unit_test(the_arena_is_never_smaller_than_the_peak_of_live_bytes),
        cmocka_unit_test(peak_live_bytes_treats_lifetimes_as_inclusive),
        cmocka_unit_test(a_free_leading_interval_is_reused_instead_of_appending),
        cmocka_unit_test(a_strictly_smaller_internal_gap_beats_the_leading_gap),
        cmocka_unit_test(the_leading_gap_wins_an_equal_fit),
        cmocka_unit_test(the_five_xnnpack_cases_give_their_exact_offsets_and_arenas),
        cmocka_unit_test(plans_follow_the_greedy_rules_of_an_independent_reference),
        cmocka_unit_test(the_seeded_family_reproduces_the_published_arena_to_peak_ratios),
        cmocka_unit_test(equal_sizes_keep_input_order_and_zero_sizes_sit_at_zero),
        cmocka_unit_test(the_plan_is_a_pure_function_of_the_input),
        cmocka_unit_test(peak_matches_brute_force_on_long_lifetimes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
