/* Internal: the one processor count of the library. */
#ifndef TP_COMMON_CPU_COUNT_H
#define TP_COMMON_CPU_COUNT_H

/* Processors online, at least 1. Asked of the system once per process (sysconf reads /sys
 * on every call); callers cap it to their own maximum. */
unsigned tp_cpu_count(void);

#endif
