/* Internal to the backend: the one parallel for of the kernels (kernels.c, quant_kernels.c).
 *
 * [0, n) is cut into min(n_threads, n, TP_PARALLEL_MAX_THREADS) chunks, chunk k from
 * n*k/t to n*(k+1)/t on worker k (worker 0 is the calling thread). Results must not depend
 * on the split, so a thread that cannot be created has its chunk run on the caller. */
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
