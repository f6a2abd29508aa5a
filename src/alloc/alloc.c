/* The graph allocator (allocator.md sections 2-6 and 10).
 *
 * One walk over a finished graph in build order hands every live node a window of a pool
 * buffer. Pool strategy: exact-length pool buffers requested by size class, swept back to
 * the free lists when their deadline passes. Arena strategy: the same walk produces logical
 * buffers with the same build-order lifetimes, and the planner places each backend's
 * logical buffers at offsets in one arena buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc/alloc_internal.h"
#include "common/error.h"
#include "tensorplan/planner.h"

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
};

/* --- small helpers ------------------------------------------------------------------- */

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return 0;
    *arr = p;
    *cap = c;
    return 1;
}

size_t tp_size_class(size_t e)
{
    if (e < 1)
        e = 1;
    if (e <= 256)
        return 256;
    if (e <= 4096) {
        size_t p = 512;
        while (p < e)
            p *= 2;
        return p;
    }
    if (e > SIZE_MAX - 4095)
        return e;
    return (e + 4095) / 4096 * 4096;
}

tp_alloc_options tp_alloc_options_default(void)
{
    tp_alloc_options o;
    memset(&o, 0, sizeof o);
    o.strategy = TP_STRATEGY_POOL;
    o.aliasing = TP_ALIAS_SOLE_CONSUMER;
    o.size_classes = 1;
    o.liveness_order = TP_LIVENESS_BUILD;
    o.pin_inputs = 1;
    o.inputs_first = 1;
    o.alias_deadline_fix = 1;
    return o;
}

const char *tp_alloc_strategy_name(tp_alloc_strategy s)
{
    switch (s) {
    case TP_STRATEGY_POOL: return "pool";
    case TP_STRATEGY_ARENA: return "arena";
    case TP_STRATEGY_NAIVE: return "naive";
    }
    return "unknown";
}

tp_status tp_alloc_strategy_from_name(const char *name, tp_alloc_strategy *s)
{
    if (!name || !s)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_strategy_from_name: NULL argument");
    if (strcmp(name, "pool") == 0)
        *s = TP_STRATEGY_POOL;
    else if (strcmp(name, "arena") == 0)
        *s = TP_STRATEGY_ARENA;
    else if (strcmp(name, "naive") == 0)
        *s = TP_STRATEGY_NAIVE;
    else
        return tp_fail(TP_ERR_INVALID, "unknown strategy '%s' (expected pool, arena or naive)",
                       name);
    return TP_OK;
}

const char *tp_alias_policy_name(tp_alias_policy p)
{
    switch (p) {
    case TP_ALIAS_SOLE_CONSUMER: return "sole-consumer";
    case TP_ALIAS_LAST_CONSUMER: return "last-consumer";
    case TP_ALIAS_NONE: return "none";
    }
    return "unknown";
}

tp_status tp_alias_policy_from_name(const char *name, tp_alias_policy *p)
{
    if (!name || !p)
        return tp_fail(TP_ERR_INVALID, "tp_alias_policy_from_name: NULL argument");
    if (strcmp(name, "sole-consumer") == 0)
        *p = TP_ALIAS_SOLE_CONSUMER;
    else if (strcmp(name, "last-consumer") == 0)
        *p = TP_ALIAS_LAST_CONSUMER;
    else if (strcmp(name, "none") == 0)
        *p = TP_ALIAS_NONE;
    else
        return tp_fail(TP_ERR_INVALID,
                       "unknown aliasing policy '%s' (expected sole-consumer, last-consumer "
                       "or none)",
                       name);
    return TP_OK;
}

/* --- allocator lifetime ------------------------------------------------------------------ */

tp_status tp_allocator_create(tp_backend *const *backends, size_t n, tp_allocator **out)
{
    if (!out || (n && !backends))
        return tp_fail(TP_ERR_INVALID, "tp_allocator_create: NULL argument");
    for (size_t i = 0; i < n; i++) {
        if (!backends[i] || backends[i]->id < 0 || backends[i]->id >= TP_MAX_BACKENDS)
            return tp_fail(TP_ERR_INVALID, "tp_allocator_create: backend %zu is invalid", i);
        for (size_t j = 0; j < i; j++)
            if (backends[j]->id == backends[i]->id)
                return tp_fail(TP_ERR_INVALID, "tp_allocator_create: backend id %d twice",
                               backends[i]->id);
    }
    tp_allocator *a = calloc(1, sizeof *a);
    if (!a)
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    for (size_t i = 0; i < n; i++)
        a->backends[backends[i]->id] = backends[i];
    *out = a;
    return TP_OK;
}

tp_status tp_allocator_create_host(tp_allocator **out)
{
    tp_backend *b[2] = {NULL, NULL};
    tp_status st = tp_backend_create_cpu(&b[0]);
    if (st == TP_OK)
        st = tp_backend_create_queued(&b[1]);
    if (st == TP_OK)
        st = tp_allocator_create(b, 2, out);
    if (st != TP_OK) {
        for (int i = 0; i < 2; i++)
            if (b[i])
                b[i]->destroy(b[i]);
    }
    return st;
}

static void plan_free(tp_plan *p)
{
    if (!p)
        return;
    free(p->buf);
    free(p->mapped);
    free(p->alias_of);
    free(p->held);
    free(p->staging);
    free(p);
}

void tp_plan_destroy(tp_plan *p)
{
    plan_free(p);
}

/* Returns the plan's buffers and staging buffers to their pools. */
static void plan_release(tp_allocator *a, tp_plan *p)
{
    for (size_t i = 0; i < p->n_held; i++) {
        tp_backend *b = a->backends[p->held[i].backend];
        b->free_buffer(b, p->held[i].id);
    }
    for (size_t i = 0; i < p->n_staging; i++) {
        tp_backend *b = a->backends[p->staging[i].ref.backend];
        b->free_buffer(b, p->staging[i].ref.id);
    }
}

void tp_allocator_destroy(tp_allocator *a)
{
    if (!a)
        return;
    plan_free(a->plan);
    for (int i = 0; i < TP_MAX_BACKENDS; i++)
        if (a->backends[i])
            a->backends[i]->destroy(a->backends[i]);
    free(a->persistent);
    free(a->named);
    free(a->kv);
    free(a);
}

tp_backend *tp_alloc_backend(const tp_allocator *a, int backend)
{
    if (!a || backend < 0 || backend >= TP_MAX_BACKENDS)
        return NULL;
    return a->backends[backend];
}

tp_plan *tp_alloc_detach_plan(tp_allocator *a)
{
    if (!a || !a->plan)
        return NULL;
    tp_plan *p = a->plan;
    plan_release(a, p);
    a->plan = NULL;
    return p;
}

tp_status tp_alloc_attach_plan(tp_allocator *a, tp_plan *p)
{
    if (!a || !p)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_attach_plan: NULL argument");
    if (a->plan) {
        plan_release(a, a->plan);
        plan_free(a->plan);
        a->plan = NULL;
    }
    /* Re-mapping takes the plan's own buffers back; it never allocates. Every buffer the
     * plan names is free now: only the current plan holds activation buffers, and
     * persistent regions and staging buffers are always fresh pool buffers. */
    size_t total = p->n_held + p->n_staging, k = 0;
    tp_status st = TP_OK;
    for (; k < total; k++) {
        const tp_bufref *r = k < p->n_held ? &p->held[k] : &p->staging[k - p->n_held].ref;
        tp_backend *b = a->backends[r->backend];
        st = b->reserve(b, r->id);
        if (st != TP_OK)
            break;
    }
    if (st != TP_OK) {
        for (size_t j = 0; j < k; j++) {
            const tp_bufref *r = j < p->n_held ? &p->held[j] : &p->staging[j - p->n_held].ref;
            a->backends[r->backend]->free_buffer(a->backends[r->backend], r->id);
        }
        return st;
    }
    a->plan = p;
    return TP_OK;
}

/* --- persistent regions and KV ------------------------------------------------------------ */

static tp_bufref region_ref(const tp_persistent_region *r)
{
    tp_bufref ref = {r->backend, r->id, 0, r->elems};
    return ref;
}

const tp_persistent_region *tp_alloc_find_persistent(const tp_allocator *a, const char *name)
{
    if (!a || !name)
        return NULL;
    for (size_t i = 0; i < a->n_persistent; i++)
        if (strcmp(a->persistent[i].name, name) == 0)
            return &a->persistent[i];
    return NULL;
}

/* Whether a caller's region already has this name. A layer without KV regions can clash
 * with nothing else, so creating the KV of many layers does not search every region. */
static int named_clash(const tp_allocator *a, const char *name)
{
    for (size_t i = 0; i < a->n_named; i++)
        if (strcmp(a->persistent[a->named[i]].name, name) == 0)
            return 1;
    return 0;
}

static tp_status persistent_new(tp_allocator *a, const char *name, int backend, size_t elems,
                                int kv, size_t *index)
{
    if (strlen(name) >= TP_NAME_MAX)
        return tp_fail(TP_ERR_INVALID, "persistent region name '%s' is too long", name);
    /* KV names were checked by the caller (see named_clash) */
    if (!kv) {
        if (tp_alloc_find_persistent(a, name))
            return tp_fail(TP_ERR_INVALID, "persistent region '%s' exists already", name);
        if (!grow((void **)&a->named, &a->cap_named, a->n_named + 1, sizeof *a->named))
            return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    }
    tp_backend *b = tp_alloc_backend(a, backend);
    if (!b)
        return tp_fail(TP_ERR_INVALID, "persistent region '%s': no backend %d", name, backend);
    if (elems == 0)
        return tp_fail(TP_ERR_INVALID, "persistent region '%s': zero elements", name);
    if (!grow((void **)&a->persistent, &a->cap_persistent, a->n_persistent + 1,
              sizeof *a->persistent))
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    size_t id;
    /* Fresh, never from the free list: a cached plan that is not current may still name
     * a free buffer, and re-mapping it must find that buffer unused. */
    tp_status st = b->alloc_fresh(b, elems, &id);
    if (st != TP_OK)
        return st;
    tp_persistent_region *r = &a->persistent[a->n_persistent];
    memset(r, 0, sizeof *r);
    strcpy(r->name, name);
    r->backend = backend;
    r->id = id;
    r->elems = elems;
    if (!kv)
        a->named[a->n_named++] = a->n_persistent;
    *index = a->n_persistent++;
    return TP_OK;
}

tp_status tp_alloc_persistent(tp_allocator *a, const char *name, int backend, size_t elems,
                              tp_bufref *out)
{
    if (!a || !name)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_persistent: NULL argument");
    size_t idx;
    tp_status st = persistent_new(a, name, backend, elems, 0, &idx);
    if (st == TP_OK && out)
        *out = region_ref(&a->persistent[idx]);
    return st;
}

size_t tp_alloc_persistent_count(const tp_allocator *a)
{
    return a ? a->n_persistent : 0;
}

const tp_persistent_region *tp_alloc_persistent_at(const tp_allocator *a, size_t i)
{
    if (!a || i >= a->n_persistent)
        return NULL;
    return &a->persistent[i];
}

tp_status tp_alloc_ensure_kv(tp_allocator *a, int layer, int backend, size_t elems,
                             tp_bufref *k, tp_bufref *v)
{
    if (!a)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_ensure_kv: NULL allocator");
    if (layer < 0)
        return tp_fail(TP_ERR_INVALID, "KV regions need a layer >= 0 (got %d)", layer);
    for (size_t i = 0; i < a->n_kv; i++) {
        if (a->kv[i].layer != layer)
            continue;
        const tp_persistent_region *rk = &a->persistent[a->kv[i].k];
        const tp_persistent_region *rv = &a->persistent[a->kv[i].v];
        /* A region sized on first use must never be handed out at another size or on
         * another backend: the chapter's silent reuse hid n_ctx mismatches. */
        if (rk->elems != elems)
            return tp_fail(TP_ERR_INVALID,
                           "KV layer %d: regions have %zu elements, a node asks for %zu "
                           "(n_ctx must be the same for every graph of a run)",
                           layer, rk->elems, elems);
        if (rk->backend != backend)
            return tp_fail(TP_ERR_INVALID,
                           "KV layer %d: regions live on %s, a node on %s asks for them", layer,
                           tp_backend_name(rk->backend), tp_backend_name(backend));
        if (k)
            *k = region_ref(rk);
        if (v)
            *v = region_ref(rv);
        return TP_OK;
    }
    if (!grow((void **)&a->kv, &a->cap_kv, a->n_kv + 1, sizeof *a->kv))
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    char kname[TP_NAME_MAX], vname[TP_NAME_MAX];
    size_t ik, iv;
    snprintf(kname, sizeof kname, "kv.%d.k", layer);
    snprintf(vname, sizeof vname, "kv.%d.v", layer);
    /* both names before either region, so a refusal leaves no half pair behind */
    for (int i = 0; i < 2; i++)
        if (named_clash(a, i ? vname : kname))
            return tp_fail(TP_ERR_INVALID, "persistent region '%s' exists already",
                           i ? vname : kname);
    tp_status st = persistent_new(a, kname, backend, elems, 1, &ik);
    if (st != TP_OK)
        return st;
    st = persistent_new(a, vname, backend, elems, 1, &iv);
    if (st != TP_OK)
        return st;
    a->kv[a->n_kv].layer = layer;
    a->kv[a->n_kv].k = ik;
    a->kv[a->n_kv].v = iv;
    a->n_kv++;
    if (k)
        *k = region_ref(&a->persistent[ik]);
    if (v)
        *v = region_ref(&a->persistent[iv]);
    return TP_OK;
}

int tp_alloc_kv_pair(const tp_allocator *a, int layer, tp_bufref *k, tp_bufref *v)
{
    if (!a)
        return 0;
    for (size_t i = 0; i < a->n_kv; i++) {
        if (a->kv[i].layer == layer) {
            if (k)
                *k = region_ref(&a->persistent[a->kv[i].k]);
            if (v)
                *v = region_ref(&a->persistent[a->kv[i].v]);
            return 1;
        }
    }
    return 0;
}

size_t tp_alloc_kv_count(const tp_allocator *a)
{
    return a ? a->n_kv : 0;
}

int tp_alloc_kv_at(const tp_allocator *a, size_t i, int *layer, tp_bufref *k, tp_bufref *v)
{
    if (!a || i >= a->n_kv)
        return 0;
    if (layer)
        *layer = a->kv[i].layer;
    if (k)
        *k = region_ref(&a->persistent[a->kv[i].k]);
    if (v)
        *v = region_ref(&a->persistent[a->kv[i].v]);
    return 1;
}

/* --- the walk ------------------------------------------------------------------------------ */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int node_backend(const tp_node *node)
{
    /* an unassigned node runs on the CPU, as in the chapter's unwrap_or(CPU) */
    return node->backend == TP_BACKEND_UNSET ? TP_BACKEND_CPU : node->backend;
}

/* (backend, pool id) -> a value, SIZE_MAX when absent: the allocator's sets of buffers,
 * looked up in constant time (a linear search per node made wide graphs quadratic). */
typedef struct idmap {
    size_t *v[TP_MAX_BACKENDS];
    size_t cap[TP_MAX_BACKENDS];
} idmap;

static void idmap_free(idmap *m)
{
    for (int b = 0; b < TP_MAX_BACKENDS; b++)
        free(m->v[b]);
    memset(m, 0, sizeof *m);
}

/* The slot of (backend, id), grown as needed; NULL when out of memory. */
static size_t *idmap_slot(idmap *m, int backend, size_t id)
{
    if (id >= m->cap[backend]) {
        size_t cap = m->cap[backend] ? m->cap[backend] : 16;
        while (cap <= id)
            cap *= 2;
        size_t *v = realloc(m->v[backend], cap * sizeof *v);
        if (!v)
            return NULL;
        for (size_t k = m->cap[backend]; k < cap; k++)
            v[k] = SIZE_MAX;
        m->v[backend] = v;
        m->cap[backend] = cap;
    }
    return &m->v[backend][id];
}

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

static void walk_free(walk *w)
{
    free(w->order);
    free(w->pos);
    free(w->last_use);
    free(w->last_consumer);
    free(w->n_consumers);
    free(w->is_input);
    free(w->is_output);
    free(w->start);
    free(w->held_of);
    free(w->hb);
    free(w->bucket);
    free(w->entries);
    idmap_free(&w->held);
}

static tp_status plan_hold(walk *w, int backend, size_t id)
{
    tp_plan *p = w->p;
    size_t *slot = idmap_slot(&w->held, backend, id);
    if (!slot)
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    if (*slot != SIZE_MAX)
        return TP_OK;
    if (!grow((void **)&p->held, &p->cap_held, p->n_held + 1, sizeof *p->held))
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    tp_bufref r = {backend, id, 0, 0};
    *slot = p->n_held;
    p->held[p->n_held++] = r;
    return TP_OK;
}

/* Files hb[k] in the liveness table under its current deadline. */
static tp_status track(walk *w, size_t k)
{
    if (!grow((void **)&w->entries, &w->cap_entries, w->n_entries + 1, sizeof *w->entries))
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    size_t d = w->hb[k].deadline;
    w->entries[w->n_entries].hb = k;
    w->entries[w->n_entries].next = w->bucket[d];
    w->bucket[d] = w->n_entries++;
    return TP_OK;
}

/* An ordinary buffer for node id at position t, tracked with the node's deadline. */
static tp_status acquire(walk *w, size_t id, size_t t)
{
    const tp_node *node = &w->g->nodes[id];
    int be = node_backend(node);
    size_t elems = tp_node_elements(node);
    if (!grow((void **)&w->hb, &w->cap_hb, w->n_hb + 1, sizeof *w->hb))
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    held_buf h;
    memset(&h, 0, sizeof h);
    h.backend = be;
    h.first = t;
    h.deadline = w->last_use[id];
    /* naive: held to the end of the graph, so no buffer is ever handed to a second node */
    if (w->p->opts.strategy == TP_STRATEGY_NAIVE)
        h.deadline = w->n;
    if (w->p->opts.strategy != TP_STRATEGY_ARENA) {
        tp_backend *b = w->a->backends[be];
        size_t len = w->p->opts.size_classes && w->p->opts.strategy == TP_STRATEGY_POOL
                         ? tp_size_class(elems)
                         : elems;
        tp_status st = b->alloc(b, len, &h.id);
        if (st != TP_OK)
            return st;
        h.elems = len;
        st = plan_hold(w, be, h.id);
        if (st != TP_OK) {
            b->free_buffer(b, h.id);
            return st;
        }
    } else {
        h.id = w->n_hb; /* logical; the arena id is known after placement */
        h.elems = elems;
    }
    w->hb[w->n_hb] = h;
    tp_status st = track(w, w->n_hb);
    if (st != TP_OK)
        return st; /* a pool buffer taken above is in p->held: released with the plan */
    w->held_of[id] = w->n_hb;
    w->n_hb++;
    tp_bufref r = {be, h.id, 0, elems};
    w->p->buf[id] = r;
    w->p->mapped[id] = 1;
    return TP_OK;
}

/* Before position t: every tracked buffer whose deadline passed goes back to its pool. */
static void sweep(walk *w, size_t t)
{
    for (; w->swept < t; w->swept++) {
        for (size_t e = w->bucket[w->swept]; e != SIZE_MAX; e = w->entries[e].next) {
            const held_buf *h = &w->hb[w->entries[e].hb];
            if (h->deadline != w->swept)
                continue; /* its deadline grew: it is filed under the later one too */
            if (w->p->opts.strategy != TP_STRATEGY_ARENA) {
                tp_backend *b = w->a->backends[h->backend];
                b->free_buffer(b, h->id);
            }
        }
    }
}

static int inplace_op(tp_alias_policy policy, tp_op op)
{
    switch (policy) {
    case TP_ALIAS_SOLE_CONSUMER:
        return op == TP_OP_SILU || op == TP_OP_ROPE;
    case TP_ALIAS_LAST_CONSUMER:
        return op == TP_OP_SILU || op == TP_OP_ROPE || op == TP_OP_ADD || op == TP_OP_MUL ||
               op == TP_OP_RMS_NORM || op == TP_OP_SWIGLU;
    case TP_ALIAS_NONE:
        return 0;
    }
    return 0;
}

/* Whether node id at position t may write its output into its first source's window. */
static int may_alias(walk *w, size_t id, size_t t)
{
    const tp_node *node = &w->g->nodes[id];
    if (w->p->opts.strategy == TP_STRATEGY_NAIVE)
        return 0;
    if (!inplace_op(w->p->opts.aliasing, node->op) || node->n_src < 1)
        return 0;
    size_t s = node->src[0];
    if (!w->p->mapped[s] || w->held_of[s] == SIZE_MAX)
        return 0; /* KV regions and unmapped sources are never written in place */
    /* the host fills inputs and reads outputs outside the walk: never overwrite either */
    if (w->is_input[s] || w->is_output[s])
        return 0;
    const tp_bufref *in = &w->p->buf[s];
    /* Same backend only: the in-place write stays in kernel order on one queue, and a
     * cross-backend input gets a fresh buffer after its producer synchronised. (Bug: a host
     * copy of a queued producer read zeros and the whole KV cache became zeros.) */
    if (in->backend != node_backend(node))
        return 0;
    if (in->len != tp_node_elements(node))
        return 0;
    if (w->p->opts.aliasing == TP_ALIAS_SOLE_CONSUMER) {
        /* another reader of the source would see it overwritten */
        if (w->n_consumers[s] != 1)
            return 0;
    } else if (w->last_consumer[s] != t) {
        return 0; /* a later node still reads the source */
    }
    /* the buffer itself (it may carry earlier aliases) must not be needed after t */
    if (w->hb[w->held_of[s]].deadline > t)
        return 0;
    return 1;
}

static tp_status check_graph(const tp_allocator *a, const tp_graph *g)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        const tp_node *node = &g->nodes[i];
        if (node->n_src > TP_MAX_SRC)
            return tp_fail(TP_ERR_INVALID, "node %zu: %zu sources (at most %d)", i,
                           node->n_src, TP_MAX_SRC);
        for (size_t k = 0; k < node->n_src; k++)
            if (node->src[k] >= g->n_nodes)
                return tp_fail(TP_ERR_INVALID, "node %zu: source %zu does not exist", i,
                               node->src[k]);
        if (tp_node_elements(node) == 0)
            return tp_fail(TP_ERR_INVALID, "node %zu '%s': empty, negative or overflowing shape",
                           i, node->name);
        int be = node_backend(node);
        if (!tp_alloc_backend(a, be))
            return tp_fail(TP_ERR_INVALID, "node %zu '%s': backend %d (%s) is not available",
                           i, node->name, be, tp_backend_name(be));
        if ((node->op == TP_OP_KV_STORE || node->op == TP_OP_KV_LOAD) && node->p.layer < 0)
            return tp_fail(TP_ERR_INVALID, "node %zu '%s': %s needs a layer", i, node->name,
                           tp_op_name(node->op));
    }
    for (size_t i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] >= g->n_nodes)
            return tp_fail(TP_ERR_INVALID, "input %zu names node %zu, which does not exist", i,
                           g->inputs[i]);
    for (size_t i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] >= g->n_nodes)
            return tp_fail(TP_ERR_INVALID, "output %zu names node %zu, which does not exist", i,
                           g->outputs[i]);
    return TP_OK;
}

static tp_status place_arenas(walk *w)
{
    tp_plan *p = w->p;
    tp_tensor_lifetime *lt = malloc((w->n_hb ? w->n_hb : 1) * sizeof *lt);
    size_t *idx = malloc((w->n_hb ? w->n_hb : 1) * sizeof *idx);
    size_t *off = malloc((w->n_hb ? w->n_hb : 1) * sizeof *off);
    tp_status st = TP_OK;
    if (!lt || !idx || !off) {
        st = tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
        goto done;
    }
    for (int be = 0; be < TP_MAX_BACKENDS && st == TP_OK; be++) {
        size_t m = 0;
        for (size_t i = 0; i < w->n_hb; i++) {
            if (w->hb[i].backend != be)
                continue;
            /* sizes in elements: the planner's offsets are then element offsets */
            lt[m].size = w->hb[i].elems;
            lt[m].first_use = w->hb[i].first;
            lt[m].last_use = w->hb[i].deadline;
            idx[m++] = i;
        }
        if (m == 0)
            continue;
        size_t arena = 0;
        st = tp_plan_offsets(lt, m, off, &arena);
        if (st != TP_OK)
            break;
        tp_backend *b = w->a->backends[be];
        size_t len = p->opts.size_classes ? tp_size_class(arena) : (arena ? arena : 1);
        size_t id;
        st = b->alloc(b, len, &id);
        if (st != TP_OK)
            break;
        st = plan_hold(w, be, id);
        if (st != TP_OK) {
            b->free_buffer(b, id);
            break;
        }
        for (size_t k = 0; k < m; k++) {
            w->hb[idx[k]].offset = off[k];
            w->hb[idx[k]].id = id;
        }
    }
    if (st == TP_OK) {
        for (size_t i = 0; i < w->n; i++) {
            if (!p->mapped[i] || w->held_of[i] == SIZE_MAX)
                continue;
            const held_buf *h = &w->hb[w->held_of[i]];
            p->buf[i].id = h->id;
            p->buf[i].offset = h->offset;
        }
    }
done:
    free(lt);
    free(idx);
    free(off);
    return st;
}

static tp_status compute_stats(walk *w, double t0)
{
    tp_allocator *a = w->a;
    tp_plan *p = w->p;
    tp_plan_stats *s = &p->stats;
    memset(s, 0, sizeof *s);
    s->nodes = w->n;
    idmap seen, span;
    memset(&seen, 0, sizeof seen);
    memset(&span, 0, sizeof span);
    tp_tensor_lifetime *lt = malloc((w->n + w->n_hb + 1) * sizeof *lt);
    tp_status st = lt ? TP_OK : tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    size_t n_seen = 0, m = 0;
    for (size_t i = 0; i < w->n && st == TP_OK; i++) {
        const tp_node *node = &w->g->nodes[i];
        /* Saturating: a dead node is never allocated, so nothing else bounds its size, and
         * the naive total of a few huge dead nodes must not wrap to a small number. */
        size_t elems = tp_node_elements(node);
        size_t bytes = elems > SIZE_MAX / sizeof(float) ? SIZE_MAX : elems * sizeof(float);
        int kv = node->op == TP_OP_KV_STORE || node->op == TP_OP_KV_LOAD;
        if (!kv)
            s->naive_bytes = bytes > SIZE_MAX - s->naive_bytes ? SIZE_MAX : s->naive_bytes + bytes;
        if (!p->mapped[i])
            continue;
        s->live_nodes++;
        if (p->alias_of[i] != TP_NO_ALIAS)
            s->aliased_nodes++;
        size_t *slot = idmap_slot(&seen, p->buf[i].backend, p->buf[i].id);
        if (!slot) {
            st = tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
            break;
        }
        if (*slot == SIZE_MAX)
            *slot = n_seen++;
        if (!kv && p->alias_of[i] == TP_NO_ALIAS) {
            lt[m].size = bytes;
            lt[m].first_use = w->start[i];
            lt[m].last_use = w->last_use[i];
            m++;
        }
    }
    s->dead_nodes = w->n - s->live_nodes;
    s->mapped_buffers = n_seen;
    if (st == TP_OK)
        st = tp_peak_live_bytes(lt, m, &s->peak_live_bytes);
    if (st == TP_OK) {
        /* held spans: per pool buffer from its first acquisition to its last release; in
         * the arena strategy each logical buffer is its own span */
        m = 0;
        for (size_t i = 0; i < w->n_hb && st == TP_OK; i++) {
            const held_buf *h = &w->hb[i];
            size_t j = m;
            if (p->opts.strategy != TP_STRATEGY_ARENA) {
                size_t *slot = idmap_slot(&span, h->backend, h->id);
                if (!slot) {
                    st = tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
                    break;
                }
                if (*slot == SIZE_MAX)
                    *slot = m;
                j = *slot;
            }
            if (j == m) {
                lt[m].size = h->elems * sizeof(float);
                lt[m].first_use = h->first;
                lt[m].last_use = h->deadline;
                m++;
            } else {
                if (h->first < lt[j].first_use)
                    lt[j].first_use = h->first;
                if (h->deadline > lt[j].last_use)
                    lt[j].last_use = h->deadline;
            }
        }
        if (st == TP_OK)
            st = tp_peak_live_bytes(lt, m, &s->peak_held_bytes);
    }
    idmap_free(&seen);
    idmap_free(&span);
    free(lt);
    if (st != TP_OK)
        return st;
    for (size_t i = 0; i < p->n_held; i++) {
        tp_backend *b = a->backends[p->held[i].backend];
        size_t bytes = b->buffer_len(b, p->held[i].id) * sizeof(float);
        s->activation_buffers++;
        s->activation_bytes += bytes;
        s->buffers_per_backend[p->held[i].backend]++;
        s->bytes_per_backend[p->held[i].backend] += bytes;
    }
    for (size_t i = 0; i < a->n_persistent; i++) {
        size_t bytes = a->persistent[i].elems * sizeof(float);
        s->persistent_buffers++;
        s->persistent_bytes += bytes;
        s->buffers_per_backend[a->persistent[i].backend]++;
        s->bytes_per_backend[a->persistent[i].backend] += bytes;
    }
    s->buffers = s->activation_buffers + s->persistent_buffers;
    s->plan_seconds = now_seconds() - t0;
    return TP_OK;
}

static tp_status walk_run(walk *w)
{
    tp_plan *p = w->p;
    const tp_graph *g = w->g;
    size_t n = w->n;
    tp_status st;

    /* The scheduler executes nodes in build order, so liveness must use the same order.
     * (Bug: a Kahn order moved source-less kv_load nodes first, the residual stream looked
     * dead early, attention's output overwrote it, logits were off by 21.79.) The Kahn sort
     * only validates acyclicity; its order is used solely by the liveness_order debug
     * switch that reproduces that bug. */
    st = tp_graph_kahn_order(g, w->order);
    if (st != TP_OK)
        return st;
    if (p->opts.liveness_order == TP_LIVENESS_BUILD)
        for (size_t i = 0; i < n; i++)
            w->order[i] = i;
    for (size_t t = 0; t < n; t++)
        w->pos[w->order[t]] = t;

    for (size_t i = 0; i < n; i++) {
        w->last_use[i] = w->pos[i];
        w->last_consumer[i] = SIZE_MAX;
        w->held_of[i] = SIZE_MAX;
        w->start[i] = w->pos[i];
        p->alias_of[i] = TP_NO_ALIAS;
    }
    for (size_t i = 0; i < n; i++) {
        const tp_node *node = &g->nodes[i];
        for (size_t k = 0; k < node->n_src; k++) {
            size_t s = node->src[k];
            w->n_consumers[s]++; /* duplicates count */
            if (w->pos[i] > w->last_use[s])
                w->last_use[s] = w->pos[i];
            if (w->last_consumer[s] == SIZE_MAX || w->pos[i] > w->last_consumer[s])
                w->last_consumer[s] = w->pos[i];
        }
    }
    for (size_t k = 0; k < g->n_outputs; k++) {
        w->is_output[g->outputs[k]] = 1;
        w->last_use[g->outputs[k]] = n; /* read after the whole graph ran */
    }
    for (size_t k = 0; k < g->n_inputs; k++) {
        w->is_input[g->inputs[k]] = 1;
        /* Inputs are host-filled before execution, so their buffers must never be handed
         * to anyone. (Bug: positions took token_ids' buffer and the later fill clobbered
         * the ids.) */
        if (p->opts.pin_inputs)
            w->last_use[g->inputs[k]] = n;
    }

    /* [fix] Every input gets its buffer before the walk. (Bug class: with size classes an
     * input allocated during the walk can receive a buffer that an earlier node still
     * writes during execution, after the host filled it.) */
    if (p->opts.inputs_first) {
        for (size_t k = 0; k < g->n_inputs; k++) {
            size_t id = g->inputs[k];
            if (p->mapped[id])
                continue; /* listed twice */
            st = acquire(w, id, 0);
            if (st != TP_OK)
                return st;
            w->start[id] = 0;
            w->hb[w->held_of[id]].first = 0;
        }
    }

    for (size_t t = 0; t < n; t++) {
        size_t id = w->order[t];
        const tp_node *node = &g->nodes[id];
        sweep(w, t);
        if (p->mapped[id])
            continue;
        if (node->op == TP_OP_KV_STORE || node->op == TP_OP_KV_LOAD) {
            /* The node's buffer is the K region, mapped even though a store has no
             * consumer; V is reached only through kv_pair. */
            tp_bufref k;
            st = tp_alloc_ensure_kv(w->a, node->p.layer, node_backend(node),
                                    tp_node_elements(node), &k, NULL);
            if (st != TP_OK) {
                char why[512];
                snprintf(why, sizeof why, "%s", tp_last_error());
                return tp_fail(st, "node %zu '%s': %s", id, node->name, why);
            }
            p->buf[id] = k;
            p->mapped[id] = 1;
            continue;
        }
        if (w->last_use[id] <= t)
            continue; /* dead (a fusion orphan): no buffer, the scheduler skips it */
        if (may_alias(w, id, t)) {
            size_t s = node->src[0];
            p->buf[id] = p->buf[s];
            p->mapped[id] = 1;
            p->alias_of[id] = s;
            w->held_of[id] = w->held_of[s];
            /* The value lives on in the alias: raise the chain's root, whose span is the
             * value's in the lower bound (the source itself when it is no alias). */
            size_t root = s;
            while (p->alias_of[root] != TP_NO_ALIAS)
                root = p->alias_of[root];
            if (w->last_use[id] > w->last_use[root])
                w->last_use[root] = w->last_use[id];
            /* [fix] The buffer's deadline grows with the alias. (Bug: raising only
             * last_use[src] let the sweep free the buffer while the alias was still live,
             * and the next node was handed the buffer it was reading.) */
            if (p->opts.alias_deadline_fix) {
                held_buf *h = &w->hb[w->held_of[s]];
                if (w->last_use[id] > h->deadline) {
                    h->deadline = w->last_use[id];
                    st = track(w, w->held_of[s]);
                    if (st != TP_OK)
                        return st;
                }
            }
            continue;
        }
        st = acquire(w, id, t);
        if (st != TP_OK)
            return st;
    }
    if (p->opts.strategy == TP_STRATEGY_ARENA) {
        st = place_arenas(w);
        if (st != TP_OK)
            return st;
    }
    return TP_OK;
}

tp_status tp_alloc_graph(tp_allocator *a, const tp_graph *g, const tp_alloc_options *options)
{
    if (!a || !g)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_graph: NULL argument");
    double t0 = now_seconds();
    /* Step 1: the previous plan's buffers and staging buffers go back to their pools;
     * persistent regions are untouched. */
    if (a->plan) {
        plan_release(a, a->plan);
        plan_free(a->plan);
        a->plan = NULL;
    }
    tp_status st = check_graph(a, g);
    if (st != TP_OK)
        return st;
    size_t n = g->n_nodes;
    size_t n1 = n ? n : 1;
    tp_plan *p = calloc(1, sizeof *p);
    walk w;
    memset(&w, 0, sizeof w);
    if (!p)
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    p->graph = g;
    p->n = n;
    p->opts = options ? *options : tp_alloc_options_default();
    p->buf = calloc(n1, sizeof *p->buf);
    p->mapped = calloc(n1, 1);
    p->alias_of = calloc(n1, sizeof *p->alias_of);
    w.a = a;
    w.g = g;
    w.p = p;
    w.n = n;
    w.order = calloc(n1, sizeof *w.order);
    w.pos = calloc(n1, sizeof *w.pos);
    w.last_use = calloc(n1, sizeof *w.last_use);
    w.last_consumer = calloc(n1, sizeof *w.last_consumer);
    w.n_consumers = calloc(n1, sizeof *w.n_consumers);
    w.is_input = calloc(n1, 1);
    w.is_output = calloc(n1, 1);
    w.start = calloc(n1, sizeof *w.start);
    w.held_of = calloc(n1, sizeof *w.held_of);
    w.bucket = malloc((n + 1) * sizeof *w.bucket);
    if (w.bucket)
        for (size_t k = 0; k <= n; k++)
            w.bucket[k] = SIZE_MAX;
    if (!p->buf || !p->mapped || !p->alias_of || !w.order || !w.pos || !w.last_use ||
        !w.last_consumer || !w.n_consumers || !w.is_input || !w.is_output || !w.start ||
        !w.held_of || !w.bucket) {
        st = tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    } else {
        st = walk_run(&w);
        if (st == TP_OK)
            st = compute_stats(&w, t0);
    }
    walk_free(&w);
    if (st != TP_OK) {
        plan_release(a, p);
        plan_free(p);
        return st;
    }
    a->plan = p;
    return TP_OK;
}

/* --- queries -------------------------------------------------------------------------------- */

int tp_alloc_node_buffer(const tp_allocator *a, size_t node, tp_bufref *out)
{
    if (!a || !a->plan || node >= a->plan->n || !a->plan->mapped[node])
        return 0;
    if (out)
        *out = a->plan->buf[node];
    return 1;
}

size_t tp_alloc_alias_of(const tp_allocator *a, size_t node)
{
    if (!a || !a->plan || node >= a->plan->n)
        return TP_NO_ALIAS;
    return a->plan->alias_of[node];
}

const tp_graph *tp_alloc_current_graph(const tp_allocator *a)
{
    return a && a->plan ? a->plan->graph : NULL;
}

tp_plan_stats tp_alloc_stats(const tp_allocator *a)
{
    tp_plan_stats s;
    memset(&s, 0, sizeof s);
    if (a && a->plan)
        s = a->plan->stats;
    return s;
}

tp_alloc_options tp_alloc_plan_options(const tp_allocator *a)
{
    if (a && a->plan)
        return a->plan->opts;
    return tp_alloc_options_default();
}

size_t tp_alloc_plan_buffer_count(const tp_allocator *a)
{
    if (!a)
        return 0;
    return (a->plan ? a->plan->n_held : 0) + a->n_persistent;
}

tp_plan_buffer tp_alloc_plan_buffer_at(const tp_allocator *a, size_t i)
{
    tp_plan_buffer r;
    memset(&r, 0, sizeof r);
    if (!a)
        return r;
    size_t nh = a->plan ? a->plan->n_held : 0;
    if (i < nh) {
        const tp_bufref *h = &a->plan->held[i];
        tp_backend *b = a->backends[h->backend];
        r.backend = h->backend;
        r.id = h->id;
        r.elems = b->buffer_len(b, h->id);
        return r;
    }
    i -= nh;
    if (i < a->n_persistent) {
        const tp_persistent_region *p = &a->persistent[i];
        r.backend = p->backend;
        r.id = p->id;
        r.elems = p->elems;
        r.persistent = 1;
        r.name = p->name;
    }
    return r;
}

size_t tp_alloc_pool_allocations(const tp_allocator *a)
{
    size_t total = 0;
    if (!a)
        return 0;
    for (int i = 0; i < TP_MAX_BACKENDS; i++) {
        if (!a->backends[i])
            continue;
        tp_pool_counters c = a->backends[i]->counters(a->backends[i]);
        total += c.allocs + c.fresh_allocs;
    }
    return total;
}

/* --- windows, inputs, staging ---------------------------------------------------------------- */

tp_status tp_alloc_read(tp_allocator *a, const tp_bufref *ref, void *data)
{
    if (!a || !ref || (!data && ref->len))
        return tp_fail(TP_ERR_INVALID, "tp_alloc_read: NULL argument");
    tp_backend *b = tp_alloc_backend(a, ref->backend);
    if (!b)
        return tp_fail(TP_ERR_INVALID, "no backend %d", ref->backend);
    return b->read_window(b, ref->id, ref->offset, data, ref->len);
}

tp_status tp_alloc_write(tp_allocator *a, const tp_bufref *ref, const void *data)
{
    if (!a || !ref || (!data && ref->len))
        return tp_fail(TP_ERR_INVALID, "tp_alloc_write: NULL argument");
    tp_backend *b = tp_alloc_backend(a, ref->backend);
    if (!b)
        return tp_fail(TP_ERR_INVALID, "no backend %d", ref->backend);
    return b->write_window(b, ref->id, ref->offset, data, ref->len);
}

/* Inputs are found by name, never by position: ids shift across rebuilds. */
static tp_status fill_bits(tp_allocator *a, const tp_graph *g, const char *name,
                           const void *data, size_t n)
{
    if (!a || !g || !name || (!data && n))
        return tp_fail(TP_ERR_INVALID, "fill_input: NULL argument");
    size_t id = SIZE_MAX;
    for (size_t i = 0; i < g->n_inputs; i++) {
        size_t k = g->inputs[i];
        if (k < g->n_nodes && strcmp(g->nodes[k].name, name) == 0) {
            id = k;
            break;
        }
    }
    if (id == SIZE_MAX)
        return tp_fail(TP_ERR_NOT_FOUND, "no input node named '%s'", name);
    tp_bufref ref;
    if (!a->plan || a->plan->graph != g || !tp_alloc_node_buffer(a, id, &ref))
        return tp_fail(TP_ERR_INVALID, "input '%s' has no buffer (graph not allocated)", name);
    if (n != ref.len)
        return tp_fail(TP_ERR_INVALID, "input '%s': %zu values for a window of %zu", name, n,
                       ref.len);
    /* bitwise: integers below 2^23 are subnormal floats, which float arithmetic under
     * flush-to-zero would turn into 0 */
    return tp_alloc_write(a, &ref, data);
}

tp_status tp_alloc_fill_input_i32(tp_allocator *a, const tp_graph *g, const char *name,
                                  const uint32_t *data, size_t n)
{
    if (g && name && data) {
        /* A KV position >= n_ctx is a loud error here, never an overflow in the store. */
        for (size_t i = 0; i < g->n_nodes; i++) {
            const tp_node *st = &g->nodes[i];
            if (st->op != TP_OP_KV_STORE || st->n_src < 3 || st->src[2] >= g->n_nodes ||
                strcmp(g->nodes[st->src[2]].name, name) != 0)
                continue;
            uint64_t n_ctx = (uint64_t)st->shape[1];
            for (size_t k = 0; k < n; k++)
                if ((uint64_t)data[k] >= n_ctx)
                    return tp_fail(TP_ERR_INVALID,
                                   "input '%s'[%zu] = %u: a KV position must be below n_ctx "
                                   "%llu (node %zu '%s')",
                                   name, k, (unsigned)data[k], (unsigned long long)n_ctx, i,
                                   st->name);
        }
    }
    return fill_bits(a, g, name, data, n);
}

tp_status tp_alloc_fill_input(tp_allocator *a, const tp_graph *g, const char *name,
                              const float *data, size_t n)
{
    return fill_bits(a, g, name, data, n);
}

tp_status tp_alloc_staging(tp_allocator *a, size_t node, int dst_backend, tp_bufref *out)
{
    if (!a || !out)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_staging: NULL argument");
    tp_plan *p = a->plan;
    if (!p)
        return tp_fail(TP_ERR_INVALID, "staging: no graph is allocated");
    tp_bufref src;
    if (!tp_alloc_node_buffer(a, node, &src))
        return tp_fail(TP_ERR_INVALID, "staging: node %zu has no buffer", node);
    tp_backend *b = tp_alloc_backend(a, dst_backend);
    if (!b)
        return tp_fail(TP_ERR_INVALID, "staging: no backend %d", dst_backend);
    if (src.backend == dst_backend)
        return tp_fail(TP_ERR_INVALID, "staging: node %zu already lives on %s", node,
                       tp_backend_name(dst_backend));
    for (size_t i = 0; i < p->n_staging; i++) {
        if (p->staging[i].node == node && p->staging[i].ref.backend == dst_backend) {
            /* one per (node, destination) per graph: rewritten on every execution */
            *out = p->staging[i].ref;
            return TP_OK;
        }
    }
    if (!grow((void **)&p->staging, &p->cap_staging, p->n_staging + 1, sizeof *p->staging))
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    size_t id;
    /* Fresh, never from the free list: at execution time the free list holds ids whose
     * contents are still to be read later in the same execution. */
    tp_status st = b->alloc_fresh(b, src.len, &id);
    if (st != TP_OK)
        return st;
    tp_bufref r = {dst_backend, id, 0, src.len};
    p->staging[p->n_staging].node = node;
    p->staging[p->n_staging].ref = r;
    p->n_staging++;
    *out = r;
    return TP_OK;
}
