#!/usr/bin/env bash
# Installs the s3rver S3 emulator (npm) used by the S3 object-store tests and
# prints the path of its binary. Idempotent: an installed, matching version is
# reused without touching the network.
#
#   scripts/s3rver.sh [TOOLS_DIR]
#
# TOOLS_DIR defaults to $GEOFS_TOOLS_DIR, else build/tools in the repository.
set -euo pipefail

version=3.7.1
repo_dir=$(cd "$(dirname "$0")/.." && pwd)
tools_dir=${1:-${GEOFS_TOOLS_DIR:-$repo_dir/build/tools}}
prefix=$tools_dir/s3rver
bin=$prefix/node_modules/.bin/s3rver
stamp=$prefix/.installed-$version

if [[ ! -x $bin || ! -f $stamp ]]; then
  command -v npm >/dev/null || { echo "s3rver.sh: npm not found (install nodejs/npm)" >&2; exit 1; }
  mkdir -p "$prefix"
  # Serialise concurrent installs (parallel builds) into the same prefix.
  exec 9>"$prefix/.lock"
  flock 9
  if [[ ! -x $bin || ! -f $stamp ]]; then
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "s3rver@$version" >&2
    [[ -x $bin ]] || { echo "s3rver.sh: npm install did not produce $bin" >&2; exit 1; }
    touch "$stamp"
  fi
fi
echo "$bin"
