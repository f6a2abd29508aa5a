/* The processors the planner's threads can run on (common/cpu_count.h): a process pinned to
 * one core by taskset gains nothing from a second thread, and loses much to it, each waiting
 * for the other to be scheduled. */
#include "planner/planner_internal.h"

#include "common/cpu_count.h"

unsigned tp_planner_cpus(void)
{
    return tp_cpu_count_usable();
}
