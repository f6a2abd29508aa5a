/* tensorplan model: the memory report a user wants before running a model. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_run.h"
#include "model_report.h"
#include "tensorplan/alloc.h"
#include "tensorplan/session.h"
#include "tensorplan/gguf.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/model.h"
#include "tensorplan/plan_html.h"

#define DEFAULT_PROMPT 440

void tp_help_model(FILE *out)
{
    fprintf(out,
        "usage: tensorplan model MODEL [--prompt N] [--n-ctx C] [--kv-type T] [--ubatch U]\n"
        "                        [--json] [--budget BYTES] [--html FILE] [--explain]\n"
        "\n"
        "Reports the memory a model needs before anything runs. MODEL is a GGUF file (only its\n"
        "metadata and tensor infos are read, never a weight byte) or a built-in config. Shows\n"
        "the weight bytes as stored, per type (a built-in config: f32), the KV cache bytes (K\n"
        "and V regions per layer in the KV type, and what f32, f16 and q8_0 would take), and\n"
        "for the prefill (N prompt tokens in chunks of U: one chunk's graph, logits for the\n"
        "last token) and a decode step (1 token): nodes, dead nodes, and for the pool and arena\n"
        "strategies under the sole-consumer and last-consumer aliasing policies the buffers,\n"
        "activation bytes, peak held bytes and planning time, next to the naive total and the\n"
        "peak-live lower bound; then per strategy the total = weights + KV + the larger of the\n"
        "prefill and decode activation bytes (docs/gguf.md, \"tensorplan model\").\n"
        "\n"
        "built-in MODEL: %s\n"
        "\n"
        "options:\n"
        "  --prompt N      prompt tokens of the prefill (default %d, at most the model's\n"
        "                  maximum context)\n"
        "  --n-ctx C       KV context requested (default %d); the context used is\n"
        "                  min(max(C, N), the model's maximum)\n"
        "  --kv-type T     the KV cache's type: f32, f16 (default, as llama.cpp) or q8_0\n"
        "                  (head_dim a multiple of 32)\n"
        "  --ubatch U      prefill chunk tokens (default %d): a longer prompt is planned as\n"
        "                  chunks of U, so its activations do not grow with N\n"
        "  --json          one JSON object: weight_bytes, weight_bytes_by_type, n_ctx, prompt,\n"
        "                  ubatch, prefill_tokens, kv_type, kv_bytes, kv_bytes_by_type, prefill\n"
        "                  and decode plans, totals, total_bytes (smallest)\n"
        "  --budget BYTES  BYTES (suffix K, M or G: powers of 1024): does the smallest total fit\n"
        "                  at the requested context, the largest context that fits (prompt\n"
        "                  min(N, context)) and the largest prompt that fits (context = prompt)\n"
        "  --html FILE     write a picture of the prefill and decode plans (pool strategy,\n"
        "                  sole-consumer aliasing) side by side as one self-contained HTML\n"
        "                  page (docs/picture.md)\n"
        "  --explain       for both plans, the nodes live at the step where live bytes peak,\n"
        "                  largest first, with their share of the peak\n"
        "  -h, --help      this text\n"
        "\n"
        "exit codes:\n"
        "  0  reported (and, with --budget, fits)\n"
        "  1  runtime failure (out of memory, file unreadable)\n"
        "  2  bad command line (unknown model, a count out of range)\n"
        "  3  the GGUF file was refused (one line naming the file and the key or tensor)\n"
        "  4  with --budget: does not fit at the requested context\n"
        "\n"
        "examples:\n"
        "  tensorplan model qwen2.5-0.5b --prompt 440\n"
        "  tensorplan model model.gguf --n-ctx 8192 --budget 6G\n",
        tp_model_builtin_names(), DEFAULT_PROMPT, TP_DEFAULT_N_CTX, TP_DEFAULT_UBATCH);
}

/* Parameters of the f32 weights of a built-in config (the tensors model.h names). */
static size_t weight_params(const tp_model_config *c)
{
    size_t ne = (size_t)c->n_embd, q = (size_t)(c->n_head * c->head_dim);
    size_t kv = (size_t)(c->n_head_kv * c->head_dim), nf = (size_t)c->n_ff;
    size_t layer = ne                                   /* attn_norm        */
                   + ne * q + ne * kv * 2               /* q, k, v matrices */
                   + (c->qkv_bias ? q + 2 * kv : 0)     /* their biases     */
                   + q * ne                             /* attn_output      */
                   + (c->attn_out_bias ? ne : 0)        /* its bias         */
                   + ne                                 /* ffn_norm         */
                   + 3 * ne * nf                        /* gate, up, down   */
                   + (c->ffn_bias ? 2 * nf + ne : 0);   /* their biases     */
    size_t total = (size_t)c->vocab * ne + (size_t)c->n_layer * layer + ne;
    if (!c->tied_embeddings)
        total += (size_t)c->vocab * ne;
    if (c->output_bias)
        total += (size_t)c->vocab;
    if (c->rope_freqs)
        total += (size_t)c->head_dim / 2;
    return total;
}

static double mb(size_t bytes)
{
    return (double)bytes / 1e6;
}

/* A built-in name, else a GGUF file (its metadata and tensor infos only). */
static int load_model(const char *name, mr_model *m, tp_gguf **g)
{
    memset(m, 0, sizeof *m);
    if (!name) {
        tp_cli_error("no MODEL given (a GGUF file or one of: %s)", tp_model_builtin_names());
        return TP_EXIT_USAGE;
    }
    if (tp_model_config_builtin(name, &m->cfg) == TP_OK) {
        m->weight_bytes = weight_params(&m->cfg) * sizeof(float);
        m->bytes_by_type[TP_TYPE_F32] = m->weight_bytes;
        return TP_EXIT_OK;
    }
    tp_status st = tp_gguf_open(name, g);
    if (st == TP_OK)
        st = tp_gguf_model_config(*g, &m->cfg);
    if (st == TP_OK)
        st = tp_gguf_model_weight_bytes(*g, m->bytes_by_type, &m->weight_bytes);
    if (st != TP_OK) {
        /* a bare name that is no file: an unknown built-in, a usage error */
        if (st == TP_ERR_IO && strchr(name, '/') == NULL && !strstr(name, ".gguf") &&
            access(name, F_OK) != 0) {
            tp_cli_error("unknown model '%s' (built-in: %s; or a GGUF file)", name,
                         tp_model_builtin_names());
            return TP_EXIT_USAGE;
        }
        tp_cli_error("%s", tp_last_error());
        return tp_cli_exit_for(st);
    }
    m->file = name;
    return TP_EXIT_OK;
}

static void print_phase(const mr_report *r, int phase)
{
    if (phase == 0 && r->chunk < r->prompt)
        printf("\nprefill: %zu tokens in chunks of %zu (the plan of one chunk), logits for "
               "the last one\n", r->prompt, r->chunk);
    else if (phase == 0)
        printf("\nprefill: %zu tokens, logits for the last one\n", r->prompt);
    else
        printf("\ndecode: 1 token\n");
    printf("  %-8s %-14s %8s %14s %10s %14s %10s %10s\n", "strategy", "aliasing", "buffers",
           "activation B", "MB", "peak held B", "MB", "plan ms");
    for (size_t k = 0; k < MR_PLANS; k++) {
        const tp_plan_stats *s = &r->plan[phase][k];
        printf("  %-8s %-14s %8zu %14zu %10.3f %14zu %10.3f %10.3f\n",
               tp_alloc_strategy_name(mr_strategy(k)), tp_alias_policy_name(mr_policy(k)),
               s->activation_buffers, s->activation_bytes, mb(s->activation_bytes),
               s->peak_held_bytes, mb(s->peak_held_bytes), s->plan_seconds * 1e3);
    }
    const tp_plan_stats *f = &r->plan[phase][0], *l = &r->plan[phase][MR_PLANS - 1];
    printf("  peak live lower bound: %zu B (%.3f MB) sole-consumer, %zu B (%.3f MB) "
           "last-consumer\n", f->peak_live_bytes, mb(f->peak_live_bytes), l->peak_live_bytes,
           mb(l->peak_live_bytes));
    printf("  nodes %zu, live %zu, dead %zu; naive (every node its own buffer) %zu B "
           "(%.3f MB)\n", f->nodes, f->live_nodes, f->dead_nodes, f->naive_bytes,
           mb(f->naive_bytes));
}

static void print_text(const mr_model *m, const mr_report *r, const mr_budget *b)
{
    const tp_model_config *c = &m->cfg;
    printf("model %s: %s, %d layers, n_embd %d, %d heads (%d KV) of %d, n_ff %d, vocab %d, "
           "max context %d\n", c->name, c->arch == TP_ARCH_LLAMA ? "llama" : "qwen2",
           c->n_layer, c->n_embd, c->n_head, c->n_head_kv, c->head_dim, c->n_ff, c->vocab,
           c->max_ctx);
    if (m->file)
        printf("file %s\n", m->file);
    printf("weights: %zu bytes as stored (%.1f MB):", m->weight_bytes, mb(m->weight_bytes));
    for (uint32_t t = 0; t < TP_TYPE_ID_LIMIT; t++)
        if (m->bytes_by_type[t])
            printf(" %s %zu", tp_type_name(t), m->bytes_by_type[t]);
    printf("\nKV cache: n_ctx %zu: %d layers x 2 regions x %zu elements of %s = %zu bytes "
           "(%.1f MB)\n", r->n_ctx, c->n_layer, (size_t)(c->n_head_kv * c->head_dim) * r->n_ctx,
           tp_dtype_name(m->kv_type), r->kv_bytes, mb(r->kv_bytes));
    printf("  by type: f32 %zu, f16 %zu", r->kv_bytes_by_type[0], r->kv_bytes_by_type[1]);
    if (r->kv_bytes_by_type[2])
        printf(", q8_0 %zu\n", r->kv_bytes_by_type[2]);
    else
        printf(" (q8_0 needs head_dim a multiple of 32)\n");
    print_phase(r, 0);
    print_phase(r, 1);
    printf("\ntotal: weights + KV + the larger of the prefill and decode activations\n");
    for (size_t k = 0; k < MR_PLANS; k++)
        printf("  %-8s %-14s %14zu B (%.1f MB)%s\n", tp_alloc_strategy_name(mr_strategy(k)),
               tp_alias_policy_name(mr_policy(k)), r->total[k], mb(r->total[k]),
               k == r->best ? "  smallest" : "");
    if (!b)
        return;
    printf("\nbudget %zu B: %s at n_ctx %zu with a %zu-token prompt\n", b->bytes,
           b->fits ? "fits" : "does not fit", r->n_ctx, r->prompt);
    printf("  largest context that fits: %zu (prompt %zu); largest prompt that fits (context "
           "= prompt): %zu\n", b->max_n_ctx, b->max_n_ctx_prompt, b->max_prompt);
}

static cJSON *plan_json(const tp_plan_stats *s, size_t k)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "strategy", tp_alloc_strategy_name(mr_strategy(k)));
    cJSON_AddStringToObject(o, "aliasing", tp_alias_policy_name(mr_policy(k)));
    cJSON_AddNumberToObject(o, "buffers", (double)s->activation_buffers);
    cJSON_AddNumberToObject(o, "activation_bytes", (double)s->activation_bytes);
    cJSON_AddNumberToObject(o, "peak_held_bytes", (double)s->peak_held_bytes);
    cJSON_AddNumberToObject(o, "peak_live_bytes", (double)s->peak_live_bytes);
    cJSON_AddNumberToObject(o, "naive_bytes", (double)s->naive_bytes);
    cJSON_AddNumberToObject(o, "nodes", (double)s->nodes);
    cJSON_AddNumberToObject(o, "dead_nodes", (double)s->dead_nodes);
    cJSON_AddNumberToObject(o, "plan_ms", s->plan_seconds * 1e3);
    return o;
}

static cJSON *config_json(const mr_model *m)
{
    const tp_model_config *c = &m->cfg;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "arch", c->arch == TP_ARCH_LLAMA ? "llama" : "qwen2");
    const struct { const char *k; int v; } ints[] = {
        {"n_layer", c->n_layer},     {"n_embd", c->n_embd},     {"n_head", c->n_head},
        {"n_head_kv", c->n_head_kv}, {"head_dim", c->head_dim}, {"n_ff", c->n_ff},
        {"vocab", c->vocab},         {"max_ctx", c->max_ctx},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        cJSON_AddNumberToObject(o, ints[i].k, ints[i].v);
    return o;
}

static int print_json(const mr_model *m, const mr_report *r, const mr_budget *b)
{
    cJSON *o = cJSON_CreateObject();
    if (m->file)
        cJSON_AddStringToObject(o, "file", m->file);
    cJSON_AddItemToObject(o, "model", config_json(m));
    cJSON_AddNumberToObject(o, "weight_bytes", (double)m->weight_bytes);
    cJSON *per = cJSON_AddObjectToObject(o, "weight_bytes_by_type");
    for (uint32_t t = 0; t < TP_TYPE_ID_LIMIT; t++)
        if (m->bytes_by_type[t])
            cJSON_AddNumberToObject(per, tp_type_name(t), (double)m->bytes_by_type[t]);
    cJSON_AddNumberToObject(o, "n_ctx", (double)r->n_ctx);
    cJSON_AddNumberToObject(o, "prompt", (double)r->prompt);
    cJSON_AddNumberToObject(o, "ubatch", (double)m->ubatch);
    cJSON_AddNumberToObject(o, "prefill_tokens", (double)r->chunk);
    cJSON_AddStringToObject(o, "kv_type", tp_dtype_name(m->kv_type));
    cJSON_AddNumberToObject(o, "kv_bytes", (double)r->kv_bytes);
    cJSON *kvt = cJSON_AddObjectToObject(o, "kv_bytes_by_type");
    const char *kv_names[3] = {"f32", "f16", "q8_0"};
    for (int t = 0; t < 3; t++)
        if (r->kv_bytes_by_type[t])
            cJSON_AddNumberToObject(kvt, kv_names[t], (double)r->kv_bytes_by_type[t]);
    const char *phases[2] = {"prefill", "decode"};
    for (int ph = 0; ph < 2; ph++) {
        cJSON *arr = cJSON_AddArrayToObject(o, phases[ph]);
        for (size_t k = 0; k < MR_PLANS; k++)
            cJSON_AddItemToArray(arr, plan_json(&r->plan[ph][k], k));
    }
    cJSON *tot = cJSON_AddArrayToObject(o, "totals");
    for (size_t k = 0; k < MR_PLANS; k++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "strategy", tp_alloc_strategy_name(mr_strategy(k)));
        cJSON_AddStringToObject(t, "aliasing", tp_alias_policy_name(mr_policy(k)));
        cJSON_AddNumberToObject(t, "total_bytes", (double)r->total[k]);
        cJSON_AddItemToArray(tot, t);
    }
    cJSON_AddNumberToObject(o, "total_bytes", (double)r->total[r->best]);
    if (b) {
        cJSON *bj = cJSON_AddObjectToObject(o, "budget");
        cJSON_AddNumberToObject(bj, "bytes", (double)b->bytes);
        cJSON_AddBoolToObject(bj, "fits", b->fits);
        cJSON_AddNumberToObject(bj, "max_n_ctx", (double)b->max_n_ctx);
        cJSON_AddNumberToObject(bj, "max_n_ctx_prompt", (double)b->max_n_ctx_prompt);
        cJSON_AddNumberToObject(bj, "max_prompt", (double)b->max_prompt);
    }
    if (tp_cli_json_print(o) != TP_OK) {
        tp_cli_error("out of memory");
        return TP_EXIT_ERROR;
    }
    return TP_EXIT_OK;
}

typedef struct model_args {
    const char *model, *prompt, *n_ctx, *budget, *html, *kv_type, *ubatch;
    int json, explain;
} model_args;

static int parse_args(int argc, char **argv, model_args *a)
{
    memset(a, 0, sizeof *a);
    const tp_cli_flag flags[] = {
        {"--prompt", &a->prompt}, {"--n-ctx", &a->n_ctx}, {"--budget", &a->budget},
        {"--html", &a->html}, {"--kv-type", &a->kv_type}, {"--ubatch", &a->ubatch}};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--explain") == 0) {
            *(argv[i][2] == 'j' ? &a->json : &a->explain) = 1;
            continue;
        }
        const int taken = tp_cli_take_flags(argc, argv, &i, flags, sizeof flags / sizeof *flags);
        if (taken < 0)
            return -1;
        if (taken)
            continue;
        if (tp_cli_take_positional(argv[0], argv[i], &a->model, "MODEL") != 0)
            return -1;
    }
    return 0;
}

/* --html and --explain: the default plans of the prefill and decode graphs reported above. */
static int picture(const mr_model *m, size_t prompt, size_t n_ctx, const char *html,
                   int explain, int quiet)
{
    if (quiet) /* --json: stdout holds the one object, so only the page is written */
        explain = 0;
    if (!html && !explain)
        return TP_EXIT_OK;
    tp_graph_params pre, dec; /* as the report above builds them */
    memset(&pre, 0, sizeof pre);
    pre.n_tokens = prompt;
    pre.n_out = 1;
    pre.n_ctx = n_ctx;
    pre.fuse_ffn = 1;
    pre.kv_type = m->kv_type;
    dec = pre;
    dec.n_tokens = 1;
    if (explain)
        printf("\n");
    if (tp_html_model_report(html, explain ? stdout : NULL, &m->cfg, &pre, &dec, NULL) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return TP_EXIT_ERROR;
    }
    if (html && !quiet)
        printf("\npicture written to %s\n", html);
    return TP_EXIT_OK;
}

int tp_cmd_model(int argc, char **argv)
{
    model_args a;
    if (parse_args(argc, argv, &a) != 0)
        return TP_EXIT_USAGE;
    mr_model m;
    tp_gguf *g = NULL;
    int rc = load_model(a.model, &m, &g);
    size_t max_ctx = (size_t)m.cfg.max_ctx, prompt = DEFAULT_PROMPT, n_ctx = TP_DEFAULT_N_CTX;
    mr_budget budget;
    memset(&budget, 0, sizeof budget);
    if (rc == TP_EXIT_OK) {
        if (prompt > max_ctx)
            prompt = max_ctx;
        if ((a.prompt && tp_cli_parse_count_size("--prompt", a.prompt, 1, max_ctx, &prompt)) ||
            (a.n_ctx && tp_cli_parse_count_size("--n-ctx", a.n_ctx, 1, SIZE_MAX / 2, &n_ctx)) ||
            (a.budget && tp_cli_parse_size("--budget", a.budget, &budget.bytes)))
            rc = TP_EXIT_USAGE;
    }
    if (rc == TP_EXIT_OK) {
        tp_session_options ko = tp_session_options_default();
        if (tp_cli_run_kv_options(a.kv_type, a.ubatch, &ko) != 0 ||
            tp_cli_run_check_kv_type(&m.cfg, &ko) != 0)
            rc = TP_EXIT_USAGE;
        m.kv_type = ko.kv_type;
        m.ubatch = ko.ubatch;
    }
    mr_report r;
    if (rc == TP_EXIT_OK && (mr_compute(&m, n_ctx, prompt, &r) != TP_OK ||
                             (a.budget && mr_budget_search(&m, &r, prompt, &budget) != TP_OK))) {
        tp_cli_error("%s", tp_last_error());
        rc = TP_EXIT_ERROR;
    }
    if (rc == TP_EXIT_OK) {
        if (a.json)
            rc = print_json(&m, &r, a.budget ? &budget : NULL);
        else
            print_text(&m, &r, a.budget ? &budget : NULL);
        if (rc == TP_EXIT_OK)
            rc = picture(&m, r.chunk, r.n_ctx, a.html, a.explain, a.json);
        if (rc == TP_EXIT_OK && a.budget && !budget.fits)
            rc = TP_EXIT_NO_FIT;
    }
    tp_gguf_close(g);
    return rc;
}
