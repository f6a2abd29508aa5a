#include "planner/planner_internal.h"

#include "common/error.h"

/* The caller's island_of array doubles as the parent array, so islands needs no scratch
 * beyond it: one machine word per node, as the seed requires. While merging, island_of[x] is
 * x's parent, or TP_NO_ISLAND for a node no incidence has touched yet. Invariant:
 * parent[x] <= x, and each root is its set's minimum. */

static size_t find_root(size_t *parent, size_t x)
{
    size_t root = x;
    while (parent[root] != root)
        root = parent[root];
    /* Second pass compresses the path without recursion (a chain of any depth is fine). */
    while (parent[x] != root) {
        const size_t next = parent[x];
        parent[x] = root;
        x = next;
    }
    return root;
}

tp_status tp_islands(size_t node_count, const tp_edge *incidences, size_t incidence_count,
                     size_t *island_of, size_t *island_count)
{
    if (island_count == NULL)
        return tp_fail(TP_ERR_INVALID, "island_count is NULL");
    if (incidences == NULL && incidence_count > 0)
        return tp_fail(TP_ERR_INVALID, "incidences is NULL but incidence_count is %zu",
                       incidence_count);
    if (island_of == NULL && node_count > 0)
        return tp_fail(TP_ERR_INVALID, "island_of is NULL but node_count is %zu", node_count);
    for (size_t i = 0; i < incidence_count; i++) {
        const size_t a = incidences[i].from, b = incidences[i].to;
        if (a >= node_count || b >= node_count)
            return tp_fail(TP_ERR_INVALID,
                           "incidence %zu (%zu, %zu) names node %zu >= node_count %zu", i, a,
                           b, a >= node_count ? a : b, node_count);
    }

    size_t *parent = island_of;
    for (size_t x = 0; x < node_count; x++)
        parent[x] = TP_NO_ISLAND;
    for (size_t i = 0; i < incidence_count; i++) {
        const size_t a = incidences[i].from, b = incidences[i].to;
        if (parent[a] == TP_NO_ISLAND)
            parent[a] = a;
        if (parent[b] == TP_NO_ISLAND)
            parent[b] = b;
        const size_t ra = find_root(parent, a), rb = find_root(parent, b);
        if (ra < rb)
            parent[rb] = ra;
        else if (rb < ra)
            parent[ra] = rb;
    }

    /* Ascending pass: since parent[x] < x for a non-root, the parent has already been
     * relabelled, and it carries x's root's label. Labels never exceed x, so reading
     * island_of[x] before overwriting it still yields x's parent. */
    size_t count = 0;
    for (size_t x = 0; x < node_count; x++) {
        const size_t p = parent[x];
        if (p == TP_NO_ISLAND)
            continue;
        island_of[x] = (p == x) ? count++ : island_of[p];
    }
    *island_count = count;
    return TP_OK;
}
