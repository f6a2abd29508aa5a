/* tensorplan: the graph allocator (docs/allocator.md).
 *
 * Example, given a graph with an output, `const tp_graph *graph` (graph.h):
 *
 *     tp_allocator *alloc;
 *     tp_bufref out;
 *     if (tp_allocator_create_host(&alloc) != TP_OK)
 *         return 1;
 *     tp_alloc_options options = tp_alloc_options_default();
 *     options.strategy = TP_STRATEGY_ARENA;
 *     tp_status st = tp_alloc_graph(alloc, graph, &options);
 *     if (st == TP_OK && tp_alloc_node_buffer(alloc, graph->outputs[0], &out))
 *         printf("output: buffer %zu, elements %zu + %zu\n", out.id, out.offset, out.len);
 *     // then fill the inputs (tp_alloc_fill_input) and run it (tp_execute, exec.h)
 *     tp_allocator_destroy(alloc);                   // the backends, their pools and the plan
 *     return st == TP_OK ? 0 : 1;
 *
 * The allocator owns the backends (and so their pools), the persistent regions (the KV
 * cache: kv.L.k and kv.L.v per layer) and the current graph's plan: which window of which
 * pool buffer holds each node's output. tp_alloc_graph walks a finished graph once in
 * build order; inputs are filled by name afterwards; the scheduler reads windows, KV pairs
 * and staging buffers from here and allocates nothing itself. */
#ifndef TENSORPLAN_ALLOC_H
#define TENSORPLAN_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/backend.h"
#include "tensorplan/graph.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tp_alloc_strategy {
    TP_STRATEGY_POOL = 0, /* per-node buffers from exact-length pools                    */
    TP_STRATEGY_ARENA,    /* per backend one arena; windows at offsets from the planner   */
    TP_STRATEGY_NAIVE     /* every live node its own exact-size pool buffer, never reused
                             and never aliased: the reference other strategies must match */
} tp_alloc_strategy;

typedef enum tp_alias_policy {
    TP_ALIAS_SOLE_CONSUMER = 0, /* silu, rope alias their first source when it has one
                                   consumer (the default)                                 */
    TP_ALIAS_LAST_CONSUMER,     /* add, mul, rms_norm, silu, rope, swiglu alias their first
                                   source when they are its last consumer (ggml)          */
    TP_ALIAS_NONE               /* never alias                                            */
} tp_alias_policy;

typedef struct tp_alloc_options {
    tp_alloc_strategy strategy;
    tp_alias_policy aliasing;
    int size_classes;       /* 1: activations requested by tp_size_class; 0: exact sizes */
} tp_alloc_options;

TP_API tp_alloc_options tp_alloc_options_default(void);
TP_API const char *tp_alloc_strategy_name(tp_alloc_strategy s); /* "pool", "arena", "naive" */
TP_API tp_status tp_alloc_strategy_from_name(const char *name, tp_alloc_strategy *s);
/* "sole-consumer", "last-consumer", "none" */
TP_API const char *tp_alias_policy_name(tp_alias_policy p);
TP_API tp_status tp_alias_policy_from_name(const char *name, tp_alias_policy *p);

/* class(e): e = max(e,1); e <= 256 -> 256; e <= 4096 -> next power of two; else the next
 * multiple of 4096. In bytes: a 1 KiB floor, powers of two to 16 KiB, then 16 KiB steps. */
TP_API size_t tp_size_class(size_t elems);

typedef struct tp_allocator tp_allocator;

/* Takes ownership of the n backends (each b->id distinct and < TP_MAX_BACKENDS) on
 * success; on failure the caller still owns them. */
TP_API tp_status tp_allocator_create(tp_backend *const *backends, size_t n, tp_allocator **out);
/* An allocator over the two host backends, cpu and queued. */
TP_API tp_status tp_allocator_create_host(tp_allocator **out);
/* The same two backends (ids and names) over planning pools (tp_backend_create_planning):
 * tp_alloc_graph plans and reports (tp_alloc_stats) exactly as on the host allocator, but no
 * buffer has memory, so nothing can be executed, read or written. */
TP_API tp_status tp_allocator_create_planning(tp_allocator **out);
TP_API void tp_allocator_destroy(tp_allocator *alloc);
/* NULL when no backend has that id. */
TP_API tp_backend *tp_alloc_backend(const tp_allocator *alloc, int backend);

/* Plans graph (options NULL = defaults): returns the previous plan's buffers and staging
 * buffers to their pools, refuses a cycle, then runs the walk of docs/allocator.md. The graph must
 * outlive the plan (until the next tp_alloc_graph or tp_allocator_destroy). On failure
 * the allocator holds no plan. */
TP_API tp_status tp_alloc_graph(tp_allocator *alloc, const tp_graph *graph,
                                const tp_alloc_options *options);

/* The window of node's output: 1 when mapped, 0 for a dead node or no such node. */
TP_API int tp_alloc_node_buffer(const tp_allocator *alloc, size_t node, tp_bufref *out);
/* The node whose window this node shares on purpose (in place), or TP_NO_ALIAS. */
#define TP_NO_ALIAS ((size_t)-1)
TP_API size_t tp_alloc_alias_of(const tp_allocator *alloc, size_t node);
/* The graph of the current plan, or NULL. */
TP_API const tp_graph *tp_alloc_current_graph(const tp_allocator *alloc);

/* The lifetime of node's value as the current plan was made with it (docs/allocator.md,
 * "tp_alloc_graph", steps 3 to 6), in steps of the build order (step i runs node i; step n is
 * after the graph, n = the graph's node count): *first the step its value starts being
 * needed (0 for an input, which gets its buffer before the walk), *last its last use (n for
 * an output or an input); for the root of an in-place group, the group's last use. A node
 * that nothing reads, neither output nor input, has *last == *first, its own step. 1 when
 * there is a plan and node is one of its nodes, else 0 (and *first, *last untouched). */
TP_API int tp_alloc_node_lifetime(const tp_allocator *alloc, size_t node, size_t *first,
                                  size_t *last);

/* --- persistent regions and the KV cache ------------------------------------------- */

typedef struct tp_persistent_region {
    char name[TP_NAME_MAX];
    int backend;
    size_t id;
    size_t elems;     /* f32 pool elements of the buffer                                  */
    tp_dtype dtype;   /* what it stores: f32, or a KV region's cache type (f16, q8_0)     */
    size_t bytes;     /* the payload: elems x 4 for f32, the typed rows' bytes for a KV
                         region (at most 3 bytes below elems x 4)                          */
} tp_persistent_region;

/* A never-freed region (never in the liveness table; survives every rebuild). Names are
 * unique: a second region of an existing name is refused. Always a fresh pool buffer,
 * so it can never take a buffer a cached plan still names. */
TP_API tp_status tp_alloc_persistent(tp_allocator *alloc, const char *name, int backend,
                                     size_t elems, tp_bufref *out);
TP_API size_t tp_alloc_persistent_count(const tp_allocator *alloc);
/* i < count; regions in creation order. */
TP_API const tp_persistent_region *tp_alloc_persistent_at(const tp_allocator *alloc, size_t i);
/* NULL when absent. */
TP_API const tp_persistent_region *tp_alloc_find_persistent(const tp_allocator *alloc,
                                                            const char *name);

/* The layer's pair if it exists, else K and V of exactly elems elements on backend, named
 * kv.L.k and kv.L.v. A request with another size or backend is refused. k, v may be NULL. */
TP_API tp_status tp_alloc_ensure_kv(tp_allocator *alloc, int layer, int backend, size_t elems,
                                    tp_bufref *k, tp_bufref *v);
/* The same for regions of n_ctx rows of width elements stored as dtype (f32, f16, q8_0):
 * each tp_kv_region_elems(dtype, width, n_ctx) pool elements. An existing pair of another
 * dtype, size or backend is refused. tp_alloc_ensure_kv is the f32 case of width elems,
 * one row. */
TP_API tp_status tp_alloc_ensure_kv_typed(tp_allocator *alloc, int layer, int backend,
                                          tp_dtype dtype, size_t width, size_t n_ctx, tp_bufref *k,
                                          tp_bufref *v);
/* 1 and the pair when the layer has regions, else 0. */
TP_API int tp_alloc_kv_pair(const tp_allocator *alloc, int layer, tp_bufref *k, tp_bufref *v);

/* KV layers in creation order: i < tp_alloc_kv_count; 1 and the layer's pair, else 0. */
TP_API size_t tp_alloc_kv_count(const tp_allocator *alloc);
TP_API int tp_alloc_kv_at(const tp_allocator *alloc, size_t i, int *layer, tp_bufref *k,
                          tp_bufref *v);

/* --- inputs ----------------------------------------------------------------------- */

/* Finds the input by name and writes data into its window: the u32 values' bit patterns
 * (i32) or the floats, moved bitwise. Refused: no input of that name, the input has no
 * buffer (graph not planned by this allocator), n differs from the window length. */
TP_API tp_status tp_alloc_fill_input_i32(tp_allocator *alloc, const tp_graph *graph,
                                         const char *name, const uint32_t *data, size_t n);
TP_API tp_status tp_alloc_fill_input(tp_allocator *alloc, const tp_graph *graph, const char *name,
                                     const float *data, size_t n);

/* Bitwise copies between a window and host memory (len elements of ref). */
TP_API tp_status tp_alloc_read(tp_allocator *alloc, const tp_bufref *ref, void *data);
TP_API tp_status tp_alloc_write(tp_allocator *alloc, const tp_bufref *ref, const void *data);

/* --- cross-backend staging (docs/allocator.md, "Staging") --------------------------------- */

/* The staging window on dst_backend for node's output: the first request for (node,
 * dst_backend) in the current plan takes a fresh buffer (alloc_fresh, never the free
 * list), later requests return the same window; all go back to the pools at the next
 * tp_alloc_graph. The node's canonical window is never remapped. */
TP_API tp_status tp_alloc_staging(tp_allocator *alloc, size_t node, int dst_backend,
                                  tp_bufref *out);

/* --- statistics ---------------------------------------------------------------------- */

typedef struct tp_plan_stats {
    size_t nodes, live_nodes, dead_nodes;      /* live = mapped (KV nodes included)       */
    size_t aliased_nodes;                      /* nodes sharing a source's window         */
    size_t buffers;                            /* activation + persistent buffers         */
    size_t activation_buffers;                 /* distinct non-persistent buffers used    */
    size_t persistent_buffers;                 /* all persistent regions                  */
    size_t mapped_buffers;                     /* distinct buffers named by some node     */
    size_t buffers_per_backend[TP_MAX_BACKENDS];
    size_t bytes_per_backend[TP_MAX_BACKENDS]; /* activation + persistent bytes           */
    size_t activation_bytes;                   /* lengths of the activation buffers       */
    size_t persistent_bytes;
    size_t naive_bytes;      /* every non-KV node its own exact-size buffer               */
    size_t peak_live_bytes;  /* lower bound: peak over build-order positions of the live
                                nodes' exact output bytes (an alias counted once)         */
    size_t peak_held_bytes;  /* peak over positions of the activation buffers held, each
                                from its first acquisition to its last release in this
                                plan (docs/allocator.md, "Expected figures")        */
    double plan_seconds;
} tp_plan_stats;

/* Statistics of the current plan (zeros when none). */
TP_API tp_plan_stats tp_alloc_stats(const tp_allocator *alloc);
/* Options the current plan was made with. */
TP_API tp_alloc_options tp_alloc_plan_options(const tp_allocator *alloc);

/* The distinct buffers of the current plan: activation buffers (in the arena strategy,
 * one arena per backend that has nodes) then every persistent region. */
typedef struct tp_plan_buffer {
    int backend;
    size_t id;
    size_t elems;
    int persistent;
    const char *name;  /* persistent regions only, else NULL */
} tp_plan_buffer;
TP_API size_t tp_alloc_plan_buffer_count(const tp_allocator *alloc);
TP_API tp_plan_buffer tp_alloc_plan_buffer_at(const tp_allocator *alloc, size_t i);

/* Pool allocations (alloc + alloc_fresh) over every backend since creation: a reused
 * graph executes without changing it. */
TP_API size_t tp_alloc_pool_allocations(const tp_allocator *alloc);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_ALLOC_H */
