/* `tensorplan run FILE.gguf` run as a user would, on test models of both families written
 * with tp_gguf_write_test_model. Oracle: the double-precision reference forward of
 * tests/support/ref_forward.c with half-split rope (NEOX pairs (i, i + D/2)) on
 * tp_weights_init_random of the same config and seed, the weights the file holds, with greedy
 * argmax written here. A llama file's q/k rows are run with NORM rope (pairs (2i, 2i + 1)),
 * which equals half-split rope on rows reordered the inverse way of the HF converter (docs/
 * gguf.md): file row 2r + s of a head is row s * D/2 + r of the reference. Also: text streamed to stdout, the stop at an end-of-generation
 * token, logits.f32 of --max-new 1 against the reference's prefill logits, every strategy
 * bit for bit equal, seeded sampling, and exit codes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/cli_run.h"
#include "support/ref_forward.h"
#include "tensorplan/gguf.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/kernels.h"
#include "tensorplan/test_model.h"
#include "tensorplan/model.h"
#include "tensorplan/quant.h"
#include "tensorplan/tokenizer.h"

enum { SEED = 7, MAX_NEW = 6 };

static char dir[] = "/tmp/tp_cli_run_gguf_XXXXXX";
static char qwen_path[256], llama_path[256];

static const int32_t prompt[] = {5, 17, 2, 40, 300};
#define PROMPT_TEXT "5 17 2 40 300"
enum { N_PROMPT = sizeof prompt / sizeof *prompt };

static void path_in(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

static void write_model(const char *path, const char *config, const char *tokenizer)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin(config, &c), TP_OK);
    tp_gguf_test_model how = {TP_TYPE_F32, SEED, tokenizer, "qwen2"};
    tp_status st = tp_gguf_write_test_model(path, &c, &how);
    if (st != TP_OK)
        fprintf(stderr, "%s\n", tp_last_error());
    assert_int_equal(st, TP_OK);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    path_in(qwen_path, sizeof qwen_path, "q.gguf");
    path_in(llama_path, sizeof llama_path, "l.gguf");
    write_model(qwen_path, "tiny-qwen2", "gpt2");
    write_model(llama_path, "tiny-llama", "llama");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The registry the reference runs: the seed's weights; for llama the q/k rows (and biases)
 * of every head reordered so that file row 2r + s becomes row s * D/2 + r. */
static tp_weights *reference_weights(const tp_model_config *c)
{
    tp_weights *w = NULL;
    assert_int_equal(tp_weights_init_random(c, SEED, &w), TP_OK);
    if (c->arch != TP_ARCH_LLAMA)
        return w;
    tp_weights *out = NULL;
    assert_int_equal(tp_weights_create(&out), TP_OK);
    const size_t D = (size_t)c->head_dim;
    for (size_t i = 0; i < tp_weights_count(w); i++) {
        const tp_weight *t = tp_weights_at(w, i);
        float *data = NULL;
        assert_int_equal(tp_weights_add(out, t->name, t->rows, t->cols, &data), TP_OK);
        const int qk = strstr(t->name, ".attn_q.") || strstr(t->name, ".attn_k.");
        const int vec = t->rows == 1; /* a bias: one row of n_out values */
        const size_t n_out = vec ? t->cols : t->rows, width = vec ? 1 : t->cols;
        for (size_t o = 0; o < n_out; o++) {
            size_t src = o;
            if (qk) {
                const size_t h = o / D, j = o % D, sh = j / (D / 2), r = j % (D / 2);
                src = h * D + 2 * r + sh;
            }
            memcpy(data + o * width, t->data + src * width, width * sizeof *data);
        }
    }
    tp_weights_destroy(w);
    return out;
}

/* Greedy decoding on the reference model M: the prompt, then one token at a time. out[i]
 * receives the argmax of step i's logits (the first on ties) and gap[i] its lead over the
 * second-best logit; the prompt's last-row logits go to prefill (vocab doubles) when not
 * NULL. */
static void greedy(ref_model *m, size_t vocab, size_t max_new, int32_t *out, double *gap,
                   double *prefill)
{
    double *l = malloc(N_PROMPT * vocab * sizeof *l);
    assert_non_null(l);
    assert_int_equal(ref_model_forward(m, prompt, N_PROMPT, l), 0);
    const double *last = l + (N_PROMPT - 1) * vocab;
    if (prefill)
        memcpy(prefill, last, vocab * sizeof *prefill);
    for (size_t i = 0; i < max_new; i++) {
        if (i > 0) {
            assert_int_equal(ref_model_forward(m, &out[i - 1], 1, l), 0);
            last = l;
        }
        size_t best = 0;
        for (size_t v = 1; v < vocab; v++)
            if (last[v] > last[best])
                best = v;
        double second = -INFINITY;
        for (size_t v = 0; v < vocab; v++)
            if (v != best && last[v] > second)
                second = last[v];
        gap[i] = last[best] - second;
        out[i] = (int32_t)best;
    }
    free(l);
}

/* The greedy tokens of the reference (at most MAX_NEW); *margin receives the smallest gap
 * between the best and second-best logit over the steps; the prefill's last-row logits go
 * to prefill (vocab doubles) when not NULL. */
/* The KV type the reference rounds its cache to (ref_model_set_kv_type): 0 exact. */
static uint32_t ref_kv_type;

static void reference(const char *config, size_t max_new, int32_t *out, double *margin,
                      double *prefill)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin(config, &c), TP_OK);
    tp_weights *w = reference_weights(&c);
    c.rope_mode = TP_ROPE_NEOX; /* the half-split rope, on the reordered rows */
    ref_model *m = NULL;
    assert_int_equal(ref_model_create(&c, w, 64, &m), 0);
    assert_int_equal(ref_model_set_kv_type(m, ref_kv_type), 0);
    double gap[MAX_NEW];
    assert_true(max_new <= MAX_NEW);
    greedy(m, (size_t)c.vocab, max_new, out, gap, prefill);
    *margin = INFINITY;
    for (size_t i = 0; i < max_new; i++)
        if (gap[i] < *margin)
            *margin = gap[i];
    ref_model_destroy(m);
    tp_weights_destroy(w);
}

/* The ids of the line "generated (N tokens): ..." of stderr; returns N, or -1. */
static int parse_generated(const char *err, int32_t *ids, int cap)
{
    const char *p = strstr(err, "generated (");
    if (!p)
        return -1;
    int n = 0, off = 0;
    if (sscanf(p, "generated (%d tokens):%n", &n, &off) != 1 || n > cap)
        return -1;
    p += off;
    for (int i = 0; i < n; i++) {
        if (sscanf(p, " %d%n", &ids[i], &off) != 1)
            return -1;
        p += off;
    }
    return n;
}

static cli_result run_ok(const char *args)
{
    cli_result r = cli_run(dir, args);
    if (r.rc != 0) {
        fprintf(stderr, "%s: exit %d\n%s\n", args, r.rc, r.err);
        fail();
    }
    return r;
}

/* The bytes the tokens stand for (the tokenizer's pieces), what stdout must show. */
static char *pieces_of(const char *path, const int32_t *ids, size_t n)
{
    tp_gguf *g = NULL;
    tp_tokenizer *t = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    assert_int_equal(tp_gguf_tokenizer(g, &t), TP_OK);
    char *text = calloc(4096, 1);
    assert_non_null(text);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t got = 0;
        assert_int_equal(tp_tokenizer_piece(t, ids[i], 0, text + len, 4000 - len, &got), TP_OK);
        assert_true(len + got < 4000);
        len += got;
    }
    tp_tokenizer_destroy(t);
    tp_gguf_close(g);
    return text;
}

static void check_family(const char *path, const char *config)
{
    int32_t want[MAX_NEW], got[MAX_NEW];
    double margin = 0.0;
    reference(config, MAX_NEW, want, &margin, NULL);
    /* no near tie that float rounding could flip: the comparison below is meaningful */
    assert_true(margin > 1e-3);
    char args[1024];
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new %d", path,
             PROMPT_TEXT, MAX_NEW);
    cli_result r = run_ok(args);
    if (parse_generated(r.err, got, MAX_NEW) != MAX_NEW ||
        memcmp(got, want, sizeof want) != 0) {
        fprintf(stderr, "%s: want", config);
        for (int i = 0; i < MAX_NEW; i++)
            fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n%s\n", r.err);
        fail();
    }
    /* stdout: the pieces of the generated tokens, then a newline */
    char *text = pieces_of(path, want, MAX_NEW);
    size_t len = strlen(text);
    assert_int_equal(r.out_len, len + 1);
    assert_memory_equal(r.out, text, len);
    assert_int_equal(r.out[len], '\n');
    free(text);
    cli_free(&r);
}

static void test_greedy_qwen2(void **state)
{
    (void)state;
    check_family(qwen_path, "tiny-qwen2");
}

static void test_greedy_llama(void **state)
{
    (void)state;
    check_family(llama_path, "tiny-llama");
}

/* A Q8_0 file: the reference reads the file's own Q8_0 rows (its own dequantization of the
 * block layout) with the file's config; the greedy tokens agree up to the first step whose
 * top-two margin is small enough for activation rounding to flip (at least one step). */
static void test_greedy_q8_0(void **state)
{
    (void)state;
    char path[300], args[1024];
    path_in(path, sizeof path, "q8.gguf");
    tp_model_config bc;
    assert_int_equal(tp_model_config_builtin("tiny-llama", &bc), TP_OK);
    tp_gguf_test_model how = {TP_TYPE_Q8_0, SEED, "llama", NULL};
    assert_int_equal(tp_gguf_write_test_model(path, &bc, &how), TP_OK);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    tp_model_config c;
    assert_int_equal(tp_gguf_model_config(g, &c), TP_OK);
    tp_weights *w = NULL;
    assert_int_equal(tp_gguf_model_weights(g, &c, &w), TP_OK);
    ref_model *m = NULL;
    assert_int_equal(ref_model_create(&c, w, 64, &m), 0);
    int32_t want[MAX_NEW], got[MAX_NEW];
    double gap[MAX_NEW];
    greedy(m, (size_t)c.vocab, MAX_NEW, want, gap, NULL);
    size_t sure = 0; /* steps before the first near tie */
    while (sure < MAX_NEW && gap[sure] > 0.05)
        sure++;
    ref_model_destroy(m);
    tp_weights_destroy(w);
    tp_gguf_close(g);
    fprintf(stderr, "q8_0: %zu steps without a near tie\n", sure);
    assert_true(sure >= 1);
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new %d", path,
             PROMPT_TEXT, MAX_NEW);
    cli_result r = run_ok(args);
    assert_int_equal(parse_generated(r.err, got, MAX_NEW), MAX_NEW);
    assert_memory_equal(got, want, sure * sizeof *got);
    assert_non_null(strstr(r.err, "Q8_0"));
    cli_free(&r);
}

/* --max-new 1 --dump-dir: logits.f32 holds the prefill's last-token logits; kv is the
 * --kv-type flag ("" for the default, f16) and type the rounding the reference gives its
 * cache (0 exact, 1 f16). */
static void check_dump(const char *path, const char *config, const char *kv, uint32_t type)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin(config, &c), TP_OK);
    const size_t vocab = (size_t)c.vocab;
    double *want = malloc(vocab * sizeof *want);
    assert_non_null(want);
    int32_t tok[1];
    double margin;
    ref_kv_type = type;
    reference(config, 1, tok, &margin, want);
    ref_kv_type = 0;
    char args[1024], dump[300], file[400];
    path_in(dump, sizeof dump, "dump");
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new 1 --dump-dir '%s' %s",
             path, PROMPT_TEXT, dump, kv);
    cli_result r = run_ok(args);
    cli_free(&r);
    snprintf(file, sizeof file, "%s/logits.f32", dump);
    size_t len = 0;
    char *raw = cli_slurp(file, &len);
    assert_int_equal(len, vocab * sizeof(float));
    double scale = 0.0, err = 0.0;
    for (size_t v = 0; v < vocab; v++) {
        float f;
        memcpy(&f, raw + 4 * v, 4);
        scale = fmax(scale, fabs(want[v]));
        err = fmax(err, fabs((double)f - want[v]));
    }
    assert_true(scale > 0.0);
    if (!(err <= 1e-4 * scale + 1e-5)) {
        fprintf(stderr, "%s logits: max error %g, scale %g\n", config, err, scale);
        fail();
    }
    free(raw);
    free(want);
}

static void test_dump_logits(void **state)
{
    (void)state;
    check_dump(qwen_path, "tiny-qwen2", "--kv-type f32", 0);
    check_dump(llama_path, "tiny-llama", "--kv-type f32", 0);
    /* the default f16 cache against the reference that rounds its K and V to f16 */
    check_dump(qwen_path, "tiny-qwen2", "", 1);
    check_dump(llama_path, "tiny-llama", "", 1);
}

/* Every strategy and aliasing policy gives the same logits bit for bit. */
static void test_strategies_equal(void **state)
{
    (void)state;
    static const char *const opts[] = {"--strategy naive", "--strategy pool",
                                       "--strategy arena --aliasing none",
                                       "--strategy pool --aliasing last-consumer",
                                       "--queued-layers 1"};
    char *first = NULL;
    size_t first_len = 0;
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        char args[1024], dump[300], file[400], name[32];
        snprintf(name, sizeof name, "dump%zu", i);
        path_in(dump, sizeof dump, name);
        snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new 3 %s "
                 "--dump-dir '%s'", llama_path, PROMPT_TEXT, opts[i], dump);
        cli_result r = run_ok(args);
        cli_free(&r);
        snprintf(file, sizeof file, "%s/logits.f32", dump);
        size_t len = 0;
        char *raw = cli_slurp(file, &len);
        assert_true(len > 0);
        if (!first) {
            first = raw;
            first_len = len;
            continue;
        }
        assert_int_equal(len, first_len);
        assert_memory_equal(raw, first, len);
        free(raw);
    }
    free(first);
}

/* Copies SRC to DST with tokenizer.ggml.eos_token_id set to EOS (UINT32_MAX: kept) and,
 * when CONTROL >= 0, token CONTROL's type set to control (3) (reader to writer). */
static void copy_edited(const char *src, const char *dst, uint32_t eos, int32_t control)
{
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(src, &g), TP_OK);
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    for (size_t i = 0; i < tp_gguf_kv_count(g); i++) {
        const tp_gguf_kv *kv = tp_gguf_kv_at(g, i);
        tp_status st;
        if (strcmp(kv->key, "tokenizer.ggml.eos_token_id") == 0 && eos != UINT32_MAX) {
            st = tp_gguf_writer_add_u32(w, kv->key, eos);
        } else if (strcmp(kv->key, "tokenizer.ggml.token_type") == 0 && control >= 0) {
            assert_true((size_t)control < kv->array.count);
            int32_t *types = malloc(kv->array.count * sizeof *types);
            memcpy(types, kv->array.data, kv->array.count * sizeof *types);
            types[control] = 3;
            st = tp_gguf_writer_add_array(w, kv->key, TP_GGUF_I32, types, kv->array.count);
            free(types);
        } else if (kv->type == TP_GGUF_STRING) {
            char *s = strndup(kv->string.data, kv->string.len);
            st = tp_gguf_writer_add_string(w, kv->key, s);
            free(s);
        } else if (kv->type == TP_GGUF_ARRAY && kv->array.type == TP_GGUF_STRING) {
            char **s = calloc(kv->array.count, sizeof *s);
            for (size_t j = 0; j < kv->array.count; j++)
                s[j] = strndup(kv->array.strings[j].data, kv->array.strings[j].len);
            st = tp_gguf_writer_add_strings(w, kv->key, (const char *const *)s,
                                            kv->array.count);
            for (size_t j = 0; j < kv->array.count; j++)
                free(s[j]);
            free(s);
        } else if (kv->type == TP_GGUF_ARRAY) {
            st = tp_gguf_writer_add_array(w, kv->key, kv->array.type, kv->array.data,
                                          kv->array.count);
        } else if (kv->type == TP_GGUF_U32) {
            st = tp_gguf_writer_add_u32(w, kv->key, (uint32_t)kv->bits);
        } else if (kv->type == TP_GGUF_F32) {
            float f;
            uint32_t b = (uint32_t)kv->bits;
            memcpy(&f, &b, 4);
            st = tp_gguf_writer_add_f32(w, kv->key, f);
        } else if (kv->type == TP_GGUF_BOOL) {
            st = tp_gguf_writer_add_bool(w, kv->key, kv->bits != 0);
        } else {
            fail_msg("key %s: type %d not copied", kv->key, (int)kv->type);
            st = TP_ERR_INVALID;
        }
        assert_int_equal(st, TP_OK);
    }
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        assert_int_equal(tp_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne,
                                                   t->data, t->nbytes), TP_OK);
    }
    assert_int_equal(tp_gguf_writer_write(w, dst), TP_OK);
    tp_gguf_writer_destroy(w);
    tp_gguf_close(g);
}

/* With eos set to the third greedy token, the run stops there: three ids listed, the text
 * of the first two only, no fourth forward. */
static void test_eog_stop(void **state)
{
    (void)state;
    int32_t want[MAX_NEW], got[MAX_NEW];
    double margin;
    reference("tiny-qwen2", MAX_NEW, want, &margin, NULL);
    /* the stop must come at index 2, not earlier */
    assert_true(want[0] != want[2] && want[1] != want[2]);
    char path[300], args[1024];
    path_in(path, sizeof path, "eos.gguf");
    copy_edited(qwen_path, path, (uint32_t)want[2], -1);
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new %d", path,
             PROMPT_TEXT, MAX_NEW);
    cli_result r = run_ok(args);
    assert_int_equal(parse_generated(r.err, got, MAX_NEW), 3);
    assert_memory_equal(got, want, 3 * sizeof *got);
    assert_non_null(strstr(r.err, "stopped: end-of-generation token"));
    assert_non_null(strstr(r.err, "decode: 2 tokens"));
    char *text = pieces_of(path, want, 2);
    assert_int_equal(r.out_len, strlen(text) + 1);
    assert_memory_equal(r.out, text, strlen(text));
    free(text);
    cli_free(&r);
}

/* A first generated token with no text (a control token that does not end generation) writes
 * nothing and the run goes on; under UBSan (the sanitizer suite) the empty piece was passed to
 * fwrite as a NULL pointer. The text written is the pieces of the other tokens. */
static void test_first_token_without_text(void **state)
{
    (void)state;
    int32_t want[MAX_NEW], got[MAX_NEW];
    double margin;
    reference("tiny-qwen2", MAX_NEW, want, &margin, NULL);
    char path[300], args[1024];
    path_in(path, sizeof path, "control.gguf");
    copy_edited(qwen_path, path, UINT32_MAX, want[0]);
    tp_gguf *g = NULL;
    tp_tokenizer *tok = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    assert_int_equal(tp_gguf_tokenizer(g, &tok), TP_OK);
    assert_false(tp_tokenizer_is_eog(tok, want[0]));
    size_t len = 99;
    assert_int_equal(tp_tokenizer_piece(tok, want[0], 0, NULL, 0, &len), TP_OK);
    assert_int_equal(len, 0);
    tp_tokenizer_destroy(tok);
    tp_gguf_close(g);
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new %d", path,
             PROMPT_TEXT, MAX_NEW);
    cli_result r = run_ok(args);
    assert_int_equal(parse_generated(r.err, got, MAX_NEW), MAX_NEW);
    assert_memory_equal(got, want, sizeof want);
    char *text = pieces_of(path, want + 1, MAX_NEW - 1);
    assert_int_equal(r.out_len, strlen(text) + 1);
    assert_memory_equal(r.out, text, strlen(text));
    free(text);
    cli_free(&r);
}

/* A copy of SRC with element ELEM of the F32 tensor NAME set to V. */
static void copy_with_value(const char *src, const char *dst, const char *name, size_t elem,
                            float v)
{
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(src, &g), TP_OK);
    const tp_gguf_tensor *t = tp_gguf_find_tensor(g, name);
    assert_non_null(t);
    assert_int_equal(t->type, TP_TYPE_F32);
    assert_true(elem * 4 < t->nbytes);
    const size_t at = tp_gguf_data_offset(g) + (size_t)t->offset + elem * 4;
    tp_gguf_close(g);
    size_t len = 0;
    char *raw = cli_slurp(src, &len);
    assert_true(at + 4 <= len);
    memcpy(raw + at, &v, 4);
    FILE *f = fopen(dst, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(raw, 1, len, f), len);
    fclose(f);
    free(raw);
}

/* Weights holding NaN or infinity: the forward stops with a runtime error (exit 1) naming the
 * first node whose output is not finite, instead of choosing tokens from NaN logits (which
 * gave "generated: 0 0 0" and NUL bytes). The first node: a NaN in layer 0's attention norm
 * weight reaches nothing before that norm (the embedding and the inputs are finite). */
static void test_non_finite_weights(void **state)
{
    (void)state;
    char path[300], args[1024];
    static const struct { const char *tensor, *node; float v; } cases[] = {
        {"blk.0.attn_norm.weight", "'blk.0.attn_norm' (rms_norm)", NAN},
        {"blk.1.ffn_norm.weight", "'blk.1.ffn_norm' (rms_norm)", INFINITY},
        {"output_norm.weight", "'output_norm' (rms_norm)", -INFINITY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        path_in(path, sizeof path, "nan.gguf");
        copy_with_value(qwen_path, path, cases[i].tensor, 3, cases[i].v);
        snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new 3", path,
                 PROMPT_TEXT);
        cli_result r = cli_run(dir, args);
        if (r.rc != 1 || cli_lines(r.err) != 1 || !strstr(r.err, cases[i].node) ||
            !strstr(r.err, "not finite") || r.out_len != 0)
            fail_msg("%s: exit %d, out %zu bytes, err %s", cases[i].tensor, r.rc, r.out_len,
                     r.err);
        cli_free(&r);
    }
}

/* A text prompt runs the tokens `tensorplan tokenize` gives; sampling with a seed repeats;
 * top-k 1 is greedy at any temperature. */
static void test_text_prompt_and_sampling(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "tokenize '%s' 'the cat sat'", llama_path);
    cli_result t = run_ok(args);
    t.out[strcspn(t.out, "\n")] = '\0';
    int32_t a[8], b[8];
    snprintf(args, sizeof args, "run '%s' --prompt 'the cat sat' --max-new 4", llama_path);
    cli_result r1 = run_ok(args);
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new 4", llama_path, t.out);
    cli_result r2 = run_ok(args);
    assert_int_equal(parse_generated(r1.err, a, 8), 4);
    assert_int_equal(parse_generated(r2.err, b, 8), 4);
    assert_memory_equal(a, b, 4 * sizeof *a);
    assert_string_equal(r1.out, r2.out);
    snprintf(args, sizeof args, "run '%s' --prompt 'the cat sat' --max-new 4 --temp 3 "
             "--top-k 1 --seed 11", llama_path);
    cli_result r3 = run_ok(args);
    assert_int_equal(parse_generated(r3.err, b, 8), 4);
    assert_memory_equal(a, b, 4 * sizeof *a);
    cli_free(&r3);
    /* a hot sampler: the same seed gives the same tokens and text */
    snprintf(args, sizeof args, "run '%s' --prompt 'the cat sat' --max-new 6 --temp 1.5 "
             "--top-p 0.95 --top-k 50 --seed 5", llama_path);
    cli_result s1 = run_ok(args), s2 = run_ok(args);
    assert_int_equal(parse_generated(s1.err, a, 8), 6);
    assert_int_equal(parse_generated(s2.err, b, 8), 6);
    assert_memory_equal(a, b, 6 * sizeof *a);
    assert_string_equal(s1.out, s2.out);
    cli_free(&s1);
    cli_free(&s2);
    cli_free(&t);
    cli_free(&r1);
    cli_free(&r2);
}

static void expect_exit(const char *args, int rc, const char *needle)
{
    cli_result r = cli_run(dir, args);
    if (r.rc != rc || cli_lines(r.err) != 1 || !strstr(r.err, needle)) {
        fprintf(stderr, "%s: exit %d (want %d), err [%s] (want \"%s\")\n", args, r.rc, rc,
                r.err, needle);
        fail();
    }
    cli_free(&r);
}

/* The last-token logits of `run PATH --prompt-tokens IDS --max-new 1 EXTRA` (vocab floats,
 * from --dump-dir); the stderr summary into err (cap bytes). */
static float *dumped_logits(const char *path, const char *ids, const char *extra, size_t vocab,
                            char *err, size_t cap)
{
    char args[4096], dump[300], file[400];
    path_in(dump, sizeof dump, "dump_kv");
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new 1 --dump-dir '%s' %s",
             path, ids, dump, extra);
    cli_result r = run_ok(args);
    snprintf(err, cap, "%s", r.err);
    cli_free(&r);
    snprintf(file, sizeof file, "%s/logits.f32", dump);
    size_t len = 0;
    char *raw = cli_slurp(file, &len);
    assert_int_equal(len, vocab * sizeof(float));
    float *out = malloc(len);
    assert_non_null(out);
    memcpy(out, raw, len);
    free(raw);
    return out;
}

/* --ubatch: chunked prefill gives the one-graph logits within f32 rounding (prompt lengths
 * not multiples of the chunk); --kv-type: the KV line's bytes follow
 * n_layer * n_ctx * n_kv_heads * head_dim * 2 * bytes per element. */
static void test_kv_type_and_ubatch(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny-llama", &c), TP_OK);
    const size_t vocab = (size_t)c.vocab;
    static char err[1 << 14];
    const char *ids = "5 17 2 40 300 7 9 11 13 200 100";
    float *whole = dumped_logits(llama_path, ids, "--ubatch 512", vocab, err, sizeof err);
    assert_null(strstr(err, "chunks of"));
    const char *chunks[] = {"--ubatch 1", "--ubatch 2", "--ubatch 4", "--ubatch 10"};
    for (size_t k = 0; k < 4; k++) {
        float *got = dumped_logits(llama_path, ids, chunks[k], vocab, err, sizeof err);
        if (strcmp(chunks[k], "--ubatch 1") != 0)
            assert_non_null(strstr(err, "prefill plan (chunks of"));
        for (size_t v = 0; v < vocab; v++)
            if (fabsf(got[v] - whole[v]) > 1e-5f * (1.0f + fabsf(whole[v])))
                fail_msg("%s: logit %zu %.9g, one graph %.9g", chunks[k], v, (double)got[v],
                         (double)whole[v]);
        free(got);
    }
    free(whole);
    const char *types[2] = {"f32", "f16"};
    const size_t bpe[2] = {4, 2};
    for (int t = 0; t < 2; t++) {
        char extra[64], want[128];
        snprintf(extra, sizeof extra, "--kv-type %s --n-ctx 40", types[t]);
        free(dumped_logits(llama_path, ids, extra, vocab, err, sizeof err));
        snprintf(want, sizeof want, "KV cache: n_ctx 40, %s, %zu bytes", types[t],
                 (size_t)c.n_layer * 40 * (size_t)c.n_head_kv * (size_t)c.head_dim * 2 * bpe[t]);
        if (!strstr(err, want))
            fail_msg("'%s' not in:\n%s", want, err);
    }
    char args[512];
    snprintf(args, sizeof args, "run '%s' --prompt-tokens 1 --kv-type q8_0", llama_path);
    expect_exit(args, 2, "multiple of 32");
    snprintf(args, sizeof args, "run '%s' --prompt-tokens 1 --kv-type f64", llama_path);
    expect_exit(args, 2, "--kv-type: expected f32, f16 or q8_0");
    snprintf(args, sizeof args, "run '%s' --prompt-tokens 1 --ubatch 0", llama_path);
    expect_exit(args, 2, "--ubatch");
}

/* The prefill logits of a Q4_0 file by the reference (in double) on the file's own Q4_0 rows
 * (its own dequantization of the block layout), into want (vocab doubles). */
static void reference_of_file(const char *path, double *want)
{
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    tp_model_config c;
    assert_int_equal(tp_gguf_model_config(g, &c), TP_OK);
    tp_weights *w = NULL;
    assert_int_equal(tp_gguf_model_weights(g, &c, &w), TP_OK);
    ref_model *m = NULL;
    assert_int_equal(ref_model_create(&c, w, 64, &m), 0);
    int32_t tok[1];
    double gap[1];
    greedy(m, (size_t)c.vocab, 1, tok, gap, want);
    ref_model_destroy(m);
    tp_weights_destroy(w);
    tp_gguf_close(g);
}

/* --kernels: every form this processor has gives, on the f32 files, the double reference's
 * prefill logits as the default does (check_dump), and on a Q4_0 file the reference on the
 * dequantized rows within the 16-bit activation rounding (relative L2 1e-3, as
 * test_gguf_forward) and the default form's logits within f32 rounding (docs/quant.md
 * section 5: the forms differ only in the order of f32 additions); the summary names the
 * form. A form the processor lacks and an unknown name are refused with exit 2. */
static void test_kernel_forms(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int isa;
    } forms[] = {{"portable", TP_ISA_PORTABLE}, {"avx2", TP_ISA_AVX2}, {"avx512", TP_ISA_AVX512}};
    char q4[300], extra[128], args[512], want_line[64];
    static char err[1 << 14];
    path_in(q4, sizeof q4, "q4.gguf");
    tp_model_config bc;
    assert_int_equal(tp_model_config_builtin("tiny-llama", &bc), TP_OK);
    tp_gguf_test_model how = {TP_TYPE_Q4_0, SEED, "llama", NULL};
    assert_int_equal(tp_gguf_write_test_model(q4, &bc, &how), TP_OK);
    const size_t vocab = (size_t)bc.vocab;
    double *want = malloc(vocab * sizeof *want);
    assert_non_null(want);
    reference_of_file(q4, want);
    float *def = dumped_logits(q4, PROMPT_TEXT, "--kv-type f32", vocab, err, sizeof err);
    for (size_t k = 0; k < sizeof forms / sizeof *forms; k++) {
        snprintf(extra, sizeof extra, "--kv-type f32 --kernels %s", forms[k].name);
        if (!tp_kernels_isa_supported(forms[k].isa)) {
            snprintf(args, sizeof args, "run '%s' --prompt-tokens 1 %s", q4, extra);
            expect_exit(args, 2, forms[k].name);
            continue;
        }
        check_dump(qwen_path, "tiny-qwen2", extra, 0);
        check_dump(llama_path, "tiny-llama", extra, 0);
        float *got = dumped_logits(q4, PROMPT_TEXT, extra, vocab, err, sizeof err);
        snprintf(want_line, sizeof want_line, "kernel threads, %s kernels", forms[k].name);
        if (!strstr(err, want_line))
            fail_msg("'%s' not in:\n%s", want_line, err);
        double num = 0.0, den = 0.0, scale = 0.0, diff = 0.0;
        for (size_t v = 0; v < vocab; v++) {
            num += ((double)got[v] - want[v]) * ((double)got[v] - want[v]);
            den += want[v] * want[v];
            scale = fmax(scale, fabs(want[v]));
            diff = fmax(diff, fabs((double)got[v] - (double)def[v]));
        }
        assert_true(den > 0.01 * (double)vocab);
        if (!(sqrt(num / den) < 1e-3) || !(diff <= 1e-4 * scale + 1e-5))
            fail_msg("%s on Q4_0: relative L2 %.3g to the reference, %.3g from the default "
                     "(scale %.3g)", forms[k].name, sqrt(num / den), diff, scale);
        free(got);
    }
    free(def);
    free(want);
    snprintf(args, sizeof args, "run '%s' --prompt-tokens 1 --kernels sse", q4);
    expect_exit(args, 2, "--kernels: expected auto, avx512, avx2 or portable");
}

static void test_exit_codes(void **state)
{
    (void)state;
    char args[1024], cut[300], arch[300];
    /* a file cut in its tensor data: refused, one line, exit 3 */
    path_in(cut, sizeof cut, "cut.gguf");
    size_t len = 0;
    char *raw = cli_slurp(qwen_path, &len);
    FILE *f = fopen(cut, "wb");
    assert_non_null(f);
    fwrite(raw, 1, len - 1000, f);
    fclose(f);
    free(raw);
    snprintf(args, sizeof args, "run '%s' --prompt hi", cut);
    expect_exit(args, 3, "cut.gguf");
    /* an architecture neither family: refused by name */
    path_in(arch, sizeof arch, "arch.gguf");
    tp_gguf_writer *w = NULL;
    assert_int_equal(tp_gguf_writer_create(&w), TP_OK);
    assert_int_equal(tp_gguf_writer_add_string(w, "general.architecture", "gptj"), TP_OK);
    assert_int_equal(tp_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama"), TP_OK);
    const char *toks[3] = {"<unk>", "<s>", "</s>"};
    assert_int_equal(tp_gguf_writer_add_strings(w, "tokenizer.ggml.tokens", toks, 3), TP_OK);
    assert_int_equal(tp_gguf_writer_write(w, arch), TP_OK);
    tp_gguf_writer_destroy(w);
    snprintf(args, sizeof args, "run '%s' --prompt hi", arch);
    expect_exit(args, 3, "gptj");
    snprintf(args, sizeof args, "run '%s/missing.gguf' --prompt hi", dir);
    expect_exit(args, 1, "missing.gguf");
    /* usage */
    snprintf(args, sizeof args, "run '%s' --max-new 2", qwen_path);
    expect_exit(args, 2, "--prompt");
    /* an empty prompt, for both families (SentencePiece would make [bos] of it) */
    snprintf(args, sizeof args, "run '%s' --prompt ''", llama_path);
    expect_exit(args, 2, "--prompt: empty text");
    snprintf(args, sizeof args, "run '%s' --prompt - < /dev/null", llama_path);
    expect_exit(args, 2, "--prompt: empty text");
    snprintf(args, sizeof args, "run '%s' --prompt ''", qwen_path);
    expect_exit(args, 2, "--prompt");
    snprintf(args, sizeof args, "run '%s' --prompt hi --temp -1", qwen_path);
    expect_exit(args, 2, "--temp");
    snprintf(args, sizeof args, "run '%s' --prompt hi --top-p 0", qwen_path);
    expect_exit(args, 2, "--top-p");
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '1 512'", qwen_path);
    expect_exit(args, 2, "512");
    snprintf(args, sizeof args, "run '%s' --prompt hi --queued-layers 3", qwen_path);
    expect_exit(args, 2, "--queued-layers");
    /* tiny-qwen2's maximum context is 256 */
    snprintf(args, sizeof args, "run '%s' --prompt-tokens '%s' --max-new 300", qwen_path,
             PROMPT_TEXT);
    expect_exit(args, 2, "context");
    /* built-in names still run as before */
    cli_result r = run_ok("run tiny --prompt-len 4 --max-new 2");
    assert_non_null(strstr(r.out, "generated (2 tokens):"));
    cli_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_qwen2),
        cmocka_unit_test(test_greedy_llama),
        cmocka_unit_test(test_greedy_q8_0),
        cmocka_unit_test(test_dump_logits),
        cmocka_unit_test(test_strategies_equal),
        cmocka_unit_test(test_eog_stop),
        cmocka_unit_test(test_first_token_without_text),
        cmocka_unit_test(test_non_finite_weights),
        cmocka_unit_test(test_text_prompt_and_sampling),
        cmocka_unit_test(test_kv_type_and_ubatch),
        cmocka_unit_test(test_kernel_forms),
        cmocka_unit_test(test_exit_codes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
