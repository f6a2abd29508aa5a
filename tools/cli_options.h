/* The command line's options, declared once (the table below), and the one parser that reads
 * every subcommand's arguments with it and prints their --help option lists
 * (tools/cli_options.c).
 *
 * The rules, the same for every command (README, docs/tensorplan.1):
 *  - an option is written "--name VALUE" or "--name=VALUE"; a short name ("-o") only as
 *    "-o VALUE"; an option that takes no value ("--json") is written alone;
 *  - a repeated option: the last one counts ("--seed 1 --seed 2" is --seed 2), and only its
 *    value is checked; an older spelling is the same option;
 *  - an argument starting with '-' (but "-" alone, a name for standard input) that no option
 *    of the command spells is refused as an unknown option; "--" ends the options only for
 *    the commands whose table row says so (tokenize, detokenize);
 *  - every refusal is one line on stderr and exit 2.
 */
#ifndef TP_TOOLS_CLI_OPTIONS_H
#define TP_TOOLS_CLI_OPTIONS_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "tensorplan/session.h"

/* The commands, as the table names them. `run` is two: on a GGUF file and on a built-in
 * model, which take partly different options. */
typedef enum tp_cli_cmd {
    TP_CMD_PLAN,
    TP_CMD_VALIDATE,
    TP_CMD_GRAPH,
    TP_CMD_ALLOC,
    TP_CMD_MODEL,
    TP_CMD_RUN_FILE,
    TP_CMD_RUN_BUILTIN,
    TP_CMD_INSPECT,
    TP_CMD_TOKENIZE,
    TP_CMD_DETOKENIZE,
    TP_CMD_WRITE_MODEL,
    TP_CMD_COUNT
} tp_cli_cmd;

#ifdef TP_CLI_OPTIONS_TABLE /* the names the rows use, seen only where the table is read */
/* Command masks of the table's COMMANDS column. */
#define PLAN (1u << TP_CMD_PLAN)
#define VALIDATE (1u << TP_CMD_VALIDATE)
#define GRAPH (1u << TP_CMD_GRAPH)
#define ALLOC (1u << TP_CMD_ALLOC)
#define MODEL (1u << TP_CMD_MODEL)
#define RUN_FILE (1u << TP_CMD_RUN_FILE)
#define RUN_BUILTIN (1u << TP_CMD_RUN_BUILTIN)
#define RUN (RUN_FILE | RUN_BUILTIN)
#define INSPECT (1u << TP_CMD_INSPECT)
#define TOKENIZE (1u << TP_CMD_TOKENIZE)
#define DETOKENIZE (1u << TP_CMD_DETOKENIZE)
#define WRITE_MODEL (1u << TP_CMD_WRITE_MODEL)
#define ALL_COMMANDS ((1u << TP_CMD_COUNT) - 1)

/* How a value is read and checked (the table's PARSE column):
 *   AS_FLAG             no value
 *   AS_TEXT             any text; the command reads it (a path, a list of ids)
 *   AS_COUNT(lo, hi)    a decimal integer in [lo, hi]
 *   AS_BOUNDED(lo)      a decimal integer in [lo, hi], hi given by the command once it knows
 *                       it (the model's context or layers): tp_cli_bound
 *   AS_SIZE             a byte count: decimal digits, optionally K, M or G (powers of 1024)
 *   AS_POW2             an AS_SIZE that is a power of two
 *   AS_REAL(lo, hi)     a finite decimal number in [lo, hi] (hi INFINITY: no upper bound)
 *   AS_CHOICE("a|b")    one of the names (in any case); the value is its index
 *   AS_END              "--": every later argument is positional
 *   AS_HELP             -h, --help (tools/main.c answers it before the command runs) */
#define NO_OLD .old_name = NULL
#define OLD(name, cmds) .old_name = (name), .old_commands = (cmds)
#define AS_FLAG .kind = TP_KIND_FLAG
#define AS_TEXT .kind = TP_KIND_TEXT
#define AS_COUNT(l, h) .kind = TP_KIND_COUNT, .lo = (l), .hi = (h)
#define AS_BOUNDED(l) .kind = TP_KIND_BOUNDED, .lo = (l)
#define AS_SIZE .kind = TP_KIND_SIZE
#define AS_POW2 .kind = TP_KIND_POW2
#define AS_REAL(l, h) .kind = TP_KIND_REAL, .real_lo = (l), .real_hi = (h)
#define AS_CHOICE(names) .kind = TP_KIND_CHOICE, .choices = (names)
#define AS_END .kind = TP_KIND_END
#define AS_HELP .kind = TP_KIND_HELP
#endif

#define TP_CLI_STR_(x) #x
#define TP_CLI_STR(x) TP_CLI_STR_(x)
#define TP_MODEL_DEFAULT_PROMPT 440
#define TP_RUN_DEFAULT_PROMPT 8
#define TP_RUN_DEFAULT_MAX_NEW 8
#define TP_RUN_GGUF_DEFAULT_MAX_NEW 32

/* THE OPTION TABLE: one row per option, in the order --help lists them.
 *
 *   X(ID, SHORT, LONG, OLD, HINT, PARSE, COMMANDS, HELP)
 *
 *   ID        the command reads the value as args.opt[TP_OPT_ID]
 *   SHORT     "-o" or NULL;  LONG "--output"
 *   OLD       OLD("--strategy", PLAN): an older spelling still read by those commands, or
 *             NO_OLD
 *   HINT      the value's name in --help ("FILE"), NULL for FLAG
 *   PARSE     how the value is read and checked (AS_..., above)
 *   COMMANDS  the commands that take it, a mask (PLAN | VALIDATE)
 *   HELP      the --help text, one paragraph (wrapped when printed); "{plan|alloc:TEXT}" is
 *             TEXT in the help of those commands only
 *
 * To give an existing option to one more command, add the command to its COMMANDS. To add
 * an option, add one row here (its ID becomes TP_OPT_ID, its --help line and its check come
 * from the row) and read args.opt[TP_OPT_ID] in the command: .text is NULL when absent, and
 * .count, .size, .real or .choice hold the checked value (tp_cli_given says whether it was
 * given; a BOUNDED row is checked by tp_cli_bound once the command knows its bound). For
 * example, a KV cache type for model and run is the one row
 *
 *   X(KV_TYPE, NULL, "--kv-type", NO_OLD, "T", AS_CHOICE("f32|f16|q8_0"), MODEL | RUN,
 *     "the type of the KV cache: f32 (default), f16 or q8_0")
 *
 * and the commands read args.opt[TP_OPT_KV_TYPE].choice (0, 1 or 2) when it is given; the
 * help of both lists it, both refuse "--kv-type q4" with exit 2, every other command refuses
 * --kv-type as unknown. The run commands read their shared options in tp_cli_run_options
 * (tools/cli_run.c). One name, one meaning: two rows may share a spelling only for disjoint
 * commands (--json: a flag, or graph's file; --prompt: run's text). tests/test_cli_options.c
 * lists each command's options as the documentation gives them, so a new option is added to
 * its list (and to README and docs/tensorplan.1) too. */
#define TP_CLI_OPTIONS(X)                                                                          \
    X(OUTPUT, "-o", "--output", NO_OLD, "FILE", AS_TEXT, PLAN | WRITE_MODEL,                       \
      "{plan:write the solution to FILE. It is written to a temporary file renamed at the "        \
      "end, so a failure leaves no partial file. '-' writes it to stdout (the summary then "       \
      "goes to stderr). Without -o no solution is written.}{write-model:the file to write "        \
      "(required); '-' writes it to stdout}")                                                                               \
    X(CAPACITY, NULL, "--capacity", NO_OLD, "BYTES", AS_SIZE, PLAN | VALIDATE,                     \
      "the bytes available (suffix K, M or G: powers of 1024){plan:: exit 4 when the arena "       \
      "is larger (the solution is still written, for inspection)}{validate:: exit 4 when "         \
      "the solution's height is larger}")                                                          \
    X(PLANNER, NULL, "--planner", OLD("--strategy", PLAN), "NAME",                                 \
      AS_CHOICE("greedy|portfolio|exact"), PLAN,                                                   \
      "greedy (default: tp_plan_offsets), portfolio (the best of nine greedy orders, run on "      \
      "every processor) or exact (a search, after the portfolio: with --capacity it finds a "      \
      "plan that fits or proves there is none, otherwise it minimises the arena; the summary "     \
      "says whether it is proven)")                                                                \
    X(TIME_LIMIT, NULL, "--time-limit", NO_OLD, "SECS", AS_REAL(0.0, INFINITY), PLAN,              \
      "stop after SECS seconds and keep the best plan so far (flagged not proven); 0 or "          \
      "absent: no limit")                                                                          \
    X(ALIGN, NULL, "--align", NO_OLD, "BYTES", AS_POW2, PLAN,                                      \
      "every offset a multiple of BYTES (a power of two)")                                         \
    X(THREADS, NULL, "--threads", NO_OLD, "N", AS_COUNT(0, 1024), PLAN | RUN,                      \
      "threads the command may use, 0 to 1024: 0 (default) every processor, 1 the calling "        \
      "thread only{plan:; the plan is the same on any number}{run:; the kernels start at "         \
      "most 64}")                                                                                  \
    X(TOKENS, NULL, "--tokens", NO_OLD, "N", AS_BOUNDED(1), GRAPH,                                 \
      "tokens in the pass, 1 to the model's maximum context (1 = a decode step, more = a "         \
      "prefill); required")                                                                        \
    X(N_OUT, NULL, "--n-out", NO_OLD, "K", AS_BOUNDED(1), GRAPH,                                   \
      "rows of logits wanted, 1 <= K <= N (default N); K < N gathers the last layer's tail "       \
      "rows, e.g. --n-out 1 for the next token")                                                   \
    X(PROMPT_TEXT, NULL, "--prompt", NO_OLD, "TEXT", AS_TEXT, RUN_FILE,                            \
      "the prompt, tokenized with the file's vocabulary (bos/eos as it says, special tokens "      \
      "matched); \"-\" reads standard input")                                                      \
    X(PROMPT_TOKENS, NULL, "--prompt-tokens", NO_OLD, "IDS", AS_TEXT, RUN,                         \
      "the prompt as token ids, each below the vocabulary size (with a GGUF file separated by "    \
      "commas or spaces, with a built-in model by commas)")                                        \
    X(PROMPT_LEN, NULL, "--prompt-len", OLD("--prompt", MODEL), "N", AS_BOUNDED(1),                \
      MODEL | RUN_BUILTIN,                                                                         \
      "{model:prompt tokens of the prefill (default " TP_CLI_STR(TP_MODEL_DEFAULT_PROMPT) ")}"     \
      "{run:a prompt of N seeded random ids (default " TP_CLI_STR(TP_RUN_DEFAULT_PROMPT) ")}, "    \
      "at most the model's maximum context")                                                       \
    X(MAX_NEW, NULL, "--max-new", NO_OLD, "N", AS_COUNT(0, 1u << 30), RUN,                         \
      "tokens to generate (default " TP_CLI_STR(TP_RUN_GGUF_DEFAULT_MAX_NEW) " with a GGUF "       \
      "file, " TP_CLI_STR(TP_RUN_DEFAULT_MAX_NEW) " with a built-in model; 0 runs the prefill "    \
      "only); prompt length + N - 1 must fit the context used")                                    \
    X(TEMP, NULL, "--temp", NO_OLD, "T", AS_REAL(0.0, 1e6), RUN_FILE,                              \
      "0 (default) = greedy; else top-k, top-p, temperature, then a draw (docs/sampling.md)")      \
    X(TOP_K, NULL, "--top-k", NO_OLD, "K", AS_COUNT(0, INT_MAX), RUN_FILE,                         \
      "keep the K largest logits (default 0 = all)")                                               \
    X(TOP_P, NULL, "--top-p", NO_OLD, "P", AS_REAL(1e-9, 1.0), RUN_FILE,                           \
      "keep the smallest set of mass >= P (default 1 = all)")                                      \
    X(SEED, NULL, "--seed", NO_OLD, "S", AS_COUNT(0, UINT64_MAX), RUN | WRITE_MODEL,               \
      "{run:the seed (default 1) of the sampler with a GGUF file; of the weights and of a "        \
      "random prompt with a built-in model}{write-model:the weights' seed (default 1)}")           \
    X(N_CTX, NULL, "--n-ctx", NO_OLD, "C", AS_COUNT(1, 1ull << 40), GRAPH | MODEL | RUN,           \
      "KV context requested, 1 to 2^40 (default " TP_CLI_STR(TP_DEFAULT_N_CTX) "); the "           \
      "context used is min(max(C, {graph:N}{model|run:prompt length}), the model's "               \
      "maximum){graph:, as for a real run}")                                                       \
    X(KV_TYPE, NULL, "--kv-type", NO_OLD, "T", AS_CHOICE("f32|f16|q8_0"), MODEL | RUN,            \
      "the type the KV cache is stored in: f32, f16 (default, as llama.cpp) or q8_0 (head_dim a "  \
      "multiple of 32); attention reads it as stored, activations stay f32")                      \
    X(KERNELS, NULL, "--kernels", NO_OLD, "FORM", AS_CHOICE("auto|avx512|avx2|portable"), RUN,   \
      "the instruction-set form of the mat-mul kernels: auto (default: the best this processor " \
      "has), avx512 (AVX-512 F, BW, VL and VNNI), avx2 (AVX2, FMA and F16C) or portable (plain " \
      "C); a form the processor lacks is refused. The forms differ only in the order of f32 "    \
      "additions (docs/quant.md section 5)")                                                     \
    X(UBATCH, NULL, "--ubatch", NO_OLD, "U", AS_COUNT(1, 1u << 30), MODEL | RUN,                   \
      "a prompt longer than U tokens runs in chunks of U (default "                                \
      TP_CLI_STR(TP_DEFAULT_UBATCH) "), one cached graph per chunk size, so the planned "          \
      "activations are one chunk's whatever the prompt length{model:; the prefill reported is "   \
      "that chunk's plan}")                                                                        \
    X(NO_FUSE, NULL, "--no-fuse", NO_OLD, NULL, AS_FLAG, GRAPH,                                    \
      "keep mul(silu(gate), up) instead of swiglu(gate, up)")                                      \
    X(QUEUED_LAYERS, NULL, "--queued-layers", NO_OLD, "K", AS_BOUNDED(0), GRAPH | RUN,             \
      "put layers [0, K) on the queued (device-like, deferred) backend, K at most the model's "    \
      "layers; the rest, the embedding and the head stay on cpu (default 0)")                      \
    X(GRAPH_JSON, NULL, "--json", NO_OLD, "FILE", AS_TEXT, GRAPH,                                  \
      "write the graph JSON (format tensorplan-graph, version 1)")                                 \
    X(DOT, NULL, "--dot", NO_OLD, "FILE", AS_TEXT, GRAPH,                                          \
      "write Graphviz DOT: nodes coloured by backend, inputs and outputs marked, dead nodes "      \
      "dashed, a legend")                                                                          \
    X(STRATEGY, NULL, "--strategy", NO_OLD, "S", AS_CHOICE("pool|arena|naive"), ALLOC | RUN,       \
      "pool (default): exact-length pool buffers requested by size class; arena: one arena per "   \
      "backend, windows at offsets from the planner; naive: every live node its own exact-size "   \
      "buffer (the reference)")                                                                    \
    X(ALIASING, NULL, "--aliasing", NO_OLD, "P",                                                   \
      AS_CHOICE("sole-consumer|last-consumer|none"), ALLOC | RUN,                                  \
      "sole-consumer (default): silu and rope write into their first source when it has no "       \
      "other consumer; last-consumer: also add, mul, rms_norm and swiglu, whenever they are the "  \
      "source's last consumer (ggml's rule); none: never")                                         \
    X(EXACT_SIZES, NULL, "--exact-sizes", NO_OLD, NULL, AS_FLAG, ALLOC,                            \
      "request activation buffers at their exact sizes, not by class")                             \
    X(PLAN_FILE, NULL, "--plan", NO_OLD, "FILE", AS_TEXT, ALLOC,                                   \
      "write the plan JSON (format tensorplan-plan, version 1)")                                   \
    X(BUDGET, NULL, "--budget", NO_OLD, "BYTES", AS_SIZE, MODEL,                                   \
      "BYTES (suffix K, M or G: powers of 1024): does the smallest total fit at the requested "    \
      "context, the largest context that fits (prompt min(N, context)) and the largest prompt "    \
      "that fits (context = prompt)")                                                              \
    X(TRACE, NULL, "--trace", NO_OLD, "FILE", AS_TEXT, RUN,                                        \
      "JSON trace: per node statistics and a sample of its output (env TENSORPLAN_TRACE)")         \
    X(DUMP_DIR, NULL, "--dump-dir", NO_OLD, "DIR", AS_TEXT, RUN,                                   \
      "after the run: DIR/logits.f32 (the last forward's logits: with --max-new 1 the "            \
      "prefill's last-token logits) and DIR/kv.L.k.f32, kv.L.v.f32, raw little-endian f32 (env "   \
      "TENSORPLAN_GRAPH_DUMP)")                                                                    \
    X(DUMP_GRAPH, NULL, "--dump-graph", NO_OLD, "FILE", AS_TEXT, RUN,                              \
      "write the prefill graph as Graphviz DOT (after build, backend assignment and fusion) and "  \
      "exit")                                                                                      \
    X(DUMP_GRAPH_JSON, NULL, "--dump-graph-json", NO_OLD, "FILE", AS_TEXT, RUN,                    \
      "the same graph as JSON, then exit")                                                         \
    X(JSON, NULL, "--json", NO_OLD, NULL, AS_FLAG, PLAN | VALIDATE | MODEL | INSPECT,              \
      "print the result as one JSON object on stdout instead of the text{plan|validate: "          \
      "(fields in docs/json-output.md{plan:; not with -o -}{validate:; exit codes as "             \
      "without})}{model|inspect: (fields below)}")                                                 \
    X(CHECK, NULL, "--check", NO_OLD, NULL, AS_FLAG, INSPECT,                                     \
      "also read every tensor's values (block types dequantized) and name each tensor holding "   \
      "a NaN or an infinity: how many, and the first element; exit 3 when one does")              \
    X(HTML, NULL, "--html", NO_OLD, "FILE", AS_TEXT, PLAN | ALLOC | MODEL | RUN,                   \
      "write a picture{plan: of the plan}{alloc: of the plan (one panel per backend and one "      \
      "of the KV regions)}{model: of the prefill and decode plans (pool strategy, "                \
      "sole-consumer aliasing) side by side}{run: of the prefill and decode plans this run "       \
      "makes, before the run,} as one self-contained HTML page (docs/picture.md)")                 \
    X(EXPLAIN, NULL, "--explain", NO_OLD, NULL, AS_FLAG, PLAN | ALLOC | MODEL,                     \
      "after the {plan:summary, the buffers}{alloc:statistics, the nodes}{model:report, for "      \
      "both plans, the nodes} live at the step where live bytes peak, largest first, with "        \
      "their share of the peak")                                                                   \
    X(PIECES, NULL, "--pieces", NO_OLD, NULL, AS_FLAG, TOKENIZE,                                   \
      "one line per token instead: ID -> 'PIECE' (the bytes it stands for; control tokens show "   \
      "their text)")                                                                               \
    X(NO_SPECIAL, NULL, "--no-special", NO_OLD, NULL, AS_FLAG, TOKENIZE,                           \
      "do not add bos/eos (by default they are added as the vocabulary's add_bos/add_eos say)")    \
    X(NO_PARSE_SPECIAL, NULL, "--no-parse-special", NO_OLD, NULL, AS_FLAG, TOKENIZE,               \
      "control tokens written in the text are text, not tokens")                                   \
    X(SPECIAL, NULL, "--special", NO_OLD, NULL, AS_FLAG, DETOKENIZE,                               \
      "control tokens give their text instead of nothing")                                         \
    X(ARCH, NULL, "--arch", NO_OLD, "A", AS_CHOICE("llama|qwen2"), WRITE_MODEL,                    \
      "llama or qwen2 (default: the config's); llama uses NORM rope, qwen2 NEOX; switching "       \
      "drops the biases the other family lacks")                                                   \
    X(TYPE, NULL, "--type", NO_OLD, "T",                                                           \
      AS_CHOICE("f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q2_k|q3_k|q4_k|q5_k|q6_k"), WRITE_MODEL,    \
      "the type of every matrix: f32 (default), f16, bf16, q8_0, q4_0, q4_1, q5_0 or q5_1; the "  \
      "K types q2_k, q3_k, q4_k, q5_k and q6_k only where every matrix row is a multiple of 256 " \
      "elements (not tiny-qwen2, tiny-llama or qwen2.5-0.5b: refused)")                          \
    X(TOKENIZER, NULL, "--tokenizer", NO_OLD, "K", AS_CHOICE("gpt2|llama"), WRITE_MODEL,           \
      "gpt2 (byte-level BPE) or llama (SentencePiece); default: gpt2 for qwen2, llama for llama")  \
    X(PRE, NULL, "--pre", NO_OLD, "PRE", AS_TEXT, WRITE_MODEL,                                     \
      "tokenizer.ggml.pre for gpt2 (default qwen2), one docs/tokenizer.md lists (qwen2, "         \
      "llama-bpe, gpt-2, smollm, default and their aliases); another is refused")                  \
    X(END, NULL, "--", NO_OLD, NULL, AS_END, TOKENIZE | DETOKENIZE,                                \
      "what follows is {tokenize:TEXT}{detokenize:IDS} even if it starts with '-'")                         \
    X(HELP, "-h", "--help", NO_OLD, NULL, AS_HELP, ALL_COMMANDS, "this text")

typedef enum tp_cli_opt {
#define TP_CLI_ID(id, ...) TP_OPT_##id,
    TP_CLI_OPTIONS(TP_CLI_ID)
#undef TP_CLI_ID
    TP_OPT_COUNT_
} tp_cli_opt;

typedef enum tp_cli_kind {
    TP_KIND_FLAG,
    TP_KIND_TEXT,
    TP_KIND_COUNT,
    TP_KIND_BOUNDED,
    TP_KIND_SIZE,
    TP_KIND_POW2,
    TP_KIND_REAL,
    TP_KIND_CHOICE,
    TP_KIND_END,
    TP_KIND_HELP,
} tp_cli_kind;

/* One row of the table. */
typedef struct tp_cli_option {
    const char *short_name, *name, *old_name, *hint;
    unsigned old_commands; /* the commands that read old_name */
    tp_cli_kind kind;
    unsigned long long lo, hi;
    double real_lo, real_hi;
    const char *choices;
    unsigned commands;
    const char *help;
} tp_cli_option;

extern const tp_cli_option tp_cli_options[TP_OPT_COUNT_];

/* An option as given: text NULL when absent ("" for a FLAG given), the spelling used (for
 * messages), and the checked value of its kind. */
typedef struct tp_cli_value {
    const char *text;
    const char *spelled;
    int index; /* argv index of the (last) occurrence */
    unsigned long long count;
    size_t size;
    double real;
    int choice;
} tp_cli_value;

#define TP_CLI_MAX_POSITIONALS 2

typedef struct tp_cli_args {
    tp_cli_cmd cmd;
    tp_cli_value opt[TP_OPT_COUNT_];
    const char *pos[TP_CLI_MAX_POSITIONALS];
    int n_pos;
} tp_cli_args;

/* Reads argv[1..argc) (argv[0] the command's name) of command CMD into *a: every option by
 * the table, values checked, but those of BOUNDED rows, which tp_cli_bound checks. Returns 0,
 * or -1 after a one-line message. */
int tp_cli_parse(tp_cli_cmd cmd, int argc, char **argv, tp_cli_args *a);

/* 1 when option ID was given. */
static inline int tp_cli_given(const tp_cli_args *a, tp_cli_opt id)
{
    return a->opt[id].text != NULL;
}

/* Checks the BOUNDED option ID (when given) against [its row's lo, hi] into .count. 0, or -1
 * after the message of any count out of range. */
int tp_cli_bound(tp_cli_args *a, tp_cli_opt id, unsigned long long hi);

/* The first positional argument of argv[1..argc) as either of the commands of MASK would
 * read it (each option's value skipped by the table), or NULL: how `run` tells a GGUF file
 * from a built-in model before it parses the rest. */
const char *tp_cli_first_positional(unsigned mask, int argc, char **argv);

/* The mask of command CMD, for tp_cli_help_options. */
#define TP_CLI_BIT(cmd) (1u << (cmd))

/* --help from the table: LEAD ("usage: " or spaces), "tensorplan NAME SYNOPSIS", then every
 * other option of CMD as "[--name HINT]", wrapped at 79 columns. */
void tp_cli_help_usage(FILE *out, const char *lead, tp_cli_cmd cmd, const char *synopsis);

/* TITLE, then one entry per option whose commands include every bit of ALL and none of NONE:
 * its names and value hint, then its help text wrapped at 79 columns. */
void tp_cli_help_options(FILE *out, const char *title, unsigned all, unsigned none);

#endif
