/* The walk over a graph in build order: buffers acquired, swept back when their deadline
 * passes, or shared in place by an aliasing consumer; inputs first (docs/allocator.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "common/error.h"
#include "common/grow.h"
#include "tensorplan/ops.h"

tp_status tp_walk_hold(walk *w, int backend, size_t id)
{
    tp_plan *p = w->p;
    size_t *slot = tp_idmap_slot(&w->held, backend, id);
    if (!slot)
        return tp_fail(TP_ERR_NOMEM, "allocator: out of memory");
    if (*slot != SIZE_MAX)
        return TP_OK;
    tp_status gst = TP_GROW(&p->held, &p->cap_held, p->n_held + 1);
    if (gst != TP_OK)
        return gst;
    tp_bufref r = {backend, id, 0, 0};
    *slot = p->n_held;
    p->held[p->n_held++] = r;
    return TP_OK;
}

/* Files hb[k] in the liveness table under its current deadline. */
static tp_status walk_track(walk *w, size_t k)
{
    tp_status gst = TP_GROW(&w->entries, &w->cap_entries, w->n_entries + 1);
    if (gst != TP_OK)
        return gst;
    size_t d = w->hb[k].deadline;
    w->entries[w->n_entries].hb = k;
    w->entries[w->n_entries].next = w->bucket[d];
    w->bucket[d] = w->n_entries++;
    return TP_OK;
}

/* An ordinary buffer for node id at position t, tracked with the node's deadline. */
static tp_status walk_acquire(walk *w, size_t id, size_t t)
{
    const tp_node *node = &w->g->nodes[id];
    int be = tp_alloc_node_backend(node);
    size_t elems = tp_node_elements(node);
    tp_status gst = TP_GROW(&w->hb, &w->cap_hb, w->n_hb + 1);
    if (gst != TP_OK)
        return gst;
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
        st = tp_walk_hold(w, be, h.id);
        if (st != TP_OK) {
            b->free_buffer(b, h.id);
            return st;
        }
    } else {
        h.id = w->n_hb; /* logical; the arena id is known after placement */
        h.elems = elems;
    }
    w->hb[w->n_hb] = h;
    tp_status st = walk_track(w, w->n_hb);
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

/* The op table's in-place column for the policy. */
static int inplace_op(tp_alias_policy policy, tp_op op)
{
    const tp_op_info *o = tp_op_info_of(op);
    if (!o)
        return 0;
    switch (policy) {
    case TP_ALIAS_SOLE_CONSUMER:
        return o->inplace_sole;
    case TP_ALIAS_LAST_CONSUMER:
        return o->inplace_last;
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
    if (in->backend != tp_alloc_node_backend(node))
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


/* Buffers for every input before the main loop. */
static tp_status inputs_first(walk *w)
{
    tp_plan *p = w->p;
    const tp_graph *g = w->g;
    tp_status st;
    /* [fix] Every input gets its buffer before the walk. (Bug class: with size classes an
     * input allocated during the walk can receive a buffer that an earlier node still
     * writes during execution, after the host filled it.) */
    if (w->a->test.inputs_in_walk)
        return TP_OK;
    for (size_t k = 0; k < g->n_inputs; k++) {
        size_t id = g->inputs[k];
        if (p->mapped[id])
            continue; /* listed twice */
        st = walk_acquire(w, id, 0);
        if (st != TP_OK)
            return st;
        w->start[id] = 0;
        w->hb[w->held_of[id]].first = 0;
    }
    return TP_OK;
}

/* The main loop: in order, release what expired, then map each node to a KV region, its
 * source's window (aliasing) or a buffer of its own; dead nodes get nothing. */
tp_status tp_walk_run(walk *w)
{
    tp_plan *p = w->p;
    const tp_graph *g = w->g;
    size_t n = w->n;
    tp_status st = inputs_first(w);
    if (st != TP_OK)
        return st;
    for (size_t t = 0; t < n; t++) {
        size_t id = w->order[t];
        const tp_node *node = &g->nodes[id];
        sweep(w, t);
        if (p->mapped[id])
            continue;
        if (tp_op_is_kv_region(node->op)) {
            /* The node's buffer is the K region, mapped even though a store has no
             * consumer; V is reached only through kv_pair. */
            tp_bufref k;
            st = tp_alloc_ensure_kv_typed(w->a, node->p.layer, tp_alloc_node_backend(node),
                                          node->dtype, (size_t)node->shape[0],
                                          tp_node_elements(node) / (size_t)node->shape[0], &k,
                                          NULL);
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
            if (!w->a->test.no_alias_deadline) {
                held_buf *h = &w->hb[w->held_of[s]];
                if (w->last_use[id] > h->deadline) {
                    h->deadline = w->last_use[id];
                    st = walk_track(w, w->held_of[s]);
                    if (st != TP_OK)
                        return st;
                }
            }
            continue;
        }
        st = walk_acquire(w, id, t);
        if (st != TP_OK)
            return st;
    }
    return TP_OK;
}
