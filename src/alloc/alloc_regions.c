/* Persistent regions (created once, never part of a plan) and the KV pair of each decoder
 * layer, which lives in them and survives every re-plan (docs/allocator.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "common/error.h"
#include "common/grow.h"

/* --- persistent regions and KV ------------------------------------------------------------ */

tp_bufref tp_alloc_region_ref(const tp_persistent_region *r)
{
    tp_bufref ref = {r->backend, r->id, 0, r->elems};
    return ref;
}

const tp_persistent_region *tp_alloc_find_persistent(const tp_allocator *a, const char *name)
{
    if (!a || !name)
        return NULL;
    for (size_t i = 0; i < a->n_persistent; i++)
        if (strcmp(a->persistent[i].name, name) == 0)
            return &a->persistent[i];
    return NULL;
}

/* Whether a caller's region already has this name. A layer without KV regions can clash
 * with nothing else, so creating the KV of many layers does not search every region. */
static int named_clash(const tp_allocator *a, const char *name)
{
    for (size_t i = 0; i < a->n_named; i++)
        if (strcmp(a->persistent[a->named[i]].name, name) == 0)
            return 1;
    return 0;
}

static tp_status persistent_new(tp_allocator *a, const char *name, int backend, size_t elems,
                                int kv, size_t *index)
{
    if (strlen(name) >= TP_NAME_MAX)
        return tp_fail(TP_ERR_INVALID, "persistent region name '%s' is too long", name);
    /* KV names were checked by the caller (see named_clash) */
    if (!kv) {
        if (tp_alloc_find_persistent(a, name))
            return tp_fail(TP_ERR_INVALID, "persistent region '%s' exists already", name);
        tp_status gst = TP_GROW(&a->named, &a->cap_named, a->n_named + 1);
        if (gst != TP_OK)
            return gst;
    }
    tp_backend *b = tp_alloc_backend(a, backend);
    if (!b)
        return tp_fail(TP_ERR_INVALID, "persistent region '%s': no backend %d", name, backend);
    if (elems == 0)
        return tp_fail(TP_ERR_INVALID, "persistent region '%s': zero elements", name);
    tp_status gst = TP_GROW(&a->persistent, &a->cap_persistent, a->n_persistent + 1);
    if (gst != TP_OK)
        return gst;
    size_t id;
    /* Fresh, never from the free list: a cached plan that is not current may still name
     * a free buffer, and re-mapping it must find that buffer unused. */
    tp_status st = b->alloc_fresh(b, elems, &id);
    if (st != TP_OK)
        return st;
    tp_persistent_region *r = &a->persistent[a->n_persistent];
    memset(r, 0, sizeof *r);
    strcpy(r->name, name);
    r->backend = backend;
    r->id = id;
    r->elems = elems;
    if (!kv)
        a->named[a->n_named++] = a->n_persistent;
    *index = a->n_persistent++;
    return TP_OK;
}

tp_status tp_alloc_persistent(tp_allocator *a, const char *name, int backend, size_t elems,
                              tp_bufref *out)
{
    if (!a || !name)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_persistent: NULL argument");
    size_t idx = 0; /* set on TP_OK; initialised for gcc -fPIC -O2 */
    tp_status st = persistent_new(a, name, backend, elems, 0, &idx);
    if (st == TP_OK && out)
        *out = tp_alloc_region_ref(&a->persistent[idx]);
    return st;
}

size_t tp_alloc_persistent_count(const tp_allocator *a)
{
    return a ? a->n_persistent : 0;
}

const tp_persistent_region *tp_alloc_persistent_at(const tp_allocator *a, size_t i)
{
    if (!a || i >= a->n_persistent)
        return NULL;
    return &a->persistent[i];
}

tp_status tp_alloc_ensure_kv(tp_allocator *a, int layer, int backend, size_t elems,
                             tp_bufref *k, tp_bufref *v)
{
    if (!a)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_ensure_kv: NULL allocator");
    if (layer < 0)
        return tp_fail(TP_ERR_INVALID, "KV regions need a layer >= 0 (got %d)", layer);
    for (size_t i = 0; i < a->n_kv; i++) {
        if (a->kv[i].layer != layer)
            continue;
        const tp_persistent_region *rk = &a->persistent[a->kv[i].k];
        const tp_persistent_region *rv = &a->persistent[a->kv[i].v];
        /* A region sized on first use must never be handed out at another size or on
         * another backend: a silent reuse would hide n_ctx mismatches. */
        if (rk->elems != elems)
            return tp_fail(TP_ERR_INVALID,
                           "KV layer %d: regions have %zu elements, a node asks for %zu "
                           "(n_ctx must be the same for every graph of a run)",
                           layer, rk->elems, elems);
        if (rk->backend != backend)
            return tp_fail(TP_ERR_INVALID,
                           "KV layer %d: regions live on %s, a node on %s asks for them", layer,
                           tp_backend_name(rk->backend), tp_backend_name(backend));
        if (k)
            *k = tp_alloc_region_ref(rk);
        if (v)
            *v = tp_alloc_region_ref(rv);
        return TP_OK;
    }
    tp_status gst = TP_GROW(&a->kv, &a->cap_kv, a->n_kv + 1);
    if (gst != TP_OK)
        return gst;
    char kname[TP_NAME_MAX], vname[TP_NAME_MAX];
    size_t ik, iv;
    snprintf(kname, sizeof kname, "kv.%d.k", layer);
    snprintf(vname, sizeof vname, "kv.%d.v", layer);
    /* both names before either region, so a refusal leaves no half pair behind */
    for (int i = 0; i < 2; i++)
        if (named_clash(a, i ? vname : kname))
            return tp_fail(TP_ERR_INVALID, "persistent region '%s' exists already",
                           i ? vname : kname);
    tp_status st = persistent_new(a, kname, backend, elems, 1, &ik);
    if (st != TP_OK)
        return st;
    st = persistent_new(a, vname, backend, elems, 1, &iv);
    if (st != TP_OK)
        return st;
    a->kv[a->n_kv].layer = layer;
    a->kv[a->n_kv].k = ik;
    a->kv[a->n_kv].v = iv;
    a->n_kv++;
    if (k)
        *k = tp_alloc_region_ref(&a->persistent[ik]);
    if (v)
        *v = tp_alloc_region_ref(&a->persistent[iv]);
    return TP_OK;
}

int tp_alloc_kv_pair(const tp_allocator *a, int layer, tp_bufref *k, tp_bufref *v)
{
    if (!a)
        return 0;
    for (size_t i = 0; i < a->n_kv; i++) {
        if (a->kv[i].layer == layer) {
            if (k)
                *k = tp_alloc_region_ref(&a->persistent[a->kv[i].k]);
            if (v)
                *v = tp_alloc_region_ref(&a->persistent[a->kv[i].v]);
            return 1;
        }
    }
    return 0;
}

size_t tp_alloc_kv_count(const tp_allocator *a)
{
    return a ? a->n_kv : 0;
}

int tp_alloc_kv_at(const tp_allocator *a, size_t i, int *layer, tp_bufref *k, tp_bufref *v)
{
    if (!a || i >= a->n_kv)
        return 0;
    if (layer)
        *layer = a->kv[i].layer;
    if (k)
        *k = tp_alloc_region_ref(&a->persistent[a->kv[i].k]);
    if (v)
        *v = tp_alloc_region_ref(&a->persistent[a->kv[i].v]);
    return 1;
}
