/* Two shortcuts of tp_greedy_place that keep its offsets (docs/planner.md, "Semantics": how
 * the greedy runs): inputs in which every tensor is live when every other one is (a
 * clique), and the common granule of the sizes, by which the address-ordered scan can count
 * addresses. */
#include "planner/planner_internal.h"

#include "common/error.h"

#include <stdint.h>

int tp_is_clique(const tp_tensor_lifetime *tensors, const size_t *order, size_t n_order)
{
    if (n_order == 0)
        return 0;
    size_t latest_first = 0, earliest_last = SIZE_MAX;
    for (size_t k = 0; k < n_order; k++) {
        const tp_tensor_lifetime *t = &tensors[order[k]];
        latest_first = t->first_use > latest_first ? t->first_use : latest_first;
        earliest_last = t->last_use < earliest_last ? t->last_use : earliest_last;
    }
    /* inclusive lifetimes all contain [latest_first, earliest_last] when it is not empty */
    return latest_first <= earliest_last;
}

/* In a clique every placed tensor conflicts with the next one, and the placed tensors cover
 * [0, arena) but for the alignment's round-ups, each shorter than the alignment and so too
 * short for any tensor: no gap ever fits, and each tensor goes on top of the last, at the
 * arena rounded up. Best and first fit agree. */
tp_status tp_clique_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                          size_t n_order, size_t alignment, const tp_greedy_ticker *ticker,
                          size_t *offsets, size_t *arena_size)
{
    double last_tick = ticker != NULL ? tp_clock_seconds() : 0;
    for (size_t i = 0; i < count; i++)
        offsets[i] = 0;
    *arena_size = 0;
    const size_t align = alignment == 0 ? 1 : alignment;
    size_t arena = 0;
    for (size_t k = 0; k < n_order; k++) {
        const size_t id = order[k], size = tensors[id].size;
        if ((k & 65535u) == 65535u && tp_ticker_poll(ticker, k, n_order, &last_tick)) {
            for (size_t i = 0; i < count; i++)
                offsets[i] = 0;
            return tp_greedy_timeout(k, n_order);
        }
        int overflow = 0;
        const size_t offset = k == 0 ? 0 : tp_round_up_flag(arena, align, &overflow);
        if (overflow || size > SIZE_MAX - offset) {
            for (size_t i = 0; i < count; i++)
                offsets[i] = 0;
            return tp_fail(TP_ERR_OVERFLOW, "tensor %zu: offset %zu + size %zu overflows size_t",
                           id, offset, size);
        }
        offsets[id] = offset;
        arena = offset + size;
    }
    *arena_size = arena;
    return TP_OK;
}

tp_status tp_greedy_timeout(size_t placed, size_t to_place)
{
    return tp_fail(TP_ERR_TIMEOUT, "time limit reached with %zu of %zu tensors placed", placed,
                   to_place);
}

static size_t gcd_size(size_t a, size_t b)
{
    while (b != 0) {
        const size_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Every offset the greedy gives is 0, the end of a placed block or such a value rounded up to
 * the alignment. If every size is a multiple of g and the alignment divides g, every offset
 * is a multiple of g; if g and the alignment share a factor h, every offset is a multiple of
 * h. Dividing sizes, alignment and addresses by it changes no comparison of the rule. */
size_t tp_size_granule(const tp_tensor_lifetime *tensors, const size_t *order, size_t n_order,
                       size_t alignment, size_t *scaled_alignment)
{
    const size_t align = alignment == 0 ? 1 : alignment;
    size_t g = 0;
    for (size_t k = 0; k < n_order && g != 1; k++)
        g = gcd_size(g, tensors[order[k]].size);
    if (g == 0)
        g = 1;
    if (g % align == 0) {
        *scaled_alignment = 1;
        return g;
    }
    const size_t h = gcd_size(g, align);
    *scaled_alignment = align / h;
    return h;
}
