/* tensorplan: GGUF files as models (docs/gguf.md): the model configuration read from the
 * metadata and checked against the tensor table, the weights as views of the mapping, the
 * tokenizer of the tokenizer.ggml.* keys. Part of the loader layer (docs/architecture.md);
 * test models are written by test_model.h.
 *
 * Example:
 *
 *     tp_gguf *g;
 *     tp_model_config config;
 *     tp_weights *weights = NULL;
 *     tp_tokenizer *tok = NULL;
 *     if (tp_gguf_open("model.gguf", &g) != TP_OK)
 *         return 1;
 *     tp_status st = tp_gguf_model_config(g, &config);
 *     if (st == TP_OK)
 *         st = tp_gguf_model_weights(g, &config, &weights);   // views into g's mapping
 *     if (st == TP_OK)
 *         st = tp_gguf_tokenizer(g, &tok);
 *     // then a session (session.h) over config and weights, the prompt through tok
 *     tp_tokenizer_destroy(tok);
 *     tp_weights_destroy(weights);                   // before g, whose bytes it views
 *     tp_gguf_close(g);
 *     return st == TP_OK ? 0 : 1;
 */
#ifndef TENSORPLAN_GGUF_MODEL_H
#define TENSORPLAN_GGUF_MODEL_H

#include <stddef.h>

#include "tensorplan/api.h"
#include "tensorplan/gguf.h"
#include "tensorplan/model.h"
#include "tensorplan/status.h"
#include "tensorplan/tokenizer.h"
#include "tensorplan/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads general.architecture (`qwen2` or `llama`; any other is refused with a message naming
 * it) and the hyperparameters with their exact key types, then checks the tensor table: every
 * required tensor present with its exact shape and a type the kernels execute (1-D tensors
 * F32, F16 or BF16), the optional ones detected (q/k/v, attn_output, ffn and output biases,
 * output.weight -- absent means tied --, rope_freqs.weight), and no tensor the architecture
 * does not list. config->name is the file name without folders and ".gguf"; vocab is
 * token_embd.weight's ne[1]; max_ctx is A.context_length. A refusal is TP_ERR_INVALID with
 * one line naming the file and the key or tensor. No weight byte is read. */
TP_API tp_status tp_gguf_model_config(const tp_gguf *g, tp_model_config *config);

/* The bytes of every tensor of the file as stored, per type id: bytes_by_type has
 * TP_TYPE_ID_LIMIT entries (quant.h); *total (may be NULL) their sum. */
TP_API tp_status tp_gguf_model_weight_bytes(const tp_gguf *g, size_t *bytes_by_type, size_t *total);

/* A registry of views into the mapping (tp_weights_add_view) for every tensor of the config:
 * a matrix ne = [n_in, n_out] becomes rows = n_out, cols = n_in; a vector 1 x ne[0]. The
 * gguf object must outlive the registry; no weight byte is read or copied. */
TP_API tp_status tp_gguf_model_weights(const tp_gguf *g, const tp_model_config *config,
                                       tp_weights **out);

/* The tokenizer described by the tokenizer.ggml.* keys (docs/tokenizer.md). */
TP_API tp_status tp_gguf_tokenizer(const tp_gguf *g, tp_tokenizer **out);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_GGUF_MODEL_H */
