/* The time sweep for tight problems (docs/exact-solver.md, "Tight problems: the time sweep").
 *
 * A problem is tight at a limit L when every node from the first use of its first tensor to
 * the last use of its last one has exactly L live bytes. A plan within L then tiles [0, L) at
 * every node: the bytes freed between two consecutive first uses are exactly the bytes the
 * tensors starting at the second one must fill. The sweep walks the first uses in time order
 * and, at each, fills the lowest free byte with one of the starting tensors (exact cover),
 * depth first on an explicit stack, under Luby restarts that perturb the order of the
 * candidates. An exhausted run proves that no plan within L exists. */
#include "planner/planner_internal.h"

#include "common/clock.h"
#include "common/error.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SW_NONE SIZE_MAX
#define SW_FIRST_RUN 1000ULL /* nodes of the unit restart budget */
#define SW_CUT_NODES 200000ULL /* the first per-part budget of the cuts (exact_strips.c) */
#define SW_REACH_BYTES ((size_t)128 << 20) /* the most memory for the subset sums */
#define SW_WORK_PER_CLOCK (1ULL << 20) /* inner-loop steps between two reads of the clock */

/* ---- Tightness ----------------------------------------------------------------------- */

typedef struct sw_event {
    size_t node, size;
    int add; /* 0: bytes released at node (after last_use), 1: bytes acquired at node */
} sw_event;

static int by_event(const void *pa, const void *pb)
{
    const sw_event *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return a->add - b->add; /* releases first: the load never passes its true value */
}

tp_status tp_sweep_tight(const tp_tensor_lifetime *t, size_t count, size_t limit, int *tight)
{
    *tight = 0;
    size_t m = 0;
    for (size_t i = 0; i < count; i++) {
        if (t[i].size == 0)
            continue;
        if (t[i].last_use == SIZE_MAX)
            return TP_OK; /* no node after it to release at; not handled */
        m++;
    }
    if (m == 0 || limit == 0)
        return TP_OK;
    sw_event *ev = malloc(2 * m * sizeof *ev);
    if (ev == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the tightness check", m);
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (t[i].size > 0) {
            ev[n++] = (sw_event){ t[i].first_use, t[i].size, 1 };
            ev[n++] = (sw_event){ t[i].last_use + 1, t[i].size, 0 };
        }
    qsort(ev, n, sizeof *ev, by_event);
    size_t load = 0;
    int ok = 1;
    for (size_t i = 0; i < n && ok;) {
        const size_t node = ev[i].node;
        for (; i < n && ev[i].node == node; i++) {
            if (ev[i].add) {
                ok = ok && ev[i].size <= limit - load;
                load += ok ? ev[i].size : 0;
            } else {
                load -= ev[i].size;
            }
        }
        /* the load from node to the next event; after the last one it is 0 */
        ok = ok && (i == n ? load == 0 : load == limit);
    }
    free(ev);
    *tight = ok;
    return TP_OK;
}

/* ---- The search ---------------------------------------------------------------------- */

/* Tensors of one section with the same size and last use: interchangeable, so only the
 * next unused member is ever tried. */
typedef struct sw_class {
    size_t size, last;
    size_t end;              /* the section where its bytes are free again (n_sec: never) */
    size_t mbeg, mcount, used; /* members mem[mbeg .. mbeg + mcount), the first `used` placed */
} sw_class;

typedef struct sw_iv {
    size_t lo, hi, sufmax; /* free bytes [lo, hi); longest interval from this one on */
    size_t below, above;   /* the member slots just below lo and at hi (SW_NONE: the edge) */
} sw_iv;

typedef struct sw_frame {
    size_t k, j, y;  /* section, its interval, the lowest free byte */
    size_t cur;      /* next position in the section's order of classes to try */
    size_t chosen;   /* the class this frame placed at y (SW_NONE: none now) */
    size_t below;    /* the class placed just below y in this section (SW_NONE: none) */
    size_t bslot;    /* the member slot just below y (SW_NONE: address 0) */
    size_t undo[2][2]; /* neighbour links the placement changed: slot, old value */
    int first;       /* the section's first frame: it releases the section's intervals */
} sw_frame;

typedef struct sw {
    size_t limit, n_sec, n_cls;
    sw_class *cls;
    size_t *mem, *pos;     /* caller's index and offset, per member slot */
    size_t *sec_cls;       /* n_sec + 1: section k's classes are [sec_cls[k], sec_cls[k + 1]) */
    size_t *ord;           /* per section, the order its classes are tried in */
    size_t *freed_beg, *freed; /* classes whose bytes are free again at section k */
    sw_iv *iv;
    size_t iv_n, *iv_base, *iv_cnt;
    size_t (*rng_scratch)[3]; /* freed ranges of one section (lo, hi, slot), sorted */
    /* Per member slot: its size, the section where it is freed, and its neighbours in the
     * tiling (below and above; SW_NONE: the edge of the arena), kept current below the
     * lowest free byte. */
    size_t *slot_size, *slot_end, *nb_lo, *nb_hi;
    /* Per section, the subset sums of its starters' sizes (bitsets of `words` words), or
     * NULL when they would take too much memory */
    uint64_t *reach;
    size_t words;
    sw_frame *fr;
    size_t depth;
    unsigned long long nodes, node_limit, run_end;
    unsigned long long work, next_clock; /* inner-loop steps; when to read the clock next */
    const tp_sweep_params *params; /* the deadline and the progress reports */
    int stopped, run_out;
} sw;

typedef struct sw_key {
    size_t first, last, size, index;
} sw_key;

/* Members in the order of sections, then classes: first use, last use, larger size, index. */
static int by_key(const void *pa, const void *pb)
{
    const sw_key *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    if (a->last != b->last)
        return a->last < b->last ? -1 : 1;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int by_lo(const void *pa, const void *pb)
{
    const size_t *a = pa, *b = pb;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

static void sw_free(sw *s)
{
    free(s->cls);
    free(s->mem);
    free(s->pos);
    free(s->sec_cls);
    free(s->ord);
    free(s->freed_beg);
    free(s->freed);
    free(s->iv);
    free(s->iv_base);
    free(s->iv_cnt);
    free(s->rng_scratch);
    free(s->fr);
    free(s->slot_size);
    free(s->slot_end);
    free(s->nb_lo);
    free(s->nb_hi);
    free(s->reach);
}

/* The section (index among the distinct first uses, starts[0..n)) of the first one above x. */
static size_t first_section_after(const size_t *starts, size_t n, size_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (starts[mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Members sorted by (first use, last use, size), grouped into classes and sections. */
static int sw_build_classes(sw *s, const tp_tensor_lifetime *t, size_t count, size_t m)
{
    sw_key *key = malloc(m * sizeof *key);
    size_t *starts = malloc(m * sizeof *starts);
    if (key == NULL || starts == NULL) {
        free(key);
        free(starts);
        return 0;
    }
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (t[i].size > 0)
            key[n++] = (sw_key){ t[i].first_use, t[i].last_use, t[i].size, i };
    qsort(key, m, sizeof *key, by_key);
    s->n_sec = s->n_cls = 0;
    for (size_t k = 0; k < m; k++) {
        const sw_key *a = &key[k], *p = k > 0 ? &key[k - 1] : NULL;
        s->mem[k] = a->index;
        if (p == NULL || p->first != a->first) {
            starts[s->n_sec] = a->first;
            s->sec_cls[s->n_sec++] = s->n_cls;
        }
        if (p == NULL || p->first != a->first || p->last != a->last || p->size != a->size)
            s->cls[s->n_cls++] = (sw_class){ a->size, a->last, 0, k, 0, 0 };
        s->cls[s->n_cls - 1].mcount++;
    }
    free(key);
    s->sec_cls[s->n_sec] = s->n_cls;
    for (size_t c = 0; c < s->n_cls; c++) {
        s->cls[c].end = first_section_after(starts, s->n_sec, s->cls[c].last);
        for (size_t u = 0; u < s->cls[c].mcount; u++) {
            s->slot_size[s->cls[c].mbeg + u] = s->cls[c].size;
            s->slot_end[s->cls[c].mbeg + u] = s->cls[c].end;
        }
    }
    free(starts);
    /* classes freed per section: a counting sort by end */
    memset(s->freed_beg, 0, (s->n_sec + 2) * sizeof *s->freed_beg);
    for (size_t c = 0; c < s->n_cls; c++)
        s->freed_beg[s->cls[c].end + 1]++;
    for (size_t k = 0; k <= s->n_sec; k++)
        s->freed_beg[k + 1] += s->freed_beg[k];
    size_t *fill = s->iv_cnt; /* scratch: n_sec + 1 entries */
    memcpy(fill, s->freed_beg, (s->n_sec + 1) * sizeof *fill);
    for (size_t c = 0; c < s->n_cls; c++)
        s->freed[fill[s->cls[c].end]++] = c;
    return 1;
}

static int sw_alloc(sw *s, size_t m)
{
    memset(s, 0, sizeof *s);
    s->cls = malloc(m * sizeof *s->cls);
    s->mem = malloc(m * sizeof *s->mem);
    s->pos = malloc(m * sizeof *s->pos);
    s->sec_cls = malloc((m + 1) * sizeof *s->sec_cls);
    s->ord = malloc(m * sizeof *s->ord);
    s->freed_beg = malloc((m + 2) * sizeof *s->freed_beg);
    s->freed = malloc(m * sizeof *s->freed);
    s->iv = malloc((m + 1) * sizeof *s->iv);
    s->iv_base = malloc((m + 1) * sizeof *s->iv_base);
    s->iv_cnt = malloc((m + 1) * sizeof *s->iv_cnt);
    s->rng_scratch = malloc(m * sizeof *s->rng_scratch);
    s->fr = malloc((m + 1) * sizeof *s->fr);
    s->slot_size = malloc(m * sizeof *s->slot_size);
    s->slot_end = malloc(m * sizeof *s->slot_end);
    s->nb_lo = malloc(m * sizeof *s->nb_lo);
    s->nb_hi = malloc(m * sizeof *s->nb_hi);
    return s->cls && s->mem && s->pos && s->sec_cls && s->ord && s->freed_beg && s->freed &&
           s->iv && s->iv_base && s->iv_cnt && s->rng_scratch && s->fr && s->slot_size &&
           s->slot_end && s->nb_lo && s->nb_hi;
}

/* The order of the classes of every section for restart run r: larger first (ties by
 * later last use), later last use first, earlier last use first; from run 3 on, a shuffle
 * of the first from a seed derived from r. */
static void sw_order(sw *s, unsigned long long r)
{
    uint64_t x = (r + 1) * 0x9E3779B97F4A7C15ULL | 1u;
    for (size_t k = 0; k < s->n_sec; k++) {
        size_t *o = s->ord + s->sec_cls[k];
        const size_t n = s->sec_cls[k + 1] - s->sec_cls[k];
        for (size_t i = 0; i < n; i++) { /* insertion sort: sections hold few classes */
            const size_t c = s->sec_cls[k] + i;
            size_t p = i;
            for (; p > 0; p--) {
                const sw_class *a = &s->cls[o[p - 1]], *b = &s->cls[c];
                int before;
                if (r % 3 == 1)
                    before = b->last != a->last ? b->last > a->last : b->size > a->size;
                else if (r % 3 == 2)
                    before = b->last != a->last ? b->last < a->last : b->size > a->size;
                else
                    before = b->size != a->size ? b->size > a->size : b->last > a->last;
                if (!before)
                    break;
                o[p] = o[p - 1];
            }
            o[p] = c;
        }
        for (size_t i = n; r >= 3 && i > 1; i--) {
            const size_t j = (size_t)(tp_xorshift64s(&x) % i), tmp = o[i - 1];
            o[i - 1] = o[j];
            o[j] = tmp;
        }
    }
}

/* Whether x is a sum of some of section k's starters (1 when the sums are not kept). */
static int sw_reach(const sw *s, size_t k, size_t x)
{
    if (s->reach == NULL)
        return 1;
    const uint64_t *b = s->reach + k * s->words;
    return x / 64 < s->words && (b[x / 64] >> (x % 64) & 1u);
}

/* The subset sums of every section's starters, when n_sec x (limit + 1) bits fit in
 * SW_REACH_BYTES (otherwise s->reach stays NULL and nothing is pruned by them): per starter,
 * the bitset or'ed with itself shifted by the size. Up to 2^24 words a starter: the clock
 * is read by the words done, and a passed deadline stops it (s->stopped). */
static int sw_build_reach(sw *s)
{
    s->words = s->limit / 64 + 1;
    if (s->words > SW_REACH_BYTES / 8 / s->n_sec)
        return 1;
    s->reach = calloc(s->n_sec * s->words, sizeof *s->reach);
    if (s->reach == NULL)
        return 0;
    for (size_t k = 0; k < s->n_sec; k++) {
        uint64_t *b = s->reach + k * s->words;
        b[0] = 1;
        for (size_t c = s->sec_cls[k]; c < s->sec_cls[k + 1]; c++)
            for (size_t u = 0; u < s->cls[c].mcount; u++) {
                const size_t q = s->cls[c].size / 64, r = s->cls[c].size % 64;
                for (size_t i = s->words; i-- > q;) {
                    uint64_t v = b[i - q] << r;
                    if (r != 0 && i > q)
                        v |= b[i - q - 1] >> (64 - r);
                    b[i] |= v;
                }
                s->work += s->words - q;
                if (s->work >= s->next_clock) {
                    s->next_clock = s->work + SW_WORK_PER_CLOCK;
                    if (tp_sweep_clock(s->params, 0)) {
                        s->stopped = 1;
                        return 1;
                    }
                }
            }
    }
    return 1;
}

/* Enters section k: its free intervals (all of [0, limit) at the first section; else the
 * coalesced bytes of the classes freed at k), and whether its starters can tile them: each
 * interval at least as long as the smallest starter, the largest starter fits in one, and
 * as many free bytes as starting ones. Pushes the intervals; 0 = dead end (nothing kept). */
static int sw_enter(sw *s, size_t k)
{
    size_t nr = 0;
    if (k == 0) {
        s->rng_scratch[nr][0] = 0;
        s->rng_scratch[nr][1] = s->limit;
        s->rng_scratch[nr++][2] = SW_NONE;
    }
    for (size_t f = s->freed_beg[k]; k > 0 && f < s->freed_beg[k + 1]; f++) {
        const sw_class *c = &s->cls[s->freed[f]];
        for (size_t u = 0; u < c->mcount; u++) {
            s->rng_scratch[nr][0] = s->pos[c->mbeg + u];
            s->rng_scratch[nr][1] = s->pos[c->mbeg + u] + c->size;
            s->rng_scratch[nr++][2] = c->mbeg + u;
        }
    }
    qsort(s->rng_scratch, nr, sizeof *s->rng_scratch, by_lo);
    s->work += nr;
    size_t lo_size = SIZE_MAX, hi_size = 0, need = 0;
    for (size_t c = s->sec_cls[k]; c < s->sec_cls[k + 1]; c++) {
        lo_size = s->cls[c].size < lo_size ? s->cls[c].size : lo_size;
        hi_size = s->cls[c].size > hi_size ? s->cls[c].size : hi_size;
        need += s->cls[c].size * s->cls[c].mcount;
    }
    const size_t base = s->iv_n;
    size_t n = 0, have = 0;
    for (size_t r = 0; r < nr; r++) {
        const size_t *g = s->rng_scratch[r];
        have += g[1] - g[0];
        const size_t below = g[2] == SW_NONE ? SW_NONE : s->nb_lo[g[2]];
        const size_t above = g[2] == SW_NONE ? SW_NONE : s->nb_hi[g[2]];
        if (n > 0 && s->iv[base + n - 1].hi == g[0]) {
            s->iv[base + n - 1].hi = g[1];
            s->iv[base + n - 1].above = above;
        } else {
            s->iv[base + n++] = (sw_iv){ g[0], g[1], 0, below, above };
        }
    }
    size_t longest = 0;
    for (size_t j = n; j-- > 0;) {
        const size_t len = s->iv[base + j].hi - s->iv[base + j].lo;
        if (len < lo_size || !sw_reach(s, k, len))
            return 0;
        longest = len > longest ? len : longest;
        s->iv[base + j].sufmax = longest;
    }
    if (have != need || n == 0 || hi_size > longest)
        return 0;
    s->iv_base[k] = base;
    s->iv_cnt[k] = n;
    s->iv_n = base + n;
    return 1;
}

/* The smallest and largest sizes among the classes of section k with members left, after
 * one more member of class `take` is used, when it is not SW_NONE. 0 / SIZE_MAX: none. */
static void sw_extremes(const sw *s, size_t k, size_t take, size_t *lo, size_t *hi)
{
    *lo = SIZE_MAX;
    *hi = 0;
    for (size_t c = s->sec_cls[k]; c < s->sec_cls[k + 1]; c++) {
        const size_t left = s->cls[c].mcount - s->cls[c].used - (c == take);
        if (left == 0)
            continue;
        *lo = s->cls[c].size < *lo ? s->cls[c].size : *lo;
        *hi = s->cls[c].size > *hi ? s->cls[c].size : *hi;
    }
}

/* Whether class c may be placed at frame f's byte: it fits in the rest of the interval;
 * symmetry (a class right above one of the same last use must not be larger, since the two
 * could swap); and what is left can still be tiled (the rest of the interval empty or at
 * least the smallest starter left, the largest left fits somewhere). */
static int sw_admits(const sw *s, const sw_frame *f, size_t c)
{
    const sw_class *a = &s->cls[c];
    const sw_iv *v = &s->iv[s->iv_base[f->k] + f->j];
    if (a->used == a->mcount || a->size > v->hi - f->y)
        return 0;
    if (f->below != SW_NONE && f->below != c && s->cls[f->below].last == a->last &&
        s->cls[f->below].size < a->size)
        return 0;
    const size_t rest = v->hi - f->y - a->size;
    size_t lo, hi;
    sw_extremes(s, f->k, c, &lo, &hi);
    if (rest > 0 && (rest < lo || !sw_reach(s, f->k, rest)))
        return 0;
    size_t room = rest;
    if (f->j + 1 < s->iv_cnt[f->k] && s->iv[s->iv_base[f->k] + f->j + 1].sufmax > room)
        room = s->iv[s->iv_base[f->k] + f->j + 1].sufmax;
    return hi <= room;
}

int tp_sweep_clock(const tp_sweep_params *p, unsigned long long nodes)
{
    tp_sweep_ticker *t = p->ticker;
    if (p->deadline <= 0 && t == NULL)
        return 0;
    const double now = tp_clock_seconds();
    if (p->deadline > 0 && now >= p->deadline)
        return 1;
    if (t != NULL && now - t->last >= t->every) {
        tp_plan_progress r;
        memset(&r, 0, sizeof r); /* placed, to_place: no greedy pass under way */
        r.have_best = t->have_best;
        r.best_arena = t->have_best ? t->best_arena : 0;
        r.lower_bound = t->lower_bound;
        r.elapsed_seconds = now - t->start;
        r.nodes = p->nodes_before + nodes;
        t->progress(&r, t->user);
        t->last = now;
    }
    return 0;
}

/* The budget of the run and of the whole search; the clock every 1,024 nodes, or sooner
 * after many inner-loop steps (large sections make a node cost more). */
static int sw_poll(sw *s)
{
    s->nodes++;
    if (s->node_limit != 0 && s->nodes >= s->node_limit) {
        s->stopped = 1;
        return 1;
    }
    if (s->run_end != 0 && s->nodes >= s->run_end) {
        s->run_out = 1;
        return 1;
    }
    if ((s->nodes & 1023u) == 0 || s->work >= s->next_clock) {
        s->next_clock = s->work + SW_WORK_PER_CLOCK;
        if (tp_sweep_clock(s->params, s->nodes)) {
            s->stopped = 1;
            return 1;
        }
    }
    return 0;
}

enum { SW_FAIL = 0, SW_FOUND = 1, SW_STOP = 2, SW_PUSHED = 3 };

/* The run of adjacent tiles freed at the same section as slot x, walking from x down and
 * up the links: when both tiles that bound it are freed later (or are the edges of the
 * arena), it is exactly one free interval at that section, so its length must be a sum of
 * that section's starters. A bound freed earlier leaves the run open (what replaces it may
 * join); so does a tile of the current section not yet replaced. Returns 0: not tileable. */
static int sw_run_ok(const sw *s, size_t x)
{
    const size_t e = s->slot_end[x];
    if (e == s->n_sec || s->reach == NULL)
        return 1;
    size_t len = 0, d = x;
    for (; d != SW_NONE && s->slot_end[d] == e; d = s->nb_lo[d])
        len += s->slot_size[d];
    if (d != SW_NONE && s->slot_end[d] < e)
        return 1;
    for (d = s->nb_hi[x]; d != SW_NONE && s->slot_end[d] == e; d = s->nb_hi[d])
        len += s->slot_size[d];
    if (d != SW_NONE && s->slot_end[d] < e)
        return 1;
    return sw_reach(s, e, len);
}

/* Links slot x above `below` (when not the edge), remembering the old link in u. */
static void sw_link(sw *s, size_t below, size_t x, size_t *u)
{
    u[0] = u[1] = SW_NONE;
    if (x != SW_NONE)
        s->nb_lo[x] = below;
    if (below != SW_NONE && x != SW_NONE) {
        u[0] = below;
        u[1] = s->nb_hi[below];
        s->nb_hi[below] = x;
    }
}

/* Takes back the placement of the top frame: its class member and its links. */
static void sw_unplace(sw *s, sw_frame *f)
{
    if (f->undo[1][0] != SW_NONE)
        s->nb_lo[f->undo[1][0]] = f->undo[1][1];
    if (f->undo[0][0] != SW_NONE)
        s->nb_hi[f->undo[0][0]] = f->undo[0][1];
    s->cls[f->chosen].used--;
    f->chosen = SW_NONE;
}

/* Places class c at the top frame's byte, links it into the tiling, checks the runs it
 * closes, and pushes the next state (entering the next section when this one is full).
 * SW_FOUND when every section is tiled; SW_FAIL when a run cannot be tiled or the next
 * section cannot be entered (the caller takes c back); else SW_PUSHED. */
static int sw_step(sw *s, size_t c)
{
    sw_frame *f = &s->fr[s->depth - 1];
    sw_class *a = &s->cls[c];
    const size_t slot = a->mbeg + a->used++;
    s->pos[slot] = f->y;
    f->chosen = c;
    const sw_iv *v = &s->iv[s->iv_base[f->k] + f->j];
    sw_link(s, f->bslot, slot, f->undo[0]);
    f->undo[1][0] = SW_NONE;
    sw_frame nx = { f->k, f->j, f->y + a->size, 0, SW_NONE, c, slot, { { 0 } }, 0 };
    if (nx.y == v->hi) {
        s->nb_hi[slot] = v->above;
        if (v->above != SW_NONE) {
            f->undo[1][0] = v->above;
            f->undo[1][1] = s->nb_lo[v->above];
            s->nb_lo[v->above] = slot;
        }
    }
    if (f->bslot != SW_NONE && s->slot_end[f->bslot] < a->end && !sw_run_ok(s, f->bslot))
        return SW_FAIL;
    if (nx.y == v->hi && (!sw_run_ok(s, slot) ||
                          (v->above != SW_NONE && s->slot_end[v->above] != a->end &&
                           !sw_run_ok(s, v->above))))
        return SW_FAIL;
    if (nx.y == v->hi) {
        nx.j++;
        nx.below = SW_NONE;
        if (nx.j == s->iv_cnt[f->k]) {
            if (f->k + 1 == s->n_sec)
                return SW_FOUND;
            if (!sw_enter(s, f->k + 1))
                return SW_FAIL;
            nx.k = f->k + 1;
            nx.j = 0;
            nx.first = 1;
        }
        nx.y = s->iv[s->iv_base[nx.k] + nx.j].lo;
        nx.bslot = s->iv[s->iv_base[nx.k] + nx.j].below;
    }
    s->fr[s->depth++] = nx;
    return SW_PUSHED;
}

/* One depth-first run from the empty placement. A section entered with all of [0, limit)
 * free (a cut across time: no tensor lives on both sides) does not depend on the sections
 * before it, so when it has no tiling, nothing has: the run fails at once. */
static int sw_run(sw *s)
{
    for (size_t c = 0; c < s->n_cls; c++)
        s->cls[c].used = 0;
    s->iv_n = 0;
    s->depth = 0;
    if (!sw_enter(s, 0))
        return SW_FAIL;
    s->fr[s->depth++] = (sw_frame){ 0, 0, 0, 0, SW_NONE, SW_NONE, SW_NONE, { { 0 } }, 1 };
    while (s->depth > 0) {
        sw_frame *f = &s->fr[s->depth - 1];
        if (f->chosen != SW_NONE) /* back from the child: take the choice back */
            sw_unplace(s, f);
        const size_t *o = s->ord + s->sec_cls[f->k];
        const size_t n = s->sec_cls[f->k + 1] - s->sec_cls[f->k];
        const size_t from = f->cur;
        while (f->cur < n && !sw_admits(s, f, o[f->cur]))
            f->cur++;
        s->work += (unsigned long long)(f->cur - from + 1) * n; /* each test reads n classes */
        if (f->cur == n) {
            if (f->first) {
                const sw_iv *v = &s->iv[s->iv_base[f->k]];
                if (s->iv_cnt[f->k] == 1 && v->lo == 0 && v->hi == s->limit)
                    return SW_FAIL;
                s->iv_n = s->iv_base[f->k];
            }
            s->depth--;
            continue;
        }
        const size_t c = o[f->cur++];
        if (sw_poll(s))
            return SW_STOP;
        if (sw_step(s, c) == SW_FOUND)
            return SW_FOUND;
    }
    return SW_FAIL;
}

/* tp_sweep_core on a problem known to be tight. */
static tp_status sw_core(const tp_tensor_lifetime *t, size_t count, const tp_sweep_params *p,
                         size_t *offsets, tp_sweep_result *res)
{
    memset(res, 0, sizeof *res);
    res->applies = 1;
    size_t m = 0;
    for (size_t i = 0; i < count; i++)
        m += t[i].size > 0;
    sw s;
    if (!sw_alloc(&s, m) || !sw_build_classes(&s, t, count, m)) {
        sw_free(&s);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the time sweep", m);
    }
    s.limit = p->limit;
    s.node_limit = p->node_limit;
    s.params = p;
    s.next_clock = SW_WORK_PER_CLOCK;
    if (!sw_build_reach(&s)) {
        sw_free(&s);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the time sweep", m);
    }
    int r = SW_STOP;
    for (unsigned long long run = 0; !s.stopped; run++) {
        sw_order(&s, run);
        const unsigned long long budget = tp_luby(run + 1);
        s.run_end = budget >= (1ULL << 40) ? 0 : s.nodes + SW_FIRST_RUN * budget;
        s.run_out = 0;
        r = sw_run(&s);
        if (r != SW_STOP || !s.run_out)
            break;
    }
    res->nodes = s.nodes;
    res->found = r == SW_FOUND;
    res->complete = r != SW_STOP;
    res->timed_out = r == SW_STOP;
    if (res->found) {
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
        for (size_t k = 0; k < m; k++)
            offsets[s.mem[k]] = s.pos[k];
    }
    sw_free(&s);
    return TP_OK;
}

tp_status tp_sweep_core(const tp_tensor_lifetime *t, size_t count, const tp_sweep_params *p,
                        size_t *offsets, tp_sweep_result *res)
{
    memset(res, 0, sizeof *res);
    int tight = 0;
    tp_status st = tp_sweep_tight(t, count, p->limit, &tight);
    if (st != TP_OK || !tight)
        return st;
    return sw_core(t, count, p, offsets, res);
}

/* The cuts under per-part budgets that grow fourfold while one ran out. *used receives
 * the nodes spent; a repaired plan lower than *kept_arena goes to keep. */
static tp_status sw_cut_rounds(const tp_tensor_lifetime *t, size_t count,
                               const tp_sweep_params *p, size_t *offsets, size_t *keep,
                               size_t *kept_arena, tp_sweep_result *res,
                               unsigned long long *used)
{
    *used = 0;
    for (unsigned long long budget = SW_CUT_NODES;; budget *= 4) {
        tp_sweep_params q = *p;
        q.nodes_before = p->nodes_before + *used;
        if (p->node_limit != 0)
            q.node_limit = p->node_limit > *used ? p->node_limit - *used : 1;
        tp_sweep_result cut;
        int hit = 0;
        tp_status st = tp_sweep_cuts(t, count, &q, budget, offsets, &cut, &hit);
        if (st != TP_OK)
            return st;
        *used += cut.nodes;
        if (cut.found) {
            *res = cut;
            res->nodes = *used;
            res->by_cuts = 1;
            res->complete = 1;
            return TP_OK;
        }
        if (cut.repaired && cut.arena < *kept_arena) {
            *kept_arena = cut.arena;
            memcpy(keep, offsets, count * sizeof *keep);
        }
        if (!hit || cut.timed_out || budget > ULLONG_MAX / 8)
            return TP_OK;
    }
}

tp_status tp_sweep_search(const tp_tensor_lifetime *t, size_t count, const tp_sweep_params *p,
                          size_t *offsets, tp_sweep_result *res)
{
    memset(res, 0, sizeof *res);
    int tight = 0;
    tp_status st = tp_sweep_tight(t, count, p->limit, &tight);
    if (st != TP_OK || !tight)
        return st;
    size_t *keep = malloc(count * sizeof *keep), kept = SIZE_MAX;
    if (keep == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the time sweep", count);
    unsigned long long used = 0;
    st = sw_cut_rounds(t, count, p, offsets, keep, &kept, res, &used);
    if (st == TP_OK && !res->found) {
        tp_sweep_params rest = *p;
        rest.nodes_before = p->nodes_before + used;
        if (p->node_limit != 0)
            rest.node_limit = p->node_limit > used ? p->node_limit - used : 1;
        if (rest.deadline > 0 && tp_clock_seconds() >= rest.deadline) {
            memset(res, 0, sizeof *res);
            res->applies = res->timed_out = 1;
        } else {
            st = sw_core(t, count, &rest, offsets, res); /* tight: checked above */
        }
        res->nodes += used;
    }
    if (st == TP_OK && !res->found && kept != SIZE_MAX) {
        memcpy(offsets, keep, count * sizeof *keep);
        res->repaired = 1;
        res->arena = kept;
    }
    free(keep);
    return st;
}
