/* tensorplan tokenize / detokenize: a GGUF file's tokenizer (docs/tokenizer.md) on text or
 * token ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_gguf.h"

void tp_help_tokenize(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_TOKENIZE, "FILE.gguf TEXT");
    fputs(
        "\n"
        "Tokenizes TEXT (\"-\": all of standard input) with the vocabulary of the GGUF file's\n"
        "tokenizer.ggml.* keys, as llama.cpp does (docs/tokenizer.md), and prints the ids on\n"
        "one line separated by spaces. The weights are not read.\n"
        "\n",
        out);
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_TOKENIZE), 0);
    fputs(
        "\n"
        "exit codes: 0 done, 1 the file cannot be read, 2 bad command line,\n"
        "            3 the file or its vocabulary is refused (or the text has a byte the\n"
        "            vocabulary cannot encode)\n"
        "\n"
        "example:\n"
        "  tensorplan tokenize qwen2.5-0.5b-instruct-q8_0.gguf 'Hello world'\n",
        out);
}

void tp_help_detokenize(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_DETOKENIZE, "FILE.gguf IDS");
    fputs(
        "\n"
        "Turns token ids (separated by commas and/or spaces; \"-\": read from standard\n"
        "input) back into text with the GGUF file's vocabulary (docs/tokenizer.md) and\n"
        "prints it followed by a newline.\n"
        "\n",
        out);
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_DETOKENIZE), 0);
    fputs(
        "\n"
        "exit codes: 0 done, 1 the file cannot be read, 2 bad command line (also an id not\n"
        "            below the vocabulary size), 3 the file or its vocabulary is refused\n"
        "\n"
        "example:\n"
        "  tensorplan detokenize qwen2.5-0.5b-instruct-q8_0.gguf '9707 1879'\n",
        out);
}

typedef struct tok_args {
    const char *file, *text;
    int pieces, no_special, no_parse_special, special;
} tok_args;

/* FILE and TEXT (or IDS) and the options of command CMD into *a. Returns 0 or -1 after a
 * message. */
static int parse_args(int argc, char **argv, tok_args *a, tp_cli_cmd cmd, const char *what)
{
    tp_cli_args o;
    if (tp_cli_parse(cmd, argc, argv, &o) != 0)
        return -1;
    a->file = o.pos[0];
    a->text = o.pos[1];
    a->pieces = tp_cli_given(&o, TP_OPT_PIECES);
    a->no_special = tp_cli_given(&o, TP_OPT_NO_SPECIAL);
    a->no_parse_special = tp_cli_given(&o, TP_OPT_NO_PARSE_SPECIAL);
    a->special = tp_cli_given(&o, TP_OPT_SPECIAL);
    if (!a->file || !a->text) {
        tp_cli_error("expected FILE.gguf and %s (try 'tensorplan help %s')", what, argv[0]);
        return -1;
    }
    return 0;
}

static int print_ids(const tp_tokenizer *tok, const int32_t *ids, size_t n, int pieces)
{
    char *buf = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!pieces) {
            printf(i ? " %d" : "%d", ids[i]);
            continue;
        }
        size_t len = 0;
        if (tp_tokenizer_piece(tok, ids[i], 1, NULL, 0, &len) != TP_OK)
            goto fail;
        char *grown = realloc(buf, len + 1);
        if (!grown)
            goto fail;
        buf = grown;
        if (tp_tokenizer_piece(tok, ids[i], 1, buf, len + 1, &len) != TP_OK)
            goto fail;
        printf("%d -> '", ids[i]);
        fwrite(buf, 1, len, stdout);
        printf("'\n");
    }
    if (!pieces)
        printf("\n");
    free(buf);
    return TP_EXIT_OK;
fail:
    tp_cli_error("%s", tp_last_error());
    free(buf);
    return TP_EXIT_ERROR;
}

/* The common start of tokenize and detokenize: the command line, the file's tokenizer and
 * the text (or ids) argument. A negative return is minus the exit code with nothing left
 * open; otherwise the tokenizer is open and the return is tp_cli_read_text's (the text is
 * read when it is TP_EXIT_OK). */
static int open_and_read(int argc, char **argv, tp_cli_cmd cmd, const char *what, tok_args *a,
                         tp_gguf **g, tp_tokenizer **tok, char **text, size_t *len)
{
    memset(a, 0, sizeof *a);
    if (parse_args(argc, argv, a, cmd, what) != 0)
        return -TP_EXIT_USAGE;
    int rc = tp_cli_open_tokenizer(a->file, g, tok);
    if (rc != TP_EXIT_OK)
        return -rc;
    return tp_cli_read_text(a->text, text, len);
}

int tp_cmd_tokenize(int argc, char **argv)
{
    tok_args a;
    tp_gguf *g = NULL;
    tp_tokenizer *tok = NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = open_and_read(argc, argv, TP_CMD_TOKENIZE, "TEXT", &a, &g, &tok, &text, &len);
    if (rc < 0)
        return -rc;
    int32_t *ids = NULL;
    size_t n = 0;
    if (rc == TP_EXIT_OK) {
        tp_status st = tp_tokenizer_encode(tok, text, len, !a.no_special, !a.no_parse_special,
                                           &ids, &n);
        if (st != TP_OK) {
            tp_cli_error("%s: %s", a.file, tp_last_error());
            rc = tp_cli_exit_for(st);
        } else {
            rc = print_ids(tok, ids, n, a.pieces);
        }
    }
    free(ids);
    free(text);
    tp_tokenizer_destroy(tok);
    tp_gguf_close(g);
    return rc;
}

int tp_cmd_detokenize(int argc, char **argv)
{
    tok_args a;
    tp_gguf *g = NULL;
    tp_tokenizer *tok = NULL;
    char *list = NULL, *text = NULL;
    size_t len = 0;
    int rc = open_and_read(argc, argv, TP_CMD_DETOKENIZE, "IDS", &a, &g, &tok, &list, &len);
    if (rc < 0)
        return -rc;
    int32_t *ids = NULL;
    size_t n = 0;
    if (rc == TP_EXIT_OK &&
        tp_cli_parse_ids("IDS", list, tp_tokenizer_n_vocab(tok), &ids, &n) != 0)
        rc = TP_EXIT_USAGE;
    if (rc == TP_EXIT_OK) {
        tp_status st = tp_tokenizer_decode(tok, ids, n, 0, a.special, &text, &len);
        if (st != TP_OK) {
            tp_cli_error("%s", tp_last_error());
            rc = tp_cli_exit_for(st);
        } else {
            fwrite(text, 1, len, stdout);
            printf("\n");
        }
    }
    free(text);
    free(ids);
    free(list);
    tp_tokenizer_destroy(tok);
    tp_gguf_close(g);
    return rc;
}
