/* The upstream cases of tests/data/upstream_graph_cases.json (TensorFlow collective ordering
 * as transitive_reduction inputs, MuJoCo island cases as incidences). Every case that carries
 * an expected result or a generator is run; an unrecognised case fails the test, so new data
 * cannot be skipped silently. Expected results come from the file; where the file describes a
 * generated family, the oracle is written here (Warshall closure, depth-first components). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tensorplan/planner.h"

static cJSON *cases_root;

static int load_cases(void **state)
{
    (void)state;
    const char *path = TP_TEST_DATA "/upstream_graph_cases.json";
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        print_error("cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    if (text == NULL || fread(text, 1, (size_t)len, f) != (size_t)len) {
        free(text);
        fclose(f);
        return -1;
    }
    fclose(f);
    text[len] = '\0';
    cases_root = cJSON_Parse(text);
    free(text);
    return cases_root == NULL ? -1 : 0;
}

static int free_cases(void **state)
{
    (void)state;
    cJSON_Delete(cases_root);
    return 0;
}

static const char *case_name(const cJSON *c)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
    return cJSON_IsString(name) ? name->valuestring : "(unnamed)";
}

static const cJSON *item(const cJSON *c, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(c, key);
}

static size_t json_size(const cJSON *v)
{
    assert_true(cJSON_IsNumber(v));
    assert_true(v->valuedouble >= 0);
    return (size_t)v->valuedouble;
}

/* null and -1 both mean "no island" / "inactive" in the file. */
static size_t json_label(const cJSON *v)
{
    if (cJSON_IsNull(v) || (cJSON_IsNumber(v) && v->valuedouble < 0))
        return TP_NO_ISLAND;
    return json_size(v);
}

/* [[a,b], ...] into edges; returns the count. The caller frees. */
static tp_edge *json_pairs(const cJSON *arr, size_t extra, size_t *count)
{
    assert_true(cJSON_IsArray(arr));
    const size_t n = (size_t)cJSON_GetArraySize(arr);
    tp_edge *e = malloc((n + extra + 1) * sizeof *e);
    assert_non_null(e);
    size_t i = 0;
    const cJSON *pair;
    cJSON_ArrayForEach(pair, arr)
    {
        assert_int_equal(cJSON_GetArraySize(pair), 2);
        e[i].from = json_size(cJSON_GetArrayItem(pair, 0));
        e[i].to = json_size(cJSON_GetArrayItem(pair, 1));
        i++;
    }
    *count = n;
    return e;
}

static size_t *json_labels(const cJSON *arr, size_t *count)
{
    assert_true(cJSON_IsArray(arr));
    const size_t n = (size_t)cJSON_GetArraySize(arr);
    size_t *v = malloc((n + 1) * sizeof *v);
    assert_non_null(v);
    size_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) v[i++] = json_label(x);
    *count = n;
    return v;
}

/* ---- transitive reduction ------------------------------------------------------------- */

/* Warshall closure on a small graph, as an n*n byte matrix. */
static unsigned char *closure_of(size_t n, const tp_edge *e, size_t m)
{
    unsigned char *r = calloc(n * n + 1, 1);
    assert_non_null(r);
    for (size_t i = 0; i < m; i++)
        r[e[i].from * n + e[i].to] = 1;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < n; i++)
            if (r[i * n + k])
                for (size_t j = 0; j < n; j++)
                    if (r[k * n + j])
                        r[i * n + j] = 1;
    return r;
}

/* The invariants of the post-fix TF test ("TF invariants" in the file): the result is
 * acyclic (guaranteed by from < to), keeps reachability, is minimal, and reducing it again
 * adds or removes nothing. */
static void check_reduction_invariants(const char *name, size_t n, const tp_edge *in, size_t m,
                                       const tp_edge *out, size_t k)
{
    unsigned char *full = closure_of(n, in, m);
    unsigned char *red = closure_of(n, out, k);
    if (memcmp(full, red, n * n) != 0)
        fail_msg("%s: reachability changed", name);
    tp_edge *less = malloc((k + 1) * sizeof *less);
    assert_non_null(less);
    for (size_t drop = 0; drop < k; drop++) {
        assert_true(out[drop].from < out[drop].to);
        size_t j = 0;
        for (size_t i = 0; i < k; i++)
            if (i != drop)
                less[j++] = out[i];
        unsigned char *cut = closure_of(n, less, j);
        if (memcmp(cut, red, n * n) == 0)
            fail_msg("%s: edge %zu -> %zu is not needed", name, out[drop].from, out[drop].to);
        free(cut);
    }
    size_t k2 = 0;
    assert_int_equal(tp_transitive_reduction(n, out, k, less, &k2), TP_OK);
    assert_int_equal(k2, k);
    assert_memory_equal(less, out, k * sizeof *out);
    free(less);
    free(full);
    free(red);
}

static void reduce_and_compare(const char *name, size_t n, const tp_edge *in, size_t m,
                               const tp_edge *expect, size_t expect_count)
{
    tp_edge *out = malloc((m + 1) * sizeof *out);
    assert_non_null(out);
    size_t k = (size_t)-1;
    const tp_status st = tp_transitive_reduction(n, in, m, out, &k);
    if (st != TP_OK)
        fail_msg("%s: %s: %s", name, tp_status_name(st), tp_last_error());
    if (k != expect_count)
        fail_msg("%s: %zu edges, expected %zu", name, k, expect_count);
    for (size_t i = 0; i < k; i++)
        if (out[i].from != expect[i].from || out[i].to != expect[i].to)
            fail_msg("%s: edge %zu is %zu -> %zu, expected %zu -> %zu", name, i, out[i].from,
                     out[i].to, expect[i].from, expect[i].to);
    check_reduction_invariants(name, n, in, m, out, k);
    free(out);
}

static void tensorflow_collective_ordering_cases_reduce_to_their_expected_edges(void **state)
{
    (void)state;
    const cJSON *list = item(cases_root, "transitive_reduction");
    assert_true(cJSON_IsArray(list));
    int explicit_cases = 0, generated = 0, described = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, list)
    {
        const char *name = case_name(c);
        if (item(c, "edges") && item(c, "expected")) {
            size_t m, k;
            tp_edge *in = json_pairs(item(c, "edges"), 0, &m);
            tp_edge *expect = json_pairs(item(c, "expected"), 0, &k);
            reduce_and_compare(name, json_size(item(c, "node_count")), in, m, expect, k);
            free(in);
            free(expect);
            explicit_cases++;
        } else if (item(c, "n_values")) {
            /* "complete DAG on n nodes" -> [(i, i+1) for i in range(n-1)]. */
            const cJSON *nv;
            cJSON_ArrayForEach(nv, item(c, "n_values"))
            {
                const size_t n = json_size(nv);
                tp_edge *in = malloc(n * n * sizeof *in + 1);
                tp_edge *expect = malloc(n * sizeof *expect);
                assert_non_null(in);
                assert_non_null(expect);
                size_t m = 0;
                for (size_t u = n; u-- > 0;)
                    for (size_t v = n; v-- > u + 1;)
                        in[m++] = (tp_edge){ u, v };
                for (size_t i = 0; i + 1 < n; i++)
                    expect[i] = (tp_edge){ i, i + 1 };
                reduce_and_compare(name, n, in, m, expect, n - 1);
                free(in);
                free(expect);
                generated++;
            }
        } else {
            /* Only the description of invariants, checked on every case above. */
            assert_null(item(c, "expected"));
            assert_null(item(c, "expected_rule"));
            assert_non_null(strstr(name, "invariants"));
            described++;
        }
    }
    assert_int_equal(explicit_cases, 6);
    assert_int_equal(generated, 4);
    assert_int_equal(described, 1);
}

/* ---- islands --------------------------------------------------------------------------- */

/* Canonical labels of a parent forest (-1 inactive): follow parents to the root, number the
 * islands in order of their smallest member. */
static size_t labels_of_forest(const size_t *parent, size_t n, size_t *label)
{
    size_t *root_label = malloc((n + 1) * sizeof *root_label);
    assert_non_null(root_label);
    for (size_t v = 0; v < n; v++)
        root_label[v] = TP_NO_ISLAND;
    size_t count = 0;
    for (size_t v = 0; v < n; v++) {
        label[v] = TP_NO_ISLAND;
        if (parent[v] == TP_NO_ISLAND)
            continue;
        size_t r = v, steps = 0;
        while (parent[r] != r) {
            r = parent[r];
            assert_true(r < n && ++steps <= n);
        }
        if (root_label[r] == TP_NO_ISLAND)
            root_label[r] = count++;
        label[v] = root_label[r];
    }
    free(root_label);
    return count;
}

/* A forest restated as incidences: (x, parent[x]) for every active x, roots included. */
static size_t forest_incidences(const size_t *parent, size_t n, tp_edge *inc)
{
    size_t m = 0;
    for (size_t v = 0; v < n; v++)
        if (parent[v] != TP_NO_ISLAND)
            inc[m++] = (tp_edge){ v, parent[v] };
    return m;
}

static size_t islands_ok(const char *name, size_t n, const tp_edge *inc, size_t m,
                         size_t *label)
{
    size_t count = (size_t)-2;
    const tp_status st = tp_islands(n, inc, m, label, &count);
    if (st != TP_OK)
        fail_msg("%s: %s: %s", name, tp_status_name(st), tp_last_error());
    return count;
}

static void expect_labels(const char *name, const size_t *got, const size_t *want, size_t n)
{
    for (size_t v = 0; v < n; v++)
        if (got[v] != want[v])
            fail_msg("%s: node %zu has label %zu, expected %zu (%s)", name, v, got[v], want[v],
                     "TP_NO_ISLAND is SIZE_MAX");
}

/* Cases given as incidences with expected labels. Their "expected_parent" arrays pin
 * MuJoCo's internal forest; tp_islands exposes labels only, so those are checked through
 * the labels the forest implies. */
static void run_incidence_case(const cJSON *c)
{
    const char *name = case_name(c);
    const size_t n = json_size(item(c, "node_count"));
    size_t m, nl;
    const cJSON *then = item(c, "then");
    tp_edge *inc = json_pairs(item(c, "incidences"), 1, &m);
    size_t *want = json_labels(item(c, "expected_labels"), &nl);
    size_t *got = malloc((n + 1) * sizeof *got), *implied = malloc((n + 1) * sizeof *got);
    assert_non_null(got);
    assert_non_null(implied);
    assert_int_equal(nl, n);
    const size_t count = islands_ok(name, n, inc, m, got);
    expect_labels(name, got, want, n);
    if (item(c, "expected_count"))
        assert_int_equal(count, json_size(item(c, "expected_count")));
    if (item(c, "expected_parent")) {
        size_t np;
        size_t *parent = json_labels(item(c, "expected_parent"), &np);
        assert_int_equal(np, n);
        assert_int_equal(labels_of_forest(parent, n, implied), count);
        expect_labels(name, got, implied, n);
        free(parent);
    }
    if (then) {
        const cJSON *extra = item(then, "incidence");
        inc[m].from = json_size(cJSON_GetArrayItem(extra, 0));
        inc[m].to = json_size(cJSON_GetArrayItem(extra, 1));
        size_t np;
        size_t *parent = json_labels(item(then, "expected_parent"), &np);
        assert_int_equal(np, n);
        const size_t count2 = islands_ok(name, n, inc, m + 1, got);
        assert_int_equal(labels_of_forest(parent, n, implied), count2);
        expect_labels(name, got, implied, n);
        free(parent);
    }
    free(inc);
    free(want);
    free(got);
    free(implied);
}

/* parent_before + merge -> parent_after: checked through labels only (see above). */
static void run_forest_merge(const char *name, const cJSON *before, const cJSON *merge,
                             const cJSON *after)
{
    size_t n, na;
    size_t *parent = json_labels(before, &n);
    size_t *parent_after = json_labels(after, &na);
    assert_int_equal(n, na);
    tp_edge *inc = malloc((n + 1) * sizeof *inc);
    size_t *got = malloc((n + 1) * sizeof *got), *want = malloc((n + 1) * sizeof *want);
    assert_non_null(inc);
    assert_non_null(got);
    assert_non_null(want);
    size_t m = forest_incidences(parent, n, inc);
    if (merge) {
        inc[m].from = json_size(cJSON_GetArrayItem(merge, 0));
        inc[m].to = json_size(cJSON_GetArrayItem(merge, 1));
        m++;
    }
    const size_t count = islands_ok(name, n, inc, m, got);
    assert_int_equal(labels_of_forest(parent_after, n, want), count);
    expect_labels(name, got, want, n);
    free(parent);
    free(parent_after);
    free(inc);
    free(got);
    free(want);
}

/* root_of pins the root MuJoCo's find returns. In label terms: the node shares the root's
 * island, and the root is that island's smallest member. */
static void run_root_of(const cJSON *c)
{
    const char *name = case_name(c);
    size_t n;
    size_t *parent = json_labels(item(c, "parent_before"), &n);
    tp_edge *inc = malloc((n + 1) * sizeof *inc);
    size_t *got = malloc((n + 1) * sizeof *got);
    assert_non_null(inc);
    assert_non_null(got);
    islands_ok(name, n, inc, forest_incidences(parent, n, inc), got);
    const cJSON *entry;
    int checked = 0;
    cJSON_ArrayForEach(entry, item(c, "root_of"))
    {
        const size_t node = (size_t)strtoul(entry->string, NULL, 10);
        const size_t root = json_size(entry);
        assert_true(node < n && root < n);
        assert_int_equal(got[node], got[root]);
        for (size_t v = 0; v < root; v++)
            assert_int_not_equal(got[v], got[root]);
        checked++;
    }
    assert_true(checked > 0);
    free(parent);
    free(inc);
    free(got);
}

/* A forest with expected labels, island count and the dof total over active trees. */
static void run_assign_case(const cJSON *c)
{
    const char *name = case_name(c);
    size_t n, nl, nd, np;
    size_t *parent = json_labels(item(c, "parent"), &n);
    size_t *want = json_labels(item(c, "expected_labels"), &nl);
    size_t *dofs = json_labels(item(c, "tree_dofnum"), &nd);
    size_t *after = json_labels(item(c, "expected_parent_after"), &np);
    assert_int_equal(nl, n);
    assert_int_equal(nd, n);
    assert_int_equal(np, n);
    tp_edge *inc = malloc((n + 1) * sizeof *inc);
    size_t *got = malloc((n + 1) * sizeof *got), *implied = malloc((n + 1) * sizeof *got);
    assert_non_null(inc);
    assert_non_null(got);
    assert_non_null(implied);
    const size_t count = islands_ok(name, n, inc, forest_incidences(parent, n, inc), got);
    expect_labels(name, got, want, n);
    assert_int_equal(count, json_size(item(c, "expected_count")));
    assert_int_equal(labels_of_forest(after, n, implied), count);
    expect_labels(name, got, implied, n);
    size_t nidof = 0;
    for (size_t v = 0; v < n; v++)
        if (got[v] != TP_NO_ISLAND)
            nidof += dofs[v];
    assert_int_equal(nidof, json_size(item(c, "expected_nidof")));
    free(parent);
    free(want);
    free(dofs);
    free(after);
    free(inc);
    free(got);
    free(implied);
}

static void expect_one_island(const char *name, size_t n, const tp_edge *inc, size_t m)
{
    size_t *got = malloc(n * sizeof *got);
    assert_non_null(got);
    assert_int_equal(islands_ok(name, n, inc, m, got), 1);
    for (size_t v = 0; v < n; v++)
        if (got[v] != 0)
            fail_msg("%s: node %zu has label %zu", name, v, got[v]);
    free(got);
}

/* "parent[0]=0, parent[t]=t-1 for t<4096": the chain as incidences in both directions of
 * listing, so one of them builds a deep forest before the last find. */
static void run_adversarial_chain(const char *name)
{
    enum { N = 4096 };
    static tp_edge inc[N];
    for (size_t t = 0; t < N; t++)
        inc[t] = (tp_edge){ t, t == 0 ? 0 : t - 1 };
    expect_one_island(name, N, inc, N);
    for (size_t t = 0; t < N; t++)
        inc[t] = (tp_edge){ N - 1 - t, N - 1 - t == 0 ? 0 : N - 2 - t };
    expect_one_island(name, N, inc, N);
}

/* "merge(t, t-1) for t = 4095..1". */
static void run_long_connected_boundary(const char *name)
{
    enum { N = 4096 };
    static tp_edge inc[N];
    size_t m = 0;
    for (size_t t = N - 1; t >= 1; t--)
        inc[m++] = (tp_edge){ t, t - 1 };
    expect_one_island(name, N, inc, m);
}

/* The file's LCG. Its low bits cycle with short periods (bit k with period 2^(k+1)), so
 * draws use the high bits; the recurrence and seed are the file's. */
typedef struct lcg {
    uint32_t state;
} lcg;

static uint32_t lcg_next(lcg *g)
{
    g->state = g->state * 1664525u + 1013904223u;
    return g->state >> 8;
}

static size_t dfs_components(size_t n, const tp_edge *inc, size_t m, size_t *label)
{
    enum { MAXN = 64 };
    unsigned char adj[MAXN][MAXN] = { { 0 } }, active[MAXN] = { 0 };
    size_t stack[MAXN * MAXN + 1], count = 0;
    assert_true(n <= MAXN);
    for (size_t i = 0; i < m; i++) {
        adj[inc[i].from][inc[i].to] = adj[inc[i].to][inc[i].from] = 1;
        active[inc[i].from] = active[inc[i].to] = 1;
    }
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

/* 2000 trials, ntree = 1 + next() % 64, nedge = next() % 192; incidence kinds static-first,
 * static-second, self, repeat, reversed, random. A static endpoint (-1 upstream) is replaced
 * by the other endpoint, as MuJoCo does. */
static void run_randomized_differential(const char *name)
{
    lcg g = { 0x5eed3396u };
    tp_edge inc[192];
    size_t got[64], want[64];
    for (int trial = 0; trial < 2000; trial++) {
        const size_t ntree = 1 + lcg_next(&g) % 64;
        const size_t nedge = lcg_next(&g) % 192;
        for (size_t i = 0; i < nedge; i++) {
            const size_t a = lcg_next(&g) % ntree, b = lcg_next(&g) % ntree;
            switch (lcg_next(&g) % 6) {
            case 0: inc[i] = (tp_edge){ b, b }; break; /* (-1, b) */
            case 1: inc[i] = (tp_edge){ a, a }; break; /* (a, -1) */
            case 2: inc[i] = (tp_edge){ a, a }; break;
            case 3: inc[i] = i > 0 ? inc[i - 1] : (tp_edge){ a, b }; break;
            case 4:
                inc[i] = i > 0 ? (tp_edge){ inc[i - 1].to, inc[i - 1].from } : (tp_edge){ b, a };
                break;
            default: inc[i] = (tp_edge){ a, b }; break;
            }
        }
        const size_t count = islands_ok(name, ntree, inc, nedge, got);
        const size_t expect = dfs_components(ntree, inc, nedge, want);
        if (count != expect || memcmp(got, want, ntree * sizeof *got) != 0)
            fail_msg("%s: trial %d differs from DFS", name, trial);
    }
}

/* "1024 trees, one connect between trees 0 and 1": one island, trees 2..1023 unassigned. */
static void run_1024_trees(const char *name)
{
    enum { N = 1024 };
    static size_t got[N];
    const tp_edge inc[] = { { 0, 1 } };
    assert_int_equal(islands_ok(name, N, inc, 1, got), 1);
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], 0);
    for (size_t v = 2; v < N; v++)
        assert_int_equal(got[v], TP_NO_ISLAND);
}

static void mujoco_island_cases_give_their_expected_labels(void **state)
{
    (void)state;
    const cJSON *list = item(cases_root, "islands");
    assert_true(cJSON_IsArray(list));
    int run = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, list)
    {
        const char *name = case_name(c);
        if (item(c, "incidences") && item(c, "expected_labels")) {
            run_incidence_case(c);
        } else if (item(c, "cases")) {
            const cJSON *sub;
            cJSON_ArrayForEach(sub, item(c, "cases"))
                run_forest_merge(name, item(sub, "parent_before"), item(sub, "merge"),
                                 item(sub, "parent_after"));
        } else if (item(c, "parent_before") && item(c, "parent_after")) {
            /* root_of pins the root MuJoCo's find returns: in label terms, the node and its
             * root share an island. */
            run_forest_merge(name, item(c, "parent_before"), NULL, item(c, "parent_after"));
            run_root_of(c);
        } else if (item(c, "parent") && item(c, "expected_labels")) {
            run_assign_case(c);
        } else if (strstr(name, "4096NodeAdversarialChain")) {
            run_adversarial_chain(name);
        } else if (strstr(name, "LongConnectedBoundaryCase")) {
            run_long_connected_boundary(name);
        } else if (strstr(name, "RandomizedDifferential")) {
            run_randomized_differential(name);
        } else if (strstr(name, "1024Trees")) {
            run_1024_trees(name);
        } else {
            fail_msg("unrecognised island case \"%s\"", name);
        }
        run++;
    }
    assert_int_equal(run, cJSON_GetArraySize(list));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tensorflow_collective_ordering_cases_reduce_to_their_expected_edges),
        cmocka_unit_test(mujoco_island_cases_give_their_expected_labels),
    };
    return cmocka_run_group_tests(tests, load_cases, free_cases);
}
