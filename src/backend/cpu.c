/* The cpu backend: a host pool that executes each node as soon as it is handed one. The
 * node dispatch here is shared with the queued backend, which runs it later. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_exec.h"
#include "common/error.h"
#include "tensorplan/kernels.h"
#include "tensorplan/kv_kernels.h"
#include "tensorplan/ops.h"
#include "tensorplan/quant.h"
#include "tensorplan/weights.h"

int tp_cpu_supports(tp_op op, tp_dtype dtype)
{
    if (op >= TP_OP_COUNT)
        return 0;
    /* i32 tensors are host-filled inputs carried in f32 buffers; everything computed is f32;
     * the KV regions are stored in the cache type */
    if (tp_op_is_kv_region(op))
        return dtype == TP_DTYPE_F32 || dtype == TP_DTYPE_F16 || dtype == TP_DTYPE_Q8_0;
    return dtype == TP_DTYPE_F32 || (dtype == TP_DTYPE_I32 && op == TP_OP_INPUT);
}

/* A host pointer to a window that must hold at least `need` elements. */
static tp_status window(tp_backend *b, const tp_node *nd, const tp_bufref *r, size_t need,
                        const char *what, float **p)
{
    if (r->backend != b->id)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': %s is on backend %s, not on %s", nd->id,
                       nd->name, what, tp_backend_name(r->backend), b->name);
    if (r->len < need)
        return tp_fail(TP_ERR_INVALID,
                       "node %zu '%s': %s window holds %zu elements, the tensor needs %zu",
                       nd->id, nd->name, what, r->len, need);
    size_t cap = b->buffer_len(b, r->id);
    if (r->offset > cap || need > cap - r->offset)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': %s window [%zu, +%zu) leaves buffer %zu "
                       "(%zu elements)", nd->id, nd->name, what, r->offset, need, r->id, cap);
    float *base = b->host_data(b, r->id);
    if (!base)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': %s buffer %zu has no host memory",
                       nd->id, nd->name, what, r->id);
    *p = base + r->offset;
    return TP_OK;
}

static tp_status src_window(tp_backend *b, const tp_exec_args *a, size_t i, float **p)
{
    const tp_node *nd = a->node;
    char what[32];
    snprintf(what, sizeof what, "source %zu", i);
    const tp_node *s = &a->graph->nodes[nd->src[i]];
    return window(b, nd, &a->src[i], tp_node_elements(s), what, p);
}

static tp_status weight(const tp_exec_args *a, const char *name, const tp_weight **w)
{
    const tp_node *nd = a->node;
    *w = a->weights ? tp_weights_find(a->weights, name) : NULL;
    if (!*w)
        return tp_fail(TP_ERR_NOT_FOUND, "node %zu '%s': no weight named '%s'", nd->id,
                       nd->name, name);
    return TP_OK;
}

/* The layer's K and V regions, n_ctx rows of `row` elements stored as type. */
static tp_status kv_regions(tp_backend *b, const tp_exec_args *a, tp_dtype type, size_t row,
                            float **K, float **V)
{
    const tp_node *nd = a->node;
    if (!a->has_kv)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': no KV regions were resolved for layer %d",
                       nd->id, nd->name, nd->p.layer);
    size_t need = tp_kv_region_elems(type, row, a->n_ctx);
    if (need == 0)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': a KV region of %zu rows of %zu %s "
                       "elements has no size", nd->id, nd->name, a->n_ctx, row,
                       tp_dtype_name(type));
    tp_bufref k = {b->id, a->kv_k, 0, need}, v = {b->id, a->kv_v, 0, need};
    tp_status st = window(b, nd, &k, need, "K region", K);
    if (st == TP_OK)
        st = window(b, nd, &v, need, "V region", V);
    return st;
}

/* The 1-D weight NAME (norm weight, bias, rope divisors) of n elements as f32: an owned
 * tensor is read in place, a view of another type is dequantized into *tmp (n floats, for
 * the caller to free once the kernel has run; freed here and NULL again on a refusal).
 * Never used for matrices. */
static tp_status vector_f32(const tp_exec_args *a, const char *name, size_t n, float **tmp,
                            const float **out)
{
    const tp_node *nd = a->node;
    const tp_weight *w = NULL;
    TP_TRY(weight(a, name, &w));
    if (w->rows * w->cols != n)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': weight '%s' has %zu elements, not %zu",
                       nd->id, nd->name, w->name, w->rows * w->cols, n);
    if (w->data) {
        *out = w->data;
        return TP_OK;
    }
    *tmp = malloc(n * sizeof(float));
    if (!*tmp)
        return tp_fail(TP_ERR_NOMEM, "node %zu '%s': out of memory for '%s'", nd->id, nd->name,
                       w->name);
    for (size_t r = 0; r < w->rows; r++) {
        tp_status st = tp_dequantize_row(w->type, (const char *)w->bytes + r * w->row_bytes,
                                         *tmp + r * w->cols, w->cols);
        if (st != TP_OK) {
            free(*tmp);
            *tmp = NULL;
            return st;
        }
    }
    *out = *tmp;
    return TP_OK;
}

static tp_status run_get_rows(tp_backend *b, const tp_exec_args *a, size_t d, size_t n_tok,
                              float *out)
{
    const tp_node *nd = a->node;
    float *s0 = NULL, *s1 = NULL;
    TP_TRY(src_window(b, a, 0, &s0));
    if (nd->n_src == 1) {
        const tp_weight *w = NULL;
        TP_TRY(weight(a, nd->p.weight, &w));
        if (w->cols != d)
            return tp_fail(TP_ERR_INVALID, "node %zu '%s': rows of '%s' have %zu columns, "
                           "the node %zu", nd->id, nd->name, w->name, w->cols, d);
        if (w->data)
            return tp_kernel_get_rows(w->data, w->rows, d, s0, n_tok, out);
        return tp_kernel_get_rows_typed(w->type, w->bytes, w->rows, d, s0, n_tok, out);
    }
    const tp_node *x = &a->graph->nodes[nd->src[0]];
    TP_TRY(src_window(b, a, 1, &s1));
    return tp_kernel_get_rows(s0, (size_t)x->shape[1], d, s1, n_tok, out);
}

static tp_status run_rms_norm(tp_backend *b, const tp_exec_args *a, size_t d, size_t n_tok,
                              float *out)
{
    const tp_node *nd = a->node;
    float *s0 = NULL, *tmp = NULL;
    const float *wv = NULL;
    TP_TRY(src_window(b, a, 0, &s0));
    if (nd->p.weight[0])
        TP_TRY(vector_f32(a, nd->p.weight, d, &tmp, &wv));
    tp_status st = tp_kernel_rms_norm(s0, wv, d, n_tok, nd->p.eps, out);
    free(tmp);
    return st;
}

/* y = W x (+ b) for one mul_mat node: the weight's shape must map the source's rows. */
static tp_status run_mul_mat(tp_backend *b, const tp_exec_args *a, size_t d, size_t n_tok,
                             float *out)
{
    const tp_node *nd = a->node;
    float *s0 = NULL, *tmp = NULL;
    const float *bv = NULL;
    const tp_weight *w = NULL;
    TP_TRY(src_window(b, a, 0, &s0));
    TP_TRY(weight(a, nd->p.weight, &w));
    const tp_node *x = &a->graph->nodes[nd->src[0]];
    if (w->rows != d || w->cols != (size_t)x->shape[0] || (size_t)x->shape[1] != n_tok)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': weight '%s' is %zu x %zu, the node "
                       "maps %lld to %zu", nd->id, nd->name, w->name, w->rows, w->cols,
                       (long long)x->shape[0], d);
    if (nd->p.bias[0])
        TP_TRY(vector_f32(a, nd->p.bias, d, &tmp, &bv));
    /* owned f32 keeps the f32 kernel; a view reads its rows in their own type */
    tp_status st = w->data ? tp_kernel_mul_mat(w->data, bv, s0, w->cols, w->rows, n_tok, out, 0)
                           : tp_kernel_mul_mat_typed(w->type, w->bytes, bv, s0, w->cols, w->rows,
                                                     n_tok, out, 0);
    free(tmp);
    return st;
}

static tp_status run_rope(tp_backend *b, const tp_exec_args *a, size_t d, size_t n_tok,
                          float *out)
{
    const tp_node *nd = a->node;
    float *s0 = NULL, *s1 = NULL, *tmp = NULL;
    TP_TRY(src_window(b, a, 0, &s0));
    TP_TRY(src_window(b, a, 1, &s1));
    if ((size_t)nd->p.n_head * (size_t)nd->p.head_dim != d)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': %d heads of %d do not make a row of "
                       "%zu", nd->id, nd->name, nd->p.n_head, nd->p.head_dim, d);
    tp_rope_params rp = {nd->p.rope_mode,       nd->p.rope_base,       nd->p.rope_freq_scale,
                         nd->p.rope_ext_factor, nd->p.rope_attn_factor, nd->p.rope_n_ctx_orig,
                         NULL};
    if (nd->p.weight[0])
        TP_TRY(vector_f32(a, nd->p.weight, (size_t)nd->p.head_dim / 2, &tmp, &rp.freqs));
    tp_status st = tp_kernel_rope_ext(s0, s1, (size_t)nd->p.n_head, (size_t)nd->p.head_dim,
                                      n_tok, &rp, out);
    free(tmp);
    return st;
}

static tp_status run_kv(tp_backend *b, const tp_exec_args *a, size_t d, size_t n_tok,
                        float *out)
{
    const tp_node *nd = a->node;
    float *K = NULL, *V = NULL, *s0 = NULL, *s1 = NULL, *s2 = NULL;
    TP_TRY(src_window(b, a, 0, &s0));
    if (nd->op == TP_OP_KV_STORE) {
        const tp_node *k = &a->graph->nodes[nd->src[0]];
        TP_TRY(src_window(b, a, 1, &s1));
        TP_TRY(src_window(b, a, 2, &s2));
        TP_TRY(kv_regions(b, a, nd->dtype, d, &K, &V));
        return tp_kernel_kv_store_typed(nd->dtype, s0, s1, s2, d, (size_t)k->shape[1], K, V,
                                        a->n_ctx);
    }
    TP_TRY(src_window(b, a, 2, &s2));
    size_t kv_row = (size_t)nd->p.n_head_kv * (size_t)nd->p.head_dim;
    const tp_dtype type = a->graph->nodes[nd->src[1]].dtype; /* the kv_load's */
    TP_TRY(kv_regions(b, a, type, kv_row, &K, &V));
    return tp_kernel_attn_typed(type, s0, K, V, s2, (size_t)nd->p.n_head,
                                (size_t)nd->p.n_head_kv, (size_t)nd->p.head_dim, n_tok, a->n_ctx,
                                out, 0);
}

static tp_status run_elementwise(tp_backend *b, const tp_exec_args *a, size_t n, float *out)
{
    const tp_node *nd = a->node;
    float *s0 = NULL, *s1 = NULL;
    TP_TRY(src_window(b, a, 0, &s0));
    if (nd->op == TP_OP_SILU) {
        if (tp_node_elements(&a->graph->nodes[nd->src[0]]) != n)
            return tp_fail(TP_ERR_INVALID, "node %zu '%s': source differs in size from the node",
                           nd->id, nd->name);
        return tp_kernel_silu(s0, n, out);
    }
    TP_TRY(src_window(b, a, 1, &s1));
    if (tp_node_elements(&a->graph->nodes[nd->src[0]]) != n ||
        tp_node_elements(&a->graph->nodes[nd->src[1]]) != n)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': sources differ in size from the node",
                       nd->id, nd->name);
    if (nd->op == TP_OP_ADD)
        return tp_kernel_add(s0, s1, n, out);
    if (nd->op == TP_OP_MUL)
        return tp_kernel_mul(s0, s1, n, out);
    return tp_kernel_swiglu(s0, s1, n, out);
}

tp_status tp_cpu_run_node(tp_backend *b, const tp_exec_args *a)
{
    if (!b || !a || !a->node || !a->graph)
        return tp_fail(TP_ERR_INVALID, "execute_node: NULL argument");
    const tp_node *nd = a->node;
    if (nd->n_src && !a->src)
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': no source windows", nd->id, nd->name);
    const size_t d = (size_t)nd->shape[0], n_tok = (size_t)nd->shape[1];
    const size_t n = tp_node_elements(nd);
    float *out = NULL;

    switch (nd->op) {
    case TP_OP_INPUT:
    case TP_OP_KV_LOAD: /* host-filled, or a view of the K region: nothing to compute */
        return TP_OK;
    case TP_OP_KV_STORE: /* writes the KV regions only */
        return run_kv(b, a, d, n_tok, NULL);
    case TP_OP_GET_ROWS:
    case TP_OP_RMS_NORM:
    case TP_OP_MUL_MAT:
    case TP_OP_ROPE:
    case TP_OP_ATTN:
    case TP_OP_ADD:
    case TP_OP_MUL:
    case TP_OP_SWIGLU:
    case TP_OP_SILU:
        break;
    default:
        return tp_fail(TP_ERR_INVALID, "node %zu '%s': op %s has no cpu kernel", nd->id,
                       nd->name, tp_op_name(nd->op));
    }
    TP_TRY(window(b, nd, &a->out, n, "output", &out));
    switch (nd->op) {
    case TP_OP_GET_ROWS:
        return run_get_rows(b, a, d, n_tok, out);
    case TP_OP_RMS_NORM:
        return run_rms_norm(b, a, d, n_tok, out);
    case TP_OP_MUL_MAT:
        return run_mul_mat(b, a, d, n_tok, out);
    case TP_OP_ROPE:
        return run_rope(b, a, d, n_tok, out);
    case TP_OP_ATTN:
        return run_kv(b, a, d, n_tok, out);
    default:
        return run_elementwise(b, a, n, out);
    }
}

static tp_status cpu_execute(tp_backend *b, const tp_exec_args *args)
{
    return tp_cpu_run_node(b, args);
}

static tp_status cpu_synchronize(tp_backend *b)
{
    (void)b; /* every node already ran when it was handed over */
    return TP_OK;
}

static int cpu_supports(const tp_backend *b, tp_op op, tp_dtype dtype)
{
    (void)b;
    return tp_cpu_supports(op, dtype);
}

tp_status tp_backend_create_cpu(tp_backend **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "tp_backend_create_cpu: NULL output");
    tp_backend *b = NULL;
    tp_status st = tp_backend_create_host(TP_BACKEND_CPU, "cpu", &b);
    if (st != TP_OK)
        return st;
    b->execute_node = cpu_execute;
    b->synchronize = cpu_synchronize;
    b->supports_op = cpu_supports;
    *out = b;
    return TP_OK;
}
