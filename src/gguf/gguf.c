/* The GGUF reader (docs/gguf.md): every header field is read through a bounds-checked cursor
 * and checked before it is used; a refusal names the file, the byte offset and what was
 * expected there. Only the header, the metadata and the tensor infos are read at open. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* madvise(MADV_POPULATE_READ) */
#endif
#include "tensorplan/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/input_file.h"
#include "common/grow.h"
#include "gguf/gguf_internal.h"

/* A name (key or tensor name) for sorted lookup and the duplicate check. */
typedef struct name_ref {
    const char *s;
    size_t len;
    size_t offset; /* of its record in the file */
    size_t index;  /* in file order */
} name_ref;

struct tp_gguf {
    char *name;
    const unsigned char *base;
    size_t size;
    void *map; /* owned mapping (tp_gguf_open), or NULL */
    uint32_t version;
    size_t alignment, data_offset;
    tp_gguf_kv *kvs;
    size_t n_kv, kv_cap;
    tp_gguf_tensor *tensors;
    size_t n_tensors, tensor_cap;
    name_ref *kv_index, *tensor_index; /* sorted by name */
};

typedef struct cursor {
    const unsigned char *p;
    size_t size, pos;
    const char *name;
} cursor;

static tp_status bad(const cursor *c, size_t at, const char *fmt, ...) TP_PRINTF(3, 4);

static tp_status bad(const cursor *c, size_t at, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tp_fail(TP_ERR_INVALID, "%s: offset %zu: %s", c->name, at, msg);
}

static size_t left(const cursor *c)
{
    return c->size - c->pos;
}

/* n bytes at the cursor (WHAT names them in a refusal), moving past them. */
static tp_status take(cursor *c, size_t n, const char *what, const unsigned char **at)
{
    if (left(c) < n)
        return bad(c, c->pos, "expected %s (%zu bytes), got %zu bytes before the end of the file",
                   what, n, left(c));
    *at = c->p + c->pos;
    c->pos += n;
    return TP_OK;
}

static uint64_t le_bits(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static tp_status read_uint(cursor *c, size_t n, const char *what, uint64_t *v)
{
    const unsigned char *p = NULL;
    TP_TRY(take(c, n, what, &p));
    *v = le_bits(p, n);
    return TP_OK;
}

static tp_status read_u32(cursor *c, const char *what, uint32_t *v)
{
    uint64_t x = 0;
    TP_TRY(read_uint(c, 4, what, &x));
    *v = (uint32_t)x;
    return TP_OK;
}

static tp_status read_i64(cursor *c, const char *what, int64_t *v)
{
    uint64_t x = 0;
    TP_TRY(read_uint(c, 8, what, &x));
    *v = (int64_t)x;
    return TP_OK;
}

/* A string: u64 length (at most 2^30) and its bytes. WHAT: "a key", "a tensor name", ... */
static tp_status read_string(cursor *c, const char *what, tp_gguf_str *s)
{
    const size_t at = c->pos;
    uint64_t n = 0;
    char len_what[96] = "";
    if (left(c) < 8) /* named only for the refusal: open reads one string per token */
        snprintf(len_what, sizeof len_what, "the length of %s", what);
    TP_TRY(read_uint(c, 8, len_what, &n));
    if (n > TP_GGUF_MAX_STRING)
        return bad(c, at, "expected %s of at most %llu bytes, got %llu", what,
                   (unsigned long long)TP_GGUF_MAX_STRING, (unsigned long long)n);
    if (n > left(c))
        return bad(c, at + 8, "expected %s of %llu bytes, got %zu bytes before the end of the file",
                   what, (unsigned long long)n, left(c));
    s->data = (const char *)c->p + c->pos;
    s->len = (size_t)n;
    c->pos += (size_t)n;
    return TP_OK;
}

static char *copy_str(tp_gguf_str s)
{
    char *d = malloc(s.len + 1);
    if (d) {
        memcpy(d, s.data, s.len);
        d[s.len] = '\0';
    }
    return d;
}

static tp_status read_array(cursor *c, tp_gguf_kv *kv)
{
    size_t at = c->pos;
    uint32_t et = 0;
    TP_TRY(read_u32(c, "an array element type", &et));
    if (et == TP_GGUF_ARRAY)
        return bad(c, at, "expected an array element type other than array (9) for key '%.64s', "
                   "got 9 (arrays of arrays are refused)", kv->key);
    if (et >= TP_GGUF_VTYPE_COUNT)
        return bad(c, at, "expected an array element type below 13 for key '%.64s', got %u",
                   kv->key, (unsigned)et);
    at = c->pos;
    uint64_t count = 0;
    TP_TRY(read_uint(c, 8, "an array length", &count));
    if (count > TP_GGUF_MAX_STRING)
        return bad(c, at, "expected an array of at most %llu elements, got %llu",
                   (unsigned long long)TP_GGUF_MAX_STRING, (unsigned long long)count);
    const size_t elem = et == TP_GGUF_STRING ? 8 : tp_gguf_vtype_bytes(et);
    if (count * elem > left(c))
        return bad(c, at, "expected an array of %llu %s (at least %llu bytes), got %zu bytes "
                   "before the end of the file", (unsigned long long)count, tp_gguf_vtype_name(et),
                   (unsigned long long)(count * elem), left(c));
    tp_gguf_array *a = &kv->array;
    a->type = (tp_gguf_vtype)et;
    a->count = (size_t)count;
    a->data = c->p + c->pos;
    if (et != TP_GGUF_STRING) {
        c->pos += a->count * elem;
        return TP_OK;
    }
    tp_gguf_str *strs = calloc(a->count ? a->count : 1, sizeof *strs);
    if (!strs)
        return tp_fail(TP_ERR_NOMEM, "%s: out of memory for an array of %zu strings", c->name,
                       a->count);
    a->strings = strs;
    for (size_t i = 0; i < a->count; i++)
        TP_TRY(read_string(c, "an array string", &strs[i]));
    return TP_OK;
}

static tp_status read_kv(cursor *c, tp_gguf_kv *kv)
{
    kv->offset = c->pos;
    tp_gguf_str key;
    TP_TRY(read_string(c, "a key", &key));
    if (key.len == 0)
        return bad(c, kv->offset, "expected a non-empty key, got an empty one");
    const char *nul = memchr(key.data, '\0', key.len);
    if (nul)
        return bad(c, kv->offset, "expected a key without NUL bytes, got '%.64s' with a NUL "
                   "at byte %zu", key.data, (size_t)(nul - key.data));
    kv->key = copy_str(key);
    if (!kv->key)
        return tp_fail(TP_ERR_NOMEM, "%s: out of memory for a key", c->name);
    kv->key_len = key.len;
    const size_t at = c->pos;
    uint32_t type = 0;
    TP_TRY(read_u32(c, "a value type", &type));
    if (type >= TP_GGUF_VTYPE_COUNT)
        return bad(c, at, "expected a value type id below 13 for key '%.64s', got %u", kv->key,
                   (unsigned)type);
    kv->type = (tp_gguf_vtype)type;
    if (type == TP_GGUF_STRING)
        return read_string(c, "a string value", &kv->string);
    if (type == TP_GGUF_ARRAY)
        return read_array(c, kv);
    char what[96];
    snprintf(what, sizeof what, "a %s value", tp_gguf_vtype_name(type));
    return read_uint(c, tp_gguf_vtype_bytes(type), what, &kv->bits);
}

static int cmp_ref(const void *pa, const void *pb)
{
    const name_ref *a = pa, *b = pb;
    const size_t n = a->len < b->len ? a->len : b->len;
    const int m = memcmp(a->s, b->s, n);
    if (m != 0)
        return m;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Sorts refs by name and refuses a repeated name (WHAT: "keys", "tensor names"), naming the
 * later record. */
static tp_status index_names(const cursor *c, name_ref *refs, size_t n, const char *what)
{
    if (n > 1)
        qsort(refs, n, sizeof *refs, cmp_ref);
    for (size_t i = 1; i < n; i++)
        if (refs[i].len == refs[i - 1].len && memcmp(refs[i].s, refs[i - 1].s, refs[i].len) == 0)
            return bad(c, refs[i].offset, "expected unique %s, got '%.64s' again (first at "
                       "offset %zu)", what, refs[i].s, refs[i - 1].offset);
    return TP_OK;
}

static const name_ref *lookup(const name_ref *refs, size_t n, const char *s)
{
    const name_ref key = { s, strlen(s), 0, 0 };
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first ref not below key (offsets 0 sort first among equals) */
        const size_t mid = lo + (hi - lo) / 2;
        if (cmp_ref(&refs[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n && refs[lo].len == key.len && memcmp(refs[lo].s, s, key.len) == 0)
        return &refs[lo];
    return NULL;
}

static tp_status alloc_refs(const cursor *c, size_t n, name_ref **out)
{
    *out = calloc(n ? n : 1, sizeof **out);
    return *out ? TP_OK : tp_fail(TP_ERR_NOMEM, "%s: out of memory for %zu names", c->name, n);
}

static tp_status read_header(cursor *c, tp_gguf *g, int64_t *n_tensors, int64_t *n_kv)
{
    const unsigned char *m = NULL;
    TP_TRY(take(c, 4, "the magic \"GGUF\"", &m));
    if (memcmp(m, "GGUF", 4) != 0)
        return bad(c, 0, "expected the magic \"GGUF\" (47 47 55 46), got %02x %02x %02x %02x",
                   m[0], m[1], m[2], m[3]);
    TP_TRY(read_u32(c, "the version", &g->version));
    if ((g->version & 0xFFFFu) == 0)
        return bad(c, 4, "expected version 2 or 3, got %u (a byte-swapped, big-endian file)",
                   (unsigned)g->version);
    if (g->version != 2 && g->version != 3)
        return bad(c, 4, "expected version 2 or 3, got %u", (unsigned)g->version);
    TP_TRY(read_i64(c, "the tensor count", n_tensors));
    if (*n_tensors < 0)
        return bad(c, 8, "expected a tensor count >= 0, got %lld", (long long)*n_tensors);
    TP_TRY(read_i64(c, "the key/value count", n_kv));
    if (*n_kv < 0)
        return bad(c, 16, "expected a key/value count >= 0, got %lld", (long long)*n_kv);
    return TP_OK;
}

static tp_status read_kvs(cursor *c, tp_gguf *g, int64_t n_kv)
{
    for (int64_t i = 0; i < n_kv; i++) { /* grows with what is there: a huge count hits EOF */
        TP_TRY(TP_GROW(&g->kvs, &g->kv_cap, g->n_kv + 1));
        tp_gguf_kv *kv = &g->kvs[g->n_kv++];
        memset(kv, 0, sizeof *kv);
        TP_TRY(read_kv(c, kv));
    }
    TP_TRY(alloc_refs(c, g->n_kv, &g->kv_index));
    for (size_t i = 0; i < g->n_kv; i++)
        g->kv_index[i] = (name_ref){ g->kvs[i].key, g->kvs[i].key_len, g->kvs[i].offset, i };
    TP_TRY(index_names(c, g->kv_index, g->n_kv, "keys"));
    g->alignment = TP_GGUF_DEFAULT_ALIGNMENT;
    const tp_gguf_kv *al = tp_gguf_find_kv(g, "general.alignment");
    if (!al)
        return TP_OK;
    const size_t type_at = al->offset + 8 + al->key_len;
    if (al->type != TP_GGUF_U32)
        return bad(c, type_at, "expected general.alignment of type u32, got %s",
                   tp_gguf_vtype_name(al->type));
    if (al->bits == 0 || (al->bits & (al->bits - 1)) != 0)
        return bad(c, type_at + 4, "expected general.alignment to be a non-zero power of two, "
                   "got %llu", (unsigned long long)al->bits);
    g->alignment = (size_t)al->bits;
    return TP_OK;
}

/* ne[0]'s offset: after the name and n_dims. */
static size_t dims_offset(const tp_gguf_tensor *t)
{
    return t->info_offset + 8 + t->name_len + 4;
}

static tp_status check_size(const cursor *c, tp_gguf_tensor *t, size_t type_at)
{
    char why[64];
    switch (tp_gguf_size(t->type, t->n_dims, t->ne, &t->nbytes)) {
    case TP_GGUF_SIZE_OK:
        return TP_OK;
    case TP_GGUF_SIZE_TYPE:
        tp_gguf_type_refusal(t->type, why, sizeof why);
        return bad(c, type_at, "expected a supported tensor type for '%s', got %s", t->name, why);
    case TP_GGUF_SIZE_BLOCK:
        return bad(c, dims_offset(t), "expected ne[0] of tensor '%s' to be a multiple of %zu "
                   "(the %s block), got %lld", t->name, tp_gguf_type_block_elems(t->type),
                   tp_gguf_type_name(t->type), (long long)t->ne[0]);
    default:
        return bad(c, dims_offset(t), "expected the element count and bytes of tensor '%s' to "
                   "fit in 63 bits, got an overflow", t->name);
    }
}

static tp_status read_tensor_info(cursor *c, tp_gguf_tensor *t)
{
    t->info_offset = c->pos;
    tp_gguf_str name;
    TP_TRY(read_string(c, "a tensor name", &name));
    if (name.len > TP_GGUF_MAX_NAME)
        return bad(c, t->info_offset, "expected a tensor name of at most %u bytes, got %zu",
                   TP_GGUF_MAX_NAME, name.len);
    const char *nul = memchr(name.data, '\0', name.len);
    if (nul)
        return bad(c, t->info_offset, "expected a tensor name without NUL bytes, got '%.64s' "
                   "with a NUL at byte %zu", name.data, (size_t)(nul - name.data));
    memcpy(t->name, name.data, name.len);
    t->name[name.len] = '\0';
    t->name_len = name.len;
    size_t at = c->pos;
    TP_TRY(read_u32(c, "the dimension count", &t->n_dims));
    if (t->n_dims > TP_GGUF_MAX_DIMS)
        return bad(c, at, "expected at most 4 dimensions for tensor '%s', got %u", t->name,
                   (unsigned)t->n_dims);
    for (uint32_t d = 0; d < TP_GGUF_MAX_DIMS; d++) {
        at = c->pos;
        t->ne[d] = 1;
        if (d < t->n_dims)
            TP_TRY(read_i64(c, "a dimension", &t->ne[d]));
        if (t->ne[d] < 0)
            return bad(c, at, "expected ne[%u] of tensor '%s' to be >= 0, got %lld", (unsigned)d,
                       t->name, (long long)t->ne[d]);
    }
    at = c->pos;
    TP_TRY(read_u32(c, "a tensor type", &t->type));
    TP_TRY(check_size(c, t, at));
    uint64_t off = 0;
    TP_TRY(read_uint(c, 8, "a tensor offset", &off));
    t->offset = off;
    return TP_OK;
}

/* Data at PAD(end of infos), each tensor right after the padded ones before it, all in the
 * file. */
static tp_status place_tensors(const cursor *c, tp_gguf *g)
{
    uint64_t data = c->pos;
    if (g->n_tensors > 0 && !tp_gguf_pad(c->pos, g->alignment, &data))
        return bad(c, c->pos, "expected a data section within 64 bits"); /* cannot happen */
    g->data_offset = (size_t)data;
    uint64_t expect = 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        tp_gguf_tensor *t = &g->tensors[i];
        const size_t at = dims_offset(t) + 8 * t->n_dims + 4;
        if (t->offset != expect)
            return bad(c, at, "expected tensor '%s' at data offset %llu, got %llu (each tensor "
                       "follows the padded ones before it)", t->name, (unsigned long long)expect,
                       (unsigned long long)t->offset);
        if (data > g->size || t->offset > g->size - data || t->nbytes > g->size - data - t->offset)
            return bad(c, at, "expected the %zu bytes of tensor '%s' at file offset %llu to end "
                       "within the file of %zu bytes", t->nbytes, t->name,
                       (unsigned long long)(data + t->offset), g->size);
        t->data = g->base + data + t->offset;
        uint64_t padded;
        if (!tp_gguf_pad(t->nbytes, g->alignment, &padded) || padded > UINT64_MAX - expect)
            return bad(c, at, "expected data offsets within 64 bits");
        expect += padded;
    }
    return TP_OK;
}

static tp_status read_tensors(cursor *c, tp_gguf *g, int64_t n_tensors)
{
    for (int64_t i = 0; i < n_tensors; i++) {
        TP_TRY(TP_GROW(&g->tensors, &g->tensor_cap, g->n_tensors + 1));
        tp_gguf_tensor *t = &g->tensors[g->n_tensors++];
        memset(t, 0, sizeof *t);
        TP_TRY(read_tensor_info(c, t));
    }
    TP_TRY(alloc_refs(c, g->n_tensors, &g->tensor_index));
    for (size_t i = 0; i < g->n_tensors; i++) {
        const tp_gguf_tensor *t = &g->tensors[i];
        g->tensor_index[i] = (name_ref){ t->name, t->name_len, t->info_offset, i };
    }
    TP_TRY(index_names(c, g->tensor_index, g->n_tensors, "tensor names"));
    return place_tensors(c, g);
}

static tp_status parse(tp_gguf *g)
{
    cursor c = { g->base, g->size, 0, g->name };
    int64_t n_tensors = 0, n_kv = 0;
    TP_TRY(read_header(&c, g, &n_tensors, &n_kv));
    TP_TRY(read_kvs(&c, g, n_kv));
    return read_tensors(&c, g, n_tensors);
}

static tp_status create(const char *name, const void *data, size_t size, tp_gguf **out)
{
    *out = NULL;
    tp_gguf *g = calloc(1, sizeof *g);
    if (g)
        g->name = copy_str((tp_gguf_str){ name, strlen(name) });
    if (!g || !g->name) {
        free(g);
        return tp_fail(TP_ERR_NOMEM, "%s: out of memory", name);
    }
    g->base = data;
    g->size = size;
    *out = g;
    return TP_OK;
}

tp_status tp_gguf_open_memory(const char *name, const void *data, size_t size, tp_gguf **out)
{
    if (!name || !out || (!data && size > 0))
        return tp_fail(TP_ERR_INVALID, "tp_gguf_open_memory: NULL argument");
    tp_gguf *g;
    TP_TRY(create(name, data, size, &g));
    const tp_status st = parse(g);
    if (st != TP_OK) {
        tp_gguf_close(g);
        *out = NULL;
        return st;
    }
    *out = g;
    return TP_OK;
}

tp_status tp_gguf_open(const char *path, tp_gguf **out)
{
    if (!path || !out)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_open: NULL argument");
    *out = NULL;
    int fd = -1;
    size_t size = 0;
    TP_TRY(tp_input_open(path, &fd, &size));
    if (size == 0) {
        /* a /proc or /sys file says 0 and still has bytes: it cannot be mapped */
        char byte;
        const ssize_t got = read(fd, &byte, 1);
        close(fd);
        if (got > 0)
            return tp_fail(TP_ERR_INVALID, "%s: cannot map: the file reports a size of 0 "
                           "but has bytes (a /proc or /sys file?)", path);
        return tp_fail(TP_ERR_INVALID, "%s: offset 0: expected a GGUF header (24 bytes), got an "
                       "empty file", path);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED)
        return tp_fail(TP_ERR_IO, "%s: cannot map: %s", path, strerror(map_errno));
    const tp_status s = tp_gguf_open_memory(path, map, size, out);
    if (s != TP_OK) {
        munmap(map, size);
        return s;
    }
    (*out)->map = map;
    return TP_OK;
}

tp_status tp_gguf_prefault(const tp_gguf *g, const void *data, size_t bytes)
{
    if (!g || (!data && bytes))
        return tp_fail(TP_ERR_INVALID, "tp_gguf_prefault: NULL argument");
    const uintptr_t base = (uintptr_t)g->base, p = (uintptr_t)data;
    if (bytes && (p < base || p - base > g->size || bytes > g->size - (p - base)))
        return tp_fail(TP_ERR_INVALID, "%s: tp_gguf_prefault: %zu bytes at %#zx are not in "
                       "the file", g->name, bytes, (size_t)(p - base));
    if (!g->map || bytes == 0) /* a caller's buffer is the caller's memory already */
        return TP_OK;
    const long ps = sysconf(_SC_PAGESIZE);
    const uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096u;
    const uintptr_t start = p / page * page, end = p + bytes;
#ifdef MADV_POPULATE_READ
    if (madvise((void *)start, end - start, MADV_POPULATE_READ) == 0)
        return TP_OK;
#endif
    /* a kernel without MADV_POPULATE_READ (before Linux 5.14): a read of every page */
    unsigned char sum = 0;
    for (uintptr_t q = start; q < end; q += page)
        sum = (unsigned char)(sum + *(const volatile unsigned char *)q);
    (void)sum;
    return TP_OK;
}

void tp_gguf_close(tp_gguf *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_kv; i++) {
        free((char *)g->kvs[i].key);
        free((tp_gguf_str *)g->kvs[i].array.strings);
    }
    free(g->kvs);
    free(g->tensors);
    free(g->kv_index);
    free(g->tensor_index);
    if (g->map)
        munmap(g->map, g->size);
    free(g->name);
    free(g);
}

const char *tp_gguf_name(const tp_gguf *g) { return g->name; }
uint32_t tp_gguf_version(const tp_gguf *g) { return g->version; }
size_t tp_gguf_alignment(const tp_gguf *g) { return g->alignment; }
size_t tp_gguf_data_offset(const tp_gguf *g) { return g->data_offset; }
size_t tp_gguf_file_size(const tp_gguf *g) { return g->size; }
size_t tp_gguf_kv_count(const tp_gguf *g) { return g->n_kv; }
size_t tp_gguf_tensor_count(const tp_gguf *g) { return g->n_tensors; }

const tp_gguf_kv *tp_gguf_kv_at(const tp_gguf *g, size_t i)
{
    return i < g->n_kv ? &g->kvs[i] : NULL;
}

const char *tp_gguf_key(const tp_gguf *g, size_t i)
{
    return i < g->n_kv ? g->kvs[i].key : NULL;
}

tp_gguf_vtype tp_gguf_kv_type(const tp_gguf *g, size_t i)
{
    return i < g->n_kv ? g->kvs[i].type : TP_GGUF_VTYPE_COUNT;
}

const tp_gguf_kv *tp_gguf_find_kv(const tp_gguf *g, const char *key)
{
    const name_ref *r = lookup(g->kv_index, g->n_kv, key);
    return r ? &g->kvs[r->index] : NULL;
}

const tp_gguf_tensor *tp_gguf_tensor_at(const tp_gguf *g, size_t i)
{
    return i < g->n_tensors ? &g->tensors[i] : NULL;
}

const tp_gguf_tensor *tp_gguf_find_tensor(const tp_gguf *g, const char *name)
{
    const name_ref *r = lookup(g->tensor_index, g->n_tensors, name);
    return r ? &g->tensors[r->index] : NULL;
}

/* "u32", or "array of u32" for an array. */
static const char *type_text(tp_gguf_vtype type, tp_gguf_vtype elem, char *buf, size_t size)
{
    if (type != TP_GGUF_ARRAY)
        return tp_gguf_vtype_name(type);
    if (elem == TP_GGUF_ARRAY)
        return "array";
    snprintf(buf, size, "array of %s", tp_gguf_vtype_name(elem));
    return buf;
}

/* The value of KEY when it has TYPE (and, for arrays, element type ELEM unless ELEM is
 * TP_GGUF_ARRAY). */
static tp_status get_kv(const tp_gguf *g, const char *key, tp_gguf_vtype type, tp_gguf_vtype elem,
                        const tp_gguf_kv **out)
{
    const tp_gguf_kv *kv = key ? tp_gguf_find_kv(g, key) : NULL;
    if (!kv)
        return tp_fail(TP_ERR_NOT_FOUND, "%s: no key '%s'", g->name, key ? key : "(null)");
    const int elem_ok = type != TP_GGUF_ARRAY || elem == TP_GGUF_ARRAY || kv->array.type == elem;
    if (kv->type != type || !elem_ok) {
        char want[32], got[32];
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected %s, got %s", g->name, key,
                       type_text(type, elem, want, sizeof want),
                       type_text(kv->type, kv->array.type, got, sizeof got));
    }
    *out = kv;
    return TP_OK;
}

#define TP_GGUF_GETTER(fn, T, vtype, conv)                                                    \
    tp_status fn(const tp_gguf *g, const char *key, T *out)                                   \
    {                                                                                         \
        const tp_gguf_kv *kv = NULL;                                                               \
        TP_TRY(get_kv(g, key, vtype, TP_GGUF_ARRAY, &kv));                                    \
        *out = conv;                                                                          \
        return TP_OK;                                                                         \
    }

TP_GGUF_GETTER(tp_gguf_get_u8, uint8_t, TP_GGUF_U8, (uint8_t)kv->bits)
TP_GGUF_GETTER(tp_gguf_get_i8, int8_t, TP_GGUF_I8, (int8_t)(uint8_t)kv->bits)
TP_GGUF_GETTER(tp_gguf_get_u16, uint16_t, TP_GGUF_U16, (uint16_t)kv->bits)
TP_GGUF_GETTER(tp_gguf_get_i16, int16_t, TP_GGUF_I16, (int16_t)(uint16_t)kv->bits)
TP_GGUF_GETTER(tp_gguf_get_u32, uint32_t, TP_GGUF_U32, (uint32_t)kv->bits)
TP_GGUF_GETTER(tp_gguf_get_i32, int32_t, TP_GGUF_I32, (int32_t)(uint32_t)kv->bits)
TP_GGUF_GETTER(tp_gguf_get_u64, uint64_t, TP_GGUF_U64, kv->bits)
TP_GGUF_GETTER(tp_gguf_get_i64, int64_t, TP_GGUF_I64, (int64_t)kv->bits)
TP_GGUF_GETTER(tp_gguf_get_f32, float, TP_GGUF_F32, tp_gguf_bits_f32(kv->bits))
TP_GGUF_GETTER(tp_gguf_get_f64, double, TP_GGUF_F64, tp_gguf_bits_f64(kv->bits))
TP_GGUF_GETTER(tp_gguf_get_bool, int, TP_GGUF_BOOL, kv->bits != 0)
TP_GGUF_GETTER(tp_gguf_get_string, tp_gguf_str, TP_GGUF_STRING, kv->string)

tp_status tp_gguf_get_array(const tp_gguf *g, const char *key, tp_gguf_vtype elem,
                            tp_gguf_array *out)
{
    const tp_gguf_kv *kv = NULL;
    TP_TRY(get_kv(g, key, TP_GGUF_ARRAY, elem, &kv));
    *out = kv->array;
    return TP_OK;
}

uint64_t tp_gguf_array_bits(const tp_gguf_array *a, size_t i)
{
    const size_t n = tp_gguf_vtype_bytes(a->type);
    if (i >= a->count || n == 0)
        return 0;
    return le_bits((const unsigned char *)a->data + i * n, n);
}

float tp_gguf_array_f32(const tp_gguf_array *a, size_t i)
{
    if (a->type != TP_GGUF_F32)
        return 0.0f;
    return tp_gguf_bits_f32(tp_gguf_array_bits(a, i));
}

tp_gguf_str tp_gguf_array_string(const tp_gguf_array *a, size_t i)
{
    if (!a->strings || i >= a->count)
        return (tp_gguf_str){ "", 0 };
    return a->strings[i];
}
