/* The README's C example: it compiles here with the project's warnings, runs, prints the
 * offsets of planner.md's ReusesLeadingGap case, and the README shows exactly this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define main readme_example_main
#include "../docs/example_plan_offsets.c"
#undef main

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void test_example_prints_the_leading_gap_case(void **state)
{
    (void)state;
    char path[] = "/tmp/tp_readme_example_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fd, STDOUT_FILENO) >= 0);
    int rc = readme_example_main();
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    close(fd);
    char *out = slurp(path);
    unlink(path);
    assert_int_equal(rc, 0);
    /* planner.md, ReusesLeadingGap: 100[0,1] 80[1,2] 60[2,3] -> 0 100 0, arena 180; the peak
     * is at node 1 where the first two are live: 100 + 80 */
    assert_string_equal(out, "tensor 0 at offset 0\n"
                             "tensor 1 at offset 100\n"
                             "tensor 2 at offset 0\n"
                             "arena 180 bytes, peak 180 bytes\n");
    free(out);
}

static void test_readme_shows_this_example(void **state)
{
    (void)state;
    char *readme = slurp(TP_TEST_DATA "/../../README.md");
    char *example = slurp(TP_TEST_DATA "/../../docs/example_plan_offsets.c");
    char *block = malloc(strlen(example) + 16);
    assert_non_null(block);
    sprintf(block, "```c\n%s```\n", example);
    if (!strstr(readme, block))
        fail_msg("README.md does not show docs/example_plan_offsets.c verbatim in a ```c block");
    free(block);
    free(example);
    free(readme);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_prints_the_leading_gap_case),
        cmocka_unit_test(test_readme_shows_this_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
