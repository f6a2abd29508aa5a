/* Test support: GGUF model files of the llama and qwen2 families built by the tests from their
 * own restatement of docs/gguf.md ("Models": keys, tensor names and shapes), with the damage a
 * test asks for (a key left out or stored with another type, a tensor left out, added, of
 * another shape or type, a vocabulary of another size). Tensor bytes are zeros: the loader
 * must never read them. The library's GGUF writer lays the bytes out. */
#ifndef TP_TESTS_GGUF_MODEL_BUILD_H
#define TP_TESTS_GGUF_MODEL_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorplan/gguf.h"

typedef struct mb_model {
    const char *arch;                       /* "llama", "qwen2" or anything to refuse      */
    int E, L, H, Hkv, D, F, V, ctx;
    int qkv_bias, untied, out_bias, rope_freqs, ao_bias, ffn_bias;
    uint32_t type2d;                        /* ggml type id of the matrices                */
    int n_tokens;                           /* tokenizer.ggml.tokens count; 0 = V          */
    /* damage */
    const char *skip_key;                   /* full key name left out                      */
    const char *retype_key;                 /* full key name stored as retype              */
    tp_gguf_vtype retype;                   /* TP_GGUF_U64, TP_GGUF_I32, TP_GGUF_F64       */
    int rope_dims;                          /* rope.dimension_count; 0 = D                 */
    int ff_array;                           /* 1: feed_forward_length as array of L u32, 2: unequal */
    const char *skip_tensor, *extra_tensor; /* full tensor names                           */
    const char *reshape_tensor;             /* gets ne0 + 32                               */
    const char *retype_tensor;              /* gets retype_tensor_to                       */
    uint32_t retype_tensor_to;
    int expert_count;
    const char *extra_keys[4];              /* "suffix=type:value": "rope.scaling.type=s:yarn" */
} mb_model;

/* One tensor the family lists (docs/gguf.md table restated). */
typedef struct mb_tensor {
    char name[64];
    int64_t ne0, ne1; /* ne1 0: a vector */
} mb_tensor;

/* The tensors of m in writer order; returns the count (at most cap). */
static inline size_t mb_tensors(const mb_model *m, mb_tensor *out, size_t cap)
{
    const int llama = strcmp(m->arch, "qwen2") != 0;
    const int64_t E = m->E, Q = (int64_t)m->H * m->D, KV = (int64_t)m->Hkv * m->D, F = m->F;
    size_t n = 0;
#define MB_ADD(nm, a, b)                                                                      \
    do {                                                                                      \
        if (n < cap) {                                                                        \
            snprintf(out[n].name, sizeof out[n].name, "%s", nm);                              \
            out[n].ne0 = (a);                                                                 \
            out[n].ne1 = (b);                                                                 \
        }                                                                                     \
        n++;                                                                                  \
    } while (0)
    MB_ADD("token_embd.weight", E, m->V);
    MB_ADD("output_norm.weight", E, 0);
    if (m->untied)
        MB_ADD("output.weight", E, m->V);
    if (!llama && m->out_bias)
        MB_ADD("output.bias", m->V, 0);
    if (llama && m->rope_freqs)
        MB_ADD("rope_freqs.weight", m->D / 2, 0);
    for (int l = 0; l < m->L; l++) {
        char nm[64];
#define MB_L(sfx, a, b)                                                                       \
    do {                                                                                      \
        snprintf(nm, sizeof nm, "blk.%d.%s", l, sfx);                                         \
        MB_ADD(nm, a, b);                                                                     \
    } while (0)
        MB_L("attn_norm.weight", E, 0);
        MB_L("attn_q.weight", E, Q);
        MB_L("attn_k.weight", E, KV);
        MB_L("attn_v.weight", E, KV);
        if (m->qkv_bias) {
            MB_L("attn_q.bias", Q, 0);
            MB_L("attn_k.bias", KV, 0);
            MB_L("attn_v.bias", KV, 0);
        }
        MB_L("attn_output.weight", Q, E);
        if (llama && m->ao_bias)
            MB_L("attn_output.bias", E, 0);
        MB_L("ffn_norm.weight", E, 0);
        MB_L("ffn_gate.weight", E, F);
        MB_L("ffn_up.weight", E, F);
        MB_L("ffn_down.weight", F, E);
        if (llama && m->ffn_bias) {
            MB_L("ffn_gate.bias", F, 0);
            MB_L("ffn_up.bias", F, 0);
            MB_L("ffn_down.bias", E, 0);
        }
#undef MB_L
    }
#undef MB_ADD
    return n;
}

/* Bytes of a tensor of type t with ne0 x rows elements (docs/gguf.md formula restated). */
static inline size_t mb_bytes(uint32_t t, int64_t ne0, int64_t rows)
{
    const size_t n = (size_t)ne0;
    size_t row = t == 0 ? 4 * n : (t == 1 || t == 30) ? 2 * n : t == 8 ? n / 32 * 34
               : t == 9 ? n / 32 * 36 : t == 2 ? n / 32 * 18 : 0;
    return row * (size_t)rows;
}

static inline void mb_key_u32(tp_gguf_writer *w, const mb_model *m, const char *key, uint32_t v)
{
    if (m->skip_key && strcmp(m->skip_key, key) == 0)
        return;
    if (m->retype_key && strcmp(m->retype_key, key) == 0) {
        if (m->retype == TP_GGUF_U64)
            tp_gguf_writer_add_u64(w, key, v);
        else if (m->retype == TP_GGUF_I32)
            tp_gguf_writer_add_i32(w, key, (int32_t)v);
        else
            tp_gguf_writer_add_f64(w, key, v);
        return;
    }
    tp_gguf_writer_add_u32(w, key, v);
}

static inline void mb_key_f32(tp_gguf_writer *w, const mb_model *m, const char *key, float v)
{
    if (m->skip_key && strcmp(m->skip_key, key) == 0)
        return;
    if (m->retype_key && strcmp(m->retype_key, key) == 0)
        tp_gguf_writer_add_f64(w, key, v);
    else
        tp_gguf_writer_add_f32(w, key, v);
}

static inline void mb_extra_key(tp_gguf_writer *w, const mb_model *m, const char *spec)
{
    char key[128], val[64];
    const char *eq = strchr(spec, '=');
    snprintf(key, sizeof key, "%s.%.*s", m->arch, (int)(eq - spec), spec);
    snprintf(val, sizeof val, "%s", eq + 3);
    if (eq[1] == 's')
        tp_gguf_writer_add_string(w, key, val);
    else if (eq[1] == 'f')
        tp_gguf_writer_add_f32(w, key, strtof(val, NULL));
    else
        tp_gguf_writer_add_u32(w, key, (uint32_t)strtoul(val, NULL, 10));
}

static inline void mb_keys(tp_gguf_writer *w, const mb_model *m)
{
    char k[128];
    if (!(m->skip_key && strcmp(m->skip_key, "general.architecture") == 0))
        tp_gguf_writer_add_string(w, "general.architecture", m->arch);
#define MB_K(sfx) (snprintf(k, sizeof k, "%s.%s", m->arch, sfx), k)
    mb_key_u32(w, m, MB_K("context_length"), (uint32_t)m->ctx);
    mb_key_u32(w, m, MB_K("embedding_length"), (uint32_t)m->E);
    mb_key_u32(w, m, MB_K("block_count"), (uint32_t)m->L);
    if (m->ff_array) {
        uint32_t ff[64];
        for (int l = 0; l < m->L; l++)
            ff[l] = (uint32_t)m->F + (m->ff_array == 2 && l == m->L - 1 ? 32u : 0u);
        tp_gguf_writer_add_array(w, MB_K("feed_forward_length"), TP_GGUF_U32, ff,
                                 (size_t)m->L);
    } else {
        mb_key_u32(w, m, MB_K("feed_forward_length"), (uint32_t)m->F);
    }
    mb_key_u32(w, m, MB_K("attention.head_count"), (uint32_t)m->H);
    mb_key_u32(w, m, MB_K("attention.head_count_kv"), (uint32_t)m->Hkv);
    mb_key_u32(w, m, MB_K("attention.key_length"), (uint32_t)m->D);
    mb_key_u32(w, m, MB_K("attention.value_length"), (uint32_t)m->D);
    mb_key_f32(w, m, MB_K("attention.layer_norm_rms_epsilon"), 1e-5f);
    mb_key_u32(w, m, MB_K("rope.dimension_count"), (uint32_t)(m->rope_dims ? m->rope_dims : m->D));
    mb_key_f32(w, m, MB_K("rope.freq_base"), 500000.0f);
    if (m->expert_count)
        tp_gguf_writer_add_u32(w, MB_K("expert_count"), (uint32_t)m->expert_count);
#undef MB_K
    for (size_t i = 0; i < 4 && m->extra_keys[i]; i++)
        mb_extra_key(w, m, m->extra_keys[i]);
}

/* A vocabulary of n distinct byte-level texts ("t0", "t1", ...), gpt2 with pre qwen2. */
static inline void mb_vocab(tp_gguf_writer *w, int n)
{
    char **texts = calloc((size_t)n, sizeof *texts);
    for (int i = 0; i < n; i++) {
        texts[i] = malloc(16);
        snprintf(texts[i], 16, "t%d", i);
    }
    tp_gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2");
    tp_gguf_writer_add_string(w, "tokenizer.ggml.pre", "qwen2");
    tp_gguf_writer_add_strings(w, "tokenizer.ggml.tokens", (const char *const *)texts, (size_t)n);
    for (int i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
}

/* Writes m to path; returns 0 on success. */
static inline int mb_write(const mb_model *m, const char *path)
{
    static unsigned char zeros[1 << 22];
    tp_gguf_writer *w = NULL;
    if (tp_gguf_writer_create(&w) != TP_OK)
        return -1;
    mb_keys(w, m);
    mb_vocab(w, m->n_tokens ? m->n_tokens : m->V);
    mb_tensor ts[512];
    const size_t n = mb_tensors(m, ts, 512);
    int rc = n <= 512 ? 0 : -1;
    for (size_t i = 0; i < n && i < 512 && rc == 0; i++) {
        if (m->skip_tensor && strcmp(m->skip_tensor, ts[i].name) == 0)
            continue;
        int64_t ne[2] = {ts[i].ne0, ts[i].ne1};
        uint32_t type = ts[i].ne1 ? m->type2d : 0;
        if (m->reshape_tensor && strcmp(m->reshape_tensor, ts[i].name) == 0)
            ne[0] += 32;
        if (m->retype_tensor && strcmp(m->retype_tensor, ts[i].name) == 0)
            type = m->retype_tensor_to;
        const uint32_t nd = ts[i].ne1 ? 2 : 1;
        const size_t bytes = mb_bytes(type, ne[0], ts[i].ne1 ? ts[i].ne1 : 1);
        if (bytes > sizeof zeros ||
            tp_gguf_writer_add_tensor(w, ts[i].name, type, nd, ne, zeros, bytes) != TP_OK)
            rc = -1;
    }
    if (rc == 0 && m->extra_tensor) {
        const int64_t ne[1] = {m->E};
        rc = tp_gguf_writer_add_tensor(w, m->extra_tensor, 0, 1, ne, zeros, 4 * (size_t)m->E)
                 == TP_OK ? 0 : -1;
    }
    if (rc == 0 && tp_gguf_writer_write(w, path) != TP_OK)
        rc = -1;
    tp_gguf_writer_destroy(w);
    return rc;
}

#endif
