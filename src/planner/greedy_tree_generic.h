/* The part of greedy_tree.c compiled once per address width: greedy_tree.c includes it twice,
 * with POS the address type (uint32_t, then size_t), POS_MAX its largest value, W(name) the
 * name of this width's copy and TREE_WIDTH 32 or 64. No include guard on purpose. */
#define span W(span)
#define span_set W(span_set)
#define pool W(pool)
#define pool_alloc W(pool_alloc)
#define pool_release W(pool_release)
#define pool_free W(pool_free)
#define tree W(tree)
#define set_add W(set_add)
#define piece W(piece)
#define piece_list W(piece_list)
#define pieces_reserve W(pieces_reserve)
#define pieces_of_set W(pieces_of_set)
#define pieces_minus_set W(pieces_minus_set)
#define pieces_minus_few_blocks W(pieces_minus_few_blocks)
#define tree_free W(tree_free)
#define query_nodes W(query_nodes)
#define find_insertions W(find_insertions)
#define first_end_above W(first_end_above)
#define greedy_place W(greedy_place)
#define greedy_state W(greedy_state)
#define gp_free W(gp_free)
#define gp_setup W(gp_setup)
#define gp_step_nodes W(gp_step_nodes)
#define gp_sort_sets W(gp_sort_sets)
#define gp_cut_candidates W(gp_cut_candidates)
#define gp_pick_gap W(gp_pick_gap)
#define gp_insert W(gp_insert)
#define gp_place_one W(gp_place_one)

typedef struct span {
    POS start, end; /* [start, end) */
} span;

typedef struct span_set {
    span *v;
    uint32_t n, cap;
    size_t covered; /* bytes inside the spans: picks the set a query starts from */
} span_set;

/* The span arrays of all sets come from one pool: capacities are powers of two, a grown set's
 * old array goes to the free list of its size class, and everything is released at once at
 * the end. Hundreds of thousands of small arrays that double now and then make malloc and
 * realloc a large part of the run otherwise. */
#define POOL_CLASSES 33
#define POOL_SLAB_SPANS ((size_t)1 << 16)

typedef struct pool {
    span *free_list[POOL_CLASSES]; /* a free array's first span holds the next pointer */
    span **slabs;
    size_t n_slabs, cap_slabs;
    span *cur;       /* unused tail of the newest slab */
    size_t cur_left; /* spans */
} pool;

static span *pool_alloc(pool *p, unsigned cls)
{
    const size_t want = (size_t)1 << cls;
    span *v = p->free_list[cls];
    if (v != NULL) {
        memcpy(&p->free_list[cls], (const void *)v, sizeof p->free_list[cls]);
        return v;
    }
    if (p->cur_left < want) {
        if (TP_GROW(&p->slabs, &p->cap_slabs, p->n_slabs + 1) != TP_OK)
            return NULL;
        const size_t spans = want > POOL_SLAB_SPANS ? want : POOL_SLAB_SPANS;
        span *slab = malloc(spans * sizeof *slab);
        if (slab == NULL)
            return NULL;
        p->slabs[p->n_slabs++] = slab;
        p->cur = slab;
        p->cur_left = spans;
    }
    v = p->cur;
    p->cur += want;
    p->cur_left -= want;
    return v;
}

static void pool_release(pool *p, span *v, unsigned cls)
{
    memcpy((void *)v, &p->free_list[cls], sizeof p->free_list[cls]);
    p->free_list[cls] = v;
}

static void pool_free(pool *p)
{
    for (size_t i = 0; i < p->n_slabs; i++)
        free(p->slabs[i]);
    free(p->slabs);
}

typedef struct tree {
    size_t leaves; /* a power of two */
    span_set *own, *sub;
    uint32_t *stamp;
    uint32_t epoch;
    /* Nodes numbered below this lie above every canonical node of every query (their level
     * exceeds that of the longest lifetime), so their `own` sets stay empty and their `sub`
     * sets would never be read: queries and updates stop below them. */
    size_t top_node;
    pool pool;
} tree;

/* Adds [s, e) to a set of disjoint, non-touching spans sorted by start; i is the first span
 * whose end reaches s (touching merges), found by find_insertions. */
static int set_add(pool *pool, span_set *set, uint32_t i, POS s, POS e)
{
    uint32_t j = i;
    size_t replaced = 0;
    while (j < set->n && set->v[j].start <= e) {
        replaced += set->v[j].end - set->v[j].start;
        j++;
    }
    if (i == j) {
        if (set->n == set->cap) {
            if (set->cap >= UINT32_MAX / 2)
                return 0;
            const uint32_t cap = set->cap ? set->cap * 2 : 2;
            span *v = pool_alloc(pool, class_of(cap));
            if (v == NULL)
                return 0;
            if (set->n > 0) {
                memcpy(v, set->v, (size_t)set->n * sizeof *v);
                pool_release(pool, set->v, class_of(set->cap));
            }
            set->v = v;
            set->cap = cap;
        }
        memmove(set->v + i + 1, set->v + i, (size_t)(set->n - i) * sizeof *set->v);
        set->v[i] = (span){ s, e };
        set->n++;
        set->covered += e - s;
        return 1;
    }
    span merged = { s < set->v[i].start ? s : set->v[i].start,
                    e > set->v[j - 1].end ? e : set->v[j - 1].end };
    set->v[i] = merged;
    set->covered += (merged.end - merged.start) - replaced;
    if (j > i + 1) { /* a span already covered (common in `sub`) or extended moves nothing */
        memmove(set->v + i + 1, set->v + j, (size_t)(set->n - j) * sizeof *set->v);
        set->n -= j - i - 1;
    }
    return 1;
}

/* The first index in v[0..n) whose span ends above x (n if none), v sorted by end.
 * Branch-free: the sets are large and each step's outcome is a coin toss, so a branchy
 * search mispredicts about half of its steps. */
static uint32_t first_end_above(const span *v, uint32_t n, POS x)
{
    if (n == 0)
        return 0;
    const span *base = v;
    while (n > 1) {
        const uint32_t half = n / 2;
        base = base[half].end <= x ? base + half : base;
        n -= half;
    }
    return (uint32_t)(base - v) + (base->end <= x);
}

/* at[q] = the first span of sets[q] whose end reaches s, for q < m. The searches run in
 * lockstep, one step of each in turn: a step is a likely cache miss in a large set, and
 * interleaving the independent searches overlaps their misses instead of paying them one
 * after another. Branch-free: each step's outcome is a coin toss. */
static void find_insertions(span_set *const *sets, size_t m, POS s, uint32_t *at)
{
    const span *base[2 * 4 * 64];
    uint32_t len[2 * 4 * 64];
    uint32_t longest = 0;
    for (size_t q = 0; q < m; q++) {
        base[q] = sets[q]->v;
        len[q] = sets[q]->n;
        if (len[q] > longest)
            longest = len[q];
    }
    for (; longest > 1; longest -= longest / 2) {
        for (size_t q = 0; q < m; q++) {
            const uint32_t half = len[q] / 2;
            base[q] = half > 0 && base[q][half].end < s ? base[q] + half : base[q];
            len[q] -= half;
        }
    }
    for (size_t q = 0; q < m; q++)
        at[q] = len[q] == 0 ? 0 : (uint32_t)(base[q] - sets[q]->v) + (base[q]->end < s);
}

/* A free address range [start, end) of the union seen so far; end == POS_MAX means unbounded
 * (no block ends at or above POS_MAX: greedy_place stops before one would). */
typedef span piece;

/* A growable array of pieces. */
typedef struct piece_list {
    piece *v;
    size_t n, cap;
} piece_list;

static int pieces_reserve(piece_list *l, size_t need)
{
    return TP_GROW(&l->v, &l->cap, need) == TP_OK;
}

/* The free ranges of one coalesced set that are at least `size` long: the leading range
 * [0, first start), the gaps between blocks, and the unbounded range above the last block
 * (always kept: later sets may cut real gaps out of it). */
static void pieces_of_set(const span_set *set, size_t size, piece_list *out)
{
    size_t n = 0;
    POS prev_end = 0;
    for (uint32_t i = 0; i < set->n; i++) {
        if (set->v[i].start - prev_end >= size)
            out->v[n++] = (piece){ prev_end, set->v[i].start };
        prev_end = set->v[i].end;
    }
    out->v[n++] = (piece){ prev_end, POS_MAX };
    out->n = n;
}

/* out = the parts of the pieces in `in` that no block of `set` touches, keeping only those at
 * least `size` long (or unbounded). If the pieces of `in` are the maximal free ranges of a
 * union A that are >= size, the result is the same for A + set: a free range of the larger
 * union lies inside one of A, and dropping short ranges early is safe because intersecting
 * further sets only shrinks them. out needs room for in->n + set->n pieces. */
static void pieces_minus_set(const piece_list *in, const span_set *set, size_t size,
                             piece_list *out)
{
    const span *v = set->v;
    const uint32_t nv = set->n;
    size_t n = 0;
    uint32_t first = 0; /* no block before it ends after the current piece's start */
    for (size_t p = 0; p < in->n; p++) {
        const POS a = in->v[p].start, b = in->v[p].end;
        /* Ends increase along a coalesced set, so the first block ending after a lies at or
         * after the previous piece's one, usually a few blocks ahead: count the ends <= a
         * among the next 8 without branches (below 8, the count is the distance); farther,
         * gallop forward from there, then bisect. */
        uint32_t at = first;
        if (nv - at >= 8) {
            uint32_t ends_below = 0;
            for (uint32_t q = 0; q < 8; q++)
                ends_below += v[at + q].end <= a;
            at += ends_below;
        }
        if (at == first + 8 || nv - first < 8) {
            uint32_t lo = at, step = 1, hi = at;
            while (hi < nv && v[hi].end <= a) {
                lo = hi + 1;
                hi = nv - hi > step ? hi + step : nv;
                step *= 2;
            }
            at = lo + first_end_above(v + lo, hi - lo, a);
        }
        first = at;
        POS cur = a;
        for (uint32_t i = first; i < nv && v[i].start < b; i++) {
            if (v[i].start > cur && v[i].start - cur >= size)
                out->v[n++] = (piece){ cur, v[i].start };
            if (v[i].end > cur)
                cur = v[i].end;
        }
        if (b == POS_MAX)
            out->v[n++] = (piece){ cur, POS_MAX };
        else if (cur < b && b - cur >= size)
            out->v[n++] = (piece){ cur, b };
    }
    out->n = n;
}

/* The same result as pieces_minus_set, driven by the blocks of the set instead of by the
 * pieces: cheaper when the set has fewer blocks than there are pieces. `cur` is the piece
 * that the current block may cut; what is left of it above a block stays current, because
 * the next block may cut it again. */
static void pieces_minus_few_blocks(const piece_list *in, const span_set *set, size_t size,
                                    piece_list *out)
{
    size_t n = 0, p = 0;
    int have = 0;
    piece cur = { 0, 0 };
    /* blocks ending at or below the lowest piece cut nothing */
    for (uint32_t i = first_end_above(set->v, set->n, in->v[0].start); i < set->n; i++) {
        const POS s = set->v[i].start, e = set->v[i].end;
        for (;;) {
            if (have && cur.end <= s) {
                out->v[n++] = cur; /* a remainder that this block does not reach is final */
                have = 0;
            }
            if (!have) {
                /* Pieces ending at or before s are untouched by this block and by every later
                 * one (later blocks start above e): they are final. */
                while (p < in->n && in->v[p].end <= s)
                    out->v[n++] = in->v[p++];
                if (p == in->n)
                    goto rest;
                cur = in->v[p++];
                have = 1;
            }
            if (cur.start >= e)
                break; /* the block lies below the current piece */
            if (cur.start < s && s - cur.start >= size)
                out->v[n++] = (piece){ cur.start, s };
            if (cur.end == POS_MAX || e < cur.end) {
                cur.start = e;
                if (cur.end != POS_MAX && cur.end - cur.start < size)
                    have = 0;
                break; /* later pieces start above cur.end > e */
            }
            have = 0; /* the block covers the rest of the piece and may reach the next ones */
        }
    }
rest:
    if (have)
        out->v[n++] = cur;
    while (p < in->n)
        out->v[n++] = in->v[p++];
    out->n = n;
}

static void tree_free(tree *t)
{
    pool_free(&t->pool);
    free(t->own);
    free(t->sub);
    free(t->stamp);
}

/* The canonical nodes of the leaves a lifetime covers (nodes[0..n_canon)), then their strict
 * ancestors, each once (nodes[n_canon..n_nodes)). A tensor stored at a node (its `own` set)
 * conflicts with the query exactly when the node is one of these ancestors or lies inside
 * the subtree of a canonical node (the `sub` set of that node). */
static void query_nodes(tree *t, size_t lo, size_t hi, size_t *nodes, size_t *n_nodes_out,
                        size_t *n_canon_out)
{
    size_t n_nodes = 0;
    if (++t->epoch == 0) {
        memset(t->stamp, 0, 2 * t->leaves * sizeof *t->stamp);
        t->epoch = 1;
    }
    for (size_t l = lo + t->leaves, r = hi + t->leaves + 1; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            nodes[n_nodes++] = l++;
        if (r & 1)
            nodes[n_nodes++] = --r;
    }
    const size_t n_canon = n_nodes;
    for (size_t c = 0; c < n_canon; c++)
        t->stamp[nodes[c]] = t->epoch;
    for (size_t c = 0; c < n_canon; c++) {
        for (size_t a = nodes[c] >> 1; a >= t->top_node && t->stamp[a] != t->epoch; a >>= 1) {
            t->stamp[a] = t->epoch;
            nodes[n_nodes++] = a;
        }
    }
    *n_nodes_out = n_nodes;
    *n_canon_out = n_canon;
}

/* The state of one greedy pass: the tree, the leaves each lifetime covers, the candidate
 * pieces and the nodes of the current tensor and of the next one (found a step ahead). */
typedef struct greedy_state {
    const tp_tensor_lifetime *tensors;
    size_t alignment;
    tp_gap_rule rule;
    tree t;
    const size_t *leaf_lo, *leaf_hi; /* the leaves each lifetime covers, by order */
    piece_list cand, next;
    size_t *nodes, *nodes_next;
    size_t n_nodes, n_canon, n_nodes_next, n_canon_next;
    size_t n_sets;
    const span_set *sets[4 * 64];
    span_set *adds[2 * 4 * 64];
    uint32_t at[2 * 4 * 64];
} greedy_state;

static void gp_free(greedy_state *g)
{
    tree_free(&g->t);
    free(g->cand.v);
    free(g->next.v);
    free(g->nodes);
    free(g->nodes_next);
}

/* Leaves are the distinct first uses (tp_lifetime_ranks), and a lifetime covers the leaves
 * from its first use to the last one inside it: g->leaf_lo and g->leaf_hi, n_times leaves. */
static tp_status gp_setup(greedy_state *g, size_t n_order, size_t n_times)
{
    tree *t = &g->t;
    t->leaves = 1;
    while (t->leaves < n_times)
        t->leaves *= 2;
    /* A range of w leaves has no canonical node above level floor(log2 w). */
    size_t widest = 1;
    for (size_t k = 0; k < n_order; k++)
        if (g->leaf_hi[k] - g->leaf_lo[k] + 1 > widest)
            widest = g->leaf_hi[k] - g->leaf_lo[k] + 1;
    unsigned top_level = 0;
    while (((size_t)2 << top_level) <= widest)
        top_level++;
    t->top_node = t->leaves >> top_level;
    t->own = calloc(2 * t->leaves, sizeof *t->own);
    t->sub = calloc(2 * t->leaves, sizeof *t->sub);
    t->stamp = calloc(2 * t->leaves, sizeof *t->stamp);
    /* canonical nodes (<= 2 log) plus their ancestors (<= 2 log) */
    g->nodes = malloc(4 * 64 * sizeof *g->nodes);
    g->nodes_next = malloc(4 * 64 * sizeof *g->nodes_next);
    if (t->own == NULL || t->sub == NULL || t->stamp == NULL || g->nodes == NULL ||
        g->nodes_next == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the interval tree", n_order);
    query_nodes(t, g->leaf_lo[0], g->leaf_hi[0], g->nodes_next, &g->n_nodes_next,
                &g->n_canon_next);
    return TP_OK;
}

/* This tensor's canonical nodes (sub sets) and their strict ancestors (own sets) were found
 * one step ahead; find the next tensor's now and start loading its sets, so that the cache
 * misses of the next query overlap this one's work. */
static inline void gp_step_nodes(greedy_state *g, size_t k, size_t n_order)
{
    size_t *swap_nodes = g->nodes;
    g->nodes = g->nodes_next;
    g->nodes_next = swap_nodes;
    g->n_nodes = g->n_nodes_next;
    g->n_canon = g->n_canon_next;
    if (k + 1 < n_order) {
        query_nodes(&g->t, g->leaf_lo[k + 1], g->leaf_hi[k + 1], g->nodes_next,
                    &g->n_nodes_next, &g->n_canon_next);
        for (size_t c = 0; c < g->n_nodes_next; c++) {
            TP_PREFETCH(&g->t.sub[g->nodes_next[c]]);
            TP_PREFETCH(&g->t.own[g->nodes_next[c]]);
        }
    } else {
        g->n_nodes_next = g->n_canon_next = 0;
    }
}

/* The non-empty sets of the current nodes into g->sets, most bytes covered first (an
 * insertion sort): the set closest to the union leaves the fewest candidate ranges. Starting
 * from the set with the most blocks instead is as good with long lifetimes but not when one
 * set is a single block covering everything and another has thousands of scattered blocks
 * (nested lifetimes). */
static inline void gp_sort_sets(greedy_state *g)
{
    size_t n_sets = 0;
    for (size_t c = 0; c < g->n_nodes; c++) {
        const span_set *set = c < g->n_canon ? &g->t.sub[g->nodes[c]] : &g->t.own[g->nodes[c]];
        if (set->n == 0)
            continue;
        size_t j = n_sets++;
        while (j > 0 && g->sets[j - 1]->covered < set->covered) {
            g->sets[j] = g->sets[j - 1];
            j--;
        }
        g->sets[j] = set;
    }
    g->n_sets = n_sets;
}

/* The candidate gaps: the free ranges (>= size) of the most covering set, cut by the others
 * (see the top of this file). */
static inline tp_status gp_cut_candidates(greedy_state *g, size_t size)
{
    const span_set *const *sets = g->sets;
    if (!pieces_reserve(&g->cand, sets[0]->n + 1))
        return tp_fail(TP_ERR_NOMEM, "cannot allocate %u address ranges", sets[0]->n);
    pieces_of_set(sets[0], size, &g->cand);
    for (size_t c = 1; c < g->n_sets; c++) {
        /* Often a whole set lies below the lowest candidate: nothing to cut. */
        if (sets[c]->v[sets[c]->n - 1].end <= g->cand.v[0].start)
            continue;
        if (!pieces_reserve(&g->next, g->cand.n + sets[c]->n))
            return tp_fail(TP_ERR_NOMEM, "cannot allocate %zu address ranges",
                           g->cand.n + sets[c]->n);
        if (sets[c]->n < g->cand.n)
            pieces_minus_few_blocks(&g->cand, sets[c], size, &g->next);
        else
            pieces_minus_set(&g->cand, sets[c], size, &g->next);
        piece_list swap = g->cand;
        g->cand = g->next;
        g->next = swap;
    }
    return TP_OK;
}

/* The bounded pieces are the candidate gaps, in address order; the unbounded one (always
 * last) starts at the end of the last conflicting block. Scanning upward and replacing only
 * on a strictly smaller gap gives the tie rules: the leading gap first, then the lowest. */
static inline size_t gp_pick_gap(const greedy_state *g, size_t size, int *overflow)
{
    const piece_list *cand = &g->cand;
    int found = 0;
    size_t best_gap = 0, offset = 0;
    for (size_t i = 0; i + 1 < cand->n; i++) {
        const size_t gs = cand->v[i].start, ge = cand->v[i].end;
        int of = 0;
        const size_t at = tp_round_up_flag(gs, g->alignment, &of);
        if (of || at > ge || ge - at < size)
            continue;
        const size_t gap = ge - gs;
        if (!found || (g->rule == TP_GAP_BEST_FIT && gap < best_gap)) {
            found = 1;
            best_gap = gap;
            offset = at;
            if (g->rule == TP_GAP_FIRST_FIT)
                break;
        }
    }
    if (!found)
        offset = tp_round_up_flag(cand->v[cand->n - 1].start, g->alignment, overflow);
    return offset;
}

/* Starts loading the next tensor's sets, then adds [offset, offset + size) to the sets of
 * the current nodes. A leaf is nobody's strict ancestor, so its `own` set would never be
 * read (its `sub` set holds the same tensors). */
static inline tp_status gp_insert(greedy_state *g, size_t offset, size_t size)
{
    tree *t = &g->t;
    for (size_t c = 0; c < g->n_nodes_next; c++) {
        const span_set *set =
            c < g->n_canon_next ? &t->sub[g->nodes_next[c]] : &t->own[g->nodes_next[c]];
        for (uint32_t i = 0; i < set->n; i += 64 / sizeof(span)) /* one per cache line */
            TP_PREFETCH(&set->v[i]);
    }
    size_t n_add = 0;
    for (size_t c = 0; c < g->n_nodes; c++) {
        const size_t node = g->nodes[c];
        if (c < g->n_canon && node < t->leaves)
            g->adds[n_add++] = &t->own[node];
        g->adds[n_add++] = &t->sub[node];
    }
    find_insertions(g->adds, n_add, (POS)offset, g->at);
    for (size_t c = 0; c < n_add; c++)
        if (!set_add(&t->pool, g->adds[c], g->at[c], (POS)offset, (POS)(offset + size)))
            return tp_fail(TP_ERR_NOMEM, "cannot grow the interval tree");
    return TP_OK;
}

/* The offset of the tensor of size `size` whose nodes are current: the chosen gap, or 0
 * when no placed tensor conflicts. Sets *too_wide when a block would end at or above
 * POS_MAX. */
static inline tp_status gp_place_one(greedy_state *g, size_t id, size_t size, size_t *offset,
                                     int *too_wide)
{
    int overflow = 0;
    *offset = 0;
    gp_sort_sets(g);
    if (g->n_sets > 0) {
        tp_status st = gp_cut_candidates(g, size);
        if (st != TP_OK)
            return st;
        *offset = gp_pick_gap(g, size, &overflow);
    }
#if TREE_WIDTH == 32
    if (!overflow && (*offset >= POS_MAX || size >= POS_MAX - *offset)) {
        *too_wide = 1;
        return TP_OK;
    }
#else
    (void)too_wide;
#endif
    if (overflow || size > SIZE_MAX - *offset)
        return tp_fail(TP_ERR_OVERFLOW, "tensor %zu: offset %zu + size %zu overflows size_t",
                       id, *offset, size);
    return TP_OK;
}

/* Sets *too_wide (and returns TP_OK with no plan) when a block would end at or above POS_MAX. */
static tp_status greedy_place(const tp_tensor_lifetime *tensors, size_t count,
                              const size_t *order, size_t n_order, const tp_leaf_ranks *ranks,
                              size_t alignment, tp_gap_rule rule,
                              const tp_greedy_ticker *ticker, size_t *offsets,
                              size_t *arena_size, int *too_wide)
{
    *too_wide = 0;
    for (size_t i = 0; i < count; i++)
        offsets[i] = 0;
    *arena_size = 0;
    if (n_order == 0)
        return TP_OK;
    greedy_state g;
    memset(&g, 0, sizeof g);
    g.tensors = tensors;
    g.alignment = alignment == 0 ? 1 : alignment;
    g.rule = rule;
    g.leaf_lo = ranks->lo;
    g.leaf_hi = ranks->hi;
    tp_status st = gp_setup(&g, n_order, ranks->n_leaves);
    size_t arena = 0;
    double last_tick = ticker != NULL ? tp_clock_seconds() : 0;
    for (size_t k = 0; k < n_order && st == TP_OK; k++) {
        const size_t id = order[k];
        const size_t size = tensors[id].size;
        if ((k & 255u) == 255u && tp_ticker_poll(ticker, k, n_order, &last_tick)) {
            st = tp_greedy_timeout(k, n_order);
            break;
        }
        gp_step_nodes(&g, k, n_order);
        size_t offset = 0;
        st = gp_place_one(&g, id, size, &offset, too_wide);
        if (st != TP_OK || *too_wide)
            break;
        offsets[id] = offset;
        if (offset + size > arena)
            arena = offset + size;
        st = gp_insert(&g, offset, size);
    }
    if (st == TP_OK && !*too_wide)
        *arena_size = arena;
    if (st != TP_OK)
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
    gp_free(&g);
    return st;
}


#undef span
#undef span_set
#undef pool
#undef pool_alloc
#undef pool_release
#undef pool_free
#undef tree
#undef set_add
#undef piece
#undef piece_list
#undef pieces_reserve
#undef pieces_of_set
#undef pieces_minus_set
#undef pieces_minus_few_blocks
#undef tree_free
#undef query_nodes
#undef find_insertions
#undef first_end_above
#undef greedy_place
#undef greedy_state
#undef gp_free
#undef gp_setup
#undef gp_step_nodes
#undef gp_sort_sets
#undef gp_cut_candidates
#undef gp_pick_gap
#undef gp_insert
#undef gp_place_one

