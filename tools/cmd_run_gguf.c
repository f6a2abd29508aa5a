/* tensorplan run FILE.gguf: a GGUF model's weights read in place from the mapping, the prompt
 * tokenized with the file's vocabulary, prefill and sampled decoding through the planned
 * graph, the text streamed to stdout and the summary on stderr (docs/running-gguf.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_gguf.h"
#include "cli_run.h"
#include "tensorplan/session.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/kernels.h"
#include "tensorplan/quant.h"

/* The options, then what they and the file give. */
typedef struct grun {
    tp_cli_args args;
    const char *file, *prompt_s, *tokens_s, *trace_s, *dump_s, *dot_s, *json_s, *html_s;
    tp_sampler_params sp;
    size_t max_new;
    tp_session_options o;
    tp_gguf *g;
    tp_model_config cfg;
    tp_tokenizer *tok;
    tp_weights *w;
    int32_t *prompt;
    size_t n_prompt;
    char *piece; /* streaming: one token's bytes */
    size_t piece_cap;
    int stopped_eog;
} grun;

/* The options into *r, but --queued-layers, which grun_load checks against the file. -1 on a
 * usage error (message printed), else 0. */
static int grun_options(int argc, char **argv, grun *r)
{
    tp_cli_args *a = &r->args;
    if (tp_cli_parse(TP_CMD_RUN_FILE, argc, argv, a) != 0)
        return -1;
    r->file = a->pos[0];
    r->prompt_s = a->opt[TP_OPT_PROMPT_TEXT].text;
    r->tokens_s = a->opt[TP_OPT_PROMPT_TOKENS].text;
    r->trace_s = a->opt[TP_OPT_TRACE].text;
    r->dump_s = a->opt[TP_OPT_DUMP_DIR].text;
    r->dot_s = a->opt[TP_OPT_DUMP_GRAPH].text;
    r->json_s = a->opt[TP_OPT_DUMP_GRAPH_JSON].text;
    r->html_s = a->opt[TP_OPT_HTML].text;
    if (!r->prompt_s == !r->tokens_s) {
        tp_cli_error("a GGUF model needs one of --prompt TEXT and --prompt-tokens IDS");
        return -1;
    }
    r->max_new = tp_cli_given(a, TP_OPT_MAX_NEW) ? (size_t)a->opt[TP_OPT_MAX_NEW].count
                                                 : TP_RUN_GGUF_DEFAULT_MAX_NEW;
    r->sp = tp_sampler_params_default();
    r->sp.temperature = (float)a->opt[TP_OPT_TEMP].real;
    r->sp.top_k = (int)a->opt[TP_OPT_TOP_K].count;
    r->sp.top_p = tp_cli_given(a, TP_OPT_TOP_P) ? (float)a->opt[TP_OPT_TOP_P].real : 1.0f;
    r->sp.seed = tp_cli_given(a, TP_OPT_SEED) ? (uint64_t)a->opt[TP_OPT_SEED].count : 1;
    r->o = tp_session_options_default();
    tp_cli_run_options(a, &r->o);
    tp_cli_run_environment(&r->o, &r->trace_s, &r->dump_s);
    return tp_cli_run_kernels(a);
}

/* Maps in every tensor that the forward reads whole, before the timed phases (a first
 * prefill otherwise takes a page fault per 4 KiB to 64 KiB of weights); the embedding table
 * only when it is also the output matrix (tied), since a prompt reads a few of its rows. */
static int grun_prefault(const tp_gguf *g)
{
    const int tied = tp_gguf_find_tensor(g, "output.weight") == NULL;
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (!tied && strcmp(t->name, "token_embd.weight") == 0)
            continue;
        tp_status st = tp_gguf_prefault(g, t->data, t->nbytes);
        if (st != TP_OK) {
            tp_cli_error("%s", tp_last_error());
            return tp_cli_exit_for(st);
        }
    }
    return TP_EXIT_OK;
}

/* The file: config, tokenizer, weight views; queued layers against the config. Returns a
 * TP_EXIT_ code after a one-line message on failure. */
static int grun_load(grun *r)
{
    int rc = tp_cli_open_tokenizer(r->file, &r->g, &r->tok);
    if (rc != TP_EXIT_OK)
        return rc;
    tp_status st = tp_gguf_model_config(r->g, &r->cfg);
    if (st == TP_OK && tp_tokenizer_n_vocab(r->tok) != (size_t)r->cfg.vocab) {
        tp_cli_error("%s: tokenizer.ggml.tokens has %zu tokens, token_embd.weight %d rows",
                     r->file, tp_tokenizer_n_vocab(r->tok), r->cfg.vocab);
        return TP_EXIT_BAD_INPUT;
    }
    if (st == TP_OK)
        st = tp_gguf_model_weights(r->g, &r->cfg, &r->w);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return tp_cli_exit_for(st);
    }
    if (tp_cli_bound(&r->args, TP_OPT_QUEUED_LAYERS, (unsigned long long)r->cfg.n_layer) != 0)
        return TP_EXIT_USAGE;
    rc = grun_prefault(r->g);
    if (rc != TP_EXIT_OK)
        return rc;
    r->o.queued_layers = (int)r->args.opt[TP_OPT_QUEUED_LAYERS].count;
    return tp_cli_run_check_kv_type(&r->cfg, &r->o) != 0 ? TP_EXIT_USAGE : TP_EXIT_OK;
}

/* The prompt: the text tokenized (bos/eos as the vocabulary says, special tokens matched)
 * or the listed ids. Returns a TP_EXIT_ code. */
static int grun_prompt(grun *r)
{
    if (r->tokens_s) {
        if (tp_cli_parse_ids("--prompt-tokens", r->tokens_s, (size_t)r->cfg.vocab, &r->prompt,
                             &r->n_prompt) != 0)
            return TP_EXIT_USAGE;
    } else {
        char *text = NULL;
        size_t len = 0;
        int rc = tp_cli_read_text(r->prompt_s, &text, &len);
        if (rc != TP_EXIT_OK)
            return rc;
        if (len == 0) { /* refused before a bos alone (SentencePiece) would make a prompt */
            free(text);
            tp_cli_error("--prompt: empty text");
            return TP_EXIT_USAGE;
        }
        tp_status st = tp_tokenizer_encode(r->tok, text, len, 1, 1, &r->prompt, &r->n_prompt);
        free(text);
        if (st != TP_OK) {
            tp_cli_error("--prompt: %s: %s", r->file, tp_last_error());
            return tp_cli_exit_for(st);
        }
        if (r->n_prompt == 0) {
            tp_cli_error("--prompt: the text gives no tokens");
            return TP_EXIT_USAGE;
        }
    }
    if (r->dot_s || r->json_s)
        return TP_EXIT_OK;
    /* every position the generation writes must fit the context the session will fix */
    size_t ctx = 0;
    if (tp_cli_run_check_context(&r->cfg, &r->o, r->n_prompt, r->max_new, &ctx) != 0)
        return TP_EXIT_USAGE;
    if (r->html_s)
        return tp_cli_run_picture(&r->cfg, &r->o, r->n_prompt, ctx, r->html_s, stderr);
    return TP_EXIT_OK;
}

/* Each generated token: an end-of-generation token stops the run (its text is not shown);
 * any other has its bytes written and flushed at once. */
static int on_token(void *user, int32_t id, size_t index)
{
    (void)index;
    grun *r = user;
    if (tp_tokenizer_is_eog(r->tok, id)) {
        r->stopped_eog = 1;
        return 1;
    }
    size_t len = 0;
    if (tp_tokenizer_piece(r->tok, id, 0, r->piece, r->piece_cap, &len) != TP_OK)
        return 0;
    if (len > r->piece_cap) {
        char *grown = realloc(r->piece, len);
        if (!grown)
            return 0;
        r->piece = grown;
        r->piece_cap = len;
        if (tp_tokenizer_piece(r->tok, id, 0, r->piece, r->piece_cap, &len) != TP_OK)
            return 0;
    }
    if (len > 0) /* a control, unused or byte token has no text (and r->piece may be NULL) */
        fwrite(r->piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

static double mb(size_t bytes)
{
    return (double)bytes / 1e6;
}

static void plan_line(const char *title, const tp_plan_stats *s, const tp_alloc_options *o)
{
    fprintf(stderr, "%s: %s/%s, %zu nodes (%zu dead), %zu buffers, activations %zu B "
            "(%.3f MB), peak held %zu B, naive %zu B\n", title,
            tp_alloc_strategy_name(o->strategy), tp_alias_policy_name(o->aliasing), s->nodes,
            s->dead_nodes, s->activation_buffers, s->activation_bytes, mb(s->activation_bytes),
            s->peak_held_bytes, s->naive_bytes);
}

/* The summary, on stderr: the model, the tokens, speed, and memory. */
static void grun_report(const grun *r, tp_session *s, const int32_t *out, size_t n_gen)
{
    const tp_model_config *c = &r->cfg;
    tp_session_stats st = tp_session_get_stats(s);
    size_t by_type[TP_TYPE_ID_LIMIT] = {0}, total = 0;
    (void)tp_gguf_model_weight_bytes(r->g, by_type, &total);
    fprintf(stderr, "\nmodel %s (%s): %d layers, n_embd %d, %d heads (%d KV), vocab %d; "
            "%d kernel threads, %s kernels\n", c->name,
            c->arch == TP_ARCH_LLAMA ? "llama" : "qwen2", c->n_layer, c->n_embd, c->n_head,
            c->n_head_kv, c->vocab, tp_kernels_threads(), tp_kernels_isa_name(tp_kernels_isa()));
    fprintf(stderr, "weights: %zu bytes as stored (%.1f MB):", total, mb(total));
    for (uint32_t t = 0; t < TP_TYPE_ID_LIMIT; t++)
        if (by_type[t])
            fprintf(stderr, " %s %zu", tp_type_name(t), by_type[t]);
    fprintf(stderr, "\nprompt (%zu tokens):", r->n_prompt);
    for (size_t i = 0; i < r->n_prompt && i < 32; i++)
        fprintf(stderr, " %d", r->prompt[i]);
    fprintf(stderr, "%s\n", r->n_prompt > 32 ? " ..." : "");
    fprintf(stderr, "generated (%zu tokens):", n_gen);
    for (size_t i = 0; i < n_gen; i++)
        fprintf(stderr, " %d", out[i]);
    fprintf(stderr, "\n");
    if (r->stopped_eog)
        fprintf(stderr, "stopped: end-of-generation token %d\n", out[n_gen - 1]);
    if (r->sp.temperature > 0.0f)
        fprintf(stderr, "sampling: temperature %g, top-k %d, top-p %g, seed %llu\n",
                (double)r->sp.temperature, r->sp.top_k, (double)r->sp.top_p,
                (unsigned long long)r->sp.seed);
    else
        fprintf(stderr, "sampling: greedy\n");
    tp_cli_run_speed(stderr, &st);
    size_t kv_bytes = tp_cli_run_kv_bytes(s);
    fprintf(stderr, "KV cache: n_ctx %zu, %s, %zu bytes (%.1f MB); queued layers %d of %d\n",
            tp_session_n_ctx(s), tp_dtype_name(r->o.kv_type), kv_bytes, mb(kv_bytes),
            r->o.queued_layers, c->n_layer);
    if (st.prefill_tokens) {
        size_t chunk = tp_session_chunk(&r->o, r->n_prompt);
        char title[96] = "prefill plan";
        if (chunk < r->n_prompt)
            snprintf(title, sizeof title, "prefill plan (chunks of %zu)", chunk);
        plan_line(title, st.prefill_plan.nodes ? &st.prefill_plan : &st.decode_plan,
                  &r->o.alloc);
    }
    if (st.decode_tokens)
        plan_line("decode plan", st.decode_plan.nodes ? &st.decode_plan : &st.prefill_plan,
                  &r->o.alloc);
    if (r->dump_s)
        fprintf(stderr, "dump: logits and KV regions written to %s\n", r->dump_s);
    if (r->trace_s)
        fprintf(stderr, "trace: written to %s\n", r->trace_s);
}

/* Sampler, session, generation, dumps and the report. Returns a TP_EXIT_ code. */
static int grun_generate(grun *r)
{
    int rc = TP_EXIT_ERROR;
    tp_sampler *smp = NULL;
    tp_session *s = NULL;
    tp_trace *trace = NULL;
    size_t n_gen = 0;
    int32_t *out = calloc(r->max_new ? r->max_new : 1, sizeof *out);
    if (!out) {
        tp_cli_error("out of memory");
        return TP_EXIT_ERROR;
    }
    if (tp_cli_run_open_outputs(r->trace_s, r->dump_s, &trace) != TP_EXIT_OK)
        goto done;
    if (tp_sampler_create(&r->sp, (size_t)r->cfg.vocab, &smp) != TP_OK)
        goto fail;
    r->o.exec.trace = trace;
    if (tp_session_create(&r->cfg, r->w, &r->o, &s) != TP_OK)
        goto fail;
    tp_generate_options go = {smp, on_token, r};
    if (tp_session_generate_with(s, r->prompt, r->n_prompt, r->max_new, &go, out, &n_gen,
                                 NULL) != TP_OK)
        goto fail;
    printf("\n");
    fflush(stdout);
    if (tp_cli_run_close_outputs(s, r->dump_s, &trace) != TP_OK)
        goto fail;
    grun_report(r, s, out, n_gen);
    rc = TP_EXIT_OK;
    goto done;
fail:
    tp_cli_error("%s", tp_last_error());
    rc = TP_EXIT_ERROR;
done:
    if (trace)
        (void)tp_trace_close(trace);
    tp_session_destroy(s);
    tp_sampler_destroy(smp);
    free(out);
    return rc;
}

int tp_run_gguf(int argc, char **argv)
{
    grun r;
    memset(&r, 0, sizeof r);
    if (grun_options(argc, argv, &r) != 0)
        return TP_EXIT_USAGE;
    int rc = grun_load(&r);
    if (rc == TP_EXIT_OK)
        rc = grun_prompt(&r);
    if (rc == TP_EXIT_OK)
        rc = r.dot_s || r.json_s ? tp_cli_run_dump_graph(&r.cfg, &r.o, r.n_prompt, r.dot_s,
                                                         r.json_s, stderr)
                                 : grun_generate(&r);
    free(r.piece);
    free(r.prompt);
    tp_weights_destroy(r.w);
    tp_tokenizer_destroy(r.tok);
    tp_gguf_close(r.g);
    return rc;
}
