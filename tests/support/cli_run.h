/* Test support: runs the built tensorplan binary through the shell, with stdout and stderr
 * captured in files of a temporary folder and read back. */
#ifndef TP_TESTS_CLI_RUN_H
#define TP_TESTS_CLI_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifndef TP_CLI_PATH
#error "TP_CLI_PATH must name the built tensorplan binary"
#endif

typedef struct cli_result {
    int rc;          /* exit status, or -1 when the program did not exit normally */
    char *out, *err; /* malloc'ed, NUL-terminated                                  */
    size_t out_len, err_len;
} cli_result;

static inline char *cli_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;
    if (f) {
        for (;;) {
            if (n + 4097 > cap) {
                cap = (n + 4097) * 2;
                buf = realloc(buf, cap);
                if (!buf)
                    abort();
            }
            size_t got = fread(buf + n, 1, cap - n - 1, f);
            n += got;
            if (got == 0)
                break;
        }
        fclose(f);
    }
    if (!buf && !(buf = malloc(1)))
        abort();
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Runs `tensorplan ARGS` (ARGS is shell text) in folder DIR's files out.txt / err.txt. */
static inline cli_result cli_run(const char *dir, const char *args)
{
    char cmd[8192], out[600], err[600];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", TP_CLI_PATH, args, out, err);
    cli_result r;
    int status = system(cmd);
    r.rc = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = cli_slurp(out, &r.out_len);
    r.err = cli_slurp(err, &r.err_len);
    return r;
}

static inline void cli_free(cli_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Removes the out.txt and err.txt that cli_run leaves in folder DIR. */
static inline void cli_remove_outputs(const char *dir)
{
    char p[600];
    snprintf(p, sizeof p, "%s/out.txt", dir);
    remove(p);
    snprintf(p, sizeof p, "%s/err.txt", dir);
    remove(p);
}

/* Copies cli_run's LEN bytes of TEXT into BUF of CAP bytes, cut to CAP - 1, NUL-terminated. */
static inline void cli_keep(char *buf, size_t cap, const char *text, size_t len)
{
    if (len > cap - 1)
        len = cap - 1;
    memcpy(buf, text, len);
    buf[len] = '\0';
}

/* Lines in text (the last need not end with a newline). */
static inline size_t cli_lines(const char *text)
{
    size_t n = 0, len = strlen(text);
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    return n + (len && text[len - 1] != '\n');
}

#endif
