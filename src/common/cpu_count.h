/* Internal: the one processor count of the library. */
#ifndef TP_COMMON_CPU_COUNT_H
#define TP_COMMON_CPU_COUNT_H

/* Processors online, at least 1. Asked of the system once per process (sysconf reads /sys
 * on every call); callers cap it to their own maximum. */
unsigned tp_cpu_count(void);

/* The processors this process may run on: those online and, on Linux, in its affinity mask
 * (1 under taskset -c 0), at least 1. Read on every call, since the mask can change; the
 * thread pools of the planner and the kernels cap their threads to it, because threads
 * beyond it could only take turns on the same cores. */
unsigned tp_cpu_count_usable(void);

#endif
