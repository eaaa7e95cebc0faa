#!/usr/bin/env bash
# geofs across an emulated WAN: cold (first) reads through a spoke whose hub
# is behind the WAN, against the same load reading NFS-Ganesha's export
# across the same WAN; then a checkpoint-like write stream through the spoke
# to the hub. See docs/benchmarks.md ("Across an emulated WAN").
#
# The WAN: a network namespace (the "site": spoke, load generator, delay
# proxies) joined to the root namespace (the "hub side": geofs-hubd,
# NFS-Ganesha) by a veth pair shaped with `tc tbf` in both directions, plus
# geofs-delay-proxy adding RTT/2 each way on every connection that crosses
# it. WAN bytes are counted by the proxies (TCP payload, both directions).
#
# Usage: bench/wan_bench.sh [options]     (as root)
#   --parts "cold checkpoint"  what to run (default both)
#   --rate RATE             tbf rate each way, tc syntax (default 1gbit)
#   --rtt-ms MS             round-trip delay added by the proxies (default 20)
#   --kinds "random text"   data: incompressible, and text-like (4 bits of entropy per byte)
#   --workloads "seq dataset"  cold-read workloads (bench/nfs_load.cc)
#   --file-size SIZE        seq.bin (default 1GiB)
#   --dataset-files N       data set files of 100-200 KiB (default 4000)
#   --connections N --qd N  load generator (default 4 x 8)
#   --checkpoint-size SIZE  checkpoint file (default 4GiB)
#   --work DIR              data, hub, caches (default /var/tmp/geofs-wan-bench; data reused)
#   --build-dir DIR         (default <repo>/build-release)   --no-build
#   --out DIR               results (default <build-dir>/bench-results/wan-<time>)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PARTS="cold checkpoint"
RATE=1gbit
RTT_MS=20
KINDS="random text"
WORKLOADS="seq dataset"
FILE_SIZE=1GiB
DATASET_FILES=4000
CONNECTIONS=4
QD=8
CKPT_SIZE=4GiB
WORK=/var/tmp/geofs-wan-bench
BUILD_DIR="$ROOT/build-release"
BUILD=1
OUT_DIR=""

die() { echo "wan_bench: $*" >&2; exit 1; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --parts) PARTS=$2; shift ;;
    --rate) RATE=$2; shift ;;
    --rtt-ms) RTT_MS=$2; shift ;;
    --kinds) KINDS=$2; shift ;;
    --workloads) WORKLOADS=$2; shift ;;
    --file-size) FILE_SIZE=$2; shift ;;
    --dataset-files) DATASET_FILES=$2; shift ;;
    --connections) CONNECTIONS=$2; shift ;;
    --qd) QD=$2; shift ;;
    --checkpoint-size) CKPT_SIZE=$2; shift ;;
    --work) WORK=$2; shift ;;
    --build-dir) BUILD_DIR=$2; shift ;;
    --no-build) BUILD=0 ;;
    --out) OUT_DIR=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
[[ $(id -u) -eq 0 ]] || die "run as root (network namespaces, tc, Ganesha)"
[[ -n "$OUT_DIR" ]] || OUT_DIR="$BUILD_DIR/bench-results/wan-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT_DIR" "$WORK"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
WORK=$(cd "$WORK" && pwd)

BIN=(bench/geofs-nfs-load bench/geofs-delay-proxy bench/geofs-checkpoint-write
  src/spoke/geofs-spoked src/hub/geofs-hubd src/cli/geofsctl)
if [[ $BUILD -eq 1 ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target $(for b in "${BIN[@]}"; do basename "$b"; done)
fi
for b in "${BIN[@]}"; do [[ -x "$BUILD_DIR/$b" ]] || die "$BUILD_DIR/$b is missing"; done
LOAD=$BUILD_DIR/bench/geofs-nfs-load
PROXY=$BUILD_DIR/bench/geofs-delay-proxy
CKPT=$BUILD_DIR/bench/geofs-checkpoint-write
SPOKED=$BUILD_DIR/src/spoke/geofs-spoked
HUBD=$BUILD_DIR/src/hub/geofs-hubd
CTL=$BUILD_DIR/src/cli/geofsctl
for t in jq curl tc ganesha.nfsd rpcbind; do command -v "$t" >/dev/null || die "$t is missing"; done

# ---- the emulated WAN ---------------------------------------------------------------
# Names unique to this run; everything created here is removed on exit.
NS=geofs-wan-$$
VR=gwr$$   # root side of the veth pair
VS=gws$$   # site side
OCTET=$((RANDOM % 250 + 1))
while ip -o addr | grep -q "10\.231\.$OCTET\."; do OCTET=$((RANDOM % 250 + 1)); done
HUB_IP=10.231.$OCTET.1
SITE_IP=10.231.$OCTET.2
# Site-side ports: the namespace is ours alone, so fixed ports are free.
SPOKE_NFS=20049 SPOKE_MNT=20048 SPOKE_METRICS=20090
PX_HUB=21000 PX_GNFS=21001 PX_GMNT=21002

PIDS=()
RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/geofs-wan.XXXXXX")
stop_pid() {  # pid: TERM, then KILL after 30 s
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[$i]}"; done
  ip netns del "$NS" 2>/dev/null || true
  ip link del "$VR" 2>/dev/null || true
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs a command in the site namespace. For background daemons use
# "${NSX[@]}" CMD & directly: nsenter execs CMD itself (unlike `ip netns
# exec`, which forks), and a backgrounded shell function would be a subshell,
# so only then is $! CMD's own pid, which signals and cleanup must reach.
NSX=(nsenter --net="/run/netns/$NS" --)
ns() { "${NSX[@]}" "$@"; }

# Bucket of 10 ms of traffic (at least 64 KiB): tbf's burst must hold a
# GSO packet, and a bigger bucket would let bursts pass at wire speed.
rate_bits=$(python3 - "$RATE" <<'EOF'
import re, sys
m = re.fullmatch(r"([0-9.]+)([kmg]?)(bit|bps)", sys.argv[1].lower())
if not m: sys.exit("bad --rate " + sys.argv[1])
v = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
print(int(v * (8 if m.group(3) == "bps" else 1)))
EOF
)
BURST=$(( rate_bits / 8 / 100 > 65536 ? rate_bits / 8 / 100 : 65536 ))

ip netns add "$NS"
ip link add "$VR" type veth peer name "$VS"
ip link set "$VS" netns "$NS"
ip addr add "$HUB_IP/30" dev "$VR"
ip link set "$VR" up
ns ip addr add "$SITE_IP/30" dev "$VS"
ns ip link set "$VS" up
ns ip link set lo up
tc qdisc add dev "$VR" root tbf rate "$RATE" burst "$BURST" latency 50ms
ns tc qdisc add dev "$VS" root tbf rate "$RATE" burst "$BURST" latency 50ms
echo "WAN: namespace $NS, $HUB_IP (hub side) <-> $SITE_IP (site), tbf $RATE each way" \
  "(burst $BURST B), proxies add ${RTT_MS} ms RTT"

wait_port() {  # where(root|ns) host port seconds pid
  local where=$1 host=$2 port=$3 secs=$4 pid=$5
  for _ in $(seq 1 $((secs * 10))); do
    kill -0 "$pid" 2>/dev/null || return 1
    if [[ $where == ns ]]; then
      ns bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null && return 0
    else
      bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null && return 0
    fi
    sleep 0.1
  done
  return 1
}
free_port() {  # host
  python3 -c "import socket; s=socket.socket(); s.bind(('$1',0)); print(s.getsockname()[1])"
}

# Proxies run in the site namespace; each forwards one site port to the hub side.
declare -A PROXY_PID
start_proxy() {  # name site-port target-port
  local name=$1 port=$2 target=$3
  "${NSX[@]}" "$PROXY" --listen "127.0.0.1:$port" --target "$HUB_IP:$target" \
    --delay-ms "$(python3 -c "print($RTT_MS / 2)")" --stats-file "$RUN_DIR/proxy-$name.json" \
    >"$OUT_DIR/proxy-$name.log" 2>&1 &
  PROXY_PID[$name]=$!
  PIDS+=($!)
  wait_port ns 127.0.0.1 "$port" 10 $! || die "proxy $name did not start"
}
proxy_bytes() {  # name -> "upstream downstream" so far
  local f=$RUN_DIR/proxy-$1.json
  rm -f "$f"
  kill -USR1 "${PROXY_PID[$1]}"
  for _ in $(seq 1 100); do [[ -s $f ]] && break; sleep 0.02; done
  jq -r '"\(.upstream_bytes) \(.downstream_bytes)"' "$f"
}

# ---- data ----------------------------------------------------------------------------
SPEC=(--file-size "$FILE_SIZE" --dataset-files "$DATASET_FILES" --listing-entries 10)
prepare_data() {
  local random=$WORK/data-random text=$WORK/data-text
  mkdir -p "$random"
  "$LOAD" --prepare "$random" "${SPEC[@]}" >/dev/null
  local stamp; stamp=$(cat "$random/.nfs-load-manifest")
  if [[ ! -f $text.done || $(cat "$text.done") != "$stamp" ]]; then
    echo "deriving text-like data in $text"
    rm -rf "$text"
    (cd "$random" && find . -type d -exec mkdir -p "$text/{}" \;)
    # Every byte mapped onto 16 letters: 4 bits of entropy per byte, same
    # layout and sizes as the random set.
    local map; map=$(printf 'a-p%.0s' $(seq 16))
    (cd "$random" && find . -type f ! -name .nfs-load-manifest -print0 |
      xargs -0 -P2 -I{} sh -c "tr '\\000-\\377' '$map' <'{}' >'$text/{}'")
    chmod --reference="$random/meta" "$text/meta" 2>/dev/null || true
    echo "$stamp" >"$text.done"
  fi
  sync
  find "$random" "$text" -type f -exec cat {} + >/dev/null
}

# ---- hub side: geofs-hubd and NFS-Ganesha ---------------------------------------------
HUB_PORT=$(free_port "$HUB_IP")
start_hub() {
  rm -rf "$WORK/hub"; mkdir -p "$WORK/hub"
  "$HUBD" --data-dir "$WORK/hub" --listen "$HUB_IP:$HUB_PORT" --log-level warn \
    >"$OUT_DIR/hub.log" 2>&1 &
  HUB_PID=$!
  PIDS+=($!)
  wait_port root "$HUB_IP" "$HUB_PORT" 30 "$HUB_PID" || die "geofs-hubd failed (see $OUT_DIR/hub.log)"
}
hub_import() {  # dir hub-path
  local t0=$SECONDS
  "$CTL" --hub "$HUB_IP:$HUB_PORT" import "$1" "$2" >>"$OUT_DIR/import.log" 2>&1 ||
    die "import of $1 failed (see $OUT_DIR/import.log)"
  echo "imported $1 as $2 in $((SECONDS - t0)) s"
}

G_NFS=$(free_port "$HUB_IP")
G_MNT=$(free_port "$HUB_IP")
start_ganesha() {
  local rpcbind_pid=""
  if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
    rpcbind -f -w >"$OUT_DIR/rpcbind.log" 2>&1 &
    rpcbind_pid=$!
    for _ in $(seq 1 50); do rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break; sleep 0.1; done
  fi
  {
    cat <<EOF
NFS_CORE_PARAM {
  Bind_addr = $HUB_IP; NFS_Port = $G_NFS; MNT_Port = $G_MNT; Protocols = 3;
  Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false;
}
NFSV4 { Graceless = true; }
MDCACHE { Entries_HWMark = 500000; }
LOG { Default_Log_Level = WARN; }
EOF
    local id=1 kind
    for kind in $KINDS; do
      cat <<EOF
EXPORT {
  Export_Id = $id; Path = $WORK/data-$kind; Pseudo = $WORK/data-$kind; Protocols = 3;
  Transports = TCP; Access_Type = RW; Squash = No_Root_Squash; SecType = sys;
  MaxRead = 1048576; MaxWrite = 1048576; PrefRead = 1048576; PrefWrite = 1048576;
  FSAL { Name = VFS; }
}
EOF
      id=$((id + 1))
    done
  } >"$RUN_DIR/ganesha.conf"
  ganesha.nfsd -F -f "$RUN_DIR/ganesha.conf" -L "$OUT_DIR/ganesha.log" -p "$RUN_DIR/ganesha.pid" \
    >"$OUT_DIR/ganesha.out" 2>&1 &
  GANESHA_PID=$!
  PIDS+=($!)
  wait_port root "$HUB_IP" "$G_NFS" 30 "$GANESHA_PID" && wait_port root "$HUB_IP" "$G_MNT" 5 "$GANESHA_PID" ||
    die "NFS-Ganesha failed (see $OUT_DIR/ganesha.log)"
  # As in compare_ganesha.sh: rpcbind only while Ganesha registers.
  [[ -n $rpcbind_pid ]] && stop_pid "$rpcbind_pid"
  return 0
}

# ---- site side: the spoke -------------------------------------------------------------
SPOKE_PID=""
start_spoke() {  # portal cache-dir (emptied: a cold cache)
  stop_spoke
  rm -rf "$2"; mkdir -p "$2"
  "${NSX[@]}" "$SPOKED" --hub "127.0.0.1:$PX_HUB" --portal "$1" --cache-dir "$2" --listen 127.0.0.1 \
    --nfs-port "$SPOKE_NFS" --mount-port "$SPOKE_MNT" --metrics-port "$SPOKE_METRICS" \
    --squash none --log-level warn >>"$OUT_DIR/spoke.log" 2>&1 &
  SPOKE_PID=$!
  PIDS+=($!)
  wait_port ns 127.0.0.1 "$SPOKE_NFS" 60 "$SPOKE_PID" && wait_port ns 127.0.0.1 "$SPOKE_MNT" 5 "$SPOKE_PID" ||
    die "geofs-spoked failed (see $OUT_DIR/spoke.log)"
}
stop_spoke() { [[ -z $SPOKE_PID ]] || stop_pid "$SPOKE_PID"; SPOKE_PID=""; }
spoke_metric() {  # name -> value (summed over labels)
  ns curl -sf "http://127.0.0.1:$SPOKE_METRICS/metrics" |
    awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $2} END {printf "%.0f\n", s}'
}

# ---- part 1: cold reads -----------------------------------------------------------------
ops_for() {  # workload kind -> ops that read the whole data once
  case $1 in
    seq) echo $(( ($(stat -c %s "$WORK/data-$2/seq.bin") + 1048575) / 1048576 )) ;;
    dataset) echo "$DATASET_FILES" ;;
    *) die "cold reads support seq and dataset, not $1" ;;
  esac
}
# Runs one read pass and prints "json wan_bytes"; proxies: names to count.
read_pass() {  # label url workload kind json proxies...
  local label=$1 url=$2 w=$3 kind=$4 json=$5; shift 5
  local p before=0 after=0 up down
  for p in "$@"; do read -r up down < <(proxy_bytes "$p"); before=$((before + up + down)); done
  ns "$LOAD" --url "$url" --workload "$w" --ops "$(ops_for "$w" "$kind")" \
    --connections "$CONNECTIONS" --qd "$QD" --label "$label" --json "$json" "${SPEC[@]}" \
    >"$json.txt" 2>&1 || { cat "$json.txt" >&2; die "$label $w ($kind) failed"; }
  for p in "$@"; do read -r up down < <(proxy_bytes "$p"); after=$((after + up + down)); done
  echo $((after - before))
}
row() {  # server kind workload pass json wan
  jq -r --arg s "$1" --arg k "$2" --arg p "$4" --argjson wan "$6" '
    "| \(.workload) | \($k) | \($s) | \($p) | \(.seconds * 100 | round / 100) | \(.mb_per_sec | round) | \(.bytes / 1048576 | round) | \($wan / 1048576 | round) | \(if .bytes > 0 then ($wan / .bytes * 100 | round / 100) else "-" end) | \(.latency.p99_us / 1000 | round) |"' "$5"
}

cold_reads() {
  local table=$OUT_DIR/cold.md kind w json wan
  {
    echo "| workload | data | server | pass | seconds | MB/s | logical MiB | WAN MiB | WAN / logical | p99 ms |"
    echo "|---|---|---|---|---:|---:|---:|---:|---:|---:|"
  } >"$table"
  for kind in $KINDS; do
    for w in $WORKLOADS; do
      echo "[cold $w $kind] spoke over the WAN"
      start_spoke "/$kind" "$WORK/spoke-cache"
      local url="nfs://127.0.0.1/$kind?version=3&nfsport=$SPOKE_NFS&mountport=$SPOKE_MNT&autoreconnect=0"
      json=$OUT_DIR/$w.$kind.spoke.cold.json
      wan=$(read_pass spoke "$url" "$w" "$kind" "$json" hub)
      jq '. + {from_hub_bytes: '"$(spoke_metric geofs_spoke_bytes_from_hub_total)"'}' "$json" >"$json.tmp" && mv "$json.tmp" "$json"
      row geofs-spoke "$kind" "$w" "first (cold)" "$json" "$wan" | tee -a "$table"
      json=$OUT_DIR/$w.$kind.spoke.again.json
      wan=$(read_pass spoke "$url" "$w" "$kind" "$json" hub)
      row geofs-spoke "$kind" "$w" "second" "$json" "$wan" | tee -a "$table"
      stop_spoke

      echo "[cold $w $kind] Ganesha across the WAN"
      url="nfs://127.0.0.1$WORK/data-$kind?version=3&nfsport=$PX_GNFS&mountport=$PX_GMNT&autoreconnect=0"
      json=$OUT_DIR/$w.$kind.ganesha.json
      wan=$(read_pass ganesha "$url" "$w" "$kind" "$json" gnfs gmnt)
      row ganesha "$kind" "$w" "any (no client cache)" "$json" "$wan" | tee -a "$table"
    done
  done
}

# ---- part 2: checkpoint stream ----------------------------------------------------------
checkpoint() {
  local samples=$OUT_DIR/checkpoint-samples.csv json=$OUT_DIR/checkpoint.json
  mkdir -p "$RUN_DIR/empty"
  "$CTL" --hub "$HUB_IP:$HUB_PORT" import "$RUN_DIR/empty" /ckpt >>"$OUT_DIR/import.log" 2>&1
  start_spoke /ckpt "$WORK/spoke-ckpt"
  local logical_before up0 down0
  logical_before=$("$CTL" --hub "$HUB_IP:$HUB_PORT" stats --json | jq .logical_bytes)
  read -r up0 down0 < <(proxy_bytes hub)
  local t0; t0=$(date +%s.%N)
  echo "t_s,wan_up_bytes,wan_down_bytes,journal_bytes" >"$samples"
  (  # samples every 0.5 s of the WAN counters and the journal, until killed
    while :; do
      read -r up down < <(proxy_bytes hub)
      now=$(date +%s.%N)
      echo "$(awk -v a="$now" -v b="$t0" 'BEGIN {printf "%.2f", a - b}'),$((up - up0)),$((down - down0)),$(spoke_metric geofs_spoke_journal_bytes)"
      sleep 0.5
    done
  ) >>"$samples" &
  local sampler=$!
  PIDS+=($sampler)
  echo "[checkpoint] writing $CKPT_SIZE through the spoke"
  ns "$CKPT" --url "nfs://127.0.0.1/ckpt?version=3&nfsport=$SPOKE_NFS&mountport=$SPOKE_MNT&autoreconnect=0" \
    --size "$CKPT_SIZE" --qd 8 --json "$json" | tee "$OUT_DIR/checkpoint.txt"
  local t_acked; t_acked=$(date +%s.%N)
  # "The hub has it": the journal is drained, i.e. every byte is committed.
  while [[ $(spoke_metric geofs_spoke_journal_bytes) != 0 ]]; do sleep 0.2; done
  local t_done; t_done=$(date +%s.%N)
  kill "$sampler" 2>/dev/null || true
  local up down logical_after
  read -r up down < <(proxy_bytes hub)
  logical_after=$("$CTL" --hub "$HUB_IP:$HUB_PORT" stats --json | jq .logical_bytes)
  python3 - "$json" "$samples" "$t0" "$t_acked" "$t_done" "$((up - up0))" "$((down - down0))" \
    "$rate_bits" "$((logical_after - logical_before))" <<'EOF' | tee "$OUT_DIR/checkpoint.md"
import csv, json, sys
j = json.load(open(sys.argv[1]))
t0, t_acked, t_done = map(float, sys.argv[3:6])
up, down, rate_bits, hub_gain = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
rows = [(float(r["t_s"]), int(r["wan_up_bytes"])) for r in csv.DictReader(open(sys.argv[2]))]
# Steady rate: the best 10 s window of the samples (the link's share once the pipe is full).
best = 0.0
for i, (t, b) in enumerate(rows):
    for t2, b2 in rows[i + 1:]:
        if t2 - t >= 10:
            best = max(best, (b2 - b) / (t2 - t)); break
total = t_done - t0
link = rate_bits / 8
# Ramp: when the first window's worth (32 MiB) had crossed the WAN.
first = next((t for t, b in rows if b >= 32 << 20), float("nan"))
gib = j["bytes"] / 2**30
print(f"| checkpoint | {gib:.1f} GiB in 1 MiB UNSTABLE WRITEs (QD {j['qd']}) + COMMIT |")
print("|---|---|")
print(f"| WRITEs acknowledged (spoke journal) | {j['write_seconds']:.1f} s ({j['bytes'] / j['write_seconds'] / 1e6:.0f} MB/s) |")
print(f"| COMMIT answered | +{j['commit_seconds']:.2f} s |")
print(f"| on the hub (journal drained) | {total:.1f} s after the first WRITE ({t_done - t_acked:.1f} s after COMMIT) |")
print(f"| first 32 MiB across the WAN | {first:.1f} s after the first WRITE |")
print(f"| hub logical bytes gained | {hub_gain / 2**30:.2f} GiB |")
print(f"| WAN bytes up / down | {up / 2**30:.2f} GiB / {down / 2**20:.1f} MiB |")
print(f"| end-to-end rate | {j['bytes'] / total / 1e6:.0f} MB/s = {j['bytes'] / total / link:.2f} x the link ({link / 1e6:.0f} MB/s) |")
print(f"| WAN upstream rate, average / best 10 s | {up / total / 1e6:.0f} / {best / 1e6:.0f} MB/s = {up / total / link:.2f} / {best / link:.2f} x the link |")
EOF
  stop_spoke
}

# ---- run -------------------------------------------------------------------------------------
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
prepare_data
start_hub
start_proxy hub "$PX_HUB" "$HUB_PORT"
for kind in $KINDS; do
  [[ " $PARTS " == *" cold "* ]] && hub_import "$WORK/data-$kind" "/$kind"
done
if [[ " $PARTS " == *" cold "* ]]; then
  start_ganesha
  start_proxy gnfs "$PX_GNFS" "$G_NFS"
  start_proxy gmnt "$PX_GMNT" "$G_MNT"
  cold_reads
fi
[[ " $PARTS " == *" checkpoint "* ]] && checkpoint
{
  echo
  echo "command: bench/wan_bench.sh --parts \"$PARTS\" --rate $RATE --rtt-ms $RTT_MS --kinds \"$KINDS\"" \
    "--workloads \"$WORKLOADS\" --file-size $FILE_SIZE --dataset-files $DATASET_FILES" \
    "--connections $CONNECTIONS --qd $QD --checkpoint-size $CKPT_SIZE"
  echo "load average before/after: $LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "machine: $(nproc) cores, kernel $(uname -r)"
} | tee -a "$OUT_DIR/summary.txt"
echo "results in $OUT_DIR"
