#!/bin/sh
# `make run`: the main job on the built-in defaults.
set -e
B=${1:-build}
echo "== tensorplan model qwen2.5-0.5b --prompt 440"
"$B/tensorplan" model qwen2.5-0.5b --prompt 440
echo "== tensorplan plan tests/data/minimalloc/input.12.csv --capacity 12"
"$B/tensorplan" plan tests/data/minimalloc/input.12.csv --capacity 12
echo "== tensorplan plan tests/data/minimalloc/A.1048576.csv --capacity 1048576 (the seed's greedy)"
"$B/tensorplan" plan tests/data/minimalloc/A.1048576.csv --capacity 1048576 || echo "(exit $?: the greedy does not fit this one)"
echo "== the same with --strategy exact (fits, proven minimal)"
"$B/tensorplan" plan tests/data/minimalloc/A.1048576.csv --capacity 1048576 --strategy exact
echo "== tensorplan run tiny --prompt-len 8 --max-new 8 --queued-layers 1"
"$B/tensorplan" run tiny --prompt-len 8 --max-new 8 --queued-layers 1
