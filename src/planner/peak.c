#include "planner/planner_internal.h"

#include "common/error.h"
#include "common/sort.h"

#include <stdint.h>
#include <stdlib.h>

tp_status tp_peak_live_bytes(const tp_tensor_lifetime *tensors, size_t count, size_t *peak)
{
    if (peak == NULL)
        return tp_fail(TP_ERR_INVALID, "peak is NULL");
    tp_status st = tp_check_lifetimes(tensors, count);
    if (st != TP_OK)
        return st;
    if (count > SIZE_MAX / (4 * sizeof(tp_sort_item)))
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: scratch size overflows size_t", count);

    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        n += tensors[i].size > 0;
    if (n == 0) {
        *peak = 0;
        return TP_OK;
    }
    /* acquisitions and releases, each sorted by node (stable: by tensor on a tie) */
    tp_sort_item *items = malloc(4 * n * sizeof *items);
    if (items == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate sweep scratch", count);
    tp_sort_item *acq = items, *rel = items + n, *spare = items + 2 * n;
    for (size_t i = 0, k = 0; i < count; i++) {
        if (tensors[i].size == 0)
            continue;
        acq[k] = (tp_sort_item){ tensors[i].first_use, i };
        rel[k] = (tp_sort_item){ tensors[i].last_use, i };
        k++;
    }
    const tp_sort_item *acquire = tp_sort_items(acq, spare, n);
    const tp_sort_item *release = tp_sort_items(rel, spare + n, n);

    /* Lifetimes are inclusive: a tensor released at node t is still live when another is
     * acquired at t, so at equal nodes every acquisition is counted first. */
    size_t live = 0, best = 0, r = 0;
    for (size_t a = 0; a < n; a++) {
        while (release[r].key < acquire[a].key)
            live -= tensors[release[r++].val].size;
        const size_t size = tensors[acquire[a].val].size;
        if (size > SIZE_MAX - live) {
            st = tp_fail(TP_ERR_OVERFLOW,
                         "tensor %zu: live bytes at node %zu exceed size_t (%zu + %zu)",
                         acquire[a].val, acquire[a].key, live, size);
            free(items);
            return st;
        }
        live += size;
        if (live > best)
            best = live;
    }
    free(items);
    *peak = best;
    return TP_OK;
}
