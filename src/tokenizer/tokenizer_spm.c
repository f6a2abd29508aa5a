/* SentencePiece-style BPE (docs/tokenizer.md, "SentencePiece BPE"): pairs merged by the score
 * of the token they form, byte fallback through <0xXX>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "tokenizer/tokenizer_internal.h"

void tp_spm_init_bytes(tp_tokenizer *t)
{
    for (unsigned b = 0; b < 256; b++) {
        char hex[8];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        int32_t id = tp_strmap_get(&t->by_text, hex, 6);
        if (id < 0) {
            char one = (char)b;
            id = tp_strmap_get(&t->by_text, &one, 1);
        }
        t->byte_token[b] = id;
    }
}

typedef struct spm_work {
    char *text;
    size_t len;
    tp_symbol *sym;
    tp_pair_queue queue;
} spm_work;

static tp_status queue_pair(const tp_tokenizer *t, spm_work *w, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return TP_OK;
    size_t size = w->sym[l].n + w->sym[r].n;
    int32_t id = tp_strmap_get(&t->by_text, w->text + w->sym[l].off, size);
    if (id < 0)
        return TP_OK;
    tp_pair_entry e = {(double)t->scores[id], l, r, size};
    return tp_pair_queue_push(&w->queue, e);
}

/* " " -> U+2581 everywhere, with one more in front when space_prefix. */
static tp_status escape(const char *text, size_t len, int space_prefix, spm_work *w)
{
    if (len > ((size_t)-1) / 3 - 3)
        return tp_fail(TP_ERR_OVERFLOW, "tokenize: text of %zu bytes is too long", len);
    w->text = malloc(3 * len + 4);
    if (!w->text)
        return tp_fail(TP_ERR_NOMEM, "tokenize: out of memory for %zu bytes", len);
    size_t n = 0;
    if (space_prefix) {
        memcpy(w->text, "\xe2\x96\x81", 3);
        n = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(w->text + n, "\xe2\x96\x81", 3);
            n += 3;
        } else {
            w->text[n++] = text[i];
        }
    }
    w->len = n;
    return TP_OK;
}

static tp_status merge(const tp_tokenizer *t, spm_work *w)
{
    size_t n = 0;
    w->sym = malloc((w->len ? w->len : 1) * sizeof *w->sym);
    if (!w->sym)
        return tp_fail(TP_ERR_NOMEM, "tokenize: out of memory for %zu symbols", w->len);
    for (size_t off = 0; off < w->len;) {
        unsigned b = (unsigned char)w->text[off];
        size_t k = b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        if (k > w->len - off)
            k = w->len - off;
        w->sym[n] = (tp_symbol){off, k, (int32_t)n - 1, off + k < w->len ? (int32_t)n + 1 : -1};
        n++;
        off += k;
    }
    for (size_t i = 0; i + 1 < n; i++)
        TP_TRY(queue_pair(t, w, (int32_t)i, (int32_t)i + 1));
    tp_pair_entry e;
    while (tp_pair_queue_pop(&w->queue, &e)) {
        tp_symbol *a = &w->sym[e.left], *b = &w->sym[e.right];
        if (a->n == 0 || b->n == 0 || a->n + b->n != e.size)
            continue;
        a->n += b->n;
        b->n = 0;
        a->next = b->next;
        if (b->next >= 0)
            w->sym[b->next].prev = e.left;
        TP_TRY(queue_pair(t, w, a->prev, e.left));
        TP_TRY(queue_pair(t, w, e.left, a->next));
    }
    return TP_OK;
}

static tp_status emit(const tp_tokenizer *t, const spm_work *w, tp_id_buf *out)
{
    for (int32_t i = 0; i >= 0; i = w->sym[i].next) {
        const tp_symbol *y = &w->sym[i];
        int32_t id = tp_strmap_get(&t->by_text, w->text + y->off, y->n);
        if (id >= 0) {
            TP_TRY(tp_id_buf_push(out, id));
            continue;
        }
        for (size_t k = 0; k < y->n; k++) {
            unsigned char b = (unsigned char)w->text[y->off + k];
            if (t->byte_token[b] < 0)
                return tp_fail(TP_ERR_INVALID, "tokenize: byte 0x%02X has no token (no <0x%02X>"
                               " and no one-byte text)", b, b);
            TP_TRY(tp_id_buf_push(out, t->byte_token[b]));
        }
    }
    return TP_OK;
}

tp_status tp_spm_encode(const tp_tokenizer *t, const char *text, size_t len, int space_prefix,
                        tp_id_buf *out)
{
    spm_work w = {0};
    tp_status st = escape(text, len, space_prefix, &w);
    if (st == TP_OK && w.len > 0) {
        st = merge(t, &w);
        if (st == TP_OK)
            st = emit(t, &w, out);
    }
    free(w.text);
    free(w.sym);
    free(w.queue.items);
    return st;
}
