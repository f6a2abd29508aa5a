/* Internal to the library: how every writer puts a file in place.
 *
 * An output path that is a regular file, or does not exist yet, is written to a temporary
 * file beside it and renamed onto it at the end, so a failed write leaves the old file (or
 * nothing) and never a partial one. A path that exists and is anything else -- /dev/null, a
 * FIFO, a terminal, /dev/stdout -- is opened and written directly: renaming onto it or
 * removing it after a failure would replace or delete the device itself (as root, a solution
 * written to /dev/null once turned /dev/null into a regular file). */
#ifndef TP_COMMON_OUTPUT_FILE_H
#define TP_COMMON_OUTPUT_FILE_H

#include <stdio.h>

#include "tensorplan/status.h"

/* Writes the whole output to f; a status other than TP_OK aborts the file. A TP_ERR_IO (or
 * an error on f, or a failed close) is reported as "PATH: cannot write: <errno text>", in
 * place of any message the function left. */
typedef tp_status (*tp_output_fn)(FILE *f, void *ctx);

/* PATH "-" is standard output (written, flushed, left open), for every writer alike. */
tp_status tp_output_file(const char *path, tp_output_fn write, void *ctx);

#endif
