/* An arena of exactly SIZE_MAX (2^64 - 1 bytes) is a legal result of tp_plan_offsets_ex and of
 * `tensorplan plan`, not "no plan": the arena is reported as it is, and a capacity below it is
 * refused (TP_ERR_INFEASIBLE, exit 4). Expected arenas are restated here from the placement
 * rule (one buffer: its size; buffers all live together: stacked, each offset rounded up to
 * the alignment). */
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

#include "tensorplan/planner.h"

#include "support/offsets_oracle.h"

static const tp_plan_strategy strategies[] = { TP_PLAN_GREEDY, TP_PLAN_PORTFOLIO,
                                               TP_PLAN_EXACT };

static void test_one_buffer_of_size_max(void **state)
{
    (void)state;
    const tp_tensor_lifetime t[1] = { { SIZE_MAX, 0, 3 } };
    for (size_t s = 0; s < 3; s++) {
        tp_plan_options o;
        tp_plan_options_init(&o);
        o.strategy = strategies[s];
        size_t off[1] = { 7 }, arena = 0;
        tp_plan_report rep;
        assert_int_equal(tp_plan_offsets_ex(t, 1, &o, off, &arena, &rep), TP_OK);
        assert_int_equal(off[0], 0);
        assert_true(arena == SIZE_MAX);
        assert_true(rep.arena_size == SIZE_MAX);
        assert_true(rep.lower_bound == SIZE_MAX);
        assert_int_equal(rep.proven_optimal, 1); /* the arena equals the peak */
    }
}

static void test_capacity_below_size_max_is_refused(void **state)
{
    (void)state;
    const tp_tensor_lifetime t[1] = { { SIZE_MAX, 0, 3 } };
    for (size_t s = 0; s < 3; s++) {
        tp_plan_options o;
        tp_plan_options_init(&o);
        o.strategy = strategies[s];
        o.capacity = 100;
        size_t off[1] = { 7 }, arena = 0;
        tp_plan_report rep;
        assert_int_equal(tp_plan_offsets_ex(t, 1, &o, off, &arena, &rep), TP_ERR_INFEASIBLE);
        assert_int_equal(rep.proven_infeasible, 1);
        assert_true(arena == SIZE_MAX); /* the best plan found, above the capacity */
    }
}

/* Four buffers of 2^62 - 1 bytes live together, offsets multiples of 2^30: stacked at 0,
 * 2^62, 2^63 and 3 * 2^62, the last one ending at 2^64 - 1. */
static void test_alignment_reaches_size_max(void **state)
{
    (void)state;
    const size_t q = ((size_t)1 << 62) - 1, align = (size_t)1 << 30;
    tp_tensor_lifetime t[4];
    for (size_t i = 0; i < 4; i++)
        t[i] = (tp_tensor_lifetime){ q, 0, 3 };
    for (size_t s = 0; s < 3; s++) {
        tp_plan_options o;
        tp_plan_options_init(&o);
        o.strategy = strategies[s];
        o.alignment = align;
        size_t off[4], arena = 0;
        tp_plan_report rep;
        assert_int_equal(tp_plan_offsets_ex(t, 4, &o, off, &arena, &rep), TP_OK);
        assert_true(arena == SIZE_MAX);
        tpt_assert_sound_offsets(t, 4, off, arena, align);
        o.capacity = SIZE_MAX - 1;
        assert_int_equal(tp_plan_offsets_ex(t, 4, &o, off, &arena, &rep), TP_ERR_INFEASIBLE);
        assert_true(arena == SIZE_MAX);
    }
}

/* ---- the command line ---- */

static char dir[256];

static int run_plan(const char *args, char *out, size_t out_size)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s plan %s >%s/out.txt 2>&1 </dev/null", TP_CLI_PATH, args, dir);
    const int status = system(cmd);
    assert_true(WIFEXITED(status));
    char path[300];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    const size_t n = fread(out, 1, out_size - 1, f);
    out[n] = '\0';
    fclose(f);
    return WEXITSTATUS(status);
}

static void write_file(const char *name, const char *text)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_cli_size_max_arena(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tp_sizemax_XXXXXX");
    assert_non_null(mkdtemp(dir));
    write_file("f.csv", "id,lower,upper,size\nbig,0,3,18446744073709551615\n");
    write_file("a.csv", "id,lower,upper,size\n"
                        "a,0,3,4611686018427387903\nb,0,3,4611686018427387903\n"
                        "c,0,3,4611686018427387903\nd,0,3,4611686018427387903\n");
    char out[4096], args[600];

    snprintf(args, sizeof args, "%s/f.csv --strategy portfolio --capacity 100", dir);
    assert_int_equal(run_plan(args, out, sizeof out), 4);
    assert_non_null(strstr(out, "does NOT fit"));
    assert_non_null(strstr(out, "arena     18446744073709551615 bytes"));

    snprintf(args, sizeof args, "%s/f.csv --strategy exact", dir);
    assert_int_equal(run_plan(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "arena     18446744073709551615 bytes"));
    assert_non_null(strstr(out, "proven minimal"));

    snprintf(args, sizeof args, "%s/a.csv --align 1073741824", dir);
    assert_int_equal(run_plan(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "arena     18446744073709551615 bytes"));

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_buffer_of_size_max),
        cmocka_unit_test(test_capacity_below_size_max_is_refused),
        cmocka_unit_test(test_alignment_reaches_size_max),
        cmocka_unit_test(test_cli_size_max_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
