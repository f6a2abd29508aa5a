/* UTF-8 encoding, decoding and repair (utf8.h). */
#include "common/utf8.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

size_t tp_utf8_put(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 63));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 63));
        o[2] = (unsigned char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 63));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 63));
    o[3] = (unsigned char)(0x80 | (cp & 63));
    return 4;
}

static size_t valid_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned b = s[0];
    size_t k = b < 0x80 ? 1 : b < 0xC2 ? 0 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : b < 0xF5 ? 4 : 0;
    if (k == 0 || k > n)
        return 0;
    uint32_t v = k == 1 ? b : b & (0xFFu >> (k + 1));
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 63u);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[k] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return k;
}

size_t tp_utf8_next(const char *s, size_t n, uint32_t *cp)
{
    size_t k = valid_seq((const unsigned char *)s, n, cp);
    if (k == 0) {
        *cp = 0xFFFD;
        return 1;
    }
    return k;
}

tp_status tp_utf8_sanitize(const char *text, size_t len, char **out, size_t *out_len)
{
    if (len > ((size_t)-1) / 3 - 1)
        return tp_fail(TP_ERR_OVERFLOW, "tokenize: text of %zu bytes is too long", len);
    char *o = malloc(len * 3 + 1); /* each byte grows to at most 3 */
    if (!o)
        return tp_fail(TP_ERR_NOMEM, "tokenize: out of memory for %zu bytes", len);
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = valid_seq((const unsigned char *)text + i, len - i, &cp);
        if (k == 0) {
            memcpy(o + n, "\xEF\xBF\xBD", 3);
            n += 3;
            i += 1;
        } else {
            memcpy(o + n, text + i, k);
            n += k;
            i += k;
        }
    }
    *out = o;
    *out_len = n;
    return TP_OK;
}

size_t tp_utf8_valid_seq(const char *s, size_t n, uint32_t *cp)
{
    return valid_seq((const unsigned char *)s, n, cp);
}
