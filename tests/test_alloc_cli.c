/* The alloc and model commands end to end: the done-when checks of the allocator. A graph
 * written by `tensorplan graph` is planned by `tensorplan alloc --plan`, and the plan file is
 * read back with cJSON and judged by the independent checker of tests/support/plan_check.c
 * against the graph file. */
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

#include "support/peak_oracle.h"
#include "support/plan_check.h"
#include "support/qwen_graph.h"
#include "tensorplan/model.h"
#include "tensorplan/graph_io.h"

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tp_alloc_cli_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs the CLI with ARGS; returns its exit code and its stdout+stderr in out. */
static int run_cli(char *out, size_t cap, const char *fmt, ...)
{
    char args[1024], cmd[2048], path[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/out.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>&1", TP_CLI_PATH, args, path);
    int status = system(cmd);
    assert_true(status != -1 && WIFEXITED(status));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t got = fread(out, 1, cap - 1, f);
    out[got] = '\0';
    fclose(f);
    return WEXITSTATUS(status);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
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

/* Plans the graph file with the given alloc flags and checks the plan file independently. */
static void plan_and_check(const char *graph_path, const char *flags, size_t nodes,
                           size_t dead, char *out, size_t cap)
{
    char plan_path[300];
    snprintf(plan_path, sizeof plan_path, "%s/p.json", tmpdir);
    int rc = run_cli(out, cap, "alloc '%s' --plan '%s' %s", graph_path, plan_path, flags);
    if (rc != 0)
        fail_msg("alloc failed (%d): %s", rc, out);
    char expect[64];
    snprintf(expect, sizeof expect, "nodes %zu:", nodes);
    assert_non_null(strstr(out, expect));
    snprintf(expect, sizeof expect, "%zu dead", dead);
    assert_non_null(strstr(out, expect));
    assert_non_null(strstr(out, "48 KV regions of 524288 elements"));
    tp_graph *g = NULL;
    assert_int_equal(tp_graph_load_json(graph_path, &g), TP_OK);
    assert_int_equal(g->n_nodes, nodes);
    char *text = slurp(plan_path);
    tpt_plan p;
    char why[512] = "";
    if (tpt_plan_from_json(text, &p, why, sizeof why) != 0)
        fail_msg("plan file unreadable: %s", why);
    if (!tpt_check_plan(g, &p, why, sizeof why))
        fail_msg("plan rejected: %s", why);
    /* the checker's own counts: 48 persistent regions of 524288 elements, 24 dead nodes */
    size_t persistent = 0, unmapped = 0;
    for (size_t i = 0; i < p.n_buffers; i++)
        if (p.buffers[i].persistent) {
            persistent++;
            assert_int_equal(p.buffers[i].elems, 524288);
        }
    for (size_t i = 0; i < p.n_nodes; i++)
        unmapped += !p.nodes[i].mapped;
    assert_int_equal(persistent, 48);
    assert_int_equal(p.n_kv, 24);
    assert_int_equal(unmapped, dead);
    tpt_plan_free(&p);
    free(text);
    tp_graph_destroy(g);
}

static void decode_graph_plans_and_checks(void **state)
{
    (void)state;
    static char out[16384];
    char g[300];
    snprintf(g, sizeof g, "%s/g.json", tmpdir);
    assert_int_equal(run_cli(out, sizeof out, "graph qwen2.5-0.5b --tokens 1 --json '%s'", g), 0);
    plan_and_check(g, "", 437, 24, out, sizeof out);
    assert_non_null(strstr(out, "buffers 59: 11 activation, 48 persistent"));
    plan_and_check(g, "--strategy arena --aliasing last-consumer", 437, 24, out, sizeof out);
    plan_and_check(g, "--exact-sizes --aliasing none", 437, 24, out, sizeof out);
}

static void prefill_graph_plans_and_checks(void **state)
{
    (void)state;
    static char out[16384];
    char g[300];
    snprintf(g, sizeof g, "%s/g440.json", tmpdir);
    assert_int_equal(
        run_cli(out, sizeof out, "graph qwen2.5-0.5b --tokens 440 --n-out 1 --json '%s'", g), 0);
    plan_and_check(g, "", 440, 24, out, sizeof out);
    plan_and_check(g, "--strategy arena", 440, 24, out, sizeof out);
    plan_and_check(g, "--aliasing last-consumer", 440, 24, out, sizeof out);
}

static void refusals(void **state)
{
    (void)state;
    static char out[16384];
    assert_int_equal(run_cli(out, sizeof out, "alloc"), 2);
    assert_int_equal(run_cli(out, sizeof out, "alloc x.json --strategy best"), 2);
    assert_non_null(strstr(out, "pool"));
    assert_int_equal(run_cli(out, sizeof out, "alloc x.json --aliasing any"), 2);
    char bad[300];
    snprintf(bad, sizeof bad, "%s/bad.json", tmpdir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{\"format\": \"tensorplan-graph\", \"version\": 1, \"inputs\": [], \"outputs\": [],"
          " \"nodes\": [{\"id\": 0, \"name\": \"a\", \"op\": \"add\", \"shape\": [4,1,1,1],"
          " \"dtype\": \"f32\", \"backend\": \"cpu\", \"src\": [0, 0]}]}",
          f);
    fclose(f);
    assert_int_equal(run_cli(out, sizeof out, "alloc '%s'", bad), 3);
    assert_non_null(strstr(out, "nodes[0]"));
    assert_int_equal(run_cli(out, sizeof out, "model nosuchmodel"), 2);
    assert_int_equal(run_cli(out, sizeof out, "model tiny --prompt 0"), 2);
}

/* The malformed-graph classes the command must refuse through the CLI: exit 3, nothing on
 * stdout, one line on stderr naming the file, the JSON path and what was expected, and no
 * plan file written. */
static void malformed_graphs_one_line_exit_3(void **state)
{
    (void)state;
#define HEAD "{\"format\": \"tensorplan-graph\", \"version\": 1, \"n_ctx\": 4, "
#define X "{\"id\": 0, \"name\": \"x\", \"op\": \"input\", \"shape\": [4], \"dtype\": \"f32\", " \
          "\"src\": []}"
    static const struct {
        const char *text, *path;
    } cases[] = {
        /* wrong type */
        {HEAD "\"inputs\": [0], \"outputs\": [0], \"nodes\": [{\"id\": 0, \"name\": \"x\", "
              "\"op\": \"input\", \"shape\": \"4\", \"dtype\": \"f32\", \"src\": []}]}",
         "nodes[0].shape"},
        /* unknown op */
        {HEAD "\"inputs\": [0], \"outputs\": [1], \"nodes\": [" X ", {\"id\": 1, \"name\": "
              "\"y\", \"op\": \"conv2d\", \"shape\": [4], \"dtype\": \"f32\", \"src\": [0]}]}",
         "nodes[1].op"},
        /* a source id not smaller than the node's (a self-loop, the smallest cycle) */
        {HEAD "\"inputs\": [0], \"outputs\": [1], \"nodes\": [" X ", {\"id\": 1, \"name\": "
              "\"y\", \"op\": \"silu\", \"shape\": [4], \"dtype\": \"f32\", \"src\": [1]}]}",
         "nodes[1].src[0]"},
        /* a kv op without its layer */
        {HEAD "\"inputs\": [0], \"outputs\": [1], \"nodes\": [" X ", {\"id\": 1, \"name\": "
              "\"k\", \"op\": \"kv_load\", \"shape\": [2, 4], \"dtype\": \"f32\", \"src\": []}]}",
         "nodes[1].layer"},
        /* shapes that do not fit the op */
        {HEAD "\"inputs\": [0], \"outputs\": [1], \"nodes\": [" X ", {\"id\": 1, \"name\": "
              "\"y\", \"op\": \"silu\", \"shape\": [8], \"dtype\": \"f32\", \"src\": [0]}]}",
         "nodes[1].src[0]"},
        /* a number no extent can be */
        {HEAD "\"inputs\": [0], \"outputs\": [0], \"nodes\": [{\"id\": 0, \"name\": \"x\", "
              "\"op\": \"input\", \"shape\": [1e300], \"dtype\": \"f32\", \"src\": []}]}",
         "nodes[0].shape[0]"},
        /* truncated */
        {HEAD "\"inputs\": [0], \"outputs\": [0], \"nodes\": [{\"id\": 0, \"na", "line 1"},
    };
#undef X
#undef HEAD
    static char out[16384];
    char graph[300], plan[300];
    snprintf(graph, sizeof graph, "%s/malformed.json", tmpdir);
    snprintf(plan, sizeof plan, "%s/malformed_plan.json", tmpdir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(graph, "w");
        assert_non_null(f);
        fputs(cases[i].text, f);
        fclose(f);
        int rc = run_cli(out, sizeof out, "alloc '%s' --plan '%s'", graph, plan);
        if (rc != 3)
            fail_msg("case %zu: exit %d, not 3: %s", i, rc, out);
        size_t len = strlen(out);
        const char *nl = strchr(out, '\n');
        if (!nl || nl != out + len - 1 || strncmp(out, "tensorplan: alloc: ", 19) != 0 ||
            !strstr(out, "malformed.json") || !strstr(out, cases[i].path) ||
            !strstr(out, "expected"))
            fail_msg("case %zu: not one line with the file, '%s' and 'expected': %s", i,
                     cases[i].path, out);
        assert_int_equal(access(plan, F_OK), -1);
    }
}

/* The figures `model` prints for one graph, restated: the lower bound of each aliasing
 * policy (tests/support/peak_oracle.h on that policy's plan) and the naive total (every
 * non-KV node's f32 bytes). */
static void expected_figures(size_t n_tokens, size_t *bound_sole, size_t *bound_last,
                             size_t *naive)
{
    tp_graph *g = tpt_qwen_graph(n_tokens);
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    tp_alloc_options o = tp_alloc_options_default();
    o.size_classes = 0;
    o.strategy = TP_STRATEGY_ARENA;
    assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
    *bound_sole = tpt_oracle_peak_live(g, a);
    o.aliasing = TP_ALIAS_LAST_CONSUMER;
    assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
    *bound_last = tpt_oracle_peak_live(g, a);
    *naive = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op != TP_OP_KV_STORE && g->nodes[i].op != TP_OP_KV_LOAD)
            *naive += tp_node_elements(&g->nodes[i]) * sizeof(float);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void model_report(void **state)
{
    (void)state;
    static char out[16384];
    assert_int_equal(run_cli(out, sizeof out, "model qwen2.5-0.5b --prompt 440"), 0);
    /* KV: 24 x 2 x 128 x 4096 x 2 bytes (the default f16), by arithmetic; f32 4 bytes, q8_0
     * 34 per 32 */
    char kv[64];
    snprintf(kv, sizeof kv, "of f16 = %zu bytes", (size_t)24 * 2 * 128 * 4096 * 2);
    assert_non_null(strstr(out, kv));
    static char other[16384];
    assert_int_equal(run_cli(other, sizeof other, "model qwen2.5-0.5b --prompt 440 --kv-type f32"),
                     0);
    snprintf(kv, sizeof kv, "of f32 = %zu bytes", (size_t)24 * 2 * 128 * 4096 * 4);
    assert_non_null(strstr(other, kv));
    assert_int_equal(run_cli(other, sizeof other, "model qwen2.5-0.5b --prompt 440 --kv-type q8_0"),
                     0);
    snprintf(kv, sizeof kv, "of q8_0 = %zu bytes", (size_t)24 * 2 * 128 / 32 * 34 * 4096);
    assert_non_null(strstr(other, kv));
    assert_int_equal(run_cli(other, sizeof other, "model qwen2.5-0.5b --kv-type q4_0"), 2);
    assert_int_equal(run_cli(other, sizeof other, "model qwen2.5-0.5b --ubatch 0"), 2);
    /* tiny's heads of 8 are no whole q8_0 blocks */
    assert_int_equal(run_cli(other, sizeof other, "model tiny --kv-type q8_0"), 2);
    assert_non_null(strstr(out, "prefill: 440 tokens"));
    assert_non_null(strstr(out, "nodes 440, live 416, dead 24"));
    assert_non_null(strstr(out, "nodes 437, live 413, dead 24"));
    assert_non_null(strstr(out, "arena    last-consumer"));
    /* the figures of both sections: lower bounds and naive totals */
    const size_t tokens[2] = { 440, 1 };
    for (size_t k = 0; k < 2; k++) {
        size_t sole, last, naive;
        expected_figures(tokens[k], &sole, &last, &naive);
        char line[160];
        snprintf(line, sizeof line, "peak live lower bound: %zu B (%.3f MB) sole-consumer, "
                 "%zu B (%.3f MB) last-consumer", sole, (double)sole / 1e6, last,
                 (double)last / 1e6);
        if (strstr(out, line) == NULL)
            fail_msg("expected \"%s\" in:\n%s", line, out);
        snprintf(line, sizeof line, "naive (every node its own buffer) %zu B", naive);
        assert_non_null(strstr(out, line));
    }
    /* docs/allocator.md: last-consumer lowers the prefill's bound from 27.3 to 20.3 MB */
    assert_non_null(strstr(out, "(27.262 MB) sole-consumer, 20278724 B (20.279 MB)"));
    /* a long prompt raises n_ctx: the context is max(n_ctx, prompt) */
    assert_int_equal(run_cli(out, sizeof out, "model tiny --prompt 50 --n-ctx 16"), 0);
    assert_non_null(strstr(out, "n_ctx 50"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decode_graph_plans_and_checks),
        cmocka_unit_test(prefill_graph_plans_and_checks),
        cmocka_unit_test(refusals),
        cmocka_unit_test(malformed_graphs_one_line_exit_3),
        cmocka_unit_test(model_report),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
