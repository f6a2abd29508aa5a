/* Fuzzing harness: the model config and the vocabulary checks of gguf_model.h reached from a
 * parsed GGUF file (seeds: small models of both families, tests/data/fuzz/model/; mutations
 * of their metadata values are what reaches the checks). The container is fuzz_gguf's; here
 * a file the reader refuses is skipped. Checks, restated from docs/gguf.md and
 * docs/tokenizer.md rather than taken from the code under test:
 * - a refused config or tokenizer is TP_ERR_INVALID (or TP_ERR_NOMEM) with a one-line message
 *   that starts with the file name;
 * - an accepted config keeps the model layer's rules (sizes > 0, heads dividing, an even head
 *   size, rms_eps finite >= 0, rope base, frequency scale and magnitude finite > 0, at most
 *   99999 layers, vocab = token_embd.weight's rows), so the model layer builds its decode graph
 *   (every value it would refuse is refused when the config is read), and its weight views
 *   are made;
 * - an accepted tokenizer has the file's token count, model "gpt2" or "llama" exactly (no
 *   byte more: counted strings), every id key present below the token count, bos set when
 *   add_bos; a text encodes to ids in range (or is refused) and decodes. */
#include <math.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "tensorplan/cache.h"
#include "tensorplan/gguf.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/graph.h"
#include "tensorplan/model.h"
#include "tensorplan/status.h"
#include "tensorplan/tokenizer.h"
#include "tensorplan/weights.h"

enum { MODEL_MAX_BUILT_LAYERS = 256 }; /* larger configs are checked, not built (time) */

static void model_check_refusal(const tp_gguf *g, tp_status st, const char *what)
{
    const char *msg = tp_last_error();
    TPF_CHECK(st == TP_ERR_INVALID || st == TP_ERR_NOMEM, "%s refused with status %d: %s", what,
              (int)st, msg);
    if (st == TP_ERR_NOMEM)
        return;
    const size_t n = strlen(tp_gguf_name(g));
    TPF_CHECK(strncmp(msg, tp_gguf_name(g), n) == 0 && msg[n] == ':', "%s refused without "
              "the file named: %s", what, msg);
    TPF_CHECK(strchr(msg, '\n') == NULL, "%s refused with a message of several lines", what);
}

static void model_check_config(const tp_gguf *g, const tp_model_config *c)
{
    const tp_gguf_tensor *emb = tp_gguf_find_tensor(g, "token_embd.weight");
    TPF_CHECK(emb && emb->n_dims == 2 && c->vocab == emb->ne[1] && c->n_embd == emb->ne[0],
              "vocab %d / width %d against token_embd.weight", c->vocab, c->n_embd);
    TPF_CHECK(c->n_embd > 0 && c->n_layer > 0 && c->n_ff > 0 && c->max_ctx > 0 &&
                  c->n_layer <= 99999, "sizes: embd %d, layers %d, ff %d, context %d",
              c->n_embd, c->n_layer, c->n_ff, c->max_ctx);
    TPF_CHECK(c->n_head > 0 && c->n_head_kv > 0 && c->n_head % c->n_head_kv == 0 &&
                  c->head_dim > 0 && c->head_dim % 2 == 0,
              "heads %d / %d of %d", c->n_head, c->n_head_kv, c->head_dim);
    TPF_CHECK(isfinite(c->rms_eps) && c->rms_eps >= 0.0f, "rms_eps %g", (double)c->rms_eps);
    TPF_CHECK(isfinite(c->rope_base) && c->rope_base > 0.0f && isfinite(c->rope_freq_scale) &&
                  c->rope_freq_scale > 0.0f && isfinite(c->rope_attn_factor) &&
                  c->rope_attn_factor > 0.0f && isfinite(c->rope_ext_factor) &&
                  c->rope_ext_factor >= 0.0f,
              "rope base %g, scale %g, magnitude %g, ext %g", (double)c->rope_base,
              (double)c->rope_freq_scale, (double)c->rope_attn_factor,
              (double)c->rope_ext_factor);
    TPF_CHECK(c->rope_ext_factor == 0.0f || c->rope_n_ctx_orig > 0, "YaRN without an original "
              "context");
    if (c->n_layer <= MODEL_MAX_BUILT_LAYERS) {
        tp_graph_params p;
        memset(&p, 0, sizeof p);
        p.n_tokens = p.n_out = p.n_ctx = 1;
        tp_graph *graph = NULL;
        const tp_status st = tp_model_build_graph(c, &p, &graph);
        TPF_CHECK(st == TP_OK || st == TP_ERR_NOMEM, "the model layer refuses an accepted "
                  "config: %s", tp_last_error());
        tp_graph_destroy(graph);
    }
    tp_weights *w = NULL;
    const tp_status st = tp_gguf_model_weights(g, c, &w);
    TPF_CHECK(st == TP_OK || st == TP_ERR_NOMEM, "weights of an accepted config refused: %s",
              tp_last_error());
    tp_weights_destroy(w);
}

/* Every tokenizer.ggml.*_token_id key stored as u32 is below the token count. */
static void model_check_ids(const tp_gguf *g, size_t n_tokens)
{
    static const char *const keys[] = {
        "bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id",
        "eot_token_id", "eom_token_id", "seperator_token_id",
    };
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.%s", keys[k]);
        uint32_t v = 0;
        if (tp_gguf_get_u32(g, key, &v) == TP_OK)
            TPF_CHECK(v < n_tokens, "%s %u accepted with %zu tokens", key, (unsigned)v,
                      n_tokens);
    }
}

static void model_check_tokenizer(const tp_gguf *g, const tp_tokenizer *tok)
{
    tp_gguf_array toks;
    TPF_CHECK(tp_gguf_get_array(g, "tokenizer.ggml.tokens", TP_GGUF_STRING, &toks) == TP_OK &&
                  tp_tokenizer_n_vocab(tok) == toks.count,
              "tokenizer of %zu ids", tp_tokenizer_n_vocab(tok));
    tp_gguf_str m;
    TPF_CHECK(tp_gguf_get_string(g, "tokenizer.ggml.model", &m) == TP_OK &&
                  ((m.len == 4 && memcmp(m.data, "gpt2", 4) == 0) ||
                   (m.len == 5 && memcmp(m.data, "llama", 5) == 0)),
              "tokenizer model of %zu bytes accepted", m.len);
    model_check_ids(g, toks.count);
    const int32_t bos = tp_tokenizer_bos(tok), eos = tp_tokenizer_eos(tok);
    TPF_CHECK(bos >= -1 && bos < (int32_t)toks.count && eos >= -1 && eos < (int32_t)toks.count,
              "bos %d, eos %d of %zu", bos, eos, toks.count);
    TPF_CHECK(!tp_tokenizer_add_bos(tok) || bos >= 0, "add_bos without a bos token");
    static const char text[] = " Hello world, 123 \xc3\xa9t\xc3\xa9\n<s>\xff";
    int32_t *ids = NULL;
    size_t n = 0;
    tp_status st = tp_tokenizer_encode(tok, text, sizeof text - 1, 1, 1, &ids, &n);
    TPF_CHECK(st == TP_OK || st == TP_ERR_INVALID || st == TP_ERR_NOMEM, "encode status %d",
              (int)st);
    for (size_t i = 0; st == TP_OK && i < n; i++)
        TPF_CHECK(ids[i] >= 0 && (size_t)ids[i] < toks.count, "id %d of %zu", ids[i],
                  toks.count);
    if (st == TP_OK) {
        char *back = NULL;
        size_t len = 0;
        st = tp_tokenizer_decode(tok, ids, n, 0, 1, &back, &len);
        TPF_CHECK(st == TP_OK || st == TP_ERR_NOMEM, "decoding its own ids refused: %s",
                  tp_last_error());
        free(back);
    }
    free(ids);
}

static int fuzz_model(const uint8_t *data, size_t size)
{
    tp_gguf *g = NULL;
    if (tp_gguf_open_memory("model.gguf", data, size, &g) != TP_OK)
        return 0; /* the container's refusals are fuzz_gguf's */
    tp_model_config c;
    tp_status st = tp_gguf_model_config(g, &c);
    if (st == TP_OK)
        model_check_config(g, &c);
    else
        model_check_refusal(g, st, "the config");
    tp_tokenizer *tok = NULL;
    st = tp_gguf_tokenizer(g, &tok);
    if (st == TP_OK)
        model_check_tokenizer(g, tok);
    else
        model_check_refusal(g, st, "the tokenizer");
    tp_tokenizer_destroy(tok);
    tp_gguf_close(g);
    return 0;
}

TPF_ENTRY(fuzz_model)
