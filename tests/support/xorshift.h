/* Test support: the seeded xorshift64* generator of planner.md section 3 (the "G1" family),
 * for every test that draws random instances. Header-only so that each test keeps its own
 * generator state. */
#ifndef TP_TESTS_XORSHIFT_H
#define TP_TESTS_XORSHIFT_H

#include <stddef.h>
#include <stdint.h>

typedef struct tpt_rng {
    uint64_t state;
} tpt_rng;

/* state = (seed * 0x9E3779B97F4A7C15) | 1, as in planner.md: never the fixed point 0. */
static inline tpt_rng tpt_rng_seeded(uint64_t seed)
{
    tpt_rng r = { (seed * 0x9E3779B97F4A7C15ull) | 1u };
    return r;
}

static inline uint64_t tpt_rng_next(tpt_rng *r)
{
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* next() % n, the seed's below(n); n > 0. */
static inline size_t tpt_rng_below(tpt_rng *r, size_t n)
{
    return (size_t)(tpt_rng_next(r) % n);
}

#endif
