/* `tensorplan plan` and `tensorplan validate`, run as a user would: the built binary on files.
 * Solutions are checked by a pairwise overlap oracle and a brute-force peak written here, on
 * rows read by a reader of this file's own, not the library's. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#ifndef TP_CLI_PATH
#error "TP_CLI_PATH must name the built tensorplan binary"
#endif

enum { EXIT_OK = 0, EXIT_USAGE = 2, EXIT_BAD_INPUT = 3, EXIT_NO_FIT = 4 };

typedef struct buf {
    char id[64];
    size_t lower, upper, size, offset;
} buf;

typedef struct sheet {
    buf *rows;
    size_t n;
} sheet;

static char tmpdir[256];

static void path_in_tmp(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", tmpdir, name);
}

/* The plain files of tests/data and of our own output: header, then id,lower,upper,size[,offset]. */
static sheet read_sheet(const char *path, int with_offset)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    sheet s = {NULL, 0};
    size_t cap = 0;
    char line[512];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, with_offset ? "id,lower,upper,size,offset\n" : "id,lower,upper,size\n");
    while (fgets(line, sizeof line, f)) {
        if (s.n == cap) {
            cap = cap ? 2 * cap : 64;
            s.rows = realloc(s.rows, cap * sizeof *s.rows);
            assert_non_null(s.rows);
        }
        buf *b = &s.rows[s.n];
        b->offset = 0;
        int want = with_offset ? 5 : 4;
        int got = sscanf(line, "%63[^,],%zu,%zu,%zu,%zu", b->id, &b->lower, &b->upper, &b->size,
                         &b->offset);
        if (got != want)
            fail_msg("%s: cannot read line '%s'", path, line);
        s.n++;
    }
    fclose(f);
    return s;
}

static void write_sheet(const char *path, const sheet *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("id,lower,upper,size,offset\n", f);
    for (size_t i = 0; i < s->n; i++)
        fprintf(f, "%s,%zu,%zu,%zu,%zu\n", s->rows[i].id, s->rows[i].lower, s->rows[i].upper,
                s->rows[i].size, s->rows[i].offset);
    fclose(f);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static int live_together(const buf *a, const buf *b)
{
    return a->lower < b->upper && b->lower < a->upper; /* half-open lifetimes */
}

static int share_a_byte(const buf *a, const buf *b)
{
    return a->size && b->size && a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

static int conflict(const buf *a, const buf *b)
{
    return live_together(a, b) && share_a_byte(a, b);
}

static size_t brute_peak(const sheet *s)
{
    size_t best = 0;
    for (size_t i = 0; i < s->n; i++) { /* the peak is reached where some buffer starts */
        size_t sum = 0;
        for (size_t j = 0; j < s->n; j++)
            if (s->rows[j].lower <= s->rows[i].lower && s->rows[i].lower < s->rows[j].upper)
                sum += s->rows[j].size;
        if (sum > best)
            best = sum;
    }
    return best;
}

static size_t height(const sheet *s)
{
    size_t h = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->rows[i].size && s->rows[i].offset + s->rows[i].size > h)
            h = s->rows[i].offset + s->rows[i].size;
    return h;
}

/* Runs the CLI with ARGS (already shell-quoted); returns its exit code, stdout and stderr. */
static int run_cli(char *out, size_t out_cap, char *err, size_t err_cap, const char *fmt, ...)
{
    char args[2048], cmd[4096], out_path[300], err_path[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    path_in_tmp(out_path, sizeof out_path, "stdout.txt");
    path_in_tmp(err_path, sizeof err_path, "stderr.txt");
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", TP_CLI_PATH, args, out_path, err_path);
    int status = system(cmd);
    assert_true(status != -1 && WIFEXITED(status));
    const char *paths[2] = {out_path, err_path};
    char *bufs[2] = {out, err};
    size_t caps[2] = {out_cap, err_cap};
    for (int k = 0; k < 2; k++) {
        if (!bufs[k])
            continue;
        FILE *f = fopen(paths[k], "r");
        assert_non_null(f);
        size_t got = fread(bufs[k], 1, caps[k] - 1, f);
        bufs[k][got] = '\0';
        fclose(f);
    }
    return WEXITSTATUS(status);
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void test_plan_solves_every_minimalloc_file(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/minimalloc", TP_TEST_DATA);
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t files = 0;
    struct dirent *e;
    static char out[8192], err[8192];
    char sol[300];
    path_in_tmp(sol, sizeof sol, "solution.csv");
    while ((e = readdir(d)) != NULL) {
        if (!has_suffix(e->d_name, ".csv"))
            continue;
        char problem[800];
        snprintf(problem, sizeof problem, "%s/%s", dir, e->d_name);
        int rc = run_cli(out, sizeof out, err, sizeof err, "plan '%s' -o '%s'", problem, sol);
        if (rc != EXIT_OK)
            fail_msg("plan %s: exit %d, stderr: %s", problem, rc, err);
        rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s'", problem, sol);
        if (rc != EXIT_OK)
            fail_msg("validate %s: exit %d, stderr: %s", problem, rc, err);

        sheet p = read_sheet(problem, 0), s = read_sheet(sol, 1);
        assert_int_equal(s.n, p.n);
        for (size_t i = 0; i < p.n; i++) { /* input columns, same row order */
            assert_string_equal(s.rows[i].id, p.rows[i].id);
            assert_int_equal(s.rows[i].lower, p.rows[i].lower);
            assert_int_equal(s.rows[i].upper, p.rows[i].upper);
            assert_int_equal(s.rows[i].size, p.rows[i].size);
        }
        for (size_t i = 0; i < s.n; i++)
            for (size_t j = i + 1; j < s.n; j++)
                if (conflict(&s.rows[i], &s.rows[j]))
                    fail_msg("%s: rows %s and %s overlap", problem, s.rows[i].id, s.rows[j].id);

        /* the summary reports the oracle's peak and height, and the capacity decides the exit */
        size_t peak = brute_peak(&p), arena = height(&s);
        char want[128];
        rc = run_cli(out, sizeof out, err, sizeof err, "plan '%s' --capacity %zu", problem, arena);
        assert_int_equal(rc, EXIT_OK);
        snprintf(want, sizeof want, "peak      %zu bytes\n", peak);
        if (!strstr(out, want))
            fail_msg("%s: summary lacks '%s':\n%s", problem, want, out);
        snprintf(want, sizeof want, "arena     %zu bytes", arena);
        assert_non_null(strstr(out, want));
        assert_non_null(strstr(out, ": fits"));
        rc = run_cli(out, sizeof out, err, sizeof err, "plan '%s' --capacity=%zu", problem,
                     arena - 1);
        assert_int_equal(rc, EXIT_NO_FIT);
        assert_non_null(strstr(out, "does NOT fit"));
        rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s' --capacity %zu",
                     problem, sol, arena);
        assert_int_equal(rc, EXIT_OK);
        rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s' --capacity %zu",
                     problem, sol, arena - 1);
        assert_int_equal(rc, EXIT_NO_FIT);
        assert_int_equal(count_lines(err), 1);
        free(p.rows);
        free(s.rows);
        files++;
    }
    closedir(d);
    assert_int_equal(files, 12); /* 11 challenging problems and input.12.csv */
    unlink(sol);
}

/* The problem and our solution of one file, for the corruption tests. */
static void plan_file(const char *name, char *problem, size_t pcap, char *sol, size_t scap,
                      sheet *s)
{
    snprintf(problem, pcap, "%s/minimalloc/%s", TP_TEST_DATA, name);
    path_in_tmp(sol, scap, "good.csv");
    int rc = run_cli(NULL, 0, NULL, 0, "plan '%s' -o '%s'", problem, sol);
    assert_int_equal(rc, EXIT_OK);
    *s = read_sheet(sol, 1);
}

static void test_validate_rejects_overlapping_buffers(void **state)
{
    (void)state;
    char problem[512], sol[300], bad[300];
    sheet s;
    plan_file("B.1048576.csv", problem, sizeof problem, sol, sizeof sol, &s);
    path_in_tmp(bad, sizeof bad, "overlap.csv");
    /* move one buffer onto another that is live at the same time */
    size_t a = SIZE_MAX, b = SIZE_MAX;
    for (size_t i = 0; i < s.n && a == SIZE_MAX; i++)
        for (size_t j = i + 1; j < s.n; j++)
            if (s.rows[i].size && s.rows[j].size && live_together(&s.rows[i], &s.rows[j])) {
                a = i;
                b = j;
                break;
            }
    assert_true(a != SIZE_MAX);
    s.rows[b].offset = s.rows[a].offset;
    write_sheet(bad, &s);
    static char out[4096], err[4096];
    int rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s'", problem, bad);
    assert_int_equal(rc, EXIT_NO_FIT);
    assert_int_equal(count_lines(err), 1);
    /* the pair it names really conflicts, and the lines given are the rows' lines */
    char x[64], y[64];
    size_t lx, ly;
    const char *at = strstr(err, "buffers '");
    assert_non_null(at);
    assert_int_equal(sscanf(at, "buffers '%63[^']' (line %zu) and '%63[^']' (line %zu) overlap", x,
                            &lx, y, &ly),
                     4);
    assert_true(lx >= 2 && lx - 2 < s.n && ly >= 2 && ly - 2 < s.n);
    assert_string_equal(s.rows[lx - 2].id, x);
    assert_string_equal(s.rows[ly - 2].id, y);
    assert_true(conflict(&s.rows[lx - 2], &s.rows[ly - 2]));
    free(s.rows);
    unlink(bad);
    unlink(sol);
}

static void test_validate_rejects_missing_row_negative_offset_and_changed_size(void **state)
{
    (void)state;
    char problem[512], sol[300], bad[300];
    static char out[4096], err[4096];
    sheet s;
    plan_file("input.12.csv", problem, sizeof problem, sol, sizeof sol, &s);
    path_in_tmp(bad, sizeof bad, "corrupt.csv");

    sheet missing = {s.rows + 1, s.n - 1}; /* drop the first row */
    write_sheet(bad, &missing);
    int rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s'", problem, bad);
    assert_int_equal(rc, EXIT_NO_FIT);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "'b1' has no row"));

    write_sheet(bad, &s);
    FILE *f = fopen(bad, "a"); /* and a row the problem does not have */
    fputs("zz,0,1,1,100\n", f);
    fclose(f);
    rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s'", problem, bad);
    assert_int_equal(rc, EXIT_NO_FIT);
    assert_non_null(strstr(err, "'zz'"));

    write_sheet(bad, &s);
    /* a negative offset is an invalid solution, not a malformed file */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sed -i 's/^b4,9,21,4,[0-9]*$/b4,9,21,4,-4/' '%s'", bad);
    assert_int_equal(system(cmd), 0);
    rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s'", problem, bad);
    assert_int_equal(rc, EXIT_NO_FIT);
    assert_non_null(strstr(err, ":5: buffer 'b4' has offset -4"));

    s.rows[3].size = 5;
    write_sheet(bad, &s);
    rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s'", problem, bad);
    assert_int_equal(rc, EXIT_NO_FIT);
    assert_non_null(strstr(err, "'b4'"));
    assert_non_null(strstr(err, "size 5"));

    free(s.rows);
    unlink(bad);
    unlink(sol);
}

static void test_bad_input_gets_one_line_and_no_output(void **state)
{
    (void)state;
    char problem[300], sol[300];
    static char out[4096], err[4096];
    path_in_tmp(problem, sizeof problem, "bad problem.csv");
    path_in_tmp(sol, sizeof sol, "never.csv");
    write_text(problem, "id,lower,upper,size\nb1,0,3,4\nb2,3,9,four\n");
    int rc = run_cli(out, sizeof out, err, sizeof err, "plan '%s' -o '%s'", problem, sol);
    assert_int_equal(rc, EXIT_BAD_INPUT);
    assert_int_equal(count_lines(err), 1);
    char want[400];
    snprintf(want, sizeof want, "%s:3: ", problem);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "expected"));
    struct stat st;
    assert_int_not_equal(stat(sol, &st), 0); /* nothing written */

    rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s'", problem, problem);
    assert_int_equal(rc, EXIT_BAD_INPUT);
    assert_int_equal(count_lines(err), 1);
    unlink(problem);
}

static void test_usage_errors_and_help(void **state)
{
    (void)state;
    static char out[8192], err[4096];
    char problem[512];
    snprintf(problem, sizeof problem, "%s/minimalloc/input.12.csv", TP_TEST_DATA);
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "plan '%s' --bogus", problem),
                     EXIT_USAGE);
    assert_int_equal(count_lines(err), 1);
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "plan '%s' --capacity 12x", problem),
                     EXIT_USAGE);
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "plan '%s' --capacity", problem),
                     EXIT_USAGE);
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "plan"), EXIT_USAGE);
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "validate '%s'", problem),
                     EXIT_USAGE);
    const char *forms[] = {"help plan", "plan --help", "help validate", "validate -h"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "%s", forms[i]), EXIT_OK);
        assert_non_null(strstr(out, "usage: tensorplan"));
        assert_non_null(strstr(out, "exit codes"));
        assert_non_null(strstr(out, "example"));
    }
}

static void test_solution_to_stdout(void **state)
{
    (void)state;
    static char out[8192], err[4096];
    char problem[512];
    snprintf(problem, sizeof problem, "%s/minimalloc/input.12.csv", TP_TEST_DATA);
    int rc = run_cli(out, sizeof out, err, sizeof err, "plan '%s' -o - --capacity 12", problem);
    assert_int_equal(rc, EXIT_OK);
    assert_true(strncmp(out, "id,lower,upper,size,offset\n", 27) == 0);
    assert_int_equal(count_lines(out), 6);
    assert_non_null(strstr(err, "buffers   5")); /* the summary moved to stderr */
}

/* Every accepted oddity of the CSV format, through both commands: planned, written, and the
 * solution read back by this file's reader matches a plain planning of the same rows. */
static void test_every_accepted_oddity_through_the_cli(void **state)
{
    (void)state;
    static const struct {
        const char *name, *text;
    } odd[] = {
        {"crlf", "id,lower,upper,size\r\nb1,0,3,4\r\nb2,1,2,8\r\n"},
        {"bom", "\xEF\xBB\xBFid,lower,upper,size\nb1,0,3,4\nb2,1,2,8\n"},
        {"trailing blank lines", "id,lower,upper,size\nb1,0,3,4\nb2,1,2,8\n\n \r\n"},
        {"spaces around fields", "id , lower,upper ,size\n b1 ,\t0, 3 ,4 \nb2,1 ,2,  8\n"},
        {"all at once", "\xEF\xBB\xBFid ,lower,upper,size\r\n b1, 0,3 ,4\r\nb2 ,1,2, 8 \r\n\r\n"},
    };
    static char out[4096], err[4096];
    char problem[300], sol[300];
    path_in_tmp(problem, sizeof problem, "odd.csv");
    path_in_tmp(sol, sizeof sol, "odd.sol.csv");
    for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
        write_text(problem, odd[k].text);
        int rc = run_cli(out, sizeof out, err, sizeof err, "plan '%s' -o '%s' --capacity 12",
                         problem, sol);
        if (rc != EXIT_OK)
            fail_msg("%s: plan exit %d: %s", odd[k].name, rc, err);
        /* b1 [0,3) 4 bytes and b2 [1,2) 8 bytes are live together: 12 bytes, no gap */
        assert_non_null(strstr(out, "buffers   2\n"));
        assert_non_null(strstr(out, "peak      12 bytes\n"));
        sheet s = read_sheet(sol, 1);
        assert_int_equal(s.n, 2);
        assert_string_equal(s.rows[0].id, "b1");
        assert_string_equal(s.rows[1].id, "b2");
        assert_int_equal(s.rows[0].upper, 3);
        assert_int_equal(s.rows[1].size, 8);
        assert_false(conflict(&s.rows[0], &s.rows[1]));
        assert_int_equal(height(&s), 12);
        free(s.rows);
        rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s' --capacity 12",
                     problem, sol);
        if (rc != EXIT_OK)
            fail_msg("%s: validate exit %d: %s", odd[k].name, rc, err);
        /* the same oddities in a solution file */
        write_text(sol, odd[k].text);
        char cmd[700];
        snprintf(cmd, sizeof cmd,
                 "sed -i -e '1s/size/size,offset/' -e '2s/4/4,8/' -e '3s/8/8,0/' '%s'", sol);
        assert_int_equal(system(cmd), 0);
        rc = run_cli(out, sizeof out, err, sizeof err, "validate '%s' '%s'", problem, sol);
        if (rc != EXIT_OK)
            fail_msg("%s: validate of an odd solution exit %d: %s", odd[k].name, rc, err);
        unlink(sol);
    }
    unlink(problem);
}

static size_t files_in_tmp(void)
{
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The same file as a solution: an offset column in front of every non-blank line, so that
 * each refusal stays on its line (a leading byte-order mark stays first). */
static void as_solution(const char *text, char *outbuf, size_t cap)
{
    size_t j = 0;
    int first = 1;
    if (strncmp(text, "\xEF\xBB\xBF", 3) == 0) {
        memcpy(outbuf, text, 3);
        j = 3;
        text += 3;
    }
    while (*text && j + 16 < cap) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) + 1 : strlen(text);
        if (strspn(text, " \t\r\n") < len) {
            j += (size_t)snprintf(outbuf + j, cap - j, "%s", first ? "offset," : "0,");
            first = 0;
        }
        assert_true(j + len < cap);
        memcpy(outbuf + j, text, len);
        j += len;
        text += len;
    }
    outbuf[j] = '\0';
}

/* Every refusal of the CSV format, through both commands: exit 3, one line on stderr that
 * starts with "tensorplan: COMMAND: FILE:LINE: " and says what was expected, nothing on
 * stdout, and no solution (nor temporary file) written. */
static void test_every_refusal_through_the_cli(void **state)
{
    (void)state;
    static const struct {
        const char *name, *text;
        size_t line;
        const char *what;
    } bad[] = {
        {"missing column", "id,lower,size\nb1,0,4\n", 1, "no column 'upper'"},
        {"short row", "id,lower,upper,size\nb1,0,3,4\nb2,1,2\n", 3, "short row"},
        {"long row", "id,lower,upper,size\nb1,0,3,4,9\n", 2, "long row"},
        {"lower = upper", "id,lower,upper,size\nb1,0,3,4\nb2,5,5,1\n", 3, "lower < upper"},
        {"lower > upper", "id,lower,upper,size\nb1,6,3,4\n", 2, "lower < upper"},
        {"negative", "id,lower,upper,size\nb1,0,3,-4\n", 2, "non-negative integer"},
        {"non-numeric", "id,lower,upper,size\nb1,0,three,4\n", 2, "non-negative integer"},
        {"fraction", "id,lower,upper,size\nb1,0,3,4.5\n", 2, "non-negative integer"},
        {"out of range", "id,lower,upper,size\nb1,0,3,18446744073709551616\n", 2, "out of range"},
        {"duplicate id", "id,lower,upper,size\nb1,0,3,4\nb2,0,3,4\nb1,4,5,1\n", 4,
         "duplicate id 'b1'"},
        {"unbalanced quote", "id,lower,upper,size\nb1,0,3,4\n\"b2,0,3,4\n", 3, "unbalanced quote"},
        {"empty file", "", 1, "empty file"},
        {"only blank lines", "\r\n\n", 1, "empty file"},
        {"crlf and a bom do not hide a bad row",
         "\xEF\xBB\xBFid,lower,upper,size\r\nb1,0,x,4\r\n", 2, "non-negative integer"},
    };
    static char out[4096], err[4096];
    char problem[300], sol[300], good[300], want[400];
    path_in_tmp(problem, sizeof problem, "refused.csv");
    path_in_tmp(sol, sizeof sol, "refused.sol.csv");
    path_in_tmp(good, sizeof good, "good.csv");
    write_text(good, "id,lower,upper,size,offset\nb1,0,3,4,0\n");
    write_text(problem, ""); /* counted in the files present before each case */
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const size_t before = files_in_tmp();

        for (int form = 0; form < 3; form++) {
            /* the bad file as the problem of plan, as the problem of validate (its solution
             * is a good file), and made a solution, as the solution of validate */
            char text[512];
            if (form < 2)
                snprintf(text, sizeof text, "%s", bad[k].text);
            else
                as_solution(bad[k].text, text, sizeof text);
            write_text(problem, text);
            snprintf(want, sizeof want, "tensorplan: %s: %s:%zu: ",
                     form == 0 ? "plan" : "validate", problem, bad[k].line);
            int rc = form == 0   ? run_cli(out, sizeof out, err, sizeof err, "plan '%s' -o '%s'",
                                           problem, sol)
                     : form == 1 ? run_cli(out, sizeof out, err, sizeof err,
                                           "validate '%s' '%s'", problem, good)
                                 : run_cli(out, sizeof out, err, sizeof err,
                                           "validate '%s' '%s'", good, problem);
            if (rc != EXIT_BAD_INPUT || count_lines(err) != 1 ||
                strncmp(err, want, strlen(want)) != 0 || !strstr(err, bad[k].what) ||
                !strstr(err, "expected") || out[0] != '\0')
                fail_msg("%s (form %d): exit %d, stdout '%s', stderr '%s'; wanted exit 3 and "
                         "'%s...%s...expected...'",
                         bad[k].name, form, rc, out, err, want, bad[k].what);
        }
        struct stat st;
        assert_int_not_equal(stat(sol, &st), 0);
        assert_int_equal(files_in_tmp(), before);
    }
    unlink(problem);
    unlink(good);
}

/* A problem the planner refuses (here: b3 cannot be placed below 2^64 while b1 fills almost
 * all of it) is named like a malformed file: its line and id, not the planner's row index. */
static void test_a_plan_past_size_max_names_the_line_and_id(void **state)
{
    (void)state;
    static char out[4096], err[4096];
    char problem[300], sol[300], want[400];
    path_in_tmp(problem, sizeof problem, "huge.csv");
    path_in_tmp(sol, sizeof sol, "huge.sol.csv");
    /* b2 is zero-sized and not planned, so the planner's failing index differs from the
     * row's line minus two only if the CLI maps it wrongly */
    write_text(problem, "id,lower,upper,size\nb1,0,3,18446744073709551615\nb2,1,2,0\n"
                        "b3,2,5,1\n");
    int rc = run_cli(out, sizeof out, err, sizeof err, "plan '%s' -o '%s'", problem, sol);
    assert_int_equal(rc, EXIT_BAD_INPUT);
    assert_int_equal(count_lines(err), 1);
    snprintf(want, sizeof want, "tensorplan: plan: %s:4: buffer 'b3': ", problem);
    if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, "expected"))
        fail_msg("stderr '%s', wanted '%s...expected...'", err, want);
    struct stat st;
    assert_int_not_equal(stat(sol, &st), 0);
    unlink(problem);
}

/* An existing output file is left as it was when the input is refused. */
static void test_a_refused_input_leaves_an_existing_solution_alone(void **state)
{
    (void)state;
    static char out[4096], err[4096], kept[64];
    char problem[300], sol[300];
    path_in_tmp(problem, sizeof problem, "refused2.csv");
    path_in_tmp(sol, sizeof sol, "existing.csv");
    write_text(problem, "id,lower,upper,size\nb1,0,3,4\nb1,1,2,8\n");
    write_text(sol, "previous contents\n");
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "plan '%s' -o '%s'", problem, sol),
                     EXIT_BAD_INPUT);
    FILE *f = fopen(sol, "r");
    assert_non_null(f);
    assert_non_null(fgets(kept, sizeof kept, f));
    fclose(f);
    assert_string_equal(kept, "previous contents\n");
    unlink(problem);
    unlink(sol);
}

/* --help and --version at the top, and help for a command that does not exist. */
static void test_top_level_help_and_version(void **state)
{
    (void)state;
    static char out[8192], err[4096], version[64];
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "--version"), EXIT_OK);
    assert_int_equal(count_lines(out), 1);
    assert_int_equal(strncmp(out, "tensorplan ", 11), 0);
    unsigned major, minor, patch;
    assert_int_equal(sscanf(out, "tensorplan %u.%u.%u\n", &major, &minor, &patch), 3);
    snprintf(version, sizeof version, "tensorplan %u.%u.%u", major, minor, patch);
    const char *forms[] = {"--help", "-h", "help"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "%s", forms[i]), EXIT_OK);
        assert_int_equal(strncmp(out, version, strlen(version)), 0); /* the same version */
        /* every command the usage lists has its own help */
        for (const char *c = strstr(out, "commands:\n"); c && (c = strstr(c, "\n  ")) != NULL;) {
            char name[32];
            if (sscanf(c, "\n  %31[a-z-] ", name) != 1)
                break;
            static char sub[8192];
            assert_int_equal(run_cli(sub, sizeof sub, err, sizeof err, "help %s", name), EXIT_OK);
            char usage[64];
            snprintf(usage, sizeof usage, "usage: tensorplan %s", name);
            if (!strstr(sub, usage))
                fail_msg("'help %s' lacks '%s'", name, usage);
            c++;
        }
    }
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "help nosuch"), EXIT_USAGE);
    assert_int_equal(count_lines(err), 1);
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "nosuch"), EXIT_USAGE);
    assert_int_equal(count_lines(err), 1);
    assert_int_equal(run_cli(out, sizeof out, err, sizeof err, "%s", ""), EXIT_USAGE);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tp_test_cli_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char p[300];
    path_in_tmp(p, sizeof p, "stdout.txt");
    unlink(p);
    path_in_tmp(p, sizeof p, "stderr.txt");
    unlink(p);
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_solves_every_minimalloc_file),
        cmocka_unit_test(test_validate_rejects_overlapping_buffers),
        cmocka_unit_test(test_validate_rejects_missing_row_negative_offset_and_changed_size),
        cmocka_unit_test(test_bad_input_gets_one_line_and_no_output),
        cmocka_unit_test(test_usage_errors_and_help),
        cmocka_unit_test(test_solution_to_stdout),
        cmocka_unit_test(test_every_accepted_oddity_through_the_cli),
        cmocka_unit_test(test_every_refusal_through_the_cli),
        cmocka_unit_test(test_a_refused_input_leaves_an_existing_solution_alone),
        cmocka_unit_test(test_a_plan_past_size_max_names_the_line_and_id),
        cmocka_unit_test(test_top_level_help_and_version),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
