/* tensorplan inspect: what a GGUF file holds (docs/gguf.md): header, metadata, tensor table
 * and bytes per type, as text or as one JSON object. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/utf8.h"
#include "tensorplan/gguf.h"

enum { SHOWN_ELEMS = 8, SHOWN_CHARS = 64 };

void tp_help_inspect(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_INSPECT, "FILE.gguf");
    fprintf(out,
        "\n"
        "Checks a GGUF file as the reader does (docs/gguf.md) and shows its version,\n"
        "alignment and data offset, every metadata key with its type and value (arrays with\n"
        "their length and first %d elements), the tensor table (name, type, shape in ne\n"
        "order, bytes, offset in the data section) and the bytes per tensor type with a\n"
        "total. Only the header is read, not the weights (but for --check).\n"
        "\n",
        SHOWN_ELEMS);
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_INSPECT), 0);
    fputs(
        "\n"
        "--json prints one object: version, alignment, data_offset, file_size, metadata,\n"
        "tensors [{name, type, shape, bytes, offset}], bytes_per_type, total_bytes, and\n"
        "with --check, check {tensors, non_finite [{name, non_finite, first}]}.\n"
        "\n"
        "exit codes:\n"
        "  0  shown\n"
        "  1  the file cannot be read\n"
        "  2  bad command line\n"
        "  3  the file is refused (the message names the byte offset and what was expected),\n"
        "     or with --check a tensor holds a NaN or an infinity\n"
        "\n"
        "example:\n"
        "  tensorplan inspect qwen2.5-0.5b-instruct-q8_0.gguf\n",
        out);
}

/* A string value, quoted, control bytes escaped, cut after SHOWN_CHARS bytes. */
static void print_str(tp_gguf_str s)
{
    putchar('"');
    for (size_t i = 0; i < s.len && i < SHOWN_CHARS; i++) {
        const unsigned char ch = (unsigned char)s.data[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            printf("\\x%02x", ch);
        else
            putchar(ch);
    }
    printf(s.len > SHOWN_CHARS ? "\"..." : "\"");
}

/* The shortest decimal that reads back as the same float or double. */
static void print_real(tp_gguf_vtype type, uint64_t bits)
{
    const double v = tp_gguf_bits_to_double(type, bits);
    char buf[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        const double back = strtod(buf, NULL);
        if (type == TP_GGUF_F32 ? (float)back == (float)v : back == v)
            break;
    }
    fputs(buf, stdout);
}

static void print_number(tp_gguf_vtype type, uint64_t bits)
{
    switch (type) {
    case TP_GGUF_U64: printf("%" PRIu64, bits); break;
    case TP_GGUF_I64: printf("%" PRId64, (int64_t)bits); break;
    case TP_GGUF_BOOL: printf("%s", bits ? "true" : "false"); break;
    case TP_GGUF_F32: case TP_GGUF_F64: print_real(type, bits); break;
    default: printf("%.0f", tp_gguf_bits_to_double(type, bits)); break;
    }
}

static void print_value(const tp_gguf_kv *kv)
{
    if (kv->type == TP_GGUF_STRING) {
        print_str(kv->string);
        return;
    }
    if (kv->type != TP_GGUF_ARRAY) {
        print_number(kv->type, kv->bits);
        return;
    }
    const tp_gguf_array *a = &kv->array;
    printf("[%zu]", a->count);
    for (size_t i = 0; i < a->count && i < SHOWN_ELEMS; i++) {
        fputs(i ? ", " : " ", stdout);
        if (a->type == TP_GGUF_STRING)
            print_str(tp_gguf_array_string(a, i));
        else
            print_number(a->type, tp_gguf_array_bits(a, i));
    }
    if (a->count > SHOWN_ELEMS)
        fputs(", ...", stdout);
}

/* Bytes per tensor type id (ids below 64; the reader accepts no other). */
typedef struct type_bytes {
    uint64_t bytes[64];
    uint64_t total;
} type_bytes;

static void count_bytes(const tp_gguf *g, type_bytes *tb)
{
    memset(tb, 0, sizeof *tb);
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        tb->bytes[t->type % 64] += t->nbytes;
        tb->total += t->nbytes;
    }
}

static void print_text(const tp_gguf *g)
{
    printf("file       %s\nversion    %u\nalignment  %zu\n", tp_gguf_name(g),
           (unsigned)tp_gguf_version(g), tp_gguf_alignment(g));
    printf("data       at offset %zu of %zu bytes\n", tp_gguf_data_offset(g), tp_gguf_file_size(g));
    printf("metadata   %zu keys\n", tp_gguf_kv_count(g));
    for (size_t i = 0; i < tp_gguf_kv_count(g); i++) {
        const tp_gguf_kv *kv = tp_gguf_kv_at(g, i);
        char type[32];
        if (kv->type == TP_GGUF_ARRAY)
            snprintf(type, sizeof type, "%s[]", tp_gguf_vtype_name(kv->array.type));
        else
            snprintf(type, sizeof type, "%s", tp_gguf_vtype_name(kv->type));
        printf("  %-40s %-9s ", kv->key, type);
        print_value(kv);
        putchar('\n');
    }
    printf("tensors    %zu\n", tp_gguf_tensor_count(g));
    printf("  %-40s %-6s %-28s %14s %14s\n", "name", "type", "shape", "bytes", "offset");
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        char shape[128] = "[";
        for (uint32_t d = 0; d < t->n_dims; d++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%" PRId64,
                     d ? ", " : "", t->ne[d]);
        strcat(shape, "]");
        printf("  %-40s %-6s %-28s %14zu %14" PRIu64 "\n", t->name, tp_gguf_type_name(t->type),
               shape, t->nbytes, t->offset);
    }
    type_bytes tb;
    count_bytes(g, &tb);
    printf("bytes per type\n");
    for (uint32_t ty = 0; ty < 64; ty++)
        if (tb.bytes[ty] > 0)
            printf("  %-8s %14" PRIu64 "\n", tp_gguf_type_name(ty), tb.bytes[ty]);
    printf("  %-8s %14" PRIu64 "\n", "total", tb.total);
}

/* LEN bytes as a JSON string that is always valid: each ill-formed UTF-8 byte as U+FFFD,
 * quotes, backslashes and control bytes (NUL too) escaped; a raw cJSON item. */
static cJSON *json_text(const char *data, size_t len)
{
    char *clean = NULL;
    size_t n = 0;
    if (tp_utf8_sanitize(data, len, &clean, &n) != TP_OK)
        return NULL;
    char *lit = malloc(6 * n + 3); /* \u00XX at most per byte, two quotes, NUL */
    if (!lit) {
        free(clean);
        return NULL;
    }
    size_t k = 0;
    lit[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        const unsigned char ch = (unsigned char)clean[i];
        if (ch == '"' || ch == '\\') {
            lit[k++] = '\\';
            lit[k++] = (char)ch;
        } else if (ch < 0x20) {
            k += (size_t)snprintf(lit + k, 7, "\\u%04x", ch);
        } else {
            lit[k++] = (char)ch;
        }
    }
    lit[k++] = '"';
    lit[k] = '\0';
    cJSON *v = cJSON_CreateRaw(lit);
    free(lit);
    free(clean);
    return v;
}

static cJSON *json_str(tp_gguf_str s)
{
    return json_text(s.data, s.len);
}

/* A member name (no NUL: the reader refuses one in a key) as valid UTF-8; cJSON escapes
 * its control bytes. The caller frees it. */
static char *json_name(const char *name)
{
    char *clean = NULL;
    size_t n = 0;
    if (tp_utf8_sanitize(name, strlen(name), &clean, &n) != TP_OK)
        return NULL;
    char *z = malloc(n + 1); /* the sanitized copy is counted, not NUL-terminated */
    if (z) {
        memcpy(z, clean, n);
        z[n] = '\0';
    }
    free(clean);
    return z;
}

static cJSON *json_scalar(tp_gguf_vtype type, uint64_t bits)
{
    if (type == TP_GGUF_BOOL)
        return cJSON_CreateBool(bits != 0);
    return cJSON_CreateNumber(tp_gguf_bits_to_double(type, bits));
}

/* Scalars and strings as themselves; an array as {element_type, length, first: [...]}. */
static cJSON *json_value(const tp_gguf_kv *kv)
{
    if (kv->type == TP_GGUF_STRING)
        return json_str(kv->string);
    if (kv->type != TP_GGUF_ARRAY)
        return json_scalar(kv->type, kv->bits);
    const tp_gguf_array *a = &kv->array;
    cJSON *o = cJSON_CreateObject(), *first = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "element_type", tp_gguf_vtype_name(a->type));
    cJSON_AddNumberToObject(o, "length", (double)a->count);
    for (size_t i = 0; i < a->count && i < SHOWN_ELEMS; i++)
        cJSON_AddItemToArray(first, a->type == TP_GGUF_STRING
                                        ? json_str(tp_gguf_array_string(a, i))
                                        : json_scalar(a->type, tp_gguf_array_bits(a, i)));
    cJSON_AddItemToObject(o, "first", first);
    return o;
}

static cJSON *json_tensors(const tp_gguf *g)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray();
        cJSON_AddItemToObject(o, "name", json_text(t->name, t->name_len));
        cJSON_AddStringToObject(o, "type", tp_gguf_type_name(t->type));
        for (uint32_t d = 0; d < t->n_dims; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->ne[d]));
        cJSON_AddItemToObject(o, "shape", shape);
        cJSON_AddNumberToObject(o, "bytes", (double)t->nbytes);
        cJSON_AddNumberToObject(o, "offset", (double)t->offset);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* One tensor's non-finite values found by --check. */
typedef struct bad_tensor {
    const tp_gguf_tensor *t;
    uint64_t n_bad, first;
} bad_tensor;

/* --check: every tensor scanned; the ones holding NaN or infinity into *bad (malloc'ed). */
static int check_tensors(const tp_gguf *g, bad_tensor **bad, size_t *n_bad)
{
    *bad = calloc(tp_gguf_tensor_count(g) + 1, sizeof **bad);
    *n_bad = 0;
    if (!*bad) {
        tp_cli_error("out of memory");
        return TP_EXIT_ERROR;
    }
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        bad_tensor b = {tp_gguf_tensor_at(g, i), 0, 0};
        if (tp_gguf_tensor_check_finite(b.t, &b.n_bad, &b.first) != TP_OK) {
            tp_cli_error("%s: %s", tp_gguf_name(g), tp_last_error());
            return TP_EXIT_ERROR;
        }
        if (b.n_bad)
            (*bad)[(*n_bad)++] = b;
    }
    return TP_EXIT_OK;
}

static void print_check(const tp_gguf *g, const bad_tensor *bad, size_t n_bad)
{
    printf("check      %zu of %zu tensors hold NaN or infinity\n", n_bad,
           tp_gguf_tensor_count(g));
    for (size_t i = 0; i < n_bad; i++)
        printf("  %-40s %14" PRIu64 " non-finite, the first at element %" PRIu64 "\n",
               bad[i].t->name, bad[i].n_bad, bad[i].first);
}

static cJSON *json_check(const tp_gguf *g, const bad_tensor *bad, size_t n_bad)
{
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    cJSON_AddNumberToObject(o, "tensors", (double)tp_gguf_tensor_count(g));
    for (size_t i = 0; i < n_bad; i++) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddItemToObject(b, "name", json_text(bad[i].t->name, bad[i].t->name_len));
        cJSON_AddNumberToObject(b, "non_finite", (double)bad[i].n_bad);
        cJSON_AddNumberToObject(b, "first", (double)bad[i].first);
        cJSON_AddItemToArray(arr, b);
    }
    cJSON_AddItemToObject(o, "non_finite", arr);
    return o;
}

static int print_json(const tp_gguf *g, const bad_tensor *bad, size_t n_bad, int check)
{
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject(), *per = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "file", json_text(tp_gguf_name(g), strlen(tp_gguf_name(g))));
    cJSON_AddNumberToObject(root, "version", tp_gguf_version(g));
    cJSON_AddNumberToObject(root, "alignment", (double)tp_gguf_alignment(g));
    cJSON_AddNumberToObject(root, "data_offset", (double)tp_gguf_data_offset(g));
    cJSON_AddNumberToObject(root, "file_size", (double)tp_gguf_file_size(g));
    for (size_t i = 0; i < tp_gguf_kv_count(g); i++) {
        char *name = json_name(tp_gguf_key(g, i));
        cJSON_AddItemToObject(meta, name ? name : "", json_value(tp_gguf_kv_at(g, i)));
        free(name);
    }
    cJSON_AddItemToObject(root, "metadata", meta);
    cJSON_AddItemToObject(root, "tensors", json_tensors(g));
    type_bytes tb;
    count_bytes(g, &tb);
    for (uint32_t ty = 0; ty < 64; ty++)
        if (tb.bytes[ty] > 0)
            cJSON_AddNumberToObject(per, tp_gguf_type_name(ty), (double)tb.bytes[ty]);
    cJSON_AddItemToObject(root, "bytes_per_type", per);
    cJSON_AddNumberToObject(root, "total_bytes", (double)tb.total);
    if (check)
        cJSON_AddItemToObject(root, "check", json_check(g, bad, n_bad));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) {
        tp_cli_error("out of memory");
        return TP_EXIT_ERROR;
    }
    puts(text);
    cJSON_free(text);
    return TP_EXIT_OK;
}

int tp_cmd_inspect(int argc, char **argv)
{
    tp_cli_args o;
    if (tp_cli_parse(TP_CMD_INSPECT, argc, argv, &o) != 0)
        return TP_EXIT_USAGE;
    const char *path = o.pos[0];
    const int json = tp_cli_given(&o, TP_OPT_JSON), check = tp_cli_given(&o, TP_OPT_CHECK);
    if (!path) {
        tp_cli_error("FILE.gguf is missing (see 'tensorplan help inspect')");
        return TP_EXIT_USAGE;
    }
    tp_gguf *g = NULL;
    const tp_status st = tp_gguf_open(path, &g);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return tp_cli_exit_for(st);
    }
    bad_tensor *bad = NULL;
    size_t n_bad = 0;
    int rc = check ? check_tensors(g, &bad, &n_bad) : TP_EXIT_OK;
    if (rc == TP_EXIT_OK && json) {
        rc = print_json(g, bad, n_bad, check);
    } else if (rc == TP_EXIT_OK) {
        print_text(g);
        if (check)
            print_check(g, bad, n_bad);
    }
    if (rc == TP_EXIT_OK && n_bad) {
        fflush(stdout);
        tp_cli_error("%s: %zu tensors hold NaN or infinity, the first '%s' (%" PRIu64 " values, "
                     "the first at element %" PRIu64 ")", path, n_bad, bad[0].t->name,
                     bad[0].n_bad, bad[0].first);
        rc = TP_EXIT_BAD_INPUT;
    }
    free(bad);
    tp_gguf_close(g);
    return rc;
}
