/* Exact offset search. The algorithm is described in docs/exact-solver.md; in short:
 *
 * - Canonical plans. Dropping every tensor as low as it goes (onto the highest conflicting
 *   tensor below it, or to 0) never makes a plan worse, and the dropped plan is produced by
 *   placing tensors in order of offset, each on top of the already placed tensors that
 *   conflict with it ("skyline" placement, no gap filling). So the search only builds such
 *   sequences, and offsets never decrease along a sequence.
 * - Branching. Y is the lowest offset at which some unplaced tensor would land. Each node
 *   branches on which tensor is placed at Y (all of them, or only those at the left or right
 *   end of the region at Y), and finally on "none of them at Y" (they are banned from Y and
 *   must land higher). A tensor tried and refused at Y is banned from Y in its later siblings
 *   too, which removes the permutations of tensors at equal offsets: every plan is reached at
 *   most once, and every canonical plan is reachable, so exhausting the tree is a proof.
 * - Time is compressed to sections (the distinct first_use values). Per section the floor
 *   (top of what is placed there) and the bytes still to place there are kept. The unplaced
 *   tensors of a section land at or above the lowest landing offset among them, which bounds
 *   the room they need (cross-section inference, two levels); so does landing offset + size.
 * - Parts of the unplaced tensors that share no section are solved independently.
 * - Restarts under Luby node budgets rotate the branching rules and candidate orders, then
 *   perturb the orders; the budgets grow without bound, so the search stays complete.
 * - Minimising is a sequence of decisions, each limit one below the last arena found, until
 *   one completes without a plan or the limit falls below the lower bound.
 * - With MiniMalloc's gaps (when every pair that meets has A > 0 and B > 0, docs/exact-solver.md
 *   "Gaps"): sections at the first nodes of windows, window bytes per section, and a buffer
 *   lands A above each placed buffer it meets instead of its size. */

#include "planner/planner_internal.h"
#include "common/error.h"
#include "common/clock.h"
#include "common/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Buffers are named by 32-bit indices in the search's lists. */
#define EX_MAX_BUFFERS (UINT32_MAX - 1u)
#define EX_ORDERS (3 * EX_NORD)
#define EX_FIRST_RUN 500ULL
#define EX_MAX_OVERLAPS ((size_t)1 << 26)
/* Inner-loop steps between two reads of the clock, about a millisecond. Nodes are not a
 * measure of time: one node of a wide instance scans thousands of lists, so a clock read
 * every 1,024 nodes let a 3 s limit run 30 s. */
#define EX_WORK_PER_CLOCK (1ULL << 20)

typedef struct ex_buf {
    size_t size;
    size_t s0, s1; /* sections covered, inclusive */
    size_t id;     /* index in the caller's array */
    size_t align;  /* its offset a multiple of it (the call's and its own, combined) */
    size_t width;  /* lifetime in steps */
    size_t total;  /* the largest load (bytes to place) of its sections before the search */
} ex_buf;

enum { TR_Y = 0, TR_FLOOR = 1, TR_LB = 2 };

typedef struct ex_trail {
    uint32_t kind, idx;
    size_t old;
} ex_trail;

typedef struct ex_frame *ex_frame_ptr;

typedef struct ex {
    size_t m, n_sec;
    ex_buf *b;
    size_t *ov_start;
    uint32_t *ov;
    size_t *floor, *rem;
    size_t *y, *lb, *pos, *best_pos;
    unsigned char *placed;
    /* The deepest placement the search reached (most buffers placed on one path), kept for
     * ex_repair when no plan within the limit is found. */
    size_t depth, deep_depth[2];
    /* [1]: the placement with the most placed area (bytes x sections), kept when it grows
     * by area_step (a 4m-th of the whole), so that copies stay O(m) per search */
    unsigned long long area, deep_area, area_step;
    size_t *deep_pos[2];
    unsigned char *deep_placed[2];
    /* The best repaired plan of the runs so far (ex_repair_run), its top, and the deepest
     * placements the repairs started from (a run is repaired only when it went deeper) */
    size_t *rep_pos, *rep_tmp, rep_arena, rep_depth;
    int repair_runs; /* tp_exact_params */
    /* Minimising: every other run decides at this limit (the lower bound), 0 = none; when
     * one completes without a plan, proven_lower = aspire + 1 */
    size_t aspire, proven_lower;
    unsigned long long rep_area;
    ex_trail *trail;
    size_t tn, tcap;
    uint32_t *cand;
    size_t cn, ccap;
    size_t limit, align;
    const size_t *alignments; /* NULL, or per tensor of the caller (tp_exact_params) */
    int minimise;
    int found, stopped, timed_out, proven_at_bound;
    size_t best_arena;
    unsigned long long nodes, node_limit;
    double deadline, start, last_progress;
    const tp_exact_params *params; /* the progress reports (tp_exact_report) */
    size_t lower_bound;
    void (*progress)(const struct tp_plan_progress *p, void *user);
    void *user;
    size_t known_best;
    unsigned long long nodes_before;
    int nomem;
    uint32_t *scope;     /* per buffer: the independent part it belongs to now */
    uint32_t n_scopes;
    uint32_t *by_s0;     /* buffers sorted by first section */
    size_t *minv;        /* per section: lowest landing offset among its unplaced buffers */
    size_t *sol;         /* positions of the plan being assembled */
    int order;           /* candidate heuristic of the current run */
    unsigned long long run_end; /* node count at which the current run gives up (0 = never) */
    int run_out;
    int bl;
    ex_frame_ptr frames; /* the search's stack (see dfs) */
    size_t fcap;
    uint32_t *pool; /* the per-node lists of unplaced buffers, a stack */
    size_t pool_n, pool_cap;
    uint64_t rng; /* 0: no perturbation */
    size_t *at, *min2, *sum2;
    unsigned long long work, next_clock; /* inner-loop steps; when to read the clock next */
    /* Gaps (docs/exact-solver.md, "Gaps"); gen NULL: none, and none of these is used.
     * Buffer i's window at section s (s0 <= s <= s1) is [wlo, whi)[wstart[i] + s - s0],
     * wlo > whi where it has none. Entry k of the overlap list of c, naming o: o above c
     * needs pos[o] >= pos[c] + ov_up[k], o below c needs pos[c] >= pos[o] + ov_dn[k]. */
    const tp_general *gen;
    size_t *wstart, *wlo, *whi, *ov_up, *ov_dn;
    size_t fixed_top; /* the largest tensor with no window anywhere: at 0, outside the search */
} ex;

static size_t round_up(size_t x, size_t a)
{
    size_t r = x % a;
    if (r == 0)
        return x;
    return x > SIZE_MAX - (a - r) ? SIZE_MAX : x + (a - r);
}

static size_t sat_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Whether buffer i has a window at section s (within s0..s1), and its bounds. */
static int ex_win(const ex *e, uint32_t i, size_t s, size_t *lo, size_t *hi)
{
    const size_t k = e->wstart[i] + (s - e->b[i].s0);
    *lo = e->wlo[k];
    *hi = e->whi[k];
    return *lo <= *hi;
}

/* a + b > limit, without overflow */
static int exceeds(size_t a, size_t b, size_t limit)
{
    return a > limit || b > limit - a;
}

static int trail_push(ex *e, uint32_t kind, uint32_t idx, size_t old)
{
    if (TP_GROW(&e->trail, &e->tcap, e->tn + 1) != TP_OK) {
        e->nomem = 1;
        return 0;
    }
    e->trail[e->tn++] = (ex_trail){ kind, idx, old };
    return 1;
}

static void undo_to(ex *e, size_t mark)
{
    while (e->tn > mark) {
        const ex_trail *t = &e->trail[--e->tn];
        if (t->kind == TR_Y)
            e->y[t->idx] = t->old;
        else if (t->kind == TR_FLOOR)
            e->floor[t->idx] = t->old;
        else
            e->lb[t->idx] = t->old;
    }
}

void tp_exact_report(const tp_exact_params *params, int found, size_t best_arena,
                     unsigned long long nodes, double now)
{
    if (params->progress == NULL)
        return;
    tp_plan_progress p;
    memset(&p, 0, sizeof p); /* placed, to_place: no greedy pass under way */
    p.have_best = found || params->known_best > 0;
    p.best_arena = found ? best_arena : params->known_best;
    if (found && params->known_best > 0 && params->known_best < p.best_arena)
        p.best_arena = params->known_best;
    p.lower_bound = params->lower_bound;
    p.elapsed_seconds = now - params->start;
    p.nodes = params->nodes_before + nodes;
    params->progress(&p, params->user);
}

static void report_progress(ex *e, double now)
{
    if (e->progress == NULL)
        return;
    tp_exact_report(e->params, e->found, e->best_arena, e->nodes, now);
    e->last_progress = now;
}

/* A part was solved: its positions (and those of everything placed above it on the current
 * path) go into sol; finished parts keep theirs there. */
static void record_part(ex *e)
{
    for (size_t i = 0; i < e->m; i++)
        if (e->placed[i])
            e->sol[i] = e->pos[i];
}

static void keep_deep(ex *e, int k)
{
    e->deep_depth[k] = e->depth;
    memcpy(e->deep_placed[k], e->placed, e->m);
    memcpy(e->deep_pos[k], e->pos, e->m * sizeof *e->pos);
}

/* After c is placed at Y (top end = Y + size): every unplaced buffer that meets c lands at
 * least at end (with gaps: at Y + ov_up, its stacking distance above c), rounded up to its
 * alignment. Returns 0 when the trail cannot grow; *ok becomes 0 when a landing passes the
 * limit. */
static int raise_overlaps(ex *e, uint32_t c, size_t Y, size_t end, int windows, int *ok)
{
    const ex_buf *b = &e->b[c];
    const size_t ny0 = round_up(end, e->align); /* for tensors of the call's alignment */
    e->work += (b->s1 - b->s0 + 1) + (e->ov_start[c + 1] - e->ov_start[c]);
    for (size_t k = e->ov_start[c]; k < e->ov_start[c + 1]; k++) {
        const uint32_t o = e->ov[k];
        if (e->placed[o])
            continue;
        const size_t ny = windows ? round_up(sat_add(Y, e->ov_up[k]), e->b[o].align)
                          : e->b[o].align == e->align ? ny0
                                                       : round_up(end, e->b[o].align);
        if (e->y[o] >= ny)
            continue;
        if (!trail_push(e, TR_Y, o, e->y[o]))
            return 0;
        e->y[o] = ny;
        if (exceeds(ny, e->b[o].size, e->limit))
            *ok = 0;
    }
    return 1;
}

/* place() with gaps: the floor of a section is the top of c's window there; a buffer above
 * c lands at least ov_up above it. */
static int place_windows(ex *e, uint32_t c, size_t Y)
{
    const ex_buf *b = &e->b[c];
    int ok = 1;
    for (size_t s = b->s0; s <= b->s1; s++) {
        size_t lo, hi;
        if (!ex_win(e, c, s, &lo, &hi))
            continue;
        if (!trail_push(e, TR_FLOOR, (uint32_t)s, e->floor[s]))
            return 0;
        const size_t top = sat_add(Y, hi);
        e->floor[s] = top;
        e->rem[s] -= hi - lo;
        if (e->rem[s] > 0 && exceeds(top, e->rem[s], e->limit))
            ok = 0;
    }
    return raise_overlaps(e, c, Y, sat_add(Y, b->size), 1, &ok) && ok;
}

/* Places buffer c at Y. Returns 0 when an inference shows the limit cannot be met (the state
 * is still fully updated, so the caller undoes it the same way in both cases). */
static int place(ex *e, uint32_t c, size_t Y)
{
    const ex_buf *b = &e->b[c];
    const size_t end = Y + b->size;
    int ok = 1;
    e->placed[c] = 1;
    e->pos[c] = Y;
    if (++e->depth > e->deep_depth[0]) /* at most m times a search: O(m^2) in all */
        keep_deep(e, 0);
    e->area += (unsigned long long)b->size * (b->s1 - b->s0 + 1); /* wraps: a heuristic */
    if (e->area >= e->deep_area + e->area_step) { /* at most 4m + 1 times a search */
        e->deep_area = e->area;
        keep_deep(e, 1);
    }
    if (e->gen != NULL)
        return place_windows(e, c, Y);
    for (size_t s = b->s0; s <= b->s1; s++) {
        if (!trail_push(e, TR_FLOOR, (uint32_t)s, e->floor[s]))
            return 0;
        e->floor[s] = end;
        e->rem[s] -= b->size;
        if (e->rem[s] > 0 && exceeds(end, e->rem[s], e->limit))
            ok = 0;
    }
    return raise_overlaps(e, c, Y, end, 0, &ok) && ok;
}

static void unplace(ex *e, uint32_t c)
{
    const ex_buf *b = &e->b[c];
    for (size_t s = b->s0; s <= b->s1; s++) {
        size_t lo = 0, hi = b->size;
        if (e->gen == NULL || ex_win(e, c, s, &lo, &hi))
            e->rem[s] += hi - lo;
    }
    e->placed[c] = 0;
    e->depth--;
    e->area -= (unsigned long long)b->size * (b->s1 - b->s0 + 1);
}

static int poll_budget(ex *e)
{
    if (e->run_end != 0 && e->nodes >= e->run_end) {
        e->run_out = 1;
        return 1;
    }
    if (e->node_limit != 0 && e->nodes >= e->node_limit) {
        e->stopped = e->timed_out = 1;
        return 1;
    }
    if ((e->nodes & 1023u) == 0 || e->work >= e->next_clock) {
        e->next_clock = e->work + EX_WORK_PER_CLOCK;
        double now = tp_clock_seconds();
        if (e->deadline > 0 && now >= e->deadline) {
            e->stopped = e->timed_out = 1;
            return 1;
        }
        if (e->progress != NULL && now - e->last_progress >= 0.1)
            report_progress(e, now);
    }
    return 0;
}

/* Whether the time limit has passed, read every 64 rows of a quadratic setup loop (a row is
 * at most 4,096 steps, so a read per few tens of microseconds). */
static int setup_past_deadline(const ex *e, size_t row)
{
    return (row & 63u) == 0 && e->deadline > 0 && tp_clock_seconds() >= e->deadline;
}

static size_t sat_mul(size_t a, size_t b)
{
    return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

/* One key of a candidate order: whether it decides between a and b, and how (*first: a
 * comes first). W lifetime in steps, A size x W, T the largest load of its sections, Z size,
 * S sections covered, R size x sections. Larger first for every key. */
static int cand_key(const ex_buf *a, const ex_buf *b, char key, int *first)
{
    size_t x, y;
    if (key == 'W') {
        x = a->width;
        y = b->width;
    } else if (key == 'A') {
        x = sat_mul(a->width, a->size);
        y = sat_mul(b->width, b->size);
    } else if (key == 'T') {
        x = a->total;
        y = b->total;
    } else if (key == 'Z') {
        x = a->size;
        y = b->size;
    } else if (key == 'S') {
        x = a->s1 - a->s0;
        y = b->s1 - b->s0;
    } else {
        x = sat_mul(a->s1 - a->s0 + 1, a->size);
        y = sat_mul(b->s1 - b->s0 + 1, b->size);
    }
    if (x == y)
        return 0;
    *first = x > y;
    return 1;
}

/* The candidate orders the runs rotate through, keys in decreasing priority, ties broken by
 * index. A long tensor placed low leaves one flat floor under many sections; one in the
 * most loaded section decides the tightest place first; a fixed order keeps the search
 * deterministic. */
static const char *const ex_orders[] = { "SZ", "ZS", "R", "WAT", "TAW", "TWA" };
#define EX_NORD (sizeof ex_orders / sizeof ex_orders[0])

static int cand_before(const ex *e, uint32_t x, uint32_t y)
{
    const ex_buf *a = &e->b[x], *b = &e->b[y];
    for (const char *key = ex_orders[e->order]; *key != '\0'; key++) {
        int first;
        if (cand_key(a, b, *key, &first))
            return first;
    }
    return x < y;
}

static void sort_cands(const ex *e, uint32_t *c, size_t n)
{
    for (size_t i = 1; i < n; i++) { /* candidate lists are short */
        uint32_t v = c[i];
        size_t j = i;
        while (j > 0 && cand_before(e, v, c[j - 1])) {
            c[j] = c[j - 1];
            j--;
        }
        c[j] = v;
    }
}

enum { R_FAIL = 0, R_DONE = 1, R_STOP = 2 };

/* Splits the buffers of list[0..n) (unplaced, one scope, in order of first section) into
 * parts that share no section. Returns the number of parts; when more than one, their buffers
 * get fresh scope ids first..first+parts-1. */
static uint32_t split(ex *e, const uint32_t *list, size_t n, uint32_t *first)
{
    uint32_t parts = 0;
    size_t reach = 0;
    for (size_t k = 0; k < n; k++) {
        const uint32_t i = list[k];
        if (k == 0 || e->b[i].s0 > reach) {
            parts++;
            reach = e->b[i].s1;
        } else if (e->b[i].s1 > reach) {
            reach = e->b[i].s1;
        }
    }
    if (parts <= 1)
        return parts;
    *first = e->n_scopes;
    uint32_t part = e->n_scopes - 1;
    for (size_t k = 0; k < n; k++) {
        const uint32_t i = list[k];
        if (k == 0 || e->b[i].s0 > reach) {
            part++;
            reach = e->b[i].s1;
        } else if (e->b[i].s1 > reach) {
            reach = e->b[i].s1;
        }
        e->scope[i] = part;
    }
    e->n_scopes += parts;
    return parts;
}

/* Reserves n entries on the list pool; returns the offset of the first. */
static int pool_reserve(ex *e, size_t n, size_t *at)
{
    if (TP_GROW(&e->pool, &e->pool_cap, e->pool_n + n) != TP_OK) {
        e->nomem = 1;
        return 0;
    }
    *at = e->pool_n;
    e->pool_n += n;
    return 1;
}

/* Landing offsets of the unplaced buffers of one node, and what they imply. */
typedef struct ex_node {
    size_t Y;   /* lowest offset at which some buffer of the list may land next */
    size_t slo, shi; /* the sections the list covers (slo == SIZE_MAX: empty list) */
    size_t low; /* the lowest landing offset of all */
    size_t hat; /* the lowest top of a buffer dropped onto its skyline (y + size) */
} ex_node;

/* Copies the unplaced buffers of `scope` among pool[from..from+from_n) to a fresh stretch of
 * the pool (left entries reserved at *at0); *n is how many there are. */
static int gather_scope(ex *e, uint32_t scope, size_t left, size_t from, size_t from_n,
                        size_t *at0, size_t *n)
{
    if (!pool_reserve(e, left, at0))
        return 0;
    size_t k0 = 0;
    for (size_t k = 0; k < from_n; k++) {
        const uint32_t i = e->pool[from + k];
        if (!e->placed[i] && e->scope[i] == scope)
            e->pool[*at0 + k0++] = i;
    }
    *n = k0;
    return 1;
}

/* Computes the landing offset of each listed buffer (into e->at) and the lowest landing
 * offset per section (into e->minv). Returns 0 when some buffer cannot land under the
 * limit. */
static int scan_landings(ex *e, const uint32_t *list, size_t n, size_t ylast, ex_node *nd)
{
    nd->Y = SIZE_MAX;
    nd->slo = SIZE_MAX;
    nd->shi = 0;
    nd->low = SIZE_MAX;
    nd->hat = SIZE_MAX;
    for (size_t k = 0; k < n; k++) {
        const uint32_t i = list[k];
        const size_t top = e->y[i] > SIZE_MAX - e->b[i].size ? SIZE_MAX : e->y[i] + e->b[i].size;
        if (top < nd->hat)
            nd->hat = top;
        size_t at = e->y[i] > e->lb[i] ? e->y[i] : e->lb[i];
        if (at < ylast)
            at = ylast;
        e->at[i] = at;
        if (exceeds(at, e->b[i].size, e->limit))
            return 0;
        size_t *mv = e->minv;
        e->work += e->b[i].s1 - e->b[i].s0 + 2;
        size_t lo, hi;
        for (size_t sct = e->b[i].s0; sct <= e->b[i].s1; sct++)
            if (at < mv[sct] && (e->gen == NULL || ex_win(e, i, sct, &lo, &hi)))
                mv[sct] = at;
        if (e->b[i].s0 < nd->slo)
            nd->slo = e->b[i].s0;
        if (e->b[i].s1 > nd->shi)
            nd->shi = e->b[i].s1;
        if (at < nd->low)
            nd->low = at;
        if (e->y[i] >= e->lb[i] && e->y[i] < nd->Y)
            nd->Y = e->y[i];
    }
    return 1;
}

/* Cross-section inference: the unplaced buffers of a section all land at or above the
 * lowest landing offset among them, so they need that much room on top of it; and those
 * that land higher than that need their own room on top of the lowest of them. A buffer
 * landing at the lowest offset of all is lowest in each of its sections and adds nothing
 * to the second rule. Returns 0 when a section cannot fit under the limit. */
static int sections_fit(ex *e, const uint32_t *list, size_t n, const ex_node *nd)
{
    for (size_t k = 0; k < n; k++) {
        const uint32_t i = list[k];
        const size_t at = e->at[i];
        if (at == nd->low)
            continue;
        for (size_t sct = e->b[i].s0; sct <= e->b[i].s1; sct++) {
            size_t lo = 0, hi = e->b[i].size;
            if (at > e->minv[sct] && (e->gen == NULL || ex_win(e, i, sct, &lo, &hi))) {
                if (at < e->min2[sct])
                    e->min2[sct] = at;
                e->sum2[sct] += hi - lo;
            }
        }
    }
    for (size_t sct = nd->slo; sct <= nd->shi; sct++) {
        if (e->minv[sct] == SIZE_MAX)
            continue; /* no listed buffer there */
        if (exceeds(e->minv[sct], e->rem[sct], e->limit) ||
            (e->sum2[sct] > 0 && exceeds(e->min2[sct], e->sum2[sct], e->limit)))
            return 0;
    }
    return 1;
}

/* Clears the per-section scratch of scan_landings and sections_fit. */
static void reset_sections(ex *e, const ex_node *nd)
{
    if (nd->slo == SIZE_MAX)
        return;
    for (size_t sct = nd->slo; sct <= nd->shi; sct++) {
        e->minv[sct] = e->min2[sct] = SIZE_MAX;
        e->sum2[sct] = 0;
    }
}

/* Whether the listed buffers can still land under the limit; fills nd. The scratch of the
 * sections is left clean. */
static int node_feasible(ex *e, const uint32_t *list, size_t n, size_t ylast, ex_node *nd)
{
    int ok = scan_landings(e, list, n, ylast, nd);
    /* Dominance: a buffer whose top on its skyline is at most Y could drop below everything
     * placed from here on, so every plan below this node leaves a gap under it and its
     * dropped plan is reached elsewhere. */
    if (ok && nd->Y != SIZE_MAX && nd->Y >= nd->hat)
        ok = 0;
    if (ok && nd->Y != SIZE_MAX)
        ok = sections_fit(e, list, n, nd);
    reset_sections(e, nd);
    return ok;
}

/* Bottom-left: branch only on the tensors at Y that start in the leftmost section where
 * anything can land at Y (or, mirrored, end in the rightmost); "none of them" is then a
 * decision about that region alone, and the other regions at Y are decided in later
 * iterations. Appends the candidates to e->cand from cbase; returns 0 when out of memory. */
static int collect_cands(ex *e, const uint32_t *list, size_t n, size_t Y, size_t cbase)
{
    size_t left_sec = SIZE_MAX, right_sec = 0;
    for (size_t k = 0; k < n; k++) {
        const uint32_t i = list[k];
        if (e->y[i] != Y || e->y[i] < e->lb[i])
            continue;
        if (e->b[i].s0 < left_sec)
            left_sec = e->b[i].s0;
        if (e->b[i].s1 > right_sec)
            right_sec = e->b[i].s1;
    }
    e->cn = cbase;
    for (size_t k = 0; k < n; k++) {
        const uint32_t i = list[k];
        if (e->y[i] != Y || e->y[i] < e->lb[i])
            continue;
        if ((e->bl == 1 && e->b[i].s0 != left_sec) ||
            (e->bl == 2 && e->b[i].s1 != right_sec))
            continue;
        if (TP_GROW(&e->cand, &e->ccap, e->cn + 1) != TP_OK) {
            e->nomem = 1;
            return 0;
        }
        e->cand[e->cn++] = i;
    }
    return 1;
}

/* A perturbed run: neighbours in the heuristic order trade places now and then. */
static void perturb_cands(ex *e, uint32_t *c, size_t nc)
{
    for (size_t k = 0; k + 1 < nc; k++) {
        if ((tp_xorshift64s(&e->rng) >> 62) == 0) {
            uint32_t t = c[k];
            c[k] = c[k + 1];
            c[k + 1] = t;
        }
    }
}

/* The search runs on an explicit stack of frames, not on the C stack, so its depth (one
 * frame or three per placement) is bounded by memory only. Three kinds of frame stand for
 * what were three mutually recursive functions:
 *  - F_DFS: the unplaced buffers of one scope; nodes one after another, each either splits
 *    into independent parts (F_PARTS) or branches on the candidates at the lowest landing
 *    offset Y (F_TRY), and when every candidate fails "none of them at Y" is the next node;
 *  - F_TRY: each candidate at Y in turn, a child F_DFS for the rest; a candidate tried and
 *    refused is banned from Y for its later siblings;
 *  - F_PARTS: the parts one after another; a failure in one cannot be repaired by choices in
 *    another.
 * A step either returns a value to its parent (ACT_RETURN, in *r) or asks for a child frame
 * (ACT_CALL, in *child) and is resumed with the child's value. */
enum { F_DFS = 0, F_TRY, F_PARTS };
enum { ACT_RETURN = 0, ACT_CALL };

typedef struct ex_frame {
    int kind, pc, twin, r;
    uint32_t scope, first, parts, p, c;
    size_t left, ylast, from, from_n, at0, n;
    size_t entry_mark, cbase, pool_mark; /* F_DFS: what to give back when it returns */
    size_t Y, nc, k, mark;               /* F_TRY (Y also F_DFS: the current node's) */
} ex_frame;

static ex_frame dfs_frame(uint32_t scope, size_t left, size_t ylast, size_t from,
                          size_t from_n)
{
    ex_frame f;
    memset(&f, 0, sizeof f);
    f.kind = F_DFS;
    f.scope = scope;
    f.left = left;
    f.ylast = ylast;
    f.from = from;
    f.from_n = from_n;
    return f;
}

/* The start of a node of an F_DFS frame: ACT_RETURN with *r when the node fails or stops
 * (no "none of them" to follow), else the child (F_PARTS or F_TRY) that decides it. */
static int node_begin(ex *e, ex_frame *fr, int *r, ex_frame *child)
{
    const uint32_t *list = e->pool + fr->at0;
    e->nodes++;
    if (poll_budget(e)) {
        *r = R_STOP;
        return ACT_RETURN;
    }
    ex_node nd;
    if (!node_feasible(e, list, fr->n, fr->ylast, &nd) || nd.Y == SIZE_MAX) {
        *r = R_FAIL; /* no plan below this node */
        return ACT_RETURN;
    }
    uint32_t first = 0;
    const uint32_t parts = split(e, list, fr->n, &first);
    memset(child, 0, sizeof *child);
    child->scope = fr->scope;
    child->at0 = fr->at0;
    child->n = fr->n;
    if (parts > 1) { /* the parts decide this node */
        child->kind = F_PARTS;
        child->first = first;
        child->parts = parts;
        child->ylast = fr->ylast;
        child->r = R_DONE;
        fr->Y = SIZE_MAX;
        return ACT_CALL;
    }
    if (!collect_cands(e, list, fr->n, nd.Y, fr->cbase)) {
        *r = R_STOP;
        return ACT_RETURN;
    }
    const size_t nc = e->cn - fr->cbase;
    sort_cands(e, e->cand + fr->cbase, nc);
    if (e->rng != 0)
        perturb_cands(e, e->cand + fr->cbase, nc);
    child->kind = F_TRY;
    child->left = fr->left;
    child->Y = nd.Y;
    child->cbase = fr->cbase;
    child->nc = nc;
    child->r = R_FAIL;
    fr->Y = nd.Y;
    return ACT_CALL;
}

static int step_dfs(ex *e, ex_frame *fr, int *r, ex_frame *child)
{
    if (fr->pc == 0) { /* entry */
        if (e->nomem) {
            *r = R_STOP;
            return ACT_RETURN;
        }
        if (fr->left == 0) {
            record_part(e);
            *r = R_DONE;
            return ACT_RETURN;
        }
        fr->entry_mark = e->tn;
        fr->cbase = e->cn;
        fr->pool_mark = e->pool_n;
        if (!gather_scope(e, fr->scope, fr->left, fr->from, fr->from_n, &fr->at0, &fr->n)) {
            *r = R_STOP;
            return ACT_RETURN;
        }
        fr->pc = 1;
    } else { /* a child decided the node: *r is its value */
        e->cn = fr->cbase;
        if (*r == R_FAIL && fr->Y != SIZE_MAX) {
            fr->ylast = fr->Y; /* none of them at Y: every candidate is now banned from Y */
            fr->pc = 1;
        } else {
            fr->pc = 2;
        }
    }
    if (fr->pc == 1 && node_begin(e, fr, r, child) == ACT_CALL)
        return ACT_CALL;
    undo_to(e, fr->entry_mark);
    e->cn = fr->cbase;
    e->pool_n = fr->pool_mark;
    return ACT_RETURN;
}

/* Whether buffers x and y are interchangeable: the same sections, size and alignment, and
 * with gaps the same windows (the conflicts are decided by the windows at the sections). */
static int ex_twins(const ex *e, uint32_t x, uint32_t y)
{
    const ex_buf *a = &e->b[x], *b = &e->b[y];
    if (a->s0 != b->s0 || a->s1 != b->s1 || a->size != b->size || a->align != b->align)
        return 0;
    if (e->gen == NULL)
        return 1;
    const size_t n = a->s1 - a->s0 + 1;
    return memcmp(e->wlo + e->wstart[x], e->wlo + e->wstart[y], n * sizeof *e->wlo) == 0 &&
           memcmp(e->whi + e->wstart[x], e->whi + e->wstart[y], n * sizeof *e->whi) == 0;
}

static int step_try(ex *e, ex_frame *fr, int *r, ex_frame *child)
{
    if (fr->pc == 1) { /* back from the child of candidate k */
        fr->r = *r;
        undo_to(e, fr->mark);
        if (!fr->twin)
            unplace(e, fr->c);
        if (fr->r != R_FAIL) {
            *r = fr->r;
            return ACT_RETURN;
        }
        /* tried at Y: later siblings may not put it at Y again (same plan, other order) */
        if (!trail_push(e, TR_LB, fr->c, e->lb[fr->c])) {
            *r = R_STOP;
            return ACT_RETURN;
        }
        e->lb[fr->c] = fr->Y + 1;
        fr->k++;
    }
    for (; fr->k < fr->nc; fr->k++) {
        const uint32_t c = e->cand[fr->cbase + fr->k];
        fr->c = c;
        fr->mark = e->tn;
        /* A twin of a candidate that already failed here (same sections, same size) leads
         * to the same subtree with one more ban: skip it, banned like the others. */
        int twin = 0;
        for (size_t j = 0; j < fr->k && !twin; j++) {
            twin = ex_twins(e, e->cand[fr->cbase + j], c);
        }
        fr->twin = twin;
        if (!twin && place(e, c, fr->Y)) {
            *child = dfs_frame(fr->scope, fr->left - 1, fr->Y, fr->at0, fr->n);
            fr->pc = 1;
            return ACT_CALL;
        }
        undo_to(e, fr->mark);
        if (!twin)
            unplace(e, c);
        if (!trail_push(e, TR_LB, c, e->lb[c])) {
            *r = R_STOP;
            return ACT_RETURN;
        }
        e->lb[c] = fr->Y + 1;
    }
    *r = R_FAIL;
    return ACT_RETURN;
}

static int step_parts(ex *e, ex_frame *fr, int *r, ex_frame *child)
{
    if (fr->pc == 1)
        fr->r = *r;
    const uint32_t *list = e->pool + fr->at0; /* the pool may have moved */
    if (fr->p < fr->parts && fr->r == R_DONE) {
        const uint32_t part = fr->first + fr->p;
        size_t count = 0;
        for (size_t k = 0; k < fr->n; k++)
            count += e->scope[list[k]] == part;
        *child = dfs_frame(part, count, fr->ylast, fr->at0, fr->n);
        fr->p++;
        fr->pc = 1;
        return ACT_CALL;
    }
    for (size_t k = 0; k < fr->n; k++)
        e->scope[list[k]] = fr->scope;
    e->n_scopes = fr->first;
    *r = fr->r;
    return ACT_RETURN;
}

/* Decision search over the unplaced buffers of `scope` (`left` of them, all found in the pool
 * list from `from`, `from_n` entries long, in order of first section), all future offsets at
 * least ylast: R_DONE (a plan, in e->sol), R_FAIL (none exists), R_STOP (budget, time or
 * memory). */
static int dfs(ex *e, uint32_t scope, size_t left, size_t ylast, size_t from, size_t from_n)
{
    size_t sp = 0;
    if (TP_GROW(&e->frames, &e->fcap, 1) != TP_OK) {
        e->nomem = 1;
        return R_STOP;
    }
    e->frames[sp++] = dfs_frame(scope, left, ylast, from, from_n);
    int r = R_FAIL;
    while (sp > 0) {
        ex_frame *fr = &e->frames[sp - 1], child;
        const int act = fr->kind == F_DFS  ? step_dfs(e, fr, &r, &child)
                        : fr->kind == F_TRY ? step_try(e, fr, &r, &child)
                                            : step_parts(e, fr, &r, &child);
        if (act == ACT_RETURN) {
            sp--;
            continue;
        }
        if (TP_GROW(&e->frames, &e->fcap, sp + 1) != TP_OK) {
            e->nomem = 1;
            r = R_STOP; /* the child stops at once: its parent resumes with that */
            continue;
        }
        e->frames[sp++] = child;
    }
    return r;
}

/* The Luby sequence 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ... (i >= 1); the restart budgets of the
 * search and of the time sweep. */
unsigned long long tp_luby(unsigned long long i)
{
    for (;;) {
        unsigned long long k = 1;
        while (((1ULL << k) - 1) < i)
            k++;
        if (i == (1ULL << k) - 1)
            return 1ULL << (k - 1);
        i -= (1ULL << (k - 1)) - 1;
    }
}

static int by_first(const void *pa, const void *pb)
{
    const size_t *a = pa, *b = pb;
    return (*a > *b) - (*a < *b);
}

static size_t section_index(const size_t *sec, size_t n, size_t x) /* last sec <= x */
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sec[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

/* Whether tensor i takes part in the search: a non-zero size and, with gaps, a window at
 * some node (one without is at offset 0 and conflicts with nothing). */
static int ex_takes(const tp_general *g, const tp_tensor_lifetime *t, size_t i)
{
    if (t[i].size == 0)
        return 0;
    if (g == NULL)
        return 1;
    for (size_t k = g->seg_start[i]; k < g->seg_start[i + 1]; k++)
        if (g->segs[k].active)
            return 1;
    return 0;
}

static void ex_free(ex *e)
{
    free(e->b);
    free(e->ov_start);
    free(e->ov);
    free(e->floor);
    free(e->rem);
    free(e->y);
    free(e->lb);
    free(e->pos);
    free(e->best_pos);
    free(e->placed);
    for (int k = 0; k < 2; k++) {
        free(e->deep_placed[k]);
        free(e->deep_pos[k]);
    }
    free(e->rep_pos);
    free(e->rep_tmp);
    free(e->trail);
    free(e->cand);
    free(e->scope);
    free(e->by_s0);
    free(e->minv);
    free(e->pool);
    free(e->frames);
    free(e->at);
    free(e->min2);
    free(e->sum2);
    free(e->wstart);
    free(e->wlo);
    free(e->whi);
    free(e->ov_up);
    free(e->ov_dn);
    free(e->sol);
}

/* What a setup step ran into. */
/* SETUP_ONE_SIDED: gaps with a pair that has exactly one of A, B > 0 (exact_pairs.c) */
enum { SETUP_OK = 0, SETUP_NOMEM, SETUP_TIMED_OUT, SETUP_TOO_LARGE, SETUP_ONE_SIDED };

static void ex_init(ex *e, const tp_exact_params *params)
{
    memset(e, 0, sizeof *e);
    e->align = params->alignment > 1 ? params->alignment : 1;
    e->alignments = params->alignments;
    e->limit = params->limit;
    e->minimise = params->minimise;
    e->deadline = params->deadline;
    e->node_limit = params->node_limit;
    e->params = params;
    e->start = params->start;
    e->last_progress = tp_clock_seconds();
    e->lower_bound = params->lower_bound;
    e->progress = params->progress;
    e->user = params->user;
    e->known_best = params->known_best;
    e->nodes_before = params->nodes_before;
    e->rep_arena = SIZE_MAX;
    e->repair_runs = params->repair_runs;
    if (params->general != NULL && params->general->has_gaps)
        e->gen = params->general;
    if (params->aspire && params->minimise && params->lower_bound < params->limit)
        e->aspire = params->lower_bound;
}

/* The buffers of non-zero size (m of them) and their sections: sec receives the distinct
 * first uses, in increasing order. */
static int ex_build_buffers(ex *e, const tp_tensor_lifetime *tensors, size_t count, size_t m,
                            size_t *sec)
{
    e->m = m;
    e->b = malloc(m * sizeof *e->b);
    e->y = calloc(m, sizeof *e->y);
    e->lb = calloc(m, sizeof *e->lb);
    e->pos = calloc(m, sizeof *e->pos);
    e->best_pos = calloc(m, sizeof *e->best_pos);
    e->placed = calloc(m, 1);
    e->rep_pos = calloc(m, sizeof *e->rep_pos);
    e->rep_tmp = calloc(m, sizeof *e->rep_tmp);
    if (e->rep_pos == NULL || e->rep_tmp == NULL)
        return SETUP_NOMEM;
    for (int k = 0; k < 2; k++) {
        e->deep_placed[k] = calloc(m, 1);
        e->deep_pos[k] = calloc(m, sizeof *e->deep_pos[k]);
        if (e->deep_placed[k] == NULL || e->deep_pos[k] == NULL)
            return SETUP_NOMEM;
    }
    e->ov_start = calloc(m + 1, sizeof *e->ov_start);
    e->scope = calloc(m, sizeof *e->scope);
    e->by_s0 = malloc(m * sizeof *e->by_s0);
    e->sol = calloc(m, sizeof *e->sol);
    if (e->scope == NULL || e->by_s0 == NULL || e->sol == NULL)
        return SETUP_NOMEM;
    if (sec == NULL || e->b == NULL || e->y == NULL || e->lb == NULL || e->pos == NULL ||
        e->best_pos == NULL || e->placed == NULL || e->ov_start == NULL)
        return SETUP_NOMEM;
    for (size_t i = 0, k = 0; i < count; i++) {
        if (!ex_takes(e->gen, tensors, i))
            continue;
        sec[k] = tensors[i].first_use;
        e->b[k].size = tensors[i].size;
        e->b[k].id = i;
        e->b[k].align = e->align;
        if (e->alignments != NULL && e->alignments[i] > 1)
            e->b[k].align = tp_lcm_size(e->align, e->alignments[i]);
        k++;
    }
    qsort(sec, m, sizeof *sec, by_first);
    size_t n_sec = 0;
    for (size_t k = 0; k < m; k++)
        if (n_sec == 0 || sec[n_sec - 1] != sec[k])
            sec[n_sec++] = sec[k];
    e->n_sec = n_sec;
    for (size_t k = 0; k < m; k++) {
        const tp_tensor_lifetime *t = &tensors[e->b[k].id];
        e->b[k].s0 = section_index(sec, n_sec, t->first_use);
        e->b[k].s1 = section_index(sec, n_sec, t->last_use);
        e->b[k].width = t->last_use - t->first_use; /* steps, less one */
        e->b[k].width += e->b[k].width < SIZE_MAX;
    }
    return SETUP_OK;
}

/* The per-section arrays, and the buffers by first section, then index: a counting sort
 * (minv holds the counts for now), which needs no comparison context; a qsort comparator
 * reading a file-scope pointer raced between threads. */
static int ex_build_sections(ex *e)
{
    const size_t n_sec = e->n_sec, m = e->m;
    e->floor = calloc(n_sec, sizeof *e->floor);
    e->rem = calloc(n_sec, sizeof *e->rem);
    e->minv = malloc(n_sec * sizeof *e->minv);
    e->min2 = malloc(n_sec * sizeof *e->min2);
    e->sum2 = calloc(n_sec, sizeof *e->sum2);
    e->at = calloc(m, sizeof *e->at);
    if (e->floor == NULL || e->rem == NULL || e->minv == NULL || e->min2 == NULL ||
        e->sum2 == NULL || e->at == NULL)
        return SETUP_NOMEM;
    for (size_t k = 0; k < n_sec; k++)
        e->minv[k] = 0;
    for (size_t k = 0; k < m; k++)
        e->minv[e->b[k].s0]++;
    for (size_t k = 0, sum = 0; k < n_sec; k++) {
        const size_t c = e->minv[k];
        e->minv[k] = sum;
        sum += c;
    }
    for (size_t k = 0; k < m; k++)
        e->by_s0[e->minv[e->b[k].s0]++] = (uint32_t)k;
    for (size_t k = 0; k < n_sec; k++)
        e->minv[k] = e->min2[k] = SIZE_MAX;
    e->n_scopes = 1;
    return SETUP_OK;
}

/* With gaps, sections are the distinct first nodes of the windows (of the buffers taken): two
 * windows' node ranges intersect exactly when the later first node lies in both. Returns the
 * number of them in *n, sorted and distinct, in a fresh array (NULL: out of memory). */
static size_t *ex_window_starts(const ex *e, size_t *n)
{
    const tp_general *g = e->gen;
    size_t total = 0;
    for (size_t k = 0; k < e->m; k++)
        for (size_t q = g->seg_start[e->b[k].id]; q < g->seg_start[e->b[k].id + 1]; q++)
            total += g->segs[q].active;
    size_t *pts = malloc((total ? total : 1) * sizeof *pts);
    if (pts == NULL)
        return NULL;
    total = 0;
    for (size_t k = 0; k < e->m; k++)
        for (size_t q = g->seg_start[e->b[k].id]; q < g->seg_start[e->b[k].id + 1]; q++)
            if (g->segs[q].active)
                pts[total++] = g->segs[q].t0;
    qsort(pts, total, sizeof *pts, by_first);
    size_t d = 0;
    for (size_t k = 0; k < total; k++)
        if (d == 0 || pts[d - 1] != pts[k])
            pts[d++] = pts[k];
    *n = d;
    return pts;
}

/* With gaps: the sections (ex_window_starts), each buffer's span s0..s1 (from its first
 * window to its last) and its window at each of them. Replaces ex_build_buffers' sections. */
static int ex_build_windows(ex *e)
{
    const tp_general *g = e->gen;
    size_t n_sec = 0, total = 0;
    size_t *pts = ex_window_starts(e, &n_sec);
    e->wstart = malloc((e->m + 1) * sizeof *e->wstart);
    if (pts == NULL || e->wstart == NULL) {
        free(pts);
        return SETUP_NOMEM;
    }
    e->n_sec = n_sec;
    for (size_t k = 0; k < e->m; k++) {
        size_t s0 = SIZE_MAX, s1 = 0;
        for (size_t q = g->seg_start[e->b[k].id]; q < g->seg_start[e->b[k].id + 1]; q++) {
            if (!g->segs[q].active)
                continue;
            s0 = s0 == SIZE_MAX ? section_index(pts, n_sec, g->segs[q].t0) : s0;
            s1 = section_index(pts, n_sec, g->segs[q].t1);
        }
        e->b[k].s0 = s0;
        e->b[k].s1 = s1;
        e->wstart[k] = total;
        total += s1 - s0 + 1;
        if (total > EX_MAX_OVERLAPS) {
            free(pts);
            return SETUP_TOO_LARGE;
        }
    }
    e->wlo = malloc((total ? total : 1) * sizeof *e->wlo);
    e->whi = malloc((total ? total : 1) * sizeof *e->whi);
    if (e->wlo == NULL || e->whi == NULL) {
        free(pts);
        return SETUP_NOMEM;
    }
    for (size_t k = 0; k < total; k++) {
        e->wlo[k] = 1; /* none */
        e->whi[k] = 0;
    }
    for (size_t k = 0; k < e->m; k++)
        for (size_t q = g->seg_start[e->b[k].id]; q < g->seg_start[e->b[k].id + 1]; q++) {
            const tp_seg *sg = &g->segs[q];
            if (!sg->active)
                continue;
            const size_t sa = section_index(pts, n_sec, sg->t0);
            const size_t sb = section_index(pts, n_sec, sg->t1);
            for (size_t sct = sa; sct <= sb; sct++) {
                e->wlo[e->wstart[k] + sct - e->b[k].s0] = sg->lo;
                e->whi[e->wstart[k] + sct - e->b[k].s0] = sg->hi;
            }
        }
    free(pts);
    return SETUP_OK;
}

/* With gaps, the conflict of buffers i and j (i != j): 0 none (no section where both have a
 * window, or A + B <= 1: no integer offset difference is forbidden), 1 a conflict with A > 0
 * and B > 0 (*up = A, *dn = B), -1 exactly one of them > 0 (exact_pairs.c takes it). */
static int ex_gap_pair(const ex *e, size_t i, size_t j, size_t *up, size_t *dn)
{
    if (e->b[i].s0 > e->b[j].s1 || e->b[j].s0 > e->b[i].s1)
        return 0;
    if (!tp_general_reach(e->gen, e->b[i].id, e->b[j].id, up, dn) || *up + *dn <= 1)
        return 0; /* with *up, *dn clamped at 0, the true A + B is at most 1 too */
    return *up > 0 && *dn > 0 ? 1 : -1;
}

/* Overlap lists with gaps: the pairs in conflict, with A and B (ov_up, ov_dn). A pair with
 * exactly one of them > 0 ends the setup: SETUP_ONE_SIDED (the search over pair
 * alternatives takes the problem instead). */
static int ex_build_overlaps_gaps(ex *e)
{
    const size_t m = e->m;
    size_t total = 0, up = 0, dn = 0;
    for (size_t i = 0; i < m; i++) {
        if (setup_past_deadline(e, i))
            return SETUP_TIMED_OUT;
        for (size_t j = 0; j < m; j++) {
            const int c = i != j ? ex_gap_pair(e, i, j, &up, &dn) : 0;
            if (c < 0)
                return SETUP_ONE_SIDED;
            e->ov_start[i + 1] += (size_t)c;
        }
    }
    for (size_t i = 0; i < m; i++) {
        total += e->ov_start[i + 1];
        e->ov_start[i + 1] = total;
    }
    if (total > EX_MAX_OVERLAPS)
        return SETUP_TOO_LARGE;
    e->ov = malloc((total ? total : 1) * sizeof *e->ov);
    e->ov_up = malloc((total ? total : 1) * sizeof *e->ov_up);
    e->ov_dn = malloc((total ? total : 1) * sizeof *e->ov_dn);
    if (e->ov == NULL || e->ov_up == NULL || e->ov_dn == NULL)
        return SETUP_NOMEM;
    for (size_t i = 0, k = 0; i < m; i++) {
        if (setup_past_deadline(e, i))
            return SETUP_TIMED_OUT;
        for (size_t j = 0; j < m; j++)
            if (i != j && ex_gap_pair(e, i, j, &up, &dn) > 0) {
                e->ov[k] = (uint32_t)j;
                e->ov_up[k] = up;
                e->ov_dn[k++] = dn;
            }
    }
    return SETUP_OK;
}

/* Overlap lists: buffers sharing a section. Building them is quadratic (a tenth of a second
 * at the 4,096-buffer maximum), so the time limit is checked here too. */
static int ex_build_overlaps(ex *e)
{
    const size_t m = e->m;
    size_t total = 0;
    for (size_t i = 0; i < m; i++) {
        if (setup_past_deadline(e, i))
            return SETUP_TIMED_OUT;
        for (size_t j = 0; j < m; j++)
            if (i != j && e->b[i].s0 <= e->b[j].s1 && e->b[j].s0 <= e->b[i].s1)
                e->ov_start[i + 1]++;
    }
    for (size_t i = 0; i < m; i++) {
        total += e->ov_start[i + 1];
        e->ov_start[i + 1] = total;
    }
    if (total > EX_MAX_OVERLAPS)
        return SETUP_TOO_LARGE;
    e->ov = malloc((total ? total : 1) * sizeof *e->ov);
    if (e->ov == NULL)
        return SETUP_NOMEM;
    for (size_t i = 0, k = 0; i < m; i++) {
        if (setup_past_deadline(e, i))
            return SETUP_TIMED_OUT;
        for (size_t j = 0; j < m; j++)
            if (i != j && e->b[i].s0 <= e->b[j].s1 && e->b[j].s0 <= e->b[i].s1)
                e->ov[k++] = (uint32_t)j;
    }
    return SETUP_OK;
}

/* Fills the bytes to place per section; *feasible = 0 when a buffer or a section alone
 * exceeds the limit. */
static int ex_fill_sections(ex *e, int *feasible)
{
    *feasible = 1;
    for (size_t k = 0; k < e->m; k++) {
        if (setup_past_deadline(e, k))
            return SETUP_TIMED_OUT;
        if (e->b[k].size > e->limit)
            *feasible = 0;
        for (size_t s = e->b[k].s0; s <= e->b[k].s1; s++) {
            size_t lo = 0, hi = e->b[k].size;
            if (e->gen != NULL && !ex_win(e, (uint32_t)k, s, &lo, &hi))
                continue;
            if (hi - lo > SIZE_MAX - e->rem[s])
                *feasible = 0;
            else
                e->rem[s] += hi - lo;
        }
    }
    if (e->fixed_top > e->limit)
        *feasible = 0;
    for (size_t s = 0; s < e->n_sec && *feasible; s++)
        if (e->rem[s] > e->limit)
            *feasible = 0;
    unsigned long long whole = 0;
    for (size_t k = 0; k < e->m; k++)
        whole += (unsigned long long)e->b[k].size * (e->b[k].s1 - e->b[k].s0 + 1);
    e->area_step = whole / (4 * (unsigned long long)e->m) + 1;
    for (size_t k = 0; k < e->m; k++) {
        e->b[k].total = 0;
        for (size_t s = e->b[k].s0; s <= e->b[k].s1; s++)
            if (e->rem[s] > e->b[k].total)
                e->b[k].total = e->rem[s];
    }
    return SETUP_OK;
}

/* Restarts. The search has heavy tails: a heuristic is either lucky on an instance or lost.
 * So runs are cut off by node budgets following the Luby sequence; the first EX_ORDERS runs
 * try each branching rule and candidate order once, later runs also perturb the candidate
 * order from a seed derived from the run number. Node budgets keep it deterministic, and the
 * budgets grow without bound, so a run eventually completes and proves infeasibility when
 * there is no plan. */
static void ex_start_run(ex *e, unsigned long long run)
{
    e->order = (int)(run % EX_NORD);
    e->bl = (int)((run / EX_NORD) % 3);
    e->rng = run < EX_ORDERS ? 0 : (run + 1) * 0x9E3779B97F4A7C15ULL;
    unsigned long long budget = tp_luby(run + 1);
    e->run_end = budget >= (1ULL << 40) ? 0 : e->nodes + EX_FIRST_RUN * budget;
    e->run_out = 0;
}

/* A plan was found: keeps it and, when minimising, lowers the limit below its arena.
 * Returns whether the search is complete (not minimising, or nothing can be lower). */
static int ex_keep_plan(ex *e)
{
    size_t arena = e->fixed_top;
    for (size_t k = 0; k < e->m; k++)
        if (e->sol[k] + e->b[k].size > arena)
            arena = e->sol[k] + e->b[k].size;
    memcpy(e->best_pos, e->sol, e->m * sizeof *e->sol);
    e->found = 1;
    e->best_arena = arena;
    if (!e->minimise || arena == 0 || arena - 1 < e->lower_bound)
        return 1;
    e->limit = arena - 1;
    if (e->fixed_top > e->limit)
        return 1;
    for (size_t sct = 0; sct < e->n_sec; sct++)
        if (e->rem[sct] > e->limit)
            return 1;
    for (size_t k = 0; k < e->m; k++)
        if (e->b[k].size > e->limit)
            return 1;
    return 0;
}

static int ex_repair_best(ex *e, size_t *pos_out, size_t *arena);

/* A run ended without a plan: when it went deeper than the runs repaired before (more
 * buffers or more area placed), its deep placements are repaired and the best plan kept;
 * then the next run starts its own. Returns 0 when out of memory. */
static int ex_repair_run(ex *e)
{
    if (!e->found && (e->deep_depth[0] > e->rep_depth || e->deep_area > e->rep_area)) {
        size_t top = SIZE_MAX;
        if (!ex_repair_best(e, e->rep_tmp, &top))
            return 0;
        if (top < e->rep_arena) {
            size_t *t = e->rep_pos;
            e->rep_pos = e->rep_tmp;
            e->rep_tmp = t;
            e->rep_arena = top;
        }
        e->rep_depth = e->deep_depth[0] > e->rep_depth ? e->deep_depth[0] : e->rep_depth;
        e->rep_area = e->deep_area > e->rep_area ? e->deep_area : e->rep_area;
    }
    e->deep_depth[0] = e->deep_depth[1] = 0;
    e->deep_area = 0;
    return 1;
}

/* Minimising is a sequence of decisions, each limit one below the last plan found: a
 * decision can split into independent parts, an optimisation over a shared bound not.
 * With an aspiration, every other restart run decides at the lower bound instead (its own
 * sequence of orders and budgets): the tightest limit prunes hardest and a plan there ends
 * the search, and the runs below the best plan still get budgets without bound, so the
 * search stays complete. *complete receives whether the search space was exhausted. */
static int ex_decide(ex *e, int *complete)
{
    unsigned long long run[2] = { 0, 0 };
    *complete = 0;
    for (unsigned long long k = 0;; k++) {
        if (e->aspire >= e->limit)
            e->aspire = 0; /* the limit itself is as tight */
        const int asp = e->aspire > 0 && (k & 1) == 0; /* the first run aspires */
        const size_t upper = e->limit;
        if (asp)
            e->limit = e->aspire;
        ex_start_run(e, run[asp]++);
        size_t base = 0;
        e->pool_n = 0;
        if (!pool_reserve(e, e->m, &base))
            return SETUP_NOMEM;
        memcpy(e->pool + base, e->by_s0, e->m * sizeof *e->by_s0);
        int r = dfs(e, 0, e->m, 0, base, e->m);
        e->limit = upper;
        if (e->nomem)
            return SETUP_NOMEM;
        if (r == R_STOP && e->run_out && !e->stopped) {
            if (e->repair_runs && !ex_repair_run(e))
                return SETUP_NOMEM;
            continue;
        }
        if (r == R_STOP)
            return SETUP_OK;
        if (asp && r == R_FAIL) { /* nothing fits the lower bound: proven, stop aspiring */
            e->proven_lower = e->aspire + 1;
            e->aspire = 0;
            continue;
        }
        if (r == R_FAIL || ex_keep_plan(e)) {
            *complete = 1;
            return SETUP_OK;
        }
    }
}

/* The setup and the search; *complete as for ex_decide. */
static int ex_run(ex *e, const tp_tensor_lifetime *tensors, size_t count, size_t m,
                  int *complete)
{
    size_t *sec = malloc(m * sizeof *sec);
    int st = ex_build_buffers(e, tensors, count, m, sec);
    free(sec);
    if (st == SETUP_OK && e->gen != NULL)
        st = ex_build_windows(e);
    if (st == SETUP_OK)
        st = ex_build_sections(e);
    if (st == SETUP_OK)
        st = e->gen != NULL ? ex_build_overlaps_gaps(e) : ex_build_overlaps(e);
    int feasible = 0;
    if (st == SETUP_OK)
        st = ex_fill_sections(e, &feasible);
    if (st != SETUP_OK)
        return st;
    if (!feasible) {
        *complete = 1;
        return SETUP_OK;
    }
    return ex_decide(e, complete);
}

/* A buffer left out of a deep placement, with its keys for the order of the repair:
 * sorted by k1, then k2, larger first, then by index. */
typedef struct repair_item {
    unsigned long long k1, k2;
    uint32_t i;
} repair_item;

static int repair_order(const void *pa, const void *pb)
{
    const repair_item *a = pa, *b = pb;
    if (a->k1 != b->k1)
        return a->k1 > b->k1 ? -1 : 1;
    if (a->k2 != b->k2)
        return a->k2 > b->k2 ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* The orders of the repair: larger first; more area (bytes x sections) first; earlier
 * first section first, larger first among equals. */
#define EX_REPAIR_ORDERS 3
static repair_item repair_key(const ex *e, uint32_t i, int order)
{
    const ex_buf *b = &e->b[i];
    const unsigned long long secs = b->s1 - b->s0 + 1;
    if (order == 0)
        return (repair_item){ b->size, 0, i };
    if (order == 1)
        return (repair_item){ (unsigned long long)b->size * secs, b->size, i };
    return (repair_item){ e->n_sec - b->s0, b->size, i };
}

static int by_pos_start(const void *pa, const void *pb)
{
    const size_t *a = pa, *b = pb;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

/* The lowest offset (a multiple of align) at which size bytes clear every interval
 * iv[0..n) = {start, end} (sorted here); SIZE_MAX when it would overflow. */
static size_t first_fit(size_t (*iv)[2], size_t n, size_t size, size_t align)
{
    qsort(iv, n, sizeof *iv, by_pos_start);
    size_t y = 0;
    for (size_t k = 0; k < n; k++) {
        if (iv[k][1] <= y)
            continue;
        if (iv[k][0] >= y && iv[k][0] - y >= size)
            break;
        y = round_up(iv[k][1], align);
        if (y < iv[k][1])
            return SIZE_MAX;
    }
    return y > SIZE_MAX - size ? SIZE_MAX : y;
}

/* With gaps: the lowest offset (a multiple of align) in none of the forbidden ranges
 * iv[0..n) = [lo, hi) (sorted here); SIZE_MAX when it, or it + size, would overflow. */
static size_t first_allowed(size_t (*iv)[2], size_t n, size_t size, size_t align)
{
    qsort(iv, n, sizeof *iv, by_pos_start);
    size_t cur = 0;
    for (size_t k = 0; k < n; k++) {
        const size_t y = round_up(cur, align);
        if (y == SIZE_MAX)
            return SIZE_MAX;
        if (y < iv[k][0])
            break;
        cur = iv[k][1] > cur ? iv[k][1] : cur;
    }
    const size_t y = round_up(cur, align);
    return y == SIZE_MAX || y > SIZE_MAX - size ? SIZE_MAX : y;
}

/* Scratch of the repairs. */
typedef struct repair_scratch {
    repair_item *rest;
    unsigned char *have;
    size_t (*iv)[2];
    size_t *pos;
} repair_scratch;

/* One repair: deep placement `snap`, the buffers it left out placed one by one in `order`
 * at the lowest offset clear of every placed buffer they meet (sharing no byte with a
 * buffer it meets holds by construction). Returns the plan's top in rs->pos, SIZE_MAX when
 * there is none (overflow, or the time is up: past the time limit the repairs get a grace
 * of 20 ms, as each costs up to O(m^2 log m) on dense problems). */
#define EX_REPAIR_GRACE 0.02
static size_t ex_repair(ex *e, repair_scratch *rs, int snap, int order)
{
    const size_t m = e->m;
    size_t n_rest = 0, top = 0;
    memcpy(rs->have, e->deep_placed[snap], m);
    memcpy(rs->pos, e->deep_pos[snap], m * sizeof *rs->pos);
    for (uint32_t i = 0; i < m; i++)
        if (!rs->have[i])
            rs->rest[n_rest++] = repair_key(e, i, order);
    qsort(rs->rest, n_rest, sizeof *rs->rest, repair_order);
    for (size_t r = 0; r < n_rest; r++) {
        if ((r & 31u) == 31u && e->deadline > 0 &&
            tp_clock_seconds() > e->deadline + EX_REPAIR_GRACE)
            return SIZE_MAX;
        const uint32_t c = rs->rest[r].i;
        size_t n = 0;
        for (size_t k = e->ov_start[c]; k < e->ov_start[c + 1]; k++)
            if (rs->have[e->ov[k]] && e->gen == NULL) {
                rs->iv[n][0] = rs->pos[e->ov[k]];
                rs->iv[n++][1] = rs->pos[e->ov[k]] + e->b[e->ov[k]].size;
            } else if (rs->have[e->ov[k]]) { /* the offsets of c it forbids */
                const size_t o = rs->pos[e->ov[k]];
                rs->iv[n][0] = o + 1 > e->ov_up[k] ? o + 1 - e->ov_up[k] : 0;
                rs->iv[n++][1] = sat_add(o, e->ov_dn[k]);
            }
        rs->pos[c] = e->gen != NULL ? first_allowed(rs->iv, n, e->b[c].size, e->b[c].align)
                                    : first_fit(rs->iv, n, e->b[c].size, e->b[c].align);
        if (rs->pos[c] == SIZE_MAX)
            return SIZE_MAX;
        rs->have[c] = 1;
    }
    for (size_t i = 0; i < m; i++)
        top = rs->pos[i] + e->b[i].size > top ? rs->pos[i] + e->b[i].size : top;
    return top;
}

/* When the search found no plan within its limit: its two deep placements (most buffers,
 * most area), each completed by the repair in each of its orders; the lowest plan goes to
 * pos_out and its top to *arena (SIZE_MAX: none). Returns 0 when out of memory. */
static int ex_repair_best(ex *e, size_t *pos_out, size_t *arena)
{
    const size_t m = e->m;
    *arena = SIZE_MAX;
    repair_scratch rs = { malloc(m * sizeof *rs.rest), malloc(m), malloc(m * sizeof *rs.iv),
                          malloc(m * sizeof *rs.pos) };
    const int ok = rs.rest != NULL && rs.have != NULL && rs.iv != NULL && rs.pos != NULL;
    for (int snap = 0; ok && snap < 2; snap++) {
        if (e->deep_depth[snap] == 0 || (snap == 1 && e->deep_depth[1] == e->deep_depth[0] &&
                                         memcmp(e->deep_placed[0], e->deep_placed[1], m) == 0))
            continue; /* nothing placed, or the same buffers */
        for (int order = 0; order < EX_REPAIR_ORDERS; order++) {
            const size_t top = ex_repair(e, &rs, snap, order);
            if (top < *arena) {
                *arena = top;
                memcpy(pos_out, rs.pos, m * sizeof *pos_out);
            }
        }
    }
    free(rs.rest);
    free(rs.have);
    free(rs.iv);
    free(rs.pos);
    return ok;
}

/* tp_exact_pairs over the m tensors that take part. */
static tp_status exact_by_pairs(const tp_tensor_lifetime *tensors, size_t count,
                                const tp_exact_params *params, const tp_general *gen, size_t m,
                                size_t fixed_top, size_t *offsets, tp_exact_result *result)
{
    size_t *ids = malloc(m * sizeof *ids);
    if (ids == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the exact search", m);
    for (size_t i = 0, k = 0; i < count; i++)
        if (ex_takes(gen, tensors, i))
            ids[k++] = i;
    const tp_status st = tp_exact_pairs(tensors, count, params, ids, m, fixed_top, offsets, result);
    free(ids);
    return st;
}

tp_status tp_exact_search(const tp_tensor_lifetime *tensors, size_t count,
                          const tp_exact_params *params, size_t *offsets,
                          tp_exact_result *result)
{
    memset(result, 0, sizeof *result);
    const tp_general *gen =
        params->general != NULL && params->general->has_gaps ? params->general : NULL;
    size_t m = 0, fixed_top = 0;
    for (size_t i = 0; i < count; i++) {
        const int takes = ex_takes(gen, tensors, i);
        m += takes;
        if (!takes && tensors[i].size > fixed_top)
            fixed_top = tensors[i].size;
    }
    if (m == 0) {
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
        result->found = fixed_top <= params->limit;
        result->arena = fixed_top;
        result->complete = 1;
        return TP_OK;
    }
    if (m > EX_MAX_BUFFERS) {
        /* too many to name: report that nothing was explored */
        return TP_OK;
    }
    ex e;
    ex_init(&e, params);
    e.fixed_top = fixed_top;
    int complete = 0;
    const int st = ex_run(&e, tensors, count, m, &complete);
    if (st == SETUP_ONE_SIDED) { /* a one-sided pair: the search over pair alternatives */
        ex_free(&e);
        return exact_by_pairs(tensors, count, params, gen, m, fixed_top, offsets, result);
    }
    if (st != SETUP_OK) {
        ex_free(&e);
        if (st == SETUP_NOMEM)
            return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the exact search", m);
        /* timed out during the setup or too many overlaps: nothing explored, nothing found */
        result->timed_out = st == SETUP_TIMED_OUT;
        return TP_OK;
    }
    result->found = e.found;
    result->arena = e.best_arena;
    result->timed_out = e.timed_out;
    result->complete = complete;
    result->nodes = e.nodes;
    result->proven_lower = e.proven_lower;
    size_t repaired = SIZE_MAX;
    if (!e.found && !ex_repair_run(&e)) { /* the last run's, if it went deeper */
        ex_free(&e);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the exact search", m);
    }
    if (!e.found && e.rep_arena != SIZE_MAX) {
        repaired = e.rep_arena;
        memcpy(e.best_pos, e.rep_pos, m * sizeof *e.best_pos);
    }
    if (!e.found && repaired != SIZE_MAX &&
        (params->known_best == 0 || repaired < params->known_best)) {
        result->repaired = 1;
        result->arena = repaired;
    }
    if (e.found || result->repaired) {
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
        for (size_t k = 0; k < m; k++)
            offsets[e.b[k].id] = e.best_pos[k];
    }
    if (e.progress != NULL)
        report_progress(&e, tp_clock_seconds());
    ex_free(&e);
    return TP_OK;
}

