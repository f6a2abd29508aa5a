/* Internal: the one sort of large key arrays in the library.
 *
 * The planner sorts millions of (key, value) pairs per plan (orders, lifetime ranks, the
 * sweep of peak live bytes); qsort's comparison calls made those sorts a third of a plan of
 * short lifetimes. tp_sort_items is a least-significant-digit radix sort over the bytes of
 * the key: stable, O(n) per byte, and bytes in which all keys agree cost one counting pass. */
#ifndef TP_COMMON_SORT_H
#define TP_COMMON_SORT_H

#include <stddef.h>

typedef struct tp_sort_item {
    size_t key, val;
} tp_sort_item;

/* Sorts v[0..n) by key, stable (items with equal keys keep their order). scratch holds n
 * items; the result is in v or in scratch, whichever is returned. Never fails. */
tp_sort_item *tp_sort_items(tp_sort_item *v, tp_sort_item *scratch, size_t n);

#endif
