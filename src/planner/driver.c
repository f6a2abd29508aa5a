/* tp_plan_offsets_ex, the planner's driver: strategies, capacity, alignment, budgets and the
 * report. The greedy orders it runs are the portfolio's (portfolio.c). */
#include "planner/planner_internal.h"

#include "common/error.h"
#include "common/clock.h"

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

/* Node budget of one probe of the minimising search (a fraction of a second). */
#define EXACT_PROBE_NODES 50000ULL

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
    if (xr->found || (xr->repaired && xr->arena < *best)) {
        if (count > 0)
            memcpy(offsets, trial, count * sizeof *offsets);
        *best = xr->arena;
        rep->method = xr->found ? "exact search" : "exact search, deepest placement repaired";
        rep->strategy = TP_PLAN_EXACT;
    }
    return TP_OK;
}

/* The peak of live bytes (of windows, with gaps) and, for per-tensor constraints, g. */
static tp_status plan_bound(const tp_tensor_lifetime *tensors, size_t count,
                            const tp_plan_options *o, size_t align, int is_general,
                            tp_general *g, size_t *peak)
{
    memset(g, 0, sizeof *g);
    tp_status st;
    if (is_general && (st = tp_general_init(tensors, count, o, align, g)) != TP_OK)
        return st;
    st = is_general ? tp_general_peak(tensors, g, peak) : tp_peak_live_bytes(tensors, count, peak);
    if (st != TP_OK)
        tp_general_free(g);
    return st;
}

/* The time sweep's share of the time left when a time limit is set, and its node budget
 * when none is (docs/exact-solver.md, "Tight problems: the time sweep"). */
#define SWEEP_TIME_SHARE 0.4
#define SWEEP_NODES (1ULL << 23)

/* Tight problems (every node's load is the peak) first go through the time sweep at the
 * peak: a plan there is optimal; an exhausted sweep proves the peak + 1. *done: nothing is
 * left to search (a plan at the peak, or a decision at the peak proven infeasible). */
static tp_status run_sweep(const tp_tensor_lifetime *tensors, size_t count,
                           const tp_plan_options *o, double start, double deadline,
                           size_t peak, tp_plan_report *rep, size_t *best, size_t *offsets,
                           size_t *trial, int *done)
{
    *done = 0;
    tp_sweep_ticker ticker = { o->progress, o->user, start, tp_clock_seconds(), 0.1, 1, *best,
                               rep->lower_bound };
    tp_sweep_params sp = { peak, 0, 0, o->progress != NULL ? &ticker : NULL,
                           rep->nodes_explored };
    if (deadline > 0) {
        const double now = tp_clock_seconds();
        sp.deadline = now + (deadline > now ? (deadline - now) * SWEEP_TIME_SHARE : 0);
    } else {
        sp.node_limit = SWEEP_NODES;
    }
    tp_sweep_result sr;
    tp_status st = tp_sweep_search(tensors, count, &sp, trial, &sr);
    if (st != TP_OK || !sr.applies)
        return st;
    rep->nodes_explored += sr.nodes;
    if (sr.found) {
        if (count > 0)
            memcpy(offsets, trial, count * sizeof *offsets);
        *best = peak;
        rep->method = sr.by_cuts ? "exact search, time sweep with cuts"
                                 : "exact search, time sweep";
        rep->strategy = TP_PLAN_EXACT;
        rep->proven_optimal = 1;
        *done = 1;
    } else if (sr.repaired && sr.arena < *best) {
        if (count > 0)
            memcpy(offsets, trial, count * sizeof *offsets);
        *best = sr.arena;
        rep->method = "exact search, time sweep with cuts, parts repaired";
        rep->strategy = TP_PLAN_EXACT;
    }
    if (!sr.found && sr.complete) {
        if (peak + 1 > rep->lower_bound)
            rep->lower_bound = peak + 1;
        if (o->capacity > 0) {
            rep->proven_infeasible = 1;
            *done = 1;
        }
    }
    if (deadline > 0 && tp_clock_seconds() >= deadline) {
        rep->timed_out = 1;
        *done = 1;
    }
    rep->arena_size = *best;
    return TP_OK;
}

/* The exact search after the portfolio (docs/exact-solver.md): a decision at the capacity,
 * or probes and then a complete search that minimises the arena. */
static tp_status run_exact(const tp_tensor_lifetime *tensors, size_t count,
                           const tp_plan_options *o, size_t align, const tp_general *g,
                           double start, double deadline, tp_plan_report *rep, size_t *best,
                           size_t *offsets, size_t *trial)
{
    const int decision = o->capacity > 0;
    tp_status st = TP_OK;
    tp_plan_call_progress(o, 1, *best, rep->lower_bound, start, rep->nodes_explored);
    tp_exact_params xp;
    memset(&xp, 0, sizeof xp);
    xp.alignment = align;
    xp.alignments = g->align; /* NULL unless per-tensor */
    xp.general = g->has_gaps ? g : NULL;
    xp.hint = offsets; /* the best plan so far, kept there by search_and_adopt */
    xp.start = start;
    xp.deadline = deadline;
    xp.progress = o->progress;
    xp.user = o->user;
    tp_exact_result xr;
    if (decision) {
        st = search_and_adopt(tensors, count, &xp, o->capacity, 0, 0, rep, best, offsets,
                              trial, &xr);
        if (st != TP_OK)
            return st;
        rep->timed_out = xr.timed_out;
        if (!xr.found && xr.complete) {
            rep->proven_infeasible = 1;
            if (o->capacity + 1 > rep->lower_bound)
                rep->lower_bound = o->capacity + 1;
        }
    } else {
        /* Probes under a node budget first: at the peak (the tightest limit prunes
         * hardest, and a plan there is optimal), then halving the gap between what is
         * known to be too tight and the best plan so far; a probe that proves a limit
         * impossible also raises the lower bound. Then one complete search below the best
         * plan, to prove it optimal or improve it, until the time limit. */
        const size_t first_lo = rep->lower_bound; /* the peak, or more after the sweep */
        size_t soft_lo = first_lo;
        while (soft_lo < *best) {
            if (deadline > 0 && tp_clock_seconds() >= deadline) {
                rep->timed_out = 1;
                break;
            }
            const size_t limit =
                soft_lo == first_lo ? soft_lo : soft_lo + (*best - 1 - soft_lo) / 2;
            xp.repair_runs = 1; /* probes look for plans, not proofs */
            st = search_and_adopt(tensors, count, &xp, limit, 0, EXACT_PROBE_NODES, rep,
                                  best, offsets, trial, &xr);
            xp.repair_runs = 0;
            if (st != TP_OK)
                return st;
            if (!xr.found) {
                if (xr.complete && limit + 1 > rep->lower_bound)
                    rep->lower_bound = limit + 1;
                soft_lo = limit + 1;
            }
            tp_plan_call_progress(o, 1, *best, rep->lower_bound, start, rep->nodes_explored);
        }
        if (*best <= rep->lower_bound) {
            rep->proven_optimal = 1;
        } else if (!rep->timed_out) {
            xp.aspire = 1; /* every other run at the lower bound */
            st = search_and_adopt(tensors, count, &xp, *best - 1, 1, 0, rep, best, offsets,
                                  trial, &xr);
            if (st != TP_OK)
                return st;
            if (xr.proven_lower > rep->lower_bound)
                rep->lower_bound = xr.proven_lower;
            rep->timed_out = xr.timed_out;
            if (xr.complete) {
                rep->proven_optimal = 1;
                rep->lower_bound = *best;
            }
        }
    }
    rep->arena_size = *best;
    tp_plan_call_progress(o, 1, *best, rep->lower_bound, start, rep->nodes_explored);
    return TP_OK;
}

/* Whether no tensor has an alignment of its own above 1 (g from plan_bound). */
static int unit_alignments(const tp_general *g, size_t count)
{
    for (size_t i = 0; g->align != NULL && i < count; i++)
        if (g->align[i] > 1)
            return 0;
    return 1;
}

/* The exact search: the time sweep first when it applies (no alignment above 1, no gaps,
 * and a decision only at the peak), then run_exact unless the sweep settled it. */
static tp_status search_exact(const tp_tensor_lifetime *tensors, size_t count,
                              const tp_plan_options *o, size_t align, const tp_general *g,
                              double start, double deadline, size_t peak, tp_plan_report *rep,
                              size_t *best, size_t *offsets, size_t *trial)
{
    int done = 0;
    tp_status st = TP_OK;
    if (align == 1 && !g->has_gaps && unit_alignments(g, count) &&
        (o->capacity == 0 || peak == o->capacity))
        st = run_sweep(tensors, count, o, start, deadline, peak, rep, best, offsets, trial,
                       &done);
    if (st == TP_OK && !done)
        st = run_exact(tensors, count, o, align, g, start, deadline, rep, best, offsets, trial);
    return st;
}

/* The refusal when the time limit stopped the first greedy pass: nothing in the offsets. */
static tp_status no_plan_in_time(const tp_plan_options *o, size_t count, size_t *offsets,
                                 size_t *arena_size)
{
    for (size_t i = 0; i < count; i++)
        offsets[i] = 0;
    *arena_size = 0;
    return tp_fail(TP_ERR_TIMEOUT,
                   "time limit of %g s reached before the first greedy pass completed; no plan",
                   o->time_limit_seconds);
}

tp_status tp_plan_offsets_ex(const tp_tensor_lifetime *tensors, size_t count,
                             const tp_plan_options *options, size_t *offsets,
                             size_t *arena_size, tp_plan_report *report)
{
    const double start = tp_clock_seconds();
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

    /* Per-tensor alignments or gaps: the general pass (greedy_general.c) instead of the fast
     * ones, on this thread; the exact search takes both (docs/exact-solver.md "Gaps"). */
    tp_general general;
    const int is_general = o->alignments != NULL || o->gap_count > 0;
    size_t peak = 0;
    if ((st = plan_bound(tensors, count, o, align, is_general, &general, &peak)) != TP_OK)
        return st;
    rep.lower_bound = peak;

    if (count > SIZE_MAX / sizeof(size_t)) {
        tp_general_free(&general);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: scratch size overflows size_t", count);
    }
    size_t *trial = malloc((count ? count : 1) * sizeof *trial);
    if (trial == NULL) {
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", count);
        goto out;
    }

    /* Greedy, or the portfolio (also the upper bound an exact search starts from). */
    const size_t n_entries = o->strategy == TP_PLAN_GREEDY ? 1 : tp_portfolio_size();
    size_t best = SIZE_MAX;
    int have = 0;
    if (is_general)
        st = tp_portfolio_general(tensors, count, &general, n_entries, deadline, offsets, trial,
                               &rep, &best, &have);
    else
        st = tp_portfolio_run(tensors, count, n_entries, align, deadline,
                           n_entries > 1 ? tp_portfolio_threads(count, o->threads) : 1, o, start,
                           peak, offsets, &rep, &best, &have);
    if (st != TP_OK)
        goto out;
    if (!have && (st = no_plan_in_time(o, count, offsets, arena_size)) != TP_OK)
        goto out; /* the first greedy pass did not finish: there is no plan to return */
    rep.arena_size = best;
    rep.proven_optimal = best == peak;

    const int decision = o->capacity > 0;
    if (o->strategy == TP_PLAN_EXACT && !rep.proven_optimal &&
        !rep.timed_out &&
        !(decision && best <= o->capacity) && !(decision && peak > o->capacity)) {
        st = search_exact(tensors, count, o, align, &general, start, deadline, peak, &rep,
                          &best, offsets, trial);
        if (st != TP_OK)
            goto out;
    }
    if (decision && peak > o->capacity)
        rep.proven_infeasible = 1;
    if (best == rep.lower_bound)
        rep.proven_optimal = 1;
    rep.seconds = tp_clock_seconds() - start;
    *arena_size = have ? best : 0; /* SIZE_MAX is a legal arena, not a marker */
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
    free(trial);
    tp_general_free(&general);
    return st;
}
