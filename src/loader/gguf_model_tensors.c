/* GGUF files as models: the tensor table of each family, its check, the bytes per type and
 * the weights as views of the mapping (docs/gguf.md, "Models"). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "loader/gguf_model_internal.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/quant.h"

static const gm_tensor_spec llama_specs[] = {
    {"token_embd.weight", 0, GM_E, GM_V, GM_REQUIRED},
    {"output_norm.weight", 0, GM_E, GM_ONE, GM_REQUIRED},
    {"output.weight", 0, GM_E, GM_V, GM_OUTPUT},
    {"rope_freqs.weight", 0, GM_HALF_D, GM_ONE, GM_ROPE_FREQS},
    {"attn_norm.weight", 1, GM_E, GM_ONE, GM_REQUIRED},
    {"attn_q.weight", 1, GM_E, GM_Q, GM_REQUIRED},
    {"attn_k.weight", 1, GM_E, GM_KV, GM_REQUIRED},
    {"attn_v.weight", 1, GM_E, GM_KV, GM_REQUIRED},
    {"attn_q.bias", 1, GM_Q, GM_ONE, GM_QKV_BIAS},
    {"attn_k.bias", 1, GM_KV, GM_ONE, GM_QKV_BIAS},
    {"attn_v.bias", 1, GM_KV, GM_ONE, GM_QKV_BIAS},
    {"attn_output.weight", 1, GM_Q, GM_E, GM_REQUIRED},
    {"attn_output.bias", 1, GM_E, GM_ONE, GM_AO_BIAS},
    {"ffn_norm.weight", 1, GM_E, GM_ONE, GM_REQUIRED},
    {"ffn_gate.weight", 1, GM_E, GM_F, GM_REQUIRED},
    {"ffn_up.weight", 1, GM_E, GM_F, GM_REQUIRED},
    {"ffn_down.weight", 1, GM_F, GM_E, GM_REQUIRED},
    {"ffn_gate.bias", 1, GM_F, GM_ONE, GM_FFN_BIAS},
    {"ffn_up.bias", 1, GM_F, GM_ONE, GM_FFN_BIAS},
    {"ffn_down.bias", 1, GM_E, GM_ONE, GM_FFN_BIAS},
};

/* qwen2: attn_q and attn_output are [E, E] (the loader requires head_count x head size = E,
 * so GM_Q is E), q/k/v biases, an optional output.bias, nothing else optional. */
static const gm_tensor_spec qwen2_specs[] = {
    {"token_embd.weight", 0, GM_E, GM_V, GM_REQUIRED},
    {"output_norm.weight", 0, GM_E, GM_ONE, GM_REQUIRED},
    {"output.weight", 0, GM_E, GM_V, GM_OUTPUT},
    {"output.bias", 0, GM_V, GM_ONE, GM_OUTPUT_BIAS},
    {"attn_norm.weight", 1, GM_E, GM_ONE, GM_REQUIRED},
    {"attn_q.weight", 1, GM_E, GM_Q, GM_REQUIRED},
    {"attn_k.weight", 1, GM_E, GM_KV, GM_REQUIRED},
    {"attn_v.weight", 1, GM_E, GM_KV, GM_REQUIRED},
    {"attn_q.bias", 1, GM_Q, GM_ONE, GM_QKV_BIAS},
    {"attn_k.bias", 1, GM_KV, GM_ONE, GM_QKV_BIAS},
    {"attn_v.bias", 1, GM_KV, GM_ONE, GM_QKV_BIAS},
    {"attn_output.weight", 1, GM_Q, GM_E, GM_REQUIRED},
    {"ffn_norm.weight", 1, GM_E, GM_ONE, GM_REQUIRED},
    {"ffn_gate.weight", 1, GM_E, GM_F, GM_REQUIRED},
    {"ffn_up.weight", 1, GM_E, GM_F, GM_REQUIRED},
    {"ffn_down.weight", 1, GM_F, GM_E, GM_REQUIRED},
};

const gm_tensor_spec *tp_gguf_model_specs(tp_arch arch, size_t *n)
{
    if (arch == TP_ARCH_LLAMA) {
        *n = sizeof llama_specs / sizeof llama_specs[0];
        return llama_specs;
    }
    *n = sizeof qwen2_specs / sizeof qwen2_specs[0];
    return qwen2_specs;
}

int64_t tp_gguf_model_dim(const tp_model_config *c, gm_dim d)
{
    switch (d) {
    case GM_E: return c->n_embd;
    case GM_V: return c->vocab;
    case GM_Q: return (int64_t)c->n_head * c->head_dim;
    case GM_KV: return (int64_t)c->n_head_kv * c->head_dim;
    case GM_F: return c->n_ff;
    case GM_HALF_D: return c->head_dim / 2;
    case GM_ONE: break;
    }
    return 1;
}

int tp_gguf_model_flag(const tp_model_config *c, gm_flag f)
{
    switch (f) {
    case GM_OUTPUT: return !c->tied_embeddings;
    case GM_OUTPUT_BIAS: return c->output_bias != 0;
    case GM_ROPE_FREQS: return c->rope_freqs != 0;
    case GM_QKV_BIAS: return c->qkv_bias != 0;
    case GM_AO_BIAS: return c->attn_out_bias != 0;
    case GM_FFN_BIAS: return c->ffn_bias != 0;
    case GM_REQUIRED: break;
    }
    return 1;
}

void tp_gguf_model_spec_name(const gm_tensor_spec *s, int layer, char *buf, size_t size)
{
    if (s->per_layer)
        snprintf(buf, size, "blk.%d.%s", layer, s->name);
    else
        snprintf(buf, size, "%s", s->name);
}

/* The tensor that decides an optional group: its first member (in layer 0). */
static const gm_tensor_spec *group_head(const gm_tensor_spec *specs, size_t n, gm_flag f)
{
    for (size_t i = 0; i < n; i++)
        if (specs[i].flag == f)
            return &specs[i];
    return NULL;
}

static void set_flag(tp_model_config *c, gm_flag f, int on)
{
    switch (f) {
    case GM_OUTPUT: c->tied_embeddings = !on; break;
    case GM_OUTPUT_BIAS: c->output_bias = on; break;
    case GM_ROPE_FREQS: c->rope_freqs = on; break;
    case GM_QKV_BIAS: c->qkv_bias = on; break;
    case GM_AO_BIAS: c->attn_out_bias = on; break;
    case GM_FFN_BIAS: c->ffn_bias = on; break;
    case GM_REQUIRED: break;
    }
}

static tp_status read_vocab(const tp_gguf *g, tp_model_config *c)
{
    const char *file = tp_gguf_name(g);
    const tp_gguf_tensor *t = tp_gguf_find_tensor(g, "token_embd.weight");
    if (!t)
        return tp_fail(TP_ERR_INVALID, "%s: tensor 'token_embd.weight': missing", file);
    if (t->ne[1] < 1 || t->ne[1] > GM_MAX_DIM)
        return tp_fail(TP_ERR_INVALID, "%s: tensor 'token_embd.weight': expected 1..%d tokens "
                       "in ne[1], got %" PRId64, file, GM_MAX_DIM, t->ne[1]);
    c->vocab = (int)t->ne[1];
    const tp_gguf_kv *kv = tp_gguf_find_kv(g, "tokenizer.ggml.tokens");
    if (kv && (kv->type != TP_GGUF_ARRAY || kv->array.type != TP_GGUF_STRING))
        return tp_fail(TP_ERR_INVALID, "%s: key 'tokenizer.ggml.tokens': expected array of "
                       "string, got %s", file, tp_gguf_vtype_name(kv->type));
    if (kv && kv->array.count != (size_t)c->vocab)
        return tp_fail(TP_ERR_INVALID, "%s: tensor 'token_embd.weight': %d rows, but "
                       "tokenizer.ggml.tokens holds %zu tokens", file, c->vocab,
                       kv->array.count);
    return TP_OK;
}

static tp_status check_one(const tp_gguf *g, const tp_model_config *c, const gm_tensor_spec *s,
                           const tp_gguf_tensor *t)
{
    const char *file = tp_gguf_name(g);
    const int64_t want[4] = {tp_gguf_model_dim(c, s->ne0), tp_gguf_model_dim(c, s->ne1), 1, 1};
    if (memcmp(want, t->ne, sizeof want) != 0)
        return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': expected shape [%" PRId64 ", %" PRId64
                       "], got [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]", file,
                       t->name, want[0], want[1], t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
    const char *tn = tp_type_name(t->type);
    if (s->ne1 == GM_ONE) {
        if (t->type != TP_TYPE_F32 && t->type != TP_TYPE_F16 && t->type != TP_TYPE_BF16)
            return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': type %s: a 1-D tensor must be F32, "
                           "F16 or BF16", file, t->name, tn ? tn : "?");
    } else if (!tp_type_can_execute(t->type)) {
        return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': type %s cannot be executed here "
                       "(docs/quant.md)", file, t->name, tn ? tn : "?");
    }
    return TP_OK;
}

/* Is NAME a tensor the family lists, under the flags of c? */
static int listed(const tp_model_config *c, const char *name)
{
    size_t n = 0;
    const gm_tensor_spec *specs = tp_gguf_model_specs(c->arch, &n);
    int layer = -1;
    size_t used = 0;
    if (strncmp(name, "blk.", 4) == 0) {
        /* "blk.N." with N decimal, no leading zero, below n_layer */
        size_t k = 4;
        long v = 0;
        while (name[k] >= '0' && name[k] <= '9' && k < 12)
            v = v * 10 + (name[k++] - '0');
        if (k == 4 || name[k] != '.' || (name[4] == '0' && k > 5) || v >= c->n_layer)
            return 0;
        layer = (int)v;
        used = k + 1;
    }
    for (size_t i = 0; i < n; i++)
        if ((specs[i].per_layer == (layer >= 0)) && strcmp(specs[i].name, name + used) == 0)
            return tp_gguf_model_flag(c, specs[i].flag);
    return 0;
}

static tp_status check_listed(const tp_gguf *g, const tp_model_config *c, const char *arch)
{
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (!listed(c, t->name))
            return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': not a tensor of a %d-layer %s "
                           "model%s", tp_gguf_name(g), t->name, c->n_layer, arch,
                           strncmp(t->name, "blk.", 4) == 0 ? " (or its group is absent in "
                                                              "blk.0)" : "");
    }
    return TP_OK;
}

tp_status tp_gguf_model_check_tensors(const tp_gguf *g, tp_model_config *c)
{
    const char *file = tp_gguf_name(g);
    const char *arch = c->arch == TP_ARCH_LLAMA ? "llama" : "qwen2";
    TP_TRY(read_vocab(g, c));
    size_t n = 0;
    const gm_tensor_spec *specs = tp_gguf_model_specs(c->arch, &n);
    char name[TP_GGUF_MAX_NAME + 1];
    for (gm_flag f = GM_OUTPUT; f <= GM_FFN_BIAS; f++) {
        const gm_tensor_spec *head = group_head(specs, n, f);
        if (head)
            tp_gguf_model_spec_name(head, 0, name, sizeof name);
        set_flag(c, f, head && tp_gguf_find_tensor(g, name) != NULL);
    }
    TP_TRY(check_listed(g, c, arch));
    for (size_t i = 0; i < n; i++) {
        const int on = tp_gguf_model_flag(c, specs[i].flag);
        for (int l = 0; l < (specs[i].per_layer ? c->n_layer : 1); l++) {
            tp_gguf_model_spec_name(&specs[i], l, name, sizeof name);
            const tp_gguf_tensor *t = tp_gguf_find_tensor(g, name);
            if (!t && on) {
                char head[TP_GGUF_MAX_NAME + 1] = "";
                if (specs[i].flag != GM_REQUIRED)
                    tp_gguf_model_spec_name(group_head(specs, n, specs[i].flag), 0, head,
                                            sizeof head);
                return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': missing%s%s%s", file, name,
                               head[0] ? " (" : "", head, head[0] ? " is present)" : "");
            }
            if (t)
                TP_TRY(check_one(g, c, &specs[i], t));
        }
    }
    return TP_OK;
}

tp_status tp_gguf_model_weight_bytes(const tp_gguf *g, size_t *bytes_by_type, size_t *total)
{
    if (!g || !bytes_by_type)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_model_weight_bytes: NULL argument");
    memset(bytes_by_type, 0, TP_TYPE_ID_LIMIT * sizeof *bytes_by_type);
    size_t sum = 0;
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (t->type >= TP_TYPE_ID_LIMIT || t->nbytes > SIZE_MAX - sum)
            return tp_fail(TP_ERR_OVERFLOW, "%s: tensor '%s': bytes do not add up in size_t",
                           tp_gguf_name(g), t->name);
        bytes_by_type[t->type] += t->nbytes;
        sum += t->nbytes;
    }
    if (total)
        *total = sum;
    return TP_OK;
}

tp_status tp_gguf_model_weights(const tp_gguf *g, const tp_model_config *config,
                                tp_weights **out)
{
    if (!g || !config || !out)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_model_weights: NULL argument");
    tp_weights *w = NULL;
    TP_TRY(tp_weights_create(&w));
    size_t n = 0;
    const gm_tensor_spec *specs = tp_gguf_model_specs(config->arch, &n);
    char name[TP_GGUF_MAX_NAME + 1];
    tp_status st = TP_OK;
    for (size_t i = 0; i < n && st == TP_OK; i++) {
        if (!tp_gguf_model_flag(config, specs[i].flag))
            continue;
        for (int l = 0; l < (specs[i].per_layer ? config->n_layer : 1) && st == TP_OK; l++) {
            tp_gguf_model_spec_name(&specs[i], l, name, sizeof name);
            const tp_gguf_tensor *t = tp_gguf_find_tensor(g, name);
            if (!t) {
                st = tp_fail(TP_ERR_INVALID, "%s: tensor '%s': missing", tp_gguf_name(g), name);
                break;
            }
            const size_t rows = (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
            st = tp_weights_add_view(w, name, t->type, rows, (size_t)t->ne[0], t->data);
        }
    }
    if (st != TP_OK) {
        tp_weights_destroy(w);
        return st;
    }
    *out = w;
    return TP_OK;
}
