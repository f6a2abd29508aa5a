/* The type table, name lookups, row sizes and the f16/bf16 conversions (docs/quant.md). */
#include "tensorplan/quant.h"

#include <stdint.h>
#include <string.h>

#include "backend/quant_blocks.h"
#include "backend/quant_internal.h"
#include "common/error.h"

/* Capabilities of a type: what tp_dequantize_row, tp_quantize_row and the typed kernels accept. */
#define CAN_DEQ .dequantize = 1
#define CAN_QUANT .quantize = 1
#define CAN_EXEC .execute = 1
/* A block type: elements per block and the size of its struct (quant_blocks.h). */
#define BLOCK(elems, type) .block_elems = (elems), .block_bytes = sizeof(type)
/* A scalar type of `bytes` bytes. */
#define SCALAR(bytes) .block_elems = 1, .block_bytes = (bytes)

static const tp_type_info g_types[TP_TYPE_ID_LIMIT] = {
    [TP_TYPE_F32] = {.name = "F32", SCALAR(4), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_F16] = {.name = "F16", SCALAR(2), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q4_0] = {.name = "Q4_0", BLOCK(32, tp_block_q4_0), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q4_1] = {.name = "Q4_1", BLOCK(32, tp_block_q4_1), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [4] = {.name = "Q4_2", .retired = 1},
    [5] = {.name = "Q4_3", .retired = 1},
    [TP_TYPE_Q5_0] = {.name = "Q5_0", BLOCK(32, tp_block_q5_0), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q5_1] = {.name = "Q5_1", BLOCK(32, tp_block_q5_1), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q8_0] = {.name = "Q8_0", BLOCK(32, tp_block_q8_0), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q8_1] = {.name = "Q8_1", BLOCK(32, tp_block_q8_1)},
    [TP_TYPE_Q2_K] = {.name = "Q2_K", BLOCK(256, tp_block_q2_k), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q3_K] = {.name = "Q3_K", BLOCK(256, tp_block_q3_k), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q4_K] = {.name = "Q4_K", BLOCK(256, tp_block_q4_k), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q5_K] = {.name = "Q5_K", BLOCK(256, tp_block_q5_k), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q6_K] = {.name = "Q6_K", BLOCK(256, tp_block_q6_k), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [TP_TYPE_Q8_K] = {.name = "Q8_K", BLOCK(256, tp_block_q8_k)},
    [16] = {.name = "IQ2_XXS"},
    [17] = {.name = "IQ2_XS"},
    [18] = {.name = "IQ3_XXS"},
    [19] = {.name = "IQ1_S"},
    [20] = {.name = "IQ4_NL"},
    [21] = {.name = "IQ3_S"},
    [22] = {.name = "IQ2_S"},
    [23] = {.name = "IQ4_XS"},
    [TP_TYPE_I8] = {.name = "I8", SCALAR(1)},
    [TP_TYPE_I16] = {.name = "I16", SCALAR(2)},
    [TP_TYPE_I32] = {.name = "I32", SCALAR(4)},
    [TP_TYPE_I64] = {.name = "I64", SCALAR(8)},
    [TP_TYPE_F64] = {.name = "F64", SCALAR(8)},
    [29] = {.name = "IQ1_M"},
    [TP_TYPE_BF16] = {.name = "BF16", SCALAR(2), CAN_DEQ, CAN_QUANT, CAN_EXEC},
    [31] = {.name = "Q4_0_4_4", .retired = 1},
    [32] = {.name = "Q4_0_4_8", .retired = 1},
    [33] = {.name = "Q4_0_8_8", .retired = 1},
    [34] = {.name = "TQ1_0"},
    [35] = {.name = "TQ2_0"},
    [36] = {.name = "IQ4_NL_4_4", .retired = 1},
    [37] = {.name = "IQ4_NL_4_8", .retired = 1},
    [38] = {.name = "IQ4_NL_8_8", .retired = 1},
    [39] = {.name = "MXFP4"},
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
