/* tensorplan: plan files. The plan JSON format of docs/allocator.md ("Plan JSON";
 * "tensorplan-plan", version 1), written from an allocator's current plan. Part of the formats
 * layer (src/formats).
 *
 * Example, given an allocator with a plan, `const tp_allocator *alloc` (alloc.h):
 *
 *     char *json;
 *     if (tp_plan_to_json(alloc, &json) != TP_OK)
 *         return 1;                                  // no plan yet
 *     fputs(json, stdout);
 *     free(json);
 *     return tp_plan_save_json(alloc, "plan.json") == TP_OK ? 0 : 1;
 *
 * Buffer ids are the pools' own ids. In the arena strategy every node window of a backend
 * lies in that backend's one arena buffer (its pool id; 0 on a fresh allocator only when
 * nothing was allocated before it) and `offset` is the element offset inside it. */
#ifndef TENSORPLAN_PLAN_IO_H
#define TENSORPLAN_PLAN_IO_H

#include "tensorplan/alloc.h"
#include "tensorplan/api.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The JSON text of the allocator's current plan (refused when it has none). Deterministic
 * except stats.plan_seconds. *out is NUL-terminated; the caller frees it with free(). */
TP_API tp_status tp_plan_to_json(const tp_allocator *alloc, char **out);
/* Writes it to a file; nothing is written when refused. */
TP_API tp_status tp_plan_save_json(const tp_allocator *alloc, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_PLAN_IO_H */
