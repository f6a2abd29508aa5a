/* Tensor types (include/tensorplan/quant.h) against the facts of docs/quant.md restated here:
 * the type table, f16/bf16 conversions against a nearest-candidate oracle in double, each
 * block type's dequantization against per-element formulas written in this file (blocks built
 * byte by byte), quantize -> dequantize error bounds, and the typed kernels against a double
 * reference, tp_kernel_mul_mat and themselves across thread counts. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/fgemm.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static float frand(void) /* uniform in [-1, 1) */
{
    return (float)(rnd32() & 0xFFFFFF) / 8388608.0f - 1.0f;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 255);
    p[1] = (uint8_t)(v >> 8);
}

/* ---- oracle conversions ------------------------------------------------------------------ */

/* binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits; finite patterns only */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

static float half_f(uint16_t h)
{
    return (float)half_value(h);
}

/* Nearest f16 by search: the largest magnitude pattern p not above |f|, then p or p + 1,
 * the nearer, ties to the even pattern; 0x7C00 (infinity) counts as 65536 for the distance. */
static uint16_t oracle_f16(float f)
{
    if (isnan(f))
        return (uint16_t)((signbit(f) ? 0x8000 : 0) | 0x7E00);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (a >= 65536.0)
        return sign | 0x7C00;
    unsigned lo = 0, hi = 0x7C00; /* value(lo) <= a < value(hi) */
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (half_value((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double vl = half_value((uint16_t)lo), vh = hi == 0x7C00 ? 65536.0 : half_value((uint16_t)hi);
    unsigned pick = a - vl < vh - a ? lo : a - vl > vh - a ? hi : (lo % 2 == 0 ? lo : hi);
    return (uint16_t)(sign | pick);
}

/* Nearest bf16: candidates are the truncated pattern and the next one up in magnitude. */
static uint16_t oracle_bf16(float f)
{
    uint32_t u = fbits(f);
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x40);
    uint32_t mag = u & 0x7FFFFFFF, t = mag >> 16;
    double a = fabs((double)f);
    double vl = (double)bitsf(t << 16);
    double vh = t + 1 == 0x7F80 ? ldexp(1.0, 128) : (double)bitsf((t + 1) << 16);
    uint32_t pick = t == 0x7F80 ? t : a - vl < vh - a ? t : a - vl > vh - a ? t + 1 : (t % 2 ? t + 1 : t);
    return (uint16_t)((u >> 16 & 0x8000) | pick);
}

static void test_f16_decode_all(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t got = fbits(tp_f16_to_f32((uint16_t)h));
        uint32_t want;
        if ((h & 0x7C00) == 0x7C00) /* infinity / NaN: sign, all-ones exponent, payload << 13 */
            want = (h & 0x8000) << 16 | 0x7F800000 | (h & 0x3FF) << 13;
        else
            want = fbits(half_f((uint16_t)h));
        if (got != want)
            fail_msg("f16 %04x -> %08x, want %08x", h, got, want);
    }
}

/* The row path (tp_dequantize_row) over every f16 pattern, NaNs included, bit for bit. */
static void test_f16_row_all(void **state)
{
    (void)state;
    uint8_t *row = malloc(2 * 65536);
    float *out = malloc(65536 * sizeof *out);
    assert_non_null(row);
    assert_non_null(out);
    for (uint32_t h = 0; h < 65536; h++)
        put16(row + 2 * h, (uint16_t)h);
    assert_int_equal(tp_dequantize_row(TP_TYPE_F16, row, out, 65536), TP_OK);
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t want = (h & 0x7C00) == 0x7C00 ? (h & 0x8000) << 16 | 0x7F800000 | (h & 0x3FF) << 13
                                               : fbits(half_f((uint16_t)h));
        if (fbits(out[h]) != want)
            fail_msg("f16 row element %04x -> %08x, want %08x", h, fbits(out[h]), want);
    }
    free(row);
    free(out);
}

static void check_f16(float f)
{
    uint16_t got = tp_f32_to_f16(f), want = oracle_f16(f);
    if (got != want)
        fail_msg("f32 %08x (%.9g) -> f16 %04x, want %04x", fbits(f), f, got, want);
}

static void test_f16_encode_sweep(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x7C00; h++) { /* every finite value, its midpoints and neighbours */
        for (int s = 0; s < 2; s++) {
            double v = half_value((uint16_t)h), next = h + 1 == 0x7C00 ? 65536.0 : half_value((uint16_t)(h + 1));
            float mid = (float)((v + next) / 2); /* exact in f32: a tie */
            float vals[] = {(float)v, mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
            for (int k = 0; k < 4; k++)
                check_f16(s ? -vals[k] : vals[k]);
        }
    }
    for (int i = 0; i < 1 << 20; i++)
        check_f16(bitsf(rnd32() | (rnd32() & 1) << 31));
    float special[] = {INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f, 65520.0f, 1e-8f, 0x1p-25f,
                       0x1p-24f, 0x1.8p-25f, 0x1p-149f, 1e30f, 0.0f, -0.0f};
    for (size_t k = 0; k < sizeof special / sizeof *special; k++)
        check_f16(special[k]);
    assert_int_equal(tp_f32_to_f16(NAN) & 0x7FFF, 0x7E00);
    assert_int_equal(tp_f32_to_f16(65520.0f), 0x7C00);
    assert_int_equal(tp_f32_to_f16(-0x1p-25f), 0x8000);
}

static void test_bf16_sweep(void **state)
{
    (void)state;
    for (uint32_t b = 0; b < 65536; b++) {
        uint32_t got = fbits(tp_bf16_to_f32((uint16_t)b));
        assert_int_equal(got, b << 16);
    }
    for (int i = 0; i < 1 << 20; i++) {
        float f = bitsf(rnd32() | (rnd32() & 1) << 31);
        uint16_t got = tp_f32_to_bf16(f), want = oracle_bf16(f);
        if (got != want)
            fail_msg("f32 %08x -> bf16 %04x, want %04x", fbits(f), got, want);
    }
    for (uint32_t t = 0; t < 0x7F80; t += 7) /* exact ties between neighbours */
        for (uint32_t low = 0x7FFF; low <= 0x8001; low++) {
            float f = bitsf(t << 16 | low);
            assert_int_equal(tp_f32_to_bf16(f), oracle_bf16(f));
        }
}

/* ---- the type table ---------------------------------------------------------------------- */

typedef struct spec_type {
    uint32_t id;
    const char *name;
    size_t elems, bytes;
} spec_type;

static const spec_type k_spec[] = {
    {0, "F32", 1, 4},      {1, "F16", 1, 2},      {2, "Q4_0", 32, 18},  {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},   {7, "Q5_1", 32, 24},   {8, "Q8_0", 32, 34},  {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84}, {11, "Q3_K", 256, 110}, {12, "Q4_K", 256, 144}, {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210}, {15, "Q8_K", 256, 292}, {24, "I8", 1, 1},    {25, "I16", 1, 2},
    {26, "I32", 1, 4},     {27, "I64", 1, 8},     {28, "F64", 1, 8},    {30, "BF16", 1, 2},
};

static void test_type_table(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof k_spec / sizeof *k_spec; k++) {
        const spec_type *s = &k_spec[k];
        assert_string_equal(tp_type_name(s->id), s->name);
        assert_int_equal(tp_type_block_elems(s->id), s->elems);
        assert_int_equal(tp_type_block_bytes(s->id), s->bytes);
        assert_false(tp_type_is_retired(s->id));
        uint32_t id = 999;
        assert_true(tp_type_from_name(s->name, &id));
        assert_int_equal(id, s->id);
        size_t bytes = 0;
        assert_int_equal(tp_type_row_bytes(s->id, 3 * s->elems, &bytes), TP_OK);
        assert_int_equal(bytes, 3 * s->bytes);
        if (s->elems > 1)
            assert_int_equal(tp_type_row_bytes(s->id, s->elems + 1, &bytes), TP_ERR_INVALID);
    }
    uint32_t id = 0;
    assert_true(tp_type_from_name("q4_k", &id));
    assert_int_equal(id, 12);
    assert_false(tp_type_from_name("Q9_9", &id));
    assert_int_equal(id, 12);
    const uint32_t retired[] = {4, 5, 31, 32, 33, 36, 37, 38};
    for (size_t k = 0; k < 8; k++) {
        assert_true(tp_type_is_retired(retired[k]));
        assert_int_equal(tp_type_block_bytes(retired[k]), 0);
        assert_int_equal(tp_type_block_elems(retired[k]), 0);
        assert_false(tp_type_can_dequantize(retired[k]));
    }
    const uint32_t unknown[] = {40, 41, 1000, UINT32_MAX};
    for (size_t k = 0; k < 4; k++) {
        assert_null(tp_type_name(unknown[k]));
        assert_int_equal(tp_type_block_bytes(unknown[k]), 0);
        size_t bytes;
        assert_int_equal(tp_type_row_bytes(unknown[k], 32, &bytes), TP_ERR_INVALID);
    }
    size_t bytes = 7;
    assert_int_equal(tp_type_row_bytes(4, 32, &bytes), TP_ERR_INVALID);
    assert_int_equal(tp_type_row_bytes(TP_TYPE_Q8_0, (SIZE_MAX / 32) * 32, &bytes), TP_ERR_OVERFLOW);
    assert_int_equal(tp_type_row_bytes(TP_TYPE_F32, SIZE_MAX / 2, &bytes), TP_ERR_OVERFLOW);
    assert_int_equal(bytes, 7);
    const uint32_t exec[] = {0, 1, 30, 8};
    for (size_t k = 0; k < 4; k++)
        assert_true(tp_type_can_execute(exec[k]));
}

/* ---- per-element dequantization formulas, restated ---------------------------------------- */

static uint16_t u16at(const uint8_t *p)
{
    return (uint16_t)(p[0] + 256 * p[1]);
}

static float f16at(const uint8_t *p)
{
    return half_f(u16at(p));
}

/* Element k (0..31) of a 32-element block: its 4-bit nibble and its fifth bit. */
static int nib32(const uint8_t *qs, int k)
{
    return k < 16 ? qs[k] % 16 : qs[k - 16] / 16;
}

static int bit32(const uint8_t *qh, int k) /* bit k of the little-endian u32 at qh */
{
    return (qh[k / 8] >> (k % 8)) & 1;
}

/* Q4_K / Q5_K sub-block j: 6-bit scale and min. */
static void scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] % 64;
        *m = s[j + 4] % 64;
    } else {
        *sc = s[j + 4] % 16 + 16 * (s[j - 4] / 64);
        *m = s[j + 4] / 16 + 16 * (s[j] / 64);
    }
}

/* Q3_K sub-block s (0..15): the 6-bit scale from its low nibble and two high bits. */
static int q3_scale(const uint8_t *sc, int s)
{
    int low = s < 8 ? sc[s] % 16 : sc[s - 8] / 16;
    int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    return low + 16 * high;
}

static float elem(uint32_t type, const uint8_t *b, int k)
{
    switch (type) {
    case TP_TYPE_F32: { float f; memcpy(&f, b + 4 * k, 4); return f; }
    case TP_TYPE_F16: return half_f(u16at(b + 2 * k));
    case TP_TYPE_BF16: return bitsf((uint32_t)u16at(b + 2 * k) << 16);
    case TP_TYPE_Q4_0: return (float)(nib32(b + 2, k) - 8) * f16at(b);
    case TP_TYPE_Q4_1: return (float)nib32(b + 4, k) * f16at(b) + f16at(b + 2);
    case TP_TYPE_Q5_0: return (float)(nib32(b + 6, k) + 16 * bit32(b + 2, k) - 16) * f16at(b);
    case TP_TYPE_Q5_1: return (float)(nib32(b + 8, k) + 16 * bit32(b + 4, k)) * f16at(b) + f16at(b + 2);
    case TP_TYPE_Q8_0: return (float)(int8_t)b[2 + k] * f16at(b);
    case TP_TYPE_Q2_K: {
        int half = k / 128, r = k % 128, j = r / 32, part = (r % 32) / 16, l = r % 16;
        int q = (b[16 + 32 * half + 16 * part + l] >> (2 * j)) & 3, sc = b[k / 16];
        return f16at(b + 80) * (float)(sc % 16) * (float)q - f16at(b + 82) * (float)(sc / 16);
    }
    case TP_TYPE_Q3_K: {
        int half = k / 128, r = k % 128, j = r / 32, part = (r % 32) / 16, l = r % 16;
        int q = (b[32 + 32 * half + 16 * part + l] >> (2 * j)) & 3;
        int hbit = (b[k % 32] >> (4 * half + j)) & 1;
        return f16at(b + 108) * (float)(q3_scale(b + 96, k / 16) - 32) * (float)(q - (hbit ? 0 : 4));
    }
    case TP_TYPE_Q4_K: case TP_TYPE_Q5_K: {
        int five = type == TP_TYPE_Q5_K, c = k / 64, hi = (k % 64) / 32, l = k % 32, sc, m;
        const uint8_t *qs = b + (five ? 48 : 16);
        int q = hi ? qs[32 * c + l] / 16 : qs[32 * c + l] % 16;
        if (five)
            q += 16 * ((b[16 + l] >> (k / 32)) & 1);
        scale_min(b + 4, k / 32, &sc, &m);
        return f16at(b) * (float)sc * (float)q - f16at(b + 2) * (float)m;
    }
    case TP_TYPE_Q6_K: {
        int h = k / 128, r = k % 128, quarter = r / 32, l = r % 32;
        const uint8_t *ql = b + 64 * h + (quarter % 2 ? 32 : 0);
        int low = quarter < 2 ? ql[l] % 16 : ql[l] / 16;
        int high = (b[128 + 32 * h + l] >> (2 * quarter)) & 3;
        float sc = (float)(int8_t)b[192 + 8 * h + l / 16 + 2 * quarter];
        return f16at(b + 208) * sc * (float)(low + 16 * high - 32);
    }
    default: fail_msg("no formula for type %u", type); return 0;
    }
}

/* A random f16 scale of moderate size: sign, exponent 8..18, any mantissa. */
static uint16_t rand_scale(void)
{
    return (uint16_t)((rnd32() & 1) << 15 | (8 + rnd32() % 11) << 10 | (rnd32() & 1023));
}


/* Offsets of the f16 fields in each block layout (-1 ends the list). */
static const int *scale_fields(uint32_t type)
{
    static const int one[] = {0, -1}, two[] = {0, 2, -1}, q2k[] = {80, 82, -1}, q3k[] = {108, -1},
                     q6k[] = {208, -1}, none[] = {-1};
    switch (type) {
    case TP_TYPE_Q4_0: case TP_TYPE_Q5_0: case TP_TYPE_Q8_0: return one;
    case TP_TYPE_Q4_1: case TP_TYPE_Q5_1: case TP_TYPE_Q4_K: case TP_TYPE_Q5_K: return two;
    case TP_TYPE_Q2_K: return q2k;
    case TP_TYPE_Q3_K: return q3k;
    case TP_TYPE_Q6_K: return q6k;
    default: return none;
    }
}

/* n_blocks random blocks of type: random bytes, finite moderate values in every f16/f32 field. */
static uint8_t *rand_blocks(uint32_t type, size_t n_blocks, size_t pad)
{
    size_t bb = tp_type_block_bytes(type);
    uint8_t *buf = malloc(n_blocks * bb + pad + 1);
    assert_non_null(buf);
    uint8_t *p = buf + pad;
    for (size_t i = 0; i < n_blocks * bb; i++)
        p[i] = (uint8_t)rnd32();
    for (size_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = p + b * bb;
        if (type == TP_TYPE_F32) {
            float f = frand() * 4.0f;
            memcpy(blk, &f, 4);
        } else if (type == TP_TYPE_F16) {
            put16(blk, oracle_f16(frand() * 4.0f));
        } else if (type == TP_TYPE_BF16) {
            put16(blk, (uint16_t)(fbits(frand() * 4.0f) >> 16));
        }
        for (const int *f = scale_fields(type); *f >= 0; f++)
            put16(blk + *f, rand_scale());
    }
    return buf;
}

static const uint32_t k_deq_types[] = {TP_TYPE_F32,  TP_TYPE_F16,  TP_TYPE_BF16, TP_TYPE_Q4_0,
                                       TP_TYPE_Q4_1, TP_TYPE_Q5_0, TP_TYPE_Q5_1, TP_TYPE_Q8_0,
                                       TP_TYPE_Q2_K, TP_TYPE_Q3_K, TP_TYPE_Q4_K, TP_TYPE_Q5_K,
                                       TP_TYPE_Q6_K};
#define N_DEQ (sizeof k_deq_types / sizeof *k_deq_types)

/* The row of n elements at p dequantized with the formulas above. */
static void oracle_row(uint32_t type, const uint8_t *p, float *out, size_t n)
{
    size_t be = tp_type_block_elems(type), bb = tp_type_block_bytes(type);
    for (size_t i = 0; i < n; i++)
        out[i] = elem(type, p + (i / be) * bb, (int)(i % be));
}

static void test_dequantize_formulas(void **state)
{
    (void)state;
    for (size_t t = 0; t < N_DEQ; t++) {
        uint32_t type = k_deq_types[t];
        size_t be = tp_type_block_elems(type), nb = be == 1 ? 777 : 6, n = nb * be;
        for (int rep = 0; rep < 20; rep++) {
            uint8_t *buf = rand_blocks(type, nb, 0);
            float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
            assert_non_null(got);
            assert_non_null(want);
            assert_int_equal(tp_dequantize_row(type, buf, got, n), TP_OK);
            oracle_row(type, buf, want, n);
            for (size_t i = 0; i < n; i++)
                if (fbits(got[i]) != fbits(want[i]))
                    fail_msg("%s element %zu: %.9g, want %.9g", tp_type_name(type), i, got[i], want[i]);
            free(buf);
            free(got);
            free(want);
        }
    }
}

/* One hand-made Q4_K block: sub-block 5 scale 37 (low 5 from byte 9, high 2 from byte 1) */
static void test_q4_k_hand_block(void **state)
{
    (void)state;
    uint8_t blk[144] = {0};
    put16(blk, 0x3C00);         /* d = 1 */
    put16(blk + 2, 0x3800);     /* dmin = 0.5 */
    blk[4 + 9] = 5 | 3 << 4;    /* sub-block 5: scale low nibble 5, min low nibble 3 */
    blk[4 + 1] = 2 << 6;        /* scale high bits 2 -> 5 + 32 = 37 */
    blk[4 + 5] = 1 << 6;        /* min high bits 1 -> 3 + 16 = 19 */
    blk[16 + 64 + 7] = 0xB0;    /* chunk 2, l = 7: high nibble 11 -> element 128 + 32 + 7 */
    float y[256];
    assert_int_equal(tp_dequantize_row(TP_TYPE_Q4_K, blk, y, 256), TP_OK);
    assert_true(y[167] == 37.0f * 11.0f - 0.5f * 19.0f);
    assert_true(y[166] == -0.5f * 19.0f);
    assert_true(y[0] == 0.0f);
}

/* ---- quantize -> dequantize ------------------------------------------------------------------ */

static float *rand_floats(size_t n, float scale)
{
    float *a = malloc(n * sizeof *a);
    assert_non_null(a);
    for (size_t i = 0; i < n; i++)
        a[i] = frand() * scale;
    return a;
}

static void test_quantize_plain(void **state)
{
    (void)state;
    size_t n = 1000;
    float *x = rand_floats(n, 100.0f);
    x[3] = INFINITY;
    x[4] = -0.0f;
    x[5] = 1e-7f;
    uint8_t *q = malloc(4 * n);
    assert_non_null(q);
    assert_int_equal(tp_quantize_row(TP_TYPE_F16, x, q, n), TP_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(u16at(q + 2 * i), oracle_f16(x[i]));
    assert_int_equal(tp_quantize_row(TP_TYPE_BF16, x, q, n), TP_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(u16at(q + 2 * i), oracle_bf16(x[i]));
    assert_int_equal(tp_quantize_row(TP_TYPE_F32, x, q, n), TP_OK);
    assert_memory_equal(q, x, 4 * n);
    free(x);
    free(q);
}

/* Q8_0: d = amax / 127 stored as f16; each element within d/2 of x plus what the f16
 * rounding of d moves the largest quant (127 |d16 - d|). */
static void test_quantize_q8_0(void **state)
{
    (void)state;
    size_t nb = 64, n = 32 * nb;
    float *x = rand_floats(n, 3.0f), y[32];
    for (size_t i = 0; i < 32; i++)
        x[32 + i] = 0.0f; /* an all-zero block */
    uint8_t *q = malloc(34 * nb);
    assert_non_null(q);
    assert_int_equal(tp_quantize_row(TP_TYPE_Q8_0, x, q, n), TP_OK);
    for (size_t b = 0; b < nb; b++) {
        double amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmax(amax, fabs(x[32 * b + j]));
        float d = (float)amax / 127.0f;
        assert_int_equal(u16at(q + 34 * b), oracle_f16(d));
        double d16 = half_value(u16at(q + 34 * b));
        oracle_row(TP_TYPE_Q8_0, q + 34 * b, y, 32);
        for (int j = 0; j < 32; j++) {
            double err = fabs(y[j] - (double)x[32 * b + j]);
            assert_true(err <= d / 2.0 + 127.0 * fabs(d16 - d) + 1e-6 * amax);
        }
    }
    free(x);
    free(q);
}

/* Q4_0: d = v / -8 for the signed element v of largest magnitude; v itself is exact
 * (quant 0), every element within d (quant 15 clamps 7.5..8 to 7) plus the f16 rounding. */
static void test_quantize_q4_0(void **state)
{
    (void)state;
    size_t nb = 64, n = 32 * nb;
    float *x = rand_floats(n, 2.0f), y[32];
    uint8_t *q = malloc(18 * nb);
    assert_non_null(q);
    assert_int_equal(tp_quantize_row(TP_TYPE_Q4_0, x, q, n), TP_OK);
    for (size_t b = 0; b < nb; b++) {
        int arg = 0;
        for (int j = 1; j < 32; j++)
            if (fabsf(x[32 * b + j]) > fabsf(x[32 * b + arg]))
                arg = j;
        float d = x[32 * b + arg] / -8.0f;
        assert_int_equal(u16at(q + 18 * b), oracle_f16(d));
        double d16 = half_value(u16at(q + 18 * b));
        assert_int_equal(nib32(q + 18 * b + 2, arg), 0);
        oracle_row(TP_TYPE_Q4_0, q + 18 * b, y, 32);
        for (int j = 0; j < 32; j++) {
            double err = fabs(y[j] - (double)x[32 * b + j]);
            assert_true(err <= fabs(d) + 8.0 * fabs(d16 - d) + 1e-6);
        }
    }
    free(x);
    free(q);
}

/* Q4_K: sub-block j holds x in [lo, lo + 15 s] (lo = min(0, min x), s = (max - lo) / 15);
 * with D, M the block's own scale and min for j, a quant in range is within D/2 and a
 * clamped one within 15 |s - D| + |M + lo|; every element must obey the sum. */
static void test_quantize_q4_k(void **state)
{
    (void)state;
    size_t nb = 8, n = 256 * nb;
    float *x = rand_floats(n, 1.5f);
    for (size_t i = 0; i < 256; i++)
        x[256 + i] = 0.25f + fabsf(x[256 + i]); /* all positive: lo = 0 */
    float y[256];
    uint8_t *q = malloc(144 * nb);
    assert_non_null(q);
    assert_int_equal(tp_quantize_row(TP_TYPE_Q4_K, x, q, n), TP_OK);
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *blk = q + 144 * b;
        oracle_row(TP_TYPE_Q4_K, blk, y, 256);
        for (int j = 0; j < 8; j++) {
            const float *xs = x + 256 * b + 32 * j;
            double lo = 0, hi = xs[0];
            for (int l = 0; l < 32; l++) {
                lo = fmin(lo, xs[l]);
                hi = fmax(hi, xs[l]);
            }
            int sc, m;
            scale_min(blk + 4, j, &sc, &m);
            double s = (hi - lo) / 15, D = f16at(blk) * (double)sc, M = f16at(blk + 2) * (double)m;
            double bound = D / 2 + 15 * fabs(s - D) + fabs(M + lo) + 1e-5;
            for (int l = 0; l < 32; l++)
                if (fabs(y[32 * j + l] - xs[l]) > bound)
                    fail_msg("block %zu sub %d elem %d: %.6g vs %.6g (bound %.3g)", b, j, l,
                             y[32 * j + l], xs[l], bound);
            assert_true(bound < s); /* the packed scales stay close to s */
        }
    }
    free(x);
    free(q);
}

/* Q4_1 / Q5_1: d = (max - min) / top, m = min; each element within d/2 of x plus the f16
 * rounding of d (times the largest quant) and of m. Q5_0: d = v / -16 for the signed element
 * v of largest magnitude, v itself exact, each element within d (the top quant clamps). */
static void check_quantize_32(uint32_t type)
{
    size_t nb = 64, n = 32 * nb, bb = tp_type_block_bytes(type);
    float *x = rand_floats(n, 2.0f), y[32];
    uint8_t *q = malloc(bb * nb);
    assert_non_null(q);
    assert_int_equal(tp_quantize_row(type, x, q, n), TP_OK);
    for (size_t b = 0; b < nb; b++) {
        const float *xs = x + 32 * b;
        const uint8_t *blk = q + bb * b;
        float lo = xs[0], hi = xs[0];
        int arg = 0;
        for (int j = 1; j < 32; j++) {
            lo = fminf(lo, xs[j]);
            hi = fmaxf(hi, xs[j]);
            arg = fabsf(xs[j]) > fabsf(xs[arg]) ? j : arg;
        }
        double bound;
        if (type == TP_TYPE_Q5_0) {
            float d = xs[arg] / -16.0f;
            assert_int_equal(u16at(blk), oracle_f16(d));
            bound = fabs(d) + 16.0 * fabs(f16at(blk) - (double)d) + 1e-6;
            assert_true(elem(type, blk, arg) == -16.0f * f16at(blk));
        } else {
            int top = type == TP_TYPE_Q4_1 ? 15 : 31;
            float d = (hi - lo) / (float)top;
            assert_int_equal(u16at(blk), oracle_f16(d));
            assert_int_equal(u16at(blk + 2), oracle_f16(lo));
            bound = d / 2.0 + top * fabs(f16at(blk) - (double)d) + fabs(f16at(blk + 2) - (double)lo) + 1e-6;
        }
        oracle_row(type, blk, y, 32);
        for (int j = 0; j < 32; j++)
            if (fabs(y[j] - (double)xs[j]) > bound)
                fail_msg("%s block %zu elem %d: %.6g vs %.6g", tp_type_name(type), b, j, y[j], xs[j]);
    }
    free(x);
    free(q);
}

static void test_quantize_q4_1_q5_0_q5_1(void **state)
{
    (void)state;
    check_quantize_32(TP_TYPE_Q4_1);
    check_quantize_32(TP_TYPE_Q5_0);
    check_quantize_32(TP_TYPE_Q5_1);
}

/* Q6_K: sub-block s of 16 has x in [-32 |t|, 32 |t|] with t = v / -32 (v its signed element of
 * largest magnitude); with D = d * sc the block's own scale, a quant in range is within
 * |D|/2, one clamped at 31 within |D| + 32 ||D| - |t||. */
static void test_quantize_q6_k(void **state)
{
    (void)state;
    size_t nb = 8, n = 256 * nb;
    float *x = rand_floats(n, 1.5f), y[256];
    for (size_t i = 0; i < 16; i++)
        x[256 + 16 + i] = 0.0f; /* a zero sub-block */
    uint8_t *q = malloc(210 * nb);
    assert_non_null(q);
    assert_int_equal(tp_quantize_row(TP_TYPE_Q6_K, x, q, n), TP_OK);
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *blk = q + 210 * b;
        oracle_row(TP_TYPE_Q6_K, blk, y, 256);
        for (int s = 0; s < 16; s++) {
            const float *xs = x + 256 * b + 16 * s;
            int arg = 0;
            for (int l = 1; l < 16; l++)
                arg = fabsf(xs[l]) > fabsf(xs[arg]) ? l : arg;
            double t = fabs(xs[arg] / 32.0), D = fabs(f16at(blk + 208) * (double)(int8_t)blk[192 + s]);
            double bound = D + 32.0 * fabs(D - t) + 1e-6;
            for (int l = 0; l < 16; l++)
                if (fabs(y[16 * s + l] - xs[l]) > bound)
                    fail_msg("Q6_K block %zu sub %d elem %d: %.6g vs %.6g", b, s, l, y[16 * s + l], xs[l]);
            assert_true(bound < 2.0 * t + 1e-5); /* the int8 scales stay close to t */
        }
    }
    free(x);
    free(q);
}

/* Q2_K, Q4_K and Q5_K (the min/max choice of docs/quant.md section 4): sub-block j of len
 * elements holds x in [lo, lo + top s] (lo = min(0, min x), s = (max x - lo) / top, m = -lo).
 * With S, Mx the largest s, m of the block, sc_j is the nearest integer to stop s / S against
 * d = f16(S / stop), so D = d sc_j is within d/2 + stop |d - S/stop| of s, and likewise
 * M = dmin mn_j within dmin/2 + stop |dmin - Mx/stop| of m. A quant in range is within D/2
 * of x, one clamped at top within top |s - D| + |M + lo|, one clamped at 0 within |M + lo|. */
static void check_quantize_min(uint32_t type)
{
    const int q2 = type == TP_TYPE_Q2_K, n_sub = q2 ? 16 : 8, len = 256 / n_sub;
    const int stop = q2 ? 15 : 63, top = q2 ? 3 : type == TP_TYPE_Q4_K ? 15 : 31, od = q2 ? 80 : 0;
    const size_t nb = 8, n = 256 * nb, bb = tp_type_block_bytes(type);
    float *x = rand_floats(n, 1.5f), y[256];
    for (size_t i = 0; i < 256; i++) {
        x[256 + i] = 0.25f + fabsf(x[256 + i]); /* all positive: lo = 0 */
        x[512 + i] = -0.25f - fabsf(x[512 + i]); /* all negative */
    }
    for (size_t i = 0; i < 16; i++)
        x[768 + 16 + i] = 0.0f; /* a zero sub-block (Q2_K), half of one (Q4_K, Q5_K) */
    uint8_t *q = malloc(bb * nb);
    assert_non_null(q);
    assert_int_equal(tp_quantize_row(type, x, q, n), TP_OK);
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *blk = q + bb * b;
        oracle_row(type, blk, y, 256);
        double s[16], lo[16], S = 0, Mx = 0;
        for (int j = 0; j < n_sub; j++) {
            const float *xs = x + 256 * b + len * j;
            double hi = xs[0];
            lo[j] = 0;
            for (int l = 0; l < len; l++) {
                lo[j] = fmin(lo[j], xs[l]);
                hi = fmax(hi, xs[l]);
            }
            s[j] = (hi - lo[j]) / top;
            S = fmax(S, s[j]);
            Mx = fmax(Mx, -lo[j]);
        }
        double d = f16at(blk + od), dmin = f16at(blk + od + 2);
        /* the f16 rounding of S / stop and Mx / stop: half a unit in the 11th bit */
        assert_true(fabs(d - S / stop) <= ldexp(S / stop, -11) + 1e-9);
        assert_true(fabs(dmin - Mx / stop) <= ldexp(Mx / stop, -11) + 1e-9);
        for (int j = 0; j < n_sub; j++) {
            int sc, m;
            if (q2) {
                sc = blk[j] % 16;
                m = blk[j] / 16;
            } else {
                scale_min(blk + 4, j, &sc, &m);
            }
            double D = d * sc, M = dmin * m;
            double es = d / 2 + stop * fabs(d - S / stop), em = dmin / 2 + stop * fabs(dmin - Mx / stop);
            if (!(fabs(s[j] - D) <= es + 1e-6) || !(fabs(M + lo[j]) <= em + 1e-6))
                fail_msg("%s block %zu sub %d: scale %.6g for %.6g, min %.6g for %.6g",
                         tp_type_name(type), b, j, D, s[j], M, -lo[j]);
            double bound = fmax(D / 2, top * fabs(s[j] - D) + fabs(M + lo[j])) + 1e-5;
            for (int l = 0; l < len; l++)
                if (fabs(y[len * j + l] - x[256 * b + len * j + l]) > bound)
                    fail_msg("%s block %zu sub %d elem %d: %.6g vs %.6g (bound %.3g)",
                             tp_type_name(type), b, j, l, y[len * j + l],
                             x[256 * b + len * j + l], bound);
        }
    }
    free(x);
    free(q);
}

static void test_quantize_q2_k_q4_k_q5_k(void **state)
{
    (void)state;
    check_quantize_min(TP_TYPE_Q2_K);
    check_quantize_min(TP_TYPE_Q4_K);
    check_quantize_min(TP_TYPE_Q5_K);
}

/* Q3_K: sub-block s of 16 has x in [-4 |t|, 4 |t|] with t = v / -4 (v its signed element of
 * largest magnitude); the 6-bit scales (stored + 32) are nearest(-32 t / T) against
 * d = f16(T / -32) (T the t of largest magnitude), clamped at 31, so D = d (sc - 32) is
 * within |d| + |t| 2^-10 of t. A quant in range is within |D|/2 of x, one clamped (at 3 or
 * -4) within |D| + 4 ||D| - |t||. */
static void test_quantize_q3_k(void **state)
{
    (void)state;
    size_t nb = 8, n = 256 * nb;
    float *x = rand_floats(n, 1.5f), y[256];
    for (size_t i = 0; i < 16; i++)
        x[256 + 16 + i] = 0.0f; /* a zero sub-block */
    for (size_t i = 0; i < 256; i++)
        x[512 + i] = 0.5f + fabsf(x[512 + i]); /* all positive: every scale of one sign */
    uint8_t *q = malloc(110 * nb);
    assert_non_null(q);
    assert_int_equal(tp_quantize_row(TP_TYPE_Q3_K, x, q, n), TP_OK);
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *blk = q + 110 * b;
        oracle_row(TP_TYPE_Q3_K, blk, y, 256);
        double d = f16at(blk + 108);
        for (int s = 0; s < 16; s++) {
            const float *xs = x + 256 * b + 16 * s;
            int arg = 0;
            for (int l = 1; l < 16; l++)
                arg = fabsf(xs[l]) > fabsf(xs[arg]) ? l : arg;
            double t = fabs(xs[arg] / 4.0), D = fabs(d * (double)(q3_scale(blk + 96, s) - 32));
            if (!(fabs(D - t) <= fabs(d) + ldexp(t, -10) + 1e-7))
                fail_msg("Q3_K block %zu sub %d: scale %.6g for %.6g", b, s, D, t);
            double bound = D + 4.0 * fabs(D - t) + 1e-6;
            for (int l = 0; l < 16; l++)
                if (fabs(y[16 * s + l] - xs[l]) > bound)
                    fail_msg("Q3_K block %zu sub %d elem %d: %.6g vs %.6g", b, s, l,
                             y[16 * s + l], xs[l]);
        }
    }
    free(x);
    free(q);
}

/* ---- round trip of representable values ------------------------------------------------- */

/* Stores the quant u (unsigned, as the layout stores it) of element k of a K block; the
 * layouts of docs/quant.md section 3 restated. */
static void put_quant(uint32_t type, uint8_t *b, int k, int u)
{
    int h = k / 128, j = (k % 128) / 32, p = (k % 32) / 16, l = k % 16;
    switch (type) {
    case TP_TYPE_Q2_K:
        b[16 + 32 * h + 16 * p + l] |= (uint8_t)(u << (2 * j));
        break;
    case TP_TYPE_Q3_K:
        b[32 + 32 * h + 16 * p + l] |= (uint8_t)((u & 3) << (2 * j));
        if (u & 4) /* set: the 4 is not subtracted */
            b[k % 32] |= (uint8_t)(1 << (4 * h + j));
        break;
    case TP_TYPE_Q4_K:
    case TP_TYPE_Q5_K: {
        int five = type == TP_TYPE_Q5_K, off = five ? 48 : 16;
        b[off + 32 * (k / 64) + k % 32] |= (uint8_t)((u & 15) << ((k % 64) / 32 ? 4 : 0));
        if (five)
            b[16 + k % 32] |= (uint8_t)((u >> 4) << (k / 32));
        break;
    }
    default: { /* Q6_K: element 128h + 32r + e */
        int r = (k % 128) / 32, e = k % 32;
        b[64 * h + 32 * (r % 2) + e] |= (uint8_t)((u & 15) << (r < 2 ? 0 : 4));
        b[128 + 32 * h + e] |= (uint8_t)((u >> 4) << (2 * r));
    }
    }
}

/* Stores the scale sc (signed for Q3_K and Q6_K) and min mn of sub-block s. */
static void put_scale(uint32_t type, uint8_t *b, int s, int sc, int mn)
{
    switch (type) {
    case TP_TYPE_Q2_K:
        b[s] = (uint8_t)(sc | mn << 4);
        break;
    case TP_TYPE_Q3_K:
        b[96 + s % 8] |= (uint8_t)(((sc + 32) & 15) << (s < 8 ? 0 : 4));
        b[104 + s % 4] |= (uint8_t)(((sc + 32) >> 4) << (2 * (s / 4)));
        break;
    case TP_TYPE_Q4_K:
    case TP_TYPE_Q5_K:
        if (s < 4) {
            b[4 + s] |= (uint8_t)sc;
            b[8 + s] |= (uint8_t)mn;
        } else {
            b[8 + s] |= (uint8_t)((sc & 15) | (mn & 15) << 4);
            b[s] |= (uint8_t)((sc >> 4) << 6);
            b[4 + s] |= (uint8_t)((mn >> 4) << 6);
        }
        break;
    default:
        b[192 + s] = (uint8_t)(int8_t)sc;
    }
}

/* A K block whose values the reference quantizer's choice meets exactly: f16 scales of one
 * binade (2^-8 .. 2^-7, so every value and sum of the block is exact in f32). Symmetric types
 * (Q3_K, Q6_K): one sub-block at the most negative scale, and in every sub-block an element
 * of the lowest quant (-4, -32), its element of largest magnitude. Min types (Q2_K, Q4_K,
 * Q5_K): d, dmin > 0, one sub-block at the top scale and one at the top min, every scale at
 * least 1, and in every sub-block a quant 0 (the minimum, -M) and a quant top (the maximum). */
static void representable_block(uint32_t type, uint8_t *b)
{
    const int sym = type == TP_TYPE_Q3_K || type == TP_TYPE_Q6_K;
    const int n_sub = type == TP_TYPE_Q4_K || type == TP_TYPE_Q5_K ? 8 : 16, len = 256 / n_sub;
    const int top = type == TP_TYPE_Q2_K   ? 3
                    : type == TP_TYPE_Q3_K ? 7
                    : type == TP_TYPE_Q4_K ? 15
                    : type == TP_TYPE_Q5_K ? 31
                                           : 63;
    const int stop = sym ? (type == TP_TYPE_Q3_K ? 32 : 128) : type == TP_TYPE_Q2_K ? 15 : 63;
    const int od = type == TP_TYPE_Q2_K ? 80 : type == TP_TYPE_Q3_K ? 108 : type == TP_TYPE_Q6_K ? 208 : 0;
    memset(b, 0, tp_type_block_bytes(type));
    put16(b + od, (uint16_t)((sym ? (rnd32() & 1) << 15 : 0) | 7 << 10 | (rnd32() & 1023)));
    if (!sym)
        put16(b + od + 2, (uint16_t)(7 << 10 | (rnd32() & 1023)));
    int big = (int)(rnd32() % (unsigned)n_sub), bigm = (int)(rnd32() % (unsigned)n_sub);
    for (int s = 0; s < n_sub; s++) {
        int sc, mn = 0;
        if (sym) {
            sc = s == big ? -stop : -stop + 1 + (int)(rnd32() % (unsigned)(2 * stop - 1));
        } else {
            sc = s == big ? stop : 1 + (int)(rnd32() % (unsigned)stop);
            mn = s == bigm ? stop : (int)(rnd32() % (unsigned)(stop + 1));
        }
        put_scale(type, b, s, sc, mn);
        int p0 = (int)(rnd32() % (unsigned)len), p1 = (p0 + 1 + (int)(rnd32() % (unsigned)(len - 1))) % len;
        for (int l = 0; l < len; l++) {
            int u = l == p0 ? 0 : l == p1 && !sym ? top : (int)(rnd32() % (unsigned)(top + 1));
            put_quant(type, b, len * s + l, u);
        }
    }
}

static void test_quantize_round_trip_k(void **state)
{
    (void)state;
    const uint32_t types[] = {TP_TYPE_Q2_K, TP_TYPE_Q3_K, TP_TYPE_Q4_K, TP_TYPE_Q5_K,
                              TP_TYPE_Q6_K};
    uint8_t blk[210], again[210];
    float x[256], y[256];
    for (size_t t = 0; t < 5; t++)
        for (int rep = 0; rep < 200; rep++) {
            representable_block(types[t], blk);
            oracle_row(types[t], blk, x, 256);
            assert_int_equal(tp_quantize_row(types[t], x, again, 256), TP_OK);
            oracle_row(types[t], again, y, 256);
            for (int k = 0; k < 256; k++)
                if (x[k] != y[k]) /* values: a zero may come back with the other sign */
                    fail_msg("%s rep %d element %d: %.9g came back as %.9g",
                             tp_type_name(types[t]), rep, k, x[k], y[k]);
        }
}

static void test_quantize_refusals(void **state)
{
    (void)state;
    float x[256] = {0};
    uint8_t q[400];
    assert_int_equal(tp_quantize_row(TP_TYPE_Q8_0, x, q, 33), TP_ERR_INVALID);
    assert_int_equal(tp_quantize_row(TP_TYPE_Q8_K, x, q, 256), TP_ERR_INVALID); /* activations only */
    assert_int_equal(tp_quantize_row(40, x, q, 32), TP_ERR_INVALID);
    assert_int_equal(tp_quantize_row(TP_TYPE_Q8_0, NULL, q, 32), TP_ERR_INVALID);
    x[7] = NAN;
    assert_int_equal(tp_quantize_row(TP_TYPE_Q4_0, x, q, 32), TP_ERR_INVALID);
    float y[256];
    assert_int_equal(tp_dequantize_row(TP_TYPE_Q4_K, q, y, 255), TP_ERR_INVALID);
    assert_int_equal(tp_dequantize_row(TP_TYPE_Q8_K, q, y, 256), TP_ERR_INVALID);
    assert_int_equal(tp_dequantize_row(4, q, y, 32), TP_ERR_INVALID);
    assert_int_equal(tp_dequantize_row(TP_TYPE_Q8_0, q, NULL, 32), TP_ERR_INVALID);
    assert_int_equal(tp_dequantize_row(TP_TYPE_Q8_0, NULL, NULL, 0), TP_OK);
}

/* ---- typed kernels ------------------------------------------------------------------------ */

/* The offsets of a block's min fields (zeroed, they leave y = a * q: the part of an element
 * that meets the rounded activations); -1 ends the list. */
static const int *min_fields(uint32_t type)
{
    static const int two[] = {2, -1}, q2k[] = {82, -1}, none[] = {-1};
    switch (type) {
    case TP_TYPE_Q4_1: case TP_TYPE_Q5_1: case TP_TYPE_Q4_K: case TP_TYPE_Q5_K: return two;
    case TP_TYPE_Q2_K: return q2k;
    default: return none;
    }
}

/* |a * q| of every element of a row: the element with its block's min fields set to 0. */
static void scaled_part(uint32_t type, const uint8_t *row, float *out, size_t n)
{
    size_t be = tp_type_block_elems(type), bb = tp_type_block_bytes(type);
    uint8_t blk[256];
    for (size_t b = 0; b < n / be; b++) {
        memcpy(blk, row + b * bb, bb);
        for (const int *f = min_fields(type); *f >= 0; f++)
            put16(blk + *f, 0);
        for (size_t k = 0; k < be; k++)
            out[b * be + k] = fabsf(elem(type, blk, (int)k));
    }
}

/* The bound of docs/quant.md section 5 on one output of a block type: each 32 token values
 * are rounded to q * amax / 32767 (an error of at most amax / 65534 each), which meets the
 * a * q part of each weight; f32 rounding adds a small multiple of 2^-24 of the magnitude. */
static double block_bound(const float *aq, const float *w, const float *x, size_t n_in)
{
    double err = 0, mag = 0;
    for (size_t g = 0; g < n_in / 32; g++) {
        double amax = 0;
        for (size_t i = 32 * g; i < 32 * g + 32; i++)
            amax = fmax(amax, fabs(x[i]));
        for (size_t i = 32 * g; i < 32 * g + 32; i++) {
            err += aq[i] * amax / 65534.0 * (1 + 0x1p-10);
            mag += (aq[i] + fabs(w[i] - aq[i]) + fabs(w[i])) * fabs(x[i]);
        }
    }
    return err + 0x1p-17 * mag;
}

/* Checks the typed mat-mul of one type in the form in use: against a double reference on the
 * weights dequantized by the formulas here (F32 / F16 / BF16: to 1e-5 of the magnitude, and
 * bit for bit against tp_kernel_mul_mat on those f32 weights; block types: within the
 * activation rounding of block_bound), and bit for bit across 1, 2 and 3 threads. pad shifts
 * W off its alignment. */
static void check_matmul(uint32_t type, size_t n_in, size_t n_out, size_t n_tok, int bias,
                         size_t pad)
{
    size_t be = tp_type_block_elems(type), row_blocks = n_in / be;
    int blocks = be > 1;
    uint8_t *buf = rand_blocks(type, row_blocks * n_out, pad), *W = buf + pad;
    size_t row_bytes = row_blocks * tp_type_block_bytes(type);
    float *Wf = malloc(n_in * n_out * sizeof *Wf), *x = rand_floats(n_in * n_tok, 1.0f);
    float *aq = malloc(n_in * n_out * sizeof *aq);
    float *b = bias ? rand_floats(n_out, 1.0f) : NULL;
    float *y[3], *yf = malloc(n_out * n_tok * sizeof *yf);
    assert_non_null(Wf);
    assert_non_null(aq);
    assert_non_null(yf);
    for (size_t o = 0; o < n_out; o++) {
        oracle_row(type, W + o * row_bytes, Wf + o * n_in, n_in);
        if (blocks)
            scaled_part(type, W + o * row_bytes, aq + o * n_in, n_in);
    }
    for (int k = 0; k < 3; k++) {
        y[k] = malloc(n_out * n_tok * sizeof(float));
        assert_non_null(y[k]);
        assert_int_equal(tp_kernel_mul_mat_typed(type, W, b, x, n_in, n_out, n_tok, y[k], k + 1),
                         TP_OK);
    }
    assert_int_equal(tp_kernel_mul_mat(Wf, b, x, n_in, n_out, n_tok, yf, 1), TP_OK);
    for (size_t t = 0; t < n_tok; t++)
        for (size_t o = 0; o < n_out; o++) {
            const float *wr = Wf + o * n_in, *xr = x + t * n_in;
            double ref = b ? b[o] : 0, mag = b ? fabs(b[o]) : 0;
            for (size_t i = 0; i < n_in; i++) {
                ref += (double)wr[i] * xr[i];
                mag += fabs((double)wr[i] * xr[i]);
            }
            double tol = blocks ? block_bound(aq + o * n_in, wr, xr, n_in) + 0x1p-20 * mag
                                : 1e-5 * mag + 1e-30;
            float got = y[0][t * n_out + o];
            if (!(fabs(got - ref) <= tol))
                fail_msg("%s (%s) y[%zu][%zu] = %.9g, reference %.9g, bound %.3g",
                         tp_type_name(type), tp_kernels_isa_name(tp_kernels_isa()), t, o, got,
                         ref, tol);
        }
    if (!blocks)
        assert_memory_equal(y[0], yf, n_out * n_tok * sizeof(float));
    assert_memory_equal(y[0], y[1], n_out * n_tok * sizeof(float));
    assert_memory_equal(y[0], y[2], n_out * n_tok * sizeof(float));
    for (int k = 0; k < 3; k++)
        free(y[k]);
    free(buf);
    free(Wf);
    free(aq);
    free(x);
    free(b);
    free(yf);
}

static void test_matmul_every_type(void **state)
{
    (void)state;
    /* 512 x 48 x 43 is above the size at which the kernels start threads */
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
        for (size_t t = 0; t < N_DEQ; t++)
            check_matmul(k_deq_types[t], 512, 48, 43, (int)(t % 2), 0);
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

/* Float rows longer than one slice, in every form: each token's outputs are the same bits
 * whether the token is multiplied alone (decode) or with up to 14 others (the row dot
 * products), and the same bits in any call of TP_FGEMM_MIN_TOKENS tokens or more (the packed
 * product of prefill) wherever the token lies in it. */
static void test_matmul_float_token_count(void **state)
{
    (void)state;
    const size_t n_in = 2085, n_out = 11, n_tok = 70, few = TP_FGEMM_MIN_TOKENS - 1;
    const uint32_t types[] = {TP_TYPE_F32, TP_TYPE_F16, TP_TYPE_BF16};
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
        for (size_t ti = 0; ti < 3; ti++) {
            uint8_t *W = rand_blocks(types[ti], n_in * n_out, 0);
            float *x = rand_floats(n_in * n_tok, 1.0f), *b = rand_floats(n_out, 1.0f);
            float *y = malloc(n_out * n_tok * sizeof *y), *yf = malloc(n_out * few * sizeof *yf);
            float *yg = malloc(n_out * TP_FGEMM_MIN_TOKENS * sizeof *yg), one[11];
            assert_non_null(y);
            assert_non_null(yf);
            assert_non_null(yg);
            assert_int_equal(tp_kernel_mul_mat_typed(types[ti], W, b, x, n_in, n_out, n_tok, y, 2),
                             TP_OK);
            assert_int_equal(tp_kernel_mul_mat_typed(types[ti], W, b, x, n_in, n_out, few, yf, 2),
                             TP_OK);
            for (size_t t = 0; t < few; t += 4) {
                assert_int_equal(tp_kernel_mul_mat_typed(types[ti], W, b, x + t * n_in, n_in,
                                                         n_out, 1, one, 1),
                                 TP_OK);
                assert_memory_equal(one, yf + t * n_out, sizeof one);
            }
            for (size_t t = 0; t + TP_FGEMM_MIN_TOKENS <= n_tok; t += 13) {
                assert_int_equal(tp_kernel_mul_mat_typed(types[ti], W, b, x + t * n_in, n_in,
                                                         n_out, TP_FGEMM_MIN_TOKENS, yg, 1),
                                 TP_OK);
                assert_memory_equal(yg, y + t * n_out, n_out * TP_FGEMM_MIN_TOKENS * sizeof *yg);
            }
            free(W);
            free(x);
            free(b);
            free(y);
            free(yf);
            free(yg);
        }
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

/* Block types: a token multiplied alone (decode: the mat-vec entry over a thread's rows)
 * gives the same bits as the same token inside a call of several tokens (groups of up to
 * four per row), in every form, for whole octets and rows with leftover blocks, with and
 * without a bias, on one and two threads. */
static void test_matmul_decode_equals_batch(void **state)
{
    (void)state;
    static const size_t shapes[][2] = {{896, 29}, {2048, 7}, {256, 1}, {544, 3}};
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
        for (size_t ti = 3; ti < N_DEQ; ti++)
            for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
                uint32_t type = k_deq_types[ti];
                /* 4 tokens: from 5 on the AVX-512 form runs the prefill tiles, which add in another
                 * order (docs/quant.md section 5, "Prefill tiles") */
                size_t n_in = shapes[sh][0], n_out = shapes[sh][1], n_tok = 4;
                if (n_in % tp_type_block_elems(type))
                    continue;
                uint8_t *W = rand_blocks(type, n_out * n_in / tp_type_block_elems(type), 0);
                float *x = rand_floats(n_in * n_tok, 3.0f);
                float *b = sh % 2 ? rand_floats(n_out, 1.0f) : NULL;
                float *y = malloc(n_out * n_tok * sizeof *y), *one = malloc(n_out * sizeof *one);
                assert_non_null(y);
                assert_non_null(one);
                assert_int_equal(tp_kernel_mul_mat_typed(type, W, b, x, n_in, n_out, n_tok, y, 1),
                                 TP_OK);
                for (size_t t = 0; t < n_tok; t++) {
                    assert_int_equal(tp_kernel_mul_mat_typed(type, W, b, x + t * n_in, n_in, n_out,
                                                             1, one, 1 + (int)(t % 2)),
                                     TP_OK);
                    if (memcmp(one, y + t * n_out, n_out * sizeof *one) != 0)
                        fail_msg("%s %s %zux%zu token %zu: alone differs from the batch",
                                 tp_kernels_isa_name(isa), tp_type_name(type), n_out, n_in, t);
                }
                free(W);
                free(x);
                free(b);
                free(y);
                free(one);
            }
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

/* y of one type, form and thread count into a new array. */
static float *float_matmul(int isa, uint32_t type, const uint8_t *W, const float *b,
                           const float *x, size_t n_in, size_t n_out, size_t n_tok, int threads)
{
    float *y = malloc(n_out * n_tok * sizeof *y);
    assert_non_null(y);
    assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
    assert_int_equal(tp_kernel_mul_mat_typed(type, W, b, x, n_in, n_out, n_tok, y, threads),
                     TP_OK);
    return y;
}

/* Float rows in decode shapes, in every form: rows shorter than a vector, with a partial last
 * chunk, of exactly one slice, and longer than one slice (which the AVX-512 form reads one row
 * per tile); row counts that are not multiples of four, above the size at which two threads
 * start. Every token of a group of one to four (each position, not only the first) gives alone
 * the same bits as inside the group, on one and two threads; every output lies within 1e-5 of
 * the magnitude of the double-precision sum and within 2e-5 of the portable form's. */
static void test_matmul_float_rows_decode(void **state)
{
    (void)state;
    static const size_t shapes[][2] = {{2085, 37}, {1040, 67}, {1024, 65}, {896, 75},
                                       {4864, 14}, {37, 3},    {5, 2}};
    const uint32_t types[] = {TP_TYPE_F32, TP_TYPE_F16, TP_TYPE_BF16};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (size_t ti = 0; ti < 3; ti++) {
            size_t n_in = shapes[sh][0], n_out = shapes[sh][1], n_tok = 1 + (sh + 1) % 4;
            uint8_t *W = rand_blocks(types[ti], n_in * n_out, 0);
            float *Wf = malloc(n_in * n_out * sizeof *Wf), *x = rand_floats(n_in * 4, 1.0f);
            float *b = sh % 2 ? rand_floats(n_out, 1.0f) : NULL;
            assert_non_null(Wf);
            for (size_t o = 0; o < n_out; o++)
                oracle_row(types[ti], W + o * n_in * tp_type_block_bytes(types[ti]),
                           Wf + o * n_in, n_in);
            float *yp = float_matmul(TP_ISA_PORTABLE, types[ti], W, b, x, n_in, n_out, n_tok, 1);
            for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
                if (!tp_kernels_isa_supported(isa))
                    continue;
                float *y = float_matmul(isa, types[ti], W, b, x, n_in, n_out, n_tok, 1);
                for (size_t t = 0; t < n_tok; t++) {
                    float *one = float_matmul(isa, types[ti], W, b, x + t * n_in, n_in, n_out, 1,
                                              1 + (int)(t % 2));
                    if (memcmp(one, y + t * n_out, n_out * sizeof *one) != 0)
                        fail_msg("%s %s %zux%zu token %zu of %zu: alone differs from the group",
                                 tp_kernels_isa_name(isa), tp_type_name(types[ti]), n_out, n_in,
                                 t, n_tok);
                    free(one);
                    for (size_t o = 0; o < n_out; o++) {
                        double ref = b ? b[o] : 0, mag = b ? fabs(b[o]) : 0;
                        for (size_t i = 0; i < n_in; i++) {
                            double p = (double)Wf[o * n_in + i] * x[t * n_in + i];
                            ref += p;
                            mag += fabs(p);
                        }
                        float got = y[t * n_out + o], port = yp[t * n_out + o];
                        if (!(fabs(got - ref) <= 1e-5 * mag + 1e-30) ||
                            !(fabs((double)got - port) <= 2e-5 * mag + 1e-30))
                            fail_msg("%s %s %zux%zu y[%zu][%zu] = %.9g, double %.9g, portable "
                                     "%.9g",
                                     tp_kernels_isa_name(isa), tp_type_name(types[ti]), n_out,
                                     n_in, t, o, got, ref, port);
                    }
                }
                free(y);
            }
            free(yp);
            free(W);
            free(Wf);
            free(x);
            free(b);
        }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

static void test_matmul_f32_shapes(void **state)
{
    (void)state;
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
        check_matmul(TP_TYPE_F32, 515, 40, 70, 1, 0); /* dot tail, two token blocks */
        check_matmul(TP_TYPE_F32, 515, 40, 70, 0, 1); /* misaligned rows */
        check_matmul(TP_TYPE_F16, 13, 7, 5, 1, 1);
        /* rows longer than one slice of 1,024 with a partial vector at the end, two token
         * blocks of 64 */
        check_matmul(TP_TYPE_F32, 2085, 9, 67, 1, 1);
        check_matmul(TP_TYPE_F16, 1061, 5, 66, 0, 1);
        check_matmul(TP_TYPE_BF16, 1037, 3, 3, 1, 0);
        check_matmul(TP_TYPE_BF16, 1, 1, 1, 0, 0);
        check_matmul(TP_TYPE_Q8_0, 32, 3, 9, 1, 3);
        check_matmul(TP_TYPE_Q6_K, 256, 1, 1, 0, 1); /* a single row and token */
        check_matmul(TP_TYPE_Q4_K, 768, 5, 2, 1, 0);
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

/* y of the typed mat-mul in form isa (NULL-free: asserts). */
static float *run_form(int isa, uint32_t type, const uint8_t *W, const float *b, const float *x,
                       size_t n_in, size_t n_out, size_t n_tok, int threads)
{
    float *y = malloc(n_out * n_tok * sizeof *y);
    assert_non_null(y);
    assert_int_equal(tp_kernels_set_isa(isa), TP_OK);
    assert_int_equal(tp_kernel_mul_mat_typed(type, W, b, x, n_in, n_out, n_tok, y, threads), TP_OK);
    return y;
}

/* Every vector form against the portable form on random blocks (rows of whole groups of
 * eight blocks and rows with leftover blocks): within the f32 rounding of
 * the magnitude (the integer block sums are the same; only the order of f32 additions
 * differs), and bit for bit across thread counts within each form. Odd row counts, a single
 * row, a single token and token counts that leave every remainder of the groups of four. */
static void test_forms_match_portable(void **state)
{
    (void)state;
    static const size_t shapes[][3] = {{512, 37, 1}, {256, 1, 7}, {768, 13, 6}, {512, 5, 67},
                                       {1024, 3, 2}, {256, 64, 3}, {352, 9, 5}, {896, 4, 1},
                                       {1061, 6, 5}, {2080, 5, 65}};
    int vector_forms = 0;
    for (int isa = 1; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        vector_forms++;
        for (size_t t = 0; t < N_DEQ; t++)
            for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
                uint32_t type = k_deq_types[t];
                size_t n_in = shapes[sh][0], n_out = shapes[sh][1], n_tok = shapes[sh][2];
                if (n_in % tp_type_block_elems(type)) /* rows of 32-blocks not octets of 256 */
                    continue;
                size_t row_bytes = n_in / tp_type_block_elems(type) * tp_type_block_bytes(type);
                uint8_t *W = rand_blocks(type, n_out * n_in / tp_type_block_elems(type), 0);
                float *x = rand_floats(n_in * n_tok, 2.0f), *Wf = malloc(n_in * sizeof *Wf);
                float *b = sh % 2 ? rand_floats(n_out, 1.0f) : NULL;
                assert_non_null(Wf);
                float *yp = run_form(TP_ISA_PORTABLE, type, W, b, x, n_in, n_out, n_tok, 1);
                float *yv = run_form(isa, type, W, b, x, n_in, n_out, n_tok, 1);
                float *yv2 = run_form(isa, type, W, b, x, n_in, n_out, n_tok, 2);
                float *yv3 = run_form(isa, type, W, b, x, n_in, n_out, n_tok, 3);
                for (size_t o = 0; o < n_out; o++) {
                    oracle_row(type, W + o * row_bytes, Wf, n_in);
                    for (size_t k = 0; k < n_tok; k++) {
                        double mag = b ? fabs(b[o]) : 0;
                        for (size_t i = 0; i < n_in; i++)
                            mag += fabs((double)Wf[i] * x[k * n_in + i]);
                        size_t at = k * n_out + o;
                        /* min types: the a * q and min parts may each exceed the sum */
                        double tol = 0x1p-16 * mag * (min_fields(type)[0] >= 0 ? 64 : 1);
                        if (!(fabs((double)yv[at] - yp[at]) <= tol))
                            fail_msg("%s %s %zux%zux%zu y[%zu][%zu]: %.9g, portable %.9g",
                                     tp_kernels_isa_name(isa), tp_type_name(type), n_out, n_in,
                                     n_tok, k, o, yv[at], yp[at]);
                    }
                }
                assert_memory_equal(yv, yv2, n_out * n_tok * sizeof(float));
                assert_memory_equal(yv, yv3, n_out * n_tok * sizeof(float));
                free(yp);
                free(yv);
                free(yv2);
                free(yv3);
                free(W);
                free(x);
                free(Wf);
                free(b);
            }
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
    print_message("vector forms compared with the portable one: %d\n", vector_forms);
}

/* The activation rounding of the row products (docs/quant.md section 5, "Block types"), with
 * rint in double: d = max|x| / 32767 per group of 32, q = nearest(x * (32767 / max|x|)) with
 * ties to even, clamped to +-32767. Q8_0 rows that each pick one element (quant 1, scale 1,
 * the row's other block all zero) give d * q exactly, so every q shows: a group whose
 * maximum is 32767 (the factor is then exactly 1) holds halves that tie, and random groups
 * the rest. One to three tokens, every form (from TP_QGEMM_MIN_TOKENS the tiles round on
 * their own, tests/test_qgemm.c). */
static void test_activation_rounding_ties_to_even(void **state)
{
    (void)state;
    enum { N = 64, ROW = 2 * 34, TOK = 3 };
    static uint8_t W[N * ROW];
    memset(W, 0, sizeof W);
    for (size_t r = 0; r < N; r++) {
        uint8_t *blk = W + r * ROW + (r / 32) * 34;
        put16(blk, 0x3C00); /* d = 1 */
        blk[2 + r % 32] = 1;
    }
    float x[TOK * N];
    for (size_t i = 0; i < TOK * N; i++)
        x[i] = frand() * (i < N ? 3.0f : 3e-3f);
    x[0] = 32767.0f; /* token 0, group 0: factor 1, ties below */
    x[1] = 32766.5f;
    x[2] = -32766.5f;
    for (int j = 3; j < 32; j++)
        x[j] = (float)(j - 17) + 0.5f;
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        for (size_t n_tok = 1; n_tok <= TOK; n_tok++) {
            float *y = run_form(isa, TP_TYPE_Q8_0, W, NULL, x, N, N, n_tok, 1);
            for (size_t k = 0; k < n_tok; k++)
                for (size_t g = 0; g < N / 32; g++) {
                    const float *v = x + k * N + 32 * g;
                    float amax = 0.0f;
                    for (int j = 0; j < 32; j++)
                        amax = fabsf(v[j]) > amax ? fabsf(v[j]) : amax;
                    const float id = 32767.0f / amax, d = amax / 32767.0f;
                    for (int j = 0; j < 32; j++) {
                        const float prod = v[j] * id;
                        double q = rint((double)prod);
                        q = q > 32767 ? 32767 : q < -32767 ? -32767 : q;
                        const float want = (float)q * d;
                        const size_t r = 32 * g + (size_t)j;
                        if (!(y[k * N + r] == want))
                            fail_msg("%s, %zu tokens: token %zu element %zu (%.9g): %.9g, "
                                     "want %.9g", tp_kernels_isa_name(isa), n_tok, k, r,
                                     (double)v[j], (double)y[k * N + r], (double)want);
                    }
                }
            free(y);
        }
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

/* The vector forms against the portable one where a row has one live scale: every block's
 * f16 scales (and mins) zero but one block's, and for Q6_K all but one of that block's 16
 * sub-block scales. Then the forms add the same few f32 terms and agree to a few units of
 * 2^-24 of the row's magnitude, far inside the activation rounding, so an integer sum that
 * is off by one group sum of q (the offsets of Q4_0, Q5_0 and Q6_K taken from
 * tp_qdot_group_sums) shows. Tokens 1 (decode) and 3 (rows of several tokens). */
static void test_forms_match_portable_one_live_scale(void **state)
{
    (void)state;
    static const uint32_t types[] = {TP_TYPE_Q4_0, TP_TYPE_Q4_1, TP_TYPE_Q5_0, TP_TYPE_Q5_1,
                                     TP_TYPE_Q8_0, TP_TYPE_Q6_K};
    const size_t n_in = 2048, n_out = 9;
    for (int isa = 1; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        for (size_t t = 0; t < sizeof types / sizeof *types; t++)
            for (size_t n_tok = 1; n_tok <= 3; n_tok += 2) {
                uint32_t type = types[t];
                size_t be = tp_type_block_elems(type), bb = tp_type_block_bytes(type);
                size_t nb = n_in / be, row_bytes = nb * bb;
                uint8_t *W = rand_blocks(type, n_out * nb, 0);
                for (size_t o = 0; o < n_out; o++) {
                    size_t live = (o * 7 + 3) % nb;
                    for (size_t i = 0; i < nb; i++)
                        for (const int *f = scale_fields(type); *f >= 0 && i != live; f++)
                            put16(W + o * row_bytes + i * bb + *f, 0);
                    for (int sb = 0; type == TP_TYPE_Q6_K && sb < 16; sb++)
                        if (sb != (int)(o % 16)) /* scales[16] at byte 192 */
                            W[o * row_bytes + live * bb + 192 + (size_t)sb] = 0;
                }
                float *x = rand_floats(n_in * n_tok, 2.0f), *Wf = malloc(n_in * sizeof *Wf);
                assert_non_null(Wf);
                float *yp = run_form(TP_ISA_PORTABLE, type, W, NULL, x, n_in, n_out, n_tok, 1);
                float *yv = run_form(isa, type, W, NULL, x, n_in, n_out, n_tok, 1);
                for (size_t o = 0; o < n_out; o++) {
                    oracle_row(type, W + o * row_bytes, Wf, n_in);
                    for (size_t k = 0; k < n_tok; k++) {
                        double mag = 0;
                        for (size_t i = 0; i < n_in; i++)
                            mag += fabs((double)Wf[i] * x[k * n_in + i]);
                        size_t at = k * n_out + o;
                        if (!(fabs((double)yv[at] - yp[at]) <= 0x1p-21 * mag))
                            fail_msg("%s %s y[%zu][%zu]: %.9g, portable %.9g (magnitude %g)",
                                     tp_kernels_isa_name(isa), tp_type_name(type), k, o,
                                     yv[at], yp[at], mag);
                    }
                }
                free(yp);
                free(yv);
                free(W);
                free(x);
                free(Wf);
            }
    }
    assert_int_equal(tp_kernels_set_isa(-1), TP_OK);
}

static void test_matmul_refusals(void **state)
{
    (void)state;
    uint8_t W[34 * 4] = {0};
    float x[64] = {0}, y[8];
    for (int i = 0; i < 8; i++)
        y[i] = 42.0f;
    assert_int_equal(tp_kernel_mul_mat_typed(TP_TYPE_Q8_0, W, NULL, x, 33, 2, 1, y, 1), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_mul_mat_typed(40, W, NULL, x, 32, 2, 1, y, 1), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_mul_mat_typed(4, W, NULL, x, 32, 2, 1, y, 1), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_mul_mat_typed(TP_TYPE_Q8_K, W, NULL, x, 256, 1, 1, y, 1), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_mul_mat_typed(TP_TYPE_I8, W, NULL, x, 32, 2, 1, y, 1), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_mul_mat_typed(TP_TYPE_Q8_0, NULL, NULL, x, 32, 2, 1, y, 1), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_mul_mat_typed(TP_TYPE_Q8_0, W, NULL, NULL, 32, 2, 1, y, 1), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_mul_mat_typed(TP_TYPE_Q8_0, W, NULL, x, 0, 2, 1, y, 1), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_mul_mat_typed(TP_TYPE_F32, W, NULL, x, SIZE_MAX / 2, 4, 1, y, 1),
                     TP_ERR_OVERFLOW);
    for (int i = 0; i < 8; i++)
        assert_true(y[i] == 42.0f);
    float ids[3], out[3 * 64];
    uint32_t idv[3] = {1, 0, 4};
    memcpy(ids, idv, sizeof idv);
    for (int i = 0; i < 3 * 64; i++)
        out[i] = 42.0f;
    assert_int_equal(tp_kernel_get_rows_typed(TP_TYPE_Q8_0, W, 4, 32, ids, 3, out), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_get_rows_typed(TP_TYPE_Q8_0, W, 4, 31, ids, 2, out), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_get_rows_typed(TP_TYPE_Q8_1, W, 4, 32, ids, 2, out), TP_ERR_INVALID);
    assert_int_equal(tp_kernel_get_rows_typed(TP_TYPE_Q8_0, NULL, 4, 32, ids, 2, out), TP_ERR_INVALID);
    for (int i = 0; i < 3 * 64; i++)
        assert_true(out[i] == 42.0f);
}

static void test_get_rows_every_type(void **state)
{
    (void)state;
    for (size_t t = 0; t < N_DEQ; t++) {
        uint32_t type = k_deq_types[t];
        size_t be = tp_type_block_elems(type), d = be == 1 ? 24 : 2 * be, n_rows = 9;
        size_t row_bytes = d / be * tp_type_block_bytes(type);
        uint8_t *table = rand_blocks(type, d / be * n_rows, 0);
        uint32_t idv[5] = {3, 0, 8, 3, 5};
        float ids[5], *out = malloc(5 * d * sizeof *out), *want = malloc(d * sizeof *want);
        assert_non_null(out);
        assert_non_null(want);
        memcpy(ids, idv, sizeof idv);
        assert_int_equal(tp_kernel_get_rows_typed(type, table, n_rows, d, ids, 5, out), TP_OK);
        for (int r = 0; r < 5; r++) {
            oracle_row(type, table + idv[r] * row_bytes, want, d);
            assert_memory_equal(out + r * d, want, d * sizeof *want);
        }
        free(table);
        free(out);
        free(want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_table),
        cmocka_unit_test(test_f16_decode_all),
        cmocka_unit_test(test_f16_row_all),
        cmocka_unit_test(test_f16_encode_sweep),
        cmocka_unit_test(test_bf16_sweep),
        cmocka_unit_test(test_dequantize_formulas),
        cmocka_unit_test(test_q4_k_hand_block),
        cmocka_unit_test(test_quantize_plain),
        cmocka_unit_test(test_quantize_q8_0),
        cmocka_unit_test(test_quantize_q4_0),
        cmocka_unit_test(test_quantize_q4_k),
        cmocka_unit_test(test_quantize_q4_1_q5_0_q5_1),
        cmocka_unit_test(test_quantize_q6_k),
        cmocka_unit_test(test_quantize_q2_k_q4_k_q5_k),
        cmocka_unit_test(test_quantize_q3_k),
        cmocka_unit_test(test_quantize_round_trip_k),
        cmocka_unit_test(test_quantize_refusals),
        cmocka_unit_test(test_matmul_every_type),
        cmocka_unit_test(test_matmul_f32_shapes),
        cmocka_unit_test(test_matmul_float_token_count),
        cmocka_unit_test(test_matmul_decode_equals_batch),
        cmocka_unit_test(test_matmul_float_rows_decode),
        cmocka_unit_test(test_forms_match_portable),
        cmocka_unit_test(test_forms_match_portable_one_live_scale),
        cmocka_unit_test(test_activation_rounding_ties_to_even),
        cmocka_unit_test(test_matmul_refusals),
        cmocka_unit_test(test_get_rows_every_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
