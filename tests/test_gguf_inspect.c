/* `tensorplan inspect` run as a user would: a file the writer made, shown as JSON and parsed
 * with cJSON, the tensor table compared with what this test put in (sizes from the formulas
 * of docs/gguf.md); a damaged file refused with exit 3 and one line; a missing file exit 1. */
#define _GNU_SOURCE /* memmem */
#include <cjson/cJSON.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/cli_run.h"
#include "tensorplan/gguf.h"

static char tmpdir[] = "/tmp/tp_inspect_XXXXXX";
static char out_text[1 << 16], err_text[4096];

/* Runs the CLI with ARGS; stdout and stderr land in out_text and err_text. */
static int run_cli(const char *args)
{
    cli_result r = cli_run(tmpdir, args);
    assert_true(r.rc != -1);
    cli_keep(out_text, sizeof out_text, r.out, r.out_len);
    cli_keep(err_text, sizeof err_text, r.err, r.err_len);
    cli_free(&r);
    return r.rc;
}

typedef struct tdef {
    const char *name, *type_name;
    uint32_t type, n_dims;
    int64_t ne[4];
    uint64_t nbytes; /* ne0/block * block bytes * other dims */
} tdef;

static const tdef tensors[] = {
    { "token_embd.weight", "Q8_0", 8, 2, { 64, 10 }, 64 / 32 * 34 * 10 },
    { "output_norm.weight", "F32", 0, 1, { 64 }, 64 * 4 },
    { "blk.0.attn_q.weight", "F16", 1, 2, { 64, 64 }, 64 * 64 * 2 },
};
enum { N_TENSORS = sizeof tensors / sizeof tensors[0] };

static void write_model(const char *path)
{
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(tp_gguf_writer_add_string(w, "general.architecture", "llama"), TP_OK);
    assert_int_equal(tp_gguf_writer_add_u32(w, "llama.block_count", 1), TP_OK);
    const char *tokens[20];
    for (int i = 0; i < 20; i++)
        tokens[i] = i % 2 ? "odd" : "even";
    assert_int_equal(tp_gguf_writer_add_strings(w, "tokenizer.ggml.tokens", tokens, 20), TP_OK);
    static unsigned char data[64 * 64 * 2];
    for (size_t i = 0; i < N_TENSORS; i++) {
        const tdef *t = &tensors[i];
        assert_int_equal(tp_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, data,
                                                   (size_t)t->nbytes), TP_OK);
    }
    assert_int_equal(tp_gguf_writer_write(w, path), TP_OK);
    tp_gguf_writer_destroy(w);
}

static void test_json_table(void **state)
{
    (void)state;
    char path[300], args[400];
    snprintf(path, sizeof path, "%s/m.gguf", tmpdir);
    write_model(path);
    snprintf(args, sizeof args, "inspect '%s' --json", path);
    assert_int_equal(run_cli(args), 0);
    cJSON *root = cJSON_Parse(out_text);
    assert_non_null(root);
    assert_int_equal(cJSON_GetObjectItem(root, "version")->valuedouble, 3);
    assert_int_equal(cJSON_GetObjectItem(root, "alignment")->valuedouble, 32);
    const cJSON *meta = cJSON_GetObjectItem(root, "metadata");
    assert_string_equal(cJSON_GetObjectItem(meta, "general.architecture")->valuestring, "llama");
    const cJSON *tok = cJSON_GetObjectItem(meta, "tokenizer.ggml.tokens");
    assert_int_equal(cJSON_GetObjectItem(tok, "length")->valuedouble, 20);
    const cJSON *arr = cJSON_GetObjectItem(root, "tensors");
    assert_int_equal(cJSON_GetArraySize(arr), N_TENSORS);
    uint64_t offset = 0, total = 0;
    for (int i = 0; i < N_TENSORS; i++) {
        const tdef *t = &tensors[i];
        const cJSON *o = cJSON_GetArrayItem(arr, i);
        assert_string_equal(cJSON_GetObjectItem(o, "name")->valuestring, t->name);
        assert_string_equal(cJSON_GetObjectItem(o, "type")->valuestring, t->type_name);
        const cJSON *shape = cJSON_GetObjectItem(o, "shape");
        assert_int_equal(cJSON_GetArraySize(shape), t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            assert_int_equal(cJSON_GetArrayItem(shape, (int)d)->valuedouble, t->ne[d]);
        assert_int_equal(cJSON_GetObjectItem(o, "bytes")->valuedouble, t->nbytes);
        assert_int_equal(cJSON_GetObjectItem(o, "offset")->valuedouble, offset);
        offset += (t->nbytes + 31) / 32 * 32;
        total += t->nbytes;
    }
    assert_int_equal(cJSON_GetObjectItem(root, "total_bytes")->valuedouble, total);
    const cJSON *per = cJSON_GetObjectItem(root, "bytes_per_type");
    assert_int_equal(cJSON_GetObjectItem(per, "F16")->valuedouble, 64 * 64 * 2);
    cJSON_Delete(root);
    snprintf(args, sizeof args, "inspect '%s'", path);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_text, "token_embd.weight"));
    assert_non_null(strstr(out_text, "[20] \"even\", \"odd\""));
    remove(path);
}

static void test_refusals(void **state)
{
    (void)state;
    char path[300], args[400];
    snprintf(path, sizeof path, "%s/bad.gguf", tmpdir);
    write_model(path);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 4, SEEK_SET), 0);
    fputc(4, f); /* version 4 */
    assert_int_equal(fclose(f), 0);
    snprintf(args, sizeof args, "inspect '%s'", path);
    assert_int_equal(run_cli(args), 3);
    char want[400];
    snprintf(want, sizeof want, "tensorplan: inspect: %s: offset 4: expected version 2 or 3, "
             "got 4\n", path);
    assert_string_equal(err_text, want);
    assert_string_equal(out_text, "");
    remove(path);
    snprintf(args, sizeof args, "inspect '%s' --json", path);
    assert_int_equal(run_cli(args), 1);
    assert_non_null(strstr(err_text, "tensorplan: inspect: "));
    assert_int_equal(run_cli("inspect"), 2);
    assert_int_equal(run_cli("inspect a.gguf --bogus"), 2);
}

/* Well-formed UTF-8 (shortest forms, no surrogates, at most U+10FFFF), restated from RFC 3629
 * here, and no raw control byte inside a string literal: what a strict JSON reader demands. */
static int strict_json_text(const unsigned char *p, size_t n)
{
    int in_string = 0, escaped = 0;
    for (size_t i = 0; i < n;) {
        const unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                   : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        if (len == 0 || i + len > n)
            return 0;
        uint32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        if (in_string && c < 0x20)
            return 0;
        if (escaped)
            escaped = 0;
        else if (in_string && c == '\\')
            escaped = 1;
        else if (c == '"')
            in_string = !in_string;
        i += len;
    }
    return !in_string;
}

/* Strings with invalid UTF-8, control bytes and a NUL (values), invalid UTF-8 in a key and a
 * tensor name: --json is still valid JSON, each ill-formed byte as U+FFFD (EF BF BD), control
 * bytes and the NUL as \u00XX escapes (docs/json-output.md). */
static void test_json_odd_strings(void **state)
{
    (void)state;
    char path[300], args[400];
    snprintf(path, sizeof path, "%s/odd.gguf", tmpdir);
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(tp_gguf_writer_add_string(w, "t.bad", "a\xff" "b\x01" "c\nd\"e"), TP_OK);
    assert_int_equal(tp_gguf_writer_add_string(w, "t.nul", "NU\x02L"), TP_OK);
    assert_int_equal(tp_gguf_writer_add_u32(w, "k.\xc3", 1), TP_OK);
    const char *arr[2] = {"x\xe2\x82", "ok"};
    assert_int_equal(tp_gguf_writer_add_strings(w, "t.arr", arr, 2), TP_OK);
    static unsigned char data[16];
    const int64_t ne[1] = {4};
    assert_int_equal(tp_gguf_writer_add_tensor(w, "w\xfe", 0, 1, ne, data, 16), TP_OK);
    void *mem = NULL;
    size_t size = 0;
    assert_int_equal(tp_gguf_writer_to_memory(w, &mem, &size), TP_OK);
    tp_gguf_writer_destroy(w);
    char *at = memmem(mem, size, "NU\x02L", 4);
    assert_non_null(at);
    at[2] = '\0';
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(mem, 1, size, f), size);
    fclose(f);
    free(mem);
    snprintf(args, sizeof args, "inspect '%s' --json", path);
    cli_result r = cli_run(tmpdir, args);
    assert_int_equal(r.rc, 0);
    if (!strict_json_text((const unsigned char *)r.out, r.out_len))
        fail_msg("not strict JSON: %s", r.out);
    cJSON *root = cJSON_Parse(r.out);
    assert_non_null(root);
    cJSON_Delete(root);
    static const char *const want[] = {
        "\"a\xef\xbf\xbd" "b\\u0001c\\u000ad\\\"e\"", "\"NU\\u0000L\"", "\"k.\xef\xbf\xbd\"",
        "\"x\xef\xbf\xbd\xef\xbf\xbd\"", "\"w\xef\xbf\xbd\"",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(r.out, want[i]))
            fail_msg("no %s in %s", want[i], r.out);
    cli_free(&r);
    remove(path);
}

/* One tensor of --check's file: its bytes, and the non-finite values the test put in (count
 * and first element, from the formats of docs/quant.md: a block whose scale is NaN or
 * infinite gives no finite element, since 0 * inf is NaN too). */
typedef struct ctensor {
    const char *name;
    uint32_t type;
    int64_t ne0;
    size_t nbytes;
    unsigned char data[600];
    uint64_t n_bad, first;
} ctensor;

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

/* Every type the reader takes: a NaN or an infinity in each float type and in the scale of
 * each block type; integers are never flagged, nor is a finite tensor. */
static void test_check_non_finite(void **state)
{
    (void)state;
    static ctensor t[] = {
        {"f32", 0, 16, 64, {0}, 2, 5},      {"f16", 1, 16, 32, {0}, 1, 7},
        {"bf16", 30, 16, 32, {0}, 1, 15},   {"q8_0", 8, 64, 68, {0}, 32, 32},
        {"q4_k", 12, 512, 288, {0}, 256, 0}, {"q8_1", 9, 32, 36, {0}, 32, 0},
        {"q8_k", 15, 256, 292, {0}, 256, 0}, {"f64", 28, 4, 32, {0}, 1, 2},
        {"i32", 26, 4, 16, {0}, 0, 0},      {"ok", 0, 4, 16, {0}, 0, 0},
    };
    enum { N = sizeof t / sizeof *t };
    const float nan = NAN, inf = INFINITY;
    memcpy(t[0].data + 5 * 4, &nan, 4);
    memcpy(t[0].data + 9 * 4, &inf, 4);
    put16(t[1].data + 7 * 2, 0x7C00);            /* f16 +inf */
    put16(t[2].data + 15 * 2, 0x7FC0);           /* bf16 NaN */
    put16(t[3].data + 34, 0x7E00);               /* block 1's f16 scale NaN */
    put16(t[4].data, 0x7C00);                    /* block 0's d +inf */
    put16(t[5].data, 0x3C00);                    /* d 1.0, s +inf */
    put16(t[5].data + 2, 0x7C00);
    memcpy(t[6].data, &nan, 4);                  /* f32 d NaN */
    const double minf = -INFINITY;
    memcpy(t[7].data + 2 * 8, &minf, 8);
    memset(t[8].data, 0xFF, 16);
    const float one = 1.0f;
    memcpy(t[9].data, &one, 4);
    char path[300], args[400];
    snprintf(path, sizeof path, "%s/check.gguf", tmpdir);
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(tp_gguf_writer_add_tensor(w, t[i].name, t[i].type, 1, &t[i].ne0,
                                                   t[i].data, t[i].nbytes), TP_OK);
    assert_int_equal(tp_gguf_writer_write(w, path), TP_OK);
    tp_gguf_writer_destroy(w);

    snprintf(args, sizeof args, "inspect '%s' --check --json", path);
    cli_result r = cli_run(tmpdir, args);
    assert_int_equal(r.rc, 3);
    assert_int_equal(cli_lines(r.err), 1);
    assert_non_null(strstr(r.err, "8 tensors hold NaN or infinity, the first 'f32'"));
    cJSON *root = cJSON_Parse(r.out);
    assert_non_null(root);
    const cJSON *list = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "check"), "non_finite");
    assert_true(cJSON_IsArray(list));
    const cJSON *e = list->child;
    for (size_t i = 0; i < N; i++) {
        if (t[i].n_bad == 0)
            continue;
        assert_non_null(e);
        assert_string_equal(cJSON_GetObjectItem(e, "name")->valuestring, t[i].name);
        if (cJSON_GetObjectItem(e, "non_finite")->valuedouble != (double)t[i].n_bad ||
            cJSON_GetObjectItem(e, "first")->valuedouble != (double)t[i].first)
            fail_msg("%s: %g at %g, want %llu at %llu", t[i].name,
                     cJSON_GetObjectItem(e, "non_finite")->valuedouble,
                     cJSON_GetObjectItem(e, "first")->valuedouble,
                     (unsigned long long)t[i].n_bad, (unsigned long long)t[i].first);
        e = e->next;
    }
    assert_null(e);
    cJSON_Delete(root);
    cli_free(&r);
    /* the text form says the same; without --check the weights are not read: exit 0 */
    snprintf(args, sizeof args, "inspect '%s' --check", path);
    r = cli_run(tmpdir, args);
    assert_int_equal(r.rc, 3);
    assert_non_null(strstr(r.out, "check      8 of 10 tensors hold NaN or infinity"));
    assert_non_null(strstr(r.out, "256 non-finite, the first at element 0"));
    cli_free(&r);
    snprintf(args, sizeof args, "inspect '%s'", path);
    r = cli_run(tmpdir, args);
    assert_int_equal(r.rc, 0);
    cli_free(&r);
    remove(path);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cli_remove_outputs(tmpdir);
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_table),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_json_odd_strings),
        cmocka_unit_test(test_check_non_finite),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
