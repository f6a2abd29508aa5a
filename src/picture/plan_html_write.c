/* The picture of a plan as HTML: the page, its embedded data and where it goes
 * (docs/picture.md). The data is one JSON object in a <script type="application/json">
 * element; the style and the drawing script are plan.css and plan.js, built in as byte
 * arrays (plan_html_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/text.h"
#include "picture/plan_html_internal.h"

/* A JSON string that is also safe inside a <script> element and an HTML attribute: besides
 * the JSON escapes, <, >, & and ' are written as \u escapes, so "</script>" cannot end it. */
static void json_str(tp_gtext *t, const char *s)
{
    tp_gtext_puts(t, "\"");
    const unsigned char *c = (const unsigned char *)s;
    while (*c) {
        size_t run = 0;
        while (c[run] >= 0x20 && !strchr("\"\\<>&'", c[run]))
            run++;
        if (run)
            tp_gtext_printf(t, "%.*s", (int)run, (const char *)c);
        c += run;
        if (!*c)
            break;
        if (*c == '"' || *c == '\\')
            tp_gtext_printf(t, "\\%c", *c);
        else
            tp_gtext_printf(t, "\\u%04x", *c);
        c++;
    }
    tp_gtext_puts(t, "\"");
}

/* Text for an HTML element's content. */
static void html_text(tp_gtext *t, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            tp_gtext_puts(t, "&lt;");
        else if (*s == '>')
            tp_gtext_puts(t, "&gt;");
        else if (*s == '&')
            tp_gtext_puts(t, "&amp;");
        else
            tp_gtext_printf(t, "%c", *s);
    }
}

/* The distinct labels of a panel in first-seen order, and each rect's label index. */
static tp_status label_table(const tp_html_panel *q, const char ***labels, size_t *n_labels,
                             size_t *label_of)
{
    size_t n = 0;
    const char **l = malloc((q->count + 1) * sizeof *l);
    if (!l)
        return tp_fail(TP_ERR_NOMEM, "html page: out of memory");
    for (size_t i = 0; i < q->count; i++) {
        size_t k = 0;
        /* labels are few (ops or backends); the last one found is tried first */
        if (n && strcmp(l[n - 1], q->rects[i].label) == 0)
            k = n - 1;
        else
            while (k < n && strcmp(l[k], q->rects[i].label) != 0)
                k++;
        if (k == n)
            l[n++] = q->rects[i].label;
        label_of[i] = k;
    }
    *labels = l;
    *n_labels = n;
    return TP_OK;
}

static tp_status panel_json(tp_gtext *t, const tp_html_panel *q)
{
    size_t *label_of = malloc((2 * q->count + 1) * sizeof *label_of);
    const char **labels = NULL;
    size_t n_labels = 0, step = 0, bytes = 0, m = 0;
    if (!label_of)
        return tp_fail(TP_ERR_NOMEM, "html page: out of memory");
    size_t *order = label_of + q->count;
    tp_status st = label_table(q, &labels, &n_labels, label_of);
    if (st == TP_OK)
        st = tp_html_peak(q, &step, &bytes, order, &m);
    if (st != TP_OK) {
        free(label_of);
        free(labels);
        return st;
    }
    tp_gtext_puts(t, "{\"group\":");
    json_str(t, q->group);
    tp_gtext_puts(t, ",\"title\":");
    json_str(t, q->title);
    tp_gtext_printf(t, ",\"arena\":%zu,\"lower\":%zu,\"steps\":%zu,\n\"labels\":[", q->arena,
                    q->lower_bound, q->steps);
    for (size_t k = 0; k < n_labels; k++) {
        tp_gtext_puts(t, k ? "," : "");
        json_str(t, labels[k]);
    }
    tp_gtext_puts(t, "],\n\"names\":[");
    for (size_t i = 0; i < q->count; i++) {
        tp_gtext_puts(t, i ? (i % 16 ? "," : ",\n") : "");
        json_str(t, q->rects[i].name);
    }
    /* five numbers per rect: first, last, offset, size, label index */
    tp_gtext_puts(t, "],\n\"r\":[");
    for (size_t i = 0; i < q->count; i++) {
        const tp_html_rect *r = &q->rects[i];
        tp_gtext_printf(t, "%s%zu,%zu,%zu,%zu,%zu", i ? (i % 8 ? "," : ",\n") : "", r->first,
                        r->last, r->offset, r->size, label_of[i]);
    }
    tp_gtext_puts(t, "],\n\"bands\":[");
    for (size_t k = 0; k < 2 * q->n_bands; k++)
        tp_gtext_printf(t, "%s%zu", k ? "," : "", q->bands[k]);
    tp_gtext_puts(t, "],\n\"alias\":{");
    int first = 1;
    for (size_t i = 0; i < q->count; i++) {
        if (!q->rects[i].aliases)
            continue;
        tp_gtext_printf(t, "%s\"%zu\":", first ? "" : ",", i);
        json_str(t, q->rects[i].aliases);
        first = 0;
    }
    tp_gtext_printf(t, "},\n\"peak\":{\"step\":%zu,\"bytes\":%zu,\"live\":[", step, bytes);
    for (size_t k = 0; k < m; k++)
        tp_gtext_printf(t, "%s%zu", k ? (k % 16 ? "," : ",\n") : "", order[k]);
    tp_gtext_puts(t, "]}}");
    free(label_of);
    free(labels);
    return TP_OK;
}

static tp_status page_text(const tp_html_page *page, char **out)
{
    tp_gtext t = {0};
    tp_gtext_puts(&t, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<script>\n/* counts script errors where a checker can read them */\n"
                      "document.documentElement.setAttribute('data-errors', '0');\n"
                      "window.onerror = function () {\n"
                      "  var e = document.documentElement, n = +e.getAttribute('data-errors');\n"
                      "  e.setAttribute('data-errors', String(n + 1));\n"
                      "};\n</script>\n<title>");
    html_text(&t, page->title);
    tp_gtext_puts(&t, "</title>\n<style>\n");
    tp_gtext_puts(&t, (const char *)tp_html_style);
    tp_gtext_puts(&t, "</style>\n</head>\n<body>\n<h1>");
    html_text(&t, page->title);
    tp_gtext_puts(&t, "</h1>\n<p class=\"help\">Time steps across, byte offsets up, one "
                      "rectangle per tensor. Solid red: the arena (the height of the plan); "
                      "dashed blue: the lower bound (the most bytes live at one step); dotted: "
                      "the step where live bytes peak. Hover a rectangle for its details.</p>\n"
                      "<div id=\"tp-legend\"></div>\n<div id=\"tp-panels\"></div>\n"
                      "<div id=\"tp-tip\"></div>\n"
                      "<script id=\"tp-data\" type=\"application/json\">\n{\"format\":"
                      "\"tensorplan-picture\",\"version\":1,\"title\":");
    json_str(&t, page->title);
    tp_gtext_puts(&t, ",\"panels\":[\n");
    for (size_t i = 0; i < page->n_panels; i++) {
        tp_gtext_puts(&t, i ? ",\n" : "");
        tp_status st = panel_json(&t, &page->panels[i].panel);
        if (st != TP_OK) {
            free(t.data);
            return st;
        }
    }
    tp_gtext_puts(&t, "\n]}\n</script>\n<script>\n");
    tp_gtext_puts(&t, (const char *)tp_html_script);
    tp_gtext_puts(&t, "</script>\n</body>\n</html>\n");
    return tp_gtext_finish(&t, out);
}

tp_status tp_html_page_write(const tp_html_page *page, FILE *out)
{
    if (!page || !out)
        return tp_fail(TP_ERR_INVALID, "tp_html_page_write: NULL argument");
    char *text = NULL;
    tp_status st = page_text(page, &text);
    if (st != TP_OK)
        return st;
    size_t n = strlen(text);
    if (fwrite(text, 1, n, out) != n)
        st = tp_fail(TP_ERR_IO, "html page: cannot write");
    free(text);
    return st;
}

tp_status tp_html_page_save(const tp_html_page *page, const char *path)
{
    if (!page || !path)
        return tp_fail(TP_ERR_INVALID, "tp_html_page_save: NULL argument");
    char *text = NULL;
    tp_status st = page_text(page, &text);
    if (st != TP_OK)
        return st;
    st = tp_gtext_write_file(path, text);
    free(text);
    return st;
}
