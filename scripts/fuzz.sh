#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz, clang + ASan + UBSan) in its own
# build directory and runs each for FUZZ_SECONDS (default 30). Exits non-zero
# if a target crashes, leaks, or exceeds the memory limit; the reproducer is
# left in the run directory printed below.
#
#   FUZZ_SECONDS=300 scripts/fuzz.sh          # longer runs
#   FUZZ_BUILD_DIR=/tmp/fz scripts/fuzz.sh    # another build directory
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build_dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-30}
sanitizers="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"

CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGEOFS_BUILD_FUZZ=ON -DGEOFS_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS="$sanitizers" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target geofs_fuzzers

mapfile -t targets < <(find "$build_dir/tests/fuzz" -maxdepth 1 -type f -executable -name '*_fuzz' | sort)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz.sh: no fuzz targets were built" >&2
  exit 1
fi

status=0
for target in "${targets[@]}"; do
  name=$(basename "$target")
  run_dir="$build_dir/fuzz-runs/$name"
  mkdir -p "$run_dir/corpus"
  # Checked-in seeds (valid calls) are read alongside the growing corpus.
  seeds=()
  [[ -d $root/tests/fuzz/seeds/$name ]] && seeds=("$root/tests/fuzz/seeds/$name")
  echo "== $name for ${seconds}s (corpus and any crash in $run_dir)"
  if ! (cd "$run_dir" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "$target" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
        corpus "${seeds[@]}" >"$run_dir/log" 2>&1); then
    echo "fuzz.sh: $name FAILED; last lines of $run_dir/log:" >&2
    tail -n 40 "$run_dir/log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^Done' "$run_dir/log" || true
  fi
done
exit $status
