#!/usr/bin/env bash
# The main job, end to end on one machine: install what geofs needs, build it,
# start a hub with its embedded defaults (RocksDB namespace and a local chunk
# store inside its data directory), import a sample data set into it with
# geofsctl, and read every file back over NFSv3 with a real NFS client
# (libnfs's nfs-ls / nfs-cat), checking bytes; then serve the same directory
# with the standalone geofs-spoked and read it back the same way.
#
# The spoke paired with the hub (a coherent cache next to the GPUs) is the next
# milestone; until then the hub's own NFS export stands in for it.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target geofs-spoked geofs-hubd geofsctl

work=$(mktemp -d /tmp/geofs-demo.XXXXXX)
daemon_pid=
hub_pid=
cleanup() {
  for pid in $daemon_pid $hub_pid; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

# A small sample data set: shards of random bytes and a text manifest.
data="$work/data"
mkdir -p "$data/train" "$data/val"
for i in 0 1 2 3; do head -c $((256 * 1024 + i * 1000)) /dev/urandom >"$data/train/shard-$i.bin"; done
head -c 65536 /dev/urandom >"$data/val/shard-0.bin"
(cd "$data" && find . -type f -name '*.bin' | sort >manifest.txt)

# Waits until `log` has the line with the bound ports; prints it.
wait_for_ports() {
  local log=$1 pid=$2
  for _ in $(seq 200); do
    grep -q " nfs=[0-9]" "$log" && { grep -m1 " nfs=[0-9]" "$log"; return 0; }
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.1
  done
  cat "$log" >&2
  return 1
}

# Reads every file of the manifest under export path `prefix` through NFS and
# compares it with the local copy.
read_back() {
  local prefix=$1 nfs_port=$2 mount_port=$3 failures=0 f want got
  local query="version=3&nfsport=$nfs_port&mountport=$mount_port&autoreconnect=0"
  echo "--- nfs-ls of nfs://127.0.0.1${prefix:-/}"
  nfs-ls -R "nfs://127.0.0.1${prefix:-/}?$query"
  echo "--- reading every file back through NFS"
  while read -r f; do
    f=${f#./}
    want=$(sha256sum <"$data/$f" | cut -d' ' -f1)
    got=$(nfs-cat "nfs://127.0.0.1$prefix/$f?$query" | sha256sum | cut -d' ' -f1)
    if [[ "$want" == "$got" ]]; then echo "ok   $f"; else echo "FAIL $f"; failures=$((failures + 1)); fi
  done <"$data/manifest.txt"
  ((failures == 0)) || { echo "$failures file(s) differ" >&2; return 1; }
}

echo "=== geofs-hubd with its embedded defaults"
"$build_dir/src/hub/geofs-hubd" --data-dir "$work/hub" --listen 127.0.0.1:0 \
  --nfs-port 0 --mount-port 0 2>"$work/hubd.log" &
hub_pid=$!
line=$(wait_for_ports "$work/hubd.log" "$hub_pid")
grpc=$(sed -E 's/.*grpc=([^ ]+).*/\1/' <<<"$line")
hub_nfs=$(sed -E 's/.*nfs=([0-9]+).*/\1/' <<<"$line")
hub_mount=$(sed -E 's/.*mount=([0-9]+).*/\1/' <<<"$line")
echo "hub: gRPC at $grpc, NFS at 127.0.0.1 nfs=$hub_nfs mount=$hub_mount"
"$build_dir/src/cli/geofsctl" --hub "$grpc" import "$data" /datasets
"$build_dir/src/cli/geofsctl" --hub "$grpc" fsck --verify-data
read_back /datasets "$hub_nfs" "$hub_mount"

echo "=== geofs-spoked serving the directory standalone"
# Port 0: the daemon picks free ports and logs them.
"$build_dir/src/spoke/geofs-spoked" --export-dir "$data" --listen 127.0.0.1 \
  --nfs-port 0 --mount-port 0 --state-dir "$work/state" 2>"$work/spoked.log" &
daemon_pid=$!
line=$(wait_for_ports "$work/spoked.log" "$daemon_pid")
nfs_port=$(sed -E 's/.*nfs=([0-9]+).*/\1/' <<<"$line")
mount_port=$(sed -E 's/.*mount=([0-9]+).*/\1/' <<<"$line")
read_back "" "$nfs_port" "$mount_port"
echo "all files read back intact through NFSv3, from the hub and from the standalone server"
