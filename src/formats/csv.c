/* MiniMalloc CSV: reading problems and solutions, writing solutions. */
#include "tensorplan/csv.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/input_file.h"
#include "common/output_file.h"
#include "common/grow.h"
#include "common/hash.h"
#include "formats/csv_internal.h"

enum { COL_ID, COL_LOWER, COL_UPPER, COL_SIZE, COL_OFFSET, COL_ALIGNMENT, COL_GAPS, COL_COUNT };
static const char *const column_names[COL_COUNT] = {"id",     "lower",     "upper", "size",
                                                    "offset", "alignment", "gaps"};

/* Header spellings MiniMalloc accepts for the same columns (docs/planner.md, "CSV"). An
 * `end` column holds the last time step, inclusive: upper = end + 1. */
static const struct { const char *name; int column, inclusive; } column_aliases[] = {
    {"buffer", COL_ID, 0}, {"buffer_id", COL_ID, 0}, {"start", COL_LOWER, 0},
    {"begin", COL_LOWER, 0}, {"end", COL_UPPER, 1},
};

typedef struct field {
    const char *text; /* raw characters, quotes stripped but "" not yet undoubled */
    size_t length;
    int quoted;
} field;

typedef struct parser {
    const char *name;
    unsigned flags;
    size_t line;
    field *fields;
    size_t field_cap;
    size_t field_count;
    /* rows */
    size_t count, cap;
    tp_tensor_lifetime *tensors;
    size_t *lines;
    size_t *offsets;
    unsigned char *negative;
    size_t *alignments;
    tp_tensor_gap *gaps;
    size_t gap_count, gap_cap;
    int end_inclusive; /* the upper column is MiniMalloc's `end` */
    size_t *id_at; /* offset of each id in storage */
    char *storage;
    size_t storage_len, storage_cap;
    /* duplicate ids: open addressing over row+1, 0 = empty */
    size_t *slots;
    size_t slot_mask;
} parser;

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Quotes at most 40 characters of a field for a message, so one line stays one line. */
static void excerpt(const field *f, char *buf, size_t cap)
{
    size_t n = f->length < 40 ? f->length : 40;
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < cap; i++) {
        unsigned char c = (unsigned char)f->text[i];
        buf[j++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (f->length > n && j + 4 < cap) {
        memcpy(buf + j, "...", 3);
        j += 3;
    }
    buf[j] = '\0';
}

static tp_status push_field(parser *p, const char *text, size_t length, int quoted)
{
    tp_status st = TP_GROW(&p->fields, &p->field_cap, p->field_count + 1);
    if (st != TP_OK)
        return st;
    p->fields[p->field_count++] = (field){text, length, quoted};
    return TP_OK;
}

/* Splits one line (without its line end) into fields. A quoted field must close on the same
 * line: a newline inside quotes is far more often a forgotten quote than an id with a line
 * break, and refusing it keeps every error on the line where it happened. */
static tp_status split_line(parser *p, const char *s, const char *e)
{
    p->field_count = 0;
    const char *pos = s;
    for (;;) {
        while (pos < e && is_blank(*pos))
            pos++;
        size_t k = p->field_count + 1;
        tp_status st;
        if (pos < e && *pos == '"') {
            const char *start = ++pos;
            for (;;) {
                if (pos >= e)
                    return tp_fail(TP_ERR_INVALID,
                                   "%s:%zu: field %zu: unbalanced quote: expected a closing '\"' "
                                   "on the same line",
                                   p->name, p->line, k);
                if (*pos == '"') {
                    if (pos + 1 < e && pos[1] == '"') {
                        pos += 2;
                        continue;
                    }
                    break;
                }
                pos++;
            }
            const char *end = pos++;
            while (pos < e && is_blank(*pos))
                pos++;
            if (pos < e && *pos != ',')
                return tp_fail(TP_ERR_INVALID,
                               "%s:%zu: field %zu: expected ',' or the end of the line after the "
                               "closing quote",
                               p->name, p->line, k);
            st = push_field(p, start, (size_t)(end - start), 1);
        } else {
            const char *start = pos;
            while (pos < e && *pos != ',') {
                if (*pos == '"')
                    return tp_fail(TP_ERR_INVALID,
                                   "%s:%zu: field %zu: unbalanced quote: a '\"' inside an unquoted "
                                   "field (expected the whole field quoted, inner quotes doubled)",
                                   p->name, p->line, k);
                pos++;
            }
            const char *end = pos;
            while (end > start && is_blank(end[-1]))
                end--;
            st = push_field(p, start, (size_t)(end - start), 0);
        }
        if (st != TP_OK)
            return st;
        if (pos < e && *pos == ',') {
            pos++;
            continue;
        }
        return TP_OK;
    }
}

/* Undoes "" inside a quoted field into dst (room for f->length + 1); returns the length. */
static size_t unquote(const field *f, char *dst)
{
    size_t j = 0;
    for (size_t i = 0; i < f->length; i++) {
        dst[j++] = f->text[i];
        if (f->quoted && f->text[i] == '"')
            i++; /* the second quote of a doubled pair */
    }
    dst[j] = '\0';
    return j;
}

static int name_equals(const field *f, const char *name)
{
    const char *t = f->text;
    size_t n = f->length;
    while (n > 0 && is_blank(*t)) {
        t++;
        n--;
    }
    while (n > 0 && is_blank(t[n - 1]))
        n--;
    if (strlen(name) != n)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != name[i])
            return 0;
    }
    return 1;
}

/* Parses a decimal integer. *negative is set for "-digits" only when allow_negative. */
static tp_status parse_number(parser *p, const field *f, const char *column, int allow_negative,
                              size_t *value, unsigned char *negative)
{
    const char *t = f->text;
    size_t n = f->length;
    while (n > 0 && is_blank(*t)) { /* inside quotes, spaces are still only padding */
        t++;
        n--;
    }
    while (n > 0 && is_blank(t[n - 1]))
        n--;
    char shown[64];
    excerpt(f, shown, sizeof shown);
    if (n == 0)
        return tp_fail(TP_ERR_INVALID, "%s:%zu: column '%s' is empty: expected a non-negative integer",
                       p->name, p->line, column);
    int neg = 0;
    if (*t == '-' || *t == '+') {
        neg = *t == '-';
        t++;
        n--;
    }
    if (n == 0)
        return tp_fail(TP_ERR_INVALID,
                       "%s:%zu: column '%s' is '%s': expected a non-negative integer", p->name,
                       p->line, column, shown);
    size_t v = 0;
    int overflow = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9')
            return tp_fail(TP_ERR_INVALID,
                           "%s:%zu: column '%s' is '%s': expected a non-negative integer", p->name,
                           p->line, column, shown);
        size_t d = (size_t)(t[i] - '0');
        if (v > (SIZE_MAX - d) / 10)
            overflow = 1;
        else
            v = v * 10 + d;
    }
    if (neg && !allow_negative && !(v == 0 && !overflow))
        return tp_fail(TP_ERR_INVALID,
                       "%s:%zu: column '%s' is '%s': expected a non-negative integer", p->name,
                       p->line, column, shown);
    if (overflow)
        return tp_fail(TP_ERR_OVERFLOW,
                       "%s:%zu: column '%s' is '%s': out of range, expected at most %zu", p->name,
                       p->line, column, shown, (size_t)SIZE_MAX);
    *value = v;
    if (negative)
        *negative = (unsigned char)(neg && v != 0);
    return TP_OK;
}

static size_t hash_id(const char *s)
{
    return (size_t)tp_hash_name(s);
}

/* Inserts row `row` into the duplicate table; returns the row that already had the same id,
 * or SIZE_MAX. Rows index into storage by offset, so the table survives storage growth. */
static tp_status insert_id(parser *p, size_t row, size_t *existing)
{
    *existing = SIZE_MAX;
    if (2 * (row + 1) > p->slot_mask) { /* keep the load at most one half */
        size_t cap = p->slot_mask ? 2 * (p->slot_mask + 1) : 64;
        size_t *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return tp_fail(TP_ERR_NOMEM, "%s: out of memory", p->name);
        for (size_t i = 0; p->slots && i <= p->slot_mask; i++) {
            if (!p->slots[i])
                continue;
            size_t h = hash_id(p->storage + p->id_at[p->slots[i] - 1]) & (cap - 1);
            while (slots[h])
                h = (h + 1) & (cap - 1);
            slots[h] = p->slots[i];
        }
        free(p->slots);
        p->slots = slots;
        p->slot_mask = cap - 1;
    }
    const char *id = p->storage + p->id_at[row];
    size_t h = hash_id(id) & p->slot_mask;
    while (p->slots[h]) {
        size_t other = p->slots[h] - 1;
        if (strcmp(p->storage + p->id_at[other], id) == 0) {
            *existing = other;
            return TP_OK;
        }
        h = (h + 1) & p->slot_mask;
    }
    p->slots[h] = row + 1;
    return TP_OK;
}

static tp_status grow_rows(parser *p)
{
    if (p->count < p->cap)
        return TP_OK;
    /* six parallel arrays of one capacity: tp_grow gives each the same new one */
    size_t c_t = p->cap, c_l = p->cap, c_o = p->cap, c_n = p->cap, c_a = p->cap, c_g = p->cap;
    tp_status st = TP_GROW(&p->tensors, &c_t, p->count + 1);
    if (st == TP_OK)
        st = TP_GROW(&p->lines, &c_l, p->count + 1);
    if (st == TP_OK)
        st = TP_GROW(&p->offsets, &c_o, p->count + 1);
    if (st == TP_OK)
        st = TP_GROW(&p->negative, &c_n, p->count + 1);
    if (st == TP_OK)
        st = TP_GROW(&p->id_at, &c_a, p->count + 1);
    if (st == TP_OK)
        st = TP_GROW(&p->alignments, &c_g, p->count + 1);
    if (st != TP_OK)
        return st;
    p->cap = c_t;
    return TP_OK;
}

static tp_status store_id(parser *p, const field *f, size_t *at)
{
    size_t need = p->storage_len + f->length + 1;
    tp_status st = TP_GROW(&p->storage, &p->storage_cap, need);
    if (st != TP_OK)
        return st;
    *at = p->storage_len;
    p->storage_len += unquote(f, p->storage + p->storage_len) + 1;
    return TP_OK;
}

static tp_status parse_header(parser *p, size_t col_of[COL_COUNT], size_t *ncols)
{
    for (int c = 0; c < COL_COUNT; c++)
        col_of[c] = SIZE_MAX;
    *ncols = p->field_count;
    for (size_t i = 0; i < p->field_count; i++) {
        for (int c = 0; c < COL_COUNT; c++) {
            int alias = 0;
            for (size_t k = 0; k < sizeof column_aliases / sizeof *column_aliases; k++)
                if (column_aliases[k].column == c && name_equals(&p->fields[i], column_aliases[k].name))
                    alias = 1 + column_aliases[k].inclusive;
            if (!alias && !name_equals(&p->fields[i], column_names[c]))
                continue;
            if (alias == 2)
                p->end_inclusive = 1;
            if (col_of[c] != SIZE_MAX)
                return tp_fail(TP_ERR_INVALID,
                               "%s:%zu: header names column '%s' twice (fields %zu and %zu): "
                               "expected each column once",
                               p->name, p->line, column_names[c], col_of[c] + 1, i + 1);
            col_of[c] = i;
        }
    }
    int need_offset = (p->flags & TP_CSV_REQUIRE_OFFSET) != 0;
    for (int c = 0; c < COL_COUNT; c++) {
        if (col_of[c] != SIZE_MAX || (c == COL_OFFSET && !need_offset) || c >= COL_ALIGNMENT)
            continue;
        return tp_fail(TP_ERR_INVALID,
                       "%s:%zu: header has no column '%s': expected a header naming %s in any "
                       "order",
                       p->name, p->line, column_names[c],
                       need_offset ? "id,lower,upper,size,offset" : "id,lower,upper,size");
    }
    return TP_OK;
}

static tp_status parse_row(parser *p, const size_t col_of[COL_COUNT], size_t ncols)
{
    if (p->field_count != ncols)
        return tp_fail(TP_ERR_INVALID, "%s:%zu: %s row: expected %zu fields as in the header, found %zu",
                       p->name, p->line, p->field_count < ncols ? "short" : "long", ncols,
                       p->field_count);
    tp_status st = grow_rows(p);
    if (st != TP_OK)
        return st;
    size_t row = p->count;
    const field *idf = &p->fields[col_of[COL_ID]];
    if (idf->length == 0)
        return tp_fail(TP_ERR_INVALID, "%s:%zu: column 'id' is empty: expected a non-empty id",
                       p->name, p->line);
    size_t lower = 0, upper = 0, size = 0, offset = 0;
    unsigned char negative = 0;
    if ((st = parse_number(p, &p->fields[col_of[COL_LOWER]], "lower", 0, &lower, NULL)) ||
        (st = parse_number(p, &p->fields[col_of[COL_UPPER]], "upper", 0, &upper, NULL)) ||
        (st = parse_number(p, &p->fields[col_of[COL_SIZE]], "size", 0, &size, NULL)))
        return st;
    if (col_of[COL_OFFSET] != SIZE_MAX &&
        (st = parse_number(p, &p->fields[col_of[COL_OFFSET]], "offset",
                           (p->flags & TP_CSV_SIGNED_OFFSETS) != 0, &offset, &negative)))
        return st;
    if (p->end_inclusive) {
        if (upper == SIZE_MAX)
            return tp_fail(TP_ERR_OVERFLOW, "%s:%zu: column 'end' is %zu: out of range, "
                           "expected at most %zu", p->name, p->line, upper, (size_t)SIZE_MAX - 1);
        upper++;
    }
    size_t alignment = 1;
    if (col_of[COL_ALIGNMENT] != SIZE_MAX) {
        if ((st = parse_number(p, &p->fields[col_of[COL_ALIGNMENT]], "alignment", 0, &alignment,
                               NULL)) != TP_OK)
            return st;
        if (alignment == 0)
            return tp_fail(TP_ERR_INVALID, "%s:%zu: column 'alignment' is 0: expected a "
                           "positive integer", p->name, p->line);
    }
    if (lower >= upper)
        return tp_fail(TP_ERR_INVALID,
                       "%s:%zu: lower %zu >= upper %zu: expected lower < upper (lifetimes are "
                       "half-open [lower, upper))",
                       p->name, p->line, lower, upper);
    if ((st = store_id(p, idf, &p->id_at[row])) != TP_OK)
        return st;
    size_t existing;
    if ((st = insert_id(p, row, &existing)) != TP_OK)
        return st;
    if (existing != SIZE_MAX)
        return tp_fail(TP_ERR_INVALID, "%s:%zu: duplicate id '%s' (first on line %zu): expected unique ids",
                       p->name, p->line, p->storage + p->id_at[row], p->lines[existing]);
    if (col_of[COL_GAPS] != SIZE_MAX) {
        const field *g = &p->fields[col_of[COL_GAPS]];
        const tp_csv_gap_row r = {p->name, p->line, row, lower, upper, size, p->end_inclusive};
        if ((st = tp_csv_parse_gaps(&r, g->text, g->length, &p->gaps, &p->gap_count,
                                    &p->gap_cap)) != TP_OK)
            return st;
    }
    p->alignments[row] = alignment;
    p->tensors[row] = (tp_tensor_lifetime){size, lower, upper - 1};
    p->lines[row] = p->line;
    p->offsets[row] = offset;
    p->negative[row] = negative;
    p->count++;
    return TP_OK;
}

static int line_is_blank(const char *s, const char *e)
{
    for (; s < e; s++)
        if (!is_blank(*s))
            return 0;
    return 1;
}

static tp_status parse_all(parser *p, const char *data, size_t length, int *has_offset,
                           int *has_alignment)
{
    const char *pos = data, *end = data + length;
    if (length >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        pos += 3;
    size_t col_of[COL_COUNT];
    size_t ncols = 0;
    int have_header = 0;
    size_t blank_line = 0; /* the first blank line of the current run of blank lines */
    for (p->line = 1; pos < end; p->line++) {
        const char *nl = memchr(pos, '\n', (size_t)(end - pos));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (le > pos && le[-1] == '\r')
            le--;
        /* ids are C strings: a NUL would silently cut one short and merge distinct ids */
        if (le > pos && memchr(pos, '\0', (size_t)(le - pos)))
            return tp_fail(TP_ERR_INVALID, "%s:%zu: a NUL byte: expected text", p->name, p->line);
        if (line_is_blank(pos, le)) {
            if (!blank_line)
                blank_line = p->line;
            pos = next;
            continue;
        }
        if (blank_line) {
            size_t here = p->line;
            return tp_fail(TP_ERR_INVALID,
                           "%s:%zu: blank line before line %zu: expected %s", p->name, blank_line,
                           here, have_header ? "one row per line up to the end of the data"
                                             : "the header on the first line");
        }
        tp_status st = split_line(p, pos, le);
        if (st != TP_OK)
            return st;
        if (!have_header) {
            if ((st = parse_header(p, col_of, &ncols)) != TP_OK)
                return st;
            have_header = 1;
        } else if ((st = parse_row(p, col_of, ncols)) != TP_OK) {
            return st;
        }
        pos = next;
    }
    if (!have_header)
        return tp_fail(TP_ERR_INVALID,
                       "%s:1: empty file: expected a header line such as id,lower,upper,size",
                       p->name);
    *has_offset = col_of[COL_OFFSET] != SIZE_MAX;
    *has_alignment = col_of[COL_ALIGNMENT] != SIZE_MAX;
    return TP_OK;
}

static void parser_free(parser *p)
{
    free(p->fields);
    free(p->tensors);
    free(p->lines);
    free(p->offsets);
    free(p->negative);
    free(p->alignments);
    free(p->gaps);
    free(p->id_at);
    free(p->storage);
    free(p->slots);
}

tp_status tp_csv_parse(const char *name, const char *data, size_t length, unsigned flags,
                       tp_csv_table *out)
{
    if (!name || (!data && length) || !out)
        return tp_fail(TP_ERR_INVALID, "tp_csv_parse: NULL argument");
    memset(out, 0, sizeof *out);
    parser p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.flags = flags;
    int has_offset = 0, has_alignment = 0;
    /* Allocating up front means an empty table still has non-NULL arrays. */
    tp_status st = grow_rows(&p);
    if (st == TP_OK) {
        p.storage = malloc(256);
        p.storage_cap = 256;
        if (!p.storage)
            st = tp_fail(TP_ERR_NOMEM, "%s: out of memory", name);
    }
    if (st == TP_OK)
        st = parse_all(&p, data ? data : "", length, &has_offset, &has_alignment);
    if (st == TP_OK) {
        out->path = malloc(strlen(name) + 1);
        out->ids = malloc((p.count ? p.count : 1) * sizeof *out->ids);
        if (!out->path || !out->ids) {
            free(out->path);
            free(out->ids);
            memset(out, 0, sizeof *out);
            st = tp_fail(TP_ERR_NOMEM, "%s: out of memory", name);
        }
    }
    if (st != TP_OK) {
        parser_free(&p);
        return st;
    }
    strcpy(out->path, name);
    out->count = p.count;
    for (size_t i = 0; i < p.count; i++)
        out->ids[i] = p.storage + p.id_at[i];
    out->storage_ = p.storage;
    out->tensors = p.tensors;
    out->lines = p.lines;
    if (has_offset) {
        out->offsets = p.offsets;
        p.offsets = NULL;
        if (flags & TP_CSV_SIGNED_OFFSETS) {
            out->offset_negative = p.negative;
            p.negative = NULL;
        }
    }
    if (has_alignment) {
        out->alignments = p.alignments;
        p.alignments = NULL;
    }
    out->gaps = p.gaps;
    out->gap_count = p.gap_count;
    p.gaps = NULL;
    p.storage = NULL;
    p.tensors = NULL;
    p.lines = NULL;
    parser_free(&p);
    tp_clear_error();
    return TP_OK;
}

tp_status tp_csv_read(const char *path, unsigned flags, tp_csv_table *out)
{
    if (!path || !out)
        return tp_fail(TP_ERR_INVALID, "tp_csv_read: NULL argument");
    memset(out, 0, sizeof *out);
    char *data = NULL;
    size_t len = 0;
    TP_TRY(tp_input_read_file(path, &data, &len));
    tp_status st = tp_csv_parse(path, data, len, flags, out);
    free(data);
    return st;
}

void tp_csv_free(tp_csv_table *table)
{
    if (!table)
        return;
    free(table->path);
    free(table->ids);
    free(table->tensors);
    free(table->lines);
    free(table->offsets);
    free(table->offset_negative);
    free(table->alignments);
    free(table->gaps);
    free(table->storage_);
    memset(table, 0, sizeof *table);
}

static int id_needs_quotes(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || is_blank(id[0]) || is_blank(id[n - 1]))
        return 1;
    return strpbrk(id, ",\"\r\n") != NULL;
}

tp_status tp_csv_write_solution_stream(FILE *out, const tp_csv_table *table, const size_t *offsets)
{
    if (!out || !table || (table->count && !offsets))
        return tp_fail(TP_ERR_INVALID, "tp_csv_write_solution_stream: NULL argument");
    fputs("id,lower,upper,size,offset\n", out);
    for (size_t i = 0; i < table->count; i++) {
        const char *id = table->ids[i];
        if (id_needs_quotes(id)) {
            fputc('"', out);
            for (const char *c = id; *c; c++) {
                if (*c == '"')
                    fputc('"', out);
                fputc(*c, out);
            }
            fputc('"', out);
        } else {
            fputs(id, out);
        }
        const tp_tensor_lifetime *t = &table->tensors[i];
        fprintf(out, ",%zu,%zu,%zu,%zu\n", t->first_use, t->last_use + 1, t->size, offsets[i]);
    }
    if (ferror(out))
        return tp_fail(TP_ERR_IO, "cannot write the solution: %s", strerror(errno));
    return TP_OK;
}

typedef struct solution_out {
    const tp_csv_table *table;
    const size_t *offsets;
} solution_out;

static tp_status write_solution(FILE *f, void *ctx)
{
    const solution_out *o = ctx;
    return tp_csv_write_solution_stream(f, o->table, o->offsets);
}

tp_status tp_csv_write_solution(const char *path, const tp_csv_table *table, const size_t *offsets)
{
    if (!path)
        return tp_fail(TP_ERR_INVALID, "tp_csv_write_solution: NULL path");
    solution_out o = {table, offsets};
    return tp_output_file(path, write_solution, &o);
}
