/* Test support: the allocator's liveness and its lower bound (tp_plan_stats.peak_live_bytes)
 * restated from docs/allocator.md, for a plan whose aliasing is read from the allocator.
 * Include after <cmocka.h>. */
#ifndef TP_TESTS_PEAK_ORACLE_H
#define TP_TESTS_PEAK_ORACLE_H

#include <stddef.h>
#include <stdlib.h>

#include "tensorplan/alloc.h"
#include "tensorplan/graph.h"

/* docs/allocator.md, "tp_alloc_graph", steps 3 to 6, restated: a value is needed from its
 * node's build-order position (0 for a pinned input) to its last read (n for an output or a
 * pinned input); an alias chain is one value (its root is the node without alias_of, read
 * from the allocator), which lives to the last read of any member. from[] and to[] receive
 * each node's span, a root's raised to its members'. */
static inline void tpt_oracle_lifetimes(const tp_graph *g, const tp_allocator *a, size_t *from,
                                        size_t *to)
{
    const size_t n = g->n_nodes;
    for (size_t i = 0; i < n; i++) {
        from[i] = i;
        to[i] = i;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < g->nodes[i].n_src; k++)
            if (to[g->nodes[i].src[k]] < i)
                to[g->nodes[i].src[k]] = i;
    for (size_t k = 0; k < g->n_outputs; k++)
        to[g->outputs[k]] = n;
    for (size_t k = 0; k < g->n_inputs; k++) {
        from[g->inputs[k]] = 0;
        to[g->inputs[k]] = n;
    }
    for (size_t i = 0; i < n; i++) {
        size_t root = i;
        while (tp_alloc_alias_of(a, root) != TP_NO_ALIAS)
            root = tp_alloc_alias_of(a, root);
        if (root != i && to[i] > to[root])
            to[root] = to[i]; /* members come after their root in build order */
    }
}

/* docs/allocator.md, "Statistics": the peak over build-order positions 0..n of the live
 * node outputs at exact size, an alias counted once, over the spans above; KV nodes and dead
 * nodes hold no value. */
static inline size_t tpt_oracle_peak_live(const tp_graph *g, const tp_allocator *a)
{
    const size_t n = g->n_nodes;
    size_t *from = calloc(n + 1, sizeof *from), *to = calloc(n + 1, sizeof *to);
    size_t *bytes = calloc(n + 1, sizeof *bytes);
    assert_true(from && to && bytes);
    tpt_oracle_lifetimes(g, a, from, to);
    for (size_t i = 0; i < n; i++) {
        tp_bufref r;
        const tp_op op = g->nodes[i].op;
        if (!tp_alloc_node_buffer(a, i, &r) || op == TP_OP_KV_STORE || op == TP_OP_KV_LOAD)
            continue;
        if (tp_alloc_alias_of(a, i) == TP_NO_ALIAS)
            bytes[i] = tp_node_elements(&g->nodes[i]) * sizeof(float);
    }
    size_t peak = 0;
    for (size_t t = 0; t <= n; t++) {
        size_t live = 0;
        for (size_t i = 0; i < n; i++)
            if (bytes[i] > 0 && from[i] <= t && t <= to[i])
                live += bytes[i];
        peak = live > peak ? live : peak;
    }
    free(from);
    free(to);
    free(bytes);
    return peak;
}

#endif
