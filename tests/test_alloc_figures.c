/* The expected figures of allocator.md section 9 (Qwen2.5-0.5B shapes, CPU only, SwiGLU
 * fusion, n_ctx 4096), asserted as the table prints them, plus the exact counts. The table's
 * "peak live" column is the peak of the activation buffers held (each from its first
 * acquisition to its last release), tp_plan_stats.peak_held_bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "support/plan_check.h"
#include "support/qwen_graph.h"
#include "alloc/alloc_debug.h"
#include "tensorplan/alloc.h"
#include "tensorplan/model.h"

typedef struct row {
    size_t n_tokens;
    int size_classes, inputs_first;
    size_t nodes, buffers, activation_buffers, kv_buffers, mapped, dead;
    const char *activation_mb, *peak_mb, *kv_mb; /* as printed in the table */
    int decimals;
} row;

static void mb_text(size_t bytes, int decimals, char *out, size_t n)
{
    snprintf(out, n, "%.*f", decimals, (double)bytes / 1e6);
}

static void check_row(const row *r)
{
    tp_graph *g = tpt_qwen_graph(r->n_tokens);
    tp_allocator *a = NULL;
    assert_int_equal(tp_allocator_create_host(&a), TP_OK);
    tp_alloc_options o = tp_alloc_options_default();
    o.size_classes = r->size_classes;
    tp_alloc_set_test_switches(a, &(tp_alloc_test_switches){ .inputs_in_walk = !r->inputs_first });
    assert_int_equal(tp_alloc_graph(a, g, &o), TP_OK);
    tp_plan_stats s = tp_alloc_stats(a);
    assert_int_equal(s.nodes, r->nodes);
    assert_int_equal(s.buffers, r->buffers);
    assert_int_equal(s.activation_buffers, r->activation_buffers);
    assert_int_equal(s.persistent_buffers, r->kv_buffers);
    assert_int_equal(s.mapped_buffers, r->mapped);
    assert_int_equal(s.dead_nodes, r->dead);
    char text[32];
    mb_text(s.activation_bytes, r->decimals, text, sizeof text);
    assert_string_equal(text, r->activation_mb);
    mb_text(s.peak_held_bytes, r->decimals, text, sizeof text);
    assert_string_equal(text, r->peak_mb);
    mb_text(s.persistent_bytes, 1, text, sizeof text);
    assert_string_equal(text, r->kv_mb);
    /* KV: 24 layers x 2 x 128 x 4096 x 4 B, by arithmetic */
    assert_int_equal(s.persistent_bytes, (size_t)24 * 2 * 128 * 4096 * 4);
    /* and the plan is sound */
    tpt_plan p;
    char why[512] = "";
    assert_int_equal(tpt_plan_from_allocator(a, &p), 0);
    int ok = tpt_check_plan(g, &p, why, sizeof why);
    tpt_plan_free(&p);
    if (!ok)
        fail_msg("plan rejected: %s", why);
    tp_allocator_destroy(a);
    tp_graph_destroy(g);
}

static void decode_exact_sizes(void **state)
{
    (void)state;
    row r = {1, 0, 0, 437, 59, 11, 48, 35, 24, "0.678", "0.611", "100.7", 3};
    check_row(&r);
}

static void decode_size_classes_inputs_first(void **state)
{
    (void)state;
    row r = {1, 1, 1, 437, 59, 11, 48, 35, 24, "0.737", "0.629", "100.7", 3};
    check_row(&r);
}

static void prefill_440_last_token_logits(void **state)
{
    (void)state;
    /* the row's activation figure, 31.5 MB, is the exact-size plan (classes give 31.7) */
    row r = {440, 0, 1, 440, 66, 18, 48, 42, 24, "31.5", "30.9", "100.7", 1};
    check_row(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decode_exact_sizes),
        cmocka_unit_test(decode_size_classes_inputs_first),
        cmocka_unit_test(prefill_440_last_token_logits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
