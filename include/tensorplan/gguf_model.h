/* tensorplan: GGUF files as models (docs/gguf.md): the model configuration read from the
 * metadata and checked against the tensor table, the weights as views of the mapping, the
 * tokenizer of the tokenizer.ggml.* keys, and test models written with random weights.
 * Part of the io layer. */
#ifndef TENSORPLAN_GGUF_MODEL_H
#define TENSORPLAN_GGUF_MODEL_H

#include <stddef.h>
#include <stdint.h>

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
tp_status tp_gguf_model_config(const tp_gguf *g, tp_model_config *config);

/* The bytes of every tensor of the file as stored, per type id: bytes_by_type has
 * TP_TYPE_ID_LIMIT entries (quant.h); *total (may be NULL) their sum. */
tp_status tp_gguf_model_weight_bytes(const tp_gguf *g, size_t *bytes_by_type, size_t *total);

/* A registry of views into the mapping (tp_weights_add_view) for every tensor of the config:
 * a matrix ne = [n_in, n_out] becomes rows = n_out, cols = n_in; a vector 1 x ne[0]. The
 * gguf object must outlive the registry; no weight byte is read or copied. */
tp_status tp_gguf_model_weights(const tp_gguf *g, const tp_model_config *config,
                                tp_weights **out);

/* The tokenizer described by the tokenizer.ggml.* keys (docs/tokenizer.md). */
tp_status tp_gguf_tokenizer(const tp_gguf *g, tp_tokenizer **out);

/* How a test model is written. */
typedef struct tp_gguf_test_model {
    uint32_t type;           /* type of the 2-D weights (any tp_type_can_quantize type);
                                1-D tensors are always F32                                */
    uint64_t seed;           /* tp_weights_init_random's seed                             */
    const char *tokenizer;   /* "gpt2" (byte-level BPE) or "llama" (SentencePiece BPE)    */
    const char *pre;         /* tokenizer.ggml.pre for gpt2 ("qwen2", "llama-bpe", ...)   */
} tp_gguf_test_model;

/* Writes PATH: the metadata of config (its arch decides the key prefix and the family's
 * tensor names; llama q/k rows are stored as tp_weights_init_random makes them, unpermuted:
 * they are what NORM-mode execution reads, docs/gguf.md "Test models"), the weights of
 * tp_weights_init_random(config, seed) converted to their types, and a vocabulary of exactly
 * config->vocab tokens synthesised for the tokenizer kind (byte tokens, merges or scored
 * pieces, and special tokens), so that a test can run the whole path from a file. */
tp_status tp_gguf_write_test_model(const char *path, const tp_model_config *config,
                                   const tp_gguf_test_model *how);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_GGUF_MODEL_H */
