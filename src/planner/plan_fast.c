/* The greedy of planner.md section 2 without the scan over every placed tensor.
 *
 * Which placed tensors conflict with a new one depends only on time, and what the rule needs
 * from them is only the union of their address ranges (the coalesced blocks and the gaps
 * between them). So placed tensors go into a segment tree over time, and every tree node keeps
 * two coalesced sets of address blocks: `own`, the tensors whose canonical decomposition
 * contains the node, and `sub`, the union of `own` over the node's subtree. A tensor
 * conflicts with a query exactly when it is stored at an ancestor of one of the query's
 * canonical nodes or inside the subtree of one, so the union of the query's conflicts is the
 * union of O(log T) coalesced sets. Coalescing inside the tree is what keeps this fast: the
 * greedy packs tensors tightly, so even thousands of long-lived tensors collapse into a few
 * blocks. The result is the same set of addresses as the straightforward scan, hence the same
 * gaps and the same offsets. */
#include "planner/planner_perf.h"
#include "planner/planner_internal.h"

#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    size_t start, end; /* [start, end) */
} span;

typedef struct span_set {
    span *v;
    uint32_t n, cap;
} span_set;

typedef struct tree {
    size_t leaves; /* a power of two */
    span_set *own, *sub;
    uint32_t *stamp;
    uint32_t epoch;
} tree;

/* Adds [s, e) to a set of disjoint, non-touching spans sorted by start. */
static int set_add(span_set *set, size_t s, size_t e)
{
    uint32_t lo = 0, hi = set->n;
    while (lo < hi) { /* first span whose end reaches s (touching merges) */
        uint32_t mid = lo + (hi - lo) / 2;
        if (set->v[mid].end < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t i = lo;
    uint32_t j = i;
    while (j < set->n && set->v[j].start <= e)
        j++;
    if (i == j) {
        if (set->n == set->cap) {
            uint32_t cap = set->cap ? set->cap * 2 : 2;
            span *v = realloc(set->v, (size_t)cap * sizeof *v);
            if (v == NULL)
                return 0;
            set->v = v;
            set->cap = cap;
        }
        memmove(set->v + i + 1, set->v + i, (size_t)(set->n - i) * sizeof *set->v);
        set->v[i] = (span){ s, e };
        set->n++;
        return 1;
    }
    span merged = { s < set->v[i].start ? s : set->v[i].start,
                    e > set->v[j - 1].end ? e : set->v[j - 1].end };
    set->v[i] = merged;
    memmove(set->v + i + 1, set->v + j, (size_t)(set->n - j) * sizeof *set->v);
    set->n -= j - i - 1;
    return 1;
}

typedef struct cursor {
    const span *v;
    size_t n, pos;
} cursor;

static size_t cursor_key(const cursor *cur, uint32_t i)
{
    return cur[i].v[cur[i].pos].start;
}

/* A binary min-heap of cursor indices keyed by their current block's start. */
static void heap_push(uint32_t *heap, size_t n, const cursor *cur, uint32_t x)
{
    size_t i = n;
    heap[i] = x;
    while (i > 0 && cursor_key(cur, heap[(i - 1) / 2]) > cursor_key(cur, heap[i])) {
        uint32_t t = heap[i];
        heap[i] = heap[(i - 1) / 2];
        heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void heap_down(uint32_t *heap, size_t n, const cursor *cur)
{
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cursor_key(cur, heap[l]) < cursor_key(cur, heap[m]))
            m = l;
        if (r < n && cursor_key(cur, heap[r]) < cursor_key(cur, heap[m]))
            m = r;
        if (m == i)
            return;
        uint32_t t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

static int by_size_desc_stable(const void *pa, const void *pb)
{
    const size_t *a = pa, *b = pb; /* pairs (size, index) */
    if (a[0] != b[0])
        return a[0] > b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

static int by_value(const void *pa, const void *pb)
{
    const size_t *a = pa, *b = pb;
    return (*a > *b) - (*a < *b);
}

/* First index in sorted[0..n) whose value is > x. */
static size_t upper_index(const size_t *sorted, size_t n, size_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t round_up(size_t x, size_t a, int *overflow)
{
    size_t r = x % a;
    if (r == 0)
        return x;
    if (x > SIZE_MAX - (a - r)) {
        *overflow = 1;
        return x;
    }
    return x + (a - r);
}

static void tree_free(tree *t)
{
    if (t->own != NULL)
        for (size_t i = 0; i < 2 * t->leaves; i++)
            free(t->own[i].v);
    if (t->sub != NULL)
        for (size_t i = 0; i < 2 * t->leaves; i++)
            free(t->sub[i].v);
    free(t->own);
    free(t->sub);
    free(t->stamp);
}

tp_status tp_greedy_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                          size_t n_order, size_t alignment, tp_gap_rule rule, size_t *offsets,
                          size_t *arena_size)
{
    if (alignment == 0)
        alignment = 1;
    for (size_t i = 0; i < count; i++)
        offsets[i] = 0;
    *arena_size = 0;
    if (n_order == 0)
        return TP_OK;

    /* Leaves are the distinct first_use values: two inclusive lifetimes intersect exactly when
     * the later of their two starts lies inside both, so the starts are the only time points
     * that matter, and a lifetime covers the starts in [first_use, last_use]. */
    tp_status st = TP_OK;
    tree t = { 0 };
    size_t *times = malloc(n_order * sizeof *times);
    span *scratch = NULL;
    size_t scratch_cap = 0;
    size_t *nodes = NULL;
    cursor cur[4 * 64];
    uint32_t heap[4 * 64];
    if (times == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", n_order);
    for (size_t k = 0; k < n_order; k++)
        times[k] = tensors[order[k]].first_use;
    qsort(times, n_order, sizeof *times, by_value);
    size_t n_times = 0;
    for (size_t k = 0; k < n_order; k++)
        if (n_times == 0 || times[n_times - 1] != times[k])
            times[n_times++] = times[k];

    t.leaves = 1;
    while (t.leaves < n_times)
        t.leaves *= 2;
    t.own = calloc(2 * t.leaves, sizeof *t.own);
    t.sub = calloc(2 * t.leaves, sizeof *t.sub);
    t.stamp = calloc(2 * t.leaves, sizeof *t.stamp);
    /* canonical nodes (<= 2 log) plus their ancestors (<= 2 log) */
    nodes = malloc(4 * 64 * sizeof *nodes);
    if (t.own == NULL || t.sub == NULL || t.stamp == NULL || nodes == NULL) {
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate the interval tree", n_order);
        goto out;
    }

    size_t arena = 0;
    for (size_t k = 0; k < n_order; k++) {
        const size_t id = order[k];
        const size_t size = tensors[id].size;
        const size_t lo = upper_index(times, n_times, tensors[id].first_use) - 1;
        const size_t hi = upper_index(times, n_times, tensors[id].last_use) - 1;

        /* The query's canonical nodes, then their strict ancestors. */
        size_t n_canon = 0, n_nodes = 0;
        if (++t.epoch == 0) {
            memset(t.stamp, 0, 2 * t.leaves * sizeof *t.stamp);
            t.epoch = 1;
        }
        for (size_t l = lo + t.leaves, r = hi + t.leaves + 1; l < r; l >>= 1, r >>= 1) {
            if (l & 1)
                nodes[n_nodes++] = l++;
            if (r & 1)
                nodes[n_nodes++] = --r;
        }
        n_canon = n_nodes;
        for (size_t c = 0; c < n_canon; c++)
            t.stamp[nodes[c]] = t.epoch;
        for (size_t c = 0; c < n_canon; c++) {
            for (size_t a = nodes[c] >> 1; a >= 1 && t.stamp[a] != t.epoch; a >>= 1) {
                t.stamp[a] = t.epoch;
                nodes[n_nodes++] = a;
            }
        }

        /* k-way merge of the coalesced sets in address order. A set's blocks have increasing
         * ends, so whatever the merged block already covers is skipped by a binary search:
         * the work follows the merged blocks, not the (heavily overlapping) inputs. */
        size_t n_sets = 0;
        for (size_t c = 0; c < n_nodes; c++) {
            const span_set *set = c < n_canon ? &t.sub[nodes[c]] : &t.own[nodes[c]];
            if (set->n == 0)
                continue;
            cur[n_sets].v = set->v;
            cur[n_sets].n = set->n;
            cur[n_sets].pos = 0;
            heap_push(heap, n_sets, cur, (uint32_t)n_sets);
            n_sets++;
        }
        size_t nb = 0, heap_n = n_sets;
        while (heap_n > 0) {
            cursor *k = &cur[heap[0]];
            const span b = k->v[k->pos];
            if (nb > 0 && b.start <= scratch[nb - 1].end) {
                if (b.end > scratch[nb - 1].end)
                    scratch[nb - 1].end = b.end;
            } else {
                if (nb == scratch_cap) {
                    size_t cap = scratch_cap ? 2 * scratch_cap : 64;
                    span *sp = realloc(scratch, cap * sizeof *sp);
                    if (sp == NULL) {
                        st = tp_fail(TP_ERR_NOMEM, "cannot allocate %zu address blocks", cap);
                        goto out;
                    }
                    scratch = sp;
                    scratch_cap = cap;
                }
                scratch[nb++] = b;
            }
            const size_t covered = scratch[nb - 1].end;
            size_t lo = k->pos + 1, hi = k->n;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (k->v[mid].end <= covered)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            k->pos = lo;
            if (k->pos < k->n)
                heap_down(heap, heap_n, cur);
            else {
                heap[0] = heap[--heap_n];
                heap_down(heap, heap_n, cur);
            }
        }

        size_t offset = 0;
        int overflow = 0;
        if (nb > 0) {
            int found = 0;
            size_t best_gap = 0;
            /* gap g runs from prev_end to scratch[g].start; the leading gap starts at 0 */
            for (size_t g = 0; g < nb; g++) {
                const size_t gs = g == 0 ? 0 : scratch[g - 1].end;
                const size_t ge = scratch[g].start;
                int of = 0;
                const size_t at = round_up(gs, alignment, &of);
                if (of || at > ge || ge - at < size)
                    continue;
                const size_t gap = ge - gs;
                if (!found || (rule == TP_GAP_BEST_FIT && gap < best_gap)) {
                    found = 1;
                    best_gap = gap;
                    offset = at;
                    if (rule == TP_GAP_FIRST_FIT)
                        break;
                }
            }
            if (!found)
                offset = round_up(scratch[nb - 1].end, alignment, &overflow);
        }
        if (overflow || size > SIZE_MAX - offset) {
            st = tp_fail(TP_ERR_OVERFLOW, "tensor %zu: offset %zu + size %zu overflows size_t",
                         id, offset, size);
            goto out;
        }
        offsets[id] = offset;
        if (offset + size > arena)
            arena = offset + size;

        for (size_t c = 0; c < n_nodes; c++) {
            const size_t node = nodes[c];
            if ((c < n_canon && !set_add(&t.own[node], offset, offset + size)) ||
                !set_add(&t.sub[node], offset, offset + size)) {
                st = tp_fail(TP_ERR_NOMEM, "cannot grow the interval tree");
                goto out;
            }
        }
    }
    *arena_size = arena;

out:
    if (st != TP_OK)
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
    tree_free(&t);
    free(times);
    free(scratch);
    free(nodes);
    return st;
}

tp_status tp_plan_offsets_fast(const tp_tensor_lifetime *tensors, size_t count,
                               size_t *offsets, size_t *arena_size)
{
    if (arena_size == NULL)
        return tp_fail(TP_ERR_INVALID, "arena_size is NULL");
    if (offsets == NULL && count > 0)
        return tp_fail(TP_ERR_INVALID, "offsets is NULL but count is %zu", count);
    tp_status st = tp_check_lifetimes(tensors, count);
    if (st != TP_OK)
        return st;
    if (count > SIZE_MAX / (2 * sizeof(size_t)))
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: scratch size overflows size_t", count);
    size_t *keys = malloc((count ? count : 1) * 2 * sizeof *keys);
    if (keys == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", count);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (tensors[i].size > 0) {
            keys[2 * n] = tensors[i].size;
            keys[2 * n + 1] = i;
            n++;
        }
    }
    qsort(keys, n, 2 * sizeof *keys, by_size_desc_stable);
    for (size_t k = 0; k < n; k++)
        keys[k] = keys[2 * k + 1];
    st = tp_greedy_place(tensors, count, keys, n, 1, TP_GAP_BEST_FIT, offsets, arena_size);
    free(keys);
    return st;
}
