/* Test support: GGUF bytes built field by field, independently of the library's writer, with
 * the offset of every field recorded (the oracle for the offsets named in refusals). The
 * layout follows docs/gguf.md: header of 24 bytes, records, infos, data at PAD(end, align). */
#ifndef TP_TESTS_GGUF_BUILD_H
#define TP_TESTS_GGUF_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct gb {
    unsigned char *p;
    size_t len, cap;
} gb;

static inline size_t gb_raw(gb *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    const size_t at = b->len;
    if (n)
        memcpy(b->p + at, src, n);
    b->len += n;
    return at;
}

static inline size_t gb_le(gb *b, uint64_t v, size_t n)
{
    unsigned char le[8];
    for (size_t i = 0; i < n; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    return gb_raw(b, le, n);
}

static inline size_t gb_u32(gb *b, uint32_t v) { return gb_le(b, v, 4); }
static inline size_t gb_u64(gb *b, uint64_t v) { return gb_le(b, v, 8); }

/* A string of len bytes (its length field first); returns the length field's offset. */
static inline size_t gb_strn(gb *b, const char *s, size_t len)
{
    const size_t at = gb_u64(b, len);
    gb_raw(b, s, len);
    return at;
}

static inline size_t gb_str(gb *b, const char *s) { return gb_strn(b, s, strlen(s)); }

static inline void gb_zero_to(gb *b, size_t end)
{
    while (b->len < end)
        gb_le(b, 0, 1);
}

static inline void gb_put_le_at(gb *b, size_t at, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b->p[at + i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t gb_pad(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

#endif
