/* The pre-tokenizer of byte-level BPE (docs/tokenizer.md, "Byte-level BPE" and "Regular
 * expressions"): UTF-8 clean-up and the regex lists named by tokenizer.ggml.pre, matched by
 * PCRE2 (8-bit, UTF and UCP). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "tokenizer/tokenizer_internal.h"

/* \s of the pre-tokenizers, as the contents of a character class: exactly these code points
 * (PCRE2's own \s under UCP also matches U+180E). */
#define SP "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
           "\\x{202F}\\x{205F}\\x{3000}"

#define CONTRACTIONS_CI "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define LLAMA3_TAIL "| ?[^" SP "\\p{L}\\p{N}]+[\\r\\n]*|[" SP "]*[\\r\\n]+|[" SP "]+(?![^" SP \
                    "])|[" SP "]+"

static const char RE_LLAMA3[] =
    CONTRACTIONS_CI "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}" LLAMA3_TAIL;
static const char RE_QWEN2[] =
    CONTRACTIONS_CI "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" LLAMA3_TAIL;
static const char RE_GPT2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" SP
                              "\\p{L}\\p{N}]+|[" SP "]+(?![^" SP "])";
static const char RE_DIGIT[] = "\\p{N}";
static const char RE_DEFAULT_PUNCT[] = "[\\p{P}\\$\\+<=>\\^~\\|]+";
static const char RE_NUMBERS[] = "\\p{N}+";
static const char RE_THREE_DIGITS[] = "[0-9][0-9][0-9]";

typedef struct pre_group {
    const char *const *names; /* NULL-terminated values of tokenizer.ggml.pre */
    const char *regex[TP_TOK_MAX_REGEX];
    int ignore_merges; /* the llama3 group: whole-piece lookup first, bos added by default */
    int clean_spaces;
} pre_group;

static const char *const NAMES_LLAMA3[] = {"llama-bpe", "llama3", "llama-v3", "falcon3",
                                           "falcon-h1", "pixtral", "midm-2.0", "lfm2", NULL};
static const char *const NAMES_QWEN2[] = {"qwen2", "deepseek-r1-qwen", "kormo", "megrez", NULL};
static const char *const NAMES_SMOLLM[] = {"smollm", NULL};
static const char *const NAMES_GPT2[] = {"gpt-2", "phi-2", NULL};
static const char *const NAMES_DEFAULT[] = {"default", NULL};

static const pre_group GROUPS[] = {
    {NAMES_LLAMA3, {RE_LLAMA3}, 1, 1},
    {NAMES_QWEN2, {RE_QWEN2}, 0, 0},
    {NAMES_SMOLLM, {RE_DIGIT, RE_GPT2}, 0, 0},
    {NAMES_GPT2, {RE_GPT2}, 0, 1},
    {NAMES_DEFAULT, {RE_DEFAULT_PUNCT, RE_GPT2, RE_NUMBERS, RE_THREE_DIGITS}, 0, 1},
};

static tp_status compile(tp_tokenizer *t, const char *pattern)
{
    int err;
    PCRE2_SIZE at;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_UCP, &err, &at, NULL);
    if (!code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return tp_fail(TP_ERR_INVALID, "tokenizer: pre-tokenizer regex at %zu: %s",
                       (size_t)at, (const char *)msg);
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* optional: the interpreter is the fallback */
    t->regex[t->n_regex++] = code;
    return TP_OK;
}

int tp_tokenizer_pre_supported(const char *pre)
{
    if (!pre)
        return 0;
    for (size_t g = 0; g < sizeof GROUPS / sizeof *GROUPS; g++)
        for (const char *const *n = GROUPS[g].names; *n; n++)
            if (strcmp(*n, pre) == 0)
                return 1;
    return 0;
}

const char *tp_tokenizer_pre_names(void)
{
    return "llama-bpe, llama3, llama-v3, falcon3, falcon-h1, pixtral, midm-2.0, lfm2, qwen2, "
           "deepseek-r1-qwen, kormo, megrez, smollm, gpt-2, phi-2, default";
}

tp_status tp_bpe_set_pre(tp_tokenizer *t, const char *pre)
{
    const char *name = pre ? pre : "default";
    for (size_t g = 0; g < sizeof GROUPS / sizeof *GROUPS; g++)
        for (const char *const *n = GROUPS[g].names; *n; n++) {
            if (strcmp(*n, name) != 0)
                continue;
            t->ignore_merges = GROUPS[g].ignore_merges;
            t->clean_spaces = GROUPS[g].clean_spaces;
            for (size_t r = 0; r < TP_TOK_MAX_REGEX && GROUPS[g].regex[r]; r++)
                TP_TRY(compile(t, GROUPS[g].regex[r]));
            return TP_OK;
        }
    return tp_fail(TP_ERR_INVALID, "tokenizer: pre-tokenizer \"%s\" is not supported "
                   "(qwen2, llama-bpe, gpt-2, smollm, default and their aliases)", name);
}

void tp_pretok_free(tp_tokenizer *t)
{
    for (size_t r = 0; r < t->n_regex; r++)
        pcre2_code_free(t->regex[r]);
    t->n_regex = 0;
}

typedef struct span_list {
    size_t *v; /* pairs (offset, length) */
    size_t count, cap;
} span_list;

static tp_status span_push(span_list *l, size_t off, size_t len)
{
    if (len == 0)
        return TP_OK;
    TP_TRY(TP_GROW(&l->v, &l->cap, 2 * l->count + 2));
    l->v[2 * l->count] = off;
    l->v[2 * l->count + 1] = len;
    l->count++;
    return TP_OK;
}

static int match_at(const pcre2_code *re, const char *s, size_t n, size_t pos,
                    pcre2_match_data *md)
{
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                         NULL);
    return rc;
}

/* Splits the piece [off, off + n) of text into matches and gaps; the piece is the whole
 * subject, so its edges are the start and end of text for the regex. */
static tp_status split_piece(const pcre2_code *re, const char *text, size_t off, size_t n,
                             pcre2_match_data *md, span_list *out)
{
    const char *s = text + off;
    size_t pos = 0, gap = 0;
    while (pos < n) {
        int rc = match_at(re, s, n, pos, md);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0)
            return tp_fail(TP_ERR_INVALID, "tokenize: regex match failed (PCRE2 error %d)", rc);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] == ov[0]) { /* an empty match splits nothing: look one code point on */
            uint32_t cp;
            pos = ov[0] + tp_utf8_next(s + ov[0], n - ov[0], &cp);
            continue;
        }
        TP_TRY(span_push(out, off + gap, ov[0] - gap));
        TP_TRY(span_push(out, off + ov[0], ov[1] - ov[0]));
        pos = gap = ov[1];
    }
    return span_push(out, off + gap, n - gap);
}

tp_status tp_pretok_split(const tp_tokenizer *t, const char *text, size_t len, size_t **spans,
                          size_t *n_spans)
{
    span_list cur = {0}, next = {0};
    tp_status st = span_push(&cur, 0, len);
    for (size_t r = 0; st == TP_OK && r < t->n_regex; r++) {
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(t->regex[r], NULL);
        if (!md) {
            st = tp_fail(TP_ERR_NOMEM, "tokenize: out of memory for regex match data");
            break;
        }
        next.count = 0;
        for (size_t i = 0; st == TP_OK && i < cur.count; i++)
            st = split_piece(t->regex[r], text, cur.v[2 * i], cur.v[2 * i + 1], md, &next);
        pcre2_match_data_free(md);
        span_list tmp = cur;
        cur = next;
        next = tmp;
    }
    free(next.v);
    if (st != TP_OK) {
        free(cur.v);
        return st;
    }
    *spans = cur.v;
    *n_spans = cur.count;
    return TP_OK;
}
