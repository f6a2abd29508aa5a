/* tensorplan model: the memory report a user wants before running a model. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tensorplan/alloc.h"
#include "tensorplan/decode.h"
#include "tensorplan/model.h"
#include "tensorplan/plan_html.h"

#define DEFAULT_PROMPT 440

void tp_help_model(FILE *out)
{
    fprintf(out,
        "usage: tensorplan model MODEL [--prompt N] [--n-ctx C] [--html FILE] [--explain]\n"
        "\n"
        "Reports the memory a built-in model needs before anything runs: weight bytes (f32),\n"
        "KV cache bytes, and for the prefill (N prompt tokens, logits for the last one) and\n"
        "a decode step (1 token): nodes, dead nodes, and for the pool and arena strategies\n"
        "under the sole-consumer and last-consumer aliasing policies the buffers,\n"
        "activation bytes, peak held bytes and planning time, next to the naive total\n"
        "(every node its own buffer) and the peak-live lower bound.\n"
        "\n"
        "MODEL: %s\n"
        "\n"
        "options:\n"
        "  --prompt N   prompt tokens of the prefill (default %d)\n"
        "  --n-ctx C    KV context requested (default %d); the context used is\n"
        "               min(max(C, N), the model's maximum), computed once so prefill and\n"
        "               decode size the same KV regions\n"
        "  --html FILE  write a picture of the prefill and decode plans (pool strategy,\n"
        "               sole-consumer aliasing) side by side as one self-contained HTML page\n"
        "               (docs/picture.md)\n"
        "  --explain    for both plans, the nodes live at the step where live bytes peak,\n"
        "               largest first, with their share of the peak\n"
        "  -h, --help   this text\n"
        "\n"
        "exit codes:\n"
        "  0  reported\n"
        "  1  runtime failure (out of memory)\n"
        "  2  bad command line (unknown model, a count out of range)\n"
        "\n"
        "example:\n"
        "  tensorplan model qwen2.5-0.5b --prompt 440\n",
        tp_model_builtin_names(), DEFAULT_PROMPT, TP_DEFAULT_N_CTX);
}

/* Parameters of the f32 weights of a Qwen2 config (the tensors model.h names). */
static size_t weight_params(const tp_model_config *c)
{
    size_t ne = (size_t)c->n_embd, q = (size_t)(c->n_head * c->head_dim);
    size_t kv = (size_t)(c->n_head_kv * c->head_dim), nf = (size_t)c->n_ff;
    size_t layer = ne                                   /* attn_norm        */
                   + ne * q + ne * kv * 2               /* q, k, v matrices */
                   + (c->qkv_bias ? q + 2 * kv : 0)     /* their biases     */
                   + q * ne                             /* attn_output      */
                   + ne                                 /* ffn_norm         */
                   + 3 * ne * nf;                       /* gate, up, down   */
    size_t total = (size_t)c->vocab * ne + (size_t)c->n_layer * layer + ne;
    if (!c->tied_embeddings)
        total += (size_t)c->vocab * ne;
    return total;
}

static double mb(size_t bytes)
{
    return (double)bytes / 1e6;
}

/* Plans g with every strategy and policy on a fresh allocator each and prints one row each. */
static int report(const char *title, const tp_graph *g)
{
    static const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA};
    static const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER};
    tp_plan_stats first;
    memset(&first, 0, sizeof first);
    printf("\n%s\n", title);
    printf("  %-8s %-14s %8s %14s %10s %14s %10s %10s\n", "strategy", "aliasing", "buffers",
           "activation B", "MB", "peak held B", "MB", "plan ms");
    for (size_t si = 0; si < 2; si++) {
        for (size_t pi = 0; pi < 2; pi++) {
            tp_allocator *a = NULL;
            tp_alloc_options o = tp_alloc_options_default();
            o.strategy = strategies[si];
            o.aliasing = policies[pi];
            if (tp_allocator_create_host(&a) != TP_OK || tp_alloc_graph(a, g, &o) != TP_OK) {
                tp_cli_error("%s", tp_last_error());
                tp_allocator_destroy(a);
                return TP_EXIT_ERROR;
            }
            tp_plan_stats s = tp_alloc_stats(a);
            if (si == 0 && pi == 0)
                first = s;
            printf("  %-8s %-14s %8zu %14zu %10.3f %14zu %10.3f %10.3f\n",
                   tp_alloc_strategy_name(o.strategy), tp_alias_policy_name(o.aliasing),
                   s.activation_buffers, s.activation_bytes, mb(s.activation_bytes),
                   s.peak_held_bytes, mb(s.peak_held_bytes), s.plan_seconds * 1e3);
            if (pi == 1 && si == 1)
                printf("  peak live lower bound: %zu B (%.3f MB) sole-consumer, %zu B "
                       "(%.3f MB) last-consumer\n",
                       first.peak_live_bytes, mb(first.peak_live_bytes), s.peak_live_bytes,
                       mb(s.peak_live_bytes));
            tp_allocator_destroy(a);
        }
    }
    printf("  nodes %zu, live %zu, dead %zu; naive (every node its own buffer) %zu B "
           "(%.3f MB)\n",
           first.nodes, first.live_nodes, first.dead_nodes, first.naive_bytes,
           mb(first.naive_bytes));
    return TP_EXIT_OK;
}

/* --html and --explain: the default plans of the prefill and decode graphs reported above. */
static int picture(const tp_model_config *cfg, size_t prompt, size_t n_ctx, const char *html,
                   int explain)
{
    if (!html && !explain)
        return TP_EXIT_OK;
    tp_graph_params pre, dec; /* as the report above builds them */
    memset(&pre, 0, sizeof pre);
    pre.n_tokens = prompt;
    pre.n_out = 1;
    pre.n_ctx = n_ctx;
    pre.fuse_ffn = 1;
    dec = pre;
    dec.n_tokens = 1;
    if (explain)
        printf("\n");
    if (tp_html_model_report(html, explain ? stdout : NULL, cfg, &pre, &dec, NULL) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return TP_EXIT_ERROR;
    }
    if (html)
        printf("\npicture written to %s\n", html);
    return TP_EXIT_OK;
}

int tp_cmd_model(int argc, char **argv)
{
    const char *model = NULL, *prompt_s = NULL, *n_ctx_s = NULL, *html_s = NULL;
    int explain = 0;
    const tp_cli_flag flags[] = { { "--prompt", &prompt_s }, { "--n-ctx", &n_ctx_s },
                                  { "--html", &html_s } };
    for (int i = 1; i < argc; i++) {
        const int taken = tp_cli_take_flags(argc, argv, &i, flags, sizeof flags / sizeof *flags);
        if (taken < 0)
            return TP_EXIT_USAGE;
        if (taken)
            continue;
        if (strcmp(argv[i], "--explain") == 0)
            explain = 1;
        else if (tp_cli_take_positional(argv[0], argv[i], &model, "MODEL") != 0)
            return TP_EXIT_USAGE;
    }
    tp_model_config cfg;
    if (tp_cli_builtin_model(model, &cfg) != 0)
        return TP_EXIT_USAGE;
    size_t max_ctx = (size_t)cfg.max_ctx, prompt = DEFAULT_PROMPT, n_ctx = TP_DEFAULT_N_CTX;
    if (prompt > max_ctx)
        prompt = max_ctx;
    if (prompt_s && tp_cli_parse_count_size("--prompt", prompt_s, 1, max_ctx, &prompt) != 0)
        return TP_EXIT_USAGE;
    if (n_ctx_s && tp_cli_parse_count_size("--n-ctx", n_ctx_s, 1, SIZE_MAX / 2, &n_ctx) != 0)
        return TP_EXIT_USAGE;
    /* The rule a run uses (computed once, so prefill and decode size the same KV regions). */
    tp_session_options ctx_opts = tp_session_options_default();
    ctx_opts.n_ctx = n_ctx;
    n_ctx = tp_session_context(&cfg, &ctx_opts, prompt);

    size_t params = weight_params(&cfg);
    size_t kv_elems = (size_t)(cfg.n_head_kv * cfg.head_dim) * n_ctx;
    size_t kv_bytes = (size_t)cfg.n_layer * 2 * kv_elems * sizeof(float);
    printf("model %s: %d layers, n_embd %d, %d heads (%d KV) of %d, n_ff %d, vocab %d\n",
           cfg.name, cfg.n_layer, cfg.n_embd, cfg.n_head, cfg.n_head_kv, cfg.head_dim, cfg.n_ff,
           cfg.vocab);
    printf("weights: %zu parameters, %zu bytes as f32 (%.1f MB)\n", params,
           params * sizeof(float), mb(params * sizeof(float)));
    printf("KV cache: n_ctx %zu: %d layers x 2 regions x %zu elements = %zu bytes (%.1f MB)\n",
           n_ctx, cfg.n_layer, kv_elems, kv_bytes, mb(kv_bytes));

    size_t tokens[2] = {prompt, 1};
    for (int k = 0; k < 2; k++) {
        tp_graph_params gp;
        memset(&gp, 0, sizeof gp);
        gp.n_tokens = tokens[k];
        gp.n_out = 1;
        gp.n_ctx = n_ctx;
        gp.fuse_ffn = 1;
        tp_graph *g = NULL;
        if (tp_model_build_graph(&cfg, &gp, &g) != TP_OK) {
            tp_cli_error("%s", tp_last_error());
            return TP_EXIT_ERROR;
        }
        char title[128];
        if (k == 0)
            snprintf(title, sizeof title, "prefill: %zu tokens, logits for the last one", prompt);
        else
            snprintf(title, sizeof title, "decode: 1 token");
        int rc = report(title, g);
        tp_graph_destroy(g);
        if (rc != TP_EXIT_OK)
            return rc;
    }
    return picture(&cfg, prompt, n_ctx, html_s, explain);
}
