/* GGUF tensor and value types (docs/gguf.md, "Tensor types"): the tensor types as quant.h
 * tables them (docs/quant.md), the byte size of a tensor, and the value types. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "gguf/gguf_internal.h"
#include "tensorplan/gguf.h"
#include "tensorplan/quant.h"

/* The one type table of the project is quant.h's (src/backend/quant.c): an id without an
 * entry is unknown, a retired entry is refused as retired, an entry without a block size is
 * named but not supported. */
const char *tp_gguf_type_name(uint32_t type)
{
    const tp_type_info *t = tp_type_get(type);
    return t && !t->retired ? t->name : NULL;
}

size_t tp_gguf_type_block_elems(uint32_t type)
{
    return tp_type_block_elems(type);
}

size_t tp_gguf_type_block_bytes(uint32_t type)
{
    return tp_type_block_bytes(type);
}

void tp_gguf_type_refusal(uint32_t type, char *buf, size_t size)
{
    const tp_type_info *t = tp_type_get(type);
    if (!t)
        snprintf(buf, size, "%u (unknown)", (unsigned)type);
    else if (t->retired)
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
    /* a missing ne[0] is 1, which a block of more than one element does not divide */
    const int64_t ne0 = n_dims > 0 ? ne[0] : 1;
    if (ne0 % (int64_t)blck != 0)
        return TP_GGUF_SIZE_BLOCK;
    const uint64_t row_blocks = (uint64_t)ne0 / blck;
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
    case TP_GGUF_F32: return tp_gguf_bits_f32(bits);
    case TP_GGUF_F64: return tp_gguf_bits_f64(bits);
    default:
        return 0.0;
    }
}
