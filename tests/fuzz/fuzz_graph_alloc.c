/* Fuzzing harness: graph JSON (tp_graph_parse_json) into the allocator under every strategy,
 * aliasing policy and size-class setting; every plan made is checked by the independent plan
 * checker of tests/support/plan_check.c. Graphs whose buffers would take more than 64 MiB
 * are read but not planned (the host backends allocate what the plan needs). */
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "support/plan_check.h"
#include "tensorplan/alloc.h"
#include "tensorplan/graph.h"
#include "tensorplan/graph_io.h"
#include "tensorplan/status.h"

#define GRAPH_ALLOC_MAX_ELEMS ((size_t)16 << 20) /* f32 elements over all nodes and KV */

static int graph_alloc_small(const tp_graph *g)
{
    size_t total = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const size_t e = tp_node_elements(&g->nodes[i]);
        if (e == 0 || e > GRAPH_ALLOC_MAX_ELEMS - total)
            return 0;
        total += e;
    }
    return g->n_ctx >= 0 && (size_t)g->n_ctx <= 4096;
}

static int fuzz_graph_alloc(const uint8_t *data, size_t size)
{
    static const tp_alloc_strategy strategies[] = { TP_STRATEGY_POOL, TP_STRATEGY_ARENA,
                                                    TP_STRATEGY_NAIVE };
    static const tp_alias_policy policies[] = { TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                                TP_ALIAS_NONE };
    tp_graph *g = NULL;
    if (tp_graph_parse_json((const char *)data, size, "fuzz.json", &g) != TP_OK) {
        TPF_CHECK(g == NULL, "a refused graph was returned");
        TPF_CHECK(tp_last_error()[0] != '\0', "graph refused without a message");
        return 0;
    }
    if (!graph_alloc_small(g)) {
        tp_graph_destroy(g);
        return 0;
    }
    tp_allocator *a = NULL;
    if (tp_allocator_create_host(&a) != TP_OK) {
        tp_graph_destroy(g);
        return 0;
    }
    for (size_t si = 0; si < 3; si++)
        for (size_t pi = 0; pi < 3; pi++)
            for (int classes = 0; classes < 2; classes++) {
                tp_alloc_options o = tp_alloc_options_default();
                o.strategy = strategies[si];
                o.aliasing = policies[pi];
                o.size_classes = classes;
                if (tp_alloc_graph(a, g, &o) != TP_OK) {
                    TPF_CHECK(tp_last_error()[0] != '\0', "plan refused without a message");
                    continue;
                }
                tpt_plan p;
                if (tpt_plan_from_allocator(a, &p) != 0)
                    continue;
                char why[512] = "";
                const int ok = tpt_check_plan(g, &p, why, sizeof why);
                tpt_plan_free(&p);
                TPF_CHECK(ok, "%s/%s classes %d: %s", tp_alloc_strategy_name(o.strategy),
                          tp_alias_policy_name(o.aliasing), classes, why);
            }
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
    return 0;
}

TPF_ENTRY(fuzz_graph_alloc)
