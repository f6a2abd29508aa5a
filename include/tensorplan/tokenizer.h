/* tensorplan: the tokenizers of GGUF models (docs/tokenizer.md).
 *
 * Example (a tokenizer of a GGUF file comes from tp_gguf_tokenizer, gguf_model.h):
 *
 *     const char *texts[] = {"<s>", "</s>", "\xe2\x96\x81", "a", "b", "\xe2\x96\x81" "a"};
 *     size_t lens[6];
 *     for (int i = 0; i < 6; i++)
 *         lens[i] = strlen(texts[i]);
 *     tp_vocab_desc desc;
 *     tp_vocab_desc_init(&desc);                     // every key absent
 *     desc.model = "llama";
 *     desc.n_tokens = 6;
 *     desc.tokens = texts;
 *     desc.token_lens = lens;
 *     desc.bos = 0;
 *     desc.eos = 1;
 *     tp_tokenizer *tok;
 *     int32_t *ids;
 *     size_t n;
 *     if (tp_tokenizer_create(&desc, &tok) != TP_OK) // copies: texts and desc may go now
 *         return 1;
 *     tp_status st = tp_tokenizer_encode(tok, "ab", 2, 1, 0, &ids, &n);   // 0 (bos), 5, 4
 *     if (st == TP_OK)
 *         free(ids);
 *     tp_tokenizer_destroy(tok);
 *     return st == TP_OK ? 0 : 1;
 *
 * Two models: "gpt2" (byte-level BPE ranked by merges, with the pre-tokenizer regexes named by
 * tokenizer.ggml.pre) and "llama" (SentencePiece-style BPE ranked by scores, byte fallback).
 * A tokenizer is built from plain arrays, so any source of a vocabulary (a GGUF file, a
 * Hugging Face tokenizer.json, a hand-made test vocabulary) fills one tp_vocab_desc; the desc
 * fields map one to one onto the tokenizer.ggml.* keys. The tokenizer copies what it keeps:
 * the desc and its arrays may be freed after tp_tokenizer_create returns.
 *
 * A created tokenizer is read-only; encode and decode may run on it from several threads. */
#ifndef TENSORPLAN_TOKENIZER_H
#define TENSORPLAN_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Token types of tokenizer.ggml.token_type. */
enum {
    TP_TOKEN_UNDEFINED = 0,
    TP_TOKEN_NORMAL = 1,
    TP_TOKEN_UNKNOWN = 2,
    TP_TOKEN_CONTROL = 3,
    TP_TOKEN_USER_DEFINED = 4,
    TP_TOKEN_UNUSED = 5,
    TP_TOKEN_BYTE = 6,
};

/* One vocabulary, as the tokenizer.ggml.* keys hold it. Ids and flags use -1 for "key absent",
 * which selects the defaults of docs/tokenizer.md (they depend on model and pre). An id that is
 * not below n_tokens is ignored like an absent key. */
typedef struct tp_vocab_desc {
    const char *model;             /* tokenizer.ggml.model: "gpt2" or "llama" (NUL-terminated) */
    const char *pre;               /* tokenizer.ggml.pre, NULL when the key is absent          */
    size_t n_tokens;               /* V                                                         */
    const char *const *tokens;     /* token texts, bytes (not NUL-terminated)                   */
    const size_t *token_lens;      /* their lengths                                             */
    const float *scores;           /* n_tokens scores, NULL = all 0                             */
    const int32_t *types;          /* n_tokens TP_TOKEN_* values, NULL = all TP_TOKEN_NORMAL    */
    size_t n_merges;               /* tokenizer.ggml.merges ("A B" strings), gpt2 only          */
    const char *const *merges;
    const size_t *merge_lens;
    int64_t bos, eos, unk, pad, eot, eom, sep; /* token ids, -1 = absent                   */
    int add_bos, add_eos, add_space_prefix;    /* 0/1, -1 = absent                         */
} tp_vocab_desc;

/* Fills every field of desc with "absent" (NULL, 0 or -1), so callers set only what they have. */
TP_API void tp_vocab_desc_init(tp_vocab_desc *desc);

typedef struct tp_tokenizer tp_tokenizer;

/* Builds a tokenizer. Refused (TP_ERR_INVALID, with a message naming the value): an unknown
 * model, an unknown pre for gpt2, no tokens, duplicate token texts, add_bos/add_eos set while
 * bos/eos is not a token. Empty token texts become "[EMPTY_i]"; a merge without a space after
 * its first byte never matches; a repeated merge keeps its first rank. Texts of end-of-turn
 * and fill-in-the-middle tokens (docs/tokenizer.md) are forced to TP_TOKEN_CONTROL. */
TP_API tp_status tp_tokenizer_create(const tp_vocab_desc *desc, tp_tokenizer **out);

/* 1 when PRE is a tokenizer.ggml.pre name byte-level BPE supports (docs/tokenizer.md,
 * "Supported"), 0 otherwise (NULL, empty or unknown). */
TP_API int tp_tokenizer_pre_supported(const char *pre);
/* The supported names, comma-separated, for messages. */
TP_API const char *tp_tokenizer_pre_names(void);
TP_API void tp_tokenizer_destroy(tp_tokenizer *tok);

/* Tokenizes len bytes of text (any bytes; invalid UTF-8 is read as U+FFFD by gpt2).
 * add_special: add bos/eos as add_bos/add_eos say. parse_special: match control and unknown
 * tokens in the text (user-defined ones are always matched). On TP_OK *ids is a malloc'ed
 * array of *n_ids ids (NULL when 0) that the caller frees. */
TP_API tp_status tp_tokenizer_encode(const tp_tokenizer *tok, const char *text, size_t len,
                                     int add_special, int parse_special, int32_t **ids,
                                     size_t *n_ids);

/* Turns ids back into bytes. remove_special: drop a leading bos (when add_bos) and a trailing
 * eos (when add_eos). unparse_special: control and unknown tokens give their text instead of
 * nothing. On TP_OK *text is malloc'ed, NUL-terminated after *len bytes; the caller frees it.
 * An id outside [0, V) is refused. */
TP_API tp_status tp_tokenizer_decode(const tp_tokenizer *tok, const int32_t *ids, size_t n,
                                     int remove_special, int unparse_special, char **text,
                                     size_t *len);

/* The bytes one token stands for (what decode concatenates, without the leading-space strip
 * and clean-up of whole texts), for --pieces and streaming output. Writes at most cap bytes to
 * buf (buf may be NULL when cap is 0) and sets *len to the full length. */
TP_API tp_status tp_tokenizer_piece(const tp_tokenizer *tok, int32_t id, int special, char *buf,
                                    size_t cap, size_t *len);

/* The stored text of token id (after [EMPTY_i] replacement) and its type; NULL / -1 for an id
 * outside [0, V). */
TP_API const char *tp_tokenizer_token_text(const tp_tokenizer *tok, int32_t id, size_t *len);
TP_API int tp_tokenizer_token_type(const tp_tokenizer *tok, int32_t id);

/* 1 when id ends generation: eos, eot, eom and the end-of-turn texts of docs/tokenizer.md. */
TP_API int tp_tokenizer_is_eog(const tp_tokenizer *tok, int32_t id);

TP_API size_t tp_tokenizer_n_vocab(const tp_tokenizer *tok);
TP_API int32_t tp_tokenizer_bos(const tp_tokenizer *tok);   /* -1 when none */
TP_API int32_t tp_tokenizer_eos(const tp_tokenizer *tok);   /* -1 when none */
TP_API int tp_tokenizer_add_bos(const tp_tokenizer *tok);
TP_API int tp_tokenizer_add_eos(const tp_tokenizer *tok);

/* The token text by which a byte-level BPE vocabulary spells byte b (the byte table of
 * docs/tokenizer.md: b as the UTF-8 text of its code point, 1 or 2 bytes), NUL-terminated in
 * out; returns its length. */
TP_API size_t tp_bpe_byte_text(uint8_t b, char out[3]);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_TOKENIZER_H */
