/* tp_alloc_graph, the driver of planning: checks the graph, runs liveness and the walk,
 * places the arena strategy's logical buffers with the planner, and keeps the statistics
 * (docs/allocator.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "common/clock.h"
#include "common/error.h"
#include "tensorplan/planner.h"
#include "tensorplan/ops.h"

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
        int be = tp_alloc_node_backend(node);
        if (!tp_alloc_backend(a, be))
            return tp_fail(TP_ERR_INVALID, "node %zu '%s': backend %d (%s) is not available",
                           i, node->name, be, tp_backend_name(be));
        if (tp_op_is_kv_region(node->op) && node->p.layer < 0)
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


/* The arena strategy: per backend, the logical buffers placed in one arena by the planner. */
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
        st = tp_walk_hold(w, be, id);
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


tp_status tp_alloc_graph(tp_allocator *a, const tp_graph *g, const tp_alloc_options *options)
{
    if (!a || !g)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_graph: NULL argument");
    double t0 = tp_clock_seconds();
    /* Step 1: the previous plan's buffers and staging buffers go back to their pools;
     * persistent regions are untouched. */
    tp_alloc_drop_plan(a);
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
        st = tp_walk_liveness(&w);
        if (st == TP_OK)
            st = tp_walk_run(&w);
        if (st == TP_OK && p->opts.strategy == TP_STRATEGY_ARENA)
            st = place_arenas(&w);
        if (st == TP_OK)
            st = tp_walk_stats(&w, t0);
    }
    /* the plan keeps the liveness it was made with */
    p->first_use = w.start;
    p->last_use = w.last_use;
    w.start = w.last_use = NULL;
    tp_walk_free(&w);
    if (st != TP_OK) {
        tp_alloc_plan_release(a, p);
        tp_alloc_plan_free(p);
        return st;
    }
    a->plan = p;
    return TP_OK;
}
