/* The picture of a plan: the page's data model, "live at the peak", and the text report
 * (docs/picture.md). The HTML writer is in plan_html_write.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "picture/plan_html_internal.h"

static char *copy_string(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

tp_status tp_html_page_create(const char *title, tp_html_page **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "tp_html_page_create: NULL argument");
    *out = NULL;
    tp_html_page *p = calloc(1, sizeof *p);
    if (!p || !(p->title = copy_string(title ? title : ""))) {
        free(p);
        return tp_fail(TP_ERR_NOMEM, "html page: out of memory");
    }
    *out = p;
    return TP_OK;
}

void tp_html_page_destroy(tp_html_page *page)
{
    if (!page)
        return;
    for (size_t i = 0; i < page->n_panels; i++) {
        tp_html_panel *q = &page->panels[i].panel;
        for (size_t k = 0; k < q->count; k++) {
            tp_html_rect *r = (tp_html_rect *)&q->rects[k];
            free((char *)r->name);
            free((char *)r->label);
            free((char *)r->aliases);
        }
        free((tp_html_rect *)q->rects);
        free((size_t *)q->bands);
        free((char *)q->group);
        free((char *)q->title);
    }
    free(page->panels);
    free(page->title);
    free(page);
}

tp_status tp_html_page_add_panel(tp_html_page *page, const char *group, const char *title,
                                 size_t arena, size_t lower_bound, size_t *index)
{
    if (!page)
        return tp_fail(TP_ERR_INVALID, "tp_html_page_add_panel: NULL page");
    size_t n = page->n_panels;
    tp_status st = TP_GROW(&page->panels, &page->cap_panels, n + 1);
    if (st != TP_OK)
        return st;
    memset(&page->panels[n], 0, sizeof page->panels[n]);
    tp_html_panel *q = &page->panels[n].panel;
    q->group = copy_string(group ? group : "");
    q->title = copy_string(title ? title : "");
    if (!q->group || !q->title) {
        free((char *)q->group);
        free((char *)q->title);
        return tp_fail(TP_ERR_NOMEM, "html page: out of memory");
    }
    q->arena = arena;
    q->lower_bound = lower_bound;
    page->n_panels = n + 1;
    if (index)
        *index = n;
    return TP_OK;
}

tp_status tp_html_page_add_rect(tp_html_page *page, size_t index, const tp_html_rect *rect)
{
    if (!page || !rect || index >= page->n_panels)
        return tp_fail(TP_ERR_INVALID, "tp_html_page_add_rect: no such panel");
    tp_html_panel *q = &page->panels[index].panel;
    if (rect->first > rect->last)
        return tp_fail(TP_ERR_INVALID, "html rect %zu '%s': first step %zu after last %zu",
                       q->count, rect->name ? rect->name : "", rect->first, rect->last);
    if (rect->size > SIZE_MAX - rect->offset || rect->last == SIZE_MAX)
        return tp_fail(TP_ERR_OVERFLOW, "html rect %zu '%s': offset + size overflows",
                       q->count, rect->name ? rect->name : "");
    tp_html_rect *rects = (tp_html_rect *)q->rects;
    tp_status st = TP_GROW(&rects, &page->panels[index].rect_cap, q->count + 1);
    if (st != TP_OK)
        return st;
    q->rects = rects;
    tp_html_rect r = *rect;
    r.name = copy_string(rect->name ? rect->name : "");
    r.label = copy_string(rect->label ? rect->label : "");
    r.aliases = rect->aliases && *rect->aliases ? copy_string(rect->aliases) : NULL;
    if (!r.name || !r.label || (rect->aliases && *rect->aliases && !r.aliases)) {
        free((char *)r.name);
        free((char *)r.label);
        free((char *)r.aliases);
        return tp_fail(TP_ERR_NOMEM, "html page: out of memory");
    }
    rects[q->count++] = r;
    if (r.last + 1 > q->steps)
        q->steps = r.last + 1;
    return TP_OK;
}

tp_status tp_html_page_add_band(tp_html_page *page, size_t index, size_t offset, size_t size)
{
    if (!page || index >= page->n_panels)
        return tp_fail(TP_ERR_INVALID, "tp_html_page_add_band: no such panel");
    if (size > SIZE_MAX - offset)
        return tp_fail(TP_ERR_OVERFLOW, "html band: offset + size overflows");
    tp_html_panel *q = &page->panels[index].panel;
    size_t *bands = (size_t *)q->bands;
    tp_status st = TP_GROW(&bands, &page->panels[index].band_cap, 2 * q->n_bands + 2);
    if (st != TP_OK)
        return st;
    bands[2 * q->n_bands] = offset;
    bands[2 * q->n_bands + 1] = size;
    q->bands = bands;
    q->n_bands++;
    return TP_OK;
}

size_t tp_html_page_panel_count(const tp_html_page *page)
{
    return page ? page->n_panels : 0;
}

tp_html_panel tp_html_page_panel(const tp_html_page *page, size_t i)
{
    tp_html_panel none;
    memset(&none, 0, sizeof none);
    if (!page || i >= page->n_panels)
        return none;
    return page->panels[i].panel;
}

/* Steps as events: +size at first, -size after last; sorted, the running sum peaks. */
typedef struct peak_event {
    size_t step;
    size_t delta;
    int add;
} peak_event;

static int event_cmp(const void *a, const void *b)
{
    const peak_event *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return x->add - y->add; /* removals (after the previous step) before additions */
}

typedef struct sized_index {
    size_t size, index;
} sized_index;

static int size_desc_cmp(const void *a, const void *b)
{
    const sized_index *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

static tp_status peak_step(const tp_html_panel *panel, size_t *step, size_t *bytes)
{
    size_t n = panel->count;
    peak_event *ev = malloc((2 * n + 1) * sizeof *ev);
    if (!ev)
        return tp_fail(TP_ERR_NOMEM, "html peak: out of memory");
    for (size_t i = 0; i < n; i++) {
        const tp_html_rect *r = &panel->rects[i];
        ev[2 * i] = (peak_event){r->first, r->size, 1};
        ev[2 * i + 1] = (peak_event){r->last + 1, r->size, 0};
    }
    qsort(ev, 2 * n, sizeof *ev, event_cmp);
    size_t live = 0, best = 0, best_step = 0;
    for (size_t e = 0; e < 2 * n; e++) {
        if (ev[e].add) {
            if (live > SIZE_MAX - ev[e].delta) {
                free(ev);
                return tp_fail(TP_ERR_OVERFLOW, "html peak: live bytes exceed SIZE_MAX");
            }
            live += ev[e].delta;
        } else {
            live -= ev[e].delta;
        }
        int last_of_step = e + 1 == 2 * n || ev[e + 1].step != ev[e].step;
        if (last_of_step && ev[e].add && live > best) {
            best = live;
            best_step = ev[e].step;
        }
    }
    free(ev);
    *step = best_step;
    *bytes = best;
    return TP_OK;
}

tp_status tp_html_peak(const tp_html_panel *panel, size_t *step, size_t *bytes, size_t *order,
                       size_t *n_live)
{
    if (!panel || !step || !bytes || !n_live || (panel->count && !order))
        return tp_fail(TP_ERR_INVALID, "tp_html_peak: NULL argument");
    tp_status st = peak_step(panel, step, bytes);
    if (st != TP_OK)
        return st;
    sized_index *live = malloc((panel->count + 1) * sizeof *live);
    if (!live)
        return tp_fail(TP_ERR_NOMEM, "html peak: out of memory");
    size_t m = 0;
    for (size_t i = 0; i < panel->count && *bytes > 0; i++) {
        const tp_html_rect *r = &panel->rects[i];
        if (r->first <= *step && *step <= r->last)
            live[m++] = (sized_index){r->size, i};
    }
    /* *bytes == 0: nothing live, or only empty tensors: no peak to explain */
    qsort(live, m, sizeof *live, size_desc_cmp);
    for (size_t k = 0; k < m; k++)
        order[k] = live[k].index;
    free(live);
    *n_live = m;
    return TP_OK;
}

static void explain_panel(const tp_html_panel *q, FILE *out, size_t top, size_t step,
                          size_t bytes, const size_t *order, size_t m)
{
    fprintf(out, "live at the peak: %s%s%s: step %zu, %zu bytes in %zu tensors (arena %zu)\n",
            q->group, *q->group ? " / " : "", q->title, step, bytes, m, q->arena);
    size_t shown = top && top < m ? top : m, rest = 0;
    for (size_t k = 0; k < m; k++) {
        const tp_html_rect *r = &q->rects[order[k]];
        if (k < shown)
            fprintf(out, "  %6.2f%% %14zu  %-10s %s\n", 100.0 * (double)r->size / (double)bytes,
                    r->size, r->label, r->name);
        else
            rest += r->size;
    }
    if (shown < m)
        fprintf(out, "  %6.2f%% %14zu  (%zu more)\n", 100.0 * (double)rest / (double)bytes, rest,
                m - shown);
}

tp_status tp_html_page_explain(const tp_html_page *page, FILE *out, size_t top)
{
    if (!page || !out)
        return tp_fail(TP_ERR_INVALID, "tp_html_page_explain: NULL argument");
    for (size_t i = 0; i < page->n_panels; i++) {
        const tp_html_panel *q = &page->panels[i].panel;
        size_t *order = malloc((q->count + 1) * sizeof *order);
        if (!order)
            return tp_fail(TP_ERR_NOMEM, "html explain: out of memory");
        size_t step, bytes, m;
        tp_status st = tp_html_peak(q, &step, &bytes, order, &m);
        if (st == TP_OK)
            explain_panel(q, out, top, step, bytes, order, m);
        free(order);
        if (st != TP_OK)
            return st;
    }
    if (ferror(out))
        return tp_fail(TP_ERR_IO, "html explain: cannot write");
    return TP_OK;
}
