/* The tiny model end to end: reference math, bit-identical logits across strategies,
 * aliasing policies and backend mixes, fusion and tail rows, the bug-class rules of the
 * engine, KV regions across the prefill -> decode rebuild, graph reuse without pool
 * allocation, the n_ctx rules, trace and dump files, the run command. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "alloc/alloc_debug.h"
#include "support/ref_forward.h"
#include "tensorplan/cache.h"
#include "tensorplan/session.h"
#include "tensorplan/kernels.h"

#define N_PROMPT 7
#define N_STEPS 4

static const int32_t prompt[N_PROMPT] = {3, 41, 96, 0, 17, 17, 58};

typedef struct fx {
    tp_model_config c;
    tp_weights *w;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || tp_model_config_builtin("tiny", &f->c) != TP_OK ||
        tp_weights_init_random(&f->c, 42, &f->w) != TP_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tp_weights_destroy(f->w);
    free(f);
    return 0;
}

/* Everything observable of one run: the logits of the prefill (last row) and of each
 * decode step, then every KV region. */
typedef struct trace_out {
    float *logits; /* (1 + N_STEPS) x vocab */
    float *kv;
    size_t kv_n;
    int32_t tokens[N_STEPS + 1];
} run_out;

static void read_kv(tp_session *s, int n_layer, float **out, size_t *n)
{
    tp_allocator *a = tp_session_allocator(s);
    *out = NULL;
    *n = 0;
    for (int L = 0; L < n_layer; L++) {
        tp_bufref kv[2];
        assert_true(tp_alloc_kv_pair(a, L, &kv[0], &kv[1]));
        for (int j = 0; j < 2; j++) {
            float *p = realloc(*out, (*n + kv[j].len) * sizeof *p);
            assert_non_null(p);
            assert_int_equal(tp_alloc_read(a, &kv[j], p + *n), TP_OK);
            *out = p;
            *n += kv[j].len;
        }
    }
}

/* The rules a run turns off (alloc_debug.h): all off but in the regression tests. */
static tp_alloc_test_switches run_switches;

static void run_model(const fx *f, const tp_session_options *o, run_out *r)
{
    size_t vocab = (size_t)f->c.vocab;
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&f->c, f->w, o, &s), TP_OK);
    tp_alloc_set_test_switches(tp_session_allocator(s), &run_switches);
    r->logits = malloc((1 + N_STEPS) * vocab * sizeof *r->logits);
    assert_non_null(r->logits);
    size_t n_out = o->tail_rows ? 1 : N_PROMPT;
    float *pre = malloc(n_out * vocab * sizeof *pre);
    assert_non_null(pre);
    if (tp_session_forward(s, prompt, N_PROMPT, n_out, pre) != TP_OK)
        fail_msg("prefill: %s", tp_last_error());
    memcpy(r->logits, pre + (n_out - 1) * vocab, vocab * sizeof *pre);
    free(pre);
    r->tokens[0] = tp_argmax(r->logits, vocab);
    for (int i = 0; i < N_STEPS; i++) {
        if (tp_session_forward(s, &r->tokens[i], 1, 1, r->logits + (size_t)(i + 1) * vocab) !=
            TP_OK)
            fail_msg("decode step %d: %s", i, tp_last_error());
        r->tokens[i + 1] = tp_argmax(r->logits + (size_t)(i + 1) * vocab, vocab);
    }
    read_kv(s, f->c.n_layer, &r->kv, &r->kv_n);
    tp_session_destroy(s);
}

static void free_run(run_out *r)
{
    free(r->logits);
    free(r->kv);
}

static void assert_same_run(const fx *f, const run_out *a, const run_out *b, const char *what)
{
    size_t n = (1 + N_STEPS) * (size_t)f->c.vocab;
    if (memcmp(a->logits, b->logits, n * sizeof(float)) != 0) {
        double worst = 0;
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs((double)a->logits[i] - b->logits[i]));
        fail_msg("%s: logits differ (max difference %g)", what, worst);
    }
    assert_int_equal(a->kv_n, b->kv_n);
    if (memcmp(a->kv, b->kv, a->kv_n * sizeof(float)) != 0)
        fail_msg("%s: KV regions differ", what);
    assert_memory_equal(a->tokens, b->tokens, sizeof a->tokens);
}

/* ---- reference math -------------------------------------------------------------------------- */

static void test_logits_match_reference_forward(void **state)
{
    fx *f = *state;
    size_t vocab = (size_t)f->c.vocab;
    tp_session_options o = tp_session_options_default();
    o.tail_rows = 0; /* every prompt row's logits, each compared */
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&f->c, f->w, &o, &s), TP_OK);
    ref_model *ref = NULL;
    assert_int_equal(ref_model_create(&f->c, f->w, 64, &ref), 0);

    float *got = malloc(N_PROMPT * vocab * sizeof *got);
    double *want = malloc(N_PROMPT * vocab * sizeof *want);
    assert_non_null(got);
    assert_non_null(want);
    assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, N_PROMPT, got), TP_OK);
    assert_int_equal(ref_model_forward(ref, prompt, N_PROMPT, want), 0);
    int32_t tok = 0;
    for (int step = 0; step <= N_STEPS; step++) {
        size_t rows = step == 0 ? N_PROMPT : 1;
        for (size_t r = 0; r < rows; r++) {
            const float *g = got + r * vocab;
            const double *w = want + r * vocab;
            double scale = 0;
            for (size_t i = 0; i < vocab; i++)
                scale = fmax(scale, fabs(w[i]));
            assert_true(scale > 0.1); /* logits of a working model, not a collapsed one */
            for (size_t i = 0; i < vocab; i++)
                if (fabs(g[i] - w[i]) > 1e-5 * scale)
                    fail_msg("step %d row %zu logit %zu: %.9g vs reference %.9g", step, r, i,
                             (double)g[i], w[i]);
        }
        tok = tp_argmax(got + (rows - 1) * vocab, vocab);
        if (step == N_STEPS)
            break;
        assert_int_equal(tp_session_forward(s, &tok, 1, 1, got), TP_OK);
        assert_int_equal(ref_model_forward(ref, &tok, 1, want), 0);
    }
    /* the KV cache holds what the reference cached */
    tp_allocator *a = tp_session_allocator(s);
    size_t nkv = (size_t)(f->c.n_head_kv * f->c.head_dim), n_past = N_PROMPT + N_STEPS;
    float *buf = malloc(tp_session_n_ctx(s) * nkv * sizeof *buf);
    assert_non_null(buf);
    for (int L = 0; L < f->c.n_layer; L++) {
        tp_bufref k, v;
        assert_true(tp_alloc_kv_pair(a, L, &k, &v));
        for (int j = 0; j < 2; j++) {
            assert_int_equal(tp_alloc_read(a, j ? &v : &k, buf), TP_OK);
            const double *rk = j ? ref_model_v(ref, L) : ref_model_k(ref, L);
            for (size_t i = 0; i < n_past * nkv; i++)
                assert_true(fabs(buf[i] - rk[i]) <= 1e-5 * (1.0 + fabs(rk[i])));
        }
    }
    free(buf);
    free(got);
    free(want);
    ref_model_destroy(ref);
    tp_session_destroy(s);
}

/* ---- equivalence ----------------------------------------------------------------------------- */

static void test_bit_identical_across_strategies_policies_backends(void **state)
{
    fx *f = *state;
    tp_session_options base = tp_session_options_default();
    base.alloc.strategy = TP_STRATEGY_NAIVE;
    run_out ref;
    run_model(f, &base, &ref);
    const tp_alloc_strategy strategies[] = {TP_STRATEGY_NAIVE, TP_STRATEGY_POOL,
                                            TP_STRATEGY_ARENA};
    const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER};
    const int queued[] = {0, 1, 3};
    for (size_t si = 0; si < 3; si++)
        for (size_t pi = 0; pi < 2; pi++)
            for (size_t qi = 0; qi < 3; qi++) {
                tp_session_options o = tp_session_options_default();
                o.alloc.strategy = strategies[si];
                o.alloc.aliasing = policies[pi];
                o.queued_layers = queued[qi];
                run_out r;
                run_model(f, &o, &r);
                char what[96];
                snprintf(what, sizeof what, "%s/%s with %d queued layers",
                         tp_alloc_strategy_name(o.alloc.strategy),
                         tp_alias_policy_name(o.alloc.aliasing), o.queued_layers);
                assert_same_run(f, &ref, &r, what);
                free_run(&r);
            }
    free_run(&ref);
}

static void test_fused_unfused_and_tail_rows_identical(void **state)
{
    fx *f = *state;
    tp_session_options o = tp_session_options_default();
    run_out fused, unfused, all_rows;
    run_model(f, &o, &fused);
    o.fuse_ffn = 0;
    run_model(f, &o, &unfused);
    assert_same_run(f, &fused, &unfused, "fused vs unfused");
    o = tp_session_options_default();
    o.tail_rows = 0;
    run_model(f, &o, &all_rows);
    assert_same_run(f, &fused, &all_rows, "tail rows vs all rows");
    free_run(&fused);
    free_run(&unfused);
    free_run(&all_rows);
}

static void test_thread_count_independent(void **state)
{
    fx *f = *state;
    tp_session_options o = tp_session_options_default();
    run_out one, three;
    tp_kernels_set_threads(1);
    run_model(f, &o, &one);
    tp_kernels_set_threads(3);
    run_model(f, &o, &three);
    tp_kernels_set_threads(0);
    assert_same_run(f, &one, &three, "1 vs 3 threads");
    free_run(&one);
    free_run(&three);
}

/* ---- the bug-class rules, each switched off -------------------------------------------------- */

/* The largest difference between a run's prefill logits (last prompt row) and the double
 * precision reference forward pass, relative to the reference's largest logit. */
static double prefill_error(const fx *f, const run_out *r)
{
    const size_t vocab = (size_t)f->c.vocab;
    ref_model *ref = NULL;
    assert_int_equal(ref_model_create(&f->c, f->w, 64, &ref), 0);
    double *want = malloc(N_PROMPT * vocab * sizeof *want);
    assert_non_null(want);
    assert_int_equal(ref_model_forward(ref, prompt, N_PROMPT, want), 0);
    const double *w = want + (N_PROMPT - 1) * vocab;
    double scale = 0, worst = 0;
    for (size_t i = 0; i < vocab; i++) {
        scale = fmax(scale, fabs(w[i]));
        worst = fmax(worst, fabs((double)r->logits[i] - w[i]));
    }
    free(want);
    ref_model_destroy(ref);
    return worst / scale;
}

static void test_kahn_liveness_gives_wrong_logits(void **state)
{
    fx *f = *state;
    tp_session_options o = tp_session_options_default();
    run_out good, bad;
    run_model(f, &o, &good);
    run_switches.kahn_liveness = 1;
    run_model(f, &o, &bad);
    run_switches.kahn_liveness = 0;
    assert_memory_not_equal(good.logits, bad.logits, (size_t)f->c.vocab * sizeof(float));
    /* against the reference: the rule gives its logits, the Kahn order clearly others */
    assert_true(prefill_error(f, &good) <= 1e-5);
    assert_true(prefill_error(f, &bad) > 1e-2);
    free_run(&good);
    free_run(&bad);
}

static void test_host_copy_without_sync_reads_stale_data(void **state)
{
    fx *f = *state;
    size_t vocab = (size_t)f->c.vocab;
    tp_session_options o = tp_session_options_default();
    o.queued_layers = 1; /* layer 0 deferred; its output is copied to the cpu layers */
    run_out good, bad, cpu_only;
    run_model(f, &o, &good);
    o.queued_layers = 0;
    run_model(f, &o, &cpu_only);
    assert_same_run(f, &good, &cpu_only, "queued layer 0 vs all cpu");
    o.queued_layers = 1;
    run_switches.no_host_copy_sync = 1;
    run_model(f, &o, &bad);
    run_switches.no_host_copy_sync = 0;
    assert_memory_not_equal(good.logits, bad.logits, vocab * sizeof(float));
    assert_true(prefill_error(f, &good) <= 1e-5);
    assert_true(prefill_error(f, &bad) > 1e-2);
    /* layer 1 (cpu) cached K/V computed from the stale copy */
    size_t region = (size_t)(f->c.n_head_kv * f->c.head_dim) * (size_t)f->c.max_ctx;
    assert_memory_not_equal(good.kv + 2 * region, bad.kv + 2 * region,
                            N_PROMPT * (size_t)(f->c.n_head_kv * f->c.head_dim) * sizeof(float));
    free_run(&good);
    free_run(&bad);
    free_run(&cpu_only);
}

/* ---- KV regions, reuse, n_ctx ---------------------------------------------------------------- */

static void test_kv_survives_rebuild_and_reuse_allocates_nothing(void **state)
{
    fx *f = *state;
    size_t vocab = (size_t)f->c.vocab;
    for (int queued = 0; queued <= 2; queued += 2) {
        tp_session_options o = tp_session_options_default();
        o.queued_layers = queued;
        tp_session *s = NULL;
        assert_int_equal(tp_session_create(&f->c, f->w, &o, &s), TP_OK);
        float *logits = malloc(vocab * sizeof *logits);
        assert_non_null(logits);
        assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, 1, logits), TP_OK);
        tp_allocator *a = tp_session_allocator(s);
        /* the session's graph cache plans with its allocator; one graph built so far */
        tp_graph_cache *cache = tp_session_cache(s);
        assert_non_null(cache);
        assert_ptr_equal(tp_graph_cache_allocator(cache), a);
        assert_ptr_equal(tp_graph_cache_current(cache), tp_session_graph(s));
        assert_int_equal(tp_graph_cache_size(cache), 1);
        size_t n_regions = tp_alloc_persistent_count(a);
        assert_int_equal(n_regions, 2 * (size_t)f->c.n_layer);
        tp_bufref k0[8], v0[8];
        float *before = NULL, *after = NULL;
        size_t nb = 0, na = 0;
        for (int L = 0; L < f->c.n_layer; L++)
            assert_true(tp_alloc_kv_pair(a, L, &k0[L], &v0[L]));
        read_kv(s, f->c.n_layer, &before, &nb);
        const tp_graph *prefill = tp_session_graph(s);
        uint64_t prefill_uid = prefill->uid;

        int32_t tok = tp_argmax(logits, vocab);
        assert_int_equal(tp_session_forward(s, &tok, 1, 1, logits), TP_OK);
        /* a new graph, the same regions, the prompt's rows untouched */
        assert_true(tp_session_graph(s)->uid != prefill_uid);
        assert_int_equal(tp_alloc_persistent_count(a), n_regions);
        for (int L = 0; L < f->c.n_layer; L++) {
            tp_bufref k, v;
            assert_true(tp_alloc_kv_pair(a, L, &k, &v));
            assert_int_equal(k.backend, k0[L].backend);
            assert_int_equal(k.id, k0[L].id);
            assert_int_equal(k.len, k0[L].len);
            assert_int_equal(v.backend, v0[L].backend);
            assert_int_equal(v.id, v0[L].id);
            assert_int_equal(v.len, v0[L].len);
        }
        read_kv(s, f->c.n_layer, &after, &na);
        assert_int_equal(na, nb);
        size_t nkv = (size_t)(f->c.n_head_kv * f->c.head_dim), region = nb / (2 * (size_t)f->c.n_layer);
        for (size_t r = 0; r < 2 * (size_t)f->c.n_layer; r++)
            assert_memory_equal(after + r * region, before + r * region,
                                N_PROMPT * nkv * sizeof(float));
        /* the decode step wrote row N_PROMPT */
        int wrote = 0;
        for (size_t i = 0; i < nkv; i++)
            wrote |= after[N_PROMPT * nkv + i] != before[N_PROMPT * nkv + i];
        assert_true(wrote);

        /* every later step reuses that graph without one pool allocation */
        const tp_graph *decode = tp_session_graph(s);
        for (int step = 0; step < 3; step++) {
            tok = tp_argmax(logits, vocab);
            size_t a0 = tp_alloc_pool_allocations(a);
            assert_int_equal(tp_session_forward(s, &tok, 1, 1, logits), TP_OK);
            assert_int_equal(tp_alloc_pool_allocations(a) - a0, 0);
            assert_int_equal(tp_session_get_stats(s).last_pool_allocations, 0);
            assert_ptr_equal(tp_session_graph(s), decode);
        }
        tp_session_stats st = tp_session_get_stats(s);
        assert_int_equal(st.builds, 2);
        assert_int_equal(st.reuses, 3);
        free(before);
        free(after);
        free(logits);
        tp_session_destroy(s);
    }
}

static void test_fusion_toggle_rebuilds_with_same_kv(void **state)
{
    fx *f = *state;
    size_t vocab = (size_t)f->c.vocab;
    tp_session_options o = tp_session_options_default();
    run_out ref;
    run_model(f, &o, &ref);
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&f->c, f->w, &o, &s), TP_OK);
    float *logits = malloc(vocab * sizeof *logits);
    assert_non_null(logits);
    assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, 1, logits), TP_OK);
    int32_t tok = tp_argmax(logits, vocab);
    assert_int_equal(tp_session_forward(s, &tok, 1, 1, logits), TP_OK);
    size_t builds = tp_session_get_stats(s).builds;
    tp_session_options unfused = o;
    unfused.fuse_ffn = 0;
    assert_int_equal(tp_session_set_options(s, &unfused), TP_OK);
    tok = tp_argmax(logits, vocab);
    tp_status st = tp_session_forward(s, &tok, 1, 1, logits);
    assert_int_equal(st, TP_OK);
    assert_int_equal(tp_session_get_stats(s).builds, builds + 1);
    /* the unfused graph has a live silu; the fused one left it dead */
    const tp_graph *g = tp_session_graph(s);
    size_t silu_live = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        tp_bufref r;
        silu_live += g->nodes[i].op == TP_OP_SILU &&
                     tp_alloc_node_buffer(tp_session_allocator(s), i, &r);
    }
    assert_int_equal(silu_live, (size_t)f->c.n_layer);
    assert_memory_equal(logits, ref.logits + 2 * vocab, vocab * sizeof(float));
    free(logits);
    free_run(&ref);
    tp_session_destroy(s);
}

static void test_n_ctx_rules_and_refusal(void **state)
{
    fx *f = *state;
    size_t vocab = (size_t)f->c.vocab, nkv = (size_t)(f->c.n_head_kv * f->c.head_dim);
    tp_session_options o = tp_session_options_default();
    o.n_ctx = 4; /* below the prompt: the prompt length wins */
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&f->c, f->w, &o, &s), TP_OK);
    float *logits = malloc(vocab * sizeof *logits);
    assert_non_null(logits);
    assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, 1, logits), TP_OK);
    assert_int_equal(tp_session_n_ctx(s), N_PROMPT);
    tp_bufref k, v;
    assert_true(tp_alloc_kv_pair(tp_session_allocator(s), 0, &k, &v));
    assert_int_equal(k.len, N_PROMPT * nkv);
    float *before = NULL, *after = NULL;
    size_t nb, na;
    read_kv(s, f->c.n_layer, &before, &nb);
    int32_t tok = 1;
    /* position 7 >= n_ctx 7: refused before anything is written */
    assert_int_equal(tp_session_forward(s, &tok, 1, 1, logits), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "n_ctx 7"));
    assert_int_equal(tp_session_n_past(s), N_PROMPT);
    read_kv(s, f->c.n_layer, &after, &na);
    assert_int_equal(na, nb);
    assert_memory_equal(after, before, nb * sizeof(float));
    free(before);
    free(after);
    tp_session_destroy(s);

    /* above the model's maximum: clamped */
    o.n_ctx = 100000;
    assert_int_equal(tp_session_create(&f->c, f->w, &o, &s), TP_OK);
    assert_int_equal(tp_session_forward(s, prompt, 3, 1, logits), TP_OK);
    assert_int_equal(tp_session_n_ctx(s), (size_t)f->c.max_ctx);
    /* fixed once: a later, longer batch does not resize the regions */
    assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, 1, logits), TP_OK);
    assert_int_equal(tp_session_n_ctx(s), (size_t)f->c.max_ctx);
    tp_session_destroy(s);

    /* the default: 4096 clamped to tiny's 512 */
    assert_int_equal(tp_session_create(&f->c, f->w, NULL, &s), TP_OK);
    assert_int_equal(tp_session_forward(s, prompt, N_PROMPT, 1, logits), TP_OK);
    assert_int_equal(tp_session_n_ctx(s), 512);
    tp_session_destroy(s);
    free(logits);
}

/* ---- trace and dump -------------------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = '\0';
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

/* A dump file holds exactly n raw little-endian f32 values, bit-equal to want (when given),
 * whatever the host's byte order. */
static void assert_f32_file(const char *path, const float *want, size_t n)
{
    size_t len;
    char *raw = slurp(path, &len);
    assert_int_equal(len, n * 4);
    for (size_t i = 0; want && i < n; i++) {
        const unsigned char *b = (const unsigned char *)raw + 4 * i;
        uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                     (uint32_t)b[3] << 24, w;
        memcpy(&w, &want[i], sizeof w);
        if (u != w)
            fail_msg("%s: value %zu has bits %08x, expected %08x", path, i, (unsigned)u,
                     (unsigned)w);
    }
    free(raw);
}

static void test_trace_and_dump_files(void **state)
{
    fx *f = *state;
    size_t vocab = (size_t)f->c.vocab, nkv = (size_t)(f->c.n_head_kv * f->c.head_dim);
    char dir[] = "/tmp/tp_decode_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char trace_path[256], dump_dir[256], path[320];
    snprintf(trace_path, sizeof trace_path, "%s/trace.json", dir);
    snprintf(dump_dir, sizeof dump_dir, "%s/dump", dir);

    tp_trace *t = NULL;
    assert_int_equal(tp_trace_open(trace_path, &t), TP_OK);
    tp_session_options o = tp_session_options_default();
    o.exec.trace = t;
    o.queued_layers = 1;
    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&f->c, f->w, &o, &s), TP_OK);
    int32_t out[3];
    float *logits = malloc(vocab * sizeof *logits);
    assert_non_null(logits);
    assert_int_equal(tp_session_generate(s, prompt, N_PROMPT, 3, out, logits), TP_OK);
    assert_int_equal(tp_trace_runs(t), 3);
    assert_int_equal(tp_trace_close(t), TP_OK);
    assert_int_equal(tp_session_dump(s, dump_dir), TP_OK);

    /* the tracing run computes what an untraced run computes */
    run_out plain;
    tp_session_options po = tp_session_options_default();
    run_model(f, &po, &plain);
    assert_memory_equal(plain.tokens, out, sizeof out);

    size_t len;
    char *text = slurp(trace_path, &len);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    cJSON *runs = cJSON_GetObjectItem(root, "runs");
    assert_int_equal(cJSON_GetArraySize(runs), 3);
    cJSON *last = cJSON_GetArrayItem(runs, 2);
    assert_string_equal(cJSON_GetObjectItem(last, "kind")->valuestring, "decode");
    cJSON *nodes = cJSON_GetObjectItem(last, "nodes");
    const tp_graph *g = tp_session_graph(s);
    /* every node but the dead ones, in build order */
    size_t live = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        tp_bufref r;
        live += tp_alloc_node_buffer(tp_session_allocator(s), i, &r);
    }
    assert_int_equal((size_t)cJSON_GetArraySize(nodes), live);
    cJSON *first = cJSON_GetArrayItem(nodes, 0);
    assert_string_equal(cJSON_GetObjectItem(first, "name")->valuestring, "token_ids");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(first, "host_filled")));
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(first, "sample"), 0)->valueint,
                     out[1]);
    cJSON *lg = cJSON_GetArrayItem(nodes, cJSON_GetArraySize(nodes) - 1);
    assert_string_equal(cJSON_GetObjectItem(lg, "name")->valuestring, "logits");
    cJSON *stats = cJSON_GetObjectItem(lg, "stats");
    double mx = -INFINITY;
    for (size_t i = 0; i < vocab; i++)
        mx = fmax(mx, logits[i]);
    assert_true(fabs(cJSON_GetObjectItem(stats, "max")->valuedouble - mx) <= 1e-6 * fabs(mx));
    cJSON *sample = cJSON_GetObjectItem(lg, "sample");
    assert_int_equal(cJSON_GetArraySize(sample), TP_TRACE_SAMPLE);
    size_t step = vocab / TP_TRACE_SAMPLE;
    for (int i = 0; i < TP_TRACE_SAMPLE; i++)
        assert_true(fabs(cJSON_GetArrayItem(sample, i)->valuedouble - logits[(size_t)i * step]) <=
                    1e-6 * (1.0 + fabs(logits[(size_t)i * step])));
    cJSON_Delete(root);
    free(text);

    /* dumps: the last logits and every region, raw little-endian f32 */
    snprintf(path, sizeof path, "%s/logits.f32", dump_dir);
    assert_f32_file(path, logits, vocab);
    float *kv = NULL;
    size_t kv_n = 0;
    read_kv(s, f->c.n_layer, &kv, &kv_n);
    size_t region = kv_n / (2 * (size_t)f->c.n_layer);
    assert_int_equal(region, nkv * tp_session_n_ctx(s));
    for (int L = 0; L < f->c.n_layer; L++)
        for (int j = 0; j < 2; j++) {
            snprintf(path, sizeof path, "%s/kv.%d.%c.f32", dump_dir, L, j ? 'v' : 'k');
            assert_f32_file(path, kv + ((size_t)L * 2 + (size_t)j) * region, region);
            unlink(path);
        }
    free(kv);
    snprintf(path, sizeof path, "%s/logits.f32", dump_dir);
    unlink(path);
    rmdir(dump_dir);
    unlink(trace_path);
    rmdir(dir);
    free_run(&plain);
    free(logits);
    tp_session_destroy(s);
}

/* ---- the run command --------------------------------------------------------------------------- */

/* Runs the CLI with args (and an environment prefix, "" for none); out receives stdout
 * and stderr. */
static int run_cli_env(const char *env, const char *args, char *out, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", env, TP_CLI_PATH, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run_cli(const char *args, char *out, size_t cap)
{
    return run_cli_env("", args, out, cap);
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

static void test_run_command(void **state)
{
    fx *f = *state;
    static char out[16384];
    assert_int_equal(run_cli("run tiny --prompt-tokens 3,41,96,0,17,17,58 --max-new 5 --seed 42 "
                             "--queued-layers 2 --strategy arena --aliasing last-consumer",
                             out, sizeof out),
                     0);
    /* the same ids as the library run with seed 42 */
    run_out r;
    tp_session_options o = tp_session_options_default();
    o.kv_type = TP_DTYPE_F16; /* the command line's default cache */
    run_model(f, &o, &r);
    char want[128];
    snprintf(want, sizeof want, "generated (5 tokens): %d %d %d %d %d", r.tokens[0], r.tokens[1],
             r.tokens[2], r.tokens[3], r.tokens[4]);
    if (!strstr(out, want))
        fail_msg("'%s' not in:\n%s", want, out);
    assert_non_null(strstr(out, "prefill: 7 tokens"));
    assert_non_null(strstr(out, "decode: 4 tokens"));
    assert_non_null(strstr(out, "KV cache: n_ctx 512"));
    free_run(&r);
    /* the memory summary carries 'tensorplan model' figures */
    static char model_out[16384];
    assert_int_equal(run_cli("model tiny --prompt 7", model_out, sizeof model_out), 0);
    assert_int_equal(run_cli("run tiny --prompt-len 7 --max-new 2", out, sizeof out), 0);
    const char *kv_line = strstr(model_out, "KV cache:");
    assert_non_null(kv_line);
    char line[160];
    size_t k = 0;
    while (kv_line[k] && kv_line[k] != '\n' && k + 1 < sizeof line) {
        line[k] = kv_line[k];
        k++;
    }
    line[k] = '\0';
    assert_non_null(strstr(out, line));
    const char *pool_row = strstr(model_out, "  pool     sole-consumer");
    assert_non_null(pool_row);
    /* the row up to the planning time, which differs run to run */
    snprintf(line, 80, "%s", pool_row);
    assert_non_null(strstr(out, line));

    assert_int_equal(run_cli("run tiny --strategy bogus", out, sizeof out), 2);
    assert_int_equal(run_cli("run tiny --prompt-len 3 --prompt-tokens 1", out, sizeof out), 2);
    assert_int_equal(run_cli("run nosuchmodel", out, sizeof out), 2);
    assert_int_equal(run_cli("run tiny --prompt-tokens 1,200", out, sizeof out), 2);
    /* a context too small for the generation: refused before anything runs, naming n_ctx;
     * a generation that exactly fills it runs (its last token is never fed back) */
    assert_int_equal(run_cli("run tiny --prompt-len 4 --n-ctx 4 --max-new 3", out, sizeof out), 2);
    assert_non_null(strstr(out, "n_ctx is 4"));
    assert_int_equal(count_lines(out), 1);
    assert_null(strstr(out, "prefill:"));
    assert_int_equal(run_cli("run tiny --prompt-len 4 --n-ctx 5 --max-new 2", out, sizeof out), 0);
    assert_int_equal(run_cli("run qwen2.5-0.5b --prompt-len 16 --max-new 32768", out, sizeof out),
                     2);
    assert_non_null(strstr(out, "n_ctx is 4096"));
    /* --n-ctx 0, garbage ids, ids >= vocab: usage errors */
    assert_int_equal(run_cli("run tiny --n-ctx 0", out, sizeof out), 2);
    assert_int_equal(run_cli("run tiny --prompt-tokens 1,x", out, sizeof out), 2);
    assert_int_equal(run_cli("run tiny --prompt-tokens 1,,2", out, sizeof out), 2);
    snprintf(want, sizeof want, "run tiny --prompt-tokens %d", f->c.vocab);
    assert_int_equal(run_cli(want, out, sizeof out), 2);

    char dir[] = "/tmp/tp_run_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char args[1024], dot[300], json[300];
    snprintf(dot, sizeof dot, "%s/g.dot", dir);
    snprintf(json, sizeof json, "%s/g.json", dir);
    snprintf(args, sizeof args, "run tiny --prompt-len 5 --dump-graph %s --dump-graph-json %s",
             dot, json);
    assert_int_equal(run_cli(args, out, sizeof out), 0);
    struct stat sb;
    assert_int_equal(stat(dot, &sb), 0);
    assert_true(sb.st_size > 100);
    assert_int_equal(stat(json, &sb), 0);
    assert_true(sb.st_size > 100);
    assert_null(strstr(out, "generated"));
    unlink(dot);
    unlink(json);
    rmdir(dir);
}

/* TENSORPLAN_TRACE and TENSORPLAN_GRAPH_DUMP stand for --trace and --dump-dir. */
static void test_run_env_trace_and_dump(void **state)
{
    fx *f = *state;
    size_t vocab = (size_t)f->c.vocab, nkv = (size_t)(f->c.n_head_kv * f->c.head_dim);
    char dir[] = "/tmp/tp_run_env_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char env[600], path[400];
    snprintf(env, sizeof env, "TENSORPLAN_TRACE=%s/t.json TENSORPLAN_GRAPH_DUMP=%s/d", dir, dir);
    static char out[16384];
    /* prefill and one decode step: the dumped logits are the decode step's */
    assert_int_equal(run_cli_env(env, "run tiny --prompt-tokens 3,41,96,0,17,17,58 --seed 42 "
                                      "--max-new 2 --n-ctx 16", out, sizeof out), 0);
    run_out r;
    tp_session_options o = tp_session_options_default();
    o.kv_type = TP_DTYPE_F16; /* the command line's default cache */
    run_model(f, &o, &r);

    size_t len;
    snprintf(path, sizeof path, "%s/t.json", dir);
    char *text = slurp(path, &len);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "runs")), 2);
    cJSON_Delete(root);
    free(text);
    unlink(path);

    snprintf(path, sizeof path, "%s/d/logits.f32", dir);
    assert_f32_file(path, r.logits + vocab, vocab);
    unlink(path);
    for (int L = 0; L < f->c.n_layer; L++)
        for (int j = 0; j < 2; j++) {
            snprintf(path, sizeof path, "%s/d/kv.%d.%c.f32", dir, L, j ? 'v' : 'k');
            assert_f32_file(path, NULL, 16 * nkv); /* the whole region: n_ctx 16 rows */
            unlink(path);
        }
    snprintf(path, sizeof path, "%s/d", dir);
    rmdir(path);
    rmdir(dir);
    free_run(&r);
}

/* The library reads no environment variable: the command line maps
 * TENSORPLAN_NO_FUSE_FFN=1 onto the session's options, so the graph it builds keeps the
 * unfused mul(silu(gate), up) of every layer instead of one swiglu per layer. */
static size_t count_op_in_json(const char *path, const char *op)
{
    size_t len, n = 0;
    char *text = slurp(path, &len);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    const cJSON *node = NULL;
    cJSON_ArrayForEach(node, cJSON_GetObjectItem(root, "nodes"))
    {
        const cJSON *o = cJSON_GetObjectItem(node, "op");
        n += cJSON_IsString(o) && strcmp(o->valuestring, op) == 0;
    }
    cJSON_Delete(root);
    free(text);
    return n;
}

static void test_run_env_no_fuse_ffn(void **state)
{
    fx *f = *state;
    char dir[] = "/tmp/tp_run_fuse_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char args[600], json[400];
    static char out[4096];
    snprintf(json, sizeof json, "%s/g.json", dir);
    snprintf(args, sizeof args, "run tiny --prompt-len 5 --dump-graph-json %s", json);
    assert_int_equal(run_cli(args, out, sizeof out), 0);
    assert_int_equal(count_op_in_json(json, "swiglu"), (size_t)f->c.n_layer);
    assert_int_equal(run_cli_env("TENSORPLAN_NO_FUSE_FFN=1", args, out, sizeof out), 0);
    assert_int_equal(count_op_in_json(json, "swiglu"), 0);
    assert_int_equal(count_op_in_json(json, "silu"), (size_t)f->c.n_layer);
    unlink(json);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logits_match_reference_forward),
        cmocka_unit_test(test_bit_identical_across_strategies_policies_backends),
        cmocka_unit_test(test_fused_unfused_and_tail_rows_identical),
        cmocka_unit_test(test_thread_count_independent),
        cmocka_unit_test(test_kahn_liveness_gives_wrong_logits),
        cmocka_unit_test(test_host_copy_without_sync_reads_stale_data),
        cmocka_unit_test(test_kv_survives_rebuild_and_reuse_allocates_nothing),
        cmocka_unit_test(test_fusion_toggle_rebuilds_with_same_kv),
        cmocka_unit_test(test_n_ctx_rules_and_refusal),
        cmocka_unit_test(test_trace_and_dump_files),
        cmocka_unit_test(test_run_command),
        cmocka_unit_test(test_run_env_trace_and_dump),
        cmocka_unit_test(test_run_env_no_fuse_ffn),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
