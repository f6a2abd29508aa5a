/* Fuzzing harness: the planner's interface, tp_plan_offsets_ex, under each strategy, with
 * alignments and capacities. The input bytes (docs/fuzzing.md):
 *   byte 0       strategy: 0 greedy, 1 portfolio, 2 exact (mod 3)
 *   byte 1       alignment 2^(b mod 32)
 *   byte 2       capacity: 0 none, 1 the peak, 2 the peak - 1, 3 bytes 3..10 (mod 4)
 *   bytes 3..10  a capacity, little endian (used by mode 3)
 *   then 5 bytes per tensor (at most 64): s0 s1 k first len; raw = s0 + 256 s1;
 *     k < 128: size = raw << (k mod 32); k >= 128: size = (SIZE_MAX >> (k mod 64)) - raw
 *     (0 when that is negative); lifetime [first, first + len] inclusive.
 * Soundness is restated here: tensors live at a common node never share a byte, offsets are
 * multiples of the alignment, zero-size tensors sit at 0, the arena is the top of the plan
 * and at least the peak of live bytes (a sweep written here), a plan returned as fitting is
 * within the capacity, and the greedy strategy gives tp_plan_offsets's plan, which the interval
 * tree and the time buckets (2^((byte 2 >> 2) mod 12) leaves wide) give as well. */
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "planner/planner_internal.h"
#include "tensorplan/planner.h"
#include "tensorplan/status.h"

#define PLANNER_MAX_TENSORS 64u

/* The peak of live bytes by brute force over every node that starts a lifetime; 0 and
 * *overflow = 1 when a sum passes SIZE_MAX. */
static size_t planner_peak(const tp_tensor_lifetime *t, size_t n, int *overflow)
{
    size_t peak = 0;
    *overflow = 0;
    for (size_t i = 0; i < n; i++) {
        size_t live = 0;
        for (size_t j = 0; j < n; j++) {
            if (t[j].first_use <= t[i].first_use && t[i].first_use <= t[j].last_use) {
                if (t[j].size > SIZE_MAX - live) {
                    *overflow = 1;
                    return 0;
                }
                live += t[j].size;
            }
        }
        if (live > peak)
            peak = live;
    }
    return peak;
}

static size_t planner_decode(const uint8_t *d, size_t size, tp_tensor_lifetime *t)
{
    size_t n = 0;
    for (size_t at = 11; at + 5 <= size && n < PLANNER_MAX_TENSORS; at += 5, n++) {
        const size_t raw = (size_t)d[at] | (size_t)d[at + 1] << 8;
        const unsigned k = d[at + 2];
        if (k < 128) {
            t[n].size = raw << (k % 32);
        } else {
            const size_t top = SIZE_MAX >> (k % 64);
            t[n].size = top >= raw ? top - raw : 0;
        }
        t[n].first_use = d[at + 3];
        t[n].last_use = (size_t)d[at + 3] + d[at + 4];
    }
    return n;
}

static void planner_check_plan(const tp_tensor_lifetime *t, size_t n, const size_t *off,
                               size_t arena, size_t align, size_t peak)
{
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].size == 0) {
            TPF_CHECK(off[i] == 0, "tensor %zu of size 0 at %zu", i, off[i]);
            continue;
        }
        TPF_CHECK(off[i] % align == 0, "tensor %zu at %zu, alignment %zu", i, off[i], align);
        TPF_CHECK(off[i] <= SIZE_MAX - t[i].size, "tensor %zu ends past SIZE_MAX", i);
        if (off[i] + t[i].size > top)
            top = off[i] + t[i].size;
        for (size_t j = i + 1; j < n; j++) {
            if (t[j].size == 0)
                continue;
            const int live = t[i].first_use <= t[j].last_use && t[j].first_use <= t[i].last_use;
            const int share = off[i] < off[j] + t[j].size && off[j] < off[i] + t[i].size;
            TPF_CHECK(!(live && share), "tensors %zu and %zu share a byte", i, j);
        }
    }
    TPF_CHECK(arena == top, "arena %zu, the plan reaches %zu", arena, top);
    TPF_CHECK(arena >= peak, "arena %zu below the peak %zu", arena, peak);
}

/* The greedy passes behind tp_plan_offsets give the same offsets however they are chosen: the
 * interval tree, and the time buckets 2^shift leaves wide (lifetimes of 2^shift leaves or more
 * in the long list when keep_long), on the size order. */
static void planner_check_passes(const tp_tensor_lifetime *t, size_t n, size_t align,
                                 unsigned shift, int keep_long, const size_t *want,
                                 size_t want_arena)
{
    tp_order_key keys[PLANNER_MAX_TENSORS];
    size_t order[PLANNER_MAX_TENSORS], off[PLANNER_MAX_TENSORS], lo[PLANNER_MAX_TENSORS],
        hi[PLANNER_MAX_TENSORS], arena = 0;
    const size_t m = tp_greedy_order(t, n, TP_ORDER_SIZE, keys, order);
    tp_status st = tp_tree_place(t, n, order, m, align, TP_GAP_BEST_FIT, NULL, off, &arena);
    TPF_CHECK(st == TP_OK && arena == want_arena && memcmp(off, want, n * sizeof *off) == 0,
              "the interval tree differs from the greedy plan (status %d)", (int)st);
    tp_leaf_ranks ranks = { lo, hi, 0 };
    TPF_CHECK(tp_lifetime_ranks(t, order, m, lo, hi, &ranks.n_leaves) == TP_OK,
              "lifetime ranks refused");
    arena = 0;
    const tp_bucket_shape shape = { shift, keep_long ? (size_t)1 << shift : SIZE_MAX };
    st = tp_bucket_place(t, n, order, m, &ranks, &shape, align, TP_GAP_BEST_FIT, NULL, off,
                         &arena);
    TPF_CHECK(st == TP_OK && arena == want_arena && memcmp(off, want, n * sizeof *off) == 0,
              "the time buckets (shift %u) differ from the greedy plan (status %d)", shift,
              (int)st);
}

static int fuzz_planner(const uint8_t *d, size_t size)
{
    if (size < 11)
        return 0;
    tp_tensor_lifetime t[PLANNER_MAX_TENSORS];
    const size_t n = planner_decode(d, size, t);
    int overflow = 0;
    const size_t peak = planner_peak(t, n, &overflow);
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.strategy = (tp_plan_strategy)(d[0] % 3);
    o.alignment = (size_t)1 << (d[1] % 32);
    o.time_limit_seconds = 0.02; /* bounds an exact search; the first order always completes */
    size_t explicit_cap = 0;
    for (int b = 7; b >= 0; b--)
        explicit_cap = explicit_cap << 8 | d[3 + b];
    switch (d[2] % 4) {
    case 1: o.capacity = peak; break;
    case 2: o.capacity = peak > 1 ? peak - 1 : 0; break;
    case 3: o.capacity = explicit_cap; break;
    default: break;
    }
    size_t off[PLANNER_MAX_TENSORS], arena = 0;
    tp_plan_report rep;
    const tp_status st = tp_plan_offsets_ex(t, n, &o, off, &arena, &rep);
    if (overflow) {
        TPF_CHECK(st == TP_ERR_OVERFLOW, "live bytes pass SIZE_MAX, status %d", (int)st);
        return 0;
    }
    if (st == TP_ERR_OVERFLOW)
        return 0; /* an aligned offset + size can pass SIZE_MAX below an exact peak */
    TPF_CHECK(st == TP_OK || st == TP_ERR_INFEASIBLE, "status %d: %s", (int)st, tp_last_error());
    planner_check_plan(t, n, off, arena, o.alignment, peak);
    TPF_CHECK(rep.arena_size == arena || n == 0, "report arena %zu, returned %zu",
              rep.arena_size, arena);
    TPF_CHECK(rep.lower_bound <= arena, "lower bound %zu above the arena %zu", rep.lower_bound,
              arena);
    if (o.capacity > 0) {
        TPF_CHECK((st == TP_OK) == (arena <= o.capacity), "status %d, arena %zu, capacity %zu",
                  (int)st, arena, o.capacity);
        if (peak > o.capacity)
            TPF_CHECK(st == TP_ERR_INFEASIBLE && rep.proven_infeasible,
                      "peak %zu over capacity %zu not proven infeasible", peak, o.capacity);
    } else {
        TPF_CHECK(st == TP_OK, "no capacity, status %d", (int)st);
    }
    if (rep.proven_optimal)
        TPF_CHECK(rep.lower_bound == arena, "proven optimal, bound %zu arena %zu",
                  rep.lower_bound, arena);
    if (o.strategy == TP_PLAN_GREEDY && o.capacity == 0)
        planner_check_passes(t, n, o.alignment, (unsigned)(d[2] >> 2) % 12, d[2] >> 7, off,
                             arena);
    if (o.strategy == TP_PLAN_GREEDY && o.alignment == 1 && o.capacity == 0) {
        size_t off1[PLANNER_MAX_TENSORS], arena1 = 0;
        TPF_CHECK(tp_plan_offsets(t, n, off1, &arena1) == TP_OK, "tp_plan_offsets refused");
        TPF_CHECK(arena1 == arena && memcmp(off1, off, n * sizeof *off) == 0,
                  "greedy differs from tp_plan_offsets");
    }
    return 0;
}

TPF_ENTRY(fuzz_planner)
