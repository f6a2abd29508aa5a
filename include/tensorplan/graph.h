/* tensorplan: the graph IR.
 *
 * Example:
 *
 *     tp_graph *g;
 *     size_t x, y;
 *     if (tp_graph_create(&g) != TP_OK)
 *         return 1;
 *     tp_status st = tp_graph_add_input(g, "x", 8, TP_DTYPE_F32, &x);
 *     tp_node node = tp_node_init(TP_OP_SILU, "y");  // shape [1, 1, 1, 1], backend unset
 *     node.n_src = 1;
 *     node.src[0] = x;
 *     node.shape[0] = 8;
 *     if (st == TP_OK)
 *         st = tp_graph_add_node(g, &node, &y);      // a copy: node may go now
 *     if (st == TP_OK)
 *         st = tp_graph_mark_output(g, y);
 *     if (st == TP_OK)
 *         st = tp_graph_validate(g);                 // arity, shapes, dtypes
 *     tp_graph_destroy(g);
 *     return st == TP_OK ? 0 : 1;
 *
 * Nodes live in build order: a node's id is its index, and a builder appends sources
 * before consumers, so id order is a topological order and is the execution order the
 * allocator and scheduler use. tp_graph_add_node does not itself require src < id (a
 * test must be able to build a cycle to see it refused); tp_graph_check refuses cycles
 * and out-of-range sources, and the JSON reader refuses any src >= id. */
#ifndef TENSORPLAN_GRAPH_H
#define TENSORPLAN_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tp_op {
    TP_OP_INPUT = 0, /* host-filled; no sources                                        */
    TP_OP_GET_ROWS,  /* 1 src (i32 ids): rows of weight p.weight; 2 srcs (x, ids): gather */
    TP_OP_RMS_NORM,  /* 1 src; weight p.weight, epsilon p.eps                           */
    TP_OP_MUL_MAT,   /* 1 src; y = W x (+ b), W = p.weight stored [out][in], b = p.bias  */
    TP_OP_ROPE,      /* 2 srcs (x, positions); p.n_head heads of p.head_dim, p.rope_*;
                        p.weight names the frequency divisors (rope_freqs) or is ""    */
    TP_OP_KV_STORE,  /* 3 srcs (k, v, positions); writes layer p.layer's K and V regions */
    TP_OP_KV_LOAD,   /* no srcs: a view of layer p.layer's K region                      */
    TP_OP_ATTN,      /* 3 srcs (q, kv_load, positions); grouped-query, causal             */
    TP_OP_ADD,       /* 2 srcs, elementwise                                              */
    TP_OP_MUL,       /* 2 srcs, elementwise                                              */
    TP_OP_SILU,      /* 1 src, elementwise                                               */
    TP_OP_SWIGLU,    /* 2 srcs (gate, up): silu(gate) * up                               */
    TP_OP_COUNT
} tp_op;

typedef enum tp_dtype { TP_DTYPE_F32 = 0, TP_DTYPE_F16, TP_DTYPE_I32, TP_DTYPE_Q8_0 } tp_dtype;

/* Backends are small integers; 0 and 1 always exist. */
#define TP_BACKEND_UNSET (-1)
#define TP_BACKEND_CPU 0
#define TP_BACKEND_QUEUED 1
#define TP_MAX_BACKENDS 4

#define TP_MAX_SRC 4
#define TP_NAME_MAX 64

/* Which elements of a head RoPE rotates together (docs/gguf.md): NEOX (qwen2) pairs i and
 * i + head_dim/2, NORM (llama) pairs 2i and 2i+1. */
typedef enum tp_rope_mode { TP_ROPE_NEOX = 0, TP_ROPE_NORM = 1 } tp_rope_mode;

typedef struct tp_node_params {
    int layer;                  /* decoder layer the node belongs to, -1 for none          */
    float eps;                  /* rms_norm                                                */
    float rope_base;            /* rope                                                    */
    int rope_mode;              /* rope: tp_rope_mode                                      */
    float rope_freq_scale;      /* rope: theta multiplier, 1 = none (tp_node_init)         */
    float rope_ext_factor;      /* rope: YaRN ramp mix, 0 = off                            */
    float rope_attn_factor;     /* rope: cos/sin magnitude, 1 = none (tp_node_init)        */
    int rope_n_ctx_orig;        /* rope: YaRN original context length                      */
    int n_head, n_head_kv;      /* rope (n_head = heads of this tensor), attn              */
    int head_dim;               /* rope, attn, kv ops                                      */
    char weight[TP_NAME_MAX];   /* mul_mat / rms_norm / get_rows weight name, "" if none   */
    char bias[TP_NAME_MAX];     /* mul_mat bias name, "" if none                           */
} tp_node_params;

typedef struct tp_node {
    size_t id;                  /* == index in graph->nodes                                */
    char name[TP_NAME_MAX];
    tp_op op;
    size_t n_src;
    size_t src[TP_MAX_SRC];     /* order matters                                           */
    int64_t shape[4];           /* feature dimension first: [d, n_tokens, 1, 1]            */
    tp_dtype dtype;
    int backend;                /* TP_BACKEND_UNSET until assignment                       */
    tp_node_params p;
    char *extra;                /* unknown JSON keys as a JSON object text, preserved on
                                   output; owned by the graph; NULL when none              */
} tp_node;

typedef struct tp_graph {
    tp_node *nodes;
    size_t n_nodes, cap_nodes;
    size_t *inputs;
    size_t n_inputs, cap_inputs;
    size_t *outputs;
    size_t n_outputs, cap_outputs;
    uint64_t uid;               /* distinct per built graph in a process                  */
    int64_t n_ctx;              /* KV context the kv ops were sized for; 0 if none        */
    char model[TP_NAME_MAX];    /* informational                                          */
    char kind[16];              /* "prefill", "decode" or ""                             */
    char *extra;                /* unknown top-level JSON keys as a JSON object text,
                                   preserved on output; owned by the graph; NULL when none */
} tp_graph;

TP_API const char *tp_op_name(tp_op op);
TP_API tp_status tp_op_from_name(const char *name, tp_op *op);
TP_API const char *tp_dtype_name(tp_dtype dtype);
TP_API tp_status tp_dtype_from_name(const char *name, tp_dtype *dtype);
TP_API const char *tp_backend_name(int backend);          /* "cpu", "queued", ... or "unset" */
TP_API tp_status tp_backend_from_name(const char *name, int *backend);

/* A node template with every field at its neutral value (layer -1, backend unset). */
TP_API tp_node tp_node_init(tp_op op, const char *name);
/* Product of shape; 0 when an extent is not positive or the product overflows size_t. */
TP_API size_t tp_node_elements(const tp_node *node);
/* Bytes of a row of n elements of dtype as a KV region stores it: f32 and i32 4n, f16 2n,
 * q8_0 34 per block of 32 (an f16 scale, 32 int8; docs/quant.md). 0 when n is not a whole
 * number of blocks or the bytes overflow size_t. */
TP_API size_t tp_dtype_row_bytes(tp_dtype dtype, size_t n);
/* The f32 pool elements a KV region of n_ctx rows of width elements of dtype takes: its
 * bytes rounded up to whole floats (pools count f32 elements). 0 when a row has no size. */
TP_API size_t tp_kv_region_elems(tp_dtype dtype, size_t width, size_t n_ctx);

TP_API tp_status tp_graph_create(tp_graph **out);
TP_API void tp_graph_destroy(tp_graph *graph);
/* Appends a copy of *node (its id is overwritten, extra is deep-copied). */
TP_API tp_status tp_graph_add_node(tp_graph *graph, const tp_node *node, size_t *id);
/* Appends an input node of shape [n, 1, 1, 1] and records it in graph->inputs. */
TP_API tp_status tp_graph_add_input(tp_graph *graph, const char *name, size_t n, tp_dtype dtype,
                                    size_t *id);
TP_API tp_status tp_graph_mark_output(tp_graph *graph, size_t id);
/* Finds an input by name (inputs are found by name, never by position). */
TP_API tp_status tp_graph_find_input(const tp_graph *graph, const char *name, size_t *id);

/* Refuses out-of-range sources, inputs, outputs, and cycles (a Kahn sort, skipped when
 * every source comes before its consumer; the order it finds is only a check). */
TP_API tp_status tp_graph_check(const tp_graph *graph);
/* tp_graph_check that also hands out the Kahn order it found: order[n_nodes] receives the
 * node ids, source-less nodes first. Never an execution order (build order is); the
 * allocator uses it only for the test switch that reproduces the liveness-order bug. */
TP_API tp_status tp_graph_kahn_order(const tp_graph *graph, size_t *order);
/* tp_graph_check plus per-op arity, shapes, dtypes and parameters (layer on kv ops and attn,
 * n_ctx when kv ops exist). The message names the node and the field. */
TP_API tp_status tp_graph_validate(const tp_graph *graph);
/* Like tp_graph_validate, for readers that report their own paths: the message holds only
 * the problem ("expected ..., got ..."); *bad_node (may be NULL) receives the offending
 * node's index, or SIZE_MAX for a graph-level problem; where[where_size] (may be NULL)
 * receives the field: "src[1]", "shape[0]", "layer", ... for a node, "inputs[2]" or "n_ctx"
 * for the graph, "" when tp_graph_check refused (its message is then complete). */
TP_API tp_status tp_graph_validate_detail(const tp_graph *graph, size_t *bad_node, char *where,
                                          size_t where_size);

/* n_consumers[graph->n_nodes] receives how many source entries name each node (duplicates
 * count; out-of-range sources are ignored). */
TP_API tp_status tp_graph_count_consumers(const tp_graph *graph, size_t *n_consumers);
/* Nodes nobody reads that are neither inputs, outputs, nor kv ops (which write persistent
 * state): the nodes an allocator leaves unmapped, e.g. the silu orphaned by fusion. */
TP_API size_t tp_graph_count_dead(const tp_graph *graph);

/* Assignment: every node still unset gets `queued` if its layer is in [0, queued_layers),
 * else `cpu`. Nodes already assigned keep their backend. */
TP_API tp_status tp_graph_assign_backends(tp_graph *graph, int queued_layers);
/* Rewrites mul(silu(x), y) to swiglu(x, y) (the silu is left orphaned, hence dead).
 * *fused (may be NULL) receives how many were rewritten. */
TP_API tp_status tp_graph_fuse_swiglu(tp_graph *graph, size_t *fused);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_GRAPH_H */
