/* tensorplan: decoder models of the qwen2 and llama families: configs and the graph
 * builder.
 *
 * Example:
 *
 *     tp_model_config config;
 *     tp_weights *weights;
 *     tp_graph *graph;
 *     tp_graph_params params = {0};
 *     if (tp_model_config_builtin("tiny", &config) != TP_OK ||
 *         tp_weights_init_random(&config, 42, &weights) != TP_OK)
 *         return 1;
 *     params.n_tokens = 8;                           // a prefill of 8 tokens
 *     params.n_out = 1;                              // logits of the last one only
 *     params.n_ctx = 64;
 *     params.weights_version = tp_weights_version(weights);
 *     tp_status st = tp_model_build_graph(&config, &params, &graph);
 *     if (st == TP_OK)
 *         tp_graph_destroy(graph);                   // or plan and run it: session.h does both
 *     tp_weights_destroy(weights);
 *     return st == TP_OK ? 0 : 1;
 */
#ifndef TENSORPLAN_MODEL_H
#define TENSORPLAN_MODEL_H

#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/cache.h"
#include "tensorplan/graph.h"
#include "tensorplan/status.h"
#include "tensorplan/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The decoder families (docs/gguf.md): qwen2 (NEOX rope, q/k/v biases) and llama (NORM
 * rope, optional rope_freqs and biases). */
typedef enum tp_arch { TP_ARCH_QWEN2 = 0, TP_ARCH_LLAMA = 1 } tp_arch;

typedef struct tp_model_config {
    char name[TP_NAME_MAX];
    int n_embd;        /* ne */
    int n_head;        /* nh */
    int n_head_kv;     /* nkv */
    int head_dim;      /* hd */
    int n_ff;          /* nf */
    int n_layer;
    int vocab;
    int max_ctx;       /* the model's maximum context */
    float rms_eps;
    float rope_base;
    int qkv_bias;      /* q/k/v projections carry a bias */
    int tied_embeddings; /* lm_head reads token_embd.weight */
    tp_arch arch;
    int rope_mode;       /* tp_rope_mode (graph.h): NEOX for qwen2, NORM for llama         */
    float rope_freq_scale;  /* 1 / rope.scaling.factor; 1 = no scaling                   */
    float rope_ext_factor;  /* 1 with YaRN scaling, else 0                               */
    float rope_attn_factor; /* cos/sin magnitude (YaRN and attn_factor), 1 = none         */
    int rope_n_ctx_orig;    /* rope.scaling.original_context_length                      */
    int rope_freqs;      /* rope_freqs.weight [head_dim/2] divides every theta            */
    int attn_out_bias;   /* blk.L.attn_output.bias                                         */
    int ffn_bias;        /* blk.L.ffn_{gate,up,down}.bias                                  */
    int output_bias;     /* output.bias                                                    */
} tp_model_config;

/* Built-in configs: "qwen2.5-0.5b" and "llama-3.2-1b" (the real shapes), "tiny" (3 layers,
 * small widths), and "tiny-qwen2", "tiny-llama" (the smallest shapes GGUF test files hold). */
TP_API tp_status tp_model_config_builtin(const char *name, tp_model_config *config);
/* Comma-separated names of the built-in configs, for help texts. */
TP_API const char *tp_model_builtin_names(void);

/* Weight names follow GGUF: the table of tensorplan/model_family.h lists every tensor, its
 * shape and the config flag that makes an optional one present. */

/* Whether the model can keep its KV cache in kv_type: f32, f16, or q8_0 when head_dim is a
 * multiple of 32 (each head's slice of a row whole blocks). TP_OK or TP_ERR_INVALID. */
TP_API tp_status tp_model_check_kv_type(const tp_model_config *config, tp_dtype kv_type);

/* Builds the decoder graph of docs/graph.md (the forward pass of docs/engine.md, either
 * family) for params (n_tokens, n_out, n_ctx; kv_store and kv_load of dtype kv_type), then
 * assigns backends (layers [0, params->queued_layers) on queued) and, if params->fuse_ffn,
 * fuses SwiGLU. The caller destroys *out. */
TP_API tp_status tp_model_build_graph(const tp_model_config *config, const tp_graph_params *params,
                                      tp_graph **out);

/* Creates every tensor a config needs (the optional biases, output.weight and rope_freqs.weight
 * when its flags ask for them), as owned f32, filled deterministically from seed: matrices
 * uniform with standard deviation 1/sqrt(fan_in), biases with 0.02, norm weights 1 +/- 0.05.
 * A tensor's values depend only on (seed, its name), not on creation order. */
TP_API tp_status tp_weights_init_random(const tp_model_config *config, uint64_t seed,
                                        tp_weights **out);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_MODEL_H */
