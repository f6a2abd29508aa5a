/* Internal: the vocabulary a test model carries (docs/gguf.md, "Test models"). */
#ifndef TP_LOADER_TEST_MODEL_VOCAB_H
#define TP_LOADER_TEST_MODEL_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/status.h"

typedef struct gm_vocab {
    size_t n, cap, cap_types, cap_scores;
    char **tokens; /* NUL-terminated texts */
    int32_t *types;
    float *scores;
    size_t n_merges, cap_merges;
    char **merges; /* "A B" */
    int64_t bos, eos, unk; /* -1 when none */
} gm_vocab;

/* Exactly n_vocab tokens for KIND "gpt2" (256 byte-level tokens, learnt merges,
 * <|endoftext|> <|im_start|> <|im_end|> as control tokens) or "llama" (<unk> <s> </s>, the
 * 256 <0xXX> byte tokens, scored pieces). */
tp_status gm_vocab_build(gm_vocab *v, const char *kind, size_t n_vocab);
void gm_vocab_free(gm_vocab *v);

#endif
