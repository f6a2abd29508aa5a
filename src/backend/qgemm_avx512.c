/* The AVX-512 form (F, BW, VL, VNNI) of the prefill products (backend/qgemm.h): 512-bit
 * vectors, sixteen weight rows in the lanes, tiles of up to twelve tokens, pairs of 16-bit
 * products summed by vpdpwssd. Every function carries the target attribute, so the
 * instructions only run after the dispatch (qdot_dispatch.c) has checked the processor. */
#include "backend/qgemm.h"
#include "tensorplan/quant.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#include "backend/quant_internal.h"

#define TGT __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define INL static inline TGT __attribute__((always_inline))
#define T TP_QGEMM_TOKENS

/* One decoded panel in the scratch: per group, q[g][p][r] (16 pairs x 16 rows), the rows'
 * f32 scales a[g][r] and mins b[g][r]. */
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
    const __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i hv = _mm512_srlv_epi32(set32((int)tp_rd_u32(blk + 2)), idx);
    __m512i w = _mm512_or_si512(nib_pair(ld_u8(blk + 6)),
                                _mm512_slli_epi32(_mm512_and_si512(hv, set32(0x10001)), 4));
    *v = _mm512_sub_epi16(w, _mm512_set1_epi16(16));
    *a = h2f(blk);
    *b = 0;
}

INL void dec_q8_0(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g * 34;
    *v = pair_of(ld_i8(blk + 2), ld_i8(blk + 18));
    *a = h2f(blk);
    *b = 0;
}

/* Q4_K: group j of a block of 256 is the low (j even) or high nibbles of 32 bytes. */
INL void dec_q4_k(const uint8_t *row, size_t g, __m512i *v, float *a, float *b)
{
    const uint8_t *blk = row + g / 8 * 144;
    int j = (int)(g % 8);
    const uint8_t *qs = blk + 16 + 32 * (j / 2);
    __m128i sh = _mm_cvtsi32_si128(4 * (j & 1));
    __m512i lo = _mm512_and_si512(_mm512_srl_epi32(ld_u8(qs), sh), set32(15));
    __m512i hi = _mm512_and_si512(_mm512_srl_epi32(ld_u8(qs + 16), sh), set32(15));
    *v = _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
    unsigned sc, m;
    tp_k4_scale_min(blk + 4, j, &sc, &m);
    *a = h2f(blk) * (float)sc;
    *b = h2f(blk + 2) * (float)m;
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

/* Rows [r0, r0 + nr) of W (nr <= 16; missing rows are zeros) into the panel. */
#define PACK(name)                                                                             \
    static TGT void pack_##name(const uint8_t *W, size_t rb, size_t r0, int nr, size_t n_g,   \
                                const panel *p)                                               \
    {                                                                                          \
        for (size_t g = 0; g < n_g; g++) {                                                     \
            __m512i v[16];                                                                     \
            float a[16], b[16];                                                                \
            for (int r = 0; r < 16; r++) {                                                     \
                if (r < nr) {                                                                  \
                    dec_##name(W + (r0 + (size_t)r) * rb, g, &v[r], &a[r], &b[r]);              \
                } else {                                                                       \
                    v[r] = _mm512_setzero_si512();                                             \
                    a[r] = b[r] = 0;                                                           \
                }                                                                              \
            }                                                                                  \
            transpose16(v);                                                                    \
            for (int c = 0; c < 16; c++)                                                       \
                _mm512_storeu_si512((void *)(p->q + g * 256 + (size_t)c * 16), v[c]);         \
            memcpy(p->a + g * 16, a, sizeof a);                                                \
            memcpy(p->b + g * 16, b, sizeof b);                                                \
        }                                                                                      \
    }
PACK(q4_0)
PACK(q5_0)
PACK(q8_0)
PACK(q4_k)
PACK(q6_k)

/* ---- a tile: the panel's 16 rows times n_x tokens of one activation tile --------------- */

/* Groups in order; within a group, the integer sums of kpc pairs (16, or 8 for Q6_K) are
 * converted and scaled (a * dx) into f, then the min times the exact group sum leaves it. */
INL void tile(const panel *p, size_t n_g, const int32_t *xq, const float *xd, const float *xs,
              int n_x, int kpc, int has_min, __m512 *f)
{
    for (int k = 0; k < n_x; k++)
        f[k] = _mm512_setzero_ps();
    for (size_t g = 0; g < n_g; g++) {
        const int32_t *wg = p->q + g * 256, *xg = xq + g * 16 * T;
        __m512 A = _mm512_loadu_ps(p->a + g * 16);
        for (int h = 0; h < 16; h += kpc) {
            __m512i acc[T];
            for (int k = 0; k < n_x; k++)
                acc[k] = _mm512_setzero_si512();
            for (int c = h; c < h + kpc; c++) {
                __m512i w = _mm512_loadu_si512((const void *)(wg + c * 16));
                for (int k = 0; k < n_x; k++)
                    acc[k] = _mm512_dpwssd_epi32(acc[k], w, _mm512_set1_epi32(xg[c * T + k]));
            }
            for (int k = 0; k < n_x; k++)
                f[k] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[k]), A),
                                       _mm512_set1_ps(xd[g * T + k]), f[k]);
        }
        if (has_min) {
            __m512 B = _mm512_loadu_ps(p->b + g * 16);
            for (int k = 0; k < n_x; k++)
                f[k] = _mm512_fnmadd_ps(B, _mm512_set1_ps(xs[g * T + k]), f[k]);
        }
    }
}

/* Tile i of x against the panel of rows [r, r + nr): y[12 i + k][r ..] (+ b). */
INL void tile_store(const panel *p, const tp_qgemm_x *x, size_t i, int n_x, int kpc,
                    int has_min, const float *b, float *y, size_t n_out, size_t r, int nr)
{
    size_t n_g = x->n_in / 32;
    __m512 f[T];
    tile(p, n_g, x->q + i * T * (x->n_in / 2), x->d + i * T * n_g, x->s + i * T * n_g, n_x, kpc,
         has_min, f);
    __mmask16 m = (__mmask16)((1u << nr) - 1);
    __m512 bias = b ? _mm512_maskz_loadu_ps(m, b + r) : _mm512_setzero_ps();
    for (int k = 0; k < n_x; k++)
        _mm512_mask_storeu_ps(y + (i * T + (size_t)k) * n_out + r, m, _mm512_add_ps(f[k], bias));
}

/* Every tile of x against one panel, each token count its own unrolled loop. */
#define TS(n) tile_store(p, x, i, n, kpc, has_min, b, y, n_out, r, nr)
INL void panel_tiles(const panel *p, const tp_qgemm_x *x, int kpc, int has_min, const float *b,
                     float *y, size_t n_out, size_t r, int nr)
{
    for (size_t i = 0; i * T < x->n_tok; i++) {
        size_t left = x->n_tok - i * T;
        switch (left >= T ? T : left) {
        case 1: TS(1); break;
        case 2: TS(2); break;
        case 3: TS(3); break;
        case 4: TS(4); break;
        case 5: TS(5); break;
        case 6: TS(6); break;
        case 7: TS(7); break;
        case 8: TS(8); break;
        case 9: TS(9); break;
        case 10: TS(10); break;
        case 11: TS(11); break;
        default: TS(12); break;
        }
    }
}

#define GEMM(name, kpc, has_min)                                                               \
    static TGT void gemm_##name(const uint8_t *W, size_t rb, size_t r0, size_t r1,             \
                                const tp_qgemm_x *x, const float *b, float *y, size_t n_out,   \
                                void *scratch)                                                 \
    {                                                                                          \
        size_t n_g = x->n_in / 32;                                                             \
        panel p;                                                                               \
        p.q = scratch;                                                                         \
        p.a = (float *)(void *)(p.q + n_g * 256);                                              \
        p.b = p.a + n_g * 16;                                                                  \
        for (size_t r = r0; r < r1; r += TP_QGEMM_ROWS) {                                      \
            int nr = r1 - r < TP_QGEMM_ROWS ? (int)(r1 - r) : TP_QGEMM_ROWS;                   \
            pack_##name(W, rb, r, nr, n_g, &p);                                                \
            panel_tiles(&p, x, kpc, has_min, b, y, n_out, r, nr);                              \
        }                                                                                      \
    }
GEMM(q4_0, 16, 0)
GEMM(q5_0, 16, 0)
GEMM(q8_0, 16, 0)
GEMM(q4_k, 16, 1)
GEMM(q6_k, 8, 0)

int tp_qgemm_fill_avx512(tp_qgemm_fn *fns, size_t n)
{
    memset(fns, 0, n * sizeof *fns);
    if (n < TP_TYPE_ID_LIMIT)
        return 0;
    fns[TP_TYPE_Q4_0] = gemm_q4_0;
    fns[TP_TYPE_Q5_0] = gemm_q5_0;
    fns[TP_TYPE_Q8_0] = gemm_q8_0;
    fns[TP_TYPE_Q4_K] = gemm_q4_k;
    fns[TP_TYPE_Q6_K] = gemm_q6_k;
    return 1;
}
#else
int tp_qgemm_fill_avx512(tp_qgemm_fn *fns, size_t n)
{
    (void)fns;
    (void)n;
    return 0;
}
#endif
