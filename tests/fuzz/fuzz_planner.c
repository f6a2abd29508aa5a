/* Fuzzing harness: the planner's interface, tp_plan_offsets_ex, under each strategy, with
 * alignments, capacities and MiniMalloc's gaps. The input bytes (docs/fuzzing.md):
 *   byte 0       strategy: 0 greedy, 1 portfolio, 2 exact (mod 3); (b / 3) mod 4 the
 *                constraints: 0 none, 1 gaps, 2 gaps and per-tensor alignments, 3 gaps and
 *                one invalid gap (kind (byte 1 >> 5) mod 5, planner_bad_gap)
 *   byte 1       alignment 2^(b mod 32)
 *   byte 2       capacity: 0 none, 1 the peak, 2 the peak - 1, 3 bytes 3..10 (mod 4)
 *   bytes 3..10  a capacity, little endian (used by mode 3)
 *   then 5 bytes per tensor without constraints, 8 with (at most 64): s0 s1 k first len
 *     [ga gb gc]; raw = s0 + 256 s1; k < 128: size = raw << (k mod 32); k >= 128: size =
 *     (SIZE_MAX >> (k mod 64)) - raw (0 when that is negative); lifetime [first, first + len]
 *     inclusive. ga mod 4: no gap, one without a window, one with a window, two (the
 *     second with a window when bit 2 of ga); gb places them in the lifetime, gc gives the
 *     windows (planner_decode_gaps); with per-tensor alignments, 1 + (ga >> 5).
 * Soundness is restated here: tensors live at a common node never share a byte (with gaps:
 * MiniMalloc's rule, restated from docs/planner.md at every node where a window changes),
 * offsets are multiples of the alignments, zero-size tensors sit at 0, the arena is the top
 * of the plan and at least the peak of live (window) bytes (a sweep written here), a plan
 * returned as fitting is within the capacity, an invalid gap is refused, and the greedy
 * strategy gives tp_plan_offsets's plan, which the interval tree and the time buckets
 * (2^((byte 2 >> 2) mod 12) leaves wide) give as well. On tiny inputs with gaps an
 * exhaustive search written here checks the proofs: an arena proven optimal is the least,
 * a capacity proven infeasible is below it. */
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

/* The tensors of records of `step` bytes from byte 11 (the layout at the top). */
static size_t planner_decode(const uint8_t *d, size_t size, size_t step, tp_tensor_lifetime *t)
{
    size_t n = 0;
    for (size_t at = 11; at + step <= size && n < PLANNER_MAX_TENSORS; at += step, n++) {
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

/* ---- Gaps and per-tensor alignments ------------------------------------------------- */

#define PLANNER_MAX_GAPS (2 * PLANNER_MAX_TENSORS + 2)

__extension__ typedef __int128 planner_i128;

typedef struct planner_input {
    tp_tensor_lifetime t[PLANNER_MAX_TENSORS];
    size_t n;
    unsigned mode; /* 0 none, 1 gaps, 2 gaps and alignments, 3 gaps and an invalid one */
    tp_tensor_gap g[PLANNER_MAX_GAPS];
    size_t ng;
    size_t gbeg[PLANNER_MAX_TENSORS], gcnt[PLANNER_MAX_TENSORS]; /* each tensor's gaps */
    size_t al[PLANNER_MAX_TENSORS]; /* per tensor, 1 = none */
} planner_input;

/* floor(s * k / q) for k <= q, without overflow */
static size_t planner_part(size_t s, unsigned k, unsigned q)
{
    return s / q * k + s % q * k / q;
}

/* A window from byte w inside [0, size): lo at (w mod 16) / 16 of it, hi at (w >> 4) / 15
 * of the rest above lo. */
static void planner_window_of(uint8_t w, size_t size, tp_tensor_gap *g)
{
    g->has_window = 1;
    g->window_lo = planner_part(size, w & 15u, 16);
    g->window_hi = g->window_lo + planner_part(size - g->window_lo, w >> 4, 15);
}

/* Tensor i's gaps from its three bytes r (the layout at the top). */
static void planner_decode_gaps(planner_input *x, size_t i, const uint8_t *r)
{
    const tp_tensor_lifetime *t = &x->t[i];
    const unsigned kind = r[0] & 3u;
    x->gbeg[i] = x->ng;
    x->gcnt[i] = 0;
    x->al[i] = x->mode == 2 ? 1 + (size_t)(r[0] >> 5) : 1;
    if (kind == 0)
        return;
    tp_tensor_gap *g = &x->g[x->ng];
    memset(g, 0, sizeof *g);
    g->tensor = i;
    g->first = t->first_use + (r[1] & 15u) % (t->last_use - t->first_use + 1);
    g->last = g->first + (r[1] >> 4) % (t->last_use - g->first + 1);
    if (kind >= 2)
        planner_window_of(r[2], t->size, g);
    x->ng++;
    x->gcnt[i]++;
    if (kind < 3 || g->last == t->last_use)
        return;
    tp_tensor_gap *h = &x->g[x->ng];
    memset(h, 0, sizeof *h);
    h->tensor = i;
    h->first = g->last + 1 + (r[2] & 7u) % (t->last_use - g->last);
    h->last = h->first + (r[2] >> 3) % (t->last_use - h->first + 1);
    if (r[0] & 4u)
        planner_window_of((uint8_t)(r[2] << 4 | r[2] >> 4), t->size, h);
    x->ng++;
    x->gcnt[i]++;
}

/* One more gap that the planner must refuse, of kind k: naming no tensor, outside the
 * lifetime, first after last, a window beyond the size (or lo above hi), or overlapping
 * another gap of its tensor. */
static void planner_bad_gap(planner_input *x, unsigned k)
{
    const size_t i = x->n > 0 ? x->n - 1 : 0;
    tp_tensor_gap *g = &x->g[x->ng++];
    memset(g, 0, sizeof *g);
    g->tensor = x->n == 0 || k == 0 ? x->n : i;
    if (x->n == 0 || k == 0)
        return;
    const tp_tensor_lifetime *t = &x->t[i];
    g->first = g->last = t->first_use;
    if (k == 1) {
        g->first = g->last = t->last_use + 1;
    } else if (k == 2) {
        g->first = t->first_use + 1;
    } else if (k == 3) {
        g->has_window = 1;
        g->window_lo = t->size == SIZE_MAX ? 1 : 0;
        g->window_hi = t->size == SIZE_MAX ? 0 : t->size + 1;
    } else if (x->gcnt[i] > 0) {
        *g = x->g[x->gbeg[i]];
    } else { /* two gaps over the whole lifetime */
        g->last = t->last_use;
        x->g[x->ng++] = *g;
    }
}

/* Tensor i's window at node (inside its lifetime): 1 with [*lo, *hi) when it has one. */
static int planner_window_at(const planner_input *x, size_t i, size_t node, size_t *lo,
                             size_t *hi)
{
    for (size_t k = x->gbeg[i]; k < x->gbeg[i] + x->gcnt[i]; k++) {
        const tp_tensor_gap *g = &x->g[k];
        if (g->first <= node && node <= g->last) {
            *lo = g->window_lo;
            *hi = g->window_hi;
            return g->has_window;
        }
    }
    *lo = 0;
    *hi = x->t[i].size;
    return 1;
}

/* The nodes where tensor i's window may change inside [from, to]: from itself and each of
 * its gaps' first node and the node after its last. Returns how many went into at. */
static size_t planner_changes(const planner_input *x, size_t i, size_t from, size_t to,
                              size_t *at)
{
    size_t n = 0;
    at[n++] = from;
    for (size_t k = x->gbeg[i]; k < x->gbeg[i] + x->gcnt[i]; k++) {
        const tp_tensor_gap *g = &x->g[k];
        if (g->first > from && g->first <= to)
            at[n++] = g->first;
        if (g->last >= from && g->last < to)
            at[n++] = g->last + 1;
    }
    return n;
}

/* MiniMalloc's rule (docs/planner.md): over the nodes where both windows are present,
 * A = max(hi_i - lo_j), B = max(hi_j - lo_i); j above i needs o_j >= o_i + A, i above j
 * o_i >= o_j + B. Windows are constant between the nodes of planner_changes. Returns
 * whether offsets oi and oj keep the rule (1 when no node has both windows, or a size 0). */
static int planner_pair_ok(const planner_input *x, size_t i, size_t oi, size_t j, size_t oj)
{
    const tp_tensor_lifetime *a = &x->t[i], *b = &x->t[j];
    if (a->size == 0 || b->size == 0 || a->first_use > b->last_use || b->first_use > a->last_use)
        return 1;
    const size_t from = a->first_use > b->first_use ? a->first_use : b->first_use;
    const size_t to = a->last_use < b->last_use ? a->last_use : b->last_use;
    size_t at[16];
    size_t m = planner_changes(x, i, from, to, at);
    m += planner_changes(x, j, from, to, at + m);
    int meet = 0;
    planner_i128 need_a = 0, need_b = 0;
    for (size_t k = 0; k < m; k++) {
        size_t lo_i, hi_i, lo_j, hi_j;
        if (!planner_window_at(x, i, at[k], &lo_i, &hi_i) ||
            !planner_window_at(x, j, at[k], &lo_j, &hi_j))
            continue;
        const planner_i128 ra = (planner_i128)hi_i - lo_j, rb = (planner_i128)hi_j - lo_i;
        need_a = !meet || ra > need_a ? ra : need_a;
        need_b = !meet || rb > need_b ? rb : need_b;
        meet = 1;
    }
    return !meet || (planner_i128)oj >= (planner_i128)oi + need_a ||
           (planner_i128)oi >= (planner_i128)oj + need_b;
}

/* The most window bytes live at one node (the nodes where a lifetime starts or a window
 * changes); 0 and *overflow = 1 when a sum passes SIZE_MAX. */
static size_t planner_window_peak(const planner_input *x, int *overflow)
{
    size_t peak = 0;
    *overflow = 0;
    for (size_t c = 0; c < x->n; c++) {
        size_t at[8]; /* 1 + 2 per gap, at most two gaps */
        const size_t m = planner_changes(x, c, x->t[c].first_use, x->t[c].last_use, at);
        for (size_t k = 0; k < m; k++) {
            size_t live = 0;
            for (size_t j = 0; j < x->n; j++) {
                size_t lo, hi;
                if (x->t[j].size == 0 || at[k] < x->t[j].first_use || at[k] > x->t[j].last_use ||
                    !planner_window_at(x, j, at[k], &lo, &hi))
                    continue;
                if (hi - lo > SIZE_MAX - live) {
                    *overflow = 1;
                    return 0;
                }
                live += hi - lo;
            }
            peak = live > peak ? live : peak;
        }
    }
    return peak;
}

/* Every offset a multiple of the call's alignment and the tensor's own, zero-size tensors
 * at 0, every pair by the rule, the arena the top of the plan and at least the peak. */
static void planner_check_gapped(const planner_input *x, const size_t *off, size_t arena,
                                 size_t align, size_t peak)
{
    size_t top = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (x->t[i].size == 0) {
            TPF_CHECK(off[i] == 0, "tensor %zu of size 0 at %zu", i, off[i]);
            continue;
        }
        TPF_CHECK(off[i] % align == 0 && off[i] % x->al[i] == 0,
                  "tensor %zu at %zu, alignments %zu and %zu", i, off[i], align, x->al[i]);
        TPF_CHECK(off[i] <= SIZE_MAX - x->t[i].size, "tensor %zu ends past SIZE_MAX", i);
        top = off[i] + x->t[i].size > top ? off[i] + x->t[i].size : top;
        for (size_t j = i + 1; j < x->n; j++)
            TPF_CHECK(planner_pair_ok(x, i, off[i], j, off[j]),
                      "tensors %zu at %zu and %zu at %zu break the gap rule", i, off[i], j,
                      off[j]);
    }
    TPF_CHECK(arena == top, "arena %zu, the plan reaches %zu", arena, top);
    TPF_CHECK(arena >= peak, "arena %zu below the window peak %zu", arena, peak);
}

#define PLANNER_TINY 4u    /* the exhaustive search: at most this many tensors */
#define PLANNER_TINY_SUM 16u /* of at most this many bytes in all */

/* Whether tensors k.. fit under cap, each at a multiple of its alignment (a[i]) clear by
 * the rule of those before it (off[0..k)). */
static int planner_fits(const planner_input *x, const size_t *a, size_t cap, size_t *off,
                        size_t k)
{
    if (k == x->n)
        return 1;
    const size_t size = x->t[k].size;
    for (size_t o = 0; o + size <= cap; o += a[k]) {
        int ok = 1;
        for (size_t j = 0; j < k && ok; j++)
            ok = planner_pair_ok(x, j, off[j], k, o);
        off[k] = o;
        if (ok && planner_fits(x, a, cap, off, k + 1))
            return 1;
        if (size == 0)
            break;
    }
    return 0;
}

/* The least arena of a tiny input by exhaustive search (SIZE_MAX when the input is not tiny:
 * more tensors or bytes, or an alignment above 8). */
static size_t planner_tiny_least(const planner_input *x, size_t align)
{
    size_t sum = 0, a[PLANNER_TINY], off[PLANNER_TINY];
    if (x->n > PLANNER_TINY || align > 8)
        return SIZE_MAX;
    for (size_t i = 0; i < x->n; i++) {
        if (x->t[i].size > PLANNER_TINY_SUM - sum)
            return SIZE_MAX;
        sum += x->t[i].size;
        a[i] = align; /* the least common multiple with the tensor's own, by search */
        while (a[i] % x->al[i] != 0)
            a[i] += align;
    }
    size_t cap = 0;
    while (!planner_fits(x, a, cap, off, 0))
        cap++;
    return cap;
}

/* The checks of an input with gaps (modes 1 to 3). */
static void planner_gapped(planner_input *x, const uint8_t *d, tp_plan_options *o)
{
    if (x->mode == 3)
        planner_bad_gap(x, (unsigned)(d[1] >> 5) % 5);
    o->gaps = x->g;
    o->gap_count = x->ng;
    o->alignments = x->mode == 2 ? x->al : NULL;
    int overflow = 0;
    const size_t peak = x->mode == 3 ? 0 : planner_window_peak(x, &overflow);
    size_t explicit_cap = 0;
    for (int b = 7; b >= 0; b--)
        explicit_cap = explicit_cap << 8 | d[3 + b];
    switch (d[2] % 4) {
    case 1: o->capacity = peak; break;
    case 2: o->capacity = peak > 1 ? peak - 1 : 0; break;
    case 3: o->capacity = explicit_cap; break;
    default: break;
    }
    size_t off[PLANNER_MAX_TENSORS], arena = 0;
    tp_plan_report rep;
    const tp_status st = tp_plan_offsets_ex(x->t, x->n, o, off, &arena, &rep);
    if (x->mode == 3) {
        TPF_CHECK(st == TP_ERR_INVALID && tp_last_error()[0] != '\0',
                  "an invalid gap (kind %u) not refused: status %d", (unsigned)(d[1] >> 5) % 5,
                  (int)st);
        return;
    }
    if (overflow) {
        TPF_CHECK(st == TP_ERR_OVERFLOW, "window bytes pass SIZE_MAX, status %d", (int)st);
        return;
    }
    if (st == TP_ERR_OVERFLOW)
        return; /* an aligned offset + size can pass SIZE_MAX */
    TPF_CHECK(st == TP_OK || st == TP_ERR_INFEASIBLE, "status %d: %s", (int)st, tp_last_error());
    planner_check_gapped(x, off, arena, o->alignment, peak);
    TPF_CHECK(rep.lower_bound <= arena && rep.lower_bound >= peak,
              "lower bound %zu, arena %zu, peak %zu", rep.lower_bound, arena, peak);
    TPF_CHECK(o->capacity == 0 ? st == TP_OK : (st == TP_OK) == (arena <= o->capacity),
              "status %d, arena %zu, capacity %zu", (int)st, arena, o->capacity);
    TPF_CHECK(!rep.proven_optimal || rep.lower_bound == arena,
              "proven optimal, bound %zu arena %zu", rep.lower_bound, arena);
    const size_t least = planner_tiny_least(x, o->alignment);
    if (least == SIZE_MAX)
        return;
    TPF_CHECK(arena >= least && rep.lower_bound <= least,
              "arena %zu, bound %zu, least %zu by exhaustive search", arena, rep.lower_bound,
              least);
    TPF_CHECK(!rep.proven_infeasible || least > o->capacity,
              "capacity %zu proven infeasible, a plan of %zu exists", o->capacity, least);
}

static int fuzz_planner(const uint8_t *d, size_t size)
{
    if (size < 11)
        return 0;
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.strategy = (tp_plan_strategy)(d[0] % 3);
    o.alignment = (size_t)1 << (d[1] % 32);
    o.time_limit_seconds = 0.02; /* bounds an exact search; the first order always completes */
    const unsigned mode = (unsigned)(d[0] / 3) % 4;
    if (mode > 0) {
        static planner_input x; /* large: off the stack */
        memset(&x, 0, sizeof x);
        x.mode = mode;
        x.n = planner_decode(d, size, 8, x.t);
        for (size_t i = 0; i < x.n; i++)
            planner_decode_gaps(&x, i, d + 11 + 8 * i + 5);
        planner_gapped(&x, d, &o);
        return 0;
    }
    tp_tensor_lifetime t[PLANNER_MAX_TENSORS];
    const size_t n = planner_decode(d, size, 5, t);
    int overflow = 0;
    const size_t peak = planner_peak(t, n, &overflow);
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
