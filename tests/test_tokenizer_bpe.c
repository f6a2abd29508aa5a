/* Byte-level BPE on hand-made vocabularies: pre-tokenizer splits, the merge queue, byte
 * fallback, special tokens and defaults. Every expectation below is derived by hand from the
 * rules of docs/tokenizer.md; the comments give the derivation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenizer/tokenizer_internal.h"
#include "support/tokenizer_vocab.h"
#include "tensorplan/tokenizer.h"

static tp_tokenizer *make(test_vocab *v)
{
    tp_vocab_desc d;
    tv_fill(&d, v);
    tp_tokenizer *t = NULL;
    tp_status st = tp_tokenizer_create(&d, &t);
    if (st != TP_OK)
        fprintf(stderr, "%s\n", tp_last_error());
    assert_int_equal(st, TP_OK);
    return t;
}

/* A tokenizer with one token, used only for its pre-tokenizer. */
static tp_tokenizer *pre_only(const char *pre)
{
    test_vocab v = {.model = "gpt2", .pre = pre, .n = 12};
    static const char *const letters[12] = {"a", "b", "c", "d", "e", "f",
                                            "g", "h", "i", "j", "k", "l"};
    for (size_t i = 0; i < 12; i++)
        v.tokens[i] = letters[i];
    return make(&v);
}

/* Splits text with pre and compares the pieces with the NULL-terminated list want. */
static void expect_split(const char *pre, const char *text, const char *const *want)
{
    tp_tokenizer *t = pre_only(pre);
    size_t *spans = NULL, n = 0, k = 0;
    assert_int_equal(tp_pretok_split(t, text, strlen(text), &spans, &n), TP_OK);
    for (; want[k]; k++) {
        if (k >= n || spans[2 * k + 1] != strlen(want[k]) ||
            memcmp(text + spans[2 * k], want[k], strlen(want[k])) != 0) {
            fprintf(stderr, "%s: piece %zu of \"%s\": want \"%s\", got \"%.*s\"\n", pre, k, text,
                    want[k], k < n ? (int)spans[2 * k + 1] : 0, k < n ? text + spans[2 * k] : "");
            fail();
        }
    }
    assert_int_equal(n, k);
    free(spans);
    tp_tokenizer_destroy(t);
}

static void test_split_gpt2(void **state)
{
    (void)state;
    /* "Hello" and " world" by ` ?\p{L}+`; "'s" by the contraction; " 123" by ` ?\p{N}+`.
     * Two spaces before "abc": `\s+(?!\S)` takes "  ", fails before 'a', backs off to " ";
     * " abc" follows. "!!" by ` ?[^\s\p{L}\p{N}]+`. "\n\nx": "\n" (the second \n is not \S),
     * then "\n" before 'x' matches nothing and stays as a gap, then "x". */
    static const char *const w1[] = {"Hello", " world", "'s", " 123", " ", " abc", "!!",
                                     "\n", "\n", "x", NULL};
    expect_split("gpt-2", "Hello world's 123  abc!!\n\nx", w1);
    /* R_GPT2's contractions are lower case only: "'S" is punctuation then a letter. */
    static const char *const w2[] = {"IT", "'", "S", NULL};
    expect_split("gpt-2", "IT'S", w2);
    /* \s includes U+0085: the first of two is taken by `\s+(?!\S)` (the second is), the second
     * precedes 'b' and is a gap. Were U+0085 not \s, `[^\s\p{L}\p{N}]+` would take both. */
    static const char *const w3[] = {"a", "\xc2\x85", "\xc2\x85", "b", NULL};
    expect_split("phi-2", "a\xc2\x85\xc2\x85" "b", w3);
    /* U+180E (a format character) is not \s: both are one `[^\s\p{L}\p{N}]+` piece. Were it
     * \s, the first would be `\s+(?!\S)` and the second a gap, as for U+0085 above. */
    static const char *const w5[] = {"a", "\xe1\xa0\x8e\xe1\xa0\x8e", "b", NULL};
    expect_split("gpt-2", "a\xe1\xa0\x8e\xe1\xa0\x8e" "b", w5);
    /* U+00A0 is \s too, U+200B is not (a format character, matched as "other"). */
    static const char *const w4[] = {"a", "\xc2\xa0", " b", "\xe2\x80\x8b", NULL};
    expect_split("gpt-2", "a\xc2\xa0 b\xe2\x80\x8b", w4);
}

static void test_split_llama3(void **state)
{
    (void)state;
    /* "IT", then "'S" by '[sS]. Before "12345" the space matches only the last alternative
     * `\s+` (no letter follows, `\s+(?!\S)` fails before '1'), so " " alone; digits by
     * `\p{N}{1,3}`: "123", "45". " ok" by `[^\r\n\p{L}\p{N}]?\p{L}+`. "\r\n\r\n" by
     * `\s*[\r\n]+` (\s* backs off to "\r\n\r", [\r\n]+ takes "\n"). Then " " (`\s+(?!\S)`
     * backed off from two spaces), " x", and the final "  " (end of text is not \S). */
    static const char *const w1[] = {"IT", "'S", " ", "123", "45", " ok", "\r\n\r\n", " ", " x",
                                     "  ", NULL};
    expect_split("llama-bpe", "IT'S 12345 ok\r\n\r\n  x  ", w1);
    expect_split("llama3", "IT'S 12345 ok\r\n\r\n  x  ", w1);
    /* ` ?[^\s\p{L}\p{N}]+[\r\n]*` keeps trailing newlines with punctuation. */
    static const char *const w2[] = {"x", ";\n\n", "y", NULL};
    expect_split("llama-bpe", "x;\n\ny", w2);
}

static void test_split_qwen2(void **state)
{
    (void)state;
    /* As llama-bpe but `\p{N}`: one digit per piece. "½" is No, so a number too; Greek and
     * Arabic-Indic digits: letters \p{L}, "٣" (U+0663, Nd) a digit. */
    static const char *const w1[] = {"ab", " ", "1", "2", " c", NULL};
    expect_split("qwen2", "ab 12 c", w1);
    static const char *const w2[] = {"\xce\xa9\xce\xbc\xce\xad\xce\xb3\xce\xb1", "\xc2\xbd",
                                     "\xd9\xa3", NULL};
    expect_split("qwen2", "\xce\xa9\xce\xbc\xce\xad\xce\xb3\xce\xb1\xc2\xbd\xd9\xa3", w2);
    /* 'Ll by '[lL][lL] (case-insensitive contractions) */
    static const char *const w3[] = {"WE", "'LL", NULL};
    expect_split("qwen2", "WE'LL", w3);
}

static void test_split_smollm(void **state)
{
    (void)state;
    /* Pass 1 `\p{N}`: "x ", "4", "2", "y". Pass 2 R_GPT2 on "x ": "x", then " " at the end of
     * its piece; the space cannot join "42" across the piece edge. */
    static const char *const w1[] = {"x", " ", "4", "2", "y", NULL};
    expect_split("smollm", "x 42y", w1);
    /* "a  1": pass 1 gives "a  " and "1". In "a  " the lookahead of `\s+(?!\S)` sees the end
     * of the piece, not '1', so "  " stays one piece. */
    static const char *const w2[] = {"a", "  ", "1", NULL};
    expect_split("smollm", "a  1", w2);
}

static void test_split_default(void **state)
{
    (void)state;
    /* Pass 1 `[\p{P}\$\+<=>\^~\|]+`: "a" "+" "b" "=" "1234" "!"; pass 2 and 3 keep them;
     * pass 4 `[0-9][0-9][0-9]`: "1234" -> "123" "4". Absent pre means default. */
    static const char *const w1[] = {"a", "+", "b", "=", "123", "4", "!", NULL};
    expect_split("default", "a+b=1234!", w1);
    expect_split(NULL, "a+b=1234!", w1);
    /* "x, y": ",", then " y" (the space is not punctuation, so it stays with y) */
    static const char *const w2[] = {"x", ",", " y", NULL};
    expect_split(NULL, "x, y", w2);
}

static void test_refusals(void **state)
{
    (void)state;
    test_vocab v = {.model = "gpt2", .pre = "gpt2", .n = 2, .tokens = {"a", "b"}};
    tp_vocab_desc d;
    tv_fill(&d, &v);
    tp_tokenizer *t = NULL;
    /* "gpt2" is the model's name, not a pre-tokenizer */
    assert_int_equal(tp_tokenizer_create(&d, &t), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "\"gpt2\""));
    d.pre = "qwen2";
    d.model = "bert";
    assert_int_equal(tp_tokenizer_create(&d, &t), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "bert"));
    /* llama-bpe adds bos by default, and the default bos 11 is not among 2 tokens */
    d.model = "gpt2";
    d.pre = "llama-bpe";
    assert_int_equal(tp_tokenizer_create(&d, &t), TP_ERR_INVALID);
    /* duplicate texts */
    test_vocab w = {.model = "gpt2", .pre = "qwen2", .n = 2, .tokens = {"a", "a"}};
    tv_fill(&d, &w);
    assert_int_equal(tp_tokenizer_create(&d, &t), TP_ERR_INVALID);
    assert_null(t);
}

static void test_merge_order(void **state)
{
    (void)state;
    /* 0 a 1 b 2 c 3 ab 4 bc 5 aa 6 aaaa */
    test_vocab v = {.model = "gpt2", .pre = "qwen2", .n = 7,
                    .tokens = {"a", "b", "c", "ab", "bc", "aa", "aaaa"}};
    v.n_merges = 3;
    v.merges[0] = "b c"; /* rank 0 */
    v.merges[1] = "a b"; /* rank 1 */
    v.merges[2] = "aa aa";
    tp_tokenizer *t = make(&v);
    /* "abc": pairs ab (1), bc (0); bc first, then "a bc" has no rank: [a, bc] */
    tv_expect_ids(t, "abc", 0, 0, IDS(0, 4));
    /* "aaa": no "a a" merge: three symbols */
    tv_expect_ids(t, "aaa", 0, 0, IDS(0, 0, 0));
    tp_tokenizer_destroy(t);
    v.merges[0] = "a b";
    v.merges[1] = "b c";
    v.merges[2] = "a a";
    v.n_merges = 4;
    v.merges[3] = "aa aa";
    t = make(&v);
    /* ranks swapped: ab (0) first, then "ab c" has no rank: [ab, c] */
    tv_expect_ids(t, "abc", 0, 0, IDS(3, 2));
    /* "aaa": "a a" at positions 0 and 1 tie; the leftmost merges: [aa, a] */
    tv_expect_ids(t, "aaa", 0, 0, IDS(5, 0));
    /* "aaaa": aa at 0, then the pair at 1 is stale (its left was consumed), aa at 2; then
     * "aa aa" (rank 3) joins them: [aaaa] */
    tv_expect_ids(t, "aaaa", 0, 0, IDS(6));
    /* "aaaaa": aa, aa, a; then aaaa + a: [aaaa, a] */
    tv_expect_ids(t, "aaaaa", 0, 0, IDS(6, 0));
    tp_tokenizer_destroy(t);
}

static void test_ignore_merges(void **state)
{
    (void)state;
    /* "abc" is a token but no merge builds it. 0..11 fill up to the default bos 11. */
    test_vocab v = {.model = "gpt2", .pre = "llama-bpe", .n = 12,
                    .tokens = {"a", "b", "c", "abc", "ab", "4", "5", "6", "7", "8", "9", "<s>"}};
    v.n_merges = 1;
    v.merges[0] = "a b";
    tp_tokenizer *t = make(&v);
    /* llama-bpe: the whole piece "abc" is a token: emitted without merging */
    tv_expect_ids(t, "abc", 0, 0, IDS(3));
    /* and bos (default 11) is added by default */
    assert_int_equal(tp_tokenizer_add_bos(t), 1);
    tv_expect_ids(t, "abc", 1, 0, IDS(11, 3));
    tp_tokenizer_destroy(t);
    v.pre = "qwen2";
    t = make(&v);
    /* qwen2: merges only: ab + c */
    tv_expect_ids(t, "abc", 0, 0, IDS(4, 2));
    assert_int_equal(tp_tokenizer_add_bos(t), 0);
    tv_expect_ids(t, "abc", 1, 0, IDS(4, 2));
    tp_tokenizer_destroy(t);
}

static void test_bytes(void **state)
{
    (void)state;
    /* 0 a, 1 b, 2 the one-byte text C2, 3 "Ġ" (space), 4 "Ġb", 5 U+FFFD byte-encoded:
     * EF BF BD -> U+00EF U+00BF U+00BD ("ï¿½"), 6 "ï¿" */
    test_vocab v = {.model = "gpt2", .pre = "gpt-2", .n = 7,
                    .tokens = {"a", "b", "\xc2", "\xc4\xa0", "\xc4\xa0" "b",
                               "\xc3\xaf\xc2\xbf\xc2\xbd", "\xc3\xaf\xc2\xbf"}};
    v.n_merges = 3;
    v.merges[0] = "\xc4\xa0 b";
    v.merges[1] = "\xc3\xaf \xc2\xbf";
    v.merges[2] = "\xc3\xaf\xc2\xbf \xc2\xbd";
    tp_tokenizer *t = make(&v);
    /* " b": bytes 20 62 -> "Ġ" "b" -> merged "Ġb" */
    tv_expect_ids(t, "a b", 0, 0, IDS(0, 4));
    /* "aéb" is one \p{L}+ piece; é = C3 A9 -> U+00C3 U+00A9 = "Ã" (C3 83) "©" (C2 A9): not
     * tokens, so their bytes one by one: C3 has no token, so the text is refused (exit 3
     * on the command line), never encoded with the byte dropped. */
    int32_t *ids = NULL;
    size_t n_ids = 0;
    assert_int_equal(tp_tokenizer_encode(t, "a\xc3\xa9" "b", 4, 0, 0, &ids, &n_ids),
                     TP_ERR_INVALID);
    assert_null(ids);

    /* an invalid byte FF reads as U+FFFD, one piece, merged to token 5; so do a lone
     * continuation byte and a truncated sequence */
    tv_expect_ids(t, "a\xff" "b", 0, 0, IDS(0, 5, 1));
    tv_expect_ids(t, "\x80", 0, 0, IDS(5));
    tv_expect_ids(t, "a\xe2\x82", 0, 0, IDS(0, 5, 5));
    tp_tokenizer_destroy(t);
}

static void test_specials(void **state)
{
    (void)state;
    /* 0 a 1 b 2 c 3 <|x|> control 4 <u> user-defined 5 < 6 | 7 x 8 > 9 u 10 ab control
     * 11 abc user-defined 12 xy control 13 yz control 14 y 15 z */
    test_vocab v = {.model = "gpt2", .pre = "qwen2", .n = 16,
                    .tokens = {"a", "b", "c", "<|x|>", "<u>", "<", "|", "x", ">", "u", "ab",
                               "abc", "xy", "yz", "y", "z"},
                    .types = {[3] = TP_TOKEN_CONTROL, [4] = TP_TOKEN_USER_DEFINED,
                              [10] = TP_TOKEN_CONTROL, [11] = TP_TOKEN_USER_DEFINED,
                              [12] = TP_TOKEN_CONTROL, [13] = TP_TOKEN_CONTROL}};
    tp_tokenizer *t = make(&v);
    /* parse_special: both matched */
    tv_expect_ids(t, "c<|x|>c<u>c", 0, 1, IDS(2, 3, 2, 4, 2));
    /* without: the control token is text, split by the qwen2 regex into "c", "<|", "x", "|>"
     * "c" (no merges, so one token per character); <u> is matched all the same */
    tv_expect_ids(t, "c<|x|>c<u>c", 0, 0, IDS(2, 5, 6, 7, 6, 8, 2, 4, 2));
    /* longest first: "abc" (3) before "ab" (2): "abcab" -> [abc, ab] */
    tv_expect_ids(t, "abcab", 0, 1, IDS(11, 10));
    /* equal lengths by ascending id: "xy" (12) before "yz" (13): "xyz" -> [xy, z] */
    tv_expect_ids(t, "xyz", 0, 1, IDS(12, 15));
    tp_tokenizer_destroy(t);
}

/* Token texts as stored: the vocabulary's bytes, "[EMPTY_i]" for an empty one
 * (include/tensorplan/tokenizer.h), NULL and type -1 outside [0, V). */
static void test_token_text(void **state)
{
    (void)state;
    test_vocab v = {.model = "gpt2", .pre = "gpt-2", .n = 3, .tokens = {"a", "", "bc"}};
    tp_tokenizer *t = make(&v);
    const char *want[3] = {"a", "[EMPTY_1]", "bc"};
    for (int32_t id = 0; id < 3; id++) {
        size_t len = 0;
        const char *text = tp_tokenizer_token_text(t, id, &len);
        assert_non_null(text);
        assert_int_equal(len, strlen(want[id]));
        assert_memory_equal(text, want[id], len);
    }
    size_t len = 0;
    assert_null(tp_tokenizer_token_text(t, -1, &len));
    assert_null(tp_tokenizer_token_text(t, 3, &len));
    assert_int_equal(tp_tokenizer_token_type(t, 3), -1);
    tp_tokenizer_destroy(t);
}

static void test_bos_eos(void **state)
{
    (void)state;
    test_vocab v = {.model = "gpt2", .pre = "gpt-2", .n = 5, .tokens = {"a", "<s>", "</s>",
                                                                        "b", "<|im_end|>"}};
    tp_vocab_desc d;
    tv_fill(&d, &v);
    d.bos = 1;
    d.eos = 2;
    d.add_bos = 1;
    d.add_eos = 1;
    tp_tokenizer *t = NULL;
    assert_int_equal(tp_tokenizer_create(&d, &t), TP_OK);
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(tp_tokenizer_encode(t, "ab", 2, 1, 0, &ids, &n), TP_OK);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[3], 2);
    free(ids);
    /* add_special off: neither */
    assert_int_equal(tp_tokenizer_encode(t, "ab", 2, 0, 0, &ids, &n), TP_OK);
    assert_int_equal(n, 2);
    free(ids);
    /* end of generation: eos and <|im_end|> (forced to control), not bos */
    assert_true(tp_tokenizer_is_eog(t, 2));
    assert_true(tp_tokenizer_is_eog(t, 4));
    assert_false(tp_tokenizer_is_eog(t, 1));
    assert_int_equal(tp_tokenizer_token_type(t, 4), TP_TOKEN_CONTROL);
    tp_tokenizer_destroy(t);
    /* defaults for gpt-2: no bos, no eos; bos = eos = 11 is no token of 5 */
    tv_fill(&d, &v);
    assert_int_equal(tp_tokenizer_create(&d, &t), TP_OK);
    assert_int_equal(tp_tokenizer_add_bos(t), 0);
    assert_int_equal(tp_tokenizer_add_eos(t), 0);
    assert_int_equal(tp_tokenizer_bos(t), -1);
    tp_tokenizer_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_gpt2),    cmocka_unit_test(test_split_llama3),
        cmocka_unit_test(test_split_qwen2),   cmocka_unit_test(test_split_smollm),
        cmocka_unit_test(test_split_default), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_merge_order),   cmocka_unit_test(test_ignore_merges),
        cmocka_unit_test(test_bytes),         cmocka_unit_test(test_specials),
        cmocka_unit_test(test_token_text),
        cmocka_unit_test(test_bos_eos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
