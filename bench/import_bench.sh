#!/usr/bin/env bash
# Hub import benchmark: `geofsctl import` into a geofs-hubd with the local
# object store and with an S3 one (s3rver), side by side with `cp -r` (+ sync)
# and `aws s3 sync` into the same s3rver, on five data sets; then gRPC
# namespace ops/s (geofs-hub-ops). See docs/benchmarks.md, "Hub import".
#
#   bench/import_bench.sh [--quick] [--no-build] [--build-dir DIR] [--work DIR]
#                         [--random-mib N] [--text-mib N] [--dedup-mib N] [--small-mib N]
#                         [--large-mib N]
#                         [--no-s3] [--no-ops] [--ops-duration S] [--ops-threads N]
#                         [--out DIR]
#
# Data sets (bench/import_data.py, deterministic, generated once under --work):
#   random  incompressible samples
#   text    JSON-lines text shards (compressible)
#   dedup   v1: 30% of the bytes are duplicate files; v2: v1 after small edits.
#           v1 is imported to /dedup-v1, then v2 to /dedup-v2 (both kept).
#   small   many small files (4..64 KiB): the cost per file
#   large   shards of 256 MiB: many batches per file
# Each tool writes into a fresh destination; source files are in the page
# cache for every run (they were just generated or read).
#
# Beside the wall times: the CPU the import used (geofsctl and the hub), and
# geofs-import-floor's measure of the CPU the design requires for the set
# (reading, chunking, both SHA-256 passes, compressing, the hub's decoding)
# with nothing else. That CPU spread over every core is the fastest any
# import of this design could be here, hence the best ratio it could reach.
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) stops the benchmark too

repo=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$repo/build-imp-rel
work=/var/tmp/geofs-import-bench
random_mib=200
text_mib=150
dedup_mib=100
small_mib=50
large_mib=512
with_s3=1
with_ops=1
build=1
ops_duration=5
ops_threads=8
out=

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while (($#)); do
  case $1 in
    --quick) random_mib=48; text_mib=32; dedup_mib=32; small_mib=16; large_mib=96; ops_duration=2 ;;
    --no-build) build=0 ;;
    --build-dir) build_dir=$2; shift ;;
    --work) work=$2; shift ;;
    --random-mib) random_mib=$2; shift ;;
    --text-mib) text_mib=$2; shift ;;
    --dedup-mib) dedup_mib=$2; shift ;;
    --small-mib) small_mib=$2; shift ;;
    --large-mib) large_mib=$2; shift ;;
    --no-s3) with_s3=0 ;;
    --no-ops) with_ops=0 ;;
    --ops-duration) ops_duration=$2; shift ;;
    --ops-threads) ops_threads=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) usage ;;
    *) echo "unknown option $1" >&2; usage 2 ;;
  esac
  shift
done

if ((build)); then
  cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build_dir" -j2 --target geofs-hubd geofsctl geofs-hub-ops geofs-import-floor
fi
hubd=$build_dir/src/hub/geofs-hubd
ctl=$build_dir/src/cli/geofsctl
ops=$build_dir/bench/geofs-hub-ops
floor=$build_dir/bench/geofs-import-floor
needed=("$hubd" "$ctl" "$floor")
((with_ops)) && needed+=("$ops")
for b in "${needed[@]}"; do [[ -x $b ]] || { echo "missing $b (build it)" >&2; exit 1; }; done
aws=/usr/bin/aws  # Debian's awscli; another `aws` may come first on PATH
if ((with_s3)) && [[ ! -x $aws ]]; then
  echo "no $aws: install Debian's awscli (scripts/install-deps.sh --bench) or pass --no-s3" >&2
  exit 1
fi

out=${out:-$build_dir/bench-results/import-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$work" "$out"
scratch=$work/run
rm -rf "$scratch"
mkdir -p "$scratch"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.3f}')"; }
mib() { python3 -c "print(f'{$1 / 1048576:.1f}')"; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
json_field() { python3 -c "import json,sys; print(json.load(open('$1'))['$2'])"; }

# --- data ---
gen() {  # KIND MIB -> prints the directory
  local dir=$work/data/$1-$2
  if [[ ! -f $dir.done ]]; then
    rm -rf "$dir"
    echo "generating $1 ($2 MiB) in $dir" >&2
    # (errexit does not reach into the $(gen ...) subshell)
    python3 "$repo/bench/import_data.py" "$1" "$dir" "$2" || exit 1
    touch "$dir.done"
  fi
  echo "$dir"
}
src_random=$(gen random "$random_mib")
src_text=$(gen text "$text_mib")
src_v1=$(gen dedup-v1 "$dedup_mib")
src_v2=$(gen dedup-v2 "$dedup_mib")
src_small=$(gen small "$small_mib")
src_large=$(gen large "$large_mib")
# Warm the page cache for every tool alike.
find "$src_random" "$src_text" "$src_v1" "$src_v2" "$src_small" "$src_large" -type f \
  -exec cat {} + >/dev/null

# --- s3rver ---
s3_port=
if ((with_s3)); then
  s3rver=$("$repo/scripts/s3rver.sh" "$build_dir/tools")
  s3_port=$(free_port)
  mkdir -p "$scratch/s3rver"
  "$s3rver" -d "$scratch/s3rver" -a 127.0.0.1 -p "$s3_port" --silent \
    --configure-bucket bench >"$out/s3rver.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$s3_port/bench" && break
    sleep 0.1
  done
  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
  export AWS_DEFAULT_REGION=us-east-1
fi

# --- hub ---
hub_pid=
hub_addr=
start_hub() {  # NAME [hubd flags...]
  local name=$1; shift
  local dir=$scratch/hub-$name
  rm -rf "$dir"
  mkdir -p "$dir"
  "$hubd" --data-dir "$dir" --listen 127.0.0.1:0 "$@" >"$out/hub-$name.log" 2>&1 &
  hub_pid=$!
  pids+=("$hub_pid")
  hub_addr=
  for _ in $(seq 200); do
    hub_addr=$(grep -o 'grpc=[0-9.]*:[0-9]*' "$out/hub-$name.log" | head -1 | cut -d= -f2 || true)
    [[ -n $hub_addr ]] && break
    sleep 0.05
  done
  [[ -n $hub_addr ]] || { echo "hub $name did not start; see $out/hub-$name.log" >&2; exit 1; }
}
stop_hub() { kill "$hub_pid"; wait "$hub_pid" 2>/dev/null || true; }

# Runs "$@" and prints its wall time and its CPU time (user + system) in
# seconds; its output goes to $out/LOG.
timed() {  # LOG CMD...
  local log=$1; shift
  python3 - "$out/$log" "$@" <<'PY' || { echo "failed: $* (see $out/$log)" >&2; exit 1; }
import resource, subprocess, sys, time
with open(sys.argv[1], "w") as log:
    start = time.monotonic()
    rc = subprocess.call(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{wall:.3f} {usage.ru_utime + usage.ru_stime:.3f}")
sys.exit(rc)
PY
}
# CPU seconds the hub has used so far.
hub_cpu() { awk -v tck="$(getconf CLK_TCK)" '{print ($14 + $15) / tck}' "/proc/$hub_pid/stat"; }

logical_of() { du -sb --apparent-size "$@" | awk '{s += $1} END {print s}'; }

# Imports SRC... into a fresh hub (one HUB_PATH per source) and prints
# "seconds stored_bytes logical_bytes cpu_seconds" (geofsctl's and the hub's
# CPU during the imports).
geofs_run() {  # NAME OBJECT_STORE_FLAGS(|-) SRC:HUB_PATH...
  local name=$1 store=$2; shift 2
  if [[ $store == - ]]; then start_hub "$name"; else start_hub "$name" --object-store "$store"; fi
  local total=0 cpu=0 pair measured secs ctl_cpu hub0
  hub0=$(hub_cpu)
  for pair in "$@"; do
    measured=$(timed "import-$name-$(basename "${pair##*:}").log" "$ctl" --hub "$hub_addr" import "${pair%%:*}" "${pair##*:}")
    read -r secs ctl_cpu <<<"$measured"
    total=$(python3 -c "print($total + $secs)")
    cpu=$(python3 -c "print($cpu + $ctl_cpu)")
  done
  cpu=$(python3 -c "print($cpu + $(hub_cpu) - $hub0)")
  "$ctl" --hub "$hub_addr" stats --json >"$out/stats-$name.json"
  "$ctl" --hub "$hub_addr" fsck >"$out/fsck-$name.log" ||
    { echo "fsck of $name found problems: $out/fsck-$name.log" >&2; exit 1; }
  stop_hub
  echo "$total $(json_field "$out/stats-$name.json" stored_bytes) $(json_field "$out/stats-$name.json" logical_bytes) $cpu"
}

cp_run() {  # NAME SRC... -> seconds (cp -r of each, then one sync of the file system)
  local name=$1; shift
  local dst=$scratch/cp-$name t0 t1 i=0
  rm -rf "$dst"; mkdir -p "$dst"; sync
  t0=$(now)
  for src in "$@"; do cp -r "$src" "$dst/$i"; i=$((i + 1)); done
  sync -f "$dst"
  t1=$(now)
  rm -rf "$dst"
  elapsed "$t0" "$t1"
}

aws_run() {  # NAME SRC... -> seconds
  local name=$1; shift
  local total=0 i=0 measured secs
  for src in "$@"; do
    measured=$(timed "aws-$name-$i.log" "$aws" --endpoint-url "http://127.0.0.1:$s3_port" \
      s3 sync --only-show-errors "$src" "s3://bench/aws-$name-$i/")
    secs=${measured%% *}
    total=$(python3 -c "print($total + $secs)")
    i=$((i + 1))
  done
  echo "$total"
}

# The CPU the design requires for SRC... (imported in order into one hub).
floor_cpu() {  # NAME SRC...
  local name=$1; shift
  "$floor" --json "$out/floor-$name.json" "$@" >"$out/floor-$name.md" ||
    { echo "geofs-import-floor failed on $name" >&2; exit 1; }
  python3 -c "import json; print(json.load(open('$out/floor-$name.json'))['cpu_seconds']['total'])"
}
cores=$(nproc)

rate() { python3 -c "print(f'{$1:.2f} s ({$2 / 1048576 / $1:.0f} MiB/s)')"; }
secs() { python3 -c "print(f'{$1:.2f} s')"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

table=$out/table.md
{
  echo "| data set | logical | cp -r + sync | geofs import, local store | cp time / geofs time | geofs CPU | required CPU | best ratio on $cores cores | stored / logical | aws s3 sync → s3rver | geofs import → s3rver |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$table"

sum_stored=0
sum_logical=0
bench_set() {  # NAME SRC:HUB_PATH...
  local name=$1; shift
  local srcs=() pair
  for pair in "$@"; do srcs+=("${pair%%:*}"); done
  local logical cp_s aws_s="-" geo_s3="-" measured need
  logical=$(logical_of "${srcs[@]}")
  echo "== $name: $(mib "$logical") MiB" >&2
  cp_s=$(cp_run "$name" "${srcs[@]}")
  measured=$(geofs_run "$name-local" - "$@")
  read -r g_s g_stored g_logical g_cpu <<<"$measured"
  need=$(floor_cpu "$name" "${srcs[@]}")
  if ((with_s3)); then
    aws_s=$(rate "$(aws_run "$name" "${srcs[@]}")" "$logical")
    measured=$(geofs_run "$name-s3" "s3://bench/geofs-$name?endpoint=http://127.0.0.1:$s3_port" "$@")
    s_s=${measured%% *}
    geo_s3=$(rate "$s_s" "$logical")
  fi
  echo "| $name | $(mib "$logical") MiB | $(rate "$cp_s" "$logical") | $(rate "$g_s" "$logical") | $(ratio "$cp_s" "$g_s") | $(secs "$g_cpu") | $(secs "$need") | $(ratio "$cp_s" "$(python3 -c "print($need / $cores)")") | $(ratio "$g_stored" "$g_logical") | $aws_s | $geo_s3 |" >>"$table"
  if [[ $name == text || $name == dedup ]]; then
    sum_stored=$((sum_stored + g_stored))
    sum_logical=$((sum_logical + g_logical))
  fi
}

bench_set random "$src_random:/random"
bench_set text "$src_text:/text"
bench_set dedup "$src_v1:/dedup-v1" "$src_v2:/dedup-v2"
bench_set small "$src_small:/small"
bench_set large "$src_large:/large"
echo >>"$table"
echo "text + dedup combined: stored / logical = $(ratio "$sum_stored" "$sum_logical") (target <= 0.70)" >>"$table"

# --- gRPC namespace ops ---
if ((with_ops)); then
  echo "== namespace ops" >&2
  start_hub ops
  "$ops" --hub "$hub_addr" --threads "$ops_threads" --duration "$ops_duration" \
    --json "$out/hub-ops.json" >"$out/hub-ops.md"
  stop_hub
  { echo; cat "$out/hub-ops.md"; } >>"$table"
fi

cat "$table"
echo "results in $out" >&2
