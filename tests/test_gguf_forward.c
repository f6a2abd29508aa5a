/* GGUF models of both families, written by tp_gguf_write_test_model and run from the mapped
 * file: prefill and decode logits through tp_session_* against the double-precision
 * reference forward of tests/support on the same mapped weights (which it dequantizes with
 * its own code), and every allocation strategy and aliasing policy equal to naive bit for
 * bit. Types of the matrices: all thirteen a file can be written in against the reference
 * (the K types Q2_K..Q6_K on configs widened to 256), F32, F16, BF16, Q8_0 for the
 * strategies. */
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
#include "tensorplan/gguf_model.h"
#include "tensorplan/test_model.h"
#include "tensorplan/quant.h"

#define N_PROMPT 5
#define N_STEPS 3

static const int32_t prompt[N_PROMPT] = {17, 2, 300, 41, 9};
static char path[64];

static tp_model_config family(int llama)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin(llama ? "tiny-llama" : "tiny-qwen2", &c), TP_OK);
    if (llama) { /* every optional tensor of the family, and linear scaling */
        c.rope_freqs = c.attn_out_bias = c.ffn_bias = 1;
        c.rope_freq_scale = 0.5f;
    } else {
        c.tied_embeddings = 0;
        c.output_bias = 1;
    }
    return c;
}

typedef struct loaded {
    tp_gguf *g;
    tp_model_config c;
    tp_weights *w;
} loaded;

static void load(int llama, uint32_t type, loaded *m)
{
    tp_model_config c = family(llama);
    if (tp_type_block_elems(type) == 256) { /* rows of whole K blocks: 256 and 512 wide */
        c.n_embd = 256;
        c.head_dim = 64;
        c.n_ff = 512;
    }
    snprintf(c.name, sizeof c.name, "%s", llama ? "fwd-llama" : "fwd-qwen2");
    const tp_gguf_test_model how = {.type = type, .seed = 11, .tokenizer = llama ? "llama" : "gpt2",
                                    .pre = llama ? NULL : "qwen2"};
    if (tp_gguf_write_test_model(path, &c, &how) != TP_OK)
        fail_msg("write: %s", tp_last_error());
    assert_int_equal(tp_gguf_open(path, &m->g), TP_OK);
    if (tp_gguf_model_config(m->g, &m->c) != TP_OK)
        fail_msg("config: %s", tp_last_error());
    assert_int_equal(m->c.rope_mode, llama ? TP_ROPE_NORM : TP_ROPE_NEOX);
    if (tp_gguf_model_weights(m->g, &m->c, &m->w) != TP_OK)
        fail_msg("weights: %s", tp_last_error());
}

static void unload(loaded *m)
{
    tp_weights_destroy(m->w);
    tp_gguf_close(m->g);
}

static void against_reference(int llama, uint32_t type)
{
    loaded m;
    load(llama, type, &m);
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
    assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, N_PROMPT, got), TP_OK);
    assert_int_equal(ref_model_forward(ref, prompt, N_PROMPT, want), 0);
    size_t rows = N_PROMPT;
    /* block types meet activations rounded to 16 bits per group of 32 (docs/quant.md) */
    double tol = tp_type_block_elems(type) > 1 ? 1e-3 : 1e-4;
    for (int step = 0; step <= N_STEPS; step++) {
        for (size_t r = 0; r < rows; r++) {
            double num = 0, den = 0;
            for (size_t i = 0; i < vocab; i++) {
                double d = got[r * vocab + i] - want[r * vocab + i];
                num += d * d;
                den += want[r * vocab + i] * want[r * vocab + i];
            }
            assert_true(den > 0.01 * (double)vocab);
            if (!(sqrt(num / den) < tol))
                fail_msg("%s %s step %d row %zu: relative L2 %.3g", m.c.name,
                         tp_type_name(type), step, r, sqrt(num / den));
        }
        if (step == N_STEPS)
            break;
        int32_t tok = tp_argmax(got + (rows - 1) * vocab, vocab);
        assert_int_equal(tp_session_forward(s, &tok, 1, 1, got), TP_OK);
        assert_int_equal(ref_model_forward(ref, &tok, 1, want), 0);
        rows = 1;
    }
    free(got);
    free(want);
    ref_model_destroy(ref);
    tp_session_destroy(s);
    unload(&m);
}

static const uint32_t types[] = {TP_TYPE_F32, TP_TYPE_F16, TP_TYPE_BF16, TP_TYPE_Q8_0};

/* Every type a file can be written in; the K types on 256-wide configs. */
static const uint32_t all_types[] = {TP_TYPE_F32,  TP_TYPE_F16,  TP_TYPE_BF16, TP_TYPE_Q8_0,
                                     TP_TYPE_Q4_0, TP_TYPE_Q4_1, TP_TYPE_Q5_0, TP_TYPE_Q5_1,
                                     TP_TYPE_Q2_K, TP_TYPE_Q3_K, TP_TYPE_Q4_K, TP_TYPE_Q5_K,
                                     TP_TYPE_Q6_K};

static void test_gguf_models_match_reference(void **state)
{
    (void)state;
    for (int llama = 0; llama < 2; llama++)
        for (size_t t = 0; t < sizeof all_types / sizeof *all_types; t++)
            against_reference(llama, all_types[t]);
}

static float *run(const loaded *m, const tp_session_options *o)
{
    size_t vocab = (size_t)m->c.vocab;
    float *l = malloc((1 + N_STEPS) * vocab * sizeof *l);
    assert_non_null(l);
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&m->c, m->w, o, &s), TP_OK);
    assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, 1, l), TP_OK);
    for (int i = 0; i < N_STEPS; i++) {
        int32_t tok = tp_argmax(l + (size_t)i * vocab, vocab);
        assert_int_equal(tp_session_forward(s, &tok, 1, 1, l + (size_t)(i + 1) * vocab), TP_OK);
    }
    tp_session_destroy(s);
    return l;
}

static void test_gguf_strategies_equal_naive(void **state)
{
    (void)state;
    const tp_alloc_strategy st[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA, TP_STRATEGY_NAIVE};
    const tp_alias_policy al[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER, TP_ALIAS_NONE};
    for (int llama = 0; llama < 2; llama++)
        for (size_t t = 0; t < 4; t++) {
            loaded m;
            load(llama, types[t], &m);
            size_t n = (1 + N_STEPS) * (size_t)m.c.vocab;
            tp_session_options o = tp_session_options_default();
            o.n_ctx = 32;
            o.alloc.strategy = TP_STRATEGY_NAIVE;
            float *base = run(&m, &o);
            for (size_t si = 0; si < 3; si++)
                for (size_t pi = 0; pi < 3; pi++) {
                    o.alloc.strategy = st[si];
                    o.alloc.aliasing = al[pi];
                    o.queued_layers = (int)pi;
                    float *l = run(&m, &o);
                    if (memcmp(l, base, n * sizeof(float)) != 0)
                        fail_msg("%s %s: %s/%s differs from naive", m.c.name,
                                 tp_type_name(types[t]), tp_alloc_strategy_name(st[si]),
                                 tp_alias_policy_name(al[pi]));
                    free(l);
                }
            free(base);
            unload(&m);
        }
}


/* A test model stores the rows of tp_weights_init_random as they are (docs/gguf.md, "Test
 * models": there is no HF original to permute), so the reference forward on the mapped F32
 * file equals the reference forward on freshly made weights of the same config and seed. */
static void test_llama_file_holds_init_random_rows(void **state)
{
    (void)state;
    loaded m;
    load(1, TP_TYPE_F32, &m);
    tp_model_config orig = family(1);
    assert_int_equal(orig.rope_mode, TP_ROPE_NORM);
    tp_weights *w0 = NULL;
    assert_int_equal(tp_weights_init_random(&orig, 11, &w0), TP_OK);
    ref_model *a = NULL, *b = NULL;
    assert_int_equal(ref_model_create(&m.c, m.w, 32, &a), 0);
    assert_int_equal(ref_model_create(&orig, w0, 32, &b), 0);
    size_t vocab = (size_t)m.c.vocab;
    double *la = malloc(N_PROMPT * vocab * sizeof *la), *lb = malloc(N_PROMPT * vocab * sizeof *lb);
    assert_int_equal(ref_model_forward(a, prompt, N_PROMPT, la), 0);
    assert_int_equal(ref_model_forward(b, prompt, N_PROMPT, lb), 0);
    double worst = 0;
    for (size_t i = 0; i < N_PROMPT * vocab; i++)
        worst = fmax(worst, fabs(la[i] - lb[i]));
    assert_true(worst < 1e-9);
    free(la); free(lb);
    ref_model_destroy(a); ref_model_destroy(b);
    tp_weights_destroy(w0);
    unload(&m);
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/tp_gguf_forward_%ld.gguf", (long)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gguf_models_match_reference),
        cmocka_unit_test(test_gguf_strategies_equal_naive),
        cmocka_unit_test(test_llama_file_holds_init_random_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
