/* tensorplan: the backend interface.
 *
 * Example:
 *
 *     tp_backend *cpu;
 *     size_t id;
 *     float in[4] = {1, 2, 3, 4}, out[4];
 *     if (tp_backend_create_cpu(&cpu) != TP_OK)
 *         return 1;
 *     tp_status st = cpu->alloc(cpu, 4, &id);        // a zeroed buffer of 4 floats
 *     if (st == TP_OK)
 *         st = cpu->write_window(cpu, id, 0, in, 4);
 *     if (st == TP_OK)
 *         st = cpu->read_window(cpu, id, 0, out, 4); // the same bits as in
 *     cpu->destroy(cpu);                             // the pool and the backend
 *     return st == TP_OK ? 0 : 1;
 *
 * A backend owns a pool of f32 buffers and executes nodes. Everything the allocator and the
 * scheduler need from it is behind the function pointers of tp_backend, so a real device
 * backend (CUDA, Metal) can be added without touching either.
 *
 * Pool rules (docs/backends.md, "The interface"): ids are stable for the backend's lifetime and memory
 * never moves (a device may capture raw pointers and replay them); a recycled id keeps its
 * length; `free` deallocates nothing. All sizes and offsets are in f32 elements. Integer
 * data rides in f32 buffers as bit patterns, so every host transfer is a bitwise copy. */
#ifndef TENSORPLAN_BACKEND_H
#define TENSORPLAN_BACKEND_H

#include <stddef.h>

#include "tensorplan/api.h"
#include "tensorplan/graph.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a node's output lives: a window of a pool buffer. Every reader and writer uses the
 * window, never the physical buffer length (a pool buffer is often longer than the node it
 * serves, because activations are requested by size class). */
typedef struct tp_bufref {
    int backend;   /* TP_BACKEND_CPU, TP_BACKEND_QUEUED, ...           */
    size_t id;     /* pool buffer id on that backend                   */
    size_t offset; /* first element of the window                      */
    size_t len;    /* elements in the window                           */
} tp_bufref;

struct tp_weights;
struct tp_backend;

/* One node to execute. The scheduler fills it; the backend reads its inputs through src[]
 * (staging already applied: every window is on this backend) and writes out. */
typedef struct tp_exec_args {
    const tp_graph *graph;
    const tp_node *node;
    const tp_bufref *src;   /* node->n_src windows, in source order                     */
    tp_bufref out;          /* the node's own window (for kv_store: the K region)        */
    int has_kv;             /* kv_store, kv_load and attn: the layer's regions below     */
    size_t kv_k, kv_v;      /* pool ids of the layer's K and V regions on this backend   */
    const struct tp_weights *weights;
    size_t n_ctx;           /* rows of each KV region; a position >= n_ctx is an error    */
} tp_exec_args;

/* Counters every pool keeps, for tests and reports. */
typedef struct tp_pool_counters {
    size_t allocs;        /* alloc calls (recycled or new)                        */
    size_t fresh_allocs;  /* alloc_fresh calls                                    */
    size_t recycled;      /* alloc calls served from the free list                */
    size_t frees;         /* free calls that put an id on the free list           */
} tp_pool_counters;

typedef struct tp_host_pool tp_host_pool;

typedef struct tp_backend {
    int id;              /* index in the allocator's backend table (TP_BACKEND_*)     */
    const char *name;    /* "cpu", "queued", ...                                     */
    tp_host_pool *host;  /* the pool when it lives in host memory, else NULL         */
    void *impl;          /* execution state private to the backend                   */

    /* --- pool -------------------------------------------------------------------- */
    /* First free id whose length is exactly elems (zeroed on the host when recycled),
     * else a new zeroed buffer appended. elems 0 is treated as 1. */
    tp_status (*alloc)(struct tp_backend *b, size_t elems, size_t *id);
    /* Always a new zeroed buffer; never consults the free list (split-boundary staging:
     * at execution time the free list holds ids whose contents are still to be read). */
    tp_status (*alloc_fresh)(struct tp_backend *b, size_t elems, size_t *id);
    /* Puts id on the free list. Idempotent; nothing is deallocated. */
    tp_status (*free_buffer)(struct tp_backend *b, size_t id);
    /* Takes a specific free id off the free list without allocating (the graph cache
     * re-maps a cached plan this way). Refused when id is not free. */
    tp_status (*reserve)(struct tp_backend *b, size_t id);
    /* Number of buffers ever created (ids are 0..count-1) and the length of one. */
    size_t (*buffer_count)(const struct tp_backend *b);
    size_t (*buffer_len)(const struct tp_backend *b, size_t id);
    int (*is_free)(const struct tp_backend *b, size_t id);
    /* Bitwise copies of n elements at offset (memcpy; never float arithmetic, so integer
     * bit patterns, which are subnormal floats, survive flush-to-zero modes). Refused when
     * the window leaves the buffer. */
    tp_status (*write_window)(struct tp_backend *b, size_t id, size_t offset, const void *data,
                              size_t n);
    tp_status (*read_window)(struct tp_backend *b, size_t id, size_t offset, void *data,
                             size_t n);
    /* Host address of a buffer when the pool is in host memory, else NULL. */
    float *(*host_data)(struct tp_backend *b, size_t id);
    tp_pool_counters (*counters)(const struct tp_backend *b);

    /* --- execution ----------------------------------------------------------------- */
    /* Executes (cpu) or records (queued) one node. */
    tp_status (*execute_node)(struct tp_backend *b, const tp_exec_args *args);
    /* Completes all recorded work. A host read of a buffer with pending work returns what
     * was there before that work. */
    tp_status (*synchronize)(struct tp_backend *b);
    int (*supports_op)(const struct tp_backend *b, tp_op op, tp_dtype dtype);

    /* Frees the pool and everything the backend owns, including b itself. */
    void (*destroy)(struct tp_backend *b);
} tp_backend;

/* The two host-memory backends. Both pools live in host memory; `queued` defers execution
 * to synchronize() like a GPU command buffer. */
TP_API tp_status tp_backend_create_cpu(tp_backend **out);
TP_API tp_status tp_backend_create_queued(tp_backend **out);

/* --- host pool: shared by every backend whose buffers live in host memory ------------- */

TP_API tp_status tp_host_pool_create(tp_host_pool **out);
TP_API void tp_host_pool_destroy(tp_host_pool *pool);
/* Creates a backend with id, name and every pool operation bound to a new host pool;
 * execute_node and synchronize refuse (TP_ERR_INVALID) and supports_op says no until the
 * caller sets them. destroy frees the pool and b; a backend that sets impl must set its own
 * destroy and call tp_backend_destroy_host from it. */
TP_API tp_status tp_backend_create_host(int id, const char *name, tp_backend **out);
TP_API void tp_backend_destroy_host(tp_backend *b);
/* As tp_backend_create_host, but buffers get a length and no memory: for planning and for
 * reporting what a plan would take (reads and writes of a buffer are refused, host_data is
 * NULL), so a plan of any size costs only its bookkeeping. */
TP_API tp_status tp_backend_create_planning(int id, const char *name, tp_backend **out);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_BACKEND_H */
