#!/bin/sh
# Installs the Debian packages tensorplan needs to build and test, if any is missing.
# Idempotent; runs apt-get update at most once, and only when something is missing.
# As root it calls apt-get directly (a fresh Debian image has no sudo); otherwise through sudo.
# Extra package names given as arguments are installed too: .ci/run adds chromium, for the
# browser check of the plan pictures (tests/test_html_browser.c skips without it).
set -e
PKGS="gcc g++ make cmake pkg-config libcmocka-dev libcjson-dev libpcre2-dev $*"
PKGS="$PKGS clang libclang-rt-dev" # libFuzzer for scripts/fuzz.sh (docs/fuzzing.md)
PKGS="$PKGS python3" # scripts/check_doc_refs.py, CTest's check_doc_refs
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "tensorplan: missing build dependencies:$missing; run this as root or install sudo" >&2
    exit 1
  fi
  SUDO="sudo"
fi
echo "tensorplan: installing missing build dependencies:$missing" >&2
# sudo resets the environment, so the non-interactive frontend is passed through env.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
