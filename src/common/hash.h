/* A string hash shared by the layers that key tables on names. */
#ifndef TP_COMMON_HASH_H
#define TP_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's 64-bit step (xor a byte, multiply by the FNV prime) from the offset basis below.
 * This basis is not FNV's published one (14695981039346656037, one digit longer), so the
 * values differ from FNV-1a's test vectors; it stays as it is because the seeded random
 * weights (src/model/weights_random.c) are drawn from it, and tests and benchmarks compare
 * against those weights. */
#define TP_HASH_BASIS 1469598103934665603ull
#define TP_HASH_PRIME 1099511628211ull

/* The hash of the bytes of s up to its terminator. The weight registry's table and the
 * seeded random initialisation both depend on its exact values. */
static inline uint64_t tp_hash_name(const char *s)
{
    uint64_t h = TP_HASH_BASIS;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= TP_HASH_PRIME;
    }
    return h;
}

/* The hash of the len bytes at p (which may hold zero bytes): for a string, the same value
 * as tp_hash_name. */
static inline uint64_t tp_hash_bytes(const void *p, size_t len)
{
    const unsigned char *b = p;
    uint64_t h = TP_HASH_BASIS;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= TP_HASH_PRIME;
    }
    return h;
}

#endif /* TP_COMMON_HASH_H */
