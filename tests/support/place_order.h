/* The order the greedy places tensors in, for tests that run a placement pass directly:
 * the tensors of non-zero size by decreasing size, stable (tp_plan_offsets's order), or
 * shuffled by the test's own random source. */
#ifndef TP_TESTS_PLACE_ORDER_H
#define TP_TESTS_PLACE_ORDER_H

#include <stdlib.h>

#include "tensorplan/planner.h"

static const tp_tensor_lifetime *tpt_order_base;

static int tpt_by_size_desc(const void *pa, const void *pb)
{
    const size_t i = *(const size_t *)pa, j = *(const size_t *)pb;
    if (tpt_order_base[i].size != tpt_order_base[j].size)
        return tpt_order_base[i].size > tpt_order_base[j].size ? -1 : 1;
    return (i > j) - (i < j);
}

/* Fills order[] and returns how many; below(k) draws from [0, k) and is used only when
 * shuffled. */
static inline size_t tpt_make_order(const tp_tensor_lifetime *t, size_t n, int shuffled,
                                    size_t (*below)(size_t), size_t *order)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i].size > 0)
            order[m++] = i;
    if (shuffled) {
        for (size_t i = m; i > 1; i--) {
            const size_t j = below(i), tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
    } else {
        tpt_order_base = t;
        qsort(order, m, sizeof *order, tpt_by_size_desc);
    }
    return m;
}

#endif /* TP_TESTS_PLACE_ORDER_H */
