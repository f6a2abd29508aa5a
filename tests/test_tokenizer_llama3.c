/* The tokenizer on the real Llama 3 vocabulary (tests/support/hf_vocab.h) (pre llama-bpe, bos added):
 * the ids of texts in many scripts against an independent tokenizer's. Skipped when the vocabulary cannot be fetched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/hf_vocab.h"

static void test_llama3(void **state)
{
    (void)state;
    tp_tokenizer *tok = open_real("llama3", "llama-bpe", 128000);
    if (!tok)
        skip();
    assert_int_equal(tp_tokenizer_add_bos(tok), 1); /* llama-bpe: bos by default */
    run_cases(tok, "llama3_cases.json", 0, 128000, 0);
    run_cases(tok, "llama3_cases.json", 1, 128000, 0);
    tp_tokenizer_destroy(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
