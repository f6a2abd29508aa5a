#!/bin/sh
# The public headers, each on its own (docs/embedding.md, "The headers"): every
# include/tensorplan/*.h must compile as the only include of a C11 file and, when a C++
# compiler is found, of a C++11 file (-Wall -Wextra -Wpedantic -Werror); and every header
# that declares a function must open with a usage example that compiles. The example is the
# block of lines indented by four spaces (" *     code") after the opening comment's sentence
# " * Example...:" (which may run over several lines); the declarations written in backquotes
# in that sentence (for instance "Example, given `const tp_graph *graph`:") become the
# parameters of the function the block is compiled in, after the header and <stdio.h>,
# <stdlib.h> and <string.h>. Usage:
#   scripts/check_headers.sh [INCLUDE_DIR [CC [CXX]]]
# INCLUDE_DIR holds tensorplan/*.h (default the source tree's include), CC defaults to cc,
# CXX to the first of c++, g++, clang++ found ("none": C only). Prints each failure with the
# compiler's message and exits 1 when there is one.
set -eu
inc="$(cd "${1:-$(dirname "$0")/../include}" && pwd)"
cc="${2:-cc}"
cxx="${3:-}"
if [ "$cxx" = none ]; then
    cxx=""
elif [ -z "$cxx" ]; then
    for c in c++ g++ clang++; do
        if command -v "$c" >/dev/null 2>&1; then cxx="$c"; break; fi
    done
fi
tmp="$(mktemp -d /tmp/tp_headers.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
warn="-Wall -Wextra -Wpedantic -Werror"
status=0
fail() { # WHAT LOG
    echo "check_headers: $1" >&2
    sed 's/^/    /' "$2" >&2
    status=1
}

# The example of header $1 as a C file on stdout; nothing when it has none.
example() {
    awk -v name="$(basename "$1")" '
    NR == 1 && !/^\/\*/ { exit }
    state == 0 && /^ \* Example/ { state = 3; params = "" }
    state == 3 {
        line = $0
        while (match(line, /`[^`]*`/)) {
            p = substr(line, RSTART + 1, RLENGTH - 2)
            params = params (params == "" ? "" : ", ") p
            line = substr(line, RSTART + RLENGTH)
        }
        if ($0 ~ /:$/) { state = 1; if (params == "") params = "void" }
        next
    }
    state == 1 && /^ \*$/ { if (body != "") body = body "\n"; next }
    state == 1 && /^ \*     / { body = body "    " substr($0, 8) "\n"; next }
    state == 1 { state = 2 }
    /\*\// { exit }
    END {
        if (body == "") exit
        printf "#include <tensorplan/%s>\n\n#include <stdio.h>\n#include <stdlib.h>\n", name
        printf "#include <string.h>\n\nint tp_example(%s);\n\nint tp_example(%s)\n{\n", params, params
        printf "%s    return 0;\n}\n", body
    }' "$1"
}

n=0
for h in "$inc"/tensorplan/*.h; do
    name="$(basename "$h")"
    n=$((n + 1))
    # (a declaration after it: a translation unit may not be empty)
    printf '#include <tensorplan/%s>\ntypedef int tp_header_alone;\n' "$name" > "$tmp/alone.c"
    # shellcheck disable=SC2086
    "$cc" -std=c11 $warn -fsyntax-only -I "$inc" "$tmp/alone.c" > "$tmp/log" 2>&1 ||
        fail "$name does not compile alone as C" "$tmp/log"
    if [ -n "$cxx" ]; then
        cp "$tmp/alone.c" "$tmp/alone.cpp"
        # shellcheck disable=SC2086
        "$cxx" -std=c++11 $warn -fsyntax-only -I "$inc" "$tmp/alone.cpp" \
            > "$tmp/log" 2>&1 || fail "$name does not compile alone as C++" "$tmp/log"
    fi
    example "$h" > "$tmp/example.c"
    if [ -s "$tmp/example.c" ]; then
        # shellcheck disable=SC2086
        "$cc" -std=c11 $warn -fsyntax-only -I "$inc" "$tmp/example.c" > "$tmp/log" 2>&1 ||
            { cat -n "$tmp/example.c" >> "$tmp/log"; fail "$name: its example does not compile" "$tmp/log"; }
    elif grep -q '^TP_API ' "$h"; then
        echo "check_headers: $name declares functions but opens with no example" >&2
        status=1
    fi
done
[ "$status" -eq 0 ] && echo "check_headers: $n headers compile alone as C${cxx:+ and C++ ($cxx)}; their examples compile"
exit "$status"
