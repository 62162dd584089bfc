#!/usr/bin/env bash
# Downloads, into .debs/ (git-ignored), the Debian packages scripts/gpu_check.sh unpacks on the
# lent GPU machine, which has no apt: header-only/static build deps and the OpenBLAS runtime.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.debs"
mkdir -p "$dest"
pkgs=(
  nlohmann-json3-dev                 # header-only JSON
  libcli11-dev                       # header-only CLI
  libgtest-dev                       # GoogleTest static libs + CMake config
  libopenblas-dev libopenblas0 libopenblas-pthread-dev libopenblas0-pthread  # CPU backend GEMM
  libgfortran5 libquadmath0          # OpenBLAS runtime dependencies
  liburing-dev liburing2             # offload's async I/O
)
cd "$dest"
rm -f ./*.deb
apt-get download "${pkgs[@]}"
total=$(du -cb ./*.deb | tail -1 | cut -f1)
echo "fetched ${#pkgs[@]} packages into $dest: $((total / 1024)) KiB in all"
if [ "$total" -gt $((48 * 1024 * 1024)) ]; then
  echo "error: the .debs total more than 48 MiB; the device call carries at most 64 MiB with the repository" >&2
  exit 1
fi
