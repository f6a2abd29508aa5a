/* tensorplan: the tensors of the decoder families, written once (names, shapes as functions
 * of the config, the optional groups, which family's files hold each, and how random weights
 * fill them), read by the graph builder, the random weights, the GGUF loader's checks and the
 * test-model writer; and the checks of a config's family and rope parameters. Part of the
 * model layer (docs/gguf.md, "Tensors").
 *
 * Example (a static table: nothing to create or destroy), for the tensors of a model
 * `tp_model_config config` (model.h):
 *
 *     size_t n = 0;
 *     const tp_model_tensor *t = tp_model_tensors(&n);
 *     char name[TP_NAME_MAX];
 *     for (size_t i = 0; i < n; i++) {
 *         if (!tp_model_group_present(&config, t[i].group))
 *             continue;
 *         for (int l = 0; l < (t[i].per_layer ? config.n_layer : 1); l++) {
 *             tp_model_tensor_name(&t[i], l, name, sizeof name);
 *             // name has ne = [tp_model_tensor_dim(&config, t[i].ne0),
 *             //                tp_model_tensor_dim(&config, t[i].ne1)]
 *         }
 *     }
 *
 * A model runs every tensor of the table whose group its flags ask for, whatever its arch;
 * a GGUF file of a family holds only the tensors marked for that family. */
#ifndef TENSORPLAN_MODEL_FAMILY_H
#define TENSORPLAN_MODEL_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/model.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which width a tensor dimension has under a config. */
typedef enum tp_tensor_dim {
    TP_DIM_ONE = 0,   /* 1 (a vector's ne[1])   */
    TP_DIM_EMBD,      /* n_embd                 */
    TP_DIM_VOCAB,     /* vocab                  */
    TP_DIM_Q,         /* n_head x head_dim      */
    TP_DIM_KV,        /* n_head_kv x head_dim   */
    TP_DIM_FF,        /* n_ff                   */
    TP_DIM_HALF_HEAD  /* head_dim / 2           */
} tp_tensor_dim;

/* The optional group a tensor belongs to, and the config flag that says it is present;
 * TP_GROUP_REQUIRED for a tensor every model of the family has. */
typedef enum tp_tensor_group {
    TP_GROUP_REQUIRED = 0,
    TP_GROUP_OUTPUT,        /* output.weight: present when !tied_embeddings */
    TP_GROUP_OUTPUT_BIAS,   /* output_bias                                  */
    TP_GROUP_ROPE_FREQS,    /* rope_freqs                                   */
    TP_GROUP_QKV_BIAS,      /* qkv_bias                                     */
    TP_GROUP_ATTN_OUT_BIAS, /* attn_out_bias                                */
    TP_GROUP_FFN_BIAS       /* ffn_bias                                     */
} tp_tensor_group;
#define TP_GROUP_COUNT (TP_GROUP_FFN_BIAS + 1)

/* How tp_weights_init_random fills a tensor (model.h): uniform draws of these spreads. */
typedef enum tp_tensor_init {
    TP_INIT_MATRIX = 0, /* mean 0, standard deviation 1 / sqrt(ne[0]) (the fan-in)      */
    TP_INIT_NORM,       /* 1 +/- 0.05                                                  */
    TP_INIT_BIAS,       /* mean 0, standard deviation 0.02                             */
    TP_INIT_ROPE_FREQS  /* divisors of theta from 1.07 to 1.93, as Llama 3 files have */
} tp_tensor_init;

/* Bits of tp_model_tensor.families: the families whose files hold the tensor. */
#define TP_FAMILY_BIT(arch) (1u << (unsigned)(arch))
#define TP_FAMILY_BOTH (TP_FAMILY_BIT(TP_ARCH_QWEN2) | TP_FAMILY_BIT(TP_ARCH_LLAMA))

/* One tensor. Shapes are in GGUF order: ne0 is the contiguous dimension (a matrix's input
 * width, its registry cols), ne1 the rows (TP_DIM_ONE for a vector). */
typedef struct tp_model_tensor {
    const char *name;      /* "attn_q.weight"; per layer, "blk.L." comes before it */
    int per_layer;
    tp_tensor_dim ne0, ne1;
    tp_tensor_group group;
    tp_tensor_init init;
    unsigned families;     /* TP_FAMILY_BIT of each arch whose files hold it            */
} tp_model_tensor;

/* Every tensor of the families (docs/gguf.md, "Tensors"), in the order a file stores them:
 * the global ones first, then one layer's; *count receives the count. */
TP_API const tp_model_tensor *tp_model_tensors(size_t *count);

/* Does a file of family arch hold t (when its group is present)? */
TP_API int tp_model_tensor_in_family(const tp_model_tensor *t, tp_arch arch);

/* The entry of the tensor called NAME in a file of config's family and layer count:
 * "blk.L.<name>" with L in decimal without leading zeros, L < n_layer, for a per-layer
 * tensor, the bare name for a global one; *layer (when not NULL) receives L, or -1. NULL when
 * the family lists no such tensor. Whether its group is present is tp_model_group_present. */
TP_API const tp_model_tensor *tp_model_find_tensor(const tp_model_config *config, const char *name,
                                                   int *layer);

/* The width of dimension d under config. */
TP_API int64_t tp_model_tensor_dim(const tp_model_config *config, tp_tensor_dim d);

/* Is group g present under config's flags (TP_GROUP_REQUIRED: always 1)? */
TP_API int tp_model_group_present(const tp_model_config *config, tp_tensor_group g);

/* Sets config's flag of group g to present (or absent); TP_GROUP_REQUIRED is left alone. */
TP_API void tp_model_group_set(tp_model_config *config, tp_tensor_group g, int present);

/* The name of t in LAYER: "blk.LAYER.NAME" when per_layer, else NAME (truncated to size). */
TP_API void tp_model_tensor_name(const tp_model_tensor *t, int layer, char *buf, size_t size);

/* TP_ERR_INVALID when config's arch is no family, or a flag of config asks for a group that
 * a file of its family cannot hold (qwen2: rope_freqs, attn_out_bias, ffn_bias; llama:
 * output_bias): what a GGUF file of config must satisfy. */
TP_API tp_status tp_model_check_family(const tp_model_config *config);

/* The rope parameters of config, checked once for every caller: rope_base, rope_freq_scale
 * and rope_attn_factor finite and > 0, rope_ext_factor finite and >= 0, rope_n_ctx_orig >= 0
 * and, with YaRN (rope_ext_factor != 0), > 0. On a refusal the message starts with who (a
 * file name, or "model 'NAME'"). */
TP_API tp_status tp_model_check_rope(const tp_model_config *config, const char *who);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_MODEL_FAMILY_H */
