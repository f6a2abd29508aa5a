/* Graph JSON ("tensorplan-graph", version 1): reader and writer.
 *
 * The reader never trusts the text: every value is type- and range-checked before it reaches
 * the graph, and every refusal names the JSON path and what was expected there. */
#include "tensorplan/graph_io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/input_file.h"
#include "common/grow.h"
#include "tensorplan/ops.h"
#include "common/text.h"

#define FORMAT_NAME "tensorplan-graph"
#define FORMAT_VERSION 1
/* Integers beyond 2^53 cannot come through a JSON number (a double) exactly. */
#define MAX_EXACT_INT 9007199254740992.0

typedef struct rctx {
    const char *source;
} rctx;

static tp_status bad(const rctx *r, const char *path, const char *fmt, ...) TP_PRINTF(3, 4);

static tp_status bad(const rctx *r, const char *path, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (path && path[0])
        return tp_fail(TP_ERR_INVALID, "%s: %s: %s", r->source, path, msg);
    return tp_fail(TP_ERR_INVALID, "%s: %s", r->source, msg);
}

/* What a value is, for "got ..." in messages; numbers and short strings are shown. */
static const char *describe(const cJSON *v, char *buf, size_t size)
{
    if (!v)
        return "nothing";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsBool(v))
        return cJSON_IsTrue(v) ? "true" : "false";
    if (cJSON_IsNumber(v)) {
        snprintf(buf, size, "%.17g", v->valuedouble);
        return buf;
    }
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring ? v->valuestring : "";
        size_t o = 0;
        buf[o++] = '"';
        for (; *s && o + 5 < size; s++)
            buf[o++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
        if (*s && o + 4 < size) {
            memcpy(buf + o, "...", 3);
            o += 3;
        }
        buf[o++] = '"';
        buf[o] = '\0';
        return buf;
    }
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "an invalid value";
}

/* An integer in [lo, hi]; `what` completes "expected ...". */
static tp_status get_int(const rctx *r, const cJSON *v, const char *path, double lo, double hi,
                         const char *what, int64_t *out)
{
    char buf[96];
    if (cJSON_IsNumber(v) && hi == MAX_EXACT_INT && v->valuedouble > hi)
        return bad(r, path, "expected %s, got %s, above the limit 2^53 = 9007199254740992 "
                   "(larger integers cannot be read exactly)", what,
                   describe(v, buf, sizeof buf));
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
        v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < lo || v->valuedouble > hi)
        return bad(r, path, "expected %s, got %s", what, describe(v, buf, sizeof buf));
    *out = (int64_t)v->valuedouble;
    return TP_OK;
}

static tp_status get_string(const rctx *r, const cJSON *v, const char *path, char *dst,
                            size_t size, const char *what)
{
    char buf[96];
    if (!cJSON_IsString(v) || !v->valuestring)
        return bad(r, path, "expected %s, got %s", what, describe(v, buf, sizeof buf));
    size_t n = strlen(v->valuestring);
    if (n >= size)
        return bad(r, path, "expected %s of at most %zu bytes, got %zu bytes", what, size - 1, n);
    memcpy(dst, v->valuestring, n + 1);
    return TP_OK;
}

static tp_status get_float(const rctx *r, const cJSON *v, const char *path, float *out)
{
    char buf[96];
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > FLT_MAX)
        return bad(r, path, "expected a finite number, got %s", describe(v, buf, sizeof buf));
    *out = (float)v->valuedouble;
    return TP_OK;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* JSON allows repeated keys; a graph file must not, or one value would be silently lost.
 * Sorted, not compared pairwise: an object with many keys must not take quadratic time. */
static tp_status no_duplicate_keys(const rctx *r, const cJSON *obj, const char *path)
{
    size_t n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        n += c->string != NULL;
    if (n < 2)
        return TP_OK;
    const char **keys = malloc(n * sizeof *keys);
    if (!keys)
        return tp_fail(TP_ERR_NOMEM, "out of memory reading a graph");
    n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        if (c->string)
            keys[n++] = c->string;
    qsort(keys, n, sizeof *keys, cmp_key);
    tp_status st = TP_OK;
    for (size_t i = 1; i < n && st == TP_OK; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0)
            st = bad(r, path, "expected each key once, got \"%s\" twice", keys[i]);
    free(keys);
    return st;
}

static int key_in(const char *key, const char *const *keys)
{
    for (; *keys; keys++)
        if (strcmp(key, *keys) == 0)
            return 1;
    return 0;
}

static const char *const node_keys[] = {"id",     "name",      "op",       "shape", "dtype",
                                        "backend", "src",      "layer",    "eps",   "rope_base",
                                        "n_head", "n_head_kv", "head_dim", "weight", "bias",
                                        "rope_mode", "rope_freq_scale", "rope_ext_factor",
                                        "rope_attn_factor", "rope_n_ctx_orig", NULL};
static const char *const top_keys[] = {"format", "version", "model",   "kind",
                                       "n_ctx",  "inputs",  "outputs", "nodes", NULL};

/* Unknown keys of obj as an unformatted JSON object text (malloc'd), or NULL when none. */
static tp_status collect_extra(const cJSON *obj, const char *const *known, char **out)
{
    *out = NULL;
    cJSON *extra = NULL;
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (!c->string || key_in(c->string, known))
            continue;
        if (!extra && !(extra = cJSON_CreateObject()))
            return tp_fail(TP_ERR_NOMEM, "out of memory reading a graph");
        cJSON *dup = cJSON_Duplicate(c, 1);
        if (!dup || !cJSON_AddItemToObject(extra, c->string, dup)) {
            cJSON_Delete(dup);
            cJSON_Delete(extra);
            return tp_fail(TP_ERR_NOMEM, "out of memory reading a graph");
        }
    }
    if (!extra)
        return TP_OK;
    char *text = cJSON_PrintUnformatted(extra);
    cJSON_Delete(extra);
    if (!text)
        return tp_fail(TP_ERR_NOMEM, "out of memory reading a graph");
    size_t n = strlen(text);
    *out = malloc(n + 1);
    if (*out)
        memcpy(*out, text, n + 1);
    cJSON_free(text);
    return *out ? TP_OK : tp_fail(TP_ERR_NOMEM, "out of memory reading a graph");
}

/* The op names for a message; built per call so concurrent readers share nothing. */
static const char *op_list(char *list, size_t size)
{
    size_t o = 0;
    list[0] = '\0';
    for (int i = 0; i < TP_OP_COUNT && o < size; i++)
        o += (size_t)snprintf(list + o, size - o, "%s%s", i ? ", " : "", tp_op_name((tp_op)i));
    return list;
}

/* The optional rope keys (docs/graph.md); absent ones keep tp_node_init's neutral values. */
static tp_status read_rope_params(const rctx *r, const cJSON *obj, size_t i, tp_node *nd)
{
    char path[96], buf[96];
    const cJSON *it;
    int64_t v = 0;
#define FIELD(key) (snprintf(path, sizeof path, "nodes[%zu].%s", i, key), \
                    cJSON_GetObjectItemCaseSensitive(obj, key))
    if ((it = FIELD("rope_mode"))) {
        if (cJSON_IsString(it) && strcmp(it->valuestring, "neox") == 0)
            nd->p.rope_mode = TP_ROPE_NEOX;
        else if (cJSON_IsString(it) && strcmp(it->valuestring, "norm") == 0)
            nd->p.rope_mode = TP_ROPE_NORM;
        else
            return bad(r, path, "expected a rope mode (neox or norm), got %s",
                       describe(it, buf, sizeof buf));
    }
    if ((it = FIELD("rope_freq_scale")))
        TP_TRY(get_float(r, it, path, &nd->p.rope_freq_scale));
    if ((it = FIELD("rope_ext_factor")))
        TP_TRY(get_float(r, it, path, &nd->p.rope_ext_factor));
    if ((it = FIELD("rope_attn_factor")))
        TP_TRY(get_float(r, it, path, &nd->p.rope_attn_factor));
    if ((it = FIELD("rope_n_ctx_orig"))) {
        TP_TRY(get_int(r, it, path, 0, INT_MAX, "an integer >= 0", &v));
        nd->p.rope_n_ctx_orig = (int)v;
    }
#undef FIELD
    return TP_OK;
}

static tp_status read_node(const rctx *r, const cJSON *obj, size_t i, tp_node *nd)
{
    char path[96], buf[96];
    int64_t v = 0;
    *nd = tp_node_init(TP_OP_INPUT, NULL);
    snprintf(path, sizeof path, "nodes[%zu]", i);
    if (!cJSON_IsObject(obj))
        return bad(r, path, "expected a node object, got %s", describe(obj, buf, sizeof buf));
    TP_TRY(no_duplicate_keys(r, obj, path));

#define FIELD(key) (snprintf(path, sizeof path, "nodes[%zu].%s", i, key), \
                    cJSON_GetObjectItemCaseSensitive(obj, key))
    const cJSON *it = FIELD("id");
    char what[96];
    snprintf(what, sizeof what, "the node's index %zu", i);
    if (!cJSON_IsNumber(it) || it->valuedouble != (double)i)
        return bad(r, path, "expected %s, got %s", what, describe(it, buf, sizeof buf));

    TP_TRY(get_string(r, FIELD("name"), path, nd->name, sizeof nd->name, "a name"));

    it = FIELD("op");
    if (!cJSON_IsString(it) || tp_op_from_name(it->valuestring, &nd->op) != TP_OK) {
        char ops[256];
        return bad(r, path, "expected an op (%s), got %s", op_list(ops, sizeof ops),
                   describe(it, buf, sizeof buf));
    }

    it = FIELD("shape");
    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) < 1 || cJSON_GetArraySize(it) > 4)
        return bad(r, path, "expected an array of 1 to 4 extents, got %s",
                   cJSON_IsArray(it) ? "an array of another length"
                                     : describe(it, buf, sizeof buf));
    {
        int d = 0;
        for (const cJSON *e = it->child; e; e = e->next, d++) {
            snprintf(path, sizeof path, "nodes[%zu].shape[%d]", i, d);
            TP_TRY(get_int(r, e, path, 1, MAX_EXACT_INT, "a positive integer", &v));
            nd->shape[d] = v;
        }
    }

    it = FIELD("dtype");
    if (!cJSON_IsString(it) || tp_dtype_from_name(it->valuestring, &nd->dtype) != TP_OK)
        return bad(r, path, "expected a dtype (f32, f16, i32, q8_0), got %s",
                   describe(it, buf, sizeof buf));

    it = FIELD("backend");
    if (it && (!cJSON_IsString(it) || tp_backend_from_name(it->valuestring, &nd->backend) != TP_OK))
        return bad(r, path, "expected a backend (%s, %s, %s, %s or unset), got %s",
                   tp_backend_name(0), tp_backend_name(1), tp_backend_name(2),
                   tp_backend_name(3), describe(it, buf, sizeof buf));

    it = FIELD("src");
    if (!cJSON_IsArray(it))
        return bad(r, path, "expected an array of source node ids, got %s",
                   describe(it, buf, sizeof buf));
    if (cJSON_GetArraySize(it) > TP_MAX_SRC)
        return bad(r, path, "expected at most %d sources, got %d", TP_MAX_SRC,
                   cJSON_GetArraySize(it));
    snprintf(what, sizeof what, "a node id smaller than %zu", i);
    for (const cJSON *e = it->child; e; e = e->next, nd->n_src++) {
        snprintf(path, sizeof path, "nodes[%zu].src[%zu]", i, nd->n_src);
        /* Sources must precede their node: that keeps id order a topological order (and
         * rules out cycles) before any other check runs. */
        TP_TRY(get_int(r, e, path, 0, (double)i - 1, what, &v));
        nd->src[nd->n_src] = (size_t)v;
    }

    if ((it = FIELD("layer"))) {
        TP_TRY(get_int(r, it, path, -1, INT_MAX, "a layer index (an integer >= 0, or -1 for none)",
                    &v));
        nd->p.layer = (int)v;
    } else if (tp_op_uses_kv(nd->op)) {
        return bad(r, path, "expected a layer index (required on op %s), got nothing",
                   tp_op_name(nd->op));
    }
    if ((it = FIELD("eps")))
        TP_TRY(get_float(r, it, path, &nd->p.eps));
    if ((it = FIELD("rope_base")))
        TP_TRY(get_float(r, it, path, &nd->p.rope_base));
    static const char *const int_keys[] = {"n_head", "n_head_kv", "head_dim"};
    int *int_dst[] = {&nd->p.n_head, &nd->p.n_head_kv, &nd->p.head_dim};
    for (int k = 0; k < 3; k++) {
        if ((it = FIELD(int_keys[k]))) {
            TP_TRY(get_int(r, it, path, 0, INT_MAX, "an integer >= 0", &v));
            *int_dst[k] = (int)v;
        }
    }
    if ((it = FIELD("weight")))
        TP_TRY(get_string(r, it, path, nd->p.weight, sizeof nd->p.weight, "a weight name"));
    if ((it = FIELD("bias")))
        TP_TRY(get_string(r, it, path, nd->p.bias, sizeof nd->p.bias, "a bias name"));
#undef FIELD
    TP_TRY(read_rope_params(r, obj, i, nd));
    return collect_extra(obj, node_keys, &nd->extra);
}

static tp_status read_id_list(const rctx *r, const cJSON *root, const char *key, size_t n_nodes,
                              tp_graph *g, int outputs)
{
    char path[64], buf[96], what[96];
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsArray(arr))
        return bad(r, key, "expected an array of node ids, got %s", describe(arr, buf, sizeof buf));
    snprintf(what, sizeof what, "a node id smaller than %zu (the node count)", n_nodes);
    /* Outputs are a set: a flag per node finds a repeat in constant time (a search of the
     * list so far made a file of many outputs quadratic). */
    unsigned char *listed = outputs ? calloc(n_nodes ? n_nodes : 1, 1) : NULL;
    if (outputs && !listed)
        return tp_fail(TP_ERR_NOMEM, "out of memory reading a graph");
    size_t **list = outputs ? &g->outputs : &g->inputs;
    size_t *count = outputs ? &g->n_outputs : &g->n_inputs;
    size_t *cap = outputs ? &g->cap_outputs : &g->cap_inputs;
    tp_status st = TP_OK;
    size_t k = 0;
    for (const cJSON *e = arr->child; e && st == TP_OK; e = e->next, k++) {
        int64_t v = 0;
        snprintf(path, sizeof path, "%s[%zu]", key, k);
        st = get_int(r, e, path, 0, (double)n_nodes - 1, what, &v);
        if (st != TP_OK)
            break;
        if (outputs) {
            if (listed[v]) {
                st = bad(r, path, "expected a distinct node id, got %lld again", (long long)v);
                break;
            }
            listed[v] = 1;
        }
        st = TP_GROW(list, cap, *count + 1);
        if (st != TP_OK)
            break;
        (*list)[(*count)++] = (size_t)v;
    }
    free(listed);
    return st;
}

static tp_status read_graph(const rctx *r, const cJSON *root, tp_graph *g)
{
    char buf[96];
    if (!cJSON_IsObject(root))
        return bad(r, NULL, "expected a JSON object at the top level, got %s",
                   describe(root, buf, sizeof buf));
    TP_TRY(no_duplicate_keys(r, root, "(top level)"));
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(it) || strcmp(it->valuestring, FORMAT_NAME) != 0)
        return bad(r, "format", "expected \"" FORMAT_NAME "\", got %s",
                   describe(it, buf, sizeof buf));
    it = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsNumber(it) || it->valuedouble != FORMAT_VERSION)
        return bad(r, "version", "expected %d, got %s", FORMAT_VERSION,
                   describe(it, buf, sizeof buf));
    if ((it = cJSON_GetObjectItemCaseSensitive(root, "model")))
        TP_TRY(get_string(r, it, "model", g->model, sizeof g->model, "a model name"));
    if ((it = cJSON_GetObjectItemCaseSensitive(root, "kind"))) {
        if (!cJSON_IsString(it) ||
            (strcmp(it->valuestring, "prefill") != 0 && strcmp(it->valuestring, "decode") != 0))
            return bad(r, "kind", "expected \"prefill\" or \"decode\", got %s",
                       describe(it, buf, sizeof buf));
        snprintf(g->kind, sizeof g->kind, "%s", it->valuestring);
    }
    if ((it = cJSON_GetObjectItemCaseSensitive(root, "n_ctx"))) {
        int64_t v = 0;
        TP_TRY(get_int(r, it, "n_ctx", 1, MAX_EXACT_INT, "a positive context length", &v));
        g->n_ctx = v;
    }

    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(root, "nodes");
    if (!cJSON_IsArray(nodes))
        return bad(r, "nodes", "expected an array of nodes, got %s",
                   describe(nodes, buf, sizeof buf));
    size_t i = 0;
    for (const cJSON *e = nodes->child; e; e = e->next, i++) {
        tp_node nd;
        tp_status st = read_node(r, e, i, &nd);
        if (st == TP_OK)
            st = tp_graph_add_node(g, &nd, NULL);
        free(nd.extra);
        if (st != TP_OK)
            return st;
    }
    TP_TRY(read_id_list(r, root, "inputs", g->n_nodes, g, 0));
    TP_TRY(read_id_list(r, root, "outputs", g->n_nodes, g, 1));
    TP_TRY(collect_extra(root, top_keys, &g->extra));

    size_t bad_node;
    char where[32];
    tp_status st = tp_graph_validate_detail(g, &bad_node, where, sizeof where);
    if (st != TP_OK) {
        char msg[1024], path[96];
        snprintf(msg, sizeof msg, "%s", tp_last_error());
        if (bad_node != SIZE_MAX)
            snprintf(path, sizeof path, "nodes[%zu]%s%s", bad_node, where[0] ? "." : "", where);
        else
            snprintf(path, sizeof path, "%s", where);
        return bad(r, path, "%s", msg);
    }
    return TP_OK;
}

tp_status tp_graph_parse_json(const char *text, size_t len, const char *source, tp_graph **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "tp_graph_parse_json: NULL output");
    *out = NULL;
    rctx r = {source ? source : "<graph>"};
    if (!text)
        return tp_fail(TP_ERR_INVALID, "%s: no text", r.source);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    const char *stop = end;
    if (root) {
        /* cJSON stops after the first value; anything but whitespace after it is an error. */
        while (stop && stop < text + len &&
               (*stop == ' ' || *stop == '\t' || *stop == '\n' || *stop == '\r'))
            stop++;
    }
    if (!root || (stop && stop < text + len)) {
        const char *at = (stop && stop >= text && stop <= text + len) ? stop : text + len;
        if (!root && len > 0 && at == text + len - 1) {
            /* cJSON reports an error past the end at the last byte, so a file cut after
             * '"n_ctx":' would read "got ':'". Parsing again with one more byte (a newline)
             * tells the two apart: a real error stays at that byte, the end moves with it. */
            char *copy = malloc(len + 1);
            if (copy) {
                memcpy(copy, text, len);
                copy[len] = '\n';
                const char *end2 = NULL;
                cJSON *again = cJSON_ParseWithLengthOpts(copy, len + 1, &end2, 0);
                if (!again && end2 == copy + len)
                    at = text + len;
                cJSON_Delete(again);
                free(copy);
            }
        }
        size_t line = 1, col = 1;
        for (const char *p = text; p < at; p++) {
            if (*p == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        char near[24];
        size_t k = 0;
        for (const char *p = at; p < text + len && k < 16 && *p != '\n'; p++)
            near[k++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
        near[k] = '\0';
        cJSON_Delete(root);
        if (root)
            return tp_fail(TP_ERR_INVALID, "%s: line %zu, column %zu: expected the end of the "
                           "text after the JSON value, got '%s'", r.source, line, col, near);
        const char *rest = at;
        while (rest < text + len &&
               (*rest == ' ' || *rest == '\t' || *rest == '\n' || *rest == '\r'))
            rest++;
        /* When cJSON stops at a string it could not finish (at its opening quote or just
         * after it) and the text ends inside that string, the file is truncated, which
         * "expected valid JSON, got 'n_head'" would not say. */
        const char *open_quote = NULL;
        for (const char *p = text; p < text + len; p++) {
            if (open_quote && *p == '\\')
                p++;
            else if (*p == '"')
                open_quote = open_quote ? NULL : p;
        }
        int open_string = open_quote && (at == open_quote || at == open_quote + 1);
        if (rest >= text + len || open_string)
            return tp_fail(TP_ERR_INVALID, "%s: line %zu, column %zu: expected more JSON, got "
                           "the end of the text%s", r.source, line, col,
                           open_string ? " inside a string" : "");
        return tp_fail(TP_ERR_INVALID, "%s: line %zu, column %zu: expected valid JSON, got "
                       "'%s'", r.source, line, col, near);
    }
    tp_graph *g = NULL;
    tp_status st = tp_graph_create(&g);
    if (st == TP_OK)
        st = read_graph(&r, root, g);
    cJSON_Delete(root);
    if (st != TP_OK) {
        tp_graph_destroy(g);
        return st;
    }
    *out = g;
    return TP_OK;
}

tp_status tp_graph_load_json(const char *path, tp_graph **out)
{
    if (!path || !out)
        return tp_fail(TP_ERR_INVALID, "tp_graph_load_json: NULL argument");
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    TP_TRY(tp_input_read_file(path, &text, &len));
    tp_status st = tp_graph_parse_json(text, len, path, out);
    free(text);
    return st;
}

/* ---- writer ---- */

/* Each member of the extra object, led by sep, after the members the format defines. */
static tp_status write_extra(tp_gtext *t, const char *extra, const char *const *known,
                             const char *owner, const char *sep)
{
    if (!extra)
        return TP_OK;
    cJSON *obj = cJSON_Parse(extra);
    if (!cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        return tp_fail(TP_ERR_INVALID, "%s: extra is not a JSON object text", owner);
    }
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (!c->string || key_in(c->string, known)) {
            tp_status st = tp_fail(TP_ERR_INVALID, "%s: extra key \"%s\" is a key of the format",
                                   owner, c->string ? c->string : "");
            cJSON_Delete(obj);
            return st;
        }
        char *v = cJSON_PrintUnformatted(c);
        if (!v) {
            cJSON_Delete(obj);
            return tp_fail(TP_ERR_NOMEM, "out of memory writing a graph");
        }
        tp_gtext_puts(t, sep);
        tp_gtext_json_string(t, c->string);
        tp_gtext_puts(t, ": ");
        tp_gtext_puts(t, v);
        cJSON_free(v);
    }
    cJSON_Delete(obj);
    return TP_OK;
}

static void write_ids(tp_gtext *t, const size_t *ids, size_t n)
{
    tp_gtext_puts(t, "[");
    for (size_t i = 0; i < n; i++)
        tp_gtext_printf(t, "%s%zu", i ? ", " : "", ids[i]);
    tp_gtext_puts(t, "]");
}

/* The rope keys that differ from tp_node_init's neutral values. */
static void write_rope_params(tp_gtext *t, const tp_node_params *p)
{
    if (p->rope_mode == TP_ROPE_NORM)
        tp_gtext_puts(t, ", \"rope_mode\": \"norm\"");
    if (p->rope_freq_scale != 1.0f) {
        tp_gtext_puts(t, ", \"rope_freq_scale\": ");
        tp_gtext_float(t, p->rope_freq_scale);
    }
    if (p->rope_ext_factor != 0.0f) {
        tp_gtext_puts(t, ", \"rope_ext_factor\": ");
        tp_gtext_float(t, p->rope_ext_factor);
    }
    if (p->rope_attn_factor != 1.0f) {
        tp_gtext_puts(t, ", \"rope_attn_factor\": ");
        tp_gtext_float(t, p->rope_attn_factor);
    }
    if (p->rope_n_ctx_orig)
        tp_gtext_printf(t, ", \"rope_n_ctx_orig\": %d", p->rope_n_ctx_orig);
}

static tp_status write_node(tp_gtext *t, const tp_node *nd)
{
    char owner[128];
    snprintf(owner, sizeof owner, "node %zu (%s)", nd->id, nd->name);
    if (!isfinite(nd->p.eps) || !isfinite(nd->p.rope_base) || !isfinite(nd->p.rope_freq_scale) ||
        !isfinite(nd->p.rope_ext_factor) || !isfinite(nd->p.rope_attn_factor))
        return tp_fail(TP_ERR_INVALID, "%s: eps and the rope parameters must be finite to be "
                       "written", owner);
    if (nd->p.rope_mode != TP_ROPE_NEOX && nd->p.rope_mode != TP_ROPE_NORM)
        return tp_fail(TP_ERR_INVALID, "%s: rope_mode %d is neither neox nor norm", owner,
                       nd->p.rope_mode);
    tp_gtext_printf(t, "    {\"id\": %zu, \"name\": ", nd->id);
    tp_gtext_json_string(t, nd->name);
    tp_gtext_printf(t, ", \"op\": \"%s\", \"shape\": [%lld, %lld, %lld, %lld], \"dtype\": \"%s\", "
                    "\"backend\": \"%s\", \"src\": ",
                    tp_op_name(nd->op), (long long)nd->shape[0], (long long)nd->shape[1],
                    (long long)nd->shape[2], (long long)nd->shape[3], tp_dtype_name(nd->dtype),
                    tp_backend_name(nd->backend));
    write_ids(t, nd->src, nd->n_src);
    /* Only parameters that differ from tp_node_init's neutral values are written; the reader
     * starts from the same values, so nothing is lost. */
    if (nd->p.layer != -1)
        tp_gtext_printf(t, ", \"layer\": %d", nd->p.layer);
    if (nd->p.eps != 0.0f) {
        tp_gtext_puts(t, ", \"eps\": ");
        tp_gtext_float(t, nd->p.eps);
    }
    if (nd->p.rope_base != 0.0f) {
        tp_gtext_puts(t, ", \"rope_base\": ");
        tp_gtext_float(t, nd->p.rope_base);
    }
    write_rope_params(t, &nd->p);
    if (nd->p.n_head)
        tp_gtext_printf(t, ", \"n_head\": %d", nd->p.n_head);
    if (nd->p.n_head_kv)
        tp_gtext_printf(t, ", \"n_head_kv\": %d", nd->p.n_head_kv);
    if (nd->p.head_dim)
        tp_gtext_printf(t, ", \"head_dim\": %d", nd->p.head_dim);
    if (nd->p.weight[0]) {
        tp_gtext_puts(t, ", \"weight\": ");
        tp_gtext_json_string(t, nd->p.weight);
    }
    if (nd->p.bias[0]) {
        tp_gtext_puts(t, ", \"bias\": ");
        tp_gtext_json_string(t, nd->p.bias);
    }
    TP_TRY(write_extra(t, nd->extra, node_keys, owner, ", "));
    tp_gtext_puts(t, "}");
    return TP_OK;
}

tp_status tp_graph_to_json(const tp_graph *graph, char **out)
{
    if (!graph || !out)
        return tp_fail(TP_ERR_INVALID, "tp_graph_to_json: NULL argument");
    *out = NULL;
    TP_TRY(tp_graph_check(graph));
    for (size_t i = 0; i < graph->n_nodes; i++)
        for (size_t s = 0; s < graph->nodes[i].n_src; s++)
            if (graph->nodes[i].src[s] >= i)
                return tp_fail(TP_ERR_INVALID, "node %zu (%s): src[%zu] = %zu is not smaller "
                               "than the node's id, which the graph format requires", i,
                               graph->nodes[i].name, s, graph->nodes[i].src[s]);
    tp_gtext t = {0};
    tp_gtext_puts(&t, "{\n  \"format\": \"" FORMAT_NAME "\",\n  \"version\": 1,\n");
    if (graph->model[0]) {
        tp_gtext_puts(&t, "  \"model\": ");
        tp_gtext_json_string(&t, graph->model);
        tp_gtext_puts(&t, ",\n");
    }
    if (graph->kind[0]) {
        tp_gtext_puts(&t, "  \"kind\": ");
        tp_gtext_json_string(&t, graph->kind);
        tp_gtext_puts(&t, ",\n");
    }
    if (graph->n_ctx > 0)
        tp_gtext_printf(&t, "  \"n_ctx\": %lld,\n", (long long)graph->n_ctx);
    tp_gtext_puts(&t, "  \"inputs\": ");
    write_ids(&t, graph->inputs, graph->n_inputs);
    tp_gtext_puts(&t, ",\n  \"outputs\": ");
    write_ids(&t, graph->outputs, graph->n_outputs);
    tp_gtext_puts(&t, ",\n  \"nodes\": [\n");
    tp_status st = TP_OK;
    for (size_t i = 0; i < graph->n_nodes && st == TP_OK; i++) {
        st = write_node(&t, &graph->nodes[i]);
        tp_gtext_puts(&t, i + 1 < graph->n_nodes ? ",\n" : "\n");
    }
    tp_gtext_puts(&t, "  ]");
    if (st == TP_OK)
        st = write_extra(&t, graph->extra, top_keys, "graph", ",\n  ");
    tp_gtext_puts(&t, "\n}\n");
    if (st != TP_OK) {
        free(t.data);
        return st;
    }
    return tp_gtext_finish(&t, out);
}

tp_status tp_graph_save_json(const tp_graph *graph, const char *path)
{
    if (!path)
        return tp_fail(TP_ERR_INVALID, "tp_graph_save_json: NULL path");
    char *text;
    TP_TRY(tp_graph_to_json(graph, &text));
    tp_status st = tp_gtext_write_file(path, text);
    free(text);
    return st;
}
