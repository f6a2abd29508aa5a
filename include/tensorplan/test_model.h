/* tensorplan: test models, GGUF files of either family written with random weights and a
 * synthesised vocabulary (docs/gguf.md, "Test models"), so that every path from a file can be
 * run without downloading one. Part of the loader layer.
 *
 * Example:
 *
 *     tp_model_config config;
 *     tp_gguf_test_model how = {0, 42, "llama", NULL};    // F32 (type 0, quant.h), seed 42
 *     if (tp_model_config_builtin("tiny-llama", &config) != TP_OK)   // 260 tokens and more
 *         return 1;
 *     // then open tiny-llama.gguf as any other model (gguf.h, gguf_model.h)
 *     return tp_gguf_write_test_model("tiny-llama.gguf", &config, &how) == TP_OK ? 0 : 1;
 */
#ifndef TENSORPLAN_TEST_MODEL_H
#define TENSORPLAN_TEST_MODEL_H

#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/model.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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
TP_API tp_status tp_gguf_write_test_model(const char *path, const tp_model_config *config,
                                          const tp_gguf_test_model *how);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_TEST_MODEL_H */
