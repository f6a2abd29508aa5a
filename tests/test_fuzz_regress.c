/* Replays every stored input of the fuzzing harnesses (tests/fuzz, docs/fuzzing.md) in the
 * ordinary suite, without libFuzzer: the inputs of tests/data/fuzz/NAME/ (each one once
 * failed, or is a seed of that harness) through harness NAME, whose checks are the oracle;
 * the CSV harnesses also get the MiniMalloc examples of tests/data/minimalloc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>

#define TPF_NO_ENTRY 1
#define TPF_FAIL(msg) fail_msg("%s", (msg))

#include "fuzz/fuzz_csv_problem.c"
#include "fuzz/fuzz_csv_solution.c"
#include "fuzz/fuzz_gguf.c"
#include "fuzz/fuzz_graph_alloc.c"
#include "fuzz/fuzz_model.c"
#include "fuzz/fuzz_planner.c"
#include "fuzz/fuzz_tokenizer.c"

typedef int (*harness_fn)(const uint8_t *data, size_t size);

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs fn on every regular file of dir (sorted by name); returns how many. */
static size_t replay_dir(const char *dir, harness_fn fn)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    char *names[512];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 512;)
        if (e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        const long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        assert_non_null(buf);
        assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
        fclose(f);
        print_message("%s\n", path);
        fn(buf, (size_t)len);
        free(buf);
        free(names[i]);
    }
    return n;
}

static void replay(const char *name, harness_fn fn, int with_minimalloc)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/fuzz/%s", TP_TEST_DATA, name);
    size_t n = replay_dir(dir, fn);
    assert_true(n > 0); /* every harness keeps at least one input */
    if (with_minimalloc)
        assert_true(replay_dir(TP_TEST_DATA "/minimalloc", fn) > 0);
}

/* One line per harness: its name (tests/fuzz/fuzz_NAME.c, tests/data/fuzz/NAME/), its
 * function, and whether the MiniMalloc examples are inputs of it too. */
static const struct {
    const char *name;
    harness_fn fn;
    int with_minimalloc;
} harnesses[] = {
    { "csv_problem", fuzz_csv_problem, 1 },
    { "csv_solution", fuzz_csv_solution, 1 },
    { "gguf", fuzz_gguf, 0 },
    { "graph_alloc", fuzz_graph_alloc, 0 },
    { "model", fuzz_model, 0 },
    { "planner", fuzz_planner, 0 },
    { "tokenizer", fuzz_tokenizer, 0 },
};

static void test_stored_inputs(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof harnesses / sizeof harnesses[0]; i++)
        replay(harnesses[i].name, harnesses[i].fn, harnesses[i].with_minimalloc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stored_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
