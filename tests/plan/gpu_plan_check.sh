#!/usr/bin/env bash
# Device check for runtime/plan: builds only the plan module and its tests from a generated CMake
# project (so a module mid-change elsewhere cannot stop it), runs them with CUDA on, and prints a
# short summary last. Full logs go under $OUT.
#   device: bash tests/plan/gpu_plan_check.sh   (carry: [".debs"]; see scripts/fetch_gpu_debs.sh)
#   here:   OUT=/tmp/pc ZT_JOBS=2 bash tests/plan/gpu_plan_check.sh   (no GPU: plan_gpu skips)
set -u
root="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-/tmp/zt-plan-out}"
mkdir -p "$OUT"
JOBS="${ZT_JOBS:-$(nproc)}"
DEPS="${ZT_PLAN_DEPS:-/tmp/zt-plan-deps}"
BUILD="${ZT_PLAN_BUILD:-/tmp/zt-plan-build}"
LOG="$OUT/plan_check.log"
: >"$LOG"

if [ -d "$root/.debs" ] && ls "$root"/.debs/*.deb >/dev/null 2>&1; then
  rm -rf "$DEPS"; mkdir -p "$DEPS"
  for f in "$root"/.debs/*.deb; do dpkg -x "$f" "$DEPS"; done
  lib="$DEPS/usr/lib/x86_64-linux-gnu"
  if [ -d "$lib/openblas-pthread" ]; then
    ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
    ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
  fi
  export LD_LIBRARY_PATH="$lib/openblas-pthread:$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
mkdir -p "$DEPS"
NCCL_HOME="$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))" 2>/dev/null || true)"
if [ -n "$NCCL_HOME" ] && [ ! -e "$NCCL_HOME/lib/libnccl.so" ] && [ -e "$NCCL_HOME/lib/libnccl.so.2" ]; then
  mkdir -p "$DEPS/nccl/lib"; ln -sfn "$NCCL_HOME/include" "$DEPS/nccl/include"
  ln -sf "$NCCL_HOME/lib/libnccl.so.2" "$DEPS/nccl/lib/libnccl.so.2"
  ln -sf "$NCCL_HOME/lib/libnccl.so.2" "$DEPS/nccl/lib/libnccl.so"
  NCCL_HOME="$DEPS/nccl"
fi
if [ -n "$NCCL_HOME" ]; then export NCCL_HOME; export LD_LIBRARY_PATH="$NCCL_HOME/lib:${LD_LIBRARY_PATH:-}"; fi

proj="$DEPS/plan_only"
mkdir -p "$proj"
cat >"$proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(zerotrain VERSION 0.1.0 LANGUAGES C CXX CUDA)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(ZT_CUDA ON)
set(ZT_MPI OFF)
find_package(CUDAToolkit REQUIRED)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS \${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include REQUIRED)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS \${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64 REQUIRED)
add_library(zt_nccl INTERFACE)
target_include_directories(zt_nccl INTERFACE \${NCCL_INCLUDE_DIR})
target_link_libraries(zt_nccl INTERFACE \${NCCL_LIBRARY})
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 2.0 REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread REQUIRED)
add_library(zt_options INTERFACE)
target_compile_options(zt_options INTERFACE \$<\$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
target_compile_definitions(zt_options INTERFACE ZT_HAVE_CUDA=1 ZT_HAVE_MPI=0)
target_include_directories(zt_options INTERFACE $root \${PROJECT_BINARY_DIR}/generated)
set(ZT_GIT_COMMIT "device-check")
configure_file($root/cmake/build_info.h.in \${PROJECT_BINARY_DIR}/generated/build_info.h @ONLY)
add_library(zt_common STATIC $root/runtime/common/diagnostics.cpp)
target_link_libraries(zt_common PUBLIC zt_options)
add_subdirectory($root/runtime/plan plan)
enable_testing()
include($root/cmake/ZtTesting.cmake)
add_subdirectory($root/tests/plan tests/plan)
CM

t0=$(date +%s)
status=ok
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
  cmake -S "$proj" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_PREFIX_PATH="$DEPS/usr" -DCMAKE_BUILD_RPATH="$DEPS/usr/lib/x86_64-linux-gnu/openblas-pthread;$DEPS/usr/lib/x86_64-linux-gnu" || status=configure_failed
  [ "$status" = ok ] && { cmake --build "$BUILD" -j "$JOBS" || status=build_failed; }
} >>"$LOG" 2>&1
t1=$(date +%s)
if [ "$status" = ok ]; then
  ctest --test-dir "$BUILD" --output-on-failure --timeout 120 >"$OUT/ctest.log" 2>&1
  "$BUILD/tests/plan/test_plan_gpu" >"$OUT/plan_gpu.log" 2>&1; echo "test_plan_gpu rc=$?" >>"$OUT/plan_gpu.log"
fi
t2=$(date +%s)
echo "== plan device check: $status; build $((t1 - t0)) s, tests $((t2 - t1)) s"
[ "$status" = ok ] || tail -40 "$LOG"
[ -f "$OUT/ctest.log" ] && grep -E "tests passed|tests failed|\(Failed\)|Skipped|Not Run" "$OUT/ctest.log"
[ -f "$OUT/plan_gpu.log" ] && cat "$OUT/plan_gpu.log"
exit 0
