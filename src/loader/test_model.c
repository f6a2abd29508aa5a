/* Test models: a config's metadata, its random weights in the requested type and a synthesised
 * vocabulary written as a GGUF file (docs/gguf.md, "Test models"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "loader/gguf_model_internal.h"
#include "loader/test_model_vocab.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/model_family.h"
#include "tensorplan/test_model.h"
#include "tensorplan/quant.h"
#include "tensorplan/tokenizer.h"

typedef struct wctx {
    tp_gguf_writer *w;
    const char *arch;
    void **bufs;
    size_t n_bufs, cap_bufs;
} wctx;

static tp_status add_u32(wctx *x, const char *suffix, int v)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", x->arch, suffix);
    return tp_gguf_writer_add_u32(x->w, key, (uint32_t)v);
}

static tp_status add_f32(wctx *x, const char *suffix, float v)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", x->arch, suffix);
    return tp_gguf_writer_add_f32(x->w, key, v);
}

/* The keys of docs/gguf.md, "Supported architectures and keys", with their exact types. The
 * rope scaling keys are written only when the config scales: freq_scale != 1 gives type
 * linear (or yarn when ext_factor is set) and factor 1 / freq_scale; the attn_factor key
 * undoes the YaRN mscale the reader applies. */
static tp_status add_hparams(wctx *x, const tp_model_config *c)
{
    TP_TRY(tp_gguf_writer_add_string(x->w, "general.architecture", x->arch));
    TP_TRY(tp_gguf_writer_add_string(x->w, "general.name", c->name));
    TP_TRY(add_u32(x, "context_length", c->max_ctx));
    TP_TRY(add_u32(x, "embedding_length", c->n_embd));
    TP_TRY(add_u32(x, "block_count", c->n_layer));
    TP_TRY(add_u32(x, "feed_forward_length", c->n_ff));
    TP_TRY(add_u32(x, "attention.head_count", c->n_head));
    TP_TRY(add_u32(x, "attention.head_count_kv", c->n_head_kv));
    TP_TRY(add_u32(x, "attention.key_length", c->head_dim));
    TP_TRY(add_u32(x, "attention.value_length", c->head_dim));
    TP_TRY(add_f32(x, "attention.layer_norm_rms_epsilon", c->rms_eps));
    TP_TRY(add_u32(x, "rope.dimension_count", c->head_dim));
    TP_TRY(add_f32(x, "rope.freq_base", c->rope_base));
    TP_TRY(add_u32(x, "vocab_size", c->vocab));
    const int yarn = c->rope_ext_factor != 0.0f;
    if (c->rope_freq_scale != 1.0f || yarn) {
        char key[128];
        snprintf(key, sizeof key, "%s.rope.scaling.type", x->arch);
        TP_TRY(tp_gguf_writer_add_string(x->w, key, yarn ? "yarn" : "linear"));
        TP_TRY(add_f32(x, "rope.scaling.factor", 1.0f / c->rope_freq_scale));
        TP_TRY(add_u32(x, "rope.scaling.original_context_length",
                       c->rope_n_ctx_orig > 0 ? c->rope_n_ctx_orig : c->max_ctx));
    }
    float attn = c->rope_attn_factor;
    if (yarn)
        attn /= 1.0f + 0.1f * logf(1.0f / c->rope_freq_scale);
    if (attn != 1.0f)
        TP_TRY(add_f32(x, "rope.scaling.attn_factor", attn));
    return TP_OK;
}

static tp_status add_vocab(wctx *x, const tp_model_config *c, const tp_gguf_test_model *how)
{
    gm_vocab v;
    TP_TRY(gm_vocab_build(&v, how->tokenizer, (size_t)c->vocab));
    tp_gguf_writer *w = x->w;
    const int spm = strcmp(how->tokenizer, "llama") == 0;
    tp_status st = tp_gguf_writer_add_string(w, "tokenizer.ggml.model", how->tokenizer);
    if (st == TP_OK && !spm)
        st = tp_gguf_writer_add_string(w, "tokenizer.ggml.pre", how->pre ? how->pre : "qwen2");
    if (st == TP_OK)
        st = tp_gguf_writer_add_strings(w, "tokenizer.ggml.tokens",
                                        (const char *const *)v.tokens, v.n);
    if (st == TP_OK && spm)
        st = tp_gguf_writer_add_array(w, "tokenizer.ggml.scores", TP_GGUF_F32, v.scores, v.n);
    if (st == TP_OK)
        st = tp_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TP_GGUF_I32, v.types, v.n);
    if (st == TP_OK && !spm)
        st = tp_gguf_writer_add_strings(w, "tokenizer.ggml.merges",
                                        (const char *const *)v.merges, v.n_merges);
    if (st == TP_OK)
        st = tp_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v.bos);
    if (st == TP_OK)
        st = tp_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v.eos);
    if (st == TP_OK && spm)
        st = tp_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)v.unk);
    if (st == TP_OK && spm)
        st = tp_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 1);
    gm_vocab_free(&v);
    return st;
}

/* One tensor of the registry in its file type: a matrix in type, a vector in F32. */
static tp_status add_tensor(wctx *x, const tp_weight *wt, const tp_model_tensor *s,
                            const int64_t want[2], uint32_t type)
{
    if ((int64_t)wt->cols != want[0] || (int64_t)wt->rows != want[1])
        return tp_fail(TP_ERR_INVALID, "test model: '%s' is %zu x %zu, expected %lld x %lld",
                       wt->name, wt->rows, wt->cols, (long long)want[1], (long long)want[0]);
    const uint32_t n_dims = s->ne1 == TP_DIM_ONE ? 1 : 2;
    if (n_dims == 1)
        type = TP_TYPE_F32;
    size_t row = 0;
    TP_TRY(tp_type_row_bytes(type, wt->cols, &row));
    TP_TRY(TP_GROW(&x->bufs, &x->cap_bufs, x->n_bufs + 1));
    unsigned char *buf = malloc(row * wt->rows);
    if (!buf)
        return tp_fail(TP_ERR_NOMEM, "test model: out of memory for '%s'", wt->name);
    x->bufs[x->n_bufs++] = buf;
    for (size_t r = 0; r < wt->rows; r++)
        TP_TRY(tp_quantize_row(type, wt->data + r * wt->cols, buf + r * row, wt->cols));
    const int64_t ne[2] = {want[0], want[1]};
    return tp_gguf_writer_add_tensor(x->w, wt->name, type, n_dims, ne, buf, row * wt->rows);
}

static tp_status add_tensors(wctx *x, const tp_model_config *c, const tp_weights *wts,
                             uint32_t type)
{
    size_t n = 0;
    const tp_model_tensor *specs = tp_model_tensors(&n);
    for (int pass = 0; pass < 2; pass++) {
        for (int l = 0; l < (pass ? c->n_layer : 1); l++) {
            for (size_t i = 0; i < n; i++) {
                if (specs[i].per_layer != pass || !tp_model_tensor_in_family(&specs[i], c->arch) ||
                    !tp_model_group_present(c, specs[i].group))
                    continue;
                char name[TP_GGUF_MAX_NAME + 1];
                tp_model_tensor_name(&specs[i], l, name, sizeof name);
                const tp_weight *wt = tp_weights_find(wts, name);
                if (!wt)
                    return tp_fail(TP_ERR_INVALID, "test model: no weight '%s'", name);
                const int64_t want[2] = {tp_model_tensor_dim(c, specs[i].ne0),
                                         tp_model_tensor_dim(c, specs[i].ne1)};
                TP_TRY(add_tensor(x, wt, &specs[i], want, type));
            }
        }
    }
    return TP_OK;
}

static tp_status check_request(const tp_model_config *c, const tp_gguf_test_model *how)
{
    /* an unknown arch, or a flag for a group the family's files do not hold */
    TP_TRY(tp_model_check_family(c));
    if (c->arch == TP_ARCH_QWEN2 && c->n_head * c->head_dim != c->n_embd)
        return tp_fail(TP_ERR_INVALID, "test model: qwen2 needs n_head x head_dim = n_embd");
    if (!tp_type_can_quantize(how->type))
        return tp_fail(TP_ERR_INVALID, "test model: type %u cannot be written",
                       (unsigned)how->type);
    if (!how->tokenizer)
        return tp_fail(TP_ERR_INVALID, "test model: no tokenizer kind");
    /* refused here, not in a file that tokenize would then refuse */
    if (strcmp(how->tokenizer, "gpt2") == 0 && how->pre && !tp_tokenizer_pre_supported(how->pre))
        return tp_fail(TP_ERR_INVALID, "test model: pre-tokenizer '%s' is not supported "
                       "(known: %s)", how->pre, tp_tokenizer_pre_names());
    /* every matrix row (ne[0]: n_embd, n_head x head_dim, n_ff) a whole number of blocks */
    const size_t block = tp_type_block_elems(how->type);
    const struct { const char *what; size_t n; } rows[] = {
        {"n_embd", (size_t)c->n_embd}, {"n_head x head_dim", (size_t)c->n_head * c->head_dim},
        {"n_ff", (size_t)c->n_ff}};
    for (size_t i = 0; i < 3; i++)
        if (block == 0 || rows[i].n % block != 0)
            return tp_fail(TP_ERR_INVALID, "test model: a %s row is whole %s blocks of %zu "
                           "elements; config '%s' has rows of %zu (%s)", tp_type_name(how->type),
                           tp_type_name(how->type), block, c->name, rows[i].n, rows[i].what);
    return TP_OK;
}

tp_status tp_gguf_write_test_model(const char *path, const tp_model_config *config,
                                   const tp_gguf_test_model *how)
{
    if (!path || !config || !how)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_write_test_model: NULL argument");
    TP_TRY(check_request(config, how));
    wctx x;
    memset(&x, 0, sizeof x);
    x.arch = config->arch == TP_ARCH_LLAMA ? "llama" : "qwen2";
    tp_weights *wts = NULL;
    TP_TRY(tp_weights_init_random(config, how->seed, &wts));
    tp_status st = tp_gguf_writer_create(&x.w);
    if (st == TP_OK)
        st = add_hparams(&x, config);
    if (st == TP_OK)
        st = add_vocab(&x, config, how);
    if (st == TP_OK)
        st = add_tensors(&x, config, wts, how->type);
    if (st == TP_OK)
        st = tp_gguf_writer_write(x.w, path);
    tp_gguf_writer_destroy(x.w);
    for (size_t i = 0; i < x.n_bufs; i++)
        free(x.bufs[i]);
    free(x.bufs);
    tp_weights_destroy(wts);
    return st;
}
