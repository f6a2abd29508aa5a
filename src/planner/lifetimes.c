#include "planner/planner_internal.h"

#include "common/error.h"

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
