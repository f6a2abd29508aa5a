/* Checking a MiniMalloc solution against its problem. */
#define _XOPEN_SOURCE 700 /* tsearch/tfind/tdelete of <search.h> */

#include <pthread.h>
#include <search.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "tensorplan/csv.h"

typedef struct span {
    size_t start, end; /* bytes [start, end) */
    size_t row;
} span;

/* Live spans are pairwise disjoint while the solution is valid so far, so "entirely below",
 * "entirely above" and "shares a byte" is a strict order on them, and a lookup that compares
 * equal has found a span sharing a byte with the query. */
static int span_order(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->end <= y->start)
        return -1;
    if (y->end <= x->start)
        return 1;
    return 0;
}

/* qsort's comparator takes no context, so the table being sorted is passed through these
 * statics, under a lock so that concurrent checks stay correct. */
static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;
static const tp_csv_table *sort_table;
static int by_id(const void *a, const void *b)
{
    return strcmp(sort_table->ids[*(const size_t *)a], sort_table->ids[*(const size_t *)b]);
}

static const tp_tensor_lifetime *sweep_tensors;
static int by_start(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    size_t x = sweep_tensors[i].first_use, y = sweep_tensors[j].first_use;
    return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}
static int by_end(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    size_t x = sweep_tensors[i].last_use, y = sweep_tensors[j].last_use;
    return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

static void say(tp_csv_check *r, tp_csv_verdict v, size_t a, size_t b, const char *fmt, ...)
    TP_PRINTF(5, 6);
static void say(tp_csv_check *r, tp_csv_verdict v, size_t a, size_t b, const char *fmt, ...)
{
    r->verdict = v;
    r->a = a;
    r->b = b;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}


/* map[j] receives the problem row of solution row j (when the identity holds). */
static tp_status check_identity(const tp_csv_table *pb, const tp_csv_table *sol, size_t *map,
                                tp_csv_check *r)
{
    size_t n = sol->count;
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return tp_fail(TP_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    pthread_mutex_lock(&sort_lock);
    sort_table = sol;
    qsort(order, n, sizeof *order, by_id);
    pthread_mutex_unlock(&sort_lock);
    unsigned char *matched = calloc(n ? n : 1, 1);
    if (!matched) {
        free(order);
        return tp_fail(TP_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < pb->count && r->verdict == TP_CSV_VALID; i++) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(sol->ids[order[mid]], pb->ids[i]) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == n || strcmp(sol->ids[order[lo]], pb->ids[i]) != 0) {
            say(r, TP_CSV_MISSING_ROW, i, 0, "%s:%zu: buffer '%s' has no row in %s",
                pb->path, pb->lines[i], pb->ids[i], sol->path);
            break;
        }
        size_t j = order[lo];
        matched[j] = 1;
        map[j] = i;
        const tp_tensor_lifetime *a = &pb->tensors[i], *b = &sol->tensors[j];
        if (a->first_use != b->first_use || a->last_use != b->last_use || a->size != b->size)
            say(r, TP_CSV_MISMATCH, i, j,
                "%s:%zu: buffer '%s' is lower %zu, upper %zu, size %zu in the solution, but "
                "lower %zu, upper %zu, size %zu in %s:%zu",
                sol->path, sol->lines[j], sol->ids[j], b->first_use, b->last_use + 1, b->size,
                a->first_use, a->last_use + 1, a->size, pb->path, pb->lines[i]);
    }
    for (size_t j = 0; j < n && r->verdict == TP_CSV_VALID; j++)
        if (!matched[j])
            say(r, TP_CSV_EXTRA_ROW, j, 0, "%s:%zu: buffer '%s' is not in the problem %s",
                sol->path, sol->lines[j], sol->ids[j], pb->path);
    free(matched);
    free(order);
    return TP_OK;
}

static tp_status check_overlaps(const tp_csv_table *sol, tp_csv_check *r)
{
    size_t n = sol->count;
    size_t *starts = malloc((n ? n : 1) * sizeof *starts);
    size_t *ends = malloc((n ? n : 1) * sizeof *ends);
    span *spans = malloc((n ? n : 1) * sizeof *spans);
    unsigned char *in_tree = calloc(n ? n : 1, 1);
    if (!starts || !ends || !spans || !in_tree) {
        free(starts);
        free(ends);
        free(spans);
        free(in_tree);
        return tp_fail(TP_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        starts[i] = ends[i] = i;
        spans[i] = (span){sol->offsets[i], sol->offsets[i] + sol->tensors[i].size, i};
    }
    pthread_mutex_lock(&sort_lock);
    sweep_tensors = sol->tensors;
    qsort(starts, n, sizeof *starts, by_start);
    qsort(ends, n, sizeof *ends, by_end);
    pthread_mutex_unlock(&sort_lock);

    void *root = NULL;
    tp_status st = TP_OK;
    size_t e = 0;
    for (size_t k = 0; k < n && r->verdict == TP_CSV_VALID; k++) {
        size_t i = starts[k];
        size_t now = sol->tensors[i].first_use;
        /* Inclusive last_use: a buffer whose last node is before `now` is dead at `now`. */
        for (; e < n && sol->tensors[ends[e]].last_use < now; e++) {
            if (in_tree[ends[e]]) {
                tdelete(&spans[ends[e]], &root, span_order);
                in_tree[ends[e]] = 0;
            }
        }
        if (sol->tensors[i].size == 0)
            continue; /* occupies no byte */
        span **hit = tfind(&spans[i], &root, span_order);
        if (hit) {
            size_t j = (*hit)->row;
            const tp_tensor_lifetime *a = &sol->tensors[j], *b = &sol->tensors[i];
            size_t lo = spans[i].start > spans[j].start ? spans[i].start : spans[j].start;
            size_t hi = spans[i].end < spans[j].end ? spans[i].end : spans[j].end;
            size_t t0 = a->first_use > b->first_use ? a->first_use : b->first_use;
            size_t t1 = a->last_use < b->last_use ? a->last_use : b->last_use;
            say(r, TP_CSV_OVERLAP, j, i,
                "%s: buffers '%s' (line %zu) and '%s' (line %zu) overlap: both live during "
                "[%zu, %zu) and both use bytes [%zu, %zu)",
                sol->path, sol->ids[j], sol->lines[j], sol->ids[i], sol->lines[i], t0, t1 + 1,
                lo, hi);
            break;
        }
        if (!tsearch(&spans[i], &root, span_order)) {
            st = tp_fail(TP_ERR_NOMEM, "out of memory");
            break;
        }
        in_tree[i] = 1;
    }
    for (size_t i = 0; i < n; i++)
        if (in_tree[i])
            tdelete(&spans[i], &root, span_order);
    free(starts);
    free(ends);
    free(spans);
    free(in_tree);
    return st;
}

/* Every offset a multiple of its row's alignment, the problem's and the solution's own. */
static void check_alignment(const tp_csv_table *pb, const tp_csv_table *sol, const size_t *map,
                            tp_csv_check *r)
{
    for (size_t j = 0; j < sol->count; j++) {
        const size_t a = pb->alignments ? pb->alignments[map[j]] : 1;
        const size_t b = sol->alignments ? sol->alignments[j] : 1;
        const size_t bad = sol->offsets[j] % a != 0 ? a : sol->offsets[j] % b != 0 ? b : 0;
        if (bad == 0)
            continue;
        say(r, TP_CSV_MISALIGNED, j, 0,
            "%s:%zu: buffer '%s' has offset %zu: expected a multiple of its alignment %zu "
            "(%s:%zu)",
            sol->path, sol->lines[j], sol->ids[j], sol->offsets[j], bad,
            bad == a ? pb->path : sol->path, bad == a ? pb->lines[map[j]] : sol->lines[j]);
        return;
    }
}

/* With gaps: MiniMalloc's rule on every pair of rows whose lifetimes intersect, in order of
 * the later row's start (tp_plan_constraints_compatible, planner.h). */
static tp_status check_gap_overlaps(const tp_csv_table *pb, const tp_csv_table *sol,
                                    const size_t *map, tp_csv_check *r)
{
    tp_plan_options o;
    tp_plan_options_init(&o);
    o.gaps = pb->gaps;
    o.gap_count = pb->gap_count;
    tp_plan_constraints *g = NULL;
    tp_status st = tp_plan_constraints_create(pb->tensors, pb->count, &o, &g);
    if (st != TP_OK)
        return st;
    const size_t n = sol->count;
    size_t *starts = malloc((n ? n : 1) * sizeof *starts);
    if (!starts) {
        tp_plan_constraints_destroy(g);
        return tp_fail(TP_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        starts[i] = i;
    pthread_mutex_lock(&sort_lock);
    sweep_tensors = sol->tensors;
    qsort(starts, n, sizeof *starts, by_start);
    pthread_mutex_unlock(&sort_lock);
    for (size_t k = 0; k < n && r->verdict == TP_CSV_VALID; k++) {
        const size_t j = starts[k];
        const tp_tensor_lifetime *b = &sol->tensors[j];
        for (size_t q = 0; q < k && b->size > 0; q++) {
            const size_t i = starts[q];
            const tp_tensor_lifetime *a = &sol->tensors[i];
            if (a->size == 0 || a->last_use < b->first_use ||
                tp_plan_constraints_compatible(g, map[i], sol->offsets[i], map[j],
                                               sol->offsets[j]))
                continue;
            say(r, TP_CSV_OVERLAP, i, j,
                "%s: buffers '%s' (line %zu) and '%s' (line %zu) overlap: at some time during "
                "[%zu, %zu) both use bytes and neither lies wholly above the other (gaps "
                "counted)",
                sol->path, sol->ids[i], sol->lines[i], sol->ids[j], sol->lines[j],
                b->first_use, (a->last_use < b->last_use ? a->last_use : b->last_use) + 1);
            break;
        }
    }
    free(starts);
    tp_plan_constraints_destroy(g);
    return TP_OK;
}

static tp_status check_placement(const tp_csv_table *problem, const tp_csv_table *solution,
                                 const size_t *map, int has_capacity, size_t capacity,
                                 tp_csv_check *result);

tp_status tp_csv_check_solution(const tp_csv_table *problem, const tp_csv_table *solution,
                                int has_capacity, size_t capacity, tp_csv_check *result)
{
    if (!problem || !solution || !result)
        return tp_fail(TP_ERR_INVALID, "tp_csv_check_solution: NULL argument");
    memset(result, 0, sizeof *result);
    if (!solution->offsets)
        return tp_fail(TP_ERR_INVALID, "%s: has no offset column", solution->path);
    size_t *map = malloc((solution->count ? solution->count : 1) * sizeof *map);
    if (!map)
        return tp_fail(TP_ERR_NOMEM, "out of memory");
    tp_status st = check_identity(problem, solution, map, result);
    if (st == TP_OK && result->verdict == TP_CSV_VALID)
        st = check_placement(problem, solution, map, has_capacity, capacity, result);
    free(map);
    return st;
}

static tp_status check_placement(const tp_csv_table *problem, const tp_csv_table *solution,
                                 const size_t *map, int has_capacity, size_t capacity,
                                 tp_csv_check *result)
{
    tp_status st;

    const tp_csv_table *sol = solution;
    size_t height = 0, top = 0;
    for (size_t i = 0; i < sol->count; i++) {
        if (sol->offset_negative && sol->offset_negative[i]) {
            say(result, TP_CSV_NEGATIVE_OFFSET, i, 0,
                "%s:%zu: buffer '%s' has offset -%zu: expected an offset >= 0", sol->path,
                sol->lines[i], sol->ids[i], sol->offsets[i]);
            return TP_OK;
        }
        if (sol->offsets[i] > SIZE_MAX - sol->tensors[i].size) {
            say(result, TP_CSV_OFFSET_OVERFLOW, i, 0,
                "%s:%zu: buffer '%s': offset %zu + size %zu does not fit in %zu bits", sol->path,
                sol->lines[i], sol->ids[i], sol->offsets[i], sol->tensors[i].size,
                sizeof(size_t) * 8);
            return TP_OK;
        }
        if (sol->tensors[i].size && sol->offsets[i] + sol->tensors[i].size > height) {
            height = sol->offsets[i] + sol->tensors[i].size;
            top = i;
        }
    }
    result->height = height;
    check_alignment(problem, sol, map, result);
    if (result->verdict != TP_CSV_VALID)
        return TP_OK;
    st = problem->gap_count > 0 ? check_gap_overlaps(problem, sol, map, result)
                                : check_overlaps(sol, result);
    if (st != TP_OK || result->verdict != TP_CSV_VALID)
        return st;
    if (has_capacity && height > capacity)
        say(result, TP_CSV_OVER_CAPACITY, top, 0,
            "%s:%zu: buffer '%s' reaches byte %zu: the height %zu exceeds the capacity %zu by %zu",
            sol->path, sol->lines[top], sol->ids[top], height, height, capacity,
            height - capacity);
    return TP_OK;
}
