/* Internal: running one node on host memory, shared by the cpu and queued backends. */
#ifndef TP_BACKEND_CPU_EXEC_H
#define TP_BACKEND_CPU_EXEC_H

#include "tensorplan/backend.h"

/* Runs args->node's kernel now, reading and writing b's host pool through the windows in
 * args. Every window is checked against the node's shape first. */
tp_status tp_cpu_run_node(tp_backend *b, const tp_exec_args *args);

/* Ops the host kernels implement (f32 activations; i32 data rides as bit patterns). */
int tp_cpu_supports(tp_op op, tp_dtype dtype);

#endif
