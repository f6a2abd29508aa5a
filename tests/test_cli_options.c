/* The command line's options, checked through the built program against a list written here
 * from the documentation (README, docs/tensorplan.1, `tensorplan help CMD`):
 *  - every option of every command is accepted by the commands that take it and refused with
 *    exit 2 ("unknown option") by every other one;
 *  - `help CMD` lists exactly the command's options (run: in its three groups);
 *  - counts, sizes and numbers at the ends of their ranges, accepted, and one past them,
 *    refused; choices in any case; a repeated option: the last one counts; --name=VALUE;
 *  - the older spelling of plan's --planner (--strategy) plans the same.
 * An accepted option is seen by the exit status of a command line that is otherwise right
 * but names a file that cannot be read or written: 1 (a runtime failure after the command
 * line was read), where a refused command line exits 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/cli_run.h"
#include "tensorplan/model.h"

enum {
    C_PLAN = 1 << 0,
    C_VALIDATE = 1 << 1,
    C_GRAPH = 1 << 2,
    C_ALLOC = 1 << 3,
    C_MODEL = 1 << 4,
    C_RUNF = 1 << 5, /* run FILE.gguf */
    C_RUNB = 1 << 6, /* run MODEL (built-in) */
    C_INSPECT = 1 << 7,
    C_TOK = 1 << 8,
    C_DETOK = 1 << 9,
    C_WRITE = 1 << 10,
    C_COUNT = 11,
    C_RUN = C_RUNF | C_RUNB,
};

/* Each command: its name and a command line that is right but fails at a file (exit 1). */
static const struct {
    const char *name, *base;
} commands[C_COUNT] = {
    {"plan", "plan /nonexistent/p.csv"},
    {"validate", "validate /nonexistent/p.csv /nonexistent/s.csv"},
    {"graph", "graph tiny --tokens 2 --json /nonexistent/g.json"},
    {"alloc", "alloc /nonexistent/g.json"},
    {"model", "model /nonexistent/m.gguf"},
    {"run", "run /nonexistent/m.gguf"}, /* --prompt hi added, see base_of */
    {"run", "run tiny --max-new 1 --trace /nonexistent/t.json"},
    {"inspect", "inspect /nonexistent/m.gguf"},
    {"tokenize", "tokenize /nonexistent/m.gguf hi"},
    {"detokenize", "detokenize /nonexistent/m.gguf 1"},
    {"write-model", "write-model tiny-llama -o /nonexistent/m.gguf"},
};

/* The options: spelling, short spelling (NULL: none), a valid value (NULL: the option takes
 * none), the commands that take it, and whether it is an older spelling of another option
 * (read, named in that option's help text, but not listed). */
typedef struct opt {
    const char *name, *other, *value;
    unsigned cmds;
    int old;
} opt;

static const opt options[] = {
    {"--output", "-o", "/nonexistent/o.out", C_PLAN | C_WRITE, 0},
    {"--capacity", NULL, "12", C_PLAN | C_VALIDATE, 0},
    {"--planner", NULL, "exact", C_PLAN, 0},
    {"--strategy", NULL, "portfolio", C_PLAN, 1}, /* --planner's older spelling */
    {"--time-limit", NULL, "0.5", C_PLAN, 0},
    {"--align", NULL, "8", C_PLAN, 0},
    {"--threads", NULL, "2", C_PLAN | C_RUN, 0},
    {"--tokens", NULL, "1", C_GRAPH, 0},
    {"--n-out", NULL, "1", C_GRAPH, 0},
    {"--prompt", NULL, "4", C_MODEL, 1}, /* --prompt-len's older spelling in model */
    {"--prompt", NULL, "hello", C_RUNF, 0},
    {"--prompt-tokens", NULL, "1,2", C_RUN, 0},
    {"--prompt-len", NULL, "2", C_MODEL | C_RUNB, 0},
    {"--max-new", NULL, "1", C_RUN, 0},
    {"--temp", NULL, "0.5", C_RUNF, 0},
    {"--top-k", NULL, "3", C_RUNF, 0},
    {"--top-p", NULL, "0.9", C_RUNF, 0},
    {"--seed", NULL, "3", C_RUN | C_WRITE, 0},
    {"--n-ctx", NULL, "16", C_GRAPH | C_MODEL | C_RUN, 0},
    {"--kv-type", NULL, "f16", C_MODEL | C_RUN, 0},
    {"--ubatch", NULL, "4", C_MODEL | C_RUN, 0},
    {"--kernels", NULL, "portable", C_RUN, 0},
    {"--no-fuse", NULL, NULL, C_GRAPH, 0},
    {"--queued-layers", NULL, "1", C_GRAPH | C_RUN, 0},
    {"--json", NULL, "/nonexistent/g2.json", C_GRAPH, 0},
    {"--dot", NULL, "/nonexistent/g.dot", C_GRAPH, 0},
    {"--strategy", NULL, "arena", C_ALLOC | C_RUN, 0},
    {"--aliasing", NULL, "none", C_ALLOC | C_RUN, 0},
    {"--exact-sizes", NULL, NULL, C_ALLOC, 0},
    {"--plan", NULL, "/nonexistent/p.json", C_ALLOC, 0},
    {"--budget", NULL, "1M", C_MODEL, 0},
    {"--trace", NULL, "/nonexistent/t2.json", C_RUN, 0},
    {"--dump-dir", NULL, "/nonexistent/d", C_RUN, 0},
    {"--dump-graph", NULL, "/nonexistent/g.dot", C_RUN, 0},
    {"--dump-graph-json", NULL, "/nonexistent/g.json", C_RUN, 0},
    {"--json", NULL, NULL, C_PLAN | C_VALIDATE | C_MODEL | C_INSPECT, 0},
    {"--check", NULL, NULL, C_INSPECT, 0},
    {"--html", NULL, "/nonexistent/p.html", C_PLAN | C_ALLOC | C_MODEL | C_RUN, 0},
    {"--explain", NULL, NULL, C_PLAN | C_ALLOC | C_MODEL, 0},
    {"--pieces", NULL, NULL, C_TOK, 0},
    {"--no-special", NULL, NULL, C_TOK, 0},
    {"--no-parse-special", NULL, NULL, C_TOK, 0},
    {"--special", NULL, NULL, C_DETOK, 0},
    {"--arch", NULL, "qwen2", C_WRITE, 0},
    {"--type", NULL, "q8_0", C_WRITE, 0},
    {"--tokenizer", NULL, "llama", C_WRITE, 0},
    {"--pre", NULL, "qwen2", C_WRITE, 0},
    {"--", NULL, NULL, C_TOK | C_DETOK, 0},
};
static const size_t n_options = sizeof options / sizeof options[0];

static char dir[] = "/tmp/tp_cli_options_XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cli_remove_outputs(dir);
    return rmdir(dir);
}

/* `tensorplan ARGS...` (printf-style shell text). */
static cli_result run_cli(const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return cli_run(dir, args);
}

/* The command line of command C with option O (spelled S): the base, and run FILE.gguf's
 * required prompt unless O is one of the two prompts. */
static void command_line(char *buf, size_t cap, int c, const char *s, const opt *o)
{
    const char *prompt = "";
    if ((1u << c) == C_RUNF && strcmp(o->name, "--prompt") != 0 &&
        strcmp(o->name, "--prompt-tokens") != 0)
        prompt = " --prompt hi";
    snprintf(buf, cap, "%s%s %s %s", commands[c].base, prompt, s, o->value ? o->value : "");
}

/* One line on stderr, containing WANT. */
static void one_line_with(const cli_result *r, const char *want, const char *args)
{
    if (cli_lines(r->err) != 1 || strstr(r->err, want) == NULL)
        fail_msg("'%s': expected one line with \"%s\" on stderr, got:\n%s", args, want, r->err);
}

static void expect(int rc, const char *want, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    cli_result r = cli_run(dir, args);
    if (r.rc != rc)
        fail_msg("'%s': exit %d, expected %d; stderr:\n%s", args, r.rc, rc, r.err);
    if (want)
        one_line_with(&r, want, args);
    cli_free(&r);
}

static void test_every_option_accepted_where_it_belongs_refused_elsewhere(void **state)
{
    (void)state;
    for (size_t k = 0; k < n_options; k++) {
        const opt *o = &options[k];
        const char *spellings[2] = {o->name, o->other};
        for (int c = 0; c < C_COUNT; c++)
            for (int s = 0; s < 2 && spellings[s]; s++) {
                const char *sp = spellings[s];
                /* a spelling another row gives this command is that row's, not refused */
                int other_row = 0;
                for (size_t j = 0; j < n_options; j++)
                    if (j != k && (options[j].cmds & (1u << c)) &&
                        (strcmp(options[j].name, sp) == 0 ||
                         (options[j].other && strcmp(options[j].other, sp) == 0)))
                        other_row = 1;
                if (other_row)
                    continue;
                char args[1024], want[128];
                command_line(args, sizeof args, c, sp, o);
                if (o->cmds & (1u << c)) {
                    expect(1, NULL, "%s", args);
                } else {
                    snprintf(want, sizeof want, "unknown option '%s'", sp);
                    expect(2, want, "%s", args);
                }
            }
    }
}

/* The names of the options listed in the section of TEXT under the line TITLE (its
 * indented lines), as "|NAME|NAME|...|": the names column is what comes before the first two
 * spaces in a row, its words that start with '-' the names ("-o, --output FILE"). */
static void listed_names(const char *text, const char *title, char *names, size_t cap)
{
    const char *p = strstr(text, title);
    assert_non_null(p);
    p = strchr(p + (title[0] == '\n'), '\n') + 1;
    size_t used = 0;
    names[used++] = '|';
    for (; *p == ' '; p = strchr(p, '\n') + 1) {
        if (p[2] != '-')
            continue; /* a wrapped line of the text */
        const char *q = p + 2, *col_end = strstr(q, "  ");
        assert_non_null(col_end);
        while (q < col_end) {
            const size_t n = strcspn(q, ", ");
            if (q[0] == '-') {
                assert_true(used + n + 2 < cap);
                memcpy(names + used, q, n);
                used += n;
                names[used++] = '|';
            }
            q += n;
            q += strspn(q, ", ");
        }
    }
    names[used] = '\0';
}

/* "|NAME|...|" of the options of the commands in mask ALL, but not in NONE, in the list. */
static void expected_names(unsigned all, unsigned none, char *names, size_t cap)
{
    size_t used = 0;
    names[used++] = '|';
    for (size_t k = 0; k < n_options; k++) {
        const opt *o = &options[k];
        if ((o->cmds & all) != all || (o->cmds & none) || o->old)
            continue;
        used += (size_t)snprintf(names + used, cap - used, "%s%s%s|", o->other ? o->other : "",
                                 o->other ? "|" : "", o->name);
    }
    snprintf(names + used, cap - used, "%s", none ? "" : "-h|--help|");
}

/* Sorted "|a|b|" sets compared as sets: every name of one is in the other, same count. */
static void same_names(const char *got, const char *want, const char *what)
{
    size_t n_got = 0, n_want = 0;
    for (const char *c = got; *c; c++)
        n_got += *c == '|';
    for (const char *c = want; *c; c++)
        n_want += *c == '|';
    for (const char *c = want + 1; *c;) {
        const char *bar = strchr(c, '|');
        char item[64];
        snprintf(item, sizeof item, "|%.*s|", (int)(bar - c), c);
        if (!strstr(got, item))
            fail_msg("%s: %s is not listed (listed: %s)", what, item, got);
        c = bar + 1;
    }
    if (n_got != n_want)
        fail_msg("%s: listed %s, expected %s", what, got, want);
}

/* How often option NAME is shown in the usage lines of help text TEXT (up to the first
 * blank line): as NAME followed by a space, ']', ')', '|' or the end of a line. */
static int usage_count(const char *text, const char *name)
{
    const char *end = strstr(text, "\n\n");
    const size_t n = strlen(name);
    int count = 0;
    for (const char *p = strstr(text, name); p && p < end; p = strstr(p + n, name))
        if (p[-1] == '[' || p[-1] == ' ' || p[-1] == '(')
            count += strchr(" ])|\n", p[n]) != NULL;
    return count;
}

/* Every option of the commands of mask C (not an older spelling, not -h or --) is shown
 * TIMES times in the usage lines. */
static void usage_shows(const char *text, unsigned c, int times, unsigned none)
{
    for (size_t k = 0; k < n_options; k++) {
        const opt *o = &options[k];
        if ((o->cmds & c) != c || (o->cmds & none) || o->old || strcmp(o->name, "--") == 0)
            continue;
        const int got = usage_count(text, o->other ? o->other : o->name);
        if (got != times)
            fail_msg("usage shows %s %d times, expected %d:\n%s", o->name, got, times, text);
    }
}

static void test_help_lists_exactly_the_options(void **state)
{
    (void)state;
    char got[2048], want[2048];
    for (int c = 0; c < C_COUNT; c++) {
        if ((1u << c) & C_RUN)
            continue;
        cli_result r = run_cli("help %s", commands[c].name);
        assert_int_equal(r.rc, 0);
        char head[64];
        snprintf(head, sizeof head, "usage: tensorplan %s ", commands[c].name);
        assert_non_null(strstr(r.out, head));
        listed_names(r.out, "\noptions:\n", got, sizeof got);
        expected_names(1u << c, 0, want, sizeof want);
        same_names(got, want, commands[c].name);
        usage_shows(r.out, 1u << c, 1, 0);
        /* the other form of asking gives the same text */
        cli_result h = run_cli("%s --help", commands[c].name);
        assert_int_equal(h.rc, 0);
        assert_string_equal(h.out, r.out);
        cli_free(&h);
        cli_free(&r);
    }
    cli_result r = run_cli("run -h");
    assert_int_equal(r.rc, 0);
    /* two usage lines: a GGUF file's and a built-in model's */
    usage_shows(r.out, C_RUNF, 1, C_RUNB);
    usage_shows(r.out, C_RUNB, 1, C_RUNF);
    usage_shows(r.out, C_RUN, 2, 0);
    listed_names(r.out, "options with a GGUF file:", got, sizeof got);
    expected_names(C_RUNF, C_RUNB, want, sizeof want);
    same_names(got, want, "run, GGUF file");
    listed_names(r.out, "options with a built-in MODEL:", got, sizeof got);
    expected_names(C_RUNB, C_RUNF, want, sizeof want);
    same_names(got, want, "run, built-in");
    listed_names(r.out, "options of both:", got, sizeof got);
    expected_names(C_RUN, 0, want, sizeof want);
    same_names(got, want, "run, both");
    /* an older spelling is named in its option's text, only where it is read */
    assert_null(strstr(r.out, "the older spelling"));
    cli_free(&r);
    r = run_cli("help plan");
    assert_non_null(strstr(r.out, "--strategy, the older spelling"));
    cli_free(&r);
    r = run_cli("help model");
    assert_non_null(strstr(r.out, "--prompt, the older spelling"));
    cli_free(&r);
}

/* Integers, sizes and numbers: the ends of each range accepted, one past refused with a
 * message naming the option (and, for integers, the range). */
static void test_ranges_at_their_bounds(void **state)
{
    (void)state;
    static const struct {
        const char *line, *value;
        int rc;
        const char *want;
    } cases[] = {
        {"plan /nonexistent/p.csv --threads", "0", 1, NULL},
        {"plan /nonexistent/p.csv --threads", "1024", 1, NULL},
        {"plan /nonexistent/p.csv --threads", "1025", 2, "from 0 to 1024"},
        {"run tiny --max-new 1 --trace /nonexistent/t.json --threads", "0", 1, NULL},
        {"run tiny --max-new 1 --trace /nonexistent/t.json --threads", "1024", 1, NULL},
        {"run tiny --max-new 1 --trace /nonexistent/t.json --threads", "1025", 2,
         "from 0 to 1024"},
        {"run /nonexistent/m.gguf --prompt hi --threads", "1025", 2, "from 0 to 1024"},
        /* one context range everywhere: 1 to 2^40 */
        {"graph tiny --tokens 2 --json /nonexistent/g.json --n-ctx", "1", 1, NULL},
        {"graph tiny --tokens 2 --json /nonexistent/g.json --n-ctx", "1099511627776", 1, NULL},
        {"graph tiny --tokens 2 --json /nonexistent/g.json --n-ctx", "1099511627777", 2,
         "from 1 to 1099511627776"},
        {"graph tiny --tokens 2 --json /nonexistent/g.json --n-ctx", "0", 2, "--n-ctx"},
        {"model /nonexistent/m.gguf --n-ctx", "1099511627776", 1, NULL},
        {"model /nonexistent/m.gguf --n-ctx", "1099511627777", 2, "from 1 to 1099511627776"},
        {"model tiny --n-ctx", "1099511627777", 2, "from 1 to 1099511627776"},
        {"run /nonexistent/m.gguf --prompt hi --n-ctx", "1099511627777", 2,
         "from 1 to 1099511627776"},
        {"run tiny --trace /nonexistent/t.json --n-ctx", "1099511627777", 2,
         "from 1 to 1099511627776"},
        {"run /nonexistent/m.gguf --prompt hi --max-new", "1073741824", 1, NULL},
        {"run /nonexistent/m.gguf --prompt hi --max-new", "1073741825", 2,
         "from 0 to 1073741824"},
        {"run /nonexistent/m.gguf --prompt hi --top-k", "2147483647", 1, NULL},
        {"run /nonexistent/m.gguf --prompt hi --top-k", "2147483648", 2, "from 0 to 2147483647"},
        {"run /nonexistent/m.gguf --prompt hi --seed", "18446744073709551615", 1, NULL},
        {"run /nonexistent/m.gguf --prompt hi --seed", "18446744073709551616", 2, "--seed"},
        {"write-model tiny-llama -o /nonexistent/m.gguf --seed", "18446744073709551615", 1, NULL},
        {"write-model tiny-llama -o /nonexistent/m.gguf --seed", "18446744073709551616", 2,
         "--seed"},
        {"run /nonexistent/m.gguf --prompt hi --top-p", "1", 1, NULL},
        {"run /nonexistent/m.gguf --prompt hi --top-p", "1e-9", 1, NULL},
        {"run /nonexistent/m.gguf --prompt hi --top-p", "1.0001", 2, "--top-p"},
        {"run /nonexistent/m.gguf --prompt hi --top-p", "0", 2, "--top-p"},
        {"run /nonexistent/m.gguf --prompt hi --temp", "0", 1, NULL},
        {"run /nonexistent/m.gguf --prompt hi --temp", "1000000", 1, NULL},
        {"run /nonexistent/m.gguf --prompt hi --temp", "1000001", 2, "--temp"},
        {"run /nonexistent/m.gguf --prompt hi --temp", "-0.5", 2, "--temp"},
        {"plan /nonexistent/p.csv --time-limit", "0", 1, NULL},
        {"plan /nonexistent/p.csv --time-limit", "-0.001", 2, "--time-limit"},
        {"plan /nonexistent/p.csv --time-limit", "inf", 2, "--time-limit"},
        {"plan /nonexistent/p.csv --capacity", "18446744073709551615", 1, NULL},
        {"plan /nonexistent/p.csv --capacity", "18446744073709551616", 2, "--capacity"},
        {"plan /nonexistent/p.csv --capacity", "17179869183G", 1, NULL},
        {"plan /nonexistent/p.csv --capacity", "17179869184G", 2, "--capacity"},
        {"plan /nonexistent/p.csv --capacity", "0", 1, NULL},
        {"validate /nonexistent/p.csv /nonexistent/s.csv --capacity", "1T", 2, "--capacity"},
        {"model /nonexistent/m.gguf --budget", "16777215T", 2, "--budget"},
        {"plan /nonexistent/p.csv --align", "1", 1, NULL},
        {"plan /nonexistent/p.csv --align", "9223372036854775808", 1, NULL},
        {"plan /nonexistent/p.csv --align", "0", 2, "power of two"},
        {"plan /nonexistent/p.csv --align", "3", 2, "power of two"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect(cases[i].rc, cases[i].want, "%s %s", cases[i].line, cases[i].value);
}

/* The bounds a model gives: its maximum context and its layers (read from the library's
 * configuration of the built-in model, not from the command line). */
static void test_bounds_of_the_model(void **state)
{
    (void)state;
    tp_model_config cfg;
    assert_int_equal(tp_model_config_builtin("tiny", &cfg), TP_OK);
    const int ctx = cfg.max_ctx, layers = cfg.n_layer;
    char want[128];
    snprintf(want, sizeof want, "from 1 to %d", ctx);
    const char *graph = "graph tiny --json /nonexistent/g.json";
    expect(1, NULL, "%s --tokens %d", graph, ctx);
    expect(2, want, "%s --tokens %d", graph, ctx + 1);
    expect(2, want, "%s --tokens 0", graph);
    expect(1, NULL, "%s --tokens 3 --n-out 3", graph);
    expect(2, "from 1 to 3", "%s --tokens 3 --n-out 4", graph);
    expect(1, NULL, "%s --tokens 3 --queued-layers %d", graph, layers);
    snprintf(want, sizeof want, "from 0 to %d", layers);
    expect(2, want, "%s --tokens 3 --queued-layers %d", graph, layers + 1);
    expect(2, want, "run tiny --trace /nonexistent/t.json --queued-layers %d", layers + 1);
    snprintf(want, sizeof want, "from 1 to %d", ctx);
    expect(0, NULL, "model tiny --prompt %d", ctx);
    expect(2, want, "model tiny --prompt %d", ctx + 1);
    expect(2, want, "model tiny --prompt 0");
    expect(2, want, "model tiny --prompt-len %d", ctx + 1);
    expect(0, NULL, "model tiny --prompt-len %d", ctx);
    expect(1, NULL, "run tiny --max-new 1 --trace /nonexistent/t.json --prompt-len %d", ctx);
    expect(2, want, "run tiny --max-new 1 --trace /nonexistent/t.json --prompt-len %d", ctx + 1);
}

static void test_choices(void **state)
{
    (void)state;
    static const struct {
        const char *line, *flag, *names[13], *message;
    } cases[] = {
        {"plan /nonexistent/p.csv", "--planner", {"greedy", "portfolio", "exact"},
         "--planner: expected greedy, portfolio or exact, got 'best'"},
        {"plan /nonexistent/p.csv", "--strategy", {"greedy", "portfolio", "exact"},
         "--strategy: expected greedy, portfolio or exact, got 'best'"},
        {"alloc /nonexistent/g.json", "--strategy", {"pool", "arena", "naive"},
         "--strategy: expected pool, arena or naive, got 'best'"},
        {"run tiny --trace /nonexistent/t.json", "--strategy", {"pool", "arena", "naive"},
         "--strategy: expected pool, arena or naive, got 'best'"},
        {"alloc /nonexistent/g.json", "--aliasing", {"sole-consumer", "last-consumer", "none"},
         "--aliasing: expected sole-consumer, last-consumer or none, got 'best'"},
        {"write-model tiny-llama -o /nonexistent/m.gguf", "--arch", {"llama", "qwen2"},
         "--arch: expected llama or qwen2, got 'best'"},
        {"write-model tiny-llama -o /nonexistent/m.gguf", "--tokenizer", {"gpt2", "llama"},
         "--tokenizer: expected gpt2 or llama, got 'best'"},
        {"write-model tiny-llama -o /nonexistent/m.gguf", "--type",
         {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k",
          "q5_k", "q6_k"},
         "--type: expected f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k "
         "or q6_k, got 'best'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t k = 0; k < 13 && cases[i].names[k]; k++) {
            char upper[32];
            size_t n = strlen(cases[i].names[k]);
            for (size_t j = 0; j <= n; j++) {
                const char ch = cases[i].names[k][j];
                upper[j] = ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
            }
            /* tiny-llama's rows (64 elements) are no whole block of a K type (256): refused
             * by the writer, after the command line was read */
            const int k_type = strcmp(cases[i].flag, "--type") == 0 && n == 4 && upper[3] == 'K';
            char block[48];
            snprintf(block, sizeof block, "%s block", upper);
            expect(k_type ? 2 : 1, k_type ? block : NULL, "%s %s %s", cases[i].line,
                   cases[i].flag, cases[i].names[k]);
            expect(k_type ? 2 : 1, k_type ? block : NULL, "%s %s %s", cases[i].line,
                   cases[i].flag, upper);
        }
        expect(2, cases[i].message, "%s %s best", cases[i].line, cases[i].flag);
    }
}

/* The summary without its timing line. */
static void drop_timing(char *text)
{
    char *t = strstr(text, "plan time ");
    if (t) {
        char *nl = strchr(t, '\n');
        memmove(t, nl + 1, strlen(nl + 1) + 1);
    }
}

static void test_repeated_options_last_one_counts(void **state)
{
    (void)state;
    char problem[512];
    snprintf(problem, sizeof problem, "%s/minimalloc/input.12.csv", TP_TEST_DATA);
    /* input.12.csv's arena is 12 bytes: capacity 12 fits, 11 does not */
    expect(0, NULL, "plan '%s' --capacity 11 --capacity 12", problem);
    expect(4, NULL, "plan '%s' --capacity 12 --capacity 11", problem);
    expect(4, NULL, "plan '%s' --capacity=11", problem);
    /* only the last value is read */
    expect(0, NULL, "plan '%s' --capacity 12x --capacity 12", problem);
    expect(2, "--capacity", "plan '%s' --capacity 12 --capacity 12x", problem);
    expect(1, NULL, "validate /nonexistent/p.csv /nonexistent/s.csv --json --json --capacity 1 "
                    "--capacity 2");
    /* the older spelling is the same option: the last of the two counts */
    cli_result plain = run_cli("plan '%s'", problem);
    cli_result mixed = run_cli("plan '%s' --strategy exact --planner greedy", problem);
    cli_result old = run_cli("plan '%s' --strategy exact", problem);
    cli_result new = run_cli("plan '%s' --planner exact", problem);
    assert_int_equal(plain.rc, 0);
    assert_int_equal(mixed.rc, 0);
    assert_int_equal(old.rc, 0);
    assert_int_equal(new.rc, 0);
    drop_timing(plain.out);
    drop_timing(mixed.out);
    drop_timing(old.out);
    drop_timing(new.out);
    assert_string_equal(mixed.out, plain.out);
    assert_string_equal(old.out, new.out);
    assert_non_null(strstr(new.out, "strategy  ")); /* the exact search reports itself */
    assert_null(strstr(plain.out, "strategy  "));
    cli_free(&plain);
    cli_free(&mixed);
    cli_free(&old);
    cli_free(&new);
    /* model: --prompt is --prompt-len, the last of the two counts */
    static const char *const prompts[] = {"--prompt 4", "--prompt-len 4",
                                          "--prompt-len 5 --prompt 4", "--prompt 5 --prompt-len 4"};
    for (size_t i = 0; i < 4; i++) {
        cli_result m = run_cli("model tiny %s", prompts[i]);
        assert_int_equal(m.rc, 0);
        assert_non_null(strstr(m.out, "\nprefill: 4 tokens, logits for the last one\n"));
        cli_free(&m);
    }
    /* graph: the last --tokens is the pass's */
    char json[600];
    snprintf(json, sizeof json, "%s/g.json", dir);
    cli_result r = run_cli("graph tiny --tokens 3 --json /nonexistent/x.json --tokens 2 "
                           "--json=%s", json);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, ": 2 tokens, 2 output rows"));
    cli_free(&r);
    remove(json);
}

static void test_forms_of_a_value(void **state)
{
    (void)state;
    /* --name=VALUE; a value that is missing; an option without a value given one */
    expect(1, NULL, "plan /nonexistent/p.csv --capacity=12 --planner=exact");
    expect(2, "--capacity needs a value", "plan /nonexistent/p.csv --capacity");
    expect(2, "-o needs a value", "write-model tiny-llama -o");
    expect(2, "unknown option '--json=1'", "plan /nonexistent/p.csv --json=1");
    expect(2, "unknown option '-o=x'", "plan /nonexistent/p.csv -o=x");
    /* a value may start with '-'; "-" alone is a positional (standard input) */
    expect(1, NULL, "plan /nonexistent/p.csv -o --json");
    expect(3, NULL, "plan - </dev/null");
    /* "--" ends the options of tokenize and detokenize only */
    expect(1, NULL, "tokenize /nonexistent/m.gguf -- --pieces");
    expect(2, "unknown option '--'", "plan /nonexistent/p.csv --");
    /* `run` tells a file from a built-in model by the first positional, after options and
     * their values, either mode's */
    expect(1, NULL, "run --temp 0.5 --prompt hi /nonexistent/m.gguf");
    expect(1, NULL, "run --prompt-len 2 tiny --max-new 1 --trace /nonexistent/t.json");
    expect(2, "unknown option '--temp'", "run --temp 0.5 tiny");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_option_accepted_where_it_belongs_refused_elsewhere),
        cmocka_unit_test(test_help_lists_exactly_the_options),
        cmocka_unit_test(test_ranges_at_their_bounds),
        cmocka_unit_test(test_bounds_of_the_model),
        cmocka_unit_test(test_choices),
        cmocka_unit_test(test_repeated_options_last_one_counts),
        cmocka_unit_test(test_forms_of_a_value),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
