/* Exact dequantization of every supported block type (formulas: docs/quant.md section 3).
 * Each function reads n_blocks consecutive blocks and writes block_elems floats per block,
 * evaluating products in the order the document gives, so the values are those llama.cpp's
 * dequantizers produce. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/quant_blocks.h"
#include "backend/quant_internal.h"
#include "common/error.h"

static void deq_f32(const uint8_t *src, float *dst, size_t n)
{
    memcpy(dst, src, n * sizeof(float));
}

/* F16 rows are converted through a table of all 65536 values (256 KiB, built once per
 * process from tp_half_to_float): one load per element instead of a branchy conversion. */
static float g_half_table[65536];
static pthread_once_t g_half_once = PTHREAD_ONCE_INIT;

static void build_half_table(void)
{
    for (uint32_t h = 0; h < 65536; h++)
        g_half_table[h] = tp_half_to_float((uint16_t)h);
}

static void deq_f16(const uint8_t *src, float *dst, size_t n)
{
    pthread_once(&g_half_once, build_half_table);
    for (size_t i = 0; i < n; i++)
        dst[i] = g_half_table[(uint32_t)src[2 * i] | (uint32_t)src[2 * i + 1] << 8];
}

static void deq_bf16(const uint8_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = tp_bits_f32((uint32_t)tp_rd_u16(src + 2 * i) << 16);
}

static void deq_q4_0(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q4_0 *blk = (const tp_block_q4_0 *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 32) {
        float d = tp_half_to_float(tp_rd_u16(blk->d));
        const uint8_t *qs = blk->qs;
        for (int j = 0; j < 16; j++) {
            dst[j] = (float)((qs[j] & 15) - 8) * d;
            dst[j + 16] = (float)((qs[j] >> 4) - 8) * d;
        }
    }
}

static void deq_q4_1(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q4_1 *blk = (const tp_block_q4_1 *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 32) {
        float d = tp_half_to_float(tp_rd_u16(blk->d));
        float m = tp_half_to_float(tp_rd_u16(blk->m));
        const uint8_t *qs = blk->qs;
        for (int j = 0; j < 16; j++) {
            dst[j] = (float)(qs[j] & 15) * d + m;
            dst[j + 16] = (float)(qs[j] >> 4) * d + m;
        }
    }
}

static void deq_q5_0(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q5_0 *blk = (const tp_block_q5_0 *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 32) {
        float d = tp_half_to_float(tp_rd_u16(blk->d));
        uint32_t h = tp_rd_u32(blk->qh);
        const uint8_t *qs = blk->qs;
        for (int j = 0; j < 16; j++) {
            int lo = (int)((qs[j] & 15u) | ((h >> j) & 1u) << 4);
            int hi = (int)((qs[j] >> 4) | ((h >> (j + 16)) & 1u) << 4);
            dst[j] = (float)(lo - 16) * d;
            dst[j + 16] = (float)(hi - 16) * d;
        }
    }
}

static void deq_q5_1(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q5_1 *blk = (const tp_block_q5_1 *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 32) {
        float d = tp_half_to_float(tp_rd_u16(blk->d));
        float m = tp_half_to_float(tp_rd_u16(blk->m));
        uint32_t h = tp_rd_u32(blk->qh);
        const uint8_t *qs = blk->qs;
        for (int j = 0; j < 16; j++) {
            unsigned lo = (qs[j] & 15u) | ((h >> j) & 1u) << 4;
            unsigned hi = (qs[j] >> 4) | ((h >> (j + 16)) & 1u) << 4;
            dst[j] = (float)lo * d + m;
            dst[j + 16] = (float)hi * d + m;
        }
    }
}

static void deq_q8_0(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q8_0 *blk = (const tp_block_q8_0 *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 32) {
        float d = tp_half_to_float(tp_rd_u16(blk->d));
        const int8_t *qs = blk->qs;
        for (int j = 0; j < 32; j++)
            dst[j] = (float)qs[j] * d;
    }
}

/* Q2_K: 16 sub-blocks of 16; scales[s] holds the 4-bit scale (low) and min (high). */
static void deq_q2_k(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q2_k *blk = (const tp_block_q2_k *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 256) {
        const uint8_t *sc = blk->scales, *qs = blk->qs;
        float d = tp_half_to_float(tp_rd_u16(blk->d));
        float dmin = tp_half_to_float(tp_rd_u16(blk->dmin));
        for (int half = 0; half < 2; half++) {
            const uint8_t *q = qs + 32 * half;
            for (int j = 0; j < 4; j++) {
                for (int part = 0; part < 2; part++) {
                    uint8_t s = sc[8 * half + 2 * j + part];
                    float dl = d * (float)(s & 15), ml = dmin * (float)(s >> 4);
                    float *y = dst + 128 * half + 32 * j + 16 * part;
                    for (int l = 0; l < 16; l++)
                        y[l] = dl * (float)((q[16 * part + l] >> (2 * j)) & 3) - ml;
                }
            }
        }
    }
}

static void deq_q3_k(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q3_k *blk = (const tp_block_q3_k *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 256) {
        const uint8_t *hm = blk->hmask, *qs = blk->qs;
        float d = tp_half_to_float(tp_rd_u16(blk->d));
        int sc[16];
        tp_q3_k_scales(blk->scales, sc);
        for (int half = 0; half < 2; half++) {
            const uint8_t *q = qs + 32 * half;
            for (int j = 0; j < 4; j++) {
                unsigned bit = 4u * (unsigned)half + (unsigned)j;
                for (int part = 0; part < 2; part++) {
                    float dl = d * (float)(sc[8 * half + 2 * j + part] - 32);
                    float *y = dst + 128 * half + 32 * j + 16 * part;
                    for (int l = 0; l < 16; l++) {
                        int k = 16 * part + l;
                        int v = (q[k] >> (2 * j)) & 3;
                        v -= (hm[k] >> bit) & 1u ? 0 : 4;
                        y[l] = dl * (float)v;
                    }
                }
            }
        }
    }
}

/* Q4_K and Q5_K share everything but the fifth bit (qh NULL for Q4_K): d, dmin and the
 * scales are the first 16 bytes of both layouts. */
static void deq_k45_block(const uint8_t dd[2], const uint8_t dm[2], const uint8_t scales[12],
                          const uint8_t *qh, const uint8_t *qs, float *y)
{
    float d = tp_half_to_float(tp_rd_u16(dd));
    float dmin = tp_half_to_float(tp_rd_u16(dm));
    for (int c = 0; c < 4; c++) {
        unsigned sc, m;
        tp_k4_scale_min(scales, 2 * c, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        tp_k4_scale_min(scales, 2 * c + 1, &sc, &m);
        float d2 = d * (float)sc, m2 = dmin * (float)m;
        const uint8_t *q = qs + 32 * c;
        for (int l = 0; l < 32; l++) {
            unsigned lo = q[l] & 15u, hi = q[l] >> 4u;
            if (qh) {
                lo += (qh[l] >> (2 * c)) & 1u ? 16u : 0u;
                hi += (qh[l] >> (2 * c + 1)) & 1u ? 16u : 0u;
            }
            y[64 * c + l] = d1 * (float)lo - m1;
            y[64 * c + 32 + l] = d2 * (float)hi - m2;
        }
    }
}

static void deq_q4_k(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q4_k *blk = (const tp_block_q4_k *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 256)
        deq_k45_block(blk->d, blk->dmin, blk->scales, NULL, blk->qs, dst);
}

static void deq_q5_k(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q5_k *blk = (const tp_block_q5_k *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 256)
        deq_k45_block(blk->d, blk->dmin, blk->scales, blk->qh, blk->qs, dst);
}

static void deq_q6_k(const uint8_t *src, float *dst, size_t n)
{
    const tp_block_q6_k *blk = (const tp_block_q6_k *)(const void *)src;
    for (size_t b = 0; b < n; b++, blk++, dst += 256) {
        float d = tp_half_to_float(tp_rd_u16(blk->d));
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = blk->ql + 64 * h, *qh = blk->qh + 32 * h;
            const int8_t *s = blk->scales + 8 * h;
            float *y = dst + 128 * h;
            for (int l = 0; l < 32; l++) {
                int i = l / 16;
                int q1 = (int)((ql[l] & 15u) | ((qh[l] >> 0) & 3u) << 4) - 32;
                int q2 = (int)((ql[l + 32] & 15u) | ((qh[l] >> 2) & 3u) << 4) - 32;
                int q3 = (int)((ql[l] >> 4) | ((qh[l] >> 4) & 3u) << 4) - 32;
                int q4 = (int)((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3u) << 4) - 32;
                y[l] = d * (float)s[i] * (float)q1;
                y[l + 32] = d * (float)s[i + 2] * (float)q2;
                y[l + 64] = d * (float)s[i + 4] * (float)q3;
                y[l + 96] = d * (float)s[i + 6] * (float)q4;
            }
        }
    }
}

tp_dequant_fn tp_quant_dequant_fn(uint32_t type)
{
    switch (type) {
    case TP_TYPE_F32: return deq_f32;
    case TP_TYPE_F16: return deq_f16;
    case TP_TYPE_BF16: return deq_bf16;
    case TP_TYPE_Q4_0: return deq_q4_0;
    case TP_TYPE_Q4_1: return deq_q4_1;
    case TP_TYPE_Q5_0: return deq_q5_0;
    case TP_TYPE_Q5_1: return deq_q5_1;
    case TP_TYPE_Q8_0: return deq_q8_0;
    case TP_TYPE_Q2_K: return deq_q2_k;
    case TP_TYPE_Q3_K: return deq_q3_k;
    case TP_TYPE_Q4_K: return deq_q4_k;
    case TP_TYPE_Q5_K: return deq_q5_k;
    case TP_TYPE_Q6_K: return deq_q6_k;
    default: return NULL;
    }
}

tp_status tp_dequantize_row(uint32_t type, const void *src, float *dst, size_t n)
{
    tp_dequant_fn fn = tp_quant_dequant_fn(type);
    if (!fn) {
        const char *name = tp_type_name(type);
        return tp_fail(TP_ERR_INVALID, "dequantize: type %u (%s) is not supported", (unsigned)type,
                       name ? name : "unknown");
    }
    size_t be = tp_type_block_elems(type);
    if (n % be != 0)
        return tp_fail(TP_ERR_INVALID, "dequantize: %zu elements are not a multiple of the %s block (%zu)",
                       n, tp_type_name(type), be);
    if (n == 0)
        return TP_OK;
    if (!src || !dst)
        return tp_fail(TP_ERR_INVALID, "dequantize: NULL array");
    fn(src, dst, n / be);
    return TP_OK;
}
