/* Internal to the plan picture: the page behind tp_html_page, and the page's script. */
#ifndef TP_PICTURE_PLAN_HTML_INTERNAL_H
#define TP_PICTURE_PLAN_HTML_INTERNAL_H

#include <stddef.h>

#include "tensorplan/plan_html.h"

/* A panel and the capacities of its arrays. */
typedef struct tp_html_slot {
    tp_html_panel panel; /* rects and strings owned by the page */
    size_t rect_cap;     /* capacity of panel.rects */
    size_t band_cap;     /* capacity (in numbers) of panel.bands */
} tp_html_slot;

struct tp_html_page {
    char *title;
    tp_html_slot *panels;
    size_t n_panels, cap_panels;
};

/* The style sheet and the drawing script of the page, the bytes of src/picture/plan.css
 * and plan.js with a terminating zero, built in by cmake/embed_text.cmake. The script reads the JSON of <script id="tp-data">, draws every
 * panel on a canvas (one fillRect per tensor, grouped by colour), finds the rectangle under
 * the pointer by a scan of the flat number array, lists the tensors live at the peak, and
 * records what it drew in attributes of <html>: data-drawn-count (rectangles drawn),
 * data-lines (the lines drawn: "arena,peak"), data-panels and data-drawn="1" at the end;
 * data-errors counts script errors (set in the page's head). */
extern const unsigned char tp_html_style[];
extern const unsigned char tp_html_script[];

#endif
