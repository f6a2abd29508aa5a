/* The address-ordered scan (tp_scan_place) must give the offsets of the order-driven greedy
 * pass written out plainly in support/place_reference.h, whatever the number of threads and
 * whichever kernel runs (AVX-512, AVX2, portable): on small random inputs (all rules, orders
 * and alignments), on inputs large enough to split chunks and share them between threads, and
 * on dense long lifetimes. */
#define _GNU_SOURCE /* sched_setaffinity */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sched.h>

#include "planner/planner_internal.h"
#include "support/offsets_oracle.h"
#include "support/place_reference.h"
#include "support/xorshift.h"
#include "support/place_order.h"

#include "tensorplan/planner.h"

static tpt_rng rng;

static uint64_t next_u64(void) { return tpt_rng_next(&rng); }

static size_t below(size_t n) { return (size_t)(next_u64() % n); }

static int sanitized(void) { return getenv("TP_SANITIZED") != NULL; }

/* Sizes with many ties (few multiples of 64), some arbitrary, some zero; lifetimes of `reach`
 * nodes at most over `horizon` nodes. */
static void random_tensors(tp_tensor_lifetime *t, size_t n, size_t horizon, size_t reach)
{
    const size_t distinct = 1 + below(8);
    for (size_t i = 0; i < n; i++) {
        const size_t first = below(horizon);
        size_t size = below(3) == 0 ? 1 + below(5000) : 64 * (1 + below(distinct));
        if (below(12) == 0)
            size = 0;
        t[i] = (tp_tensor_lifetime){ size, first, first + below(reach + 1) };
    }
}


static void expect_reference(const tp_tensor_lifetime *t, size_t n, const size_t *order, size_t m,
                             size_t align, tp_gap_rule rule, unsigned threads,
                             tp_scan_kernel kernel, const size_t *want, size_t want_arena)
{
    size_t *off = malloc((n + 1) * sizeof *off), arena = 12345;
    int declined = 1;
    assert_int_equal(tp_scan_place(t, n, order, m, align, rule, NULL, threads, kernel, off,
                                   &arena, &declined),
                     TP_OK);
    assert_false(declined);
    assert_int_equal(arena, want_arena);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(off[i], want[i]);
    free(off);
}

static void test_the_scan_equals_the_plain_pass_on_random_inputs(void **state)
{
    (void)state;
    rng.state = 0x5ca1ab1e;
    const size_t rounds = sanitized() ? 150 : 1200;
    tp_tensor_lifetime t[400];
    size_t order[400], want[400];
    for (size_t r = 0; r < rounds; r++) {
        const size_t n = below(8) == 0 ? below(400) : 1 + below(120);
        const size_t horizon = 1 + below(2 * n + 2);
        const size_t reach = below(3) == 0 ? below(4) : below(horizon + 1);
        random_tensors(t, n, horizon, reach);
        const int shuffled = below(2);
        const size_t m = tpt_make_order(t, n, shuffled, below, order);
        const size_t align = below(2) ? 1 : (size_t)1 << below(below(4) ? 8 : 17);
        const tp_gap_rule rule = shuffled && below(2) ? TP_GAP_FIRST_FIT : TP_GAP_BEST_FIT;
        const size_t arena = tpt_reference_place(t, n, order, m, align, rule, want);
        const unsigned threads = 1 + (unsigned)below(3);
        expect_reference(t, n, order, m, align, rule, threads, TP_SCAN_AUTO, want, arena);
        expect_reference(t, n, order, m, align, rule, 1, TP_SCAN_GENERIC, want, arena);
        expect_reference(t, n, order, m, align, rule, 1, TP_SCAN_AVX2, want, arena);
        tpt_assert_sound_offsets(t, n, want, arena, align);
    }
}

/* Enough tensors that chunks fill, split and move between threads (a chunk splits at 24,576
 * tensors), with lifetimes of up to 2,000 nodes so that the plain pass stays quick. */
static void test_split_chunks_shared_by_threads_give_the_same_offsets(void **state)
{
    (void)state;
    rng.state = 424242;
    const size_t n = sanitized() ? 28000 : 30000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *order = malloc(n * sizeof *order), *want = malloc(n * sizeof *want);
    random_tensors(t, n, n, 2000);
    const size_t m = tpt_make_order(t, n, 0, below, order);
    const size_t arena = tpt_reference_place(t, n, order, m, 1, TP_GAP_BEST_FIT, want);
    for (unsigned threads = 1; threads <= 3; threads++)
        expect_reference(t, n, order, m, 1, TP_GAP_BEST_FIT, threads, TP_SCAN_AUTO, want, arena);
    expect_reference(t, n, order, m, 1, TP_GAP_BEST_FIT, 2, TP_SCAN_AVX2, want, arena);
    free(t);
    free(order);
    free(want);
}

/* Pinned to one processor (with enough tensors that a chunk splits and the helpers have
 * parts of their own), helpers that share the scan keep the calling thread waiting
 * longer than it works, so the scan stops sharing and tries again at every doubling of the
 * placed tensors (greedy_scan.c, note_wait): both ways and every switch between them must
 * give the offsets of the plain rule. The helpers inherit the caller's processor mask. */
static void test_threads_pinned_to_one_processor_give_the_same_offsets(void **state)
{
    (void)state;
    cpu_set_t old, one;
    if (sched_getaffinity(0, sizeof old, &old) != 0)
        skip();
    int cpu = -1;
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
        if (CPU_ISSET(c, &old))
            cpu = c;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    rng.state = 31337;
    const size_t n = sanitized() ? 26000 : 30000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *order = malloc(n * sizeof *order), *want = malloc(n * sizeof *want);
    random_tensors(t, n, n, 1500);
    const size_t m = tpt_make_order(t, n, 0, below, order);
    const size_t arena = tpt_reference_place(t, n, order, m, 1, TP_GAP_BEST_FIT, want);
    expect_reference(t, n, order, m, 1, TP_GAP_BEST_FIT, 3, TP_SCAN_AUTO, want, arena);
    const size_t ff = tpt_reference_place(t, n, order, m, 1, TP_GAP_FIRST_FIT, want);
    expect_reference(t, n, order, m, 1, TP_GAP_FIRST_FIT, 2, TP_SCAN_AUTO, want, ff);
    assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
    free(t);
    free(order);
    free(want);
}

/* Dense conflicts: lifetimes up to half of all nodes, as in the benchmark that the scan is for
 * (unsanitized, enough tensors that a chunk splits).
 * Lanes whose first tensors conflict with nothing stay unsure for long; the tree pass, checked
 * against the plain one in test_planner_fast, is the reference here because the plain pass
 * would take too long. */
static void test_dense_long_lifetimes_match_the_tree(void **state)
{
    (void)state;
    rng.state = 777;
    const size_t n = sanitized() ? 6000 : 26000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *order = malloc(n * sizeof *order), *want = malloc(n * sizeof *want);
    for (size_t i = 0; i < n; i++) {
        const size_t first = below(n), len = below(n / 2);
        t[i] = (tp_tensor_lifetime){ 64 * (1 + below(1024)), first,
                                     first + len < n ? first + len : n - 1 };
    }
    const size_t m = tpt_make_order(t, n, 0, below, order);
    size_t arena = 0;
    assert_int_equal(
        tp_tree_place(t, n, order, m, 1, TP_GAP_BEST_FIT, NULL, want, &arena), TP_OK);
    expect_reference(t, n, order, m, 1, TP_GAP_BEST_FIT, 2, TP_SCAN_AUTO, want, arena);
    expect_reference(t, n, order, m, 1, TP_GAP_BEST_FIT, 1, TP_SCAN_AUTO, want, arena);
    free(t);
    free(order);
    free(want);
}

/* More than 32,767 distinct first uses: the narrow AVX2 form packs each lifetime's ranks
 * shifted right by one or more bits (greedy_scan.c, pack_times), so neighbouring ranks share
 * a packed value and their conflicts are settled on the exact ranks. The offsets must still
 * be the plain pass's. */
static void test_ranks_past_32767_give_the_same_offsets(void **state)
{
    (void)state;
    rng.state = 8086;
    const size_t n = 40000, horizon = 8 * n;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *order = malloc(n * sizeof *order), *want = malloc(n * sizeof *want);
    unsigned char *seen = calloc(horizon, 1);
    random_tensors(t, n, horizon, 4000);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i].size > 0 && !seen[t[i].first_use]) {
            seen[t[i].first_use] = 1;
            distinct++;
        }
    assert_true(distinct > 32767);
    const size_t m = tpt_make_order(t, n, 0, below, order);
    const size_t arena = tpt_reference_place(t, n, order, m, 1, TP_GAP_BEST_FIT, want);
    expect_reference(t, n, order, m, 1, TP_GAP_BEST_FIT, 1, TP_SCAN_AVX2, want, arena);
    expect_reference(t, n, order, m, 1, TP_GAP_BEST_FIT, 2, TP_SCAN_AUTO, want, arena);
    free(t);
    free(order);
    free(want);
    free(seen);
}

/* Arenas that pass 2 GiB while the scan places: the narrow AVX2 form (signed comparisons) runs
 * while every end is below 2^31 and the full one after (greedy_scan.c, query.narrow). */
static void test_arenas_past_2_gib_give_the_same_offsets(void **state)
{
    (void)state;
    rng.state = 2147483647u;
    tp_tensor_lifetime t[220];
    size_t order[220], want[220];
    unsigned crossed = 0;
    for (unsigned r = 0; r < 40; r++) {
        const size_t n = 120 + below(100);
        for (size_t i = 0; i < n; i++) {
            const size_t first = below(60);
            t[i] = (tp_tensor_lifetime){ ((size_t)1 << 24) + below((size_t)3 << 23), first,
                                         first + below(60) };
        }
        const int shuffled = below(2);
        const size_t m = tpt_make_order(t, n, shuffled, below, order);
        const size_t align = below(2) ? 1 : (size_t)1 << below(17);
        const tp_gap_rule rule = shuffled && below(2) ? TP_GAP_FIRST_FIT : TP_GAP_BEST_FIT;
        const size_t arena = tpt_reference_place(t, n, order, m, align, rule, want);
        if (arena <= INT32_MAX || arena >= UINT32_MAX - ((size_t)1 << 26))
            continue;
        crossed++;
        expect_reference(t, n, order, m, align, rule, 1, TP_SCAN_AVX2, want, arena);
        expect_reference(t, n, order, m, align, rule, 1, TP_SCAN_AUTO, want, arena);
        expect_reference(t, n, order, m, align, rule, 1, TP_SCAN_GENERIC, want, arena);
    }
    assert_true(crossed >= 10);
}

/* What the scan cannot hold it declines, leaving nothing behind, and tp_greedy_place then gives
 * the plain pass's offsets all the same (through the tree). */
static void test_the_scan_declines_what_it_cannot_hold(void **state)
{
    (void)state;
    const tp_tensor_lifetime small[] = { { 8, 0, 1 }, { 8, 1, 2 } };
    const size_t small_order[] = { 0, 1 };
    size_t off[2], arena = 1;
    int declined = 0;
    assert_int_equal(tp_scan_place(small, 2, small_order, 2, 24, TP_GAP_BEST_FIT, NULL, 1,
                                   TP_SCAN_AUTO, off, &arena, &declined),
                     TP_OK);
    assert_true(declined); /* not a power of two */
    assert_int_equal(tp_scan_place(small, 2, small_order, 2, TP_SCAN_MAX_ALIGN * 2,
                                   TP_GAP_BEST_FIT, NULL, 1, TP_SCAN_AUTO, off, &arena, &declined),
                     TP_OK);
    assert_true(declined);

    /* 1,100 tensors of 4 MiB all live at node 5: the arena passes 4 GiB at the 1,024th. */
    if (SIZE_MAX <= UINT32_MAX)
        skip();
    const size_t n = 1100;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *order = malloc(n * sizeof *order), *got = malloc(n * sizeof *got);
    size_t *want = malloc(n * sizeof *want);
    for (size_t i = 0; i < n; i++)
        t[i] = (tp_tensor_lifetime){ ((size_t)4 << 20) - 64 * (i % 3), i % 6, 5 + i % 7 };
    const size_t m = tpt_make_order(t, n, 0, below, order);
    declined = 0;
    arena = 1;
    assert_int_equal(tp_scan_place(t, n, order, m, 1, TP_GAP_BEST_FIT, NULL, 2, TP_SCAN_AUTO,
                                   got, &arena, &declined),
                     TP_OK);
    assert_true(declined);
    assert_int_equal(arena, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], 0);
    const size_t want_arena = tpt_reference_place(t, n, order, m, 1, TP_GAP_BEST_FIT, want);
    assert_true(want_arena > UINT32_MAX);
    assert_int_equal(tp_greedy_place(t, n, order, m, 1, TP_GAP_BEST_FIT, NULL, got, &arena),
                     TP_OK);
    assert_int_equal(arena, want_arena);
    assert_memory_equal(got, want, n * sizeof *got);
    free(t);
    free(order);
    free(got);
    free(want);
}

/* The public planner picks the scan by itself for long lifetimes (on processors with AVX-512)
 * and must still equal the plain pass. */
static void test_the_public_planner_with_long_lifetimes_equals_the_plain_pass(void **state)
{
    (void)state;
    rng.state = 99;
    const size_t n = sanitized() ? 2000 : 5000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *order = malloc(n * sizeof *order), *got = malloc(n * sizeof *got);
    size_t *want = malloc(n * sizeof *want);
    random_tensors(t, n, n, n / 2);
    const size_t m = tpt_make_order(t, n, 0, below, order);
    const size_t want_arena = tpt_reference_place(t, n, order, m, 1, TP_GAP_BEST_FIT, want);
    size_t arena = 0;
    assert_int_equal(tp_plan_offsets(t, n, got, &arena), TP_OK);
    assert_int_equal(arena, want_arena);
    assert_memory_equal(got, want, n * sizeof *got);
    free(t);
    free(order);
    free(got);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_scan_equals_the_plain_pass_on_random_inputs),
        cmocka_unit_test(test_split_chunks_shared_by_threads_give_the_same_offsets),
        cmocka_unit_test(test_threads_pinned_to_one_processor_give_the_same_offsets),
        cmocka_unit_test(test_dense_long_lifetimes_match_the_tree),
        cmocka_unit_test(test_ranks_past_32767_give_the_same_offsets),
        cmocka_unit_test(test_arenas_past_2_gib_give_the_same_offsets),
        cmocka_unit_test(test_the_scan_declines_what_it_cannot_hold),
        cmocka_unit_test(test_the_public_planner_with_long_lifetimes_equals_the_plain_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
