/* The plan pictures in a real browser: every kind of page (plan, alloc, model, and a plan of
 * 100,000 tensors) is written by the built CLI and opened with headless Chromium
 * (--dump-dom and --screenshot). The page's script records what it drew in attributes of
 * <html>; the test checks that it drew one shape per tensor, counted here from the problem
 * or plan files (CSV rows; plan JSON nodes and regions), that both lines (arena, lower
 * bound) exist, and that no script error was raised. Skipped, with a message, when chromium
 * is not installed (scripts/deps.sh installs it, so CI runs it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tp_html_browser_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static int have_chromium(void)
{
    return system("command -v chromium >/dev/null 2>&1") == 0;
}

#define SKIP_WITHOUT_CHROMIUM()                                                              \
    do {                                                                                     \
        if (!have_chromium()) {                                                              \
            fprintf(stderr, "test_html_browser: chromium is not installed (Debian package "  \
                            "'chromium', installed by scripts/deps.sh); browser check "      \
                            "skipped\n");                                                    \
            skip();                                                                          \
        }                                                                                    \
    } while (0)

static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int status = system(cmd);
    assert_true(status != -1 && WIFEXITED(status));
    return WEXITSTATUS(status);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return text;
}

/* The value of attribute NAME of the dumped <html ...> tag, into out. */
static int html_attr(const char *dom, const char *name, char *out, size_t cap)
{
    const char *tag = strstr(dom, "<html");
    assert_non_null(tag);
    const char *end = strchr(tag, '>');
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *at = strstr(tag, key);
    if (!at || at > end)
        return 0;
    at += strlen(key);
    size_t n = strcspn(at, "\"");
    assert_true(n < cap);
    memcpy(out, at, n);
    out[n] = '\0';
    return 1;
}

/* The DOM after the script ran: the attributes it writes. */
static void check_dom(const char *dom_path, long want_shapes, char *probe, size_t cap)
{
    char attr[64];
    char *dom = slurp(dom_path, NULL);
    assert_true(html_attr(dom, "data-errors", attr, sizeof attr)); /* the script ran */
    assert_string_equal(attr, "0");
    assert_true(html_attr(dom, "data-drawn", attr, sizeof attr)); /* ... to the end */
    assert_string_equal(attr, "1");
    assert_true(html_attr(dom, "data-lines", attr, sizeof attr));
    assert_string_equal(attr, "arena,peak");
    assert_true(html_attr(dom, "data-drawn-count", attr, sizeof attr));
    assert_int_equal(strtol(attr, NULL, 10), want_shapes);
    if (probe)
        assert_true(html_attr(dom, "data-probe", probe, cap));
    free(dom);
}

/* Opens PAGE headless twice at once (each browser with its own profile): --dump-dom, and
 * with SCREENSHOT also --screenshot, whose PNG must exist. With PROBE ("#probe=..."), the
 * DOM is that of PAGE + PROBE and its tooltips go to got. */
static void check_in_browser_probe(const char *page, long want_shapes, int screenshot,
                                   const char *probe, char *got, size_t cap)
{
    char base[512], dom_path[400], png[400], shot[2048];
    snprintf(base, sizeof base,
             "chromium --headless --no-sandbox --disable-gpu --no-first-run "
             "--window-size=1200,900 --user-data-dir='%s/profile-%s", tmpdir, page);
    snprintf(dom_path, sizeof dom_path, "%s/%s.dom", tmpdir, page);
    snprintf(png, sizeof png, "%s/%s.png", tmpdir, page);
    snprintf(shot, sizeof shot, "(cd '%s' && %s-shot' --screenshot='%s' 'file://%s/%s' "
             ">/dev/null 2>&1) & shot=$!; ", tmpdir, base, png, tmpdir, page);
    assert_int_equal(sh("%s%s-dom' --dump-dom 'file://%s/%s%s' >'%s' 2>/dev/null || exit 1; %s",
                        screenshot ? shot : "", base, tmpdir, page, probe ? probe : "",
                        dom_path, screenshot ? "wait $shot" : "true"), 0);
    check_dom(dom_path, want_shapes, probe ? got : NULL, cap);
    if (!screenshot)
        return;
    size_t len = 0;
    char *bytes = slurp(png, &len);
    assert_true(len > 1000);
    assert_memory_equal(bytes, "\x89PNG\r\n\x1a\n", 8);
    free(bytes);
}

static void check_in_browser(const char *page, long want_shapes, int screenshot)
{
    check_in_browser_probe(page, want_shapes, screenshot, NULL, NULL, 0);
}

/* Data rows of a CSV file: its non-empty lines after the header. */
static long csv_rows(const char *path)
{
    char *text = slurp(path, NULL);
    long lines = 0;
    for (char *line = strtok(text, "\r\n"); line; line = strtok(NULL, "\r\n"))
        lines += line[strspn(line, " \t")] != '\0';
    free(text);
    return lines - 1;
}

/* Shapes of a plan file's picture: every node with a buffer of its own (not written in
 * place into a source's, not a view of a persistent region), and every persistent region. */
static long plan_shapes(const char *path)
{
    char *text = slurp(path, NULL);
    cJSON *plan = cJSON_Parse(text);
    free(text);
    assert_non_null(plan);
    const cJSON *buffers = cJSON_GetObjectItem(plan, "buffers"), *b, *n;
    long shapes = 0;
    cJSON_ArrayForEach(b, buffers) shapes += cJSON_IsTrue(cJSON_GetObjectItem(b, "persistent"));
    cJSON_ArrayForEach(n, cJSON_GetObjectItem(plan, "nodes")) {
        const cJSON *ref = cJSON_GetObjectItem(n, "buffer");
        if (!cJSON_IsObject(ref) || cJSON_GetObjectItem(n, "alias_of"))
            continue;
        int persistent = 0;
        cJSON_ArrayForEach(b, buffers) {
            if (cJSON_IsTrue(cJSON_GetObjectItem(b, "persistent")) &&
                cJSON_GetObjectItem(b, "id")->valuedouble ==
                    cJSON_GetObjectItem(ref, "id")->valuedouble &&
                strcmp(cJSON_GetObjectItem(b, "backend")->valuestring,
                       cJSON_GetObjectItem(ref, "backend")->valuestring) == 0)
                persistent = 1;
        }
        shapes += !persistent;
    }
    cJSON_Delete(plan);
    return shapes;
}

/* The README example. Hovering too: the page's #probe=0:K,... hovers the centre of each
 * rectangle K in turn and records the tooltips; each must name the buffer with its size,
 * steps and offset as the problem and the solution file give them. */
static void test_plan_page(void **state)
{
    (void)state;
    SKIP_WITHOUT_CHROMIUM();
    const char *problem = TP_TEST_DATA "/minimalloc/input.12.csv";
    assert_int_equal(sh("'%s' plan '%s' -o '%s/sol.csv' --html '%s/plan.html' >/dev/null",
                        TP_CLI_PATH, problem, tmpdir, tmpdir), 0);
    char path[400], want[2048] = "", hash[256] = "#probe=", id[32], line[128], got[2048];
    snprintf(path, sizeof path, "%s/sol.csv", tmpdir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f)); /* id,lower,upper,size,offset */
    unsigned long lower, upper, size, offset;
    for (int k = 0; fgets(line, sizeof line, f); k++) {
        assert_int_equal(sscanf(line, "%31[^,],%lu,%lu,%lu,%lu", id, &lower, &upper, &size,
                                &offset), 5);
        assert_true(size < 1000); /* the tooltip writes "N B" twice below 1 KB */
        snprintf(want + strlen(want), sizeof want - strlen(want),
                 "%s%s | buffer | size %lu B (%lu B) | steps %lu .. %lu | offset %lu",
                 k ? " || " : "", id, size, size, lower, upper - 1, offset);
        snprintf(hash + strlen(hash), sizeof hash - strlen(hash), "%s0:%d", k ? "," : "", k);
    }
    fclose(f);
    check_in_browser_probe("plan.html", csv_rows(problem), 1, hash, got, sizeof got);
    assert_string_equal(got, want);
}

/* The error counter itself: a page with a failing script after the drawing must read
 * data-errors="1", or the checks above could not see an error. */
static void test_error_counter(void **state)
{
    (void)state;
    SKIP_WITHOUT_CHROMIUM();
    assert_int_equal(sh("'%s' plan '%s/minimalloc/input.12.csv' --html '%s/e.html' >/dev/null "
                        "&& sed -i 's|</body>|<script>no_such_function();</script></body>|' "
                        "'%s/e.html'", TP_CLI_PATH, TP_TEST_DATA, tmpdir, tmpdir), 0);
    assert_int_equal(sh("chromium --headless --no-sandbox --disable-gpu --no-first-run "
                        "--user-data-dir='%s/profile-e' --dump-dom 'file://%s/e.html' "
                        ">'%s/e.dom' 2>/dev/null", tmpdir, tmpdir, tmpdir), 0);
    char path[400], attr[64];
    snprintf(path, sizeof path, "%s/e.dom", tmpdir);
    char *dom = slurp(path, NULL);
    assert_true(html_attr(dom, "data-errors", attr, sizeof attr));
    assert_string_equal(attr, "1");
    free(dom);
}

/* A graph with a queued layer: panels for cpu, queued and the KV regions. */
static void test_alloc_page(void **state)
{
    (void)state;
    SKIP_WITHOUT_CHROMIUM();
    assert_int_equal(sh("'%s' graph tiny --tokens 5 --n-ctx 64 --queued-layers 1 --json "
                        "'%s/g.json' >/dev/null && '%s' alloc '%s/g.json' --plan '%s/p.json' "
                        "--html '%s/alloc.html' >/dev/null",
                        TP_CLI_PATH, tmpdir, TP_CLI_PATH, tmpdir, tmpdir, tmpdir), 0);
    char plan[400];
    snprintf(plan, sizeof plan, "%s/p.json", tmpdir);
    check_in_browser("alloc.html", plan_shapes(plan), 1);
}

/* model: the prefill and decode plans side by side; the test counts their shapes from the
 * plan files of the same two graphs written by graph and alloc. */
static void test_model_page(void **state)
{
    (void)state;
    SKIP_WITHOUT_CHROMIUM();
    long want = 0;
    const int tokens[2] = {7, 1};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sh("'%s' graph tiny --tokens %d --n-out 1 --n-ctx 64 --json "
                            "'%s/m%d.json' >/dev/null && '%s' alloc '%s/m%d.json' --plan "
                            "'%s/mp%d.json' >/dev/null",
                            TP_CLI_PATH, tokens[k], tmpdir, k, TP_CLI_PATH, tmpdir, k, tmpdir,
                            k), 0);
        char plan[400];
        snprintf(plan, sizeof plan, "%s/mp%d.json", tmpdir, k);
        want += plan_shapes(plan);
    }
    assert_int_equal(sh("'%s' model tiny --prompt 7 --n-ctx 64 --html '%s/model.html' "
                        ">/dev/null", TP_CLI_PATH, tmpdir), 0);
    check_in_browser("model.html", want, 1);
}

/* 100,000 tensors: the page opens, draws every one, and the file stays proportional. */
static void test_large_page(void **state)
{
    (void)state;
    SKIP_WITHOUT_CHROMIUM();
    enum { N = 100000 };
    char path[400];
    snprintf(path, sizeof path, "%s/big.csv", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "id,lower,upper,size\n");
    uint64_t x = 88172645463325252ull;
    unsigned probed[3] = {0, 0, 0}; /* lower, upper, size of tensor N / 2, the large one */
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        unsigned lower = (unsigned)(i / 8), len = 1 + (unsigned)(x % 64);
        unsigned size = 64 + (unsigned)(x >> 40) % 4096;
        if (i == N / 2) /* one tensor several pixels wide and tall, to hover */
            len = 2000, size = 1u << 18;
        fprintf(f, "t%d,%u,%u,%u\n", i, lower, lower + len, size);
        if (i == N / 2)
            probed[0] = lower, probed[1] = lower + len, probed[2] = size;
    }
    fclose(f);
    assert_int_equal(sh("'%s' plan '%s' --html '%s/big.html' >/dev/null", TP_CLI_PATH, path,
                        tmpdir), 0);
    size_t bytes = 0;
    snprintf(path, sizeof path, "%s/big.html", tmpdir);
    free(slurp(path, &bytes));
    /* a compact encoding: names of 2 to 6 characters, five numbers, a peak index */
    assert_true(bytes < (size_t)N * 60);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    snprintf(path, sizeof path, "%s/big.csv", tmpdir);
    char got[512], want[128];
    check_in_browser_probe("big.html", csv_rows(path), 0, "#probe=0:50000", got, sizeof got);
    /* hovering still finds one tensor among 100,000 */
    snprintf(want, sizeof want, "t50000 | buffer | size %u B (", probed[2]);
    assert_memory_equal(got, want, strlen(want));
    snprintf(want, sizeof want, " | steps %u .. %u | offset ", probed[0], probed[1] - 1);
    assert_non_null(strstr(got, want));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    fprintf(stderr, "100000 tensors: %zu bytes (%.1f per tensor), opened and drawn in %.2f s\n",
            bytes, (double)bytes / N, s);
    assert_true(s < 30.0); /* about 2 s on an idle machine; generous for a loaded one */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_page),
        cmocka_unit_test(test_error_counter),
        cmocka_unit_test(test_alloc_page),
        cmocka_unit_test(test_model_page),
        cmocka_unit_test(test_large_page),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
