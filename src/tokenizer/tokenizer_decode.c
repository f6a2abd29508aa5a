/* Detokenization (docs/tokenizer.md, "Detokenizing"): pieces, the leading-space strip and the
 * clean-up of spaces before punctuation and contractions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "tokenizer/tokenizer_internal.h"

typedef struct byte_buf {
    char *s;
    size_t len, cap;
} byte_buf;

static tp_status put(byte_buf *b, const char *s, size_t n)
{
    TP_TRY(TP_GROW(&b->s, &b->cap, b->len + n + 1));
    if (n)
        memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
    return TP_OK;
}

/* A normal token of byte-level BPE: each code point back to its byte. */
static tp_status bpe_normal(const tp_tokenizer *t, int32_t id, byte_buf *b)
{
    const char *s = tp_tok_text(t, id);
    size_t n = t->text_len[id];
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = tp_utf8_next(s + i, n - i, &cp);
        int byte = tp_bpe_cp_to_byte(cp);
        if (byte >= 0) {
            char c = (char)byte;
            TP_TRY(put(b, &c, 1));
        } else {
            char u[4], hex[16];
            size_t m = tp_utf8_put(cp, u);
            TP_TRY(put(b, "[UNK_BYTE_0x", 12));
            for (size_t j = 0; j < m; j++) {
                snprintf(hex, sizeof hex, "%02x", (unsigned char)u[j]);
                TP_TRY(put(b, hex, 2));
            }
            TP_TRY(put(b, s, n));
            TP_TRY(put(b, "]", 1));
        }
        i += k;
    }
    return TP_OK;
}

static tp_status spm_normal(const tp_tokenizer *t, int32_t id, byte_buf *b)
{
    const char *s = tp_tok_text(t, id);
    size_t n = t->text_len[id];
    for (size_t i = 0; i < n;) {
        if (i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
            TP_TRY(put(b, " ", 1));
            i += 3;
        } else {
            TP_TRY(put(b, s + i, 1));
            i++;
        }
    }
    return TP_OK;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static tp_status append_piece(const tp_tokenizer *t, int32_t id, int special, byte_buf *b)
{
    const char *s = tp_tok_text(t, id);
    size_t n = t->text_len[id];
    switch (t->types[id]) {
    case TP_TOKEN_CONTROL:
    case TP_TOKEN_UNKNOWN:
        return special ? put(b, s, n) : TP_OK;
    case TP_TOKEN_USER_DEFINED:
        return put(b, s, n);
    case TP_TOKEN_NORMAL:
        return t->model == TP_TOK_SPM ? spm_normal(t, id, b) : bpe_normal(t, id, b);
    case TP_TOKEN_BYTE:
        if (t->model == TP_TOK_SPM && n == 6 && hex_digit(s[3]) >= 0 && hex_digit(s[4]) >= 0) {
            char c = (char)(hex_digit(s[3]) * 16 + hex_digit(s[4]));
            return put(b, &c, 1);
        }
        return TP_OK;
    default:
        return TP_OK;
    }
}

tp_status tp_tokenizer_piece(const tp_tokenizer *t, int32_t id, int special, char *buf,
                             size_t cap, size_t *len)
{
    *len = 0;
    if (id < 0 || (size_t)id >= t->n_vocab)
        return tp_fail(TP_ERR_INVALID, "token %ld is not in the vocabulary of %zu", (long)id,
                       t->n_vocab);
    byte_buf b = {0};
    tp_status st = append_piece(t, id, special, &b);
    if (st == TP_OK) {
        *len = b.len;
        if (cap && b.len)
            memcpy(buf, b.s, b.len < cap ? b.len : cap);
    }
    free(b.s);
    return st;
}

static int is_punct(char c) { return c == '?' || c == '!' || c == '.' || c == ','; }

/* The three clean-up rules, each a pass over the result of the one before. */
static void clean_spaces(char *s, size_t *len)
{
    size_t n = *len, o = 0;
    for (size_t i = 0; i < n; i++) /* (1) no space before ? ! . , */
        if (!(s[i] == ' ' && i + 1 < n && is_punct(s[i + 1])))
            s[o++] = s[i];
    n = o;
    o = 0;
    for (size_t i = 0; i < n; i++) { /* (2) " ' " -> "'" */
        if (s[i] == ' ' && i + 2 < n && s[i + 1] == '\'' && s[i + 2] == ' ') {
            s[o++] = '\'';
            i += 2;
        } else {
            s[o++] = s[i];
        }
    }
    n = o;
    o = 0;
    for (size_t i = 0; i < n; i++) { /* (3) no space before 's 'm 're 've */
        const char *c = s + i + 1;
        size_t left = n - i - 1;
        int drop = s[i] == ' ' && left >= 2 && c[0] == '\'' &&
                   (c[1] == 's' || c[1] == 'm' ||
                    (left >= 3 && ((c[1] == 'r' && c[2] == 'e') || (c[1] == 'v' && c[2] == 'e'))));
        if (!drop)
            s[o++] = s[i];
    }
    s[o] = '\0';
    *len = o;
}

static tp_status decode_into(const tp_tokenizer *t, const int32_t *ids, size_t n,
                             int remove_special, int unparse_special, byte_buf *b)
{
    size_t start = 0, end = n;
    int strip = t->add_space_prefix;
    if (remove_special && t->add_bos && n > 0 && ids[0] == t->bos) {
        start = 1;
        strip = 0;
    }
    if (remove_special && t->add_eos && end > start && ids[end - 1] == t->eos)
        end--;
    TP_TRY(put(b, "", 0));
    for (size_t i = start; i < end; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= t->n_vocab)
            return tp_fail(TP_ERR_INVALID, "detokenize: token %ld (at %zu) is not in the "
                           "vocabulary of %zu", (long)ids[i], i, t->n_vocab);
        size_t before = b->len;
        TP_TRY(append_piece(t, ids[i], unparse_special, b));
        if (i == start && strip && b->len > before && b->s[before] == ' ') {
            memmove(b->s + before, b->s + before + 1, b->len - before - 1);
            b->s[--b->len] = '\0';
        }
    }
    if (t->clean_spaces)
        clean_spaces(b->s, &b->len);
    return TP_OK;
}

tp_status tp_tokenizer_decode(const tp_tokenizer *t, const int32_t *ids, size_t n,
                              int remove_special, int unparse_special, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    byte_buf b = {0};
    tp_status st = decode_into(t, ids, n, remove_special, unparse_special, &b);
    if (st != TP_OK) {
        free(b.s);
        return st;
    }
    *text = b.s;
    *len = b.len;
    return TP_OK;
}
