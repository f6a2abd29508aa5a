/* tensorplan: tensor element types (ggml's type ids), their block layouts, conversions,
 * dequantization and quantization of rows, and mat-mul / row-gather kernels that read
 * weights in their own type. The facts are restated in docs/quant.md.
 *
 * Example (plain arrays: nothing to create or destroy):
 *
 *     float row[32], back[32];
 *     unsigned char block[34];                       // one Q8_0 block: 32 elements in 34 bytes
 *     size_t bytes;
 *     for (int i = 0; i < 32; i++)
 *         row[i] = (float)i / 8;
 *     if (tp_type_row_bytes(TP_TYPE_Q8_0, 32, &bytes) != TP_OK || bytes > sizeof block)
 *         return 1;
 *     tp_status st = tp_quantize_row(TP_TYPE_Q8_0, row, block, 32);
 *     if (st == TP_OK)
 *         st = tp_dequantize_row(TP_TYPE_Q8_0, block, back, 32);   // back is close to row
 *     return st == TP_OK ? 0 : 1;
 *
 * A row of a type is n elements stored as n / block_elems consecutive blocks of block_bytes
 * bytes; n must be a multiple of block_elems. Blocks need no alignment (they are read with
 * memcpy), all multi-byte fields are little-endian.
 *
 * Determinism: the typed kernels give the same bits whatever the thread count. F32, F16 and
 * BF16 weights give tp_kernel_mul_mat's bits on the same values; block types round the
 * activations to 16 bits per group of 32 (docs/quant.md section 5). */
#ifndef TENSORPLAN_QUANT_H
#define TENSORPLAN_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ggml's type ids (the values stored in GGUF tensor infos). Ids 4, 5, 31-33 and 36-38 are
 * retired; 16-23, 29, 34 and 35 are named but not supported here (no block size). */
typedef enum tp_type {
    TP_TYPE_F32 = 0,
    TP_TYPE_F16 = 1,
    TP_TYPE_Q4_0 = 2,
    TP_TYPE_Q4_1 = 3,
    TP_TYPE_Q5_0 = 6,
    TP_TYPE_Q5_1 = 7,
    TP_TYPE_Q8_0 = 8,
    TP_TYPE_Q8_1 = 9,
    TP_TYPE_Q2_K = 10,
    TP_TYPE_Q3_K = 11,
    TP_TYPE_Q4_K = 12,
    TP_TYPE_Q5_K = 13,
    TP_TYPE_Q6_K = 14,
    TP_TYPE_Q8_K = 15,
    TP_TYPE_I8 = 24,
    TP_TYPE_I16 = 25,
    TP_TYPE_I32 = 26,
    TP_TYPE_I64 = 27,
    TP_TYPE_F64 = 28,
    TP_TYPE_BF16 = 30,
    TP_TYPE_ID_LIMIT = 40 /* every id below this has a table entry (possibly unknown) */
} tp_type;

/* One row of the type table. */
typedef struct tp_type_info {
    const char *name;     /* "F32", "Q8_0", "Q4_K", ...; retired ids keep their old name */
    uint32_t block_elems; /* 0 when retired or unsupported */
    uint32_t block_bytes; /* 0 when retired or unsupported */
    int retired;          /* 1 for 4, 5, 31-33, 36-38: a file holding one is refused */
    int dequantize;       /* tp_dequantize_row accepts the type */
    int quantize;         /* tp_quantize_row accepts the type */
    int execute;          /* the typed kernels accept weights of the type */
} tp_type_info;

/* The table row of id, or NULL when the id has no entry at all (never was a ggml type). */
TP_API const tp_type_info *tp_type_get(uint32_t id);

/* Name of the type; NULL for an id without an entry. */
TP_API const char *tp_type_name(uint32_t id);
/* Elements / bytes per block; 0 for unknown, retired and unsupported ids. */
TP_API size_t tp_type_block_elems(uint32_t id);
TP_API size_t tp_type_block_bytes(uint32_t id);
/* Bytes of a row of n_elems elements. TP_ERR_INVALID for a type without a block size or n
 * not a multiple of the block, TP_ERR_OVERFLOW when the size does not fit in size_t;
 * *bytes is written only on success. */
TP_API tp_status tp_type_row_bytes(uint32_t id, size_t n_elems, size_t *bytes);
TP_API int tp_type_is_retired(uint32_t id);
TP_API int tp_type_can_dequantize(uint32_t id);
TP_API int tp_type_can_quantize(uint32_t id);
TP_API int tp_type_can_execute(uint32_t id);
/* Looks a name up (case-insensitive: "q8_0" and "Q8_0" both match). Returns 1 and writes *id
 * when found, 0 (and leaves *id) when not. Retired names are found too. */
TP_API int tp_type_from_name(const char *name, uint32_t *id);

/* ---- scalar conversions (docs/quant.md section 2) -------------------------------------- */

/* Exact: subnormals, infinities and NaN payloads preserved. */
TP_API float tp_f16_to_f32(uint16_t h);
/* Round to nearest, ties to even; overflow to +-inf; NaN -> 0x7E00 with the sign. */
TP_API uint16_t tp_f32_to_f16(float f);
/* Exact: the bits shifted left by 16. */
TP_API float tp_bf16_to_f32(uint16_t b);
/* NaN -> (bits >> 16) | 0x40; otherwise round to nearest, ties to even. */
TP_API uint16_t tp_f32_to_bf16(float f);

/* ---- rows ------------------------------------------------------------------------------ */

/* dst[0..n) = the n elements of the row at src (n / block_elems blocks). Types: F32, F16,
 * BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K. TP_ERR_INVALID for
 * another type, n not a multiple of the block or a NULL array (with n > 0). Used for 1-D
 * weights too (norm weights stored F16/BF16: dequantize into a caller buffer of n). */
TP_API tp_status tp_dequantize_row(uint32_t type, const void *src, float *dst, size_t n);

/* Writes the n elements of src as a row of type (n / block_elems blocks at dst) with the
 * reference quantizers of docs/quant.md. Types: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K. Block
 * types refuse non-finite input (TP_ERR_INVALID, nothing defined written). */
TP_API tp_status tp_quantize_row(uint32_t type, const float *src, void *dst, size_t n);

/* ---- kernels ----------------------------------------------------------------------------- */

/* y[t][o] = sum_i W[o][i] * x[t][i] (+ b[o]) for t < n_tok, o < n_out. W is n_out rows of
 * n_in elements of type (row bytes from tp_type_row_bytes), read in place, never converted to
 * f32: F32 / F16 / BF16 rows meet the f32 token rows directly; block types meet the token rows
 * rounded to 16 bits per group of 32 in exact integer block sums (docs/quant.md section 5),
 * in the instruction-set form of tp_kernels_isa (kernels.h). b (f32, may be NULL), x and y
 * are f32, token-major; y must not overlap x or W. Work is split by output row; n_threads 0 = tp_kernels_threads(). Refuses (before
 * writing y) a type that cannot execute, n_in not a multiple of the block, an empty matrix,
 * NULL arrays, and sizes that overflow. */
TP_API tp_status tp_kernel_mul_mat_typed(uint32_t type, const void *W, const float *b,
                                         const float *x, size_t n_in, size_t n_out, size_t n_tok,
                                         float *y, int n_threads);

/* Embedding lookup: out[t] = row ids[t] of table (n_rows rows of d elements of type),
 * dequantized exactly. ids carry u32 bit patterns as in tp_kernel_get_rows; an id >= n_rows
 * is refused before anything is written. out must not overlap table unless type is F32. */
TP_API tp_status tp_kernel_get_rows_typed(uint32_t type, const void *table, size_t n_rows, size_t d,
                                          const float *ids, size_t n_ids, float *out);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_QUANT_H */
