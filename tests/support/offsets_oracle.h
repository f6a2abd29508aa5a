/* Test support: an independent soundness oracle for offset plans, by pairwise comparison
 * (O(n^2), written without any code of the planner). Include after <cmocka.h>. */
#ifndef TP_TESTS_OFFSETS_ORACLE_H
#define TP_TESTS_OFFSETS_ORACLE_H

#include <stddef.h>

#include "tensorplan/planner.h"

/* No two tensors live at a common node share a byte, every offset is a multiple of align,
 * zero-size tensors sit at 0, and arena is the true top of the plan. */
static inline void tpt_assert_sound_offsets(const tp_tensor_lifetime *t, size_t n,
                                            const size_t *off, size_t arena, size_t align)
{
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].size == 0) {
            assert_int_equal(off[i], 0);
            continue;
        }
        assert_int_equal(off[i] % align, 0);
        if (off[i] + t[i].size > top)
            top = off[i] + t[i].size;
        for (size_t j = i + 1; j < n; j++) {
            if (t[j].size == 0)
                continue;
            int live = t[i].first_use <= t[j].last_use && t[j].first_use <= t[i].last_use;
            int share = off[i] < off[j] + t[j].size && off[j] < off[i] + t[i].size;
            assert_false(live && share);
        }
    }
    assert_int_equal(top, arena);
}

#endif
