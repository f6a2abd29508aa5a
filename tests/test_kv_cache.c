/* KV caches stored as f16 and q8_0, and chunked prefill (docs/engine.md, "The KV cache types"
 * and "Chunked prefill").
 *
 * Oracles, all written here or in tests/support: the stored rows read back with the test's
 * own decoding (ref_dequantize_row) equal the value rounded as the type rounds it; attention
 * over the typed cache against a double-precision attention over the decoded rows; model
 * logits against the double-precision reference forward rounding its K and V as the type
 * does (tests/support/ref_forward.c, ref_model_set_kv_type) and against the f32 cache within
 * the stated bounds below; every strategy and aliasing policy equal to naive bit for bit for
 * each type; the KV bytes against the formula n_layer * n_ctx * n_kv_heads * head_dim * 2 *
 * bytes per element (q8_0: 34 bytes per 32); chunked prefill against one graph for the whole
 * prompt. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "support/ref_forward.h"
#include "support/xorshift.h"
#include "tensorplan/kernels.h"
#include "tensorplan/kv_kernels.h"
#include "tensorplan/quant.h"
#include "tensorplan/session.h"

/* The ggml type id of a KV dtype, as ref_forward.h names them. */
static uint32_t type_id(tp_dtype t)
{
    return t == TP_DTYPE_F16 ? 1u : t == TP_DTYPE_Q8_0 ? 8u : 0u;
}

/* Bytes per element of a KV cache of the type, restated: 4, 2, and 34 per block of 32. */
static double bytes_per_element(tp_dtype t)
{
    return t == TP_DTYPE_F32 ? 4.0 : t == TP_DTYPE_F16 ? 2.0 : 34.0 / 32.0;
}

static const tp_dtype kv_types[3] = {TP_DTYPE_F32, TP_DTYPE_F16, TP_DTYPE_Q8_0};

static float frand(tpt_rng *st)
{
    return (float)((double)(tpt_rng_next(st) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* ---- kernels ----------------------------------------------------------------------------- */

/* The largest error rounding to the type may make on value x of a block whose largest
 * magnitude is amax: half an f16 spacing (2^-11 relative, 2^-25 absolute for subnormals), or
 * half a q8_0 step d = amax / 127 plus the f16 rounding of d itself, 127 * d * 2^-11. */
static double max_round_error(tp_dtype t, double x, double amax)
{
    if (t == TP_DTYPE_F32) /* stored as it is */
        return 0.0;
    if (t == TP_DTYPE_F16)
        return fmax(fabs(x) * ldexp(1.0, -11), ldexp(1.0, -25));
    double d = amax / 127.0;
    return d / 2 + 127.0 * d * ldexp(1.0, -11) + 1e-12;
}

static void check_stored_rows(tp_dtype t, const float *x, const unsigned char *stored,
                              size_t width, size_t rows)
{
    size_t row = t == TP_DTYPE_F32 ? 4 * width : t == TP_DTYPE_F16 ? 2 * width : width / 32 * 34;
    double *back = malloc(width * sizeof *back);
    assert_non_null(back);
    for (size_t r = 0; r < rows; r++) {
        assert_int_equal(ref_dequantize_row(type_id(t), stored + r * row, back, width), 0);
        for (size_t i = 0; i < width; i++) {
            double amax = 0;
            for (size_t j = i / 32 * 32; j < i / 32 * 32 + 32 && j < width; j++)
                amax = fmax(amax, fabs(x[r * width + j]));
            double e = fabs(back[i] - x[r * width + i]);
            if (e > max_round_error(t, x[r * width + i], amax))
                fail_msg("%s row %zu element %zu: %.9g stored as %.9g", tp_dtype_name(t), r, i,
                         (double)x[r * width + i], back[i]);
        }
    }
    free(back);
}

/* Double-precision attention of one query token at position p over decoded rows. */
static void attend_double(const float *qt, const double *K, const double *V, size_t p,
                          size_t nh, size_t nkv, size_t hd, double *out)
{
    const size_t group = nh / nkv, w = nkv * hd;
    double *sc = malloc((p + 1) * sizeof *sc);
    assert_non_null(sc);
    for (size_t h = 0; h < nh; h++) {
        size_t kvh = h / group;
        double m = -INFINITY, sum = 0;
        for (size_t j = 0; j <= p; j++) {
            double d = 0;
            for (size_t i = 0; i < hd; i++)
                d += (double)qt[h * hd + i] * K[j * w + kvh * hd + i];
            sc[j] = d / sqrt((double)hd);
            m = fmax(m, sc[j]);
        }
        for (size_t j = 0; j <= p; j++)
            sum += (sc[j] = exp(sc[j] - m));
        for (size_t i = 0; i < hd; i++) {
            double acc = 0;
            for (size_t j = 0; j <= p; j++)
                acc += sc[j] / sum * V[j * w + kvh * hd + i];
            out[h * hd + i] = acc;
        }
    }
    free(sc);
}

/* Attention of every token in instruction-set form isa (threads 1, 2, 3: the same bits),
 * each element within 2e-6 relative of the double attention over the decoded rows; the
 * last token alone gives the bits it has among the others. Returns the outputs. */
static float *attend_form(int isa, tp_dtype t, const float *q, const unsigned char *K,
                          const unsigned char *V, const float *pos, const double *Kd,
                          const double *Vd, size_t nh, size_t nkv, size_t hd, size_t n_tok,
                          size_t n_ctx)
{
    const size_t n = n_tok * nh * hd;
    float *out[3], *one = malloc(nh * hd * sizeof *one);
    double *want = malloc(nh * hd * sizeof *want);
    assert_true(one && want);
    assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
    const int threads[3] = {1, 2, 3};
    for (int c = 0; c < 3; c++) {
        out[c] = malloc(n * sizeof *out[c]);
        assert_non_null(out[c]);
        assert_int_equal(tp_kernel_attn_typed(t, q, K, V, pos, nh, nkv, hd, n_tok, n_ctx, out[c],
                                              threads[c]),
                         TP_OK);
        /* the split over threads never changes a bit */
        assert_memory_equal(out[c], out[0], n * sizeof(float));
    }
    for (size_t tk = 0; tk < n_tok; tk++) {
        attend_double(q + tk * nh * hd, Kd, Vd, tk, nh, nkv, hd, want);
        for (size_t i = 0; i < nh * hd; i++)
            if (fabs(out[0][tk * nh * hd + i] - want[i]) > 2e-6 * (1 + fabs(want[i])))
                fail_msg("%s %s attn token %zu element %zu: %.9g, double %.9g",
                         tp_kernels_isa_name(isa), tp_dtype_name(t), tk, i,
                         (double)out[0][tk * nh * hd + i], want[i]);
    }
    assert_int_equal(tp_kernel_attn_typed(t, q + (n_tok - 1) * nh * hd, K, V, pos + n_tok - 1, nh,
                                          nkv, hd, 1, n_ctx, one, 1),
                     TP_OK);
    assert_memory_equal(one, out[0] + (n_tok - 1) * nh * hd, nh * hd * sizeof(float));
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
    free(out[1]), free(out[2]), free(one), free(want);
    return out[0];
}

static void kernels_case(tp_dtype t, size_t nh, size_t nkv, size_t hd, size_t n_tok)
{
    const size_t w = nkv * hd, n_ctx = n_tok + 3;
    const size_t row = t == TP_DTYPE_F32 ? 4 * w : t == TP_DTYPE_F16 ? 2 * w : w / 32 * 34;
    tpt_rng st = tpt_rng_seeded(0x1234567u + nh * 131 + hd);
    float *k = malloc(n_tok * w * sizeof *k), *v = malloc(n_tok * w * sizeof *v);
    float *q = malloc(n_tok * nh * hd * sizeof *q), *pos = malloc(n_tok * sizeof *pos);
    unsigned char *K = calloc(n_ctx, row), *V = calloc(n_ctx, row);
    double *Kd = calloc(n_ctx * w, sizeof *Kd), *Vd = calloc(n_ctx * w, sizeof *Vd);
    assert_true(k && v && q && pos && K && V && Kd && Vd);
    for (size_t i = 0; i < n_tok * w; i++) {
        k[i] = 2.0f * frand(&st);
        v[i] = frand(&st) * (i % 7 == 0 ? 8.0f : 1.0f); /* blocks of uneven magnitudes */
    }
    for (size_t i = 0; i < n_tok * nh * hd; i++)
        q[i] = frand(&st);
    for (size_t i = 0; i < n_tok; i++) {
        uint32_t p = (uint32_t)i; /* positions 0 .. n_tok - 1, given as u32 bit patterns */
        memcpy(&pos[i], &p, sizeof p);
    }
    assert_int_equal(tp_kernel_kv_store_typed(t, k, v, pos, w, n_tok, K, V, n_ctx), TP_OK);
    check_stored_rows(t, k, K, w, n_tok);
    check_stored_rows(t, v, V, w, n_tok);
    for (size_t r = 0; r < n_tok; r++) {
        assert_int_equal(ref_dequantize_row(type_id(t), K + r * row, Kd + r * w, w), 0);
        assert_int_equal(ref_dequantize_row(type_id(t), V + r * row, Vd + r * w, w), 0);
    }
    /* every vector form within the f32 rounding of the portable one (the orders of the
     * sums differ) and, like it, of the double attention */
    float *port = attend_form(TP_ISA_PORTABLE, t, q, K, V, pos, Kd, Vd, nh, nkv, hd, n_tok, n_ctx);
    for (int isa = 1; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        float *vec = attend_form(isa, t, q, K, V, pos, Kd, Vd, nh, nkv, hd, n_tok, n_ctx);
        for (size_t i = 0; i < n_tok * nh * hd; i++)
            if (fabsf(vec[i] - port[i]) > 1e-6f * (1.0f + fabsf(port[i])))
                fail_msg("%s %s attn element %zu: %.9g, portable %.9g", tp_kernels_isa_name(isa),
                         tp_dtype_name(t), i, (double)vec[i], (double)port[i]);
        free(vec);
    }
    free(port);
    free(k), free(v), free(q), free(pos), free(K), free(V), free(Kd), free(Vd);
}

static void test_typed_store_and_attention_against_double(void **state)
{
    (void)state;
    for (int ti = 0; ti < 3; ti++) {
        kernels_case(kv_types[ti], 4, 2, 32, 9);
        kernels_case(kv_types[ti], 6, 3, 64, 5);
        kernels_case(kv_types[ti], 3, 1, 32, 1);
        kernels_case(kv_types[ti], 14, 2, 64, 4); /* the 0.5B model's grouping */
    }
    kernels_case(TP_DTYPE_F16, 2, 2, 8, 6); /* f16 and f32 take any head width */
    kernels_case(TP_DTYPE_F16, 3, 1, 29, 7);
    kernels_case(TP_DTYPE_F32, 2, 1, 45, 5);
}

static void test_typed_store_refusals(void **state)
{
    (void)state;
    float k[64], v[64], pos[2];
    unsigned char K[4 * 68], V[4 * 68];
    for (int i = 0; i < 64; i++)
        k[i] = v[i] = (float)i / 64.0f;
    uint32_t p0 = 0, p9 = 9;
    memcpy(&pos[0], &p0, 4);
    memcpy(&pos[1], &p9, 4);
    memset(K, 0xAB, sizeof K);
    /* a position outside the context: nothing written */
    assert_int_equal(tp_kernel_kv_store_typed(TP_DTYPE_Q8_0, k, v, pos, 32, 2, K, V, 4),
                     TP_ERR_INVALID);
    for (size_t i = 0; i < sizeof K; i++)
        assert_int_equal(K[i], 0xAB);
    /* a NaN cannot be a q8_0 value: refused before the first row is written */
    memcpy(&pos[1], &p0, 4);
    k[40] = NAN;
    assert_int_equal(tp_kernel_kv_store_typed(TP_DTYPE_Q8_0, k, v, pos, 32, 2, K, V, 4),
                     TP_ERR_INVALID);
    for (size_t i = 0; i < sizeof K; i++)
        assert_int_equal(K[i], 0xAB);
    /* rows that are not whole blocks of 32 */
    assert_int_equal(tp_kernel_kv_store_typed(TP_DTYPE_Q8_0, v, v, pos, 16, 1, K, V, 4),
                     TP_ERR_INVALID);
    float q[64], out[64];
    memset(q, 0, sizeof q);
    assert_int_equal(tp_kernel_attn_typed(TP_DTYPE_Q8_0, q, K, V, pos, 4, 2, 16, 1, 4, out, 1),
                     TP_ERR_INVALID);
    assert_int_equal(tp_kernel_attn_typed(TP_DTYPE_I32, q, K, V, pos, 2, 1, 32, 1, 4, out, 1),
                     TP_ERR_INVALID);
}

/* ---- models ------------------------------------------------------------------------------ */

static tp_model_config config(tp_arch arch)
{
    tp_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", arch == TP_ARCH_LLAMA ? "llama-kv" : "qwen2-kv");
    c.n_embd = 64;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.head_dim = 32;
    c.n_ff = 96;
    c.n_layer = 2;
    c.vocab = 47;
    c.max_ctx = 64;
    c.rms_eps = 1e-5f;
    c.arch = arch;
    c.rope_mode = arch == TP_ARCH_LLAMA ? TP_ROPE_NORM : TP_ROPE_NEOX;
    c.rope_base = 10000.0f;
    c.rope_freq_scale = 1.0f;
    c.rope_attn_factor = 1.0f;
    c.qkv_bias = arch == TP_ARCH_QWEN2;
    c.tied_embeddings = arch == TP_ARCH_QWEN2;
    return c;
}

#define N_PROMPT 13
#define N_STEPS 4
#define N_ROWS (N_PROMPT + N_STEPS)

static const int32_t prompt[N_PROMPT] = {5, 1, 19, 0, 7, 3, 44, 12, 12, 30, 2, 9, 41};

/* Every prefill row, then N_STEPS greedy decode steps: N_ROWS logits rows. */
static float *run_session(const tp_model_config *c, const tp_weights *w,
                          const tp_session_options *o, tp_session_stats *stats)
{
    const size_t vocab = (size_t)c->vocab;
    float *rows = malloc(N_ROWS * vocab * sizeof *rows);
    assert_non_null(rows);
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(c, w, o, &s), TP_OK);
    if (tp_session_forward(s, prompt, N_PROMPT, N_PROMPT, rows) != TP_OK)
        fail_msg("prefill: %s", tp_last_error());
    for (int i = 0; i < N_STEPS; i++) {
        int32_t tok = tp_argmax(rows + (size_t)(N_PROMPT - 1 + i) * vocab, vocab);
        if (tp_session_forward(s, &tok, 1, 1, rows + (size_t)(N_PROMPT + i) * vocab) != TP_OK)
            fail_msg("decode: %s", tp_last_error());
    }
    if (stats)
        *stats = tp_session_get_stats(s);
    tp_session_destroy(s);
    return rows;
}

/* The largest relative L2 distance of a row of a from the same row of b. */
static double max_rel_l2(const float *a, const double *b, size_t rows, size_t vocab)
{
    double worst = 0;
    for (size_t r = 0; r < rows; r++) {
        double num = 0, den = 0;
        for (size_t i = 0; i < vocab; i++) {
            double d = a[r * vocab + i] - b[r * vocab + i];
            num += d * d;
            den += b[r * vocab + i] * b[r * vocab + i];
        }
        worst = fmax(worst, sqrt(num / den));
    }
    return worst;
}

/* The reference forward with its cache rounded as type, fed the engine's greedy tokens. */
static double *run_reference(const tp_model_config *c, const tp_weights *w, tp_dtype type,
                             const float *engine_rows)
{
    const size_t vocab = (size_t)c->vocab;
    double *rows = malloc(N_ROWS * vocab * sizeof *rows);
    assert_non_null(rows);
    ref_model *ref = NULL;
    assert_int_equal(ref_model_create(c, w, 32, &ref), 0);
    assert_int_equal(ref_model_set_kv_type(ref, type_id(type)), 0);
    assert_int_equal(ref_model_forward(ref, prompt, N_PROMPT, rows), 0);
    for (int i = 0; i < N_STEPS; i++) {
        int32_t tok = tp_argmax(engine_rows + (size_t)(N_PROMPT - 1 + i) * vocab, vocab);
        assert_int_equal(ref_model_forward(ref, &tok, 1, rows + (size_t)(N_PROMPT + i) * vocab),
                         0);
    }
    ref_model_destroy(ref);
    return rows;
}

/* Stated bounds (relative L2 per logits row), with the figures measured on these configs.
 * f32 cache against the exact reference: the engine's f32 arithmetic, 1e-5 (measured 5e-7).
 * f16 and q8_0 against the reference that rounds its cache as the type does: 5e-4 (measured
 * 2e-5..1.2e-4 for f16, 4e-7 for q8_0). What remains are rounding flips: a value whose f32
 * and double forms lie on either side of a rounding boundary of the type (1 of 1664 values of
 * the llama config's first layer), which the random weights amplify through the layers.
 * Against the f32 cache, the type's own rounding: f16 (11 significant bits) 2e-3 (measured
 * 5e-4..8e-4), q8_0 (steps of max|x|/127 per block of 32) 4e-2 (measured 1.2e-2..1.5e-2). */
#define TOL_REF_F32 1e-5
#define TOL_REF_TYPED 5e-4
#define TOL_F16_VS_F32 2e-3
#define TOL_Q8_0_VS_F32 4e-2

static void test_kv_types_against_reference_and_f32(void **state)
{
    (void)state;
    const tp_arch arches[2] = {TP_ARCH_QWEN2, TP_ARCH_LLAMA};
    for (int a = 0; a < 2; a++) {
        tp_model_config c = config(arches[a]);
        tp_weights *w = NULL;
        assert_int_equal(tp_weights_init_random(&c, 11 + (uint64_t)a, &w), TP_OK);
        const size_t vocab = (size_t)c.vocab;
        tp_session_options o = tp_session_options_default();
        o.n_ctx = 32;
        o.tail_rows = 0;
        float *f32 = NULL;
        for (int ti = 0; ti < 3; ti++) {
            o.kv_type = kv_types[ti];
            float *got = run_session(&c, w, &o, NULL);
            double *want = run_reference(&c, w, kv_types[ti], got);
            double e = max_rel_l2(got, want, N_ROWS, vocab);
            print_message("%s kv %s: relative L2 %.3g from the reference rounding as it does\n",
                          c.name, tp_dtype_name(kv_types[ti]), e);
            if (!(e < (ti ? TOL_REF_TYPED : TOL_REF_F32)))
                fail_msg("%s kv %s: relative L2 %.3g from the reference", c.name,
                         tp_dtype_name(kv_types[ti]), e);
            if (ti == 0) {
                f32 = got;
            } else {
                double *f32d = malloc(N_ROWS * vocab * sizeof *f32d);
                assert_non_null(f32d);
                for (size_t i = 0; i < N_ROWS * vocab; i++)
                    f32d[i] = f32[i];
                /* the same greedy tokens, so the rows compare (checked, not assumed) */
                for (int st = 0; st < N_STEPS; st++)
                    assert_int_equal(tp_argmax(got + (N_PROMPT - 1 + st) * vocab, vocab),
                                     tp_argmax(f32 + (N_PROMPT - 1 + st) * vocab, vocab));
                double ef = max_rel_l2(got, f32d, N_ROWS, vocab);
                double tol = kv_types[ti] == TP_DTYPE_F16 ? TOL_F16_VS_F32 : TOL_Q8_0_VS_F32;
                print_message("%s kv %s: relative L2 %.3g from the f32 cache\n", c.name,
                              tp_dtype_name(kv_types[ti]), ef);
                if (!(ef < tol) || !(ef > 0))
                    fail_msg("%s kv %s: relative L2 %.3g from the f32 cache (bound %g, and the "
                             "rounding must show)", c.name, tp_dtype_name(kv_types[ti]), ef, tol);
                free(f32d);
                free(got);
            }
            free(want);
        }
        free(f32);
        tp_weights_destroy(w);
    }
}

static void test_strategies_equal_naive_for_each_kv_type(void **state)
{
    (void)state;
    const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA,
                                            TP_STRATEGY_NAIVE};
    const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                        TP_ALIAS_NONE};
    tp_model_config c = config(TP_ARCH_QWEN2);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 5, &w), TP_OK);
    const size_t n = N_ROWS * (size_t)c.vocab * sizeof(float);
    for (int ti = 0; ti < 3; ti++) {
        tp_session_options o = tp_session_options_default();
        o.n_ctx = 32;
        o.tail_rows = 0;
        o.kv_type = kv_types[ti];
        o.alloc.strategy = TP_STRATEGY_NAIVE;
        o.alloc.aliasing = TP_ALIAS_NONE;
        float *base = run_session(&c, w, &o, NULL);
        for (size_t si = 0; si < 3; si++)
            for (size_t pi = 0; pi < 3; pi++) {
                o.alloc.strategy = strategies[si];
                o.alloc.aliasing = policies[pi];
                o.queued_layers = (int)pi; /* 0, 1 and 2 layers on the queued backend */
                o.ubatch = si == 1 ? 4 : TP_DEFAULT_UBATCH; /* chunks planned by the arena */
                float *r = run_session(&c, w, &o, NULL);
                if (si == 1) {
                    /* chunked: the attention of a token is its own; the rest within rounding */
                    for (size_t i = 0; i < n / sizeof(float); i++)
                        if (fabsf(r[i] - base[i]) > 1e-5f * (1.0f + fabsf(base[i])))
                            fail_msg("kv %s arena, chunks of 4: logit %zu %.9g, naive %.9g",
                                     tp_dtype_name(kv_types[ti]), i, (double)r[i],
                                     (double)base[i]);
                } else if (memcmp(r, base, n) != 0) {
                    fail_msg("kv %s: %s, %s differs from naive", tp_dtype_name(kv_types[ti]),
                             tp_alloc_strategy_name(o.alloc.strategy),
                             tp_alias_policy_name(o.alloc.aliasing));
                }
                free(r);
            }
        o.ubatch = 4;
        o.queued_layers = 0;
        o.alloc.strategy = TP_STRATEGY_NAIVE;
        float *chunked_naive = run_session(&c, w, &o, NULL);
        for (size_t pi = 0; pi < 3; pi++) {
            o.alloc.strategy = TP_STRATEGY_ARENA;
            o.alloc.aliasing = policies[pi];
            float *r = run_session(&c, w, &o, NULL);
            /* the same chunks under every strategy: bit for bit */
            assert_memory_equal(r, chunked_naive, n);
            free(r);
        }
        free(chunked_naive);
        free(base);
    }
    tp_weights_destroy(w);
}

/* ---- the memory of the cache ------------------------------------------------------------- */

static void test_kv_bytes_follow_the_formula(void **state)
{
    (void)state;
    tp_model_config c = config(TP_ARCH_LLAMA);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 3, &w), TP_OK);
    const size_t ctxs[2] = {32, 61};
    for (int ti = 0; ti < 3; ti++)
        for (int ci = 0; ci < 2; ci++) {
            tp_session_options o = tp_session_options_default();
            o.n_ctx = ctxs[ci];
            o.kv_type = kv_types[ti];
            tp_session *s = NULL;
            assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
            assert_int_equal(tp_session_forward(s, prompt, 3, 1, NULL), TP_OK);
            double want = (double)c.n_layer * (double)ctxs[ci] * c.n_head_kv * c.head_dim * 2 *
                          bytes_per_element(kv_types[ti]);
            tp_plan_stats ps = tp_alloc_stats(tp_session_allocator(s));
            assert_int_equal(ps.persistent_bytes, (size_t)want);
            size_t sum = 0;
            tp_allocator *alloc = tp_session_allocator(s);
            for (size_t i = 0; i < tp_alloc_persistent_count(alloc); i++) {
                const tp_persistent_region *r = tp_alloc_persistent_at(alloc, i);
                assert_int_equal(r->dtype, kv_types[ti]);
                /* the pool buffer holds the bytes, rounded up to whole floats */
                assert_true(r->elems * 4 >= r->bytes && r->elems * 4 < r->bytes + 4);
                sum += r->bytes;
            }
            assert_int_equal(sum, (size_t)want);
            tp_session_destroy(s);
        }
    tp_weights_destroy(w);
}

/* One allocator, one cache type: a graph of another KV type is refused by name. */
static void test_other_kv_type_on_the_same_cache_is_refused(void **state)
{
    (void)state;
    tp_model_config c = config(TP_ARCH_QWEN2);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 3, &w), TP_OK);
    tp_session_options o = tp_session_options_default();
    o.n_ctx = 16;
    o.kv_type = TP_DTYPE_F16;
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
    assert_int_equal(tp_session_forward(s, prompt, 2, 1, NULL), TP_OK);
    o.kv_type = TP_DTYPE_Q8_0;
    assert_int_equal(tp_session_set_options(s, &o), TP_OK);
    assert_int_equal(tp_session_forward(s, prompt, 1, 1, NULL), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "stored as f16"));
    tp_session_destroy(s);
    /* q8_0 needs heads of whole blocks */
    c.head_dim = 16;
    c.n_embd = 32;
    tp_weights_destroy(w);
    assert_int_equal(tp_weights_init_random(&c, 3, &w), TP_OK);
    assert_int_equal(tp_model_check_kv_type(&c, TP_DTYPE_Q8_0), TP_ERR_INVALID);
    assert_int_equal(tp_model_check_kv_type(&c, TP_DTYPE_F16), TP_OK);
    assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
    assert_int_equal(tp_session_forward(s, prompt, 2, 1, NULL), TP_ERR_INVALID);
    tp_session_destroy(s);
    tp_weights_destroy(w);
}

/* tp_session_dump writes a typed cache as f32: each row the test's own decoding of the
 * region's bytes, rows never written zero. */
static void test_dump_reads_the_typed_cache_back(void **state)
{
    (void)state;
    tp_model_config c = config(TP_ARCH_LLAMA);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 9, &w), TP_OK);
    const size_t width = (size_t)c.n_head_kv * (size_t)c.head_dim, n_ctx = 12;
    for (int ti = 1; ti < 3; ti++) {
        tp_session_options o = tp_session_options_default();
        o.n_ctx = n_ctx;
        o.kv_type = kv_types[ti];
        tp_session *s = NULL;
        assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
        assert_int_equal(tp_session_forward(s, prompt, 5, 1, NULL), TP_OK);
        char dir[] = "/tmp/tp_kv_dump_XXXXXX";
        assert_non_null(mkdtemp(dir));
        assert_int_equal(tp_session_dump(s, dir), TP_OK);
        const size_t row = kv_types[ti] == TP_DTYPE_F16 ? 2 * width : width / 32 * 34;
        tp_allocator *alloc = tp_session_allocator(s);
        for (int L = 0; L < c.n_layer; L++)
            for (int which = 0; which < 2; which++) {
                tp_bufref k, v;
                assert_true(tp_alloc_kv_pair(alloc, L, &k, &v));
                unsigned char *raw = malloc(k.len * sizeof(float));
                assert_non_null(raw);
                assert_int_equal(tp_alloc_read(alloc, which ? &v : &k, raw), TP_OK);
                char path[256];
                snprintf(path, sizeof path, "%s/kv.%d.%c.f32", dir, L, which ? 'v' : 'k');
                FILE *f = fopen(path, "rb");
                assert_non_null(f);
                float *got = malloc(n_ctx * width * sizeof *got);
                double *want = malloc(width * sizeof *want);
                assert_true(got && want);
                for (size_t i = 0; i < n_ctx * width; i++) {
                    unsigned char b[4];
                    assert_int_equal(fread(b, 1, 4, f), 4);
                    /* little-endian f32 whatever the host */
                    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                 (uint32_t)b[3] << 24;
                    memcpy(&got[i], &u, sizeof u);
                }
                assert_int_equal(fgetc(f), EOF);
                fclose(f);
                unlink(path);
                for (size_t r = 0; r < n_ctx; r++) {
                    assert_int_equal(ref_dequantize_row(type_id(kv_types[ti]), raw + r * row,
                                                        want, width),
                                     0);
                    for (size_t i = 0; i < width; i++) {
                        assert_true(got[r * width + i] == (float)want[i]);
                        if (r >= 5)
                            assert_true(want[i] == 0.0);
                    }
                }
                free(raw);
                free(got);
                free(want);
            }
        char path[256];
        snprintf(path, sizeof path, "%s/logits.f32", dir);
        unlink(path);
        assert_int_equal(rmdir(dir), 0);
        tp_session_destroy(s);
    }
    tp_weights_destroy(w);
}

/* The trace shows a typed KV node without f32 statistics, and every f32 node with them. */
static void test_trace_of_a_typed_cache(void **state)
{
    (void)state;
    tp_model_config c = config(TP_ARCH_QWEN2);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 9, &w), TP_OK);
    char path[] = "/tmp/tp_kv_trace_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    tp_trace *trace = NULL;
    assert_int_equal(tp_trace_open(path, &trace), TP_OK);
    tp_session_options o = tp_session_options_default();
    o.n_ctx = 8;
    o.kv_type = TP_DTYPE_Q8_0;
    o.exec.trace = trace;
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
    assert_int_equal(tp_session_forward(s, prompt, 3, 1, NULL), TP_OK);
    tp_session_destroy(s);
    assert_int_equal(tp_trace_close(trace), TP_OK);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    unlink(path);
    text[len] = '\0';
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    const cJSON *nodes =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0), "nodes");
    size_t kv = 0, computed = 0;
    const cJSON *nd = NULL;
    cJSON_ArrayForEach(nd, nodes)
    {
        const char *dtype = cJSON_GetStringValue(cJSON_GetObjectItem(nd, "dtype"));
        const char *op = cJSON_GetStringValue(cJSON_GetObjectItem(nd, "op"));
        if (strcmp(op, "kv_store") == 0) {
            assert_string_equal(dtype, "q8_0");
            assert_null(cJSON_GetObjectItem(nd, "stats"));
            assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(nd, "sample")), 0);
            kv++;
        } else if (strcmp(op, "attn") == 0) {
            const cJSON *st = cJSON_GetObjectItem(nd, "stats");
            assert_non_null(st);
            assert_int_equal((int)cJSON_GetObjectItem(st, "nan")->valuedouble, 0);
            computed++;
        }
    }
    assert_int_equal(kv, (size_t)c.n_layer);
    assert_int_equal(computed, (size_t)c.n_layer);
    cJSON_Delete(root);
    tp_weights_destroy(w);
}

/* The graph carries the cache type on its KV nodes, and validation holds the type to them. */
static void test_graph_kv_nodes_carry_the_type(void **state)
{
    (void)state;
    tp_model_config c = config(TP_ARCH_QWEN2);
    for (int ti = 0; ti < 3; ti++) {
        tp_graph_params gp;
        memset(&gp, 0, sizeof gp);
        gp.n_tokens = 3;
        gp.n_out = 1;
        gp.n_ctx = 16;
        gp.kv_type = kv_types[ti];
        tp_graph *g = NULL;
        assert_int_equal(tp_model_build_graph(&c, &gp, &g), TP_OK);
        size_t kv_nodes = 0, first = SIZE_MAX;
        for (size_t i = 0; i < g->n_nodes; i++) {
            const tp_node *nd = &g->nodes[i];
            if (nd->op == TP_OP_KV_STORE || nd->op == TP_OP_KV_LOAD) {
                assert_int_equal(nd->dtype, kv_types[ti]);
                kv_nodes++;
                if (first == SIZE_MAX && nd->op == TP_OP_KV_LOAD)
                    first = i;
            } else if (nd->op != TP_OP_INPUT) {
                assert_int_equal(nd->dtype, TP_DTYPE_F32); /* activations stay f32 */
            }
        }
        assert_int_equal(kv_nodes, 2 * (size_t)c.n_layer);
        assert_int_equal(tp_graph_validate(g), TP_OK);
        /* one layer's store and load in two types: refused */
        tp_node *load = &g->nodes[first];
        load->dtype = kv_types[(ti + 1) % 3];
        assert_int_equal(tp_graph_validate(g), TP_ERR_INVALID);
        assert_non_null(strstr(tp_last_error(), "dtype"));
        /* an i32 cache, and q8_0 on heads of 16: refused */
        load->dtype = TP_DTYPE_I32;
        assert_int_equal(tp_graph_validate(g), TP_ERR_INVALID);
        tp_graph_destroy(g);
    }
    tp_graph_params gp;
    memset(&gp, 0, sizeof gp);
    gp.n_tokens = 1;
    gp.n_out = 1;
    gp.n_ctx = 8;
    gp.kv_type = TP_DTYPE_Q8_0;
    tp_graph *g = NULL;
    assert_int_equal(tp_model_build_graph(&c, &gp, &g), TP_OK);
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == TP_OP_KV_STORE || g->nodes[i].op == TP_OP_KV_LOAD)
            g->nodes[i].p.head_dim = 16; /* a consistent geometry of heads of 16 */
    assert_int_equal(tp_graph_validate(g), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "multiple of 32"));
    tp_graph_destroy(g);
    gp.kv_type = TP_DTYPE_I32;
    assert_int_equal(tp_model_build_graph(&c, &gp, &g), TP_ERR_INVALID);
}

/* ---- chunked prefill --------------------------------------------------------------------- */

static void test_chunked_prefill_equals_one_graph(void **state)
{
    (void)state;
    const size_t ubatches[] = {1, 2, 3, 4, 5, 6, 12};
    for (int a = 0; a < 2; a++) {
        tp_model_config c = config(a ? TP_ARCH_LLAMA : TP_ARCH_QWEN2);
        tp_weights *w = NULL;
        assert_int_equal(tp_weights_init_random(&c, 21 + (uint64_t)a, &w), TP_OK);
        const size_t n = N_ROWS * (size_t)c.vocab;
        for (int ti = 0; ti < 3; ti++) {
            tp_session_options o = tp_session_options_default();
            o.n_ctx = 32;
            o.tail_rows = 0;
            o.kv_type = kv_types[ti];
            o.ubatch = 0; /* one graph for the whole prompt */
            float *whole = run_session(&c, w, &o, NULL);
            for (size_t u = 0; u < sizeof ubatches / sizeof *ubatches; u++) {
                o.ubatch = ubatches[u];
                tp_session_stats st;
                float *r = run_session(&c, w, &o, &st);
                /* within the f32 rounding of sums taken in another order: 1e-5 relative */
                for (size_t i = 0; i < n; i++)
                    if (fabsf(r[i] - whole[i]) > 1e-5f * (1.0f + fabsf(whole[i])))
                        fail_msg("%s kv %s ubatch %zu: logit %zu is %.9g, one graph %.9g",
                                 c.name, tp_dtype_name(kv_types[ti]), ubatches[u], i,
                                 (double)r[i], (double)whole[i]);
                /* one graph per chunk size (13 = k chunks + a rest), plus the decode graph */
                size_t sizes = 1 + (N_PROMPT % ubatches[u] != 0 && N_PROMPT > ubatches[u]);
                size_t decode = ubatches[u] == 1 || N_PROMPT % ubatches[u] == 1 ? 0 : 1;
                assert_int_equal(st.builds, sizes + decode);
                assert_int_equal(st.forwards, (N_PROMPT + ubatches[u] - 1) / ubatches[u] +
                                                  N_STEPS);
                assert_int_equal(st.prefill_plan_tokens,
                                 ubatches[u] < N_PROMPT ? ubatches[u] : N_PROMPT);
                free(r);
            }
            free(whole);
        }
        tp_weights_destroy(w);
    }
}

/* Tail rows (the default): only the last chunk computes wanted logits; every chunk size
 * gives the last row of one whole-prompt graph. */
static void test_chunked_prefill_tail_row(void **state)
{
    (void)state;
    tp_model_config c = config(TP_ARCH_QWEN2);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 8, &w), TP_OK);
    const size_t vocab = (size_t)c.vocab;
    float *whole = malloc(vocab * sizeof *whole), *got = malloc(3 * vocab * sizeof *got);
    assert_true(whole && got);
    tp_session_options o = tp_session_options_default();
    o.n_ctx = 32;
    o.ubatch = 0;
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
    assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, 1, whole), TP_OK);
    tp_session_destroy(s);
    const size_t ubatches[] = {2, 5, 7};
    for (size_t u = 0; u < 3; u++) {
        o.ubatch = ubatches[u];
        assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
        /* the last 3 rows wanted: with chunks of 2 they span two chunks */
        assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, 3, got), TP_OK);
        assert_int_equal(tp_session_n_past(s), N_PROMPT);
        for (size_t i = 0; i < vocab; i++)
            assert_true(fabsf(got[2 * vocab + i] - whole[i]) <= 1e-5f * (1 + fabsf(whole[i])));
        tp_session_destroy(s);
    }
    free(whole);
    free(got);
    tp_weights_destroy(w);
}

/* The planned activations of a chunked prefill do not grow with the prompt. */
static void test_chunked_prefill_plans_stay_constant(void **state)
{
    (void)state;
    tp_model_config c = config(TP_ARCH_LLAMA);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 4, &w), TP_OK);
    int32_t long_prompt[60];
    for (int i = 0; i < 60; i++)
        long_prompt[i] = (i * 7 + 3) % c.vocab;
    size_t act[3];
    const size_t lens[3] = {20, 41, 60};
    for (int k = 0; k < 3; k++) {
        tp_session_options o = tp_session_options_default();
        o.n_ctx = 64;
        o.ubatch = 8;
        o.alloc.size_classes = 0;
        tp_session *s = NULL;
        assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
        assert_int_equal(tp_session_forward(s, long_prompt, lens[k], 1, NULL), TP_OK);
        tp_session_stats st = tp_session_get_stats(s);
        act[k] = st.prefill_plan.activation_bytes;
        assert_int_equal(st.prefill_plan_tokens, 8);
        tp_session_destroy(s);
        /* the same prompt unchunked plans more */
        o.ubatch = 0;
        assert_int_equal(tp_session_create(&c, w, &o, &s), TP_OK);
        assert_int_equal(tp_session_forward(s, long_prompt, lens[k], 1, NULL), TP_OK);
        assert_true(tp_session_get_stats(s).prefill_plan.activation_bytes > act[k]);
        tp_session_destroy(s);
    }
    assert_int_equal(act[0], act[1]);
    assert_int_equal(act[1], act[2]);
    tp_weights_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typed_store_and_attention_against_double),
        cmocka_unit_test(test_typed_store_refusals),
        cmocka_unit_test(test_kv_types_against_reference_and_f32),
        cmocka_unit_test(test_strategies_equal_naive_for_each_kv_type),
        cmocka_unit_test(test_kv_bytes_follow_the_formula),
        cmocka_unit_test(test_other_kv_type_on_the_same_cache_is_refused),
        cmocka_unit_test(test_graph_kv_nodes_carry_the_type),
        cmocka_unit_test(test_dump_reads_the_typed_cache_back),
        cmocka_unit_test(test_trace_of_a_typed_cache),
        cmocka_unit_test(test_chunked_prefill_equals_one_graph),
        cmocka_unit_test(test_chunked_prefill_tail_row),
        cmocka_unit_test(test_chunked_prefill_plans_stay_constant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
