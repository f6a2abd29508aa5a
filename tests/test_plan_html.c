/* The plan picture's library functions (include/tensorplan/plan_html.h): the page holds
 * every rectangle's data (read back from its embedded JSON with cJSON), "live at the peak"
 * equals a brute force over every step, the allocator's panels are a valid picture (no two
 * rectangles share a byte at a common step, all below the arena line), refusals, and the
 * style sheet and script of src/picture/plan.css and plan.js carried byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "support/xorshift.h"
#include "tensorplan/plan_html.h"

/* Everything in f from its start, NUL-terminated; closes f. */
static char *stream_text(FILE *f)
{
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* The page's text, through a temporary file. */
static char *page_text(const tp_html_page *page)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(tp_html_page_write(page, f), TP_OK);
    return stream_text(f);
}

/* The JSON object of <script id="tp-data" ...> ... </script>. */
static cJSON *page_data(const char *text)
{
    const char *open = "<script id=\"tp-data\" type=\"application/json\">";
    const char *start = strstr(text, open);
    assert_non_null(start);
    start += strlen(open);
    const char *end = strstr(start, "</script>");
    assert_non_null(end);
    cJSON *data = cJSON_ParseWithLength(start, (size_t)(end - start));
    assert_non_null(data);
    return data;
}

static double num(const cJSON *array, int i)
{
    const cJSON *v = cJSON_GetArrayItem(array, i);
    assert_non_null(v);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static const char *str(const cJSON *array, int i)
{
    const cJSON *v = cJSON_GetArrayItem(array, i);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

/* Names that an HTML page must not take for markup. */
static const char *const tricky[] = {"</script><b>x</b>", "a \"quoted\" & 'single'", "tab\there",
                                     "back\\slash", "plain", "ünïcode"};

static void test_page_holds_every_rect(void **state)
{
    (void)state;
    tpt_rng rng = tpt_rng_seeded(13);
    tp_html_page *page = NULL;
    assert_int_equal(tp_html_page_create("t <1> & co", &page), TP_OK);
    const char *labels[] = {"mul_mat", "add", "input", "<lab>"};
    enum { N = 300 };
    tp_html_rect in[N];
    char names[N][64], aliases[N][32];
    assert_int_equal(tp_html_page_add_panel(page, "g1", "first", 5000, 1234, NULL), TP_OK);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "%s #%d", tricky[i % 6], i);
        snprintf(aliases[i], sizeof aliases[i], "silu_%d (silu)", i);
        size_t first = tpt_rng_next(&rng) % 50;
        in[i] = (tp_html_rect){names[i], labels[tpt_rng_next(&rng) % 4],
                               1 + tpt_rng_next(&rng) % 1000, first,
                               first + tpt_rng_next(&rng) % 20, tpt_rng_next(&rng) % 4000,
                               i % 7 == 0 ? aliases[i] : NULL};
        assert_int_equal(tp_html_page_add_rect(page, 0, &in[i]), TP_OK);
    }
    for (size_t k = 0; k < 5; k++)
        assert_int_equal(tp_html_page_add_band(page, 0, 1000 * k, 1000 - k), TP_OK);
    assert_int_equal(tp_html_page_add_panel(page, "g2", "empty", 0, 0, NULL), TP_OK);
    char *text = page_text(page);
    /* the only "</script>" are the page's own closing tags: the data cannot end early */
    size_t closes = 0;
    for (const char *p = text; (p = strstr(p, "</script>")) != NULL; p++)
        closes++;
    assert_int_equal(closes, 3);
    assert_non_null(strstr(text, "<title>t &lt;1&gt; &amp; co</title>"));
    assert_null(strstr(text, "http://"));
    assert_null(strstr(text, "https://"));
    assert_null(strstr(text, " src="));
    cJSON *data = page_data(text);
    const cJSON *panels = cJSON_GetObjectItem(data, "panels");
    assert_int_equal(cJSON_GetArraySize(panels), 2);
    const cJSON *p0 = cJSON_GetArrayItem(panels, 0);
    assert_string_equal(cJSON_GetObjectItem(p0, "group")->valuestring, "g1");
    assert_int_equal((int)cJSON_GetObjectItem(p0, "arena")->valuedouble, 5000);
    assert_int_equal((int)cJSON_GetObjectItem(p0, "lower")->valuedouble, 1234);
    const cJSON *jn = cJSON_GetObjectItem(p0, "names"), *jr = cJSON_GetObjectItem(p0, "r");
    const cJSON *jl = cJSON_GetObjectItem(p0, "labels"), *ja = cJSON_GetObjectItem(p0, "alias");
    assert_int_equal(cJSON_GetArraySize(jn), N);
    assert_int_equal(cJSON_GetArraySize(jr), 5 * N);
    size_t max_last = 0;
    for (int i = 0; i < N; i++) {
        assert_string_equal(str(jn, i), in[i].name);
        assert_int_equal((size_t)num(jr, 5 * i), in[i].first);
        assert_int_equal((size_t)num(jr, 5 * i + 1), in[i].last);
        assert_int_equal((size_t)num(jr, 5 * i + 2), in[i].offset);
        assert_int_equal((size_t)num(jr, 5 * i + 3), in[i].size);
        assert_string_equal(str(jl, (int)num(jr, 5 * i + 4)), in[i].label);
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        const cJSON *a = cJSON_GetObjectItem(ja, key);
        if (in[i].aliases)
            assert_string_equal(a->valuestring, in[i].aliases);
        else
            assert_null(a);
        if (in[i].last > max_last)
            max_last = in[i].last;
    }
    assert_int_equal((size_t)cJSON_GetObjectItem(p0, "steps")->valuedouble, max_last + 1);
    const cJSON *jb = cJSON_GetObjectItem(p0, "bands");
    assert_int_equal(cJSON_GetArraySize(jb), 10);
    for (int k = 0; k < 5; k++) {
        assert_int_equal((size_t)num(jb, 2 * k), 1000 * (size_t)k);
        assert_int_equal((size_t)num(jb, 2 * k + 1), 1000 - (size_t)k);
    }
    const cJSON *p1 = cJSON_GetArrayItem(panels, 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(p1, "names")), 0);
    cJSON_Delete(data);
    free(text);
    tp_html_page_destroy(page);
}

/* Brute force: live bytes at every step; the first step of the most; the live rectangles
 * by decreasing size, equal sizes by index (a selection sort). */
static void brute_peak(const tp_html_rect *r, size_t n, size_t *step, size_t *bytes,
                       size_t *order, size_t *m)
{
    size_t end = 0, best = 0, best_t = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].last + 1 > end)
            end = r[i].last + 1;
    for (size_t t = 0; t < end; t++) {
        size_t live = 0;
        for (size_t i = 0; i < n; i++)
            if (r[i].first <= t && t <= r[i].last)
                live += r[i].size;
        if (live > best) {
            best = live;
            best_t = t;
        }
    }
    *step = best_t;
    *bytes = best;
    *m = 0;
    if (best == 0)
        return;
    unsigned char *taken = calloc(n + 1, 1);
    assert_non_null(taken);
    for (;;) {
        size_t pick = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
            if (!taken[i] && r[i].first <= best_t && best_t <= r[i].last &&
                (pick == SIZE_MAX || r[i].size > r[pick].size))
                pick = i;
        if (pick == SIZE_MAX)
            break;
        taken[pick] = 1;
        order[(*m)++] = pick;
    }
    free(taken);
}

static void test_peak_equals_brute_force(void **state)
{
    (void)state;
    tpt_rng rng = tpt_rng_seeded(7);
    for (int trial = 0; trial < 300; trial++) {
        size_t n = trial % 40, horizon = 1 + tpt_rng_next(&rng) % 30;
        tp_html_rect r[40];
        for (size_t i = 0; i < n; i++) {
            size_t a = tpt_rng_next(&rng) % horizon, b = tpt_rng_next(&rng) % horizon;
            /* few distinct sizes, zeros included, so that ties happen */
            r[i] = (tp_html_rect){"x", "l", (tpt_rng_next(&rng) % 5) * 8, a < b ? a : b,
                                  a < b ? b : a, 0, NULL};
        }
        tp_html_panel p = {"", "", 0, 0, horizon, r, n, NULL, 0};
        size_t step, bytes, m, order[40], want_step, want_bytes, want_m, want[40];
        assert_int_equal(tp_html_peak(&p, &step, &bytes, order, &m), TP_OK);
        brute_peak(r, n, &want_step, &want_bytes, want, &want_m);
        assert_int_equal(bytes, want_bytes);
        assert_int_equal(step, want_step);
        assert_int_equal(m, want_m);
        for (size_t k = 0; k < m; k++)
            assert_int_equal(order[k], want[k]);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    tp_html_page *page = NULL;
    assert_int_equal(tp_html_page_create("x", &page), TP_OK);
    tp_html_rect r = {"a", "b", 4, 3, 2, 0, NULL};
    assert_int_equal(tp_html_page_add_rect(page, 0, &r), TP_ERR_INVALID); /* no panel yet */
    assert_int_equal(tp_html_page_add_panel(page, NULL, NULL, 1, 1, NULL), TP_OK);
    assert_int_equal(tp_html_page_add_rect(page, 0, &r), TP_ERR_INVALID); /* first > last */
    assert_non_null(strstr(tp_last_error(), "first step 3 after last 2"));
    r = (tp_html_rect){"a", "b", SIZE_MAX, 0, 0, 1, NULL};
    assert_int_equal(tp_html_page_add_rect(page, 0, &r), TP_ERR_OVERFLOW);
    assert_int_equal(tp_html_page_panel(page, 0).count, 0);
    /* many panels, each with its own rectangles, interleaved */
    for (size_t k = 1; k <= 40; k++)
        assert_int_equal(tp_html_page_add_panel(page, "g", "p", 100, 0, NULL), TP_OK);
    for (size_t i = 0; i < 30; i++)
        for (size_t k = 1; k <= 40; k++) {
            r = (tp_html_rect){"x", "l", k, i, i, i * k, NULL};
            assert_int_equal(tp_html_page_add_rect(page, k, &r), TP_OK);
        }
    assert_int_equal(tp_html_page_panel_count(page), 41);
    for (size_t k = 1; k <= 40; k++) {
        tp_html_panel q = tp_html_page_panel(page, k);
        assert_int_equal(q.count, 30);
        assert_int_equal(q.steps, 30);
        for (size_t i = 0; i < 30; i++)
            assert_true(q.rects[i].size == k && q.rects[i].offset == i * k &&
                        q.rects[i].first == i);
    }
    tp_html_page_destroy(page);
}

/* The allocator's panels of a model's graphs: every rectangle below its panel's arena, no
 * two sharing a byte at a common step, the KV panel one rectangle per region, and the
 * activation panel's lower bound the allocator's peak of live bytes. */
static void check_panels(const tp_html_page *page, size_t first, const tp_allocator *a,
                         int queued)
{
    size_t np = tp_html_page_panel_count(page);
    assert_int_equal(np - first, queued ? 3 : 2); /* cpu, (queued,) KV */
    for (size_t k = first; k < np; k++) {
        tp_html_panel p = tp_html_page_panel(page, k);
        assert_true(p.count > 0);
        for (size_t i = 0; i < p.count; i++) {
            const tp_html_rect *x = &p.rects[i];
            assert_true(x->offset + x->size <= p.arena);
            for (size_t j = 0; j < i; j++) {
                const tp_html_rect *y = &p.rects[j];
                int time = x->first <= y->last && y->first <= x->last;
                int space = x->offset < y->offset + y->size && y->offset < x->offset + x->size;
                if (time && space)
                    fail_msg("panel %zu: '%s' and '%s' share a byte", k, x->name, y->name);
            }
        }
    }
    /* one time axis for the graph: its steps 0 .. n, n the step after the last node */
    for (size_t k = first; k < np; k++)
        assert_int_equal(tp_html_page_panel(page, k).steps,
                         tp_alloc_current_graph(a)->n_nodes + 1);
    tp_html_panel kv = tp_html_page_panel(page, np - 1);
    assert_int_equal(kv.count, tp_alloc_persistent_count(a));
    /* pool buffers: one band each, and every window inside one buffer */
    int pool = tp_alloc_plan_options(a).strategy == TP_STRATEGY_POOL;
    size_t bands = 0;
    for (size_t k = first; k + 1 < np; k++) {
        tp_html_panel p = tp_html_page_panel(page, k);
        bands += p.n_bands;
        for (size_t i = 0; i < p.count && pool; i++) {
            size_t inside = 0;
            const tp_html_rect *x = &p.rects[i];
            for (size_t b = 0; b < p.n_bands; b++)
                inside += p.bands[2 * b] <= x->offset &&
                          x->offset + x->size <= p.bands[2 * b] + p.bands[2 * b + 1];
            assert_int_equal(inside, 1);
        }
    }
    assert_int_equal(bands, pool ? tp_alloc_stats(a).activation_buffers : 0);
    if (!queued) /* one backend: its panel's peak is the graph's */
        assert_int_equal(tp_html_page_panel(page, first).lower_bound,
                         tp_alloc_stats(a).peak_live_bytes);
}

static void test_alloc_panels(void **state)
{
    (void)state;
    tp_model_config cfg;
    assert_int_equal(tp_model_config_builtin("tiny", &cfg), TP_OK);
    tp_html_page *page = NULL;
    assert_int_equal(tp_html_page_create("tiny", &page), TP_OK);
    const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA};
    for (size_t s = 0; s < 2; s++) {
        for (size_t tokens = 1; tokens <= 9; tokens += 4) {
            tp_graph_params gp;
            memset(&gp, 0, sizeof gp);
            gp.n_tokens = tokens;
            gp.n_out = 1;
            gp.n_ctx = 64;
            gp.fuse_ffn = 1;
            gp.queued_layers = tokens == 5; /* layer 0 on the queued backend */
            tp_graph *g = NULL;
            tp_allocator *a = NULL;
            tp_alloc_options o = tp_alloc_options_default();
            o.strategy = strategies[s];
            assert_int_equal(tp_model_build_graph(&cfg, &gp, &g), TP_OK);
            assert_int_equal(tp_allocator_create_host(&a), TP_OK);
            assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
            size_t first = tp_html_page_panel_count(page);
            assert_int_equal(tp_html_add_alloc(page, "g", a), TP_OK);
            check_panels(page, first, a, gp.queued_layers);
            tp_allocator_destroy(a);
            tp_graph_destroy(g);
        }
    }
    tp_html_page_destroy(page);
}

/* `plan --explain` on MiniMalloc's example (id,lower,upper,size: b1,0,3,4; b2,3,9,4; b3,0,9,4;
 * b4,9,21,4; b5,0,21,4): steps 0-2 have b1, b3, b5 live (12 bytes), later steps 8 bytes,
 * so the peak is step 0 with those three, a third each, in file order (equal sizes). */
static void test_plan_explain_text(void **state)
{
    (void)state;
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof cmd, "'%s' plan '%s/minimalloc/input.12.csv' --explain", TP_CLI_PATH,
             TP_TEST_DATA);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    const char *at = strstr(out, "live at the peak: arena: step 0, 12 bytes in 3 tensors");
    assert_non_null(at);
    const char *b1 = strstr(at, "33.33%              4  buffer     b1\n");
    const char *b3 = strstr(at, "33.33%              4  buffer     b3\n");
    const char *b5 = strstr(at, "33.33%              4  buffer     b5\n");
    assert_true(b1 && b3 && b5 && b1 < b3 && b3 < b5);
    assert_null(strstr(at, "b2"));
    assert_null(strstr(at, "b4"));
}

/* A page that cannot be written: exit 1 and one line naming the file, for each command. */
static void test_unwritable_page(void **state)
{
    (void)state;
    const char *const cmds[] = {
        "plan '" TP_TEST_DATA "/minimalloc/input.12.csv' --html /nonexistent-dir/p.html",
        "model tiny --prompt 3 --n-ctx 16 --html /nonexistent-dir/p.html",
    };
    for (size_t k = 0; k < 2; k++) {
        char cmd[1024], out[4096];
        snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 >/dev/null", TP_CLI_PATH, cmds[k]);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = '\0';
        int status = pclose(p);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 1);
        assert_non_null(strstr(out, "tensorplan: "));
        assert_non_null(strstr(out, "/nonexistent-dir/p.html: cannot open for writing"));
        assert_non_null(strchr(out, '\n'));
        assert_int_equal(strchr(out, '\n')[1], '\0'); /* one line */
    }
}

/* The text between open and the next close in page, which must be src/picture/NAME byte for
 * byte: the page carries the style sheet and the script as they are in the source tree. */
static void check_embedded(const char *page, const char *open, const char *close,
                           const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/src/picture/%s", TP_SOURCE_DIR, name);
    char *want = stream_text(fopen(path, "rb"));
    const char *start = strstr(page, open);
    assert_non_null(start);
    start += strlen(open);
    const char *end = strstr(start, close);
    assert_non_null(end);
    if ((size_t)(end - start) != strlen(want) || memcmp(start, want, strlen(want)) != 0)
        fail_msg("the page's copy of %s (%zu bytes) differs from the file (%zu bytes)", name,
                 (size_t)(end - start), strlen(want));
    free(want);
}

static void test_page_embeds_plan_js_and_css(void **state)
{
    (void)state;
    tp_html_page *page = NULL;
    assert_int_equal(tp_html_page_create("embedded", &page), TP_OK);
    char *text = page_text(page);
    check_embedded(text, "<style>\n", "</style>", "plan.css");
    const char *data = strstr(text, "<script id=\"tp-data\"");
    assert_non_null(data);
    check_embedded(data, "</script>\n<script>\n", "</script>", "plan.js");
    free(text);
    tp_html_page_destroy(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_holds_every_rect),
        cmocka_unit_test(test_peak_equals_brute_force),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_alloc_panels),
        cmocka_unit_test(test_plan_explain_text),
        cmocka_unit_test(test_unwritable_page),
        cmocka_unit_test(test_page_embeds_plan_js_and_css),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
