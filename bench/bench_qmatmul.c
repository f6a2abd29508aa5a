/* Typed mat-mul speed per weight type: the kernels of tp_kernel_mul_mat_typed (each form the
 * processor runs) against the method they replace, in the same process on the same data:
 * every weight row dequantized to f32 (tp_dequantize_row) once per block of 64 tokens, then
 * dotted in f32 with each token (the eight-lane dot of src/backend/dot_internal.h).
 *
 * Shapes: decode-like (1 token) and prefill-like (64 and 512 tokens) products with the
 * Qwen2.5-0.5B feed-forward matrices: 896 -> 4864 (every type but the K types, whose blocks
 * of 256 do not divide 896) and 4864 -> 896 (every type). Timings are the best of five
 * repeats; one thread is timed in process CPU time, more threads in wall time. Usage: bench_qmatmul [TYPE] [wall] [rows] [threads ...] (default: every type, 1 and 2 threads;
 * "wall": wall time for every run, to compare thread counts, e.g. under taskset -c 0; "rows":
 * where a form has prefill tiles (backend/qgemm.h), also that form with the tiles switched off,
 * its row dot products, "rows ... r" = their time over the tiles'). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/dot_internal.h"
#include "backend/qgemm.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

/* CLOCK_PROCESS_CPUTIME_ID for one thread (the time the process ran, not the time others
 * ran on its core: this machine is shared), CLOCK_MONOTONIC with more threads. */
static clockid_t g_clock = CLOCK_PROCESS_CPUTIME_ID;
static int g_wall; /* "wall" on the command line: wall time for every run */
static int g_rows; /* "rows": the row dot products next to the tiles */

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

/* The replaced method, single-threaded. */
static void old_matmul(uint32_t type, const uint8_t *W, size_t row_bytes, const float *x,
                       size_t n_in, size_t n_out, size_t n_tok, float *y, float *scratch)
{
    for (size_t t0 = 0; t0 < n_tok; t0 += TP_DOT_TOKEN_BLOCK) {
        size_t t1 = t0 + TP_DOT_TOKEN_BLOCK < n_tok ? t0 + TP_DOT_TOKEN_BLOCK : n_tok;
        for (size_t r = 0; r < n_out; r++) {
            tp_dequantize_row(type, W + r * row_bytes, scratch, n_in);
            dot_tokens(scratch, x, NULL, r, t0, t1, n_in, n_out, y);
        }
    }
}

typedef struct job {
    uint32_t type;
    const uint8_t *W;
    size_t row_bytes, n_in, n_out, n_tok;
    const float *x;
    float *y, *scratch;
} job;

/* Seconds per call: the best of `rounds` runs of enough calls to last about 0.15 s. */
static double time_new(const job *j, int isa, int threads)
{
    tp_kernels_set_isa(isa);
    g_clock = threads == 1 && !g_wall ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
    double best = 1e30;
    int reps = 1;
    for (int round = 0; round < 5; round++) {
        double t0 = now_seconds();
        for (int k = 0; k < reps; k++)
            tp_kernel_mul_mat_typed(j->type, j->W, NULL, j->x, j->n_in, j->n_out, j->n_tok, j->y,
                                    threads);
        double dt = (now_seconds() - t0) / reps;
        best = dt < best ? dt : best;
        if (dt * reps < 0.15)
            reps = (int)(0.15 / dt) + 1;
    }
    tp_kernels_set_isa(-1);
    return best;
}

static double time_old(const job *j)
{
    g_clock = g_wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID;
    double best = 1e30;
    int reps = 1;
    for (int round = 0; round < 5; round++) {
        double t0 = now_seconds();
        for (int k = 0; k < reps; k++)
            old_matmul(j->type, j->W, j->row_bytes, j->x, j->n_in, j->n_out, j->n_tok, j->y,
                       j->scratch);
        double dt = (now_seconds() - t0) / reps;
        best = dt < best ? dt : best;
        if (dt * reps < 0.15)
            reps = (int)(0.15 / dt) + 1;
    }
    return best;
}

static int bench_shape(uint32_t type, size_t n_in, size_t n_out, const int *threads, int n_thr)
{
    static const size_t toks[] = {1, 64, 512};
    size_t row_bytes;
    if (tp_type_row_bytes(type, n_in, &row_bytes) != TP_OK)
        return 0;
    float *wf = malloc(n_in * n_out * sizeof *wf), *x = malloc(512 * n_in * sizeof *x);
    uint8_t *W = malloc(row_bytes * n_out);
    float *y = malloc(512 * n_out * sizeof *y), *scratch = malloc(n_in * sizeof *scratch);
    if (!wf || !x || !W || !y || !scratch)
        return 1;
    for (size_t i = 0; i < n_in * n_out; i++)
        wf[i] = frand() * 0.05f;
    for (size_t i = 0; i < 512 * n_in; i++)
        x[i] = frand();
    for (size_t r = 0; tp_type_can_quantize(type) && r < n_out; r++)
        if (tp_quantize_row(type, wf + r * n_in, W + r * row_bytes, n_in) != TP_OK)
            return 1;
    if (!tp_type_can_quantize(type)) /* Q2_K, Q3_K, Q5_K: random bytes are valid blocks */
        for (size_t i = 0; i < row_bytes * n_out; i++)
            W[i] = (uint8_t)(frand() * 127.0f + 128.0f);
    if (!tp_type_can_quantize(type)) /* keep every f16 scale finite: clear the top exponent bit */
        for (size_t r = 0; r < n_out * (n_in / 256); r++) {
            size_t bb = tp_type_block_bytes(type);
            uint8_t *blk = W + r * bb;
            size_t f0 = type == TP_TYPE_Q2_K ? 80 : type == TP_TYPE_Q3_K ? 108 : 0;
            blk[f0 + 1] &= 0x3B;
            if (type != TP_TYPE_Q3_K)
                blk[f0 + 3] &= 0x3B;
        }
    for (size_t ti = 0; ti < 3; ti++) {
        job j = {type, W, row_bytes, n_in, n_out, toks[ti], x, y, scratch};
        double told = time_old(&j);
        printf("%-5s %4zux%-4zu %4zu tok  old(1t) %8.3f ms", tp_type_name(type), n_out, n_in,
               toks[ti], told * 1e3);
        for (int isa = TP_ISA_COUNT - 1; isa >= 0; isa--) {
            if (!tp_kernels_isa_supported(isa) || (isa == TP_ISA_PORTABLE && toks[ti] > 64))
                continue;
            for (int k = 0; k < n_thr; k++) {
                double tnew = time_new(&j, isa, threads[k]);
                printf("  %s/%dt %8.3f ms x%5.2f", tp_kernels_isa_name(isa), threads[k],
                       tnew * 1e3, told / tnew);
                if (g_rows && toks[ti] >= TP_QGEMM_MIN_TOKENS && tp_qgemm_for(isa, type)) {
                    tp_qgemm_set_off(1);
                    double trows = time_new(&j, isa, threads[k]);
                    tp_qgemm_set_off(0);
                    printf(" (rows %8.3f ms r%5.2f)", trows * 1e3, trows / tnew);
                }
            }
        }
        printf("\n");
        fflush(stdout);
    }
    free(wf);
    free(x);
    free(W);
    free(y);
    free(scratch);
    return 0;
}

int main(int argc, char **argv)
{
    int threads[8] = {1, 2}, n_thr = 2, given = 0;
    uint32_t only = TP_TYPE_ID_LIMIT;
    for (int i = 1; i < argc; i++) {
        uint32_t id;
        if (strcmp(argv[i], "wall") == 0)
            g_wall = 1;
        else if (strcmp(argv[i], "rows") == 0)
            g_rows = 1;
        else if (tp_type_from_name(argv[i], &id))
            only = id;
        else if (given < 8)
            threads[given++] = atoi(argv[i]);
    }
    n_thr = given ? given : n_thr;
    static const uint32_t types[] = {TP_TYPE_F32,  TP_TYPE_F16,  TP_TYPE_BF16, TP_TYPE_Q8_0,
                                     TP_TYPE_Q4_0, TP_TYPE_Q4_1, TP_TYPE_Q5_0, TP_TYPE_Q5_1,
                                     TP_TYPE_Q2_K, TP_TYPE_Q3_K, TP_TYPE_Q4_K, TP_TYPE_Q5_K,
                                     TP_TYPE_Q6_K};
    printf("forms: best %s; times per call, x = speed-up over the old method on 1 thread\n",
           tp_kernels_isa_name(tp_kernels_isa()));
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        if (only != TP_TYPE_ID_LIMIT && types[t] != only)
            continue;
        if (tp_type_block_elems(types[t]) < 256 && bench_shape(types[t], 896, 4864, threads, n_thr))
            return 1;
        if (bench_shape(types[t], 4864, 896, threads, n_thr))
            return 1;
    }
    return 0;
}
