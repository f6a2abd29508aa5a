/* The command line's shared pieces for GGUF models: a file's tokenizer, text arguments and
 * id lists (tools/cli_gguf.h). */
#include "cli_gguf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli.h"
#include "common/grow.h"
#include "common/input_file.h"
#include "tensorplan/gguf_model.h"

int tp_cli_is_gguf(const char *path)
{
    size_t len = strlen(path);
    if (len >= 5 && strcasecmp(path + len - 5, ".gguf") == 0)
        return 1;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char magic[4] = {0};
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return got == sizeof magic && memcmp(magic, "GGUF", 4) == 0;
}

int tp_cli_names_file(const char *name)
{
    if (strchr(name, '/') != NULL)
        return 1;
    struct stat st;
    /* lstat: a dangling link or a link loop is still a name in the folder */
    return lstat(name, &st) == 0;
}

int tp_cli_open_tokenizer(const char *path, tp_gguf **g, tp_tokenizer **tok)
{
    *g = NULL;
    *tok = NULL;
    tp_status st = tp_gguf_open(path, g);
    if (st == TP_OK)
        st = tp_gguf_tokenizer(*g, tok);
    if (st == TP_OK)
        return TP_EXIT_OK;
    tp_cli_error("%s", tp_last_error());
    tp_gguf_close(*g);
    *g = NULL;
    return tp_cli_exit_for(st);
}

int tp_cli_read_text(const char *arg, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    if (strcmp(arg, "-") != 0) {
        *len = strlen(arg);
        *text = malloc(*len + 1);
        if (!*text) {
            tp_cli_error("out of memory");
            return TP_EXIT_ERROR;
        }
        memcpy(*text, arg, *len + 1);
        return TP_EXIT_OK;
    }
    tp_status st = tp_input_read_stream(stdin, "standard input", text, len);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return tp_cli_exit_for(st);
    }
    return TP_EXIT_OK;
}

int tp_cli_parse_ids(const char *what, const char *text, size_t n_vocab, int32_t **ids,
                     size_t *n)
{
    int32_t *out = NULL;
    size_t cap = 0, k = 0;
    const char *p = text;
    for (;;) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char *end = NULL;
        errno = 0;
        unsigned long long v = isdigit((unsigned char)*p) ? strtoull(p, &end, 10) : 0;
        if (!end || end == p || (*end && *end != ',' && !isspace((unsigned char)*end))) {
            tp_cli_error("%s: expected token ids separated by commas or spaces at '%.20s'",
                         what, p);
            free(out);
            return -1;
        }
        if (errno == ERANGE || v >= n_vocab) {
            tp_cli_error("%s: token id %.*s is not below the vocabulary size %zu", what,
                         (int)(end - p), p, n_vocab);
            free(out);
            return -1;
        }
        if (TP_GROW(&out, &cap, k + 1) != TP_OK) {
            tp_cli_error("%s", tp_last_error());
            free(out);
            return -1;
        }
        out[k++] = (int32_t)v;
        p = end;
    }
    if (k == 0) {
        tp_cli_error("%s: no token ids", what);
        return -1;
    }
    *ids = out;
    *n = k;
    return 0;
}
