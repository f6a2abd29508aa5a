/* Inputs that are no ordinary file, run through the built program (issue "Hardening, second
 * round"): a FIFO or a character device given as any input file is refused at once with exit 3
 * and one line, never waited on; a stream is read up to 256 MiB (src/common/input_file.h) and
 * refused past that; a /proc file is no "empty file"; a name that exists or holds a '/' is a
 * file, never an unknown built-in name or option; a control byte in a name never splits the
 * one-line message. */
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

#include "support/cli_run.h"
#include "tensorplan/model.h"
#include "tensorplan/quant.h"
#include "tensorplan/test_model.h"

static char dir[] = "/tmp/tp_cli_inputs_XXXXXX";
static char fifo[300], model[300], loop[300];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    snprintf(loop, sizeof loop, "%s/loop", dir);
    char other[300];
    snprintf(other, sizeof other, "%s/loop2", dir);
    if (mkfifo(fifo, 0600) != 0 || symlink(other, loop) != 0 || symlink(loop, other) != 0)
        return -1;
    tp_model_config c;
    if (tp_model_config_builtin("tiny-qwen2", &c) != TP_OK)
        return -1;
    tp_gguf_test_model how = {TP_TYPE_F32, 1, "gpt2", "qwen2"};
    return tp_gguf_write_test_model(model, &c, &how) == TP_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* tensorplan ARGS (printf format), run in the test's folder under a 60 s timeout (a reader
 * that waits on a FIFO is ended by it: exit 124); the result to be freed. */
static cli_result run(const char *fmt, ...)
{
    char args[2048], cmd[3000], out[400], err[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "cd '%s' && timeout 60 '%s' %s >'%s' 2>'%s'", dir, TP_CLI_PATH,
             args, out, err);
    cli_result r;
    const int status = system(cmd);
    r.rc = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = cli_slurp(out, &r.out_len);
    r.err = cli_slurp(err, &r.err_len);
    return r;
}

static void expect(cli_result *r, int rc, const char *needle)
{
    if (r->rc != rc || (needle && !strstr(r->err, needle)) || cli_lines(r->err) != 1)
        fail_msg("expected exit %d and one line with '%s', got %d: %s", rc,
                 needle ? needle : "", r->rc, r->err);
    cli_free(r);
}

/* Every command that reads a file refuses a FIFO before opening it for a read that would wait
 * for a writer (without that, the timeout ends the wait: exit 124). */
static void test_fifo_refused(void **state)
{
    (void)state;
    static const char *const cmds[] = {
        "inspect '%s'", "model '%s'", "tokenize '%s' hi", "detokenize '%s' 1",
        "run '%s' --prompt hi", "plan '%s'", "alloc '%s'", "validate '%s' '%s'",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        cli_result r = run(cmds[i], fifo, fifo);
        if (r.rc != 3 || !strstr(r.err, "a FIFO, not a regular file") || cli_lines(r.err) != 1)
            fail_msg("'%s': exit %d: %s", cmds[i], r.rc, r.err);
        cli_free(&r);
    }
}

/* A character device: refused by name; endless standard input stops at the limit. */
static void test_device_and_endless_stdin(void **state)
{
    (void)state;
    cli_result r = run("plan /dev/zero");
    expect(&r, 3, "/dev/zero: cannot read: a character device, not a regular file");
    r = run("inspect /dev/zero");
    expect(&r, 3, "a character device");
    r = run("run /dev/zero --prompt hi");
    expect(&r, 3, "a character device");
    r = run("tokenize '%s' - < /dev/zero", model);
    expect(&r, 3, "standard input: more than 268435456 bytes");
    r = run("plan - < /dev/zero");
    expect(&r, 3, "more than 268435456 bytes");
    r = run("alloc /dev/zero");
    expect(&r, 3, "a character device");
}

/* A /proc file has bytes though its size reads 0: it cannot be mapped, it is not empty. */
static void test_proc_file(void **state)
{
    (void)state;
    cli_result r = run("inspect /proc/self/status");
    if (r.rc != 3 || strstr(r.err, "empty file") || !strstr(r.err, "size of 0"))
        fail_msg("exit %d: %s", r.rc, r.err);
    cli_free(&r);
}

/* A name that exists (a link loop) or holds a '/' is a file: its own error, not "unknown
 * option" (run took it for a built-in name) or "unknown model". */
static void test_names_that_are_files(void **state)
{
    (void)state;
    cli_result r = run("run '%s' --prompt hi", loop);
    expect(&r, 1, "Too many levels of symbolic links");
    r = run("model '%s'", loop);
    expect(&r, 1, "Too many levels of symbolic links");
    /* the same as a bare name, in its folder */
    r = run("model loop");
    expect(&r, 1, "Too many levels of symbolic links");
    r = run("run loop --prompt hi");
    expect(&r, 1, "Too many levels of symbolic links");
    /* a bare name that is neither a file nor built in is an unknown model, not an option */
    r = run("run nothere --prompt hi");
    expect(&r, 2, "unknown model 'nothere'");
    r = run("run /proc/self/status --prompt hi");
    if (strstr(r.err, "unknown option"))
        fail_msg("%s", r.err);
    cli_free(&r);
}

/* A newline or another control byte in a name is written escaped: the message stays one
 * line. */
static void test_control_bytes_in_names(void **state)
{
    (void)state;
    cli_result r = run("model \"$(printf 'a\\nb\\tc\\033')\"");
    expect(&r, 2, "unknown model 'a\\nb\\tc\\x1b'");
    r = run("inspect \"$(printf '%s/no\\nfile.gguf')\"", dir);
    expect(&r, 1, "no\\nfile.gguf: cannot open");
}

/* An alignment whose plan overflows 2^64 is a bad command line (exit 2, naming --align), not
 * a refusal of the valid file with an offset that is no multiple of the alignment: five
 * buffers live together need 5 x 2^62 bytes at --align 2^62, 3 x 2^63 at --align 2^63. The
 * same file plans at --align 2^60. */
static void test_align_overflow(void **state)
{
    (void)state;
    char csv[400];
    snprintf(csv, sizeof csv, "%s/five.csv", dir);
    FILE *f = fopen(csv, "w");
    assert_non_null(f);
    fputs("id,lower,upper,size\na,0,5,10\nb,0,5,20\nc,0,5,30\nd,0,5,5\ne,0,5,7\n", f);
    fclose(f);
    static const char *const strategies[] = {"greedy", "portfolio", "exact"};
    for (size_t i = 0; i < 3; i++) {
        cli_result r = run("plan '%s' --align 9223372036854775808 --strategy %s", csv,
                           strategies[i]);
        expect(&r, 2, "--align 9223372036854775808: the plan does not fit below 2^64 bytes");
        r = run("plan '%s' --align 4611686018427387904 --strategy %s", csv, strategies[i]);
        expect(&r, 2, "--align 4611686018427387904");
    }
    /* every buffer in its own 2^60 slot, the smallest (5 bytes; the greedy places by
     * decreasing size) last: 4 x 2^60 + 5 */
    cli_result r = run("plan '%s' --align 1152921504606846976", csv);
    assert_int_equal(r.rc, 0);
    char want[64];
    snprintf(want, sizeof want, "arena     %llu bytes", 4ull * (1ull << 60) + 5);
    assert_non_null(strstr(r.out, want));
    cli_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_device_and_endless_stdin),
        cmocka_unit_test(test_proc_file),
        cmocka_unit_test(test_names_that_are_files),
        cmocka_unit_test(test_control_bytes_in_names),
        cmocka_unit_test(test_align_overflow),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
