#!/bin/sh
# The exported surface (docs/embedding.md, "What the shared library exports"): the dynamic
# symbols that libtensorplan.so defines must be exactly the functions that the public
# headers declare with TP_API. The headers are read here on their own terms, not through the
# compiler: comments and preprocessor lines are dropped, the rest is cut into declarations at
# each ';' (what follows the last '{' or '}' of a piece is its declaration), and a
# declaration whose first '(' follows an identifier and does not open a '(*' declarator is a
# function declaration named by that identifier. A function declared without TP_API is an
# error too (it would be part of the headers but missing from the library), and so is TP_API
# on anything else. Usage:
#   scripts/check_exports.sh LIBRARY [INCLUDE_DIR]     (INCLUDE_DIR default include/tensorplan)
#   scripts/check_exports.sh --list [INCLUDE_DIR]      (print the declared names, one a line)
# NM names the nm program (default nm). Prints every difference, in either direction, and
# exits 1 when there is one.
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
lib="$1"
dir="${2:-$root/include/tensorplan}"

# HEADER<TAB>NAME for every TP_API function; "!"-prefixed lines for the errors above.
declared() {
    for h in "$dir"/*.h; do
        awk -v file="$(basename "$h")" '
        BEGIN { text = ""; in_comment = 0; continued = 0 }
        {
            line = $0; code = ""
            while (length(line) > 0) {
                if (in_comment) {
                    i = index(line, "*/")
                    if (i == 0) { line = ""; break }
                    line = substr(line, i + 2); in_comment = 0
                } else {
                    i = index(line, "/*")
                    if (i == 0) { code = code line; line = ""; break }
                    code = code substr(line, 1, i - 1) " "; line = substr(line, i + 2)
                    in_comment = 1
                }
            }
            # a preprocessor line, and the lines it continues with a backslash
            if (continued || code ~ /^[ \t]*#/) {
                continued = (code ~ /\\$/); next
            }
            text = text " " code
        }
        END {
            n = split(text, pieces, ";")
            for (k = 1; k < n; k++) {
                d = pieces[k]
                while ((i = match(d, /[{}]/)) > 0) d = substr(d, i + 1)
                gsub(/[ \t]+/, " ", d); sub(/^ /, "", d)
                if (d ~ /^typedef / || d == "") continue
                marked = (d ~ /(^| )TP_API( |$)/)
                if (match(d, /[A-Za-z_][A-Za-z0-9_]* ?\(/) == 0 || substr(d, RSTART + RLENGTH) ~ /^ ?\*/) {
                    if (marked) print "!" file ": TP_API on a declaration that is not a function: " d
                    continue
                }
                name = substr(d, RSTART, RLENGTH); sub(/ ?\($/, "", name)
                if (!marked) print "!" file ": " name " is declared without TP_API"
                else print file "\t" name
            }
        }' "$h"
    done
}

decls="$(declared)"
if [ "$lib" = "--list" ]; then
    printf '%s\n' "$decls" | grep -v '^!' | cut -f2 | sort
    exit 0
fi

status=0
errors="$(printf '%s\n' "$decls" | grep '^!' || true)"
if [ -n "$errors" ]; then
    printf '%s\n' "$errors" | sed 's/^!/check_exports: /' >&2
    status=1
fi
[ -f "$lib" ] || { echo "check_exports: no library $lib" >&2; exit 1; }
want="$(printf '%s\n' "$decls" | grep -v '^!' | cut -f2 | sort)"
dupes="$(printf '%s\n' "$want" | uniq -d)"
if [ -n "$dupes" ]; then
    printf '%s\n' "$dupes" | sed 's/^/check_exports: declared more than once: /' >&2
    status=1
fi
got="$("${NM:-nm}" -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sort -u)"
tmp="$(mktemp -d /tmp/tp_exports.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' "$want" | uniq > "$tmp/want"
printf '%s\n' "$got" > "$tmp/got"
extra="$(comm -13 "$tmp/want" "$tmp/got")"
missing="$(comm -23 "$tmp/want" "$tmp/got")"
for s in $extra; do
    echo "check_exports: $(basename "$lib") exports $s, which no public header declares" >&2
    status=1
done
for s in $missing; do
    h="$(printf '%s\n' "$decls" | awk -F '\t' -v s="$s" '$2 == s { print $1; exit }')"
    echo "check_exports: $h declares $s, which $(basename "$lib") does not export" >&2
    status=1
done
if [ "$status" -eq 0 ]; then
    echo "check_exports: $(basename "$lib") exports exactly the $(wc -l < "$tmp/want") TP_API functions of $dir"
fi
exit "$status"
