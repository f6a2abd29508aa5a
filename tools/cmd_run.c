/* tensorplan run: a built-in model with seeded random weights, prefill and greedy decoding
 * through the planned graph, with speed and memory summaries. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_gguf.h"
#include "cli_run.h"
#include "common/clock.h"
#include "tensorplan/session.h"
#include "tensorplan/kernels.h"

void tp_help_run(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_RUN_FILE, "FILE.gguf (--prompt TEXT | --prompt-tokens IDS)");
    tp_cli_help_usage(out, "       ", TP_CMD_RUN_BUILTIN, "MODEL");
    fprintf(out,
        "\n"
        "With a GGUF file (docs/running-gguf.md): the weights are read in place from the\n"
        "mapped file in their own types, the prompt is tokenized with the file's vocabulary\n"
        "(bos/eos as it says, special tokens matched; TEXT \"-\" reads standard input) or\n"
        "given as ids (commas or spaces), then prefill and decoding up to N new tokens\n"
        "(default %d), stopping at an end-of-generation token. The text goes to standard\n"
        "output as it is produced, then a newline; the summary (with the line\n"
        "'generated (N tokens): ID ...', the stopping token last) goes to standard error.\n"
        "\n"
        "With a built-in MODEL: runs it with deterministic random weights (from --seed):\n"
        "prefill of the prompt (logits for the last token only), then greedy decoding,\n"
        "every decode step on one cached graph. Prints the generated token ids, prefill and\n"
        "decode speed, the time spent planning vs executing, and the memory summary (the\n"
        "same figures as 'tensorplan model' for this prompt length and context).\n"
        "\n"
        "MODEL: %s\n"
        "\n",
        TP_RUN_GGUF_DEFAULT_MAX_NEW, tp_model_builtin_names());
    const unsigned file = TP_CLI_BIT(TP_CMD_RUN_FILE), builtin = TP_CLI_BIT(TP_CMD_RUN_BUILTIN);
    tp_cli_help_options(out, "options with a GGUF file:", file, builtin);
    tp_cli_help_options(out, "\noptions with a built-in MODEL:", builtin, file);
    tp_cli_help_options(out, "\noptions of both:", file | builtin, 0);
    fputs(
        "\n"
        "environment: TENSORPLAN_NO_FUSE_FFN=1 switches the SwiGLU fusion off;\n"
        "  TENSORPLAN_TRACE=FILE and TENSORPLAN_GRAPH_DUMP=DIR stand for --trace and\n"
        "  --dump-dir when those are absent.\n"
        "\n"
        "exit codes:\n"
        "  0  done\n"
        "  1  runtime failure (out of memory, I/O, unwritable file, non-finite logits)\n"
        "  2  bad command line (also: a generation that does not fit the context)\n"
        "  3  the GGUF file is refused (one line naming the file and what was expected)\n"
        "\n"
        "examples:\n"
        "  tensorplan run qwen2.5-0.5b-instruct-q8_0.gguf --prompt 'The capital of France is'\n"
        "  tensorplan run qwen2.5-0.5b --prompt-len 16 --max-new 4\n",
        out);
}

/* "1,2,3" -> ids, each below vocab */
static int parse_tokens(const char *text, int vocab, int32_t **out, size_t *n)
{
    size_t count = 1;
    for (const char *c = text; *c; c++)
        count += *c == ',';
    int32_t *ids = malloc(count * sizeof *ids);
    if (!ids) {
        tp_cli_error("out of memory");
        return -1;
    }
    size_t k = 0;
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char buf[32];
        unsigned long long v = 0;
        if (len == 0 || len >= sizeof buf) {
            tp_cli_error("--prompt-tokens '%s': expected comma-separated ids", text);
            free(ids);
            return -1;
        }
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (tp_cli_parse_count("--prompt-tokens", buf, 0, (unsigned long long)vocab - 1, &v) !=
            0) {
            free(ids);
            return -1;
        }
        ids[k++] = (int32_t)v;
        if (!end)
            break;
        p = end + 1;
    }
    *out = ids;
    *n = k;
    return 0;
}

static double mb(size_t bytes)
{
    return (double)bytes / 1e6;
}

static void plan_row(const char *title, const tp_plan_stats *s, const tp_alloc_options *o)
{
    printf("\n%s\n", title);
    printf("  %-8s %-14s %8s %14s %10s %14s %10s %10s\n", "strategy", "aliasing", "buffers",
           "activation B", "MB", "peak held B", "MB", "plan ms");
    printf("  %-8s %-14s %8zu %14zu %10.3f %14zu %10.3f %10.3f\n",
           tp_alloc_strategy_name(o->strategy), tp_alias_policy_name(o->aliasing),
           s->activation_buffers, s->activation_bytes, mb(s->activation_bytes),
           s->peak_held_bytes, mb(s->peak_held_bytes), s->plan_seconds * 1e3);
    printf("  nodes %zu, live %zu, dead %zu; naive (every node its own buffer) %zu B "
           "(%.3f MB)\n",
           s->nodes, s->live_nodes, s->dead_nodes, s->naive_bytes, mb(s->naive_bytes));
}

/* What the command line gives a run: the options, then the parsed numbers and options. */
typedef struct run_args {
    const char *model, *tokens_s, *trace_s, *dump_s, *dot_s, *json_s, *html_s;
    tp_model_config cfg;
    unsigned long long prompt_len, max_new, seed;
    tp_session_options o;
} run_args;

/* The options into *a, checked against the model. 0, or -1 after a message. */
static int parse_args(int argc, char **argv, run_args *a)
{
    tp_cli_args o;
    if (tp_cli_parse(TP_CMD_RUN_BUILTIN, argc, argv, &o) != 0)
        return -1;
    a->model = o.pos[0];
    a->tokens_s = o.opt[TP_OPT_PROMPT_TOKENS].text;
    a->trace_s = o.opt[TP_OPT_TRACE].text;
    a->dump_s = o.opt[TP_OPT_DUMP_DIR].text;
    a->dot_s = o.opt[TP_OPT_DUMP_GRAPH].text;
    a->json_s = o.opt[TP_OPT_DUMP_GRAPH_JSON].text;
    a->html_s = o.opt[TP_OPT_HTML].text;
    if (tp_cli_builtin_model(a->model, &a->cfg) != 0)
        return -1;
    if (a->tokens_s && tp_cli_given(&o, TP_OPT_PROMPT_LEN)) {
        tp_cli_error("--prompt-tokens and --prompt-len exclude each other");
        return -1;
    }
    if (tp_cli_bound(&o, TP_OPT_PROMPT_LEN, (unsigned long long)a->cfg.max_ctx) != 0 ||
        tp_cli_bound(&o, TP_OPT_QUEUED_LAYERS, (unsigned long long)a->cfg.n_layer) != 0)
        return -1;
    a->prompt_len = tp_cli_given(&o, TP_OPT_PROMPT_LEN) ? o.opt[TP_OPT_PROMPT_LEN].count
                                                        : TP_RUN_DEFAULT_PROMPT;
    a->max_new = tp_cli_given(&o, TP_OPT_MAX_NEW) ? o.opt[TP_OPT_MAX_NEW].count
                                                  : TP_RUN_DEFAULT_MAX_NEW;
    a->seed = tp_cli_given(&o, TP_OPT_SEED) ? o.opt[TP_OPT_SEED].count : 1;
    a->o = tp_session_options_default();
    tp_cli_run_options(&o, &a->o);
    a->o.queued_layers = (int)o.opt[TP_OPT_QUEUED_LAYERS].count;
    if (tp_cli_run_kernels(&o) != 0)
        return -1;
    return tp_cli_run_check_kv_type(&a->cfg, &a->o);
}

/* The prompt: the listed ids, or prompt_len ids from the seed. Returns a TP_EXIT_ code. */
static int make_prompt(const run_args *a, int32_t **prompt, size_t *n_prompt)
{
    if (a->tokens_s) {
        if (parse_tokens(a->tokens_s, a->cfg.vocab, prompt, n_prompt) != 0)
            return TP_EXIT_USAGE;
        if (*n_prompt > (size_t)a->cfg.max_ctx) {
            tp_cli_error("%zu prompt tokens exceed the model's context (%d)", *n_prompt,
                         a->cfg.max_ctx);
            free(*prompt);
            *prompt = NULL;
            return TP_EXIT_USAGE;
        }
        return TP_EXIT_OK;
    }
    *n_prompt = (size_t)a->prompt_len;
    *prompt = malloc(*n_prompt * sizeof **prompt);
    if (!*prompt) {
        tp_cli_error("out of memory");
        return TP_EXIT_ERROR;
    }
    uint64_t st = (uint64_t)a->seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (size_t i = 0; i < *n_prompt; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        (*prompt)[i] = (int32_t)((st >> 33) % (uint64_t)a->cfg.vocab);
    }
    return TP_EXIT_OK;
}

/* The speed lines and the memory summary, in the terms of 'tensorplan model'. */
static void print_report(const run_args *a, tp_session *s, const tp_weights *w,
                         const int32_t *prompt, size_t n_prompt, const int32_t *out,
                         double t_weights)
{
    const tp_model_config *cfg = &a->cfg;
    tp_session_stats st = tp_session_get_stats(s);
    printf("model %s: random f32 weights (seed %llu, %.2f s to create), %d kernel threads, "
           "%s kernels\n", cfg->name, (unsigned long long)a->seed, t_weights,
           tp_kernels_threads(), tp_kernels_isa_name(tp_kernels_isa()));
    printf("prompt (%zu tokens):", n_prompt);
    for (size_t i = 0; i < n_prompt && i < 32; i++)
        printf(" %ld", (long)prompt[i]);
    printf("%s\n", n_prompt > 32 ? " ..." : "");
    printf("generated (%llu tokens):", (unsigned long long)a->max_new);
    for (size_t i = 0; i < (size_t)a->max_new; i++)
        printf(" %ld", (long)out[i]);
    printf("\n");
    tp_cli_run_speed(stdout, &st);
    printf("time: building graphs %.3f ms, planning %.3f ms, executing %.3f ms; %zu graphs "
           "built, %zu executions on a cached graph; pool allocation calls in the last "
           "step: %zu\n",
           st.build_seconds * 1e3, st.plan_seconds * 1e3, st.exec_seconds * 1e3, st.builds,
           st.reuses, st.last_pool_allocations);
    printf("queued layers: %d of %d\n", a->o.queued_layers, cfg->n_layer);

    size_t wb = tp_weights_bytes(w), n_ctx_used = tp_session_n_ctx(s);
    size_t kv_elems = (size_t)(cfg->n_head_kv * cfg->head_dim) * n_ctx_used;
    size_t kv_bytes = tp_cli_run_kv_bytes(s);
    printf("\nmemory\n");
    printf("weights: %zu parameters, %zu bytes as f32 (%.1f MB)\n", wb / sizeof(float), wb,
           mb(wb));
    printf("KV cache: n_ctx %zu: %d layers x 2 regions x %zu elements of %s = %zu bytes "
           "(%.1f MB)\n", n_ctx_used, cfg->n_layer, kv_elems, tp_dtype_name(a->o.kv_type),
           kv_bytes, mb(kv_bytes));
    char title[160];
    if (st.prefill_tokens) {
        size_t chunk = tp_session_chunk(&a->o, n_prompt);
        if (chunk < n_prompt)
            snprintf(title, sizeof title, "prefill: %zu tokens in chunks of %zu (the plan of "
                     "one chunk), logits for the last one", n_prompt, chunk);
        else
            snprintf(title, sizeof title, "prefill: %zu tokens, logits for the last one",
                     n_prompt);
        plan_row(title, st.prefill_plan.nodes ? &st.prefill_plan : &st.decode_plan,
                 &a->o.alloc);
    }
    if (st.decode_tokens)
        /* a one-token prompt's graph is the decode graph: it was planned as the prefill */
        plan_row("decode: 1 token", st.decode_plan.nodes ? &st.decode_plan : &st.prefill_plan,
                 &a->o.alloc);
    if (a->dump_s)
        printf("\ndump: logits and KV regions written to %s\n", a->dump_s);
    if (a->trace_s)
        printf("trace: written to %s\n", a->trace_s);
}

/* Weights, session, generation, dumps and the report. Returns a TP_EXIT_ code. */
static int generate(run_args *a, const int32_t *prompt, size_t n_prompt)
{
    int rc = TP_EXIT_ERROR;
    tp_weights *w = NULL;
    tp_session *s = NULL;
    tp_trace *trace = NULL;
    int32_t *out = calloc(a->max_new ? (size_t)a->max_new : 1, sizeof *out);
    if (!out) {
        tp_cli_error("out of memory");
        goto done;
    }
    /* output paths are checked before the run, not after it */
    if (tp_cli_run_open_outputs(a->trace_s, a->dump_s, &trace) != TP_EXIT_OK)
        goto done;
    double t0 = tp_clock_seconds();
    if (tp_weights_init_random(&a->cfg, a->seed, &w) != TP_OK)
        goto fail;
    double t_weights = tp_clock_seconds() - t0;
    a->o.exec.trace = trace;
    if (tp_session_create(&a->cfg, w, &a->o, &s) != TP_OK)
        goto fail;
    if (tp_session_generate(s, prompt, n_prompt, (size_t)a->max_new, out, NULL) != TP_OK)
        goto fail;
    if (tp_cli_run_close_outputs(s, a->dump_s, &trace) != TP_OK)
        goto fail;
    print_report(a, s, w, prompt, n_prompt, out, t_weights);
    rc = TP_EXIT_OK;
    goto done;
fail:
    tp_cli_error("%s", tp_last_error());
    rc = TP_EXIT_ERROR;
done:
    if (trace)
        (void)tp_trace_close(trace);
    tp_session_destroy(s);
    tp_weights_destroy(w);
    free(out);
    return rc;
}

int tp_cmd_run(int argc, char **argv)
{
    /* a GGUF file or a built-in model: the first positional, read by either's options; a
     * path that exists or contains a '/' is a file, whatever it holds */
    const char *model = tp_cli_first_positional(TP_CLI_BIT(TP_CMD_RUN_FILE) |
                                                    TP_CLI_BIT(TP_CMD_RUN_BUILTIN),
                                                argc, argv);
    tp_model_config builtin;
    const int is_builtin = model && tp_model_config_builtin(model, &builtin) == TP_OK;
    if (model && (tp_cli_is_gguf(model) || (!is_builtin && tp_cli_names_file(model))))
        return tp_run_gguf(argc, argv);
    if (model && !is_builtin) { /* neither: named as such, not as the options it would take */
        tp_cli_error("unknown model '%s' (built-in: %s; or a GGUF file)", model,
                     tp_model_builtin_names());
        return TP_EXIT_USAGE;
    }
    run_args a;
    memset(&a, 0, sizeof a);
    if (parse_args(argc, argv, &a) != 0)
        return TP_EXIT_USAGE;
    tp_cli_run_environment(&a.o, &a.trace_s, &a.dump_s);
    int32_t *prompt = NULL;
    size_t n_prompt = 0;
    int rc = make_prompt(&a, &prompt, &n_prompt);
    if (rc != TP_EXIT_OK)
        return rc;
    /* every position the generation writes must fit the context the session will fix;
     * refused here, before minutes of weight creation and prefill, not at the last step */
    size_t ctx = 0;
    if (a.dot_s || a.json_s)
        rc = tp_cli_run_dump_graph(&a.cfg, &a.o, n_prompt, a.dot_s, a.json_s, stdout);
    else if (tp_cli_run_check_context(&a.cfg, &a.o, n_prompt, (size_t)a.max_new, &ctx) != 0)
        rc = TP_EXIT_USAGE;
    else if (a.html_s && tp_cli_run_picture(&a.cfg, &a.o, n_prompt, ctx, a.html_s, stdout) != 0)
        rc = TP_EXIT_ERROR;
    else
        rc = generate(&a, prompt, n_prompt);
    free(prompt);
    return rc;
}
