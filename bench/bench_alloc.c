/* The graph allocator's cost: median wall time of one tp_alloc_graph on the Qwen2.5-0.5B
 * graphs (437-node decode, 440-node last-token prefill at 440 tokens), per strategy and
 * aliasing policy, over many runs on one allocator (the state of a decode loop that
 * re-plans: the KV regions exist, activation buffers come back from the free lists).
 *
 * A re-plan zeroes every recycled pool buffer (allocator.md section 2); large buffers are
 * zeroed by dropping their pages, so the cost of zeros moves to the first write. "first" is
 * the first plan on a fresh allocator (it also creates the 48 KV regions). Results go to
 * stdout. TP_BENCH_RUNS overrides the number of runs (default 301). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensorplan/alloc.h"
#include "tensorplan/model.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void check(tp_status st, const char *what)
{
    if (st != TP_OK) {
        fprintf(stderr, "bench_alloc: %s: %s\n", what, tp_last_error());
        exit(1);
    }
}

static void bench(const tp_graph *g, const char *label, tp_alloc_strategy strategy,
                  tp_alias_policy policy, size_t runs)
{
    tp_allocator *a = NULL;
    check(tp_allocator_create_host(&a), "allocator");
    tp_alloc_options o = tp_alloc_options_default();
    o.strategy = strategy;
    o.aliasing = policy;
    double *t = malloc(runs * sizeof *t);
    if (!t)
        check(TP_ERR_NOMEM, "times");
    double first = 0;
    for (size_t i = 0; i <= runs; i++) {
        double t0 = now();
        check(tp_alloc_graph(a, g, &o), "alloc_graph");
        double dt = now() - t0;
        if (i == 0)
            first = dt; /* creates the KV regions and every buffer */
        else
            t[i - 1] = dt;
    }
    qsort(t, runs, sizeof *t, cmp_double);
    tp_plan_stats s = tp_alloc_stats(a);
    printf("%-30s %-6s %-14s %5zu nodes  first %9.1f us  median %9.1f us  min %9.1f us  "
           "(%zu runs, %zu activation buffers)\n",
           label, tp_alloc_strategy_name(strategy), tp_alias_policy_name(policy), s.nodes,
           first * 1e6, t[runs / 2] * 1e6, t[0] * 1e6, runs, s.activation_buffers);
    free(t);
    tp_allocator_destroy(a);
}

int main(void)
{
    size_t runs = 301;
    const char *env = getenv("TP_BENCH_RUNS");
    if (env && atoi(env) > 0)
        runs = (size_t)atoi(env);
    tp_model_config c;
    check(tp_model_config_builtin("qwen2.5-0.5b", &c), "config");
    static const struct {
        size_t nt;
        const char *label;
    } shapes[] = {{1, "qwen2.5-0.5b decode"}, {440, "qwen2.5-0.5b prefill 440 -> 1"}};
    for (size_t k = 0; k < 2; k++) {
        tp_graph_params gp;
        memset(&gp, 0, sizeof gp);
        gp.n_tokens = shapes[k].nt;
        gp.n_out = 1;
        gp.n_ctx = 4096;
        gp.fuse_ffn = 1;
        tp_graph *g = NULL;
        check(tp_model_build_graph(&c, &gp, &g), "build");
        size_t r = shapes[k].nt == 1 ? runs : (runs + 9) / 10;
        bench(g, shapes[k].label, TP_STRATEGY_POOL, TP_ALIAS_SOLE_CONSUMER, r);
        bench(g, shapes[k].label, TP_STRATEGY_POOL, TP_ALIAS_LAST_CONSUMER, r);
        bench(g, shapes[k].label, TP_STRATEGY_ARENA, TP_ALIAS_SOLE_CONSUMER, r);
        bench(g, shapes[k].label, TP_STRATEGY_ARENA, TP_ALIAS_LAST_CONSUMER, r);
        tp_graph_destroy(g);
    }
    return 0;
}
