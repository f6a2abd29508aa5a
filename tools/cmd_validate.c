/* tensorplan validate: check any solution of a MiniMalloc CSV problem. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tensorplan/csv.h"
#include "tensorplan/planner.h"

#include <cjson/cJSON.h>

void tp_help_validate(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_VALIDATE, "PROBLEM.csv SOLUTION.csv");
    fputs(
        "\n"
        "Checks a solution of a static memory allocation problem, from tensorplan or from\n"
        "any other tool (MiniMalloc writes the same format):\n"
        "  - the same buffers: every id of the problem has exactly one row in the solution,\n"
        "    with the same lower, upper and size, and no other rows (any row order);\n"
        "  - every offset is >= 0, and a multiple of the row's alignment (column alignment)\n"
        "  - no two buffers live at a common time ([lower, upper) intersect) share a byte\n"
        "    ([offset, offset + size) intersect); with gaps in the problem (column gaps),\n"
        "    one of two buffers using bytes at a common time lies wholly above the other\n"
        "    there, the same one each time (MiniMalloc's rule);\n"
        "  - with --capacity, the height max(offset + size) is at most BYTES.\n"
        "The first violation is printed on one line, naming the buffers and their lines.\n"
        "\n"
        "PROBLEM.csv:  id,lower,upper,size         (see 'tensorplan help plan')\n"
        "SOLUTION.csv: id,lower,upper,size,offset\n"
        "Either file may be '-', standard input (not both).\n"
        "Columns in any order, named by the header; other columns are ignored.\n"
        "\n",
        out);
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_VALIDATE), 0);
    fputs(
        "\n"
        "exit codes:\n"
        "  0  the solution is valid (and fits the capacity, if one was given)\n"
        "  1  runtime failure: a file cannot be read, out of memory\n"
        "  2  bad command line\n"
        "  3  a file is malformed (one line on stderr: file, line, what was expected)\n"
        "  4  the solution is not valid, or exceeds --capacity\n"
        "\n"
        "example:\n"
        "  tensorplan plan tests/data/minimalloc/input.12.csv -o sol.csv\n"
        "  tensorplan validate tests/data/minimalloc/input.12.csv sol.csv --capacity 12\n",
        out);
}

typedef struct validate_args {
    const char *problem;
    const char *solution;
    int has_capacity;
    size_t capacity;
    int json;
} validate_args;

static int parse_args(int argc, char **argv, validate_args *a)
{
    tp_cli_args o;
    if (tp_cli_parse(TP_CMD_VALIDATE, argc, argv, &o) != 0)
        return -1;
    memset(a, 0, sizeof *a);
    a->problem = o.pos[0];
    a->solution = o.pos[1];
    a->has_capacity = tp_cli_given(&o, TP_OPT_CAPACITY);
    a->capacity = o.opt[TP_OPT_CAPACITY].size;
    a->json = tp_cli_given(&o, TP_OPT_JSON);
    if (!a->solution) {
        tp_cli_error("%s missing (usage: tensorplan validate PROBLEM.csv "
                     "SOLUTION.csv [--capacity BYTES])",
                     a->problem ? "SOLUTION.csv" : "PROBLEM.csv and SOLUTION.csv");
        return -1;
    }
    if (strcmp(a->problem, "-") == 0 && strcmp(a->solution, "-") == 0) {
        tp_cli_error("PROBLEM.csv and SOLUTION.csv cannot both be '-' (standard input)");
        return -1;
    }
    return 0;
}

static void print_text(const validate_args *a, const tp_csv_table *solution,
                       const tp_csv_check *check, size_t peak)
{
    printf("valid: %zu buffers, height %zu bytes, peak %zu bytes", solution->count,
           check->height, peak);
    if (peak > 0)
        printf(" (height/peak %.4f)", (double)check->height / (double)peak);
    if (a->has_capacity)
        printf(", fits capacity %zu", a->capacity);
    printf("\n");
}

static const char *const verdict_names[] = {
    "valid", "missing_row", "extra_row", "mismatch", "negative_offset", "offset_overflow",
    "overlap", "over_capacity", "misaligned",
};

/* docs/json-output.md: the fields of `validate --json`. The figures of an invalid solution are
 * those the checker could compute: peak only when valid, height when computable. */
static tp_status print_json(const validate_args *a, const tp_csv_table *solution,
                            const tp_csv_check *check, size_t peak)
{
    const int valid = check->verdict == TP_CSV_VALID;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return TP_ERR_NOMEM;
    cJSON_AddStringToObject(o, "command", "validate");
    cJSON_AddStringToObject(o, "problem", a->problem);
    cJSON_AddStringToObject(o, "solution", a->solution);
    cJSON_AddBoolToObject(o, "valid", valid);
    const size_t nv = sizeof verdict_names / sizeof *verdict_names;
    cJSON_AddStringToObject(o, "verdict", (size_t)check->verdict < nv
                                              ? verdict_names[check->verdict] : "invalid");
    cJSON_AddItemToObject(o, "buffers", tp_cli_json_size(solution->count));
    cJSON_AddItemToObject(o, "height", valid ? tp_cli_json_size(check->height) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "peak", valid ? tp_cli_json_size(peak) : cJSON_CreateNull());
    if (valid && peak > 0)
        cJSON_AddNumberToObject(o, "height_per_peak", (double)check->height / (double)peak);
    else
        cJSON_AddNullToObject(o, "height_per_peak");
    cJSON_AddItemToObject(o, "capacity", a->has_capacity ? tp_cli_json_size(a->capacity) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "message", valid ? cJSON_CreateNull() : cJSON_CreateString(check->message));
    return tp_cli_json_print(o);
}

int tp_cmd_validate(int argc, char **argv)
{
    validate_args a;
    if (parse_args(argc, argv, &a) != 0)
        return TP_EXIT_USAGE;

    tp_csv_table problem, solution;
    tp_status st = tp_cli_csv_read(a.problem, 0, &problem);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return tp_cli_exit_for(st);
    }
    st = tp_cli_csv_read(a.solution, TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS, &solution);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        tp_csv_free(&problem);
        return tp_cli_exit_for(st);
    }
    tp_csv_check check;
    size_t peak = 0;
    tp_plan_options gaps; /* the problem's gaps: each buffer counts its window */
    tp_plan_options_init(&gaps);
    gaps.gaps = problem.gaps;
    gaps.gap_count = problem.gap_count;
    st = tp_csv_check_solution(&problem, &solution, a.has_capacity, a.capacity, &check);
    if (st == TP_OK && check.verdict == TP_CSV_VALID)
        st = tp_peak_live_bytes_ex(problem.tensors, problem.count, &gaps, &peak);
    int code = TP_EXIT_OK;
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        code = tp_cli_exit_for(st);
    } else {
        if (check.verdict != TP_CSV_VALID)
            code = TP_EXIT_NO_FIT;
        if (a.json) {
            if (print_json(&a, &solution, &check, peak) != TP_OK) {
                tp_cli_error("out of memory");
                code = TP_EXIT_ERROR;
            }
        } else if (check.verdict != TP_CSV_VALID) {
            tp_cli_error("invalid: %s", check.message);
        } else {
            print_text(&a, &solution, &check, peak);
        }
    }
    tp_csv_free(&problem);
    tp_csv_free(&solution);
    return code;
}
