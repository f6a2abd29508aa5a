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

#endif
