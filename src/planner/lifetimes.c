#include "planner/planner_internal.h"

#include "common/error.h"
#include "common/sort.h"

#include <stdlib.h>

tp_status tp_check_lifetimes(const tp_tensor_lifetime *tensors, size_t count)
{
    if (tensors == NULL && count > 0)
        return tp_fail(TP_ERR_INVALID, "tensors is NULL but count is %zu", count);
    for (size_t i = 0; i < count; i++) {
        if (tensors[i].first_use > tensors[i].last_use)
            return tp_fail(TP_ERR_INVALID, "tensor %zu: first_use %zu > last_use %zu", i,
                           tensors[i].first_use, tensors[i].last_use);
    }
    return TP_OK;
}

tp_status tp_check_plan_args(const tp_tensor_lifetime *tensors, size_t count,
                             const size_t *offsets, const size_t *arena_size)
{
    if (arena_size == NULL)
        return tp_fail(TP_ERR_INVALID, "arena_size is NULL");
    if (offsets == NULL && count > 0)
        return tp_fail(TP_ERR_INVALID, "offsets is NULL but count is %zu", count);
    return tp_check_lifetimes(tensors, count);
}

/* Sorted by the first uses, each tensor's lo is the number of distinct first uses before its
 * own; sorted by the last uses, its hi is the number of distinct first uses at or before its
 * last use, less one (its own first use is one of them). Two stable radix sorts and two walks;
 * the first walk is over before the second sort, so both sorts share one pair of arrays (the
 * last uses wait in hi meanwhile). */
tp_status tp_lifetime_ranks(const tp_tensor_lifetime *tensors, const size_t *order, size_t n,
                            size_t *lo, size_t *hi, size_t *n_ranks)
{
    *n_ranks = 0;
    if (n == 0)
        return TP_OK;
    tp_sort_item *items = malloc(n * sizeof *items), *spare = malloc(n * sizeof *spare);
    size_t *times = malloc(n * sizeof *times);
    if (items == NULL || spare == NULL || times == NULL) {
        free(items);
        free(spare);
        free(times);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", n);
    }
    for (size_t k = 0; k < n; k++) {
        const tp_tensor_lifetime *t = &tensors[order[k]];
        items[k] = (tp_sort_item){ t->first_use, k };
        hi[k] = t->last_use; /* kept in hi until the second sort takes it */
    }
    const tp_sort_item *by_first = tp_sort_items(items, spare, n);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        if (distinct == 0 || times[distinct - 1] != by_first[i].key)
            times[distinct++] = by_first[i].key;
        lo[by_first[i].val] = distinct - 1;
    }
    for (size_t k = 0; k < n; k++)
        items[k] = (tp_sort_item){ hi[k], k };
    const tp_sort_item *by_last = tp_sort_items(items, spare, n);
    for (size_t i = 0, at = 0; i < n; i++) {
        while (at < distinct && times[at] <= by_last[i].key)
            at++;
        hi[by_last[i].val] = at - 1;
    }
    free(items);
    free(spare);
    free(times);
    *n_ranks = distinct;
    return TP_OK;
}
