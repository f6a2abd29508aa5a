/* Internal: the thread-local error message behind tp_last_error(). */
#ifndef TP_COMMON_ERROR_H
#define TP_COMMON_ERROR_H

#include "tensorplan/planner.h"

#if defined(__GNUC__)
#define TP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TP_PRINTF(a, b)
#endif

/* Records a message for tp_last_error() and returns status, so callers can write
 * `return tp_fail(TP_ERR_INVALID, "tensor %zu: ...", i);`. */
tp_status tp_fail(tp_status status, const char *fmt, ...) TP_PRINTF(2, 3);

/* Clears this thread's message (called on success paths that want a clean slate). */
void tp_clear_error(void);

#endif
