/* Test support: an independent soundness checker for allocation plans.
 *
 * It knows nothing of how the allocator works; it only knows what execution in build order
 * needs. A plan is sound when:
 * - every node that is needed (an input, an output, or a node with a consumer) has a window
 *   on its own backend, of its own length, inside a buffer of the plan; a node nobody needs
 *   (dead) has none;
 * - kv_store and kv_load nodes sit on their layer's K region (offset 0, the node's length),
 *   each layer has distinct persistent regions kv.L.k and kv.L.v on the nodes' backend, and
 *   no other node touches a persistent region;
 * - an alias (a node declared to share its first source's window) is a legal in-place write:
 *   same window, an in-place op of the policy, the source neither an input nor an output,
 *   no reader of the source after the alias, and (sole-consumer) no other reader at all;
 * - values are alias chains; a value is live from its first write (inputs: from before the
 *   first node, since the host fills them) through its last read (inputs and outputs: after
 *   the last node). No two values whose windows overlap in one buffer are live at the same
 *   position (inclusive: a node's sources and its output are live together). */
#ifndef TP_TESTS_PLAN_CHECK_H
#define TP_TESTS_PLAN_CHECK_H

#include <stddef.h>

#include "tensorplan/alloc.h"
#include "tensorplan/graph.h"

typedef struct tpt_plan_node {
    int mapped;
    tp_bufref ref;
    size_t alias_of; /* TP_NO_ALIAS when none */
} tpt_plan_node;

typedef struct tpt_plan_buffer {
    int backend;
    size_t id;
    size_t elems;
    int persistent;
    char name[TP_NAME_MAX];
} tpt_plan_buffer;

typedef struct tpt_plan_kv {
    int layer;
    int backend;
    size_t k, v;
} tpt_plan_kv;

typedef struct tpt_plan {
    tp_alias_policy policy;
    size_t n_nodes;
    tpt_plan_node *nodes;
    size_t n_buffers;
    tpt_plan_buffer *buffers;
    size_t n_kv;
    tpt_plan_kv *kv;
} tpt_plan;

/* Copies the allocator's current plan (nodes, the plan's buffers, KV layers). 0 on success. */
int tpt_plan_from_allocator(const tp_allocator *alloc, tpt_plan *out);
/* Reads a plan JSON text (formats.md section 2) with cJSON. 0 on success, else -1 with a
 * message in why. */
int tpt_plan_from_json(const char *text, tpt_plan *out, char *why, size_t why_size);
void tpt_plan_free(tpt_plan *plan);

/* 1 when sound; else 0 and the first violation in why. */
int tpt_check_plan(const tp_graph *g, const tpt_plan *plan, char *why, size_t why_size);

#endif
