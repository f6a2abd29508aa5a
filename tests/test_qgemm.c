/* The prefill products of block-type weights (backend/qgemm.h, docs/quant.md section 5):
 * tp_kernel_mul_mat_typed with many tokens against a double-precision reference on weights
 * dequantized by formulas restated here (gguf.md section 2), within the bound of the 16-bit
 * activation rounding; against the portable form; bit for bit across thread splits, token
 * subsets and row subsets; the tiled activation rounding against its formula; NaN and
 * infinity poisoning; in every instruction-set form. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/qgemm.h"
#include "support/xorshift.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

static tpt_rng g_rng;

static float frand(void) /* uniform in [-1, 1) */
{
    return (float)((double)(tpt_rng_next(&g_rng) >> 11) * 0x1p-52 - 1.0);
}

/* ---- the block formulas, restated: element k of a block is a * q - b --------------------- */

static double half(const uint8_t *p) /* IEEE binary16, little-endian */
{
    unsigned h = p[0] | (unsigned)p[1] << 8, e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024.0 + m, (int)e - 25) : ldexp((double)m, -24);
    return h & 0x8000 ? -v : v;
}

static int nib(const uint8_t *qs, int k) /* element k of 32: low nibbles, then high */
{
    return k < 16 ? qs[k] & 15 : qs[k - 16] >> 4;
}

static int bit(const uint8_t *qh, int k)
{
    return (qh[k / 8] >> (k % 8)) & 1;
}

static void k_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

static void element(uint32_t type, const uint8_t *b, int k, double *a, double *q, double *mn)
{
    *mn = 0;
    switch (type) {
    case TP_TYPE_Q4_0: *a = half(b); *q = nib(b + 2, k) - 8; break;
    case TP_TYPE_Q4_1: *a = half(b); *q = nib(b + 4, k); *mn = -half(b + 2); break;
    case TP_TYPE_Q5_0: *a = half(b); *q = nib(b + 6, k) + 16 * bit(b + 2, k) - 16; break;
    case TP_TYPE_Q5_1:
        *a = half(b);
        *q = nib(b + 8, k) + 16 * bit(b + 4, k);
        *mn = -half(b + 2);
        break;
    case TP_TYPE_Q8_0: *a = half(b); *q = (int8_t)b[2 + k]; break;
    case TP_TYPE_Q4_K: case TP_TYPE_Q5_K: {
        int five = type == TP_TYPE_Q5_K, j = k / 32, l = k % 32, sc, m;
        const uint8_t *qs = b + (five ? 48 : 16) + 32 * (j / 2);
        int v = j % 2 ? qs[l] >> 4 : qs[l] & 15;
        if (five)
            v += 16 * ((b[16 + l] >> j) & 1);
        k_scale_min(b + 4, j, &sc, &m);
        *a = half(b) * sc;
        *q = v;
        *mn = half(b + 2) * m;
        break;
    }
    case TP_TYPE_Q2_K: case TP_TYPE_Q3_K: {
        /* k = 128 h + 32 j + 16 p + l: 2-bit field 2 j of qs[32 h + 16 p + l], sub-block k / 16 */
        int h = k / 128, j = (k % 128) / 32, l = k % 32, s = k / 16;
        int two = type == TP_TYPE_Q2_K;
        int v = (b[(two ? 16 : 32) + 32 * h + l] >> (2 * j)) & 3;
        if (two) {
            *a = half(b + 80) * (b[s] & 15);
            *mn = half(b + 82) * (b[s] >> 4);
            *q = v;
        } else {
            const uint8_t *sc = b + 96;
            int six = (s < 8 ? sc[s] & 15 : sc[s - 8] >> 4) |
                      ((sc[8 + s % 4] >> (2 * (s / 4))) & 3) << 4;
            *a = half(b + 108) * (six - 32);
            *q = v - ((b[k % 32] >> (4 * h + j)) & 1 ? 0 : 4);
        }
        break;
    }
    case TP_TYPE_Q6_K: {
        int h = k / 128, r = (k % 128) / 32, l = k % 32;
        int lo = b[64 * h + 32 * (r % 2) + l] >> (4 * (r / 2)) & 15;
        int hi = b[128 + 32 * h + l] >> (2 * r) & 3;
        *a = half(b + 208) * (int8_t)b[192 + 8 * h + 2 * r + l / 16];
        *q = lo + 16 * hi - 32;
        break;
    }
    default: fail_msg("no formula for type %u", (unsigned)type);
    }
}

/* Offsets of the f16 scale fields (-1 ends). */
static const int *scales_of(uint32_t type)
{
    static const int one[] = {0, -1}, two[] = {0, 2, -1}, q6k[] = {208, -1};
    static const int q2k[] = {80, 82, -1}, q3k[] = {108, -1};
    switch (type) {
    case TP_TYPE_Q4_1: case TP_TYPE_Q5_1: case TP_TYPE_Q4_K: case TP_TYPE_Q5_K: return two;
    case TP_TYPE_Q2_K: return q2k;
    case TP_TYPE_Q3_K: return q3k;
    case TP_TYPE_Q6_K: return q6k;
    default: return one;
    }
}

/* Random blocks: random bytes, every f16 scale finite and moderate (exponent 8..18). */
static uint8_t *rand_rows(uint32_t type, size_t n_rows, size_t n_in)
{
    size_t bb = tp_type_block_bytes(type), nb = n_rows * n_in / tp_type_block_elems(type);
    uint8_t *W = malloc(nb * bb + 1);
    assert_non_null(W);
    for (size_t i = 0; i < nb * bb; i++)
        W[i] = (uint8_t)tpt_rng_next(&g_rng);
    for (size_t b = 0; b < nb; b++)
        for (const int *f = scales_of(type); *f >= 0; f++) {
            unsigned h = (unsigned)(tpt_rng_next(&g_rng) & 1) << 15 |
                         (unsigned)(8 + tpt_rng_below(&g_rng, 11)) << 10 |
                         (unsigned)(tpt_rng_next(&g_rng) & 1023);
            W[b * bb + (size_t)*f] = (uint8_t)(h & 255);
            W[b * bb + (size_t)*f + 1] = (uint8_t)(h >> 8);
        }
    return W;
}

static float *rand_x(size_t n)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = frand() * 2.0f;
    return x;
}

static const uint32_t k_types[] = {TP_TYPE_Q4_0, TP_TYPE_Q4_1, TP_TYPE_Q5_0, TP_TYPE_Q5_1,
                                   TP_TYPE_Q8_0, TP_TYPE_Q2_K, TP_TYPE_Q3_K, TP_TYPE_Q4_K,
                                   TP_TYPE_Q5_K, TP_TYPE_Q6_K};
#define N_TYPES (sizeof k_types / sizeof *k_types)

static float *run(uint32_t type, const uint8_t *W, const float *b, const float *x, size_t n_in,
                  size_t n_out, size_t n_tok, int threads)
{
    float *y = malloc(n_out * n_tok * sizeof *y + 1);
    assert_non_null(y);
    assert_int_equal(tp_kernel_mul_mat_typed(type, W, b, x, n_in, n_out, n_tok, y, threads),
                     TP_OK);
    return y;
}

/* Each output against sum_i (a_i q_i - b_i) x_i in double: the rounding of each 32 token
 * values to q * amax / 32767 moves it by at most sum |a_i q_i| amax / 65534; f32 adds a small
 * multiple of 2^-24 of the magnitude sum (|a_i q_i| + |b_i|) |x_i|. */
static void check_reference(uint32_t type, const uint8_t *W, const float *b, const float *x,
                            size_t n_in, size_t n_out, size_t n_tok, const float *y)
{
    size_t be = tp_type_block_elems(type), bb = tp_type_block_bytes(type);
    size_t rb = n_in / be * bb;
    for (size_t o = 0; o < n_out; o++)
        for (size_t t = 0; t < n_tok; t++) {
            const float *xt = x + t * n_in;
            double ref = b ? b[o] : 0, err = 0, mag = b ? fabs(b[o]) : 0;
            for (size_t g = 0; g < n_in / 32; g++) {
                double amax = 0;
                for (size_t i = 32 * g; i < 32 * g + 32; i++)
                    amax = fmax(amax, fabs(xt[i]));
                for (size_t i = 32 * g; i < 32 * g + 32; i++) {
                    double a, q, mn;
                    element(type, W + o * rb + i / be * bb, (int)(i % be), &a, &q, &mn);
                    ref += (a * q - mn) * xt[i];
                    err += fabs(a * q) * amax / 65534.0;
                    mag += (fabs(a * q) + fabs(mn)) * fabs(xt[i]);
                }
            }
            double tol = err * (1 + 0x1p-10) + 0x1p-17 * mag;
            double got = y[t * n_out + o];
            if (!(fabs(got - ref) <= tol))
                fail_msg("%s (%s) %zux%zux%zu y[%zu][%zu] = %.9g, reference %.9g, bound %.3g",
                         tp_type_name(type), tp_kernels_isa_name(tp_kernels_isa()), n_out, n_in,
                         n_tok, t, o, got, ref, tol);
        }
}

/* Shapes: rows that fill no panel, one, one and a row, two and a bit; token counts below and
 * above the threshold, every remainder of the tiles of 12, two token blocks of 120 and a bit. */
static const size_t k_rows[] = {1, 5, 16, 17, 33};
static const size_t k_toks[] = {1, 2, 3, 5, 8, 11, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22,
                                23, 24, 25, 26, 27, 63, 65, 130, 245};

static void check_shape(uint32_t type, size_t n_in, size_t n_out, size_t n_tok, int bias)
{
    uint8_t *W = rand_rows(type, n_out, n_in);
    float *x = rand_x(n_in * n_tok), *b = bias ? rand_x(n_out) : NULL;
    float *y = run(type, W, b, x, n_in, n_out, n_tok, 1);
    check_reference(type, W, b, x, n_in, n_out, n_tok, y);
    free(W);
    free(x);
    free(b);
    free(y);
}

static void test_against_double(void **state)
{
    (void)state;
    g_rng = tpt_rng_seeded(1);
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
        for (size_t ti = 0; ti < N_TYPES; ti++) {
            size_t n_in = tp_type_block_elems(k_types[ti]) == 256 ? 512 : 352;
            for (size_t r = 0; r < sizeof k_rows / sizeof *k_rows; r++)
                for (size_t t = 0; t < sizeof k_toks / sizeof *k_toks; t += 1 + (r % 2))
                    check_shape(k_types[ti], n_in, k_rows[r], k_toks[t], (int)((r + t) % 2));
            /* long rows: several chunks of groups per panel */
            check_shape(k_types[ti], 2048 + (n_in == 352 ? 32 : 0), 19, 29, 1);
        }
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

/* The vector forms against the portable form (the same integer sums, f32 in another order:
 * within 2^-16 of the magnitude), and bit for bit: across 1, 2 and 3 threads; a run of tokens
 * alone against the same tokens inside a longer call; rows alone against the same rows
 * inside a taller matrix. */
static void check_forms(int isa, uint32_t type, size_t n_in, size_t n_out, size_t n_tok)
{
    size_t rb = n_in / tp_type_block_elems(type) * tp_type_block_bytes(type);
    uint8_t *W = rand_rows(type, n_out, n_in);
    float *x = rand_x(n_in * n_tok), *b = rand_x(n_out);
    assert_int_equal(tp_kernels_set_isa(TP_ISA_PORTABLE), TP_OK);
    float *yp = run(type, W, b, x, n_in, n_out, n_tok, 1);
    assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
    float *y1 = run(type, W, b, x, n_in, n_out, n_tok, 1);
    float *y2 = run(type, W, b, x, n_in, n_out, n_tok, 2);
    float *y3 = run(type, W, b, x, n_in, n_out, n_tok, 3);
    for (size_t i = 0; i < n_out * n_tok; i++) {
        size_t t = i / n_out, o = i % n_out;
        double mag = fabs(b[o]);
        for (size_t k = 0; k < n_in; k++) {
            double a, q, mn;
            size_t be = tp_type_block_elems(type);
            element(type, W + o * rb + k / be * tp_type_block_bytes(type), (int)(k % be), &a, &q,
                    &mn);
            mag += (fabs(a * q) + fabs(mn)) * fabs(x[t * n_in + k]);
        }
        if (!(fabs((double)y1[i] - yp[i]) <= 0x1p-16 * mag))
            fail_msg("%s %s %zux%zux%zu y[%zu][%zu]: %.9g, portable %.9g", tp_kernels_isa_name(isa),
                     tp_type_name(type), n_out, n_in, n_tok, t, o, y1[i], yp[i]);
    }
    assert_memory_equal(y1, y2, n_out * n_tok * sizeof *y1);
    assert_memory_equal(y1, y3, n_out * n_tok * sizeof *y1);
    /* tokens [13, 30) alone, rows [3, n_out) alone */
    float *ys = run(type, W, b, x + 13 * n_in, n_in, n_out, 17, 1);
    assert_memory_equal(ys, y1 + 13 * n_out, 17 * n_out * sizeof *ys);
    float *yr = run(type, W + 3 * rb, b + 3, x, n_in, n_out - 3, n_tok, 2);
    for (size_t t = 0; t < n_tok; t++)
        assert_memory_equal(yr + t * (n_out - 3), y1 + t * n_out + 3, (n_out - 3) * sizeof *yr);
    free(W);
    free(x);
    free(b);
    free(yp);
    free(y1);
    free(y2);
    free(y3);
    free(ys);
    free(yr);
}

static void test_forms_and_splits(void **state)
{
    (void)state;
    g_rng = tpt_rng_seeded(2);
    int gemm_forms = 0;
    for (int isa = 1; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        int here = 0;
        for (size_t ti = 0; ti < N_TYPES; ti++) {
            int k = tp_type_block_elems(k_types[ti]) == 256;
            here += tp_qgemm_for(isa, k_types[ti]) != NULL;
            check_forms(isa, k_types[ti], k ? 768 : 928, 37, 65);
            check_forms(isa, k_types[ti], k ? 256 : 64, 21, 130);
        }
        /* the AVX2 and AVX-512 forms have a product for every type here (Q2_K and Q3_K
         * included) */
        assert_int_equal(here, (int)N_TYPES);
        gemm_forms += here;
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
    print_message("type and form pairs with a prefill product: %d\n", gemm_forms);
}

/* The AVX2 form takes the AVX-512 form's steps lane for lane (backend/qgemm.h): the same bits
 * on these activations (no group's values span 2^24, so the groups' sums are exact). */
static void test_avx2_as_avx512(void **state)
{
    (void)state;
    g_rng = tpt_rng_seeded(5);
    if (!tp_kernels_isa_supported(TP_ISA_AVX512)) {
        print_message("no AVX-512 here: the two forms are not compared\n");
        return;
    }
    static const size_t rows[] = {3, 16, 29}, toks[] = {5, 7, 12, 31};
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        uint32_t type = k_types[ti];
        size_t n_in = tp_type_block_elems(type) == 256 ? 1024 : 1056;
        for (size_t r = 0; r < 3; r++)
            for (size_t t = 0; t < 4; t++) {
                uint8_t *W = rand_rows(type, rows[r], n_in);
                float *x = rand_x(n_in * toks[t]), *b = t % 2 ? rand_x(rows[r]) : NULL;
                assert_int_equal(tp_kernels_set_isa(TP_ISA_AVX512), TP_OK);
                float *y5 = run(type, W, b, x, n_in, rows[r], toks[t], 1);
                assert_int_equal(tp_kernels_set_isa(TP_ISA_AVX2), TP_OK);
                float *y2 = run(type, W, b, x, n_in, rows[r], toks[t], 2);
                assert_memory_equal(y2, y5, rows[r] * toks[t] * sizeof *y2);
                free(W);
                free(x);
                free(b);
                free(y5);
                free(y2);
            }
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

/* The tiled activations of form isa against their formula: d = amax / 32767, q =
 * nearest-even(v * (32767 / amax)) within +-32767, the pair layout, the exact sum and the
 * sums of the halves, zero padding. */
static void check_tiles(int isa)
{
    tp_qgemm_tile_fn tile = tp_qgemm_tiler(isa);
    if (!tile) {
        print_message("no %s form here: its tiles are not built\n", tp_kernels_isa_name(isa));
        assert_null(tp_qgemm_for(isa, TP_TYPE_Q4_0));
        return;
    }
    const size_t n_in = 96, n_tok = 17, T = TP_QGEMM_TOKENS, n_g = n_in / 32;
    float *x = rand_x(n_in * n_tok);
    x[5 * n_in + 40] = 1e-3f; /* a group of small values ... */
    for (size_t i = 32; i < 64; i++)
        x[7 * n_in + i] = (i % 3 ? 1 : -1) * 0x1p-140f; /* ... and one so tiny 32767 / amax overflows */
    void *mem = malloc(tp_qgemm_x_bytes(n_in, n_tok));
    assert_non_null(mem);
    memset(mem, 0x55, tp_qgemm_x_bytes(n_in, n_tok));
    tp_qgemm_x xt;
    tile(x, n_in, n_tok, mem, &xt);
    size_t tiles = (n_tok + T - 1) / T;
    for (size_t t = 0; t < tiles * T; t++)
        for (size_t g = 0; g < n_g; g++) {
            size_t i = t / T, k = t % T;
            const float *v = x + t * n_in + 32 * g;
            double amax = 0, sum = 0, hs[2] = {0, 0};
            for (int j = 0; t < n_tok && j < 32; j++) {
                amax = fmax(amax, fabs(v[j]));
                sum += v[j];
                hs[j / 16] += v[j];
            }
            float fa = (float)amax, id = fa > 0 ? 32767.0f / fa : 0;
            int usable = t < n_tok && isfinite(id);
            assert_true(xt.d[(i * n_g + g) * T + k] == (usable ? fa / 32767.0f : 0.0f));
            assert_true(xt.s[(i * n_g + g) * T + k] == (usable ? (float)sum : 0.0f));
            for (int e = 0; e < 2; e++) /* h[i][g][e][k]: the sums of the halves */
                assert_true(xt.h[((i * n_g + g) * 2 + (size_t)e) * T + k] ==
                            (usable ? (float)hs[e] : 0.0f));
            for (int p = 0; p < 16; p++) {
                int32_t got = xt.q[i * T * (n_in / 2) + (g * 16 + (size_t)p) * T + k];
                long lo = usable ? lrint((double)(v[p] * id)) : 0;
                long hi = usable ? lrint((double)(v[p + 16] * id)) : 0;
                lo = lo > 32767 ? 32767 : lo < -32767 ? -32767 : lo;
                hi = hi > 32767 ? 32767 : hi < -32767 ? -32767 : hi;
                assert_int_equal((int16_t)(got & 0xFFFF), lo);
                assert_int_equal((int16_t)((uint32_t)got >> 16), hi);
            }
        }
    free(mem);
    free(x);
}

static void test_tiles(void **state)
{
    (void)state;
    g_rng = tpt_rng_seeded(3);
    check_tiles(TP_ISA_AVX2);
    check_tiles(TP_ISA_AVX512);
}

/* The integer sums at their bound: every weight at the largest |quant x sub-block scale| (Q2_K
 * 3 x 15 with min 15, Q3_K -4 x -32, Q6_K -32 x -128) and every activation of a token at
 * the same +-amax (q = +-32767), so a group's sums reach 32 x 128 x 32767 (Q3_K) and, per
 * conversion of eight pairs, 16 x 4096 x 32767 < 2^31 (Q6_K): an overflow, a wrong sign
 * extension or a conversion after more pairs would leave the bound of check_reference. */
static void test_extremes(void **state)
{
    (void)state;
    static const uint32_t types[] = {TP_TYPE_Q2_K, TP_TYPE_Q3_K, TP_TYPE_Q6_K};
    const size_t n_in = 512, n_out = 17, n_tok = 7;
    float *x = malloc(n_in * n_tok * sizeof *x);
    assert_non_null(x);
    for (size_t t = 0; t < n_tok; t++)
        for (size_t i = 0; i < n_in; i++)
            x[t * n_in + i] = (t % 2 ? -1.0f : 1.0f) * (float)(1 + t);
    for (size_t ti = 0; ti < 3; ti++) {
        uint32_t type = types[ti];
        size_t bb = tp_type_block_bytes(type), nb = n_out * n_in / 256;
        uint8_t *W = malloc(nb * bb);
        assert_non_null(W);
        for (size_t b = 0; b < nb; b++) {
            uint8_t *blk = W + b * bb;
            memset(blk, type == TP_TYPE_Q2_K ? 0xFF : 0, bb); /* Q2_K: q 3, scale 15, min 15 */
            if (type == TP_TYPE_Q6_K)
                memset(blk + 192, 0x80, 16); /* scales -128 */
            int f = type == TP_TYPE_Q2_K ? 80 : type == TP_TYPE_Q3_K ? 108 : 208;
            blk[f] = 0x00; /* d = 1 (f16 0x3C00); Q2_K's dmin too */
            blk[f + 1] = 0x3C;
            if (type == TP_TYPE_Q2_K) {
                blk[82] = 0x00;
                blk[83] = 0x3C;
            }
        }
        for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
            if (!tp_kernels_isa_supported(isa))
                continue;
            assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
            float *y = run(type, W, NULL, x, n_in, n_out, n_tok, 2);
            check_reference(type, W, NULL, x, n_in, n_out, n_tok, y);
            free(y);
        }
        free(W);
    }
    free(x);
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

/* A NaN or an infinity in a token makes that token's outputs NaN in every row (as in f32);
 * the other tokens stay finite and equal to a clean run's. */
static void test_poison(void **state)
{
    (void)state;
    g_rng = tpt_rng_seeded(4);
    const size_t n_in = 256, n_out = 18, n_tok = 20;
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
        for (size_t ti = 0; ti < N_TYPES; ti++) {
            uint8_t *W = rand_rows(k_types[ti], n_out, n_in);
            float *x = rand_x(n_in * n_tok);
            float *clean = run(k_types[ti], W, NULL, x, n_in, n_out, n_tok, 1);
            x[3 * n_in + 77] = NAN;
            x[14 * n_in + 200] = INFINITY;
            float *y = run(k_types[ti], W, NULL, x, n_in, n_out, n_tok, 2);
            for (size_t t = 0; t < n_tok; t++)
                for (size_t o = 0; o < n_out; o++) {
                    float v = y[t * n_out + o];
                    if (t == 3 || t == 14)
                        assert_true(isnan(v));
                    else
                        assert_memory_equal(&v, &clean[t * n_out + o], sizeof v);
                }
            free(W);
            free(x);
            free(clean);
            free(y);
        }
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_double),
        cmocka_unit_test(test_forms_and_splits),
        cmocka_unit_test(test_avx2_as_avx512),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_extremes),
        cmocka_unit_test(test_poison),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
