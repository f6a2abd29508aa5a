/* Test support: small hand-made vocabularies for the tokenizer tests. */
#ifndef TP_TESTS_TOKENIZER_VOCAB_H
#define TP_TESTS_TOKENIZER_VOCAB_H

#include <stdint.h>
#include <string.h>

#include "tensorplan/tokenizer.h"

#define TV_MAX 300

/* Token texts (NUL-terminated C strings, written already byte-encoded for gpt2) with types
 * (0 entries = normal) and scores; merges "A B". */
typedef struct test_vocab {
    const char *model, *pre;
    size_t n;
    const char *tokens[TV_MAX];
    size_t lens[TV_MAX];
    int32_t types[TV_MAX];
    float scores[TV_MAX];
    size_t n_merges;
    const char *merges[TV_MAX];
    size_t merge_lens[TV_MAX];
} test_vocab;

static inline void tv_fill(tp_vocab_desc *d, test_vocab *v)
{
    tp_vocab_desc_init(d);
    for (size_t i = 0; i < v->n; i++) {
        v->lens[i] = strlen(v->tokens[i]);
        if (v->types[i] == 0)
            v->types[i] = TP_TOKEN_NORMAL;
    }
    for (size_t r = 0; r < v->n_merges; r++)
        v->merge_lens[r] = strlen(v->merges[r]);
    d->model = v->model;
    d->pre = v->pre;
    d->n_tokens = v->n;
    d->tokens = v->tokens;
    d->token_lens = v->lens;
    d->types = v->types;
    d->scores = v->scores;
    d->n_merges = v->n_merges;
    d->merges = v->merges;
    d->merge_lens = v->merge_lens;
}

#endif
