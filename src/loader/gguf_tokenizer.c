/* The tokenizer of a GGUF file: the tokenizer.ggml.* keys read with their exact types into a
 * tp_vocab_desc (docs/tokenizer.md, "From a GGUF file"), then tp_tokenizer_create. */
#include "tensorplan/gguf_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define KEY(name) "tokenizer.ggml." name

/* The arrays a desc points to while the tokenizer is built (texts stay in the mapping). */
typedef struct vocab_arrays {
    char *model, *pre;
    const char **tokens;
    size_t *token_lens;
    float *scores;
    int32_t *types;
    const char **merges;
    size_t *merge_lens;
} vocab_arrays;

static void arrays_free(vocab_arrays *a)
{
    free(a->model);
    free(a->pre);
    free((void *)a->tokens);
    free(a->token_lens);
    free(a->scores);
    free(a->types);
    free((void *)a->merges);
    free(a->merge_lens);
}

/* An absent optional key is not an error: TP_ERR_NOT_FOUND becomes *present = 0. */
static tp_status optional(tp_status st, int *present)
{
    *present = st == TP_OK;
    if (st == TP_ERR_NOT_FOUND) {
        tp_clear_error();
        return TP_OK;
    }
    return st;
}

static tp_status required(const tp_gguf *g, tp_status st, const char *key)
{
    if (st == TP_ERR_NOT_FOUND)
        return tp_fail(TP_ERR_INVALID, "%s: no key '%s' (the tokenizer needs it)",
                       tp_gguf_name(g), key);
    return st;
}

static tp_status dup_string(const tp_gguf_str *s, char **out);

/* An enumerated value (model, pre): counted bytes, refused with a NUL inside, which a C string
 * comparison would stop at ("gpt2\0x" is no gpt2). */
static tp_status dup_name(const tp_gguf *g, const char *key, const tp_gguf_str *s, char **out)
{
    if (memchr(s->data, '\0', s->len) != NULL)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': the value holds a NUL byte at %zu",
                       tp_gguf_name(g), key, (size_t)((const char *)memchr(s->data, '\0',
                                                                        s->len) - s->data));
    return dup_string(s, out);
}

static tp_status dup_string(const tp_gguf_str *s, char **out)
{
    *out = malloc(s->len + 1);
    if (!*out)
        return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory");
    memcpy(*out, s->data, s->len);
    (*out)[s->len] = '\0';
    return TP_OK;
}

/* A string array into pointers and lengths (into the mapping). */
static tp_status string_views(const tp_gguf_array *arr, const char ***ptrs, size_t **lens)
{
    size_t n = arr->count ? arr->count : 1;
    *ptrs = malloc(n * sizeof **ptrs);
    *lens = malloc(n * sizeof **lens);
    if (!*ptrs || !*lens)
        return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory for %zu strings", arr->count);
    for (size_t i = 0; i < arr->count; i++) {
        tp_gguf_str s = tp_gguf_array_string(arr, i);
        (*ptrs)[i] = s.data;
        (*lens)[i] = s.len;
    }
    return TP_OK;
}

static tp_status check_count(const tp_gguf *g, const char *key, size_t count, size_t n_vocab)
{
    if (count != n_vocab)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected %zu entries (one per token), "
                       "got %zu", tp_gguf_name(g), key, n_vocab, count);
    return TP_OK;
}

/* scores (f32) and token_type (i32), both optional, one entry per token. */
static tp_status read_attrs(const tp_gguf *g, vocab_arrays *a, tp_vocab_desc *d)
{
    tp_gguf_array arr;
    int present = 0;
    TP_TRY(optional(tp_gguf_get_array(g, KEY("scores"), TP_GGUF_F32, &arr), &present));
    if (present) {
        TP_TRY(check_count(g, KEY("scores"), arr.count, d->n_tokens));
        a->scores = malloc(d->n_tokens * sizeof *a->scores);
        if (!a->scores)
            return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory for scores");
        for (size_t i = 0; i < arr.count; i++)
            a->scores[i] = tp_gguf_array_f32(&arr, i);
        d->scores = a->scores;
    }
    TP_TRY(optional(tp_gguf_get_array(g, KEY("token_type"), TP_GGUF_I32, &arr), &present));
    if (present) {
        TP_TRY(check_count(g, KEY("token_type"), arr.count, d->n_tokens));
        a->types = malloc(d->n_tokens * sizeof *a->types);
        if (!a->types)
            return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory for token types");
        for (size_t i = 0; i < arr.count; i++)
            a->types[i] = (int32_t)(uint32_t)tp_gguf_array_bits(&arr, i);
        d->types = a->types;
    }
    return TP_OK;
}

/* The id keys (u32; an id not below the vocabulary size is refused, naming the key) and the
 * flags. */
static tp_status read_ids(const tp_gguf *g, tp_vocab_desc *d)
{
    static const char *const id_keys[] = {
        KEY("bos_token_id"), KEY("eos_token_id"), KEY("unknown_token_id"),
        KEY("padding_token_id"), KEY("eot_token_id"), KEY("eom_token_id"),
        KEY("seperator_token_id"),
    };
    int64_t *ids[] = {&d->bos, &d->eos, &d->unk, &d->pad, &d->eot, &d->eom, &d->sep};
    for (size_t k = 0; k < sizeof id_keys / sizeof *id_keys; k++) {
        uint32_t v = 0;
        int present = 0;
        TP_TRY(optional(tp_gguf_get_u32(g, id_keys[k], &v), &present));
        if (present && v >= d->n_tokens)
            return tp_fail(TP_ERR_INVALID, "%s: key '%s': id %u is not below the number of "
                           "tokens %zu", tp_gguf_name(g), id_keys[k], (unsigned)v, d->n_tokens);
        *ids[k] = present ? (int64_t)v : -1;
    }
    static const char *const flag_keys[] = {
        KEY("add_bos_token"), KEY("add_eos_token"), KEY("add_space_prefix"),
    };
    int *flags[] = {&d->add_bos, &d->add_eos, &d->add_space_prefix};
    for (size_t k = 0; k < sizeof flag_keys / sizeof *flag_keys; k++) {
        int v = 0, present = 0;
        TP_TRY(optional(tp_gguf_get_bool(g, flag_keys[k], &v), &present));
        *flags[k] = present ? (v != 0) : -1;
    }
    return TP_OK;
}

/* model, pre, tokens and merges. */
static tp_status read_texts(const tp_gguf *g, vocab_arrays *a, tp_vocab_desc *d)
{
    tp_gguf_str s;
    TP_TRY(required(g, tp_gguf_get_string(g, KEY("model"), &s), KEY("model")));
    TP_TRY(dup_name(g, KEY("model"), &s, &a->model));
    d->model = a->model;
    int present = 0;
    TP_TRY(optional(tp_gguf_get_string(g, KEY("pre"), &s), &present));
    if (present) {
        TP_TRY(dup_name(g, KEY("pre"), &s, &a->pre));
        d->pre = a->pre;
    }
    tp_gguf_array arr;
    TP_TRY(required(g, tp_gguf_get_array(g, KEY("tokens"), TP_GGUF_STRING, &arr),
                    KEY("tokens")));
    if (arr.count == 0)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': no tokens", tp_gguf_name(g),
                       KEY("tokens"));
    if (arr.count > (size_t)INT32_MAX)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': %zu tokens exceed the id range",
                       tp_gguf_name(g), KEY("tokens"), arr.count);
    TP_TRY(string_views(&arr, &a->tokens, &a->token_lens));
    d->n_tokens = arr.count;
    d->tokens = a->tokens;
    d->token_lens = a->token_lens;
    tp_status st = tp_gguf_get_array(g, KEY("merges"), TP_GGUF_STRING, &arr);
    if (strcmp(a->model, "gpt2") == 0)
        TP_TRY(required(g, st, KEY("merges")));
    else
        TP_TRY(optional(st, &present));
    if (st == TP_OK && strcmp(a->model, "gpt2") == 0) {
        TP_TRY(string_views(&arr, &a->merges, &a->merge_lens));
        d->n_merges = arr.count;
        d->merges = a->merges;
        d->merge_lens = a->merge_lens;
    }
    return TP_OK;
}

tp_status tp_gguf_tokenizer(const tp_gguf *g, tp_tokenizer **out)
{
    if (!g || !out)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_tokenizer: NULL argument");
    *out = NULL;
    vocab_arrays a;
    memset(&a, 0, sizeof a);
    tp_vocab_desc d;
    tp_vocab_desc_init(&d);
    tp_status st = read_texts(g, &a, &d);
    if (st == TP_OK)
        st = read_attrs(g, &a, &d);
    if (st == TP_OK)
        st = read_ids(g, &d);
    if (st == TP_OK) {
        st = tp_tokenizer_create(&d, out);
        if (st != TP_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tp_last_error());
            tp_fail(st, "%s: %s", tp_gguf_name(g), msg);
        }
    }
    arrays_free(&a);
    return st;
}
