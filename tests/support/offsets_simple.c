#include "planner/planner_internal.h"

#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct order_key {
    size_t size;
    size_t index;
} order_key;

typedef struct block {
    size_t start, end; /* [start, end) */
} block;

/* Decreasing size; the index tie-break makes qsort stable, so the plan depends on the input
 * array alone. */
static int by_size_desc(const void *pa, const void *pb)
{
    const order_key *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static int by_start(const void *pa, const void *pb)
{
    const block *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

static int lifetimes_intersect(const tp_tensor_lifetime *a, const tp_tensor_lifetime *b)
{
    return a->first_use <= b->last_use && b->first_use <= a->last_use;
}

tp_status tp_plan_offsets_simple(const tp_tensor_lifetime *tensors, size_t count,
                                 size_t *offsets, size_t *arena_size)
{
    tp_status st = tp_check_plan_args(tensors, count, offsets, arena_size);
    if (st != TP_OK)
        return st;
    if (count == 0) {
        *arena_size = 0;
        return TP_OK;
    }
    if (count > SIZE_MAX / sizeof(order_key))
        return tp_fail(TP_ERR_NOMEM, "%zu tensors: scratch size overflows size_t", count);

    order_key *order = malloc(count * sizeof *order);
    size_t *placed = malloc(count * sizeof *placed);
    block *blocks = malloc(count * sizeof *blocks);
    if (order == NULL || placed == NULL || blocks == NULL) {
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", count);
        goto out;
    }

    size_t n_order = 0;
    for (size_t i = 0; i < count; i++) {
        offsets[i] = 0;
        if (tensors[i].size > 0)
            order[n_order++] = (order_key){ tensors[i].size, i };
    }
    qsort(order, n_order, sizeof *order, by_size_desc);

    size_t arena = 0, n_placed = 0;
    for (size_t k = 0; k < n_order; k++) {
        const size_t t = order[k].index;
        const size_t size = order[k].size;

        size_t n_blocks = 0;
        for (size_t p = 0; p < n_placed; p++) {
            const size_t q = placed[p];
            if (lifetimes_intersect(&tensors[t], &tensors[q]))
                blocks[n_blocks++] = (block){ offsets[q], offsets[q] + tensors[q].size };
        }

        size_t offset = 0;
        if (n_blocks > 0) {
            qsort(blocks, n_blocks, sizeof *blocks, by_start);
            /* Coalesce in place: blocks that overlap or touch leave no usable gap. */
            size_t m = 0;
            for (size_t b = 1; b < n_blocks; b++) {
                if (blocks[b].start <= blocks[m].end) {
                    if (blocks[b].end > blocks[m].end)
                        blocks[m].end = blocks[b].end;
                } else {
                    blocks[++m] = blocks[b];
                }
            }
            n_blocks = m + 1;

            /* Best fit. The leading gap is examined first and later gaps must be strictly
             * smaller to replace it, which gives both tie rules at once. */
            int found = 0;
            size_t best_gap = 0;
            if (size <= blocks[0].start) {
                found = 1;
                best_gap = blocks[0].start;
                offset = 0;
            }
            for (size_t b = 0; b + 1 < n_blocks; b++) {
                const size_t gap = blocks[b + 1].start - blocks[b].end;
                if (size <= gap && (!found || gap < best_gap)) {
                    found = 1;
                    best_gap = gap;
                    offset = blocks[b].end;
                }
            }
            if (!found) {
                offset = blocks[n_blocks - 1].end;
                if (size > SIZE_MAX - offset) {
                    st = tp_fail(TP_ERR_OVERFLOW,
                                 "tensor %zu: offset %zu + size %zu overflows size_t", t,
                                 offset, size);
                    goto out;
                }
            }
        }
        offsets[t] = offset;
        placed[n_placed++] = t;
        if (offset + size > arena)
            arena = offset + size;
    }
    *arena_size = arena;
    st = TP_OK;

out:
    free(order);
    free(placed);
    free(blocks);
    return st;
}
