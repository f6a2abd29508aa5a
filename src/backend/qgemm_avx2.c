/* The AVX2 form (with FMA and F16C) of the prefill products (backend/qgemm.h): the panels of
 * sixteen rows of the AVX-512 form, met by 256-bit vectors of eight rows each, sub-tiles of up
 * to six tokens of the twelve-token activation tiles, pairs of 16-bit products summed by
 * vpmaddwd and vpaddd (there is no vpdpwssd in AVX2). The integer sums, their conversion and
 * the f32 steps are those of the AVX-512 form lane for lane, so both forms give the same bits.
 * Every function carries the target attribute, so the instructions only run after the
 * dispatch (qdot_dispatch.c) has checked the processor. */
#include "backend/qgemm.h"
#include "tensorplan/quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "backend/quant_internal.h"

#define TGT __attribute__((target("avx2,fma,f16c")))
#define INL static inline TGT __attribute__((always_inline))
#define T TP_QGEMM_TOKENS
#define SUB 6 /* tokens per sub-tile: 6 sums, 6 f32 sums, a weight and a product in 16 ymm */

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

/* 8 bytes at p, extended into 32-bit lanes. */
INL __m256i ld_u8(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

INL __m256i ld_i8(const uint8_t *p)
{
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

INL __m256i set32(int v)
{
    return _mm256_set1_epi32(v);
}

/* Pairs: the low 16 bits of lo below the low 16 bits of hi. */
INL __m256i pair_of(__m256i lo, __m256i hi)
{
    return _mm256_or_si256(_mm256_and_si256(lo, set32(0xFFFF)), _mm256_slli_epi32(hi, 16));
}

/* Byte lanes as pairs of their nibbles: the low nibble below the high one. */
INL __m256i nib_pair(__m256i v)
{
    return _mm256_or_si256(_mm256_and_si256(v, set32(15)),
                           _mm256_slli_epi32(_mm256_and_si256(v, set32(0xF0)), 12));
}

/* ---- one row's group g as pairs 8 e .. 8 e + 7 (element p below p + 16), scale, min ---- */

/* A 32-bit lane of the 16-bit values lo (low half) and hi. */
INL __m256i pair16(int lo, int hi)
{
    return _mm256_blend_epi16(_mm256_set1_epi16((short)lo), _mm256_set1_epi16((short)hi), 0xAA);
}

/* The fifth bits (bit j of qh for element j) of a Q5_0 / Q5_1 block as 16 in each half of
 * the pairs 8 e .. 8 e + 7. */
INL __m256i fifth_pairs(const uint8_t *qh, int e)
{
    __m256i idx = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), set32(8 * e));
    __m256i hv = _mm256_srlv_epi32(set32((int)tp_rd_u32(qh)), idx);
    return _mm256_slli_epi32(_mm256_and_si256(hv, set32(0x10001)), 4);
}

INL void dec_q4_0(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g * 18;
    for (int e = 0; e < 2; e++)
        v[e] = _mm256_sub_epi16(nib_pair(ld_u8(blk + 2 + 8 * e)), _mm256_set1_epi16(8));
    *a = h2f(blk);
    *b = 0;
}

INL void dec_q5_0(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g * 22;
    for (int e = 0; e < 2; e++) {
        __m256i w = _mm256_or_si256(nib_pair(ld_u8(blk + 6 + 8 * e)), fifth_pairs(blk + 2, e));
        v[e] = _mm256_sub_epi16(w, _mm256_set1_epi16(16));
    }
    *a = h2f(blk);
    *b = 0;
}

INL void dec_q4_1(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g * 20;
    for (int e = 0; e < 2; e++)
        v[e] = nib_pair(ld_u8(blk + 4 + 8 * e));
    *a = h2f(blk);
    *b = -h2f(blk + 2);
}

INL void dec_q5_1(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g * 24;
    for (int e = 0; e < 2; e++)
        v[e] = _mm256_or_si256(nib_pair(ld_u8(blk + 8 + 8 * e)), fifth_pairs(blk + 4, e));
    *a = h2f(blk);
    *b = -h2f(blk + 2);
}

INL void dec_q8_0(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g * 34;
    for (int e = 0; e < 2; e++)
        v[e] = pair_of(ld_i8(blk + 2 + 8 * e), ld_i8(blk + 18 + 8 * e));
    *a = h2f(blk);
    *b = 0;
}

/* Q4_K / Q5_K: group j of a block of 256 is the low (j even) or high nibbles of 32 bytes
 * (Q5_K: plus bit j of qh[e] as 16 for element e). */
INL void dec_k45(const uint8_t *row, size_t g, int five, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * (five ? 176 : 144);
    int j = (int)(g % 8);
    const uint8_t *qs = blk + (five ? 48 : 16) + 32 * (j / 2);
    __m128i sh = _mm_cvtsi32_si128(4 * (j & 1)), hb = _mm_cvtsi32_si128(j);
    for (int e = 0; e < 2; e++) {
        __m256i lo = _mm256_and_si256(_mm256_srl_epi32(ld_u8(qs + 8 * e), sh), set32(15));
        __m256i hi = _mm256_and_si256(_mm256_srl_epi32(ld_u8(qs + 16 + 8 * e), sh), set32(15));
        if (five) {
            __m256i l5 = _mm256_srl_epi32(ld_u8(blk + 16 + 8 * e), hb);
            __m256i h5 = _mm256_srl_epi32(ld_u8(blk + 32 + 8 * e), hb);
            lo = _mm256_or_si256(lo, _mm256_slli_epi32(_mm256_and_si256(l5, set32(1)), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi32(_mm256_and_si256(h5, set32(1)), 4));
        }
        v[e] = _mm256_or_si256(lo, _mm256_slli_epi32(hi, 16));
    }
    unsigned sc, m;
    tp_k4_scale_min(blk + 4, j, &sc, &m);
    *a = h2f(blk) * (float)sc;
    *b = h2f(blk + 2) * (float)m;
}

INL void dec_q4_k(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    dec_k45(row, g, 0, v, a, b);
}

INL void dec_q5_k(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    dec_k45(row, g, 1, v, a, b);
}

/* Q6_K: group 4 h + r of a block of 256; the two sub-blocks' int8 scales are multiplied into
 * the quants (|q sc| <= 32 * 128, so the sums of eight pairs with |x| <= 32767 stay in int32,
 * as in the AVX-512 form). */
INL void dec_q6_k(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * 210;
    int j = (int)(g % 8), h = j / 4, r = j % 4;
    const uint8_t *ql = blk + 64 * h + 32 * (r & 1), *qh = blk + 128 + 32 * h;
    __m128i sl = _mm_cvtsi32_si128(4 * (r >> 1)), shh = _mm_cvtsi32_si128(2 * r);
    for (int e = 0; e < 2; e++) {
        __m256i q[2];
        for (int s = 0; s < 2; s++) { /* s: elements 8 e .. (s = 0), 16 + 8 e .. (s = 1) */
            int o = 16 * s + 8 * e;
            __m256i lo = _mm256_and_si256(_mm256_srl_epi32(ld_u8(ql + o), sl), set32(15));
            __m256i up = _mm256_and_si256(_mm256_srl_epi32(ld_u8(qh + o), shh), set32(3));
            __m256i w = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(up, 4)), set32(32));
            q[s] = _mm256_mullo_epi32(w, set32((int8_t)blk[192 + 8 * h + 2 * r + s]));
        }
        v[e] = pair_of(q[0], q[1]);
    }
    *a = h2f(blk + 208);
    *b = 0;
}

/* Q2_K: group 4 h + j of a block of 256 (elements 128 h + 32 j + l, l < 32) takes the 2-bit
 * fields 2 j of qs[32 h + l]; the 4-bit scales of its two sub-blocks (elements l < 16 and
 * l >= 16, the two halves of the pairs) are multiplied into the quants (q sc <= 45), and
 * their mins times dmin go to b[0] and b[16] (as in the AVX-512 form). */
INL void dec_q2_k(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * 84, *qs = blk + 16 + 32 * (g % 8 / 4);
    const uint8_t *sc = blk + 2 * (g % 8);
    __m128i sh = _mm_cvtsi32_si128(2 * (int)(g % 4));
    __m256i s2 = pair16(sc[0] & 15, sc[1] & 15);
    for (int e = 0; e < 2; e++) {
        __m256i lo = _mm256_and_si256(_mm256_srl_epi32(ld_u8(qs + 8 * e), sh), set32(3));
        __m256i hi = _mm256_and_si256(_mm256_srl_epi32(ld_u8(qs + 16 + 8 * e), sh), set32(3));
        v[e] = _mm256_mullo_epi16(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 16)), s2);
    }
    float dmin = h2f(blk + 82);
    *a = h2f(blk + 80);
    b[0] = dmin * (float)(sc[0] >> 4);
    b[16] = dmin * (float)(sc[1] >> 4);
}

/* Q3_K: group 4 h + j as Q2_K's fields of qs (at 32), less 4 where bit 4 h + j of hmask[l]
 * is clear (-4..3); the signed 6-bit scales (-32..31) of the two sub-blocks are multiplied
 * into the quants (|q sc| <= 128: sixteen pair products with |x| <= 32767 stay below 2^31,
 * as in the AVX-512 form). */
INL void dec_q3_k(const uint8_t *row, size_t g, __m256i v[2], float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * 110, *qs = blk + 32 + 32 * (g % 8 / 4);
    int jj = (int)(g % 8);
    __m128i sh = _mm_cvtsi32_si128(2 * (jj % 4)), hb = _mm_cvtsi32_si128(jj);
    __m256i s2 = pair16(tp_q3_k_scale(blk + 96, 2 * jj) - 32,
                        tp_q3_k_scale(blk + 96, 2 * jj + 1) - 32);
    for (int e = 0; e < 2; e++) {
        __m256i q[2];
        for (int s = 0; s < 2; s++) { /* s: elements 8 e .. (s = 0), 16 + 8 e .. (s = 1) */
            int o = 16 * s + 8 * e;
            __m256i low = _mm256_and_si256(_mm256_srl_epi32(ld_u8(qs + o), sh), set32(3));
            __m256i top = _mm256_and_si256(_mm256_srl_epi32(ld_u8(blk + o), hb), set32(1));
            q[s] = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(top, 2)), set32(4));
        }
        v[e] = _mm256_mullo_epi16(pair_of(q[0], q[1]), s2);
    }
    *a = h2f(blk + 108);
    *b = 0;
}

/* ---- a panel: 16 rows' groups, transposed so that each vector holds one pair of 8 rows --- */

INL void transpose8(__m256i v[8])
{
    __m256i t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) { /* u[i + c]: rows i..i+3 of the columns c and c + 4 */
        u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        v[c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x20);
        v[4 + c] = _mm256_permute2x128_si256(u[c], u[4 + c], 0x31);
    }
}

/* The decoded rows v[r][e] (pairs 8 e ..) of one group into the panel's group at q. */
INL void store_group(__m256i v[16][2], int32_t *q)
{
    for (int hh = 0; hh < 2; hh++)
        for (int e = 0; e < 2; e++) {
            __m256i m[8];
            for (int i = 0; i < 8; i++)
                m[i] = v[8 * hh + i][e];
            transpose8(m);
            for (int c = 0; c < 8; c++)
                _mm256_storeu_si256((__m256i *)(void *)(q + (8 * e + c) * 16 + 8 * hh), m[c]);
        }
}

/* Groups [g0, g1) of rows [r0, r0 + nr) of W (nr <= 16; missing rows are zeros) into the
 * panel, group g at its place g - g0. */
#define PACK(name)                                                                             \
    static TGT void pack_##name(const uint8_t *W, size_t rb, size_t r0, int nr, size_t g0,    \
                                size_t g1, const panel *p)                                    \
    {                                                                                          \
        for (size_t g = g0; g < g1; g++) {                                                     \
            __m256i v[16][2];                                                                  \
            float a[16], b[32];                                                                \
            for (int r = 0; r < 16; r++) {                                                     \
                b[16 + r] = 0; /* the second mins, Q2_K's only */                              \
                if (r < nr) {                                                                  \
                    dec_##name(W + (r0 + (size_t)r) * rb, g, v[r], &a[r], &b[r]);               \
                } else {                                                                       \
                    v[r][0] = v[r][1] = _mm256_setzero_si256();                                \
                    a[r] = b[r] = 0;                                                           \
                }                                                                              \
            }                                                                                  \
            size_t at = g - g0;                                                                \
            store_group(v, p->q + at * 256);                                                   \
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

/* ---- a sub-tile: 8 rows of the panel (from row 8 hh) times n_x tokens of a tile --------- */

/* Groups in order (n_g of them, from the panel's first); within a group, the integer sums of
 * kpc pairs (16, or 8 for Q6_K) are converted and scaled (a * dx) into f, then the min times
 * the exact group sum leaves it (has_min 1), or each half's min times the exact sum of the
 * half, first half first (has_min 2, Q2_K); xq, xd, xs, xh point at the sub-tile's first
 * token. */
INL void tile(const panel *p, int hh, size_t n_g, const int32_t *xq, const float *xd,
              const float *xs, const float *xh, int n_x, int kpc, int has_min, __m256 *f)
{
    for (size_t g = 0; g < n_g; g++) {
        const int32_t *wg = p->q + g * 256 + 8 * hh, *xg = xq + g * 16 * T;
        __m256 A = _mm256_loadu_ps(p->a + g * 16 + 8 * hh);
        for (int h = 0; h < 16; h += kpc) {
            __m256i acc[SUB];
            for (int k = 0; k < n_x; k++)
                acc[k] = _mm256_setzero_si256();
#pragma GCC unroll 16
            for (int c = h; c < h + kpc; c++) {
                __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(wg + c * 16));
                for (int k = 0; k < n_x; k++) {
                    acc[k] = _mm256_add_epi32(
                        acc[k], _mm256_madd_epi16(w, _mm256_set1_epi32(xg[c * T + k])));
                    /* keeps the sums in registers, in this order (else the compiler sums
                     * the products as a tree, through the stack) */
                    __asm__("" : "+x"(acc[k]));
                }
            }
            for (int k = 0; k < n_x; k++)
                f[k] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc[k]), A),
                                       _mm256_set1_ps(xd[g * T + k]), f[k]);
        }
        const float *bg = p->b + g * 32 + 8 * hh;
        if (has_min == 1) {
            __m256 B = _mm256_loadu_ps(bg);
            for (int k = 0; k < n_x; k++)
                f[k] = _mm256_fnmadd_ps(B, _mm256_set1_ps(xs[g * T + k]), f[k]);
        } else if (has_min == 2) {
            __m256 B0 = _mm256_loadu_ps(bg), B1 = _mm256_loadu_ps(bg + 16);
            for (int k = 0; k < n_x; k++) {
                f[k] = _mm256_fnmadd_ps(B0, _mm256_set1_ps(xh[2 * g * T + k]), f[k]);
                f[k] = _mm256_fnmadd_ps(B1, _mm256_set1_ps(xh[(2 * g + 1) * T + k]), f[k]);
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

/* Tokens [k0, k0 + n_x) of tile i of x against the panel, both halves: the sums so far from
 * y (nothing before the first chunk), this chunk's groups, back to y (with b after the last
 * chunk). The sums pass through y unchanged, so the chunks never change a bit. */
INL void tile_chunk(const panel *p, const chunk *c, size_t i, int k0, int n_x)
{
    const tp_qgemm_x *x = c->x;
    size_t n_g = x->n_in / 32, t0 = i * T + (size_t)k0;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int hh = 0; hh < 2 && 8 * hh < c->nr; hh++) {
        __m256i m = _mm256_cmpgt_epi32(set32(c->nr - 8 * hh), lane);
        float *y = c->y + t0 * c->n_out + c->r + 8 * (size_t)hh;
        __m256 f[SUB];
        for (int k = 0; k < n_x; k++)
            f[k] = c->g0 ? _mm256_maskload_ps(y + (size_t)k * c->n_out, m) : _mm256_setzero_ps();
        size_t xo = (i * n_g + c->g0) * T;
        tile(p, hh, c->g1 - c->g0, x->q + i * T * (x->n_in / 2) + c->g0 * 16 * T + k0,
             x->d + xo + k0, x->s + xo + k0, x->h + 2 * xo + k0, n_x, c->kpc, c->has_min, f);
        __m256 bias = c->b && c->g1 == n_g ? _mm256_maskload_ps(c->b + c->r + 8 * hh, m)
                                           : _mm256_setzero_ps();
        for (int k = 0; k < n_x; k++)
            _mm256_maskstore_ps(y + (size_t)k * c->n_out, m, _mm256_add_ps(f[k], bias));
    }
}

/* Every tile of x against one panel's chunk, in sub-tiles of up to six tokens, each token
 * count its own unrolled loop; the next panel's rows of the chunk are prefetched a few per
 * tile (next: its first row). */
#define TC(n) tile_chunk(p, c, i, k0, n)
INL void panel_tiles(const panel *p, const chunk *c, const uint8_t *next, int next_rows,
                     size_t rb, size_t seg0, size_t seg1)
{
    size_t n_tok = c->x->n_tok, n_tiles = (n_tok + T - 1) / T;
    for (size_t i = 0; i < n_tiles; i++) {
        for (size_t r = i * 16 / n_tiles; r < (i + 1) * 16 / n_tiles && (int)r < next_rows; r++)
            for (size_t o = seg0; o < seg1; o += 64)
                _mm_prefetch((const char *)(next + r * rb + o), _MM_HINT_T0);
        size_t left = n_tok - i * T;
        for (int k0 = 0; k0 < T && (size_t)k0 < left; k0 += SUB) {
            size_t n = left - (size_t)k0;
            switch (n >= SUB ? SUB : n) {
            case 1: TC(1); break;
            case 2: TC(2); break;
            case 3: TC(3); break;
            case 4: TC(4); break;
            case 5: TC(5); break;
            default: TC(6); break;
            }
        }
    }
}

/* Groups per chunk: the panel's chunk (1,152 bytes a group) stays in the first-level cache
 * and every token's chunk (64 bytes a group) in the second-level cache (as in the AVX-512
 * form). */
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

INL float hmax8(__m256 v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

/* v's eight lanes as four sums of two, in double (exact). */
INL __m256d sum_pd(__m256 v)
{
    return _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                         _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

/* The four lanes of v as one double (the pairs, then their sum, as the AVX-512 form adds). */
INL double reduce_pd(__m256d v)
{
    __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
}

/* One token's group of 32 at v into the tiles: pairs at dst[p * T], scale, sum, the sums of
 * its halves at h[0] and h[T]. */
INL void tile_group(const float *v, int32_t *dst, float *d, float *s, float *h)
{
    const __m256 big = _mm256_set1_ps(3.40282347e38f), sign = _mm256_set1_ps(-0.0f);
    __m256 x[4], ax[4];
    int finite = 1;
    for (int i = 0; i < 4; i++) {
        x[i] = _mm256_loadu_ps(v + 8 * i);
        ax[i] = _mm256_andnot_ps(sign, x[i]);
        /* NaN compares false, so a non-finite value leaves its lane out of the mask */
        finite &= _mm256_movemask_ps(_mm256_cmp_ps(ax[i], big, _CMP_LE_OQ)) == 0xFF;
    }
    float amax = hmax8(_mm256_max_ps(_mm256_max_ps(ax[0], ax[1]), _mm256_max_ps(ax[2], ax[3])));
    float id = amax > 0.0f ? 32767.0f / amax : 0.0f;
    if (!finite || !(id <= 3.40282347e38f)) { /* poisoned, or too tiny: rounds to zero */
        for (int p = 0; p < 16; p++)
            dst[p * T] = 0;
        *d = *s = h[0] = h[T] = finite ? 0.0f : NAN;
        return;
    }
    *d = amax / 32767.0f;
    const __m256i hi = set32(32767), lo = set32(-32767);
    __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; i++)
        q[i] = _mm256_max_epi32(_mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(x[i], vid)), hi), lo);
    int32_t pr[16];
    _mm256_storeu_si256((__m256i *)(void *)pr, pair_of(q[0], q[2]));
    _mm256_storeu_si256((__m256i *)(void *)(pr + 8), pair_of(q[1], q[3]));
    for (int p = 0; p < 16; p++)
        dst[p * T] = pr[p];
    __m256d s0 = _mm256_add_pd(sum_pd(x[0]), sum_pd(x[1]));
    __m256d s1 = _mm256_add_pd(sum_pd(x[2]), sum_pd(x[3]));
    *s = (float)reduce_pd(_mm256_add_pd(s0, s1));
    h[0] = (float)reduce_pd(s0);
    h[T] = (float)reduce_pd(s1);
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

int tp_qgemm_fill_avx2(tp_qgemm_fn *fns, size_t n, tp_qgemm_tile_fn *tile)
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
int tp_qgemm_fill_avx2(tp_qgemm_fn *fns, size_t n, tp_qgemm_tile_fn *tile)
{
    (void)fns;
    (void)n;
    (void)tile;
    return 0;
}
#endif
