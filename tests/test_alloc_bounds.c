/* The lower bound and last-consumer figures of docs/allocator.md (Qwen2.5-0.5B, CPU only,
 * SwiGLU fusion, n_ctx 4096): the "lower bound" column of its table and the 440-token prefill
 * under last-consumer aliasing (bound 20.3 MB, pool 23.1 MB with size classes, the arena
 * within 0.1 % of the bound), each bound also equal to the peak restated in
 * tests/support/peak_oracle.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/peak_oracle.h"
#include "support/plan_check.h"
#include "support/qwen_graph.h"
#include "alloc/alloc_debug.h"
#include "tensorplan/alloc.h"
#include "tensorplan/cache.h"
#include "tensorplan/model.h"

/* The rules plan() turns off (alloc_debug.h): none but where a test says. */
static tp_alloc_test_switches plan_switches;

static tp_plan_stats plan(size_t n_tokens, tp_alloc_options o, int decimals,
                          const char *bound_mb)
{
    tp_graph *g = tpt_qwen_graph(n_tokens);
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    tp_alloc_set_test_switches(a, &plan_switches);
    assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
    const tp_plan_stats s = tp_alloc_stats(a);
    assert_int_equal(s.peak_live_bytes, tpt_oracle_peak_live(g, a));
    char text[32];
    snprintf(text, sizeof text, "%.*f", decimals, (double)s.peak_live_bytes / 1e6);
    assert_string_equal(text, bound_mb);
    assert_true(s.peak_held_bytes >= s.peak_live_bytes);
    tpt_plan p;
    char why[512] = "";
    assert_int_equal(tpt_plan_from_allocator(a, &p), 0);
    const int ok = tpt_check_plan(g, &p, why, sizeof why);
    tpt_plan_free(&p);
    if (!ok)
        fail_msg("plan rejected: %s", why);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
    return s;
}

static void test_table_lower_bounds(void **state)
{
    (void)state;
    tp_alloc_options o = tp_alloc_options_default();
    o.size_classes = 0;
    plan_switches.inputs_in_walk = 1;
    plan(1, o, 3, "0.611");
    o.size_classes = 1;
    plan_switches.inputs_in_walk = 0;
    plan(1, o, 3, "0.611");
    o.size_classes = 0;
    plan(440, o, 1, "27.3");
}

static void test_prefill_last_consumer(void **state)
{
    (void)state;
    tp_alloc_options o = tp_alloc_options_default();
    o.aliasing = TP_ALIAS_LAST_CONSUMER;
    const tp_plan_stats pool = plan(440, o, 1, "20.3");
    char text[32];
    snprintf(text, sizeof text, "%.1f", (double)pool.activation_bytes / 1e6);
    assert_string_equal(text, "23.1");
    assert_true(pool.aliased_nodes > 0);
    o.strategy = TP_STRATEGY_ARENA;
    o.size_classes = 0;
    const tp_plan_stats arena = plan(440, o, 1, "20.3");
    assert_true(arena.activation_bytes >= arena.peak_live_bytes);
    assert_true(arena.activation_bytes - arena.peak_live_bytes <= arena.peak_live_bytes / 1000);
}

/* Decode under last-consumer has alias chains of two members or more: the chain's value
 * lives until its last member's last read, so the bound equals the sole-consumer one. */
static void test_decode_last_consumer_chains(void **state)
{
    (void)state;
    tp_alloc_options o = tp_alloc_options_default();
    o.aliasing = TP_ALIAS_LAST_CONSUMER;
    o.strategy = TP_STRATEGY_ARENA;
    const tp_plan_stats s = plan(1, o, 3, "0.611");
    assert_int_equal(s.peak_live_bytes, 611336);
}

/* The planning allocator (buffers with a length and no memory) plans exactly as the host one:
 * the same statistics for every strategy and policy on tiny-qwen2's prefill and decode graphs;
 * its buffers cannot be read. */
static void test_planning_allocator_same_plan(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny-qwen2", &c), TP_OK);
    const tp_alloc_strategy strategies[2] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA};
    const tp_alias_policy policies[2] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER};
    for (size_t nt = 1; nt <= 9; nt += 8) {
        tp_graph_params p = {nt, 1, 64, 1, 0, 0, TP_DTYPE_F32};
        tp_graph *g = NULL;
        assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
        for (int k = 0; k < 4; k++) {
            tp_alloc_options o = tp_alloc_options_default();
            o.strategy = strategies[k / 2];
            o.aliasing = policies[k % 2];
            tp_allocator *host = NULL, *plan = NULL;
            assert_int_equal(tp_allocator_create_host(&host), TP_OK);
            assert_int_equal(tp_allocator_create_planning(&plan), TP_OK);
            assert_int_equal(tp_alloc_graph(host, g, &o), TP_OK);
            assert_int_equal(tp_alloc_graph(plan, g, &o), TP_OK);
            tp_plan_stats a = tp_alloc_stats(host), b = tp_alloc_stats(plan);
            a.plan_seconds = b.plan_seconds = 0.0;
            assert_memory_equal(&a, &b, sizeof a);
            tp_bufref out;
            assert_true(tp_alloc_node_buffer(plan, g->outputs[0], &out));
            float *buf = calloc(out.len, sizeof *buf);
            assert_int_equal(tp_alloc_read(plan, &out, buf), TP_ERR_INVALID);
            free(buf);
            tp_allocator_destroy(host);
            tp_allocator_destroy(plan);
        }
        tp_graph_destroy(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_lower_bounds),
        cmocka_unit_test(test_prefill_last_consumer),
        cmocka_unit_test(test_decode_last_consumer_chains),
        cmocka_unit_test(test_planning_allocator_same_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
