/* The backend's parallel for (backend/parallel.h): a pool of workers that spin briefly, then
 * sleep.
 *
 * One 32-bit word, `state`, carries a call: its generation (bumped by every call), whether it
 * still admits workers (CLOSED), whether the caller sleeps on it (WAITER) and how many
 * workers are inside it (ACTIVE). A worker joins a call by a compare-and-swap that adds one
 * to ACTIVE while the generation is the one it saw and CLOSED is clear, so a worker that wakes
 * late can never join a call that ended; it leaves by subtracting one. The range is handed
 * out in chunks through an atomic counter, long ones first and short ones last (guided), and
 * the caller takes chunks too, so a worker that is not scheduled soon simply gets fewer
 * chunks; once every chunk is taken the caller sets CLOSED and waits only for the workers
 * inside.
 *
 * Waiting, by a worker for the next call or by the caller for the workers inside, first
 * spins on the word (with the processor's pause hint; past PAUSE_NS yielding the processor
 * at every look, so that a thread that needs this core gets it) and then sleeps on it (a
 * futex on Linux, a condition variable elsewhere). The spin is bounded and adaptive: a worker's spin
 * doubles (up to SPIN_MAX_NS) when the next call came within it or soon after it ended, and
 * halves when it ended in vain, so a program that calls rarely stops spinning. Spinning
 * stops for QUIET_NS whenever it does not run alongside the thread it waits for: a spinner
 * that finds it was descheduled (a gap in its clock readings), or a call whose spinning
 * worker never took a chunk while the caller worked for a while (the two share a core). No
 * more threads run than the CPUs the process may use (its affinity mask), so a process pinned
 * to one core runs every call on the caller alone. Results never depend on how [0, n) is
 * split, and a call made while another one holds the pool (another thread of the program, or
 * a kernel called from inside a chunk) runs on its caller alone. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* syscall */
#endif
#include "backend/parallel.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "common/cpu_count.h"
#include "tensorplan/kernels.h"

#define ST_ACTIVE 0x7Fu /* workers inside the call (at most TP_PARALLEL_MAX_THREADS - 1) */
#define ST_CLOSED 0x80u /* every chunk is taken: nobody joins any more */
#define ST_WAITER 0x100u /* the caller sleeps until ACTIVE is 0 */
#define ST_GEN 0x200u    /* one generation */

#define SPIN_MAX_NS 200000  /* longest spin of a worker waiting for the next call */
#define SPIN_MIN_NS 2000    /* shortest spin that is not none */
#define PAUSE_NS 10000      /* spins longer than this yield the processor at every look */
#define CALLER_SPIN_NS 50000 /* longest spin of the caller waiting for the workers inside */
#define PREEMPT_NS 50000    /* a gap this long between two looks: the spinner was descheduled */
#define QUIET_NS 20000000   /* after a sign of a shared core, nobody spins for this long */
#define LONE_NS 30000       /* a caller alone this long beside a spinning worker: shared core */

typedef struct pool {
    _Atomic uint32_t state;
    int n_started; /* workers 1..n_started exist (under mu) */
    pthread_mutex_t mu;
    /* the current call: written by its caller before it publishes the generation, read by a
     * worker only once it has joined */
    tp_range_fn fn;
    void *ctx;
    size_t n, chunk, split; /* chunks are at least `chunk`, about the rest over `split` */
    int want;           /* workers 1..want take part */
    _Atomic int want_hint; /* want, for a worker's look before it joins */
    _Atomic int sleepers;  /* workers asleep on state, or about to be */
    _Atomic int spinners;  /* workers spinning for the next call */
    _Atomic int64_t quiet_until; /* monotonic ns before which nobody spins */
    _Alignas(64) atomic_size_t next;
} pool;

static pool g_pool = {0, 0, PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static atomic_flag g_in_use = ATOMIC_FLAG_INIT;
static int64_t g_caller_spin = CALLER_SPIN_NS; /* read and written by the pool's holder */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void quiet_for_a_while(pool *p, int64_t now)
{
    atomic_store_explicit(&p->quiet_until, now + QUIET_NS, memory_order_relaxed);
}

/* ---- sleeping on the state word: futex bitsets, bit 0 the caller, bit min(id, 31) worker id */

#define CALLER_BIT 1u

static uint32_t worker_bit(int id)
{
    return 1u << (id < 31 ? id : 31);
}

static uint32_t workers_mask(int want)
{
    return want >= 31 ? ~CALLER_BIT : ((1u << (want + 1)) - 2u);
}

#if defined(__linux__)
static void word_wait(_Atomic uint32_t *w, uint32_t seen, uint32_t bits)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_BITSET_PRIVATE, seen, NULL, NULL, bits);
}

static void word_wake(_Atomic uint32_t *w, uint32_t bits)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL, bits);
}
#else
static pthread_mutex_t g_park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_park_cv = PTHREAD_COND_INITIALIZER;

static void word_wait(_Atomic uint32_t *w, uint32_t seen, uint32_t bits)
{
    (void)bits;
    pthread_mutex_lock(&g_park_mu);
    if (atomic_load(w) == seen)
        pthread_cond_wait(&g_park_cv, &g_park_mu);
    pthread_mutex_unlock(&g_park_mu);
}

static void word_wake(_Atomic uint32_t *w, uint32_t bits)
{
    (void)w;
    (void)bits;
    pthread_mutex_lock(&g_park_mu);
    pthread_cond_broadcast(&g_park_cv);
    pthread_mutex_unlock(&g_park_mu);
}
#endif

/* ---- bounded spinning */

typedef struct spin {
    int64_t start, last, budget;
    unsigned looks;
} spin;

enum { SPIN_ON, SPIN_TIMEOUT, SPIN_PREEMPTED };

static void spin_start(spin *s, int64_t budget)
{
    s->start = s->last = now_ns();
    s->budget = budget;
    s->looks = 0;
}

/* One pause, and every 32 (about a microsecond) a look at the clock; past PAUSE_NS each
 * look also yields the processor, so that a thread waiting for this core runs at once (and
 * the gap that follows tells the spinner that it shares its core). */
static int spin_step(pool *p, spin *s)
{
    cpu_relax();
    if ((++s->looks & 31u) != 0)
        return SPIN_ON;
    int64_t t = now_ns();
    if (t - s->last > PREEMPT_NS) {
        quiet_for_a_while(p, t);
        return SPIN_PREEMPTED;
    }
    if (t - s->start >= s->budget)
        return SPIN_TIMEOUT;
    if (t - s->start > PAUSE_NS) {
        sched_yield();
        t = now_ns();
        if (t - s->last > PREEMPT_NS) {
            quiet_for_a_while(p, t);
            return SPIN_PREEMPTED;
        }
    }
    s->last = t;
    return SPIN_ON;
}

/* The spin allowed now: none in a quiet period. */
static int64_t spin_allowed(pool *p, int64_t budget)
{
    if (budget <= 0)
        return 0;
    return now_ns() < atomic_load_explicit(&p->quiet_until, memory_order_relaxed) ? 0 : budget;
}

/* ---- the work */

/* Takes chunks until none is left; returns the indices taken. Guided: each chunk is the
 * rest over `split` (twice the threads), but at least `chunk`, so the first chunks are long
 * and the last short, and the threads end close together at a few grabs per call. */
static size_t take_chunks(pool *p, int worker)
{
    size_t taken = 0;
    size_t i = atomic_load_explicit(&p->next, memory_order_relaxed);
    while (i < p->n) {
        size_t size = (p->n - i) / p->split;
        size = size < p->chunk ? p->chunk : size;
        size = size > p->n - i ? p->n - i : size;
        if (!atomic_compare_exchange_weak_explicit(&p->next, &i, i + size, memory_order_relaxed,
                                                   memory_order_relaxed))
            continue;
        p->fn(p->ctx, i, i + size, worker);
        taken += size;
        i = atomic_load_explicit(&p->next, memory_order_relaxed);
    }
    return taken;
}

/* A worker's wait for a generation other than `seen`; adapts *budget. Returns the state. */
static uint32_t wait_for_call(pool *p, int id, uint32_t seen, int64_t *budget)
{
    uint32_t s;
    spin sp;
    int64_t allowed = spin_allowed(p, *budget);
    spin_start(&sp, allowed);
    if (allowed > 0) {
        atomic_fetch_add(&p->spinners, 1);
        int how = SPIN_ON;
        while (((s = atomic_load(&p->state)) & ~(ST_GEN - 1)) == seen && how == SPIN_ON)
            how = spin_step(p, &sp);
        atomic_fetch_sub(&p->spinners, 1);
        if (how == SPIN_ON) { /* the call came during the spin */
            *budget = *budget * 2 > SPIN_MAX_NS ? SPIN_MAX_NS : *budget * 2;
            return s;
        }
        *budget = how == SPIN_PREEMPTED ? 0 : *budget / 2;
    }
    atomic_fetch_add(&p->sleepers, 1);
    while (((s = atomic_load(&p->state)) & ~(ST_GEN - 1)) == seen)
        word_wait(&p->state, s, worker_bit(id));
    atomic_fetch_sub(&p->sleepers, 1);
    /* a call soon after the spin ended: a longer spin would have caught it */
    if (now_ns() - sp.start < SPIN_MAX_NS)
        *budget = *budget < SPIN_MIN_NS ? SPIN_MIN_NS : *budget * 2 > SPIN_MAX_NS ? SPIN_MAX_NS
                                                                                 : *budget * 2;
    return s;
}

/* Joins the call of state s if it still admits workers; 1 when joined. */
static int try_join(pool *p, int id, uint32_t s)
{
    const uint32_t gen = s & ~(ST_GEN - 1);
    if (id > atomic_load_explicit(&p->want_hint, memory_order_relaxed))
        return 0;
    while ((s & ~(ST_GEN - 1)) == gen && !(s & ST_CLOSED))
        if (atomic_compare_exchange_weak(&p->state, &s, s + 1))
            return 1;
    return 0;
}

static void leave(pool *p)
{
    uint32_t s = atomic_fetch_sub(&p->state, 1);
    if ((s & ST_ACTIVE) == 1 && (s & ST_WAITER))
        word_wake(&p->state, CALLER_BIT);
}

static void *worker_main(void *arg)
{
    pool *p = &g_pool;
    int id = (int)(intptr_t)arg;
    uint32_t seen = atomic_load(&p->state) & ~(ST_GEN - 1);
    int64_t budget = SPIN_MAX_NS / 4;
    for (;;) {
        uint32_t s = wait_for_call(p, id, seen, &budget);
        seen = s & ~(ST_GEN - 1);
        if (!try_join(p, id, s))
            continue;
        if (id <= p->want) /* (the hint was of this call, unless the generation wrapped) */
            take_chunks(p, id);
        leave(p);
    }
    return NULL;
}

/* Starts workers up to want (called by the pool's holder); returns how many exist, which is
 * fewer when the system refuses a thread. */
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

/* The caller's wait for the workers inside a closed call (s: the state once closed). */
static void wait_for_workers(pool *p, uint32_t s)
{
    if ((s & ST_ACTIVE) == 0)
        return;
    spin sp;
    int64_t allowed = spin_allowed(p, g_caller_spin);
    spin_start(&sp, allowed);
    int how = allowed > 0 ? SPIN_ON : SPIN_TIMEOUT;
    while (how == SPIN_ON && (atomic_load(&p->state) & ST_ACTIVE) != 0)
        how = spin_step(p, &sp);
    if (how == SPIN_ON) {
        g_caller_spin = g_caller_spin * 2 > CALLER_SPIN_NS ? CALLER_SPIN_NS : g_caller_spin * 2;
        return;
    }
    if (how == SPIN_TIMEOUT && allowed > 0)
        g_caller_spin = g_caller_spin / 2 < SPIN_MIN_NS ? SPIN_MIN_NS : g_caller_spin / 2;
    for (;;) {
        s = atomic_fetch_or(&p->state, ST_WAITER);
        if ((s & ST_ACTIVE) == 0)
            return;
        word_wait(&p->state, s | ST_WAITER, CALLER_BIT);
    }
}

/* Runs the call on the caller and the workers 1..helpers. */
static void run_pooled(pool *p, size_t n, size_t t, int helpers, tp_range_fn fn, void *ctx)
{
    size_t chunk = n / (t * 16); /* the last chunks: short enough to end together */
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk ? chunk : 1;
    p->split = 2 * t;
    p->want = helpers;
    atomic_store_explicit(&p->want_hint, helpers, memory_order_relaxed);
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    uint32_t gen = (atomic_load(&p->state) & ~(ST_GEN - 1)) + ST_GEN;
    atomic_store(&p->state, gen); /* open, nobody inside */
    int spinning = atomic_load(&p->spinners) > 0;
    if (atomic_load(&p->sleepers) > 0)
        word_wake(&p->state, workers_mask(helpers));
    int64_t t0 = spinning ? now_ns() : 0;
    size_t mine = take_chunks(p, 0);
    uint32_t s = atomic_fetch_or(&p->state, ST_CLOSED);
    /* a worker that spun for this call and never took a chunk while the caller worked for
     * a while: it does not run beside the caller */
    if (spinning && (s & ST_ACTIVE) == 0 && mine == n) {
        int64_t t1 = now_ns();
        if (t1 - t0 > LONE_NS)
            quiet_for_a_while(p, t1);
    }
    wait_for_workers(p, s);
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
    if (helpers < 1)
        fn(ctx, 0, n, 0);
    else
        run_pooled(p, n, t, helpers, fn, ctx);
    atomic_flag_clear(&g_in_use);
}

static _Atomic long long g_min_work = (long long)TP_PARALLEL_MIN_WORK;

void tp_parallel_set_min_work(double work)
{
    atomic_store(&g_min_work, work < 0 ? (long long)TP_PARALLEL_MIN_WORK
                              : work > 1e18 ? (long long)1e18 : (long long)work);
}

int tp_parallel_threads(int n_threads, double work)
{
    int t = n_threads > 0 ? n_threads : tp_kernels_threads();
    if (t > TP_PARALLEL_MAX_THREADS)
        t = TP_PARALLEL_MAX_THREADS;
    return t < 1 || work < (double)atomic_load_explicit(&g_min_work, memory_order_relaxed) ? 1 : t;
}
