/* Cuts of a tight problem into independent parts before the time sweep (docs/exact-solver.md,
 * "Tight problems: cuts"). A part is a set of tensors tight at a height H over its own span;
 * it is planned at a base offset. Three cuts, tried in this order on each part:
 *
 * - across time: where no tensor of the part lives on both sides of a node, the two sides
 *   are independent problems of the same height (every plan of the part is a plan of each);
 * - a tensor that lives over the part's whole span goes to the bottom: in any plan of the
 *   part the tiles below it could all move up by its size;
 * - across bytes: a subset B of the part whose load is the same h at every node of the span
 *   (found by a depth-first search section by section in the order of first use, then in
 *   reverse time, branching on the bytes that each class of interchangeable tensors puts
 *   in B and pruned by exact tables of the sums a section can still make) is planned in
 *   [base, base + h) and the rest above it, each a tight part of its own.
 *
 * The first two are complete; the third is not (B may be balanced and yet have no tiling
 * of its own, and only the first B found is tried), so a part that no cut splits goes to
 * the time sweep, and if the sweep finds no plan for it this pass gives up and the caller
 * runs the sweep on the whole problem; the plan it returns then is repaired, each failed
 * part planned alone in its own rectangle, raised by what it needs above its height
 * (st_repair_parts). A plan it returns is always a plan. */
#include "planner/planner_internal.h"

#include "common/clock.h"
#include "common/error.h"
#include "common/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ST_SEEDS 8 /* first-section tensors tried as a member of that subset, in turn */
#define ST_SWEEP_SHARE 8 /* the sweep of a part gets the part budget / this */

typedef struct st_part {
    size_t beg, n;    /* tensors idx[beg .. beg + n) */
    size_t base, height;
} st_part;

typedef struct st_key {
    size_t first, last, index;
} st_key;

typedef struct st {
    const tp_tensor_lifetime *t;
    tp_tensor_lifetime *rev; /* the tensors with time reversed (st_find_balance) */
    size_t *idx;       /* the parts' tensors (caller's indices) */
    st_key *key;       /* scratch: one part's sort */
    st_part *work;     /* parts still to cut, a stack */
    size_t nwork;
    st_part *failed;   /* parts the sweep found no plan for (st_repair_parts) */
    size_t nfailed;
    double began;      /* CLOCK_MONOTONIC seconds at the start of the pass */
    size_t *offsets;
    tp_tensor_lifetime *sub; /* a part's tensors, for the sweep */
    size_t *sub_off, *sub_best;
    /* the part being split across bytes, per tensor: section, end section, the bytes of its
     * section from it on; per section: its first tensor, start node, bytes of B starting
     * there, bytes of B freed there */
    size_t *sec, *end, *suf, *secbeg, *starts, *sum, *freed;
    size_t *ord, *arem, *frem, h;
    unsigned char *in, *cstart; /* B; per decision: whether a class starts there */
    unsigned char *placed; /* per caller's tensor: planned by a part */
    /* st_reach: per decision that starts a class, where its group's table of the sums
     * that the decisions from it to the group's end can still make starts (SIZE_MAX:
     * none), its freed-side bytes to the end, its bits; the tables */
    size_t *rat, *rf, *rb;
    uint64_t *rw;
    size_t rw_cap;
    /* st_classes: per class its first decision and the sum it has now; per decision its
     * class table and that table's bits; the tables */
    size_t *cb, *cur, *cat, *cbits;
    uint64_t *cw;
    size_t cw_cap;
    /* st_list: the set bits of sparse tables, per decision where they start in sl and how
     * many (SIZE_MAX: dense), for the rest tables (r) and the class tables (c) */
    size_t *rl_at, *rl_n, *cl_at, *cl_n, *sl, sl_used, sl_cap;
    size_t (*gap)[2];      /* the repair's scratch: placed ranges that meet one tensor */
    double deadline;
    const tp_sweep_params *params; /* the deadline and the progress reports */
    unsigned long long nodes, node_limit, part_nodes;
    int stopped, budget_hit;
} st;

static int by_key(const void *pa, const void *pb)
{
    const st_key *a = pa, *b = pb;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    if (a->last != b->last)
        return a->last < b->last ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Sorts the part's tensors by first use (then last use, index). */
static void st_sort(st *s, const st_part *p)
{
    size_t *x = s->idx + p->beg;
    for (size_t i = 0; i < p->n; i++)
        s->key[i] = (st_key){ s->t[x[i]].first_use, s->t[x[i]].last_use, x[i] };
    qsort(s->key, p->n, sizeof *s->key, by_key);
    for (size_t i = 0; i < p->n; i++)
        x[i] = s->key[i].index;
}

/* The deadline and the progress reports, every 1,024 nodes. */
static int st_past(st *s)
{
    if ((s->nodes & 1023u) == 0 && tp_sweep_clock(s->params, s->nodes))
        s->stopped = 1;
    return s->stopped;
}

static int st_push(st *s, st_part p)
{
    s->work[s->nwork++] = p;
    return 1;
}

/* Cuts across time (the part sorted): a tensor whose first use lies after every last use
 * before it starts a new part. Returns whether there was a cut. */
static int st_time_cuts(st *s, const st_part *p)
{
    const size_t *x = s->idx + p->beg;
    size_t from = 0, reach = s->t[x[0]].last_use;
    int cut = 0;
    for (size_t i = 1; i <= p->n; i++) {
        if (i < p->n && s->t[x[i]].first_use <= reach) {
            reach = s->t[x[i]].last_use > reach ? s->t[x[i]].last_use : reach;
            continue;
        }
        if (i == p->n && !cut)
            return 0;
        st_push(s, (st_part){ p->beg + from, i - from, p->base, p->height });
        cut = 1;
        from = i;
        if (i < p->n)
            reach = s->t[x[i]].last_use;
    }
    return 1;
}

/* Tensors live over the part's whole span go to its bottom; the rest is pushed as a part.
 * Returns whether there was one. */
static int st_full_span(st *s, const st_part *p)
{
    size_t *x = s->idx + p->beg;
    size_t t0 = s->t[x[0]].first_use, t1 = 0, base = p->base, h = p->height, k = 0;
    for (size_t i = 0; i < p->n; i++)
        t1 = s->t[x[i]].last_use > t1 ? s->t[x[i]].last_use : t1;
    for (size_t i = 0; i < p->n; i++) {
        if (s->t[x[i]].first_use == t0 && s->t[x[i]].last_use == t1) {
            s->offsets[x[i]] = base;
            s->placed[x[i]] = 1;
            base += s->t[x[i]].size;
            h -= s->t[x[i]].size;
        } else {
            x[k++] = x[i];
        }
    }
    if (k == p->n)
        return 0;
    if (k > 0)
        st_push(s, (st_part){ p->beg, k, base, h });
    return 1;
}

/* The order of decisions of the balance search, over the sorted part. A tensor of the first
 * section counts only where it ends, so it is decided there; every other one where it
 * starts. Group k (one per later section) holds the first-section tensors that end at k
 * (freed side), then the tensors that start at k (starting side); those of the first
 * section that end after the span come last, in a group of their own (n_sec). Fills, per
 * decision: s->ord (the tensor's position in the part) and s->sec (its group); per tensor
 * s->end (its end section); per section s->starts and s->secbeg. */
static void st_sections(st *s, const st_part *p, size_t *n_sec)
{
    const size_t *x = s->idx + p->beg;
    size_t ns = 0;
    for (size_t i = 0; i < p->n; i++)
        if (i == 0 || s->t[x[i]].first_use != s->t[x[i - 1]].first_use) {
            s->starts[ns] = s->t[x[i]].first_use;
            s->secbeg[ns++] = i;
        }
    s->secbeg[ns] = p->n;
    for (size_t i = 0; i < p->n; i++) { /* end section: the first starting after it */
        size_t lo = 1, hi = ns;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (s->starts[mid] > s->t[x[i]].last_use)
                hi = mid;
            else
                lo = mid + 1;
        }
        s->end[i] = lo;
    }
    /* first-section tensors by end section (a counting sort), merged with later sections */
    const size_t n0 = s->secbeg[1];
    memset(s->sum, 0, (ns + 2) * sizeof *s->sum);
    for (size_t i = 0; i < n0; i++)
        s->sum[s->end[i] + 1]++;
    for (size_t k = 0; k <= ns; k++)
        s->sum[k + 1] += s->sum[k];
    size_t *zero_by_end = s->suf; /* scratch: n0 entries */
    for (size_t i = 0; i < n0; i++)
        zero_by_end[s->sum[s->end[i]]++] = i;
    size_t d = 0, z = 0;
    for (size_t k = 1; k <= ns; k++) {
        for (; z < n0 && s->end[zero_by_end[z]] == k; z++) {
            s->ord[d] = zero_by_end[z];
            s->sec[d++] = k;
        }
        for (size_t i = k < ns ? s->secbeg[k] : p->n; k < ns && i < s->secbeg[k + 1]; i++) {
            s->ord[d] = i;
            s->sec[d++] = k;
        }
    }
    memset(s->sum, 0, (ns + 2) * sizeof *s->sum);
    memset(s->freed, 0, (ns + 2) * sizeof *s->freed);
    *n_sec = ns;
}

/* a <= b + c, without overflow */
static int st_le(size_t a, size_t b, size_t c)
{
    return a <= b || a - b <= c;
}

/* The bytes of group k after each decision: starting side (arem), freed side (frem). */
static void st_rests(st *s, const st_part *p)
{
    for (size_t d = p->n; d-- > 0;) {
        const int last = d + 1 == p->n || s->sec[d + 1] != s->sec[d];
        const size_t nx = d + 1;
        s->arem[d] = last ? 0 : s->arem[nx];
        s->frem[d] = last ? 0 : s->frem[nx];
        if (!last) {
            const size_t j = s->ord[nx], size = s->t[s->idx[p->beg + j]].size;
            if (j < s->secbeg[1])
                s->frem[d] += size;
            else
                s->arem[d] += size;
        }
    }
}

/* The sums a group can still make. A group balances when the starting bytes it puts in B
 * equal the bytes of B freed at its section, so after each decision what is left must be
 * made up by the group's later decisions: starting tensors add their size to one side,
 * first-section tensors (freed side) to the other. For the decision q that starts each
 * class of a group but the first (st_classes: where the search asks what the rest of the
 * group can make) the table at s->rat[q] holds, as bits, the differences (starting -
 * freed) that the decisions q .. end can make, shifted up by the freed-side bytes among
 * them (s->rf[q]): bit v + rf[q] is set where v is reachable, over s->rb[q] + 1 bits.
 * Built from the group's end back (the tables of the other decisions in two scratch
 * tables in turn): a decision of size w keeps the index or adds w to it (a starting
 * tensor in B adds, a freed-side one adds when not in B), the range growing by w; the
 * seed, forced into B on the freed side, keeps the index only. Exact where st_le only
 * bounds, so the search never tries a class's sum after which the group cannot balance.
 * Groups whose tables would pass ST_REACH_WORDS in all get none (the bounds then). */
#define ST_REACH_WORDS ((size_t)1 << 22) /* 32 MiB of tables at most */
#define ST_REACH_MIN 4                   /* shorter groups: the bounds suffice */

static size_t st_words(size_t bits)
{
    return bits / 64 + 1;
}

/* One step back of a table of sums (nw words): the sums of src (prev_bits + 1 bits; NULL:
 * the sum 0 alone) kept as they are (keep) and with w added (add). */
static void st_table_step(uint64_t *dst, size_t nw, const uint64_t *src, size_t prev_bits,
                          size_t w, int keep, int add)
{
    memset(dst, 0, nw * sizeof *dst);
    if (src == NULL) {
        dst[0] = keep ? 1 : 0;
        if (add)
            dst[w / 64] |= (uint64_t)1 << (w % 64);
        return;
    }
    const size_t pw = st_words(prev_bits), ws = w / 64, bs = w % 64;
    for (size_t i = 0; keep && i < pw; i++)
        dst[i] |= src[i];
    for (size_t i = 0; add && i < pw; i++) { /* dst |= src << w */
        dst[i + ws] |= src[i] << bs;
        if (bs != 0 && i + ws + 1 < nw)
            dst[i + ws + 1] |= src[i] >> (64 - bs);
    }
}

/* The set bits of a table of bits + 1 bits, in order, into s->sl when there are at most
 * max of them and the lists of one search stay within ST_LISTS entries (*at, *n);
 * otherwise *n = SIZE_MAX. */
#define ST_LISTS ((size_t)1 << 22)
static void st_list(st *s, const uint64_t *tab, size_t bits, size_t max, size_t *at, size_t *n)
{
    const size_t nw = st_words(bits);
    size_t c = 0;
    for (size_t i = 0; i < nw && c <= max; i++)
        c += (size_t)__builtin_popcountll(tab[i]);
    *n = SIZE_MAX;
    if (c > max || c > ST_LISTS - s->sl_used ||
        TP_GROW(&s->sl, &s->sl_cap, s->sl_used + c) != TP_OK)
        return;
    *at = s->sl_used;
    for (size_t i = 0; i < nw; i++)
        for (uint64_t w = tab[i]; w != 0; w &= w - 1)
            s->sl[s->sl_used++] = i * 64 + (size_t)__builtin_ctzll(w);
    *n = c;
}

static void st_reach(st *s, const st_part *p, size_t seed, size_t n_sec)
{
    size_t used = 0;
    for (size_t g = 0; g < p->n;) {
        size_t e = g;
        while (e < p->n && s->sec[e] == s->sec[g])
            e++;
        /* kept: the tables at the classes' first decisions after the group's first, the
         * only ones the search reads; the others in two scratch tables, in turn */
        size_t keep = 0, span = 0;
        int want = s->sec[g] != n_sec && e - g >= ST_REACH_MIN;
        for (size_t q = e; want && q-- > g;) {
            const size_t w = s->t[s->idx[p->beg + s->ord[q]]].size;
            want = w <= 64 * ST_REACH_WORDS && span <= 64 * ST_REACH_WORDS; /* no overflow */
            span += w;
            keep += q > g && s->cstart[q] ? st_words(span) : 0;
        }
        const size_t need = keep + 2 * st_words(span);
        want = want && need <= ST_REACH_WORDS - used &&
               TP_GROW(&s->rw, &s->rw_cap, used + need) == TP_OK;
        for (size_t q = g; q < e; q++)
            s->rat[q] = SIZE_MAX;
        if (!want) {
            g = e;
            continue;
        }
        const size_t scratch[2] = { used + keep, used + keep + st_words(span) };
        size_t prev = SIZE_MAX, prev_bits = 0, freed = 0, turn = 0;
        for (size_t q = e; q-- > g;) { /* from the group's end back */
            const size_t w = s->t[s->idx[p->beg + s->ord[q]]].size, bits = prev_bits + w;
            freed += s->ord[q] < s->secbeg[1] ? w : 0;
            const int kept = q > g && s->cstart[q];
            const size_t at = kept ? used : scratch[turn ^= 1];
            uint64_t *dst = s->rw + at;
            st_table_step(dst, st_words(bits), prev == SIZE_MAX ? NULL : s->rw + prev,
                          prev_bits, w, 1, s->ord[q] != seed);
            if (kept) {
                s->rat[q] = at;
                s->rf[q] = freed;
                s->rb[q] = bits;
                st_list(s, dst, bits, 4096, &s->rl_at[q], &s->rl_n[q]);
                used += st_words(bits);
            }
            prev = at;
            prev_bits = bits;
        }
        g = e;
    }
}

/* Whether the decisions from q (a class's first) to the end of its group can still
 * balance it, given the bytes decided so far (st_reach's table at q; without one, yes). */
static int st_reachable(const st *s, size_t q, size_t k)
{
    if (s->rat[q] == SIZE_MAX)
        return 1;
    /* needed: (starting - freed) of the rest = freed[k] - sum[k]; index that + rf[q] */
    if (s->freed[k] + s->rf[q] < s->sum[k])
        return 0;
    const size_t i = s->freed[k] + s->rf[q] - s->sum[k];
    return i <= s->rb[q] && (s->rw[s->rat[q] + i / 64] >> (i % 64) & 1u);
}

/* Classes of decisions. Within a group, tensors on the same side that end at the same
 * section are interchangeable to everything after them: only the bytes they put in B
 * count (added to h or to that section's starting bytes, and to the bytes freed where
 * they end). So the search branches on a class's sum rather than on its members: each
 * distinct sum once, smaller first (as "not in B" first), from the class's table of
 * subset sums; the last class of a group has at most one sum that balances it. A class
 * of one tensor, or one whose table would pass ST_CLASS_BITS, is searched member by
 * member (classes of one, sums 0 and the size). When B is found each class's sum is
 * turned back into members by its tables (members from q on make the sum v: take q when
 * the others make v - size). Without these classes a group of sixty single-node tensors
 * enumerated its subsets one by one, every one leading to the same state. */
#define ST_CLASS_BITS ((size_t)1 << 22)

/* Builds the classes of the part's decisions (s->cb[c] .. s->cb[c + 1]) and their tables
 * of subset sums: s->cat[q] for each member q, the sums of members q .. the class's end
 * (the seed only with it), SIZE_MAX for a class searched member by member. Returns the
 * number of classes. */
static size_t st_classes(st *s, const st_part *p, size_t seed)
{
    size_t nc = 0, used = 0;
    memset(s->cstart, 0, p->n);
    for (size_t q = 0; q < p->n;) {
        const size_t i = s->ord[q], side = i < s->secbeg[1];
        size_t e = q + 1, total = s->t[s->idx[p->beg + i]].size;
        while (e < p->n && s->sec[e] == s->sec[q] && (s->ord[e] < s->secbeg[1]) == side &&
               s->end[s->ord[e]] == s->end[i]) {
            total += s->t[s->idx[p->beg + s->ord[e]]].size;
            e++;
        }
        size_t need = 0, span = 0;
        for (size_t j = e; j-- > q;) {
            span += s->t[s->idx[p->beg + s->ord[j]]].size;
            need += st_words(span);
        }
        const int table = e - q > 1 && total <= ST_CLASS_BITS &&
                          TP_GROW(&s->cw, &s->cw_cap, used + need) == TP_OK;
        if (!table) { /* member by member */
            for (size_t j = q; j < e; j++) {
                s->cat[j] = SIZE_MAX;
                s->cstart[j] = 1;
                s->cb[nc++] = j;
            }
            q = e;
            continue;
        }
        s->cstart[q] = 1;
        s->cb[nc++] = q;
        size_t prev = SIZE_MAX, prev_bits = 0;
        for (size_t j = e; j-- > q;) {
            const size_t w = s->t[s->idx[p->beg + s->ord[j]]].size, bits = prev_bits + w;
            const size_t nw = st_words(bits);
            uint64_t *dst = s->cw + used;
            st_table_step(dst, nw, prev == SIZE_MAX ? NULL : s->cw + prev, prev_bits, w,
                          s->ord[j] != seed, 1);
            s->cat[j] = used;
            s->cbits[j] = bits;
            s->cl_n[j] = SIZE_MAX;
            if (j == q)
                st_list(s, dst, bits, 4096, &s->cl_at[j], &s->cl_n[j]);
            used += nw;
            prev = used - nw;
            prev_bits = bits;
        }
        q = e;
    }
    s->cb[nc] = p->n;
    return nc;
}

static int st_bit(const st *s, size_t q, size_t v)
{
    return v <= s->cbits[q] && (s->cw[s->cat[q] + v / 64] >> (v % 64) & 1u);
}

/* The next sum of class c above v (SIZE_MAX: v is none yet), SIZE_MAX when none is left. */
static size_t st_next_sum(const st *s, const st_part *p, size_t c, size_t v, size_t seed)
{
    const size_t q = s->cb[c];
    if (s->cat[q] == SIZE_MAX) { /* one member: 0, then its size */
        const size_t w = s->t[s->idx[p->beg + s->ord[q]]].size;
        if (v == SIZE_MAX)
            return s->ord[q] == seed ? w : 0;
        return v == 0 && w > 0 ? w : SIZE_MAX;
    }
    for (size_t x = v == SIZE_MAX ? 0 : v + 1; x <= s->cbits[q];) {
        const uint64_t word = s->cw[s->cat[q] + x / 64] >> (x % 64);
        if (word != 0)
            return x + (size_t)__builtin_ctzll(word);
        x = (x / 64 + 1) * 64;
    }
    return SIZE_MAX;
}

/* Adds (sign 1) or removes (-1) sum v of class c to the bytes of B. */
static void st_class_apply(st *s, size_t c, size_t v, int sign)
{
    const size_t q = s->cb[c], i = s->ord[q], k = s->sec[q];
    const size_t d = sign > 0 ? v : (size_t)0 - v; /* wraps back on removal */
    if (i < s->secbeg[1])
        s->h += d;
    else
        s->sum[k] += d;
    s->freed[s->end[i]] += d;
}

/* The members of class c that make its sum v: s->in. */
static void st_class_members(st *s, const st_part *p, size_t c, size_t v, size_t seed)
{
    const size_t q0 = s->cb[c], e = s->cb[c + 1];
    for (size_t q = q0; q < e; q++) {
        const size_t i = s->ord[q], w = s->t[s->idx[p->beg + i]].size;
        int take;
        if (s->cat[q0] == SIZE_MAX)
            take = v == w && v > 0;
        else if (i == seed)
            take = 1;
        else
            take = v >= w && (q + 1 == e ? v == w : st_bit(s, q + 1, v - w));
        s->in[i] = (unsigned char)take;
        v -= take ? w : 0;
    }
}

/* Whether the rest of group k can still balance it once class c (not its last) has sum v. */
static int st_class_fits(st *s, size_t c, size_t v, size_t k)
{
    const size_t e = s->cb[c + 1];
    st_class_apply(s, c, v, 1);
    const int ok = s->rat[e] != SIZE_MAX ? st_reachable(s, e, k)
                                         : st_le(s->sum[k], s->freed[k], s->frem[e - 1]) &&
                                               st_le(s->freed[k], s->sum[k], s->arem[e - 1]);
    st_class_apply(s, c, v, -1);
    return ok;
}

/* Bits pos .. pos + 63 of a table of bits + 1 bits (0 outside it). */
static uint64_t st_get64(const uint64_t *tab, size_t bits, long long pos)
{
    if (pos <= -64 || pos > (long long)bits)
        return 0;
    if (pos < 0)
        return st_get64(tab, bits, 0) << (-pos);
    const size_t w = (size_t)pos / 64, sh = (size_t)pos % 64, nw = st_words(bits);
    uint64_t r = tab[w] >> sh;
    if (sh != 0 && w + 1 < nw)
        r |= tab[w + 1] << (64 - sh);
    return r;
}

/* The first position of a sorted list at which the entry is at least x. */
static size_t st_lower(const size_t *l, size_t n, size_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (l[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The next sum of class c (not the last of group k) above v (SIZE_MAX: none yet) after
 * which the rest of the group can still balance it, SIZE_MAX when none is left. With
 * both tables the two are met a word at a time: with R the bytes freed less the bytes
 * starting so far and e the rest's first decision, a sum v of freed-side tensors needs
 * bit R + v + rf[e] of the rest's table, a sum v of starting ones bit R - v + rf[e]; the
 * sums of a class of starting tensors are symmetric (v and total - v), so the second is
 * read as x = total - v, both tables at one shift, downwards while v goes up. */
static size_t st_next_fit(st *s, const st_part *p, size_t c, size_t v, size_t seed, size_t k)
{
    const size_t q = s->cb[c], e = s->cb[c + 1];
    const size_t lim = (size_t)1 << 60; /* every difference below fits a long long */
    const int words = s->cat[q] != SIZE_MAX && s->rat[e] != SIZE_MAX && s->freed[k] < lim &&
                      s->sum[k] < lim && s->rf[e] < lim && s->cbits[q] < lim;
    if (!words) {
        for (v = st_next_sum(s, p, c, v, seed); v != SIZE_MAX; v = st_next_sum(s, p, c, v, seed))
            if (st_class_fits(s, c, v, k))
                return v;
        return SIZE_MAX;
    }
    const uint64_t *a = s->cw + s->cat[q], *b = s->rw + s->rat[e];
    const size_t abits = s->cbits[q], bbits = s->rb[e];
    const long long o = (long long)s->freed[k] - (long long)s->sum[k] + (long long)s->rf[e];
    const int freed_side = s->ord[q] < s->secbeg[1];
    /* only sums whose index in the rest's table lies in it: o + v or o - v in [0, bbits] */
    long long lo_v = v == SIZE_MAX ? 0 : (long long)v + 1, hi_v = (long long)abits;
    const long long lo_r = freed_side ? -o : o - (long long)bbits;
    const long long hi_r = freed_side ? (long long)bbits - o : o;
    lo_v = lo_v > lo_r ? lo_v : lo_r;
    hi_v = hi_v < hi_r ? hi_v : hi_r;
    if (lo_v > hi_v)
        return SIZE_MAX;
    const size_t from = (size_t)lo_v, to = (size_t)hi_v;
    /* a sparse table's sums one by one against the other table, when there are at most 64
     * of them in the window or fewer than an eighth of the words to read (each one is a
     * read at random of the other table, the words are read in order) */
    const size_t window = ((to - from) / 64 + 1) / 8 > 64 ? ((to - from) / 64 + 1) / 8 : 64;
    if (s->cl_n[q] != SIZE_MAX) {
        const size_t *l = s->sl + s->cl_at[q], nl = s->cl_n[q];
        const size_t j0 = st_lower(l, nl, from), j1 = st_lower(l, nl, to + 1);
        if (j1 - j0 <= window)
            for (size_t j = j0;; j++) {
                if (j == j1)
                    return SIZE_MAX;
                const long long i = freed_side ? o + (long long)l[j] : o - (long long)l[j];
                if (b[i / 64] >> (i % 64) & 1u) /* i in [0, bbits]: the window */
                    return l[j];
            }
    }
    if (s->rl_n[e] != SIZE_MAX) { /* v going up: i up (freed side) or down (starting) */
        const size_t *l = s->sl + s->rl_at[e], nl = s->rl_n[e];
        const long long ilo = freed_side ? o + (long long)from : o - (long long)to;
        const long long ihi = freed_side ? o + (long long)to : o - (long long)from;
        const size_t j0 = st_lower(l, nl, (size_t)ilo), j1 = st_lower(l, nl, (size_t)ihi + 1);
        if (j1 - j0 <= window)
            for (size_t j = 0;; j++) {
                if (j0 + j == j1)
                    return SIZE_MAX;
                const long long i = (long long)l[freed_side ? j0 + j : j1 - 1 - j];
                const long long x = freed_side ? i - o : o - i;
                if (a[x / 64] >> (x % 64) & 1u)
                    return (size_t)x;
            }
    }
    if (freed_side) { /* a[v] and b[o + v], v upwards */
        for (size_t x = from; x <= to; x += 64) {
            uint64_t w = st_get64(a, abits, (long long)x) & st_get64(b, bbits, o + (long long)x);
            if (to - x < 63)
                w &= ((uint64_t)1 << (to - x + 1)) - 1;
            if (w != 0)
                return x + (size_t)__builtin_ctzll(w);
        }
        return SIZE_MAX;
    }
    /* starting side: a[x] and b[o - total + x] for x = total - v, from total - from down to
     * total - to */
    const long long off = o - (long long)abits, bottom = (long long)(abits - to);
    for (long long x = (long long)(abits - from); x >= bottom;) {
        const long long lo = x - 63 >= bottom ? x - 63 : bottom;
        uint64_t w = st_get64(a, abits, lo) & st_get64(b, bbits, lo + off);
        const int keep = (int)(x - lo) + 1; /* bits lo .. x */
        if (keep < 64)
            w &= ((uint64_t)1 << keep) - 1;
        if (w != 0)
            return abits - (size_t)(lo + 63 - __builtin_clzll(w));
        if (lo == bottom)
            break;
        x = lo - 1;
    }
    return SIZE_MAX;
}

/* A subset B of the part (s->in) with the same load h at every node of its span, 0 < h <
 * height: depth first over the classes of the decisions of st_sections (st_classes), in
 * order, each class's sums smaller first; the seed, a tensor of the first section, is in
 * B (B and the rest are interchangeable). Returns 1 with B, 0 without (none, or its budget
 * spent). */
static int st_balance(st *s, const st_part *p, size_t seed)
{
    size_t n_sec;
    st_sections(s, p, &n_sec);
    st_rests(s, p);
    s->sl_used = 0;
    const size_t nc = st_classes(s, p, seed);
    st_reach(s, p, seed, n_sec);
    s->h = 0;
    for (size_t c = 0; c < nc; c++)
        s->cur[c] = SIZE_MAX;
    unsigned long long budget = s->part_nodes / (2 * ST_SEEDS);
    size_t c = 0;
    for (;;) {
        if (c == nc) {
            for (size_t j = 0; j < nc; j++)
                st_class_members(s, p, j, s->cur[j], seed);
            return 1;
        }
        const size_t q = s->cb[c], e = s->cb[c + 1], k = s->sec[q];
        const int last = k != n_sec && (e == p->n || s->sec[e] != k);
        size_t v = SIZE_MAX;
        if (last && s->cur[c] == SIZE_MAX) { /* the one sum that balances the group */
            const int freed_side = s->ord[q] < s->secbeg[1];
            const size_t a = freed_side ? s->sum[k] : s->freed[k];
            const size_t b = freed_side ? s->freed[k] : s->sum[k];
            if (a >= b) {
                v = a - b;
                const size_t w = s->t[s->idx[p->beg + s->ord[q]]].size;
                if (s->cat[q] == SIZE_MAX ? !(v == w || (v == 0 && s->ord[q] != seed))
                                          : !st_bit(s, q, v))
                    v = SIZE_MAX;
            }
        } else if (!last) { /* the next sum after which the rest of the group can balance */
            v = k == n_sec ? st_next_sum(s, p, c, s->cur[c], seed)
                           : st_next_fit(s, p, c, s->cur[c], seed, k);
        }
        if (v == SIZE_MAX) { /* every sum tried: back */
            s->cur[c] = SIZE_MAX;
            if (c == 0)
                return 0;
            c--;
            st_class_apply(s, c, s->cur[c], -1);
            continue;
        }
        if (budget-- == 0 || st_past(s)) {
            s->budget_hit = 1;
            return 0;
        }
        if (++s->nodes >= s->node_limit && s->node_limit != 0) {
            s->budget_hit = s->stopped = 1; /* the whole budget: nothing more is tried */
            return 0;
        }
        s->cur[c] = v;
        st_class_apply(s, c, v, 1);
        if (c + 1 < nc || (s->h > 0 && s->h < p->height)) {
            c++;
            continue;
        }
        st_class_apply(s, c, v, -1); /* a last class then goes back: its one sum failed */
    }
}

/* Splits the part across bytes by st_balance: B below, the rest above. */
/* st_balance in time order, then in reverse time order (s->rev: the same subsets balance
 * both ways, the search meets them in another order), each from up to ST_SEEDS tensors of
 * the first section. On success the part is left sorted in the order that found B. */
static int st_find_balance(st *s, const st_part *p)
{
    const tp_tensor_lifetime *fwd = s->t;
    const size_t *x = s->idx + p->beg;
    int found = 0;
    for (int dir = 0; dir < 2 && !found; dir++) {
        s->t = dir ? s->rev : fwd;
        st_sort(s, p);
        for (size_t seed = 0; seed < ST_SEEDS && seed < p->n && !found && !s->stopped; seed++) {
            if (seed > 0 && s->t[x[seed]].first_use != s->t[x[0]].first_use)
                break;
            found = st_balance(s, p, seed);
        }
    }
    s->t = fwd;
    return found;
}

static int st_bytes_cut(st *s, const st_part *p)
{
    if (!st_find_balance(s, p))
        return 0;
    size_t *x = s->idx + p->beg, h = s->h, nb = 0, nt = 0;
    size_t *tmp = s->sub_off; /* scratch */
    for (size_t i = 0; i < p->n; i++) {
        if (s->in[i])
            x[nb++] = x[i]; /* nb <= i: only entries already read are overwritten */
        else
            tmp[nt++] = x[i];
    }
    memcpy(x + nb, tmp, nt * sizeof *tmp);
    st_push(s, (st_part){ p->beg + nb, nt, p->base + h, p->height - h });
    st_push(s, (st_part){ p->beg, nb, p->base, h });
    return 1;
}

/* A part that no cut splits: the time sweep on it alone, under the node budget left. */
static tp_status st_sweep_part(st *s, const st_part *p, int *ok)
{
    const size_t *x = s->idx + p->beg;
    for (size_t i = 0; i < p->n; i++)
        s->sub[i] = s->t[x[i]];
    /* at least one node: a part budget below ST_SWEEP_SHARE made node_limit 0, "none", and
     * the sweep of a part ran unbounded */
    const unsigned long long share = s->part_nodes / ST_SWEEP_SHARE;
    tp_sweep_params sp = { p->height, s->deadline, share > 0 ? share : 1, s->params->ticker,
                           s->params->nodes_before + s->nodes };
    const unsigned long long left = s->node_limit > s->nodes ? s->node_limit - s->nodes : 1;
    if (s->node_limit != 0 && left < sp.node_limit)
        sp.node_limit = left;
    tp_sweep_result r;
    tp_status st = tp_sweep_core(s->sub, p->n, &sp, s->sub_off, &r);
    s->nodes += r.nodes;
    *ok = st == TP_OK && r.found;
    for (size_t i = 0; *ok && i < p->n; i++) {
        s->offsets[x[i]] = p->base + s->sub_off[i];
        s->placed[x[i]] = 1;
    }
    if (r.timed_out)
        s->budget_hit = 1;
    s->stopped |= s->node_limit != 0 && s->nodes >= s->node_limit;
    s->stopped |= s->deadline > 0 && tp_clock_seconds() >= s->deadline;
    return st;
}

static int by_gap(const void *pa, const void *pb)
{
    const size_t *a = pa, *b = pb;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

typedef struct st_big {
    size_t size, index;
} st_big;

static int by_big(const void *pa, const void *pb)
{
    const st_big *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The lowest offset for tensor x clear of every placed tensor live with it. */
static size_t st_lowest(st *s, size_t count, size_t x)
{
    const tp_tensor_lifetime *a = &s->t[x];
    size_t ng = 0;
    for (size_t i = 0; i < count; i++)
        if (s->placed[i] && s->t[i].first_use <= a->last_use && a->first_use <= s->t[i].last_use) {
            s->gap[ng][0] = s->offsets[i];
            s->gap[ng++][1] = s->offsets[i] + s->t[i].size;
        }
    qsort(s->gap, ng, sizeof *s->gap, by_gap);
    size_t at = 0;
    for (size_t g = 0; g < ng; g++) {
        if (s->gap[g][0] >= at && s->gap[g][0] - at >= a->size)
            break;
        at = s->gap[g][1] > at ? s->gap[g][1] : at;
    }
    return at;
}

/* The parts the sweep found no plan for, each planned alone: the greedy, then the exact
 * search from its arena down, minimising, the better kept. A part owns its rectangle (its
 * height over its span: no other part's tensor lives there in those bytes), so when its
 * plan reaches d bytes above its height, every placed tensor at or above the rectangle's
 * top moves up by d and the part takes its plan at its base: pairs above move together,
 * pairs across only draw apart, and a tensor across the top lives outside the span. The
 * arena then grows by the failed parts' excess over their heights, not by their tensors
 * stacked above everything. Highest base first, so that the moves of a lower part carry
 * the higher ones already placed. The exact search runs only with exact, for a quarter
 * of the pass's time so far (ST_PART_SHARE; within the deadline unless the pass stopped
 * there) shared by the parts, or without a deadline ST_PART_NODES nodes each, within what
 * is left of the pass's node budget (none left: the greedy alone). A part whose move
 * would pass SIZE_MAX is left to st_repair. */
#define ST_PART_NODES 100000ULL
#define ST_PART_SHARE 0.25

static int by_base_down(const void *pa, const void *pb)
{
    const st_part *a = pa, *b = pb;
    return a->base > b->base ? -1 : a->base < b->base;
}

/* The progress reports while a failed part is searched: the pass's nodes, the ticker's
 * figures (not the part's arena), past the deadline too. */
static void st_part_tick(const tp_plan_progress *r, void *user)
{
    st *s = user;
    tp_sweep_params q = *s->params;
    q.deadline = 0;
    (void)tp_sweep_clock(&q, s->nodes + r->nodes);
}

static tp_status st_repair_parts(st *s, size_t count, int exact)
{
    const double now = tp_clock_seconds();
    double share = ST_PART_SHARE * (now - s->began); /* before the deadline while it lasts */
    if (!s->stopped && s->deadline > 0)
        share = share < s->deadline - now ? share : s->deadline > now ? s->deadline - now : 0;
    const double slice = s->deadline > 0 && s->nfailed > 0 ? share / (double)s->nfailed : 0;
    size_t *greedy = s->sub_off, *best = s->sub_best;
    qsort(s->failed, s->nfailed, sizeof *s->failed, by_base_down);
    for (size_t f = 0; f < s->nfailed; f++) {
        const st_part *p = &s->failed[f];
        const size_t *x = s->idx + p->beg;
        for (size_t i = 0; i < p->n; i++)
            s->sub[i] = s->t[x[i]];
        size_t arena = 0;
        tp_status st = tp_plan_offsets(s->sub, p->n, greedy, &arena);
        if (st != TP_OK)
            return st;
        tp_exact_params xp;
        memset(&xp, 0, sizeof xp);
        xp.limit = arena;
        xp.minimise = 1;
        xp.lower_bound = p->height;
        xp.start = tp_clock_seconds();
        xp.deadline = s->deadline > 0 ? xp.start + slice : 0;
        xp.node_limit = s->deadline > 0 ? 0 : ST_PART_NODES;
        xp.progress = s->params->ticker != NULL ? st_part_tick : NULL;
        xp.user = s;
        if (s->node_limit != 0) { /* the pass's budget bounds these nodes too */
            const unsigned long long left = s->node_limit > s->nodes ? s->node_limit - s->nodes : 0;
            xp.node_limit = xp.node_limit == 0 || left < xp.node_limit ? left : xp.node_limit;
        }
        tp_exact_result xr;
        memset(&xr, 0, sizeof xr);
        if (exact && (s->node_limit == 0 || xp.node_limit > 0)) {
            st = tp_exact_search(s->sub, p->n, &xp, best, &xr);
            if (st != TP_OK)
                return st;
        }
        s->nodes += xr.nodes;
        const size_t *use = greedy;
        if (xr.found && xr.arena < arena) {
            use = best;
            arena = xr.arena;
        }
        const size_t top = p->base + p->height, d = arena > p->height ? arena - p->height : 0;
        int fits = p->base <= SIZE_MAX - arena;
        for (size_t i = 0; fits && d > 0 && i < count; i++)
            fits = !s->placed[i] || s->offsets[i] < top ||
                   s->offsets[i] + s->t[i].size <= SIZE_MAX - d;
        if (!fits)
            continue;
        for (size_t i = 0; d > 0 && i < count; i++)
            if (s->placed[i] && s->offsets[i] >= top)
                s->offsets[i] += d;
        for (size_t i = 0; i < p->n; i++) {
            s->offsets[x[i]] = p->base + use[i];
            s->placed[x[i]] = 1;
        }
    }
    return TP_OK;
}

/* The parts that found no plan (or were not reached) placed tensor by tensor, larger first,
 * each at the lowest offset clear of every placed tensor it meets: a plan, above the limit.
 * Skipped (0) when that would cost more than about 2^28 steps or an offset would pass
 * SIZE_MAX, and abandoned (0) once the deadline is ST_REPAIR_GRACE seconds past, as the
 * repairs of exact.c are: a repair costs up to 2^28 steps, seconds, after the cuts used up
 * the time. *arena receives its top. */
#define ST_REPAIR_GRACE 0.02
static int st_repair(st *s, size_t count, size_t m, size_t *arena)
{
    size_t u = 0;
    for (size_t i = 0; i < count; i++)
        u += s->t[i].size > 0 && !s->placed[i];
    if (u > ((size_t)1 << 28) / count)
        return 0;
    st_big *b = malloc((u > 0 ? u : 1) * sizeof *b);
    if (b == NULL)
        return 0;
    u = 0;
    for (size_t i = 0; i < count; i++)
        if (s->t[i].size > 0 && !s->placed[i])
            b[u++] = (st_big){ s->t[i].size, i };
    qsort(b, u, sizeof *b, by_big);
    tp_sweep_params q = *s->params;
    q.deadline = 0; /* the repair is bounded: the reports only */
    int ok = 1;
    for (size_t k = 0; k < u && ok; k++) {
        if ((k & 15u) == 15u) {
            (void)tp_sweep_clock(&q, s->nodes);
            if (s->deadline > 0 && tp_clock_seconds() > s->deadline + ST_REPAIR_GRACE) {
                ok = 0;
                break;
            }
        }
        const size_t x = b[k].index, at = st_lowest(s, count, x);
        ok = at <= SIZE_MAX - s->t[x].size;
        s->offsets[x] = at;
        s->placed[x] = 1;
    }
    free(b);
    *arena = 0;
    for (size_t i = 0; ok && i < count; i++)
        if (s->t[i].size > 0 && s->offsets[i] + s->t[i].size > *arena)
            *arena = s->offsets[i] + s->t[i].size;
    (void)m;
    return ok;
}

static void st_free(st *s)
{
    free(s->idx);
    free(s->key);
    free(s->work);
    free(s->failed);
    free(s->sub);
    free(s->sub_off);
    free(s->sub_best);
    free(s->sec);
    free(s->end);
    free(s->suf);
    free(s->secbeg);
    free(s->starts);
    free(s->sum);
    free(s->freed);
    free(s->in);
    free(s->cstart);
    free(s->rev);
    free(s->placed);
    free(s->gap);
    free(s->ord);
    free(s->arem);
    free(s->frem);
    free(s->rat);
    free(s->rf);
    free(s->rb);
    free(s->rw);
    free(s->cb);
    free(s->cur);
    free(s->cat);
    free(s->cbits);
    free(s->cw);
    free(s->rl_at);
    free(s->rl_n);
    free(s->cl_at);
    free(s->cl_n);
    free(s->sl);
}

static int st_alloc(st *s, size_t m, size_t count)
{
    s->placed = calloc(count, 1);
    s->rev = malloc(count * sizeof *s->rev);
    s->gap = malloc(m * sizeof *s->gap);
    s->idx = malloc(m * sizeof *s->idx);
    s->key = malloc(m * sizeof *s->key);
    s->work = malloc((2 * m + 1) * sizeof *s->work);
    s->failed = malloc((m + 1) * sizeof *s->failed);
    s->sub = malloc(m * sizeof *s->sub);
    s->sub_off = malloc(m * sizeof *s->sub_off);
    s->sub_best = malloc(m * sizeof *s->sub_best);
    s->sec = malloc(m * sizeof *s->sec);
    s->end = malloc(m * sizeof *s->end);
    s->suf = malloc(m * sizeof *s->suf);
    s->secbeg = malloc((m + 1) * sizeof *s->secbeg);
    s->starts = malloc((m + 1) * sizeof *s->starts);
    s->sum = malloc((m + 2) * sizeof *s->sum);
    s->freed = malloc((m + 2) * sizeof *s->freed);
    s->ord = malloc(m * sizeof *s->ord);
    s->arem = malloc(m * sizeof *s->arem);
    s->frem = malloc(m * sizeof *s->frem);
    s->rat = malloc(m * sizeof *s->rat);
    s->rf = malloc(m * sizeof *s->rf);
    s->rb = malloc(m * sizeof *s->rb);
    s->cb = malloc((m + 1) * sizeof *s->cb);
    s->cur = malloc((m + 1) * sizeof *s->cur);
    s->cat = malloc(m * sizeof *s->cat);
    s->cbits = malloc(m * sizeof *s->cbits);
    s->rl_at = malloc(m * sizeof *s->rl_at);
    s->rl_n = malloc(m * sizeof *s->rl_n);
    s->cl_at = malloc(m * sizeof *s->cl_at);
    s->cl_n = malloc(m * sizeof *s->cl_n);
    s->in = malloc(m);
    s->cstart = malloc(m);
    return s->rev && s->placed && s->gap && s->idx && s->key && s->work && s->failed &&
           s->sub && s->sub_off && s->sub_best && s->sec && s->end && s->suf && s->secbeg &&
           s->starts && s->sum && s->freed && s->in && s->cstart && s->ord && s->arem &&
           s->frem && s->rat && s->rf && s->rb && s->cb && s->cur && s->cat && s->cbits &&
           s->rl_at && s->rl_n && s->cl_at && s->cl_n;
}

/* Cuts one part: across time, a whole-span tensor to the bottom, across bytes, or the
 * sweep. *ok = 0 when the sweep finds no plan for it. */
static tp_status st_part_step(st *s, st_part p, int *ok)
{
    *ok = 1;
    if (p.n == 0)
        return TP_OK;
    if (p.n == 1) { /* tight: its size is the height */
        s->offsets[s->idx[p.beg]] = p.base;
        *ok = s->t[s->idx[p.beg]].size == p.height;
        s->placed[s->idx[p.beg]] = (unsigned char)*ok;
        return TP_OK;
    }
    st_sort(s, &p);
    if (st_time_cuts(s, &p) || st_full_span(s, &p) || st_bytes_cut(s, &p))
        return TP_OK;
    const tp_status st = st_sweep_part(s, &p, ok);
    if (st == TP_OK && !*ok)
        s->failed[s->nfailed++] = p;
    return st;
}

tp_status tp_sweep_cuts(const tp_tensor_lifetime *tensors, size_t count,
                        const tp_sweep_params *params, unsigned long long part_nodes,
                        size_t *offsets, tp_sweep_result *res, int *budget_hit)
{
    *budget_hit = 0;
    memset(res, 0, sizeof *res);
    size_t m = 0;
    for (size_t i = 0; i < count; i++)
        m += tensors[i].size > 0;
    st s;
    memset(&s, 0, sizeof s);
    if (m == 0 || !st_alloc(&s, m, count)) {
        st_free(&s);
        return m == 0 ? TP_OK : tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot cut them", m);
    }
    s.t = tensors;
    s.offsets = offsets;
    s.deadline = params->deadline;
    s.params = params;
    s.node_limit = params->node_limit;
    s.part_nodes = part_nodes;
    s.began = tp_clock_seconds();
    m = 0;
    size_t end = 0;
    for (size_t i = 0; i < count; i++) {
        offsets[i] = 0;
        if (tensors[i].size > 0)
            s.idx[m++] = i;
        end = tensors[i].last_use > end ? tensors[i].last_use : end;
    }
    for (size_t i = 0; i < count; i++)
        s.rev[i] = (tp_tensor_lifetime){ tensors[i].size, end - tensors[i].last_use,
                                         end - tensors[i].first_use };
    st_push(&s, (st_part){ 0, m, 0, params->limit });
    tp_status stt = TP_OK;
    int all = 1;
    while (stt == TP_OK && s.nwork > 0 && !s.stopped) {
        if (s.deadline > 0 && tp_clock_seconds() >= s.deadline) {
            s.stopped = 1;
            break;
        }
        int ok = 1;
        stt = st_part_step(&s, s.work[--s.nwork], &ok);
        all &= ok;
    }
    res->applies = 1;
    res->found = stt == TP_OK && all && s.nwork == 0 && !s.stopped;
    /* the failed parts planned alone: with the exact search too when every part was
     * reached (otherwise st_repair has the rest to place, and it gives up soon after the
     * deadline) and, without a deadline, no later round will run (node budgets: the
     * search's nodes are counted, and early rounds would spend them); by the greedy alone
     * otherwise */
    if (stt == TP_OK && !res->found)
        stt = st_repair_parts(&s, count,
                              s.nwork == 0 && (s.deadline > 0 || s.stopped || !s.budget_hit));
    if (stt == TP_OK && !res->found && st_repair(&s, count, m, &res->arena)) {
        res->repaired = 1;
        if (res->arena <= params->limit) { /* the failed parts fit after all: a plan */
            res->found = 1;
            res->repaired = 0;
        }
    }
    res->timed_out = s.stopped;
    res->nodes = s.nodes;
    *budget_hit = s.budget_hit;
    st_free(&s);
    return stt;
}

int tp_sweep_balance(const tp_tensor_lifetime *tensors, size_t count, size_t height,
                     size_t seed, unsigned long long budget, unsigned char *in,
                     int *budget_hit)
{
    st s;
    memset(&s, 0, sizeof s);
    *budget_hit = 0;
    if (count == 0 || !st_alloc(&s, count, count)) {
        st_free(&s);
        return count == 0 ? 0 : -1;
    }
    const tp_sweep_params params = { height, 0, 0, NULL, 0 };
    s.t = tensors;
    s.params = &params;
    s.part_nodes = budget * 2 * ST_SEEDS; /* st_balance's share of a part budget */
    for (size_t i = 0; i < count; i++)
        s.idx[i] = i;
    const st_part p = { 0, count, 0, height };
    st_sort(&s, &p);
    size_t pos = 0;
    while (pos < count && s.idx[pos] != seed)
        pos++;
    int found = 0;
    if (pos < count && tensors[seed].first_use == tensors[s.idx[0]].first_use) {
        found = st_balance(&s, &p, pos);
        for (size_t i = 0; i < count; i++)
            in[s.idx[i]] = found ? s.in[i] : 0;
    }
    *budget_hit = s.budget_hit;
    st_free(&s);
    return found;
}
