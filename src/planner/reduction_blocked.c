/* Transitive reduction with bounded memory.
 *
 * Nodes are taken in descending order, so every successor's reachability row is final before
 * it is used. A node's successors are visited in ascending order: a successor w can only reach
 * successors v > w, so when v comes up, everything that could make u -> v redundant has already
 * been folded into u's row. An edge u -> v whose v is already in the row is dropped and v's row
 * is not folded (it is a subset of what is there), which saves most of the work on dense
 * graphs. The rows hold only one block of columns at a time; the columns of a block can only
 * be reached through rows of nodes below the block's end, and the keep/drop decision of an edge
 * is made in the pass over the block holding its head, using decisions made in earlier blocks
 * for the edges that point below it.
 *
 * Only live rows take memory. v's row is made when v is processed and read for the last time
 * when its smallest predecessor is, so rows share a small number of slots, and a sink (no
 * successor) has an empty row and needs none. In a compute graph most values are consumed
 * soon after they are made: a few hundred rows are live at once however many nodes there are,
 * so the rows stay in cache and the columns fit in one block, where a row per node would spill
 * to memory at a few tens of thousands of nodes and, under a budget, need many passes. */

#include "planner/planner_internal.h"
#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NO_SLOT SIZE_MAX
#define BLOCK_TARGET ((size_t)32 << 20)

/* slot_of[u] for every node with successors, NO_SLOT for the others; returns the number of
 * slots, which is the most rows live at once in the descending pass. `scratch` has room for n
 * entries and `min_pred` receives each node's smallest predecessor (NO_SLOT if none). */
static size_t assign_slots(size_t n, const tp_edge *sorted, const size_t *first, size_t *slot_of,
                           size_t *min_pred, size_t *scratch)
{
    for (size_t v = 0; v < n; v++)
        min_pred[v] = NO_SLOT;
    for (size_t u = n; u-- > 0;) /* descending u: the last write is the smallest */
        for (size_t e = first[u]; e < first[u + 1]; e++)
            min_pred[sorted[e].to] = u;
    size_t *free_slots = scratch, n_free = 0, slots = 0;
    for (size_t u = n; u-- > 0;) {
        slot_of[u] = NO_SLOT;
        if (first[u] == first[u + 1])
            continue;
        slot_of[u] = n_free > 0 ? free_slots[--n_free] : slots++;
        /* after u is processed: successors whose last reader was u, and u itself if no one
         * will read it */
        for (size_t e = first[u]; e < first[u + 1]; e++) {
            const size_t v = sorted[e].to;
            if (min_pred[v] == u && slot_of[v] != NO_SLOT)
                free_slots[n_free++] = slot_of[v];
        }
        if (min_pred[u] == NO_SLOT)
            free_slots[n_free++] = slot_of[u];
    }
    return slots;
}

/* One pass over columns [c0, c1) (words 64-bit words per live row): for u from high to low,
 * its row is the union of its kept successors' rows, and an edge to a column already set is
 * redundant (keep[e] = 0). */
static void reduce_block(size_t c0, size_t c1, size_t words, uint64_t *rows,
                         const size_t *slot_of, const size_t *first, const tp_edge *sorted,
                         unsigned char *keep)
{
    /* rows of nodes >= c1 hold no column of this block: only u < c1 matter */
    for (size_t u = c1; u-- > 0;) {
        if (slot_of[u] == NO_SLOT)
            continue; /* no successors: nothing to decide, an empty row */
        uint64_t *row = rows + slot_of[u] * words;
        memset(row, 0, words * sizeof *row);
        for (size_t e = first[u]; e < first[u + 1]; e++) {
            const size_t v = sorted[e].to;
            if (v >= c1)
                break;
            if (v >= c0) {
                const size_t bit = v - c0;
                if ((row[bit / 64] >> (bit % 64)) & 1u) {
                    keep[e] = 0;
                    continue;
                }
                keep[e] = 1;
                row[bit / 64] |= (uint64_t)1 << (bit % 64);
            } else if (!keep[e]) {
                continue;
            }
            if (slot_of[v] == NO_SLOT)
                continue;
            /* v's row has nothing below column v + 1 */
            const uint64_t *succ = rows + slot_of[v] * words;
            const size_t w0 = v >= c0 ? (v - c0) / 64 : 0;
            for (size_t w = w0; w < words; w++)
                row[w] |= succ[w];
        }
    }
}

tp_status tp_transitive_reduction_stats(size_t node_count, const tp_edge *edges,
                                        size_t edge_count, tp_edge *reduced,
                                        size_t *reduced_count, size_t memory_budget,
                                        tp_reduction_stats *stats)
{
    size_t n = 0;
    if (stats != NULL)
        *stats = (tp_reduction_stats){ 0, 0, 0 };
    tp_status st = tp_reduction_check(node_count, edges, edge_count, reduced, reduced_count, &n);
    if (st != TP_OK || edge_count == 0)
        return st;
    const size_t all_words = n / 64 + (n % 64 != 0);

    tp_edge *sorted = malloc(edge_count * sizeof *sorted);
    unsigned char *keep = malloc(edge_count);
    size_t *first = calloc(n + 1, sizeof *first); /* CSR: successors of u in [first[u], first[u+1]) */
    size_t *slot_of = malloc(n * sizeof *slot_of);
    size_t *min_pred = malloc(n * sizeof *min_pred);
    size_t *scratch = malloc(n * sizeof *scratch);
    uint64_t *rows = NULL;
    if (sorted == NULL || keep == NULL || first == NULL || slot_of == NULL || min_pred == NULL ||
        scratch == NULL) {
        st = tp_fail(TP_ERR_NOMEM, "%zu edges: cannot allocate reduction scratch", edge_count);
        goto out;
    }
    const size_t m = tp_reduction_sort_edges(edges, edge_count, sorted);
    for (size_t e = 0; e < m; e++)
        first[sorted[e].from + 1]++;
    for (size_t u = 0; u < n; u++)
        first[u + 1] += first[u];
    const size_t slots = assign_slots(n, sorted, first, slot_of, min_pred, scratch);
    free(min_pred);
    free(scratch);
    min_pred = scratch = NULL;

    /* Block width in 64-bit words: as wide as the budget allows for the live rows, at least
     * one word, at most all columns. If the allocation fails, halve it. Rows beyond about
     * BLOCK_TARGET bytes no longer stay in cache, and a pass over them costs more than
     * another pass over the edges (n = 3e5, 24,000 live rows: 4.3 s in one pass of 907 MB,
     * 1.2 s in 28 passes of 32 MiB, 1.4 s in 7 or 55 passes). */
    const size_t usable = memory_budget < BLOCK_TARGET ? memory_budget : BLOCK_TARGET;
    size_t words = usable / 8 / slots;
    if (words < 1)
        words = 1;
    if (words > all_words)
        words = all_words;
    for (;;) {
        rows = malloc(slots * words * sizeof *rows);
        if (rows != NULL || words == 1)
            break;
        words /= 2;
    }
    if (rows == NULL) {
        st = tp_fail(TP_ERR_NOMEM, "%zu live rows: cannot allocate even one column block of "
                                   "reachability (%zu bytes)",
                     slots, slots * sizeof *rows);
        goto out;
    }

    const size_t width = words * 64;
    size_t passes = 0;
    for (size_t c0 = 0; c0 < n; c0 += width) {
        const size_t c1 = n - c0 < width ? n : c0 + width;
        passes++;
        reduce_block(c0, c1, words, rows, slot_of, first, sorted, keep);
    }

    size_t out_n = 0;
    for (size_t e = 0; e < m; e++)
        if (keep[e])
            reduced[out_n++] = sorted[e];
    *reduced_count = out_n;
    if (stats != NULL)
        *stats = (tp_reduction_stats){ slots, words * 64, passes };

out:
    free(sorted);
    free(keep);
    free(first);
    free(slot_of);
    free(min_pred);
    free(scratch);
    free(rows);
    return st;
}

tp_status tp_transitive_reduction_budget(size_t node_count, const tp_edge *edges,
                                         size_t edge_count, tp_edge *reduced,
                                         size_t *reduced_count, size_t memory_budget)
{
    return tp_transitive_reduction_stats(node_count, edges, edge_count, reduced, reduced_count,
                                         memory_budget, NULL);
}

tp_status tp_transitive_reduction(size_t node_count, const tp_edge *edges, size_t edge_count,
                                  tp_edge *reduced, size_t *reduced_count)
{
    return tp_transitive_reduction_budget(node_count, edges, edge_count, reduced,
                                          reduced_count, TP_REDUCTION_DEFAULT_BUDGET);
}
