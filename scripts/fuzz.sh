#!/bin/sh
# Builds the libFuzzer harnesses of tests/fuzz into build-fuzz/ (clang, ASan + UBSan) and runs
# each for SECONDS (default 60). usage: scripts/fuzz.sh [SECONDS] [HARNESS...]
# Seeds: tests/data/fuzz/NAME/ and the folders of tests/data listed below, copied into
# build-fuzz/corpus/NAME/ (libFuzzer adds what it finds there; tests/data is never written).
# A failing input is left in build-fuzz/artifacts/NAME/; docs/fuzzing.md says what to do next.
set -eu
cd "$(dirname "$0")/.."
SECS=${1:-60}
[ $# -gt 0 ] && shift
B=${TP_FUZZ_BUILD:-build-fuzz}

# One line per harness: NAME (tests/fuzz/fuzz_NAME.c) and extra seed folders under tests/data.
HARNESSES='
csv_problem minimalloc
csv_solution minimalloc
gguf
graph_alloc
model fuzz/gguf
planner
tokenizer
'

FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B "$B" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTP_FUZZ=ON \
  -DCMAKE_C_FLAGS="$FLAGS" >/dev/null

echo "$HARNESSES" | while read -r name seeds; do
  [ -n "$name" ] || continue
  if [ $# -gt 0 ]; then
    case " $* " in *" $name "*) ;; *) continue ;; esac
  fi
  cmake --build "$B" -j 2 --target "fuzz_$name" >/dev/null
  corpus="$B/corpus/$name"
  mkdir -p "$corpus" "$B/artifacts/$name"
  for dir in "fuzz/$name" $seeds; do
    [ -d "tests/data/$dir" ] && cp tests/data/"$dir"/* "$corpus"/ 2>/dev/null || true
  done
  echo "== fuzz_$name for ${SECS} s ($(ls "$corpus" | wc -l) inputs in $corpus)"
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
       UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
       "$B/fuzz/fuzz_$name" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="$B/artifacts/$name/" "$corpus" \
       >"$B/fuzz_$name.log" 2>&1; then
    tail -n 40 "$B/fuzz_$name.log" >&2
    echo "tensorplan: fuzz_$name failed; input in $B/artifacts/$name/ (docs/fuzzing.md)" >&2
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$B/fuzz_$name.log" | tail -n 1 || true
done
