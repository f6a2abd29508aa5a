/* The tensors of each decoder family, written once (docs/gguf.md, "Tensors"), and the checks
 * of a config's groups and rope parameters (declared in tensorplan/model_family.h). */
#include "tensorplan/model_family.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"

#define MAT TP_INIT_MATRIX
#define NORM TP_INIT_NORM
#define BIAS TP_INIT_BIAS
#define BOTH TP_FAMILY_BOTH
#define LLAMA TP_FAMILY_BIT(TP_ARCH_LLAMA)
#define QWEN2 TP_FAMILY_BIT(TP_ARCH_QWEN2)

/* The table of docs/gguf.md, "Tensors". In qwen2 files attn_q and attn_output are [E, E]
 * (the loader requires head_count x head size = E, so Q is E). */
static const tp_model_tensor tensors[] = {
    {"token_embd.weight", 0, TP_DIM_EMBD, TP_DIM_VOCAB, TP_GROUP_REQUIRED, MAT, BOTH},
    {"output_norm.weight", 0, TP_DIM_EMBD, TP_DIM_ONE, TP_GROUP_REQUIRED, NORM, BOTH},
    {"output.weight", 0, TP_DIM_EMBD, TP_DIM_VOCAB, TP_GROUP_OUTPUT, MAT, BOTH},
    {"output.bias", 0, TP_DIM_VOCAB, TP_DIM_ONE, TP_GROUP_OUTPUT_BIAS, BIAS, QWEN2},
    {"rope_freqs.weight", 0, TP_DIM_HALF_HEAD, TP_DIM_ONE, TP_GROUP_ROPE_FREQS,
     TP_INIT_ROPE_FREQS, LLAMA},
    {"attn_norm.weight", 1, TP_DIM_EMBD, TP_DIM_ONE, TP_GROUP_REQUIRED, NORM, BOTH},
    {"attn_q.weight", 1, TP_DIM_EMBD, TP_DIM_Q, TP_GROUP_REQUIRED, MAT, BOTH},
    {"attn_k.weight", 1, TP_DIM_EMBD, TP_DIM_KV, TP_GROUP_REQUIRED, MAT, BOTH},
    {"attn_v.weight", 1, TP_DIM_EMBD, TP_DIM_KV, TP_GROUP_REQUIRED, MAT, BOTH},
    {"attn_q.bias", 1, TP_DIM_Q, TP_DIM_ONE, TP_GROUP_QKV_BIAS, BIAS, BOTH},
    {"attn_k.bias", 1, TP_DIM_KV, TP_DIM_ONE, TP_GROUP_QKV_BIAS, BIAS, BOTH},
    {"attn_v.bias", 1, TP_DIM_KV, TP_DIM_ONE, TP_GROUP_QKV_BIAS, BIAS, BOTH},
    {"attn_output.weight", 1, TP_DIM_Q, TP_DIM_EMBD, TP_GROUP_REQUIRED, MAT, BOTH},
    {"attn_output.bias", 1, TP_DIM_EMBD, TP_DIM_ONE, TP_GROUP_ATTN_OUT_BIAS, BIAS, LLAMA},
    {"ffn_norm.weight", 1, TP_DIM_EMBD, TP_DIM_ONE, TP_GROUP_REQUIRED, NORM, BOTH},
    {"ffn_gate.weight", 1, TP_DIM_EMBD, TP_DIM_FF, TP_GROUP_REQUIRED, MAT, BOTH},
    {"ffn_up.weight", 1, TP_DIM_EMBD, TP_DIM_FF, TP_GROUP_REQUIRED, MAT, BOTH},
    {"ffn_down.weight", 1, TP_DIM_FF, TP_DIM_EMBD, TP_GROUP_REQUIRED, MAT, BOTH},
    {"ffn_gate.bias", 1, TP_DIM_FF, TP_DIM_ONE, TP_GROUP_FFN_BIAS, BIAS, LLAMA},
    {"ffn_up.bias", 1, TP_DIM_FF, TP_DIM_ONE, TP_GROUP_FFN_BIAS, BIAS, LLAMA},
    {"ffn_down.bias", 1, TP_DIM_EMBD, TP_DIM_ONE, TP_GROUP_FFN_BIAS, BIAS, LLAMA},
};

#undef MAT
#undef NORM
#undef BIAS
#undef BOTH
#undef LLAMA
#undef QWEN2

const tp_model_tensor *tp_model_tensors(size_t *count)
{
    if (count)
        *count = sizeof tensors / sizeof tensors[0];
    return tensors;
}

int tp_model_tensor_in_family(const tp_model_tensor *t, tp_arch arch)
{
    return (arch == TP_ARCH_QWEN2 || arch == TP_ARCH_LLAMA) &&
           (t->families & TP_FAMILY_BIT(arch)) != 0;
}

/* The layer of "blk.L." at the start of name, L decimal without a leading zero; -1 when
 * name does not start so. *used receives the prefix's length. */
static long layer_prefix(const char *name, size_t *used)
{
    if (strncmp(name, "blk.", 4) != 0)
        return -1;
    size_t k = 4;
    long v = 0;
    while (name[k] >= '0' && name[k] <= '9' && k < 12)
        v = v * 10 + (name[k++] - '0');
    if (k == 4 || name[k] != '.' || (name[4] == '0' && k > 5))
        return -1;
    *used = k + 1;
    return v;
}

const tp_model_tensor *tp_model_find_tensor(const tp_model_config *c, const char *name,
                                            int *layer)
{
    if (layer)
        *layer = -1;
    if (!c || !name)
        return NULL;
    size_t n = 0, used = 0;
    const tp_model_tensor *t = tp_model_tensors(&n);
    const int blk = strncmp(name, "blk.", 4) == 0;
    const long l = blk ? layer_prefix(name, &used) : -1;
    if (blk && (l < 0 || l >= c->n_layer))
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (t[i].per_layer == blk && tp_model_tensor_in_family(&t[i], c->arch) &&
            strcmp(t[i].name, name + used) == 0) {
            if (layer)
                *layer = (int)l;
            return &t[i];
        }
    }
    return NULL;
}

int64_t tp_model_tensor_dim(const tp_model_config *c, tp_tensor_dim d)
{
    switch (d) {
    case TP_DIM_EMBD: return c->n_embd;
    case TP_DIM_VOCAB: return c->vocab;
    case TP_DIM_Q: return (int64_t)c->n_head * c->head_dim;
    case TP_DIM_KV: return (int64_t)c->n_head_kv * c->head_dim;
    case TP_DIM_FF: return c->n_ff;
    case TP_DIM_HALF_HEAD: return c->head_dim / 2;
    case TP_DIM_ONE: break;
    }
    return 1;
}

int tp_model_group_present(const tp_model_config *c, tp_tensor_group g)
{
    switch (g) {
    case TP_GROUP_OUTPUT: return !c->tied_embeddings;
    case TP_GROUP_OUTPUT_BIAS: return c->output_bias != 0;
    case TP_GROUP_ROPE_FREQS: return c->rope_freqs != 0;
    case TP_GROUP_QKV_BIAS: return c->qkv_bias != 0;
    case TP_GROUP_ATTN_OUT_BIAS: return c->attn_out_bias != 0;
    case TP_GROUP_FFN_BIAS: return c->ffn_bias != 0;
    case TP_GROUP_REQUIRED: break;
    }
    return 1;
}

void tp_model_group_set(tp_model_config *c, tp_tensor_group g, int present)
{
    const int on = present != 0;
    switch (g) {
    case TP_GROUP_OUTPUT: c->tied_embeddings = !on; break;
    case TP_GROUP_OUTPUT_BIAS: c->output_bias = on; break;
    case TP_GROUP_ROPE_FREQS: c->rope_freqs = on; break;
    case TP_GROUP_QKV_BIAS: c->qkv_bias = on; break;
    case TP_GROUP_ATTN_OUT_BIAS: c->attn_out_bias = on; break;
    case TP_GROUP_FFN_BIAS: c->ffn_bias = on; break;
    case TP_GROUP_REQUIRED: break;
    }
}

void tp_model_tensor_name(const tp_model_tensor *t, int layer, char *buf, size_t size)
{
    if (t->per_layer)
        snprintf(buf, size, "blk.%d.%s", layer, t->name);
    else
        snprintf(buf, size, "%s", t->name);
}

tp_status tp_model_check_family(const tp_model_config *c)
{
    if (c->arch != TP_ARCH_QWEN2 && c->arch != TP_ARCH_LLAMA)
        return tp_fail(TP_ERR_INVALID, "model '%s': architecture %d is neither qwen2 (%d) nor "
                       "llama (%d)", c->name, (int)c->arch, TP_ARCH_QWEN2, TP_ARCH_LLAMA);
    static const char *const flag[TP_GROUP_COUNT] = {
        "", "tied_embeddings = 0", "output_bias", "rope_freqs", "qkv_bias", "attn_out_bias",
        "ffn_bias"};
    size_t n = 0;
    const tp_model_tensor *t = tp_model_tensors(&n);
    for (size_t i = 0; i < n; i++)
        if (!tp_model_tensor_in_family(&t[i], c->arch) && tp_model_group_present(c, t[i].group))
            return tp_fail(TP_ERR_INVALID, "model '%s': %s is set, but a %s file holds no %s",
                           c->name, flag[t[i].group],
                           c->arch == TP_ARCH_LLAMA ? "llama" : "qwen2", t[i].name);
    return TP_OK;
}

tp_status tp_model_check_rope(const tp_model_config *c, const char *who)
{
    const int mode_ok = c->rope_mode == TP_ROPE_NEOX || c->rope_mode == TP_ROPE_NORM;
    const int ok = mode_ok && isfinite(c->rope_base) && c->rope_base > 0.0f &&
                   isfinite(c->rope_freq_scale) && c->rope_freq_scale > 0.0f &&
                   isfinite(c->rope_attn_factor) && c->rope_attn_factor > 0.0f &&
                   isfinite(c->rope_ext_factor) && c->rope_ext_factor >= 0.0f &&
                   c->rope_n_ctx_orig >= 0 &&
                   (c->rope_ext_factor == 0.0f || c->rope_n_ctx_orig > 0);
    if (ok)
        return TP_OK;
    return tp_fail(TP_ERR_INVALID, "%s: rope parameters out of range: expected rope_mode NEOX "
                   "(%d) or NORM (%d), rope_base, rope_freq_scale and rope_attn_factor finite "
                   "and > 0, rope_ext_factor finite and >= 0, rope_n_ctx_orig >= 0 (> 0 with "
                   "YaRN); got rope_mode %d, rope_base %g, rope_freq_scale %g, "
                   "rope_attn_factor %g, rope_ext_factor %g, rope_n_ctx_orig %d",
                   who ? who : "rope", TP_ROPE_NEOX, TP_ROPE_NORM, c->rope_mode,
                   (double)c->rope_base, (double)c->rope_freq_scale,
                   (double)c->rope_attn_factor, (double)c->rope_ext_factor, c->rope_n_ctx_orig);
}
