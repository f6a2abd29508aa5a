/* Internal: block-level helpers shared by the quant_*.c files (docs/quant.md). */
#ifndef TP_BACKEND_QUANT_INTERNAL_H
#define TP_BACKEND_QUANT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tensorplan/quant.h"

/* Dequantizes n_blocks consecutive blocks at src into n_blocks * block_elems floats. */
typedef void (*tp_dequant_fn)(const uint8_t *src, float *dst, size_t n_blocks);

/* The block dequantizer of type, or NULL when the type cannot be dequantized. */
tp_dequant_fn tp_quant_dequant_fn(uint32_t type);

static inline uint16_t tp_rd_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t tp_rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void tp_wr_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xFFu);
    p[1] = (uint8_t)(v >> 8);
}

static inline uint32_t tp_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float tp_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The 6-bit scale and min of sub-block j (0-7) in the 12 scale bytes of a Q4_K / Q5_K block
 * (docs/quant.md): read by the dequantizer and by the Q4_K quantizer, which re-reads what
 * it packed. */
static inline void tp_k4_scale_min(const uint8_t *s, int j, unsigned *sc, unsigned *m)
{
    if (j < 4) {
        *sc = s[j] & 63u;
        *m = s[j + 4] & 63u;
    } else {
        *sc = (s[j + 4] & 15u) | (unsigned)(s[j - 4] >> 6) << 4;
        *m = (unsigned)(s[j + 4] >> 4) | (unsigned)(s[j] >> 6) << 4;
    }
}

/* The 6-bit scale (before the -32) of Q3_K sub-block j (0-15): the low nibble from byte j
 * (j < 8) or the high nibble of byte j - 8, the top two bits from bits 2 (j / 4) of byte
 * 8 + j % 4 (docs/quant.md). */
static inline int tp_q3_k_scale(const uint8_t s[12], int j)
{
    int low = j < 8 ? s[j] & 15 : s[j - 8] >> 4;
    return low | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4;
}

/* The sixteen of them. */
static inline void tp_q3_k_scales(const uint8_t s[12], int out[16])
{
    for (int j = 0; j < 16; j++)
        out[j] = tp_q3_k_scale(s, j);
}

/* f16 -> f32 as an inline for the row loops (tp_f16_to_f32 is the exported copy). */
static inline float tp_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7FFFu;
    if (em >= 0x7C00u) /* infinity or NaN: the payload moves up unchanged */
        return tp_bits_f32(sign | 0x7F800000u | (em & 0x3FFu) << 13);
    if (em >= 0x0400u) /* normal: rebias the exponent from 15 to 127 */
        return tp_bits_f32(sign | ((em << 13) + (112u << 23)));
    /* zero or subnormal: em * 2^-24 is exact in f32 */
    float v = (float)em * 0x1p-24f;
    return sign ? -v : v;
}

#endif
