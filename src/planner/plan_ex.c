/* tp_plan_offsets_ex: strategies, capacity, alignment, budgets and the report. */
#include "planner/planner_internal.h"
#include "planner/planner_perf.h"

#include "common/error.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tp_plan_options_init(tp_plan_options *options)
{
    if (options == NULL)
        return;
    memset(options, 0, sizeof *options);
    options->alignment = 1;
    options->strategy = TP_PLAN_GREEDY;
}

/* The portfolio: deterministic orders, each a sort key list with input order breaking ties. */
typedef enum order_kind {
    ORD_SIZE = 0,  /* decreasing size: the seed's order                       */
    ORD_AREA,      /* decreasing size x lifetime length                       */
    ORD_LENGTH,    /* decreasing lifetime length, then decreasing size         */
    ORD_START,     /* increasing first use, then decreasing size               */
    ORD_END,       /* decreasing last use, then decreasing size                */
} order_kind;

typedef struct portfolio_entry {
    order_kind order;
    tp_gap_rule rule;
    const char *name;
} portfolio_entry;

static const portfolio_entry portfolio[] = {
    { ORD_SIZE, TP_GAP_BEST_FIT, "greedy size best-fit" },
    { ORD_AREA, TP_GAP_BEST_FIT, "greedy area best-fit" },
    { ORD_LENGTH, TP_GAP_BEST_FIT, "greedy length best-fit" },
    { ORD_START, TP_GAP_BEST_FIT, "greedy start best-fit" },
    { ORD_END, TP_GAP_BEST_FIT, "greedy end best-fit" },
    { ORD_SIZE, TP_GAP_FIRST_FIT, "greedy size first-fit" },
    { ORD_AREA, TP_GAP_FIRST_FIT, "greedy area first-fit" },
    { ORD_LENGTH, TP_GAP_FIRST_FIT, "greedy length first-fit" },
    { ORD_START, TP_GAP_FIRST_FIT, "greedy start first-fit" },
};
#define PORTFOLIO_SIZE (sizeof portfolio / sizeof portfolio[0])

/* Node budget of one probe of the minimising search (a fraction of a second). */
#define EXACT_PROBE_NODES 50000ULL

typedef struct order_key {
    size_t k1, k2, index;
} order_key;

static int by_keys(const void *pa, const void *pb)
{
    const order_key *a = pa, *b = pb;
    if (a->k1 != b->k1)
        return a->k1 < b->k1 ? -1 : 1;
    if (a->k2 != b->k2)
        return a->k2 < b->k2 ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static size_t saturating_mul(size_t a, size_t b)
{
    return (b != 0 && a > SIZE_MAX / b) ? SIZE_MAX : a * b;
}

/* Fills order[] with the non-zero-size tensors in the given order; returns their number. */
static size_t make_order(const tp_tensor_lifetime *t, size_t count, order_kind kind,
                         order_key *keys, size_t *order)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (t[i].size == 0)
            continue;
        const size_t len = t[i].last_use - t[i].first_use + 1;
        order_key k = { 0, 0, i };
        switch (kind) {
        case ORD_SIZE: k.k1 = SIZE_MAX - t[i].size; break;
        case ORD_AREA:
            k.k1 = SIZE_MAX - saturating_mul(t[i].size, len);
            k.k2 = SIZE_MAX - t[i].size;
            break;
        case ORD_LENGTH:
            k.k1 = SIZE_MAX - len;
            k.k2 = SIZE_MAX - t[i].size;
            break;
        case ORD_START:
            k.k1 = t[i].first_use;
            k.k2 = SIZE_MAX - t[i].size;
            break;
        case ORD_END:
            k.k1 = SIZE_MAX - t[i].last_use;
            k.k2 = SIZE_MAX - t[i].size;
            break;
        }
        keys[n++] = k;
    }
    qsort(keys, n, sizeof *keys, by_keys);
    for (size_t k = 0; k < n; k++)
        order[k] = keys[k].index;
    return n;
}

static void call_progress(const tp_plan_options *o, int have, size_t best, size_t lb,
                          double start, unsigned long long nodes)
{
    if (o->progress == NULL)
        return;
    tp_plan_progress p = { have, have ? best : 0, lb, tp_plan_clock() - start, nodes };
    o->progress(&p, o->user);
}

/* One exact search under the given limit and budget; a plan it finds becomes the best one. */
static tp_status search_and_adopt(const tp_tensor_lifetime *tensors, size_t count,
                                  tp_exact_params *xp, size_t limit, int minimise,
                                  unsigned long long node_limit, tp_plan_report *rep,
                                  size_t *best, size_t *offsets, size_t *trial,
                                  tp_exact_result *xr)
{
    xp->limit = limit;
    xp->minimise = minimise;
    xp->node_limit = node_limit;
    xp->lower_bound = rep->lower_bound;
    xp->known_best = *best;
    xp->nodes_before = rep->nodes_explored;
    tp_status st = tp_exact_search(tensors, count, xp, trial, xr);
    if (st != TP_OK)
        return st;
    rep->nodes_explored += xr->nodes;
    if (xr->found) {
        if (count > 0)
            memcpy(offsets, trial, count * sizeof *offsets);
        *best = xr->arena;
        rep->method = "exact search";
        rep->strategy = TP_PLAN_EXACT;
    }
    return TP_OK;
}

tp_status tp_plan_offsets_ex(const tp_tensor_lifetime *tensors, size_t count,
                             const tp_plan_options *options, size_t *offsets,
                             size_t *arena_size, tp_plan_report *report)
{
    const double start = tp_plan_clock();
    tp_plan_options defaults;
    tp_plan_options_init(&defaults);
    const tp_plan_options *o = options != NULL ? options : &defaults;
    tp_plan_report rep;
    memset(&rep, 0, sizeof rep);
    rep.strategy = TP_PLAN_GREEDY;
    rep.method = "none";
    if (report != NULL)
        *report = rep;

    tp_status st = tp_check_plan_args(tensors, count, offsets, arena_size);
    if (st != TP_OK)
        return st;
    const size_t align = o->alignment == 0 ? 1 : o->alignment;
    if ((align & (align - 1)) != 0)
        return tp_fail(TP_ERR_INVALID, "alignment %zu is not a power of two", align);
    if (o->strategy != TP_PLAN_GREEDY && o->strategy != TP_PLAN_PORTFOLIO &&
        o->strategy != TP_PLAN_EXACT)
        return tp_fail(TP_ERR_INVALID, "unknown strategy %d", (int)o->strategy);
    if (!(o->time_limit_seconds >= 0) || isinf(o->time_limit_seconds))
        return tp_fail(TP_ERR_INVALID, "time limit %g is not a finite number >= 0",
                       o->time_limit_seconds);
    const double deadline = o->time_limit_seconds > 0 ? start + o->time_limit_seconds : 0;

    size_t peak = 0;
    st = tp_peak_live_bytes(tensors, count, &peak);
    if (st != TP_OK)
        return st;
    rep.lower_bound = peak;

    if (count > SIZE_MAX / (sizeof(order_key) + 2 * sizeof(size_t)))
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: scratch size overflows size_t", count);
    const size_t alloc_n = count ? count : 1;
    order_key *keys = malloc(alloc_n * sizeof *keys);
    size_t *order = malloc(alloc_n * sizeof *order);
    size_t *trial = malloc(alloc_n * sizeof *trial);
    if (keys == NULL || order == NULL || trial == NULL) {
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", count);
        goto out;
    }

    /* Greedy, or the portfolio (also the upper bound an exact search starts from). */
    const size_t n_entries = o->strategy == TP_PLAN_GREEDY ? 1 : PORTFOLIO_SIZE;
    size_t best = SIZE_MAX;
    int have = 0;
    double last_progress = start;
    for (size_t p = 0; p < n_entries; p++) {
        if (p > 0 && deadline > 0 && tp_plan_clock() >= deadline) {
            rep.timed_out = 1;
            break;
        }
        size_t n = make_order(tensors, count, portfolio[p].order, keys, order);
        size_t arena = 0;
        st = tp_greedy_place(tensors, count, order, n, align, portfolio[p].rule, trial, &arena);
        if (st != TP_OK)
            goto out;
        if (!have || arena < best) {
            have = 1;
            best = arena;
            if (count > 0)
                memcpy(offsets, trial, count * sizeof *offsets);
            rep.method = portfolio[p].name;
            rep.strategy = n_entries == 1 ? TP_PLAN_GREEDY : TP_PLAN_PORTFOLIO;
        }
        /* a portfolio over a million tensors takes seconds: show it is under way */
        if (o->progress != NULL && tp_plan_clock() - last_progress >= 0.1) {
            call_progress(o, 1, best, peak, start, 0);
            last_progress = tp_plan_clock();
        }
    }
    rep.arena_size = best;
    rep.proven_optimal = best == peak;

    const int decision = o->capacity > 0;
    if (o->strategy == TP_PLAN_EXACT && !rep.proven_optimal && !rep.timed_out &&
        !(decision && best <= o->capacity) && !(decision && peak > o->capacity)) {
        call_progress(o, 1, best, peak, start, 0);
        tp_exact_params xp;
        memset(&xp, 0, sizeof xp);
        xp.alignment = align;
        xp.start = start;
        xp.deadline = deadline;
        xp.progress = o->progress;
        xp.user = o->user;
        tp_exact_result xr;
        if (decision) {
            st = search_and_adopt(tensors, count, &xp, o->capacity, 0, 0, &rep, &best, offsets,
                                  trial, &xr);
            if (st != TP_OK)
                goto out;
            rep.timed_out = xr.timed_out;
            if (!xr.found && xr.complete) {
                rep.proven_infeasible = 1;
                if (o->capacity + 1 > rep.lower_bound)
                    rep.lower_bound = o->capacity + 1;
            }
        } else {
            /* Probes under a node budget first: at the peak (the tightest limit prunes
             * hardest, and a plan there is optimal), then halving the gap between what is
             * known to be too tight and the best plan so far; a probe that proves a limit
             * impossible also raises the lower bound. Then one complete search below the best
             * plan, to prove it optimal or improve it, until the time limit. */
            size_t soft_lo = peak;
            while (soft_lo < best) {
                if (deadline > 0 && tp_plan_clock() >= deadline) {
                    rep.timed_out = 1;
                    break;
                }
                const size_t limit = soft_lo == peak ? peak : soft_lo + (best - 1 - soft_lo) / 2;
                st = search_and_adopt(tensors, count, &xp, limit, 0, EXACT_PROBE_NODES, &rep,
                                      &best, offsets, trial, &xr);
                if (st != TP_OK)
                    goto out;
                if (!xr.found) {
                    if (xr.complete && limit + 1 > rep.lower_bound)
                        rep.lower_bound = limit + 1;
                    soft_lo = limit + 1;
                }
                call_progress(o, 1, best, rep.lower_bound, start, rep.nodes_explored);
            }
            if (best <= rep.lower_bound) {
                rep.proven_optimal = 1;
            } else if (!rep.timed_out) {
                st = search_and_adopt(tensors, count, &xp, best - 1, 1, 0, &rep, &best, offsets,
                                      trial, &xr);
                if (st != TP_OK)
                    goto out;
                rep.timed_out = xr.timed_out;
                if (xr.complete) {
                    rep.proven_optimal = 1;
                    rep.lower_bound = best;
                }
            }
        }
        rep.arena_size = best;
        call_progress(o, 1, best, rep.lower_bound, start, rep.nodes_explored);
    }
    if (decision && peak > o->capacity)
        rep.proven_infeasible = 1;
    if (best == rep.lower_bound)
        rep.proven_optimal = 1;
    rep.seconds = tp_plan_clock() - start;
    *arena_size = best == SIZE_MAX ? 0 : best;
    if (count == 0)
        *arena_size = rep.arena_size = 0;
    if (decision && *arena_size > o->capacity) {
        st = tp_fail(TP_ERR_INFEASIBLE,
                     rep.proven_infeasible
                         ? "no plan fits capacity %zu (proven; best found %zu, peak %zu)"
                         : "no plan within capacity %zu was found (best %zu, peak %zu); "
                           "not proven impossible",
                     o->capacity, *arena_size, peak);
    }

out:
    if (report != NULL)
        *report = rep;
    free(keys);
    free(order);
    free(trial);
    return st;
}
