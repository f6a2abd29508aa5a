/* SwiGLU fusion: mul(silu(x), y) -> swiglu(x, y). */
#include "tensorplan/graph.h"

#include <stdlib.h>

#include "common/error.h"

static int same_shape(const tp_node *a, const tp_node *b)
{
    for (int d = 0; d < 4; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

static int is_output(const tp_graph *graph, size_t id)
{
    for (size_t i = 0; i < graph->n_outputs; i++)
        if (graph->outputs[i] == id)
            return 1;
    return 0;
}

tp_status tp_graph_fuse_swiglu(tp_graph *graph, size_t *fused)
{
    if (fused)
        *fused = 0;
    if (!graph)
        return tp_fail(TP_ERR_INVALID, "tp_graph_fuse_swiglu: NULL graph");
    tp_status st = tp_graph_check(graph);
    if (st != TP_OK)
        return st;
    size_t n = graph->n_nodes;
    if (n == 0)
        return TP_OK;
    size_t *cons = malloc(n * sizeof *cons);
    if (!cons)
        return tp_fail(TP_ERR_NOMEM, "tp_graph_fuse_swiglu: out of memory");
    tp_graph_count_consumers(graph, cons);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        tp_node *mul = &graph->nodes[i];
        if (mul->op != TP_OP_MUL || mul->n_src != 2)
            continue;
        /* mul is commutative, so the silu may be either source; the first one wins. */
        for (size_t k = 0; k < 2; k++) {
            size_t s = mul->src[k], other = mul->src[1 - k];
            const tp_node *silu = &graph->nodes[s];
            /* Only a silu nobody else reads may be orphaned; a silu that is an output or read
             * by another node must keep its value. */
            if (silu->op != TP_OP_SILU || silu->n_src != 1 || cons[s] != 1 || is_output(graph, s))
                continue;
            /* The rewrite must not change what the mul computes or where it runs. */
            if (silu->backend != mul->backend || silu->dtype != mul->dtype ||
                !same_shape(silu, mul) || !same_shape(&graph->nodes[other], mul) ||
                !same_shape(&graph->nodes[silu->src[0]], mul))
                continue;
            size_t x = silu->src[0];
            mul->op = TP_OP_SWIGLU;
            mul->src[0] = x;
            mul->src[1] = other;
            cons[s]--;
            cons[x]++;
            count++;
            break;
        }
    }
    free(cons);
    if (fused)
        *fused = count;
    return TP_OK;
}
