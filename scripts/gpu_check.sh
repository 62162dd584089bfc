#!/usr/bin/env bash
# One prepared run for a lent GPU machine (about 8 minutes on one H200): unpack the carried .debs
# (build deps and an Open MPI launcher), configure (CUDA on; MPI on when the carried launcher works),
# build, run every GPU test, the attention benchmark (flash vs a GEMM of the same FLOPs), zerotrain
# gpt2-124m against the PyTorch peer (tokens/s, MFU), the engine at world size 1 (offload paths,
# stages 0-3) and at 2 and 4 ranks on the one GPU (--comm mpi), then the unit suite if time is left;
# log everything under $OUT and print one table LAST. Every stage is time-boxed; a failing stage does
# not stop the others.
#   device: bash scripts/gpu_check.sh        (carry: [".debs"]; prepare with scripts/fetch_gpu_debs.sh)
#   here:   OUT=/tmp/gc ZT_JOBS=2 bash scripts/gpu_check.sh   (no GPU: GPU tests report skipped)
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
JOBS="${ZT_JOBS:-$(nproc)}"
BUDGET="${ZT_GPU_CHECK_BUDGET:-480}"   # seconds for the whole run (the device call allows ~8 min)
BUILD="${ZT_GPU_BUILD_DIR:-$root/build-gpu}"
DEPS="${ZT_GPU_DEPS:-/tmp/zt-gpu-deps}"
ARCH="${ZT_CUDA_ARCH:-90}"
LOG="$OUT/gpu_check.log"        # trace of this script + short stage outputs
BUILD_LOG="$OUT/build.log"      # configure + compiler output
TEST_LOG="$OUT/tests.log"       # ctest output
BENCH_LOG="$OUT/bench.log"      # benchmark tables + JSON lines (attention, GEMM, model, peer)
ENGINE_LOG="$OUT/engine.log"    # zerotrain runs: world 1 (offload, stages) and multi-rank
METRICS="${ZT_GPU_METRICS:-/tmp/zt-gpu-metrics}"  # zerotrain --metrics files; $OUT/metrics.tar.gz
: >"$LOG"; : >"$BUILD_LOG"; : >"$TEST_LOG"; : >"$BENCH_LOG"; : >"$ENGINE_LOG"
rm -rf "$METRICS"; mkdir -p "$METRICS"
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

# ---- 1b. an MPI launcher: the carried Open MPI, relocated into $DEPS (the machine has none) ------
# OPAL_PREFIX / PMIX_INSTALL_PREFIX move its install paths under the prefix; plm "isolated" starts
# local ranks without ssh; root needs the two allow-run-as-root variables.
MPIRUN=""; MPI_NOTE="no carried Open MPI (.debs from scripts/fetch_gpu_debs.sh)"
if [ -x "$DEPS/usr/bin/orterun" ]; then
  export OPAL_PREFIX="$DEPS/usr" PMIX_INSTALL_PREFIX="$DEPS/usr/lib/x86_64-linux-gnu/pmix2"
  export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu/openmpi/lib:$LD_LIBRARY_PATH"
  export OMPI_MCA_plm=isolated OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1 PMIX_MCA_pcompress_base_silence_warning=1
  mpi_probe() { "$DEPS/usr/bin/orterun" --oversubscribe --bind-to none -np 2 /bin/true; }
  export -f mpi_probe
  if stage mpi_launcher 20 "$LOG" mpi_probe; then
    MPIRUN="$DEPS/usr/bin/orterun --oversubscribe --bind-to none"
    MPI_NOTE="Open MPI 4.1 from .debs, relocated"
  else
    MPI_NOTE="carried Open MPI did not launch 2 ranks: see gpu_check.log"
  fi
  note "$MPI_NOTE"
fi
export MPIRUN

export root DEPS BUILD ARCH NCCL_HOME LD_LIBRARY_PATH

# ---- 2. configure --------------------------------------------------------------------------
configure() {  # configure [mpi]
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  local mpi=(-DZT_MPI=OFF)
  [ "${1:-}" = mpi ] && mpi=(-DZT_MPI=ON -DMPI_C_COMPILER="$DEPS/usr/bin/mpicc.openmpi"
                            -DMPIEXEC_EXECUTABLE="$DEPS/usr/bin/orterun")
  rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
  cmake -S "$root" -B "$BUILD" "${gen[@]}" -DZT_CUDA=ON "${mpi[@]}" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$DEPS/usr" \
    -DCMAKE_BUILD_RPATH="$DEPS/usr/lib/x86_64-linux-gnu/openblas-pthread;$DEPS/usr/lib/x86_64-linux-gnu"
}
export -f configure
CONFIGURED=1
if [ -n "$MPIRUN" ]; then
  stage configure 120 "$BUILD_LOG" configure mpi && CONFIGURED=0
  [ $CONFIGURED -ne 0 ] && note "with MPI failed: retrying without" && MPIRUN="" && MPI_NOTE="configure with MPI failed"
fi
if [ $CONFIGURED -ne 0 ]; then
  stage configure 120 "$BUILD_LOG" configure && CONFIGURED=0
fi

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
GPU_TARGETS=(test_gpu_ops test_gpu_attention test_gpu_convert test_gpu_fused_adamw bench_gpu bench_attention)
run_bench() {  # run_bench BINARY ARGS... : exit 77 (no GPU) is reported, not failed
  [ -x "$1" ] || { echo "$(basename "$1"): not built"; return 3; }
  "$@"
  local rc=$?; [ $rc -eq 77 ] && echo "$(basename "$1"): skipped (no GPU)" && return 0; return $rc
}
export GPU_BUILD
export -f run_bench
if [ -f "$GPU_BUILD/CMakeCache.txt" ]; then
  stage build_gpu 240 "$BUILD_LOG" cmake --build "$GPU_BUILD" -j "$JOBS" --target "${GPU_TARGETS[@]}"
  # Only this module's GPU tests here (other modules' gpu-labelled tests run after build_all).
  stage gpu_tests 150 "$TEST_LOG" ctest --test-dir "$GPU_BUILD" -L gpu -R '^test_gpu_' --output-on-failure --timeout 140
  note "$(grep -E 'tests passed|tests failed' "$TEST_LOG" | tail -1); skipped: $(grep -c '(Skipped)' "$TEST_LOG")"
  stage attention 60 "$BENCH_LOG" run_bench "$GPU_BUILD/bench/gpu/bench_attention"
  grep -q 'bench_attention: skipped' "$BENCH_LOG" && note "skipped: no GPU"
  stage gpu_bench 40 "$BENCH_LOG" run_bench "$GPU_BUILD/bench/gpu/bench_gpu" --quick
  grep -q 'bench_gpu: skipped' "$BENCH_LOG" && note "skipped: no GPU"
fi
# ---- 4. the rest of the project, zerotrain against the peer, the engine, the unit suite -------
ZT="$BUILD/runtime/cli/zerotrain"
have_gpu() { nvidia-smi -L >/dev/null 2>&1; }
if [ $CONFIGURED -eq 0 ]; then
  stage build_all 240 "$BUILD_LOG" cmake --build "$BUILD" -j "$JOBS" -- -k 0
  note "$(grep -c 'FAILED:' "$BUILD_LOG") failed build steps"
  # zerotrain's whole training step (engine, stage 0, AdamW) vs the PyTorch peer: gpt2-124m,
  # B = 16, T = 1024, the GPT-2 vocabulary; the peer in eager mode here, compiled at the end.
  PEER="$root/scripts/peers/torch_gpt2.py"
  peer_b=16; peer_t=1024; peer_v=50257; peer_steps=12
  zt_vs_peer() {
    have_gpu || { echo "zt_vs_peer: skipped (no GPU)"; return 0; }
    local cfg="$METRICS/peer_stage0.json"
    cat >"$cfg" <<JSON
{"train_micro_batch_size_per_gpu": $peer_b, "gradient_accumulation_steps": 1, "steps_per_print": 100,
 "optimizer": {"type": "AdamW", "params": {"lr": 6e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}},
 "gradient_clipping": 1.0, "bf16": {"enabled": true}, "zero_optimization": {"stage": 0}}
JSON
    timeout 100 "$ZT" --config "$cfg" --model gpt2-124m --steps $peer_steps \
      --eval-every 0 --eval-batches 1 --backend cuda --metrics "$METRICS/zt_peer.jsonl" 2>&1 | tail -3
    if [ -f "$PEER" ]; then
      PYTHONUNBUFFERED=1 timeout 100 python3 "$PEER" --device cuda --batch $peer_b --seq-len $peer_t --vocab $peer_v \
        --steps $peer_steps 2>&1 | tee "$METRICS/peer_eager.jsonl" | tail -5
    else
      echo "zt_vs_peer: $PEER is not in this tree: no peer numbers"
    fi
  }
  peer_compiled() {
    have_gpu && [ -f "$PEER" ] || { echo "peer_compiled: skipped (no GPU or no peer script)"; return 0; }
    PYTHONUNBUFFERED=1 timeout 150 python3 "$PEER" --device cuda --batch $peer_b --seq-len $peer_t --vocab $peer_v \
      --steps $peer_steps --compile 2>&1 | tee "$METRICS/peer_compiled.jsonl" | tail -5
  }
  export PEER peer_b peer_t peer_v peer_steps ZT METRICS
  export -f zt_vs_peer peer_compiled have_gpu
  if [ -x "$ZT" ]; then
    stage zt_vs_peer 120 "$BENCH_LOG" zt_vs_peer
    [ -f "$PEER" ] || note "no scripts/peers/torch_gpt2.py"
    if [ -x "$BUILD/bench/gpu/bench_gpu_model" ]; then
      stage model_bench 60 "$BENCH_LOG" run_bench "$BUILD/bench/gpu/bench_gpu_model" gpt2-124m 16
    fi
    # The engine on the GPU at world size 1: offload paths, tiny vs the CPU backend, gpt2-124m stages.
    if have_gpu; then
      stage engine 150 "$ENGINE_LOG" env ZT_METRICS_DIR="$METRICS" "$root/scripts/gpu_engine_check.sh" "$ZT" "$ENGINE_LOG"
      if [ -n "$MPIRUN" ] && grep -q 'ZT_MPI=ON\|MPI=ON' "$BUILD_LOG"; then
        # The host-staged communicator's own test (CPU backend memory) under the carried launcher first.
        # shellcheck disable=SC2086
        stage staged_comm 30 "$TEST_LOG" $MPIRUN -np 2 "$BUILD/tests/collectives/collectives_staged_test"
        stage multirank 150 "$ENGINE_LOG" env ZT_METRICS_DIR="$METRICS" ZT_MPIRUN="$MPIRUN" \
          "$root/scripts/gpu_engine_check.sh" "$ZT" "$ENGINE_LOG" multirank
      else
        ST_NAME+=("multirank"); ST_STATUS+=("SKIPPED"); ST_SECS+=(0); ST_NOTE+=("no MPI launcher: $MPI_NOTE")
      fi
    else
      ST_NAME+=("engine"); ST_STATUS+=("SKIPPED"); ST_SECS+=(0); ST_NOTE+=("no GPU")
    fi
    stage peer_compile 150 "$BENCH_LOG" peer_compiled
  else
    ST_NAME+=("zt_vs_peer"); ST_STATUS+=("SKIPPED"); ST_SECS+=(0); ST_NOTE+=("zerotrain not built: see build.log")
    ST_NAME+=("engine"); ST_STATUS+=("SKIPPED"); ST_SECS+=(0); ST_NOTE+=("zerotrain not built")
  fi
  # The whole single-process suite: unit tests and every module's gpu-labelled tests.
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
  python3 "$root/scripts/gpu_check_summary.py" "$TEST_LOG" "$BENCH_LOG" "$ENGINE_LOG" "$METRICS" ||
    echo "  (summary failed: see the logs)"
} >"$OUT/summary.txt" 2>&1
tar -czf "$OUT/metrics.tar.gz" -C "$METRICS" . 2>/dev/null
cat "$OUT/summary.txt" >&3
# Keep the returned files within the 16 MiB-per-file limit.
for f in "$LOG" "$BUILD_LOG" "$TEST_LOG" "$BENCH_LOG" "$ENGINE_LOG"; do
  [ "$(stat -c %s "$f")" -gt $((15 * 1024 * 1024)) ] && tail -c $((15 * 1024 * 1024)) "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
exit 0
