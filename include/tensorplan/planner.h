/* tensorplan: the runtime planner.
 *
 * Pure algorithms on plain arrays: offsets of tensors in one arena, the peak of live
 * bytes, transitive reduction of a topologically numbered DAG, and islands (connected
 * components with canonical labels). Every function is reentrant, allocates nothing the
 * caller must free, and writes its results into arrays the caller provides. A refused
 * input returns a status other than TP_OK and leaves a message for tp_last_error(). */
#ifndef TENSORPLAN_PLANNER_H
#define TENSORPLAN_PLANNER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tp_status {
    TP_OK = 0,
    TP_ERR_INVALID,   /* a precondition was violated; the input is refused          */
    TP_ERR_NOMEM,     /* an allocation failed                                       */
    TP_ERR_OVERFLOW,  /* a size, offset or count would not fit in size_t            */
    /* more may be added after these; keep these four values stable */
    TP_ERR_IO,        /* a file could not be read or written                        */
    TP_ERR_NOT_FOUND, /* a named object does not exist                              */
    TP_ERR_INFEASIBLE /* no solution exists within the given limits                 */
} tp_status;

const char *tp_status_name(tp_status status);   /* "TP_OK", "TP_ERR_INVALID", ... */
const char *tp_last_error(void);                /* message of this thread's last failure */

typedef struct tp_tensor_lifetime {
    size_t size;        /* bytes */
    size_t first_use;   /* node index, inclusive */
    size_t last_use;    /* node index, inclusive */
} tp_tensor_lifetime;

typedef struct tp_edge { size_t from, to; } tp_edge;

#define TP_NO_ISLAND ((size_t)-1)

/* Output pointers (arena_size, peak, reduced_count, island_count) must not be NULL; arrays may
 * be NULL when their count is 0. */

/* offsets[count] receives one offset per tensor; *arena_size the arena. Greedy, in decreasing
 * size (equal sizes in input order), best fit with the leading gap winning ties; zero-size
 * tensors get offset 0. Refuses first_use > last_use (TP_ERR_INVALID) and an offset + size
 * beyond SIZE_MAX (TP_ERR_OVERFLOW), naming the tensor. */
tp_status tp_plan_offsets(const tp_tensor_lifetime *tensors, size_t count,
                          size_t *offsets, size_t *arena_size);

/* The largest total size live at one node (lifetimes inclusive). Refuses as tp_plan_offsets;
 * TP_ERR_OVERFLOW when the live total exceeds SIZE_MAX. */
tp_status tp_peak_live_bytes(const tp_tensor_lifetime *tensors, size_t count, size_t *peak);

/* reduced has room for edge_count edges (the reduction is a subset of the input). Every edge
 * must satisfy from < to < node_count (TP_ERR_INVALID otherwise, "topological" in the message).
 * Output sorted by (from, to), duplicates collapsed. TP_ERR_NOMEM when the reachability bit
 * matrix (about (max to + 1)^2 / 8 bytes) cannot be allocated or addressed. */
tp_status tp_transitive_reduction(size_t node_count, const tp_edge *edges, size_t edge_count,
                                  tp_edge *reduced, size_t *reduced_count);

/* island_of[node_count] receives each node's island, or TP_NO_ISLAND. Island k is the one whose
 * smallest member is the k-th smallest. island_of doubles as the scratch parent array, so the
 * call allocates nothing. An incidence naming a node >= node_count is TP_ERR_INVALID. */
tp_status tp_islands(size_t node_count, const tp_edge *incidences, size_t incidence_count,
                     size_t *island_of, size_t *island_count);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_PLANNER_H */
