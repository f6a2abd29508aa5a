/* Test support: the independent plan checker (see plan_check.h). */
#include "support/plan_check.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

void tpt_plan_free(tpt_plan *p)
{
    if (!p)
        return;
    free(p->nodes);
    free(p->buffers);
    free(p->kv);
    memset(p, 0, sizeof *p);
}

int tpt_plan_from_allocator(const tp_allocator *a, tpt_plan *out)
{
    memset(out, 0, sizeof *out);
    const tp_graph *g = tp_alloc_current_graph(a);
    if (!g)
        return -1;
    out->policy = tp_alloc_plan_options(a).aliasing;
    out->n_nodes = g->n_nodes;
    out->nodes = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *out->nodes);
    out->n_buffers = tp_alloc_plan_buffer_count(a);
    out->buffers = calloc(out->n_buffers ? out->n_buffers : 1, sizeof *out->buffers);
    out->n_kv = tp_alloc_kv_count(a);
    out->kv = calloc(out->n_kv ? out->n_kv : 1, sizeof *out->kv);
    if (!out->nodes || !out->buffers || !out->kv) {
        tpt_plan_free(out);
        return -1;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        out->nodes[i].mapped = tp_alloc_node_buffer(a, i, &out->nodes[i].ref);
        out->nodes[i].alias_of = tp_alloc_alias_of(a, i);
    }
    for (size_t i = 0; i < out->n_buffers; i++) {
        tp_plan_buffer b = tp_alloc_plan_buffer_at(a, i);
        out->buffers[i].backend = b.backend;
        out->buffers[i].id = b.id;
        out->buffers[i].elems = b.elems;
        out->buffers[i].persistent = b.persistent;
        if (b.name)
            snprintf(out->buffers[i].name, sizeof out->buffers[i].name, "%s", b.name);
    }
    for (size_t i = 0; i < out->n_kv; i++) {
        tp_bufref k, v;
        tp_alloc_kv_at(a, i, &out->kv[i].layer, &k, &v);
        out->kv[i].backend = k.backend;
        out->kv[i].k = k.id;
        out->kv[i].v = v.id;
    }
    return 0;
}

static int json_size(const cJSON *o, const char *key, size_t *v)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(it) || it->valuedouble < 0)
        return -1;
    *v = (size_t)it->valuedouble;
    return 0;
}

static int json_backend(const cJSON *o, const char *key, int *b)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(it))
        return -1;
    return tp_backend_from_name(it->valuestring, b) == TP_OK ? 0 : -1;
}

int tpt_plan_from_json(const char *text, tpt_plan *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_Parse(text);
    int rc = -1;
    if (!root) {
        fail(why, why_size, "plan JSON does not parse");
        return -1;
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(root, "aliasing");
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    const cJSON *bufs = cJSON_GetObjectItemCaseSensitive(root, "buffers");
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(root, "kv");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tensorplan-plan") != 0 ||
        !cJSON_IsString(al) || !cJSON_IsArray(nodes) || !cJSON_IsArray(bufs) ||
        !cJSON_IsArray(kv)) {
        fail(why, why_size, "plan JSON lacks format, aliasing, nodes, buffers or kv");
        goto done;
    }
    if (tp_alias_policy_from_name(al->valuestring, &out->policy) != TP_OK) {
        fail(why, why_size, "unknown aliasing '%s'", al->valuestring);
        goto done;
    }
    out->n_nodes = (size_t)cJSON_GetArraySize(nodes);
    out->n_buffers = (size_t)cJSON_GetArraySize(bufs);
    out->n_kv = (size_t)cJSON_GetArraySize(kv);
    out->nodes = calloc(out->n_nodes + 1, sizeof *out->nodes);
    out->buffers = calloc(out->n_buffers + 1, sizeof *out->buffers);
    out->kv = calloc(out->n_kv + 1, sizeof *out->kv);
    if (!out->nodes || !out->buffers || !out->kv) {
        fail(why, why_size, "out of memory");
        goto done;
    }
    size_t i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, nodes)
    {
        size_t id;
        if (json_size(it, "id", &id) != 0 || id != i) {
            fail(why, why_size, "nodes[%zu]: id missing or not %zu", i, i);
            goto done;
        }
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(it, "buffer");
        tpt_plan_node *pn = &out->nodes[i];
        pn->alias_of = TP_NO_ALIAS;
        if (cJSON_IsObject(b)) {
            pn->mapped = 1;
            if (json_backend(b, "backend", &pn->ref.backend) != 0 ||
                json_size(b, "id", &pn->ref.id) != 0 ||
                json_size(b, "offset", &pn->ref.offset) != 0 ||
                json_size(b, "len", &pn->ref.len) != 0) {
                fail(why, why_size, "nodes[%zu].buffer: malformed", i);
                goto done;
            }
            size_t a;
            if (cJSON_GetObjectItemCaseSensitive(it, "alias_of")) {
                if (json_size(it, "alias_of", &a) != 0) {
                    fail(why, why_size, "nodes[%zu].alias_of: malformed", i);
                    goto done;
                }
                pn->alias_of = a;
            }
        } else if (!cJSON_IsNull(b)) {
            fail(why, why_size, "nodes[%zu].buffer: expected an object or null", i);
            goto done;
        }
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(it, bufs)
    {
        tpt_plan_buffer *pb = &out->buffers[i];
        const cJSON *per = cJSON_GetObjectItemCaseSensitive(it, "persistent");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (json_backend(it, "backend", &pb->backend) != 0 || json_size(it, "id", &pb->id) != 0 ||
            json_size(it, "elements", &pb->elems) != 0 || !cJSON_IsBool(per)) {
            fail(why, why_size, "buffers[%zu]: malformed", i);
            goto done;
        }
        pb->persistent = cJSON_IsTrue(per);
        if (cJSON_IsString(name))
            snprintf(pb->name, sizeof pb->name, "%s", name->valuestring);
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(it, kv)
    {
        size_t layer;
        if (json_size(it, "layer", &layer) != 0 || json_size(it, "k", &out->kv[i].k) != 0 ||
            json_size(it, "v", &out->kv[i].v) != 0 ||
            json_backend(it, "backend", &out->kv[i].backend) != 0) {
            fail(why, why_size, "kv[%zu]: malformed", i);
            goto done;
        }
        out->kv[i].layer = (int)layer;
        i++;
    }
    rc = 0;
done:
    cJSON_Delete(root);
    if (rc != 0)
        tpt_plan_free(out);
    return rc;
}

static const tpt_plan_buffer *find_buffer(const tpt_plan *p, int backend, size_t id)
{
    for (size_t i = 0; i < p->n_buffers; i++)
        if (p->buffers[i].backend == backend && p->buffers[i].id == id)
            return &p->buffers[i];
    return NULL;
}

static int inplace_ok(tp_alias_policy policy, tp_op op)
{
    if (policy == TP_ALIAS_SOLE_CONSUMER)
        return op == TP_OP_SILU || op == TP_OP_ROPE;
    if (policy == TP_ALIAS_LAST_CONSUMER)
        return op == TP_OP_SILU || op == TP_OP_ROPE || op == TP_OP_ADD || op == TP_OP_MUL ||
               op == TP_OP_RMS_NORM || op == TP_OP_SWIGLU;
    return 0;
}

static int is_kv(const tp_node *n)
{
    return n->op == TP_OP_KV_STORE || n->op == TP_OP_KV_LOAD;
}

/* The f32 pool elements of a KV node's region, restated from docs/allocator.md: rows of
 * shape[0] elements stored in the node's type (f32 4 bytes an element, f16 2, q8_0 34 per
 * block of 32), the bytes rounded up to whole floats. 0 when the type cannot hold the row. */
static size_t kv_region_elems(const tp_node *nd)
{
    const size_t width = (size_t)nd->shape[0], rows = tp_node_elements(nd) / width;
    size_t row;
    if (nd->dtype == TP_DTYPE_F16)
        row = 2 * width;
    else if (nd->dtype == TP_DTYPE_Q8_0)
        row = width % 32 == 0 ? width / 32 * 34 : 0;
    else
        row = 4 * width;
    return (row * rows + 3) / 4;
}

int tpt_check_plan(const tp_graph *g, const tpt_plan *p, char *why, size_t wn)
{
    size_t n = g->n_nodes;
    if (p->n_nodes != n)
        return fail(why, wn, "plan has %zu nodes, graph %zu", p->n_nodes, n);
    int ok = 0;
    size_t *readers = calloc(n + 1, sizeof *readers);
    size_t *last_read = calloc(n + 1, sizeof *last_read);
    size_t *start = calloc(n + 1, sizeof *start);
    size_t *end = calloc(n + 1, sizeof *end);
    size_t *root = calloc(n + 1, sizeof *root);
    unsigned char *pinned_in = calloc(n + 1, 1), *pinned_out = calloc(n + 1, 1);
    if (!readers || !last_read || !start || !end || !root || !pinned_in || !pinned_out) {
        fail(why, wn, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const tp_node *nd = &g->nodes[i];
        for (size_t k = 0; k < nd->n_src; k++) {
            readers[nd->src[k]]++;
            if (i > last_read[nd->src[k]])
                last_read[nd->src[k]] = i;
        }
    }
    for (size_t k = 0; k < g->n_inputs; k++)
        pinned_in[g->inputs[k]] = 1;
    for (size_t k = 0; k < g->n_outputs; k++)
        pinned_out[g->outputs[k]] = 1;

    /* KV layers */
    for (size_t k = 0; k < p->n_kv; k++) {
        const tpt_plan_kv *kv = &p->kv[k];
        const tpt_plan_buffer *bk = find_buffer(p, kv->backend, kv->k);
        const tpt_plan_buffer *bv = find_buffer(p, kv->backend, kv->v);
        char nk[TP_NAME_MAX], nv[TP_NAME_MAX];
        snprintf(nk, sizeof nk, "kv.%d.k", kv->layer);
        snprintf(nv, sizeof nv, "kv.%d.v", kv->layer);
        if (!bk || !bv || kv->k == kv->v || !bk->persistent || !bv->persistent ||
            strcmp(bk->name, nk) != 0 || strcmp(bv->name, nv) != 0 || bk->elems != bv->elems) {
            fail(why, wn, "KV layer %d: regions missing, shared, not persistent or misnamed",
                 kv->layer);
            goto done;
        }
    }

    for (size_t i = 0; i < n; i++) {
        const tp_node *nd = &g->nodes[i];
        const tpt_plan_node *pn = &p->nodes[i];
        int be = nd->backend == TP_BACKEND_UNSET ? TP_BACKEND_CPU : nd->backend;
        size_t elems = tp_node_elements(nd);
        if (is_kv(nd)) {
            elems = kv_region_elems(nd); /* a typed region counts f32 pool elements */
            const tpt_plan_kv *kv = NULL;
            for (size_t k = 0; k < p->n_kv; k++)
                if (p->kv[k].layer == nd->p.layer)
                    kv = &p->kv[k];
            if (!pn->mapped || !kv || pn->ref.backend != be || kv->backend != be ||
                pn->ref.id != kv->k || pn->ref.offset != 0 || pn->ref.len != elems) {
                fail(why, wn, "node %zu (%s): not on its layer's K region", i, nd->name);
                goto done;
            }
            const tpt_plan_buffer *b = find_buffer(p, be, kv->k);
            if (b->elems != elems) {
                fail(why, wn, "node %zu (%s): K region of %zu elements for %zu", i, nd->name,
                     b->elems, elems);
                goto done;
            }
            continue;
        }
        int needed = pinned_in[i] || pinned_out[i] || readers[i] > 0;
        if (!needed) {
            if (pn->mapped) {
                fail(why, wn, "node %zu (%s): dead but mapped", i, nd->name);
                goto done;
            }
            continue;
        }
        if (!pn->mapped) {
            fail(why, wn, "node %zu (%s): needed but has no buffer", i, nd->name);
            goto done;
        }
        const tpt_plan_buffer *b = find_buffer(p, pn->ref.backend, pn->ref.id);
        if (pn->ref.backend != be || !b || b->persistent || pn->ref.len != elems ||
            pn->ref.offset > b->elems || elems > b->elems - pn->ref.offset) {
            fail(why, wn, "node %zu (%s): window %s#%zu [%zu,+%zu) is not its own backend's, "
                 "is persistent, or leaves its buffer",
                 i, nd->name, tp_backend_name(pn->ref.backend), pn->ref.id, pn->ref.offset,
                 pn->ref.len);
            goto done;
        }
        start[i] = pinned_in[i] ? 0 : i;
        end[i] = (pinned_in[i] || pinned_out[i]) ? n : (readers[i] ? last_read[i] : i);
        root[i] = i;
        if (pn->alias_of != TP_NO_ALIAS) {
            size_t s = pn->alias_of;
            const tpt_plan_node *ps = s < n ? &p->nodes[s] : NULL;
            if (!ps || nd->n_src < 1 || nd->src[0] != s || !inplace_ok(p->policy, nd->op) ||
                !ps->mapped || ps->ref.backend != pn->ref.backend || ps->ref.id != pn->ref.id ||
                ps->ref.offset != pn->ref.offset || ps->ref.len != pn->ref.len) {
                fail(why, wn, "node %zu (%s): alias of %zu is not a legal in-place write", i,
                     nd->name, s);
                goto done;
            }
            if (pinned_in[s] || pinned_out[s] || end[s] > i ||
                (p->policy == TP_ALIAS_SOLE_CONSUMER && readers[s] != 1)) {
                fail(why, wn, "node %zu (%s): overwrites node %zu, which is still needed", i,
                     nd->name, s);
                goto done;
            }
            root[i] = root[s];
            if (end[i] > end[root[i]])
                end[root[i]] = end[i];
        }
    }
    /* no two values with overlapping windows in one buffer are live at once */
    for (size_t i = 0; i < n; i++) {
        if (!p->nodes[i].mapped || is_kv(&g->nodes[i]) || root[i] != i)
            continue;
        for (size_t j = i + 1; j < n; j++) {
            if (!p->nodes[j].mapped || is_kv(&g->nodes[j]) || root[j] != j)
                continue;
            const tp_bufref *a = &p->nodes[i].ref, *b = &p->nodes[j].ref;
            if (a->backend != b->backend || a->id != b->id)
                continue;
            if (a->offset + a->len <= b->offset || b->offset + b->len <= a->offset)
                continue;
            if (start[i] <= end[j] && start[j] <= end[i]) {
                fail(why, wn,
                     "nodes %zu (%s, live %zu..%zu) and %zu (%s, live %zu..%zu) overlap in "
                     "%s#%zu",
                     i, g->nodes[i].name, start[i], end[i], j, g->nodes[j].name, start[j],
                     end[j], tp_backend_name(a->backend), a->id);
                goto done;
            }
        }
    }
    ok = 1;
done:
    free(readers);
    free(last_read);
    free(start);
    free(end);
    free(root);
    free(pinned_in);
    free(pinned_out);
    return ok;
}
