/* The backend's parallel for (src/backend/parallel.c): every index of [0, n) is handed out
 * exactly once, to worker ids below the thread count, over many calls in a row (workers that
 * wake late must not join a call that ended, nor run a chunk twice), with calls from two
 * program threads at once (one of them runs on its caller), and with ranges smaller than the
 * thread count. The oracle is a per-index counter written by the callback. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_index_once),
        cmocka_unit_test(test_many_calls_in_a_row),
        cmocka_unit_test(test_two_callers_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
