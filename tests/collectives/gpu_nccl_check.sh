#!/usr/bin/env bash
# gpu_nccl_check.sh: builds the NCCL communicator and its world-size-1 test straight with g++ (no CMake,
# no MPI: the GPU machine lacks GoogleTest, nlohmann/json and mpirun) and runs it. Logs go to $OUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zt_gpu_out}
mkdir -p "$OUT"
CUDA=$(dirname "$(dirname "$(command -v nvcc)")")
NCCL=${NCCL_HOME:-}
if [ -z "$NCCL" ] && [ -f "$CUDA/include/nccl.h" ]; then NCCL=$CUDA; fi
if [ -z "$NCCL" ]; then NCCL=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])"); fi
NCCL_LIB=$NCCL/lib
if [ -d "$NCCL/lib64" ]; then NCCL_LIB=$NCCL/lib64; fi
echo "cuda=$CUDA nccl=$NCCL lib=$NCCL_LIB"
src="collectives/comm_common.cpp collectives/fixed_order_reduce.cpp collectives/single_communicator.cpp
     collectives/bootstrap.cpp collectives/factory.cpp collectives/cuda_check.cpp collectives/nccl_communicator.cpp"
g++ -O2 -std=c++20 -Wall -Wextra -Wno-unused-parameter -I. -I"$CUDA/include" -I"$NCCL/include" \
  -DZT_HAVE_CUDA=1 -DZT_HAVE_MPI=0 $src tests/collectives/test_nccl_single.cpp \
  -L"$CUDA/lib64" -lcudart -L"$NCCL_LIB" -l:libnccl.so.2 -Wl,-rpath,"$NCCL_LIB" -lpthread \
  -o "$OUT/collectives_nccl_test" 2>&1 | tee "$OUT/build.log"
rc=0
timeout 300 "$OUT/collectives_nccl_test" > "$OUT/nccl_test.log" 2>&1 || rc=$?
cat "$OUT/nccl_test.log"
echo "collectives_nccl_test exit code: $rc"
# Watchdog check: an op that cannot complete (queued behind a 30 s host callback on the compute
# stream) must abort the process within the 2 s bound (+ up to 10 s for ncclCommAbort) with the message.
start=$(date +%s)
wrc=0
timeout 60 "$OUT/collectives_nccl_test" --watchdog > "$OUT/nccl_watchdog.log" 2>&1 || wrc=$?
took=$(( $(date +%s) - start ))
cat "$OUT/nccl_watchdog.log"
if [ "$wrc" -ne 0 ] && [ "$took" -le 15 ] && grep -q "NCCL collective all_reduce(1024) #1 on rank 0 did not complete within 2 s" "$OUT/nccl_watchdog.log"; then
  echo "watchdog check: PASS (exit $wrc after ${took}s)"
else
  echo "watchdog check: FAIL (exit $wrc after ${took}s)"; rc=1
fi
exit $rc
