/* Internal: the packed matrix-matrix product of F32 / F16 / BF16 weights with many token rows
 * (docs/quant.md section 5, "Prefill"), y[t][o] = sum_i W[o][i] * x[t][i] (+ b[o]).
 *
 * The token rows are packed once per call, transposed into tiles of TT tokens (each element
 * index k holds the TT token values side by side, zeros past the last token). Each thread
 * takes tiles of MR weight rows; for each slice of KC elements it converts the tile's rows
 * to f32 into a small packed panel once and multiplies it with every token tile of a block of
 * tokens: a micro-kernel keeps MR x TT sums in registers and adds one product per weight and
 * token for each element, in element order (one fused multiply-add in the vector forms).
 * A slice's sums are added to y (the first slice writes it, the last adds b[o]).
 *
 * Each output sums its slices in order and each slice in element order, and the slices
 * depend only on n_in and the form, so the bits never depend on the thread split, on the
 * tiling or on the number of tokens (from TP_FGEMM_MIN_TOKENS up), and F16 / BF16 weights give
 * the bits of F32 weights holding the same values. The forms differ in tile sizes and in
 * rounding (the portable form rounds each product before adding it). */
#ifndef TP_BACKEND_FGEMM_H
#define TP_BACKEND_FGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Calls with fewer tokens take the row dot products of backend/qdot.h. */
#define TP_FGEMM_MIN_TOKENS 16

/* One form: tile sizes and its two inner functions. */
typedef struct tp_fgemm_form {
    int mr;    /* weight rows per tile */
    int tt;    /* tokens per tile */
    size_t kc; /* elements per slice (the row stride of a packed weight panel) */
    /* rows [o0, o0 + mr) of W (rows row_bytes apart, type F32/F16/BF16), elements
     * [k0, k0 + kn), to f32 at pa + r * kc; rows mr..MR-1 become zeros. The same elements
     * of the next next_mr rows (from o0 + MR) may be fetched ahead into the cache; pa NULL:
     * only that (a tile of F32 rows read in place). */
    void (*pack_w)(uint32_t type, const uint8_t *W, size_t row_bytes, size_t o0, int mr,
                   size_t k0, size_t kn, float *pa, int next_mr);
    /* out[r * tt + l] = sum over k < kn of pa[r * lda + k] * pb[k * tt + l], k in order
     * (lda: kc for a packed panel, the row length for F32 rows read in place). */
    void (*kernel)(size_t kn, const float *pa, size_t lda, const float *pb, float *out);
} tp_fgemm_form;

/* The form of isa (a tp_isa of kernels.h); NULL when this build lacks it. */
const tp_fgemm_form *tp_fgemm_form_for(int isa);
const tp_fgemm_form *tp_fgemm_form_portable(void);
const tp_fgemm_form *tp_fgemm_form_avx2(void);   /* NULL when not built for x86-64 */
const tp_fgemm_form *tp_fgemm_form_avx512(void); /* NULL when not built for x86-64 */

/* y = x W^T (+ b) in the form chosen by tp_kernels_set_isa (else the best one), on up to
 * n_threads threads (0: tp_kernels_threads()). The arguments are those of
 * tp_kernel_mul_mat_typed, already checked; type is F32, F16 or BF16. */
tp_status tp_fgemm(uint32_t type, const uint8_t *W, size_t row_bytes, const float *b,
                   const float *x, size_t n_in, size_t n_out, size_t n_tok, float *y,
                   int n_threads);

#endif
