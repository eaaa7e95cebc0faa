#!/usr/bin/env bash
# monitoring_check.sh GEOFS_HUBD GEOFS_SPOKED
#
# Every geofs_* metric that deploy/monitoring/ (the Grafana dashboard) uses
# must be one a running spoke serves: starts a hub and a spoke over it on
# free ports, reads the spoke's /metrics and compares the names.
set -euo pipefail
hubd=${1:?usage: monitoring_check.sh GEOFS_HUBD GEOFS_SPOKED}
spoked=${2:?usage: monitoring_check.sh GEOFS_HUBD GEOFS_SPOKED}
here=$(cd "$(dirname "$0")" && pwd)
monitoring=$(cd "$here/../../deploy/monitoring" && pwd)

work=$(mktemp -d /tmp/geofs-monitoring-check.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

wait_for_line() {
  local log=$1 pid=$2 pattern=$3
  for _ in $(seq 300); do
    if grep -qE -- "$pattern" "$log"; then grep -m1 -oE -- "$pattern" "$log"; return 0; fi
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  cat "$log" >&2
  return 1
}

: >"$work/hubd.log"
: >"$work/spoked.log"
"$hubd" --data-dir "$work/hub" --listen 127.0.0.1:0 2>>"$work/hubd.log" &
pids+=($!)
hub=$(wait_for_line "$work/hubd.log" "${pids[0]}" 'grpc=[0-9.]+:[0-9]+' | cut -d= -f2)
"$spoked" --hub "$hub" --portal / --cache-dir "$work/cache" --listen 127.0.0.1 \
  --nfs-port 0 --mount-port 0 --metrics-port 0 2>>"$work/spoked.log" &
pids+=($!)
port=$(wait_for_line "$work/spoked.log" "${pids[1]}" 'metrics on [0-9.]+:[0-9]+' | sed -E 's/.*:([0-9]+)$/\1/')
curl -fsS "http://127.0.0.1:$port/metrics" >"$work/metrics.txt"
served=$(grep -oE '^geofs_[a-z0-9_]+' "$work/metrics.txt" | sort -u)

used=$(cat "$monitoring"/*.json "$monitoring"/*.yml | grep -oE 'geofs_[a-z0-9_]+' | sort -u)
[[ -n "$used" ]] || { echo "FAIL no geofs_ metric found in $monitoring" >&2; exit 1; }
bad=0
for name in $used; do
  if grep -qxF "$name" <<<"$served"; then
    echo "ok   $name"
  else
    echo "FAIL $name is not served by geofs-spoked /metrics" >&2
    bad=$((bad + 1))
  fi
done
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$monitoring/grafana-geofs-spokes.json" ||
  { echo "FAIL grafana-geofs-spokes.json is not JSON" >&2; bad=$((bad + 1)); }
((bad == 0)) || { echo "monitoring_check: $bad failure(s)" >&2; exit 1; }
echo "monitoring_check: all $(wc -w <<<"$used") metric names served"
