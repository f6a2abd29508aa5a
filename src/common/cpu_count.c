#include "common/cpu_count.h"

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
