/* The memory report of tensorplan model: planning and the budget search (model_report.h). */
#include "model_report.h"

#include <string.h>

#include "tensorplan/session.h"

static const tp_alloc_strategy strategies[MR_PLANS] = {TP_STRATEGY_POOL, TP_STRATEGY_POOL,
                                                       TP_STRATEGY_ARENA, TP_STRATEGY_ARENA};
static const tp_alias_policy policies[MR_PLANS] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                                   TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER};

tp_alloc_strategy mr_strategy(size_t k)
{
    return strategies[k];
}

tp_alias_policy mr_policy(size_t k)
{
    return policies[k];
}

/* One graph (prefill or decode) planned with each strategy and policy on a fresh allocator. */
static tp_status plan_all(const tp_graph *g, tp_plan_stats out[MR_PLANS])
{
    for (size_t k = 0; k < MR_PLANS; k++) {
        tp_allocator *a = NULL;
        tp_alloc_options o = tp_alloc_options_default();
        o.strategy = strategies[k];
        o.aliasing = policies[k];
        /* planned, never allocated: the report costs no memory of the context's size */
        tp_status st = tp_allocator_create_planning(&a);
        if (st == TP_OK)
            st = tp_alloc_graph(a, g, &o);
        if (st == TP_OK)
            out[k] = tp_alloc_stats(a);
        tp_allocator_destroy(a);
        if (st != TP_OK)
            return st;
    }
    return TP_OK;
}

tp_status mr_compute(const mr_model *m, size_t n_ctx, size_t prompt, mr_report *r)
{
    memset(r, 0, sizeof *r);
    tp_session_options opts = tp_session_options_default();
    opts.n_ctx = n_ctx;
    r->n_ctx = tp_session_context(&m->cfg, &opts, prompt);
    r->prompt = prompt;
    const tp_model_config *c = &m->cfg;
    const tp_dtype types[3] = {TP_DTYPE_F32, TP_DTYPE_F16, TP_DTYPE_Q8_0};
    const size_t width = (size_t)c->n_head_kv * (size_t)c->head_dim;
    for (int t = 0; t < 3; t++) {
        size_t row = tp_model_check_kv_type(c, types[t]) == TP_OK
                         ? tp_dtype_row_bytes(types[t], width) : 0;
        r->kv_bytes_by_type[t] = (size_t)c->n_layer * 2 * row * r->n_ctx;
        if (types[t] == m->kv_type)
            r->kv_bytes = r->kv_bytes_by_type[t];
    }
    opts.ubatch = m->ubatch;
    r->chunk = tp_session_chunk(&opts, prompt);
    const size_t tokens[2] = {r->chunk, 1};
    for (int phase = 0; phase < 2; phase++) {
        tp_graph_params gp;
        memset(&gp, 0, sizeof gp);
        gp.n_tokens = tokens[phase];
        gp.n_out = 1;
        gp.n_ctx = r->n_ctx;
        gp.fuse_ffn = 1;
        gp.kv_type = m->kv_type;
        tp_graph *g = NULL;
        tp_status st = tp_model_build_graph(c, &gp, &g);
        if (st == TP_OK)
            st = plan_all(g, r->plan[phase]);
        tp_graph_destroy(g);
        if (st != TP_OK)
            return st;
    }
    for (size_t k = 0; k < MR_PLANS; k++) {
        size_t act = r->plan[0][k].activation_bytes;
        if (r->plan[1][k].activation_bytes > act)
            act = r->plan[1][k].activation_bytes;
        r->total[k] = m->weight_bytes + r->kv_bytes + act;
        if (r->total[k] < r->total[r->best])
            r->best = k;
    }
    return TP_OK;
}

/* Does the model fit bytes at context n_ctx with a prefill of min(prompt, n_ctx) tokens? */
static tp_status fits_at(const mr_model *m, size_t n_ctx, size_t prompt, size_t bytes, int *ok)
{
    mr_report r;
    tp_status st = mr_compute(m, n_ctx, prompt < n_ctx ? prompt : n_ctx, &r);
    if (st == TP_OK)
        *ok = r.total[r.best] <= bytes;
    return st;
}

/* The largest C in [1, max] with fits(C) by bisection (0 when C = 1 does not fit): the answer
 * fits and C + 1 does not (or C = max). prompt 0 means "the prompt is the context". */
static tp_status largest(const mr_model *m, size_t max, size_t prompt, size_t bytes,
                         size_t *out)
{
    int ok = 0;
    tp_status st;
    const size_t p1 = prompt ? prompt : 1, pmax = prompt ? prompt : max;
    if ((st = fits_at(m, 1, p1, bytes, &ok)) != TP_OK)
        return st;
    if (!ok) {
        *out = 0;
        return TP_OK;
    }
    if ((st = fits_at(m, max, pmax, bytes, &ok)) != TP_OK)
        return st;
    if (ok) {
        *out = max;
        return TP_OK;
    }
    size_t lo = 1, hi = max;
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if ((st = fits_at(m, mid, prompt ? prompt : mid, bytes, &ok)) != TP_OK)
            return st;
        if (ok)
            lo = mid;
        else
            hi = mid;
    }
    *out = lo;
    return TP_OK;
}

tp_status mr_budget_search(const mr_model *m, const mr_report *requested, size_t prompt,
                           mr_budget *b)
{
    const size_t max = (size_t)m->cfg.max_ctx;
    b->fits = requested->total[requested->best] <= b->bytes;
    tp_status st = largest(m, max, prompt, b->bytes, &b->max_n_ctx);
    if (st != TP_OK)
        return st;
    b->max_n_ctx_prompt = b->max_n_ctx < prompt ? b->max_n_ctx : prompt;
    return largest(m, max, 0, b->bytes, &b->max_prompt);
}
