/* The pieces `tensorplan run` shares between a built-in model (tools/cmd_run.c) and a GGUF
 * file (tools/cmd_run_gguf.c): options, the context check, the graph dumps, the picture, the
 * output files and the summary lines (tools/cli_run.c). */
#ifndef TP_TOOLS_CLI_RUN_H
#define TP_TOOLS_CLI_RUN_H

#include <stddef.h>
#include <stdio.h>

#include "cli_options.h"
#include "tensorplan/session.h"

/* The options both kinds of run read alike into *o (from tp_session_options_default()):
 * --n-ctx, --strategy, --aliasing, --kv-type, --ubatch; and --threads, which sets the
 * kernels' threads. */
void tp_cli_run_options(const tp_cli_args *a, tp_session_options *o);

/* --kernels: the kernels' instruction-set form (absent or auto: the best supported one).
 * 0, or -1 after a one-line message when the processor or the build lacks the form. */
int tp_cli_run_kernels(const tp_cli_args *a);

/* --kv-type (default f16, as llama.cpp) and --ubatch (default TP_DEFAULT_UBATCH) into *o;
 * tp_cli_run_options reads them too. */
void tp_cli_kv_options(const tp_cli_args *a, tp_session_options *o);

/* The KV type against the model (q8_0 needs head_dim a multiple of 32): 0, or -1 after a
 * message. */
int tp_cli_run_check_kv_type(const tp_model_config *c, const tp_session_options *o);

/* The environment is read here, never in the library: TENSORPLAN_NO_FUSE_FFN=1 turns the
 * session's SwiGLU fusion off; TENSORPLAN_TRACE and TENSORPLAN_GRAPH_DUMP stand for *trace
 * and *dump (--trace, --dump-dir) when those are absent; an empty path is none. */
void tp_cli_run_environment(tp_session_options *o, const char **trace, const char **dump);

/* Every position a generation of max_new tokens after n_prompt writes must fit the context
 * the session will fix (*ctx): 0, or -1 after a message. */
int tp_cli_run_check_context(const tp_model_config *c, const tp_session_options *o,
                             size_t n_prompt, size_t max_new, size_t *ctx);

/* --dump-graph / --dump-graph-json: the prefill graph as the run would build it, written to
 * dot and/or json (NULL: not asked), and one line naming them to msg. A TP_EXIT_ code. */
int tp_cli_run_dump_graph(const tp_model_config *c, const tp_session_options *o, size_t n_prompt,
                          const char *dot, const char *json, FILE *msg);

/* --html: writes the picture of the prefill and decode plans of a run of n_prompt tokens at
 * context ctx to path, and one line naming it to msg. A TP_EXIT_ code. */
int tp_cli_run_picture(const tp_model_config *c, const tp_session_options *o, size_t n_prompt,
                       size_t ctx, const char *path, FILE *msg);

/* Before the run, the output paths are checked: the trace (path NULL: none) opened into
 * *trace, the dump directory (NULL: none) created. TP_EXIT_OK, or TP_EXIT_ERROR after a
 * message; *trace may be left open either way. */
int tp_cli_run_open_outputs(const char *trace_path, const char *dump_dir, tp_trace **trace);

/* After the run: the session dumped to dump_dir (NULL: none), *trace (NULL: none) closed and
 * set to NULL. TP_OK or the failing status (its message in tp_last_error()). */
tp_status tp_cli_run_close_outputs(tp_session *s, const char *dump_dir, tp_trace **trace);

/* The bytes of the session's KV regions, as stored in the cache type. */
size_t tp_cli_run_kv_bytes(tp_session *s);

/* The lines "prefill: ..." and "decode: ..." with tokens, seconds and tokens per second. */
void tp_cli_run_speed(FILE *out, const tp_session_stats *st);

#endif
