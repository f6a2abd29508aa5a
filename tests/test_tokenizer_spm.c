/* SentencePiece BPE and detokenization on hand-made vocabularies, and byte-level BPE round
 * trips on random text. Expectations are derived by hand from docs/tokenizer.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/tokenizer_vocab.h"
#include "support/xorshift.h"
#include "tensorplan/tokenizer.h"


static tp_tokenizer *make_desc(tp_vocab_desc *d)
{
    tp_tokenizer *t = NULL;
    tp_status st = tp_tokenizer_create(d, &t);
    if (st != TP_OK)
        fprintf(stderr, "%s\n", tp_last_error());
    assert_int_equal(st, TP_OK);
    return t;
}

/* Encodes with parse_special on (tv_expect_ids of support/tokenizer_vocab.h). */
static void expect_ids(const tp_tokenizer *t, const char *text, int add_special,
                       const int32_t *want, size_t n_want)
{
    tv_expect_ids(t, text, add_special, 1, want, n_want);
}

static void expect_text(const tp_tokenizer *t, const int32_t *ids, size_t n, int remove_special,
                        int unparse_special, const char *want)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(tp_tokenizer_decode(t, ids, n, remove_special, unparse_special, &text, &len),
                     TP_OK);
    if (len != strlen(want) || memcmp(text, want, len) != 0) {
        fprintf(stderr, "want \"%s\", got \"%s\"\n", want, text);
        fail();
    }
    free(text);
}

static void test_spm_scores(void **state)
{
    (void)state;
    test_vocab v;
    tv_spm_vocab(&v);
    tp_vocab_desc d;
    tv_fill(&d, &v);
    tp_tokenizer *t = make_desc(&d);
    /* defaults: bos 1, eos 2, add_bos, space prefix */
    assert_int_equal(tp_tokenizer_bos(t), 1);
    assert_int_equal(tp_tokenizer_eos(t), 2);
    /* "▁hello": pairs ▁h -1, he -2, ll -3. ▁h merges (highest); he is stale; ll merges and
     * queues llo -5; ▁h+e = ▁he -4 merges; llo -5 merges; ▁he+llo = ▁hello -6: one token. */
    expect_ids(t, "hello", 1, IDS(1, 15));
    expect_ids(t, "hello", 0, IDS(15));
    /* the space prefix again after a special token: "hi</s>hi" -> ▁hi </s> ▁hi (▁h -1 first,
     * then ▁hi -7 beats the stale hi -10) */
    expect_ids(t, "hi</s>hi", 1, IDS(1, 17, 2, 17));
    tp_tokenizer_destroy(t);
    tv_fill(&d, &v);
    d.add_space_prefix = 0;
    t = make_desc(&d);
    /* no prefix: "hello": he -2 first, ll -3, then llo -5; "hell" and "hello" are no tokens */
    expect_ids(t, "hello", 0, IDS(11, 14));
    /* "aaa": aa at 0 and at 1 have equal scores: the leftmost merges: [aa, a] */
    expect_ids(t, "aaa", 0, IDS(18, 9));
    /* byte fallback: "!" -> <0x21>, "é" (C3 A9) -> <0xC3> <0xA9> */
    expect_ids(t, "a!\xc3\xa9", 0, IDS(9, 19, 20, 21));
    /* "ü" = C3 BC: BC has neither <0xBC> nor a one-byte token: refused */
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(tp_tokenizer_encode(t, "\xc3\xbc", 2, 0, 1, &ids, &n), TP_ERR_INVALID);
    assert_null(ids);
    tp_tokenizer_destroy(t);
}

static void test_spm_decode(void **state)
{
    (void)state;
    test_vocab v;
    tv_spm_vocab(&v);
    tp_vocab_desc d;
    tv_fill(&d, &v);
    tp_tokenizer *t = make_desc(&d);
    /* the leading space of the first piece goes (space prefix) unless bos was removed */
    expect_text(t, IDS(15), 0, 0, "hello");
    expect_text(t, IDS(1, 15), 1, 0, " hello");
    /* bos kept: its piece is the first (empty, or "<s>"), so the space of ▁hello stays */
    expect_text(t, IDS(1, 15), 0, 0, " hello");
    expect_text(t, IDS(1, 17, 2, 17), 0, 1, "<s> hi</s> hi");
    /* byte tokens give their byte; no clean-up of spaces for SPM: "▁" "!" stays " !" */
    expect_text(t, IDS(9, 19, 20, 21), 0, 0, "a!\xc3\xa9");
    expect_text(t, IDS(9, 3, 19), 0, 0, "a !");
    tp_tokenizer_destroy(t);
}

/* Byte-level vocabulary: the 256 byte characters (token b = byte b), plus "Ġt" "he" "Ġthe". */
static void byte_vocab(test_vocab *v, char storage[256][4], const char *pre)
{
    memset(v, 0, sizeof *v);
    v->model = "gpt2";
    v->pre = pre;
    for (int b = 0; b < 256; b++) {
        /* the byte table restated: printable Latin-1 stays, the other 68 bytes from U+0100 */
        static int next_cp = 0x100;
        int kept = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        int cp = kept ? b : next_cp++;
        if (b == 255)
            next_cp = 0x100;
        if (cp < 0x80) {
            storage[b][0] = (char)cp;
            storage[b][1] = 0;
        } else {
            storage[b][0] = (char)(0xC0 | (cp >> 6));
            storage[b][1] = (char)(0x80 | (cp & 63));
            storage[b][2] = 0;
        }
        v->tokens[b] = storage[b];
    }
    v->tokens[256] = "\xc4\xa0t";
    v->tokens[257] = "he";
    v->tokens[258] = "\xc4\xa0the";
    v->n = 259;
    v->merges[0] = "\xc4\xa0 t";
    v->merges[1] = "h e";
    v->merges[2] = "\xc4\xa0t he";
    v->n_merges = 3;
}

static void test_bpe_decode(void **state)
{
    (void)state;
    char storage[256][4];
    test_vocab v;
    byte_vocab(&v, storage, "gpt-2");
    tp_vocab_desc d;
    tv_fill(&d, &v);
    tp_tokenizer *t = make_desc(&d);
    /* " the" -> Ġthe; token ids of single bytes are the bytes */
    expect_ids(t, "a the", 0, IDS('a', 258));
    const char *text = "a , b . c ? d ! it 's I 'm we 're they 've don 't we 'll I 'd x ' y";
    int32_t ids[128];
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++)
        ids[i] = (unsigned char)text[i];
    /* clean_spaces (gpt-2): no space before , . ? !; " ' " -> "'"; no space before 's 'm 're
     * 've; the space before 't 'll 'd stays */
    expect_text(t, ids, n, 0, 0,
                "a, b. c? d! it's I'm we're they've don 't we 'll I 'd x'y");
    tp_tokenizer_destroy(t);
    byte_vocab(&v, storage, "qwen2");
    tv_fill(&d, &v);
    t = make_desc(&d);
    expect_text(t, ids, n, 0, 0, text); /* qwen2: no clean-up */
    tp_tokenizer_destroy(t);
}

static void test_bpe_pieces(void **state)
{
    (void)state;
    /* 0 "Ġa" 1 <|c|> control 2 <u> user-defined 3 "✓" (U+2713, off the byte table)
     * 4 </s> control 5 unused "zz" 6 byte type "q" */
    test_vocab v = {.model = "gpt2", .pre = "qwen2", .n = 7,
                    .tokens = {"\xc4\xa0" "a", "<|c|>", "<u>", "\xe2\x9c\x93", "</s>", "zz", "q"},
                    .types = {[1] = TP_TOKEN_CONTROL, [2] = TP_TOKEN_USER_DEFINED,
                              [4] = TP_TOKEN_CONTROL, [5] = TP_TOKEN_UNUSED,
                              [6] = TP_TOKEN_BYTE}};
    tp_vocab_desc d;
    tv_fill(&d, &v);
    d.eos = 4;
    d.add_eos = 1;
    tp_tokenizer *t = make_desc(&d);
    char buf[64];
    size_t len = 0;
    /* "Ġa" -> " a"; a buffer of 1 gets the first byte, *len the full length */
    assert_int_equal(tp_tokenizer_piece(t, 0, 0, buf, 1, &len), TP_OK);
    assert_int_equal(len, 2);
    assert_int_equal(buf[0], ' ');
    /* control: nothing, or its text with special; user-defined: its text either way */
    assert_int_equal(tp_tokenizer_piece(t, 1, 0, buf, sizeof buf, &len), TP_OK);
    assert_int_equal(len, 0);
    assert_int_equal(tp_tokenizer_piece(t, 1, 1, buf, sizeof buf, &len), TP_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(buf, "<|c|>", 5);
    assert_int_equal(tp_tokenizer_piece(t, 2, 0, buf, sizeof buf, &len), TP_OK);
    assert_int_equal(len, 3);
    /* unused and (for byte-level BPE) byte tokens give nothing */
    assert_int_equal(tp_tokenizer_piece(t, 5, 1, buf, sizeof buf, &len), TP_OK);
    assert_int_equal(len, 0);
    assert_int_equal(tp_tokenizer_piece(t, 6, 1, buf, sizeof buf, &len), TP_OK);
    assert_int_equal(len, 0);
    assert_int_equal(tp_tokenizer_piece(t, 7, 0, buf, sizeof buf, &len), TP_ERR_INVALID);
    /* U+2713 (E2 9C 93) is no byte character: [UNK_BYTE_0x + hex + text + ] */
    expect_text(t, IDS(3), 0, 0, "[UNK_BYTE_0xe29c93\xe2\x9c\x93]");
    /* remove_special drops the final eos (add_eos is set); the leading space of " a" stays, as
     * byte-level BPE has no space prefix; </s> is control, so kept only with unparse */
    expect_text(t, IDS(0, 1, 2, 4), 1, 0, " a<u>");
    expect_text(t, IDS(0, 1, 2, 4), 0, 1, " a<|c|><u></s>");
    expect_text(t, IDS(0, 1, 2, 4), 0, 0, " a<u>");
    tp_tokenizer_destroy(t);
}

/* The valid-UTF-8 reading of bytes restated from the table of well-formed sequences, each
 * ill-formed byte replaced by EF BF BD. Returns the length written to out. */
static size_t reference_clean(const unsigned char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned b = s[i];
        size_t k = 0;
        unsigned lo = 0x80, hi = 0xBF;
        if (b <= 0x7F) k = 1;
        else if (b >= 0xC2 && b <= 0xDF) k = 2;
        else if (b == 0xE0) { k = 3; lo = 0xA0; }
        else if (b >= 0xE1 && b <= 0xEC) k = 3;
        else if (b == 0xED) { k = 3; hi = 0x9F; }
        else if (b >= 0xEE && b <= 0xEF) k = 3;
        else if (b == 0xF0) { k = 4; lo = 0x90; }
        else if (b >= 0xF1 && b <= 0xF3) k = 4;
        else if (b == 0xF4) { k = 4; hi = 0x8F; }
        int ok = k > 0 && i + k <= n;
        for (size_t j = 1; ok && j < k; j++) {
            unsigned c = s[i + j];
            ok = j == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
        }
        if (!ok) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        }
    }
    return o;
}

static size_t random_utf8(tpt_rng *rng, unsigned char *out, size_t max_chars)
{
    size_t o = 0, n = 1 + tpt_rng_next(rng) % max_chars;
    static const unsigned ranges[][2] = {{0x20, 0x7E}, {0x09, 0x0D}, {0xA0, 0x2FF},
                                         {0x400, 0x4FF}, {0x2000, 0x206F}, {0x3000, 0x9FFF},
                                         {0xAC00, 0xD7A3}, {0x1F300, 0x1F6FF}};
    for (size_t i = 0; i < n; i++) {
        const unsigned *r = ranges[tpt_rng_next(rng) % 8];
        unsigned cp = r[0] + (unsigned)(tpt_rng_next(rng) % (r[1] - r[0] + 1));
        if (cp < 0x80) out[o++] = (unsigned char)cp;
        else if (cp < 0x800) {
            out[o++] = (unsigned char)(0xC0 | (cp >> 6));
            out[o++] = (unsigned char)(0x80 | (cp & 63));
        } else if (cp < 0x10000) {
            out[o++] = (unsigned char)(0xE0 | (cp >> 12));
            out[o++] = (unsigned char)(0x80 | ((cp >> 6) & 63));
            out[o++] = (unsigned char)(0x80 | (cp & 63));
        } else {
            out[o++] = (unsigned char)(0xF0 | (cp >> 18));
            out[o++] = (unsigned char)(0x80 | ((cp >> 12) & 63));
            out[o++] = (unsigned char)(0x80 | ((cp >> 6) & 63));
            out[o++] = (unsigned char)(0x80 | (cp & 63));
        }
    }
    return o;
}

static void round_trip(const tp_tokenizer *t, const unsigned char *in, size_t n,
                       const unsigned char *want, size_t n_want)
{
    int32_t *ids = NULL;
    size_t n_ids = 0, len = 0;
    char *back = NULL;
    assert_int_equal(tp_tokenizer_encode(t, (const char *)in, n, 0, 0, &ids, &n_ids), TP_OK);
    assert_int_equal(tp_tokenizer_decode(t, ids, n_ids, 0, 0, &back, &len), TP_OK);
    assert_int_equal(len, n_want);
    assert_memory_equal(back, want, n_want);
    free(back);
    free(ids);
}

static void test_round_trips(void **state)
{
    (void)state;
    static const char *const pres[] = {"qwen2", "smollm"}; /* the two without clean-up */
    char storage[256][4];
    unsigned char in[1024], want[3 * 1024];
    tpt_rng rng = tpt_rng_seeded(11);
    for (int p = 0; p < 2; p++) {
        test_vocab v;
        tp_vocab_desc d;
        byte_vocab(&v, storage, pres[p]);
        tv_fill(&d, &v);
        tp_tokenizer *t = make_desc(&d);
        for (int k = 0; k < 300; k++) { /* valid UTF-8 comes back as it was */
            size_t n = random_utf8(&rng, in, 200);
            round_trip(t, in, n, in, n);
        }
        for (int k = 0; k < 300; k++) { /* random bytes: ill-formed bytes come back as U+FFFD */
            size_t n = 1 + tpt_rng_next(&rng) % 300;
            for (size_t i = 0; i < n; i++)
                in[i] = (unsigned char)tpt_rng_next(&rng);
            round_trip(t, in, n, want, reference_clean(in, n, want));
        }
        tp_tokenizer_destroy(t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spm_scores),  cmocka_unit_test(test_spm_decode),
        cmocka_unit_test(test_bpe_decode),  cmocka_unit_test(test_bpe_pieces),
        cmocka_unit_test(test_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
