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
 *   sets       non-empty sets a segment tree over time hands a placement: the coalesced
 *              address blocks of the tensors stored at each canonical node of its lifetime
 *              with its subtree, and of those stored at each strict ancestor
 *   setblk     blocks in those sets, summed
 *   rounds     rounds of a leapfrog over those sets that finds every gap of their union at
 *              least as long as the tensor (a round asks every set for the lowest position at
 *              or above x with room for the tensor; a fixed point is a fitting gap); checked
 *              against `fitting` (MISMATCH otherwise)
 *   probes     set look-ups of those rounds (rounds x sets: each a binary search)
 *   least      sets x fitting: the look-ups of any search that confirms each fitting gap of
 *              the union in every set
 *   cls8       the address-ordered scan split into 8 classes by first use (each class its own
 *              address order): placed tensors in the classes whose lifetimes reach the new one
 *              (what those scans read), and the gaps at least as long as the tensor in the
 *              union of each class's conflicts, summed over the classes (what they must hand
 *              on to be intersected)
 *
 * build/bench/bench_scan_reads [n ...]   (default 10000 30000; O(n^2 log n): minutes at 30000) */
#include <stdint.h>
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

/* A coalesced set of address blocks, sorted by start. */
typedef struct set {
    span *v;
    size_t n, cap;
} set;

/* Adds [a, e) to x, merging what it overlaps or touches. */
static void set_add(set *x, size_t a, size_t e)
{
    size_t i = 0, j;
    while (i < x->n && x->v[i].end < a)
        i++;
    for (j = i; j < x->n && x->v[j].start <= e; j++) {
        a = x->v[j].start < a ? x->v[j].start : a;
        e = x->v[j].end > e ? x->v[j].end : e;
    }
    if (i == j) {
        if (x->n == x->cap) {
            x->cap = x->cap ? 2 * x->cap : 4;
            x->v = realloc(x->v, x->cap * sizeof *x->v);
            if (x->v == NULL)
                exit(1);
        }
        for (size_t m = x->n; m > i; m--)
            x->v[m] = x->v[m - 1];
        x->n++;
    } else if (j > i + 1) {
        for (size_t m = j; m < x->n; m++)
            x->v[m - (j - i - 1)] = x->v[m];
        x->n -= j - i - 1;
    }
    x->v[i] = (span){ a, e };
}

/* The first block of x ending above p (x->n if none). */
static size_t first_end_above(const set *x, size_t p)
{
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (x->v[mid].end <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The lowest y >= p with [y, y + size) free in x. */
static size_t next_room(const set *x, size_t p, size_t size)
{
    size_t i = first_end_above(x, p);
    if (i == x->n || (x->v[i].start > p && x->v[i].start - p >= size))
        return p;
    while (i + 1 < x->n && x->v[i + 1].start - x->v[i].end < size)
        i++;
    return x->v[i].end;
}

/* The leapfrog over sets[0 .. m): counts its rounds, and returns the gaps it found. */
static size_t leapfrog(set *const *sets, size_t m, size_t size, double *rounds)
{
    size_t top = 0, x = 0, gaps = 0;
    for (size_t c = 0; c < m; c++)
        top = sets[c]->v[sets[c]->n - 1].end > top ? sets[c]->v[sets[c]->n - 1].end : top;
    for (;;) {
        for (size_t y = x + 1; y != x;) {
            y = x;
            *rounds += 1;
            for (size_t c = 0; c < m; c++) {
                const size_t z = next_room(sets[c], x, size);
                x = z > x ? z : x;
            }
        }
        if (x >= top)
            return gaps;
        gaps++;
        size_t end = SIZE_MAX;
        for (size_t c = 0; c < m; c++) {
            const size_t i = first_end_above(sets[c], x);
            end = i < sets[c]->n && sets[c]->v[i].start < end ? sets[c]->v[i].start : end;
        }
        x = end;
    }
}

/* A segment tree over nodes 0 .. leaves - 1: own[v] the tensors whose canonical decomposition
 * holds v, sub[v] those stored at v or below it. */
typedef struct time_tree {
    size_t leaves;
    set *own, *sub;
    set *q[512];
    size_t n_q;
} time_tree;

/* The canonical nodes of [lo, hi]; returns how many. */
static size_t canonical(const time_tree *tt, size_t lo, size_t hi, size_t *canon)
{
    size_t n_canon = 0;
    for (size_t l = lo + tt->leaves, r = hi + tt->leaves + 1; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            canon[n_canon++] = l++;
        if (r & 1)
            canon[n_canon++] = --r;
    }
    return n_canon;
}

/* tt->q: the non-empty sets a lifetime [lo, hi] reads, each once: sub of its canonical nodes,
 * own of their strict ancestors. */
static void tree_query(time_tree *tt, size_t lo, size_t hi)
{
    size_t canon[128];
    const size_t n_canon = canonical(tt, lo, hi, canon);
    tt->n_q = 0;
    for (size_t c = 0; c < n_canon; c++) {
        if (tt->sub[canon[c]].n > 0)
            tt->q[tt->n_q++] = &tt->sub[canon[c]];
        for (size_t v = canon[c] >> 1; v >= 1; v >>= 1) {
            int seen = tt->own[v].n == 0;
            for (size_t k = 0; k < tt->n_q && !seen; k++)
                seen = tt->q[k] == &tt->own[v];
            if (!seen)
                tt->q[tt->n_q++] = &tt->own[v];
        }
    }
}

/* Stores a tensor of lifetime [lo, hi] at addresses [a, e). */
static void tree_add(time_tree *tt, size_t lo, size_t hi, size_t a, size_t e)
{
    size_t canon[128];
    const size_t n_canon = canonical(tt, lo, hi, canon);
    for (size_t c = 0; c < n_canon; c++) {
        set_add(&tt->own[canon[c]], a, e);
        for (size_t v = canon[c]; v >= 1; v >>= 1)
            set_add(&tt->sub[v], a, e);
    }
}

#define CLASSES 8

/* The cls8 columns for placement k (tensor q) of order. */
static void time_classes(const tp_tensor_lifetime *t, const size_t *off, const size_t *order,
                         size_t k, size_t n, span *s, double *read, double *gaps)
{
    const tp_tensor_lifetime *tq = &t[order[k]];
    for (size_t c = 0; c < CLASSES; c++) {
        size_t count = 0, nb = 0, first = SIZE_MAX, last = 0;
        for (size_t p = 0; p < k; p++) {
            const tp_tensor_lifetime *x = &t[order[p]];
            if (x->first_use * CLASSES / n != c) /* first uses lie in [0, n) */
                continue;
            count++;
            first = x->first_use < first ? x->first_use : first;
            last = x->last_use > last ? x->last_use : last;
            if (meet(x, tq))
                s[nb++] = (span){ off[order[p]], off[order[p]] + x->size };
        }
        if (count > 0 && first <= tq->last_use && last >= tq->first_use)
            *read += (double)count;
        size_t fitting = 0;
        if (nb > 0) {
            qsort(s, nb, sizeof *s, by_start);
            coalesce(s, nb, tq->size, &fitting);
        }
        *gaps += (double)fitting;
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
    size_t fitting = 0, mismatches = 0;
    double sets = 0, setblk = 0, rounds = 0, probes = 0, least = 0, cls_read = 0, cls_gaps = 0;
    time_tree tt = { 1, NULL, NULL, { NULL }, 0 };
    while (tt.leaves < n + n / 4 + 1)
        tt.leaves *= 2;
    tt.own = calloc(2 * tt.leaves, sizeof *tt.own);
    tt.sub = calloc(2 * tt.leaves, sizeof *tt.sub);
    if (tt.own == NULL || tt.sub == NULL)
        exit(1);
    for (size_t k = 0; k < n; k++) {
        const size_t fitting_before = fitting;
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
        tree_query(&tt, t[q].first_use, t[q].last_use);
        sets += (double)tt.n_q;
        for (size_t c = 0; c < tt.n_q; c++)
            setblk += (double)tt.q[c]->n;
        double r = 0;
        const size_t gaps = tt.n_q > 0 ? leapfrog(tt.q, tt.n_q, t[q].size, &r) : 0;
        mismatches += gaps != fitting - fitting_before;
        rounds += r;
        probes += r * (double)tt.n_q;
        least += (double)gaps * (double)tt.n_q;
        time_classes(t, off, order, k, n, s, &cls_read, &cls_gaps);
        tree_add(&tt, t[q].first_use, t[q].last_use, off[q], off[q] + t[q].size);
        if (k % 10 == 5) {
            for (size_t p = 0; p < k; p++)
                sorted[p] = order[p];
            qsort(sorted, k, sizeof *sorted, by_offset);
            leaves(t, sorted, k, q, 16, &runs16, &hit16);
            leaves(t, sorted, k, q, 4, &runs4, &hit4);
        }
    }
    const double d = (double)n;
    printf("%8zu %10.0f %10.0f %10.0f %9.0f %8.1f %8.1f%% %8.1f%% %6.1f %7.0f %7.1f %8.0f %7.0f"
           " %8.0f %8.0f%s\n", n,
           placed / d, window / d, conflicts / d, blocks / d, (double)fitting / d,
           100 * hit16 / runs16, 100 * hit4 / runs4, sets / d, setblk / d, rounds / d,
           probes / d, least / d, cls_read / d, cls_gaps / d, mismatches ? " MISMATCH" : "");
    for (size_t v = 0; v < 2 * tt.leaves; v++) {
        free(tt.own[v].v);
        free(tt.sub[v].v);
    }
    free(tt.own);
    free(tt.sub);
    free(t);
    free(off);
    free(order);
    free(sorted);
    free(s);
}

int main(int argc, char **argv)
{
    printf("%8s %10s %10s %10s %9s %8s %9s %9s %6s %7s %7s %8s %7s %8s %8s\n", "n", "placed",
           "window", "conflicts", "blocks", "fitting", "leaves16", "leaves4", "sets", "setblk",
           "rounds", "probes", "least", "cls8read", "cls8gaps");
    if (argc < 2) {
        measure(10000);
        measure(30000);
    }
    for (int i = 1; i < argc; i++)
        measure((size_t)strtoull(argv[i], NULL, 10));
    return 0;
}
