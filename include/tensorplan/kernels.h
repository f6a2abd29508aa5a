/* tensorplan: f32 compute kernels on plain arrays.
 *
 * Example (plain arrays: nothing to create or destroy):
 *
 *     float W[2 * 3] = {1, 0, 0, 0, 1, 0};           // [n_out = 2][n_in = 3], row-major
 *     float x[3] = {1, 2, 3}, y[2];
 *     tp_kernels_set_threads(1);                     // what n_threads 0 means below
 *     tp_status st = tp_kernel_mul_mat(W, NULL, x, 3, 2, 1, y, 0);   // y = {1, 2}
 *     if (st == TP_OK)
 *         st = tp_kernel_silu(y, 2, y);              // in place
 *     return st == TP_OK ? 0 : 1;
 *
 * Every activation is stored token-major: a tensor of shape [d, n_tokens] is n_tokens rows
 * of d floats. Integer data (token ids, positions, row ids) rides in f32 arrays as bit
 * patterns (docs/allocator.md, "Inputs"); kernels recover the integers with memcpy and never with
 * float arithmetic, because small integers are subnormal floats and a flush-to-zero mode
 * would turn them into 0.
 *
 * Determinism: every kernel gives the same bits for the same inputs whatever the thread
 * count. Work is split by output element, each output element is computed by exactly one
 * thread, and the summation order inside an element does not depend on the split. */
#ifndef TENSORPLAN_KERNELS_H
#define TENSORPLAN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Threads used by kernels called with n_threads == 0. Initially the number of online CPUs;
 * n <= 0 restores that default. */
TP_API void tp_kernels_set_threads(int n);
TP_API int tp_kernels_threads(void);

/* Instruction-set forms of the mat-mul kernels (docs/quant.md section 5). By default the
 * best form the processor supports runs; every form computes the same integer block sums,
 * and their f32 results differ only by the order of f32 additions. */
typedef enum tp_isa {
    TP_ISA_PORTABLE = 0, /* plain C */
    TP_ISA_AVX2 = 1,     /* x86-64 AVX2, FMA and F16C */
    TP_ISA_AVX512 = 2,   /* x86-64 AVX-512 F, BW, VL and VNNI (with AVX2, FMA, F16C) */
    TP_ISA_COUNT = 3
} tp_isa;

/* 1 when this build and this processor can run the form. */
TP_API int tp_kernels_isa_supported(int isa);
/* Chooses the form for every later kernel call; TP_ISA_COUNT (or any value < 0) returns to
 * the best supported one. TP_ERR_INVALID (and no change) for a form that is not supported. */
TP_API tp_status tp_kernels_set_isa(int isa);
/* The form in use. */
TP_API int tp_kernels_isa(void);
/* "portable", "avx2", "avx512"; NULL for another value. */
TP_API const char *tp_kernels_isa_name(int isa);

/* Reads the i-th integer carried as a bit pattern in an f32 array. */
TP_API uint32_t tp_kernel_bits_u32(const float *data, size_t i);
/* Writes an integer into an f32 array as a bit pattern. */
TP_API void tp_kernel_put_u32(float *data, size_t i, uint32_t value);

/* Embedding lookup: out[t] = table[ids[t]] (rows of width d). An id >= n_rows is refused
 * before anything is written. */
TP_API tp_status tp_kernel_get_rows(const float *table, size_t n_rows, size_t d, const float *ids,
                                    size_t n_ids, float *out);

/* y[t][i] = x[t][i] / sqrt(mean_j x[t][j]^2 + eps) * w[i]; w may be NULL (weight 1). */
TP_API tp_status tp_kernel_rms_norm(const float *x, const float *w, size_t d, size_t n_tok,
                                    float eps, float *y);

/* y[t] = W x[t] (+ b) with W stored [n_out][n_in] row-major; b may be NULL. y must not
 * overlap x. n_threads 0 = tp_kernels_threads(). */
TP_API tp_status tp_kernel_mul_mat(const float *W, const float *b, const float *x, size_t n_in,
                                   size_t n_out, size_t n_tok, float *y, int n_threads);

/* RoPE parameters (docs/engine.md, "RoPE"). mode is a tp_rope_mode (graph.h): NEOX rotates
 * the pair (i, i + head_dim/2), NORM the pair (2i, 2i+1). theta_0 = position, theta_{i+1} =
 * theta_i * base^(-2/head_dim) by repeated f32 multiplication; divided by freqs[i] when freqs
 * is not NULL (head_dim/2 divisors); scaled by freq_scale, mixed with the unscaled angle
 * through the YaRN ramp when ext_factor != 0 (n_ctx_orig then > 0); cos and sin are
 * multiplied by attn_factor, the whole magnitude (with YaRN it already holds
 * 1 + 0.1 ln(1/freq_scale), as tp_model_config's rope_attn_factor does). */
typedef struct tp_rope_params {
    int mode;
    float base;
    float freq_scale;  /* 1 = no scaling */
    float ext_factor;  /* 0 = no YaRN    */
    float attn_factor; /* cos/sin magnitude, 1 = none */
    int n_ctx_orig;
    const float *freqs; /* NULL or head_dim/2 divisors */
} tp_rope_params;

/* The neutral parameters for base: NEOX, freq_scale 1, ext_factor 0, attn_factor 1. */
TP_API tp_rope_params tp_rope_params_default(float base);

/* RoPE on n_head heads of head_dim per token row, in place allowed (y == x). head_dim must be
 * even, base, freq_scale and attn_factor positive, freqs (when given) finite and non-zero. */
TP_API tp_status tp_kernel_rope_ext(const float *x, const float *positions, size_t n_head,
                                    size_t head_dim, size_t n_tok, const tp_rope_params *p,
                                    float *y);

/* NEOX rope with the neutral parameters of base (tp_kernel_rope_ext). */
TP_API tp_status tp_kernel_rope(const float *x, const float *positions, size_t n_head,
                                size_t head_dim, size_t n_tok, float base, float *y);

/* Writes row t of k and v (width n_kv_embd) at row positions[t] of K and V, each n_ctx rows.
 * Every position is checked against n_ctx before anything is written. */
TP_API tp_status tp_kernel_kv_store(const float *k, const float *v, const float *positions,
                                    size_t n_kv_embd, size_t n_tok, float *K, float *V,
                                    size_t n_ctx);

/* Grouped-query causal attention. q is [n_head*head_dim, n_tok]; K and V are n_ctx rows of
 * n_head_kv*head_dim. Query token t with position p attends to cached rows 0..p (p < n_ctx);
 * head h reads KV head h / (n_head / n_head_kv). out is [n_head*head_dim, n_tok], heads
 * concatenated. n_threads 0 = tp_kernels_threads(). */
TP_API tp_status tp_kernel_attn(const float *q, const float *K, const float *V,
                                const float *positions, size_t n_head, size_t n_head_kv,
                                size_t head_dim, size_t n_tok, size_t n_ctx, float *out,
                                int n_threads);

/* Elementwise; out may alias an input. */
TP_API tp_status tp_kernel_add(const float *a, const float *b, size_t n, float *out);
TP_API tp_status tp_kernel_mul(const float *a, const float *b, size_t n, float *out);
TP_API tp_status tp_kernel_silu(const float *x, size_t n, float *out);
/* out = silu(gate) * up */
TP_API tp_status tp_kernel_swiglu(const float *gate, const float *up, size_t n, float *out);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_KERNELS_H */
