/* Test support: the order-driven greedy pass of planner.md section 2 written out plainly (O(n^2
 * log n), without any code of the planner), the oracle for tp_greedy_place and the passes
 * behind it. Include after <cmocka.h>. */
#ifndef TP_TESTS_PLACE_REFERENCE_H
#define TP_TESTS_PLACE_REFERENCE_H

#include <stddef.h>
#include <stdlib.h>

#include "planner/planner_internal.h"
#include "tensorplan/planner.h"

typedef struct ref_block {
    size_t start, end;
} ref_block;

static inline int ref_by_start(const void *pa, const void *pb)
{
    const ref_block *x = pa, *y = pb;
    return (x->start > y->start) - (x->start < y->start);
}

static inline size_t ref_round_up(size_t x, size_t align)
{
    return (x + align - 1) / align * align;
}

/* The order-driven pass written out plainly: for each tensor in the given order, the blocks of
 * the placed tensors whose lifetimes intersect its own, sorted and coalesced; a gap fits when
 * its start rounded up to the alignment leaves room; best fit takes the smallest such gap
 * (measured before rounding), the lowest on a tie; first fit the lowest; nothing fits: on top
 * of the last block, rounded up. */
static inline size_t tpt_reference_place(const tp_tensor_lifetime *t, size_t n, const size_t *order,
                                         size_t m, size_t align, tp_gap_rule rule, size_t *off)
{
    ref_block *blocks = malloc((n + 1) * sizeof *blocks);
    size_t *placed = malloc((n + 1) * sizeof *placed);
    size_t arena = 0;
    for (size_t i = 0; i < n; i++)
        off[i] = 0;
    for (size_t k = 0; k < m; k++) {
        const size_t id = order[k], size = t[id].size;
        size_t nb = 0;
        for (size_t p = 0; p < k; p++) {
            const size_t q = placed[p];
            if (t[q].first_use <= t[id].last_use && t[id].first_use <= t[q].last_use)
                blocks[nb++] = (ref_block){ off[q], off[q] + t[q].size };
        }
        size_t at = 0;
        if (nb > 0) {
            qsort(blocks, nb, sizeof *blocks, ref_by_start);
            size_t c = 0;
            for (size_t i = 1; i < nb; i++) {
                if (blocks[i].start <= blocks[c].end) {
                    if (blocks[i].end > blocks[c].end)
                        blocks[c].end = blocks[i].end;
                } else {
                    blocks[++c] = blocks[i];
                }
            }
            nb = c + 1;
            int found = 0;
            size_t best = 0;
            for (size_t g = 0; g < nb; g++) {
                const size_t gs = g == 0 ? 0 : blocks[g - 1].end, ge = blocks[g].start;
                const size_t x = ref_round_up(gs, align);
                if (x > ge || ge - x < size)
                    continue;
                if (!found || (rule == TP_GAP_BEST_FIT && ge - gs < best)) {
                    found = 1;
                    best = ge - gs;
                    at = x;
                    if (rule == TP_GAP_FIRST_FIT)
                        break;
                }
            }
            if (!found)
                at = ref_round_up(blocks[nb - 1].end, align);
        }
        off[id] = at;
        placed[k] = id;
        if (at + size > arena)
            arena = at + size;
    }
    free(blocks);
    free(placed);
    return arena;
}

#endif
