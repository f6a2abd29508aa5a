/* tensorplan: the marker of the library's interface.
 *
 * Every function declared in include/tensorplan/ is marked TP_API, and only those are
 * exported by libtensorplan.so: the library is compiled with -fvisibility=hidden and with
 * TENSORPLAN_BUILD defined, under which TP_API gives a declaration default visibility. A
 * program that includes the headers (C or C++, linking the shared or the static library)
 * defines nothing and sees TP_API as nothing. scripts/check_exports.sh compares the
 * shared library's dynamic symbols with these declarations (docs/embedding.md). */
#ifndef TENSORPLAN_API_H
#define TENSORPLAN_API_H

#if defined(TENSORPLAN_BUILD) && (defined(__GNUC__) || defined(__clang__))
#define TP_API __attribute__((visibility("default")))
#else
#define TP_API
#endif

#endif /* TENSORPLAN_API_H */
