/* tensorplan: the decode loop (docs/backends.md, "The decode loop").
 *
 * Example, given a model `const tp_model_config *config` and its
 * `const tp_weights *weights` (model.h, gguf_model.h):
 *
 *     tp_session *s;
 *     tp_sampler *sampler = NULL;
 *     int32_t prompt[3] = {1, 2, 3}, out[16];
 *     size_t n_out;
 *     tp_session_options options = tp_session_options_default();
 *     options.n_ctx = 256;
 *     tp_sampler_params sp = tp_sampler_params_default();   // greedy, until changed:
 *     sp.temperature = 0.8f;
 *     sp.seed = 7;
 *     if (tp_session_create(config, weights, &options, &s) != TP_OK)
 *         return 1;
 *     tp_status st = tp_sampler_create(&sp, (size_t)config->vocab, &sampler);
 *     tp_generate_options gen = {sampler, NULL, NULL};       // no per-token callback
 *     if (st == TP_OK)
 *         st = tp_session_generate_with(s, prompt, 3, 16, &gen, out, &n_out, NULL);
 *     tp_sampler_destroy(sampler);
 *     tp_session_destroy(s);                         // its cache, allocator and KV regions
 *     return st == TP_OK ? 0 : 1;
 *
 * A session owns a graph cache (and through it the allocator, whose KV regions survive
 * every rebuild) for one model config and one weight registry. Prefill runs the prompt
 * with logits for the last token only (tail rows); each decode step runs one token at the
 * next position and reuses one cached graph: only the inputs are refilled. The KV context
 * n_ctx = min(max(requested, prompt length), model maximum) is computed once, at the first
 * forward, so prefill and decode size the same regions; a position >= n_ctx is refused
 * before any input is written or any node runs. */
#ifndef TENSORPLAN_SESSION_H
#define TENSORPLAN_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/alloc.h"
#include "tensorplan/api.h"
#include "tensorplan/cache.h"
#include "tensorplan/exec.h"
#include "tensorplan/graph.h"
#include "tensorplan/model.h"
#include "tensorplan/status.h"
#include "tensorplan/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TP_DEFAULT_N_CTX 4096
#define TP_DEFAULT_UBATCH 512 /* tokens per prefill chunk, as llama.cpp's n_ubatch */

typedef struct tp_session_options {
    tp_alloc_options alloc;  /* strategy, aliasing, size classes                           */
    tp_exec_options exec;    /* trace                                                      */
    size_t n_ctx;            /* requested context; 0 = TP_DEFAULT_N_CTX                    */
    int queued_layers;       /* layers [0, k) on the queued backend                       */
    int fuse_ffn;            /* SwiGLU fusion                                              */
    int tail_rows;           /* 1: prefill computes logits for the last row only          */
    size_t cache_capacity;   /* graphs kept by the cache; 0 = TP_GRAPH_CACHE_MAX           */
    tp_dtype kv_type;        /* KV regions stored as f32 (default), f16 or q8_0            */
    size_t ubatch;           /* a forward of more tokens runs in chunks of ubatch tokens
                                (TP_DEFAULT_UBATCH); 0 = every forward one graph          */
} tp_session_options;

TP_API tp_session_options tp_session_options_default(void);

typedef struct tp_session_stats {
    size_t forwards;          /* graph executions                                          */
    size_t builds;            /* graphs built and planned                                  */
    size_t reuses;            /* executions on a cached graph                              */
    size_t prefill_tokens, decode_tokens;
    double prefill_seconds, decode_seconds; /* wall time of the forwards, planning included */
    double build_seconds;     /* building graphs                                           */
    double plan_seconds;      /* tp_alloc_graph, as the allocator measured it              */
    double exec_seconds;      /* the scheduler                                              */
    size_t last_pool_allocations; /* pool allocations made by the most recent forward      */
    tp_plan_stats prefill_plan;   /* the plan of the largest multi-token graph built (the
                                     last of that size): with chunked prefill, the chunk's */
    size_t prefill_plan_tokens;   /* the tokens of that graph                               */
    tp_plan_stats decode_plan;    /* the plan of the last one-token graph built             */
} tp_session_stats;

typedef struct tp_session tp_session;

/* The KV context a session of these options fixes for a first batch of n_first tokens:
 * min(max(requested or TP_DEFAULT_N_CTX, n_first), the model's max_ctx). A caller can check
 * a whole generation against it before running anything. */
TP_API size_t tp_session_context(const tp_model_config *config, const tp_session_options *options,
                                 size_t n_first);

/* The graph params a session uses for a batch of n tokens with n_out logits rows at context
 * n_ctx: the options' fusion toggle, their queued layers and their KV type. The library
 * reads no environment variable (the command line maps TENSORPLAN_NO_FUSE_FFN onto the
 * options). weights_version is left 0 for the caller. */
TP_API tp_graph_params tp_session_graph_params(const tp_session_options *options, size_t n,
                                               size_t n_out, size_t n_ctx);

/* The tokens of the first graph a forward of n tokens runs: n, or ubatch when the options
 * chunk (0 < ubatch < n). A forward of n tokens runs floor(n / chunk) graphs of chunk tokens
 * and one of the rest: one cached graph per chunk size. */
TP_API size_t tp_session_chunk(const tp_session_options *options, size_t n);

/* The config and weights must outlive the session. options NULL = defaults. */
TP_API tp_status tp_session_create(const tp_model_config *config, const tp_weights *weights,
                                   const tp_session_options *options, tp_session **out);
TP_API void tp_session_destroy(tp_session *s);

/* Runs n tokens at positions n_past .. n_past + n - 1 and writes the logits of the last
 * n_out rows to logits[n_out][vocab] (logits may be NULL). The first call fixes n_ctx from
 * the requested context and n. With options.ubatch below n the tokens run in chunks of
 * ubatch (tp_session_chunk), each a graph of its own size writing its rows of the KV cache
 * before the next reads them; a chunk none of whose rows is wanted computes the logits of
 * its last row only, which are dropped. A failure in a later chunk leaves the earlier chunks
 * cached (n_past counts them). */
TP_API tp_status tp_session_forward(tp_session *s, const int32_t *tokens, size_t n, size_t n_out,
                                    float *logits);
/* Prefill (n_out 1 when tail_rows, else every row computed and the last returned), then
 * greedy decoding: out[0..max_new) receives the generated ids. logits (may be NULL)
 * receives the last step's vocab logits. */
TP_API tp_status tp_session_generate(tp_session *s, const int32_t *prompt, size_t n_prompt,
                                     size_t max_new, int32_t *out, float *logits);

/* The index of the largest logit (the first one on ties). */
TP_API int32_t tp_argmax(const float *logits, size_t n);

TP_API size_t tp_session_n_past(const tp_session *s);
TP_API size_t tp_session_n_ctx(const tp_session *s);      /* 0 before the first forward */
TP_API tp_allocator *tp_session_allocator(tp_session *s);
TP_API tp_graph_cache *tp_session_cache(tp_session *s);
TP_API const tp_graph *tp_session_graph(const tp_session *s); /* the last executed graph */
TP_API tp_session_stats tp_session_get_stats(const tp_session *s);
/* Changes the options used by later forwards (a changed fusion toggle or device layer
 * count forces a rebuild with the same allocator; n_ctx stays fixed once chosen; a KV type
 * other than the cache's is refused by the allocator at the next forward). */
TP_API tp_status tp_session_set_options(tp_session *s, const tp_session_options *options);

/* ---- sampling (docs/sampling.md) --------------------------------------------------------- */

/* How the next token is chosen from a logits vector, in llama.cpp's order: top-k, then top-p
 * on the softmax (temperature 1) of what top-k kept, then the temperature, then a draw from
 * the softmax of the kept logits divided by the temperature. */
typedef struct tp_sampler_params {
    float temperature; /* 0 (or below) = greedy: tp_argmax, the rest is not used          */
    int top_k;         /* keep the k largest logits (ties: lower id first); 0 = all       */
    float top_p;       /* keep the smallest prefix (largest first) of mass >= p; 1 = all  */
    uint64_t seed;     /* of the sampler's own PRNG (xoshiro256** seeded by splitmix64)   */
} tp_sampler_params;

/* Greedy: temperature 0, top_k 0, top_p 1, seed 0. */
TP_API tp_sampler_params tp_sampler_params_default(void);

typedef struct tp_sampler tp_sampler;

/* A sampler for vocabularies of n_vocab ids. Refused: n_vocab 0 or above INT32_MAX, a NaN
 * temperature, top_k < 0, top_p not in (0, 1]. */
TP_API tp_status tp_sampler_create(const tp_sampler_params *params, size_t n_vocab,
                                   tp_sampler **out);
TP_API void tp_sampler_destroy(tp_sampler *s);
TP_API size_t tp_sampler_n_vocab(const tp_sampler *s);

/* The id drawn from logits[0..n_vocab); one PRNG step per call unless greedy. */
TP_API tp_status tp_sampler_sample(tp_sampler *s, const float *logits, int32_t *id);

/* The candidates a draw chooses among after top-k, top-p and the temperature: *n ids,
 * largest logit first (ties: lower id first), and their probabilities (the softmax of the
 * kept logits divided by the temperature; summing to 1). ids and probs hold n_vocab entries
 * (probs may be NULL). Greedy gives the one argmax id with probability 1. */
TP_API tp_status tp_sampler_candidates(tp_sampler *s, const float *logits, int32_t *ids,
                                       double *probs, size_t *n);

/* Called with each generated id (index 0 for the first); a non-zero return stops the
 * generation after that token (it is kept in out and counted). */
typedef int (*tp_token_callback)(void *user, int32_t id, size_t index);

typedef struct tp_generate_options {
    tp_sampler *sampler;        /* NULL = greedy                                          */
    tp_token_callback on_token; /* NULL = none                                            */
    void *user;
} tp_generate_options;

/* tp_session_generate with a sampler and a per-token callback: prefill, then up to max_new
 * tokens; *n_generated (may be NULL) receives how many ids out holds (fewer than max_new when
 * the callback stopped it; no forward runs after the stopping token). logits (may be NULL)
 * receives the last forward's vocab logits. options NULL = greedy, no callback. A sampler
 * made for another vocabulary size is refused. */
TP_API tp_status tp_session_generate_with(tp_session *s, const int32_t *prompt, size_t n_prompt,
                                          size_t max_new, const tp_generate_options *options,
                                          int32_t *out, size_t *n_generated, float *logits);

/* Writes DIR/logits.f32 (the last forward's logits rows) and DIR/kv.L.k.f32, kv.L.v.f32
 * for every layer (the whole n_ctx rows), raw little-endian f32 (an f16 or q8_0 cache read
 * back exactly as f32). */
TP_API tp_status tp_session_dump(tp_session *s, const char *dir);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_SESSION_H */
