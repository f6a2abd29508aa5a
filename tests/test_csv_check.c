/* tp_csv_check_solution against a pairwise oracle on seeded random solutions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/xorshift.h"
#include "tensorplan/csv.h"

typedef struct item {
    size_t lower, upper, size, offset;
    int negative;
} item;

static tpt_rng rng;
static size_t below(size_t n) { return tpt_rng_below(&rng, n); }

static int conflict(const item *a, const item *b)
{
    return a->lower < b->upper && b->lower < a->upper && a->size && b->size &&
           a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

/* Renders ITEMS as CSV text; ids are "t<index>", optionally with the offset column. */
static char *render(const item *items, size_t n, int with_offset, const size_t *order)
{
    size_t cap = 64 + n * 96;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t len = (size_t)snprintf(text, cap, with_offset ? "id,lower,upper,size,offset\n"
                                                         : "id,lower,upper,size\n");
    for (size_t k = 0; k < n; k++) {
        size_t i = order ? order[k] : k;
        const item *t = &items[i];
        len += (size_t)snprintf(text + len, cap - len, "t%zu,%zu,%zu,%zu", i, t->lower, t->upper,
                                t->size);
        if (with_offset)
            len += (size_t)snprintf(text + len, cap - len, ",%s%zu", t->negative ? "-" : "",
                                    t->offset);
        text[len++] = '\n';
        text[len] = '\0';
    }
    return text;
}

static void load(const char *name, const char *text, unsigned flags, tp_csv_table *t)
{
    tp_status st = tp_csv_parse(name, text, strlen(text), flags, t);
    if (st != TP_OK)
        fail_msg("%s", tp_last_error());
}

static tp_csv_check check(const item *items, size_t n, const size_t *order, int has_cap,
                          size_t cap)
{
    char *ptext = render(items, n, 0, NULL), *stext = render(items, n, 1, order);
    tp_csv_table p, s;
    load("p.csv", ptext, 0, &p);
    load("s.csv", stext, TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS, &s);
    tp_csv_check r;
    assert_int_equal(tp_csv_check_solution(&p, &s, has_cap, cap, &r), TP_OK);
    /* rows of the solution map back to items through their ids */
    if (r.verdict == TP_CSV_OVERLAP) {
        size_t a = strtoull(s.ids[r.a] + 1, NULL, 10), b = strtoull(s.ids[r.b] + 1, NULL, 10);
        assert_true(a != b);
        assert_true(conflict(&items[a], &items[b]));
        assert_non_null(strstr(r.message, s.ids[r.a]));
        assert_non_null(strstr(r.message, s.ids[r.b]));
    }
    tp_csv_free(&p);
    tp_csv_free(&s);
    free(ptext);
    free(stext);
    return r;
}

static void test_overlaps_match_a_pairwise_oracle(void **state)
{
    (void)state;
    size_t seen_valid = 0, seen_overlap = 0;
    for (uint64_t seed = 0; seed < 600; seed++) {
        rng = tpt_rng_seeded(seed);
        size_t n = 1 + below(30);
        item items[32];
        size_t order[32];
        /* half the seeds stack sizes so that most solutions are valid, half scatter freely */
        int dense = seed % 2 == 0;
        size_t top = 0;
        for (size_t i = 0; i < n; i++) {
            items[i].lower = below(20);
            items[i].upper = items[i].lower + 1 + below(6);
            items[i].size = below(8) == 0 ? 0 : 1 + below(16);
            items[i].negative = 0;
            if (dense) {
                items[i].offset = top;
                top += items[i].size;
            } else {
                items[i].offset = below(64);
            }
            order[i] = i;
        }
        if (dense && n > 1 && below(2)) /* one nudge makes an overlap likely, not certain */
            items[below(n)].offset = below(top + 1);
        for (size_t i = n; i > 1; i--) { /* rows in a shuffled order */
            size_t j = below(i), tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
        int any = 0;
        size_t height = 0;
        for (size_t i = 0; i < n; i++) {
            if (items[i].size && items[i].offset + items[i].size > height)
                height = items[i].offset + items[i].size;
            for (size_t j = i + 1; j < n; j++)
                any |= conflict(&items[i], &items[j]);
        }
        tp_csv_check r = check(items, n, order, 0, 0);
        if (any) {
            if (r.verdict != TP_CSV_OVERLAP)
                fail_msg("seed %llu: oracle finds an overlap, verdict %d: %s",
                         (unsigned long long)seed, (int)r.verdict, r.message);
            seen_overlap++;
            continue;
        }
        if (r.verdict != TP_CSV_VALID)
            fail_msg("seed %llu: no overlap, verdict %d: %s", (unsigned long long)seed,
                     (int)r.verdict, r.message);
        assert_int_equal(r.height, height);
        seen_valid++;
        assert_int_equal(check(items, n, order, 1, height).verdict, TP_CSV_VALID);
        if (height > 0)
            assert_int_equal(check(items, n, order, 1, height - 1).verdict, TP_CSV_OVER_CAPACITY);
    }
    /* both outcomes were exercised many times */
    assert_true(seen_valid > 100);
    assert_true(seen_overlap > 100);
}

static void test_identity_and_offset_verdicts(void **state)
{
    (void)state;
    tp_csv_table p, s;
    load("p.csv", "id,lower,upper,size\nt0,0,3,4\nt1,3,9,4\nt2,0,9,4\n", 0, &p);
    tp_csv_check r;
    struct {
        const char *text;
        tp_csv_verdict want;
        const char *needle;
    } cases[] = {
        {"id,lower,upper,size,offset\nt0,0,3,4,0\nt2,0,9,4,4\n", TP_CSV_MISSING_ROW,
         "p.csv:3: buffer 't1' has no row"},
        {"id,lower,upper,size,offset\nt0,0,3,4,0\nt1,3,9,4,0\nt2,0,9,4,4\nt3,0,1,1,0\n",
         TP_CSV_EXTRA_ROW, "s.csv:5: buffer 't3' is not in the problem"},
        {"id,lower,upper,size,offset\nt0,0,3,4,0\nt1,3,8,4,0\nt2,0,9,4,4\n", TP_CSV_MISMATCH,
         "s.csv:3: buffer 't1'"},
        {"id,lower,upper,size,offset\nt0,0,3,4,0\nt1,3,9,4,-1\nt2,0,9,4,4\n",
         TP_CSV_NEGATIVE_OFFSET, "s.csv:3: buffer 't1' has offset -1"},
        {"id,lower,upper,size,offset\nt0,0,3,4,18446744073709551613\nt1,3,9,4,0\nt2,0,9,4,4\n",
         TP_CSV_OFFSET_OVERFLOW, "s.csv:2: buffer 't0'"},
        {"id,offset,lower,upper,size\nt2,4,0,9,4\nt1,0,3,9,4\nt0,0,0,3,4\n", TP_CSV_VALID, ""},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (SIZE_MAX != 18446744073709551615u && cases[k].want == TP_CSV_OFFSET_OVERFLOW)
            continue;
        load("s.csv", cases[k].text, TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS, &s);
        assert_int_equal(tp_csv_check_solution(&p, &s, 0, 0, &r), TP_OK);
        if (r.verdict != cases[k].want || !strstr(r.message, cases[k].needle))
            fail_msg("case %zu: verdict %d '%s', wanted %d '%s'", k, (int)r.verdict, r.message,
                     (int)cases[k].want, cases[k].needle);
        tp_csv_free(&s);
    }
    tp_csv_free(&p);
}

/* A large valid solution with long overlapping lifetimes: the sweep must not be quadratic. */
static void test_large_solution(void **state)
{
    (void)state;
    size_t n = getenv("TP_SANITIZED") ? 20000 : 200000;
    item *items = malloc(n * sizeof *items);
    assert_non_null(items);
    rng.state = 12345;
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        items[i].lower = below(1000);
        items[i].upper = items[i].lower + 1 + below(100000);
        items[i].size = 1 + below(100);
        items[i].offset = top;
        items[i].negative = 0;
        top += items[i].size;
    }
    tp_csv_check r = check(items, n, NULL, 1, top);
    assert_int_equal(r.verdict, TP_CSV_VALID);
    assert_int_equal(r.height, top);
    /* one buffer live throughout, moved onto buffer 0 */
    items[n - 1].lower = 0;
    items[n - 1].upper = 200000;
    items[n - 1].offset = items[0].offset;
    assert_true(conflict(&items[n - 1], &items[0]));
    assert_int_equal(check(items, n, NULL, 0, 0).verdict, TP_CSV_OVERLAP);
    free(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overlaps_match_a_pairwise_oracle),
        cmocka_unit_test(test_identity_and_offset_verdicts),
        cmocka_unit_test(test_large_solution),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
