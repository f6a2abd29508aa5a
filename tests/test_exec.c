/* The scheduler executing planned graphs: random graphs give the same bits under every
 * strategy and aliasing policy as under one private buffer per node (naive); a reused plan
 * executes again without allocating; the bug-class rules, each switched off, break results;
 * the scheduler's refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc/alloc_debug.h"
#include "support/plan_check.h"
#include "support/random_graph.h"
#include "tensorplan/alloc.h"
#include "tensorplan/exec.h"
#include "tensorplan/kernels.h"

static int sanitized(void)
{
    const char *v = getenv("TP_SANITIZED");
    return v && strcmp(v, "1") == 0;
}

/* Everything a run produces: every graph output then every KV region, concatenated. */
typedef struct result {
    float *data;
    size_t n;
    size_t allocs_first, allocs_second; /* pool allocations by each of two executions */
} result;

static void append(result *r, const float *src, size_t n)
{
    float *p = realloc(r->data, (r->n + n) * sizeof *p);
    assert_non_null(p);
    memcpy(p + r->n, src, n * sizeof *p);
    r->data = p;
    r->n += n;
}

static void fill_inputs(tp_allocator *a, const tp_graph *g, uint64_t seed, size_t vocab,
                        size_t n_ctx)
{
    for (size_t k = 0; k < g->n_inputs; k++) {
        const tp_node *in = &g->nodes[g->inputs[k]];
        size_t n = tp_node_elements(in);
        float *d = malloc(n * sizeof *d);
        assert_non_null(d);
        tpt_random_input_data(g, in->id, seed + k, vocab, n_ctx, d);
        assert_int_equal(tp_alloc_fill_input(a, g, in->name, d, n), TP_OK);
        free(d);
    }
}

static void collect(tp_allocator *a, const tp_graph *g, int n_layers, result *r)
{
    for (size_t k = 0; k < g->n_outputs; k++) {
        tp_bufref ref;
        assert_true(tp_alloc_node_buffer(a, g->outputs[k], &ref));
        float *d = malloc(ref.len * sizeof *d);
        assert_non_null(d);
        assert_int_equal(tp_alloc_read(a, &ref, d), TP_OK);
        append(r, d, ref.len);
        free(d);
    }
    for (int L = 0; L < n_layers; L++) {
        tp_bufref kv[2];
        if (!tp_alloc_kv_pair(a, L, &kv[0], &kv[1]))
            continue;
        for (int j = 0; j < 2; j++) {
            float *d = malloc(kv[j].len * sizeof *d);
            assert_non_null(d);
            assert_int_equal(tp_alloc_read(a, &kv[j], d), TP_OK);
            append(r, d, kv[j].len);
            free(d);
        }
    }
}

/* Plans g on a fresh host allocator with `ao`, fills inputs, executes twice (the second
 * time on the reused plan with the same inputs) and collects the results of the second. */
/* The rules run_graph and run_late_input turn off (alloc_debug.h): none but where a test
 * says. */
static tp_alloc_test_switches run_switches;

static void run_graph(const tp_graph *g, const tp_weights *w, const tp_alloc_options *ao,
                      const tp_exec_options *eo, uint64_t seed, size_t vocab, size_t n_ctx,
                      result *r)
{
    memset(r, 0, sizeof *r);
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    tp_alloc_set_test_switches(a, &run_switches);
    if (tp_alloc_graph(a, g, ao) != TP_OK)
        fail_msg("alloc_graph: %s", tp_last_error());
    fill_inputs(a, g, seed, vocab, n_ctx);
    size_t a0 = tp_alloc_pool_allocations(a);
    tp_status st = tp_execute(a, g, w, eo, NULL);
    if (st != TP_OK)
        fail_msg("execute: %s", tp_last_error());
    size_t a1 = tp_alloc_pool_allocations(a);
    fill_inputs(a, g, seed, vocab, n_ctx);
    assert_int_equal(tp_execute(a, g, w, eo, NULL), TP_OK);
    r->allocs_first = a1 - a0;
    r->allocs_second = tp_alloc_pool_allocations(a) - a1;
    collect(a, g, 8, r);
    tp_allocator_destroy(a);
}

static void test_random_graphs_bit_identical_to_naive(void **state)
{
    (void)state;
    const int n_seeds = sanitized() ? 12 : 60;
    const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA};
    const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                        TP_ALIAS_NONE};
    tp_exec_options eo = tp_exec_options_default();
    size_t staged_graphs = 0;
    for (int seed = 0; seed < n_seeds; seed++) {
        tpt_random_graph_options go = tpt_random_graph_defaults();
        go.n_nodes = 20 + (size_t)(seed % 5) * 15;
        tp_graph *g = NULL;
        assert_int_equal(tpt_random_graph((uint64_t)seed, &go, &g), TP_OK);
        tp_weights *w = NULL;
        assert_int_equal(tpt_random_graph_weights(g, go.vocab, (uint64_t)seed + 1000, &w), TP_OK);

        tp_alloc_options naive = tp_alloc_options_default();
        naive.strategy = TP_STRATEGY_NAIVE;
        result ref;
        run_graph(g, w, &naive, &eo, (uint64_t)seed, go.vocab, go.n_ctx, &ref);
        assert_true(ref.n > 0);
        /* a reused plan executes again without touching any pool */
        assert_int_equal(ref.allocs_second, 0);
        if (ref.allocs_first > 0)
            staged_graphs++; /* staging buffers are taken on the first execution only */
        for (size_t si = 0; si < 2; si++)
            for (size_t pi = 0; pi < 3; pi++) {
                tp_alloc_options o = tp_alloc_options_default();
                o.strategy = strategies[si];
                o.aliasing = policies[pi];
                result r;
                run_graph(g, w, &o, &eo, (uint64_t)seed, go.vocab, go.n_ctx, &r);
                assert_int_equal(r.n, ref.n);
                if (memcmp(r.data, ref.data, r.n * sizeof(float)) != 0)
                    fail_msg("seed %d: %s/%s differs from naive", seed,
                             tp_alloc_strategy_name(o.strategy),
                             tp_alias_policy_name(o.aliasing));
                assert_int_equal(r.allocs_second, 0);
                free(r.data);
            }
        free(ref.data);
        tp_weights_destroy(w);
        tp_graph_destroy(g);
    }
    /* the generator mixes backends: some graphs must have crossed a split boundary */
    assert_true(staged_graphs > 0);
}

static void test_random_graphs_thread_count_independent(void **state)
{
    (void)state;
    tp_exec_options eo = tp_exec_options_default();
    for (int seed = 100; seed < 104; seed++) {
        tpt_random_graph_options go = tpt_random_graph_defaults();
        go.n_tokens = 4;
        tp_graph *g = NULL;
        assert_int_equal(tpt_random_graph((uint64_t)seed, &go, &g), TP_OK);
        tp_weights *w = NULL;
        assert_int_equal(tpt_random_graph_weights(g, go.vocab, 7, &w), TP_OK);
        result r1, r3;
        tp_kernels_set_threads(1);
        run_graph(g, w, NULL, &eo, 5, go.vocab, go.n_ctx, &r1);
        tp_kernels_set_threads(3);
        run_graph(g, w, NULL, &eo, 5, go.vocab, go.n_ctx, &r3);
        tp_kernels_set_threads(0);
        assert_int_equal(r1.n, r3.n);
        assert_memory_equal(r1.data, r3.data, r1.n * sizeof(float));
        free(r1.data);
        free(r3.data);
        tp_weights_destroy(w);
        tp_graph_destroy(g);
    }
}

/* The equivalence check has teeth: with liveness computed in a Kahn order (the G3 bug)
 * some random graphs must come out different from naive. */
static void test_kahn_liveness_breaks_random_graphs(void **state)
{
    (void)state;
    tp_exec_options eo = tp_exec_options_default();
    size_t broken = 0;
    for (int seed = 0; seed < 30; seed++) {
        tpt_random_graph_options go = tpt_random_graph_defaults();
        tp_graph *g = NULL;
        assert_int_equal(tpt_random_graph((uint64_t)seed, &go, &g), TP_OK);
        tp_weights *w = NULL;
        assert_int_equal(tpt_random_graph_weights(g, go.vocab, 11, &w), TP_OK);
        tp_alloc_options naive = tp_alloc_options_default();
        naive.strategy = TP_STRATEGY_NAIVE;
        const tp_alloc_test_switches kahn = { .kahn_liveness = 1 };
        result ref, r, good;
        run_graph(g, w, &naive, &eo, 9, go.vocab, go.n_ctx, &ref);
        run_switches = kahn;
        run_graph(g, w, NULL, &eo, 9, go.vocab, go.n_ctx, &r);
        run_switches = (tp_alloc_test_switches){ 0 };
        tp_alloc_options build = tp_alloc_options_default();
        run_graph(g, w, &build, &eo, 9, go.vocab, go.n_ctx, &good);
        /* the build order gives the reference's outputs bit for bit */
        assert_int_equal(good.n, ref.n);
        assert_memory_equal(good.data, ref.data, ref.n * sizeof(float));
        const int differs = r.n != ref.n || memcmp(r.data, ref.data, r.n * sizeof(float)) != 0;
        broken += differs;
        /* and wrong outputs come with a plan the independent checker refuses */
        if (differs) {
            tp_allocator *a = NULL;
            assert_int_equal(tp_allocator_create_host(&a), TP_OK);
            tp_alloc_set_test_switches(a, &kahn);
            assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
            tpt_plan p;
            char why[512] = "";
            assert_int_equal(tpt_plan_from_allocator(a, &p), 0);
            assert_false(tpt_check_plan(g, &p, why, sizeof why));
            tpt_plan_free(&p);
            tp_allocator_destroy(a);
        }
        free(ref.data);
        free(r.data);
        free(good.data);
        tp_weights_destroy(w);
        tp_graph_destroy(g);
    }
    assert_true(broken > 0);
}

/* ---- bug class: unpinned inputs ------------------------------------------------------------ */

/* token_ids [4] -> embed = get_rows(table, token_ids) [8, 4]; then an input positions [4]
 * declared after the embedding (its last reader), then rope(embed, positions), output. */
static tp_graph *late_input_graph(void)
{
    tp_graph *g = NULL;
    assert_int_equal(tp_graph_create(&g), TP_OK);
    size_t ids, pos, emb, rope;
    assert_int_equal(tp_graph_add_input(g, "token_ids", 4, TP_DTYPE_I32, &ids), TP_OK);
    tp_node n = tp_node_init(TP_OP_GET_ROWS, "embed");
    n.n_src = 1;
    n.src[0] = ids;
    n.shape[0] = 8;
    n.shape[1] = 4;
    n.shape[2] = n.shape[3] = 1;
    snprintf(n.p.weight, sizeof n.p.weight, "table");
    assert_int_equal(tp_graph_add_node(g, &n, &emb), TP_OK);
    assert_int_equal(tp_graph_add_input(g, "positions", 4, TP_DTYPE_I32, &pos), TP_OK);
    n = tp_node_init(TP_OP_ROPE, "rope");
    n.n_src = 2;
    n.src[0] = emb;
    n.src[1] = pos;
    n.shape[0] = 8;
    n.shape[1] = 4;
    n.shape[2] = n.shape[3] = 1;
    n.p.n_head = 2;
    n.p.head_dim = 4;
    n.p.rope_base = 10000.0f;
    assert_int_equal(tp_graph_add_node(g, &n, &rope), TP_OK);
    assert_int_equal(tp_graph_mark_output(g, rope), TP_OK);
    assert_int_equal(tp_graph_assign_backends(g, 0), TP_OK);
    return g;
}

static void run_late_input(const tp_alloc_options *o, float *out, const tp_weights *w)
{
    tp_graph *g = late_input_graph();
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    tp_alloc_set_test_switches(a, &run_switches);
    assert_int_equal(tp_alloc_graph(a, g, o), TP_OK);
    const uint32_t ids[4] = {5, 9, 2, 7}, pos[4] = {0, 1, 2, 3};
    assert_int_equal(tp_alloc_fill_input_i32(a, g, "token_ids", ids, 4), TP_OK);
    assert_int_equal(tp_alloc_fill_input_i32(a, g, "positions", pos, 4), TP_OK);
    assert_int_equal(tp_execute(a, g, w, NULL, NULL), TP_OK);
    tp_bufref r;
    assert_true(tp_alloc_node_buffer(a, g->outputs[0], &r));
    assert_int_equal(r.len, 32);
    assert_int_equal(tp_alloc_read(a, &r, out), TP_OK);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void test_unpinned_inputs_clobber_token_ids(void **state)
{
    (void)state;
    tp_weights *w = NULL;
    float *table = NULL;
    assert_int_equal(tp_weights_create(&w), TP_OK);
    assert_int_equal(tp_weights_add(w, "table", 16, 8, &table), TP_OK);
    for (size_t i = 0; i < 16 * 8; i++)
        table[i] = (float)(i / 8) + 0.01f * (float)(i % 8); /* row r holds r.0x */
    /* the expected output, computed here: rope of rows 5, 9, 2, 7 at positions 0..3 */
    const uint32_t ids[4] = {5, 9, 2, 7}, pos[4] = {0, 1, 2, 3};
    float emb[32], posf[4], want[32];
    for (size_t t = 0; t < 4; t++)
        memcpy(emb + t * 8, table + ids[t] * 8, 8 * sizeof(float));
    memcpy(posf, pos, sizeof pos);
    assert_int_equal(tp_kernel_rope(emb, posf, 2, 4, 4, 10000.0f, want), TP_OK);

    float good[32], bad[32];
    tp_alloc_options o = tp_alloc_options_default();
    run_late_input(&o, good, w);
    assert_memory_equal(good, want, sizeof want);
    o.strategy = TP_STRATEGY_NAIVE;
    run_late_input(&o, good, w);
    assert_memory_equal(good, want, sizeof want);

    /* the rule off: inputs neither pinned nor given buffers before the walk. positions then
     * takes token_ids' buffer (dead after the embedding), and filling positions overwrites
     * the ids: the embedding gathers rows 0, 1, 2, 3 */
    o = tp_alloc_options_default();
    run_switches = (tp_alloc_test_switches){ .unpinned_inputs = 1, .inputs_in_walk = 1 };
    run_late_input(&o, bad, w);
    run_switches = (tp_alloc_test_switches){ 0 };
    assert_memory_not_equal(bad, want, sizeof want);
    float clobbered[32];
    for (size_t t = 0; t < 4; t++)
        memcpy(emb + t * 8, table + pos[t] * 8, 8 * sizeof(float));
    assert_int_equal(tp_kernel_rope(emb, posf, 2, 4, 4, 10000.0f, clobbered), TP_OK);
    assert_memory_equal(bad, clobbered, sizeof clobbered);
    tp_weights_destroy(w);
}

/* ---- scheduler refusals and counters ------------------------------------------------------- */

static void test_refuses_foreign_buffer_and_stale_plan(void **state)
{
    (void)state;
    tpt_random_graph_options go = tpt_random_graph_defaults();
    go.n_backends = 1;
    tp_graph *g = NULL;
    assert_int_equal(tpt_random_graph(3, &go, &g), TP_OK);
    tp_weights *w = NULL;
    assert_int_equal(tpt_random_graph_weights(g, go.vocab, 3, &w), TP_OK);
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    fill_inputs(a, g, 1, go.vocab, go.n_ctx);
    tp_exec_stats es;
    assert_int_equal(tp_execute(a, g, w, NULL, &es), TP_OK);
    assert_int_equal(es.splits, 1);
    assert_int_equal(es.staged, 0);
    assert_int_equal(es.skipped_inputs, g->n_inputs);
    assert_int_equal(es.executed + es.skipped_inputs + es.skipped_dead, g->n_nodes);

    /* a node moved to queued after planning: its buffer is on cpu, its split on queued */
    size_t victim = g->outputs[0];
    g->nodes[victim].backend = TP_BACKEND_QUEUED;
    assert_int_equal(tp_execute(a, g, w, NULL, NULL), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "buffer is on"));
    g->nodes[victim].backend = TP_BACKEND_CPU;

    /* a graph that is not the allocator's current plan */
    tp_graph *other = NULL;
    assert_int_equal(tpt_random_graph(4, &go, &other), TP_OK);
    assert_int_equal(tp_execute(a, other, w, NULL, NULL), TP_ERR_INVALID);
    tp_graph_destroy(other);
    tp_allocator_destroy(a);
    tp_weights_destroy(w);
    tp_graph_destroy(g);
}

static void test_split_boundaries_sync_and_stage(void **state)
{
    (void)state;
    /* find a mixed-backend graph and count its splits independently */
    for (uint64_t seed = 0; seed < 50; seed++) {
        tpt_random_graph_options go = tpt_random_graph_defaults();
        tp_graph *g = NULL;
        assert_int_equal(tpt_random_graph(seed, &go, &g), TP_OK);
        size_t splits = 1, cross = 0;
        for (size_t i = 1; i < g->n_nodes; i++)
            splits += g->nodes[i].backend != g->nodes[i - 1].backend;
        for (size_t i = 0; i < g->n_nodes; i++)
            for (size_t k = 0; k < g->nodes[i].n_src; k++)
                cross += g->nodes[g->nodes[i].src[k]].backend != g->nodes[i].backend;
        if (splits < 3 || cross == 0) {
            tp_graph_destroy(g);
            continue;
        }
        tp_weights *w = NULL;
        assert_int_equal(tpt_random_graph_weights(g, go.vocab, 3, &w), TP_OK);
        tp_allocator *a = NULL;
        assert_int_equal(tp_allocator_create_host(&a), TP_OK);
        assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
        fill_inputs(a, g, 1, go.vocab, go.n_ctx);
        /* the copies a split needs: distinct sources on another backend of its live nodes,
         * per split; the staging buffers: distinct (source, destination) pairs */
        size_t want_copies = 0, want_pairs = 0;
        for (size_t i = 0; i < g->n_nodes; i++) {
            const tp_node *nd = &g->nodes[i];
            tp_bufref r;
            if (nd->op == TP_OP_INPUT || !tp_alloc_node_buffer(a, i, &r))
                continue;
            for (size_t k = 0; k < nd->n_src; k++) {
                size_t src = nd->src[k];
                if (g->nodes[src].backend == nd->backend)
                    continue;
                int seen_split = 0, seen_graph = 0;
                for (size_t j = 0; j < i; j++) {
                    const tp_node *o = &g->nodes[j];
                    if (o->op == TP_OP_INPUT || !tp_alloc_node_buffer(a, j, &r) ||
                        o->backend != nd->backend)
                        continue;
                    int same_split = 1;
                    for (size_t m = j; m < i; m++)
                        same_split &= g->nodes[m].backend == nd->backend;
                    for (size_t kk = 0; kk < o->n_src; kk++)
                        if (o->src[kk] == src) {
                            seen_graph = 1;
                            seen_split |= same_split;
                        }
                }
                for (size_t kk = 0; kk < k; kk++)
                    if (nd->src[kk] == src)
                        seen_split = seen_graph = 1;
                want_copies += !seen_split;
                want_pairs += !seen_graph;
            }
        }
        tp_backend *cpu = tp_alloc_backend(a, TP_BACKEND_CPU);
        tp_backend *q = tp_alloc_backend(a, TP_BACKEND_QUEUED);
        size_t fresh0 = cpu->counters(cpu).fresh_allocs + q->counters(q).fresh_allocs;
        tp_exec_stats es;
        assert_int_equal(tp_execute(a, g, w, NULL, &es), TP_OK);
        assert_int_equal(es.splits, splits);
        /* one sync per boundary, then one per backend that ran a node or ran the last split */
        int ran[TP_MAX_BACKENDS] = { 0 };
        for (size_t i = 0; i < g->n_nodes; i++) {
            tp_bufref r;
            if (g->nodes[i].op != TP_OP_INPUT && tp_alloc_node_buffer(a, i, &r))
                ran[g->nodes[i].backend] = 1;
        }
        ran[g->nodes[g->n_nodes - 1].backend] = 1;
        size_t finals = 0;
        for (int b = 0; b < TP_MAX_BACKENDS; b++)
            finals += ran[b] && tp_alloc_backend(a, b) != NULL;
        assert_int_equal(es.syncs, splits - 1 + finals);
        assert_true(es.staged > 0);
        assert_int_equal(es.staged, want_copies);
        size_t fresh1 = cpu->counters(cpu).fresh_allocs + q->counters(q).fresh_allocs;
        assert_int_equal(fresh1 - fresh0, want_pairs);
        /* the reused plan rewrites the same staging buffers */
        fill_inputs(a, g, 1, go.vocab, go.n_ctx);
        assert_int_equal(tp_execute(a, g, w, NULL, &es), TP_OK);
        assert_int_equal(es.staged, want_copies);
        assert_int_equal(cpu->counters(cpu).fresh_allocs + q->counters(q).fresh_allocs, fresh1);
        tp_allocator_destroy(a);
        tp_weights_destroy(w);
        tp_graph_destroy(g);
        return;
    }
    fail_msg("no mixed-backend graph among 50 seeds");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_graphs_bit_identical_to_naive),
        cmocka_unit_test(test_random_graphs_thread_count_independent),
        cmocka_unit_test(test_kahn_liveness_breaks_random_graphs),
        cmocka_unit_test(test_unpinned_inputs_clobber_token_ids),
        cmocka_unit_test(test_refuses_foreign_buffer_and_stale_plan),
        cmocka_unit_test(test_split_boundaries_sync_and_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
