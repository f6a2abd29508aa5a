/* Test support: random decoder-like graphs (see random_graph.h). */
#include "support/random_graph.h"

#include <stdio.h>
#include <string.h>

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next_u64(rng *r)
{
    /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t below(rng *r, size_t n)
{
    return n ? (size_t)(next_u64(r) % n) : 0;
}

static double unit(rng *r)
{
    return (double)(next_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

tpt_random_graph_options tpt_random_graph_defaults(void)
{
    tpt_random_graph_options o;
    memset(&o, 0, sizeof o);
    o.n_nodes = 40;
    o.n_backends = 2;
    o.n_layers = 3;
    o.n_ctx = 16;
    o.vocab = 64;
    return o;
}

#define HD 4
#define KV_WIDTH 8
#define MAX_VALS 512

typedef struct gen {
    rng r;
    tp_graph *g;
    tpt_random_graph_options o;
    size_t nt;
    size_t positions, token_ids; /* SIZE_MAX when absent */
    size_t vals[MAX_VALS];       /* f32 activations of nt tokens */
    size_t n_vals;
    int backend;                 /* current run's backend */
    size_t n_inputs_f32;
    tp_status st;
} gen;

static int width_of(const gen *G, size_t id)
{
    return (int)G->g->nodes[id].shape[0];
}

static int pick_backend(gen *G)
{
    if (G->o.n_backends > 1 && unit(&G->r) < 0.25)
        G->backend = G->backend == TP_BACKEND_CPU ? TP_BACKEND_QUEUED : TP_BACKEND_CPU;
    return G->backend;
}

static size_t add(gen *G, tp_node *nd)
{
    size_t id = SIZE_MAX;
    if (G->st != TP_OK)
        return SIZE_MAX;
    G->st = tp_graph_add_node(G->g, nd, &id);
    return id;
}

static void push_val(gen *G, size_t id)
{
    if (id == SIZE_MAX)
        return;
    if (G->n_vals == MAX_VALS) {
        memmove(G->vals, G->vals + 1, (MAX_VALS - 1) * sizeof G->vals[0]);
        G->n_vals--;
    }
    G->vals[G->n_vals++] = id;
}

/* Recent values are likelier (chains), old ones possible (long lives). */
static size_t pick_val(gen *G)
{
    size_t back = 0;
    while (back + 1 < G->n_vals && unit(&G->r) < 0.45)
        back++;
    if (unit(&G->r) < 0.15)
        back = below(&G->r, G->n_vals);
    return G->vals[G->n_vals - 1 - back];
}

static size_t pick_val_width(gen *G, int width)
{
    size_t start = below(&G->r, G->n_vals);
    for (size_t k = 0; k < G->n_vals; k++) {
        size_t i = G->vals[G->n_vals - 1 - (start + k) % G->n_vals];
        if (width_of(G, i) == width)
            return i;
    }
    return SIZE_MAX;
}

static tp_node act(tp_op op, const char *name, int width, size_t nt, int backend)
{
    tp_node nd = tp_node_init(op, name);
    nd.shape[0] = width;
    nd.shape[1] = (int64_t)nt;
    nd.shape[2] = nd.shape[3] = 1;
    nd.dtype = TP_DTYPE_F32;
    nd.backend = backend;
    return nd;
}

static size_t new_input_f32(gen *G)
{
    static const int widths[] = {8, 16, 24};
    char name[TP_NAME_MAX];
    int w = widths[below(&G->r, 3)];
    snprintf(name, sizeof name, "x%zu", G->n_inputs_f32++);
    size_t id = SIZE_MAX;
    if (G->st == TP_OK)
        G->st = tp_graph_add_input(G->g, name, (size_t)w * G->nt, TP_DTYPE_F32, &id);
    if (G->st != TP_OK)
        return SIZE_MAX;
    G->g->nodes[id].shape[0] = w;
    G->g->nodes[id].shape[1] = (int64_t)G->nt;
    G->g->nodes[id].backend = TP_BACKEND_CPU;
    return id;
}

static size_t mul_mat(gen *G, size_t x, int out_width, int backend)
{
    char name[TP_NAME_MAX];
    size_t k = G->g->n_nodes;
    snprintf(name, sizeof name, "mm.%zu", k);
    tp_node nd = act(TP_OP_MUL_MAT, name, out_width, G->nt, backend);
    nd.n_src = 1;
    nd.src[0] = x;
    snprintf(nd.p.weight, sizeof nd.p.weight, "rg.mm.%zu", k);
    if (unit(&G->r) < 0.5)
        snprintf(nd.p.bias, sizeof nd.p.bias, "rg.mmb.%zu", k);
    return add(G, &nd);
}

static void emit_kv_layer(gen *G, int layer, size_t *pending_load_layer)
{
    int be = pick_backend(G);
    size_t k = pick_val_width(G, KV_WIDTH);
    if (k == SIZE_MAX)
        k = mul_mat(G, pick_val(G), KV_WIDTH, be);
    size_t v = mul_mat(G, pick_val(G), KV_WIDTH, be);
    if (unit(&G->r) < 0.5) {
        /* rope on K, as in a decoder layer */
        tp_node rn = act(TP_OP_ROPE, "rope.k", KV_WIDTH, G->nt, be);
        rn.n_src = 2;
        rn.src[0] = k;
        rn.src[1] = G->positions;
        rn.p.n_head = KV_WIDTH / HD;
        rn.p.head_dim = HD;
        rn.p.rope_base = 10000.0f;
        k = add(G, &rn);
    }
    char name[TP_NAME_MAX];
    snprintf(name, sizeof name, "kv_store.%d", layer);
    tp_node st = tp_node_init(TP_OP_KV_STORE, name);
    st.shape[0] = KV_WIDTH;
    st.shape[1] = (int64_t)G->o.n_ctx;
    st.shape[2] = st.shape[3] = 1;
    st.dtype = TP_DTYPE_F32;
    st.backend = be;
    st.n_src = 3;
    st.src[0] = k;
    st.src[1] = v;
    st.src[2] = G->positions;
    st.p.layer = layer;
    st.p.head_dim = HD;
    st.p.n_head_kv = KV_WIDTH / HD;
    add(G, &st);
    *pending_load_layer = (size_t)layer;
}

static void emit_load_attn(gen *G, int layer)
{
    int be = TP_BACKEND_CPU;
    /* the layer's nodes stay on the backend of its store */
    for (size_t i = G->g->n_nodes; i-- > 0;) {
        const tp_node *n = &G->g->nodes[i];
        if (n->op == TP_OP_KV_STORE && n->p.layer == layer) {
            be = n->backend;
            break;
        }
    }
    char name[TP_NAME_MAX];
    snprintf(name, sizeof name, "kv_load.%d", layer);
    tp_node ld = tp_node_init(TP_OP_KV_LOAD, name);
    ld.shape[0] = KV_WIDTH;
    ld.shape[1] = (int64_t)G->o.n_ctx;
    ld.shape[2] = ld.shape[3] = 1;
    ld.dtype = TP_DTYPE_F32;
    ld.backend = be;
    ld.p.layer = layer;
    ld.p.head_dim = HD;
    ld.p.n_head_kv = KV_WIDTH / HD;
    size_t lid = add(G, &ld);
    static const int widths[] = {8, 16, 24};
    int w = widths[below(&G->r, 3)];
    size_t q = pick_val_width(G, w);
    if (q == SIZE_MAX)
        q = mul_mat(G, pick_val(G), w, be);
    snprintf(name, sizeof name, "attn.%d", layer);
    tp_node at = act(TP_OP_ATTN, name, w, G->nt, be);
    at.n_src = 3;
    at.src[0] = q;
    at.src[1] = lid;
    at.src[2] = G->positions;
    at.p.layer = layer;
    at.p.n_head = w / HD;
    at.p.n_head_kv = KV_WIDTH / HD;
    at.p.head_dim = HD;
    push_val(G, add(G, &at));
}

static void emit_random(gen *G)
{
    static const int widths[] = {8, 16, 24};
    int be = pick_backend(G);
    double u = unit(&G->r);
    size_t x = pick_val(G);
    int w = width_of(G, x);
    char name[TP_NAME_MAX];
    snprintf(name, sizeof name, "n%zu", G->g->n_nodes);
    if (u < 0.14) {
        tp_node nd = act(TP_OP_RMS_NORM, name, w, G->nt, be);
        nd.n_src = 1;
        nd.src[0] = x;
        nd.p.eps = 1e-5f;
        snprintf(nd.p.weight, sizeof nd.p.weight, "rg.norm.%zu", G->g->n_nodes);
        push_val(G, add(G, &nd));
    } else if (u < 0.30) {
        push_val(G, mul_mat(G, x, widths[below(&G->r, 3)], be));
    } else if (u < 0.58) {
        static const tp_op ops[] = {TP_OP_ADD, TP_OP_MUL, TP_OP_SWIGLU};
        size_t y = unit(&G->r) < 0.1 ? x : pick_val_width(G, w);
        tp_node nd = act(ops[below(&G->r, 3)], name, w, G->nt, be);
        nd.n_src = 2;
        nd.src[0] = x;
        nd.src[1] = y;
        push_val(G, add(G, &nd));
    } else if (u < 0.72) {
        tp_node nd = act(TP_OP_SILU, name, w, G->nt, be);
        nd.n_src = 1;
        nd.src[0] = x;
        push_val(G, add(G, &nd));
    } else if (u < 0.86) {
        tp_node nd = act(TP_OP_ROPE, name, w, G->nt, be);
        nd.n_src = 2;
        nd.src[0] = x;
        nd.src[1] = G->positions;
        nd.p.n_head = w / HD;
        nd.p.head_dim = HD;
        nd.p.rope_base = 10000.0f;
        push_val(G, add(G, &nd));
    } else if (u < 0.93 && G->token_ids != SIZE_MAX) {
        tp_node nd = act(TP_OP_GET_ROWS, name, widths[below(&G->r, 3)], G->nt, be);
        nd.n_src = 1;
        nd.src[0] = G->token_ids;
        snprintf(nd.p.weight, sizeof nd.p.weight, "rg.emb.%zu", G->g->n_nodes);
        push_val(G, add(G, &nd));
    } else {
        push_val(G, new_input_f32(G));
    }
}

tp_status tpt_random_graph(uint64_t seed, const tpt_random_graph_options *opts, tp_graph **out)
{
    gen G;
    memset(&G, 0, sizeof G);
    G.r.s = seed * 0x2545F4914F6CDD1Dull + 1;
    tpt_random_graph_options d = tpt_random_graph_defaults();
    G.o = opts ? *opts : d;
    if (!G.o.n_nodes)
        G.o.n_nodes = d.n_nodes;
    if (!G.o.n_backends)
        G.o.n_backends = d.n_backends;
    if (!G.o.n_ctx)
        G.o.n_ctx = d.n_ctx;
    if (!G.o.vocab)
        G.o.vocab = d.vocab;
    if (G.o.n_layers < 0)
        G.o.n_layers = 0;
    G.nt = G.o.n_tokens ? G.o.n_tokens : 1 + below(&G.r, 4);
    if (G.nt > G.o.n_ctx)
        G.nt = G.o.n_ctx;
    G.backend = TP_BACKEND_CPU;
    G.positions = G.token_ids = SIZE_MAX;
    G.st = tp_graph_create(&G.g);
    if (G.st != TP_OK)
        return G.st;
    G.g->n_ctx = (int64_t)G.o.n_ctx;
    G.st = tp_graph_add_input(G.g, "positions", G.nt, TP_DTYPE_I32, &G.positions);
    if (G.st == TP_OK)
        G.g->nodes[G.positions].backend = TP_BACKEND_CPU;
    if (G.st == TP_OK && unit(&G.r) < 0.6) {
        G.st = tp_graph_add_input(G.g, "token_ids", G.nt, TP_DTYPE_I32, &G.token_ids);
        if (G.st == TP_OK)
            G.g->nodes[G.token_ids].backend = TP_BACKEND_CPU;
    }
    push_val(&G, new_input_f32(&G));
    int layer = 0;
    size_t pending = SIZE_MAX;
    size_t target = G.o.n_nodes;
    while (G.st == TP_OK && G.g->n_nodes < target) {
        double u = unit(&G.r);
        if (pending != SIZE_MAX && u < 0.3) {
            emit_load_attn(&G, (int)pending);
            pending = SIZE_MAX;
        } else if (pending == SIZE_MAX && layer < G.o.n_layers && u < 0.12) {
            emit_kv_layer(&G, layer++, &pending);
        } else {
            emit_random(&G);
        }
    }
    if (G.st == TP_OK && pending != SIZE_MAX)
        emit_load_attn(&G, (int)pending);
    if (G.st == TP_OK) {
        size_t last = G.vals[G.n_vals - 1];
        G.st = tp_graph_mark_output(G.g, last);
        size_t extra = below(&G.r, 3);
        for (size_t k = 0; k < extra && G.st == TP_OK; k++) {
            size_t o = G.vals[below(&G.r, G.n_vals)];
            int dup = 0, is_in = 0;
            for (size_t j = 0; j < G.g->n_outputs; j++)
                dup |= G.g->outputs[j] == o;
            for (size_t j = 0; j < G.g->n_inputs; j++)
                is_in |= G.g->inputs[j] == o;
            if (!dup && !is_in)
                G.st = tp_graph_mark_output(G.g, o);
        }
    }
    if (G.st != TP_OK) {
        tp_graph_destroy(G.g);
        return G.st;
    }
    *out = G.g;
    return TP_OK;
}

static void fill_uniform(rng *r, float *data, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        data[i] = lo + (hi - lo) * (float)unit(r);
}

static tp_status add_weight(tp_weights *w, const char *name, size_t rows, size_t cols,
                            uint64_t seed, float lo, float hi)
{
    if (tp_weights_find(w, name))
        return TP_OK;
    float *data = NULL;
    tp_status st = tp_weights_add(w, name, rows, cols, &data);
    if (st != TP_OK)
        return st;
    rng r = {seed};
    for (const char *c = name; *c; c++)
        r.s = r.s * 131 + (unsigned char)*c;
    fill_uniform(&r, data, rows * cols, lo, hi);
    return TP_OK;
}

tp_status tpt_random_graph_weights(const tp_graph *g, size_t vocab, uint64_t seed,
                                   tp_weights **out)
{
    tp_weights *w = NULL;
    tp_status st = tp_weights_create(&w);
    for (size_t i = 0; st == TP_OK && i < g->n_nodes; i++) {
        const tp_node *n = &g->nodes[i];
        size_t d = (size_t)n->shape[0];
        if (n->op == TP_OP_RMS_NORM && n->p.weight[0])
            st = add_weight(w, n->p.weight, 1, d, seed, 0.5f, 1.5f);
        else if (n->op == TP_OP_MUL_MAT) {
            size_t in = (size_t)g->nodes[n->src[0]].shape[0];
            st = add_weight(w, n->p.weight, d, in, seed, -0.5f, 0.5f);
            if (st == TP_OK && n->p.bias[0])
                st = add_weight(w, n->p.bias, 1, d, seed, -0.5f, 0.5f);
        } else if (n->op == TP_OP_GET_ROWS && n->n_src == 1 && n->p.weight[0]) {
            st = add_weight(w, n->p.weight, vocab, d, seed, -0.5f, 0.5f);
        }
    }
    if (st != TP_OK) {
        tp_weights_destroy(w);
        return st;
    }
    *out = w;
    return TP_OK;
}

void tpt_random_input_data(const tp_graph *g, size_t node, uint64_t seed, size_t vocab,
                           size_t n_ctx, float *out)
{
    const tp_node *n = &g->nodes[node];
    size_t elems = tp_node_elements(n);
    rng r = {seed ^ (0x51ED2701ull * (node + 1))};
    if (n->dtype == TP_DTYPE_I32) {
        int is_pos = strcmp(n->name, "positions") == 0;
        size_t p0 = is_pos && n_ctx > elems ? below(&r, n_ctx - elems + 1) : 0;
        for (size_t i = 0; i < elems; i++) {
            uint32_t v = is_pos ? (uint32_t)(p0 + i) : (uint32_t)below(&r, vocab ? vocab : 1);
            memcpy(&out[i], &v, sizeof v);
        }
    } else {
        fill_uniform(&r, out, elems, -1.0f, 1.0f);
    }
}
