/* The f32 kernels against naive loops written here (double precision where it matters),
 * and the thread-count determinism of mul_mat and attn. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tensorplan/graph.h"
#include "tensorplan/kernels.h"
#include "tensorplan/model.h"
#include "tensorplan/weights.h"

static uint64_t rng_state = 0x12345678u;

static float frand(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

static float *rand_array(size_t n)
{
    float *a = malloc(n * sizeof *a);
    assert_non_null(a);
    for (size_t i = 0; i < n; i++)
        a[i] = frand();
    return a;
}

static void put_ids(float *dst, const uint32_t *ids, size_t n)
{
    memcpy(dst, ids, n * sizeof *ids); /* the bit-pattern convention, done independently */
}

static void assert_close(double got, double want, double rel, double abs_tol)
{
    double err = fabs(got - want);
    if (err > abs_tol + rel * fabs(want))
        fail_msg("got %.9g, want %.9g (err %.3g)", got, want, err);
}

/* ---- mul_mat ---------------------------------------------------------------------------------- */

static void check_matmul_shape(size_t n_in, size_t n_out, size_t n_tok, int with_bias)
{
    float *W = rand_array(n_in * n_out), *x = rand_array(n_in * n_tok);
    float *b = with_bias ? rand_array(n_out) : NULL;
    const int threads[] = {1, 2, 3, 7};
    float *y[4];
    for (int k = 0; k < 4; k++) {
        y[k] = malloc(n_out * n_tok * sizeof(float));
        assert_non_null(y[k]);
        assert_int_equal(tp_kernel_mul_mat(W, b, x, n_in, n_out, n_tok, y[k], threads[k]), TP_OK);
    }
    for (int k = 1; k < 4; k++)
        assert_memory_equal(y[0], y[k], n_out * n_tok * sizeof(float));
    for (size_t t = 0; t < n_tok; t++) {
        for (size_t r = 0; r < n_out; r++) {
            double s = b ? b[r] : 0.0, mag = b ? fabs(b[r]) : 0.0;
            for (size_t i = 0; i < n_in; i++) {
                s += (double)W[r * n_in + i] * (double)x[t * n_in + i];
                mag += fabs((double)W[r * n_in + i] * (double)x[t * n_in + i]);
            }
            /* float summation error is bounded by ~n * eps * sum|terms| */
            assert_close(y[0][t * n_out + r], s, 0.0, 1e-6 * mag + 1e-7);
        }
    }
    for (int k = 0; k < 4; k++)
        free(y[k]);
    free(W);
    free(x);
    free(b);
}

static void test_mul_mat_matches_double_reference(void **state)
{
    (void)state;
    check_matmul_shape(1, 1, 1, 0);
    check_matmul_shape(7, 5, 3, 1);
    check_matmul_shape(64, 33, 9, 1);
    check_matmul_shape(130, 257, 5, 0);
    check_matmul_shape(896, 700, 2, 1); /* large enough to run threaded */
    check_matmul_shape(300, 700, 70, 0); /* crosses a token block */
}

static void test_mul_mat_refuses_empty(void **state)
{
    (void)state;
    float w = 1, x = 1, y = 0;
    assert_int_not_equal(tp_kernel_mul_mat(&w, NULL, &x, 0, 1, 1, &y, 1), TP_OK);
    assert_int_not_equal(tp_kernel_mul_mat(NULL, NULL, &x, 1, 1, 1, &y, 1), TP_OK);
}

/* ---- get_rows --------------------------------------------------------------------------------- */

static void test_get_rows_by_bit_pattern(void **state)
{
    (void)state;
    const size_t rows = 200, d = 5;
    float *table = rand_array(rows * d);
    /* small ids are subnormal floats: a numeric conversion would read them as 0 */
    uint32_t ids[] = {0, 1, 199, 7, 7, 150};
    float idf[6], out[6 * 5];
    put_ids(idf, ids, 6);
    assert_int_equal(tp_kernel_get_rows(table, rows, d, idf, 6, out), TP_OK);
    for (size_t t = 0; t < 6; t++)
        for (size_t i = 0; i < d; i++)
            assert_true(out[t * d + i] == table[ids[t] * d + i]);

    uint32_t bad[] = {3, 200};
    float badf[2], out2[2 * 5];
    for (size_t i = 0; i < 10; i++)
        out2[i] = -7.0f;
    put_ids(badf, bad, 2);
    assert_int_equal(tp_kernel_get_rows(table, rows, d, badf, 2, out2), TP_ERR_INVALID);
    for (size_t i = 0; i < 10; i++)
        assert_true(out2[i] == -7.0f); /* refused before the first row was written */
    free(table);
}

/* ---- rms_norm --------------------------------------------------------------------------------- */

static void test_rms_norm_formula(void **state)
{
    (void)state;
    const size_t d = 37, nt = 4;
    const float eps = 1e-6f;
    float *x = rand_array(d * nt), *w = rand_array(d), *y = malloc(d * nt * sizeof(float));
    assert_non_null(y);
    assert_int_equal(tp_kernel_rms_norm(x, w, d, nt, eps, y), TP_OK);
    for (size_t t = 0; t < nt; t++) {
        double ms = 0;
        for (size_t j = 0; j < d; j++)
            ms += (double)x[t * d + j] * x[t * d + j];
        ms /= d;
        for (size_t i = 0; i < d; i++)
            assert_close(y[t * d + i], x[t * d + i] / sqrt(ms + eps) * w[i], 1e-6, 1e-7);
    }
    /* in place gives the same bits */
    float *z = malloc(d * nt * sizeof(float));
    assert_non_null(z);
    memcpy(z, x, d * nt * sizeof(float));
    assert_int_equal(tp_kernel_rms_norm(z, w, d, nt, eps, z), TP_OK);
    assert_memory_equal(z, y, d * nt * sizeof(float));
    free(x);
    free(w);
    free(y);
    free(z);
}

/* ---- rope ------------------------------------------------------------------------------------- */

/* docs/engine.md "RoPE" restated: theta_0 = p, theta_{i+1} = theta_i * powf(base, -2/hd) in
 * f32 (the spec's repeated multiplication); the divisor, the scaling, the YaRN ramp and the
 * rotation in double; attn_factor is the whole magnitude. want has the layout of x. */
static void rope_oracle(const float *x, const uint32_t *pos, size_t nh, size_t hd, size_t nt,
                        const tp_rope_params *p, double *want)
{
    const size_t half = hd / 2;
    const float ts = powf(p->base, -2.0f / (float)hd);
    double lo = 0, hi = 0, mscale = p->attn_factor;
    if (p->ext_factor != 0.0f) {
        const double pi = 3.14159265358979323846;
        double fast = hd * log(p->n_ctx_orig / (2 * pi * 32)) / (2 * log(p->base));
        double slow = hd * log(p->n_ctx_orig / (2 * pi * 1)) / (2 * log(p->base));
        lo = fmax(0, floor(fast));
        hi = fmin((double)hd - 1, ceil(slow));
    }
    for (size_t t = 0; t < nt; t++) {
        float theta = (float)pos[t];
        for (size_t i = 0; i < half; i++, theta *= ts) {
            double th = p->freqs ? theta / (double)p->freqs[i] : theta;
            double sc = p->freq_scale * th;
            if (p->ext_factor != 0.0f) {
                double y = ((double)i - lo) / fmax(0.001, hi - lo);
                double ramp = 1 - fmin(1, fmax(0, y));
                sc = sc * (1 - ramp) + th * ramp;
            }
            double c = cos(sc) * mscale, sn = sin(sc) * mscale;
            for (size_t h = 0; h < nh; h++) {
                size_t o = t * nh * hd + h * hd;
                size_t i0 = p->mode == TP_ROPE_NEOX ? o + i : o + 2 * i;
                size_t i1 = p->mode == TP_ROPE_NEOX ? o + i + half : o + 2 * i + 1;
                want[i0] = x[i0] * c - x[i1] * sn;
                want[i1] = x[i0] * sn + x[i1] * c;
            }
        }
    }
}

static void check_rope(size_t nh, size_t hd, const uint32_t *pos, size_t nt,
                       const tp_rope_params *p, double tol)
{
    float posf[8];
    put_ids(posf, pos, nt);
    float *x = rand_array(nh * hd * nt), *y = malloc(nh * hd * nt * sizeof(float));
    double *want = malloc(nh * hd * nt * sizeof(double));
    assert_non_null(y);
    assert_non_null(want);
    assert_int_equal(tp_kernel_rope_ext(x, posf, nh, hd, nt, p, y), TP_OK);
    rope_oracle(x, pos, nh, hd, nt, p, want);
    for (size_t i = 0; i < nh * hd * nt; i++)
        assert_close(y[i], want[i], tol, tol);
    /* in place */
    assert_int_equal(tp_kernel_rope_ext(x, posf, nh, hd, nt, p, x), TP_OK);
    assert_memory_equal(x, y, nh * hd * nt * sizeof(float));
    free(x);
    free(y);
    free(want);
}

static void test_rope_neox_formula(void **state)
{
    (void)state;
    const size_t nh = 3, hd = 8, nt = 4;
    const float base = 1e6f;
    uint32_t pos[] = {0, 1, 17, 4095};
    float posf[4];
    put_ids(posf, pos, 4);
    float *x = rand_array(nh * hd * nt), *y = malloc(nh * hd * nt * sizeof(float));
    double *want = malloc(nh * hd * nt * sizeof(double));
    assert_non_null(y);
    assert_non_null(want);
    assert_int_equal(tp_kernel_rope(x, posf, nh, hd, nt, base, y), TP_OK);
    tp_rope_params p = {TP_ROPE_NEOX, base, 1.0f, 0.0f, 1.0f, 0, NULL};
    rope_oracle(x, pos, nh, hd, nt, &p, want);
    for (size_t i = 0; i < nh * hd * nt; i++)
        assert_close(y[i], want[i], 1e-6, 1e-7);
    /* position 0 is the identity */
    for (size_t i = 0; i < nh * hd; i++)
        assert_true(y[i] == x[i]);
    /* in place */
    assert_int_equal(tp_kernel_rope(x, posf, nh, hd, nt, base, x), TP_OK);
    assert_memory_equal(x, y, nh * hd * nt * sizeof(float));
    assert_int_equal(tp_kernel_rope(x, posf, nh, 7, 1, base, y), TP_ERR_INVALID);
    free(x);
    free(y);
    free(want);
}

/* NORM pairs (2i, 2i+1), rope_freqs divisors, linear scaling and a magnitude. */
static void test_rope_norm_freqs_scaling(void **state)
{
    (void)state;
    const float freqs[8] = {1.0f, 1.25f, 1.5f, 2.0f, 4.0f, 8.0f, 16.0f, 40.0f};
    uint32_t pos[] = {0, 3, 50, 99};
    tp_rope_params p = {TP_ROPE_NORM, 500000.0f, 0.25f, 0.0f, 1.3f, 0, freqs};
    check_rope(2, 16, pos, 4, &p, 2e-5);
    p.mode = TP_ROPE_NEOX;
    check_rope(2, 16, pos, 4, &p, 2e-5);
    /* a rotation mixes exactly the pair: NORM at position 1, head_dim 2, theta 1 */
    float x[2] = {1.0f, 0.0f}, y[2];
    float one[1];
    put_ids(one, (uint32_t[]){1}, 1);
    tp_rope_params q = {TP_ROPE_NORM, 10000.0f, 1.0f, 0.0f, 1.0f, 0, NULL};
    assert_int_equal(tp_kernel_rope_ext(x, one, 1, 2, 1, &q, y), TP_OK);
    assert_close(y[0], cos(1.0), 1e-6, 1e-7);
    assert_close(y[1], sin(1.0), 1e-6, 1e-7);
}

/* YaRN: the ramp between lo = 2 and hi = 6 (head_dim 16, n_ctx_orig 4096, base 10000). */
static void test_rope_yarn(void **state)
{
    (void)state;
    uint32_t pos[] = {0, 7, 60, 120};
    tp_rope_params p = {TP_ROPE_NEOX, 10000.0f, 0.25f, 1.0f, 1.0f, 4096, NULL};
    check_rope(3, 16, pos, 4, &p, 2e-5);
    p.mode = TP_ROPE_NORM;
    p.attn_factor = 1.1386294f; /* 1 + 0.1 ln 4, the YaRN magnitude of freq_scale 0.25 */
    check_rope(3, 16, pos, 4, &p, 2e-5);
    /* refusals: no original context with YaRN, an unknown mode, a zero divisor */
    float x[16] = {0}, y[16], one[1];
    put_ids(one, (uint32_t[]){1}, 1);
    p.n_ctx_orig = 0;
    assert_int_equal(tp_kernel_rope_ext(x, one, 1, 16, 1, &p, y), TP_ERR_INVALID);
    p.n_ctx_orig = 4096;
    p.mode = 7;
    assert_int_equal(tp_kernel_rope_ext(x, one, 1, 16, 1, &p, y), TP_ERR_INVALID);
    const float zero[8] = {1, 1, 1, 0, 1, 1, 1, 1};
    p.mode = TP_ROPE_NORM;
    p.freqs = zero;
    assert_int_equal(tp_kernel_rope_ext(x, one, 1, 16, 1, &p, y), TP_ERR_INVALID);
}

/* ---- kv_store --------------------------------------------------------------------------------- */

static void test_kv_store_writes_rows_and_refuses_first(void **state)
{
    (void)state;
    const size_t nkv = 6, n_ctx = 8, nt = 3;
    float *k = rand_array(nkv * nt), *v = rand_array(nkv * nt);
    float K[8 * 6], V[8 * 6];
    for (size_t i = 0; i < n_ctx * nkv; i++)
        K[i] = V[i] = 42.0f;
    uint32_t pos[] = {5, 0, 7};
    float posf[3];
    put_ids(posf, pos, 3);
    assert_int_equal(tp_kernel_kv_store(k, v, posf, nkv, nt, K, V, n_ctx), TP_OK);
    for (size_t r = 0; r < n_ctx; r++) {
        int t = r == 5 ? 0 : r == 0 ? 1 : r == 7 ? 2 : -1;
        for (size_t i = 0; i < nkv; i++) {
            assert_true(K[r * nkv + i] == (t < 0 ? 42.0f : k[(size_t)t * nkv + i]));
            assert_true(V[r * nkv + i] == (t < 0 ? 42.0f : v[(size_t)t * nkv + i]));
        }
    }
    float Kc[8 * 6], Vc[8 * 6];
    memcpy(Kc, K, sizeof K);
    memcpy(Vc, V, sizeof V);
    /* the valid first token must not be written when a later one is out of range */
    uint32_t bad[] = {2, 3, 8};
    put_ids(posf, bad, 3);
    assert_int_equal(tp_kernel_kv_store(k, v, posf, nkv, nt, K, V, n_ctx), TP_ERR_INVALID);
    assert_memory_equal(K, Kc, sizeof K);
    assert_memory_equal(V, Vc, sizeof V);
    free(k);
    free(v);
}

/* ---- attn ------------------------------------------------------------------------------------- */

static void ref_attn(const float *q, const float *K, const float *V, const uint32_t *pos,
                     size_t nh, size_t nkvh, size_t hd, size_t nt, double *out)
{
    size_t group = nh / nkvh;
    for (size_t t = 0; t < nt; t++)
        for (size_t h = 0; h < nh; h++) {
            size_t g = h / group, p = pos[t];
            double *s = malloc((p + 1) * sizeof *s), m = -INFINITY, sum = 0;
            assert_non_null(s);
            for (size_t j = 0; j <= p; j++) {
                double d = 0;
                for (size_t i = 0; i < hd; i++)
                    d += (double)q[t * nh * hd + h * hd + i] * K[j * nkvh * hd + g * hd + i];
                s[j] = d / sqrt((double)hd);
                if (s[j] > m)
                    m = s[j];
            }
            for (size_t j = 0; j <= p; j++)
                sum += (s[j] = exp(s[j] - m));
            for (size_t i = 0; i < hd; i++) {
                double o = 0;
                for (size_t j = 0; j <= p; j++)
                    o += s[j] / sum * V[j * nkvh * hd + g * hd + i];
                out[t * nh * hd + h * hd + i] = o;
            }
            free(s);
        }
}

static void check_attn(size_t nh, size_t nkvh, size_t hd, size_t n_ctx, const uint32_t *pos,
                       size_t nt)
{
    float *q = rand_array(nh * hd * nt);
    float *K = rand_array(n_ctx * nkvh * hd), *V = rand_array(n_ctx * nkvh * hd);
    float *posf = malloc(nt * sizeof *posf);
    double *want = malloc(nh * hd * nt * sizeof *want);
    assert_non_null(posf);
    assert_non_null(want);
    put_ids(posf, pos, nt);
    ref_attn(q, K, V, pos, nh, nkvh, hd, nt, want);
    float *out[3];
    const int threads[] = {1, 2, 7};
    for (int k = 0; k < 3; k++) {
        out[k] = malloc(nh * hd * nt * sizeof(float));
        assert_non_null(out[k]);
        assert_int_equal(
            tp_kernel_attn(q, K, V, posf, nh, nkvh, hd, nt, n_ctx, out[k], threads[k]), TP_OK);
    }
    for (int k = 1; k < 3; k++)
        assert_memory_equal(out[0], out[k], nh * hd * nt * sizeof(float));
    for (size_t i = 0; i < nh * hd * nt; i++)
        assert_close(out[0][i], want[i], 1e-5, 1e-6);

    /* causality: rows beyond every query's position do not matter */
    uint32_t pmax = 0;
    for (size_t t = 0; t < nt; t++)
        pmax = pos[t] > pmax ? pos[t] : pmax;
    if (pmax + 1 < n_ctx) {
        float *K2 = malloc(n_ctx * nkvh * hd * sizeof(float));
        float *o2 = malloc(nh * hd * nt * sizeof(float));
        assert_non_null(K2);
        assert_non_null(o2);
        memcpy(K2, K, n_ctx * nkvh * hd * sizeof(float));
        for (size_t i = (pmax + 1) * nkvh * hd; i < n_ctx * nkvh * hd; i++)
            K2[i] = 1e3f;
        assert_int_equal(tp_kernel_attn(q, K2, V, posf, nh, nkvh, hd, nt, n_ctx, o2, 1), TP_OK);
        assert_memory_equal(o2, out[0], nh * hd * nt * sizeof(float));
        free(K2);
        free(o2);
    }
    for (int k = 0; k < 3; k++)
        free(out[k]);
    free(q);
    free(K);
    free(V);
    free(posf);
    free(want);
}

static void test_attn_grouped_causal(void **state)
{
    (void)state;
    const uint32_t small[] = {0, 3, 4, 40, 50};
    check_attn(6, 2, 16, 64, small, 5);
    /* large enough to run threaded */
    const uint32_t large[] = {100, 500, 1000, 1023, 7, 800};
    check_attn(8, 2, 64, 1024, large, 6);

    const size_t nh = 6, nkvh = 2, hd = 16, n_ctx = 64;
    float *q = rand_array(nh * hd), *K = rand_array(n_ctx * nkvh * hd);
    float *V = rand_array(n_ctx * nkvh * hd), o[6 * 16];
    uint32_t bad = 64, ok = 3;
    float badf, okf;
    put_ids(&badf, &bad, 1);
    put_ids(&okf, &ok, 1);
    assert_int_equal(tp_kernel_attn(q, K, V, &badf, nh, nkvh, hd, 1, n_ctx, o, 1),
                     TP_ERR_INVALID);
    assert_int_equal(tp_kernel_attn(q, K, V, &okf, 5, 2, hd, 1, n_ctx, o, 1), TP_ERR_INVALID);
    free(q);
    free(K);
    free(V);
}

/* ---- elementwise ------------------------------------------------------------------------------ */

static void test_elementwise(void **state)
{
    (void)state;
    const size_t n = 100;
    float *a = rand_array(n), *b = rand_array(n), out[100], s[100], m[100];
    for (size_t i = 0; i < n; i++)
        a[i] *= 10.0f;
    assert_int_equal(tp_kernel_add(a, b, n, out), TP_OK);
    for (size_t i = 0; i < n; i++)
        assert_true(out[i] == a[i] + b[i]);
    assert_int_equal(tp_kernel_mul(a, b, n, out), TP_OK);
    for (size_t i = 0; i < n; i++)
        assert_true(out[i] == a[i] * b[i]);
    assert_int_equal(tp_kernel_silu(a, n, s), TP_OK);
    for (size_t i = 0; i < n; i++)
        assert_close(s[i], a[i] / (1.0 + exp(-(double)a[i])), 1e-6, 1e-7);
    assert_int_equal(tp_kernel_swiglu(a, b, n, out), TP_OK);
    assert_int_equal(tp_kernel_mul(s, b, n, m), TP_OK);
    /* fused and unfused must agree exactly */
    assert_memory_equal(out, m, sizeof out);
    free(a);
    free(b);
}

/* ---- weights ---------------------------------------------------------------------------------- */

static void test_weights_registry(void **state)
{
    (void)state;
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_create(&w), TP_OK);
    float *d = NULL;
    char name[32];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(tp_weights_add(w, name, (size_t)i + 1, 2, &d), TP_OK);
        d[0] = (float)i;
    }
    assert_int_equal(tp_weights_add(w, "t5", 1, 1, NULL), TP_ERR_INVALID);
    assert_int_equal(tp_weights_add(w, "empty", 0, 1, NULL), TP_ERR_INVALID);
    assert_int_equal(tp_weights_count(w), 100);
    size_t bytes = 0;
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "t%d", i);
        const tp_weight *t = tp_weights_find(w, name);
        assert_non_null(t);
        assert_int_equal(t->rows, (size_t)i + 1);
        assert_true(t->data[0] == (float)i);
        bytes += ((size_t)i + 1) * 2 * sizeof(float);
    }
    assert_int_equal(tp_weights_bytes(w), bytes);
    assert_null(tp_weights_find(w, "t100"));
    assert_int_equal(tp_weights_version(w), 100);
    tp_weights_destroy(w);
}

static void test_weights_random_is_deterministic(void **state)
{
    (void)state;
    tp_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "t");
    c.n_embd = 16, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 4, c.n_ff = 24, c.n_layer = 2;
    c.vocab = 50, c.max_ctx = 64, c.rms_eps = 1e-6f, c.rope_base = 1e4f, c.qkv_bias = 1;
    c.tied_embeddings = 1;
    tp_weights *a = NULL, *b = NULL, *o = NULL;
    assert_int_equal(tp_weights_init_random(&c, 7, &a), TP_OK);
    assert_int_equal(tp_weights_init_random(&c, 7, &b), TP_OK);
    assert_int_equal(tp_weights_init_random(&c, 8, &o), TP_OK);
    /* 1 embedding + 2 layers x 12 + output norm; tied: no output.weight */
    assert_int_equal(tp_weights_count(a), 26);
    assert_null(tp_weights_find(a, "output.weight"));
    const char *names[] = {"token_embd.weight", "blk.1.attn_q.bias", "blk.0.ffn_down.weight",
                           "output_norm.weight", "blk.1.attn_output.weight"};
    for (size_t i = 0; i < 5; i++) {
        const tp_weight *x = tp_weights_find(a, names[i]), *y = tp_weights_find(b, names[i]);
        const tp_weight *z = tp_weights_find(o, names[i]);
        assert_non_null(x);
        assert_non_null(y);
        assert_non_null(z);
        assert_memory_equal(x->data, y->data, x->rows * x->cols * sizeof(float));
        assert_memory_not_equal(x->data, z->data, x->rows * x->cols * sizeof(float));
    }
    const tp_weight *q = tp_weights_find(a, "blk.0.attn_q.weight");
    assert_int_equal(q->rows, 16);
    assert_int_equal(q->cols, 16);
    const tp_weight *dn = tp_weights_find(a, "blk.0.ffn_down.weight");
    assert_int_equal(dn->rows, 16);
    assert_int_equal(dn->cols, 24);
    /* scale: std close to 1/sqrt(fan_in); norms near 1 */
    double ss = 0;
    for (size_t i = 0; i < dn->rows * dn->cols; i++)
        ss += (double)dn->data[i] * dn->data[i];
    double std = sqrt(ss / (double)(dn->rows * dn->cols));
    assert_true(std > 0.7 / sqrt(24.0) && std < 1.3 / sqrt(24.0));
    const tp_weight *nw = tp_weights_find(a, "output_norm.weight");
    for (size_t i = 0; i < nw->cols; i++)
        assert_true(fabsf(nw->data[i] - 1.0f) <= 0.05f + 1e-6f);
    c.tied_embeddings = 0;
    tp_weights *u = NULL;
    assert_int_equal(tp_weights_init_random(&c, 7, &u), TP_OK);
    assert_non_null(tp_weights_find(u, "output.weight"));
    tp_weights_destroy(u);
    tp_weights_destroy(a);
    tp_weights_destroy(b);
    tp_weights_destroy(o);
}

/* A tensor above a million values is filled by two threads: both halves must be draws of
 * the requested distribution (bounded, the right spread), distinct streams, and the same
 * for the same seed. */
static void test_weights_random_large_tensor_split_fill(void **state)
{
    (void)state;
    tp_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "wide");
    c.n_embd = 16, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 4, c.n_ff = 24, c.n_layer = 1;
    c.vocab = 70001, c.max_ctx = 64, c.rms_eps = 1e-6f, c.rope_base = 1e4f;
    c.tied_embeddings = 1;
    tp_weights *a = NULL, *b = NULL;
    assert_int_equal(tp_weights_init_random(&c, 3, &a), TP_OK);
    assert_int_equal(tp_weights_init_random(&c, 3, &b), TP_OK);
    const tp_weight *e = tp_weights_find(a, "token_embd.weight");
    assert_non_null(e);
    size_t n = e->rows * e->cols;
    assert_true(n > ((size_t)1 << 20));
    assert_memory_equal(e->data, tp_weights_find(b, "token_embd.weight")->data,
                        n * sizeof(float));
    /* uniform with std 1/sqrt(16) = 0.25: bounded by 0.25 * sqrt(3) */
    const double bound = 0.25 * sqrt(3.0) + 1e-6;
    size_t quarter = n / 4;
    for (int part = 0; part < 4; part++) {
        double ss = 0, sum = 0;
        for (size_t i = (size_t)part * quarter; i < (size_t)(part + 1) * quarter; i++) {
            assert_true(fabs(e->data[i]) <= bound);
            ss += (double)e->data[i] * e->data[i];
            sum += e->data[i];
        }
        double mean = sum / (double)quarter, std = sqrt(ss / (double)quarter);
        assert_true(fabs(mean) < 0.01);
        assert_true(fabs(std - 0.25) < 0.01);
    }
    /* the second half is no copy or shift of the first (a restarted stream would be) */
    size_t half = n / 2, same = 0;
    for (size_t i = 0; i + half < n && i < 100000; i++)
        same += e->data[i] == e->data[i + half];
    assert_true(same < 10);
    tp_weights_destroy(a);
    tp_weights_destroy(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mul_mat_matches_double_reference),
        cmocka_unit_test(test_mul_mat_refuses_empty),
        cmocka_unit_test(test_get_rows_by_bit_pattern),
        cmocka_unit_test(test_rms_norm_formula),
        cmocka_unit_test(test_rope_neox_formula),
        cmocka_unit_test(test_rope_norm_freqs_scaling),
        cmocka_unit_test(test_rope_yarn),
        cmocka_unit_test(test_kv_store_writes_rows_and_refuses_first),
        cmocka_unit_test(test_attn_grouped_causal),
        cmocka_unit_test(test_elementwise),
        cmocka_unit_test(test_weights_registry),
        cmocka_unit_test(test_weights_random_is_deterministic),
        cmocka_unit_test(test_weights_random_large_tensor_split_fill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
