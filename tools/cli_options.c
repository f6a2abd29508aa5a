/* The option table's rows and the one parser of every command's arguments, with the --help
 * lists printed from the table (tools/cli_options.h). */
#define TP_CLI_OPTIONS_TABLE
#include "cli_options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

#define TP_CLI_ROW(id, sh, nm, old, hnt, parse, cmds, text)                                         \
    [TP_OPT_##id] = {.short_name = (sh), .name = (nm), old, .hint = (hnt), parse,                 \
                     .commands = (cmds), .help = (text)},
const tp_cli_option tp_cli_options[TP_OPT_COUNT_] = {TP_CLI_OPTIONS(TP_CLI_ROW)};
#undef TP_CLI_ROW

/* What each command calls its positional arguments, in messages. */
typedef struct cmd_spec {
    const char *name;
    const char *what[TP_CLI_MAX_POSITIONALS];
    int max_pos;
    const char *too_many; /* NULL: "unexpected argument 'X' (one WHAT only)" */
} cmd_spec;

static const cmd_spec specs[TP_CMD_COUNT] = {
    [TP_CMD_PLAN] = {"plan", {"PROBLEM.csv"}, 1, NULL},
    [TP_CMD_VALIDATE] = {"validate", {"PROBLEM.csv", "SOLUTION.csv"}, 2,
                         "two files expected, got '%s' too"},
    [TP_CMD_GRAPH] = {"graph", {"MODEL"}, 1, NULL},
    [TP_CMD_ALLOC] = {"alloc", {"GRAPH.json"}, 1, NULL},
    [TP_CMD_MODEL] = {"model", {"MODEL"}, 1, NULL},
    [TP_CMD_RUN_FILE] = {"run", {"MODEL"}, 1, NULL},
    [TP_CMD_RUN_BUILTIN] = {"run", {"MODEL"}, 1, NULL},
    [TP_CMD_INSPECT] = {"inspect", {"FILE.gguf"}, 1, NULL},
    [TP_CMD_TOKENIZE] = {"tokenize", {"FILE.gguf", "TEXT"}, 2, NULL},
    [TP_CMD_DETOKENIZE] = {"detokenize", {"FILE.gguf", "IDS"}, 2, NULL},
    [TP_CMD_WRITE_MODEL] = {"write-model", {"CONFIG"}, 1, NULL},
};

static int takes_value(const tp_cli_option *o)
{
    return o->kind != TP_KIND_FLAG && o->kind != TP_KIND_END && o->kind != TP_KIND_HELP;
}

/* The row of MASK's commands that ARG spells, its spelling in *spelled and, for
 * "--name=VALUE", the value in *inline_value (else NULL); -1 when none. */
static int find_option(unsigned mask, const char *arg, const char **spelled,
                       const char **inline_value)
{
    for (int id = 0; id < TP_OPT_COUNT_; id++) {
        const tp_cli_option *o = &tp_cli_options[id];
        if (!(o->commands & mask))
            continue;
        const char *names[3] = {o->name, o->old_name, o->short_name};
        for (int k = 0; k < 3; k++) {
            const char *n = names[k];
            if (n == NULL || (k == 1 && !(o->old_commands & mask)))
                continue;
            const size_t len = strlen(n);
            *spelled = n;
            *inline_value = NULL;
            if (strcmp(arg, n) == 0)
                return id;
            if (k < 2 && takes_value(o) && strncmp(arg, n, len) == 0 && arg[len] == '=') {
                *inline_value = arg + len + 1;
                return id;
            }
        }
    }
    return -1;
}

static int take_positional(const cmd_spec *s, tp_cli_args *a, const char *arg)
{
    if (a->n_pos < s->max_pos) {
        a->pos[a->n_pos++] = arg;
        return 0;
    }
    if (s->too_many)
        tp_cli_error(s->too_many, arg);
    else
        tp_cli_error("unexpected argument '%s' (one %s only)", arg, s->what[s->max_pos - 1]);
    return -1;
}

/* The arguments' structure: options (each value kept as text, the last of a repeated one)
 * and positionals. 0, or -1 after a message. */
static int read_arguments(tp_cli_cmd cmd, int argc, char **argv, tp_cli_args *a)
{
    const cmd_spec *s = &specs[cmd];
    int rest = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *spelled = NULL, *value = NULL;
        const int is_option = !rest && arg[0] == '-' && arg[1] != '\0';
        const int id = is_option ? find_option(1u << cmd, arg, &spelled, &value) : -1;
        if (!is_option) {
            if (take_positional(s, a, arg) != 0)
                return -1;
            continue;
        }
        if (id < 0) {
            tp_cli_error("unknown option '%s' (see 'tensorplan help %s')", arg, s->name);
            return -1;
        }
        const tp_cli_option *o = &tp_cli_options[id];
        if (o->kind == TP_KIND_END) {
            rest = 1;
            continue;
        }
        if (!takes_value(o)) {
            value = "";
        } else if (value == NULL) {
            if (i + 1 >= argc) {
                tp_cli_error("%s needs a value (see 'tensorplan help %s')", arg, s->name);
                return -1;
            }
            value = argv[++i];
        }
        a->opt[id].text = value;
        a->opt[id].spelled = spelled;
        a->opt[id].index = i;
    }
    return 0;
}

/* A finite decimal number in [lo, hi] given to FLAG. 0, or -1 after a message. */
static int parse_real(const char *flag, const char *text, double lo, double hi, double *v)
{
    char *end = NULL;
    errno = 0;
    const double x = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !isfinite(x) || x < lo || x > hi) {
        if (isinf(hi))
            tp_cli_error("%s '%s': expected a number >= %g", flag, text, lo);
        else
            tp_cli_error("%s '%s': expected a number in [%g, %g]", flag, text, lo, hi);
        return -1;
    }
    *v = x;
    return 0;
}

/* The index of TEXT among CHOICES "a|b|c" (any case), or -1 after a message naming them. */
static int parse_choice(const char *flag, const char *choices, const char *text, int *index)
{
    const size_t len = strlen(text);
    int k = 0, count = 1;
    for (const char *c = choices; *c; c++)
        count += *c == '|';
    for (const char *c = choices;; k++) {
        const char *bar = strchr(c, '|');
        const size_t n = bar ? (size_t)(bar - c) : strlen(c);
        if (n == len && strncasecmp(c, text, n) == 0) {
            *index = k;
            return 0;
        }
        if (!bar)
            break;
        c = bar + 1;
    }
    char names[256] = "";
    k = 0;
    for (const char *c = choices; *c; k++) {
        const char *bar = strchr(c, '|');
        const int n = bar ? (int)(bar - c) : (int)strlen(c);
        const size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%.*s",
                 k == 0 ? "" : k == count - 1 ? " or " : ", ", n, c);
        c = bar ? bar + 1 : c + n;
    }
    tp_cli_error("%s: expected %s, got '%s'", flag, names, text);
    return -1;
}

/* The value of option ID by its row (BOUNDED rows wait for tp_cli_bound). 0 or -1. */
static int check_value(tp_cli_value *v, const tp_cli_option *o)
{
    switch (o->kind) {
    case TP_KIND_COUNT:
        return tp_cli_parse_count(v->spelled, v->text, o->lo, o->hi, &v->count);
    case TP_KIND_SIZE:
        return tp_cli_parse_size(v->spelled, v->text, &v->size);
    case TP_KIND_POW2:
        if (tp_cli_parse_size(v->spelled, v->text, &v->size) != 0)
            return -1;
        if (v->size == 0 || (v->size & (v->size - 1)) != 0) {
            tp_cli_error("%s wants a power of two, got '%s'", v->spelled, v->text);
            return -1;
        }
        return 0;
    case TP_KIND_REAL:
        return parse_real(v->spelled, v->text, o->real_lo, o->real_hi, &v->real);
    case TP_KIND_CHOICE:
        return parse_choice(v->spelled, o->choices, v->text, &v->choice);
    default:
        return 0;
    }
}

int tp_cli_parse(tp_cli_cmd cmd, int argc, char **argv, tp_cli_args *a)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    if (read_arguments(cmd, argc, argv, a) != 0)
        return -1;
    /* the values, in the order they were given */
    for (int i = 1; i < argc; i++)
        for (int id = 0; id < TP_OPT_COUNT_; id++)
            if (a->opt[id].text && a->opt[id].index == i &&
                check_value(&a->opt[id], &tp_cli_options[id]) != 0)
                return -1;
    return 0;
}

int tp_cli_bound(tp_cli_args *a, tp_cli_opt id, unsigned long long hi)
{
    tp_cli_value *v = &a->opt[id];
    if (v->text == NULL)
        return 0;
    return tp_cli_parse_count(v->spelled, v->text, tp_cli_options[id].lo, hi, &v->count);
}

const char *tp_cli_first_positional(unsigned mask, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *spelled, *value;
        if (arg[0] != '-' || arg[1] == '\0')
            return arg;
        const int id = find_option(mask, arg, &spelled, &value);
        if (id >= 0 && value == NULL && takes_value(&tp_cli_options[id]))
            i++;
    }
    return NULL;
}

/* ---- --help ------------------------------------------------------------------------------ */

/* Writes WORDS (space-separated) from column *col on, wrapping at 79 columns to INDENT. */
static void put_words(FILE *out, const char *words, size_t indent, size_t *col)
{
    const char *w = words;
    while (*w) {
        while (*w == ' ')
            w++;
        const size_t n = strcspn(w, " ");
        if (n == 0)
            break;
        if (*col > indent && *col + 1 + n > 79) {
            fprintf(out, "\n%*s", (int)indent, "");
            *col = indent;
        } else if (*col > indent) {
            fputc(' ', out);
            (*col)++;
        }
        fwrite(w, 1, n, out);
        *col += n;
        w += n;
    }
}

/* 1 when NAME is one of the '|'-separated names of LIST[0..len). */
static int names_command(const char *list, size_t len, const char *name)
{
    const size_t n = strlen(name);
    for (const char *c = list, *end = list + len; c < end;) {
        const char *bar = memchr(c, '|', (size_t)(end - c));
        const size_t k = bar ? (size_t)(bar - c) : (size_t)(end - c);
        if (k == n && strncmp(c, name, n) == 0)
            return 1;
        c += k + 1;
    }
    return 0;
}

/* HELP as command NAME shows it: "{a|b:TEXT}" is TEXT for commands a and b, nothing for
 * the others (nested, too). Into BUF of CAP bytes; returns the end of what was read. */
static const char *select_help(const char *help, const char *name, char *buf, size_t cap,
                               size_t *len, int show)
{
    const char *c = help;
    while (*c && *c != '}') {
        if (*c == '{') {
            const char *colon = strchr(c, ':');
            if (colon == NULL)
                break;
            const int inner = show && names_command(c + 1, (size_t)(colon - c - 1), name);
            c = select_help(colon + 1, name, buf, cap, len, inner);
            if (*c == '}')
                c++;
            continue;
        }
        if (show && *len + 1 < cap)
            buf[(*len)++] = *c;
        c++;
    }
    buf[*len] = '\0';
    return c;
}

/* "--name HINT" of row O, in BUF. */
static const char *names_column(const tp_cli_option *o, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s%s%s", o->short_name ? o->short_name : "",
             o->short_name ? ", " : "", o->name, o->hint ? " " : "", o->hint ? o->hint : "");
    return buf;
}

/* 1 when the synopsis already shows option NAME. */
static int in_synopsis(const char *synopsis, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = strstr(synopsis, name); p; p = strstr(p + 1, name))
        if (p[n] == '\0' || p[n] == ' ' || p[n] == ')' || p[n] == ']' || p[n] == '|')
            return 1;
    return 0;
}

void tp_cli_help_usage(FILE *out, const char *lead, tp_cli_cmd cmd, const char *synopsis)
{
    fprintf(out, "%stensorplan %s ", lead, specs[cmd].name);
    const size_t indent = strlen(lead) + strlen("tensorplan ") + strlen(specs[cmd].name) + 1;
    size_t col = indent;
    fputs(synopsis, out);
    col += strlen(synopsis);
    for (int id = 0; id < TP_OPT_COUNT_; id++) {
        const tp_cli_option *o = &tp_cli_options[id];
        if (!(o->commands & (1u << cmd)) || o->kind == TP_KIND_HELP ||
            o->kind == TP_KIND_END || in_synopsis(synopsis, o->name) ||
            (o->short_name && in_synopsis(synopsis, o->short_name)))
            continue;
        char item[128], names[96];
        if (o->short_name)
            snprintf(names, sizeof names, "%s%s%s", o->short_name, o->hint ? " " : "",
                     o->hint ? o->hint : "");
        else
            names_column(o, names, sizeof names);
        snprintf(item, sizeof item, "[%s]", names);
        const size_t n = strlen(item);
        if (col + 1 + n > 79) {
            fprintf(out, "\n%*s", (int)indent, "");
            col = indent;
        } else {
            fputc(' ', out);
            col++;
        }
        fputs(item, out);
        col += n;
    }
    fputc('\n', out);
}

void tp_cli_help_options(FILE *out, const char *title, unsigned all, unsigned none)
{
    const char *name = "";
    for (int c = 0; c < TP_CMD_COUNT; c++)
        if (all & (1u << c))
            name = specs[c].name;
    size_t width = 0;
    char names[96];
    for (int id = 0; id < TP_OPT_COUNT_; id++)
        if (tp_cli_options[id].commands & (all | none)) {
            const size_t n = strlen(names_column(&tp_cli_options[id], names, sizeof names));
            width = n > width ? n : width;
        }
    fprintf(out, "%s\n", title);
    for (int id = 0; id < TP_OPT_COUNT_; id++) {
        const tp_cli_option *o = &tp_cli_options[id];
        if ((o->commands & all) != all || (o->commands & none))
            continue;
        fprintf(out, "  %-*s  ", (int)width, names_column(o, names, sizeof names));
        size_t col = width + 4, len = 0;
        char text[1024];
        select_help(o->help, name, text, sizeof text, &len, 1);
        put_words(out, text, width + 4, &col);
        if (o->old_name && (o->old_commands & all) == all) {
            char old[96];
            snprintf(old, sizeof old, "(%s, the older spelling, is read too)", o->old_name);
            put_words(out, old, width + 4, &col);
        }
        fputc('\n', out);
    }
}
