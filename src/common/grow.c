#include "common/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

tp_status tp_grow(void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return TP_OK;
    if (elem == 0)
        return tp_fail(TP_ERR_INVALID, "tp_grow: element size 0");
    size_t max_elems = SIZE_MAX / elem;
    if (need > max_elems)
        return tp_fail(TP_ERR_OVERFLOW, "array of %zu elements of %zu bytes overflows size_t",
                       need, elem);
    size_t next = *cap < 8 ? 8 : *cap;
    while (next < need)
        next = next > max_elems / 2 ? max_elems : next * 2;
    void *grown = realloc(*array, next * elem);
    if (!grown)
        return tp_fail(TP_ERR_NOMEM, "out of memory growing an array to %zu elements", next);
    *array = grown;
    *cap = next;
    return TP_OK;
}

tp_status tp_grow_typed(void *parray, size_t *cap, size_t need, size_t elem)
{
    /* parray is really a T ** for some object type T; object pointers share one
     * representation on every platform this builds on, and the copy keeps it strict-aliasing
     * clean. */
    void *p;
    memcpy(&p, parray, sizeof p);
    tp_status st = tp_grow(&p, cap, need, elem);
    memcpy(parray, &p, sizeof p);
    return st;
}
