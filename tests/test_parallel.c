/* The backend's parallel for (src/backend/parallel.c): every index of [0, n) is handed out
 * exactly once, to worker ids below the thread count, over many calls in a row (workers that
 * wake late must not join a call that ended, nor run a chunk twice), with calls from two
 * program threads at once (one of them runs on its caller), with ranges smaller than the
 * thread count, with pauses between calls long enough for the workers to go to sleep, with
 * calls made from inside a chunk, and with a chunk that outlasts the caller's spin (the call
 * returns only once it is done). The oracles are a per-index counter written by the callback
 * and sums of the indices against their closed forms. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_* */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "backend/parallel.h"

typedef struct visit {
    size_t n;
    int threads;
    unsigned char *hits; /* one counter per index */
    int bad_worker;      /* set when a worker id is out of range */
} visit;

static void count_range(void *ctx, size_t begin, size_t end, int worker)
{
    visit *v = ctx;
    if (worker < 0 || worker >= (v->threads > 0 ? v->threads : 1))
        v->bad_worker = 1;
    for (size_t i = begin; i < end; i++)
        __atomic_fetch_add(&v->hits[i], 1, __ATOMIC_RELAXED);
}

/* 1 when every index was visited once by a worker in range (no cmocka call: it also runs on
 * threads of its own). */
static int run_ok(size_t n, int threads)
{
    visit v = {n, threads, calloc(n ? n : 1, 1), 0};
    if (!v.hits)
        return 0;
    tp_parallel_for(n, threads, count_range, &v);
    int ok = !v.bad_worker;
    for (size_t i = 0; i < n; i++)
        ok &= v.hits[i] == 1;
    free(v.hits);
    return ok;
}

static void run_and_check(size_t n, int threads)
{
    if (!run_ok(n, threads))
        fail_msg("n %zu, %d threads: an index not visited exactly once", n, threads);
}

static void test_every_index_once(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 3, 7, 64, 1000, 4099};
    for (int t = 0; t <= 9; t++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            run_and_check(sizes[s], t);
}

static void test_many_calls_in_a_row(void **state)
{
    (void)state;
    /* short calls back to back: a worker woken for one call may find the next one */
    for (int k = 0; k < 3000; k++)
        run_and_check((size_t)(k % 37) + 1, 2 + k % 3);
}

static void *caller(void *arg)
{
    int *ok = arg;
    for (int k = 0; k < 300; k++)
        *ok &= run_ok(257 + (size_t)k, 4);
    return NULL;
}

static void test_two_callers_at_once(void **state)
{
    (void)state;
    pthread_t a, b;
    int ok_a = 1, ok_b = 1;
    assert_int_equal(pthread_create(&a, NULL, caller, &ok_a), 0);
    assert_int_equal(pthread_create(&b, NULL, caller, &ok_b), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    assert_true(ok_a && ok_b);
}

static void pause_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Sums of i and of i^2 over the range, one slot per worker (no two workers share one). */
typedef struct sums {
    int threads;
    int bad_worker;
    struct {
        unsigned long long s1, s2;
        char pad[48];
    } w[TP_PARALLEL_MAX_THREADS];
} sums;

static void sum_range(void *ctx, size_t begin, size_t end, int worker)
{
    sums *v = ctx;
    if (worker < 0 || worker >= v->threads) {
        __atomic_store_n(&v->bad_worker, 1, __ATOMIC_RELAXED);
        return;
    }
    for (size_t i = begin; i < end; i++) {
        v->w[worker].s1 += i;
        v->w[worker].s2 += (unsigned long long)i * i;
    }
}

static void check_sums(size_t n, int threads)
{
    static sums v;
    memset(&v, 0, sizeof v);
    v.threads = threads > 0 ? threads : 1;
    tp_parallel_for(n, threads, sum_range, &v);
    unsigned long long s1 = 0, s2 = 0;
    for (int w = 0; w < TP_PARALLEL_MAX_THREADS; w++) {
        s1 += v.w[w].s1;
        s2 += v.w[w].s2;
    }
    const unsigned long long m = n;
    const unsigned long long want1 = m ? m * (m - 1) / 2 : 0;
    const unsigned long long want2 = m ? (m - 1) * m * (2 * m - 1) / 6 : 0;
    if (v.bad_worker || s1 != want1 || s2 != want2)
        fail_msg("n %zu, %d threads: sums %llu %llu, want %llu %llu%s", n, threads, s1, s2,
                 want1, want2, v.bad_worker ? " (a worker id out of range)" : "");
}

/* Many small calls at every thread count from 1 to 8, as a decode step makes them. */
static void test_small_calls_every_thread_count(void **state)
{
    (void)state;
    for (int k = 0; k < 20000; k++)
        check_sums((size_t)(k % 61) * 13 + 1 + (size_t)(k % 5), 1 + k % 8);
}

/* Pauses of every length between calls: workers caught spinning, just going to sleep, or
 * asleep; the sums must hold through every change. */
static void test_pauses_between_calls(void **state)
{
    (void)state;
    static const long pauses[] = {0, 1, 5, 20, 60, 150, 300, 1000, 3000};
    for (int k = 0; k < 400; k++) {
        pause_us(pauses[k % 9]);
        check_sums(896 + (size_t)k, 2 + k % 3);
    }
}

/* A call made from inside a chunk runs on that thread alone; both levels are complete. */
typedef struct nest {
    unsigned char outer[64];
    unsigned char inner[64][37];
    int bad;
} nest;

static void inner_range(void *ctx, size_t begin, size_t end, int worker)
{
    unsigned char *row = ctx;
    (void)worker;
    for (size_t i = begin; i < end; i++)
        row[i]++;
}

static void outer_range(void *ctx, size_t begin, size_t end, int worker)
{
    nest *v = ctx;
    (void)worker;
    for (size_t i = begin; i < end; i++) {
        v->outer[i]++;
        tp_parallel_for(37, 4, inner_range, v->inner[i]);
    }
}

static void test_nested_calls(void **state)
{
    (void)state;
    for (int rep = 0; rep < 200; rep++) {
        static nest v;
        memset(&v, 0, sizeof v);
        tp_parallel_for(64, 2 + rep % 3, outer_range, &v);
        for (int i = 0; i < 64; i++) {
            assert_int_equal(v.outer[i], 1);
            for (int j = 0; j < 37; j++)
                assert_int_equal(v.inner[i][j], 1);
        }
    }
}

/* A chunk that lasts far longer than any spin: the caller must sleep until it is done, and
 * the call returns only then (each chunk marks its indices after its pause). */
typedef struct slow {
    unsigned char done[16];
} slow;

static void slow_range(void *ctx, size_t begin, size_t end, int worker)
{
    slow *v = ctx;
    if (worker != 0)
        pause_us(3000);
    for (size_t i = begin; i < end; i++)
        __atomic_store_n(&v->done[i], 1, __ATOMIC_RELEASE);
}

static void test_call_waits_for_slow_worker(void **state)
{
    (void)state;
    for (int rep = 0; rep < 30; rep++) {
        slow v;
        memset(&v, 0, sizeof v);
        if (rep % 2)
            pause_us(2000); /* workers asleep */
        tp_parallel_for(16, 2, slow_range, &v);
        for (int i = 0; i < 16; i++)
            assert_int_equal(__atomic_load_n(&v.done[i], __ATOMIC_ACQUIRE), 1);
    }
}

/* Pinned to one CPU, a call runs every chunk on its caller (worker 0). */
static void only_worker_zero(void *ctx, size_t begin, size_t end, int worker)
{
    (void)begin;
    (void)end;
    if (worker != 0)
        __atomic_store_n((int *)ctx, 1, __ATOMIC_RELAXED);
}

static void test_pinned_runs_on_caller(void **state)
{
    (void)state;
    cpu_set_t saved, one;
    if (sched_getaffinity(0, sizeof saved, &saved) != 0)
        skip();
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (cpu == CPU_SETSIZE || sched_setaffinity(0, sizeof one, &one) != 0)
        skip();
    int other = 0;
    for (int k = 0; k < 500; k++)
        tp_parallel_for(256, 2 + k % 3, only_worker_zero, &other);
    assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
    assert_int_equal(other, 0);
    check_sums(4099, 2); /* and the pool works again afterwards */
}

/* The kernels' choice of threads (parallel.h): the requested count from TP_PARALLEL_MIN_WORK
 * multiply-adds up, 1 below, capped at TP_PARALLEL_MAX_THREADS; the threshold settable. */
static void test_threads_for_work(void **state)
{
    (void)state;
    assert_int_equal(tp_parallel_threads(2, TP_PARALLEL_MIN_WORK - 1), 1);
    assert_int_equal(tp_parallel_threads(2, TP_PARALLEL_MIN_WORK), 2);
    assert_int_equal(tp_parallel_threads(7, 1e12), 7);
    assert_int_equal(tp_parallel_threads(1000, 1e12), TP_PARALLEL_MAX_THREADS);
    assert_true(TP_PARALLEL_MIN_WORK <= 896.0 * 128.0); /* a decode step's K projection */
    tp_parallel_set_min_work(0.0);
    assert_int_equal(tp_parallel_threads(3, 1.0), 3);
    tp_parallel_set_min_work(1e9);
    assert_int_equal(tp_parallel_threads(3, 1e8), 1);
    tp_parallel_set_min_work(-1.0);
    assert_int_equal(tp_parallel_threads(3, TP_PARALLEL_MIN_WORK - 1), 1);
    assert_int_equal(tp_parallel_threads(3, TP_PARALLEL_MIN_WORK), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_index_once),
        cmocka_unit_test(test_many_calls_in_a_row),
        cmocka_unit_test(test_two_callers_at_once),
        cmocka_unit_test(test_small_calls_every_thread_count),
        cmocka_unit_test(test_pauses_between_calls),
        cmocka_unit_test(test_nested_calls),
        cmocka_unit_test(test_call_waits_for_slow_worker),
        cmocka_unit_test(test_pinned_runs_on_caller),
        cmocka_unit_test(test_threads_for_work),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
