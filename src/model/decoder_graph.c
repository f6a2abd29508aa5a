/* The decoder of both families (qwen2, llama): built-in configs and the graph builder of
 * docs/engine.md. */
#include "tensorplan/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "tensorplan/model_family.h"

static const tp_model_config builtin_configs[] = {
    {.name = "qwen2.5-0.5b",
     .n_embd = 896,
     .n_head = 14,
     .n_head_kv = 2,
     .head_dim = 64,
     .n_ff = 4864,
     .n_layer = 24,
     .vocab = 151936,
     .max_ctx = 32768,
     .rms_eps = 1e-6f,
     .rope_base = 1e6f,
     .qkv_bias = 1,
     .tied_embeddings = 1,
     .arch = TP_ARCH_QWEN2,
     .rope_mode = TP_ROPE_NEOX,
     .rope_freq_scale = 1.0f,
     .rope_attn_factor = 1.0f},
    /* Small enough that tests execute it in milliseconds, yet grouped-query (2 query heads per
     * KV head) and with more than one layer so per-layer placement is observable. */
    {.name = "tiny",
     .n_embd = 32,
     .n_head = 4,
     .n_head_kv = 2,
     .head_dim = 8,
     .n_ff = 64,
     .n_layer = 3,
     .vocab = 97,
     .max_ctx = 512,
     .rms_eps = 1e-6f,
     .rope_base = 10000.0f,
     .qkv_bias = 1,
     .tied_embeddings = 1,
     .arch = TP_ARCH_QWEN2,
     .rope_mode = TP_ROPE_NEOX,
     .rope_freq_scale = 1.0f,
     .rope_attn_factor = 1.0f},
    /* Test models written as GGUF files (tensorplan write-model): a vocabulary of 512 holds
     * the 256 byte tokens plus learnt pieces, and every width is a multiple of 32 so Q8_0
     * blocks fit. */
    {.name = "tiny-qwen2",
     .n_embd = 64,
     .n_head = 4,
     .n_head_kv = 2,
     .head_dim = 16,
     .n_ff = 128,
     .n_layer = 2,
     .vocab = 512,
     .max_ctx = 256,
     .rms_eps = 1e-6f,
     .rope_base = 1e6f,
     .qkv_bias = 1,
     .tied_embeddings = 1,
     .arch = TP_ARCH_QWEN2,
     .rope_mode = TP_ROPE_NEOX,
     .rope_freq_scale = 1.0f,
     .rope_attn_factor = 1.0f},
    /* The shapes of Llama 3.2 1B (tied embeddings, grouped-query 4:1), for benchmarks of the
     * files people download; its rope_freqs scaling is not part of the built-in config. */
    {.name = "llama-3.2-1b",
     .n_embd = 2048,
     .n_head = 32,
     .n_head_kv = 8,
     .head_dim = 64,
     .n_ff = 8192,
     .n_layer = 16,
     .vocab = 128256,
     .max_ctx = 131072,
     .rms_eps = 1e-5f,
     .rope_base = 500000.0f,
     .tied_embeddings = 1,
     .arch = TP_ARCH_LLAMA,
     .rope_mode = TP_ROPE_NORM,
     .rope_freq_scale = 1.0f,
     .rope_attn_factor = 1.0f},
    {.name = "tiny-llama",
     .n_embd = 64,
     .n_head = 4,
     .n_head_kv = 2,
     .head_dim = 16,
     .n_ff = 160,
     .n_layer = 2,
     .vocab = 512,
     .max_ctx = 256,
     .rms_eps = 1e-5f,
     .rope_base = 10000.0f,
     .tied_embeddings = 0,
     .arch = TP_ARCH_LLAMA,
     .rope_mode = TP_ROPE_NORM,
     .rope_freq_scale = 1.0f,
     .rope_attn_factor = 1.0f},
};
#define BUILTIN_COUNT (sizeof builtin_configs / sizeof builtin_configs[0])

tp_status tp_model_config_builtin(const char *name, tp_model_config *config)
{
    if (!name || !config)
        return tp_fail(TP_ERR_INVALID, "tp_model_config_builtin: NULL argument");
    for (size_t i = 0; i < BUILTIN_COUNT; i++) {
        if (strcmp(builtin_configs[i].name, name) == 0) {
            *config = builtin_configs[i];
            return TP_OK;
        }
    }
    return tp_fail(TP_ERR_NOT_FOUND, "unknown model '%s' (built-in: %s)", name,
                   tp_model_builtin_names());
}

const char *tp_model_builtin_names(void)
{
    return "qwen2.5-0.5b, llama-3.2-1b, tiny, tiny-qwen2, tiny-llama";
}

static tp_status check_config(const tp_model_config *c)
{
    if (c->n_embd <= 0 || c->n_head <= 0 || c->n_head_kv <= 0 || c->head_dim <= 0 ||
        c->n_ff <= 0 || c->n_layer <= 0 || c->vocab <= 0 || c->max_ctx <= 0)
        return tp_fail(TP_ERR_INVALID, "model '%s': every size must be positive", c->name);
    if (c->n_head % c->n_head_kv != 0)
        return tp_fail(TP_ERR_INVALID, "model '%s': n_head %d is not a multiple of n_head_kv %d",
                       c->name, c->n_head, c->n_head_kv);
    if (c->head_dim % 2 != 0)
        return tp_fail(TP_ERR_INVALID, "model '%s': head_dim %d is odd (rope rotates pairs)",
                       c->name, c->head_dim);
    if (!isfinite(c->rms_eps) || c->rms_eps < 0.0f)
        return tp_fail(TP_ERR_INVALID, "model '%s': rms_eps must be finite and >= 0, got %g",
                       c->name, (double)c->rms_eps);
    char who[TP_NAME_MAX + 16];
    snprintf(who, sizeof who, "model '%s'", c->name);
    TP_TRY(tp_model_check_rope(c, who));
    if (c->n_layer > 99999)
        return tp_fail(TP_ERR_INVALID, "model '%s': %d layers is too many", c->name, c->n_layer);
    return TP_OK;
}

/* Is the tensor NAME (global, or per layer without its "blk.L." prefix) present under the
 * config's flags? The table of tensorplan/model_family.h decides which weights and biases
 * the nodes read. */
static int has_tensor(const tp_model_config *c, int per_layer, const char *name)
{
    size_t n = 0;
    const tp_model_tensor *t = tp_model_tensors(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].per_layer == per_layer && strcmp(t[i].name, name) == 0)
            return tp_model_group_present(c, t[i].group);
    return 0;
}

/* The builder appends node after node; the first failure sticks and later appends are
 * skipped, so the construction code reads like the node table of the spec. */
typedef struct builder {
    tp_graph *g;
    const tp_model_config *c;
    tp_status st;
    int layer;
    tp_dtype kv_type; /* the dtype of the kv_store and kv_load nodes */
} builder;

static void fmt_name(char *dst, const char *fmt, va_list ap)
{
    vsnprintf(dst, TP_NAME_MAX, fmt, ap);
}

static void set_name(char *dst, const char *fmt, ...) TP_PRINTF(2, 3);
static void set_name(char *dst, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fmt_name(dst, fmt, ap);
    va_end(ap);
}

static size_t emit(builder *b, tp_node *nd, int64_t d0, int64_t d1)
{
    if (b->st != TP_OK)
        return 0;
    nd->shape[0] = d0;
    nd->shape[1] = d1;
    nd->p.layer = b->layer;
    size_t id = 0;
    b->st = tp_graph_add_node(b->g, nd, &id);
    return id;
}

static tp_node make(builder *b, tp_op op, const char *suffix, size_t n_src, const size_t *src)
{
    tp_node nd = tp_node_init(op, NULL);
    if (b->layer >= 0)
        set_name(nd.name, "blk.%d.%s", b->layer, suffix);
    else
        set_name(nd.name, "%s", suffix);
    nd.n_src = n_src;
    for (size_t i = 0; i < n_src; i++)
        nd.src[i] = src[i];
    return nd;
}

static size_t op1(builder *b, tp_op op, const char *suffix, size_t s0, int64_t d0, int64_t d1)
{
    tp_node nd = make(b, op, suffix, 1, (size_t[]){s0});
    return emit(b, &nd, d0, d1);
}

static size_t op2(builder *b, tp_op op, const char *suffix, size_t s0, size_t s1, int64_t d0,
                  int64_t d1)
{
    tp_node nd = make(b, op, suffix, 2, (size_t[]){s0, s1});
    return emit(b, &nd, d0, d1);
}

static size_t norm(builder *b, const char *suffix, size_t x, const char *weight, int64_t d1)
{
    tp_node nd = make(b, TP_OP_RMS_NORM, suffix, 1, (size_t[]){x});
    nd.p.eps = b->c->rms_eps;
    if (b->layer >= 0)
        set_name(nd.p.weight, "blk.%d.%s.weight", b->layer, weight);
    else
        set_name(nd.p.weight, "%s.weight", weight);
    return emit(b, &nd, b->c->n_embd, d1);
}

/* A per-layer projection blk.L.<tensor>.weight (+ .bias when the config asks for it). */
static size_t proj(builder *b, const char *suffix, size_t x, const char *tensor, int64_t d0,
                   int64_t d1)
{
    tp_node nd = make(b, TP_OP_MUL_MAT, suffix, 1, (size_t[]){x});
    char bias[TP_NAME_MAX];
    snprintf(bias, sizeof bias, "%s.bias", tensor);
    set_name(nd.p.weight, "blk.%d.%s.weight", b->layer, tensor);
    if (has_tensor(b->c, 1, bias))
        set_name(nd.p.bias, "blk.%d.%s", b->layer, bias);
    return emit(b, &nd, d0, d1);
}

static size_t rope(builder *b, const char *suffix, size_t x, size_t pos, int n_head, int64_t d1)
{
    const tp_model_config *c = b->c;
    tp_node nd = make(b, TP_OP_ROPE, suffix, 2, (size_t[]){x, pos});
    nd.p.n_head = n_head;
    nd.p.head_dim = c->head_dim;
    nd.p.rope_base = c->rope_base;
    nd.p.rope_mode = c->rope_mode;
    nd.p.rope_freq_scale = c->rope_freq_scale;
    nd.p.rope_ext_factor = c->rope_ext_factor;
    nd.p.rope_attn_factor = c->rope_attn_factor;
    nd.p.rope_n_ctx_orig = c->rope_n_ctx_orig;
    if (has_tensor(c, 0, "rope_freqs.weight"))
        set_name(nd.p.weight, "rope_freqs.weight");
    return emit(b, &nd, (int64_t)n_head * c->head_dim, d1);
}

/* The KV ops carry the geometry of the layer's K and V regions. */
static void kv_params(builder *b, tp_node *nd)
{
    nd->p.n_head = b->c->n_head;
    nd->p.n_head_kv = b->c->n_head_kv;
    nd->p.head_dim = b->c->head_dim;
}

/* The graph's input nodes and extents, shared by every layer. */
typedef struct graph_inputs {
    size_t token_ids, positions, tail_ids;
    int64_t nt, n_ctx;
} graph_inputs;

/* Self-attention of layer b->layer on the normalised rows x: q/k/v (with the config's
 * biases), rope, the KV store and load, attention. Returns the attention output node. */
static size_t attention(builder *b, size_t x, const graph_inputs *in)
{
    const tp_model_config *c = b->c;
    const int64_t n_q = (int64_t)c->n_head * c->head_dim;
    const int64_t n_kv = (int64_t)c->n_head_kv * c->head_dim, nt = in->nt;
    size_t q = proj(b, "q", x, "attn_q", n_q, nt);
    size_t k = proj(b, "k", x, "attn_k", n_kv, nt);
    size_t v = proj(b, "v", x, "attn_v", n_kv, nt);
    size_t rq = rope(b, "rope_q", q, in->positions, c->n_head, nt);
    size_t rk = rope(b, "rope_k", k, in->positions, c->n_head_kv, nt);

    tp_node nd = make(b, TP_OP_KV_STORE, "kv_store", 3, (size_t[]){rk, v, in->positions});
    kv_params(b, &nd);
    nd.dtype = b->kv_type;
    emit(b, &nd, n_kv, in->n_ctx);
    nd = make(b, TP_OP_KV_LOAD, "kv_load", 0, NULL);
    kv_params(b, &nd);
    nd.dtype = b->kv_type;
    size_t kv = emit(b, &nd, n_kv, in->n_ctx);
    nd = make(b, TP_OP_ATTN, "attn", 3, (size_t[]){rq, kv, in->positions});
    kv_params(b, &nd);
    return emit(b, &nd, n_q, nt);
}

/* Decoder layer b->layer on the residual stream h; narrow > 0 keeps only that many tail rows
 * after attention. Returns the layer's output node. */
static size_t layer(builder *b, size_t h, const graph_inputs *in, int64_t narrow)
{
    const tp_model_config *c = b->c;
    const int64_t ne = c->n_embd, nf = c->n_ff, rows = narrow ? narrow : in->nt;
    size_t x = norm(b, "attn_norm", h, "attn_norm", in->nt);
    size_t attn = attention(b, x, in);
    size_t o = proj(b, "attn_out", attn, "attn_output", ne, in->nt);
    size_t resid;
    if (narrow) {
        size_t o_rows = op2(b, TP_OP_GET_ROWS, "attn_out_tail", o, in->tail_ids, ne, rows);
        size_t h_rows = op2(b, TP_OP_GET_ROWS, "inp_tail", h, in->tail_ids, ne, rows);
        resid = op2(b, TP_OP_ADD, "attn_residual", h_rows, o_rows, ne, rows);
    } else {
        resid = op2(b, TP_OP_ADD, "attn_residual", h, o, ne, rows);
    }
    size_t f = norm(b, "ffn_norm", resid, "ffn_norm", rows);
    size_t gate = proj(b, "ffn_gate", f, "ffn_gate", nf, rows);
    size_t up = proj(b, "ffn_up", f, "ffn_up", nf, rows);
    size_t act = op1(b, TP_OP_SILU, "ffn_silu", gate, nf, rows);
    size_t gated = op2(b, TP_OP_MUL, "ffn_swiglu", act, up, nf, rows);
    size_t down = proj(b, "ffn_down", gated, "ffn_down", ne, rows);
    return op2(b, TP_OP_ADD, "ffn_residual", resid, down, ne, rows);
}

tp_status tp_model_check_kv_type(const tp_model_config *config, tp_dtype kv_type)
{
    if (kv_type != TP_DTYPE_F32 && kv_type != TP_DTYPE_F16 && kv_type != TP_DTYPE_Q8_0)
        return tp_fail(TP_ERR_INVALID, "model '%s': expected a KV type f32, f16 or q8_0, got %s",
                       config->name, tp_dtype_name(kv_type));
    if (kv_type == TP_DTYPE_Q8_0 && config->head_dim % 32 != 0)
        return tp_fail(TP_ERR_INVALID, "model '%s': a q8_0 KV cache needs head_dim a multiple "
                       "of 32 (blocks of 32 per head), got %d", config->name, config->head_dim);
    return TP_OK;
}

/* The config, then the params against it: 1 <= n_out <= n_tokens <= n_ctx <= max_ctx. */
static tp_status check_params(const tp_model_config *config, const tp_graph_params *params)
{
    tp_status st = check_config(config);
    if (st != TP_OK)
        return st;
    const size_t nt = params->n_tokens, n_out = params->n_out, n_ctx = params->n_ctx;
    if (nt == 0 || n_out == 0 || n_out > nt)
        return tp_fail(TP_ERR_INVALID, "model '%s': expected 1 <= n_out <= n_tokens, got n_out "
                       "%zu, n_tokens %zu", config->name, n_out, nt);
    if (n_ctx < nt || n_ctx > (size_t)config->max_ctx)
        return tp_fail(TP_ERR_INVALID, "model '%s': expected n_tokens %zu <= n_ctx <= %d (the "
                       "model maximum), got n_ctx %zu", config->name, nt, config->max_ctx,
                       n_ctx);
    if (params->queued_layers < 0)
        return tp_fail(TP_ERR_INVALID, "model '%s': queued_layers %d < 0", config->name,
                       params->queued_layers);
    return tp_model_check_kv_type(config, params->kv_type);
}

tp_status tp_model_build_graph(const tp_model_config *config, const tp_graph_params *params,
                               tp_graph **out)
{
    if (!config || !params || !out)
        return tp_fail(TP_ERR_INVALID, "tp_model_build_graph: NULL argument");
    *out = NULL;
    tp_status st = check_params(config, params);
    if (st != TP_OK)
        return st;
    const size_t nt = params->n_tokens, n_out = params->n_out, n_ctx = params->n_ctx;

    const tp_model_config *c = config;
    const int tail = n_out < nt;

    tp_graph *g;
    st = tp_graph_create(&g);
    if (st != TP_OK)
        return st;
    set_name(g->model, "%s", c->name);
    snprintf(g->kind, sizeof g->kind, "%s", nt == 1 ? "decode" : "prefill");
    g->n_ctx = (int64_t)n_ctx;

    builder b = {g, c, TP_OK, -1, params->kv_type};
    graph_inputs in = {0, 0, 0, (int64_t)nt, (int64_t)n_ctx};
    b.st = tp_graph_add_input(g, "token_ids", nt, TP_DTYPE_I32, &in.token_ids);
    if (b.st == TP_OK)
        b.st = tp_graph_add_input(g, "positions", nt, TP_DTYPE_I32, &in.positions);
    if (b.st == TP_OK && tail)
        b.st = tp_graph_add_input(g, "tail_ids", n_out, TP_DTYPE_I32, &in.tail_ids);

    tp_node nd = make(&b, TP_OP_GET_ROWS, "embed", 1, (size_t[]){in.token_ids});
    set_name(nd.p.weight, "token_embd.weight");
    size_t h = emit(&b, &nd, c->n_embd, (int64_t)nt);

    for (int L = 0; L < c->n_layer && b.st == TP_OK; L++) {
        b.layer = L;
        /* Only the last layer's attention residual narrows to the tail rows: earlier layers'
         * rows all feed later layers' attention through the KV cache. */
        h = layer(&b, h, &in, tail && L == c->n_layer - 1 ? (int64_t)n_out : 0);
    }

    b.layer = -1;
    size_t fin = norm(&b, "output_norm", h, "output_norm", (int64_t)n_out);
    nd = make(&b, TP_OP_MUL_MAT, "logits", 1, (size_t[]){fin});
    set_name(nd.p.weight, "%s",
             has_tensor(c, 0, "output.weight") ? "output.weight" : "token_embd.weight");
    if (has_tensor(c, 0, "output.bias"))
        set_name(nd.p.bias, "output.bias");
    size_t logits = emit(&b, &nd, c->vocab, (int64_t)n_out);
    if (b.st == TP_OK)
        b.st = tp_graph_mark_output(g, logits);
    if (b.st == TP_OK)
        b.st = tp_graph_assign_backends(g, params->queued_layers);
    if (b.st == TP_OK && params->fuse_ffn)
        b.st = tp_graph_fuse_swiglu(g, NULL);
    if (b.st == TP_OK)
        b.st = tp_graph_validate(g);
    if (b.st != TP_OK) {
        tp_graph_destroy(g);
        return b.st;
    }
    *out = g;
    return TP_OK;
}
