/* The decoder graph builder against docs/graph.md ("Decoder graph"). The expected graph is
 * generated here from the 18-row layer table (transcribed below), and every node of the built
 * graph is compared with it: op, sources, shape, dtype, layer, parameters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tensorplan/graph.h"
#include "tensorplan/model.h"

/* Source references of the table: a row number 1..17, or one of these. */
enum { R_H = -1, R_POS = -2 };
/* Feature widths of the table. */
enum { D_NE, D_NQ, D_NKV, D_NF };
/* Which config flag gives a projection its bias (docs/engine.md: both families). */
enum { B_NONE, B_QKV, B_OUT, B_FFN };

typedef struct row {
    const char *name;   /* the node name after "blk.L."                           */
    tp_op op;
    int n_src;
    int src[3];
    int width;
    int ctx;            /* shape [width, n_ctx] instead of [width, rows]          */
    const char *weight; /* blk.L.<weight>.weight, or NULL                          */
    int bias;           /* blk.L.<weight>.bias when the config's flag of this kind is
                           set: B_QKV qkv_bias, B_OUT attn_out_bias, B_FFN ffn_bias */
} row;

/* docs/graph.md ("Decoder graph"), rows 1-18. */
static const row table[18] = {
    {"attn_norm", TP_OP_RMS_NORM, 1, {R_H}, D_NE, 0, "attn_norm", 0},
    {"q", TP_OP_MUL_MAT, 1, {1}, D_NQ, 0, "attn_q", B_QKV},
    {"k", TP_OP_MUL_MAT, 1, {1}, D_NKV, 0, "attn_k", B_QKV},
    {"v", TP_OP_MUL_MAT, 1, {1}, D_NKV, 0, "attn_v", B_QKV},
    {"rope_q", TP_OP_ROPE, 2, {2, R_POS}, D_NQ, 0, NULL, 0},
    {"rope_k", TP_OP_ROPE, 2, {3, R_POS}, D_NKV, 0, NULL, 0},
    {"kv_store", TP_OP_KV_STORE, 3, {6, 4, R_POS}, D_NKV, 1, NULL, 0},
    {"kv_load", TP_OP_KV_LOAD, 0, {0}, D_NKV, 1, NULL, 0},
    {"attn", TP_OP_ATTN, 3, {5, 8, R_POS}, D_NQ, 0, NULL, 0},
    {"attn_out", TP_OP_MUL_MAT, 1, {9}, D_NE, 0, "attn_output", B_OUT},
    {"attn_residual", TP_OP_ADD, 2, {R_H, 10}, D_NE, 0, NULL, 0},
    {"ffn_norm", TP_OP_RMS_NORM, 1, {11}, D_NE, 0, "ffn_norm", 0},
    {"ffn_gate", TP_OP_MUL_MAT, 1, {12}, D_NF, 0, "ffn_gate", B_FFN},
    {"ffn_up", TP_OP_MUL_MAT, 1, {12}, D_NF, 0, "ffn_up", B_FFN},
    {"ffn_silu", TP_OP_SILU, 1, {13}, D_NF, 0, NULL, 0},
    {"ffn_swiglu", TP_OP_MUL, 2, {15, 14}, D_NF, 0, NULL, 0},
    {"ffn_down", TP_OP_MUL_MAT, 1, {16}, D_NE, 0, "ffn_down", B_FFN},
    {"ffn_residual", TP_OP_ADD, 2, {11, 17}, D_NE, 0, NULL, 0},
};

typedef struct enode {
    char name[64];
    tp_op op;
    size_t n_src;
    size_t src[3];
    int unordered;      /* sources may come in either order (the tail add)         */
    int64_t d0, d1;
    int layer;
    tp_dtype dtype;
    char weight[64], bias[64];
} enode;

typedef struct expected {
    enode nodes[2048];
    size_t n;
} expected;

static size_t push(expected *e, const char *name, tp_op op, int64_t d0, int64_t d1, int layer)
{
    assert_true(e->n < 2048);
    enode *x = &e->nodes[e->n];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->op = op;
    x->d0 = d0;
    x->d1 = d1;
    x->layer = layer;
    x->dtype = TP_DTYPE_F32;
    return e->n++;
}

static void oracle(const tp_model_config *c, size_t nt, size_t n_out, size_t n_ctx, int fuse,
                   expected *e)
{
    e->n = 0;
    const int tail = n_out < nt;
    size_t tok = push(e, "token_ids", TP_OP_INPUT, (int64_t)nt, 1, -1);
    size_t pos = push(e, "positions", TP_OP_INPUT, (int64_t)nt, 1, -1);
    size_t tail_ids = 0;
    e->nodes[tok].dtype = e->nodes[pos].dtype = TP_DTYPE_I32;
    if (tail) {
        tail_ids = push(e, "tail_ids", TP_OP_INPUT, (int64_t)n_out, 1, -1);
        e->nodes[tail_ids].dtype = TP_DTYPE_I32;
    }
    size_t h = push(e, "embed", TP_OP_GET_ROWS, c->n_embd, (int64_t)nt, -1);
    e->nodes[h].n_src = 1;
    e->nodes[h].src[0] = tok;
    strcpy(e->nodes[h].weight, "token_embd.weight");
    const int64_t width[4] = {c->n_embd, (int64_t)c->n_head * c->head_dim,
                              (int64_t)c->n_head_kv * c->head_dim, c->n_ff};
    for (int L = 0; L < c->n_layer; L++) {
        const int narrow = tail && L == c->n_layer - 1;
        size_t id_of[19] = {0};
        char name[64];
        for (int r = 1; r <= 18; r++) {
            const row *t = &table[r - 1];
            /* Rows 11-18 of the last layer run on the tail rows. */
            int64_t rows = (narrow && r >= 11) ? (int64_t)n_out : (int64_t)nt;
            if (r == 11 && narrow) {
                snprintf(name, sizeof name, "blk.%d.attn_out_tail", L);
                size_t a = push(e, name, TP_OP_GET_ROWS, c->n_embd, rows, L);
                e->nodes[a].n_src = 2;
                e->nodes[a].src[0] = id_of[10];
                e->nodes[a].src[1] = tail_ids;
                snprintf(name, sizeof name, "blk.%d.inp_tail", L);
                size_t b = push(e, name, TP_OP_GET_ROWS, c->n_embd, rows, L);
                e->nodes[b].n_src = 2;
                e->nodes[b].src[0] = h;
                e->nodes[b].src[1] = tail_ids;
                snprintf(name, sizeof name, "blk.%d.attn_residual", L);
                size_t s = push(e, name, TP_OP_ADD, c->n_embd, rows, L);
                e->nodes[s].n_src = 2;
                e->nodes[s].src[0] = a;
                e->nodes[s].src[1] = b;
                e->nodes[s].unordered = 1;
                id_of[11] = s;
                continue;
            }
            snprintf(name, sizeof name, "blk.%d.%s", L, t->name);
            size_t id = push(e, name, t->op, width[t->width], t->ctx ? (int64_t)n_ctx : rows, L);
            enode *x = &e->nodes[id];
            x->n_src = (size_t)t->n_src;
            for (int s = 0; s < t->n_src; s++)
                x->src[s] = t->src[s] == R_H ? h : t->src[s] == R_POS ? pos : id_of[t->src[s]];
            if (t->weight) {
                snprintf(x->weight, sizeof x->weight, "blk.%d.%s.weight", L, t->weight);
                int flag = t->bias == B_QKV   ? c->qkv_bias
                           : t->bias == B_OUT ? c->attn_out_bias
                           : t->bias == B_FFN ? c->ffn_bias
                                              : 0;
                if (flag)
                    snprintf(x->bias, sizeof x->bias, "blk.%d.%s.bias", L, t->weight);
            }
            if (t->op == TP_OP_ROPE && c->rope_freqs)
                strcpy(x->weight, "rope_freqs.weight");
            if (r == 16 && fuse) {
                /* Fusion: mul(silu(13), 14) becomes swiglu(13, 14). */
                x->op = TP_OP_SWIGLU;
                x->src[0] = id_of[13];
                x->src[1] = id_of[14];
            }
            id_of[r] = id;
        }
        h = id_of[18];
    }
    size_t fn = push(e, "output_norm", TP_OP_RMS_NORM, c->n_embd, (int64_t)n_out, -1);
    e->nodes[fn].n_src = 1;
    e->nodes[fn].src[0] = h;
    strcpy(e->nodes[fn].weight, "output_norm.weight");
    size_t lg = push(e, "logits", TP_OP_MUL_MAT, c->vocab, (int64_t)n_out, -1);
    e->nodes[lg].n_src = 1;
    e->nodes[lg].src[0] = fn;
    strcpy(e->nodes[lg].weight, c->tied_embeddings ? "token_embd.weight" : "output.weight");
    if (c->output_bias)
        strcpy(e->nodes[lg].bias, "output.bias");
}

static size_t consumers_of(const tp_graph *g, size_t id)
{
    size_t c = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t s = 0; s < g->nodes[i].n_src; s++)
            c += g->nodes[i].src[s] == id;
    return c;
}

/* Dead per the allocator's rule: no consumer, not an input or output, not a kv op. */
static size_t dead_nodes(const tp_graph *g, int *all_silu)
{
    size_t dead = 0;
    *all_silu = 1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        int pinned = 0;
        for (size_t k = 0; k < g->n_inputs; k++)
            pinned |= g->inputs[k] == i;
        for (size_t k = 0; k < g->n_outputs; k++)
            pinned |= g->outputs[k] == i;
        tp_op op = g->nodes[i].op;
        if (!pinned && op != TP_OP_KV_STORE && op != TP_OP_KV_LOAD && consumers_of(g, i) == 0) {
            dead++;
            *all_silu &= op == TP_OP_SILU;
        }
    }
    return dead;
}

static void compare(const tp_model_config *c, const tp_graph *g, const expected *e)
{
    assert_int_equal(g->n_nodes, e->n);
    for (size_t i = 0; i < e->n; i++) {
        const tp_node *n = &g->nodes[i];
        const enode *x = &e->nodes[i];
        if (strcmp(n->name, x->name) != 0 || n->op != x->op || n->n_src != x->n_src)
            fail_msg("node %zu: got %s op %s (%zu srcs), expected %s op %s (%zu srcs)", i,
                     n->name, tp_op_name(n->op), n->n_src, x->name, tp_op_name(x->op),
                     x->n_src);
        assert_int_equal(n->id, i);
        if (x->unordered) {
            assert_true((n->src[0] == x->src[0] && n->src[1] == x->src[1]) ||
                        (n->src[0] == x->src[1] && n->src[1] == x->src[0]));
        } else {
            for (size_t s = 0; s < x->n_src; s++)
                if (n->src[s] != x->src[s])
                    fail_msg("node %zu (%s): src[%zu] = %zu, expected %zu", i, n->name, s,
                             n->src[s], x->src[s]);
        }
        if (n->shape[0] != x->d0 || n->shape[1] != x->d1 || n->shape[2] != 1 ||
            n->shape[3] != 1)
            fail_msg("node %zu (%s): shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, 1, 1]",
                     i, n->name, (long long)n->shape[0], (long long)n->shape[1],
                     (long long)n->shape[2], (long long)n->shape[3], (long long)x->d0,
                     (long long)x->d1);
        assert_int_equal(n->dtype, x->dtype);
        assert_int_equal(n->p.layer, x->layer);
        assert_string_equal(n->p.weight, x->weight);
        assert_string_equal(n->p.bias, x->bias);
        switch (n->op) {
        case TP_OP_RMS_NORM:
            assert_true(n->p.eps == c->rms_eps);
            break;
        case TP_OP_ROPE:
            assert_true(n->p.rope_base == c->rope_base);
            assert_int_equal(n->p.rope_mode, c->rope_mode);
            assert_true(n->p.rope_freq_scale == c->rope_freq_scale);
            assert_true(n->p.rope_ext_factor == c->rope_ext_factor);
            assert_true(n->p.rope_attn_factor == c->rope_attn_factor);
            assert_int_equal(n->p.rope_n_ctx_orig, c->rope_n_ctx_orig);
            assert_int_equal(n->p.head_dim, c->head_dim);
            assert_int_equal((int64_t)n->p.n_head * c->head_dim, n->shape[0]);
            break;
        case TP_OP_ATTN:
        case TP_OP_KV_STORE:
        case TP_OP_KV_LOAD:
            assert_int_equal(n->p.head_dim, c->head_dim);
            assert_int_equal(n->p.n_head_kv, c->n_head_kv);
            if (n->op == TP_OP_ATTN)
                assert_int_equal(n->p.n_head, c->n_head);
            break;
        default:
            break;
        }
    }
    /* Inputs are the input nodes, in order; the only output is the logits. */
    size_t k = 0;
    for (size_t i = 0; i < e->n; i++)
        if (e->nodes[i].op == TP_OP_INPUT) {
            assert_true(k < g->n_inputs);
            assert_int_equal(g->inputs[k++], i);
        }
    assert_int_equal(g->n_inputs, k);
    assert_int_equal(g->n_outputs, 1);
    assert_int_equal(g->outputs[0], e->n - 1);
}

static expected exp_buf;

static void check_build(const char *model, size_t nt, size_t n_out, size_t n_ctx, int fuse,
                        size_t want_nodes)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin(model, &c), TP_OK);
    tp_graph_params p = {.n_tokens = nt, .n_out = n_out, .n_ctx = n_ctx, .fuse_ffn = fuse};
    tp_graph *g = NULL;
    if (tp_model_build_graph(&c, &p, &g) != TP_OK)
        fail_msg("%s", tp_last_error());
    if (want_nodes)
        assert_int_equal(g->n_nodes, want_nodes);
    oracle(&c, nt, n_out, n_ctx, fuse, &exp_buf);
    compare(&c, g, &exp_buf);
    assert_string_equal(g->model, model);
    assert_string_equal(g->kind, nt == 1 ? "decode" : "prefill");
    assert_int_equal(g->n_ctx, (int64_t)n_ctx);
    int all_silu;
    size_t dead = dead_nodes(g, &all_silu);
    assert_int_equal(dead, fuse ? (size_t)c.n_layer : 0);
    assert_true(all_silu);
    assert_int_equal(tp_graph_count_dead(g), dead);
    for (size_t i = 0; i < g->n_nodes; i++)
        assert_int_equal(g->nodes[i].backend, TP_BACKEND_CPU);
    assert_int_equal(tp_graph_validate(g), TP_OK);
    size_t id;
    assert_int_equal(tp_graph_find_input(g, "tail_ids", &id),
                     n_out < nt ? TP_OK : TP_ERR_NOT_FOUND);
    tp_graph_destroy(g);
}

static void test_qwen_decode_437(void **state)
{
    (void)state;
    check_build("qwen2.5-0.5b", 1, 1, 4096, 1, 437);
    check_build("qwen2.5-0.5b", 1, 1, 4096, 0, 437);
}

static void test_qwen_prefill_440_tail(void **state)
{
    (void)state;
    check_build("qwen2.5-0.5b", 440, 1, 4096, 1, 440);
    check_build("qwen2.5-0.5b", 440, 1, 4096, 0, 440);
    /* All rows: no tail input, no gathers. */
    check_build("qwen2.5-0.5b", 440, 440, 4096, 1, 437);
}

static void test_tiny_shapes(void **state)
{
    (void)state;
    static const size_t cases[][3] = {
        {1, 1, 512}, {5, 5, 64}, {5, 2, 64}, {7, 1, 7}, {512, 3, 512},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int fuse = 0; fuse < 2; fuse++)
            check_build("tiny", cases[i][0], cases[i][1], cases[i][2], fuse, 0);
}

static void test_kv_shapes_and_names(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("qwen2.5-0.5b", &c), TP_OK);
    tp_graph_params p = {.n_tokens = 1, .n_out = 1, .n_ctx = 4096, .fuse_ffn = 1};
    tp_graph *g;
    assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
    size_t kv = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const tp_node *n = &g->nodes[i];
        if (n->op == TP_OP_KV_STORE || n->op == TP_OP_KV_LOAD) {
            kv++;
            /* 128 x 4096 = 524,288 elements per region, as the figures say. */
            assert_int_equal(tp_node_elements(n), 524288);
        }
    }
    assert_int_equal(kv, 48);
    static const char *const names[] = {"blk.3.attn_norm", "blk.3.q", "blk.3.rope_q",
                                        "blk.3.kv_store", "blk.3.kv_load", "blk.3.attn",
                                        "blk.3.ffn_silu", "output_norm", "logits"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        int found = 0;
        for (size_t i = 0; i < g->n_nodes; i++)
            found += strcmp(g->nodes[i].name, names[k]) == 0;
        assert_int_equal(found, 1);
    }
    tp_graph *g2;
    assert_int_equal(tp_model_build_graph(&c, &p, &g2), TP_OK);
    assert_true(g->uid != g2->uid);
    tp_graph_destroy(g);
    tp_graph_destroy(g2);
}

static void test_configs(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    assert_string_equal(c.name, "tiny");
    assert_int_equal(c.n_embd, 32);
    assert_int_equal(c.n_head, 4);
    assert_int_equal(c.n_head_kv, 2);
    assert_int_equal(c.head_dim, 8);
    assert_int_equal(c.n_ff, 64);
    assert_int_equal(c.n_layer, 3);
    assert_int_equal(c.vocab, 97);
    assert_int_equal(c.max_ctx, 512);
    assert_true(c.rms_eps == 1e-6f);
    assert_true(c.rope_base == 10000.0f);
    assert_int_equal(c.qkv_bias, 1);
    assert_int_equal(c.tied_embeddings, 1);
    assert_int_equal(tp_model_config_builtin("qwen2.5-0.5b", &c), TP_OK);
    assert_int_equal(c.n_embd, 896);
    assert_int_equal(c.n_head, 14);
    assert_int_equal(c.n_head_kv, 2);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.n_ff, 4864);
    assert_int_equal(c.n_layer, 24);
    assert_int_equal(c.vocab, 151936);
    assert_int_equal(c.max_ctx, 32768);
    assert_true(c.rms_eps == 1e-6f);
    assert_true(c.rope_base == 1e6f);
    assert_int_equal(c.qkv_bias, 1);
    assert_int_equal(c.tied_embeddings, 1);
    assert_int_equal(tp_model_config_builtin("qwen3", &c), TP_ERR_NOT_FOUND);
    assert_non_null(strstr(tp_model_builtin_names(), "tiny"));
    assert_non_null(strstr(tp_model_builtin_names(), "qwen2.5-0.5b"));
}

/* A custom config: untied head, no q/k/v bias, one layer (the first layer is also the last). */
static void test_custom_config(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    strcpy(c.name, "custom");
    c.tied_embeddings = 0;
    c.qkv_bias = 0;
    c.n_layer = 1;
    for (int fuse = 0; fuse < 2; fuse++) {
        tp_graph_params p = {.n_tokens = 6, .n_out = 2, .n_ctx = 16, .fuse_ffn = fuse};
        tp_graph *g;
        assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
        oracle(&c, 6, 2, 16, fuse, &exp_buf);
        compare(&c, g, &exp_buf);
        assert_string_equal(g->nodes[g->n_nodes - 1].p.weight, "output.weight");
        tp_graph_destroy(g);
    }
}

/* A llama-family config: NORM rope with rope_freqs and YaRN scaling, every optional bias,
 * no q/k/v bias, untied output, grouped-query attention; and qwen2 with every bias. */
static void test_llama_config(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    strcpy(c.name, "llama-small");
    c.arch = TP_ARCH_LLAMA;
    c.rope_mode = TP_ROPE_NORM;
    c.qkv_bias = 0;
    c.tied_embeddings = 0;
    c.rope_freqs = 1;
    c.attn_out_bias = c.ffn_bias = c.output_bias = 1;
    c.rope_freq_scale = 0.25f;
    c.rope_ext_factor = 1.0f;
    c.rope_attn_factor = 1.1f;
    c.rope_n_ctx_orig = 256;
    for (int fuse = 0; fuse < 2; fuse++) {
        tp_graph_params p = {.n_tokens = 5, .n_out = 2, .n_ctx = 16, .fuse_ffn = fuse};
        tp_graph *g;
        if (tp_model_build_graph(&c, &p, &g) != TP_OK)
            fail_msg("%s", tp_last_error());
        oracle(&c, 5, 2, 16, fuse, &exp_buf);
        compare(&c, g, &exp_buf);
        assert_string_equal(g->nodes[g->n_nodes - 1].p.bias, "output.bias");
        tp_graph_destroy(g);
    }
    c.arch = TP_ARCH_QWEN2;
    c.rope_mode = TP_ROPE_NEOX;
    c.qkv_bias = 1;
    c.rope_freqs = 0;
    c.rope_ext_factor = 0.0f;
    tp_graph_params p = {.n_tokens = 1, .n_out = 1, .n_ctx = 16};
    tp_graph *g;
    assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
    oracle(&c, 1, 1, 16, 0, &exp_buf);
    compare(&c, g, &exp_buf);
    tp_graph_destroy(g);
    /* refusals: unknown mode, YaRN without the original context, a zero scale */
    tp_model_config bad = c;
    bad.rope_mode = 5;
    assert_int_equal(tp_model_build_graph(&bad, &p, &g), TP_ERR_INVALID);
    bad = c;
    bad.rope_ext_factor = 1.0f;
    bad.rope_n_ctx_orig = 0;
    assert_int_equal(tp_model_build_graph(&bad, &p, &g), TP_ERR_INVALID);
    bad = c;
    bad.rope_freq_scale = 0.0f;
    assert_int_equal(tp_model_build_graph(&bad, &p, &g), TP_ERR_INVALID);
}

static void test_refusals(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    static const struct {
        size_t nt, n_out, n_ctx;
        int queued;
        const char *text;
    } cases[] = {
        {0, 0, 16, 0, "n_out"},
        {4, 0, 16, 0, "n_out"},
        {4, 5, 16, 0, "n_out"},
        {8, 1, 4, 0, "n_ctx"},
        {8, 1, 513, 0, "n_ctx"},
        {8, 1, 16, -1, "queued_layers"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_graph_params p = {.n_tokens = cases[i].nt, .n_out = cases[i].n_out,
                             .n_ctx = cases[i].n_ctx, .queued_layers = cases[i].queued};
        tp_graph *g = (tp_graph *)&p; /* must be overwritten with NULL */
        assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_ERR_INVALID);
        assert_null(g);
        assert_non_null(strstr(tp_last_error(), cases[i].text));
    }
    tp_model_config bad = c;
    bad.n_head_kv = 3;
    tp_graph_params p = {.n_tokens = 1, .n_out = 1, .n_ctx = 16};
    tp_graph *g;
    assert_int_equal(tp_model_build_graph(&bad, &p, &g), TP_ERR_INVALID);
    bad = c;
    bad.head_dim = 7;
    assert_int_equal(tp_model_build_graph(&bad, &p, &g), TP_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen_decode_437),
        cmocka_unit_test(test_qwen_prefill_440_tail),
        cmocka_unit_test(test_tiny_shapes),
        cmocka_unit_test(test_kv_shapes_and_names),
        cmocka_unit_test(test_configs),
        cmocka_unit_test(test_custom_config),
        cmocka_unit_test(test_llama_config),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
