/* Persistent regions (created once, never part of a plan) and the KV pair of each decoder
 * layer, which lives in them and survives every re-plan (docs/allocator.md). */
#include <stdint.h>
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
                                tp_dtype dtype, size_t bytes, int kv, size_t *index)
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
    r->dtype = dtype;
    r->bytes = bytes;
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
    size_t bytes = elems > SIZE_MAX / sizeof(float) ? SIZE_MAX : elems * sizeof(float);
    tp_status st = persistent_new(a, name, backend, elems, TP_DTYPE_F32, bytes, 0, &idx);
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

/* The existing pair of a layer, checked against the request. */
static tp_status kv_existing(tp_allocator *a, size_t i, int backend, tp_dtype dtype,
                             size_t elems, tp_bufref *k, tp_bufref *v)
{
    const int layer = a->kv[i].layer;
    const tp_persistent_region *rk = &a->persistent[a->kv[i].k];
    const tp_persistent_region *rv = &a->persistent[a->kv[i].v];
    /* A region sized on first use must never be handed out at another size, type or on
     * another backend: a silent reuse would hide n_ctx or KV type mismatches. */
    if (rk->dtype != dtype)
        return tp_fail(TP_ERR_INVALID,
                       "KV layer %d: regions are stored as %s, a node asks for %s (the KV "
                       "type must be the same for every graph of a run)",
                       layer, tp_dtype_name(rk->dtype), tp_dtype_name(dtype));
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

static tp_status ensure_kv(tp_allocator *a, int layer, int backend, tp_dtype dtype,
                           size_t elems, size_t bytes, tp_bufref *k, tp_bufref *v)
{
    if (!a)
        return tp_fail(TP_ERR_INVALID, "tp_alloc_ensure_kv: NULL allocator");
    if (layer < 0)
        return tp_fail(TP_ERR_INVALID, "KV regions need a layer >= 0 (got %d)", layer);
    for (size_t i = 0; i < a->n_kv; i++)
        if (a->kv[i].layer == layer)
            return kv_existing(a, i, backend, dtype, elems, k, v);
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
    tp_status st = persistent_new(a, kname, backend, elems, dtype, bytes, 1, &ik);
    if (st != TP_OK)
        return st;
    st = persistent_new(a, vname, backend, elems, dtype, bytes, 1, &iv);
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

tp_status tp_alloc_ensure_kv(tp_allocator *a, int layer, int backend, size_t elems,
                             tp_bufref *k, tp_bufref *v)
{
    size_t bytes = elems > SIZE_MAX / sizeof(float) ? SIZE_MAX : elems * sizeof(float);
    return ensure_kv(a, layer, backend, TP_DTYPE_F32, elems, bytes, k, v);
}

tp_status tp_alloc_ensure_kv_typed(tp_allocator *a, int layer, int backend, tp_dtype dtype,
                                   size_t width, size_t n_ctx, tp_bufref *k, tp_bufref *v)
{
    if (dtype != TP_DTYPE_F32 && dtype != TP_DTYPE_F16 && dtype != TP_DTYPE_Q8_0)
        return tp_fail(TP_ERR_INVALID, "KV layer %d: regions cannot be stored as %s", layer,
                       tp_dtype_name(dtype));
    size_t elems = tp_kv_region_elems(dtype, width, n_ctx);
    if (elems == 0)
        return tp_fail(TP_ERR_INVALID, "KV layer %d: %zu rows of %zu elements of %s have no "
                       "size (q8_0 rows are whole blocks of 32)", layer, n_ctx, width,
                       tp_dtype_name(dtype));
    size_t bytes = tp_dtype_row_bytes(dtype, width) * n_ctx;
    return ensure_kv(a, layer, backend, dtype, elems, bytes, k, v);
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
