/* The scheduler: splits, synchronisation at boundaries, staging, execution in build order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/clock.h"
#include "common/grow.h"
#include "tensorplan/ops.h"
#include "alloc/alloc_debug.h"
#include "exec/trace_internal.h"
#include "tensorplan/exec.h"

tp_exec_options tp_exec_options_default(void)
{
    tp_exec_options o;
    memset(&o, 0, sizeof o);
    return o;
}

typedef struct sched {
    tp_allocator *alloc;
    const tp_graph *g;
    const tp_weights *w;
    tp_exec_options opt;
    tp_exec_stats st;
    size_t *staged_in_split; /* per node: split number + 1 of its last staging copy */
    float *scratch;          /* host bounce buffer for staging copies and the trace */
    size_t scratch_len;
    int touched[TP_MAX_BACKENDS];
} sched;

static tp_status ensure_scratch(sched *s, size_t n)
{
    return TP_GROW(&s->scratch, &s->scratch_len, n);
}

static tp_status backend_of(sched *s, int id, tp_backend **b)
{
    *b = tp_alloc_backend(s->alloc, id);
    if (!*b)
        return tp_fail(TP_ERR_INVALID, "scheduler: the allocator has no backend %s (%d)",
                       tp_backend_name(id), id);
    return TP_OK;
}

static tp_status sync_backend(sched *s, int id)
{
    tp_backend *b = NULL;
    tp_status st = backend_of(s, id, &b);
    if (st != TP_OK)
        return st;
    s->st.syncs++;
    return b->synchronize(b);
}

/* Copies source node src (living on another backend) into its staging window on dst. */
static tp_status stage(sched *s, size_t split_no, size_t src, int dst, const tp_bufref *from)
{
    if (s->staged_in_split[src] == split_no + 1)
        return TP_OK;
    tp_bufref to;
    tp_status st = tp_alloc_staging(s->alloc, src, dst, &to);
    if (st != TP_OK)
        return st;
    if (to.len != from->len)
        return tp_fail(TP_ERR_INVALID, "scheduler: staging window of node %zu holds %zu "
                       "elements, the source %zu", src, to.len, from->len);
    /* the producing backend was synchronised at this boundary (unless the test switch
     * no_host_copy_sync of alloc_debug.h turned the rule off): this host copy reads
     * finished data */
    st = ensure_scratch(s, from->len);
    if (st == TP_OK)
        st = tp_alloc_read(s->alloc, from, s->scratch);
    if (st == TP_OK)
        st = tp_alloc_write(s->alloc, &to, s->scratch);
    if (st != TP_OK)
        return st;
    s->staged_in_split[src] = split_no + 1;
    s->st.staged++;
    return TP_OK;
}

static tp_status trace_output(sched *s, const tp_node *nd, const tp_bufref *ref, int host_filled)
{
    tp_status st = ensure_scratch(s, ref->len ? ref->len : 1);
    if (st == TP_OK)
        st = tp_alloc_read(s->alloc, ref, s->scratch);
    if (st == TP_OK)
        tp_trace_node(s->opt.trace, nd, ref, s->scratch, host_filled);
    return st;
}

/* The node's output just written, read back and scanned for NaN and infinity. */
static tp_status check_output(sched *s, const tp_node *nd, const tp_bufref *ref)
{
    tp_status st = ensure_scratch(s, ref->len ? ref->len : 1);
    if (st == TP_OK)
        st = tp_alloc_read(s->alloc, ref, s->scratch);
    if (st != TP_OK)
        return st;
    for (size_t i = 0; i < ref->len; i++)
        if (!isfinite(s->scratch[i]))
            return tp_fail(TP_ERR_NOT_FINITE, "node %zu '%s' (%s) is the first whose output is "
                           "not finite: element %zu of %zu is %s", nd->id, nd->name,
                           tp_op_name(nd->op), i, ref->len,
                           isnan(s->scratch[i]) ? "nan" : s->scratch[i] > 0 ? "inf" : "-inf");
    return TP_OK;
}

static tp_status run_node(sched *s, int B, tp_backend *be, const tp_node *nd)
{
    tp_bufref out;
    if (nd->op == TP_OP_INPUT) {
        s->st.skipped_inputs++;
        if (s->opt.trace && tp_alloc_node_buffer(s->alloc, nd->id, &out))
            return trace_output(s, nd, &out, 1);
        return TP_OK;
    }
    if (!tp_alloc_node_buffer(s->alloc, nd->id, &out)) {
        s->st.skipped_dead++; /* a fusion orphan: nothing reads it */
        return TP_OK;
    }
    if (out.backend != B)
        return tp_fail(TP_ERR_INVALID, "scheduler: node %zu '%s' runs in a %s split but its "
                       "buffer is on %s", nd->id, nd->name, tp_backend_name(B),
                       tp_backend_name(out.backend));
    tp_bufref src[TP_MAX_SRC];
    for (size_t k = 0; k < nd->n_src; k++) {
        size_t sid = nd->src[k];
        if (!tp_alloc_node_buffer(s->alloc, sid, &src[k]))
            return tp_fail(TP_ERR_INVALID, "scheduler: node %zu '%s' reads node %zu, which has "
                           "no buffer", nd->id, nd->name, sid);
        if (src[k].backend != B) {
            /* copied at the start of this split (stage_split); read the staging window */
            tp_status st = tp_alloc_staging(s->alloc, sid, B, &src[k]);
            if (st != TP_OK)
                return st;
        }
    }
    tp_exec_args a;
    memset(&a, 0, sizeof a);
    a.graph = s->g;
    a.node = nd;
    a.src = src;
    a.out = out;
    a.weights = s->w;
    a.n_ctx = s->g->n_ctx > 0 ? (size_t)s->g->n_ctx : 0;
    if (tp_op_uses_kv(nd->op)) {
        tp_bufref k, v;
        if (!tp_alloc_kv_pair(s->alloc, nd->p.layer, &k, &v))
            return tp_fail(TP_ERR_INVALID, "scheduler: node %zu '%s': layer %d has no KV "
                           "regions", nd->id, nd->name, nd->p.layer);
        if (k.backend != B || v.backend != B)
            return tp_fail(TP_ERR_INVALID, "scheduler: node %zu '%s' runs on %s but layer %d's "
                           "KV regions are on %s", nd->id, nd->name, tp_backend_name(B),
                           nd->p.layer, tp_backend_name(k.backend));
        a.has_kv = 1;
        a.kv_k = k.id;
        a.kv_v = v.id;
        if (a.n_ctx == 0 && nd->p.n_head_kv > 0 && nd->p.head_dim > 0)
            a.n_ctx = k.len / ((size_t)nd->p.n_head_kv * (size_t)nd->p.head_dim);
    }
    tp_status st = be->execute_node(be, &a);
    if (st != TP_OK)
        return st;
    s->st.executed++;
    s->touched[B] = 1;
    if (s->opt.trace || s->opt.check_finite)
        st = sync_backend(s, B);
    if (st == TP_OK && s->opt.trace)
        st = trace_output(s, nd, &out, 0);
    if (st == TP_OK && s->opt.check_finite && nd->dtype == TP_DTYPE_F32)
        st = check_output(s, nd, &out);
    return st;
}

/* Every source of the split's nodes that lives on another backend goes into its staging
 * window on B before the first node of the split is handed over. */
static tp_status stage_split(sched *s, size_t split_no, int B, size_t begin, size_t end)
{
    for (size_t j = begin; j < end; j++) {
        const tp_node *nd = &s->g->nodes[j];
        tp_bufref out;
        if (nd->op == TP_OP_INPUT || !tp_alloc_node_buffer(s->alloc, j, &out))
            continue;
        for (size_t k = 0; k < nd->n_src; k++) {
            tp_bufref from;
            if (!tp_alloc_node_buffer(s->alloc, nd->src[k], &from))
                return tp_fail(TP_ERR_INVALID, "scheduler: node %zu '%s' reads node %zu, which "
                               "has no buffer", nd->id, nd->name, nd->src[k]);
            if (from.backend == B)
                continue;
            tp_status st = stage(s, split_no, nd->src[k], B, &from);
            if (st != TP_OK)
                return st;
        }
    }
    return TP_OK;
}

static tp_status run(sched *s)
{
    const tp_graph *g = s->g;
    int prev = TP_BACKEND_UNSET;
    size_t split_no = 0;
    tp_status st = TP_OK;
    for (size_t i = 0; i < g->n_nodes;) {
        int B = g->nodes[i].backend;
        if (B < 0 || B >= TP_MAX_BACKENDS)
            return tp_fail(TP_ERR_INVALID, "scheduler: node %zu '%s' has no backend (assign "
                           "backends before planning)", i, g->nodes[i].name);
        size_t end = i + 1;
        while (end < g->n_nodes && g->nodes[end].backend == B)
            end++;
        tp_backend *be = NULL;
        st = backend_of(s, B, &be);
        if (st != TP_OK)
            return st;
        s->st.splits++;
        /* the boundary: the previous backend's work completes before any of its buffers is
         * copied to the host for staging */
        if (prev != TP_BACKEND_UNSET && prev != B &&
            !tp_alloc_test_switches_of(s->alloc)->no_host_copy_sync) {
            st = sync_backend(s, prev);
            if (st != TP_OK)
                return st;
        }
        st = stage_split(s, split_no, B, i, end);
        if (st != TP_OK)
            return st;
        for (size_t j = i; j < end; j++) {
            st = run_node(s, B, be, &g->nodes[j]);
            if (st != TP_OK)
                return st;
        }
        prev = B;
        split_no++;
        i = end;
    }
    for (int b = 0; b < TP_MAX_BACKENDS; b++) {
        if (!s->touched[b] && b != prev)
            continue;
        if (!tp_alloc_backend(s->alloc, b))
            continue;
        st = sync_backend(s, b);
        if (st != TP_OK)
            return st;
    }
    return TP_OK;
}

tp_status tp_execute(tp_allocator *alloc, const tp_graph *graph, const tp_weights *weights,
                     const tp_exec_options *options, tp_exec_stats *stats)
{
    if (!alloc || !graph)
        return tp_fail(TP_ERR_INVALID, "tp_execute: NULL argument");
    if (tp_alloc_current_graph(alloc) != graph)
        return tp_fail(TP_ERR_INVALID, "tp_execute: graph %llu is not the allocator's current "
                       "plan", (unsigned long long)graph->uid);
    sched s;
    memset(&s, 0, sizeof s);
    s.alloc = alloc;
    s.g = graph;
    s.w = weights;
    s.opt = options ? *options : tp_exec_options_default();
    s.staged_in_split = calloc(graph->n_nodes ? graph->n_nodes : 1, sizeof *s.staged_in_split);
    if (!s.staged_in_split)
        return tp_fail(TP_ERR_NOMEM, "tp_execute: out of memory");
    double t0 = tp_clock_seconds();
    if (s.opt.trace)
        tp_trace_begin_run(s.opt.trace, graph);
    tp_status st = run(&s);
    if (s.opt.trace)
        tp_trace_end_run(s.opt.trace);
    if (st != TP_OK) {
        /* leave no half-recorded command list behind (it points into this graph), and keep
         * the first failure's message */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tp_last_error());
        for (int b = 0; b < TP_MAX_BACKENDS; b++) {
            tp_backend *be = tp_alloc_backend(alloc, b);
            if (be)
                (void)be->synchronize(be);
        }
        tp_fail(st, "%s", msg);
    }
    s.st.seconds = tp_clock_seconds() - t0;
    if (stats)
        *stats = s.st;
    free(s.staged_in_split);
    free(s.scratch);
    return st;
}
