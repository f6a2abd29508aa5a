/* tp_tokenizer_encode: the special-token partition, bos/eos, and the model tokenizer applied to
 * each raw fragment (docs/tokenizer.md, "Tokenizing"). */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "tokenizer/tokenizer_internal.h"

/* A fragment of the text: a token already decided (id >= 0) or raw bytes [off, off + len). */
typedef struct fragment {
    int32_t id;
    size_t off, len;
} fragment;

typedef struct frag_list {
    fragment *items;
    size_t count, cap;
} frag_list;

static tp_status frag_push(frag_list *l, int32_t id, size_t off, size_t len)
{
    if (id < 0 && len == 0)
        return TP_OK; /* empty raw parts are dropped */
    TP_TRY(TP_GROW(&l->items, &l->cap, l->count + 1));
    l->items[l->count++] = (fragment){id, off, len};
    return TP_OK;
}

/* The leftmost occurrence of needle in hay, or (size_t)-1. */
static size_t find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0 || m > n)
        return (size_t)-1;
    const char *p = hay, *end = hay + n - m + 1;
    while (p < end) {
        const char *c = memchr(p, needle[0], (size_t)(end - p));
        if (!c)
            break;
        if (memcmp(c, needle, m) == 0)
            return (size_t)(c - hay);
        p = c + 1;
    }
    return (size_t)-1;
}

/* Splits every raw fragment of in at each occurrence of special token id, into out. */
static tp_status split_on(const tp_tokenizer *t, const char *text, int32_t id,
                          const frag_list *in, frag_list *out)
{
    const char *needle = tp_tok_text(t, id);
    size_t m = t->text_len[id];
    out->count = 0;
    for (size_t f = 0; f < in->count; f++) {
        fragment fr = in->items[f];
        if (fr.id >= 0) {
            TP_TRY(frag_push(out, fr.id, fr.off, fr.len));
            continue;
        }
        size_t off = fr.off, left = fr.len, at;
        while ((at = find_bytes(text + off, left, needle, m)) != (size_t)-1) {
            TP_TRY(frag_push(out, -1, off, at));
            TP_TRY(frag_push(out, id, off + at, m));
            off += at + m;
            left -= at + m;
        }
        TP_TRY(frag_push(out, -1, off, left));
    }
    return TP_OK;
}

static tp_status partition(const tp_tokenizer *t, const char *text, size_t len,
                           int parse_special, frag_list *frags)
{
    frag_list other = {0};
    tp_status st = frag_push(frags, -1, 0, len);
    for (size_t k = 0; st == TP_OK && k < t->n_specials; k++) {
        int32_t id = t->specials[k];
        int ty = t->types[id];
        if (!parse_special && (ty == TP_TOKEN_CONTROL || ty == TP_TOKEN_UNKNOWN))
            continue;
        st = split_on(t, text, id, frags, &other);
        frag_list tmp = *frags;
        *frags = other;
        other = tmp;
    }
    free(other.items);
    return st;
}

static tp_status encode_fragments(const tp_tokenizer *t, const char *text,
                                  const frag_list *frags, tp_id_buf *out)
{
    int prev_special = 1; /* the first fragment counts as following a special token */
    for (size_t f = 0; f < frags->count; f++) {
        const fragment *fr = &frags->items[f];
        if (fr->id >= 0) {
            TP_TRY(tp_id_buf_push(out, fr->id));
            prev_special = 1;
        } else if (t->model == TP_TOK_SPM) {
            TP_TRY(tp_spm_encode(t, text + fr->off, fr->len,
                                 t->add_space_prefix && prev_special, out));
            prev_special = 0;
        } else {
            TP_TRY(tp_bpe_encode(t, text + fr->off, fr->len, out));
            prev_special = 0;
        }
    }
    return TP_OK;
}

tp_status tp_tokenizer_encode(const tp_tokenizer *t, const char *text, size_t len,
                              int add_special, int parse_special, int32_t **ids, size_t *n_ids)
{
    *ids = NULL;
    *n_ids = 0;
    if (!text && len)
        return tp_fail(TP_ERR_INVALID, "tokenize: no text");
    frag_list frags = {0};
    tp_id_buf out = {0};
    tp_status st = TP_OK;
    if (add_special && t->add_bos)
        st = tp_id_buf_push(&out, t->bos);
    if (st == TP_OK && len)
        st = partition(t, text, len, parse_special, &frags);
    if (st == TP_OK)
        st = encode_fragments(t, text, &frags, &out);
    if (st == TP_OK && add_special && t->add_eos)
        st = tp_id_buf_push(&out, t->eos);
    free(frags.items);
    if (st != TP_OK) {
        free(out.ids);
        return st;
    }
    *ids = out.ids;
    *n_ids = out.count;
    return TP_OK;
}
