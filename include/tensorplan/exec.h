/* tensorplan: the scheduler (docs/backends.md, "The scheduler") and the execution trace.
 *
 * Example, given an allocator `tp_allocator *alloc` whose current plan is for
 * `const tp_graph *graph`, its inputs filled (alloc.h), and `const tp_weights *weights`:
 *
 *     tp_trace *trace;
 *     tp_exec_stats stats;
 *     if (tp_trace_open("trace.json", &trace) != TP_OK)
 *         return 1;
 *     tp_exec_options options = tp_exec_options_default();
 *     options.trace = trace;                         // NULL: no trace
 *     tp_status st = tp_execute(alloc, graph, weights, &options, &stats);
 *     if (tp_trace_close(trace) != TP_OK && st == TP_OK)   // completes the JSON document
 *         st = TP_ERR_IO;
 *     if (st == TP_OK)
 *         printf("%zu nodes in %zu splits\n", stats.executed, stats.splits);
 *     return st == TP_OK ? 0 : 1;                    // outputs: tp_alloc_read (alloc.h)
 *
 * Executes the allocator's current graph through its plan. Splits are maximal runs of
 * consecutive nodes (build order) on one backend. At a split whose backend differs from the
 * previous split's, the previous backend is synchronised and every source living on another
 * backend is copied into its staging window on this one (docs/allocator.md, "Staging"). Inputs
 * (host-filled) and nodes without a buffer (dead) are skipped; kv_store, kv_load and attn
 * get their layer's K/V pair from the allocator; a node whose buffer is on another backend
 * than its split is refused. Every backend is synchronised at the end. The scheduler
 * allocates nothing itself: staging windows come from the allocator. */
#ifndef TENSORPLAN_EXEC_H
#define TENSORPLAN_EXEC_H

#include <stddef.h>

#include "tensorplan/alloc.h"
#include "tensorplan/api.h"
#include "tensorplan/graph.h"
#include "tensorplan/status.h"
#include "tensorplan/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tp_trace tp_trace;

typedef struct tp_exec_options {
    /* NULL: no trace. With a trace, each node's backend is synchronised after the node so
     * that its output can be read before a later node reuses the buffer. */
    tp_trace *trace;
    /* 1: each node's output is read once it has run (its backend synchronised), and the
     * first node with a NaN or an infinity stops the run: TP_ERR_NOT_FINITE, the message
     * naming the node, its op and the element. For finding where a forward went wrong;
     * it costs a synchronisation and a copy per node. */
    int check_finite;
} tp_exec_options;

typedef struct tp_exec_stats {
    size_t executed;        /* nodes handed to a backend                                 */
    size_t skipped_inputs;  /* host-filled                                               */
    size_t skipped_dead;    /* no buffer                                                 */
    size_t splits;
    size_t syncs;           /* synchronize calls                                         */
    size_t staged;          /* staging copies made                                       */
    double seconds;
} tp_exec_stats;

TP_API tp_exec_options tp_exec_options_default(void);

/* Executes graph, which must be alloc's current plan. weights supplies mul_mat, rms_norm
 * and embedding tensors by name. stats may be NULL. */
TP_API tp_status tp_execute(tp_allocator *alloc, const tp_graph *graph, const tp_weights *weights,
                            const tp_exec_options *options, tp_exec_stats *stats);

/* --- the trace (docs/backends.md, "Observability") ---------------------------------------------------
 * A JSON file: {"format": "tensorplan-trace", "version": 1, "runs": [ ... ]}, one run per
 * executed graph, each with its nodes in execution order: id, name, op, backend, buffer
 * window, shape, summary statistics (min, max, mean, rms, nan, inf over the output window)
 * and a down-sampled sample of at most TP_TRACE_SAMPLE evenly spaced values. Inputs appear
 * with "host_filled": true and their integer values when they are i32. */
#define TP_TRACE_SAMPLE 16

TP_API tp_status tp_trace_open(const char *path, tp_trace **out);
/* Finishes the JSON document and closes the file; NULL is a no-op. */
TP_API tp_status tp_trace_close(tp_trace *trace);
TP_API size_t tp_trace_runs(const tp_trace *trace);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_EXEC_H */
