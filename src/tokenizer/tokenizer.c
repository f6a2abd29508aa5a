/* Building a tokenizer from a tp_vocab_desc: token texts, types, defaults, special tokens and
 * the end-of-generation set (docs/tokenizer.md, "Vocabulary"). */
#include "tensorplan/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "tokenizer/tokenizer_internal.h"

/* Texts that end a turn: forced to control and put in the end-of-generation set. */
static const char *const EOG_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|endoftext|>", "<|end_of_text|>",
    "<|eom_id|>", "<end_of_turn>", "<EOT>", "_<EOT>", "<end_of_utterance>",
    /* fill-in-the-middle padding, repository and file separators end generation too */
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
    "<REPO>", "<reponame>", "<|file_sep|>", "<|file_separator|>", "<file_sep>", "<filename>",
};
/* Other fill-in-the-middle texts: forced to control only. */
static const char *const FIM_TEXTS[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>", "\xe2\x96\x81<PRE>",
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>", "\xe2\x96\x81<SUF>",
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>", "\xe2\x96\x81<MID>",
};

void tp_vocab_desc_init(tp_vocab_desc *d)
{
    memset(d, 0, sizeof *d);
    d->bos = d->eos = d->unk = d->pad = d->eot = d->eom = d->sep = -1;
    d->add_bos = d->add_eos = d->add_space_prefix = -1;
}

static tp_status copy_texts(tp_tokenizer *t, const tp_vocab_desc *d)
{
    size_t n = d->n_tokens, total = 0;
    char empty[40];
    for (size_t i = 0; i < n; i++) {
        size_t len = d->token_lens[i] ? d->token_lens[i]
                                      : (size_t)snprintf(empty, sizeof empty, "[EMPTY_%zu]", i);
        if (total > ((size_t)-1) - len - 1)
            return tp_fail(TP_ERR_OVERFLOW, "tokenizer: token texts overflow size_t");
        total += len + 1;
    }
    t->arena = malloc(total ? total : 1);
    t->text_off = malloc(n * sizeof *t->text_off);
    t->text_len = malloc(n * sizeof *t->text_len);
    if (!t->arena || !t->text_off || !t->text_len)
        return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory for %zu token texts", n);
    TP_TRY(tp_strmap_init(&t->by_text, n));
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = d->token_lens[i];
        if (len)
            memcpy(t->arena + pos, d->tokens[i], len);
        else
            len = (size_t)snprintf(t->arena + pos, 40, "[EMPTY_%zu]", i);
        t->arena[pos + len] = '\0';
        t->text_off[i] = pos;
        t->text_len[i] = len;
        if (!tp_strmap_put(&t->by_text, t->arena + pos, len, (int32_t)i))
            return tp_fail(TP_ERR_INVALID, "tokenizer: token %zu repeats the text \"%.*s\" of "
                           "token %d", i, (int)(len > 64 ? 64 : len), t->arena + pos,
                           tp_strmap_get(&t->by_text, t->arena + pos, len));
        pos += len + 1;
    }
    return TP_OK;
}

static tp_status copy_attrs(tp_tokenizer *t, const tp_vocab_desc *d)
{
    size_t n = d->n_tokens;
    t->scores = calloc(n, sizeof *t->scores);
    t->types = malloc(n * sizeof *t->types);
    t->eog = calloc(n, 1);
    if (!t->scores || !t->types || !t->eog)
        return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory for %zu token types", n);
    for (size_t i = 0; i < n; i++) {
        if (d->scores)
            t->scores[i] = d->scores[i];
        t->types[i] = d->types ? d->types[i] : TP_TOKEN_NORMAL;
    }
    for (size_t k = 0; k < sizeof EOG_TEXTS / sizeof *EOG_TEXTS; k++) {
        int32_t id = tp_strmap_get(&t->by_text, EOG_TEXTS[k], strlen(EOG_TEXTS[k]));
        if (id >= 0) {
            t->types[id] = TP_TOKEN_CONTROL;
            t->eog[id] = 1;
        }
    }
    for (size_t k = 0; k < sizeof FIM_TEXTS / sizeof *FIM_TEXTS; k++) {
        int32_t id = tp_strmap_get(&t->by_text, FIM_TEXTS[k], strlen(FIM_TEXTS[k]));
        if (id >= 0)
            t->types[id] = TP_TOKEN_CONTROL;
    }
    return TP_OK;
}

/* A desc id: the default when absent or not a token. */
static int32_t pick_id(int64_t given, int32_t dflt, size_t n)
{
    int64_t v = (given >= 0 && (uint64_t)given < n) ? given : dflt;
    return (v >= 0 && (uint64_t)v < n) ? (int32_t)v : -1;
}

static tp_status set_defaults(tp_tokenizer *t, const tp_vocab_desc *d)
{
    size_t n = t->n_vocab;
    int spm = t->model == TP_TOK_SPM;
    t->bos = pick_id(d->bos, spm ? 1 : 11, n);
    t->eos = pick_id(d->eos, spm ? 2 : 11, n);
    t->unk = pick_id(d->unk, spm ? 0 : -1, n);
    t->pad = pick_id(d->pad, -1, n);
    t->eot = pick_id(d->eot, -1, n);
    t->eom = pick_id(d->eom, -1, n);
    t->sep = pick_id(d->sep, -1, n);
    t->add_bos = d->add_bos >= 0 ? d->add_bos != 0 : (spm || t->ignore_merges);
    t->add_eos = d->add_eos >= 0 ? d->add_eos != 0 : 0;
    t->add_space_prefix = d->add_space_prefix >= 0 ? d->add_space_prefix != 0 : spm;
    if (t->add_bos && t->bos < 0)
        return tp_fail(TP_ERR_INVALID, "tokenizer: add_bos is set but bos %lld is not a token "
                       "of %zu", (long long)(d->bos >= 0 ? d->bos : (spm ? 1 : 11)), n);
    if (t->add_eos && t->eos < 0)
        return tp_fail(TP_ERR_INVALID, "tokenizer: add_eos is set but eos %lld is not a token "
                       "of %zu", (long long)(d->eos >= 0 ? d->eos : (spm ? 2 : 11)), n);
    int32_t ends[3] = {t->eos, t->eot, t->eom};
    for (int k = 0; k < 3; k++)
        if (ends[k] >= 0)
            t->eog[ends[k]] = 1;
    return TP_OK;
}

typedef struct special_key {
    size_t len;
    int32_t id;
} special_key;

static int by_length_then_id(const void *a, const void *b)
{
    const special_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* Candidates of the special-token partition: control, user-defined and unknown tokens,
 * longest text first, ties by ascending id. */
static tp_status collect_specials(tp_tokenizer *t)
{
    special_key *keys = malloc(t->n_vocab * sizeof *keys);
    t->specials = malloc(t->n_vocab * sizeof *t->specials);
    if (!keys || !t->specials) {
        free(keys);
        return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory for the special tokens");
    }
    size_t n = 0;
    for (size_t i = 0; i < t->n_vocab; i++) {
        int ty = t->types[i];
        if (ty == TP_TOKEN_CONTROL || ty == TP_TOKEN_USER_DEFINED || ty == TP_TOKEN_UNKNOWN)
            keys[n++] = (special_key){t->text_len[i], (int32_t)i};
    }
    qsort(keys, n, sizeof *keys, by_length_then_id);
    for (size_t k = 0; k < n; k++)
        t->specials[k] = keys[k].id;
    t->n_specials = n;
    free(keys);
    return TP_OK;
}

static tp_status build(tp_tokenizer *t, const tp_vocab_desc *d)
{
    if (!d->model || (strcmp(d->model, "gpt2") != 0 && strcmp(d->model, "llama") != 0))
        return tp_fail(TP_ERR_INVALID, "tokenizer: model \"%s\" is not supported (gpt2, llama)",
                       d->model ? d->model : "(none)");
    if (d->n_tokens == 0 || !d->tokens || !d->token_lens)
        return tp_fail(TP_ERR_INVALID, "tokenizer: the vocabulary has no tokens");
    if (d->n_tokens > INT32_MAX)
        return tp_fail(TP_ERR_INVALID, "tokenizer: %zu tokens exceed int32 ids", d->n_tokens);
    t->model = strcmp(d->model, "gpt2") == 0 ? TP_TOK_BPE : TP_TOK_SPM;
    t->n_vocab = d->n_tokens;
    if (t->model == TP_TOK_BPE)
        TP_TRY(tp_bpe_set_pre(t, d->pre));
    TP_TRY(copy_texts(t, d));
    TP_TRY(copy_attrs(t, d));
    TP_TRY(set_defaults(t, d));
    TP_TRY(collect_specials(t));
    if (t->model == TP_TOK_BPE)
        TP_TRY(tp_bpe_add_merges(t, d));
    else
        tp_spm_init_bytes(t);
    return TP_OK;
}

tp_status tp_tokenizer_create(const tp_vocab_desc *desc, tp_tokenizer **out)
{
    *out = NULL;
    if (!desc)
        return tp_fail(TP_ERR_INVALID, "tokenizer: no vocabulary");
    tp_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory");
    tp_status st = build(t, desc);
    if (st != TP_OK) {
        tp_tokenizer_destroy(t);
        return st;
    }
    *out = t;
    return TP_OK;
}

void tp_tokenizer_destroy(tp_tokenizer *t)
{
    if (!t)
        return;
    tp_pretok_free(t);
    tp_strmap_free(&t->by_text);
    tp_strmap_free(&t->merge_rank);
    free(t->merge_arena);
    free(t->specials);
    free(t->arena);
    free(t->text_off);
    free(t->text_len);
    free(t->scores);
    free(t->types);
    free(t->eog);
    free(t);
}

const char *tp_tokenizer_token_text(const tp_tokenizer *t, int32_t id, size_t *len)
{
    if (id < 0 || (size_t)id >= t->n_vocab)
        return NULL;
    if (len)
        *len = t->text_len[id];
    return tp_tok_text(t, id);
}

int tp_tokenizer_token_type(const tp_tokenizer *t, int32_t id)
{
    return (id < 0 || (size_t)id >= t->n_vocab) ? -1 : t->types[id];
}

int tp_tokenizer_is_eog(const tp_tokenizer *t, int32_t id)
{
    return id >= 0 && (size_t)id < t->n_vocab && t->eog[id];
}

size_t tp_tokenizer_n_vocab(const tp_tokenizer *t) { return t->n_vocab; }
int32_t tp_tokenizer_bos(const tp_tokenizer *t) { return t->bos; }
int32_t tp_tokenizer_eos(const tp_tokenizer *t) { return t->eos; }
int tp_tokenizer_add_bos(const tp_tokenizer *t) { return t->add_bos; }
int tp_tokenizer_add_eos(const tp_tokenizer *t) { return t->add_eos; }
