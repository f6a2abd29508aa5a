/* tensorplan validate: check any solution of a MiniMalloc CSV problem. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tensorplan/csv.h"
#include "tensorplan/planner.h"

void tp_help_validate(FILE *out)
{
    fputs(
        "usage: tensorplan validate PROBLEM.csv SOLUTION.csv [--capacity BYTES]\n"
        "\n"
        "Checks a solution of a static memory allocation problem, from tensorplan or from\n"
        "any other tool (MiniMalloc writes the same format):\n"
        "  - the same buffers: every id of the problem has exactly one row in the solution,\n"
        "    with the same lower, upper and size, and no other rows (any row order);\n"
        "  - every offset is >= 0;\n"
        "  - no two buffers live at a common time ([lower, upper) intersect) share a byte\n"
        "    ([offset, offset + size) intersect);\n"
        "  - with --capacity, the height max(offset + size) is at most BYTES.\n"
        "The first violation is printed on one line, naming the buffers and their lines.\n"
        "\n"
        "PROBLEM.csv:  id,lower,upper,size         (see 'tensorplan help plan')\n"
        "SOLUTION.csv: id,lower,upper,size,offset\n"
        "Columns in any order, named by the header; other columns are ignored.\n"
        "\n"
        "options:\n"
        "  --capacity BYTES  the bytes available\n"
        "  -h, --help        this text\n"
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
} validate_args;

static int parse_args(int argc, char **argv, validate_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *value;
        int r;
        if ((r = tp_cli_take_value(argc, argv, &i, "--capacity", NULL, &value)) != 0) {
            if (r < 0 || tp_cli_parse_size("--capacity", value, &a->capacity) != 0)
                return -1;
            a->has_capacity = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            tp_cli_error("unknown option '%s' (see 'tensorplan help validate')",
                         argv[i]);
            return -1;
        } else if (!a->problem) {
            a->problem = argv[i];
        } else if (!a->solution) {
            a->solution = argv[i];
        } else {
            tp_cli_error("two files expected, got '%s' too", argv[i]);
            return -1;
        }
    }
    if (!a->solution) {
        tp_cli_error("%s missing (usage: tensorplan validate PROBLEM.csv "
                     "SOLUTION.csv [--capacity BYTES])",
                     a->problem ? "SOLUTION.csv" : "PROBLEM.csv and SOLUTION.csv");
        return -1;
    }
    return 0;
}

int tp_cmd_validate(int argc, char **argv)
{
    validate_args a;
    if (parse_args(argc, argv, &a) != 0)
        return TP_EXIT_USAGE;

    tp_csv_table problem, solution;
    tp_status st = tp_csv_read(a.problem, 0, &problem);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return tp_cli_exit_for(st);
    }
    st = tp_csv_read(a.solution, TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS, &solution);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        tp_csv_free(&problem);
        return tp_cli_exit_for(st);
    }
    tp_csv_check check;
    size_t peak = 0;
    st = tp_csv_check_solution(&problem, &solution, a.has_capacity, a.capacity, &check);
    if (st == TP_OK && check.verdict == TP_CSV_VALID)
        st = tp_peak_live_bytes(problem.tensors, problem.count, &peak);
    int code = TP_EXIT_OK;
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        code = tp_cli_exit_for(st);
    } else if (check.verdict != TP_CSV_VALID) {
        tp_cli_error("invalid: %s", check.message);
        code = TP_EXIT_NO_FIT;
    } else {
        printf("valid: %zu buffers, height %zu bytes, peak %zu bytes", solution.count,
               check.height, peak);
        if (peak > 0)
            printf(" (height/peak %.4f)", (double)check.height / (double)peak);
        if (a.has_capacity)
            printf(", fits capacity %zu", a.capacity);
        printf("\n");
    }
    tp_csv_free(&problem);
    tp_csv_free(&solution);
    return code;
}
