/* Fuzzing harness: the GGUF reader (tp_gguf_open_memory) on any bytes, then what is built on
 * it. A refusal must leave a message. An accepted file is walked through every accessor and
 * each value is compared with the bytes of the file read here by the layout of docs/gguf.md
 * (key/value records, tensor infos, data at PAD(end of infos), each tensor after the padded
 * ones before it, inside the file); every typed getter must give the value of the right type
 * and refuse the others; a file without NUL bytes in its names and strings is written again by
 * tp_gguf_writer_to_memory and read back with the same keys, values and tensors. The model
 * glue of gguf_model.h (config, weight views, weight bytes, tokenizer) runs on every accepted
 * file and must accept or refuse with a message. */
#include <math.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "tensorplan/gguf.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/quant.h"
#include "tensorplan/status.h"
#include "tensorplan/tokenizer.h"
#include "tensorplan/weights.h"

/* Bytes of one packed element of a value type (docs/gguf.md "Layout"); 0 for string and array. */
static size_t gguf_elem_bytes(uint32_t type)
{
    static const size_t bytes[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    return type < 13 ? bytes[type] : 0;
}

static uint64_t gguf_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* A cursor over the file: the harness's own reading of the layout. */
typedef struct gguf_cur {
    const uint8_t *base;
    size_t size, pos;
} gguf_cur;

static uint64_t gguf_take(gguf_cur *c, size_t n)
{
    TPF_CHECK(n <= c->size && c->pos <= c->size - n, "accepted file: a field at %zu of %zu "
              "bytes runs past the end (%zu)", c->pos, n, c->size);
    const uint64_t v = gguf_le(c->base + c->pos, n);
    c->pos += n;
    return v;
}

/* A string at the cursor must be the view s (same length, pointing into the file there). */
static void gguf_expect_str(gguf_cur *c, tp_gguf_str s, const char *what)
{
    const uint64_t n = gguf_take(c, 8);
    TPF_CHECK(n == s.len, "%s: length %zu, the file says %llu", what, s.len,
              (unsigned long long)n);
    TPF_CHECK(n <= c->size - c->pos, "%s: runs past the end", what);
    TPF_CHECK(s.data == (const char *)c->base + c->pos, "%s: not a view of the file", what);
    c->pos += (size_t)n;
}

static int gguf_has_nul(const char *s, size_t n)
{
    return n > 0 && memchr(s, '\0', n) != NULL;
}

static void gguf_check_array(gguf_cur *c, const tp_gguf_kv *kv)
{
    const tp_gguf_array *a = &kv->array;
    TPF_CHECK(gguf_take(c, 4) == (uint64_t)a->type, "key '%s': element type differs", kv->key);
    TPF_CHECK(a->type < TP_GGUF_VTYPE_COUNT && a->type != TP_GGUF_ARRAY,
              "key '%s': element type %d accepted", kv->key, (int)a->type);
    TPF_CHECK(gguf_take(c, 8) == a->count, "key '%s': count differs", kv->key);
    TPF_CHECK(a->count <= TP_GGUF_MAX_STRING, "key '%s': %zu elements", kv->key, a->count);
    TPF_CHECK(a->data == c->base + c->pos, "key '%s': data not at the elements", kv->key);
    if (a->type == TP_GGUF_STRING) {
        TPF_CHECK(a->strings != NULL || a->count == 0, "key '%s': no string views", kv->key);
        for (size_t i = 0; i < a->count; i++) {
            const tp_gguf_str s = tp_gguf_array_string(a, i);
            TPF_CHECK(s.data == a->strings[i].data && s.len == a->strings[i].len,
                      "key '%s': string %zu differs from its view", kv->key, i);
            gguf_expect_str(c, s, "an array string");
        }
        TPF_CHECK(tp_gguf_array_bits(a, 0) == 0, "key '%s': bits of a string", kv->key);
        return;
    }
    TPF_CHECK(a->strings == NULL, "key '%s': string views for numbers", kv->key);
    const size_t n = gguf_elem_bytes(a->type);
    TPF_CHECK(a->count <= (c->size - c->pos) / n, "key '%s': elements past the end", kv->key);
    for (size_t i = 0; i < a->count; i++)
        TPF_CHECK(tp_gguf_array_bits(a, i) == gguf_le(c->base + c->pos + i * n, n),
                  "key '%s': element %zu differs from the file", kv->key, i);
    TPF_CHECK(tp_gguf_array_bits(a, a->count) == 0, "key '%s': bits past the end", kv->key);
    const tp_gguf_str none = tp_gguf_array_string(a, 0);
    TPF_CHECK(none.len == 0, "key '%s': a string of a number array", kv->key);
    c->pos += a->count * n;
}

/* tp_gguf_bits_to_double restated for one scalar type (docs/gguf.md). */
static double gguf_as_double(tp_gguf_vtype t, uint64_t b)
{
    float f;
    double d;
    const uint32_t u = (uint32_t)b;
    switch (t) {
    case TP_GGUF_I8: return (double)(int8_t)(uint8_t)b;
    case TP_GGUF_I16: return (double)(int16_t)(uint16_t)b;
    case TP_GGUF_I32: return (double)(int32_t)u;
    case TP_GGUF_I64: return (double)(int64_t)b;
    case TP_GGUF_BOOL: return b != 0;
    case TP_GGUF_F32: memcpy(&f, &u, 4); return f;
    case TP_GGUF_F64: memcpy(&d, &b, 8); return d;
    case TP_GGUF_STRING: case TP_GGUF_ARRAY: case TP_GGUF_VTYPE_COUNT: return 0;
    default: return (double)b;
    }
}

/* Every typed getter on KEY: the one of its type gives the value, the others refuse with a
 * message and leave *out alone. */
static void gguf_check_getters(const tp_gguf *g, const tp_gguf_kv *kv)
{
    const char *k = kv->key;
    union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
            uint64_t u64; int64_t i64; float f32; double f64; int b; tp_gguf_str s;
            tp_gguf_array a; } v[13];
    memset(v, 0xA5, sizeof v);
    tp_status st[13];
    st[0] = tp_gguf_get_u8(g, k, &v[0].u8);
    st[1] = tp_gguf_get_i8(g, k, &v[1].i8);
    st[2] = tp_gguf_get_u16(g, k, &v[2].u16);
    st[3] = tp_gguf_get_i16(g, k, &v[3].i16);
    st[4] = tp_gguf_get_u32(g, k, &v[4].u32);
    st[5] = tp_gguf_get_i32(g, k, &v[5].i32);
    st[6] = tp_gguf_get_f32(g, k, &v[6].f32);
    st[7] = tp_gguf_get_bool(g, k, &v[7].b);
    st[8] = tp_gguf_get_string(g, k, &v[8].s);
    st[9] = tp_gguf_get_array(g, k, TP_GGUF_ARRAY, &v[9].a);
    st[10] = tp_gguf_get_u64(g, k, &v[10].u64);
    st[11] = tp_gguf_get_i64(g, k, &v[11].i64);
    st[12] = tp_gguf_get_f64(g, k, &v[12].f64);
    for (int t = 0; t < 13; t++) {
        if (t != (int)kv->type) {
            TPF_CHECK(st[t] == TP_ERR_INVALID && tp_last_error()[0] != '\0',
                      "key '%s' of type %d: getter %d gave status %d", k, (int)kv->type, t,
                      (int)st[t]);
            unsigned char junk[sizeof v[0]];
            memset(junk, 0xA5, sizeof junk);
            TPF_CHECK(memcmp(&v[t], junk, sizeof junk) == 0, "key '%s': refusing getter %d "
                      "wrote its output", k, t);
            continue;
        }
        TPF_CHECK(st[t] == TP_OK, "key '%s': its own getter refused it", k);
    }
    const uint64_t b = kv->bits;
    float f;
    double d;
    const uint32_t u = (uint32_t)b;
    memcpy(&f, &u, 4);
    memcpy(&d, &b, 8);
    int same = 1;
    switch (kv->type) {
    case TP_GGUF_U8: same = v[0].u8 == (uint8_t)b; break;
    case TP_GGUF_I8: same = v[1].i8 == (int8_t)(uint8_t)b; break;
    case TP_GGUF_U16: same = v[2].u16 == (uint16_t)b && b <= 0xFFFF; break;
    case TP_GGUF_I16: same = v[3].i16 == (int16_t)(uint16_t)b; break;
    case TP_GGUF_U32: same = v[4].u32 == u && b <= 0xFFFFFFFFu; break;
    case TP_GGUF_I32: same = v[5].i32 == (int32_t)u; break;
    case TP_GGUF_F32: same = memcmp(&v[6].f32, &f, 4) == 0; break;
    case TP_GGUF_BOOL: same = v[7].b == (b != 0) && b <= 0xFF; break;
    case TP_GGUF_STRING: same = v[8].s.data == kv->string.data && v[8].s.len == kv->string.len;
        break;
    case TP_GGUF_ARRAY: same = v[9].a.data == kv->array.data && v[9].a.count == kv->array.count;
        break;
    case TP_GGUF_U64: same = v[10].u64 == b; break;
    case TP_GGUF_I64: same = v[11].i64 == (int64_t)b; break;
    case TP_GGUF_F64: same = memcmp(&v[12].f64, &d, 8) == 0; break;
    default: break;
    }
    TPF_CHECK(same, "key '%s': the getter's value is not the file's", k);
    if (kv->type == TP_GGUF_ARRAY) {
        tp_gguf_array a;
        TPF_CHECK(tp_gguf_get_array(g, k, kv->array.type, &a) == TP_OK,
                  "key '%s': refused as an array of its own element type", k);
        const tp_gguf_vtype other = kv->array.type == TP_GGUF_U8 ? TP_GGUF_I8 : TP_GGUF_U8;
        TPF_CHECK(tp_gguf_get_array(g, k, other, &a) == TP_ERR_INVALID,
                  "key '%s': accepted as an array of another element type", k);
    }
    const double want = gguf_as_double(kv->type, b), got = tp_gguf_bits_to_double(kv->type, b);
    TPF_CHECK(memcmp(&want, &got, sizeof got) == 0 || (isnan(want) && isnan(got)),
              "key '%s': bits_to_double %g, restated %g", k, got, want);
}

/* The key/value records from offset 24; returns where the tensor infos start. */
static size_t gguf_check_kvs(const tp_gguf *g, gguf_cur *c)
{
    const size_t n = tp_gguf_kv_count(g);
    for (size_t i = 0; i < n; i++) {
        const tp_gguf_kv *kv = tp_gguf_kv_at(g, i);
        TPF_CHECK(kv != NULL && tp_gguf_key(g, i) == kv->key && tp_gguf_kv_type(g, i) == kv->type,
                  "key %zu: accessors disagree", i);
        TPF_CHECK(kv->offset == c->pos, "key %zu at %zu, the records say %zu", i, kv->offset,
                  c->pos);
        TPF_CHECK(kv->key_len > 0, "key %zu: empty key accepted", i);
        gguf_expect_str(c, (tp_gguf_str){ (const char *)c->base + c->pos + 8, kv->key_len },
                        "a key");
        TPF_CHECK(memcmp(kv->key, c->base + c->pos - kv->key_len, kv->key_len) == 0 &&
                      kv->key[kv->key_len] == '\0', "key %zu: copy differs from the file", i);
        TPF_CHECK(gguf_take(c, 4) == (uint64_t)kv->type, "key '%s': type differs", kv->key);
        TPF_CHECK(kv->type < TP_GGUF_VTYPE_COUNT, "key '%s': type %d", kv->key, (int)kv->type);
        if (kv->type == TP_GGUF_STRING)
            gguf_expect_str(c, kv->string, "a string value");
        else if (kv->type == TP_GGUF_ARRAY)
            gguf_check_array(c, kv);
        else
            TPF_CHECK(gguf_take(c, gguf_elem_bytes(kv->type)) == kv->bits,
                      "key '%s': bits differ from the file", kv->key);
        if (strlen(kv->key) == kv->key_len) {
            TPF_CHECK(tp_gguf_find_kv(g, kv->key) == kv, "key '%s': not found by name", kv->key);
            gguf_check_getters(g, kv);
        }
        for (size_t j = 0; j < i && n <= 512; j++) {
            const tp_gguf_kv *o = tp_gguf_kv_at(g, j);
            TPF_CHECK(o->key_len != kv->key_len || memcmp(o->key, kv->key, kv->key_len) != 0,
                      "keys %zu and %zu are the same", j, i);
        }
    }
    TPF_CHECK(tp_gguf_kv_at(g, n) == NULL && tp_gguf_key(g, n) == NULL &&
                  tp_gguf_kv_type(g, n) == TP_GGUF_VTYPE_COUNT, "an index past the keys answers");
    uint32_t u;
    TPF_CHECK(tp_gguf_get_u32(g, "", &u) == TP_ERR_NOT_FOUND, "an empty key was found");
    const tp_gguf_kv *al = tp_gguf_find_kv(g, "general.alignment");
    const size_t want = al != NULL ? (size_t)al->bits : TP_GGUF_DEFAULT_ALIGNMENT;
    TPF_CHECK(al == NULL || al->type == TP_GGUF_U32, "general.alignment of type %d",
              (int)al->type);
    TPF_CHECK(tp_gguf_alignment(g) == want && want != 0 && (want & (want - 1)) == 0,
              "alignment %zu, the file says %zu", tp_gguf_alignment(g), want);
    return c->pos;
}

/* Bytes of a tensor restated from docs/gguf.md, ne[0] / block elems x block bytes x ne[1] x
 * ne[2] x ne[3]; *fits = 0 when the element count or the bytes pass INT64_MAX. A shape with
 * a zero holds nothing (*zero = 1). */
static uint64_t gguf_nbytes(uint32_t type, const int64_t *ne, int *fits, int *zero)
{
    const uint64_t be = tp_gguf_type_block_elems(type), bb = tp_gguf_type_block_bytes(type);
    const uint64_t lim = (uint64_t)INT64_MAX;
    *fits = 1;
    *zero = ne[0] == 0 || ne[1] == 0 || ne[2] == 0 || ne[3] == 0;
    if (*zero || be == 0)
        return 0;
    uint64_t elems = 1, bytes = (uint64_t)ne[0] / be;
    for (int d = 0; d < 4; d++) {
        if (elems > lim / (uint64_t)ne[d])
            *fits = 0;
        elems = *fits ? elems * (uint64_t)ne[d] : 0;
    }
    if (*fits && bytes > lim / bb)
        *fits = 0;
    bytes = *fits ? bytes * bb : 0;
    for (int d = 1; d < 4 && *fits; d++) {
        if (bytes > lim / (uint64_t)ne[d])
            *fits = 0;
        bytes = *fits ? bytes * (uint64_t)ne[d] : 0;
    }
    return *fits ? bytes : 0;
}

static uint64_t gguf_pad(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

static void gguf_check_tensor(const tp_gguf *g, gguf_cur *c, const tp_gguf_tensor *t,
                              uint64_t expect)
{
    TPF_CHECK(t->info_offset == c->pos, "tensor '%s': info at %zu, expected %zu", t->name,
              t->info_offset, c->pos);
    TPF_CHECK(t->name_len <= TP_GGUF_MAX_NAME && t->name[t->name_len] == '\0',
              "tensor %s: name of %zu bytes", t->name, t->name_len);
    gguf_expect_str(c, (tp_gguf_str){ (const char *)c->base + c->pos + 8, t->name_len },
                    "a tensor name");
    TPF_CHECK(memcmp(t->name, c->base + c->pos - t->name_len, t->name_len) == 0,
              "tensor '%s': name differs from the file", t->name);
    TPF_CHECK(gguf_take(c, 4) == t->n_dims && t->n_dims <= TP_GGUF_MAX_DIMS,
              "tensor '%s': n_dims %u", t->name, (unsigned)t->n_dims);
    for (uint32_t d = 0; d < TP_GGUF_MAX_DIMS; d++) {
        const int64_t e = d < t->n_dims ? (int64_t)gguf_take(c, 8) : 1;
        TPF_CHECK(t->ne[d] == e && e >= 0, "tensor '%s': ne[%u] = %lld", t->name, d,
                  (long long)t->ne[d]);
    }
    TPF_CHECK(gguf_take(c, 4) == t->type, "tensor '%s': type differs", t->name);
    TPF_CHECK(gguf_take(c, 8) == t->offset, "tensor '%s': offset differs", t->name);
    TPF_CHECK(tp_gguf_type_name(t->type) != NULL && tp_gguf_type_block_elems(t->type) > 0,
              "tensor '%s': type %u accepted", t->name, (unsigned)t->type);
    TPF_CHECK(t->ne[0] % (int64_t)tp_gguf_type_block_elems(t->type) == 0,
              "tensor '%s': ne[0] not a multiple of the block", t->name);
    int ok, zero;
    const uint64_t bytes = gguf_nbytes(t->type, t->ne, &ok, &zero);
    size_t nb = 0;
    TPF_CHECK(ok && bytes == t->nbytes, "tensor '%s': %zu bytes, restated %llu", t->name,
              t->nbytes, (unsigned long long)bytes);
    TPF_CHECK(tp_gguf_tensor_nbytes(t->type, t->n_dims, t->ne, &nb) == TP_OK && nb == t->nbytes,
              "tensor '%s': tp_gguf_tensor_nbytes disagrees", t->name);
    TPF_CHECK(t->offset == expect, "tensor '%s' at %llu, expected %llu", t->name,
              (unsigned long long)t->offset, (unsigned long long)expect);
    const size_t data = tp_gguf_data_offset(g);
    TPF_CHECK(data <= c->size && t->offset <= c->size - data &&
                  t->nbytes <= c->size - data - t->offset, "tensor '%s': data past the end",
              t->name);
    TPF_CHECK((const uint8_t *)t->data == c->base + data + t->offset,
              "tensor '%s': data pointer not at its offset", t->name);
    if (strlen(t->name) == t->name_len)
        TPF_CHECK(tp_gguf_find_tensor(g, t->name) == t, "tensor '%s': not found", t->name);
}

static void gguf_check_tensors(const tp_gguf *g, gguf_cur *c)
{
    const size_t n = tp_gguf_tensor_count(g), align = tp_gguf_alignment(g);
    uint64_t expect = 0;
    for (size_t i = 0; i < n; i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        TPF_CHECK(t != NULL, "tensor %zu missing", i);
        gguf_check_tensor(g, c, t, expect);
        expect += gguf_pad(t->nbytes, align);
        for (size_t j = 0; j < i && n <= 512; j++) {
            const tp_gguf_tensor *o = tp_gguf_tensor_at(g, j);
            TPF_CHECK(o->name_len != t->name_len || memcmp(o->name, t->name, t->name_len) != 0,
                      "tensors %zu and %zu have one name", j, i);
        }
    }
    TPF_CHECK(tp_gguf_tensor_at(g, n) == NULL, "an index past the tensors answers");
    const size_t want = n > 0 ? (size_t)gguf_pad(c->pos, align) : c->pos;
    TPF_CHECK(tp_gguf_data_offset(g) == want, "data section at %zu, expected %zu",
              tp_gguf_data_offset(g), want);
}

/* --- the round trip through the writer ------------------------------------------------- */

static char *gguf_cstr(tp_gguf_str s)
{
    char *d = malloc(s.len + 1);
    if (d != NULL) {
        memcpy(d, s.data, s.len);
        d[s.len] = '\0';
    }
    return d;
}

/* 1 when no key, string or tensor name holds a NUL byte (the writer takes C strings). */
static int gguf_writable(const tp_gguf *g)
{
    for (size_t i = 0; i < tp_gguf_kv_count(g); i++) {
        const tp_gguf_kv *kv = tp_gguf_kv_at(g, i);
        if (gguf_has_nul(kv->key, kv->key_len) ||
            (kv->type == TP_GGUF_STRING && gguf_has_nul(kv->string.data, kv->string.len)))
            return 0;
        for (size_t j = 0; kv->type == TP_GGUF_ARRAY && kv->array.strings != NULL &&
                           j < kv->array.count; j++)
            if (gguf_has_nul(kv->array.strings[j].data, kv->array.strings[j].len))
                return 0;
    }
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (gguf_has_nul(t->name, t->name_len))
            return 0;
    }
    return 1;
}

static tp_status gguf_add_array(tp_gguf_writer *w, const tp_gguf_kv *kv)
{
    const tp_gguf_array *a = &kv->array;
    const size_t n = a->count ? a->count : 1;
    tp_status st = TP_ERR_NOMEM;
    if (a->type == TP_GGUF_STRING) {
        char **s = calloc(n, sizeof *s);
        size_t made = 0;
        for (; s != NULL && made < a->count; made++)
            if ((s[made] = gguf_cstr(a->strings[made])) == NULL)
                break;
        if (s != NULL && made == a->count)
            st = tp_gguf_writer_add_strings(w, kv->key, (const char *const *)s, a->count);
        for (size_t i = 0; s != NULL && i < made; i++)
            free(s[i]);
        free(s);
        return st;
    }
    const size_t eb = gguf_elem_bytes(a->type);
    uint8_t *host = malloc(n * eb);
    if (host == NULL)
        return st;
    for (size_t i = 0; i < a->count; i++) { /* host order, as the writer takes it */
        const uint64_t b = tp_gguf_array_bits(a, i);
        const uint8_t b8 = (uint8_t)b;
        const uint16_t b16 = (uint16_t)b;
        const uint32_t b32 = (uint32_t)b;
        memcpy(host + i * eb, eb == 1 ? (const void *)&b8 : eb == 2 ? (const void *)&b16
                               : eb == 4 ? (const void *)&b32 : (const void *)&b, eb);
    }
    st = tp_gguf_writer_add_array(w, kv->key, a->type, host, a->count);
    free(host);
    return st;
}

static tp_status gguf_add_kv(tp_gguf_writer *w, const tp_gguf_kv *kv)
{
    const uint64_t b = kv->bits;
    float f;
    double d;
    const uint32_t u = (uint32_t)b;
    memcpy(&f, &u, 4);
    memcpy(&d, &b, 8);
    switch (kv->type) {
    case TP_GGUF_U8: return tp_gguf_writer_add_u8(w, kv->key, (uint8_t)b);
    case TP_GGUF_I8: return tp_gguf_writer_add_i8(w, kv->key, (int8_t)(uint8_t)b);
    case TP_GGUF_U16: return tp_gguf_writer_add_u16(w, kv->key, (uint16_t)b);
    case TP_GGUF_I16: return tp_gguf_writer_add_i16(w, kv->key, (int16_t)(uint16_t)b);
    case TP_GGUF_U32: return tp_gguf_writer_add_u32(w, kv->key, u);
    case TP_GGUF_I32: return tp_gguf_writer_add_i32(w, kv->key, (int32_t)u);
    case TP_GGUF_F32: return tp_gguf_writer_add_f32(w, kv->key, f);
    case TP_GGUF_BOOL: return tp_gguf_writer_add_bool(w, kv->key, b != 0);
    case TP_GGUF_U64: return tp_gguf_writer_add_u64(w, kv->key, b);
    case TP_GGUF_I64: return tp_gguf_writer_add_i64(w, kv->key, (int64_t)b);
    case TP_GGUF_F64: return tp_gguf_writer_add_f64(w, kv->key, d);
    case TP_GGUF_ARRAY: return gguf_add_array(w, kv);
    default: {
        char *s = gguf_cstr(kv->string);
        const tp_status st = s != NULL ? tp_gguf_writer_add_string(w, kv->key, s)
                                       : TP_ERR_NOMEM;
        free(s);
        return st;
    }
    }
}

static int gguf_same_kv(const tp_gguf_kv *a, const tp_gguf_kv *b)
{
    if (strcmp(a->key, b->key) != 0 || a->type != b->type)
        return 0;
    if (a->type == TP_GGUF_BOOL)
        return (a->bits != 0) == (b->bits != 0);
    if (a->type == TP_GGUF_STRING)
        return a->string.len == b->string.len &&
               memcmp(a->string.data, b->string.data, a->string.len) == 0;
    if (a->type != TP_GGUF_ARRAY)
        return a->bits == b->bits;
    const tp_gguf_array *x = &a->array, *y = &b->array;
    if (x->type != y->type || x->count != y->count)
        return 0;
    for (size_t i = 0; i < x->count; i++) {
        const tp_gguf_str s = tp_gguf_array_string(x, i), t = tp_gguf_array_string(y, i);
        const uint64_t p = tp_gguf_array_bits(x, i), q = tp_gguf_array_bits(y, i);
        if (s.len != t.len || memcmp(s.data, t.data, s.len) != 0 ||
            (x->type == TP_GGUF_BOOL ? (p != 0) != (q != 0) : p != q))
            return 0;
    }
    return 1;
}

static void gguf_compare(const tp_gguf *g, const tp_gguf *h)
{
    TPF_CHECK(tp_gguf_version(h) == tp_gguf_version(g) &&
                  tp_gguf_alignment(h) == tp_gguf_alignment(g) &&
                  tp_gguf_data_offset(h) == tp_gguf_data_offset(g),
              "written again: version, alignment or data offset changed");
    TPF_CHECK(tp_gguf_kv_count(h) == tp_gguf_kv_count(g), "written again: %zu keys, had %zu",
              tp_gguf_kv_count(h), tp_gguf_kv_count(g));
    for (size_t i = 0; i < tp_gguf_kv_count(g); i++)
        TPF_CHECK(gguf_same_kv(tp_gguf_kv_at(g, i), tp_gguf_kv_at(h, i)),
                  "written again: key %zu '%s' changed", i, tp_gguf_key(g, i));
    TPF_CHECK(tp_gguf_tensor_count(h) == tp_gguf_tensor_count(g), "written again: tensors");
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *a = tp_gguf_tensor_at(g, i), *b = tp_gguf_tensor_at(h, i);
        TPF_CHECK(strcmp(a->name, b->name) == 0 && a->type == b->type &&
                      a->n_dims == b->n_dims && memcmp(a->ne, b->ne, sizeof a->ne) == 0 &&
                      a->offset == b->offset && a->nbytes == b->nbytes &&
                      (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0),
                  "written again: tensor '%s' changed", a->name);
    }
}

static void gguf_round_trip(const tp_gguf *g)
{
    if (!gguf_writable(g))
        return;
    tp_gguf_writer *w = NULL;
    if (tp_gguf_writer_create(&w) != TP_OK)
        return;
    tp_status st = tp_gguf_writer_set_version(w, tp_gguf_version(g));
    for (size_t i = 0; st == TP_OK && i < tp_gguf_kv_count(g); i++)
        st = gguf_add_kv(w, tp_gguf_kv_at(g, i));
    for (size_t i = 0; st == TP_OK && i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        st = tp_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data,
                                       t->nbytes);
    }
    void *bytes = NULL;
    size_t size = 0;
    if (st == TP_OK)
        st = tp_gguf_writer_to_memory(w, &bytes, &size);
    tp_gguf_writer_destroy(w);
    if (st == TP_ERR_NOMEM)
        return;
    TPF_CHECK(st == TP_OK, "the writer refuses what the reader accepted: %s", tp_last_error());
    tp_gguf *h = NULL;
    st = tp_gguf_open_memory("written.gguf", bytes, size, &h);
    TPF_CHECK(st == TP_OK || st == TP_ERR_NOMEM, "a written file is refused: %s",
              tp_last_error());
    if (h != NULL)
        gguf_compare(g, h);
    tp_gguf_close(h);
    free(bytes);
}

/* --- the model glue --------------------------------------------------------------------- */

static void gguf_check_refusal(tp_status st, const char *what)
{
    TPF_CHECK(st != TP_OK, "%s", what);
    TPF_CHECK(tp_last_error()[0] != '\0', "%s refused (status %d) without a message", what,
              (int)st);
}

static void gguf_check_model(const tp_gguf *g)
{
    size_t by_type[TP_TYPE_ID_LIMIT], total = 0, want[TP_TYPE_ID_LIMIT] = { 0 }, sum = 0;
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (t->type < TP_TYPE_ID_LIMIT)
            want[t->type] += t->nbytes;
        sum += t->nbytes;
    }
    TPF_CHECK(tp_gguf_model_weight_bytes(g, by_type, &total) == TP_OK && total == sum &&
                  memcmp(by_type, want, sizeof want) == 0,
              "weight bytes %zu, the tensors hold %zu", total, sum);
    tp_model_config cfg;
    tp_status st = tp_gguf_model_config(g, &cfg);
    if (st != TP_OK) {
        gguf_check_refusal(st, "the model config");
    } else {
        const tp_gguf_tensor *emb = tp_gguf_find_tensor(g, "token_embd.weight");
        TPF_CHECK(emb != NULL && cfg.vocab == emb->ne[1] && cfg.n_embd == emb->ne[0],
                  "config vocab %d / width %d, token_embd.weight says otherwise", cfg.vocab,
                  cfg.n_embd);
        TPF_CHECK(cfg.n_head > 0 && cfg.n_head_kv > 0 && cfg.n_head % cfg.n_head_kv == 0 &&
                      cfg.head_dim > 0 && cfg.head_dim % 2 == 0 && cfg.n_layer > 0,
                  "config heads %d / %d, head_dim %d", cfg.n_head, cfg.n_head_kv, cfg.head_dim);
        TPF_CHECK(cfg.tied_embeddings == (tp_gguf_find_tensor(g, "output.weight") == NULL),
                  "tied_embeddings disagrees with output.weight");
        tp_weights *wts = NULL;
        st = tp_gguf_model_weights(g, &cfg, &wts);
        TPF_CHECK(st == TP_OK || st == TP_ERR_NOMEM, "weights of an accepted config refused: "
                  "%s", tp_last_error());
        tp_weights_destroy(wts);
    }
    tp_tokenizer *tok = NULL;
    st = tp_gguf_tokenizer(g, &tok);
    if (st != TP_OK) {
        gguf_check_refusal(st, "the tokenizer");
        return;
    }
    tp_gguf_array toks;
    TPF_CHECK(tp_gguf_get_array(g, "tokenizer.ggml.tokens", TP_GGUF_STRING, &toks) == TP_OK &&
                  tp_tokenizer_n_vocab(tok) == toks.count,
              "tokenizer of %zu ids", tp_tokenizer_n_vocab(tok));
    static const char text[] = "Hello world, 123 \xc3\xa9t\xc3\xa9\n\xff";
    int32_t *ids = NULL;
    size_t n = 0;
    st = tp_tokenizer_encode(tok, text, sizeof text - 1, 1, 1, &ids, &n);
    if (st != TP_OK) {
        gguf_check_refusal(st, "a text");
    } else {
        for (size_t i = 0; i < n; i++)
            TPF_CHECK(ids[i] >= 0 && (size_t)ids[i] < tp_tokenizer_n_vocab(tok),
                      "id %d of %zu", ids[i], tp_tokenizer_n_vocab(tok));
        char *back = NULL;
        size_t len = 0;
        st = tp_tokenizer_decode(tok, ids, n, 0, 1, &back, &len);
        TPF_CHECK(st == TP_OK || st == TP_ERR_NOMEM, "decoding its own ids refused: %s",
                  tp_last_error());
        free(back);
    }
    free(ids);
    tp_tokenizer_destroy(tok);
}

/* tp_gguf_tensor_nbytes on a type and shape from the last 37 bytes of the input. Where two
 * refusals apply at once (a negative or misaligned dimension and an overflow, or an overflow
 * before a zero dimension) either status is taken. */
static void gguf_check_nbytes(const uint8_t *data, size_t size)
{
    if (size < 37)
        return;
    const uint8_t *p = data + size - 37;
    const uint32_t type = p[0] % 48, n_dims = p[36] % 5;
    int64_t ne[4] = { 1, 1, 1, 1 };
    for (uint32_t d = 0; d < n_dims; d++)
        ne[d] = (int64_t)(gguf_le(p + 1 + 8 * d, 8) >> (p[33 + d % 3] % 64));
    size_t nb = 0;
    const tp_status st = tp_gguf_tensor_nbytes(type, n_dims, ne, &nb);
    const size_t be = tp_gguf_type_block_elems(type);
    if (be == 0) {
        TPF_CHECK(st == TP_ERR_INVALID, "type %u accepted", (unsigned)type);
        return;
    }
    const int neg = ne[0] < 0 || ne[1] < 0 || ne[2] < 0 || ne[3] < 0;
    if (neg || ne[0] % (int64_t)be != 0) {
        TPF_CHECK(st == TP_ERR_INVALID || st == TP_ERR_OVERFLOW, "type %u, ne[0] %lld, a "
                  "negative or misaligned shape: status %d", (unsigned)type, (long long)ne[0],
                  (int)st);
        if (st == TP_ERR_OVERFLOW) {
            int64_t pos[4];
            for (int d = 0; d < 4; d++)
                pos[d] = ne[d] < 0 ? 1 : ne[d]; /* a misaligned ne[0] still counts */
            int fits, zero;
            gguf_nbytes(type, pos, &fits, &zero);
            TPF_CHECK(!fits || zero, "type %u: an overflow reported for a shape that fits",
                      (unsigned)type);
        }
        return;
    }
    int fits, zero;
    const uint64_t bytes = gguf_nbytes(type, ne, &fits, &zero);
    if (zero && st == TP_ERR_OVERFLOW)
        return;
    TPF_CHECK(fits ? st == TP_OK && nb == bytes : st == TP_ERR_OVERFLOW,
              "type %u: %zu bytes (status %d), restated %llu (fits %d)", (unsigned)type, nb,
              (int)st, (unsigned long long)bytes, fits);
}

static int fuzz_gguf(const uint8_t *data, size_t size)
{
    gguf_check_nbytes(data, size);
    tp_gguf *g = NULL;
    const tp_status st = tp_gguf_open_memory("fuzz.gguf", data, size, &g);
    if (st != TP_OK) {
        TPF_CHECK(g == NULL, "a refused file was returned");
        gguf_check_refusal(st, "the file");
        return 0;
    }
    TPF_CHECK(size >= 24 && memcmp(data, "GGUF", 4) == 0, "accepted without a header");
    gguf_cur c = { data, size, 4 };
    const uint64_t version = gguf_take(&c, 4);
    TPF_CHECK(tp_gguf_version(g) == version && (version == 2 || version == 3),
              "version %u accepted", (unsigned)tp_gguf_version(g));
    TPF_CHECK(gguf_take(&c, 8) == tp_gguf_tensor_count(g), "tensor count differs");
    TPF_CHECK(gguf_take(&c, 8) == tp_gguf_kv_count(g), "key count differs");
    TPF_CHECK(tp_gguf_file_size(g) == size && strcmp(tp_gguf_name(g), "fuzz.gguf") == 0,
              "file size or name differs");
    gguf_check_kvs(g, &c);
    gguf_check_tensors(g, &c);
    gguf_round_trip(g);
    gguf_check_model(g);
    tp_gguf_close(g);
    return 0;
}

TPF_ENTRY(fuzz_gguf)
