/* The reference forward pass: the formulas of engine.md section 2, written as loops. */
#include "ref_forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ref_model {
    const tp_model_config *c;
    const tp_weights *w;
    size_t n_ctx, n_past;
    double **K, **V; /* per layer: n_ctx rows of n_head_kv * head_dim */
};

int ref_model_create(const tp_model_config *config, const tp_weights *weights, size_t n_ctx,
                     ref_model **out)
{
    ref_model *m = calloc(1, sizeof *m);
    if (!m)
        return -1;
    m->c = config;
    m->w = weights;
    m->n_ctx = n_ctx;
    size_t nl = (size_t)config->n_layer, kv = (size_t)config->n_head_kv * config->head_dim;
    m->K = calloc(nl, sizeof *m->K);
    m->V = calloc(nl, sizeof *m->V);
    if (!m->K || !m->V) {
        ref_model_destroy(m);
        return -1;
    }
    for (size_t l = 0; l < nl; l++) {
        m->K[l] = calloc(n_ctx * kv, sizeof(double));
        m->V[l] = calloc(n_ctx * kv, sizeof(double));
        if (!m->K[l] || !m->V[l]) {
            ref_model_destroy(m);
            return -1;
        }
    }
    *out = m;
    return 0;
}

void ref_model_destroy(ref_model *m)
{
    if (!m)
        return;
    for (int l = 0; l < m->c->n_layer; l++) {
        if (m->K)
            free(m->K[l]);
        if (m->V)
            free(m->V[l]);
    }
    free(m->K);
    free(m->V);
    free(m);
}

size_t ref_model_n_past(const ref_model *m)
{
    return m->n_past;
}

const double *ref_model_k(const ref_model *m, int layer)
{
    return m->K[layer];
}

const double *ref_model_v(const ref_model *m, int layer)
{
    return m->V[layer];
}

static const float *wt(const ref_model *m, const char *name)
{
    const tp_weight *t = tp_weights_find(m->w, name);
    return t ? t->data : NULL;
}

static const float *lw(const ref_model *m, int layer, const char *suffix)
{
    char name[TP_NAME_MAX];
    snprintf(name, sizeof name, "blk.%d.%s", layer, suffix);
    return wt(m, name);
}

/* y[r] = sum_i W[r][i] x[i] (+ b[r]) */
static void matvec(const float *W, const float *b, const double *x, size_t n_in, size_t n_out,
                   double *y)
{
    for (size_t r = 0; r < n_out; r++) {
        double s = b ? b[r] : 0.0;
        for (size_t i = 0; i < n_in; i++)
            s += (double)W[r * n_in + i] * x[i];
        y[r] = s;
    }
}

static void rmsnorm(const double *x, const float *w, size_t d, double eps, double *y)
{
    double ss = 0;
    for (size_t i = 0; i < d; i++)
        ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / (double)d + eps);
    for (size_t i = 0; i < d; i++)
        y[i] = x[i] * inv * w[i];
}

static void rope(double *x, size_t n_head, size_t hd, size_t pos, double base)
{
    for (size_t h = 0; h < n_head; h++)
        for (size_t i = 0; i < hd / 2; i++) {
            double theta = (double)pos * pow(base, -2.0 * (double)i / (double)hd);
            double a = x[h * hd + i], b = x[h * hd + i + hd / 2];
            x[h * hd + i] = a * cos(theta) - b * sin(theta);
            x[h * hd + i + hd / 2] = a * sin(theta) + b * cos(theta);
        }
}

int ref_model_forward(ref_model *m, const int32_t *tokens, size_t n, double *logits)
{
    const tp_model_config *c = m->c;
    const size_t ne = (size_t)c->n_embd, nh = (size_t)c->n_head, nkvh = (size_t)c->n_head_kv;
    const size_t hd = (size_t)c->head_dim, nf = (size_t)c->n_ff, vocab = (size_t)c->vocab;
    const size_t nq = nh * hd, nkv = nkvh * hd, group = nh / nkvh;
    if (m->n_past + n > m->n_ctx)
        return -1;
    const float *embd = wt(m, "token_embd.weight");
    const float *onorm = wt(m, "output_norm.weight");
    const float *head = c->tied_embeddings ? embd : wt(m, "output.weight");
    if (!embd || !onorm || !head)
        return -1;

    double *h = calloc(n * ne, sizeof *h), *x = calloc(ne, sizeof *x);
    double *q = calloc(n * nq, sizeof *q), *k = calloc(nkv, sizeof *k), *v = calloc(nkv, sizeof *v);
    double *att = calloc(nq, sizeof *att), *o = calloc(ne, sizeof *o);
    double *g = calloc(nf, sizeof *g), *u = calloc(nf, sizeof *u);
    double *sc = calloc(m->n_ctx, sizeof *sc);
    int rc = -1;
    if (!h || !x || !q || !k || !v || !att || !o || !g || !u || !sc)
        goto done;
    for (size_t t = 0; t < n; t++) {
        if (tokens[t] < 0 || (size_t)tokens[t] >= vocab)
            goto done;
        for (size_t i = 0; i < ne; i++)
            h[t * ne + i] = embd[(size_t)tokens[t] * ne + i];
    }
    for (int L = 0; L < c->n_layer; L++) {
        const float *an = lw(m, L, "attn_norm.weight"), *fn = lw(m, L, "ffn_norm.weight");
        const float *wq = lw(m, L, "attn_q.weight"), *wk = lw(m, L, "attn_k.weight");
        const float *wv = lw(m, L, "attn_v.weight"), *wo = lw(m, L, "attn_output.weight");
        const float *bq = c->qkv_bias ? lw(m, L, "attn_q.bias") : NULL;
        const float *bk = c->qkv_bias ? lw(m, L, "attn_k.bias") : NULL;
        const float *bv = c->qkv_bias ? lw(m, L, "attn_v.bias") : NULL;
        const float *wg = lw(m, L, "ffn_gate.weight"), *wu = lw(m, L, "ffn_up.weight");
        const float *wd = lw(m, L, "ffn_down.weight");
        if (!an || !fn || !wq || !wk || !wv || !wo || !wg || !wu || !wd ||
            (c->qkv_bias && (!bq || !bk || !bv)))
            goto done;
        /* every token's K and V first: a token attends to the earlier ones of its own batch */
        for (size_t t = 0; t < n; t++) {
            size_t pos = m->n_past + t;
            rmsnorm(h + t * ne, an, ne, c->rms_eps, x);
            matvec(wq, bq, x, ne, nq, q + t * nq);
            matvec(wk, bk, x, ne, nkv, k);
            matvec(wv, bv, x, ne, nkv, v);
            rope(q + t * nq, nh, hd, pos, c->rope_base);
            rope(k, nkvh, hd, pos, c->rope_base);
            memcpy(m->K[L] + pos * nkv, k, nkv * sizeof *k);
            memcpy(m->V[L] + pos * nkv, v, nkv * sizeof *v);
        }
        for (size_t t = 0; t < n; t++) {
            size_t pos = m->n_past + t;
            for (size_t hh = 0; hh < nh; hh++) {
                size_t kvh = hh / group;
                const double *qh = q + t * nq + hh * hd;
                double mx = -INFINITY, sum = 0;
                for (size_t j = 0; j <= pos; j++) {
                    double d = 0;
                    for (size_t i = 0; i < hd; i++)
                        d += qh[i] * m->K[L][j * nkv + kvh * hd + i];
                    sc[j] = d / sqrt((double)hd);
                    if (sc[j] > mx)
                        mx = sc[j];
                }
                for (size_t j = 0; j <= pos; j++) {
                    sc[j] = exp(sc[j] - mx);
                    sum += sc[j];
                }
                for (size_t i = 0; i < hd; i++) {
                    double acc = 0;
                    for (size_t j = 0; j <= pos; j++)
                        acc += sc[j] / sum * m->V[L][j * nkv + kvh * hd + i];
                    att[hh * hd + i] = acc;
                }
            }
            double *ht = h + t * ne;
            matvec(wo, NULL, att, nq, ne, o);
            for (size_t i = 0; i < ne; i++)
                ht[i] += o[i];
            rmsnorm(ht, fn, ne, c->rms_eps, x);
            matvec(wg, NULL, x, ne, nf, g);
            matvec(wu, NULL, x, ne, nf, u);
            for (size_t i = 0; i < nf; i++)
                g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
            matvec(wd, NULL, g, nf, ne, o);
            for (size_t i = 0; i < ne; i++)
                ht[i] += o[i];
        }
    }
    for (size_t t = 0; t < n; t++) {
        rmsnorm(h + t * ne, onorm, ne, c->rms_eps, x);
        matvec(head, NULL, x, ne, vocab, logits + t * vocab);
    }
    m->n_past += n;
    rc = 0;
done:
    free(h);
    free(x);
    free(q);
    free(k);
    free(v);
    free(att);
    free(o);
    free(g);
    free(u);
    free(sc);
    return rc;
}
