/* Internal to the graph writers: a growable text buffer and whole-file output. */
#ifndef TP_COMMON_TEXT_H
#define TP_COMMON_TEXT_H

#include <stddef.h>

#include "common/error.h"

typedef struct tp_gtext {
    char *data;
    size_t len, cap;
    int failed;        /* an allocation failed; later appends do nothing */
} tp_gtext;

void tp_gtext_printf(tp_gtext *t, const char *fmt, ...) TP_PRINTF(2, 3);
void tp_gtext_puts(tp_gtext *t, const char *s);
/* s as a JSON string literal, quotes included. */
void tp_gtext_json_string(tp_gtext *t, const char *s);
/* The shortest decimal that reads back as exactly f. */
void tp_gtext_float(tp_gtext *t, float f);
/* Hands the text to *out (NUL-terminated), or fails with TP_ERR_NOMEM and frees it. */
tp_status tp_gtext_finish(tp_gtext *t, char **out);
/* Writes text to path in one go, through tp_output_file (common/output_file.h): a failure leaves
 * no partial file, and a device or FIFO is written in place. */
tp_status tp_gtext_write_file(const char *path, const char *text);

#endif
