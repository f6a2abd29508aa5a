#include "planner/planner_internal.h"

#include "common/error.h"

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

static int by_value(const void *pa, const void *pb)
{
    const size_t *a = pa, *b = pb;
    return (*a > *b) - (*a < *b);
}

/* The number of values in sorted[0..n) that are <= x. */
static size_t count_at_most(const size_t *sorted, size_t n, size_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

tp_status tp_lifetime_ranks(const tp_tensor_lifetime *tensors, const size_t *order, size_t n,
                            size_t *lo, size_t *hi, size_t *n_ranks)
{
    *n_ranks = 0;
    if (n == 0)
        return TP_OK;
    size_t *times = malloc(n * sizeof *times);
    if (times == NULL)
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", n);
    for (size_t k = 0; k < n; k++)
        times[k] = tensors[order[k]].first_use;
    qsort(times, n, sizeof *times, by_value);
    size_t distinct = 0;
    for (size_t k = 0; k < n; k++)
        if (distinct == 0 || times[distinct - 1] != times[k])
            times[distinct++] = times[k];
    /* The searches run by tensor index, then are gathered in `order`: files list tensors
     * about in time order, so consecutive searches touch neighbouring (cached) parts of the
     * sorted times instead of jumping across all of them in size order. */
    size_t ids = 0;
    for (size_t k = 0; k < n; k++)
        if (order[k] >= ids)
            ids = order[k] + 1;
    size_t *rank = malloc(ids * sizeof *rank);
    if (rank == NULL) {
        free(times);
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", ids);
    }
    for (size_t i = 0; i < ids; i++)
        rank[i] = count_at_most(times, distinct, tensors[i].first_use) - 1;
    for (size_t k = 0; k < n; k++)
        lo[k] = rank[order[k]];
    for (size_t i = 0; i < ids; i++)
        rank[i] = count_at_most(times, distinct, tensors[i].last_use) - 1;
    for (size_t k = 0; k < n; k++)
        hi[k] = rank[order[k]];
    free(rank);
    free(times);
    *n_ranks = distinct;
    return TP_OK;
}
