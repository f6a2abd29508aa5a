/* Typed mat-mul and row gather: weights stay in their own type and are dequantized one row at
 * a time into a per-thread scratch (docs/quant.md section 5). The dot products follow the
 * summation order of tp_kernel_mul_mat (src/backend/kernels.c): eight lanes over blocks of
 * eight, lanes combined ((0+1)+(2+3))+((4+5)+(6+7)), then the tail in index order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dot_internal.h"
#include "backend/parallel.h"
#include "backend/quant_internal.h"
#include "common/error.h"
#include "tensorplan/kernels.h"

/* ---- a parallel for over output rows ---------------------------------------------------- */

typedef struct mm_ctx {
    tp_dequant_fn deq;
    const uint8_t *W;
    size_t row_bytes, n_blocks;
    int direct; /* rows are aligned f32: read them in place */
    const float *b, *x;
    size_t n_in, n_out, n_tok;
    float *y;
    float *scratch; /* n_in floats per worker */
} mm_ctx;

static void mm_range(void *ctx, size_t r0, size_t r1, int worker)
{
    const mm_ctx *c = ctx;
    /* no scratch when the rows are read in place: NULL plus an offset is undefined */
    float *scratch = c->scratch ? c->scratch + (size_t)worker * c->n_in : NULL;
    for (size_t t0 = 0; t0 < c->n_tok; t0 += TP_DOT_TOKEN_BLOCK) {
        size_t t1 = t0 + TP_DOT_TOKEN_BLOCK < c->n_tok ? t0 + TP_DOT_TOKEN_BLOCK : c->n_tok;
        for (size_t r = r0; r < r1; r++) {
            const uint8_t *src = c->W + r * c->row_bytes;
            const float *w = scratch;
            if (c->direct)
                w = (const float *)(const void *)src;
            else
                c->deq(src, scratch, c->n_blocks);
            dot_tokens(w, c->x, c->b, r, t0, t1, c->n_in, c->n_out, c->y);
        }
    }
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
    mm_ctx c = {tp_quant_dequant_fn(type), W, row_bytes, n_in / tp_type_block_elems(type), 0,
                b, x, n_in, n_out, n_tok, y, NULL};
    c.direct = type == TP_TYPE_F32 && (uintptr_t)W % _Alignof(float) == 0;
    /* no more scratch rows than output rows: tp_parallel_for uses no more workers */
    size_t t = (size_t)tp_parallel_threads(n_threads, (double)n_in * (double)n_out *
                                                          (double)(n_tok ? n_tok : 1));
    if (t > n_out)
        t = n_out;
    if (n_tok == 0)
        return TP_OK;
    if (!c.direct) {
        if (t > SIZE_MAX / sizeof(float) / n_in)
            return tp_fail(TP_ERR_OVERFLOW, "mul_mat_typed: scratch of %zu rows overflows", t);
        c.scratch = malloc(t * n_in * sizeof(float));
        if (!c.scratch)
            return tp_fail(TP_ERR_NOMEM, "mul_mat_typed: no memory for %zu scratch rows of %zu",
                           t, n_in);
    }
    tp_parallel_for(c.n_out, (int)t, mm_range, &c);
    free(c.scratch);
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
