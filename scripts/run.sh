#!/bin/sh
# `make run`: the main job on the built-in defaults.
set -e
B=${1:-build}
echo "== tensorplan model qwen2.5-0.5b --prompt-len 440"
"$B/tensorplan" model qwen2.5-0.5b --prompt-len 440
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "== tensorplan write-model tiny-llama --type q8_0 -o tiny-llama.gguf (a GGUF test model)"
"$B/tensorplan" write-model tiny-llama --type q8_0 -o "$T/tiny-llama.gguf"
echo "== tensorplan inspect tiny-llama.gguf"
"$B/tensorplan" inspect "$T/tiny-llama.gguf" | head -30
echo "== tensorplan model tiny-llama.gguf --prompt-len 32 --n-ctx 128 --budget 1M"
"$B/tensorplan" model "$T/tiny-llama.gguf" --prompt-len 32 --n-ctx 128 --budget 1M
echo "== tensorplan plan tests/data/minimalloc/input.12.csv --capacity 12"
"$B/tensorplan" plan tests/data/minimalloc/input.12.csv --capacity 12
echo "== tensorplan plan tests/data/minimalloc/A.1048576.csv --capacity 1048576 (the seed's greedy)"
"$B/tensorplan" plan tests/data/minimalloc/A.1048576.csv --capacity 1048576 || echo "(exit $?: the greedy does not fit this one)"
echo "== the same with --planner exact (fits, proven minimal)"
"$B/tensorplan" plan tests/data/minimalloc/A.1048576.csv --capacity 1048576 --planner exact
echo "== tensorplan run tiny --prompt-len 8 --max-new 8 --queued-layers 1"
"$B/tensorplan" run tiny --prompt-len 8 --max-new 8 --queued-layers 1
# The GGUF path on a model the project writes itself (random weights, a synthesised vocabulary).
echo "== tensorplan write-model tiny-qwen2 --type q8_0 -o tiny-qwen2-q8_0.gguf"
"$B/tensorplan" write-model tiny-qwen2 --type q8_0 -o "$T/tiny-qwen2-q8_0.gguf"
echo "== tensorplan model tiny-qwen2-q8_0.gguf --prompt-len 16"
"$B/tensorplan" model "$T/tiny-qwen2-q8_0.gguf" --prompt-len 16
echo "== tensorplan tokenize tiny-qwen2-q8_0.gguf 'the world' --pieces"
"$B/tensorplan" tokenize "$T/tiny-qwen2-q8_0.gguf" 'the world' --pieces
echo "== tensorplan run tiny-qwen2-q8_0.gguf --prompt 'the world' --max-new 8"
"$B/tensorplan" run "$T/tiny-qwen2-q8_0.gguf" --prompt 'the world' --max-new 8
