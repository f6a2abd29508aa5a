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

/* How many placements ahead the bucket lists are loaded (their heads twice as far). */
#define BK_AHEAD 2

/* One bucket: where its entries start, how many are placed, and the lowest bucket holding a
 * tensor that lasts into it. Kept together so that a query's consecutive buckets share cache
 * lines. Every field is below 2^32: the pass declines 2^32 - 1 tensors or leaves. */
typedef struct bk_head {
    uint32_t base, fill, reach, unused;
} bk_head;

/* Whether tensor k is kept in the list of long lifetimes instead of a bucket. */
static int bk_is_long(const tp_leaf_ranks *r, size_t k, size_t long_from)
{
    return r->hi[k] - r->lo[k] + 1 >= long_from;
}

/* reach[b] = min(b, the first bucket of every bucketed tensor whose last bucket is b or
 * later), for buckets of 2^shift leaves. */
static void bk_reach(const tp_leaf_ranks *r, size_t n, const tp_bucket_shape *shape,
                     size_t n_buckets, size_t *reach)
{
    for (size_t b = 0; b < n_buckets; b++)
        reach[b] = b;
    for (size_t k = 0; k < n; k++) {
        if (bk_is_long(r, k, shape->long_from))
            continue;
        const size_t fb = r->lo[k] >> shape->shift, lb = r->hi[k] >> shape->shift;
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

/* count_below[b] = the bucketed tensors whose first leaf lies below bucket b, for b up to
 * n_buckets; returns the number of long lifetimes. */
static size_t bk_count_below(const tp_leaf_ranks *r, size_t n, const tp_bucket_shape *shape,
                             size_t n_buckets, size_t *count_below)
{
    memset(count_below, 0, (n_buckets + 1) * sizeof *count_below);
    size_t n_long = 0;
    for (size_t k = 0; k < n; k++) {
        if (bk_is_long(r, k, shape->long_from))
            n_long++;
        else
            count_below[(r->lo[k] >> shape->shift) + 1]++;
    }
    for (size_t b = 0; b < n_buckets; b++)
        count_below[b + 1] += count_below[b];
    return n_long;
}

/* Estimated microseconds per placement for a shape. With half of every tensor's conflicts
 * placed when it comes (the order is unrelated to time): a fixed cost, the entries read (half
 * of those stored in the scanned buckets, and half the long list), the buckets visited, and
 * the conflicts kept times the rounds of merging their runs (about one run per bucket, one
 * for the long list). Fitted to measurements (2 cores, one thread; 1e5 to 1e6 tensors,
 * lifetimes from under 8 to 1,000 leaves, shifts 3 to 8): 0.26 us + 2 ns per entry read +
 * 65 ns per bucket + 7 ns per kept conflict and merge round. reach and count_below are
 * scratch of n_leaves + 1 and n_leaves + 2 entries. */
static double bk_cost(const tp_leaf_ranks *r, size_t n, const tp_bucket_shape *shape,
                      const size_t *conflicts, size_t *reach, size_t *count_below)
{
    const unsigned shift = shape->shift;
    const size_t n_buckets = bk_count(r, shift);
    bk_reach(r, n, shape, n_buckets, reach);
    const size_t n_long = bk_count_below(r, n, shape, n_buckets, count_below);
    /* the sums over every 1 in `step` tensors (a deterministic sample), scaled up */
    const size_t step = n > 65536 ? n / 65536 : 1;
    double entries = 0, buckets = 0, merging = 0, sampled = 0;
    for (size_t k = 0; k < n; k += step) {
        sampled++;
        const size_t b0 = reach[r->lo[k] >> shift], b1 = r->hi[k] >> shift;
        entries += (double)(count_below[b1 + 1] - count_below[b0]);
        buckets += (double)(b1 - b0 + 1);
        const size_t runs = b1 - b0 + 1 + (n_long > 0);
        unsigned rounds = 0;
        while (((size_t)1 << rounds) < runs)
            rounds++;
        merging += (double)conflicts[k] * rounds;
    }
    entries += sampled * (double)n_long;
    return 0.26 + (0.5 * entries * 2e-3 + buckets * 65e-3 + 0.5 * merging * 7e-3) / sampled;
}

/* The cheaper of two shapes at one width: every lifetime in the buckets, or those of at least
 * eight buckets' length in the long list (only worth a look when there are such lifetimes). */
static double bk_best_at(const tp_leaf_ranks *r, size_t n, unsigned s, size_t longest,
                         const size_t *conflicts, size_t *reach, size_t *below,
                         tp_bucket_shape *shape)
{
    const tp_bucket_shape all = { s, SIZE_MAX }, split = { s, (size_t)8 << s };
    const double us_all = bk_cost(r, n, &all, conflicts, reach, below);
    if (split.long_from > longest) {
        *shape = all;
        return us_all;
    }
    const double us_split = bk_cost(r, n, &split, conflicts, reach, below);
    *shape = us_split < us_all ? split : all;
    return us_split < us_all ? us_split : us_all;
}

/* The floor of log2 of the median lifetime length, in leaves, and the longest length. */
static unsigned bk_median_level(const tp_leaf_ranks *r, size_t n, size_t *longest)
{
    size_t count[64] = { 0 };
    *longest = 0;
    for (size_t k = 0; k < n; k++) {
        const size_t len = r->hi[k] - r->lo[k] + 1;
        unsigned level = 0;
        while (level < 63 && ((size_t)2 << level) <= len)
            level++;
        count[level]++;
        if (len > *longest)
            *longest = len;
    }
    unsigned level = 0;
    size_t seen = count[0];
    while (seen < (n + 1) / 2)
        seen += count[++level];
    return level;
}

tp_status tp_bucket_choose(const tp_leaf_ranks *r, size_t n, tp_bucket_shape *shape,
                           double *us_per_placement)
{
    *shape = (tp_bucket_shape){ 0, SIZE_MAX };
    *us_per_placement = -1;
    if (n == 0 || n >= UINT32_MAX || r->n_leaves >= UINT32_MAX)
        return TP_OK;
    size_t longest = 0;
    const unsigned s0 = bk_median_level(r, n, &longest);
    size_t *reach = malloc((r->n_leaves + 1) * sizeof *reach);
    size_t *below = malloc((r->n_leaves + 2) * sizeof *below);
    size_t *conflicts = malloc(n * sizeof *conflicts);
    tp_status st = TP_OK;
    if (reach == NULL || below == NULL || conflicts == NULL)
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", n);
    if (st == TP_OK)
        st = bk_conflicts(r, n, conflicts);
    /* from a little below the median lifetime upward, while wider buckets cost less */
    for (unsigned s = s0 > 0 ? s0 - 1 : 0; st == TP_OK && s <= s0 + 6 && s < 32; s++) {
        tp_bucket_shape here;
        const double us = bk_best_at(r, n, s, longest, conflicts, reach, below, &here);
        if (*us_per_placement >= 0 && us >= *us_per_placement)
            break;
        *us_per_placement = us;
        *shape = here;
    }
    free(reach);
    free(below);
    free(conflicts);
    return st;
}

/* The bucket heads of a pass (fill 0), the most runs a query gathers and the long lifetimes. */
static tp_status bk_heads(const tp_leaf_ranks *r, size_t n, const tp_bucket_shape *shape,
                          bk_head **out, size_t *max_runs, size_t *n_long)
{
    const unsigned shift = shape->shift;
    const size_t n_buckets = bk_count(r, shift);
    size_t *reach = malloc(n_buckets * sizeof *reach);
    size_t *below = malloc((n_buckets + 1) * sizeof *below);
    bk_head *h = calloc(n_buckets + 1, sizeof *h);
    *out = h;
    if (reach == NULL || below == NULL || h == NULL) {
        free(reach);
        free(below);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the time buckets", n);
    }
    bk_reach(r, n, shape, n_buckets, reach);
    *n_long = bk_count_below(r, n, shape, n_buckets, below);
    for (size_t b = 0; b < n_buckets; b++) {
        h[b].base = (uint32_t)below[b];
        h[b].reach = (uint32_t)reach[b];
    }
    *max_runs = 0;
    for (size_t k = 0; k < n; k++) {
        const size_t span = (r->hi[k] >> shift) - reach[r->lo[k] >> shift] + 1;
        if (span > *max_runs)
            *max_runs = span;
    }
    *max_runs += 1; /* the long list */
    free(reach);
    free(below);
    return TP_OK;
}

/* Starts loading what the query of order[k] reads first: its tensor and its bucket heads. */
static void bk_prefetch_heads(const tp_tensor_lifetime *tensors, const size_t *order,
                              const tp_leaf_ranks *r, const bk_head *h, unsigned shift, size_t k)
{
    TP_PREFETCH(&tensors[order[k]]);
    TP_PREFETCH(&h[r->lo[k] >> shift]);
    TP_PREFETCH(&h[r->hi[k] >> shift]);
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
                          size_t n_order, const tp_leaf_ranks *ranks,
                          const tp_bucket_shape *shape,
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
    tp_status st = bk_place_32(tensors, order, n_order, ranks, shape, align, rule, ticker,
                               offsets, arena_size, &too_wide);
    if (st == TP_OK && too_wide)
        st = bk_place_64(tensors, order, n_order, ranks, shape, align, rule, ticker, offsets,
                         arena_size, &too_wide);
    if (st != TP_OK)
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
    return st;
}
