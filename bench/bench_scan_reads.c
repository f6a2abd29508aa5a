/* What the greedy has to read on random lifetimes (BENCHMARKS.md, "Planner families"): the
 * family of bench_planner_families (sizes 2^(6..20) + 64 U[0, 64), first use U[0, n), length
 * U[0, n/4]), planned by tp_plan_offsets, then every placement of that plan replayed by brute
 * force to count, per placement (means over all of them):
 *
 *   placed     tensors placed before it (what the address-ordered scan reads)
 *   window     placed tensors whose first use lies in [first - n/4, last] (what an index by
 *              first use must read at least, for this family's longest lifetime)
 *   conflicts  placed tensors whose lifetimes meet its own
 *   blocks     coalesced blocks of the union of those conflicts
 *   fitting    gaps of that union at least as long as the tensor
 *   leaves     share of runs of 16 (and 4) consecutive placed tensors in address order holding
 *              a conflict: what a tree over addresses keyed by [min first use, max last use]
 *              still visits (sampled every 10th placement)
 *
 * build/bench/bench_scan_reads [n ...]     (default 10000 30000; O(n^2 log n)) */
#include <stdio.h>
#include <stdlib.h>

#include "support/xorshift.h"
#include "tensorplan/planner.h"

typedef struct span {
    size_t start, end;
} span;

static const tp_tensor_lifetime *g_t;
static const size_t *g_off;

static int by_size_desc(const void *pa, const void *pb)
{
    const size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    if (g_t[a].size != g_t[b].size)
        return g_t[a].size > g_t[b].size ? -1 : 1;
    return (a > b) - (a < b);
}

static int by_offset(const void *pa, const void *pb)
{
    const size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return (g_off[a] > g_off[b]) - (g_off[a] < g_off[b]);
}

static int by_start(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    return (a->start > b->start) - (a->start < b->start);
}

static int meet(const tp_tensor_lifetime *a, const tp_tensor_lifetime *b)
{
    return a->first_use <= b->last_use && b->first_use <= a->last_use;
}

/* Coalesces s[0 .. n) sorted by start; returns the blocks and counts the gaps >= size. */
static size_t coalesce(span *s, size_t n, size_t size, size_t *fitting)
{
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i].start <= s[m].end) {
            s[m].end = s[i].end > s[m].end ? s[i].end : s[m].end;
        } else {
            s[++m] = s[i];
        }
    }
    *fitting += s[0].start >= size;
    for (size_t i = 0; i < m; i++)
        *fitting += s[i + 1].start - s[i].end >= size;
    return m + 1;
}

/* Share of runs of `run` consecutive entries of sorted[0 .. k) holding a conflict with q. */
static void leaves(const tp_tensor_lifetime *t, const size_t *sorted, size_t k, size_t q,
                   size_t run, double *runs, double *hit)
{
    for (size_t g = 0; g < k; g += run) {
        int h = 0;
        for (size_t p = g; p < g + run && p < k; p++)
            h |= meet(&t[sorted[p]], &t[q]);
        *runs += 1;
        *hit += h;
    }
}

static void measure(size_t n)
{
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *off = malloc(n * sizeof *off), *order = malloc(n * sizeof *order);
    size_t *sorted = malloc(n * sizeof *sorted);
    span *s = malloc(n * sizeof *s);
    if (n < 4 || t == NULL || off == NULL || order == NULL || sorted == NULL || s == NULL) {
        printf("%zu: too few tensors, or out of memory\n", n);
        exit(1);
    }
    tpt_rng rng = tpt_rng_seeded(1900 + 3 * 7 + n); /* the random family's seed */
    for (size_t i = 0; i < n; i++) {
        const size_t size = ((size_t)1 << (6 + tpt_rng_below(&rng, 15))) + 64 * tpt_rng_below(&rng, 64);
        const size_t first = tpt_rng_below(&rng, n);
        t[i] = (tp_tensor_lifetime){ size, first, first + tpt_rng_below(&rng, n / 4 + 1) };
        order[i] = i;
    }
    size_t arena = 0;
    if (tp_plan_offsets(t, n, off, &arena) != TP_OK) {
        printf("plan failed: %s\n", tp_last_error());
        exit(1);
    }
    g_t = t;
    g_off = off;
    qsort(order, n, sizeof *order, by_size_desc);
    double placed = 0, window = 0, conflicts = 0, blocks = 0, runs16 = 0, hit16 = 0, runs4 = 0,
           hit4 = 0;
    size_t fitting = 0;
    for (size_t k = 0; k < n; k++) {
        const size_t q = order[k], reach = n / 4;
        size_t nb = 0;
        for (size_t p = 0; p < k; p++) {
            const tp_tensor_lifetime *x = &t[order[p]];
            window += x->first_use + reach >= t[q].first_use && x->first_use <= t[q].last_use;
            if (meet(x, &t[q]))
                s[nb++] = (span){ off[order[p]], off[order[p]] + x->size };
        }
        placed += (double)k;
        conflicts += (double)nb;
        if (nb > 0) {
            qsort(s, nb, sizeof *s, by_start);
            blocks += (double)coalesce(s, nb, t[q].size, &fitting);
        }
        if (k % 10 == 5) {
            for (size_t p = 0; p < k; p++)
                sorted[p] = order[p];
            qsort(sorted, k, sizeof *sorted, by_offset);
            leaves(t, sorted, k, q, 16, &runs16, &hit16);
            leaves(t, sorted, k, q, 4, &runs4, &hit4);
        }
    }
    const double d = (double)n;
    printf("%8zu %10.0f %10.0f %10.0f %9.0f %8.1f %8.1f%% %8.1f%%\n", n, placed / d, window / d,
           conflicts / d, blocks / d, (double)fitting / d, 100 * hit16 / runs16, 100 * hit4 / runs4);
    free(t);
    free(off);
    free(order);
    free(sorted);
    free(s);
}

int main(int argc, char **argv)
{
    printf("%8s %10s %10s %10s %9s %8s %9s %9s\n", "n", "placed", "window", "conflicts",
           "blocks", "fitting", "leaves16", "leaves4");
    if (argc < 2) {
        measure(10000);
        measure(30000);
    }
    for (int i = 1; i < argc; i++)
        measure((size_t)strtoull(argv[i], NULL, 10));
    return 0;
}
