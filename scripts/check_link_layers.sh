#!/bin/sh
# Every tp_ symbol a layer's library needs must be defined by that library or by a layer it
# declares in TP_NEEDS_<layer>, transitively (docs/architecture.md), and every layer it needs
# must come before it in TP_LAYERS. Both are read from CMakeLists.txt, the one place they are
# declared. Run after a build: sh scripts/check_link_layers.sh [BUILD_DIR]
B=${1:-build}
ROOT=$(dirname "$0")/..
layers=$(sed -n 's/^set(TP_LAYERS \(.*\))$/\1/p' "$ROOT/CMakeLists.txt")
[ -n "$layers" ] || { echo "no set(TP_LAYERS ...) in CMakeLists.txt"; exit 2; }
needs() { sed -n "s/^set(TP_NEEDS_$1 \(.*\))\$/\1/p" "$ROOT/CMakeLists.txt" | tr -d '"'; }
status=0
seen=""
for l in $layers; do
  a="$B/libtensorplan_$l.a"
  [ -f "$a" ] || { echo "missing $a"; exit 2; }
  # the closure of what l may call: itself and its needs, transitively
  closure="$l"; todo=$(needs "$l")
  while [ -n "$(echo $todo)" ]; do
    set -- $todo; n=$1; shift; todo="$*"
    case " $closure " in *" $n "*) continue ;; esac
    case " $seen " in *" $n "*) ;; *) echo "$l needs $n, which is not below it in TP_LAYERS"; status=1 ;; esac
    closure="$closure $n"; todo="$todo $(needs "$n")"
  done
  defs=$(for x in $closure; do nm -g --defined-only "$B/libtensorplan_$x.a" | awk 'NF == 3 {print $3}'; done | sort -u)
  # (NF >= 2: the symbol lines, not the "member.o:" line nm prints before each member)
  need=$(nm -g --undefined-only "$a" | awk 'NF >= 2 {print $NF}' | grep '^tp_' | sort -u)
  up=$(printf '%s\n' "$need" | grep -vxF "$defs" | grep .)
  if [ -n "$up" ]; then
    echo "$l calls outside what it links ($closure):" $up
    status=1
  fi
  seen="$seen $l"
done
exit $status
