/* The reference offset planner of the tests and benchmarks (tests/support/offsets_simple.c). */
#ifndef TP_TESTS_OFFSETS_SIMPLE_H
#define TP_TESTS_OFFSETS_SIMPLE_H

#include "tensorplan/planner.h"

/* The straightforward greedy of docs/planner.md ("Semantics"), O(n^2 log n). It stays as the
 * reference that any faster offset planner must match offset for offset, so keep it simple
 * rather than fast. Same contract as tp_plan_offsets. */
tp_status tp_plan_offsets_simple(const tp_tensor_lifetime *tensors, size_t count,
                                 size_t *offsets, size_t *arena_size);

#endif
