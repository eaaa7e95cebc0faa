#!/usr/bin/env bash
# k8s_validate.sh GEOFS_HUBD GEOFS_SPOKED CACHE_DIR
#
# Checks deploy/k8s/ offline, for the base and every overlay:
# - renders it with `kubectl kustomize` when kubectl is there, and always with
#   tests/deploy/kustomize_lite.js (the subset of kustomize deploy/k8s uses),
#   and requires both renderings to agree;
# - validates every object (k8s_check.js): kubernetes-models' JSON schemas
#   and the Kubernetes 1.29 API types through the TypeScript compiler;
# - checks the NFS PersistentVolume against the spoke's ports and portal;
# - checks every --flag given to geofs-hubd and geofs-spoked in container
#   args against that binary's --help (a flag renamed in code breaks this).
# The npm packages (tests/deploy/package.json, pinned by package-lock.json)
# are installed with `npm ci` into CACHE_DIR, once per lock file.
set -euo pipefail
hubd=${1:?usage: k8s_validate.sh GEOFS_HUBD GEOFS_SPOKED CACHE_DIR}
spoked=${2:?usage: k8s_validate.sh GEOFS_HUBD GEOFS_SPOKED CACHE_DIR}
cache=${3:?usage: k8s_validate.sh GEOFS_HUBD GEOFS_SPOKED CACHE_DIR}
here=$(cd "$(dirname "$0")" && pwd)
k8s=$(cd "$here/../../deploy/k8s" && pwd)
source "$here/flags_lib.sh"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "$tool missing: run scripts/install-deps.sh" >&2; exit 1; }
done
for b in "$hubd" "$spoked"; do [[ -x "$b" ]] || { echo "not executable: $b" >&2; exit 1; }; done

# --- npm packages, installed once per lock file
mkdir -p "$cache"
stamp=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [[ "$(cat "$cache/node_modules/.geofs-stamp" 2>/dev/null)" != "$stamp" ]]; then
  cp "$here/package.json" "$here/package-lock.json" "$cache/"
  (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error --cache "$cache/npm-cache" >&2)
  echo "$stamp" >"$cache/node_modules/.geofs-stamp"
fi
export NODE_PATH="$cache/node_modules"

work=$(mktemp -d /tmp/geofs-k8s-validate.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL $*" >&2; failures=$((failures + 1)); }

dirs=("$k8s/base")
for d in "$k8s"/overlays/*/; do dirs+=("${d%/}"); done
for dir in "${dirs[@]}"; do
  name=${dir#"$k8s"/}
  echo "=== $name"
  lite="$work/${name//\//-}.lite.yaml"
  if ! node "$here/kustomize_lite.js" "$dir" >"$lite"; then
    fail "$name: kustomize_lite"
    continue
  fi
  rendered=$lite
  compare=()
  if command -v kubectl >/dev/null; then
    rendered="$work/${name//\//-}.yaml"
    if ! kubectl kustomize "$dir" >"$rendered" 2>"$work/kustomize.err"; then
      fail "$name: kubectl kustomize: $(cat "$work/kustomize.err")"
      continue
    fi
    compare=("$lite")
  else
    echo "kubectl missing: validating the kustomize_lite rendering only"
  fi
  args="$work/${name//\//-}.args"
  # The report goes to stderr; stdout is one "BINARY ARGS..." line per
  # container that runs a geofs daemon.
  node "$here/k8s_check.js" "$rendered" "${compare[@]}" >"$args" || fail "$name: validation"
  for daemon in geofs-hubd:"$hubd" geofs-spoked:"$spoked"; do
    binary=${daemon#*:}
    grep -E "^${daemon%%:*} " "$args" | cut -d' ' -f2- | check_flags "$binary" "$name ${daemon%%:*} args" ||
      fail "$name: ${daemon%%:*} flags"
  done
done

if ((failures)); then
  echo "k8s_validate: $failures failure(s)" >&2
  exit 1
fi
echo "k8s_validate: all checks passed"
