#!/usr/bin/env bash
# The main job, end to end on one machine, as a GPU site runs it:
#   1. install what geofs needs and build it;
#   2. start a hub (geofs-hubd) with its embedded defaults: RocksDB namespace
#      and a local chunk store inside its data directory;
#   3. import a sample data set into the hub's /datasets with geofsctl;
#   4. start a spoke (geofs-spoked) over the hub's portal /datasets, with its
#      own chunk cache, the way it runs next to the GPUs;
#   5. read every file through the spoke with a real NFSv3 client (libnfs's
#      nfs-cat), checking bytes: cold (chunks come from the hub), then warm
#      (chunks come from the spoke's cache);
#   6. run a small PyTorch DataLoader over the spoke's export, mounted
#      through the geofs-nfs-fuse bridge (a userspace NFS client: no kernel
#      NFS client needed);
#   7. print a summary: files, bytes, the spoke's hit ratio and bytes from
#      the hub (from its metrics endpoint), where the logs are.
# Interrupting it (Ctrl-C) at any point stops every process it started and
# unmounts the bridge.
#
# Environment:
#   BUILD_DIR=DIR           build directory (default: build)
#   GEOFS_DEMO_NO_BUILD=1   skip steps 1's install and build: use the binaries
#                           already in BUILD_DIR (the CTest test does this)
#   GEOFS_DEMO_FILES=N      training shards in the sample data set (default 48)
#   GEOFS_DEMO_KEEP=1       keep the hub's data and the spoke's cache too, not
#                           only the logs
#   GEOFS_DEMO_CLEAN=1      keep nothing after a run that succeeded, not even
#                           the logs (the CTest test does this)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build}
if [[ "${GEOFS_DEMO_NO_BUILD:-0}" != 1 ]]; then
  bash scripts/install-deps.sh
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build_dir" -j"$(nproc)" --target geofs-spoked geofs-hubd geofsctl geofs-nfs-fuse
fi
hubd=$build_dir/src/hub/geofs-hubd
spoked=$build_dir/src/spoke/geofs-spoked
geofsctl=$build_dir/src/cli/geofsctl
nfs_fuse=$build_dir/tests/realprog/geofs-nfs-fuse
for b in "$hubd" "$spoked" "$geofsctl" "$nfs_fuse"; do
  [[ -x "$b" ]] || { echo "missing $b: build it (or unset GEOFS_DEMO_NO_BUILD)" >&2; exit 1; }
done
shards=${GEOFS_DEMO_FILES:-48}

work=$(mktemp -d /tmp/geofs-demo.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
mnt=$work/mnt
hub_pid=
spoke_pid=
bridge_pid=
finished=0

mounted() { grep -qF " $mnt " /proc/self/mountinfo 2>/dev/null; }

stop() {
  local pid=$1
  [[ -n "$pid" ]] || return 0
  kill "$pid" 2>/dev/null || return 0
  # The spoke uploads journalled writes before it exits: give it time, then
  # make sure.
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# Runs once, on normal exit, error or signal: bridge first (it holds the
# spoke's connections), then the spoke, then the hub.
cleanup() {
  local rc=$?
  trap - INT TERM EXIT
  if mounted; then
    fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null || true
  fi
  stop "$bridge_pid"
  stop "$spoke_pid"
  stop "$hub_pid"
  if [[ "${GEOFS_DEMO_KEEP:-0}" != 1 ]]; then
    rm -rf "$work/data" "$work/hub" "$work/cache" "$work/manifest.sha256"
    rmdir "$mnt" 2>/dev/null || true
  fi
  if ((finished == 1)) && [[ "${GEOFS_DEMO_CLEAN:-0}" == 1 ]]; then rm -rf "$work"; fi
  if ((finished == 0)); then
    echo "demo stopped early (status $rc); logs in $logs" >&2
    ((rc != 0)) || rc=1
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits until the daemon writing `log` logs a line matching `pattern`; prints
# that line. Fails if the daemon exits first or 60 s pass.
wait_for_line() {
  local log=$1 pid=$2 pattern=$3
  for _ in $(seq 600); do
    if grep -qE -- "$pattern" "$log"; then grep -m1 -E -- "$pattern" "$log"; return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "daemon exited:" >&2; cat "$log" >&2; return 1; }
    sleep 0.1
  done
  echo "timed out waiting for '$pattern' in $log" >&2
  return 1
}

# The value of spoke metric `name` (summed over its series).
metric() {
  awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%d", s }' "$2"
}
scrape() { curl -fsS "http://127.0.0.1:$metrics_port/metrics" >"$1"; }

echo "=== sample data set"
data=$work/data
mkdir -p "$data/train" "$data/val"
for i in $(seq 0 $((shards - 1))); do
  head -c $((192 * 1024 + i * 4099)) /dev/urandom >"$data/train/shard-$(printf %03d "$i").bin"
done
for i in 0 1 2 3; do head -c $((64 * 1024 + i * 777)) /dev/urandom >"$data/val/shard-$i.bin"; done
(cd "$data" && find . -type f | sort | sed 's|^\./||' | xargs sha256sum) >"$work/manifest.sha256"
files=$(wc -l <"$work/manifest.sha256")
bytes=$(cd "$data" && cat $(cut -d' ' -f3 "$work/manifest.sha256") | wc -c)
echo "$files files, $bytes bytes in $data"

echo "=== hub: geofs-hubd with its embedded defaults"
# Each log exists before its daemon starts, so waiting on it never races.
: >"$logs/hubd.log"
: >"$logs/spoked.log"
"$hubd" --data-dir "$work/hub" --listen 127.0.0.1:0 2>>"$logs/hubd.log" &
hub_pid=$!
line=$(wait_for_line "$logs/hubd.log" "$hub_pid" "listening grpc=")
hub=$(sed -E 's/.*grpc=([^ ]+).*/\1/' <<<"$line")
echo "hub at $hub (gRPC), data in $work/hub"

echo "=== import into the hub's /datasets"
"$geofsctl" --hub "$hub" import "$data" /datasets | tail -3
"$geofsctl" --hub "$hub" fsck --verify-data | tail -1

echo "=== spoke: geofs-spoked over the hub's portal /datasets"
"$spoked" --hub "$hub" --portal /datasets --cache-dir "$work/cache" --listen 127.0.0.1 \
  --nfs-port 0 --mount-port 0 --metrics-port 0 2>>"$logs/spoked.log" &
spoke_pid=$!
line=$(wait_for_line "$logs/spoked.log" "$spoke_pid" " nfs=[0-9]+ mount=[0-9]+")
nfs_port=$(sed -E 's/.* nfs=([0-9]+).*/\1/' <<<"$line")
mount_port=$(sed -E 's/.* mount=([0-9]+).*/\1/' <<<"$line")
metrics_port=$(grep -m1 -oE 'metrics on [^ ]+:[0-9]+' "$logs/spoked.log" | sed -E 's/.*:([0-9]+)$/\1/')
query="version=3&nfsport=$nfs_port&mountport=$mount_port&autoreconnect=0"
url="nfs://127.0.0.1/datasets"
echo "spoke serves export /datasets: nfs=$nfs_port mount=$mount_port, metrics on 127.0.0.1:$metrics_port"
echo "(a Linux client would: mount -t nfs -o vers=3,proto=tcp,nolock,port=$nfs_port,mountport=$mount_port 127.0.0.1:/datasets /mnt/data)"

# Reads every file of the manifest through the spoke with nfs-cat and checks
# its sha256.
read_all() {
  local failures=0 want f got
  while read -r want f; do
    got=$(nfs-cat "$url/$f?$query" | sha256sum | cut -d' ' -f1)
    [[ "$got" == "$want" ]] || { echo "FAIL $f: sha256 $got, expected $want" >&2; failures=$((failures + 1)); }
  done <"$work/manifest.sha256"
  ((failures == 0)) || { echo "$failures file(s) differ" >&2; return 1; }
}

nfs-ls "$url/?$query" | sed 's/^/  /'
scrape "$work/m0.txt"
echo "=== cold read: every file through the spoke (chunks come from the hub)"
start=$(date +%s%N)
read_all
cold_ms=$((($(date +%s%N) - start) / 1000000))
scrape "$work/m1.txt"
echo "all $files files intact ($cold_ms ms)"
echo "=== warm read: the same files again (chunks come from the spoke's cache)"
start=$(date +%s%N)
read_all
warm_ms=$((($(date +%s%N) - start) / 1000000))
scrape "$work/m2.txt"
echo "all $files files intact ($warm_ms ms)"

echo "=== PyTorch DataLoader through the FUSE bridge over the spoke"
mkdir -p "$mnt"
"$nfs_fuse" "$url?$query" "$mnt" -f >"$logs/nfs-fuse.log" 2>&1 &
bridge_pid=$!
for _ in $(seq 200); do
  mounted && break
  kill -0 "$bridge_pid" 2>/dev/null || { cat "$logs/nfs-fuse.log" >&2; exit 1; }
  sleep 0.1
done
mounted || { echo "geofs-nfs-fuse did not mount $mnt" >&2; exit 1; }
if ! /usr/bin/python3 tests/realprog/dataloader_check.py --root "$mnt" \
  --manifest "$work/manifest.sha256" --workers 2 --epochs 2 --batch-size 8 >"$logs/dataloader.log" 2>&1; then
  cat "$logs/dataloader.log" >&2
  echo "the DataLoader check failed" >&2
  exit 1
fi
sed 's/^/  /' "$logs/dataloader.log"
fusermount3 -u "$mnt"
wait "$bridge_pid" 2>/dev/null || true
bridge_pid=
scrape "$work/m3.txt"

# The summary, from the spoke's own counters.
delta() { echo $(($(metric "$1" "$3") - $(metric "$1" "$2"))); }
ratio() { awk -v h="$1" -v m="$2" 'BEGIN { if (h + m == 0) print "n/a"; else printf "%.1f%%", 100 * h / (h + m) }'; }
hits=$(metric geofs_spoke_chunk_hits_total "$work/m3.txt")
misses=$(metric geofs_spoke_chunk_misses_total "$work/m3.txt")
cold_misses=$(delta geofs_spoke_chunk_misses_total "$work/m0.txt" "$work/m1.txt")
cold_from_hub=$(delta geofs_spoke_bytes_from_hub_total "$work/m0.txt" "$work/m1.txt")
warm_hits=$(delta geofs_spoke_chunk_hits_total "$work/m1.txt" "$work/m2.txt")
warm_misses=$(delta geofs_spoke_chunk_misses_total "$work/m1.txt" "$work/m2.txt")
warm_from_hub=$(delta geofs_spoke_bytes_from_hub_total "$work/m1.txt" "$work/m2.txt")
from_hub=$(metric geofs_spoke_bytes_from_hub_total "$work/m3.txt")
from_cache=$(metric geofs_spoke_bytes_from_cache_total "$work/m3.txt")
cp "$work/m3.txt" "$logs/spoke-metrics.txt"
finished=1
kept="removed on exit (GEOFS_DEMO_KEEP=1 keeps them)"
[[ "${GEOFS_DEMO_KEEP:-0}" != 1 ]] || kept="kept"
logs_note="$logs (hubd.log, spoked.log, nfs-fuse.log, dataloader.log, spoke-metrics.txt)"
[[ "${GEOFS_DEMO_CLEAN:-0}" != 1 ]] || logs_note="removed on exit (GEOFS_DEMO_CLEAN=1)"
cat <<EOF

=== summary
data set        $files files, $bytes bytes, imported into the hub's /datasets
hub             geofs-hubd at $hub; its data ($work/hub) and the spoke's cache are $kept
spoke           geofs-spoked serving /datasets over NFSv3 (nfs=$nfs_port mount=$mount_port)
cold read       $files files checked over NFS in $cold_ms ms; $cold_misses chunks, $cold_from_hub bytes from the hub
warm read       $files files checked over NFS in $warm_ms ms; hit ratio $(ratio "$warm_hits" "$warm_misses"), $warm_from_hub bytes from the hub
DataLoader      2 epochs x $files samples verified through the FUSE bridge
spoke totals    chunk hit ratio $(ratio "$hits" "$misses") ($hits hits, $misses misses); $from_hub bytes from the hub, $from_cache bytes from its cache
logs            $logs_note
EOF
