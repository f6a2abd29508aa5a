/* Backend assignment: the model-level "layers [0, k) on the device" option. */
#include "tensorplan/graph.h"

#include "common/error.h"

tp_status tp_graph_assign_backends(tp_graph *graph, int queued_layers)
{
    if (!graph)
        return tp_fail(TP_ERR_INVALID, "tp_graph_assign_backends: NULL graph");
    if (queued_layers < 0)
        return tp_fail(TP_ERR_INVALID, "tp_graph_assign_backends: queued_layers %d < 0",
                       queued_layers);
    for (size_t i = 0; i < graph->n_nodes; i++) {
        tp_node *nd = &graph->nodes[i];
        if (nd->backend != TP_BACKEND_UNSET)
            continue;
        /* Both backends run every op and dtype, so the layer alone decides; nodes outside
         * any layer (inputs, embedding, final norm, lm_head) stay on the host. */
        nd->backend = (nd->p.layer >= 0 && nd->p.layer < queued_layers) ? TP_BACKEND_QUEUED
                                                                         : TP_BACKEND_CPU;
    }
    return TP_OK;
}
