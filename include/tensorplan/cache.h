/* tensorplan: the graph cache (docs/allocator.md, "The graph cache").
 *
 * Example, given the parameters of the graph wanted, `const tp_graph_params *params`:
 *
 *     tp_allocator *alloc;
 *     tp_graph_cache *cache;
 *     int reused;
 *     if (tp_allocator_create_host(&alloc) != TP_OK)
 *         return 1;
 *     if (tp_graph_cache_create(alloc, 0, NULL, &cache) != TP_OK) {
 *         tp_allocator_destroy(alloc);               // still the caller's on failure
 *         return 1;
 *     }
 *     tp_status st = tp_graph_cache_try_reuse(cache, params, &reused);
 *     if (st == TP_OK && !reused) {
 *         tp_graph *graph;                           // built for params (model.h)
 *         if ((st = tp_graph_create(&graph)) == TP_OK &&
 *             (st = tp_graph_cache_replace_graph(cache, graph, params)) != TP_OK)
 *             tp_graph_destroy(graph);               // the cache owns it only on success
 *     }
 *     // then fill the inputs and run (exec.h) on tp_graph_cache_allocator(cache)
 *     tp_graph_cache_destroy(cache);                 // its graphs and the allocator
 *     return st == TP_OK ? 0 : 1;
 *
 * The cache holds up to TP_GRAPH_CACHE_MAX planned graphs (most recent first), the params
 * each was built for, and the allocator. The allocator outlives every graph, so the KV
 * regions survive prefill -> decode and fusion-toggle rebuilds with zero copies. The reuse
 * identity is exactly tp_graph_params (n_tokens, n_out, hence the graph type, n_ctx, the
 * SwiGLU fusion toggle, the device layers, weights_version, the KV type); n_past is not part of it, because
 * positions are data: every decode step reuses one graph and only refills inputs.
 *
 * Switching to another cached shape re-maps its saved plan: its buffers are taken back
 * off the free lists, nothing is allocated from any pool. */
#ifndef TENSORPLAN_CACHE_H
#define TENSORPLAN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/alloc.h"
#include "tensorplan/api.h"
#include "tensorplan/graph.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TP_GRAPH_CACHE_MAX 8

/* The parameters a graph is built for: the graph cache's reuse identity. n_past is
 * deliberately absent: positions are data, not structure. */
typedef struct tp_graph_params {
    size_t n_tokens;
    size_t n_out;               /* rows of logits wanted (n_out < n_tokens: tail rows)   */
    size_t n_ctx;
    int fuse_ffn;               /* SwiGLU fusion on                                      */
    int queued_layers;          /* layers [0, k) on the queued backend                   */
    uint64_t weights_version;
    tp_dtype kv_type;           /* KV regions stored as f32 (0, the default), f16, q8_0 */
} tp_graph_params;

/* 1 when the two params are the same reuse identity (every field equal). */
TP_API int tp_graph_params_equal(const tp_graph_params *a, const tp_graph_params *b);

typedef struct tp_graph_cache tp_graph_cache;

/* Takes ownership of alloc on success. capacity 1..TP_GRAPH_CACHE_MAX (0 means the
 * maximum); options NULL = defaults; every graph is planned with these options. */
TP_API tp_status tp_graph_cache_create(tp_allocator *alloc, size_t capacity,
                                       const tp_alloc_options *options, tp_graph_cache **out);
TP_API void tp_graph_cache_destroy(tp_graph_cache *cache);

TP_API tp_allocator *tp_graph_cache_allocator(tp_graph_cache *cache);
/* The current graph (the allocator's plan is for it), or NULL. */
TP_API const tp_graph *tp_graph_cache_current(const tp_graph_cache *cache);
TP_API size_t tp_graph_cache_size(const tp_graph_cache *cache);

/* *reused = 1 when a cached graph was built for params: it becomes current (re-mapped
 * without any pool allocation when it was not current already). Else *reused = 0 and
 * nothing changes; the caller builds a graph and calls replace_graph. */
TP_API tp_status tp_graph_cache_try_reuse(tp_graph_cache *cache, const tp_graph_params *params,
                                          int *reused);

/* Stores graph (ownership passes to the cache on success) for params as the current
 * graph, plans it with tp_alloc_graph, and evicts the least recent graph beyond capacity.
 * A cached graph with equal params is replaced. The allocator, and so every persistent
 * region, is kept. On failure the caller still owns graph and the cache holds no current
 * graph. */
TP_API tp_status tp_graph_cache_replace_graph(tp_graph_cache *cache, tp_graph *graph,
                                              const tp_graph_params *params);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_CACHE_H */
