/* Internal to the planner: pieces shared between the offset planners and the sweep. */
#ifndef TP_PLANNER_INTERNAL_H
#define TP_PLANNER_INTERNAL_H

#include "tensorplan/planner.h"

/* Refuses first_use > last_use, naming the first offending tensor; also NULL with count > 0. */
tp_status tp_check_lifetimes(const tp_tensor_lifetime *tensors, size_t count);

/* The refusals every offset planner shares: NULL arena_size, NULL offsets with count > 0,
 * then tp_check_lifetimes. */
tp_status tp_check_plan_args(const tp_tensor_lifetime *tensors, size_t count,
                             const size_t *offsets, const size_t *arena_size);

/* Time as it matters to conflicts among the tensors order[0..n): two inclusive lifetimes
 * intersect exactly when the later of their first uses lies inside both, so only the distinct
 * first uses count. lo[k] and hi[k] receive the ranks among them of the first and of the last
 * one inside tensor order[k]'s lifetime; two lifetimes intersect exactly when their rank
 * ranges do. *n_ranks receives the number of distinct first uses. */
tp_status tp_lifetime_ranks(const tp_tensor_lifetime *tensors, const size_t *order, size_t n,
                            size_t *lo, size_t *hi, size_t *n_ranks);

#endif
