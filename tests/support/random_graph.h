/* Test support: random decoder-like graphs, for property tests of the allocator and for
 * execution-equivalence tests (planned buffers vs one private buffer per node).
 *
 * A generated graph passes tp_graph_validate: every op has consistent shapes, i32 index
 * sources, heads and a layer where needed, and graph->n_ctx set. It contains:
 * - inputs: "positions" [nt] i32 (always, node 0), "token_ids" [nt] i32 (sometimes), and
 *   f32 inputs "x0", "x1", ... of shape [d, nt], some of them late in build order;
 * - activations of widths 8, 16 or 24 over nt tokens: rms_norm, mul_mat (weight, sometimes
 *   a bias), add, mul, swiglu, silu, rope (head_dim 4), get_rows of token_ids;
 * - KV layers 0..n_layers-1, each once: kv_store(k, v, positions) of width 8 (2 KV heads of
 *   4), later kv_load and attn(q, kv_load, positions) with 2, 4 or 6 query heads;
 * - nodes nobody consumes (dead), sources consumed several times, long and short lives;
 * - backends cpu and queued in runs (n_backends 2), a KV layer's nodes on one backend;
 * - outputs: the last node plus up to two other activations.
 * The graph is a pure function of (seed, options). */
#ifndef TP_TESTS_RANDOM_GRAPH_H
#define TP_TESTS_RANDOM_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/graph.h"
#include "tensorplan/weights.h"

typedef struct tpt_random_graph_options {
    size_t n_nodes;   /* compute nodes to generate, about (default 40)                  */
    size_t n_tokens;  /* tokens per activation; 0 = random 1..4                          */
    int n_backends;   /* 1: everything on cpu; 2: cpu and queued mixed (default 2)       */
    int n_layers;     /* KV layers at most (default 3)                                   */
    size_t n_ctx;     /* rows of each KV region (default 16); positions must stay below  */
    size_t vocab;     /* rows of every get_rows table (default 64)                       */
} tpt_random_graph_options;

/* Defaults for every field left 0. */
tpt_random_graph_options tpt_random_graph_defaults(void);

/* Builds a random graph; the caller destroys *out. opts NULL = defaults. */
tp_status tpt_random_graph(uint64_t seed, const tpt_random_graph_options *opts, tp_graph **out);

/* Creates every weight the graph names (rms_norm and mul_mat weights, mul_mat biases,
 * get_rows tables of `vocab` rows) filled deterministically from seed in [-0.5, 0.5)
 * (norm weights in [0.5, 1.5)). The caller destroys *out. */
tp_status tpt_random_graph_weights(const tp_graph *g, size_t vocab, uint64_t seed,
                                   tp_weights **out);

/* Data for input node `node` (elements = its shape's product): positions p0 + t for
 * positions (p0 chosen so every position is < n_ctx), token ids < vocab for i32 inputs,
 * floats in [-1, 1) for f32 inputs. i32 values are written as bit patterns. */
void tpt_random_input_data(const tp_graph *g, size_t node, uint64_t seed, size_t vocab,
                           size_t n_ctx, float *out);

#endif
