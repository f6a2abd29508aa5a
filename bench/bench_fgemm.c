/* Prefill-sized float products: tp_kernel_mul_mat_typed (the packed product of
 * backend/fgemm.h from TP_FGEMM_MIN_TOKENS tokens up) against OpenBLAS's cblas_sgemm on the
 * same data, in the same process, interleaved round by round.
 *
 * Shapes (in -> out): the Qwen2.5-0.5B products 896 -> 4864, 4864 -> 896, 896 -> 896 and the
 * output 896 -> 151936; the Llama-3.2-1B ones 2048 -> 8192, 8192 -> 2048, 2048 -> 2048 and
 * 2048 -> 512; 64 and 512 tokens. F16 and BF16 weights are given to OpenBLAS as their f32
 * values, converted beforehand (its best case: the conversion is not timed, and it holds the
 * f32 copy). Times are the best of several rounds; one thread in process CPU time, more in
 * wall time. Without OpenBLAS (the build defines TP_HAVE_OPENBLAS when CMake finds it) only
 * tensorplan's times are printed.
 *
 *   bench_fgemm [f32|f16|bf16] [avx512|avx2|portable] [threads ...] [quick]
 *
 * (default: every type, the best form, 1 and 2 threads; quick: the Qwen2.5-0.5B shapes but
 * the output one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

#ifdef TP_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int num_threads);
#endif

static clockid_t g_clock = CLOCK_PROCESS_CPUTIME_ID;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

typedef struct job {
    uint32_t type;
    const uint8_t *W; /* weights in their type */
    const float *wf;  /* their f32 values */
    const float *x;
    size_t n_in, n_out, n_tok;
    float *y;
    int threads;
} job;

static void run_tp(const job *j)
{
    tp_kernel_mul_mat_typed(j->type, j->W, NULL, j->x, j->n_in, j->n_out, j->n_tok, j->y,
                            j->threads);
}

#ifdef TP_HAVE_OPENBLAS
static void run_blas(const job *j)
{
    openblas_set_num_threads(j->threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->n_tok, (int)j->n_out,
                (int)j->n_in, 1.0f, j->x, (int)j->n_in, j->wf, (int)j->n_in, 0.0f, j->y,
                (int)j->n_out);
}
#endif

/* Seconds per call of one round: enough calls to last about 0.2 s. */
static double time_round(void (*fn)(const job *), const job *j)
{
    double t0 = now_seconds();
    fn(j);
    double dt = now_seconds() - t0;
    int reps = dt < 0.2 ? (int)(0.2 / (dt > 1e-6 ? dt : 1e-6)) : 1;
    t0 = now_seconds();
    for (int k = 0; k < reps; k++)
        fn(j);
    return (now_seconds() - t0) / reps;
}

static int bench_shape(uint32_t type, size_t n_in, size_t n_out, const int *threads, int n_thr)
{
    static const size_t toks[] = {64, 512};
    size_t row_bytes;
    if (tp_type_row_bytes(type, n_in, &row_bytes) != TP_OK)
        return 1;
    float *wf = malloc(n_in * n_out * sizeof *wf), *x = malloc(512 * n_in * sizeof *x);
    uint8_t *W = malloc(row_bytes * n_out);
    float *y = malloc(512 * n_out * sizeof *y);
    if (!wf || !x || !W || !y)
        return 1;
    for (size_t i = 0; i < n_in * n_out; i++)
        wf[i] = frand() * 0.05f;
    for (size_t i = 0; i < 512 * n_in; i++)
        x[i] = frand();
    for (size_t r = 0; r < n_out; r++) /* the f32 values of the typed weights */
        if (tp_quantize_row(type, wf + r * n_in, W + r * row_bytes, n_in) != TP_OK ||
            tp_dequantize_row(type, W + r * row_bytes, wf + r * n_in, n_in) != TP_OK)
            return 1;
    for (size_t ti = 0; ti < 2; ti++)
        for (int k = 0; k < n_thr; k++) {
            job j = {type, W, wf, x, n_in, n_out, toks[ti], y, threads[k]};
            g_clock = threads[k] == 1 ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
            double gflop = 2.0 * (double)n_in * (double)n_out * (double)toks[ti] * 1e-9;
            double best_tp = 1e30, best_blas = 1e30;
            int rounds = gflop > 20 ? 2 : 4;
            for (int r = 0; r < rounds; r++) {
                double t = time_round(run_tp, &j);
                best_tp = t < best_tp ? t : best_tp;
#ifdef TP_HAVE_OPENBLAS
                t = time_round(run_blas, &j);
                best_blas = t < best_blas ? t : best_blas;
#endif
            }
            printf("%-4s %5zu->%-6zu %3zu tok %dt  tensorplan %8.2f ms %6.1f Gflop/s",
                   tp_type_name(type), n_in, n_out, toks[ti], threads[k], best_tp * 1e3,
                   gflop / best_tp);
            if (best_blas < 1e30)
                printf("  openblas %8.2f ms %6.1f Gflop/s  tensorplan/openblas speed %5.2f",
                       best_blas * 1e3, gflop / best_blas, best_blas / best_tp);
            printf("\n");
            fflush(stdout);
        }
    free(wf);
    free(x);
    free(W);
    free(y);
    return 0;
}

int main(int argc, char **argv)
{
    int threads[8] = {1, 2}, n_thr = 2, given = 0, quick = 0;
    uint32_t only = TP_TYPE_ID_LIMIT;
    for (int i = 1; i < argc; i++) {
        uint32_t id;
        int isa = -1;
        for (int f = 0; f < TP_ISA_COUNT; f++)
            if (strcmp(argv[i], tp_kernels_isa_name(f)) == 0)
                isa = f;
        if (isa >= 0) {
            if (tp_kernels_set_isa(isa) != TP_OK) {
                fprintf(stderr, "bench_fgemm: the %s form does not run here\n", argv[i]);
                return 1;
            }
        } else if (strcmp(argv[i], "quick") == 0)
            quick = 1;
        else if (tp_type_from_name(argv[i], &id))
            only = id;
        else if (given < 8)
            threads[given++] = atoi(argv[i]);
    }
    n_thr = given ? given : n_thr;
    static const size_t shapes[][2] = {{896, 4864},  {4864, 896},  {896, 896},
                                       {2048, 8192}, {8192, 2048}, {2048, 2048},
                                       {2048, 512},  {896, 151936}};
    static const uint32_t types[] = {TP_TYPE_F32, TP_TYPE_F16, TP_TYPE_BF16};
    printf("form %s; %s\n", tp_kernels_isa_name(tp_kernels_isa()),
#ifdef TP_HAVE_OPENBLAS
           "OpenBLAS cblas_sgemm (f32 copy of the weights)"
#else
           "OpenBLAS not found at build time: tensorplan only"
#endif
    );
    for (size_t t = 0; t < 3; t++) {
        if (only != TP_TYPE_ID_LIMIT && types[t] != only)
            continue;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            if (quick && s >= 3)
                continue;
            if (bench_shape(types[t], shapes[s][0], shapes[s][1], threads, n_thr))
                return 1;
        }
    }
    return 0;
}
