/* The backend's parallel for (backend/parallel.h): a pool of sleeping workers.
 *
 * Workers are started on first use and then wait on a condition variable between calls;
 * nothing ever spins, so a worker that shares a core with the caller (a process pinned to
 * one core, or a machine busy with other work) costs a context switch, not a time slice.
 * The range is handed out in chunks through an atomic counter and the caller takes chunks
 * too, so a worker that is not scheduled soon simply gets fewer chunks, and once every chunk
 * is taken the caller waits only for the workers that joined. No more threads run than the
 * CPUs the process may use (its affinity mask), so a process pinned to one core runs every
 * call on the caller alone. Results never depend on how
 * [0, n) is split, and a call made while another one holds the pool (another thread of the
 * program) runs on its caller alone. */
#include "backend/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/cpu_count.h"
#include "tensorplan/kernels.h"

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    int n_started;  /* workers 1..n_started exist */
    uint64_t gen;   /* bumped by every call that wakes workers */
    int want;       /* workers 1..want may take part in the current call */
    int open;       /* the call still hands out chunks: a worker that wakes may join it */
    int entered;    /* workers that joined the call and have not finished */
    tp_range_fn fn; /* the current call */
    void *ctx;
    size_t n, chunk;
    atomic_size_t next;
} pool;

static pool g_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                      PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, 0};
static atomic_flag g_in_use = ATOMIC_FLAG_INIT;

static void take_chunks(pool *p, int worker)
{
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, p->chunk);
        if (i >= p->n)
            return;
        size_t end = p->n - i < p->chunk ? p->n : i + p->chunk;
        p->fn(p->ctx, i, end, worker);
    }
}

static void *worker_main(void *arg)
{
    pool *p = &g_pool;
    int id = (int)(intptr_t)arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        seen = p->gen;
        if (id > p->want || !p->open) /* a call that ended before this worker woke */
            continue;
        p->entered++;
        pthread_mutex_unlock(&p->mu);
        take_chunks(p, id);
        pthread_mutex_lock(&p->mu);
        if (--p->entered == 0 && !p->open)
            pthread_cond_signal(&p->done);
    }
    return NULL;
}

/* Starts workers up to want (called with the pool held by this caller); returns how many
 * exist, which is fewer when the system refuses a thread. */
static int ensure_workers(pool *p, int want)
{
    pthread_mutex_lock(&p->mu);
    while (p->n_started < want) {
        pthread_t tid;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0)
            break;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&tid, &attr, worker_main, (void *)(intptr_t)(p->n_started + 1));
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        p->n_started++;
    }
    int have = p->n_started < want ? p->n_started : want;
    pthread_mutex_unlock(&p->mu);
    return have;
}

void tp_parallel_for(size_t n, int n_threads, tp_range_fn fn, void *ctx)
{
    if (n == 0)
        return;
    size_t t = n_threads > 0 ? (size_t)n_threads : 1;
    if (t > n)
        t = n;
    if (t > TP_PARALLEL_MAX_THREADS)
        t = TP_PARALLEL_MAX_THREADS;
    const size_t cpus = t > 1 ? tp_cpu_count_usable() : 1;
    if (t > cpus)
        t = cpus;
    if (t <= 1 || atomic_flag_test_and_set(&g_in_use)) {
        fn(ctx, 0, n, 0);
        return;
    }
    pool *p = &g_pool;
    int helpers = ensure_workers(p, (int)t - 1);
    /* about four chunks per thread: small enough to even out a late worker */
    size_t chunk = n / (t * 4);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk ? chunk : 1;
    atomic_store(&p->next, 0);
    p->want = helpers;
    p->open = 1;
    p->entered = 0;
    p->gen++;
    pthread_mutex_unlock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    take_chunks(p, 0);
    /* every chunk is taken: close the call, then wait only for the workers that joined it
     * (one still asleep, as on a shared core, is not waited for) */
    pthread_mutex_lock(&p->mu);
    p->open = 0;
    while (p->entered > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    atomic_flag_clear(&g_in_use);
}

int tp_parallel_threads(int n_threads, double work)
{
    int t = n_threads > 0 ? n_threads : tp_kernels_threads();
    if (t > TP_PARALLEL_MAX_THREADS)
        t = TP_PARALLEL_MAX_THREADS;
    return t < 1 || work < 1048576.0 ? 1 : t;
}
