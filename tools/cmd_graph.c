/* tensorplan graph: build a model's decoder graph and write it as JSON or DOT. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tensorplan/graph_io.h"
#include "tensorplan/session.h"
#include "tensorplan/model.h"


void tp_help_graph(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_GRAPH, "MODEL --tokens N (--json FILE | --dot FILE)");
    fprintf(out,
        "\n"
        "Builds the decoder graph of a built-in model for one forward pass of N tokens,\n"
        "assigns backends, applies SwiGLU fusion, and writes the result. The graph is the\n"
        "input of 'tensorplan alloc'.\n"
        "\n"
        "MODEL: %s\n"
        "\n",
        tp_model_builtin_names());
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_GRAPH), 0);
    fputs(
        "At least one of --json and --dot is needed; both may be given.\n"
        "One summary line goes to stdout.\n"
        "\n"
        "exit codes:\n"
        "  0  written\n"
        "  1  runtime failure: a file cannot be written, out of memory\n"
        "  2  bad command line (unknown model, a count out of range)\n"
        "\n"
        "examples:\n"
        "  tensorplan graph qwen2.5-0.5b --tokens 1 --json decode.json\n"
        "  tensorplan graph qwen2.5-0.5b --tokens 440 --n-out 1 --json prefill.json\n"
        "  tensorplan graph tiny --tokens 4 --queued-layers 2 --dot tiny.dot\n"
        "  dot -Tsvg tiny.dot -o tiny.svg\n",
        out);
}

int tp_cmd_graph(int argc, char **argv)
{
    tp_cli_args o;
    if (tp_cli_parse(TP_CMD_GRAPH, argc, argv, &o) != 0)
        return TP_EXIT_USAGE;
    const char *json = o.opt[TP_OPT_GRAPH_JSON].text, *dot = o.opt[TP_OPT_DOT].text;
    const int fuse = !tp_cli_given(&o, TP_OPT_NO_FUSE);
    tp_model_config cfg;
    if (tp_cli_builtin_model(o.pos[0], &cfg) != 0)
        return TP_EXIT_USAGE;
    if (!tp_cli_given(&o, TP_OPT_TOKENS)) {
        tp_cli_error("--tokens N is required");
        return TP_EXIT_USAGE;
    }
    if (!json && !dot) {
        tp_cli_error("nothing to write: give --json FILE and/or --dot FILE");
        return TP_EXIT_USAGE;
    }
    if (tp_cli_bound(&o, TP_OPT_TOKENS, (unsigned long long)cfg.max_ctx) != 0)
        return TP_EXIT_USAGE;
    const size_t tokens = (size_t)o.opt[TP_OPT_TOKENS].count;
    if (tp_cli_bound(&o, TP_OPT_N_OUT, tokens) != 0 ||
        tp_cli_bound(&o, TP_OPT_QUEUED_LAYERS, (unsigned long long)cfg.n_layer) != 0)
        return TP_EXIT_USAGE;
    const size_t n_out = tp_cli_given(&o, TP_OPT_N_OUT) ? (size_t)o.opt[TP_OPT_N_OUT].count
                                                         : tokens;
    const size_t queued = (size_t)o.opt[TP_OPT_QUEUED_LAYERS].count;
    size_t n_ctx = tp_cli_given(&o, TP_OPT_N_CTX) ? (size_t)o.opt[TP_OPT_N_CTX].count
                                                  : TP_DEFAULT_N_CTX;
    /* The rule a run uses (computed once, so prefill and decode size the same KV regions). */
    tp_session_options ctx_opts = tp_session_options_default();
    ctx_opts.n_ctx = n_ctx;
    n_ctx = tp_session_context(&cfg, &ctx_opts, tokens);

    tp_graph_params params = { .n_tokens = tokens,
                               .n_out = n_out,
                               .n_ctx = n_ctx,
                               .fuse_ffn = fuse,
                               .queued_layers = (int)queued };
    tp_graph *g = NULL;
    if (tp_model_build_graph(&cfg, &params, &g) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return TP_EXIT_ERROR;
    }
    int rc = TP_EXIT_OK;
    if (json && tp_graph_save_json(g, json) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        rc = TP_EXIT_ERROR;
    }
    if (rc == TP_EXIT_OK && dot && tp_graph_save_dot(g, dot) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        rc = TP_EXIT_ERROR;
        /* a failed command leaves nothing behind (docs/graph.md, "Command line"), not half of what was asked */
        if (json)
            remove(json);
    }
    if (rc == TP_EXIT_OK) {
        printf("%s %s: %zu tokens, %zu output rows, n_ctx %zu: %zu nodes, %zu dead, "
               "%zu queued layers, swiglu fusion %s\n",
               cfg.name, g->kind, tokens, n_out, n_ctx, g->n_nodes, tp_graph_count_dead(g),
               queued, fuse ? "on" : "off");
    }
    tp_graph_destroy(g);
    return rc;
}
