/* MiniMalloc CSV as MiniMalloc reads it (docs/planner.md, "CSV"): its header spellings (an
 * `end` column is inclusive), the alignment and gaps columns, the checker refusing a
 * misaligned offset and applying the gaps rule, and `tensorplan plan` / `validate` on such
 * files. Expected values are worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "tensorplan/csv.h"

static tp_status parse(const char *text, unsigned flags, tp_csv_table *t)
{
    return tp_csv_parse("t.csv", text, strlen(text), flags, t);
}

static void test_minimalloc_header_spellings(void **state)
{
    (void)state;
    tp_csv_table t;
    /* end is the last step, inclusive: [start, end + 1); hint is ignored */
    assert_int_equal(parse("buffer,start,end,size,hint\nx,2,5,7,-1\n", 0, &t), TP_OK);
    assert_string_equal(t.ids[0], "x");
    assert_int_equal(t.tensors[0].first_use, 2);
    assert_int_equal(t.tensors[0].last_use, 5);
    assert_int_equal(t.tensors[0].size, 7);
    assert_null(t.alignments);
    assert_int_equal(t.gap_count, 0);
    tp_csv_free(&t);
    assert_int_equal(parse("buffer_id,begin,upper,size\ny,2,5,7\n", 0, &t), TP_OK);
    assert_string_equal(t.ids[0], "y");
    assert_int_equal(t.tensors[0].first_use, 2);
    assert_int_equal(t.tensors[0].last_use, 4); /* upper stays half-open */
    tp_csv_free(&t);
    /* an end equal to the start is a one-step lifetime */
    assert_int_equal(parse("id,start,end,size\nz,3,3,1\n", 0, &t), TP_OK);
    assert_int_equal(t.tensors[0].last_use, 3);
    tp_csv_free(&t);
    /* two spellings of one column */
    assert_int_equal(parse("id,buffer,lower,upper,size\na,b,0,1,1\n", 0, &t), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "twice"));
    assert_int_equal(parse("id,start,lower,upper,size\na,0,0,1,1\n", 0, &t), TP_ERR_INVALID);
}

static void test_alignment_column(void **state)
{
    (void)state;
    tp_csv_table t;
    assert_int_equal(parse("id,lower,upper,size,alignment\na,0,2,6,1\nb,0,2,4,8\n", 0, &t), TP_OK);
    assert_non_null(t.alignments);
    assert_int_equal(t.alignments[0], 1);
    assert_int_equal(t.alignments[1], 8);
    tp_csv_free(&t);
    assert_int_equal(parse("id,lower,upper,size,alignment\na,0,2,6,0\n", 0, &t), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "t.csv:2: column 'alignment'"));
    assert_int_equal(parse("id,lower,upper,size,alignment\na,0,2,6,x\n", 0, &t), TP_ERR_INVALID);
}

static void test_gaps_column(void **state)
{
    (void)state;
    tp_csv_table t;
    assert_int_equal(parse("id,lower,upper,size,gaps\na,0,10,8,2-4  6-9@1:5\nb,0,3,1,\n", 0, &t),
                     TP_OK);
    assert_int_equal(t.gap_count, 2);
    /* [2, 4) is nodes 2..3; [6, 9) nodes 6..8 with bytes [1, 5) */
    const tp_tensor_gap want[] = { { 0, 2, 3, 0, 0, 0 }, { 0, 6, 8, 1, 1, 5 } };
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(t.gaps[k].tensor, want[k].tensor);
        assert_int_equal(t.gaps[k].first, want[k].first);
        assert_int_equal(t.gaps[k].last, want[k].last);
        assert_int_equal(t.gaps[k].has_window, want[k].has_window);
        if (want[k].has_window) {
            assert_int_equal(t.gaps[k].window_lo, want[k].window_lo);
            assert_int_equal(t.gaps[k].window_hi, want[k].window_hi);
        }
    }
    tp_csv_free(&t);
    /* with `end`, a gap's end is inclusive as well: 2-4 is nodes 2..4 */
    assert_int_equal(parse("id,start,end,size,gaps\na,0,9,8,2-4\n", 0, &t), TP_OK);
    assert_int_equal(t.gaps[0].first, 2);
    assert_int_equal(t.gaps[0].last, 4);
    tp_csv_free(&t);
    const char *bad[] = {
        "id,lower,upper,size,gaps\na,0,10,8,2\n",        /* no hi */
        "id,lower,upper,size,gaps\na,0,10,8,4-2\n",      /* lo >= hi */
        "id,lower,upper,size,gaps\na,0,10,8,3-3\n",      /* empty */
        "id,lower,upper,size,gaps\na,2,10,8,1-3\n",      /* before the lifetime */
        "id,lower,upper,size,gaps\na,0,10,8,5-11\n",     /* after it */
        "id,lower,upper,size,gaps\na,0,10,8,2-4@1:9\n",  /* window beyond the size */
        "id,lower,upper,size,gaps\na,0,10,8,2-4@5:1\n",  /* w0 > w1 */
        "id,lower,upper,size,gaps\na,0,10,8,2-4@1\n",    /* no w1 */
        "id,lower,upper,size,gaps\na,0,10,8,2-4x\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(parse(bad[i], 0, &t), TP_ERR_INVALID);
        assert_non_null(strstr(tp_last_error(), "t.csv:2: column 'gaps'"));
    }
}

static tp_csv_verdict check(const char *problem, const char *solution, tp_csv_check *c)
{
    tp_csv_table p, s;
    assert_int_equal(parse(problem, 0, &p), TP_OK);
    assert_int_equal(tp_csv_parse("s.csv", solution, strlen(solution),
                                  TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS, &s), TP_OK);
    assert_int_equal(tp_csv_check_solution(&p, &s, 0, 0, c), TP_OK);
    tp_csv_free(&p);
    tp_csv_free(&s);
    return c->verdict;
}

static void test_checker_alignment(void **state)
{
    (void)state;
    tp_csv_check c;
    const char *problem = "id,lower,upper,size,alignment\na,0,2,6,1\nb,0,2,4,8\n";
    /* the case: b at 6 is disjoint from a but not a multiple of 8 */
    assert_int_equal(check(problem, "id,lower,upper,size,offset\na,0,2,6,0\nb,0,2,4,6\n", &c),
                     TP_CSV_MISALIGNED);
    assert_int_equal(c.a, 1);
    assert_non_null(strstr(c.message, "s.csv:3: buffer 'b' has offset 6"));
    assert_int_equal(check(problem, "id,lower,upper,size,offset\na,0,2,6,0\nb,0,2,4,8\n", &c),
                     TP_CSV_VALID);
    assert_int_equal(check(problem, "id,lower,upper,size,offset\nb,0,2,4,0\na,0,2,6,4\n", &c),
                     TP_CSV_VALID);
    /* the solution's own alignment column is checked too */
    assert_int_equal(check("id,lower,upper,size\na,0,2,6\n",
                           "id,lower,upper,size,alignment,offset\na,0,2,6,4,2\n", &c),
                     TP_CSV_MISALIGNED);
}

static void test_checker_gaps(void **state)
{
    (void)state;
    tp_csv_check c;
    /* a: 10 bytes over [0, 10), only bytes [0, 4) during [5, 10); b: 6 bytes over [5, 10).
     * b above a needs ob >= oa + 4, a above b needs oa >= ob + 6. */
    const char *problem = "id,lower,upper,size,gaps\na,0,10,10,5-10@0:4\nb,5,10,6,\n";
    const char *h = "id,lower,upper,size,offset\n";
    char sol[256];
    const size_t ob[] = { 3, 4, 10 };
    const tp_csv_verdict want[] = { TP_CSV_OVERLAP, TP_CSV_VALID, TP_CSV_VALID };
    for (int k = 0; k < 3; k++) {
        snprintf(sol, sizeof sol, "%sa,0,10,10,0\nb,5,10,6,%zu\n", h, ob[k]);
        assert_int_equal(check(problem, sol, &c), want[k]);
    }
    /* a above b: oa = 6 >= 0 + 6 */
    snprintf(sol, sizeof sol, "%sa,0,10,10,6\nb,5,10,6,0\n", h);
    assert_int_equal(check(problem, sol, &c), TP_CSV_VALID);
    snprintf(sol, sizeof sol, "%sa,0,10,10,5\nb,5,10,6,0\n", h);
    assert_int_equal(check(problem, sol, &c), TP_CSV_OVERLAP);
    /* a gap without a window: a needs nothing during [5, 10), b may sit on it */
    snprintf(sol, sizeof sol, "%sa,0,10,10,0\nb,5,10,6,0\n", h);
    assert_int_equal(check("id,lower,upper,size,gaps\na,0,10,10,5-10\nb,5,10,6,\n", sol, &c),
                     TP_CSV_VALID);
    assert_int_equal(check("id,lower,upper,size,gaps\na,0,10,10,6-10\nb,5,10,6,\n", sol, &c),
                     TP_CSV_OVERLAP); /* both in use at step 5 */
}

/* ---- the command line ---- */

static int run(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_cli_plans_and_checks_alignment_and_gaps(void **state)
{
    (void)state;
    char out[4096], cmd[1024];
    /* greedy by size: a at 0, b at the first multiple of 8 above a (8); exact: b 0, a 4 */
    snprintf(cmd, sizeof cmd, "printf 'buffer,start,end,size,alignment\\na,0,1,6,1\\nb,0,1,4,8\\n' | "
             "%s plan - -o - 2>/dev/null", TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_string_equal(out, "id,lower,upper,size,offset\na,0,2,6,0\nb,0,2,4,8\n");
    snprintf(cmd, sizeof cmd, "printf 'buffer,start,end,size,alignment\\na,0,1,6,1\\nb,0,1,4,8\\n' | "
             "%s plan - -o - --strategy exact 2>/dev/null", TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_string_equal(out, "id,lower,upper,size,offset\na,0,2,6,4\nb,0,2,4,0\n");
    /* the portfolio honours it as well */
    snprintf(cmd, sizeof cmd, "printf 'id,lower,upper,size,alignment\\na,0,2,6,1\\nb,0,2,4,8\\n' | "
             "%s plan - -o - --strategy portfolio 2>/dev/null", TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "b,0,2,4,8\n"));
    /* validate refuses b at 6 (exit 4) */
    snprintf(cmd, sizeof cmd, "printf 'id,lower,upper,size,offset\\na,0,2,6,0\\nb,0,2,4,6\\n' > "
             "/tmp/tp_mm_sol.csv && printf 'id,lower,upper,size,alignment\\na,0,2,6,1\\nb,0,2,4,8\\n' | "
             "%s validate - /tmp/tp_mm_sol.csv 2>&1; s=$?; rm -f /tmp/tp_mm_sol.csv; exit $s",
             TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 4);
    assert_non_null(strstr(out, "invalid: /tmp/tp_mm_sol.csv:3: buffer 'b' has offset 6"));
    /* gaps: a at 0, b on a's window [0, 4) during [5, 10): at 4; arena 10 = peak 4 + 6 */
    snprintf(cmd, sizeof cmd, "printf 'id,lower,upper,size,gaps\\na,0,10,10,5-10@0:4\\nb,5,10,6,\\n' | "
             "%s plan - -o - 2>&1", TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "a,0,10,10,0\nb,5,10,6,4\n"));
    assert_non_null(strstr(out, "peak      10 bytes\n"));
    assert_non_null(strstr(out, "arena     10 bytes"));
    /* overlapping gaps of one buffer are refused with its line */
    snprintf(cmd, sizeof cmd, "printf 'id,lower,upper,size,gaps\\na,0,10,10,5-8 7-9\\n' | "
             "%s plan - 2>&1", TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 3);
    assert_non_null(strstr(out, "(stdin):2: buffer 'a': gaps overlap"));
}

/* The exact search with gaps from a CSV file. A triangle: a (steps 0..1), b (1..2) and c
 * (0..2, no window at step 1), 2 bytes each: every pair is in use together at some step, so
 * the least arena is 6 while the peak is 4, and only the search proves it. With a pair whose
 * A and B differ in sign added (x and y meet at step 6 only, with windows [1, 2) and [0, 1):
 * A = 2, B = 0, so y may not sit 1 above x), the search over the pairs' alternatives runs and
 * proves the same arena. */
static void test_cli_exact_search_with_gaps(void **state)
{
    (void)state;
    char out[4096], cmd[1024];
    const char *tri = "id,lower,upper,size,gaps\\na,0,2,2,\\nb,1,3,2,\\nc,0,3,2,1-2\\n";
    snprintf(cmd, sizeof cmd, "printf '%s' | %s plan - -o - --planner exact 2>&1", tri,
             TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "peak      4 bytes\n"));
    assert_non_null(strstr(out, "arena     6 bytes"));
    assert_non_null(strstr(out, "; arena proven minimal; "));
    assert_non_null(strstr(out, " search nodes\n"));
    size_t o[3];
    const char *rows = strstr(out, "a,0,2,2,");
    assert_non_null(rows);
    assert_int_equal(sscanf(rows, "a,0,2,2,%zu\nb,1,3,2,%zu\nc,0,3,2,%zu", &o[0], &o[1], &o[2]),
                     3);
    /* pairwise 2 apart, all within 6 bytes: a permutation of 0, 2, 4 */
    assert_true(o[0] + o[1] + o[2] == 6 && o[0] % 2 == 0 && o[1] % 2 == 0 && o[2] % 2 == 0);
    assert_true(o[0] != o[1] && o[1] != o[2] && o[0] != o[2]);
    snprintf(cmd, sizeof cmd, "printf '%sx,5,7,2,6-7@1:2\\ny,6,8,2,6-7@0:1\\n' | "
             "%s plan - --planner exact 2>&1", tri, TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "arena     6 bytes"));
    /* x and y meet with one of A, B <= 0: searched over the pairs' alternatives */
    assert_non_null(strstr(out, "; arena proven minimal"));
    snprintf(cmd, sizeof cmd, "printf '%sx,5,7,2,6-7@1:2\\ny,6,8,2,6-7@0:1\\n' | "
             "%s plan - --planner exact --json 2>&1", tri, TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"search_skipped\":false,"));
    assert_non_null(strstr(out, "\"proven_optimal\":true,"));
    snprintf(cmd, sizeof cmd, "printf '%s' | %s plan - --planner exact --json 2>&1", tri,
             TP_CLI_PATH);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"proven_optimal\":true,"));
    assert_non_null(strstr(out, "\"search_skipped\":false,"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimalloc_header_spellings),
        cmocka_unit_test(test_alignment_column),
        cmocka_unit_test(test_gaps_column),
        cmocka_unit_test(test_checker_alignment),
        cmocka_unit_test(test_checker_gaps),
        cmocka_unit_test(test_cli_plans_and_checks_alignment_and_gaps),
        cmocka_unit_test(test_cli_exact_search_with_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
