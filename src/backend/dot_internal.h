/* Internal: f32 dot products with one fixed summation order (eight lanes, a fixed lane
 * reduction, then the tail). Attention (kernels.c) uses dot1; the mat-muls now go through
 * backend/qdot.h, whose portable F32/F16/BF16 form keeps this order, and bench_qmatmul keeps
 * dot_tokens as the method it compares against. */
#ifndef TP_BACKEND_DOT_INTERNAL_H
#define TP_BACKEND_DOT_INTERNAL_H

#include <stddef.h>
#include <string.h>

/* ---- dot products with one fixed summation order ---------------------------------------
 * Eight independent lanes over the blocks of 8, a fixed pairwise combination of the lanes,
 * then the tail in index order. dot4 computes four dot products that each follow exactly
 * the same order as dot1, so grouping tokens never changes a bit. */

static inline float lanes_sum(const float a[8])
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

#if defined(__GNUC__)
/* GCC vectors hold lanes 0-3 and 4-7; lane-wise vector arithmetic is the same float
 * arithmetic as the scalar version below, only kept in registers. */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f load4(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float vsum(v4f lo, v4f hi)
{
    float a[8];
    memcpy(a, &lo, sizeof lo);
    memcpy(a + 4, &hi, sizeof hi);
    return lanes_sum(a);
}

static inline float dot1(const float *restrict w, const float *restrict x, size_t n)
{
    v4f lo = {0, 0, 0, 0}, hi = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        lo += load4(w + i) * load4(x + i);
        hi += load4(w + i + 4) * load4(x + i + 4);
    }
    float s = vsum(lo, hi);
    for (; i < n; i++)
        s += w[i] * x[i];
    return s;
}

static inline void dot4(const float *restrict w, const float *restrict x0, const float *restrict x1,
                 const float *restrict x2, const float *restrict x3, size_t n, float out[4])
{
    v4f l0 = {0, 0, 0, 0}, h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v4f wl = load4(w + i), wh = load4(w + i + 4);
        l0 += wl * load4(x0 + i);
        h0 += wh * load4(x0 + i + 4);
        l1 += wl * load4(x1 + i);
        h1 += wh * load4(x1 + i + 4);
        l2 += wl * load4(x2 + i);
        h2 += wh * load4(x2 + i + 4);
        l3 += wl * load4(x3 + i);
        h3 += wh * load4(x3 + i + 4);
    }
    float s0 = vsum(l0, h0), s1 = vsum(l1, h1), s2 = vsum(l2, h2), s3 = vsum(l3, h3);
    for (; i < n; i++) {
        s0 += w[i] * x0[i];
        s1 += w[i] * x1[i];
        s2 += w[i] * x2[i];
        s3 += w[i] * x3[i];
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}
#else
static inline float dot1(const float *restrict w, const float *restrict x, size_t n)
{
    float a[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            a[l] += w[i + l] * x[i + l];
    float s = lanes_sum(a);
    for (; i < n; i++)
        s += w[i] * x[i];
    return s;
}

static inline void dot4(const float *restrict w, const float *restrict x0, const float *restrict x1,
                 const float *restrict x2, const float *restrict x3, size_t n, float out[4])
{
    out[0] = dot1(w, x0, n);
    out[1] = dot1(w, x1, n);
    out[2] = dot1(w, x2, n);
    out[3] = dot1(w, x3, n);
}
#endif

/* ---- one weight row against a block of token rows ---------------------------------------
 * Both mat-muls walk x in blocks of TP_DOT_TOKEN_BLOCK token rows, so a slab of x stays hot
 * while the weight rows stream through, and give every weight row to dot_tokens. */
#define TP_DOT_TOKEN_BLOCK 64

/* y[t][r] = w . x[t] (+ b[r]) for t0 <= t < t1 (x rows n_in wide, y rows n_out wide): four
 * tokens at a time, then one at a time; b may be NULL. */
static inline void dot_tokens(const float *w, const float *x, const float *b, size_t r,
                              size_t t0, size_t t1, size_t n_in, size_t n_out, float *y)
{
    size_t t = t0;
    for (; t + 4 <= t1; t += 4) {
        const float *x0 = x + t * n_in;
        float s[4];
        dot4(w, x0, x0 + n_in, x0 + 2 * n_in, x0 + 3 * n_in, n_in, s);
        for (size_t k = 0; k < 4; k++)
            y[(t + k) * n_out + r] = b ? s[k] + b[r] : s[k];
    }
    for (; t < t1; t++) {
        float s = dot1(w, x + t * n_in, n_in);
        y[t * n_out + r] = b ? s + b[r] : s;
    }
}

#endif
