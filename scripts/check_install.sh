#!/bin/bash
# Installs a built tree into a temporary prefix, checks each installed header on its own
# (scripts/check_headers.sh) and builds, against the installed files only, the README's C
# example and a C++ program (tests/install/consumer.cpp): once through pkg-config, once
# through the CMake package; then runs them. Usage:
#   scripts/check_install.sh [BUILD_DIR]        (default build; it must be built already)
# Exits non-zero at the first failure. Nothing outside the temporary folder is written but
# BUILD_DIR/install_manifest_tensorplan.txt.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-build}" && pwd)"
tmp="$(mktemp -d /tmp/tensorplan_install.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
cmake --install "$build" --prefix "$prefix" --component tensorplan >/dev/null

for f in include/tensorplan/planner.h include/tensorplan/version.h lib/libtensorplan.a \
         lib/pkgconfig/tensorplan.pc lib/cmake/tensorplan/tensorplanConfig.cmake; do
  [ -f "$prefix/$f" ] || { echo "check_install: $f not installed" >&2; exit 1; }
done

# every installed header alone, as C and C++, and its example (scripts/check_headers.sh)
sh "$root/scripts/check_headers.sh" "$prefix/include" gcc g++ >/dev/null

expect_c=$'tensor 0 at offset 0\ntensor 1 at offset 100\ntensor 2 at offset 0\narena 180 bytes, peak 180 bytes'
expect_cxx=$'a 0\nb 100\nc 0\narena 180'
check() { # NAME EXPECTED PROGRAM...
  local name="$1" want="$2"; shift 2
  local got; got="$("$@")"
  if [ "${got#"$want"}" = "$got" ]; then
    printf 'check_install: %s printed\n%s\nexpected it to start with\n%s\n' "$name" "$got" "$want" >&2
    exit 1
  fi
}

# pkg-config: the shared library (when installed) at run time through LD_LIBRARY_PATH, and
# the static one with --static.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export LD_LIBRARY_PATH="$prefix/lib"
mkdir -p "$tmp/pc"
cflags="$(pkg-config --cflags tensorplan)"
static_libs="$(pkg-config --static --libs tensorplan)"
libs="$(pkg-config --libs tensorplan)"
# a build with BUILD_SHARED_LIBS=OFF installs the archive only: link it with its dependencies
[ -e "$prefix/lib/libtensorplan.so" ] || libs="$static_libs"
# shellcheck disable=SC2086
gcc -std=c11 -Wall -Wextra -Werror ${TP_CONSUMER_FLAGS:-} $cflags \
    "$root/docs/example_plan_offsets.c" -o "$tmp/pc/example_c" $libs
# shellcheck disable=SC2086
g++ -std=c++11 -Wall -Wextra -Werror ${TP_CONSUMER_FLAGS:-} $cflags \
    "$root/tests/install/consumer.cpp" -o "$tmp/pc/consumer_cxx" $libs
# shellcheck disable=SC2086
g++ -std=c++11 -Wall -Wextra -Werror ${TP_CONSUMER_FLAGS:-} $cflags \
    "$root/tests/install/consumer.cpp" -o "$tmp/pc/consumer_cxx_static" \
    -Wl,-Bstatic -ltensorplan -Wl,-Bdynamic -L"$prefix/lib" $static_libs
check "pkg-config C example" "$expect_c" "$tmp/pc/example_c"
check "pkg-config C++ program" "$expect_cxx" "$tmp/pc/consumer_cxx"
check "pkg-config C++ program (static)" "$expect_cxx" "$tmp/pc/consumer_cxx_static"

# The CMake package.
cmake -S "$root/tests/install" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$prefix" \
      -DTP_EXAMPLE_C="$root/docs/example_plan_offsets.c" \
      -DCMAKE_C_FLAGS="${TP_CONSUMER_FLAGS:-}" -DCMAKE_CXX_FLAGS="${TP_CONSUMER_FLAGS:-}" >/dev/null
cmake --build "$tmp/cm" -j 2 >/dev/null
check "find_package C example" "$expect_c" "$tmp/cm/example_c"
check "find_package C++ program" "$expect_cxx" "$tmp/cm/consumer_cxx"
check "find_package C++ program (static)" "$expect_cxx" "$tmp/cm/consumer_cxx_static"
echo "check_install: pkg-config and find_package consumers (C and C++) built and ran"
