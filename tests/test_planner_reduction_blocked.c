/* The bounded-memory reduction against a Warshall closure written here, with blocks forced
 * by tiny memory budgets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "planner/planner_internal.h"
#include "support/xorshift.h"
#include "tensorplan/planner.h"

/* The seed's xorshift64*; each test sets rng.state to its own starting value. */
static tpt_rng rng;

static uint64_t next_u64(void) { return tpt_rng_next(&rng); }

static size_t below(size_t n) { return (size_t)(next_u64() % n); }

/* Oracle: u -> v survives iff it is an edge and no other successor w of u reaches v, with
 * reachability from a Warshall closure. */
static size_t oracle(size_t n, const tp_edge *edges, size_t m, tp_edge *out)
{
    unsigned char *adj = calloc(n * n, 1), *reach = calloc(n * n, 1);
    for (size_t i = 0; i < m; i++)
        adj[edges[i].from * n + edges[i].to] = reach[edges[i].from * n + edges[i].to] = 1;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < n; i++)
            if (reach[i * n + k])
                for (size_t j = 0; j < n; j++)
                    if (reach[k * n + j])
                        reach[i * n + j] = 1;
    size_t count = 0;
    for (size_t u = 0; u < n; u++) {
        for (size_t v = 0; v < n; v++) {
            if (!adj[u * n + v])
                continue;
            int implied = 0;
            for (size_t w = 0; w < n && !implied; w++)
                implied = w != v && adj[u * n + w] && reach[w * n + v];
            if (!implied)
                out[count++] = (tp_edge){ u, v };
        }
    }
    free(adj);
    free(reach);
    return count;
}

static void check_random_dags(size_t rounds, size_t max_nodes, size_t budget)
{
    for (size_t r = 0; r < rounds; r++) {
        size_t n = 2 + below(max_nodes - 1);
        size_t m = below(4 * n + 1);
        tp_edge *edges = malloc((m + 1) * sizeof *edges);
        tp_edge *want = malloc((m + 1) * sizeof *want);
        tp_edge *got = malloc((m + 1) * sizeof *got);
        int local = below(2) == 0;
        for (size_t i = 0; i < m; i++) {
            size_t a = below(n - 1);
            size_t span = local ? 1 + below(4) : 1 + below(n - 1 - a);
            size_t b = a + span < n ? a + span : n - 1;
            edges[i] = (tp_edge){ a, b };
        }
        size_t want_n = oracle(n, edges, m, want), got_n = 12345;
        assert_int_equal(tp_transitive_reduction_budget(n, edges, m, got, &got_n, budget), TP_OK);
        assert_int_equal(got_n, want_n);
        for (size_t i = 0; i < got_n; i++) {
            assert_int_equal(got[i].from, want[i].from);
            assert_int_equal(got[i].to, want[i].to);
        }
        free(edges);
        free(want);
        free(got);
    }
}

static void test_blocked_reduction_equals_the_warshall_oracle_with_one_word_blocks(void **state)
{
    (void)state;
    rng.state = 17;
    check_random_dags(getenv("TP_SANITIZED") ? 150 : 600, 300, 1); /* 64 columns per block */
}

static void test_blocked_reduction_equals_the_warshall_oracle_with_odd_budgets(void **state)
{
    (void)state;
    rng.state = 23;
    const size_t budgets[] = { 8 * 130, 8 * 300 * 3, 1 << 20 };
    for (size_t i = 0; i < 3; i++)
        check_random_dags(getenv("TP_SANITIZED") ? 50 : 200, 260, budgets[i]);
}

static void test_the_public_reduction_agrees_with_the_dense_one(void **state)
{
    (void)state;
    rng.state = 5;
    const size_t n = 3000, m = 20000;
    tp_edge *edges = malloc(m * sizeof *edges), *a = malloc(m * sizeof *a);
    tp_edge *b = malloc(m * sizeof *b);
    for (size_t i = 0; i < m; i++) {
        size_t u = below(n - 1);
        size_t v = u + 1 + below(below(3) == 0 ? n - 1 - u : (n - 1 - u < 20 ? n - 1 - u : 20));
        edges[i] = (tp_edge){ u, v };
    }
    size_t na = 0, nb = 0;
    assert_int_equal(tp_transitive_reduction_dense(n, edges, m, a, &na), TP_OK);
    assert_int_equal(tp_transitive_reduction(n, edges, m, b, &nb), TP_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    size_t nc = 0;
    assert_int_equal(tp_transitive_reduction_budget(n, edges, m, b, &nc, 4096), TP_OK);
    assert_int_equal(na, nc);
    assert_memory_equal(a, b, na * sizeof *a);
    free(edges);
    free(a);
    free(b);
}

static void test_the_blocked_reduction_refuses_what_the_dense_one_refuses(void **state)
{
    (void)state;
    const tp_edge back[] = { { 0, 1 }, { 2, 1 } };
    tp_edge out[2];
    size_t count;
    assert_int_equal(tp_transitive_reduction_budget(3, back, 2, out, &count, 1), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "topological"));
    const tp_edge outside[] = { { 0, 5 } };
    assert_int_equal(tp_transitive_reduction_budget(3, outside, 1, out, &count, 1),
                     TP_ERR_INVALID);
    assert_int_equal(tp_transitive_reduction_budget(3, NULL, 0, NULL, &count, 1), TP_OK);
    assert_int_equal(count, 0);
}

/* The memory bound: in a child process whose address space may grow by only 64 MiB, the dense
 * matrix of 40,000 nodes (200 MB) cannot be allocated, and the blocked reduction with an 8 MiB
 * budget still gives the dense result computed here beforehand without that limit. Not under
 * the sanitizers, which reserve far more address space than they use. */
static void test_the_blocked_reduction_stays_within_its_memory_budget(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip();
#endif
    if (getenv("TP_SANITIZED") != NULL)
        skip();
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm == NULL)
        skip();
    unsigned long pages = 0;
    const int got = fscanf(statm, "%lu", &pages);
    fclose(statm);
    if (got != 1)
        skip();
    rng.state = 41;
    const size_t n = 40000, m = 160000;
    tp_edge *edges = malloc(m * sizeof *edges), *want = malloc(m * sizeof *want);
    tp_edge *out = malloc(m * sizeof *out);
    for (size_t i = 0; i < m; i++) {
        const size_t u = below(n - 1);
        const size_t reach = below(16) == 0 ? n - 1 - u : (n - 1 - u < 32 ? n - 1 - u : 32);
        edges[i] = (tp_edge){ u, u + 1 + below(reach) };
    }
    size_t want_n = 0;
    assert_int_equal(tp_transitive_reduction_dense(n, edges, m, want, &want_n), TP_OK);
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const rlim_t limit = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)64 << 20);
        const struct rlimit rl = { limit, limit };
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(10);
        size_t k = 0;
        if (tp_transitive_reduction_dense(n, edges, m, out, &k) != TP_ERR_NOMEM)
            _exit(11); /* the limit would not bind */
        if (tp_transitive_reduction_budget(n, edges, m, out, &k, (size_t)8 << 20) != TP_OK)
            _exit(12);
        if (k != want_n || memcmp(out, want, k * sizeof *out) != 0)
            _exit(13);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    free(edges);
    free(want);
    free(out);
}

/* Only live rows take memory: in a graph whose edges reach at most SPAN nodes ahead, a row is
 * read for the last time by a node at most SPAN below it, so at most SPAN + 1 rows are live at
 * once, and 100,000 nodes fit in one block under a 4 MiB budget (a row per node would need 245
 * blocks). The result is checked against a search written here: u -> v is redundant exactly
 * when another successor w of u reaches v, found by a depth-first search from w that never
 * passes v (nodes only lead upward). */
#define SPAN 8
static int reaches(const size_t *first, const tp_edge *sorted, size_t from, size_t to,
                   size_t *stack, unsigned char *seen, size_t *touched, size_t *n_touched)
{
    size_t top = 0;
    int found = 0;
    stack[top++] = from;
    while (top > 0 && !found) {
        const size_t x = stack[--top];
        for (size_t e = first[x]; e < first[x + 1] && !found; e++) {
            const size_t y = sorted[e].to;
            found = y == to;
            if (y < to && !seen[y]) {
                seen[y] = 1;
                touched[(*n_touched)++] = y;
                stack[top++] = y;
            }
        }
    }
    return found;
}

static int by_edge(const void *pa, const void *pb)
{
    const tp_edge *a = pa, *b = pb;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    return (a->to > b->to) - (a->to < b->to);
}

static void test_a_local_graph_keeps_few_rows_live_and_needs_one_block(void **state)
{
    (void)state;
    rng.state = 77;
    const size_t n = getenv("TP_SANITIZED") ? 20000 : 100000, m = 3 * n;
    tp_edge *edges = malloc(m * sizeof *edges), *got = malloc(m * sizeof *got);
    tp_edge *sorted = malloc(m * sizeof *sorted);
    size_t *first = calloc(n + 1, sizeof *first), *stack = malloc(n * sizeof *stack);
    size_t *touched = malloc(n * sizeof *touched);
    unsigned char *seen = calloc(n, 1);
    for (size_t i = 0; i < m; i++) {
        const size_t u = below(n - 1), room = n - 1 - u;
        edges[i] = (tp_edge){ u, u + 1 + below(room < SPAN ? room : SPAN) };
    }
    memcpy(sorted, edges, m * sizeof *sorted);
    qsort(sorted, m, sizeof *sorted, by_edge);
    size_t distinct = 0;
    for (size_t i = 0; i < m; i++)
        if (distinct == 0 || by_edge(&sorted[i], &sorted[distinct - 1]) != 0)
            sorted[distinct++] = sorted[i];
    for (size_t i = 0; i < distinct; i++)
        first[sorted[i].from + 1]++;
    for (size_t u = 0; u < n; u++)
        first[u + 1] += first[u];

    size_t got_n = 0;
    tp_reduction_stats stats;
    assert_int_equal(tp_transitive_reduction_stats(n, edges, m, got, &got_n, (size_t)4 << 20,
                                                   &stats),
                     TP_OK);
    assert_true(stats.live_rows <= SPAN + 1);
    assert_int_equal(stats.passes, 1);

    size_t k = 0;
    for (size_t i = 0; i < distinct; i++) {
        const size_t u = sorted[i].from, v = sorted[i].to;
        int implied = 0;
        for (size_t e = first[u]; e < first[u + 1] && !implied; e++) {
            const size_t w = sorted[e].to;
            if (w >= v)
                break;
            size_t n_touched = 0;
            implied = reaches(first, sorted, w, v, stack, seen, touched, &n_touched);
            for (size_t t = 0; t < n_touched; t++)
                seen[touched[t]] = 0;
        }
        if (!implied) {
            assert_true(k < got_n);
            assert_int_equal(got[k].from, u);
            assert_int_equal(got[k].to, v);
            k++;
        }
    }
    assert_int_equal(k, got_n);
    free(edges);
    free(got);
    free(sorted);
    free(first);
    free(stack);
    free(touched);
    free(seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocked_reduction_equals_the_warshall_oracle_with_one_word_blocks),
        cmocka_unit_test(test_blocked_reduction_equals_the_warshall_oracle_with_odd_budgets),
        cmocka_unit_test(test_the_public_reduction_agrees_with_the_dense_one),
        cmocka_unit_test(test_the_blocked_reduction_refuses_what_the_dense_one_refuses),
        cmocka_unit_test(test_the_blocked_reduction_stays_within_its_memory_budget),
        cmocka_unit_test(test_a_local_graph_keeps_few_rows_live_and_needs_one_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
