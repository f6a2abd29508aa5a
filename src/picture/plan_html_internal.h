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

/* The style sheet and the script that draws the embedded data, one line per string, NULL
 * at the end (plan_html_script.c). */
extern const char *const tp_html_style[];
extern const char *const tp_html_script[];

#endif
