/* Test support: a hand-made test_vocab written as tokenizer.ggml.* keys with the library's
 * GGUF writer (the key names and types restated from docs/tokenizer.md). */
#ifndef TP_TESTS_VOCAB_GGUF_H
#define TP_TESTS_VOCAB_GGUF_H

#include <stdint.h>

#include "support/tokenizer_vocab.h"
#include "tensorplan/gguf.h"

/* Adds tokenizer.ggml.model, .pre (when v->pre), .tokens, .scores, .token_type (0 entries
 * written as 1, normal) and .merges (when v->n_merges). Returns 0, or -1 on a failure. */
static inline int vg_add_vocab(tp_gguf_writer *w, const test_vocab *v)
{
    int32_t types[TV_MAX];
    for (size_t i = 0; i < v->n; i++)
        types[i] = v->types[i] ? v->types[i] : TP_TOKEN_NORMAL;
    if (tp_gguf_writer_add_string(w, "tokenizer.ggml.model", v->model) != TP_OK)
        return -1;
    if (v->pre && tp_gguf_writer_add_string(w, "tokenizer.ggml.pre", v->pre) != TP_OK)
        return -1;
    if (tp_gguf_writer_add_strings(w, "tokenizer.ggml.tokens", v->tokens, v->n) != TP_OK ||
        tp_gguf_writer_add_array(w, "tokenizer.ggml.scores", TP_GGUF_F32, v->scores, v->n) !=
            TP_OK ||
        tp_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TP_GGUF_I32, types, v->n) !=
            TP_OK)
        return -1;
    if (v->n_merges &&
        tp_gguf_writer_add_strings(w, "tokenizer.ggml.merges", v->merges, v->n_merges) != TP_OK)
        return -1;
    return 0;
}

#endif
