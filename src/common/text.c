#include "common/text.h"
#include "common/output_file.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

static int reserve(tp_gtext *t, size_t extra)
{
    if (t->failed)
        return 0;
    if (extra > SIZE_MAX - 1 - t->len ||
        TP_GROW(&t->data, &t->cap, t->len + extra + 1) != TP_OK) {
        t->failed = 1;
        return 0;
    }
    return 1;
}

void tp_gtext_printf(tp_gtext *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(t, (size_t)n)) {
        t->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void tp_gtext_puts(tp_gtext *t, const char *s)
{
    size_t n = strlen(s);
    if (!reserve(t, n))
        return;
    memcpy(t->data + t->len, s, n + 1);
    t->len += n;
}

void tp_gtext_json_string(tp_gtext *t, const char *s)
{
    tp_gtext_puts(t, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': tp_gtext_puts(t, "\\\""); break;
        case '\\': tp_gtext_puts(t, "\\\\"); break;
        case '\n': tp_gtext_puts(t, "\\n"); break;
        case '\r': tp_gtext_puts(t, "\\r"); break;
        case '\t': tp_gtext_puts(t, "\\t"); break;
        default:
            if (*p < 0x20)
                tp_gtext_printf(t, "\\u%04x", *p);
            else
                tp_gtext_printf(t, "%c", *p);
        }
    }
    tp_gtext_puts(t, "\"");
}

void tp_gtext_float(tp_gtext *t, float f)
{
    char buf[48];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f)
            break;
    }
    tp_gtext_puts(t, buf);
}

tp_status tp_gtext_finish(tp_gtext *t, char **out)
{
    if (!t->failed && !t->data)
        reserve(t, 0);
    if (t->failed) {
        free(t->data);
        t->data = NULL;
        return tp_fail(TP_ERR_NOMEM, "out of memory while writing a graph");
    }
    t->data[t->len] = '\0';
    *out = t->data;
    t->data = NULL;
    return TP_OK;
}

static tp_status write_text(FILE *f, void *ctx)
{
    const char *text = ctx;
    size_t n = strlen(text);
    return fwrite(text, 1, n, f) == n ? TP_OK : TP_ERR_IO;
}

tp_status tp_gtext_write_file(const char *path, const char *text)
{
    return tp_output_file(path, write_text, (void *)text);
}
