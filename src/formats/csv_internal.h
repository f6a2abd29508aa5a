/* Internal to the CSV reader: the `gaps` column (csv_gaps.c). */
#ifndef TP_FORMATS_CSV_INTERNAL_H
#define TP_FORMATS_CSV_INTERNAL_H

#include <stddef.h>

#include "tensorplan/planner.h"

/* The row a gaps field belongs to, for checks and messages. */
typedef struct tp_csv_gap_row {
    const char *file;
    size_t line, row;
    size_t lower, upper, size; /* the row's half-open lifetime [lower, upper) and size */
    int end_inclusive;         /* the file uses `end`: a gap's hi is inclusive too     */
} tp_csv_gap_row;

/* Parses TEXT[0..length), space-separated `lo-hi` or `lo-hi@w0:w1` (docs/planner.md, "CSV"),
 * appending one tp_tensor_gap per range to *gaps (count *n, capacity *cap, grown with
 * tp_grow). TP_ERR_INVALID / TP_ERR_OVERFLOW with "FILE:LINE: ..." otherwise. */
tp_status tp_csv_parse_gaps(const tp_csv_gap_row *r, const char *text, size_t length,
                            tp_tensor_gap **gaps, size_t *n, size_t *cap);

#endif
