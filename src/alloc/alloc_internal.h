/* Internal: the allocator's structures, shared by the files of src/alloc, and what the graph cache
 * needs to keep several plans. */
#ifndef TP_ALLOC_INTERNAL_H
#define TP_ALLOC_INTERNAL_H

#include "tensorplan/alloc.h"

#include <stddef.h>

#include "tensorplan/planner.h"

#include "alloc/alloc_debug.h"

typedef struct tp_plan tp_plan;

/* A buffer the plan holds (not persistent): a pool buffer (pool strategy) or a logical
 * buffer that becomes a window of the backend's arena (arena strategy). */
typedef struct held_buf {
    int backend;
    size_t id;        /* pool id; arena strategy: the arena's pool id once placed       */
    size_t elems;     /* pool buffer length; arena: the logical buffer's exact length   */
    size_t first;     /* position of the first acquisition                              */
    size_t deadline;  /* last position its contents are needed                          */
    size_t offset;    /* arena strategy: offset in the arena                            */
} held_buf;

typedef struct staging_entry {
    size_t node;
    tp_bufref ref;
} staging_entry;

struct tp_plan {
    const tp_graph *graph;
    size_t n;
    tp_bufref *buf;
    unsigned char *mapped;
    size_t *alias_of;
    /* The liveness the walk used, per node (tp_alloc_node_lifetime): the step its value
     * starts being needed and its last use, a group root's raised to its members'. */
    size_t *first_use, *last_use;
    /* Pool buffers (or arenas) the plan holds, each once; released at the next plan. */
    tp_bufref *held;
    size_t n_held, cap_held;
    staging_entry *staging;
    size_t n_staging, cap_staging;
    tp_alloc_options opts;
    tp_plan_stats stats;
};

typedef struct kv_entry {
    int layer;
    size_t k, v; /* indices into persistent[] */
} kv_entry;

struct tp_allocator {
    tp_backend *backends[TP_MAX_BACKENDS];
    tp_persistent_region *persistent;
    size_t n_persistent, cap_persistent;
    /* Regions named by callers (not KV), for named_clash. */
    size_t *named;
    size_t n_named, cap_named;
    kv_entry *kv;
    size_t n_kv, cap_kv;
    tp_plan *plan;
    tp_alloc_test_switches test; /* all zero but in regression tests (alloc_debug.h) */
};


static inline int tp_alloc_node_backend(const tp_node *node)
{
    /* an unassigned node runs on the CPU (docs/graph.md, "Assignment and fusion") */
    return node->backend == TP_BACKEND_UNSET ? TP_BACKEND_CPU : node->backend;
}


/* (backend, pool id) -> a value, SIZE_MAX when absent: the allocator's sets of buffers,
 * looked up in constant time (a linear search per node made wide graphs quadratic). */
typedef struct idmap {
    size_t *v[TP_MAX_BACKENDS];
    size_t cap[TP_MAX_BACKENDS];
} idmap;

void tp_idmap_free(idmap *m);
/* The slot of (backend, id), grown as needed; NULL when out of memory. */
size_t *tp_idmap_slot(idmap *m, int backend, size_t id);

typedef struct sweep_entry {
    size_t hb;   /* index into hb[] */
    size_t next; /* next entry of the same deadline, SIZE_MAX at the end */
} sweep_entry;

/* Working state of one alloc_graph call. */
typedef struct walk {
    tp_allocator *a;
    const tp_graph *g;
    tp_plan *p;
    size_t n;
    size_t *order, *pos;
    size_t *last_use;       /* position of the last consumer, pinned to n              */
    size_t *last_consumer;  /* position of the last consumer, SIZE_MAX when none        */
    size_t *n_consumers;
    unsigned char *is_input, *is_output;
    size_t *start;          /* position the node's value starts being needed            */
    size_t *held_of;        /* per node: index in hb[] of its buffer, SIZE_MAX if none  */
    held_buf *hb;           /* every acquisition (pool) or logical buffer (arena)       */
    size_t n_hb, cap_hb;
    /* The liveness table as buckets by deadline: bucket[d] lists the hb[] entries whose
     * deadline was d when filed; an entry whose deadline grew since is filed again under
     * the new one and skipped under the old. */
    size_t *bucket;         /* n + 1 heads into entries[]                                */
    sweep_entry *entries;
    size_t n_entries, cap_entries;
    size_t swept;           /* buckets [0, swept) have been released                    */
    idmap held;             /* pool buffers in p->held                                  */
} walk;


/* Lifetime helpers (alloc.c): a plan's storage, and its buffers back to the free lists. */
void tp_alloc_plan_free(tp_plan *p);
void tp_alloc_plan_release(tp_allocator *a, tp_plan *p);
/* The current plan, if any, released and freed; the allocator then holds none. */
void tp_alloc_drop_plan(tp_allocator *a);
/* The bufref of a whole persistent region (alloc_regions.c). */
tp_bufref tp_alloc_region_ref(const tp_persistent_region *r);

/* Planning one graph, in the order tp_alloc_graph (alloc_place.c) runs them. */
void tp_walk_free(walk *w);                        /* alloc_liveness.c */
tp_status tp_walk_liveness(walk *w);               /* alloc_liveness.c */
tp_status tp_walk_run(walk *w);                    /* alloc_walk.c     */
tp_status tp_walk_stats(walk *w, double t0);       /* alloc_stats.c    */
/* Records pool buffer (backend, id) in the plan's held list once (alloc_walk.c). */
tp_status tp_walk_hold(walk *w, int backend, size_t id);


/* Takes the current plan out of the allocator: its buffers and staging buffers go back to
 * the free lists, its mapping is kept. NULL when there is no plan. */
tp_plan *tp_alloc_detach_plan(tp_allocator *alloc);
/* Makes a detached plan current again, destroying the current plan (if any) first. Takes
 * its buffers back off the free lists without allocating. On failure the plan is still the
 * caller's and the allocator holds none. */
tp_status tp_alloc_attach_plan(tp_allocator *alloc, tp_plan *plan);
/* Destroys a detached plan (its buffers were already released). */
void tp_plan_destroy(tp_plan *plan);

#endif
