/* tp_gguf_tokenizer on GGUF files written with the library's writer: the hand-made
 * vocabularies of the tokenizer tests read back from tokenizer.ggml.* keys (expectations
 * derived by hand from docs/tokenizer.md, as in those tests), the id and flag keys, and
 * refusals of missing and wrongly typed keys, each naming the key. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/tokenizer_vocab.h"
#include "support/vocab_gguf.h"
#include "tensorplan/gguf.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/tokenizer.h"

/* The byte-level vocabulary of test_tokenizer_bpe.c's merge-order case (second ranks) plus
 * two specials: 0 a 1 b 2 c 3 ab 4 bc 5 aa 6 aaaa 7 <s> 8 <|im_end|> */
static void bpe_vocab(test_vocab *v)
{
    static const char *const texts[] = {"a", "b", "c", "ab", "bc", "aa", "aaaa", "<s>",
                                        "<|im_end|>"};
    memset(v, 0, sizeof *v);
    v->model = "gpt2";
    v->pre = "qwen2";
    v->n = sizeof texts / sizeof *texts;
    for (size_t i = 0; i < v->n; i++)
        v->tokens[i] = texts[i];
    v->types[7] = v->types[8] = TP_TOKEN_CONTROL;
    v->n_merges = 4;
    v->merges[0] = "a b";
    v->merges[1] = "b c";
    v->merges[2] = "a a";
    v->merges[3] = "aa aa";
}

/* The file's bytes from a writer, opened with the reader; the buffer goes to *mem. */
static tp_gguf *open_writer(tp_gguf_writer *w, void **mem)
{
    size_t size = 0;
    assert_int_equal(tp_gguf_writer_to_memory(w, mem, &size), TP_OK);
    tp_gguf *g = NULL;
    tp_status st = tp_gguf_open_memory("vocab.gguf", *mem, size, &g);
    if (st != TP_OK)
        fprintf(stderr, "%s\n", tp_last_error());
    assert_int_equal(st, TP_OK);
    tp_gguf_writer_destroy(w);
    return g;
}

static tp_gguf_writer *writer_of(const test_vocab *v)
{
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(vg_add_vocab(w, v), 0);
    return w;
}

static tp_tokenizer *load(tp_gguf_writer *w)
{
    void *mem = NULL;
    tp_gguf *g = open_writer(w, &mem);
    tp_tokenizer *t = NULL;
    tp_status st = tp_gguf_tokenizer(g, &t);
    if (st != TP_OK)
        fprintf(stderr, "%s\n", tp_last_error());
    assert_int_equal(st, TP_OK);
    tp_gguf_close(g);
    free(mem); /* the tokenizer keeps copies of what it uses */
    return t;
}

/* Encodes with parse_special on (tv_expect_ids of support/tokenizer_vocab.h). */
static void expect_ids(const tp_tokenizer *t, const char *text, int add_special,
                       const int32_t *want, size_t n_want)
{
    tv_expect_ids(t, text, add_special, 1, want, n_want);
}

/* Every text and type as written (types 0 in the table are written as normal). */
static void expect_table(const tp_tokenizer *t, const test_vocab *v)
{
    assert_int_equal(tp_tokenizer_n_vocab(t), v->n);
    for (size_t i = 0; i < v->n; i++) {
        size_t len = 0;
        const char *text = tp_tokenizer_token_text(t, (int32_t)i, &len);
        assert_non_null(text);
        assert_int_equal(len, strlen(v->tokens[i]));
        assert_memory_equal(text, v->tokens[i], len);
        assert_int_equal(tp_tokenizer_token_type(t, (int32_t)i),
                         v->types[i] ? v->types[i] : TP_TOKEN_NORMAL);
    }
}

static void test_spm_round_trip(void **state)
{
    (void)state;
    test_vocab v;
    tv_spm_vocab(&v);
    tp_tokenizer *t = load(writer_of(&v));
    expect_table(t, &v);
    /* no id keys: the SentencePiece defaults bos 1, eos 2, add_bos, space prefix */
    assert_int_equal(tp_tokenizer_bos(t), 1);
    assert_int_equal(tp_tokenizer_eos(t), 2);
    assert_int_equal(tp_tokenizer_add_bos(t), 1);
    /* the scores came through: "▁hello" merges to one token only with them (see
     * test_tokenizer_spm.c for the derivation) */
    expect_ids(t, "hello", 1, IDS(1, 15));
    expect_ids(t, "hi</s>hi", 1, IDS(1, 17, 2, 17));
    /* "▁a!": no pair is a token; "!" falls back to its byte token <0x21> */
    expect_ids(t, "a!", 0, IDS(3, 9, 19));
    tp_tokenizer_destroy(t);

    /* add_space_prefix false, add_bos false, eos 0 by key */
    tp_gguf_writer *w = writer_of(&v);
    assert_int_equal(tp_gguf_writer_add_bool(w, "tokenizer.ggml.add_space_prefix", 0), TP_OK);
    assert_int_equal(tp_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 0), TP_OK);
    assert_int_equal(tp_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 0), TP_OK);
    t = load(w);
    assert_int_equal(tp_tokenizer_add_bos(t), 0);
    assert_int_equal(tp_tokenizer_eos(t), 0);
    /* no prefix: he -2, ll -3, llo -5: [he, llo]; no bos added */
    expect_ids(t, "hello", 1, IDS(11, 14));
    tp_tokenizer_destroy(t);
}

static void test_bpe_round_trip(void **state)
{
    (void)state;
    test_vocab v;
    bpe_vocab(&v);
    tp_gguf_writer *w = writer_of(&v);
    assert_int_equal(tp_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 7), TP_OK);
    assert_int_equal(tp_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 8), TP_OK);
    assert_int_equal(tp_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 1), TP_OK);
    tp_tokenizer *t = load(w);
    expect_table(t, &v);
    assert_int_equal(tp_tokenizer_bos(t), 7);
    assert_int_equal(tp_tokenizer_eos(t), 8);
    assert_int_equal(tp_tokenizer_add_bos(t), 1);
    assert_int_equal(tp_tokenizer_add_eos(t), 0);
    /* merges by rank: ab (0), then "ab c" has none: [ab, c]; "aaaaa": [aaaa, a] */
    expect_ids(t, "abc", 1, IDS(7, 3, 2));
    expect_ids(t, "aaaaa", 0, IDS(6, 0));
    expect_ids(t, "c<|im_end|>", 0, IDS(2, 8));
    assert_true(tp_tokenizer_is_eog(t, 8));
    assert_false(tp_tokenizer_is_eog(t, 7));
    tp_tokenizer_destroy(t);

    /* merges in the other order change the result: rank 0 "b c" gives [a, bc] */
    v.merges[0] = "b c";
    v.merges[1] = "a b";
    t = load(writer_of(&v));
    expect_ids(t, "abc", 0, IDS(0, 4));
    tp_tokenizer_destroy(t);
}

/* An id key not below the vocabulary size is refused, naming the key (it was taken as absent,
 * so a default id -- a byte token -- was added as bos and ended generation as eos); the last
 * id is in range. */
static void test_ids_out_of_range(void **state)
{
    (void)state;
    static const char *const keys[] = {
        "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
        "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id",
        "tokenizer.ggml.seperator_token_id",
    };
    test_vocab v;
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        static const uint32_t bad[] = {1000000000u, 22u}; /* 22: the number of tokens */
        for (size_t j = 0; j < 2; j++) {
            tv_spm_vocab(&v);
            assert_int_equal(v.n, 22);
            tp_gguf_writer *w = writer_of(&v);
            assert_int_equal(tp_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 1),
                             TP_OK);
            assert_int_equal(tp_gguf_writer_add_u32(w, keys[k], bad[j]), TP_OK);
            void *mem = NULL;
            tp_gguf *g = open_writer(w, &mem);
            tp_tokenizer *t = NULL;
            assert_int_equal(tp_gguf_tokenizer(g, &t), TP_ERR_INVALID);
            assert_null(t);
            if (!strstr(tp_last_error(), keys[k]) || !strstr(tp_last_error(), "not below"))
                fail_msg("%s", tp_last_error());
            tp_gguf_close(g);
            free(mem);
        }
    }
    tv_spm_vocab(&v);
    tp_gguf_writer *w = writer_of(&v);
    assert_int_equal(tp_gguf_writer_add_u32(w, "tokenizer.ggml.eot_token_id", 21), TP_OK);
    tp_tokenizer *t = load(w);
    /* 21 (the last id) is in range: an eot id ends generation */
    assert_true(tp_tokenizer_is_eog(t, 21));
    tp_tokenizer_destroy(t);
}

/* A NUL inside the model or pre name is refused: "gpt2\0x" is no gpt2, "qwen2\0" no
 * qwen2 (a C string comparison stopped at the NUL). */
static void test_nul_in_names(void **state)
{
    (void)state;
    /* written with 0x01 where the NUL goes, then patched in the file's bytes */
    static const struct { const char *key; const char *value; size_t len; } cases[] = {
        {"tokenizer.ggml.model", "gpt2\001x", 6},
        {"tokenizer.ggml.model", "gpt2\001", 5},
        {"tokenizer.ggml.pre", "qwen2\001", 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        test_vocab v;
        bpe_vocab(&v);
        if (strcmp(cases[i].key, "tokenizer.ggml.model") == 0)
            v.model = cases[i].value;
        else
            v.pre = cases[i].value;
        tp_gguf_writer *w = writer_of(&v);
        void *mem = NULL;
        size_t size = 0;
        assert_int_equal(tp_gguf_writer_to_memory(w, &mem, &size), TP_OK);
        tp_gguf_writer_destroy(w);
        char *at = memmem(mem, size, cases[i].value, cases[i].len);
        assert_non_null(at);
        *(char *)memchr(at, 1, cases[i].len) = '\0';
        tp_gguf *g = NULL;
        assert_int_equal(tp_gguf_open_memory("vocab.gguf", mem, size, &g), TP_OK);
        tp_tokenizer *t = NULL;
        assert_int_equal(tp_gguf_tokenizer(g, &t), TP_ERR_INVALID);
        assert_null(t);
        if (!strstr(tp_last_error(), cases[i].key) || !strstr(tp_last_error(), "NUL"))
            fail_msg("%s", tp_last_error());
        tp_gguf_close(g);
        free(mem);
    }
}

/* How a refusal file differs from the valid SentencePiece one. */
typedef enum change {
    OMIT, /* the key is not written                      */
    WRONG_TYPE, /* written with another type          */
    SHORT, /* an array with one entry too few           */
} change;

static void write_changed(tp_gguf_writer *w, const test_vocab *v, const char *key, change how)
{
    int32_t types[TV_MAX];
    for (size_t i = 0; i < v->n; i++)
        types[i] = v->types[i] ? v->types[i] : TP_TOKEN_NORMAL;
    const size_t n = how == SHORT ? v->n - 1 : v->n;
    static const double f64[TV_MAX];
    static const uint32_t u32[TV_MAX];
#define WRITE(name, ok_expr, bad_expr)                                                      \
    if (strcmp(key, name) != 0)                                                             \
        assert_int_equal(ok_expr, TP_OK);                                                   \
    else if (how == WRONG_TYPE)                                                             \
        assert_int_equal(bad_expr, TP_OK);                                                  \
    else if (how == SHORT)                                                                  \
        assert_int_equal(ok_expr, TP_OK);
    WRITE("tokenizer.ggml.model", tp_gguf_writer_add_string(w, "tokenizer.ggml.model", v->model),
          tp_gguf_writer_add_u32(w, "tokenizer.ggml.model", 1))
    WRITE("tokenizer.ggml.tokens",
          tp_gguf_writer_add_strings(w, "tokenizer.ggml.tokens", v->tokens,
                                     strcmp(key, "tokenizer.ggml.tokens") ? v->n : n),
          tp_gguf_writer_add_array(w, "tokenizer.ggml.tokens", TP_GGUF_U32, u32, v->n))
    WRITE("tokenizer.ggml.scores",
          tp_gguf_writer_add_array(w, "tokenizer.ggml.scores", TP_GGUF_F32, v->scores,
                                   strcmp(key, "tokenizer.ggml.scores") ? v->n : n),
          tp_gguf_writer_add_array(w, "tokenizer.ggml.scores", TP_GGUF_F64, f64, v->n))
    WRITE("tokenizer.ggml.token_type",
          tp_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TP_GGUF_I32, types,
                                   strcmp(key, "tokenizer.ggml.token_type") ? v->n : n),
          tp_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TP_GGUF_U32, u32, v->n))
    WRITE("tokenizer.ggml.bos_token_id",
          tp_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", 1),
          tp_gguf_writer_add_i32(w, "tokenizer.ggml.bos_token_id", 1))
    WRITE("tokenizer.ggml.eos_token_id",
          tp_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 2),
          tp_gguf_writer_add_u64(w, "tokenizer.ggml.eos_token_id", 2))
    WRITE("tokenizer.ggml.add_bos_token",
          tp_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 1),
          tp_gguf_writer_add_u8(w, "tokenizer.ggml.add_bos_token", 1))
    WRITE("tokenizer.ggml.pre", tp_gguf_writer_add_string(w, "tokenizer.ggml.pre", "default"),
          tp_gguf_writer_add_u32(w, "tokenizer.ggml.pre", 0))
#undef WRITE
}

static void expect_refused(const test_vocab *v, const char *key, change how)
{
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    write_changed(w, v, key, how);
    void *mem = NULL;
    tp_gguf *g = open_writer(w, &mem);
    tp_tokenizer *t = (tp_tokenizer *)&t;
    tp_status st = tp_gguf_tokenizer(g, &t);
    const char *msg = tp_last_error();
    if (st != TP_ERR_INVALID || !strstr(msg, key) || !strstr(msg, "vocab.gguf")) {
        fprintf(stderr, "%s (change %d): status %d, message \"%s\"\n", key, (int)how, (int)st,
                msg);
        fail();
    }
    assert_null(t);
    tp_gguf_close(g);
    free(mem);
}

static void test_refusals(void **state)
{
    (void)state;
    test_vocab v;
    tv_spm_vocab(&v);
    /* the unchanged file loads (the refusals below are due to their change alone) */
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    write_changed(w, &v, "none", OMIT);
    tp_tokenizer *t = load(w);
    assert_int_equal(tp_tokenizer_n_vocab(t), v.n);
    tp_tokenizer_destroy(t);

    expect_refused(&v, "tokenizer.ggml.model", OMIT);
    expect_refused(&v, "tokenizer.ggml.tokens", OMIT);
    static const char *const typed[] = {
        "tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
        "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.pre",
    };
    for (size_t i = 0; i < sizeof typed / sizeof *typed; i++)
        expect_refused(&v, typed[i], WRONG_TYPE);
    expect_refused(&v, "tokenizer.ggml.scores", SHORT);
    expect_refused(&v, "tokenizer.ggml.token_type", SHORT);
}

/* gpt2 needs merges; an unknown model or pre is refused by name, with the file named. */
static void test_refused_values(void **state)
{
    (void)state;
    test_vocab v;
    bpe_vocab(&v);
    v.n_merges = 0;
    void *mem = NULL;
    tp_gguf *g = open_writer(writer_of(&v), &mem);
    tp_tokenizer *t = NULL;
    assert_int_equal(tp_gguf_tokenizer(g, &t), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "tokenizer.ggml.merges"));
    tp_gguf_close(g);
    free(mem);

    static const char *const models[] = {"bert", "gpt2"};
    static const char *const pres[] = {"qwen2", "gpt2"};
    for (size_t k = 0; k < 2; k++) {
        bpe_vocab(&v);
        v.model = models[k];
        v.pre = pres[k];
        g = open_writer(writer_of(&v), &mem);
        assert_int_equal(tp_gguf_tokenizer(g, &t), TP_ERR_INVALID);
        assert_null(t);
        const char *msg = tp_last_error();
        assert_non_null(strstr(msg, "vocab.gguf"));
        assert_non_null(strstr(msg, k == 0 ? "bert" : "gpt2"));
        tp_gguf_close(g);
        free(mem);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spm_round_trip),
        cmocka_unit_test(test_bpe_round_trip),
        cmocka_unit_test(test_ids_out_of_range),
        cmocka_unit_test(test_nul_in_names),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_refused_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
