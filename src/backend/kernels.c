/* f32 kernels on plain arrays (see include/tensorplan/kernels.h for the conventions). */
#include "tensorplan/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu_count.h"
#include "backend/dot_internal.h"
#include "backend/parallel.h"
#include "common/error.h"
#include "tensorplan/graph.h"
#include "tensorplan/quant.h"

#define TP_KERNEL_MAX_THREADS TP_PARALLEL_MAX_THREADS

static int g_threads; /* 0 = not chosen yet: the online CPU count */
static int online_cpus(void)
{
    const unsigned n = tp_cpu_count();
    return n > TP_KERNEL_MAX_THREADS ? TP_KERNEL_MAX_THREADS : (int)n;
}

void tp_kernels_set_threads(int n)
{
    if (n > TP_KERNEL_MAX_THREADS)
        n = TP_KERNEL_MAX_THREADS;
    g_threads = n > 0 ? n : 0;
}

int tp_kernels_threads(void)
{
    return g_threads > 0 ? g_threads : online_cpus();
}

uint32_t tp_kernel_bits_u32(const float *data, size_t i)
{
    uint32_t v;
    memcpy(&v, &data[i], sizeof v);
    return v;
}

void tp_kernel_put_u32(float *data, size_t i, uint32_t value)
{
    memcpy(&data[i], &value, sizeof value);
}

/* ---- get_rows ---------------------------------------------------------------------------- */

tp_status tp_kernel_get_rows(const float *table, size_t n_rows, size_t d, const float *ids,
                             size_t n_ids, float *out)
{
    if ((!table && n_rows && d) || (!ids && n_ids) || (!out && n_ids && d))
        return tp_fail(TP_ERR_INVALID, "get_rows: NULL array");
    for (size_t t = 0; t < n_ids; t++) {
        uint32_t id = tp_kernel_bits_u32(ids, t);
        if ((size_t)id >= n_rows)
            return tp_fail(TP_ERR_INVALID, "get_rows: id %u at row %zu is out of range (%zu rows)",
                           (unsigned)id, t, n_rows);
    }
    for (size_t t = 0; t < n_ids; t++) {
        uint32_t id = tp_kernel_bits_u32(ids, t);
        /* memmove: a gather into the same buffer as its table must still be defined */
        memmove(out + t * d, table + (size_t)id * d, d * sizeof(float));
    }
    return TP_OK;
}

/* ---- rms_norm ---------------------------------------------------------------------------- */

tp_status tp_kernel_rms_norm(const float *x, const float *w, size_t d, size_t n_tok, float eps,
                             float *y)
{
    if (d == 0)
        return tp_fail(TP_ERR_INVALID, "rms_norm: zero width");
    if (!x || !y)
        return tp_fail(TP_ERR_INVALID, "rms_norm: NULL array");
    for (size_t t = 0; t < n_tok; t++) {
        const float *xr = x + t * d;
        float *yr = y + t * d;
        double ss = 0.0;
        for (size_t i = 0; i < d; i++)
            ss += (double)xr[i] * (double)xr[i];
        double scale = 1.0 / sqrt(ss / (double)d + (double)eps);
        for (size_t i = 0; i < d; i++) {
            float v = (float)((double)xr[i] * scale);
            yr[i] = w ? v * w[i] : v;
        }
    }
    return TP_OK;
}

/* ---- mul_mat ----------------------------------------------------------------------------- */

/* The f32 matrix is an F32 weight read in place: one kernel, so an owned f32 tensor and a view
 * of the same values give the same bits (docs/quant.md section 5). */
tp_status tp_kernel_mul_mat(const float *W, const float *b, const float *x, size_t n_in,
                            size_t n_out, size_t n_tok, float *y, int n_threads)
{
    if (!W || !x || !y)
        return tp_fail(TP_ERR_INVALID, "mul_mat: NULL array");
    if (n_in == 0 || n_out == 0)
        return tp_fail(TP_ERR_INVALID, "mul_mat: empty matrix (%zu x %zu)", n_out, n_in);
    return tp_kernel_mul_mat_typed(TP_TYPE_F32, W, b, x, n_in, n_out, n_tok, y, n_threads);
}

/* ---- rope -------------------------------------------------------------------------------- */

tp_rope_params tp_rope_params_default(float base)
{
    tp_rope_params p = {TP_ROPE_NEOX, base, 1.0f, 0.0f, 1.0f, 0, NULL};
    return p;
}

static tp_status rope_check(size_t head_dim, const tp_rope_params *p)
{
    if (head_dim == 0 || head_dim % 2 != 0)
        return tp_fail(TP_ERR_INVALID, "rope: head_dim %zu must be even and positive", head_dim);
    if (p->mode != TP_ROPE_NEOX && p->mode != TP_ROPE_NORM)
        return tp_fail(TP_ERR_INVALID, "rope: unknown mode %d", p->mode);
    if (!(p->base > 0.0f) || !isfinite(p->base))
        return tp_fail(TP_ERR_INVALID, "rope: base must be positive");
    if (!(p->freq_scale > 0.0f) || !isfinite(p->freq_scale) || !(p->attn_factor > 0.0f) ||
        !isfinite(p->attn_factor) || !isfinite(p->ext_factor))
        return tp_fail(TP_ERR_INVALID, "rope: freq_scale and attn_factor must be positive, "
                       "ext_factor finite");
    if (p->ext_factor != 0.0f && p->n_ctx_orig <= 0)
        return tp_fail(TP_ERR_INVALID, "rope: YaRN needs the original context length");
    for (size_t i = 0; p->freqs && i < head_dim / 2; i++)
        if (!isfinite(p->freqs[i]) || p->freqs[i] == 0.0f)
            return tp_fail(TP_ERR_INVALID, "rope: frequency divisor %zu is %g", i,
                           (double)p->freqs[i]);
    return TP_OK;
}

/* The YaRN correction range [lo, hi] of pair indices (docs/engine.md, "RoPE"). */
static void rope_corr_dims(size_t n_rot, const tp_rope_params *p, float dims[2])
{
    const float pi = 3.14159265358979323846f;
    float n = (float)n_rot, two_ln_base = 2.0f * logf(p->base);
    float fast = n * logf((float)p->n_ctx_orig / (32.0f * 2.0f * pi)) / two_ln_base;
    float slow = n * logf((float)p->n_ctx_orig / (1.0f * 2.0f * pi)) / two_ln_base;
    dims[0] = fmaxf(0.0f, floorf(fast));
    dims[1] = fminf(n - 1.0f, ceilf(slow));
}

/* cos and sin of every pair at one position, magnitude included. */
static void rope_cache(float pos, size_t half, const tp_rope_params *p, const float dims[2],
                       float *cs, float *sn)
{
    const float theta_scale = powf(p->base, -2.0f / (float)(2 * half));
    float theta = pos;
    for (size_t i = 0; i < half; i++) {
        float extrap = p->freqs ? theta / p->freqs[i] : theta;
        float t = p->freq_scale * extrap;
        if (p->ext_factor != 0.0f) {
            float y = ((float)i - dims[0]) / fmaxf(0.001f, dims[1] - dims[0]);
            float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * p->ext_factor;
            t = t * (1.0f - mix) + extrap * mix;
        }
        /* the whole magnitude: YaRN's 1 + 0.1 ln(1/freq_scale) is already in attn_factor */
        cs[i] = cosf(t) * p->attn_factor;
        sn[i] = sinf(t) * p->attn_factor;
        theta *= theta_scale;
    }
}

tp_status tp_kernel_rope_ext(const float *x, const float *positions, size_t n_head,
                             size_t head_dim, size_t n_tok, const tp_rope_params *p, float *y)
{
    if (!x || !y || !p || (!positions && n_tok))
        return tp_fail(TP_ERR_INVALID, "rope: NULL array");
    TP_TRY(rope_check(head_dim, p));
    const size_t half = head_dim / 2, row = n_head * head_dim;
    /* NEOX pairs (i, i + half), NORM pairs (2i, 2i + 1) */
    const size_t step = p->mode == TP_ROPE_NEOX ? 1 : 2, other = p->mode == TP_ROPE_NEOX ? half : 1;
    float dims[2] = {0.0f, 0.0f};
    if (p->ext_factor != 0.0f)
        rope_corr_dims(head_dim, p, dims);
    float *cs = malloc(2 * half * sizeof(float));
    if (!cs)
        return tp_fail(TP_ERR_NOMEM, "rope: out of memory");
    float *sn = cs + half;
    for (size_t t = 0; t < n_tok; t++) {
        rope_cache((float)(int32_t)tp_kernel_bits_u32(positions, t), half, p, dims, cs, sn);
        for (size_t h = 0; h < n_head; h++) {
            const float *xh = x + t * row + h * head_dim;
            float *yh = y + t * row + h * head_dim;
            for (size_t i = 0; i < half; i++) {
                float a = xh[i * step], b = xh[i * step + other];
                yh[i * step] = a * cs[i] - b * sn[i];
                yh[i * step + other] = a * sn[i] + b * cs[i];
            }
        }
    }
    free(cs);
    return TP_OK;
}

tp_status tp_kernel_rope(const float *x, const float *positions, size_t n_head, size_t head_dim,
                         size_t n_tok, float base, float *y)
{
    tp_rope_params p = tp_rope_params_default(base);
    return tp_kernel_rope_ext(x, positions, n_head, head_dim, n_tok, &p, y);
}

/* ---- kv_store ---------------------------------------------------------------------------- */

tp_status tp_kernel_kv_store(const float *k, const float *v, const float *positions,
                             size_t n_kv_embd, size_t n_tok, float *K, float *V, size_t n_ctx)
{
    if (!k || !v || !K || !V || (!positions && n_tok))
        return tp_fail(TP_ERR_INVALID, "kv_store: NULL array");
    /* every position is checked before the first write: a refused store leaves the cache
     * exactly as it was */
    for (size_t t = 0; t < n_tok; t++) {
        uint32_t p = tp_kernel_bits_u32(positions, t);
        if ((size_t)p >= n_ctx)
            return tp_fail(TP_ERR_INVALID,
                           "kv_store: position %u of token %zu is outside the KV context "
                           "(n_ctx %zu)",
                           (unsigned)p, t, n_ctx);
    }
    for (size_t t = 0; t < n_tok; t++) {
        size_t p = tp_kernel_bits_u32(positions, t);
        memmove(K + p * n_kv_embd, k + t * n_kv_embd, n_kv_embd * sizeof(float));
        memmove(V + p * n_kv_embd, v + t * n_kv_embd, n_kv_embd * sizeof(float));
    }
    return TP_OK;
}

/* ---- attn -------------------------------------------------------------------------------- */

typedef struct attn_ctx {
    const float *q, *K, *V, *positions;
    size_t n_head, n_head_kv, head_dim, n_ctx;
    float scale;
    float *out;
    float *scratch; /* n_ctx floats per worker */
} attn_ctx;

static void attn_range(void *arg, size_t begin, size_t end, int worker)
{
    const attn_ctx *c = arg;
    const size_t hd = c->head_dim, group = c->n_head / c->n_head_kv;
    const size_t q_row = c->n_head * hd, kv_row = c->n_head_kv * hd;
    float *score = c->scratch + (size_t)worker * c->n_ctx;
    for (size_t job = begin; job < end; job++) {
        size_t t = job / c->n_head, h = job % c->n_head;
        size_t kvh = h / group;
        size_t p = tp_kernel_bits_u32(c->positions, t);
        const float *qh = c->q + t * q_row + h * hd;
        float m = -INFINITY;
        for (size_t j = 0; j <= p; j++) {
            float s = dot1(qh, c->K + j * kv_row + kvh * hd, hd) * c->scale;
            score[j] = s;
            if (s > m)
                m = s;
        }
        float sum = 0.0f;
        for (size_t j = 0; j <= p; j++) {
            score[j] = expf(score[j] - m);
            sum += score[j];
        }
        float *o = c->out + t * q_row + h * hd;
        for (size_t d = 0; d < hd; d++)
            o[d] = 0.0f;
        for (size_t j = 0; j <= p; j++) {
            float pj = score[j] / sum;
            const float *vj = c->V + j * kv_row + kvh * hd;
            for (size_t d = 0; d < hd; d++)
                o[d] += pj * vj[d];
        }
    }
}

tp_status tp_kernel_attn(const float *q, const float *K, const float *V, const float *positions,
                         size_t n_head, size_t n_head_kv, size_t head_dim, size_t n_tok,
                         size_t n_ctx, float *out, int n_threads)
{
    if (!q || !K || !V || !out || (!positions && n_tok))
        return tp_fail(TP_ERR_INVALID, "attn: NULL array");
    if (n_head == 0 || n_head_kv == 0 || head_dim == 0 || n_head % n_head_kv != 0)
        return tp_fail(TP_ERR_INVALID, "attn: %zu heads cannot be grouped over %zu KV heads",
                       n_head, n_head_kv);
    for (size_t t = 0; t < n_tok; t++) {
        uint32_t p = tp_kernel_bits_u32(positions, t);
        if ((size_t)p >= n_ctx)
            return tp_fail(TP_ERR_INVALID,
                           "attn: position %u of token %zu is outside the KV context (n_ctx %zu)",
                           (unsigned)p, t, n_ctx);
    }
    /* the rows actually attended to, not the region's size, measure the work */
    double work = 0;
    for (size_t i = 0; i < n_tok; i++)
        work += (double)(tp_kernel_bits_u32(positions, i) + 1);
    work *= 2.0 * (double)n_head * (double)head_dim;
    int t = n_tok * n_head < 2 ? 1 : tp_parallel_threads(n_threads, work);
    float *scratch = malloc((size_t)t * n_ctx * sizeof(float));
    if (!scratch)
        return tp_fail(TP_ERR_NOMEM, "attn: out of memory");
    attn_ctx c = {q,      K,       V,   positions, n_head, n_head_kv, head_dim, n_ctx,
                  1.0f / sqrtf((float)head_dim), out, scratch};
    tp_parallel_for(n_tok * n_head, t, attn_range, &c);
    free(scratch);
    return TP_OK;
}

/* ---- elementwise --------------------------------------------------------------------------- */

tp_status tp_kernel_add(const float *a, const float *b, size_t n, float *out)
{
    if (n && (!a || !b || !out))
        return tp_fail(TP_ERR_INVALID, "add: NULL array");
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
    return TP_OK;
}

tp_status tp_kernel_mul(const float *a, const float *b, size_t n, float *out)
{
    if (n && (!a || !b || !out))
        return tp_fail(TP_ERR_INVALID, "mul: NULL array");
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] * b[i];
    return TP_OK;
}

/* silu and swiglu share this one definition so that a fused swiglu and the unfused
 * mul(silu(g), u) round identically (fused vs unfused logits must differ by 0.0) */
static inline float silu1(float g)
{
    return g / (1.0f + expf(-g));
}

tp_status tp_kernel_silu(const float *x, size_t n, float *out)
{
    if (n && (!x || !out))
        return tp_fail(TP_ERR_INVALID, "silu: NULL array");
    for (size_t i = 0; i < n; i++)
        out[i] = silu1(x[i]);
    return TP_OK;
}

tp_status tp_kernel_swiglu(const float *gate, const float *up, size_t n, float *out)
{
    if (n && (!gate || !up || !out))
        return tp_fail(TP_ERR_INVALID, "swiglu: NULL array");
    for (size_t i = 0; i < n; i++) {
        float s = silu1(gate[i]);
        out[i] = s * up[i];
    }
    return TP_OK;
}
