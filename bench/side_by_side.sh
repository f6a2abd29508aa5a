#!/bin/sh
# End-to-end speed of `tensorplan run` next to llama.cpp's llama-bench on the same GGUF files,
# interleaved, best of R rounds (the machine may be shared: the best round is the one least
# disturbed). Prompt processing is the prefill of a 64-token prompt, generation the 16 tokens
# after it (tensorplan run --prompt-tokens <64 ids> --max-new 17 --n-ctx 512; llama-bench -p 64
# -n 16 -r 1).
#
#   bench/side_by_side.sh BUILD_DIR MODEL_DIR [ROUNDS]
#
# MODEL_DIR holds qwen-TYPE.gguf files (made by `tensorplan write-model qwen2.5-0.5b --type T`,
# or by llama-quantize from the f32 one). LLAMA_BENCH names llama.cpp's llama-bench binary
# (built by hand from github.com/ggerganov/llama.cpp, outside this repository); without it only
# tensorplan is measured. THREADS (default "1 2") and TYPES (default: every qwen-*.gguf) narrow
# the runs.
set -e
B=${1:?build dir}
M=${2:?model dir}
R=${3:-3}
TP="$B/tensorplan"
P=$(awk 'BEGIN { for (i = 0; i < 64; i++) printf("%s%d", i ? "," : "", (i * 7919 + 13) % 150000) }')
THREADS=${THREADS:-"1 2"}
TYPES=${TYPES:-$(ls "$M" | sed -n 's/^qwen-\(.*\)\.gguf$/\1/p')}
best() { sort -g | tail -1; }
printf '%-8s %3s %10s %10s %6s %10s %10s %6s\n' type thr tp_pp64 ll_pp64 ratio tp_tg16 ll_tg16 ratio
for t in $TYPES; do
  f="$M/qwen-$t.gguf"
  for th in $THREADS; do
    : > /tmp/sbs.tp.pp; : > /tmp/sbs.tp.tg; : > /tmp/sbs.ll.pp; : > /tmp/sbs.ll.tg
    for r in $(seq "$R"); do
      "$TP" run "$f" --prompt-tokens "$P" --max-new 17 --n-ctx 512 --threads "$th" > /tmp/sbs.out 2>&1
      sed -n 's/^prefill:.*(\([0-9.]*\) tokens\/s)/\1/p' /tmp/sbs.out >> /tmp/sbs.tp.pp
      sed -n 's/^decode:.*(\([0-9.]*\) tokens\/s)/\1/p' /tmp/sbs.out >> /tmp/sbs.tp.tg
      if [ -n "$LLAMA_BENCH" ] && [ -x "$LLAMA_BENCH" ]; then
        "$LLAMA_BENCH" -m "$f" -p 64 -n 0 -r 1 -t "$th" -o json 2>/dev/null |
          sed -n 's/.*"avg_ts": *\([0-9.]*\).*/\1/p' | head -1 >> /tmp/sbs.ll.pp
        "$LLAMA_BENCH" -m "$f" -p 0 -n 16 -r 1 -t "$th" -o json 2>/dev/null |
          sed -n 's/.*"avg_ts": *\([0-9.]*\).*/\1/p' | head -1 >> /tmp/sbs.ll.tg
      fi
    done
    tpp=$(best < /tmp/sbs.tp.pp); ttg=$(best < /tmp/sbs.tp.tg)
    lpp=$(best < /tmp/sbs.ll.pp); ltg=$(best < /tmp/sbs.ll.tg)
    rp=$( [ -n "$lpp" ] && echo "$tpp $lpp" | awk '{ printf("%.2f", $1 / $2) }' || echo -)
    rg=$( [ -n "$ltg" ] && echo "$ttg $ltg" | awk '{ printf("%.2f", $1 / $2) }' || echo -)
    printf '%-8s %3s %10s %10s %6s %10s %10s %6s\n' "$t" "$th" "$tpp" "${lpp:--}" "$rp" "$ttg" "${ltg:--}" "$rg"
  done
done
