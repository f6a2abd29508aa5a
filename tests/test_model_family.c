/* The tensors of the decoder families (tensorplan/model_family.h) against the table of
 * docs/gguf.md ("Tensors"), transcribed below with each shape written as a formula of the
 * config; the lookup of file names, the group flags, the family check, and the one rope
 * check. The random weights and the graph builder read the same table: for every combination
 * of the six optional groups, the registry holds exactly the transcribed tensors with their
 * shapes, and every weight a graph node reads is among them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tensorplan/model.h"
#include "tensorplan/model_family.h"

/* Widths chosen distinct so that a swapped dimension shows. */
enum { E = 24, V = 41, H = 6, HKV = 2, D = 4, F = 36, L = 3 };

/* Which flag makes a tensor present, as docs/gguf.md names it. */
enum { REQ, UNTIED, OUT_BIAS, ROPE_FREQS, QKV, AO, FFN };

typedef struct want {
    const char *name;
    int per_layer;
    int64_t ne0, ne1;
    int flag;
    int llama, qwen2; /* files of the family hold it */
} want;

/* docs/gguf.md "Tensors": Q = H x D, KV = Hkv x D. */
static const want table[] = {
    {"token_embd.weight", 0, E, V, REQ, 1, 1},
    {"output_norm.weight", 0, E, 1, REQ, 1, 1},
    {"output.weight", 0, E, V, UNTIED, 1, 1},
    {"output.bias", 0, V, 1, OUT_BIAS, 0, 1},
    {"rope_freqs.weight", 0, D / 2, 1, ROPE_FREQS, 1, 0},
    {"attn_norm.weight", 1, E, 1, REQ, 1, 1},
    {"ffn_norm.weight", 1, E, 1, REQ, 1, 1},
    {"attn_q.weight", 1, E, H * D, REQ, 1, 1},
    {"attn_k.weight", 1, E, HKV * D, REQ, 1, 1},
    {"attn_v.weight", 1, E, HKV * D, REQ, 1, 1},
    {"attn_q.bias", 1, H * D, 1, QKV, 1, 1},
    {"attn_k.bias", 1, HKV * D, 1, QKV, 1, 1},
    {"attn_v.bias", 1, HKV * D, 1, QKV, 1, 1},
    {"attn_output.weight", 1, H * D, E, REQ, 1, 1},
    {"attn_output.bias", 1, E, 1, AO, 1, 0},
    {"ffn_gate.weight", 1, E, F, REQ, 1, 1},
    {"ffn_up.weight", 1, E, F, REQ, 1, 1},
    {"ffn_down.weight", 1, F, E, REQ, 1, 1},
    {"ffn_gate.bias", 1, F, 1, FFN, 1, 0},
    {"ffn_up.bias", 1, F, 1, FFN, 1, 0},
    {"ffn_down.bias", 1, E, 1, FFN, 1, 0},
};
#define N_WANT (sizeof table / sizeof table[0])

static tp_model_config config(tp_arch arch, unsigned flags)
{
    tp_model_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "fam");
    c.n_embd = E, c.n_head = H, c.n_head_kv = HKV, c.head_dim = D, c.n_ff = F, c.n_layer = L;
    c.vocab = V, c.max_ctx = 32, c.rms_eps = 1e-6f, c.rope_base = 1e4f, c.arch = arch;
    c.rope_mode = arch == TP_ARCH_LLAMA ? TP_ROPE_NORM : TP_ROPE_NEOX;
    c.rope_freq_scale = 1.0f, c.rope_attn_factor = 1.0f;
    c.tied_embeddings = !(flags & (1u << UNTIED));
    c.output_bias = (flags >> OUT_BIAS) & 1;
    c.rope_freqs = (flags >> ROPE_FREQS) & 1;
    c.qkv_bias = (flags >> QKV) & 1;
    c.attn_out_bias = (flags >> AO) & 1;
    c.ffn_bias = (flags >> FFN) & 1;
    return c;
}

static int wanted(const want *w, unsigned flags)
{
    return w->flag == REQ || ((flags >> w->flag) & 1);
}

static const want *find_want(const char *name)
{
    for (size_t i = 0; i < N_WANT; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

/* Every entry matches the transcription (name, layer scope, shape, family), each
 * transcribed tensor is there once, and the globals come before the per-layer ones. */
static void test_table_is_the_documented_one(void **state)
{
    (void)state;
    size_t n = 0;
    const tp_model_tensor *t = tp_model_tensors(&n);
    assert_non_null(t);
    assert_int_equal(n, N_WANT);
    tp_model_config c = config(TP_ARCH_LLAMA, 0);
    int seen_layer = 0;
    for (size_t i = 0; i < n; i++) {
        const want *w = find_want(t[i].name);
        if (!w)
            fail_msg("tensor '%s' is not in docs/gguf.md", t[i].name);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(t[j].name, t[i].name);
        assert_int_equal(t[i].per_layer, w->per_layer);
        assert_int_equal(tp_model_tensor_dim(&c, t[i].ne0), w->ne0);
        assert_int_equal(tp_model_tensor_dim(&c, t[i].ne1), w->ne1);
        assert_int_equal(tp_model_tensor_in_family(&t[i], TP_ARCH_LLAMA), w->llama);
        assert_int_equal(tp_model_tensor_in_family(&t[i], TP_ARCH_QWEN2), w->qwen2);
        assert_false(tp_model_tensor_in_family(&t[i], (tp_arch)2));
        if (seen_layer)
            assert_true(t[i].per_layer);
        seen_layer |= t[i].per_layer;
        /* the group: present exactly when the documented flag is set */
        for (unsigned f = 0; f < 64; f++) {
            tp_model_config cf = config(TP_ARCH_LLAMA, f << 1);
            assert_int_equal(tp_model_group_present(&cf, t[i].group), wanted(w, f << 1));
        }
        char name[64], expect[64];
        tp_model_tensor_name(&t[i], 2, name, sizeof name);
        snprintf(expect, sizeof expect, "%s%s", w->per_layer ? "blk.2." : "", w->name);
        assert_string_equal(name, expect);
    }
}

/* File names: "blk.L." with L decimal, no leading zero, below n_layer; only the family's. */
static void test_find_tensor(void **state)
{
    (void)state;
    tp_model_config ll = config(TP_ARCH_LLAMA, 0), qw = config(TP_ARCH_QWEN2, 0);
    int layer = 7;
    const tp_model_tensor *t = tp_model_find_tensor(&ll, "blk.2.attn_output.bias", &layer);
    assert_non_null(t);
    assert_string_equal(t->name, "attn_output.bias");
    assert_int_equal(layer, 2);
    assert_null(tp_model_find_tensor(&qw, "blk.2.attn_output.bias", &layer));
    assert_int_equal(layer, -1);
    t = tp_model_find_tensor(&qw, "output.bias", &layer);
    assert_non_null(t);
    assert_int_equal(layer, -1);
    assert_null(tp_model_find_tensor(&ll, "output.bias", NULL));
    assert_non_null(tp_model_find_tensor(&ll, "rope_freqs.weight", NULL));
    assert_null(tp_model_find_tensor(&qw, "rope_freqs.weight", NULL));
    static const char *const refused[] = {
        "blk.3.attn_norm.weight",  /* layer 3 of 3 */
        "blk.01.attn_norm.weight", /* leading zero */
        "blk.1attn_norm.weight",   /* no dot */
        "blk..attn_norm.weight",   /* no digits */
        "blk.-1.attn_norm.weight", /* a sign */
        "attn_norm.weight",        /* a per-layer tensor without its layer */
        "blk.0.token_embd.weight", /* a global one with a layer */
        "blk.0.attn_extra.weight", /* nothing of the families */
        "blk.123456789.attn_norm.weight",
        "",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        assert_null(tp_model_find_tensor(&ll, refused[i], NULL));
        assert_null(tp_model_find_tensor(&qw, refused[i], NULL));
    }
    assert_non_null(tp_model_find_tensor(&ll, "blk.0.attn_norm.weight", NULL));
    ll.n_layer = 12;
    assert_non_null(tp_model_find_tensor(&ll, "blk.10.attn_norm.weight", &layer));
    assert_int_equal(layer, 10);
    assert_null(tp_model_find_tensor(NULL, "output.weight", NULL));
    assert_null(tp_model_find_tensor(&ll, NULL, NULL));
}

/* tp_model_group_set sets the documented flag, and only it. */
static void test_group_set(void **state)
{
    (void)state;
    size_t n = 0;
    const tp_model_tensor *t = tp_model_tensors(&n);
    for (size_t i = 0; i < n; i++) {
        const want *w = find_want(t[i].name);
        for (int on = 0; on < 2; on++) {
            tp_model_config c = config(TP_ARCH_LLAMA, on ? 0 : 0x7e), ref = c;
            tp_model_group_set(&c, t[i].group, on);
            switch (w->flag) {
            case UNTIED: ref.tied_embeddings = !on; break;
            case OUT_BIAS: ref.output_bias = on; break;
            case ROPE_FREQS: ref.rope_freqs = on; break;
            case QKV: ref.qkv_bias = on; break;
            case AO: ref.attn_out_bias = on; break;
            case FFN: ref.ffn_bias = on; break;
            default: break;
            }
            assert_memory_equal(&c, &ref, sizeof c);
        }
    }
}

/* A file of a family holds only its groups: the others are refused, by name. */
static void test_check_family(void **state)
{
    (void)state;
    for (unsigned f = 0; f < 128; f += 2) {
        for (int a = 0; a < 2; a++) {
            tp_model_config c = config((tp_arch)a, f);
            int ok = 1;
            for (size_t i = 0; i < N_WANT; i++)
                if (wanted(&table[i], f) && !(a == TP_ARCH_LLAMA ? table[i].llama : table[i].qwen2))
                    ok = 0;
            tp_status st = tp_model_check_family(&c);
            assert_int_equal(st, ok ? TP_OK : TP_ERR_INVALID);
            if (!ok)
                assert_non_null(strstr(tp_last_error(), a ? "llama" : "qwen2"));
        }
    }
    tp_model_config c = config((tp_arch)5, 0);
    assert_int_equal(tp_model_check_family(&c), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "architecture 5"));
}

/* docs/graph.md's rope rules restated: each parameter just inside and just outside. */
static void test_check_rope(void **state)
{
    (void)state;
    typedef struct rope_case {
        int mode;
        float base, scale, attn, ext;
        int orig, ok;
    } rope_case;
    static const rope_case cases[] = {
        {TP_ROPE_NEOX, 1e4f, 1.0f, 1.0f, 0.0f, 0, 1},
        {TP_ROPE_NORM, 1e-30f, 1e-30f, 1e-30f, 0.0f, 0, 1},
        {TP_ROPE_NORM, 1e4f, 0.25f, 1.1f, 1.0f, 64, 1},
        {2, 1e4f, 1.0f, 1.0f, 0.0f, 0, 0},
        {-1, 1e4f, 1.0f, 1.0f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, 0.0f, 1.0f, 1.0f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, -1.0f, 1.0f, 1.0f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, INFINITY, 1.0f, 1.0f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, NAN, 1.0f, 1.0f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, 1e4f, 0.0f, 1.0f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, 1e4f, INFINITY, 1.0f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, 1e4f, 1.0f, 0.0f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, 1e4f, 1.0f, -0.5f, 0.0f, 0, 0},
        {TP_ROPE_NEOX, 1e4f, 1.0f, NAN, 0.0f, 0, 0},
        {TP_ROPE_NEOX, 1e4f, 1.0f, 1.0f, -1.0f, 64, 0},
        {TP_ROPE_NEOX, 1e4f, 1.0f, 1.0f, NAN, 64, 0},
        {TP_ROPE_NEOX, 1e4f, 1.0f, 1.0f, 1.0f, 0, 0},  /* YaRN without its context */
        {TP_ROPE_NEOX, 1e4f, 1.0f, 1.0f, 0.0f, -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tp_model_config c = config(TP_ARCH_QWEN2, 0);
        c.rope_mode = cases[i].mode;
        c.rope_base = cases[i].base;
        c.rope_freq_scale = cases[i].scale;
        c.rope_attn_factor = cases[i].attn;
        c.rope_ext_factor = cases[i].ext;
        c.rope_n_ctx_orig = cases[i].orig;
        tp_status st = tp_model_check_rope(&c, "where.gguf");
        assert_int_equal(st, cases[i].ok ? TP_OK : TP_ERR_INVALID);
        if (!cases[i].ok) {
            assert_true(strncmp(tp_last_error(), "where.gguf: ", 12) == 0);
            assert_null(strchr(tp_last_error(), '\n'));
            /* the graph builder refuses the same config with the same message */
            tp_graph_params p = {.n_tokens = 2, .n_out = 1, .n_ctx = 8};
            tp_graph *g = NULL;
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", strchr(tp_last_error(), ':'));
            assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_ERR_INVALID);
            assert_null(g);
            assert_true(strncmp(tp_last_error(), "model 'fam': ", 13) == 0);
            assert_string_equal(strchr(tp_last_error(), ':'), msg);
        }
    }
}

/* For every combination of the six groups, in either family: the random weights are exactly
 * the transcribed tensors the flags ask for, each rows = ne1 by cols = ne0; the graph reads
 * only those, and reads each of them (the biases and rope_freqs through their nodes). */
static void test_weights_and_graph_read_the_table(void **state)
{
    (void)state;
    for (unsigned f = 0; f < 128; f += 2) {
        for (int a = 0; a < 2; a++) {
            tp_model_config c = config((tp_arch)a, f);
            tp_weights *w = NULL;
            assert_int_equal(tp_weights_init_random(&c, 5, &w), TP_OK);
            size_t count = 0;
            char name[64];
            for (size_t i = 0; i < N_WANT; i++) {
                if (!wanted(&table[i], f))
                    continue;
                for (int l = 0; l < (table[i].per_layer ? L : 1); l++) {
                    if (table[i].per_layer)
                        snprintf(name, sizeof name, "blk.%d.%s", l, table[i].name);
                    else
                        snprintf(name, sizeof name, "%s", table[i].name);
                    const tp_weight *x = tp_weights_find(w, name);
                    if (!x)
                        fail_msg("flags %#x: no weight '%s'", f, name);
                    assert_int_equal(x->rows, table[i].ne1);
                    assert_int_equal(x->cols, table[i].ne0);
                    count++;
                }
            }
            assert_int_equal(tp_weights_count(w), count);
            tp_graph_params p = {.n_tokens = 3, .n_out = 1, .n_ctx = 8};
            tp_graph *g = NULL;
            assert_int_equal(tp_model_build_graph(&c, &p, &g), TP_OK);
            size_t used = 0;
            for (size_t i = 0; i < tp_weights_count(w); i++) {
                const char *wn = tp_weights_at(w, i)->name;
                int read = 0;
                for (size_t k = 0; k < g->n_nodes && !read; k++)
                    read = strcmp(g->nodes[k].p.weight, wn) == 0 ||
                           strcmp(g->nodes[k].p.bias, wn) == 0;
                used += (size_t)read;
            }
            assert_int_equal(used, count);
            for (size_t k = 0; k < g->n_nodes; k++) {
                if (g->nodes[k].p.weight[0])
                    assert_non_null(tp_weights_find(w, g->nodes[k].p.weight));
                if (g->nodes[k].p.bias[0])
                    assert_non_null(tp_weights_find(w, g->nodes[k].p.bias));
            }
            tp_graph_destroy(g);
            tp_weights_destroy(w);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_the_documented_one),
        cmocka_unit_test(test_find_tensor),
        cmocka_unit_test(test_group_set),
        cmocka_unit_test(test_check_family),
        cmocka_unit_test(test_check_rope),
        cmocka_unit_test(test_weights_and_graph_read_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
