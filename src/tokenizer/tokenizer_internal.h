/* Internal: the parts of a tokenizer (docs/tokenizer.md), shared by the files of src/tokenizer. */
#ifndef TP_TOKENIZER_INTERNAL_H
#define TP_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/utf8.h"
#include "tensorplan/tokenizer.h"

/* A hash map from byte strings (owned elsewhere, stable) to int32 values. */
typedef struct tp_strmap_slot {
    const char *key; /* NULL = empty slot */
    size_t len;
    uint64_t hash;
    int32_t value;
} tp_strmap_slot;

typedef struct tp_strmap {
    tp_strmap_slot *slots;
    size_t cap; /* power of two, at least twice the count */
    size_t count;
} tp_strmap;

tp_status tp_strmap_init(tp_strmap *m, size_t expected);
void tp_strmap_free(tp_strmap *m);
/* Inserts key -> value; when the key is present already, leaves it and returns 0, else 1. */
int tp_strmap_put(tp_strmap *m, const char *key, size_t len, int32_t value);
/* The value of key, or -1 when absent. */
int32_t tp_strmap_get(const tp_strmap *m, const char *key, size_t len);

/* A priority queue of candidate pairs: the best entry has the highest key, then the smallest
 * left index (both models break ties by the leftmost pair). */
typedef struct tp_pair_entry {
    double key;
    int32_t left, right;
    size_t size; /* bytes of the pair's concatenation when it was queued */
} tp_pair_entry;

typedef struct tp_pair_queue {
    tp_pair_entry *items;
    size_t count, cap;
} tp_pair_queue;

tp_status tp_pair_queue_push(tp_pair_queue *q, tp_pair_entry e);
int tp_pair_queue_pop(tp_pair_queue *q, tp_pair_entry *out); /* 0 when empty */

/* A symbol of a word being merged: bytes [off, off + n) of the word, linked to its neighbours;
 * n == 0 once merged into its left neighbour. */
typedef struct tp_symbol {
    size_t off, n;
    int32_t prev, next;
} tp_symbol;

enum tp_tok_model { TP_TOK_SPM, TP_TOK_BPE };

#define TP_TOK_MAX_REGEX 4

struct tp_tokenizer {
    enum tp_tok_model model;
    size_t n_vocab;
    char *arena;          /* all token texts, back to back */
    size_t *text_off;     /* token i: arena + text_off[i], text_len[i] bytes */
    size_t *text_len;
    float *scores;
    int32_t *types;
    uint8_t *eog;         /* 1 for the end-of-generation ids */
    tp_strmap by_text;    /* token text -> id */
    char *merge_arena;    /* merge keys: u32 length of A, then A, then B */
    tp_strmap merge_rank; /* merge key -> rank */
    int32_t *specials;    /* control, user-defined and unknown ids, longest text first */
    size_t n_specials;
    int32_t bos, eos, unk, pad, eot, eom, sep;
    int add_bos, add_eos, add_space_prefix, clean_spaces, ignore_merges;
    int32_t byte_token[256]; /* SPM: the id of <0xXX> (else of the one-byte text), -1 = none */
    void *regex[TP_TOK_MAX_REGEX]; /* compiled pre-tokenizer patterns (pcre2_code_8) */
    size_t n_regex;
};

static inline const char *tp_tok_text(const tp_tokenizer *t, int32_t id)
{
    return t->arena + t->text_off[id];
}

/* Output array of an encoding. */
typedef struct tp_id_buf {
    int32_t *ids;
    size_t count, cap;
} tp_id_buf;

tp_status tp_id_buf_push(tp_id_buf *b, int32_t id);

/* Byte-level BPE (tokenizer_bpe.c) and its pre-tokenizer (tokenizer_pretok.c). */
tp_status tp_bpe_set_pre(tp_tokenizer *t, const char *pre);
tp_status tp_bpe_add_merges(tp_tokenizer *t, const tp_vocab_desc *d);
tp_status tp_bpe_encode(const tp_tokenizer *t, const char *text, size_t len, tp_id_buf *out);
/* Splits text (valid UTF-8) into pieces: *spans holds 2 * *n_spans (offset, length) pairs. */
tp_status tp_pretok_split(const tp_tokenizer *t, const char *text, size_t len, size_t **spans,
                          size_t *n_spans);
void tp_pretok_free(tp_tokenizer *t);
/* The byte-level table: bytes -> code points (tokenizer_bpe.c); -1 for code points off it. */
uint32_t tp_bpe_byte_to_cp(uint8_t b);
int tp_bpe_cp_to_byte(uint32_t cp);

/* SentencePiece BPE (tokenizer_spm.c): one raw fragment, space prefix already decided. */
tp_status tp_spm_encode(const tp_tokenizer *t, const char *text, size_t len, int space_prefix,
                        tp_id_buf *out);
void tp_spm_init_bytes(tp_tokenizer *t);

#endif
