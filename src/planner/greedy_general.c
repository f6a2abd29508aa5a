/* Per-tensor alignments and MiniMalloc's gaps (docs/planner.md, "Alignment and gaps"): the
 * checked constraints, the peak they imply, the conflict rule and a greedy pass under it. */
#include "planner/planner_internal.h"

#include "common/error.h"
#include "common/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tp_general_free(tp_general *g)
{
    free(g->align);
    free(g->seg_start);
    free(g->segs);
    memset(g, 0, sizeof *g);
}

static int by_tensor_then_first(const void *pa, const void *pb)
{
    const tp_tensor_gap *a = pa, *b = pb;
    if (a->tensor != b->tensor)
        return a->tensor < b->tensor ? -1 : 1;
    return (a->first > b->first) - (a->first < b->first);
}

static tp_status check_gap(const tp_tensor_lifetime *t, size_t count, const tp_tensor_gap *gp,
                           size_t k)
{
    if (gp->tensor >= count)
        return tp_fail(TP_ERR_INVALID, "gap %zu: tensor %zu of %zu", k, gp->tensor, count);
    const tp_tensor_lifetime *x = &t[gp->tensor];
    if (gp->first > gp->last || gp->first < x->first_use || gp->last > x->last_use)
        return tp_fail(TP_ERR_INVALID,
                       "tensor %zu: gap [%zu, %zu] is not inside its lifetime [%zu, %zu]",
                       gp->tensor, gp->first, gp->last, x->first_use, x->last_use);
    if (gp->has_window && (gp->window_lo > gp->window_hi || gp->window_hi > x->size))
        return tp_fail(TP_ERR_INVALID,
                       "tensor %zu: gap window [%zu, %zu) is not inside its %zu bytes",
                       gp->tensor, gp->window_lo, gp->window_hi, x->size);
    return TP_OK;
}

static void push_seg(tp_general *g, size_t *n, size_t t0, size_t t1, size_t lo, size_t hi,
                     int active)
{
    g->segs[(*n)++] = (tp_seg){ t0, t1, lo, hi, active };
}

/* Tensor i's pieces: its gaps (sorted, checked apart) and the full window in between. */
static tp_status build_segments(const tp_tensor_lifetime *t, tp_general *g,
                                const tp_tensor_gap *gaps, size_t n_gaps)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < g->count; i++) {
        g->seg_start[i] = n;
        size_t cursor = t[i].first_use;
        int done = 0; /* the cursor passed SIZE_MAX */
        for (; k < n_gaps && gaps[k].tensor == i; k++) {
            const tp_tensor_gap *gp = &gaps[k];
            if (done || gp->first < cursor)
                return tp_fail(TP_ERR_INVALID, "tensor %zu: gaps overlap at node %zu", i,
                               gp->first);
            /* a tensor of size 0 has no pieces, but its gaps are checked all the same */
            if (t[i].size > 0 && gp->first > cursor)
                push_seg(g, &n, cursor, gp->first - 1, 0, t[i].size, 1);
            if (t[i].size > 0)
                push_seg(g, &n, gp->first, gp->last, gp->window_lo * (gp->has_window != 0),
                         gp->window_hi * (gp->has_window != 0), gp->has_window != 0);
            done = gp->last == SIZE_MAX;
            cursor = gp->last + !done;
        }
        if (t[i].size > 0 && !done && cursor <= t[i].last_use)
            push_seg(g, &n, cursor, t[i].last_use, 0, t[i].size, 1);
    }
    g->seg_start[g->count] = n;
    return TP_OK;
}

tp_status tp_general_init(const tp_tensor_lifetime *t, size_t count, const tp_plan_options *o,
                          size_t alignment, tp_general *g)
{
    memset(g, 0, sizeof *g);
    g->count = count;
    const size_t n_gaps = o->gap_count;
    if (n_gaps > 0 && o->gaps == NULL)
        return tp_fail(TP_ERR_INVALID, "gap_count %zu with no gaps", n_gaps);
    if (count > SIZE_MAX / sizeof(tp_seg) / 4 || n_gaps > SIZE_MAX / sizeof(tp_seg) / 4)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: scratch size overflows size_t", count);
    g->align = malloc((count ? count : 1) * sizeof *g->align);
    g->seg_start = malloc((count + 1) * sizeof *g->seg_start);
    g->segs = malloc((count + 2 * n_gaps + 1) * sizeof *g->segs);
    tp_tensor_gap *sorted = malloc((n_gaps ? n_gaps : 1) * sizeof *sorted);
    tp_status st = TP_OK;
    if (!g->align || !g->seg_start || !g->segs || !sorted) {
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", count);
        goto out;
    }
    for (size_t i = 0; i < count; i++) {
        const size_t own = o->alignments != NULL && o->alignments[i] > 1 ? o->alignments[i] : 1;
        g->align[i] = tp_lcm_size(alignment, own);
        if (g->align[i] == SIZE_MAX && own != SIZE_MAX && alignment != SIZE_MAX) {
            st = tp_fail(TP_ERR_OVERFLOW, "tensor %zu: alignment %zu combined with %zu overflows",
                         i, own, alignment);
            goto out;
        }
    }
    for (size_t k = 0; k < n_gaps && st == TP_OK; k++)
        st = check_gap(t, count, &o->gaps[k], k);
    if (st != TP_OK)
        goto out;
    if (n_gaps > 0)
        memcpy(sorted, o->gaps, n_gaps * sizeof *sorted);
    if (n_gaps > 1)
        qsort(sorted, n_gaps, sizeof *sorted, by_tensor_then_first);
    g->has_gaps = n_gaps > 0;
    st = build_segments(t, g, sorted, n_gaps);
out:
    free(sorted);
    if (st != TP_OK)
        tp_general_free(g);
    return st;
}

/* A and B of tensors i and j: at every node where both use a window, j above i needs
 * oj >= oi + A and i above j needs oi >= oj + B (MiniMalloc's effective sizes). Returns 0
 * when there is no such node (they never conflict). */
static int pair_reach(const tp_general *g, size_t i, size_t j, tp_i128 *a, tp_i128 *b)
{
    const tp_seg *p = g->segs + g->seg_start[i], *pe = g->segs + g->seg_start[i + 1];
    const tp_seg *q = g->segs + g->seg_start[j], *qe = g->segs + g->seg_start[j + 1];
    int any = 0;
    while (p < pe && q < qe) {
        if (p->t1 < q->t0) {
            p++;
            continue;
        }
        if (q->t1 < p->t0) {
            q++;
            continue;
        }
        if (p->active && q->active) {
            const tp_i128 ra = (tp_i128)p->hi - (tp_i128)q->lo;
            const tp_i128 rb = (tp_i128)q->hi - (tp_i128)p->lo;
            if (!any || ra > *a)
                *a = ra;
            if (!any || rb > *b)
                *b = rb;
            any = 1;
        }
        if (p->t1 < q->t1)
            p++;
        else
            q++;
    }
    return any;
}

int tp_general_reach(const tp_general *g, size_t i, size_t j, size_t *a, size_t *b)
{
    tp_i128 ra = 0, rb = 0;
    if (!pair_reach(g, i, j, &ra, &rb))
        return 0;
    *a = ra > 0 ? (size_t)ra : 0; /* at most the size of i: hi <= size, lo >= 0 */
    *b = rb > 0 ? (size_t)rb : 0;
    return 1;
}

int tp_general_reach_signed(const tp_general *g, size_t i, size_t j, tp_i128 *a, tp_i128 *b)
{
    return pair_reach(g, i, j, a, b);
}

int tp_general_compatible(const tp_tensor_lifetime *t, const tp_general *g, size_t i, size_t oi,
                          size_t j, size_t oj)
{
    (void)t;
    tp_i128 a = 0, b = 0;
    if (!pair_reach(g, i, j, &a, &b))
        return 1;
    return (tp_i128)oj >= (tp_i128)oi + a || (tp_i128)oi >= (tp_i128)oj + b;
}

typedef struct peak_event {
    size_t time;
    int end_after_max; /* a removal after node SIZE_MAX: never happens */
    int add;
    size_t bytes;
} peak_event;

static int by_event(const void *pa, const void *pb)
{
    const peak_event *a = pa, *b = pb;
    if (a->end_after_max != b->end_after_max)
        return a->end_after_max - b->end_after_max;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return a->add - b->add; /* removals first: lifetimes are inclusive */
}

tp_status tp_general_peak(const tp_tensor_lifetime *t, const tp_general *g, size_t *peak)
{
    (void)t;
    const size_t n = g->seg_start[g->count];
    peak_event *ev = malloc((2 * n + 1) * sizeof *ev);
    if (ev == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", g->count);
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        const tp_seg *s = &g->segs[k];
        if (!s->active || s->hi <= s->lo)
            continue;
        ev[m++] = (peak_event){ s->t0, 0, 1, s->hi - s->lo };
        ev[m++] = (peak_event){ s->t1 + (s->t1 != SIZE_MAX), s->t1 == SIZE_MAX, 0, s->hi - s->lo };
    }
    if (m > 1)
        qsort(ev, m, sizeof *ev, by_event);
    size_t live = 0, best = 0;
    tp_status st = TP_OK;
    for (size_t k = 0; k < m; k++) {
        if (!ev[k].add) {
            live -= ev[k].bytes;
            continue;
        }
        if (ev[k].bytes > SIZE_MAX - live) {
            st = tp_fail(TP_ERR_OVERFLOW, "live bytes at node %zu exceed SIZE_MAX", ev[k].time);
            break;
        }
        live += ev[k].bytes;
        best = live > best ? live : best;
    }
    free(ev);
    *peak = best;
    return st;
}

typedef struct forbid {
    tp_i128 lo, hi; /* offsets [lo, hi) are taken */
} forbid;

static int by_lo(const void *pa, const void *pb)
{
    const forbid *a = pa, *b = pb;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

static tp_i128 round_up_i(tp_i128 x, size_t a)
{
    const tp_i128 r = x % (tp_i128)a;
    return r == 0 ? x : x + ((tp_i128)a - r);
}

/* The offset of tensor x among the placed tensors: see tp_general_place. */
static tp_i128 choose_offset(forbid *f, size_t nf, size_t align, tp_gap_rule rule)
{
    if (nf > 1)
        qsort(f, nf, sizeof *f, by_lo);
    tp_i128 cur = 0, best = -1, best_room = 0;
    for (size_t k = 0; k < nf; k++) {
        if (f[k].lo > cur) {
            const tp_i128 o = round_up_i(cur, align);
            if (o < f[k].lo) {
                if (rule == TP_GAP_FIRST_FIT)
                    return o;
                if (best < 0 || f[k].lo - o < best_room) {
                    best = o;
                    best_room = f[k].lo - o;
                }
            }
        }
        if (f[k].hi > cur)
            cur = f[k].hi;
    }
    return best >= 0 ? best : round_up_i(cur, align);
}

tp_status tp_general_place(const tp_tensor_lifetime *t, const tp_general *g, const size_t *order,
                           size_t n_order, tp_gap_rule rule, const tp_greedy_ticker *ticker,
                           size_t *offsets, size_t *arena)
{
    double last_tick = ticker != NULL ? tp_clock_seconds() : 0;
    for (size_t i = 0; i < g->count; i++)
        offsets[i] = 0;
    *arena = 0;
    forbid *f = NULL;
    size_t cap = 0;
    tp_status st = TP_OK;
    for (size_t k = 0; k < n_order && st == TP_OK; k++) {
        const size_t x = order[k];
        if ((k & 63u) == 63u && tp_ticker_poll(ticker, k, n_order, &last_tick)) {
            st = tp_greedy_timeout(k, n_order);
            break;
        }
        size_t nf = 0;
        for (size_t p = 0; p < k; p++) {
            const size_t i = order[p];
            tp_i128 a = 0, b = 0;
            if (t[i].first_use > t[x].last_use || t[x].first_use > t[i].last_use ||
                !pair_reach(g, i, x, &a, &b))
                continue;
            const tp_i128 lo = (tp_i128)offsets[i] - b + 1, hi = (tp_i128)offsets[i] + a;
            if (hi <= lo || hi <= 0)
                continue;
            if ((st = TP_GROW(&f, &cap, nf + 1)) != TP_OK)
                break;
            f[nf++] = (forbid){ lo < 0 ? 0 : lo, hi };
        }
        if (st != TP_OK)
            break;
        const tp_i128 o = choose_offset(f, nf, g->align[x], rule);
        if (o + (tp_i128)t[x].size > (tp_i128)SIZE_MAX) {
            st = tp_fail(TP_ERR_OVERFLOW, "tensor %zu: offset + size exceeds SIZE_MAX", x);
            break;
        }
        offsets[x] = (size_t)o;
        if (offsets[x] + t[x].size > *arena)
            *arena = offsets[x] + t[x].size;
    }
    free(f);
    if (st != TP_OK) {
        for (size_t i = 0; i < g->count; i++)
            offsets[i] = 0;
        *arena = 0;
    }
    return st;
}

tp_status tp_peak_live_bytes_ex(const tp_tensor_lifetime *tensors, size_t count,
                                const tp_plan_options *options, size_t *peak)
{
    if (options == NULL || options->gap_count == 0)
        return tp_peak_live_bytes(tensors, count, peak);
    if (peak == NULL)
        return tp_fail(TP_ERR_INVALID, "peak is NULL");
    tp_status st = tp_check_lifetimes(tensors, count);
    if (st != TP_OK)
        return st;
    tp_plan_options o = *options;
    o.alignments = NULL; /* alignments do not change the bytes in use */
    tp_general g;
    if ((st = tp_general_init(tensors, count, &o, 1, &g)) != TP_OK)
        return st;
    st = tp_general_peak(tensors, &g, peak);
    tp_general_free(&g);
    return st;
}
