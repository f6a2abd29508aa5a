/* A plain reference forward pass of a decoder config of either family (qwen2, llama):
 * loops over a weight registry, double precision throughout, its own KV arrays; no graph,
 * no allocator, no engine kernel. Weights of any type the registry holds (owned f32, or
 * views of F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K or Q6_K rows) are read through this file's own
 * dequantization, written from the block layouts of docs/quant.md. */
#ifndef TP_TESTS_REF_FORWARD_H
#define TP_TESTS_REF_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/model.h"
#include "tensorplan/weights.h"

typedef struct ref_model ref_model;

/* Keeps pointers to config and weights (they must outlive the model) and dequantizes every
 * tensor once. n_ctx bounds the positions the model can cache. Returns 0 on success, -1 on
 * a type this file does not read or no memory. */
int ref_model_create(const tp_model_config *config, const tp_weights *weights, size_t n_ctx,
                     ref_model **out);
void ref_model_destroy(ref_model *m);

/* Runs n tokens at positions n_past .. n_past + n - 1 (n_past = tokens run so far), caching
 * their K and V, and writes the logits of every token to logits[n][vocab]. Returns 0 on
 * success, -1 if the positions would pass n_ctx or a weight is missing. */
int ref_model_forward(ref_model *m, const int32_t *tokens, size_t n, double *logits);

/* From now on every K and V row the model caches is rounded as a KV cache of that ggml type
 * id stores it: 0 F32 (kept exact, the default), 1 F16, 8 Q8_0 (head_dim a multiple of 32).
 * Returns 0, or -1 for another type. */
int ref_model_set_kv_type(ref_model *m, uint32_t type);

size_t ref_model_n_past(const ref_model *m);
/* Cached K / V of a layer: n_ctx rows of n_head_kv * head_dim (doubles). */
const double *ref_model_k(const ref_model *m, int layer);
const double *ref_model_v(const ref_model *m, int layer);

/* The test's own dequantization of one row of n elements of a ggml type id (0 F32, 1 F16,
 * 30 BF16, 2 Q4_0, 3 Q4_1, 6 Q5_0, 7 Q5_1, 8 Q8_0, 10 Q2_K, 11 Q3_K, 12 Q4_K, 13 Q5_K,
 * 14 Q6_K). Returns 0, or -1 for another type or n not a multiple of the block. */
int ref_dequantize_row(uint32_t type, const void *src, double *dst, size_t n);

#endif
