#!/usr/bin/env bash
# The main job, end to end on one machine: install what geofs needs, build it,
# serve a sample data set over NFSv3 with geofs-spoked, and read every file
# back through a real NFS client (libnfs's nfs-ls / nfs-cat), checking bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target geofs-spoked

work=$(mktemp -d /tmp/geofs-demo.XXXXXX)
daemon_pid=
cleanup() {
  [[ -n "$daemon_pid" ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# A small sample data set: shards of random bytes and a text manifest.
data="$work/data"
mkdir -p "$data/train" "$data/val"
for i in 0 1 2 3; do head -c $((256 * 1024 + i * 1000)) /dev/urandom >"$data/train/shard-$i.bin"; done
head -c 65536 /dev/urandom >"$data/val/shard-0.bin"
(cd "$data" && find . -type f -name '*.bin' | sort >manifest.txt)

# Port 0: the daemon picks free ports and logs them.
"$build_dir/src/spoke/geofs-spoked" --export-dir "$data" --listen 127.0.0.1 \
  --nfs-port 0 --mount-port 0 --state-dir "$work/state" 2>"$work/spoked.log" &
daemon_pid=$!
for _ in $(seq 100); do
  grep -q " nfs=[0-9]" "$work/spoked.log" && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/spoked.log"; exit 1; }
  sleep 0.1
done
line=$(grep -m1 " nfs=[0-9]" "$work/spoked.log")
nfs_port=$(sed -E 's/.*nfs=([0-9]+).*/\1/' <<<"$line")
mount_port=$(sed -E 's/.*mount=([0-9]+).*/\1/' <<<"$line")
url="nfs://127.0.0.1/?version=3&nfsport=$nfs_port&mountport=$mount_port&autoreconnect=0"
echo "geofs-spoked serves $data at $url"

echo "--- nfs-ls of the export"
nfs-ls -R "$url"
echo "--- reading every file back through NFS"
failures=0
while read -r f; do
  f=${f#./}
  want=$(sha256sum <"$data/$f" | cut -d' ' -f1)
  got=$(nfs-cat "nfs://127.0.0.1/$f?version=3&nfsport=$nfs_port&mountport=$mount_port&autoreconnect=0" | sha256sum | cut -d' ' -f1)
  if [[ "$want" == "$got" ]]; then echo "ok   $f"; else echo "FAIL $f"; failures=$((failures + 1)); fi
done <"$data/manifest.txt"
((failures == 0)) || { echo "$failures file(s) differ"; exit 1; }
echo "all files read back intact through NFSv3"
