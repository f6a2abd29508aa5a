/* GGUF tensor and value types (docs/gguf.md, "Tensor types"): ids, names, block sizes, and the
 * byte size of a tensor. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "io/gguf_internal.h"
#include "tensorplan/gguf.h"

enum { T_UNKNOWN = 0, T_OK, T_RETIRED, T_UNSUPPORTED };

typedef struct type_info {
    const char *name;
    uint16_t block_elems;
    uint16_t block_bytes;
    uint8_t state;
} type_info;

#define OK_(n, e, b) { n, e, b, T_OK }
#define RETIRED_(n) { n, 0, 0, T_RETIRED }
#define UNSUP_(n) { n, 0, 0, T_UNSUPPORTED }

static const type_info types[] = {
    [0] = OK_("F32", 1, 4),         [1] = OK_("F16", 1, 2),
    [2] = OK_("Q4_0", 32, 18),      [3] = OK_("Q4_1", 32, 20),
    [4] = RETIRED_("Q4_2"),         [5] = RETIRED_("Q4_3"),
    [6] = OK_("Q5_0", 32, 22),      [7] = OK_("Q5_1", 32, 24),
    [8] = OK_("Q8_0", 32, 34),      [9] = OK_("Q8_1", 32, 36),
    [10] = OK_("Q2_K", 256, 84),    [11] = OK_("Q3_K", 256, 110),
    [12] = OK_("Q4_K", 256, 144),   [13] = OK_("Q5_K", 256, 176),
    [14] = OK_("Q6_K", 256, 210),   [15] = OK_("Q8_K", 256, 292),
    [16] = UNSUP_("IQ2_XXS"),       [17] = UNSUP_("IQ2_XS"),
    [18] = UNSUP_("IQ3_XXS"),       [19] = UNSUP_("IQ1_S"),
    [20] = UNSUP_("IQ4_NL"),        [21] = UNSUP_("IQ3_S"),
    [22] = UNSUP_("IQ2_S"),         [23] = UNSUP_("IQ4_XS"),
    [24] = OK_("I8", 1, 1),         [25] = OK_("I16", 1, 2),
    [26] = OK_("I32", 1, 4),        [27] = OK_("I64", 1, 8),
    [28] = OK_("F64", 1, 8),        [29] = UNSUP_("IQ1_M"),
    [30] = OK_("BF16", 1, 2),       [31] = RETIRED_("Q4_0_4_4"),
    [32] = RETIRED_("Q4_0_4_8"),    [33] = RETIRED_("Q4_0_8_8"),
    [34] = UNSUP_("TQ1_0"),         [35] = UNSUP_("TQ2_0"),
    [36] = RETIRED_("IQ4_NL_4_4"),  [37] = RETIRED_("IQ4_NL_4_8"),
    [38] = RETIRED_("IQ4_NL_8_8"),  [39] = UNSUP_("MXFP4"),
};
enum { N_TYPES = sizeof types / sizeof types[0] };

static const type_info *info(uint32_t type)
{
    return type < N_TYPES ? &types[type] : NULL;
}

const char *tp_gguf_type_name(uint32_t type)
{
    const type_info *t = info(type);
    return t && (t->state == T_OK || t->state == T_UNSUPPORTED) ? t->name : NULL;
}

size_t tp_gguf_type_block_elems(uint32_t type)
{
    const type_info *t = info(type);
    return t && t->state == T_OK ? t->block_elems : 0;
}

size_t tp_gguf_type_block_bytes(uint32_t type)
{
    const type_info *t = info(type);
    return t && t->state == T_OK ? t->block_bytes : 0;
}

void tp_gguf_type_refusal(uint32_t type, char *buf, size_t size)
{
    const type_info *t = info(type);
    if (!t || t->state == T_UNKNOWN)
        snprintf(buf, size, "%u (unknown)", (unsigned)type);
    else if (t->state == T_RETIRED)
        snprintf(buf, size, "%u (%s, retired)", (unsigned)type, t->name);
    else
        snprintf(buf, size, "%u (%s, not supported)", (unsigned)type, t->name);
}

tp_gguf_size_rc tp_gguf_size(uint32_t type, uint32_t n_dims, const int64_t *ne, size_t *nbytes)
{
    const size_t blck = tp_gguf_type_block_elems(type);
    if (blck == 0)
        return TP_GGUF_SIZE_TYPE;
    if (n_dims > TP_GGUF_MAX_DIMS)
        return TP_GGUF_SIZE_DIMS;
    int64_t count = 1;
    uint64_t rows = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] < 0)
            return TP_GGUF_SIZE_NEGATIVE;
        if (ne[d] != 0 && count > INT64_MAX / ne[d])
            return TP_GGUF_SIZE_OVERFLOW;
        count *= ne[d];
        if (d > 0)
            rows *= (uint64_t)ne[d]; /* <= count, cannot wrap */
    }
    if (n_dims > 0 && ne[0] % (int64_t)blck != 0)
        return TP_GGUF_SIZE_BLOCK;
    const uint64_t row_blocks = n_dims > 0 ? (uint64_t)ne[0] / blck : 1;
    const uint64_t row_bytes = row_blocks * tp_gguf_type_block_bytes(type); /* < 2^63 * 292 / 32 */
    if (row_blocks != 0 && row_bytes / row_blocks != tp_gguf_type_block_bytes(type))
        return TP_GGUF_SIZE_OVERFLOW;
    if (rows != 0 && row_bytes > (uint64_t)INT64_MAX / rows)
        return TP_GGUF_SIZE_OVERFLOW;
    if (row_bytes * rows > SIZE_MAX)
        return TP_GGUF_SIZE_OVERFLOW;
    *nbytes = (size_t)(row_bytes * rows);
    return TP_GGUF_SIZE_OK;
}

tp_status tp_gguf_tensor_nbytes(uint32_t type, uint32_t n_dims, const int64_t *ne,
                                size_t *nbytes)
{
    char why[64];
    switch (tp_gguf_size(type, n_dims, ne, nbytes)) {
    case TP_GGUF_SIZE_OK:
        return TP_OK;
    case TP_GGUF_SIZE_TYPE:
        tp_gguf_type_refusal(type, why, sizeof why);
        return tp_fail(TP_ERR_INVALID, "GGUF: expected a supported tensor type, got %s", why);
    case TP_GGUF_SIZE_DIMS:
        return tp_fail(TP_ERR_INVALID, "GGUF: expected at most 4 dimensions, got %u",
                       (unsigned)n_dims);
    case TP_GGUF_SIZE_NEGATIVE:
        return tp_fail(TP_ERR_INVALID, "GGUF: expected dimensions >= 0");
    case TP_GGUF_SIZE_BLOCK:
        return tp_fail(TP_ERR_INVALID, "GGUF: expected ne[0] = %lld to be a multiple of %zu",
                       (long long)ne[0], tp_gguf_type_block_elems(type));
    case TP_GGUF_SIZE_OVERFLOW:
        break;
    }
    return tp_fail(TP_ERR_OVERFLOW, "GGUF: the element count or byte size overflows");
}

static const char *const vtype_names[TP_GGUF_VTYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};
static const unsigned char vtype_bytes[TP_GGUF_VTYPE_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

const char *tp_gguf_vtype_name(uint32_t type)
{
    return type < TP_GGUF_VTYPE_COUNT ? vtype_names[type] : "?";
}

size_t tp_gguf_vtype_bytes(uint32_t type)
{
    return type < TP_GGUF_VTYPE_COUNT ? vtype_bytes[type] : 0;
}

double tp_gguf_bits_to_double(tp_gguf_vtype type, uint64_t bits)
{
    switch (type) {
    case TP_GGUF_U8: case TP_GGUF_U16: case TP_GGUF_U32: case TP_GGUF_U64:
        return (double)bits;
    case TP_GGUF_I8: return (double)(int8_t)(uint8_t)bits;
    case TP_GGUF_I16: return (double)(int16_t)(uint16_t)bits;
    case TP_GGUF_I32: return (double)(int32_t)(uint32_t)bits;
    case TP_GGUF_I64: return (double)(int64_t)bits;
    case TP_GGUF_BOOL: return bits != 0 ? 1.0 : 0.0;
    case TP_GGUF_F32: {
        const uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    case TP_GGUF_F64: {
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    default:
        return 0.0;
    }
}
