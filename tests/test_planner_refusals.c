/* Every refusal of the planner (planner.md sections 1 and 2): the status, and a message that
 * names the offending index and its values. Also NULL pointers and size_t overflow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/error.h"
#include "planner/planner_internal.h"
#include "support/offsets_simple.h"
#include "tensorplan/planner.h"

static void expect_message(const char *needle)
{
    if (strstr(tp_last_error(), needle) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", tp_last_error(), needle);
}

typedef tp_status (*plan_fn)(const tp_tensor_lifetime *, size_t, size_t *, size_t *);

static const plan_fn planners[] = { tp_plan_offsets, tp_plan_offsets_simple };

static void a_lifetime_that_ends_before_it_starts_is_refused_by_name(void **state)
{
    (void)state;
    const tp_tensor_lifetime t[] = { { 8, 0, 1 }, { 8, 2, 2 }, { 0, 5, 5 }, { 4, 7, 2 },
                                     { 4, 9, 1 } };
    size_t off[5], arena = 99, peak = 99;
    for (size_t p = 0; p < 2; p++) {
        assert_int_equal(planners[p](t, 5, off, &arena), TP_ERR_INVALID);
        /* The first offending tensor is named, with both of its values. */
        expect_message("tensor 3");
        expect_message("7");
        expect_message("2");
    }
    assert_int_equal(tp_peak_live_bytes(t, 5, &peak), TP_ERR_INVALID);
    expect_message("tensor 3");

    /* A zero-size tensor is not planned but is still checked. */
    const tp_tensor_lifetime zero[] = { { 1, 0, 0 }, { 0, 2, 1 } };
    assert_int_equal(tp_plan_offsets(zero, 2, off, &arena), TP_ERR_INVALID);
    expect_message("tensor 1");
    assert_int_equal(tp_peak_live_bytes(zero, 2, &peak), TP_ERR_INVALID);
    expect_message("tensor 1");
}

static void offsets_past_size_max_are_refused(void **state)
{
    (void)state;
    size_t off[3], arena = 99;
    /* The first fills [0, SIZE_MAX); the second, alive at the same time, would end past it. */
    const tp_tensor_lifetime stacked[] = { { SIZE_MAX, 0, 4 }, { 1, 4, 6 } };
    /* Two halves: the second starts at 2^63 and would end at 2^64. */
    const tp_tensor_lifetime halves[] = { { 3, 0, 0 }, { SIZE_MAX / 2 + 1, 1, 2 },
                                          { SIZE_MAX / 2 + 1, 2, 3 } };
    for (size_t p = 0; p < 2; p++) {
        assert_int_equal(planners[p](stacked, 2, off, &arena), TP_ERR_OVERFLOW);
        expect_message("tensor 1");
        assert_int_equal(planners[p](halves, 3, off, &arena), TP_ERR_OVERFLOW);
        expect_message("tensor 2");
    }
    /* Not alive together: both fit at offset 0. */
    const tp_tensor_lifetime apart[] = { { SIZE_MAX, 0, 3 }, { SIZE_MAX, 4, 6 } };
    assert_int_equal(tp_plan_offsets(apart, 2, off, &arena), TP_OK);
    assert_int_equal(off[0], 0);
    assert_int_equal(off[1], 0);
    assert_int_equal(arena, SIZE_MAX);
}

static void live_bytes_past_size_max_are_refused(void **state)
{
    (void)state;
    size_t peak = 99;
    const tp_tensor_lifetime t[] = { { 5, 0, 0 }, { SIZE_MAX - 1, 1, 3 }, { 2, 3, 4 } };
    assert_int_equal(tp_peak_live_bytes(t, 3, &peak), TP_ERR_OVERFLOW);
    expect_message("tensor 2");
    const tp_tensor_lifetime fits[] = { { SIZE_MAX - 1, 1, 3 }, { 1, 3, 4 } };
    assert_int_equal(tp_peak_live_bytes(fits, 2, &peak), TP_OK);
    assert_int_equal(peak, SIZE_MAX);
}

static void null_pointers_with_a_count_are_refused(void **state)
{
    (void)state;
    const tp_tensor_lifetime t[] = { { 8, 0, 1 } };
    size_t off[1], arena, peak, k, island[4];
    const tp_edge e[] = { { 0, 1 } };
    tp_edge out[1];

    for (size_t p = 0; p < 2; p++) {
        assert_int_equal(planners[p](NULL, 1, off, &arena), TP_ERR_INVALID);
        expect_message("tensors");
        assert_int_equal(planners[p](t, 1, NULL, &arena), TP_ERR_INVALID);
        expect_message("offsets");
        assert_int_equal(planners[p](t, 1, off, NULL), TP_ERR_INVALID);
        expect_message("arena_size");
        assert_int_equal(planners[p](NULL, 0, NULL, NULL), TP_ERR_INVALID);
    }
    assert_int_equal(tp_peak_live_bytes(NULL, 1, &peak), TP_ERR_INVALID);
    expect_message("tensors");
    assert_int_equal(tp_peak_live_bytes(t, 1, NULL), TP_ERR_INVALID);
    expect_message("peak");

    assert_int_equal(tp_transitive_reduction(2, NULL, 1, out, &k), TP_ERR_INVALID);
    expect_message("edges");
    assert_int_equal(tp_transitive_reduction(2, e, 1, NULL, &k), TP_ERR_INVALID);
    expect_message("reduced");
    assert_int_equal(tp_transitive_reduction(2, e, 1, out, NULL), TP_ERR_INVALID);
    expect_message("reduced_count");

    assert_int_equal(tp_islands(2, NULL, 1, island, &k), TP_ERR_INVALID);
    expect_message("incidences");
    assert_int_equal(tp_islands(2, e, 1, NULL, &k), TP_ERR_INVALID);
    expect_message("island_of");
    assert_int_equal(tp_islands(2, e, 1, island, NULL), TP_ERR_INVALID);
    expect_message("island_count");

    /* Zero counts need no arrays. */
    assert_int_equal(tp_plan_offsets(NULL, 0, NULL, &arena), TP_OK);
    assert_int_equal(tp_peak_live_bytes(NULL, 0, &peak), TP_OK);
    assert_int_equal(tp_transitive_reduction(5, NULL, 0, NULL, &k), TP_OK);
    assert_int_equal(tp_islands(0, NULL, 0, NULL, &k), TP_OK);
}

static void edges_against_the_topological_numbering_are_refused_by_index(void **state)
{
    (void)state;
    tp_edge out[4];
    size_t k = 99;
    const tp_edge backward[] = { { 0, 1 }, { 1, 2 }, { 3, 2 }, { 2, 1 } };
    assert_int_equal(tp_transitive_reduction(4, backward, 4, out, &k), TP_ERR_INVALID);
    expect_message("topological");
    expect_message("edge 2");
    expect_message("3 -> 2");
    const tp_edge loop[] = { { 0, 1 }, { 1, 1 } };
    assert_int_equal(tp_transitive_reduction(4, loop, 2, out, &k), TP_ERR_INVALID);
    expect_message("topological");
    expect_message("edge 1");
    const tp_edge outside[] = { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 0, 4 } };
    assert_int_equal(tp_transitive_reduction(4, outside, 4, out, &k), TP_ERR_INVALID);
    expect_message("topological");
    expect_message("edge 3");
    expect_message("0 -> 4");
}

static void a_reachability_matrix_too_large_for_size_t_is_refused(void **state)
{
    (void)state;
    /* 2^40 nodes: 2^80 bits cannot be addressed; an allocation must not be attempted. */
    const size_t n = (size_t)1 << 40;
    const tp_edge e[] = { { 0, 1 }, { 1, n - 1 } };
    tp_edge out[2];
    size_t k = 99;
    assert_int_equal(tp_transitive_reduction(n, e, 2, out, &k), TP_ERR_NOMEM);
    /* the message gives the size that could not be addressed */
    expect_message("1099511627776 nodes");
    assert_int_equal(k, 99);
}

static void incidences_outside_the_node_range_are_refused_by_index(void **state)
{
    (void)state;
    size_t island[3] = { 7, 7, 7 }, count = 99;
    const tp_edge first[] = { { 0, 1 }, { 3, 0 } };
    assert_int_equal(tp_islands(3, first, 2, island, &count), TP_ERR_INVALID);
    expect_message("incidence 1");
    expect_message("node 3");
    const tp_edge second[] = { { 0, 1 }, { 2, 2 }, { 1, 9 } };
    assert_int_equal(tp_islands(3, second, 3, island, &count), TP_ERR_INVALID);
    expect_message("incidence 2");
    expect_message("node 9");
    assert_int_equal(tp_islands(0, first, 1, NULL, &count), TP_ERR_INVALID);
    expect_message("incidence 0");
}

static void status_names_are_stable(void **state)
{
    (void)state;
    assert_int_equal(TP_OK, 0);
    assert_int_equal(TP_ERR_INVALID, 1);
    assert_int_equal(TP_ERR_NOMEM, 2);
    assert_int_equal(TP_ERR_OVERFLOW, 3);
    assert_string_equal(tp_status_name(TP_OK), "TP_OK");
    assert_string_equal(tp_status_name(TP_ERR_INVALID), "TP_ERR_INVALID");
    assert_string_equal(tp_status_name(TP_ERR_NOMEM), "TP_ERR_NOMEM");
    assert_string_equal(tp_status_name(TP_ERR_OVERFLOW), "TP_ERR_OVERFLOW");
}

/* A portfolio over this many tensors runs its orders on worker threads. A failing worker's
 * message used to stay in that worker's thread-local buffer, so some calls returned
 * TP_ERR_OVERFLOW with an empty tp_last_error(); the portfolio now carries the failing
 * worker's status and message to the caller. Two tensors live together fill exactly SIZE_MAX
 * bytes, so the peak fits, but neither size is a multiple of the 64-byte alignment: whichever
 * goes second starts at the other's size rounded up and ends past SIZE_MAX. */
#define PORTFOLIO_FAILING_CALLS 200
#define PORTFOLIO_FAILING_TENSORS 4100

static void every_failing_portfolio_call_has_a_message(void **state)
{
    (void)state;
    static tp_tensor_lifetime t[PORTFOLIO_FAILING_TENSORS];
    static size_t off[PORTFOLIO_FAILING_TENSORS];
    uint64_t rng = 0x2545f4914f6cdd1dull;
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.strategy = TP_PLAN_PORTFOLIO;
    o.alignment = 64;
    for (int call = 0; call < PORTFOLIO_FAILING_CALLS; call++) {
        for (size_t i = 0; i < PORTFOLIO_FAILING_TENSORS; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            const size_t first = 10 + (size_t)(rng % 1000);
            t[i] = (tp_tensor_lifetime){ 1 + (size_t)(rng >> 40) % 4096, first,
                                         first + (size_t)(rng >> 20) % 50 };
        }
        const size_t a = (size_t)(rng % PORTFOLIO_FAILING_TENSORS);
        const size_t b = (a + 1 + (size_t)(rng >> 32) % (PORTFOLIO_FAILING_TENSORS - 1)) %
                         PORTFOLIO_FAILING_TENSORS;
        t[a] = (tp_tensor_lifetime){ SIZE_MAX / 2 - 32, 0, 1 };  /* 2^63 - 33 */
        t[b] = (tp_tensor_lifetime){ SIZE_MAX / 2 + 33, 0, 1 };  /* 2^63 + 32 */
        size_t arena = 99;
        tp_clear_error();
        assert_int_equal(tp_plan_offsets_ex(t, PORTFOLIO_FAILING_TENSORS, &o, off, &arena, NULL),
                         TP_ERR_OVERFLOW);
        if (tp_last_error()[0] == '\0')
            fail_msg("call %d: TP_ERR_OVERFLOW with an empty message", call);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_lifetime_that_ends_before_it_starts_is_refused_by_name),
        cmocka_unit_test(offsets_past_size_max_are_refused),
        cmocka_unit_test(every_failing_portfolio_call_has_a_message),
        cmocka_unit_test(live_bytes_past_size_max_are_refused),
        cmocka_unit_test(null_pointers_with_a_count_are_refused),
        cmocka_unit_test(edges_against_the_topological_numbering_are_refused_by_index),
        cmocka_unit_test(a_reachability_matrix_too_large_for_size_t_is_refused),
        cmocka_unit_test(incidences_outside_the_node_range_are_refused_by_index),
        cmocka_unit_test(status_names_are_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
