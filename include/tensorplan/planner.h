/* tensorplan: the runtime planner.
 *
 * Example (plain arrays in, plain arrays out: nothing to create or destroy):
 *
 *     tp_tensor_lifetime t[] = {{100, 0, 1}, {80, 1, 2}, {60, 2, 3}}; // bytes, first, last use
 *     size_t offsets[3], arena;
 *     tp_plan_options options;
 *     tp_plan_options_init(&options);
 *     options.strategy = TP_PLAN_PORTFOLIO;
 *     if (tp_plan_offsets_ex(t, 3, &options, offsets, &arena, NULL) != TP_OK)
 *         return 1;                                   // tp_last_error() names the tensor
 *     // 0, 100, 0 and 180: the first and the last never live at once
 *     printf("%zu %zu %zu, arena %zu\n", offsets[0], offsets[1], offsets[2], arena);
 *
 * Pure algorithms on plain arrays: offsets of tensors in one arena, the peak of live
 * bytes, transitive reduction of a topologically numbered DAG, and islands (connected
 * components with canonical labels). Every function is reentrant, allocates nothing the
 * caller must free, and writes its results into arrays the caller provides. A refused
 * input returns a status other than TP_OK and leaves a message for tp_last_error(). */
#ifndef TENSORPLAN_PLANNER_H
#define TENSORPLAN_PLANNER_H

#include <stddef.h>

#include "tensorplan/api.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif


typedef struct tp_tensor_lifetime {
    size_t size;        /* bytes */
    size_t first_use;   /* node index, inclusive */
    size_t last_use;    /* node index, inclusive */
} tp_tensor_lifetime;

typedef struct tp_edge { size_t from, to; } tp_edge;

#define TP_NO_ISLAND ((size_t)-1)

/* Output pointers (arena_size, peak, reduced_count, island_count) must not be NULL; arrays may
 * be NULL when their count is 0. */

/* offsets[count] receives one offset per tensor; *arena_size the arena. May start threads
 * (see "Threads" below; tp_plan_offsets_ex with options.threads = 1 does not). Greedy, in decreasing
 * size (equal sizes in input order), best fit with the leading gap winning ties; zero-size
 * tensors get offset 0. Refuses first_use > last_use (TP_ERR_INVALID) and an offset + size
 * beyond SIZE_MAX (TP_ERR_OVERFLOW), naming the tensor. */
TP_API tp_status tp_plan_offsets(const tp_tensor_lifetime *tensors, size_t count,
                                 size_t *offsets, size_t *arena_size);

/* The largest total size live at one node (lifetimes inclusive). Refuses as tp_plan_offsets;
 * TP_ERR_OVERFLOW when the live total exceeds SIZE_MAX. */
TP_API tp_status tp_peak_live_bytes(const tp_tensor_lifetime *tensors, size_t count, size_t *peak);

/* reduced has room for edge_count edges (the reduction is a subset of the input). Every edge
 * must satisfy from < to < node_count (TP_ERR_INVALID otherwise, "topological" in the message).
 * Output sorted by (from, to), duplicates collapsed. TP_ERR_NOMEM when the reachability bit
 * matrix (about (max to + 1)^2 / 8 bytes) cannot be allocated or addressed. */
TP_API tp_status tp_transitive_reduction(size_t node_count, const tp_edge *edges, size_t edge_count,
                                         tp_edge *reduced, size_t *reduced_count);

/* island_of[node_count] receives each node's island, or TP_NO_ISLAND. Island k is the one whose
 * smallest member is the k-th smallest. island_of doubles as the scratch parent array, so the
 * call allocates nothing. An incidence naming a node >= node_count is TP_ERR_INVALID. */
TP_API tp_status tp_islands(size_t node_count, const tp_edge *incidences, size_t incidence_count,
                            size_t *island_of, size_t *island_count);


/* ---- Planner options: strategies, capacity, budgets (tp_plan_offsets_ex) ---- */

typedef enum tp_plan_strategy {
    TP_PLAN_GREEDY = 0, /* the rule of tp_plan_offsets (decreasing size, best fit)        */
    TP_PLAN_PORTFOLIO,  /* the best of several deterministic greedy orders and gap rules
                           (on every processor from 4,096 tensors; same plan as on one) */
    TP_PLAN_EXACT       /* search: minimal arena, or a proof about the capacity           */
} tp_plan_strategy;

/* What a progress callback sees (about every 0.1 s, on the calling thread): during a
 * greedy pass that runs that long, between the passes of a portfolio, and during a search
 * (the time sweep of tight problems and its cuts included). nodes never decrease. */
typedef struct tp_plan_progress {
    int have_best;                /* 1 once some plan is known                          */
    size_t best_arena;            /* arena of the best plan so far (when have_best)     */
    size_t lower_bound;           /* no plan has a smaller arena                        */
    double elapsed_seconds;
    unsigned long long nodes;     /* search nodes explored so far                       */
    size_t placed, to_place;      /* during a greedy pass: tensors placed of to_place;
                                     both 0 otherwise                                   */
} tp_plan_progress;

/* A time range inside a tensor's lifetime during which it needs only part of its space: the
 * bytes [window_lo, window_hi) counted from its offset (has_window 1), or none of them
 * (has_window 0). MiniMalloc's "gaps" (docs/planner.md, "Alignment and gaps"). */
typedef struct tp_tensor_gap {
    size_t tensor;                /* index into the tensors                              */
    size_t first, last;           /* nodes, inclusive, inside [first_use, last_use]      */
    int has_window;
    size_t window_lo, window_hi;  /* window_lo <= window_hi <= size (when has_window)     */
} tp_tensor_gap;

typedef struct tp_plan_options {
    size_t alignment;             /* every offset a multiple of it; a power of two; 0 = 1 */
    tp_plan_strategy strategy;
    size_t capacity;              /* 0 = none; else the arena must fit (decision mode)  */
    double time_limit_seconds;    /* 0 = none                                           */
    void (*progress)(const struct tp_plan_progress *p, void *user); /* may be NULL     */
    void *user;
    /* Threads the call may use, the calling one included: 0 = every processor online (where
     * the input is large enough to pay for them, see "Threads" below); 1 = the calling thread
     * only, no thread is started; N = at most N. The plan does not depend on it. */
    unsigned threads;
    /* Per tensor (docs/planner.md, "Alignment and gaps"); NULL / 0 = none. alignments[i] >= 1
     * (0 = 1) makes tensor i's offset a multiple of it as well as of `alignment`; any
     * positive value, not only powers of two. gaps name their tensor; a tensor's gaps must
     * not overlap each other. Two tensors then conflict as MiniMalloc defines it: at every
     * node where both use a window, one lies wholly above the other, and the same one at
     * every such node. With either, every strategy runs on the calling thread. TP_PLAN_EXACT
     * searches with gaps when no pair has exactly one of A, B > 0 (docs/exact-solver.md,
     * "Gaps"); otherwise it returns the portfolio's plan, proven only at the peak. */
    const size_t *alignments;
    const tp_tensor_gap *gaps;
    size_t gap_count;
} tp_plan_options;

typedef struct tp_plan_report {
    tp_plan_strategy strategy;    /* the strategy that produced the returned plan       */
    const char *method;           /* static name of the order or search that won        */
    int proven_optimal;           /* the arena is the minimum over all plans            */
    int proven_infeasible;        /* with a capacity: no plan fits, proven              */
    int timed_out;                /* the time limit ended the work (result may vary)    */
    unsigned long long nodes_explored;
    double seconds;
    size_t lower_bound;           /* peak of live bytes (raised when a search proves more) */
    size_t arena_size;            /* of the returned plan (0 when none is returned)     */
    /* Always 0: the exact search takes every problem with gaps (docs/exact-solver.md,
     * "Gaps"); kept so that programs reading it still build */
    int search_skipped;
} tp_plan_report;

/* Threads. Only tp_plan_offsets and tp_plan_offsets_ex start threads; every other call of
 * the planner runs on the calling thread alone. Both join every thread they started before
 * they return, and the plan is the same on any number of threads.
 * - The portfolio (TP_PLAN_PORTFOLIO, and TP_PLAN_EXACT, which starts with it) runs its
 *   greedy orders on up to min(options.threads, processors online, 16) threads from 4,096
 *   tensors on (options.threads 0: no cap).
 * - A greedy pass that places by the address-ordered scan (long lifetimes, AVX2 or AVX-512)
 *   shares the scans among up to min(options.threads, processors, 16) threads from 16,384
 *   tensors of non-zero size; tp_plan_offsets and TP_PLAN_GREEDY may do so. The exact search
 *   runs on the calling thread.
 * "Processors" are those online that the process may run on (its affinity mask: under
 * `taskset -c 0` one), and no call starts more threads than that, whatever options.threads
 * asks. A waiting thread spins briefly, then sleeps; a scan whose helpers keep it waiting
 * longer than it works (the processors are busy with other work) goes on alone.
 * To keep a call single-threaded, call tp_plan_offsets_ex with options.threads = 1
 * (TP_PLAN_GREEDY then gives tp_plan_offsets's plan). */

/* tp_peak_live_bytes where options' gaps hold: at each node a tensor counts the bytes of its
 * window there (none in a gap without one). options NULL or without gaps: the same as
 * tp_peak_live_bytes. Refuses gaps as tp_plan_offsets_ex does. */
TP_API tp_status tp_peak_live_bytes_ex(const tp_tensor_lifetime *tensors, size_t count,
                                       const tp_plan_options *options, size_t *peak);

/* Defaults: alignment 1, TP_PLAN_GREEDY, no capacity, no time limit, no callback, threads 0
 * (every processor). */
TP_API void tp_plan_options_init(tp_plan_options *options);

/* Like tp_plan_offsets, with options (NULL = defaults; then the result equals
 * tp_plan_offsets's). report may be NULL. With a capacity, TP_ERR_INFEASIBLE when no plan
 * within it was found: report->proven_infeasible says whether that is proven (exact search
 * run to the end, or the peak alone exceeds it) or the budget ran out; offsets then hold the
 * best plan found, which exceeds the capacity. Without a capacity TP_PLAN_EXACT minimises the
 * arena and returns the best plan so far when the time limit ends (report->timed_out). Same
 * input and options give the same result unless a time limit ran out. The time limit is
 * checked between the greedy orders of a portfolio, every few hundred placements inside
 * every greedy pass (the first one included), while a search builds its overlap lists, and
 * about every millisecond of work in a search (never fewer than once per 1,024 nodes). When
 * it runs out before the first greedy pass has placed every tensor there is no plan: the call
 * returns TP_ERR_TIMEOUT ("time limit ... reached" in the message, report->timed_out set,
 * offsets 0); otherwise it returns the best complete plan so far. The
 * exact search has no limit on the number of tensors beyond its conflict lists (2^26 pairs;
 * above that TP_PLAN_EXACT returns the portfolio's plan, not proven). The algorithm:
 * docs/exact-solver.md. */
TP_API tp_status tp_plan_offsets_ex(const tp_tensor_lifetime *tensors, size_t count,
                                    const tp_plan_options *options, size_t *offsets,
                                    size_t *arena_size, tp_plan_report *report);

/* The per-tensor constraints of options (alignments and gaps) checked once, so that any
 * placement can be tested pair by pair against them: a solution checker's view of the rule
 * that tp_plan_offsets_ex plans by (docs/planner.md, "Alignment and gaps"). create refuses
 * what tp_plan_offsets_ex refuses (TP_ERR_INVALID naming the tensor or gap, TP_ERR_OVERFLOW);
 * tensors must outlive the object. */
typedef struct tp_plan_constraints tp_plan_constraints;
TP_API tp_status tp_plan_constraints_create(const tp_tensor_lifetime *tensors, size_t count,
                                            const tp_plan_options *options,
                                            tp_plan_constraints **out);
TP_API void tp_plan_constraints_destroy(tp_plan_constraints *c);

/* 1 when tensors i and j (of non-zero size) may sit at offsets oi and oj: at every node both
 * are live, the bytes each uses there (its whole size, or its gap window) do not meet. */
TP_API int tp_plan_constraints_compatible(const tp_plan_constraints *c, size_t i, size_t oi,
                                          size_t j, size_t oj);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_PLANNER_H */
