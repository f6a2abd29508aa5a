/* The pieces of `tensorplan run` that a built-in model and a GGUF file share (tools/cli_run.h). */
#include "cli_run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "tensorplan/graph_io.h"
#include "tensorplan/kernels.h"
#include "tensorplan/plan_html.h"

void tp_cli_run_options(const tp_cli_args *a, tp_session_options *o)
{
    o->n_ctx = (size_t)a->opt[TP_OPT_N_CTX].count; /* 0 when absent: the session's default */
    tp_cli_alloc_options(a, &o->alloc);
    tp_cli_kv_options(a, o);
    if (tp_cli_given(a, TP_OPT_THREADS))
        tp_kernels_set_threads((int)a->opt[TP_OPT_THREADS].count);
}

int tp_cli_run_kernels(const tp_cli_args *a)
{
    /* the order of the choices of --kernels: auto|avx512|avx2|portable */
    static const int forms[4] = {TP_ISA_COUNT, TP_ISA_AVX512, TP_ISA_AVX2, TP_ISA_PORTABLE};
    int isa = tp_cli_given(a, TP_OPT_KERNELS) ? forms[a->opt[TP_OPT_KERNELS].choice]
                                              : TP_ISA_COUNT;
    if (tp_kernels_set_isa(isa) == TP_OK)
        return 0;
    tp_cli_error("--kernels %s: this processor (or this build) lacks the form",
                 tp_kernels_isa_name(isa));
    return -1;
}

void tp_cli_kv_options(const tp_cli_args *a, tp_session_options *o)
{
    static const tp_dtype types[3] = {TP_DTYPE_F32, TP_DTYPE_F16, TP_DTYPE_Q8_0};
    o->kv_type = TP_DTYPE_F16; /* the command line's default, as llama.cpp */
    if (tp_cli_given(a, TP_OPT_KV_TYPE))
        o->kv_type = types[a->opt[TP_OPT_KV_TYPE].choice];
    o->ubatch = tp_cli_given(a, TP_OPT_UBATCH) ? (size_t)a->opt[TP_OPT_UBATCH].count
                                                : TP_DEFAULT_UBATCH;
}

int tp_cli_run_check_kv_type(const tp_model_config *c, const tp_session_options *o)
{
    if (tp_model_check_kv_type(c, o->kv_type) == TP_OK)
        return 0;
    tp_cli_error("--kv-type %s: %s", tp_dtype_name(o->kv_type), tp_last_error());
    return -1;
}

void tp_cli_run_environment(tp_session_options *o, const char **trace, const char **dump)
{
    const char *no_ffn = getenv("TENSORPLAN_NO_FUSE_FFN");
    if (no_ffn && strcmp(no_ffn, "1") == 0)
        o->fuse_ffn = 0;
    if (!*trace)
        *trace = getenv("TENSORPLAN_TRACE");
    if (!*dump)
        *dump = getenv("TENSORPLAN_GRAPH_DUMP");
    if (*trace && !**trace)
        *trace = NULL;
    if (*dump && !**dump)
        *dump = NULL;
}

int tp_cli_run_check_context(const tp_model_config *c, const tp_session_options *o,
                             size_t n_prompt, size_t max_new, size_t *ctx)
{
    *ctx = tp_session_context(c, o, n_prompt);
    size_t need = n_prompt + (max_new ? max_new - 1 : 0);
    if (need <= *ctx)
        return 0;
    tp_cli_error("%zu prompt tokens and --max-new %zu need a KV context of %zu, but n_ctx is "
                 "%zu (min(max(--n-ctx, prompt length), model maximum %d))",
                 n_prompt, max_new, need, *ctx, c->max_ctx);
    return -1;
}

int tp_cli_run_dump_graph(const tp_model_config *c, const tp_session_options *o, size_t n_prompt,
                          const char *dot, const char *json, FILE *msg)
{
    /* the first chunk's graph: the one a chunked prefill plans */
    const size_t n = tp_session_chunk(o, n_prompt);
    tp_graph_params gp = tp_session_graph_params(o, n, o->tail_rows ? 1 : n,
                                                 tp_session_context(c, o, n_prompt));
    tp_graph *g = NULL;
    if (tp_model_build_graph(c, &gp, &g) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return TP_EXIT_ERROR;
    }
    int rc = TP_EXIT_OK;
    if (dot && tp_graph_save_dot(g, dot) != TP_OK)
        rc = TP_EXIT_ERROR;
    if (rc == TP_EXIT_OK && json && tp_graph_save_json(g, json) != TP_OK)
        rc = TP_EXIT_ERROR;
    if (rc != TP_EXIT_OK)
        tp_cli_error("%s", tp_last_error());
    else
        fprintf(msg, "graph: %zu nodes (%s, %zu tokens)%s%s%s%s\n", g->n_nodes, g->kind,
                n, dot ? "; DOT written to " : "", dot ? dot : "",
                json ? "; JSON written to " : "", json ? json : "");
    tp_graph_destroy(g);
    return rc;
}

int tp_cli_run_picture(const tp_model_config *c, const tp_session_options *o, size_t n_prompt,
                       size_t ctx, const char *path, FILE *msg)
{
    const size_t n = tp_session_chunk(o, n_prompt); /* a chunked prefill plans one chunk */
    tp_graph_params pre = tp_session_graph_params(o, n, o->tail_rows ? 1 : n, ctx);
    tp_graph_params dec = tp_session_graph_params(o, 1, 1, ctx);
    if (tp_html_model_report(path, NULL, c, &pre, &dec, &o->alloc) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return TP_EXIT_ERROR;
    }
    fprintf(msg, "picture of the plans written to %s\n", path);
    return TP_EXIT_OK;
}

int tp_cli_run_open_outputs(const char *trace_path, const char *dump_dir, tp_trace **trace)
{
    if (trace_path && tp_trace_open(trace_path, trace) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return TP_EXIT_ERROR;
    }
    if (dump_dir && mkdir(dump_dir, 0777) != 0 && errno != EEXIST) {
        tp_cli_error("--dump-dir '%s': cannot create the directory: %s", dump_dir,
                     strerror(errno));
        return TP_EXIT_ERROR;
    }
    return TP_EXIT_OK;
}

tp_status tp_cli_run_close_outputs(tp_session *s, const char *dump_dir, tp_trace **trace)
{
    tp_status st = dump_dir ? tp_session_dump(s, dump_dir) : TP_OK;
    if (st == TP_OK && *trace) {
        st = tp_trace_close(*trace);
        *trace = NULL;
    }
    return st;
}

size_t tp_cli_run_kv_bytes(tp_session *s)
{
    size_t kv_bytes = 0;
    tp_allocator *alloc = tp_session_allocator(s);
    for (size_t i = 0; i < tp_alloc_persistent_count(alloc); i++)
        kv_bytes += tp_alloc_persistent_at(alloc, i)->bytes;
    return kv_bytes;
}

void tp_cli_run_speed(FILE *out, const tp_session_stats *st)
{
    fprintf(out, "prefill: %zu tokens in %.3f s (%.2f tokens/s)\n", st->prefill_tokens,
            st->prefill_seconds,
            st->prefill_seconds > 0 ? (double)st->prefill_tokens / st->prefill_seconds : 0.0);
    fprintf(out, "decode: %zu tokens in %.3f s (%.2f tokens/s)\n", st->decode_tokens,
            st->decode_seconds,
            st->decode_seconds > 0 ? (double)st->decode_tokens / st->decode_seconds : 0.0);
}
