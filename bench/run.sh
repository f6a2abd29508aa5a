#!/bin/sh
# `make bench`: runs every benchmark program in one go.
set -e
B=${1:-build}
for b in "$B"/bench/*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b"
done
