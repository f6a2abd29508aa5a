/* tensorplan alloc: plan where every node of a graph file lives, print the statistics and
 * optionally write the plan. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tensorplan/alloc.h"
#include "tensorplan/graph_io.h"
#include "tensorplan/plan_html.h"
#include "tensorplan/plan_io.h"

void tp_help_alloc(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_ALLOC, "GRAPH.json");
    fputs(
        "\n"
        "Runs the graph allocator on a graph file (format tensorplan-graph, written by\n"
        "'tensorplan graph --json'): liveness in build order with inputs and outputs pinned,\n"
        "inputs allocated first, buffers swept back to per-backend pools, in-place aliasing,\n"
        "dead nodes unmapped, two persistent KV regions per layer. Prints the statistics.\n"
        "\n",
        out);
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_ALLOC), 0);
    fputs(
        "\n"
        "output: nodes (live, in place, dead), buffers (activation, persistent, named by a\n"
        "node), bytes per backend, activation bytes next to the naive total (every node its\n"
        "own buffer) and two peaks: the lower bound (live node outputs at their exact sizes)\n"
        "and the peak of buffers held, the KV regions, the planning time.\n"
        "\n"
        "exit codes:\n"
        "  0  planned (and written)\n"
        "  1  runtime failure: the plan cannot be written, out of memory\n"
        "  2  bad command line\n"
        "  3  the graph file was refused (the message names the JSON path), or the graph\n"
        "     cannot be planned (a KV layer asked for at two sizes or on two backends)\n"
        "\n"
        "examples:\n"
        "  tensorplan graph qwen2.5-0.5b --tokens 1 --json g.json\n"
        "  tensorplan alloc g.json --plan p.json\n"
        "  tensorplan alloc g.json --strategy arena --aliasing last-consumer\n",
        out);
}

static double mb(size_t bytes)
{
    return (double)bytes / 1e6;
}

/* The statistics of the allocator's plan of PATH. */
static void print_stats(const char *path, const tp_alloc_options *o, const tp_allocator *a,
                        const char *plan_path)
{
    tp_alloc_options opts = *o;
    tp_plan_stats s = tp_alloc_stats(a);
    printf("%s: strategy %s, aliasing %s, %s\n", path, tp_alloc_strategy_name(opts.strategy),
           tp_alias_policy_name(opts.aliasing),
           opts.size_classes ? "size classes" : "exact sizes");
    printf("nodes %zu: %zu live (%zu in place), %zu dead\n", s.nodes, s.live_nodes,
           s.aliased_nodes, s.dead_nodes);
    printf("buffers %zu: %zu activation, %zu persistent; %zu named by nodes\n", s.buffers,
           s.activation_buffers, s.persistent_buffers, s.mapped_buffers);
    for (int b = 0; b < TP_MAX_BACKENDS; b++)
        if (s.buffers_per_backend[b])
            printf("  %-8s %zu buffers, %zu bytes\n", tp_backend_name(b),
                   s.buffers_per_backend[b], s.bytes_per_backend[b]);
    printf("activation bytes %zu (%.3f MB); naive %zu (%.3f MB)\n", s.activation_bytes,
           mb(s.activation_bytes), s.naive_bytes, mb(s.naive_bytes));
    printf("peak live (lower bound) %zu (%.3f MB); peak held %zu (%.3f MB)\n",
           s.peak_live_bytes, mb(s.peak_live_bytes), s.peak_held_bytes,
           mb(s.peak_held_bytes));
    size_t nkv = tp_alloc_kv_count(a), kv_elems = 0;
    int same = 1;
    for (size_t i = 0; i < nkv; i++) {
        tp_bufref k, v;
        tp_alloc_kv_at(a, i, NULL, &k, &v);
        if (i == 0)
            kv_elems = k.len;
        if (k.len != kv_elems || v.len != kv_elems)
            same = 0;
    }
    if (nkv && same)
        printf("persistent %zu bytes (%.1f MB): %zu KV regions of %zu elements (%zu "
               "layers)\n",
               s.persistent_bytes, mb(s.persistent_bytes), 2 * nkv, kv_elems, nkv);
    else
        printf("persistent %zu bytes (%.1f MB): %zu regions, %zu KV layers\n",
               s.persistent_bytes, mb(s.persistent_bytes), s.persistent_buffers, nkv);
    printf("plan time %.3f ms\n", s.plan_seconds * 1e3);
    if (plan_path)
        printf("plan written to %s\n", plan_path);
}

int tp_cmd_alloc(int argc, char **argv)
{
    tp_cli_args o;
    if (tp_cli_parse(TP_CMD_ALLOC, argc, argv, &o) != 0)
        return TP_EXIT_USAGE;
    const char *path = o.pos[0], *plan_path = o.opt[TP_OPT_PLAN_FILE].text;
    const char *html_path = o.opt[TP_OPT_HTML].text;
    const int explain = tp_cli_given(&o, TP_OPT_EXPLAIN);
    tp_alloc_options opts = tp_alloc_options_default();
    tp_cli_alloc_options(&o, &opts);
    if (tp_cli_given(&o, TP_OPT_EXACT_SIZES))
        opts.size_classes = 0;
    if (!path) {
        tp_cli_error("GRAPH.json is missing");
        return TP_EXIT_USAGE;
    }
    tp_graph *g = NULL;
    tp_status st = tp_graph_load_json(path, &g);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return st == TP_ERR_IO ? TP_EXIT_ERROR : TP_EXIT_BAD_INPUT;
    }
    tp_allocator *a = NULL;
    if (tp_allocator_create_host(&a) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        tp_graph_destroy(g);
        return TP_EXIT_ERROR;
    }
    int rc = TP_EXIT_OK;
    st = tp_alloc_graph(a, g, &opts);
    if (st != TP_OK) {
        tp_cli_error("%s: %s", path, tp_last_error());
        rc = st == TP_ERR_NOMEM ? TP_EXIT_ERROR : TP_EXIT_BAD_INPUT;
    }
    if (rc == TP_EXIT_OK && plan_path && tp_plan_save_json(a, plan_path) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        rc = TP_EXIT_ERROR;
    }
    if (rc == TP_EXIT_OK)
        print_stats(path, &opts, a, plan_path);
    if (rc == TP_EXIT_OK && (html_path || explain) &&
        tp_html_alloc_report(html_path, explain ? stdout : NULL, path, a) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        rc = TP_EXIT_ERROR;
    }
    if (rc == TP_EXIT_OK && html_path)
        printf("picture written to %s\n", html_path);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
    return rc;
}
