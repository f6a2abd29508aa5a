/* Fuzzing harness: the MiniMalloc CSV reader (tp_csv_parse) on any bytes, under every flag
 * set. A refusal must leave a message; an accepted table must hold what the format promises
 * (inclusive lifetimes, increasing line numbers, offsets when required), and writing it as a
 * solution and reading that back must give the same table. */
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "tensorplan/csv.h"
#include "tensorplan/status.h"

static void csv_problem_round_trip(const tp_csv_table *t)
{
    size_t *offsets = malloc((t->count ? t->count : 1) * sizeof *offsets);
    if (offsets == NULL)
        return;
    for (size_t i = 0; i < t->count; i++)
        offsets[i] = t->offsets != NULL ? t->offsets[i] : t->tensors[i].size;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL) {
        free(offsets);
        return;
    }
    const tp_status wst = tp_csv_write_solution_stream(f, t, offsets);
    fclose(f);
    if (wst == TP_OK) {
        tp_csv_table back;
        memset(&back, 0, sizeof back);
        const tp_status rst = tp_csv_parse("written.csv", text, len, TP_CSV_REQUIRE_OFFSET, &back);
        TPF_CHECK(rst == TP_OK, "a written solution is refused: %s", tp_last_error());
        TPF_CHECK(back.count == t->count, "%zu rows written, %zu read back", t->count,
                  back.count);
        for (size_t i = 0; i < t->count; i++) {
            TPF_CHECK(strcmp(back.ids[i], t->ids[i]) == 0, "row %zu: id changed", i);
            TPF_CHECK(back.tensors[i].size == t->tensors[i].size &&
                          back.tensors[i].first_use == t->tensors[i].first_use &&
                          back.tensors[i].last_use == t->tensors[i].last_use,
                      "row %zu: lifetime or size changed", i);
            TPF_CHECK(back.offsets[i] == offsets[i], "row %zu: offset changed", i);
        }
        tp_csv_free(&back);
    }
    free(text);
    free(offsets);
}

static int fuzz_csv_problem(const uint8_t *data, size_t size)
{
    static const unsigned flag_sets[] = { 0, TP_CSV_REQUIRE_OFFSET,
                                          TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS };
    for (size_t k = 0; k < sizeof flag_sets / sizeof flag_sets[0]; k++) {
        const unsigned flags = flag_sets[k];
        tp_csv_table t;
        memset(&t, 0, sizeof t);
        const tp_status st = tp_csv_parse("fuzz.csv", (const char *)data, size, flags, &t);
        if (st != TP_OK) {
            TPF_CHECK(tp_last_error()[0] != '\0', "refused (status %d) without a message",
                      (int)st);
            continue;
        }
        TPF_CHECK(!(flags & TP_CSV_REQUIRE_OFFSET) || t.offsets != NULL,
                  "offsets required but missing");
        TPF_CHECK((flags & TP_CSV_SIGNED_OFFSETS) || t.offset_negative == NULL,
                  "negative offsets without the flag");
        for (size_t i = 0; i < t.count; i++) {
            TPF_CHECK(t.ids[i] != NULL, "row %zu: no id", i);
            TPF_CHECK(t.tensors[i].first_use <= t.tensors[i].last_use,
                      "row %zu: empty lifetime accepted", i);
            TPF_CHECK(t.lines[i] >= 2 && (i == 0 || t.lines[i] > t.lines[i - 1]),
                      "row %zu: line %zu out of order", i, t.lines[i]);
        }
        if (t.offset_negative == NULL)
            csv_problem_round_trip(&t);
        tp_csv_free(&t);
    }
    return 0;
}

TPF_ENTRY(fuzz_csv_problem)
