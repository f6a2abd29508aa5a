/* Test support: small hand-made vocabularies for the tokenizer tests, and a check of the ids
 * a text encodes to. */
#ifndef TP_TESTS_TOKENIZER_VOCAB_H
#define TP_TESTS_TOKENIZER_VOCAB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tensorplan/tokenizer.h"

#define TV_SP "\xe2\x96\x81" /* U+2581 */

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

/* The SentencePiece vocabulary the SentencePiece, GGUF vocabulary and tokenize CLI tests
 * derive their expectations from:
 * 0 <unk> 1 <s> 2 </s> 3 ▁ 4 h 5 e 6 l 7 o 8 i 9 a 10 ▁h 11 he 12 ll 13 ▁he 14 llo
 * 15 ▁hello 16 hi 17 ▁hi 18 aa 19 <0x21> 20 <0xC3> 21 <0xA9> */
static inline void tv_spm_vocab(test_vocab *v)
{
    static const char *const texts[] = {
        "<unk>", "<s>", "</s>", TV_SP, "h", "e", "l", "o", "i", "a", TV_SP "h", "he", "ll",
        TV_SP "he", "llo", TV_SP "hello", "hi", TV_SP "hi", "aa", "<0x21>", "<0xC3>", "<0xA9>"};
    static const float scores[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -10,
                                   -7, -1, 0, 0, 0};
    memset(v, 0, sizeof *v);
    v->model = "llama";
    v->n = sizeof texts / sizeof *texts;
    for (size_t i = 0; i < v->n; i++) {
        v->tokens[i] = texts[i];
        v->scores[i] = scores[i];
    }
    v->types[0] = TP_TOKEN_UNKNOWN;
    v->types[1] = v->types[2] = TP_TOKEN_CONTROL;
    v->types[19] = v->types[20] = v->types[21] = TP_TOKEN_BYTE;
}

/* A literal id list and its length, as the last two arguments of tv_expect_ids. */
#define IDS(...) ((const int32_t[]){__VA_ARGS__}), (sizeof((const int32_t[]){__VA_ARGS__}) / 4)

/* Fails unless TEXT encodes to exactly the n_want ids of WANT (both lists printed if not). */
static inline void tv_expect_ids(const tp_tokenizer *t, const char *text, int add_special,
                                 int parse_special, const int32_t *want, size_t n_want)
{
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(tp_tokenizer_encode(t, text, strlen(text), add_special, parse_special,
                                         &ids, &n),
                     TP_OK);
    if (n != n_want || (n && memcmp(ids, want, n * sizeof *ids) != 0)) {
        fprintf(stderr, "\"%s\": want", text);
        for (size_t i = 0; i < n_want; i++)
            fprintf(stderr, " %d", want[i]);
        fprintf(stderr, ", got");
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
        fail();
    }
    free(ids);
}

#endif
