/* Host access to windows, input filling, and the staging windows the scheduler copies
 * cross-backend sources into (docs/allocator.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "common/error.h"
#include "common/grow.h"

/* --- windows, inputs, staging ---------------------------------------------------------------- */

tp_status tp_alloc_read(tp_allocator *a, const tp_bufref *ref, void *data)
{
    if (!a || !ref || (!data && ref->len))
        return tp_fail(TP_ERR_INVALID, "tp_alloc_read: NULL argument");
    tp_backend *b = tp_alloc_backend(a, ref->backend);
    if (!b)
        return tp_fail(TP_ERR_INVALID, "no backend %d", ref->backend);
    return b->read_window(b, ref->id, ref->offset, data, ref->len);
}

tp_status tp_alloc_write(tp_allocator *a, const tp_bufref *ref, const void *data)
{
    if (!a || !ref || (!data && ref->len))
        return tp_fail(TP_ERR_INVALID, "tp_alloc_write: NULL argument");
    tp_backend *b = tp_alloc_backend(a, ref->backend);
    if (!b)
        return tp_fail(TP_ERR_INVALID, "no backend %d", ref->backend);
    return b->write_window(b, ref->id, ref->offset, data, ref->len);
}

/* Inputs are found by name, never by position: ids shift across rebuilds. */
static tp_status fill_bits(tp_allocator *a, const tp_graph *g, const char *name,
                           const void *data, size_t n)
{
    if (!a || !g || !name || (!data && n))
        return tp_fail(TP_ERR_INVALID, "fill_input: NULL argument");
    size_t id = SIZE_MAX;
    for (size_t i = 0; i < g->n_inputs; i++) {
        size_t k = g->inputs[i];
        if (k < g->n_nodes && strcmp(g->nodes[k].name, name) == 0) {
            id = k;
            break;
        }
    }
    if (id == SIZE_MAX)
        return tp_fail(TP_ERR_NOT_FOUND, "no input node named '%s'", name);
    tp_bufref ref;
    if (!a->plan || a->plan->graph != g || !tp_alloc_node_buffer(a, id, &ref))
        return tp_fail(TP_ERR_INVALID, "input '%s' has no buffer (graph not allocated)", name);
    if (n != ref.len)
        return tp_fail(TP_ERR_INVALID, "input '%s': %zu values for a window of %zu", name, n,
                       ref.len);
    /* bitwise: integers below 2^23 are subnormal floats, which float arithmetic under
     * flush-to-zero would turn into 0 */
    return tp_alloc_write(a, &ref, data);
}

tp_status tp_alloc_fill_input_i32(tp_allocator *a, const tp_graph *g, const char *name,
                                  const uint32_t *data, size_t n)
{
    if (g && name && data) {
        /* A KV position >= n_ctx is a loud error here, never an overflow in the store. */
        for (size_t i = 0; i < g->n_nodes; i++) {
            const tp_node *st = &g->nodes[i];
            if (st->op != TP_OP_KV_STORE || st->n_src < 3 || st->src[2] >= g->n_nodes ||
                strcmp(g->nodes[st->src[2]].name, name) != 0)
                continue;
            uint64_t n_ctx = (uint64_t)st->shape[1];
            for (size_t k = 0; k < n; k++)
                if ((uint64_t)data[k] >= n_ctx)
                    return tp_fail(TP_ERR_INVALID,
                                   "input '%s'[%zu] = %u: a KV position must be below n_ctx "
                                   "%llu (node %zu '%s')",
                                   name, k, (unsigned)data[k], (unsigned long long)n_ctx, i,
                                   st->name);
        }
    }
    return fill_bits(a, g, name, data, n);
}

tp_status tp_alloc_fill_input(tp_allocator *a, const tp_graph *g, const char *name,
                              const float *data, size_t n)
{
    return fill_bits(a, g, name, data, n);
}

tp_status tp_alloc_staging(tp_allocator *a, size_t node, int dst_backend, tp_bufref *out)
{
    if (!a || !out)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_staging: NULL argument");
    tp_plan *p = a->plan;
    if (!p)
        return tp_fail(TP_ERR_INVALID, "staging: no graph is allocated");
    tp_bufref src;
    if (!tp_alloc_node_buffer(a, node, &src))
        return tp_fail(TP_ERR_INVALID, "staging: node %zu has no buffer", node);
    tp_backend *b = tp_alloc_backend(a, dst_backend);
    if (!b)
        return tp_fail(TP_ERR_INVALID, "staging: no backend %d", dst_backend);
    if (src.backend == dst_backend)
        return tp_fail(TP_ERR_INVALID, "staging: node %zu already lives on %s", node,
                       tp_backend_name(dst_backend));
    for (size_t i = 0; i < p->n_staging; i++) {
        if (p->staging[i].node == node && p->staging[i].ref.backend == dst_backend) {
            /* one per (node, destination) per graph: rewritten on every execution */
            *out = p->staging[i].ref;
            return TP_OK;
        }
    }
    tp_status gst = TP_GROW(&p->staging, &p->cap_staging, p->n_staging + 1);
    if (gst != TP_OK)
        return gst;
    size_t id;
    /* Fresh, never from the free list: at execution time the free list holds ids whose
     * contents are still to be read later in the same execution. */
    tp_status st = b->alloc_fresh(b, src.len, &id);
    if (st != TP_OK)
        return st;
    tp_bufref r = {dst_backend, id, 0, src.len};
    p->staging[p->n_staging].node = node;
    p->staging[p->n_staging].ref = r;
    p->n_staging++;
    *out = r;
    return TP_OK;
}
