/* tensorplan: MiniMalloc CSV problems and solutions.
 *
 * Example:
 *
 *     tp_csv_table problem;
 *     size_t arena;
 *     if (tp_csv_read("problem.csv", 0, &problem) != TP_OK)
 *         return 1;                                   // "problem.csv:3: expected ..."
 *     size_t *offsets = calloc(problem.count + 1, sizeof *offsets);
 *     tp_status st = offsets ? tp_plan_offsets(problem.tensors, problem.count, offsets, &arena)
 *                            : TP_ERR_NOMEM;
 *     if (st == TP_OK)
 *         st = tp_csv_write_solution("solution.csv", &problem, offsets);
 *     free(offsets);
 *     tp_csv_free(&problem);
 *     return st == TP_OK ? 0 : 1;
 *
 * The de facto exchange format of static memory allocation (google/minimalloc):
 *
 *     id,lower,upper,size[,alignment][,gaps][,offset]
 *     b1,0,3,4
 *
 * One row per buffer; lifetimes are half-open [lower, upper), which this reader turns into
 * the planner's inclusive lifetimes first_use = lower, last_use = upper - 1. The header is
 * required and names the columns in any order; other columns are ignored. MiniMalloc's
 * spellings are accepted: buffer or buffer_id for id, start or begin for lower, end for
 * upper (end is inclusive: upper = end + 1, gaps' ends too). alignment: a positive integer,
 * the row's offset a multiple of it. gaps: space-separated lo-hi (the buffer needs none of
 * its bytes during [lo, hi)) or lo-hi@w0:w1 (only bytes [w0, w1) of them), each inside the
 * lifetime (docs/planner.md, "CSV"). Accepted: a UTF-8
 * byte-order mark, CRLF line ends, trailing blank lines, spaces or tabs around fields,
 * RFC 4180 quoted fields ("a ""b""", on one line). Every refusal returns a status other than
 * TP_OK and leaves "FILE:LINE: what was expected" for tp_last_error(). */
#ifndef TENSORPLAN_CSV_H
#define TENSORPLAN_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "tensorplan/api.h"
#include "tensorplan/planner.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flags for tp_csv_read / tp_csv_parse. */
enum {
    TP_CSV_REQUIRE_OFFSET = 1u << 0, /* a solution: the offset column must be present      */
    /* Let the offset column hold a negative integer, so that a checker can call it an
     * invalid solution instead of a malformed file; see offset_negative. */
    TP_CSV_SIGNED_OFFSETS = 1u << 1,
};

/* A parsed file. Row i of the arrays is the i-th data row of the file. */
typedef struct tp_csv_table {
    char *path;                  /* the name used in messages                               */
    size_t count;                /* number of rows                                          */
    char **ids;                  /* ids as written, quotes removed                          */
    tp_tensor_lifetime *tensors; /* size, first_use = lower, last_use = upper - 1           */
    size_t *lines;               /* 1-based line number of each row                         */
    size_t *offsets;             /* NULL when the file has no offset column                 */
    /* NULL unless TP_CSV_SIGNED_OFFSETS was given and the file has an offset column; then 1
     * where the file wrote a negative offset, whose magnitude is in offsets[i]. */
    unsigned char *offset_negative;
    /* NULL when the file has no alignment column; else each row's alignment (>= 1). */
    size_t *alignments;
    /* The gaps column, every range of every row (tensor = the row), in file order; NULL and 0
     * when the file has none. */
    tp_tensor_gap *gaps;
    size_t gap_count;
    char *storage_;              /* private: the id characters                              */
} tp_csv_table;

/* Reads PATH. TP_ERR_IO when it cannot be read; TP_ERR_INVALID for a malformed file;
 * TP_ERR_OVERFLOW for a number that does not fit in size_t; TP_ERR_NOMEM. On failure *out
 * holds nothing to free. */
TP_API tp_status tp_csv_read(const char *path, unsigned flags, tp_csv_table *out);

/* Same on a buffer in memory; NAME is used in messages. */
TP_API tp_status tp_csv_parse(const char *name, const char *data, size_t length, unsigned flags,
                              tp_csv_table *out);

/* Frees what tp_csv_read/tp_csv_parse allocated; safe on a zeroed table. */
TP_API void tp_csv_free(tp_csv_table *table);

/* Writes `id,lower,upper,size,offset` for every row of TABLE, in its order, with
 * offsets[i] as row i's offset. Alignment and gaps are not written: the problem file keeps
 * them, and tp_csv_check_solution takes them from there. */
TP_API tp_status tp_csv_write_solution_stream(FILE *out, const tp_csv_table *table,
                                              const size_t *offsets);

/* Same into PATH, through a temporary file in the same directory renamed over PATH at the
 * end, so that a failure leaves no partial file. */
TP_API tp_status tp_csv_write_solution(const char *path, const tp_csv_table *table,
                                       const size_t *offsets);

/* What tp_csv_check_solution found. */
typedef enum tp_csv_verdict {
    TP_CSV_VALID = 0,
    TP_CSV_MISSING_ROW,     /* a problem buffer has no row in the solution (a = problem row) */
    TP_CSV_EXTRA_ROW,       /* a solution row names no problem buffer (a = solution row)     */
    TP_CSV_MISMATCH,        /* same id, other lifetime or size (a = problem, b = solution)   */
    TP_CSV_NEGATIVE_OFFSET, /* a = solution row                                              */
    TP_CSV_OFFSET_OVERFLOW, /* offset + size does not fit in size_t (a = solution row)        */
    TP_CSV_OVERLAP,         /* rows a and b of the solution share a byte while both live     */
    TP_CSV_OVER_CAPACITY,   /* height > capacity (a = a solution row that reaches the top)   */
    TP_CSV_MISALIGNED       /* an offset not a multiple of the row's alignment (a = sol row) */
} tp_csv_verdict;

typedef struct tp_csv_check {
    tp_csv_verdict verdict;
    size_t a, b;       /* row indices, see the verdicts                                 */
    size_t height;     /* max(offset + size) over the solution (when computable)        */
    char message[512]; /* one line naming file, line, id and what is wrong; "" if valid  */
} tp_csv_check;

/* Checks SOLUTION (read with TP_CSV_REQUIRE_OFFSET, optionally TP_CSV_SIGNED_OFFSETS) against
 * PROBLEM: the same buffers by id with the same lifetimes and sizes, offsets >= 0, each a
 * multiple of the row's alignment (the problem's, and the solution's if it has the column),
 * no two buffers live at a common time that share a byte, and, if has_capacity, height <=
 * capacity. With gaps in the problem, two buffers conflict as MiniMalloc defines it (at every
 * time both use a window, one lies wholly above the other, the same one each time).
 * Rows may be in any order. The first violation found is reported: buffer identity first,
 * then offsets, then alignment, then overlaps in order of the later buffer's start, then
 * capacity. Runs in O(n log n), O(n^2) with gaps. Returns TP_OK when the check ran (the verdict is in *result), TP_ERR_NOMEM. */
TP_API tp_status tp_csv_check_solution(const tp_csv_table *problem, const tp_csv_table *solution,
                                       int has_capacity, size_t capacity, tp_csv_check *result);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_CSV_H */
