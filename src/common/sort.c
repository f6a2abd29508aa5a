#include "common/sort.h"

#include <string.h>

#define DIGITS sizeof(size_t)

tp_sort_item *tp_sort_items(tp_sort_item *v, tp_sort_item *scratch, size_t n)
{
    /* one counting pass for every byte of the key */
    size_t count[DIGITS][256];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
        for (unsigned d = 0; d < DIGITS; d++)
            count[d][(v[i].key >> (8 * d)) & 0xff]++;
    tp_sort_item *from = v, *to = scratch;
    for (unsigned d = 0; d < DIGITS; d++) {
        size_t *c = count[d];
        if (n == 0 || c[(v[0].key >> (8 * d)) & 0xff] == n)
            continue; /* every key has the same byte here: the order stays */
        size_t at = 0;
        for (unsigned b = 0; b < 256; b++) {
            const size_t here = c[b];
            c[b] = at;
            at += here;
        }
        for (size_t i = 0; i < n; i++)
            to[c[(from[i].key >> (8 * d)) & 0xff]++] = from[i];
        tp_sort_item *swap = from;
        from = to;
        to = swap;
    }
    return from;
}
