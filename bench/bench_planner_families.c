/* The greedy on the input families of large graphs (BENCHMARKS.md, "Planner families"), and
 * the exact search side by side with MiniMalloc when it is present.
 *
 * build/bench/bench_planner_families [--full] [--skip-random] [--threads] [--minimalloc] [--zero-waste]
 *                                    [--zero-waste-balanced]
 * (--threads: section 2 alone; --minimalloc: section 3 alone; --zero-waste: section 4
 * alone, on both distributions of cuts; --zero-waste-balanced: section 4 on the harder one,
 * tpt_zero_waste_balanced, alone)
 *  1. families at 1e5 and 1e6 tensors: tp_plan_offsets against the earlier passes in the same
 *     process (the interval tree, the address-ordered scan counting bytes in 32 bits, and
 *     the time buckets: what tp_plan_offsets chose among before cliques and granules),
 *     each earlier pass stopped by a deadline of 60 s ("> 60" then); offsets compared where
 *     both finish. Sizes 2^(6..20) + 64 U[0, 64).
 *       all:    every tensor `0,1000000` (all live at once)
 *       near:   first use U[0, 8), last 999,999 - U[0, 8)
 *       crowd:  all live at once, one size (4,096)
 *       random: first use U[0, n), length U[0, n/4] (1e6 only with --full)
 *  2. the scan on random lifetimes at 1e5 on 1 and 2 threads (run under `taskset -c 0` for
 *     the pinned figure: the 2-thread run must not be slower)
 *  3. MiniMalloc's eleven problems: the exact search (capacity 1,048,576; seconds and search
 *     nodes, which are deterministic) and, when the
 *     environment variable TP_MINIMALLOC names its binary, MiniMalloc on the same file
 *     (`--capacity=1048576 --input=FILE --output=FILE`), one after the other; skipped
 *     otherwise.
 *  4. zero-waste problems of 500 and 1,000 buffers (generator seeds 1-10 each, both
 *     generators), the exact search minimising for 10 s each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "planner/planner_internal.h"
#include "support/xorshift.h"
#include "support/zero_waste.h"
#include "tensorplan/csv.h"
#include "tensorplan/planner.h"

static tpt_rng rng;

static size_t below(size_t n) { return (size_t)(tpt_rng_next(&rng) % n); }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { ALL, NEAR, CROWD, RANDOM };
static const char *const family_names[] = { "all", "near", "crowd", "random" };

static void family(tp_tensor_lifetime *t, size_t n, int kind)
{
    rng = tpt_rng_seeded(1900 + (uint64_t)kind * 7 + n);
    for (size_t i = 0; i < n; i++) {
        size_t size = ((size_t)1 << (6 + below(15))) + 64 * below(64), first = 0;
        size_t last = 999999;
        if (kind == NEAR) {
            first = below(8);
            last -= below(8);
        } else if (kind == CROWD) {
            size = 4096;
        } else if (kind == RANDOM) {
            first = below(n);
            last = first + below(n / 4 + 1);
        }
        t[i] = (tp_tensor_lifetime){ size, first, last };
    }
}

#define EARLIER_LIMIT 60.0

/* Seconds of one earlier pass (tree: 0, scan: 1, buckets: 2), -1 when its deadline stopped it, -2 when
 * the scan declined (an address reached 4 GiB). */
static double earlier(const tp_tensor_lifetime *t, size_t n, const size_t *order, size_t m,
                      int pass, size_t *off)
{
    const tp_greedy_ticker stop = { NULL, NULL, now() + EARLIER_LIMIT };
    size_t arena = 0;
    int declined = 0;
    tp_leaf_ranks ranks = { malloc(m * sizeof(size_t)), malloc(m * sizeof(size_t)), 0 };
    tp_bucket_shape shape = { 0, SIZE_MAX };
    double us = 0;
    if (pass == 2 && (tp_lifetime_ranks(t, order, m, ranks.lo, ranks.hi, &ranks.n_leaves) != TP_OK ||
                      tp_bucket_choose(&ranks, m, &shape, &us) != TP_OK))
        exit(1);
    const double t0 = now();
    tp_status st;
    if (pass == 0)
        st = tp_tree_place(t, n, order, m, 1, TP_GAP_BEST_FIT, &stop, off, &arena);
    else if (pass == 1)
        st = tp_scan_place(t, n, order, m, 1, TP_GAP_BEST_FIT, &stop, 1, TP_SCAN_AUTO, off,
                           &arena, &declined);
    else
        st = tp_bucket_place(t, n, order, m, &ranks, &shape, 1, TP_GAP_BEST_FIT, &stop, off,
                             &arena);
    const double s = now() - t0;
    free(ranks.lo);
    free(ranks.hi);
    if (st == TP_ERR_TIMEOUT)
        return -1;
    if (st != TP_OK) {
        printf("earlier pass failed: %s\n", tp_last_error());
        exit(1);
    }
    return declined ? -2 : s;
}

static void print_earlier(double s, double new_s, int same)
{
    char bound[32];
    snprintf(bound, sizeof bound, "> %.0f", EARLIER_LIMIT / new_s);
    if (s == -1)
        printf(" %9s %9s", "> 60", bound);
    else if (s == -2)
        printf(" %9s %9s", "declined", "-");
    else
        printf(" %9.3f %9.1f%s", s, s / new_s, same ? "" : " DIFFERENT");
}

static void family_row(int kind, size_t n)
{
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *off = malloc(n * sizeof *off), *ref = malloc(n * sizeof *ref);
    size_t *order = malloc(n * sizeof *order);
    tp_order_key *keys = malloc(n * sizeof *keys);
    family(t, n, kind);
    const size_t m = tp_greedy_order(t, n, TP_ORDER_SIZE, keys, order);
    size_t arena = 0, peak = 0;
    const double t0 = now();
    if (tp_plan_offsets(t, n, off, &arena) != TP_OK) {
        printf("tp_plan_offsets failed: %s\n", tp_last_error());
        exit(1);
    }
    const double new_s = now() - t0;
    tp_peak_live_bytes(t, n, &peak);
    printf("%-7s %8zu %8.4f %9.3f", family_names[kind], n, (double)arena / (double)peak, new_s);
    for (int pass = 0; pass < 3; pass++) {
        const double s = earlier(t, n, order, m, pass, ref);
        print_earlier(s, new_s, s < 0 || memcmp(off, ref, n * sizeof *off) == 0);
    }
    printf("\n");
    fflush(stdout);
    free(t);
    free(off);
    free(ref);
    free(order);
    free(keys);
}

static void families_section(int full, int skip_random)
{
    printf("1. tp_plan_offsets against the earlier passes (seconds; ratio = earlier / new)\n");
    printf("%-7s %8s %8s %9s %9s %9s %9s %9s %9s %9s\n", "family", "n", "a/peak", "new",
           "tree", "ratio", "scan32", "ratio", "buckets", "ratio");
    for (size_t n = 100000; n <= 1000000; n *= 10)
        for (int kind = ALL; kind <= RANDOM; kind++)
            if (kind != RANDOM || (!skip_random && (n < 1000000 || full)))
                family_row(kind, n);
}

static void threads_section(void)
{
    const size_t n = 100000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *off = malloc(n * sizeof *off), *order = malloc(n * sizeof *order);
    tp_order_key *keys = malloc(n * sizeof *keys);
    family(t, n, RANDOM);
    /* in units of 64 bytes, the granule of these sizes, as tp_greedy_place hands them to the
     * scan (tp_size_granule) */
    for (size_t i = 0; i < n; i++)
        t[i].size /= 64;
    const size_t m = tp_greedy_order(t, n, TP_ORDER_SIZE, keys, order);
    printf("\n2. the scan on random lifetimes, n = 1e5, sizes in units of 64 bytes, %u "
           "processors usable (seconds, runs interleaved)\n", tp_planner_cpus());
    /* 1 thread, 2 threads, and 1 thread restricted to the AVX2 kernel (what a processor
     * without AVX-512 runs) */
    double best[3] = { 1e30, 1e30, 1e30 };
    for (int r = 0; r < 3; r++)
        for (unsigned k = 0; k < 3; k++) {
            size_t arena = 0;
            int declined = 0;
            const double t0 = now();
            tp_scan_place(t, n, order, m, 1, TP_GAP_BEST_FIT, NULL, k == 1 ? 2 : 1,
                          k == 2 ? TP_SCAN_AVX2 : TP_SCAN_AUTO, off, &arena, &declined);
            const double s = now() - t0;
            best[k] = s < best[k] ? s : best[k];
        }
    printf("1 thread %.3f s, 2 threads %.3f s, ratio 2/1 %.2f; 1 thread, AVX2 kernel %.3f s\n",
           best[0], best[1], best[1] / best[0], best[2]);
    free(t);
    free(off);
    free(order);
    free(keys);
}

/* MiniMalloc on one file: seconds, or -1 when it failed. */
static double run_minimalloc(const char *bin, const char *path)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' --capacity=1048576 --input='%s' --output=/dev/null "
             ">/dev/null 2>&1", bin, path);
    const double t0 = now();
    const int rc = system(cmd);
    return rc == 0 ? now() - t0 : -1;
}

static void minimalloc_section(void)
{
    const char *bin = getenv("TP_MINIMALLOC");
    printf("\n3. exact search (capacity 1,048,576, limit 60 s) and MiniMalloc (%s)\n",
           bin ? bin : "skipped: set TP_MINIMALLOC to its binary");
    printf("%-4s %9s %9s %9s %9s\n", "file", "exact", "nodes", "minimalloc", "ratio");
    double ours = 0, theirs = 0;
    for (const char *p = "ABCDEFGHIJK"; *p; p++) {
        char path[512];
        snprintf(path, sizeof path, "%s/minimalloc/%c.1048576.csv", TP_TEST_DATA, *p);
        tp_csv_table table;
        if (tp_csv_read(path, 0, &table) != TP_OK) {
            printf("%c: %s\n", *p, tp_last_error());
            continue;
        }
        size_t *off = malloc(table.count * sizeof *off), arena = 0;
        tp_plan_options o;
        tp_plan_options_init(&o);
        o.strategy = TP_PLAN_EXACT;
        o.capacity = 1048576;
        o.time_limit_seconds = 60;
        tp_plan_report rep;
        const tp_status st = tp_plan_offsets_ex(table.tensors, table.count, &o, off, &arena, &rep);
        ours += rep.seconds;
        printf("%-4c %8.3f%s %9llu", *p, rep.seconds, st == TP_OK ? " " : "!",
               rep.nodes_explored);
        if (bin != NULL) {
            const double s = run_minimalloc(bin, path);
            theirs += s > 0 ? s : 0;
            printf(" %9.3f %9.2f", s, s > 0 ? rep.seconds / s : 0);
        }
        printf("\n");
        free(off);
        tp_csv_free(&table);
    }
    printf("total: exact %.2f s", ours);
    if (bin != NULL)
        printf(", MiniMalloc %.2f s (ratio %.2f)", theirs, ours / theirs);
    printf("  (! = no plan within the capacity)\n");
}

/* Zero-waste problems of 500 and 1,000 buffers (support/zero_waste.h: capacity 1,048,576 over
 * 1,000 nodes), generator seeds 1-10 each, the exact search minimising with a limit of 10 s
 * each; then how many were solved (arena = the capacity, the least), how many within 5% of
 * it, and the worst arena. */
static void zero_waste_section(int balanced)
{
    const double cap = 1048576.0;
    printf("\n4%s. zero-waste problems%s (least arena = the capacity 1,048,576), exact search, "
           "10 s each\n", balanced ? "b" : "", balanced ? ", largest piece cut" : "");
    printf("%6s %5s %9s %9s %8s %s\n", "n", "seed", "greedy/C", "arena/C", "seconds", "method");
    size_t solved = 0, within = 0, runs = 0;
    double worst = 0, total = 0;
    for (size_t n = 500; n <= 1000; n += 500)
        for (uint64_t seed = 1; seed <= 10; seed++) {
            tpt_rng r = tpt_rng_seeded(seed * 1000 + n);
            tp_tensor_lifetime *t = malloc(n * sizeof *t);
            size_t *off = malloc(n * sizeof *off), arena = 0, greedy = 0;
            if (balanced)
                tpt_zero_waste_balanced(&r, n, 1000, 1048576, t, NULL);
            else
                tpt_zero_waste(&r, n, 1000, 1048576, t, NULL);
            tp_plan_offsets(t, n, off, &greedy);
            tp_plan_options o;
            tp_plan_options_init(&o);
            o.strategy = TP_PLAN_EXACT;
            o.time_limit_seconds = 10;
            tp_plan_report rep;
            tp_plan_offsets_ex(t, n, &o, off, &arena, &rep);
            printf("%6zu %5llu %9.4f %9.4f %8.2f %s\n", n, (unsigned long long)seed,
                   greedy / cap, arena / cap, rep.seconds, rep.method);
            fflush(stdout);
            runs++;
            solved += arena == 1048576;
            within += arena <= 1.05 * cap;
            worst = arena / cap > worst ? arena / cap : worst;
            total += rep.seconds;
            free(t);
            free(off);
        }
    printf("solved %zu / %zu, within 5%% %zu / %zu, worst arena/C %.4f, %.1f s in all\n", solved,
           runs, within, runs, worst, total);
}

int main(int argc, char **argv)
{
    int full = 0, skip_random = 0;
    for (int i = 1; i < argc; i++) {
        full |= strcmp(argv[i], "--full") == 0;
        skip_random |= strcmp(argv[i], "--skip-random") == 0;
    }
    int zero_only = 0, mm_only = 0, balanced_only = 0;
    for (int i = 1; i < argc; i++) {
        zero_only |= strcmp(argv[i], "--zero-waste") == 0;
        balanced_only |= strcmp(argv[i], "--zero-waste-balanced") == 0;
        mm_only |= strcmp(argv[i], "--minimalloc") == 0;
    }
    if (balanced_only) {
        zero_waste_section(1);
        return 0;
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--threads") == 0) {
            threads_section();
            return 0;
        }
    if (!zero_only && !mm_only) {
        families_section(full, skip_random);
        threads_section();
    }
    if (!zero_only)
        minimalloc_section();
    if (!mm_only) {
        zero_waste_section(0);
        zero_waste_section(1);
    }
    return 0;
}
