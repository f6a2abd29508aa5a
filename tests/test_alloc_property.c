/* Property: for a few hundred random graphs (tests/support/random_graph.c), every plan of
 * every strategy, aliasing policy and sizing passes the independent soundness checker of
 * tests/support/plan_check.c, and its statistics are consistent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/peak_oracle.h"
#include "alloc/alloc_debug.h"
#include "support/plan_check.h"
#include "support/random_graph.h"
#include "tensorplan/alloc.h"

static size_t graph_count(void)
{
    const char *s = getenv("TP_SANITIZED");
    return s && *s && strcmp(s, "0") != 0 ? 80 : 400;
}

/* Restated from docs/allocator.md: a node is dead when nothing needs its output (not an
 * input, an output or a KV op, and no consumer); naive bytes are every non-KV node's f32
 * output bytes. */
static size_t oracle_dead(const tp_graph *g)
{
    size_t dead = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const tp_op op = g->nodes[i].op;
        int needed = op == TP_OP_KV_STORE || op == TP_OP_KV_LOAD;
        for (size_t k = 0; k < g->n_inputs; k++)
            needed |= g->inputs[k] == i;
        for (size_t k = 0; k < g->n_outputs; k++)
            needed |= g->outputs[k] == i;
        for (size_t j = i + 1; j < g->n_nodes && !needed; j++)
            for (size_t k = 0; k < g->nodes[j].n_src; k++)
                needed |= g->nodes[j].src[k] == i;
        dead += !needed;
    }
    return dead;
}

static size_t oracle_naive_bytes(const tp_graph *g)
{
    size_t bytes = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op != TP_OP_KV_STORE && g->nodes[i].op != TP_OP_KV_LOAD)
            bytes += tp_node_elements(&g->nodes[i]) * sizeof(float);
    return bytes;
}

static void check_one(uint64_t seed)
{
    static const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA,
                                                   TP_STRATEGY_NAIVE};
    static const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                               TP_ALIAS_NONE};
    tpt_random_graph_options ro = tpt_random_graph_defaults();
    ro.n_nodes = 12 + (size_t)(seed % 70);
    ro.n_backends = 1 + (int)(seed % 2);
    ro.n_layers = (int)(seed % 4);
    tp_graph *g = NULL;
    assert_int_equal(tpt_random_graph(seed, &ro, &g), TP_OK);
    if (tp_graph_validate(g) != TP_OK)
        fail_msg("seed %llu: generated graph invalid: %s", (unsigned long long)seed,
                 tp_last_error());
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    for (size_t si = 0; si < 3; si++)
        for (size_t pi = 0; pi < 3; pi++)
            for (int classes = 0; classes < 2; classes++) {
                tp_alloc_options o = tp_alloc_options_default();
                o.strategy = strategies[si];
                o.aliasing = policies[pi];
                o.size_classes = classes;
                if (tp_alloc_graph(a, g, &o) != TP_OK)
                    fail_msg("seed %llu %s/%s: %s", (unsigned long long)seed,
                             tp_alloc_strategy_name(o.strategy),
                             tp_alias_policy_name(o.aliasing), tp_last_error());
                tpt_plan p;
                char why[512] = "";
                assert_int_equal(tpt_plan_from_allocator(a, &p), 0);
                int ok = tpt_check_plan(g, &p, why, sizeof why);
                tpt_plan_free(&p);
                if (!ok)
                    fail_msg("seed %llu %s/%s classes %d: %s", (unsigned long long)seed,
                             tp_alloc_strategy_name(o.strategy),
                             tp_alias_policy_name(o.aliasing), classes, why);
                tp_plan_stats s = tp_alloc_stats(a);
                assert_int_equal(s.nodes, g->n_nodes);
                assert_int_equal(s.dead_nodes, oracle_dead(g));
                assert_int_equal(s.live_nodes + s.dead_nodes, s.nodes);
                assert_int_equal(s.naive_bytes, oracle_naive_bytes(g));
                assert_int_equal(s.peak_live_bytes, tpt_oracle_peak_live(g, a));
                assert_true(s.peak_held_bytes >= s.peak_live_bytes);
                assert_true(s.activation_bytes >= s.peak_live_bytes);
                assert_true(s.naive_bytes >= s.peak_live_bytes);
                assert_int_equal(s.buffers, s.activation_buffers + s.persistent_buffers);
                size_t aliased = 0;
                for (size_t i = 0; i < g->n_nodes; i++)
                    aliased += tp_alloc_alias_of(a, i) != TP_NO_ALIAS;
                assert_int_equal(s.aliased_nodes, aliased);
                if (o.strategy == TP_STRATEGY_NAIVE || o.aliasing == TP_ALIAS_NONE)
                    assert_int_equal(s.aliased_nodes, 0);
            }
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void random_graphs_every_plan_is_sound(void **state)
{
    (void)state;
    size_t n = graph_count();
    for (uint64_t seed = 0; seed < n; seed++)
        check_one(seed);
}

/* tp_alloc_node_lifetime against the liveness of docs/allocator.md restated
 * (tpt_oracle_lifetimes of tests/support/peak_oracle.h), on random graphs under every
 * aliasing policy. */
static void random_graphs_lifetimes_follow_the_spec(void **state)
{
    (void)state;
    static const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                               TP_ALIAS_NONE};
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    size_t f = 7, l = 9;
    assert_int_equal(tp_alloc_node_lifetime(a, 0, &f, &l), 0); /* no plan yet */
    assert_true(f == 7 && l == 9);
    size_t raised = 0;
    for (uint64_t seed = 0; seed < 120; seed++) {
        tpt_random_graph_options ro = tpt_random_graph_defaults();
        ro.n_nodes = 12 + (size_t)(seed % 70);
        ro.n_layers = (int)(seed % 4);
        tp_graph *g = NULL;
        assert_int_equal(tpt_random_graph(seed, &ro, &g), TP_OK);
        const size_t n = g->n_nodes;
        size_t *first = malloc(2 * n * sizeof *first), *last = first + n;
        assert_non_null(first);
        tp_allocator_destroy(a); /* a fresh one: each graph has KV regions of its own shape */
        assert_int_equal(tp_allocator_create_host(&a), TP_OK);
        for (size_t pi = 0; pi < 3; pi++) {
            tp_alloc_options o = tp_alloc_options_default();
            o.aliasing = policies[pi];
            o.strategy = seed % 2 ? TP_STRATEGY_ARENA : TP_STRATEGY_POOL;
            assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
            tpt_oracle_lifetimes(g, a, first, last);
            for (size_t i = 0; i < n; i++) {
                size_t got_first = SIZE_MAX, got_last = SIZE_MAX;
                assert_int_equal(tp_alloc_node_lifetime(a, i, &got_first, &got_last), 1);
                if (got_first != first[i] || got_last != last[i])
                    fail_msg("seed %llu %s node %zu '%s': lifetime [%zu, %zu], expected "
                             "[%zu, %zu]", (unsigned long long)seed,
                             tp_alias_policy_name(o.aliasing), i, g->nodes[i].name, got_first,
                             got_last, first[i], last[i]);
                if (tp_alloc_alias_of(a, i) != TP_NO_ALIAS) {
                    size_t r = tp_alloc_alias_of(a, i), own = i;
                    for (size_t j = i + 1; j < n; j++)
                        for (size_t k = 0; k < g->nodes[j].n_src; k++)
                            own = g->nodes[j].src[k] == r ? j : own;
                    raised += last[r] > own;
                }
            }
            assert_int_equal(tp_alloc_node_lifetime(a, n, &f, &l), 0);
            assert_int_equal(tp_alloc_node_lifetime(a, 0, NULL, NULL), 1);
        }
        free(first);
        tp_graph_destroy(g);
    }
    assert_true(raised > 0); /* some group root outlived its own consumers */
    tp_allocator_destroy(a);
}

/* The generator is a pure function of (seed, options): the same seed twice gives the same
 * graph, node by node. */
static void random_graph_is_deterministic(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 20; seed++) {
        tp_graph *g1 = NULL, *g2 = NULL;
        assert_int_equal(tpt_random_graph(seed, NULL, &g1), TP_OK);
        assert_int_equal(tpt_random_graph(seed, NULL, &g2), TP_OK);
        assert_int_equal(g1->n_nodes, g2->n_nodes);
        for (size_t i = 0; i < g1->n_nodes; i++) {
            assert_int_equal(g1->nodes[i].op, g2->nodes[i].op);
            assert_int_equal(g1->nodes[i].n_src, g2->nodes[i].n_src);
            for (size_t k = 0; k < g1->nodes[i].n_src; k++)
                assert_int_equal(g1->nodes[i].src[k], g2->nodes[i].src[k]);
            assert_int_equal(g1->nodes[i].backend, g2->nodes[i].backend);
            assert_int_equal(tp_node_elements(&g1->nodes[i]), tp_node_elements(&g2->nodes[i]));
        }
        tp_graph_destroy(g1);
        tp_graph_destroy(g2);
    }
}

/* Over all generated graphs, the generator covers what the checker must see: aliases under
 * both policies, dead nodes, KV layers, cross-backend sources, late inputs. */
static void random_graphs_cover_the_cases(void **state)
{
    (void)state;
    size_t aliases_sole = 0, aliases_last = 0, dead = 0, kv = 0, cross = 0, late_inputs = 0;
    for (uint64_t seed = 0; seed < 60; seed++) {
        tpt_random_graph_options ro = tpt_random_graph_defaults();
        ro.n_nodes = 12 + (size_t)(seed % 70);
        ro.n_layers = (int)(seed % 4);
        tp_graph *g = NULL;
        assert_int_equal(tpt_random_graph(seed, &ro, &g), TP_OK);
        tp_allocator *a = NULL;
        assert_int_equal(tp_allocator_create_host(&a), TP_OK);
        tp_alloc_options o = tp_alloc_options_default();
        assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
        aliases_sole += tp_alloc_stats(a).aliased_nodes;
        dead += tp_alloc_stats(a).dead_nodes;
        assert_int_equal(tp_alloc_stats(a).dead_nodes, oracle_dead(g));
        kv += tp_alloc_kv_count(a);
        /* one K and one V region per layer named by a KV op */
        int seen_layer[64] = { 0 };
        size_t layers = 0;
        for (size_t i = 0; i < g->n_nodes; i++) {
            const tp_node *nd = &g->nodes[i];
            if ((nd->op == TP_OP_KV_STORE || nd->op == TP_OP_KV_LOAD) && nd->p.layer >= 0 &&
                nd->p.layer < 64 && !seen_layer[nd->p.layer]) {
                seen_layer[nd->p.layer] = 1;
                layers++;
            }
        }
        assert_int_equal(tp_alloc_kv_count(a), layers);
        assert_int_equal(tp_alloc_stats(a).persistent_buffers, 2 * layers);
        o.aliasing = TP_ALIAS_LAST_CONSUMER;
        assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
        aliases_last += tp_alloc_stats(a).aliased_nodes;
        for (size_t i = 0; i < g->n_nodes; i++)
            for (size_t k = 0; k < g->nodes[i].n_src; k++)
                cross += g->nodes[g->nodes[i].src[k]].backend != g->nodes[i].backend;
        for (size_t k = 0; k < g->n_inputs; k++)
            late_inputs += g->inputs[k] > 2;
        tp_allocator_destroy(a);
        tp_graph_destroy(g);
    }
    assert_true(aliases_sole > 0);
    assert_true(aliases_last > aliases_sole);
    assert_true(dead > 0);
    assert_true(kv > 0);
    assert_true(cross > 0);
    assert_true(late_inputs > 0);
}

/* The checker is not vacuous on these graphs: with a rule switched off, some plans of the
 * same generator are rejected. */
static void rules_switched_off_are_caught_on_random_graphs(void **state)
{
    (void)state;
    size_t rejected[3] = {0, 0, 0};
    for (uint64_t seed = 0; seed < 200; seed++) {
        tpt_random_graph_options ro = tpt_random_graph_defaults();
        ro.n_nodes = 12 + (size_t)(seed % 70);
        ro.n_layers = (int)(seed % 4);
        tp_graph *g = NULL;
        assert_int_equal(tpt_random_graph(seed, &ro, &g), TP_OK);
        for (int rule = 0; rule < 3; rule++) {
            tp_allocator *a = NULL;
            assert_int_equal(tp_allocator_create_host(&a), TP_OK);
            tp_alloc_test_switches sw = { 0 };
            if (rule == 0)
                sw.kahn_liveness = 1;
            if (rule == 1) {
                sw.unpinned_inputs = 1;
                sw.inputs_in_walk = 1;
            }
            if (rule == 2)
                sw.no_alias_deadline = 1;
            tp_alloc_set_test_switches(a, &sw);
            assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
            tpt_plan p;
            char why[512];
            assert_int_equal(tpt_plan_from_allocator(a, &p), 0);
            rejected[rule] += !tpt_check_plan(g, &p, why, sizeof why);
            tpt_plan_free(&p);
            tp_allocator_destroy(a);
        }
        tp_graph_destroy(g);
    }
    print_message("rejected: kahn %zu, unpinned %zu, no deadline fix %zu of 200\n", rejected[0], rejected[1], rejected[2]);
    assert_true(rejected[0] > 0);
    assert_true(rejected[1] > 0);
    assert_true(rejected[2] > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_graphs_every_plan_is_sound),
        cmocka_unit_test(random_graphs_lifetimes_follow_the_spec),
        cmocka_unit_test(random_graph_is_deterministic),
        cmocka_unit_test(random_graphs_cover_the_cases),
        cmocka_unit_test(rules_switched_off_are_caught_on_random_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
