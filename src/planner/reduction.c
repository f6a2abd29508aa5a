#include "planner/planner_internal.h"

#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int by_from_to(const void *pa, const void *pb)
{
    const tp_edge *a = pa, *b = pb;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    return (a->to > b->to) - (a->to < b->to);
}

static int bit_is_set(const uint64_t *row, size_t v)
{
    return (int)((row[v / 64] >> (v % 64)) & 1u);
}

tp_status tp_reduction_check(size_t node_count, const tp_edge *edges, size_t edge_count,
                             const tp_edge *reduced, size_t *reduced_count, size_t *rows)
{
    if (reduced_count == NULL)
        return tp_fail(TP_ERR_INVALID, "reduced_count is NULL");
    if (edges == NULL && edge_count > 0)
        return tp_fail(TP_ERR_INVALID, "edges is NULL but edge_count is %zu", edge_count);
    if (reduced == NULL && edge_count > 0)
        return tp_fail(TP_ERR_INVALID, "reduced is NULL but edge_count is %zu", edge_count);

    /* A back edge would make the single descending closure pass wrong, so refuse it. */
    size_t n = 0; /* rows needed: nodes above the largest endpoint have no edges */
    for (size_t i = 0; i < edge_count; i++) {
        if (edges[i].from >= edges[i].to || edges[i].to >= node_count)
            return tp_fail(TP_ERR_INVALID,
                           "edge %zu (%zu -> %zu) breaks the topological numbering: "
                           "need from < to < node_count %zu",
                           i, edges[i].from, edges[i].to, node_count);
        if (edges[i].to + 1 > n)
            n = edges[i].to + 1;
    }
    *rows = n;
    if (edge_count == 0) {
        *reduced_count = 0;
        return TP_OK;
    }
    /* The contract of the seed: a graph whose whole reachability matrix cannot even be
     * addressed is refused before anything is allocated, although blocks would need less. */
    const size_t words = n / 64 + (n % 64 != 0);
    if (words > SIZE_MAX / sizeof(uint64_t) / n)
        return tp_fail(TP_ERR_NOMEM,
                       "%zu nodes: reachability matrix of %zu x %zu bits overflows size_t", n,
                       n, n);
    if (edge_count > SIZE_MAX / sizeof(tp_edge) || n > SIZE_MAX / sizeof(size_t) - 1)
        return tp_fail(TP_ERR_NOMEM, "%zu edges: scratch size overflows size_t", edge_count);
    return TP_OK;
}

size_t tp_reduction_sort_edges(const tp_edge *edges, size_t edge_count, tp_edge *sorted)
{
    if (edge_count == 0)
        return 0;
    memcpy(sorted, edges, edge_count * sizeof *sorted);
    qsort(sorted, edge_count, sizeof *sorted, by_from_to);
    size_t m = 1;
    for (size_t i = 1; i < edge_count; i++)
        if (sorted[i].from != sorted[m - 1].from || sorted[i].to != sorted[m - 1].to)
            sorted[m++] = sorted[i];
    return m;
}

tp_status tp_transitive_reduction_dense(size_t node_count, const tp_edge *edges, size_t edge_count,
                                  tp_edge *reduced, size_t *reduced_count)
{
    size_t n = 0;
    tp_status st = tp_reduction_check(node_count, edges, edge_count, reduced, reduced_count, &n);
    if (st != TP_OK || edge_count == 0)
        return st;
    const size_t words = n / 64 + (n % 64 != 0);
    uint64_t *reach = calloc(n * words, sizeof *reach);
    tp_edge *sorted = malloc(edge_count * sizeof *sorted);
    unsigned char *keep = malloc(edge_count);
    if (reach == NULL || sorted == NULL || keep == NULL) {
        free(reach);
        free(sorted);
        free(keep);
        return tp_fail(TP_ERR_NOMEM,
                       "%zu nodes: cannot allocate the %zu-byte reachability matrix", n,
                       n * words * sizeof *reach);
    }

    const size_t m = tp_reduction_sort_edges(edges, edge_count, sorted);

    /* Descending node order is reverse topological, so every successor's row is final when
     * it is folded in. reach[u] first collects what u's successors reach (themselves
     * excluded): u -> v is redundant exactly when v is in that set. Then u's direct
     * successors are added to complete the row. */
    size_t end = m;
    while (end > 0) {
        const size_t u = sorted[end - 1].from;
        size_t begin = end;
        while (begin > 0 && sorted[begin - 1].from == u)
            begin--;
        uint64_t *row = reach + u * words;
        for (size_t e = begin; e < end; e++) {
            const uint64_t *succ = reach + sorted[e].to * words;
            for (size_t w = 0; w < words; w++)
                row[w] |= succ[w];
        }
        for (size_t e = begin; e < end; e++)
            keep[e] = !bit_is_set(row, sorted[e].to);
        for (size_t e = begin; e < end; e++)
            row[sorted[e].to / 64] |= (uint64_t)1 << (sorted[e].to % 64);
        end = begin;
    }

    size_t out = 0;
    for (size_t e = 0; e < m; e++) {
        if (keep[e])
            reduced[out++] = sorted[e];
    }
    *reduced_count = out;
    free(reach);
    free(sorted);
    free(keep);
    return TP_OK;
}
