/* Internal: matrix-matrix products of block-type weights with many token rows at once (the
 * prefill; docs/quant.md section 5, "Prefill tiles").
 *
 * The activations are the 16-bit groups of tp_qdot_quantize (backend/qdot.h), laid out again
 * by tp_qgemm_tile_x in tiles of TP_QGEMM_TOKENS tokens: within each group of 32 elements,
 * pair p (0-15) holds elements p and p + 16 as two int16 halves of one int32, and the pairs
 * of a tile's tokens are adjacent, so one 32-bit broadcast feeds one pair-product instruction
 * (vpdpwssd; vpmaddwd and vpaddd in the AVX2 form) for sixteen weight rows (eight a vector
 * in the AVX2 form). The weights are decoded, panel by panel of
 * TP_QGEMM_ROWS rows, into the same pair order, rows in the lanes, in a per-thread scratch,
 * and every decoded group is used by every token of the call.
 *
 * The integer sums are exact, as in the row dot products; each output sums its groups in
 * order in f32 and depends on its row and token only, never on the panel, the tile or the
 * thread split. The f32 rounding differs from the row dot products (tp_qdot_fn), so the two
 * paths agree within f32 rounding, not bit for bit. The AVX2 form takes the integer and f32
 * steps of the AVX-512 form lane for lane, so the two give the same bits wherever the sums of
 * 32 activations are exact in double (always, unless a group's values span some 2^24). */
#ifndef TP_BACKEND_QGEMM_H
#define TP_BACKEND_QGEMM_H

#include <stddef.h>
#include <stdint.h>

#define TP_QGEMM_TOKENS 12 /* tokens per register tile */
#define TP_QGEMM_ROWS 16   /* rows per panel: the lanes of one 512-bit vector, or two 256-bit */
/* Calls with fewer tokens take the row dot products, which meet up to four tokens per pass
 * without decoding a panel; from five tokens (two passes) the panels win on every type
 * (one core, Qwen2.5-0.5B feed-forward shapes: 4 tokens about even, 5 tokens 1.3-2x). */
#define TP_QGEMM_MIN_TOKENS 5
/* Groups of 32 per chunk of a panel at most (the panel's chunk stays in the first-level
 * cache: 1,152 bytes a group, and 64 more for the second mins of Q2_K). */
#define TP_QGEMM_MAX_CHUNK 24

/* Tiled activations of n_tok tokens of n_in elements (n_in a multiple of 32), each group of
 * 32 values v rounded as tp_qdot_quantize does (d = max|v| / 32767, q = nearest(v / d); a
 * group holding a non-finite value: d = NaN, q = 0). Tile i holds tokens [12 i, 12 i + 12), a
 * last partial tile padded with zeros:
 *   q[i][g][p][k]  int32: q[t][32 g + p] & 0xFFFF | q[t][32 g + p + 16] << 16, t = 12 i + k
 *   d[i][g][k]     the group's scale
 *   s[i][g][k]     the exact sum of the group's 32 values, in double, rounded to f32
 *   h[i][g][e][k]  the exact sum of its half e (values 16 e .. 16 e + 15), likewise (the
 *                  mins of Q2_K cover 16 values each)
 * A group holding a non-finite value has s and both h NaN; one rounded to zeros, 0. */
typedef struct tp_qgemm_x {
    const int32_t *q;
    const float *d, *s, *h;
    size_t n_in, n_tok;
} tp_qgemm_x;

/* Bytes of the tiled activations, and of one worker's scratch. */
size_t tp_qgemm_x_bytes(size_t n_in, size_t n_tok);
size_t tp_qgemm_scratch_bytes(size_t n_in);

/* Rounds the n_tok f32 token rows x (n_in each) into tiles in mem (tp_qgemm_x_bytes of it,
 * aligned for floats) and describes them in xt. */
typedef void (*tp_qgemm_tile_fn)(const float *x, size_t n_in, size_t n_tok, void *mem,
                                 tp_qgemm_x *xt);

/* y[t][r] = W[r] . x[t] (+ b[r]) for rows [r0, r1) of W (rows of row_bytes) and every token of
 * x, y rows n_out apart; scratch: tp_qgemm_scratch_bytes(x->n_in), 64-byte aligned. */
typedef void (*tp_qgemm_fn)(const uint8_t *W, size_t row_bytes, size_t r0, size_t r1,
                            const tp_qgemm_x *x, const float *b, float *y, size_t n_out,
                            void *scratch);

/* The product of form isa (a tp_isa) for type, or NULL where the form has none (the row dot
 * products then serve every token count); its activation rounding. */
tp_qgemm_fn tp_qgemm_for(int isa, uint32_t type);
tp_qgemm_tile_fn tp_qgemm_tiler(int isa);

/* For the benchmarks: off != 0 makes tp_qgemm_for answer NULL for every form and type until
 * it is called again with 0 (the row dot products then serve every token count). */
void tp_qgemm_set_off(int off);

/* The AVX-512 form's table (qgemm_avx512.c) and the AVX2 form's (qgemm_avx2.c): fill
 * fns[type] and *tile; 0 when not built for x86-64. */
int tp_qgemm_fill_avx512(tp_qgemm_fn *fns, size_t n, tp_qgemm_tile_fn *tile);
int tp_qgemm_fill_avx2(tp_qgemm_fn *fns, size_t n, tp_qgemm_tile_fn *tile);

#endif
