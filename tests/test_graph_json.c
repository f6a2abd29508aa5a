/* Graph JSON: round trips, preserved extra keys, and refusals of malformed files (path and
 * expectation in the message, never a crash); the DOT writer; the graph command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tensorplan/graph.h"
#include "tensorplan/graph_io.h"
#include "tensorplan/model.h"

/* A hand-written graph using every key of the format; one line per entry so that a case can
 * break exactly one thing. Node n is on line NODE(n). */
#define NODE(n) (10 + (n))
static const char *const base_lines[] = {
    "{",
    "  \"format\": \"tensorplan-graph\",",
    "  \"version\": 1,",
    "  \"model\": \"hand\",",
    "  \"kind\": \"prefill\",",
    "  \"n_ctx\": 8,",
    "  \"inputs\": [0, 1],",
    "  \"outputs\": [13],",
    "  \"meta\": {\"note\": \"kept\", \"list\": [1, 2]},",
    "  \"nodes\": [",
    "    {\"id\": 0, \"name\": \"token_ids\", \"op\": \"input\", \"shape\": [2, 1, 1, 1], \"dtype\": "
    "\"i32\", \"backend\": \"cpu\", \"src\": []},",
    "    {\"id\": 1, \"name\": \"positions\", \"op\": \"input\", \"shape\": [2, 1, 1, 1], \"dtype\": "
    "\"i32\", \"backend\": \"cpu\", \"src\": []},",
    "    {\"id\": 2, \"name\": \"embed\", \"op\": \"get_rows\", \"shape\": [8, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"cpu\", \"src\": [0], \"weight\": \"token_embd.weight\"},",
    "    {\"id\": 3, \"name\": \"norm\", \"op\": \"rms_norm\", \"shape\": [8, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"cpu\", \"src\": [2], \"eps\": 1e-06, \"weight\": \"n.weight\"},",
    "    {\"id\": 4, \"name\": \"q\", \"op\": \"mul_mat\", \"shape\": [8, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"queued\", \"src\": [3], \"layer\": 0, \"weight\": \"wq\", \"bias\": "
    "\"bq\", \"detail\": {\"why\": [1, 2.5, \"x\"]}},",
    "    {\"id\": 5, \"name\": \"k\", \"op\": \"mul_mat\", \"shape\": [4, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"queued\", \"src\": [3], \"layer\": 0, \"weight\": \"wk\"},",
    "    {\"id\": 6, \"name\": \"rope_q\", \"op\": \"rope\", \"shape\": [8, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"queued\", \"src\": [4, 1], \"layer\": 0, \"rope_base\": 10000, "
    "\"n_head\": 2, \"head_dim\": 4},",
    "    {\"id\": 7, \"name\": \"rope_k\", \"op\": \"rope\", \"shape\": [4, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"queued\", \"src\": [5, 1], \"layer\": 0, \"rope_base\": 10000, "
    "\"n_head\": 1, \"head_dim\": 4},",
    "    {\"id\": 8, \"name\": \"kv_store.0\", \"op\": \"kv_store\", \"shape\": [4, 8, 1, 1], "
    "\"dtype\": \"f32\", \"backend\": \"queued\", \"src\": [7, 5, 1], \"layer\": 0, \"head_dim\": 4},",
    "    {\"id\": 9, \"name\": \"kv_load.0\", \"op\": \"kv_load\", \"shape\": [4, 8, 1, 1], "
    "\"dtype\": \"f32\", \"backend\": \"queued\", \"src\": [], \"layer\": 0, \"head_dim\": 4},",
    "    {\"id\": 10, \"name\": \"attn\", \"op\": \"attn\", \"shape\": [8, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"queued\", \"src\": [6, 9, 1], \"layer\": 0, \"n_head\": 2, "
    "\"n_head_kv\": 1, \"head_dim\": 4},",
    "    {\"id\": 11, \"name\": \"s\", \"op\": \"silu\", \"shape\": [8, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"cpu\", \"src\": [10], \"meta\": null},",
    "    {\"id\": 12, \"name\": \"m\", \"op\": \"mul\", \"shape\": [8, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"cpu\", \"src\": [11, 10]},",
    "    {\"id\": 13, \"name\": \"out\", \"op\": \"add\", \"shape\": [8, 2, 1, 1], \"dtype\": "
    "\"f32\", \"backend\": \"cpu\", \"src\": [12, 3]}",
    "  ]",
    "}",
};
#define N_LINES (sizeof base_lines / sizeof base_lines[0])

/* The base text with line `line` changed: `from` (which must occur in it) replaced by `to`.
 * line < 0: the base text unchanged. */
static char *make_text(int line, const char *from, const char *to)
{
    size_t cap = 16;
    for (size_t i = 0; i < N_LINES; i++)
        cap += strlen(base_lines[i]) + 1;
    cap += to ? strlen(to) : 0;
    char *t = malloc(cap);
    assert_non_null(t);
    t[0] = '\0';
    for (size_t i = 0; i < N_LINES; i++) {
        if ((int)i == line) {
            const char *at = strstr(base_lines[i], from);
            if (!at)
                fail_msg("'%s' is not on line %d", from, line);
            strncat(t, base_lines[i], (size_t)(at - base_lines[i]));
            strcat(t, to);
            strcat(t, at + strlen(from));
        } else {
            strcat(t, base_lines[i]);
        }
        strcat(t, "\n");
    }
    return t;
}

static tp_status parse(const char *text, tp_graph **g)
{
    return tp_graph_parse_json(text, strlen(text), "g.json", g);
}

static void assert_same_graph(const tp_graph *a, const tp_graph *b)
{
    assert_int_equal(a->n_nodes, b->n_nodes);
    assert_int_equal(a->n_inputs, b->n_inputs);
    assert_int_equal(a->n_outputs, b->n_outputs);
    assert_int_equal(a->n_ctx, b->n_ctx);
    assert_string_equal(a->model, b->model);
    assert_string_equal(a->kind, b->kind);
    assert_true((a->extra == NULL) == (b->extra == NULL));
    if (a->extra)
        assert_string_equal(a->extra, b->extra);
    for (size_t i = 0; i < a->n_inputs; i++)
        assert_int_equal(a->inputs[i], b->inputs[i]);
    for (size_t i = 0; i < a->n_outputs; i++)
        assert_int_equal(a->outputs[i], b->outputs[i]);
    for (size_t i = 0; i < a->n_nodes; i++) {
        const tp_node *x = &a->nodes[i], *y = &b->nodes[i];
        assert_int_equal(x->id, y->id);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->op, y->op);
        assert_int_equal(x->n_src, y->n_src);
        for (size_t s = 0; s < x->n_src; s++)
            assert_int_equal(x->src[s], y->src[s]);
        for (int d = 0; d < 4; d++)
            assert_int_equal(x->shape[d], y->shape[d]);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->backend, y->backend);
        assert_int_equal(x->p.layer, y->p.layer);
        assert_true(memcmp(&x->p.eps, &y->p.eps, sizeof(float)) == 0);
        assert_true(memcmp(&x->p.rope_base, &y->p.rope_base, sizeof(float)) == 0);
        assert_int_equal(x->p.n_head, y->p.n_head);
        assert_int_equal(x->p.n_head_kv, y->p.n_head_kv);
        assert_int_equal(x->p.head_dim, y->p.head_dim);
        assert_string_equal(x->p.weight, y->p.weight);
        assert_string_equal(x->p.bias, y->p.bias);
        assert_int_equal(x->p.rope_mode, y->p.rope_mode);
        assert_true(memcmp(&x->p.rope_freq_scale, &y->p.rope_freq_scale, sizeof(float)) == 0);
        assert_true(memcmp(&x->p.rope_ext_factor, &y->p.rope_ext_factor, sizeof(float)) == 0);
        assert_true(memcmp(&x->p.rope_attn_factor, &y->p.rope_attn_factor, sizeof(float)) == 0);
        assert_int_equal(x->p.rope_n_ctx_orig, y->p.rope_n_ctx_orig);
        assert_true((x->extra == NULL) == (y->extra == NULL));
        if (x->extra)
            assert_string_equal(x->extra, y->extra);
    }
}

/* write -> read -> equal graph, and writing again gives the same text. */
static void round_trip(const tp_graph *g)
{
    char *t1, *t2;
    assert_int_equal(tp_graph_to_json(g, &t1), TP_OK);
    tp_graph *r;
    if (parse(t1, &r) != TP_OK)
        fail_msg("%s", tp_last_error());
    assert_same_graph(g, r);
    assert_int_equal(tp_graph_to_json(r, &t2), TP_OK);
    assert_string_equal(t1, t2);
    free(t1);
    free(t2);
    tp_graph_destroy(r);
}

static void test_base_reads(void **state)
{
    (void)state;
    char *t = make_text(-1, NULL, NULL);
    tp_graph *g;
    if (parse(t, &g) != TP_OK)
        fail_msg("%s", tp_last_error());
    assert_int_equal(g->n_nodes, 14);
    assert_int_equal(g->n_ctx, 8);
    assert_string_equal(g->model, "hand");
    assert_string_equal(g->kind, "prefill");
    assert_int_equal(g->nodes[4].backend, TP_BACKEND_QUEUED);
    assert_int_equal(g->nodes[0].dtype, TP_DTYPE_I32);
    assert_true(g->nodes[3].p.eps == 1e-6f);
    assert_true(g->nodes[6].p.rope_base == 10000.0f);
    /* a file without the rope keys reads the neutral values (docs/graph.md) */
    assert_int_equal(g->nodes[6].p.rope_mode, TP_ROPE_NEOX);
    assert_true(g->nodes[6].p.rope_freq_scale == 1.0f);
    assert_true(g->nodes[6].p.rope_ext_factor == 0.0f);
    assert_true(g->nodes[6].p.rope_attn_factor == 1.0f);
    assert_int_equal(g->nodes[6].p.rope_n_ctx_orig, 0);
    assert_string_equal(g->nodes[6].p.weight, "");
    assert_string_equal(g->nodes[4].p.bias, "bq");
    assert_int_equal(g->nodes[10].p.n_head_kv, 1);
    assert_int_equal(g->nodes[12].src[1], 10);
    round_trip(g);
    tp_graph_destroy(g);
    free(t);
}

static void test_model_round_trips(void **state)
{
    (void)state;
    static const struct {
        const char *model;
        size_t nt, n_out, n_ctx;
        int fuse, queued;
    } cases[] = {
        {"qwen2.5-0.5b", 440, 1, 4096, 1, 0},
        {"qwen2.5-0.5b", 1, 1, 4096, 0, 5},
        {"tiny", 6, 2, 64, 0, 2},
        {"tiny", 1, 1, 512, 1, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_model_config c;
        assert_int_equal(tp_model_config_builtin(cases[i].model, &c), TP_OK);
        tp_graph_params p = {.n_tokens = cases[i].nt, .n_out = cases[i].n_out,
                             .n_ctx = cases[i].n_ctx, .fuse_ffn = cases[i].fuse,
                             .queued_layers = cases[i].queued};
        tp_graph *g;
        assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
        round_trip(g);
        tp_graph_destroy(g);
    }
    /* a llama-family graph: NORM rope with rope_freqs and YaRN, every optional bias */
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    c.arch = TP_ARCH_LLAMA;
    c.rope_mode = TP_ROPE_NORM;
    c.rope_freqs = c.attn_out_bias = c.ffn_bias = c.output_bias = 1;
    c.tied_embeddings = 0;
    c.rope_freq_scale = 0.125f;
    c.rope_ext_factor = 1.0f;
    c.rope_attn_factor = 1.25f;
    c.rope_n_ctx_orig = 8192;
    tp_graph_params p = {.n_tokens = 3, .n_out = 1, .n_ctx = 8};
    tp_graph *g;
    assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
    char *text;
    assert_int_equal(tp_graph_to_json(g, &text), TP_OK);
    assert_non_null(strstr(text, "\"rope_mode\": \"norm\", \"rope_freq_scale\": 0.125, "
                                 "\"rope_ext_factor\": 1, \"rope_attn_factor\": 1.25, "
                                 "\"rope_n_ctx_orig\": 8192"));
    assert_non_null(strstr(text, "\"weight\": \"rope_freqs.weight\""));
    free(text);
    round_trip(g);
    tp_graph_destroy(g);
}

static void test_extra_keys_preserved(void **state)
{
    (void)state;
    char *t = make_text(-1, NULL, NULL);
    tp_graph *g;
    assert_int_equal(parse(t, &g), TP_OK);
    /* The values, checked through an independent parse of the stored texts. */
    cJSON *x = cJSON_Parse(g->nodes[4].extra);
    assert_non_null(x);
    cJSON *why = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(x, "detail"),
                                                  "why");
    assert_int_equal(cJSON_GetArraySize(why), 3);
    assert_true(cJSON_GetArrayItem(why, 1)->valuedouble == 2.5);
    assert_string_equal(cJSON_GetArrayItem(why, 2)->valuestring, "x");
    assert_int_equal(cJSON_GetArraySize(x), 1);
    cJSON_Delete(x);
    x = cJSON_Parse(g->nodes[11].extra);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(x, "meta")));
    cJSON_Delete(x);
    assert_null(g->nodes[5].extra);
    x = cJSON_Parse(g->extra);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(x, "meta"), "note")->valuestring,
                        "kept");
    assert_int_equal(cJSON_GetArraySize(x), 1);
    cJSON_Delete(x);

    char *out;
    assert_int_equal(tp_graph_to_json(g, &out), TP_OK);
    /* The written file is valid JSON with the extra keys in place. */
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    cJSON *n4 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "nodes"), 4);
    cJSON *detail = cJSON_GetObjectItemCaseSensitive(n4, "detail");
    assert_true(cJSON_IsObject(detail));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(n4, "weight")->valuestring, "wq");
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "meta");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(meta, "list")), 2);
    cJSON_Delete(root);
    free(out);
    round_trip(g);

    /* The writer refuses extras it could not write as a readable file. */
    free(g->nodes[5].extra);
    g->nodes[5].extra = malloc(32);
    strcpy(g->nodes[5].extra, "{\"layer\": 3}");
    assert_int_equal(tp_graph_to_json(g, &out), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "layer"));
    strcpy(g->nodes[5].extra, "not json");
    assert_int_equal(tp_graph_to_json(g, &out), TP_ERR_INVALID);
    free(g->nodes[5].extra);
    g->nodes[5].extra = NULL;
    g->nodes[5].src[0] = 6; /* acyclic (6 does not depend on 5) but not in build order */
    assert_int_equal(tp_graph_to_json(g, &out), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "not smaller"));
    tp_graph_destroy(g);
    free(t);
}

typedef struct jcase {
    int line;
    const char *from, *to;
    const char *path, *text;
} jcase;

static void test_malformed_refused(void **state)
{
    (void)state;
    static const jcase cases[] = {
        {NODE(11), "[10]", "[12]", "nodes[11].src[0]",
         "expected a node id smaller than 11, got 12"},
        /* A cycle needs a source after its node, which the order rule refuses first. */
        {NODE(2), "\"src\": [0]", "\"src\": [3]", "nodes[2].src[0]", "smaller than 2, got 3"},
        {NODE(11), "[10]", "[11]", "nodes[11].src[0]", "got 11"},
        {NODE(11), "[10]", "[-1]", "nodes[11].src[0]", "got -1"},
        {NODE(11), "[10]", "[1.5]", "nodes[11].src[0]", "got 1.5"},
        {NODE(11), "[10]", "[\"10\"]", "nodes[11].src[0]", "got \"10\""},
        {NODE(11), "[10]", "[10, 10, 10, 10, 10]", "nodes[11].src", "at most 4"},
        {NODE(11), "\"src\": [10]", "\"src\": 10", "nodes[11].src", "expected an array"},
        {NODE(11), "\"src\": [10], ", "", "nodes[11].src", "got nothing"},
        {NODE(11), "\"silu\"", "\"gelu\"", "nodes[11].op", "expected an op (input, get_rows"},
        {NODE(11), "\"silu\"", "3", "nodes[11].op", "got 3"},
        {NODE(11), "\"f32\"", "\"f64\"", "nodes[11].dtype", "got \"f64\""},
        {NODE(10), "\"queued\"", "\"gpu\"", "nodes[10].backend", "expected a backend"},
        {NODE(11), "\"id\": 11", "\"id\": 12", "nodes[11].id", "index 11, got 12"},
        {NODE(11), "\"id\": 11, ", "", "nodes[11].id", "got nothing"},
        {NODE(11), "\"name\": \"s\"", "\"name\": 5", "nodes[11].name", "expected a name"},
        {NODE(11), "\"name\": \"s\"",
         "\"name\": \"a_name_that_is_much_longer_than_sixty_three_bytes_which_is_the_limit__\"",
         "nodes[11].name", "at most 63 bytes"},
        {NODE(11), "[8, 2, 1, 1]", "[8, 0, 1, 1]", "nodes[11].shape[1]", "positive integer, got 0"},
        {NODE(11), "[8, 2, 1, 1]", "[8, 2, 1, 1, 1]", "nodes[11].shape", "1 to 4 extents"},
        {NODE(11), "[8, 2, 1, 1]", "\"8x2\"", "nodes[11].shape", "got \"8x2\""},
        {NODE(11), "[8, 2, 1, 1]", "[8, 2.5, 1, 1]", "nodes[11].shape[1]", "got 2.5"},
        /* Shapes that do not fit the op, found by validation and mapped to a path. */
        {NODE(12), "[11, 10]", "[11, 5]", "nodes[12].src[1]",
         "expected a source of the node's shape"},
        {NODE(6), "\"n_head\": 2", "\"n_head\": 3", "nodes[6].shape[0]", "n_head * head_dim"},
        {NODE(8), "[4, 8, 1, 1]", "[4, 9, 1, 1]", "nodes[8].shape[1]", "n_ctx = 8"},
        {NODE(13), "[12, 3]", "[12]", "nodes[13].src", "expected 2 sources for op add, got 1"},
        {NODE(0), "\"i32\"", "\"f32\"", "nodes[2].src[0]", "i32"},
        {NODE(10), "[6, 9, 1]", "[6, 5, 1]", "nodes[10].src[1]", "kv_load of layer 0"},
        {NODE(8), ", \"layer\": 0", "", "nodes[8].layer", "required on op kv_store"},
        {NODE(9), ", \"layer\": 0", "", "nodes[9].layer", "required on op kv_load"},
        {NODE(10), ", \"layer\": 0", "", "nodes[10].layer", "required on op attn"},
        {NODE(8), "\"layer\": 0", "\"layer\": \"0\"", "nodes[8].layer", "got \"0\""},
        {NODE(8), "\"layer\": 0", "\"layer\": -1", "nodes[8].layer", "expected a layer >= 0"},
        {NODE(3), "\"eps\": 1e-06", "\"eps\": \"small\"", "nodes[3].eps", "finite number"},
        {NODE(3), "\"eps\": 1e-06", "\"eps\": 1e300", "nodes[3].eps", "finite number"},
        {NODE(4), "\"wq\"", "7", "nodes[4].weight", "expected a weight name"},
        {NODE(6), "\"n_head\": 2", "\"n_head\": -2", "nodes[6].n_head", "integer >= 0"},
        {NODE(6), "\"n_head\": 2", "\"rope_mode\": \"gptj\", \"n_head\": 2",
         "nodes[6].rope_mode", "expected a rope mode (neox or norm)"},
        {NODE(6), "\"n_head\": 2", "\"rope_mode\": 1, \"n_head\": 2", "nodes[6].rope_mode",
         "got 1"},
        {NODE(6), "\"n_head\": 2", "\"rope_freq_scale\": 0, \"n_head\": 2",
         "nodes[6].rope_freq_scale", "rope_freq_scale > 0"},
        {NODE(6), "\"n_head\": 2", "\"rope_attn_factor\": \"x\", \"n_head\": 2",
         "nodes[6].rope_attn_factor", "finite number"},
        {NODE(6), "\"n_head\": 2", "\"rope_ext_factor\": 1, \"n_head\": 2",
         "nodes[6].rope_n_ctx_orig", "> 0 with rope_ext_factor"},
        {NODE(6), "\"n_head\": 2", "\"rope_n_ctx_orig\": -4, \"n_head\": 2",
         "nodes[6].rope_n_ctx_orig", "integer >= 0"},
        {NODE(11), "\"name\": \"s\"", "\"name\": \"s\", \"name\": \"t\"", "nodes[11]", "twice"},
        {NODE(11), "{\"id\": 11", "5, {\"id\": 11", "nodes[11]", "expected a node object, got 5"},
        {5, "  \"n_ctx\": 8,", "", "n_ctx", "positive context length"},
        {5, "8", "-8", "n_ctx", "got -8"},
        {6, "[0, 1]", "[0, 14]", "inputs[1]", "smaller than 14 (the node count), got 14"},
        {6, "[0, 1]", "[0, 2]", "inputs[1]", "id of an input node"},
        {6, "[0, 1]", "[0]", "nodes[1].op", "listed in inputs"},
        {6, "[0, 1]", "{}", "inputs", "expected an array of node ids"},
        {7, "[13]", "[99]", "outputs[0]", "got 99"},
        {7, "[13]", "[13, 13]", "outputs[1]", "distinct"},
        {7, "  \"outputs\": [13],", "", "outputs", "got nothing"},
        {1, "tensorplan-graph", "tensorplan-plan", "format", "expected \"tensorplan-graph\""},
        {2, "1", "2", "version", "expected 1, got 2"},
        {4, "prefill", "train", "kind", "\"prefill\" or \"decode\""},
        {3, "\"hand\"", "[]", "model", "expected a model name"},
        {9, "\"nodes\"", "\"nodez\"", "nodes", "expected an array of nodes"},
        /* Syntax errors carry the line. */
        {NODE(5), "\"name\": \"k\",", "\"name\": \"k\"", "line 16", "expected valid JSON"},
        {NODE(5), "\"k\"", "\"k", "line 16", "expected"},
        {25, "}", "} x", "line 26", "expected the end of the text"},
        {25, "}", "", "line", "expected more JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = make_text(cases[i].line, cases[i].from, cases[i].to);
        tp_graph *g = (tp_graph *)t; /* must come back NULL */
        tp_status st = parse(t, &g);
        if (st != TP_ERR_INVALID)
            fail_msg("case %zu (%s -> %s): status %s", i, cases[i].from, cases[i].to,
                     tp_status_name(st));
        assert_null(g);
        const char *msg = tp_last_error();
        if (strncmp(msg, "g.json: ", 8) != 0 || !strstr(msg, cases[i].path) ||
            !strstr(msg, cases[i].text))
            fail_msg("case %zu (%s -> %s): message '%s' lacks '%s' / '%s'", i, cases[i].from,
                     cases[i].to, msg, cases[i].path, cases[i].text);
        free(t);
    }
}

static void test_odd_texts_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t len;
        const char *want;
    } cases[] = {
        {"", 0, "got the end of the text"},
        {"   \n  ", SIZE_MAX, "line 2"},
        {"null", SIZE_MAX, "top level, got null"},
        {"[1, 2]", SIZE_MAX, "top level, got an array"},
        {"{\"format\": \"tensorplan-graph\"", SIZE_MAX, "line 1"},
        /* cut inside a string (even after an escaped quote): truncation, not bad JSON */
        {"{\"format\": \"tensorplan-graph\",\n \"nodes\": [{\"na", SIZE_MAX,
         "line 2, column 14: expected more JSON, got the end of the text inside a string"},
        {"{\"model\": \"a\\\"b", SIZE_MAX, "end of the text inside a string"},
        /* cut after a key's colon or inside a number list: the end, not the last byte */
        {"{\"format\": \"tensorplan-graph\",\n  \"n_ctx\":", SIZE_MAX,
         "line 2, column 11: expected more JSON, got the end of the text"},
        {"{\"inputs\": [0,", SIZE_MAX, "column 15: expected more JSON, got the end"},
        /* but a wrong last byte is named as such */
        {"{\"inputs\": [0]]", SIZE_MAX, "column 15: expected valid JSON, got ']'"},
        /* a string that is closed but bad JSON after it is not called a truncation */
        {"{\"format\" 1}", SIZE_MAX, "expected valid JSON"},
        {"{\"a\": 1}\0{}", 11, "end of the text"},
        {"{\"format\": \"tensorplan-graph\", \"format\": \"x\"}", SIZE_MAX, "twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_graph *g = NULL;
        size_t len = cases[i].len == SIZE_MAX ? strlen(cases[i].text) : cases[i].len;
        assert_int_equal(tp_graph_parse_json(cases[i].text, len, "g.json", &g), TP_ERR_INVALID);
        assert_null(g);
        if (!strstr(tp_last_error(), cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, tp_last_error(), cases[i].want);
    }
    /* Deep nesting must be refused, not recursed into without bound. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 1);
    assert_non_null(deep);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    tp_graph *g = NULL;
    assert_int_equal(tp_graph_parse_json(deep, 2 * depth, "g.json", &g), TP_ERR_INVALID);
    free(deep);
    assert_int_equal(tp_graph_parse_json(NULL, 0, "g.json", &g), TP_ERR_INVALID);
    assert_int_equal(tp_graph_load_json("/nonexistent/dir/g.json", &g), TP_ERR_IO);
    assert_null(g);
    /* a directory opens but cannot be read: the message says why, not just "read error" */
    assert_int_equal(tp_graph_load_json(".", &g), TP_ERR_IO);
    assert_null(g);
    if (!strstr(tp_last_error(), "directory"))
        fail_msg("'%s' does not say the path is a directory", tp_last_error());
}

/* Every truncation of a valid file and many single-byte corruptions: refused or accepted,
 * never a crash (this test's value is largest under the sanitizers). */
static void test_truncations_and_corruptions(void **state)
{
    (void)state;
    char *t = make_text(-1, NULL, NULL);
    size_t len = strlen(t);
    size_t last = (size_t)(strrchr(t, '}') - t);
    size_t step = getenv("TP_SANITIZED") ? 3 : 1;
    for (size_t n = 0; n <= last; n += step) {
        tp_graph *g = NULL;
        assert_int_equal(tp_graph_parse_json(t, n, "g.json", &g), TP_ERR_INVALID);
        assert_null(g);
    }
    static const char alphabet[] = "{}[]\",:0123456789-.eE \nabflnrstu\\";
    uint64_t rng = 12345;
    int accepted = 0, refused = 0;
    char *m = malloc(len + 1);
    assert_non_null(m);
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(m, t, len + 1);
        for (int k = 0; k < 1 + iter % 3; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(rng >> 33) % len;
            m[at] = alphabet[(rng >> 20) % (sizeof alphabet - 1)];
        }
        tp_graph *g = NULL;
        tp_status st = tp_graph_parse_json(m, len, "g.json", &g);
        if (st == TP_OK) {
            accepted++;
            assert_int_equal(tp_graph_validate(g), TP_OK);
            char *out;
            assert_int_equal(tp_graph_to_json(g, &out), TP_OK);
            free(out);
            tp_graph_destroy(g);
        } else {
            refused++;
            assert_int_equal(st, TP_ERR_INVALID);
            assert_null(g);
            assert_int_equal(strncmp(tp_last_error(), "g.json: ", 8), 0);
        }
    }
    assert_true(refused > 1000);
    assert_true(accepted > 0);
    free(m);
    free(t);
}

static size_t count(const char *hay, const char *needle)
{
    size_t c = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        c++;
    return c;
}

static void test_dot(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    tp_graph_params p = {.n_tokens = 4, .n_out = 1, .n_ctx = 16, .fuse_ffn = 1,
                         .queued_layers = 2};
    tp_graph *g;
    assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
    char *dot;
    assert_int_equal(tp_graph_to_dot(g, &dot), TP_OK);
    size_t edges = 0, loads = 0, dead = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        edges += g->nodes[i].n_src;
        loads += g->nodes[i].op == TP_OP_KV_LOAD;
        int used = 0;
        for (size_t j = 0; j < g->n_nodes; j++)
            for (size_t s = 0; s < g->nodes[j].n_src; s++)
                used |= g->nodes[j].src[s] == i;
        dead += !used && g->nodes[i].op == TP_OP_SILU;
    }
    assert_non_null(strstr(dot, "digraph"));
    assert_non_null(strstr(dot, "cluster_legend"));
    /* Data edges, one dotted KV edge per layer, one in the legend. */
    assert_int_equal(count(dot, " -> "), edges + loads + 1);
    assert_int_equal(count(dot, "style=dotted"), loads + 1);
    /* Inputs and outputs marked (plus their legend entries); dead nodes dashed. */
    assert_int_equal(count(dot, "shape=invhouse"), g->n_inputs + 1);
    assert_int_equal(count(dot, "shape=doubleoctagon"), g->n_outputs + 1);
    assert_int_equal(count(dot, "dashed"), dead + 1);
    assert_int_equal(dead, (size_t)c.n_layer);
    /* Colours per backend: queued layers 0-1 (18 nodes each), the rest on cpu. */
    size_t queued = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        queued += g->nodes[i].backend == TP_BACKEND_QUEUED;
    assert_int_equal(queued, 36);
    assert_int_equal(count(dot, "fillcolor=\"#fdae6b\""), queued + 1);
    assert_int_equal(count(dot, "fillcolor=\"#9ecae1\""), g->n_nodes - queued + 1);
    assert_non_null(strstr(dot, "backend queued"));
    assert_non_null(strstr(dot, "backend cpu"));
    free(dot);
    tp_graph_destroy(g);
}

static int run_cli(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", TP_CLI_PATH, args);
    int rc = system(cmd);
    assert_true(rc != -1 && WIFEXITED(rc));
    return WEXITSTATUS(rc);
}

static void check_cli_graph(const char *args, const char *path, size_t nodes, int64_t n_ctx,
                            size_t dead_want)
{
    char full[512];
    snprintf(full, sizeof full, "%s --json %s", args, path);
    assert_int_equal(run_cli(full), 0);
    tp_graph *g;
    if (tp_graph_load_json(path, &g) != TP_OK)
        fail_msg("%s", tp_last_error());
    assert_int_equal(g->n_nodes, nodes);
    assert_int_equal(g->n_ctx, n_ctx);
    size_t kv = 0, dead = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const tp_node *n = &g->nodes[i];
        if (n->op == TP_OP_KV_STORE || n->op == TP_OP_KV_LOAD) {
            kv++;
            assert_int_equal(n->shape[0] * n->shape[1], 128 * n_ctx);
            continue;
        }
        int used = 0;
        for (size_t j = 0; j < g->n_nodes; j++)
            for (size_t s = 0; s < g->nodes[j].n_src; s++)
                used |= g->nodes[j].src[s] == i;
        for (size_t k = 0; k < g->n_outputs; k++)
            used |= g->outputs[k] == i;
        dead += !used && n->op != TP_OP_INPUT;
    }
    assert_int_equal(kv, 48);
    assert_int_equal(dead, dead_want);
    tp_graph_destroy(g);
}

static void test_cli_graph(void **state)
{
    (void)state;
    char path[64], dot[64], args[256];
    snprintf(path, sizeof path, "/tmp/tp_graph_test_%ld.json", (long)getpid());
    snprintf(dot, sizeof dot, "/tmp/tp_graph_test_%ld.dot", (long)getpid());
    check_cli_graph("graph qwen2.5-0.5b --tokens 1", path, 437, 4096, 24);
    check_cli_graph("graph qwen2.5-0.5b --tokens 440 --n-out 1", path, 440, 4096, 24);
    check_cli_graph("graph qwen2.5-0.5b --tokens 1 --no-fuse", path, 437, 4096, 0);
    check_cli_graph("graph qwen2.5-0.5b --tokens 8 --n-ctx 100000", path, 437, 32768, 24);
    check_cli_graph("graph qwen2.5-0.5b --tokens 5000 --n-out 2 --n-ctx 16", path, 440, 5000, 24);
    snprintf(args, sizeof args, "graph tiny --tokens 3 --queued-layers 2 --dot %s", dot);
    assert_int_equal(run_cli(args), 0);
    FILE *f = fopen(dot, "r");
    assert_non_null(f);
    char head[16] = {0};
    assert_true(fread(head, 1, 7, f) == 7);
    fclose(f);
    assert_string_equal(head, "digraph");
    remove(dot);
    remove(path);
    /* Usage errors exit 2 and write nothing. */
    static const char *const bad[] = {
        "graph qwen2.5-0.5b --json %s",
        "graph qwen2.5-0.5b --tokens 1",
        "graph qwen9 --tokens 1 --json %s",
        "graph tiny --tokens 513 --json %s",
        "graph tiny --tokens 4 --n-out 5 --json %s",
        "graph tiny --tokens 4 --n-out 0 --json %s",
        "graph tiny --tokens x --json %s",
        "graph tiny --tokens 4 --queued-layers 4 --json %s",
        "graph tiny --tokens 4 --frobnicate --json %s",
        "graph tiny tiny --tokens 4 --json %s",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, bad[i], path);
        if (run_cli(args) != 2)
            fail_msg("'%s' did not exit 2", args);
        assert_int_equal(access(path, F_OK), -1);
    }
    /* A DOT file that cannot be written fails the command (exit 1), and the JSON written
     * just before it is removed: nothing is written on failure. */
    snprintf(args, sizeof args, "graph tiny --tokens 2 --json %s --dot /nonexistent/dir/g.dot",
             path);
    assert_int_equal(run_cli(args), 1);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(run_cli("graph --help"), 0);
    assert_int_equal(run_cli("help graph"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base_reads),
        cmocka_unit_test(test_model_round_trips),
        cmocka_unit_test(test_extra_keys_preserved),
        cmocka_unit_test(test_malformed_refused),
        cmocka_unit_test(test_odd_texts_refused),
        cmocka_unit_test(test_truncations_and_corruptions),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_cli_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
