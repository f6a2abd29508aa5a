/* The host-memory pool behind the cpu and queued backends (docs/backends.md, "The interface").
 *
 * Buffers are separate blocks, so a buffer's address never changes once created (ids are
 * stable and memory never moves: a device may capture raw pointers). Large buffers are
 * anonymous mappings: zero pages the kernel supplies on first touch, so creating the KV
 * regions (100 MB for Qwen2.5-0.5B at n_ctx 4096) costs nothing until they are written,
 * whereas calloc from a heap that already served big blocks memsets them. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/error.h"
#include "common/grow.h"
#include "tensorplan/backend.h"

#define MMAP_MIN_BYTES ((size_t)256 * 1024)

struct tp_host_pool {
    float **data;
    size_t *len;
    unsigned char *is_free;
    unsigned char *mapped; /* 1: an anonymous mapping, 0: calloc */
    size_t n, cap;
    size_t *free_ids; /* ids on the free list, in the order they were freed */
    size_t n_free, cap_free;
    tp_pool_counters counters;
    int no_memory; /* 1: buffers have a length and no storage (tp_backend_create_planning) */
};

tp_status tp_host_pool_create(tp_host_pool **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "tp_host_pool_create: out is NULL");
    tp_host_pool *p = calloc(1, sizeof *p);
    if (!p)
        return tp_fail(TP_ERR_NOMEM, "host pool: out of memory");
    *out = p;
    return TP_OK;
}

void tp_host_pool_destroy(tp_host_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        if (p->mapped[i])
            munmap(p->data[i], p->len[i] * sizeof(float));
        else
            free(p->data[i]);
    }
    free(p->data);
    free(p->len);
    free(p->is_free);
    free(p->mapped);
    free(p->free_ids);
    free(p);
}

static tp_status pool_append(tp_host_pool *p, size_t elems, size_t *id)
{
    if (elems == 0)
        elems = 1;
    if (elems > SIZE_MAX / sizeof(float))
        return tp_fail(TP_ERR_OVERFLOW, "host pool: %zu elements overflow", elems);
    if (p->n == p->cap) {
        /* four parallel arrays of one capacity: tp_grow gives each the same new one */
        size_t c_data = p->cap, c_len = p->cap, c_free = p->cap, c_mapped = p->cap;
        tp_status st = TP_GROW(&p->data, &c_data, p->n + 1);
        if (st == TP_OK)
            st = TP_GROW(&p->len, &c_len, p->n + 1);
        if (st == TP_OK)
            st = TP_GROW(&p->is_free, &c_free, p->n + 1);
        if (st == TP_OK)
            st = TP_GROW(&p->mapped, &c_mapped, p->n + 1);
        if (st != TP_OK)
            return st;
        p->cap = c_data;
    }
    float *buf = NULL;
    unsigned char mapped = 0;
    if (p->no_memory) {
        p->data[p->n] = NULL;
        p->len[p->n] = elems;
        p->is_free[p->n] = 0;
        p->mapped[p->n] = 0;
        *id = p->n++;
        return TP_OK;
    }
    if (elems * sizeof(float) >= MMAP_MIN_BYTES) {
        void *m = mmap(NULL, elems * sizeof(float), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
            buf = m;
            mapped = 1;
        }
    }
    if (!buf)
        buf = calloc(elems, sizeof(float));
    if (!buf)
        return tp_fail(TP_ERR_NOMEM, "host pool: cannot allocate %zu elements", elems);
    p->data[p->n] = buf;
    p->len[p->n] = elems;
    p->is_free[p->n] = 0;
    p->mapped[p->n] = mapped;
    *id = p->n++;
    return TP_OK;
}

static void zero_buffer(tp_host_pool *p, size_t id)
{
    if (!p->data[id])
        return; /* a planning pool's buffer: no storage */
#ifdef __linux__
    /* Linux refills a private anonymous mapping with zero pages after MADV_DONTNEED: the
     * buffer reads as zeros at once and only pages written again cost anything. */
    if (p->mapped[id] &&
        madvise(p->data[id], p->len[id] * sizeof(float), MADV_DONTNEED) == 0)
        return;
#endif
    memset(p->data[id], 0, p->len[id] * sizeof(float));
}

static tp_status pool_alloc(tp_host_pool *p, size_t elems, size_t *id)
{
    if (elems == 0)
        elems = 1;
    p->counters.allocs++;
    size_t best = SIZE_MAX, best_at = 0;
    for (size_t k = 0; k < p->n_free; k++) {
        size_t f = p->free_ids[k];
        if (p->len[f] == elems && f < best) {
            best = f;
            best_at = k;
        }
    }
    if (best != SIZE_MAX) {
        memmove(p->free_ids + best_at, p->free_ids + best_at + 1,
                (p->n_free - best_at - 1) * sizeof *p->free_ids);
        p->n_free--;
        p->is_free[best] = 0;
        /* recycled: zero it, so one node's stale data can never leak into another */
        zero_buffer(p, best);
        p->counters.recycled++;
        *id = best;
        return TP_OK;
    }
    return pool_append(p, elems, id);
}

static tp_status pool_free(tp_host_pool *p, size_t id)
{
    if (id >= p->n)
        return tp_fail(TP_ERR_INVALID, "host pool: free of unknown buffer %zu", id);
    if (p->is_free[id])
        return TP_OK;
    tp_status gst = TP_GROW(&p->free_ids, &p->cap_free, p->n_free + 1);
    if (gst != TP_OK)
        return gst;
    p->free_ids[p->n_free++] = id;
    p->is_free[id] = 1;
    p->counters.frees++;
    return TP_OK;
}

static tp_status pool_reserve(tp_host_pool *p, size_t id)
{
    if (id >= p->n || !p->is_free[id])
        return tp_fail(TP_ERR_INVALID, "host pool: buffer %zu is not free", id);
    for (size_t k = 0; k < p->n_free; k++) {
        if (p->free_ids[k] == id) {
            memmove(p->free_ids + k, p->free_ids + k + 1,
                    (p->n_free - k - 1) * sizeof *p->free_ids);
            p->n_free--;
            break;
        }
    }
    p->is_free[id] = 0;
    return TP_OK;
}

static tp_status window_check(const tp_host_pool *p, size_t id, size_t offset, size_t n)
{
    if (id >= p->n)
        return tp_fail(TP_ERR_INVALID, "host pool: no buffer %zu", id);
    if (offset > p->len[id] || n > p->len[id] - offset)
        return tp_fail(TP_ERR_INVALID,
                       "host pool: window [%zu, +%zu) leaves buffer %zu of %zu elements",
                       offset, n, id, p->len[id]);
    if (p->no_memory)
        return tp_fail(TP_ERR_INVALID, "host pool: buffer %zu is planned only: it has no "
                       "memory to read or write", id);
    return TP_OK;
}

/* --- backend bindings ------------------------------------------------------------------ */

static tp_status b_alloc(tp_backend *b, size_t elems, size_t *id)
{
    return pool_alloc(b->host, elems, id);
}

static tp_status b_alloc_fresh(tp_backend *b, size_t elems, size_t *id)
{
    b->host->counters.fresh_allocs++;
    return pool_append(b->host, elems, id);
}

static tp_status b_free(tp_backend *b, size_t id)
{
    return pool_free(b->host, id);
}

static tp_status b_reserve(tp_backend *b, size_t id)
{
    return pool_reserve(b->host, id);
}

static size_t b_count(const tp_backend *b)
{
    return b->host->n;
}

static size_t b_len(const tp_backend *b, size_t id)
{
    return id < b->host->n ? b->host->len[id] : 0;
}

static int b_is_free(const tp_backend *b, size_t id)
{
    return id < b->host->n && b->host->is_free[id];
}

static tp_status b_write(tp_backend *b, size_t id, size_t offset, const void *data, size_t n)
{
    tp_status st = window_check(b->host, id, offset, n);
    if (st != TP_OK)
        return st;
    if (n)
        memcpy(b->host->data[id] + offset, data, n * sizeof(float));
    return TP_OK;
}

static tp_status b_read(tp_backend *b, size_t id, size_t offset, void *data, size_t n)
{
    tp_status st = window_check(b->host, id, offset, n);
    if (st != TP_OK)
        return st;
    if (n)
        memcpy(data, b->host->data[id] + offset, n * sizeof(float));
    return TP_OK;
}

static float *b_host_data(tp_backend *b, size_t id)
{
    return id < b->host->n ? b->host->data[id] : NULL;
}

static tp_pool_counters b_counters(const tp_backend *b)
{
    return b->host->counters;
}

static tp_status b_no_execute(tp_backend *b, const tp_exec_args *args)
{
    (void)args;
    return tp_fail(TP_ERR_INVALID, "backend %s is a memory pool only: it executes nothing", b->name);
}

static tp_status b_no_sync(tp_backend *b)
{
    return tp_fail(TP_ERR_INVALID, "backend %s is a memory pool only: it executes nothing", b->name);
}

static int b_no_support(const tp_backend *b, tp_op op, tp_dtype dtype)
{
    (void)b;
    (void)op;
    (void)dtype;
    return 0;
}

void tp_backend_destroy_host(tp_backend *b)
{
    if (!b)
        return;
    tp_host_pool_destroy(b->host);
    free(b);
}

tp_status tp_backend_create_planning(int id, const char *name, tp_backend **out)
{
    tp_status st = tp_backend_create_host(id, name, out);
    if (st == TP_OK)
        (*out)->host->no_memory = 1;
    return st;
}

tp_status tp_backend_create_host(int id, const char *name, tp_backend **out)
{
    if (!out || !name)
        return tp_fail(TP_ERR_INVALID, "tp_backend_create_host: NULL argument");
    if (id < 0 || id >= TP_MAX_BACKENDS)
        return tp_fail(TP_ERR_INVALID, "backend id %d out of range [0, %d)", id,
                       TP_MAX_BACKENDS);
    tp_backend *b = calloc(1, sizeof *b);
    if (!b)
        return tp_fail(TP_ERR_NOMEM, "backend: out of memory");
    tp_status st = tp_host_pool_create(&b->host);
    if (st != TP_OK) {
        free(b);
        return st;
    }
    b->id = id;
    b->name = name;
    b->alloc = b_alloc;
    b->alloc_fresh = b_alloc_fresh;
    b->free_buffer = b_free;
    b->reserve = b_reserve;
    b->buffer_count = b_count;
    b->buffer_len = b_len;
    b->is_free = b_is_free;
    b->write_window = b_write;
    b->read_window = b_read;
    b->host_data = b_host_data;
    b->counters = b_counters;
    b->execute_node = b_no_execute;
    b->synchronize = b_no_sync;
    b->supports_op = b_no_support;
    b->destroy = tp_backend_destroy_host;
    *out = b;
    return TP_OK;
}
