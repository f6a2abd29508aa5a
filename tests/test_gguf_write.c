/* The GGUF writer, read back by the reader: every value type, arrays of numbers and of
 * strings, tensors of several types and shapes. Oracles: the values put in, and sizes and
 * offsets computed here from the formulas of docs/gguf.md (nbytes = ne0/block * block bytes
 * * ne1 * ne2 * ne3, data at PAD(end of infos), offsets the running sum of PAD(nbytes)). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/xorshift.h"
#include "tensorplan/gguf.h"

static uint64_t pad(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

/* Block elements and bytes of the types used here (docs/gguf.md, "Tensor types"). */
static void block_of(uint32_t type, uint64_t *elems, uint64_t *bytes)
{
    switch (type) {
    case 0: *elems = 1, *bytes = 4; break;     /* F32  */
    case 1: *elems = 1, *bytes = 2; break;     /* F16  */
    case 30: *elems = 1, *bytes = 2; break;    /* BF16 */
    case 8: *elems = 32, *bytes = 34; break;   /* Q8_0 */
    case 12: *elems = 256, *bytes = 144; break; /* Q4_K */
    default: *elems = 256, *bytes = 210; break; /* Q6_K (14) */
    }
}

typedef struct tdef {
    const char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
} tdef;

static const tdef tensors[] = {
    { "t.f32", 0, 1, { 5 } },          { "t.f16", 1, 2, { 3, 2 } },
    { "t.bf16", 30, 3, { 2, 1, 3 } },  { "t.q8_0", 8, 2, { 64, 3 } },
    { "t.q4_k", 12, 4, { 256, 1, 1, 2 } }, { "t.q6_k", 14, 2, { 512, 1 } },
    { "t.empty", 0, 2, { 0, 4 } },     { "t.scalar", 0, 0, { 0 } },
};
enum { N_TENSORS = sizeof tensors / sizeof tensors[0] };

static uint64_t nbytes_of(const tdef *t)
{
    uint64_t elems, bytes, n = 1;
    block_of(t->type, &elems, &bytes);
    for (uint32_t d = 1; d < t->n_dims; d++)
        n *= (uint64_t)t->ne[d];
    return (t->n_dims ? (uint64_t)t->ne[0] / elems : 1) * bytes * n;
}

/* The values written, and the metadata bytes they take (8 + key + 4 + value). */
static const uint16_t arr_u16[3] = { 1, 65535, 7 };
static const int32_t arr_i32[4] = { -1, 0, 2147483647, -2147483647 - 1 };
static const float arr_f32[2] = { 0.5f, -3.25e-7f };
static const uint8_t arr_bool[3] = { 1, 0, 1 };
static const char *const arr_str[3] = { "", "hello", "\xe2\x96\x81world" };

static size_t add_metadata(tp_gguf_writer *w, uint32_t alignment)
{
    size_t bytes = 0;
#define KV(call, key, vbytes)                                                                 \
    do {                                                                                      \
        assert_int_equal(call, TP_OK);                                                        \
        bytes += 8 + strlen(key) + 4 + (vbytes);                                              \
    } while (0)
    if (alignment)
        KV(tp_gguf_writer_add_u32(w, "general.alignment", alignment), "general.alignment", 4);
    KV(tp_gguf_writer_add_u8(w, "v.u8", 200), "v.u8", 1);
    KV(tp_gguf_writer_add_i8(w, "v.i8", -100), "v.i8", 1);
    KV(tp_gguf_writer_add_u16(w, "v.u16", 60000), "v.u16", 2);
    KV(tp_gguf_writer_add_i16(w, "v.i16", -30000), "v.i16", 2);
    KV(tp_gguf_writer_add_u32(w, "v.u32", 4000000000u), "v.u32", 4);
    KV(tp_gguf_writer_add_i32(w, "v.i32", -2000000000), "v.i32", 4);
    KV(tp_gguf_writer_add_u64(w, "v.u64", UINT64_MAX - 1), "v.u64", 8);
    KV(tp_gguf_writer_add_i64(w, "v.i64", INT64_MIN + 1), "v.i64", 8);
    KV(tp_gguf_writer_add_f32(w, "v.f32", 1e-6f), "v.f32", 4);
    KV(tp_gguf_writer_add_f64(w, "v.f64", -2.5e300), "v.f64", 8);
    KV(tp_gguf_writer_add_bool(w, "v.bool", 1), "v.bool", 1);
    KV(tp_gguf_writer_add_string(w, "v.string", "llama"), "v.string", 8 + 5);
    KV(tp_gguf_writer_add_array(w, "a.u16", TP_GGUF_U16, arr_u16, 3), "a.u16", 12 + 6);
    KV(tp_gguf_writer_add_array(w, "a.i32", TP_GGUF_I32, arr_i32, 4), "a.i32", 12 + 16);
    KV(tp_gguf_writer_add_array(w, "a.f32", TP_GGUF_F32, arr_f32, 2), "a.f32", 12 + 8);
    KV(tp_gguf_writer_add_array(w, "a.bool", TP_GGUF_BOOL, arr_bool, 3), "a.bool", 12 + 3);
    KV(tp_gguf_writer_add_array(w, "a.empty", TP_GGUF_U64, NULL, 0), "a.empty", 12);
    KV(tp_gguf_writer_add_strings(w, "a.str", arr_str, 3), "a.str", 12 + 24 + 0 + 5 + 8);
#undef KV
    return bytes;
}

static void check_metadata(const tp_gguf *g)
{
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
    uint64_t u64; int64_t i64; float f32; double f64; int b; tp_gguf_str s;
    assert_int_equal(tp_gguf_get_u8(g, "v.u8", &u8), TP_OK);
    assert_int_equal(u8, 200);
    assert_int_equal(tp_gguf_get_i8(g, "v.i8", &i8), TP_OK);
    assert_int_equal(i8, -100);
    assert_int_equal(tp_gguf_get_u16(g, "v.u16", &u16), TP_OK);
    assert_int_equal(u16, 60000);
    assert_int_equal(tp_gguf_get_i16(g, "v.i16", &i16), TP_OK);
    assert_int_equal(i16, -30000);
    assert_int_equal(tp_gguf_get_u32(g, "v.u32", &u32), TP_OK);
    assert_true(u32 == 4000000000u);
    assert_int_equal(tp_gguf_get_i32(g, "v.i32", &i32), TP_OK);
    assert_int_equal(i32, -2000000000);
    assert_int_equal(tp_gguf_get_u64(g, "v.u64", &u64), TP_OK);
    assert_true(u64 == UINT64_MAX - 1);
    assert_int_equal(tp_gguf_get_i64(g, "v.i64", &i64), TP_OK);
    assert_true(i64 == INT64_MIN + 1);
    assert_int_equal(tp_gguf_get_f32(g, "v.f32", &f32), TP_OK);
    assert_true(f32 == 1e-6f);
    assert_int_equal(tp_gguf_get_f64(g, "v.f64", &f64), TP_OK);
    assert_true(f64 == -2.5e300);
    assert_int_equal(tp_gguf_get_bool(g, "v.bool", &b), TP_OK);
    assert_int_equal(b, 1);
    assert_int_equal(tp_gguf_get_string(g, "v.string", &s), TP_OK);
    assert_true(s.len == 5 && memcmp(s.data, "llama", 5) == 0);
    assert_int_equal(tp_gguf_get_u32(g, "v.u64", &u32), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "key 'v.u64': expected u32, got u64"));
    tp_gguf_array a;
    assert_int_equal(tp_gguf_get_array(g, "a.u16", TP_GGUF_U16, &a), TP_OK);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(tp_gguf_array_bits(&a, i), arr_u16[i]);
    assert_int_equal(tp_gguf_get_array(g, "a.i32", TP_GGUF_I32, &a), TP_OK);
    for (size_t i = 0; i < 4; i++)
        assert_true(tp_gguf_bits_to_double(a.type, tp_gguf_array_bits(&a, i)) == arr_i32[i]);
    assert_int_equal(tp_gguf_get_array(g, "a.f32", TP_GGUF_F32, &a), TP_OK);
    for (size_t i = 0; i < 2; i++)
        assert_true(tp_gguf_bits_to_double(a.type, tp_gguf_array_bits(&a, i)) == arr_f32[i]);
    assert_int_equal(tp_gguf_get_array(g, "a.bool", TP_GGUF_BOOL, &a), TP_OK);
    assert_memory_equal(a.data, arr_bool, 3);
    assert_int_equal(tp_gguf_get_array(g, "a.empty", TP_GGUF_ARRAY, &a), TP_OK);
    assert_true(a.count == 0 && a.type == TP_GGUF_U64);
    assert_int_equal(tp_gguf_get_array(g, "a.str", TP_GGUF_STRING, &a), TP_OK);
    assert_int_equal(a.count, 3);
    for (size_t i = 0; i < 3; i++) {
        s = tp_gguf_array_string(&a, i);
        assert_int_equal(s.len, strlen(arr_str[i]));
        assert_memory_equal(s.data, arr_str[i], s.len);
    }
}

/* Writes the metadata and tensors with the given version and alignment key (0: none), reads
 * the file back from memory and from disk, and checks it against the formulas. */
static void round_trip(uint32_t version, uint32_t alignment)
{
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(tp_gguf_writer_set_version(w, version), TP_OK);
    size_t end = 24 + add_metadata(w, alignment);
    const uint64_t align = alignment ? alignment : 32;
    unsigned char *data[N_TENSORS];
    tpt_rng rng = tpt_rng_seeded(version * 100 + alignment);
    for (size_t i = 0; i < N_TENSORS; i++) {
        const tdef *t = &tensors[i];
        const size_t n = (size_t)nbytes_of(t);
        data[i] = malloc(n ? n : 1);
        for (size_t k = 0; k < n; k++)
            data[i][k] = (unsigned char)tpt_rng_next(&rng);
        assert_int_equal(tp_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne,
                                                   data[i], n), TP_OK);
        end += 8 + strlen(t->name) + 4 + 8 * t->n_dims + 4 + 8;
    }
    void *mem = NULL;
    size_t size = 0;
    assert_int_equal(tp_gguf_writer_to_memory(w, &mem, &size), TP_OK);
    char path[] = "/tmp/tp_gguf_write_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tp_gguf_writer_write(w, path), TP_OK);
    tp_gguf *g = NULL, *gf = NULL;
    assert_int_equal(tp_gguf_open_memory("mem.gguf", mem, size, &g), TP_OK);
    assert_int_equal(tp_gguf_open(path, &gf), TP_OK);
    assert_int_equal(tp_gguf_file_size(gf), size);
    assert_memory_equal(tp_gguf_tensor_at(gf, 0)->data, tp_gguf_tensor_at(g, 0)->data,
                        tp_gguf_tensor_at(g, 0)->nbytes);
    assert_int_equal(tp_gguf_version(g), version);
    assert_int_equal(tp_gguf_alignment(g), align);
    assert_int_equal(tp_gguf_kv_count(g), alignment ? 19 : 18);
    const uint64_t data_off = pad(end, align);
    assert_int_equal(tp_gguf_data_offset(g), data_off);
    check_metadata(g);
    uint64_t offset = 0;
    assert_int_equal(tp_gguf_tensor_count(g), N_TENSORS);
    for (size_t i = 0; i < N_TENSORS; i++) {
        const tdef *d = &tensors[i];
        const tp_gguf_tensor *t = tp_gguf_find_tensor(g, d->name);
        assert_ptr_equal(t, tp_gguf_tensor_at(g, i));
        assert_int_equal(t->type, d->type);
        assert_int_equal(t->n_dims, d->n_dims);
        for (uint32_t k = 0; k < 4; k++)
            assert_int_equal(t->ne[k], k < d->n_dims ? d->ne[k] : 1);
        assert_int_equal(t->nbytes, nbytes_of(d));
        assert_int_equal(t->offset, offset);
        assert_ptr_equal(t->data, (unsigned char *)mem + data_off + offset);
        if (t->nbytes)
            assert_memory_equal(t->data, data[i], t->nbytes);
        offset += pad(t->nbytes, align);
        free(data[i]);
    }
    assert_int_equal(size, data_off + offset); /* each tensor padded, the last one too */
    tp_gguf_close(g);
    tp_gguf_close(gf);
    remove(path);
    free(mem);
    tp_gguf_writer_destroy(w);
}

static void test_round_trips(void **state)
{
    (void)state;
    round_trip(3, 0);
    round_trip(3, 64);
    round_trip(2, 8);
    round_trip(3, 1);
}

static void test_writer_refusals(void **state)
{
    (void)state;
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(tp_gguf_writer_set_version(w, 1), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_u32(w, "k", 1), TP_OK);
    assert_int_equal(tp_gguf_writer_add_u32(w, "k", 2), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_string(w, "", "x"), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_u64(w, "general.alignment", 32), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_u32(w, "general.alignment", 48), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_u32(w, "general.alignment", 0), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_array(w, "nested", TP_GGUF_ARRAY, "", 1),
                     TP_ERR_INVALID);
    const char *const bad_strings[2] = { "a", NULL };
    assert_int_equal(tp_gguf_writer_add_strings(w, "s", bad_strings, 2), TP_ERR_INVALID);
    const float f[4] = { 0 };
    const int64_t ne4[1] = { 4 }, ne5[5] = { 1, 1, 1, 1, 1 }, ne33[1] = { 33 };
    assert_int_equal(tp_gguf_writer_add_tensor(w, "t", 0, 1, ne4, f, 16), TP_OK);
    assert_int_equal(tp_gguf_writer_add_tensor(w, "t", 0, 1, ne4, f, 16), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_tensor(w, "u", 0, 1, ne4, f, 12), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_tensor(w, "u", 4, 1, ne4, f, 16), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_tensor(w, "u", 0, 5, ne5, f, 4), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_writer_add_tensor(w, "u", 8, 1, ne33, f, 34), TP_ERR_INVALID);
    char name[65];
    memset(name, 'n', 64);
    name[64] = '\0';
    assert_int_equal(tp_gguf_writer_add_tensor(w, name, 0, 1, ne4, f, 16), TP_ERR_INVALID);
    /* the refused calls left nothing behind: one key, one tensor, a readable file */
    void *mem = NULL;
    size_t size = 0;
    assert_int_equal(tp_gguf_writer_to_memory(w, &mem, &size), TP_OK);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open_memory("w.gguf", mem, size, &g), TP_OK);
    assert_int_equal(tp_gguf_kv_count(g), 1);
    assert_int_equal(tp_gguf_tensor_count(g), 1);
    assert_int_equal(size, pad(24 + (8 + 1 + 4 + 4) + (8 + 1 + 4 + 8 + 4 + 8), 32) + 32);
    tp_gguf_close(g);
    free(mem);
    assert_int_equal(tp_gguf_writer_write(w, "/nonexistent-dir/x.gguf"), TP_ERR_IO);
    tp_gguf_writer_destroy(w);
}

/* A writer with no key and no tensor gives the 24-byte header alone (docs/gguf.md "Layout":
 * magic, version 3, n_tensors 0, n_kv 0, no data section). It once passed its empty record
 * buffer (NULL) to memcpy, which the sanitizers refuse. */
static void test_empty_writer(void **state)
{
    (void)state;
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    void *mem = NULL;
    size_t size = 0;
    assert_int_equal(tp_gguf_writer_to_memory(w, &mem, &size), TP_OK);
    tp_gguf_writer_destroy(w);
    static const unsigned char want[24] = { 'G', 'G', 'U', 'F', 3 };
    assert_int_equal(size, sizeof want);
    assert_memory_equal(mem, want, sizeof want);
    free(mem);
}

/* Random damage to a file with every value type: refused with a message naming an offset, or
 * read with every tensor inside the buffer; never a crash. */
static void test_damaged_metadata(void **state)
{
    (void)state;
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    add_metadata(w, 16);
    static const unsigned char bytes[2 * 34 * 3];
    assert_int_equal(tp_gguf_writer_add_tensor(w, tensors[3].name, tensors[3].type, 2,
                                               tensors[3].ne, bytes, sizeof bytes), TP_OK);
    void *mem = NULL;
    size_t size = 0;
    assert_int_equal(tp_gguf_writer_to_memory(w, &mem, &size), TP_OK);
    tp_gguf_writer_destroy(w);
    tpt_rng rng = tpt_rng_seeded(5);
    size_t refused = 0;
    for (int it = 0; it < 3000; it++) {
        const size_t len = it % 4 == 0 ? (size_t)(tpt_rng_next(&rng) % (size + 1)) : size;
        unsigned char *m = malloc(len ? len : 1);
        memcpy(m, mem, len);
        for (int k = 0; len > 0 && k < 1 + it % 3; k++)
            m[tpt_rng_next(&rng) % len] = (unsigned char)tpt_rng_next(&rng);
        tp_gguf *g = NULL;
        const tp_status st = tp_gguf_open_memory("fuzz.gguf", m, len, &g);
        if (st == TP_OK) {
            for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
                const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
                const size_t at = (size_t)((const unsigned char *)t->data - m);
                assert_true(at <= len && t->nbytes <= len - at);
            }
            tp_gguf_close(g);
        } else {
            assert_int_equal(st, TP_ERR_INVALID);
            assert_non_null(strstr(tp_last_error(), "fuzz.gguf: offset "));
            refused++;
        }
        free(m);
    }
    assert_true(refused > 500);
    free(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_writer_refusals),
        cmocka_unit_test(test_empty_writer),
        cmocka_unit_test(test_damaged_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
