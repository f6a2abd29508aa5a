/* Internal to the backend: the one parallel for of the kernels (kernels.c, quant_kernels.c).
 *
 * [0, n) is handed out in chunks to at most min(n_threads, n, TP_PARALLEL_MAX_THREADS)
 * threads: the caller (worker 0) and pool workers 1..t-1 (parallel.c). fn(ctx,
 * begin, end, worker) may run several chunks on one worker, one after the other, so a
 * per-worker scratch indexed by `worker` (below t) is never shared. Results must not depend
 * on the split: which chunks a worker gets depends on scheduling. */
#ifndef TP_BACKEND_PARALLEL_H
#define TP_BACKEND_PARALLEL_H

#include <stddef.h>

#define TP_PARALLEL_MAX_THREADS 64
#define TP_PARALLEL_MIN_WORK 65536.0

typedef void (*tp_range_fn)(void *ctx, size_t begin, size_t end, int worker);

void tp_parallel_for(size_t n, int n_threads, tp_range_fn fn, void *ctx);

/* The threads of one kernel call doing `work` multiply-adds: n_threads (0 =
 * tp_kernels_threads()) capped at TP_PARALLEL_MAX_THREADS, and 1 when the work is under
 * the smallest work worth sharing (TP_PARALLEL_MIN_WORK unless set below), where handing out
 * the call costs more than it saves. The split never changes the bits. */
int tp_parallel_threads(int n_threads, double work);

/* The smallest work (multiply-adds) that tp_parallel_threads shares; a negative value
 * restores TP_PARALLEL_MIN_WORK. For benchmarks that measure where sharing starts to pay. */
void tp_parallel_set_min_work(double work);

#endif
