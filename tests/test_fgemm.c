/* The packed float product of prefill (backend/fgemm.h, docs/quant.md section 5), reached
 * through tp_kernel_mul_mat_typed with TP_FGEMM_MIN_TOKENS tokens or more: against
 * double-precision sums of the weights decoded by the formulas restated here (binary16 and
 * bfloat16 bit layouts), with odd row, token and element counts around the tile sizes and
 * slices; every form (tp_kernels_set_isa) against the portable one; the same bits across
 * thread counts and for F16 / BF16 weights and F32 weights holding their values; and
 * non-finite values that stay in their own outputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/fgemm.h"
#include "support/xorshift.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

static tpt_rng g_rng;

static double urand(void) /* [-1, 1) */
{
    return (double)(tpt_rng_next(&g_rng) >> 11) / 4503599627370496.0 - 1.0;
}

/* binary16: sign, 5 exponent bits (bias 15), 10 fraction bits; finite patterns only. */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31;
    double m = (double)(h & 1023);
    double v = e ? ldexp(1024.0 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}

static double bf16_value(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

/* n weights of type in W (little-endian) and their values in Wd: F32 uniform in [-1, 1),
 * F16 / BF16 random patterns of magnitude about 2^-6 .. 2^2 with random signs (and some
 * F16 subnormals). */
static void rand_weights(uint32_t type, size_t n, uint8_t *W, double *Wd)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = tpt_rng_next(&g_rng);
        if (type == TP_TYPE_F32) {
            float f = (float)urand();
            memcpy(W + 4 * i, &f, 4);
            Wd[i] = f;
            continue;
        }
        uint16_t h;
        if (type == TP_TYPE_F16)
            h = (uint16_t)((r & 0x83FF) | (r % 64 == 0 ? 0 : (9 + (r >> 16) % 9) << 10));
        else
            h = (uint16_t)((r & 0x807F) | (121 + (r >> 16) % 9) << 7);
        W[2 * i] = (uint8_t)(h & 0xFF);
        W[2 * i + 1] = (uint8_t)(h >> 8);
        Wd[i] = type == TP_TYPE_F16 ? half_value(h) : bf16_value(h);
    }
}

static size_t elem_bytes(uint32_t type)
{
    return type == TP_TYPE_F32 ? 4 : 2;
}

typedef struct problem {
    uint32_t type;
    size_t n_in, n_out, n_tok;
    uint8_t *W;
    double *Wd;
    float *x, *b;
} problem;

static problem make_problem(uint32_t type, size_t n_in, size_t n_out, size_t n_tok, int bias)
{
    problem p = {type, n_in, n_out, n_tok, malloc(n_in * n_out * elem_bytes(type)),
                 malloc(n_in * n_out * sizeof(double)), malloc(n_in * n_tok * sizeof(float)),
                 bias ? malloc(n_out * sizeof(float)) : NULL};
    assert_non_null(p.W);
    assert_non_null(p.Wd);
    assert_non_null(p.x);
    rand_weights(type, n_in * n_out, p.W, p.Wd);
    for (size_t i = 0; i < n_in * n_tok; i++)
        p.x[i] = (float)urand();
    if (bias) {
        assert_non_null(p.b);
        for (size_t o = 0; o < n_out; o++)
            p.b[o] = (float)urand();
    }
    return p;
}

static void free_problem(problem *p)
{
    free(p->W);
    free(p->Wd);
    free(p->x);
    free(p->b);
}

/* y of the product in form isa on `threads` threads (asserts success). */
static float *run(const problem *p, int isa, int threads)
{
    float *y = malloc(p->n_out * p->n_tok * sizeof *y);
    assert_non_null(y);
    assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
    assert_int_equal(tp_kernel_mul_mat_typed(p->type, p->W, p->b, p->x, p->n_in, p->n_out,
                                             p->n_tok, y, threads),
                     TP_OK);
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
    return y;
}

/* |y - sum| bound of any order of n_in + 1 rounded additions (and products) in f32:
 * (n_in + 2) * 2^-24 of the sum of magnitudes, with a margin for the compounding. */
static double bound(const problem *p, size_t t, size_t o, double *ref)
{
    double s = p->b ? p->b[o] : 0.0, mag = p->b ? fabs(p->b[o]) : 0.0;
    for (size_t i = 0; i < p->n_in; i++) {
        double v = p->Wd[o * p->n_in + i] * p->x[t * p->n_in + i];
        s += v;
        mag += fabs(v);
    }
    *ref = s;
    return (double)(p->n_in + 2) * 0x1p-24 * 1.01 * mag + 1e-300;
}

/* One problem in every form: within the bound of the double sums, the same bits on 1, 2
 * and 3 threads, and within twice the bound of the portable form. */
static void check_problem(uint32_t type, size_t n_in, size_t n_out, size_t n_tok, int bias)
{
    problem p = make_problem(type, n_in, n_out, n_tok, bias);
    float *yp = run(&p, TP_ISA_PORTABLE, 1);
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        float *y[3];
        for (int k = 0; k < 3; k++)
            y[k] = run(&p, isa, k + 1);
        for (size_t t = 0; t < n_tok; t++)
            for (size_t o = 0; o < n_out; o++) {
                double ref, tol = bound(&p, t, o, &ref);
                float got = y[0][t * n_out + o], port = yp[t * n_out + o];
                if (!(fabs(got - ref) <= tol) || !(fabs((double)got - port) <= 2 * tol))
                    fail_msg("%s %s %zu->%zu x %zu tokens: y[%zu][%zu] = %.9g, double %.9g, "
                             "portable %.9g, bound %.3g",
                             tp_kernels_isa_name(isa), tp_type_name(type), n_in, n_out, n_tok,
                             t, o, (double)got, ref, (double)port, tol);
            }
        assert_memory_equal(y[0], y[1], n_out * n_tok * sizeof(float));
        assert_memory_equal(y[0], y[2], n_out * n_tok * sizeof(float));
        for (int k = 0; k < 3; k++)
            free(y[k]);
    }
    free(yp);
    free_problem(&p);
}

static const uint32_t k_types[] = {TP_TYPE_F32, TP_TYPE_F16, TP_TYPE_BF16};

/* Odd counts around every form's tiles (rows 4, 6, 12; tokens 8, 16, 32) and slices (512,
 * 1,024 elements), single rows and elements. */
static void test_against_double_odd_shapes(void **state)
{
    (void)state;
    static const size_t shapes[][3] = {
        {1, 1, 16},     {3, 17, 17},   {17, 3, 33},   {63, 65, 63},  {65, 63, 65},
        {127, 127, 16}, {1, 127, 127}, {127, 1, 31},  {513, 13, 40}, {1025, 25, 18},
        {2085, 7, 33},  {896, 65, 64}, {1030, 65, 33}, {64, 300, 129}};
    for (size_t t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            check_problem(k_types[t], shapes[s][0], shapes[s][1], shapes[s][2], (int)(s % 2));
}

/* F16 and BF16 weights give exactly the bits of F32 weights holding their values, in every
 * form (the conversion is exact and the sums are the same). */
static void test_half_weights_equal_f32_weights(void **state)
{
    (void)state;
    for (size_t t = 1; t < 3; t++) {
        problem p = make_problem(k_types[t], 1100, 37, 45, 1);
        problem q = p;
        float *w32 = malloc(p.n_in * p.n_out * sizeof *w32);
        assert_non_null(w32);
        for (size_t i = 0; i < p.n_in * p.n_out; i++)
            w32[i] = (float)p.Wd[i]; /* exact: every f16 / bf16 value is an f32 */
        q.type = TP_TYPE_F32;
        q.W = (uint8_t *)w32;
        for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
            if (!tp_kernels_isa_supported(isa))
                continue;
            float *a = run(&p, isa, 2), *b = run(&q, isa, 1);
            assert_memory_equal(a, b, p.n_out * p.n_tok * sizeof(float));
            free(a);
            free(b);
        }
        free(w32);
        free_problem(&p);
    }
}

/* An infinite token value makes only that token's outputs non-finite, a NaN weight only its
 * row's: the zeros that pad the tiles never meet them in a kept output. */
static void test_nonfinite_values_stay_in_their_outputs(void **state)
{
    (void)state;
    const size_t n_in = 70, n_out = 15, n_tok = 37, bad_t = 36, bad_o = 14;
    problem p = make_problem(TP_TYPE_F32, n_in, n_out, n_tok, 0);
    p.x[bad_t * n_in + 5] = INFINITY;
    float nan = NAN;
    memcpy(p.W + 4 * (bad_o * n_in + 69), &nan, 4);
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        float *y = run(&p, isa, 1);
        for (size_t t = 0; t < n_tok; t++)
            for (size_t o = 0; o < n_out; o++) {
                int want_finite = t != bad_t && o != bad_o;
                if ((isfinite(y[t * n_out + o]) != 0) != want_finite)
                    fail_msg("%s: y[%zu][%zu] = %g", tp_kernels_isa_name(isa), t, o,
                             (double)y[t * n_out + o]);
            }
        assert_true(isnan(y[0 * n_out + bad_o]));
        free(y);
    }
    free_problem(&p);
}

/* Every form of this build is there when its processor support is: the x86-64 forms exist
 * exactly when the dispatch offers their instruction sets. */
static void test_forms_present(void **state)
{
    (void)state;
    assert_non_null(tp_fgemm_form_for(TP_ISA_PORTABLE));
    for (int isa = 0; isa < TP_ISA_COUNT; isa++)
        if (tp_kernels_isa_supported(isa)) {
            const tp_fgemm_form *f = tp_fgemm_form_for(isa);
            assert_non_null(f);
            assert_true(f->mr > 0 && f->tt > 0 && f->kc > 0);
        }
    assert_null(tp_fgemm_form_for(TP_ISA_COUNT));
}

int main(void)
{
    g_rng = tpt_rng_seeded(18);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_double_odd_shapes),
        cmocka_unit_test(test_half_weights_equal_f32_weights),
        cmocka_unit_test(test_nonfinite_values_stay_in_their_outputs),
        cmocka_unit_test(test_forms_present),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
