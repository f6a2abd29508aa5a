/* Fuzzing harness: the tokenizers of tokenizer.h on any text, under every byte-level BPE
 * pre-tokenizer group and both SentencePiece space-prefix settings. The input bytes:
 *   byte 0       bit 0 add_special, bit 1 parse_special, bit 2 bos/eos set explicitly
 *                (gpt2: <|endoftext|>; llama: <s> and </s>), bit 3 add_eos
 *   byte 1       number of extra tokens (mod 8), then per extra token one byte h
 *                (length h mod 8, type (h >> 3) mod 3: normal, user-defined, control;
 *                score -(h >> 5)) and its bytes
 *   the rest     the text (any bytes)
 * The fixed vocabularies hold every byte (gpt2: the 256 characters of the byte table; llama:
 * <0x00>..<0xFF>), a few merged pieces and special tokens; an extra token adds its merge
 * (gpt2) or its score (llama); one that repeats a text is left out. Checks, restated from
 * docs/tokenizer.md: encode succeeds (every byte has a token) with ids in [0, V); decode of
 * the ids is the concatenation of their pieces (SentencePiece: less one leading space);
 * byte-level BPE without clean-up (the qwen2 and smollm groups) gives back the text with each
 * ill-formed UTF-8 byte as U+FFFD; SentencePiece without a space prefix (or with one but no
 * bos or special token in the ids) gives back the text up to U+2581 read as a space. */
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "tensorplan/status.h"
#include "tensorplan/tokenizer.h"

#define TOK_MAX_EXTRA 8u
#define TOK_MAX_TOKENS 320u

typedef struct tok_vocab {
    size_t n;
    const char *texts[TOK_MAX_TOKENS];
    size_t lens[TOK_MAX_TOKENS];
    int32_t types[TOK_MAX_TOKENS];
    float scores[TOK_MAX_TOKENS];
    size_t n_merges;
    const char *merges[TOK_MAX_EXTRA + 8];
    size_t merge_lens[TOK_MAX_EXTRA + 8];
    char store[8192]; /* texts made here */
    size_t used;
} tok_vocab;

/* The byte table of docs/tokenizer.md: bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF are the code
 * point of the same value, the other 68 in increasing order U+0100, U+0101, ... */
static int tok_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

static uint32_t tok_byte_cp(unsigned b)
{
    static uint32_t table[256];
    if (table[255] == 0) {
        uint32_t next = 0x100;
        for (unsigned c = 0; c < 256; c++)
            table[c] = tok_is_printable(c) ? c : next++;
    }
    return table[b];
}

/* Appends bytes to the vocabulary's store; NULL when full. */
static char *tok_put(tok_vocab *v, const void *p, size_t n)
{
    if (n > sizeof v->store - v->used)
        return NULL;
    char *at = v->store + v->used;
    memcpy(at, p, n);
    v->used += n;
    return at;
}

/* The byte-level text (UTF-8 of the byte table's code points) of raw bytes. */
static char *tok_mapped(tok_vocab *v, const uint8_t *raw, size_t n, size_t *len)
{
    char buf[64];
    size_t k = 0;
    for (size_t i = 0; i < n && i < 16; i++) {
        const uint32_t cp = tok_byte_cp(raw[i]);
        if (cp < 0x80) {
            buf[k++] = (char)cp;
        } else {
            buf[k++] = (char)(0xC0 | (cp >> 6));
            buf[k++] = (char)(0x80 | (cp & 63));
        }
    }
    *len = k;
    return tok_put(v, buf, k);
}

static int tok_has(const tok_vocab *v, const char *s, size_t n)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->lens[i] == n && memcmp(v->texts[i], s, n) == 0)
            return 1;
    return 0;
}

/* Adds a token; an extra one (check) is left out when its text is there already. */
static void tok_add(tok_vocab *v, const char *s, size_t n, int32_t type, float score, int check)
{
    if (s == NULL || n == 0 || v->n >= TOK_MAX_TOKENS || (check && tok_has(v, s, n)))
        return;
    v->texts[v->n] = s;
    v->lens[v->n] = n;
    v->types[v->n] = type;
    v->scores[v->n] = score;
    v->n++;
}

static void tok_merge(tok_vocab *v, const char *a, size_t na, const char *b, size_t nb)
{
    if (v->n_merges >= sizeof v->merges / sizeof v->merges[0])
        return;
    char *m = tok_put(v, a, na);
    if (m == NULL || tok_put(v, " ", 1) == NULL || tok_put(v, b, nb) == NULL)
        return;
    v->merges[v->n_merges] = m;
    v->merge_lens[v->n_merges++] = na + 1 + nb;
}

/* Bytes of the UTF-8 character led by b (the lead byte's count; 1 for a continuation). */
static size_t tok_char_len(unsigned char b)
{
    return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/* 1 when s is well-formed UTF-8 (the table of well-formed sequences). */
static size_t tok_valid_at(const uint8_t *s, size_t n);
static int tok_valid(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const size_t k = tok_valid_at(s + i, n - i);
        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

static const uint8_t *tok_extras(tok_vocab *v, const uint8_t *p, const uint8_t *end, int gpt2)
{
    const size_t n = p < end ? *p++ % TOK_MAX_EXTRA : 0;
    static const int32_t kinds[3] = { TP_TOKEN_NORMAL, TP_TOKEN_USER_DEFINED, TP_TOKEN_CONTROL };
    for (size_t i = 0; i < n && p < end; i++) {
        const unsigned h = *p++;
        size_t len = h % 8;
        if (len > (size_t)(end - p))
            len = (size_t)(end - p);
        const int32_t type = kinds[(h >> 3) % 3];
        const uint8_t *raw = p;
        p += len;
        /* special tokens decode to their own bytes: only well-formed ones keep the rules */
        if (len == 0 || (type != TP_TOKEN_NORMAL && !tok_valid(raw, len)))
            continue;
        if (!gpt2 || type != TP_TOKEN_NORMAL) {
            tok_add(v, tok_put(v, raw, len), len, type, -(float)(h >> 5), 1);
            continue;
        }
        size_t mlen = 0;
        const char *m = tok_mapped(v, raw, len, &mlen);
        const size_t before = v->n;
        if (m == NULL)
            continue;
        tok_add(v, m, mlen, TP_TOKEN_NORMAL, 0, 1);
        const size_t first = tok_char_len((unsigned char)m[0]);
        if (v->n > before && mlen > first) /* the merge whose result is this token */
            tok_merge(v, m, first, m + first, mlen - first);
    }
    return p;
}

#define TOK_SP "\xe2\x96\x81"

static void tok_gpt2_vocab(tok_vocab *v)
{
    for (unsigned b = 0; b < 256; b++) {
        const uint8_t raw = (uint8_t)b;
        size_t len;
        const char *m = tok_mapped(v, &raw, 1, &len);
        tok_add(v, m, len, TP_TOKEN_NORMAL, 0, 0);
    }
    static const char *const pieces[][2] = { { "\xc4\xa0", "t" }, { "h", "e" },
                                             { "\xc4\xa0t", "he" }, { "i", "n" },
                                             { "\xc4\xa0", "a" } };
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        const size_t na = strlen(pieces[i][0]), nb = strlen(pieces[i][1]);
        char *t = tok_put(v, pieces[i][0], na);
        if (t != NULL && tok_put(v, pieces[i][1], nb) != NULL)
            tok_add(v, t, na + nb, TP_TOKEN_NORMAL, 0, 0);
        tok_merge(v, pieces[i][0], na, pieces[i][1], nb);
    }
    tok_add(v, "<|endoftext|>", 13, TP_TOKEN_CONTROL, 0, 0);
    tok_add(v, "<|im_start|>", 12, TP_TOKEN_CONTROL, 0, 0);
    tok_add(v, "<u>", 3, TP_TOKEN_USER_DEFINED, 0, 0);
}

static void tok_spm_vocab(tok_vocab *v)
{
    tok_add(v, "<unk>", 5, TP_TOKEN_UNKNOWN, 0, 0);
    tok_add(v, "<s>", 3, TP_TOKEN_CONTROL, 0, 0);
    tok_add(v, "</s>", 4, TP_TOKEN_CONTROL, 0, 0);
    for (unsigned b = 0; b < 256; b++) {
        char hex[8];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        tok_add(v, tok_put(v, hex, 6), 6, TP_TOKEN_BYTE, 0, 0);
    }
    static const char *const pieces[] = { TOK_SP, "t", "h", "e", "a", TOK_SP "t", "he",
                                          TOK_SP "the", "\xc3\xa9", TOK_SP TOK_SP };
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
        tok_add(v, pieces[i], strlen(pieces[i]), TP_TOKEN_NORMAL, -(float)i, 0);
}

/* --- the oracles ------------------------------------------------------------------------ */

/* Length of the well-formed UTF-8 sequence at s, 0 when none starts there. */
static size_t tok_valid_at(const uint8_t *s, size_t n)
{
    const unsigned b = s[0];
    size_t k = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (b <= 0x7F)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        k = 2;
    else if (b == 0xE0)
        k = 3, lo = 0xA0;
    else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF)
        k = 3;
    else if (b == 0xED)
        k = 3, hi = 0x9F;
    else if (b == 0xF0)
        k = 4, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3)
        k = 4;
    else if (b == 0xF4)
        k = 4, hi = 0x8F;
    if (k == 0 || k > n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t j = 2; j < k; j++)
        if (s[j] < 0x80 || s[j] > 0xBF)
            return 0;
    return k;
}

/* The text with every ill-formed byte replaced by EF BF BD; out holds 3 n bytes. */
static size_t tok_sanitized(const uint8_t *s, size_t n, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        const size_t k = tok_valid_at(s + i, n - i);
        if (k == 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        }
    }
    return o;
}

/* The bytes with every E2 96 81 (U+2581) read as a space. */
static size_t tok_spaces(const uint8_t *s, size_t n, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 3 <= n && memcmp(s + i, TOK_SP, 3) == 0) {
            out[o++] = ' ';
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return o;
}

typedef struct tok_case {
    int add_special, parse_special, explicit_ids, add_eos, space_prefix;
    int gpt2, round_trip; /* round_trip: the pre-tokenizer group decodes without clean-up */
    const char *pre;
} tok_case;

/* The pieces of the ids, concatenated (control tokens with their text); NULL when out of
 * memory. */
static char *tok_pieces(const tp_tokenizer *t, const int32_t *ids, size_t n, size_t *len)
{
    size_t cap = 64, used = 0;
    char *out = malloc(cap);
    for (size_t i = 0; out != NULL && i < n; i++) {
        size_t k = 0;
        TPF_CHECK(tp_tokenizer_piece(t, ids[i], 1, NULL, 0, &k) == TP_OK, "piece of id %d",
                  ids[i]);
        if (used + k > cap) {
            cap = (used + k) * 2;
            char *bigger = realloc(out, cap);
            if (bigger == NULL) {
                free(out);
                return NULL;
            }
            out = bigger;
        }
        size_t k2 = 0;
        TPF_CHECK(tp_tokenizer_piece(t, ids[i], 1, out + used, k, &k2) == TP_OK && k2 == k,
                  "piece of id %d changed length", ids[i]);
        used += k;
    }
    *len = used;
    return out;
}

static int tok_has_special(const tp_tokenizer *t, const int32_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const int type = tp_tokenizer_token_type(t, ids[i]);
        if (type == TP_TOKEN_CONTROL || type == TP_TOKEN_UNKNOWN ||
            type == TP_TOKEN_USER_DEFINED)
            return 1;
    }
    return 0;
}

static void tok_check_text(const tp_tokenizer *t, const tok_case *c, const uint8_t *text,
                           size_t len)
{
    int32_t *ids = NULL;
    size_t n = 0;
    tp_status st = tp_tokenizer_encode(t, (const char *)text, len, c->add_special,
                                       c->parse_special, &ids, &n);
    if (st == TP_ERR_NOMEM || st == TP_ERR_OVERFLOW)
        return;
    TPF_CHECK(st == TP_OK, "a text refused though every byte has a token: %s",
              tp_last_error());
    const size_t V = tp_tokenizer_n_vocab(t);
    for (size_t i = 0; i < n; i++)
        TPF_CHECK(ids[i] >= 0 && (size_t)ids[i] < V && tp_tokenizer_token_text(t, ids[i], NULL)
                      != NULL, "id %d of %zu", ids[i], V);
    char *back = NULL, *pieces = NULL;
    size_t blen = 0, plen = 0;
    if (tp_tokenizer_decode(t, ids, n, 0, 1, &back, &blen) == TP_OK &&
        (pieces = tok_pieces(t, ids, n, &plen)) != NULL && (!c->gpt2 || c->round_trip)) {
        const size_t skip = c->space_prefix && plen > 0 && pieces[0] == ' ';
        TPF_CHECK(blen == plen - skip && memcmp(back, pieces + skip, blen) == 0,
                  "decode is not the concatenation of the pieces");
    }
    free(back);
    free(pieces);
    back = NULL;
    uint8_t *want = malloc(3 * len + 1), *got = malloc(3 * len + 1);
    st = tp_tokenizer_decode(t, ids, n, c->add_special, 1, &back, &blen);
    TPF_CHECK(st == TP_OK || st == TP_ERR_NOMEM, "decoding its own ids refused: %s",
              tp_last_error());
    if (st == TP_OK && want != NULL && got != NULL) {
        TPF_CHECK(back[blen] == '\0', "decoded text not terminated");
        if (c->gpt2 && c->round_trip) {
            const size_t wl = tok_sanitized(text, len, want);
            TPF_CHECK(blen == wl && memcmp(back, want, wl) == 0,
                      "byte-level BPE: the text does not come back (%zu bytes, want %zu)", blen,
                      wl);
        } else if (!c->gpt2 && (!c->space_prefix || (!c->add_special &&
                                                     !tok_has_special(t, ids, n)))) {
            const size_t wl = tok_spaces(text, len, want);
            const size_t gl = blen <= 3 * len ? tok_spaces((const uint8_t *)back, blen, got)
                                              : 3 * len + 1;
            TPF_CHECK(gl == wl && memcmp(got, want, wl) == 0,
                      "SentencePiece: the text does not come back (%zu bytes, want %zu)", gl, wl);
        }
    }
    const int32_t past = (int32_t)V;
    char *none = NULL;
    size_t nl = 0;
    TPF_CHECK(tp_tokenizer_decode(t, &past, 1, 0, 0, &none, &nl) == TP_ERR_INVALID,
              "id %d decoded", past);
    free(want);
    free(got);
    free(back);
    free(ids);
}

static void tok_run(const tok_case *c, const uint8_t *data, size_t size)
{
    tok_vocab *v = calloc(1, sizeof *v);
    if (v == NULL)
        return;
    if (c->gpt2)
        tok_gpt2_vocab(v);
    else
        tok_spm_vocab(v);
    const uint8_t *text = tok_extras(v, data + 1, data + size, c->gpt2);
    tp_vocab_desc d;
    tp_vocab_desc_init(&d);
    d.model = c->gpt2 ? "gpt2" : "llama";
    d.pre = c->pre;
    d.n_tokens = v->n;
    d.tokens = v->texts;
    d.token_lens = v->lens;
    d.types = v->types;
    d.scores = v->scores;
    d.n_merges = c->gpt2 ? v->n_merges : 0;
    d.merges = v->merges;
    d.merge_lens = v->merge_lens;
    if (c->explicit_ids) {
        d.bos = c->gpt2 ? 261 : 1; /* <|endoftext|> / <s> */
        d.eos = c->gpt2 ? 261 : 2;
    }
    d.add_eos = c->add_eos;
    if (!c->gpt2)
        d.add_space_prefix = c->space_prefix;
    tp_tokenizer *t = NULL;
    const tp_status st = tp_tokenizer_create(&d, &t);
    if (st != TP_OK) {
        TPF_CHECK(st == TP_ERR_NOMEM, "the vocabulary refused: %s", tp_last_error());
    } else {
        TPF_CHECK(tp_tokenizer_n_vocab(t) == v->n, "%zu tokens, %zu given",
                  tp_tokenizer_n_vocab(t), v->n);
        tok_check_text(t, c, text, (size_t)(data + size - text));
    }
    tp_tokenizer_destroy(t);
    free(v);
}

static int fuzz_tokenizer(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    /* one name of each pre-tokenizer group, and the key absent; round trip for the two groups
     * that decode without clean-up (docs/tokenizer.md, defaults) */
    static const struct { const char *pre; int round_trip; } pres[] = {
        { "qwen2", 1 }, { "smollm", 1 }, { "llama-bpe", 0 }, { "gpt-2", 0 }, { "default", 0 },
        { NULL, 0 },
    };
    tok_case c;
    memset(&c, 0, sizeof c);
    c.add_special = data[0] & 1;
    c.parse_special = (data[0] >> 1) & 1;
    c.explicit_ids = (data[0] >> 2) & 1;
    c.add_eos = (data[0] >> 3) & 1;
    c.gpt2 = 1;
    for (size_t i = 0; i < sizeof pres / sizeof pres[0]; i++) {
        c.pre = pres[i].pre;
        c.round_trip = pres[i].round_trip;
        tok_run(&c, data, size);
    }
    c.gpt2 = 0;
    c.pre = NULL;
    for (c.space_prefix = 0; c.space_prefix < 2; c.space_prefix++)
        tok_run(&c, data, size);
    return 0;
}

TPF_ENTRY(fuzz_tokenizer)
