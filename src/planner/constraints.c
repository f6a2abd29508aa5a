/* The public face of the checked alignments and gaps (tp_general, greedy_general.c), for
 * solution checkers above the planner. */
#include "tensorplan/planner.h"

#include <stdlib.h>

#include "common/error.h"
#include "planner/planner_internal.h"

struct tp_plan_constraints {
    const tp_tensor_lifetime *tensors;
    tp_general g;
};

tp_status tp_plan_constraints_create(const tp_tensor_lifetime *tensors, size_t count,
                                     const tp_plan_options *options, tp_plan_constraints **out)
{
    if (!out)
        return tp_fail(TP_ERR_INVALID, "plan constraints: no output pointer");
    *out = NULL;
    tp_plan_options defaults;
    if (!options) {
        tp_plan_options_init(&defaults);
        options = &defaults;
    }
    tp_plan_constraints *c = calloc(1, sizeof *c);
    if (!c)
        return tp_fail(TP_ERR_NOMEM, "plan constraints: out of memory");
    tp_status st = tp_general_init(tensors, count, options, 1, &c->g);
    if (st != TP_OK) {
        free(c);
        return st;
    }
    c->tensors = tensors;
    *out = c;
    return TP_OK;
}

void tp_plan_constraints_destroy(tp_plan_constraints *c)
{
    if (!c)
        return;
    tp_general_free(&c->g);
    free(c);
}

int tp_plan_constraints_compatible(const tp_plan_constraints *c, size_t i, size_t oi, size_t j,
                                   size_t oj)
{
    return tp_general_compatible(c->tensors, &c->g, i, oi, j, oj);
}
