#!/bin/sh
# The public headers, each on its own (docs/embedding.md, "The headers"): every
# include/tensorplan/*.h must compile as the only include of a C11 file and, when a C++
# compiler is found, of a C++11 file (-Wall -Wextra -Wpedantic -Werror); must use, outside
# its comments, some name of each header it includes (a type, tag, enum constant, macro or
# TP_API function that header declares; for the C library's headers, the names listed in
# std_names below); and, when it declares a function, must open with a usage example that
# compiles. The example is the block of lines indented by four spaces (" *     code") after
# the opening comment's sentence " * Example...:" (which may run over several lines); the
# declarations written in backquotes in that sentence (for instance "Example, given
# `const tp_graph *graph`:") become the parameters of the function the block is compiled in,
# after the header and <stdio.h>, <stdlib.h> and <string.h>. Usage:
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

# The code of header $1 without its comments, one line per line.
code() {
    awk '{
        line = $0; out = ""
        while (length(line) > 0) {
            if (inc) {
                i = index(line, "*/")
                if (i == 0) break
                line = substr(line, i + 2); inc = 0
            } else {
                i = index(line, "/*")
                if (i == 0) { out = out line; break }
                out = out substr(line, 1, i - 1) " "; line = substr(line, i + 2); inc = 1
            }
        }
        print out
    }' "$1"
}

# The names header $1 declares: its types, struct and enum tags, enum constants, macros (but
# the include guard) and TP_API functions, one a line.
names() {
    code "$1" | awk '
    { code = $0
      if (code ~ /^[ \t]*#[ \t]*define[ \t]/) {
          n = code; sub(/^[ \t]*#[ \t]*define[ \t]+/, "", n); sub(/[^A-Za-z0-9_].*/, "", n)
          if (n !~ /^TENSORPLAN_.*_H$/) print n
          next
      }
      if (code ~ /^[ \t]*#/) next
      text = text " " code }
    END {
        # struct/enum tags, and the enum constants inside the braces of an enum
        t = text
        while (match(t, /(struct|enum) [A-Za-z_][A-Za-z0-9_]* ?\{/)) {
            s = substr(t, RSTART, RLENGTH); sub(/^(struct|enum) /, "", s); sub(/ ?\{$/, "", s); print s
            t = substr(t, RSTART + RLENGTH)
        }
        t = text
        while (match(t, /enum[^{;]*\{[^}]*\}/)) {
            body = substr(t, RSTART, RLENGTH); t = substr(t, RSTART + RLENGTH)
            sub(/^[^{]*\{/, "", body); sub(/\}$/, "", body)
            n = split(body, items, ",")
            for (k = 1; k <= n; k++) if (match(items[k], /[A-Za-z_][A-Za-z0-9_]*/)) print substr(items[k], RSTART, RLENGTH)
        }
        n = split(text, pieces, ";")
        for (k = 1; k < n; k++) {
            d = pieces[k]
            if (d ~ /\}[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*$/) {      # } name;  (a typedef of a body)
                sub(/.*\}[ \t]*/, "", d); sub(/[ \t]*$/, "", d); print d; continue
            }
            while ((i = match(d, /[{}]/)) > 0) d = substr(d, i + 1)
            if (d ~ /^[ \t]*typedef/) {
                if (match(d, /\([ \t]*\*[ \t]*[A-Za-z_][A-Za-z0-9_]*/)) {   # a function pointer type
                    s = substr(d, RSTART, RLENGTH); sub(/^\([ \t]*\*[ \t]*/, "", s); print s
                } else if (match(d, /[A-Za-z_][A-Za-z0-9_]*[ \t]*$/)) {
                    s = substr(d, RSTART, RLENGTH); sub(/[ \t]*$/, "", s); print s
                }
            } else if (d ~ /(^|[ \t])TP_API[ \t]/ && match(d, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
                s = substr(d, RSTART, RLENGTH); sub(/[ \t]*\($/, "", s); print s
            }
        }
    }' | sort -u
}

# The identifiers header $1 uses outside its include, include-guard and conditional lines.
used() {
    code "$1" | grep -Ev '^[ \t]*#[ \t]*(include|ifn?def|if|else|endif)|^#define TENSORPLAN_[A-Z_]*_H$' |
        tr -cs 'A-Za-z0-9_' '\n' | sort -u
}

# The names of the C library headers that public headers may include.
std_names() {
    case "$1" in
    stddef.h) echo "size_t NULL ptrdiff_t offsetof max_align_t wchar_t" ;;
    stdint.h) echo "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t
                    uintptr_t intmax_t uintmax_t SIZE_MAX INT8_MAX INT16_MAX INT32_MAX INT64_MAX
                    INT8_MIN INT16_MIN INT32_MIN INT64_MIN UINT8_MAX UINT16_MAX UINT32_MAX
                    UINT64_MAX INT64_C UINT64_C" ;;
    stdio.h) echo "FILE EOF fpos_t BUFSIZ" ;;
    stdbool.h) echo "bool true false" ;;
    *) return 1 ;;
    esac
}

# Fails for every include of header $1 of which it uses no name (a header that declares
# nothing itself, such as the forwarding decode.h, is left alone).
includes_used() {
    hdr="$1"
    [ -n "$(names "$hdr")" ] || return 0
    used "$hdr" > "$tmp/used"
    for inc_name in $(code "$hdr" |
                      sed -n 's/^[ \t]*#[ \t]*include[ \t]*[<"]\([^>"]*\)[>"].*/\1/p'); do
        case "$inc_name" in
        tensorplan/*) names "$inc/$inc_name" > "$tmp/offered" ;;
        *)
            if ! std_names "$inc_name" > "$tmp/offered"; then
                echo "check_headers: $(basename "$hdr") includes <$inc_name>, whose names this" \
                     "check does not know (std_names in scripts/check_headers.sh)" >&2
                status=1
                continue
            fi ;;
        esac
        tr -s '[:space:]' '\n' < "$tmp/offered" | grep -v '^$' | sort -u > "$tmp/offered.sorted"
        if [ -z "$(comm -12 "$tmp/used" "$tmp/offered.sorted")" ]; then
            echo "check_headers: $(basename "$hdr") includes $inc_name but uses none of its names" >&2
            status=1
        fi
    done
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
    includes_used "$h"
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
[ "$status" -eq 0 ] && echo "check_headers: $n headers compile alone as C${cxx:+ and C++ ($cxx)}," \
                             "use what they include, and their examples compile"
exit "$status"
