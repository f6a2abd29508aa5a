/* Internal to the GGUF model loader and the test-model writer (docs/gguf.md, "Models"). */
#ifndef TP_LOADER_GGUF_MODEL_INTERNAL_H
#define TP_LOADER_GGUF_MODEL_INTERNAL_H

#include <stdint.h>

#include "tensorplan/gguf.h"
#include "tensorplan/model.h"
#include "tensorplan/status.h"

/* Largest width, count or context a config takes from a file (int-sized, products fit). */
#define GM_MAX_DIM (1 << 24)
#define GM_MAX_LAYERS 99999 /* tp_model_build_graph refuses more */

typedef struct gm_reader {
    const tp_gguf *g;
    const char *file;
    char arch[8]; /* key prefix: "qwen2" or "llama" */
} gm_reader;

/* Checks the tensor table of g against c (sizes read from the metadata), sets vocab from
 * token_embd.weight and the optional-tensor flags. */
tp_status tp_gguf_model_check_tensors(const tp_gguf *g, tp_model_config *c);

#endif
