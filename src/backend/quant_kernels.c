/* Typed mat-mul and row gather: weights stay in their own type and are read where they lie
 * (docs/quant.md section 5). Each weight row meets up to four token rows at a time through the
 * row dot products of backend/qdot.h: block types against the tokens rounded to 16-bit groups,
 * F32 / F16 / BF16 against the f32 tokens. Block types with TP_QGEMM_MIN_TOKENS or more tokens
 * go to the prefill products of backend/qgemm.h where the form has one, F32 / F16 / BF16 with
 * TP_FGEMM_MIN_TOKENS or more to the packed product of backend/fgemm.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fgemm.h"
#include "backend/parallel.h"
#include "backend/qdot.h"
#include "backend/qgemm.h"
#include "backend/quant_internal.h"
#include "common/error.h"
#include "tensorplan/kernels.h"

/* Token rows are taken in blocks of this many, so their slab stays in cache while every
 * weight row of a thread's range streams past it (float rows: a slice of MM_K_BLOCK
 * elements of the slab at a time). */
#define MM_TOKEN_BLOCK 64
#define MM_K_BLOCK 1024
/* Block types: their rounded tokens are read by compute-bound integer sums, which gain
 * nothing from longer blocks (bench_qmatmul: 16 tokens as fast as 64 or faster). */
#define MM_QTOKEN_BLOCK 16

/* ---- a parallel for over output rows ---------------------------------------------------- */

typedef struct mm_ctx {
    const tp_qdot_ops *ops;
    uint32_t type;
    int blocks; /* a block type: the tokens are rounded (xq, xd, xs) */
    const uint8_t *W;
    size_t row_bytes, n_blocks;
    const float *b, *x;
    size_t n_in, n_out, n_tok;
    float *y;
    const int16_t *xq;
    const float *xd, *xs;
    const int32_t *xqsum, *xqsum16;
    const float *xs32;
    const int8_t *xqhi;
    const uint8_t *xqlo;
} mm_ctx;

/* The rounded activations of token t. */
static tp_xq mm_xq(const mm_ctx *c, size_t t)
{
    const size_t g = t * (c->n_in / TP_QDOT_GROUP), e = t * c->n_in;
    tp_xq x = {c->xq + e, c->xd + g, c->xs + 2 * g, c->xqsum + g, c->xs32 + g,
               c->xqsum16 + 2 * g, c->xqhi + e, c->xqlo + e};
    return x;
}

/* y[t..t+n_x)[r] of one row of a block type. */
static void mm_block_row(const mm_ctx *c, size_t r, size_t t, int n_x)
{
    float out[TP_QDOT_TOKENS];
    tp_xq xs[TP_QDOT_TOKENS];
    for (int k = 0; k < n_x; k++)
        xs[k] = mm_xq(c, t + (size_t)k);
    c->ops->q[c->type](c->W + r * c->row_bytes, c->n_blocks, xs, n_x, out);
    for (int k = 0; k < n_x; k++)
        c->y[(t + (size_t)k) * c->n_out + r] = c->b ? out[k] + c->b[r] : out[k];
}

/* y[t..t+n_x)[r..r+n_r) of F32 / F16 / BF16 rows over the elements [k0, k0 + kn): the first
 * slice writes y, the next ones add to it, the last one adds the bias. */
static void mm_float_rows(const mm_ctx *c, size_t r, int n_r, size_t t, int n_x, size_t k0,
                          size_t kn)
{
    float out[TP_QDOT_ROWS * TP_QDOT_TOKENS];
    const float *xs[TP_QDOT_TOKENS];
    for (int k = 0; k < n_x; k++)
        xs[k] = c->x + (t + (size_t)k) * c->n_in + k0;
    size_t eb = c->type == TP_TYPE_F32 ? 4 : 2;
    int got = c->ops->f[c->type](c->W + r * c->row_bytes + k0 * eb, c->row_bytes, n_r, kn, xs,
                                 n_x, out);
    int last = k0 + kn == c->n_in;
    for (int i = 0; i < got; i++)
        for (int k = 0; k < n_x; k++) {
            size_t ri = r + (size_t)i;
            float *yp = &c->y[(t + (size_t)k) * c->n_out + ri];
            float v = k0 ? *yp + out[i * TP_QDOT_TOKENS + k] : out[i * TP_QDOT_TOKENS + k];
            *yp = last && c->b ? v + c->b[ri] : v;
        }
}

/* Float rows: for each block of tokens and each slice of MM_K_BLOCK elements, tiles of four
 * rows (a form with fewer registers splits them further) by four tokens. A thread's weight
 * rows stream once per token block and slice while the block's slice of the tokens (64 x
 * 1,024 f32, 256 KiB) stays in the second-level cache. Up to four tokens (decode) fit in
 * cache whole: each row tile then takes its slices one after the other, so the rows stream
 * in address order. Each output sums its slices in the same order either way, and the
 * slices depend on n_in only, so the sums never depend on the thread split or on the number
 * of tokens. */
static void mm_float_range(const mm_ctx *c, size_t r0, size_t r1, size_t t0, size_t t1)
{
    int few = t1 - t0 <= TP_QDOT_TOKENS;
    /* F32 rows (which the row dot products take one at a time) for few tokens: a tile of one
     * row, so a row longer than a slice takes its slices one after the other and the weights
     * stream in address order */
    size_t tile = few && c->type == TP_TYPE_F32 && c->n_in > MM_K_BLOCK ? 1 : TP_QDOT_ROWS;
    size_t k_step = few ? c->n_in : MM_K_BLOCK, r_step = few ? tile : r1 - r0;
    for (size_t ro = r0; ro < r1; ro += r_step) {
        size_t re = r1 - ro < r_step ? r1 : ro + r_step;
        for (size_t ko = 0; ko < c->n_in; ko += k_step)
            for (size_t r = ro; r < re; r += tile) {
                int n_r = re - r < tile ? (int)(re - r) : (int)tile;
                for (size_t k0 = ko; k0 < ko + k_step && k0 < c->n_in; k0 += MM_K_BLOCK) {
                    size_t kn = c->n_in - k0 < MM_K_BLOCK ? c->n_in - k0 : MM_K_BLOCK;
                    for (size_t t = t0; t < t1; t += TP_QDOT_TOKENS)
                        mm_float_rows(c, r, n_r, t,
                                      t1 - t < TP_QDOT_TOKENS ? (int)(t1 - t) : TP_QDOT_TOKENS,
                                      k0, kn);
                }
            }
    }
}

static void mm_range(void *ctx, size_t r0, size_t r1, int worker)
{
    (void)worker;
    const mm_ctx *c = ctx;
    size_t tb = c->blocks ? MM_QTOKEN_BLOCK : MM_TOKEN_BLOCK;
    for (size_t t0 = 0; t0 < c->n_tok; t0 += tb) {
        size_t t1 = t0 + tb < c->n_tok ? t0 + tb : c->n_tok;
        if (!c->blocks && t1 - t0 == 1 && c->ops->fv[c->type]) { /* decode: one call */
            float *y = c->y + t0 * c->n_out;
            c->ops->fv[c->type](c->W + r0 * c->row_bytes, c->row_bytes, r1 - r0, c->n_in,
                                MM_K_BLOCK, c->x + t0 * c->n_in, y + r0);
            for (size_t r = r0; c->b && r < r1; r++)
                y[r] += c->b[r];
            continue;
        }
        if (!c->blocks) {
            mm_float_range(c, r0, r1, t0, t1);
            continue;
        }
        if (t1 - t0 == 1 && c->ops->v[c->type]) { /* decode: one call for the whole range */
            tp_xq xs = mm_xq(c, t0);
            float *y = c->y + t0 * c->n_out;
            c->ops->v[c->type](c->W + r0 * c->row_bytes, c->row_bytes, r1 - r0, c->n_blocks, &xs,
                               y + r0);
            for (size_t r = r0; c->b && r < r1; r++)
                y[r] += c->b[r];
            continue;
        }
        for (size_t r = r0; r < r1; r++)
            for (size_t t = t0; t < t1; t += TP_QDOT_TOKENS)
                mm_block_row(c, r, t, t1 - t < TP_QDOT_TOKENS ? (int)(t1 - t) : TP_QDOT_TOKENS);
    }
}

/* ---- prefill: panels of rows against tiles of tokens (backend/qgemm.h) ------------------- */

typedef struct gemm_ctx {
    tp_qgemm_fn fn;
    const uint8_t *W;
    size_t row_bytes, n_out;
    const tp_qgemm_x *x;
    const float *b;
    float *y;
    unsigned char *scratch; /* one slice of scratch_bytes per worker */
    size_t scratch_bytes;
} gemm_ctx;

/* Panels [p0, p1) of TP_QGEMM_ROWS rows. */
static void gemm_range(void *ctx, size_t p0, size_t p1, int worker)
{
    const gemm_ctx *c = ctx;
    size_t r1 = p1 * TP_QGEMM_ROWS < c->n_out ? p1 * TP_QGEMM_ROWS : c->n_out;
    c->fn(c->W, c->row_bytes, p0 * TP_QGEMM_ROWS, r1, c->x, c->b, c->y, c->n_out,
          c->scratch + (size_t)worker * c->scratch_bytes);
}

/* The product of n_tok >= TP_QGEMM_MIN_TOKENS tokens by fn, the tokens rounded by tile. */
static tp_status run_qgemm(tp_qgemm_fn fn, tp_qgemm_tile_fn tile, const mm_ctx *m,
                           int n_threads)
{
    size_t xb = tp_qgemm_x_bytes(m->n_in, m->n_tok), sb = tp_qgemm_scratch_bytes(m->n_in);
    double work = (double)m->n_in * (double)m->n_out * (double)m->n_tok;
    int t = tp_parallel_threads(n_threads, work);
    void *tiles = malloc(xb), *scratch = NULL;
    if (!tiles || posix_memalign(&scratch, 64, sb * (size_t)t) != 0) {
        free(tiles);
        return tp_fail(TP_ERR_NOMEM, "mul_mat_typed: no memory for %zu tiled activations",
                       m->n_tok * m->n_in);
    }
    tp_qgemm_x x;
    tile(m->x, m->n_in, m->n_tok, tiles, &x);
    gemm_ctx c = {fn, m->W, m->row_bytes, m->n_out, &x, m->b, m->y, scratch, sb};
    size_t panels = (m->n_out + TP_QGEMM_ROWS - 1) / TP_QGEMM_ROWS;
    tp_parallel_for(panels, t, gemm_range, &c);
    free(tiles);
    free(scratch);
    return TP_OK;
}

/* Checks the arguments of a typed weight of n_rows rows of n_in; writes the row size. */
static tp_status check_weight(const char *op, uint32_t type, size_t n_in, size_t n_rows,
                              size_t *row_bytes)
{
    const char *name = tp_type_name(type);
    if (!tp_type_can_execute(type))
        return tp_fail(TP_ERR_INVALID, "%s: weights of type %u (%s) cannot be executed", op,
                       (unsigned)type, name ? name : "unknown");
    size_t be = tp_type_block_elems(type);
    if (n_in % be != 0)
        return tp_fail(TP_ERR_INVALID, "%s: row length %zu is not a multiple of the %s block (%zu)",
                       op, n_in, name, be);
    TP_TRY(tp_type_row_bytes(type, n_in, row_bytes));
    if (n_rows && *row_bytes > SIZE_MAX / n_rows)
        return tp_fail(TP_ERR_OVERFLOW, "%s: %zu rows of %zu bytes overflow size_t", op, n_rows,
                       *row_bytes);
    return TP_OK;
}

tp_status tp_kernel_mul_mat_typed(uint32_t type, const void *W, const float *b, const float *x,
                                  size_t n_in, size_t n_out, size_t n_tok, float *y,
                                  int n_threads)
{
    if (!W || !x || !y)
        return tp_fail(TP_ERR_INVALID, "mul_mat_typed: NULL array");
    if (n_in == 0 || n_out == 0)
        return tp_fail(TP_ERR_INVALID, "mul_mat_typed: empty matrix (%zu x %zu)", n_out, n_in);
    size_t row_bytes;
    TP_TRY(check_weight("mul_mat_typed", type, n_in, n_out, &row_bytes));
    if (n_tok > SIZE_MAX / n_in || n_tok > SIZE_MAX / n_out)
        return tp_fail(TP_ERR_OVERFLOW, "mul_mat_typed: %zu tokens overflow size_t", n_tok);
    if (n_tok == 0)
        return TP_OK;
    const tp_qdot_ops *ops = tp_qdot_ops_current();
    int blocks = ops->q[type] != NULL;
    if (!blocks && n_tok >= TP_FGEMM_MIN_TOKENS) /* prefill: the packed product */
        return tp_fgemm(type, W, row_bytes, b, x, n_in, n_out, n_tok, y, n_threads);
    mm_ctx c = {ops, type, blocks, W, row_bytes, n_in / tp_type_block_elems(type), b, x,
                n_in, n_out, n_tok, y, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    tp_qgemm_fn gemm = blocks && n_tok >= TP_QGEMM_MIN_TOKENS
                           ? tp_qgemm_for(tp_kernels_isa(), type) : NULL;
    if (gemm)
        return run_qgemm(gemm, tp_qgemm_tiler(tp_kernels_isa()), &c, n_threads);
    void *act = NULL;
    if (blocks) {
        size_t n = n_tok * n_in; /* no overflow: n_tok * n_in was checked above */
        if (n > SIZE_MAX / 4)
            return tp_fail(TP_ERR_OVERFLOW, "mul_mat_typed: %zu activations overflow", n);
        /* per group d, s32, qsum; per 16 s, qsum16 (4 bytes each); q; qhi, qlo */
        act = malloc(n * (sizeof(int16_t) + 2) +
                     (3 * (n / TP_QDOT_GROUP) + 2 * (n / 16)) * sizeof(float));
        if (!act)
            return tp_fail(TP_ERR_NOMEM, "mul_mat_typed: no memory for %zu rounded activations",
                           n);
        float *xd = (float *)act, *xs32 = xd + n / TP_QDOT_GROUP;
        int32_t *xqsum = (int32_t *)(void *)(xs32 + n / TP_QDOT_GROUP);
        float *xs = (float *)(void *)(xqsum + n / TP_QDOT_GROUP);
        int32_t *xqsum16 = (int32_t *)(void *)(xs + n / 16);
        int16_t *xq = (int16_t *)(void *)(xqsum16 + n / 16);
        int8_t *xqhi = (int8_t *)(void *)(xq + n);
        uint8_t *xqlo = (uint8_t *)(void *)(xqhi + n);
        tp_qdot_quantize(x, n_in, n_tok, xq, xd, xs);
        tp_qdot_group_sums(ops->needs[type], xq, xs, n_in, n_tok, xqsum, xs32, xqsum16, xqhi,
                           xqlo);
        c.xq = xq;
        c.xd = xd;
        c.xs = xs;
        c.xqsum = xqsum;
        c.xs32 = xs32;
        c.xqsum16 = xqsum16;
        c.xqhi = xqhi;
        c.xqlo = xqlo;
    }
    double work = (double)n_in * (double)n_out * (double)n_tok;
    tp_parallel_for(n_out, tp_parallel_threads(n_threads, work), mm_range, &c);
    free(act);
    return TP_OK;
}

tp_status tp_kernel_get_rows_typed(uint32_t type, const void *table, size_t n_rows, size_t d,
                                   const float *ids, size_t n_ids, float *out)
{
    if ((!table && n_rows && d) || (!ids && n_ids) || (!out && n_ids && d))
        return tp_fail(TP_ERR_INVALID, "get_rows_typed: NULL array");
    size_t row_bytes;
    TP_TRY(check_weight("get_rows_typed", type, d, n_rows, &row_bytes));
    if (n_ids && d > SIZE_MAX / n_ids)
        return tp_fail(TP_ERR_OVERFLOW, "get_rows_typed: %zu rows of %zu overflow size_t", n_ids,
                       d);
    for (size_t t = 0; t < n_ids; t++) {
        uint32_t id = tp_kernel_bits_u32(ids, t);
        if ((size_t)id >= n_rows)
            return tp_fail(TP_ERR_INVALID,
                           "get_rows_typed: id %u at row %zu is out of range (%zu rows)",
                           (unsigned)id, t, n_rows);
    }
    if (d == 0)
        return TP_OK;
    tp_dequant_fn deq = tp_quant_dequant_fn(type);
    size_t n_blocks = d / tp_type_block_elems(type);
    for (size_t t = 0; t < n_ids; t++) {
        const uint8_t *src = (const uint8_t *)table + (size_t)tp_kernel_bits_u32(ids, t) * row_bytes;
        if (type == TP_TYPE_F32) /* memmove: a gather into its own table stays defined */
            memmove(out + t * d, src, row_bytes);
        else
            deq(src, out + t * d, n_blocks);
    }
    return TP_OK;
}
