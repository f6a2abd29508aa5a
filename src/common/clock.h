/* Internal: the one clock of the library and the command line. */
#ifndef TP_COMMON_CLOCK_H
#define TP_COMMON_CLOCK_H

/* CLOCK_MONOTONIC in seconds: for durations and deadlines, never for dates. */
double tp_clock_seconds(void);

#endif
