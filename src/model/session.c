/* The decode loop: prefill, greedy decoding on one cached graph, the n_ctx rule, dumps. */
#include "tensorplan/session.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/clock.h"
#include "common/grow.h"
#include "tensorplan/quant.h"

struct tp_session {
    const tp_model_config *c;
    const tp_weights *w;
    tp_session_options opt;
    tp_graph_cache *cache;
    size_t n_ctx;   /* 0 until the first forward fixes it */
    size_t n_past;
    const tp_graph *last_graph;
    float *last_logits; /* last_rows x vocab */
    size_t last_rows;
    tp_session_stats stats;
};

tp_session_options tp_session_options_default(void)
{
    tp_session_options o;
    memset(&o, 0, sizeof o);
    o.alloc = tp_alloc_options_default();
    o.exec = tp_exec_options_default();
    o.n_ctx = 0;
    o.queued_layers = 0;
    o.fuse_ffn = 1;
    o.tail_rows = 1;
    o.cache_capacity = 0;
    o.kv_type = TP_DTYPE_F32;
    o.ubatch = TP_DEFAULT_UBATCH;
    return o;
}

tp_status tp_session_create(const tp_model_config *config, const tp_weights *weights,
                            const tp_session_options *options, tp_session **out)
{
    if (!config || !weights || !out)
        return tp_fail(TP_ERR_INVALID, "tp_session_create: NULL argument");
    tp_session *s = calloc(1, sizeof *s);
    if (!s)
        return tp_fail(TP_ERR_NOMEM, "session: out of memory");
    s->c = config;
    s->w = weights;
    s->opt = options ? *options : tp_session_options_default();
    if (s->opt.queued_layers < 0) {
        int k = s->opt.queued_layers;
        free(s);
        return tp_fail(TP_ERR_INVALID, "session: queued_layers %d < 0", k);
    }
    tp_allocator *alloc = NULL;
    tp_status st = tp_allocator_create_host(&alloc);
    if (st == TP_OK) {
        st = tp_graph_cache_create(alloc, s->opt.cache_capacity, &s->opt.alloc, &s->cache);
        if (st != TP_OK)
            tp_allocator_destroy(alloc);
    }
    if (st != TP_OK) {
        free(s);
        return st;
    }
    *out = s;
    return TP_OK;
}

void tp_session_destroy(tp_session *s)
{
    if (!s)
        return;
    tp_graph_cache_destroy(s->cache);
    free(s->last_logits);
    free(s);
}

size_t tp_session_context(const tp_model_config *config, const tp_session_options *options,
                          size_t n_first)
{
    size_t req = options && options->n_ctx ? options->n_ctx : TP_DEFAULT_N_CTX;
    size_t n_ctx = req > n_first ? req : n_first;
    if (config && config->max_ctx > 0 && n_ctx > (size_t)config->max_ctx)
        n_ctx = (size_t)config->max_ctx;
    return n_ctx;
}

tp_graph_params tp_session_graph_params(const tp_session_options *options, size_t n, size_t n_out,
                                        size_t n_ctx)
{
    tp_session_options d = tp_session_options_default();
    const tp_session_options *o = options ? options : &d;
    tp_graph_params p;
    memset(&p, 0, sizeof p);
    p.n_tokens = n;
    p.n_out = n_out;
    p.n_ctx = n_ctx;
    p.fuse_ffn = o->fuse_ffn;
    p.queued_layers = o->queued_layers;
    p.kv_type = o->kv_type;
    return p;
}

size_t tp_session_chunk(const tp_session_options *options, size_t n)
{
    const size_t u = options ? options->ubatch : TP_DEFAULT_UBATCH;
    return u > 0 && u < n ? u : n;
}

tp_status tp_session_set_options(tp_session *s, const tp_session_options *options)
{
    if (!s || !options)
        return tp_fail(TP_ERR_INVALID, "tp_session_set_options: NULL argument");
    if (options->queued_layers < 0)
        return tp_fail(TP_ERR_INVALID, "session: queued_layers %d < 0", options->queued_layers);
    size_t capacity = s->opt.cache_capacity;
    tp_alloc_options alloc = s->opt.alloc;
    s->opt = *options;
    /* the cache plans every graph with the options it was created with */
    s->opt.cache_capacity = capacity;
    s->opt.alloc = alloc;
    return TP_OK;
}

static tp_status fill_inputs(tp_session *s, const tp_graph *g, const int32_t *tokens, size_t n,
                             size_t n_out)
{
    tp_allocator *alloc = tp_graph_cache_allocator(s->cache);
    uint32_t *buf = malloc(n * sizeof *buf);
    if (!buf)
        return tp_fail(TP_ERR_NOMEM, "session: out of memory");
    for (size_t t = 0; t < n; t++)
        buf[t] = (uint32_t)tokens[t];
    tp_status st = tp_alloc_fill_input_i32(alloc, g, "token_ids", buf, n);
    for (size_t t = 0; st == TP_OK && t < n; t++)
        buf[t] = (uint32_t)(s->n_past + t);
    if (st == TP_OK)
        st = tp_alloc_fill_input_i32(alloc, g, "positions", buf, n);
    if (st == TP_OK && n_out < n) {
        /* the rows whose logits are wanted: the last n_out of this batch */
        for (size_t j = 0; j < n_out; j++)
            buf[j] = (uint32_t)(n - n_out + j);
        st = tp_alloc_fill_input_i32(alloc, g, "tail_ids", buf, n_out);
    }
    free(buf);
    return st;
}

static const char *non_finite_name(float v)
{
    return isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

/* Logits with a NaN or an infinity stop the forward (no token is chosen from them): the graph
 * runs again on the same inputs with every node's output checked, so that the message names
 * the first node whose output is not finite. */
static tp_status check_logits(tp_session *s, tp_allocator *alloc, const tp_graph *g,
                              const int32_t *tokens, size_t n, size_t n_out)
{
    const size_t len = n_out * (size_t)s->c->vocab;
    size_t bad = 0;
    while (bad < len && isfinite(s->last_logits[bad]))
        bad++;
    if (bad == len)
        return TP_OK;
    const float v = s->last_logits[bad];
    tp_exec_options o = s->opt.exec;
    o.trace = NULL;
    o.check_finite = 1;
    tp_status st = fill_inputs(s, g, tokens, n, n_out);
    if (st == TP_OK)
        st = tp_execute(alloc, g, s->w, &o, NULL);
    if (st == TP_OK)
        return tp_fail(TP_ERR_NOT_FINITE, "forward: logit %zu of %zu is %s (no node was "
                       "found not finite when run again)", bad, len, non_finite_name(v));
    if (st != TP_ERR_NOT_FINITE)
        return st;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tp_last_error());
    return tp_fail(TP_ERR_NOT_FINITE, "forward: logit %zu of %zu is %s; %s", bad, len,
                   non_finite_name(v), msg);
}

/* The graph for params, from the cache or built and planned; its plan recorded in the
 * statistics by kind (one token: decode; else prefill, the largest one). */
static tp_status current_graph(tp_session *s, const tp_graph_params *params, int prefill)
{
    tp_allocator *alloc = tp_graph_cache_allocator(s->cache);
    int reused = 0;
    tp_status st = tp_graph_cache_try_reuse(s->cache, params, &reused);
    if (st != TP_OK)
        return st;
    if (reused) {
        s->stats.reuses++;
        return TP_OK;
    }
    double tb = tp_clock_seconds();
    tp_graph *g = NULL;
    st = tp_model_build_graph(s->c, params, &g);
    s->stats.build_seconds += tp_clock_seconds() - tb;
    if (st != TP_OK)
        return st;
    st = tp_graph_cache_replace_graph(s->cache, g, params);
    if (st != TP_OK) {
        tp_graph_destroy(g);
        return st;
    }
    s->stats.builds++;
    tp_plan_stats ps = tp_alloc_stats(alloc);
    s->stats.plan_seconds += ps.plan_seconds;
    if (params->n_tokens == 1 && !(prefill && s->n_past == 0 && s->stats.forwards == 0)) {
        s->stats.decode_plan = ps;
    } else if (params->n_tokens >= s->stats.prefill_plan_tokens) {
        s->stats.prefill_plan = ps;
        s->stats.prefill_plan_tokens = params->n_tokens;
    }
    return TP_OK;
}

/* One graph: n tokens at n_past, the logits of the last n_out rows into s->last_logits. */
static tp_status forward_batch(tp_session *s, const int32_t *tokens, size_t n, size_t n_out,
                               int prefill)
{
    tp_allocator *alloc = tp_graph_cache_allocator(s->cache);
    tp_graph_params params = tp_session_graph_params(&s->opt, n, n_out, s->n_ctx);
    params.weights_version = tp_weights_version(s->w);
    TP_TRY(current_graph(s, &params, prefill));
    const tp_graph *g = tp_graph_cache_current(s->cache);
    if (!g || g->n_outputs != 1)
        return tp_fail(TP_ERR_INVALID, "session: the cache holds no graph with one output");
    TP_TRY(fill_inputs(s, g, tokens, n, n_out));
    tp_exec_stats es;
    tp_status st = tp_execute(alloc, g, s->w, &s->opt.exec, &es);
    s->stats.exec_seconds += es.seconds;
    if (st != TP_OK)
        return st;

    tp_bufref out;
    size_t vocab = (size_t)s->c->vocab;
    if (!tp_alloc_node_buffer(alloc, g->outputs[0], &out) || out.len != n_out * vocab)
        return tp_fail(TP_ERR_INVALID, "session: the logits node has no %zu x %zu window",
                       n_out, vocab);
    if (s->last_rows != n_out) {
        float *p = realloc(s->last_logits, out.len * sizeof *p);
        if (!p)
            return tp_fail(TP_ERR_NOMEM, "session: out of memory");
        s->last_logits = p;
        s->last_rows = n_out;
    }
    TP_TRY(tp_alloc_read(alloc, &out, s->last_logits));
    TP_TRY(check_logits(s, alloc, g, tokens, n, n_out));
    s->last_graph = g;
    s->n_past += n;
    s->stats.forwards++;
    return TP_OK;
}

/* The chunks of a forward of n tokens whose last n_out rows are wanted: each chunk's wanted
 * rows are its own last rows, gathered into *all (n_out rows) when more than the last chunk
 * holds them; a chunk without one computes its last row's logits only. */
static tp_status forward_chunks(tp_session *s, const int32_t *tokens, size_t n, size_t n_out,
                                int prefill, float **all)
{
    const size_t chunk = tp_session_chunk(&s->opt, n), first_wanted = n - n_out;
    const size_t vocab = (size_t)s->c->vocab;
    for (size_t a = 0; a < n; a += chunk) {
        const size_t b = a + chunk < n ? a + chunk : n;
        const size_t from = a > first_wanted ? a : first_wanted;
        const size_t want = b > from ? b - from : 0;
        TP_TRY(forward_batch(s, tokens + a, b - a, want ? want : 1, prefill));
        if (!want || want == n_out)
            continue;
        if (!*all && !(*all = malloc(n_out * vocab * sizeof **all)))
            return tp_fail(TP_ERR_NOMEM, "session: out of memory");
        memcpy(*all + (from - first_wanted) * vocab, s->last_logits, want * vocab * sizeof **all);
    }
    return TP_OK;
}

tp_status tp_session_forward(tp_session *s, const int32_t *tokens, size_t n, size_t n_out,
                             float *logits)
{
    if (!s || !tokens)
        return tp_fail(TP_ERR_INVALID, "tp_session_forward: NULL argument");
    if (n == 0 || n_out == 0 || n_out > n)
        return tp_fail(TP_ERR_INVALID, "session: expected 1 <= n_out <= n tokens, got n_out "
                       "%zu of %zu", n_out, n);
    for (size_t t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= s->c->vocab)
            return tp_fail(TP_ERR_INVALID, "session: token %ld at %zu is outside the "
                           "vocabulary (%d)", (long)tokens[t], t, s->c->vocab);
    /* computed once, so prefill and every decode step size the same KV regions */
    size_t n_ctx = s->n_ctx ? s->n_ctx : tp_session_context(s->c, &s->opt, n);
    /* refused before any input is written or any node runs */
    if (s->n_past + n > n_ctx)
        return tp_fail(TP_ERR_INVALID, "session: position %zu is outside the KV context "
                       "(n_ctx %zu; %zu tokens cached, %zu more requested)",
                       s->n_past + n - 1, n_ctx, s->n_past, n);
    s->n_ctx = n_ctx;

    /* the prompt's forward counts as prefill even when the prompt is one token */
    const int prefill = n > 1 || s->n_past == 0;
    double t0 = tp_clock_seconds();
    tp_allocator *alloc = tp_graph_cache_allocator(s->cache);
    size_t allocs0 = tp_alloc_pool_allocations(alloc);
    float *all = NULL;
    tp_status st = forward_chunks(s, tokens, n, n_out, prefill, &all);
    if (st == TP_OK && all) {
        free(s->last_logits);
        s->last_logits = all;
        s->last_rows = n_out;
        all = NULL;
    }
    free(all);
    if (st != TP_OK)
        return st;
    if (logits)
        memcpy(logits, s->last_logits, n_out * (size_t)s->c->vocab * sizeof *logits);
    s->stats.last_pool_allocations = tp_alloc_pool_allocations(alloc) - allocs0;
    double dt = tp_clock_seconds() - t0;
    if (prefill) {
        s->stats.prefill_tokens += n;
        s->stats.prefill_seconds += dt;
    } else {
        s->stats.decode_tokens += n;
        s->stats.decode_seconds += dt;
    }
    return TP_OK;
}

int32_t tp_argmax(const float *logits, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = i;
    return (int32_t)best;
}

tp_status tp_session_generate_with(tp_session *s, const int32_t *prompt, size_t n_prompt,
                                   size_t max_new, const tp_generate_options *options,
                                   int32_t *out, size_t *n_generated, float *logits)
{
    if (n_generated)
        *n_generated = 0;
    if (!s || !prompt || (!out && max_new))
        return tp_fail(TP_ERR_INVALID, "tp_session_generate: NULL argument");
    tp_generate_options none = {NULL, NULL, NULL};
    const tp_generate_options *o = options ? options : &none;
    size_t vocab = (size_t)s->c->vocab;
    if (o->sampler && tp_sampler_n_vocab(o->sampler) != vocab)
        return tp_fail(TP_ERR_INVALID, "tp_session_generate: a sampler for %zu ids, the model "
                       "has %zu", tp_sampler_n_vocab(o->sampler), vocab);
    size_t n_out = s->opt.tail_rows ? 1 : n_prompt;
    tp_status st = tp_session_forward(s, prompt, n_prompt, n_out, NULL);
    if (st != TP_OK)
        return st;
    const float *last = s->last_logits + (n_out - 1) * vocab;
    for (size_t i = 0; i < max_new; i++) {
        if (i > 0) {
            st = tp_session_forward(s, &out[i - 1], 1, 1, NULL);
            if (st != TP_OK)
                return st;
            last = s->last_logits;
        }
        if (o->sampler)
            TP_TRY(tp_sampler_sample(o->sampler, last, &out[i]));
        else
            out[i] = tp_argmax(last, vocab);
        if (n_generated)
            *n_generated = i + 1;
        if (o->on_token && o->on_token(o->user, out[i], i) != 0)
            break;
    }
    if (logits)
        memcpy(logits, last, vocab * sizeof *logits);
    return TP_OK;
}

tp_status tp_session_generate(tp_session *s, const int32_t *prompt, size_t n_prompt,
                              size_t max_new, int32_t *out, float *logits)
{
    return tp_session_generate_with(s, prompt, n_prompt, max_new, NULL, out, NULL, logits);
}

size_t tp_session_n_past(const tp_session *s)
{
    return s ? s->n_past : 0;
}

size_t tp_session_n_ctx(const tp_session *s)
{
    return s ? s->n_ctx : 0;
}

tp_allocator *tp_session_allocator(tp_session *s)
{
    return s ? tp_graph_cache_allocator(s->cache) : NULL;
}

tp_graph_cache *tp_session_cache(tp_session *s)
{
    return s ? s->cache : NULL;
}

const tp_graph *tp_session_graph(const tp_session *s)
{
    return s ? s->last_graph : NULL;
}

tp_session_stats tp_session_get_stats(const tp_session *s)
{
    tp_session_stats z;
    memset(&z, 0, sizeof z);
    return s ? s->stats : z;
}

/* ---- dumps ------------------------------------------------------------------------------- */

static tp_status write_f32(const char *dir, const char *name, const float *data, size_t n)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return tp_fail(TP_ERR_INVALID, "dump: path '%s/%s' is too long", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return tp_fail(TP_ERR_IO, "dump: cannot open '%s' for writing", path);
    unsigned char chunk[4096];
    size_t used = 0;
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        uint32_t u;
        memcpy(&u, &data[i], sizeof u);
        /* little-endian whatever the host */
        chunk[used++] = (unsigned char)(u & 0xff);
        chunk[used++] = (unsigned char)((u >> 8) & 0xff);
        chunk[used++] = (unsigned char)((u >> 16) & 0xff);
        chunk[used++] = (unsigned char)(u >> 24);
        if (used == sizeof chunk) {
            bad = fwrite(chunk, 1, used, f) != used;
            used = 0;
        }
    }
    if (!bad && used)
        bad = fwrite(chunk, 1, used, f) != used;
    bad |= fclose(f) != 0;
    if (bad)
        return tp_fail(TP_ERR_IO, "dump: writing '%s' failed", path);
    return TP_OK;
}

/* Region r (n_ctx rows of width elements in its type) as f32 into *buf (grown as needed). */
static tp_status region_f32(tp_allocator *alloc, const tp_bufref *ref, tp_dtype type,
                            size_t width, float **buf, size_t *cap, size_t *n)
{
    const size_t row = tp_dtype_row_bytes(type, width);
    const size_t rows = row ? ref->len * sizeof(float) / row : 0;
    *n = type == TP_DTYPE_F32 ? ref->len : rows * width;
    if (ref->len + *n > *cap)
        TP_TRY(TP_GROW(buf, cap, ref->len + *n));
    /* the raw region after the f32 rows it becomes */
    float *raw = *buf + *n;
    TP_TRY(tp_alloc_read(alloc, ref, raw));
    if (type == TP_DTYPE_F32) {
        memcpy(*buf, raw, *n * sizeof(float));
        return TP_OK;
    }
    const uint32_t id = type == TP_DTYPE_F16 ? TP_TYPE_F16 : TP_TYPE_Q8_0;
    for (size_t r = 0; r < rows; r++)
        TP_TRY(tp_dequantize_row(id, (const unsigned char *)raw + r * row, *buf + r * width,
                                 width));
    return TP_OK;
}

tp_status tp_session_dump(tp_session *s, const char *dir)
{
    if (!s || !dir)
        return tp_fail(TP_ERR_INVALID, "tp_session_dump: NULL argument");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return tp_fail(TP_ERR_IO, "dump: cannot create directory '%s'", dir);
    tp_status st = TP_OK;
    if (s->last_logits)
        st = write_f32(dir, "logits.f32", s->last_logits, s->last_rows * (size_t)s->c->vocab);
    tp_allocator *alloc = tp_graph_cache_allocator(s->cache);
    const size_t width = (size_t)s->c->n_head_kv * (size_t)s->c->head_dim;
    float *buf = NULL;
    size_t cap = 0;
    for (int L = 0; st == TP_OK && L < s->c->n_layer; L++) {
        tp_bufref kv[2];
        if (!tp_alloc_kv_pair(alloc, L, &kv[0], &kv[1]))
            continue;
        char name[64];
        snprintf(name, sizeof name, "kv.%d.k", L);
        const tp_persistent_region *r = tp_alloc_find_persistent(alloc, name);
        const tp_dtype type = r ? r->dtype : TP_DTYPE_F32;
        for (int which = 0; which < 2 && st == TP_OK; which++) {
            size_t n = 0;
            st = region_f32(alloc, &kv[which], type, width, &buf, &cap, &n);
            snprintf(name, sizeof name, "kv.%d.%c.f32", L, which ? 'v' : 'k');
            if (st == TP_OK)
                st = write_f32(dir, name, buf, n);
        }
    }
    free(buf);
    return st;
}
