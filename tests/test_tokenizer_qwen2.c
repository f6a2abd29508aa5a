/* The tokenizer on the real Qwen2 vocabulary (tests/support/hf_vocab.h): the ids of texts in
 * many scripts against an independent tokenizer's, decoding back to the text, and 100 KB of
 * text in well under a second. Skipped when the vocabulary cannot be fetched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "support/hf_vocab.h"

/* 100 KB of mixed text: well under a second (a quadratic merge loop would not be), and the
 * text comes back unchanged. */
static void check_long_input(const tp_tokenizer *tok)
{
    const char *unit = "Some English, 12345 numbers;\n\tcode(x) { y  =  z; }  Grüße 你好世界 "
                       "Привет aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa           \n";
    size_t ul = strlen(unit), n = 0, cap = 100 * 1024;
    char *text = malloc(cap + ul);
    while (n < cap) {
        memcpy(text + n, unit, ul);
        n += ul;
    }
    int32_t *ids = NULL;
    size_t n_ids = 0;
    clock_t t0 = clock();
    assert_int_equal(tp_tokenizer_encode(tok, text, n, 0, 1, &ids, &n_ids), TP_OK);
    double s = (double)(clock() - t0) / CLOCKS_PER_SEC;
    fprintf(stderr, "100 KB: %zu ids in %.3f s\n", n_ids, s);
    assert_true(s < (getenv("TP_SANITIZED") ? 5.0 : 1.0));
    char *back = NULL;
    size_t len = 0;
    assert_int_equal(tp_tokenizer_decode(tok, ids, n_ids, 0, 1, &back, &len), TP_OK);
    assert_int_equal(len, n);
    assert_memory_equal(back, text, n);
    free(back);
    free(ids);
    free(text);
}

static void test_qwen2(void **state)
{
    (void)state;
    tp_tokenizer *tok = open_real("qwen3", "qwen2", -1);
    if (!tok)
        skip();
    assert_int_equal(tp_tokenizer_n_vocab(tok), 151669);
    assert_int_equal(tp_tokenizer_add_bos(tok), 0); /* qwen2: no bos by default */
    /* <|im_end|> and <|endoftext|> end generation (forced control, docs/tokenizer.md) */
    assert_true(tp_tokenizer_is_eog(tok, 151645));
    assert_true(tp_tokenizer_is_eog(tok, 151643));
    assert_false(tp_tokenizer_is_eog(tok, 151644));
    run_cases(tok, "qwen2_cases.json", 0, -1, 1);
    check_long_input(tok);
    tp_tokenizer_destroy(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
