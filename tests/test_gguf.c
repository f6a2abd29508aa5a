/* The GGUF reader on files built byte by byte here (tests/support/gguf_build.h): a valid file
 * read back field by field, then one refusal per rule of docs/gguf.md, each checked for
 * TP_ERR_INVALID and a message naming the byte offset the builder recorded; then random
 * mutations and truncations, which must be refused or read, never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/gguf_build.h"
#include "support/xorshift.h"
#include "tensorplan/gguf.h"

enum { V_U32 = 4, V_STRING = 8, V_U64 = 10 };

/* What may differ from the standard file. */
typedef struct opts {
    const char *key2;   /* the third key (default "tok.list")   */
    const char *name_b; /* the second tensor's name (default "b") */
    uint32_t arr_elem;  /* element type of tok.list (default string) */
    uint64_t arr_count; /* its count field (2 strings follow anyway) */
    uint32_t align_type;
    uint64_t align_value;
} opts;

/* Offsets of the fields of the standard file. */
typedef struct layout {
    size_t kv[3], kv_type[3], kv_val[3];
    size_t t[2], t_ndims[2], t_ne[2], t_type[2], t_off[2];
    size_t infos_end, data, size;
    uint64_t nbytes[2], offset[2];
} layout;

static opts std_opts(void)
{
    return (opts){ "tok.list", "b", V_STRING, 2, V_U32, 32 };
}

static void kv_head(gb *b, layout *L, int i, const char *key, uint32_t type)
{
    L->kv[i] = gb_str(b, key);
    L->kv_type[i] = gb_u32(b, type);
    L->kv_val[i] = b->len;
}

static void tensor_info(gb *b, layout *L, int i, const char *name, uint32_t n_dims,
                        const int64_t *ne, uint32_t type)
{
    L->t[i] = gb_str(b, name);
    L->t_ndims[i] = gb_u32(b, n_dims);
    L->t_ne[i] = b->len;
    for (uint32_t d = 0; d < n_dims; d++)
        gb_u64(b, (uint64_t)ne[d]);
    L->t_type[i] = gb_u32(b, type);
    L->t_off[i] = gb_u64(b, L->offset[i]);
}

/* Three keys (architecture string, general.alignment, a string array) and two tensors:
 * "a" Q8_0 [32, 2] (2 blocks of 34 bytes) and "b" F32 [4] (16 bytes), data at
 * PAD(end of infos, 32), "b" at PAD(68, 32) = 96, the file ending right after "b". */
static gb build(const opts *o, layout *L)
{
    gb b = { 0 };
    gb_raw(&b, "GGUF", 4);
    gb_u32(&b, 3);
    gb_u64(&b, 2);
    gb_u64(&b, 3);
    kv_head(&b, L, 0, "general.architecture", V_STRING);
    gb_str(&b, "llama");
    kv_head(&b, L, 1, "general.alignment", o->align_type);
    gb_le(&b, o->align_value, o->align_type == V_U64 ? 8 : 4);
    kv_head(&b, L, 2, o->key2, 9);
    gb_u32(&b, o->arr_elem);
    gb_u64(&b, o->arr_count);
    gb_str(&b, "a");
    gb_str(&b, "bc");
    L->nbytes[0] = 2 * 34;
    L->nbytes[1] = 4 * 4;
    L->offset[0] = 0;
    L->offset[1] = gb_pad(L->nbytes[0], 32);
    const int64_t ne_a[2] = { 32, 2 }, ne_b[1] = { 4 };
    tensor_info(&b, L, 0, "a", 2, ne_a, 8);
    tensor_info(&b, L, 1, o->name_b, 1, ne_b, 0);
    L->infos_end = b.len;
    L->data = gb_pad(b.len, 32);
    gb_zero_to(&b, L->data);
    for (size_t i = 0; i < L->offset[1] + L->nbytes[1]; i++)
        gb_le(&b, (uint64_t)(i * 7 + 1), 1);
    L->size = b.len;
    return b;
}

static gb build_std(layout *L)
{
    const opts o = std_opts();
    return build(&o, L);
}

/* Opens the first len bytes of b from an exact-size copy (so a read past the end is caught
 * by the sanitizers). */
static tp_status open_copy(const gb *b, size_t len, unsigned char **copy, tp_gguf **g)
{
    *copy = malloc(len ? len : 1);
    assert_non_null(*copy);
    if (len)
        memcpy(*copy, b->p, len);
    return tp_gguf_open_memory("damaged.gguf", *copy, len, g);
}

static void expect_refused_len(const gb *b, size_t len, size_t at, const char *what)
{
    unsigned char *copy;
    tp_gguf *g = (tp_gguf *)b; /* must be reset to NULL */
    const tp_status st = open_copy(b, len, &copy, &g);
    const char *msg = tp_last_error();
    char want[96];
    snprintf(want, sizeof want, "damaged.gguf: offset %zu: expected", at);
    if (st != TP_ERR_INVALID || strncmp(msg, want, strlen(want)) != 0 ||
        (what && !strstr(msg, what)) || strchr(msg, '\n'))
        fail_msg("status %d, message '%s'; wanted '%s...' with '%s'", (int)st, msg, want,
                 what ? what : "");
    assert_null(g);
    free(copy);
}

static void expect_refused(const gb *b, size_t at, const char *what)
{
    expect_refused_len(b, b->len, at, what);
}

static void test_valid_file(void **state)
{
    (void)state;
    layout L;
    gb b = build_std(&L);
    unsigned char *copy;
    tp_gguf *g = NULL;
    assert_int_equal(open_copy(&b, b.len, &copy, &g), TP_OK);
    assert_int_equal(tp_gguf_version(g), 3);
    assert_int_equal(tp_gguf_alignment(g), 32);
    assert_int_equal(tp_gguf_data_offset(g), L.data);
    assert_int_equal(tp_gguf_file_size(g), L.size);
    assert_int_equal(tp_gguf_kv_count(g), 3);
    assert_string_equal(tp_gguf_key(g, 2), "tok.list");
    assert_int_equal(tp_gguf_kv_type(g, 1), TP_GGUF_U32);
    assert_int_equal(tp_gguf_kv_at(g, 1)->offset, L.kv[1]);
    tp_gguf_str s;
    assert_int_equal(tp_gguf_get_string(g, "general.architecture", &s), TP_OK);
    assert_int_equal(s.len, 5);
    assert_memory_equal(s.data, "llama", 5);
    uint32_t al = 0;
    assert_int_equal(tp_gguf_get_u32(g, "general.alignment", &al), TP_OK);
    assert_int_equal(al, 32);
    int32_t i32 = 7;
    assert_int_equal(tp_gguf_get_i32(g, "general.alignment", &i32), TP_ERR_INVALID);
    assert_int_equal(i32, 7);
    assert_string_equal(tp_last_error(),
                        "damaged.gguf: key 'general.alignment': expected i32, got u32");
    assert_int_equal(tp_gguf_get_u32(g, "no.such.key", &al), TP_ERR_NOT_FOUND);
    tp_gguf_array a;
    assert_int_equal(tp_gguf_get_array(g, "tok.list", TP_GGUF_U32, &a), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "expected array of u32, got array of string"));
    assert_int_equal(tp_gguf_get_array(g, "tok.list", TP_GGUF_STRING, &a), TP_OK);
    assert_int_equal(a.count, 2);
    s = tp_gguf_array_string(&a, 1);
    assert_int_equal(s.len, 2);
    assert_memory_equal(s.data, "bc", 2);
    assert_int_equal(tp_gguf_tensor_count(g), 2);
    for (int i = 0; i < 2; i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, (size_t)i);
        assert_ptr_equal(tp_gguf_find_tensor(g, i ? "b" : "a"), t);
        assert_int_equal(t->offset, L.offset[i]);
        assert_int_equal(t->nbytes, L.nbytes[i]);
        assert_int_equal(t->info_offset, L.t[i]);
        assert_ptr_equal(t->data, copy + L.data + L.offset[i]);
    }
    const tp_gguf_tensor *ta = tp_gguf_tensor_at(g, 0);
    assert_int_equal(ta->type, 8);
    assert_int_equal(ta->n_dims, 2);
    assert_true(ta->ne[0] == 32 && ta->ne[1] == 2 && ta->ne[2] == 1 && ta->ne[3] == 1);
    assert_null(tp_gguf_find_tensor(g, "c"));
    assert_null(tp_gguf_find_kv(g, "general"));
    tp_gguf_close(g);
    free(copy);
    free(b.p);
}

static void test_truncated_in_each_section(void **state)
{
    (void)state;
    layout L;
    gb b = build_std(&L);
    const struct { size_t len, at; const char *what; } cases[] = {
        { 0, 0, "magic" },                       { 3, 0, "magic" },
        { 6, 4, "version" },                     { 12, 8, "tensor count" },
        { 20, 16, "key/value count" },           { 30, 24, "length of a key" },
        { L.kv[0] + 13, L.kv[0] + 8, "a key of 20 bytes" },
        { L.kv_type[0] + 2, L.kv_type[0], "value type" },
        { L.kv_val[0] + 10, L.kv_val[0] + 8, "string value of 5 bytes" },
        { L.kv_val[1] + 1, L.kv_val[1], "u32 value" },
        { L.kv_val[2] + 2, L.kv_val[2], "element type" },
        { L.kv_val[2] + 22, L.kv_val[2] + 4, "at least 16 bytes" },
        { L.kv_val[2] + 30, L.kv_val[2] + 29, "of 2 bytes" },
        { L.t[0] + 4, L.t[0], "tensor name" },
        { L.t_ne[0] + 12, L.t_ne[0] + 8, "dimension" },
        { L.t_type[1] + 1, L.t_type[1], "tensor type" },
        { L.t_off[1] + 7, L.t_off[1], "tensor offset" },
        { L.data + 10, L.t_off[0], "end within the file" },
        { L.size - 1, L.t_off[1], "end within the file" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_refused_len(&b, cases[i].len, cases[i].at, cases[i].what);
    free(b.p);
}

/* One field of the standard file set to v (n bytes); refused at offset at. */
static void patched(size_t field, uint64_t v, size_t n, size_t at, const char *what)
{
    layout L;
    gb b = build_std(&L);
    (void)L;
    gb_put_le_at(&b, field, v, n);
    expect_refused(&b, at, what);
    free(b.p);
}

static void test_header_refusals(void **state)
{
    (void)state;
    patched(0, 'X', 1, 0, "magic");
    const uint32_t bad_versions[] = { 0, 1, 4 };
    for (int i = 0; i < 3; i++)
        patched(4, bad_versions[i], 4, 4, "version 2 or 3");
    patched(4, 0x03000000u, 4, 4, "byte-swapped");
    patched(8, (uint64_t)-1, 8, 8, "tensor count >= 0");
    patched(16, (uint64_t)-1, 8, 16, "key/value count >= 0");
}

static void test_metadata_refusals(void **state)
{
    (void)state;
    layout L;
    gb b = build_std(&L);
    free(b.p);
    patched(L.kv[0], 5000000000ull, 8, L.kv[0],
            "expected a key of at most 1073741824 bytes, got 5000000000");
    patched(L.kv[0], 1000, 8, L.kv[0] + 8, "a key of 1000 bytes");
    patched(L.kv_val[0], (1ull << 30) + 1, 8, L.kv_val[0], "at most 1073741824 bytes");
    patched(L.kv_type[1], 13, 4, L.kv_type[1], "value type id below 13");
    patched(L.kv_val[1], 0, 4, L.kv_val[1], "non-zero power of two, got 0");
    patched(L.kv_val[1], 48, 4, L.kv_val[1], "non-zero power of two, got 48");
    patched(L.kv_val[2], 13, 4, L.kv_val[2], "element type below 13");
    /* counted strings hold NUL bytes: refused in a key ("tok\0list") and a tensor name, which
     * a C string comparison would take for a shorter name */
    patched(L.kv[2] + 8 + 3, 0, 1, L.kv[2], "a key without NUL bytes, got 'tok' with a NUL at "
            "byte 3");
    patched(L.kv[0] + 8 + 20 - 1, 0, 1, L.kv[0], "a key without NUL bytes");
    patched(L.t[1] + 8, 0, 1, L.t[1], "a tensor name without NUL bytes");
    struct { opts o; size_t at; const char *what; } cases[8];
    int n = 0;
    for (int i = 0; i < 8; i++)
        cases[i].o = std_opts();
    cases[n].o.arr_elem = 9;
    cases[n].at = L.kv_val[2], cases[n++].what = "arrays of arrays";
    cases[n].o.arr_count = (1ull << 30) + 1;
    cases[n].at = L.kv_val[2] + 4, cases[n++].what = "at most 1073741824 elements";
    cases[n].o.align_type = V_U64;
    cases[n].at = L.kv_type[1], cases[n++].what = "u32, got u64";
    cases[n].o.align_type = 5; /* i32 */
    cases[n].at = L.kv_type[1], cases[n++].what = "u32, got i32";
    cases[n].o.key2 = "general.architecture";
    cases[n].at = L.kv[2], cases[n++].what = "unique keys"; /* the later one */
    cases[n].o.key2 = "";
    cases[n].at = L.kv[2], cases[n++].what = "non-empty key";
    for (int i = 0; i < n; i++) {
        layout M;
        gb c = build(&cases[i].o, &M);
        expect_refused(&c, cases[i].at, cases[i].what);
        free(c.p);
    }
}

static void test_tensor_refusals(void **state)
{
    (void)state;
    layout L;
    gb b = build_std(&L);
    free(b.p);
    patched(L.t_ndims[1], 5, 4, L.t_ndims[1], "at most 4 dimensions");
    patched(L.t_ne[0] + 8, (uint64_t)-1, 8, L.t_ne[0] + 8, "ne[1] of tensor 'a' to be >= 0");
    const uint32_t retired[] = { 4, 5, 31 };
    for (int i = 0; i < 3; i++)
        patched(L.t_type[1], retired[i], 4, L.t_type[1], "retired");
    patched(L.t_type[1], 99, 4, L.t_type[1], "99 (unknown)");
    patched(L.t_type[1], 16, 4, L.t_type[1], "not supported");
    patched(L.t_ne[0], 33, 8, L.t_ne[0], "multiple of 32");
    patched(L.t_ne[0] + 8, 1ull << 58, 8, L.t_ne[0], "overflow");     /* 2^63 elements */
    patched(L.t_ne[1], 1ull << 62, 8, L.t_ne[1], "overflow");         /* 2^64 bytes */
    patched(L.t_off[1], L.offset[1] + 4, 8, L.t_off[1], "at data offset 96, got 100");
    patched(L.t_off[1], 128, 8, L.t_off[1], "at data offset 96, got 128");
    patched(L.t_off[0], 96, 8, L.t_off[0], "at data offset 0, got 96");
    opts o = std_opts();
    o.name_b = "a";
    layout M;
    gb c = build(&o, &M);
    expect_refused(&c, M.t[1], "unique tensor names");
    free(c.p);
    char name[65];
    memset(name, 'x', 64);
    name[64] = '\0';
    o.name_b = name;
    c = build(&o, &M);
    expect_refused(&c, M.t[1], "at most 63 bytes, got 64");
    free(c.p);
    name[63] = '\0'; /* 63 bytes: accepted */
    c = build(&o, &M);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open_memory("ok.gguf", c.p, c.len, &g), TP_OK);
    assert_non_null(tp_gguf_find_tensor(g, name));
    tp_gguf_close(g);
    free(c.p);
}

/* A tensor of no dimension holds one element (missing dims are 1, docs/gguf.md "Layout"):
 * ne[0] = 1 is a multiple of F32's block, not of Q8_0's 32, so the quantized one is refused.
 * It was once accepted as one whole block of 34 bytes. */
static gb scalar_file(uint32_t type)
{
    gb b = { 0 };
    gb_raw(&b, "GGUF", 4);
    gb_u32(&b, 3);
    gb_u64(&b, 1);
    gb_u64(&b, 0);
    gb_str(&b, "s");
    gb_u32(&b, 0);
    gb_u32(&b, type);
    gb_u64(&b, 0);
    gb_zero_to(&b, gb_pad(b.len, 32) + 34); /* room for a Q8_0 block: only the shape fails */
    return b;
}

static void test_scalar_tensors(void **state)
{
    (void)state;
    const int64_t ne[4] = { 1, 1, 1, 1 };
    size_t nb = 0;
    assert_int_equal(tp_gguf_tensor_nbytes(0, 0, ne, &nb), TP_OK);
    assert_int_equal(nb, 4);
    assert_int_equal(tp_gguf_tensor_nbytes(8, 0, ne, &nb), TP_ERR_INVALID);
    gb b = scalar_file(0);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open_memory("s.gguf", b.p, b.len, &g), TP_OK);
    assert_int_equal(tp_gguf_tensor_at(g, 0)->nbytes, 4);
    tp_gguf_close(g);
    free(b.p);
    b = scalar_file(8);
    /* ne[0] is missing: the offset named is where the dimensions would start, 24 + 9 + 4 */
    expect_refused(&b, 37, "multiple of 32");
    free(b.p);
}

static void test_files_on_disk(void **state)
{
    (void)state;
    char path[] = "/tmp/tp_gguf_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_ERR_INVALID); /* empty */
    assert_non_null(strstr(tp_last_error(), "offset 0: expected"));
    assert_null(g);
    layout L;
    gb b = build_std(&L);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b.p, 1, b.len, f), b.len);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    const tp_gguf_tensor *t = tp_gguf_find_tensor(g, "b");
    assert_memory_equal(t->data, b.p + L.data + L.offset[1], L.nbytes[1]);
    tp_gguf_close(g);
    assert_int_equal(truncate(path, (off_t)(L.size - 1)), 0);
    assert_int_equal(tp_gguf_open(path, &g), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), path));
    remove(path);
    assert_int_equal(tp_gguf_open(path, &g), TP_ERR_IO);
    free(b.p);
}

/* No weight byte is read at open: the data section lies on a page the process may not read. */
static void test_open_reads_no_weights(void **state)
{
    (void)state;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    gb b = { 0 };
    gb_raw(&b, "GGUF", 4);
    gb_u32(&b, 3);
    gb_u64(&b, 1);
    gb_u64(&b, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, V_U32);
    gb_u32(&b, (uint32_t)page);
    gb_str(&b, "w");
    gb_u32(&b, 1);
    gb_u64(&b, page / 4);
    gb_u32(&b, 0);
    gb_u64(&b, 0);
    assert_true(b.len <= page);
    char path[] = "/tmp/tp_gguf_guard_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)(2 * page)), 0);
    unsigned char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED);
    close(fd);
    remove(path);
    memcpy(map, b.p, b.len);
    assert_int_equal(mprotect(map + page, page, PROT_NONE), 0);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open_memory("guarded.gguf", map, 2 * page, &g), TP_OK);
    assert_int_equal(tp_gguf_data_offset(g), page);
    assert_ptr_equal(tp_gguf_tensor_at(g, 0)->data, map + page);
    tp_gguf_close(g);
    munmap(map, 2 * page);
    free(b.p);
}

/* Random damage: each outcome is a refusal with a message or a file whose tensors all lie in
 * the buffer. */
static void test_random_damage(void **state)
{
    (void)state;
    layout L;
    gb b = build_std(&L);
    tpt_rng rng = tpt_rng_seeded(11);
    size_t refused = 0;
    for (int it = 0; it < 4000; it++) {
        gb m = { 0 };
        gb_raw(&m, b.p, b.len);
        const int flips = 1 + (int)(tpt_rng_next(&rng) % 4);
        for (int k = 0; k < flips; k++) {
            const size_t at = tpt_rng_next(&rng) % m.len;
            const uint64_t r = tpt_rng_next(&rng);
            m.p[at] = (r & 3) == 0 ? 0xff : (r & 3) == 1 ? 0 : (unsigned char)(r >> 8);
        }
        const size_t len = it % 3 == 0 ? tpt_rng_next(&rng) % (m.len + 1) : m.len;
        unsigned char *copy;
        tp_gguf *g = NULL;
        const tp_status st = open_copy(&m, len, &copy, &g);
        if (st == TP_OK) {
            for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
                const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
                const unsigned char *d = t->data;
                assert_true(d >= copy && (size_t)(d - copy) + t->nbytes <= len);
            }
            tp_gguf_close(g);
        } else {
            assert_int_equal(st, TP_ERR_INVALID);
            assert_non_null(strstr(tp_last_error(), "damaged.gguf: offset "));
            refused++;
        }
        free(copy);
        free(m.p);
    }
    assert_true(refused > 1000);
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_truncated_in_each_section),
        cmocka_unit_test(test_header_refusals),
        cmocka_unit_test(test_metadata_refusals),
        cmocka_unit_test(test_tensor_refusals),
        cmocka_unit_test(test_scalar_tensors),
        cmocka_unit_test(test_files_on_disk),
        cmocka_unit_test(test_open_reads_no_weights),
        cmocka_unit_test(test_random_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
