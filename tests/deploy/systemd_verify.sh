#!/usr/bin/env bash
# systemd_verify.sh GEOFS_HUBD GEOFS_SPOKED
#
# Checks deploy/systemd/ against systemd and against the binaries:
# - `systemd-analyze verify` accepts both units. It checks that ExecStart
#   binaries exist, so the units are installed into a throw-away root (with
#   stubs at the installed paths and a copy of the system's own units for the
#   targets they are ordered against) and verified with --root. verify only
#   warns (exit 0) on unknown keys or bad values, so any output fails here.
# - every --flag the units and the environment files pass to a daemon is one
#   its --help lists (a flag renamed in code breaks this test);
# - every variable ExecStart expands is set in the environment file;
# - geofs-wait-ready succeeds on a listening port and times out on a closed
#   one.
set -euo pipefail
hubd=${1:?usage: systemd_verify.sh GEOFS_HUBD GEOFS_SPOKED}
spoked=${2:?usage: systemd_verify.sh GEOFS_HUBD GEOFS_SPOKED}
here=$(cd "$(dirname "$0")" && pwd)
units=$(cd "$here/../../deploy/systemd" && pwd)
source "$here/flags_lib.sh"

command -v systemd-analyze >/dev/null ||
  { echo "systemd-analyze missing: run scripts/install-deps.sh" >&2; exit 1; }
for b in "$hubd" "$spoked"; do [[ -x "$b" ]] || { echo "not executable: $b" >&2; exit 1; }; done

root=$(mktemp -d /tmp/geofs-systemd-verify.XXXXXX)
spoked_pid=
cleanup() {
  if [[ -n "$spoked_pid" ]]; then kill "$spoked_pid" 2>/dev/null || true; wait "$spoked_pid" 2>/dev/null || true; fi
  rm -rf "$root"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL $*" >&2; failures=$((failures + 1)); }

# --- systemd-analyze verify in a throw-away root
mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd" "$root/usr/local/bin" \
  "$root/usr/local/libexec/geofs" "$root/etc/geofs"
cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
cp "$units/geofs-hubd.service" "$units/geofs-spoked@.service" "$root/etc/systemd/system/"
for b in geofs-hubd geofs-spoked; do
  printf '#!/bin/sh\nexit 0\n' >"$root/usr/local/bin/$b"
  chmod +x "$root/usr/local/bin/$b"
done
cp "$units/geofs-wait-ready" "$root/usr/local/libexec/geofs/"
cp "$units/hubd.env" "$root/etc/geofs/hubd.env"
cp "$units/spoked.env.example" "$root/etc/geofs/spoked-datasets.env"
for unit in geofs-hubd.service geofs-spoked@datasets.service; do
  if out=$(systemd-analyze verify --man=no --root="$root" "$unit" 2>&1) && [[ -z "$out" ]]; then
    echo "ok   systemd-analyze verify $unit"
  else
    fail "systemd-analyze verify $unit:"
    echo "$out" >&2
  fi
done

# --- flags and variables
# The daemon's own command line: ExecStart= (ExecStartPost runs the readiness
# check, whose flags are its own) and the *_ARGS lines of the environment
# file, commented examples included.
exec_start() { grep -E '^ExecStart=' "$1"; }
args_lines() { grep -E "^#? *${2}=" "$1"; }

check_unit() {
  local unit=$1 env=$2 binary=$3 args_var=$4 var
  { exec_start "$units/$unit"; args_lines "$units/$env" "$args_var"; } |
    check_flags "$binary" "$unit + $env" || fail "$unit: unknown flags"
  exec_start "$units/$unit" | grep -q "/$(basename "$binary") " ||
    fail "$unit: ExecStart does not run $(basename "$binary")"
  # Each ${NAME} or $NAME in ExecStart and ExecStartPost must be set in the
  # environment file (an empty value only for the *_ARGS catch-all).
  for var in $(grep -E '^ExecStart(Post)?=' "$units/$unit" | grep -oE '\$\{?[A-Z_]+' |
    tr -d '${' | sort -u); do
    if ! grep -qE "^$var=" "$units/$env"; then
      fail "$unit expands \$$var, which $env does not set"
    elif [[ "$var" != "$args_var" ]] && grep -qE "^$var=\$" "$units/$env"; then
      fail "$env: $var is empty"
    fi
  done
}
check_unit geofs-hubd.service hubd.env "$hubd" GEOFS_HUBD_ARGS
check_unit geofs-spoked@.service spoked.env.example "$spoked" GEOFS_SPOKED_ARGS
for unit in geofs-hubd.service geofs-spoked@.service; do
  for line in LimitMEMLOCK=infinity Restart=on-failure ProtectSystem=strict NoNewPrivileges=yes \
    PrivateTmp=yes ProtectHome=yes User=geofs; do
    grep -qx "$line" "$units/$unit" || fail "$unit: no $line"
  done
done
grep -qx AmbientCapabilities=CAP_NET_BIND_SERVICE "$units/geofs-spoked@.service" ||
  fail "geofs-spoked@.service: no AmbientCapabilities=CAP_NET_BIND_SERVICE"

# --- geofs-wait-ready: a port that listens (a hub-less spoke in standalone
# mode picks one), and a closed one.
export_dir="$root/export"
mkdir -p "$export_dir"
"$spoked" --export-dir "$export_dir" --listen 127.0.0.1 --nfs-port 0 --mount-port 0 \
  --state-dir "$root/state" 2>"$root/spoked.log" &
spoked_pid=$!
port=
for _ in $(seq 100); do
  port=$(grep -oE ' nfs=[0-9]+' "$root/spoked.log" | head -1 | cut -d= -f2) && [[ -n "$port" ]] && break
  kill -0 "$spoked_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$port" ]]; then
  fail "standalone geofs-spoked did not report its port: $(cat "$root/spoked.log")"
else
  "$units/geofs-wait-ready" --timeout 10 "127.0.0.1:$port" && echo "ok   geofs-wait-ready on a listening port" ||
    fail "geofs-wait-ready did not see 127.0.0.1:$port"
  kill "$spoked_pid"
  wait "$spoked_pid" 2>/dev/null || true
  spoked_pid=
  if "$units/geofs-wait-ready" --timeout 1 "127.0.0.1:$port" 2>/dev/null; then
    fail "geofs-wait-ready succeeded on a closed port"
  else
    echo "ok   geofs-wait-ready times out on a closed port"
  fi
fi

if ((failures)); then
  echo "systemd_verify: $failures failure(s)" >&2
  exit 1
fi
echo "systemd_verify: all checks passed"
