#include "planner/planner_internal.h"

tp_status tp_plan_offsets(const tp_tensor_lifetime *tensors, size_t count,
                          size_t *offsets, size_t *arena_size)
{
    return tp_plan_offsets_fast(tensors, count, offsets, arena_size);
}
