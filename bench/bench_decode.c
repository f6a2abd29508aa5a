/* Prefill and decode speed through the planned graph, with random weights: the tiny model
 * and the Qwen2.5-0.5B shapes, per allocator strategy, and the time spent building graphs,
 * planning and executing. Same generated ids for every strategy (checked). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensorplan/session.h"
#include "tensorplan/kernels.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench_model(const char *name, size_t n_prompt, size_t max_new, int queued)
{
    tp_model_config c;
    tp_weights *w = NULL;
    if (tp_model_config_builtin(name, &c) != TP_OK)
        return 1;
    double t0 = now_seconds();
    if (tp_weights_init_random(&c, 1, &w) != TP_OK) {
        fprintf(stderr, "bench_decode: %s\n", tp_last_error());
        return 1;
    }
    printf("%s: %zu-token prompt, %zu new tokens, %d threads, %d queued layers; weights %.1f MB "
           "created in %.2f s\n",
           name, n_prompt, max_new, tp_kernels_threads(), queued,
           (double)tp_weights_bytes(w) / 1e6, now_seconds() - t0);
    printf("  %-8s %12s %12s %10s %10s %12s %8s\n", "strategy", "prefill t/s", "decode t/s",
           "build ms", "plan ms", "execute ms", "allocs");
    int32_t *prompt = malloc(n_prompt * sizeof *prompt);
    int32_t *out = malloc(max_new * sizeof *out), *first = malloc(max_new * sizeof *first);
    if (!prompt || !out || !first)
        return 1;
    for (size_t i = 0; i < n_prompt; i++)
        prompt[i] = (int32_t)((i * 7919 + 13) % (size_t)c.vocab);
    const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA,
                                            TP_STRATEGY_NAIVE};
    int rc = 0;
    for (size_t k = 0; k < 3 && rc == 0; k++) {
        tp_session_options o = tp_session_options_default();
        o.alloc.strategy = strategies[k];
        o.queued_layers = queued;
        tp_session *s = NULL;
        if (tp_session_create(&c, w, &o, &s) != TP_OK ||
            tp_session_generate(s, prompt, n_prompt, max_new, out, NULL) != TP_OK) {
            fprintf(stderr, "bench_decode: %s\n", tp_last_error());
            rc = 1;
        } else {
            tp_session_stats st = tp_session_get_stats(s);
            printf("  %-8s %12.2f %12.2f %10.3f %10.3f %12.1f %8zu\n",
                   tp_alloc_strategy_name(strategies[k]),
                   (double)st.prefill_tokens / st.prefill_seconds,
                   st.decode_tokens ? (double)st.decode_tokens / st.decode_seconds : 0.0,
                   st.build_seconds * 1e3, st.plan_seconds * 1e3, st.exec_seconds * 1e3,
                   st.last_pool_allocations);
            if (k == 0)
                memcpy(first, out, max_new * sizeof *out);
            else if (memcmp(first, out, max_new * sizeof *out) != 0) {
                fprintf(stderr, "bench_decode: %s generated other ids than pool\n",
                        tp_alloc_strategy_name(strategies[k]));
                rc = 1;
            }
        }
        tp_session_destroy(s);
    }
    free(prompt);
    free(out);
    free(first);
    tp_weights_destroy(w);
    return rc;
}

int main(void)
{
    int rc = bench_model("tiny", 16, 32, 0);
    if (rc == 0)
        rc = bench_model("tiny", 16, 32, 2);
    if (rc == 0)
        rc = bench_model("qwen2.5-0.5b", 16, 4, 0);
    return rc;
}
