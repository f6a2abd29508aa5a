#!/bin/sh
# Every tp_ symbol a layer's library needs must be defined by that library or a lower layer's
# (docs/architecture.md). Run after a build: sh scripts/check_link_layers.sh [BUILD_DIR]
B=${1:-build}
below=""
status=0
for l in common planner graph backend alloc exec model io; do
  a="$B/libtensorplan_$l.a"
  [ -f "$a" ] || { echo "missing $a"; exit 2; }
  defs=$(for x in $a $below; do nm -g --defined-only "$x" | awk 'NF == 3 {print $3}'; done | sort -u)
  need=$(nm -g --undefined-only "$a" | awk '{print $NF}' | grep '^tp_' | sort -u)
  up=$(printf '%s\n' "$need" | grep -vxF "$defs" | grep .)
  if [ -n "$up" ]; then
    echo "$l calls upward: $up"
    status=1
  fi
  below="$below $a"
done
exit $status
