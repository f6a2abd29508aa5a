/* Random initialisation of a model config's weights (declared in tensorplan/model.h). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "common/error.h"
#include "common/hash.h"
#include "model/splitmix.h"
#include "tensorplan/model.h"
#include "tensorplan/model_family.h"
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

/* The spread of the uniform draws of one tensor (tensorplan/model_family.h). The embedding
 * doubles as lm_head when tied: rows of norm ~1 suit both uses. */
static void init_spread(const tp_model_tensor *t, size_t cols, float *center, float *std)
{
    switch (t->init) {
    case TP_INIT_NORM: *center = 1.0f, *std = 0.05f / 1.7320508f; return;
    case TP_INIT_BIAS: *center = 0.0f, *std = 0.02f; return;
    /* divisors of theta as Llama 3 files carry them: at least 1, from 1.07 to 1.93 here */
    case TP_INIT_ROPE_FREQS: *center = 1.5f, *std = 0.25f; return;
    case TP_INIT_MATRIX: break;
    }
    *center = 0.0f;
    *std = 1.0f / sqrtf((float)cols);
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
    TP_TRY(tp_weights_create(&w));
    size_t n = 0;
    const tp_model_tensor *t = tp_model_tensors(&n);
    char name[TP_NAME_MAX];
    tp_status st = TP_OK;
    /* every tensor the flags ask for, in a file's order: the global ones, then layer after
     * layer */
    for (int pass = 0; pass < 2 && st == TP_OK; pass++) {
        for (int l = 0; l < (pass ? c->n_layer : 1) && st == TP_OK; l++) {
            for (size_t i = 0; i < n && st == TP_OK; i++) {
                if (t[i].per_layer != pass || !tp_model_group_present(c, t[i].group))
                    continue;
                const size_t cols = (size_t)tp_model_tensor_dim(c, t[i].ne0);
                const size_t rows = (size_t)tp_model_tensor_dim(c, t[i].ne1);
                float center, std;
                init_spread(&t[i], cols, &center, &std);
                tp_model_tensor_name(&t[i], l, name, sizeof name);
                st = add_random(w, seed, name, rows, cols, center, std);
            }
        }
    }
    if (st != TP_OK) {
        tp_weights_destroy(w);
        return st;
    }
    *out = w;
    return TP_OK;
}
