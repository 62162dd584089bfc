#!/usr/bin/env bash
# Builds the offload pieces on the lent GPU machine by hand (it has no GoogleTest, CLI11 or liburing
# installed: they come from .debs) and runs: a cudaHostAlloc round trip through PinnedAllocator,
# bench_cpu_adam on all cores, and bench_nvme on its local disk. Output files go to $OUT.
set -euo pipefail
OUT=${OUT:-/tmp/zt_out}; mkdir -p "$OUT"
DEPS=$(mktemp -d); B=$(mktemp -d)
for f in .debs/libcli11-dev*.deb .debs/liburing*.deb; do dpkg -x "$f" "$DEPS"; done
CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
F="-std=c++20 -O2 -I. -I$DEPS/usr/include -I$CUDA_HOME/include -fopenmp -DZT_HAVE_CUDA=1 -DZT_HAVE_MPI=0"
A="-O3 -ffp-contract=off -fno-math-errno"
g++ $F -ffp-contract=off -c offload/cpu_adam.cpp -o $B/cpu_adam.o &
g++ $F $A -c offload/cpu_adam_scalar.cpp -o $B/scalar.o &
g++ $F $A -mavx2 -mfma -mf16c -c offload/cpu_adam_avx2.cpp -o $B/avx2.o &
g++ $F $A -mavx512f -mavx512bw -mavx512vl -mf16c -c offload/cpu_adam_avx512.cpp -o $B/avx512.o &
g++ $F -c offload/pinned_memory.cpp -o $B/pinned.o &
g++ $F -c offload/aio_uring.cpp -o $B/aio.o &
g++ $F -c offload/nvme_swapper.cpp -o $B/swapper.o &
g++ $F -O3 -c bench/cpu_adam/stream_probe.cpp -o $B/probe.o &
g++ $F -c bench/cpu_adam/bench_cpu_adam.cpp -o $B/bench_adam.o &
g++ $F -c bench/nvme/bench_nvme.cpp -o $B/bench_nvme.o &
cat > $B/pin.cpp <<'CPP'
#include <cuda_runtime_api.h>
#include <cstdio>
#include <cstring>
#include "offload/pinned_memory.h"
int main() {
  zt::offload::PinnedAllocator a({});
  auto b = a.allocate(64 << 20);
  std::memset(b.data(), 0x5A, b.size());
  void* d = nullptr;
  if (cudaMalloc(&d, b.size()) != cudaSuccess) { std::printf("cudaMalloc failed\n"); return 1; }
  cudaMemcpy(d, b.data(), b.size(), cudaMemcpyHostToDevice);
  std::memset(b.data(), 0, b.size());
  cudaMemcpy(b.data(), d, b.size(), cudaMemcpyDeviceToHost);
  const unsigned char* p = b.as<unsigned char>();
  bool ok = a.cuda_active() && b.kind() == zt::offload::PinKind::CudaHost;
  for (size_t i = 0; i < b.size(); i += 4093) ok = ok && p[i] == 0x5A;
  std::printf("pinned: kind=%s cuda_active=%d round trip %s\n", zt::offload::pin_kind_name(b.kind()), a.cuda_active(), ok ? "OK" : "FAILED");
  cudaFree(d);
  return ok ? 0 : 1;
}
CPP
g++ $F -c $B/pin.cpp -o $B/pin.o &
wait
L="-L$CUDA_HOME/lib64 -lcudart -fopenmp -lpthread"
URING=$(ls $DEPS/usr/lib/x86_64-linux-gnu/liburing.a)
g++ $B/pin.o $B/pinned.o $L -o $B/pin
g++ $B/bench_adam.o $B/probe.o $B/cpu_adam.o $B/scalar.o $B/avx2.o $B/avx512.o $B/pinned.o $L -o $B/bench_cpu_adam
g++ $B/bench_nvme.o $B/aio.o $B/swapper.o $B/pinned.o $URING $L -o $B/bench_nvme
lscpu | head -20 > "$OUT/lscpu.txt"
$B/pin 2>&1 | tee "$OUT/pinned.txt"
timeout 300 $B/bench_cpu_adam --rounds 5 "$@" 2>&1 | tee "$OUT/bench_cpu_adam.txt" | grep -v '^{'
timeout 120 $B/bench_nvme --path /tmp --size-mib 512 2>&1 | tee "$OUT/bench_nvme.txt" | grep -v '^{'
