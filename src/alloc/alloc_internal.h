/* Internal: what the graph cache needs from the allocator to keep several plans. */
#ifndef TP_ALLOC_INTERNAL_H
#define TP_ALLOC_INTERNAL_H

#include "tensorplan/alloc.h"

typedef struct tp_plan tp_plan;

/* Takes the current plan out of the allocator: its buffers and staging buffers go back to
 * the free lists, its mapping is kept. NULL when there is no plan. */
tp_plan *tp_alloc_detach_plan(tp_allocator *alloc);
/* Makes a detached plan current again, destroying the current plan (if any) first. Takes
 * its buffers back off the free lists without allocating. On failure the plan is still the
 * caller's and the allocator holds none. */
tp_status tp_alloc_attach_plan(tp_allocator *alloc, tp_plan *plan);
/* Destroys a detached plan (its buffers were already released). */
void tp_plan_destroy(tp_plan *plan);

#endif
