/* `tensorplan model FILE.gguf` as a user runs it: --json byte counts against this test's own
 * tensor table and the KV formula of docs/gguf.md, totals against their rule, --budget
 * answers against a brute-force scan of small contexts, exit codes, damaged files. */
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/cli_run.h"
#include "support/gguf_model_build.h"
#include "tensorplan/model.h"
#include "tensorplan/quant.h"

static char tmpdir[] = "/tmp/tp_model_cli_XXXXXX";
static char file[300], out_text[1 << 16], err_text[4096];

#define MAX_CTX 24

static mb_model the_model(void)
{
    mb_model m;
    memset(&m, 0, sizeof m);
    m.arch = "llama";
    m.E = 64, m.L = 2, m.H = 4, m.Hkv = 2, m.D = 16, m.F = 96, m.V = 40, m.ctx = MAX_CTX;
    m.untied = 1;
    m.type2d = TP_TYPE_Q8_0;
    return m;
}

/* Runs the CLI with the arguments FMT formats; stdout and stderr land in out_text and
 * err_text. */
static int run_cli(const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    cli_result r = cli_run(tmpdir, args);
    assert_true(r.rc != -1);
    cli_keep(out_text, sizeof out_text, r.out, r.out_len);
    cli_keep(err_text, sizeof err_text, r.err, r.err_len);
    cli_free(&r);
    return r.rc;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("no number '%s'", key);
    return v->valuedouble;
}

/* `model FILE --json --n-ctx C --prompt P [extra]`, parsed; the caller deletes it. */
static cJSON *model_json(size_t n_ctx, size_t prompt, const char *extra, int want_rc)
{
    assert_int_equal(run_cli("model '%s' --json --n-ctx %zu --prompt %zu %s", file, n_ctx,
                             prompt, extra), want_rc);
    cJSON *o = cJSON_Parse(out_text);
    if (!o)
        fail_msg("not JSON: %s / %s", out_text, err_text);
    return o;
}

static void test_json_byte_counts(void **state)
{
    (void)state;
    const mb_model m = the_model();
    mb_tensor ts[64];
    const size_t n = mb_tensors(&m, ts, 64);
    double f32 = 0, q8 = 0;
    for (size_t i = 0; i < n; i++) {
        if (ts[i].ne1)
            q8 += (double)(ts[i].ne0 / 32 * 34 * ts[i].ne1);
        else
            f32 += (double)(ts[i].ne0 * 4);
    }
    const size_t cases[][3] = {{20, 6, 20}, {100, 6, MAX_CTX}, {10, 16, 16}};
    for (size_t k = 0; k < 3; k++) {
        cJSON *o = model_json(cases[k][0], cases[k][1], "", 0);
        assert_true(num(o, "weight_bytes") == f32 + q8);
        const cJSON *per = cJSON_GetObjectItemCaseSensitive(o, "weight_bytes_by_type");
        assert_true(num(per, "F32") == f32 && num(per, "Q8_0") == q8);
        /* n_ctx = min(max(C, P), max); KV: L layers x (K, V) x Hkv*D x n_ctx f16 (the
         * default), and what f32 would take */
        const double n_ctx = (double)cases[k][2];
        assert_true(num(o, "n_ctx") == n_ctx);
        assert_true(num(o, "kv_bytes") == (double)(m.L * 2 * m.Hkv * m.D) * n_ctx * 2);
        const cJSON *kvt = cJSON_GetObjectItemCaseSensitive(o, "kv_bytes_by_type");
        assert_true(num(kvt, "f32") == (double)(m.L * 2 * m.Hkv * m.D) * n_ctx * 4);
        assert_true(num(kvt, "f16") == num(o, "kv_bytes"));
        /* heads of 16: no whole q8_0 blocks, so no q8_0 figure */
        assert_null(cJSON_GetObjectItemCaseSensitive(kvt, "q8_0"));
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "kv_type")),
                            "f16");
        const cJSON *pre = cJSON_GetObjectItemCaseSensitive(o, "prefill");
        const cJSON *dec = cJSON_GetObjectItemCaseSensitive(o, "decode");
        const cJSON *tot = cJSON_GetObjectItemCaseSensitive(o, "totals");
        assert_int_equal(cJSON_GetArraySize(tot), 4);
        double best = -1;
        for (int i = 0; i < 4; i++) {
            double a = num(cJSON_GetArrayItem(pre, i), "activation_bytes");
            const double b = num(cJSON_GetArrayItem(dec, i), "activation_bytes");
            if (b > a)
                a = b;
            const double t = num(cJSON_GetArrayItem(tot, i), "total_bytes");
            assert_true(t == f32 + q8 + num(o, "kv_bytes") + a);
            if (best < 0 || t < best)
                best = t;
        }
        assert_true(num(o, "total_bytes") == best);
        cJSON_Delete(o);
    }
}

/* Brute force: the smallest total at every context (prompt min(P, C)) and at every
 * prompt filling its context. */
static double at_ctx[MAX_CTX + 1], at_prompt[MAX_CTX + 1];

static void scan(size_t prompt)
{
    for (size_t c = 1; c <= MAX_CTX; c++) {
        cJSON *o = model_json(c, c < prompt ? c : prompt, "", 0);
        at_ctx[c] = num(o, "total_bytes");
        cJSON_Delete(o);
        o = model_json(c, c, "", 0);
        at_prompt[c] = num(o, "total_bytes");
        cJSON_Delete(o);
    }
}

static size_t largest(const double *t, double budget)
{
    size_t best = 0;
    for (size_t c = 1; c <= MAX_CTX; c++)
        if (t[c] <= budget)
            best = c;
    return best;
}

static void check_budget(double budget, size_t n_ctx, size_t prompt)
{
    char extra[64];
    snprintf(extra, sizeof extra, "--budget %.0f", budget);
    const int fits = at_ctx[n_ctx] <= budget;
    cJSON *o = model_json(n_ctx, prompt, extra, fits ? 0 : 4);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "budget");
    assert_non_null(b);
    assert_true(num(b, "bytes") == budget);
    assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "fits")), fits);
    const size_t want_ctx = largest(at_ctx, budget);
    assert_int_equal((size_t)num(b, "max_n_ctx"), want_ctx);
    assert_int_equal((size_t)num(b, "max_n_ctx_prompt"), want_ctx < prompt ? want_ctx : prompt);
    assert_int_equal((size_t)num(b, "max_prompt"), largest(at_prompt, budget));
    cJSON_Delete(o);
}

static void test_budget(void **state)
{
    (void)state;
    const size_t prompt = 6;
    scan(prompt);
    check_budget(at_ctx[16], 16, prompt);        /* fits exactly at 16       */
    check_budget(at_ctx[16] - 1, 16, prompt);    /* one byte short           */
    check_budget(at_ctx[9] + 100, 16, prompt);   /* does not fit, 9 does     */
    check_budget(at_ctx[1] - 1, 10, prompt);     /* nothing fits             */
    check_budget(at_ctx[MAX_CTX] * 2, 20, prompt); /* everything fits        */
    check_budget(at_prompt[15], 8, prompt);

    cJSON *o = model_json(8, 4, "--budget 1K", 4);
    assert_true(num(cJSON_GetObjectItemCaseSensitive(o, "budget"), "bytes") == 1024);
    cJSON_Delete(o);
    o = model_json(8, 4, "--budget 3M", 0);
    assert_true(num(cJSON_GetObjectItemCaseSensitive(o, "budget"), "bytes") == 3.0 * 1048576);
    cJSON_Delete(o);
    o = model_json(8, 4, "--budget 2g", 0);
    assert_true(num(cJSON_GetObjectItemCaseSensitive(o, "budget"), "bytes") == 2.0 * 1073741824);
    cJSON_Delete(o);
    assert_int_equal(run_cli("model '%s' --budget 12X", file), 2);
    assert_int_equal(run_cli("model '%s' --budget K", file), 2);
    /* a doubled suffix, a bare suffix and an empty value are refused with one line that
     * names the option (the earlier parser read 12KK as 12 MiB and said nothing for K) */
    static const char *const bad[] = { "12KK", "K", "" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run_cli("model '%s' --budget '%s'", file, bad[i]), 2);
        assert_int_equal(strncmp(err_text, "tensorplan: model: --budget", 27), 0);
        assert_int_equal(strchr(err_text, '\n') - err_text, (long)strlen(err_text) - 1);
    }
    /* the text report says the same */
    assert_int_equal(run_cli("model '%s' --n-ctx 8 --budget 3M", file), 0);
    assert_non_null(strstr(out_text, "budget 3145728 B: fits"));
}

static void one_line_refusal(const char *want)
{
    assert_int_equal(strncmp(err_text, "tensorplan: model: ", 19), 0);
    assert_non_null(strstr(err_text, file));
    if (want)
        assert_non_null(strstr(err_text, want));
    assert_int_equal(strchr(err_text, '\n') - err_text, (long)strlen(err_text) - 1);
}

static void test_refused_files(void **state)
{
    (void)state;
    /* truncated in the tensor infos */
    FILE *f = fopen(file, "rb");
    assert_non_null(f);
    static unsigned char bytes[1 << 20];
    const size_t size = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    char cut[320];
    snprintf(cut, sizeof cut, "%s/cut.gguf", tmpdir);
    f = fopen(cut, "wb");
    assert_non_null(f);
    fwrite(bytes, 1, size / 8, f);
    fclose(f);
    assert_int_equal(run_cli("model '%s'", cut), 3);
    assert_int_equal(strncmp(err_text, "tensorplan: model: ", 19), 0);
    assert_non_null(strstr(err_text, cut));
    remove(cut);

    mb_model m = the_model();
    m.arch = "falcon";
    assert_int_equal(mb_write(&m, file), 0);
    assert_int_equal(run_cli("model '%s' --json", file), 3);
    one_line_refusal("falcon");
    m = the_model();
    m.skip_tensor = "blk.1.attn_norm.weight";
    assert_int_equal(mb_write(&m, file), 0);
    assert_int_equal(run_cli("model '%s'", file), 3);
    one_line_refusal("blk.1.attn_norm.weight");
    m = the_model();
    assert_int_equal(mb_write(&m, file), 0);
    assert_int_equal(run_cli("model '%s/none.gguf'", tmpdir), 1);
    assert_int_equal(run_cli("model '%s' --prompt %d", file, MAX_CTX + 1), 2);
}

/* `model qwen2.5-0.5b --json --n-ctx C --prompt P extra`, parsed. */
static cJSON *builtin_json(size_t n_ctx, size_t prompt, const char *extra, int want_rc)
{
    assert_int_equal(run_cli("model qwen2.5-0.5b --json --n-ctx %zu --prompt %zu %s", n_ctx,
                             prompt, extra), want_rc);
    cJSON *o = cJSON_Parse(out_text);
    if (!o)
        fail_msg("not JSON: %s / %s", out_text, err_text);
    return o;
}

static const cJSON *plan_at(const cJSON *o, const char *phase, int k)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, phase), k);
}

/* --kv-type and --ubatch: KV bytes by the formula n_layer * n_ctx * n_kv_heads * head_dim * 2
 * * bytes per element (q8_0 34 per 32); a prompt of 2048 tokens in chunks of 512 plans the
 * graph of a 512-token prompt, so the totals grow with the prompt by the KV bytes alone. */
static void test_kv_type_and_ubatch(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("qwen2.5-0.5b", &c), TP_OK);
    const double per_row = (double)c.n_layer * c.n_head_kv * c.head_dim * 2;
    const char *types[3] = {"f32", "f16", "q8_0"};
    const double bpe[3] = {4, 2, 34.0 / 32};
    for (int t = 0; t < 3; t++) {
        char extra[64];
        snprintf(extra, sizeof extra, "--kv-type %s", types[t]);
        cJSON *o = builtin_json(1024, 1024, extra, 0);
        assert_true(num(o, "kv_bytes") == per_row * 1024 * bpe[t]);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "kv_type")),
                            types[t]);
        cJSON_Delete(o);
    }
    cJSON *chunked = builtin_json(4096, 2048, "--ubatch 512", 0);
    cJSON *short_prompt = builtin_json(4096, 512, "--ubatch 512", 0);
    cJSON *whole = builtin_json(4096, 2048, "--ubatch 2048", 0);
    assert_true(num(chunked, "prefill_tokens") == 512 && num(chunked, "ubatch") == 512);
    assert_true(num(whole, "prefill_tokens") == 2048);
    for (int k = 0; k < 4; k++) {
        const double a = num(plan_at(chunked, "prefill", k), "activation_bytes");
        assert_true(a == num(plan_at(short_prompt, "prefill", k), "activation_bytes"));
        assert_true(a < num(plan_at(whole, "prefill", k), "activation_bytes") / 3);
    }
    assert_true(num(chunked, "total_bytes") == num(short_prompt, "total_bytes"));
    cJSON_Delete(chunked);
    cJSON_Delete(short_prompt);
    cJSON_Delete(whole);
    /* the budget search uses the KV type: a q8_0 cache fits a longer context */
    cJSON *f32 = builtin_json(4096, 512, "--kv-type f32 --budget 2000M", 4);
    cJSON *q8 = builtin_json(4096, 512, "--kv-type q8_0 --budget 2000M", 0);
    const double c32 = num(cJSON_GetObjectItemCaseSensitive(f32, "budget"), "max_n_ctx");
    const double c8 = num(cJSON_GetObjectItemCaseSensitive(q8, "budget"), "max_n_ctx");
    assert_true(c32 > 0 && c32 < 4096 && c8 > c32 * 3);
    cJSON_Delete(f32);
    cJSON_Delete(q8);
    assert_int_equal(run_cli("model qwen2.5-0.5b --kv-type q4_0"), 2);
    assert_int_equal(run_cli("model qwen2.5-0.5b --ubatch 0"), 2);
}

static void test_builtin_still_works(void **state)
{
    (void)state;
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("tiny", &c), TP_OK);
    assert_int_equal(run_cli("model tiny --json --n-ctx 64 --prompt 8"), 0);
    cJSON *o = cJSON_Parse(out_text);
    assert_non_null(o);
    assert_true(num(o, "kv_bytes") == (double)(c.n_layer * 2 * c.n_head_kv * c.head_dim) * 64 * 2);
    cJSON_Delete(o);
    assert_int_equal(run_cli("model tiny --json --n-ctx 64 --prompt 8 --kv-type f32"), 0);
    o = cJSON_Parse(out_text);
    assert_non_null(o);
    assert_true(num(o, "kv_bytes") == (double)(c.n_layer * 2 * c.n_head_kv * c.head_dim) * 64 * 4);
    cJSON_Delete(o);
    assert_int_equal(run_cli("model tiny --prompt 8"), 0);
    assert_non_null(strstr(out_text, "decode: 1 token"));
}

/* write-model's file holds exactly the tensors this test's table lists for the config. */
static void test_write_model(void **state)
{
    (void)state;
    const char *names[2] = {"tiny-llama", "tiny-qwen2"};
    for (int k = 0; k < 2; k++) {
        tp_model_config c;
        assert_int_equal(tp_model_config_builtin(names[k], &c), TP_OK);
        assert_int_equal(run_cli("write-model %s --type q8_0 --seed 3 -o '%s'", names[k], file),
                         0);
        mb_model m;
        memset(&m, 0, sizeof m);
        m.arch = c.arch == TP_ARCH_LLAMA ? "llama" : "qwen2";
        m.E = c.n_embd, m.L = c.n_layer, m.H = c.n_head, m.Hkv = c.n_head_kv;
        m.D = c.head_dim, m.F = c.n_ff, m.V = c.vocab;
        m.qkv_bias = c.qkv_bias, m.untied = !c.tied_embeddings;
        mb_tensor ts[64];
        const size_t n = mb_tensors(&m, ts, 64);
        double want = 0;
        for (size_t i = 0; i < n; i++)
            want += (double)mb_bytes(ts[i].ne1 ? TP_TYPE_Q8_0 : TP_TYPE_F32, ts[i].ne0,
                                     ts[i].ne1 ? ts[i].ne1 : 1);
        cJSON *o = model_json(16, 4, "", 0);
        assert_true(num(o, "weight_bytes") == want);
        const cJSON *mo = cJSON_GetObjectItemCaseSensitive(o, "model");
        assert_true(num(mo, "vocab") == c.vocab && num(mo, "n_ff") == c.n_ff);
        cJSON_Delete(o);
    }
    /* tiny's vocabulary of 97 cannot hold 256 byte tokens */
    assert_int_equal(run_cli("write-model tiny -o '%s/x.gguf'", tmpdir), 2);
    /* a K type on rows of 64: refused by the writer, naming the block */
    assert_int_equal(run_cli("write-model tiny-llama --type q6_k -o '%s/x.gguf'", tmpdir), 2);
    if (!strstr(err_text, "Q6_K blocks of 256"))
        fail_msg("%s", err_text);
    assert_int_equal(run_cli("write-model tiny-llama"), 2);
    /* the shared file back to this test's model */
    const mb_model m = the_model();
    assert_int_equal(mb_write(&m, file), 0);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(file, sizeof file, "%s/m.gguf", tmpdir);
    const mb_model m = the_model();
    return mb_write(&m, file);
}

static int teardown(void **state)
{
    (void)state;
    remove(file);
    cli_remove_outputs(tmpdir);
    return rmdir(tmpdir);
}

/* At a context of 2^24 and a prompt of 16000000 tokens, model plans without reserving what
 * it reports (it said "host pool: cannot allocate 7549751296 elements", exit 1): the answer
 * comes (exit 4, it does not fit 1 GiB) in bounded memory (an address-space limit of 1 GiB
 * outside the sanitizer builds, whose shadow memory needs more), with the KV bytes of the
 * formula L x 2 x Hkv x D x n_ctx x 4. */
/* write-model refuses up front what it would write and tokenize would refuse: an unknown or
 * empty --pre (the message lists the known ones), a type whose blocks do not divide the rows
 * (q4_k: 256; tiny-qwen2's rows are 64) without the "row bytes" message of the quantizer; and
 * -o - is standard output as for plan, no file named "-". */
static void test_write_model_refusals_and_stdout(void **state)
{
    (void)state;
    char x[400], dash[400];
    snprintf(x, sizeof x, "%s/x.gguf", tmpdir);
    snprintf(dash, sizeof dash, "%s/-", tmpdir);
    static const char *const bad_pre[] = {"bogus", "", "gpt2", "qwen2\\0"};
    for (size_t i = 0; i < sizeof bad_pre / sizeof *bad_pre; i++) {
        assert_int_equal(run_cli("write-model tiny-qwen2 --pre '%s' -o '%s'", bad_pre[i], x), 2);
        if (!strstr(err_text, "--pre") || !strstr(err_text, "llama-bpe") ||
            !strstr(err_text, "smollm") || cli_lines(err_text) != 1)
            fail_msg("%s", err_text);
        assert_int_not_equal(access(x, F_OK), 0);
    }
    assert_int_equal(run_cli("write-model tiny-qwen2 --pre smollm -o '%s'", x), 0);
    assert_int_equal(run_cli("tokenize '%s' hello", x), 0);
    remove(x);
    assert_int_equal(run_cli("write-model tiny-qwen2 --type q4_k -o '%s'", x), 2);
    if (!strstr(err_text, "Q4_K blocks of 256") || strstr(err_text, "row bytes"))
        fail_msg("%s", err_text);
    assert_int_not_equal(access(x, F_OK), 0);
    /* -o -: the same bytes as a file, on standard output */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' write-model tiny-llama --seed 5 -o - > out.bin && "
             "'%s' write-model tiny-llama --seed 5 -o '%s'", tmpdir, TP_CLI_PATH, TP_CLI_PATH, x);
    assert_int_equal(system(cmd), 0);
    assert_int_not_equal(access(dash, F_OK), 0);
    char out_path[400];
    snprintf(out_path, sizeof out_path, "%s/out.bin", tmpdir);
    size_t n1 = 0, n2 = 0;
    char *a = cli_slurp(out_path, &n1), *b = cli_slurp(x, &n2);
    assert_true(n1 > 4 && n1 == n2);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);
    remove(out_path);
    remove(x);
}

static void test_large_context_plans_only(void **state)
{
    (void)state;
    char big[400];
    snprintf(big, sizeof big, "%s/big.gguf", tmpdir);
    mb_model m = the_model();
    m.ctx = 1 << 24;
    assert_int_equal(mb_write(&m, big), 0);
    const char *limit = getenv("TP_SANITIZED") ? "" : "ulimit -v 1048576; ";
    char cmd[2400], out[500], err[500];
    snprintf(out, sizeof out, "%s/out.txt", tmpdir);
    snprintf(err, sizeof err, "%s/err.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "%s'%s' model '%s' --n-ctx 16777216 --budget 1G --prompt-len "
             "16000000 --json >'%s' 2>'%s'", limit, TP_CLI_PATH, big, out, err);
    const int status = system(cmd);
    size_t n = 0;
    char *text = cli_slurp(out, &n), *msg = cli_slurp(err, &n);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 4)
        fail_msg("exit %d: %s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, msg);
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    /* the default f16 cache: 2 bytes an element */
    assert_true(num(o, "kv_bytes") == (double)(m.L * 2 * m.Hkv * m.D) * 16777216.0 * 2);
    cJSON_Delete(o);
    free(text);
    free(msg);
    remove(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_byte_counts),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_builtin_still_works),
        cmocka_unit_test(test_kv_type_and_ubatch),
        cmocka_unit_test(test_write_model),
        cmocka_unit_test(test_refused_files),
        cmocka_unit_test(test_write_model_refusals_and_stdout),
        cmocka_unit_test(test_large_context_plans_only),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
