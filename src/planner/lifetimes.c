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
