/* The type table, name lookups, row sizes and the f16/bf16 conversions (docs/quant.md). */
#include "tensorplan/quant.h"

#include <stdint.h>
#include <string.h>

#include "backend/quant_internal.h"
#include "common/error.h"

/* name, block elems, block bytes, retired, dequantize, quantize, execute */
static const tp_type_info g_types[TP_TYPE_ID_LIMIT] = {
    [0] = {"F32", 1, 4, 0, 1, 1, 1},
    [1] = {"F16", 1, 2, 0, 1, 1, 1},
    [2] = {"Q4_0", 32, 18, 0, 1, 1, 1},
    [3] = {"Q4_1", 32, 20, 0, 1, 0, 1},
    [4] = {"Q4_2", 0, 0, 1, 0, 0, 0},
    [5] = {"Q4_3", 0, 0, 1, 0, 0, 0},
    [6] = {"Q5_0", 32, 22, 0, 1, 0, 1},
    [7] = {"Q5_1", 32, 24, 0, 1, 0, 1},
    [8] = {"Q8_0", 32, 34, 0, 1, 1, 1},
    [9] = {"Q8_1", 32, 36, 0, 0, 0, 0},
    [10] = {"Q2_K", 256, 84, 0, 1, 0, 1},
    [11] = {"Q3_K", 256, 110, 0, 1, 0, 1},
    [12] = {"Q4_K", 256, 144, 0, 1, 1, 1},
    [13] = {"Q5_K", 256, 176, 0, 1, 0, 1},
    [14] = {"Q6_K", 256, 210, 0, 1, 0, 1},
    [15] = {"Q8_K", 256, 292, 0, 0, 0, 0},
    [16] = {"IQ2_XXS", 0, 0, 0, 0, 0, 0},
    [17] = {"IQ2_XS", 0, 0, 0, 0, 0, 0},
    [18] = {"IQ3_XXS", 0, 0, 0, 0, 0, 0},
    [19] = {"IQ1_S", 0, 0, 0, 0, 0, 0},
    [20] = {"IQ4_NL", 0, 0, 0, 0, 0, 0},
    [21] = {"IQ3_S", 0, 0, 0, 0, 0, 0},
    [22] = {"IQ2_S", 0, 0, 0, 0, 0, 0},
    [23] = {"IQ4_XS", 0, 0, 0, 0, 0, 0},
    [24] = {"I8", 1, 1, 0, 0, 0, 0},
    [25] = {"I16", 1, 2, 0, 0, 0, 0},
    [26] = {"I32", 1, 4, 0, 0, 0, 0},
    [27] = {"I64", 1, 8, 0, 0, 0, 0},
    [28] = {"F64", 1, 8, 0, 0, 0, 0},
    [29] = {"IQ1_M", 0, 0, 0, 0, 0, 0},
    [30] = {"BF16", 1, 2, 0, 1, 1, 1},
    [31] = {"Q4_0_4_4", 0, 0, 1, 0, 0, 0},
    [32] = {"Q4_0_4_8", 0, 0, 1, 0, 0, 0},
    [33] = {"Q4_0_8_8", 0, 0, 1, 0, 0, 0},
    [34] = {"TQ1_0", 0, 0, 0, 0, 0, 0},
    [35] = {"TQ2_0", 0, 0, 0, 0, 0, 0},
    [36] = {"IQ4_NL_4_4", 0, 0, 1, 0, 0, 0},
    [37] = {"IQ4_NL_4_8", 0, 0, 1, 0, 0, 0},
    [38] = {"IQ4_NL_8_8", 0, 0, 1, 0, 0, 0},
    [39] = {"MXFP4", 0, 0, 0, 0, 0, 0},
};

const tp_type_info *tp_type_get(uint32_t id)
{
    if (id >= TP_TYPE_ID_LIMIT || !g_types[id].name)
        return NULL;
    return &g_types[id];
}

const char *tp_type_name(uint32_t id)
{
    const tp_type_info *t = tp_type_get(id);
    return t ? t->name : NULL;
}

size_t tp_type_block_elems(uint32_t id)
{
    const tp_type_info *t = tp_type_get(id);
    return t ? t->block_elems : 0;
}

size_t tp_type_block_bytes(uint32_t id)
{
    const tp_type_info *t = tp_type_get(id);
    return t ? t->block_bytes : 0;
}

tp_status tp_type_row_bytes(uint32_t id, size_t n_elems, size_t *bytes)
{
    const tp_type_info *t = tp_type_get(id);
    if (!bytes)
        return tp_fail(TP_ERR_INVALID, "row bytes: NULL result");
    if (!t || t->block_elems == 0)
        return tp_fail(TP_ERR_INVALID, "row bytes: type %u (%s) has no block size", (unsigned)id,
                       t ? t->name : "unknown");
    if (n_elems % t->block_elems != 0)
        return tp_fail(TP_ERR_INVALID, "row bytes: %zu elements are not a multiple of the %s block (%u)",
                       n_elems, t->name, (unsigned)t->block_elems);
    size_t blocks = n_elems / t->block_elems;
    if (blocks > SIZE_MAX / t->block_bytes)
        return tp_fail(TP_ERR_OVERFLOW, "row bytes: %zu elements of %s overflow size_t", n_elems,
                       t->name);
    *bytes = blocks * t->block_bytes;
    return TP_OK;
}

int tp_type_is_retired(uint32_t id)
{
    const tp_type_info *t = tp_type_get(id);
    return t ? t->retired : 0;
}

int tp_type_can_dequantize(uint32_t id)
{
    const tp_type_info *t = tp_type_get(id);
    return t ? t->dequantize : 0;
}

int tp_type_can_quantize(uint32_t id)
{
    const tp_type_info *t = tp_type_get(id);
    return t ? t->quantize : 0;
}

int tp_type_can_execute(uint32_t id)
{
    const tp_type_info *t = tp_type_get(id);
    return t ? t->execute : 0;
}

static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a >= 'a' && *a <= 'z' ? (char)(*a - 'a' + 'A') : *a;
        char y = *b >= 'a' && *b <= 'z' ? (char)(*b - 'a' + 'A') : *b;
        if (x != y)
            return 0;
    }
    return *a == *b;
}

int tp_type_from_name(const char *name, uint32_t *id)
{
    if (!name || !id)
        return 0;
    for (uint32_t i = 0; i < TP_TYPE_ID_LIMIT; i++)
        if (g_types[i].name && same_name(name, g_types[i].name)) {
            *id = i;
            return 1;
        }
    return 0;
}

/* ---- conversions ------------------------------------------------------------------------- */

float tp_f16_to_f32(uint16_t h)
{
    return tp_half_to_float(h);
}

/* Rounds m >> shift to nearest, ties to even (shift >= 1). */
static uint32_t shift_round_even(uint32_t m, unsigned shift)
{
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

uint16_t tp_f32_to_f16(float f)
{
    uint32_t x = tp_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7FFFFFFFu;
    if (x > 0x7F800000u) /* NaN */
        return (uint16_t)(sign | 0x7E00u);
    if (x >= 0x477FF000u) /* 65520 and above (the tie above 65504 goes up): infinity */
        return (uint16_t)(sign | 0x7C00u);
    if (x >= 0x38800000u) { /* 2^-14 and above: normal; a mantissa carry moves the exponent */
        uint32_t e = (x >> 23) - 112u;
        uint32_t h = (e << 10) + shift_round_even(x & 0x7FFFFFu, 13);
        return (uint16_t)(sign | h);
    }
    if (x <= 0x33000000u) /* 2^-25 and below round to zero (2^-25 itself is a tie to 0) */
        return sign;
    /* subnormal result: (1.m * 2^(e-127)) / 2^-24 = m24 * 2^(e-126-24+23+1) */
    uint32_t m = (x & 0x7FFFFFu) | 0x800000u;
    unsigned shift = 126u - (x >> 23);
    return (uint16_t)(sign | shift_round_even(m, shift));
}

float tp_bf16_to_f32(uint16_t b)
{
    return tp_bits_f32((uint32_t)b << 16);
}

uint16_t tp_f32_to_bf16(float f)
{
    uint32_t x = tp_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
