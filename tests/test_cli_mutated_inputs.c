/* Damaged input files, run through the command line as a user would: a problem CSV (`plan`), a
 * solution CSV (`validate`) and a graph JSON (`alloc`), each mutated at random (bytes changed,
 * cut out, huge numbers and stray separators inserted, runs repeated). Whatever the damage, the
 * tool must end with one of its documented exit codes (0-4), never a signal, and a refusal must
 * be one line on stderr. Under the sanitizers (CI) a memory error aborts the child, which this
 * test sees as a signal. */
#define _XOPEN_SOURCE 700
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

#include "support/xorshift.h"

static char dir[256];
static tpt_rng rng;

static size_t below(size_t n) { return (size_t)(tpt_rng_next(&rng) % n); }

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    assert_true(size > 0);
    rewind(f);
    char *text = malloc((size_t)size);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *len = (size_t)size;
    return text;
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* One to three random edits of base[0..len) into out (room for len + 3 * 256 bytes). */
static size_t mutate(const char *base, size_t len, char *out)
{
    static const char bytes[] = "0123456789,-\"\n\r{}[]:. eE";
    static const char *const inserts[] = { "99999999999999999999999", "18446744073709551616",
                                           "-1", ",", "\n", "\"", "1e400", "{}", "[]", "null",
                                           "\"x\"", "\t" };
    memcpy(out, base, len);
    size_t n = len;
    for (size_t edits = 1 + below(3); edits > 0; edits--) {
        const size_t at = n ? below(n) : 0;
        const size_t kind = below(5);
        if (kind == 0 && n > 0) {
            out[at] = below(16) == 0 ? (char)below(256) : bytes[below(sizeof bytes - 1)];
        } else if (kind == 1 && n > 0) {
            size_t cut = 1 + below(40);
            if (cut > n - at)
                cut = n - at;
            memmove(out + at, out + at + cut, n - at - cut);
            n -= cut;
        } else if (kind == 2 || kind == 3) {
            const char *s = inserts[below(sizeof inserts / sizeof inserts[0])];
            const size_t k = strlen(s);
            memmove(out + at + k, out + at, n - at);
            memcpy(out + at, s, k);
            n += k;
        } else {
            size_t k = 1 + below(200); /* repeat the bytes just before at */
            if (k > at)
                k = at;
            memmove(out + at + k, out + at, n - at);
            memmove(out + at, out + at - k, k);
            n += k;
        }
    }
    return n;
}

/* Runs `tensorplan ARGS` with stdout to a file and stderr to another; returns the exit code
 * after checking that it is a documented one and that a failure said one line. */
static int run_checked(const char *args, const char *what, size_t round)
{
    char cmd[2048], err_path[300];
    snprintf(err_path, sizeof err_path, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out.txt' 2>'%s' </dev/null", TP_CLI_PATH, args, dir,
             err_path);
    const int status = system(cmd);
    if (status == -1 || !WIFEXITED(status))
        fail_msg("%s, round %zu: the tool did not exit normally (status %d)", what, round,
                 status);
    const int rc = WEXITSTATUS(status);
    if (rc > 4)
        fail_msg("%s, round %zu: exit %d is not a documented code", what, round, rc);
    size_t len = 0;
    FILE *f = fopen(err_path, "rb");
    assert_non_null(f);
    char err[4096];
    len = fread(err, 1, sizeof err - 1, f);
    fclose(f);
    err[len] = '\0';
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += err[i] == '\n';
    if (rc != 0 && (lines != 1 || strncmp(err, "tensorplan: ", 12) != 0))
        fail_msg("%s, round %zu: exit %d with %zu lines on stderr: %s", what, round, rc, lines,
                 err);
    return rc;
}

/* Runs `tensorplan BEFORE 'damaged file' AFTER` for `rounds` damaged copies of base_path. */
static void mutate_and_run(const char *base_path, const char *file_name, const char *before,
                           const char *after, size_t rounds, const char *what)
{
    size_t len = 0;
    char *base = read_file(base_path, &len);
    char *text = malloc(len + 3 * 256);
    assert_non_null(text);
    char path[300], args[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file_name);
    size_t refused = 0;
    for (size_t r = 0; r < rounds; r++) {
        write_file(path, text, mutate(base, len, text));
        snprintf(args, sizeof args, "%s '%s' %s", before, path, after);
        refused += run_checked(args, what, r) == 3;
    }
    /* most damage must be noticed: a mutation test that never reaches a refusal tests nothing */
    assert_true(refused >= rounds / 4);
    free(base);
    free(text);
}

/* each round starts the tool once: about 10 ms, 0.2 s under the sanitizers */
static size_t rounds(void) { return getenv("TP_SANITIZED") != NULL ? 30 : 100; }

static void test_damaged_problem_files_are_refused_cleanly(void **state)
{
    (void)state;
    rng.state = 101;
    char base[512];
    snprintf(base, sizeof base, "%s/minimalloc/A.1048576.csv", TP_TEST_DATA);
    mutate_and_run(base, "problem.csv", "plan", "--strategy portfolio", rounds(), "plan");
}

static void test_damaged_solution_files_are_refused_cleanly(void **state)
{
    (void)state;
    rng.state = 202;
    char problem[512], args[1024];
    snprintf(problem, sizeof problem, "%s/minimalloc/A.1048576.csv", TP_TEST_DATA);
    snprintf(args, sizeof args, "plan '%s' -o '%s/solution_base.csv'", problem, dir);
    assert_int_equal(run_checked(args, "plan", 0), 0);
    char base[300], before[1024];
    snprintf(base, sizeof base, "%s/solution_base.csv", dir);
    snprintf(before, sizeof before, "validate '%s'", problem);
    mutate_and_run(base, "solution.csv", before, "", rounds(), "validate");
}

static void test_damaged_graph_files_are_refused_cleanly(void **state)
{
    (void)state;
    rng.state = 303;
    char args[1024], base[300];
    snprintf(base, sizeof base, "%s/graph_base.json", dir);
    snprintf(args, sizeof args, "graph tiny --tokens 3 --json '%s'", base);
    assert_int_equal(run_checked(args, "graph", 0), 0);
    mutate_and_run(base, "graph.json", "alloc", "", rounds(), "alloc");
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tp_cli_mutated_XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    const char *names[] = { "out.txt",      "err.txt",       "problem.csv",    "solution.csv",
                            "graph.json",   "graph_base.json", "solution_base.csv" };
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
        cmocka_unit_test(test_damaged_problem_files_are_refused_cleanly),
        cmocka_unit_test(test_damaged_solution_files_are_refused_cleanly),
        cmocka_unit_test(test_damaged_graph_files_are_refused_cleanly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
