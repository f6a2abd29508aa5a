/* The graph IR: construction, names, and the structural check. */
#include "tensorplan/graph.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"

static const char *const op_names[TP_OP_COUNT] = {
    "input", "get_rows", "rms_norm", "mul_mat", "rope",  "kv_store",
    "kv_load", "attn",   "add",      "mul",     "silu",  "swiglu",
};

static const char *const dtype_names[] = {"f32", "f16", "i32", "q8_0"};
#define DTYPE_COUNT (sizeof dtype_names / sizeof dtype_names[0])

/* Backends beyond cpu and queued have no fixed meaning yet; their names only need to be
 * stable so that a graph file written with them reads back. */
static const char *const backend_names[TP_MAX_BACKENDS] = {"cpu", "queued", "backend2",
                                                           "backend3"};

/* Graph uids only have to differ between graphs of one process; an atomic counter keeps that
 * true when graphs are built on several threads. Starts at 1 so 0 can mean "no graph". */
static atomic_uint_fast64_t next_uid = 1;

const char *tp_op_name(tp_op op)
{
    if ((int)op < 0 || op >= TP_OP_COUNT)
        return "unknown";
    return op_names[op];
}

/* The index of name in names[0..n), or -1; fails with "unknown KIND 'name'" then. */
static int name_index(const char *const *names, size_t n, const char *name, const char *kind)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return (int)i;
    tp_fail(TP_ERR_NOT_FOUND, "unknown %s '%s'", kind, name);
    return -1;
}

tp_status tp_op_from_name(const char *name, tp_op *op)
{
    if (!name || !op)
        return tp_fail(TP_ERR_INVALID, "tp_op_from_name: NULL argument");
    const int i = name_index(op_names, TP_OP_COUNT, name, "op");
    if (i < 0)
        return TP_ERR_NOT_FOUND;
    *op = (tp_op)i;
    return TP_OK;
}

const char *tp_dtype_name(tp_dtype dtype)
{
    if ((int)dtype < 0 || (size_t)dtype >= DTYPE_COUNT)
        return "unknown";
    return dtype_names[dtype];
}

tp_status tp_dtype_from_name(const char *name, tp_dtype *dtype)
{
    if (!name || !dtype)
        return tp_fail(TP_ERR_INVALID, "tp_dtype_from_name: NULL argument");
    const int i = name_index(dtype_names, DTYPE_COUNT, name, "dtype");
    if (i < 0)
        return TP_ERR_NOT_FOUND;
    *dtype = (tp_dtype)i;
    return TP_OK;
}

const char *tp_backend_name(int backend)
{
    if (backend == TP_BACKEND_UNSET)
        return "unset";
    if (backend < 0 || backend >= TP_MAX_BACKENDS)
        return "unknown";
    return backend_names[backend];
}

tp_status tp_backend_from_name(const char *name, int *backend)
{
    if (!name || !backend)
        return tp_fail(TP_ERR_INVALID, "tp_backend_from_name: NULL argument");
    if (strcmp(name, "unset") == 0) {
        *backend = TP_BACKEND_UNSET;
        return TP_OK;
    }
    const int i = name_index(backend_names, TP_MAX_BACKENDS, name, "backend");
    if (i < 0)
        return TP_ERR_NOT_FOUND;
    *backend = i;
    return TP_OK;
}

tp_node tp_node_init(tp_op op, const char *name)
{
    tp_node node;
    memset(&node, 0, sizeof node);
    node.op = op;
    if (name) {
        size_t len = strlen(name);
        if (len >= TP_NAME_MAX)
            len = TP_NAME_MAX - 1;
        memcpy(node.name, name, len);
    }
    for (int i = 0; i < 4; i++)
        node.shape[i] = 1;
    node.dtype = TP_DTYPE_F32;
    node.backend = TP_BACKEND_UNSET;
    node.p.layer = -1;
    node.p.rope_freq_scale = 1.0f;
    node.p.rope_attn_factor = 1.0f;
    return node;
}

size_t tp_node_elements(const tp_node *node)
{
    if (!node)
        return 0;
    size_t n = 1;
    for (int i = 0; i < 4; i++) {
        if (node->shape[i] <= 0)
            return 0;
        /* a wrapped product would let a huge node fit in a small buffer */
        if ((uint64_t)node->shape[i] > SIZE_MAX / n)
            return 0;
        n *= (size_t)node->shape[i];
    }
    return n;
}

size_t tp_dtype_row_bytes(tp_dtype dtype, size_t n)
{
    switch (dtype) {
    case TP_DTYPE_F32:
    case TP_DTYPE_I32:
        return n > SIZE_MAX / 4 ? 0 : 4 * n;
    case TP_DTYPE_F16:
        return n > SIZE_MAX / 2 ? 0 : 2 * n;
    case TP_DTYPE_Q8_0: /* blocks of 32: an f16 scale and 32 int8 (docs/quant.md) */
        return n % 32 != 0 || n / 32 > SIZE_MAX / 34 ? 0 : n / 32 * 34;
    default:
        return 0;
    }
}

size_t tp_kv_region_elems(tp_dtype dtype, size_t width, size_t n_ctx)
{
    size_t row = tp_dtype_row_bytes(dtype, width);
    if (row == 0 || n_ctx == 0 || row > SIZE_MAX / n_ctx)
        return 0;
    size_t bytes = row * n_ctx;
    return bytes / sizeof(float) + (bytes % sizeof(float) != 0);
}

tp_status tp_graph_create(tp_graph **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "tp_graph_create: NULL output");
    tp_graph *g = calloc(1, sizeof *g);
    if (!g)
        return tp_fail(TP_ERR_NOMEM, "tp_graph_create: out of memory");
    g->uid = (uint64_t)atomic_fetch_add(&next_uid, 1);
    *out = g;
    return TP_OK;
}

void tp_graph_destroy(tp_graph *graph)
{
    if (!graph)
        return;
    for (size_t i = 0; i < graph->n_nodes; i++)
        free(graph->nodes[i].extra);
    free(graph->nodes);
    free(graph->inputs);
    free(graph->outputs);
    free(graph->extra);
    free(graph);
}

tp_status tp_graph_add_node(tp_graph *graph, const tp_node *node, size_t *id)
{
    if (!graph || !node)
        return tp_fail(TP_ERR_INVALID, "tp_graph_add_node: NULL argument");
    if ((int)node->op < 0 || node->op >= TP_OP_COUNT)
        return tp_fail(TP_ERR_INVALID, "tp_graph_add_node: node '%s': op %d out of range",
                       node->name, (int)node->op);
    if (node->n_src > TP_MAX_SRC)
        return tp_fail(TP_ERR_INVALID, "tp_graph_add_node: node '%s': %zu sources, at most %d",
                       node->name, node->n_src, TP_MAX_SRC);
    tp_status st = TP_GROW(&graph->nodes, &graph->cap_nodes, graph->n_nodes + 1);
    if (st != TP_OK)
        return st;
    tp_node copy = *node;
    copy.name[TP_NAME_MAX - 1] = '\0';
    copy.p.weight[TP_NAME_MAX - 1] = '\0';
    copy.p.bias[TP_NAME_MAX - 1] = '\0';
    copy.extra = NULL;
    if (node->extra) {
        size_t len = strlen(node->extra);
        copy.extra = malloc(len + 1);
        if (!copy.extra)
            return tp_fail(TP_ERR_NOMEM, "tp_graph_add_node: out of memory");
        memcpy(copy.extra, node->extra, len + 1);
    }
    copy.id = graph->n_nodes;
    graph->nodes[graph->n_nodes++] = copy;
    if (id)
        *id = copy.id;
    return TP_OK;
}

tp_status tp_graph_add_input(tp_graph *graph, const char *name, size_t n, tp_dtype dtype,
                             size_t *id)
{
    if (!graph || !name)
        return tp_fail(TP_ERR_INVALID, "tp_graph_add_input: NULL argument");
    if (n == 0 || n > (size_t)INT64_MAX)
        return tp_fail(TP_ERR_INVALID, "tp_graph_add_input: input '%s': size %zu", name, n);
    tp_status st = TP_GROW(&graph->inputs, &graph->cap_inputs, graph->n_inputs + 1);
    if (st != TP_OK)
        return st;
    tp_node node = tp_node_init(TP_OP_INPUT, name);
    node.shape[0] = (int64_t)n;
    node.dtype = dtype;
    size_t nid;
    st = tp_graph_add_node(graph, &node, &nid);
    if (st != TP_OK)
        return st;
    graph->inputs[graph->n_inputs++] = nid;
    if (id)
        *id = nid;
    return TP_OK;
}

tp_status tp_graph_mark_output(tp_graph *graph, size_t id)
{
    if (!graph)
        return tp_fail(TP_ERR_INVALID, "tp_graph_mark_output: NULL graph");
    if (id >= graph->n_nodes)
        return tp_fail(TP_ERR_INVALID, "tp_graph_mark_output: node %zu out of range (%zu nodes)",
                       id, graph->n_nodes);
    /* Marking twice is harmless and keeps outputs[] free of duplicates. */
    for (size_t i = 0; i < graph->n_outputs; i++)
        if (graph->outputs[i] == id)
            return TP_OK;
    tp_status st = TP_GROW(&graph->outputs, &graph->cap_outputs, graph->n_outputs + 1);
    if (st != TP_OK)
        return st;
    graph->outputs[graph->n_outputs++] = id;
    return TP_OK;
}

tp_status tp_graph_find_input(const tp_graph *graph, const char *name, size_t *id)
{
    if (!graph || !name)
        return tp_fail(TP_ERR_INVALID, "tp_graph_find_input: NULL argument");
    for (size_t i = 0; i < graph->n_inputs; i++) {
        size_t nid = graph->inputs[i];
        if (nid < graph->n_nodes && strcmp(graph->nodes[nid].name, name) == 0) {
            if (id)
                *id = nid;
            return TP_OK;
        }
    }
    return tp_fail(TP_ERR_NOT_FOUND, "graph has no input named '%s'", name);
}

tp_status tp_graph_count_consumers(const tp_graph *graph, size_t *n_consumers)
{
    if (!graph || (!n_consumers && graph->n_nodes))
        return tp_fail(TP_ERR_INVALID, "tp_graph_count_consumers: NULL argument");
    for (size_t i = 0; i < graph->n_nodes; i++)
        n_consumers[i] = 0;
    for (size_t i = 0; i < graph->n_nodes; i++) {
        const tp_node *nd = &graph->nodes[i];
        for (size_t s = 0; s < nd->n_src && s < TP_MAX_SRC; s++)
            if (nd->src[s] < graph->n_nodes)
                n_consumers[nd->src[s]]++;
    }
    return TP_OK;
}

size_t tp_graph_count_dead(const tp_graph *graph)
{
    if (!graph || graph->n_nodes == 0)
        return 0;
    size_t *cons = calloc(graph->n_nodes, sizeof *cons);
    unsigned char *pinned = calloc(graph->n_nodes, 1);
    size_t dead = 0;
    if (cons && pinned) {
        tp_graph_count_consumers(graph, cons);
        for (size_t i = 0; i < graph->n_inputs; i++)
            if (graph->inputs[i] < graph->n_nodes)
                pinned[graph->inputs[i]] = 1;
        for (size_t i = 0; i < graph->n_outputs; i++)
            if (graph->outputs[i] < graph->n_nodes)
                pinned[graph->outputs[i]] = 1;
        for (size_t i = 0; i < graph->n_nodes; i++) {
            tp_op op = graph->nodes[i].op;
            /* KV ops write persistent state, so they matter without a consumer. */
            if (cons[i] == 0 && !pinned[i] && op != TP_OP_KV_STORE && op != TP_OP_KV_LOAD)
                dead++;
        }
    }
    free(cons);
    free(pinned);
    return dead;
}

static tp_status check_ranges(const tp_graph *graph)
{
    if (!graph)
        return tp_fail(TP_ERR_INVALID, "graph: NULL");
    size_t n = graph->n_nodes;
    if (n && !graph->nodes)
        return tp_fail(TP_ERR_INVALID, "graph: %zu nodes but no node array", n);
    for (size_t i = 0; i < n; i++) {
        const tp_node *nd = &graph->nodes[i];
        if (nd->id != i)
            return tp_fail(TP_ERR_INVALID, "node %zu (%s): id is %zu, expected its index %zu", i,
                           nd->name, nd->id, i);
        if ((int)nd->op < 0 || nd->op >= TP_OP_COUNT)
            return tp_fail(TP_ERR_INVALID, "node %zu (%s): op %d out of range", i, nd->name,
                           (int)nd->op);
        if (nd->n_src > TP_MAX_SRC)
            return tp_fail(TP_ERR_INVALID, "node %zu (%s): %zu sources, at most %d", i, nd->name,
                           nd->n_src, TP_MAX_SRC);
        for (size_t s = 0; s < nd->n_src; s++)
            if (nd->src[s] >= n)
                return tp_fail(TP_ERR_INVALID,
                               "node %zu (%s): src[%zu] = %zu is out of range (%zu nodes)", i,
                               nd->name, s, nd->src[s], n);
    }
    for (size_t i = 0; i < graph->n_inputs; i++)
        if (graph->inputs[i] >= n)
            return tp_fail(TP_ERR_INVALID, "graph: inputs[%zu] = %zu is out of range (%zu nodes)",
                           i, graph->inputs[i], n);
    for (size_t i = 0; i < graph->n_outputs; i++)
        if (graph->outputs[i] >= n)
            return tp_fail(TP_ERR_INVALID,
                           "graph: outputs[%zu] = %zu is out of range (%zu nodes)", i,
                           graph->outputs[i], n);
    return TP_OK;
}

tp_status tp_graph_kahn_order(const tp_graph *graph, size_t *order)
{
    tp_status st = check_ranges(graph);
    if (st != TP_OK)
        return st;
    size_t n = graph->n_nodes;
    if (n == 0)
        return TP_OK;
    if (!order)
        return tp_fail(TP_ERR_INVALID, "tp_graph_kahn_order: NULL order");
    size_t *queue = order;
    size_t *indeg = calloc(n, sizeof *indeg);
    size_t *cons_start = calloc(n + 1, sizeof *cons_start);
    size_t n_edges = 0;
    for (size_t i = 0; i < n; i++)
        n_edges += graph->nodes[i].n_src;
    size_t *cons = malloc((n_edges ? n_edges : 1) * sizeof *cons);
    if (!indeg || !cons_start || !cons) {
        free(indeg);
        free(cons_start);
        free(cons);
        return tp_fail(TP_ERR_NOMEM, "graph check: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const tp_node *nd = &graph->nodes[i];
        indeg[i] = nd->n_src;
        for (size_t s = 0; s < nd->n_src; s++)
            cons_start[nd->src[s] + 1]++;
    }
    for (size_t i = 0; i < n; i++)
        cons_start[i + 1] += cons_start[i];
    {
        size_t *fill = calloc(n, sizeof *fill);
        if (!fill) {
            free(indeg);
            free(cons_start);
            free(cons);
            return tp_fail(TP_ERR_NOMEM, "graph check: out of memory");
        }
        for (size_t i = 0; i < n; i++) {
            const tp_node *nd = &graph->nodes[i];
            for (size_t s = 0; s < nd->n_src; s++) {
                size_t src = nd->src[s];
                cons[cons_start[src] + fill[src]++] = i;
            }
        }
        free(fill);
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            queue[tail++] = i;
    while (head < tail) {
        size_t u = queue[head++];
        for (size_t e = cons_start[u]; e < cons_start[u + 1]; e++)
            if (--indeg[cons[e]] == 0)
                queue[tail++] = cons[e];
    }
    if (tail != n) {
        size_t first = 0;
        while (first < n && indeg[first] == 0)
            first++;
        st = tp_fail(TP_ERR_INVALID, "graph has a cycle: %zu of %zu nodes are on or behind one "
                     "(first: node %zu (%s))",
                     n - tail, n, first, graph->nodes[first].name);
    }
    free(indeg);
    free(cons_start);
    free(cons);
    return st;
}

/* Whether every source comes before its consumer: then build order is a topological order
 * and there is no cycle, without a sort. */
static int sources_come_first(const tp_graph *graph)
{
    for (size_t i = 0; i < graph->n_nodes; i++)
        for (size_t k = 0; k < graph->nodes[i].n_src; k++)
            if (graph->nodes[i].src[k] >= i)
                return 0;
    return 1;
}

tp_status tp_graph_check(const tp_graph *graph)
{
    tp_status st = check_ranges(graph);
    if (st != TP_OK)
        return st;
    if (sources_come_first(graph))
        return TP_OK;
    size_t n = graph->n_nodes;
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return tp_fail(TP_ERR_NOMEM, "graph check: out of memory");
    st = tp_graph_kahn_order(graph, order);
    free(order);
    return st;
}
