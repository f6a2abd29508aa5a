/* tensorplan: the command-line front door. Dispatches to one file per subcommand. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tensorplan/version.h"

static const tp_command commands[] = {
    {"plan", "place tensors of a MiniMalloc CSV problem in one arena", tp_cmd_plan, tp_help_plan},
    {"validate", "check any solution of a MiniMalloc CSV problem", tp_cmd_validate,
     tp_help_validate},
    {"graph", "build a model's decoder graph and write it as JSON or DOT", tp_cmd_graph,
     tp_help_graph},
    {"alloc", "plan where every node of a graph file lives (pools or arena, KV regions)",
     tp_cmd_alloc, tp_help_alloc},
    {"model", "memory report of a GGUF file or built-in model: weights, KV, activations",
     tp_cmd_model, tp_help_model},
    {"run", "run a GGUF model, or a built-in one (random weights), through the planned graph",
     tp_cmd_run, tp_help_run},
    {"inspect", "check a GGUF file and show its metadata, tensor table and bytes per type",
     tp_cmd_inspect, tp_help_inspect},
    {"tokenize", "token ids of a text with a GGUF file's vocabulary", tp_cmd_tokenize,
     tp_help_tokenize},
    {"detokenize", "the text of token ids with a GGUF file's vocabulary", tp_cmd_detokenize,
     tp_help_detokenize},
    {"write-model", "write a GGUF test model of a built-in config (random weights)",
     tp_cmd_write_model, tp_help_write_model},
};
static const size_t command_count = sizeof commands / sizeof commands[0];

/* The subcommand being run, named in every error message after "tensorplan: ". */
static const char *current_command;

void tp_cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("tensorplan: ", stderr);
    if (current_command != NULL)
        fprintf(stderr, "%s: ", current_command);
    va_start(ap, fmt);
    char small[1024];
    const int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    char *text = small;
    if (n >= (int)sizeof small && (text = malloc((size_t)n + 1)) != NULL) {
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    if (!text)
        text = small;
    /* one line whatever a name holds: control bytes are written as C escapes */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == '\n')
            fputs("\\n", stderr);
        else if (*p == '\t')
            fputs("\\t", stderr);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(stderr, "\\x%02x", *p);
        else
            fputc(*p, stderr);
    }
    if (text != small)
        free(text);
    fputc('\n', stderr);
}

static void usage(FILE *out)
{
    fprintf(out,
            "tensorplan %s: plans where every tensor of a compute graph lives and what runs "
            "before what.\n\n"
            "usage: tensorplan COMMAND [ARGS...]\n"
            "       tensorplan help COMMAND | tensorplan COMMAND --help\n"
            "       tensorplan --version\n\ncommands:\n",
            tp_version());
    for (size_t i = 0; i < command_count; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out,
            "\nexit codes: 0 done, 1 runtime error, 2 bad command line, 3 input refused,\n"
            "            4 does not fit (or the solution is invalid)\n");
}

static const tp_command *find(const char *name)
{
    for (size_t i = 0; i < command_count; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return TP_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        usage(stdout);
        return TP_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("tensorplan %s\n", tp_version());
        return TP_EXIT_OK;
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3) {
            usage(stdout);
            return TP_EXIT_OK;
        }
        const tp_command *cmd = find(argv[2]);
        if (!cmd) {
            tp_cli_error("no command '%s' (try 'tensorplan --help')", argv[2]);
            return TP_EXIT_USAGE;
        }
        cmd->help(stdout);
        return TP_EXIT_OK;
    }
    const tp_command *cmd = find(name);
    if (!cmd) {
        tp_cli_error("no command '%s' (try 'tensorplan --help')", name);
        return TP_EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cmd->help(stdout);
            return TP_EXIT_OK;
        }
    }
    current_command = cmd->name;
    return cmd->run(argc - 1, argv + 1);
}
