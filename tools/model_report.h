/* The memory report of tensorplan model (tools/model_report.c): weights as stored, KV, the
 * planned activations of prefill and decode for every strategy and aliasing policy, totals,
 * and the budget search of docs/gguf.md ("tensorplan model"). */
#ifndef TP_TOOLS_MODEL_REPORT_H
#define TP_TOOLS_MODEL_REPORT_H

#include <stddef.h>

#include "tensorplan/alloc.h"
#include "tensorplan/model.h"
#include "tensorplan/quant.h"

#define MR_PLANS 4 /* pool and arena, each under sole-consumer and last-consumer */

typedef struct mr_model {
    tp_model_config cfg;
    const char *file;                       /* NULL for a built-in config              */
    size_t weight_bytes;                    /* every tensor as stored                  */
    size_t bytes_by_type[TP_TYPE_ID_LIMIT]; /* per ggml type id                         */
    tp_dtype kv_type;                       /* the KV cache's type (--kv-type)          */
    size_t ubatch;                          /* prefill chunk tokens (--ubatch)          */
} mr_model;

typedef struct mr_report {
    size_t n_ctx, prompt;       /* the context used and the prefill's tokens            */
    size_t chunk;               /* the tokens of the prefill graph planned: one chunk   */
    size_t kv_bytes;            /* n_layer x 2 regions x n_ctx rows of n_head_kv x head_dim
                                   elements of kv_type (q8_0: 34 bytes per 32)          */
    size_t kv_bytes_by_type[3]; /* the same for f32, f16, q8_0 (0: q8_0 impossible)     */
    tp_plan_stats plan[2][MR_PLANS]; /* [prefill, decode][plan]                         */
    size_t total[MR_PLANS];     /* weights + KV + max(prefill, decode) activation bytes  */
    size_t best;                /* index of the smallest total (first on ties)          */
} mr_report;

tp_alloc_strategy mr_strategy(size_t k);
tp_alias_policy mr_policy(size_t k);

/* Plans the model at requested context n_ctx (0 = TP_DEFAULT_N_CTX) with a prefill of prompt
 * tokens in chunks of m->ubatch (the first chunk's graph is planned) and KV regions of
 * m->kv_type; the context used is tp_session_context's. */
tp_status mr_compute(const mr_model *m, size_t n_ctx, size_t prompt, mr_report *r);

/* The budget answers: whether the requested (n_ctx, prompt) fits, the largest context C
 * whose report at (C, min(prompt, C)) fits, and the largest prompt P that fits at context
 * P (0 when none). */
typedef struct mr_budget {
    size_t bytes;
    int fits;
    size_t max_n_ctx, max_n_ctx_prompt;
    size_t max_prompt;
} mr_budget;

tp_status mr_budget_search(const mr_model *m, const mr_report *requested, size_t prompt,
                           mr_budget *b);

#endif
