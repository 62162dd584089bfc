#!/usr/bin/env bash
# Downloads, into .debs/ (git-ignored), the Debian 12 packages scripts/gpu_check.sh unpacks on the
# lent GPU machine, which has no apt: header-only/static build deps, the checkpoint and monitor
# libraries (xxHash, protobuf with protoc, ISA-L), PCRE2 for the tokenizer and pkg-config (pkgconf) to find ISA-L, the
# OpenBLAS runtime, and Open MPI with its runtime libraries (that machine has no MPI launcher:
# gpu_check.sh runs this one from its unpacked prefix, relocated with OPAL_PREFIX, for the
# multi-rank runs on one GPU). scripts/debs_build_check.sh builds against this set alone.
# Idempotent: when .debs/ already holds this exact list (its stamp), nothing is downloaded.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${ZT_DEBS_DIR:-$root/.debs}"
mkdir -p "$dest"
pkgs=(
  nlohmann-json3-dev                 # header-only JSON
  libcli11-dev                       # header-only CLI
  libgtest-dev                       # GoogleTest static libs + CMake config
  libopenblas-dev libopenblas0 libopenblas-pthread-dev libopenblas0-pthread  # CPU backend GEMM
  libgfortran5 libquadmath0          # OpenBLAS runtime dependencies
  liburing-dev liburing2             # offload's async I/O
  libxxhash-dev libxxhash0           # checkpoint checksums
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 zlib1g-dev  # monitor's TensorBoard event records
  protobuf-compiler libprotoc32      # protoc (the build generates the .pb.cc files)
  libisal-dev libisal2               # monitor's CRC32C (found through pkg-config)
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3  # the BPE tokenizer's regex (pkg-config)
  pkgconf pkgconf-bin libpkgconf3    # pkg-config / pkgconf executables
  # Open MPI 4.1 (mpirun, libmpi, headers) and the libraries it loads that a CUDA image may lack
  openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200
  libpsm-infinipath1 libpsm2-2 libnuma1 libmunge2 libxnvctrl0 libpciaccess0 ocl-icd-libopencl1
  libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libatomic1
)
cd "$dest"
stamp="$(printf '%s\n' "${pkgs[@]}" | sha256sum | cut -c1-16)"
n_debs=$(find . -maxdepth 1 -name '*.deb' | wc -l)
if [ -f .stamp ] && [ "$(cat .stamp)" = "$stamp" ] && [ "$n_debs" -ge "${#pkgs[@]}" ]; then
  echo "fetch_gpu_debs: $dest already holds these ${#pkgs[@]} packages"
  exit 0
fi
rm -f ./*.deb .stamp
# A machine whose package lists were never fetched knows no candidates: fetch them once and retry.
apt-get download "${pkgs[@]}" || { apt-get update -qq && apt-get download "${pkgs[@]}"; }
total=$(du -cb ./*.deb | tail -1 | cut -f1)
echo "fetched ${#pkgs[@]} packages into $dest: $((total / 1024)) KiB in all"
if [ "$total" -gt $((48 * 1024 * 1024)) ]; then
  echo "error: the .debs total more than 48 MiB; the device call carries at most 64 MiB with the repository" >&2
  exit 1
fi
echo "$stamp" >.stamp
