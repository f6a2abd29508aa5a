/* The op table (include/tensorplan/ops.h). */
#include "tensorplan/ops.h"

/* The in-place columns are the allocator's aliasing rule (docs/allocator.md): silu and rope
 * under both policies; add, mul, rms_norm and swiglu under last-consumer only. */
static const tp_op_info op_table[TP_OP_COUNT] = {
    /*                 min max kv_reg uses_kv sole last */
    [TP_OP_INPUT]    = { 0, 0, 0, 0, 0, 0 },
    [TP_OP_GET_ROWS] = { 1, 2, 0, 0, 0, 0 },
    [TP_OP_RMS_NORM] = { 1, 1, 0, 0, 0, 1 },
    [TP_OP_MUL_MAT]  = { 1, 1, 0, 0, 0, 0 },
    [TP_OP_ROPE]     = { 2, 2, 0, 0, 1, 1 },
    [TP_OP_KV_STORE] = { 3, 3, 1, 1, 0, 0 },
    [TP_OP_KV_LOAD]  = { 0, 0, 1, 1, 0, 0 },
    [TP_OP_ATTN]     = { 3, 3, 0, 1, 0, 0 },
    [TP_OP_ADD]      = { 2, 2, 0, 0, 0, 1 },
    [TP_OP_MUL]      = { 2, 2, 0, 0, 0, 1 },
    [TP_OP_SILU]     = { 1, 1, 0, 0, 1, 1 },
    [TP_OP_SWIGLU]   = { 2, 2, 0, 0, 0, 1 },
};

const tp_op_info *tp_op_info_of(tp_op op)
{
    if ((int)op < 0 || op >= TP_OP_COUNT)
        return 0;
    return &op_table[op];
}

int tp_op_is_kv_region(tp_op op)
{
    const tp_op_info *o = tp_op_info_of(op);
    return o && o->kv_region;
}

int tp_op_uses_kv(tp_op op)
{
    const tp_op_info *o = tp_op_info_of(op);
    return o && o->uses_kv;
}
