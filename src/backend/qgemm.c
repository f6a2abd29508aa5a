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
    /* per group: 16 pairs x 16 rows of int32, 16 scales, 16 mins */
    return (n_in / 32) * (TP_QGEMM_ROWS * 16 * sizeof(int32_t) + 2 * TP_QGEMM_ROWS * sizeof(float));
}

void tp_qgemm_tile_x(const int16_t *q, const float *d, const float *s, size_t n_in, size_t n_tok,
                     void *mem, tp_qgemm_x *x)
{
    const size_t T = TP_QGEMM_TOKENS, n_g = n_in / 32;
    size_t tiles = (n_tok + T - 1) / T;
    int32_t *xq = mem;
    float *xd = (float *)(void *)(xq + tiles * T * (n_in / 2)), *xs = xd + tiles * T * n_g;
    memset(mem, 0, tp_qgemm_x_bytes(n_in, n_tok)); /* the padding tokens */
    for (size_t t = 0; t < n_tok; t++) {
        size_t i = t / T, k = t % T;
        const int16_t *qt = q + t * n_in;
        int32_t *qi = xq + i * T * (n_in / 2);
        for (size_t g = 0; g < n_g; g++) {
            for (size_t p = 0; p < 16; p++) {
                uint32_t lo = (uint16_t)qt[32 * g + p], hi = (uint16_t)qt[32 * g + p + 16];
                qi[(g * 16 + p) * T + k] = (int32_t)(lo | hi << 16);
            }
            xd[(i * n_g + g) * T + k] = d[t * n_g + g];
            xs[(i * n_g + g) * T + k] = s[t * 2 * n_g + 2 * g] + s[t * 2 * n_g + 2 * g + 1];
        }
    }
    x->q = xq;
    x->d = xd;
    x->s = xs;
    x->n_in = n_in;
    x->n_tok = n_tok;
}

static tp_qgemm_fn g_avx512[TP_TYPE_ID_LIMIT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_table(void)
{
    if (!tp_qgemm_fill_avx512(g_avx512, TP_TYPE_ID_LIMIT))
        memset(g_avx512, 0, sizeof g_avx512);
}

tp_qgemm_fn tp_qgemm_for(int isa, uint32_t type)
{
    if (isa != TP_ISA_AVX512 || type >= TP_TYPE_ID_LIMIT || !tp_kernels_isa_supported(isa))
        return NULL;
    pthread_once(&g_once, init_table);
    return g_avx512[type];
}
