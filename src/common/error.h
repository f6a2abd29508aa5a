/* Internal: the thread-local error message behind tp_last_error(). */
#ifndef TP_COMMON_ERROR_H
#define TP_COMMON_ERROR_H

#include "tensorplan/status.h"

#if defined(__GNUC__)
#define TP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TP_PRINTF(a, b)
#endif

/* Records a message for tp_last_error() and returns status, so callers can write
 * `return tp_fail(TP_ERR_INVALID, "tensor %zu: ...", i);`. */
tp_status tp_fail(tp_status status, const char *fmt, ...) TP_PRINTF(2, 3);

/* Returns the status of expr from the calling function when it is not TP_OK; the message
 * expr recorded stays the one tp_last_error() reports. */
#define TP_TRY(expr)                                                                         \
    do {                                                                                     \
        tp_status tp_try_st_ = (expr);                                                       \
        if (tp_try_st_ != TP_OK)                                                             \
            return tp_try_st_;                                                               \
    } while (0)

/* Clears this thread's message (called on success paths that want a clean slate). */
void tp_clear_error(void);

#endif
