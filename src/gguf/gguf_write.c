/* The GGUF writer (docs/gguf.md, "The writer"): metadata records are encoded as they are added;
 * tensor infos, padding and data are laid out at write time, with the offsets the reader
 * requires (data section at PAD(end of infos), each tensor after the padded ones before it). */
#include "tensorplan/gguf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/output_file.h"
#include "common/grow.h"
#include "gguf/gguf_internal.h"

typedef struct wtensor {
    char name[TP_GGUF_MAX_NAME + 1];
    uint32_t type, n_dims;
    int64_t ne[TP_GGUF_MAX_DIMS];
    const void *data;
    size_t nbytes;
} wtensor;

typedef struct bytes {
    unsigned char *p;
    size_t len, cap;
} bytes;

struct tp_gguf_writer {
    uint32_t version;
    uint64_t alignment;
    bytes kv; /* the encoded key/value records */
    char **keys;
    size_t n_keys, keys_cap;
    wtensor *tensors;
    size_t n_tensors, tensors_cap;
};

static tp_status put(bytes *b, const void *p, size_t n)
{
    if (n > SIZE_MAX - b->len)
        return tp_fail(TP_ERR_OVERFLOW, "GGUF writer: metadata larger than memory");
    if (n == 0) /* an empty writer has no records: p may be NULL, which memcpy forbids */
        return TP_OK;
    TP_TRY(TP_GROW(&b->p, &b->cap, b->len + n));
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return TP_OK;
}

static tp_status put_le(bytes *b, uint64_t v, size_t n)
{
    unsigned char le[8];
    for (size_t i = 0; i < n; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    return put(b, le, n);
}

static tp_status put_str(bytes *b, const char *s, size_t len)
{
    TP_TRY(put_le(b, len, 8));
    return put(b, s, len);
}

/* The bits of a host value of n bytes, as the reader's tp_gguf_kv.bits. */
static uint64_t host_bits(const void *p, size_t n)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64 = 0;
    switch (n) {
    case 1: memcpy(&u8, p, 1); return u8;
    case 2: memcpy(&u16, p, 2); return u16;
    case 4: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

tp_status tp_gguf_writer_create(tp_gguf_writer **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_writer_create: NULL argument");
    *out = calloc(1, sizeof **out);
    if (!*out)
        return tp_fail(TP_ERR_NOMEM, "GGUF writer: out of memory");
    (*out)->version = 3;
    (*out)->alignment = TP_GGUF_DEFAULT_ALIGNMENT;
    return TP_OK;
}

void tp_gguf_writer_destroy(tp_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_keys; i++)
        free(w->keys[i]);
    free(w->keys);
    free(w->kv.p);
    free(w->tensors);
    free(w);
}

tp_status tp_gguf_writer_set_version(tp_gguf_writer *w, uint32_t version)
{
    if (version != 2 && version != 3)
        return tp_fail(TP_ERR_INVALID, "GGUF writer: expected version 2 or 3, got %u",
                       (unsigned)version);
    w->version = version;
    return TP_OK;
}

/* Starts a record: checks the key, remembers it, encodes it and the value type. The caller
 * encodes the value; end_record undoes all of it on failure. */
static tp_status begin_record(tp_gguf_writer *w, const char *key, tp_gguf_vtype type)
{
    if (!key || !key[0])
        return tp_fail(TP_ERR_INVALID, "GGUF writer: expected a non-empty key");
    for (size_t i = 0; i < w->n_keys; i++)
        if (strcmp(w->keys[i], key) == 0)
            return tp_fail(TP_ERR_INVALID, "GGUF writer: key '%s' is already set", key);
    TP_TRY(TP_GROW(&w->keys, &w->keys_cap, w->n_keys + 1));
    const size_t len = strlen(key);
    char *copy = malloc(len + 1);
    if (!copy)
        return tp_fail(TP_ERR_NOMEM, "GGUF writer: out of memory");
    memcpy(copy, key, len + 1);
    w->keys[w->n_keys++] = copy;
    TP_TRY(put_str(&w->kv, key, len));
    return put_le(&w->kv, type, 4);
}

static tp_status end_record(tp_gguf_writer *w, size_t start, size_t keys, tp_status st)
{
    if (st != TP_OK) {
        w->kv.len = start;
        while (w->n_keys > keys)
            free(w->keys[--w->n_keys]);
    }
    return st;
}

static tp_status add_scalar(tp_gguf_writer *w, const char *key, tp_gguf_vtype type, uint64_t bits)
{
    const int alignment = key && strcmp(key, "general.alignment") == 0;
    if (alignment && (type != TP_GGUF_U32 || bits == 0 || (bits & (bits - 1)) != 0))
        return tp_fail(TP_ERR_INVALID, "GGUF writer: general.alignment must be a u32 "
                       "non-zero power of two");
    const size_t start = w->kv.len, keys = w->n_keys;
    tp_status st = begin_record(w, key, type);
    if (st == TP_OK)
        st = put_le(&w->kv, bits, tp_gguf_vtype_bytes(type));
    if (st == TP_OK && alignment)
        w->alignment = bits;
    return end_record(w, start, keys, st);
}

#define TP_GGUF_ADDER(fn, T, vtype)                                                           \
    tp_status fn(tp_gguf_writer *w, const char *key, T v)                                     \
    {                                                                                         \
        return add_scalar(w, key, vtype, host_bits(&v, sizeof v));                            \
    }

TP_GGUF_ADDER(tp_gguf_writer_add_u8, uint8_t, TP_GGUF_U8)
TP_GGUF_ADDER(tp_gguf_writer_add_i8, int8_t, TP_GGUF_I8)
TP_GGUF_ADDER(tp_gguf_writer_add_u16, uint16_t, TP_GGUF_U16)
TP_GGUF_ADDER(tp_gguf_writer_add_i16, int16_t, TP_GGUF_I16)
TP_GGUF_ADDER(tp_gguf_writer_add_u32, uint32_t, TP_GGUF_U32)
TP_GGUF_ADDER(tp_gguf_writer_add_i32, int32_t, TP_GGUF_I32)
TP_GGUF_ADDER(tp_gguf_writer_add_u64, uint64_t, TP_GGUF_U64)
TP_GGUF_ADDER(tp_gguf_writer_add_i64, int64_t, TP_GGUF_I64)
TP_GGUF_ADDER(tp_gguf_writer_add_f32, float, TP_GGUF_F32)
TP_GGUF_ADDER(tp_gguf_writer_add_f64, double, TP_GGUF_F64)

tp_status tp_gguf_writer_add_bool(tp_gguf_writer *w, const char *key, int v)
{
    return add_scalar(w, key, TP_GGUF_BOOL, v != 0);
}

tp_status tp_gguf_writer_add_string(tp_gguf_writer *w, const char *key, const char *v)
{
    if (!v)
        return tp_fail(TP_ERR_INVALID, "GGUF writer: NULL string for key '%s'", key ? key : "");
    const size_t start = w->kv.len, keys = w->n_keys;
    tp_status st = begin_record(w, key, TP_GGUF_STRING);
    if (st == TP_OK)
        st = put_str(&w->kv, v, strlen(v));
    return end_record(w, start, keys, st);
}

/* The element type and count of an array record, then its elements (numbers from data or
 * strings from strings). */
static tp_status add_array(tp_gguf_writer *w, const char *key, tp_gguf_vtype elem,
                           const void *data, const char *const *strings, size_t count)
{
    if (elem == TP_GGUF_ARRAY || elem >= TP_GGUF_VTYPE_COUNT || count > TP_GGUF_MAX_STRING ||
        (count > 0 && !data && !strings))
        return tp_fail(TP_ERR_INVALID, "GGUF writer: key '%s': expected an array of at most "
                       "2^30 numbers, bools or strings", key ? key : "");
    const size_t start = w->kv.len, keys = w->n_keys, n = tp_gguf_vtype_bytes(elem);
    tp_status st = begin_record(w, key, TP_GGUF_ARRAY);
    if (st == TP_OK)
        st = put_le(&w->kv, elem, 4);
    if (st == TP_OK)
        st = put_le(&w->kv, count, 8);
    for (size_t i = 0; st == TP_OK && i < count; i++) {
        if (strings)
            st = strings[i] ? put_str(&w->kv, strings[i], strlen(strings[i]))
                            : tp_fail(TP_ERR_INVALID, "GGUF writer: NULL string in '%s'", key);
        else
            st = put_le(&w->kv, host_bits((const unsigned char *)data + i * n, n), n);
    }
    return end_record(w, start, keys, st);
}

tp_status tp_gguf_writer_add_array(tp_gguf_writer *w, const char *key, tp_gguf_vtype elem,
                                   const void *data, size_t count)
{
    if (elem == TP_GGUF_STRING)
        return tp_fail(TP_ERR_INVALID, "GGUF writer: key '%s': strings go through "
                       "tp_gguf_writer_add_strings", key ? key : "");
    return add_array(w, key, elem, data, NULL, count);
}

tp_status tp_gguf_writer_add_strings(tp_gguf_writer *w, const char *key,
                                     const char *const *strings, size_t count)
{
    return add_array(w, key, TP_GGUF_STRING, NULL, count ? strings : NULL, count);
}

tp_status tp_gguf_writer_add_tensor(tp_gguf_writer *w, const char *name, uint32_t type,
                                    uint32_t n_dims, const int64_t *ne, const void *data,
                                    size_t nbytes)
{
    if (!name || strlen(name) > TP_GGUF_MAX_NAME)
        return tp_fail(TP_ERR_INVALID, "GGUF writer: expected a tensor name of at most 63 bytes");
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return tp_fail(TP_ERR_INVALID, "GGUF writer: tensor '%s' is already added", name);
    size_t want = 0;
    if (n_dims > 0 && !ne)
        return tp_fail(TP_ERR_INVALID, "GGUF writer: tensor '%s': NULL shape", name);
    TP_TRY(tp_gguf_tensor_nbytes(type, n_dims, ne, &want));
    if (want != nbytes || (nbytes > 0 && !data))
        return tp_fail(TP_ERR_INVALID, "GGUF writer: tensor '%s': expected %zu bytes of data, "
                       "got %zu", name, want, data ? nbytes : 0);
    TP_TRY(TP_GROW(&w->tensors, &w->tensors_cap, w->n_tensors + 1));
    wtensor *t = &w->tensors[w->n_tensors++];
    memset(t, 0, sizeof *t);
    strcpy(t->name, name);
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < n_dims; d++)
        t->ne[d] = ne[d];
    t->data = data;
    t->nbytes = nbytes;
    return TP_OK;
}

/* Header, metadata and tensor infos, each tensor at the running sum of padded sizes. */
static tp_status encode_head(const tp_gguf_writer *w, bytes *h)
{
    TP_TRY(put(h, "GGUF", 4));
    TP_TRY(put_le(h, w->version, 4));
    TP_TRY(put_le(h, w->n_tensors, 8));
    TP_TRY(put_le(h, w->n_keys, 8));
    TP_TRY(put(h, w->kv.p, w->kv.len));
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        TP_TRY(put_str(h, t->name, strlen(t->name)));
        TP_TRY(put_le(h, t->n_dims, 4));
        for (uint32_t d = 0; d < t->n_dims; d++)
            TP_TRY(put_le(h, (uint64_t)t->ne[d], 8));
        TP_TRY(put_le(h, t->type, 4));
        TP_TRY(put_le(h, offset, 8));
        uint64_t padded;
        if (!tp_gguf_pad(t->nbytes, w->alignment, &padded) || padded > UINT64_MAX - offset)
            return tp_fail(TP_ERR_OVERFLOW, "GGUF writer: tensor data larger than 2^64 bytes");
        offset += padded;
    }
    return TP_OK;
}

static int write_zeros(FILE *f, size_t n)
{
    static const unsigned char zeros[256];
    while (n > 0) {
        const size_t k = n < sizeof zeros ? n : sizeof zeros;
        if (fwrite(zeros, 1, k, f) != k)
            return -1;
        n -= k;
    }
    return 0;
}

static tp_status emit(const tp_gguf_writer *w, FILE *f, const char *what)
{
    bytes h = { 0 };
    tp_status st = encode_head(w, &h);
    if (st == TP_OK && fwrite(h.p, 1, h.len, f) != h.len)
        st = TP_ERR_IO;
    uint64_t pos = h.len, padded = 0;
    free(h.p);
    if (st == TP_OK && w->n_tensors > 0 && tp_gguf_pad(pos, w->alignment, &padded) &&
        write_zeros(f, (size_t)(padded - pos)) != 0)
        st = TP_ERR_IO;
    for (size_t i = 0; st == TP_OK && i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        tp_gguf_pad(t->nbytes, w->alignment, &padded); /* checked in encode_head */
        if ((t->nbytes > 0 && fwrite(t->data, 1, t->nbytes, f) != t->nbytes) ||
            write_zeros(f, (size_t)(padded - t->nbytes)) != 0)
            st = TP_ERR_IO;
    }
    if (st == TP_ERR_IO)
        return tp_fail(TP_ERR_IO, "%s: cannot write: %s", what, strerror(errno));
    return st;
}

tp_status tp_gguf_writer_to_memory(const tp_gguf_writer *w, void **out, size_t *size)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return tp_fail(TP_ERR_NOMEM, "GGUF writer: out of memory");
    tp_status st = emit(w, f, "GGUF writer");
    if (fclose(f) != 0 && st == TP_OK)
        st = tp_fail(TP_ERR_NOMEM, "GGUF writer: out of memory");
    if (st != TP_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *size = len;
    return TP_OK;
}

typedef struct gguf_out {
    const tp_gguf_writer *w;
    const char *path;
} gguf_out;

static tp_status write_gguf(FILE *f, void *ctx)
{
    const gguf_out *o = ctx;
    return emit(o->w, f, o->path);
}

tp_status tp_gguf_writer_write(const tp_gguf_writer *w, const char *path)
{
    if (!w || !path)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_writer_write: NULL argument");
    gguf_out o = {w, path};
    return tp_output_file(path, write_gguf, &o);
}
