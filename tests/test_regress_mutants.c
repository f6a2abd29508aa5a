/* Rules of the allocator, the pools and the scheduler that mutation testing found untested:
 * each test below fails when its rule is removed.
 * - an in-place op never writes into a KV region (a silu whose only source is a kv_load);
 * - an alias extends its source's liveness: the lower bound of the 440-token prefill under
 *   last-consumer aliasing equals the peak of live values restated here;
 * - pool memory never moves, also when the graph cache re-maps a saved plan;
 * - the trace synchronises a queued backend before reading a node's output;
 * - a pool recycles the lowest free id of the requested length. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "support/peak_oracle.h"
#include "support/plan_check.h"
#include "support/qwen_graph.h"
#include "tensorplan/alloc.h"
#include "tensorplan/backend.h"
#include "tensorplan/cache.h"
#include "tensorplan/session.h"
#include "tensorplan/exec.h"
#include "tensorplan/graph_io.h"
#include "tensorplan/model.h"

/* ---- an in-place op never writes a KV region ---- */

static void test_inplace_op_never_writes_a_kv_region(void **state)
{
    (void)state;
    tp_graph *g = NULL;
    assert_int_equal(tp_graph_load_json(TP_TEST_DATA "/fuzz/graph_alloc/silu_of_kv_load.json", &g),
                     TP_OK);
    const size_t load = 3, silu = 4;
    assert_int_equal(g->nodes[load].op, TP_OP_KV_LOAD);
    assert_int_equal(g->nodes[silu].op, TP_OP_SILU);
    const tp_alloc_strategy strategies[] = { TP_STRATEGY_POOL, TP_STRATEGY_ARENA };
    const tp_alias_policy policies[] = { TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER };
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    for (size_t si = 0; si < 2; si++)
        for (size_t pi = 0; pi < 2; pi++) {
            tp_alloc_options o = tp_alloc_options_default();
            o.strategy = strategies[si];
            o.aliasing = policies[pi];
            assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
            assert_true(tp_alloc_alias_of(a, silu) == TP_NO_ALIAS);
            tp_bufref k, v, out;
            assert_true(tp_alloc_kv_pair(a, 0, &k, &v));
            assert_true(tp_alloc_node_buffer(a, silu, &out));
            assert_false(out.backend == k.backend && out.id == k.id);
            assert_false(out.backend == v.backend && out.id == v.id);
            tpt_plan p;
            char why[512] = "";
            assert_int_equal(tpt_plan_from_allocator(a, &p), 0);
            const int ok = tpt_check_plan(g, &p, why, sizeof why);
            tpt_plan_free(&p);
            if (!ok)
                fail_msg("%s/%s: %s", tp_alloc_strategy_name(o.strategy),
                         tp_alias_policy_name(o.aliasing), why);
        }
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* ---- an alias extends its source's liveness (the lower bound) ---- */

static void test_alias_extends_the_source_in_the_bound(void **state)
{
    (void)state;
    tp_graph *g = tpt_qwen_graph(440);
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    tp_alloc_options o = tp_alloc_options_default();
    o.aliasing = TP_ALIAS_LAST_CONSUMER;
    o.size_classes = 0;
    assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
    const tp_plan_stats s = tp_alloc_stats(a);
    assert_true(s.aliased_nodes > 0);
    const size_t want = tpt_oracle_peak_live(g, a);
    assert_int_equal(s.peak_live_bytes, want);
    /* docs/allocator.md: last-consumer aliasing lowers the bound to 20.3 MB */
    assert_true(want >= 20250000 && want < 20350000);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* ---- pool memory never moves, across a re-map by the graph cache ---- */

static tp_graph_params tiny_params(size_t n_tokens)
{
    tp_graph_params p;
    memset(&p, 0, sizeof p);
    p.n_tokens = n_tokens;
    p.n_out = 1;
    p.n_ctx = 32;
    p.fuse_ffn = 1;
    p.weights_version = 1;
    return p;
}

static tp_graph *build_tiny(size_t n_tokens)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    const tp_graph_params p = tiny_params(n_tokens);
    tp_graph *g = NULL;
    assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
    return g;
}

static void use_shape(tp_graph_cache *c, size_t n_tokens)
{
    const tp_graph_params p = tiny_params(n_tokens);
    int reused = -1;
    assert_int_equal(tp_graph_cache_try_reuse(c, &p, &reused), TP_OK);
    if (!reused)
        assert_int_equal(tp_graph_cache_replace_graph(c, build_tiny(n_tokens), &p), TP_OK);
}

/* The host address of every mapped node's window in the current plan. */
static void addresses(tp_allocator *a, const tp_graph *g, const float **out)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        tp_bufref r;
        out[i] = NULL;
        if (tp_alloc_node_buffer(a, i, &r)) {
            tp_backend *b = tp_alloc_backend(a, r.backend);
            assert_non_null(b);
            out[i] = b->host_data(b, r.id) + r.offset;
        }
    }
}

static void test_remap_keeps_memory_in_place(void **state)
{
    (void)state;
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    tp_graph_cache *c = NULL;
    assert_int_equal(tp_graph_cache_create(a, 0, NULL, &c), TP_OK);
    use_shape(c, 5);
    const tp_graph *pre = tp_graph_cache_current(c);
    const float **before = calloc(pre->n_nodes, sizeof *before);
    const float **after = calloc(pre->n_nodes, sizeof *after);
    assert_true(before && after);
    addresses(a, pre, before);
    for (int round = 0; round < 4; round++) {
        use_shape(c, 1); /* decode: built once, then re-mapped */
        use_shape(c, 5); /* the prefill's saved plan re-mapped */
        assert_ptr_equal(tp_graph_cache_current(c), pre);
        addresses(a, pre, after);
        for (size_t i = 0; i < pre->n_nodes; i++)
            if (before[i] != after[i])
                fail_msg("round %d: node %zu '%s' moved from %p to %p", round, i,
                         pre->nodes[i].name, (const void *)before[i], (const void *)after[i]);
    }
    free(before);
    free(after);
    tp_graph_cache_destroy(c);
}

/* ---- the trace synchronises a queued backend before reading ---- */

/* Runs the tiny model (3 prompt tokens, 2 generated) with a trace and returns the parsed
 * trace. */
static cJSON *traced_run(const tp_model_config *c, const tp_weights *w, int queued_layers,
                         const char *path)
{
    tp_trace *t = NULL;
    assert_int_equal(tp_trace_open(path, &t), TP_OK);
    tp_session_options o = tp_session_options_default();
    o.exec.trace = t;
    o.queued_layers = queued_layers;
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(c, w, &o, &s), TP_OK);
    const int32_t prompt[3] = { 5, 9, 2 };
    int32_t out[2];
    assert_int_equal(tp_session_generate(s, prompt, 3, 2, out, NULL), TP_OK);
    assert_int_equal(tp_trace_close(t), TP_OK);
    tp_session_destroy(s);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    return root;
}

/* With every layer on the queued backend, each traced node shows the values of the same node
 * traced with everything on the cpu backend (which runs each kernel at once, so a read there
 * needs no synchronisation): the kernels are the same code, so the values are the same. */
static void test_trace_syncs_a_queued_backend(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 7, &w), TP_OK);
    char path[64];
    snprintf(path, sizeof path, "/tmp/tp_mutant_trace_%ld.json", (long)getpid());
    cJSON *cpu = traced_run(&c, w, 0, path);
    cJSON *queued = traced_run(&c, w, c.n_layer, path);
    cJSON *runs_c = cJSON_GetObjectItem(cpu, "runs"), *runs_q = cJSON_GetObjectItem(queued, "runs");
    assert_int_equal(cJSON_GetArraySize(runs_c), cJSON_GetArraySize(runs_q));
    size_t on_queued = 0;
    for (int r = 0; r < cJSON_GetArraySize(runs_c); r++) {
        cJSON *nc = cJSON_GetObjectItem(cJSON_GetArrayItem(runs_c, r), "nodes");
        cJSON *nq = cJSON_GetObjectItem(cJSON_GetArrayItem(runs_q, r), "nodes");
        assert_int_equal(cJSON_GetArraySize(nc), cJSON_GetArraySize(nq));
        for (int i = 0; i < cJSON_GetArraySize(nc); i++) {
            cJSON *a = cJSON_GetArrayItem(nc, i), *b = cJSON_GetArrayItem(nq, i);
            assert_string_equal(cJSON_GetObjectItem(a, "name")->valuestring,
                                cJSON_GetObjectItem(b, "name")->valuestring);
            const cJSON *be = cJSON_GetObjectItem(b, "backend");
            on_queued += cJSON_IsString(be) && strcmp(be->valuestring, "queued") == 0;
            cJSON *sa = cJSON_GetObjectItem(a, "sample"), *sb = cJSON_GetObjectItem(b, "sample");
            assert_int_equal(cJSON_GetArraySize(sa), cJSON_GetArraySize(sb));
            for (int k = 0; k < cJSON_GetArraySize(sa); k++) {
                const double x = cJSON_GetArrayItem(sa, k)->valuedouble;
                const double y = cJSON_GetArrayItem(sb, k)->valuedouble;
                if (fabs(x - y) > 1e-5 * (1 + fabs(x)))
                    fail_msg("run %d node '%s' value %d: %g on the queued backend, %g on cpu",
                             r, cJSON_GetObjectItem(b, "name")->valuestring, k, y, x);
            }
        }
    }
    assert_true(on_queued > 0);
    cJSON_Delete(cpu);
    cJSON_Delete(queued);
    tp_weights_destroy(w);
}

/* ---- a pool recycles the lowest free id of the length ---- */

static void test_pool_recycles_the_lowest_free_id(void **state)
{
    (void)state;
    for (int order = 0; order < 2; order++) {
        tp_backend *b = NULL;
        assert_int_equal(tp_backend_create_host(0, "pool", &b), TP_OK);
        size_t id[4];
        for (int i = 0; i < 4; i++)
            assert_int_equal(b->alloc(b, 64, &id[i]), TP_OK);
        const float *mem1 = b->host_data(b, id[1]), *mem3 = b->host_data(b, id[3]);
        /* two free candidates of one length, freed in either order */
        assert_int_equal(b->free_buffer(b, order ? id[1] : id[3]), TP_OK);
        assert_int_equal(b->free_buffer(b, order ? id[3] : id[1]), TP_OK);
        size_t got = SIZE_MAX;
        assert_int_equal(b->alloc(b, 64, &got), TP_OK);
        assert_int_equal(got, id[1] < id[3] ? id[1] : id[3]);
        assert_ptr_equal(b->host_data(b, got), got == id[1] ? mem1 : mem3);
        assert_int_equal(b->alloc(b, 64, &got), TP_OK);
        assert_int_equal(got, id[1] < id[3] ? id[3] : id[1]);
        assert_ptr_equal(b->host_data(b, got), got == id[1] ? mem1 : mem3);
        b->destroy(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inplace_op_never_writes_a_kv_region),
        cmocka_unit_test(test_alias_extends_the_source_in_the_bound),
        cmocka_unit_test(test_remap_keeps_memory_in_place),
        cmocka_unit_test(test_trace_syncs_a_queued_backend),
        cmocka_unit_test(test_pool_recycles_the_lowest_free_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
