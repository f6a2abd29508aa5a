/* The greedy of docs/planner.md ("Semantics") without the scan over every placed tensor.
 *
 * Which placed tensors conflict with a new one depends only on time, and what the rule needs
 * from them is only the union of their address ranges (the coalesced blocks and the gaps
 * between them). So placed tensors go into a segment tree over time, and every tree node keeps
 * two coalesced sets of address blocks: `own`, the tensors whose canonical decomposition
 * contains the node, and `sub`, the union of `own` over the node's subtree. A tensor
 * conflicts with a query exactly when it is stored at an ancestor of one of the query's
 * canonical nodes or inside the subtree of one, so the union of the query's conflicts is the
 * union of O(log T) coalesced sets.
 *
 * The union itself is never built. The rule only needs its gaps that are at least `size`
 * long (and where the union ends), and a gap of a union lies inside a gap of every one of
 * its sets. So a query starts from the free ranges >= size of the set covering the most bytes
 * (plus the unbounded range above it) and cuts each other set out of them, dropping whatever
 * becomes shorter than size (later sets only shrink it further). The survivors are exactly
 * the gaps of the union that are >= size, in address order, and the unbounded range, which
 * starts where the union ends: the same candidates as the straightforward scan, hence the
 * same offsets. With long lifetimes the union has hundreds of blocks but only a few gaps long
 * enough for the (decreasing) size, so after the most covering sets each further set costs a
 * few searches instead of a walk over all of its blocks. */
#include "planner/planner_internal.h"

#include "common/error.h"
#include "common/clock.h"
#include "common/grow.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned class_of(uint32_t cap)
{
    unsigned c = 0;
    while (((uint32_t)1 << c) < cap)
        c++;
    return c;
}

/* Everything that holds addresses is compiled twice (greedy_tree_generic.h, included below
 * once per width): with 32-bit addresses, tried first, and with size_t ones. While the arena stays below 4 GiB the
 * sets and candidate ranges take half the memory, and the run is bound by that memory
 * traffic (the insertions' memmoves and the cache misses of ~20 sets per query). A placement
 * that would end at or above UINT32_MAX stops the 32-bit run, and the plan is made again with
 * size_t addresses: both runs apply the same rule, so the offsets are the same either way. */
#define TREE_WIDTH 32
#define POS uint32_t
#define POS_MAX UINT32_MAX
#define W(name) name##_32
#include "planner/greedy_tree_generic.h"
#undef POS
#undef POS_MAX
#undef W
#undef TREE_WIDTH
#define TREE_WIDTH 64
#define POS size_t
#define POS_MAX SIZE_MAX
#define W(name) name##_64
#include "planner/greedy_tree_generic.h"
#undef POS
#undef POS_MAX
#undef W

/* The mean number of tensors live at a node, over the nodes from the first use to the last. */
static double mean_live(const tp_tensor_lifetime *tensors, const size_t *order, size_t n_order)
{
    size_t lo = SIZE_MAX, hi = 0;
    double covered = 0;
    for (size_t k = 0; k < n_order; k++) {
        const tp_tensor_lifetime *t = &tensors[order[k]];
        lo = t->first_use < lo ? t->first_use : lo;
        hi = t->last_use > hi ? t->last_use : hi;
        covered += (double)(t->last_use - t->first_use) + 1;
    }
    return covered / ((double)(hi - lo) + 1);
}

/* Microseconds per placement of the tree, a model fitted to measurements on random lifetimes
 * (2 cores): about 0.45 sqrt(live) up to 400 tensors live at once (1.3 us with 8 live, 9 us
 * with 400), 9 up to 800, then 9 (live / 800)^0.6 (12 us with 1,600 live, 99 us with 22,000,
 * at n = 1e5). */
static double tree_us(double live)
{
    return live <= 400 ? 0.45 * sqrt(live) : live <= 800 ? 9.0 : 9.0 * pow(live / 800, 0.6);
}

/* Whether the address-ordered scan of greedy_scan.c should be faster than the tree here. Both
 * give the same offsets, so this only decides speed. Measured like tree_us, in microseconds
 * per placement: the scan with AVX-512 about 1.5 + 0.085e-3 n on one thread (0.05e-3 n on
 * two from 65,536 tensors; 0.14e-3 and 0.08e-3 before that form read packed lifetimes in two
 * loops and chunks were 16 x 1,024 deep), with AVX2 about 2 + 0.19e-3 n (0.11e-3 n on two;
 * 0.3e-3 and 0.17e-3 before the AVX2 form had intrinsics of its own), whatever the lifetimes.
 * Without either instruction set the scan is never chosen: its portable form is 10 times
 * slower. */
static int scan_pays_off(size_t n_order, double live, size_t alignment, unsigned threads)
{
    const int level = tp_scan_level();
    if (n_order < 1024 || alignment > TP_SCAN_MAX_ALIGN || (alignment & (alignment - 1)) != 0 ||
        level < 1)
        return 0;
    const double n = (double)n_order;
    if (threads == 0)
        threads = tp_scan_default_threads(n_order);
    const int shared = threads > 1 && n_order >= 65536;
    const double scan_us = level == 2 ? 1.5 + (shared ? 0.05e-3 : 0.085e-3) * n
                                      : 2.0 + (shared ? 0.11e-3 : 0.19e-3) * n;
    return scan_us < tree_us(live);
}

tp_status tp_greedy_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                          size_t n_order, size_t alignment, tp_gap_rule rule,
                          const tp_greedy_ticker *ticker, size_t *offsets, size_t *arena_size)
{
    return tp_greedy_place_threads(tensors, count, order, n_order, alignment, rule, ticker, 0,
                                   offsets, arena_size);
}

static tp_status ranks_of(const tp_tensor_lifetime *tensors, const size_t *order, size_t n_order,
                          tp_leaf_ranks *ranks)
{
    ranks->n_leaves = 0;
    ranks->lo = malloc((n_order ? n_order : 1) * sizeof *ranks->lo);
    ranks->hi = malloc((n_order ? n_order : 1) * sizeof *ranks->hi);
    if (ranks->lo == NULL || ranks->hi == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", n_order);
    return tp_lifetime_ranks(tensors, order, n_order, ranks->lo, ranks->hi, &ranks->n_leaves);
}

/* The tree pass on ranks already computed: 32-bit addresses first, size_t ones when a block
 * would reach 4 GiB. */
static tp_status tree_place_ranked(const tp_tensor_lifetime *tensors, size_t count,
                                   const size_t *order, size_t n_order,
                                   const tp_leaf_ranks *ranks, size_t alignment,
                                   tp_gap_rule rule, const tp_greedy_ticker *ticker,
                                   size_t *offsets, size_t *arena_size)
{
    int too_wide = 0;
    tp_status st = greedy_place_32(tensors, count, order, n_order, ranks, alignment, rule,
                                   ticker, offsets, arena_size, &too_wide);
    if (st != TP_OK || !too_wide)
        return st;
    return greedy_place_64(tensors, count, order, n_order, ranks, alignment, rule, ticker,
                           offsets, arena_size, &too_wide);
}

/* tp_buckets_pay_off with the mean number of tensors live already known. */
static tp_status buckets_pay_off_live(const tp_leaf_ranks *ranks, size_t n_order, double live,
                                      tp_bucket_shape *shape, tp_pass_estimate *est)
{
    est->bucket_us = -1;
    est->tree_us = n_order > 0 ? tree_us(live) : 0;
    est->buckets = 0;
    tp_status st = tp_bucket_choose(ranks, n_order, shape, &est->bucket_us);
    if (st == TP_OK && n_order > 0)
        est->buckets = est->bucket_us >= 0 && est->bucket_us < est->tree_us;
    return st;
}

tp_status tp_buckets_pay_off(const tp_tensor_lifetime *tensors, const size_t *order,
                             size_t n_order, const tp_leaf_ranks *ranks, tp_bucket_shape *shape,
                             tp_pass_estimate *est)
{
    const double live = n_order > 0 ? mean_live(tensors, order, n_order) : 0;
    return buckets_pay_off_live(ranks, n_order, live, shape, est);
}

/* The address-ordered scan with sizes and addresses counted in units of `granule` (a factor
 * of every offset, tp_size_granule): 32-bit addresses then reach 4 GiB times the granule. */
static tp_status scan_place_scaled(const tp_tensor_lifetime *tensors, size_t count,
                                   const size_t *order, size_t n_order, size_t granule,
                                   size_t scan_align, tp_gap_rule rule,
                                   const tp_greedy_ticker *ticker, unsigned threads,
                                   size_t *offsets, size_t *arena_size, int *declined)
{
    if (granule == 1)
        return tp_scan_place(tensors, count, order, n_order, scan_align, rule, ticker, threads,
                             TP_SCAN_AUTO, offsets, arena_size, declined);
    /* scaled addresses stay below 2^32, so granule * 2^32 must fit in size_t */
    if (granule > SIZE_MAX >> 32 || count > SIZE_MAX / sizeof(tp_tensor_lifetime)) {
        *declined = 1;
        return TP_OK;
    }
    tp_tensor_lifetime *scaled = malloc((count ? count : 1) * sizeof *scaled);
    if (scaled == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", count);
    for (size_t i = 0; i < count; i++) {
        scaled[i] = tensors[i];
        scaled[i].size /= granule;
    }
    const tp_status st = tp_scan_place(scaled, count, order, n_order, scan_align, rule, ticker,
                                       threads, TP_SCAN_AUTO, offsets, arena_size, declined);
    free(scaled);
    if (st == TP_OK && !*declined) {
        for (size_t i = 0; i < count; i++)
            offsets[i] *= granule;
        *arena_size *= granule;
    }
    return st;
}

/* A clique in O(n); otherwise the scan where it pays, else the buckets where their estimate beats the tree's model, else
 * the tree. */
tp_status tp_greedy_place_threads(const tp_tensor_lifetime *tensors, size_t count,
                                  const size_t *order, size_t n_order, size_t alignment,
                                  tp_gap_rule rule, const tp_greedy_ticker *ticker,
                                  unsigned threads, size_t *offsets, size_t *arena_size)
{
    if (tp_is_clique(tensors, order, n_order))
        return tp_clique_place(tensors, count, order, n_order, alignment, ticker, offsets,
                               arena_size);
    /* more threads than processors to run them only wait for each other */
    const unsigned cpus = tp_planner_cpus();
    if (threads > cpus)
        threads = cpus;
    const double live = n_order > 0 ? mean_live(tensors, order, n_order) : 0;
    size_t scan_align = 1;
    const size_t granule = tp_size_granule(tensors, order, n_order, alignment, &scan_align);
    if (scan_pays_off(n_order, live, scan_align, threads)) {
        int declined = 0;
        const tp_status st = scan_place_scaled(tensors, count, order, n_order, granule,
                                               scan_align, rule, ticker, threads, offsets,
                                               arena_size, &declined);
        if (st != TP_OK || !declined)
            return st;
    }
    tp_leaf_ranks ranks;
    tp_status st = ranks_of(tensors, order, n_order, &ranks);
    tp_bucket_shape shape = { 0, SIZE_MAX };
    tp_pass_estimate est = { 0, 0, 0 };
    if (st == TP_OK)
        st = buckets_pay_off_live(&ranks, n_order, live, &shape, &est);
    if (st == TP_OK && est.buckets)
        st = tp_bucket_place(tensors, count, order, n_order, &ranks, &shape, alignment, rule,
                             ticker, offsets, arena_size);
    else if (st == TP_OK)
        st = tree_place_ranked(tensors, count, order, n_order, &ranks, alignment, rule, ticker,
                               offsets, arena_size);
    free(ranks.lo);
    free(ranks.hi);
    return st;
}

tp_status tp_tree_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                        size_t n_order, size_t alignment, tp_gap_rule rule,
                        const tp_greedy_ticker *ticker, size_t *offsets, size_t *arena_size)
{
    tp_leaf_ranks ranks;
    tp_status st = ranks_of(tensors, order, n_order, &ranks);
    if (st == TP_OK)
        st = tree_place_ranked(tensors, count, order, n_order, &ranks, alignment, rule, ticker,
                               offsets, arena_size);
    free(ranks.lo);
    free(ranks.hi);
    return st;
}

tp_status tp_plan_offsets_fast(const tp_tensor_lifetime *tensors, size_t count,
                               size_t *offsets, size_t *arena_size)
{
    tp_status st = tp_check_plan_args(tensors, count, offsets, arena_size);
    if (st != TP_OK)
        return st;
    if (count > SIZE_MAX / sizeof(tp_order_key))
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: scratch size overflows size_t", count);
    tp_order_key *keys = malloc((count ? count : 1) * sizeof *keys);
    size_t *order = malloc((count ? count : 1) * sizeof *order);
    if (keys == NULL || order == NULL) {
        free(keys);
        free(order);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", count);
    }
    const size_t n = tp_greedy_order(tensors, count, TP_ORDER_SIZE, keys, order);
    free(keys);
    st = tp_greedy_place(tensors, count, order, n, 1, TP_GAP_BEST_FIT, NULL, offsets, arena_size);
    free(order);
    return st;
}
