/* Fuzzing harness: the solution checker (tp_csv_check_solution) with its problem. The input
 * is a problem, a NUL byte and a solution; without a NUL byte it is a problem alone, planned
 * with tp_plan_offsets and written as its solution (which the checker must accept). The
 * verdict is restated here by brute force: VALID means no two rows live at a common step
 * share a byte and the height is max(offset + size) over the rows; OVERLAP names two such rows;
 * OVER_CAPACITY follows a capacity one below the height. */
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "tensorplan/csv.h"
#include "tensorplan/planner.h"
#include "tensorplan/status.h"

#define CSV_SOLUTION_PAIRWISE_MAX 4000u /* rows checked pairwise (quadratic) */

static int csv_solution_clash(const tp_csv_table *s, size_t i, size_t j)
{
    const tp_tensor_lifetime *a = &s->tensors[i], *b = &s->tensors[j];
    const int live = a->first_use <= b->last_use && b->first_use <= a->last_use;
    const int share = a->size > 0 && b->size > 0 && s->offsets[i] < s->offsets[j] + b->size &&
                      s->offsets[j] < s->offsets[i] + a->size;
    return live && share;
}

static void csv_solution_check(const tp_csv_table *p, const tp_csv_table *s)
{
    tp_csv_check c;
    memset(&c, 0, sizeof c);
    if (tp_csv_check_solution(p, s, 0, 0, &c) != TP_OK)
        return; /* out of memory */
    if (c.verdict == TP_CSV_VALID) {
        TPF_CHECK(c.message[0] == '\0', "valid with a message: %s", c.message);
        size_t top = 0;
        for (size_t i = 0; i < s->count; i++) {
            TPF_CHECK(s->offset_negative == NULL || !s->offset_negative[i],
                      "row %zu: negative offset called valid", i);
            TPF_CHECK(s->offsets[i] <= SIZE_MAX - s->tensors[i].size,
                      "row %zu: overflowing offset called valid", i);
            if (s->offsets[i] + s->tensors[i].size > top)
                top = s->offsets[i] + s->tensors[i].size;
        }
        TPF_CHECK(s->count == p->count, "%zu problem rows, %zu solution rows, valid",
                  p->count, s->count);
        if (s->count <= CSV_SOLUTION_PAIRWISE_MAX)
            for (size_t i = 0; i < s->count; i++)
                for (size_t j = i + 1; j < s->count; j++)
                    TPF_CHECK(!csv_solution_clash(s, i, j), "rows %zu and %zu overlap, valid",
                              i, j);
        TPF_CHECK(c.height == top, "height %zu, the rows reach %zu", c.height, top);
        if (top > 0) {
            tp_csv_check cap;
            memset(&cap, 0, sizeof cap);
            if (tp_csv_check_solution(p, s, 1, top - 1, &cap) == TP_OK)
                TPF_CHECK(cap.verdict == TP_CSV_OVER_CAPACITY,
                          "height %zu within capacity %zu", top, top - 1);
        }
        return;
    }
    TPF_CHECK(c.message[0] != '\0', "verdict %d without a message", (int)c.verdict);
    if (c.verdict == TP_CSV_OVERLAP) {
        TPF_CHECK(c.a < s->count && c.b < s->count && c.a != c.b, "overlap rows out of range");
        TPF_CHECK(csv_solution_clash(s, c.a, c.b), "rows %zu and %zu called overlapping", c.a,
                  c.b);
    }
}

/* A problem alone: plan it, write the plan, read it back, check it. */
static void csv_solution_self(const tp_csv_table *p)
{
    size_t *off = malloc((p->count ? p->count : 1) * sizeof *off), arena = 0;
    if (off == NULL || tp_plan_offsets(p->tensors, p->count, off, &arena) != TP_OK) {
        free(off);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f != NULL) {
        const tp_status wst = tp_csv_write_solution_stream(f, p, off);
        fclose(f);
        tp_csv_table s;
        memset(&s, 0, sizeof s);
        if (wst == TP_OK &&
            tp_csv_parse("planned.csv", text, len, TP_CSV_REQUIRE_OFFSET, &s) == TP_OK) {
            tp_csv_check c;
            memset(&c, 0, sizeof c);
            if (tp_csv_check_solution(p, &s, 0, 0, &c) == TP_OK)
                TPF_CHECK(c.verdict == TP_CSV_VALID && c.height == arena,
                          "the planner's own plan: %s (height %zu, arena %zu)", c.message,
                          c.height, arena);
            csv_solution_check(p, &s);
            tp_csv_free(&s);
        }
    }
    free(text);
    free(off);
}

static int fuzz_csv_solution(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    const size_t plen = nul != NULL ? (size_t)(nul - data) : size;
    tp_csv_table p;
    memset(&p, 0, sizeof p);
    if (tp_csv_parse("problem.csv", (const char *)data, plen, 0, &p) != TP_OK)
        return 0;
    if (nul == NULL) {
        csv_solution_self(&p);
    } else {
        tp_csv_table s;
        memset(&s, 0, sizeof s);
        if (tp_csv_parse("solution.csv", (const char *)nul + 1, size - plen - 1,
                         TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS, &s) == TP_OK) {
            csv_solution_check(&p, &s);
            tp_csv_free(&s);
        }
    }
    tp_csv_free(&p);
    return 0;
}

TPF_ENTRY(fuzz_csv_solution)
