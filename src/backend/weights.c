/* The weight registry: named tensors (owned f32, or views in their own type) that backends
 * read by name. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise(MADV_HUGEPAGE) */
#endif
#include "tensorplan/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "common/error.h"
#include "common/grow.h"
#include "common/hash.h"
#include "tensorplan/quant.h"

struct tp_weights {
    tp_weight *items;
    size_t n, cap;
    size_t *slots; /* open addressing over name hashes: index + 1, 0 = empty */
    size_t n_slots;
    uint64_t version;
};

tp_status tp_weights_create(tp_weights **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "weights: NULL output");
    tp_weights *w = calloc(1, sizeof *w);
    if (!w)
        return tp_fail(TP_ERR_NOMEM, "weights: out of memory");
    *out = w;
    return TP_OK;
}

void tp_weights_destroy(tp_weights *weights)
{
    if (!weights)
        return;
    for (size_t i = 0; i < weights->n; i++)
        free(weights->items[i].data);
    free(weights->items);
    free(weights->slots);
    free(weights);
}

static tp_status rehash(tp_weights *w, size_t n_slots)
{
    size_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return tp_fail(TP_ERR_NOMEM, "weights: out of memory");
    for (size_t i = 0; i < w->n; i++) {
        size_t s = (size_t)(tp_hash_name(w->items[i].name) & (n_slots - 1));
        while (slots[s])
            s = (s + 1) & (n_slots - 1);
        slots[s] = i + 1;
    }
    free(w->slots);
    w->slots = slots;
    w->n_slots = n_slots;
    return TP_OK;
}

const tp_weight *tp_weights_find(const tp_weights *weights, const char *name)
{
    if (!weights || !name || weights->n_slots == 0)
        return NULL;
    size_t s = (size_t)(tp_hash_name(name) & (weights->n_slots - 1));
    while (weights->slots[s]) {
        const tp_weight *w = &weights->items[weights->slots[s] - 1];
        if (strcmp(w->name, name) == 0)
            return w;
        s = (s + 1) & (weights->n_slots - 1);
    }
    return NULL;
}

#define HUGE_ALIGN ((size_t)2 << 20)

/* Zeroed storage. Large tensors are 2 MiB aligned and, on Linux, backed by huge pages when
 * the kernel allows: the 2 GB of the 0.5B shapes otherwise cost half a million page faults
 * to create and TLB misses on every matmul. */
static float *tensor_alloc(size_t n)
{
    size_t bytes = n * sizeof(float);
    if (bytes < 4 * HUGE_ALIGN)
        return calloc(n, sizeof(float));
    size_t rounded = (bytes + HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN;
    float *p = aligned_alloc(HUGE_ALIGN, rounded);
    if (!p)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
    memset(p, 0, bytes);
    return p;
}

/* Checks a new entry's name and shape and makes room for it; *slot receives the entry. */
static tp_status reserve(tp_weights *weights, const char *name, size_t rows, size_t cols,
                         tp_weight **slot)
{
    if (!weights || !name)
        return tp_fail(TP_ERR_INVALID, "weights: NULL argument");
    if (name[0] == '\0' || strlen(name) >= TP_NAME_MAX)
        return tp_fail(TP_ERR_INVALID, "weights: name '%s' is empty or too long", name);
    if (rows == 0 || cols == 0)
        return tp_fail(TP_ERR_INVALID, "weights: '%s' has an empty shape", name);
    if (rows > SIZE_MAX / cols || rows * cols > SIZE_MAX / sizeof(float))
        return tp_fail(TP_ERR_OVERFLOW, "weights: '%s' is too large", name);
    if (tp_weights_find(weights, name))
        return tp_fail(TP_ERR_INVALID, "weights: '%s' already exists", name);
    TP_TRY(TP_GROW(&weights->items, &weights->cap, weights->n + 1));
    /* keep the table at most half full */
    if ((weights->n + 1) * 2 > weights->n_slots)
        TP_TRY(rehash(weights, weights->n_slots ? weights->n_slots * 2 : 64));
    *slot = &weights->items[weights->n];
    memset(*slot, 0, sizeof **slot);
    memcpy((*slot)->name, name, strlen(name) + 1);
    (*slot)->rows = rows;
    (*slot)->cols = cols;
    return TP_OK;
}

/* Enters the reserved entry weights->items[n] in the hash table. */
static void commit(tp_weights *weights)
{
    size_t s = (size_t)(tp_hash_name(weights->items[weights->n].name) & (weights->n_slots - 1));
    while (weights->slots[s])
        s = (s + 1) & (weights->n_slots - 1);
    weights->slots[s] = weights->n + 1;
    weights->n++;
    weights->version++;
}

tp_status tp_weights_add(tp_weights *weights, const char *name, size_t rows, size_t cols,
                         float **data)
{
    tp_weight *w = NULL;
    TP_TRY(reserve(weights, name, rows, cols, &w));
    float *buf = tensor_alloc(rows * cols);
    if (!buf)
        return tp_fail(TP_ERR_NOMEM, "weights: out of memory for '%s' (%zu x %zu)", name, rows,
                       cols);
    w->data = buf;
    w->type = TP_TYPE_F32;
    w->bytes = buf;
    w->row_bytes = cols * sizeof(float);
    commit(weights);
    if (data)
        *data = buf;
    return TP_OK;
}

tp_status tp_weights_add_view(tp_weights *weights, const char *name, uint32_t type, size_t rows,
                              size_t cols, const void *bytes)
{
    if (!bytes)
        return tp_fail(TP_ERR_INVALID, "weights: view '%s' has no bytes", name ? name : "");
    if (!tp_type_can_dequantize(type))
        return tp_fail(TP_ERR_INVALID, "weights: '%s' has type %s, which cannot be read",
                       name ? name : "", tp_type_name(type) ? tp_type_name(type) : "unknown");
    size_t row_bytes = 0;
    TP_TRY(tp_type_row_bytes(type, cols, &row_bytes));
    if (rows > SIZE_MAX / row_bytes)
        return tp_fail(TP_ERR_OVERFLOW, "weights: '%s' is too large", name ? name : "");
    tp_weight *w = NULL;
    TP_TRY(reserve(weights, name, rows, cols, &w));
    w->type = type;
    w->bytes = bytes;
    w->row_bytes = row_bytes;
    commit(weights);
    return TP_OK;
}

size_t tp_weights_count(const tp_weights *weights)
{
    return weights ? weights->n : 0;
}

const tp_weight *tp_weights_at(const tp_weights *weights, size_t i)
{
    return weights && i < weights->n ? &weights->items[i] : NULL;
}

size_t tp_weights_bytes(const tp_weights *weights)
{
    size_t total = 0;
    for (size_t i = 0; weights && i < weights->n; i++)
        total += weights->items[i].rows * weights->items[i].row_bytes;
    return total;
}

uint64_t tp_weights_version(const tp_weights *weights)
{
    return weights ? weights->version : 0;
}
