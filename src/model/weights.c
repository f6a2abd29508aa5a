/* The weight registry and its deterministic random initialisation. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise(MADV_HUGEPAGE) */
#endif
#include "tensorplan/weights.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "common/error.h"

struct tp_weights {
    tp_weight *items;
    size_t n, cap;
    size_t *slots; /* open addressing over name hashes: index + 1, 0 = empty */
    size_t n_slots;
    uint64_t version;
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

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
        size_t s = (size_t)(hash_name(w->items[i].name) & (n_slots - 1));
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
    size_t s = (size_t)(hash_name(name) & (weights->n_slots - 1));
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

tp_status tp_weights_add(tp_weights *weights, const char *name, size_t rows, size_t cols,
                         float **data)
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
    if (weights->n == weights->cap) {
        size_t cap = weights->cap ? weights->cap * 2 : 32;
        tp_weight *items = realloc(weights->items, cap * sizeof *items);
        if (!items)
            return tp_fail(TP_ERR_NOMEM, "weights: out of memory");
        weights->items = items;
        weights->cap = cap;
    }
    /* keep the table at most half full */
    if ((weights->n + 1) * 2 > weights->n_slots) {
        tp_status st = rehash(weights, weights->n_slots ? weights->n_slots * 2 : 64);
        if (st != TP_OK)
            return st;
    }
    float *buf = tensor_alloc(rows * cols);
    if (!buf)
        return tp_fail(TP_ERR_NOMEM, "weights: out of memory for '%s' (%zu x %zu)", name, rows,
                       cols);
    tp_weight *w = &weights->items[weights->n];
    memset(w, 0, sizeof *w);
    memcpy(w->name, name, strlen(name) + 1);
    w->rows = rows;
    w->cols = cols;
    w->data = buf;
    size_t s = (size_t)(hash_name(name) & (weights->n_slots - 1));
    while (weights->slots[s])
        s = (s + 1) & (weights->n_slots - 1);
    weights->slots[s] = weights->n + 1;
    weights->n++;
    weights->version++;
    if (data)
        *data = buf;
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
        total += weights->items[i].rows * weights->items[i].cols * sizeof(float);
    return total;
}

uint64_t tp_weights_version(const tp_weights *weights)
{
    return weights ? weights->version : 0;
}

/* ---- random initialisation ------------------------------------------------------------------ */

/* The k-th output of a splitmix64 stream started at state: a pure function of k, so the
 * fill can be split across threads without changing a value. */
static uint64_t splitmix_at(uint64_t state, uint64_t k)
{
    uint64_t z = state + (k + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct fill_job {
    float *data;
    size_t begin, end; /* element range, begin even */
    uint64_t state;
    float center, a;
} fill_job;

/* Uniform on [center - a, center + a] with a = std * sqrt(3): the requested standard
 * deviation, bounded values (no outliers to blow up a deep stack), and cheap enough for the
 * half a billion values of the 0.5B shapes. Two 24-bit uniforms per draw. */
static void *fill_range(void *arg)
{
    fill_job *j = arg;
    for (size_t i = j->begin; i < j->end; i += 2) {
        uint64_t r = splitmix_at(j->state, i / 2);
        float u0 = (float)(r >> 40) * (1.0f / 16777216.0f);
        float u1 = (float)((r >> 8) & 0xffffffu) * (1.0f / 16777216.0f);
        j->data[i] = j->center + j->a * (2.0f * u0 - 1.0f);
        if (i + 1 < j->end)
            j->data[i + 1] = j->center + j->a * (2.0f * u1 - 1.0f);
    }
    return NULL;
}

static void fill_uniform(float *data, size_t n, uint64_t seed, const char *name, float center,
                         float std)
{
    fill_job jobs[2];
    size_t half = n > (1u << 20) ? (n / 2) & ~(size_t)1 : n;
    for (int k = 0; k < 2; k++) {
        jobs[k].data = data;
        jobs[k].begin = k ? half : 0;
        jobs[k].end = k ? n : half;
        jobs[k].state = seed ^ hash_name(name);
        jobs[k].center = center;
        jobs[k].a = std * 1.7320508f;
    }
    pthread_t tid;
    int threaded = half < n && pthread_create(&tid, NULL, fill_range, &jobs[1]) == 0;
    fill_range(&jobs[0]);
    if (threaded)
        pthread_join(tid, NULL);
    else if (half < n)
        fill_range(&jobs[1]);
}

static tp_status add_random(tp_weights *w, uint64_t seed, const char *name, size_t rows,
                            size_t cols, float center, float std)
{
    float *data = NULL;
    tp_status st = tp_weights_add(w, name, rows, cols, &data);
    if (st != TP_OK)
        return st;
    fill_uniform(data, rows * cols, seed, name, center, std);
    return TP_OK;
}

tp_status tp_weights_init_random(const tp_model_config *c, uint64_t seed, tp_weights **out)
{
    if (!c || !out)
        return tp_fail(TP_ERR_INVALID, "weights: NULL argument");
    if (c->n_embd <= 0 || c->n_head <= 0 || c->n_head_kv <= 0 || c->head_dim <= 0 ||
        c->n_ff <= 0 || c->n_layer <= 0 || c->vocab <= 0)
        return tp_fail(TP_ERR_INVALID, "weights: config '%s' has a non-positive dimension",
                       c->name);
    tp_weights *w = NULL;
    tp_status st = tp_weights_create(&w);
    if (st != TP_OK)
        return st;
    size_t ne = (size_t)c->n_embd, nf = (size_t)c->n_ff, vocab = (size_t)c->vocab;
    size_t nq = (size_t)c->n_head * (size_t)c->head_dim;
    size_t nkv = (size_t)c->n_head_kv * (size_t)c->head_dim;
    float s_e = 1.0f / sqrtf((float)ne), s_q = 1.0f / sqrtf((float)nq);
    float s_f = 1.0f / sqrtf((float)nf);
    const float norm_spread = 0.05f / 1.7320508f, bias_std = 0.02f;
    char name[TP_NAME_MAX];

#define ADD(nm, r, cc, center, std)                                                          \
    do {                                                                                     \
        st = add_random(w, seed, (nm), (r), (cc), (center), (std));                        \
        if (st != TP_OK)                                                                     \
            goto fail;                                                                       \
    } while (0)
#define LNAME(fmt)                                                                           \
    (snprintf(name, sizeof name, "blk.%d." fmt, L), name)

    /* the embedding doubles as lm_head when tied: rows of norm ~1 suit both uses */
    ADD("token_embd.weight", vocab, ne, 0.0f, s_e);
    for (int L = 0; L < c->n_layer; L++) {
        ADD(LNAME("attn_norm.weight"), 1, ne, 1.0f, norm_spread);
        ADD(LNAME("attn_q.weight"), nq, ne, 0.0f, s_e);
        ADD(LNAME("attn_k.weight"), nkv, ne, 0.0f, s_e);
        ADD(LNAME("attn_v.weight"), nkv, ne, 0.0f, s_e);
        if (c->qkv_bias) {
            ADD(LNAME("attn_q.bias"), 1, nq, 0.0f, bias_std);
            ADD(LNAME("attn_k.bias"), 1, nkv, 0.0f, bias_std);
            ADD(LNAME("attn_v.bias"), 1, nkv, 0.0f, bias_std);
        }
        ADD(LNAME("attn_output.weight"), ne, nq, 0.0f, s_q);
        ADD(LNAME("ffn_norm.weight"), 1, ne, 1.0f, norm_spread);
        ADD(LNAME("ffn_gate.weight"), nf, ne, 0.0f, s_e);
        ADD(LNAME("ffn_up.weight"), nf, ne, 0.0f, s_e);
        ADD(LNAME("ffn_down.weight"), ne, nf, 0.0f, s_f);
    }
    ADD("output_norm.weight", 1, ne, 1.0f, norm_spread);
    if (!c->tied_embeddings)
        ADD("output.weight", vocab, ne, 0.0f, s_e);
#undef ADD
#undef LNAME
    *out = w;
    return TP_OK;
fail:
    tp_weights_destroy(w);
    return st;
}
