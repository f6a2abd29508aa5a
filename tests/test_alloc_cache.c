/* The graph cache: reuse identity on the build params only, the allocator kept across
 * rebuilds, up to eight cached shapes switched by re-mapping without any pool allocation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/plan_check.h"
#include "tensorplan/alloc.h"
#include "tensorplan/cache.h"
#include "tensorplan/model.h"

static tp_graph_params base_params(void)
{
    tp_graph_params p;
    memset(&p, 0, sizeof p);
    p.n_tokens = 1;
    p.n_out = 1;
    p.n_ctx = 32;
    p.fuse_ffn = 1;
    p.queued_layers = 0;
    p.weights_version = 1;
    return p;
}

static tp_graph *build(const tp_graph_params *p)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    tp_graph *g = NULL;
    assert_int_equal(tp_model_build_graph(&c, p, &g), TP_OK);
    return g;
}

static tp_graph_cache *new_cache(size_t capacity)
{
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    tp_graph_cache *c = NULL;
    assert_int_equal(tp_graph_cache_create(a, capacity, NULL, &c), TP_OK);
    return c;
}

/* Builds and stores a graph for p unless the cache can reuse one; returns whether reused. */
static int get_graph(tp_graph_cache *c, const tp_graph_params *p)
{
    int reused = -1;
    assert_int_equal(tp_graph_cache_try_reuse(c, p, &reused), TP_OK);
    if (!reused)
        assert_int_equal(tp_graph_cache_replace_graph(c, build(p), p), TP_OK);
    return reused;
}

static void assert_sound(tp_graph_cache *c)
{
    tpt_plan p;
    char why[512] = "";
    assert_int_equal(tpt_plan_from_allocator(tp_graph_cache_allocator(c), &p), 0);
    int ok = tpt_check_plan(tp_graph_cache_current(c), &p, why, sizeof why);
    tpt_plan_free(&p);
    if (!ok)
        fail_msg("plan rejected: %s", why);
}

static void reuse_only_on_equal_params(void **state)
{
    (void)state;
    tp_graph_params b = base_params();
    /* every field of the identity, changed one at a time */
    tp_graph_params v[6];
    for (int i = 0; i < 6; i++)
        v[i] = b;
    v[0].n_tokens = 2; /* also the graph type: prefill instead of decode */
    v[1].n_out = 2;
    v[1].n_tokens = 2;
    v[2].n_ctx = 64;
    v[3].fuse_ffn = 0;
    v[4].queued_layers = 1;
    v[5].weights_version = 2;
    for (int i = 0; i < 6; i++) {
        tp_graph_cache *c = new_cache(1);
        assert_false(get_graph(c, &b));
        assert_true(get_graph(c, &b)); /* equal params: reused */
        assert_false(tp_graph_params_equal(&b, &v[i]));
        int reused = -1;
        assert_int_equal(tp_graph_cache_try_reuse(c, &v[i], &reused), TP_OK);
        assert_false(reused);
        tp_graph_cache_destroy(c);
    }
    /* n_out alone (same n_tokens): a 2-token prefill with both rows of logits is another
     * graph than the same prefill with only the last row */
    {
        tp_graph_params all = b, last = b;
        all.n_tokens = last.n_tokens = 2;
        all.n_out = 2;
        last.n_out = 1;
        tp_graph_cache *c = new_cache(1);
        assert_false(get_graph(c, &all));
        assert_true(get_graph(c, &all));
        assert_false(tp_graph_params_equal(&all, &last));
        int reused = -1;
        assert_int_equal(tp_graph_cache_try_reuse(c, &last, &reused), TP_OK);
        assert_false(reused);
        tp_graph_cache_destroy(c);
    }
    /* n_past is data: consecutive decode steps have equal params and reuse one graph */
    tp_graph_cache *c = new_cache(0);
    assert_false(get_graph(c, &b));
    const tp_graph *g = tp_graph_cache_current(c);
    tp_allocator *a = tp_graph_cache_allocator(c);
    size_t allocs = tp_alloc_pool_allocations(a);
    for (uint32_t n_past = 0; n_past < 5; n_past++) {
        tp_graph_params step = base_params();
        assert_true(get_graph(c, &step));
        assert_ptr_equal(tp_graph_cache_current(c), g);
        uint32_t tok = 7 + n_past, pos = n_past;
        assert_int_equal(tp_alloc_fill_input_i32(a, g, "token_ids", &tok, 1), TP_OK);
        assert_int_equal(tp_alloc_fill_input_i32(a, g, "positions", &pos, 1), TP_OK);
    }
    /* a reused decode step allocates nothing from any pool */
    assert_int_equal(tp_alloc_pool_allocations(a), allocs);
    tp_graph_cache_destroy(c);
}

static void switching_cached_shapes_allocates_nothing(void **state)
{
    (void)state;
    tp_graph_cache *c = new_cache(0);
    tp_graph_params dec = base_params(), pre = base_params();
    pre.n_tokens = 5;
    pre.n_out = 1;
    assert_false(get_graph(c, &pre));
    tp_allocator *a = tp_graph_cache_allocator(c);
    const tp_graph *gp = tp_graph_cache_current(c);
    /* the prefill's mapping, to compare after switching back */
    size_t n = gp->n_nodes;
    tp_bufref *saved = calloc(n, sizeof *saved);
    int *mapped = calloc(n, sizeof *mapped);
    for (size_t i = 0; i < n; i++)
        mapped[i] = tp_alloc_node_buffer(a, i, &saved[i]);
    tp_bufref k0, v0;
    assert_true(tp_alloc_kv_pair(a, 0, &k0, &v0));
    assert_false(get_graph(c, &dec)); /* prefill -> decode: a rebuild, same KV regions */
    tp_bufref k1, v1;
    assert_true(tp_alloc_kv_pair(a, 0, &k1, &v1));
    assert_int_equal(k0.id, k1.id);
    assert_int_equal(v0.id, v1.id);
    assert_sound(c);
    size_t allocs = tp_alloc_pool_allocations(a);
    for (int round = 0; round < 10; round++) {
        assert_true(get_graph(c, round % 2 ? &dec : &pre));
        assert_sound(c);
    }
    assert_int_equal(tp_alloc_pool_allocations(a), allocs);
    assert_true(get_graph(c, &pre));
    assert_ptr_equal(tp_graph_cache_current(c), gp);
    for (size_t i = 0; i < n; i++) {
        tp_bufref r;
        assert_int_equal(tp_alloc_node_buffer(a, i, &r), mapped[i]);
        if (mapped[i]) {
            assert_int_equal(r.backend, saved[i].backend);
            assert_int_equal(r.id, saved[i].id);
            assert_int_equal(r.offset, saved[i].offset);
            assert_int_equal(r.len, saved[i].len);
        }
    }
    assert_int_equal(tp_graph_cache_size(c), 2);
    free(saved);
    free(mapped);
    tp_graph_cache_destroy(c);
}

static void staging_survives_a_switch(void **state)
{
    (void)state;
    tp_graph_cache *c = new_cache(0);
    tp_graph_params q = base_params();
    q.queued_layers = 1; /* layer 0 on queued: its input crosses from cpu */
    tp_graph_params d = q; /* same KV placement, another shape */
    d.fuse_ffn = 0;
    assert_false(get_graph(c, &q));
    tp_allocator *a = tp_graph_cache_allocator(c);
    const tp_graph *g = tp_graph_cache_current(c);
    size_t cross = SIZE_MAX;
    for (size_t i = 0; i < g->n_nodes && cross == SIZE_MAX; i++)
        for (size_t k = 0; k < g->nodes[i].n_src; k++) {
            const tp_node *s = &g->nodes[g->nodes[i].src[k]];
            if (g->nodes[i].backend == TP_BACKEND_QUEUED && s->backend == TP_BACKEND_CPU &&
                tp_alloc_node_buffer(a, s->id, NULL)) {
                cross = s->id;
                break;
            }
        }
    assert_true(cross != SIZE_MAX);
    tp_bufref s1, s2;
    assert_int_equal(tp_alloc_staging(a, cross, TP_BACKEND_QUEUED, &s1), TP_OK);
    assert_false(get_graph(c, &d));
    size_t allocs = tp_alloc_pool_allocations(a);
    assert_true(get_graph(c, &q));
    assert_int_equal(tp_alloc_staging(a, cross, TP_BACKEND_QUEUED, &s2), TP_OK);
    assert_int_equal(s1.id, s2.id);
    assert_int_equal(tp_alloc_pool_allocations(a), allocs);
    tp_backend *qb = tp_alloc_backend(a, TP_BACKEND_QUEUED);
    assert_false(qb->is_free(qb, s2.id));
    tp_graph_cache_destroy(c);
}

static void at_most_eight_graphs_most_recent_first(void **state)
{
    (void)state;
    tp_graph_cache *c = new_cache(0);
    tp_graph_params p[9];
    for (int i = 0; i < 9; i++) {
        p[i] = base_params();
        p[i].n_tokens = (size_t)i + 1;
        p[i].n_out = 1;
        assert_false(get_graph(c, &p[i]));
    }
    assert_int_equal(tp_graph_cache_size(c), TP_GRAPH_CACHE_MAX);
    int reused = -1;
    assert_int_equal(tp_graph_cache_try_reuse(c, &p[0], &reused), TP_OK);
    assert_false(reused); /* the least recent was evicted */
    assert_true(get_graph(c, &p[1]));
    /* p[1] is now the most recent: adding one more evicts p[2], not p[1] */
    tp_graph_params extra = base_params();
    extra.n_tokens = 20;
    extra.n_out = 1;
    assert_false(get_graph(c, &extra));
    assert_int_equal(tp_graph_cache_try_reuse(c, &p[2], &reused), TP_OK);
    assert_false(reused);
    assert_true(get_graph(c, &p[1]));
    assert_sound(c);
    tp_graph_cache_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reuse_only_on_equal_params),
        cmocka_unit_test(switching_cached_shapes_allocates_nothing),
        cmocka_unit_test(staging_survives_a_switch),
        cmocka_unit_test(at_most_eight_graphs_most_recent_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
