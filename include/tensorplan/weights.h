/* tensorplan: a registry of named weight tensors.
 *
 * Example:
 *
 *     tp_weights *w;
 *     float *data;
 *     if (tp_weights_create(&w) != TP_OK)
 *         return 1;
 *     tp_status st = tp_weights_add(w, "output_norm.weight", 1, 896, &data);   // zero-filled
 *     if (st == TP_OK) {
 *         for (int i = 0; i < 896; i++)
 *             data[i] = 1.0f;
 *         printf("%zu tensors, %zu bytes\n", tp_weights_count(w), tp_weights_bytes(w));
 *     }
 *     tp_weights_destroy(w);                         // every owned tensor with it
 *     return st == TP_OK ? 0 : 1;
 *
 * A tensor is either owned f32 storage (tp_weights_add) or a view of rows stored in their own
 * type in memory the caller keeps alive, such as a mapped GGUF file (tp_weights_add_view):
 * backends read both through `type`, `bytes` and `row_bytes`, and only owned tensors have
 * `data`. Shapes follow the kernels: a matrix used by mul_mat is [rows = out][cols = in] row-major,
 * the embedding is [vocab][n_embd], a norm weight or a bias is one row. Names are GGUF's
 * (see model.h). The registry sits in the backend layer, which reads it; filling one from a
 * model config (tp_weights_init_random) belongs to the model layer (model.h). */
#ifndef TENSORPLAN_WEIGHTS_H
#define TENSORPLAN_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/graph.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tp_weight {
    char name[TP_NAME_MAX];
    size_t rows, cols; /* a vector is 1 x n */
    float *data;       /* rows * cols floats owned by the registry; NULL for a view */
    uint32_t type;     /* element type, a ggml type id (quant.h); TP_TYPE_F32 when owned */
    const void *bytes; /* rows of `type`, row_bytes apart: == data when owned */
    size_t row_bytes;  /* bytes of one row of cols elements of `type` */
} tp_weight;

typedef struct tp_weights tp_weights;

TP_API tp_status tp_weights_create(tp_weights **out);
TP_API void tp_weights_destroy(tp_weights *weights);

/* Adds a zero-filled tensor; *data (may be NULL) receives its storage. A name already
 * present is refused. */
TP_API tp_status tp_weights_add(tp_weights *weights, const char *name, size_t rows, size_t cols,
                                float **data);
/* Adds a view: rows x cols elements of type TYPE (a type tp_type_can_dequantize accepts, cols
 * a multiple of its block) at BYTES, which the registry never frees and which must outlive
 * it. A name already present is refused. */
TP_API tp_status tp_weights_add_view(tp_weights *weights, const char *name, uint32_t type,
                                     size_t rows, size_t cols, const void *bytes);
/* NULL when absent. */
TP_API const tp_weight *tp_weights_find(const tp_weights *weights, const char *name);
TP_API size_t tp_weights_count(const tp_weights *weights);
TP_API const tp_weight *tp_weights_at(const tp_weights *weights, size_t i);
/* Bytes of every tensor in its own type (rows * row_bytes summed). */
TP_API size_t tp_weights_bytes(const tp_weights *weights);

/* Bumped by every add: a graph cache keyed on it rebuilds after the weights change. */
TP_API uint64_t tp_weights_version(const tp_weights *weights);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_WEIGHTS_H */
