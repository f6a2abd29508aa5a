/* The sampler (docs/sampling.md) against rules restated here: greedy is the first argmax,
 * top-k 1 is greedy at any temperature, a seed reproduces its draws, the kept set of top-k
 * and top-p is the one this test computes by sorting, the draw frequencies follow the
 * softmax with temperature of that set (chi-square), and the per-token callback of the
 * generation loop stops it, with the tokens of a greedy loop written here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/xorshift.h"
#include "tensorplan/session.h"
#include "tensorplan/model.h"

static double uniform(tpt_rng *r)
{
    return (double)(tpt_rng_next(r) >> 11) / 9007199254740992.0;
}

/* logits with deliberate ties: values on a grid of 0.25 */
static void random_logits(tpt_rng *r, float *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        l[i] = (float)((double)(tpt_rng_next(r) % 33) * 0.25 - 4.0);
}

static int32_t first_argmax(const float *l, size_t n)
{
    size_t best = 0;
    for (size_t i = 0; i < n; i++)
        if (l[i] > l[best])
            best = i;
    return (int32_t)best;
}

static tp_sampler *make(float temp, int top_k, float top_p, uint64_t seed, size_t n)
{
    tp_sampler_params p = tp_sampler_params_default();
    p.temperature = temp;
    p.top_k = top_k;
    p.top_p = top_p;
    p.seed = seed;
    tp_sampler *s = NULL;
    assert_int_equal(tp_sampler_create(&p, n, &s), TP_OK);
    return s;
}

static void test_greedy_and_top1(void **state)
{
    (void)state;
    enum { N = 50 };
    tpt_rng r = tpt_rng_seeded(11);
    float l[N];
    static const float temps[] = {0.1f, 0.8f, 1.0f, 3.0f, 100.0f};
    for (int trial = 0; trial < 200; trial++) {
        random_logits(&r, l, N);
        const int32_t want = first_argmax(l, N);
        tp_sampler *g = make(0.0f, 0, 1.0f, (uint64_t)trial, N);
        int32_t id = -1;
        assert_int_equal(tp_sampler_sample(g, l, &id), TP_OK);
        assert_int_equal(id, want);
        tp_sampler_destroy(g);
        for (size_t t = 0; t < sizeof temps / sizeof *temps; t++) {
            tp_sampler *s = make(temps[t], 1, 1.0f, (uint64_t)trial, N);
            for (int k = 0; k < 3; k++) {
                assert_int_equal(tp_sampler_sample(s, l, &id), TP_OK);
                assert_int_equal(id, want);
            }
            tp_sampler_destroy(s);
        }
    }
}

static void test_seed_reproducible(void **state)
{
    (void)state;
    enum { N = 20, DRAWS = 500 };
    float l[N];
    for (size_t i = 0; i < N; i++)
        l[i] = (float)i * 0.1f; /* near uniform: draws spread over many ids */
    int32_t a[DRAWS], b[DRAWS], c[DRAWS];
    tp_sampler *s1 = make(1.0f, 0, 1.0f, 42, N), *s2 = make(1.0f, 0, 1.0f, 42, N),
               *s3 = make(1.0f, 0, 1.0f, 43, N);
    for (int i = 0; i < DRAWS; i++) {
        assert_int_equal(tp_sampler_sample(s1, l, &a[i]), TP_OK);
        assert_int_equal(tp_sampler_sample(s2, l, &b[i]), TP_OK);
        assert_int_equal(tp_sampler_sample(s3, l, &c[i]), TP_OK);
        assert_true(a[i] >= 0 && a[i] < N);
    }
    assert_memory_equal(a, b, sizeof a);
    size_t same = 0;
    for (int i = 0; i < DRAWS; i++)
        same += a[i] == c[i];
    /* another seed: agreement near 1/20 of the draws by chance, far below all of them */
    assert_true(same < DRAWS / 4);
    tp_sampler_destroy(s1);
    tp_sampler_destroy(s2);
    tp_sampler_destroy(s3);
}

/* The kept set restated: sort by logit descending (ties: lower id), keep k, then the
 * smallest prefix whose softmax mass (temperature 1, over the k) reaches p; probabilities
 * are the softmax of the kept logits / temp. Returns the count. */
static size_t oracle(const float *l, size_t n, int top_k, double top_p, double temp,
                     int32_t *ids, double *probs)
{
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)i;
    for (size_t i = 1; i < n; i++) /* insertion sort */
        for (size_t j = i; j > 0; j--) {
            const int32_t x = ids[j - 1], y = ids[j];
            if (l[y] > l[x] || (l[y] == l[x] && y < x)) {
                ids[j - 1] = y;
                ids[j] = x;
            }
        }
    size_t k = top_k > 0 && (size_t)top_k < n ? (size_t)top_k : n;
    if (top_p < 1.0) {
        double z = 0.0, cum = 0.0;
        for (size_t i = 0; i < k; i++)
            z += exp((double)l[ids[i]] - (double)l[ids[0]]);
        for (size_t i = 0; i < k; i++) {
            cum += exp((double)l[ids[i]] - (double)l[ids[0]]) / z;
            if (cum >= top_p) {
                k = i + 1;
                break;
            }
        }
    }
    double z = 0.0;
    for (size_t i = 0; i < k; i++)
        z += exp(((double)l[ids[i]] - (double)l[ids[0]]) / temp);
    for (size_t i = 0; i < k; i++)
        probs[i] = exp(((double)l[ids[i]] - (double)l[ids[0]]) / temp) / z;
    return k;
}

static void test_kept_set(void **state)
{
    (void)state;
    enum { N = 40 };
    tpt_rng r = tpt_rng_seeded(5);
    float l[N];
    int32_t ids[N], want_ids[N];
    double probs[N], want_probs[N];
    static const float ps[] = {0.05f, 0.3f, 0.5f, 0.75f, 0.9f, 0.99f, 1.0f};
    static const int ks[] = {0, 1, 3, 10, 40, 100};
    for (int trial = 0; trial < 40; trial++) {
        for (size_t i = 0; i < N; i++)
            l[i] = (float)(uniform(&r) * 8.0 - 4.0);
        if (trial % 2)
            random_logits(&r, l, N);
        for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++)
            for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
                const double temp = 0.5 + 0.25 * (trial % 5);
                tp_sampler *s = make((float)temp, ks[ki], ps[pi], 1, N);
                size_t n = 0;
                assert_int_equal(tp_sampler_candidates(s, l, ids, probs, &n), TP_OK);
                size_t want = oracle(l, N, ks[ki], ps[pi], temp, want_ids, want_probs);
                assert_int_equal(n, want);
                assert_memory_equal(ids, want_ids, n * sizeof *ids);
                for (size_t i = 0; i < n; i++)
                    assert_true(fabs(probs[i] - want_probs[i]) < 1e-12);
                tp_sampler_destroy(s);
            }
    }
    /* top-p keeps exactly the smallest prefix: probabilities 0.5, 0.3, 0.15, 0.05 (logs);
     * p 0.7 -> 2 ids (0.5 < 0.7 <= 0.8), p 0.85 -> 3, p 0.5 -> 1, p 0.81 -> 3 */
    const float q[4] = {(float)log(0.15), (float)log(0.5), (float)log(0.05), (float)log(0.3)};
    const struct { float p; size_t n; } cases[] = {{0.7f, 2}, {0.85f, 3}, {0.4f, 1}, {0.81f, 3},
                                                   {0.96f, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        tp_sampler *s = make(1.0f, 0, cases[c].p, 1, 4);
        size_t n = 0;
        assert_int_equal(tp_sampler_candidates(s, q, ids, probs, &n), TP_OK);
        assert_int_equal(n, cases[c].n);
        static const int32_t order[4] = {1, 3, 0, 2};
        assert_memory_equal(ids, order, n * sizeof *ids);
        tp_sampler_destroy(s);
    }
}

/* Chi-square of the draw counts against the oracle's probabilities. */
static void check_distribution(const float *l, size_t n, int top_k, float top_p, float temp,
                               uint64_t seed)
{
    enum { DRAWS = 60000 };
    int32_t ids[16];
    double probs[16];
    size_t kept = oracle(l, n, top_k, top_p, temp, ids, probs);
    size_t counts[16] = {0};
    tp_sampler *s = make(temp, top_k, top_p, seed, n);
    for (int d = 0; d < DRAWS; d++) {
        int32_t id = -1;
        assert_int_equal(tp_sampler_sample(s, l, &id), TP_OK);
        assert_true(id >= 0 && (size_t)id < n);
        counts[id]++;
    }
    tp_sampler_destroy(s);
    double chi2 = 0.0;
    size_t in_set = 0;
    for (size_t i = 0; i < kept; i++) {
        const double e = probs[i] * DRAWS;
        const double o = (double)counts[ids[i]];
        chi2 += (o - e) * (o - e) / e;
        in_set += counts[ids[i]];
    }
    /* nothing outside the kept set is ever drawn */
    assert_int_equal(in_set, DRAWS);
    /* the 0.999 quantile of chi-square with df <= 7 is below 24.4 */
    if (!(chi2 < 24.4)) {
        fprintf(stderr, "chi2 %.2f with %zu ids (k %d, p %.2f, t %.2f)\n", chi2, kept, top_k,
                (double)top_p, (double)temp);
        fail();
    }
}

static void test_distribution(void **state)
{
    (void)state;
    const float l[8] = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.5f, 0.0f, 2.2f};
    check_distribution(l, 8, 0, 1.0f, 1.0f, 1);
    check_distribution(l, 8, 0, 1.0f, 0.7f, 2);
    check_distribution(l, 8, 4, 1.0f, 1.5f, 3);
    check_distribution(l, 8, 0, 0.8f, 0.9f, 4);
    check_distribution(l, 8, 5, 0.9f, 2.0f, 5);
}

static void test_refusals(void **state)
{
    (void)state;
    tp_sampler_params p = tp_sampler_params_default();
    tp_sampler *s = NULL;
    assert_int_equal(tp_sampler_create(&p, 0, &s), TP_ERR_INVALID);
    p.top_p = 0.0f;
    assert_int_equal(tp_sampler_create(&p, 4, &s), TP_ERR_INVALID);
    p.top_p = 1.5f;
    assert_int_equal(tp_sampler_create(&p, 4, &s), TP_ERR_INVALID);
    p = tp_sampler_params_default();
    p.top_k = -1;
    assert_int_equal(tp_sampler_create(&p, 4, &s), TP_ERR_INVALID);
    p = tp_sampler_params_default();
    p.temperature = NAN;
    assert_int_equal(tp_sampler_create(&p, 4, &s), TP_ERR_INVALID);
    assert_null(s);
}

typedef struct seen {
    int32_t ids[16];
    size_t n, stop_at;
} seen;

static int on_token(void *user, int32_t id, size_t index)
{
    seen *s = user;
    assert_int_equal(index, s->n);
    s->ids[s->n++] = id;
    return index + 1 == s->stop_at;
}

/* The generation loop with a callback: greedy tokens equal a loop of forwards and argmax
 * written here; the callback sees each id; a stop ends it without a further forward. */
static void test_generate_callback(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(&c, 3, &w), TP_OK);
    const int32_t prompt[4] = {5, 17, 2, 40};
    const size_t vocab = (size_t)c.vocab;
    float *l = malloc(vocab * sizeof *l);
    assert_non_null(l);

    /* the oracle loop: forward, the first argmax, forward that token, ... */
    tp_session *ref = NULL;
    assert_int_equal(tp_session_create(&c, w, NULL, &ref), TP_OK);
    int32_t want[6];
    assert_int_equal(tp_session_forward(ref, prompt, 4, 1, l), TP_OK);
    for (int i = 0; i < 6; i++) {
        want[i] = first_argmax(l, vocab);
        assert_int_equal(tp_session_forward(ref, &want[i], 1, 1, l), TP_OK);
    }
    tp_session_destroy(ref);

    tp_session *s = NULL;
    assert_int_equal(tp_session_create(&c, w, NULL, &s), TP_OK);
    seen sn = {.n = 0, .stop_at = 4};
    tp_generate_options o = {NULL, on_token, &sn};
    int32_t out[6];
    size_t n = 0;
    assert_int_equal(tp_session_generate_with(s, prompt, 4, 6, &o, out, &n, NULL), TP_OK);
    assert_int_equal(n, 4);
    assert_int_equal(sn.n, 4);
    assert_memory_equal(out, want, 4 * sizeof *out);
    assert_memory_equal(sn.ids, want, 4 * sizeof *out);
    /* prefill and three decode steps: none for a fifth token */
    assert_int_equal(tp_session_get_stats(s).forwards, 4);
    tp_session_destroy(s);

    /* a greedy sampler object gives the same tokens; top-k 1 at temperature 5 too */
    for (int variant = 0; variant < 2; variant++) {
        tp_sampler *smp = variant ? make(5.0f, 1, 1.0f, 9, vocab) : make(0.0f, 0, 1.0f, 0, vocab);
        assert_int_equal(tp_session_create(&c, w, NULL, &s), TP_OK);
        tp_generate_options og = {smp, NULL, NULL};
        assert_int_equal(tp_session_generate_with(s, prompt, 4, 6, &og, out, &n, NULL), TP_OK);
        assert_int_equal(n, 6);
        assert_memory_equal(out, want, sizeof want);
        tp_session_destroy(s);
        tp_sampler_destroy(smp);
    }
    /* a sampler of another vocabulary size is refused */
    tp_sampler *other = make(1.0f, 0, 1.0f, 0, vocab + 1);
    assert_int_equal(tp_session_create(&c, w, NULL, &s), TP_OK);
    tp_generate_options ob = {other, NULL, NULL};
    assert_int_equal(tp_session_generate_with(s, prompt, 4, 2, &ob, out, &n, NULL),
                     TP_ERR_INVALID);
    tp_session_destroy(s);
    tp_sampler_destroy(other);
    free(l);
    tp_weights_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_and_top1),
        cmocka_unit_test(test_seed_reproducible),
        cmocka_unit_test(test_kept_set),
        cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_generate_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
