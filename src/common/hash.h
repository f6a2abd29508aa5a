/* A string hash shared by the layers that key tables on names. */
#ifndef TP_COMMON_HASH_H
#define TP_COMMON_HASH_H

#include <stdint.h>

/* FNV-1a over the bytes of s up to its terminator. The weight registry's table and the
 * seeded random initialisation both depend on its exact values. */
static inline uint64_t tp_hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

#endif /* TP_COMMON_HASH_H */
