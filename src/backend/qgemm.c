/* The prefill products' activation tiles and the choice of form (backend/qgemm.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "backend/qgemm.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

size_t tp_qgemm_x_bytes(size_t n_in, size_t n_tok)
{
    size_t tiles = (n_tok + TP_QGEMM_TOKENS - 1) / TP_QGEMM_TOKENS;
    size_t per_tile = (n_in / 2) * sizeof(int32_t) + 4 * (n_in / 32) * sizeof(float);
    return tiles * TP_QGEMM_TOKENS * per_tile;
}

size_t tp_qgemm_scratch_bytes(size_t n_in)
{
    /* per group of a chunk: 16 pairs x 16 rows of int32, 16 scales, 2 x 16 mins (one per
     * half: Q2_K's mins cover 16 values) */
    size_t groups = n_in / 32 < TP_QGEMM_MAX_CHUNK ? n_in / 32 : TP_QGEMM_MAX_CHUNK;
    return groups * (TP_QGEMM_ROWS * 16 * sizeof(int32_t) + 3 * TP_QGEMM_ROWS * sizeof(float));
}

/* The products and tilers of each form (none for the portable one). */
static tp_qgemm_fn g_fns[TP_ISA_COUNT][TP_TYPE_ID_LIMIT];
static tp_qgemm_tile_fn g_tile[TP_ISA_COUNT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_table(void)
{
    static int (*const fill[TP_ISA_COUNT])(tp_qgemm_fn *, size_t, tp_qgemm_tile_fn *) = {
        [TP_ISA_AVX2] = tp_qgemm_fill_avx2, [TP_ISA_AVX512] = tp_qgemm_fill_avx512};
    for (int isa = 0; isa < TP_ISA_COUNT; isa++)
        if (!fill[isa] || !fill[isa](g_fns[isa], TP_TYPE_ID_LIMIT, &g_tile[isa])) {
            memset(g_fns[isa], 0, sizeof g_fns[isa]);
            g_tile[isa] = NULL;
        }
}

/* For the benchmarks: while set, no form has a prefill product (the row dot products serve
 * every token count), so the two paths can be timed in one process. */
static _Atomic int g_off;

void tp_qgemm_set_off(int off)
{
    g_off = off != 0;
}

tp_qgemm_fn tp_qgemm_for(int isa, uint32_t type)
{
    if (isa < 0 || isa >= TP_ISA_COUNT || type >= TP_TYPE_ID_LIMIT || g_off ||
        !tp_kernels_isa_supported(isa))
        return NULL;
    pthread_once(&g_once, init_table);
    return g_fns[isa][type];
}

tp_qgemm_tile_fn tp_qgemm_tiler(int isa)
{
    if (isa < 0 || isa >= TP_ISA_COUNT || !tp_kernels_isa_supported(isa))
        return NULL;
    pthread_once(&g_once, init_table);
    return g_tile[isa];
}
