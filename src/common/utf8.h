/* UTF-8 helpers shared by the tokenizer, the loader's test vocabularies and the JSON
 * writers. Valid means shortest form, no surrogates, at most U+10FFFF. */
#ifndef TP_COMMON_UTF8_H
#define TP_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/status.h"

/* Writes the 1..4 bytes of code point cp at out; returns how many. */
size_t tp_utf8_put(uint32_t cp, char *out);

/* Decodes one code point at s (n > 0 bytes left): its length, and *cp; an invalid byte is
 * one byte long and decodes as U+FFFD. */
size_t tp_utf8_next(const char *s, size_t n, uint32_t *cp);

/* Length of the valid sequence at s (n > 0 bytes left) and its code point, or 0 when the byte
 * at s does not start one. */
size_t tp_utf8_valid_seq(const char *s, size_t n, uint32_t *cp);

/* Copies text with each invalid byte replaced by EF BF BD (U+FFFD); the caller frees *out. */
tp_status tp_utf8_sanitize(const char *text, size_t len, char **out, size_t *out_len);

#endif /* TP_COMMON_UTF8_H */
