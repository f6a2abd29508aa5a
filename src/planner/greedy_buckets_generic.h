/* The part of greedy_buckets.c compiled once per address width: greedy_buckets.c includes it
 * twice, with POS the address type (uint32_t, then size_t), POS_MAX its largest value,
 * W(name) the name of this width's copy and BK_WIDTH 32 or 64. No include guard on purpose. */
#define bk_entry W(bk_entry)
#define bk_block W(bk_block)
#define bk_state W(bk_state)
#define bk_free W(bk_free)
#define bk_setup W(bk_setup)
#define bk_gather W(bk_gather)
#define bk_merge W(bk_merge)
#define bk_pick W(bk_pick)
#define bk_prefetch W(bk_prefetch)
#define bk_insert W(bk_insert)
#define bk_place W(bk_place)

typedef struct bk_entry {
    uint32_t lo, hi; /* leaves of the lifetime */
    POS start, end;  /* [start, end) */
} bk_entry;

typedef struct bk_block {
    POS start, end;
} bk_block;

/* The scratch of one pass: the buckets (bucket b's entries at entries[head[b].base], the
 * head[b].fill placed ones kept in address order), the placed long lifetimes (in address
 * order too) and the blocks of a query with their runs. */
typedef struct bk_state {
    unsigned shift;
    size_t long_from;
    bk_head *head;
    bk_entry *entries, *longs;
    uint32_t n_longs;
    bk_block *blocks, *merged;
    uint32_t *runs; /* run r is blocks[runs[r] .. runs[r + 1]) */
} bk_state;

static void bk_free(bk_state *s)
{
    free(s->head);
    free(s->entries);
    free(s->longs);
    free(s->blocks);
    free(s->merged);
    free(s->runs);
}

static tp_status bk_setup(bk_state *s, const tp_leaf_ranks *r, size_t n,
                          const tp_bucket_shape *shape)
{
    memset(s, 0, sizeof *s);
    s->shift = shape->shift;
    s->long_from = shape->long_from;
    size_t max_runs = 0, n_long = 0;
    tp_status st = bk_heads(r, n, shape, &s->head, &max_runs, &n_long);
    if (st != TP_OK)
        return st;
    s->entries = malloc(n * sizeof *s->entries);
    s->longs = malloc((n_long ? n_long : 1) * sizeof *s->longs);
    s->blocks = malloc(n * sizeof *s->blocks);
    s->merged = malloc(n * sizeof *s->merged);
    s->runs = malloc((max_runs + 1) * sizeof *s->runs);
    if (s->entries == NULL || s->longs == NULL || s->blocks == NULL || s->merged == NULL ||
        s->runs == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the time buckets", n);
    return TP_OK;
}

/* The blocks of placed tensors whose leaves meet [lo, hi], one address-ordered run for the
 * long list and one per non-empty bucket; returns the number of runs. */
static size_t bk_gather(bk_state *s, uint32_t lo, uint32_t hi)
{
    const uint32_t b1 = hi >> s->shift;
    uint32_t n = 0;
    size_t n_runs = 0;
    for (uint32_t i = 0; i < s->n_longs; i++) {
        s->blocks[n] = (bk_block){ s->longs[i].start, s->longs[i].end };
        n += s->longs[i].hi >= lo && s->longs[i].lo <= hi;
    }
    if (n > 0)
        s->runs[n_runs++] = 0;
    for (uint32_t b = s->head[lo >> s->shift].reach; b <= b1; b++) {
        const bk_entry *e = s->entries + s->head[b].base;
        const uint32_t m = s->head[b].fill, run_start = n;
        for (uint32_t i = 0; i < m; i++) {
            s->blocks[n] = (bk_block){ e[i].start, e[i].end };
            n += e[i].hi >= lo && e[i].lo <= hi; /* branch-free: a coin toss per entry */
        }
        if (n > run_start)
            s->runs[n_runs++] = run_start;
    }
    s->runs[n_runs] = n;
    return n_runs;
}

/* Merges the runs pairwise until one is left; returns the array that holds it. */
static const bk_block *bk_merge(bk_state *s, size_t n_runs)
{
    bk_block *from = s->blocks, *to = s->merged;
    uint32_t *runs = s->runs;
    while (n_runs > 1) {
        size_t out = 0, r = 0;
        for (; r + 1 < n_runs; r += 2) {
            uint32_t i = runs[r], j = runs[r + 1], w = runs[r];
            const uint32_t ie = runs[r + 1], je = runs[r + 2];
            while (i < ie && j < je)
                to[w++] = from[j].start < from[i].start ? from[j++] : from[i++];
            while (i < ie)
                to[w++] = from[i++];
            while (j < je)
                to[w++] = from[j++];
            runs[out++] = runs[r];
        }
        if (r < n_runs) {
            memcpy(to + runs[r], from + runs[r], (size_t)(runs[r + 1] - runs[r]) * sizeof *to);
            runs[out++] = runs[r];
        }
        runs[out] = runs[n_runs];
        n_runs = out;
        bk_block *swap = from;
        from = to;
        to = swap;
    }
    return from;
}

/* The offset the rule gives among address-ordered blocks: the gaps of their union, scanned
 * upward, best fit replacing only on a strictly smaller gap (so the lowest wins a tie); when
 * none fits, the top of the union rounded up. */
static size_t bk_pick(const bk_block *b, size_t n, size_t size, size_t align, tp_gap_rule rule,
                      int *overflow)
{
    size_t top = 0, best_gap = 0, offset = 0;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t start = b[i].start;
        if (start > top) {
            int of = 0;
            const size_t at = tp_round_up_flag(top, align, &of);
            if (!of && at <= start && start - at >= size &&
                (!found || (rule == TP_GAP_BEST_FIT && start - top < best_gap))) {
                found = 1;
                best_gap = start - top;
                offset = at;
                if (rule == TP_GAP_FIRST_FIT)
                    return offset;
            }
        }
        if (b[i].end > top)
            top = b[i].end;
    }
    return found ? offset : tp_round_up_flag(top, align, overflow);
}

/* Starts loading the bucket lists a later query reads: queries jump across time (the order is
 * by size, not time), so each one's lists are cache misses that this overlaps with the
 * current query's work. */
static void bk_prefetch(const bk_state *s, uint32_t lo, uint32_t hi)
{
    const uint32_t b1 = hi >> s->shift;
    for (uint32_t b = s->head[lo >> s->shift].reach; b <= b1; b++) {
        const char *p = (const char *)(s->entries + s->head[b].base);
        const size_t bytes = s->head[b].fill * sizeof(bk_entry);
        for (size_t at = 0; at < bytes; at += 64)
            TP_PREFETCH(p + at);
    }
}

/* Stores a placed tensor in the bucket of its first leaf, or in the long list, keeping either
 * in address order. */
static void bk_insert(bk_state *s, uint32_t lo, uint32_t hi, POS start, POS end)
{
    bk_entry *e;
    uint32_t i;
    if ((size_t)(hi - lo) + 1 >= s->long_from) {
        e = s->longs;
        i = s->n_longs++;
    } else {
        bk_head *h = &s->head[lo >> s->shift];
        e = s->entries + h->base;
        i = h->fill++;
    }
    while (i > 0 && e[i - 1].start > start) {
        e[i] = e[i - 1];
        i--;
    }
    e[i] = (bk_entry){ lo, hi, start, end };
}

/* Sets *too_wide (and returns TP_OK with no plan) when a block would end at or above POS_MAX. */
static tp_status bk_place(const tp_tensor_lifetime *tensors, const size_t *order, size_t n_order,
                          const tp_leaf_ranks *r, const tp_bucket_shape *shape, size_t align,
                          tp_gap_rule rule, const tp_greedy_ticker *ticker, size_t *offsets,
                          size_t *arena_size, int *too_wide)
{
    *too_wide = 0;
    bk_state s;
    const unsigned shift = shape->shift;
    tp_status st = bk_setup(&s, r, n_order, shape);
    size_t arena = 0;
    double last_tick = ticker != NULL ? tp_clock_seconds() : 0;
    for (size_t k = 0; k < n_order && st == TP_OK; k++) {
        const size_t id = order[k], size = tensors[id].size;
        const uint32_t lo = (uint32_t)r->lo[k], hi = (uint32_t)r->hi[k];
        if ((k & 255u) == 255u && tp_ticker_poll(ticker, k, n_order, &last_tick)) {
            st = tp_greedy_timeout(k, n_order);
            break;
        }
        if (k + 2 * BK_AHEAD < n_order)
            bk_prefetch_heads(tensors, order, r, s.head, shift, k + 2 * BK_AHEAD);
        if (k + BK_AHEAD < n_order)
            bk_prefetch(&s, (uint32_t)r->lo[k + BK_AHEAD], (uint32_t)r->hi[k + BK_AHEAD]);
        const size_t n_runs = bk_gather(&s, lo, hi);
        const bk_block *blocks = bk_merge(&s, n_runs);
        int overflow = 0;
        const size_t offset = bk_pick(blocks, s.runs[n_runs > 0 ? 1 : 0], size, align, rule,
                                      &overflow);
#if BK_WIDTH == 32
        if (!overflow && (offset >= POS_MAX || size >= POS_MAX - offset)) {
            *too_wide = 1;
            break;
        }
#else
        (void)too_wide;
#endif
        if (overflow) { /* no offset was found: there is none to name */
            st = tp_fail(TP_ERR_OVERFLOW, "tensor %zu: no offset aligned to %zu leaves room "
                         "for its %zu bytes below 2^64", id, align, size);
            break;
        }
        if (size > SIZE_MAX - offset) {
            st = tp_fail(TP_ERR_OVERFLOW, "tensor %zu: offset %zu + size %zu overflows size_t",
                         id, offset, size);
            break;
        }
        offsets[id] = offset;
        if (offset + size > arena)
            arena = offset + size;
        bk_insert(&s, lo, hi, (POS)offset, (POS)(offset + size));
    }
    if (st == TP_OK && !*too_wide)
        *arena_size = arena;
    bk_free(&s);
    return st;
}

#undef bk_entry
#undef bk_block
#undef bk_state
#undef bk_free
#undef bk_setup
#undef bk_gather
#undef bk_merge
#undef bk_pick
#undef bk_prefetch
#undef bk_insert
#undef bk_place
