/* The first step of planning a graph: positions and liveness in the scheduler's order, and
 * the constant-time (backend, pool id) maps the walk keeps (docs/allocator.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "common/error.h"
#include "common/grow.h"

void tp_idmap_free(idmap *m)
{
    for (int b = 0; b < TP_MAX_BACKENDS; b++)
        free(m->v[b]);
    memset(m, 0, sizeof *m);
}

/* The slot of (backend, id), grown as needed; NULL when out of memory. */
size_t *tp_idmap_slot(idmap *m, int backend, size_t id)
{
    if (id >= m->cap[backend]) {
        size_t old = m->cap[backend];
        if (id == SIZE_MAX || TP_GROW(&m->v[backend], &m->cap[backend], id + 1) != TP_OK)
            return NULL;
        for (size_t k = old; k < m->cap[backend]; k++)
            m->v[backend][k] = SIZE_MAX;
    }
    return &m->v[backend][id];
}


void tp_walk_free(walk *w)
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
    tp_idmap_free(&w->held);
}


/* Positions, last uses, last consumers and consumer counts of every node, in the order the
 * scheduler runs them; outputs and inputs live to the end. */
tp_status tp_walk_liveness(walk *w)
{
    tp_plan *p = w->p;
    const tp_graph *g = w->g;
    size_t n = w->n;
    tp_status st;

    /* The scheduler executes nodes in build order, so liveness must use the same order.
     * (Bug: a Kahn order moved source-less kv_load nodes first, the residual stream looked
     * dead early, attention's output overwrote it, logits were off by 21.79; guarded by
     * test_kahn_liveness_gives_wrong_logits in tests/test_decode.c.) The graph is only
     * checked for cycles; a Kahn order is computed only for the test switch that
     * reproduces that bug (alloc_debug.h). */
    if (w->a->test.kahn_liveness) {
        st = tp_graph_kahn_order(g, w->order);
    } else {
        st = tp_graph_check(g);
        for (size_t i = 0; i < n; i++)
            w->order[i] = i;
    }
    if (st != TP_OK)
        return st;
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
        if (!w->a->test.unpinned_inputs)
            w->last_use[g->inputs[k]] = n;
    }
    return TP_OK;
}
