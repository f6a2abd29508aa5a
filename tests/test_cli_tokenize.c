/* `tensorplan tokenize` and `tensorplan detokenize` run as a user would, on GGUF files this
 * test writes with hand-made vocabularies; the expected ids and texts are derived by hand from
 * docs/tokenizer.md (the same vocabularies as test_tokenizer_spm.c and test_gguf_vocab.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/cli_run.h"
#include "support/tokenizer_vocab.h"
#include "support/vocab_gguf.h"
#include "tensorplan/gguf.h"


static char dir[] = "/tmp/tp_cli_tokenize_XXXXXX";
static char spm_path[256], bpe_path[256], bare_path[256], bad_path[256], text_path[256];

/* 0 a 1 b 2 c 3 ab 4 bc 5 "Ġ" 6 "Ġa" 7 <|im_end|>; merges "a b", "b c", "Ġ a" */
static void bpe_vocab(test_vocab *v)
{
    static const char *const texts[] = {"a", "b", "c", "ab", "bc", "\xc4\xa0",
                                        "\xc4\xa0" "a", "<|im_end|>"};
    memset(v, 0, sizeof *v);
    v->model = "gpt2";
    v->pre = "qwen2";
    v->n = sizeof texts / sizeof *texts;
    for (size_t i = 0; i < v->n; i++)
        v->tokens[i] = texts[i];
    v->types[7] = TP_TOKEN_CONTROL;
    v->n_merges = 3;
    v->merges[0] = "a b";
    v->merges[1] = "b c";
    v->merges[2] = "\xc4\xa0 a";
}

static void write_vocab(const char *path, void (*fill)(test_vocab *))
{
    test_vocab v;
    fill(&v);
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(vg_add_vocab(w, &v), 0);
    assert_int_equal(tp_gguf_writer_write(w, path), TP_OK);
    tp_gguf_writer_destroy(w);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(spm_path, sizeof spm_path, "%s/spm.gguf", dir);
    snprintf(bpe_path, sizeof bpe_path, "%s/bpe.gguf", dir);
    snprintf(bare_path, sizeof bare_path, "%s/bare.gguf", dir);
    snprintf(bad_path, sizeof bad_path, "%s/bad.gguf", dir);
    snprintf(text_path, sizeof text_path, "%s/text.txt", dir);
    write_vocab(spm_path, tv_spm_vocab);
    write_vocab(bpe_path, bpe_vocab);
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(tp_gguf_writer_add_string(w, "general.architecture", "llama"), TP_OK);
    assert_int_equal(tp_gguf_writer_write(w, bare_path), TP_OK);
    tp_gguf_writer_destroy(w);
    FILE *f = fopen(bad_path, "wb");
    assert_non_null(f);
    fwrite("GGUF\x03\x00\x00\x00\x01", 1, 9, f); /* cut inside n_tensors */
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    const char *names[] = {spm_path, bpe_path, bare_path, bad_path, text_path};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        unlink(names[i]);
    cli_remove_outputs(dir);
    rmdir(dir);
    return 0;
}

/* Runs the CLI with the arguments FMT formats and checks exit status and the exact standard
 * output. */
static void expect_out(int rc, const char *want, const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    cli_result r = cli_run(dir, args);
    if (r.rc != rc || strcmp(r.out, want) != 0) {
        fprintf(stderr, "%s: exit %d (want %d)\nout: [%s]\nwant: [%s]\nerr: %s\n", args, r.rc,
                rc, r.out, want, r.err);
        fail();
    }
    cli_free(&r);
}

/* Runs the CLI with the arguments FMT formats, expecting exit RC and one line on standard
 * error that holds NEEDLE. */
static void expect_refused(int rc, const char *needle, const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    cli_result r = cli_run(dir, args);
    if (r.rc != rc || cli_lines(r.err) != 1 || !strstr(r.err, needle) ||
        strncmp(r.err, "tensorplan: ", 12) != 0 || r.out_len != 0) {
        fprintf(stderr, "%s: exit %d (want %d)\nerr: [%s] (want \"%s\")\n", args, r.rc, rc,
                r.err, needle);
        fail();
    }
    cli_free(&r);
}

static void test_tokenize_spm(void **state)
{
    (void)state;
    /* bos (add_bos by default) then "▁hello" merged to one token (test_tokenizer_spm.c) */
    expect_out(0, "1 15\n", "tokenize '%s' hello", spm_path);
    expect_out(0, "15\n", "tokenize '%s' hello --no-special", spm_path);
    /* </s> matched as a token; the space prefix again after it */
    expect_out(0, "1 17 2 17\n", "tokenize '%s' 'hi</s>hi'", spm_path);
    /* without parse_special "</s>" is text; '<' has no token and no byte token: refused */
    expect_refused(3, "spm.gguf", "tokenize '%s' 'hi</s>hi' --no-parse-special", spm_path);
    /* pieces: bos shows its text, ▁ shows as a space */
    expect_out(0, "1 -> '<s>'\n15 -> ' hello'\n17 -> ' hi'\n", "tokenize '%s' --pieces 'hello hi'",
               spm_path);
    /* TEXT "-" reads standard input */
    FILE *f = fopen(text_path, "wb");
    assert_non_null(f);
    fputs("hello", f);
    fclose(f);
    expect_out(0, "1 15\n", "tokenize '%s' - < '%s'", spm_path, text_path);
    /* after "--" the text is positional; "▁a!": no pair is a token; '!' falls back to
     * <0x21> */
    expect_out(0, "3 9 19\n", "tokenize '%s' --no-special -- 'a!'", spm_path);
}

static void test_tokenize_bpe(void **state)
{
    (void)state;
    /* qwen2: no bos by default. "abc a": pieces "abc", " a"; ab (rank 0) then "ab c" has no
     * rank: [ab, c]; " a" -> "Ġa" by rank 2: [Ġa] */
    expect_out(0, "3 2 6\n", "tokenize '%s' 'abc a'", bpe_path);
    expect_out(0, "2 -> 'c'\n7 -> '<|im_end|>'\n", "tokenize '%s' 'c<|im_end|>' --pieces",
               bpe_path);
    /* 'd' is no token, and no byte token stands for it: refused as README and help say,
     * never encoded as "a" with the d dropped */
    expect_refused(3, "has no token", "tokenize '%s' 'ad'", bpe_path);
}

static void test_detokenize(void **state)
{
    (void)state;
    /* SentencePiece: the first piece loses its leading space; bos gives nothing (and takes
     * the strip with it, as in llama.cpp: " hello") */
    expect_out(0, "hello hi\n", "detokenize '%s' '15 17'", spm_path);
    expect_out(0, " hello\n", "detokenize '%s' 1,15", spm_path);
    expect_out(0, "<s> hello</s>\n", "detokenize '%s' '1 15 2' --special", spm_path);
    /* byte tokens give their byte: <0xC3> <0xA9> = "é" */
    expect_out(0, "a\xc3\xa9!\n", "detokenize '%s' '9 20 21 19'", spm_path);
    /* byte-level: Ġ maps back to a space */
    expect_out(0, "abc a\n", "detokenize '%s' '3 2 6'", bpe_path);
    FILE *f = fopen(text_path, "wb");
    assert_non_null(f);
    fputs("3, 2\n6\n", f);
    fclose(f);
    expect_out(0, "abc a\n", "detokenize '%s' - < '%s'", bpe_path, text_path);
}

static void test_refusals(void **state)
{
    (void)state;
    expect_refused(3, "tokenizer.ggml.model", "tokenize '%s' hello", bare_path);
    expect_refused(3, "bad.gguf", "detokenize '%s' 1", bad_path);
    expect_refused(1, "none.gguf", "tokenize '%s/none.gguf' hello", dir);
    /* usage: a missing text, an unknown flag, an id out of range, a list that is no list */
    expect_refused(2, "TEXT", "tokenize '%s'", spm_path);
    expect_refused(2, "--bogus", "tokenize '%s' hi --bogus", spm_path);
    expect_refused(2, "22", "detokenize '%s' '1 22'", spm_path);
    expect_refused(2, "IDS", "detokenize '%s' '1 x'", spm_path);
    expect_refused(2, "no token ids", "detokenize '%s' ' , '", spm_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokenize_spm),
        cmocka_unit_test(test_tokenize_bpe),
        cmocka_unit_test(test_detokenize),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
