/* Both decoder families (qwen2, llama) executed from typed weight views: prefill and decode
 * logits through tp_session_* against the double-precision reference forward of
 * tests/support (which dequantizes the same views with its own code), every allocation
 * strategy and aliasing policy equal to naive bit for bit, and views that keep their own
 * size. Configs: GQA, NORM and NEOX rope, rope_freqs, linear and YaRN scaling, every optional
 * bias, tied and untied output. Types: owned f32, and views of F32, F16, BF16, Q8_0 (every
 * config) and of every other block type (Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K: 256-wide rows),
 * the block types with each KV cache type (f32, f16, q8_0) in the strategy comparison. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/ref_forward.h"
#include "tensorplan/session.h"
#include "tensorplan/quant.h"

#define N_PROMPT 6
#define N_STEPS 3
#define OWNED 0xFFFFu /* "type" of the registry made by tp_weights_init_random itself */

static const int32_t prompt[N_PROMPT] = {5, 1, 19, 0, 7, 3};

/* ---- configs ---------------------------------------------------------------------------- */

static tp_model_config base_config(const char *name, tp_arch arch, int ne, int nh, int nkv,
                                   int hd, int nf, int layers, int vocab)
{
    tp_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", name);
    c.n_embd = ne;
    c.n_head = nh;
    c.n_head_kv = nkv;
    c.head_dim = hd;
    c.n_ff = nf;
    c.n_layer = layers;
    c.vocab = vocab;
    c.max_ctx = 64;
    c.rms_eps = 1e-5f;
    c.arch = arch;
    c.rope_mode = arch == TP_ARCH_LLAMA ? TP_ROPE_NORM : TP_ROPE_NEOX;
    c.rope_base = arch == TP_ARCH_LLAMA ? 500000.0f : 1e6f;
    c.rope_freq_scale = 1.0f;
    c.rope_attn_factor = 1.0f;
    c.qkv_bias = arch == TP_ARCH_QWEN2;
    c.tied_embeddings = 1;
    return c;
}

enum { N_CONFIGS = 5, CFG_Q4K = 4, CFG_WIDE_VOCAB = 5 };

static tp_model_config config_at(int i)
{
    tp_model_config c;
    switch (i) {
    case 0: /* llama: rope_freqs, YaRN, every optional bias, untied */
        c = base_config("llama-yarn", TP_ARCH_LLAMA, 64, 4, 2, 16, 96, 3, 53);
        c.rope_freqs = c.attn_out_bias = c.ffn_bias = c.output_bias = 1;
        c.tied_embeddings = 0;
        c.rope_freq_scale = 0.25f;
        c.rope_ext_factor = 1.0f;
        c.rope_n_ctx_orig = 4096;
        c.rope_attn_factor = 1.1386294f; /* 1 + 0.1 ln(1/0.25), YaRN's magnitude */
        return c;
    case 1: /* llama: tied, one KV head, rope_freqs with linear scaling, no bias */
        c = base_config("llama-tied", TP_ARCH_LLAMA, 32, 4, 1, 8, 64, 2, 45);
        c.rope_freqs = 1;
        c.rope_freq_scale = 0.5f;
        return c;
    case 2: /* qwen2: q/k/v biases, tied, 2 query heads per KV head */
        return base_config("qwen2-tied", TP_ARCH_QWEN2, 32, 4, 2, 8, 64, 2, 61);
    case 3: /* qwen2: untied with an output bias */
        c = base_config("qwen2-untied", TP_ARCH_QWEN2, 32, 2, 1, 16, 32, 3, 37);
        c.tied_embeddings = 0;
        c.output_bias = 1;
        return c;
    case CFG_Q4K: /* llama widths of whole Q4_K blocks */
        c = base_config("llama-256", TP_ARCH_LLAMA, 256, 4, 2, 64, 256, 2, 23);
        c.tied_embeddings = 0;
        return c;
    default: /* a tied embedding of 16 MB as f32 that dominates the model */
        return base_config("llama-vocab", TP_ARCH_LLAMA, 256, 4, 2, 64, 256, 1, 16384);
    }
}

/* ---- views ------------------------------------------------------------------------------- */

typedef struct model {
    tp_model_config c;
    tp_weights *owned; /* tp_weights_init_random */
    tp_weights *w;     /* what runs: owned, or views of bufs */
    void **bufs;
    size_t n_bufs;
    size_t want_bytes; /* the views' size, computed from the block table of docs/quant.md */
} model;

/* Bytes of a row of n elements, from the block sizes of the layouts (docs/quant.md). */
static size_t row_size(uint32_t type, size_t n)
{
    switch (type) {
    case TP_TYPE_F32:
        return 4 * n;
    case TP_TYPE_F16:
    case TP_TYPE_BF16:
        return 2 * n;
    case TP_TYPE_Q4_0:
        return n / 32 * 18;
    case TP_TYPE_Q4_1:
        return n / 32 * 20;
    case TP_TYPE_Q5_0:
        return n / 32 * 22;
    case TP_TYPE_Q5_1:
        return n / 32 * 24;
    case TP_TYPE_Q8_0:
        return n / 32 * 34;
    case TP_TYPE_Q2_K:
        return n / 256 * 84;
    case TP_TYPE_Q3_K:
        return n / 256 * 110;
    case TP_TYPE_Q5_K:
        return n / 256 * 176;
    case TP_TYPE_Q6_K:
        return n / 256 * 210;
    default: /* Q4_K */
        return n / 256 * 144;
    }
}

/* Matrices are stored in `type`, vectors in F16 / BF16 when the type is one of those (the
 * backend then dequantizes them per call), else in F32. */
static void make_model(int cfg, uint32_t type, model *m)
{
    memset(m, 0, sizeof *m);
    m->c = config_at(cfg);
    assert_int_equal(tp_weights_init_random(&m->c, 7 + (uint64_t)cfg, &m->owned), TP_OK);
    if (type == OWNED) {
        m->w = m->owned;
        m->want_bytes = tp_weights_bytes(m->owned);
        return;
    }
    assert_int_equal(tp_weights_create(&m->w), TP_OK);
    size_t n = tp_weights_count(m->owned);
    m->bufs = calloc(n, sizeof *m->bufs);
    assert_non_null(m->bufs);
    for (size_t i = 0; i < n; i++) {
        const tp_weight *t = tp_weights_at(m->owned, i);
        uint32_t ty = type;
        if (t->rows == 1)
            ty = type == TP_TYPE_F16 || type == TP_TYPE_BF16 ? type : TP_TYPE_F32;
        size_t rb = row_size(ty, t->cols);
        unsigned char *buf = malloc(t->rows * rb);
        assert_non_null(buf);
        m->bufs[m->n_bufs++] = buf;
        for (size_t r = 0; r < t->rows; r++)
            assert_int_equal(tp_quantize_row(ty, t->data + r * t->cols, buf + r * rb, t->cols),
                             TP_OK);
        if (tp_weights_add_view(m->w, t->name, ty, t->rows, t->cols, buf) != TP_OK)
            fail_msg("%s: %s", t->name, tp_last_error());
        m->want_bytes += t->rows * rb;
    }
}

static void free_model(model *m)
{
    if (m->w != m->owned)
        tp_weights_destroy(m->w);
    tp_weights_destroy(m->owned);
    for (size_t i = 0; i < m->n_bufs; i++)
        free(m->bufs[i]);
    free(m->bufs);
}

static const char *type_label(uint32_t type)
{
    return type == OWNED ? "owned f32" : tp_type_name(type);
}

/* ---- against the reference ------------------------------------------------------------- */

/* Relative L2 distance of one row of logits from the reference row. */
static double rel_l2(const float *got, const double *want, size_t n, double *scale)
{
    double num = 0, den = 0;
    *scale = 0;
    for (size_t i = 0; i < n; i++) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
        *scale = fmax(*scale, fabs(want[i]));
    }
    return sqrt(num / den);
}

static void check_rows(const model *m, const float *got, const double *want, size_t rows,
                       const char *what, int step, double tol)
{
    size_t vocab = (size_t)m->c.vocab;
    for (size_t r = 0; r < rows; r++) {
        double scale;
        double e = rel_l2(got + r * vocab, want + r * vocab, vocab, &scale);
        assert_true(scale > 0.1); /* a working model, not collapsed logits */
        if (!(e < tol))
            fail_msg("%s step %d row %zu: relative L2 %.3g from the reference", what, step, r,
                     e);
    }
}

static void against_reference(int cfg, uint32_t type)
{
    model m;
    make_model(cfg, type, &m);
    char what[96];
    snprintf(what, sizeof what, "%s / %s", m.c.name, type_label(type));
    /* f32 arithmetic on exact weights: 1e-4; block types meet activations rounded to 16 bits
     * per group of 32 (docs/quant.md section 5), which the random layers amplify: 1e-3
     * (measured on llama-256: 8e-5 Q8_0 and Q3_K .. 2.9e-4 Q4_K; Q2_K 1.7e-4, Q5_K 2.1e-4) */
    double tol = type != OWNED && tp_type_block_elems(type) > 1 ? 1e-3 : 1e-4;
    size_t vocab = (size_t)m.c.vocab;
    tp_session_options o = tp_session_options_default();
    o.tail_rows = 0;
    o.n_ctx = 32;
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&m.c, m.w, &o, &s), TP_OK);
    ref_model *ref = NULL;
    assert_int_equal(ref_model_create(&m.c, m.w, 32, &ref), 0);
    float *got = malloc(N_PROMPT * vocab * sizeof *got);
    double *want = malloc(N_PROMPT * vocab * sizeof *want);
    assert_non_null(got);
    assert_non_null(want);
    if (tp_session_forward(s, prompt, N_PROMPT, N_PROMPT, got) != TP_OK)
        fail_msg("%s: prefill: %s", what, tp_last_error());
    assert_int_equal(ref_model_forward(ref, prompt, N_PROMPT, want), 0);
    check_rows(&m, got, want, N_PROMPT, what, 0, tol);
    int32_t tok = tp_argmax(got + (N_PROMPT - 1) * vocab, vocab);
    for (int step = 1; step <= N_STEPS; step++) {
        if (tp_session_forward(s, &tok, 1, 1, got) != TP_OK)
            fail_msg("%s: decode: %s", what, tp_last_error());
        assert_int_equal(ref_model_forward(ref, &tok, 1, want), 0);
        check_rows(&m, got, want, 1, what, step, tol);
        tok = tp_argmax(got, vocab);
    }
    free(got);
    free(want);
    ref_model_destroy(ref);
    tp_session_destroy(s);
    free_model(&m);
}

static const uint32_t common_types[] = {OWNED, TP_TYPE_F32, TP_TYPE_F16, TP_TYPE_BF16,
                                        TP_TYPE_Q8_0};
#define N_COMMON (sizeof common_types / sizeof common_types[0])

static void test_families_match_reference(void **state)
{
    (void)state;
    for (int cfg = 0; cfg < CFG_Q4K; cfg++)
        for (size_t t = 0; t < N_COMMON; t++)
            against_reference(cfg, common_types[t]);
}

static void test_q4_k_and_wide_rows_match_reference(void **state)
{
    (void)state;
    against_reference(CFG_Q4K, TP_TYPE_Q4_K);
    against_reference(CFG_Q4K, TP_TYPE_Q8_0);
    against_reference(CFG_Q4K, TP_TYPE_F16);
    /* every other type of the twelve: Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, Q6_K, BF16 */
    against_reference(CFG_Q4K, TP_TYPE_Q4_0);
    against_reference(CFG_Q4K, TP_TYPE_Q4_1);
    against_reference(CFG_Q4K, TP_TYPE_Q5_0);
    against_reference(CFG_Q4K, TP_TYPE_Q5_1);
    against_reference(CFG_Q4K, TP_TYPE_Q2_K);
    against_reference(CFG_Q4K, TP_TYPE_Q3_K);
    against_reference(CFG_Q4K, TP_TYPE_Q5_K);
    against_reference(CFG_Q4K, TP_TYPE_Q6_K);
    against_reference(CFG_Q4K, TP_TYPE_BF16);
}

/* ---- strategies -------------------------------------------------------------------------- */

typedef struct run_out {
    float *logits; /* (1 + N_STEPS) x vocab: the prefill's last row, then each step */
} run_out;

static void run(const model *m, const tp_session_options *o, run_out *r)
{
    size_t vocab = (size_t)m->c.vocab;
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&m->c, m->w, o, &s), TP_OK);
    r->logits = malloc((1 + N_STEPS) * vocab * sizeof *r->logits);
    assert_non_null(r->logits);
    if (tp_session_forward(s, prompt, N_PROMPT, 1, r->logits) != TP_OK)
        fail_msg("prefill: %s", tp_last_error());
    for (int i = 0; i < N_STEPS; i++) {
        int32_t tok = tp_argmax(r->logits + (size_t)i * vocab, vocab);
        if (tp_session_forward(s, &tok, 1, 1, r->logits + (size_t)(i + 1) * vocab) != TP_OK)
            fail_msg("decode: %s", tp_last_error());
    }
    tp_session_destroy(s);
}

static void test_strategies_equal_naive_bit_for_bit(void **state)
{
    (void)state;
    const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA,
                                            TP_STRATEGY_NAIVE};
    const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                        TP_ALIAS_NONE};
    for (int cfg = 0; cfg < N_CONFIGS; cfg++)
        for (size_t t = 0; t < N_COMMON; t++) {
            /* rows of 256: the K types and more 32-blocks, quantized weights in every form */
            static const uint32_t wide[N_COMMON] = {OWNED, TP_TYPE_Q4_K, TP_TYPE_Q4_0,
                                                    TP_TYPE_Q5_1, TP_TYPE_Q6_K};
            uint32_t type = cfg == CFG_Q4K ? wide[t] : common_types[t];
            model m;
            make_model(cfg, type, &m);
            size_t n = (1 + N_STEPS) * (size_t)m.c.vocab;
            tp_session_options o = tp_session_options_default();
            o.n_ctx = 32;
            o.alloc.strategy = TP_STRATEGY_NAIVE;
            run_out base;
            run(&m, &o, &base);
            for (size_t si = 0; si < 3; si++)
                for (size_t pi = 0; pi < 3; pi++) {
                    o.alloc.strategy = strategies[si];
                    o.alloc.aliasing = policies[pi];
                    o.queued_layers = (int)pi; /* 0, 1 and 2 layers on the queued backend */
                    run_out r;
                    run(&m, &o, &r);
                    if (memcmp(r.logits, base.logits, n * sizeof(float)) != 0)
                        fail_msg("%s / %s: %s, %s differs from naive", m.c.name,
                                 type_label(type), tp_alloc_strategy_name(o.alloc.strategy),
                                 tp_alias_policy_name(o.alloc.aliasing));
                    free(r.logits);
                }
            free(base.logits);
            free_model(&m);
        }
}

/* Every block type of weights with each KV cache type (f32, f16, q8_0): every strategy and
 * aliasing policy, with 0, 1 and 2 queued layers, equal to naive bit for bit. */
static void test_block_types_and_kv_types_equal_naive(void **state)
{
    (void)state;
    static const uint32_t types[] = {TP_TYPE_Q8_0, TP_TYPE_Q4_0, TP_TYPE_Q4_1, TP_TYPE_Q5_0,
                                     TP_TYPE_Q5_1, TP_TYPE_Q2_K, TP_TYPE_Q3_K, TP_TYPE_Q4_K,
                                     TP_TYPE_Q5_K, TP_TYPE_Q6_K};
    static const tp_dtype kv[] = {TP_DTYPE_F32, TP_DTYPE_F16, TP_DTYPE_Q8_0};
    const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA};
    const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                        TP_ALIAS_NONE};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        model m;
        make_model(CFG_Q4K, types[t], &m);
        size_t n = (1 + N_STEPS) * (size_t)m.c.vocab;
        for (size_t k = 0; k < 3; k++) {
            tp_session_options o = tp_session_options_default();
            o.n_ctx = 32;
            o.kv_type = kv[k];
            o.alloc.strategy = TP_STRATEGY_NAIVE;
            o.alloc.aliasing = TP_ALIAS_NONE;
            run_out base;
            run(&m, &o, &base);
            for (size_t si = 0; si < 2; si++)
                for (size_t pi = 0; pi < 3; pi++) {
                    o.alloc.strategy = strategies[si];
                    o.alloc.aliasing = policies[pi];
                    o.queued_layers = (int)pi;
                    run_out r;
                    run(&m, &o, &r);
                    if (memcmp(r.logits, base.logits, n * sizeof(float)) != 0)
                        fail_msg("%s kv %s: %s, %s differs from naive", tp_type_name(types[t]),
                                 tp_dtype_name(kv[k]), tp_alloc_strategy_name(o.alloc.strategy),
                                 tp_alias_policy_name(o.alloc.aliasing));
                    free(r.logits);
                }
            free(base.logits);
        }
        free_model(&m);
    }
}

/* ---- NORM and the converter's permutation ---------------------------------------------- */

/* Row r of a tensor after the HF -> GGUF permutation of llama q/k (docs/engine.md, "RoPE"):
 * within each head of D rows, row s*D/2 + j moves to 2j + s. */
static size_t permuted_row(size_t r, size_t D)
{
    size_t head = r / D, i = r % D, s = i / (D / 2), j = i % (D / 2);
    return head * D + 2 * j + s;
}

/* A copy of w with the rows of every attn_q / attn_k weight and bias permuted. */
static tp_weights *permute_qk(const tp_weights *w, size_t D)
{
    tp_weights *out = NULL;
    assert_int_equal(tp_weights_create(&out), TP_OK);
    for (size_t i = 0; i < tp_weights_count(w); i++) {
        const tp_weight *t = tp_weights_at(w, i);
        float *dst = NULL;
        assert_int_equal(tp_weights_add(out, t->name, t->rows, t->cols, &dst), TP_OK);
        int qk = strstr(t->name, "attn_q.") || strstr(t->name, "attn_k.");
        int bias = strstr(t->name, ".bias") != NULL;
        if (!qk) {
            memcpy(dst, t->data, t->rows * t->cols * sizeof(float));
        } else if (bias) { /* one row of n: element e moves like row e */
            for (size_t e = 0; e < t->cols; e++)
                dst[permuted_row(e, D)] = t->data[e];
        } else {
            for (size_t r = 0; r < t->rows; r++)
                memcpy(dst + permuted_row(r, D) * t->cols, t->data + r * t->cols,
                       t->cols * sizeof(float));
        }
    }
    return out;
}

/* NORM rope on the permuted rows computes what NEOX rope computes on the original rows, for
 * every optional tensor, rope_freqs and YaRN; so GGUF llama files run as their source
 * models. q/k biases are added to the llama config to cover their permutation too. */
static void test_norm_on_permuted_rows_is_neox(void **state)
{
    (void)state;
    for (int cfg = 0; cfg < 2; cfg++) {
        tp_model_config norm = config_at(cfg), neox;
        norm.qkv_bias = 1;
        neox = norm;
        neox.rope_mode = TP_ROPE_NEOX;
        tp_weights *w = NULL;
        assert_int_equal(tp_weights_init_random(&norm, 3, &w), TP_OK);
        tp_weights *p = permute_qk(w, (size_t)norm.head_dim);
        model a = {.c = norm, .w = p}, b = {.c = neox, .w = w};
        tp_session_options o = tp_session_options_default();
        o.n_ctx = 32;
        run_out ra, rb;
        run(&a, &o, &ra);
        run(&b, &o, &rb);
        size_t vocab = (size_t)norm.vocab;
        for (int step = 0; step <= N_STEPS; step++) {
            double num = 0, den = 0;
            for (size_t i = 0; i < vocab; i++) {
                double d = ra.logits[step * vocab + i] - rb.logits[step * vocab + i];
                num += d * d;
                den += (double)rb.logits[step * vocab + i] * rb.logits[step * vocab + i];
            }
            if (!(sqrt(num / den) < 1e-5))
                fail_msg("%s step %d: NORM on permuted rows is %.3g from NEOX", norm.name, step,
                         sqrt(num / den));
        }
        free(ra.logits);
        free(rb.logits);
        tp_weights_destroy(p);
        tp_weights_destroy(w);
    }
}

/* ---- no f32 copy ------------------------------------------------------------------------ */

static void test_views_keep_their_own_size(void **state)
{
    (void)state;
    const uint32_t types[] = {TP_TYPE_F16, TP_TYPE_BF16, TP_TYPE_Q8_0};
    for (size_t t = 0; t < 3; t++) {
        model m;
        make_model(0, types[t], &m);
        assert_int_equal(tp_weights_bytes(m.w), m.want_bytes);
        assert_true(m.want_bytes < tp_weights_bytes(m.owned) * 3 / 5);
        /* the registry points at the caller's rows: nothing was copied */
        for (size_t i = 0; i < tp_weights_count(m.w); i++) {
            const tp_weight *w = tp_weights_at(m.w, i);
            assert_null(w->data);
            assert_ptr_equal(w->bytes, m.bufs[i]);
        }
        /* a forward reads them in place: the rows are unchanged after it */
        unsigned char *before = malloc(m.want_bytes), *p = before;
        assert_non_null(before);
        for (size_t i = 0; i < tp_weights_count(m.w); i++) {
            const tp_weight *w = tp_weights_at(m.w, i);
            memcpy(p, w->bytes, w->rows * w->row_bytes);
            p += w->rows * w->row_bytes;
        }
        tp_session_options o = tp_session_options_default();
        o.n_ctx = 32;
        run_out r;
        run(&m, &o, &r);
        p = before;
        for (size_t i = 0; i < tp_weights_count(m.w); i++) {
            const tp_weight *w = tp_weights_at(m.w, i);
            assert_memory_equal(p, w->bytes, w->rows * w->row_bytes);
            p += w->rows * w->row_bytes;
        }
        free(before);
        free(r.logits);
        free_model(&m);
    }
}

#if !defined(__SANITIZE_ADDRESS__)
/* Resident memory of this process in bytes (/proc/self/statm). */
static size_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    assert_non_null(f);
    unsigned long size = 0, rss = 0;
    assert_int_equal(fscanf(f, "%lu %lu", &size, &rss), 2);
    fclose(f);
    return (size_t)rss * (size_t)sysconf(_SC_PAGESIZE);
}
#endif

/* A run on Q8_0 views grows resident memory by far less than the f32 size of the tied
 * embedding (16 MB), which a dequantized copy of it would add. */
static void test_no_f32_copy_in_resident_memory(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* the sanitizer's shadow memory and quarantine make resident size meaningless */
#else
    model m;
    make_model(CFG_WIDE_VOCAB, TP_TYPE_Q8_0, &m);
    const tp_weight *embd = tp_weights_find(m.w, "token_embd.weight");
    assert_non_null(embd);
    const size_t f32_bytes = embd->rows * embd->cols * sizeof(float);
    tp_weights_destroy(m.owned); /* the f32 originals are gone before measuring */
    m.owned = NULL;
    tp_session_options o = tp_session_options_default();
    o.n_ctx = 32;
    size_t before = resident_bytes();
    run_out r;
    run(&m, &o, &r);
    size_t after = resident_bytes();
    size_t grew = after > before ? after - before : 0;
    if (grew >= f32_bytes / 2)
        fail_msg("resident memory grew by %zu bytes; the embedding as f32 is %zu", grew,
                 f32_bytes);
    free(r.logits);
    free_model(&m);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families_match_reference),
        cmocka_unit_test(test_q4_k_and_wide_rows_match_reference),
        cmocka_unit_test(test_strategies_equal_naive_bit_for_bit),
        cmocka_unit_test(test_block_types_and_kv_types_equal_naive),
        cmocka_unit_test(test_norm_on_permuted_rows_is_neox),
        cmocka_unit_test(test_views_keep_their_own_size),
        cmocka_unit_test(test_no_f32_copy_in_resident_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
