/* Internal: the one array-growth helper of the library.
 *
 * A growable array is a pointer, a capacity and a count kept by the caller. tp_grow makes
 * room for `need` elements: the capacity at least doubles (from 8), so n appends cost O(n)
 * copies in all, and every product is checked so a huge request fails instead of wrapping. */
#ifndef TP_COMMON_GROW_H
#define TP_COMMON_GROW_H

#include <stddef.h>

#include "tensorplan/status.h"

/* Ensures *array (elements of elem bytes, capacity *cap) holds at least need elements.
 * TP_OK when it already does or after a realloc; TP_ERR_OVERFLOW when need * elem does not fit
 * in size_t, TP_ERR_NOMEM when realloc fails, each with a message; on failure *array and *cap
 * are unchanged (the old block stays valid and owned by the caller). */
tp_status tp_grow(void **array, size_t *cap, size_t need, size_t elem);

/* tp_grow for a typed pointer: TP_GROW(&p, &cap, n + 1) with p of any object pointer type. */
#define TP_GROW(parray, pcap, need)                                                          \
    tp_grow_typed((void *)(parray), (pcap), (need), sizeof **(parray))

/* Helper of TP_GROW: parray is the address of an object pointer. */
tp_status tp_grow_typed(void *parray, size_t *cap, size_t need, size_t elem);

#endif
