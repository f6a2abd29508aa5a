/* Byte-level BPE (docs/tokenizer.md, "Byte-level BPE"): the byte table, the merge ranks and
 * the merge queue applied to each pre-tokenized piece. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "tokenizer/tokenizer_internal.h"

static int byte_is_kept(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

uint32_t tp_bpe_byte_to_cp(uint8_t b)
{
    if (byte_is_kept(b))
        return b;
    /* the bytes that are not kept, in increasing order, map to U+0100, U+0101, ... */
    uint32_t k = 0;
    for (unsigned c = 0; c < b; c++)
        k += !byte_is_kept(c);
    return 0x100 + k;
}

size_t tp_bpe_byte_text(uint8_t b, char out[3])
{
    const size_t n = tp_utf8_put(tp_bpe_byte_to_cp(b), out); /* code points < 0x800 */
    out[n] = '\0';
    return n;
}

int tp_bpe_cp_to_byte(uint32_t cp)
{
    if (cp < 0x100)
        return byte_is_kept(cp) ? (int)cp : -1;
    uint32_t k = 0;
    for (unsigned c = 0; c < 256; c++)
        if (!byte_is_kept(c) && 0x100 + k++ == cp)
            return (int)c;
    return -1;
}

tp_status tp_bpe_add_merges(tp_tokenizer *t, const tp_vocab_desc *d)
{
    size_t total = 1;
    for (size_t r = 0; r < d->n_merges; r++) {
        if (d->merge_lens[r] > UINT32_MAX || total > ((size_t)-1) - d->merge_lens[r] - 4)
            return tp_fail(TP_ERR_OVERFLOW, "tokenizer: merge %zu is too long", r);
        total += d->merge_lens[r] + 4;
    }
    if (d->n_merges > INT32_MAX)
        return tp_fail(TP_ERR_INVALID, "tokenizer: %zu merges exceed int32 ranks", d->n_merges);
    t->merge_arena = malloc(total);
    if (!t->merge_arena)
        return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory for %zu merges", d->n_merges);
    TP_TRY(tp_strmap_init(&t->merge_rank, d->n_merges));
    size_t pos = 0;
    for (size_t r = 0; r < d->n_merges; r++) {
        const char *m = d->merges[r];
        size_t n = d->merge_lens[r];
        const char *sp = n > 1 ? memchr(m + 1, ' ', n - 1) : NULL;
        if (!sp)
            continue; /* no pair: such an entry can never match */
        uint32_t la = (uint32_t)(sp - m);
        char *key = t->merge_arena + pos;
        memcpy(key, &la, 4);
        memcpy(key + 4, m, la);
        memcpy(key + 4 + la, sp + 1, n - la - 1);
        /* the first occurrence of a pair keeps its rank */
        tp_strmap_put(&t->merge_rank, key, 4 + n - 1, (int32_t)r);
        pos += 4 + n - 1;
    }
    return TP_OK;
}

/* Buffers reused over the pieces of one encode call. */
typedef struct bpe_scratch {
    char *enc;
    size_t enc_cap;
    char *key;
    size_t key_cap;
    tp_symbol *sym;
    size_t sym_cap;
    tp_pair_queue queue;
} bpe_scratch;

static tp_status byte_encode(const char *piece, size_t len, bpe_scratch *s, size_t *out_len)
{
    TP_TRY(TP_GROW(&s->enc, &s->enc_cap, len * 2 + 1));
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += tp_utf8_put(tp_bpe_byte_to_cp((uint8_t)piece[i]), s->enc + n);
    *out_len = n;
    return TP_OK;
}

static tp_status queue_pair(const tp_tokenizer *t, bpe_scratch *s, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return TP_OK;
    const tp_symbol *a = &s->sym[l], *b = &s->sym[r];
    TP_TRY(TP_GROW(&s->key, &s->key_cap, 4 + a->n + b->n));
    uint32_t la = (uint32_t)a->n;
    memcpy(s->key, &la, 4);
    memcpy(s->key + 4, s->enc + a->off, a->n);
    memcpy(s->key + 4 + a->n, s->enc + b->off, b->n);
    int32_t rank = tp_strmap_get(&t->merge_rank, s->key, 4 + a->n + b->n);
    if (rank < 0)
        return TP_OK;
    tp_pair_entry e = {-(double)rank, l, r, a->n + b->n};
    return tp_pair_queue_push(&s->queue, e);
}

static tp_status merge_symbols(const tp_tokenizer *t, bpe_scratch *s, size_t len)
{
    size_t n = 0;
    TP_TRY(TP_GROW(&s->sym, &s->sym_cap, len));
    for (size_t off = 0; off < len;) {
        uint32_t cp;
        size_t k = tp_utf8_next(s->enc + off, len - off, &cp);
        s->sym[n] = (tp_symbol){off, k, (int32_t)n - 1, off + k < len ? (int32_t)n + 1 : -1};
        n++;
        off += k;
    }
    s->queue.count = 0;
    for (size_t i = 0; i + 1 < n; i++)
        TP_TRY(queue_pair(t, s, (int32_t)i, (int32_t)i + 1));
    tp_pair_entry e;
    while (tp_pair_queue_pop(&s->queue, &e)) {
        tp_symbol *a = &s->sym[e.left], *b = &s->sym[e.right];
        if (a->n == 0 || b->n == 0 || a->n + b->n != e.size)
            continue; /* stale: a side was consumed or has grown */
        a->n += b->n;
        b->n = 0;
        a->next = b->next;
        if (b->next >= 0)
            s->sym[b->next].prev = e.left;
        TP_TRY(queue_pair(t, s, a->prev, e.left));
        TP_TRY(queue_pair(t, s, e.left, a->next));
    }
    return TP_OK;
}

static tp_status emit_symbols(const tp_tokenizer *t, const bpe_scratch *s, tp_id_buf *out)
{
    for (int32_t i = 0; i >= 0; i = s->sym[i].next) {
        const tp_symbol *y = &s->sym[i];
        int32_t id = tp_strmap_get(&t->by_text, s->enc + y->off, y->n);
        if (id >= 0) {
            TP_TRY(tp_id_buf_push(out, id));
            continue;
        }
        for (size_t k = 0; k < y->n; k++) { /* each byte as a one-byte text, else refused */
            const unsigned char c = (unsigned char)s->enc[y->off + k];
            int32_t b = tp_strmap_get(&t->by_text, s->enc + y->off + k, 1);
            if (b < 0)
                return tp_fail(TP_ERR_INVALID, "tokenize: the text '%.*s' has no token, nor "
                               "has its byte 0x%02X", (int)(y->n > 32 ? 32 : y->n),
                               s->enc + y->off, c);
            TP_TRY(tp_id_buf_push(out, b));
        }
    }
    return TP_OK;
}

static tp_status encode_piece(const tp_tokenizer *t, const char *piece, size_t len,
                              bpe_scratch *s, tp_id_buf *out)
{
    size_t n;
    TP_TRY(byte_encode(piece, len, s, &n));
    if (n == 0)
        return TP_OK;
    if (t->ignore_merges) {
        int32_t id = tp_strmap_get(&t->by_text, s->enc, n);
        if (id >= 0)
            return tp_id_buf_push(out, id);
    }
    TP_TRY(merge_symbols(t, s, n));
    return emit_symbols(t, s, out);
}

tp_status tp_bpe_encode(const tp_tokenizer *t, const char *text, size_t len, tp_id_buf *out)
{
    char *clean = NULL;
    size_t clean_len = 0, *spans = NULL, n_spans = 0;
    bpe_scratch s = {0};
    tp_status st = tp_utf8_sanitize(text, len, &clean, &clean_len);
    if (st == TP_OK)
        st = tp_pretok_split(t, clean, clean_len, &spans, &n_spans);
    for (size_t i = 0; st == TP_OK && i < n_spans; i++)
        st = encode_piece(t, clean + spans[2 * i], spans[2 * i + 1], &s, out);
    free(s.enc);
    free(s.key);
    free(s.sym);
    free(s.queue.items);
    free(spans);
    free(clean);
    return st;
}
