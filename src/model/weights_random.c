/* Random initialisation of a model config's weights (declared in tensorplan/model.h). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "common/error.h"
#include "common/hash.h"
#include "model/splitmix.h"
#include "tensorplan/model.h"
#include "tensorplan/weights.h"

/* ---- random initialisation ------------------------------------------------------------------ */

typedef struct fill_job {
    float *data;
    size_t begin, end; /* element range, begin even */
    uint64_t state;
    float center, a;
} fill_job;

/* Uniform on [center - a, center + a] with a = std * sqrt(3): the requested standard
 * deviation, bounded values (no outliers to blow up a deep stack), and cheap enough for the
 * half a billion values of the 0.5B shapes. Two 24-bit uniforms per draw. */
static void *fill_range(void *arg)
{
    fill_job *j = arg;
    for (size_t i = j->begin; i < j->end; i += 2) {
        uint64_t r = tp_splitmix_at(j->state, i / 2);
        float u0 = (float)(r >> 40) * (1.0f / 16777216.0f);
        float u1 = (float)((r >> 8) & 0xffffffu) * (1.0f / 16777216.0f);
        j->data[i] = j->center + j->a * (2.0f * u0 - 1.0f);
        if (i + 1 < j->end)
            j->data[i + 1] = j->center + j->a * (2.0f * u1 - 1.0f);
    }
    return NULL;
}

static void fill_uniform(float *data, size_t n, uint64_t seed, const char *name, float center,
                         float std)
{
    fill_job jobs[2];
    size_t half = n > (1u << 20) ? (n / 2) & ~(size_t)1 : n;
    for (int k = 0; k < 2; k++) {
        jobs[k].data = data;
        jobs[k].begin = k ? half : 0;
        jobs[k].end = k ? n : half;
        jobs[k].state = seed ^ tp_hash_name(name);
        jobs[k].center = center;
        jobs[k].a = std * 1.7320508f;
    }
    pthread_t tid;
    int threaded = half < n && pthread_create(&tid, NULL, fill_range, &jobs[1]) == 0;
    fill_range(&jobs[0]);
    if (threaded)
        pthread_join(tid, NULL);
    else if (half < n)
        fill_range(&jobs[1]);
}

static tp_status add_random(tp_weights *w, uint64_t seed, const char *name, size_t rows,
                            size_t cols, float center, float std)
{
    float *data = NULL;
    tp_status st = tp_weights_add(w, name, rows, cols, &data);
    if (st != TP_OK)
        return st;
    fill_uniform(data, rows * cols, seed, name, center, std);
    return TP_OK;
}

tp_status tp_weights_init_random(const tp_model_config *c, uint64_t seed, tp_weights **out)
{
    if (!c || !out)
        return tp_fail(TP_ERR_INVALID, "weights: NULL argument");
    if (c->n_embd <= 0 || c->n_head <= 0 || c->n_head_kv <= 0 || c->head_dim <= 0 ||
        c->n_ff <= 0 || c->n_layer <= 0 || c->vocab <= 0)
        return tp_fail(TP_ERR_INVALID, "weights: config '%s' has a non-positive dimension",
                       c->name);
    tp_weights *w = NULL;
    tp_status st = tp_weights_create(&w);
    if (st != TP_OK)
        return st;
    size_t ne = (size_t)c->n_embd, nf = (size_t)c->n_ff, vocab = (size_t)c->vocab;
    size_t nq = (size_t)c->n_head * (size_t)c->head_dim;
    size_t nkv = (size_t)c->n_head_kv * (size_t)c->head_dim;
    float s_e = 1.0f / sqrtf((float)ne), s_q = 1.0f / sqrtf((float)nq);
    float s_f = 1.0f / sqrtf((float)nf);
    const float norm_spread = 0.05f / 1.7320508f, bias_std = 0.02f;
    char name[TP_NAME_MAX];

#define ADD(nm, r, cc, center, std)                                                          \
    do {                                                                                     \
        st = add_random(w, seed, (nm), (r), (cc), (center), (std));                        \
        if (st != TP_OK)                                                                     \
            goto fail;                                                                       \
    } while (0)
#define LNAME(fmt)                                                                           \
    (snprintf(name, sizeof name, "blk.%d." fmt, L), name)

    /* the embedding doubles as lm_head when tied: rows of norm ~1 suit both uses */
    ADD("token_embd.weight", vocab, ne, 0.0f, s_e);
    for (int L = 0; L < c->n_layer; L++) {
        ADD(LNAME("attn_norm.weight"), 1, ne, 1.0f, norm_spread);
        ADD(LNAME("attn_q.weight"), nq, ne, 0.0f, s_e);
        ADD(LNAME("attn_k.weight"), nkv, ne, 0.0f, s_e);
        ADD(LNAME("attn_v.weight"), nkv, ne, 0.0f, s_e);
        if (c->qkv_bias) {
            ADD(LNAME("attn_q.bias"), 1, nq, 0.0f, bias_std);
            ADD(LNAME("attn_k.bias"), 1, nkv, 0.0f, bias_std);
            ADD(LNAME("attn_v.bias"), 1, nkv, 0.0f, bias_std);
        }
        ADD(LNAME("attn_output.weight"), ne, nq, 0.0f, s_q);
        if (c->attn_out_bias)
            ADD(LNAME("attn_output.bias"), 1, ne, 0.0f, bias_std);
        ADD(LNAME("ffn_norm.weight"), 1, ne, 1.0f, norm_spread);
        ADD(LNAME("ffn_gate.weight"), nf, ne, 0.0f, s_e);
        ADD(LNAME("ffn_up.weight"), nf, ne, 0.0f, s_e);
        ADD(LNAME("ffn_down.weight"), ne, nf, 0.0f, s_f);
        if (c->ffn_bias) {
            ADD(LNAME("ffn_gate.bias"), 1, nf, 0.0f, bias_std);
            ADD(LNAME("ffn_up.bias"), 1, nf, 0.0f, bias_std);
            ADD(LNAME("ffn_down.bias"), 1, ne, 0.0f, bias_std);
        }
    }
    ADD("output_norm.weight", 1, ne, 1.0f, norm_spread);
    if (!c->tied_embeddings)
        ADD("output.weight", vocab, ne, 0.0f, s_e);
    if (c->output_bias)
        ADD("output.bias", 1, vocab, 0.0f, bias_std);
    /* divisors of theta as Llama 3 files carry them: at least 1, from 1.07 to 1.93 here */
    if (c->rope_freqs)
        ADD("rope_freqs.weight", 1, (size_t)c->head_dim / 2, 1.5f, 0.25f);
#undef ADD
#undef LNAME
    *out = w;
    return TP_OK;
fail:
    tp_weights_destroy(w);
    return st;
}
