/* A plan's statistics (peaks of live and held bytes, buffers per backend) and the queries
 * on the current plan (docs/allocator.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "common/clock.h"
#include "common/error.h"
#include "tensorplan/planner.h"
#include "tensorplan/ops.h"

/* Buffers and bytes the plan holds and the persistent regions, per backend. */
static void count_buffers(const tp_allocator *a, const tp_plan *p, tp_plan_stats *s)
{
    for (size_t i = 0; i < p->n_held; i++) {
        tp_backend *b = a->backends[p->held[i].backend];
        size_t bytes = b->buffer_len(b, p->held[i].id) * sizeof(float);
        s->activation_buffers++;
        s->activation_bytes += bytes;
        s->buffers_per_backend[p->held[i].backend]++;
        s->bytes_per_backend[p->held[i].backend] += bytes;
    }
    for (size_t i = 0; i < a->n_persistent; i++) {
        size_t bytes = a->persistent[i].bytes;
        s->persistent_buffers++;
        s->persistent_bytes += bytes;
        s->buffers_per_backend[a->persistent[i].backend]++;
        s->bytes_per_backend[a->persistent[i].backend] += bytes;
    }
}

tp_status tp_walk_stats(walk *w, double t0)
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
        int kv = tp_op_is_kv_region(node->op);
        if (!kv)
            s->naive_bytes = bytes > SIZE_MAX - s->naive_bytes ? SIZE_MAX : s->naive_bytes + bytes;
        if (!p->mapped[i])
            continue;
        s->live_nodes++;
        if (p->alias_of[i] != TP_NO_ALIAS)
            s->aliased_nodes++;
        size_t *slot = tp_idmap_slot(&seen, p->buf[i].backend, p->buf[i].id);
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
                size_t *slot = tp_idmap_slot(&span, h->backend, h->id);
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
    tp_idmap_free(&seen);
    tp_idmap_free(&span);
    free(lt);
    if (st != TP_OK)
        return st;
    count_buffers(a, p, s);
    s->buffers = s->activation_buffers + s->persistent_buffers;
    s->plan_seconds = tp_clock_seconds() - t0;
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

int tp_alloc_node_lifetime(const tp_allocator *a, size_t node, size_t *first, size_t *last)
{
    if (!a || !a->plan || node >= a->plan->n)
        return 0;
    if (first)
        *first = a->plan->first_use[node];
    if (last)
        *last = a->plan->last_use[node];
    return 1;
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
