/* Reference quantizers for writing rows (docs/quant.md section 4): F32, F16, BF16 and the
 * block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K and Q6_K. Any block that obeys a layout is a valid encoding; these
 * are the simple deterministic choices the document describes. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/quant_blocks.h"
#include "backend/quant_internal.h"
#include "common/error.h"

/* Round to nearest, ties to even, for |v| < 2^22 (adding 1.5 * 2^23 leaves the integer in
 * the low mantissa bits). */
static int nearest(float v)
{
    float t = v + 12582912.0f;
    return (int)(tp_f32_bits(t) & 0x7FFFFFu) - 0x400000;
}

/* 1/d, or 0 when d is 0 or so small that 1/d is not finite (the stored f16 scale is 0 then
 * too, and every quant 0 is the exact encoding). */
static float inverse(float d)
{
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    return isfinite(id) ? id : 0.0f;
}

/* The first of x[0..n) of largest magnitude, with its sign (0 when all are 0): the scale
 * source of Q4_0, Q5_0 and the Q6_K sub-blocks. */
static float signed_amax(const float *x, int n)
{
    float amax = 0.0f, v = 0.0f;
    for (int j = 0; j < n; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            v = x[j];
        }
    return v;
}

static void quant_q8_0(const float *x, uint8_t *dst, size_t n_blocks)
{
    tp_block_q8_0 *blk = (tp_block_q8_0 *)dst;
    for (size_t b = 0; b < n_blocks; b++, x += 32, blk++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        float d = amax / 127.0f;
        float id = inverse(d);
        tp_wr_u16(blk->d, tp_f32_to_f16(d));
        for (int j = 0; j < 32; j++)
            blk->qs[j] = (int8_t)roundf(x[j] * id); /* half away from zero */
    }
}

static void quant_q4_0(const float *x, uint8_t *dst, size_t n_blocks)
{
    tp_block_q4_0 *blk = (tp_block_q4_0 *)dst;
    for (size_t b = 0; b < n_blocks; b++, x += 32, blk++) {
        float d = signed_amax(x, 32) / -8.0f;
        float id = inverse(d);
        tp_wr_u16(blk->d, tp_f32_to_f16(d));
        for (int j = 0; j < 16; j++) {
            int q0 = (int)(x[j] * id + 8.5f), q1 = (int)(x[j + 16] * id + 8.5f);
            q0 = q0 > 15 ? 15 : q0 < 0 ? 0 : q0;
            q1 = q1 > 15 ? 15 : q1 < 0 ? 0 : q1;
            blk->qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

/* Q4_1 / Q5_1 (bits 4 or 5): d = (max - min) / (2^bits - 1), m = min,
 * q = min(top, trunc((x - min) / d + 0.5)); the fifth bit of element k goes to bit k of qh. */
static void quant_q41_51(const float *x, uint8_t *dst, size_t n_blocks, int bits)
{
    int top = (1 << bits) - 1;
    for (size_t b = 0; b < n_blocks; b++, x += 32) {
        uint8_t *d16, *m16, *qs, *qh = NULL;
        if (bits == 4) {
            tp_block_q4_1 *blk = (tp_block_q4_1 *)dst + b;
            d16 = blk->d;
            m16 = blk->m;
            qs = blk->qs;
        } else {
            tp_block_q5_1 *blk = (tp_block_q5_1 *)dst + b;
            d16 = blk->d;
            m16 = blk->m;
            qs = blk->qs;
            qh = blk->qh;
        }
        float lo = x[0], hi = x[0];
        for (int j = 1; j < 32; j++) {
            lo = x[j] < lo ? x[j] : lo;
            hi = x[j] > hi ? x[j] : hi;
        }
        float d = (hi - lo) / (float)top, id = inverse(d);
        tp_wr_u16(d16, tp_f32_to_f16(d));
        tp_wr_u16(m16, tp_f32_to_f16(lo));
        uint32_t h = 0;
        for (int j = 0; j < 32; j++) {
            int q = (int)((x[j] - lo) * id + 0.5f);
            q = q > top ? top : q < 0 ? 0 : q;
            qs[j % 16] = (uint8_t)(j < 16 ? (q & 15) : (qs[j % 16] | (q & 15) << 4));
            h |= (uint32_t)(q >> 4 & 1) << j;
        }
        if (qh)
            for (int k = 0; k < 4; k++)
                qh[k] = (uint8_t)(h >> (8 * k));
    }
}

/* Q5_0: as Q4_0 with sixteen levels each side: d = v / -16, q = min(31, trunc(x / d + 16.5)). */
static void quant_q5_0(const float *x, uint8_t *dst, size_t n_blocks)
{
    tp_block_q5_0 *blk = (tp_block_q5_0 *)dst;
    for (size_t b = 0; b < n_blocks; b++, x += 32, blk++) {
        float d = signed_amax(x, 32) / -16.0f, id = inverse(d);
        tp_wr_u16(blk->d, tp_f32_to_f16(d));
        uint32_t h = 0;
        for (int j = 0; j < 32; j++) {
            int q = (int)(x[j] * id + 16.5f);
            q = q > 31 ? 31 : q < 0 ? 0 : q;
            blk->qs[j % 16] = (uint8_t)(j < 16 ? (q & 15) : (blk->qs[j % 16] | (q & 15) << 4));
            h |= (uint32_t)(q >> 4 & 1) << j;
        }
        for (int k = 0; k < 4; k++)
            blk->qh[k] = (uint8_t)(h >> (8 * k));
    }
}

/* Q6_K, a simple valid choice: each sub-block of 16 gets scale v / -32 (v its signed element of
 * largest magnitude); the scales are coded as int8 against d = S / -128 (S the signed scale of
 * largest magnitude); q = clamp(nearest(x / (d16 * sc)), -32, 31) + 32. */
static void quant_q6_k_block(const float *x, tp_block_q6_k *blk)
{
    float sub[16], big = 0.0f;
    for (int s = 0; s < 16; s++) {
        sub[s] = signed_amax(x + 16 * s, 16) / -32.0f;
        big = fabsf(sub[s]) > fabsf(big) ? sub[s] : big;
    }
    memset(blk, 0, sizeof *blk);
    float iscale = big != 0.0f ? -128.0f / big : 0.0f;
    tp_wr_u16(blk->d, tp_f32_to_f16(iscale != 0.0f ? 1.0f / iscale : 0.0f));
    float d = tp_half_to_float(tp_rd_u16(blk->d));
    for (int s = 0; s < 16; s++) {
        int sc = nearest(iscale * sub[s]);
        sc = sc > 127 ? 127 : sc < -128 ? -128 : sc;
        blk->scales[s] = (int8_t)sc;
        float D = d * (float)sc;
        for (int l = 0; l < 16; l++) {
            int k = 16 * s + l, q = D != 0.0f ? nearest(x[k] / D) : 0;
            q = (q > 31 ? 31 : q < -32 ? -32 : q) + 32;
            int h = k / 128, quarter = (k % 128) / 32, e = k % 32;
            uint8_t *ql = blk->ql + 64 * h + (quarter % 2 ? 32 : 0) + e;
            *ql |= (uint8_t)(quarter < 2 ? (q & 15) : (q & 15) << 4);
            blk->qh[32 * h + e] |= (uint8_t)((q >> 4) << (2 * quarter));
        }
    }
}

/* Packs the 6-bit scale ls and min lm of sub-block j into the 12 scale bytes. */
static void k4_pack(uint8_t s[12], int j, unsigned ls, unsigned lm)
{
    if (j < 4) {
        s[j] = (uint8_t)ls;
        s[j + 4] = (uint8_t)lm;
    } else {
        s[j + 4] = (uint8_t)((ls & 15u) | (lm & 15u) << 4);
        s[j - 4] |= (uint8_t)((ls >> 4) << 6);
        s[j] |= (uint8_t)((lm >> 4) << 6);
    }
}

static unsigned scale6(float v, float inv)
{
    int q = nearest(inv * v);
    return q > 63 ? 63u : q < 0 ? 0u : (unsigned)q;
}

/* One Q4_K block with the simplest valid choice per sub-block: s = (hi - lo) / 15 with
 * lo = min(0, min x), m = -lo; then the 6-bit scales relative to d = max s / 63 and
 * dmin = max m / 63, and the quants against the values re-read from the packed block. */
static void quant_q4_k_block(const float *x, tp_block_q4_k *blk)
{
    float s[8], m[8], smax = 0.0f, mmax = 0.0f;
    for (int j = 0; j < 8; j++) {
        float lo = 0.0f, hi = x[32 * j];
        for (int l = 0; l < 32; l++) {
            lo = x[32 * j + l] < lo ? x[32 * j + l] : lo;
            hi = x[32 * j + l] > hi ? x[32 * j + l] : hi;
        }
        s[j] = hi > lo ? (hi - lo) / 15.0f : 0.0f;
        m[j] = -lo;
        smax = s[j] > smax ? s[j] : smax;
        mmax = m[j] > mmax ? m[j] : mmax;
    }
    memset(blk, 0, sizeof *blk);
    float inv_s = smax > 0.0f ? 63.0f / smax : 0.0f, inv_m = mmax > 0.0f ? 63.0f / mmax : 0.0f;
    for (int j = 0; j < 8; j++)
        k4_pack(blk->scales, j, scale6(s[j], inv_s), scale6(m[j], inv_m));
    tp_wr_u16(blk->d, tp_f32_to_f16(smax / 63.0f));
    tp_wr_u16(blk->dmin, tp_f32_to_f16(mmax / 63.0f));
    float d = tp_half_to_float(tp_rd_u16(blk->d));
    float dmin = tp_half_to_float(tp_rd_u16(blk->dmin));
    uint8_t q[256];
    for (int j = 0; j < 8; j++) {
        unsigned sc, mn;
        tp_k4_scale_min(blk->scales, j, &sc, &mn);
        float D = d * (float)sc, M = dmin * (float)mn;
        for (int l = 0; l < 32; l++) {
            int v = D != 0.0f ? nearest((x[32 * j + l] + M) / D) : 0;
            q[32 * j + l] = (uint8_t)(v > 15 ? 15 : v < 0 ? 0 : v);
        }
    }
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            blk->qs[32 * c + l] = (uint8_t)(q[64 * c + l] | q[64 * c + 32 + l] << 4);
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

tp_status tp_quantize_row(uint32_t type, const float *src, void *dst, size_t n)
{
    const char *name = tp_type_name(type);
    if (!tp_type_can_quantize(type))
        return tp_fail(TP_ERR_INVALID, "quantize: type %u (%s) is not supported", (unsigned)type,
                       name ? name : "unknown");
    size_t be = tp_type_block_elems(type);
    if (n % be != 0)
        return tp_fail(TP_ERR_INVALID, "quantize: %zu elements are not a multiple of the %s block (%zu)",
                       n, name, be);
    if (n == 0)
        return TP_OK;
    if (!src || !dst)
        return tp_fail(TP_ERR_INVALID, "quantize: NULL array");
    uint8_t *out = dst;
    if (be > 1 && !all_finite(src, n))
        return tp_fail(TP_ERR_INVALID, "quantize: %s needs finite values", name);
    switch (type) {
    case TP_TYPE_F32: memcpy(out, src, n * sizeof(float)); break;
    case TP_TYPE_F16:
        for (size_t i = 0; i < n; i++)
            tp_wr_u16(out + 2 * i, tp_f32_to_f16(src[i]));
        break;
    case TP_TYPE_BF16:
        for (size_t i = 0; i < n; i++)
            tp_wr_u16(out + 2 * i, tp_f32_to_bf16(src[i]));
        break;
    case TP_TYPE_Q8_0: quant_q8_0(src, out, n / 32); break;
    case TP_TYPE_Q4_0: quant_q4_0(src, out, n / 32); break;
    case TP_TYPE_Q4_1: quant_q41_51(src, out, n / 32, 4); break;
    case TP_TYPE_Q5_0: quant_q5_0(src, out, n / 32); break;
    case TP_TYPE_Q5_1: quant_q41_51(src, out, n / 32, 5); break;
    case TP_TYPE_Q6_K:
        for (size_t b = 0; b < n / 256; b++)
            quant_q6_k_block(src + 256 * b, (tp_block_q6_k *)out + b);
        break;
    default: /* TP_TYPE_Q4_K, the last quantizable type */
        for (size_t b = 0; b < n / 256; b++)
            quant_q4_k_block(src + 256 * b, (tp_block_q4_k *)out + b);
        break;
    }
    return TP_OK;
}
