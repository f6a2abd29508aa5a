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

/* The message is one line whatever a name in it holds (a file path, a tensor name read from
 * a file): control bytes are kept as C escapes (\n, \t, \xHH), cut at the buffer's end. */
tp_status tp_fail(tp_status status, const char *fmt, ...)
{
    char raw[TP_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)raw; *p; p++) {
        char esc[5] = {(char)*p, '\0'};
        if (*p == '\n')
            memcpy(esc, "\\n", 3);
        else if (*p == '\t')
            memcpy(esc, "\\t", 3);
        else if (*p < 0x20 || *p == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", *p);
        const size_t n = strlen(esc);
        if (o + n >= sizeof tp_error_message)
            break;
        memcpy(tp_error_message + o, esc, n);
        o += n;
    }
    tp_error_message[o] = '\0';
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
