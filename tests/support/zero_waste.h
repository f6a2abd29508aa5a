/* Test support: zero-waste problems, a capacity-by-time rectangle cut by guillotine cuts into n
 * pieces, each piece a buffer (its height the size, its width the lifetime). The pieces tile
 * the rectangle, so the cut is a plan whose arena is the capacity and every node's load is
 * the capacity: the least arena is exactly the capacity. Header-only; deterministic for a
 * given generator state. */
#ifndef TP_TESTS_ZERO_WASTE_H
#define TP_TESTS_ZERO_WASTE_H

#include <stddef.h>
#include <stdlib.h>

#include "support/xorshift.h"
#include "tensorplan/planner.h"

typedef struct tpt_piece {
    size_t t0, t1, y0, y1; /* nodes [t0, t1), bytes [y0, y1) */
} tpt_piece;

/* Cuts *c at a random point, across time or across bytes; *c keeps the first part and the
 * second is returned. */
static inline tpt_piece tpt_cut_piece(tpt_rng *rng, tpt_piece *c, int across_time)
{
    tpt_piece d = *c;
    if (across_time) {
        const size_t cut = c->t0 + 1 + (size_t)(tpt_rng_next(rng) % (c->t1 - c->t0 - 1));
        c->t1 = cut;
        d.t0 = cut;
    } else {
        const size_t cut = c->y0 + 1 + (size_t)(tpt_rng_next(rng) % (c->y1 - c->y0 - 1));
        c->y1 = cut;
        d.y0 = cut;
    }
    return d;
}

/* The pieces as buffers t[0..n) and, when at is not NULL, the cut's own offsets; frees p. */
static inline void tpt_pieces_out(tpt_piece *p, size_t n, tp_tensor_lifetime *t, size_t *at)
{
    for (size_t i = 0; i < n; i++) {
        t[i] = (tp_tensor_lifetime){ p[i].y1 - p[i].y0, p[i].t0, p[i].t1 - 1 };
        if (at != NULL)
            at[i] = p[i].y0;
    }
    free(p);
}

/* Cuts [0, nodes) x [0, capacity) into n pieces (n <= nodes * capacity): each step cuts a
 * random piece that can be cut, across time or across bytes at a random point. t[0..n)
 * receives the buffers, at[0..n) (may be NULL) the offsets of the cut's own plan. */
static inline void tpt_zero_waste(tpt_rng *rng, size_t n, size_t nodes, size_t capacity,
                                  tp_tensor_lifetime *t, size_t *at)
{
    tpt_piece *p = malloc(n * sizeof *p);
    size_t have = 1;
    p[0] = (tpt_piece){ 0, nodes, 0, capacity };
    while (have < n) {
        tpt_piece *c = &p[tpt_rng_next(rng) % have];
        const size_t w = c->t1 - c->t0, h = c->y1 - c->y0;
        if (w < 2 && h < 2)
            continue;
        const int across_time = h < 2 || (w >= 2 && (tpt_rng_next(rng) & 1));
        p[have++] = tpt_cut_piece(rng, c, across_time);
    }
    tpt_pieces_out(p, n, t, at);
}

/* A harder distribution: each step cuts the piece of the largest area (the first on a tie)
 * across its longer side, relative to the rectangle (width / nodes against height /
 * capacity), at a random point. The pieces come out of similar area and aspect, in a
 * staggered layout rather than nested strips. Same outputs as tpt_zero_waste. */
static inline void tpt_zero_waste_balanced(tpt_rng *rng, size_t n, size_t nodes,
                                           size_t capacity, tp_tensor_lifetime *t, size_t *at)
{
    tpt_piece *p = malloc(n * sizeof *p);
    size_t have = 1;
    p[0] = (tpt_piece){ 0, nodes, 0, capacity };
    while (have < n) {
        size_t k = 0;
        double big = -1;
        for (size_t i = 0; i < have; i++) {
            const double w = (double)(p[i].t1 - p[i].t0), h = (double)(p[i].y1 - p[i].y0);
            if ((w >= 2 || h >= 2) && w * h > big) {
                big = w * h;
                k = i;
            }
        }
        tpt_piece *c = &p[k];
        const size_t w = c->t1 - c->t0, h = c->y1 - c->y0;
        const int across_time =
            h < 2 || (w >= 2 && (double)w / (double)nodes >= (double)h / (double)capacity);
        p[have++] = tpt_cut_piece(rng, c, across_time);
    }
    tpt_pieces_out(p, n, t, at);
}

#endif
