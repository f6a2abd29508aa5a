/* `tensorplan plan --json` and `validate --json` (docs/json-output.md): one JSON object on
 * stdout whose figures are those of the text summary of the same run, parsed here from both;
 * `-` as an input file; K, M, G suffixes of --capacity and --align (powers of 1024, restated
 * here as numbers). Peaks are checked against a brute force over the rows of this file's own
 * reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#define DATA TP_TEST_DATA "/minimalloc/"

static char tmpdir[] = "/tmp/tp_cli_json_XXXXXX";

/* Runs `sh -c CMD`, returns its exit code; *out receives stdout (caller frees). */
static int run(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    buf[n] = '\0';
    int status = pclose(p);
    assert_true(WIFEXITED(status));
    *out = buf;
    return WEXITSTATUS(status);
}

static int runf(char **out, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return run(cmd, out);
}

/* The one JSON object of the output: exactly one line. */
static cJSON *parse_one(const char *text)
{
    const char *nl = strchr(text, '\n');
    assert_non_null(nl);
    assert_int_equal(nl[1], '\0');
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    assert_true(cJSON_IsObject(o));
    return o;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v))
        fail_msg("field %s is not a number", key);
    return v->valuedouble;
}

static int is_null(const cJSON *o, const char *key)
{
    return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, key));
}

static int boolean(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsBool(v))
        fail_msg("field %s is not a boolean", key);
    return cJSON_IsTrue(v);
}

/* The value after the label at the start of a line of the text summary. */
static const char *line_of(const char *text, const char *label)
{
    const char *p = text;
    size_t n = strlen(label);
    while (p && *p) {
        if (strncmp(p, label, n) == 0)
            return p + n;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    fail_msg("no line '%s' in:\n%s", label, text);
    return NULL;
}

/* Brute-force peak of a MiniMalloc file: the most bytes live at one time step. */
static size_t brute_peak(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    assert_non_null(fgets(line, sizeof line, f));
    size_t lo[4096], hi[4096], sz[4096], n = 0;
    char id[64];
    while (n < 4096 && fgets(line, sizeof line, f) &&
           sscanf(line, "%63[^,],%zu,%zu,%zu", id, &lo[n], &hi[n], &sz[n]) == 4) {
        n++;
    }
    fclose(f);
    /* the live total only rises at some buffer's start: try every start */
    size_t best = 0;
    for (size_t k = 0; k < n; k++) {
        size_t live = 0;
        for (size_t i = 0; i < n; i++)
            live += lo[i] <= lo[k] && lo[k] < hi[i] ? sz[i] : 0;
        best = live > best ? live : best;
    }
    return best;
}

/* plan with and without --json: the same figures, and the peak of the brute force. */
static void check_plan(const char *file, const char *flags, size_t capacity)
{
    char *text, *json, path[512];
    snprintf(path, sizeof path, DATA "%s", file);
    char cap[64] = "";
    if (capacity)
        snprintf(cap, sizeof cap, "--capacity %zu", capacity);
    const int rt = runf(&text, "%s plan %s %s %s", TP_CLI_PATH, path, flags, cap);
    const int rj = runf(&json, "%s plan %s %s %s --json", TP_CLI_PATH, path, flags, cap);
    assert_int_equal(rt, rj);
    cJSON *o = parse_one(json);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "command")->valuestring, "plan");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "problem")->valuestring, path);
    size_t buffers, peak, arena;
    assert_int_equal(sscanf(line_of(text, "buffers   "), "%zu", &buffers), 1);
    assert_int_equal(sscanf(line_of(text, "peak      "), "%zu", &peak), 1);
    assert_int_equal(sscanf(line_of(text, "arena     "), "%zu", &arena), 1);
    assert_int_equal((size_t)num(o, "buffers"), buffers);
    assert_int_equal((size_t)num(o, "peak"), peak);
    assert_int_equal((size_t)num(o, "arena"), arena);
    assert_int_equal(peak, brute_peak(path));
    assert_true(num(o, "arena_per_peak") * (double)peak - (double)arena < 1e-6 * (double)arena);
    const int fits = capacity == 0 || arena <= capacity;
    assert_int_equal(boolean(o, "fits"), fits);
    assert_int_equal(rt, fits ? 0 : 4);
    if (capacity == 0) {
        assert_true(is_null(o, "capacity") && is_null(o, "spare") && is_null(o, "over"));
        assert_non_null(strstr(text, "capacity  not given\n"));
    } else {
        size_t tcap, margin;
        assert_int_equal(sscanf(line_of(text, "capacity  "), "%zu bytes: %*[^(](%zu", &tcap,
                                &margin), 2);
        assert_int_equal((size_t)num(o, "capacity"), tcap);
        assert_int_equal((size_t)num(o, fits ? "spare" : "over"), margin);
        assert_int_equal(margin, fits ? capacity - arena : arena - capacity);
    }
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(o, "method");
    if (strstr(text, "\nstrategy  ")) {
        const char *m = line_of(text, "strategy  ");
        assert_true(cJSON_IsString(method));
        assert_int_equal(strncmp(m, method->valuestring, strlen(method->valuestring)), 0);
        assert_int_equal(boolean(o, "proven_optimal"), strstr(m, "arena proven minimal") != NULL);
    } else {
        assert_true(cJSON_IsNull(method));
    }
    cJSON_Delete(o);
    free(text);
    free(json);
}

static void test_plan_json_has_the_text_figures(void **state)
{
    (void)state;
    check_plan("input.12.csv", "", 12);
    check_plan("input.12.csv", "", 11);
    check_plan("input.12.csv", "--strategy exact", 0);
    check_plan("A.1048576.csv", "--strategy portfolio", 1048576);
    check_plan("C.1048576.csv", "--align 64", 0);
    check_plan("E.1048576.csv", "--strategy portfolio --threads 1", 1000000);
}

static void test_validate_json_has_the_text_figures(void **state)
{
    (void)state;
    char sol[512], bad[512], *out, *text, *json;
    snprintf(sol, sizeof sol, "%s/sol.csv", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad.csv", tmpdir);
    assert_int_equal(runf(&out, "%s plan " DATA "B.1048576.csv -o %s", TP_CLI_PATH, sol), 0);
    free(out);
    assert_int_equal(runf(&text, "%s validate " DATA "B.1048576.csv %s --capacity 2M", TP_CLI_PATH, sol), 0);
    assert_int_equal(runf(&json, "%s validate " DATA "B.1048576.csv %s --capacity 2M --json", TP_CLI_PATH, sol), 0);
    size_t n, height, peak;
    assert_int_equal(sscanf(text, "valid: %zu buffers, height %zu bytes, peak %zu bytes", &n,
                            &height, &peak), 3);
    cJSON *o = parse_one(json);
    assert_true(boolean(o, "valid"));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "verdict")->valuestring, "valid");
    assert_int_equal((size_t)num(o, "buffers"), n);
    assert_int_equal((size_t)num(o, "height"), height);
    assert_int_equal((size_t)num(o, "peak"), peak);
    assert_int_equal(peak, brute_peak(DATA "B.1048576.csv"));
    assert_int_equal((size_t)num(o, "capacity"), 2u << 20);
    assert_true(is_null(o, "message"));
    cJSON_Delete(o);
    free(text);
    free(json);

    /* b1 and b3 of input.12.csv live together, both at offset 0: an overlap */
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("id,lower,upper,size,offset\nb1,0,3,4,0\nb2,3,9,4,4\nb3,0,9,4,0\nb4,9,21,4,0\n"
          "b5,0,21,4,8\n", f);
    fclose(f);
    assert_int_equal(runf(&text, "%s validate " DATA "input.12.csv %s 2>&1", TP_CLI_PATH, bad), 4);
    assert_int_equal(runf(&json, "%s validate " DATA "input.12.csv %s --json", TP_CLI_PATH, bad), 4);
    o = parse_one(json);
    assert_false(boolean(o, "valid"));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "verdict")->valuestring, "overlap");
    const char *prefix = "tensorplan: validate: invalid: ";
    assert_int_equal(strncmp(text, prefix, strlen(prefix)), 0);
    const char *msg = cJSON_GetObjectItemCaseSensitive(o, "message")->valuestring;
    assert_int_equal(strlen(text), strlen(prefix) + strlen(msg) + 1);
    assert_memory_equal(text + strlen(prefix), msg, strlen(msg));
    cJSON_Delete(o);
    free(text);
    free(json);
}

/* A misaligned offset: verdict "misaligned", the text's message, exit 4; and the figures of
 * a gaps problem count windows (b sits on a's 4-byte window: peak 4 + 6 = 10). */
static void test_validate_json_alignment_and_gaps(void **state)
{
    (void)state;
    char prob[512], sol[512], *text, *json;
    snprintf(prob, sizeof prob, "%s/al.csv", tmpdir);
    snprintf(sol, sizeof sol, "%s/al_sol.csv", tmpdir);
    FILE *f = fopen(prob, "w");
    assert_non_null(f);
    fputs("id,lower,upper,size,alignment\na,0,2,6,1\nb,0,2,4,8\n", f);
    fclose(f);
    f = fopen(sol, "w");
    assert_non_null(f);
    fputs("id,lower,upper,size,offset\na,0,2,6,0\nb,0,2,4,6\n", f);
    fclose(f);
    assert_int_equal(runf(&text, "%s validate %s %s 2>&1", TP_CLI_PATH, prob, sol), 4);
    assert_int_equal(runf(&json, "%s validate %s %s --json", TP_CLI_PATH, prob, sol), 4);
    cJSON *o = parse_one(json);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "verdict")->valuestring, "misaligned");
    assert_non_null(strstr(text, cJSON_GetObjectItemCaseSensitive(o, "message")->valuestring));
    cJSON_Delete(o);
    free(text);
    free(json);
    f = fopen(prob, "w");
    assert_non_null(f);
    fputs("id,lower,upper,size,gaps\na,0,10,10,5-10@0:4\nb,5,10,6,\n", f);
    fclose(f);
    f = fopen(sol, "w");
    assert_non_null(f);
    fputs("id,lower,upper,size,offset\na,0,10,10,0\nb,5,10,6,4\n", f);
    fclose(f);
    assert_int_equal(runf(&text, "%s validate %s %s", TP_CLI_PATH, prob, sol), 0);
    assert_int_equal(runf(&json, "%s validate %s %s --json", TP_CLI_PATH, prob, sol), 0);
    o = parse_one(json);
    assert_string_equal(text, "valid: 2 buffers, height 10 bytes, peak 10 bytes (height/peak 1.0000)\n");
    assert_true(num(o, "peak") == 10 && num(o, "height") == 10);
    cJSON_Delete(o);
    free(text);
    free(json);
}

static void test_dash_reads_standard_input(void **state)
{
    (void)state;
    char *a, *b;
    assert_int_equal(runf(&a, "%s plan " DATA "D.1048576.csv --json", TP_CLI_PATH), 0);
    assert_int_equal(runf(&b, "%s plan - --json < " DATA "D.1048576.csv", TP_CLI_PATH), 0);
    cJSON *oa = parse_one(a), *ob = parse_one(b);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ob, "problem")->valuestring, "-");
    const char *keys[] = { "buffers", "peak", "arena" };
    for (int k = 0; k < 3; k++)
        assert_true(num(oa, keys[k]) == num(ob, keys[k]));
    cJSON_Delete(oa);
    cJSON_Delete(ob);
    free(a);
    free(b);
    char sol[512];
    snprintf(sol, sizeof sol, "%s/sol12.csv", tmpdir);
    assert_int_equal(runf(&a, "%s plan - -o - < " DATA "input.12.csv > %s 2>/dev/null", TP_CLI_PATH, sol), 0);
    free(a);
    assert_int_equal(runf(&a, "%s validate - %s --capacity 12 < " DATA "input.12.csv", TP_CLI_PATH, sol), 0);
    assert_int_equal(strncmp(a, "valid: 5 buffers, height 12 bytes", 33), 0);
    free(a);
    assert_int_equal(runf(&a, "%s validate " DATA "input.12.csv - < %s", TP_CLI_PATH, sol), 0);
    free(a);
    /* a refusal names (stdin) as the file */
    assert_int_equal(runf(&a, "printf 'id,lower,upper,size\\nx,3,1,4\\n' | %s plan - 2>&1", TP_CLI_PATH), 3);
    assert_non_null(strstr(a, "(stdin):2:"));
    free(a);
    assert_int_equal(runf(&a, "%s validate - - < /dev/null 2>&1", TP_CLI_PATH), 2);
    free(a);
    assert_int_equal(runf(&a, "%s plan - -o - --json < /dev/null 2>&1", TP_CLI_PATH), 2);
    free(a);
}

static void check_capacity(const char *arg, size_t want)
{
    char *out;
    assert_int_equal(runf(&out, "%s plan " DATA "input.12.csv --capacity %s --json", TP_CLI_PATH, arg), 0);
    cJSON *o = parse_one(out);
    assert_true(num(o, "capacity") == (double)want);
    cJSON_Delete(o);
    free(out);
}

static void test_size_suffixes_are_powers_of_1024(void **state)
{
    (void)state;
    check_capacity("12", 12);
    check_capacity("1K", 1024);
    check_capacity("3k", 3072);
    check_capacity("2M", 2097152);
    check_capacity("1G", 1073741824);
    char *out, *base;
    /* --align 4K places like --align 4096 */
    assert_int_equal(runf(&base, "%s plan " DATA "F.1048576.csv --align 4096 --json", TP_CLI_PATH), 0);
    assert_int_equal(runf(&out, "%s plan " DATA "F.1048576.csv --align 4K --json", TP_CLI_PATH), 0);
    cJSON *a = parse_one(base), *b = parse_one(out);
    assert_true(num(a, "arena") == num(b, "arena"));
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(base);
    free(out);
    /* --threads takes 0 .. 1024 */
    assert_int_equal(runf(&out, "%s plan " DATA "input.12.csv --threads 2 --json", TP_CLI_PATH), 0);
    free(out);
    assert_int_equal(runf(&out, "%s plan " DATA "input.12.csv --threads x 2>&1", TP_CLI_PATH), 2);
    assert_non_null(strstr(out, "--threads"));
    free(out);
    const char *bad[] = { "1T", "K", "1KB", "-1K", "1.5M", "17179869184G" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(runf(&out, "%s plan " DATA "input.12.csv --capacity %s 2>&1", TP_CLI_PATH, bad[i]), 2);
        assert_non_null(strstr(out, "--capacity"));
        free(out);
    }
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_json_has_the_text_figures),
        cmocka_unit_test(test_validate_json_has_the_text_figures),
        cmocka_unit_test(test_validate_json_alignment_and_gaps),
        cmocka_unit_test(test_dash_reads_standard_input),
        cmocka_unit_test(test_size_suffixes_are_powers_of_1024),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
