/* Scanning a tensor's stored values for NaN and infinity (tp_gguf_tensor_check_finite,
 * include/tensorplan/gguf.h): float types read directly, block types dequantized block by
 * block, Q8_1 and Q8_K (which tp_dequantize_row does not take) as scale times quant. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "tensorplan/gguf.h"
#include "tensorplan/quant.h"

enum { CHUNK = 4096 }; /* elements dequantized at a time: a multiple of every block size */

static void note(uint64_t index, float v, uint64_t *n_bad, uint64_t *first)
{
    if (isfinite(v))
        return;
    if (*n_bad == 0)
        *first = index;
    (*n_bad)++;
}

/* Q8_1 (f16 d, f16 s, 32 x i8) and Q8_K (f32 d, 256 x i8, 16 x i16): element = d * q. */
static void scan_q8(const tp_gguf_tensor *t, uint64_t n_blocks, uint64_t *n_bad,
                    uint64_t *first)
{
    const unsigned char *p = t->data;
    const int k = t->type == TP_TYPE_Q8_K;
    const size_t bytes = k ? 292 : 36, elems = k ? 256 : 32, qs = 4; /* quants after 4 bytes */
    for (uint64_t b = 0; b < n_blocks; b++, p += bytes) {
        float d = 0.0f;
        if (k) {
            memcpy(&d, p, 4);
        } else {
            const uint16_t h = (uint16_t)(p[0] | p[1] << 8), s = (uint16_t)(p[2] | p[3] << 8);
            d = tp_f16_to_f32(h);
            /* s (d times the sum of the quants) is no element but a stored value too: a
             * block whose s is not finite counts all its elements */
            if (!isfinite(tp_f16_to_f32(s)))
                d = NAN;
        }
        for (size_t i = 0; i < elems; i++)
            note(b * elems + i, d * (float)(int8_t)p[qs + i], n_bad, first);
    }
}

tp_status tp_gguf_tensor_check_finite(const tp_gguf_tensor *t, uint64_t *n_bad, uint64_t *first)
{
    if (!t || !n_bad || !first)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_tensor_check_finite: NULL argument");
    *n_bad = 0;
    *first = 0;
    const size_t be = tp_type_block_elems(t->type), bb = tp_type_block_bytes(t->type);
    if (be == 0 || bb == 0 || t->nbytes % bb != 0)
        return tp_fail(TP_ERR_INVALID, "tensor '%s': type %u has no block size", t->name,
                       (unsigned)t->type);
    const uint64_t n_blocks = t->nbytes / bb, n = n_blocks * be;
    const unsigned char *p = t->data;
    switch (t->type) {
    case TP_TYPE_I8: case TP_TYPE_I16: case TP_TYPE_I32: case TP_TYPE_I64:
        return TP_OK; /* integers are finite */
    case TP_TYPE_F64:
        for (uint64_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, p + 8 * i, 8);
            note(i, isfinite(v) ? 0.0f : (float)NAN, n_bad, first);
        }
        return TP_OK;
    case TP_TYPE_Q8_1: case TP_TYPE_Q8_K:
        scan_q8(t, n_blocks, n_bad, first);
        return TP_OK;
    default:
        break;
    }
    if (!tp_type_can_dequantize(t->type))
        return tp_fail(TP_ERR_INVALID, "tensor '%s': type %s cannot be read", t->name,
                       tp_type_name(t->type));
    float buf[CHUNK];
    for (uint64_t i = 0; i < n; i += CHUNK) {
        const size_t m = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
        TP_TRY(tp_dequantize_row(t->type, p + i / be * bb, buf, m));
        for (size_t j = 0; j < m; j++)
            note(i + j, buf[j], n_bad, first);
    }
    return TP_OK;
}
