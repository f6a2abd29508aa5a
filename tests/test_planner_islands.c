/* tp_islands: the seed's island tests (planner.md section 3), checked against connected
 * components found by an explicit depth-first search written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/xorshift.h"
#include "tensorplan/planner.h"

#define MAX_NODES 60
#define MAX_INC 200

/* Components by iterative DFS over an adjacency matrix, visiting start nodes in ascending
 * order so that labels follow smallest members. Returns the number of components. */
static size_t dfs_components(size_t n, const tp_edge *inc, size_t m, size_t *label)
{
    static unsigned char adj[MAX_NODES][MAX_NODES];
    unsigned char active[MAX_NODES] = { 0 };
    size_t stack[MAX_NODES * MAX_NODES + 1];
    memset(adj, 0, sizeof adj);
    for (size_t i = 0; i < m; i++) {
        adj[inc[i].from][inc[i].to] = adj[inc[i].to][inc[i].from] = 1;
        active[inc[i].from] = active[inc[i].to] = 1;
    }
    size_t count = 0;
    for (size_t v = 0; v < n; v++)
        label[v] = TP_NO_ISLAND;
    for (size_t s = 0; s < n; s++) {
        if (!active[s] || label[s] != TP_NO_ISLAND)
            continue;
        size_t top = 0;
        stack[top++] = s;
        label[s] = count;
        while (top > 0) {
            const size_t v = stack[--top];
            for (size_t w = 0; w < n; w++)
                if (adj[v][w] && label[w] == TP_NO_ISLAND) {
                    label[w] = count;
                    stack[top++] = w;
                }
        }
        count++;
    }
    return count;
}

/* Up to 60 nodes; sparse to dense; self incidences, repeats, untouched nodes. */
static size_t random_incidences(uint64_t seed, size_t *n_out, tp_edge *inc)
{
    tpt_rng r = tpt_rng_seeded(seed + 5000);
    const size_t n = 1 + tpt_rng_below(&r, MAX_NODES);
    const size_t m = tpt_rng_below(&r, n * 3 / 2 + 1);
    for (size_t i = 0; i < m; i++) {
        const size_t a = tpt_rng_below(&r, n);
        const size_t b = tpt_rng_below(&r, 8) == 0 ? a : tpt_rng_below(&r, n);
        inc[i] = (tp_edge){ a, b };
    }
    *n_out = n;
    return m;
}

static size_t islands_ok(size_t n, const tp_edge *inc, size_t m, size_t *label)
{
    size_t count = (size_t)-2;
    const tp_status st = tp_islands(n, inc, m, label, &count);
    if (st != TP_OK)
        fail_msg("tp_islands: %s: %s", tp_status_name(st), tp_last_error());
    return count;
}

static void island_labels_equal_connected_components_from_a_traversal(void **state)
{
    (void)state;
    tp_edge inc[MAX_INC];
    size_t got[MAX_NODES], want[MAX_NODES];
    for (uint64_t seed = 0; seed < 1000; seed++) {
        size_t n;
        const size_t m = random_incidences(seed, &n, inc);
        const size_t count = islands_ok(n, inc, m, got);
        const size_t expect = dfs_components(n, inc, m, want);
        if (count != expect || memcmp(got, want, n * sizeof *got) != 0)
            fail_msg("seed %llu: labels differ from DFS (count %zu vs %zu)",
                     (unsigned long long)seed, count, expect);
    }
}

static void island_labels_ignore_edge_order_and_orientation(void **state)
{
    (void)state;
    tp_edge inc[MAX_INC], moved[MAX_INC];
    size_t a[MAX_NODES], b[MAX_NODES];
    for (uint64_t seed = 0; seed < 500; seed++) {
        size_t n;
        const size_t m = random_incidences(seed, &n, inc);
        const size_t ca = islands_ok(n, inc, m, a);
        tpt_rng r = tpt_rng_seeded(seed + 9000);
        memcpy(moved, inc, m * sizeof *inc);
        for (size_t i = m; i > 1; i--) {
            const size_t j = tpt_rng_below(&r, i);
            const tp_edge t = moved[i - 1];
            moved[i - 1] = moved[j];
            moved[j] = t;
        }
        for (size_t i = 0; i < m; i++)
            if (tpt_rng_below(&r, 2))
                moved[i] = (tp_edge){ moved[i].to, moved[i].from };
        const size_t cb = islands_ok(n, moved, m, b);
        assert_int_equal(ca, cb);
        if (memcmp(a, b, n * sizeof *a) != 0)
            fail_msg("seed %llu: labels depend on order or orientation",
                     (unsigned long long)seed);
    }
}

/* Scanning nodes upward, the first member of each island must carry exactly the next label. */
static void check_numbered_by_smallest_member(size_t n, const size_t *label, size_t count)
{
    size_t next = 0;
    for (size_t v = 0; v < n; v++) {
        if (label[v] == TP_NO_ISLAND)
            continue;
        assert_true(label[v] <= next);
        if (label[v] == next)
            next++;
    }
    assert_int_equal(next, count);
}

static void islands_are_numbered_by_their_smallest_member(void **state)
{
    (void)state;
    /* Islands {1,5,7}, {2,3}, {6}; 0 and 4 untouched. Listed so that the island holding
     * the largest node is met first. */
    const tp_edge hand[] = { { 7, 5 }, { 3, 2 }, { 6, 6 }, { 5, 1 } };
    const size_t want[8] = { TP_NO_ISLAND, 0, 1, 1, TP_NO_ISLAND, 0, 2, 0 };
    size_t got[MAX_NODES], dfs[MAX_NODES];
    assert_int_equal(islands_ok(8, hand, 4, got), 3);
    assert_memory_equal(got, want, sizeof want);
    assert_int_equal(dfs_components(8, hand, 4, dfs), 3);
    assert_memory_equal(dfs, want, sizeof want);

    tp_edge inc[MAX_INC];
    for (uint64_t seed = 0; seed < 500; seed++) {
        size_t n;
        const size_t m = random_incidences(seed + 123456, &n, inc);
        const size_t count = islands_ok(n, inc, m, got);
        check_numbered_by_smallest_member(n, got, count);
    }
}

static void a_self_incidence_activates_a_singleton_and_an_untouched_node_stays_inactive(
    void **state)
{
    (void)state;
    const tp_edge inc[] = { { 2, 2 }, { 4, 1 } };
    size_t got[6], dfs[6];
    assert_int_equal(islands_ok(6, inc, 2, got), 2);
    assert_int_equal(dfs_components(6, inc, 2, dfs), 2);
    assert_memory_equal(got, dfs, sizeof got);
    assert_int_equal(got[0], TP_NO_ISLAND);
    assert_int_equal(got[1], 0);
    assert_int_equal(got[2], 1);
    assert_int_equal(got[3], TP_NO_ISLAND);
    assert_int_equal(got[4], 0);
    assert_int_equal(got[5], TP_NO_ISLAND);

    size_t none[3] = { 1, 2, 3 }, count = 9;
    assert_int_equal(tp_islands(3, NULL, 0, none, &count), TP_OK);
    assert_int_equal(count, 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(none[i], TP_NO_ISLAND);
    assert_int_equal(tp_islands(0, NULL, 0, NULL, &count), TP_OK);
    assert_int_equal(count, 0);
}

static void a_long_chain_is_resolved_without_recursion(void **state)
{
    (void)state;
    const size_t n = 200000;
    tp_edge *inc = malloc(n * sizeof *inc);
    size_t *label = malloc(n * sizeof *label);
    assert_non_null(inc);
    assert_non_null(label);
    /* Descending merges link each node under its predecessor, one hop each: parent[t] = t-1,
     * a chain of depth n-1. The last incidence then has to find the root from the bottom. */
    size_t m = 0;
    for (size_t t = n - 1; t >= 1; t--)
        inc[m++] = (tp_edge){ t, t - 1 };
    inc[m++] = (tp_edge){ n - 1, 0 };
    assert_int_equal(islands_ok(n, inc, m, label), 1);
    for (size_t v = 0; v < n; v++)
        if (label[v] != 0)
            fail_msg("node %zu has label %zu", v, label[v]);
    free(inc);
    free(label);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(island_labels_equal_connected_components_from_a_traversal),
        cmocka_unit_test(island_labels_ignore_edge_order_and_orientation),
        cmocka_unit_test(islands_are_numbered_by_their_smallest_member),
        cmocka_unit_test(
            a_self_incidence_activates_a_singleton_and_an_untouched_node_stays_inactive),
        cmocka_unit_test(a_long_chain_is_resolved_without_recursion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
