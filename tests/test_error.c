/* Library messages are one line whatever a name in them holds (src/common/error.c): control
 * bytes become C escapes, and a message longer than the buffer is cut, never overrun. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/error.h"

static void test_control_bytes_become_escapes(void **state)
{
    (void)state;
    assert_int_equal(tp_fail(TP_ERR_INVALID, "tensor '%s': bad", "a\nb\tc\001d\177"),
                     TP_ERR_INVALID);
    assert_string_equal(tp_last_error(), "tensor 'a\\nb\\tc\\x01d\\x7f': bad");
    assert_null(strchr(tp_last_error(), '\n'));
}

static void test_a_long_message_is_cut_inside_the_buffer(void **state)
{
    (void)state;
    char name[3 * TP_ERROR_MAX];
    memset(name, '\n', sizeof name - 1); /* each byte becomes two */
    name[sizeof name - 1] = '\0';
    tp_fail(TP_ERR_INVALID, "%s", name);
    const size_t n = strlen(tp_last_error());
    assert_true(n < TP_ERROR_MAX && n + 2 >= TP_ERROR_MAX - 1);
    for (size_t i = 0; i < n; i += 2)
        assert_memory_equal(tp_last_error() + i, "\\n", 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_control_bytes_become_escapes),
        cmocka_unit_test(test_a_long_message_is_cut_inside_the_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
