/* Internal: switches that turn one correct rule of the allocator or the scheduler off, so
 * that a regression test can show the rule matters (docs/allocator.md, "Test switches").
 * They are not part of the public options: only the tests include this header. All zero
 * (the state of a new allocator) is the correct rules. */
#ifndef TP_ALLOC_DEBUG_H
#define TP_ALLOC_DEBUG_H

#include "tensorplan/alloc.h"

typedef struct tp_alloc_test_switches {
    int kahn_liveness;     /* liveness in a Kahn order instead of the build order       */
    int unpinned_inputs;   /* inputs die after their last consumer                      */
    int inputs_in_walk;    /* inputs get their buffers when the walk reaches them       */
    int no_alias_deadline; /* an alias does not extend its buffer's deadline            */
    int no_host_copy_sync; /* the scheduler copies to the host without synchronising    */
} tp_alloc_test_switches;

/* The switches every later tp_alloc_graph and tp_execute on alloc use (NULL: all off). */
void tp_alloc_set_test_switches(tp_allocator *alloc, const tp_alloc_test_switches *sw);
/* The allocator's switches (for the scheduler). */
const tp_alloc_test_switches *tp_alloc_test_switches_of(const tp_allocator *alloc);

#endif
