#!/bin/sh
# Installs the Debian packages tensorplan needs to build and test, if any is missing.
# Idempotent; runs apt-get update at most once, and only when something is missing.
set -e
PKGS="gcc make cmake pkg-config libcmocka-dev libcjson-dev"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "tensorplan: installing missing build dependencies:$missing" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
