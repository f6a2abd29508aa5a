/* The planner's threads under the caller's control (planner.h, "Threads"): with
 * options.threads = 1 neither the portfolio nor a greedy pass that shares its scans starts a
 * thread, and the plan does not depend on the number of threads. Threads are counted by a
 * second thread that lists /proc/self/task while the call runs; the same watcher must see
 * the portfolio's helpers when the option leaves it every processor, so a watcher that saw
 * nothing would fail that test instead of passing the others. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <unistd.h>

#include "support/xorshift.h"

#include "tensorplan/planner.h"

typedef struct watcher {
    pthread_t thread;
    atomic_int stop, started;
    atomic_int max_tasks;
} watcher;

static int count_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void *watch(void *arg)
{
    watcher *w = arg;
    while (!atomic_load(&w->stop)) {
        const int n = count_tasks();
        if (n > atomic_load(&w->max_tasks))
            atomic_store(&w->max_tasks, n);
        atomic_store(&w->started, 1);
    }
    return NULL;
}

/* The most threads seen during one tp_plan_offsets_ex call, less the two that are always
 * there (this one and the watcher). */
static int extra_threads_during(const tp_tensor_lifetime *t, size_t n, const tp_plan_options *o,
                                size_t *offsets, size_t *arena)
{
    watcher w;
    memset(&w, 0, sizeof w);
    atomic_init(&w.stop, 0);
    atomic_init(&w.started, 0);
    atomic_init(&w.max_tasks, 0);
    assert_int_equal(pthread_create(&w.thread, NULL, watch, &w), 0);
    while (!atomic_load(&w.started))
        ;
    assert_int_equal(atomic_load(&w.max_tasks), 2);
    assert_int_equal(tp_plan_offsets_ex(t, n, o, offsets, arena, NULL), TP_OK);
    atomic_store(&w.stop, 1);
    pthread_join(w.thread, NULL);
    return atomic_load(&w.max_tasks) - 2;
}

static tpt_rng rng;

/* n tensors over `horizon` nodes, each live for up to `reach` nodes. */
static tp_tensor_lifetime *random_problem(size_t n, size_t horizon, size_t reach)
{
    tp_tensor_lifetime *t = malloc(n * sizeof *t);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++) {
        const size_t first = (size_t)(tpt_rng_next(&rng) % horizon);
        const size_t size = 64 * (1 + (size_t)(tpt_rng_next(&rng) % 64));
        t[i] = (tp_tensor_lifetime){ size, first, first + (size_t)(tpt_rng_next(&rng) % (reach + 1)) };
    }
    return t;
}

/* Independent check: no two tensors live at a common node share a byte, each fits. */
static void assert_sound(const tp_tensor_lifetime *t, size_t n, const size_t *off, size_t arena)
{
    for (size_t i = 0; i < n; i++) {
        assert_true(off[i] + t[i].size <= arena);
        for (size_t j = i + 1; j < n; j++) {
            const int meet = t[i].first_use <= t[j].last_use && t[j].first_use <= t[i].last_use;
            const int share = off[i] < off[j] + t[j].size && off[j] < off[i] + t[i].size;
            assert_false(meet && share && t[i].size && t[j].size);
        }
    }
}

enum { PORTFOLIO_N = 4500, SCAN_N = 20000 };

/* Under the sanitizers the scan over 20,000 long lifetimes takes minutes: those cases run in
 * the release suite only. */
static int sanitized(void) { return getenv("TP_SANITIZED") != NULL; }

static void test_portfolio_one_thread_starts_none(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(11);
    tp_tensor_lifetime *t = random_problem(PORTFOLIO_N, 4000, 20);
    size_t *off = malloc(PORTFOLIO_N * sizeof *off), arena = 0;
    assert_non_null(off);
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.strategy = TP_PLAN_PORTFOLIO;
    o.threads = 1;
    assert_int_equal(extra_threads_during(t, PORTFOLIO_N, &o, off, &arena), 0);
    assert_sound(t, PORTFOLIO_N, off, arena);
    free(off);
    free(t);
}

/* The watcher can see helpers: with every processor the portfolio over 4,096 tensors or more
 * starts at least one (when there are two processors). */
static void test_portfolio_every_processor_starts_helpers(void **state)
{
    (void)state;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        skip();
    rng = tpt_rng_seeded(12);
    tp_tensor_lifetime *t = random_problem(PORTFOLIO_N, 4000, 20);
    size_t *off = malloc(PORTFOLIO_N * sizeof *off), arena = 0;
    assert_non_null(off);
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.strategy = TP_PLAN_PORTFOLIO;
    int seen = 0;
    for (int tries = 0; tries < 5 && !seen; tries++)
        seen = extra_threads_during(t, PORTFOLIO_N, &o, off, &arena) > 0;
    assert_true(seen);
    assert_sound(t, PORTFOLIO_N, off, arena); /* the plan the helpers made */
    free(off);
    free(t);
}

/* Long lifetimes over many tensors: where the processor has AVX2 the greedy pass shares its
 * scans; with threads = 1 it must not. */
static void test_greedy_one_thread_starts_none(void **state)
{
    (void)state;
    if (sanitized())
        skip();
    rng = tpt_rng_seeded(13);
    tp_tensor_lifetime *t = random_problem(SCAN_N, 1000, 1000);
    size_t *off = malloc(SCAN_N * sizeof *off), arena = 0;
    assert_non_null(off);
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.threads = 1;
    assert_int_equal(extra_threads_during(t, SCAN_N, &o, off, &arena), 0);
    free(off);
    free(t);
}

/* The same plan on 1, 2, 3 and every processor for one problem and strategy. */
static void assert_same_plan(const tp_tensor_lifetime *t, size_t n, tp_plan_strategy strategy)
{
    size_t *ref = malloc(n * sizeof *ref), *off = malloc(n * sizeof *off);
    assert_non_null(ref);
    assert_non_null(off);
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.strategy = strategy;
    o.threads = 1;
    size_t ref_arena = 0, arena = 0;
    assert_int_equal(tp_plan_offsets_ex(t, n, &o, ref, &ref_arena, NULL), TP_OK);
    const unsigned threads[] = { 2, 3, 0 };
    for (size_t k = 0; k < 3; k++) {
        o.threads = threads[k];
        assert_int_equal(tp_plan_offsets_ex(t, n, &o, off, &arena, NULL), TP_OK);
        assert_int_equal(arena, ref_arena);
        assert_memory_equal(off, ref, n * sizeof *off);
    }
    assert_sound(t, n, ref, ref_arena);
    free(ref);
    free(off);
}

/* For the portfolio (its orders shared among threads) and a greedy pass (its scans shared). */
static void test_same_plan_on_any_number_of_threads(void **state)
{
    (void)state;
    rng = tpt_rng_seeded(14);
    tp_tensor_lifetime *t = random_problem(PORTFOLIO_N, 4000, 20);
    assert_same_plan(t, PORTFOLIO_N, TP_PLAN_PORTFOLIO);
    free(t);
    if (sanitized())
        return;
    t = random_problem(SCAN_N, 1000, 1000);
    assert_same_plan(t, SCAN_N, TP_PLAN_GREEDY);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portfolio_one_thread_starts_none),
        cmocka_unit_test(test_portfolio_every_processor_starts_helpers),
        cmocka_unit_test(test_greedy_one_thread_starts_none),
        cmocka_unit_test(test_same_plan_on_any_number_of_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
