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
 * for the edges that point below it. */
#include "planner/planner_perf.h"

#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

tp_status tp_transitive_reduction_budget(size_t node_count, const tp_edge *edges,
                                         size_t edge_count, tp_edge *reduced,
                                         size_t *reduced_count, size_t memory_budget)
{
    size_t n = 0;
    tp_status st = tp_reduction_check(node_count, edges, edge_count, reduced, reduced_count, &n);
    if (st != TP_OK || edge_count == 0)
        return st;
    const size_t all_words = n / 64 + (n % 64 != 0);

    tp_edge *sorted = malloc(edge_count * sizeof *sorted);
    unsigned char *keep = malloc(edge_count);
    size_t *first = calloc(n + 1, sizeof *first); /* CSR: successors of u in [first[u], first[u+1]) */
    uint64_t *rows = NULL;
    if (sorted == NULL || keep == NULL || first == NULL) {
        st = tp_fail(TP_ERR_NOMEM, "%zu edges: cannot allocate reduction scratch", edge_count);
        goto out;
    }
    const size_t m = tp_reduction_sort_edges(edges, edge_count, sorted);
    for (size_t e = 0; e < m; e++)
        first[sorted[e].from + 1]++;
    for (size_t u = 0; u < n; u++)
        first[u + 1] += first[u];

    /* Block width in 64-bit words: as wide as the budget allows for n rows, at least one word,
     * at most all columns. If the allocation fails, halve it. */
    size_t words = memory_budget / 8 / n;
    if (words < 1)
        words = 1;
    if (words > all_words)
        words = all_words;
    for (;;) {
        rows = malloc(n * words * sizeof *rows);
        if (rows != NULL || words == 1)
            break;
        words /= 2;
    }
    if (rows == NULL) {
        st = tp_fail(TP_ERR_NOMEM, "%zu nodes: cannot allocate even one column block of "
                                   "reachability (%zu bytes)",
                     n, n * sizeof *rows);
        goto out;
    }

    const size_t width = words * 64;
    for (size_t c0 = 0; c0 < n; c0 += width) {
        const size_t c1 = n - c0 < width ? n : c0 + width;
        /* rows of nodes >= c1 hold no column of this block: only u < c1 matter */
        memset(rows, 0, c1 * words * sizeof *rows);
        for (size_t u = c1; u-- > 0;) {
            uint64_t *row = rows + u * words;
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
                /* v's row has nothing below column v + 1 */
                const uint64_t *succ = rows + v * words;
                const size_t w0 = v >= c0 ? (v - c0) / 64 : 0;
                for (size_t w = w0; w < words; w++)
                    row[w] |= succ[w];
            }
        }
    }

    size_t out_n = 0;
    for (size_t e = 0; e < m; e++)
        if (keep[e])
            reduced[out_n++] = sorted[e];
    *reduced_count = out_n;

out:
    free(sorted);
    free(keep);
    free(first);
    free(rows);
    return st;
}

tp_status tp_transitive_reduction(size_t node_count, const tp_edge *edges, size_t edge_count,
                                  tp_edge *reduced, size_t *reduced_count)
{
    return tp_transitive_reduction_budget(node_count, edges, edge_count, reduced,
                                          reduced_count, TP_REDUCTION_DEFAULT_BUDGET);
}
