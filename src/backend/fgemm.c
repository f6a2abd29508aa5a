/* The packed matrix-matrix product of float weights (backend/fgemm.h): the token packing,
 * the loops over tiles and slices, the thread split, and the portable form. */
#include "backend/fgemm.h"

#include <stdlib.h>
#include <string.h>

#include "backend/parallel.h"
#include "backend/quant_internal.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

/* The block of tokens whose packed slice stays in the second-level cache while a thread's
 * weight tiles meet it: about this many bytes of packed tokens per slice. */
#define FG_PANEL_BYTES (512u * 1024u)
/* The largest tile of any form (out[] of the micro-kernel). */
#define FG_MAX_TILE (16 * 32)

/* ---- the portable form -------------------------------------------------------------------- */

#define P_MR 4
#define P_TT 8
#define P_KC 512

static void pack_w_portable(uint32_t type, const uint8_t *W, size_t row_bytes, size_t o0,
                            int mr, size_t k0, size_t kn, float *pa, int next_mr)
{
    (void)next_mr;
    for (int r = 0; r < P_MR && pa; r++) {
        float *dst = pa + (size_t)r * P_KC;
        const uint8_t *row = r < mr ? W + (o0 + (size_t)r) * row_bytes : W;
        if (r >= mr)
            memset(dst, 0, kn * sizeof *dst);
        else if (type == TP_TYPE_F32)
            memcpy(dst, row + 4 * k0, kn * sizeof *dst);
        else if (type == TP_TYPE_F16)
            for (size_t k = 0; k < kn; k++)
                dst[k] = tp_half_to_float(tp_rd_u16(row + 2 * (k0 + k)));
        else
            for (size_t k = 0; k < kn; k++)
                dst[k] = tp_bits_f32((uint32_t)tp_rd_u16(row + 2 * (k0 + k)) << 16);
    }
}

static void kernel_portable(size_t kn, const float *pa, size_t lda, const float *pb, float *out)
{
    float c0[P_TT] = {0}, c1[P_TT] = {0}, c2[P_TT] = {0}, c3[P_TT] = {0};
    for (size_t k = 0; k < kn; k++) {
        const float *bk = pb + k * P_TT;
        const float a0 = pa[k], a1 = pa[lda + k], a2 = pa[2 * lda + k], a3 = pa[3 * lda + k];
        for (int l = 0; l < P_TT; l++) {
            c0[l] = c0[l] + a0 * bk[l];
            c1[l] = c1[l] + a1 * bk[l];
            c2[l] = c2[l] + a2 * bk[l];
            c3[l] = c3[l] + a3 * bk[l];
        }
    }
    memcpy(out, c0, sizeof c0);
    memcpy(out + P_TT, c1, sizeof c1);
    memcpy(out + 2 * P_TT, c2, sizeof c2);
    memcpy(out + 3 * P_TT, c3, sizeof c3);
}

const tp_fgemm_form *tp_fgemm_form_portable(void)
{
    static const tp_fgemm_form form = {P_MR, P_TT, P_KC, pack_w_portable, kernel_portable};
    return &form;
}

const tp_fgemm_form *tp_fgemm_form_for(int isa)
{
    switch (isa) {
    case TP_ISA_PORTABLE: return tp_fgemm_form_portable();
    case TP_ISA_AVX2: return tp_fgemm_form_avx2();
    case TP_ISA_AVX512: return tp_fgemm_form_avx512();
    default: return NULL;
    }
}

/* ---- the driver --------------------------------------------------------------------------- */

typedef struct fg_ctx {
    const tp_fgemm_form *f;
    uint32_t type;
    const uint8_t *W;
    size_t row_bytes;
    const float *b, *x;
    size_t n_in, n_out, n_tok;
    float *y;
    float *pb;          /* packed tokens: tile j at pb + j * n_in * tt */
    float *pa;          /* per worker: mr * kc floats */
    size_t tile_block;  /* token tiles per block */
    int direct;         /* F32 rows, 4-byte aligned: whole tiles read in place */
} fg_ctx;

/* Token tiles [j0, j1): element k of token l of tile j at pb[(j * n_in + k) * tt + l]. */
static void pack_tokens(void *ctx, size_t j0, size_t j1, int worker)
{
    (void)worker;
    const fg_ctx *c = ctx;
    const size_t tt = (size_t)c->f->tt, n = c->n_in;
    for (size_t j = j0; j < j1; j++) {
        float *p = c->pb + j * n * tt;
        size_t t0 = j * tt, nt = c->n_tok - t0 < tt ? c->n_tok - t0 : tt;
        for (size_t k0 = 0; k0 < n; k0 += 16) {
            size_t kn = n - k0 < 16 ? n - k0 : 16;
            for (size_t l = 0; l < tt; l++) {
                const float *xr = l < nt ? c->x + (t0 + l) * n + k0 : NULL;
                for (size_t k = 0; k < kn; k++)
                    p[(k0 + k) * tt + l] = xr ? xr[k] : 0.0f;
            }
        }
    }
}

/* Adds one tile's slice sums (out[r * tt + l]) into y. */
static void store_tile(const fg_ctx *c, const float *out, size_t o0, int mr, size_t t0, int nt,
                       int first, int last)
{
    const int tt = c->f->tt;
    const float *b = last && c->b ? c->b + o0 : NULL;
    for (int l = 0; l < nt; l++) {
        float *yr = c->y + (t0 + (size_t)l) * c->n_out + o0;
        for (int r = 0; r < mr; r++) {
            float v = out[r * tt + l];
            if (!first)
                v = yr[r] + v;
            yr[r] = b ? v + b[r] : v;
        }
    }
}

/* Weight tiles [a, z) against every token: for each block of token tiles and each slice,
 * each weight tile is converted once and meets every token tile of the block. */
static void fg_range(void *ctx, size_t a, size_t z, int worker)
{
    const fg_ctx *c = ctx;
    const tp_fgemm_form *f = c->f;
    const size_t tt = (size_t)f->tt, mr = (size_t)f->mr, n_tiles = (c->n_tok + tt - 1) / tt;
    float *pa = c->pa + (size_t)worker * mr * f->kc;
    _Alignas(64) float out[FG_MAX_TILE];
    for (size_t j0 = 0; j0 < n_tiles; j0 += c->tile_block) {
        size_t j1 = n_tiles - j0 < c->tile_block ? n_tiles : j0 + c->tile_block;
        for (size_t k0 = 0; k0 < c->n_in; k0 += f->kc) {
            size_t kn = c->n_in - k0 < f->kc ? c->n_in - k0 : f->kc;
            int first = k0 == 0, last = k0 + kn == c->n_in;
            for (size_t rt = a; rt < z; rt++) {
                size_t o0 = rt * mr;
                int m = c->n_out - o0 < mr ? (int)(c->n_out - o0) : (int)mr;
                size_t after = c->n_out - o0 - (size_t)m; /* rows after this tile */
                /* a whole tile of F32 rows is read where it lies (rows row_bytes apart),
                 * not copied into the panel: the same values in the same order */
                int direct = c->direct && (size_t)m == mr;
                const float *a_rows = direct ? (const float *)(const void *)(
                                                   c->W + o0 * c->row_bytes) + k0
                                             : pa;
                size_t lda = direct ? c->row_bytes / sizeof(float) : f->kc;
                f->pack_w(c->type, c->W, c->row_bytes, o0, m, k0, kn, direct ? NULL : pa,
                          rt + 1 < z ? (int)(after < mr ? after : mr) : 0);
                for (size_t j = j0; j < j1; j++) {
                    size_t t0 = j * tt;
                    int nt = c->n_tok - t0 < tt ? (int)(c->n_tok - t0) : (int)tt;
                    f->kernel(kn, a_rows, lda, c->pb + (j * c->n_in + k0) * tt, out);
                    store_tile(c, out, o0, m, t0, nt, first, last);
                }
            }
        }
    }
}

/* aligned_alloc of n floats (the size rounded up to the alignment); NULL on overflow. */
static float *alloc_floats(size_t n)
{
    if (n > (SIZE_MAX - 63) / sizeof(float))
        return NULL;
    return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
}

tp_status tp_fgemm(uint32_t type, const uint8_t *W, size_t row_bytes, const float *b,
                   const float *x, size_t n_in, size_t n_out, size_t n_tok, float *y,
                   int n_threads)
{
    const tp_fgemm_form *f = tp_fgemm_form_for(tp_kernels_isa());
    if (!f)
        f = tp_fgemm_form_portable();
    const size_t tt = (size_t)f->tt, mr = (size_t)f->mr;
    size_t n_tiles = n_tok / tt + (n_tok % tt != 0);
    if (n_tiles > SIZE_MAX / tt / n_in)
        return tp_fail(TP_ERR_OVERFLOW, "mul_mat_typed: %zu packed tokens overflow", n_tok);
    double work = (double)n_in * (double)n_out * (double)n_tok;
    int threads = tp_parallel_threads(n_threads, work);
    size_t block = FG_PANEL_BYTES / (f->kc * tt * sizeof(float));
    fg_ctx c = {f, type, W, row_bytes, b, x, n_in, n_out, n_tok, y, NULL, NULL,
                block ? block : 1,
                type == TP_TYPE_F32 && (uintptr_t)W % sizeof(float) == 0 &&
                    row_bytes % sizeof(float) == 0};
    c.pb = alloc_floats(n_tiles * tt * n_in);
    c.pa = alloc_floats((size_t)threads * mr * f->kc);
    if (!c.pb || !c.pa) {
        free(c.pb);
        free(c.pa);
        return tp_fail(TP_ERR_NOMEM, "mul_mat_typed: no memory for %zu packed tokens", n_tok);
    }
    tp_parallel_for(n_tiles, threads, pack_tokens, &c);
    tp_parallel_for(n_out / mr + (n_out % mr != 0), threads, fg_range, &c);
    free(c.pb);
    free(c.pa);
    return TP_OK;
}
