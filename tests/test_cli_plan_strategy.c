/* `tensorplan plan --strategy/--time-limit/--align`, run as a user would. Solutions are read
 * by a reader of this file and checked by a pairwise overlap oracle written here. */
#define _XOPEN_SOURCE 700 /* posix_openpt, grantpt, unlockpt, ptsname */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct row {
    size_t lower, upper, size, offset;
} row;

static char dir[256];

static int run(const char *args, const char *out_name, const char *err_name)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s plan %s >%s/%s 2>%s/%s </dev/null", TP_CLI_PATH, args, dir,
             out_name, dir, err_name);
    int status = system(cmd);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static size_t read_rows(const char *path, row *rows, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    assert_non_null(fgets(line, sizeof line, f));
    size_t n = 0;
    while (fgets(line, sizeof line, f) && n < cap) {
        char id[64];
        row *r = &rows[n];
        if (sscanf(line, "%63[^,],%zu,%zu,%zu,%zu", id, &r->lower, &r->upper, &r->size,
                   &r->offset) == 5)
            n++;
    }
    fclose(f);
    return n;
}

/* Buffers live at a common step ([lower, upper) half-open) never share a byte; returns the
 * height. */
static size_t check_rows(const row *r, size_t n, size_t align)
{
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].size > 0)
            assert_int_equal(r[i].offset % align, 0);
        if (r[i].offset + r[i].size > top)
            top = r[i].offset + r[i].size;
        for (size_t j = i + 1; j < n; j++) {
            int live = r[i].lower < r[j].upper && r[j].lower < r[i].upper;
            int share = r[i].offset < r[j].offset + r[j].size &&
                        r[j].offset < r[i].offset + r[i].size && r[i].size && r[j].size;
            assert_false(live && share);
        }
    }
    return top;
}

static long file_size(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    return size;
}

static int file_contains(const char *name, const char *needle)
{
    char path[512], text[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = '\0';
    fclose(f);
    return strstr(text, needle) != NULL;
}

static void test_exact_fits_a_minimalloc_problem_and_is_silent_off_a_terminal(void **state)
{
    (void)state;
    char args[1024], sol[512];
    snprintf(sol, sizeof sol, "%s/sol.csv", dir);
    snprintf(args, sizeof args,
             "%s/minimalloc/B.1048576.csv --strategy exact --capacity 1048576 -o %s",
             TP_TEST_DATA, sol);
    assert_int_equal(run(args, "out.txt", "err.txt"), 0);
    assert_int_equal(file_size("err.txt"), 0); /* no progress line: stderr is a file */
    assert_true(file_contains("out.txt", "fits (0 bytes spare)"));
    row rows[600];
    size_t n = read_rows(sol, rows, 600);
    assert_int_equal(n, 170);
    assert_true(check_rows(rows, n, 1) <= 1048576);
}

static void test_portfolio_with_alignment_writes_aligned_offsets(void **state)
{
    (void)state;
    char args[1024], sol[512];
    snprintf(sol, sizeof sol, "%s/sol2.csv", dir);
    snprintf(args, sizeof args, "%s/minimalloc/C.1048576.csv --strategy portfolio --align 4096 -o %s",
             TP_TEST_DATA, sol);
    assert_int_equal(run(args, "out2.txt", "err2.txt"), 0);
    row rows[600];
    size_t n = read_rows(sol, rows, 600);
    assert_int_equal(n, 203);
    check_rows(rows, n, 4096);
    assert_true(file_contains("out2.txt", "strategy  greedy"));
}

static void test_a_capacity_below_the_peak_exits_4_proven(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args,
             "%s/minimalloc/A.1048576.csv --strategy exact --capacity 1000000 --time-limit 0.2",
             TP_TEST_DATA);
    /* the capacity is below the peak: proven at once, no search */
    assert_int_equal(run(args, "out3.txt", "err3.txt"), 4);
    assert_true(file_contains("out3.txt", "proven: no plan fits"));
}

/* Each refusal: exit 2, exactly one line on stderr naming the flag, nothing on stdout. */
static void test_bad_strategy_flags_are_usage_errors(void **state)
{
    (void)state;
    const char *bad[][2] = { { "--strategy best", "--strategy" },
                             { "--strategy", "--strategy" },
                             { "--align 12", "power of two" },
                             { "--align 0", "power of two" },
                             { "--align", "--align" },
                             { "--time-limit -3", "--time-limit" },
                             { "--time-limit nan", "--time-limit" },
                             { "--time-limit 1e999", "--time-limit" },
                             { "--time-limit 2s", "--time-limit" },
                             { "--time-limit", "--time-limit" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[1024], path[512], text[4096];
        snprintf(args, sizeof args, "%s/minimalloc/input.12.csv %s", TP_TEST_DATA, bad[i][0]);
        assert_int_equal(run(args, "o.txt", "e.txt"), 2);
        assert_int_equal(file_size("o.txt"), 0);
        snprintf(path, sizeof path, "%s/e.txt", dir);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        size_t got = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[got] = '\0';
        assert_true(got > 0 && strchr(text, '\n') == text + got - 1); /* one line */
        assert_non_null(strstr(text, bad[i][1]));
    }
}

/* Runs `tensorplan plan ARGS >OUT_NAME` with stderr on a pseudo-terminal opened here and
 * returns what was written there (NUL-terminated, at most cap - 1 bytes). */
static size_t run_on_terminal(const char *args, const char *out_name, char *text, size_t cap)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(master >= 0);
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    const char *slave = ptsname(master);
    assert_non_null(slave);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s plan %s >%s/%s 2>%s </dev/null", TP_CLI_PATH, args, dir,
             out_name, slave);
    int status = system(cmd);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    size_t got = 0;
    assert_int_equal(fcntl(master, F_SETFL, O_NONBLOCK), 0);
    for (;;) {
        ssize_t r = read(master, text + got, cap - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    text[got] = '\0';
    close(master);
    return got;
}

/* With stderr on a terminal, the exact search keeps a progress line there and clears it at
 * the end; the summary still goes to stdout. */
static void test_exact_shows_a_progress_line_on_a_terminal(void **state)
{
    (void)state;
    char args[512], text[65536];
    /* D is not settled in 0.5 s, so the search runs long enough for several redraws */
    snprintf(args, sizeof args, "%s/minimalloc/D.1048576.csv --strategy exact --time-limit 0.5",
             TP_TEST_DATA);
    const size_t got = run_on_terminal(args, "out4.txt", text, sizeof text);
    assert_non_null(strstr(text, "searching: best arena "));
    assert_non_null(strstr(text, "lower bound 986112"));
    /* the last thing written clears the line */
    assert_true(got >= 4 && strcmp(text + got - 4, "\r\033[K") == 0);
    assert_true(file_contains("out4.txt", "not proven (time limit reached)"));
    assert_false(file_contains("out4.txt", "searching"));
}

/* The default greedy on a problem that takes it a second shows the tensors placed so far on a
 * terminal, and writes the same solution and summary as off a terminal. */
static void test_a_long_greedy_shows_its_progress_on_a_terminal(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/wide.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "id,lower,upper,size\n");
    uint64_t x = 12345;
    /* well over the 0.1 s after which progress shows, even on an idle machine with the
     * vector scan (about 0.7 s at 1e5 of these lifetimes, BENCHMARKS.md), under sanitizers
     * too; 30,000 rows had become too few to be sure of it */
    const size_t n = getenv("TP_SANITIZED") != NULL ? 20000 : 100000;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const size_t lower = (size_t)(x % n), len = 1 + (size_t)((x >> 20) % (n / 2));
        fprintf(f, "b%zu,%zu,%zu,%zu\n", i, lower, lower + len,
                64 * (1 + (size_t)(x >> 44) % 1024));
    }
    assert_int_equal(fclose(f), 0);

    char args[1024], text[65536];
    snprintf(args, sizeof args, "%s -o %s/sol.csv", path, dir);
    const size_t got = run_on_terminal(args, "out5.txt", text, sizeof text);
    assert_non_null(strstr(text, "placing: "));
    char of_n[64], buffers_n[64];
    snprintf(of_n, sizeof of_n, " of %zu tensors, ", n);
    snprintf(buffers_n, sizeof buffers_n, "buffers   %zu", n);
    assert_non_null(strstr(text, of_n));
    assert_true(got >= 4 && strcmp(text + got - 4, "\r\033[K") == 0);
    snprintf(args, sizeof args, "%s -o %s/sol2.csv", path, dir);
    assert_int_equal(run(args, "out6.txt", "err6.txt"), 0);
    assert_int_equal(file_size("err6.txt"), 0);

    /* the same solution and the same summary (but for the time and the file name) */
    static row a[100000], b[100000];
    char sol[512];
    snprintf(sol, sizeof sol, "%s/sol.csv", dir);
    assert_int_equal(read_rows(sol, a, n), n);
    snprintf(sol, sizeof sol, "%s/sol2.csv", dir);
    assert_int_equal(read_rows(sol, b, n), n);
    assert_memory_equal(a, b, n * sizeof *a);
    const char *same[] = { buffers_n, "peak      ", "arena     ", "capacity  not given" };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        assert_true(file_contains("out5.txt", same[i]));
        assert_true(file_contains("out6.txt", same[i]));
    }
    assert_false(file_contains("out5.txt", "\nstrategy  ")); /* the path says strategy */
    assert_false(file_contains("out6.txt", "\nstrategy  "));
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tp_cli_strategy_XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    const char *names[] = { "sol.csv", "sol2.csv", "out.txt", "err.txt", "out2.txt", "err2.txt",
                            "out3.txt", "err3.txt", "o.txt", "e.txt", "out4.txt", "out5.txt",
                            "out6.txt", "err6.txt", "wide.csv" };
    char path[512];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_fits_a_minimalloc_problem_and_is_silent_off_a_terminal),
        cmocka_unit_test(test_portfolio_with_alignment_writes_aligned_offsets),
        cmocka_unit_test(test_a_capacity_below_the_peak_exits_4_proven),
        cmocka_unit_test(test_bad_strategy_flags_are_usage_errors),
        cmocka_unit_test(test_exact_shows_a_progress_line_on_a_terminal),
        cmocka_unit_test(test_a_long_greedy_shows_its_progress_on_a_terminal),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
