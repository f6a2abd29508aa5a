/* GGUF files as models: the hyperparameters of the metadata (docs/gguf.md, "Models"). The
 * tensor table check is in gguf_model_tensors.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "loader/gguf_model_internal.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/model_family.h"

/* An enumerated string value: refused with a NUL inside, which would print (and compare, as
 * a C string) as a shorter, known name. */
static tp_status check_no_nul(const char *file, const char *key, tp_gguf_str s)
{
    const char *nul = memchr(s.data, '\0', s.len);
    if (nul)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': the value holds a NUL byte at %zu", file,
                       key, (size_t)(nul - s.data));
    return TP_OK;
}

/* "A.SUFFIX" for the architecture prefix A. */
static const char *akey(const gm_reader *r, const char *suffix)
{
    static _Thread_local char key[160];
    snprintf(key, sizeof key, "%s.%s", r->arch, suffix);
    return key;
}

/* A u32 key: TP_OK with *out set, TP_ERR_NOT_FOUND (message recorded only when required),
 * TP_ERR_INVALID for another type (the reader's message names key and both types). */
static tp_status get_u32(const gm_reader *r, const char *key, int required, uint32_t *out)
{
    tp_status st = tp_gguf_get_u32(r->g, key, out);
    if (st == TP_ERR_NOT_FOUND && required)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': missing (required)", r->file, key);
    return st;
}

static tp_status get_f32(const gm_reader *r, const char *key, int required, float *out)
{
    tp_status st = tp_gguf_get_f32(r->g, key, out);
    if (st == TP_ERR_NOT_FOUND && required)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': missing (required)", r->file, key);
    return st;
}

/* An int-sized positive u32 key, default dflt when absent and not required. */
static tp_status get_dim(const gm_reader *r, const char *suffix, int required, int dflt,
                         int *out)
{
    const char *key = akey(r, suffix);
    uint32_t v = 0;
    tp_status st = get_u32(r, key, required, &v);
    if (st == TP_ERR_NOT_FOUND) {
        *out = dflt;
        return TP_OK;
    }
    TP_TRY(st);
    if (v == 0 || v > (uint32_t)GM_MAX_DIM)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected 1..%d, got %u", r->file, key,
                       GM_MAX_DIM, (unsigned)v);
    *out = (int)v;
    return TP_OK;
}

/* A per-layer key: a u32, or an array of L u32 / i32 values that must all be equal (the
 * graph has one width per model). */
static tp_status get_layer_dim(const gm_reader *r, const char *suffix, int n_layer,
                               int required, int dflt, int *out)
{
    const char *key = akey(r, suffix);
    const tp_gguf_kv *kv = tp_gguf_find_kv(r->g, key);
    if (!kv || kv->type != TP_GGUF_ARRAY)
        return get_dim(r, suffix, required, dflt, out);
    const tp_gguf_array *a = &kv->array;
    if (a->type != TP_GGUF_U32 && a->type != TP_GGUF_I32)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected u32 or array of u32/i32, got "
                       "array of %s", r->file, key, tp_gguf_vtype_name(a->type));
    if (a->count != (size_t)n_layer)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected %d per-layer values, got %zu",
                       r->file, key, n_layer, a->count);
    double first = 0.0;
    for (size_t i = 0; i < a->count; i++) {
        double v = tp_gguf_bits_to_double(a->type, tp_gguf_array_bits(a, i));
        if (i == 0)
            first = v;
        else if (v != first)
            return tp_fail(TP_ERR_INVALID, "%s: key '%s': per-layer values differ (layer 0: "
                           "%.0f, layer %zu: %.0f): not supported", r->file, key, first, i, v);
    }
    if (first < 1 || first > GM_MAX_DIM)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected 1..%d, got %.0f", r->file, key,
                       GM_MAX_DIM, first);
    *out = (int)first;
    return TP_OK;
}

static tp_status read_arch(gm_reader *r, tp_model_config *c)
{
    tp_gguf_str s;
    tp_status st = tp_gguf_get_string(r->g, "general.architecture", &s);
    if (st == TP_ERR_NOT_FOUND)
        return tp_fail(TP_ERR_INVALID, "%s: key 'general.architecture': missing (required)",
                       r->file);
    TP_TRY(st);
    TP_TRY(check_no_nul(r->file, "general.architecture", s));
    if (s.len == 5 && memcmp(s.data, "qwen2", 5) == 0) {
        c->arch = TP_ARCH_QWEN2;
        c->rope_mode = TP_ROPE_NEOX;
    } else if (s.len == 5 && memcmp(s.data, "llama", 5) == 0) {
        c->arch = TP_ARCH_LLAMA;
        c->rope_mode = TP_ROPE_NORM;
    } else {
        return tp_fail(TP_ERR_INVALID, "%s: key 'general.architecture': architecture '%.*s' "
                       "is not supported (supported: llama, qwen2)", r->file,
                       (int)(s.len > 64 ? 64 : s.len), s.data);
    }
    snprintf(r->arch, sizeof r->arch, "%s", c->arch == TP_ARCH_QWEN2 ? "qwen2" : "llama");
    return TP_OK;
}

static tp_status read_sizes(const gm_reader *r, tp_model_config *c)
{
    TP_TRY(get_dim(r, "context_length", 1, 0, &c->max_ctx));
    TP_TRY(get_dim(r, "embedding_length", 1, 0, &c->n_embd));
    TP_TRY(get_dim(r, "block_count", 1, 0, &c->n_layer));
    if (c->n_layer > GM_MAX_LAYERS) /* the model layer's limit */
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected at most %d layers, got %d",
                       r->file, akey(r, "block_count"), GM_MAX_LAYERS, c->n_layer);
    TP_TRY(get_layer_dim(r, "feed_forward_length", c->n_layer, 1, 0, &c->n_ff));
    TP_TRY(get_layer_dim(r, "attention.head_count", c->n_layer, 1, 0, &c->n_head));
    TP_TRY(get_layer_dim(r, "attention.head_count_kv", c->n_layer, 0, c->n_head,
                         &c->n_head_kv));
    TP_TRY(get_f32(r, akey(r, "attention.layer_norm_rms_epsilon"), 1, &c->rms_eps));
    if (!isfinite(c->rms_eps) || c->rms_eps < 0.0f)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected a finite value >= 0, got %g",
                       r->file, akey(r, "attention.layer_norm_rms_epsilon"), c->rms_eps);
    if (c->n_head % c->n_head_kv != 0)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': %d KV heads do not divide %d heads",
                       r->file, akey(r, "attention.head_count_kv"), c->n_head_kv, c->n_head);
    int k_len = 0, v_len = 0, rot = 0;
    TP_TRY(get_dim(r, "attention.key_length", 0, c->n_embd / c->n_head, &k_len));
    TP_TRY(get_dim(r, "attention.value_length", 0, c->n_embd / c->n_head, &v_len));
    if (k_len != v_len)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': key_length %d and value_length %d "
                       "differ: not supported", r->file, akey(r, "attention.value_length"),
                       k_len, v_len);
    if (k_len <= 0 || k_len % 2 != 0)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': head size %d: expected an even size > 0",
                       r->file, akey(r, "attention.key_length"), k_len);
    c->head_dim = k_len;
    TP_TRY(get_dim(r, "rope.dimension_count", 0, k_len, &rot));
    if (rot != c->head_dim)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': expected the head size %d, got %d",
                       r->file, akey(r, "rope.dimension_count"), c->head_dim, rot);
    if (c->arch == TP_ARCH_QWEN2 && c->n_head * c->head_dim != c->n_embd)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': qwen2 needs head_count x head size = "
                       "embedding_length, got %d x %d != %d", r->file,
                       akey(r, "attention.key_length"), c->n_head, c->head_dim, c->n_embd);
    uint32_t experts = 0;
    tp_status st = get_u32(r, akey(r, "expert_count"), 0, &experts);
    if (st != TP_ERR_NOT_FOUND)
        TP_TRY(st);
    if (st == TP_OK && experts != 0)
        return tp_fail(TP_ERR_INVALID, "%s: key '%s': %u experts: mixture-of-experts models "
                       "are not supported", r->file, akey(r, "expert_count"), (unsigned)experts);
    return TP_OK;
}

/* An optional f32 key; dflt when absent. */
static tp_status opt_f32(const gm_reader *r, const char *suffix, float dflt, float *out)
{
    tp_status st = get_f32(r, akey(r, suffix), 0, out);
    if (st == TP_ERR_NOT_FOUND) {
        *out = dflt;
        return TP_OK;
    }
    return st;
}

/* The model's one rope check (tensorplan/model_family.h) with the message naming the key
 * whose value puts the parameters out of range: the base, the attn_factor as stored, YaRN's
 * original context, else the scaling factor (freq_scale and YaRN's magnitude derive from it;
 * 1e-45 makes the scale infinite, a YaRN factor below e^-10 the magnitude negative). */
static tp_status check_rope(const gm_reader *r, const tp_model_config *c,
                            const char *factor_key, float attn)
{
    const char *key = factor_key;
    if (!isfinite(c->rope_base) || c->rope_base <= 0.0f)
        key = "rope.freq_base";
    else if (!isfinite(attn) || attn <= 0.0f)
        key = "rope.scaling.attn_factor";
    else if (c->rope_ext_factor != 0.0f && c->rope_n_ctx_orig <= 0)
        key = "rope.scaling.original_context_length";
    char who[400];
    snprintf(who, sizeof who, "%s: key '%s'", r->file, akey(r, key));
    return tp_model_check_rope(c, who);
}

/* The rope keys and llama.cpp's derived parameters (docs/gguf.md, "Supported
 * architectures and keys"). */
static tp_status read_rope(const gm_reader *r, tp_model_config *c)
{
    TP_TRY(opt_f32(r, "rope.freq_base", 10000.0f, &c->rope_base));
    char type[16] = "linear";
    tp_gguf_str s;
    tp_status st = tp_gguf_get_string(r->g, akey(r, "rope.scaling.type"), &s);
    if (st == TP_OK)
        TP_TRY(check_no_nul(r->file, akey(r, "rope.scaling.type"), s));
    if (st == TP_OK) {
        static const char *const known[] = {"none", "linear", "yarn", "longrope"};
        int found = 0;
        for (size_t i = 0; i < 4 && !found; i++)
            if (s.len == strlen(known[i]) && memcmp(s.data, known[i], s.len) == 0) {
                snprintf(type, sizeof type, "%s", known[i]);
                found = 1;
            }
        if (!found)
            return tp_fail(TP_ERR_INVALID, "%s: key '%s': scaling type '%.*s' is not one of "
                           "none, linear, yarn, longrope", r->file, akey(r, "rope.scaling.type"),
                           (int)(s.len > 64 ? 64 : s.len), s.data);
    } else if (st != TP_ERR_NOT_FOUND) {
        return st;
    }
    float factor = 0.0f, attn = 1.0f;
    const char *factor_key = tp_gguf_find_kv(r->g, akey(r, "rope.scaling.factor"))
                                 ? "rope.scaling.factor" : "rope.scale_linear";
    TP_TRY(opt_f32(r, factor_key, 0.0f, &factor));
    TP_TRY(opt_f32(r, "rope.scaling.attn_factor", 1.0f, &attn));
    TP_TRY(get_dim(r, "rope.scaling.original_context_length", 0, c->max_ctx,
                   &c->rope_n_ctx_orig));
    c->rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    c->rope_ext_factor = strcmp(type, "yarn") == 0 ? 1.0f : 0.0f;
    c->rope_attn_factor = attn;
    /* the file's values as they are (a factor that is negative, or not finite, makes
     * freq_scale so), then the derived ones (YaRN's magnitude, which a tiny factor can make
     * negative), both by the model's one check, the message naming the key */
    TP_TRY(check_rope(r, c, factor_key, attn));
    if (strcmp(type, "none") == 0)
        c->rope_freq_scale = 1.0f;
    if (c->rope_ext_factor != 0.0f)
        c->rope_attn_factor = attn * (1.0f + 0.1f * logf(1.0f / c->rope_freq_scale));
    return check_rope(r, c, factor_key, attn);
}

static void set_name(tp_model_config *c, const char *file)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".gguf") == 0)
        n -= 5;
    if (n > TP_NAME_MAX - 1)
        n = TP_NAME_MAX - 1;
    memcpy(c->name, base, n);
    c->name[n] = '\0';
}

tp_status tp_gguf_model_config(const tp_gguf *g, tp_model_config *config)
{
    if (!g || !config)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_model_config: NULL argument");
    gm_reader r;
    memset(&r, 0, sizeof r);
    r.g = g;
    r.file = tp_gguf_name(g);
    tp_model_config c;
    memset(&c, 0, sizeof c);
    set_name(&c, r.file);
    TP_TRY(read_arch(&r, &c));
    TP_TRY(read_sizes(&r, &c));
    TP_TRY(read_rope(&r, &c));
    TP_TRY(tp_gguf_model_check_tensors(g, &c));
    *config = c;
    return TP_OK;
}
