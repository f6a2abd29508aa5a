/* tensorplan: the version of the headers and of the library.
 *
 * Example:
 *
 *     if (strcmp(tp_version(), TP_VERSION_STRING) != 0)
 *         fprintf(stderr, "built against %s, running with %s\n", TP_VERSION_STRING, tp_version());
 *
 * The macros say which version a program was compiled against; tp_version() says which
 * library it runs with (they differ when a shared library was replaced). The build reads
 * its version from this file (CMakeLists.txt), so it is written in one place only. The
 * shared library's soname carries TP_VERSION_MAJOR (libtensorplan.so.MAJOR). */
#ifndef TENSORPLAN_VERSION_H
#define TENSORPLAN_VERSION_H

#include "tensorplan/api.h"

#define TP_VERSION_MAJOR 0
#define TP_VERSION_MINOR 1
#define TP_VERSION_PATCH 0
#define TP_VERSION_STRING "0.1.0"

/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if TP_VERSION_NUMBER >= ... */
#define TP_VERSION_NUMBER (TP_VERSION_MAJOR * 10000 + TP_VERSION_MINOR * 100 + TP_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The library's TP_VERSION_STRING, a static string. */
TP_API const char *tp_version(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORPLAN_VERSION_H */
