/* tensorplan: a picture of a plan, as one self-contained HTML page (docs/picture.md).
 *
 * Example, given an allocator with a plan, `const tp_allocator *alloc` (alloc.h):
 *
 *     tp_html_page *page;
 *     if (tp_html_page_create("a plan", &page) != TP_OK)
 *         return 1;
 *     tp_status st = tp_html_add_alloc(page, "prefill", alloc);   // a panel per address space
 *     if (st == TP_OK)
 *         st = tp_html_page_explain(page, stdout, 5);      // the 5 largest live at each peak
 *     if (st == TP_OK)
 *         st = tp_html_page_save(page, "plan.html");
 *     tp_html_page_destroy(page);
 *     return st == TP_OK ? 0 : 1;
 *
 * A page is a list of panels; a panel is one address space (a CSV problem's arena, a
 * backend's pool buffers stacked or its arena, the KV regions) with one rectangle per tensor:
 * time steps across, byte offsets up. The data model does not know where a plan came from;
 * the *_report functions below fill it from a CSV solution, an allocator's plan or a model's
 * prefill and decode graphs. The page embeds the rectangles as compact JSON and draws them
 * on a canvas with its own script (no network, no other file); it also lists the tensors
 * live at the step where the panel's live bytes peak, largest first. Part of the picture
 * layer (src/picture). */
#ifndef TENSORPLAN_PLAN_HTML_H
#define TENSORPLAN_PLAN_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "tensorplan/alloc.h"
#include "tensorplan/api.h"
#include "tensorplan/cache.h"
#include "tensorplan/csv.h"
#include "tensorplan/model.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor of a panel. Strings are copied by tp_html_page_add_rect. */
typedef struct tp_html_rect {
    const char *name;
    const char *label;   /* op or backend: rectangles of one label share a colour; NULL = "" */
    size_t size;         /* bytes (the rectangle's height)                                   */
    size_t first, last;  /* time steps, inclusive (the rectangle's width)                    */
    size_t offset;       /* bytes from the bottom of the panel                               */
    const char *aliases; /* what shares the window in place, for the tooltip; NULL = none    */
} tp_html_rect;

/* A panel as the page holds it (read with tp_html_page_panel). */
typedef struct tp_html_panel {
    const char *group;       /* panels of one group form one column ("prefill", "decode") */
    const char *title;
    size_t arena;            /* height of the plan: the solid line                         */
    size_t lower_bound;      /* peak live bytes: the dashed line                           */
    size_t steps;            /* time steps 0 .. steps - 1 (at least every rect's last + 1) */
    const tp_html_rect *rects;
    size_t count;
    /* Optional bands: the address ranges of the buffers a panel stacks (pool buffers), drawn
     * as alternating stripes behind the rectangles; 2 numbers each, offset and size. */
    const size_t *bands;
    size_t n_bands;
} tp_html_panel;

typedef struct tp_html_page tp_html_page;

/* An empty page titled TITLE (copied). */
TP_API tp_status tp_html_page_create(const char *title, tp_html_page **out);
TP_API void tp_html_page_destroy(tp_html_page *page);

/* Appends a panel (strings copied); *index (may be NULL) receives its index. */
TP_API tp_status tp_html_page_add_panel(tp_html_page *page, const char *group, const char *title,
                                        size_t arena, size_t lower_bound, size_t *index);
/* Appends a rectangle to panel INDEX; refuses first > last and offset + size overflowing. */
TP_API tp_status tp_html_page_add_rect(tp_html_page *page, size_t index, const tp_html_rect *rect);

/* Appends a band [offset, offset + size) to panel INDEX. */
TP_API tp_status tp_html_page_add_band(tp_html_page *page, size_t index, size_t offset,
                                       size_t size);

TP_API size_t tp_html_page_panel_count(const tp_html_page *page);
/* i < count; valid until the page changes. */
TP_API tp_html_panel tp_html_page_panel(const tp_html_page *page, size_t i);

/* "Live at the peak": the first step where the total size of the rectangles live at it is
 * largest (*step, *bytes; 0 and 0 when no tensor of non-zero size is live), and in
 * order[0 .. *n_live) the indices of the rectangles live then, largest first (equal sizes by
 * index). order has room for panel->count entries (may be NULL when count is 0). */
TP_API tp_status tp_html_peak(const tp_html_panel *panel, size_t *step, size_t *bytes,
                              size_t *order, size_t *n_live);

/* The whole page as HTML text into out. */
TP_API tp_status tp_html_page_write(const tp_html_page *page, FILE *out);
/* Into PATH, in one write; a failed write removes the partial file. */
TP_API tp_status tp_html_page_save(const tp_html_page *page, const char *path);
/* "live at the peak" of every panel as text: at most TOP tensors each (0 = all). */
TP_API tp_status tp_html_page_explain(const tp_html_page *page, FILE *out, size_t top);

/* ---- filling a page from a plan; each writes HTML_PATH (NULL: no page) and, when EXPLAIN
 * is not NULL, prints the "live at the peak" text there ---------------------------------- */

/* A CSV problem and its offsets: one panel (arena and peak as the planner reported them). */
TP_API tp_status tp_html_csv_report(const char *html_path, FILE *explain, const tp_csv_table *table,
                                    const size_t *offsets, size_t arena, size_t peak);

/* The allocator's current plan, in GROUP (NULL: ""): one panel per backend with activation
 * buffers (pool buffers stacked in plan order, each a band, or the arena) and one of the
 * persistent regions (the KV cache). Lifetimes follow docs/allocator.md: a node from its
 * position (inputs from 0) to its last consumer, inputs and outputs to the end (step = node
 * count); a node written in place joins its source's rectangle. Every panel of the graph
 * spans steps 0 .. node count. */
TP_API tp_status tp_html_add_alloc(tp_html_page *page, const char *group,
                                   const tp_allocator *alloc);
TP_API tp_status tp_html_alloc_report(const char *html_path, FILE *explain, const char *title,
                                      const tp_allocator *alloc);

/* A model's prefill and decode graphs (built from the two parameter sets), each planned with
 * OPTIONS (NULL: defaults) on a fresh host allocator, side by side. */
TP_API tp_status tp_html_model_report(const char *html_path, FILE *explain,
                                      const tp_model_config *config, const tp_graph_params *prefill,
                                      const tp_graph_params *decode,
                                      const tp_alloc_options *options);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_PLAN_HTML_H */
