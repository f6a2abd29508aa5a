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
    fprintf(out,
        "usage: tensorplan graph MODEL --tokens N [--n-out K] [--n-ctx C] [--no-fuse]\n"
        "                        [--queued-layers K] (--json FILE | --dot FILE)\n"
        "\n"
        "Builds the decoder graph of a built-in model for one forward pass of N tokens,\n"
        "assigns backends, applies SwiGLU fusion, and writes the result. The graph is the\n"
        "input of 'tensorplan alloc'.\n"
        "\n"
        "MODEL: %s\n"
        "\n"
        "options:\n"
        "  --tokens N         tokens in the pass (1 = a decode step, more = a prefill)\n"
        "  --n-out K          rows of logits wanted, 1 <= K <= N (default N); K < N gathers\n"
        "                     the last layer's tail rows, e.g. --n-out 1 for the next token\n"
        "  --n-ctx C          KV context requested (default %d); the context used is\n"
        "                     min(max(C, N), the model's maximum), as for a real run\n"
        "  --no-fuse          keep mul(silu(gate), up) instead of swiglu(gate, up)\n"
        "  --queued-layers K  put layers [0, K) on the queued (device-like) backend; the\n"
        "                     rest, the embedding and the head stay on cpu (default 0)\n"
        "  --json FILE        write the graph JSON (format tensorplan-graph, version 1)\n"
        "  --dot FILE         write Graphviz DOT: nodes coloured by backend, inputs and\n"
        "                     outputs marked, dead nodes dashed, a legend\n"
        "  -h, --help         this text\n"
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
        tp_model_builtin_names(), TP_DEFAULT_N_CTX);
}

int tp_cmd_graph(int argc, char **argv)
{
    const char *model = NULL, *json = NULL, *dot = NULL;
    const char *tokens_s = NULL, *n_out_s = NULL, *n_ctx_s = NULL, *queued_s = NULL;
    int fuse = 1;
    const tp_cli_flag flags[] = {
        { "--tokens", &tokens_s }, { "--n-out", &n_out_s },         { "--n-ctx", &n_ctx_s },
        { "--json", &json },       { "--queued-layers", &queued_s }, { "--dot", &dot },
    };
    for (int i = 1; i < argc; i++) {
        const int taken = tp_cli_take_flags(argc, argv, &i, flags, sizeof flags / sizeof *flags);
        if (taken < 0)
            return TP_EXIT_USAGE;
        if (taken)
            continue;
        if (strcmp(argv[i], "--no-fuse") == 0)
            fuse = 0;
        else if (tp_cli_take_positional(argv[0], argv[i], &model, "MODEL") != 0)
            return TP_EXIT_USAGE;
    }
    tp_model_config cfg;
    if (tp_cli_builtin_model(model, &cfg) != 0)
        return TP_EXIT_USAGE;
    if (!tokens_s) {
        tp_cli_error("--tokens N is required");
        return TP_EXIT_USAGE;
    }
    if (!json && !dot) {
        tp_cli_error("nothing to write: give --json FILE and/or --dot FILE");
        return TP_EXIT_USAGE;
    }
    const size_t max_ctx = (size_t)cfg.max_ctx;
    size_t tokens, n_out, n_ctx = TP_DEFAULT_N_CTX, queued = 0;
    if (tp_cli_parse_count_size("--tokens", tokens_s, 1, max_ctx, &tokens) != 0)
        return TP_EXIT_USAGE;
    n_out = tokens;
    if (n_out_s && tp_cli_parse_count_size("--n-out", n_out_s, 1, tokens, &n_out) != 0)
        return TP_EXIT_USAGE;
    if (n_ctx_s && tp_cli_parse_count_size("--n-ctx", n_ctx_s, 1, SIZE_MAX / 2, &n_ctx) != 0)
        return TP_EXIT_USAGE;
    if (queued_s &&
        tp_cli_parse_count_size("--queued-layers", queued_s, 0, (size_t)cfg.n_layer, &queued) != 0)
        return TP_EXIT_USAGE;
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
