/* Graph JSON: integers above 2^53 (the largest a JSON number, read as a double, carries
 * exactly; docs/graph.md) are refused with a message that names the limit, not only
 * "expected a positive integer". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tensorplan/graph.h"
#include "tensorplan/graph_io.h"
#include "tensorplan/status.h"

static tp_status parse(const char *extent, const char *n_ctx, tp_graph **g)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"format\": \"tensorplan-graph\", \"version\": 1, \"model\": \"m\", "
             "\"kind\": \"prefill\", \"n_ctx\": %s, \"inputs\": [0], \"outputs\": [0], "
             "\"nodes\": [{\"id\": 0, \"name\": \"x\", \"op\": \"input\", "
             "\"shape\": [%s, 1, 1, 1], \"dtype\": \"i32\", \"backend\": \"cpu\", \"src\": []}]}",
             n_ctx, extent);
    *g = NULL;
    return tp_graph_parse_json(text, strlen(text), "g.json", g);
}

static void test_extent_at_the_limit_is_read(void **state)
{
    (void)state;
    tp_graph *g = NULL;
    assert_int_equal(parse("9007199254740992", "8", &g), TP_OK);
    assert_non_null(g);
    tp_graph_destroy(g);
}

static void test_extent_above_the_limit_names_it(void **state)
{
    (void)state;
    const char *const over[] = { "9007199254740994", "18446744073709551616", "1e300" };
    for (size_t k = 0; k < 3; k++) {
        tp_graph *g = NULL;
        assert_int_equal(parse(over[k], "8", &g), TP_ERR_INVALID);
        assert_null(g);
        const char *msg = tp_last_error();
        assert_non_null(strstr(msg, "nodes[0].shape[0]"));
        assert_non_null(strstr(msg, "2^53"));
        assert_non_null(strstr(msg, "9007199254740992"));
    }
    /* below the range the message stays the plain one */
    tp_graph *g = NULL;
    assert_int_equal(parse("0", "8", &g), TP_ERR_INVALID);
    assert_null(strstr(tp_last_error(), "2^53"));
    assert_non_null(strstr(tp_last_error(), "positive integer, got 0"));
}

static void test_context_above_the_limit_names_it(void **state)
{
    (void)state;
    tp_graph *g = NULL;
    assert_int_equal(parse("2", "9007199254740994", &g), TP_ERR_INVALID);
    assert_null(g);
    assert_non_null(strstr(tp_last_error(), "n_ctx"));
    assert_non_null(strstr(tp_last_error(), "2^53"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extent_at_the_limit_is_read),
        cmocka_unit_test(test_extent_above_the_limit_names_it),
        cmocka_unit_test(test_context_above_the_limit_names_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
