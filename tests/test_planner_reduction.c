/* tp_transitive_reduction: the seed's reduction tests (planner.md section 3), checked against
 * Warshall's closure written here, plus order and duplicate independence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/xorshift.h"
#include "tensorplan/planner.h"

#define MAX_NODES 24
#define MAX_EDGES (MAX_NODES * (MAX_NODES - 1) / 2 * 2)

typedef struct closure {
    unsigned char r[MAX_NODES][MAX_NODES];
} closure;

/* Warshall: r[i][j] iff a non-empty path leads from i to j. */
static void warshall(size_t n, const tp_edge *e, size_t m, closure *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < m; i++)
        c->r[e[i].from][e[i].to] = 1;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < n; i++)
            if (c->r[i][k])
                for (size_t j = 0; j < n; j++)
                    if (c->r[k][j])
                        c->r[i][j] = 1;
}

static int same_closure(const closure *a, const closure *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* A random DAG on up to 24 nodes, numbered topologically, with some duplicate edges and
 * edges listed in random order. Density varies per seed so both sparse and dense graphs
 * occur. */
static size_t random_dag(uint64_t seed, size_t *n_out, tp_edge *e)
{
    tpt_rng r = tpt_rng_seeded(seed + 1000);
    const size_t n = 1 + tpt_rng_below(&r, MAX_NODES);
    const size_t density = 1 + tpt_rng_below(&r, 100);
    size_t m = 0;
    for (size_t u = 0; u < n; u++)
        for (size_t v = u + 1; v < n; v++)
            if (tpt_rng_below(&r, 100) < density) {
                e[m++] = (tp_edge){ u, v };
                if (tpt_rng_below(&r, 10) == 0)
                    e[m++] = (tp_edge){ u, v };
            }
    for (size_t i = m; i > 1; i--) {
        const size_t j = tpt_rng_below(&r, i);
        const tp_edge tmp = e[i - 1];
        e[i - 1] = e[j];
        e[j] = tmp;
    }
    *n_out = n;
    return m;
}

static size_t reduce_ok(size_t n, const tp_edge *e, size_t m, tp_edge *out)
{
    size_t count = (size_t)-1;
    const tp_status st = tp_transitive_reduction(n, e, m, out, &count);
    if (st != TP_OK)
        fail_msg("tp_transitive_reduction: %s: %s", tp_status_name(st), tp_last_error());
    return count;
}

/* Sorted strictly ascending by (from, to), and every output edge is an input edge. */
static void check_sorted_subset(const tp_edge *in, size_t m, const tp_edge *out, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        if (i > 0)
            assert_true(out[i - 1].from < out[i].from ||
                        (out[i - 1].from == out[i].from && out[i - 1].to < out[i].to));
        int found = 0;
        for (size_t j = 0; j < m && !found; j++)
            found = in[j].from == out[i].from && in[j].to == out[i].to;
        assert_true(found);
    }
}

static void the_reduction_has_the_same_reachability_as_the_original(void **state)
{
    (void)state;
    tp_edge e[MAX_EDGES], out[MAX_EDGES];
    closure before, after;
    for (uint64_t seed = 0; seed < 300; seed++) {
        size_t n;
        const size_t m = random_dag(seed, &n, e);
        const size_t k = reduce_ok(n, e, m, out);
        check_sorted_subset(e, m, out, k);
        warshall(n, e, m, &before);
        warshall(n, out, k, &after);
        if (!same_closure(&before, &after))
            fail_msg("seed %llu: reachability changed", (unsigned long long)seed);
    }
}

static void deleting_any_surviving_edge_changes_reachability(void **state)
{
    (void)state;
    tp_edge e[MAX_EDGES], out[MAX_EDGES], less[MAX_EDGES];
    closure full, cut;
    for (uint64_t seed = 0; seed < 300; seed++) {
        size_t n;
        const size_t m = random_dag(seed, &n, e);
        const size_t k = reduce_ok(n, e, m, out);
        warshall(n, out, k, &full);
        for (size_t drop = 0; drop < k; drop++) {
            size_t j = 0;
            for (size_t i = 0; i < k; i++)
                if (i != drop)
                    less[j++] = out[i];
            warshall(n, less, j, &cut);
            if (same_closure(&full, &cut))
                fail_msg("seed %llu: edge %zu -> %zu is redundant", (unsigned long long)seed,
                         out[drop].from, out[drop].to);
        }
    }
}

static int next_permutation(size_t *p, size_t n)
{
    size_t i = n - 1;
    while (i > 0 && p[i - 1] >= p[i])
        i--;
    if (i == 0)
        return 0;
    size_t j = n - 1;
    while (p[j] <= p[i - 1])
        j--;
    size_t t = p[i - 1];
    p[i - 1] = p[j];
    p[j] = t;
    for (size_t a = i, b = n - 1; a < b; a++, b--) {
        t = p[a];
        p[a] = p[b];
        p[b] = t;
    }
    return 1;
}

static void a_bypass_implied_by_a_path_of_length_three_is_removed_in_every_edge_order(
    void **state)
{
    (void)state;
    const tp_edge edges[4] = { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 0, 3 } };
    size_t perm[4] = { 0, 1, 2, 3 };
    tp_edge in[4], out[4];
    closure before, after;
    int orders = 0;
    do {
        for (size_t i = 0; i < 4; i++)
            in[i] = edges[perm[i]];
        const size_t k = reduce_ok(4, in, 4, out);
        warshall(4, in, 4, &before);
        warshall(4, out, k, &after);
        assert_true(same_closure(&before, &after));
        assert_int_equal(k, 3);
        for (size_t i = 0; i < 3; i++) {
            assert_int_equal(out[i].from, i);
            assert_int_equal(out[i].to, i + 1);
        }
        orders++;
    } while (next_permutation(perm, 4));
    assert_int_equal(orders, 24);
}

static void an_edge_against_the_topological_numbering_is_rejected(void **state)
{
    (void)state;
    const tp_edge backward[] = { { 0, 1 }, { 2, 1 } };
    const tp_edge self[] = { { 1, 1 } };
    const tp_edge outside[] = { { 0, 1 }, { 1, 2 }, { 2, 3 } };
    tp_edge out[3];
    size_t k = 77;
    assert_int_equal(tp_transitive_reduction(3, backward, 2, out, &k), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "topological"));
    assert_int_equal(tp_transitive_reduction(3, self, 1, out, &k), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "topological"));
    assert_int_equal(tp_transitive_reduction(3, outside, 3, out, &k), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "topological"));
    assert_int_equal(k, 77);
}

static void the_result_depends_on_the_edge_set_only(void **state)
{
    (void)state;
    tp_edge e[MAX_EDGES], out[MAX_EDGES], shuffled[MAX_EDGES * 2], out2[MAX_EDGES * 2];
    for (uint64_t seed = 0; seed < 200; seed++) {
        size_t n;
        const size_t m = random_dag(seed, &n, e);
        const size_t k = reduce_ok(n, e, m, out);
        /* Same set: every edge doubled, in another order. */
        tpt_rng r = tpt_rng_seeded(seed + 77);
        size_t m2 = 0;
        for (size_t i = 0; i < m; i++) {
            shuffled[m2++] = e[i];
            shuffled[m2++] = e[i];
        }
        for (size_t i = m2; i > 1; i--) {
            const size_t j = tpt_rng_below(&r, i);
            const tp_edge t = shuffled[i - 1];
            shuffled[i - 1] = shuffled[j];
            shuffled[j] = t;
        }
        const size_t k2 = reduce_ok(n, shuffled, m2, out2);
        assert_int_equal(k, k2);
        assert_memory_equal(out, out2, k * sizeof *out);
        /* Reducing a reduction changes nothing. */
        const size_t k3 = reduce_ok(n, out, k, out2);
        assert_int_equal(k, k3);
        assert_memory_equal(out, out2, k * sizeof *out);
    }
}

static void empty_and_sparse_inputs(void **state)
{
    (void)state;
    size_t k = 5;
    assert_int_equal(tp_transitive_reduction(0, NULL, 0, NULL, &k), TP_OK);
    assert_int_equal(k, 0);
    k = 5;
    assert_int_equal(tp_transitive_reduction(1000000, NULL, 0, NULL, &k), TP_OK);
    assert_int_equal(k, 0);
    /* Nodes above the largest endpoint carry no edges, so a huge node_count with few edges
     * still reduces. */
    const tp_edge e[] = { { 0, 2 }, { 1, 2 }, { 0, 1 } };
    tp_edge out[3];
    k = reduce_ok((size_t)1 << 40, e, 3, out);
    assert_int_equal(k, 2);
    assert_int_equal(out[0].from, 0);
    assert_int_equal(out[0].to, 1);
    assert_int_equal(out[1].from, 1);
    assert_int_equal(out[1].to, 2);
}

/* Edges far apart in index cross 64-bit word boundaries of the bit matrix. */
static void wide_graphs_cross_word_boundaries(void **state)
{
    (void)state;
    enum { N = 200 };
    static tp_edge e[3 * N], out[3 * N];
    size_t m = 0;
    for (size_t u = 0; u + 1 < N; u++)
        e[m++] = (tp_edge){ u, u + 1 };
    for (size_t u = 0; u + 70 < N; u += 7)
        e[m++] = (tp_edge){ u, u + 70 };
    e[m++] = (tp_edge){ 0, N - 1 };
    const size_t k = reduce_ok(N, e, m, out);
    assert_int_equal(k, N - 1);
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(out[i].from, i);
        assert_int_equal(out[i].to, i + 1);
    }
    /* Without the chain, the long jumps are all that reach their targets. */
    const size_t k2 = reduce_ok(N, e + (N - 1), m - (N - 1), out);
    size_t jumps = 0;
    for (size_t u = 0; u + 70 < N; u += 7)
        jumps++;
    assert_int_equal(k2, jumps + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_reduction_has_the_same_reachability_as_the_original),
        cmocka_unit_test(deleting_any_surviving_edge_changes_reachability),
        cmocka_unit_test(
            a_bypass_implied_by_a_path_of_length_three_is_removed_in_every_edge_order),
        cmocka_unit_test(an_edge_against_the_topological_numbering_is_rejected),
        cmocka_unit_test(the_result_depends_on_the_edge_set_only),
        cmocka_unit_test(empty_and_sparse_inputs),
        cmocka_unit_test(wide_graphs_cross_word_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
