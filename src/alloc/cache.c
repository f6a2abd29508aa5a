/* The graph cache (docs/allocator.md, "The graph cache"): graphs keyed by their build params, the
 * allocator kept across every rebuild, up to TP_GRAPH_CACHE_MAX planned graphs switched by
 * re-mapping their saved plans. */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "common/error.h"
#include "tensorplan/cache.h"

typedef struct cache_entry {
    tp_graph *graph;
    tp_graph_params params;
    tp_plan *plan; /* detached plan; NULL for the current entry, whose plan is attached */
} cache_entry;

struct tp_graph_cache {
    tp_allocator *alloc;
    tp_alloc_options opts;
    size_t capacity;
    cache_entry entries[TP_GRAPH_CACHE_MAX]; /* most recent first */
    size_t n;
    int current; /* entries[0] is current and its plan is the allocator's */
};

int tp_graph_params_equal(const tp_graph_params *a, const tp_graph_params *b)
{
    if (!a || !b)
        return 0;
    /* Field by field (never memcmp: padding). n_past is deliberately not a field: positions
     * are data, so every decode step reuses one graph. The graph type is decode iff
     * n_tokens == 1, so equal n_tokens means equal types. */
    return a->n_tokens == b->n_tokens && a->n_out == b->n_out && a->n_ctx == b->n_ctx &&
           a->fuse_ffn == b->fuse_ffn &&
           a->queued_layers == b->queued_layers && a->weights_version == b->weights_version &&
           a->kv_type == b->kv_type;
}

tp_status tp_graph_cache_create(tp_allocator *alloc, size_t capacity,
                                const tp_alloc_options *options, tp_graph_cache **out)
{
    if (!alloc || !out)
        return tp_fail(TP_ERR_INVALID, "tp_graph_cache_create: NULL argument");
    if (capacity > TP_GRAPH_CACHE_MAX)
        return tp_fail(TP_ERR_INVALID, "graph cache: capacity %zu above %d", capacity,
                       TP_GRAPH_CACHE_MAX);
    tp_graph_cache *c = calloc(1, sizeof *c);
    if (!c)
        return tp_fail(TP_ERR_NOMEM, "graph cache: out of memory");
    c->alloc = alloc;
    c->opts = options ? *options : tp_alloc_options_default();
    c->capacity = capacity ? capacity : TP_GRAPH_CACHE_MAX;
    *out = c;
    return TP_OK;
}

static void entry_free(cache_entry *e)
{
    tp_plan_destroy(e->plan);
    tp_graph_destroy(e->graph);
    memset(e, 0, sizeof *e);
}

void tp_graph_cache_destroy(tp_graph_cache *c)
{
    if (!c)
        return;
    /* the allocator goes first: its current plan points into entries[0]'s graph */
    tp_allocator_destroy(c->alloc);
    for (size_t i = 0; i < c->n; i++)
        entry_free(&c->entries[i]);
    free(c);
}

tp_allocator *tp_graph_cache_allocator(tp_graph_cache *c)
{
    return c ? c->alloc : NULL;
}

const tp_graph *tp_graph_cache_current(const tp_graph_cache *c)
{
    return c && c->current && c->n ? c->entries[0].graph : NULL;
}

size_t tp_graph_cache_size(const tp_graph_cache *c)
{
    return c ? c->n : 0;
}

/* Saves the current entry's plan into it (its buffers go back to the free lists). */
static void park_current(tp_graph_cache *c)
{
    if (c->current && c->n) {
        c->entries[0].plan = tp_alloc_detach_plan(c->alloc);
        c->current = 0;
    }
}

static void move_to_front(tp_graph_cache *c, size_t i)
{
    cache_entry e = c->entries[i];
    memmove(&c->entries[1], &c->entries[0], i * sizeof e);
    c->entries[0] = e;
}

tp_status tp_graph_cache_try_reuse(tp_graph_cache *c, const tp_graph_params *params,
                                   int *reused)
{
    if (!c || !params || !reused)
        return tp_fail(TP_ERR_INVALID, "tp_graph_cache_try_reuse: NULL argument");
    *reused = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!tp_graph_params_equal(&c->entries[i].params, params))
            continue;
        if (i == 0 && c->current) {
            *reused = 1;
            return TP_OK;
        }
        if (!c->entries[i].plan)
            return TP_OK; /* its plan failed: it must be rebuilt */
        park_current(c);
        tp_status st = tp_alloc_attach_plan(c->alloc, c->entries[i].plan);
        if (st != TP_OK)
            return st;
        c->entries[i].plan = NULL;
        move_to_front(c, i);
        c->current = 1;
        *reused = 1;
        return TP_OK;
    }
    return TP_OK;
}

tp_status tp_graph_cache_replace_graph(tp_graph_cache *c, tp_graph *graph,
                                       const tp_graph_params *params)
{
    if (!c || !graph || !params)
        return tp_fail(TP_ERR_INVALID, "tp_graph_cache_replace_graph: NULL argument");
    park_current(c);
    tp_status st = tp_alloc_graph(c->alloc, graph, &c->opts);
    if (st != TP_OK)
        return st;
    for (size_t i = 0; i < c->n; i++) {
        if (tp_graph_params_equal(&c->entries[i].params, params)) {
            entry_free(&c->entries[i]);
            memmove(&c->entries[i], &c->entries[i + 1], (c->n - i - 1) * sizeof c->entries[0]);
            c->n--;
            break;
        }
    }
    if (c->n == c->capacity) {
        entry_free(&c->entries[c->n - 1]);
        c->n--;
    }
    memmove(&c->entries[1], &c->entries[0], c->n * sizeof c->entries[0]);
    c->entries[0].graph = graph;
    c->entries[0].params = *params;
    c->entries[0].plan = NULL;
    c->n++;
    c->current = 1;
    return TP_OK;
}
