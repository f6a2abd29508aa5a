/* The graph IR: the structural check (cycles, ranges), per-op validation, SwiGLU fusion and
 * backend assignment. Oracles are written here: a depth-first cycle search, a consumer count
 * over the source lists, and the layer rule restated. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tensorplan/graph.h"
#include "tensorplan/model.h"

static size_t add(tp_graph *g, tp_op op, const char *name, size_t n_src, const size_t *src,
                  int64_t d0, int64_t d1)
{
    tp_node n = tp_node_init(op, name);
    n.n_src = n_src;
    for (size_t i = 0; i < n_src; i++)
        n.src[i] = src[i];
    n.shape[0] = d0;
    n.shape[1] = d1;
    size_t id = 0;
    assert_int_equal(tp_graph_add_node(g, &n, &id), TP_OK);
    return id;
}

/* Independent consumer count: how many source entries name `id`. */
static size_t consumers_of(const tp_graph *g, size_t id)
{
    size_t c = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t s = 0; s < g->nodes[i].n_src; s++)
            c += g->nodes[i].src[s] == id;
    return c;
}

/* Depth-first search with colours: 1 = on the stack, 2 = done. */
static int dfs_has_cycle(const tp_graph *g, size_t u, unsigned char *colour)
{
    colour[u] = 1;
    for (size_t s = 0; s < g->nodes[u].n_src; s++) {
        size_t v = g->nodes[u].src[s];
        if (colour[v] == 1 || (colour[v] == 0 && dfs_has_cycle(g, v, colour)))
            return 1;
    }
    colour[u] = 2;
    return 0;
}

static int oracle_has_cycle(const tp_graph *g)
{
    unsigned char *colour = calloc(g->n_nodes ? g->n_nodes : 1, 1);
    assert_non_null(colour);
    int cyc = 0;
    for (size_t i = 0; i < g->n_nodes && !cyc; i++)
        if (colour[i] == 0)
            cyc = dfs_has_cycle(g, i, colour);
    free(colour);
    return cyc;
}

static void test_names_round_trip(void **state)
{
    (void)state;
    for (int i = 0; i < TP_OP_COUNT; i++) {
        tp_op op;
        assert_int_equal(tp_op_from_name(tp_op_name((tp_op)i), &op), TP_OK);
        assert_int_equal(op, i);
    }
    static const char *const ops[] = {"input", "get_rows", "rms_norm", "mul_mat", "rope",
                                      "kv_store", "kv_load", "attn", "add", "mul", "silu",
                                      "swiglu"};
    for (int i = 0; i < TP_OP_COUNT; i++)
        assert_string_equal(tp_op_name((tp_op)i), ops[i]);
    tp_op op;
    assert_int_equal(tp_op_from_name("matmul", &op), TP_ERR_NOT_FOUND);
    static const char *const dtypes[] = {"f32", "f16", "i32", "q8_0"};
    for (int i = 0; i < 4; i++) {
        tp_dtype d;
        assert_string_equal(tp_dtype_name((tp_dtype)i), dtypes[i]);
        assert_int_equal(tp_dtype_from_name(dtypes[i], &d), TP_OK);
        assert_int_equal(d, i);
    }
    tp_dtype d;
    assert_int_equal(tp_dtype_from_name("f64", &d), TP_ERR_NOT_FOUND);
    int b;
    assert_string_equal(tp_backend_name(TP_BACKEND_CPU), "cpu");
    assert_string_equal(tp_backend_name(TP_BACKEND_QUEUED), "queued");
    assert_string_equal(tp_backend_name(TP_BACKEND_UNSET), "unset");
    for (int i = TP_BACKEND_UNSET; i < TP_MAX_BACKENDS; i++) {
        assert_int_equal(tp_backend_from_name(tp_backend_name(i), &b), TP_OK);
        assert_int_equal(b, i);
    }
    assert_int_equal(tp_backend_from_name("gpu", &b), TP_ERR_NOT_FOUND);
}

static void test_node_init_and_elements(void **state)
{
    (void)state;
    tp_node n = tp_node_init(TP_OP_MUL_MAT, "x");
    assert_string_equal(n.name, "x");
    assert_int_equal(n.op, TP_OP_MUL_MAT);
    assert_int_equal(n.p.layer, -1);
    assert_int_equal(n.backend, TP_BACKEND_UNSET);
    assert_int_equal(n.dtype, TP_DTYPE_F32);
    assert_int_equal(n.n_src, 0);
    assert_null(n.extra);
    assert_int_equal(n.p.weight[0], '\0');
    for (int d = 0; d < 4; d++)
        assert_int_equal(n.shape[d], 1);
    n.shape[0] = 896;
    n.shape[1] = 440;
    n.shape[2] = 3;
    assert_int_equal(tp_node_elements(&n), (size_t)896 * 440 * 3);
    /* a product beyond SIZE_MAX is 0 (unusable), never a wrapped small count:
     * (2^62 + 1) * 4 = 2^64 + 4 would wrap to 4 with 64-bit size_t */
    n.shape[0] = ((int64_t)1 << 62) + 1;
    n.shape[1] = 4;
    n.shape[2] = 1;
    n.shape[3] = 1;
    long double exact = (long double)n.shape[0] * 4.0L;
    assert_true(exact > (long double)SIZE_MAX);
    assert_int_equal(tp_node_elements(&n), 0);
    n.shape[1] = 3;
    assert_int_equal(tp_node_elements(&n), (((size_t)1 << 62) + 1) * 3);
    char longname[100];
    memset(longname, 'a', sizeof longname - 1);
    longname[99] = '\0';
    n = tp_node_init(TP_OP_ADD, longname);
    assert_int_equal(strlen(n.name), TP_NAME_MAX - 1);
}

static void test_build_inputs_outputs_and_copies(void **state)
{
    (void)state;
    tp_graph *g, *h;
    assert_int_equal(tp_graph_create(&g), TP_OK);
    assert_int_equal(tp_graph_create(&h), TP_OK);
    assert_true(g->uid != h->uid);
    size_t a, b, id;
    assert_int_equal(tp_graph_add_input(g, "token_ids", 5, TP_DTYPE_I32, &a), TP_OK);
    assert_int_equal(tp_graph_add_input(g, "positions", 5, TP_DTYPE_I32, &b), TP_OK);
    assert_int_equal(g->n_inputs, 2);
    assert_int_equal(g->nodes[b].shape[0], 5);
    assert_int_equal(g->nodes[b].op, TP_OP_INPUT);
    assert_int_equal(tp_graph_find_input(g, "positions", &id), TP_OK);
    assert_int_equal(id, b);
    assert_int_equal(tp_graph_find_input(g, "tail_ids", &id), TP_ERR_NOT_FOUND);

    /* extra is deep-copied: the caller's string may go away. */
    char *extra = malloc(32);
    assert_non_null(extra);
    strcpy(extra, "{\"meta\":1}");
    tp_node n = tp_node_init(TP_OP_SILU, "s");
    n.n_src = 1;
    n.src[0] = a;
    n.extra = extra;
    n.id = 77;
    assert_int_equal(tp_graph_add_node(g, &n, &id), TP_OK);
    assert_int_equal(id, 2);
    assert_int_equal(g->nodes[id].id, 2);
    assert_true(g->nodes[id].extra != extra);
    strcpy(extra, "{}");
    free(extra);
    assert_string_equal(g->nodes[id].extra, "{\"meta\":1}");

    assert_int_equal(tp_graph_mark_output(g, id), TP_OK);
    assert_int_equal(tp_graph_mark_output(g, id), TP_OK);
    assert_int_equal(g->n_outputs, 1);
    assert_int_equal(tp_graph_mark_output(g, 3), TP_ERR_INVALID);
    n.n_src = TP_MAX_SRC + 1;
    n.extra = NULL;
    assert_int_equal(tp_graph_add_node(g, &n, &id), TP_ERR_INVALID);
    tp_graph_destroy(g);
    tp_graph_destroy(h);
}

static void test_check_refuses_cycles_and_ranges(void **state)
{
    (void)state;
    tp_graph *g;
    assert_int_equal(tp_graph_create(&g), TP_OK);
    size_t x;
    assert_int_equal(tp_graph_add_input(g, "x", 4, TP_DTYPE_F32, &x), TP_OK);
    /* a = add(x, b), b = add(x, a): the builder API allows it, the check must not. */
    size_t a = add(g, TP_OP_ADD, "a", 2, (size_t[]){x, 2}, 4, 1);
    size_t b = add(g, TP_OP_ADD, "b", 2, (size_t[]){x, a}, 4, 1);
    assert_int_equal(b, 2);
    assert_int_equal(tp_graph_mark_output(g, b), TP_OK);
    assert_int_equal(tp_graph_check(g), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "cycle"));
    assert_int_equal(tp_graph_validate(g), TP_ERR_INVALID);

    /* A self-loop is a cycle. */
    g->nodes[a].src[1] = a;
    assert_int_equal(tp_graph_check(g), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "cycle"));

    /* A source after its node but no cycle: check accepts (it is not an order check). */
    g->nodes[a].src[1] = x;
    g->nodes[x].op = TP_OP_INPUT;
    assert_int_equal(tp_graph_check(g), TP_OK);
    assert_int_equal(tp_graph_validate(g), TP_OK);

    g->nodes[b].src[0] = 99;
    assert_int_equal(tp_graph_check(g), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "src[0]"));
    g->nodes[b].src[0] = x;
    g->inputs[0] = 3;
    assert_int_equal(tp_graph_check(g), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "inputs[0]"));
    g->inputs[0] = x;
    g->outputs[0] = 3;
    assert_int_equal(tp_graph_check(g), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "outputs[0]"));
    g->outputs[0] = b;
    assert_int_equal(tp_graph_check(g), TP_OK);
    tp_graph_destroy(g);
}

/* Random graphs with arbitrary (also backward) edges: the Kahn check agrees with a
 * depth-first search on every one. */
static void test_check_agrees_with_dfs(void **state)
{
    (void)state;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int cyclic = 0, acyclic = 0;
    for (int iter = 0; iter < 400; iter++) {
        tp_graph *g;
        assert_int_equal(tp_graph_create(&g), TP_OK);
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = 1 + (size_t)(rng >> 33) % 12;
        for (size_t i = 0; i < n; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            size_t ns = (size_t)(rng >> 33) % 3;
            size_t src[3];
            for (size_t s = 0; s < ns; s++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                /* Mostly forward edges so both outcomes are common. */
                if ((rng >> 40) % 8 == 0)
                    src[s] = (size_t)(rng >> 20) % n;
                else
                    src[s] = i ? (size_t)(rng >> 20) % i : 0;
                if (i == 0 && (rng >> 40) % 8 != 0)
                    ns = s;
            }
            add(g, TP_OP_ADD, "n", ns, src, 4, 1);
        }
        int expect = oracle_has_cycle(g);
        cyclic += expect;
        acyclic += !expect;
        assert_int_equal(tp_graph_check(g), expect ? TP_ERR_INVALID : TP_OK);
        tp_graph_destroy(g);
    }
    assert_true(cyclic > 20);
    assert_true(acyclic > 20);
}

/* A small graph that exercises every op and validates; each refusal case breaks one thing. */
typedef struct base {
    tp_graph *g;
    size_t ids, pos, x, emb, norm, q, k, v, rq, rk, st, ld, at, o, res, s, m, sw, gr;
} base;

static void build_base(base *b)
{
    assert_int_equal(tp_graph_create(&b->g), TP_OK);
    tp_graph *g = b->g;
    g->n_ctx = 16;
    assert_int_equal(tp_graph_add_input(g, "token_ids", 3, TP_DTYPE_I32, &b->ids), TP_OK);
    assert_int_equal(tp_graph_add_input(g, "positions", 3, TP_DTYPE_I32, &b->pos), TP_OK);
    assert_int_equal(tp_graph_add_input(g, "x", 8, TP_DTYPE_F32, &b->x), TP_OK);
    tp_node n = tp_node_init(TP_OP_GET_ROWS, "emb");
    n.n_src = 1;
    n.src[0] = b->ids;
    n.shape[0] = 16;
    n.shape[1] = 3;
    strcpy(n.p.weight, "token_embd.weight");
    assert_int_equal(tp_graph_add_node(g, &n, &b->emb), TP_OK);
    n = tp_node_init(TP_OP_RMS_NORM, "norm");
    n.n_src = 1;
    n.src[0] = b->emb;
    n.shape[0] = 16;
    n.shape[1] = 3;
    n.p.eps = 1e-6f;
    assert_int_equal(tp_graph_add_node(g, &n, &b->norm), TP_OK);
    const char *const names[] = {"q", "k", "v"};
    size_t *dst[] = {&b->q, &b->k, &b->v};
    for (int i = 0; i < 3; i++) {
        n = tp_node_init(TP_OP_MUL_MAT, names[i]);
        n.n_src = 1;
        n.src[0] = b->norm;
        n.shape[0] = i == 0 ? 16 : 8;
        n.shape[1] = 3;
        strcpy(n.p.weight, "w");
        assert_int_equal(tp_graph_add_node(g, &n, dst[i]), TP_OK);
    }
    for (int i = 0; i < 2; i++) {
        n = tp_node_init(TP_OP_ROPE, i ? "rk" : "rq");
        n.n_src = 2;
        n.src[0] = i ? b->k : b->q;
        n.src[1] = b->pos;
        n.shape[0] = i ? 8 : 16;
        n.shape[1] = 3;
        n.p.n_head = i ? 2 : 4;
        n.p.head_dim = 4;
        n.p.rope_base = 10000.0f;
        assert_int_equal(tp_graph_add_node(g, &n, i ? &b->rk : &b->rq), TP_OK);
    }
    n = tp_node_init(TP_OP_KV_STORE, "store");
    n.n_src = 3;
    n.src[0] = b->rk;
    n.src[1] = b->v;
    n.src[2] = b->pos;
    n.shape[0] = 8;
    n.shape[1] = 16;
    n.p.layer = 0;
    n.p.head_dim = 4;
    assert_int_equal(tp_graph_add_node(g, &n, &b->st), TP_OK);
    n = tp_node_init(TP_OP_KV_LOAD, "load");
    n.shape[0] = 8;
    n.shape[1] = 16;
    n.p.layer = 0;
    assert_int_equal(tp_graph_add_node(g, &n, &b->ld), TP_OK);
    n = tp_node_init(TP_OP_ATTN, "attn");
    n.n_src = 3;
    n.src[0] = b->rq;
    n.src[1] = b->ld;
    n.src[2] = b->pos;
    n.shape[0] = 16;
    n.shape[1] = 3;
    n.p.layer = 0;
    n.p.n_head = 4;
    n.p.n_head_kv = 2;
    n.p.head_dim = 4;
    assert_int_equal(tp_graph_add_node(g, &n, &b->at), TP_OK);
    b->o = add(g, TP_OP_MUL_MAT, "o", 1, (size_t[]){b->at}, 16, 3);
    strcpy(g->nodes[b->o].p.weight, "wo");
    b->res = add(g, TP_OP_ADD, "res", 2, (size_t[]){b->emb, b->o}, 16, 3);
    b->s = add(g, TP_OP_SILU, "s", 1, (size_t[]){b->res}, 16, 3);
    b->m = add(g, TP_OP_MUL, "m", 2, (size_t[]){b->s, b->res}, 16, 3);
    b->sw = add(g, TP_OP_SWIGLU, "sw", 2, (size_t[]){b->m, b->res}, 16, 3);
    n = tp_node_init(TP_OP_GET_ROWS, "gr");
    n.n_src = 2;
    n.src[0] = b->sw;
    n.src[1] = b->ids;
    n.shape[0] = 16;
    n.shape[1] = 3;
    assert_int_equal(tp_graph_add_node(g, &n, &b->gr), TP_OK);
    assert_int_equal(tp_graph_mark_output(g, b->gr), TP_OK);
}

static void expect_refusal(const char *label, const tp_graph *g, const char *node_name,
                           const char *where, const char *text)
{
    if (tp_graph_validate(g) != TP_ERR_INVALID)
        fail_msg("case %s: not refused", label);
    const char *msg = tp_last_error();
    if ((node_name && !strstr(msg, node_name)) || !strstr(msg, where) ||
        (text && !strstr(msg, text)))
        fail_msg("case %s: message '%s' lacks '%s' / '%s' / '%s'", label, msg,
                 node_name ? node_name : "", where, text ? text : "");
    size_t bad = 0;
    char w[32];
    assert_int_equal(tp_graph_validate_detail(g, &bad, w, sizeof w), TP_ERR_INVALID);
    assert_non_null(strstr(where, w));
}

static void test_validate_accepts_base(void **state)
{
    (void)state;
    base b;
    build_base(&b);
    assert_int_equal(tp_graph_validate(b.g), TP_OK);
    tp_graph_destroy(b.g);
}

typedef void (*mutate_fn)(base *b);
typedef struct vcase {
    const char *label;
    mutate_fn mutate;
    const char *node, *where, *text;
} vcase;

#define MUT(name, body) static void name(base *b) { tp_graph *g = b->g; (void)g; body; }
MUT(m_arity, g->nodes[b->res].n_src = 1)
MUT(m_add_shape, g->nodes[b->o].shape[0] = 15; g->nodes[b->res].src[1] = b->o)
MUT(m_store_layer, g->nodes[b->st].p.layer = -1)
MUT(m_load_layer, g->nodes[b->ld].p.layer = -1)
MUT(m_attn_layer, g->nodes[b->at].p.layer = -1)
MUT(m_no_ctx, g->n_ctx = 0)
MUT(m_ctx_mismatch, g->nodes[b->ld].shape[1] = 32)
MUT(m_kv_width, g->nodes[b->ld].shape[0] = 12; g->nodes[b->ld].p.head_dim = 4)
MUT(m_rope_heads, g->nodes[b->rq].p.n_head = 3)
MUT(m_rope_odd, g->nodes[b->rq].p.head_dim = 3)
MUT(m_rope_pos_dtype, g->nodes[b->pos].dtype = TP_DTYPE_F32)
MUT(m_rope_mode, g->nodes[b->rq].p.rope_mode = 2)
MUT(m_rope_freq_scale, g->nodes[b->rq].p.rope_freq_scale = 0.0f)
MUT(m_rope_attn_factor, g->nodes[b->rq].p.rope_attn_factor = -1.0f)
MUT(m_rope_ext_factor, g->nodes[b->rq].p.rope_ext_factor = NAN)
MUT(m_rope_yarn_ctx, g->nodes[b->rq].p.rope_ext_factor = 1.0f)
MUT(m_attn_src1, g->nodes[b->at].src[1] = b->rq)
MUT(m_attn_other_layer, g->nodes[b->ld].p.layer = 1)
MUT(m_attn_gqa, g->nodes[b->at].p.n_head_kv = 3)
MUT(m_mulmat_weight, g->nodes[b->o].p.weight[0] = '\0')
MUT(m_mulmat_rows, g->nodes[b->o].shape[1] = 2)
MUT(m_getrows_ids, g->nodes[b->emb].src[0] = b->x)
MUT(m_input_unlisted, g->n_inputs = 2)
MUT(m_dtype, g->nodes[b->s].dtype = TP_DTYPE_F16)
MUT(m_zero_shape, g->nodes[b->s].shape[2] = 0)
MUT(m_backend, g->nodes[b->s].backend = TP_MAX_BACKENDS)
MUT(m_inputs_not_input, g->inputs[2] = b->s)
MUT(m_dup_input_name, strcpy(g->nodes[b->x].name, "positions"))
/* two repeats, inputs[2] (positions) and inputs[3] (token_ids): the first one is named */
MUT(m_two_repeats, size_t extra; strcpy(g->nodes[b->x].name, "positions");
    assert_int_equal(tp_graph_add_input(g, "token_ids", 3, TP_DTYPE_I32, &extra), TP_OK))
MUT(m_store_tokens, g->nodes[b->st].shape[1] = 2; g->nodes[b->ld].shape[1] = 2; g->n_ctx = 2)
MUT(m_eps, g->nodes[b->norm].p.eps = -1.0f)
MUT(m_src_range, g->nodes[b->m].src[1] = 1000)
/* 2^62 f32 elements: the count fits in size_t, the bytes (2^64) do not */
MUT(m_huge_bytes, g->nodes[b->s].shape[0] = (int64_t)1 << 31; g->nodes[b->s].shape[1] = 1;
    g->nodes[b->s].shape[2] = (int64_t)1 << 31)

static void test_validate_refusals(void **state)
{
    (void)state;
    static const vcase cases[] = {
        {"arity", m_arity, "(res)", "src", "expected 2 sources for op add, got 1"},
        {"add shapes", m_add_shape, "(res)", "src[1]", "expected a source of the node's shape"},
        {"kv_store layer", m_store_layer, "(store)", "layer", "expected a layer >= 0"},
        {"kv_load layer", m_load_layer, "(load)", "layer", "expected a layer >= 0"},
        {"attn layer", m_attn_layer, "(attn)", "layer", "expected a layer >= 0"},
        {"no n_ctx", m_no_ctx, NULL, "n_ctx", "expected a positive context length"},
        {"ctx mismatch", m_ctx_mismatch, "(load)", "shape[1]", "n_ctx = 16"},
        {"kv width", m_kv_width, "(load)", "shape", "same layer's KV region"},
        {"rope heads", m_rope_heads, "(rq)", "shape[0]", "n_head * head_dim"},
        {"rope odd head_dim", m_rope_odd, "(rq)", "head_dim", "even"},
        {"positions dtype", m_rope_pos_dtype, "(rq)", "src[1]", "i32"},
        {"rope mode", m_rope_mode, "(rq)", "rope_mode", "neox (0) or norm (1), got 2"},
        {"rope freq_scale", m_rope_freq_scale, "(rq)", "rope_freq_scale", "> 0, got 0"},
        {"rope attn_factor", m_rope_attn_factor, "(rq)", "rope_attn_factor", "> 0, got -1"},
        {"rope ext_factor", m_rope_ext_factor, "(rq)", "rope_ext_factor", "finite"},
        {"rope YaRN context", m_rope_yarn_ctx, "(rq)", "rope_n_ctx_orig", "> 0 with"},
        {"attn src[1]", m_attn_src1, "(attn)", "src[1]", "kv_load of layer 0"},
        /* attention must read its own layer's cache, not a well-formed other one */
        {"attn other layer", m_attn_other_layer, "(attn)", "src[1]", "kv_load of layer 0"},
        {"attn gqa", m_attn_gqa, "(attn)", "n_head_kv", "divisor"},
        {"mul_mat weight", m_mulmat_weight, "(o)", "weight", "got none"},
        {"mul_mat rows", m_mulmat_rows, "(o)", "src[0]", "node's rows"},
        {"get_rows ids", m_getrows_ids, "(emb)", "src[0]", "i32"},
        {"input unlisted", m_input_unlisted, "(x)", "op", "listed in inputs"},
        {"dtype", m_dtype, "(s)", "dtype", "expected f32 for op silu, got f16"},
        {"zero extent", m_zero_shape, "(s)", "shape[2]", "positive extent, got 0"},
        {"backend", m_backend, "(s)", "backend", "expected a backend"},
        {"inputs entry", m_inputs_not_input, NULL, "inputs[2]", "id of an input node"},
        {"duplicate input", m_dup_input_name, NULL, "inputs[2]", "distinct input"},
        {"first of two repeats", m_two_repeats, NULL, "inputs[2]", "distinct input"},
        {"store over ctx", m_store_tokens, "(store)", "src[0]", "at most 2 tokens"},
        {"eps", m_eps, "(norm)", "eps", "eps >= 0"},
        {"src range", m_src_range, "(m)", "src[1]", "out of range"},
        {"bytes overflow", m_huge_bytes, "(s)", "shape", "f32 bytes that fit"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        base b;
        build_base(&b);
        cases[i].mutate(&b);
        expect_refusal(cases[i].label, b.g, cases[i].node, cases[i].where, cases[i].text);
        tp_graph_destroy(b.g);
    }
}

/* x, y inputs [8]; silu(x) feeding mul in the position and company each case asks for. */
static void test_fusion_rewrites_and_orphans(void **state)
{
    (void)state;
    for (int variant = 0; variant < 6; variant++) {
        tp_graph *g;
        assert_int_equal(tp_graph_create(&g), TP_OK);
        size_t x, y;
        assert_int_equal(tp_graph_add_input(g, "x", 8, TP_DTYPE_F32, &x), TP_OK);
        assert_int_equal(tp_graph_add_input(g, "y", 8, TP_DTYPE_F32, &y), TP_OK);
        size_t s = add(g, TP_OP_SILU, "s", 1, (size_t[]){x}, 8, 1);
        /* variant 1: silu second; 2: silu also read elsewhere; 3: silu is an output;
         * 4: silu on another backend; 5: mul(silu, silu). */
        size_t m = variant == 1   ? add(g, TP_OP_MUL, "m", 2, (size_t[]){y, s}, 8, 1)
                   : variant == 5 ? add(g, TP_OP_MUL, "m", 2, (size_t[]){s, s}, 8, 1)
                                  : add(g, TP_OP_MUL, "m", 2, (size_t[]){s, y}, 8, 1);
        size_t out = m;
        if (variant == 2)
            out = add(g, TP_OP_ADD, "other", 2, (size_t[]){s, m}, 8, 1);
        assert_int_equal(tp_graph_mark_output(g, out), TP_OK);
        if (variant == 3)
            assert_int_equal(tp_graph_mark_output(g, s), TP_OK);
        assert_int_equal(tp_graph_assign_backends(g, 0), TP_OK);
        if (variant == 4)
            g->nodes[s].backend = TP_BACKEND_QUEUED;
        size_t before_x = consumers_of(g, x);
        size_t fused = 99;
        assert_int_equal(tp_graph_fuse_swiglu(g, &fused), TP_OK);
        int expect = variant <= 1;
        assert_int_equal(fused, (size_t)expect);
        if (expect) {
            assert_int_equal(g->nodes[m].op, TP_OP_SWIGLU);
            assert_int_equal(g->nodes[m].n_src, 2);
            assert_int_equal(g->nodes[m].src[0], x);
            assert_int_equal(g->nodes[m].src[1], y);
            /* The silu stays in place with no consumer: dead, not removed. */
            assert_int_equal(g->nodes[s].op, TP_OP_SILU);
            assert_int_equal(consumers_of(g, s), 0);
            assert_int_equal(consumers_of(g, x), before_x + 1);
            assert_int_equal(tp_graph_count_dead(g), 1);
        } else {
            assert_int_equal(g->nodes[m].op, TP_OP_MUL);
            assert_true(consumers_of(g, s) >= 1 || variant == 3);
            assert_int_equal(tp_graph_count_dead(g), 0);
        }
        assert_int_equal(g->n_nodes, variant == 2 ? 5 : 4);
        assert_int_equal(tp_graph_validate(g), TP_OK);
        tp_graph_destroy(g);
    }
}

/* Fusion on a whole model: one per layer, and every silu left without a consumer. */
static void test_fusion_on_model(void **state)
{
    (void)state;
    tp_model_config cfg;
    assert_int_equal(tp_model_config_builtin("tiny", &cfg), TP_OK);
    tp_graph_params p = {.n_tokens = 5, .n_out = 5, .n_ctx = 64};
    tp_graph *g;
    assert_int_equal(tp_model_build_graph(&cfg, &p, &g), TP_OK);
    size_t fused = 0;
    assert_int_equal(tp_graph_fuse_swiglu(g, &fused), TP_OK);
    assert_int_equal(fused, (size_t)cfg.n_layer);
    size_t silus = 0, swiglus = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].op == TP_OP_SILU) {
            silus++;
            assert_int_equal(consumers_of(g, i), 0);
        }
        if (g->nodes[i].op == TP_OP_SWIGLU) {
            swiglus++;
            assert_int_equal(g->nodes[g->nodes[i].src[0]].op, TP_OP_MUL_MAT);
            assert_non_null(strstr(g->nodes[g->nodes[i].src[0]].name, "ffn_gate"));
            assert_non_null(strstr(g->nodes[g->nodes[i].src[1]].name, "ffn_up"));
        }
        assert_int_equal(g->nodes[i].op == TP_OP_MUL, 0);
    }
    assert_int_equal(silus, (size_t)cfg.n_layer);
    assert_int_equal(swiglus, (size_t)cfg.n_layer);
    /* A second pass has nothing left to fuse. */
    assert_int_equal(tp_graph_fuse_swiglu(g, &fused), TP_OK);
    assert_int_equal(fused, 0);
    tp_graph_destroy(g);
}

static void test_assignment_layers(void **state)
{
    (void)state;
    tp_model_config cfg;
    assert_int_equal(tp_model_config_builtin("tiny", &cfg), TP_OK);
    for (int k = 0; k <= cfg.n_layer + 1; k++) {
        tp_graph_params p = {.n_tokens = 3, .n_out = 1, .n_ctx = 32, .queued_layers = k};
        tp_graph *g;
        assert_int_equal(tp_model_build_graph(&cfg, &p, &g), TP_OK);
        size_t queued = 0;
        for (size_t i = 0; i < g->n_nodes; i++) {
            const tp_node *n = &g->nodes[i];
            /* Layer from the name, independent of p.layer. */
            int layer = -1;
            if (strncmp(n->name, "blk.", 4) == 0)
                layer = atoi(n->name + 4);
            int want = (layer >= 0 && layer < k) ? TP_BACKEND_QUEUED : TP_BACKEND_CPU;
            assert_int_equal(n->backend, want);
            queued += n->backend == TP_BACKEND_QUEUED;
        }
        size_t per_layer = 18;
        size_t expect = 0;
        for (int L = 0; L < k && L < cfg.n_layer; L++)
            expect += per_layer + (L == cfg.n_layer - 1 ? 2 : 0);
        assert_int_equal(queued, expect);
        tp_graph_destroy(g);
    }

    /* Nodes already assigned keep their backend; the rest follow the rule. */
    tp_graph *g;
    assert_int_equal(tp_graph_create(&g), TP_OK);
    size_t x;
    assert_int_equal(tp_graph_add_input(g, "x", 4, TP_DTYPE_F32, &x), TP_OK);
    tp_node n = tp_node_init(TP_OP_SILU, "a");
    n.n_src = 1;
    n.src[0] = x;
    n.p.layer = 0;
    size_t a, b2, c;
    assert_int_equal(tp_graph_add_node(g, &n, &a), TP_OK);
    n.backend = TP_BACKEND_CPU;
    assert_int_equal(tp_graph_add_node(g, &n, &b2), TP_OK);
    n.backend = TP_BACKEND_UNSET;
    n.p.layer = 1;
    assert_int_equal(tp_graph_add_node(g, &n, &c), TP_OK);
    assert_int_equal(tp_graph_assign_backends(g, 1), TP_OK);
    assert_int_equal(g->nodes[x].backend, TP_BACKEND_CPU);
    assert_int_equal(g->nodes[a].backend, TP_BACKEND_QUEUED);
    assert_int_equal(g->nodes[b2].backend, TP_BACKEND_CPU);
    assert_int_equal(g->nodes[c].backend, TP_BACKEND_CPU);
    assert_int_equal(tp_graph_assign_backends(g, -1), TP_ERR_INVALID);
    tp_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_node_init_and_elements),
        cmocka_unit_test(test_build_inputs_outputs_and_copies),
        cmocka_unit_test(test_check_refuses_cycles_and_ranges),
        cmocka_unit_test(test_check_agrees_with_dfs),
        cmocka_unit_test(test_validate_accepts_base),
        cmocka_unit_test(test_validate_refusals),
        cmocka_unit_test(test_fusion_rewrites_and_orphans),
        cmocka_unit_test(test_fusion_on_model),
        cmocka_unit_test(test_assignment_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
