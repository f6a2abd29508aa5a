/* Internal to the GGUF reader and writer: the type table's size rule and value sizes. */
#ifndef TP_GGUF_INTERNAL_H
#define TP_GGUF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum tp_gguf_size_rc {
    TP_GGUF_SIZE_OK = 0,
    TP_GGUF_SIZE_TYPE,     /* retired, unknown or unsupported type          */
    TP_GGUF_SIZE_DIMS,     /* more than 4 dimensions                        */
    TP_GGUF_SIZE_NEGATIVE, /* a dimension < 0                               */
    TP_GGUF_SIZE_BLOCK,    /* ne[0] not a multiple of the block             */
    TP_GGUF_SIZE_OVERFLOW  /* element count or bytes overflow int64/size_t  */
} tp_gguf_size_rc;

/* The bytes of a tensor of TYPE and shape ne[0..n_dims), or why there are none. */
tp_gguf_size_rc tp_gguf_size(uint32_t type, uint32_t n_dims, const int64_t *ne, size_t *nbytes);

/* "4 (Q4_2, retired)", "99 (unknown)", "16 (IQ2_XXS, not supported)". */
void tp_gguf_type_refusal(uint32_t type, char *buf, size_t size);

/* Bytes of one scalar of a value type; 0 for string, array and invalid ids. */
size_t tp_gguf_vtype_bytes(uint32_t type);

/* An f32 / f64 value from its bits (tp_gguf_kv.bits, tp_gguf_array_bits). */
static inline float tp_gguf_bits_f32(uint64_t bits)
{
    const uint32_t u = (uint32_t)bits;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline double tp_gguf_bits_f64(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* PAD(x, a) for a power of two a; returns 0 when it would wrap. */
static inline int tp_gguf_pad(uint64_t x, uint64_t a, uint64_t *out)
{
    if (x > UINT64_MAX - (a - 1))
        return 0;
    *out = (x + a - 1) & ~(a - 1);
    return 1;
}

#endif
