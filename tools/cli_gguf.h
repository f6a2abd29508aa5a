/* The command line's shared pieces for GGUF models (tools/cli_gguf.c): opening a file's
 * tokenizer, text from an argument or standard input, and lists of token ids. */
#ifndef TP_TOOLS_CLI_GGUF_H
#define TP_TOOLS_CLI_GGUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tensorplan/session.h"
#include "tensorplan/gguf.h"
#include "tensorplan/tokenizer.h"

/* 1 when PATH names a GGUF file by its suffix (".gguf", any case) or by its first four
 * bytes "GGUF". */
int tp_cli_is_gguf(const char *path);

/* 1 when NAME, if not a built-in model name, is to be read as a file: it contains a '/', or
 * it exists in the folder (even as a dangling link or a link loop). */
int tp_cli_names_file(const char *name);

/* Opens PATH and builds its tokenizer. Returns TP_EXIT_OK, or after a one-line message the
 * exit code of the failure (3 for a refused file, 1 for one that cannot be read); on failure
 * nothing is left open. */
int tp_cli_open_tokenizer(const char *path, tp_gguf **g, tp_tokenizer **tok);

/* ARG itself, or all of standard input when ARG is "-". *text is malloc'ed and NUL-terminated
 * after *len bytes. Returns TP_EXIT_OK or TP_EXIT_ERROR after a message. */
int tp_cli_read_text(const char *arg, char **text, size_t *len);

/* Token ids separated by commas and/or white space, each below n_vocab, at least one.
 * WHAT names the argument in messages. Returns 0, or -1 after a message. */
int tp_cli_parse_ids(const char *what, const char *text, size_t n_vocab, int32_t **ids,
                     size_t *n);

/* tensorplan run on a GGUF file (tools/cmd_run_gguf.c); argv as tp_cmd_run's. */
int tp_run_gguf(int argc, char **argv);

#endif
