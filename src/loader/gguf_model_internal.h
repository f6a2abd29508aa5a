/* Internal to the GGUF model loader and the test-model writer (docs/gguf.md, "Models"). */
#ifndef TP_LOADER_GGUF_MODEL_INTERNAL_H
#define TP_LOADER_GGUF_MODEL_INTERNAL_H

#include <stdint.h>

#include "tensorplan/gguf.h"
#include "tensorplan/model.h"
#include "tensorplan/status.h"

/* Largest width, count or context a config takes from a file (int-sized, products fit). */
#define GM_MAX_DIM (1 << 24)

typedef struct gm_reader {
    const tp_gguf *g;
    const char *file;
    char arch[8]; /* key prefix: "qwen2" or "llama" */
} gm_reader;

/* Which width a tensor dimension has. */
typedef enum gm_dim {
    GM_ONE = 0, /* 1 (a vector's ne[1])  */
    GM_E,       /* n_embd                */
    GM_V,       /* vocab                 */
    GM_Q,       /* n_head * head_dim     */
    GM_KV,      /* n_head_kv * head_dim  */
    GM_F,       /* n_ff                  */
    GM_HALF_D   /* head_dim / 2          */
} gm_dim;

/* Which flag of the config an optional tensor sets; GM_REQUIRED for a required one. */
typedef enum gm_flag {
    GM_REQUIRED = 0,
    GM_OUTPUT,      /* output.weight present: !tied_embeddings */
    GM_OUTPUT_BIAS, /* output_bias                              */
    GM_ROPE_FREQS,  /* rope_freqs                               */
    GM_QKV_BIAS,    /* qkv_bias                                 */
    GM_AO_BIAS,     /* attn_out_bias                            */
    GM_FFN_BIAS     /* ffn_bias                                 */
} gm_flag;

/* One tensor a family lists: NAME ("blk." prefix added per layer when per_layer). */
typedef struct gm_tensor_spec {
    const char *name;
    int per_layer;
    gm_dim ne0, ne1;
    gm_flag flag;
} gm_tensor_spec;

/* The tensors of an architecture (docs/gguf.md table), in the order a writer stores them:
 * globals first, then one layer's. *n receives the count. */
const gm_tensor_spec *tp_gguf_model_specs(tp_arch arch, size_t *n);

/* The file name of spec s in LAYER ("blk.LAYER.NAME" when per_layer, else NAME). */
void tp_gguf_model_spec_name(const gm_tensor_spec *s, int layer, char *buf, size_t size);

/* The width of dimension d under config c. */
int64_t tp_gguf_model_dim(const tp_model_config *c, gm_dim d);

/* Is the flag of an optional tensor set in c (GM_REQUIRED: always 1). */
int tp_gguf_model_flag(const tp_model_config *c, gm_flag f);

/* Checks the tensor table of g against c (sizes read from the metadata), sets vocab from
 * token_embd.weight and the optional-tensor flags. */
tp_status tp_gguf_model_check_tensors(const tp_gguf *g, tp_model_config *c);

#endif
