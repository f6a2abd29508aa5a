/* The tokenizer's containers: the text -> id hash map, the pair queue and the id buffer. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "common/hash.h"
#include "tokenizer/tokenizer_internal.h"

tp_status tp_strmap_init(tp_strmap *m, size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2 + 1) {
        if (cap > ((size_t)-1) / 4)
            return tp_fail(TP_ERR_OVERFLOW, "tokenizer: %zu entries overflow a hash map",
                           expected);
        cap *= 2;
    }
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots)
        return tp_fail(TP_ERR_NOMEM, "tokenizer: out of memory for a hash map of %zu", cap);
    m->cap = cap;
    m->count = 0;
    return TP_OK;
}

void tp_strmap_free(tp_strmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

static size_t find_slot(const tp_strmap *m, const char *key, size_t len, uint64_t h)
{
    size_t mask = m->cap - 1, i = (size_t)h & mask;
    for (;;) {
        const tp_strmap_slot *s = &m->slots[i];
        if (!s->key)
            return i;
        if (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0)
            return i;
        i = (i + 1) & mask;
    }
}

int tp_strmap_put(tp_strmap *m, const char *key, size_t len, int32_t value)
{
    /* The capacity was sized for every key at init, so the map never fills. */
    uint64_t h = tp_hash_bytes(key, len);
    size_t i = find_slot(m, key, len, h);
    if (m->slots[i].key)
        return 0;
    m->slots[i] = (tp_strmap_slot){key, len, h, value};
    m->count++;
    return 1;
}

int32_t tp_strmap_get(const tp_strmap *m, const char *key, size_t len)
{
    if (!m->slots)
        return -1;
    size_t i = find_slot(m, key, len, tp_hash_bytes(key, len));
    return m->slots[i].key ? m->slots[i].value : -1;
}

static int better(const tp_pair_entry *a, const tp_pair_entry *b)
{
    return a->key > b->key || (a->key == b->key && a->left < b->left);
}

tp_status tp_pair_queue_push(tp_pair_queue *q, tp_pair_entry e)
{
    TP_TRY(TP_GROW(&q->items, &q->cap, q->count + 1));
    size_t i = q->count++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!better(&e, &q->items[parent]))
            break;
        q->items[i] = q->items[parent];
        i = parent;
    }
    q->items[i] = e;
    return TP_OK;
}

int tp_pair_queue_pop(tp_pair_queue *q, tp_pair_entry *out)
{
    if (q->count == 0)
        return 0;
    *out = q->items[0];
    tp_pair_entry last = q->items[--q->count];
    size_t i = 0, n = q->count;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && better(&q->items[c + 1], &q->items[c]))
            c++;
        if (!better(&q->items[c], &last))
            break;
        q->items[i] = q->items[c];
        i = c;
    }
    if (n > 0)
        q->items[i] = last;
    return 1;
}

tp_status tp_id_buf_push(tp_id_buf *b, int32_t id)
{
    TP_TRY(TP_GROW(&b->ids, &b->cap, b->count + 1));
    b->ids[b->count++] = id;
    return TP_OK;
}
