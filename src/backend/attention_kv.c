/* The KV cache kernels (include/tensorplan/kv_kernels.h). Attention reads a cache of f32, f16
 * or q8_0 rows where they lie, through the row kernels of backend/qdot.h in the instruction
 * set form chosen at run time; the store of an f32 cache is the f32 kernel of kernels.c. */
#include "tensorplan/kv_kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/parallel.h"
#include "backend/qdot.h"
#include "common/error.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

/* The ggml type id that stores a KV dtype; 0 (F32) for anything else. */
static uint32_t kv_type_id(tp_dtype type)
{
    return type == TP_DTYPE_F16 ? TP_TYPE_F16 : type == TP_DTYPE_Q8_0 ? TP_TYPE_Q8_0 : 0;
}

static tp_status check_type(const char *what, tp_dtype type, size_t n)
{
    if (type != TP_DTYPE_F16 && type != TP_DTYPE_Q8_0)
        return tp_fail(TP_ERR_INVALID, "%s: no KV cache of type %s", what, tp_dtype_name(type));
    if (tp_dtype_row_bytes(type, n) == 0)
        return tp_fail(TP_ERR_INVALID, "%s: a %s row of %zu elements is not whole blocks of 32",
                       what, tp_dtype_name(type), n);
    return TP_OK;
}

static tp_status check_positions(const char *what, const float *positions, size_t n_tok,
                                 size_t n_ctx)
{
    for (size_t t = 0; t < n_tok; t++) {
        uint32_t p = tp_kernel_bits_u32(positions, t);
        if ((size_t)p >= n_ctx)
            return tp_fail(TP_ERR_INVALID,
                           "%s: position %u of token %zu is outside the KV context (n_ctx %zu)",
                           what, (unsigned)p, t, n_ctx);
    }
    return TP_OK;
}

/* ---- kv_store ---------------------------------------------------------------------------- */

tp_status tp_kernel_kv_store_typed(tp_dtype type, const float *k, const float *v,
                                   const float *positions, size_t n_kv_embd, size_t n_tok,
                                   void *K, void *V, size_t n_ctx)
{
    if (type == TP_DTYPE_F32)
        return tp_kernel_kv_store(k, v, positions, n_kv_embd, n_tok, K, V, n_ctx);
    if (!k || !v || !K || !V || (!positions && n_tok))
        return tp_fail(TP_ERR_INVALID, "kv_store: NULL array");
    TP_TRY(check_type("kv_store", type, n_kv_embd));
    TP_TRY(check_positions("kv_store", positions, n_tok, n_ctx));
    /* q8_0 blocks cannot encode a non-finite value: refused before anything is written */
    for (size_t i = 0; type == TP_DTYPE_Q8_0 && i < n_tok * n_kv_embd; i++)
        if (!isfinite(k[i]) || !isfinite(v[i]))
            return tp_fail(TP_ERR_INVALID, "kv_store: token %zu has a non-finite %s value, "
                           "which a q8_0 KV cache cannot store", i / n_kv_embd,
                           isfinite(k[i]) ? "V" : "K");
    const size_t row = tp_dtype_row_bytes(type, n_kv_embd);
    const uint32_t id = kv_type_id(type);
    for (size_t t = 0; t < n_tok; t++) {
        size_t p = tp_kernel_bits_u32(positions, t);
        TP_TRY(tp_quantize_row(id, k + t * n_kv_embd, (unsigned char *)K + p * row, n_kv_embd));
        TP_TRY(tp_quantize_row(id, v + t * n_kv_embd, (unsigned char *)V + p * row, n_kv_embd));
    }
    return TP_OK;
}

/* ---- attn -------------------------------------------------------------------------------- */

typedef struct attn_kv_ctx {
    uint32_t id;                      /* the ggml type of the rows */
    tp_kvdot_fn dot;                  /* that type's row kernels */
    tp_kvaxpy_fn axpy;
    const float *q, *positions;
    const unsigned char *K, *V;
    size_t n_head, n_head_kv, head_dim, n_ctx;
    size_t row, seg;                  /* bytes of a row, of one head's slice of it */
    float scale;
    float *out;
    float *scratch;                   /* per worker: group x n_ctx scores, 2 x group */
    size_t per_worker;
} attn_kv_ctx;

/* Scores of the group of query heads that read KV head kvh, for cached rows 0..p: each K
 * slice is dotted in its own type with every query head of the group. */
static void group_scores(const attn_kv_ctx *c, const float *qt, size_t kvh, size_t p,
                         float *score, float *maxs)
{
    const size_t hd = c->head_dim, group = c->n_head / c->n_head_kv;
    for (size_t g = 0; g < group; g++)
        maxs[g] = -INFINITY;
    for (size_t j = 0; j <= p; j++) {
        const unsigned char *kj = c->K + j * c->row + kvh * c->seg;
        for (size_t g = 0; g < group; g++) {
            float s = c->dot(qt + (kvh * group + g) * hd, kj, hd) * c->scale;
            score[g * c->n_ctx + j] = s;
            if (s > maxs[g])
                maxs[g] = s;
        }
    }
}

static void attn_kv_range(void *arg, size_t begin, size_t end, int worker)
{
    const attn_kv_ctx *c = arg;
    const size_t hd = c->head_dim, group = c->n_head / c->n_head_kv, q_row = c->n_head * hd;
    float *score = c->scratch + (size_t)worker * c->per_worker;
    float *maxs = score + group * c->n_ctx, *sums = maxs + group;
    for (size_t job = begin; job < end; job++) {
        size_t t = job / c->n_head_kv, kvh = job % c->n_head_kv;
        size_t p = tp_kernel_bits_u32(c->positions, t);
        group_scores(c, c->q + t * q_row, kvh, p, score, maxs);
        for (size_t g = 0; g < group; g++) {
            float *sg = score + g * c->n_ctx, sum = 0.0f;
            for (size_t j = 0; j <= p; j++) {
                sg[j] = expf(sg[j] - maxs[g]);
                sum += sg[j];
            }
            sums[g] = sum;
            float *o = c->out + t * q_row + (kvh * group + g) * hd;
            for (size_t d = 0; d < hd; d++)
                o[d] = 0.0f;
        }
        for (size_t j = 0; j <= p; j++) {
            const unsigned char *vj = c->V + j * c->row + kvh * c->seg;
            for (size_t g = 0; g < group; g++)
                c->axpy(score[g * c->n_ctx + j] / sums[g], vj, hd,
                        c->out + t * q_row + (kvh * group + g) * hd);
        }
    }
}

tp_status tp_kernel_attn_typed(tp_dtype type, const float *q, const void *K, const void *V,
                               const float *positions, size_t n_head, size_t n_head_kv,
                               size_t head_dim, size_t n_tok, size_t n_ctx, float *out,
                               int n_threads)
{
    if (!q || !K || !V || !out || (!positions && n_tok))
        return tp_fail(TP_ERR_INVALID, "attn: NULL array");
    if (n_head == 0 || n_head_kv == 0 || head_dim == 0 || n_head % n_head_kv != 0)
        return tp_fail(TP_ERR_INVALID, "attn: %zu heads cannot be grouped over %zu KV heads",
                       n_head, n_head_kv);
    if (type != TP_DTYPE_F32)
        TP_TRY(check_type("attn", type, head_dim));
    TP_TRY(check_positions("attn", positions, n_tok, n_ctx));
    double work = 0;
    for (size_t i = 0; i < n_tok; i++)
        work += (double)(tp_kernel_bits_u32(positions, i) + 1);
    work *= 2.0 * (double)n_head * (double)head_dim;
    const size_t jobs = n_tok * n_head_kv, group = n_head / n_head_kv;
    int t = jobs < 2 ? 1 : tp_parallel_threads(n_threads, work);
    const tp_qdot_ops *ops = tp_qdot_ops_current();
    const uint32_t id = kv_type_id(type);
    attn_kv_ctx c = {id, ops->kd[id], ops->ka[id], q, positions, K, V, n_head, n_head_kv,
                     head_dim, n_ctx, tp_dtype_row_bytes(type, n_head_kv * head_dim),
                     tp_dtype_row_bytes(type, head_dim), 1.0f / sqrtf((float)head_dim), out,
                     NULL, group * n_ctx + 2 * group};
    c.scratch = malloc((size_t)t * c.per_worker * sizeof(float));
    if (!c.scratch)
        return tp_fail(TP_ERR_NOMEM, "attn: out of memory");
    tp_parallel_for(jobs, t, attn_kv_range, &c);
    free(c.scratch);
    return TP_OK;
}
