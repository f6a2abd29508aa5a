/* The kernels' parallel for (src/backend/parallel.c): what a call costs and what 2 threads
 * gain on small work, against 1 thread in the same process, runs interleaved.
 *
 *   dispatch: back-to-back calls of an empty range (64 indices): the time of a call;
 *   work W us: back-to-back calls whose range holds W microseconds of 1-thread work;
 *   gap: each call of 8 us of work follows 4 us of serial work on the caller, the pattern
 *        of a decode step (a norm, then a product);
 *   mat-vec: tp_kernel_mul_mat_typed with one token on the decode shapes of Qwen2.5-0.5B
 *        (896 -> 896, 896 -> 128, 896 -> 4864, 4864 -> 896) in Q8_0 and Q5_0, through the
 *        kernels' own choice of threads (tp_parallel_threads), and with every product
 *        shared ("forced": the threshold of tp_parallel_threads set to 0), which shows where
 *        sharing starts to pay.
 *
 * Each figure is the best of 21 short rounds (about 4 ms each: the best round is the one
 * that found the machine idle), the 1- and 2-thread runs alternating; the last column
 * is the 1-thread time over the 2-thread time (above 1: 2 threads are faster). Run it on an
 * idle machine and under `taskset -c 0` (there 2 threads should cost about what 1 does).
 * Usage: bench_parallel [ROUNDS]. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/parallel.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static volatile uint64_t g_sink;

/* About `iters` dependent multiply-adds: serial work that the compiler cannot drop. */
static uint64_t spin_work(uint64_t iters, uint64_t x)
{
    for (uint64_t i = 0; i < iters; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

typedef struct work_ctx {
    uint64_t per_index; /* iterations of spin_work per index */
    uint64_t out[TP_PARALLEL_MAX_THREADS * 8];
} work_ctx;

static void work_range(void *ctx, size_t begin, size_t end, int worker)
{
    work_ctx *w = ctx;
    uint64_t x = begin;
    for (size_t i = begin; i < end; i++)
        x = spin_work(w->per_index, x);
    w->out[(size_t)worker * 8] += x;
}

static uint64_t g_iters_per_us = 1;

/* Iterations per microsecond: the fastest of many short runs (the machine may be busy). */
static void calibrate(void)
{
    const uint64_t n = 1u << 15;
    double best = 1e30;
    for (int k = 0; k < 200; k++) {
        double t0 = now_us();
        g_sink = spin_work(n, (uint64_t)k);
        double dt = now_us() - t0;
        best = dt < best ? dt : best;
    }
    g_iters_per_us = (uint64_t)((double)n / best) + 1;
}

typedef struct pattern {
    size_t n;        /* indices per call */
    uint64_t work;   /* spin_work iterations per index */
    uint64_t serial; /* spin_work iterations on the caller before each call */
} pattern;

/* Microseconds per call of `calls` calls of pattern p on `threads` threads. */
static double run_pattern(const pattern *p, int threads, int calls)
{
    work_ctx w = {p->work, {0}};
    double t0 = now_us();
    for (int k = 0; k < calls; k++) {
        if (p->serial)
            g_sink = spin_work(p->serial, (uint64_t)k);
        tp_parallel_for(p->n, threads, work_range, &w);
    }
    double dt = (now_us() - t0) / calls;
    g_sink = w.out[0];
    return dt;
}

static void compare(const char *name, const pattern *p, int rounds)
{
    double best[2] = {1e30, 1e30};
    double one = run_pattern(p, 1, 50); /* a first call of each, outside the timing */
    int calls = one > 0 ? (int)(4000.0 / one) + 10 : 1000;
    if (calls > 100000)
        calls = 100000;
    run_pattern(p, 2, 50);
    for (int r = 0; r < rounds; r++)
        for (int t = 0; t < 2; t++) {
            double dt = run_pattern(p, t + 1, calls);
            best[t] = dt < best[t] ? dt : best[t];
        }
    printf("  %-26s %10.3f %10.3f %8.2f\n", name, best[0], best[1], best[0] / best[1]);
}

typedef struct mv_shape {
    uint32_t type;
    const char *type_name;
    size_t n_in, n_out;
} mv_shape;

static double time_matvec(const mv_shape *s, const void *W, const float *x, float *y,
                          int threads, int calls)
{
    double t0 = now_us();
    for (int k = 0; k < calls; k++)
        tp_kernel_mul_mat_typed(s->type, W, NULL, x, s->n_in, s->n_out, 1, y, threads);
    return (now_us() - t0) / calls;
}

static int compare_matvec(const mv_shape *s, int rounds)
{
    size_t row_bytes;
    if (tp_type_row_bytes(s->type, s->n_in, &row_bytes) != TP_OK)
        return 1;
    uint8_t *W = malloc(row_bytes * s->n_out);
    float *row = malloc(s->n_in * sizeof *row), *x = malloc(s->n_in * sizeof *x);
    float *y = malloc(s->n_out * sizeof *y);
    if (!W || !row || !x || !y)
        return 1;
    uint64_t r = 12345;
    for (size_t i = 0; i < s->n_in; i++) {
        r = r * 6364136223846793005ull + 1;
        x[i] = (float)((double)(r >> 40) / 16777216.0 - 0.5);
    }
    for (size_t o = 0; o < s->n_out; o++) {
        for (size_t i = 0; i < s->n_in; i++) {
            r = r * 6364136223846793005ull + 1;
            row[i] = (float)((double)(r >> 40) / 16777216.0 - 0.5);
        }
        if (tp_quantize_row(s->type, row, W + o * row_bytes, s->n_in) != TP_OK)
            return 1;
    }
    double one = time_matvec(s, W, x, y, 1, 20);
    int calls = (int)(4000.0 / (one > 0.1 ? one : 0.1)) + 10;
    double best[3] = {1e30, 1e30, 1e30};
    for (int k = 0; k < rounds; k++)
        for (int t = 0; t < 3; t++) {
            tp_parallel_set_min_work(t == 2 ? 0.0 : -1.0);
            double dt = time_matvec(s, W, x, y, t ? 2 : 1, calls);
            best[t] = dt < best[t] ? dt : best[t];
        }
    tp_parallel_set_min_work(-1.0);
    char name[64];
    snprintf(name, sizeof name, "mat-vec %s %zux%zu", s->type_name, s->n_out, s->n_in);
    printf("  %-26s %10.3f %10.3f %8.2f %10.3f %8.2f\n", name, best[0], best[1],
           best[0] / best[1], best[2], best[0] / best[2]);
    free(W);
    free(row);
    free(x);
    free(y);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 21;
    if (rounds < 1)
        rounds = 1;
    calibrate();
    printf("bench_parallel: best of %d rounds, microseconds per call (%llu work iterations "
           "per us)\n",
           rounds, (unsigned long long)g_iters_per_us);
    printf("  %-26s %10s %10s %8s %10s %8s\n", "case", "1 thread", "2 threads", "1t/2t",
           "2t forced", "1t/2tf");
    const pattern empty = {64, 0, 0};
    compare("dispatch (empty range)", &empty, rounds);
    static const int micros[] = {2, 5, 10, 20, 50, 200};
    for (size_t i = 0; i < sizeof micros / sizeof micros[0]; i++) {
        pattern p = {64, (uint64_t)micros[i] * g_iters_per_us / 64 + 1, 0};
        char name[64];
        snprintf(name, sizeof name, "work %d us", micros[i]);
        compare(name, &p, rounds);
    }
    const pattern gap = {64, 8 * g_iters_per_us / 64 + 1, 4 * g_iters_per_us};
    compare("gap: 4 us serial + 8 us", &gap, rounds);
    static const mv_shape shapes[] = {
        {TP_TYPE_Q8_0, "q8_0", 896, 896},  {TP_TYPE_Q8_0, "q8_0", 896, 128},
        {TP_TYPE_Q8_0, "q8_0", 896, 256},  {TP_TYPE_Q8_0, "q8_0", 896, 512},
        {TP_TYPE_Q8_0, "q8_0", 896, 4864}, {TP_TYPE_Q8_0, "q8_0", 4864, 896},
        {TP_TYPE_Q5_0, "q5_0", 896, 896},  {TP_TYPE_Q5_0, "q5_0", 896, 128},
        {TP_TYPE_Q5_0, "q5_0", 896, 4864}, {TP_TYPE_Q5_0, "q5_0", 896, 256},
        {TP_TYPE_F32, "f32", 896, 896},    {TP_TYPE_F32, "f32", 896, 256},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (compare_matvec(&shapes[i], rounds) != 0) {
            fprintf(stderr, "bench_parallel: %s\n", tp_last_error());
            return 1;
        }
    return 0;
}
