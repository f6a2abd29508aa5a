/* The graph allocator: the chapter's five tests under their names, the size-class ladder,
 * fills, KV regions, staging, aliasing guards, and the bug-class regressions that need no
 * execution, each shown to fail when its rule is switched off. Soundness is judged by the
 * independent checker of tests/support/plan_check.c, never by the allocator itself. */
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
#include "tensorplan/alloc.h"
#include "tensorplan/cache.h"
#include "tensorplan/model.h"

/* --- helpers ----------------------------------------------------------------------------- */

static size_t node(tp_graph *g, tp_op op, const char *name, size_t n_src, size_t s0, size_t s1,
                   size_t s2, int64_t elems)
{
    tp_node n = tp_node_init(op, name);
    n.n_src = n_src;
    n.src[0] = s0;
    n.src[1] = s1;
    n.src[2] = s2;
    n.shape[0] = elems;
    n.shape[1] = n.shape[2] = n.shape[3] = 1;
    n.dtype = TP_DTYPE_F32;
    n.backend = TP_BACKEND_CPU;
    size_t id = 0;
    assert_int_equal(tp_graph_add_node(g, &n, &id), TP_OK);
    return id;
}

static size_t input(tp_graph *g, const char *name, size_t elems, tp_dtype dt)
{
    size_t id = 0;
    assert_int_equal(tp_graph_add_input(g, name, elems, dt, &id), TP_OK);
    g->nodes[id].backend = TP_BACKEND_CPU;
    return id;
}

static tp_graph *new_graph(void)
{
    tp_graph *g = NULL;
    assert_int_equal(tp_graph_create(&g), TP_OK);
    return g;
}

static void assert_same_ref(const tp_bufref *x, const tp_bufref *y)
{
    assert_int_equal(x->backend, y->backend);
    assert_int_equal(x->id, y->id);
    assert_int_equal(x->offset, y->offset);
    assert_int_equal(x->len, y->len);
}

static tp_allocator *new_alloc(void)
{
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    return a;
}

/* Runs the independent checker on the allocator's current plan. */
static int plan_sound(const tp_allocator *a, const tp_graph *g, char *why, size_t n)
{
    tpt_plan p;
    assert_int_equal(tpt_plan_from_allocator(a, &p), 0);
    int ok = tpt_check_plan(g, &p, why, n);
    tpt_plan_free(&p);
    return ok;
}

static void assert_sound(const tp_allocator *a, const tp_graph *g)
{
    char why[512] = "";
    int ok = plan_sound(a, g, why, sizeof why);
    if (!ok)
        fail_msg("plan rejected: %s", why);
}

/* Distinct (backend, id) pairs over mapped nodes. */
static size_t distinct_buffers(const tp_allocator *a, const tp_graph *g)
{
    tp_bufref seen[256];
    size_t n = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        tp_bufref r;
        if (!tp_alloc_node_buffer(a, i, &r))
            continue;
        int dup = 0;
        for (size_t k = 0; k < n; k++)
            dup |= seen[k].backend == r.backend && seen[k].id == r.id;
        if (!dup && n < 256)
            seen[n++] = r;
    }
    return n;
}

static tp_model_config tiny(void)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    return c;
}

static tp_graph *tiny_graph(size_t nt, size_t n_out, size_t n_ctx, int queued)
{
    tp_model_config c = tiny();
    tp_graph_params gp;
    memset(&gp, 0, sizeof gp);
    gp.n_tokens = nt;
    gp.n_out = n_out;
    gp.n_ctx = n_ctx;
    gp.fuse_ffn = 1;
    gp.queued_layers = queued;
    tp_graph *g = NULL;
    assert_int_equal(tp_model_build_graph(&c, &gp, &g), TP_OK);
    return g;
}

/* --- the chapter's tests --------------------------------------------------------------- */

static void liveness_reuses_buffers_along_chain(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t x = input(g, "x", 4, TP_DTYPE_F32), h = x;
    for (int step = 0; step < 6; step++)
        h = step % 2 == 0 ? node(g, TP_OP_SILU, "silu", 1, h, 0, 0, 4)
                          : node(g, TP_OP_ADD, "add", 2, h, x, 0, 4);
    assert_int_equal(tp_graph_mark_output(g, h), TP_OK);
    assert_int_equal(g->n_nodes, 7);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    for (size_t i = 0; i < g->n_nodes; i++)
        assert_true(tp_alloc_node_buffer(a, i, NULL));
    size_t distinct = distinct_buffers(a, g);
    assert_true(distinct < g->n_nodes);
    assert_int_equal(distinct, 3); /* x, and two buffers ping-ponging */
    assert_sound(a, g);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void parallel_chains_do_not_share(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t a0 = input(g, "a0", 4, TP_DTYPE_F32), b0 = input(g, "b0", 4, TP_DTYPE_F32);
    size_t a1 = node(g, TP_OP_SILU, "a1", 1, a0, 0, 0, 4);
    size_t b1 = node(g, TP_OP_SILU, "b1", 1, b0, 0, 0, 4);
    size_t a2 = node(g, TP_OP_ADD, "a2", 2, a1, a0, 0, 4);
    size_t b2 = node(g, TP_OP_ADD, "b2", 2, b1, b0, 0, 4);
    size_t out = node(g, TP_OP_ADD, "out", 2, a2, b2, 0, 4);
    assert_int_equal(tp_graph_mark_output(g, out), TP_OK);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    size_t distinct = distinct_buffers(a, g);
    assert_true(distinct > 3); /* more than the chain needs */
    assert_int_equal(distinct, 5);
    /* the two branches are live together: their buffers differ */
    tp_bufref ra, rb;
    assert_true(tp_alloc_node_buffer(a, a1, &ra));
    assert_true(tp_alloc_node_buffer(a, b1, &rb));
    assert_false(ra.id == rb.id);
    assert_sound(a, g);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void kv_regions_two_per_layer(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    g->n_ctx = 1024;
    size_t pos = input(g, "positions", 1, TP_DTYPE_I32);
    size_t k = input(g, "k", 16, TP_DTYPE_F32), v = input(g, "v", 16, TP_DTYPE_F32);
    size_t st = node(g, TP_OP_KV_STORE, "kv_store.0", 3, k, v, pos, 16);
    g->nodes[st].shape[1] = 1024;
    g->nodes[st].p.layer = 0;
    size_t ld = node(g, TP_OP_KV_LOAD, "kv_load.0", 0, 0, 0, 0, 16);
    g->nodes[ld].shape[1] = 1024;
    g->nodes[ld].p.layer = 0;
    assert_int_equal(tp_graph_mark_output(g, ld), TP_OK);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    tp_bufref rs, rl, kk, vv;
    assert_true(tp_alloc_node_buffer(a, st, &rs));
    assert_true(tp_alloc_node_buffer(a, ld, &rl));
    assert_int_equal(rs.id, rl.id);
    assert_int_equal(rs.backend, rl.backend);
    assert_true(tp_alloc_kv_pair(a, 0, &kk, &vv));
    assert_int_equal(kk.id, rs.id);
    assert_int_equal(kk.len, 16 * 1024);
    assert_false(kk.id == vv.id);
    assert_int_equal(tp_alloc_persistent_count(a), 2);
    assert_string_equal(tp_alloc_persistent_at(a, 0)->name, "kv.0.k");
    assert_string_equal(tp_alloc_persistent_at(a, 1)->name, "kv.0.v");
    assert_non_null(tp_alloc_find_persistent(a, "kv.0.k"));
    assert_sound(a, g);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void cycle_graph_allocation_fails(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    /* a = add(b), b = add(a) */
    node(g, TP_OP_ADD, "a", 1, 1, 0, 0, 4);
    node(g, TP_OP_ADD, "b", 1, 0, 0, 0, 4);
    tp_allocator *a = new_alloc();
    assert_int_not_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_non_null(strstr(tp_last_error(), "cycle"));
    assert_null(tp_alloc_current_graph(a));
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void allocator_survives_rebuild(void **state)
{
    (void)state;
    tp_graph_cache *c = NULL;
    assert_int_equal(tp_graph_cache_create(new_alloc(), 0, NULL, &c), TP_OK);
    tp_graph_params p1;
    memset(&p1, 0, sizeof p1);
    p1.n_tokens = 1;
    p1.n_out = 1;
    p1.n_ctx = 32;
    p1.fuse_ffn = 1;
    assert_int_equal(tp_graph_cache_replace_graph(c, tiny_graph(1, 1, 32, 0), &p1), TP_OK);
    tp_allocator *a = tp_graph_cache_allocator(c);
    tp_bufref planted;
    assert_int_equal(tp_alloc_persistent(a, "kv.test", TP_BACKEND_CPU, 16, &planted), TP_OK);
    tp_graph_params p4 = p1;
    p4.n_tokens = 4;
    p4.n_out = 4;
    assert_int_equal(tp_graph_cache_replace_graph(c, tiny_graph(4, 4, 32, 0), &p4), TP_OK);
    assert_ptr_equal(tp_graph_cache_allocator(c), a);
    const tp_persistent_region *r = tp_alloc_find_persistent(a, "kv.test");
    assert_non_null(r);
    assert_int_equal(r->id, planted.id);
    assert_int_equal(r->elems, 16);
    /* and no activation of the new plan took it */
    assert_false(tp_alloc_backend(a, TP_BACKEND_CPU)->is_free(tp_alloc_backend(a, 0), r->id));
    assert_sound(a, tp_graph_cache_current(c));
    tp_graph_cache_destroy(c);
}

/* --- size classes ------------------------------------------------------------------------- */

/* Independent restatement in bytes: a 1 KiB floor, powers of two to 16 KiB, 16 KiB steps. */
static size_t class_bytes_oracle(size_t elems)
{
    size_t bytes = (elems ? elems : 1) * 4;
    if (bytes <= 1024)
        return 1024;
    if (bytes <= 16384) {
        size_t p = 1;
        while (p < bytes)
            p <<= 1;
        return p;
    }
    return (bytes + 16383) / 16384 * 16384;
}

static void size_class_ladder(void **state)
{
    (void)state;
    static const size_t ladder[][2] = {{1, 256},     {257, 512},   {896, 1024},
                                       {4096, 4096}, {4097, 8192}, {4864, 8192},
                                       {151936, 155648}};
    for (size_t i = 0; i < sizeof ladder / sizeof ladder[0]; i++)
        assert_int_equal(tp_size_class(ladder[i][0]), ladder[i][1]);
    assert_int_equal(tp_size_class(0), 256);
    for (size_t e = 0; e < 70000; e++)
        assert_int_equal(tp_size_class(e) * 4, class_bytes_oracle(e));
}

static void two_shapes_in_one_class_share_a_buffer(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t x = input(g, "x", 4, TP_DTYPE_F32);
    size_t a300 = node(g, TP_OP_ADD, "a", 2, x, x, 0, 300);
    size_t b = node(g, TP_OP_ADD, "b", 2, a300, a300, 0, 4);
    size_t c400 = node(g, TP_OP_ADD, "c", 2, b, b, 0, 400);
    assert_int_equal(tp_graph_mark_output(g, c400), TP_OK);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    tp_bufref ra, rc;
    assert_true(tp_alloc_node_buffer(a, a300, &ra));
    assert_true(tp_alloc_node_buffer(a, c400, &rc));
    assert_int_equal(ra.id, rc.id); /* 300 and 400 are both class 512 */
    assert_int_equal(ra.len, 300);  /* each keeps its own window */
    assert_int_equal(rc.len, 400);
    tp_backend *cpu = tp_alloc_backend(a, TP_BACKEND_CPU);
    assert_int_equal(cpu->buffer_len(cpu, ra.id), 512);
    assert_sound(a, g);
    /* exact sizes: lengths differ, so the pool cannot recycle */
    tp_alloc_options o = tp_alloc_options_default();
    o.size_classes = 0;
    tp_allocator *e = new_alloc();
    assert_int_equal(tp_alloc_graph(e, g, &o), TP_OK);
    assert_true(tp_alloc_node_buffer(e, a300, &ra));
    assert_true(tp_alloc_node_buffer(e, c400, &rc));
    assert_false(ra.id == rc.id);
    tp_allocator_destroy(e);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* --- fills ---------------------------------------------------------------------------------- */

static void fill_input_errors_and_bitwise_moves(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t ids = input(g, "token_ids", 4, TP_DTYPE_I32);
    size_t xs = input(g, "x", 3, TP_DTYPE_F32);
    size_t s = node(g, TP_OP_ADD, "s", 2, xs, xs, 0, 3);
    assert_int_equal(tp_graph_mark_output(g, s), TP_OK);
    assert_int_equal(tp_graph_mark_output(g, ids), TP_OK);
    tp_allocator *a = new_alloc();
    uint32_t v[4] = {1, 151935, 0x7f800001u, 0x80000000u}; /* subnormal, NaN, -0 patterns */
    /* before alloc_graph: the input has no buffer */
    assert_int_not_equal(tp_alloc_fill_input_i32(a, g, "token_ids", v, 4), TP_OK);
    assert_non_null(strstr(tp_last_error(), "no buffer"));
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_int_equal(tp_alloc_fill_input_i32(a, g, "nope", v, 4), TP_ERR_NOT_FOUND);
    assert_int_not_equal(tp_alloc_fill_input_i32(a, g, "token_ids", v, 3), TP_OK);
    assert_int_not_equal(tp_alloc_fill_input_i32(a, g, "token_ids", v, 5), TP_OK);
    /* a node that is not an input, even by name */
    assert_int_equal(tp_alloc_fill_input(a, g, "s", NULL, 0), TP_ERR_NOT_FOUND);
    assert_int_equal(tp_alloc_fill_input_i32(a, g, "token_ids", v, 4), TP_OK);
    tp_bufref r;
    assert_true(tp_alloc_node_buffer(a, ids, &r));
    uint32_t back[4];
    assert_int_equal(tp_alloc_read(a, &r, back), TP_OK);
    assert_memory_equal(back, v, sizeof v);
    float f[3];
    uint32_t fb[3] = {0x00000003u, 0xffc00001u, 0x80000000u};
    memcpy(f, fb, sizeof f);
    assert_int_equal(tp_alloc_fill_input(a, g, "x", f, 3), TP_OK);
    float fback[3];
    assert_true(tp_alloc_node_buffer(a, xs, &r));
    assert_int_equal(tp_alloc_read(a, &r, fback), TP_OK);
    assert_memory_equal(fback, fb, sizeof fb);
    /* a graph this allocator did not plan */
    tp_graph *other = new_graph();
    input(other, "token_ids", 4, TP_DTYPE_I32);
    assert_int_not_equal(tp_alloc_fill_input_i32(a, other, "token_ids", v, 4), TP_OK);
    tp_graph_destroy(other);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* --- KV regions --------------------------------------------------------------------------- */

static void kv_region_names_counts_and_refusals(void **state)
{
    (void)state;
    tp_model_config c = tiny();
    tp_graph *g = tiny_graph(3, 3, 32, 0);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_int_equal(tp_alloc_persistent_count(a), 2 * (size_t)c.n_layer);
    assert_int_equal(tp_alloc_kv_count(a), (size_t)c.n_layer);
    size_t width = (size_t)(c.n_head_kv * c.head_dim);
    for (int L = 0; L < c.n_layer; L++) {
        char nk[32], nv[32];
        snprintf(nk, sizeof nk, "kv.%d.k", L);
        snprintf(nv, sizeof nv, "kv.%d.v", L);
        const tp_persistent_region *rk = tp_alloc_find_persistent(a, nk);
        const tp_persistent_region *rv = tp_alloc_find_persistent(a, nv);
        assert_non_null(rk);
        assert_non_null(rv);
        assert_int_equal(rk->elems, width * 32);
        assert_false(rk->id == rv->id);
        for (size_t i = 0; i < g->n_nodes; i++) {
            const tp_node *n = &g->nodes[i];
            if ((n->op == TP_OP_KV_STORE || n->op == TP_OP_KV_LOAD) && n->p.layer == L) {
                tp_bufref r;
                assert_true(tp_alloc_node_buffer(a, i, &r));
                assert_int_equal(r.id, rk->id);
            }
        }
    }
    assert_sound(a, g);
    /* a position at or past n_ctx is refused at fill time */
    uint32_t pos_ok[3] = {0, 1, 31}, pos_bad[3] = {30, 31, 32};
    assert_int_equal(tp_alloc_fill_input_i32(a, g, "positions", pos_ok, 3), TP_OK);
    assert_int_not_equal(tp_alloc_fill_input_i32(a, g, "positions", pos_bad, 3), TP_OK);
    assert_non_null(strstr(tp_last_error(), "n_ctx"));
    /* a second graph with another n_ctx must not get the old regions silently */
    tp_graph *g64 = tiny_graph(3, 3, 64, 0);
    assert_int_not_equal(tp_alloc_graph(a, g64, NULL), TP_OK);
    assert_non_null(strstr(tp_last_error(), "elements"));
    /* nor the same regions from another backend */
    tp_graph *gq = tiny_graph(3, 3, 32, 1);
    assert_int_not_equal(tp_alloc_graph(a, gq, NULL), TP_OK);
    assert_non_null(strstr(tp_last_error(), "queued"));
    /* direct requests */
    tp_bufref k, v;
    assert_int_equal(tp_alloc_ensure_kv(a, 0, TP_BACKEND_CPU, width * 32, &k, &v), TP_OK);
    assert_int_not_equal(tp_alloc_ensure_kv(a, 0, TP_BACKEND_CPU, width * 32 + 1, &k, &v),
                         TP_OK);
    assert_int_not_equal(tp_alloc_ensure_kv(a, 0, TP_BACKEND_QUEUED, width * 32, &k, &v), TP_OK);
    assert_int_equal(tp_alloc_persistent_count(a), 2 * (size_t)c.n_layer);
    /* a persistent name is unique, whichever comes first: a caller's region cannot take a
     * KV name, and a new layer's KV cannot take a caller's region's name */
    assert_int_not_equal(tp_alloc_persistent(a, "kv.0.k", TP_BACKEND_CPU, 4, NULL), TP_OK);
    assert_int_equal(tp_alloc_persistent(a, "kv.40.v", TP_BACKEND_CPU, 4, NULL), TP_OK);
    assert_int_equal(tp_alloc_persistent(a, "kv.41.k", TP_BACKEND_CPU, 4, NULL), TP_OK);
    assert_int_not_equal(tp_alloc_ensure_kv(a, 41, TP_BACKEND_CPU, 4, NULL, NULL), TP_OK);
    assert_non_null(strstr(tp_last_error(), "kv.41.k"));
    assert_int_not_equal(tp_alloc_ensure_kv(a, 40, TP_BACKEND_CPU, 4, NULL, NULL), TP_OK);
    assert_non_null(strstr(tp_last_error(), "kv.40.v"));
    assert_false(tp_alloc_kv_pair(a, 41, NULL, NULL));
    assert_false(tp_alloc_kv_pair(a, 40, NULL, NULL));
    /* a refused layer leaves no half pair behind (regions are never freed) */
    size_t regions = 2 * (size_t)c.n_layer + 2;
    assert_int_equal(tp_alloc_persistent_count(a), regions);
    assert_null(tp_alloc_find_persistent(a, "kv.40.k"));
    /* the original graph plans again with the same regions */
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_int_equal(tp_alloc_persistent_count(a), regions);
    assert_sound(a, g);
    tp_allocator_destroy(a);
    tp_graph_destroy(gq);
    tp_graph_destroy(g64);
    tp_graph_destroy(g);
}

/* --- staging ------------------------------------------------------------------------------- */

static void staging_is_fresh_kept_and_released_at_next_plan(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t x = input(g, "x", 300, TP_DTYPE_F32);
    size_t a1 = node(g, TP_OP_ADD, "a1", 2, x, x, 0, 300);
    size_t a2 = node(g, TP_OP_ADD, "a2", 2, a1, a1, 0, 300); /* a1 dies here, freed */
    size_t q = node(g, TP_OP_SILU, "q", 1, a2, 0, 0, 300);
    g->nodes[q].backend = TP_BACKEND_QUEUED;
    size_t dead = node(g, TP_OP_SILU, "dead", 1, a2, 0, 0, 300);
    assert_int_equal(tp_graph_mark_output(g, q), TP_OK);
    tp_allocator *a = new_alloc();
    tp_backend *qb = tp_alloc_backend(a, TP_BACKEND_QUEUED);
    /* a free 300-element buffer on the queued pool, so a free-list hit would be possible */
    size_t spare;
    assert_int_equal(qb->alloc(qb, 300, &spare), TP_OK);
    assert_int_equal(qb->free_buffer(qb, spare), TP_OK);
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    size_t before = tp_alloc_pool_allocations(a);
    size_t count = qb->buffer_count(qb);
    tp_bufref s1, s2;
    assert_int_equal(tp_alloc_staging(a, a2, TP_BACKEND_QUEUED, &s1), TP_OK);
    assert_int_equal(tp_alloc_pool_allocations(a), before + 1);
    assert_int_equal(s1.id, count); /* appended, never the free list */
    assert_int_equal(s1.len, 300);
    assert_true(qb->is_free(qb, spare));
    assert_int_equal(tp_alloc_staging(a, a2, TP_BACKEND_QUEUED, &s2), TP_OK);
    assert_same_ref(&s1, &s2);
    assert_int_equal(tp_alloc_pool_allocations(a), before + 1);
    /* the canonical window is untouched */
    tp_bufref canon;
    assert_true(tp_alloc_node_buffer(a, a2, &canon));
    assert_int_equal(canon.backend, TP_BACKEND_CPU);
    /* refusals: a dead node, the node's own backend */
    assert_int_not_equal(tp_alloc_staging(a, dead, TP_BACKEND_CPU, &s2), TP_OK);
    assert_int_not_equal(tp_alloc_staging(a, a2, TP_BACKEND_CPU, &s2), TP_OK);
    assert_false(qb->is_free(qb, s1.id));
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_true(qb->is_free(qb, s1.id)); /* released at the next plan */
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* --- aliasing ----------------------------------------------------------------------------- */

static void sole_consumer_aliasing_and_its_fallbacks(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t pos = input(g, "positions", 1, TP_DTYPE_I32);
    size_t x = input(g, "x", 8, TP_DTYPE_F32);
    size_t m = node(g, TP_OP_ADD, "m", 2, x, x, 0, 8);
    size_t r = node(g, TP_OP_ROPE, "r", 2, m, pos, 0, 8); /* m's only consumer: alias */
    size_t m2 = node(g, TP_OP_ADD, "m2", 2, r, x, 0, 8);
    size_t s1 = node(g, TP_OP_SILU, "s1", 1, m2, 0, 0, 8); /* m2 has two consumers */
    size_t s2 = node(g, TP_OP_ADD, "s2", 2, s1, m2, 0, 8);
    size_t m3 = node(g, TP_OP_ADD, "m3", 2, s2, x, 0, 8);
    size_t sq = node(g, TP_OP_SILU, "sq", 1, m3, 0, 0, 8); /* other backend */
    g->nodes[sq].backend = TP_BACKEND_QUEUED;
    size_t sx = node(g, TP_OP_SILU, "sx", 1, x, 0, 0, 8); /* an input: never */
    size_t out = node(g, TP_OP_ADD, "out", 2, sx, x, 0, 8);
    size_t so = node(g, TP_OP_SILU, "so", 1, out, 0, 0, 8); /* an output source: never */
    assert_int_equal(tp_graph_mark_output(g, sq), TP_OK);
    assert_int_equal(tp_graph_mark_output(g, out), TP_OK);
    assert_int_equal(tp_graph_mark_output(g, so), TP_OK);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_int_equal(tp_alloc_alias_of(a, r), m);
    assert_int_equal(tp_alloc_alias_of(a, s1), TP_NO_ALIAS);
    assert_int_equal(tp_alloc_alias_of(a, sq), TP_NO_ALIAS);
    assert_int_equal(tp_alloc_alias_of(a, sx), TP_NO_ALIAS);
    assert_int_equal(tp_alloc_alias_of(a, so), TP_NO_ALIAS);
    tp_bufref rm, rr;
    assert_true(tp_alloc_node_buffer(a, m, &rm));
    assert_true(tp_alloc_node_buffer(a, r, &rr));
    assert_same_ref(&rm, &rr);
    assert_sound(a, g);
    /* last-consumer: add, mul and norms too, when they are the source's last reader */
    tp_alloc_options o = tp_alloc_options_default();
    o.aliasing = TP_ALIAS_LAST_CONSUMER;
    assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
    assert_int_equal(tp_alloc_alias_of(a, s2), s1);       /* s2 = add(s1, m2), s1's last */
    assert_int_equal(tp_alloc_alias_of(a, s1), TP_NO_ALIAS); /* m2 is read after s1 */
    assert_int_equal(tp_alloc_alias_of(a, m3), s2);
    assert_int_equal(tp_alloc_alias_of(a, out), sx); /* sx's last reader */
    assert_int_equal(tp_alloc_alias_of(a, so), TP_NO_ALIAS);
    assert_sound(a, g);
    o.aliasing = TP_ALIAS_NONE;
    assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
    for (size_t i = 0; i < g->n_nodes; i++)
        assert_int_equal(tp_alloc_alias_of(a, i), TP_NO_ALIAS);
    assert_sound(a, g);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* The two policies differ exactly when an in-place op is its source's last reader but not
 * its only one: sole-consumer must refuse (the chapter's rule), last-consumer may alias. A
 * window of another length is never shared, even in a graph nobody validated. */
static void sole_and_last_consumer_differ_on_a_shared_source(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t x = input(g, "x", 8, TP_DTYPE_F32);
    size_t m = node(g, TP_OP_ADD, "m", 2, x, x, 0, 8);
    size_t u = node(g, TP_OP_ADD, "u", 2, m, x, 0, 8); /* m's first reader */
    size_t s = node(g, TP_OP_SILU, "s", 1, m, 0, 0, 8); /* m's last reader, not its only */
    size_t o = node(g, TP_OP_ADD, "o", 2, u, s, 0, 8);
    size_t w = node(g, TP_OP_ADD, "w", 2, o, x, 0, 8);
    size_t big = node(g, TP_OP_SILU, "big", 1, w, 0, 0, 16); /* longer than its source */
    assert_int_equal(tp_graph_mark_output(g, big), TP_OK);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_int_equal(tp_alloc_alias_of(a, s), TP_NO_ALIAS);
    assert_int_equal(tp_alloc_alias_of(a, big), TP_NO_ALIAS);
    tp_bufref rm, rs;
    assert_true(tp_alloc_node_buffer(a, m, &rm));
    assert_true(tp_alloc_node_buffer(a, s, &rs));
    assert_false(rm.backend == rs.backend && rm.id == rs.id);
    assert_sound(a, g);
    tp_alloc_options opt = tp_alloc_options_default();
    opt.aliasing = TP_ALIAS_LAST_CONSUMER;
    assert_int_equal(tp_alloc_graph(a, g, &opt), TP_OK);
    assert_int_equal(tp_alloc_alias_of(a, s), m);
    assert_int_equal(tp_alloc_alias_of(a, big), TP_NO_ALIAS);
    tp_bufref rb;
    assert_true(tp_alloc_node_buffer(a, big, &rb));
    assert_int_equal(rb.len, 16);
    assert_sound(a, g);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* The naive strategy is the reference the others are executed against, so it must give
 * every live non-KV node a buffer of its own: a sound plan that reuses buffers would make
 * the bit-identity tests compare two reusing plans. */
static void naive_gives_every_node_its_own_buffer(void **state)
{
    (void)state;
    tp_graph *g = tiny_graph(3, 1, 16, 1);
    tp_allocator *a = new_alloc();
    tp_alloc_options opt = tp_alloc_options_default();
    opt.strategy = TP_STRATEGY_NAIVE;
    assert_int_equal(tp_alloc_graph(a, g, &opt), TP_OK);
    size_t own = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        tp_bufref ri;
        tp_op op = g->nodes[i].op;
        if (!tp_alloc_node_buffer(a, i, &ri) || op == TP_OP_KV_STORE || op == TP_OP_KV_LOAD)
            continue;
        own++;
        assert_int_equal(tp_alloc_alias_of(a, i), TP_NO_ALIAS);
        assert_int_equal(ri.offset, 0);
        assert_int_equal(ri.len, tp_node_elements(&g->nodes[i]));
        for (size_t j = 0; j < i; j++) {
            tp_bufref rj;
            tp_op oj = g->nodes[j].op;
            if (!tp_alloc_node_buffer(a, j, &rj) || oj == TP_OP_KV_STORE || oj == TP_OP_KV_LOAD)
                continue;
            assert_false(ri.backend == rj.backend && ri.id == rj.id);
        }
    }
    assert_true(own > 0);
    assert_int_equal(tp_alloc_stats(a).activation_buffers, own);
    assert_sound(a, g);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* Shapes no memory could hold, in a graph nobody validated: a live node whose element count
 * overflows is refused (a wrapped count would hand it a tiny buffer to overrun), and dead
 * nodes of 2^61 elements (2^63 bytes each) saturate the naive total instead of wrapping. */
static void huge_shapes_are_refused_or_saturate(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t x = input(g, "x", 4, TP_DTYPE_F32);
    size_t y = node(g, TP_OP_SILU, "y", 1, x, 0, 0, 4);
    for (int k = 0; k < 3; k++) {
        size_t d = node(g, TP_OP_MUL_MAT, "dead", 1, x, 0, 0, 1);
        g->nodes[d].shape[0] = (int64_t)1 << 61;
    }
    assert_int_equal(tp_graph_mark_output(g, y), TP_OK);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    tp_plan_stats st = tp_alloc_stats(a);
    assert_int_equal(st.dead_nodes, 3);
    /* 3 * 2^63 bytes exceeds SIZE_MAX (2^64 - 1) */
    assert_true(3.0L * 9223372036854775808.0L > (long double)SIZE_MAX);
    assert_int_equal(st.naive_bytes, SIZE_MAX);
    /* a live output of (2^62 + 1) * 4 = 2^64 + 4 elements: wrapped, that is 4 */
    size_t big = node(g, TP_OP_MUL_MAT, "big", 1, x, 0, 0, 1);
    g->nodes[big].shape[0] = ((int64_t)1 << 62) + 1;
    g->nodes[big].shape[1] = 4;
    assert_int_equal(tp_graph_mark_output(g, big), TP_OK);
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "overflowing"));
    assert_null(tp_alloc_current_graph(a));
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void dead_nodes_are_unmapped(void **state)
{
    (void)state;
    tp_model_config c = tiny();
    tp_graph *g = tiny_graph(2, 2, 16, 0);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    size_t dead = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        int consumed = 0;
        for (size_t j = i + 1; j < g->n_nodes; j++)
            for (size_t k = 0; k < g->nodes[j].n_src; k++)
                consumed |= g->nodes[j].src[k] == i;
        if (!tp_alloc_node_buffer(a, i, NULL)) {
            dead++;
            assert_false(consumed);
            assert_int_equal(g->nodes[i].op, TP_OP_SILU); /* the fusion orphans */
        }
    }
    assert_int_equal(dead, (size_t)c.n_layer);
    assert_int_equal(tp_alloc_stats(a).dead_nodes, dead);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* --- regressions: each rule switched off is caught by the checker ---------------------- */

/* Plans g with a rule switched off (o) and asserts the failure that rule prevents: nodes u
 * and v, both live at once, are handed one buffer, and the independent checker rejects it. */
static void assert_rule_off_shares_a_live_buffer(tp_allocator *a, const tp_graph *g,
                                                 const tp_alloc_options *o, size_t u, size_t v)
{
    assert_int_equal(tp_alloc_graph(a, g, o), TP_OK);
    tp_bufref ru, rv;
    assert_true(tp_alloc_node_buffer(a, u, &ru));
    assert_true(tp_alloc_node_buffer(a, v, &rv));
    assert_int_equal(ru.id, rv.id);
    char why[512];
    assert_false(plan_sound(a, g, why, sizeof why));
}

/* Kahn's order runs node 5 (h's last reader, shallow) before 3 and 4 (a deep chain), so
 * liveness in that order frees h before node 3, while execution in build order still needs
 * it at node 5. */
static void build_order_liveness_regression(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t x = input(g, "x", 16, TP_DTYPE_F32);
    size_t h = node(g, TP_OP_ADD, "h", 2, x, x, 0, 16);
    size_t a1 = node(g, TP_OP_ADD, "a", 2, x, x, 0, 16);
    size_t b = node(g, TP_OP_ADD, "b", 2, a1, a1, 0, 16);
    size_t p = node(g, TP_OP_ADD, "p", 2, b, b, 0, 16);
    size_t c = node(g, TP_OP_ADD, "c", 2, h, h, 0, 16);
    size_t out = node(g, TP_OP_ADD, "out", 2, p, c, 0, 16);
    assert_int_equal(tp_graph_mark_output(g, out), TP_OK);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_sound(a, g);
    tp_alloc_set_test_switches(a, &(tp_alloc_test_switches){ .kahn_liveness = 1 });
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    char why[512];
    assert_false(plan_sound(a, g, why, sizeof why));
    assert_non_null(strstr(why, "overlap"));
    tp_bufref rh, rb;
    assert_true(tp_alloc_node_buffer(a, h, &rh));
    assert_true(tp_alloc_node_buffer(a, b, &rb));
    assert_int_equal(rh.id, rb.id); /* b overwrites h before c reads it */
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* Two inputs, the second late in build order: unpinned, it takes the first one's buffer
 * once the first looks dead, and the host's fill of one clobbers the other. */
static void unpinned_inputs_regression(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t t = input(g, "token_ids", 4, TP_DTYPE_I32);
    size_t e = node(g, TP_OP_GET_ROWS, "embed", 1, t, 0, 0, 8);
    size_t p = input(g, "positions", 4, TP_DTYPE_I32);
    size_t r = node(g, TP_OP_ROPE, "rope", 2, e, p, 0, 8);
    assert_int_equal(tp_graph_mark_output(g, r), TP_OK);
    tp_allocator *a = new_alloc();
    tp_alloc_test_switches sw = { .inputs_in_walk = 1 }; /* inputs met during the walk */
    tp_alloc_set_test_switches(a, &sw);
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_sound(a, g);
    tp_bufref rt, rp;
    assert_true(tp_alloc_node_buffer(a, t, &rt));
    assert_true(tp_alloc_node_buffer(a, p, &rp));
    assert_false(rt.id == rp.id);
    sw.unpinned_inputs = 1;
    tp_alloc_set_test_switches(a, &sw);
    assert_rule_off_shares_a_live_buffer(a, g, NULL, t, p);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* [fix] inputs first: a late input of another length but the same class is handed the
 * buffer an earlier node writes during execution, after the host filled the input. */
static void inputs_first_regression(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t x = input(g, "x", 4, TP_DTYPE_F32);
    size_t a1 = node(g, TP_OP_ADD, "a", 2, x, x, 0, 100);
    size_t c = node(g, TP_OP_ADD, "c", 2, a1, a1, 0, 4);
    size_t y = input(g, "y", 200, TP_DTYPE_F32); /* class 256, like a's 100 */
    size_t out = node(g, TP_OP_ADD, "out", 2, c, y, 0, 4);
    assert_int_equal(tp_graph_mark_output(g, out), TP_OK);
    tp_allocator *al = new_alloc();
    assert_int_equal(tp_alloc_graph(al, g, NULL), TP_OK);
    assert_sound(al, g);
    tp_alloc_set_test_switches(al, &(tp_alloc_test_switches){ .inputs_in_walk = 1 });
    assert_rule_off_shares_a_live_buffer(al, g, NULL, a1, y);
    tp_allocator_destroy(al);
    tp_graph_destroy(g);
}

/* [fix] the alias extends the buffer's deadline: without it the buffer is swept while the
 * alias is live and the next node is handed the buffer it is reading. */
static void alias_deadline_regression(void **state)
{
    (void)state;
    tp_graph *g = new_graph();
    size_t x = input(g, "x", 4, TP_DTYPE_F32);
    size_t m = node(g, TP_OP_ADD, "m", 2, x, x, 0, 4);
    size_t s = node(g, TP_OP_SILU, "s", 1, m, 0, 0, 4); /* aliases m, live until out */
    size_t b = node(g, TP_OP_ADD, "b", 2, x, x, 0, 4);
    size_t out = node(g, TP_OP_ADD, "out", 2, s, b, 0, 4);
    assert_int_equal(tp_graph_mark_output(g, out), TP_OK);
    tp_allocator *a = new_alloc();
    assert_int_equal(tp_alloc_graph(a, g, NULL), TP_OK);
    assert_int_equal(tp_alloc_alias_of(a, s), m);
    assert_sound(a, g);
    tp_alloc_set_test_switches(a, &(tp_alloc_test_switches){ .no_alias_deadline = 1 });
    assert_rule_off_shares_a_live_buffer(a, g, NULL, s, b);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

/* --- pool -------------------------------------------------------------------------------------- */

static void pool_ids_are_stable_and_free_is_idempotent(void **state)
{
    (void)state;
    tp_backend *b = NULL;
    assert_int_equal(tp_backend_create_cpu(&b), TP_OK);
    size_t i0, i1, i2, i3;
    assert_int_equal(b->alloc(b, 10, &i0), TP_OK);
    assert_int_equal(b->alloc(b, 20, &i1), TP_OK);
    float *p1 = b->host_data(b, i1);
    float ones[20];
    for (int k = 0; k < 20; k++)
        ones[k] = 1.0f;
    assert_int_equal(b->write_window(b, i1, 0, ones, 20), TP_OK);
    assert_int_equal(b->free_buffer(b, i1), TP_OK);
    assert_int_equal(b->free_buffer(b, i1), TP_OK); /* idempotent */
    assert_int_equal(b->counters(b).frees, 1);
    assert_int_equal(b->alloc(b, 10, &i2), TP_OK); /* no free buffer of 10 */
    assert_int_equal(i2, 2);
    assert_int_equal(b->alloc(b, 20, &i3), TP_OK); /* recycled, zeroed, same memory */
    assert_int_equal(i3, i1);
    assert_ptr_equal(b->host_data(b, i3), p1);
    for (int k = 0; k < 20; k++)
        assert_true(p1[k] == 0.0f);
    assert_int_equal(b->free_buffer(b, i3), TP_OK);
    size_t f;
    assert_int_equal(b->alloc_fresh(b, 20, &f), TP_OK); /* never the free list */
    assert_int_equal(f, 3);
    assert_int_not_equal(b->write_window(b, i0, 5, ones, 6), TP_OK); /* leaves the buffer */
    assert_int_equal(b->reserve(b, i1), TP_OK);
    assert_int_not_equal(b->reserve(b, i1), TP_OK);
    /* a large buffer (an anonymous mapping) is zeroed on recycle too, at the same address */
    size_t big = (size_t)1 << 20, ib, ib2;
    assert_int_equal(b->alloc(b, big, &ib), TP_OK);
    float *pb = b->host_data(b, ib);
    for (size_t k = 0; k < big; k += 1000)
        pb[k] = 3.0f;
    pb[big - 1] = 3.0f;
    assert_int_equal(b->free_buffer(b, ib), TP_OK);
    assert_int_equal(b->alloc(b, big, &ib2), TP_OK);
    assert_int_equal(ib2, ib);
    assert_ptr_equal(b->host_data(b, ib2), pb);
    for (size_t k = 0; k < big; k += 1000)
        assert_true(pb[k] == 0.0f);
    assert_true(pb[big - 1] == 0.0f);
    b->destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(liveness_reuses_buffers_along_chain),
        cmocka_unit_test(parallel_chains_do_not_share),
        cmocka_unit_test(kv_regions_two_per_layer),
        cmocka_unit_test(cycle_graph_allocation_fails),
        cmocka_unit_test(allocator_survives_rebuild),
        cmocka_unit_test(size_class_ladder),
        cmocka_unit_test(two_shapes_in_one_class_share_a_buffer),
        cmocka_unit_test(fill_input_errors_and_bitwise_moves),
        cmocka_unit_test(kv_region_names_counts_and_refusals),
        cmocka_unit_test(staging_is_fresh_kept_and_released_at_next_plan),
        cmocka_unit_test(sole_consumer_aliasing_and_its_fallbacks),
        cmocka_unit_test(sole_and_last_consumer_differ_on_a_shared_source),
        cmocka_unit_test(naive_gives_every_node_its_own_buffer),
        cmocka_unit_test(huge_shapes_are_refused_or_saturate),
        cmocka_unit_test(dead_nodes_are_unmapped),
        cmocka_unit_test(build_order_liveness_regression),
        cmocka_unit_test(unpinned_inputs_regression),
        cmocka_unit_test(inputs_first_regression),
        cmocka_unit_test(alias_deadline_regression),
        cmocka_unit_test(pool_ids_are_stable_and_free_is_idempotent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
