/* Reading a file or a stream whole, refusing what cannot be read to an end
 * (src/common/input_file.h). */
#include "common/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"

static const char *kind_of(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISDIR(m))
        return "a directory";
    return "not a regular file";
}

tp_status tp_input_open(const char *path, int *fd, size_t *size)
{
    *fd = -1;
    *size = 0;
    const int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return tp_fail(TP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        const int e = errno;
        close(f);
        return tp_fail(TP_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return tp_fail(S_ISDIR(st.st_mode) ? TP_ERR_IO : TP_ERR_INVALID,
                       "%s: cannot read: %s, not a regular file", path, kind_of(st.st_mode));
    }
    const int flags = fcntl(f, F_GETFL);
    if (flags >= 0)
        (void)fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    *fd = f;
    *size = (size_t)st.st_size;
    return TP_OK;
}

tp_status tp_input_read_stream(FILE *f, const char *name, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return tp_fail(TP_ERR_NOMEM, "%s: out of memory", name);
    for (;;) {
        if (n == cap) {
            if (cap > TP_INPUT_MAX) {
                free(buf);
                return tp_fail(TP_ERR_INVALID, "%s: more than %zu bytes (the most a file or "
                               "standard input may hold)", name, TP_INPUT_MAX);
            }
            /* one byte past the limit is enough to know it is passed */
            const size_t next = 2 * cap > TP_INPUT_MAX + 1 ? TP_INPUT_MAX + 1 : 2 * cap;
            char *grown = realloc(buf, next + 1);
            if (!grown) {
                free(buf);
                return tp_fail(TP_ERR_NOMEM, "%s: out of memory", name);
            }
            buf = grown;
            cap = next;
        }
        const size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        const int e = errno;
        free(buf);
        return tp_fail(TP_ERR_IO, "%s: cannot read: %s", name, e ? strerror(e) : "read error");
    }
    if (n > TP_INPUT_MAX) {
        free(buf);
        return tp_fail(TP_ERR_INVALID, "%s: more than %zu bytes (the most a file or standard "
                       "input may hold)", name, TP_INPUT_MAX);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return TP_OK;
}

tp_status tp_input_read_file(const char *path, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = -1;
    size_t size = 0;
    TP_TRY(tp_input_open(path, &fd, &size));
    if (size > TP_INPUT_MAX) {
        close(fd);
        return tp_fail(TP_ERR_INVALID, "%s: %zu bytes, more than %zu (the most a file may "
                       "hold)", path, size, TP_INPUT_MAX);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        const int e = errno;
        close(fd);
        return tp_fail(TP_ERR_NOMEM, "%s: cannot read: %s", path, strerror(e));
    }
    const tp_status st = tp_input_read_stream(f, path, data, len);
    fclose(f);
    return st;
}
