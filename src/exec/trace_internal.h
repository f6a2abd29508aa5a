/* Internal: the scheduler's hooks into the trace writer. */
#ifndef TP_EXEC_TRACE_INTERNAL_H
#define TP_EXEC_TRACE_INTERNAL_H

#include "tensorplan/exec.h"

void tp_trace_begin_run(tp_trace *t, const tp_graph *g);
void tp_trace_end_run(tp_trace *t);
/* data: the node's output window (ref->len elements), read after its work completed. */
void tp_trace_node(tp_trace *t, const tp_node *nd, const tp_bufref *ref, const float *data,
                   int host_filled);

#endif
