/* tensorplan plan: place the buffers of a MiniMalloc CSV problem in one arena. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/clock.h"
#include "tensorplan/csv.h"
#include "tensorplan/plan_html.h"
#include "tensorplan/planner.h"

#include <cjson/cJSON.h>

void tp_help_plan(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_PLAN, "PROBLEM.csv");
    fputs(
        "\n"
        "Places every buffer of a static memory allocation problem at a byte offset in one\n"
        "arena, so that buffers live at the same time never share a byte, and prints a\n"
        "summary. The default planner is tp_plan_offsets: greedy best fit by decreasing\n"
        "size; --planner chooses another.\n"
        "\n"
        "input: MiniMalloc CSV (google/minimalloc), a header line, then one row per buffer:\n"
        "    id,lower,upper,size\n"
        "    b1,0,3,4\n"
        "  id     any text, unique\n"
        "  lower  first time step the buffer is live\n"
        "  upper  first time step it is no longer live: live during [lower, upper)\n"
        "  size   bytes\n"
        "  optional: alignment (the offset a multiple of it), gaps (space-separated lo-hi or\n"
        "  lo-hi@w0:w1: steps [lo, hi) when the buffer needs none, or only bytes [w0, w1),\n"
        "  of its space). MiniMalloc's buffer, buffer_id, start, begin and end (inclusive)\n"
        "  are read as id, lower and upper.\n"
        "  The header names the columns, in any order; other columns are ignored. Accepted:\n"
        "  a UTF-8 byte-order mark, CRLF line ends, trailing blank lines, spaces around\n"
        "  fields, \"quoted\" fields. Anything else is refused with FILE:LINE: what was expected.\n"
        "\n"
        "output (-o): the same rows in the same order, with an offset column added:\n"
        "    id,lower,upper,size,offset\n"
        "    b1,0,3,4,0\n"
        "\n",
        out);
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_PLAN), 0);
    fputs(
        "\n"
        "progress: when stderr is a terminal and planning takes more than about 0.1 s, one\n"
        "line there is kept up to date (tensors placed by the greedy pass under way, best\n"
        "arena so far, lower bound, elapsed, search nodes) and cleared at the end; nothing\n"
        "is written when stderr is not a terminal.\n"
        "\n"
        "BYTES takes a suffix K, M or G (powers of 1024): --capacity 1M is 1048576.\n"
        "PROBLEM.csv '-' reads standard input. A repeated option: the last one counts.\n"
        "\n"
        "summary: buffers; peak = the most bytes live at one time, a lower bound for any\n"
        "arena; arena = the height of the plan; arena/peak; whether it fits the capacity;\n"
        "with --planner portfolio or exact, --time-limit or --align, the order or search\n"
        "that won and what is proven; the time planning took.\n"
        "\n"
        "exit codes:\n"
        "  0  planned (and fits the capacity, if one was given)\n"
        "  1  runtime failure: a file cannot be read or written, out of memory\n"
        "  2  bad command line\n"
        "  3  input refused (one line on stderr: file, line, what was expected)\n"
        "  4  planned, but the arena exceeds --capacity\n"
        "\n"
        "example:\n"
        "  tensorplan plan tests/data/minimalloc/input.12.csv -o sol.csv --capacity 12\n"
        "  tensorplan validate tests/data/minimalloc/input.12.csv sol.csv --capacity 12\n",
        out);
}

/* Everything the command line can ask of `plan`. A new option adds a row to the table
 * (tools/cli_options.h), a field here read in parse_args and, if it changes how offsets are
 * computed, a branch in run_planner. */
typedef struct plan_args {
    const char *problem;
    const char *output; /* NULL: none; "-": stdout */
    int has_capacity;
    size_t capacity;
    tp_plan_strategy strategy;
    double time_limit; /* 0: none */
    size_t align;      /* 1: none */
    unsigned threads;  /* 0: every processor */
    int json;
    const char *html;  /* NULL: no picture */
    int explain;
} plan_args;

static int parse_args(int argc, char **argv, plan_args *a)
{
    static const tp_plan_strategy planners[] = {TP_PLAN_GREEDY, TP_PLAN_PORTFOLIO,
                                                TP_PLAN_EXACT};
    tp_cli_args o;
    if (tp_cli_parse(TP_CMD_PLAN, argc, argv, &o) != 0)
        return -1;
    memset(a, 0, sizeof *a);
    a->problem = o.pos[0];
    a->output = o.opt[TP_OPT_OUTPUT].text;
    a->has_capacity = tp_cli_given(&o, TP_OPT_CAPACITY);
    a->capacity = o.opt[TP_OPT_CAPACITY].size;
    a->strategy = planners[o.opt[TP_OPT_PLANNER].choice];
    a->time_limit = o.opt[TP_OPT_TIME_LIMIT].real;
    a->align = tp_cli_given(&o, TP_OPT_ALIGN) ? o.opt[TP_OPT_ALIGN].size : 1;
    a->threads = (unsigned)o.opt[TP_OPT_THREADS].count;
    a->json = tp_cli_given(&o, TP_OPT_JSON);
    a->html = o.opt[TP_OPT_HTML].text;
    a->explain = tp_cli_given(&o, TP_OPT_EXPLAIN);
    if (!a->problem) {
        tp_cli_error("PROBLEM.csv missing (usage: tensorplan plan PROBLEM.csv [-o "
                     "SOLUTION.csv] [--capacity BYTES])");
        return -1;
    }
    if (a->json && a->output && strcmp(a->output, "-") == 0) {
        tp_cli_error("--json and -o - both want stdout: write the solution to a file");
        return -1;
    }
    return 0;
}

/* One line on stderr, redrawn in place; only when stderr is a terminal. */
static void show_progress(const tp_plan_progress *p, void *user)
{
    (void)user;
    if (p->to_place > 0 && p->have_best)
        fprintf(stderr, "\r\033[Kplacing: %zu of %zu tensors (best arena so far %zu), %.1f s",
                p->placed, p->to_place, p->best_arena, p->elapsed_seconds);
    else if (p->to_place > 0)
        fprintf(stderr, "\r\033[Kplacing: %zu of %zu tensors, %.1f s", p->placed, p->to_place,
                p->elapsed_seconds);
    else if (p->have_best)
        fprintf(stderr, "\r\033[Ksearching: best arena %zu, lower bound %zu, %.1f s, %llu nodes",
                p->best_arena, p->lower_bound, p->elapsed_seconds, p->nodes);
    else
        fprintf(stderr, "\r\033[Ksearching: lower bound %zu, %.1f s, %llu nodes", p->lower_bound,
                p->elapsed_seconds, p->nodes);
    fflush(stderr);
}

static tp_status run_planner(const plan_args *a, const tp_csv_table *t, size_t *offsets,
                             size_t *arena, tp_plan_report *report)
{
    memset(report, 0, sizeof *report);
    /* On a terminal even the plain greedy goes through tp_plan_offsets_ex, for its progress
     * (the same plan: default options reproduce tp_plan_offsets). */
    const int live = isatty(fileno(stderr));
    const int plain = a->strategy == TP_PLAN_GREEDY && a->align == 1 && a->time_limit == 0 &&
                      a->threads == 0 && t->alignments == NULL && t->gap_count == 0;
    if (plain && !live)
        return tp_plan_offsets(t->tensors, t->count, offsets, arena);
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.strategy = a->strategy;
    o.alignment = a->align;
    o.time_limit_seconds = a->time_limit;
    o.threads = a->threads;
    o.alignments = t->alignments; /* the file's alignment and gaps columns, if any */
    o.gaps = t->gaps;
    o.gap_count = t->gap_count;
    if (a->has_capacity && a->capacity > 0)
        o.capacity = a->capacity;
    if (live)
        o.progress = show_progress;
    tp_status st = tp_plan_offsets_ex(t->tensors, t->count, &o, offsets, arena, report);
    if (live)
        fputs("\r\033[K", stderr);
    if (plain)
        memset(report, 0, sizeof *report); /* the summary of tp_plan_offsets, as elsewhere */
    /* not fitting is reported by the summary and the exit code, with the plan written */
    return st == TP_ERR_INFEASIBLE ? TP_OK : st;
}

/* The planner names a refused tensor by its index ("tensor 3: ..."); a CSV user needs the
 * file's line and the buffer's id, like every other refusal of an input file. */
static void report_plan_failure(const char *path, const tp_csv_table *t, tp_status st,
                                size_t align)
{
    const char *msg = tp_last_error();
    size_t index = 0;
    int used = 0;
    if (sscanf(msg, "tensor %zu:%n", &index, &used) == 1 && used > 0 && index < t->count) {
        if (align > 1)
            tp_cli_error("--align %zu: the plan does not fit below 2^64 bytes at that "
                         "alignment (buffer '%s' of %s:%zu:%s); use a smaller one", align,
                         t->ids[index], path, t->lines[index], msg + used);
        else if (st == TP_ERR_OVERFLOW)
            tp_cli_error("%s:%zu: buffer '%s':%s: expected every offset + size to be at most %zu",
                         path, t->lines[index], t->ids[index], msg + used, (size_t)SIZE_MAX);
        else
            tp_cli_error("%s:%zu: buffer '%s':%s", path, t->lines[index], t->ids[index],
                         msg + used);
        return;
    }
    if (align > 1)
        tp_cli_error("--align %zu: the plan does not fit below 2^64 bytes at that alignment "
                     "(%s); use a smaller one", align, msg);
    else
        tp_cli_error("%s: %s", path, msg);
}

/* What the summary reports, in text or JSON (docs/json-output.md). */
typedef struct plan_summary {
    const plan_args *a;
    const tp_csv_table *t;
    size_t peak, arena;
    const tp_plan_report *report;
    double seconds;
} plan_summary;

static void print_text(FILE *out, const plan_summary *s)
{
    const plan_args *a = s->a;
    const tp_csv_table *t = s->t;
    const tp_plan_report *report = s->report;
    int fits = !a->has_capacity || s->arena <= a->capacity;
    fprintf(out, "problem   %s\n", a->problem);
    fprintf(out, "buffers   %zu\n", t->count);
    fprintf(out, "peak      %zu bytes\n", s->peak);
    if (s->peak > 0)
        fprintf(out, "arena     %zu bytes (arena/peak %.4f)\n", s->arena,
                (double)s->arena / (double)s->peak);
    else
        fprintf(out, "arena     %zu bytes\n", s->arena);
    if (!a->has_capacity)
        fprintf(out, "capacity  not given\n");
    else if (fits)
        fprintf(out, "capacity  %zu bytes: fits (%zu bytes spare)\n", a->capacity,
                a->capacity - s->arena);
    else
        fprintf(out, "capacity  %zu bytes: does NOT fit (%zu bytes over)\n", a->capacity,
                s->arena - a->capacity);
    if (report->method != NULL) {
        fprintf(out, "strategy  %s", report->method);
        if (a->has_capacity && report->proven_infeasible)
            fprintf(out, "; proven: no plan fits the capacity");
        else if (report->proven_optimal)
            fprintf(out, "; arena proven minimal");
        else if (a->has_capacity && fits)
            fprintf(out, "; fits the capacity");
        else if (a->strategy == TP_PLAN_EXACT)
            fprintf(out, "; not proven%s", report->timed_out ? " (time limit reached)" : "");
        if (report->nodes_explored > 0)
            fprintf(out, "; %llu search nodes", report->nodes_explored);
        fprintf(out, "\n");
    }
    fprintf(out, "plan time %.3f ms\n", s->seconds * 1e3);
    if (a->output)
        fprintf(out, "solution  %s\n", strcmp(a->output, "-") == 0 ? "(stdout)" : a->output);
}

static tp_status print_json(const plan_summary *s)
{
    const plan_args *a = s->a;
    const tp_plan_report *r = s->report;
    const int fits = !a->has_capacity || s->arena <= a->capacity;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return TP_ERR_NOMEM;
    cJSON_AddStringToObject(o, "command", "plan");
    cJSON_AddStringToObject(o, "problem", a->problem);
    cJSON_AddItemToObject(o, "buffers", tp_cli_json_size(s->t->count));
    cJSON_AddItemToObject(o, "peak", tp_cli_json_size(s->peak));
    cJSON_AddItemToObject(o, "arena", tp_cli_json_size(s->arena));
    if (s->peak > 0)
        cJSON_AddNumberToObject(o, "arena_per_peak", (double)s->arena / (double)s->peak);
    else
        cJSON_AddNullToObject(o, "arena_per_peak");
    cJSON_AddItemToObject(o, "capacity", a->has_capacity ? tp_cli_json_size(a->capacity) : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "fits", fits);
    if (!a->has_capacity)
        cJSON_AddNullToObject(o, "spare");
    else
        cJSON_AddItemToObject(o, "spare", fits ? tp_cli_json_size(a->capacity - s->arena) : tp_cli_json_size(0));
    if (!a->has_capacity)
        cJSON_AddNullToObject(o, "over");
    else
        cJSON_AddItemToObject(o, "over", fits ? tp_cli_json_size(0) : tp_cli_json_size(s->arena - a->capacity));
    if (r->method != NULL)
        cJSON_AddStringToObject(o, "method", r->method);
    else
        cJSON_AddNullToObject(o, "method");
    /* as the text's "strategy" line: only the options that report a method prove anything */
    cJSON_AddBoolToObject(o, "proven_optimal", r->method != NULL && r->proven_optimal);
    cJSON_AddBoolToObject(o, "proven_infeasible",
                          r->method != NULL && a->has_capacity && r->proven_infeasible);
    cJSON_AddBoolToObject(o, "timed_out", r->timed_out);
    cJSON_AddBoolToObject(o, "search_skipped", r->search_skipped);
    cJSON_AddItemToObject(o, "search_nodes", tp_cli_json_size((size_t)r->nodes_explored));
    cJSON_AddNumberToObject(o, "plan_ms", s->seconds * 1e3);
    if (a->output)
        cJSON_AddStringToObject(o, "solution", a->output);
    else
        cJSON_AddNullToObject(o, "solution");
    return tp_cli_json_print(o);
}

int tp_cmd_plan(int argc, char **argv)
{
    plan_args a;
    if (parse_args(argc, argv, &a) != 0)
        return TP_EXIT_USAGE;

    tp_csv_table t;
    tp_status st = tp_cli_csv_read(a.problem, 0, &t);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return tp_cli_exit_for(st);
    }
    size_t *offsets = malloc((t.count ? t.count : 1) * sizeof *offsets);
    if (!offsets) {
        tp_csv_free(&t);
        tp_cli_error("out of memory");
        return TP_EXIT_ERROR;
    }
    size_t arena = 0, peak = 0;
    tp_plan_report report;
    double t0 = tp_clock_seconds();
    st = run_planner(&a, &t, offsets, &arena, &report);
    double seconds = tp_clock_seconds() - t0;
    tp_plan_options gaps;
    tp_plan_options_init(&gaps);
    gaps.gaps = t.gaps;
    gaps.gap_count = t.gap_count;
    if (st == TP_OK)
        st = tp_peak_live_bytes_ex(t.tensors, t.count, &gaps, &peak);
    if (st != TP_OK) {
        /* an overflow under --align: the file is valid, the alignment asked for is what
         * makes the plan overflow: a bad command line */
        const int align = st == TP_ERR_OVERFLOW && a.align > 1;
        report_plan_failure(t.path, &t, st, align ? a.align : 1);
        free(offsets);
        tp_csv_free(&t);
        return align ? TP_EXIT_USAGE : tp_cli_exit_for(st);
    }

    int to_stdout = a.output && strcmp(a.output, "-") == 0;
    if (a.output) {
        st = to_stdout ? tp_csv_write_solution_stream(stdout, &t, offsets)
                       : tp_csv_write_solution(a.output, &t, offsets);
        if (st == TP_OK && to_stdout && fflush(stdout) != 0)
            st = TP_ERR_IO;
        if (st != TP_OK) {
            tp_cli_error("%s", tp_last_error());
            free(offsets);
            tp_csv_free(&t);
            return TP_EXIT_ERROR;
        }
    }

    const plan_summary sum = { &a, &t, peak, arena, &report, seconds };
    FILE *out = to_stdout ? stderr : stdout;
    if (a.json)
        st = print_json(&sum);
    else
        print_text(out, &sum);
    int fits = !a.has_capacity || arena <= a.capacity;
    if ((a.html || a.explain) &&
        tp_html_csv_report(a.html, a.explain && !a.json ? out : NULL, &t, offsets, arena,
                           peak) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        free(offsets);
        tp_csv_free(&t);
        return TP_EXIT_ERROR;
    }
    if (a.html && !a.json)
        fprintf(out, "picture   %s\n", a.html);
    free(offsets);
    tp_csv_free(&t);
    if (st != TP_OK) {
        tp_cli_error("out of memory");
        return TP_EXIT_ERROR;
    }
    return fits ? TP_EXIT_OK : TP_EXIT_NO_FIT;
}
