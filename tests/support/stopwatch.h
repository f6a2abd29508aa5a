/* A stopwatch for the tests that bound how long a call runs past its deadline.
 *
 * tpt_stopwatch_busy gives the smaller of the wall time and the process's CPU time since the
 * stopwatch started. A call that keeps working past its deadline raises both. A loaded machine
 * (other processes, CI's parallel tests) raises only the wall time: the call waits for a core
 * without working. The call's own threads raise only the CPU time. So the smaller of the two is
 * what the call spent working, bounded by each, and a bound on it fails on an overrun but not
 * on a busy machine. */
#ifndef TPT_STOPWATCH_H
#define TPT_STOPWATCH_H

#include <time.h>

typedef struct tpt_stopwatch {
    double wall, cpu;
} tpt_stopwatch;

static inline double tpt_clock_read(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline tpt_stopwatch tpt_stopwatch_start(void)
{
    tpt_stopwatch s = { tpt_clock_read(CLOCK_MONOTONIC), tpt_clock_read(CLOCK_PROCESS_CPUTIME_ID) };
    return s;
}

static inline double tpt_stopwatch_busy(const tpt_stopwatch *s)
{
    const double wall = tpt_clock_read(CLOCK_MONOTONIC) - s->wall;
    const double cpu = tpt_clock_read(CLOCK_PROCESS_CPUTIME_ID) - s->cpu;
    return wall < cpu ? wall : cpu;
}

#endif
