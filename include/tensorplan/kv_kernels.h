/* tensorplan: the KV cache kernels for a cache stored in its own type (docs/engine.md, "The
 * KV cache types").
 *
 * Example (plain arrays: nothing to create or destroy):
 *
 *     float k[8] = {1, 2}, v[8] = {3, 4}, q[8] = {1}, out[8];   // one token, one head of 8
 *     float pos[1] = {0};                            // position 0 (the u32 bits of 0.0f)
 *     float K[4 * 4], V[4 * 4];                      // n_ctx = 4 rows of 8 f16: 16 bytes each
 *     if (tp_dtype_row_bytes(TP_DTYPE_F16, 8) != 16)
 *         return 1;
 *     tp_status st = tp_kernel_kv_store_typed(TP_DTYPE_F16, k, v, pos, 8, 1, K, V, 4);
 *     if (st == TP_OK)
 *         st = tp_kernel_attn_typed(TP_DTYPE_F16, q, K, V, pos, 1, 1, 8, 1, 4, out, 1);
 *     return st == TP_OK ? 0 : 1;                    // out = v, rounded to f16
 *
 * A KV region of type f32, f16 or q8_0 is n_ctx rows of n_kv_embd = n_head_kv * head_dim
 * elements; a row is tp_dtype_row_bytes(type, n_kv_embd) bytes (q8_0: blocks of 32, an f16
 * scale and 32 int8, docs/quant.md), so each head's slice of a row is whole blocks when
 * head_dim is a multiple of 32. Row p holds the token at position p. Storing rounds the f32 K
 * and V rows to the type with the reference quantizers of tp_quantize_row; attention reads
 * each head's slice back exactly (tp_dequantize_row) and computes in f32. For f32 both
 * kernels are tp_kernel_kv_store and tp_kernel_attn (kernels.h), bit for bit. */
#ifndef TENSORPLAN_KV_KERNELS_H
#define TENSORPLAN_KV_KERNELS_H

#include <stddef.h>

#include "tensorplan/api.h"
#include "tensorplan/graph.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rounds row t of k and v (n_kv_embd f32 each) to type and writes it at row positions[t] of
 * K and V (n_ctx rows each). Every position, and for q8_0 every value (finite), is checked
 * before the first write: a refused store leaves the cache as it was. */
TP_API tp_status tp_kernel_kv_store_typed(tp_dtype type, const float *k, const float *v,
                                          const float *positions, size_t n_kv_embd, size_t n_tok,
                                          void *K, void *V, size_t n_ctx);

/* tp_kernel_attn (grouped-query, causal) on K and V stored as type. Each query token's work
 * is its own (the bits do not depend on n_threads or on the other tokens of the call);
 * n_threads 0 = tp_kernels_threads(). */
TP_API tp_status tp_kernel_attn_typed(tp_dtype type, const float *q, const void *K, const void *V,
                                      const float *positions, size_t n_head, size_t n_head_kv,
                                      size_t head_dim, size_t n_tok, size_t n_ctx, float *out,
                                      int n_threads);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_KV_KERNELS_H */
