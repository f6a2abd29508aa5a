/* The allocator's options and names, and its lifetime: creation, destruction, and the
 * detach / attach of plans that the graph cache uses (docs/allocator.md). The rest of the
 * allocator: alloc_regions.c (persistent and KV regions), alloc_liveness.c, alloc_walk.c
 * and alloc_place.c (planning a graph), alloc_stats.c (statistics and queries),
 * alloc_host.c (host access, input filling, staging). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "common/error.h"

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

tp_status tp_allocator_create_planning(tp_allocator **out)
{
    tp_backend *b[2] = {NULL, NULL};
    tp_status st = tp_backend_create_planning(TP_BACKEND_CPU, "cpu", &b[0]);
    if (st == TP_OK)
        st = tp_backend_create_planning(TP_BACKEND_QUEUED, "queued", &b[1]);
    if (st == TP_OK)
        st = tp_allocator_create(b, 2, out);
    if (st != TP_OK) {
        for (int i = 0; i < 2; i++)
            if (b[i])
                b[i]->destroy(b[i]);
    }
    return st;
}

void tp_alloc_plan_free(tp_plan *p)
{
    if (!p)
        return;
    free(p->buf);
    free(p->mapped);
    free(p->alias_of);
    free(p->first_use);
    free(p->last_use);
    free(p->held);
    free(p->staging);
    free(p);
}

void tp_plan_destroy(tp_plan *p)
{
    tp_alloc_plan_free(p);
}

/* Returns the plan's buffers and staging buffers to their pools. */
void tp_alloc_plan_release(tp_allocator *a, tp_plan *p)
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

void tp_alloc_drop_plan(tp_allocator *a)
{
    if (!a->plan)
        return;
    tp_alloc_plan_release(a, a->plan);
    tp_alloc_plan_free(a->plan);
    a->plan = NULL;
}

void tp_allocator_destroy(tp_allocator *a)
{
    if (!a)
        return;
    tp_alloc_plan_free(a->plan);
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
    tp_alloc_plan_release(a, p);
    a->plan = NULL;
    return p;
}

tp_status tp_alloc_attach_plan(tp_allocator *a, tp_plan *p)
{
    if (!a || !p)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_attach_plan: NULL argument");
    tp_alloc_drop_plan(a);
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

void tp_alloc_set_test_switches(tp_allocator *alloc, const tp_alloc_test_switches *sw)
{
    if (sw != NULL)
        alloc->test = *sw;
    else
        memset(&alloc->test, 0, sizeof alloc->test);
}

const tp_alloc_test_switches *tp_alloc_test_switches_of(const tp_allocator *alloc)
{
    return &alloc->test;
}
