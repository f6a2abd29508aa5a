/* tensorplan: what every layer needs to know about an op, in one table (src/graph/ops.c).
 *
 * Example (a static table: nothing to create or destroy):
 *
 *     const tp_op_info *info = tp_op_info_of(TP_OP_ROPE);
 *     if (info)
 *         printf("rope: %u to %u sources, in place: %u\n", (unsigned)info->min_src,
 *                (unsigned)info->max_src, (unsigned)info->inplace_sole);
 *
 * The allocator reads the KV and in-place columns, the scheduler the KV-pair column, the
 * validator the arity and its per-op shape rule (src/graph/validate.c). A new op is one row
 * here and one rule there. */
#ifndef TENSORPLAN_OPS_H
#define TENSORPLAN_OPS_H

#include "tensorplan/api.h"
#include "tensorplan/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tp_op_info {
    unsigned char min_src, max_src; /* sources accepted (get_rows: 1 or 2)              */
    unsigned char kv_region;    /* the node's buffer is its layer's K region: kv_store and
                                   kv_load (never a plan buffer; needs p.layer)         */
    unsigned char uses_kv;      /* needs its layer's K/V pair at execution (kv ops, attn);
                                   p.layer is required                                  */
    /* May write its output into src[0]'s window (docs/allocator.md, aliasing):
     * inplace_sole under the sole-consumer policy, inplace_last under last-consumer. */
    unsigned char inplace_sole, inplace_last;
} tp_op_info;

/* The row of op; NULL when op is out of range. */
TP_API const tp_op_info *tp_op_info_of(tp_op op);
/* The kv_region and uses_kv columns; 0 for an op out of range. */
TP_API int tp_op_is_kv_region(tp_op op);
TP_API int tp_op_uses_kv(tp_op op);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_OPS_H */
