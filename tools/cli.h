/* The command line: shared exit codes and the subcommand table. */
#ifndef TP_TOOLS_CLI_H
#define TP_TOOLS_CLI_H

#include <stdio.h>

#include "tensorplan/alloc.h"
#include "tensorplan/model.h"
#include "tensorplan/csv.h"
#include "tensorplan/planner.h"
#include "cli_options.h"

/* Exit codes, the same for every subcommand (documented in README and --help). */
enum {
    TP_EXIT_OK = 0,        /* done (and, with --capacity, fits)                        */
    TP_EXIT_ERROR = 1,     /* a runtime failure: out of memory, I/O error, ...          */
    TP_EXIT_USAGE = 2,     /* bad command line                                          */
    TP_EXIT_BAD_INPUT = 3, /* an input file was refused (the message names file+line)   */
    TP_EXIT_NO_FIT = 4,    /* planned or checked, but it does not fit / is not valid    */
};

typedef struct tp_command {
    const char *name;
    const char *summary;                 /* one line for `tensorplan --help`           */
    int (*run)(int argc, char **argv);   /* argv[0] is the subcommand name             */
    void (*help)(FILE *out);             /* full help for `tensorplan help NAME`       */
} tp_command;

/* Each subcommand lives in tools/cmd_NAME.c and exports these two. */
int tp_cmd_plan(int argc, char **argv);
void tp_help_plan(FILE *out);
int tp_cmd_validate(int argc, char **argv);
void tp_help_validate(FILE *out);
int tp_cmd_graph(int argc, char **argv);
void tp_help_graph(FILE *out);
int tp_cmd_alloc(int argc, char **argv);
void tp_help_alloc(FILE *out);
int tp_cmd_model(int argc, char **argv);
void tp_help_model(FILE *out);
int tp_cmd_run(int argc, char **argv);
void tp_help_run(FILE *out);
int tp_cmd_inspect(int argc, char **argv);
void tp_help_inspect(FILE *out);
int tp_cmd_tokenize(int argc, char **argv);
void tp_help_tokenize(FILE *out);
int tp_cmd_detokenize(int argc, char **argv);
void tp_help_detokenize(FILE *out);
int tp_cmd_write_model(int argc, char **argv);
void tp_help_write_model(FILE *out);

/* Helpers shared by the subcommands (tools/cli_util.c); the options themselves are read by
 * the table of tools/cli_options.h. */

/* The built-in model named MODEL (NULL: not given) into *cfg; returns 0, or -1 after a
 * message naming the built-in models. */
int tp_cli_builtin_model(const char *model, tp_model_config *cfg);

/* Parses a byte count (decimal digits, optionally followed by K, M or G for 2^10, 2^20, 2^30;
 * at most SIZE_MAX) given to FLAG; prints a message and returns -1 when it is not one. */
int tp_cli_parse_size(const char *flag, const char *text, size_t *value);

/* Parses a decimal integer in [lo, hi] given to FLAG; prints a message naming the range and
 * returns -1 when it is not one. */
int tp_cli_parse_count(const char *flag, const char *text, unsigned long long lo,
                       unsigned long long hi, unsigned long long *value);

/* --strategy and --aliasing (alloc, run), when given, into *o. */
void tp_cli_alloc_options(const tp_cli_args *a, tp_alloc_options *o);

/* tp_csv_read, where PATH "-" reads standard input (named "(stdin)" in messages). */
tp_status tp_cli_csv_read(const char *path, unsigned flags, tp_csv_table *out);

/* The exit code for a library failure while reading or planning an input file: a refused
 * input (TP_ERR_INVALID, TP_ERR_OVERFLOW) is TP_EXIT_BAD_INPUT, anything else (I/O, memory)
 * TP_EXIT_ERROR. */
int tp_cli_exit_for(tp_status status);

/* A size_t as a JSON number, exact above 2^53 (cJSON's own numbers are doubles). */
struct cJSON *tp_cli_json_size(size_t v);

/* O on one line to stdout, then O deleted. TP_OK, or TP_ERR_NOMEM when it cannot be printed. */
tp_status tp_cli_json_print(struct cJSON *o);

/* Prints "tensorplan: COMMAND: MESSAGE" on one line to stderr (COMMAND once one is running). */
void tp_cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif
