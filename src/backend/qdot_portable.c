/* The portable form of the row dot products (backend/qdot.h), the activation rounding, and
 * the choice of form. Every vector form is tested against this one. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/dot_internal.h"
#include "backend/qdot.h"
#include "backend/quant_blocks.h"
#include "backend/quant_internal.h"
#include "tensorplan/kernels.h"

/* ---- activations --------------------------------------------------------------------------- */

/* nearest(y), ties to even, for |y| < 2^22: y + 1.5 * 2^23 lies in [2^23, 2^24), where the
 * spacing of floats is 1, so the addition rounds y to an integer (in the default rounding
 * mode, as lrintf) and the subtraction is exact. Unlike a call of lrintf per element (which
 * may set errno, so it is not inlined), the loop below vectorises. */
static inline float round_nearest(float y)
{
    const float c = 12582912.0f;
    return (y + c) - c;
}

static void quantize_group(const float *v, int16_t *q, float *d, float *s)
{
    float amax = 0.0f;
    int finite = 1;
    for (int j = 0; j < TP_QDOT_GROUP; j++) {
        float a = fabsf(v[j]);
        finite &= a <= FLT_MAX; /* false for infinities and NaN */
        amax = a > amax ? a : amax;
    }
    float id = amax > 0.0f ? 32767.0f / amax : 0.0f;
    if (!finite || !isfinite(id)) { /* NaN/inf poison the group; a tiny one rounds to 0 */
        memset(q, 0, TP_QDOT_GROUP * sizeof *q);
        *d = finite ? 0.0f : NAN;
        s[0] = s[1] = finite ? 0.0f : NAN;
        return;
    }
    *d = amax / 32767.0f;
    for (int j = 0; j < TP_QDOT_GROUP; j++) { /* |v id| <= 32767 (1 + 2^-23) */
        float r = round_nearest(v[j] * id);
        q[j] = (int16_t)(r > 32767.0f ? 32767.0f : r < -32767.0f ? -32767.0f : r);
    }
    for (int h = 0; h < 2; h++) {
        double sum = 0.0;
        for (int j = 0; j < 16; j++)
            sum += (double)v[16 * h + j];
        s[h] = (float)sum;
    }
}

void tp_qdot_quantize(const float *x, size_t n, size_t n_tok, int16_t *q, float *d, float *s)
{
    size_t groups = n / TP_QDOT_GROUP;
    for (size_t t = 0; t < n_tok; t++)
        for (size_t g = 0; g < groups; g++) {
            size_t i = t * groups + g;
            quantize_group(x + i * TP_QDOT_GROUP, q + i * TP_QDOT_GROUP, d + i, s + 2 * i);
        }
}

void tp_qdot_group_sums(unsigned needs, const int16_t *q, const float *s, size_t n, size_t n_tok,
                        int32_t *qsum, float *s32, int32_t *qsum16, int8_t *qhi, uint8_t *qlo)
{
    if (!(needs & (TP_XQ_SUMS | TP_XQ_PLANES)))
        return;
    const int planes = (needs & TP_XQ_PLANES) != 0;
    size_t groups = n_tok * (n / TP_QDOT_GROUP);
    for (size_t g = 0; g < groups; g++) {
        const int16_t *v = q + g * TP_QDOT_GROUP;
        int32_t half[2];
        for (int h = 0; h < 2; h++) { /* one loop per half: the compiler vectorises it */
            int32_t sum = 0;
            for (int j = 0; j < 16; j++)
                sum += v[16 * h + j];
            half[h] = sum;
        }
        for (int j = 0; planes && j < TP_QDOT_GROUP; j++) {
            qhi[g * TP_QDOT_GROUP + (size_t)j] = (int8_t)((v[j] - (v[j] & 255)) / 256);
            qlo[g * TP_QDOT_GROUP + (size_t)j] = (uint8_t)(v[j] & 255);
        }
        if (planes) {
            qsum16[2 * g] = half[0];
            qsum16[2 * g + 1] = half[1];
        }
        qsum[g] = half[0] + half[1];
        s32[g] = s[2 * g] + s[2 * g + 1];
    }
}

/* ---- block types: each 32 elements as int8 quants w with y = a[h] * w - b[h] for the
 * element's half h (elements 0-15, 16-31) ---------------------------------------------- */

typedef void (*unpack_fn)(const uint8_t *blk, int c, int8_t w[32], float a[2], float b[2]);

static void un_q4_0(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q4_0 *blk = (const tp_block_q4_0 *)(const void *)p;
    (void)c;
    for (int j = 0; j < 16; j++) {
        w[j] = (int8_t)((blk->qs[j] & 15) - 8);
        w[j + 16] = (int8_t)((blk->qs[j] >> 4) - 8);
    }
    a[0] = a[1] = tp_half_to_float(tp_rd_u16(blk->d));
    b[0] = b[1] = 0.0f;
}

static void un_q4_1(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q4_1 *blk = (const tp_block_q4_1 *)(const void *)p;
    (void)c;
    for (int j = 0; j < 16; j++) {
        w[j] = (int8_t)(blk->qs[j] & 15);
        w[j + 16] = (int8_t)(blk->qs[j] >> 4);
    }
    a[0] = a[1] = tp_half_to_float(tp_rd_u16(blk->d));
    b[0] = b[1] = -tp_half_to_float(tp_rd_u16(blk->m));
}

/* Q5_0 / Q5_1: the nibbles plus bit k of h as the fifth bit of element k. */
static void five_bits(const uint8_t qs[16], uint32_t h, int bias, int8_t w[32])
{
    for (int j = 0; j < 16; j++) {
        w[j] = (int8_t)((int)((qs[j] & 15u) | ((h >> j) & 1u) << 4) - bias);
        w[j + 16] = (int8_t)((int)((qs[j] >> 4) | ((h >> (j + 16)) & 1u) << 4) - bias);
    }
}

static void un_q5_0(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q5_0 *blk = (const tp_block_q5_0 *)(const void *)p;
    (void)c;
    five_bits(blk->qs, tp_rd_u32(blk->qh), 16, w);
    a[0] = a[1] = tp_half_to_float(tp_rd_u16(blk->d));
    b[0] = b[1] = 0.0f;
}

static void un_q5_1(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q5_1 *blk = (const tp_block_q5_1 *)(const void *)p;
    (void)c;
    five_bits(blk->qs, tp_rd_u32(blk->qh), 0, w);
    a[0] = a[1] = tp_half_to_float(tp_rd_u16(blk->d));
    b[0] = b[1] = -tp_half_to_float(tp_rd_u16(blk->m));
}

static void un_q8_0(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q8_0 *blk = (const tp_block_q8_0 *)(const void *)p;
    (void)c;
    memcpy(w, blk->qs, 32);
    a[0] = a[1] = tp_half_to_float(tp_rd_u16(blk->d));
    b[0] = b[1] = 0.0f;
}

/* Q2_K / Q3_K chunk c = 4h + j: element 16p + l is field j of qs[32h + 16p + l]. */
static void un_q2_k(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q2_k *blk = (const tp_block_q2_k *)(const void *)p;
    int h = c / 4, j = c % 4;
    for (int k = 0; k < 32; k++)
        w[k] = (int8_t)((blk->qs[32 * h + k] >> (2 * j)) & 3);
    float d = tp_half_to_float(tp_rd_u16(blk->d)), dmin = tp_half_to_float(tp_rd_u16(blk->dmin));
    for (int s = 0; s < 2; s++) {
        a[s] = d * (float)(blk->scales[2 * c + s] & 15);
        b[s] = dmin * (float)(blk->scales[2 * c + s] >> 4);
    }
}

static void un_q3_k(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q3_k *blk = (const tp_block_q3_k *)(const void *)p;
    int h = c / 4, j = c % 4;
    for (int k = 0; k < 32; k++) {
        int v = (blk->qs[32 * h + k] >> (2 * j)) & 3;
        w[k] = (int8_t)(v - ((blk->hmask[k] >> (4 * h + j)) & 1 ? 0 : 4));
    }
    int sc[16];
    tp_q3_k_scales(blk->scales, sc);
    float d = tp_half_to_float(tp_rd_u16(blk->d));
    for (int s = 0; s < 2; s++) {
        a[s] = d * (float)(sc[2 * c + s] - 32);
        b[s] = 0.0f;
    }
}

/* Q4_K / Q5_K chunk c is sub-block c: nibble c % 2 of qs[32 (c / 2) + l], bit c of qh[l]. */
static void k45(const uint8_t dd[2], const uint8_t dm[2], const uint8_t scales[12],
                const uint8_t *qh, const uint8_t *qs, int c, int8_t w[32], float a[2], float b[2])
{
    for (int l = 0; l < 32; l++) {
        unsigned v = c % 2 ? qs[32 * (c / 2) + l] >> 4 : qs[32 * (c / 2) + l] & 15u;
        if (qh)
            v |= ((qh[l] >> c) & 1u) << 4;
        w[l] = (int8_t)v;
    }
    unsigned sc, m;
    tp_k4_scale_min(scales, c, &sc, &m);
    a[0] = a[1] = tp_half_to_float(tp_rd_u16(dd)) * (float)sc;
    b[0] = b[1] = tp_half_to_float(tp_rd_u16(dm)) * (float)m;
}

static void un_q4_k(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q4_k *blk = (const tp_block_q4_k *)(const void *)p;
    k45(blk->d, blk->dmin, blk->scales, NULL, blk->qs, c, w, a, b);
}

static void un_q5_k(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q5_k *blk = (const tp_block_q5_k *)(const void *)p;
    k45(blk->d, blk->dmin, blk->scales, blk->qh, blk->qs, c, w, a, b);
}

/* Q6_K chunk c = 4h + r: quarter r of half h (docs/quant.md). */
static void un_q6_k(const uint8_t *p, int c, int8_t w[32], float a[2], float b[2])
{
    const tp_block_q6_k *blk = (const tp_block_q6_k *)(const void *)p;
    int h = c / 4, r = c % 4;
    const uint8_t *ql = blk->ql + 64 * h + (r % 2 ? 32 : 0), *qh = blk->qh + 32 * h;
    for (int l = 0; l < 32; l++) {
        unsigned lo = r < 2 ? ql[l] & 15u : ql[l] >> 4;
        w[l] = (int8_t)((int)(lo | ((qh[l] >> (2 * r)) & 3u) << 4) - 32);
    }
    float d = tp_half_to_float(tp_rd_u16(blk->d));
    for (int s = 0; s < 2; s++) {
        a[s] = d * (float)blk->scales[8 * h + 2 * r + s];
        b[s] = 0.0f;
    }
}

static void qdot_blocks(unpack_fn un, size_t bytes, int chunks, const uint8_t *row,
                        size_t n_blocks, const tp_xq *x, int n_x, float *out)
{
    float acc[TP_QDOT_TOKENS] = {0}, mins[TP_QDOT_TOKENS] = {0};
    size_t g = 0;
    for (size_t blk = 0; blk < n_blocks; blk++)
        for (int c = 0; c < chunks; c++, g++) {
            int8_t w[32];
            float a[2], b[2];
            un(row + blk * bytes, c, w, a, b);
            for (int k = 0; k < n_x; k++) {
                const int16_t *q = x[k].q + 32 * g;
                int32_t i0 = 0, i1 = 0;
                for (int j = 0; j < 16; j++) {
                    i0 += w[j] * q[j];
                    i1 += w[16 + j] * q[16 + j];
                }
                float dx = x[k].d[g];
                acc[k] += (a[0] * dx) * (float)i0 + (a[1] * dx) * (float)i1;
                mins[k] += b[0] * x[k].s[2 * g] + b[1] * x[k].s[2 * g + 1];
            }
        }
    for (int k = 0; k < n_x; k++)
        out[k] = acc[k] - mins[k];
}

#define QDOT(name, type, chunks)                                                              \
    static void qd_##name(const uint8_t *row, size_t nb, const tp_xq *x, int n_x, float *out) \
    {                                                                                        \
        qdot_blocks(un_##name, sizeof(type), chunks, row, nb, x, n_x, out);                    \
    }
QDOT(q4_0, tp_block_q4_0, 1)
QDOT(q4_1, tp_block_q4_1, 1)
QDOT(q5_0, tp_block_q5_0, 1)
QDOT(q5_1, tp_block_q5_1, 1)
QDOT(q8_0, tp_block_q8_0, 1)
QDOT(q2_k, tp_block_q2_k, 8)
QDOT(q3_k, tp_block_q3_k, 8)
QDOT(q4_k, tp_block_q4_k, 8)
QDOT(q5_k, tp_block_q5_k, 8)
QDOT(q6_k, tp_block_q6_k, 8)

/* ---- F32 / F16 / BF16: eight lanes over blocks of eight, the lanes combined
 * ((0+1)+(2+3))+((4+5)+(6+7)), then the tail in order: the order of tp_kernel_mul_mat, so
 * this form gives the f32 kernel's bits on the converted row. -------------------------- */

typedef float (*elem_fn)(const uint8_t *row, size_t i);

static float el_f32(const uint8_t *row, size_t i)
{
    return tp_bits_f32(tp_rd_u32(row + 4 * i));
}

static float el_f16(const uint8_t *row, size_t i)
{
    return tp_half_to_float(tp_rd_u16(row + 2 * i));
}

static float el_bf16(const uint8_t *row, size_t i)
{
    return tp_bits_f32((uint32_t)tp_rd_u16(row + 2 * i) << 16);
}

static void fdot_lanes(elem_fn el, const uint8_t *row, size_t n, const float *const *x, int n_x,
                       float *out)
{
    float lane[TP_QDOT_TOKENS][8] = {{0}};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) {
            float w = el(row, i + l);
            for (int k = 0; k < n_x; k++)
                lane[k][l] += w * x[k][i + l];
        }
    for (int k = 0; k < n_x; k++) {
        const float *a = lane[k];
        float s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
        for (size_t j = i; j < n; j++)
            s += el(row, j) * x[k][j];
        out[k] = s;
    }
}

#define FDOT(name)                                                                              \
    static int fd_##name(const uint8_t *row, size_t rb, int n_r, size_t n,                     \
                         const float *const *x, int n_x, float *out)                           \
    {                                                                                          \
        for (int r = 0; r < n_r; r++)                                                          \
            fdot_lanes(el_##name, row + (size_t)r * rb, n, x, n_x, out + r * TP_QDOT_TOKENS);  \
        return n_r;                                                                            \
    }
FDOT(f32)
FDOT(f16)
FDOT(bf16)

/* ---- KV cache rows: decoded 32 elements at a time, summed in the order of dot1 ------------ */

/* Elements [i, i + m) of a KV row of type (m <= 32; i a multiple of 32 for Q8_0). */
static void kv_elems(uint32_t type, const uint8_t *row, size_t i, size_t m, float *out)
{
    if (type == TP_TYPE_Q8_0)
        (void)tp_dequantize_row(type, row + i / 32 * sizeof(tp_block_q8_0), out, m);
    else
        (void)tp_dequantize_row(type, row + i * (type == TP_TYPE_F32 ? 4 : 2), out, m);
}

static float kv_dot(uint32_t type, const float *q, const uint8_t *row, size_t n)
{
    float lanes[8] = {0}, buf[32], s;
    size_t n8 = n / 8 * 8; /* eight lanes over whole groups of 8, then the tail in order */
    for (size_t i = 0; i < n8; i += 32) {
        size_t m = n8 - i < 32 ? n8 - i : 32;
        kv_elems(type, row, i, m, buf);
        for (size_t j = 0; j < m; j++)
            lanes[j % 8] += buf[j] * q[i + j];
    }
    s = lanes_sum(lanes);
    if (n8 < n)
        kv_elems(type, row, n8, n - n8, buf);
    for (size_t j = 0; n8 + j < n; j++)
        s += buf[j] * q[n8 + j];
    return s;
}

static void kv_axpy(uint32_t type, float p, const uint8_t *row, size_t n, float *o)
{
    float buf[32];
    for (size_t i = 0; i < n; i += 32) {
        size_t m = n - i < 32 ? n - i : 32;
        kv_elems(type, row, i, m, buf);
        for (size_t j = 0; j < m; j++)
            o[i + j] += p * buf[j];
    }
}

#define KV_PORTABLE(name, TYPE)                                                                 \
    static float kd_##name(const float *q, const uint8_t *row, size_t n)                       \
    {                                                                                          \
        return kv_dot(TYPE, q, row, n);                                                        \
    }                                                                                          \
    static void ka_##name(float p, const uint8_t *row, size_t n, float *o)                     \
    {                                                                                          \
        kv_axpy(TYPE, p, row, n, o);                                                           \
    }
KV_PORTABLE(f32, TP_TYPE_F32)
KV_PORTABLE(f16, TP_TYPE_F16)
KV_PORTABLE(q8_0, TP_TYPE_Q8_0)

void tp_qdot_fill_portable(tp_qdot_ops *ops)
{
    memset(ops, 0, sizeof *ops);
    ops->q[TP_TYPE_Q4_0] = qd_q4_0;
    ops->q[TP_TYPE_Q4_1] = qd_q4_1;
    ops->q[TP_TYPE_Q5_0] = qd_q5_0;
    ops->q[TP_TYPE_Q5_1] = qd_q5_1;
    ops->q[TP_TYPE_Q8_0] = qd_q8_0;
    ops->q[TP_TYPE_Q2_K] = qd_q2_k;
    ops->q[TP_TYPE_Q3_K] = qd_q3_k;
    ops->q[TP_TYPE_Q4_K] = qd_q4_k;
    ops->q[TP_TYPE_Q5_K] = qd_q5_k;
    ops->q[TP_TYPE_Q6_K] = qd_q6_k;
    ops->f[TP_TYPE_F32] = fd_f32;
    ops->f[TP_TYPE_F16] = fd_f16;
    ops->f[TP_TYPE_BF16] = fd_bf16;
    ops->kd[TP_TYPE_F32] = kd_f32;
    ops->kd[TP_TYPE_F16] = kd_f16;
    ops->kd[TP_TYPE_Q8_0] = kd_q8_0;
    ops->ka[TP_TYPE_F32] = ka_f32;
    ops->ka[TP_TYPE_F16] = ka_f16;
    ops->ka[TP_TYPE_Q8_0] = ka_q8_0;
}
