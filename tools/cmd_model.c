/* tensorplan model: the memory report a user wants before running a model. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_run.h"
#include "cli_gguf.h"
#include "model_report.h"
#include "tensorplan/alloc.h"
#include "tensorplan/session.h"
#include "tensorplan/gguf.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/model.h"
#include "tensorplan/model_family.h"
#include "tensorplan/plan_html.h"


void tp_help_model(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_MODEL, "MODEL");
    fprintf(out,
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
        "\n",
        tp_model_builtin_names());
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_MODEL), 0);
    fputs(
        "\n"
        "--json prints one object: weight_bytes, weight_bytes_by_type, n_ctx, prompt, ubatch,\n"
        "prefill_tokens, kv_type, kv_bytes, kv_bytes_by_type, prefill and decode plans,\n"
        "totals, total_bytes (smallest).\n"
        "--html draws the pool strategy under sole-consumer aliasing.\n"
        "\n"
        "exit codes:\n"
        "  0  reported (and, with --budget, fits)\n"
        "  1  runtime failure (out of memory, file unreadable)\n"
        "  2  bad command line (unknown model, a count out of range)\n"
        "  3  the GGUF file was refused (one line naming the file and the key or tensor)\n"
        "  4  with --budget: does not fit at the requested context\n"
        "\n"
        "examples:\n"
        "  tensorplan model qwen2.5-0.5b --prompt-len 440\n"
        "  tensorplan model model.gguf --n-ctx 8192 --budget 6G\n",
        out);
}

/* Parameters of the f32 weights of a built-in config: every tensor of the table
 * (tensorplan/model_family.h) whose group the config's flags ask for. */
static size_t weight_params(const tp_model_config *c)
{
    size_t n = 0, total = 0;
    const tp_model_tensor *t = tp_model_tensors(&n);
    for (size_t i = 0; i < n; i++)
        if (tp_model_group_present(c, t[i].group))
            total += (size_t)tp_model_tensor_dim(c, t[i].ne0) *
                     (size_t)tp_model_tensor_dim(c, t[i].ne1) *
                     (size_t)(t[i].per_layer ? c->n_layer : 1);
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
        if (st == TP_ERR_IO && !strstr(name, ".gguf") && !tp_cli_names_file(name)) {
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
    if (tp_html_model_report(html, explain ? stdout : NULL, &m->cfg, &pre, &dec, NULL) !=
        TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return TP_EXIT_ERROR;
    }
    if (html && !quiet)
        printf("\npicture written to %s\n", html);
    return TP_EXIT_OK;
}

int tp_cmd_model(int argc, char **argv)
{
    tp_cli_args a;
    if (tp_cli_parse(TP_CMD_MODEL, argc, argv, &a) != 0)
        return TP_EXIT_USAGE;
    const int json = tp_cli_given(&a, TP_OPT_JSON), has_budget = tp_cli_given(&a, TP_OPT_BUDGET);
    mr_model m;
    tp_gguf *g = NULL;
    int rc = load_model(a.pos[0], &m, &g);
    size_t max_ctx = (size_t)m.cfg.max_ctx, prompt = TP_MODEL_DEFAULT_PROMPT;
    const size_t n_ctx = tp_cli_given(&a, TP_OPT_N_CTX) ? (size_t)a.opt[TP_OPT_N_CTX].count
                                                        : TP_DEFAULT_N_CTX;
    mr_budget budget;
    memset(&budget, 0, sizeof budget);
    budget.bytes = a.opt[TP_OPT_BUDGET].size;
    if (rc == TP_EXIT_OK) {
        if (prompt > max_ctx)
            prompt = max_ctx;
        if (tp_cli_bound(&a, TP_OPT_PROMPT_LEN, max_ctx) != 0)
            rc = TP_EXIT_USAGE;
        else if (tp_cli_given(&a, TP_OPT_PROMPT_LEN))
            prompt = (size_t)a.opt[TP_OPT_PROMPT_LEN].count;
    }
    if (rc == TP_EXIT_OK) {
        tp_session_options ko = tp_session_options_default();
        tp_cli_kv_options(&a, &ko);
        if (tp_cli_run_check_kv_type(&m.cfg, &ko) != 0)
            rc = TP_EXIT_USAGE;
        m.kv_type = ko.kv_type;
        m.ubatch = ko.ubatch;
    }
    mr_report r;
    if (rc == TP_EXIT_OK && (mr_compute(&m, n_ctx, prompt, &r) != TP_OK ||
                             (has_budget && mr_budget_search(&m, &r, prompt, &budget) != TP_OK))) {
        tp_cli_error("%s", tp_last_error());
        rc = TP_EXIT_ERROR;
    }
    if (rc == TP_EXIT_OK) {
        if (json)
            rc = print_json(&m, &r, has_budget ? &budget : NULL);
        else
            print_text(&m, &r, has_budget ? &budget : NULL);
        if (rc == TP_EXIT_OK)
            rc = picture(&m, r.chunk, r.n_ctx, a.opt[TP_OPT_HTML].text,
                         tp_cli_given(&a, TP_OPT_EXPLAIN), json);
        if (rc == TP_EXIT_OK && has_budget && !budget.fits)
            rc = TP_EXIT_NO_FIT;
    }
    tp_gguf_close(g);
    return rc;
}
