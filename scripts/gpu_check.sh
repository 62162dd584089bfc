#!/usr/bin/env bash
# One prepared run for a lent GPU machine (one H200; the device call allows about 8 minutes, 15 in
# all with the machine's start): unpack the carried .debs (build deps and an Open MPI launcher),
# configure, build only what the stages use, then measure in order of what matters most, each stage
# time-boxed and its verdict printed the moment it ends (a timeout keeps what finished):
#
#   call 1 (about 8 min, ZT_GPU_CHECK_BUDGET=480)    caps (s)
#     env           machine facts                         10
#     deps          unpack .debs/, report the tools       15
#     mpi_launcher  the carried orterun starts 2 ranks    10
#     configure     CUDA on, MPI on if the launcher works 40   (fallback: scripts/gpu_only, GPU parts only)
#     build         the stages' targets only              150
#     gpu_tests     every gpu-labelled test               50
#     attention     bench_attention (flash vs GEMM)       35
#     engine        world 1: offload paths, stages 0-3    80
#     multirank     2 and 4 ranks on one GPU (--comm mpi) 65
#   call 2 (what is left, e.g. ZT_GPU_CHECK_BUDGET=240 on the still-warm machine)
#     zt_vs_peer    zerotrain vs the PyTorch peer         120
#     model_bench   model forward+backward alone          40
#     gpu_bench     copy / AdamW / GEMM bandwidth         30
#     peer_compile  the peer under torch.compile          150
#     all_tests     the single-process suite              120
#
# The caps of call 1 add to 455 s, 25 s under its budget (15 s are kept for the table). Each stage
# gets min(cap, what is left). Every verdict is also written to $BUILD/gpu_check.state: a second
# call on the same machine skips the stages that finished (OK or FAIL), re-runs those cut by time,
# keeps the build (ninja continues where it stopped) and goes on with the plan. --fresh forgets
# the state. Without a GPU the GPU stages report NO-DEVICE (ZT_GPU_CHECK_FORCE=1 runs them anyway,
# a rehearsal: the binaries skip or fail fast, the launcher runs for real); --dry-run runs nothing and reports
# every stage NO-DEVICE in this order with its cap (CI checks that: tests/gpu/check_gpu_check.py).
#   device: bash scripts/gpu_check.sh             (carry: [".debs"]; prepare with scripts/fetch_gpu_debs.sh)
#   here:   OUT=/tmp/gc ZT_JOBS=2 bash scripts/gpu_check.sh      (builds; GPU stages report NO-DEVICE)
#           bash scripts/gpu_check.sh --dry-run | --list-targets | --fresh
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

MODE=run
FRESH=0
for a in "$@"; do
  case "$a" in
    --dry-run) MODE=dry ;;
    --list-targets) MODE=list ;;
    --fresh) FRESH=1 ;;
    *) echo "usage: gpu_check.sh [--dry-run | --list-targets] [--fresh]" >&2; exit 2 ;;
  esac
done

# What the stages build and run. gpu_tests runs every gpu-labelled CTest test; GPU_TEST_TARGETS are
# their executables (check_gpu_check.py compares the two in the build); STAGE_TARGETS are the
# binaries the other stages run.
GPU_TEST_TARGETS=(test_gpu_ops test_gpu_attention test_gpu_convert test_gpu_fused_adamw test_gpu_zero_step
                  test_gpu_llama_ops collectives_nccl_test test_plan_gpu test_gpu_block_quant)
STAGE_TARGETS=(bench_attention zerotrain collectives_staged_test bench_gpu_model bench_gpu)
# The plan: name:cap:needs-a-GPU, in the order the stages run.
PLAN=(env:10:0 deps:15:0 mpi_launcher:10:0 configure:40:0 build:150:0 gpu_tests:50:1 attention:35:1 engine:80:1
      multirank:65:1 zt_vs_peer:120:1 model_bench:40:1 gpu_bench:30:1 peer_compile:150:1 all_tests:120:0)
# Stages that run only when configure fails: without MPI, then the GPU-only fallback project.
EXTRA=(cfg_nompi:40:0 cfg_gpu_only:40:0)
if [ "$MODE" = list ]; then
  echo "gpu_test_targets: ${GPU_TEST_TARGETS[*]}"
  echo "stage_targets: ${STAGE_TARGETS[*]}"
  echo "stages: $(for p in "${PLAN[@]}"; do printf '%s ' "${p%%:*}"; done)"
  exit 0
fi

OUT="${OUT:-$root/out}"
mkdir -p "$OUT"
JOBS="${ZT_JOBS:-$(nproc)}"
BUDGET="${ZT_GPU_CHECK_BUDGET:-480}"   # seconds for this call
RESERVE=15                             # kept for the table at the end
BUILD="${ZT_GPU_BUILD_DIR:-$root/build-gpu}"
DEPS="${ZT_GPU_DEPS:-$root/build-gpu-deps}"
ARCH="${ZT_CUDA_ARCH:-90}"
LOG="$OUT/gpu_check.log"        # trace of this script + short stage outputs
BUILD_LOG="$OUT/build.log"      # configure + compiler output
TEST_LOG="$OUT/tests.log"       # ctest output
BENCH_LOG="$OUT/bench.log"      # benchmark tables + JSON lines (attention, GEMM, model, peer)
ENGINE_LOG="$OUT/engine.log"    # zerotrain runs: world 1 (offload, stages) and multi-rank
METRICS="${ZT_GPU_METRICS:-$BUILD/metrics}"  # zerotrain --metrics files (kept across calls); $OUT/metrics.tar.gz
STATE="$BUILD/gpu_check.state"  # one line per finished stage: name status seconds call note
: >"$LOG"; : >"$BUILD_LOG"; : >"$TEST_LOG"; : >"$BENCH_LOG"; : >"$ENGINE_LOG"
if [ "$MODE" = run ]; then
  mkdir -p "$BUILD" "$METRICS"
  [ "$FRESH" -eq 1 ] && rm -f "$STATE" && rm -rf "${METRICS:?}"/* 2>/dev/null
  touch "$STATE"
fi
CALL=1
[ "$MODE" = run ] && [ -s "$STATE" ] && CALL=$(( $(awk '{print $4}' "$STATE" | sort -n | tail -1) + 1 ))
START=$(date +%s)
declare -a ST_NAME ST_STATUS ST_SECS ST_CAP ST_NOTE

exec 3>&1                          # verdicts and the table go to the real stdout
exec >>"$LOG" 2>&1                 # everything else to the log
set -x

have_gpu() { nvidia-smi -L >/dev/null 2>&1; }
HAVE_GPU=0
[ "$MODE" = run ] && have_gpu && HAVE_GPU=1
# ZT_GPU_CHECK_FORCE=1 runs the GPU stages without a GPU too (their binaries skip or fail fast):
# a rehearsal of the commands, and the multi-rank launcher for real on the CPU backend's test.
[ "$MODE" = run ] && [ "${ZT_GPU_CHECK_FORCE:-0}" = 1 ] && HAVE_GPU=1
remaining() { echo $((BUDGET - ($(date +%s) - START))); }
plan_cap() { local p; for p in "${PLAN[@]}" "${EXTRA[@]}"; do [ "${p%%:*}" = "$1" ] && { p="${p#*:}"; echo "${p%%:*}"; return; }; done; echo 30; }
plan_gpu() { local p; for p in "${PLAN[@]}" "${EXTRA[@]}"; do [ "${p%%:*}" = "$1" ] && { echo "${p##*:}"; return; }; done; echo 0; }
verdict() {  # verdict NAME STATUS SECS CAP NOTE [earlier]: record, print now, remember across calls
  ST_NAME+=("$1"); ST_STATUS+=("$2"); ST_SECS+=("$3"); ST_CAP+=("$4"); ST_NOTE+=("$5")
  printf 'gpu_check: %-12s %-18s %4s s (cap %3s)  %s\n' "$1" "$2" "$3" "$4" "$5" >&3
  if [ "$MODE" = run ] && [ -z "${6:-}" ]; then
    case "$2" in OK | FAIL*) echo "$1 $2 $3 $CALL ${5// /_}" >>"$STATE" ;; esac
  fi
}
# stage NAME LOGFILE CMD... : runs CMD under timeout min(cap, what is left - RESERVE). Returns CMD's
# status (0 for a stage an earlier call finished OK, 1 for one it failed; 1 when not run).
stage() {
  local name="$1" logf="$2"; shift 2
  local cap; cap=$(plan_cap "$name")
  local note="$STAGE_NOTE"; STAGE_NOTE=""  # STAGE_NOTE: the caller's note for this stage only
  local prev; prev="$( [ "$MODE" = run ] && awk -v n="$name" '$1 == n {s = $2 " " $3 " " $4} END {print s}' "$STATE")"
  if [ -n "$prev" ]; then
    set -- $prev
    verdict "$name" "$1" "$2" "$cap" "in call $3" earlier
    [ "$1" = OK ]; return
  fi
  if [ "$MODE" = dry ]; then
    verdict "$name" NO-DEVICE 0 "$cap" "dry run: call $PLAN_CALL, +${PLAN_START}..$(( PLAN_START + cap )) s"
    return 1
  fi
  if [ "$(plan_gpu "$name")" = 1 ] && [ "$HAVE_GPU" -eq 0 ]; then
    verdict "$name" NO-DEVICE 0 "$cap" "no GPU here"
    return 1
  fi
  local left; left=$(( $(remaining) - RESERVE ))
  local lim=$(( cap < left ? cap : left ))
  if [ "$lim" -lt 5 ]; then
    verdict "$name" "SKIPPED(time)" 0 "$cap" "budget spent: the next call runs it"
    return 1
  fi
  local t0; t0=$(date +%s)
  echo "=== stage $name (limit ${lim}s) $(date -u +%T) ===" >>"$logf"
  timeout --kill-after=10 "$lim" bash -c '"$@"' stage_cmd "$@" >>"$logf" 2>&1
  local rc=$?
  local st=OK
  { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && st="TIMEOUT(${lim}s)"
  [ $rc -ne 0 ] && [ "$st" = OK ] && st="FAIL(rc=$rc)"
  echo "=== stage $name: $st ===" >>"$logf"
  verdict "$name" "$st" $(( $(date +%s) - t0 )) "$cap" "$note"
  return $rc
}
STAGE_NOTE=""
ran() { [ "$MODE" = run ] && case "${ST_STATUS[-1]}" in OK | FAIL* | TIMEOUT*) [ "${ST_NOTE[-1]}" = "${ST_NOTE[-1]#in call }" ] ;; *) false ;; esac; }
add_note() { [ -n "$1" ] && ran && ST_NOTE[-1]="${ST_NOTE[-1]:+${ST_NOTE[-1]}; }$1"; }  # to the stage just run, in this call
# In a dry run: when each stage would start if every earlier one used its whole cap, and its call.
PLAN_END=0; PLAN_START=0; PLAN_CALL=1
advance_plan() {
  local cap; cap=$(plan_cap "$1")
  if [ "$PLAN_CALL" -eq 1 ] && [ $(( PLAN_END + cap + RESERVE )) -gt "$BUDGET" ]; then PLAN_CALL=2; PLAN_END=0; fi
  PLAN_START=$PLAN_END; PLAN_END=$(( PLAN_END + cap ))
}
# run_stage NAME LOGFILE CMD... : stage with the dry-run bookkeeping
run_stage() { [ "$MODE" = dry ] && advance_plan "$1"; stage "$@"; }

# ---- machine facts, dependencies ------------------------------------------------------------
env_facts() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || nvidia-smi || true
  command -v nvcc && nvcc --version | tail -2
  cmake --version | head -1; ninja --version; g++ --version | head -1; ldd --version | head -1
  python3 -c "import nvidia.nccl, os; print('nccl pip dir', os.path.dirname(nvidia.nccl.__file__))" || true
  df -h . /tmp | tail -2; nproc; free -g | head -2
  ls -la .debs 2>/dev/null | head -20
}
export -f env_facts
run_stage env "$LOG" env_facts

# shellcheck source=scripts/gpu_deps.sh
source "$root/scripts/gpu_deps.sh"
deps_stage() {
  zt_deps_unpack "$root/.debs" "$DEPS" || return 1
  zt_deps_report "$DEPS" | tee "$DEPS/report.txt"
  ! grep -q MISSING "$DEPS/report.txt"
}
export root DEPS
export -f deps_stage zt_deps_unpack zt_deps_report zt_deps_libdir
STAGE_NOTE="$(ls .debs/*.deb 2>/dev/null | wc -l) debs"
run_stage deps "$LOG" deps_stage
if [ "$MODE" = run ] && [ -f "$DEPS/report.txt" ]; then  # which tools it found, on the terminal too
  grep -E '^deps: (pkgconf|protoc|mpicc\.openmpi|orterun) ' "$DEPS/report.txt" | sed 's/^/gpu_check:   /' >&3
  grep -c MISSING "$DEPS/report.txt" | xargs -I{} echo "gpu_check:   deps: {} missing headers/libraries/tools" >&3
fi
[ "$MODE" = run ] && zt_deps_env "$DEPS"
NCCL_HOME="$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))" 2>/dev/null || true)"
if [ -n "$NCCL_HOME" ]; then
  export NCCL_HOME
  # The pip wheel ships libnccl.so.2 only; give the linker the plain name too (in our prefix).
  if [ ! -e "$NCCL_HOME/lib/libnccl.so" ] && [ -e "$NCCL_HOME/lib/libnccl.so.2" ]; then
    mkdir -p "$DEPS/nccl/lib"; ln -sfn "$NCCL_HOME/include" "$DEPS/nccl/include"
    ln -sf "$NCCL_HOME/lib/libnccl.so.2" "$DEPS/nccl/lib/libnccl.so.2"
    ln -sf "$NCCL_HOME/lib/libnccl.so.2" "$DEPS/nccl/lib/libnccl.so"
    export NCCL_HOME="$DEPS/nccl"
  fi
  export LD_LIBRARY_PATH="$NCCL_HOME/lib:${LD_LIBRARY_PATH:-}"
fi
echo "NCCL_HOME=${NCCL_HOME:-<toolkit>} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"

# ---- an MPI launcher: the carried Open MPI, relocated into $DEPS (the machine has none) -------
# zt_deps_env set OPAL_PREFIX / PMIX_INSTALL_PREFIX; plm "isolated" starts local ranks without
# ssh; root needs the two allow-run-as-root variables.
MPIRUN=""; MPI_NOTE="no carried Open MPI (.debs from scripts/fetch_gpu_debs.sh)"
export OMPI_MCA_plm=isolated OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1 PMIX_MCA_pcompress_base_silence_warning=1
mpi_probe() { "$DEPS/usr/bin/orterun" --oversubscribe --bind-to none -np 2 /bin/true; }
export -f mpi_probe
if [ "$MODE" = dry ] || [ -x "$DEPS/usr/bin/orterun" ]; then
  STAGE_NOTE="Open MPI 4.1 from .debs, relocated"
  if run_stage mpi_launcher "$LOG" mpi_probe; then
    MPIRUN="$DEPS/usr/bin/orterun --oversubscribe --bind-to none"
    MPI_NOTE="Open MPI 4.1 from .debs"
  else
    MPI_NOTE="the carried Open MPI did not launch 2 ranks: see gpu_check.log"
  fi
else
  verdict mpi_launcher "SKIPPED" 0 "$(plan_cap mpi_launcher)" "$MPI_NOTE"
fi
export MPIRUN

export BUILD ARCH NCCL_HOME LD_LIBRARY_PATH JOBS
# ---- configure --------------------------------------------------------------------------------
configure() {  # configure [mpi]
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  local dep_args; mapfile -t dep_args < <(zt_deps_cmake_args "$DEPS")
  local mpi=(-DZT_MPI=OFF); [ "${1:-}" = mpi ] && mpi=(-DZT_MPI=ON)
  rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
  cmake -S "$root" -B "$BUILD" "${gen[@]}" -DZT_CUDA=ON "${mpi[@]}" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DCMAKE_BUILD_TYPE=Release "${dep_args[@]}"
}
# The fallback: if the whole tree does not configure (a module mid-change), build just the kernels,
# the GPU tests and the GPU benchmarks from scripts/gpu_only/ so GPU results still come back.
configure_gpu_only() {
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  local dep_args; mapfile -t dep_args < <(zt_deps_cmake_args "$DEPS")
  cmake -S "$root/scripts/gpu_only" -B "$BUILD-gpu-only" "${gen[@]}" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    -DCMAKE_BUILD_TYPE=Release "${dep_args[@]}"
}
export -f configure configure_gpu_only zt_deps_cmake_args
GPU_BUILD="$BUILD"
if [ -n "$MPIRUN" ] || [ "$MODE" = dry ]; then
  STAGE_NOTE="MPI on"
  run_stage configure "$BUILD_LOG" configure mpi
  CFG=$?
  if [ $CFG -ne 0 ] && [ "$MODE" = run ]; then
    MPIRUN=""; MPI_NOTE="configure with MPI failed: see build.log"
    STAGE_NOTE="MPI off"
    stage cfg_nompi "$BUILD_LOG" configure; CFG=$?
  fi
else
  STAGE_NOTE="MPI off: $MPI_NOTE"
  run_stage configure "$BUILD_LOG" configure; CFG=$?
fi
if [ $CFG -ne 0 ] && [ "$MODE" = run ]; then
  STAGE_NOTE="full configure failed: see build.log"
  stage cfg_gpu_only "$BUILD_LOG" configure_gpu_only && GPU_BUILD="$BUILD-gpu-only"
fi
grep -q '^ZT_MPI:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null || MPIRUN=""

# ---- build only what the stages use --------------------------------------------------------
build_targets() {  # the listed targets this build tree has (the fallback has no zerotrain)
  local have; have="$(cmake --build "$GPU_BUILD" --target help 2>/dev/null | sed -E 's/^\.\.\. //; s/:.*$//')"
  local t
  for t in "$@"; do grep -qx "$t" <<<"$have" && echo "$t"; done
}
build_stage() {
  local t; mapfile -t t < <(build_targets "$@")
  echo "building ${t[*]}"
  cmake --build "$GPU_BUILD" -j "$JOBS" --target "${t[@]}" -- -k 0
}
export GPU_BUILD
export -f build_targets build_stage
STAGE_NOTE="$([ "$GPU_BUILD" != "$BUILD" ] && echo "GPU-only fallback")"
run_stage build "$BUILD_LOG" build_stage "${GPU_TEST_TARGETS[@]}" "${STAGE_TARGETS[@]}"
add_note "$(grep -c 'FAILED:' "$BUILD_LOG") failed build steps"

# ---- GPU tests, attention, the engine at world 1, then 2 and 4 ranks ------------------------
run_bench() {  # run_bench BINARY ARGS... : exit 77 (no GPU) is reported, not failed
  [ -x "$1" ] || { echo "$(basename "$1"): not built"; return 3; }
  "$@"
  local rc=$?; [ $rc -eq 77 ] && echo "$(basename "$1"): skipped (no GPU)" && return 0; return $rc
}
export -f run_bench
run_stage gpu_tests "$TEST_LOG" ctest --test-dir "$GPU_BUILD" -L gpu --output-on-failure --timeout 45
add_note "$(grep -E 'tests passed|tests failed' "$TEST_LOG" | tail -1)"
run_stage attention "$BENCH_LOG" run_bench "$GPU_BUILD/bench/gpu/bench_attention"

ZT="$BUILD/runtime/cli/zerotrain"
export ZT METRICS root ENGINE_LOG
engine_world1() { [ -x "$ZT" ] || { echo "zerotrain not built"; return 3; }
  env ZT_METRICS_DIR="$METRICS" "$root/scripts/gpu_engine_check.sh" "$ZT" "$ENGINE_LOG"; }
engine_multirank() {
  [ -x "$ZT" ] || { echo "zerotrain not built"; return 3; }
  [ -n "$MPIRUN" ] || { echo "no MPI launcher"; return 3; }
  # The host-staged communicator's own test (CPU backend memory) under the carried launcher first.
  # shellcheck disable=SC2086
  timeout 25 $MPIRUN -np 2 "$BUILD/tests/collectives/collectives_staged_test" || echo "collectives_staged_test failed"
  env ZT_METRICS_DIR="$METRICS" ZT_MPIRUN="$MPIRUN" "$root/scripts/gpu_engine_check.sh" "$ZT" "$ENGINE_LOG" multirank
}
export -f engine_world1 engine_multirank
run_stage engine "$ENGINE_LOG" engine_world1
STAGE_NOTE="$([ -z "$MPIRUN" ] && echo "no MPI launcher: $MPI_NOTE")"
run_stage multirank "$ENGINE_LOG" engine_multirank

# ---- zerotrain against the peer, then the rest ----------------------------------------------
# zerotrain's whole training step (engine, stage 0, AdamW) vs the PyTorch peer: gpt2-124m,
# B = 16, T = 1024, the GPT-2 vocabulary; the peer in eager mode here, compiled later.
PEER="$root/scripts/peers/torch_gpt2.py"
peer_b=16; peer_t=1024; peer_v=50257; peer_steps=12
zt_vs_peer() {
  [ -x "$ZT" ] || { echo "zerotrain not built"; return 3; }
  local cfg="$METRICS/peer_stage0.json"
  cat >"$cfg" <<JSON
{"train_micro_batch_size_per_gpu": $peer_b, "gradient_accumulation_steps": 1, "steps_per_print": 100,
 "optimizer": {"type": "AdamW", "params": {"lr": 6e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}},
 "gradient_clipping": 1.0, "bf16": {"enabled": true}, "zero_optimization": {"stage": 0}}
JSON
  timeout 55 "$ZT" --config "$cfg" --model gpt2-124m --steps $peer_steps \
    --eval-every 0 --eval-batches 1 --backend cuda --metrics "$METRICS/zt_peer.jsonl" 2>&1 | tail -3
  PYTHONUNBUFFERED=1 timeout 55 python3 "$PEER" --device cuda --batch $peer_b --seq-len $peer_t --vocab $peer_v \
    --steps $peer_steps 2>&1 | tee "$METRICS/peer_eager.jsonl" | tail -5
}
peer_compiled() {
  PYTHONUNBUFFERED=1 timeout 140 python3 "$PEER" --device cuda --batch $peer_b --seq-len $peer_t --vocab $peer_v \
    --steps $peer_steps --compile 2>&1 | tee "$METRICS/peer_compiled.jsonl" | tail -5
}
export PEER peer_b peer_t peer_v peer_steps
export -f zt_vs_peer peer_compiled
run_stage zt_vs_peer "$BENCH_LOG" zt_vs_peer
run_stage model_bench "$BENCH_LOG" run_bench "$BUILD/bench/gpu/bench_gpu_model" gpt2-124m 16
run_stage gpu_bench "$BENCH_LOG" run_bench "$GPU_BUILD/bench/gpu/bench_gpu" --quick
run_stage peer_compile "$BENCH_LOG" peer_compiled
# The whole single-process suite: unit tests and every module's gpu-labelled tests. It builds the
# rest of the tree first (inside the same cap).
all_tests() { cmake --build "$GPU_BUILD" -j "$JOBS" -- -k 0 >/dev/null 2>&1
  ctest --test-dir "$GPU_BUILD" -LE mpi -j 4 --output-on-failure --timeout 100; }
export -f all_tests
run_stage all_tests "$TEST_LOG" all_tests
add_note "$(grep -E 'tests passed|tests failed' "$TEST_LOG" | tail -1)"
set +x

# ---- table (printed last) -----------------------------------------------------------------------
{
  echo "zerotrain gpu_check ($MODE, call $CALL): $(date -u +%FT%TZ), $(( $(date +%s) - START )) s of $BUDGET, logs in $OUT"
  printf '%-12s %-18s %6s %5s  %s\n' stage status secs cap note
  for i in "${!ST_NAME[@]}"; do
    printf '%-12s %-18s %6s %5s  %s\n' "${ST_NAME[$i]}" "${ST_STATUS[$i]}" "${ST_SECS[$i]}" "${ST_CAP[$i]}" "${ST_NOTE[$i]}"
  done
  if [ "$MODE" = dry ]; then
    c1=0; c2=0; pc=1; acc=0
    for p in "${PLAN[@]}"; do
      c="${p#*:}"; c="${c%%:*}"; acc=$((acc + c))
      [ "$pc" -eq 1 ] && [ $((acc + RESERVE)) -gt "$BUDGET" ] && pc=2
      if [ "$pc" -eq 1 ]; then c1=$((c1 + c)); else c2=$((c2 + c)); fi
    done
    echo "plan: call 1 caps $c1 s + $RESERVE s for the table, budget $BUDGET s; call 2 caps $c2 s"
  fi
  echo "-- tests not passed (skipped ones excluded; details in tests.log):"
  grep -E '^\s+[0-9]+ - .*\(.*\)\s*$' "$TEST_LOG" | grep -v '(Skipped)' | sort -u | head -20
  grep -E '^\[  FAILED  \]|CUDA error|cuBLAS error' "$TEST_LOG" | sort -u | head -10
  if [ "$MODE" = run ]; then
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
  fi
} >"$OUT/summary.txt" 2>&1
[ "$MODE" = run ] && tar -czf "$OUT/metrics.tar.gz" -C "$METRICS" . 2>/dev/null
cat "$OUT/summary.txt" >&3
# Keep the returned files within the 16 MiB-per-file limit.
for f in "$LOG" "$BUILD_LOG" "$TEST_LOG" "$BENCH_LOG" "$ENGINE_LOG"; do
  [ "$(stat -c %s "$f")" -gt $((15 * 1024 * 1024)) ] && tail -c $((15 * 1024 * 1024)) "$f" >"$f.tmp" && mv "$f.tmp" "$f"
done
exit 0
