/* Internal: the block layouts of docs/quant.md section 3 as named structs.
 *
 * Every field is a byte array, so a block has alignment 1 and can be read wherever it lies
 * (blocks in a file have no alignment); multi-byte fields are little-endian and read with
 * tp_rd_u16 / tp_rd_u32 (quant_internal.h). Each size is asserted once, here. */
#ifndef TP_BACKEND_QUANT_BLOCKS_H
#define TP_BACKEND_QUANT_BLOCKS_H

#include <stdint.h>

typedef struct tp_block_q4_0 {
    uint8_t d[2];   /* f16 scale */
    uint8_t qs[16]; /* element j: low nibble of qs[j]; element j + 16: high nibble */
} tp_block_q4_0;

typedef struct tp_block_q4_1 {
    uint8_t d[2], m[2]; /* f16 scale and min */
    uint8_t qs[16];
} tp_block_q4_1;

typedef struct tp_block_q5_0 {
    uint8_t d[2];
    uint8_t qh[4]; /* u32: bit k is the fifth bit of element k */
    uint8_t qs[16];
} tp_block_q5_0;

typedef struct tp_block_q5_1 {
    uint8_t d[2], m[2];
    uint8_t qh[4];
    uint8_t qs[16];
} tp_block_q5_1;

typedef struct tp_block_q8_0 {
    uint8_t d[2];
    int8_t qs[32];
} tp_block_q8_0;

typedef struct tp_block_q8_1 {
    uint8_t d[2], s[2]; /* f16 scale and d * sum(qs) */
    int8_t qs[32];
} tp_block_q8_1;

typedef struct tp_block_q2_k {
    uint8_t scales[16]; /* sub-block scale (low nibble) and min (high nibble) */
    uint8_t qs[64];
    uint8_t d[2], dmin[2];
} tp_block_q2_k;

typedef struct tp_block_q3_k {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12]; /* sixteen 6-bit scales, biased by 32 */
    uint8_t d[2];
} tp_block_q3_k;

typedef struct tp_block_q4_k {
    uint8_t d[2], dmin[2];
    uint8_t scales[12]; /* eight 6-bit scales and mins (tp_k4_scale_min) */
    uint8_t qs[128];
} tp_block_q4_k;

typedef struct tp_block_q5_k {
    uint8_t d[2], dmin[2];
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
} tp_block_q5_k;

typedef struct tp_block_q6_k {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint8_t d[2];
} tp_block_q6_k;

typedef struct tp_block_q8_k {
    uint8_t d[4]; /* f32 */
    int8_t qs[256];
    uint8_t bsums[32]; /* sixteen int16 sums of 16 consecutive qs */
} tp_block_q8_k;

_Static_assert(sizeof(tp_block_q4_0) == 18, "Q4_0 block is 18 bytes");
_Static_assert(sizeof(tp_block_q4_1) == 20, "Q4_1 block is 20 bytes");
_Static_assert(sizeof(tp_block_q5_0) == 22, "Q5_0 block is 22 bytes");
_Static_assert(sizeof(tp_block_q5_1) == 24, "Q5_1 block is 24 bytes");
_Static_assert(sizeof(tp_block_q8_0) == 34, "Q8_0 block is 34 bytes");
_Static_assert(sizeof(tp_block_q8_1) == 36, "Q8_1 block is 36 bytes");
_Static_assert(sizeof(tp_block_q2_k) == 84, "Q2_K block is 84 bytes");
_Static_assert(sizeof(tp_block_q3_k) == 110, "Q3_K block is 110 bytes");
_Static_assert(sizeof(tp_block_q4_k) == 144, "Q4_K block is 144 bytes");
_Static_assert(sizeof(tp_block_q5_k) == 176, "Q5_K block is 176 bytes");
_Static_assert(sizeof(tp_block_q6_k) == 210, "Q6_K block is 210 bytes");
_Static_assert(sizeof(tp_block_q8_k) == 292, "Q8_K block is 292 bytes");

#endif
