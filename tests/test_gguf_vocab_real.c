/* The real Qwen2 and Llama 3 vocabularies (tests/support/hf_vocab.h) written as
 * tokenizer.ggml.* keys of a GGUF file and read back with tp_gguf_tokenizer, and through
 * `tensorplan tokenize`: the ids of texts in many scripts against an independent tokenizer's
 * (tests/data/tokenizer/NAME_cases.json). Skipped when the vocabularies cannot be fetched. */
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
#include "support/hf_vocab.h"
#include "tensorplan/gguf.h"
#include "tensorplan/gguf_model.h"

static char dir[] = "/tmp/tp_vocab_real_XXXXXX";

/* One real vocabulary and what its GGUF file says. */
typedef struct real {
    const char *package, *pre, *cases;
    uint32_t bos, eos;
    int add_bos, round_trip;
    size_t n_vocab;
} real;

static const real QWEN2 = {"qwen3", "qwen2", "qwen2_cases.json", 151643, 151643, 0, 1, 151669};
static const real LLAMA3 = {"llama3", "llama-bpe", "llama3_cases.json", 128000, 128001, 1, 0,
                            128256};

/* The vocabulary as a GGUF converter writes it: model gpt2, pre, tokens, token_type, merges,
 * bos, eos, add_bos_token; returns 0, or -1 when it cannot be fetched. */
static int write_vocab(const real *rv, const char *path)
{
    char src[1200];
    vocab_path(rv->package, src, sizeof src);
    char *json = read_file(src, NULL);
    if (!json) {
        fprintf(stderr, "%s not found (npm unavailable?); skipped\n", src);
        return -1;
    }
    hf_vocab v = {0};
    load_hf(json, &v);
    free(json);
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(tp_gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2"), TP_OK);
    assert_int_equal(tp_gguf_writer_add_string(w, "tokenizer.ggml.pre", rv->pre), TP_OK);
    assert_int_equal(tp_gguf_writer_add_strings(w, "tokenizer.ggml.tokens",
                                                (const char *const *)v.tokens, v.n), TP_OK);
    assert_int_equal(tp_gguf_writer_add_array(w, "tokenizer.ggml.token_type", TP_GGUF_I32,
                                              v.types, v.n), TP_OK);
    assert_int_equal(tp_gguf_writer_add_strings(w, "tokenizer.ggml.merges",
                                                (const char *const *)v.merges, v.n_merges),
                     TP_OK);
    assert_int_equal(tp_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", rv->bos), TP_OK);
    assert_int_equal(tp_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", rv->eos), TP_OK);
    assert_int_equal(tp_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", rv->add_bos),
                     TP_OK);
    assert_int_equal(tp_gguf_writer_write(w, path), TP_OK);
    tp_gguf_writer_destroy(w);
    free_hf(&v);
    return 0;
}

/* One case through the command line: the text from a file on standard input; bos first
 * when the vocabulary adds it. */
static void check_cli(const real *rv, const char *path, const cJSON *c)
{
    const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
    const cJSON *ids = cJSON_GetObjectItem(c, "ids");
    char in[300], args[1024], want[8192];
    snprintf(in, sizeof in, "%s/text.txt", dir);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    size_t n = 0;
    if (rv->add_bos)
        n += (size_t)snprintf(want, sizeof want, "%u", rv->bos);
    for (const cJSON *e = ids->child; e; e = e->next)
        n += (size_t)snprintf(want + n, sizeof want - n, "%s%d", n ? " " : "",
                              (int)e->valuedouble);
    snprintf(want + n, sizeof want - n, "\n");
    snprintf(args, sizeof args, "tokenize '%s' - < '%s'", path, in);
    cli_result r = cli_run(dir, args);
    if (r.rc != 0 || strcmp(r.out, want) != 0) {
        fprintf(stderr, "\"%s\": exit %d\n got  %s want %s%s\n", text, r.rc, r.out, want, r.err);
        fail();
    }
    cli_free(&r);
    unlink(in);
}

static void check_real(const real *rv)
{
    memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
    if (!mkdtemp(dir))
        fail();
    char path[300];
    snprintf(path, sizeof path, "%s/vocab.gguf", dir);
    if (write_vocab(rv, path) != 0) {
        rmdir(dir);
        skip();
    }
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    tp_tokenizer *tok = NULL;
    assert_int_equal(tp_gguf_tokenizer(g, &tok), TP_OK);
    tp_gguf_close(g);
    assert_int_equal(tp_tokenizer_n_vocab(tok), rv->n_vocab);
    assert_int_equal(tp_tokenizer_bos(tok), (int32_t)rv->bos);
    assert_int_equal(tp_tokenizer_eos(tok), (int32_t)rv->eos);
    assert_int_equal(tp_tokenizer_add_bos(tok), rv->add_bos);
    assert_true(tp_tokenizer_is_eog(tok, (int32_t)rv->eos));
    run_cases(tok, rv->cases, 0, (int32_t)rv->bos, rv->round_trip);
    if (rv->add_bos)
        run_cases(tok, rv->cases, 1, (int32_t)rv->bos, 0);
    tp_tokenizer_destroy(tok);

    /* the command line on one case with many scripts (each run reads the whole vocabulary) */
    char cases[1024];
    snprintf(cases, sizeof cases, "%s/tokenizer/%s", TP_TEST_DATA, rv->cases);
    char *json = read_file(cases, NULL);
    assert_non_null(json);
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    const cJSON *list = cJSON_GetObjectItem(root, "cases");
    const cJSON *longest = list->child;
    for (const cJSON *e = list->child; e; e = e->next)
        if (strlen(cJSON_GetObjectItem(e, "text")->valuestring) >
            strlen(cJSON_GetObjectItem(longest, "text")->valuestring))
            longest = e;
    check_cli(rv, path, longest);
    cJSON_Delete(root);
    free(json);

    unlink(path);
    cli_remove_outputs(dir);
    rmdir(dir);
}

static void test_qwen2_from_gguf(void **state)
{
    (void)state;
    check_real(&QWEN2);
}

static void test_llama3_from_gguf(void **state)
{
    (void)state;
    check_real(&LLAMA3);
}

int main(void)
{
    (void)open_real; /* hf_vocab.h's desc path; this test goes through a file instead */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen2_from_gguf),
        cmocka_unit_test(test_llama3_from_gguf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
