/* Choosing the next token from logits (docs/sampling.md): greedy, or top-k, top-p and the
 * temperature in llama.cpp's order, then a draw with the sampler's own PRNG. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "model/splitmix.h"
#include "tensorplan/session.h"

typedef struct cand {
    float logit; /* NaN read as -infinity */
    int32_t id;
} cand;

struct tp_sampler {
    tp_sampler_params p;
    size_t n_vocab;
    uint64_t st[4]; /* xoshiro256** state */
    cand *c;
    int32_t *ids;
    double *probs;
};

tp_sampler_params tp_sampler_params_default(void)
{
    tp_sampler_params p;
    memset(&p, 0, sizeof p);
    p.temperature = 0.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.seed = 0;
    return p;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna): one 64-bit output. */
static uint64_t next_u64(uint64_t *s)
{
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

tp_status tp_sampler_create(const tp_sampler_params *params, size_t n_vocab, tp_sampler **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "tp_sampler_create: NULL argument");
    *out = NULL;
    tp_sampler_params p = params ? *params : tp_sampler_params_default();
    if (n_vocab == 0 || n_vocab > (size_t)INT32_MAX)
        return tp_fail(TP_ERR_INVALID, "sampler: a vocabulary of %zu ids", n_vocab);
    if (isnan(p.temperature))
        return tp_fail(TP_ERR_INVALID, "sampler: temperature is NaN");
    if (p.top_k < 0)
        return tp_fail(TP_ERR_INVALID, "sampler: top-k %d is negative", p.top_k);
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        return tp_fail(TP_ERR_INVALID, "sampler: top-p %g is not in (0, 1]", (double)p.top_p);
    tp_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return tp_fail(TP_ERR_NOMEM, "sampler: out of memory");
    s->p = p;
    s->n_vocab = n_vocab;
    s->c = malloc(n_vocab * sizeof *s->c);
    s->ids = malloc(n_vocab * sizeof *s->ids);
    s->probs = malloc(n_vocab * sizeof *s->probs);
    if (!s->c || !s->ids || !s->probs) {
        tp_sampler_destroy(s);
        return tp_fail(TP_ERR_NOMEM, "sampler: out of memory for %zu candidates", n_vocab);
    }
    for (int i = 0; i < 4; i++)
        s->st[i] = tp_splitmix_at(p.seed, (uint64_t)i);
    *out = s;
    return TP_OK;
}

void tp_sampler_destroy(tp_sampler *s)
{
    if (!s)
        return;
    free(s->c);
    free(s->ids);
    free(s->probs);
    free(s);
}

size_t tp_sampler_n_vocab(const tp_sampler *s)
{
    return s ? s->n_vocab : 0;
}

/* Largest logit first, ties by lower id. */
static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* 1 when a ranks below b (a smaller logit, or an equal one with a larger id). */
static int worse(const cand *a, const cand *b)
{
    return cand_cmp(a, b) > 0;
}

static void sift_down(cand *h, size_t n, size_t i)
{
    for (;;) {
        size_t m = i, l = 2 * i + 1, r = l + 1;
        if (l < n && worse(&h[l], &h[m]))
            m = l;
        if (r < n && worse(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The k best of c[0..n) into c[0..k), sorted best first: a heap of the k best seen so far
 * (its root the worst of them), O(n log k), then a sort of the k. */
static void top_k(cand *c, size_t n, size_t k)
{
    for (size_t i = k / 2; i-- > 0;)
        sift_down(c, k, i);
    for (size_t i = k; i < n; i++)
        if (worse(&c[0], &c[i])) {
            c[0] = c[i];
            sift_down(c, k, 0);
        }
    qsort(c, k, sizeof *c, cand_cmp);
}

/* softmax(c[i].logit / t) over c[0..n) (sorted, largest first) into probs, in double. */
static void softmax(const cand *c, size_t n, double t, double *probs)
{
    const double top = (double)c[0].logit / t;
    if (!isfinite(top)) { /* all -inf, or +inf at the top: the first one */
        for (size_t i = 0; i < n; i++)
            probs[i] = i == 0;
        return;
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        probs[i] = exp((double)c[i].logit / t - top);
        sum += probs[i];
    }
    for (size_t i = 0; i < n; i++)
        probs[i] /= sum;
}

tp_status tp_sampler_candidates(tp_sampler *s, const float *logits, int32_t *ids, double *probs,
                                size_t *n)
{
    if (!s || !logits || !ids || !n)
        return tp_fail(TP_ERR_INVALID, "tp_sampler_candidates: NULL argument");
    double *pr = probs ? probs : s->probs;
    if (!(s->p.temperature > 0.0f)) {
        ids[0] = tp_argmax(logits, s->n_vocab);
        pr[0] = 1.0;
        *n = 1;
        return TP_OK;
    }
    size_t k = s->n_vocab;
    for (size_t i = 0; i < k; i++) {
        s->c[i].logit = isnan(logits[i]) ? -INFINITY : logits[i];
        s->c[i].id = (int32_t)i;
    }
    if (s->p.top_k > 0 && (size_t)s->p.top_k < k) {
        k = (size_t)s->p.top_k;
        top_k(s->c, s->n_vocab, k);
    } else {
        qsort(s->c, k, sizeof *s->c, cand_cmp);
    }
    if (s->p.top_p < 1.0f) {
        softmax(s->c, k, 1.0, pr);
        double cum = 0.0;
        for (size_t i = 0; i < k; i++) {
            cum += pr[i];
            if (cum >= (double)s->p.top_p) {
                k = i + 1;
                break;
            }
        }
    }
    softmax(s->c, k, (double)s->p.temperature, pr);
    for (size_t i = 0; i < k; i++)
        ids[i] = s->c[i].id;
    *n = k;
    return TP_OK;
}

tp_status tp_sampler_sample(tp_sampler *s, const float *logits, int32_t *id)
{
    if (!s || !logits || !id)
        return tp_fail(TP_ERR_INVALID, "tp_sampler_sample: NULL argument");
    size_t n = 0;
    TP_TRY(tp_sampler_candidates(s, logits, s->ids, s->probs, &n));
    if (!(s->p.temperature > 0.0f)) { /* greedy: the one argmax, no PRNG step */
        *id = s->ids[0];
        return TP_OK;
    }
    /* a uniform double in [0, 1) from the top 53 bits */
    const double u = (double)(next_u64(s->st) >> 11) * (1.0 / 9007199254740992.0);
    double cum = 0.0;
    *id = s->ids[n - 1];
    for (size_t i = 0; i < n; i++) {
        cum += s->probs[i];
        if (u < cum) {
            *id = s->ids[i];
            break;
        }
    }
    return TP_OK;
}
