/* The queued backend: host memory with a device's semantics. execute_node only records the
 * node, like encoding a kernel into a GPU command buffer; synchronize() runs the recorded
 * list in order. Until then the pool holds what was there before the queued work, which is
 * what makes the "never host-copy a pending buffer" rule observable without a GPU. The pool
 * half is src/backend/host_pool.c. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_exec.h"
#include "common/error.h"
#include "common/grow.h"

typedef struct queued_cmd {
    tp_exec_args args;          /* args.src points into src below                        */
    tp_bufref src[TP_MAX_SRC];  /* copied: the caller's array does not outlive the call  */
} queued_cmd;

typedef struct queued_impl {
    queued_cmd *cmds;
    size_t n, cap;
} queued_impl;

static tp_status queued_execute(tp_backend *b, const tp_exec_args *args)
{
    queued_impl *q = b->impl;
    if (!args || !args->node || !args->graph)
        return tp_fail(TP_ERR_INVALID, "queued execute_node: NULL argument");
    if (args->node->n_src > TP_MAX_SRC)
        return tp_fail(TP_ERR_INVALID, "queued execute_node: node %zu has %zu sources",
                       args->node->id, args->node->n_src);
    tp_status gst = TP_GROW(&q->cmds, &q->cap, q->n + 1);
    if (gst != TP_OK)
        return gst;
    queued_cmd *c = &q->cmds[q->n++];
    c->args = *args;
    if (args->node->n_src)
        memcpy(c->src, args->src, args->node->n_src * sizeof *c->src);
    c->args.src = NULL; /* pointed at c->src when run: growing cmds moves every c */
    return TP_OK;
}

static tp_status queued_synchronize(tp_backend *b)
{
    queued_impl *q = b->impl;
    tp_status st = TP_OK;
    size_t i = 0;
    for (; i < q->n && st == TP_OK; i++) {
        queued_cmd *c = &q->cmds[i];
        c->args.src = c->src;
        st = tp_cpu_run_node(b, &c->args);
    }
    /* a failed command list is dropped whole, as a device drops a faulted submission */
    q->n = 0;
    return st;
}

static int queued_supports(const tp_backend *b, tp_op op, tp_dtype dtype)
{
    (void)b;
    return tp_cpu_supports(op, dtype);
}

static void queued_destroy(tp_backend *b)
{
    if (!b)
        return;
    queued_impl *q = b->impl;
    if (q) {
        free(q->cmds);
        free(q);
    }
    b->impl = NULL;
    tp_backend_destroy_host(b);
}

tp_status tp_backend_create_queued(tp_backend **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "tp_backend_create_queued: NULL output");
    queued_impl *q = calloc(1, sizeof *q);
    if (!q)
        return tp_fail(TP_ERR_NOMEM, "queued backend: out of memory");
    tp_backend *b = NULL;
    tp_status st = tp_backend_create_host(TP_BACKEND_QUEUED, "queued", &b);
    if (st != TP_OK) {
        free(q);
        return st;
    }
    b->impl = q;
    b->execute_node = queued_execute;
    b->synchronize = queued_synchronize;
    b->supports_op = queued_supports;
    b->destroy = queued_destroy;
    *out = b;
    return TP_OK;
}
