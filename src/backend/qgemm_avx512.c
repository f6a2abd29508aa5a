/* The AVX-512 form (F, BW, VL, VNNI) of the prefill products (backend/qgemm.h): 512-bit
 * vectors, sixteen weight rows in the lanes, tiles of up to twelve tokens, pairs of 16-bit
 * products summed by vpdpwssd. Every function carries the target attribute, so the
 * instructions only run after the dispatch (qdot_dispatch.c) has checked the processor. */
#include "backend/qgemm.h"
#include "tensorplan/quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "backend/quant_internal.h"

#define TGT __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define INL static inline TGT __attribute__((always_inline))
#define T TP_QGEMM_TOKENS

/* One decoded panel in the scratch: per group, q[g][p][r] (16 pairs x 16 rows), the rows'
 * f32 scales a[g][r] and mins b[g][e][r] (e = 0: the group's min, or the first half's for
 * Q2_K; e = 1: the second half's, Q2_K only). */
typedef struct panel {
    int32_t *q;
    float *a, *b;
} panel;

INL float h2f(const uint8_t *p)
{
    return _cvtsh_ss(tp_rd_u16(p));
}

/* 16 bytes at p, zero-extended into 32-bit lanes. */
INL __m512i ld_u8(const uint8_t *p)
{
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
}

INL __m512i ld_i8(const uint8_t *p)
{
    return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
}

INL __m512i set32(int v)
{
    return _mm512_set1_epi32(v);
}

/* Pairs: the low 16 bits of lo below the low 16 bits of hi. */
INL __m512i pair_of(__m512i lo, __m512i hi)
{
    return _mm512_or_si512(_mm512_and_si512(lo, set32(0xFFFF)), _mm512_slli_epi32(hi, 16));
}

/* Byte lanes as pairs of their nibbles: the low nibble below the high one. */
INL __m512i nib_pair(__m512i v)
{
    return _mm512_or_si512(_mm512_and_si512(v, set32(15)),
                           _mm512_slli_epi32(_mm512_and_si512(v, set32(0xF0)), 12));
}

/* ---- one row's group g as 16 pairs (element p below element p + 16), scale, min ------- */

/* A 32-bit lane of the 16-bit values lo (low half) and hi. */
INL __m512i pair16(int lo, int hi)
{
    return _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_set1_epi16((short)lo),
                                   _mm512_set1_epi16((short)hi));
}

/* The fifth bits of the 32 elements (bit j of qh for element j) of a Q5_0 / Q5_1 block as 16
 * in each half of the pairs. */
INL __m512i fifth_pairs(const uint8_t *qh)
{
    const __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i hv = _mm512_srlv_epi32(set32((int)tp_rd_u32(qh)), idx);
    return _mm512_slli_epi32(_mm512_and_si512(hv, set32(0x10001)), 4);
}

INL void dec_q4_0(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g * 18;
    *v = _mm512_sub_epi16(nib_pair(ld_u8(blk + 2)), _mm512_set1_epi16(8));
    *a = h2f(blk);
    *b = 0;
}

INL void dec_q5_0(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g * 22;
    __m512i w = _mm512_or_si512(nib_pair(ld_u8(blk + 6)), fifth_pairs(blk + 2));
    *v = _mm512_sub_epi16(w, _mm512_set1_epi16(16));
    *a = h2f(blk);
    *b = 0;
}

INL void dec_q4_1(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g * 20;
    *v = nib_pair(ld_u8(blk + 4));
    *a = h2f(blk);
    *b = -h2f(blk + 2);
}

INL void dec_q5_1(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g * 24;
    *v = _mm512_or_si512(nib_pair(ld_u8(blk + 8)), fifth_pairs(blk + 4));
    *a = h2f(blk);
    *b = -h2f(blk + 2);
}

INL void dec_q8_0(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g * 34;
    *v = pair_of(ld_i8(blk + 2), ld_i8(blk + 18));
    *a = h2f(blk);
    *b = 0;
}

/* Q4_K / Q5_K: group j of a block of 256 is the low (j even) or high nibbles of 32 bytes
 * (Q5_K: plus bit j of qh[e] as 16 for element e). */
INL void dec_k45(const uint8_t *row, size_t g, int five, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * (five ? 176 : 144);
    int j = (int)(g % 8);
    const uint8_t *qs = blk + (five ? 48 : 16) + 32 * (j / 2);
    __m128i sh = _mm_cvtsi32_si128(4 * (j & 1));
    __m512i lo = _mm512_and_si512(_mm512_srl_epi32(ld_u8(qs), sh), set32(15));
    __m512i hi = _mm512_and_si512(_mm512_srl_epi32(ld_u8(qs + 16), sh), set32(15));
    if (five) {
        __m128i hb = _mm_cvtsi32_si128(j);
        lo = _mm512_or_si512(lo, _mm512_slli_epi32(
                                     _mm512_and_si512(_mm512_srl_epi32(ld_u8(blk + 16), hb), set32(1)), 4));
        hi = _mm512_or_si512(hi, _mm512_slli_epi32(
                                     _mm512_and_si512(_mm512_srl_epi32(ld_u8(blk + 32), hb), set32(1)), 4));
    }
    *v = _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
    unsigned sc, m;
    tp_k4_scale_min(blk + 4, j, &sc, &m);
    *a = h2f(blk) * (float)sc;
    *b = h2f(blk + 2) * (float)m;
}

INL void dec_q4_k(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    dec_k45(row, g, 0, v, a, b);
}

INL void dec_q5_k(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    dec_k45(row, g, 1, v, a, b);
}

/* Q6_K: group 4 h + r of a block of 256; the two sub-blocks' int8 scales are multiplied into
 * the quants (|q sc| <= 32 * 128, so sixteen products with |x| <= 32767 stay in int32: the
 * products sum eight pairs at a time, see KPC_Q6_K). */
INL void dec_q6_k(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * 210;
    int j = (int)(g % 8), h = j / 4, r = j % 4;
    const uint8_t *ql = blk + 64 * h + 32 * (r & 1), *qh = blk + 128 + 32 * h;
    __m128i sl = _mm_cvtsi32_si128(4 * (r >> 1)), shh = _mm_cvtsi32_si128(2 * r);
    __m512i q[2];
    for (int e = 0; e < 2; e++) {
        __m512i lo = _mm512_and_si512(_mm512_srl_epi32(ld_u8(ql + 16 * e), sl), set32(15));
        __m512i up = _mm512_and_si512(_mm512_srl_epi32(ld_u8(qh + 16 * e), shh), set32(3));
        __m512i w = _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(up, 4)), set32(32));
        q[e] = _mm512_mullo_epi32(w, set32((int8_t)blk[192 + 8 * h + 2 * r + e]));
    }
    *v = pair_of(q[0], q[1]);
    *a = h2f(blk + 208);
    *b = 0;
}

/* Q2_K: group 4 h + j of a block of 256 (elements 128 h + 32 j + l, l < 32) takes the 2-bit
 * fields 2 j of qs[32 h + l]; the 4-bit scales of its two sub-blocks (elements l < 16 and
 * l >= 16, the two halves of the pairs) are multiplied into the quants (q sc <= 45), and
 * their mins times dmin go to b[0] and b[16]. */
INL void dec_q2_k(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * 84, *qs = blk + 16 + 32 * (g % 8 / 4);
    const uint8_t *sc = blk + 2 * (g % 8);
    __m128i sh = _mm_cvtsi32_si128(2 * (int)(g % 4));
    __m512i lo = _mm512_and_si512(_mm512_srl_epi32(ld_u8(qs), sh), set32(3));
    __m512i hi = _mm512_and_si512(_mm512_srl_epi32(ld_u8(qs + 16), sh), set32(3));
    *v = _mm512_mullo_epi16(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)),
                            pair16(sc[0] & 15, sc[1] & 15));
    float dmin = h2f(blk + 82);
    *a = h2f(blk + 80);
    b[0] = dmin * (float)(sc[0] >> 4);
    b[16] = dmin * (float)(sc[1] >> 4);
}

/* Q3_K: group 4 h + j as Q2_K's fields of qs (at 32), less 4 where bit 4 h + j of hmask[l]
 * is clear (-4..3); the signed 6-bit scales (-32..31) of the two sub-blocks are multiplied
 * into the quants (|q sc| <= 128: sixteen pair products with |x| <= 32767 stay below 2^31,
 * so one conversion per group, as for the types without sub-block scales). */
INL void dec_q3_k(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * 110, *qs = blk + 32 + 32 * (g % 8 / 4);
    int jj = (int)(g % 8);
    __m128i sh = _mm_cvtsi32_si128(2 * (jj % 4)), hb = _mm_cvtsi32_si128(jj);
    __m512i q[2];
    for (int e = 0; e < 2; e++) {
        __m512i low = _mm512_and_si512(_mm512_srl_epi32(ld_u8(qs + 16 * e), sh), set32(3));
        __m512i top = _mm512_and_si512(_mm512_srl_epi32(ld_u8(blk + 16 * e), hb), set32(1));
        q[e] = _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(top, 2)), set32(4));
    }
    *v = _mm512_mullo_epi16(pair_of(q[0], q[1]), pair16(tp_q3_k_scale(blk + 96, 2 * jj) - 32,
                                                        tp_q3_k_scale(blk + 96, 2 * jj + 1) - 32));
    *a = h2f(blk + 108);
    *b = 0;
}

/* ---- a panel: 16 rows' groups, transposed so that each vector holds one pair of 16 rows */

INL void transpose16(__m512i v[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* u[i + c]: rows i..i+3 of the columns 4 l + c */
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        __m512i a0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
        __m512i a1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
        __m512i a2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
        __m512i a3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
        v[c] = _mm512_shuffle_i32x4(a0, a2, 0x88);
        v[4 + c] = _mm512_shuffle_i32x4(a0, a2, 0xDD);
        v[8 + c] = _mm512_shuffle_i32x4(a1, a3, 0x88);
        v[12 + c] = _mm512_shuffle_i32x4(a1, a3, 0xDD);
    }
}

/* Groups [g0, g1) of rows [r0, r0 + nr) of W (nr <= 16; missing rows are zeros) into the
 * panel, group g at its place g - g0. */
#define PACK(name)                                                                             \
    static TGT void pack_##name(const uint8_t *W, size_t rb, size_t r0, int nr, size_t g0,    \
                                size_t g1, const panel *p)                                    \
    {                                                                                          \
        for (size_t g = g0; g < g1; g++) {                                                     \
            __m512i v[16];                                                                     \
            float a[16], b[32];                                                                \
            for (int r = 0; r < 16; r++) {                                                     \
                b[16 + r] = 0; /* the second mins, Q2_K's only */                              \
                if (r < nr) {                                                                  \
                    dec_##name(W + (r0 + (size_t)r) * rb, g, &v[r], &a[r], &b[r]);              \
                } else {                                                                       \
                    v[r] = _mm512_setzero_si512();                                             \
                    a[r] = b[r] = 0;                                                           \
                }                                                                              \
            }                                                                                  \
            transpose16(v);                                                                    \
            size_t at = g - g0;                                                                \
            for (int c = 0; c < 16; c++)                                                       \
                _mm512_storeu_si512((void *)(p->q + at * 256 + (size_t)c * 16), v[c]);        \
            memcpy(p->a + at * 16, a, sizeof a);                                               \
            memcpy(p->b + at * 32, b, sizeof b);                                               \
        }                                                                                      \
    }
PACK(q4_0)
PACK(q4_1)
PACK(q5_0)
PACK(q5_1)
PACK(q8_0)
PACK(q2_k)
PACK(q3_k)
PACK(q4_k)
PACK(q5_k)
PACK(q6_k)

/* ---- a tile: the panel's 16 rows times n_x tokens of one activation tile --------------- */

/* Groups in order (n_g of them, from the panel's first); within a group, the integer sums of
 * kpc pairs (16, or 8 for Q6_K) are converted and scaled (a * dx) into f, then the min times
 * the exact group sum leaves it (has_min 1), or each half's min times the exact sum of the
 * half, first half first (has_min 2, Q2_K). */
INL void tile(const panel *p, size_t n_g, const int32_t *xq, const float *xd, const float *xs,
              const float *xh, int n_x, int kpc, int has_min, __m512 *f)
{
    for (size_t g = 0; g < n_g; g++) {
        const int32_t *wg = p->q + g * 256, *xg = xq + g * 16 * T;
        __m512 A = _mm512_loadu_ps(p->a + g * 16);
        for (int h = 0; h < 16; h += kpc) {
            __m512i acc[T];
            for (int k = 0; k < n_x; k++)
                acc[k] = _mm512_setzero_si512();
#pragma GCC unroll 16
            for (int c = h; c < h + kpc; c++) {
                __m512i w = _mm512_loadu_si512((const void *)(wg + c * 16));
                for (int k = 0; k < n_x; k++)
                    acc[k] = _mm512_dpwssd_epi32(acc[k], w, _mm512_set1_epi32(xg[c * T + k]));
            }
            for (int k = 0; k < n_x; k++)
                f[k] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[k]), A),
                                       _mm512_set1_ps(xd[g * T + k]), f[k]);
        }
        if (has_min == 1) {
            __m512 B = _mm512_loadu_ps(p->b + g * 32);
            for (int k = 0; k < n_x; k++)
                f[k] = _mm512_fnmadd_ps(B, _mm512_set1_ps(xs[g * T + k]), f[k]);
        } else if (has_min == 2) {
            __m512 B0 = _mm512_loadu_ps(p->b + g * 32), B1 = _mm512_loadu_ps(p->b + g * 32 + 16);
            for (int k = 0; k < n_x; k++) {
                f[k] = _mm512_fnmadd_ps(B0, _mm512_set1_ps(xh[2 * g * T + k]), f[k]);
                f[k] = _mm512_fnmadd_ps(B1, _mm512_set1_ps(xh[(2 * g + 1) * T + k]), f[k]);
            }
        }
    }
}

/* Where one panel's chunk of groups meets the tiles. */
typedef struct chunk {
    const tp_qgemm_x *x;
    size_t g0, g1; /* the groups */
    const float *b;
    float *y;
    size_t n_out, r; /* the panel's first row */
    int nr;
    int kpc, has_min;
} chunk;

/* Tile i of x against the panel: the sums so far from y (nothing before the first chunk),
 * this chunk's groups, back to y (with b after the last chunk). The sums pass through y
 * unchanged, so the chunks never change a bit. */
INL void tile_chunk(const panel *p, const chunk *c, size_t i, int n_x)
{
    const tp_qgemm_x *x = c->x;
    size_t n_g = x->n_in / 32;
    __mmask16 m = (__mmask16)((1u << c->nr) - 1);
    float *y = c->y + i * T * c->n_out + c->r;
    __m512 f[T];
    for (int k = 0; k < n_x; k++)
        f[k] = c->g0 ? _mm512_maskz_loadu_ps(m, y + (size_t)k * c->n_out) : _mm512_setzero_ps();
    size_t xo = (i * n_g + c->g0) * T;
    tile(p, c->g1 - c->g0, x->q + i * T * (x->n_in / 2) + c->g0 * 16 * T, x->d + xo, x->s + xo,
         x->h + 2 * xo, n_x, c->kpc, c->has_min, f);
    __m512 bias = c->b && c->g1 == n_g ? _mm512_maskz_loadu_ps(m, c->b + c->r) : _mm512_setzero_ps();
    for (int k = 0; k < n_x; k++)
        _mm512_mask_storeu_ps(y + (size_t)k * c->n_out, m, _mm512_add_ps(f[k], bias));
}

/* Every tile of x against one panel's chunk, each token count its own unrolled loop; the
 * next panel's rows of the chunk are prefetched a few per tile (next: its first row). */
#define TC(n) tile_chunk(p, c, i, n)
INL void panel_tiles(const panel *p, const chunk *c, const uint8_t *next, int next_rows,
                     size_t rb, size_t seg0, size_t seg1)
{
    size_t n_tok = c->x->n_tok, n_tiles = (n_tok + T - 1) / T;
    for (size_t i = 0; i < n_tiles; i++) {
        for (size_t r = i * 16 / n_tiles; r < (i + 1) * 16 / n_tiles && (int)r < next_rows; r++)
            for (size_t o = seg0; o < seg1; o += 64)
                _mm_prefetch((const char *)(next + r * rb + o), _MM_HINT_T0);
        size_t left = n_tok - i * T;
        switch (left >= T ? T : left) {
        case 1: TC(1); break;
        case 2: TC(2); break;
        case 3: TC(3); break;
        case 4: TC(4); break;
        case 5: TC(5); break;
        case 6: TC(6); break;
        case 7: TC(7); break;
        case 8: TC(8); break;
        case 9: TC(9); break;
        case 10: TC(10); break;
        case 11: TC(11); break;
        default: TC(12); break;
        }
    }
}

/* Groups per chunk: the panel's chunk (1,152 bytes a group) stays in the first-level cache
 * and every token's chunk (64 bytes a group) in the second-level cache. */
static size_t chunk_groups(size_t n_g, size_t n_tok)
{
    size_t by_tokens = (size_t)(640 * 1024) / (64 * (n_tok + T));
    size_t kc = by_tokens < TP_QGEMM_MAX_CHUNK ? by_tokens : TP_QGEMM_MAX_CHUNK;
    kc = kc < 4 ? 4 : kc;
    size_t n_chunks = (n_g + kc - 1) / kc; /* chunks of even size */
    return (n_g + n_chunks - 1) / n_chunks;
}

/* Tokens per block: a block's chunk of the activations stays in the second-level cache
 * while every panel meets it (each panel's chunk is decoded once per block). */
#define TOKEN_BLOCK (10 * T)

/* The view of tokens [t0, t0 + n) of x (t0 a multiple of T). */
static tp_qgemm_x token_block(const tp_qgemm_x *x, size_t t0, size_t n)
{
    size_t n_g = x->n_in / 32;
    tp_qgemm_x v = *x;
    v.q += t0 * (x->n_in / 2);
    v.d += t0 * n_g;
    v.s += t0 * n_g;
    v.h += t0 * 2 * n_g;
    v.n_tok = n;
    return v;
}

/* Blocks of tokens, then chunks of groups, then panels: each panel's chunk is decoded once
 * per token block and meets every tile of the block. */
#define GEMM(name, KPC, HAS_MIN)                                                               \
    static TGT void gemm_##name(const uint8_t *W, size_t rb, size_t r0, size_t r1,             \
                                const tp_qgemm_x *x, const float *b, float *y, size_t n_out,   \
                                void *scratch)                                                 \
    {                                                                                          \
        size_t n_g = x->n_in / 32, kc = chunk_groups(n_g, TOKEN_BLOCK);                       \
        panel p;                                                                               \
        p.q = scratch;                                                                         \
        p.a = (float *)(void *)(p.q + kc * 256);                                               \
        p.b = p.a + kc * 16;                                                                   \
        for (size_t t0 = 0; t0 < x->n_tok; t0 += TOKEN_BLOCK) {                                \
            tp_qgemm_x xv = token_block(x, t0, x->n_tok - t0 < TOKEN_BLOCK ? x->n_tok - t0     \
                                                                           : TOKEN_BLOCK);     \
            chunk c = {&xv, 0, 0, b, y + t0 * n_out, n_out, 0, 0, KPC, HAS_MIN};               \
            for (c.g0 = 0; c.g0 < n_g; c.g0 = c.g1) {                                          \
                c.g1 = n_g - c.g0 < kc ? n_g : c.g0 + kc;                                      \
                size_t seg0 = rb * c.g0 / n_g, seg1 = rb * c.g1 / n_g + 64;                    \
                for (c.r = r0; c.r < r1; c.r += TP_QGEMM_ROWS) {                               \
                    c.nr = r1 - c.r < TP_QGEMM_ROWS ? (int)(r1 - c.r) : TP_QGEMM_ROWS;         \
                    pack_##name(W, rb, c.r, c.nr, c.g0, c.g1, &p);                             \
                    size_t nx = c.r + TP_QGEMM_ROWS < r1 ? r1 - c.r - TP_QGEMM_ROWS : 0;       \
                    panel_tiles(&p, &c, W + (c.r + TP_QGEMM_ROWS) * rb,                        \
                                nx < TP_QGEMM_ROWS ? (int)nx : TP_QGEMM_ROWS, rb, seg0,        \
                                seg1 < rb ? seg1 : rb);                                        \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
GEMM(q4_0, 16, 0)
GEMM(q4_1, 16, 1)
GEMM(q5_0, 16, 0)
GEMM(q5_1, 16, 1)
GEMM(q8_0, 16, 0)
GEMM(q2_k, 16, 2)
GEMM(q3_k, 16, 0)
GEMM(q4_k, 16, 1)
GEMM(q5_k, 16, 1)
GEMM(q6_k, 8, 0)

/* ---- the activations ----------------------------------------------------------------- */

/* The two 256-bit halves of v as eight doubles, added lane by lane (exact). */
INL __m512d sum_pd(__m512 v)
{
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), _mm512_cvtps_pd(hi));
}

/* One token's group of 32 at v into the tiles: pairs at dst[p * T], scale, sum, the sums of
 * its halves at h[0] and h[T]. */
INL void tile_group(const float *v, int32_t *dst, float *d, float *s, float *h)
{
    const __m512 big = _mm512_set1_ps(3.40282347e38f);
    __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
    __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
    /* NaN compares false, so a non-finite value leaves its lane out of the mask */
    int finite = (_mm512_cmp_ps_mask(a0, big, _CMP_LE_OQ) &
                  _mm512_cmp_ps_mask(a1, big, _CMP_LE_OQ)) == 0xFFFF;
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    float id = amax > 0.0f ? 32767.0f / amax : 0.0f;
    const __m512i idx = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), set32(T));
    if (!finite || !(id <= 3.40282347e38f)) { /* poisoned, or too tiny: rounds to zero */
        _mm512_i32scatter_epi32(dst, idx, _mm512_setzero_si512(), 4);
        *d = *s = h[0] = h[T] = finite ? 0.0f : NAN;
        return;
    }
    *d = amax / 32767.0f;
    const __m512i hi = set32(32767), lo = set32(-32767);
    __m512 vid = _mm512_set1_ps(id);
    __m512i q0 = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v0, vid)), hi), lo);
    __m512i q1 = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v1, vid)), hi), lo);
    _mm512_i32scatter_epi32(dst, idx, pair_of(q0, q1), 4);
    __m512d s0 = sum_pd(v0), s1 = sum_pd(v1);
    *s = (float)_mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    h[0] = (float)_mm512_reduce_add_pd(s0);
    h[T] = (float)_mm512_reduce_add_pd(s1);
}

static TGT void tile_x(const float *x, size_t n_in, size_t n_tok, void *mem, tp_qgemm_x *xt)
{
    const size_t n_g = n_in / 32;
    size_t tiles = (n_tok + T - 1) / T;
    int32_t *xq = mem;
    float *xd = (float *)(void *)(xq + tiles * T * (n_in / 2)), *xs = xd + tiles * T * n_g;
    float *xh = xs + tiles * T * n_g;
    if (n_tok % T) { /* the padding tokens of the last tile */
        memset(xq + (tiles - 1) * T * (n_in / 2), 0, T * (n_in / 2) * sizeof *xq);
        memset(xd + (tiles - 1) * T * n_g, 0, T * n_g * sizeof *xd);
        memset(xs + (tiles - 1) * T * n_g, 0, T * n_g * sizeof *xs);
        memset(xh + (tiles - 1) * T * 2 * n_g, 0, T * 2 * n_g * sizeof *xh);
    }
    for (size_t t = 0; t < n_tok; t++) {
        size_t i = t / T, k = t % T;
        int32_t *qi = xq + i * T * (n_in / 2) + k;
        for (size_t g = 0; g < n_g; g++)
            tile_group(x + t * n_in + 32 * g, qi + g * 16 * T, xd + (i * n_g + g) * T + k,
                       xs + (i * n_g + g) * T + k, xh + (i * n_g + g) * 2 * T + k);
    }
    xt->q = xq;
    xt->d = xd;
    xt->s = xs;
    xt->h = xh;
    xt->n_in = n_in;
    xt->n_tok = n_tok;
}

int tp_qgemm_fill_avx512(tp_qgemm_fn *fns, size_t n, tp_qgemm_tile_fn *tile)
{
    memset(fns, 0, n * sizeof *fns);
    *tile = tile_x;
    if (n < TP_TYPE_ID_LIMIT)
        return 0;
    fns[TP_TYPE_Q4_0] = gemm_q4_0;
    fns[TP_TYPE_Q4_1] = gemm_q4_1;
    fns[TP_TYPE_Q5_0] = gemm_q5_0;
    fns[TP_TYPE_Q5_1] = gemm_q5_1;
    fns[TP_TYPE_Q8_0] = gemm_q8_0;
    fns[TP_TYPE_Q2_K] = gemm_q2_k;
    fns[TP_TYPE_Q3_K] = gemm_q3_k;
    fns[TP_TYPE_Q4_K] = gemm_q4_k;
    fns[TP_TYPE_Q5_K] = gemm_q5_k;
    fns[TP_TYPE_Q6_K] = gemm_q6_k;
    return 1;
}
#else
int tp_qgemm_fill_avx512(tp_qgemm_fn *fns, size_t n, tp_qgemm_tile_fn *tile)
{
    (void)fns;
    (void)n;
    (void)tile;
    return 0;
}
#endif
