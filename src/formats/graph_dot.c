/* Graphviz DOT rendering of a graph: where each node runs, what the host fills and reads. */
#include "tensorplan/graph_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/text.h"

static const char *backend_colour(int backend)
{
    switch (backend) {
    case TP_BACKEND_CPU: return "#9ecae1";
    case TP_BACKEND_QUEUED: return "#fdae6b";
    case 2: return "#a1d99b";
    case 3: return "#bcbddc";
    default: return "#ffffff";
    }
}

static void dot_escape(tp_gtext *t, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            tp_gtext_printf(t, "\\%c", *p);
        else if (*p >= 0x20)
            tp_gtext_printf(t, "%c", *p);
        else
            tp_gtext_puts(t, "?");
    }
}

static void dot_string(tp_gtext *t, const char *s)
{
    tp_gtext_puts(t, "\"");
    dot_escape(t, s);
    tp_gtext_puts(t, "\"");
}

tp_status tp_graph_to_dot(const tp_graph *graph, char **out)
{
    if (!graph || !out)
        return tp_fail(TP_ERR_INVALID, "tp_graph_to_dot: NULL argument");
    *out = NULL;
    tp_status st = tp_graph_check(graph);
    if (st != TP_OK)
        return st;
    size_t n = graph->n_nodes;
    size_t *cons = calloc(n ? n : 1, sizeof *cons);
    unsigned char *role = calloc(n ? n : 1, 1); /* bit 0: input, bit 1: output */
    if (!cons || !role) {
        free(cons);
        free(role);
        return tp_fail(TP_ERR_NOMEM, "out of memory writing a graph");
    }
    tp_graph_count_consumers(graph, cons);
    for (size_t i = 0; i < graph->n_inputs; i++)
        role[graph->inputs[i]] |= 1;
    for (size_t i = 0; i < graph->n_outputs; i++)
        role[graph->outputs[i]] |= 2;

    int used[TP_MAX_BACKENDS + 1] = {0}; /* index backend + 1, so unset is 0 */
    tp_gtext t = {0};
    tp_gtext_puts(&t, "digraph tensorplan {\n  rankdir=TB;\n"
                      "  node [shape=box, style=filled, fontname=\"Helvetica\", fontsize=10];\n"
                      "  edge [arrowsize=0.6];\n");
    if (graph->model[0] || graph->kind[0]) {
        tp_gtext_puts(&t, "  label=");
        char title[160];
        snprintf(title, sizeof title, "%s %s, %zu nodes", graph->model, graph->kind, n);
        dot_string(&t, title);
        tp_gtext_puts(&t, ";\n  labelloc=t;\n");
    }
    for (size_t i = 0; i < n; i++) {
        const tp_node *nd = &graph->nodes[i];
        int b = nd->backend;
        if (b >= TP_BACKEND_UNSET && b < TP_MAX_BACKENDS)
            used[b + 1] = 1;
        char first[96], second[128];
        snprintf(first, sizeof first, "%zu: %s", i, nd->name);
        snprintf(second, sizeof second, "%s [%lld, %lld, %lld, %lld] %s", tp_op_name(nd->op),
                 (long long)nd->shape[0], (long long)nd->shape[1], (long long)nd->shape[2],
                 (long long)nd->shape[3], tp_dtype_name(nd->dtype));
        tp_gtext_printf(&t, "  n%zu [label=\"", i);
        dot_escape(&t, first);
        tp_gtext_puts(&t, "\\n"); /* a line break inside a DOT label */
        dot_escape(&t, second);
        tp_gtext_printf(&t, "\", fillcolor=\"%s\"", backend_colour(b));
        int dead = cons[i] == 0 && !role[i] && nd->op != TP_OP_KV_STORE &&
                   nd->op != TP_OP_KV_LOAD;
        if (role[i] & 1)
            tp_gtext_puts(&t, ", shape=invhouse, penwidth=2");
        else if (role[i] & 2)
            tp_gtext_puts(&t, ", shape=doubleoctagon, penwidth=2");
        if (dead)
            tp_gtext_puts(&t, ", style=\"filled,dashed\", fontcolor=\"#777777\"");
        tp_gtext_puts(&t, "];\n");
    }
    for (size_t i = 0; i < n; i++) {
        const tp_node *nd = &graph->nodes[i];
        for (size_t s = 0; s < nd->n_src; s++)
            tp_gtext_printf(&t, "  n%zu -> n%zu;\n", nd->src[s], i);
        /* kv_load has no sources, but it reads what the layer's kv_store wrote. */
        if (nd->op == TP_OP_KV_LOAD) {
            for (size_t j = 0; j < i; j++)
                if (graph->nodes[j].op == TP_OP_KV_STORE &&
                    graph->nodes[j].p.layer == nd->p.layer)
                    tp_gtext_printf(&t, "  n%zu -> n%zu [style=dotted, label=\"KV\"];\n", j, i);
        }
    }
    tp_gtext_puts(&t, "  subgraph cluster_legend {\n    label=\"legend\";\n    fontsize=10;\n");
    for (int b = TP_BACKEND_UNSET; b < TP_MAX_BACKENDS; b++) {
        if (!used[b + 1])
            continue;
        tp_gtext_printf(&t, "    legend_%s [label=\"backend %s\", fillcolor=\"%s\"];\n",
                        b < 0 ? "unset" : tp_backend_name(b), tp_backend_name(b),
                        backend_colour(b));
    }
    tp_gtext_puts(&t, "    legend_input [label=\"graph input\", shape=invhouse, penwidth=2, "
                      "fillcolor=\"#ffffff\"];\n"
                      "    legend_output [label=\"graph output\", shape=doubleoctagon, "
                      "penwidth=2, fillcolor=\"#ffffff\"];\n"
                      "    legend_dead [label=\"dead (no consumer)\", style=\"filled,dashed\", "
                      "fillcolor=\"#ffffff\", fontcolor=\"#777777\"];\n"
                      "    legend_kv_a [label=\"kv_store\", fillcolor=\"#ffffff\"];\n"
                      "    legend_kv_b [label=\"kv_load\", fillcolor=\"#ffffff\"];\n"
                      "    legend_kv_a -> legend_kv_b [style=dotted, label=\"KV\"];\n"
                      "  }\n}\n");
    free(cons);
    free(role);
    return tp_gtext_finish(&t, out);
}

tp_status tp_graph_save_dot(const tp_graph *graph, const char *path)
{
    if (!path)
        return tp_fail(TP_ERR_INVALID, "tp_graph_save_dot: NULL path");
    char *text;
    tp_status st = tp_graph_to_dot(graph, &text);
    if (st != TP_OK)
        return st;
    st = tp_gtext_write_file(path, text);
    free(text);
    return st;
}
