/* Decode-shaped float mat-vec speed on the weights of a GGUF file, read where they lie in the
 * mapping (as `tensorplan run` reads them): one pass multiplies one token by every 2-D F32,
 * F16 or BF16 tensor of the file in file order (a decode step's weight reads), through
 * tp_kernel_mul_mat_typed in each form the processor runs, the forms alternated pass by pass
 * in the same process so that load changes hit them alike. Prints GB/s of weights per form
 * (best and median of the passes) and each form's best over the AVX2 form's.
 *
 * Usage: bench_fmatvec FILE.gguf [all] [passes] [threads ...] (default 7 passes, 1 and 2
 * threads; "all": the block-type matrices too, Q4_0 ... Q6_K, with each type's GB/s and share
 * of the time);
 * without FILE it says so and exits 0 (BENCHMARKS.md, "f32 decode": the Qwen2.5-0.5B shape
 * written by `tensorplan write-model qwen2.5-0.5b --type f32`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensorplan/gguf.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

#define MAX_PASSES 64

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int g_all; /* "all": every 2-D tensor of a type the kernels execute, not floats only */

/* Seconds and bytes per weight type and form, summed over the counted passes. */
static double g_type_s[TP_ISA_COUNT][64], g_type_b[TP_ISA_COUNT][64];

static int is_float_matrix(const tp_gguf_tensor *t)
{
    if (t->n_dims != 2)
        return 0;
    if (g_all)
        switch (t->type) {
        case TP_TYPE_Q4_0: case TP_TYPE_Q4_1: case TP_TYPE_Q5_0: case TP_TYPE_Q5_1:
        case TP_TYPE_Q8_0: case TP_TYPE_Q2_K: case TP_TYPE_Q3_K: case TP_TYPE_Q4_K:
        case TP_TYPE_Q5_K: case TP_TYPE_Q6_K:
            return 1;
        default:
            break;
        }
    return t->type == TP_TYPE_F32 || t->type == TP_TYPE_F16 || t->type == TP_TYPE_BF16;
}

/* One pass over every float matrix; returns the weight bytes read, 0 on a failure. */
static double one_pass(const tp_gguf *g, const float *x, float *y, int threads, int isa,
                       int counted)
{
    double bytes = 0;
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (!is_float_matrix(t))
            continue;
        double t0 = now_seconds();
        if (tp_kernel_mul_mat_typed(t->type, t->data, NULL, x, (size_t)t->ne[0],
                                    (size_t)t->ne[1], 1, y, threads) != TP_OK) {
            fprintf(stderr, "bench_fmatvec: %s: %s\n", t->name, tp_last_error());
            return 0;
        }
        if (counted) {
            g_type_s[isa][t->type] += now_seconds() - t0;
            g_type_b[isa][t->type] += (double)t->nbytes;
        }
        bytes += (double)t->nbytes;
    }
    return bytes;
}

static int cmp_double(const void *a, const void *b)
{
    double u = *(const double *)a, v = *(const double *)b;
    return u < v ? -1 : u > v;
}

/* Alternates the forms pass by pass at one thread count and prints their figures. */
static int run_threads(const tp_gguf *g, const float *x, float *y, int passes, int threads)
{
    double gbs[TP_ISA_COUNT][MAX_PASSES], best[TP_ISA_COUNT] = {0};
    for (int p = 0; p <= passes; p++) /* pass 0 maps the pages in and is not counted */
        for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
            if (!tp_kernels_isa_supported(isa) || tp_kernels_set_isa(isa) != TP_OK)
                continue;
            double t0 = now_seconds(), bytes = one_pass(g, x, y, threads, isa, p > 0);
            if (bytes == 0)
                return 1;
            if (p > 0)
                gbs[isa][p - 1] = bytes / (now_seconds() - t0) / 1e9;
        }
    tp_kernels_set_isa(-1);
    memset(best, 0, sizeof best);
    for (int isa = 0; isa < TP_ISA_COUNT; isa++) {
        if (!tp_kernels_isa_supported(isa))
            continue;
        qsort(gbs[isa], (size_t)passes, sizeof(double), cmp_double);
        best[isa] = gbs[isa][passes - 1];
        printf("  %d thread%s %-9s best %6.1f GB/s  median %6.1f GB/s", threads,
               threads == 1 ? " " : "s", tp_kernels_isa_name(isa), best[isa],
               gbs[isa][passes / 2]);
        if (isa != TP_ISA_AVX2 && best[TP_ISA_AVX2] > 0)
            printf("  %.2fx the avx2 form", best[isa] / best[TP_ISA_AVX2]);
        printf("\n");
        double all_b = 0, all_s = 0;
        for (int ty = 0; ty < 64; ty++) {
            all_b += g_type_b[isa][ty];
            all_s += g_type_s[isa][ty];
        }
        for (int ty = 0; ty < 64 && g_all; ty++)
            if (g_type_b[isa][ty] > 0)
                printf("    %-5s %6.1f GB/s, %4.1f%% of the bytes, %4.1f%% of the time\n",
                       tp_type_name((uint32_t)ty), g_type_b[isa][ty] / g_type_s[isa][ty] / 1e9,
                       100.0 * g_type_b[isa][ty] / all_b, 100.0 * g_type_s[isa][ty] / all_s);
    }
    memset(g_type_s, 0, sizeof g_type_s);
    memset(g_type_b, 0, sizeof g_type_b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("bench_fmatvec: skipped (give a GGUF file with F32, F16 or BF16 matrices)\n");
        return 0;
    }
    if (argc > 2 && strcmp(argv[2], "all") == 0) {
        g_all = 1;
        argv[2] = argv[1];
        argv++;
        argc--;
    }
    int passes = argc > 2 ? atoi(argv[2]) : 7;
    if (passes < 1 || passes > MAX_PASSES)
        passes = 7;
    tp_gguf *g = NULL;
    if (tp_gguf_open(argv[1], &g) != TP_OK) {
        fprintf(stderr, "bench_fmatvec: %s\n", tp_last_error());
        return 1;
    }
    size_t widest = 1, rows = 1;
    double total = 0;
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (!is_float_matrix(t))
            continue;
        widest = (size_t)t->ne[0] > widest ? (size_t)t->ne[0] : widest;
        rows = (size_t)t->ne[1] > rows ? (size_t)t->ne[1] : rows;
        total += (double)t->nbytes;
    }
    float *x = malloc(widest * sizeof *x), *y = malloc(rows * sizeof *y);
    if (!x || !y || total == 0) {
        fprintf(stderr, "bench_fmatvec: %s\n", total == 0 ? "no matrix of those types" : "no memory");
        free(x);
        free(y);
        tp_gguf_close(g);
        return 1;
    }
    for (size_t i = 0; i < widest; i++)
        x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    printf("bench_fmatvec: %s, %.2f GB of %s matrices, %d passes per form\n", argv[1],
           total / 1e9, g_all ? "weight" : "float", passes);
    int rc = 0;
    if (argc > 3)
        for (int a = 3; a < argc && !rc; a++)
            rc = run_threads(g, x, y, passes, atoi(argv[a]) > 0 ? atoi(argv[a]) : 1);
    else
        rc = run_threads(g, x, y, passes, 1) || run_threads(g, x, y, passes, 2);
    free(x);
    free(y);
    tp_gguf_close(g);
    return rc;
}
