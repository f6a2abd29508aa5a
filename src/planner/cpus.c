/* The processors the planner's threads can run on: those online and, on Linux, in the
 * process's affinity mask (a process pinned to one core by taskset gains nothing from a
 * second thread, and loses much to it: each waits for the other to be scheduled). */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "planner/planner_internal.h"

#include "common/cpu_count.h"

#if defined(__linux__)
#include <sched.h>
#endif

unsigned tp_planner_cpus(void)
{
    unsigned n = tp_cpu_count();
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int in_mask = CPU_COUNT(&set);
        if (in_mask >= 1 && (unsigned)in_mask < n)
            n = (unsigned)in_mask;
    }
#endif
    return n;
}
