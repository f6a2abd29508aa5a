/* Output files written in place or through a temporary file (output_file.h). */
#include "common/output_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

/* Runs write on f and closes it; TP_OK only when both the writing and the close worked. */
static tp_status write_and_close(const char *path, FILE *f, tp_output_fn write, void *ctx)
{
    errno = 0;
    tp_status st = write(f, ctx);
    int saved = errno;
    if (st == TP_OK && ferror(f))
        st = TP_ERR_IO;
    if (fclose(f) != 0 && st == TP_OK) {
        saved = errno;
        st = TP_ERR_IO;
    }
    if (st == TP_ERR_IO)
        st = tp_fail(TP_ERR_IO, "%s: cannot write: %s", path,
                     strerror(saved ? saved : EIO));
    return st;
}

/* Not a regular file that exists: written directly, never renamed onto or removed. */
static tp_status write_direct(const char *path, tp_output_fn write, void *ctx)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return tp_fail(TP_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    return write_and_close(path, f, write, ctx);
}

/* "-": standard output, flushed and left open. */
static tp_status write_stdout(tp_output_fn write, void *ctx)
{
    errno = 0;
    tp_status st = write(stdout, ctx);
    int saved = errno;
    if (st == TP_OK && (fflush(stdout) != 0 || ferror(stdout))) {
        saved = errno;
        st = TP_ERR_IO;
    }
    if (st == TP_ERR_IO)
        st = tp_fail(TP_ERR_IO, "standard output: cannot write: %s",
                     strerror(saved ? saved : EIO));
    return st;
}

tp_status tp_output_file(const char *path, tp_output_fn write, void *ctx)
{
    if (!path || !write)
        return tp_fail(TP_ERR_INVALID, "tp_output_file: NULL argument");
    if (strcmp(path, "-") == 0)
        return write_stdout(write, ctx);
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return write_direct(path, write, ctx);
    size_t n = strlen(path);
    char *tmp = malloc(n + sizeof ".tmp.XXXXXX");
    if (!tmp)
        return tp_fail(TP_ERR_NOMEM, "%s: out of memory", path);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        tp_status st = tp_fail(TP_ERR_IO, "%s: cannot open for writing: %s", path,
                               strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        free(tmp);
        return st;
    }
    /* mkstemp creates the file private (0600); an output is an ordinary file */
    (void)fchmod(fd, 0644);
    tp_status st = write_and_close(path, f, write, ctx);
    if (st == TP_OK && rename(tmp, path) != 0)
        st = tp_fail(TP_ERR_IO, "%s: cannot rename the temporary file onto it: %s", path,
                     strerror(errno));
    if (st != TP_OK)
        unlink(tmp);
    free(tmp);
    return st;
}
