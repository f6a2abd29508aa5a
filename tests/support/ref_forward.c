/* The reference forward pass: the formulas of docs/engine.md (both families), written as
 * loops; the weight types restated from docs/quant.md. */
#include "ref_forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ref_model {
    const tp_model_config *c;
    const tp_weights *w;
    size_t n_ctx, n_past;
    double **K, **V;   /* per layer: n_ctx rows of n_head_kv * head_dim */
    uint32_t kv_type;  /* 0 (F32: kept exact in double), 1 (F16) or 8 (Q8_0) */
    size_t n_tensors;
    double **values;   /* per registry entry: rows * cols doubles */
};

/* ---- types ------------------------------------------------------------------------------- */

static unsigned u16_at(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
static double half(unsigned h)
{
    double s = (h & 0x8000u) ? -1.0 : 1.0;
    unsigned e = (h >> 10) & 31u, f = h & 1023u;
    if (e == 0)
        return s * ldexp((double)f, -24);
    if (e == 31)
        return f ? NAN : s * INFINITY;
    return s * ldexp((double)(f + 1024u), (int)e - 25);
}

/* x rounded to the nearest binary16 value, ties to even (nearbyint in the default
 * rounding mode); 2^-24 is the spacing of the subnormals, 2^(e-10) that of binade e. */
static double round_half(double x)
{
    if (x == 0 || !isfinite(x))
        return x;
    int e;
    (void)frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
    int q = e - 1 - 10;
    if (q < -24)
        q = -24;
    double r = ldexp(nearbyint(ldexp(x, -q)), q);
    return fabs(r) > 65504.0 ? copysign(INFINITY, r) : r;
}

/* A row stored in a KV cache of the type, as attention reads it back: F16 rounds each value;
 * Q8_0 (blocks of 32) takes d = max|x| / 127, stores it as binary16, and each value as
 * q = round half away from zero (x / d), read back as q * half(d) (docs/quant.md). */
static void round_kv_row(uint32_t type, double *x, size_t n)
{
    if (type == 1) {
        for (size_t i = 0; i < n; i++)
            x[i] = round_half(x[i]);
        return;
    }
    if (type != 8)
        return;
    for (size_t b = 0; b + 32 <= n; b += 32) {
        double amax = 0;
        for (size_t j = 0; j < 32; j++)
            amax = fmax(amax, fabs(x[b + j]));
        double d = amax / 127.0, dh = round_half(d);
        for (size_t j = 0; j < 32; j++)
            x[b + j] = d == 0 ? 0 : round(x[b + j] / d) * dh;
    }
}

int ref_model_set_kv_type(ref_model *m, uint32_t type)
{
    if (type != 0 && type != 1 && type != 8)
        return -1;
    if (type == 8 && m->c->head_dim % 32 != 0)
        return -1;
    m->kv_type = type;
    return 0;
}

/* Q4_K scale and min j of the 12 packed bytes (6 bits each). */
static void q4k_scale_min(const unsigned char *s, int j, unsigned *sc, unsigned *mn)
{
    if (j < 4) {
        *sc = s[j] & 63u;
        *mn = s[j + 4] & 63u;
    } else {
        *sc = (s[j + 4] & 15u) | ((unsigned)(s[j - 4] >> 6) << 4);
        *mn = (unsigned)(s[j + 4] >> 4) | ((unsigned)(s[j] >> 6) << 4);
    }
}

/* Q4_K (144 bytes: d, dmin, scales[12], qs[128]) and Q5_K (176: d, dmin, scales[12], qh[32],
 * qs[128]): element k is in sub-block j = k / 32; its quant is the low nibble of
 * qs[32 (k / 64) + k % 32] for the first 32 of each 64 elements, the high nibble for the
 * second, plus, for Q5_K, 16 when bit j of qh[k % 32] is set. */
static void q45k_block(const unsigned char *b, double *y, int five)
{
    float d = (float)half(u16_at(b)), dmin = (float)half(u16_at(b + 2));
    const unsigned char *scales = b + 4, *qh = b + 16, *qs = b + (five ? 48 : 16);
    for (int k = 0; k < 256; k++) {
        int j = k / 32, l = k % 32;
        unsigned sc, mn;
        q4k_scale_min(scales, j, &sc, &mn);
        unsigned byte = qs[32 * (k / 64) + l];
        unsigned q = (k % 64) < 32 ? byte & 15u : byte >> 4;
        if (five)
            q += ((qh[l] >> j) & 1u) * 16u;
        /* f32 products and differences, as the layout defines them */
        float D = d * (float)sc, M = dmin * (float)mn;
        y[k] = D * (float)q - M;
    }
}

/* Q2_K (84 bytes: scales[16], qs[64], d, dmin) and Q3_K (110: hmask[32], qs[64], scales[12],
 * d): element k = 128h + 32j + 16p + l takes the 2-bit field (qs[32h + 16p + l] >> 2j) & 3 in
 * sub-block s = k / 16. Q2_K: y = (d (scales[s] & 15)) q - dmin (scales[s] >> 4). Q3_K: minus 4
 * unless bit 4h + j of hmask[k % 32] is set; the 6-bit scale of s has its low nibble in
 * scales[s % 8] (high nibble for s >= 8) and its top bits at 2 (s / 4) of scales[8 + s % 4];
 * y = (d (scale - 32)) q. */
static void q23k_block(const unsigned char *b, double *y, int three)
{
    const unsigned char *qs = b + (three ? 32 : 16);
    for (int k = 0; k < 256; k++) {
        int h = k / 128, j = (k % 128) / 32, p = (k % 32) / 16, l = k % 16, s = k / 16;
        int q = (qs[32 * h + 16 * p + l] >> (2 * j)) & 3;
        if (three) {
            const unsigned char *sc = b + 96;
            if (!((b[k % 32] >> (4 * h + j)) & 1))
                q -= 4;
            int scale = (s < 8 ? sc[s] & 15 : sc[s - 8] >> 4) | ((sc[8 + s % 4] >> (2 * (s / 4))) & 3) << 4;
            float D = (float)half(u16_at(b + 108)) * (float)(scale - 32);
            y[k] = D * (float)q;
        } else {
            float D = (float)half(u16_at(b + 80)) * (float)(b[s] & 15);
            float M = (float)half(u16_at(b + 82)) * (float)(b[s] >> 4);
            y[k] = D * (float)q - M;
        }
    }
}

/* The 32-element blocks: the quant of element j (0-31) is nibble j % 16 of qs (low for
 * j < 16) plus, for the five-bit types, bit j of the little-endian u32 qh as 16. */
static void block32(uint32_t type, const unsigned char *b, double *y)
{
    int has_min = type == 3 || type == 7, five = type == 6 || type == 7;
    float d = (float)half(u16_at(b)), m = has_min ? (float)half(u16_at(b + 2)) : 0.0f;
    const unsigned char *qh = b + (has_min ? 4 : 2);
    const unsigned char *qs = b + 2 + (has_min ? 2 : 0) + (five ? 4 : 0);
    uint32_t h = five ? (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
                            (uint32_t)qh[3] << 24
                      : 0;
    for (int j = 0; j < 32; j++) {
        int q = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
        q += five ? (int)((h >> j) & 1u) * 16 : 0;
        if (has_min) /* q d + m in f32 */
            y[j] = (double)((float)q * d + m);
        else /* Q4_0 centres on 8, Q5_0 on 16 */
            y[j] = (double)((float)(q - (five ? 16 : 8)) * d);
    }
}

/* Q6_K, 210 bytes: ql[128], qh[64], int8 scales[16], f16 d. Element 128h + 32r + l. */
static void q6k_block(const unsigned char *b, double *y)
{
    float d = (float)half(u16_at(b + 208));
    for (int k = 0; k < 256; k++) {
        int h = k / 128, r = (k % 128) / 32, l = k % 32;
        unsigned char lbyte = b[64 * h + 32 * (r % 2) + l];
        int low = r < 2 ? lbyte & 15 : lbyte >> 4;
        int high = (b[128 + 32 * h + l] >> (2 * r)) & 3;
        float sc = (float)(signed char)b[192 + 8 * h + 2 * r + l / 16];
        y[k] = (double)(d * sc * (float)(low + 16 * high - 32));
    }
}

int ref_dequantize_row(uint32_t type, const void *src, double *dst, size_t n)
{
    const unsigned char *p = src;
    switch (type) {
    case 0: /* F32 */
        for (size_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, p + 4 * i, 4);
            dst[i] = f;
        }
        return 0;
    case 1: /* F16 */
        for (size_t i = 0; i < n; i++)
            dst[i] = half(u16_at(p + 2 * i));
        return 0;
    case 30: /* BF16: the high half of an f32 */
        for (size_t i = 0; i < n; i++) {
            uint32_t bits = (uint32_t)u16_at(p + 2 * i) << 16;
            float f;
            memcpy(&f, &bits, 4);
            dst[i] = f;
        }
        return 0;
    case 8: /* Q8_0: 34 bytes, f16 d then 32 int8 */
        if (n % 32)
            return -1;
        for (size_t b = 0; b < n / 32; b++) {
            const unsigned char *blk = p + 34 * b;
            double d = half(u16_at(blk));
            for (size_t j = 0; j < 32; j++)
                dst[32 * b + j] = (double)(signed char)blk[2 + j] * d;
        }
        return 0;
    case 2: case 3: case 6: case 7: { /* Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24 bytes per 32 */
        size_t bytes = type == 2 ? 18 : type == 3 ? 20 : type == 6 ? 22 : 24;
        if (n % 32)
            return -1;
        for (size_t b = 0; b < n / 32; b++)
            block32(type, p + bytes * b, dst + 32 * b);
        return 0;
    }
    case 14: /* Q6_K: 210 bytes per 256 */
        if (n % 256)
            return -1;
        for (size_t b = 0; b < n / 256; b++)
            q6k_block(p + 210 * b, dst + 256 * b);
        return 0;
    case 10: case 11: case 12: case 13: { /* Q2_K 84, Q3_K 110, Q4_K 144, Q5_K 176 bytes per 256 */
        size_t bytes = type == 10 ? 84 : type == 11 ? 110 : type == 12 ? 144 : 176;
        if (n % 256)
            return -1;
        for (size_t b = 0; b < n / 256; b++) {
            if (type >= 12)
                q45k_block(p + bytes * b, dst + 256 * b, type == 13);
            else
                q23k_block(p + bytes * b, dst + 256 * b, type == 11);
        }
        return 0;
    }
    default:
        return -1;
    }
}

/* ---- model ------------------------------------------------------------------------------- */

static int load_values(ref_model *m)
{
    m->n_tensors = tp_weights_count(m->w);
    m->values = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *m->values);
    if (!m->values)
        return -1;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const tp_weight *t = tp_weights_at(m->w, i);
        m->values[i] = malloc(t->rows * t->cols * sizeof(double));
        if (!m->values[i])
            return -1;
        for (size_t r = 0; r < t->rows; r++)
            if (ref_dequantize_row(t->type, (const unsigned char *)t->bytes + r * t->row_bytes,
                                   m->values[i] + r * t->cols, t->cols) != 0)
                return -1;
    }
    return 0;
}

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
    int ok = m->K && m->V;
    for (size_t l = 0; ok && l < nl; l++) {
        m->K[l] = calloc(n_ctx * kv, sizeof(double));
        m->V[l] = calloc(n_ctx * kv, sizeof(double));
        ok = m->K[l] && m->V[l];
    }
    if (!ok || load_values(m) != 0) {
        ref_model_destroy(m);
        return -1;
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
    for (size_t i = 0; m->values && i < m->n_tensors; i++)
        free(m->values[i]);
    free(m->values);
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

static const double *wt(const ref_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_tensors; i++)
        if (strcmp(tp_weights_at(m->w, i)->name, name) == 0)
            return m->values[i];
    return NULL;
}

/* blk.L.<suffix>, or NULL when the flag says the tensor is not used. */
static const double *lw(const ref_model *m, int layer, const char *suffix, int used)
{
    char name[TP_NAME_MAX];
    snprintf(name, sizeof name, "blk.%d.%s", layer, suffix);
    return used ? wt(m, name) : NULL;
}

/* y[r] = sum_i W[r][i] x[i] (+ b[r]) */
static void matvec(const double *W, const double *b, const double *x, size_t n_in,
                   size_t n_out, double *y)
{
    for (size_t r = 0; r < n_out; r++) {
        double s = b ? b[r] : 0.0;
        for (size_t i = 0; i < n_in; i++)
            s += W[r * n_in + i] * x[i];
        y[r] = s;
    }
}

static void rmsnorm(const double *x, const double *w, size_t d, double eps, double *y)
{
    double ss = 0;
    for (size_t i = 0; i < d; i++)
        ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss / (double)d + eps);
    for (size_t i = 0; i < d; i++)
        y[i] = x[i] * inv * w[i];
}

/* docs/engine.md "RoPE": theta_0 = pos, theta_{i+1} = theta_i * base^(-2/hd) by repeated f32
 * multiplication; divided by freqs[i]; scaled, with the YaRN ramp; rope_attn_factor is the
 * whole magnitude (YaRN's factor included by whoever made the config); NEOX pairs
 * (i, i + hd/2), NORM pairs (2i, 2i + 1). */
static void rope(const tp_model_config *c, const double *freqs, double *x, size_t n_head,
                 size_t pos)
{
    const size_t hd = (size_t)c->head_dim, half_d = hd / 2;
    const double pi = 3.14159265358979323846, fs = c->rope_freq_scale, base = c->rope_base;
    double lo = 0, hi = 0, mscale = c->rope_attn_factor;
    if (c->rope_ext_factor != 0.0f) {
        double fast = hd * log(c->rope_n_ctx_orig / (2 * pi * 32)) / (2 * log(base));
        double slow = hd * log(c->rope_n_ctx_orig / (2 * pi * 1)) / (2 * log(base));
        lo = fmax(0, floor(fast));
        hi = fmin((double)hd - 1, ceil(slow));
    }
    const float theta_scale = powf(c->rope_base, -2.0f / (float)hd);
    float theta = (float)pos;
    for (size_t i = 0; i < half_d; i++, theta *= theta_scale) {
        double th = freqs ? theta / freqs[i] : theta, t = fs * th;
        if (c->rope_ext_factor != 0.0f) {
            double ramp = (1 - fmin(1, fmax(0, ((double)i - lo) / fmax(0.001, hi - lo)))) *
                          c->rope_ext_factor;
            t = t * (1 - ramp) + th * ramp;
        }
        double cs = cos(t) * mscale, sn = sin(t) * mscale;
        for (size_t h = 0; h < n_head; h++) {
            double *xh = x + h * hd;
            size_t i0 = c->rope_mode == TP_ROPE_NORM ? 2 * i : i;
            size_t i1 = c->rope_mode == TP_ROPE_NORM ? 2 * i + 1 : i + half_d;
            double a = xh[i0], b = xh[i1];
            xh[i0] = a * cs - b * sn;
            xh[i1] = a * sn + b * cs;
        }
    }
}

typedef struct layer_w {
    const double *an, *fn, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *bo;
    const double *wg, *wu, *wd, *bg, *bu, *bd;
} layer_w;

static int layer_weights(const ref_model *m, int L, layer_w *w)
{
    const tp_model_config *c = m->c;
    w->an = lw(m, L, "attn_norm.weight", 1);
    w->fn = lw(m, L, "ffn_norm.weight", 1);
    w->wq = lw(m, L, "attn_q.weight", 1);
    w->wk = lw(m, L, "attn_k.weight", 1);
    w->wv = lw(m, L, "attn_v.weight", 1);
    w->wo = lw(m, L, "attn_output.weight", 1);
    w->bq = lw(m, L, "attn_q.bias", c->qkv_bias);
    w->bk = lw(m, L, "attn_k.bias", c->qkv_bias);
    w->bv = lw(m, L, "attn_v.bias", c->qkv_bias);
    w->bo = lw(m, L, "attn_output.bias", c->attn_out_bias);
    w->wg = lw(m, L, "ffn_gate.weight", 1);
    w->wu = lw(m, L, "ffn_up.weight", 1);
    w->wd = lw(m, L, "ffn_down.weight", 1);
    w->bg = lw(m, L, "ffn_gate.bias", c->ffn_bias);
    w->bu = lw(m, L, "ffn_up.bias", c->ffn_bias);
    w->bd = lw(m, L, "ffn_down.bias", c->ffn_bias);
    if (!w->an || !w->fn || !w->wq || !w->wk || !w->wv || !w->wo || !w->wg || !w->wu || !w->wd)
        return -1;
    if ((c->qkv_bias && (!w->bq || !w->bk || !w->bv)) || (c->attn_out_bias && !w->bo) ||
        (c->ffn_bias && (!w->bg || !w->bu || !w->bd)))
        return -1;
    return 0;
}

/* Scratch of one forward. */
typedef struct scratch {
    double *h, *x, *q, *k, *v, *att, *o, *g, *u, *sc;
} scratch;

/* Attention of query row q (head by head, grouped) over cached rows 0..pos of layer L. */
static void attend(const ref_model *m, int L, const double *q, size_t pos, double *sc,
                   double *att)
{
    const tp_model_config *c = m->c;
    const size_t nh = (size_t)c->n_head, hd = (size_t)c->head_dim;
    const size_t nkv = (size_t)c->n_head_kv * hd, group = nh / (size_t)c->n_head_kv;
    for (size_t hh = 0; hh < nh; hh++) {
        size_t kvh = hh / group;
        const double *qh = q + hh * hd;
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
}

static int run_layer(ref_model *m, int L, size_t n, scratch *s)
{
    const tp_model_config *c = m->c;
    const size_t ne = (size_t)c->n_embd, nh = (size_t)c->n_head, nkvh = (size_t)c->n_head_kv;
    const size_t hd = (size_t)c->head_dim, nf = (size_t)c->n_ff;
    const size_t nq = nh * hd, nkv = nkvh * hd;
    const double *freqs = c->rope_freqs ? wt(m, "rope_freqs.weight") : NULL;
    layer_w w;
    if (layer_weights(m, L, &w) != 0 || (c->rope_freqs && !freqs))
        return -1;
    /* every token's K and V first: a token attends to the earlier ones of its own batch */
    for (size_t t = 0; t < n; t++) {
        size_t pos = m->n_past + t;
        rmsnorm(s->h + t * ne, w.an, ne, c->rms_eps, s->x);
        matvec(w.wq, w.bq, s->x, ne, nq, s->q + t * nq);
        matvec(w.wk, w.bk, s->x, ne, nkv, s->k);
        matvec(w.wv, w.bv, s->x, ne, nkv, s->v);
        rope(c, freqs, s->q + t * nq, nh, pos);
        rope(c, freqs, s->k, nkvh, pos);
        round_kv_row(m->kv_type, s->k, nkv);
        round_kv_row(m->kv_type, s->v, nkv);
        memcpy(m->K[L] + pos * nkv, s->k, nkv * sizeof *s->k);
        memcpy(m->V[L] + pos * nkv, s->v, nkv * sizeof *s->v);
    }
    for (size_t t = 0; t < n; t++) {
        double *ht = s->h + t * ne;
        attend(m, L, s->q + t * nq, m->n_past + t, s->sc, s->att);
        matvec(w.wo, w.bo, s->att, nq, ne, s->o);
        for (size_t i = 0; i < ne; i++)
            ht[i] += s->o[i];
        rmsnorm(ht, w.fn, ne, c->rms_eps, s->x);
        matvec(w.wg, w.bg, s->x, ne, nf, s->g);
        matvec(w.wu, w.bu, s->x, ne, nf, s->u);
        for (size_t i = 0; i < nf; i++)
            s->g[i] = s->g[i] / (1.0 + exp(-s->g[i])) * s->u[i];
        matvec(w.wd, w.bd, s->g, nf, ne, s->o);
        for (size_t i = 0; i < ne; i++)
            ht[i] += s->o[i];
    }
    return 0;
}

int ref_model_forward(ref_model *m, const int32_t *tokens, size_t n, double *logits)
{
    const tp_model_config *c = m->c;
    const size_t ne = (size_t)c->n_embd, nq = (size_t)c->n_head * c->head_dim;
    const size_t nkv = (size_t)c->n_head_kv * c->head_dim, nf = (size_t)c->n_ff;
    const size_t vocab = (size_t)c->vocab;
    if (m->n_past + n > m->n_ctx)
        return -1;
    const double *embd = wt(m, "token_embd.weight"), *onorm = wt(m, "output_norm.weight");
    const double *head = c->tied_embeddings ? embd : wt(m, "output.weight");
    const double *obias = c->output_bias ? wt(m, "output.bias") : NULL;
    if (!embd || !onorm || !head || (c->output_bias && !obias))
        return -1;
    scratch s = {calloc(n * ne, sizeof(double)), calloc(ne, sizeof(double)),
                 calloc(n * nq, sizeof(double)), calloc(nkv, sizeof(double)),
                 calloc(nkv, sizeof(double)),    calloc(nq, sizeof(double)),
                 calloc(ne, sizeof(double)),     calloc(nf, sizeof(double)),
                 calloc(nf, sizeof(double)),     calloc(m->n_ctx, sizeof(double))};
    int rc = -1;
    if (!s.h || !s.x || !s.q || !s.k || !s.v || !s.att || !s.o || !s.g || !s.u || !s.sc)
        goto done;
    for (size_t t = 0; t < n; t++) {
        if (tokens[t] < 0 || (size_t)tokens[t] >= vocab)
            goto done;
        memcpy(s.h + t * ne, embd + (size_t)tokens[t] * ne, ne * sizeof(double));
    }
    for (int L = 0; L < c->n_layer; L++)
        if (run_layer(m, L, n, &s) != 0)
            goto done;
    for (size_t t = 0; t < n; t++) {
        rmsnorm(s.h + t * ne, onorm, ne, c->rms_eps, s.x);
        matvec(head, obias, s.x, ne, vocab, logits + t * vocab);
    }
    m->n_past += n;
    rc = 0;
done:
    free(s.h);
    free(s.x);
    free(s.q);
    free(s.k);
    free(s.v);
    free(s.att);
    free(s.o);
    free(s.g);
    free(s.u);
    free(s.sc);
    return rc;
}
