/* MiniMalloc CSV reader and writer: every accepted oddity, every refusal with its line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tensorplan/csv.h"

/* What a row should read as, written out by hand from the text of each case. */
typedef struct row {
    const char *id;
    size_t lower, upper, size, offset;
} row;

static void parse_ok(const char *text, size_t length, unsigned flags, tp_csv_table *t)
{
    tp_status st = tp_csv_parse("case.csv", text, length, flags, t);
    if (st != TP_OK)
        print_error("unexpected refusal: %s\n", tp_last_error());
    assert_int_equal(st, TP_OK);
}

static void expect_rows(const tp_csv_table *t, const row *rows, size_t n, const size_t *lines,
                        int with_offset)
{
    assert_int_equal(t->count, n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(t->ids[i], rows[i].id);
        /* half-open [lower, upper) becomes the inclusive first..last */
        assert_int_equal(t->tensors[i].first_use, rows[i].lower);
        assert_int_equal(t->tensors[i].last_use, rows[i].upper - 1);
        assert_int_equal(t->tensors[i].size, rows[i].size);
        if (lines)
            assert_int_equal(t->lines[i], lines[i]);
        if (with_offset) {
            assert_non_null(t->offsets);
            assert_int_equal(t->offsets[i], rows[i].offset);
        }
    }
    if (!with_offset)
        assert_null(t->offsets);
}

static const row small[] = {{"b1", 0, 3, 4, 0}, {"b2", 3, 9, 4, 0}, {"b3", 0, 9, 4, 4}};
static const size_t small_lines[] = {2, 3, 4};

static void check_accepted(const char *text, const size_t *lines)
{
    tp_csv_table t;
    parse_ok(text, strlen(text), 0, &t);
    expect_rows(&t, small, 3, lines, 0);
    tp_csv_free(&t);
}

static void test_plain_file(void **state)
{
    (void)state;
    check_accepted("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\n", small_lines);
}

static void test_no_final_newline(void **state)
{
    (void)state;
    check_accepted("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4", small_lines);
}

static void test_crlf(void **state)
{
    (void)state;
    check_accepted("id,lower,upper,size\r\nb1,0,3,4\r\nb2,3,9,4\r\nb3,0,9,4\r\n", small_lines);
}

static void test_byte_order_mark(void **state)
{
    (void)state;
    check_accepted("\xEF\xBB\xBFid,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\n",
                   small_lines);
}

static void test_trailing_blank_lines(void **state)
{
    (void)state;
    check_accepted("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\n\n", small_lines);
    check_accepted("id,lower,upper,size\r\nb1,0,3,4\r\nb2,3,9,4\r\nb3,0,9,4\r\n\r\n \t\n",
                   small_lines);
}

static void test_spaces_around_fields(void **state)
{
    (void)state;
    check_accepted(" id , lower,upper ,\tsize\nb1 ,  0,3 , 4\t\n  b2,3,9,4\nb3,0,  9,4  \n",
                   small_lines);
}

static void test_columns_in_any_order_and_unknown_columns(void **state)
{
    (void)state;
    check_accepted("size,note,upper,ID,Lower\n4,x,3,b1,0\n4,,9,b2,3\n4,y,9,b3,0\n", small_lines);
}

static void test_quoted_fields(void **state)
{
    (void)state;
    const char *text = "\"id\",\"lower\",upper,size\n"
                       "\"a,b\",0,3,4\n"
                       "\"say \"\"hi\"\"\",\"3\",9, \"4\" \n"
                       "\"\"\"\",0,9,4\n";
    static const row rows[] = {{"a,b", 0, 3, 4, 0}, {"say \"hi\"", 3, 9, 4, 0}, {"\"", 0, 9, 4, 0}};
    tp_csv_table t;
    parse_ok(text, strlen(text), 0, &t);
    expect_rows(&t, rows, 3, small_lines, 0);
    tp_csv_free(&t);
}

static void test_solution_and_header_only(void **state)
{
    (void)state;
    const char *text = "id,lower,upper,size,offset\nb1,0,3,4,0\nb2,3,9,4,0\nb3,0,9,4,4\n";
    tp_csv_table t;
    parse_ok(text, strlen(text), TP_CSV_REQUIRE_OFFSET, &t);
    expect_rows(&t, small, 3, small_lines, 1);
    assert_null(t.offset_negative);
    tp_csv_free(&t);

    parse_ok("id,lower,upper,size\n", 20, 0, &t);
    assert_int_equal(t.count, 0);
    tp_csv_free(&t);
}

static void test_largest_value_and_signed_offsets(void **state)
{
    (void)state;
    const char *text = "id,lower,upper,size,offset\n"
                       "big,0,18446744073709551615,18446744073709551615,7\n"
                       "neg,1,2,3,-5\n";
    if (SIZE_MAX != 18446744073709551615u)
        skip();
    tp_csv_table t;
    parse_ok(text, strlen(text), TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS, &t);
    assert_int_equal(t.count, 2);
    assert_true(t.tensors[0].size == SIZE_MAX);
    assert_true(t.tensors[0].last_use == SIZE_MAX - 1);
    assert_non_null(t.offset_negative);
    assert_int_equal(t.offset_negative[0], 0);
    assert_int_equal(t.offsets[0], 7);
    assert_int_equal(t.offset_negative[1], 1);
    assert_int_equal(t.offsets[1], 5);
    tp_csv_free(&t);
}

/* A refusal: the status, "case.csv:LINE:" at the start and a hint of what was expected. */
static void refused(const char *text, unsigned flags, tp_status want, size_t line,
                    const char *needle)
{
    tp_csv_table t;
    memset(&t, 0xab, sizeof t);
    tp_status st = tp_csv_parse("case.csv", text, strlen(text), flags, &t);
    const char *msg = tp_last_error();
    char prefix[64];
    snprintf(prefix, sizeof prefix, "case.csv:%zu: ", line);
    int ok = st == want && strncmp(msg, prefix, strlen(prefix)) == 0 && strstr(msg, needle) &&
             !strchr(msg, '\n');
    if (!ok)
        print_error("input:\n%s\nstatus %s, message '%s'; wanted %s, '%s...%s'\n", text,
                    tp_status_name(st), msg, tp_status_name(want), prefix, needle);
    assert_true(ok);
    assert_int_equal(t.count, 0); /* nothing half-filled for the caller to free */
    assert_null(t.ids);
}

static void test_refuses_missing_columns(void **state)
{
    (void)state;
    refused("id,lower,size\nb1,0,4\n", 0, TP_ERR_INVALID, 1, "no column 'upper'");
    refused("id,lower,upper,size\nb1,0,3,4\n", TP_CSV_REQUIRE_OFFSET, TP_ERR_INVALID, 1,
            "no column 'offset'");
    /* a file without a header: its first row is taken for one and lacks the names */
    refused("b1,0,3,4\nb2,3,9,4\n", 0, TP_ERR_INVALID, 1, "no column 'id'");
    refused("id,lower,upper,size,lower\nb1,0,3,4,0\n", 0, TP_ERR_INVALID, 1, "twice");
}

static void test_refuses_short_and_long_rows(void **state)
{
    (void)state;
    refused("id,lower,upper,size\nb1,0,3,4\nb2,3,9\n", 0, TP_ERR_INVALID, 3, "expected 4 fields");
    refused("id,lower,upper,size\nb1,0,3,4,5\n", 0, TP_ERR_INVALID, 2, "long row");
    refused("id,lower,upper,size\nb1,0,3,4\nb2\n", 0, TP_ERR_INVALID, 3, "short row");
}

static void test_refuses_empty_lifetimes(void **state)
{
    (void)state;
    refused("id,lower,upper,size\nb1,0,3,4\nb2,5,5,4\n", 0, TP_ERR_INVALID, 3, "lower < upper");
    refused("id,lower,upper,size\nb1,7,3,4\n", 0, TP_ERR_INVALID, 2, "lower 7 >= upper 3");
}

static void test_refuses_bad_numbers(void **state)
{
    (void)state;
    const char *head = "id,lower,upper,size,offset\nb0,0,1,1,0\n";
    static const char *const bad[] = {"-1", "abc", "1.5", "", "1e3", "0x10", "12a", "-", "\"\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "%sb1,%s,3,4,0\n", head, bad[i]);
        refused(text, 0, TP_ERR_INVALID, 3, "column 'lower'");
        refused(text, 0, TP_ERR_INVALID, 3, "expected a non-negative integer");
        snprintf(text, sizeof text, "%sb1,0,3,%s,0\n", head, bad[i]);
        refused(text, 0, TP_ERR_INVALID, 3, "column 'size'");
        snprintf(text, sizeof text, "%sb1,0,3,4,%s\n", head, bad[i]);
        refused(text, TP_CSV_REQUIRE_OFFSET, TP_ERR_INVALID, 3, "column 'offset'");
    }
    /* even where negative offsets are allowed, text is still not a number */
    refused("id,lower,upper,size,offset\nb1,0,3,4,-x\n",
            TP_CSV_REQUIRE_OFFSET | TP_CSV_SIGNED_OFFSETS, TP_ERR_INVALID, 2, "column 'offset'");
    /* one past SIZE_MAX on 64-bit, and far past it anywhere */
    refused("id,lower,upper,size\nb1,0,3,18446744073709551616\n", 0, TP_ERR_OVERFLOW, 2,
            "out of range");
    refused("id,lower,upper,size\nb1,0,99999999999999999999999999,4\n", 0, TP_ERR_OVERFLOW, 2,
            "column 'upper'");
}

static void test_refuses_duplicate_and_empty_ids(void **state)
{
    (void)state;
    refused("id,lower,upper,size\nb1,0,3,4\nb2,0,3,4\nb1,5,6,4\n", 0, TP_ERR_INVALID, 4,
            "duplicate id 'b1' (first on line 2)");
    /* quotes and padding do not make an id different */
    refused("id,lower,upper,size\nb1,0,3,4\n \"b1\" ,5,6,4\n", 0, TP_ERR_INVALID, 3, "duplicate id");
    refused("id,lower,upper,size\n,0,3,4\n", 0, TP_ERR_INVALID, 2, "non-empty id");
}

static void test_refuses_unbalanced_quotes(void **state)
{
    (void)state;
    refused("id,lower,upper,size\n\"b1,0,3,4\n", 0, TP_ERR_INVALID, 2, "unbalanced quote");
    refused("id,lower,upper,size\nb1,0,3,4\nb\"2,3,9,4\n", 0, TP_ERR_INVALID, 3, "unbalanced quote");
    refused("id,lower,upper,size\n\"b1\"x,0,3,4\n", 0, TP_ERR_INVALID, 2, "closing quote");
    refused("\"id,lower,upper,size\nb1,0,3,4\n", 0, TP_ERR_INVALID, 1, "unbalanced quote");
}

static void test_refuses_empty_files(void **state)
{
    (void)state;
    refused("", 0, TP_ERR_INVALID, 1, "empty file");
    refused("\xEF\xBB\xBF", 0, TP_ERR_INVALID, 1, "empty file");
    refused("\n\r\n  \n", 0, TP_ERR_INVALID, 1, "empty file");
}

static void test_refuses_blank_lines_inside_the_data(void **state)
{
    (void)state;
    refused("id,lower,upper,size\nb1,0,3,4\n\nb2,3,9,4\n", 0, TP_ERR_INVALID, 3, "blank line");
    refused("\nid,lower,upper,size\nb1,0,3,4\n", 0, TP_ERR_INVALID, 1, "header");
}

static void test_refuses_nul_bytes(void **state)
{
    (void)state;
    static const char text[] = "id,lower,upper,size\na\0b,0,3,4\n";
    tp_csv_table t;
    assert_int_equal(tp_csv_parse("case.csv", text, sizeof text - 1, 0, &t), TP_ERR_INVALID);
    assert_true(strncmp(tp_last_error(), "case.csv:2: ", 12) == 0);
    assert_non_null(strstr(tp_last_error(), "NUL"));
}

static char *temp_path(const char *tag)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/tp_test_csv_%ld_%s.csv", (long)getpid(), tag);
    return path;
}

static void test_read_names_the_file(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s", temp_path("bad"));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("id,lower,upper,size\r\nb1,0,3,4\r\nb2,9,3,4\r\n", f);
    fclose(f);
    tp_csv_table t;
    assert_int_equal(tp_csv_read(path, 0, &t), TP_ERR_INVALID);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s:3: ", path);
    assert_true(strncmp(tp_last_error(), prefix, strlen(prefix)) == 0);
    unlink(path);
    assert_int_equal(tp_csv_read(path, 0, &t), TP_ERR_IO);
    assert_non_null(strstr(tp_last_error(), path));
}

static void test_written_solution_reads_back(void **state)
{
    (void)state;
    const char *text = "size,upper,lower,id\n4,3,0,plain\n8,9,3,\"a,comma\"\n"
                       "2,9,0,\"q\"\"uote\"\n1,2,1,\" padded \"\n";
    static const row rows[] = {{"plain", 0, 3, 4, 10},
                               {"a,comma", 3, 9, 8, 20},
                               {"q\"uote", 0, 9, 2, 30},
                               {" padded ", 1, 2, 1, 40}};
    tp_csv_table t, back;
    parse_ok(text, strlen(text), 0, &t);
    size_t offsets[] = {10, 20, 30, 40};
    char path[256];
    snprintf(path, sizeof path, "%s", temp_path("sol"));
    assert_int_equal(tp_csv_write_solution(path, &t, offsets), TP_OK);
    assert_int_equal(tp_csv_read(path, TP_CSV_REQUIRE_OFFSET, &back), TP_OK);
    static const size_t lines[] = {2, 3, 4, 5};
    expect_rows(&back, rows, 4, lines, 1);
    tp_csv_free(&back);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char first[64] = "";
    assert_non_null(fgets(first, sizeof first, f));
    fclose(f);
    assert_string_equal(first, "id,lower,upper,size,offset\n");
    unlink(path);

    /* a directory that does not exist: refused, and nothing is left behind */
    assert_int_equal(tp_csv_write_solution("/nonexistent-dir-tp/x.csv", &t, offsets), TP_ERR_IO);
    assert_non_null(strstr(tp_last_error(), "/nonexistent-dir-tp/x.csv"));
    tp_csv_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_file),
        cmocka_unit_test(test_no_final_newline),
        cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_byte_order_mark),
        cmocka_unit_test(test_trailing_blank_lines),
        cmocka_unit_test(test_spaces_around_fields),
        cmocka_unit_test(test_columns_in_any_order_and_unknown_columns),
        cmocka_unit_test(test_quoted_fields),
        cmocka_unit_test(test_solution_and_header_only),
        cmocka_unit_test(test_largest_value_and_signed_offsets),
        cmocka_unit_test(test_refuses_missing_columns),
        cmocka_unit_test(test_refuses_short_and_long_rows),
        cmocka_unit_test(test_refuses_empty_lifetimes),
        cmocka_unit_test(test_refuses_bad_numbers),
        cmocka_unit_test(test_refuses_duplicate_and_empty_ids),
        cmocka_unit_test(test_refuses_unbalanced_quotes),
        cmocka_unit_test(test_refuses_empty_files),
        cmocka_unit_test(test_refuses_blank_lines_inside_the_data),
        cmocka_unit_test(test_refuses_nul_bytes),
        cmocka_unit_test(test_read_names_the_file),
        cmocka_unit_test(test_written_solution_reads_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
