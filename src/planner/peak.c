#include "planner/planner_internal.h"

#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct endpoint {
    size_t node;
    size_t size;
    size_t index;
} endpoint;

static int by_node(const void *pa, const void *pb)
{
    const endpoint *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

tp_status tp_peak_live_bytes(const tp_tensor_lifetime *tensors, size_t count, size_t *peak)
{
    if (peak == NULL)
        return tp_fail(TP_ERR_INVALID, "peak is NULL");
    tp_status st = tp_check_lifetimes(tensors, count);
    if (st != TP_OK)
        return st;
    if (count > SIZE_MAX / (2 * sizeof(endpoint)))
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: scratch size overflows size_t", count);

    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        n += tensors[i].size > 0;
    if (n == 0) {
        *peak = 0;
        return TP_OK;
    }
    endpoint *acquire = malloc(2 * n * sizeof *acquire);
    if (acquire == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate sweep scratch", count);
    endpoint *release = acquire + n;
    for (size_t i = 0, k = 0; i < count; i++) {
        if (tensors[i].size == 0)
            continue;
        acquire[k] = (endpoint){ tensors[i].first_use, tensors[i].size, i };
        release[k] = (endpoint){ tensors[i].last_use, tensors[i].size, i };
        k++;
    }
    qsort(acquire, n, sizeof *acquire, by_node);
    qsort(release, n, sizeof *release, by_node);

    /* Lifetimes are inclusive: a tensor released at node t is still live when another is
     * acquired at t, so at equal nodes every acquisition is counted first. */
    size_t live = 0, best = 0, r = 0;
    for (size_t a = 0; a < n; a++) {
        while (release[r].node < acquire[a].node)
            live -= release[r++].size;
        if (acquire[a].size > SIZE_MAX - live) {
            st = tp_fail(TP_ERR_OVERFLOW,
                         "tensor %zu: live bytes at node %zu exceed size_t (%zu + %zu)",
                         acquire[a].index, acquire[a].node, live, acquire[a].size);
            free(acquire);
            return st;
        }
        live += acquire[a].size;
        if (live > best)
            best = live;
    }
    free(acquire);
    *peak = best;
    return TP_OK;
}
