/* Vocabularies synthesised for test models (docs/gguf.md, "Test models"): byte tokens, pieces
 * learnt by a deterministic BPE over a fixed list of English words, special tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "loader/test_model_vocab.h"
#include "tensorplan/tokenizer.h"

/* Common English words, most frequent first (a word's weight falls with its position). */
static const char *const corpus[] = {
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be",
    "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have",
    "an", "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has",
    "there", "been", "if", "more", "when", "will", "would", "who", "so", "no", "she", "other",
    "its", "may", "these", "about", "them", "than", "some", "time", "into", "only", "do",
    "could", "new", "then", "first", "any", "my", "now", "such", "like", "our", "over", "man",
    "me", "even", "most", "made", "after", "also", "did", "many", "before", "must", "through",
    "years", "where", "much", "your", "way", "well", "down", "should", "because", "each",
    "just", "those", "people", "how", "too", "little", "state", "good", "very", "make",
    "world", "still", "own", "see", "men", "work", "long", "get", "here", "between", "both",
    "life", "being", "under", "never", "day", "same", "another", "know", "while", "last",
    "might", "us", "great", "old", "year", "off", "come", "since", "against", "go", "came",
    "right", "used", "take", "three", "hello", "model", "memory", "token", "cat", "dog",
    "house", "water", "number", "small", "large", "quick", "brown", "fox", "jumps", "lazy",
};
#define CORPUS_N (sizeof corpus / sizeof corpus[0])
#define MAX_SYM 24

static tp_status push_token(gm_vocab *v, const char *text, size_t len, int32_t type, float score)
{
    TP_TRY(TP_GROW(&v->tokens, &v->cap, v->n + 1));
    TP_TRY(TP_GROW(&v->types, &v->cap_types, v->n + 1));
    TP_TRY(TP_GROW(&v->scores, &v->cap_scores, v->n + 1));
    char *s = malloc(len + 1);
    if (!s)
        return tp_fail(TP_ERR_NOMEM, "test vocabulary: out of memory");
    memcpy(s, text, len);
    s[len] = '\0';
    v->tokens[v->n] = s;
    v->types[v->n] = type;
    v->scores[v->n] = score;
    v->n++;
    return TP_OK;
}

static tp_status push_merge(gm_vocab *v, const char *a, const char *b)
{
    TP_TRY(TP_GROW(&v->merges, &v->cap_merges, v->n_merges + 1));
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 2);
    if (!s)
        return tp_fail(TP_ERR_NOMEM, "test vocabulary: out of memory");
    memcpy(s, a, la);
    s[la] = ' ';
    memcpy(s + la + 1, b, lb + 1);
    v->merges[v->n_merges++] = s;
    return TP_OK;
}

static long find_token(const gm_vocab *v, const char *text)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->tokens[i], text) == 0)
            return (long)i;
    return -1;
}

void gm_vocab_free(gm_vocab *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->tokens[i]);
    for (size_t i = 0; i < v->n_merges; i++)
        free(v->merges[i]);
    free(v->tokens);
    free(v->types);
    free(v->scores);
    free(v->merges);
    memset(v, 0, sizeof *v);
}

/* The words being merged: each a row of symbol token ids and a weight. */
typedef struct words {
    long sym[CORPUS_N][MAX_SYM];
    int len[CORPUS_N];
} words;

typedef struct pair_count {
    long a, b, count, first;
} pair_count;

static int by_pair(const void *x, const void *y)
{
    const pair_count *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return p->first < q->first ? -1 : p->first > q->first;
}

/* The most frequent adjacent pair (ties: the one met first); 0 when there is none. */
static int best_pair(const words *w, pair_count *pairs, long *a, long *b)
{
    size_t n = 0;
    long pos = 0;
    for (size_t i = 0; i < CORPUS_N; i++)
        for (int j = 0; j + 1 < w->len[i]; j++, pos++)
            pairs[n++] = (pair_count){w->sym[i][j], w->sym[i][j + 1],
                                      (long)(CORPUS_N - i), pos};
    if (n == 0)
        return 0;
    qsort(pairs, n, sizeof *pairs, by_pair);
    long best = -1, best_first = 0;
    for (size_t i = 0; i < n;) {
        size_t k = i;
        long count = 0;
        for (; k < n && pairs[k].a == pairs[i].a && pairs[k].b == pairs[i].b; k++)
            count += pairs[k].count;
        if (count > best || (count == best && pairs[i].first < best_first)) {
            best = count;
            best_first = pairs[i].first;
            *a = pairs[i].a;
            *b = pairs[i].b;
        }
        i = k;
    }
    return 1;
}

static void apply_merge(words *w, long a, long b, long ab)
{
    for (size_t i = 0; i < CORPUS_N; i++) {
        int out = 0;
        for (int j = 0; j < w->len[i]; j++) {
            if (j + 1 < w->len[i] && w->sym[i][j] == a && w->sym[i][j + 1] == b) {
                w->sym[i][out++] = ab;
                j++;
            } else {
                w->sym[i][out++] = w->sym[i][j];
            }
        }
        w->len[i] = out;
    }
}

/* Merges pairs of the corpus until the vocabulary holds target tokens or nothing is left to
 * merge; spm: pieces scored by rank, gpt2: merges recorded. */
static tp_status learn(gm_vocab *v, words *w, size_t target, int spm)
{
    pair_count *pairs = malloc(CORPUS_N * MAX_SYM * sizeof *pairs);
    if (!pairs)
        return tp_fail(TP_ERR_NOMEM, "test vocabulary: out of memory");
    tp_status st = TP_OK;
    long a = 0, b = 0;
    size_t rank = 0;
    while (st == TP_OK && v->n < target && best_pair(w, pairs, &a, &b)) {
        char text[256];
        snprintf(text, sizeof text, "%s%s", v->tokens[a], v->tokens[b]);
        long ab = find_token(v, text);
        if (!spm)
            st = push_merge(v, v->tokens[a], v->tokens[b]);
        if (st == TP_OK && ab < 0) {
            ab = (long)v->n;
            st = push_token(v, text, strlen(text), TP_TOKEN_NORMAL, -(float)(++rank));
        }
        apply_merge(w, a, b, ab);
    }
    free(pairs);
    return st;
}

/* Symbols of word i: the prefix (space marker) then one symbol per byte-level character. */
static tp_status split_words(gm_vocab *v, words *w, const char *prefix, int spm)
{
    for (size_t i = 0; i < CORPUS_N; i++) {
        char sym[8];
        snprintf(sym, sizeof sym, "%s", prefix);
        w->len[i] = 0;
        for (const char *p = corpus[i]; ; p++) {
            long id = find_token(v, sym);
            if (id < 0) {
                if (!spm)
                    return tp_fail(TP_ERR_INVALID, "test vocabulary: no token '%s'", sym);
                id = (long)v->n;
                TP_TRY(push_token(v, sym, strlen(sym), TP_TOKEN_NORMAL, -1e6f));
            }
            w->sym[i][w->len[i]++] = id;
            if (!*p)
                break;
            sym[0] = *p;
            sym[1] = '\0';
        }
    }
    return TP_OK;
}

/* Filler tokens when the corpus is exhausted, then the special tokens. */
static tp_status fill_to(gm_vocab *v, size_t n, int32_t type)
{
    for (size_t k = 0; v->n < n; k++) {
        char text[32];
        snprintf(text, sizeof text, "<extra_%zu>", k);
        TP_TRY(push_token(v, text, strlen(text), type, -2e6f));
    }
    return TP_OK;
}

static tp_status build_gpt2(gm_vocab *v, size_t n_vocab, words *w)
{
    static const char *const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    if (n_vocab < 256 + 3)
        return tp_fail(TP_ERR_INVALID, "test vocabulary: gpt2 needs at least 259 tokens, got %zu",
                       n_vocab);
    for (unsigned b = 0; b < 256; b++) {
        char t[3];
        tp_bpe_byte_text((uint8_t)b, t);
        TP_TRY(push_token(v, t, strlen(t), TP_TOKEN_NORMAL, 0.0f));
    }
    char space[3];
    tp_bpe_byte_text((uint8_t)' ', space);
    TP_TRY(split_words(v, w, space, 0));
    TP_TRY(learn(v, w, n_vocab - 3, 0));
    TP_TRY(fill_to(v, n_vocab - 3, TP_TOKEN_NORMAL));
    v->bos = v->eos = (int64_t)v->n;
    for (size_t i = 0; i < 3; i++)
        TP_TRY(push_token(v, specials[i], strlen(specials[i]), TP_TOKEN_CONTROL, 0.0f));
    return TP_OK;
}

static tp_status build_spm(gm_vocab *v, size_t n_vocab, words *w)
{
    if (n_vocab < 3 + 256 + 1)
        return tp_fail(TP_ERR_INVALID, "test vocabulary: llama needs at least 260 tokens, got "
                       "%zu", n_vocab);
    TP_TRY(push_token(v, "<unk>", 5, TP_TOKEN_UNKNOWN, 0.0f));
    TP_TRY(push_token(v, "<s>", 3, TP_TOKEN_CONTROL, 0.0f));
    TP_TRY(push_token(v, "</s>", 4, TP_TOKEN_CONTROL, 0.0f));
    v->unk = 0;
    v->bos = 1;
    v->eos = 2;
    for (unsigned b = 0; b < 256; b++) {
        char t[8];
        snprintf(t, sizeof t, "<0x%02X>", b);
        TP_TRY(push_token(v, t, 6, TP_TOKEN_BYTE, 0.0f));
    }
    TP_TRY(split_words(v, w, "\xE2\x96\x81", 1));
    if (v->n > n_vocab)
        return tp_fail(TP_ERR_INVALID, "test vocabulary: llama needs at least %zu tokens, got "
                       "%zu", v->n, n_vocab);
    TP_TRY(learn(v, w, n_vocab, 1));
    return fill_to(v, n_vocab, TP_TOKEN_NORMAL);
}

tp_status gm_vocab_build(gm_vocab *v, const char *kind, size_t n_vocab)
{
    memset(v, 0, sizeof *v);
    v->bos = v->eos = v->unk = -1;
    words *w = calloc(1, sizeof *w);
    if (!w)
        return tp_fail(TP_ERR_NOMEM, "test vocabulary: out of memory");
    tp_status st;
    if (kind && strcmp(kind, "gpt2") == 0)
        st = build_gpt2(v, n_vocab, w);
    else if (kind && strcmp(kind, "llama") == 0)
        st = build_spm(v, n_vocab, w);
    else
        st = tp_fail(TP_ERR_INVALID, "test vocabulary: tokenizer '%s' is not gpt2 or llama",
                     kind ? kind : "(null)");
    free(w);
    if (st != TP_OK)
        gm_vocab_free(v);
    return st;
}
