/* Internal to the backend: the one parallel for of the kernels (kernels.c, quant_kernels.c).
 *
 * [0, n) is handed out in chunks to at most min(n_threads, n, TP_PARALLEL_MAX_THREADS)
 * threads: the caller (worker 0) and sleeping pool workers 1..t-1 (parallel.c). fn(ctx,
 * begin, end, worker) may run several chunks on one worker, one after the other, so a
 * per-worker scratch indexed by `worker` (below t) is never shared. Results must not depend
 * on the split: which chunks a worker gets depends on scheduling. */
#ifndef TP_BACKEND_PARALLEL_H
#define TP_BACKEND_PARALLEL_H

#include <stddef.h>

#define TP_PARALLEL_MAX_THREADS 64

typedef void (*tp_range_fn)(void *ctx, size_t begin, size_t end, int worker);

void tp_parallel_for(size_t n, int n_threads, tp_range_fn fn, void *ctx);

/* The threads of one kernel call doing `work` multiply-adds: n_threads (0 =
 * tp_kernels_threads()) capped at TP_PARALLEL_MAX_THREADS, and 1 when the work is under
 * 2^20, where a thread start costs more than it saves. The split never changes the bits. */
int tp_parallel_threads(int n_threads, double work);

#endif
