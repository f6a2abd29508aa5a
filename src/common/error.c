#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char tp_error_message[TP_ERROR_MAX];

const char *tp_status_name(tp_status status)
{
    switch (status) {
    case TP_OK: return "TP_OK";
    case TP_ERR_INVALID: return "TP_ERR_INVALID";
    case TP_ERR_NOMEM: return "TP_ERR_NOMEM";
    case TP_ERR_OVERFLOW: return "TP_ERR_OVERFLOW";
    case TP_ERR_IO: return "TP_ERR_IO";
    case TP_ERR_NOT_FOUND: return "TP_ERR_NOT_FOUND";
    case TP_ERR_INFEASIBLE: return "TP_ERR_INFEASIBLE";
    case TP_ERR_NOT_FINITE: return "TP_ERR_NOT_FINITE";
    case TP_ERR_TIMEOUT: return "TP_ERR_TIMEOUT";
    }
    return "TP_ERR_UNKNOWN";
}

const char *tp_last_error(void)
{
    return tp_error_message;
}

void tp_clear_error(void)
{
    tp_error_message[0] = '\0';
}

tp_status tp_fail(tp_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tp_error_message, sizeof tp_error_message, fmt, ap);
    va_end(ap);
    return status;
}

void tp_error_capture(tp_error *e, tp_status status)
{
    e->status = status;
    memcpy(e->message, tp_error_message, sizeof e->message);
}

tp_status tp_error_raise(const tp_error *e)
{
    memcpy(tp_error_message, e->message, sizeof tp_error_message);
    tp_error_message[sizeof tp_error_message - 1] = '\0';
    return e->status;
}
