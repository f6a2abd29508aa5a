/* Planner performance, in one run (`make bench`, or build/bench/bench_planner_perf [--full]
 * [--greedy] [--buckets]; --greedy stops after sections 1 and 2, --buckets runs section 8
 * alone):
 *  1. straightforward vs fast greedy at 1e3..1e5 tensors, local and long lifetimes
 *     (the straightforward one at 1e5 only with --full; otherwise extrapolated, marked "est")
 *  2. fast greedy at 1e6 local tensors
 *  3. the exact search on each MiniMalloc problem, capacity 1,048,576
 *  4. greedy vs portfolio vs exact on the G1 family and on a DNN-like family
 *  5. transitive reduction: dense vs blocked, and blocked at n = 300,000
 *  6. the portfolio's nine orders on one thread vs on every processor (same plan)
 *  7. the two greedy passes behind tp_plan_offsets, tree vs address-ordered scan, on
 *     lifetimes up to n/2 and n/32 nodes (same offsets)
 *  8. the tree vs the time buckets, and which one tp_plan_offsets takes */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "planner/planner_internal.h"
#include "support/offsets_simple.h"
#include "tensorplan/csv.h"
#include "tensorplan/planner.h"

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static size_t below(size_t n) { return (size_t)(next_u64() % n); }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* local: a tensor lives 1..8 steps around its position in the graph.
 * long: it lives up to 1,000 steps anywhere in n steps (at n = 1e3 everything overlaps). */
static void family(tp_tensor_lifetime *t, size_t n, int is_long, uint64_t seed)
{
    rng_state = seed;
    for (size_t i = 0; i < n; i++) {
        size_t first, last;
        if (is_long) {
            first = below(n);
            last = first + below(1000);
        } else {
            first = i / 4 + below(4);
            last = first + below(8);
        }
        t[i] = (tp_tensor_lifetime){ 1 + below(1u << 20), first, last };
    }
}

static void greedy_section(int full)
{
    printf("\n1. straightforward vs fast greedy (identical offsets; seconds)\n");
    printf("%-6s %8s %12s %12s %8s\n", "family", "n", "simple", "fast", "ratio");
    for (int is_long = 0; is_long < 2; is_long++) {
        double prev_simple = 0;
        for (size_t n = 1000; n <= 100000; n *= 10) {
            tp_tensor_lifetime *t = malloc(n * sizeof *t);
            size_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
            size_t arena_a = 0, arena_b = 0;
            family(t, n, is_long, 1000 + n);
            double t0 = now();
            if (tp_plan_offsets_fast(t, n, b, &arena_b) != TP_OK) {
                printf("fast greedy failed: %s\n", tp_last_error());
                exit(1);
            }
            double fast = now() - t0;
            double simple;
            int estimated = n == 100000 && !full;
            if (estimated) {
                simple = prev_simple * 100.0; /* O(n^2): 10x the tensors, 100x the time */
            } else {
                t0 = now();
                if (tp_plan_offsets_simple(t, n, a, &arena_a) != TP_OK) {
                    printf("simple greedy failed: %s\n", tp_last_error());
                    exit(1);
                }
                simple = now() - t0;
                if (arena_a != arena_b || memcmp(a, b, n * sizeof *a) != 0) {
                    printf("MISMATCH between the greedy implementations at n = %zu\n", n);
                    exit(1);
                }
            }
            prev_simple = simple;
            printf("%-6s %8zu %11.3f%s %12.3f %7.1fx\n", is_long ? "long" : "local", n, simple,
                   estimated ? "*" : " ", fast, simple / fast);
            free(t);
            free(a);
            free(b);
        }
    }
    printf("(* estimated from 1e4 by the quadratic cost of the scan; --full measures it)\n");

    const size_t n = 1000000;
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    size_t *b = malloc(n * sizeof *b), arena = 0, peak = 0;
    family(t, n, 0, 7);
    double t0 = now();
    tp_plan_offsets_fast(t, n, b, &arena);
    double fast = now() - t0;
    tp_peak_live_bytes(t, n, &peak);
    printf("\n2. fast greedy, 1e6 local tensors: %.3f s (arena/peak %.4f)\n", fast,
           (double)arena / (double)peak);
    free(t);
    free(b);
}

static void minimalloc_section(double limit)
{
    printf("\n3. exact search on the MiniMalloc problems, capacity 1,048,576 (limit %.0f s each)\n",
           limit);
    printf("%-4s %6s %9s %9s %9s %10s %9s %s\n", "file", "n", "peak", "greedy", "arena",
           "nodes", "seconds", "result");
    const char *names = "ABCDEFGHIJK";
    double total = 0;
    int fitted = 0;
    for (const char *p = names; *p; p++) {
        char path[512];
        snprintf(path, sizeof path, "%s/minimalloc/%c.1048576.csv", TP_TEST_DATA, *p);
        tp_csv_table table;
        if (tp_csv_read(path, 0, &table) != TP_OK) {
            printf("%c: %s\n", *p, tp_last_error());
            continue;
        }
        size_t *off = malloc(table.count * sizeof *off), arena = 0, greedy = 0, peak = 0;
        tp_plan_offsets(table.tensors, table.count, off, &greedy);
        tp_peak_live_bytes(table.tensors, table.count, &peak);
        tp_plan_options o;
        tp_plan_options_init(&o);
        o.strategy = TP_PLAN_EXACT;
        o.capacity = 1048576;
        o.time_limit_seconds = limit;
        tp_plan_report rep;
        tp_status st = tp_plan_offsets_ex(table.tensors, table.count, &o, off, &arena, &rep);
        total += rep.seconds;
        fitted += st == TP_OK;
        printf("%-4c %6zu %9zu %9zu %9zu %10llu %9.3f %s\n", *p, table.count, peak, greedy, arena,
               rep.nodes_explored, rep.seconds,
               st == TP_OK ? "fits"
                           : (rep.proven_infeasible ? "proven infeasible" : "not found (limit)"));
        free(off);
        tp_csv_free(&table);
    }
    printf("fits: %d of 11, total %.2f s\n", fitted, total);
}

/* The G1 generator of planner.md section 3. */
static size_t g1_instance(uint64_t seed, tp_tensor_lifetime *t)
{
    rng_state = (seed * 0x9E3779B97F4A7C15ULL) | 1;
    size_t n = 1 + below(40);
    for (size_t i = 0; i < n; i++) {
        size_t first = below(24);
        size_t size = below(10) == 0 ? 0 : 1 + below(1024);
        size_t last = first + below(8);
        t[i] = (tp_tensor_lifetime){ size, first, last };
    }
    return n;
}

/* A training-like graph: L layers forward then backward; each forward activation is kept
 * until its backward step, gradients and workspaces live a step or two, a residual stream
 * spans two layers. Sizes come from a few shapes, as in real networks. */
static size_t dnn_instance(uint64_t seed, tp_tensor_lifetime *t)
{
    rng_state = seed * 7919 + 1;
    const size_t layers = 8 + below(24);
    const size_t shapes[] = { 64 << 10, 256 << 10, 1 << 20, 3 << 20, 4 << 20 };
    size_t n = 0;
    for (size_t l = 0; l < layers; l++) {
        const size_t act = shapes[below(5)];
        const size_t back = 2 * layers - l; /* the backward step of layer l */
        t[n++] = (tp_tensor_lifetime){ act, l, back };                   /* saved activation */
        t[n++] = (tp_tensor_lifetime){ shapes[below(5)] / 2, l, l };     /* workspace */
        if (l % 2 == 0)
            t[n++] = (tp_tensor_lifetime){ act, l, l + 2 };              /* residual */
        t[n++] = (tp_tensor_lifetime){ act, back, back + 1 };            /* gradient */
        t[n++] = (tp_tensor_lifetime){ shapes[below(5)] / 4, back, back }; /* bwd workspace */
    }
    return n;
}

static void family_section(const char *name, size_t (*gen)(uint64_t, tp_tensor_lifetime *),
                           size_t cap, size_t count)
{
    tp_tensor_lifetime *t = malloc(cap * sizeof *t);
    size_t *off = malloc(cap * sizeof *off);
    const char *labels[] = { "greedy", "portfolio", "exact" };
    for (int s = 0; s < 3; s++) {
        double sum = 0, worst = 0, secs = 0;
        size_t used = 0, at_peak = 0, proven = 0;
        for (uint64_t seed = 0; seed < count; seed++) {
            size_t n = gen(seed, t), peak = 0, arena = 0;
            tp_peak_live_bytes(t, n, &peak);
            if (peak == 0)
                continue;
            tp_plan_options o;
            tp_plan_options_init(&o);
            o.strategy = (tp_plan_strategy)s;
            o.time_limit_seconds = s == 2 ? 1.0 : 0;
            tp_plan_report rep;
            tp_plan_offsets_ex(t, n, &o, off, &arena, &rep);
            double q = (double)arena / (double)peak;
            sum += q;
            worst = q > worst ? q : worst;
            at_peak += arena == peak;
            proven += rep.proven_optimal;
            secs += rep.seconds;
            used++;
        }
        printf("%-5s %-9s %4zu instances: arena/peak mean %.4f worst %.4f; arena == peak %zu; "
               "proven optimal %zu; %.3f s\n",
               name, labels[s], used, sum / (double)used, worst, at_peak, proven, secs);
    }
    free(t);
    free(off);
}

static void reduction_section(void)
{
    printf("\n5. transitive reduction (seconds)\n");
    const size_t sizes[] = { 20000, 300000 };
    for (int k = 0; k < 2; k++) {
        const size_t n = sizes[k], m = 4 * n;
        tp_edge *e = malloc(m * sizeof *e), *out = malloc(m * sizeof *out);
        rng_state = 99 + n;
        for (size_t i = 0; i < m; i++) {
            size_t u = below(n - 1);
            size_t room = n - 1 - u;
            size_t span = below(16) == 0 ? 1 + below(room) : 1 + below(room < 32 ? room : 32);
            e[i] = (tp_edge){ u, u + span };
        }
        size_t kept = 0, kept2 = 0;
        double dense = -1;
        if (n <= 20000) {
            double t0 = now();
            tp_transitive_reduction_dense(n, e, m, out, &kept2);
            dense = now() - t0;
        }
        double t0 = now();
        tp_reduction_stats rs;
        tp_status st = tp_transitive_reduction_stats(n, e, m, out, &kept,
                                                     TP_REDUCTION_DEFAULT_BUDGET, &rs);
        double blocked = now() - t0;
        const size_t words = n / 64 + 1, block_words = rs.columns / 64;
        if (st != TP_OK)
            printf("n = %zu: %s\n", n, tp_last_error());
        else {
            char dense_text[64];
            if (dense >= 0)
                snprintf(dense_text, sizeof dense_text, "%.3f s", dense);
            else
                snprintf(dense_text, sizeof dense_text, "not run");
            printf("n = %6zu, %zu edges: dense %s (%zu MiB); blocked %.3f s, %zu live rows, "
                   "%zu column block(s) of %zu, %zu MiB of rows; kept %zu%s\n",
                   n, m, dense_text, (n * words * 8) >> 20, blocked, rs.live_rows, rs.passes,
                   rs.columns, (rs.live_rows * block_words * 8) >> 20, kept,
                   dense < 0 || kept == kept2 ? "" : " MISMATCH");
        }
        free(e);
        free(out);
    }
}

/* Lifetimes of up to n / div nodes anywhere in n nodes, sizes 64 B .. 64 KiB in steps of 64:
 * bench_planner_baseline's "long" family at div = 2 (about n / 8 tensors live at once). */
static void wide_family(tp_tensor_lifetime *t, size_t n, size_t div, uint64_t seed)
{
    rng_state = seed;
    for (size_t i = 0; i < n; i++) {
        const size_t first = below(n), len = below(n / div);
        t[i] = (tp_tensor_lifetime){ 64 * (1 + below(1024)), first,
                                     first + len < n ? first + len : n - 1 };
    }
}


/* Lifetimes shorter than 64 nodes, about one tensor starting per node: the shape of the
 * 1e6-row CSV problem of bench/gen_csv.py "short". With few > 0, one tensor in `few` lives
 * over n / 4 nodes instead. */
static void short_family(tp_tensor_lifetime *t, size_t n, size_t few, uint64_t seed)
{
    rng_state = seed;
    for (size_t i = 0; i < n; i++) {
        const size_t len = few > 0 && below(few) == 0 ? below(n / 4) : below(64);
        t[i] = (tp_tensor_lifetime){ 1 + below(1u << 20), i, i + len };
    }
}

/* 8. The two passes behind tp_plan_offsets when the scan does not pay: interval tree vs time
 * buckets (with the shape they would take: bucket width 2^shift leaves, lifetimes of at least
 * "long" leaves in the long list), and which one tp_greedy_place takes (its estimate). */
static void bucket_section(void)
{
    printf("\n8. greedy passes: interval tree vs time buckets (identical offsets; seconds; "
           "\"takes\": the pass tp_greedy_place chooses)\n");
    printf("  %-14s %8s %9s %9s %8s %6s %6s %8s %15s %15s\n", "lifetimes", "n", "tree",
           "buckets", "tree/bk", "shift", "long", "takes", "tree us/t est", "buckets est");
    static const struct {
        const char *name;
        int kind; /* 0 local, 1 long (up to 1,000), 2 short (< 64), 3 short + 1/1000 long,
                     4 wide n/32 */
        size_t n;
    } runs[] = { { "local", 0, 100000 },      { "local", 0, 1000000 },
                 { "short <64", 2, 1000000 }, { "short+long", 3, 1000000 },
                 { "long <1000", 1, 100000 }, { "wide n/32", 4, 30000 } };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const size_t n = runs[r].n;
        tp_tensor_lifetime *t = malloc(n * sizeof *t);
        size_t *order = malloc(n * sizeof *order), *a = malloc(n * sizeof *a);
        size_t *b = malloc(n * sizeof *b), *lo = malloc(n * sizeof *lo);
        size_t *hi = malloc(n * sizeof *hi);
        tp_order_key *keys = malloc(n * sizeof *keys);
        if (t == NULL || order == NULL || a == NULL || b == NULL || lo == NULL || hi == NULL ||
            keys == NULL) {
            fprintf(stderr, "bench_planner_perf: out of memory\n");
            exit(1);
        }
        switch (runs[r].kind) {
        case 0: family(t, n, 0, 70 + r); break;
        case 1: family(t, n, 1, 70 + r); break;
        case 2: short_family(t, n, 0, 70 + r); break;
        case 3: short_family(t, n, 1000, 70 + r); break;
        default: wide_family(t, n, 32, 70 + r); break;
        }
        if (tp_greedy_order(t, n, TP_ORDER_SIZE, keys, order) != n)
            exit(1); /* every size is at least 1 */
        tp_leaf_ranks ranks = { lo, hi, 0 };
        tp_bucket_shape shape;
        tp_pass_estimate est;
        size_t arena_a = 0, arena_b = 0;
        if (tp_lifetime_ranks(t, order, n, lo, hi, &ranks.n_leaves) != TP_OK ||
            tp_buckets_pay_off(t, order, n, &ranks, &shape, &est) != TP_OK)
            exit(1);
        double t0 = now();
        if (tp_tree_place(t, n, order, n, 1, TP_GAP_BEST_FIT, NULL, a, &arena_a) != TP_OK)
            exit(1);
        const double tree = now() - t0;
        t0 = now();
        if (tp_bucket_place(t, n, order, n, &ranks, &shape, 1, TP_GAP_BEST_FIT, NULL, b,
                            &arena_b) != TP_OK)
            exit(1);
        const double bk = now() - t0;
        if (arena_a != arena_b || memcmp(a, b, n * sizeof *a) != 0) {
            fprintf(stderr, "bench_planner_perf: tree and buckets disagree (%s)\n",
                    runs[r].name);
            exit(1);
        }
        char long_from[24] = "-";
        if (shape.long_from != SIZE_MAX)
            snprintf(long_from, sizeof long_from, "%zu", shape.long_from);
        printf("  %-14s %8zu %9.3f %9.3f %7.2fx %6u %6s %8s %7.2f %7.2f %7.2f %7.2f\n",
               runs[r].name, n, tree, bk, tree / bk, shape.shift, long_from,
               est.buckets ? "buckets" : "tree",
               est.tree_us, 1e6 * tree / (double)n, est.bucket_us, 1e6 * bk / (double)n);
        free(t);
        free(order);
        free(a);
        free(b);
        free(lo);
        free(hi);
        free(keys);
    }
}

static void scan_section(void)
{
    printf("\n7. greedy passes: interval tree vs address-ordered scan (identical offsets; "
           "seconds; AVX-512: %s)\n",
           tp_scan_level() == 2 ? "yes" : "no");
    printf("  %-9s %8s %9s %9s %9s %8s %8s %9s\n", "lifetimes", "n", "tree", "scan 1T", "scan",
           "tree/1T", "tree/all", "AVX2");
    static const struct {
        size_t div, n;
    } runs[] = { { 2, 10000 }, { 2, 30000 }, { 2, 100000 }, { 32, 30000 }, { 32, 100000 } };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const size_t n = runs[r].n;
        tp_tensor_lifetime *t = malloc(n * sizeof *t);
        size_t *order = malloc(n * sizeof *order), *a = malloc(n * sizeof *a);
        size_t *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
        if (t == NULL || order == NULL || a == NULL || b == NULL || c == NULL) {
            fprintf(stderr, "bench_planner_perf: out of memory\n");
            exit(1);
        }
        wide_family(t, n, runs[r].div, 1000 + n);
        tp_order_key *keys = malloc(n * sizeof *keys);
        if (keys == NULL || tp_greedy_order(t, n, TP_ORDER_SIZE, keys, order) != n)
            exit(1); /* every size is at least 64 */
        free(keys);
        size_t arena_a = 0, arena_b = 0, arena_c = 0;
        int declined = 0;
        double t0 = now();
        if (tp_tree_place(t, n, order, n, 1, TP_GAP_BEST_FIT, NULL, a, &arena_a) != TP_OK)
            exit(1);
        const double tree = now() - t0;
        t0 = now();
        if (tp_scan_place(t, n, order, n, 1, TP_GAP_BEST_FIT, NULL, 1, TP_SCAN_AUTO, b, &arena_b,
                          &declined) != TP_OK || declined)
            exit(1);
        const double one = now() - t0;
        t0 = now();
        if (tp_scan_place(t, n, order, n, 1, TP_GAP_BEST_FIT, NULL, 0, TP_SCAN_AUTO, c, &arena_c,
                          &declined) != TP_OK || declined)
            exit(1);
        const double all = now() - t0;
        if (arena_a != arena_b || arena_a != arena_c || memcmp(a, b, n * sizeof *a) != 0 ||
            memcmp(a, c, n * sizeof *a) != 0) {
            fprintf(stderr, "bench_planner_perf: tree and scan disagree at n = %zu\n", n);
            exit(1);
        }
        double avx2 = -1; /* the AVX2 form, where the processor has AVX2 */
        if (tp_scan_level() >= 1) {
            t0 = now();
            if (tp_scan_place(t, n, order, n, 1, TP_GAP_BEST_FIT, NULL, 0, TP_SCAN_AVX2, c,
                              &arena_c, &declined) != TP_OK || declined)
                exit(1);
            avx2 = now() - t0;
        }
        if (arena_a != arena_c || memcmp(a, c, n * sizeof *a) != 0) {
            fprintf(stderr, "bench_planner_perf: tree and scan disagree at n = %zu\n", n);
            exit(1);
        }
        char label[16];
        snprintf(label, sizeof label, "<= n/%zu", runs[r].div);
        printf("  %-9s %8zu %9.3f %9.3f %9.3f %7.2fx %7.2fx %9.3f\n", label, n, tree, one, all,
               tree / one, tree / all, avx2);
        free(t);
        free(order);
        free(a);
        free(b);
        free(c);
    }
    printf("  (scan: one thread, then tp_scan_default_threads, then its AVX2 form on as many; "
           "offsets identical, checked)\n");
}

static void portfolio_threads_section(void)
{
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("\n6. portfolio (9 greedy orders): one thread vs tp_plan_offsets_ex (%ld processors "
           "online)\n",
           cpus);
    printf("  %-9s %8s %10s %10s %7s\n", "lifetimes", "n", "1 thread", "all", "ratio");
    static const struct {
        int is_long;
        size_t n;
    } runs[] = { { 0, 100000 }, { 1, 30000 } };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const size_t n = runs[r].n;
        tp_tensor_lifetime *t = malloc(n * sizeof *t);
        size_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), arena_a = 0, arena_b = 0;
        if (t == NULL || a == NULL || b == NULL) {
            fprintf(stderr, "bench_planner_perf: out of memory\n");
            exit(1);
        }
        family(t, n, runs[r].is_long, 11 + r);
        double t0 = now();
        if (tp_plan_portfolio_threads(t, n, 1, 1, a, &arena_a, NULL) != TP_OK)
            exit(1);
        const double one = now() - t0;
        tp_plan_options o;
        tp_plan_options_init(&o);
        o.strategy = TP_PLAN_PORTFOLIO;
        t0 = now();
        if (tp_plan_offsets_ex(t, n, &o, b, &arena_b, NULL) != TP_OK)
            exit(1);
        const double all = now() - t0;
        if (arena_a != arena_b || memcmp(a, b, n * sizeof *a) != 0) {
            fprintf(stderr, "bench_planner_perf: the portfolio's plan depends on threads\n");
            exit(1);
        }
        printf("  %-9s %8zu %9.3fs %9.3fs %6.2fx\n", runs[r].is_long ? "long" : "local", n, one,
               all, one / all);
        free(t);
        free(a);
        free(b);
    }
    printf("  (plans identical, checked)\n");
}

int main(int argc, char **argv)
{
    int full = 0, greedy_only = 0, buckets_only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--full") == 0) {
            full = 1;
        } else if (strcmp(argv[i], "--greedy") == 0) {
            greedy_only = 1;
        } else if (strcmp(argv[i], "--buckets") == 0) {
            buckets_only = 1;
        } else {
            printf("usage: %s [--full] [--greedy] [--buckets]\n"
                   "  --full     also run the straightforward greedy at 1e5 (minutes)\n"
                   "  --greedy   only sections 1 and 2 (the two greedy implementations)\n"
                   "  --buckets  only section 8 (interval tree vs time buckets)\n",
                   argv[0]);
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    printf("bench_planner_perf%s%s%s\n", full ? " --full" : "", greedy_only ? " --greedy" : "",
           buckets_only ? " --buckets" : "");
    if (buckets_only) {
        bucket_section();
        return 0;
    }
    greedy_section(full);
    if (greedy_only)
        return 0;
    minimalloc_section(60);
    printf("\n4. greedy vs portfolio vs exact (1 s limit per instance)\n");
    family_section("G1", g1_instance, 40, 500);
    family_section("DNN", dnn_instance, 200, 200);
    reduction_section();
    portfolio_threads_section();
    scan_section();
    bucket_section();
    return 0;
}
