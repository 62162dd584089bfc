#!/usr/bin/env bash
# The engine on a GPU. Part "world1" (the default): offload (optimizer cpu/nvme, ratio, parameters)
# against the device optimizer and the CPU backend; stages 0–3 with a bf16 config train `tiny` on the
# CUDA and the CPU backend (losses compared: bf16 on both sides, so a bf16-sized tolerance) and
# `gpt2-124m` on CUDA (tokens/s, peak memory, bytes per collective per stage). Part "multirank":
# gpt2-124m stages 0–3 at 2 and 4 ranks sharing the one GPU through `--comm mpi` (MPI through pinned
# host buffers), launched by $ZT_MPIRUN, the same micro batch per rank as world 1, with losses and
# tokens/s to compare. Called by scripts/gpu_check.sh.
#   usage: gpu_engine_check.sh ZEROTRAIN_BINARY OUT_FILE [world1|multirank]
#   ZT_METRICS_DIR: keep the metrics (JSON lines) there instead of a temporary folder.
set -u
zt="$1"
out="$2"
part="${3:-world1}"
keep="${ZT_METRICS_DIR:-}"
work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
config() {  # stage micro_batch [optimizer offload [param offload [ratio]]] -> path
  local off="${3:-none}" par="${4:-none}" ratio="${5:-1.0}"
  local f="$work/stage$1_mb$2_${off}_${par}_$ratio.json"
  cat >"$f" <<JSON
{"train_micro_batch_size_per_gpu": $2, "gradient_accumulation_steps": 1, "steps_per_print": 1,
 "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "weight_decay": 0.1}},
 "gradient_clipping": 1.0, "bf16": {"enabled": true},
 "zero_optimization": {"stage": $1, "stage3_param_persistence_threshold": 0,
                       "offload_optimizer": {"device": "$off", "nvme_path": "/tmp", "ratio": $ratio},
                       "offload_param": {"device": "$par", "nvme_path": "/tmp"}}}
JSON
  echo "$f"
}
tiny() {  # name backend config-args... : 5 steps of tiny, metrics in $work/tiny_<name>.jsonl
  local name="$1" be="$2"
  shift 2
  echo "=== tiny $name backend $be"
  timeout 60 "$zt" --config "$(config "$@")" --model tiny --vocab 256 --steps 5 --eval-every 0 --eval-batches 1 \
    --backend "$be" --metrics "$work/tiny_$name.jsonl" 2>&1 | tail -4
}
if [ "$part" = multirank ]; then
  if [ -z "${ZT_MPIRUN:-}" ]; then
    echo "multirank: skipped: no MPI launcher (ZT_MPIRUN unset)"
    exit 0
  fi
  # tiny at 2 ranks first: stages 0-3 must end with the same parameters (the MPI fold is the same
  # reduction in every stage), and the CPU backend at 2 ranks within bf16 tolerance of the losses.
  for s in 0 1 2 3; do
    echo "=== tiny stage $s backend cuda, 2 ranks on one GPU, --comm mpi"
    # shellcheck disable=SC2086
    timeout 60 $ZT_MPIRUN -np 2 "$zt" --config "$(config $s 4)" --model tiny --vocab 256 --steps 5 --eval-every 0 \
      --eval-batches 1 --backend cuda --comm mpi --metrics "$work/tiny_w2_cuda_$s.jsonl" 2>&1 | tail -3
  done
  echo "=== tiny stage 2 backend cpu, 2 ranks"
  # shellcheck disable=SC2086
  timeout 60 $ZT_MPIRUN -np 2 "$zt" --config "$(config 2 4)" --model tiny --vocab 256 --steps 5 --eval-every 0 \
    --eval-batches 1 --backend cpu --metrics "$work/tiny_w2_cpu_2.jsonl" 2>&1 | tail -3
  for np in 2 4; do
    for s in 0 1 2 3; do
      echo "=== gpt2-124m stage $s backend cuda, $np ranks on one GPU, --comm mpi"
      # shellcheck disable=SC2086
      timeout 60 $ZT_MPIRUN -np "$np" "$zt" --config "$(config $s 8)" --model gpt2-124m --steps 4 --eval-every 0 \
        --eval-batches 1 --backend cuda --comm mpi --metrics "$work/g124_${s}_w$np.jsonl" 2>&1 | tail -3
    done
  done
else
# Offload on the GPU first (the copy streams and the staged path had not run on a GPU before):
# chunked host Adam vs the device optimizer, parameter offload vs none, ratio, NVMe; and the same
# offload configs on the CPU backend.
tiny off2_cpu cuda 2 4 cpu
tiny off2_dev cuda 2 4
tiny off3_cpu cuda 3 4 cpu
tiny off3_cpu_param cuda 3 4 cpu cpu
tiny off3_nvme_param cuda 3 4 nvme nvme
tiny off3_ratio cuda 3 4 cpu none 0.5
tiny off3_dev cuda 3 4
tiny off3_cpu_param_cpubackend cpu 3 4 cpu cpu
for s in 0 1 2 3; do
  for be in cuda cpu; do
    echo "=== tiny stage $s backend $be"
    timeout 60 "$zt" --config "$(config $s 4)" --model tiny --vocab 256 --steps 5 --eval-every 0 --eval-batches 1 \
      --backend "$be" --metrics "$work/tiny_${be}_$s.jsonl" 2>&1 | tail -4
  done
done
for s in 0 1 2 3; do
  echo "=== gpt2-124m stage $s backend cuda"
  timeout 90 "$zt" --config "$(config $s 8)" --model gpt2-124m --steps 4 --eval-every 0 --eval-batches 1 \
    --backend cuda --metrics "$work/g124_$s.jsonl" 2>&1 | tail -3
done
echo "=== gpt2-124m stage 2 backend cuda, offload_optimizer cpu (the host CPU Adam path)"
timeout 90 "$zt" --config "$(config 2 8 cpu)" --model gpt2-124m --steps 4 --eval-every 0 --eval-batches 1 \
  --backend cuda --metrics "$work/g124_2_offload.jsonl" 2>&1 | tail -3
echo "=== gpt2-124m stage 3 backend cuda, optimizer and parameters offloaded to cpu"
timeout 90 "$zt" --config "$(config 3 8 cpu cpu)" --model gpt2-124m --steps 4 --eval-every 0 --eval-batches 1 \
  --backend cuda --metrics "$work/g124_3_offload_param.jsonl" 2>&1 | tail -3
echo "=== gpt2-124m stage 3 backend cuda, ratio 0.5"
timeout 90 "$zt" --config "$(config 3 8 cpu none 0.5)" --model gpt2-124m --steps 4 --eval-every 0 --eval-batches 1 \
  --backend cuda --metrics "$work/g124_3_ratio.jsonl" 2>&1 | tail -3
fi
for f in "$work"/*.jsonl; do echo "--- $(basename "$f")"; cat "$f"; done
python3 - "$work" "$part" <<'PY'
import json, os, sys, statistics
d, part = sys.argv[1], sys.argv[2]
def load(name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return None
    return [json.loads(l) for l in open(p)]
def rate(name):
    steps = [r for r in (load(name) or []) if r["event"] == "step"]
    if not steps:
        return None, None
    tps = statistics.median(r["tokens_per_s"] for r in steps[1:]) if len(steps) > 1 else steps[0]["tokens_per_s"]
    return tps, steps
if part == "multirank":
    print("MULTIRANK tiny, 2 ranks on one GPU (--comm mpi), 5 steps: stages 0-3 bitwise, CPU backend within bf16")
    ends = {}
    for s in range(4):
        e = [x for x in (load(f"tiny_w2_cuda_{s}.jsonl") or []) if x["event"] == "end"]
        ends[s] = e[0]["param_checksum"] if e else None
    got = [c for c in ends.values() if c is not None]
    verdict = "MISSING RUN" if len(got) < 4 else ("ok" if len(set(got)) == 1 else "FAIL (checksums differ)")
    print(f"  stages 0-3 parameter checksums: {sorted(set(map(str, got)))}  {verdict}")
    la = [x["loss"] for x in (load("tiny_w2_cuda_2.jsonl") or []) if x["event"] == "step"]
    lb = [x["loss"] for x in (load("tiny_w2_cpu_2.jsonl") or []) if x["event"] == "step"]
    if la and len(la) == len(lb):
        rel = max(abs(x - y) / abs(y) for x, y in zip(la, lb))
        print(f"  stage 2 cuda vs cpu losses: max rel diff {rel:.2e}  {'ok' if rel < 2e-2 else 'FAIL'}")
    else:
        print("  stage 2 cuda vs cpu losses: MISSING RUN")
    print("MULTIRANK gpt2-124m on one GPU, --comm mpi, micro batch 8 x 1024 per rank, 4 steps: tokens/s (all ranks)")
    for s in range(4):
        cells = []
        for w in (2, 4):
            tps, steps = rate(f"g124_{s}_w{w}.jsonl")
            cells.append(f"W={w}: " + ("no steps" if tps is None else f"{tps:8.0f} tok/s loss {steps[-1]['loss']:.3f}"))
        print(f"  stage {s}: " + "   ".join(cells))
    sys.exit(0)
print("ENGINE tiny: CUDA vs CPU backend (bf16 both), 5 steps")
for s in range(4):
    a, b = load(f"tiny_cuda_{s}.jsonl"), load(f"tiny_cpu_{s}.jsonl")
    if not a or not b:
        print(f"  stage {s}: missing run"); continue
    la = [r["loss"] for r in a if r["event"] == "step"]
    lb = [r["loss"] for r in b if r["event"] == "step"]
    rel = max(abs(x - y) / abs(y) for x, y in zip(la, lb)) if la and len(la) == len(lb) else float("nan")
    print(f"  stage {s}: cuda losses {['%.4f' % x for x in la]} max rel diff vs cpu {rel:.2e}")
def end(name):
    r = load(f"tiny_{name}.jsonl")
    e = [x for x in (r or []) if x["event"] == "end"]
    return e[0] if e else None
def losses(name):
    return [x["loss"] for x in (load(f"tiny_{name}.jsonl") or []) if x["event"] == "step"]
print("OFFLOAD tiny on CUDA (5 steps): bitwise pairs must match, others within bf16 tolerance")
for a, b, bitwise in [("off3_cpu", "off3_cpu_param", True), ("off3_cpu", "off3_nvme_param", True),
                      ("off2_cpu", "off2_dev", False), ("off3_ratio", "off3_dev", False),
                      ("off3_cpu_param", "off3_cpu_param_cpubackend", False)]:
    ea, eb = end(a), end(b)
    if not ea or not eb:
        print(f"  {a} vs {b}: MISSING RUN"); continue
    la, lb = losses(a), losses(b)
    rel = max(abs(x - y) / abs(y) for x, y in zip(la, lb)) if la and len(la) == len(lb) else float("nan")
    same = ea["param_checksum"] == eb["param_checksum"]
    verdict = ("ok" if same else "FAIL (checksums differ)") if bitwise else ("ok" if rel < 2e-2 else "FAIL")
    print(f"  {a} vs {b}: checksum {'equal' if same else 'differ'}, max rel loss diff {rel:.2e}  {verdict}")
print("ENGINE gpt2-124m on CUDA, micro batch 8 x 1024 tokens, 4 steps (stages 0-3: fused GPU AdamW; "
      "offload: host CPU Adam with chunked copies)")
for s in [0, 1, 2, 3, "2_offload", "3_offload_param", "3_ratio"]:
    a = load(f"g124_{s}.jsonl")
    steps = [r for r in (a or []) if r["event"] == "step"]
    if not steps:
        print(f"  stage {s}: no steps"); continue
    tps = statistics.median(r["tokens_per_s"] for r in steps[1:]) if len(steps) > 1 else steps[0]["tokens_per_s"]
    last = steps[-1]
    print(f"  stage {s}: {tps:9.0f} tokens/s  step {last['step_ms']:.0f} ms  peak {last['mem_peak']/2**30:.2f} GiB  "
          f"comm {json.dumps(last['comm_bytes'])}  loss {last['loss']:.3f}")
PY
[ -z "$keep" ] && rm -rf "$work"
exit 0
