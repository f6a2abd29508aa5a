/* Internal to the model layer: the splitmix64 mixer that seeds both the random weights
 * (weights_random.c) and the sampler's xoshiro256** state (sample.c). */
#ifndef TP_MODEL_SPLITMIX_H
#define TP_MODEL_SPLITMIX_H

#include <stdint.h>

/* The k-th output (from 0) of a splitmix64 stream started at state: a pure function of k,
 * so a fill can be split across threads, and the same as the k+1-th call of the stateful
 * form (state += golden gamma, then mix). */
static inline uint64_t tp_splitmix_at(uint64_t state, uint64_t k)
{
    uint64_t z = state + (k + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
