/* The picture of a plan, filled from where plans come from: a CSV problem and its offsets,
 * an allocator's plan, a model's prefill and decode graphs (docs/picture.md). */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/text.h"
#include "picture/plan_html_internal.h"

/* Writes the page and the text the caller asked for. */
static tp_status finish(tp_html_page *page, const char *html_path, FILE *explain)
{
    tp_status st = TP_OK;
    if (html_path)
        st = tp_html_page_save(page, html_path);
    if (st == TP_OK && explain)
        st = tp_html_page_explain(page, explain, 10);
    return st;
}

tp_status tp_html_csv_report(const char *html_path, FILE *explain, const tp_csv_table *table,
                             const size_t *offsets, size_t arena, size_t peak)
{
    if (!table || (table->count && !offsets))
        return tp_fail(TP_ERR_INVALID, "tp_html_csv_report: NULL argument");
    tp_html_page *page = NULL;
    char title[512];
    snprintf(title, sizeof title, "tensorplan plan %s", table->path ? table->path : "");
    tp_status st = tp_html_page_create(title, &page);
    if (st == TP_OK)
        st = tp_html_page_add_panel(page, "", "arena", arena, peak, NULL);
    for (size_t i = 0; st == TP_OK && i < table->count; i++) {
        tp_html_rect r = {table->ids[i], "buffer", table->tensors[i].size,
                          table->tensors[i].first_use, table->tensors[i].last_use, offsets[i],
                          NULL};
        st = tp_html_page_add_rect(page, 0, &r);
    }
    if (st == TP_OK)
        st = finish(page, html_path, explain);
    tp_html_page_destroy(page);
    return st;
}

/* A plan buffer and where it starts in its panel. */
typedef struct buf_base {
    int backend;
    size_t id;
    size_t base;  /* bytes from the bottom of its panel */
    size_t panel; /* index in the page */
    size_t bytes;
} buf_base;

static int buf_cmp(const void *a, const void *b)
{
    const buf_base *x = a, *y = b;
    if (x->backend != y->backend)
        return x->backend < y->backend ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* The root of each node's in-place group (itself when it aliases nothing): the allocator's
 * aliases followed to their end. */
static void group_roots(const tp_allocator *a, size_t n, size_t *root)
{
    for (size_t i = 0; i < n; i++) {
        size_t s = tp_alloc_alias_of(a, i);
        root[i] = s == TP_NO_ALIAS ? i : root[s]; /* sources come first in build order */
    }
}

/* One panel per backend with activation buffers, then one for the persistent regions; the
 * bases of every buffer in *bases (sorted by backend and id). */
static tp_status buffer_panels(tp_html_page *page, const char *group, const tp_allocator *a,
                               buf_base **bases, size_t *n_bases)
{
    size_t nb = tp_alloc_plan_buffer_count(a);
    buf_base *bb = malloc((nb + 1) * sizeof *bb);
    if (!bb)
        return tp_fail(TP_ERR_NOMEM, "html page: out of memory");
    size_t height[TP_MAX_BACKENDS + 1] = {0}, count[TP_MAX_BACKENDS + 1] = {0};
    size_t panel[TP_MAX_BACKENDS + 1] = {0};
    for (size_t i = 0; i < nb; i++) {
        tp_plan_buffer b = tp_alloc_plan_buffer_at(a, i);
        size_t slot = b.persistent ? TP_MAX_BACKENDS : (size_t)b.backend;
        bb[i] = (buf_base){b.backend, b.id, height[slot], slot, b.elems * sizeof(float)};
        height[slot] += b.elems * sizeof(float);
        count[slot]++;
    }
    const int arena = tp_alloc_plan_options(a).strategy == TP_STRATEGY_ARENA;
    const char *kind = arena ? "arena" : "pool buffers stacked";
    tp_status st = TP_OK;
    for (size_t s = 0; s <= TP_MAX_BACKENDS && st == TP_OK; s++) {
        char title[128];
        if (s < TP_MAX_BACKENDS)
            snprintf(title, sizeof title, "%s activations (%s)", tp_backend_name((int)s), kind);
        else
            snprintf(title, sizeof title, "persistent regions (KV cache)");
        if (count[s])
            st = tp_html_page_add_panel(page, group, title, height[s], 0, &panel[s]);
    }
    for (size_t i = 0; i < nb && st == TP_OK; i++) {
        int stacked = !arena && bb[i].panel < TP_MAX_BACKENDS; /* pool buffers: bands */
        bb[i].panel = panel[bb[i].panel];
        if (stacked)
            st = tp_html_page_add_band(page, bb[i].panel, bb[i].base, bb[i].bytes);
    }
    qsort(bb, nb, sizeof *bb, buf_cmp);
    *bases = bb;
    *n_bases = nb;
    return st;
}

static const buf_base *find_base(const buf_base *bb, size_t nb, int backend, size_t id)
{
    buf_base key = {backend, id, 0, 0, 0};
    return nb ? bsearch(&key, bb, nb, sizeof *bb, buf_cmp) : NULL;
}

/* "in place: a (op), b (op)" for every group root that has members. */
static tp_status alias_texts(const tp_graph *g, const tp_allocator *a, const size_t *root,
                             tp_gtext *text)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (root[i] == i || tp_alloc_alias_of(a, i) == TP_NO_ALIAS)
            continue;
        tp_gtext *t = &text[root[i]];
        tp_gtext_printf(t, "%s%s (%s)", t->len ? ", " : "", g->nodes[i].name,
                        tp_op_name(g->nodes[i].op));
        if (t->failed)
            return tp_fail(TP_ERR_NOMEM, "html page: out of memory");
    }
    return TP_OK;
}

/* One rectangle per buffer a node owns, over the lifetime the allocator planned it with (a
 * group root's spans its in-place members). */
static tp_status node_rects(tp_html_page *page, const tp_allocator *a, const tp_graph *g,
                            const buf_base *bb, size_t nb, const size_t *root,
                            const tp_gtext *text)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        const tp_node *node = &g->nodes[i];
        tp_bufref ref;
        if (root[i] != i || !tp_alloc_node_buffer(a, i, &ref) || node->op == TP_OP_KV_STORE ||
            node->op == TP_OP_KV_LOAD)
            continue; /* dead, in place (drawn with its root), or a view of a KV region */
        const buf_base *b = find_base(bb, nb, ref.backend, ref.id);
        if (!b)
            return tp_fail(TP_ERR_INVALID, "html page: node %zu '%s': its buffer %zu is not "
                           "among the plan's buffers", i, node->name, ref.id);
        size_t first = 0, last = 0;
        tp_alloc_node_lifetime(a, i, &first, &last);
        tp_html_rect r = {node->name, tp_op_name(node->op), ref.len * sizeof(float), first, last,
                          b->base + ref.offset * sizeof(float), text[i].data};
        tp_status st = tp_html_page_add_rect(page, b->panel, &r);
        if (st != TP_OK)
            return st;
    }
    return TP_OK;
}

static tp_status region_rects(tp_html_page *page, const tp_allocator *a, const buf_base *bb,
                              size_t nb, size_t end)
{
    size_t np = tp_alloc_persistent_count(a);
    for (size_t i = 0; i < np; i++) {
        const tp_persistent_region *p = tp_alloc_persistent_at(a, i);
        const buf_base *b = find_base(bb, nb, p->backend, p->id);
        if (!b)
            continue;
        tp_html_rect r = {p->name, tp_backend_name(p->backend), p->elems * sizeof(float), 0, end,
                          b->base, NULL};
        tp_status st = tp_html_page_add_rect(page, b->panel, &r);
        if (st != TP_OK)
            return st;
    }
    return TP_OK;
}

/* Every panel from first on gets its peak of live bytes as its lower bound, and the graph's
 * time axis (steps 0 .. n), so that the panels of one graph line up. */
static tp_status finish_panels(tp_html_page *page, size_t first, size_t n)
{
    for (size_t i = first; i < page->n_panels; i++) {
        tp_html_panel *q = &page->panels[i].panel;
        if (q->steps < n + 1)
            q->steps = n + 1;
        size_t *order = malloc((q->count + 1) * sizeof *order), step, m;
        if (!order)
            return tp_fail(TP_ERR_NOMEM, "html page: out of memory");
        tp_status st = tp_html_peak(q, &step, &q->lower_bound, order, &m);
        free(order);
        if (st != TP_OK)
            return st;
    }
    return TP_OK;
}

tp_status tp_html_add_alloc(tp_html_page *page, const char *group, const tp_allocator *alloc)
{
    const tp_graph *g = alloc ? tp_alloc_current_graph(alloc) : NULL;
    if (!page || !g)
        return tp_fail(TP_ERR_INVALID, "tp_html_add_alloc: no page, or no plan");
    size_t n = g->n_nodes, first_panel = page->n_panels, nb = 0;
    size_t *root = malloc((n + 1) * sizeof *root);
    tp_gtext *text = calloc(n + 1, sizeof *text);
    buf_base *bb = NULL;
    tp_status st = root && text ? TP_OK : tp_fail(TP_ERR_NOMEM, "html page: out of memory");
    if (st == TP_OK) {
        group_roots(alloc, n, root);
        st = alias_texts(g, alloc, root, text);
    }
    if (st == TP_OK)
        st = buffer_panels(page, group, alloc, &bb, &nb);
    if (st == TP_OK)
        st = node_rects(page, alloc, g, bb, nb, root, text);
    if (st == TP_OK)
        st = region_rects(page, alloc, bb, nb, n);
    if (st == TP_OK)
        st = finish_panels(page, first_panel, n);
    for (size_t i = 0; text && i < n; i++)
        free(text[i].data);
    free(text);
    free(root);
    free(bb);
    return st;
}

tp_status tp_html_alloc_report(const char *html_path, FILE *explain, const char *title,
                               const tp_allocator *alloc)
{
    tp_html_page *page = NULL;
    tp_status st = tp_html_page_create(title, &page);
    if (st == TP_OK)
        st = tp_html_add_alloc(page, "", alloc);
    if (st == TP_OK)
        st = finish(page, html_path, explain);
    tp_html_page_destroy(page);
    return st;
}

/* Builds the graph of params, plans it on a fresh planning allocator (no buffer memory) and
 * adds its panels. */
static tp_status add_model_graph(tp_html_page *page, const char *group,
                                 const tp_model_config *config, const tp_graph_params *params,
                                 const tp_alloc_options *options)
{
    tp_graph *g = NULL;
    tp_allocator *a = NULL;
    tp_status st = tp_model_build_graph(config, params, &g);
    if (st == TP_OK)
        st = tp_allocator_create_planning(&a);
    if (st == TP_OK)
        st = tp_alloc_graph(a, g, options);
    if (st == TP_OK)
        st = tp_html_add_alloc(page, group, a);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
    return st;
}

tp_status tp_html_model_report(const char *html_path, FILE *explain,
                               const tp_model_config *config, const tp_graph_params *prefill,
                               const tp_graph_params *decode, const tp_alloc_options *options)
{
    if (!config || !prefill || !decode)
        return tp_fail(TP_ERR_INVALID, "tp_html_model_report: NULL argument");
    tp_alloc_options o = options ? *options : tp_alloc_options_default();
    char title[256], pre[96], dec[96];
    snprintf(title, sizeof title, "%s: memory plans (strategy %s, aliasing %s)", config->name,
             tp_alloc_strategy_name(o.strategy), tp_alias_policy_name(o.aliasing));
    snprintf(pre, sizeof pre, "prefill: %zu tokens", prefill->n_tokens);
    snprintf(dec, sizeof dec, "decode: %zu token%s", decode->n_tokens,
             decode->n_tokens == 1 ? "" : "s");
    tp_html_page *page = NULL;
    tp_status st = tp_html_page_create(title, &page);
    if (st == TP_OK)
        st = add_model_graph(page, pre, config, prefill, &o);
    if (st == TP_OK)
        st = add_model_graph(page, dec, config, decode, &o);
    if (st == TP_OK)
        st = finish(page, html_path, explain);
    tp_html_page_destroy(page);
    return st;
}
