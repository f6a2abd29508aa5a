/* The backend's parallel for (backend/parallel.h). */
#include "backend/parallel.h"

#include <pthread.h>

#include "tensorplan/kernels.h"

typedef struct range_job {
    tp_range_fn fn;
    void *ctx;
    size_t begin, end;
    int worker;
} range_job;

static void *range_thread(void *arg)
{
    range_job *job = arg;
    job->fn(job->ctx, job->begin, job->end, job->worker);
    return NULL;
}

/* Threads are created per call: kernel calls are few (hundreds per token) and large, so
 * the creation cost is noise next to the work, and nothing stays running between calls.
 * Results never depend on how [0, n) is split, so when a thread cannot be created its
 * chunk simply runs on the calling thread. */
void tp_parallel_for(size_t n, int n_threads, tp_range_fn fn, void *ctx)
{
    if (n == 0)
        return;
    size_t t = (size_t)n_threads;
    if (t > n)
        t = n;
    if (t > TP_PARALLEL_MAX_THREADS)
        t = TP_PARALLEL_MAX_THREADS;
    if (t <= 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    range_job jobs[TP_PARALLEL_MAX_THREADS];
    pthread_t tids[TP_PARALLEL_MAX_THREADS];
    int started[TP_PARALLEL_MAX_THREADS];
    for (size_t k = 0; k < t; k++) {
        jobs[k].fn = fn;
        jobs[k].ctx = ctx;
        jobs[k].begin = n * k / t;
        jobs[k].end = n * (k + 1) / t;
        jobs[k].worker = (int)k;
        started[k] = 0;
    }
    for (size_t k = 1; k < t; k++)
        started[k] = pthread_create(&tids[k], NULL, range_thread, &jobs[k]) == 0;
    fn(ctx, jobs[0].begin, jobs[0].end, 0);
    for (size_t k = 1; k < t; k++) {
        if (started[k])
            pthread_join(tids[k], NULL);
        else
            fn(ctx, jobs[k].begin, jobs[k].end, jobs[k].worker);
    }
}

int tp_parallel_threads(int n_threads, double work)
{
    int t = n_threads > 0 ? n_threads : tp_kernels_threads();
    if (t > TP_PARALLEL_MAX_THREADS)
        t = TP_PARALLEL_MAX_THREADS;
    return t < 1 || work < 1048576.0 ? 1 : t;
}
