/* Internal to the library: how every reader takes a file or a stream.
 *
 * A path is opened without blocking (a FIFO opened for reading would wait for a writer) and
 * must be a regular file: a FIFO, a device or a socket is refused (TP_ERR_INVALID) before a
 * byte is read, a directory is TP_ERR_IO. What is read whole (a file or standard input) is
 * bounded by TP_INPUT_MAX bytes; more is refused (TP_ERR_INVALID) instead of filling memory. */
#ifndef TP_COMMON_INPUT_FILE_H
#define TP_COMMON_INPUT_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "tensorplan/status.h"

/* 256 MiB: the most a CSV, graph or plan file, or a text on standard input, may hold. */
#define TP_INPUT_MAX ((size_t)1 << 28)

/* Opens PATH read-only: TP_OK with *fd (blocking again) and *size from fstat, or a refusal
 * naming PATH and what it is ("a FIFO", "a character device", ...). */
tp_status tp_input_open(const char *path, int *fd, size_t *size);

/* All of stream F (NAME in messages), at most TP_INPUT_MAX bytes: *data malloc'ed and
 * NUL-terminated after *len bytes. */
tp_status tp_input_read_stream(FILE *f, const char *name, char **data, size_t *len);

/* All of file PATH: tp_input_open, then as tp_input_read_stream. */
tp_status tp_input_read_file(const char *path, char **data, size_t *len);

#endif
