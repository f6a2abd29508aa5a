/* The cpu and queued backends: cpu runs a node when handed it; queued runs it only at
 * synchronize(), and a host read before that returns the old contents. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tensorplan/backend.h"
#include "tensorplan/graph.h"
#include "tensorplan/weights.h"

typedef struct fixture {
    tp_graph *g;
    size_t a, b, sum, act;
} fixture;

/* inputs a, b [8]; sum = add(a, b); act = silu(sum) */
static void build(fixture *f)
{
    assert_int_equal(tp_graph_create(&f->g), TP_OK);
    tp_node n = tp_node_init(TP_OP_INPUT, "a");
    assert_int_equal(tp_graph_add_input(f->g, "a", 8, TP_DTYPE_F32, &f->a), TP_OK);
    assert_int_equal(tp_graph_add_input(f->g, "b", 8, TP_DTYPE_F32, &f->b), TP_OK);
    n = tp_node_init(TP_OP_ADD, "sum");
    n.n_src = 2;
    n.src[0] = f->a;
    n.src[1] = f->b;
    n.shape[0] = 8;
    n.shape[1] = 1;
    n.shape[2] = 1;
    n.shape[3] = 1;
    assert_int_equal(tp_graph_add_node(f->g, &n, &f->sum), TP_OK);
    n = tp_node_init(TP_OP_SILU, "act");
    n.n_src = 1;
    n.src[0] = f->sum;
    n.shape[0] = 8;
    n.shape[1] = 1;
    n.shape[2] = 1;
    n.shape[3] = 1;
    assert_int_equal(tp_graph_add_node(f->g, &n, &f->act), TP_OK);
}

static void run_add_silu(int queued)
{
    fixture f;
    build(&f);
    tp_backend *be = NULL;
    assert_int_equal(queued ? tp_backend_create_queued(&be) : tp_backend_create_cpu(&be), TP_OK);
    assert_true(be->supports_op(be, TP_OP_ADD, TP_DTYPE_F32));
    assert_true(be->supports_op(be, TP_OP_ATTN, TP_DTYPE_F32));
    size_t ia, ib, is, ix;
    assert_int_equal(be->alloc(be, 8, &ia), TP_OK);
    assert_int_equal(be->alloc(be, 8, &ib), TP_OK);
    assert_int_equal(be->alloc(be, 8, &is), TP_OK);
    assert_int_equal(be->alloc(be, 8, &ix), TP_OK);
    float a[8], b[8], old[8], got[8];
    for (int i = 0; i < 8; i++) {
        a[i] = (float)i - 3.5f;
        b[i] = 0.25f * (float)i;
        old[i] = -100.0f - (float)i;
    }
    assert_int_equal(be->write_window(be, ia, 0, a, 8), TP_OK);
    assert_int_equal(be->write_window(be, ib, 0, b, 8), TP_OK);
    assert_int_equal(be->write_window(be, is, 0, old, 8), TP_OK);
    assert_int_equal(be->write_window(be, ix, 0, old, 8), TP_OK);

    tp_bufref ra = {be->id, ia, 0, 8}, rb = {be->id, ib, 0, 8}, rs = {be->id, is, 0, 8};
    tp_bufref rx = {be->id, ix, 0, 8};
    tp_bufref src_sum[2] = {ra, rb};
    tp_exec_args args;
    memset(&args, 0, sizeof args);
    args.graph = f.g;
    args.node = &f.g->nodes[f.sum];
    args.src = src_sum;
    args.out = rs;
    assert_int_equal(be->execute_node(be, &args), TP_OK);
    /* the caller's source array may die right after the call */
    src_sum[0] = rx;
    src_sum[1] = rx;
    args.node = &f.g->nodes[f.act];
    tp_bufref src_act[1] = {rs};
    args.src = src_act;
    args.out = rx;
    assert_int_equal(be->execute_node(be, &args), TP_OK);

    assert_int_equal(be->read_window(be, is, 0, got, 8), TP_OK);
    if (queued)
        assert_memory_equal(got, old, sizeof got); /* recorded, not run */
    else
        for (int i = 0; i < 8; i++)
            assert_true(got[i] == a[i] + b[i]);
    assert_int_equal(be->synchronize(be), TP_OK);
    assert_int_equal(be->read_window(be, is, 0, got, 8), TP_OK);
    for (int i = 0; i < 8; i++)
        assert_true(got[i] == a[i] + b[i]);
    assert_int_equal(be->read_window(be, ix, 0, got, 8), TP_OK);
    for (int i = 0; i < 8; i++) {
        double s = (double)a[i] + b[i];
        assert_true(fabs(got[i] - s / (1.0 + exp(-s))) < 1e-6);
    }
    /* a second synchronize has nothing left to run */
    assert_int_equal(be->write_window(be, is, 0, old, 8), TP_OK);
    assert_int_equal(be->synchronize(be), TP_OK);
    assert_int_equal(be->read_window(be, is, 0, got, 8), TP_OK);
    assert_memory_equal(got, old, sizeof got);
    be->destroy(be);
    tp_graph_destroy(f.g);
}

static void test_cpu_runs_immediately(void **state)
{
    (void)state;
    run_add_silu(0);
}

static void test_queued_runs_at_synchronize(void **state)
{
    (void)state;
    run_add_silu(1);
}

static void test_refuses_foreign_or_short_window(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    tp_backend *be = NULL;
    assert_int_equal(tp_backend_create_cpu(&be), TP_OK);
    size_t id;
    assert_int_equal(be->alloc(be, 8, &id), TP_OK);
    tp_bufref mine = {be->id, id, 0, 8}, foreign = {TP_BACKEND_QUEUED, id, 0, 8};
    tp_bufref shortw = {be->id, id, 4, 4};
    tp_bufref src[2] = {mine, foreign};
    tp_exec_args args;
    memset(&args, 0, sizeof args);
    args.graph = f.g;
    args.node = &f.g->nodes[f.sum];
    args.src = src;
    args.out = mine;
    assert_int_equal(be->execute_node(be, &args), TP_ERR_INVALID);
    src[1] = shortw;
    assert_int_equal(be->execute_node(be, &args), TP_ERR_INVALID);
    be->destroy(be);
    tp_graph_destroy(f.g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_runs_immediately),
        cmocka_unit_test(test_queued_runs_at_synchronize),
        cmocka_unit_test(test_refuses_foreign_or_short_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
