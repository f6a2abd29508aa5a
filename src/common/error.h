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

/* A status with its message, carried from the thread that failed to the one that reports:
 * tp_last_error() is per thread, so a worker's message would otherwise stay in the worker. */
#define TP_ERROR_MAX 1024
typedef struct tp_error {
    tp_status status;
    char message[TP_ERROR_MAX];
} tp_error;

/* e receives status and this thread's current message (a worker calls it as it fails). */
void tp_error_capture(tp_error *e, tp_status status);
/* Makes e's message this thread's (the caller calls it after joining); returns e->status. */
tp_status tp_error_raise(const tp_error *e);

/* Clears this thread's message (called on success paths that want a clean slate). */
void tp_clear_error(void);

#endif
