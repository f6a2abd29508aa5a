/* The greedy of docs/planner.md ("Semantics") for lifetimes that are short next to the run.
 *
 * Time is cut into buckets of 2^shift leaves (the ranks of tp_lifetime_ranks), and a placed
 * tensor is kept in the bucket of its first leaf, in a list sorted by address. A tensor whose
 * leaves are [lo, hi] can only conflict with tensors stored in the buckets from reach[lo's
 * bucket] (the lowest bucket holding a tensor that lasts into lo's bucket) to hi's bucket.
 * Those are scanned, the ones whose leaves intersect [lo, hi] are kept (each bucket's survivors
 * stay in address order), the runs are merged, and one sweep over the merged blocks finds the
 * gaps of their union: the same candidates, in the same order, as the straightforward pass,
 * hence the same offsets. With short lifetimes a query reads a few small, contiguous lists
 * instead of the ~20 sets scattered over a tree of several times the memory; the cost grows
 * with the tensors stored in the scanned buckets, which tp_bucket_choose estimates before
 * anything is built. */
#include "planner/planner_internal.h"

#include "common/clock.h"
#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* How many placements ahead the bucket lists are loaded (their heads twice as far). */
#define BK_AHEAD 2

/* One bucket: where its entries start, how many are placed, and the lowest bucket holding a
 * tensor that lasts into it. Kept together so that a query's consecutive buckets share cache
 * lines. Every field is below 2^32: the pass declines 2^32 - 1 tensors or leaves. */
typedef struct bk_head {
    uint32_t base, fill, reach, unused;
} bk_head;

/* reach[b] = min(b, the first bucket of every tensor whose last bucket is b or later), for
 * buckets of 2^shift leaves. */
static void bk_reach(const tp_leaf_ranks *r, size_t n, unsigned shift, size_t n_buckets,
                     size_t *reach)
{
    for (size_t b = 0; b < n_buckets; b++)
        reach[b] = b;
    for (size_t k = 0; k < n; k++) {
        const size_t fb = r->lo[k] >> shift, lb = r->hi[k] >> shift;
        if (fb < reach[lb])
            reach[lb] = fb;
    }
    for (size_t b = n_buckets - 1; b-- > 0;)
        if (reach[b + 1] < reach[b])
            reach[b] = reach[b + 1];
}

static size_t bk_count(const tp_leaf_ranks *r, unsigned shift)
{
    return ((r->n_leaves - 1) >> shift) + 1;
}

/* conflicts[k] = the tensors whose leaves meet those of tensor k (itself included): those
 * starting at or before its last leaf less those ending before its first. */
static tp_status bk_conflicts(const tp_leaf_ranks *r, size_t n, size_t *conflicts)
{
    const size_t m = r->n_leaves;
    size_t *start_le = calloc(m + 1, sizeof *start_le), *end_lt = calloc(m + 1, sizeof *end_lt);
    if (start_le == NULL || end_lt == NULL) {
        free(start_le);
        free(end_lt);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", n);
    }
    for (size_t k = 0; k < n; k++) {
        start_le[r->lo[k]]++;
        end_lt[r->hi[k] + 1]++;
    }
    for (size_t x = 1; x <= m; x++) {
        start_le[x] += start_le[x - 1];
        end_lt[x] += end_lt[x - 1];
    }
    for (size_t k = 0; k < n; k++)
        conflicts[k] = start_le[r->hi[k]] - end_lt[r->lo[k]];
    free(start_le);
    free(end_lt);
    return TP_OK;
}

/* Estimated microseconds per placement with buckets of 2^shift leaves. With half of every
 * tensor's conflicts placed when it comes (the order is unrelated to time): a fixed cost, the
 * entries read (half of those stored in the scanned buckets), the buckets visited, and the
 * conflicts kept times the rounds of merging their runs (about one run per bucket). Fitted to
 * measurements (2 cores, one thread; 1e5 to 1e6 tensors, lifetimes from under 8 to 1,000
 * leaves, shifts 3 to 8): 0.26 us + 2 ns per entry read + 65 ns per bucket + 7 ns per kept
 * conflict and merge round. count_below[b] = the tensors whose first leaf lies below bucket b. */
static double bk_cost(const tp_leaf_ranks *r, size_t n, unsigned shift, const size_t *conflicts,
                      size_t *reach, size_t *count_below)
{
    const size_t n_buckets = bk_count(r, shift);
    bk_reach(r, n, shift, n_buckets, reach);
    memset(count_below, 0, (n_buckets + 1) * sizeof *count_below);
    for (size_t k = 0; k < n; k++)
        count_below[(r->lo[k] >> shift) + 1]++;
    for (size_t b = 0; b < n_buckets; b++)
        count_below[b + 1] += count_below[b];
    double entries = 0, buckets = 0, merging = 0;
    for (size_t k = 0; k < n; k++) {
        const size_t b0 = reach[r->lo[k] >> shift], b1 = r->hi[k] >> shift;
        entries += (double)(count_below[b1 + 1] - count_below[b0]);
        buckets += (double)(b1 - b0 + 1);
        unsigned rounds = 0;
        while (((size_t)1 << rounds) < b1 - b0 + 1)
            rounds++;
        merging += (double)conflicts[k] * rounds;
    }
    return 0.26 + (0.5 * entries * 2e-3 + buckets * 65e-3 + 0.5 * merging * 7e-3) / (double)n;
}

tp_status tp_bucket_choose(const tp_leaf_ranks *r, size_t n, unsigned *shift,
                           double *us_per_placement)
{
    *shift = 0;
    *us_per_placement = -1;
    if (n == 0 || n >= UINT32_MAX || r->n_leaves >= UINT32_MAX)
        return TP_OK;
    double mean = 0;
    for (size_t k = 0; k < n; k++)
        mean += (double)(r->hi[k] - r->lo[k] + 1);
    mean /= (double)n;
    unsigned s0 = 0; /* about the mean lifetime */
    while (s0 < 30 && (double)((size_t)2 << s0) <= mean)
        s0++;
    size_t *reach = malloc((r->n_leaves + 1) * sizeof *reach);
    size_t *below = malloc((r->n_leaves + 2) * sizeof *below);
    size_t *conflicts = malloc(n * sizeof *conflicts);
    tp_status st = TP_OK;
    if (reach == NULL || below == NULL || conflicts == NULL)
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", n);
    if (st == TP_OK)
        st = bk_conflicts(r, n, conflicts);
    /* from a little below the mean lifetime upward, while wider buckets cost less */
    for (unsigned s = s0 > 0 ? s0 - 1 : 0; st == TP_OK && s <= s0 + 6 && s < 32; s++) {
        const double us = bk_cost(r, n, s, conflicts, reach, below);
        if (*us_per_placement >= 0 && us >= *us_per_placement)
            break;
        *us_per_placement = us;
        *shift = s;
    }
    free(reach);
    free(below);
    free(conflicts);
    return st;
}

/* The bucket heads of a pass (fill 0) and the most buckets a query visits. */
static tp_status bk_heads(const tp_leaf_ranks *r, size_t n, unsigned shift, bk_head **out,
                          size_t *max_runs)
{
    const size_t n_buckets = bk_count(r, shift);
    size_t *reach = malloc(n_buckets * sizeof *reach);
    bk_head *h = calloc(n_buckets + 1, sizeof *h);
    *out = h;
    if (reach == NULL || h == NULL) {
        free(reach);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the time buckets", n);
    }
    bk_reach(r, n, shift, n_buckets, reach);
    for (size_t k = 0; k < n; k++)
        h[(r->lo[k] >> shift) + 1].base++;
    for (size_t b = 0; b < n_buckets; b++) {
        h[b + 1].base += h[b].base;
        h[b].reach = (uint32_t)reach[b];
    }
    *max_runs = 0;
    for (size_t k = 0; k < n; k++) {
        const size_t span = (r->hi[k] >> shift) - reach[r->lo[k] >> shift] + 1;
        if (span > *max_runs)
            *max_runs = span;
    }
    free(reach);
    return TP_OK;
}

/* Starts loading what the query of order[k] reads first: its tensor and its bucket heads. */
static void bk_prefetch_heads(const tp_tensor_lifetime *tensors, const size_t *order,
                              const tp_leaf_ranks *r, const bk_head *h, unsigned shift, size_t k)
{
    PREFETCH(&tensors[order[k]]);
    PREFETCH(&h[r->lo[k] >> shift]);
    PREFETCH(&h[r->hi[k] >> shift]);
}

/* Everything that holds addresses is compiled twice: with 32-bit addresses, tried first (the
 * lists take two thirds of the memory, and the pass is bound by loading them), and with size_t
 * ones, when a block would end at or above 2^32 - 1. Both apply the same rule, so the offsets
 * are the same either way. */
#define BK_WIDTH 32
#define POS uint32_t
#define POS_MAX UINT32_MAX
#define W(name) name##_32
#include "planner/greedy_buckets_generic.h"
#undef POS
#undef POS_MAX
#undef W
#undef BK_WIDTH
#define BK_WIDTH 64
#define POS size_t
#define POS_MAX SIZE_MAX
#define W(name) name##_64
#include "planner/greedy_buckets_generic.h"
#undef POS
#undef POS_MAX
#undef W
#undef BK_WIDTH

tp_status tp_bucket_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                          size_t n_order, const tp_leaf_ranks *ranks, unsigned shift,
                          size_t alignment, tp_gap_rule rule, const tp_greedy_ticker *ticker,
                          size_t *offsets, size_t *arena_size)
{
    for (size_t i = 0; i < count; i++)
        offsets[i] = 0;
    *arena_size = 0;
    if (n_order == 0)
        return TP_OK;
    if (n_order >= UINT32_MAX || ranks->n_leaves >= UINT32_MAX)
        return tp_fail(TP_ERR_INVALID, "%zu tensors: too many for the time buckets", n_order);
    const size_t align = alignment == 0 ? 1 : alignment;
    int too_wide = 0;
    tp_status st = bk_place_32(tensors, order, n_order, ranks, shift, align, rule, ticker,
                               offsets, arena_size, &too_wide);
    if (st == TP_OK && too_wide)
        st = bk_place_64(tensors, order, n_order, ranks, shift, align, rule, ticker, offsets,
                         arena_size, &too_wide);
    if (st != TP_OK)
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
    return st;
}
