/* The plan JSON writer (docs/allocator.md, "Plan JSON"). */
#include <stdlib.h>

#include "common/text.h"
#include "tensorplan/plan_io.h"

static void ref_json(tp_gtext *t, const tp_bufref *r)
{
    tp_gtext_printf(t, "{\"backend\": ");
    tp_gtext_json_string(t, tp_backend_name(r->backend));
    tp_gtext_printf(t, ", \"id\": %zu, \"offset\": %zu, \"len\": %zu}", r->id, r->offset,
                    r->len);
}

tp_status tp_plan_to_json(const tp_allocator *a, char **out)
{
    if (!a || !out)
        return tp_fail(TP_ERR_INVALID, "tp_plan_to_json: NULL argument");
    const tp_graph *g = tp_alloc_current_graph(a);
    if (!g)
        return tp_fail(TP_ERR_INVALID, "plan JSON: the allocator has no plan");
    tp_alloc_options o = tp_alloc_plan_options(a);
    tp_plan_stats s = tp_alloc_stats(a);
    tp_gtext t = {0};
    tp_gtext_printf(&t, "{\n  \"format\": \"tensorplan-plan\",\n  \"version\": 1,\n");
    tp_gtext_printf(&t, "  \"strategy\": \"%s\",\n  \"aliasing\": \"%s\",\n",
                    tp_alloc_strategy_name(o.strategy), tp_alias_policy_name(o.aliasing));
    tp_gtext_printf(&t, "  \"size_classes\": %s,\n", o.size_classes ? "true" : "false");
    tp_gtext_printf(&t, "  \"nodes\": [");
    for (size_t i = 0; i < g->n_nodes; i++) {
        tp_bufref r;
        tp_gtext_printf(&t, "%s\n    {\"id\": %zu, \"buffer\": ", i ? "," : "", i);
        if (tp_alloc_node_buffer(a, i, &r)) {
            ref_json(&t, &r);
            size_t al = tp_alloc_alias_of(a, i);
            if (al != TP_NO_ALIAS)
                tp_gtext_printf(&t, ", \"alias_of\": %zu", al);
        } else {
            tp_gtext_puts(&t, "null");
        }
        tp_gtext_puts(&t, "}");
    }
    tp_gtext_printf(&t, "\n  ],\n  \"buffers\": [");
    size_t nb = tp_alloc_plan_buffer_count(a);
    for (size_t i = 0; i < nb; i++) {
        tp_plan_buffer b = tp_alloc_plan_buffer_at(a, i);
        tp_gtext_printf(&t, "%s\n    {\"backend\": ", i ? "," : "");
        tp_gtext_json_string(&t, tp_backend_name(b.backend));
        tp_gtext_printf(&t, ", \"id\": %zu, \"elements\": %zu, \"persistent\": %s", b.id,
                        b.elems, b.persistent ? "true" : "false");
        if (b.name) {
            tp_gtext_puts(&t, ", \"name\": ");
            tp_gtext_json_string(&t, b.name);
        }
        tp_gtext_puts(&t, "}");
    }
    tp_gtext_printf(&t, "\n  ],\n  \"kv\": [");
    size_t nkv = tp_alloc_kv_count(a);
    for (size_t i = 0; i < nkv; i++) {
        int layer;
        tp_bufref k, v;
        tp_alloc_kv_at(a, i, &layer, &k, &v);
        tp_gtext_printf(&t, "%s\n    {\"layer\": %d, \"k\": %zu, \"v\": %zu, \"backend\": ",
                        i ? "," : "", layer, k.id, v.id);
        tp_gtext_json_string(&t, tp_backend_name(k.backend));
        tp_gtext_puts(&t, "}");
    }
    tp_gtext_printf(&t, "\n  ],\n  \"stats\": {\"nodes\": %zu, \"live_nodes\": %zu, "
                        "\"dead_nodes\": %zu, \"aliased_nodes\": %zu, \"buffers\": %zu, "
                        "\"activation_buffers\": %zu, \"persistent_buffers\": %zu, "
                        "\"mapped_buffers\": %zu,\n            \"activation_bytes\": %zu, "
                        "\"persistent_bytes\": %zu, \"naive_bytes\": %zu, "
                        "\"peak_live_bytes\": %zu, \"peak_held_bytes\": %zu, "
                        "\"plan_seconds\": %.6f,\n            \"backends\": {",
                    s.nodes, s.live_nodes, s.dead_nodes, s.aliased_nodes, s.buffers,
                    s.activation_buffers, s.persistent_buffers, s.mapped_buffers,
                    s.activation_bytes, s.persistent_bytes, s.naive_bytes, s.peak_live_bytes,
                    s.peak_held_bytes, s.plan_seconds);
    int first = 1;
    for (int b = 0; b < TP_MAX_BACKENDS; b++) {
        if (!s.buffers_per_backend[b])
            continue;
        tp_gtext_printf(&t, "%s", first ? "" : ", ");
        tp_gtext_json_string(&t, tp_backend_name(b));
        tp_gtext_printf(&t, ": {\"buffers\": %zu, \"bytes\": %zu}", s.buffers_per_backend[b],
                        s.bytes_per_backend[b]);
        first = 0;
    }
    tp_gtext_puts(&t, "}}\n}\n");
    return tp_gtext_finish(&t, out);
}

tp_status tp_plan_save_json(const tp_allocator *a, const char *path)
{
    if (!path)
        return tp_fail(TP_ERR_INVALID, "tp_plan_save_json: NULL path");
    char *text = NULL;
    tp_status st = tp_plan_to_json(a, &text);
    if (st != TP_OK)
        return st;
    st = tp_gtext_write_file(path, text);
    free(text);
    return st;
}
