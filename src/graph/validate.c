/* Per-op validation: arity, shapes, dtypes and parameters that the kernels and the allocator
 * rely on. Each refusal names the node and the field, so a file reader can turn it into a
 * path such as nodes[7].src[1]. */
#include "tensorplan/graph.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "tensorplan/ops.h"

typedef struct vctx {
    const tp_graph *g;
    size_t node;      /* offending node, SIZE_MAX for graph-level problems */
    char *where;
    size_t where_size;
    size_t *kv_first; /* per KV node: the first KV node of its layer; else SIZE_MAX */
    unsigned char *listed; /* per node: named in inputs[]                            */
} vctx;

static tp_status refuse(vctx *c, size_t node, const char *where, const char *fmt, ...)
    TP_PRINTF(4, 5);

static tp_status refuse(vctx *c, size_t node, const char *where, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->node = node;
    if (c->where && c->where_size)
        snprintf(c->where, c->where_size, "%s", where);
    return tp_fail(TP_ERR_INVALID, "%s", msg);
}

static int same_shape(const tp_node *a, const tp_node *b)
{
    for (int d = 0; d < 4; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

static const char *shape_str(const tp_node *n, char *buf, size_t size)
{
    snprintf(buf, size, "[%lld, %lld, %lld, %lld]", (long long)n->shape[0],
             (long long)n->shape[1], (long long)n->shape[2], (long long)n->shape[3]);
    return buf;
}

static int is_vector(const tp_node *n)
{
    return n->shape[1] == 1 && n->shape[2] == 1 && n->shape[3] == 1;
}

static int is_matrix(const tp_node *n)
{
    return n->shape[2] == 1 && n->shape[3] == 1;
}

/* Sources holding token ids or positions: an i32 vector of exactly `len` entries. */
static tp_status want_index_src(vctx *c, size_t i, size_t k, int64_t len, const char *what)
{
    const tp_node *nd = &c->g->nodes[i];
    const tp_node *s = &c->g->nodes[nd->src[k]];
    char where[16];
    snprintf(where, sizeof where, "src[%zu]", k);
    if (s->dtype != TP_DTYPE_I32)
        return refuse(c, i, where, "expected %s as an i32 node, got %s node %zu (%s)", what,
                      tp_dtype_name(s->dtype), s->id, s->name);
    if (!is_vector(s) || s->shape[0] != len)
        return refuse(c, i, where,
                      "expected %s of shape [%lld, 1, 1, 1], got node %zu (%s) of shape "
                      "[%lld, %lld, %lld, %lld]",
                      what, (long long)len, s->id, s->name, (long long)s->shape[0],
                      (long long)s->shape[1], (long long)s->shape[2], (long long)s->shape[3]);
    return TP_OK;
}

static tp_status want_f32_src(vctx *c, size_t i, size_t k)
{
    const tp_node *nd = &c->g->nodes[i];
    const tp_node *s = &c->g->nodes[nd->src[k]];
    if (s->dtype == TP_DTYPE_F32)
        return TP_OK;
    char where[16];
    snprintf(where, sizeof where, "src[%zu]", k);
    return refuse(c, i, where, "expected an f32 source, got %s node %zu (%s)",
                  tp_dtype_name(s->dtype), s->id, s->name);
}

static tp_status want_same_shape_src(vctx *c, size_t i, size_t k)
{
    const tp_node *nd = &c->g->nodes[i];
    const tp_node *s = &c->g->nodes[nd->src[k]];
    if (same_shape(nd, s))
        return TP_OK;
    char where[16], a[96], b[96];
    snprintf(where, sizeof where, "src[%zu]", k);
    return refuse(c, i, where, "expected a source of the node's shape %s, got node %zu (%s) of "
                  "shape %s", shape_str(nd, a, sizeof a), s->id, s->name,
                  shape_str(s, b, sizeof b));
}

static tp_status want_layer(vctx *c, size_t i)
{
    const tp_node *nd = &c->g->nodes[i];
    if (nd->p.layer >= 0)
        return TP_OK;
    return refuse(c, i, "layer", "expected a layer >= 0 on op %s, got %d", tp_op_name(nd->op),
                  nd->p.layer);
}

static tp_status want_heads(vctx *c, size_t i, int n_head, const char *key)
{
    const tp_node *nd = &c->g->nodes[i];
    if (n_head <= 0)
        return refuse(c, i, key, "expected a positive head count on op %s, got %d",
                      tp_op_name(nd->op), n_head);
    if (nd->p.head_dim <= 0 || nd->p.head_dim % 2 != 0)
        return refuse(c, i, "head_dim", "expected a positive even head_dim on op %s, got %d",
                      tp_op_name(nd->op), nd->p.head_dim);
    return TP_OK;
}

/* The rope mode and scaling of a rope node (docs/graph.md). */
static tp_status want_rope_params(vctx *c, size_t i, const tp_node *nd)
{
    const tp_node_params *p = &nd->p;
    if (p->rope_mode != TP_ROPE_NEOX && p->rope_mode != TP_ROPE_NORM)
        return refuse(c, i, "rope_mode", "expected neox (%d) or norm (%d), got %d", TP_ROPE_NEOX,
                      TP_ROPE_NORM, p->rope_mode);
    if (!isfinite(p->rope_freq_scale) || p->rope_freq_scale <= 0.0f)
        return refuse(c, i, "rope_freq_scale", "expected a finite rope_freq_scale > 0, got %g",
                      (double)p->rope_freq_scale);
    if (!isfinite(p->rope_attn_factor) || p->rope_attn_factor <= 0.0f)
        return refuse(c, i, "rope_attn_factor", "expected a finite rope_attn_factor > 0, got %g",
                      (double)p->rope_attn_factor);
    if (!isfinite(p->rope_ext_factor) || p->rope_ext_factor < 0.0f)
        return refuse(c, i, "rope_ext_factor", "expected a finite rope_ext_factor >= 0, got %g",
                      (double)p->rope_ext_factor);
    if (p->rope_n_ctx_orig < 0 || (p->rope_ext_factor != 0.0f && p->rope_n_ctx_orig == 0))
        return refuse(c, i, "rope_n_ctx_orig", "expected rope_n_ctx_orig >= 0, and > 0 with "
                      "rope_ext_factor != 0, got %d", p->rope_n_ctx_orig);
    return TP_OK;
}

/* The shape rule of each op, dispatched by op (the op table: include/tensorplan/ops.h). */
static tp_status check_input(vctx *c, size_t i)
{
    if (!c->listed[i])
        return refuse(c, i, "op", "expected every input node to be listed in inputs, "
                      "node %zu is not", i);
    return TP_OK;
}

static tp_status check_get_rows(vctx *c, size_t i)
{
    const tp_graph *g = c->g;
    const tp_node *nd = &c->g->nodes[i];
    char a[96];
    if (!is_matrix(nd))
        return refuse(c, i, "shape", "expected [d, rows, 1, 1] for get_rows, got %s",
                      shape_str(nd, a, sizeof a));
    if (nd->n_src == 1) {
        if (!nd->p.weight[0])
            return refuse(c, i, "weight",
                          "expected the name of the table get_rows reads, got none");
        TP_TRY(want_index_src(c, i, 0, nd->shape[1], "row ids"));
    } else {
        const tp_node *x = &g->nodes[nd->src[0]];
        TP_TRY(want_f32_src(c, i, 0));
        if (!is_matrix(x) || x->shape[0] != nd->shape[0])
            return refuse(c, i, "src[0]", "expected rows of width %lld, got node %zu (%s) "
                          "of shape %s", (long long)nd->shape[0], x->id, x->name,
                          shape_str(x, a, sizeof a));
        TP_TRY(want_index_src(c, i, 1, nd->shape[1], "row ids"));
    }
    return TP_OK;
}

static tp_status check_rms_norm(vctx *c, size_t i)
{
    const tp_node *nd = &c->g->nodes[i];
    TP_TRY(want_f32_src(c, i, 0));
    TP_TRY(want_same_shape_src(c, i, 0));
    if (!isfinite(nd->p.eps) || nd->p.eps < 0.0f)
        return refuse(c, i, "eps", "expected a finite eps >= 0, got %g", (double)nd->p.eps);
    return TP_OK;
}

static tp_status check_mul_mat(vctx *c, size_t i)
{
    const tp_graph *g = c->g;
    const tp_node *nd = &c->g->nodes[i];
    char b[96];
    const tp_node *x = &g->nodes[nd->src[0]];
    TP_TRY(want_f32_src(c, i, 0));
    if (!nd->p.weight[0])
        return refuse(c, i, "weight", "expected the name of the matrix mul_mat applies, got "
                      "none");
    if (x->shape[1] != nd->shape[1] || x->shape[2] != nd->shape[2] ||
        x->shape[3] != nd->shape[3])
        return refuse(c, i, "src[0]", "expected a source with the node's rows (shape [*, "
                      "%lld, %lld, %lld]), got node %zu (%s) of shape %s",
                      (long long)nd->shape[1], (long long)nd->shape[2],
                      (long long)nd->shape[3], x->id, x->name, shape_str(x, b, sizeof b));
    return TP_OK;
}

static tp_status check_rope(vctx *c, size_t i)
{
    const tp_node *nd = &c->g->nodes[i];
    char a[96];
    TP_TRY(want_f32_src(c, i, 0));
    TP_TRY(want_same_shape_src(c, i, 0));
    if (!is_matrix(nd))
        return refuse(c, i, "shape", "expected [d, tokens, 1, 1] for rope, got %s",
                      shape_str(nd, a, sizeof a));
    TP_TRY(want_index_src(c, i, 1, nd->shape[1], "positions"));
    TP_TRY(want_heads(c, i, nd->p.n_head, "n_head"));
    if ((int64_t)nd->p.n_head * nd->p.head_dim != nd->shape[0])
        return refuse(c, i, "shape[0]", "expected n_head * head_dim = %lld, got %lld",
                      (long long)nd->p.n_head * nd->p.head_dim, (long long)nd->shape[0]);
    if (!isfinite(nd->p.rope_base) || nd->p.rope_base <= 0.0f)
        return refuse(c, i, "rope_base", "expected a finite rope_base > 0, got %g",
                      (double)nd->p.rope_base);
    return want_rope_params(c, i, nd);
}

static tp_status check_kv_store(vctx *c, size_t i)
{
    const tp_graph *g = c->g;
    const tp_node *nd = &c->g->nodes[i];
    char a[96], b[96];
    TP_TRY(want_layer(c, i));
    const tp_node *k = &g->nodes[nd->src[0]], *v = &g->nodes[nd->src[1]];
    TP_TRY(want_f32_src(c, i, 0));
    TP_TRY(want_f32_src(c, i, 1));
    if (!is_matrix(k) || k->shape[0] != nd->shape[0])
        return refuse(c, i, "src[0]", "expected K of shape [%lld, tokens, 1, 1], got node "
                      "%zu (%s) of shape %s", (long long)nd->shape[0], k->id, k->name,
                      shape_str(k, a, sizeof a));
    if (!same_shape(k, v))
        return refuse(c, i, "src[1]", "expected V of K's shape %s, got node %zu (%s) of "
                      "shape %s", shape_str(k, a, sizeof a), v->id, v->name,
                      shape_str(v, b, sizeof b));
    if (k->shape[1] > nd->shape[1])
        return refuse(c, i, "src[0]", "expected at most %lld tokens (the context), got %lld",
                      (long long)nd->shape[1], (long long)k->shape[1]);
    TP_TRY(want_index_src(c, i, 2, k->shape[1], "positions"));
    return TP_OK;
}

static tp_status check_kv_load(vctx *c, size_t i)
{
    TP_TRY(want_layer(c, i));
    return TP_OK;
}

static tp_status check_attn(vctx *c, size_t i)
{
    const tp_graph *g = c->g;
    const tp_node *nd = &c->g->nodes[i];
    char a[96];
    TP_TRY(want_layer(c, i));
    const tp_node *kv = &g->nodes[nd->src[1]];
    TP_TRY(want_f32_src(c, i, 0));
    TP_TRY(want_same_shape_src(c, i, 0));
    if (!is_matrix(nd))
        return refuse(c, i, "shape", "expected [d, tokens, 1, 1] for attn, got %s",
                      shape_str(nd, a, sizeof a));
    if ((kv->op != TP_OP_KV_LOAD && kv->op != TP_OP_KV_STORE) || kv->p.layer != nd->p.layer)
        return refuse(c, i, "src[1]", "expected a kv_load of layer %d, got node %zu (%s), "
                      "op %s of layer %d", nd->p.layer, kv->id, kv->name,
                      tp_op_name(kv->op), kv->p.layer);
    TP_TRY(want_index_src(c, i, 2, nd->shape[1], "positions"));
    TP_TRY(want_heads(c, i, nd->p.n_head, "n_head"));
    if (nd->p.n_head_kv <= 0 || nd->p.n_head % nd->p.n_head_kv != 0)
        return refuse(c, i, "n_head_kv", "expected a positive divisor of n_head %d, got %d",
                      nd->p.n_head, nd->p.n_head_kv);
    if ((int64_t)nd->p.n_head * nd->p.head_dim != nd->shape[0])
        return refuse(c, i, "shape[0]", "expected n_head * head_dim = %lld, got %lld",
                      (long long)nd->p.n_head * nd->p.head_dim, (long long)nd->shape[0]);
    if ((int64_t)nd->p.n_head_kv * nd->p.head_dim != kv->shape[0])
        return refuse(c, i, "src[1]", "expected a KV region of width n_head_kv * head_dim "
                      "= %lld, got node %zu (%s) of width %lld",
                      (long long)nd->p.n_head_kv * nd->p.head_dim, kv->id, kv->name,
                      (long long)kv->shape[0]);
    return TP_OK;
}

static tp_status check_binary(vctx *c, size_t i)
{
    TP_TRY(want_f32_src(c, i, 0));
    TP_TRY(want_f32_src(c, i, 1));
    TP_TRY(want_same_shape_src(c, i, 0));
    TP_TRY(want_same_shape_src(c, i, 1));
    return TP_OK;
}

static tp_status check_silu(vctx *c, size_t i)
{
    TP_TRY(want_f32_src(c, i, 0));
    TP_TRY(want_same_shape_src(c, i, 0));
    return TP_OK;
}

typedef tp_status (*op_check)(vctx *c, size_t i);
static const op_check op_checks[TP_OP_COUNT] = {
    [TP_OP_INPUT] = check_input,
    [TP_OP_GET_ROWS] = check_get_rows,
    [TP_OP_RMS_NORM] = check_rms_norm,
    [TP_OP_MUL_MAT] = check_mul_mat,
    [TP_OP_ROPE] = check_rope,
    [TP_OP_KV_STORE] = check_kv_store,
    [TP_OP_KV_LOAD] = check_kv_load,
    [TP_OP_ATTN] = check_attn,
    [TP_OP_ADD] = check_binary,
    [TP_OP_MUL] = check_binary,
    [TP_OP_SWIGLU] = check_binary,
    [TP_OP_SILU] = check_silu,
};

static tp_status validate_node(vctx *c, size_t i)
{
    const tp_graph *g = c->g;
    const tp_node *nd = &g->nodes[i];
    char a[96], b[96];

    for (int d = 0; d < 4; d++) {
        if (nd->shape[d] <= 0) {
            char where[16];
            snprintf(where, sizeof where, "shape[%d]", d);
            return refuse(c, i, where, "expected a positive extent, got %lld",
                          (long long)nd->shape[d]);
        }
    }
    /* Every node is held as f32 elements, so its byte count must fit too: a dead node is
     * never allocated, but its bytes still enter the naive total of the statistics. */
    const size_t max_elems = SIZE_MAX / sizeof(float);
    size_t elems = 1;
    for (int d = 0; d < 4; d++) {
        if ((uint64_t)nd->shape[d] > max_elems / elems)
            return refuse(c, i, "shape", "expected at most %zu elements (f32 bytes that fit "
                          "in size_t), got more", max_elems);
        elems *= (size_t)nd->shape[d];
    }
    if ((int)nd->dtype < 0 || nd->dtype > TP_DTYPE_Q8_0)
        return refuse(c, i, "dtype", "expected a dtype (f32, f16, i32, q8_0), got %d",
                      (int)nd->dtype);
    if (nd->backend < TP_BACKEND_UNSET || nd->backend >= TP_MAX_BACKENDS)
        return refuse(c, i, "backend", "expected a backend in [0, %d) or unset, got %d",
                      TP_MAX_BACKENDS, nd->backend);
    if (nd->p.layer < -1)
        return refuse(c, i, "layer", "expected a layer >= 0 (or none), got %d", nd->p.layer);

    const tp_op_info *info = tp_op_info_of(nd->op);
    if (!info)
        return refuse(c, i, "op", "expected an op, got %d", (int)nd->op);
    if (info->min_src == info->max_src && nd->n_src != info->min_src)
        return refuse(c, i, "src", "expected %d source%s for op %s, got %zu", info->min_src,
                      info->min_src == 1 ? "" : "s", tp_op_name(nd->op), nd->n_src);
    if (nd->n_src < info->min_src || nd->n_src > info->max_src)
        return refuse(c, i, "src", "expected %d or %d sources for op %s, got %zu",
                      info->min_src, info->max_src, tp_op_name(nd->op), nd->n_src);

    /* Every op but input computes in f32 (the i32 nodes are host-filled ids and positions);
     * kv_store and kv_load name regions stored in the cache type. */
    if (nd->op == TP_OP_INPUT) {
        if (nd->dtype != TP_DTYPE_I32 && nd->dtype != TP_DTYPE_F32)
            return refuse(c, i, "dtype", "expected i32 or f32 for an input, got %s",
                          tp_dtype_name(nd->dtype));
    } else if (info->kv_region) {
        /* the KV regions are stored in the cache type: f32, f16 or q8_0 */
        if (nd->dtype == TP_DTYPE_I32)
            return refuse(c, i, "dtype", "expected f32, f16 or q8_0 for op %s, got %s",
                          tp_op_name(nd->op), tp_dtype_name(nd->dtype));
        if (nd->dtype == TP_DTYPE_Q8_0 && (nd->p.head_dim <= 0 || nd->p.head_dim % 32 != 0))
            return refuse(c, i, "head_dim", "expected a multiple of 32 for a q8_0 KV region "
                          "(each head whole blocks of 32), got %d", nd->p.head_dim);
    } else if (nd->dtype != TP_DTYPE_F32) {
        return refuse(c, i, "dtype", "expected f32 for op %s, got %s", tp_op_name(nd->op),
                      tp_dtype_name(nd->dtype));
    }

    TP_TRY(op_checks[nd->op](c, i));

    if (info->kv_region) {
        if (!is_matrix(nd))
            return refuse(c, i, "shape", "expected [width, n_ctx, 1, 1] for %s, got %s",
                          tp_op_name(nd->op), shape_str(nd, a, sizeof a));
        if (g->n_ctx <= 0)
            return refuse(c, SIZE_MAX, "n_ctx", "expected a positive context length (node %zu "
                          "is a %s), got %lld", i, tp_op_name(nd->op), (long long)g->n_ctx);
        if (nd->shape[1] != g->n_ctx)
            return refuse(c, i, "shape[1]", "expected the context length n_ctx = %lld, got %lld",
                          (long long)g->n_ctx, (long long)nd->shape[1]);
        if (nd->p.head_dim > 0 && nd->shape[0] % nd->p.head_dim != 0)
            return refuse(c, i, "shape[0]", "expected a multiple of head_dim %d, got %lld",
                          nd->p.head_dim, (long long)nd->shape[0]);
        /* One K and one V region per layer: every KV node of a layer must agree on its size.
         * The earlier ones already agree with the layer's first, so it is the one to match. */
        const tp_node *o = &g->nodes[c->kv_first[i]];
        if (!same_shape(o, nd))
            return refuse(c, i, "shape", "expected the shape %s of node %zu (%s), the same "
                          "layer's KV region, got %s", shape_str(o, a, sizeof a), o->id,
                          o->name, shape_str(nd, b, sizeof b));
        if (o->dtype != nd->dtype)
            return refuse(c, i, "dtype", "expected the dtype %s of node %zu (%s), the same "
                          "layer's KV region, got %s", tp_dtype_name(o->dtype), o->id, o->name,
                          tp_dtype_name(nd->dtype));
    }
    return TP_OK;
}

typedef struct kv_key {
    int layer;
    size_t id;
} kv_key;

static int cmp_kv_key(const void *pa, const void *pb)
{
    const kv_key *a = pa, *b = pb;
    if (a->layer != b->layer)
        return a->layer < b->layer ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* kv_first[i] for every KV node i, by sorting the KV nodes on (layer, id): comparing each
 * node with all earlier ones made a file of many KV nodes take quadratic time. */
static tp_status find_kv_first(const tp_graph *g, size_t **out)
{
    *out = NULL;
    size_t m = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        m += tp_op_is_kv_region(g->nodes[i].op);
    if (m == 0)
        return TP_OK;
    size_t *first = malloc(g->n_nodes * sizeof *first);
    kv_key *kv = malloc(m * sizeof *kv);
    if (!first || !kv) {
        free(first);
        free(kv);
        return tp_fail(TP_ERR_NOMEM, "graph validation: out of memory");
    }
    m = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        first[i] = SIZE_MAX;
        if (tp_op_is_kv_region(g->nodes[i].op)) {
            kv[m].layer = g->nodes[i].p.layer;
            kv[m++].id = i;
        }
    }
    qsort(kv, m, sizeof *kv, cmp_kv_key);
    for (size_t k = 0; k < m; k++) {
        int same = k > 0 && kv[k].layer == kv[k - 1].layer;
        first[kv[k].id] = same ? first[kv[k - 1].id] : kv[k].id;
    }
    free(kv);
    *out = first;
    return TP_OK;
}

typedef struct name_key {
    const char *name;
    size_t k; /* position in inputs[] */
} name_key;

static int cmp_name_key(const void *pa, const void *pb)
{
    const name_key *a = pa, *b = pb;
    int d = strcmp(a->name, b->name);
    if (d)
        return d;
    return a->k < b->k ? -1 : a->k > b->k;
}

/* The first position in inputs[] whose name an earlier entry already has (the same node
 * twice has the same name), or SIZE_MAX. Sorted by name: a pairwise search made a file of
 * many inputs quadratic. */
static tp_status find_repeated_input(const tp_graph *g, size_t *repeat)
{
    *repeat = SIZE_MAX;
    if (g->n_inputs < 2)
        return TP_OK;
    name_key *keys = malloc(g->n_inputs * sizeof *keys);
    if (!keys)
        return tp_fail(TP_ERR_NOMEM, "graph validation: out of memory");
    for (size_t k = 0; k < g->n_inputs; k++) {
        keys[k].name = g->nodes[g->inputs[k]].name;
        keys[k].k = k;
    }
    qsort(keys, g->n_inputs, sizeof *keys, cmp_name_key);
    for (size_t i = 1; i < g->n_inputs; i++)
        if (strcmp(keys[i - 1].name, keys[i].name) == 0 && keys[i].k < *repeat)
            *repeat = keys[i].k;
    free(keys);
    return TP_OK;
}

tp_status tp_graph_validate_detail(const tp_graph *graph, size_t *bad_node, char *where,
                                   size_t where_size)
{
    vctx c = {graph, SIZE_MAX, where, where_size, NULL, NULL};
    if (bad_node)
        *bad_node = SIZE_MAX;
    if (where && where_size)
        where[0] = '\0';
    TP_TRY(tp_graph_check(graph));
    for (size_t k = 0; k < graph->n_inputs; k++) {
        size_t id = graph->inputs[k];
        char w[32];
        snprintf(w, sizeof w, "inputs[%zu]", k);
        if (graph->nodes[id].op != TP_OP_INPUT) {
            tp_status st = refuse(&c, SIZE_MAX, w, "expected the id of an input node, got %zu "
                                  "(%s, op %s)", id, graph->nodes[id].name,
                                  tp_op_name(graph->nodes[id].op));
            return st;
        }
    }
    /* Inputs are filled by name, so a name must designate one input. */
    size_t repeat;
    TP_TRY(find_repeated_input(graph, &repeat));
    if (repeat != SIZE_MAX) {
        size_t id = graph->inputs[repeat];
        char w[32];
        snprintf(w, sizeof w, "inputs[%zu]", repeat);
        return refuse(&c, SIZE_MAX, w, "expected a distinct input, got node %zu (%s) again", id,
                      graph->nodes[id].name);
    }
    c.listed = calloc(graph->n_nodes ? graph->n_nodes : 1, 1);
    if (!c.listed)
        return tp_fail(TP_ERR_NOMEM, "graph validation: out of memory");
    for (size_t k = 0; k < graph->n_inputs; k++)
        c.listed[graph->inputs[k]] = 1;
    tp_status st = find_kv_first(graph, &c.kv_first);
    for (size_t i = 0; i < graph->n_nodes && st == TP_OK; i++)
        st = validate_node(&c, i);
    free(c.kv_first);
    free(c.listed);
    if (st != TP_OK && bad_node)
        *bad_node = c.node;
    return st;
}

tp_status tp_graph_validate(const tp_graph *graph)
{
    size_t node;
    char where[32];
    tp_status st = tp_graph_validate_detail(graph, &node, where, sizeof where);
    if (st == TP_OK || !graph)
        return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tp_last_error());
    if (node != SIZE_MAX)
        return tp_fail(st, "node %zu (%s): %s%s%s", node, graph->nodes[node].name, where,
                       where[0] ? ": " : "", msg);
    if (where[0])
        return tp_fail(st, "graph: %s: %s", where, msg);
    return tp_fail(st, "%s", msg);
}
