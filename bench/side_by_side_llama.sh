#!/bin/sh
# tensorplan and llama.cpp side by side on the same GGUF files (BENCHMARKS.md, "Side by side
# with llama.cpp"). llama.cpp is not part of this project: build it by hand from its public
# source and point TP_LLAMA_CPP_BIN at the folder holding llama-bench, llama-quantize (needed
# only to make files TP_BENCH_MODELS lacks), llama-cli and llama-tokenize. Without it this
# script says so and exits 0.
#
#   TP_LLAMA_CPP_BIN=DIR sh bench/side_by_side_llama.sh [BUILD] [WHICH]
#
# BUILD is tensorplan's build folder (default build). WHICH picks the runs: "speed" (pp64,
# pp512, tg16 at 1 and 2 threads), "decode" (tg16 only at 1 and 2 threads, REPS alternating
# rounds, the best of each side), "memory" (peak resident memory of a 2,048-token prompt at
# n_ctx 4096), or "all" (default: speed and memory). TP_BENCH_MODELS (default BUILD/bench-models) keeps the
# generated files between runs; TP_BENCH_FILES (default: every file below) names a subset,
# e.g. "qwen05-q4_0 qwen05-q4_k_m"; TP_BENCH_REPS (default 2) is the repetitions of each run.
# TP_BENCH_TP_ARGS (default none) are extra arguments of every tensorplan run, e.g.
# "--kernels avx2" to time the AVX2 form on a processor with AVX-512 (against a llama.cpp
# built without AVX-512); the processor line names the kernel form that ran.
# TP_BENCH_THREADS (default "1 2") are the thread counts of "speed" and "decode".
#
# The files: the Qwen2.5-0.5B shape written by `tensorplan write-model` in f32 (random
# weights, seed 1) and quantized from it by llama-quantize to F16, Q8_0, Q4_0 and Q4_K_M; the
# Llama-3.2-1B shape written in f16 and quantized to Q4_K_M and Q6_K. Each measurement runs
# llama.cpp and tensorplan one after the other on the same file, so that load changes hit
# both; prompts are the same token ids for both (llama-bench draws its own, which costs the
# same). Tokens per second, the ratio tensorplan / llama.cpp (above 1: tensorplan is faster).
set -eu
B=${1:-build}
WHICH=${2:-all}
TP="$B/tensorplan"
[ -x "$TP" ] || { echo "side_by_side_llama: no $TP (build first)" >&2; exit 1; }
L=${TP_LLAMA_CPP_BIN:-}
if [ -z "$L" ] || [ ! -x "$L/llama-bench" ]; then
  echo "side_by_side_llama: skipped (set TP_LLAMA_CPP_BIN to a folder with llama-bench, and llama-quantize unless TP_BENCH_MODELS holds the files)"
  exit 0
fi
M=${TP_BENCH_MODELS:-$B/bench-models}
REPS=${TP_BENCH_REPS:-2}
TP_ARGS=${TP_BENCH_TP_ARGS:-}
THREADS=${TP_BENCH_THREADS:-"1 2"}
FILES=${TP_BENCH_FILES:-"qwen05-f32 qwen05-f16 qwen05-q8_0 qwen05-q4_0 qwen05-q4_k_m llama1b-q4_k_m llama1b-q6_k"}
mkdir -p "$M"

# make_file NAME: writes $M/NAME.gguf unless it is there.
# (sh has no local variables: the output path is always spelt "$M/$1.gguf".)
make_file() {
  [ -s "$M/$1.gguf" ] && return 0
  case $1 in *-f32 | llama1b-f16) ;; *)
    [ -x "$L/llama-quantize" ] || { echo "side_by_side_llama: no $L/llama-quantize to make $M/$1.gguf" >&2; exit 1; } ;;
  esac
  case $1 in
    qwen05-f32) "$TP" write-model qwen2.5-0.5b --type f32 -o "$M/$1.gguf" ;;
    llama1b-f16) "$TP" write-model llama-3.2-1b --type f16 -o "$M/$1.gguf" ;;
    qwen05-*) make_file qwen05-f32
              "$L/llama-quantize" "$M/qwen05-f32.gguf" "$M/$1.gguf" \
                "$(echo "${1#qwen05-}" | tr a-z A-Z)" >/dev/null 2>&1 ;;
    llama1b-*) make_file llama1b-f16
               "$L/llama-quantize" "$M/llama1b-f16.gguf" "$M/$1.gguf" \
                 "$(echo "${1#llama1b-}" | tr a-z A-Z)" >/dev/null 2>&1 ;;
  esac
  [ -s "$M/$1.gguf" ] || { echo "side_by_side_llama: could not make $M/$1.gguf" >&2; exit 1; }
}

# ids N: N token ids (deterministic, below 1,000: text pieces of every test vocabulary).
ids() {
  awk -v n="$1" 'BEGIN { x = 12345; for (i = 0; i < n; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%s%d", (i ? "," : ""), 300 + x % 600 } }'
}

# llama_tps FILE THREADS PP TG: llama.cpp's mean tokens/s of one test (pp or tg).
llama_tps() {
  "$L/llama-bench" -m "$1" -t "$2" -p "$3" -n "$4" -r "$REPS" -o csv 2>/dev/null |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); if (h == "avg_ts") c = i }; next }
             c { gsub(/"/, "", $c); print $c; exit }'
}

# tp_tps FILE THREADS PP TG: tensorplan's best tokens/s of REPS runs (prefill for TG 0,
# else decode of TG tokens after a prompt of PP).
tp_tps() {
  best=0
  r=0
  while [ "$r" -lt "$REPS" ]; do
    if [ "$4" -eq 0 ]; then new=1; key=prefill; else new=$(($4 + 1)); key=decode; fi
    v=$("$TP" run "$1" --prompt-tokens "$(ids "$3")" --max-new "$new" --n-ctx 4096 \
          --threads "$2" $TP_ARGS 2>&1 >/dev/null | sed -n "s/^$key: .*(\([0-9.]*\) tokens\/s)/\1/p")
    best=$(awk -v a="$best" -v b="${v:-0}" 'BEGIN { print (b > a ? b : a) }')
    r=$((r + 1))
  done
  echo "$best"
}

speed() {
  echo "| file | threads | test | llama.cpp t/s | tensorplan t/s | ratio |"
  echo "|---|---:|---|---:|---:|---:|"
  for name in $FILES; do
    make_file "$name"
    for t in $THREADS; do
      for test in pp64 pp512 tg16; do
        case $test in pp*) pp=${test#pp}; tg=0 ;; tg*) pp=64; tg=${test#tg} ;; esac
        if [ "$tg" -eq 0 ]; then lt=$(llama_tps "$M/$name.gguf" "$t" "$pp" 0)
        else lt=$(llama_tps "$M/$name.gguf" "$t" 0 "$tg"); fi
        tt=$(tp_tps "$M/$name.gguf" "$t" "$pp" "$tg")
        awk -v n="$name" -v t="$t" -v k="$test" -v a="${lt:-0}" -v b="${tt:-0}" \
          'BEGIN { printf "| %s | %d | %s | %.1f | %.1f | %.2f |\n", n, t, k, a, b, (a > 0 ? b / a : 0) }'
      done
    done
  done
}

# decode: tg16 only, at 1 and 2 threads, in REPS rounds that alternate one llama.cpp run
# (llama-bench -r 1) with one tensorplan run on the same file; the best of each side.
decode() {
  rounds=$REPS
  REPS=1
  echo "| file | threads | test | llama.cpp t/s | tensorplan t/s | ratio |"
  echo "|---|---:|---|---:|---:|---:|"
  for name in $FILES; do
    make_file "$name"
    for t in $THREADS; do
      lb=0; tb=0; r=0
      while [ "$r" -lt "$rounds" ]; do
        lt=$(llama_tps "$M/$name.gguf" "$t" 0 16)
        tt=$(tp_tps "$M/$name.gguf" "$t" 64 16)
        lb=$(awk -v a="$lb" -v b="${lt:-0}" 'BEGIN { print (b > a ? b : a) }')
        tb=$(awk -v a="$tb" -v b="${tt:-0}" 'BEGIN { print (b > a ? b : a) }')
        r=$((r + 1))
      done
      awk -v n="$name" -v t="$t" -v a="$lb" -v b="$tb" \
        'BEGIN { printf "| %s | %d | tg16 | %.1f | %.1f | %.2f |\n", n, t, a, b, (a > 0 ? b / a : 0) }'
    done
  done
  REPS=$rounds
}

# peak_kb CMD...: the peak resident set of CMD in KiB (GNU time).
peak_kb() {
  /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -n 1
}

memory() {
  [ -x /usr/bin/time ] || { echo "memory: skipped (needs GNU time, Debian package time)"; return 0; }
  [ -x "$L/llama-cli" ] && [ -x "$L/llama-tokenize" ] || { echo "memory: skipped (needs llama-cli and llama-tokenize)"; return 0; }
  kv=""
  "$TP" help run 2>&1 | grep -q -- --kv-type && kv="--kv-type f16"
  echo "| file | prompt tokens | llama.cpp peak RSS MiB | tensorplan peak RSS MiB | ratio |"
  echo "|---|---:|---:|---:|---:|"
  for name in $FILES; do
    make_file "$name"
    f="$M/$name.gguf"
    # one text for both: words of the test vocabulary, cut to 2,048 tokens by llama-tokenize
    text=$(awk 'BEGIN { split("the of and to in a is that for it as was with be by on not he this are", w, " ");
                        for (i = 0; i < 3000; i++) printf "%s ", w[1 + (i * 7) % 20] }')
    toks=$("$L/llama-tokenize" -m "$f" -p "$text" --ids --log-disable 2>/dev/null | tail -n 1 |
           tr -d '[] ' | cut -d, -f1-2048)
    n=$(echo "$toks" | tr ',' '\n' | grep -c .)
    printf '%s' "$text" > "$M/prompt.txt"
    lk=$(peak_kb "$L/llama-cli" -m "$f" -c 4096 -n 1 -t 2 --temp 0 -no-cnv -f "$M/prompt.txt" -ctk f16 -ctv f16 --no-warmup)
    tk=$(peak_kb "$TP" run "$f" --prompt-tokens "$toks" --max-new 1 --n-ctx 4096 $kv $TP_ARGS)
    awk -v nm="$name" -v n="$n" -v a="$lk" -v b="$tk" \
      'BEGIN { printf "| %s | %d | %.1f | %.1f | %.2f |\n", nm, n, a / 1024, b / 1024, (a > 0 ? b / a : 0) }'
  done
}

# the form tensorplan's kernels ran in: its summary line "..., N kernel threads, FORM kernels"
tp_form() {
  "$TP" run tiny --prompt-len 2 --max-new 1 $TP_ARGS 2>&1 |
    sed -n 's/.* kernel threads, \([a-z0-9]*\) kernels.*/\1/p' | head -n 1
}
# what llama.cpp's CPU backend was built for: its system_info line, AVX entries only (a
# one-token run of the first file; "?" without llama-cli)
llama_isa() {
  [ -x "$L/llama-cli" ] || { echo "?"; return 0; }
  make_file "${FILES%% *}"
  "$L/llama-cli" -m "$M/${FILES%% *}.gguf" -p hi -n 1 -t 1 -no-cnv --no-warmup </dev/null 2>&1 |
    sed -n 's/^system_info: .*CPU : //p' | tr '|' '\n' | grep -E 'AVX|FMA|F16C' | tr -d ' ' |
    tr '\n' ' ' | sed 's/ $//'
}

echo "tensorplan $("$TP" --version 2>&1 | head -n 1)${TP_ARGS:+ (arguments: $TP_ARGS)}; llama.cpp: $L"
echo "processor: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores," \
     "$(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo 'AVX2, no AVX-512');" \
     "tensorplan kernels: $(tp_form); llama.cpp CPU backend: $(llama_isa)"
case $WHICH in
  speed) speed ;;
  decode) decode ;;
  memory) memory ;;
  *) speed; echo; memory ;;
esac
