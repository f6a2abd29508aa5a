#!/bin/sh
# The checks of the public surface catch what they are meant to: each case below breaks a
# copy of include/tensorplan in one way and expects scripts/check_exports.sh or
# scripts/check_headers.sh to fail with the message naming that break (and both to pass on
# the unbroken copy first). Usage:
#   scripts/test_checks.sh LIBRARY [CC]     (LIBRARY: the built libtensorplan.so)
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
lib="$1"
cc="${2:-cc}"
tmp="$(mktemp -d /tmp/tp_checks.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
failures=0

fresh() {
    rm -rf "$tmp/include"
    mkdir -p "$tmp/include"
    cp -R "$here/../include/tensorplan" "$tmp/include/"
}
exports() { sh "$here/check_exports.sh" "$lib" "$tmp/include/tensorplan" > "$tmp/out" 2>&1; }
headers() { sh "$here/check_headers.sh" "$tmp/include" "$cc" none > "$tmp/out" 2>&1; }
# expect WHAT CHECK MESSAGE: CHECK fails and prints MESSAGE
expect() {
    if "$2"; then
        echo "test_checks: $1: $2 passed, expected it to fail" >&2
        failures=$((failures + 1))
    elif ! grep -qF "$3" "$tmp/out"; then
        echo "test_checks: $1: $2 failed without \"$3\":" >&2
        sed 's/^/    /' "$tmp/out" >&2
        failures=$((failures + 1))
    fi
}
# edit FILE SED-SCRIPT: applies it to the copy, and fails when it changed nothing
edit() {
    cp "$tmp/include/tensorplan/$1" "$tmp/before"
    sed "$2" "$tmp/before" > "$tmp/include/tensorplan/$1"
    if cmp -s "$tmp/before" "$tmp/include/tensorplan/$1"; then
        echo "test_checks: the edit '$2' of $1 changed nothing" >&2
        exit 1
    fi
}

fresh
exports || { echo "test_checks: check_exports fails on the sources:" >&2; cat "$tmp/out" >&2; exit 1; }
headers || { echo "test_checks: check_headers fails on the sources:" >&2; cat "$tmp/out" >&2; exit 1; }

fresh; edit graph.h 's/^TP_API void tp_graph_destroy(/void tp_graph_destroy(/'
expect "a declaration without TP_API" exports "graph.h: tp_graph_destroy is declared without TP_API"

fresh; edit weights.h '/^TP_API uint64_t tp_weights_version(/d'
expect "an exported function no header declares" exports \
    "exports tp_weights_version, which no public header declares"

fresh; edit ops.h 's/^TP_API int tp_op_uses_kv(tp_op op);/&\nTP_API int tp_op_unknown(void);/'
expect "a declared function the library lacks" exports \
    "ops.h declares tp_op_unknown, which libtensorplan"

fresh; edit quant.h '/^#include <stdint.h>/d'
expect "a header that needs an include it lacks" headers "quant.h does not compile alone as C"

fresh; edit tokenizer.h 's|^#include "tensorplan/status.h"|&\n#include "tensorplan/quant.h"|'
expect "an include a header does not use" headers \
    "tokenizer.h includes tensorplan/quant.h but uses none of its names"

fresh; edit exec.h 's|^#include <stddef.h>|&\n#include <stdio.h>|'
expect "a C library include a header does not use" headers \
    "exec.h includes stdio.h but uses none of its names"

fresh; edit planner.h 's/^ \*     size_t offsets\[3\], arena;/ *     size_t offsets[3];/'
expect "an example that does not compile" headers "planner.h: its example does not compile"

fresh; edit weights.h 's/^ \* Example:/ * For example:/; s/^ \*     / * /'
expect "a header without its example" headers "weights.h declares functions but opens with no example"

if [ "$failures" -ne 0 ]; then
    exit 1
fi
echo "test_checks: check_exports and check_headers catch each of the 8 breaks"
