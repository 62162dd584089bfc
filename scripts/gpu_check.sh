#!/usr/bin/env bash
# One prepared run for a lent GPU machine: unpack the carried .debs, configure (CUDA on, MPI off),
# build, run the GPU tests, the GPU benchmarks and the unit suite, log everything under $OUT, and
# print a short table LAST. Every stage is time-boxed; a failing stage does not stop the others.
#   device: bash scripts/gpu_check.sh        (carry: [".debs"]; prepare with scripts/fetch_gpu_debs.sh)
#   here:   OUT=/tmp/gc ZT_JOBS=2 bash scripts/gpu_check.sh   (no GPU: GPU tests report skipped)
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
JOBS="${ZT_JOBS:-$(nproc)}"
BUDGET="${ZT_GPU_CHECK_BUDGET:-440}"   # seconds for the whole run (the device call allows ~8 min)
BUILD="${ZT_GPU_BUILD_DIR:-$root/build-gpu}"
DEPS="${ZT_GPU_DEPS:-/tmp/zt-gpu-deps}"
ARCH="${ZT_CUDA_ARCH:-90}"
LOG="$OUT/gpu_check.log"        # trace of this script + short stage outputs
BUILD_LOG="$OUT/build.log"      # configure + compiler output
TEST_LOG="$OUT/tests.log"       # ctest output
BENCH_LOG="$OUT/bench.log"      # benchmark table + JSON lines
: >"$LOG"; : >"$BUILD_LOG"; : >"$TEST_LOG"; : >"$BENCH_LOG"
START=$(date +%s)
declare -a ST_NAME ST_STATUS ST_SECS ST_NOTE

exec 3>&1                          # the table goes to the real stdout at the end
exec >>"$LOG" 2>&1                 # everything else to the log
set -x

remaining() { echo $((BUDGET - ($(date +%s) - START))); }
# stage NAME MAX_SECONDS LOGFILE CMD... : runs CMD under timeout min(MAX, what is left - 20 s).
stage() {
  local name="$1" max="$2" logf="$3"; shift 3
  local left; left=$(( $(remaining) - 20 ))
  local lim=$(( max < left ? max : left ))
  local t0; t0=$(date +%s)
  if [ "$lim" -lt 5 ]; then
    ST_NAME+=("$name"); ST_STATUS+=("SKIPPED(time)"); ST_SECS+=(0); ST_NOTE+=("budget spent")
    return 1
  fi
  echo "=== stage $name (limit ${lim}s) $(date -u +%T) ===" >>"$logf"
  timeout --kill-after=10 "$lim" bash -c '"$@"' stage_cmd "$@" >>"$logf" 2>&1
  local rc=$?
  local st=OK
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && st="TIMEOUT(${lim}s)"
  [ $rc -ne 0 ] && [ "$st" = OK ] && st="FAIL(rc=$rc)"
  echo "=== stage $name: $st ===" >>"$logf"
  ST_NAME+=("$name"); ST_STATUS+=("$st"); ST_SECS+=($(( $(date +%s) - t0 ))); ST_NOTE+=("")
  return $rc
}
note() { ST_NOTE[$((${#ST_NOTE[@]} - 1))]="$1"; }

# ---- 0. machine facts ---------------------------------------------------------------------
env_facts() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || nvidia-smi || true
  command -v nvcc && nvcc --version | tail -2
  cmake --version | head -1; ninja --version; g++ --version | head -1; ldd --version | head -1
  python3 -c "import nvidia.nccl, os; print('nccl pip dir', os.path.dirname(nvidia.nccl.__file__))" || true
  df -h . /tmp | tail -2; nproc; free -g | head -2
  ls -la .debs 2>/dev/null | head -20
}
export -f env_facts
stage env 30 "$LOG" env_facts

# ---- 1. dependencies from the carried .debs ------------------------------------------------
unpack_deps() {
  rm -rf "$DEPS"; mkdir -p "$DEPS"
  local n=0
  for f in .debs/*.deb; do [ -f "$f" ] || continue; dpkg -x "$f" "$DEPS" && n=$((n + 1)); done
  echo "unpacked $n .deb files into $DEPS"
  local lib="$DEPS/usr/lib/x86_64-linux-gnu"
  # Debian points libopenblas.so at openblas-pthread/ through update-alternatives, which dpkg -x
  # does not run: make the links ourselves so FindBLAS and the loader see it.
  if [ -d "$lib/openblas-pthread" ]; then
    ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
    ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
    ln -sf openblas-pthread/libblas.so.3 "$lib/libblas.so.3"
    ln -sf openblas-pthread/libblas.so.3 "$lib/libblas.so"
  fi
  [ "$n" -gt 0 ]
}
export DEPS
export -f unpack_deps
stage deps 60 "$LOG" unpack_deps; note "$(ls .debs/*.deb 2>/dev/null | wc -l) debs"
export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu/openblas-pthread:$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NCCL_HOME="$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))" 2>/dev/null || true)"
if [ -n "$NCCL_HOME" ]; then
  export NCCL_HOME
  # The pip wheel ships libnccl.so.2 only; give the linker the plain name too (in our prefix).
  if [ ! -e "$NCCL_HOME/lib/libnccl.so" ] && [ -e "$NCCL_HOME/lib/libnccl.so.2" ]; then
    mkdir -p "$DEPS/nccl/lib"; ln -sf "$NCCL_HOME/include" "$DEPS/nccl/include"
    ln -sf "$NCCL_HOME/lib/libnccl.so.2" "$DEPS/nccl/lib/libnccl.so.2"
    ln -sf "$NCCL_HOME/lib/libnccl.so.2" "$DEPS/nccl/lib/libnccl.so"
    export NCCL_HOME="$DEPS/nccl"
  fi
  export LD_LIBRARY_PATH="$NCCL_HOME/lib:$LD_LIBRARY_PATH"
fi
echo "NCCL_HOME=${NCCL_HOME:-<toolkit>} LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

export root DEPS BUILD ARCH NCCL_HOME LD_LIBRARY_PATH

# ---- 2. configure --------------------------------------------------------------------------
configure() {
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$root" -B "$BUILD" "${gen[@]}" -DZT_CUDA=ON -DZT_MPI=OFF -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$DEPS/usr" \
    -DCMAKE_BUILD_RPATH="$DEPS/usr/lib/x86_64-linux-gnu/openblas-pthread;$DEPS/usr/lib/x86_64-linux-gnu"
}
export -f configure
stage configure 120 "$BUILD_LOG" configure
CONFIGURED=$?

# ---- 2b. fallback: if the whole tree does not configure (a module mid-change), build just the
# kernels and the GPU tests/bench from a generated CMake project so GPU results still come back.
configure_gpu_only() {
  local dir="$DEPS/gpu_only"; mkdir -p "$dir"
  cat >"$dir/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)  # lower than the root on purpose: the fallback must configure
project(zt_gpu_only LANGUAGES C CXX CUDA)
set(CMAKE_CXX_STANDARD 20)
set(ZT_CUDA ON)
find_package(CUDAToolkit REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread REQUIRED)
add_library(zt_options INTERFACE)
target_compile_definitions(zt_options INTERFACE ZT_HAVE_CUDA=1 ZT_HAVE_MPI=0)
target_include_directories(zt_options INTERFACE $root)
add_subdirectory($root/kernels kernels)
enable_testing()
include($root/cmake/ZtTesting.cmake)
add_subdirectory($root/tests/gpu tests/gpu)
add_subdirectory($root/bench/gpu bench/gpu)
CM
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$dir" -B "$BUILD-gpu-only" "${gen[@]}" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$DEPS/usr"
}
export -f configure_gpu_only
GPU_BUILD="$BUILD"
if [ $CONFIGURED -ne 0 ]; then
  stage cfg_gpu_only 90 "$BUILD_LOG" configure_gpu_only && GPU_BUILD="$BUILD-gpu-only"
  note "full configure failed: see build.log"
fi

# ---- 3. GPU targets first, so GPU results come back even if another module does not build --
GPU_TARGETS=(test_gpu_ops test_gpu_convert test_gpu_fused_adamw bench_gpu)
bench() {
  "$GPU_BUILD/bench/gpu/bench_gpu"
  local rc=$?; [ $rc -eq 77 ] && echo "bench_gpu: skipped (no GPU)" && return 0; return $rc
}
export GPU_BUILD
export -f bench
if [ -f "$GPU_BUILD/CMakeCache.txt" ]; then
  stage build_gpu 240 "$BUILD_LOG" cmake --build "$GPU_BUILD" -j "$JOBS" --target "${GPU_TARGETS[@]}"
  # Only this module's GPU tests here (other modules' gpu-labelled tests run after build_all).
  stage gpu_tests 150 "$TEST_LOG" ctest --test-dir "$GPU_BUILD" -L gpu -R '^test_gpu_' --output-on-failure --timeout 140
  note "$(grep -E 'tests passed|tests failed' "$TEST_LOG" | tail -1); skipped: $(grep -c '(Skipped)' "$TEST_LOG")"
  stage gpu_bench 120 "$BENCH_LOG" bench
  grep -q 'bench_gpu: skipped' "$BENCH_LOG" && note "skipped: no GPU"
fi
# ---- 4. the rest of the project, and the unit suite ------------------------------------------
if [ $CONFIGURED -eq 0 ]; then
  stage build_all 240 "$BUILD_LOG" cmake --build "$BUILD" -j "$JOBS" -- -k 0
  note "$(grep -c 'FAILED:' "$BUILD_LOG") failed build steps"
  if [ -x "$BUILD/bench/gpu/bench_gpu_model" ]; then
    model_bench() {
      "$BUILD/bench/gpu/bench_gpu_model" gpt2-124m 8
      local rc=$?; [ $rc -eq 77 ] && echo "bench_gpu_model: skipped (no GPU)" && return 0; return $rc
    }
    export -f model_bench
    stage model_bench 90 "$BENCH_LOG" model_bench
    grep -q 'bench_gpu_model: skipped' "$BENCH_LOG" && note "skipped: no GPU"
  fi
  # The ZeRO engine on the GPU: stages 0-3 (tiny vs the CPU backend; gpt2-124m throughput).
  if [ -x "$BUILD/runtime/cli/zerotrain" ]; then
    ENGINE_LOG="$OUT/engine.log"; : >"$ENGINE_LOG"
    stage engine 150 "$ENGINE_LOG" "$root/scripts/gpu_engine_check.sh" "$BUILD/runtime/cli/zerotrain" "$ENGINE_LOG"
  fi
  # The whole single-process suite: unit tests and every module's gpu-labelled tests (MPI is off).
  stage all_tests 150 "$TEST_LOG" ctest --test-dir "$BUILD" -LE mpi -j 4 --output-on-failure --timeout 120
  note "$(grep -E 'tests passed|tests failed' "$TEST_LOG" | tail -1)"
fi
set +x

# ---- 5. table (printed last) -----------------------------------------------------------------
{
  echo "zerotrain gpu_check: $(date -u +%FT%TZ), $(( $(date +%s) - START )) s total, logs in $OUT"
  printf '%-12s %-16s %6s  %s\n' stage status secs note
  for i in "${!ST_NAME[@]}"; do
    printf '%-12s %-16s %6s  %s\n' "${ST_NAME[$i]}" "${ST_STATUS[$i]}" "${ST_SECS[$i]}" "${ST_NOTE[$i]}"
  done
  echo "-- tests not passed (skipped ones excluded; details in tests.log):"
  grep -E '^\s+[0-9]+ - .*\(.*\)\s*$' "$TEST_LOG" | grep -v '(Skipped)' | sort -u | head -20
  grep -E '^\[  FAILED  \]|CUDA error|cuBLAS error' "$TEST_LOG" | sort -u | head -10
  echo "-- key numbers:"
  python3 - "$BENCH_LOG" <<'PY' 2>/dev/null || echo "  (no benchmark numbers: see bench.log)"
import json, sys
n = 0
for line in open(sys.argv[1]):
    if not line.startswith('{"bench"'):
        continue
    r = json.loads(line)
    n += 1
    if r["bench"] == "d2d_copy":
        print("  d2d copy                         %7.2f TB/s (read+write)" % r["tb_per_s"])
    elif r["bench"] == "fused_adamw":
        print("  fused AdamW grad %-4s x%-3d chunks %7.2f TB/s = %.2f of copy, %.1f Gparam/s"
              % (r["grad_dtype"], r["chunks"], r["tb_per_s"], r["ratio_to_copy"], r["gparams_per_s"]))
    elif r["bench"] == "gemm_bf16":
        print("  GEMM %-28s %7.1f TFLOP/s = %.2f of 989 peak, %.2f of 780 measured"
              % (r["shape"], r["tflops"], r["ratio_to_peak"], r["ratio_to_measured_780"]))
    elif r["bench"] == "model_fwd_bwd":
        print("  %s fwd+bwd B=%d T=%d: %.0f tokens/s, %.1f TFLOP/s = %.2f MFU of 989, first loss %.3f"
              % (r["model"], r["B"], r["T"], r["tokens_per_s"], r["tflops"], r["mfu_vs_989"], r["first_loss"]))
if n == 0:
    print("  (no benchmark numbers: see bench.log)")
PY
} >"$OUT/summary.txt" 2>&1
[ -f "$OUT/engine.log" ] && sed -n '/^ENGINE tiny/,$p' "$OUT/engine.log" >>"$OUT/summary.txt"
cat "$OUT/summary.txt" >&3
# Keep the returned files within the 16 MiB-per-file limit.
for f in "$LOG" "$BUILD_LOG" "$TEST_LOG" "$BENCH_LOG"; do
  [ "$(stat -c %s "$f")" -gt $((15 * 1024 * 1024)) ] && tail -c $((15 * 1024 * 1024)) "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
exit 0
