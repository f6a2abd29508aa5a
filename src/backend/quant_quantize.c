/* Reference quantizers for writing rows (docs/quant.md section 4): F32, F16, BF16 and the
 * block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K. Any block that
 * obeys a layout is a valid encoding; these are the simple deterministic choices the document
 * describes. */
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

/* The symmetric scales of Q6_K and Q3_K (sixteen sub-blocks of 16): sub-block s gets
 * t_s = v_s / -qlo (v_s its signed element of largest magnitude, which becomes quant -qlo);
 * with T the t_s of largest magnitude, iscale = -slo / T (0 when T is 0 or iscale is not
 * finite), d = f16(1 / iscale) and sc_s = clamp(nearest(iscale * t_s), -slo, slo - 1).
 * Writes d; returns it read back. */
static float sym_scales(const float *x, float qlo, int slo, uint8_t d16[2], int sc[16])
{
    float sub[16], big = 0.0f;
    for (int s = 0; s < 16; s++) {
        sub[s] = signed_amax(x + 16 * s, 16) / -qlo;
        big = fabsf(sub[s]) > fabsf(big) ? sub[s] : big;
    }
    float iscale = big != 0.0f ? -(float)slo / big : 0.0f;
    iscale = isfinite(iscale) ? iscale : 0.0f;
    tp_wr_u16(d16, tp_f32_to_f16(iscale != 0.0f ? 1.0f / iscale : 0.0f));
    for (int s = 0; s < 16; s++) {
        int v = nearest(iscale * sub[s]);
        sc[s] = v > slo - 1 ? slo - 1 : v < -slo ? -slo : v;
    }
    return tp_half_to_float(tp_rd_u16(d16));
}

/* Q6_K: the symmetric scales with qlo 32 and int8 scales (slo 128);
 * q = clamp(nearest(x / (d * sc)), -32, 31) + 32. */
static void quant_q6_k_block(const float *x, tp_block_q6_k *blk)
{
    int sc[16];
    memset(blk, 0, sizeof *blk);
    float d = sym_scales(x, 32.0f, 128, blk->d, sc);
    for (int s = 0; s < 16; s++) {
        blk->scales[s] = (int8_t)sc[s];
        float D = d * (float)sc[s];
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

/* Q3_K: the symmetric scales with qlo 4 and 6-bit scales (slo 32, stored as sc + 32);
 * q = clamp(nearest(x / (d * sc)), -4, 3), stored as q + 4: its low two bits in qs, its
 * third in hmask (set: the layout's 4 is not subtracted). */
static void quant_q3_k_block(const float *x, tp_block_q3_k *blk)
{
    int sc[16];
    memset(blk, 0, sizeof *blk);
    float d = sym_scales(x, 4.0f, 32, blk->d, sc);
    for (int s = 0; s < 16; s++) {
        unsigned u = (unsigned)(sc[s] + 32);
        blk->scales[s % 8] |= (uint8_t)((u & 15u) << (s < 8 ? 0 : 4));
        blk->scales[8 + s % 4] |= (uint8_t)((u >> 4) << (2 * (s / 4)));
        float D = d * (float)sc[s];
        for (int l = 0; l < 16; l++) {
            int k = 16 * s + l, q = D != 0.0f ? nearest(x[k] / D) : 0;
            q = (q > 3 ? 3 : q < -4 ? -4 : q) + 4;
            /* k = 128h + 32j + 16p + l */
            int h = k / 128, j = (k % 128) / 32, p = (k % 32) / 16;
            blk->qs[32 * h + 16 * p + l] |= (uint8_t)((q & 3) << (2 * j));
            if (q >= 4)
                blk->hmask[k % 32] |= (uint8_t)(1u << (4 * h + j));
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

/* nearest(inv * v) clamped to 0..top. */
static unsigned scale_int(float v, float inv, int top)
{
    int q = nearest(inv * v);
    return q > top ? (unsigned)top : q < 0 ? 0u : (unsigned)q;
}

/* The min/max choice of Q2_K, Q4_K and Q5_K, the simplest valid one: sub-block j of len
 * elements gets lo = min(0, min x), s_j = (max x - lo) / top (0 when equal), m_j = -lo. With
 * S = max s_j, Mx = max m_j: d = f16(S / stop), dmin = f16(Mx / stop),
 * sc_j = min(stop, nearest(stop * s_j / S)), mn_j = min(stop, nearest(stop * m_j / Mx)) (0
 * when S or Mx is 0). Then, with D = d * sc_j and M = dmin * mn_j as the block will hold them,
 * q = clamp(nearest((x + M) / D), 0, top) (0 when D is 0). */
static void min_choice(const float *x, int n_sub, int len, int top, int stop, uint8_t d16[2],
                       uint8_t dmin16[2], unsigned *sc, unsigned *mn, uint8_t *q)
{
    float s[16], m[16], smax = 0.0f, mmax = 0.0f;
    for (int j = 0; j < n_sub; j++) {
        const float *xs = x + len * j;
        float lo = 0.0f, hi = xs[0];
        for (int l = 0; l < len; l++) {
            lo = xs[l] < lo ? xs[l] : lo;
            hi = xs[l] > hi ? xs[l] : hi;
        }
        s[j] = hi > lo ? (hi - lo) / (float)top : 0.0f;
        m[j] = -lo;
        smax = s[j] > smax ? s[j] : smax;
        mmax = m[j] > mmax ? m[j] : mmax;
    }
    float inv_s = smax > 0.0f ? (float)stop / smax : 0.0f;
    float inv_m = mmax > 0.0f ? (float)stop / mmax : 0.0f;
    inv_s = isfinite(inv_s) ? inv_s : 0.0f;
    inv_m = isfinite(inv_m) ? inv_m : 0.0f;
    tp_wr_u16(d16, tp_f32_to_f16(smax / (float)stop));
    tp_wr_u16(dmin16, tp_f32_to_f16(mmax / (float)stop));
    float d = tp_half_to_float(tp_rd_u16(d16)), dmin = tp_half_to_float(tp_rd_u16(dmin16));
    for (int j = 0; j < n_sub; j++) {
        sc[j] = scale_int(s[j], inv_s, stop);
        mn[j] = scale_int(m[j], inv_m, stop);
        float D = d * (float)sc[j], M = dmin * (float)mn[j];
        for (int l = 0; l < len; l++) {
            int v = D != 0.0f ? nearest((x[len * j + l] + M) / D) : 0;
            q[len * j + l] = (uint8_t)(v > top ? top : v < 0 ? 0 : v);
        }
    }
}

/* Q4_K (five_bits 0) and Q5_K (1): the min/max choice with 6-bit scales and mins, packed as
 * docs/quant.md section 3 reads them; Q5_K's fifth bit of element k goes to bit k / 32 of
 * qh[k % 32]. */
static void quant_q45_k_block(const float *x, uint8_t *dst, int five_bits)
{
    uint8_t *d16, *dmin16, *scales, *qs, *qh = NULL;
    if (five_bits) {
        tp_block_q5_k *blk = (tp_block_q5_k *)dst;
        memset(blk, 0, sizeof *blk);
        d16 = blk->d, dmin16 = blk->dmin, scales = blk->scales, qs = blk->qs, qh = blk->qh;
    } else {
        tp_block_q4_k *blk = (tp_block_q4_k *)dst;
        memset(blk, 0, sizeof *blk);
        d16 = blk->d, dmin16 = blk->dmin, scales = blk->scales, qs = blk->qs;
    }
    unsigned sc[8], mn[8];
    uint8_t q[256];
    min_choice(x, 8, 32, five_bits ? 31 : 15, 63, d16, dmin16, sc, mn, q);
    for (int j = 0; j < 8; j++)
        k4_pack(scales, j, sc[j], mn[j]);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            qs[32 * c + l] = (uint8_t)((q[64 * c + l] & 15) | (q[64 * c + 32 + l] & 15) << 4);
    if (qh)
        for (int k = 0; k < 256; k++)
            qh[k % 32] |= (uint8_t)((q[k] >> 4) << (k / 32));
}

/* Q2_K: the min/max choice with 4-bit scales and mins (scales[s] = sc | mn << 4); the 2-bit
 * quant of element k = 128h + 32j + 16p + l goes to bits 2j of qs[32h + 16p + l]. */
static void quant_q2_k_block(const float *x, tp_block_q2_k *blk)
{
    unsigned sc[16], mn[16];
    uint8_t q[256];
    memset(blk, 0, sizeof *blk);
    min_choice(x, 16, 16, 3, 15, blk->d, blk->dmin, sc, mn, q);
    for (int s = 0; s < 16; s++)
        blk->scales[s] = (uint8_t)(sc[s] | mn[s] << 4);
    for (int k = 0; k < 256; k++) {
        int h = k / 128, j = (k % 128) / 32, p = (k % 32) / 16;
        blk->qs[32 * h + 16 * p + k % 16] |= (uint8_t)(q[k] << (2 * j));
    }
}

/* One block of 256 elements of a K type. */
static void quant_k_block(uint32_t type, const float *x, uint8_t *dst)
{
    switch (type) {
    case TP_TYPE_Q2_K: quant_q2_k_block(x, (tp_block_q2_k *)dst); break;
    case TP_TYPE_Q3_K: quant_q3_k_block(x, (tp_block_q3_k *)dst); break;
    case TP_TYPE_Q4_K: quant_q45_k_block(x, dst, 0); break;
    case TP_TYPE_Q5_K: quant_q45_k_block(x, dst, 1); break;
    default: quant_q6_k_block(x, (tp_block_q6_k *)dst); break; /* TP_TYPE_Q6_K */
    }
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
    default: /* the K types: TP_TYPE_Q2_K .. TP_TYPE_Q6_K */
        for (size_t b = 0; b < n / 256; b++)
            quant_k_block(type, src + 256 * b, out + tp_type_block_bytes(type) * b);
        break;
    }
    return TP_OK;
}
