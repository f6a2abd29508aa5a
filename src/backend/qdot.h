/* Internal: dot products of one weight row, in its own type, with up to TP_QDOT_TOKENS token
 * rows (docs/quant.md section 5).
 *
 * Block types meet activations rounded to 16 bits: every 32 elements of an f32 token row
 * become int16 values q with one f32 scale d (x ~ q * d, |q| <= 32767) and, for the types
 * with a min, the f32 sums of the exact x over each 16 elements. A block's contribution is
 * its integer sums of weight quant times q, scaled in f32. F32, F16 and BF16 rows are
 * multiplied with the f32 token rows directly.
 *
 * Each function exists in a portable form and, on x86-64, in AVX2+FMA+F16C and
 * AVX-512 (BW, VL, VNNI) forms; tp_qdot_ops returns the table of one form. The integer sums
 * are the same in every form; the f32 accumulation order differs between forms, so forms
 * agree within f32 rounding, and each form gives the same bits for the same inputs. */
#ifndef TP_BACKEND_QDOT_H
#define TP_BACKEND_QDOT_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/quant.h"

#define TP_QDOT_TOKENS 4
#define TP_QDOT_ROWS 4
#define TP_QDOT_GROUP 32 /* elements per activation scale */

/* One token row of rounded activations: q[n], d[n / 32], s[n / 16], and the per-group sums
 * and byte planes of tp_qdot_group_sums: qsum[n / 32] (the integer sum of each group's q),
 * s32[n / 32] (s[2g] + s[2g + 1] in f32), qsum16[n / 16] (the integer sum of each 16 q), and
 * q split into its bytes, q[i] = 256 * qhi[i] + qlo[i] (qhi = q >> 8, qlo = q & 255). */
typedef struct tp_xq {
    const int16_t *q;
    const float *d;
    const float *s;
    const int32_t *qsum;
    const float *s32;
    const int32_t *qsum16;
    const int8_t *qhi;
    const uint8_t *qlo;
} tp_xq;

/* out[k] = row . x[k] for k < n_x (1 <= n_x <= TP_QDOT_TOKENS); row is n_blocks blocks. */
typedef void (*tp_qdot_fn)(const uint8_t *row, size_t n_blocks, const tp_xq *x, int n_x,
                           float *out);
/* F32 / F16 / BF16 rows of n elements against f32 token rows, several rows at a time: rows
 * row + r * row_bytes for r < n_r (1 <= n_r <= TP_QDOT_ROWS) into out[r * TP_QDOT_TOKENS + k];
 * returns n_r. Each row and token pair gives the same bits whatever n_r and n_x. */
typedef int (*tp_fdot_fn)(const uint8_t *row, size_t row_bytes, int n_r, size_t n,
                          const float *const *x, int n_x, float *out);

/* Mat-vec of one token (decode): out[r] = row r . x for r < n_rows, rows row_bytes apart of
 * n_blocks blocks. Each out[r] is the same bits as q gives for that row and token alone. */
typedef void (*tp_qvec_fn)(const uint8_t *W, size_t row_bytes, size_t n_rows, size_t n_blocks,
                           const tp_xq *x, float *out);

/* Mat-vec of one token over F32 / F16 / BF16 rows (decode): out[r] for r < n_rows, rows
 * row_bytes apart of n elements, each summed in slices of k_block elements (the last one
 * shorter) added in order, the first slice's sum plus the next one's and so on: the bits that
 * f gives for that row and token slice by slice, added in the same order. */
typedef void (*tp_fvec_fn)(const uint8_t *W, size_t row_bytes, size_t n_rows, size_t n,
                           size_t k_block, const float *x, float *out);

/* Attention over a KV cache row of n elements stored as F32, F16 or Q8_0 (n a multiple of 32
 * for Q8_0; attention_kv.c): the dot product with the f32 query q, and o[i] += p * row[i],
 * the row's elements being the values its type decodes to. */
typedef float (*tp_kvdot_fn)(const float *q, const uint8_t *row, size_t n);
typedef void (*tp_kvaxpy_fn)(float p, const uint8_t *row, size_t n, float *o);

typedef struct tp_qdot_ops {
    tp_qdot_fn q[TP_TYPE_ID_LIMIT]; /* block types */
    tp_fdot_fn f[TP_TYPE_ID_LIMIT]; /* F32, F16, BF16 */
    tp_qvec_fn v[TP_TYPE_ID_LIMIT]; /* block types, one token; NULL: q row by row */
    tp_fvec_fn fv[TP_TYPE_ID_LIMIT]; /* float rows, one token; NULL: f tile by tile */
    tp_kvdot_fn kd[TP_TYPE_ID_LIMIT];   /* F32, F16, Q8_0 */
    tp_kvaxpy_fn ka[TP_TYPE_ID_LIMIT];  /* F32, F16, Q8_0 */
    unsigned char needs[TP_TYPE_ID_LIMIT]; /* what q and v of a type read of tp_xq beyond
                                              q, d, s: TP_XQ_SUMS, TP_XQ_PLANES */
} tp_qdot_ops;

#define TP_XQ_SUMS 1   /* qsum, s32 */
#define TP_XQ_PLANES 2 /* qsum16, qhi, qlo */

/* The table of form isa (a tp_isa of kernels.h); NULL when this build or processor lacks it. */
const tp_qdot_ops *tp_qdot_ops_for(int isa);
/* The table in use: the form chosen by tp_kernels_set_isa, else the best one available. */
const tp_qdot_ops *tp_qdot_ops_current(void);

/* Rounds n_tok token rows of n elements (x, row-major; n a multiple of 32) into q (n_tok * n),
 * d (n_tok * n / 32) and s (n_tok * n / 16). A group holding a non-finite value gets scale
 * NaN and zero quants, so the products that read it are NaN, as in f32. */
void tp_qdot_quantize(const float *x, size_t n, size_t n_tok, int16_t *q, float *d, float *s);

/* The per-group sums and byte planes of rows rounded by tp_qdot_quantize (n_tok rows of n
 * elements) that a form's kernels read (needs: the TP_XQ_ bits of tp_qdot_ops.needs; the
 * arrays of the other bits are not written). TP_XQ_SUMS: qsum[g] = the sum of the 32 q of
 * group g (exact; at most 32 * 32767 in magnitude), s32[g] = s[2g] + s[2g + 1] in f32.
 * TP_XQ_PLANES: those, qsum16[h] = the sum of the 16 q of half h, qhi[i] = q[i] >> 8
 * (arithmetic) and qlo[i] = q[i] & 255, so q[i] = 256 qhi[i] + qlo[i]. The vector forms use
 * them to take a type's constant offset (Q4_0's 8, Q5_0's 16, Q6_K's 32) out of the integer
 * sums, for the mins of whole chunks, and for products of 8-bit weights with the two bytes of
 * each activation (vpmaddubsw) that sum to the same integers. */
void tp_qdot_group_sums(unsigned needs, const int16_t *q, const float *s, size_t n, size_t n_tok,
                        int32_t *qsum, float *s32, int32_t *qsum16, int8_t *qhi, uint8_t *qlo);

/* The forms in this build (one C file each). */
void tp_qdot_fill_portable(tp_qdot_ops *ops);
int tp_qdot_fill_avx2(tp_qdot_ops *ops);   /* 0 when not built for x86-64 */
int tp_qdot_fill_avx512(tp_qdot_ops *ops); /* 0 when not built for x86-64 */

#endif
