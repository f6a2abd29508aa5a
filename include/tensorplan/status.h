/* tensorplan: status codes and the thread-local error message, shared by every layer.
 *
 * Example (any call that returns a tp_status):
 *
 *     tp_status st = TP_ERR_INVALID;                  // what a tp_ call returned
 *     if (st != TP_OK)
 *         fprintf(stderr, "%s: %s\n", tp_status_name(st), tp_last_error());
 *
 * Every library function that can fail returns a tp_status; on failure it leaves a one-line
 * message for tp_last_error() in the calling thread. */
#ifndef TENSORPLAN_STATUS_H
#define TENSORPLAN_STATUS_H

#include "tensorplan/api.h"

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
    TP_ERR_INFEASIBLE, /* no solution exists within the given limits                */
    TP_ERR_NOT_FINITE, /* a computed value is NaN or infinite                      */
    TP_ERR_TIMEOUT     /* a time limit ran out before any result was complete       */
} tp_status;

TP_API const char *tp_status_name(tp_status status);   /* "TP_OK", "TP_ERR_INVALID", ... */
TP_API const char *tp_last_error(void);                /* message of this thread's last failure */

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_STATUS_H */
