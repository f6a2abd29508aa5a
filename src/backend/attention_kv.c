/* The KV cache kernels for a cache stored in f16 or q8_0 (include/tensorplan/kv_kernels.h);
 * an f32 cache goes to the f32 kernels of kernels.c. */
#include "tensorplan/kv_kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dot_internal.h"
#include "backend/parallel.h"
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
    const float *q, *positions;
    const unsigned char *K, *V;
    size_t n_head, n_head_kv, head_dim, n_ctx;
    size_t row, seg;                  /* bytes of a row, of one head's slice of it */
    float scale;
    float *out;
    float *scratch;                   /* per worker: group x n_ctx scores, head_dim, 2 x group */
    size_t per_worker;
    /* several tokens: rows 0..max position of K and V read back to f32 once per call (rows
     * of kv_embd), else NULL and each job reads its rows back itself; the values, and so
     * the bits of the results, are the same either way */
    float *Kf, *Vf;
    size_t kv_embd;
} attn_kv_ctx;

/* Row j's slice of KV head kvh, as f32: from the rows read back for the call, or into buf. */
static const float *kv_slice(const attn_kv_ctx *c, const unsigned char *X, const float *Xf,
                             size_t j, size_t kvh, float *buf)
{
    if (Xf)
        return Xf + j * c->kv_embd + kvh * c->head_dim;
    (void)tp_dequantize_row(c->id, X + j * c->row + kvh * c->seg, buf, c->head_dim);
    return buf;
}

/* Rows [begin, end) of K and V read back to f32. */
static void read_back_rows(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const attn_kv_ctx *c = arg;
    for (size_t j = begin; j < end; j++) {
        (void)tp_dequantize_row(c->id, c->K + j * c->row, c->Kf + j * c->kv_embd, c->kv_embd);
        (void)tp_dequantize_row(c->id, c->V + j * c->row, c->Vf + j * c->kv_embd, c->kv_embd);
    }
}

/* Scores of the group of query heads that read KV head kvh, for cached rows 0..p: each K
 * slice is read back once (kv_slice) and dotted with every query head of the group. */
static void group_scores(const attn_kv_ctx *c, const float *qt, size_t kvh, size_t p,
                         float *score, float *buf, float *maxs)
{
    const size_t hd = c->head_dim, group = c->n_head / c->n_head_kv;
    for (size_t g = 0; g < group; g++)
        maxs[g] = -INFINITY;
    for (size_t j = 0; j <= p; j++) {
        const float *kj = kv_slice(c, c->K, c->Kf, j, kvh, buf);
        for (size_t g = 0; g < group; g++) {
            float s = dot1(qt + (kvh * group + g) * hd, kj, hd) * c->scale;
            score[g * c->n_ctx + j] = s;
            if (s > maxs[g])
                maxs[g] = s;
        }
    }
}

/* o = sum over rows j <= p of w[j] * V row j's slice of KV head kvh, from the rows read back
 * for the call, sixteen elements of o at a time held in registers while the rows stream by:
 * each element adds the same products in the same order as the row by row loop below. */
static void weighted_rows(const attn_kv_ctx *c, const float *w, size_t kvh, size_t p, float *o)
{
    const size_t hd = c->head_dim;
    for (size_t d0 = 0; d0 < hd; d0 += 16) {
        const float *v = c->Vf + kvh * hd + d0;
        float acc[16] = {0};
        if (hd - d0 >= 16)
            for (size_t j = 0; j <= p; j++)
                for (size_t d = 0; d < 16; d++)
                    acc[d] += w[j] * v[j * c->kv_embd + d];
        else
            for (size_t j = 0; j <= p; j++)
                for (size_t d = 0; d < hd - d0; d++)
                    acc[d] += w[j] * v[j * c->kv_embd + d];
        memcpy(o + d0, acc, (hd - d0 < 16 ? hd - d0 : 16) * sizeof *acc);
    }
}

static void attn_kv_range(void *arg, size_t begin, size_t end, int worker)
{
    const attn_kv_ctx *c = arg;
    const size_t hd = c->head_dim, group = c->n_head / c->n_head_kv, q_row = c->n_head * hd;
    float *score = c->scratch + (size_t)worker * c->per_worker;
    float *buf = score + group * c->n_ctx, *maxs = buf + hd, *sums = maxs + group;
    for (size_t job = begin; job < end; job++) {
        size_t t = job / c->n_head_kv, kvh = job % c->n_head_kv;
        size_t p = tp_kernel_bits_u32(c->positions, t);
        group_scores(c, c->q + t * q_row, kvh, p, score, buf, maxs);
        for (size_t g = 0; g < group; g++) {
            float *sg = score + g * c->n_ctx, sum = 0.0f;
            for (size_t j = 0; j <= p; j++) {
                sg[j] = expf(sg[j] - maxs[g]);
                sum += sg[j];
            }
            sums[g] = sum;
            float *o = c->out + t * q_row + (kvh * group + g) * hd;
            if (c->Vf) { /* the weights p_j of the loop below, then their rows */
                for (size_t j = 0; j <= p; j++)
                    sg[j] = sg[j] / sum;
                weighted_rows(c, sg, kvh, p, o);
                continue;
            }
            for (size_t d = 0; d < hd; d++)
                o[d] = 0.0f;
        }
        for (size_t j = 0; !c->Vf && j <= p; j++) {
            const float *vj = kv_slice(c, c->V, c->Vf, j, kvh, buf);
            for (size_t g = 0; g < group; g++) {
                float pj = score[g * c->n_ctx + j] / sums[g];
                float *o = c->out + t * q_row + (kvh * group + g) * hd;
                for (size_t d = 0; d < hd; d++)
                    o[d] += pj * vj[d];
            }
        }
    }
}

tp_status tp_kernel_attn_typed(tp_dtype type, const float *q, const void *K, const void *V,
                               const float *positions, size_t n_head, size_t n_head_kv,
                               size_t head_dim, size_t n_tok, size_t n_ctx, float *out,
                               int n_threads)
{
    if (type == TP_DTYPE_F32)
        return tp_kernel_attn(q, K, V, positions, n_head, n_head_kv, head_dim, n_tok, n_ctx,
                              out, n_threads);
    if (!q || !K || !V || !out || (!positions && n_tok))
        return tp_fail(TP_ERR_INVALID, "attn: NULL array");
    if (n_head == 0 || n_head_kv == 0 || head_dim == 0 || n_head % n_head_kv != 0)
        return tp_fail(TP_ERR_INVALID, "attn: %zu heads cannot be grouped over %zu KV heads",
                       n_head, n_head_kv);
    TP_TRY(check_type("attn", type, head_dim));
    TP_TRY(check_positions("attn", positions, n_tok, n_ctx));
    double work = 0;
    size_t rows = 0; /* the rows any token reads: up to the largest position */
    for (size_t i = 0; i < n_tok; i++) {
        size_t p = tp_kernel_bits_u32(positions, i);
        work += (double)(p + 1);
        rows = p + 1 > rows ? p + 1 : rows;
    }
    work *= 2.0 * (double)n_head * (double)head_dim;
    const size_t jobs = n_tok * n_head_kv, group = n_head / n_head_kv;
    int t = jobs < 2 ? 1 : tp_parallel_threads(n_threads, work);
    attn_kv_ctx c = {kv_type_id(type), q, positions, K, V, n_head, n_head_kv, head_dim, n_ctx,
                     tp_dtype_row_bytes(type, n_head_kv * head_dim),
                     tp_dtype_row_bytes(type, head_dim), 1.0f / sqrtf((float)head_dim), out,
                     NULL, group * n_ctx + head_dim + 2 * group, NULL, NULL, n_head_kv * head_dim};
    c.scratch = malloc((size_t)t * c.per_worker * sizeof(float));
    if (!c.scratch)
        return tp_fail(TP_ERR_NOMEM, "attn: out of memory");
    /* prefill: each row is read back once, not once per token that reads it (without the
     * memory for it, each job reads its rows back: the same values) */
    if (n_tok > 1 && rows <= SIZE_MAX / sizeof(float) / 2 / c.kv_embd) {
        c.Kf = malloc(2 * rows * c.kv_embd * sizeof(float));
        c.Vf = c.Kf ? c.Kf + rows * c.kv_embd : NULL;
    }
    if (c.Kf)
        tp_parallel_for(rows, t, read_back_rows, &c);
    tp_parallel_for(jobs, t, attn_kv_range, &c);
    free(c.scratch);
    free(c.Kf);
    return TP_OK;
}
