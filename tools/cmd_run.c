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

#define RUN_DEFAULT_PROMPT 8
#define RUN_DEFAULT_MAX_NEW 8

void tp_help_run(FILE *out)
{
    fprintf(out,
        "usage: tensorplan run FILE.gguf (--prompt TEXT | --prompt-tokens IDS) [--max-new N]\n"
        "                      [--temp T] [--top-k K] [--top-p P] [--seed S] [--n-ctx C]\n"
        "                      [common options]\n"
        "       tensorplan run MODEL [--prompt-tokens 1,2,3 | --prompt-len N] [--max-new N]\n"
        "                      [--seed S] [--n-ctx C] [common options]\n"
        "common options: [--kv-type f32|f16|q8_0] [--ubatch N] [--queued-layers K]\n"
        "                [--strategy pool|arena|naive]\n"
        "                [--aliasing sole-consumer|last-consumer|none] [--threads N]\n"
        "                [--trace FILE] [--dump-dir DIR]\n"
        "                [--dump-graph FILE] [--dump-graph-json FILE] [--html FILE]\n"
        "\n"
        "With a GGUF file (docs/running-gguf.md): the weights are read in place from the\n"
        "mapped file in their own types, the prompt is tokenized with the file's vocabulary\n"
        "(bos/eos as it says, special tokens matched; TEXT \"-\" reads standard input) or\n"
        "given as ids (commas or spaces), then prefill and decoding up to N new tokens\n"
        "(default %d), stopping at an end-of-generation token. The text goes to standard\n"
        "output as it is produced, then a newline; the summary (with the line\n"
        "'generated (N tokens): ID ...', the stopping token last) goes to standard error.\n"
        "  --temp T     0 (default) = greedy; else top-k, top-p, temperature, then a draw\n"
        "               (docs/sampling.md)\n"
        "  --top-k K    keep the K largest logits (default 0 = all)\n"
        "  --top-p P    keep the smallest set of mass >= P (default 1 = all)\n"
        "  --seed S     the sampler's seed (default 1)\n"
        "  --dump-dir   logits.f32 is the last forward's: with --max-new 1 the prefill's\n"
        "               last-token logits\n"
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
    fprintf(out,
        "options:\n"
        "  --prompt-tokens L   comma-separated token ids of the prompt\n"
        "  --prompt-len N      a prompt of N seeded random ids (default %d)\n"
        "  --max-new N         tokens to generate (default %d; 0 runs the prefill only);\n"
        "                      prompt length + N - 1 must fit the context used\n"
        "  --seed S            seed of the weights and of a random prompt (default 1)\n"
        "  --n-ctx C           KV context requested (default %d); the context used is\n"
        "                      min(max(C, prompt length), the model's maximum)\n"
        "  --kv-type T         the KV cache's type: f32, f16 (default, as llama.cpp) or q8_0\n"
        "                      (head_dim a multiple of 32); attention reads it as stored\n"
        "  --ubatch N          a prompt longer than N tokens runs in chunks of N (default\n"
        "                      %d), one cached graph per chunk size: the planned activations\n"
        "                      are the chunk's, whatever the prompt length\n"
        "  --queued-layers K   layers [0, K) run on the queued backend (deferred execution)\n"
        "  --strategy S        pool (default), arena, or naive (one private buffer per node)\n"
        "  --aliasing P        sole-consumer (default), last-consumer or none\n"
        "  --threads N         kernel threads (default: online CPUs)\n"
        "  --trace FILE        JSON trace: per node statistics and a sample of its output\n"
        "                      (env TENSORPLAN_TRACE)\n"
        "  --dump-dir DIR      after the run: DIR/logits.f32 and DIR/kv.L.k.f32, kv.L.v.f32,\n"
        "                      raw little-endian f32 (env TENSORPLAN_GRAPH_DUMP)\n"
        "  --dump-graph FILE   write the prefill graph as Graphviz DOT (after build, backend\n"
        "                      assignment and fusion) and exit\n"
        "  --dump-graph-json FILE  the same graph as JSON, then exit\n"
        "  --html FILE         before the run, a picture of the prefill and decode plans\n"
        "                      (the graphs this run plans) as one HTML page (docs/picture.md)\n"
        "  -h, --help          this text\n"
        "\n"
        "environment: TENSORPLAN_NO_FUSE_FFN=1 switches the SwiGLU fusion off;\n"
        "  TENSORPLAN_TRACE=FILE and TENSORPLAN_GRAPH_DUMP=DIR stand for --trace and\n"
        "  --dump-dir when those are absent.\n"
        "\n"
        "exit codes:\n"
        "  0  done\n"
        "  1  runtime failure (out of memory, I/O, a file that cannot be written)\n"
        "  2  bad command line (also: a generation that does not fit the context)\n"
        "  3  the GGUF file is refused (one line naming the file and what was expected)\n"
        "\n"
        "examples:\n"
        "  tensorplan run qwen2.5-0.5b-instruct-q8_0.gguf --prompt 'The capital of France is'\n"
        "  tensorplan run qwen2.5-0.5b --prompt-len 16 --max-new 4\n",
        RUN_DEFAULT_PROMPT, RUN_DEFAULT_MAX_NEW, TP_DEFAULT_N_CTX, TP_DEFAULT_UBATCH);
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

/* What the command line gives a run: flag values, then the parsed numbers and options. */
typedef struct run_args {
    const char *model, *tokens_s, *len_s, *max_new_s, *seed_s, *n_ctx_s, *queued_s;
    const char *strategy_s, *aliasing_s, *threads_s, *trace_s, *dump_s, *dot_s, *json_s, *html_s;
    const char *kv_type_s, *ubatch_s;
    tp_model_config cfg;
    unsigned long long prompt_len, max_new, seed;
    tp_session_options o;
} run_args;

/* Flags into *a (--help never reaches here: tools/main.c answers it). 0, or -1 after a
 * message. */
static int parse_flags(int argc, char **argv, run_args *a)
{
    const tp_cli_flag flags[] = {
        { "--prompt-tokens", &a->tokens_s }, { "--prompt-len", &a->len_s },
        { "--max-new", &a->max_new_s },      { "--seed", &a->seed_s },
        { "--n-ctx", &a->n_ctx_s },          { "--queued-layers", &a->queued_s },
        { "--strategy", &a->strategy_s },    { "--aliasing", &a->aliasing_s },
        { "--threads", &a->threads_s },      { "--trace", &a->trace_s },
        { "--dump-dir", &a->dump_s },        { "--dump-graph", &a->dot_s },
        { "--dump-graph-json", &a->json_s }, { "--html", &a->html_s },
        { "--kv-type", &a->kv_type_s },      { "--ubatch", &a->ubatch_s },
    };
    for (int i = 1; i < argc; i++) {
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

/* The numbers and names of the flags into a->cfg, a->o and the counts. 0 or -1. */
static int parse_values(run_args *a)
{
    if (tp_cli_builtin_model(a->model, &a->cfg) != 0)
        return -1;
    if (a->tokens_s && a->len_s) {
        tp_cli_error("--prompt-tokens and --prompt-len exclude each other");
        return -1;
    }
    unsigned long long n_ctx = 0, queued = 0, threads = 0;
    const unsigned long long max_ctx = (unsigned long long)a->cfg.max_ctx;
    a->prompt_len = RUN_DEFAULT_PROMPT;
    a->max_new = RUN_DEFAULT_MAX_NEW;
    a->seed = 1;
    a->o = tp_session_options_default();
    if ((a->len_s && tp_cli_parse_count("--prompt-len", a->len_s, 1, max_ctx, &a->prompt_len)) ||
        (a->max_new_s &&
         tp_cli_parse_count("--max-new", a->max_new_s, 0, max_ctx, &a->max_new)) ||
        (a->seed_s && tp_cli_parse_count("--seed", a->seed_s, 0, ULLONG_MAX, &a->seed)) ||
        (a->n_ctx_s && tp_cli_parse_count("--n-ctx", a->n_ctx_s, 1, 1ull << 40, &n_ctx)) ||
        (a->queued_s && tp_cli_parse_count("--queued-layers", a->queued_s, 0,
                                           (unsigned long long)a->cfg.n_layer, &queued)) ||
        (a->threads_s && tp_cli_parse_count("--threads", a->threads_s, 1, 64, &threads)))
        return -1;
    if (tp_cli_run_alloc_names(a->strategy_s, a->aliasing_s, &a->o.alloc) != 0 ||
        tp_cli_run_kv_options(a->kv_type_s, a->ubatch_s, &a->o) != 0 ||
        tp_cli_run_check_kv_type(&a->cfg, &a->o) != 0)
        return -1;
    a->o.n_ctx = (size_t)n_ctx;
    a->o.queued_layers = (int)queued;
    if (threads)
        tp_kernels_set_threads((int)threads);
    return 0;
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
    printf("model %s: random f32 weights (seed %llu, %.2f s to create), %d kernel threads\n",
           cfg->name, (unsigned long long)a->seed, t_weights, tp_kernels_threads());
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
    const char *model = tp_cli_first_positional(argc, argv);
    if (model && tp_cli_is_gguf(model))
        return tp_run_gguf(argc, argv);
    run_args a;
    memset(&a, 0, sizeof a);
    if (parse_flags(argc, argv, &a) != 0 || parse_values(&a) != 0)
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
