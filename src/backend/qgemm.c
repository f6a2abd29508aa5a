/* The prefill products' activation tiles and the choice of form (backend/qgemm.h). */
#include <pthread.h>
#include <string.h>

#include "backend/qgemm.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

size_t tp_qgemm_x_bytes(size_t n_in, size_t n_tok)
{
    size_t tiles = (n_tok + TP_QGEMM_TOKENS - 1) / TP_QGEMM_TOKENS;
    size_t per_tile = (n_in / 2) * sizeof(int32_t) + 2 * (n_in / 32) * sizeof(float);
    return tiles * TP_QGEMM_TOKENS * per_tile;
}

size_t tp_qgemm_scratch_bytes(size_t n_in)
{
    /* per group of a chunk: 16 pairs x 16 rows of int32, 16 scales, 16 mins */
    size_t groups = n_in / 32 < TP_QGEMM_MAX_CHUNK ? n_in / 32 : TP_QGEMM_MAX_CHUNK;
    return groups * (TP_QGEMM_ROWS * 16 * sizeof(int32_t) + 2 * TP_QGEMM_ROWS * sizeof(float));
}

static tp_qgemm_fn g_avx512[TP_TYPE_ID_LIMIT];
static tp_qgemm_tile_fn g_tile512;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_table(void)
{
    if (!tp_qgemm_fill_avx512(g_avx512, TP_TYPE_ID_LIMIT, &g_tile512)) {
        memset(g_avx512, 0, sizeof g_avx512);
        g_tile512 = NULL;
    }
}

tp_qgemm_fn tp_qgemm_for(int isa, uint32_t type)
{
    if (isa != TP_ISA_AVX512 || type >= TP_TYPE_ID_LIMIT || !tp_kernels_isa_supported(isa))
        return NULL;
    pthread_once(&g_once, init_table);
    return g_avx512[type];
}

tp_qgemm_tile_fn tp_qgemm_tiler(int isa)
{
    if (isa != TP_ISA_AVX512 || !tp_kernels_isa_supported(isa))
        return NULL;
    pthread_once(&g_once, init_table);
    return g_tile512;
}
