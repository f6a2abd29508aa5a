/* _GNU_SOURCE for sched_getaffinity and CPU_COUNT, before any system header. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "common/cpu_count.h"

#if defined(__linux__)
#include <sched.h>
#endif

#include <pthread.h>
#include <unistd.h>

static unsigned g_online = 1;
static pthread_once_t g_online_once = PTHREAD_ONCE_INIT;

static void probe_online(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    g_online = n < 1 ? 1u : n > 4096 ? 4096u : (unsigned)n;
}

unsigned tp_cpu_count(void)
{
    pthread_once(&g_online_once, probe_online);
    return g_online;
}

unsigned tp_cpu_count_usable(void)
{
    unsigned n = tp_cpu_count();
#if defined(__linux__) && defined(CPU_COUNT)
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
