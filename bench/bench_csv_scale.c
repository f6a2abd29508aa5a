/* The CSV path at scale (BENCHMARKS.md, "The CSV path at scale"): N rows with short lifetimes
 * (row i lives [i, i + L), L uniform in 1..63, sizes uniform in 1..2^20, the layout of
 * bench/gen_csv.py) written to a temporary file, then read, planned with the greedy and
 * written as a solution, each stage timed; and the lifetime ranks of the greedy computed
 * by the current method (searches in tensor order) and the earlier one (searches in size
 * order), with their ratio; then the greedy placement alone, by the pass tp_plan_offsets takes
 * and by the interval tree, with their ratio. usage: bench_csv_scale [N] (default 1,000,000). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/clock.h"
#include "planner/planner_internal.h"
#include "tensorplan/csv.h"
#include "tensorplan/planner.h"

static int by_value(const void *pa, const void *pb)
{
    const size_t *a = pa, *b = pb;
    return (*a > *b) - (*a < *b);
}

static size_t count_at_most(const size_t *v, size_t n, size_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The earlier method: two searches per tensor, in the order given. */
static void ranks_earlier(const tp_tensor_lifetime *t, const size_t *order, size_t n, size_t *lo,
                          size_t *hi)
{
    size_t *times = malloc(n * sizeof *times), distinct = 0;
    for (size_t k = 0; k < n; k++)
        times[k] = t[order[k]].first_use;
    qsort(times, n, sizeof *times, by_value);
    for (size_t k = 0; k < n; k++)
        if (distinct == 0 || times[distinct - 1] != times[k])
            times[distinct++] = times[k];
    for (size_t k = 0; k < n; k++) {
        lo[k] = count_at_most(times, distinct, t[order[k]].first_use) - 1;
        hi[k] = count_at_most(times, distinct, t[order[k]].last_use) - 1;
    }
    free(times);
}

int main(int argc, char **argv)
{
    const size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1000000;
    char in[64], out[64];
    snprintf(in, sizeof in, "/tmp/tp_bench_csv_%ld.csv", (long)getpid());
    snprintf(out, sizeof out, "/tmp/tp_bench_csv_%ld.out.csv", (long)getpid());
    FILE *f = fopen(in, "w");
    if (f == NULL)
        return 1;
    uint64_t x = 14;
    fprintf(f, "id,lower,upper,size\n");
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        fprintf(f, "b%zu,%zu,%zu,%llu\n", i, i, i + 1 + (size_t)(x % 63),
                (unsigned long long)(1 + (x >> 20) % (1u << 20)));
    }
    fclose(f);

    double t0 = tp_clock_seconds();
    tp_csv_table table;
    if (tp_csv_read(in, 0, &table) != TP_OK)
        return 1;
    double t1 = tp_clock_seconds();
    size_t *offsets = malloc(n * sizeof *offsets), arena = 0;
    if (offsets == NULL || tp_plan_offsets_ex(table.tensors, n, NULL, offsets, &arena, NULL) != TP_OK)
        return 1;
    double t2 = tp_clock_seconds();
    if (tp_csv_write_solution(out, &table, offsets) != TP_OK)
        return 1;
    double t3 = tp_clock_seconds();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("csv path, %zu short-lifetime rows: read %.3f s, plan %.3f s, write %.3f s, total "
           "%.3f s; arena %zu; max RSS %ld MB\n",
           n, t1 - t0, t2 - t1, t3 - t2, t3 - t0, arena, ru.ru_maxrss / 1024);

    tp_order_key *keys = malloc(n * sizeof *keys);
    size_t *order = malloc(n * sizeof *order), *lo = malloc(n * sizeof *lo);
    size_t *hi = malloc(n * sizeof *hi), *lo2 = malloc(n * sizeof *lo2), *hi2 = malloc(n * sizeof *hi2);
    if (!keys || !order || !lo || !hi || !lo2 || !hi2)
        return 1;
    const size_t m = tp_greedy_order(table.tensors, n, TP_ORDER_SIZE, keys, order);
    size_t ranks = 0;
    double r0 = tp_clock_seconds();
    if (tp_lifetime_ranks(table.tensors, order, m, lo, hi, &ranks) != TP_OK)
        return 1;
    double r1 = tp_clock_seconds();
    ranks_earlier(table.tensors, order, m, lo2, hi2);
    double r2 = tp_clock_seconds();
    const int same = memcmp(lo, lo2, m * sizeof *lo) == 0 && memcmp(hi, hi2, m * sizeof *hi) == 0;
    printf("lifetime ranks in size order: %.3f s now, %.3f s by the earlier method (%.2fx), "
           "%s\n", r1 - r0, r2 - r1, (r2 - r1) / (r1 - r0), same ? "same ranks" : "RANKS DIFFER");
    /* the placement alone: the pass tp_plan_offsets takes against the interval tree, which
     * placed every such file before the time buckets */
    size_t *tree_off = malloc(n * sizeof *tree_off), arena_tree = 0, arena_now = 0;
    if (tree_off == NULL)
        return 1;
    double p0 = tp_clock_seconds();
    if (tp_greedy_place(table.tensors, n, order, m, 1, TP_GAP_BEST_FIT, NULL, offsets,
                        &arena_now) != TP_OK)
        return 1;
    double p1 = tp_clock_seconds();
    if (tp_tree_place(table.tensors, n, order, m, 1, TP_GAP_BEST_FIT, NULL, tree_off,
                      &arena_tree) != TP_OK)
        return 1;
    double p2 = tp_clock_seconds();
    const int same_plan = arena_now == arena_tree && memcmp(offsets, tree_off, n * sizeof *offsets) == 0;
    printf("greedy placement: %.3f s now, %.3f s by the interval tree (%.2fx), %s\n", p1 - p0,
           p2 - p1, (p2 - p1) / (p1 - p0), same_plan ? "same offsets" : "OFFSETS DIFFER");
    free(tree_off);
    free(keys), free(order), free(lo), free(hi), free(lo2), free(hi2), free(offsets);
    tp_csv_free(&table);
    unlink(in);
    unlink(out);
    return same && same_plan ? 0 : 1;
}
