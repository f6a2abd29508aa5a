/* tensorplan: GGUF model files (docs/gguf.md). A strict reader that maps a file read-only and
 * checks every header field before anything uses it, and a writer that lays files out the way
 * the reader expects. Part of the gguf layer (src/gguf).
 *
 * Example:
 *
 *     tp_gguf *g;
 *     tp_gguf_str arch;
 *     if (tp_gguf_open("model.gguf", &g) != TP_OK)
 *         return 1;                                  // "model.gguf: offset N: expected ..."
 *     if (tp_gguf_get_string(g, "general.architecture", &arch) == TP_OK)
 *         printf("%.*s\n", (int)arch.len, arch.data);   // not NUL-terminated
 *     for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
 *         const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
 *         printf("%s %s %zu bytes\n", t->name, tp_gguf_type_name(t->type), t->nbytes);
 *     }
 *     tp_gguf_close(g);                              // unmaps: pointers into the file go too
 *
 * The reader touches only the header, the metadata and the tensor infos at open; weight bytes
 * stay in the mapping until a caller reads them through tp_gguf_tensor.data. Multi-byte values
 * in a GGUF file are little-endian; pointers into the mapping are not aligned. */
#ifndef TENSORPLAN_GGUF_H
#define TENSORPLAN_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "tensorplan/api.h"
#include "tensorplan/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metadata value types (ids as stored in the file). */
typedef enum tp_gguf_vtype {
    TP_GGUF_U8 = 0,
    TP_GGUF_I8 = 1,
    TP_GGUF_U16 = 2,
    TP_GGUF_I16 = 3,
    TP_GGUF_U32 = 4,
    TP_GGUF_I32 = 5,
    TP_GGUF_F32 = 6,
    TP_GGUF_BOOL = 7,
    TP_GGUF_STRING = 8,
    TP_GGUF_ARRAY = 9,
    TP_GGUF_U64 = 10,
    TP_GGUF_I64 = 11,
    TP_GGUF_F64 = 12,
    TP_GGUF_VTYPE_COUNT = 13
} tp_gguf_vtype;

#define TP_GGUF_DEFAULT_ALIGNMENT 32u
#define TP_GGUF_MAX_STRING (1ull << 30) /* longest string and largest array count */
#define TP_GGUF_MAX_NAME 63u            /* longest tensor name */
#define TP_GGUF_MAX_DIMS 4u

/* A string in the file: len bytes, not NUL-terminated (pointer into the mapping). */
typedef struct tp_gguf_str {
    const char *data;
    size_t len;
} tp_gguf_str;

typedef struct tp_gguf_array {
    tp_gguf_vtype type;         /* element type (never TP_GGUF_ARRAY)                       */
    size_t count;
    const void *data;           /* numbers and bools: count packed little-endian elements  */
    const tp_gguf_str *strings; /* strings: count views; NULL for other element types       */
} tp_gguf_array;

typedef struct tp_gguf_kv {
    const char *key;     /* NUL-terminated copy of the key                                  */
    size_t key_len;      /* its length in the file (a key may hold a NUL byte)              */
    tp_gguf_vtype type;
    uint64_t bits;       /* scalars: the value's little-endian bytes, zero-extended          */
    tp_gguf_str string;  /* TP_GGUF_STRING                                                  */
    tp_gguf_array array; /* TP_GGUF_ARRAY                                                   */
    size_t offset;       /* byte offset of the record (its key length) in the file          */
} tp_gguf_kv;

typedef struct tp_gguf_tensor {
    char name[TP_GGUF_MAX_NAME + 1]; /* NUL-terminated                                     */
    size_t name_len;
    uint32_t type;                   /* ggml tensor type id (tp_gguf_type_name)             */
    uint32_t n_dims;
    int64_t ne[TP_GGUF_MAX_DIMS];    /* ne[0] contiguous; dimensions past n_dims are 1      */
    uint64_t offset;                 /* relative to the data section                        */
    size_t nbytes;
    const void *data;                /* into the mapping: tp_gguf_data_offset() + offset    */
    size_t info_offset;              /* byte offset of the tensor info (its name) in the file */
} tp_gguf_tensor;

typedef struct tp_gguf tp_gguf;

/* Maps PATH read-only and checks it. A refused file gives TP_ERR_INVALID and a message
 * "PATH: offset N: expected ..., got ..."; a file that cannot be opened or mapped TP_ERR_IO;
 * an empty file is refused (TP_ERR_INVALID). The caller closes *out. */
TP_API tp_status tp_gguf_open(const char *path, tp_gguf **out);
/* The same checks on a caller's buffer of size bytes, named NAME in messages. The buffer is
 * not copied and must outlive the object. */
TP_API tp_status tp_gguf_open_memory(const char *name, const void *data, size_t size,
                                     tp_gguf **out);
TP_API void tp_gguf_close(tp_gguf *g);
/* Maps in the pages of [data, data + bytes), a range of g's file (a tensor's data, say), so
 * that the first pass over them takes no page faults: madvise(MADV_POPULATE_READ) where the
 * kernel has it, else a read of every page. Only a file mapped by tp_gguf_open is touched (a
 * buffer of tp_gguf_open_memory is left as it is). TP_ERR_INVALID when the range is not in the
 * file. The pages stay in the page cache and count as resident memory of the process. */
TP_API tp_status tp_gguf_prefault(const tp_gguf *g, const void *data, size_t bytes);

TP_API const char *tp_gguf_name(const tp_gguf *g); /* the path or name given at open */
TP_API uint32_t tp_gguf_version(const tp_gguf *g);
TP_API size_t tp_gguf_alignment(const tp_gguf *g);
TP_API size_t tp_gguf_data_offset(const tp_gguf *g); /* where the data section starts */
TP_API size_t tp_gguf_file_size(const tp_gguf *g);

/* Metadata in file order, and by key (NULL when absent); for an index out of range
 * tp_gguf_kv_at and tp_gguf_key give NULL and tp_gguf_kv_type TP_GGUF_VTYPE_COUNT. */
TP_API size_t tp_gguf_kv_count(const tp_gguf *g);
TP_API const tp_gguf_kv *tp_gguf_kv_at(const tp_gguf *g, size_t i);
TP_API const char *tp_gguf_key(const tp_gguf *g, size_t i);
TP_API tp_gguf_vtype tp_gguf_kv_type(const tp_gguf *g, size_t i);
TP_API const tp_gguf_kv *tp_gguf_find_kv(const tp_gguf *g, const char *key);

/* Typed getters: TP_ERR_NOT_FOUND when the key is absent, TP_ERR_INVALID when it holds
 * another type ("NAME: key 'K': expected u32, got i32"); *out is unchanged then. A bool is
 * true for any non-zero byte. */
TP_API tp_status tp_gguf_get_u8(const tp_gguf *g, const char *key, uint8_t *out);
TP_API tp_status tp_gguf_get_i8(const tp_gguf *g, const char *key, int8_t *out);
TP_API tp_status tp_gguf_get_u16(const tp_gguf *g, const char *key, uint16_t *out);
TP_API tp_status tp_gguf_get_i16(const tp_gguf *g, const char *key, int16_t *out);
TP_API tp_status tp_gguf_get_u32(const tp_gguf *g, const char *key, uint32_t *out);
TP_API tp_status tp_gguf_get_i32(const tp_gguf *g, const char *key, int32_t *out);
TP_API tp_status tp_gguf_get_u64(const tp_gguf *g, const char *key, uint64_t *out);
TP_API tp_status tp_gguf_get_i64(const tp_gguf *g, const char *key, int64_t *out);
TP_API tp_status tp_gguf_get_f32(const tp_gguf *g, const char *key, float *out);
TP_API tp_status tp_gguf_get_f64(const tp_gguf *g, const char *key, double *out);
TP_API tp_status tp_gguf_get_bool(const tp_gguf *g, const char *key, int *out);
TP_API tp_status tp_gguf_get_string(const tp_gguf *g, const char *key, tp_gguf_str *out);
/* An array whose elements are of type ELEM (TP_GGUF_ARRAY here means: any element type);
 * a wrong element type is refused like a wrong type ("expected array of u32, got array of
 * i32"). */
TP_API tp_status tp_gguf_get_array(const tp_gguf *g, const char *key, tp_gguf_vtype elem,
                                   tp_gguf_array *out);

/* Element i (< count) of a numeric or bool array: its little-endian bytes, zero-extended. */
TP_API uint64_t tp_gguf_array_bits(const tp_gguf_array *a, size_t i);
/* Element i (< count) of an f32 array, its bits as stored; 0 past the end or for another
 * element type. */
TP_API float tp_gguf_array_f32(const tp_gguf_array *a, size_t i);
/* Element i (< count) of a string array. */
TP_API tp_gguf_str tp_gguf_array_string(const tp_gguf_array *a, size_t i);
/* A numeric or bool value given as TYPE and its bits (tp_gguf_kv.bits, tp_gguf_array_bits)
 * as a double (exact up to 2^53); 0 for strings and arrays. */
TP_API double tp_gguf_bits_to_double(tp_gguf_vtype type, uint64_t bits);

/* Tensors in file order, and by name (NULL when absent). */
TP_API size_t tp_gguf_tensor_count(const tp_gguf *g);
TP_API const tp_gguf_tensor *tp_gguf_tensor_at(const tp_gguf *g, size_t i);
TP_API const tp_gguf_tensor *tp_gguf_find_tensor(const tp_gguf *g, const char *name);

/* "u32", "string", "array", ...; "?" for an id out of range. */
TP_API const char *tp_gguf_vtype_name(uint32_t type);
/* "F32", "Q8_0", "IQ2_XXS", ...; NULL for an id no file may use (retired or unknown). */
TP_API const char *tp_gguf_type_name(uint32_t type);
/* Elements and bytes per block of a tensor type the reader accepts; 0 for the others
 * (retired, unknown, or known but not supported). */
TP_API size_t tp_gguf_type_block_elems(uint32_t type);
TP_API size_t tp_gguf_type_block_bytes(uint32_t type);
/* Bytes of a tensor of TYPE and shape ne[0..n_dims) (missing dimensions 1). TP_ERR_INVALID
 * for a type the reader refuses, a negative dimension or ne[0] not a multiple of the block
 * (ne[0] is 1 when n_dims is 0);
 * TP_ERR_OVERFLOW when the element count or the bytes do not fit in int64_t / size_t. */
TP_API tp_status tp_gguf_tensor_nbytes(uint32_t type, uint32_t n_dims, const int64_t *ne,
                                       size_t *nbytes);

/* Reads every stored value of tensor t (from t->data) and counts the NaNs and infinities:
 * *n_bad of them, the first at element *first (0 when none). Float types are read as they
 * are, block types dequantized block by block (Q8_1 and Q8_K as scale times quant, a Q8_1
 * block with a non-finite sum counted whole), integer types are always finite. */
TP_API tp_status tp_gguf_tensor_check_finite(const tp_gguf_tensor *t, uint64_t *n_bad,
                                             uint64_t *first);

/* The writer: metadata in the order added, then tensors in the order added, laid out with
 * the alignment of a general.alignment u32 key (default 32): data section at
 * PAD(end of infos), each tensor at the running sum of the padded sizes before it. */
typedef struct tp_gguf_writer tp_gguf_writer;

TP_API tp_status tp_gguf_writer_create(tp_gguf_writer **out);
TP_API void tp_gguf_writer_destroy(tp_gguf_writer *w);
/* The file version to write, 2 or 3 (default 3). */
TP_API tp_status tp_gguf_writer_set_version(tp_gguf_writer *w, uint32_t version);

/* Adds one key (non-empty, not yet added; TP_ERR_INVALID otherwise). A general.alignment key
 * must be u32 and a non-zero power of two; it sets the layout's alignment. */
TP_API tp_status tp_gguf_writer_add_u8(tp_gguf_writer *w, const char *key, uint8_t v);
TP_API tp_status tp_gguf_writer_add_i8(tp_gguf_writer *w, const char *key, int8_t v);
TP_API tp_status tp_gguf_writer_add_u16(tp_gguf_writer *w, const char *key, uint16_t v);
TP_API tp_status tp_gguf_writer_add_i16(tp_gguf_writer *w, const char *key, int16_t v);
TP_API tp_status tp_gguf_writer_add_u32(tp_gguf_writer *w, const char *key, uint32_t v);
TP_API tp_status tp_gguf_writer_add_i32(tp_gguf_writer *w, const char *key, int32_t v);
TP_API tp_status tp_gguf_writer_add_u64(tp_gguf_writer *w, const char *key, uint64_t v);
TP_API tp_status tp_gguf_writer_add_i64(tp_gguf_writer *w, const char *key, int64_t v);
TP_API tp_status tp_gguf_writer_add_f32(tp_gguf_writer *w, const char *key, float v);
TP_API tp_status tp_gguf_writer_add_f64(tp_gguf_writer *w, const char *key, double v);
TP_API tp_status tp_gguf_writer_add_bool(tp_gguf_writer *w, const char *key, int v);
TP_API tp_status tp_gguf_writer_add_string(tp_gguf_writer *w, const char *key, const char *v);
/* An array of count numbers or bools of type ELEM, packed in host order at data (copied). */
TP_API tp_status tp_gguf_writer_add_array(tp_gguf_writer *w, const char *key, tp_gguf_vtype elem,
                                          const void *data, size_t count);
/* An array of count NUL-terminated strings (copied). */
TP_API tp_status tp_gguf_writer_add_strings(tp_gguf_writer *w, const char *key,
                                            const char *const *strings, size_t count);

/* Adds a tensor (unique name of at most 63 bytes, n_dims <= 4, a type the reader accepts).
 * nbytes must equal tp_gguf_tensor_nbytes of the shape. The bytes are not copied: data must
 * stay valid until the last write. */
TP_API tp_status tp_gguf_writer_add_tensor(tp_gguf_writer *w, const char *name, uint32_t type,
                                           uint32_t n_dims, const int64_t *ne, const void *data,
                                           size_t nbytes);

/* Writes the file through a temporary file in the same folder renamed at the end, so a
 * failure leaves no partial file (TP_ERR_IO). */
TP_API tp_status tp_gguf_writer_write(const tp_gguf_writer *w, const char *path);
/* The file's bytes in memory; the caller frees *out with free(). */
TP_API tp_status tp_gguf_writer_to_memory(const tp_gguf_writer *w, void **out, size_t *size);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_GGUF_H */
