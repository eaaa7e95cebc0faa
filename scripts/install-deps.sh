#!/usr/bin/env bash
# Installs every Debian 12 package geofs needs to build, test and benchmark.
# Idempotent: packages already present are skipped by apt.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  librocksdb-dev liburing-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libzstd-dev libssl-dev libcurl4-openssl-dev
  libnfs-dev libnfs-utils libcli11-dev nlohmann-json3-dev libfuse3-dev fuse3
  clang libclang-rt-14-dev
  rpcbind
  # scripts/demo.sh reads the spoke's metrics endpoint.
  curl
  # tests/realprog: a PyTorch DataLoader through the FUSE bridge (174
  # packages, about 600 MiB installed; under 2 minutes here).
  python3-torch
)

# tests/deploy: systemd-analyze verifies the units; node and npm validate
# the Kubernetes manifests. A machine whose node comes from elsewhere (with
# npm inside it) keeps it: Debian's npm would conflict with that package.
command -v systemd-analyze >/dev/null || packages+=(systemd)
command -v npm >/dev/null || packages+=(nodejs npm)

if [[ "${1:-}" == "--bench" ]]; then
  # NFS-Ganesha for bench/compare_ganesha.sh; awscli (/usr/bin/aws) for the
  # `aws s3 sync` column of bench/import_bench.sh.
  packages+=(nfs-ganesha nfs-ganesha-vfs awscli)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
  "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
fi
