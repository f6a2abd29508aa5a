/* The time-bucket pass (greedy_buckets.c) against the plain order-driven reference of
 * tests/support/place_reference.h, on the shapes of time that its bookkeeping depends on, and
 * the radix sort behind the planner's orders, ranks and peak (common/sort.c) against qsort. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support/xorshift.h"

#include "support/place_reference.h"

#include "common/sort.h"
#include "planner/planner_internal.h"
#include "tensorplan/planner.h"

static tpt_rng rng;

static size_t below(size_t n) { return (size_t)(tpt_rng_next(&rng) % n); }

static int sanitized(void) { return getenv("TP_SANITIZED") != NULL; }

typedef struct pos_item {
    size_t key, val, pos;
} pos_item;

static int by_key_then_pos(const void *pa, const void *pb)
{
    const pos_item *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* Keys from a few values, from the whole range and near SIZE_MAX (the planner's decreasing
 * keys), so that some bytes agree everywhere and others do not. */
static size_t random_key(int kind)
{
    switch (kind) {
    case 0: return below(5);
    case 1: return (size_t)tpt_rng_next(&rng);
    case 2: return SIZE_MAX - below(1u << 20);
    default: return below(3) << (8 * below(sizeof(size_t)));
    }
}

static void test_the_radix_sort_is_a_stable_sort(void **state)
{
    (void)state;
    rng.state = 99;
    for (int round = 0; round < 200; round++) {
        const size_t n = round < 4 ? (size_t)round : 1 + below(3000);
        const int kind = round % 4;
        tp_sort_item *v = malloc((n + 1) * sizeof *v), *scratch = malloc((n + 1) * sizeof *v);
        pos_item *want = malloc((n + 1) * sizeof *want);
        for (size_t i = 0; i < n; i++) {
            v[i] = (tp_sort_item){ random_key(kind), (size_t)tpt_rng_next(&rng) };
            want[i] = (pos_item){ v[i].key, v[i].val, i };
        }
        qsort(want, n, sizeof *want, by_key_then_pos);
        const tp_sort_item *got = tp_sort_items(v, scratch, n);
        assert_true(got == v || got == scratch);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(got[i].key, want[i].key);
            assert_int_equal(got[i].val, want[i].val); /* equal keys keep their order */
        }
        free(v);
        free(scratch);
        free(want);
    }
}

/* Lifetimes whose bucket bookkeeping matters: kind 0, short ones with a few long ones that
 * reach back over many buckets; 1, crowds sharing one first use; 2, first uses far apart in
 * time (leaves are ranks, not times); 3, lengths at and around powers of two. */
static void time_shape(tp_tensor_lifetime *t, size_t n, int kind)
{
    for (size_t i = 0; i < n; i++) {
        size_t first = below(2 * n + 1), len = below(6);
        switch (kind) {
        case 0:
            if (below(20) == 0)
                len = below(2 * n + 1);
            break;
        case 1:
            if (below(3) == 0)
                first = n / 2;
            len = below(3) == 0 ? below(n) : below(4);
            break;
        case 2:
            first = below(n) * ((size_t)1 << 40);
            len = below(3) * ((size_t)1 << 40) + below(2);
            break;
        default: len = ((size_t)1 << below(7)) - below(2); break;
        }
        const size_t size = below(4) == 0 ? (1 + below(4)) * 64 : 1 + below(5000);
        t[i] = (tp_tensor_lifetime){ size, first, first + len };
    }
}

static void test_buckets_give_the_reference_offsets_at_every_width(void **state)
{
    (void)state;
    rng.state = 2024;
    const size_t rounds = sanitized() ? 120 : 600;
    enum { N = 200 };
    tp_tensor_lifetime t[N];
    size_t order[N], off[N], want[N], lo[N], hi[N];
    for (size_t r = 0; r < rounds; r++) {
        const size_t n = 1 + below(N);
        time_shape(t, n, (int)(r % 4));
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        for (size_t i = n; i > 1; i--) {
            const size_t j = below(i), tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
        const size_t align = below(3) == 0 ? 1 + below(100) : (size_t)1 << below(8);
        const tp_gap_rule rule = below(2) ? TP_GAP_FIRST_FIT : TP_GAP_BEST_FIT;
        const size_t arena_want = tpt_reference_place(t, n, order, n, align, rule, want);
        tp_leaf_ranks ranks = { lo, hi, 0 };
        assert_int_equal(tp_lifetime_ranks(t, order, n, lo, hi, &ranks.n_leaves), TP_OK);
        for (unsigned shift = 0; shift <= 12; shift += 1 + (unsigned)below(3)) {
            /* no long list, or lifetimes from 1, 2, 4 .. 128 leaves kept in it */
            const tp_bucket_shape shape = { shift, below(3) == 0 ? SIZE_MAX
                                                                 : (size_t)1 << below(8) };
            size_t arena = 1;
            assert_int_equal(tp_bucket_place(t, n, order, n, &ranks, &shape, align, rule, NULL,
                                             off, &arena),
                             TP_OK);
            assert_int_equal(arena, arena_want);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(off[i], want[i]);
        }
    }
}

/* A placement past size_t is refused, naming the tensor, and leaves every offset at 0. */
static void test_buckets_refuse_an_arena_past_size_max(void **state)
{
    (void)state;
    const tp_tensor_lifetime t[] = { { 16, 0, 3 }, { SIZE_MAX - 2, 1, 2 }, { 8, 2, 4 } };
    const size_t order[] = { 0, 1, 2 };
    size_t lo[3], hi[3], off[3] = { 7, 7, 7 }, arena = 7;
    tp_leaf_ranks ranks = { lo, hi, 0 };
    assert_int_equal(tp_lifetime_ranks(t, order, 3, lo, hi, &ranks.n_leaves), TP_OK);
    assert_int_equal(ranks.n_leaves, 3);
    for (unsigned shift = 0; shift < 6; shift++) {
        const tp_bucket_shape shape = { shift / 2, shift % 2 ? 2 : SIZE_MAX };
        assert_int_equal(
            tp_bucket_place(t, 3, order, 3, &ranks, &shape, 1, TP_GAP_BEST_FIT, NULL, off, &arena),
            TP_ERR_OVERFLOW);
        assert_non_null(strstr(tp_last_error(), "tensor 1"));
        assert_int_equal(off[0] + off[1] + off[2], 0);
    }
}

/* The estimate that decides between the buckets and the tree, and the shape it picks: short
 * lifetimes get buckets about their length and no long list; one lifetime over the whole run
 * would make every placement read back to the first bucket, so it goes to the long list and
 * the estimate stays about the same; a quarter of the lifetimes over the whole run cannot be
 * kept apart cheaply, and the estimate must show it. */
static void test_the_estimate_sees_lifetimes_over_the_whole_run(void **state)
{
    (void)state;
    rng.state = 5;
    enum { N = 4096 };
    tp_tensor_lifetime *t = malloc(N * sizeof *t);
    size_t order[N], lo[N], hi[N];
    for (size_t i = 0; i < N; i++) {
        t[i] = (tp_tensor_lifetime){ 1 + below(100), i, i + below(32) };
        order[i] = i;
    }
    tp_leaf_ranks ranks = { lo, hi, 0 };
    tp_bucket_shape shape = { 99, 0 };
    double local = -1, one = -1, many = -1;
    assert_int_equal(tp_lifetime_ranks(t, order, N, lo, hi, &ranks.n_leaves), TP_OK);
    assert_int_equal(tp_bucket_choose(&ranks, N, &shape, &local), TP_OK);
    assert_true(local > 0);
    assert_true(shape.shift >= 3 && shape.shift <= 7); /* about the mean length, 16 */
    assert_int_equal(shape.long_from, SIZE_MAX);       /* nothing long to keep apart */

    t[N - 1].first_use = 0;
    assert_int_equal(tp_lifetime_ranks(t, order, N, lo, hi, &ranks.n_leaves), TP_OK);
    assert_int_equal(tp_bucket_choose(&ranks, N, &shape, &one), TP_OK);
    assert_true(shape.long_from > 32 && shape.long_from <= N); /* only that one kept apart */
    assert_true(one < 2 * local);

    for (size_t i = 0; i < N; i += 4)
        t[i].first_use = 0;
    assert_int_equal(tp_lifetime_ranks(t, order, N, lo, hi, &ranks.n_leaves), TP_OK);
    assert_int_equal(tp_bucket_choose(&ranks, N, &shape, &many), TP_OK);
    assert_true(many > 4 * local); /* every placement reads half of 1,024 long ones */
    assert_int_equal(tp_bucket_choose(&ranks, 0, &shape, &many), TP_OK);
    assert_true(many < 0); /* nothing to place: no estimate */
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_radix_sort_is_a_stable_sort),
        cmocka_unit_test(test_buckets_give_the_reference_offsets_at_every_width),
        cmocka_unit_test(test_buckets_refuse_an_arena_past_size_max),
        cmocka_unit_test(test_the_estimate_sees_lifetimes_over_the_whole_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
