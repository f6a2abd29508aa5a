/* The `gaps` column of MiniMalloc CSV: time ranges inside a buffer's lifetime when it needs
 * none of its bytes (`lo-hi`) or only bytes [w0, w1) of them (`lo-hi@w0:w1`). */
#include "formats/csv_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"

/* A decimal number at *s (before end), stopping at the first non-digit; 0 when none or too
 * large. */
static int take_number(const char **s, const char *end, size_t *value)
{
    const char *p = *s;
    size_t v = 0;
    if (p >= end || *p < '0' || *p > '9')
        return 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        const size_t d = (size_t)(*p - '0');
        if (v > (SIZE_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *s = p;
    *value = v;
    return 1;
}

static tp_status bad(const tp_csv_gap_row *r, const char *tok, size_t len, const char *what)
{
    return tp_fail(TP_ERR_INVALID, "%s:%zu: column 'gaps': '%.*s': expected %s", r->file, r->line,
                   (int)(len > 40 ? 40 : len), tok, what);
}

/* One token [tok, e) into *g. */
static tp_status parse_token(const tp_csv_gap_row *r, const char *tok, const char *e,
                             tp_tensor_gap *g)
{
    const size_t len = (size_t)(e - tok);
    const char *s = tok;
    size_t lo, hi, w0 = 0, w1 = 0;
    int window = 0;
    const char *form = "lo-hi or lo-hi@w0:w1 (decimal integers)";
    if (!take_number(&s, e, &lo) || s >= e || *s++ != '-' || !take_number(&s, e, &hi))
        return bad(r, tok, len, form);
    if (s < e) {
        if (*s++ != '@' || !take_number(&s, e, &w0) || s >= e || *s++ != ':' ||
            !take_number(&s, e, &w1) || s != e)
            return bad(r, tok, len, form);
        window = 1;
    }
    if (r->end_inclusive) {
        if (hi == SIZE_MAX)
            return bad(r, tok, len, "an end below 2^64 - 1");
        hi++;
    }
    if (lo >= hi || lo < r->lower || hi > r->upper) {
        char want[128];
        snprintf(want, sizeof want, "lo < hi inside the lifetime [%zu, %zu)", r->lower, r->upper);
        return bad(r, tok, len, want);
    }
    if (window && (w0 > w1 || w1 > r->size)) {
        char want[128];
        snprintf(want, sizeof want, "a window w0 <= w1 <= size %zu", r->size);
        return bad(r, tok, len, want);
    }
    *g = (tp_tensor_gap){ r->row, lo, hi - 1, window, w0, w1 };
    return TP_OK;
}

tp_status tp_csv_parse_gaps(const tp_csv_gap_row *r, const char *text, size_t length,
                            tp_tensor_gap **gaps, size_t *n, size_t *cap)
{
    const char *s = text, *end = text + length;
    for (;;) {
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
        if (s >= end)
            return TP_OK;
        const char *e = s;
        while (e < end && *e != ' ' && *e != '\t')
            e++;
        tp_tensor_gap g;
        tp_status st = parse_token(r, s, e, &g);
        if (st == TP_OK)
            st = TP_GROW(gaps, cap, *n + 1);
        if (st != TP_OK)
            return st;
        (*gaps)[(*n)++] = g;
        s = e;
    }
}
