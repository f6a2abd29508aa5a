/* Writers never replace or remove an output that is not a regular file (src/common/output_file.h).
 *
 * Regression: the solution, GGUF and graph writers wrote through a temporary file renamed onto
 * the output, so `plan ... -o /dev/null` run as root turned /dev/null into a regular file, and
 * a failed graph write removed its output path whatever it was. A FIFO stands in for a device
 * here: after each write it must still be a FIFO, and its reader must have received the text. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
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

#include "tensorplan/csv.h"
#include "tensorplan/gguf.h"
#include "tensorplan/graph.h"
#include "tensorplan/graph_io.h"

static char dir[64], fifo[96], got[96];

/* Forks a reader that copies everything from the FIFO into `got` (or, with close_at_once,
 * opens it and closes it again without reading). Returns its pid. */
static pid_t start_reader(int close_at_once)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int in = open(fifo, O_RDONLY);
        if (in < 0)
            _exit(2);
        if (close_at_once) {
            close(in);
            _exit(0);
        }
        int out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char buf[4096];
        ssize_t n;
        while ((n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n)
                _exit(3);
        _exit(0);
    }
    return pid;
}

static void wait_reader(pid_t pid)
{
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int still_fifo(void)
{
    struct stat sb;
    return lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *text = calloc(1, 1 << 16);
    *len = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    return text;
}

static void test_solution_into_a_fifo(void **state)
{
    (void)state;
    const char csv[] = "id,lower,upper,size\na,0,2,4\nb,1,3,4\n";
    tp_csv_table t;
    memset(&t, 0, sizeof t);
    assert_int_equal(tp_csv_parse("p.csv", csv, strlen(csv), 0, &t), TP_OK);
    const size_t offsets[2] = {0, 4};
    pid_t pid = start_reader(0);
    assert_int_equal(tp_csv_write_solution(fifo, &t, offsets), TP_OK);
    wait_reader(pid);
    assert_true(still_fifo());
    size_t len = 0;
    char *text = slurp(got, &len);
    /* the rows in order with the offsets the test gave, as docs/planner.md states the format */
    assert_non_null(strstr(text, "a,0,2,4,0"));
    assert_non_null(strstr(text, "b,1,3,4,4"));
    free(text);
    tp_csv_free(&t);
}

static void test_gguf_into_a_fifo(void **state)
{
    (void)state;
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(tp_gguf_writer_add_u32(w, "answer", 42), TP_OK);
    pid_t pid = start_reader(0);
    assert_int_equal(tp_gguf_writer_write(w, fifo), TP_OK);
    wait_reader(pid);
    tp_gguf_writer_destroy(w);
    assert_true(still_fifo());
    size_t len = 0;
    char *bytes = slurp(got, &len);
    /* header (24 bytes), key length 8 + "answer" (6), type 4, value 4: 46 bytes, no tensors */
    assert_int_equal(len, 24 + 8 + 6 + 4 + 4);
    assert_memory_equal(bytes, "GGUF", 4);
    free(bytes);
}

static tp_graph *small_graph(void)
{
    tp_graph *g = NULL;
    assert_int_equal(tp_graph_create(&g), TP_OK);
    size_t id = 0;
    assert_int_equal(tp_graph_add_input(g, "x", 4, TP_DTYPE_F32, &id), TP_OK);
    assert_int_equal(tp_graph_mark_output(g, id), TP_OK);
    return g;
}

/* A reader that goes away makes the write fail; the path must survive the failure. */
static void test_failed_graph_write_keeps_the_fifo(void **state)
{
    (void)state;
    tp_graph *g = small_graph();
    pid_t pid = start_reader(1);
    /* the reader may close before or after the writer opens: either the write fails (EPIPE)
     * or it succeeded into a closed pipe's buffer; in both cases the FIFO stays */
    (void)tp_graph_save_json(g, fifo);
    wait_reader(pid);
    assert_true(still_fifo());
    tp_graph_destroy(g);
}

/* A regular file is still replaced whole, and no temporary file is left beside it. */
static void test_regular_file_replaced_without_leftovers(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/g.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    tp_graph *g = small_graph();
    assert_int_equal(tp_graph_save_json(g, path), TP_OK);
    tp_graph_destroy(g);
    size_t len = 0;
    char *text = slurp(path, &len);
    assert_null(strstr(text, "old"));
    assert_non_null(strstr(text, "\"x\""));
    free(text);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    assert_int_equal(n, 0);
}

static int setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof dir, "/tmp/tp_output_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(fifo, sizeof fifo, "%s/out.fifo", dir);
    snprintf(got, sizeof got, "%s/got", dir);
    return mkfifo(fifo, 0600);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_solution_into_a_fifo),
        cmocka_unit_test(test_gguf_into_a_fifo),
        cmocka_unit_test(test_failed_graph_write_keeps_the_fifo),
        cmocka_unit_test(test_regular_file_replaced_without_leftovers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
