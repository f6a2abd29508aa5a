/* Internal to the planner, its one private header: argument checks, lifetime ranks, the greedy
 * passes (interval tree, address-ordered scan, general), the portfolio, the exact search and
 * the bounded-memory transitive reduction. Tests and benchmarks reach the pieces through it. */
#ifndef TP_PLANNER_INTERNAL_H
#define TP_PLANNER_INTERNAL_H

#include "tensorplan/planner.h"

#include "common/clock.h"

#include <stddef.h>
#include <stdint.h>

/* Starts loading the cache line at p. The greedy passes read data scattered over tens of
 * megabytes; loading the next placement's early overlaps its cache misses with the current
 * one. */
#if defined(__GNUC__)
#define TP_PREFETCH(p) __builtin_prefetch(p)
#else
#define TP_PREFETCH(p) ((void)(p))
#endif

/* How a greedy pass chooses among the free gaps that fit. */
typedef enum tp_gap_rule {
    TP_GAP_BEST_FIT = 0, /* docs/planner.md: smallest fitting gap, lowest on a tie */
    TP_GAP_FIRST_FIT     /* lowest fitting gap                                          */
} tp_gap_rule;

/* Progress and deadline of one greedy pass: tick (may be NULL) is called from the thread
 * running the pass, and a pass still running at the deadline (CLOCK_MONOTONIC seconds, 0:
 * none) stops with TP_ERR_TIMEOUT (tp_greedy_timeout). */
typedef struct tp_greedy_ticker {
    void (*tick)(size_t placed, size_t to_place, void *user); /* about every 0.1 s */
    void *user;
    double deadline;
} tp_greedy_ticker;

/* What a pass calls every few hundred placements (placed of to_place so far): ticks about
 * every 0.1 s since *last_tick, and returns 1 when the deadline has passed. */
static inline int tp_ticker_poll(const tp_greedy_ticker *t, size_t placed, size_t to_place,
                                 double *last_tick)
{
    if (t == NULL || (t->tick == NULL && t->deadline <= 0))
        return 0;
    const double now = tp_clock_seconds();
    if (t->deadline > 0 && now >= t->deadline)
        return 1;
    if (t->tick != NULL && now - *last_tick >= 0.1) {
        t->tick(placed, to_place, t->user);
        *last_tick = now;
    }
    return 0;
}

/* The refusal of a pass stopped by its deadline (TP_ERR_TIMEOUT, says how far it got). */
tp_status tp_greedy_timeout(size_t placed, size_t to_place);

/* Places the tensors named by order[0..n_order) in that order, each into a free gap of the
 * address space left by already placed tensors whose lifetimes intersect its own, or on top of
 * the last such block when no gap fits (the rule of docs/planner.md, with every offset
 * rounded up to a multiple of alignment). Tensors not named in order keep offsets[i] = 0 and
 * are not considered placed (order must name only tensors of non-zero size, each once). Near
 * O(n log n) when lifetimes are local: placed tensors live in a segment tree over time whose
 * nodes keep coalesced address blocks (tp_tree_place). When many tensors are live at once and
 * the processor has AVX2 or AVX-512, an address-ordered scan is faster (tp_scan_place); the
 * offsets are the same. Lifetimes must already be checked. ticker may be NULL; otherwise its
 * tick is called from this thread about every 0.1 s of the pass. */
tp_status tp_greedy_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                          size_t n_order, size_t alignment, tp_gap_rule rule,
                          const tp_greedy_ticker *ticker, size_t *offsets, size_t *arena_size);

/* The greedy pass of tp_greedy_place with the interval tree over time (greedy_tree.c), whatever
 * the lifetimes. */
tp_status tp_tree_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                        size_t n_order, size_t alignment, tp_gap_rule rule,
                        const tp_greedy_ticker *ticker, size_t *offsets, size_t *arena_size);

/* The leaves of tp_lifetime_ranks for the tensors of an order: lo[k] and hi[k] for order[k],
 * n_leaves distinct first uses. */
typedef struct tp_leaf_ranks {
    size_t *lo, *hi;
    size_t n_leaves;
} tp_leaf_ranks;

/* How the bucket pass keeps placed tensors: buckets of 2^shift leaves, and lifetimes of at
 * least long_from leaves in one list apart (SIZE_MAX: none), which every placement reads. */
typedef struct tp_bucket_shape {
    unsigned shift;
    size_t long_from;
} tp_bucket_shape;

/* The greedy pass of tp_greedy_place with placed tensors kept in time buckets
 * (greedy_buckets.c): the same offsets whatever the shape, fast when lifetimes are short next
 * to the run. ranks from tp_lifetime_ranks over the same order, shape from tp_bucket_choose. */
tp_status tp_bucket_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                          size_t n_order, const tp_leaf_ranks *ranks,
                          const tp_bucket_shape *shape, size_t alignment, tp_gap_rule rule,
                          const tp_greedy_ticker *ticker, size_t *offsets, size_t *arena_size);
/* The best shape for these ranks and the estimated microseconds per placement of
 * tp_bucket_place with it (*us_per_placement < 0: the buckets cannot hold these tensors). */
tp_status tp_bucket_choose(const tp_leaf_ranks *ranks, size_t n, tp_bucket_shape *shape,
                           double *us_per_placement);
/* Whether tp_greedy_place takes the bucket pass (est->buckets = 1, with *shape) rather than the
 * tree for these tensors once the scan is ruled out: the bucket estimate against the tree's
 * model, both in microseconds per placement. */
typedef struct tp_pass_estimate {
    double bucket_us, tree_us;
    int buckets;
} tp_pass_estimate;
tp_status tp_buckets_pay_off(const tp_tensor_lifetime *tensors, const size_t *order,
                             size_t n_order, const tp_leaf_ranks *ranks, tp_bucket_shape *shape,
                             tp_pass_estimate *est);

/* x rounded up to a multiple of a (> 0); x itself with *overflow = 1 when that passes
 * SIZE_MAX. The greedy passes' rounding of a gap's start. */
static inline size_t tp_round_up_flag(size_t x, size_t a, int *overflow)
{
    const size_t r = x % a;
    if (r == 0)
        return x;
    if (x > SIZE_MAX - (a - r)) {
        *overflow = 1;
        return x;
    }
    return x + (a - r);
}

/* The orders a greedy pass can take (the portfolio's), each a list of sort keys with the
 * input order breaking ties. */
typedef enum tp_order_kind {
    TP_ORDER_SIZE = 0, /* decreasing size: the seed's order (tp_plan_offsets)    */
    TP_ORDER_AREA,     /* decreasing size x lifetime length                     */
    TP_ORDER_LENGTH,   /* decreasing lifetime length, then decreasing size       */
    TP_ORDER_START,    /* increasing first use, then decreasing size             */
    TP_ORDER_END,      /* decreasing last use, then decreasing size              */
} tp_order_kind;

typedef struct tp_order_key {
    size_t k1, k2, index;
} tp_order_key;

/* order[] receives the tensors of non-zero size in the given order; returns their number.
 * keys is scratch with room for count entries. */
size_t tp_greedy_order(const tp_tensor_lifetime *t, size_t count, tp_order_kind kind,
                       tp_order_key *keys, size_t *order);

/* tp_greedy_place on a given number of threads (0: as it chooses). The portfolio, which runs
 * several passes at once, asks for one each. */
tp_status tp_greedy_place_threads(const tp_tensor_lifetime *tensors, size_t count,
                                  const size_t *order, size_t n_order, size_t alignment,
                                  tp_gap_rule rule, const tp_greedy_ticker *ticker,
                                  unsigned threads, size_t *offsets, size_t *arena_size);

/* The greedy pass of tp_greedy_place by a scan of every placed tensor in address order for
 * every placement (greedy_scan.c): the same offsets, O(n^2) but at about 0.1 ns per tensor and
 * processor, which beats the interval tree when lifetimes are long. `threads` threads share the
 * scans (0: tp_scan_default_threads). Declines (*declined = 1, nothing placed, TP_OK) when an
 * address would reach 4 GiB - alignment, when alignment is not a power of two up to
 * TP_SCAN_MAX_ALIGN, or with 2^32 - 1 tensors or more; tp_greedy_place then uses the tree. */
typedef enum tp_scan_kernel {
    TP_SCAN_AUTO = 0, /* the best the processor has (tp_scan_level)                   */
    TP_SCAN_GENERIC,  /* the portable code as compiled for the target (tests)         */
    TP_SCAN_AVX2      /* the AVX2 form, if the processor has it                        */
} tp_scan_kernel;
#define TP_SCAN_MAX_ALIGN ((size_t)1 << 16)
#define TP_SCAN_THREADS_FROM 16384 /* fewer tensors: one thread */
tp_status tp_scan_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                        size_t n_order, size_t alignment, tp_gap_rule rule,
                        const tp_greedy_ticker *ticker, unsigned threads, tp_scan_kernel kernel,
                        size_t *offsets, size_t *arena_size, int *declined);
/* Processors online that this process may run on (its affinity mask, on Linux): what every
 * thread count of the planner is capped by (cpus.c). */
unsigned tp_planner_cpus(void);
/* 2: AVX-512, 1: AVX2, 0: neither (or not x86-64 with GCC). */
int tp_scan_level(void);
unsigned tp_scan_default_threads(size_t n_order);

/* Whether every tensor of the order is live at a common node (greedy_clique.c). */
int tp_is_clique(const tp_tensor_lifetime *tensors, const size_t *order, size_t n_order);
/* tp_greedy_place's offsets for a clique, in O(n): each tensor on top of the one before, at
 * the arena rounded up to the alignment (no gap ever fits). Refuses an overflow like it. */
tp_status tp_clique_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                          size_t n_order, size_t alignment, const tp_greedy_ticker *ticker,
                          size_t *offsets, size_t *arena_size);
/* A factor of every offset tp_greedy_place can give for this order and alignment (1 when none
 * is known): sizes, alignment and addresses divided by it give the same plan, divided by it.
 * *scaled_alignment receives the alignment so divided. */
size_t tp_size_granule(const tp_tensor_lifetime *tensors, const size_t *order, size_t n_order,
                       size_t alignment, size_t *scaled_alignment);

/* The portfolio of tp_plan_offsets_ex (TP_PLAN_PORTFOLIO, no capacity or time limit) run on
 * `threads` threads, the calling one included. The plan must not depend on the thread count;
 * tests compare several counts through this. *method receives the winning order's name. */
tp_status tp_plan_portfolio_threads(const tp_tensor_lifetime *tensors, size_t count,
                                    size_t alignment, unsigned threads, size_t *offsets,
                                    size_t *arena_size, const char **method);

/* tp_plan_offsets semantics (decreasing size, stable), through tp_greedy_place. */
tp_status tp_plan_offsets_fast(const tp_tensor_lifetime *tensors, size_t count,
                               size_t *offsets, size_t *arena_size);

/* The refusals shared by both reductions: NULL arrays with edges, an edge against the
 * topological numbering ("topological" in the message), a reachability matrix or edge scratch
 * that cannot be addressed. *rows receives max to + 1; without edges also *reduced_count = 0,
 * and there is nothing more to do. */
tp_status tp_reduction_check(size_t node_count, const tp_edge *edges, size_t edge_count,
                             const tp_edge *reduced, size_t *reduced_count, size_t *rows);

/* Copies the edges into sorted, sorts them by (from, to) and collapses duplicates; returns how
 * many remain. */
size_t tp_reduction_sort_edges(const tp_edge *edges, size_t edge_count, tp_edge *sorted);

/* The dense seed reduction (n^2/8 bytes), kept as the reference for the blocked one. */
tp_status tp_transitive_reduction_dense(size_t node_count, const tp_edge *edges,
                                        size_t edge_count, tp_edge *reduced,
                                        size_t *reduced_count);

/* The reduction with successors visited in ascending order and a successor's row folded only
 * when its edge is kept. Rows exist only for nodes still to be read, and hold one block of
 * columns at a time, as wide as memory_budget bytes (at most 32 MiB, to stay in cache) allow
 * for the rows live at once, and at least 64 columns; so memory stays below memory_budget
 * whatever node_count is (beyond one 64-column block). Output identical to the dense one. */
tp_status tp_transitive_reduction_budget(size_t node_count, const tp_edge *edges,
                                         size_t edge_count, tp_edge *reduced,
                                         size_t *reduced_count, size_t memory_budget);

/* What a blocked reduction did: the most rows live at once (each one slot of `columns` bits),
 * the columns per block, and the passes over the graph (one per block). */
typedef struct tp_reduction_stats {
    size_t live_rows;
    size_t columns;
    size_t passes;
} tp_reduction_stats;

/* tp_transitive_reduction_budget, and *stats (may be NULL) says how it went. */
tp_status tp_transitive_reduction_stats(size_t node_count, const tp_edge *edges,
                                        size_t edge_count, tp_edge *reduced,
                                        size_t *reduced_count, size_t memory_budget,
                                        tp_reduction_stats *stats);

/* Default memory budget of tp_transitive_reduction: 1 GiB of reachability bits. */
#define TP_REDUCTION_DEFAULT_BUDGET ((size_t)1 << 30)

/* The exact search (exact.c). It looks for plans whose arena is at most params->limit;
 * with minimise set, every plan found lowers the limit to its arena - 1 and the search goes on,
 * so the last plan found is optimal when the search completes. */
typedef struct tp_exact_params {
    size_t alignment;           /* 0 or 1: none                                           */
    const size_t *alignments;   /* NULL, or per tensor (0, 1: none), combined with it     */
    size_t limit;               /* arena must be <= limit                                 */
    int minimise;
    double deadline;            /* CLOCK_MONOTONIC seconds; 0 = none                      */
    unsigned long long node_limit; /* 0 = none; a deterministic budget (tests)          */
    double start;               /* CLOCK_MONOTONIC seconds at the start of the whole call */
    size_t lower_bound;         /* for progress reports and an early stop                 */
    size_t known_best;          /* for progress reports: best arena known so far, 0 = none */
    unsigned long long nodes_before; /* for progress reports: nodes of earlier searches  */
    void (*progress)(const struct tp_plan_progress *p, void *user);
    void *user;
    /* 1: every restart run that ends deeper than those before is repaired (a plan from
     * each, the best kept), not only the deepest placement of the whole search */
    int repair_runs;
    /* minimising: 1 = every other restart run decides at lower_bound (docs/exact-solver.md,
     * "Aspiration") */
    int aspire;
    /* NULL, or the call's gaps (has_gaps set): the search takes windows (docs/exact-solver.md,
     * "Gaps"); alignments then still come from the fields above */
    const struct tp_general *general;
    /* NULL, or offsets of a plan of all the tensors (the best so far): the search over pair
     * alternatives tries the alternative it meets first (exact_pairs.c) */
    const size_t *hint;
} tp_exact_params;

typedef struct tp_exact_result {
    int found;                  /* offsets hold a plan with arena <= the initial limit   */
    size_t arena;
    int complete;               /* the whole search space was explored                   */
    int timed_out;
    unsigned long long nodes;
    /* no plan within the limit, but offsets hold one with a smaller arena than
     * params->known_best (or any, when it is 0): the deepest placement the search reached,
     * the rest placed lowest first (arena in .arena; nothing proven) */
    int repaired;
    size_t proven_lower;        /* > 0: no plan has an arena below it (an aspiration run
                                   completed without a plan)                             */
} tp_exact_result;

/* offsets[count] receives the best plan found, or the repaired one (untouched when
 * neither). Lifetimes checked. */
tp_status tp_exact_search(const tp_tensor_lifetime *tensors, size_t count,
                          const tp_exact_params *params, size_t *offsets,
                          tp_exact_result *result);


/* One progress report of an exact search under params (nothing without a callback): its
 * nodes so far and its best plan, if found, with params' known best, bound and start. */
void tp_exact_report(const tp_exact_params *params, int found, size_t best_arena,
                     unsigned long long nodes, double now);

/* The exact search over the alternatives of each pair (exact_pairs.c, docs/exact-solver.md
 * "Gaps: one-sided pairs"), for gaps with a pair that has exactly one of A, B > 0: the
 * tensors ids[0..m) (those with a window somewhere; the others sit at 0, the largest of them
 * fixed_top bytes) under params (limit, minimise, budgets; params->general set). Fills result
 * as tp_exact_search does (never repaired); offsets untouched without a plan. */
tp_status tp_exact_pairs(const tp_tensor_lifetime *t, size_t count, const tp_exact_params *params,
                         const size_t *ids, size_t m, size_t fixed_top, size_t *offsets,
                         tp_exact_result *result);

/* The time sweep for tight problems (exact_sweep.c, docs/exact-solver.md "Tight problems:
 * the time sweep"). *tight receives whether every node from the first first use to the last
 * last use of the tensors of non-zero size has exactly `limit` live bytes (0 when there are
 * none, for limit 0, or when a last use is SIZE_MAX). O(n log n). */
tp_status tp_sweep_tight(const tp_tensor_lifetime *tensors, size_t count, size_t limit,
                         int *tight);

/* Progress reports of the time sweep and its cuts, every `every` seconds (the driver: 0.1,
 * as the search's; 0: at every read of the clock) as tp_plan_progress: nodes are the call's
 * so far, placed and to_place 0. */
typedef struct tp_sweep_ticker {
    void (*progress)(const struct tp_plan_progress *p, void *user); /* not NULL          */
    void *user;
    double start;     /* CLOCK_MONOTONIC seconds at the start of the whole call          */
    double last;      /* of the last report (tp_sweep_clock updates it)                  */
    double every;
    int have_best;    /* what the reports say of the best plan and the bound             */
    size_t best_arena, lower_bound;
} tp_sweep_ticker;

typedef struct tp_sweep_params {
    size_t limit;                  /* the arena, exactly: the problem must be tight at it   */
    double deadline;               /* CLOCK_MONOTONIC seconds; 0 = none                     */
    unsigned long long node_limit; /* 0 = none; a deterministic budget                      */
    tp_sweep_ticker *ticker;       /* NULL = no progress reports                            */
    unsigned long long nodes_before; /* for the reports: nodes of the call before this one */
} tp_sweep_params;

/* The clock of the sweep and the cuts, read every 1,024 nodes or so: 1 when the deadline
 * has passed; otherwise a progress report when the ticker's interval has passed since the
 * last one (nodes: this pass's, after p->nodes_before). Reads nothing without a deadline or
 * a ticker. */
int tp_sweep_clock(const tp_sweep_params *p, unsigned long long nodes);

typedef struct tp_sweep_result {
    int applies;   /* the tensors are tight at the limit (otherwise nothing else is set)    */
    int found;     /* offsets hold a plan within the limit                                  */
    int complete;  /* a plan was found or the search space exhausted: without a plan, no
                      plan within the limit exists                                          */
    int timed_out; /* the deadline or node_limit ended it                                   */
    int by_cuts;   /* the plan came from tp_sweep_cuts                                      */
    /* no plan within the limit, but offsets hold one of this arena: the parts of the cuts
     * that found no plan placed lowest first (nothing proven) */
    int repaired;
    size_t arena;
    unsigned long long nodes;
} tp_sweep_result;

/* A plan of arena limit for tensors tight at limit, or a proof that none exists: first
 * tp_sweep_cuts, then, when it finds no plan, tp_sweep_core on the whole problem under the
 * budget left. offsets (count) hold a plan only when one is found (zero-size tensors at 0).
 * Lifetimes checked, no alignment (every offset is a sum of sizes). */
tp_status tp_sweep_search(const tp_tensor_lifetime *tensors, size_t count,
                          const tp_sweep_params *params, size_t *offsets,
                          tp_sweep_result *result);
/* The time sweep alone (exact_sweep.c): complete. */
tp_status tp_sweep_core(const tp_tensor_lifetime *tensors, size_t count,
                        const tp_sweep_params *params, size_t *offsets, tp_sweep_result *result);
/* Cuts of the tensors (tight at params->limit; not checked) into independent parts, each
 * planned by the cuts or by tp_sweep_core (exact_strips.c): found, or nothing proven
 * (complete stays 0). part_nodes bounds the search for a balanced subset of a part and the
 * sweep of a part; *budget_hit says whether one ran out (a larger one may then succeed).
 * Overwrites offsets (count) either way. */
tp_status tp_sweep_cuts(const tp_tensor_lifetime *tensors, size_t count,
                        const tp_sweep_params *params, unsigned long long part_nodes,
                        size_t *offsets, tp_sweep_result *result, int *budget_hit);
/* The balance search of the cuts alone, for tests: a subset B of the tensors (all of size
 * > 0, tight at height over their span) holding tensor seed, which must start at the
 * earliest first use, whose load is the same h, 0 < h < height, at every node of the span.
 * in (count) receives B. Returns 1 with B, 0 when there is none (or the budget of nodes
 * ran out: *budget_hit), -1 when out of memory. */
int tp_sweep_balance(const tp_tensor_lifetime *tensors, size_t count, size_t height,
                     size_t seed, unsigned long long budget, unsigned char *in,
                     int *budget_hit);

/* lcm(a, b) of two alignments >= 1, SIZE_MAX when it does not fit. */
/* The Luby sequence 1 1 2 1 1 2 4 ... (i >= 1): restart budgets of the exact search and of
 * the time sweep (exact.c). */
unsigned long long tp_luby(unsigned long long i);

/* One step of xorshift64* on *x (nonzero): the seeded perturbations of restart runs. */
static inline uint64_t tp_xorshift64s(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1DULL;
}

static inline size_t tp_lcm_size(size_t a, size_t b)
{
    size_t x = a, y = b;
    while (y != 0) {
        const size_t r = x % y;
        x = y;
        y = r;
    }
    const size_t q = a / x;
    return q != 0 && b > SIZE_MAX / q ? SIZE_MAX : q * b;
}

/* Signed offset differences that never overflow: offsets and sizes are size_t. */
__extension__ typedef __int128 tp_i128;

/* ---- Per-tensor alignments and gaps (greedy_general.c, docs/planner.md "Alignment and gaps") */

/* One piece of a tensor's lifetime: nodes [t0, t1] inclusive, during which it uses bytes
 * [lo, hi) from its offset (active) or none (!active). */
typedef struct tp_seg {
    size_t t0, t1, lo, hi;
    int active;
} tp_seg;

/* The checked per-tensor constraints of one call. */
typedef struct tp_general {
    size_t count;
    size_t *align;      /* per tensor, >= 1: the call's alignment and the tensor's combined */
    size_t *seg_start;  /* count + 1: tensor i's pieces are segs[seg_start[i] .. [i+1])     */
    tp_seg *segs;
    int has_gaps;
} tp_general;

/* Checks o's alignments and gaps against the tensors and builds g; TP_ERR_INVALID names the
 * tensor (or gap) at fault, TP_ERR_OVERFLOW when an alignment does not fit. */
tp_status tp_general_init(const tp_tensor_lifetime *t, size_t count, const tp_plan_options *o,
                          size_t alignment, tp_general *g);
void tp_general_free(tp_general *g);

/* The most bytes in use at one node, counting each tensor's window there. */
tp_status tp_general_peak(const tp_tensor_lifetime *t, const tp_general *g, size_t *peak);

/* A greedy pass over order[0..n_order) under g's constraints: each tensor at the lowest
 * offset (first fit) or in the smallest free range (best fit, lowest on a tie; the space
 * above everything only when no bounded range admits it) that is a multiple of its alignment
 * and clear of every placed tensor it conflicts with. O(n^2) in the worst case. */
tp_status tp_general_place(const tp_tensor_lifetime *t, const tp_general *g, const size_t *order,
                           size_t n_order, tp_gap_rule rule, const tp_greedy_ticker *ticker,
                           size_t *offsets, size_t *arena);

/* The conflict of tensors i and j (non-zero sizes) under g: 0 when no node has both windows
 * present; else 1, with *a = max(A, 0) and *b = max(B, 0), A and B as in docs/planner.md
 * (j above i needs oj >= oi + A, i above j needs oi >= oj + B). */
int tp_general_reach(const tp_general *g, size_t i, size_t j, size_t *a, size_t *b);

/* The same with A and B as they are (either may be zero or negative): 0 when no node has
 * both windows present. */
int tp_general_reach_signed(const tp_general *g, size_t i, size_t j, tp_i128 *a, tp_i128 *b);

/* Whether tensors i and j (non-zero sizes) may sit at offsets oi and oj under g. */
int tp_general_compatible(const tp_tensor_lifetime *t, const tp_general *g, size_t i, size_t oi,
                          size_t j, size_t oj);

/* ---- Argument checks and lifetime ranks (lifetimes.c, offsets.c) ---------------------- */

/* Refuses first_use > last_use, naming the first offending tensor; also NULL with count > 0. */
tp_status tp_check_lifetimes(const tp_tensor_lifetime *tensors, size_t count);

/* The refusals every offset planner shares: NULL arena_size, NULL offsets with count > 0,
 * then tp_check_lifetimes. */
tp_status tp_check_plan_args(const tp_tensor_lifetime *tensors, size_t count,
                             const size_t *offsets, const size_t *arena_size);

/* Time as it matters to conflicts among the tensors order[0..n): two inclusive lifetimes
 * intersect exactly when the later of their first uses lies inside both, so only the distinct
 * first uses count. lo[k] and hi[k] receive the ranks among them of the first and of the last
 * one inside tensor order[k]'s lifetime; two lifetimes intersect exactly when their rank
 * ranges do. *n_ranks receives the number of distinct first uses. */
tp_status tp_lifetime_ranks(const tp_tensor_lifetime *tensors, const size_t *order, size_t n,
                            size_t *lo, size_t *hi, size_t *n_ranks);

/* ---- The portfolio (portfolio.c), run by the driver (driver.c) ------------------------- */

/* The number of portfolio entries (orders with a gap rule); entry 0 is tp_plan_offsets'. */
size_t tp_portfolio_size(void);
/* Threads worth starting for a portfolio over count tensors, at most cap (0: no cap). */
unsigned tp_portfolio_threads(size_t count, unsigned cap);
/* Runs entries [0, n_entries) of the portfolio on up to `threads` threads (the calling one
 * included) and leaves the best plan in offsets, its arena in *best (*have set). */
tp_status tp_portfolio_run(const tp_tensor_lifetime *tensors, size_t count, size_t n_entries,
                           size_t align, double deadline, unsigned threads,
                           const tp_plan_options *o, double start, size_t peak, size_t *offsets,
                           tp_plan_report *rep, size_t *best, int *have);
/* The same entries with the general pass (per-tensor alignments or gaps), on one thread. */
tp_status tp_portfolio_general(const tp_tensor_lifetime *tensors, size_t count,
                               const tp_general *g, size_t n_entries, double deadline,
                               size_t *offsets, size_t *trial, tp_plan_report *rep,
                               size_t *best, int *have);
/* Reports progress to o->progress, if any. */
void tp_plan_call_progress(const tp_plan_options *o, int have, size_t best, size_t lb,
                           double start, unsigned long long nodes);

#endif
