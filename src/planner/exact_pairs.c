/* The exact search over the alternatives of each pair, for gaps with one-sided pairs
 * (docs/exact-solver.md, "Gaps: one-sided pairs"). The offset-ordered search of exact.c needs
 * every conflicting pair to have A > 0 and B > 0; with exactly one of them > 0 a tensor may
 * sit slightly below one it must otherwise clear, and ordering by offset no longer orients
 * the pair. This search orients pairs instead: each chosen alternative is a difference
 * constraint (o_v >= o_u + w), the least offsets that meet the chosen ones (raised to each
 * tensor's alignment) are kept up to date, and a pair that those offsets violate is branched
 * on, until no pair is violated (a plan) or the least offsets pass the limit (a dead end).
 * Every feasible plan meets one alternative of each pair and lies above the least offsets of
 * the alternatives it meets, so the branch that follows it is never cut: the search is
 * complete, for any signs of A and B and any alignments. It runs on an explicit stack, with
 * the time limit, the node budget and the progress reports checked every 256 nodes. */
#include "planner/planner_internal.h"

#include "common/clock.h"
#include "common/error.h"
#include "common/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The most conflicting pairs the search keeps (as exact.c's overlap lists). */
#define PR_MAX_PAIRS ((size_t)1 << 26)
#define PR_NONE UINT32_MAX
#define PR_DEAD (UINT32_MAX - 1u) /* pr_select: no plan below the cap here */

/* A pair that meets: v above u needs o_v >= o_u + up (A of u, v), u above v needs
 * o_u >= o_v + dn (B). */
typedef struct pr_pair {
    uint32_t u, v;
    tp_i128 up, dn;
} pr_pair;

/* A chosen alternative: o_to >= o_from + w; edges from one tensor form a list through next. */
typedef struct pr_edge {
    uint32_t from, to, next;
    tp_i128 w;
} pr_edge;

/* One branching: the pair, how many of its two alternatives were tried, which goes first,
 * and the trail and edge marks to undo to before the next one. */
typedef struct pr_frame {
    uint32_t pair;
    unsigned char tried, first;
    size_t trail;
} pr_frame;

typedef struct pr_undo {
    uint32_t k;
    size_t low;
} pr_undo;

typedef struct pr {
    size_t m, n_pairs, n_edges, depth, n_trail, trail_cap;
    const size_t *ids;
    size_t *size, *align, *low, *best;
    size_t *hint; /* the plan whose alternatives go first: the caller's, then the best found */
    size_t *hint_own; /* the caller's, for the tensors of the search */
    uint32_t *head, *queue, *saved_at;
    unsigned char *queued;
    pr_pair *pairs;
    pr_edge *edges;
    pr_frame *frames;
    pr_undo *trail;
    size_t cap;                /* every tensor's top must stay <= cap                  */
    size_t stop_at;            /* minimising: a plan this low is optimal              */
    size_t best_arena;
    int found, guard_hit, nomem;
    unsigned long long nodes;
    const tp_exact_params *params;
    double last_progress;
} pr;

static tp_i128 pr_round_up(tp_i128 x, size_t a)
{
    if (x <= 0)
        return 0;
    const tp_i128 r = x % (tp_i128)a;
    return r == 0 ? x : x + ((tp_i128)a - r);
}

static void pr_report(pr *s, double now)
{
    tp_exact_report(s->params, s->found, s->best_arena, s->nodes, now);
    s->last_progress = now;
}

/* Sets the least offset of k to `low`, remembering the old one once per branching. */
static int pr_set(pr *s, uint32_t k, size_t low)
{
    if (s->saved_at[k] != s->depth) {
        if (s->n_trail == s->trail_cap &&
            TP_GROW(&s->trail, &s->trail_cap, s->n_trail + 1) != TP_OK) {
            s->nomem = 1;
            return 0;
        }
        s->trail[s->n_trail++] = (pr_undo){ k, s->low[k] };
        s->saved_at[k] = (uint32_t)s->depth;
    }
    s->low[k] = low;
    return 1;
}

/* Raises k to at least x (rounded up to its alignment) and everything the chosen
 * alternatives then raise with it, as a queue of raised tensors. 0: a top passed the cap
 * (a dead end; the least offsets of any plan below are at least these), the raises looped
 * beyond the guard (s->guard_hit: an alignment feeding a cycle of constraints that climbs by
 * small steps; the search stops unproven) or no memory. */
static int pr_raise(pr *s, uint32_t k0, tp_i128 x)
{
    const tp_i128 r0 = pr_round_up(x, s->align[k0]);
    if (r0 <= (tp_i128)s->low[k0])
        return 1;
    const size_t guard = (s->m + 1) * (s->n_edges + 1) + 4096 < ((size_t)1 << 26)
                             ? (s->m + 1) * (s->n_edges + 1) + 4096
                             : (size_t)1 << 26;
    size_t raises = 0, qh = 0, qn = 0;
    int ok = 1;
    if (r0 + (tp_i128)s->size[k0] > (tp_i128)s->cap || !pr_set(s, k0, (size_t)r0))
        return 0;
    s->queue[qn++] = k0;
    s->queued[k0] = 1;
    while (qn > 0) {
        const uint32_t k = s->queue[qh];
        qh = qh + 1 == s->m ? 0 : qh + 1;
        qn--;
        s->queued[k] = 0;
        for (uint32_t e = s->head[k]; ok && e != PR_NONE; e = s->edges[e].next) {
            const uint32_t t = s->edges[e].to;
            const tp_i128 r = pr_round_up((tp_i128)s->low[k] + s->edges[e].w, s->align[t]);
            if (r <= (tp_i128)s->low[t])
                continue;
            if (r + (tp_i128)s->size[t] > (tp_i128)s->cap || !pr_set(s, t, (size_t)r)) {
                ok = 0;
            } else if (++raises > guard) {
                s->guard_hit = 1;
                ok = 0;
            } else if (!s->queued[t]) {
                s->queue[(qh + qn) % s->m] = t;
                qn++;
                s->queued[t] = 1;
            }
        }
        if (!ok)
            break;
    }
    for (; qn > 0; qn--) { /* a dead end: empty the queue */
        s->queued[s->queue[qh]] = 0;
        qh = qh + 1 == s->m ? 0 : qh + 1;
    }
    return ok;
}

/* Undoes the raises and the alternative chosen since the frame at `depth` began. */
static void pr_undo_to(pr *s, size_t mark, size_t edges)
{
    while (s->n_trail > mark) {
        const pr_undo *u = &s->trail[--s->n_trail];
        s->low[u->k] = u->low;
        s->saved_at[u->k] = PR_NONE;
    }
    while (s->n_edges > edges) {
        const pr_edge *e = &s->edges[--s->n_edges];
        s->head[e->from] = e->next;
    }
}

/* Alternative a (0: v above u, 1: u above v) of pair p, added and propagated. */
static int pr_choose(pr *s, uint32_t p, int a)
{
    const pr_pair *q = &s->pairs[p];
    const uint32_t from = a == 0 ? q->u : q->v, to = a == 0 ? q->v : q->u;
    const tp_i128 w = a == 0 ? q->up : q->dn;
    s->edges[s->n_edges] = (pr_edge){ from, to, s->head[from], w };
    s->head[from] = (uint32_t)s->n_edges++;
    return pr_raise(s, to, (tp_i128)s->low[from] + w);
}

/* The pair to branch on: among those the least offsets violate, the one whose cheaper
 * alternative reaches highest (the most constrained; first a pair with one alternative
 * left), *first the alternative the hint plan meets, else its cheaper one. PR_NONE: the least offsets are a plan; PR_DEAD: a
 * violated pair has no alternative within the cap. */
static uint32_t pr_select(const pr *s, unsigned char *first)
{
    uint32_t pick = PR_NONE;
    tp_i128 pick_score = -1;
    const tp_i128 cap = (tp_i128)s->cap, forced = cap + 1;
    for (size_t p = 0; p < s->n_pairs; p++) {
        const pr_pair *q = &s->pairs[p];
        const tp_i128 lu = (tp_i128)s->low[q->u], lv = (tp_i128)s->low[q->v];
        if (lv >= lu + q->up || lu >= lv + q->dn)
            continue;
        /* each alternative's top of the raised tensor: a bound on its plans */
        const tp_i128 c0 = pr_round_up(lu + q->up, s->align[q->v]) + (tp_i128)s->size[q->v];
        const tp_i128 c1 = pr_round_up(lv + q->dn, s->align[q->u]) + (tp_i128)s->size[q->u];
        if (c0 > cap && c1 > cap)
            return PR_DEAD;
        /* one alternative left: taken before any real choice */
        const tp_i128 score = c0 > cap ? forced + c1 : c1 > cap ? forced + c0 : c0 <= c1 ? c0 : c1;
        if (score > pick_score) {
            pick_score = score;
            pick = (uint32_t)p;
            *first = c0 <= c1 ? 0 : 1;
            if (s->hint != NULL && c0 <= cap && c1 <= cap) { /* the hint's alternative */
                const tp_i128 hu = (tp_i128)s->hint[q->u], hv = (tp_i128)s->hint[q->v];
                *first = hv >= hu + q->up ? 0 : hu >= hv + q->dn ? 1 : *first;
            }
        }
    }
    return pick;
}

static size_t pr_top(const pr *s, size_t fixed_top)
{
    size_t top = fixed_top;
    for (size_t k = 0; k < s->m; k++)
        top = s->low[k] + s->size[k] > top ? s->low[k] + s->size[k] : top;
    return top;
}

/* The limits, every 256 nodes: 1 when the search must stop. */
static int pr_clock(pr *s, tp_exact_result *r)
{
    const tp_exact_params *p = s->params;
    if (p->node_limit > 0 && s->nodes >= p->node_limit)
        return 1;
    if ((s->nodes & 255u) != 0 || (p->deadline <= 0 && p->progress == NULL))
        return 0;
    const double now = tp_clock_seconds();
    if (p->deadline > 0 && now >= p->deadline) {
        r->timed_out = 1;
        return 1;
    }
    if (p->progress != NULL && now - s->last_progress >= 0.1)
        pr_report(s, now);
    return 0;
}

/* The depth-first search. Returns 1 when the whole space was explored (or a plan at the
 * lower bound ended a minimising search), 0 when a limit stopped it. */
static int pr_search(pr *s, size_t fixed_top, tp_exact_result *r)
{
    const int minimise = s->params->minimise;
    int descend = 1;
    for (;;) {
        if (descend) {
            s->nodes++;
            if (pr_clock(s, r))
                return 0;
            unsigned char first = 0;
            const uint32_t p = pr_top(s, fixed_top) > s->cap ? PR_DEAD : pr_select(s, &first);
            if (p == PR_NONE) { /* a plan */
                s->best_arena = pr_top(s, fixed_top);
                s->found = 1;
                memcpy(s->best, s->low, s->m * sizeof *s->best);
                s->hint = s->best; /* its alternatives first from now on */
                if (!minimise || s->best_arena <= s->stop_at || s->best_arena == 0)
                    return 1;
                s->cap = s->best_arena - 1; /* only lower plans from now on */
            } else if (p != PR_DEAD) {
                s->frames[s->depth++] = (pr_frame){ p, 0, first, s->n_trail };
            }
        }
        if (s->depth == 0)
            return 1;
        pr_frame *f = &s->frames[s->depth - 1];
        /* frame d's alternative owns edge d - 1 and the trail from f->trail */
        pr_undo_to(s, f->trail, s->depth - 1);
        if (f->tried == 2) {
            s->depth--;
            descend = 0;
            continue;
        }
        const int a = f->tried == 0 ? f->first : 1 - f->first;
        f->tried++;
        descend = pr_choose(s, f->pair, a);
        if (s->guard_hit || s->nomem)
            return 0;
    }
}

/* The pairs that meet, with A and B (signed). Pairs with A + B <= 1 forbid no integer
 * offset difference and are left out. 0: the time limit passed, too many pairs or no
 * memory (s->nomem). */
static int pr_build_pairs(pr *s, const tp_tensor_lifetime *t, const tp_general *g,
                          tp_exact_result *r)
{
    size_t cap = 0;
    const double deadline = s->params->deadline;
    for (size_t i = 0; i < s->m; i++) {
        if ((i & 63u) == 0 && deadline > 0 && tp_clock_seconds() >= deadline) {
            r->timed_out = 1;
            return 0;
        }
        const tp_tensor_lifetime *a = &t[s->ids[i]];
        for (size_t j = i + 1; j < s->m; j++) {
            const tp_tensor_lifetime *b = &t[s->ids[j]];
            tp_i128 up = 0, dn = 0;
            if (a->last_use < b->first_use || b->last_use < a->first_use ||
                !tp_general_reach_signed(g, s->ids[i], s->ids[j], &up, &dn) || up + dn <= 1)
                continue;
            if (s->n_pairs == PR_MAX_PAIRS)
                return 0;
            if (s->n_pairs == cap && TP_GROW(&s->pairs, &cap, s->n_pairs + 1) != TP_OK) {
                s->nomem = 1;
                return 0;
            }
            s->pairs[s->n_pairs++] = (pr_pair){ (uint32_t)i, (uint32_t)j, up, dn };
        }
    }
    return 1;
}

static void pr_free(pr *s)
{
    free(s->size);
    free(s->align);
    free(s->low);
    free(s->best);
    free(s->hint_own);
    free(s->head);
    free(s->queue);
    free(s->saved_at);
    free(s->queued);
    free(s->pairs);
    free(s->edges);
    free(s->frames);
    free(s->trail);
}

tp_status tp_exact_pairs(const tp_tensor_lifetime *t, size_t count, const tp_exact_params *params,
                         const size_t *ids, size_t m, size_t fixed_top, size_t *offsets,
                         tp_exact_result *result)
{
    memset(result, 0, sizeof *result);
    pr s;
    memset(&s, 0, sizeof s);
    s.m = m;
    s.ids = ids;
    s.params = params;
    s.last_progress = tp_clock_seconds();
    s.size = malloc(m * sizeof *s.size);
    s.align = malloc(m * sizeof *s.align);
    s.low = calloc(m, sizeof *s.low);
    s.best = malloc(m * sizeof *s.best);
    s.head = malloc(m * sizeof *s.head);
    s.queue = malloc(m * sizeof *s.queue);
    s.saved_at = malloc(m * sizeof *s.saved_at);
    s.queued = calloc(m, 1);
    tp_status st = TP_OK;
    if (s.size == NULL || s.align == NULL || s.low == NULL || s.best == NULL || s.head == NULL ||
        s.queue == NULL || s.saved_at == NULL || s.queued == NULL)
        goto nomem;
    const size_t align = params->alignment > 1 ? params->alignment : 1;
    for (size_t k = 0; k < m; k++) {
        s.size[k] = t[ids[k]].size;
        s.align[k] = params->alignments != NULL && params->alignments[ids[k]] > 1
                         ? tp_lcm_size(align, params->alignments[ids[k]])
                         : align;
        s.head[k] = PR_NONE;
        s.saved_at[k] = PR_NONE;
    }
    if (params->hint != NULL) {
        if ((s.hint_own = malloc(m * sizeof *s.hint_own)) == NULL)
            goto nomem;
        for (size_t k = 0; k < m; k++)
            s.hint_own[k] = params->hint[ids[k]];
        s.hint = s.hint_own;
    }
    if (!pr_build_pairs(&s, t, params->general, result)) {
        if (s.nomem)
            goto nomem;
        pr_free(&s); /* timed out or too many pairs: nothing explored, nothing found */
        return TP_OK;
    }
    s.edges = malloc((s.n_pairs + 1) * sizeof *s.edges);
    s.frames = malloc((s.n_pairs + 1) * sizeof *s.frames);
    if (s.edges == NULL || s.frames == NULL)
        goto nomem;
    s.cap = params->limit;
    s.stop_at = params->lower_bound > fixed_top ? params->lower_bound : fixed_top;
    int complete = 0;
    if (fixed_top <= s.cap)
        complete = pr_search(&s, fixed_top, result);
    else
        complete = 1; /* a tensor outside the search is already above the limit */
    if (s.nomem)
        goto nomem;
    result->found = s.found;
    result->arena = s.found ? s.best_arena : 0;
    result->complete = complete && !result->timed_out;
    result->nodes = s.nodes;
    if (s.found) {
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
        for (size_t k = 0; k < m; k++)
            offsets[ids[k]] = s.best[k];
    }
    if (params->progress != NULL)
        pr_report(&s, tp_clock_seconds());
    pr_free(&s);
    return st;
nomem:
    pr_free(&s);
    return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the exact search", m);
}
