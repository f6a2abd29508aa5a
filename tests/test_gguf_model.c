/* GGUF files as models (docs/gguf.md, "Models"): the config read from files this test builds
 * from its own restatement of the keys and tensor table, every refusal of the loader, the
 * defaults and derived rope parameters, weight bytes against the size formula, views of the
 * mapping, and test models of both families written by tp_gguf_write_test_model read back
 * (config round trip, weights, a vocabulary the tokenizer accepts). */
#define _GNU_SOURCE /* memmem */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/gguf_model_build.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/model.h"
#include "tensorplan/graph.h"
#include "tensorplan/cache.h"
#include "tensorplan/test_model.h"
#include "tensorplan/quant.h"
#include "tensorplan/tokenizer.h"

static char tmpdir[] = "/tmp/tp_gguf_model_XXXXXX";
static char path[300];

static mb_model base_llama(void)
{
    mb_model m;
    memset(&m, 0, sizeof m);
    m.arch = "llama";
    m.E = 64, m.L = 2, m.H = 4, m.Hkv = 2, m.D = 16, m.F = 96, m.V = 40, m.ctx = 128;
    m.type2d = TP_TYPE_F32;
    return m;
}

static mb_model base_qwen2(void)
{
    mb_model m = base_llama();
    m.arch = "qwen2";
    m.qkv_bias = 1;
    return m;
}

/* Writes m and reads its config; returns the status, *c filled on success. */
static tp_status load(const mb_model *m, tp_model_config *c)
{
    assert_int_equal(mb_write(m, path), 0);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    tp_model_config tmp;
    memset(&tmp, 0, sizeof tmp);
    tp_status st = tp_gguf_model_config(g, c ? c : &tmp);
    tp_gguf_close(g);
    return st;
}

/* m is refused with one line naming the file and every string of want. */
static void refused(const mb_model *m, const char *want1, const char *want2)
{
    assert_int_equal(load(m, NULL), TP_ERR_INVALID);
    const char *msg = tp_last_error();
    if (!strstr(msg, path) || !strstr(msg, want1) || (want2 && !strstr(msg, want2)))
        fail_msg("message '%s' lacks '%s' / '%s' / '%s'", msg, path, want1, want2 ? want2 : "");
    assert_null(strchr(msg, '\n'));
}

static void test_reads_both_families(void **state)
{
    (void)state;
    tp_model_config c;
    mb_model m = base_llama();
    m.untied = m.rope_freqs = m.ao_bias = m.ffn_bias = m.qkv_bias = 1;
    assert_int_equal(load(&m, &c), TP_OK);
    assert_int_equal(c.arch, TP_ARCH_LLAMA);
    assert_int_equal(c.rope_mode, TP_ROPE_NORM);
    assert_int_equal(c.n_embd, 64);
    assert_int_equal(c.n_layer, 2);
    assert_int_equal(c.n_head, 4);
    assert_int_equal(c.n_head_kv, 2);
    assert_int_equal(c.head_dim, 16);
    assert_int_equal(c.n_ff, 96);
    assert_int_equal(c.vocab, 40);
    assert_int_equal(c.max_ctx, 128);
    assert_true(c.rms_eps == 1e-5f && c.rope_base == 500000.0f);
    assert_true(c.qkv_bias && c.attn_out_bias && c.ffn_bias && c.rope_freqs);
    assert_false(c.tied_embeddings);
    assert_false(c.output_bias);
    assert_string_equal(c.name, "m");

    m = base_qwen2();
    m.out_bias = 1;
    m.untied = 1;
    assert_int_equal(load(&m, &c), TP_OK);
    assert_int_equal(c.arch, TP_ARCH_QWEN2);
    assert_int_equal(c.rope_mode, TP_ROPE_NEOX);
    assert_true(c.qkv_bias && c.output_bias && !c.tied_embeddings);
    assert_false(c.attn_out_bias || c.ffn_bias || c.rope_freqs);
    /* defaults: no scaling keys: freq_scale 1, no YaRN, magnitude 1, n_ctx_orig = context */
    assert_true(c.rope_freq_scale == 1.0f && c.rope_ext_factor == 0.0f);
    assert_true(c.rope_attn_factor == 1.0f);
    assert_int_equal(c.rope_n_ctx_orig, 128);

    m = base_qwen2();
    m.qkv_bias = 0; /* tied, no biases at all */
    assert_int_equal(load(&m, &c), TP_OK);
    assert_true(c.tied_embeddings && !c.qkv_bias && !c.output_bias);
}

static void test_defaults_and_rope_scaling(void **state)
{
    (void)state;
    tp_model_config c;
    mb_model m = base_llama();
    m.Hkv = 4; /* the tensors are sized for H KV heads */
    m.skip_key = "llama.attention.head_count_kv"; /* -> H */
    assert_int_equal(load(&m, &c), TP_OK);
    assert_int_equal(c.n_head_kv, 4);
    m = base_llama();
    m.Hkv = 4;
    m.skip_key = "llama.attention.key_length"; /* -> E / H = 16, value_length is 16 too */
    assert_int_equal(load(&m, &c), TP_OK);
    assert_int_equal(c.head_dim, 16);
    m = base_llama();
    m.skip_key = "llama.rope.freq_base";
    assert_int_equal(load(&m, &c), TP_OK);
    assert_true(c.rope_base == 10000.0f);

    m = base_llama();
    m.extra_keys[0] = "rope.scaling.type=s:linear";
    m.extra_keys[1] = "rope.scaling.factor=f:4";
    assert_int_equal(load(&m, &c), TP_OK);
    assert_true(c.rope_freq_scale == 0.25f && c.rope_ext_factor == 0.0f);
    assert_true(c.rope_attn_factor == 1.0f);

    m.extra_keys[0] = "rope.scaling.type=s:yarn";
    m.extra_keys[2] = "rope.scaling.original_context_length=u:64";
    m.extra_keys[3] = "rope.scaling.attn_factor=f:0.5";
    assert_int_equal(load(&m, &c), TP_OK);
    assert_true(c.rope_freq_scale == 0.25f && c.rope_ext_factor == 1.0f);
    assert_int_equal(c.rope_n_ctx_orig, 64);
    /* magnitude attn_factor * (1 + 0.1 ln(1 / freq_scale)) */
    assert_true(fabs(c.rope_attn_factor - 0.5 * (1.0 + 0.1 * log(4.0))) < 1e-6);

    m.extra_keys[0] = "rope.scaling.type=s:none"; /* factor ignored */
    m.extra_keys[2] = m.extra_keys[3] = NULL;
    assert_int_equal(load(&m, &c), TP_OK);
    assert_true(c.rope_freq_scale == 1.0f && c.rope_ext_factor == 0.0f);

    m = base_llama();
    m.extra_keys[0] = "rope.scale_linear=f:2"; /* the old name, type linear by default */
    assert_int_equal(load(&m, &c), TP_OK);
    assert_true(c.rope_freq_scale == 0.5f);

    m = base_llama();
    m.ff_array = 1; /* per-layer array, all equal */
    assert_int_equal(load(&m, &c), TP_OK);
    assert_int_equal(c.n_ff, 96);
}

static void test_key_refusals(void **state)
{
    (void)state;
    mb_model m = base_llama();
    m.skip_key = "llama.block_count";
    refused(&m, "llama.block_count", "missing");
    m = base_llama();
    m.skip_key = "general.architecture";
    refused(&m, "general.architecture", "missing");
    m = base_llama();
    m.retype_key = "llama.context_length";
    m.retype = TP_GGUF_U64;
    refused(&m, "llama.context_length", "expected u32, got u64");
    m.retype_key = "llama.attention.head_count";
    m.retype = TP_GGUF_I32;
    refused(&m, "llama.attention.head_count", "i32");
    m.retype_key = "llama.attention.layer_norm_rms_epsilon";
    refused(&m, "llama.attention.layer_norm_rms_epsilon", "expected f32, got f64");
    m = base_llama();
    m.arch = "mamba";
    refused(&m, "mamba", "not supported");
    m = base_llama();
    m.rope_dims = 8;
    refused(&m, "llama.rope.dimension_count", "16");
    m = base_llama();
    m.H = 4;
    m.Hkv = 3;
    refused(&m, "llama.attention.head_count_kv", "3");
    m = base_llama();
    m.ff_array = 2;
    refused(&m, "llama.feed_forward_length", "not supported");
    m = base_llama();
    m.expert_count = 8;
    refused(&m, "llama.expert_count", "not supported");
    m = base_llama();
    m.extra_keys[0] = "rope.scaling.type=s:llama3";
    refused(&m, "llama.rope.scaling.type", "llama3");
}

/* 1 when the model layer builds a one-token graph of c (its own checks of the config). */
static int model_layer_accepts(const tp_model_config *c)
{
    tp_graph_params p = {1, 1, 1, 0, 0, 0, TP_DTYPE_F32};
    tp_graph *g = NULL;
    const tp_status st = tp_model_build_graph(c, &p, &g);
    tp_graph_destroy(g);
    return st == TP_OK;
}

/* Every value the model layer would refuse is refused when the config is read, naming the key
 * (exit 3 on the command line), never accepted with the file and refused later (exit 1): a
 * rope scaling factor whose inverse is infinite (1e-45), a YaRN factor below e^-10 whose
 * magnitude 1 + 0.1 ln(factor) is not positive (1e-30), more layers than the model layer
 * builds. The values next to those limits load, and the model layer takes them. */
static void test_values_the_model_refuses(void **state)
{
    (void)state;
    static const struct { const char *keys[3]; const char *key; } bad[] = {
        {{"rope.scaling.type=s:yarn", "rope.scaling.factor=f:1e-30", NULL},
         "llama.rope.scaling.factor"},
        {{"rope.scaling.type=s:yarn", "rope.scaling.factor=f:1e-45", NULL},
         "llama.rope.scaling.factor"},
        {{"rope.scaling.type=s:linear", "rope.scaling.factor=f:1e-45", NULL},
         "llama.rope.scaling.factor"},
        {{"rope.scale_linear=f:1e-45", NULL, NULL}, "llama.rope.scale_linear"},
        {{"rope.scaling.factor=f:-2", NULL, NULL}, "llama.rope.scaling.factor"},
        {{"rope.scaling.attn_factor=f:-1", NULL, NULL}, "llama.rope.scaling.attn_factor"},
        {{"rope.scaling.attn_factor=f:0", NULL, NULL}, "llama.rope.scaling.attn_factor"},
        {{"block_count=u:100000", NULL, NULL}, "llama.block_count"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mb_model m = base_llama();
        for (int k = 0; k < 3; k++)
            m.extra_keys[k] = bad[i].keys[k];
        if (strstr(bad[i].keys[0], "block_count"))
            m.skip_key = "llama.block_count";
        refused(&m, bad[i].key, NULL);
    }
    static const char *const fine[] = {"rope.scaling.factor=f:1e-4", "rope.scaling.factor=f:1e-30",
                                       "rope.scaling.factor=f:1e30"};
    static const char *const types[] = {"rope.scaling.type=s:yarn", "rope.scaling.type=s:linear",
                                        "rope.scaling.type=s:yarn"};
    for (size_t i = 0; i < 3; i++) {
        mb_model m = base_llama();
        m.extra_keys[0] = types[i];
        m.extra_keys[1] = fine[i];
        tp_model_config c;
        assert_int_equal(load(&m, &c), TP_OK);
        assert_true(model_layer_accepts(&c));
    }
}

/* m's file with the first occurrence of MARK (which holds one 0x01 byte) patched to hold a
 * NUL there; the config read from it. */
static tp_status load_patched(const mb_model *m, const char *mark, size_t mark_len)
{
    assert_int_equal(mb_write(m, path), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 20];
    const size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char *at = memmem(buf, n, mark, mark_len);
    assert_non_null(at);
    *(char *)memchr(at, 1, mark_len) = '\0';
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open_memory(path, buf, n, &g), TP_OK);
    tp_model_config c;
    const tp_status st = tp_gguf_model_config(g, &c);
    tp_gguf_close(g);
    return st;
}

/* A NUL inside an enumerated value is refused as such (an architecture "ll\0ma" was called
 * 'll', a scaling type "yarn\0" 'yarn'). */
static void test_nul_in_values(void **state)
{
    (void)state;
    mb_model m = base_llama();
    m.extra_keys[0] = "rope.scaling.type=s:yarn\001";
    m.extra_keys[1] = "rope.scaling.factor=f:4";
    assert_int_equal(load_patched(&m, "yarn\001", 5), TP_ERR_INVALID);
    if (!strstr(tp_last_error(), "llama.rope.scaling.type") || !strstr(tp_last_error(), "NUL"))
        fail_msg("%s", tp_last_error());
    m = base_llama();
    m.arch = "ll\001ma";
    assert_int_equal(load_patched(&m, "\005\0\0\0\0\0\0\0ll\001ma", 13), TP_ERR_INVALID);
    if (!strstr(tp_last_error(), "general.architecture") || !strstr(tp_last_error(), "NUL"))
        fail_msg("%s", tp_last_error());
}

/* The rope keys go through the model's one check (tensorplan/model_family.h), on the file's
 * values and again on the derived ones, with one message naming the file. Regression: a YaRN
 * factor below e^-10 made the magnitude attn_factor x (1 + 0.1 ln factor) negative, which
 * the loader accepted and only the graph builder refused. */
static void test_rope_refusals(void **state)
{
    (void)state;
    static const char *const bad[][3] = {
        {"rope.freq_base=f:0", NULL, "rope_base 0"},
        {"rope.freq_base=f:-2", NULL, "rope_base -2"},
        {"rope.freq_base=f:nan", NULL, "rope_base nan"},
        {"rope.scaling.factor=f:-2", NULL, "rope_freq_scale -0.5"},
        {"rope.scaling.factor=f:inf", NULL, "rope_freq_scale 0"},
        {"rope.scaling.attn_factor=f:0", NULL, "rope_attn_factor 0"},
        {"rope.scaling.attn_factor=f:nan", NULL, "rope_attn_factor nan"},
        /* a negative attn_factor whose YaRN magnitude would come out positive */
        {"rope.scaling.type=s:yarn", "rope.scaling.factor=f:1e-5", "rope_attn_factor -1"},
        {"rope.scaling.type=s:yarn", "rope.scaling.factor=f:1e-5", "rope_attn_factor -0.15"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mb_model m = base_llama();
        m.extra_keys[0] = bad[i][0];
        m.extra_keys[1] = bad[i][1];
        if (i == 7)
            m.extra_keys[2] = "rope.scaling.attn_factor=f:-1";
        if (strncmp(bad[i][0], "rope.freq_base", 14) == 0)
            m.skip_key = "llama.rope.freq_base"; /* the written one, replaced */
        refused(&m, "rope parameters out of range", bad[i][2]);
    }
    /* the limits that pass: a factor below 1 with YaRN whose magnitude stays positive, and a
     * negative factor ignored by type none is still refused (the file's own values) */
    mb_model m = base_llama();
    m.extra_keys[0] = "rope.scaling.type=s:yarn";
    m.extra_keys[1] = "rope.scaling.factor=f:0.5";
    tp_model_config c;
    assert_int_equal(load(&m, &c), TP_OK);
    assert_true(fabs(c.rope_attn_factor - (1.0 + 0.1 * log(0.5))) < 1e-6);
    m.extra_keys[0] = "rope.scaling.type=s:none";
    m.extra_keys[1] = "rope.scaling.factor=f:-1";
    refused(&m, "rope parameters out of range", "rope_freq_scale -1");
}

static void test_tensor_refusals(void **state)
{
    (void)state;
    mb_model m = base_llama();
    m.skip_tensor = "blk.1.ffn_up.weight";
    refused(&m, "tensor 'blk.1.ffn_up.weight'", "missing");
    m = base_llama();
    m.skip_tensor = "token_embd.weight";
    refused(&m, "token_embd.weight", "missing");
    /* a 1-D table is a wrong shape (it was reported as "1 rows" against the tokens) */
    m.extra_tensor = "token_embd.weight";
    refused(&m, "token_embd.weight", "expected shape [n_embd, vocabulary] (2 dimensions), "
            "got 1 dimensions");
    m = base_llama();
    m.qkv_bias = 1;
    m.skip_tensor = "blk.1.attn_v.bias"; /* the group is present in blk.0 */
    refused(&m, "blk.1.attn_v.bias", "missing");
    m = base_llama();
    m.extra_tensor = "blk.0.attn_extra.weight";
    refused(&m, "blk.0.attn_extra.weight", NULL);
    m.extra_tensor = "blk.2.attn_norm.weight"; /* layer 2 of a 2-layer model */
    refused(&m, "blk.2.attn_norm.weight", NULL);
    m.extra_tensor = "blk.01.attn_norm.weight"; /* not how layer 1 is spelt */
    refused(&m, "blk.01.attn_norm.weight", NULL);
    m.extra_tensor = "blk.1attn_norm.weight";
    refused(&m, "blk.1attn_norm.weight", NULL);
    m = base_qwen2();
    m.extra_tensor = "blk.0.attn_output.bias"; /* a llama tensor, not a qwen2 one */
    refused(&m, "blk.0.attn_output.bias", "qwen2");
    m = base_llama();
    m.reshape_tensor = "blk.0.attn_k.weight";
    refused(&m, "blk.0.attn_k.weight", "expected shape [64, 32]");
    m = base_llama();
    m.retype_tensor = "blk.0.attn_q.weight";
    m.retype_tensor_to = TP_TYPE_Q8_1; /* a valid GGUF type the kernels do not execute */
    refused(&m, "blk.0.attn_q.weight", "Q8_1");
    m.retype_tensor = "blk.0.ffn_norm.weight";
    m.retype_tensor_to = TP_TYPE_Q8_0; /* a 1-D tensor must be F32, F16 or BF16 */
    refused(&m, "blk.0.ffn_norm.weight", "Q8_0");
    m = base_llama();
    m.n_tokens = 41;
    refused(&m, "token_embd.weight", "41");

    /* 1-D tensors in F16 and BF16 are accepted */
    m = base_llama();
    m.retype_tensor = "output_norm.weight";
    m.retype_tensor_to = TP_TYPE_BF16;
    assert_int_equal(load(&m, NULL), TP_OK);
}

/* Weight bytes per type and the views, against this test's own table and formula. */
static void test_weight_bytes_and_views(void **state)
{
    (void)state;
    const uint32_t types[] = {TP_TYPE_F32, TP_TYPE_F16, TP_TYPE_BF16, TP_TYPE_Q8_0};
    for (size_t ti = 0; ti < 4; ti++) {
        mb_model m = base_llama();
        m.untied = m.qkv_bias = 1;
        m.type2d = types[ti];
        assert_int_equal(mb_write(&m, path), 0);
        mb_tensor ts[64];
        const size_t n = mb_tensors(&m, ts, 64);
        size_t want[TP_TYPE_ID_LIMIT] = {0}, want_total = 0;
        for (size_t i = 0; i < n; i++) {
            const uint32_t t = ts[i].ne1 ? types[ti] : TP_TYPE_F32;
            const size_t b = mb_bytes(t, ts[i].ne0, ts[i].ne1 ? ts[i].ne1 : 1);
            want[t] += b;
            want_total += b;
        }
        tp_gguf *g = NULL;
        assert_int_equal(tp_gguf_open(path, &g), TP_OK);
        size_t got[TP_TYPE_ID_LIMIT], total = 0;
        assert_int_equal(tp_gguf_model_weight_bytes(g, got, &total), TP_OK);
        assert_memory_equal(got, want, sizeof want);
        assert_int_equal(total, want_total);
        tp_model_config c;
        assert_int_equal(tp_gguf_model_config(g, &c), TP_OK);
        tp_weights *w = NULL;
        assert_int_equal(tp_gguf_model_weights(g, &c, &w), TP_OK);
        assert_int_equal(tp_weights_count(w), n);
        for (size_t i = 0; i < n; i++) {
            const tp_weight *v = tp_weights_find(w, ts[i].name);
            assert_non_null(v);
            assert_null(v->data);
            assert_int_equal(v->cols, (size_t)ts[i].ne0);
            assert_int_equal(v->rows, ts[i].ne1 ? (size_t)ts[i].ne1 : 1);
            assert_ptr_equal(v->bytes, tp_gguf_find_tensor(g, ts[i].name)->data);
        }
        tp_weights_destroy(w);
        tp_gguf_close(g);
    }
}

static void assert_same_config(const tp_model_config *a, const tp_model_config *b)
{
    assert_int_equal(a->arch, b->arch);
    assert_int_equal(a->rope_mode, b->rope_mode);
    assert_int_equal(a->n_embd, b->n_embd);
    assert_int_equal(a->n_head, b->n_head);
    assert_int_equal(a->n_head_kv, b->n_head_kv);
    assert_int_equal(a->head_dim, b->head_dim);
    assert_int_equal(a->n_ff, b->n_ff);
    assert_int_equal(a->n_layer, b->n_layer);
    assert_int_equal(a->vocab, b->vocab);
    assert_int_equal(a->max_ctx, b->max_ctx);
    assert_true(a->rms_eps == b->rms_eps && a->rope_base == b->rope_base);
    assert_int_equal(a->qkv_bias, b->qkv_bias);
    assert_int_equal(a->tied_embeddings, b->tied_embeddings);
    assert_int_equal(a->rope_freqs, b->rope_freqs);
    assert_int_equal(a->attn_out_bias, b->attn_out_bias);
    assert_int_equal(a->ffn_bias, b->ffn_bias);
    assert_int_equal(a->output_bias, b->output_bias);
    assert_true(a->rope_freq_scale == b->rope_freq_scale);
    assert_true(a->rope_ext_factor == b->rope_ext_factor);
    assert_true(fabsf(a->rope_attn_factor - b->rope_attn_factor) <= 1e-6f * b->rope_attn_factor);
    /* absent (0 in a built-in config): the context length */
    assert_int_equal(a->rope_n_ctx_orig, b->rope_n_ctx_orig ? b->rope_n_ctx_orig : b->max_ctx);
}

/* The desc of the file's tokenizer.ggml.* arrays, built here, accepted by the tokenizer. */
static tp_tokenizer *file_tokenizer(const tp_gguf *g)
{
    tp_gguf_array toks, types, merges, scores;
    tp_gguf_str model;
    assert_int_equal(tp_gguf_get_string(g, "tokenizer.ggml.model", &model), TP_OK);
    assert_int_equal(tp_gguf_get_array(g, "tokenizer.ggml.tokens", TP_GGUF_STRING, &toks), TP_OK);
    assert_int_equal(tp_gguf_get_array(g, "tokenizer.ggml.token_type", TP_GGUF_I32, &types),
                     TP_OK);
    const int gpt2 = model.len == 4 && memcmp(model.data, "gpt2", 4) == 0;
    static char model_s[8], pre_s[32];
    static const char *tp[1024], *mp[1024];
    static size_t tl[1024], ml[1024];
    static int32_t ty[1024];
    static float sc[1024];
    assert_true(toks.count <= 1024);
    snprintf(model_s, sizeof model_s, "%.*s", (int)model.len, model.data);
    tp_vocab_desc d;
    tp_vocab_desc_init(&d);
    d.model = model_s;
    d.n_tokens = toks.count;
    for (size_t i = 0; i < toks.count; i++) {
        tp[i] = toks.strings[i].data;
        tl[i] = toks.strings[i].len;
        ty[i] = (int32_t)(uint32_t)tp_gguf_array_bits(&types, i);
    }
    d.tokens = tp;
    d.token_lens = tl;
    d.types = ty;
    if (gpt2) {
        tp_gguf_str pre;
        assert_int_equal(tp_gguf_get_string(g, "tokenizer.ggml.pre", &pre), TP_OK);
        snprintf(pre_s, sizeof pre_s, "%.*s", (int)pre.len, pre.data);
        d.pre = pre_s;
        assert_int_equal(tp_gguf_get_array(g, "tokenizer.ggml.merges", TP_GGUF_STRING, &merges),
                         TP_OK);
        assert_true(merges.count <= 1024 && merges.count > 0);
        for (size_t i = 0; i < merges.count; i++) {
            mp[i] = merges.strings[i].data;
            ml[i] = merges.strings[i].len;
        }
        d.n_merges = merges.count;
        d.merges = mp;
        d.merge_lens = ml;
    } else {
        assert_int_equal(tp_gguf_get_array(g, "tokenizer.ggml.scores", TP_GGUF_F32, &scores),
                         TP_OK);
        for (size_t i = 0; i < scores.count; i++) {
            const uint32_t b = (uint32_t)tp_gguf_array_bits(&scores, i);
            memcpy(&sc[i], &b, 4);
        }
        d.scores = sc;
    }
    uint32_t bos = 0, eos = 0;
    assert_int_equal(tp_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos), TP_OK);
    assert_int_equal(tp_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos), TP_OK);
    d.bos = bos;
    d.eos = eos;
    tp_tokenizer *tok = NULL;
    assert_int_equal(tp_tokenizer_create(&d, &tok), TP_OK);
    return tok;
}

/* Token id whose text is s, or -1. */
static int32_t token_of(const tp_tokenizer *tok, const char *s)
{
    for (int32_t i = 0; i < (int32_t)tp_tokenizer_n_vocab(tok); i++) {
        size_t len = 0;
        const char *t = tp_tokenizer_token_text(tok, i, &len);
        if (len == strlen(s) && memcmp(t, s, len) == 0)
            return i;
    }
    return -1;
}

static void check_vocab(const tp_gguf *g, int gpt2, size_t vocab)
{
    tp_tokenizer *tok = file_tokenizer(g);
    assert_int_equal(tp_tokenizer_n_vocab(tok), vocab);
    int32_t *ids = NULL;
    size_t n = 0;
    if (gpt2) {
        /* 256 byte tokens first: byte 'a' is the text "a", space is U+0120 */
        size_t len = 0;
        assert_memory_equal(tp_tokenizer_token_text(tok, 'a', &len), "a", 1);
        assert_memory_equal(tp_tokenizer_token_text(tok, ' ', &len), "\xC4\xA0", 2);
        const int32_t im_end = token_of(tok, "<|im_end|>");
        assert_true(im_end >= 0);
        assert_int_equal(tp_tokenizer_token_type(tok, im_end), TP_TOKEN_CONTROL);
        assert_int_equal(tp_tokenizer_encode(tok, "the world", 9, 0, 1, &ids, &n), TP_OK);
        /* "the" and " world" are words of the merge corpus: one token each */
        assert_int_equal(n, 2);
        assert_int_equal(ids[0], token_of(tok, "the"));
        assert_int_equal(ids[1], token_of(tok, "\xC4\xA0world"));
    } else {
        assert_int_equal(token_of(tok, "<unk>"), 0);
        assert_int_equal(tp_tokenizer_token_type(tok, 1), TP_TOKEN_CONTROL);
        assert_int_equal(token_of(tok, "<0x41>"), 3 + 0x41);
        assert_int_equal(tp_tokenizer_token_type(tok, 3 + 0x41), TP_TOKEN_BYTE);
        assert_int_equal(tp_tokenizer_encode(tok, "the world", 9, 0, 1, &ids, &n), TP_OK);
        assert_int_equal(n, 2);
        assert_int_equal(ids[0], token_of(tok, "\xE2\x96\x81the"));
        assert_int_equal(ids[1], token_of(tok, "\xE2\x96\x81world"));
    }
    free(ids);
    tp_tokenizer_destroy(tok);
}

/* The file's matrices hold tp_weights_init_random's values (F32: exactly; F16: rounded). */
static void check_weights(const tp_gguf *g, const tp_model_config *c, uint64_t seed)
{
    tp_weights *want = NULL, *got = NULL;
    assert_int_equal(tp_weights_init_random(c, seed, &want), TP_OK);
    assert_int_equal(tp_gguf_model_weights(g, c, &got), TP_OK);
    assert_int_equal(tp_weights_count(got), tp_weights_count(want));
    float *row = malloc(4096 * sizeof *row);
    for (size_t i = 0; i < tp_weights_count(want); i++) {
        const tp_weight *a = tp_weights_at(want, i), *b = tp_weights_find(got, a->name);
        assert_non_null(b);
        assert_int_equal(a->rows, b->rows);
        assert_int_equal(a->cols, b->cols);
        assert_true(a->cols <= 4096);
        const size_t r = a->rows - 1; /* the last row */
        assert_int_equal(tp_dequantize_row(b->type, (const char *)b->bytes + r * b->row_bytes,
                                           row, b->cols), TP_OK);
        for (size_t k = 0; k < a->cols; k++) {
            const float x = a->data[r * a->cols + k];
            const float tol = b->type == TP_TYPE_F16 ? fabsf(x) * (1.0f / 1024) + 6e-8f : 0.0f;
            if (!(fabsf(row[k] - x) <= tol))
                fail_msg("%s[%zu][%zu]: %g, want %g", a->name, r, k, row[k], x);
        }
    }
    free(row);
    tp_weights_destroy(want);
    tp_weights_destroy(got);
}

static void round_trip_pre(tp_model_config cfg, const char *tokenizer, uint32_t type,
                           const char *pre)
{
    snprintf(cfg.name, sizeof cfg.name, "m");
    const tp_gguf_test_model how = {.type = type, .seed = 7, .tokenizer = tokenizer,
                                    .pre = pre};
    assert_int_equal(tp_gguf_write_test_model(path, &cfg, &how), TP_OK);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    tp_model_config back;
    assert_int_equal(tp_gguf_model_config(g, &back), TP_OK);
    assert_string_equal(back.name, "m");
    assert_same_config(&back, &cfg);
    check_vocab(g, strcmp(tokenizer, "gpt2") == 0, (size_t)cfg.vocab);
    if (type == TP_TYPE_F32 || type == TP_TYPE_F16)
        check_weights(g, &back, 7);
    tp_gguf_close(g);
}

static void round_trip(tp_model_config cfg, const char *tokenizer, uint32_t type)
{
    round_trip_pre(cfg, tokenizer, type, NULL);
}

static void test_write_round_trip(void **state)
{
    (void)state;
    tp_model_config q, l;
    assert_int_equal(tp_model_config_builtin("tiny-qwen2", &q), TP_OK);
    assert_int_equal(tp_model_config_builtin("tiny-llama", &l), TP_OK);
    round_trip(q, "gpt2", TP_TYPE_F32);
    round_trip(l, "llama", TP_TYPE_F16);
    q.tied_embeddings = 0;
    q.output_bias = 1;
    round_trip(q, "gpt2", TP_TYPE_Q8_0);
    l.qkv_bias = l.attn_out_bias = l.ffn_bias = l.rope_freqs = l.tied_embeddings = 1;
    l.rope_freq_scale = 0.25f;
    round_trip(l, "gpt2", TP_TYPE_F32);
    l.rope_ext_factor = 1.0f;
    l.rope_n_ctx_orig = 64;
    l.rope_attn_factor = 1.3f;
    round_trip(l, "llama", TP_TYPE_BF16);
    round_trip_pre(q, "gpt2", TP_TYPE_F32, "llama-bpe");
}

static void test_write_refusals(void **state)
{
    (void)state;
    tp_model_config q, t;
    assert_int_equal(tp_model_config_builtin("tiny-qwen2", &q), TP_OK);
    assert_int_equal(tp_model_config_builtin("tiny", &t), TP_OK);
    tp_gguf_test_model how = {.type = TP_TYPE_F32, .seed = 1, .tokenizer = "gpt2"};
    assert_int_equal(tp_gguf_write_test_model(path, &t, &how), TP_ERR_INVALID); /* vocab 97 */
    assert_non_null(strstr(tp_last_error(), "259"));
    how.tokenizer = "bert";
    assert_int_equal(tp_gguf_write_test_model(path, &q, &how), TP_ERR_INVALID);
    how.tokenizer = "gpt2";
    how.type = TP_TYPE_Q8_1; /* not a type the writer quantizes to */
    assert_int_equal(tp_gguf_write_test_model(path, &q, &how), TP_ERR_INVALID);
    how.type = TP_TYPE_F32;
    q.rope_freqs = 1; /* qwen2 files have no rope_freqs */
    assert_int_equal(tp_gguf_write_test_model(path, &q, &how), TP_ERR_INVALID);
}

/* The loader reads no weight byte: the pages of the data section are made unreadable, and
 * the config, the bytes per type and the views still come out. */
static void test_reads_no_weight_byte(void **state)
{
    (void)state;
    tp_model_config cfg;
    assert_int_equal(tp_model_config_builtin("tiny-llama", &cfg), TP_OK);
    const tp_gguf_test_model how = {.type = TP_TYPE_F32, .seed = 1, .tokenizer = "llama"};
    assert_int_equal(tp_gguf_write_test_model(path, &cfg, &how), TP_OK);
    const int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    const size_t size = (size_t)st.st_size;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (size + page - 1) / page * page;
    unsigned char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    assert_true(map != MAP_FAILED);
    close(fd);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open_memory("guarded.gguf", map, size, &g), TP_OK);
    const size_t from = (tp_gguf_data_offset(g) + page - 1) / page * page;
    tp_gguf_close(g);
    assert_true(span - from > span / 2); /* most of the file is weights */
    assert_int_equal(mprotect(map + from, span - from, PROT_NONE), 0);
    assert_int_equal(tp_gguf_open_memory("guarded.gguf", map, size, &g), TP_OK);
    tp_model_config c;
    assert_int_equal(tp_gguf_model_config(g, &c), TP_OK);
    assert_int_equal(c.vocab, cfg.vocab);
    size_t by_type[TP_TYPE_ID_LIMIT], total = 0;
    assert_int_equal(tp_gguf_model_weight_bytes(g, by_type, &total), TP_OK);
    assert_true(total > span - from - page);
    tp_weights *w = NULL;
    assert_int_equal(tp_gguf_model_weights(g, &c, &w), TP_OK);
    assert_int_equal(tp_weights_bytes(w), total);
    tp_weights_destroy(w);
    tp_gguf_close(g);
    munmap(map, size);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(path, sizeof path, "%s/m.gguf", tmpdir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    remove(path);
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_both_families),
        cmocka_unit_test(test_defaults_and_rope_scaling),
        cmocka_unit_test(test_values_the_model_refuses),
        cmocka_unit_test(test_nul_in_values),
        cmocka_unit_test(test_key_refusals),
        cmocka_unit_test(test_rope_refusals),
        cmocka_unit_test(test_tensor_refusals),
        cmocka_unit_test(test_weight_bytes_and_views),
        cmocka_unit_test(test_write_round_trip),
        cmocka_unit_test(test_write_refusals),
        cmocka_unit_test(test_reads_no_weight_byte),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
