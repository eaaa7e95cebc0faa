#!/usr/bin/env bash
# Serves one directory with NFS-Ganesha (VFS FSAL) and with geofs-spoked, runs
# the same NFSv3 workloads (bench/nfs_load.cc) against both, and prints a
# Markdown table of throughput, p99 latency and geofs/Ganesha ratios.
# See docs/benchmarks.md.
#
# Usage: bench/compare_ganesha.sh [options]
#   --quick               small data and short runs: a smoke test (about 2 minutes)
#   --data-dir DIR        where the data set lives (default /var/tmp/geofs-bench-data)
#   --build-dir DIR       CMake build directory (default <repo>/build-release)
#   --out DIR             results and server logs (default <build-dir>/bench-results/<time>)
#   --workloads "A B"     subset of: seq rand4k rand128k dataset meta readdirplus probe
#                         (default: all but probe, LOOKUPs of missing names)
#   --connections N       TCP connections per run (default 4)
#   --qd N                ops in flight per connection (default 8)
#   --duration S          measured seconds per run (default 10)
#   --warmup S            unmeasured warm-up run per server and workload (default 3)
#   --rounds N            measured runs per server and workload, alternating (default 3)
#   --file-size SIZE      size of the sequential/random file (default 2GiB)
#   --dataset-files N     files in the data set (default 20000)
#   --listing-entries N   entries of the READDIRPLUS directory (default 5000)
#   --ganesha-only | --geofs-only   run one side only
#   --geofs-mode MODE     standalone: geofs-spoked --export-dir over the data directory (default);
#                         spoke-over-hub: the data is imported into a geofs-hubd (geofsctl
#                         import) and served by geofs-spoked --hub from its chunk cache, warmed
#                         by reading everything once through the spoke before the runs
#   --spoke-arg ARG       pass ARG to geofs-spoked in spoke-over-hub mode (repeatable),
#                         e.g. --spoke-arg --no-local-creates
#   --no-build            use the binaries already in the build directory
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA_DIR=/var/tmp/geofs-bench-data
BUILD_DIR="$ROOT/build-release"
OUT_DIR=""
WORKLOADS="seq rand4k rand128k dataset meta readdirplus"
CONNECTIONS=4
QD=8
DURATION=10
WARMUP=3
ROUNDS=3
FILE_SIZE=2GiB
DATASET_FILES=20000
LISTING_ENTRIES=5000
RUN_GANESHA=1
RUN_GEOFS=1
GEOFS_MODE=standalone
SPOKE_ARGS=()
BUILD=1

die() { echo "compare_ganesha: $*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) FILE_SIZE=256MiB; DATASET_FILES=2000; DURATION=3; WARMUP=1; ROUNDS=1 ;;
    --data-dir) DATA_DIR=$2; shift ;;
    --build-dir) BUILD_DIR=$2; shift ;;
    --out) OUT_DIR=$2; shift ;;
    --workloads) WORKLOADS=$2; shift ;;
    --connections) CONNECTIONS=$2; shift ;;
    --qd) QD=$2; shift ;;
    --duration) DURATION=$2; shift ;;
    --warmup) WARMUP=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --file-size) FILE_SIZE=$2; shift ;;
    --dataset-files) DATASET_FILES=$2; shift ;;
    --listing-entries) LISTING_ENTRIES=$2; shift ;;
    --ganesha-only) RUN_GEOFS=0 ;;
    --geofs-only) RUN_GANESHA=0 ;;
    --geofs-mode) GEOFS_MODE=$2; shift ;;
    --spoke-arg) SPOKE_ARGS+=("$2"); shift ;;
    --no-build) BUILD=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done
case $GEOFS_MODE in standalone|spoke-over-hub) ;; *) die "--geofs-mode: standalone or spoke-over-hub" ;; esac
[[ -n "$OUT_DIR" ]] || OUT_DIR="$BUILD_DIR/bench-results/$(date +%Y%m%d-%H%M%S)"

SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO=sudo

# ---- (a) packages ---------------------------------------------------------------
PACKAGES=(nfs-ganesha nfs-ganesha-vfs rpcbind jq python3)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "installing ${missing[*]}"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y "${missing[@]}"
fi

# ---- (b) build ------------------------------------------------------------------
LOAD="$BUILD_DIR/bench/geofs-nfs-load"
SPOKED="$BUILD_DIR/src/spoke/geofs-spoked"
HUBD="$BUILD_DIR/src/hub/geofs-hubd"
CTL="$BUILD_DIR/src/cli/geofsctl"
targets=(geofs-nfs-load)
[[ $RUN_GEOFS -eq 1 ]] && targets+=(geofs-spoked)
[[ $RUN_GEOFS -eq 1 && $GEOFS_MODE == spoke-over-hub ]] && targets+=(geofs-hubd geofsctl)
if [[ $BUILD -eq 1 ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${targets[@]}"
fi
[[ -x "$LOAD" ]] || die "$LOAD is missing (build it, or drop --no-build)"
[[ $RUN_GEOFS -eq 0 || -x "$SPOKED" ]] || die "$SPOKED is missing (or use --ganesha-only)"
if [[ $RUN_GEOFS -eq 1 && $GEOFS_MODE == spoke-over-hub ]]; then
  [[ -x "$HUBD" && -x "$CTL" ]] || die "$HUBD or $CTL is missing (build them, or drop --no-build)"
fi

# ---- (c) data -------------------------------------------------------------------
SPEC=(--file-size "$FILE_SIZE" --dataset-files "$DATASET_FILES" --listing-entries "$LISTING_ENTRIES")
mkdir -p "$DATA_DIR" "$OUT_DIR"
DATA_DIR=$(cd "$DATA_DIR" && pwd)
OUT_DIR=$(cd "$OUT_DIR" && pwd)
"$LOAD" --prepare "$DATA_DIR" "${SPEC[@]}"
sync
# Read everything once so that both servers start from a warm page cache.
find "$DATA_DIR" -type f -exec cat {} + >/dev/null

RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/geofs-compare.XXXXXX")
RPCBIND_PID=""
GANESHA_PID=""
GEOFS_PID=""
HUB_PID=""

stop_pid() {  # pid name: TERM, then KILL after 10 s
  local pid=$1 name=$2
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  echo "$name ($pid) ignored SIGTERM; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  stop_pid "$GEOFS_PID" geofs-spoked
  stop_pid "$HUB_PID" geofs-hubd
  stop_pid "$GANESHA_PID" ganesha.nfsd
  stop_pid "$RPCBIND_PID" rpcbind
  RPCBIND_PID=""
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Four distinct free TCP ports on 127.0.0.1.
read -r G_NFS G_MNT F_NFS F_MNT < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
)

wait_for_port() {  # pid port seconds: true once 127.0.0.1:port accepts
  local pid=$1 port=$2 secs=$3
  for _ in $(seq 1 $((secs * 10))); do
    kill -0 "$pid" 2>/dev/null || return 1
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

server_counters() {  # "pid..." -> "CPU-ticks minor-faults", summed over whole processes
  local stat pid ticks=0 faults=0 t f
  for pid in $1; do
    stat=$(cat "/proc/$pid/stat")
    stat=${stat##*) }  # drop "pid (comm) ": comm may contain spaces
    read -r t f < <(awk '{print $12 + $13, $8}' <<<"$stat")
    ticks=$((ticks + t)); faults=$((faults + f))
  done
  echo "$ticks $faults"
}

# ---- (d) rpcbind + NFS-Ganesha ----------------------------------------------------
start_ganesha() {
  if ! rpcinfo -p 127.0.0.1 >/dev/null 2>&1; then
    rpcbind -f -w >"$OUT_DIR/rpcbind.log" 2>&1 &
    RPCBIND_PID=$!
    for _ in $(seq 1 50); do rpcinfo -p 127.0.0.1 >/dev/null 2>&1 && break; sleep 0.1; done
    rpcinfo -p 127.0.0.1 >/dev/null 2>&1 || die "rpcbind did not start (see $OUT_DIR/rpcbind.log)"
  fi
  cat >"$RUN_DIR/ganesha.conf" <<EOF
NFS_CORE_PARAM {
  Bind_addr = 127.0.0.1;
  NFS_Port = $G_NFS;
  MNT_Port = $G_MNT;
  Protocols = 3;
  Enable_NLM = false;
  Enable_RQUOTA = false;
  Enable_UDP = false;
}
NFSV4 { Graceless = true; }
MDCACHE { Entries_HWMark = 500000; }
EXPORT_DEFAULTS { Access_Type = RW; }
EXPORT {
  Export_Id = 1;
  Path = $DATA_DIR;
  Pseudo = $DATA_DIR;
  Protocols = 3;
  Transports = TCP;
  Access_Type = RW;
  Squash = No_Root_Squash;
  SecType = sys;
  MaxRead = 1048576;
  MaxWrite = 1048576;
  PrefRead = 1048576;
  PrefWrite = 1048576;
  FSAL { Name = VFS; }
}
LOG { Default_Log_Level = WARN; }
EOF
  ganesha.nfsd -F -f "$RUN_DIR/ganesha.conf" -L "$OUT_DIR/ganesha.log" -p "$RUN_DIR/ganesha.pid" \
    >"$OUT_DIR/ganesha.out" 2>&1 &
  GANESHA_PID=$!
  if ! wait_for_port "$GANESHA_PID" "$G_NFS" 30 || ! wait_for_port "$GANESHA_PID" "$G_MNT" 5; then
    echo "NFS-Ganesha did not start; its log:" >&2
    cat "$OUT_DIR/ganesha.out" "$OUT_DIR/ganesha.log" >&2 2>/dev/null || true
    die "NFS-Ganesha failed (config: $RUN_DIR/ganesha.conf)"
  fi
  # rpcbind is needed only while Ganesha registers; stopping ours now keeps
  # rpcinfo on this machine from being redirected to Ganesha during the run.
  stop_pid "$RPCBIND_PID" rpcbind
  RPCBIND_PID=""
  echo "NFS-Ganesha (pid $GANESHA_PID) on nfs $G_NFS, mount $G_MNT"
}

# ---- (e) geofs-spoked -------------------------------------------------------------
# spoke-over-hub: a geofs-hubd holding the data directory under /bench.
start_hub() {
  local port
  mkdir -p "$RUN_DIR/hub"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$HUBD" --data-dir "$RUN_DIR/hub" --listen "127.0.0.1:$port" --log-level warn \
    >"$OUT_DIR/hub.log" 2>&1 &
  HUB_PID=$!
  wait_for_port "$HUB_PID" "$port" 30 || { cat "$OUT_DIR/hub.log" >&2; die "geofs-hubd failed"; }
  HUB_ADDR="127.0.0.1:$port"
  echo "importing $DATA_DIR into the hub as /bench"
  local t0=$SECONDS
  "$CTL" --hub "$HUB_ADDR" import "$DATA_DIR" /bench >"$OUT_DIR/import.log" 2>&1 ||
    { cat "$OUT_DIR/import.log" >&2; die "geofsctl import failed"; }
  echo "geofs-hubd (pid $HUB_PID) on $HUB_ADDR; import took $((SECONDS - t0)) s"
}

# Reads every file the read workloads touch once through the spoke, so that
# its chunk cache holds them before the first measured run.
warm_spoke() {
  local url=$1 blocks
  blocks=$(( ($(stat -c %s "$DATA_DIR/seq.bin") + 1048575) / 1048576 ))
  echo "warming the spoke's cache: seq.bin ($blocks MiB) and $DATASET_FILES data set files"
  "$LOAD" --url "$url" --workload seq --connections 1 --qd 8 --ops "$blocks" "${SPEC[@]}" \
    >"$OUT_DIR/warm-seq.txt" 2>&1 || { cat "$OUT_DIR/warm-seq.txt" >&2; die "warming seq failed"; }
  "$LOAD" --url "$url" --workload dataset --connections 4 --qd 8 --ops "$DATASET_FILES" "${SPEC[@]}" \
    >"$OUT_DIR/warm-dataset.txt" 2>&1 ||
    { cat "$OUT_DIR/warm-dataset.txt" >&2; die "warming dataset failed"; }
}

start_geofs() {
  if [[ $GEOFS_MODE == spoke-over-hub ]]; then
    start_hub
    mkdir -p "$RUN_DIR/spoke-cache"
    "$SPOKED" --hub "$HUB_ADDR" --portal /bench --cache-dir "$RUN_DIR/spoke-cache" \
      --listen 127.0.0.1 --nfs-port "$F_NFS" --mount-port "$F_MNT" --squash none \
      "${SPOKE_ARGS[@]}" --log-level warn >"$OUT_DIR/geofs.log" 2>&1 &
    GEOFS_PID=$!
    if ! wait_for_port "$GEOFS_PID" "$F_NFS" 60 || ! wait_for_port "$GEOFS_PID" "$F_MNT" 5; then
      cat "$OUT_DIR/geofs.log" >&2 || true
      die "geofs-spoked (over the hub) failed"
    fi
    echo "geofs-spoked (pid $GEOFS_PID) over the hub on nfs $F_NFS, mount $F_MNT"
    warm_spoke "nfs://127.0.0.1/bench?version=3&nfsport=$F_NFS&mountport=$F_MNT&autoreconnect=0"
    return
  fi
  mkdir -p "$RUN_DIR/geofs-state"
  # Squash none mirrors Ganesha's No_Root_Squash; warn mirrors its WARN log level.
  "$SPOKED" --export-dir "$DATA_DIR" --listen 127.0.0.1 --nfs-port "$F_NFS" --mount-port "$F_MNT" \
    --squash none --state-dir "$RUN_DIR/geofs-state" --log-level warn >"$OUT_DIR/geofs.log" 2>&1 &
  GEOFS_PID=$!
  if ! wait_for_port "$GEOFS_PID" "$F_NFS" 30 || ! wait_for_port "$GEOFS_PID" "$F_MNT" 5; then
    echo "geofs-spoked did not start; its log:" >&2
    cat "$OUT_DIR/geofs.log" >&2 || true
    die "geofs-spoked failed"
  fi
  echo "geofs-spoked (pid $GEOFS_PID) on nfs $F_NFS, mount $F_MNT"
}

SERVERS=()
declare -A URL PID
if [[ $RUN_GANESHA -eq 1 ]]; then
  start_ganesha
  SERVERS+=(ganesha)
  URL[ganesha]="nfs://127.0.0.1$DATA_DIR?version=3&nfsport=$G_NFS&mountport=$G_MNT&autoreconnect=0"
  PID[ganesha]=$GANESHA_PID
fi
if [[ $RUN_GEOFS -eq 1 ]]; then
  start_geofs
  SERVERS+=(geofs)
  if [[ $GEOFS_MODE == spoke-over-hub ]]; then
    URL[geofs]="nfs://127.0.0.1/bench?version=3&nfsport=$F_NFS&mountport=$F_MNT&autoreconnect=0"
    PID[geofs]="$GEOFS_PID $HUB_PID"  # the hub serves metadata changes: count its CPU too
  else
    URL[geofs]="nfs://127.0.0.1/?version=3&nfsport=$F_NFS&mountport=$F_MNT&autoreconnect=0"
    PID[geofs]=$GEOFS_PID
  fi
fi

# ---- (f) runs ---------------------------------------------------------------------
LOAD_ARGS=(--connections "$CONNECTIONS" --qd "$QD" "${SPEC[@]}")
run_load() {  # server workload seconds json [warmup]
  local server=$1 workload=$2 seconds=$3 json=$4 warmup=${5:-} before after cpu faults
  rm -f "$json"
  before=$(server_counters "${PID[$server]}")
  if ! "$LOAD" --url "${URL[$server]}" --workload "$workload" --duration "$seconds" \
      --label "$server" --json "$json" "${LOAD_ARGS[@]}" >"$json.txt" 2>&1; then
    # A warm-up may be too short for one slow op to finish; errors still count.
    if [[ -z "$warmup" || ! -s "$json" || $(jq .errors "$json") != 0 ]]; then
      cat "$json.txt" >&2
      die "$workload against $server failed (logs in $OUT_DIR)"
    fi
  fi
  after=$(server_counters "${PID[$server]}")
  # What the server spent during the run, stored beside the client's figures.
  read -r cpu faults < <(awk -v hz="$(getconf CLK_TCK)" -v b="$before" -v a="$after" \
    'BEGIN {split(b, x, " "); split(a, y, " "); print (y[1] - x[1]) / hz, y[2] - x[2]}')
  jq --argjson cpu "$cpu" --argjson faults "$faults" \
    '. + {server_cpu_seconds: $cpu, server_minor_faults: $faults}' "$json" >"$json.tmp"
  mv "$json.tmp" "$json"
}

echo "results in $OUT_DIR"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for w in $WORKLOADS; do
  for s in "${SERVERS[@]}"; do
    echo "[$w] warm-up against $s"
    run_load "$s" "$w" "$WARMUP" "$OUT_DIR/$w.$s.warmup.json" warmup
  done
  for r in $(seq 1 "$ROUNDS"); do
    order=("${SERVERS[@]}")
    if (( r % 2 == 0 )); then  # alternate who goes first
      order=(); for ((i = ${#SERVERS[@]} - 1; i >= 0; i--)); do order+=("${SERVERS[$i]}"); done
    fi
    for s in "${order[@]}"; do
      run_load "$s" "$w" "$DURATION" "$OUT_DIR/$w.$s.r$r.json"
      jq -r '"[\(.workload)] \(.label) round '"$r"': \(.ops_per_sec | floor) ops/s, \(.mb_per_sec | floor) MB/s, p99 \((.latency.p99_us / 10 | round) / 100) ms"' \
        "$OUT_DIR/$w.$s.r$r.json"
    done
  done
done

# ---- (g) table ----------------------------------------------------------------------
# For each server and workload, the round with the median ops/s represents it
# (the upper of the two middle ones for an even number of rounds).
median_json() {  # workload server -> path of the median round's JSON
  local w=$1 s=$2
  for f in "$OUT_DIR/$w.$s".r*.json; do echo "$(jq .ops_per_sec "$f") $f"; done |
    sort -g | awk '{a[NR] = $2} END {print a[int(NR / 2) + 1]}'
}

{
  echo "| workload | op | Ganesha ops/s | Ganesha MB/s | Ganesha p99 ms | geofs ops/s | geofs MB/s | geofs p99 ms | ratio | target | verdict |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  for w in $WORKLOADS; do
    target=1.0
    case $w in dataset|meta|readdirplus) target=1.5 ;; esac
    g=""; f=""
    [[ $RUN_GANESHA -eq 1 ]] && g=$(median_json "$w" ganesha)
    [[ $RUN_GEOFS -eq 1 ]] && f=$(median_json "$w" geofs)
    jq -n -r --arg w "$w" --argjson target "$target" --arg target_s "${target}x" \
      --slurpfile g <([[ -n "$g" ]] && cat "$g" || echo null) \
      --slurpfile f <([[ -n "$f" ]] && cat "$f" || echo null) '
      def r(x; n): if x == null then "-" else ((x * n | round) / n | tostring) end;
      def ms(x): if x == null then null else x / 1000 end;
      ($g[0]) as $g | ($f[0]) as $f |
      (if $g != null and $f != null then $f.ops_per_sec / $g.ops_per_sec else null end) as $ratio |
      [ $w, (($g // $f).op),
        r($g.ops_per_sec; 1), r($g.mb_per_sec; 1), r(ms($g.latency.p99_us); 1000),
        r($f.ops_per_sec; 1), r($f.mb_per_sec; 1), r(ms($f.latency.p99_us); 1000),
        r($ratio; 100), $target_s,
        (if $ratio == null then "-"
         elif $ratio >= $target and $f.latency.p99_us <= $g.latency.p99_us then "PASS"
         elif $ratio >= $target then "FAIL (p99)"
         else "FAIL" end) ]
      | "| " + join(" | ") + " |"'
  done
} | tee "$OUT_DIR/table.md"

{
  echo
  echo "Server cost per op and per-call p99 (ms), median rounds:"
  for w in $WORKLOADS; do
    for s in "${SERVERS[@]}"; do
      jq -r '"  \(.workload) \(.label): server CPU \(.server_cpu_seconds / .seconds * 100 | floor)% = \((.server_cpu_seconds * 1e6 / .ops) | floor) us/op, \(.server_minor_faults / .ops | floor) page faults/op; client CPU \(.client_cpu_seconds / .seconds * 100 | floor)%; calls: " +
        ([.calls | to_entries[] | "\(.key) p99 \((.value.p99_us | round) / 1000)"] | join(", "))' \
        "$(median_json "$w" "$s")"
    done
  done
  echo
  echo "command: bench/compare_ganesha.sh --connections $CONNECTIONS --qd $QD --duration $DURATION" \
    "--warmup $WARMUP --rounds $ROUNDS --file-size $FILE_SIZE --dataset-files $DATASET_FILES" \
    "--listing-entries $LISTING_ENTRIES --geofs-mode $GEOFS_MODE" \
    "${SPOKE_ARGS[@]/#/--spoke-arg }"
  echo "load average before/after: $LOAD_BEFORE / $(cut -d' ' -f1-3 /proc/loadavg)" \
    "(client and servers share the cores: anything else running skews the figures)"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)," \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r)"
} | tee -a "$OUT_DIR/table.md"
