/* Test support: the qwen2.5-0.5b graph whose plan the allocator figures of docs/allocator.md
 * describe: N_TOKENS tokens, one output row, a 4096-token context, the fused FFN. Include
 * after <cmocka.h>. */
#ifndef TP_TESTS_QWEN_GRAPH_H
#define TP_TESTS_QWEN_GRAPH_H

#include <stddef.h>
#include <string.h>

#include "tensorplan/model.h"

static inline tp_graph *tpt_qwen_graph(size_t n_tokens)
{
    tp_model_config c;
    assert_int_equal(tp_model_config_builtin("qwen2.5-0.5b", &c), TP_OK);
    tp_graph_params gp;
    memset(&gp, 0, sizeof gp);
    gp.n_tokens = n_tokens;
    gp.n_out = 1;
    gp.n_ctx = 4096;
    gp.fuse_ffn = 1;
    tp_graph *g = NULL;
    assert_int_equal(tp_model_build_graph(&c, &gp, &g), TP_OK);
    return g;
}

#endif
